"""``timm-sl reproduce``: the paper's Table 2 rows, trained by timm's own ``train.py``, in one resumable command.

Each run (family x Table 2 row x seed) is one ``train.py`` process (``torchrun`` when ``--nproc`` > 1) with the
dataset's recipe from ``recipes/``, writing into ``OUT/runs/<name>``. A run that finished is skipped (a ``done.json``
marker written after train.py exits cleanly, or a ``summary.csv`` that reached the last epoch); an interrupted run is
resumed from its ``last.pth.tar``; either only with the settings it started with (``run.json``, :func:`check_runs`),
and nothing a run trained is trained over. The report (``OUT/report.md``, ``top1.png``, ``curves.png``,
``results.json``) holds every finished run, and lists crashed runs as failed.

Argument setup (:func:`add_reproduce_args`) and planning import neither torch nor timm.
"""
import argparse
import contextlib
import hashlib
import json
import locale
import math
import os
import re
import shlex
import signal
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

from .arg_types import kwarg_words
from .data_check import (
    check_data, check_output_outside_data, class_map_file, class_map_identity, dataset_name, fewer_images,
    reader_suffixes, split_folder, SPLIT_SYNONYMS, TORCH_FOLDERS)
from .errors import (ToolError, check_not_below_a_file, held_folder, make_folder, name_text, shown,
                     write_atomically)
from .files import check_regular_file, read_text
from .paper import DATASETS, FAMILIES, VARIANTS, learning_rate, model_name, paper_top1, switches_label, table2_row
from .runs import (
    DONE_MARKER, IMAGE_FOLDER_READERS, REPRODUCE_LOCK, RUN_SETTINGS, SESSIONS, TIMM_FOLDER, TORCHVISION_FOLDER,
    RunRecord, checkpoint_problem, cut_since_done, dataset_reader, diverged_text, prepared_dataset, read_args_yaml,
    mark_training, read_class_map, read_done_marker, read_checkpoint, read_sessions, read_summary_rows,
    scheduled_epochs, settings_differ, summarize, summary_rows)
from .sweep import (
    POLL_S, TRAIN_PY_WORKERS, Gpu, Job, JobResult, SweepStopped, default_jobs, device_groups, format_seconds,
    parse_gpus, probe_gpus, run_jobs, signals_held, skipped_samples, train_throughput)
from .manifest import read_manifest, record_written, recorder, sha256
from .train_args import (
    NON_RECIPE_KEYS, SWITCHED_GROUPS, UNREAD_KEYS, check_recipe_keys, check_train_script, expand_abbreviations,
    last_flag_value, read_recipe, recipe_path, spell_option, train_script_default, train_script_options,
    train_script_spellings, unread_reason)

__all__ = ['Run', 'plan_runs', 'recipe_path', 'planned_epochs', 'train_data', 'describe_data', 'train_command',
           'run_state', 'reproduce', 'aggregate', 'report_table', 'write_report', 'add_reproduce_args', 'run_from_args',
           'run_settings', 'check_runs', 'check_run_files', 'check_report_files', 'RunsFailed', 'REPORT_FILES',
           'REPORT_MANIFEST']

LOG_NAME = 'train.log'
DIVERGED = 'diverged (NaN)'  # a finished run without a finite top-1, in the report and charts
SETTINGS = 'run.json'  # per run: what defines its result (:func:`run_settings`), written when it starts from scratch
COMMAND = 'command.txt'  # per run: its last train.py command line
# the files reproduce writes in each run folder, and in --out (the report), with what each is (for the messages)
RUN_FILES = {SESSIONS: 'record of train.py sessions', DONE_MARKER: 'marker of a finished run',
             SETTINGS: 'record of the run settings', LOG_NAME: 'train.py log', COMMAND: 'train.py command line'}
_TRAIN_FILES = {'summary.csv': 'rows of the epochs', 'last.pth.tar': 'checkpoint to resume from',
                'args.yaml': 'arguments'}  # what train.py writes in a run folder, that reproduce reads
REPORT_FILES = {'report.md': 'report', 'results.json': 'results', 'top1.png': 'top-1 chart',
                'curves.png': 'learning curves chart'}
REPORT_MANIFEST = 'report_manifest.json'  # in --out: the sha256 of each report file reproduce wrote there

# the arguments a card leaves out (NON_RECIPE_KEYS) that still decide a run's result: the paths reproduce sets per run
# or compares as the data, those that change what train.py trains or measures (worker seeding; EMA on the CPU, which
# train.py then does not validate), and names train.py sets itself
_RESULT_KEYS = frozenset({'data', 'data_dir', 'output', 'experiment', 'resume', 'no_resume_opt', 'initial_checkpoint',
                          'pretrained_path', 'config', 'class_map', 'worker_seeding', 'model_ema_force_cpu',
                          'prev_num_classes', 'prefetcher', 'distributed', 'world_size', 'rank', 'local_rank'})
# train.py arguments that change how a run goes (devices, speed, logs), not what it learns: a resume may change them
# (--epochs too: more epochs continue a finished run); the data arguments are compared as the data (train_data)
_HOW_FLAGS = ('--epochs', '-j') + tuple(sorted(f"--{k.replace('_', '-')}" for k in NON_RECIPE_KEYS - _RESULT_KEYS))
_DATA_FLAGS = ('--data-dir', '--dataset', '--train-split', '--val-split', '--num-classes', '--class-map')


@dataclass
class Run:
    """One train.py run: a family's Table 2 row with one seed."""
    family: str
    variant: str
    seed: int
    model: str
    model_kwargs: Dict[str, Any]
    out_dir: Path

    @property
    def name(self) -> str:
        return f'{self.family}-{self.variant}-s{self.seed}'

    @property
    def lr(self) -> float:
        return learning_rate(self.family)


@dataclass
class Outcome:
    """What happened to a run in this invocation: 'done' (now or before), 'failed', 'interrupted' or 'not run'."""
    run: Run
    status: str
    message: str = ''
    seconds: float = 0.
    summary: Optional[Dict[str, Any]] = None
    curve: List[Tuple[int, float]] = field(default_factory=list)
    data: str = ''  # the data as the run recorded it in args.yaml (:func:`describe_data`); '' when not recorded
    args: Dict[str, Any] = field(default_factory=dict)  # its args.yaml ({} when not recorded or not readable)
    wall: float = 0.  # seconds of all the run's train.py sessions (resumes included), from sessions.json (0: unknown)
    img_s: Optional[float] = None  # training images per second in train.py's steps, from its log (train_throughput)
    devices: str = ''  # CUDA_VISIBLE_DEVICES of its last session
    skipped: List[int] = field(default_factory=list)  # sample index of each unreadable image skipped (its log)
    # of a run extended by a larger --epochs: (last epoch trained under it, from 1; its --epochs) per schedule
    schedules: List[Tuple[int, Any]] = field(default_factory=list)


def _check_choice(kind: str, value: str, allowed: Sequence[str]) -> None:
    if value not in allowed:
        raise ValueError(f'unknown {kind} {value!r}; allowed: {", ".join(allowed)}')


_SEED_LIMIT = 2 ** 32 - 64  # numpy's seeds are below 2**32; train.py adds each process's rank


def plan_runs(dataset: str, families: Sequence[str], seeds: Sequence[int], output: Path) -> List[Run]:
    """Every Table 2 row of ``families`` for each seed, family by family, baseline first.

    Raises:
        ValueError: an unknown family or dataset (named, with what is allowed), no seeds, or a seed train.py cannot
            take.
    """
    _check_choice('dataset', dataset, list(DATASETS))
    for family in families:
        _check_choice('family', family, FAMILIES)
    if not seeds:
        raise ValueError('no seeds given; pass at least one, e.g. --seeds 0')
    bad = [s for s in seeds if not 0 <= s < _SEED_LIMIT]
    if bad:  # train.py seeds numpy with seed + rank: every run would fail once started
        raise ValueError(f'--seeds {bad[0]} is not allowed; expected integers from 0 to {_SEED_LIMIT - 1} (train.py '
                         f'seeds numpy with them)')
    runs = []
    for family in dict.fromkeys(families):
        for variant, kwargs in VARIANTS[family].items():
            for seed in dict.fromkeys(seeds):
                run = Run(family, variant, seed, model_name(family, dataset), dict(kwargs), Path())
                run.out_dir = Path(output) / 'runs' / run.name
                runs.append(run)
    return runs


def _given_settings(recipe: Path, extra_args: Sequence[str]) -> Dict[str, Any]:
    """The recipe's settings with the extra train.py arguments over them, by train.py's names (a switch: True)."""
    settings = dict(read_recipe(recipe))
    for flag, words in _flag_words(extra_args).items():
        if flag.startswith('--'):  # typed as args.yaml holds them: 2, 0.5, 'cosine'
            settings[flag[2:].replace('-', '_')] = _typed(words[-1]) if words else True
    return settings


def _typed(word: str) -> Any:
    """A train.py argument's word as a number where it is one, else as it is."""
    for kind in (int, float):
        try:
            return kind(word)
        except ValueError:
            pass
    return word


def planned_epochs(recipe: Path, extra_args: Sequence[str]) -> int:
    """Epochs a run trains: ``--epochs`` among the extra train.py arguments, else the recipe's, with those train.py
    adds to them (:func:`scheduled_epochs`: ``-- --warmup-prefix``, ``--cooldown-epochs`` ...).

    Raises:
        ValueError: ``--epochs`` among the extra arguments is not an integer >= 1; the recipe is not one
            (:func:`~timm_sl.tools.train_args.read_recipe`).
    """
    value = last_flag_value(extra_args, '--epochs')
    if value is not None:
        epochs = int(value) if value.strip().isdigit() else 0
        if epochs < 1:
            raise ValueError(f'--epochs {value} after -- is not allowed; expected an integer >= 1')
    return scheduled_epochs(_given_settings(recipe, extra_args))


def train_data(recipe: Path, data_dir: str, extra_args: Sequence[str] = ()) -> Dict[str, Any]:
    """The data settings train.py will run with: the recipe's, overridden by the extra train.py arguments.

    Keys: ``data_dir``, ``dataset`` ('' for an image folder), ``train_split``, ``val_split``, ``num_classes``,
    ``class_map``; ``input_key`` only where given.

    Raises:
        ValueError: ``--num-classes`` among the extra arguments is not an integer >= 1.
    """
    config = read_recipe(recipe)
    data = dict(data_dir=str(data_dir), dataset=config.get('dataset', ''),
                train_split=config.get('train_split', 'train'), val_split=config.get('val_split', 'validation'),
                num_classes=config.get('num_classes'), class_map=config.get('class_map', ''))
    for key in data:
        value = last_flag_value(extra_args, '--' + key.replace('_', '-'))
        if value is not None:
            data[key] = value
    input_key = last_flag_value(extra_args, '--input-key') or config.get('input_key')
    if input_key:  # timm's folder reader takes it for its image suffixes ('.png;.webp')
        data['input_key'] = str(input_key)
    try:
        data['num_classes'] = None if data['num_classes'] is None else int(data['num_classes'])
    except ValueError:
        data['num_classes'] = 0
    if data['num_classes'] is not None and data['num_classes'] < 1:  # 0: a model without a head, failing each run
        raise ValueError(f'--num-classes {last_flag_value(extra_args, "--num-classes")} is not allowed; expected an '
                         f'integer >= 1')
    return data


def describe_data(args: Dict[str, Any]) -> str:
    """The data of a train.py run (its ``args.yaml``, or :func:`train_data`) in a few words, for titles: the reader
    and folder, and the splits where recorded (``-- --train-split extra`` trains on other images than the recipe's)."""
    root = shown(args.get('data_dir') or args.get('data') or '?')  # a newline in it: quoted, not two folders' names
    splits = ''.join(f', {k.split("_")[0]} split {shown(args[k])}' for k in ('train_split', 'val_split')
                     if args.get(k))
    return (f'{shown(args["dataset"])} in {root}' if args.get('dataset') else f'image folder {root}') + splits


def train_command(run: Run, script: Path, data_dir: str, recipe: Path, extra_args: Sequence[str] = (),
                  nproc: int = 1, resume: Optional[Path] = None, python: str = sys.executable) -> List[str]:
    """The train.py command line of a run; the extra arguments come last, so they override the recipe and the plan."""
    launcher = [python] if nproc == 1 else [python, '-m', 'torch.distributed.run', '--standalone',
                                            '--nproc_per_node', str(nproc)]
    cmd = [*launcher, str(script), '--data-dir', str(data_dir), '--config', str(recipe), '--model', run.model]
    if run.model_kwargs:
        cmd += ['--model-kwargs', *(f'{k}={v}' for k, v in run.model_kwargs.items())]
    cmd += ['--lr', f'{run.lr:g}', '--seed', str(run.seed),
            '--output', str(run.out_dir.parent), '--experiment', run.name]
    if resume is not None:
        cmd += ['--resume', str(resume)]
    return cmd + list(extra_args)


def _flag_words(args: Sequence[str], spellings: Optional[Dict[str, str]] = None) -> Dict[str, List[str]]:
    """train.py arguments as ``{flag: its words}``, each flag as given last (argparse keeps the last), spelled as
    train.py's option table spells it (:func:`~timm_sl.tools.train_args.spell_option`: ``-b 64`` and ``--batch-size
    64`` are one flag)."""
    found: Dict[str, List[str]] = {}
    flag = ''
    for arg in args:
        try:
            float(arg)  # a negative number is a value
            is_flag = False
        except ValueError:
            is_flag = arg.startswith('-')
        if is_flag:
            flag, value = spell_option(arg, spellings)
            found.pop(flag, None)  # kept in the order argparse reads it last
            found[flag] = [] if value is None else [value]
        else:
            found.setdefault(flag, []).append(arg)
    return found


def _respelled(words: Any, spellings: Optional[Dict[str, str]]) -> Any:
    """Recorded ``{flag: its words}`` (:func:`_flag_words` of an earlier session, which may have spelled a flag
    otherwise or not at all) spelled as ``spellings`` spell them; anything else as it is."""
    if not isinstance(words, dict) or not spellings:
        return words
    return _flag_words([w for flag, value in words.items()  # '': the words before the first flag
                        for w in ((flag,) if flag else ()) + tuple(value if isinstance(value, list) else [value])],
                       spellings)


def _prepared_contents(data: Dict[str, Any]) -> Optional[str]:
    """What a folder a ``timm-sl prepare-*`` command wrote holds in the splits the runs read, as its record says (the
    images per split, and a sha256 of the images per class, the source files' bytes and ``--limit``), or None for a
    folder without a record: the folder prepared again with another ``--limit`` or source between sessions would
    resume a run on other images, or report a finished one as trained on them."""
    from ._splits import read_info
    root = Path(data['data_dir'])
    found = prepared_dataset(root) if root.is_dir() else None
    if found is None:
        return None
    info = read_info(found[0])
    counts = info.get('counts') if isinstance(info.get('counts'), dict) else {}
    splits = [(split_folder(root, str(data[k])) or root / str(data[k])).name for k in ('train_split', 'val_split')]
    sources = info.get('sources', info.get('files'))
    sources = sources if isinstance(sources, dict) else {}
    read = {k: v.get('sha256') if isinstance(v, dict) else None for k, v in sources.items()
            if k in splits or k not in counts}  # another split's source (SVHN's extra) is no part of these runs
    contents = dict(counts={s: counts.get(s) for s in splits}, sources=read, limit=info.get('limit'))
    sizes = [sum(c.values()) if isinstance(c, dict) and all(type(n) is int for n in c.values()) else '?'
             for c in contents['counts'].values()]
    digest = hashlib.sha256(json.dumps(contents, sort_keys=True, default=str).encode()).hexdigest()[:12]
    return f'{found[0].name}: ' + ', '.join(f'{n} {s}' for n, s in zip(sizes, splits)) + f' images, sha256 {digest}'


