"""``timm-sl release``: from train.py runs (a ``timm-sl reproduce`` output or any train.py output folders) to
Hub-ready folders, pretrained-tag entries and, with ``--push``, Hub repositories.

Each finished run's best checkpoint (``model_best.pth.tar``, else ``last.pth.tar``; EMA weights first) is exported
with :func:`timm_sl.tools.hub.export_run` (the run read once into a :class:`timm_sl.tools.runs.RunRecord`) under
``OUT/<repo name>/`` with a model card that adds the Table 2 row (the paper's own configurations only:
:func:`timm_sl.tools.paper.table2_row`), the paper's number for it and the exact train.py command. A run that did not
train its planned epochs is skipped with a note (:meth:`timm_sl.tools.runs.RunRecord.unfinished`).
``OUT/release.json`` lists what was released and ``OUT/pretrained_entries.json`` holds, in the format of
``timm_sl/models/pretrained.json``, one tag per model and dataset (the seed whose exported weights score best) for the
runs whose architecture is the registered one (no ``--model-kwargs`` other than ``num_classes``): once pushed, merging
those entries into the package's file publishes ``sl_vit_32.cifar100`` and friends, a data change only. Pushing is a
dry run unless ``--push`` is given. ``OUT/release_manifest.json`` records the sha256 of every file written, so that a
release into the same ``OUT`` replaces only its own files, unchanged (anything else needs ``--overwrite``).

Argument setup (:func:`add_release_args`) imports neither torch nor timm.
"""
import argparse
import json
import math
import os
import string
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from .arg_types import dataset_name
from .errors import first_line, held_folder, make_folder, shown, write_atomically
from .files import check_not_link, flag_arg, kind_of
from .manifest import folder_recorder, read_manifest, recorder, sha256
from .paper import DATASETS, TABLE2_COLUMNS, VARIANT_LABELS, paper_top1
from .runs import (
    CHECKPOINTS, Checkpoint, CutSinceDone, NonFiniteWeights, RunRecord, check_regular_file, find_runs, format_top1,
    nan_epochs_text, read_checkpoint, read_run, reproduce_holding, run_checkpoint, walk)
from .train_args import recipe_train_script, train_script_defaults

__all__ = ['Released', 'UnfinishedRun', 'check_name_pattern', 'repo_name', 'read_release_record', 'release_run',
           'pretrained_entries', 'release', 'add_release_args', 'run_from_args']

DEFAULT_PATTERN = '{model}.{variant}-{dataset}-s{seed}'
NAME_FIELDS = ('model', 'family', 'variant', 'dataset', 'seed', 'run')  # what --name-pattern may use
MANIFEST = 'release_manifest.json'  # in --out: the sha256 of every file release wrote there
OWN_FILES = ('release.json', 'pretrained_entries.json', MANIFEST)  # what release writes in --out beside the folders
# the fields a pretrained tag entry takes from the exported pretrained_cfg
TAG_FIELDS = ('num_classes', 'input_size', 'interpolation', 'mean', 'std', 'crop_pct', 'crop_mode', 'label_names')


class UnfinishedRun(ValueError):
    """A run that did not train its planned epochs (failed or interrupted): not released, the others are."""


@dataclass
class Released:
    """One exported run; ``weights_epoch`` (from 1) and ``weights_top1``: the exported checkpoint's own epoch and its
    top-1 (None when not recorded, or when ``weights_diverged``: JSON has no NaN), which ``best_top1`` need not be;
    ``model_kwargs``: those train.py built the model with beyond its defaults (``--in-chans``, ``--gp`` too:
    :meth:`RunRecord.arch_kwargs`)."""
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
    started_from: Optional[str] = None  # the trained weights a fine-tuned run started from (RunRecord.started_from)
    class_map: Optional[str] = None  # the --class-map that numbered the run's classes (its file name), if any
    weights_diverged: bool = False  # the weights' epoch had NaN outputs (its top-1 NaN: weights_top1 is None)
    # why the run's top-1 are no measurement of the weights (RunRecord.unmeasured_top1: best_top1 and weights_top1
    # are None then, and the run gets no tag), else None
    top1_unmeasured: Optional[str] = None


