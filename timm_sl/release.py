"""``timm-sl release``: from train.py runs (a ``timm-sl reproduce`` output or any train.py output folders) to
Hub-ready folders, pretrained-tag entries and, with ``--push``, Hub repositories.

Each run's best checkpoint (``model_best.pth.tar``, else ``last.pth.tar``; EMA weights first) is exported with
:func:`timm_sl.hub.export_checkpoint` under ``OUT/<repo name>/`` with a model card that adds the Table 2 row, the
paper's number for it and the exact train.py command. ``OUT/release.json`` lists what was released and
``OUT/pretrained_entries.json`` holds, in the format of ``timm_sl/models/pretrained.json``, one tag per model and
dataset (the best seed) for the runs whose architecture is the registered one (no ``--model-kwargs`` other than
``num_classes``): once pushed, merging those entries into the package's file publishes ``sl_vit_32.cifar100`` and
friends, a data change only. Pushing is a dry run unless ``--push`` is given.

Argument setup (:func:`add_release_args`) imports neither torch nor timm.
"""
import argparse
import json
import os
import re
import shlex
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

from .paper import paper_top1
from .reproduce import DATASETS, DONE_MARKER, VARIANT_LABELS, VARIANTS
from .train_args import find_train_script, read_args_yaml, summarize, train_script_defaults

__all__ = ['Released', 'find_runs', 'run_info', 'portable_command', 'repo_name', 'release_run', 'pretrained_entries',
           'release', 'add_release_args', 'run_from_args']

CHECKPOINTS = ('model_best.pth.tar', 'last.pth.tar')
DEFAULT_PATTERN = '{model}.{variant}-{dataset}-s{seed}'
# the fields a pretrained tag entry takes from the exported pretrained_cfg
TAG_FIELDS = ('num_classes', 'input_size', 'interpolation', 'mean', 'std', 'crop_pct', 'crop_mode', 'label_names')


@dataclass
class Released:
    """One exported run."""
    run_dir: str
    checkpoint: str
    folder: str
    repo_id: str
    model: str
    model_kwargs: Dict[str, Any]
    family: str
    variant: str
    seed: Optional[int]
    dataset: Optional[str]
    best_top1: Optional[float]
    paper_top1: Optional[float]
    weights: str
    pushed: Optional[str] = None


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


def _dataset_name(run_dir: Path, args: Dict[str, Any], marker: Dict[str, Any]) -> Optional[str]:
    """The dataset of a run: reproduce's record, else train.py's ``--dataset`` without its reader prefix."""
    if marker.get('dataset'):
        return marker['dataset']
    for parent in list(run_dir.parents)[:3]:
        results = parent / 'results.json'
        if results.is_file():
            return json.loads(results.read_text()).get('dataset')
    name = str(args.get('dataset') or '').split('/')[-1]
    return {'tinyimagenet': 'tiny-imagenet'}.get(name, name) or None


def _variant(family: str, model_kwargs: Dict[str, Any]) -> str:
    """The Table 2 row a run's kwargs make (``custom`` for anything else)."""
    arch = {k: v for k, v in model_kwargs.items() if k != 'num_classes'}
    for variant, kwargs in VARIANTS.get(family, {}).items():
        if arch == kwargs:
            return variant
    return 'custom'


def run_info(run_dir: Path) -> Dict[str, Any]:
    """What a run folder says about itself: train.py args, reproduce's marker, summary, checkpoint, command.

    Raises:
        FileNotFoundError: no ``args.yaml`` (not a train.py output folder).
    """
    args_yaml = run_dir / 'args.yaml'
    if not args_yaml.is_file():
        raise FileNotFoundError(f'{run_dir} has no args.yaml; is it a train.py output folder?')
    args = read_args_yaml(args_yaml)
    marker = json.loads((run_dir / DONE_MARKER).read_text()) if (run_dir / DONE_MARKER).is_file() else {}
    model = args.get('model') or ''
    model_kwargs = dict(args.get('model_kwargs') or {})
    family = marker.get('family') or (model.split('_')[1] if model.startswith('sl_') else model)
    command_file = run_dir / 'command.txt'
    command = portable_command(command_file.read_text().strip()) if command_file.is_file() else None
    summary = summarize(run_dir / 'summary.csv') if (run_dir / 'summary.csv').is_file() else None
    return dict(
        args=args, model=model, model_kwargs=model_kwargs, family=family,
        variant=marker.get('variant') or _variant(family, model_kwargs), seed=args.get('seed'),
        dataset=_dataset_name(run_dir, args, marker), command=command, summary=summary,
        checkpoint=next(run_dir / c for c in CHECKPOINTS if (run_dir / c).is_file()),
    )


# train.py arguments whose values are this machine's paths, and what a card shows instead
PATH_PLACEHOLDERS = {'--data-dir': 'DATA', '--output': 'OUTPUT', '--initial-checkpoint': 'CHECKPOINT'}


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