def run_settings(run: Run, data_dir: str, recipe: Path, extra_args: Sequence[str] = (), nproc: int = 1,
                 spellings: Optional[Dict[str, str]] = None) -> Dict[str, Any]:
    """What defines a run's result, as JSON values: the model and its kwargs, lr, seed, the recipe and its settings
    (but ``epochs``), the data (:func:`train_data`, its folder resolved, the sha256 of its class map), processes per
    run and the other extra train.py arguments (but those of :data:`_HOW_FLAGS`), each flag spelled as ``spellings``
    (train.py's, :func:`~timm_sl.tools.train_args.train_script_spellings`) spell it. A run is resumed or skipped only
    with the settings it was started with (:data:`SETTINGS`)."""
    data = train_data(recipe, data_dir, extra_args)
    data['class_map_sha256'] = class_map_identity(data)
    prepared = _prepared_contents(data)
    if prepared is not None:
        data['prepared'] = prepared
    data['data_dir'] = str(Path(data['data_dir']).resolve())
    config = {k: v for k, v in read_recipe(recipe).items() if k != 'epochs'}
    args = {k: v for k, v in _flag_words(extra_args, spellings).items() if k not in _HOW_FLAGS + _DATA_FLAGS}
    settings = dict(model=run.model, model_kwargs=run.model_kwargs, lr=run.lr, seed=run.seed,
                    recipe=Path(recipe).name, recipe_settings=config, data=data, nproc=nproc, train_args=args)
    return json.loads(json.dumps(settings, default=str))


def _recorded_settings(run: Run) -> Dict[str, Any]:
    """The settings a run was started with: its :data:`SETTINGS`, else (a run of an older reproduce) the model, kwargs,
    seed and data its train.py recorded in args.yaml and the recipe of its command.txt (called for a run that trained).

    Raises:
        ValueError: a :data:`SETTINGS` that is there but damaged (cut short, not a JSON object): what the run was
            trained with is not known, and args.yaml says less (not the train.py arguments, nor the class map); or
            no regular file (a FIFO, :func:`~timm_sl.tools.files.check_regular_file`); without it, an args.yaml
            missing, unreadable or recording no model or model kwargs.
        IsADirectoryError: a folder there, which is no record either.
    """
    path = run.out_dir / SETTINGS
    what = f'record of the run settings of {run.name}'
    text = read_text(path, what) if path.exists() or path.is_symlink() else None  # a FIFO / folder: refused
    try:
        recorded = None if text is None else json.loads(text)
    except ValueError as e:  # a disk that filled while it was written
        recorded = e
    if isinstance(recorded, dict):
        return recorded
    if text is not None:
        raise ValueError(f'{path} is damaged ({"not JSON" if isinstance(recorded, Exception) else "not a JSON object"})'
                         f': what the run was trained with is not known; allowed: delete the file to compare the run '
                         f'by its args.yaml (as a run of an older reproduce), delete {run.out_dir} to restart it, or '
                         f'another --out')
    path = run.out_dir / 'args.yaml'
    try:
        args = read_args_yaml(path) if path.is_file() else None
    except (ValueError, OSError):
        args = None
    unknown = ['model', 'model_kwargs'] if args is None else [k for k in ('model', 'model_kwargs') if k not in args]
    if unknown:  # train.py writes every argument there when it starts: the run's model would be taken on trust
        raise ValueError(f'{path} ' + ('is missing or unreadable' if args is None else
                                       f'records no {" nor ".join(unknown)}') +
                         f', and {run.out_dir / SETTINGS} is not there: what {run.name} was trained with is not known, '
                         f'and skipped or resumed it would be reported as this command\'s model; allowed: the file '
                         f'put back whole, delete {run.out_dir} to restart the run, or another --out')
    old = {k: args[k] for k in ('model', 'model_kwargs', 'seed') if k in args}
    command = run.out_dir / COMMAND
    try:
        config = last_flag_value(shlex.split(read_text(command, "the run's train.py command line")), '--config') \
            if command.exists() else None
    except (ValueError, OSError):
        config = None
    if config:
        old['recipe'] = Path(config).name
    # the class map as given, as this command's settings hold it: one given now and not then is other labels
    data = {k: args[k] for k in ('dataset', 'train_split', 'val_split', 'num_classes', 'class_map') if k in args}
    return json.loads(json.dumps(dict(old, data=data) if data else old, default=str))


def _args_differ(args: Dict[str, Any], recorded: Dict[str, Any]) -> List[str]:
    """What train.py's ``args`` (of an args.yaml or a checkpoint) record other than a run's :data:`SETTINGS`
    (``recorded``) of model, kwargs, seed and lr (the lr of ``-- --lr`` where given), ``key value (the run: value)``;
    only what both say is compared."""
    given = (recorded.get('train_args') or {}).get('--lr') if isinstance(recorded.get('train_args'), dict) else None
    given = given[-1] if isinstance(given, list) and given else None  # train.py got these words as they are
    expected = dict(recorded) if given is None else dict(recorded, lr=given)
    passed = dict(expected)
    if given is None and expected.get('lr') is not None:  # the run's lr as `:g` writes it into train.py's command
        try:
            passed['lr'] = f"{float(passed['lr']):g}"
        except (TypeError, ValueError):
            pass
    got = json.loads(json.dumps({k: args[k] for k in RUN_SETTINGS if k in args}, default=str))
    return [f'{key} {got[key]!r} (the run: {expected[key]!r})' for key in settings_differ(got, passed)]


def _started_since(run: Run, recorded: Dict[str, Any]) -> str:
    """Why a run folder's ``args.yaml`` (train.py's record of its last start there) is not of the run its
    :data:`SETTINGS` (``recorded``) records ('' when it is, or where either does not say): model, kwargs, seed and lr
    differ when train.py was started in the folder since with other settings (by hand, from its command.txt edited),
    and its last.pth.tar and summary.csv rows are then of that training, which resumed or skipped would pass for the
    run's."""
    path = run.out_dir / 'args.yaml'
    try:
        args = read_args_yaml(path) if path.is_file() else {}
    except (ValueError, OSError):
        return ''
    found = _args_differ(args, recorded)
    if not found:
        return ''
    return (f'{path} records {"; ".join(found)}, other than {run.out_dir / SETTINGS}: train.py was started again in '
            f'the folder with other settings (by hand, from an edited command.txt?), and its last.pth.tar and '
            f'summary.csv hold that training, which would pass for this run\'s; allowed: delete {run.out_dir} to '
            f'restart the run, or another --out')


def timm_refuses_resume(last: Path) -> bool:
    """Whether timm's train.py ``--resume`` would stop at ``last``: below torch 2.5 (no
    ``torch.serialization.safe_globals``) timm loads it weights-only without allowing the ``argparse.Namespace`` (its
    ``args``) every train.py checkpoint holds. False on a newer torch, and for a file torch cannot read at all (that
    is :func:`checkpoint_problem`'s to name)."""
    import pickle
    import torch
    if hasattr(torch.serialization, 'safe_globals'):
        return False
    try:
        torch.load(str(last), map_location='cpu', weights_only=True, mmap=True)
    except pickle.UnpicklingError:
        return True
    except Exception:  # noqa: BLE001 - torch raises many types for a file it cannot read
        return False
    return False


def _checkpoint_not_the_runs(run: Run, recorded: Dict[str, Any]) -> str:
    """Why a run's last.pth.tar cannot be resumed as the run ('' when it can, or where it does not say): saved by a
    train.py of other settings than the run's :data:`SETTINGS` (``recorded``; a checkpoint of another run copied over
    it), or of a later epoch than summary.csv's last row (train.py writes an epoch's row before its checkpoint: rows
    lost since, say by a copy of the run taken while it trained, the summary before the checkpoint). Resumed, the run
    would go on from another run's weights, or its results would lack those epochs."""
    last = run.out_dir / 'last.pth.tar'
    try:
        rows = read_summary_rows(run.out_dir / 'summary.csv')
        checkpoint = read_checkpoint(last, mmap=True)
    except (ValueError, OSError):
        return ''
    differ = _args_differ(checkpoint.args, recorded)
    if differ:
        return (f'{last} was saved by a train.py with {"; ".join(differ)}, other than {run.out_dir / SETTINGS}: '
                f'another run\'s checkpoint (copied over it?); resumed, the run would go on from that run\'s weights '
                f'and pass for its own; allowed: delete {run.out_dir} to restart the run, or another --out')
    epoch = checkpoint.epoch
    if not rows or not isinstance(epoch, int) or isinstance(epoch, bool) or epoch <= int(rows[-1]['epoch']):
        return ''
    return (f"{last} is of epoch {epoch + 1}, but {run.out_dir / 'summary.csv'} reaches epoch "
            f"{int(rows[-1]['epoch']) + 1} (counted from 1): its rows of the epochs after were lost (a copy of the run "
            f"taken while it trained?), and resumed, its results would lack them; allowed: the run's whole summary.csv "
            f"put back, or delete {run.out_dir} to restart the run (or another --out)")


def _differences(old: Dict[str, Any], new: Dict[str, Any]) -> List[str]:
    """What differs between recorded settings and this command's, ``key: old -> new``; only what ``old`` records is
    compared (of ``data``, its keys)."""
    def show(value: Any, key: str = '') -> str:
        if key == 'class_map_sha256' and isinstance(value, list):  # the contents of the map each split reads
            return 'sha256 ' + ' '.join(str(v)[:12] + '...' if v else 'none' for v in value)
        if isinstance(value, list):  # a train.py flag's words (none: a switch); a newline in one quoted, escaped
            return ' '.join(map(shown, map(str, value))) or 'given'
        return 'unset' if value is None else repr(value)
    found = []
    for key, value in old.items():
        now = new.get(key)
        if key == 'recipe_settings' and old.get('recipe') != new.get('recipe'):
            continue  # another recipe: named once
        if isinstance(value, dict) and isinstance(now, dict):
            keys = value if key == 'data' else dict.fromkeys([*value, *now])
            found += [f'{key} {k}: {show(value.get(k), k)} -> {show(now.get(k), k)}' for k in keys
                      if value.get(k) != now.get(k)]
        elif value != now:
            found.append(f'{key}: {show(value)} -> {show(now)}')
    return found


def _splits_read(settings: Dict[str, Any], now: Dict[str, Any]) -> Dict[str, Any]:
    """``settings`` (recorded, or ``now``: this command's) with the data splits named as what train.py reads for them
    from the data folder of ``now`` (:func:`split_folder`; of CIFAR, :func:`_split_read`): ``-- --train-split
    training`` reads the ``train/`` folder a run started with the recipe's ``train`` read, one setting."""
    data, ours = settings.get('data'), now.get('data')
    if not isinstance(data, dict) or not isinstance(ours, dict):
        return settings
    name = dataset_name(data.get('dataset', ours.get('dataset')))
    read = {}
    for key in ('train_split', 'val_split'):
        if data.get(key) is None:
            continue
        if name in TORCH_FOLDERS:
            read[key] = _split_read(data[key], name)
        elif dataset_reader(name) in IMAGE_FOLDER_READERS:
            folder = split_folder(Path(str(ours.get('data_dir'))), str(data[key]))
            read[key] = data[key] if folder is None else folder.name
    return dict(settings, data=dict(data, **read))


def _trained(run: Run) -> List[str]:
    """What a run folder holds of training: its summary.csv (with the epochs it records) and checkpoints."""
    found = []
    summary = run.out_dir / 'summary.csv'
    if summary.is_file():
        try:
            rows = len(read_summary_rows(summary))
            found += [f'summary.csv of {rows} epoch{"s" * (rows != 1)}'] if rows else []
        except (ValueError, OSError):
            found.append('summary.csv')
    return found + sorted(p.name for p in run.out_dir.glob('*.pth.tar') if p.is_file())


def _drop_cut_row(summary: Path) -> None:
    """Before train.py resumes a run: a last summary.csv row cut off mid-write (a disk that filled while train.py wrote
    it; train.py writes an epoch's row before its checkpoint, so the epoch is trained again) is removed, which the
    readers leave out already; a whole one that only lacks its line end gets it. Left as it is, the header the resumed
    train.py writes first would run on from it, one broken line that no command reads."""
    data = summary.read_bytes() if summary.is_file() else b''
    if not data or data.endswith(b'\n'):
        return
    text = read_text(summary, "train.py's summary.csv")
    head = text[:text.rfind('\n') + 1]
    try:  # a whole last row without its line end (the file saved by an editor) is a row: it gets its line end
        whole = json.dumps(summary_rows(text, summary)) != json.dumps(summary_rows(head, summary))
    except ValueError:  # a broken row before the last: check_runs names it
        return
    if whole:
        with open(summary, 'ab') as f:
            f.write(b'\r\n' if b'\r\n' in data else b'\n')
    else:
        os.truncate(summary, data.rfind(b'\n') + 1)


def _cut_since_done(run: Run) -> str:
    """:func:`~timm_sl.tools.runs.cut_since_done` of a run folder ('' where its summary.csv cannot be read: that is
    named by the checks that read it)."""
    summary = run.out_dir / 'summary.csv'
    try:
        rows = read_summary_rows(summary) if summary.is_file() else []
    except (ValueError, OSError):
        return ''
    return cut_since_done(run.out_dir, rows, read_done_marker(run.out_dir))