def check_name_pattern(pattern: str) -> None:
    """Refuse a ``--name-pattern`` that is not a format string of :data:`NAME_FIELDS` before any run is read.

    Raises:
        ValueError: a broken format string or an unknown field, naming the option and the allowed fields.
    """
    allowed = f'allowed: the fields {" ".join("{" + f + "}" for f in NAME_FIELDS)} (a literal brace doubled)'
    try:
        fields = [f for _, f, _, _ in string.Formatter().parse(pattern) if f is not None]
        unknown = next((f for f in fields if f not in NAME_FIELDS), None)
        if unknown is None:
            pattern.format(**{f: 0 if f == 'seed' else f for f in NAME_FIELDS})
    except (ValueError, TypeError) as e:
        raise ValueError(f'--name-pattern {pattern!r} is not a format string ({first_line(e)}); {allowed}') from None
    if unknown is not None:
        field = repr(unknown) if unknown else "'' (an empty {})"
        raise ValueError(f'--name-pattern {pattern!r} uses an unknown field {field}; allowed: {", ".join(NAME_FIELDS)}')


def repo_name(pattern: str, record: RunRecord) -> str:
    """A Hub repository name from ``pattern`` (fields: :data:`NAME_FIELDS`).

    Raises:
        ValueError: a bad pattern (see :func:`check_name_pattern`), one the run's values do not fit, or a name the
            Hub does not accept.
    """
    check_name_pattern(pattern)
    # a run started from trained weights is no Table 2 row of its kwargs: its name says it was fine-tuned
    variant = f'{record.variant}-ft' if record.started_from() else record.variant
    fields = dict(model=record.model, family=record.family, variant=variant,
                  dataset=record.dataset, seed=record.seed, run=Path(str(record.run_dir or '')).name)
    try:
        name = pattern.format(**fields)
    except (ValueError, TypeError) as e:  # a format spec the run's values do not fit, e.g. {seed:03d} without a seed
        raise ValueError(f'--name-pattern {pattern!r} does not fit the run '
                         f'{shown(record.run_dir or record.checkpoint)} ({first_line(e)})') from None
    _check_hub_name(name, f'repository name {name!r} of {shown(record.run_dir or record.checkpoint)} (from '
                          f'--name-pattern {pattern!r} and the run\'s model, dataset, seed and folder name)')
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
        reason = str(e).replace(name, repr(name)[1:-1]) if name else str(e)  # a line break in it: not the reason's end
        raise ValueError(f'{what} is not allowed on the Hub ({first_line(ValueError(reason))})') from None


