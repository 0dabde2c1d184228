"""One record of a timm ``train.py`` run, read once and without torch: what ``export``, ``release`` and the
analysis commands know about a checkpoint's run.

A run folder (``train.py --output``) holds ``args.yaml`` (every argument), ``summary.csv`` (one row per epoch), its
checkpoints and, when ``timm-sl reproduce`` ran it, ``done.json`` (family, Table 2 row, seed) and ``command.txt``.
:func:`read_run` reads each of those files at most once into a :class:`RunRecord`; what only the checkpoint knows
(its ``arch`` and ``args`` when there is no ``args.yaml``) is added by :meth:`RunRecord.with_checkpoint` once the
checkpoint has been read (:mod:`timm_sl.tools.checkpoint`).
"""
import json
import shlex
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Union

from .paper import family_of, variant_of
from .train_args import read_args_yaml, summarize

__all__ = ['CHECKPOINTS', 'DONE_MARKER', 'RunRecord', 'read_run', 'find_runs', 'run_checkpoint', 'portable_command']

CHECKPOINTS = ('model_best.pth.tar', 'last.pth.tar')
DONE_MARKER = 'done.json'  # written by ``timm-sl reproduce`` after train.py exits cleanly

# train.py arguments whose values are this machine's paths, and what a card shows instead
PATH_PLACEHOLDERS = {'--data-dir': 'DATA', '--output': 'OUTPUT', '--initial-checkpoint': 'CHECKPOINT'}


@dataclass
class RunRecord:
    """What is known about a checkpoint's training run.

    Attributes:
        checkpoint: The checkpoint file.
        run_dir: Its run folder when that holds train.py's ``args.yaml``, else None.
        args: train.py's arguments (``args.yaml``, else the checkpoint's ``args``).
        model: The model trained (train.py's ``--model``, else the checkpoint's ``arch``).
        model_kwargs: train.py's ``--model-kwargs`` (for ``slify``, with its ``base``).
        summary: The best epoch of ``summary.csv`` (see :func:`timm_sl.tools.train_args.summarize`), when there is one.
        dataset: The dataset name: reproduce's record, else train.py's ``--dataset`` without its reader prefix.
        family: The Table 2 family (``vit``, ...; any other model is its own family).
        variant: The Table 2 row the kwargs make (``base``, ``sl``, ``sl_no_spool``; ``custom`` for any other).
        seed: train.py's ``--seed``.
        command: The recorded train.py command without this machine's paths (see :func:`portable_command`).
    """
    checkpoint: Path
    run_dir: Optional[Path] = None
    args: Dict[str, Any] = field(default_factory=dict)
    model: Optional[str] = None
    model_kwargs: Dict[str, Any] = field(default_factory=dict)
    summary: Optional[Dict[str, Any]] = None
    dataset: Optional[str] = None
    family: str = ''
    variant: str = 'custom'
    seed: Optional[int] = None
    command: Optional[str] = None

    @property
    def num_classes(self) -> Optional[int]:
        """train.py's ``--num-classes`` (None when not recorded)."""
        return self.args.get('num_classes') or None

    def with_checkpoint(self, arch: Optional[str], args: Dict[str, Any]) -> 'RunRecord':
        """The record completed by what the checkpoint holds (its ``arch`` and ``args``), where the folder said
        nothing (no ``args.yaml``)."""
        if self.args or not (arch or args):
            return self
        return _described(replace(self, args=dict(args), model=args.get('model') or arch,
                                  model_kwargs=dict(args.get('model_kwargs') or {})))

    def with_model(self, model: str, model_kwargs: Optional[Dict[str, Any]]) -> 'RunRecord':
        """The record for the model a user names: the run's kwargs unless ``model_kwargs`` are given (or the run
        trained another model)."""
        if model_kwargs is None:
            model_kwargs = self.model_kwargs if model == self.model else {}
        if model == self.model and model_kwargs == self.model_kwargs:
            return self
        return _described(replace(self, model=model, model_kwargs=dict(model_kwargs), family='', variant='custom'))