def check_runs(runs: Sequence[Run], settings: Dict[str, Dict[str, Any]], epochs: int,
               spellings: Optional[Dict[str, str]] = None, added: int = 0) -> List[str]:
    """What keeps the planned runs' folders from being skipped, resumed or started as they are, one line per problem
    (empty: nothing): a file where a run folder goes; two run folders that are one (a link); a run that trained with
    other settings (``settings``: this command's, by run name; the first such run named, with how many more); a run
    that trained but lost its last.pth.tar, or its summary.csv (the rows of its epochs); a last.pth.tar train.py
    cannot resume from; a run folder that is a link out of its runs/ folder (the lock of --out, :func:`hold_output`,
    would not hold it: another --out linked there could train it at once). Nothing a run trained is overwritten by a
    restart. ``spellings``: train.py's (:func:`run_settings`), for the train.py arguments a run recorded;
    ``epochs``: what each run trains (:func:`planned_epochs`), ``added`` of them by train.py to ``--epochs``."""
    errors: List[str] = []
    other: List[Tuple[Run, List[str]]] = []
    stopped: List[Tuple[Run, int, int]] = []  # runs interrupted at or after ``epochs``: trained, their schedule
    refused: List[Run] = []  # runs to resume whose last.pth.tar timm's train.py --resume cannot load on this torch
    real: Dict[str, Run] = {}  # the real folder of each run folder: two runs through a link would write one folder
    for run in runs:
        folder = run.out_dir
        first = real.setdefault(os.path.realpath(folder), run)
        if first is not run:
            errors.append(f'{first.out_dir} and {folder} are one folder (a link): the runs {first.name} and {run.name} '
                          f'would write over each other\'s results; allowed: a folder of its own for each run (remove '
                          f'the link)')
            continue
        runs_real = os.path.realpath(folder.parent)
        if os.path.commonpath([os.path.realpath(folder), runs_real]) != runs_real:  # another --out's lock holds it
            errors.append(f'{folder} is a link to {os.path.realpath(folder)}, outside {folder.parent}, whose lock '
                          f'keeps two reproduce from training a run at once: another --out could train that folder '
                          f'beside this one; allowed: remove the link (to keep the runs elsewhere, link '
                          f'{folder.parent} itself)')
            continue
        if folder.is_symlink() and not folder.exists():  # no folder can be made there: the sweep would stop at it
            errors.append(f'{folder} is a link to {os.readlink(folder)}, which does not exist, where reproduce keeps '
                          f'the run folder of {run.name}; allowed: remove the link (or use another --out)')
            continue
        taken = next((p for p in (folder.parent, folder) if p.exists() and not p.is_dir()), None)
        if taken is not None:
            errors.append(f'{taken} is a file where reproduce keeps ' + (
                'its run folders' if taken == folder.parent else f'the run folder of {run.name}') +
                '; move it away or use another --out')
            continue
        blocked = next((name for name in _TRAIN_FILES if (folder / name).is_dir()), None)
        if blocked:  # neither missing nor empty: train.py could not write it, nor resume from it
            errors.append(f'{folder / blocked} is a folder where train.py writes its {_TRAIN_FILES[blocked]}; allowed: '
                          f'move it away (or use another --out)')
            continue
        try:  # a FIFO there: train.py would wait on it for ever, and it is neither missing nor empty
            for name, what in _TRAIN_FILES.items():
                check_regular_file(folder / name, f"train.py's {what} (it writes it there); allowed: move it away "
                                                  f"(or use another --out)")
        except ValueError as e:
            errors.append(str(e))
            continue
        linked = next((name for name in _TRAIN_FILES if (folder / name).is_symlink()), None)
        if linked:  # train.py writes args.yaml and summary.csv through a link: the file it names would be replaced
            errors.append(f'{folder / linked} is a link (to {os.readlink(folder / linked)}) where train.py writes its '
                          f'{_TRAIN_FILES[linked]}, which would replace the file it links to (or resume another '
                          f'run); allowed: remove the link (or use another --out)')
            continue
        trained = _trained(run) if folder.is_dir() else []
        if not trained:
            continue  # nothing trained yet: the run starts (again) from scratch
        if 'summary.csv' in trained:  # unread, its epochs would read as none ('no epoch finished')
            try:
                read_summary_rows(folder / 'summary.csv')
            except (ValueError, OSError) as e:
                errors.append(f'{e}; the run cannot be resumed nor reported with it; allowed: the file mended (or '
                              f'{folder} deleted to restart the run, or another --out)')
                continue
        try:
            recorded = _recorded_settings(run)
        except (ValueError, OSError) as e:
            errors.append(str(e))
            continue
        if 'train_args' in recorded:
            recorded['train_args'] = _respelled(recorded['train_args'], spellings)
            if isinstance(recorded['train_args'], dict):  # a record of a reproduce that took one of them for a setting
                recorded['train_args'] = {k: v for k, v in recorded['train_args'].items() if k not in _HOW_FLAGS}
        now = settings[run.name]
        differ = _differences(*(_splits_read(s, now) for s in (recorded, now)))
        if differ:
            other.append((run, differ))
            continue
        since = _started_since(run, recorded) if (folder / SETTINGS).is_file() else ''
        if since:
            errors.append(since)
            continue
        state, early = run_state(run, epochs), _stopped_early(run)
        last = folder / 'last.pth.tar'
        marker = folder / DONE_MARKER
        if last.is_file() and not any(t.startswith('summary.csv') for t in trained):
            # train.py writes an epoch's row before its checkpoint: the rows were deleted (or the file emptied)
            errors.append(f'{folder / "summary.csv"} ' + ('holds no epoch' if (folder / 'summary.csv').exists() else
                                                          'is missing') +
                          f', but the run has trained ({", ".join(trained)}' +
                          (f'; {marker.name} marks it finished' if marker.is_file() else '') +
                          '): resumed, its results would be only the epochs trained from now on; put the file back, '
                          f'or delete {folder} to restart the run (or use another --out)')
        elif cut := _cut_since_done(run):  # else skipped as finished, its best top-1 and epochs read from what is left
            errors.append(cut)
        elif state == 'new' and [t for t in trained if t.endswith('.pth.tar')] == ['tmp.pth.tar']:  # save cut off
            errors.append(f'{last} was never saved: train.py stopped while it wrote its first checkpoint '
                          f'({folder / "tmp.pth.tar"}, cut off: a full disk?), so the epochs of '
                          f'{folder / "summary.csv"} cannot be resumed; allowed: delete {folder} to restart the run '
                          f'(or use another --out)')
        elif state == 'new':
            errors.append(f'{last} is missing, but the run has trained ({", ".join(trained)}): reproduce resumes a '
                          f'run only from its last.pth.tar; put it back to resume, or delete {folder} to restart the '
                          f'run on purpose (or use another --out)')
        elif state == 'resume' and early is not None and early[0] >= epochs:
            stopped.append((run, *early))
        elif state == 'resume' and (problem := checkpoint_problem(last)):
            errors.append(f'{last} is truncated or unreadable ({problem}); delete {folder} to restart the run (or use '
                          f'another --out)')
        elif state == 'resume' and (foreign := _checkpoint_not_the_runs(run, recorded)):  # reads last.pth.tar
            errors.append(foreign)
        elif state == 'resume' and timm_refuses_resume(last):
            refused.append(run)
    if stopped:  # one line for all: every run of an interrupted sweep stopped alike
        (run, trained, schedule), more = stopped[0], len(stopped) - 1
        most = max(t for _, t, _ in stopped)
        errors.append(f'{run.out_dir} stopped after {trained} of the {schedule} epochs train.py was last started with '
                      f'(interrupted)' + (f', and {more} more run folder{"s" * (more > 1)} alike' if more else '') +
                      f': --epochs {epochs - added} would not continue it, and would report it as finished; allowed: '
                      f'--epochs {most + 1 - added} or more to continue it (train.py rebuilds the schedule for them), '
                      f'or another --out')
    if refused:  # one line for all: this torch refuses every train.py checkpoint alike
        import torch
        more = len(refused) - 1
        errors.append(f'{refused[0].out_dir / "last.pth.tar"} cannot be resumed on torch {torch.__version__}' +
                      (f', and {more} more run folder{"s" * (more > 1)} alike' if more else '') +
                      ": timm's train.py --resume loads a checkpoint weights-only, which below torch 2.5 (no "
                      'torch.serialization.safe_globals) refuses the argparse.Namespace every train.py checkpoint '
                      'holds; allowed: torch >= 2.5 to continue the runs, or another --out to train them from scratch')
    if other:
        (run, differ), more = other[0], len(other) - 1
        errors.append(f'{run.out_dir} was trained with other settings ({"; ".join(differ[:3])}'
                      f'{"; ..." if len(differ) > 3 else ""})' +
                      (f', and {more} more run folder{"s" * (more > 1)} alike' if more else '') +
                      ': reproduce resumes or skips a run only with the settings it started with; use another --out')
    return list(dict.fromkeys(errors))


def _check_writable(path: Path, what: str) -> None:
    """Refuse, before anything runs, a place reproduce could not write its ``what`` to: a folder there, or a file or
    folder it may not write.

    Raises:
        IsADirectoryError / PermissionError / ValueError (a link there; a FIFO, socket or device, which writing or
            reading would wait on or never end): naming the path and what is allowed.
    """
    check_regular_file(path, f'the {what} (reproduce writes it there); allowed: move it away or use another --out')
    if path.is_dir():
        raise IsADirectoryError(f'{path} is a folder where reproduce writes its {what}; allowed: move it away or use '
                                f'another --out')
    if path.is_symlink():  # written through, the file it links to (a user's, elsewhere) would be replaced
        raise ValueError(f'{path} is a link where reproduce writes its {what}, which would replace the file it links '
                         f'to; allowed: remove the link, or another --out')
    where = path if path.exists() else next((p for p in path.parents if p.exists()), None)
    if where is not None and where.is_dir() == (where != path) and not os.access(where, os.W_OK):
        raise PermissionError(f'{where} is not writable, and reproduce writes its {what} '
                              f'{"there" if where == path else "below it"}; allowed: make it writable or use another '
                              f'--out')


def check_run_files(runs: Sequence[Run]) -> None:
    """Refuse, before any run starts, a file of a run folder (:data:`RUN_FILES`) that reproduce could not write: a
    sweep stopped midway by its bookkeeping is worse than one that never started.

    Raises:
        IsADirectoryError / PermissionError / ValueError (a link): the first such file, one line.
    """
    for run in runs:
        for name, what in RUN_FILES.items():
            _check_writable(run.out_dir / name, f'{what} of {run.name}')


LOCK = REPRODUCE_LOCK  # in OUT/runs (its real folder): held (flock) by the reproduce writing there


@contextlib.contextmanager
def hold_output(output: Path) -> Iterator[Optional[int]]:
    """Hold ``output`` (created if missing) for this process: the :data:`LOCK` file of its run folders
    (``output/runs``, where every run writes; two --out whose ``runs`` are one folder through a link hold one lock)
    locked with ``flock``, which the system releases when the process ends, however it ends, and the processes that
    inherited the lock's file descriptor (yielded; the train.py processes, which outlive a killed reproduce) ended
    too. Without ``fcntl`` (Windows) nothing is held (None).

    Raises:
        BlockingIOError: another process holds it (a reproduce still running into ``output``, or into another --out
            whose runs are these), one line.
        IsADirectoryError / NotADirectoryError / ValueError: a folder or a link where the lock file goes (its process
            id would be written through the link, over the file it names), a file or a link to nothing where the run
            folders go; one line.
    """
    try:
        import fcntl
    except ImportError:
        yield None
        return
    runs = output / 'runs'
    if runs.is_symlink() and not runs.exists():
        raise ValueError(f'{runs} is a link to {os.readlink(runs)}, which does not exist, where reproduce keeps its '
                         f'run folders; allowed: remove the link, or another --out')
    if runs.exists() and not runs.is_dir():
        raise NotADirectoryError(f'{runs} is a file where reproduce keeps its run folders; move it away or use '
                                 f'another --out')
    lock = runs / LOCK
    if lock.is_symlink() and not lock.is_dir():
        raise ValueError(f'{lock} is a link where reproduce writes its lock file (its process id), which would '
                         f'replace the file it links to; allowed: remove the link, or another --out')
    _check_writable(lock, 'lock file')
    make_folder(output)  # /proc, /sys: the system says 'no such file', as if an input were missing
    make_folder(runs)
    f = open(lock, 'a+', encoding='utf-8', errors='replace')  # what another wrote there is read, not trusted
    held = Path(os.path.realpath(runs)) / LOCK if runs.is_symlink() else lock  # named as the other reproduce sees it
    with f:
        try:
            _lock_soon(f, fcntl)
        except BlockingIOError:
            f.seek(0)
            pid = f.readline().strip()  # the names of the runs it trains follow
            pid = pid if re.fullmatch(r'[0-9]{1,9}', pid) else ''  # a damaged file names no process
            raise BlockingIOError(f'{output} is in use by ' + (
                f'the train.py processes of a timm-sl reproduce that ended (pid {pid}), which hold {held} while they '
                f'run' if pid and not _alive(int(pid)) else
                f'another timm-sl reproduce{f" (pid {pid})" if pid else ""}, which holds {held}') +
                ': two would train the same runs at once; allowed: wait for it to end, or another --out') from None
        f.truncate(0)
        f.write(str(os.getpid()))
        f.flush()
        yield f.fileno()


def _lock_soon(f: Any, fcntl: Any, wait_s: float = 0.5) -> None:
    """``flock`` ``f`` exclusively, trying again for ``wait_s``: a reader
    (:func:`~timm_sl.tools.runs.reproduce_holding`, from export or release) holds it shared for an instant, which is
    no reproduce running.

    Raises:
        BlockingIOError: still held after ``wait_s``.
    """
    deadline = time.monotonic() + wait_s
    while True:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.02)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process
        return True
    return True


def check_report_files(output: Path, overwrite: bool = False) -> None:
    """Refuse, before any run starts, to replace report files (:data:`REPORT_FILES`) in ``output`` that reproduce did
    not write, or that changed since (their sha256 is not :data:`REPORT_MANIFEST`'s), unless ``overwrite``; and a
    report file reproduce could not write (a folder there).

    Raises:
        IsADirectoryError / PermissionError / ValueError: the first problem, one line.
    """
    output = Path(output)
    for name, what in [*REPORT_FILES.items(), (REPORT_MANIFEST, 'record of the report files it wrote')]:
        _check_writable(output / name, what)
    manifest = read_manifest(output, overwrite, REPORT_MANIFEST, 'timm-sl reproduce')
    theirs = [output / n for n in REPORT_FILES if (output / n).exists() and manifest.get(n) != sha256(output / n)]
    if theirs and not overwrite:
        more = f' (and {len(theirs) - 1} more)' if len(theirs) > 1 else ''
        raise ValueError(f'{theirs[0]}{more} would be replaced by the report but was not written by timm-sl '
                         f'reproduce, or was changed since ({REPORT_MANIFEST} records what it wrote); allowed: move it '
                         f'away, another --out, or --overwrite to replace it')


def _stopped_early(run: Run) -> Optional[Tuple[int, int]]:
    """``(epochs trained, epochs of its schedule)`` of a run that stopped (interrupted) before the end of the schedule
    train.py was last started with (its args.yaml's, :func:`scheduled_epochs`) and that no done.json marks finished at
    the epochs it
    trained; None otherwise, or where args.yaml does not say."""
    try:
        rows = read_summary_rows(run.out_dir / 'summary.csv') if (run.out_dir / 'summary.csv').is_file() else []
        args = read_args_yaml(run.out_dir / 'args.yaml') if (run.out_dir / 'args.yaml').is_file() else {}
    except (ValueError, OSError):
        return None
    schedule = scheduled_epochs(args) if type(args.get('epochs')) is int else None  # warm-up prefix, cool-down ...
    trained = int(rows[-1]['epoch']) + 1 if rows else 0
    marked = read_done_marker(run.out_dir).get('epochs')
    if type(schedule) is not int or trained >= schedule or (isinstance(marked, int) and marked >= trained):
        return None
    return trained, schedule


def _checkpoint_behind(run: Run) -> Optional[Tuple[int, int]]:
    """``(epoch of last.pth.tar, epoch of summary.csv's last row)``, both from 1, of a run whose last.pth.tar is of an
    earlier epoch than its last row: train.py writes an epoch's row before its checkpoint, so it stopped in between
    (the disk filled, or it was stopped, while it saved the checkpoint) and that epoch's weights were never saved;
    None otherwise, or where either cannot be read (the checks that read them name that)."""
    last = run.out_dir / 'last.pth.tar'
    try:
        rows = read_summary_rows(run.out_dir / 'summary.csv') if last.is_file() else []
        epoch = read_checkpoint(last, mmap=True).epoch if rows else None
    except (ValueError, OSError):
        return None
    if not isinstance(epoch, int) or isinstance(epoch, bool) or epoch >= int(rows[-1]['epoch']):
        return None
    return epoch + 1, int(rows[-1]['epoch']) + 1


def _mark_done(run: Run, epochs: int, seconds: float, command: Sequence[str], recipe: Path) -> None:
    """Write the run's ``done.json``: its row, model, the recipe's dataset and the train.py command last started."""
    marker = json.dumps(
        dict(epochs=epochs, seconds=round(seconds, 1), command=list(command), family=run.family, variant=run.variant,
             seed=run.seed, model=run.model, model_kwargs=run.model_kwargs, dataset=next(
                 (d for d, (name, _) in DATASETS.items() if name == Path(recipe).name), None)), indent=1)
    write_atomically(run.out_dir / DONE_MARKER, lambda file: file.write_text(marker, encoding='utf-8'))


def _mark_skipped_done(run: Run, epochs: int, recipe: Path) -> None:
    """Mark a finished run whose call was killed before it wrote the run's ``done.json``, from what the run records of
    itself: the train.py command that trained it (:data:`COMMAND`), its recipe (``recipe``, this call's, where its
    :data:`SETTINGS` is there: :func:`check_runs` found the recipe it records the same; else that command's
    ``--config``), the epochs its summary.csv reached and its sessions since its last start from scratch. A run
    without that command (an older reproduce's, or one edited into no command line) is left unmarked, as before: this
    call's recipe and command need not be the ones it trained with."""
    path = run.out_dir / COMMAND
    if not path.is_file():
        return
    try:
        command = shlex.split(read_text(path, "the run's train.py command line"))
    except ValueError:  # an unbalanced quote, edited by hand: no command, as every reader of the file takes it
        return
    rows = read_summary_rows(run.out_dir / 'summary.csv')
    trained = int(rows[-1]['epoch']) + 1 if rows else 0
    recorded = recipe if (run.out_dir / SETTINGS).is_file() else Path(last_flag_value(command, '--config') or '')
    _mark_done(run, max(epochs, trained), sum(_seconds(s) for s in _sessions(run, current=True)), command, recorded)


def run_state(run: Run, epochs: int) -> str:
    """'done' (marker for at least ``epochs``, or summary.csv reached the last epoch with last.pth.tar saved after it,
    :func:`_checkpoint_behind`; and the run not stopped before the end of its schedule, :func:`_stopped_early`),
    'resume' (a last.pth.tar to continue from) or 'new'."""
    summary = run.out_dir / 'summary.csv'
    epochs_done = read_done_marker(run.out_dir).get('epochs')
    stopped = _stopped_early(run)
    if summary.is_file() and isinstance(epochs_done, int) and epochs_done >= epochs and stopped is None:
        return 'done'
    if summary.is_file() and stopped is None:
        try:
            rows = read_summary_rows(summary)
        except ValueError:
            rows = []
        if rows and int(rows[-1]['epoch']) + 1 >= epochs and (run.out_dir / 'last.pth.tar').is_file() and \
                _checkpoint_behind(run) is None:  # no last.pth.tar: its only save failed (or it was moved away)
            return 'done'
    return 'resume' if (run.out_dir / 'last.pth.tar').is_file() else 'new'