def _release_section(record: RunRecord, paper: Optional[float], repo_id: str, tag: Optional[str],
                     weights: Dict[str, Any], resumed: bool = False) -> List[str]:
    """The card's Table 2 section; ``weights``: :meth:`RunRecord.weights_result` of the exported checkpoint;
    ``resumed``: the run was resumed with other arguments than the session that saved it (see
    :func:`~timm_sl.tools.hub.session_notes`), so its recorded (last) command is not the weights' own."""
    summary = record.summary or {}
    unmeasured = record.unmeasured_top1()  # its top-1 are not the weights': no measured-vs-paper row
    table2, start = record.table2_row(), record.started_from()
    row = (f'{table2[0]}, {VARIANT_LABELS[table2[1]]}' if table2 else
           f'none (started from {start}; the paper trained from scratch)' if start else
           f'none (`{record.model}` with these kwargs is not a configuration the paper trained on {record.dataset})')
    lines = ['## Reproduction of the paper\'s Table 2', '', '| | |', '|---|---|',
             f'| dataset | {record.dataset or "unknown"} |', f'| Table 2 row | {row} |',
             f'| measured best top-1 | - (not a measurement of these weights: {unmeasured}) |' if unmeasured else
             f'| measured best top-1 (%) | {summary["best_top1"]:.2f} |' if summary.get('best_top1') is not None else
             '| measured best top-1 | - (not evaluated: no validation split) |' if not summary.get('evaluated', True)
             else '| measured best top-1 | - (no epoch with a finite top-1) |' if summary else
             '| measured best top-1 | - |',
             *([f'| top-1 (%) of these weights (epoch {weights["epoch"] or "not recorded"}) | '
                f'{format_top1(weights["top1"])} |'] if summary and not weights['is_best'] and not unmeasured else []),
             f'| paper top-1 (%) for this row | {paper:.2f} |' if paper is not None else
             '| paper top-1 for this row | - (not in Table 2) |', f'| seed | {record.seed} |', '']
    commands, differs = record.session_commands(), record.command_differs()
    if differs:
        lines += [f"The run's recorded train.py command (command.txt) gives {'; '.join(differs)}: train.py was started "
                  f"again in its folder with other arguments (by hand?), which trained these weights, so its exact "
                  f"command is not known; the training recipe below lists the arguments args.yaml records.", '']
    elif commands:
        starts = record.extended_from()
        lines += [f'This run was extended from {starts[0]} to {summary["last_epoch"]} epochs (its sessions.json): '
                  f'train.py ran it once per schedule and resumed it each time with a larger `--epochs`, so one '
                  f'command from scratch does not reproduce it exactly (the learning-rate schedule of its first '
                  f'{starts[0]} epochs differs). Its train.py commands in order (paths replaced by DATA / OUTPUT)'
                  + (', with the last session\'s arguments: it was resumed with others too, which the training '
                     'recipe below names:' if resumed else ':'),
                  '', '```bash', *commands, '```', '']
    elif record.command and resumed:
        lines += ["The last session's train.py command (paths replaced by DATA / OUTPUT); the run was resumed with "
                  "other arguments than the session that saved these weights (the training recipe below names "
                  "them), so it alone does not reproduce them:", '', '```bash', record.command, '```', '']
    elif record.command:
        lines += ['Exact train.py command (paths replaced by DATA / OUTPUT):', '', '```bash', record.command, '```',
                  '']
    else:
        lines += ['The exact command was not recorded; the recipe below lists the train.py arguments of the run.', '']
    if tag:
        lines += [f'Once the package lists the tag, `timm.create_model("{tag}", pretrained=True)` loads these weights '
                  f'too (the tag points at `{repo_id}`).', '']
    return lines


def _tag(model: str, model_kwargs: Dict[str, Any], dataset: Optional[str], started_from: Optional[str] = None,
         renumbered: bool = False) -> Optional[str]:
    """``MODEL.DATASET`` for a run of the registered architecture (a tag cannot carry model kwargs) trained from
    scratch, ``MODEL.ft_DATASET`` (timm's way of saying fine-tuned on DATASET) for one started from trained weights,
    else None; None too for a run whose classes a ``--class-map`` numbered (``renumbered``) without label names to
    say so: a tag of the dataset promises its classes in their own order."""
    arch = {k: v for k, v in model_kwargs.items() if k != 'num_classes'}
    if arch or not dataset or not model.startswith('sl_') or renumbered:
        return None
    return f'{model}.{"ft_" if started_from else ""}{dataset.replace("-", "")}'


def read_release_record(run_dir: Path, dataset: Optional[str] = None) -> RunRecord:
    """The record of a run to release (its best checkpoint's), read once.

    Raises:
        FileNotFoundError: no ``args.yaml`` (not a train.py output folder).
        UnfinishedRun: the run did not train its planned epochs (see :meth:`RunRecord.unfinished`).
        ValueError: the run records no dataset and none is given, or another than ``dataset`` (see
            :func:`timm_sl.tools.runs.given_dataset`).
    """
    try:
        record = read_run(run_checkpoint(run_dir), dataset=dataset)
    except CutSinceDone as e:  # skipped as an unfinished run is, named for what it is
        raise UnfinishedRun(str(e)) from None
    if record.run_dir is None:
        raise FileNotFoundError(f'{run_dir} has no args.yaml; is it a train.py output folder?')
    # an args.yaml without `model` (or `seed`): the checkpoint's (export does the same); a resumed run's args.yaml is
    # its last session's: a start from trained weights may be only in the checkpoint's args (its name says fine-tuned)
    if not record.model or record.seed is None or (record.args.get('resume') and not record.started_from()):
        loaded = read_checkpoint(record.checkpoint)
        record = record.with_checkpoint(loaded.arch, loaded.args, loaded.epoch, loaded.metric)
    unfinished = record.unfinished()
    if unfinished:
        raise UnfinishedRun(f'{run_dir} is not a finished run ({unfinished}); allowed: runs that trained their '
                            f'planned epochs (' + ('release again once that reproduce has ended)' if
                                                   reproduce_holding(record.run_dir) else 'resume it to finish it)'))
    if not record.dataset:
        raise ValueError(f'{run_dir} records no dataset (no --dataset in its args.yaml, and no recipe of timm-sl whose '
                         f'data it read); allowed: --dataset NAME (e.g. {", ".join(DATASETS)})')
    return record


