"""``timm-sl release``: from train.py runs (a ``timm-sl reproduce`` output or any train.py output folders) to
Hub-ready folders, pretrained-tag entries and, with ``--push``, Hub repositories.

Each finished run's best checkpoint (``model_best.pth.tar``, else ``last.pth.tar``; EMA weights first) is exported with
:func:`timm_sl.tools.hub.export_run` (the run read once into a :class:`timm_sl.tools.runs.RunRecord`) under ``OUT/<repo name>/``
with a model card that adds the Table 2 row (the paper's own configurations only:
:func:`timm_sl.tools.paper.table2_row`), the paper's number for it and the exact train.py command. A run that did not
train its planned epochs is skipped with a note (:meth:`timm_sl.tools.runs.RunRecord.unfinished`).
``OUT/release.json`` lists what was released and ``OUT/pretrained_entries.json`` holds, in the format of
``timm_sl/models/pretrained.json``, one tag per model and dataset (the seed whose exported weights score best) for the
runs whose architecture is the registered one (no ``--model-kwargs`` other than ``num_classes``): once pushed, merging
those entries into the package's file publishes ``sl_vit_32.cifar100`` and friends, a data change only. Pushing is a
dry run unless ``--push`` is given.

Argument setup (:func:`add_release_args`) imports neither torch nor timm.
"""
import argparse
import json
import math
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

from .paper import DATASETS, TABLE2_COLUMNS, VARIANT_LABELS, paper_top1, table2_row
from .runs import RunRecord, find_runs, format_top1, read_checkpoint, read_run, run_checkpoint
from .train_args import find_train_script, train_script_defaults

__all__ = ['Released', 'UnfinishedRun', 'repo_name', 'release_run', 'pretrained_entries', 'release', 'add_release_args',
           'run_from_args']

DEFAULT_PATTERN = '{model}.{variant}-{dataset}-s{seed}'
# the fields a pretrained tag entry takes from the exported pretrained_cfg
TAG_FIELDS = ('num_classes', 'input_size', 'interpolation', 'mean', 'std', 'crop_pct', 'crop_mode', 'label_names')


class UnfinishedRun(ValueError):
    """A run that did not train its planned epochs (failed or interrupted): not released."""


@dataclass
class Released:
    """One exported run; ``weights_epoch`` (from 1) and ``weights_top1``: the exported checkpoint's own epoch and its
    top-1 (None when not recorded), which ``best_top1`` need not be."""
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
    pretrained_cfg: Dict[str, Any]
    pushed: Optional[str] = None
    weights_epoch: Optional[int] = None
    weights_top1: Optional[float] = None


def repo_name(pattern: str, record: RunRecord) -> str:
    """A Hub repository name from ``pattern`` (fields: model, family, variant, dataset, seed, run).

    Raises:
        ValueError: an unknown field, or a name the Hub does not accept.
    """
    fields = dict(model=record.model, family=record.family, variant=record.variant,
                  dataset=record.dataset, seed=record.seed, run=Path(str(record.run_dir or '')).name)
    try:
        name = pattern.format(**fields)
    except (KeyError, IndexError) as e:
        raise ValueError(f'--name-pattern {pattern!r} uses an unknown field {e}; allowed: {", ".join(fields)}') from e
    _check_hub_name(name, f'repository name {name!r} (from --name-pattern {pattern!r})')
    return name


def _check_hub_name(name: str, what: str) -> None:
    """One name of a Hub repository id (the user / organisation or the repository), by huggingface_hub's own rules.

    Raises:
        ValueError: ``what`` is not allowed on the Hub, with the Hub's reason.
    """
    from huggingface_hub.utils import HFValidationError, validate_repo_id
    try:
        if '/' in name:
            raise HFValidationError('a name cannot hold "/"')
        validate_repo_id(name)
    except HFValidationError as e:
        raise ValueError(f'{what} is not allowed on the Hub ({_first_line(e)})') from None


def _first_line(error: Exception) -> str:
    return (str(error).strip().splitlines() or [type(error).__name__])[0]