def _last_line(log: Path) -> str:
    """The last non-blank line of a log (a crash's exception message). Under torchrun (``--nproc`` > 1) the log ends
    in torchrun's own ``ChildFailedError`` and a table framed by rules of '=': the failing process's last exception
    line before it, else the exit code of the first process that failed."""
    data = log.read_bytes() if log.is_file() else b''
    try:
        text = data.decode('utf-8')
    except UnicodeDecodeError:  # train.py printed in the locale's encoding (Latin-1: a path of 'café')
        text = data.decode(locale.getpreferredencoding(False), errors='replace')
    lines = text.split('\n')
    lines = [line.strip() for line in lines if line.strip()]
    launcher = next((i for i in range(len(lines) - 1, -1, -1) if 'ChildFailedError' in lines[i]), None)
    if launcher is None:
        return lines[-1] if lines else 'no output'
    raised = [line for line in lines[:launcher] if re.match(r'[A-Za-z_][\w.]*(Error|Exception|Interrupt)\b', line)]
    if raised:
        return raised[-1]
    exit_codes = [line for line in lines[launcher:] if re.match(r'exitcode\s*:', line)]
    return 'torchrun: a process failed' + (f' ({" ".join(exit_codes[-1].split())})' if exit_codes else '')


def _collect(outcome: Outcome) -> Outcome:
    sessions = _sessions(outcome.run, current=True)
    outcome.wall = sum(_seconds(s) for s in sessions)
    devices = sessions[-1].get('devices') if sessions else ''
    # CUDA_VISIBLE_DEVICES as a sweep sets it (indices, UUIDs): other text is a damaged record, no device
    outcome.devices = devices if isinstance(devices, str) and re.fullmatch(r'[\w.,:/-]*', devices, re.ASCII) else ''
    throughput = train_throughput(outcome.run.out_dir / LOG_NAME)
    outcome.img_s = throughput[0] / throughput[1] if throughput and throughput[1] > 0 else None
    start = sessions[0].get('log_from') if sessions and sessions[0].get('start') == 'new' else 0
    log = outcome.run.out_dir / LOG_NAME
    size = log.stat().st_size if log.is_file() else 0  # a record past the log's end is damaged: the whole log read
    kept = isinstance(start, int) and not isinstance(start, bool) and 0 <= start <= size  # the log since the last
    outcome.skipped = skipped_samples(log, start if kept else 0)  # start from scratch: its epochs are those kept
    args = outcome.run.out_dir / 'args.yaml'
    if args.is_file():
        try:
            outcome.args = read_args_yaml(args)
            outcome.data = describe_data(outcome.args)
        except ValueError:
            pass
    summary = outcome.run.out_dir / 'summary.csv'
    if summary.is_file():
        try:
            rows = read_summary_rows(summary)
            outcome.summary = summarize(summary, rows, outcome.args)  # --val-interval: its epochs, not its rows
            outcome.curve = [(int(r['epoch']) + 1, r['eval_top1']) for r in rows]  # epochs from 1
        except ValueError:
            rows = []
        if sessions and rows and _untimed_epochs(sessions[-1], rows):  # a session no call recorded trained them
            outcome.wall = 0.  # unknown: the sum of the recorded ones would read as all of the run's time
    record = RunRecord(checkpoint=outcome.run.out_dir / 'last.pth.tar', run_dir=outcome.run.out_dir,
                       args=outcome.args, model=outcome.args.get('model'), sessions=sessions)
    record.summary = outcome.summary
    outcome.schedules = record.schedules()  # as the run's card names them
    return outcome


def _untimed_epochs(session: Dict[str, Any], rows: Sequence[Dict[str, float]]) -> bool:
    """Whether ``rows`` (a run's summary.csv) reach past the epoch its last recorded ``session`` ended at: a train.py
    whose reproduce was killed trained on (its session recorded by no call), so the run's wall time is not known."""
    span = session.get('epochs')
    end = span[1] if isinstance(span, list) and len(span) == 2 else None
    return isinstance(end, int) and not isinstance(end, bool) and int(rows[-1]['epoch']) + 1 > end


def skipped_text(outcome: Outcome) -> str:
    """One line on the unreadable images a run's train.py skipped (timm reads the next image in each one's place, so
    it trained or was evaluated on other images than its folders hold); '' when none."""
    n, distinct = len(outcome.skipped), sorted(set(outcome.skipped))
    if not n:
        return ''
    listed = ', '.join(map(str, distinct[:5])) + (f' and {len(distinct) - 5} more' if len(distinct) > 5 else '')
    return (f'unreadable images skipped {n} time{"s" if n > 1 else ""} (sample '
            f'index{"es" if len(distinct) > 1 else ""} {listed}; timm read the next image in each one\'s place, so '
            f'the run did not train or evaluate on the images its folders hold): see {outcome.run.out_dir / LOG_NAME}')


def _seconds(session: Dict[str, Any]) -> float:
    """A recorded session's seconds; 0 for a value that is not a finite number >= 0 (an edited or damaged file)."""
    value = session.get('seconds')
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value >= 0
    return float(value) if ok else 0.


def _sessions(run: Run, current: bool = False) -> List[Dict[str, Any]]:
    """The train.py sessions of a run this command recorded (:data:`SESSIONS`): one per start, resumes included;
    ``current``: only those since its last start from scratch (what went before it trained nothing kept)."""
    sessions = read_sessions(run.out_dir)
    fresh = [i for i, s in enumerate(sessions) if s.get('start') == 'new']
    return sessions[fresh[-1]:] if current and fresh else sessions


def _record_session(run: Run, result: JobResult, fresh: bool, given_epochs: int, log_from: int = 0) -> None:
    """Add a train.py session to the run's :data:`SESSIONS`: ``given_epochs``, the ``--epochs`` it was given (its
    schedule may train more: ``--cooldown-epochs`` ...), beside the epochs it began and ended at; and, for a start
    from scratch, ``log_from``: the size of :data:`LOG_NAME` before it (what went before it is of no kept epoch)."""
    sessions = _sessions(run) + [dict(status=result.status if not result.message else 'failed', code=result.code,
                                      seconds=round(result.seconds, 1), devices=result.devices,
                                      epochs=[result.epochs_before, result.epochs_after], given_epochs=given_epochs,
                                      start='new' if fresh else 'resume', **({'log_from': log_from} if fresh else {}))]
    text = json.dumps(sessions, indent=1)
    # a full disk: the earlier whole
    write_atomically(run.out_dir / SESSIONS, lambda file: file.write_text(text, encoding='utf-8'))


def reproduce(
        runs: Sequence[Run],
        script: Path,
        data_dir: str,
        recipe: Path,
        extra_args: Sequence[str] = (),
        nproc: int = 1,
        echo=print,
        env: Optional[Dict[str, str]] = None,
        jobs: int = 1,
        devices: Sequence[str] = ('',),
        tty: Optional[bool] = None,
        poll: float = POLL_S,
        stats: Optional[Dict[str, Any]] = None,
        pass_fds: Sequence[int] = (),
) -> List[Outcome]:
    """Run (or skip / resume) every planned run, ``jobs`` at once over ``devices``
    (:func:`timm_sl.tools.sweep.run_jobs`); a crash is recorded and the other runs go on.

    Event lines (``run i/N: name started``, epochs, finished / failed) go to ``echo``, or a tqdm bar on a terminal;
    train.py's own output goes to the run's train.log. Each train.py session's wall time is kept in the run's
    :data:`SESSIONS` file. ``stats``, when given, receives this call's sweep numbers (runs started, jobs, devices,
    seconds, epochs and images trained). ``pass_fds``: what each train.py process inherits (the locks of --out and
    --data-dir).
    """
    epochs = planned_epochs(recipe, extra_args)
    spellings = train_script_spellings(script)
    settings = {run.name: run_settings(run, data_dir, recipe, extra_args, nproc, spellings) for run in runs}
    check_run_files(runs)  # first: a FIFO there is not read (nor waited on) as a record
    given_epochs = int(_given_settings(recipe, extra_args).get('epochs', 300))  # train.py's --epochs
    added = epochs - given_epochs  # --warmup-prefix, --cooldown-epochs
    problems = check_runs(runs, settings, epochs, spellings, added)
    if problems:
        raise ValueError('\n'.join(problems))
    outcomes: Dict[int, Outcome] = {}
    todo: List[Tuple[int, Run]] = []
    for i, run in enumerate(runs):
        if run_state(run, epochs) == 'done':
            if not read_done_marker(run.out_dir):  # train.py finished, but the call that ran it was killed before
                _mark_skipped_done(run, epochs, recipe)  # its mark: without one, export and release name no row
            outcomes[i] = _collect(Outcome(run, 'done', 'finished earlier'))
            echo(f'run {i + 1}/{len(runs)}: {run.name} finished earlier, skipped')
        else:
            todo.append((i, run))
    if todo:  # what a lock held over these run folders says of each: being trained by this reproduce, or not
        mark_training(todo[0][1].out_dir.parent, [run.name for _, run in todo])

    def command(run: Run) -> Callable[[], List[str]]:
        def start() -> List[str]:
            resume = run.out_dir / 'last.pth.tar' if run_state(run, epochs) == 'resume' else None
            if resume is not None:
                _drop_cut_row(run.out_dir / 'summary.csv')
            if resume is None:  # from scratch (check_runs: nothing trained is there); its settings are the run's
                if (run.out_dir / 'summary.csv').exists():
                    (run.out_dir / 'summary.csv').unlink()  # no epoch in it, but no old header to mix with either
                text = json.dumps(settings[run.name], indent=1)
                write_atomically(run.out_dir / SETTINGS, lambda file: file.write_text(text, encoding='utf-8'))
            fresh_start[run.name] = resume is None
            log = run.out_dir / LOG_NAME
            log_from[run.name] = log.stat().st_size if log.is_file() else 0
            cmd = train_command(run, script, data_dir, recipe, extra_args, nproc=nproc, resume=resume)
            line = name_text(shlex.join(cmd)) + '\n'  # a non-ASCII data folder as its UTF-8 name, not misread
            write_atomically(run.out_dir / COMMAND, lambda file: file.write_text(line, encoding='utf-8'))
            started[run.name] = cmd
            return cmd
        return start

    started: Dict[str, List[str]] = {}
    fresh_start: Dict[str, bool] = {}
    log_from: Dict[str, int] = {}
    by_name = {run.name: run for _, run in todo}

    def finish(result: JobResult) -> None:
        run = by_name[result.job.name]
        if result.status == 'exited':
            summary, unread = None, ''
            try:
                summary = summarize(run.out_dir / 'summary.csv') if (run.out_dir / 'summary.csv').is_file() else None
            except ValueError as e:
                unread = str(e)
            if result.code != 0 or summary is None:  # a clean exit that trained nothing failed too
                log = run.out_dir / LOG_NAME
                last = _last_line(log)
                result.message = (f'train.py exited with {result.code}: {last}' if result.code else
                                  f'train.py exited with 0, but {unread}' if unread else
                                  'train.py exited with 0 but wrote no summary.csv (no epoch finished)') + \
                    f' (log: {log})' + (plugin_hint() if 'Unknown model' in last else '')
            elif summary['last_epoch'] < epochs:  # (from 1) train.py ends with 0 when stopped by a signal of its own
                result.message = (f'train.py exited with 0 after {summary["last_epoch"]} of {epochs} epochs '
                                  f'(stopped from outside?); run the same command again to resume')
            elif behind := _checkpoint_behind(run):  # Ctrl-C while it saved: train.py ends with 0
                result.message = (f'train.py exited with 0 after the row of epoch {behind[1]} but before its '
                                  f'checkpoint ({run.out_dir / "last.pth.tar"} is of epoch {behind[0]}; stopped from '
                                  f'outside?); run the same command again to train that epoch again')
            else:
                _mark_done(run, epochs, result.seconds, started[run.name], recipe)
        _record_session(run, result, fresh_start.get(run.name, False), given_epochs, log_from.get(run.name, 0))

    def images(run: Run) -> float:
        """Images its train.py trained in this call: its log's progress lines since the call started it."""
        if run.name not in log_from:
            return 0.
        throughput = train_throughput(run.out_dir / LOG_NAME, steady=False, offset=log_from[run.name])
        return throughput[0] if throughput else 0.

    def kept(run: Run) -> Optional[int]:
        """The epochs a run starts from: 0 from scratch (an old summary.csv is not progress), those of its
        last.pth.tar where summary.csv runs ahead of it (those epochs are trained again), else None (its rows')."""
        if run_state(run, epochs) == 'new':
            return 0
        behind = _checkpoint_behind(run)
        return behind[0] if behind else None

    start = time.monotonic()
    stopped = None
    try:
        results = run_jobs([Job(run.name, run.out_dir, epochs, command(run), LOG_NAME, done=kept(run))
                            for _, run in todo],
                           concurrency=jobs, devices=devices, finish=finish, echo=echo, tty=tty, env=env, poll=poll,
                           numbering=[i + 1 for i, _ in todo], total=len(runs), pass_fds=pass_fds)
    except SweepStopped as e:  # a file could not be written: every run was stopped; the outcomes go with the error
        results, stopped = e.results, e
    if stats is not None:
        stats.update(runs=sum(r.status != 'not run' for r in results), jobs=jobs, devices=list(devices),
                     seconds=round(time.monotonic() - start, 1),
                     epochs=sum(max(r.epochs_after - r.epochs_before, 0) for r in results),
                     images=round(sum(images(run) for _, run in todo)))
    for (i, run), result in zip(todo, results):
        if result.status == 'exited':
            status = 'failed' if result.message else 'done'
        else:
            status = result.status
        message = result.message or ('interrupted' if status == 'interrupted' else '')
        outcomes[i] = _collect(Outcome(run, status, message, result.seconds))
    if stopped is not None:
        stopped.outcomes = [outcomes[i] for i in range(len(runs))]
        raise stopped
    return [outcomes[i] for i in range(len(runs))]


def _mean_std(values: Sequence[float]) -> Tuple[float, Optional[float]]:
    return statistics.fmean(values), (statistics.stdev(values) if len(values) > 1 else None)


def _paper_data(args: Dict[str, Any], dataset: str) -> bool:
    """Whether a run's ``args.yaml`` trained the recipe's data as the paper did: its reader (``-- --dataset
    torch/cifar10`` with the svhn recipe is CIFAR-10; image folder names are one reader), its splits (as train.py
    reads them, :func:`_split_read`), every class (no ``--class-map``, which may leave classes out) and the recipe's
    ``num_classes`` (where each is recorded)."""
    try:
        recipe = read_recipe(recipe_path(dataset))
    except (OSError, ValueError):
        recipe = {}
    ours, theirs = (dataset_name(d) for d in (recipe.get('dataset'), args.get('dataset')))
    reader = 'dataset' not in args or ours == theirs or dataset_reader(ours) == dataset_reader(theirs) == TIMM_FOLDER
    splits = all(args.get(k) is None or _split_read(args[k], ours) == _split_read(recipe.get(k, ''), ours)
                 for k in ('train_split', 'val_split'))  # -- --train-split extra: SVHN's 531,131 other images
    return reader and splits and not args.get('class_map') and \
        args.get('num_classes') in (None, recipe.get('num_classes'))


def _split_read(split: Any, dataset: str) -> str:
    """What train.py reads for a split name: of torchvision's CIFAR the training set for a train synonym, else the
    test set; of an image folder the folder of that name or a synonym (named by its group's first name)."""
    split = str(split)
    if dataset in TORCH_FOLDERS:
        return 'train' if split in SPLIT_SYNONYMS[0] else 'test'
    name = split.split('[')[0]
    return next((group[0] for group in SPLIT_SYNONYMS if name in group), name) + split[len(name):]


def _paper(members: Sequence[Outcome], dataset: str) -> Optional[float]:
    """The paper's top-1 for a row, when each of its runs is that row as the paper trained it: not with ``--
    --model-kwargs depth=1``, ``-- --in-chans 1`` or ``-- --pretrained`` (:meth:`RunRecord.table2_row` of what the run
    recorded; a run that recorded nothing yet by its plan), nor of other data (:func:`_paper_data`)."""
    rows = {None if not _paper_data(o.args, dataset) else
            RunRecord(o.run.out_dir / 'last.pth.tar', args=o.args, model=o.run.model, model_kwargs=o.run.model_kwargs,
                      dataset=dataset).table2_row() if o.args else table2_row(o.run.model, o.run.model_kwargs, dataset)
            for o in members}
    row = rows.pop() if len(rows) == 1 else None
    return paper_top1(*row, dataset) if row else None