def release_run(run_dir: Path, out: Path, org: str, name_pattern: str = DEFAULT_PATTERN,
                label_names: Optional[Any] = None, train_defaults: Optional[Dict[str, Any]] = None,
                dataset: Optional[str] = None, record: Optional[RunRecord] = None,
                checkpoint: Optional[Checkpoint] = None, before_replace: Optional[Callable[[Path], None]] = None
                ) -> Released:
    """Export one run's best checkpoint as ``OUT/<repo name>`` with its release card (``record`` and ``checkpoint``
    when :func:`read_release_record` and :func:`~timm_sl.tools.hub.check_export` already read them). Replaces the
    folder's exported files: :func:`release` checks first that they are its own, and records them with
    ``before_replace`` (see :func:`~timm_sl.tools.hub.export_run`).

    Raises:
        FileNotFoundError / ValueError: see :func:`read_release_record` and :func:`repo_name`.
    """
    from .hub import export_run, session_notes
    record = record or read_release_record(run_dir, dataset)
    name = repo_name(name_pattern, record)
    repo_id = f'{org}/{name}'
    checkpoint = checkpoint or read_checkpoint(record.checkpoint)
    # its args: a start from trained weights too
    record = record.with_checkpoint(checkpoint.arch, checkpoint.args, checkpoint.epoch, checkpoint.metric)
    arch_kwargs = record.arch_kwargs()
    table2 = record.table2_row()
    paper = paper_top1(*table2, record.dataset) if table2 else None
    weights = record.weights_result(checkpoint.epoch)
    class_map = record.args.get('class_map') or None
    unmeasured = record.unmeasured_top1() or None  # its top-1 are not the weights': no tag chosen by them
    tag = None if unmeasured else _tag(record.model, arch_kwargs, record.dataset, record.started_from(),
                                       bool(class_map and not label_names))
    resumed = any(session_notes(record, checkpoint, train_defaults))
    section = _release_section(record, paper, repo_id, tag, weights, resumed)
    exported = export_run(record, out / name, checkpoint=checkpoint, label_names=label_names,
                          train_defaults=train_defaults, repo_id=repo_id, card_sections=section, overwrite=True,
                          before_replace=before_replace)
    return Released(
        run_dir=str(run_dir), checkpoint=str(record.checkpoint), folder=str(exported.folder), repo_id=repo_id,
        model=record.model, model_kwargs=arch_kwargs, family=record.family, variant=record.variant,
        seed=record.seed, dataset=record.dataset,
        best_top1=None if unmeasured else (record.summary or {}).get('best_top1'),
        paper_top1=paper, weights=exported.source, pretrained_cfg=exported.pretrained_cfg,
        weights_epoch=weights['epoch'], started_from=record.started_from(),
        class_map=Path(str(class_map)).name if class_map else None, top1_unmeasured=unmeasured,
        **_top1_fields(weights['top1'], measured=not unmeasured))


def _top1_fields(top1: Optional[float], measured: bool = True) -> Dict[str, Any]:
    """``weights_top1`` and ``weights_diverged`` of :class:`Released` for a top-1 (NaN: diverged, written as null;
    not ``measured``: no top-1 of the weights, though its NaN still tells they diverged)."""
    diverged = top1 is not None and not math.isfinite(top1)
    return dict(weights_top1=None if diverged or not measured else top1, weights_diverged=diverged)