def _release_section(record: RunRecord, paper: Optional[float], repo_id: str, tag: Optional[str],
                     weights: Dict[str, Any]) -> List[str]:
    """The card's Table 2 section; ``weights``: :meth:`RunRecord.weights_result` of the exported checkpoint."""
    summary = record.summary or {}
    table2 = table2_row(record.model, record.model_kwargs, record.dataset)
    row = (f'{table2[0]}, {VARIANT_LABELS[table2[1]]}' if table2 else
           f'none (`{record.model}` with these kwargs is not a configuration the paper trained on {record.dataset})')
    lines = ['## Reproduction of the paper\'s Table 2', '', '| | |', '|---|---|',
             f'| dataset | {record.dataset or "unknown"} |', f'| Table 2 row | {row} |',
             f'| measured best top-1 (%) | {summary["best_top1"]:.2f} |' if summary.get('best_top1') is not None else
             '| measured best top-1 | - (no epoch with a finite top-1) |' if summary else '| measured best top-1 | - |',
             *([f'| top-1 (%) of these weights (epoch {weights["epoch"] or "not recorded"}) | '
                f'{format_top1(weights["top1"])} |'] if summary and not weights['is_best'] else []),
             f'| paper top-1 (%) for this row | {paper:.2f} |' if paper is not None else
             '| paper top-1 for this row | - (not in Table 2) |', f'| seed | {record.seed} |', '']
    if record.command:
        lines += ['Exact train.py command (paths replaced by DATA / OUTPUT):', '', '```bash', record.command, '```',
                  '']
    else:
        lines += ['The exact command was not recorded; the recipe below lists the train.py arguments of the run.', '']
    if tag:
        lines += [f'Once the package lists the tag, `timm.create_model("{tag}", pretrained=True)` loads these weights '
                  f'too (the tag points at `{repo_id}`).', '']
    return lines


def _tag(model: str, model_kwargs: Dict[str, Any], dataset: Optional[str]) -> Optional[str]:
    """``MODEL.DATASET`` for a run of the registered architecture (a tag cannot carry model kwargs), else None."""
    arch = {k: v for k, v in model_kwargs.items() if k != 'num_classes'}
    if arch or not dataset or not model.startswith('sl_'):
        return None
    return f'{model}.{dataset.replace("-", "")}'


def release_run(run_dir: Path, out: Path, org: str, name_pattern: str = DEFAULT_PATTERN,
                label_names: Optional[Any] = None, train_defaults: Optional[Dict[str, Any]] = None,
                dataset: Optional[str] = None) -> Released:
    """Export one run's best checkpoint as ``OUT/<repo name>`` with its release card.

    Raises:
        FileNotFoundError: no ``args.yaml`` (not a train.py output folder).
        UnfinishedRun: the run did not train its planned epochs (see :meth:`RunRecord.unfinished`).
    """
    from .hub import export_run
    record = read_run(run_checkpoint(run_dir), dataset=dataset)
    if record.run_dir is None:
        raise FileNotFoundError(f'{run_dir} has no args.yaml; is it a train.py output folder?')
    unfinished = record.unfinished()
    if unfinished:
        raise UnfinishedRun(f'{run_dir} is not a finished run ({unfinished}); allowed: runs that trained their '
                            f'planned epochs (resume it to finish it)')
    if not record.dataset:
        raise ValueError(f'{run_dir} records no dataset (no --dataset in its args.yaml, and no recipe of timm-sl whose '
                         f'data it read); allowed: --dataset NAME (e.g. {", ".join(DATASETS)})')
    name = repo_name(name_pattern, record)
    repo_id = f'{org}/{name}'
    table2 = table2_row(record.model, record.model_kwargs, record.dataset)
    paper = paper_top1(*table2, record.dataset) if table2 else None
    checkpoint = read_checkpoint(record.checkpoint)
    weights = record.weights_result(checkpoint.epoch)
    section = _release_section(record, paper, repo_id, _tag(record.model, record.model_kwargs, record.dataset),
                               weights)
    # OUT/<repo name> is release's own folder: releasing again refreshes it
    exported = export_run(record, out / name, checkpoint=checkpoint, label_names=label_names,
                          train_defaults=train_defaults, repo_id=repo_id, card_sections=section, overwrite=True)
    return Released(
        run_dir=str(run_dir), checkpoint=str(record.checkpoint), folder=str(exported.folder), repo_id=repo_id,
        model=record.model, model_kwargs=record.model_kwargs, family=record.family, variant=record.variant,
        seed=record.seed, dataset=record.dataset, best_top1=(record.summary or {}).get('best_top1'),
        paper_top1=paper, weights=exported.source, pretrained_cfg=exported.pretrained_cfg,
        weights_epoch=weights['epoch'], weights_top1=weights['top1'])