def aggregate(outcomes: Sequence[Outcome], dataset: str) -> List[Dict[str, Any]]:
    """One row per (family, Table 2 row): best top-1 mean / std over the finished seeds, SL - baseline delta, and
    the paper's top-1 and delta for the dataset. Rows without a finished run have ``mean=None``; ``diverged``
    counts the finished runs without a finite top-1 (NaN in every epoch), which the mean leaves out;
    ``diverged_partway`` those that diverged after a finite top-1 (``summary['diverged_epoch']``), whose best before
    it the mean counts (the paper reports the best top-1 over epochs), and the report names; ``skipped_runs`` the
    runs in the mean whose train.py skipped unreadable images (:attr:`Outcome.skipped`), named too. ``run_epochs``:
    the epochs each finished run trained (a run finished by an earlier call with a larger ``--epochs`` keeps its
    own); the delta of a row whose runs and its baseline's did not all train as many is left out (None, with
    ``delta_note``), as best-over-2-epochs against best-over-1 is no gain of SL."""
    groups: Dict[Tuple[str, str], List[Outcome]] = {}
    for outcome in outcomes:
        groups.setdefault((outcome.run.family, outcome.run.variant), []).append(outcome)
    rows = []
    for (family, variant), members in groups.items():
        finished = [o.summary['best_top1'] for o in members if o.status == 'done' and o.summary]
        values = [v for v in finished if v is not None]
        partway = sum(1 for o in members if o.status == 'done' and o.summary and o.summary.get('best_top1') is not None
                      and o.summary.get('diverged_epoch'))
        skipped = sum(1 for o in members if o.status == 'done' and o.summary and o.summary.get('best_top1') is not None
                      and o.skipped)
        mean, std = _mean_std(values) if values else (None, None)
        epochs = {o.run.name: o.summary['epochs'] for o in members
                  if o.status == 'done' and o.summary and o.summary.get('epochs') is not None}
        rows.append(dict(family=family, variant=variant, model=members[0].run.model,
                         model_kwargs=members[0].run.model_kwargs, seeds=len(values), runs=len(members),
                         diverged=len(finished) - len(values), diverged_partway=partway, skipped_runs=skipped,
                         mean=mean, std=std, paper=_paper(members, dataset), run_epochs=epochs))
    by_key = {(r['family'], r['variant']): r for r in rows}
    for row in rows:
        base = by_key.get((row['family'], 'base'))
        paper_base = paper_top1(row['family'], 'base', dataset) if row['paper'] is not None else None
        row['delta'] = None if row['variant'] == 'base' or row['mean'] is None or base is None or base['mean'] is None \
            else row['mean'] - base['mean']
        row['delta_note'] = ''
        if row['delta'] is not None and len({*row['run_epochs'].values(), *base['run_epochs'].values()}) > 1:
            row['delta'], row['delta_note'] = None, 'epochs differ'
        row['paper_delta'] = None if row['variant'] == 'base' or row['paper'] is None or paper_base is None \
            else row['paper'] - paper_base
    return rows


def _fmt(value: Optional[float], signed: bool = False) -> str:
    if value is None:
        return '-'
    return f'{value:+.2f}' if signed else f'{value:.2f}'


def report_table(rows: Sequence[Dict[str, Any]], dataset: str) -> str:
    """The Markdown table of :func:`aggregate` rows."""
    lines = [f'| family | row | model | seeds | best top-1 (%) | SL − baseline | paper ({dataset}) | paper Δ |',
             '|---|---|---|---|---|---|---|---|']
    for r in rows:
        model = ' '.join([f'`{r["model"]}`'] + [f'{k}={v}' for k, v in r['model_kwargs'].items()])
        top1 = _fmt(r['mean']) + (f' ± {r["std"]:.2f}' if r['std'] is not None else '') + _diverged_note(r) \
            if r['mean'] is not None else DIVERGED if r['diverged'] else '-'
        lines.append(f'| {r["family"]} | {switches_label(r["model_kwargs"])} | {model} | '
                     f'{r["seeds"]}/{r["runs"]} | {top1} | {_fmt(r["delta"], True)} | {_fmt(r["paper"])} | '
                     f'{_fmt(r["paper_delta"], True)} |')
    note = _epochs_note(rows)
    return '\n'.join(lines + ([f'\n{note}'] if note else []))


def _epochs_note(rows: Sequence[Dict[str, Any]]) -> str:
    """A line naming the runs of each family that trained different numbers of epochs (each row's best top-1 is over
    its own epochs); '' when every family's runs trained as many."""
    families: Dict[str, Dict[str, int]] = {}
    for r in rows:
        families.setdefault(r['family'], {}).update(r.get('run_epochs') or {})
    mixed = {f: runs for f, runs in families.items() if len(set(runs.values())) > 1}
    if not mixed:
        return ''
    return ('Runs of a family trained different numbers of epochs (a finished run keeps its own: a smaller --epochs '
            'does not shorten it), so their best top-1 are over different epochs and SL − baseline is left out ("-") '
            'where they differ: ' + '; '.join(
                f'{family}: ' + ', '.join(f'{name} {n} epoch{"s" if n != 1 else ""}' for name, n in runs.items())
                for family, runs in mixed.items()) + '.')


def _no_value(row: Dict[str, Any], none: str) -> str:
    """What a chart shows for a row without a measured value: :data:`DIVERGED` when its finished runs diverged."""
    return DIVERGED if row.get('diverged') else none


def _wrap(text: str, width: int) -> str:
    """Lines of at most ``width`` characters, paths kept whole where they fit in one (a longer one is broken: whole,
    it ran off both edges of the chart)."""
    import textwrap
    return textwrap.fill(text, width, break_on_hyphens=False)


def _extra_kwargs(row: Dict[str, Any]) -> str:
    """The model kwargs of a row that are not its Table 2 row's own (``-- --model-kwargs depth=1``), as k=v words."""
    own = VARIANTS[row['family']][row['variant']]
    return ' '.join(f'{k}={v}' for k, v in row['model_kwargs'].items() if k not in own)


def _common_extra(rows: Sequence[Dict[str, Any]]) -> str:
    """:func:`_extra_kwargs` when every row has the same ones, else ''."""
    extras = {_extra_kwargs(r) for r in rows}
    return extras.pop() if len(extras) == 1 else ''


def _diverged_notes(row: Dict[str, Any]) -> List[str]:
    """What a measured row says of its diverged runs: 'n more diverged' (NaN in every epoch: left out of its value)
    and 'n diverged partway: best before' (counted by their best top-1 before it); and of its runs that skipped
    unreadable images (counted: 'n skipped unreadable images'); [] for a row not measured."""
    if row.get('mean') is None:
        return []
    partway, skipped = row.get('diverged_partway') or 0, row.get('skipped_runs') or 0
    return ([f'{row["diverged"]} more diverged'] if row.get('diverged') else []) + \
        ([f'{partway} diverged partway: best before'] if partway else []) + \
        ([f'{skipped} skipped unreadable images'] if skipped else [])


def _diverged_note(row: Dict[str, Any]) -> str:
    """' (n more diverged; m diverged partway: best before; k skipped unreadable images)' of
    :func:`_diverged_notes`, '' without any."""
    notes = _diverged_notes(row)
    return f' ({"; ".join(notes)})' if notes else ''


def _bar_label(row: Dict[str, Any], seeds: bool = False, extra: bool = False) -> str:
    """A bar's tick label: family, row, and (``extra``) the kwargs not the row's own, (``seeds``) its seed count, the
    least and most epochs of its runs when they differ, and the seeds that diverged, left out of its value."""
    label = f'{row["family"]}\n' + switches_label(row['model_kwargs']).replace(' w/o ', ' w/o\n')
    label += f'\n{_extra_kwargs(row)}' if extra and _extra_kwargs(row) else ''
    label += f'\n({row["seeds"]} seed{"s" * (row["seeds"] != 1)})' if seeds and row['mean'] is not None else ''
    epochs = sorted(set((row.get('run_epochs') or {}).values()))
    label += f'\n({epochs[0]}-{epochs[-1]} epochs)' if len(epochs) > 1 else ''  # its mean mixes runs of each
    return label + ''.join(f'\n({note})' for note in _diverged_notes(row))


def _spread_title(rows: Sequence[Dict[str, Any]]) -> Tuple[str, bool]:
    """What the measured bars are (one seed: no ± claim; n seeds: n), and whether tick labels must carry the count
    (rows measured over different numbers of seeds)."""
    counts = sorted({r['seeds'] for r in rows if r['mean'] is not None})
    if not counts:
        return 'measured best top-1: ' + ('every finished run diverged (NaN)' if any(r.get('diverged') for r in rows)
                                          else 'no finished run'), False
    if counts == [1]:
        return 'measured best top-1, one seed per row (no spread)', False
    if len(counts) == 1:
        return f'measured best top-1, mean ± std over {counts[0]} seeds', False
    return 'measured best top-1, mean ± std over each row\'s seeds (one seed: no spread)', True


def _paired_bars(ax, xs: Sequence[int], measured: Sequence[Optional[float]], paper: Sequence[Optional[float]],
                 dataset: str, fmt: str, spread: Sequence[Optional[float]] = ()) -> float:
    """Measured (left) and paper (right) bars side by side at ``xs``, every bar with its value; a ``spread`` (std)
    draws a whisker, and the value sits above it. ``None``: no bar. Every label's slot is shown (x from -0.5 to
    ``len(xs) - 0.5``, also without bars). Returns the measured bars' offset from their labels."""
    spread = list(spread) or [None] * len(xs)
    pairs = any(v is not None for v in paper)  # no paper number at all: the measured bars sit on their labels
    ax.set_xlim(-0.5, max(len(xs), 1) - 0.5)
    for offset, values, color, label in ((-0.2 * pairs, measured, 'tab:blue', 'measured'),
                                         (0.2, paper, 'tab:orange', f'paper ({dataset})')):
        have = [(x + offset, v, e) for x, v, e in zip(xs, values, spread if values is measured else [None] * len(xs))
                if v is not None]
        if not have:  # e.g. no paper number for this dataset: no bars and no legend entry for them
            continue
        ax.bar([x for x, _, _ in have], [v for _, v, _ in have], width=0.4, color=color, label=label)
        for x, v, e in have:
            if e is not None:
                ax.errorbar(x, v, yerr=e, color='black', capsize=3, linewidth=1)
            top = v + (e or 0) if v >= 0 else v - (e or 0)
            text = fmt.format(v) + (f'\n±{e:.2f}' if e is not None else '')
            ax.annotate(text, (x, top), xytext=(0, 2 if v >= 0 else -2), textcoords='offset points', ha='center',
                        va='bottom' if v >= 0 else 'top', fontsize=8)
    return -0.2 * pairs


def _chart_title(dataset: str, common: str, data: str) -> str:
    """The title both charts carry: the recipe, the kwargs every row trained with besides its own, the data."""
    return f'{dataset} recipe' + (f', every row with {common}' if common else '') + f'; data: {data}'


def _plot_top1(rows: Sequence[Dict[str, Any]], path: Path, dataset: str, data: str,
               record: Optional[Callable[[Path], None]] = None):
    """Best top-1 per Table 2 row and SL − baseline gains, measured and the paper's as bars side by side from 0, each
    with its value; returns the figure. The title says what the measured bars are (one seed, or mean ± std over n
    seeds). A row without a finished run has no measured bar, and says so."""
    from .plot import figure, save
    deltas = [r for r in rows if r['variant'] != 'base']
    width = max(len(rows), 1), max(len(deltas), 1)  # panels as wide as their bars: ~0.9 in per row
    fig = figure(max(12., 0.9 * sum(width) + 2.5), 5.5)
    left, right = fig.subplots(1, 2, width_ratios=width)
    title, per_row = _spread_title(rows)
    x = list(range(len(rows)))
    offset = _paired_bars(left, x, [r['mean'] for r in rows], [r['paper'] for r in rows], dataset, '{:.2f}',
                          spread=[r['std'] if r['seeds'] > 1 else None for r in rows])
    for i in x:  # in the measured bar's slot
        if rows[i]['mean'] is None:
            left.text(i + offset, 1, _no_value(rows[i], 'no finished run'), rotation=90, ha='center', va='bottom',
                      fontsize=8)
    common = _common_extra(rows)  # kwargs every row has besides its own: in the title, else in each label
    left.set_xticks(x, [_bar_label(r, per_row, not common) for r in rows], fontsize=8)
    reach = max((r['mean'] + (r['std'] if r['seeds'] > 1 else 0) for r in rows if r['mean'] is not None), default=0)
    # bars start at 0: the gains are read on the right; room for the values of bars near 100, and of a whisker above
    # 100 (seeds of 95, 95 and 10: 66.67 ± 49.07), whose value was left undrawn above the axes
    left.set_ylim(0, max(108, 1.12 * reach))
    left.set_yticks(range(0, 101, 20))
    left.set_ylabel('best top-1 (%)')
    inches = [fig.get_figwidth() * w / sum(width) - 0.8 for w in width]  # each panel's width, less its y labels
    left.set_title(_wrap(title, max(int(inches[0] * 9), 12)))  # 12 pt: ~9 chars/in
    x = list(range(len(deltas)))
    offset = _paired_bars(right, x, [r['delta'] for r in deltas], [r['paper_delta'] for r in deltas], dataset,
                          '{:+.2f}')
    right.axhline(0, color='black', linewidth=0.8)
    right.margins(y=0.15)  # room for the values above (below) the tallest bars
    low, high = right.get_ylim()  # at least 1 point either side: a paper gain of -0.03 alone does not fill the panel
    low, high = min(low, -1.), max(high, 1.)
    right.set_ylim(low, high)
    up = high >= -low  # a row's note from the 0 line into the larger half, inside the panel
    for i in x:  # a gain of 0 has no visible bar: its value says so
        if deltas[i]['delta'] is None:
            base = next((r for r in rows if (r['family'], r['variant']) == (deltas[i]['family'], 'base')), {})
            diverged = deltas[i] if deltas[i]['mean'] is None else base
            right.annotate(_no_value(diverged, deltas[i].get('delta_note') or 'not measured'), (i + offset, 0),
                           xytext=(0, 3 if up else -3), textcoords='offset points', rotation=90, ha='center',
                           va='bottom' if up else 'top', fontsize=8)  # clear of the 0 line
    bases = {r['family']: r for r in rows if r['variant'] == 'base'}
    right.set_xticks(x, [_bar_label(r, extra=not common) + (f'\n(baseline: {_diverged_note(bases[r["family"]])[2:-1]})'
                                                             if _diverged_note(bases.get(r['family'], {})) else '')
                         for r in deltas], fontsize=8)
    right.set_ylabel('top-1 gain over baseline (points)')
    gained = sorted({switches_label(r['model_kwargs']) for r in deltas} - {'SL', 'SL w/o Spool'})  # ST, S, ... rows
    gains = [r for r in deltas if r['delta'] is not None]  # '(of the means)' only where a gain drawn is of one: a
    means = any(r['seeds'] > 1 for r in gains + [bases[r['family']] for r in gains])  # family of 2 seeds gave it to
    right.set_title(_wrap(f'{" / ".join(["SL"] * (not gained) + gained)} − baseline' +  # single-seed gains
                          (' (of the means)' if means else ''), max(int(inches[1] * 9), 12)))
    # wrapped to its panel: one gain beside four rows ran its title off the figure ('SL − baseline (of the mea')
    handles, labels = left.get_legend_handles_labels()
    fig.legend(handles, labels, loc='outside lower center', ncols=2, frameon=False)
    fig.suptitle(_wrap(_chart_title(dataset, common, data), int(fig.get_figwidth() * 9)))
    fig.set_dpi(110)
    save(fig, path, record)
    return fig