def _check_own_files(out: Path, names: Sequence[str], manifest: Dict[str, str], overwrite: bool) -> None:
    """Refuse, before anything is written, to replace a file in ``out`` that release did not write or that changed
    since (its sha256 is not the manifest's); ``overwrite`` allows that. A folder where a file goes is always refused.

    Raises:
        NotADirectoryError / IsADirectoryError: ``out`` or a repository folder is a file, a file's place a folder.
        ValueError: a file release would replace is not its own, unchanged.
    """
    from .hub import EXPORTED_FILES
    if out.exists() and not out.is_dir():
        raise NotADirectoryError(f'--out {out} is {kind_of(out)}; allowed: a folder (new, or one release wrote)')
    targets = list(OWN_FILES)
    for name in names:
        if (out / name).exists() and not (out / name).is_dir():
            raise NotADirectoryError(f'{out / name} is {kind_of(out / name)} where release writes the folder of '
                                     f'{name}; allowed: move it away')
        targets += [f'{name}/{f}' for f in EXPORTED_FILES]
    changed = []
    for rel in targets:
        path = out / rel
        if path.is_dir():
            raise IsADirectoryError(f'{path} is a folder where release writes a file; allowed: move it away')
        check_regular_file(path, 'a file release writes; allowed: move it away')
        check_not_link(path, 'timm-sl release')
        if rel != MANIFEST and path.exists() and not overwrite and manifest.get(rel) != sha256(path):
            changed.append(path)
    if changed:
        more = f' (and {len(changed) - 1} more)' if len(changed) > 1 else ''
        raise ValueError(f'{changed[0]}{more} would be replaced but was not written by timm-sl release, or was changed '
                         f'since ({MANIFEST} records what it wrote); allowed: move it away, or --overwrite to '
                         f'replace it')


def _earlier_records(out: Path, names: Sequence[str], run_dirs: Sequence[Any], manifest: Dict[str, str],
                     echo=print) -> List[Released]:
    """The runs an earlier release into ``out`` recorded (its ``release.json``, unchanged since) that this one does
    not release again (by folder or by run) and whose folders still hold the files it exported there, unchanged: kept
    in the record, so that releasing runs one at a time into one ``out`` lists them all and tags the best of them.
    Each record not kept for another reason is said in a line (with where it was pushed: the record goes)."""
    from .hub import EXPORTED_FILES
    path, new = out / 'release.json', {name.lower() for name in names}
    again = {os.path.realpath(run_dir) for run_dir in run_dirs if run_dir is not None}
    if not path.is_file():
        return []
    try:
        earlier = json.loads(path.read_text(encoding='utf-8')) if manifest.get('release.json') == sha256(path) else None
    except ValueError:
        earlier = None
    if not isinstance(earlier, list):
        echo(f'note: {shown(path)} was not written by timm-sl release as it is (or was changed since): the runs it '
             f'lists are not kept in the new record')
        return []
    fields, kept = set(Released.__dataclass_fields__), []
    for entry in earlier:
        name = Path(str(entry.get('folder', ''))).name if isinstance(entry, dict) else ''
        if not name or name.lower() in new or os.path.realpath(str(entry.get('run_dir', ''))) in again:
            continue  # released again now: its new record replaces it
        pushed = f'pushed to {entry.get("repo_id")}' if entry.get('pushed') else 'not pushed'
        files = [f'{name}/{f}' for f in EXPORTED_FILES]
        if not all((out / rel).is_file() and manifest.get(rel) == sha256(out / rel) for rel in files):
            echo(f'note: the earlier record of {shown(out / name)} ({pushed}) is not kept: its files are gone or '
                 f'changed since release wrote them')
            continue
        try:
            kept.append(Released(**{k: v for k, v in entry.items() if k in fields}))
        except TypeError:  # a record of another version of release, missing a field: not this folder's
            continue
        wrong = _wrong_field(kept[-1])
        if wrong:  # another version's, or edited with its sha256: its tag would be chosen by values of no run
            echo(f'note: the earlier record of {shown(out / name)} ({pushed}) is not kept: its {wrong} in '
                 f'{shown(path)} is not of the form release writes')
            del kept[-1]
            continue
        kept[-1].folder = str(out / name)
    return kept