def pretrained_entries(released: Sequence[Released]) -> Dict[str, Dict[str, Any]]:
    """Tag-file entries (``timm_sl/models/pretrained.json`` format): per tag, the repository of the run whose exported
    weights score best (their own epoch's top-1, not the run's best) and the data config it was exported with."""
    def score(r: Released) -> float:
        return r.weights_top1 if r.weights_top1 is not None and math.isfinite(r.weights_top1) else -1.

    best: Dict[str, Released] = {}
    for r in released:
        tag = _tag(r.model, r.model_kwargs, r.dataset)
        if tag and (tag not in best or score(r) > score(best[tag])):
            best[tag] = r
    return {tag: dict(hf_hub_id=r.repo_id, **{k: r.pretrained_cfg[k] for k in TAG_FIELDS
                                              if r.pretrained_cfg.get(k) is not None})
            for tag, r in sorted(best.items())}


def release(paths: Sequence[Any], out: Path, org: str, name_pattern: str = DEFAULT_PATTERN, push: bool = False,
            private: bool = False, label_names: Optional[Any] = None, train_script: Optional[Path] = None,
            dataset: Optional[str] = None, echo=print) -> List[Released]:
    """Export every run under ``paths`` into ``out`` and (with ``push``) upload each folder to ``org``.

    Raises:
        FileNotFoundError / ValueError: no runs, a bad pattern or dataset, a checkpoint that does not fit.
        ToolError: an upload failed (see :func:`timm_sl.tools.hub.push_folder`).
    """
    from .hub import push_folder
    if dataset is not None and dataset not in TABLE2_COLUMNS:
        echo(f'note: {dataset!r} is not a Table 2 dataset ({", ".join(TABLE2_COLUMNS)}); cards carry no paper number')
    _check_hub_name(org, f'--org {org!r}')
    runs = find_runs(paths)
    defaults = train_script_defaults(train_script) if train_script else None
    out = Path(out)
    released = []
    for i, run_dir in enumerate(runs, 1):
        try:
            r = release_run(run_dir, out, org, name_pattern, label_names=label_names, train_defaults=defaults,
                            dataset=dataset)
        except UnfinishedRun as e:
            echo(f'{i}/{len(runs)}: skipped: {e}')
            continue
        top1 = '-' if r.best_top1 is None else f'{r.best_top1:.2f}'
        own = '' if r.weights_top1 == r.best_top1 else f'; these weights: epoch {r.weights_epoch}, top-1 ' \
            f'{format_top1(r.weights_top1)}'
        echo(f'{i}/{len(runs)}: {run_dir} -> {r.folder} ({r.weights}, best top-1 {top1}{own}) as {r.repo_id}')
        released.append(r)
    if not released:
        raise UnfinishedRun(f'no finished run to release under {", ".join(map(str, paths))} ({len(runs)} skipped); '
                            f'allowed: runs that trained their planned epochs')
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
    """``timm-sl release`` from its parsed arguments; raises what :func:`release` raises."""
    script = None
    if args.train_script or os.environ.get('TIMM_REPO'):
        script = find_train_script(args.train_script)
    release(args.runs, Path(args.out), args.org, args.name_pattern, push=args.push, private=args.private,
            label_names=args.label_names, train_script=script, dataset=args.dataset,
            echo=lambda line: print(line, flush=True))
    return 0