def repo_name(pattern: str, info: Dict[str, Any]) -> str:
    """A Hub repository name from ``pattern`` (fields: model, family, variant, dataset, seed, run).

    Raises:
        ValueError: an unknown field, or a name the Hub does not accept.
    """
    fields = dict(model=info['model'], family=info['family'], variant=info['variant'],
                  dataset=info['dataset'] or 'data', seed=info['seed'], run=Path(str(info.get('run_dir', ''))).name)
    try:
        name = pattern.format(**fields)
    except (KeyError, IndexError) as e:
        raise ValueError(f'--name-pattern {pattern!r} uses an unknown field {e}; allowed: {", ".join(fields)}') from e
    if not re.fullmatch(r'[A-Za-z0-9][A-Za-z0-9._-]{0,95}', name) or '..' in name or '--' in name:
        raise ValueError(f'repository name {name!r} (from --name-pattern {pattern!r}) is not allowed on the Hub: '
                         f'letters, digits, ".", "_", "-", at most 96 characters, no "--" or ".."')
    return name


def _release_section(info: Dict[str, Any], paper: Optional[float], repo_id: str, tag: Optional[str]) -> List[str]:
    summary = info['summary'] or {}
    row = f'{info["family"]}, {VARIANT_LABELS.get(info["variant"], info["variant"])}'
    lines = ['## Reproduction of the paper\'s Table 2', '', '| | |', '|---|---|',
             f'| dataset | {info["dataset"] or "unknown"} |', f'| Table 2 row | {row} |',
             f'| measured best top-1 (%) | {summary["best_top1"]:.2f} |' if summary else '| measured best top-1 | - |',
             f'| paper top-1 (%) for this row | {paper:.2f} |' if paper is not None else
             '| paper top-1 for this row | - (not in Table 2) |', f'| seed | {info["seed"]} |', '']
    if info['command']:
        lines += ['Exact train.py command (paths replaced by DATA / OUTPUT):', '', '```bash', info['command'], '```',
                  '']
    else:
        lines += ['The exact command was not recorded; the recipe below lists every train.py argument that differs'
                  ' from its defaults.', '']
    if tag:
        lines += [f'Once the package lists the tag, `timm.create_model("{tag}", pretrained=True)` loads these weights '
                  f'too (the tag points at `{repo_id}`).', '']
    return lines


def _tag(info: Dict[str, Any]) -> Optional[str]:
    """``MODEL.DATASET`` for a run of the registered architecture (a tag cannot carry model kwargs), else None."""
    arch = {k: v for k, v in info['model_kwargs'].items() if k != 'num_classes'}
    if arch or not info['dataset'] or not info['model'].startswith('sl_'):
        return None
    return f'{info["model"]}.{info["dataset"].replace("-", "")}'


def release_run(run_dir: Path, out: Path, org: str, name_pattern: str = DEFAULT_PATTERN,
                label_names: Optional[Any] = None, train_defaults: Optional[Dict[str, Any]] = None,
                dataset: Optional[str] = None) -> Released:
    """Export one run's best checkpoint as ``OUT/<repo name>`` with its release card."""
    from .hub import export_checkpoint
    info = run_info(run_dir)
    info['run_dir'] = str(run_dir)
    if dataset:
        info['dataset'] = dataset
    name = repo_name(name_pattern, info)
    repo_id = f'{org}/{name}'
    paper = paper_top1(info['family'], info['variant'], info['dataset'] or '')
    folder, source = export_checkpoint(
        info['checkpoint'], info['model'], out / name, model_kwargs=info['model_kwargs'],
        summary=run_dir / 'summary.csv' if info['summary'] else None, dataset=info['dataset'],
        label_names=label_names, train_defaults=train_defaults, repo_id=repo_id,
        card_sections=_release_section(info, paper, repo_id, _tag(info)))
    return Released(
        run_dir=str(run_dir), checkpoint=str(info['checkpoint']), folder=str(folder), repo_id=repo_id,
        model=info['model'], model_kwargs=info['model_kwargs'], family=info['family'], variant=info['variant'],
        seed=info['seed'], dataset=info['dataset'], best_top1=(info['summary'] or {}).get('best_top1'),
        paper_top1=paper, weights=source)


def pretrained_entries(released: Sequence[Released]) -> Dict[str, Dict[str, Any]]:
    """Tag-file entries (``timm_sl/models/pretrained.json`` format): per tag, the best-scoring run's repository and
    the data config it was exported with."""
    best: Dict[str, Released] = {}
    for r in released:
        tag = _tag(dict(model=r.model, model_kwargs=r.model_kwargs, dataset=r.dataset))
        if tag and (tag not in best or (r.best_top1 or 0.) > (best[tag].best_top1 or 0.)):
            best[tag] = r
    entries = {}
    for tag, r in sorted(best.items()):
        config = json.loads((Path(r.folder) / 'config.json').read_text())
        cfg = dict(config['pretrained_cfg'], num_classes=config['num_classes'])
        if config.get('label_names'):
            cfg['label_names'] = config['label_names']
        entries[tag] = dict(hf_hub_id=r.repo_id, **{k: cfg[k] for k in TAG_FIELDS if cfg.get(k) is not None})
    return entries