def _wrong_field(record: Released) -> Optional[str]:
    """The first field of an earlier record (read back from release.json) whose value is not of the kind
    :class:`Released` holds there (``'model_kwargs [1, 2]'``), else None."""
    number = (int, float, type(None))
    kinds = dict(model=str, repo_id=str, model_kwargs=dict, pretrained_cfg=dict, weights_top1=number,
                 best_top1=number, dataset=(str, type(None)), started_from=(str, type(None)),
                 class_map=(str, type(None)), top1_unmeasured=(str, type(None)), weights_diverged=bool)
    for field, kind in kinds.items():
        value = getattr(record, field)
        if not isinstance(value, kind) or (isinstance(value, bool) and kind is number):
            return f'{field} {value!r}'
    return None


def pretrained_entries(released: Sequence[Released]) -> Dict[str, Dict[str, Any]]:
    """Tag-file entries (``timm_sl/models/pretrained.json`` format): per tag, the repository of the run whose exported
    weights score best (their own epoch's top-1, not the run's best) and the data config it was exported with (none
    for a run of ``--class-map`` without label names: see :func:`_tag`; none for weights of a diverged epoch, whose
    top-1 is NaN, nor for a run whose top-1 are no measurement of its weights: ``top1_unmeasured``)."""
    def score(r: Released) -> float:
        return r.weights_top1 if r.weights_top1 is not None and math.isfinite(r.weights_top1) else -1.

    best: Dict[str, Released] = {}
    for r in released:
        tag = _tag(r.model, r.model_kwargs, r.dataset, r.started_from,
                   bool(r.class_map and not r.pretrained_cfg.get('label_names')))
        if r.weights_diverged or (isinstance(r.weights_top1, float) and not math.isfinite(r.weights_top1)):
            continue  # diverged weights: no tag
        if r.top1_unmeasured:
            continue  # a top-1 that is not the weights' (--tta) chooses no tag
        if tag and (tag not in best or score(r) > score(best[tag])):
            best[tag] = r
    return {tag: dict(hf_hub_id=r.repo_id, **{k: r.pretrained_cfg[k] for k in TAG_FIELDS
                                              if r.pretrained_cfg.get(k) is not None})
            for tag, r in sorted(best.items())}