def _plot_curves(outcomes: Sequence[Outcome], path: Path, data: str, title: str = '',
                 record: Optional[Callable[[Path], None]] = None):
    """Validation top-1 per epoch (from 1), one panel per family on one shared y (and x)
    scale (dashed: a failed run; dotted: one interrupted, or stopped before it finished; dash-dotted: a finished run
    that diverged, labelled so, its NaN epochs not drawn); returns the figure. Markers are open rings, each row's
    smaller than the row's before it, so that rows of equal values (all at chance) stay visible, nested; every line
    is drawn at one width, none made to look more than another."""
    from matplotlib.ticker import MaxNLocator
    from .plot import EPOCH_AXIS, figure, save, y_limits
    families = list(dict.fromkeys(o.run.family for o in outcomes))
    fig = figure(5 * max(1, len(families)), 4.5)
    axes = fig.subplots(1, max(1, len(families)), squeeze=False, sharex=True, sharey=True)
    colors = {'base': 'tab:gray', 'sl_no_spool': 'tab:orange', 'sl': 'tab:blue'}
    for ax, family in zip(axes[0], families):
        labelled, seeds = set(), False
        for o in outcomes:
            if o.run.family != family or not o.curve:
                continue
            unfinished = 'failed run' if o.status == 'failed' else 'interrupted run' if o.status != 'done' else ''
            line = {'': '-', 'failed run': '--'}.get(unfinished, ':')
            line = '-.' if diverged_text(o.summary) and not unfinished else line  # NaN from its diverged epoch on
            unfinished = ', '.join(filter(None, [unfinished, 'diverged' if diverged_text(o.summary) else '']))
            key = o.run.variant, unfinished
            label = None if key in labelled else switches_label(o.run.model_kwargs) + (
                f' ({unfinished})' if unfinished else '')
            seeds |= key in labelled
            labelled.add(key)
            order = list(colors).index(o.run.variant)  # rings nested, SL's innermost: equal curves all show
            ax.plot([e for e, _ in o.curve], [t for _, t in o.curve], marker='o', markersize=9 - 2.5 * order,
                    markerfacecolor='none', markeredgewidth=1.5, linewidth=1.5, color=colors[o.run.variant],
                    label=label, linestyle=line, clip_on=False)  # the first and last epochs' rings drawn whole
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # whole epochs only
        ax.set_title(f'{family}: validation top-1 per epoch' + (', a line per seed' if seeds else ''))
        ax.set_xlabel(EPOCH_AXIS)
        ax.grid(alpha=0.3)
        if labelled:
            ax.legend()
    values, epochs = [t for o in outcomes for _, t in o.curve], [e for o in outcomes for e, _ in o.curve]
    if epochs:  # shared: no tick where no run has an epoch (0, or the last + 1 of 26 epochs)
        axes[0, 0].set_xlim(min(epochs) - 0.5, max(epochs) + 0.5)
    if len(set(epochs)) == 1:  # the locator's integers need a span: one epoch got ticks at 0.945, 0.960, ...
        axes[0, 0].set_xticks(sorted(set(epochs)))  # shared by the panels: only where every run has that one epoch
    axes[0, 0].set_ylim(*y_limits(values, 0., 100.))  # a percentage: never below 0, a run near 0 % not stretched
    axes[0, 0].set_ylabel('top-1 (%), same scale in every panel' if len(families) > 1 else 'top-1 (%)')
    fig.suptitle(_wrap(title or f'data: {data}', 50 * max(1, len(families))))
    fig.set_dpi(110)
    save(fig, path, record)
    return fig


def _data_of(outcomes: Sequence[Outcome], planned: str = '') -> str:
    """The data the runs recorded (each different one once); ``planned`` (what train.py was given) when none did."""
    recorded = list(dict.fromkeys(o.data for o in outcomes if o.data))
    return '; '.join(recorded) if recorded else (f'{planned} (as given to train.py)' if planned else 'not recorded')


def _sweep_line(sweep: Dict[str, Any]) -> str:
    rate = sweep['images'] / sweep['seconds'] if sweep.get('seconds') else 0.
    where = f'on GPU {" / ".join(sweep["devices"])}' if any(sweep.get('devices') or ()) else 'unpinned'
    return (f'This call: {sweep["runs"]} run(s) started, up to {sweep["jobs"]} at once {where}; wall time '
            f'{format_seconds(sweep["seconds"])}, {sweep["epochs"]} epochs trained, aggregate {rate:,.0f} train img/s '
            f'(images the runs trained in this call, from their logs, / its wall time).')


def write_report(outcomes: Sequence[Outcome], dataset: str, output: Path, command: str = '', data: str = '',
                 sweep: Optional[Dict[str, Any]] = None) -> Path:
    """``report.md`` (table, failed runs, per-run results), ``top1.png``, ``curves.png`` and ``results.json``.

    ``sweep``: what :func:`reproduce` measured of this call (its ``stats``), for the report's sweep line.

    ``dataset`` names the recipe (and the paper's column); the data named in the report and charts is what the runs
    recorded in their args.yaml, else ``data`` (what train.py was given, :func:`describe_data`).
    """
    from .plot import require_matplotlib
    try:
        require_matplotlib()
        charts = ''
    except ImportError as e:  # a GPU machine without it: the tables and results.json still
        charts = str(e)
    output = Path(output)
    output.mkdir(parents=True, exist_ok=True)
    rows = aggregate(outcomes, dataset)
    data, command = name_text(_data_of(outcomes, data)), name_text(command)  # 'fé', not 'fÃ©' under Latin-1
    # what it wrote before; without matplotlib now, its charts of an earlier call would show that call's results
    manifest = read_manifest(output, True, REPORT_MANIFEST, 'timm-sl reproduce')
    stale = [n for n in ('top1.png', 'curves.png') if charts and (output / n).is_file()
             and not (output / n).is_symlink() and manifest.get(n) == sha256(output / n)]
    lines = [f'# Table 2 reproduction: {dataset} recipe', '', f'data: {data}', '']
    extra = _common_extra(rows)
    if extra:
        lines += [f'Every row trained with the model kwargs {extra} besides its own (-- --model-kwargs).', '']
    if command:
        lines += ['```bash', command, '```', '']
    lines += [report_table(rows, dataset), '',
              'Best top-1 over epochs (as the paper reports), mean ± sample std over the finished seeds; '
              'SL − baseline: difference of the means. Paper: Table 2. Epochs are counted from 1 (the first epoch '
              "is epoch 1; train.py's summary.csv counts from 0).", '',
              *([f'No charts: {charts}.' + (f' ({" and ".join(stale)} of an earlier call, which showed its results, '
                                            f'removed.)' if stale else '')]
                if charts else ['![top-1](top1.png)', '', '![learning curves](curves.png)']),
              '']
    failed = [o for o in outcomes if o.status == 'failed']
    if failed:
        lines += ['## Failed runs', ''] + [f'- {o.run.name}: {o.message}' for o in failed] + ['']
    skipped = [o for o in outcomes if o.skipped]
    if skipped:
        lines += ['## Unreadable images', ''] + [f'- {o.run.name}: {skipped_text(o)}' for o in skipped] + ['']
    if sweep:
        lines += ['## Sweep', '', _sweep_line(sweep), '']
    lines += ['## Runs', '', '| run | status | best top-1 (%) | best epoch | epochs | wall | train img/s | GPU |',
              '|---|---|---|---|---|---|---|---|']
    for o in outcomes:
        s = o.summary or {}
        top1 = DIVERGED if s and s.get('best_top1') is None else _fmt(s.get('best_top1'))
        diverged = diverged_text(s)  # partway: its best top-1 is of an epoch before
        top1 += ' (before it diverged)' if diverged and s.get('best_top1') is not None else ''
        status = (diverged if o.status == 'done' else f'{o.status}, {diverged}') if diverged else o.status
        status += ', unreadable images skipped' if o.skipped else ''
        lines.append(f'| {o.run.name} | {status} | {top1} | {s.get("best_epoch") or "-"} | '
                     f'{s.get("epochs") or "-"} | {format_seconds(o.wall) if o.wall else "-"} | '
                     f'{"-" if o.img_s is None else f"{o.img_s:,.0f}"} | {o.devices or "-"} |')
    lines += ['', "wall: seconds the run's train.py processes ran, every session of a resumed run summed (start-up, "
              'compilation and evaluation included); train img/s: images per second in its training steps but the '
              "first of each epoch (which holds torch.compile's compilation and the data loader's start), from "
              "train.py's own progress lines, so beside whatever ran at the time (runs at once share a GPU, or the "
              "CPU). Epochs counted from 1 (train.py's summary.csv counts from 0)."]
    extended = [o for o in outcomes if o.schedules]
    if extended:
        lines += ['', 'Extended runs (their sessions.json): each was resumed with a larger `--epochs`, so its first '
                  'epochs trained under a shorter learning-rate schedule than the command above gives, which from '
                  'scratch does not reproduce it exactly:', '']
        lines += [f'- {o.run.name}: ' + ', then '.join(
            f'epochs {start + 1}-{end} under `--epochs {given}`' if end > start + 1 else
            f'epoch {end} under `--epochs {given}`'
            for start, (end, given) in zip([0] + [e for e, _ in o.schedules], o.schedules)) for o in extended]
    report = output / 'report.md'
    # each file's sha256 recorded before it is moved into place: a full disk or a kill in between leaves no file of
    # reproduce's that a later call refuses as not its own
    write_atomically(report, lambda file: file.write_text('\n'.join(lines) + '\n', encoding='utf-8'),
                     recorder(output, manifest, 'report.md', REPORT_MANIFEST))
    for name in stale:
        (output / name).unlink()
        manifest.pop(name)
    if stale:
        record_written(output, manifest, [], REPORT_MANIFEST)
    if not charts:
        _plot_top1(rows, output / 'top1.png', dataset, data, recorder(output, manifest, 'top1.png', REPORT_MANIFEST))
        _plot_curves(outcomes, output / 'curves.png', data, _chart_title(dataset, _common_extra(rows), data),
                     recorder(output, manifest, 'curves.png', REPORT_MANIFEST))
    results = json.dumps(dict(dataset=dataset, data=data, rows=rows, runs=[
        dict(name=o.run.name, family=o.run.family, variant=o.run.variant, seed=o.run.seed, model=o.run.model,
             model_kwargs=o.run.model_kwargs, status=o.status, message=o.message, dir=str(o.run.out_dir),
             summary=o.summary, data=o.data, wall_seconds=round(o.wall, 1) if o.wall else None, train_img_s=o.img_s,
             devices=o.devices,
             skipped_samples=len(o.skipped), skipped=skipped_text(o),
             schedules=[dict(last_epoch=end, epochs=given) for end, given in o.schedules])
        for o in outcomes], sweep=sweep), indent=1)
    write_atomically(output / 'results.json', lambda file: file.write_text(results, encoding='utf-8'),
                     recorder(output, manifest, 'results.json', REPORT_MANIFEST))
    return report


def add_reproduce_args(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``timm-sl reproduce`` (no torch import)."""
    parser.add_argument('--data-dir', required=True, help="dataset root as train.py's --data-dir takes it")
    parser.add_argument('--dataset', required=True, help=f'recipe to use: {", ".join(DATASETS)}')
    parser.add_argument('--families', nargs='+', default=list(FAMILIES), help=f'default: {" ".join(FAMILIES)}')
    parser.add_argument('--seeds', nargs='+', type=int, default=[0], help='seeds per row (default: 0)')
    parser.add_argument('--out', default='reproduce',
                        help='output folder: runs/, report.md, PNGs (default: %(default)s)')
    parser.add_argument('--train-script', default=None, help="timm's train.py (default: $TIMM_REPO/train.py)")
    parser.add_argument('--nproc', type=int, default=1, help='processes per run; > 1 launches torchrun (default: 1)')
    parser.add_argument('--jobs', type=int, default=None,
                        help='runs at once (default: a rule from GPU memory and CPU cores, see docs/reproduce.md; '
                             '1 without a GPU)')
    parser.add_argument('--gpus', default='auto',
                        help='GPU indices to spread the runs over, e.g. 0,1; each run sees its own as '
                             'CUDA_VISIBLE_DEVICES (default: auto, every GPU torch sees)')
    parser.add_argument('--overwrite', action='store_true',
                        help='replace report files in --out (report.md, results.json, top1.png, curves.png) that '
                             'reproduce did not write, or that changed since (default: refuse)')
    parser.add_argument('train_args', nargs=argparse.REMAINDER,
                        help='after --: extra train.py arguments for every run, e.g. -- --epochs 1 --device cpu')


# train.py arguments reproduce sets per run: one among the extra arguments would make every run the same
_PER_RUN_FLAGS = ('--model', '--output', '--experiment', '--resume', '--seed')
_LR_BASE_FLAGS = ('--lr-base', '--lr-base-size', '--lr-base-scale')  # train.py's, read only without --lr
_SAMPLING_READERS = ('hfids/', 'tfds/', 'wds/')  # the readers timm's create_dataset gives a number of samples


def check_ignored_data_args(extra_args: Sequence[str], recipe: Path, data: Dict[str, Any]) -> None:
    """Refuse train.py data arguments after ``--`` that train.py takes and ignores with this recipe and reader
    (``data``: :func:`train_data`): ``--img-size`` beside an ``--input-size`` (every recipe sets one), and
    ``--train-num-samples`` / ``--val-num-samples`` / ``--epoch-repeats`` for a reader that reads every image of a split
    once an epoch (an image folder, torchvision's). Each run would train otherwise than the command says, and the
    report would not say so.

    Raises:
        ValueError: the first such argument, one line.
    """
    words = _flag_words(extra_args)
    size = words.get('--img-size')
    given = words.get('--input-size')
    fixed = given or read_recipe(recipe).get('input_size')
    if size is not None and fixed:
        n = size[0] if size else 'N'
        raise ValueError(f'--img-size {" ".join(size)} after -- would be ignored: train.py reads it only without '
                         f'--input-size, which ' + ('is given after --' if given else f'the {recipe.name} recipe sets')
                         + f' ({" ".join(map(str, fixed))}), so every run would train at that size; allowed: -- '
                         f'--input-size 3 {n} {n} --model-kwargs img_size={n} (the model is built for its input '
                         f'size)')
    reader = str(data.get('dataset') or '').lower()
    for flag in ('--train-num-samples', '--val-num-samples', '--epoch-repeats'):
        if flag in words and not reader.startswith(_SAMPLING_READERS):
            raise ValueError(f'{flag} {" ".join(words[flag])} after -- would be ignored: train.py reads every image '
                             f'of the split once an epoch from ' + (f'{reader}' if reader else 'an image folder') +
                             f' (it gives {flag} only to its {", ".join(_SAMPLING_READERS)} readers); allowed: ' +
                             ('more --epochs' if flag == '--epoch-repeats' else fewer_images(data, recipe.stem)))
    if data.get('input_key') and dataset_reader(dataset_name(data.get('dataset'))) in (TORCHVISION_FOLDER, 'torch'):
        raise ValueError(f"--input-key {data['input_key']} would be ignored: --dataset {data['dataset']} reads the "
                         f"images with torchvision, which timm gives no input key (its ImageFolder takes every image "
                         f"of its own suffixes); allowed: leave it out")


# torchvision's datasets of single-channel images, as timm's torch/ names them: timm passes their images on unconverted
_TORCH_GREY = {'torch/mnist': 'MNIST', 'torch/kmnist': 'KMNIST', 'torch/qmnist': 'QMNIST',
               'torch/fashion_mnist': 'FashionMNIST'}


def _given_or_recipes(key: str, extra_args: Sequence[str], recipe: Path) -> Tuple[Optional[List[Any]], str]:
    """The values of train.py's ``--KEY`` (``key`` by train.py's name) after ``--``, else the recipe's, as a list, and
    where they are set ('after --', 'of the R recipe'); ``(None, '')`` where neither sets it."""
    words = _flag_words(extra_args).get('--' + key.replace('_', '-'))
    if words is not None:
        return words, 'after --'
    value = read_recipe(recipe).get(key)
    if value is None:
        return None, ''
    return (list(value) if isinstance(value, (list, tuple)) else [value]), f'of the {recipe.name} recipe'


def _input_channels(extra_args: Sequence[str], recipe: Path) -> Tuple[int, str]:
    """The channels train.py normalises each image for (0: not a number), and where they are set: ``--input-size``
    after ``--``, else the recipe's, else ``--in-chans`` (timm's ``resolve_data_config``: the input size wins), else
    train.py's 3."""
    for key in ('input_size', 'in_chans'):
        values, where = _given_or_recipes(key, extra_args, recipe)
        if values:
            first = str(values[0])
            return (int(first) if first.isdigit() else 0,
                    f'--{key.replace("_", "-")} {" ".join(map(str, values))} {where}')
    return 3, "train.py's default"