def release(paths: Sequence[Any], out: Path, org: str, name_pattern: str = DEFAULT_PATTERN, push: bool = False,
            private: bool = False, label_names: Optional[Any] = None, train_script: Optional[Path] = None,
            dataset: Optional[str] = None, echo=print) -> List[Released]:
    """Export every run under ``paths`` into ``out`` and (with ``push``) upload each folder to ``org``.

    Raises:
        FileNotFoundError / ValueError: no runs, a bad pattern or dataset, a checkpoint that does not fit.
        RuntimeError: an upload failed (see :func:`timm_sl.hub.push_folder`).
    """
    from .hub import push_folder
    if dataset is not None and dataset not in DATASETS:
        echo(f'note: {dataset!r} is not a Table 2 dataset ({", ".join(DATASETS)}); cards carry no paper number')
    if not re.fullmatch(r'[A-Za-z0-9][A-Za-z0-9._-]*', org):
        raise ValueError(f'--org {org!r} is not a Hub user or organisation name')
    runs = find_runs(paths)
    defaults = train_script_defaults(train_script) if train_script else None
    out = Path(out)
    released = []
    for i, run_dir in enumerate(runs, 1):
        r = release_run(run_dir, out, org, name_pattern, label_names=label_names, train_defaults=defaults,
                        dataset=dataset)
        top1 = '-' if r.best_top1 is None else f'{r.best_top1:.2f}'
        echo(f'{i}/{len(runs)}: {run_dir} -> {r.folder} ({r.weights}, best top-1 {top1}) as {r.repo_id}')
        released.append(r)
    names = [r.repo_id for r in released]
    if len(set(names)) != len(names):
        raise ValueError(f'--name-pattern {name_pattern!r} gives several runs the same repository name; add {{seed}} '
                         f'or {{run}}')
    entries = pretrained_entries(released)
    for r in released:
        if push:
            r.pushed = push_folder(r.folder, r.repo_id, private=private,
                                   commit_message=f'timm-sl release: {r.model} {r.variant} on {r.dataset}')
            echo(f'pushed {r.folder} to {r.repo_id}: {r.pushed}')
        else:
            echo(f'dry run: would push {r.folder} to https://huggingface.co/{r.repo_id} (pass --push to upload)')
    (out / 'release.json').write_text(json.dumps([asdict(r) for r in released], indent=1))
    (out / 'pretrained_entries.json').write_text(json.dumps(entries, indent=1))
    echo(f'{len(entries)} pretrained tag entr{"y" if len(entries) == 1 else "ies"} in {out / "pretrained_entries.json"}'
         + (' (merge into timm_sl/models/pretrained.json once pushed)' if entries else ''))
    return released


def add_release_args(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``timm-sl release`` (no torch import)."""
    parser.add_argument('runs', nargs='+', help='a timm-sl reproduce output or train.py output folders')
    parser.add_argument('--org', required=True, help='Hub user or organisation to publish under')
    parser.add_argument('--name-pattern', default=DEFAULT_PATTERN,
                        help='repository name; fields {model} {family} {variant} {dataset} {seed} {run} '
                             '(default: %(default)s)')
    parser.add_argument('--out', default='release', help='folder for the exported models (default: %(default)s)')
    parser.add_argument('--dataset', default=None, help='dataset name when the runs do not record it')
    parser.add_argument('--label-names', default=None, help='class names: a JSON list or one name per line')
    parser.add_argument('--train-script', default=None,
                        help="timm's train.py, whose defaults the cards' recipes are compared with "
                             "(default: $TIMM_REPO/train.py when set)")
    parser.add_argument('--push', action='store_true', help='upload to the Hub (default: dry run)')
    parser.add_argument('--private', action='store_true', help='create private repositories')


def run_from_args(args: argparse.Namespace) -> int:
    """``timm-sl release``; every failure ends in one line on stderr."""
    try:
        script = None
        if args.train_script or os.environ.get('TIMM_REPO'):
            script = find_train_script(args.train_script)
        release(args.runs, Path(args.out), args.org, args.name_pattern, push=args.push, private=args.private,
                label_names=args.label_names, train_script=script, dataset=args.dataset,
                echo=lambda line: print(line, flush=True))
    except (FileNotFoundError, ValueError, RuntimeError) as e:
        print(f'timm-sl release: {e}', file=sys.stderr)
        return 1
    return 0