def _described(record: RunRecord, marker: Optional[Dict[str, Any]] = None) -> RunRecord:
    """Fill the kwargs, family, variant and seed that follow from the args (and reproduce's marker)."""
    marker = marker or {}
    record.family = marker.get('family') or (family_of(record.model) if record.model else '')
    record.variant = marker.get('variant') or variant_of(record.family, record.model_kwargs)
    record.seed = record.args.get('seed', record.seed)
    if record.dataset is None:
        name = str(record.args.get('dataset') or '').split('/')[-1]
        record.dataset = {'tinyimagenet': 'tiny-imagenet'}.get(name, name) or None
    return record


def _read_json(path: Path) -> Dict[str, Any]:
    return json.loads(path.read_text()) if path.is_file() else {}


def read_run(
        checkpoint: Union[str, Path],
        summary: Optional[Union[str, Path]] = None,
        dataset: Optional[str] = None,
) -> RunRecord:
    """The record of a checkpoint's run, from the files beside it (each read once).

    Args:
        checkpoint: A checkpoint file; its folder is the run folder when it holds ``args.yaml``.
        summary: A ``summary.csv`` to use instead of the run folder's.
        dataset: The dataset name, when the run does not record it (or records it wrongly).

    Raises:
        ValueError: an ``args.yaml`` or ``summary.csv`` that is not train.py's.
    """
    checkpoint = Path(checkpoint)
    folder = checkpoint.parent
    args_yaml = folder / 'args.yaml'
    run_dir = folder if args_yaml.is_file() else None
    args = read_args_yaml(args_yaml) if run_dir else {}
    marker = _read_json(folder / DONE_MARKER) if run_dir else {}
    if summary is None and run_dir and (folder / 'summary.csv').is_file():
        summary = folder / 'summary.csv'
    if dataset is None and run_dir:
        dataset = marker.get('dataset') or next(
            (_read_json(p / 'results.json').get('dataset') for p in list(folder.parents)[:3]
             if (p / 'results.json').is_file()), None)
    command_file = folder / 'command.txt'
    command = portable_command(command_file.read_text().strip()) if run_dir and command_file.is_file() else None
    record = RunRecord(checkpoint=checkpoint, run_dir=run_dir, args=args, model=args.get('model') or None,
                       model_kwargs=dict(args.get('model_kwargs') or {}),
                       summary=summarize(summary) if summary else None, dataset=dataset, command=command)
    return _described(record, marker)


def find_runs(paths: Sequence[Any]) -> List[Path]:
    """train.py run folders (holding a checkpoint of :data:`CHECKPOINTS`) at or below each path, sorted.

    Raises:
        FileNotFoundError: a path does not exist, or holds no run.
    """
    runs = set()
    for path in map(Path, paths):
        if not path.exists():
            raise FileNotFoundError(f'{path} does not exist')
        found = {c.parent for name in CHECKPOINTS for c in ([path / name] if (path / name).is_file() else [])}
        found |= {c.parent for name in CHECKPOINTS for c in path.rglob(name)}
        if not found:
            raise FileNotFoundError(f'{path} holds no train.py run (no {" or ".join(CHECKPOINTS)} at or below it)')
        runs |= found
    return sorted(runs)


def run_checkpoint(run_dir: Path) -> Path:
    """The checkpoint a run is released from: the best one, else the last."""
    return next(run_dir / c for c in CHECKPOINTS if (run_dir / c).is_file())


def portable_command(command: str) -> str:
    """A recorded train.py command without this machine's paths: ``python``, ``train.py``, ``recipes/NAME``, DATA
    and OUTPUT placeholders, no ``--resume`` (a resumed run's command is its first command plus ``--resume``)."""
    tokens = shlex.split(command)
    script = next((i for i, t in enumerate(tokens) if t.endswith('train.py')), None)
    if script is None:
        return command
    out = tokens[:script] + ['train.py']
    out[0] = 'python' if script > 0 and Path(tokens[0]).name.startswith('python') else out[0]
    rest = iter(tokens[script + 1:])
    for token in rest:
        if token == '--resume':
            next(rest, None)
        elif token in PATH_PLACEHOLDERS:
            out += [token, PATH_PLACEHOLDERS[token]]
            next(rest, None)
        elif token == '--config':
            out += [token, f'recipes/{Path(next(rest, "")).name}']
        else:
            out.append(token)
    return shlex.join(out)