def check_grey_torch_dataset(extra_args: Sequence[str], recipe: Path, data: Dict[str, Any]) -> None:
    """Refuse a torchvision dataset of single-channel images (``-- --dataset torch/fashion_mnist``) for input of other
    than 1 channel (every recipe's is 3): timm's torch/ reader yields its 28 px grey images unconverted
    (``input_img_mode`` applies to the other readers only), so every run fails on them, whose log then says only
    'TypeError: color must be int or single-element tuple' (AutoAugment's 3-channel fill) or, without AutoAugment,
    that a 1-channel image does not take the 3-channel mean. With ``--input-size 1 H W`` and a one-value
    ``--mean`` / ``--std`` (:func:`check_mean_std`) train.py runs on them with 1-channel models. The converse for
    ``torch/folder``: torchvision's ImageFolder reads every image as RGB, so input of other than 3 channels fails.

    Raises:
        ValueError: naming the dataset, why and what to use instead, one line.
    """
    name = dataset_name(data.get('dataset'))
    if dataset_reader(name) == TORCHVISION_FOLDER:  # torchvision's loader converts every image to RGB
        channels, where = _input_channels(extra_args, recipe)
        if channels in (0, 3):
            return
        raise ValueError(f"--dataset {data['dataset']} after -- reads the images with torchvision's ImageFolder, "
                         f"which converts every one to RGB: for {channels}-channel input ({where}) every run would "
                         f"fail on its first batch (3-channel images into a {channels}-channel model); allowed: "
                         f"3-channel input" + (", or timm's folder reader, which reads them as 1-channel (no "
                                               "--dataset)" if channels == 1 else ''))
    if name not in _TORCH_GREY:
        return
    channels, where = _input_channels(extra_args, recipe)
    if channels in (0, 1):  # 0: no number, which train.py's own parser refuses
        return
    size = _flag_words(extra_args).get('--input-size') or read_recipe(recipe).get('input_size') or [3, 32, 32]
    instead = ('timm-sl prepare-fashion-mnist DATA (class folders of 32 px RGB PNGs), read as an image folder (no '
               '--dataset)' if name == 'torch/fashion_mnist' else 'an image folder of its images as RGB (no --dataset)')
    raise ValueError(f"--dataset {data['dataset']} after -- reads torchvision's {_TORCH_GREY[name]}, whose 28 px "
                     f"single-channel images timm passes on unconverted: for {channels}-channel input ({where}) every "
                     f"run would fail on them (a 3-channel mean / std or AutoAugment fill on a 1-channel image); "
                     f"allowed: {instead}, or 1-channel input with one value each for the mean and std (-- "
                     f"--input-size 1 {' '.join(map(str, list(size)[1:]))} --mean M --std S)")


def check_mean_std(extra_args: Sequence[str], recipe: Path) -> None:
    """Refuse a ``--mean`` / ``--std`` (after ``--``, else the recipe's) whose number of values is neither 1 (timm
    repeats it for each channel) nor the input's channels (:func:`_input_channels`): timm's ``resolve_data_config``
    stops every run at its start on an assertion that says nothing (each run's reason: ``AssertionError``).

    Raises:
        ValueError: the first such setting, naming it, the channels and where they are set, one line.
    """
    channels, where = _input_channels(extra_args, recipe)
    for key in ('mean', 'std'):
        values, given = _given_or_recipes(key, extra_args, recipe)
        if not channels or not values or len(values) in (1, channels):
            continue
        allowed = 'one value' if channels == 1 else f'{channels} values, or one for every channel'
        raise ValueError(f'--{key} {" ".join(map(str, values))} {given} has {len(values)} values for {channels}-'
                         f'channel input ({where}): train.py would stop every run at its start (timm asserts one '
                         f'value per channel); allowed: -- --{key} with {allowed}')


def check_in_chans(extra_args: Sequence[str], recipe: Path) -> None:
    """Refuse an ``--in-chans`` (after ``--``, else the recipe's) other than the channels train.py reads each image
    with (:func:`_input_channels`: an ``--input-size`` wins there): train.py builds the model from ``--in-chans``, so
    every run would fail on its first batch (a channel mismatch in the patch embedding).

    Raises:
        ValueError: naming both settings, one line.
    """
    given, where = _given_or_recipes('in_chans', extra_args, recipe)
    chans = given[0] if given else None
    channels, read_as = _input_channels(extra_args, recipe)
    if chans is None or not str(chans).isdigit() or not channels or int(chans) == channels:
        return
    raise ValueError(f'--in-chans {chans} {where} builds every model for {chans}-channel input, but train.py reads the '
                     f'images as {channels}-channel ({read_as}): every run would fail on its first batch; allowed: '
                     f'-- --in-chans {channels}, or -- --input-size {chans} H W')


def check_input_img_mode(extra_args: Sequence[str], recipe: Path, data: Dict[str, Any]) -> None:
    """Refuse an ``--input-img-mode`` (after ``--``, else the recipe's) that train.py would not read the images in as
    the input's channels (:func:`_input_channels`) of 8-bit values: timm's readers convert every image to that PIL
    mode, so 'L' for 3-channel input fails every run on its first batch (AutoAugment's 3-channel fill, or the 3-channel
    mean), 'F' gives values of 0-255 where 0-1 are meant, 'I' / 'I;16' integers the normalisation refuses, and 'P'
    palette indices read as grey. torchvision's readers (``torch/...``) never read it: a mode other than theirs would
    be ignored.

    Raises:
        ValueError: naming the mode, the channels and where each is set, one line.
    """
    given, where = _given_or_recipes('input_img_mode', extra_args, recipe)
    if not given:
        return
    mode = str(given[0])
    name = dataset_name(data.get('dataset'))
    if dataset_reader(name) in (TORCHVISION_FOLDER, 'torch'):
        own = 'L' if name in _TORCH_GREY else 'RGB'
        if mode != own:
            raise ValueError(f"--input-img-mode {mode} {where} would be ignored: --dataset {data['dataset']} reads the "
                             f"images with torchvision, which timm gives no image mode (they are read as {own}); "
                             f"allowed: leave it out")
        return
    from PIL import Image
    channels, read_as = _input_channels(extra_args, recipe)
    wanted = {1: 'L', 3: 'RGB'}.get(channels)
    try:
        bands = Image.getmodebands(mode)
    except (KeyError, ValueError):
        bands = 0
    if not channels:
        return
    if bands and bands == channels and mode not in _8_BIT_MODES:
        raise ValueError(f'--input-img-mode {mode} {where} reads every image in a PIL mode of other than 8-bit values '
                         f'(F: 0-255 as floats, I / I;16: integers the normalisation refuses, P: palette indices): '
                         f'every run would train on other values than the images hold, or fail; allowed: '
                         + (f'-- --input-img-mode {wanted}, or ' if wanted else '') + 'leave it out')
    if bands == channels:
        return
    raise ValueError(f'--input-img-mode {mode} {where} reads every image with '
                     + (f'{bands} channel{"s" if bands > 1 else ""}' if bands else 'no PIL image mode')
                     + f', but the models take {channels}-channel input ({read_as}): every run would fail on its '
                     f'first batch; allowed: ' + (f'-- --input-img-mode {wanted}, or ' if wanted else '')
                     + 'leave it out (train.py then reads the images with the input\'s channels)')


# the PIL modes of 8-bit values per channel, which torchvision's to_tensor scales to 0-1 as train.py's own L and RGB
_8_BIT_MODES = frozenset({'1', 'L', 'LA', 'La', 'RGB', 'RGBA', 'RGBa', 'RGBX', 'CMYK', 'YCbCr', 'LAB', 'HSV'})


def check_unread_args(extra_args: Sequence[str], recipe: Path) -> None:
    """Refuse train.py arguments after ``--`` that train.py takes and does not act on as the command says: one it never
    reads (:data:`~timm_sl.tools.train_args.UNREAD_KEYS`: ``--drop-connect``), a setting of a switch neither the
    recipe nor the arguments turn on (:data:`~timm_sl.tools.train_args.SWITCHED_GROUPS`: ``--model-ema-decay``
    without ``--model-ema``, ``--train-batches-per-epoch`` without ``--train-img-sizes``), one train.py does not read
    beside the others (:func:`~timm_sl.tools.train_args.unread_reason`: ``--decay-epochs`` under the recipe's
    ``--sched cosine``), and ``--tta N`` above 1,
    which train.py's validation (no augmented copies) turns into averaging N different images scored by the first's
    label: a top-1 that is not the model's.

    Raises:
        ValueError: the first such argument, one line.
    """
    settings = _given_settings(recipe, extra_args)
    for flag, words in _flag_words(extra_args).items():
        key = flag[2:].replace('-', '_') if flag.startswith('--') else ''
        given = f'{flag} {" ".join(words)}'.rstrip() + ' after --'
        if key in UNREAD_KEYS:
            raise ValueError(f'{given} would be ignored: train.py takes it and never reads it (deprecated), so every '
                             f'run would train without it; allowed: {UNREAD_KEYS[key]}')
        switch = next((s for s, prefixes in SWITCHED_GROUPS.items() if key != s and key.startswith(prefixes)), None)
        if switch is not None and not settings.get(switch):
            raise ValueError(f'{given} would be ignored: train.py reads it only with --{switch.replace("_", "-")}, '
                             f'which neither the {recipe.name} recipe nor the arguments after -- give, so every run '
                             f'would train without it; allowed: -- --{switch.replace("_", "-")} ... with it, or leave '
                             f'it out')
        unread = unread_reason(key, settings) if key else None  # --decay-epochs under the recipe's --sched cosine
        if unread is not None:
            raise ValueError(f'{given} would be ignored: with the {recipe.name} recipe and the arguments after --, '
                             f'{unread[0]}, so every run would train without it; allowed: {unread[1]}')
        if key == 'tta' and words and _typed(words[-1]) not in (0, 1):
            raise ValueError(f'{given} would make every top-1 wrong: train.py\'s validation makes no augmented '
                             f'copies, so --tta N averages the outputs of N different validation images and scores '
                             f'them by the first one\'s label; allowed: leave it out')


def check_failing_args(extra_args: Sequence[str], recipe: Path, nproc: int = 1) -> None:
    """Refuse train.py arguments after ``--`` with which train.py stops every run at its start on an assertion that
    says nothing (each run's reason in the report would be ``AssertionError``): ``--jsd-loss`` or ``--split-bn``
    without ``--aug-splits N`` >= 2 (``--split-bn``: or ``--resplit``), ``--aug-splits`` while the recipe's mixup /
    cutmix go through train.py's prefetcher, which mixes no augmentation splits, and ``--aug-repeats`` in one process
    or with an iterable reader (timm's loader repeats augmentations only across the processes of a distributed run,
    and only over a dataset it samples).

    Raises:
        ValueError: the first such argument, one line.
    """
    settings = _given_settings(recipe, extra_args)
    splits = settings.get('aug_splits') or 0
    splits = splits if isinstance(splits, int) else 0
    mixing = any(isinstance(settings.get(k), (int, float)) and settings[k] > 0 for k in ('mixup', 'cutmix')) or \
        settings.get('cutmix_minmax') is not None
    unmixed = ' --mixup 0 --cutmix 0' if mixing and not settings.get('no_prefetcher') else ''
    stops = 'would stop every run at its start (train.py asserts'
    repeats = settings.get('aug_repeats') or 0
    iterable = dataset_reader(settings.get('dataset')) + '/' in _SAMPLING_READERS  # timm samples none of them
    if (nproc == 1 or iterable) and isinstance(repeats, (int, float)) and repeats > 0:
        why, way = ((f'that repeated augmentation samples no {settings["dataset"]} (an iterable reader)', '')
                    if iterable else ('that repeated augmentation needs a distributed run', '--nproc 2 or more before '
                                      '--, or '))
        raise ValueError(f'--aug-repeats {repeats:g} after -- {stops} {why}); allowed: {way}-- --aug-repeats 0')
    for switch, alone in (('jsd_loss', ''), ('split_bn', ' or --resplit')):
        if settings.get(switch) and splits < 2 and not (alone and settings.get('resplit')):
            flag = '--' + switch.replace('_', '-')
            raise ValueError(f'{flag} after -- {stops} it only with --aug-splits N >= 2{alone}); allowed: -- '
                             f'--aug-splits 3 {flag}{unmixed}, or leave it out')
    if splits >= 2 and unmixed:
        raise ValueError(f'--aug-splits {splits} after -- {stops} that its prefetcher mixes no augmentation splits, '
                         f'and the {recipe.name} recipe sets mixup / cutmix); allowed: -- --aug-splits {splits}'
                         f'{unmixed}')



def check_train_steps(data: Dict[str, Any], recipe: Path, extra_args: Sequence[str], nproc: int = 1,
                      spellings: Optional[Dict[str, str]] = None) -> None:
    """Refuse an image folder whose training split holds fewer images per process than one batch: train.py's training
    loader drops an incomplete batch, so every run would train no step and be reported finished, its top-1 that of
    its initial weights. The images the reader takes (its suffixes, ``--input-key``'s for timm's; under a class map
    those of the folders it names) are counted until there are enough.

    Raises:
        ValueError: naming the folder, its images and the batch size, one line.
    """
    reader = dataset_reader(dataset_name(data.get('dataset')))
    if reader not in IMAGE_FOLDER_READERS:
        return
    words = _flag_words(extra_args, spellings).get('--batch-size')
    batch = _typed(words[-1]) if words else read_recipe(recipe).get('batch_size', 128)  # 128: train.py's default
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        return  # train.py refuses it itself
    root = Path(data['data_dir'])
    folder = split_folder(root, str(data['train_split'])) or root
    suffixes = reader_suffixes(data)
    mapped = None
    if data.get('class_map') and reader != TORCHVISION_FOLDER:  # timm reads only the class folders the map names
        where = class_map_file(str(data['class_map']), folder)
        mapped = set(read_class_map(where)) if where is not None and where.is_file() else None
    enough = (batch - 1) * nproc + 1  # each process samples ceil(images / nproc) of them
    count = 0
    for path, _, files in os.walk(folder, followlinks=True):
        if mapped is not None and (os.path.basename(path) if path != str(folder) else '') not in mapped:
            continue
        count += sum(os.path.splitext(f)[1].lower() in suffixes for f in files)
        if count >= enough:
            return
    per_process = f' per process ({nproc} processes)' if nproc > 1 else ''
    named = f' in the class folders --class-map {data["class_map"]} names' if mapped is not None else ''
    raise ValueError(f'{folder} holds {count} training images{named}, fewer than one batch of {batch}{per_process}: '
                     f"train.py's training loader drops an incomplete batch, so every run would train no step and be "
                     f'reported with the top-1 of its initial weights; allowed: -- --batch-size '
                     f'{max(1, -(-count // nproc))} or less, or more images')

def _is_config_flag(arg: str) -> bool:
    """Whether a train.py argument is its recipe file: ``-c`` / ``--config`` in any form its config parser takes
    (``-cFILE``, ``--config=FILE``, an abbreviation such as ``--conf``: that parser knows no other option)."""
    name = arg.split('=', 1)[0]
    return (name.startswith('-c') and not name.startswith('--')) or (len(name) > 2 and '--config'.startswith(name))


def split_model_kwargs(extra_args: Sequence[str]) -> Tuple[List[str], Dict[str, Any]]:
    """The extra train.py arguments without their ``--model-kwargs``, and its kwargs: :func:`run_from_args` merges
    them into each row's own kwargs.

    Raises:
        ValueError: a word is not ``KEY=VALUE``, a KEY is given twice, or ``--model-kwargs`` is (train.py keeps the
            last one's words only: the others would be dropped without a word).
    """
    rest: List[str] = []
    uses: List[List[str]] = []
    i = 0
    while i < len(extra_args):
        arg = extra_args[i]
        i += 1
        if arg != '--model-kwargs' and not arg.startswith('--model-kwargs='):
            rest.append(arg)
            continue
        uses.append([arg.split('=', 1)[1]] if '=' in arg else [])
        while i < len(extra_args) and not extra_args[i].startswith('-'):  # argparse's nargs='*'
            uses[-1].append(extra_args[i])
            i += 1
    if len(uses) > 1:
        shown_uses = ', then '.join(' '.join(['--model-kwargs', *words]) for words in uses)
        raise ValueError(f'--model-kwargs given {len(uses)} times after -- ({shown_uses}): train.py keeps only the '
                         f'last; allowed: all KEY=VALUE words after one --model-kwargs (--model-kwargs '
                         f'{" ".join(w for words in uses for w in words)})')
    try:
        return rest, kwarg_words(uses[0] if uses else [])
    except ValueError as e:
        raise ValueError(f'--model-kwargs after --: {e}') from None


def merge_model_kwargs(runs: Sequence[Run], kwargs: Dict[str, Any]) -> None:
    """Add ``kwargs`` (``-- --model-kwargs ...``) to every run's own.

    Raises:
        ValueError: a key that a Table 2 row sets itself (``spt``, ``lsa``, ``spt_pool``): it would turn a row into
            another (a baseline into SL).
    """
    rows = sorted({k for run in runs for v in VARIANTS[run.family].values() for k in v})
    clash = [k for k in kwargs if k in rows]
    if clash:
        raise ValueError(f'--model-kwargs {" ".join(f"{k}={kwargs[k]}" for k in clash)} after -- would change the '
                         f'Table 2 rows, which set {", ".join(rows)} themselves; allowed: other model kwargs (e.g. '
                         f'depth=2), which every row gets')
    from timm_sl.layers import with_switches
    for run in runs:  # a baseline's: no SPT options, no lsa_mask / lsa_learn_temp outliving its lsa=False
        run.model_kwargs = with_switches(kwargs, run.model_kwargs)