def release(paths: Sequence[Any], out: Path, org: str, name_pattern: str = DEFAULT_PATTERN, push: bool = False,
            private: bool = False, label_names: Optional[Any] = None, train_script: Optional[Path] = None,
            dataset: Optional[str] = None, overwrite: bool = False, echo=print) -> List[Released]:
    """Export every run under ``paths`` into ``out`` and (with ``push``) upload each folder to ``org``.

    Every run is read and named before anything is written. A file in ``out`` that release would replace must be
    one it wrote there, unchanged since (``OUT/release_manifest.json`` holds their sha256); ``overwrite`` replaces
    any.

    Raises:
        FileNotFoundError / ValueError: no runs, a bad pattern or dataset, a checkpoint that does not fit, a file in
            ``out`` release did not write (or that changed since).
        ToolError: an upload failed (see :func:`timm_sl.tools.hub.push_folder`).
    """
    from .hub import check_export, push_folder, read_label_names
    for flag, value in dict(push=push, private=private, overwrite=overwrite).items():  # push='no' would upload
        flag_arg(value, flag, 'release')
    if dataset is not None and dataset not in TABLE2_COLUMNS:
        echo(f'note: {dataset!r} is not a Table 2 dataset ({", ".join(TABLE2_COLUMNS)}); cards carry no paper number')
    _check_hub_name(org, f'--org {org!r}')
    check_name_pattern(name_pattern)
    defaults = train_script_defaults(train_script) if train_script else None
    unreadable: List[Tuple[Path, str]] = []
    runs, records, numbers = find_runs(paths, unreadable), [], []
    for folder, reason in sorted(set(unreadable)):  # a disk's lost+found, another user's runs
        echo(f'skipped: {shown(folder)} cannot be read ({reason}); a run in it is not released')
    for folder in sorted({root for p in paths for root, folders, names in walk(p, skipped=[])
                          if 'args.yaml' in names and not set(CHECKPOINTS) & {*folders, *names}}):
        echo(f'skipped: {shown(folder)} holds an args.yaml but no {" or ".join(CHECKPOINTS)} (a run that failed '
             f'before its first checkpoint, or whose checkpoints were moved)')
    for i, run_dir in enumerate(runs, 1):
        try:
            records.append(read_release_record(run_dir, dataset))
            numbers.append(i)
        except UnfinishedRun as e:
            echo(f'{i}/{len(runs)}: skipped: {e}')
    if not records:
        raise UnfinishedRun(f'no finished run to release under {", ".join(map(str, paths))} ({len(runs)} skipped); '
                            f'allowed: runs that trained their planned epochs with a finite top-1')
    names = [repo_name(name_pattern, record) for record in records]
    first: Dict[str, RunRecord] = {}
    for record, name in zip(records, names):  # the Hub's names ignore case: Run1 and run1 are one repository
        if name.lower() in OWN_FILES:  # its folder would take the place of the file
            raise ValueError(f'--name-pattern {name_pattern!r} names {record.run_dir} {name!r}, a file release '
                             f'writes in --out; allowed: a pattern that names no file of {", ".join(OWN_FILES)}')
        other = first.setdefault(name.lower(), record)
        if other is not record:
            raise ValueError(f'--name-pattern {name_pattern!r} names both {other.run_dir} and {record.run_dir} '
                             f'{org}/{name} (the Hub ignores case); allowed: a pattern whose fields differ between '
                             f'them ({{run}}, {{seed}}), or release them one at a time into different --out folders')
    names_file = Path(label_names) if isinstance(label_names, (str, Path)) else None
    if names_file is not None:  # read once, and held against each run before anything is written
        label_names = read_label_names(names_file)
    for record in records:
        if label_names is not None and record.num_classes and len(label_names) != record.num_classes:
            raise ValueError(f'{shown(names_file) + ": " if names_file else ""}{len(label_names)} label names given '
                             f'but {record.run_dir} has {record.num_classes} '
                             f'classes (its args.yaml); allowed: --label-names with one name per class of every run '
                             f'released (release runs of other class counts one at a time)')
    # every checkpoint fits its model (and the names) before anything is written; kept while only mapped, not read
    checkpoints = []
    for i, record in list(zip(numbers, records)):
        try:
            checkpoint = check_export(record, label_names, names_file)
            summary = record.summary or {}
            if summary and summary.get('evaluated', True) and summary.get('best_top1') is None:
                echo(f'{i}/{len(runs)}: skipped: {shown(record.run_dir)} has no epoch with a finite top-1 '
                     f'(summary.csv: {nan_epochs_text(summary["epochs"])}), so its weights, finite as they are, are '
                     f'not a trained model (its card says so); allowed: runs with a finite top-1 (train it again, say '
                     f'with a lower --lr or without --amp)')
                at = records.index(record)
                del records[at], numbers[at], names[at]
                continue
            checkpoints.append(checkpoint if checkpoint.mapped else None)
        except NonFiniteWeights:
            summary = record.summary or {}
            if summary.get('best_top1') is not None or summary.get('diverged_epoch') is None:
                raise  # NaN weights its summary.csv does not explain: named, nothing written
            echo(f'{i}/{len(runs)}: skipped: {shown(record.run_dir)} diverged from its first epoch (summary.csv: '
                 f'{nan_epochs_text(summary["epochs"])}), and its weights are NaN; allowed: runs with a finite top-1 '
                 f'(train it again, say with a lower --lr)')
            at = records.index(record)
            del records[at], numbers[at], names[at]
    if not records:
        raise UnfinishedRun(f'no finished run to release under {", ".join(map(str, paths))} ({len(runs)} skipped); '
                            f'allowed: runs that trained their planned epochs with a finite top-1')
    out = Path(out)
    manifest = read_manifest(out, overwrite, MANIFEST, 'timm-sl release')
    _check_own_files(out, names, manifest, overwrite)
    make_folder(out)
    with held_folder(out, f'--out {out} is being written by another timm-sl release still running: the record '
                          f'(release.json) of each would list its own runs only; allowed: wait for it to end, or '
                          f'another --out'):
        manifest = read_manifest(out, overwrite, MANIFEST, 'timm-sl release')  # again: one may have ended meanwhile
        _check_own_files(out, names, manifest, overwrite)
        earlier = _earlier_records(out, names, [record.run_dir for record in records], manifest, echo)
        released = []
        for i, record, name, checkpoint in zip(numbers, records, names, checkpoints):
            run_dir = record.run_dir
            # recorded before they are moved into place: a disk that fills or a kill in between leaves them ours
            r = release_run(run_dir, out, org, name_pattern, label_names=label_names, train_defaults=defaults,
                            record=record, checkpoint=checkpoint,
                            before_replace=folder_recorder(out, manifest, name, MANIFEST))
            top1 = (f'- (not a measurement of these weights, {r.top1_unmeasured})' if r.top1_unmeasured else
                    '-' if r.best_top1 is None else f'{r.best_top1:.2f}')
            own_top1 = math.nan if r.weights_diverged else r.weights_top1
            own = '' if own_top1 == r.best_top1 else f'; these weights: epoch {r.weights_epoch}, top-1 ' \
                f'{format_top1(own_top1)}'
            echo(f'{i}/{len(runs)}: {shown(run_dir)} -> {shown(r.folder)} ({r.weights}, best top-1 {top1}{own}) as '
                 f'{r.repo_id}')
            released.append(r)
        entries = pretrained_entries(earlier + released)

        def write_record() -> None:  # before the uploads and after each: a failed one leaves what was done recorded
            # a write cut short (a full disk) leaves the earlier record whole: it may be all that says what was pushed
            for name, value in (('release.json', [asdict(r) for r in earlier + released]),
                                ('pretrained_entries.json', entries)):
                text = json.dumps(value, indent=1)  # recorded in the manifest before it is moved into place
                write_atomically(out / name, lambda path: path.write_text(text, encoding='utf-8'),
                                 recorder(out, manifest, name, MANIFEST))

        write_record()
        for r in released:
            if push:
                r.pushed = push_folder(r.folder, r.repo_id, private=private,
                                       commit_message=f'timm-sl release: {r.model} {r.variant} on {r.dataset}')
                write_record()
                echo(f'pushed {shown(r.folder)} to {r.repo_id}: {r.pushed}')
            else:
                echo(f'dry run: would push {shown(r.folder)} to https://huggingface.co/{r.repo_id}'
                     f'{" as a private repository" if private else ""} (pass --push to upload)')
        for tag, entry in entries.items():  # a tag an earlier dry run chose: its repository may not exist
            kept = next((r for r in earlier if r.repo_id == entry['hf_hub_id'] and not r.pushed), None)
            if push and kept is not None:
                echo(f'note: tag {tag} names {kept.repo_id}, which an earlier release did not push: timm-sl push '
                     f'{shown(kept.folder)} --repo-id {kept.repo_id} before merging it')
        echo(f'{len(entries)} pretrained tag entr{"y" if len(entries) == 1 else "ies"} in '
             f'{shown(out / "pretrained_entries.json")}'
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
    parser.add_argument('--overwrite', action='store_true',
                        help=f'replace files in --out that release did not write there, or that were changed since '
                             f'(default: refuse; --out/{MANIFEST} records what it wrote)')
    parser.add_argument('--dataset', default=None, type=dataset_name,
                        help='dataset name of runs that record none (a run that records another, or whose '
                             'class count is not this dataset\'s, is refused)')
    parser.add_argument('--label-names', default=None, help='class names: a JSON list or one name per line')
    parser.add_argument('--train-script', default=None,
                        help="timm's train.py, whose defaults the cards' recipes are compared with "
                             "(default: $TIMM_REPO/train.py when set)")
    parser.add_argument('--push', action='store_true', help='upload to the Hub (default: dry run)')
    parser.add_argument('--private', action='store_true', help='create private repositories')


def run_from_args(args: argparse.Namespace) -> int:
    """``timm-sl release`` from its parsed arguments; raises what :func:`release` raises."""
    script = recipe_train_script(args.train_script)
    release(args.runs, Path(args.out), args.org, args.name_pattern, push=args.push, private=args.private,
            label_names=args.label_names, train_script=script, dataset=args.dataset, overwrite=args.overwrite,
            echo=lambda line: print(line, flush=True))
    return 0