def check_model_kwargs(runs: Sequence[Run], kwargs: Dict[str, Any], num_classes: Optional[int] = None,
                       extra_args: Sequence[str] = ()) -> None:
    """Refuse, before any run starts, ``kwargs`` (``-- --model-kwargs ...``) with which a row's model cannot be
    built: a keyword train.py gives ``create_model`` itself (``drop_path_rate``: its ``--drop-path``), an unknown or
    bad one (``depth=2`` for PiT, whose depth is per stage); or a train.py argument among ``extra_args`` that it
    gives ``create_model`` and no row's model takes (``--drop-block``, ``--bn-eps``: these models have no
    DropBlock, no BatchNorm). Each row's model is built once, on the meta device.

    Raises:
        ValueError: the first such kwarg or row, one line.
    """
    import timm
    import torch
    from .analysis import attention_layers
    from .errors import BUILD_ERRORS, build_failure
    from .train_args import TRAIN_PY_MODEL_ARGS
    given = ' '.join(f'{k}={v}' for k, v in kwargs.items())
    twice = [k for k in kwargs if k in TRAIN_PY_MODEL_ARGS]
    if twice:
        raise ValueError(f'--model-kwargs {given} after --: train.py gives the model '
                         f'{", ".join(twice)} itself (every run would fail: got multiple values); allowed: '
                         f'{", ".join(f"-- {TRAIN_PY_MODEL_ARGS[k]}" for k in twice)} instead')
    head = {} if num_classes is None else dict(num_classes=num_classes)
    words = _flag_words(extra_args)
    flags = {key: flag for key, flag in TRAIN_PY_MODEL_ARGS.items()  # weights and paths: not read on the meta device
             if words.get(flag) and key not in ('pretrained', 'checkpoint_path', 'pretrained_cfg_overlay')}
    head.update({key: _typed(words[flag][-1]) for key, flag in flags.items()})
    if not (kwargs or flags):
        return
    said = ' '.join([f'--model-kwargs {given}'] * bool(kwargs) + [f'{f} {" ".join(words[f])}' for f in flags.values()])
    for model, row_kwargs in dict.fromkeys((r.model, tuple(r.model_kwargs.items())) for r in runs):
        row = f'{model} with {" ".join(f"{k}={v}" for k, v in row_kwargs)}' if row_kwargs else model
        try:
            with torch.device('meta'):
                built = timm.create_model(model, **dict(row_kwargs), **head)
        except BUILD_ERRORS as e:
            raise ValueError(f'{said} after --: {row} cannot be built (every run of it would fail): '
                             f'{build_failure(e)}') from None
        if kwargs and not attention_layers(built):  # depth=0: an 'SL' row of SPT alone, a baseline of no attention
            with torch.device('meta'):
                had = attention_layers(timm.create_model(model, **{k: v for k, v in row_kwargs if k not in kwargs}))
            if had:
                raise ValueError(f'{said} after --: {row} has no attention layer left (an SL row would be SPT alone, '
                                 f'LSA having nothing to act on), so the Table 2 rows would not be what they are '
                                 f'labelled; allowed: kwargs that keep one (depth >= 1)')


def _workers(recipe: Path, extra_args: Sequence[str], spellings: Optional[Dict[str, str]] = None) -> int:
    """Data workers per run: the last ``-j`` / ``--workers`` among the extra arguments in any spelling train.py takes
    (``-j0``, ``-j=0``, ``--workers=0``; ``spellings``: train.py's, :func:`run_settings`), else the recipe's, else
    train.py's default."""
    words = _flag_words(extra_args, {'-j': '--workers', '--workers': '--workers', **(spellings or {})}).get('--workers')
    value = words[0] if words else None
    if value is None:
        value = read_recipe(recipe).get('workers', TRAIN_PY_WORKERS)
    try:
        return max(int(value), 0)
    except ValueError:
        raise ValueError(f'-j {value} is not allowed; expected an integer >= 0') from None


def _no_gpu_here(env: Dict[str, str]) -> bool:
    """Nothing to probe: CUDA_VISIBLE_DEVICES set empty, or no GPU driver device files (NVIDIA, AMD)."""
    if env.get('CUDA_VISIBLE_DEVICES', None) == '':
        return True
    return not any(Path(p).exists() for p in ('/dev/nvidiactl', '/dev/kfd'))


def plugin_hint() -> str:
    """Why train.py may not know the ``sl_`` models: it finds them through timm_sl's ``timm.plugins`` entry point,
    which only an installed timm_sl has (a checkout on ``PYTHONPATH`` does not); '' when it is installed."""
    from importlib.metadata import entry_points
    try:
        plugins = entry_points(group='timm.plugins')
    except TypeError:  # Python 3.9
        plugins = entry_points().get('timm.plugins', [])
    if any(ep.value.split(':')[0].split('.')[0] == 'timm_sl' for ep in plugins):
        return ''
    return ('; timm_sl is not installed in this Python (no timm.plugins entry point), so train.py does not know the '
            'sl_ models: pip install . (offline: pip wheel --no-deps . -w wheels where pip can build, then pip install '
            '--no-deps wheels/timm_sl-*.whl)')


def plan_sweep(args: argparse.Namespace, recipe: Path, extra_args: Sequence[str], script: Optional[Path] = None
               ) -> Tuple[int, List[str], str]:
    """Runs at once, the device slots (``CUDA_VISIBLE_DEVICES`` per run, [''] unpinned) and a phrase saying why.

    Raises:
        ValueError: a bad ``--jobs`` / ``--gpus`` / ``-j``, fewer GPUs than ``--nproc`` (or ``--gpus`` not a multiple
            of it), no GPU found while ``script`` trains on CUDA by default (every run would fail), or a
            ``--device cuda:N``
            after ``--`` that no pinned run sees.
    """
    if args.jobs is not None and args.jobs < 1:
        raise ValueError(f'--jobs {args.jobs} is not allowed; expected an integer >= 1')
    ids = parse_gpus(args.gpus)
    on_cpu = str(last_flag_value(extra_args, '--device') or '').startswith('cpu')
    if ids is None:
        gpus = [] if on_cpu or _no_gpu_here(dict(os.environ)) else probe_gpus()
    else:
        gpus = [Gpu(i) for i in ids]
    default = train_script_default(script, '--device') if script is not None else None
    if ids is None and not gpus and last_flag_value(extra_args, '--device') is None and \
            str(default).startswith('cuda'):
        raise ValueError(f'no GPU found (torch sees none), and {script} trains on --device {default} unless told: '
                         f'every run would fail once started; allowed: -- --device cpu, or --gpus to name GPUs')
    devices = device_groups([g.id for g in gpus], args.nproc) if gpus else ['']
    idle = [g.id for g in gpus[len(gpus) - len(gpus) % args.nproc:]] if gpus else []
    if idle and ids is not None:  # torchrun takes --nproc GPUs a run: the rest would stay idle, unsaid
        raise ValueError(f'--gpus {args.gpus} gives {len(gpus)} GPUs, not a multiple of --nproc {args.nproc}: GPU '
                         f'{",".join(idle)} would stay idle; allowed: a multiple of {args.nproc} GPUs (e.g. --gpus '
                         f'{",".join(ids[:len(ids) - len(idle)])})')
    device = str(last_flag_value(extra_args, '--device') or '')
    index = re.fullmatch(r'cuda:(\d+)', device)
    if gpus and index and int(index[1]) >= args.nproc:  # a pinned run sees its own GPUs only, as cuda:0 ...
        raise ValueError(f'--device {device} after -- names a GPU no run sees: each run sees only its own GPU(s) '
                         f'(CUDA_VISIBLE_DEVICES), as cuda:0; allowed: --gpus {index[1]} to pick that GPU, and '
                         f'--device cuda')
    if args.jobs is not None:
        jobs, why = args.jobs, '--jobs'
    else:
        spellings = train_script_spellings(script) if script is not None else None
        jobs, why = default_jobs(gpus, args.nproc, _workers(recipe, extra_args, spellings))
    where = f'GPU {" / ".join(devices)}' + (f' (GPU {",".join(idle)} idle: --nproc {args.nproc})' if idle else '') \
        if gpus else 'unpinned (no GPU found)' if ids is None else 'unpinned'
    return jobs, devices, f'{jobs} run(s) at once ({why}), {where}'


class RunsFailed(ToolError):
    """Some runs of a sweep crashed; the others and the report are written. Exit status 1, as a test runner's."""
    exit_status = 1


def run_from_args(args: argparse.Namespace) -> int:
    """``timm-sl reproduce``: plan, run, report. Returns the exit status: 0, or 130 when interrupted.

    Raises:
        ValueError / FileNotFoundError: bad input, before anything runs (the data folder's problems one per line).
        RunsFailed: a run crashed (after the report was written).
    """
    given = list(args.train_args)
    if given[:1] == ['--']:
        given = given[1:]
    if args.nproc < 1:
        raise ValueError(f'--nproc {args.nproc} is not allowed; expected an integer >= 1')
    if Path(args.out).exists() and not Path(args.out).is_dir():
        raise NotADirectoryError(f'--out {args.out} is a file; allowed: a folder (new, or the output of an earlier '
                                 f'timm-sl reproduce, which is resumed)')
    check_not_below_a_file(args.out, '--out')
    script = check_train_script(args.train_script)  # a text file there: refused before any run
    recipe = recipe_path(args.dataset)
    check_recipe_keys(recipe, script)  # a key train.py does not know (epoch: 5) it would ignore
    # train.py's argparse takes an abbreviation (--exper for --experiment): every check reads the names it reads
    given = expand_abbreviations(given, train_script_options(script), script, train_script_spellings(script))
    for flag in _PER_RUN_FLAGS:
        if any(a == flag or a.startswith(flag + '=') for a in given):
            raise ValueError(f'{flag} after -- is set for each run by reproduce ({", ".join(_PER_RUN_FLAGS)}); '
                             f'allowed after --: the other train.py arguments')
    config = next((a for a in given if _is_config_flag(a)), None)
    if config is not None:
        raise ValueError(f'{config} after -- would replace the recipe reproduce passes for --dataset {args.dataset} '
                         f'(train.py reads the last --config), while the report and paper column stay '
                         f'{args.dataset}\'s; allowed: --dataset to pick a recipe, single settings after -- '
                         f'(e.g. -- --epochs 10)')
    if any(a == '--start-epoch' or a.startswith('--start-epoch=') for a in given):  # train.py: over --resume's epoch
        raise ValueError('--start-epoch after -- would start every run at that epoch, a resumed one too (train.py '
                         'takes it over the epoch of --resume): a new run would skip the epochs before it, a resumed '
                         'one train its epochs again, and the report would count them as trained; allowed: leave it '
                         'out (reproduce resumes each run at the epoch it reached)')
    ignored = next((a.split('=')[0] for a in given if a.split('=')[0] in _LR_BASE_FLAGS), None)
    if ignored is not None:  # train.py reads them only without --lr: every run would train at its row's --lr
        raise ValueError(f'{ignored} after -- would be ignored: train.py derives the learning rate from '
                         f'{", ".join(_LR_BASE_FLAGS)} only without --lr, and reproduce gives every run its row\'s '
                         f'--lr (the paper\'s: ViT 3e-3, the others 1e-3); allowed: -- --lr VALUE, for every run')
    extra, user_kwargs = split_model_kwargs(given)
    runs = plan_runs(args.dataset, args.families, args.seeds, Path(args.out))
    merge_model_kwargs(runs, user_kwargs)
    if not Path(args.data_dir).exists():
        raise FileNotFoundError(f'--data-dir {args.data_dir} does not exist')
    data = train_data(recipe, args.data_dir, extra)
    check_ignored_data_args(extra, recipe, data)
    check_unread_args(extra, recipe)
    check_failing_args(extra, recipe, args.nproc)
    check_grey_torch_dataset(extra, recipe, data)
    check_mean_std(extra, recipe)
    check_in_chans(extra, recipe)
    check_input_img_mode(extra, recipe, data)
    planned_epochs(recipe, extra)  # a bad --epochs after --: refused here, before anything runs
    check_model_kwargs(runs, user_kwargs, data['num_classes'], extra)  # the rows' own kwargs build their models
    jobs, devices, how = plan_sweep(args, recipe, extra, script)
    check_output_outside_data(Path(args.out), data)
    with hold_data(Path(args.data_dir)) as reading:  # a prepare-* replacing its splits now: refused either way
        errors = check_data(data, args.dataset)  # before anything runs: every problem, one line each
        if errors:
            raise ValueError('\n'.join(errors))
        check_train_steps(data, recipe, extra, args.nproc, train_script_spellings(script))
        # a user's report refused before --out or its runs/ is made; again once held (another reproduce may have
        # written)
        check_report_files(Path(args.out), getattr(args, 'overwrite', False))
        with hold_output(Path(args.out)) as lock:  # a second reproduce into --out would train the same runs at once
            check_report_files(Path(args.out), getattr(args, 'overwrite', False))  # before anything runs
            return _sweep_and_report(args, runs, script, recipe, extra, given, data, jobs, devices, how,
                                     tuple(fd for fd in (lock, reading) if fd is not None))


def hold_data(data_dir: Path) -> contextlib.AbstractContextManager:
    """``data_dir`` held for reading (:func:`~timm_sl.tools.errors.held_folder`, shared) from the data check until
    every train.py reading it has ended (they inherit the hold): a ``timm-sl prepare-*`` replacing its split folders
    meanwhile (which holds it to write) would have them train on images other than those checked and recorded in
    ``run.json``, both refused in one line. Not held where it cannot be opened (a torch/ dataset's folder to be)."""
    if not data_dir.is_dir() or not os.access(data_dir, os.R_OK):
        return contextlib.nullcontext(None)
    return held_folder(data_dir, f'--data-dir {data_dir} is being written by a timm-sl prepare command still running: '
                                 f'its split folders checked now would be replaced under the runs (trained on images '
                                 f'other than those checked and recorded); allowed: wait for it to end', shared=True)


def _sweep_and_report(args: argparse.Namespace, runs: List[Run], script: Path, recipe: Path, extra: List[str],
                      given: List[str], data: Dict[str, Any], jobs: int, devices: List[str], how: str,
                      pass_fds: Sequence[int] = ()) -> int:
    """The second half of :func:`run_from_args`, once every check passed: the runs, the report, the exit status."""
    print(f'{len(runs)} runs ({", ".join(args.families)} x seeds {" ".join(map(str, args.seeds))}) on {args.dataset} '
          f'with {recipe.name}; output {args.out}; {how}', flush=True)
    stats: Dict[str, Any] = {}
    stopped = None
    try:
        outcomes = reproduce(runs, script, args.data_dir, recipe, extra, nproc=args.nproc,
                             echo=lambda line: print(line, flush=True), jobs=jobs, devices=devices, stats=stats,
                             pass_fds=pass_fds)
    except SweepStopped as e:  # every run stopped: the report of what there is, then the error's one line
        outcomes, stopped = e.outcomes, e
    command = 'timm-sl reproduce ' + shlex.join(
        ['--data-dir', args.data_dir, '--dataset', args.dataset, '--families', *args.families,
         '--seeds', *map(str, args.seeds), '--out', args.out]
        + (['--nproc', str(args.nproc)] if args.nproc != 1 else [])  # a run's settings: resumed only with the same
        + (['--', *given] if given else []))
    with signals_held() as came:  # Ctrl-C now: the report written in full first, then exit status 130
        try:
            report = write_report(outcomes, args.dataset, Path(args.out), command, describe_data(data), sweep=stats)
        except OSError:
            if stopped is None:
                raise
            report = None  # the sweep's own error is the one line
    print(report_table(aggregate(outcomes, args.dataset), args.dataset))
    failed = [o.run.name for o in outcomes if o.status == 'failed']
    for o in outcomes:
        if o.skipped:
            print(f'{o.run.name}: {skipped_text(o)}')
    if report is not None:
        print(f'report: {report}')
    if stopped is not None:
        raise stopped
    if came:
        print(f'interrupted ({signal.Signals(came[0]).name}) while the report was written, which was written in full '
              f'first')
    if came or any(o.status in ('interrupted', 'not run') for o in outcomes):  # stopped by Ctrl-C / SIGTERM
        return 130
    if failed:
        raise RunsFailed(f'{len(failed)} run(s) failed: {", ".join(failed)} (see the report)')
    return 0
