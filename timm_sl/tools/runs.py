"""A timm ``train.py`` run folder, read by this module alone: each file once, as real runs leave it.

A run folder (``train.py --output``) holds ``args.yaml`` (every argument), ``summary.csv`` (one row per epoch, a header
repeated after each ``--resume``), its checkpoints and, when ``timm-sl reproduce`` ran it, ``done.json`` (family,
Table 2 row, seed), ``command.txt`` (its last session's) and ``sessions.json`` (each train.py session).
:func:`read_run` reads them into a :class:`RunRecord`; what only the checkpoint knows (its ``arch`` and ``args``) is
added by :meth:`RunRecord.with_checkpoint` once :func:`read_checkpoint` has read it. Torch is imported only to read a
checkpoint.

What real runs leave is read, not refused: a ``summary.csv`` whose last line is cut (a run still writing), NaN top-1
(a diverged epoch), columns this module does not know, text files with a byte-order mark (UTF-8, UTF-16, UTF-32) or
in a single-byte encoding, an empty or half-written ``done.json`` (no marker). What cannot be read is a ``ValueError``
/ ``OSError`` whose one line names the file. The dataset is the one the run records (:func:`recorded_dataset`), never
one read from folders around it. Epochs: train.py counts them from 0 in ``summary.csv`` and checkpoints; everything
this package shows counts them from 1 (:func:`summarize`'s ``best_epoch`` is train.py's epoch + 1).
"""
import argparse
import collections
import csv
import filecmp
import itertools
import json
import math
import os
import pickle
import shlex
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from .errors import first_line, shown
from .files import check_link_target, check_regular_file, kind_of, read_text, unreadable_folder, walk
from .paper import DATASETS, VARIANTS, family_of, table2_row, variant_of
from .train_args import last_flag_value, recipe_path

__all__ = ['CHECKPOINTS', 'DONE_MARKER', 'STATE_KEYS', 'Checkpoint', 'CutSinceDone', 'NonFiniteWeights', 'RunRecord',
           'read_run', 'find_runs', 'run_checkpoint', 'checkpoint_file', 'read_checkpoint', 'read_args_yaml',
           'read_summary_rows', 'summary_rows', 'summarize',
           'read_done_marker', 'read_sessions', 'read_text', 'recorded_dataset', 'given_dataset', 'format_top1',
           'portable_command', 'prepared_dataset', 'train_cwd', 'train_path', 'walk', 'read_class_map',
           'check_regular_file', 'saved_args', 'checkpoint_problem', 'check_finite_weights', 'scheduled_epochs',
           'diverged_text', 'dataset_reader', 'nan_epochs_text', 'unreadable_folder', 'TIMM_FOLDER',
           'TORCHVISION_FOLDER', 'IMAGE_FOLDER_READERS']

CHECKPOINTS = ('model_best.pth.tar', 'last.pth.tar')
DONE_MARKER = 'done.json'  # written by ``timm-sl reproduce`` after train.py exits cleanly
SESSIONS = 'sessions.json'  # written by ``timm-sl reproduce``: each train.py session's wall time, exit, devices, epochs
REPRODUCE_LOCK = '.reproduce.lock'  # in a reproduce's runs/ folder: held (flock) while that reproduce runs
# train.py's CheckpointSaver keys in timm's order of preference (load_state_dict with use_ema=True): EMA weights first
STATE_KEYS = ('state_dict_ema', 'model_ema', 'state_dict', 'model')

# train.py arguments whose values are this machine's paths, and what a card shows instead
PATH_PLACEHOLDERS = {'--data-dir': 'DATA', '--output': 'OUTPUT', '--initial-checkpoint': 'CHECKPOINT'}
# train.py arguments whose values are files of this machine that a card names by file name (as it names --config's)
PATH_NAMED = ('--class-map', '--pretrained-path')


def format_top1(value: Optional[float]) -> str:
    """A top-1 (%) as cards show it: two decimals, 'NaN (diverged)' for NaN, '-' for None."""
    if value is None:
        return '-'
    return f'{value:.2f}' if math.isfinite(value) else 'NaN (diverged)'


def diverged_text(summary: Optional[Dict[str, Any]]) -> str:
    """'diverged at epoch N (NaN)' for a :func:`summarize` whose run ended diverged, else ''."""
    epoch = (summary or {}).get('diverged_epoch')
    return f'diverged at epoch {epoch} (NaN)' if epoch else ''


def read_args_yaml(path: Union[str, Path]) -> Dict[str, Any]:
    """The arguments a train.py run saved in ``args.yaml`` (safe YAML load).

    Raises:
        ValueError: not YAML, not a mapping of argument names, or a ``model`` / ``dataset`` that is not a name,
            ``model_kwargs`` that are not a mapping, a ``seed`` that is no whole number (a file cut short or edited);
            naming the file.
    """
    import yaml
    try:
        args = yaml.safe_load(read_text(path, "train.py's args.yaml"))
    except yaml.YAMLError as e:
        raise ValueError(f'{path} is not a train.py args.yaml (not valid YAML: {first_line(e)})') from None
    if not isinstance(args, dict):
        raise ValueError(f'{path} is not a train.py args.yaml (expected a mapping of argument names)')
    for key, kind, ok in (('model', 'a model name', lambda v: isinstance(v, str)),
                          ('model_kwargs', 'a mapping of keyword arguments', lambda v: isinstance(v, dict)),
                          ('seed', 'a whole number', lambda v: isinstance(v, int) and not isinstance(v, bool)),
                          ('dataset', 'a dataset name', lambda v: isinstance(v, str))):
        if args.get(key) is not None and not ok(args[key]):
            raise ValueError(f'{path} is not a train.py args.yaml ({key}: {args[key]!r} is not {kind}; cut short '
                             f'or edited?)')
    return args


def _number(text: Optional[str]) -> Optional[float]:
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


def read_summary_rows(path: Union[str, Path], unevaluated: bool = False) -> List[Dict[str, float]]:
    """Rows of a train.py ``summary.csv`` as numbers, one per epoch in order (``epoch`` as train.py counts, from 0).
    ``unevaluated``: a run of train.py without a validation split (``--val-split ''``), whose summary has no ``eval_``
    column, is read too (its rows have no ``eval_top1``).

    Headers repeated by ``--resume`` are skipped (the rows after one read by its columns: a session of another timm
    may write others, such as ``lr``), an epoch written twice (a run stopped between its summary and its
    checkpoint, then resumed) keeps its last row, and a session resumed from an earlier checkpoint
    (``--resume checkpoint-3.pth.tar`` after epoch 9) drops the rows the older session wrote from that epoch on (its
    epochs 5-9 trained weights that are gone, whether or not the new session reaches them; a step back without the
    header each session starts with is refused: rows sorted or edited), a last row cut short (a
    run still writing) is left out, and a value that is not a number (an unknown column's text) is dropped; NaN stays
    NaN, and a row whose ``eval_loss`` is not finite has NaN top-1 / top-5 (the model's outputs were NaN: the top-1
    timm measures of them is chance, the class a NaN output ranks first). An epoch must be a whole number from 0 (not
    ``nan`` / ``inf`` / ``-1``): a row without one is broken (left out when it is the last).

    Raises:
        ValueError: not a summary.csv (no ``epoch`` / ``eval_top1`` columns), or a row other than the last is broken;
            naming the file (and line).
    """
    return summary_rows(read_text(path, "train.py's summary.csv"), path, unevaluated)


def nan_epochs_text(epochs: int) -> str:
    """The words for a summary.csv of no finite (``eval_loss``, top-1) row, as refusals give it: train.py writes the
    top-1 of NaN outputs as a number (chance), so the file shows a NaN loss beside it, not a NaN top-1."""
    return f'a NaN eval_loss or top-1 in each of its {epochs} epochs'


def summary_rows(text: str, path: Union[str, Path], unevaluated: bool = False) -> List[Dict[str, float]]:
    """:func:`read_summary_rows` of a summary.csv's ``text`` (``path`` names it in errors)."""
    lines = text.splitlines()
    rows = list(csv.reader(lines))
    header = rows[0] if rows else []
    # train.py without a validation split writes no eval_ column
    evaluated = not (unevaluated and {'epoch', 'train_loss'} <= set(header)
                     and not any(c.startswith('eval_') for c in header))
    if evaluated and ('eval_top1' not in header or 'epoch' not in header):
        raise ValueError(f'{path} is not a train.py summary.csv (no epoch / eval_top1 columns)')
    by_epoch: Dict[int, Dict[str, float]] = {}
    _check_header(header, path, 1)
    previous = None  # the epoch of the row before in this session (train.py writes a header at each session's start)
    for line_no, row in enumerate(rows[1:], start=2):
        if 'epoch' in row and ('eval_top1' in row or not evaluated):  # a header a resume repeats (another timm's)
            header, previous = row, None
            _check_header(header, path, line_no)
            continue
        if not any(cell.strip() for cell in row):
            continue
        values = {k: v for k, v in ((k, _number(cell)) for k, cell in zip(header, row)) if k and v is not None}
        epoch = values.get('epoch')
        if (len(row) != len(header) or epoch is None or ('eval_top1' not in values and evaluated)
                or not math.isfinite(epoch) or epoch != int(epoch) or epoch < 0 or not _percentages(values)):
            if line_no == len(rows):  # the last line, cut short by a run still writing
                continue
            raise ValueError(f'{path}:{line_no}: not a summary.csv row of {len(header)} fields with a whole-number '
                             f'epoch from 0' + (' and a numeric eval_top1 (top-1 and top-5 from 0 to 100)'
                                                if evaluated else '') + f': {lines[line_no - 1][:80]!r}')
        if previous is not None and epoch <= previous:  # rows sorted or edited: no resume went back without a header
            raise ValueError(f'{path}:{line_no}: epoch {int(epoch)} follows epoch {int(previous)} without the header '
                             f'train.py writes when a session resumes (a timm >= 1.0.31 train.py resuming again drops '
                             f'it); allowed: the rows in the order train.py wrote them, that header before a resumed '
                             f"session's first row")
        previous = epoch
        if not math.isfinite(values.get('eval_loss', 0.)):  # NaN outputs: timm's top-1 then counts the class a NaN
            values.update({k: math.nan for k in ('eval_top1', 'eval_top5') if k in values})  # ranks first (chance)
        for later in [e for e in by_epoch if e >= epoch]:  # a resume from an earlier checkpoint: its rows on replace
            del by_epoch[later]  # every row of those epochs the older session wrote, the ones it did not reach too
        by_epoch[int(epoch)] = values
    return [by_epoch[e] for e in sorted(by_epoch)]


def _percentages(values: Dict[str, float]) -> bool:
    """A row's top-1 and top-5 are percentages, as timm's accuracy writes them (NaN: a diverged epoch's, kept)."""
    return all(math.isnan(values[k]) or 0 <= values[k] <= 100 for k in ('eval_top1', 'eval_top5') if k in values)


def _check_header(header: Sequence[str], path: Union[str, Path], line_no: int) -> None:
    """Refuse a summary.csv header naming a column twice: its rows' values would be read by the last one (a top-5
    read as the top-1)."""
    twice = next((name for i, name in enumerate(header) if name and name in header[:i]), None)
    if twice is not None:
        raise ValueError(f'{path}:{line_no}: column {twice!r} is named twice in the header; allowed: a train.py '
                         f'summary.csv, each column once')


def summarize(path: Union[str, Path], rows: Optional[List[Dict[str, float]]] = None,
              args: Optional[Dict[str, Any]] = None, record: Optional['RunRecord'] = None) -> Dict[str, Any]:
    """Best epoch of a ``summary.csv`` by ``eval_top1`` (the paper reports the best test accuracy over epochs);
    ``rows`` when :func:`read_summary_rows` already read them; ``args``: the run's ``args.yaml``, for the epochs of a
    run of ``--val-interval N``, whose summary lists every N-th only; ``record``: the run's record (:func:`read_run`),
    which counts them where it is at hand (else one of ``rows`` and ``args`` does).

    Returns:
        ``best_top1``, ``best_top5`` (at that epoch), ``best_epoch`` and ``last_epoch`` counted from 1, ``epochs``
        (trained in the run's folder: :meth:`RunRecord.epochs_run`; the one count of them that the card, the report's
        runs table and results.json give); ``best_*`` are None when no epoch has a finite
        top-1 (a run that diverged from the start, or one without a validation split: then ``evaluated`` is False as
        well). ``diverged_epoch``: the first (from 1) of the NaN top-1 epochs the summary ends with (the run diverged
        there: its last weights output NaN; its best, if any, is of an epoch before), None when its last top-1 is
        finite (a NaN epoch it recovered from is no divergence) or not measured; see :func:`diverged_text`.

    Raises:
        ValueError: no finished epoch.
    """
    rows = (record.rows if record is not None else read_summary_rows(path)) if rows is None else rows
    if not rows:
        raise ValueError(f'{path} has no finished epoch')
    record = record or RunRecord(Path(path), args=args or {}, rows=rows)
    finite = [r for r in rows if math.isfinite(r.get('eval_top1', math.nan))]
    best = max(finite, key=lambda r: r['eval_top1']) if finite else {}
    diverged = None
    for row in reversed(rows):  # the NaN epochs the run ends with
        if 'eval_top1' in row and not math.isfinite(row['eval_top1']):
            diverged = int(row['epoch']) + 1
        else:
            break
    return {
        'best_top1': best.get('eval_top1'), 'best_top5': best.get('eval_top5'),
        'best_epoch': int(best['epoch']) + 1 if best else None,
        'epochs': record.epochs_run(),
        'last_epoch': int(rows[-1]['epoch']) + 1, 'diverged_epoch': diverged,
        **({} if any('eval_top1' in r for r in rows) else {'evaluated': False}),
    }


def _read_json(path: Path, kind: type = dict, what: str = 'a JSON file') -> Any:
    """A JSON object (or another ``kind``) this package wrote beside a run; empty when absent, empty, half-written or
    not of that kind.

    Raises:
        ValueError: a FIFO, socket or device there (see :func:`check_regular_file`), naming it.
        IsADirectoryError: a folder there (not taken for no file: what the run recorded would be passed over).
    """
    check_regular_file(path, what)  # a FIFO waits, a device never ends: refused, not taken for no file
    check_link_target(path, what)
    if path.is_dir():
        raise IsADirectoryError(f'{path} is a folder; expected {what} (allowed: the file, or none)')
    if not path.is_file():
        return kind()
    try:
        value = json.loads(read_text(path, what))
    except (ValueError, OSError):
        return kind()
    return value if isinstance(value, kind) else kind()


def read_sessions(folder: Union[str, Path]) -> List[Dict[str, Any]]:
    """``timm-sl reproduce``'s record of a run folder's train.py sessions (:data:`SESSIONS`), one per start, oldest
    first; [] when there is none or it was not written whole."""
    sessions = _read_json(Path(folder) / SESSIONS, list, f"timm-sl reproduce's {SESSIONS}")
    return [s for s in sessions if isinstance(s, dict)]


def read_done_marker(folder: Union[str, Path]) -> Dict[str, Any]:
    """``timm-sl reproduce``'s ``done.json`` of a run folder; {} when there is none or it was not written whole (an
    interrupted write is no marker: the run's ``summary.csv`` decides)."""
    return _read_json(Path(folder) / DONE_MARKER, what=f"timm-sl reproduce's {DONE_MARKER}")


class NonFiniteWeights(ValueError):
    """A checkpoint whose weights hold NaN or infinity (:func:`check_finite_weights`)."""


class ForeignCheckpoint(ValueError):
    """A run folder's checkpoint saved by another run (see :meth:`RunRecord.foreign_checkpoint`)."""


class CutSinceDone(ValueError):
    """A run's ``summary.csv`` short of the epochs its ``done.json`` records as finished (:func:`cut_since_done`)."""


def cut_since_done(folder: Union[str, Path], rows: Sequence[Dict[str, float]], marker: Dict[str, Any]) -> str:
    """Why a run's ``summary.csv`` (its ``rows``) no longer holds the epochs its ``done.json`` (``marker``) records as
    finished ('' when it does, or where either is absent): ``timm-sl reproduce`` writes the marker only once
    summary.csv reached them, so the file was cut short (its last row left out) or replaced since, and its best
    top-1 and epochs would read as another run's."""
    planned = marker.get('epochs')
    if not _whole(planned) or not rows or int(rows[-1]['epoch']) + 1 >= planned:
        return ''
    folder = Path(folder)
    return (f"{folder / 'summary.csv'} reaches epoch {int(rows[-1]['epoch']) + 1} of the {planned} epochs "
            f"{folder / DONE_MARKER} records as finished: it was cut short or replaced since (a copy cut off, or "
            f"train.py started again in the folder?), and its best top-1 and epochs would be another run's; allowed: "
            f"the run's whole summary.csv put back")


RUN_SETTINGS = ('model', 'model_kwargs', 'seed', 'lr')  # what makes a checkpoint or a command one run's


def settings_differ(given: Dict[str, Any], recorded: Dict[str, Any]) -> List[str]:
    """The :data:`RUN_SETTINGS` keys whose value ``given`` records other than ``recorded`` does; only keys both
    record (not None) are compared. Seed and lr compare as numbers (``'0.001'`` and ``1e-3`` agree; a bool or a word
    that is no number is not compared), model and kwargs by :func:`_same_value`."""
    found = []
    for key in RUN_SETTINGS:
        theirs, ours = given.get(key), recorded.get(key)
        if theirs is None or ours is None:
            continue
        if key in ('seed', 'lr'):
            if isinstance(theirs, bool) or isinstance(ours, bool):
                continue
            try:
                same = math.isclose(float(theirs), float(ours), rel_tol=1e-9)
            except (TypeError, ValueError):
                continue
        else:
            same = _same_value(theirs, ours)
        if not same:
            found.append(key)
    return found


def _same_value(a: Any, b: Any) -> bool:
    """Whether two recorded values say the same: a tuple and a list of the same values agree (YAML writes a tuple as
    a list), as do 2 and 2.0 (``--model-kwargs lsa_temp_ratio=2`` and a recorded 2.0); a bool agrees with a bool
    only."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same_value(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same_value(a[key], b[key]) for key in a)
    return a == b


def _whole(value: Any) -> bool:
    """An int that is not a bool (a JSON or checkpoint value that counts epochs)."""
    return isinstance(value, int) and not isinstance(value, bool)


def _given_fits(session: Dict[str, Any], end: int) -> bool:
    """Whether the ``--epochs`` a session that ended cleanly at epoch ``end`` records (``given_epochs``) could be its
    own: 1 to ``end`` (a schedule trains at least its ``--epochs``); another (0, -1, more) is an edited file's."""
    given = session.get('given_epochs')
    return _whole(given) and 1 <= given <= end


def read_class_map(path: Path) -> Dict[Any, Any]:
    """A class map as timm's ``load_class_map`` reads it: a .txt of class names, one a line (its index), or a .pkl
    of ``{name: index}`` (unpickled without globals, as timm does), whose indices are the classes a run learned.

    Raises:
        ValueError: not readable so, or an index that is not a class number, naming what was wrong (after the map's
            name in a message).
    """
    import pickle

    class NoGlobals(pickle.Unpickler):
        def find_class(self, module: str, name: str):
            raise pickle.UnpicklingError(f'global {module}.{name} is not allowed in a class map')
    try:
        if path.suffix.lower() == '.txt':
            with path.open(encoding='utf-8') as f:  # timm's reading, line ends and all
                return {line.strip(): i for i, line in enumerate(f)}
        with path.open('rb') as f:
            mapping = NoGlobals(f).load()
    except Exception as e:  # noqa: BLE001 (unpickling raises most kinds on a damaged file)
        raise ValueError(f'is not readable ({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ""})'
                         ) from None
    if not isinstance(mapping, dict):
        raise ValueError(f'holds a {type(mapping).__name__}, not a dict of class name to index')
    odd = next((k for k, v in mapping.items() if not (_whole(v) and v >= 0)), None)
    if odd is not None:
        raise ValueError(f'gives {odd!r} the index {mapping[odd]!r}, not a class number (0, 1, ...)')
    return mapping


@dataclass
class RunRecord:
    """What is known about a checkpoint's training run.

    Attributes:
        checkpoint: The checkpoint file.
        run_dir: Its run folder when that holds train.py's ``args.yaml``, else None.
        args: train.py's arguments (``args.yaml``, else the checkpoint's ``args``).
        model: The model trained (train.py's ``--model``, else the checkpoint's ``arch``).
        model_kwargs: train.py's ``--model-kwargs`` (for ``slify``, with its ``base``).
        summary: The best epoch of ``summary.csv`` (see :func:`summarize`), when there is one.
        rows: ``summary.csv``'s rows (see :func:`read_summary_rows`), for the top-1 of the epoch a checkpoint holds.
        dataset: The dataset name as the run records it (see :func:`recorded_dataset`); None without a record.
        family: The Table 2 family (``vit``, ...; any other model is its own family).
        variant: The Table 2 row the kwargs make (``base``, ``sl``, ``sl_no_spool``; ``custom`` for any other).
        seed: train.py's ``--seed``.
        command: The recorded train.py command without this machine's paths (see :func:`portable_command`).
        marker: ``timm-sl reproduce``'s ``done.json`` ({} when there is none).
        sessions: ``timm-sl reproduce``'s ``sessions.json`` since the run's last start from scratch: one per train.py
            session, resumes included ([] when there is none).
        checkpoint_args: The checkpoint's own ``args`` once :meth:`with_checkpoint` has read them ({} before): those
            of the session that saved it, where ``args.yaml`` is the last session's (a resume rewrites it).
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
    rows: List[Dict[str, float]] = field(default_factory=list)
    marker: Dict[str, Any] = field(default_factory=dict)
    sessions: List[Dict[str, Any]] = field(default_factory=list)
    checkpoint_args: Dict[str, Any] = field(default_factory=dict)

    @property
    def num_classes(self) -> Optional[int]:
        """train.py's ``--num-classes`` (None when not recorded)."""
        return self.args.get('num_classes') or None

    def epoch_row(self, epoch: Any) -> Optional[Dict[str, float]]:
        """The ``summary.csv`` row of ``epoch`` as a checkpoint records it (train.py's, counted from 0); None when the
        epoch is not a whole number or has no row."""
        if not _whole(epoch):
            return None
        return next((r for r in self.rows if int(r['epoch']) == epoch), None)

    def weights_result(self, epoch: Any) -> Dict[str, Any]:
        """What ``summary.csv`` says of a checkpoint's own weights, by the epoch the checkpoint records (train.py's,
        from 0): ``last.pth.tar`` or ``checkpoint-N`` hold another epoch than the best row.

        Returns:
            ``epoch`` (from 1; None when the checkpoint records none), ``top1`` / ``top5`` of that epoch's row (None
            without one, or for ``midway`` weights: a recovery checkpoint's, saved during the epoch), ``is_best`` (the
            best row is theirs) and ``note``: a sentence when the best row is not, or may not be, theirs ('' when it
            is, or without a summary).
        """
        summary = self.summary or {}
        # train.py's recovery-E-B.pth.tar (--recovery-interval) holds weights saved during epoch E, at its batch B
        midway = self.checkpoint.name.startswith('recovery-')
        row = {} if midway else self.epoch_row(epoch) or {}
        result = dict(epoch=epoch + 1 if _whole(epoch) else None, top1=row.get('eval_top1'), top5=row.get('eval_top5'),
                      is_best=False, note='', midway=midway)
        if summary.get('best_epoch') is None:  # no summary, or no epoch with a finite top-1
            return result
        if midway and _whole(epoch):
            result['note'] = (f"These weights were saved during epoch {epoch + 1} (train.py's recovery checkpoint, "
                              f"before that epoch ended): no top-1 of summary.csv is theirs, the best above is another "
                              f"checkpoint's.")
        elif not _whole(epoch):
            result['note'] = ("The checkpoint does not record its epoch: the best top-1 above may be another "
                              "checkpoint's, not these weights'.")
        elif not row:
            result['note'] = (f"These weights are epoch {epoch + 1}'s, which summary.csv does not list: the best top-1 "
                              f"above may be another checkpoint's.")
        elif epoch + 1 == summary['best_epoch']:
            result['is_best'] = True
        else:
            metric = self.args.get('eval_metric') or 'top1'  # what train.py chose model_best.pth.tar by
            kept = ('train.py keeps it as model_best.pth.tar' if metric == 'top1' else
                    f'train.py chose model_best.pth.tar by --eval-metric {metric}, not by top-1')
            diverged = not math.isfinite(row['eval_top1'])  # NaN outputs (see read_summary_rows)
            if self.checkpoint.name == CHECKPOINTS[0] and diverged and metric in ('top1', 'loss'):
                kept = (f"train.py chose this model_best.pth.tar by the top-1 it measured of epoch {epoch + 1}'s NaN "
                        f"outputs, which is chance (the class a NaN output ranks first), and no later epoch's top-1 "
                        f"beat it" if metric == 'top1' else
                        f"train.py chose this model_best.pth.tar by --eval-metric loss, whose NaN at epoch "
                        f"{epoch + 1} no later loss compares below, so it kept epoch {epoch + 1}'s weights")
            elif metric == 'top1' and self.checkpoint.name == CHECKPOINTS[0]:  # this is model_best: not the best's
                kept = ('not this model_best.pth.tar: train.py chooses its best anew in each session, so a session '
                        'resumed after the best epoch replaced it')
            top1 = 'diverged: its outputs were NaN' if diverged else f"top-1 {format_top1(row['eval_top1'])} %"
            result['note'] = (f"These weights are epoch {epoch + 1}'s ({top1}), not the best epoch's: the best top-1 "
                              f"above (epoch {summary['best_epoch']}) belongs to another checkpoint ({kept}).")
        return result

    def unmeasured_top1(self) -> str:
        """Why ``summary.csv``'s top-1 are not a measurement of the run's weights ('' when they are), as a clause
        after 'measured ...' / 'were ...': train.py's ``--tta N`` (its validation makes no augmented copies, so each
        score averaged N different validation images and took the first one's label). The one rule of export's card
        and of release (no measured-vs-paper row, no tag)."""
        tta = self.args.get('tta')
        if _whole(tta) and tta > 1:
            return (f"measured with `--tta {tta}`: train.py's validation makes no augmented copies, so each score "
                    f"averaged the outputs of {tta} different validation images and took the first one's label")
        return ''

    def val_interval(self) -> int:
        """train.py's ``--val-interval N``: it evaluates, writes a ``summary.csv`` row and saves checkpoints after
        every N-th epoch and the last only (1 where unset)."""
        interval = self.args.get('val_interval')
        return interval if _whole(interval) and interval > 1 else 1

    def first_epoch(self) -> int:
        """The first epoch (from 1) the run trained in this folder: that of ``summary.csv``'s first row, or, for a run
        of ``--val-interval N``, the one its ``--resume`` checkpoint (at hand) resumed at, else the first of the N
        epochs that row ends (``--start-epoch`` among them: its epoch); > 1 for a run resumed from another folder's
        checkpoint or begun at ``--start-epoch``. See :meth:`epochs_bound` for where it is the earliest it may be."""
        return self._first()[0]

    def epochs_bound(self) -> bool:
        """Whether :meth:`first_epoch` is only the earliest the run may have begun at (and :meth:`epochs_run` the most
        it may have trained): a run of ``--val-interval N`` resumed from a checkpoint not at hand, whose first
        ``summary.csv`` row is not among the first N epochs (that checkpoint may sit at any of the N before it: a
        ``last.pth.tar`` of a shorter schedule, a recovery checkpoint)."""
        return self._first()[1]

    def _first(self) -> Tuple[int, bool]:
        """(:meth:`first_epoch`, :meth:`epochs_bound`)."""
        if not self.rows:
            return 1, False
        listed, interval = int(self.rows[0]['epoch']), self.val_interval()
        start = self.args.get('start_epoch')
        if not self.args.get('resume') and _whole(start) and start <= listed < start + interval:  # --start-epoch
            return start + 1, False
        earliest = max(listed - interval + 1, 0)  # train.py writes a row after epochs (from 1) that are multiples of N
        if interval == 1 or not self.args.get('resume'):
            return earliest + 1, False
        resumed = self._resume_start()
        if resumed is not None and earliest <= resumed <= listed:
            return resumed + 1, False
        return earliest + 1, earliest > 0

    def _resume_start(self) -> Optional[int]:
        """The epoch (train.py's, from 0) the last session resumed at, as train.py takes it from its ``--resume``
        checkpoint (that checkpoint's epoch, the next one for timm's checkpoints of version 2 on); None where that
        checkpoint is not at hand (moved, relative to an unknown working directory) or records no epoch, or
        ``--start-epoch`` overrode it."""
        return None if self.args.get('start_epoch') is not None else self.resumed_epoch()

    def resumed_epoch(self, path: Optional[Path] = None) -> Optional[int]:
        """The epoch (train.py's, from 0) train.py resumes at from checkpoint ``path`` (the last session's ``--resume``
        one by default) as it holds it now: its epoch, the next one for timm's checkpoints of version 2 on; None where
        it is not at hand or records no epoch."""
        path = self.resume_checkpoint() if path is None else path
        if path is None:
            return None
        try:
            content, _ = _load(path, mmap=True)
        except (OSError, ValueError):
            return None
        epoch = content.get('epoch') if isinstance(content, dict) else None
        if not _whole(epoch):
            return None
        version = content.get('version')
        return epoch + 1 if _whole(version) and version > 1 else epoch

    def resume_changed(self) -> str:
        """Why the last session's ``--resume`` checkpoint, as it is now, cannot be taken for the one that session
        resumed from ('' when it can, or is not at hand): it must resume at the epoch before this run's first
        (:meth:`resumed_epoch`, :meth:`first_epoch`); a run that trained on after it was resumed from overwrites its
        ``last.pth.tar`` with a later epoch, of other arguments maybe. Under ``--start-epoch`` (which train.py takes
        over the checkpoint's epoch) nothing holds it against this run."""
        path = self.resume_checkpoint()
        if path is None:
            return ''
        if self.args.get('start_epoch') is not None:
            return (f"its epoch cannot be held against this run's first: --start-epoch {self.args['start_epoch']} "
                    f"overrode it")
        epoch = self.resumed_epoch(path)
        if epoch is None:
            return 'it records no epoch to hold against this run\'s first'
        if not self.rows:
            return 'summary.csv lists no epoch of this run to hold it against'
        first = self.first_epoch()
        if epoch != first - 1:
            return f'it has changed since: it now resumes at epoch {epoch + 1}, where this run began at epoch {first}'
        return ''

    def resume_checkpoint(self, args: Optional[Dict[str, Any]] = None) -> Optional[Path]:
        """The checkpoint the last session's ``--resume`` names (``args``: another session's arguments), as this
        process finds it (a relative one in train.py's working directory); None without a ``--resume``, or where it is
        not at hand (moved, pruned by ``--checkpoint-hist``, relative to an unknown working directory)."""
        args = self.args if args is None else args
        resume = args.get('resume')
        if not isinstance(resume, str) or not resume:
            return None
        path = train_path(self.run_dir, self.args, resume)
        return path if path is not None and path.is_file() else None  # not a FIFO either (it would hang)

    def epochs_run(self) -> int:
        """The epochs the run trained in this folder: ``summary.csv``'s rows, or for a run of ``--val-interval N``,
        which lists every N-th epoch only, those from :meth:`first_epoch` to its last row's (the most it may have
        trained where :meth:`epochs_bound`)."""
        if self.val_interval() == 1 or not self.rows:
            return len(self.rows)
        return int(self.rows[-1]['epoch']) + 2 - self.first_epoch()

    def unfinished(self) -> str:
        """Why the run has not trained its planned epochs ('' when it has): the epochs of ``timm-sl reproduce``'s
        ``done.json``, else those train.py's schedule trains for ``args.yaml`` (:func:`scheduled_epochs`: ``--epochs``
        and a ``--cooldown-epochs`` after them), against the last epoch of ``summary.csv``. A run that failed or was
        interrupted has no ``done.json`` and stops short of them; a ``done.json`` of fewer epochs than ``args.yaml``
        plans is of an earlier schedule (the run extended since, still running or interrupted). Without either record
        there is nothing to hold the run against ('')."""
        later = scheduled_epochs(self.args) if _whole(self.args.get('epochs')) else None
        marked = self.marker['epochs'] if _whole(self.marker.get('epochs')) else None
        running = ''
        if marked is not None and not (_whole(later) and later > marked):
            planned, where = marked, f'{DONE_MARKER} records'
        elif _whole(self.args.get('epochs')):
            running = reproduce_holding(self.run_dir)
            if marked is not None:  # train.py started again with more epochs since (by reproduce, or by hand)
                state = (f'{DONE_MARKER} records {marked}: train.py was started again since with more, and '
                         + (f'a timm-sl reproduce still running holds {running}' if running else
                            'is still running or was interrupted'))
            else:
                state = (f'no {DONE_MARKER}: ' + (f'not finished yet, a timm-sl reproduce still running holds {running}'
                                                  if running else 'failed or interrupted'))
            planned, where = later, f'args.yaml plans ({state})'
            if planned != self.args['epochs']:  # --cooldown-epochs, --warmup-prefix, --lr-cycle-limit
                where = where[:-1] + f"; train.py's schedule trains {planned} for --epochs {self.args['epochs']})"
        else:  # train.py always writes --epochs: an args.yaml without it was cut or edited, which the model's
            return ''  # build from it reports by name (a skip here would hide that behind 'not finished')
        if self.summary is None:
            return f'no summary.csv, of the {planned} epochs {where}'
        if self.summary['last_epoch'] < planned:
            return f"summary.csv reaches epoch {self.summary['last_epoch']} of the {planned} {where}"
        saved = self._saved_epoch() if running else None  # train.py writes an epoch's row, then its checkpoint
        if saved is not None and saved < self.summary['last_epoch']:
            return (f"summary.csv reaches epoch {self.summary['last_epoch']} of the {planned} {where}, but its "
                    f"checkpoints hold epoch {saved} at most: train.py is saving the last one")
        return ''

    def _saved_epoch(self) -> Optional[int]:
        """The latest epoch (from 1) the run's ``last.pth.tar`` / ``model_best.pth.tar`` hold; 0 for a file cut
        short (being written) or of no epoch; None without either."""
        epochs = []
        for name in CHECKPOINTS:
            path = self.run_dir / name if self.run_dir else None
            if path is None or not path.is_file():
                continue
            try:
                epoch = read_checkpoint(path, mmap=True).epoch
            except (ValueError, OSError, RuntimeError, EOFError):
                epoch = None
            epochs.append(epoch + 1 if _whole(epoch) else 0)
        return max(epochs) if epochs else None

    def command_differs(self) -> List[str]:
        """What the recorded train.py command gives other than ``args.yaml`` records of model, kwargs, seed and lr,
        ``--flag value (args.yaml: value)``: train.py was started again in the run folder with other arguments (by
        hand, from the command edited), and trained the weights by those; [] when they agree or either does not say."""
        try:
            tokens = shlex.split(self.command or '')
        except ValueError:
            return []
        from .arg_types import kwarg_words
        given: Dict[str, Any] = {key: last_flag_value(tokens, '--' + key) for key in ('model', 'seed', 'lr')}
        words: List[str] = []
        if '--model-kwargs' in tokens:
            start = len(tokens) - 1 - tokens[::-1].index('--model-kwargs')  # argparse keeps the last
            words = list(itertools.takewhile(lambda token: not token.startswith('-'), tokens[start + 1:]))
            try:
                given['model_kwargs'] = kwarg_words(words)
            except ValueError:
                pass
        recorded = {k: v for k, v in self.args.items() if k != 'model_kwargs' or isinstance(v, dict)}
        return [f'--model-kwargs {" ".join(words)} (args.yaml: {_kwargs_text(recorded[key])})' if key == 'model_kwargs'
                else f'--{key} {given[key]} (args.yaml: {recorded[key]})' for key in settings_differ(given, recorded)]

    def extended_from(self) -> List[int]:
        """The epochs the run had trained under each schedule before its last (``[5]`` for a run of ``--epochs 5``
        resumed with ``--epochs 8``): a session that ended cleanly (exit 0) had trained its whole schedule; one that
        ended there short of the run's last epoch was extended. [] for a run of one schedule (or no record)."""
        return [end for end, _ in self.schedules()[:-1]]

    def schedules(self) -> List[Tuple[int, Any]]:
        """``(last epoch trained under it, from 1; train.py's --epochs for it)`` of each schedule of an extended run,
        the last included; [] for a run of one schedule (or no record). A schedule may train more epochs than its
        ``--epochs`` (:func:`scheduled_epochs`: ``--cooldown-epochs`` ...): each session's ``--epochs`` is the one
        ``sessions.json`` records, else the one its checkpoints' args record, else the one whose schedule (with
        ``args.yaml``'s other settings) ends where it ended; the last schedule's is ``args.yaml``'s."""
        last = (self.summary or {}).get('last_epoch')
        ends: Dict[int, Dict[str, Any]] = {}
        for s in self.sessions:
            span = s.get('epochs')
            if (s.get('status') == 'exited' and s.get('code') == 0 and isinstance(span, list) and len(span) == 2
                    and _whole(span[1]) and _whole(last) and 0 < span[1] < last):
                ends[span[1]] = s
        if not ends:
            return []
        given = self.args.get('epochs')
        saved = saved_args(self.run_dir) if self.run_dir and not all(
            _given_fits(s, end) for end, s in ends.items()) else []
        return [(end, self._session_epochs(ends[end], end, saved)) for end in sorted(ends)] + [
            (last, given if _whole(given) else last)]

    def _session_epochs(self, session: Dict[str, Any], end: int, saved: Sequence[Tuple[int, Dict[str, Any]]]
                        ) -> int:
        """train.py's ``--epochs`` of a session that ended cleanly at epoch ``end`` (from 1), by :meth:`schedules`'
        rule; ``saved``: the run's checkpoints' ``(epoch, args)`` (:func:`saved_args`)."""
        if _given_fits(session, end):
            return session['given_epochs']
        span = session.get('epochs')
        begin = span[0] if _whole(span[0]) else 0
        recorded = [a.get('epochs') for e, a in saved if begin <= e < end and a.get('model') == self.model]
        if recorded and _whole(recorded[-1]):
            return recorded[-1]
        return next((e for e in range(end, 0, -1) if scheduled_epochs({**self.args, 'epochs': e}) == end), end)

    def session_commands(self) -> List[str]:
        """The portable train.py command of each schedule of an extended run (:meth:`schedules`), in order: the
        recorded (last) command with that schedule's ``--epochs``, after the first with ``--resume`` of the run's
        ``last.pth.tar``. [] without a recorded command or for a run of one schedule."""
        schedules = self.schedules()
        if not (self.command and schedules):
            return []
        tokens = shlex.split(self.command)
        kept = [t for i, t in enumerate(tokens) if not (t == '--epochs' or t.startswith('--epochs=')
                                                        or (i and tokens[i - 1] == '--epochs'))]
        resume = ['--resume', f'OUTPUT/{last_flag_value(tokens, "--experiment") or "RUN"}/last.pth.tar']
        return [shlex.join(kept + (resume if i else []) + ['--epochs', str(epochs)])
                for i, (_, epochs) in enumerate(schedules)]

    def train_cwd(self) -> Optional[Path]:
        """train.py's working directory as the run folder shows it (see :func:`train_cwd`)."""
        return train_cwd(self.run_dir, self.args)

    def class_map_file(self) -> Optional[Path]:
        """Where train.py read the run's ``--class-map`` as timm's ``load_class_map`` looks for it: as given (a
        relative path in train.py's working directory, :meth:`train_cwd`), else in the training split's folder of
        ``--data-dir`` (or that folder itself; a relative one where that directory is known, :func:`train_path`);
        None when the run gave none or it is not there now.

        Raises:
            ValueError: a FIFO, socket or device there (see :func:`check_regular_file`); or a relative map where
                train.py's working directory is not known and this one holds a map of that name that is not the data
                folder's (which of them train.py read cannot be known).
        """
        given, data = self.args.get('class_map'), self.args.get('data_dir') or self.args.get('data')
        if not (given and isinstance(given, str)):
            return None
        cwd = self.train_cwd()
        split = str(self.args.get('train_split') or 'train').split('[')[0]
        root = train_path(self.run_dir, self.args, data) if isinstance(data, str) else None
        in_data = [p for p in ([root / split / given, root / given] if root else []) if p.exists()]
        what = "the run's class map (train.py's --class-map)"
        here = Path(given) if cwd is None else cwd / given
        found = here if here.exists() else next(iter(in_data), None)
        if found is not None:
            check_regular_file(found, what)
        if cwd is None and not Path(given).is_absolute() and here.exists():  # train.py's working directory, or not
            other = next(iter(in_data), None)
            if other is not None:
                check_regular_file(other, what)
            if other is None or not (here.is_file() and other.is_file() and filecmp.cmp(here, other, shallow=False)):
                source = self.run_dir / 'args.yaml' if self.run_dir else self.checkpoint
                raise ValueError(
                    f'{source} records --class-map {given}, relative to train.py\'s working directory, which the run '
                    f'does not record (its --output is absolute, or the run folder moved): {here.absolute()} here may '
                    f'not be the map train.py read' + (f' (it differs from {other}, in the data folder)' if other
                                                       else '') + '; allowed: run the command from another folder, '
                    'or the absolute path of the map train.py read as class_map in args.yaml')
        return found

    def foreign_checkpoint(self, args: Dict[str, Any], epoch: Any, metric: Any = None) -> str:
        """Why the checkpoint (its ``args``, ``epoch``, train.py's from 0, and ``metric``) is not of this run ('' when
        it may be): saved by a train.py of other model, kwargs, seed or lr than ``args.yaml`` records, at an epoch
        ``summary.csv`` does not list, or lists with another value of the metric train.py saves it by: another run's
        checkpoint copied into the folder. A session resumed here with other arguments writes the row of each epoch
        it saves, with the metric it saves (a recovery checkpoint, saved during an epoch, is not held against the
        rows)."""
        if not (self.run_dir and self.rows and args and _whole(epoch)) or self.checkpoint.name.startswith('recovery-'):
            return ''
        found = [f'{key} {args[key]!r} (args.yaml: {self.args[key]!r})' for key in settings_differ(args, self.args)]
        row = self.epoch_row(epoch)
        if not found:
            return ''
        summary = self.run_dir / 'summary.csv'
        whose = "another run's checkpoint (copied into the folder?), not this run's weights"
        allowed = "the run's own checkpoint put back, or that run's folder"
        if row is None:
            where = f'which {summary} does not list'
        else:
            name = str(args.get('eval_metric') or 'top1')
            listed = row.get(f'eval_{name}', row.get(f'train_{name}'))
            if not (isinstance(metric, (int, float)) and not isinstance(metric, bool) and listed is not None
                    and math.isfinite(metric) and math.isfinite(listed)
                    and not math.isclose(metric, listed, rel_tol=1e-6, abs_tol=1e-6)):
                return ''
            where = f'with {name} {metric:g} where {summary} lists {listed:g} for that epoch'
            # or this folder's own, saved before a session resumed from an earlier epoch with other arguments
            # wrote that epoch's row again
            whose = ("not the weights the run's rows describe (another run's checkpoint copied into the folder, or "
                     "one saved before a session resumed here from an earlier epoch with other arguments and wrote "
                     "that epoch's row again)")
            allowed = (f"a checkpoint of the session that wrote the rows ({self.run_dir / 'last.pth.tar'}), or that "
                       f"other run's folder")
        return (f"{self.checkpoint} was saved by a train.py with {'; '.join(found)}, at epoch {epoch + 1}, {where}: "
                f"{whose}; allowed: {allowed}")

    def with_checkpoint(self, arch: Optional[str], args: Dict[str, Any], epoch: Any = None, metric: Any = None
                        ) -> 'RunRecord':
        """The record completed by what the checkpoint holds (its ``arch`` and ``args``) where the folder said
        nothing: no ``args.yaml``, or one without ``model`` (the model and its kwargs then come from the
        checkpoint), or without ``seed``; its ``args`` are kept as :attr:`checkpoint_args`.

        Raises:
            ForeignCheckpoint: given the checkpoint's ``epoch`` (and ``metric``), another run's checkpoint
                (:meth:`foreign_checkpoint`).
        """
        foreign = self.foreign_checkpoint(args or {}, epoch, metric)
        if foreign:
            raise ForeignCheckpoint(foreign)
        record = replace(self, checkpoint_args=dict(args or {}))
        seed = (args or {}).get('seed')
        if record.seed is None and isinstance(seed, int) and not isinstance(seed, bool):  # args.yaml cut or edited
            record.seed = seed
        if self.model or not (arch or args):
            return record
        model = args.get('model') or arch
        if self.args:  # args.yaml without `model`: its other arguments stand
            kwargs = self.model_kwargs or dict(args.get('model_kwargs') or {})
            return _described(replace(record, model=model, model_kwargs=kwargs), self.marker)
        return _described(replace(record, args=dict(args), model=model,
                                  model_kwargs=dict(args.get('model_kwargs') or {})))

    def with_model(self, model: str, model_kwargs: Optional[Dict[str, Any]]) -> 'RunRecord':
        """The record for the model a user names: the run's kwargs unless ``model_kwargs`` are given (or the run
        trained another model)."""
        if model_kwargs is None:
            model_kwargs = self.model_kwargs if model == self.model else {}
        if model == self.model and model_kwargs == self.model_kwargs:
            return self
        return _described(replace(self, model=model, model_kwargs=dict(model_kwargs), family='', variant='custom'))

    def build_kwargs(self) -> Dict[str, Any]:
        """The keyword arguments train.py built the model with: ``--model-kwargs`` and the train.py arguments that
        shape the model outside them, ``in_chans`` (``--in-chans``, else ``--input-size``'s first) and
        ``global_pool`` (``--gp``), where set."""
        size = self.args.get('input_size')
        shaped = dict(in_chans=self.args.get('in_chans') or (size[0] if isinstance(size, list) and size else None),
                      global_pool=self.args.get('gp'))
        return {**{k: v for k, v in shaped.items() if v is not None}, **self.model_kwargs}

    def arch_kwargs(self) -> Dict[str, Any]:
        """:meth:`build_kwargs` less train.py's default ``in_chans`` (3) and a ``--gp`` that is the model's own pool
        (``token`` for ``sl_vit_32``): what a Table 2 row or a pretrained tag must match (a run of ``--in-chans 1`` or
        ``--gp avg`` is neither: the paper trained neither, a tag builds neither)."""
        kwargs = {k: v for k, v in self.build_kwargs().items() if (k, v) != ('in_chans', 3)}
        if 'global_pool' in kwargs and 'global_pool' not in self.model_kwargs and self.model:
            if kwargs['global_pool'] == _own_global_pool(self.model, self.model_kwargs):
                del kwargs['global_pool']
        return kwargs

    def started_from(self) -> Optional[str]:
        """The trained weights the run started from (train.py's ``--initial-checkpoint`` / ``--pretrained``, with its
        ``--pretrained-path``), else None: in ``args.yaml`` or the checkpoint's own args (a run resumed without them
        keeps them only there). A file by its name: what is said goes on public cards, this machine's folders do
        not."""
        for args in (self.args, self.checkpoint_args):
            if args.get('initial_checkpoint'):
                return f'--initial-checkpoint {Path(str(args["initial_checkpoint"])).name}'
            if args.get('pretrained'):  # from --pretrained-path's file where given, not the model's own weights
                path = args.get('pretrained_path')
                return '--pretrained' + (f' --pretrained-path {Path(str(path)).name}' if path else '')
        return None

    def table2_row(self) -> Optional[Tuple[str, str]]:
        """The Table 2 row the run is (:func:`~timm_sl.tools.paper.table2_row` of its architecture), or None: also
        for a run started from trained weights, as the paper trained every row from scratch."""
        return None if self.started_from() else table2_row(self.model, self.arch_kwargs(), self.dataset)


# train.py's defaults where timm's scheduler_kwargs assumes others (a recipe's settings name only some)
_SCHEDULE_DEFAULTS = {'sched': 'cosine', 'epochs': 300, 'decay_epochs': 90}


def reproduce_holding(run_dir: Optional[Path]) -> str:
    """The lock file of a ``timm-sl reproduce`` still running that trains ``run_dir`` (its train.py processes hold it
    too, should it have been killed), as a line names it; '' when none does (or the system cannot say: no ``fcntl``).
    The lock is held for all of a reproduce's ``runs/`` folder; the runs it trains are those :func:`mark_training`
    wrote into it (a run it skips, or one of an earlier reproduce beside them, is not its). The lock is tried shared
    and let go at once, as a second reproduce would find it."""
    if run_dir is None:
        return ''
    lock = Path(run_dir).parent / REPRODUCE_LOCK
    try:
        import fcntl
        handle = os.open(lock, os.O_RDONLY | os.O_NONBLOCK)
    except (ImportError, OSError):
        return ''
    try:
        fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        with os.fdopen(os.dup(handle), encoding='utf-8', errors='replace') as f:
            trains = f.read().splitlines()[1:]
        return str(lock) if Path(run_dir).name in trains else ''
    except OSError:
        return ''
    finally:
        os.close(handle)  # closing lets go of a lock taken here
    return ''


def mark_training(runs_dir: Path, names: Sequence[str]) -> None:
    """Write the run folders a reproduce holding ``runs_dir`` trains into its lock file, a name a line after the
    process id there (read by :func:`reproduce_holding`); nothing without a lock file."""
    lock = Path(runs_dir) / REPRODUCE_LOCK
    if not lock.is_file():
        return
    with open(lock, 'r+', encoding='utf-8') as f:
        pid = f.readline().strip()
        f.seek(0)
        f.truncate()
        f.write('\n'.join([pid, *names]) + '\n')


def scheduled_epochs(args: Dict[str, Any]) -> Any:
    """The epochs train.py trains for a run's arguments: its learning-rate schedule's length, as timm's
    ``create_scheduler_v2`` gives it to train.py (``--epochs`` plus ``--cooldown-epochs``, ``--warmup-epochs`` with
    ``--warmup-prefix``, ``--lr-cycle-limit`` cycles); ``--epochs`` itself where the schedule cannot be built (as
    train.py cannot: a ``wsd`` schedule longer than its ``--epochs``). ``args``: a run's ``args.yaml``, or a recipe
    with train.py arguments over it."""
    epochs = args.get('epochs')
    args = {**_SCHEDULE_DEFAULTS, **args}
    try:
        import warnings
        import torch
        from timm.scheduler import create_scheduler_v2, scheduler_kwargs
        optimizer = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1)  # the schedule's length only
        with warnings.catch_warnings():  # timm's deprecation of a schedule is train.py's to say, not a card's
            warnings.simplefilter('ignore')
            _, total = create_scheduler_v2(optimizer, **scheduler_kwargs(argparse.Namespace(**args)),
                                           updates_per_epoch=1)
    except Exception:  # noqa: BLE001 - an edited or another timm's args.yaml: its --epochs is what it plans
        return epochs
    return total if _whole(total) and total >= 1 else epochs


def train_cwd(run_dir: Optional[Path], args: Dict[str, Any]) -> Optional[Path]:
    """train.py's working directory as a run folder shows it: the folder its relative ``--output`` (train.py's default
    ``./output/train`` too) was made in, the run folder being ``OUTPUT/EXPERIMENT``; None when ``--output`` is
    absolute, or the run folder is not below a folder of that name (moved)."""
    output = args.get('output') or './output/train'
    if run_dir is None or not isinstance(output, str) or Path(output).is_absolute():
        return None
    parts = tuple(p for p in Path(output).parts if p != '.')
    base = Path(os.path.abspath(run_dir)).parent
    if '..' in parts or (parts and base.parts[-len(parts):] != parts):
        return None
    return Path(*base.parts[:len(base.parts) - len(parts)])


def train_path(run_dir: Optional[Path], args: Dict[str, Any], path: str) -> Optional[Path]:
    """A path train.py was given (``--data-dir``) as this process finds it: relative ones in train.py's working
    directory (:func:`train_cwd`); None for a relative one where that is not known."""
    if Path(path).is_absolute():
        return Path(path)
    cwd = train_cwd(run_dir, args)
    return cwd / path if cwd is not None else None


def _own_global_pool(model: str, model_kwargs: Dict[str, Any]) -> Optional[str]:
    """The global pool ``model`` builds with ``model_kwargs`` and no ``--gp`` (built without weights, on the meta
    device); None when it cannot be built."""
    import timm
    import torch
    try:
        with torch.device('meta'):
            return getattr(timm.create_model(model, **model_kwargs), 'global_pool', None)
    except Exception:  # noqa: BLE001 - a model that does not build has no pool of its own to compare with
        return None


def _described(record: RunRecord, marker: Optional[Dict[str, Any]] = None) -> RunRecord:
    """Fill the kwargs, family, variant and seed that follow from the args (and reproduce's marker)."""
    marker = marker or {}
    family = marker.get('family')
    if family is not None and record.model and family != family_of(record.model):  # not taken for another row's
        source = 'its args.yaml' if record.args.get('model') else 'its checkpoint'
        raise ValueError(f"{shown(Path(record.run_dir or '.') / DONE_MARKER)} records the family {family!r}, but the "
                         f"model of {source} ({shown(record.model)}) is of the family {family_of(record.model)!r}; "
                         f"allowed: a {DONE_MARKER} whose family is {family_of(record.model)!r} (or none)")
    record.family = (family if isinstance(family, str) else '') or (family_of(record.model) if record.model else '')
    record.variant = variant_of(record.family, record.model_kwargs)
    # with no model, the kwargs come with the checkpoint's model (with_checkpoint); a variant that is no name is none
    if isinstance(marker.get('variant'), str) and marker['variant'] and not record.model:
        record.variant = marker['variant']
    elif marker.get('variant'):  # reproduce's row; the kwargs beyond the row's own (-- --model-kwargs depth=1) aside
        keys = {k for kwargs in VARIANTS.get(record.family, {}).values() for k in kwargs}
        row = variant_of(record.family, {k: v for k, v in record.model_kwargs.items() if k in keys})
        if marker['variant'] != row:
            raise ValueError(f"{shown(Path(record.run_dir or '.') / DONE_MARKER)} records the variant "
                             f"{marker['variant']!r}, but the model kwargs of its args.yaml "
                             f"({_kwargs_text(record.model_kwargs)}) make {row!r}; allowed: a {DONE_MARKER} whose "
                             f"variant is {row!r} (or none)")
        record.variant = row
    record.seed = record.args.get('seed', record.seed)
    if record.dataset is None:
        record.dataset = _dataset_arg(record.args)
    return record


def _kwargs_text(kwargs: Dict[str, Any]) -> str:
    return ' '.join(f'{k}={v}' for k, v in kwargs.items()) or 'none'


# what train.py's --dataset calls an image folder or tar (timm's own words, its help's ImageFolder / ImageTar), not a
# dataset: timm reads the --data-dir folder for each
FOLDER_READERS = frozenset({'folder', 'image_folder', 'imagefolder', 'imagetar', 'image_tar'})
# what :func:`dataset_reader` answers for the two readers of an image folder, by the order they number its classes in
TIMM_FOLDER = 'folder'  # timm's: leaf folder names in natural order (c2 before c10)
TORCHVISION_FOLDER = 'torch/folder'  # torchvision's ImageFolder: folder names sorted
IMAGE_FOLDER_READERS = (TIMM_FOLDER, TORCHVISION_FOLDER)


def dataset_reader(dataset: Any) -> str:
    """The reader timm's ``create_dataset`` reads train.py's ``--dataset`` with. Only the part before the first '/'
    picks it, in any case; a name without one of the prefixes below (``''``, ``cifar10``, ``ImageFolder``,
    ``my/data``) is read from the --data-dir folder (or tar).

    Returns:
        :data:`TIMM_FOLDER` for timm's image folder reader; :data:`TORCHVISION_FOLDER` for torchvision's ImageFolder
        (``torch/folder``, ``torch/image_folder``: timm takes what follows the second '/', so ``torch/x/folder`` too);
        else the prefix of a reader of no image folder: ``torch`` (a torchvision dataset: ``torch/cifar10``),
        ``hfds``, ``hfids``, ``tfds`` or ``wds``.
    """
    text = str(dataset or '')
    prefix, sep, _ = text.partition('/')
    prefix = prefix.lower() if sep else ''
    if prefix == 'torch':
        return TORCHVISION_FOLDER if text.split('/', 2)[-1].lower() in ('folder', 'image_folder') else prefix
    return prefix if prefix in ('hfds', 'hfids', 'tfds', 'wds') else TIMM_FOLDER


def _dataset_arg(args: Dict[str, Any]) -> Optional[str]:
    """train.py's ``--dataset`` without its reader prefix (``torch/cifar10`` -> ``cifar10``); None for an image
    folder read as such (:func:`dataset_reader`): ``''``, torchvision's ImageFolder (``torch/image_folder``), or timm's
    folder reader named by a word of :data:`FOLDER_READERS` (``ImageFolder``). A torchvision dataset is named as timm
    reads it, in lower case (``torch/CIFAR10`` is CIFAR-10: ``cifar10``)."""
    text = str(args.get('dataset') or '')
    reader = dataset_reader(text)
    name = text.split('/', 2)[-1].lower() if reader == 'torch' else text.split('/')[-1]
    if reader == TORCHVISION_FOLDER or (reader == TIMM_FOLDER and name.lower() in FOLDER_READERS):
        return None
    return {'tinyimagenet': 'tiny-imagenet'}.get(name, name) or None


def recorded_dataset(args: Dict[str, Any], marker: Dict[str, Any], command: str = '') -> Optional[str]:
    """The dataset a run records itself, never one guessed from the folders around it: train.py's ``--dataset``
    (``args.yaml``) when it names one; else, for an image folder, the package recipe's dataset the run read as that
    recipe reads it (an image folder of the recipe's ``num_classes``): the one ``timm-sl reproduce`` records in
    ``done.json``, else the recipe its ``--config`` names (``done.json``'s command, else ``command.txt``). None when
    the run records none: e.g. the CIFAR-10 recipe run on another image folder (``-- --dataset ''``)."""
    named = _dataset_arg(args)
    if named:
        return named
    dataset = marker.get('dataset')
    dataset = dataset if isinstance(dataset, str) and dataset in DATASETS else None  # a list: no name
    if dataset is None:
        tokens = marker.get('command')
        if not (isinstance(tokens, list) and all(isinstance(t, str) for t in tokens)):
            try:
                tokens = shlex.split(command)
            except ValueError:  # an unbalanced quote: no command to read
                tokens = []
        config = last_flag_value(tokens, '--config')
        dataset = {recipe: name for name, (recipe, _) in DATASETS.items()}.get(Path(config).name) if config else None
    recipe = _recipe(dataset) if dataset else {}
    if not recipe or recipe.get('dataset') or recipe.get('num_classes') != args.get('num_classes'):
        return None  # the recipe reads torch/cifar10 (or another class count) where the run read an image folder
    return dataset


def prepared_dataset(folder: Union[str, Path]) -> Optional[Tuple[Path, str]]:
    """The record a ``timm-sl prepare-*`` command left in a data folder (``fashion_mnist.json``, ``svhn.json``) and
    the dataset it names; None when the folder holds none.

    Raises:
        IsADirectoryError / ValueError: a folder, or a FIFO, socket or device, where the record goes (not taken for no
            record: the dataset the folder holds would go unsaid), naming it.
    """
    from ._splits import FASHION_MNIST_INFO, SVHN_INFO
    for name, dataset in ((FASHION_MNIST_INFO, 'fashion-mnist'), (SVHN_INFO, 'svhn')):
        path = Path(folder) / name
        what = f'the record timm-sl prepare-{dataset} writes there (allowed: the file, or none)'
        if path.is_dir():
            raise IsADirectoryError(f'{path} is a folder; expected {what}')
        check_regular_file(path, what)
        if path.is_file():
            return path, dataset
    return None


def _recipe(dataset: str) -> Dict[str, Any]:
    """The package recipe of a dataset of :data:`DATASETS` as a mapping ({} for another name, or one not readable)."""
    if dataset not in DATASETS:
        return {}
    import yaml
    try:
        recipe = yaml.safe_load(read_text(recipe_path(dataset), 'a recipe'))
    except (OSError, ValueError, yaml.YAMLError):
        return {}
    return recipe if isinstance(recipe, dict) else {}


def given_dataset(where: Any, given: str, recorded: Optional[str], num_classes: Optional[int]) -> str:
    """The dataset a user names (``--dataset``) for a run, which applies only to a run that records none: the name of
    :data:`DATASETS` it spells (``tinyimagenet``, ``torch/cifar100``), else as given (data of the user's own).

    Raises:
        ValueError: the run records another dataset (``recorded``), or has ``num_classes`` classes where the named
            dataset has another count; naming the run (``where``), both and what is allowed.
    """
    name = _dataset_arg(dict(dataset=given)) or given
    name = next((d for d in DATASETS if d.replace('-', '') == name.lower().replace('-', '').replace('_', '')), name)
    if recorded and name != recorded:
        raise ValueError(f'{where} records the dataset {recorded!r}, not --dataset {given!r}; allowed: leave out '
                         f'--dataset (it names the dataset of runs that record none), or runs of {name!r}')
    classes = _recipe(name).get('num_classes')
    if _whole(classes) and _whole(num_classes) and classes != num_classes:
        fits = ', '.join(d for d in DATASETS if _recipe(d).get('num_classes') == num_classes) or 'none of ours'
        raise ValueError(f'{where} has {num_classes} classes, which cannot be --dataset {given!r} ({classes} classes); '
                         f'allowed: a dataset of {num_classes} classes ({fits}), or a name of your own data')
    return recorded or name


def _check_data_folder(run_dir: Optional[Path], args: Dict[str, Any], dataset: Optional[str],
                       recorded: Optional[str]) -> None:
    """Refuse a run whose data folder (``args.yaml`` ``data_dir`` / ``data``, where it is still there; a relative one
    where train.py's working directory is known, :func:`train_path`) holds the
    record of a ``timm-sl prepare-*`` command for another dataset than ``dataset``: e.g. Fashion-MNIST trained with
    the SVHN recipe would be released as SVHN, with SVHN's paper number."""
    folder = args.get('data_dir') or args.get('data')
    folder = train_path(run_dir, args, folder) if run_dir and isinstance(folder, str) else None
    prepared = prepared_dataset(folder) if dataset and folder is not None else None
    if prepared and prepared[1] != dataset:
        what, allowed = ((f'{dataset} (the dataset the run records)', f'runs whose data is {dataset}') if recorded else
                         (f'--dataset {dataset}', f'--dataset {prepared[1]}'))
        raise ValueError(f'{prepared[0]}: the data folder of {run_dir} holds {prepared[1]}, not {what}; '
                         f'allowed: {allowed}')


def read_run(
        checkpoint: Union[str, Path],
        summary: Optional[Union[str, Path]] = None,
        dataset: Optional[str] = None,
) -> RunRecord:
    """The record of a checkpoint's run, from the files beside it (each read once).

    Args:
        checkpoint: A checkpoint file, or a run folder (its :func:`run_checkpoint`); the checkpoint's folder is the
            run folder when it holds ``args.yaml``.
        summary: A ``summary.csv`` to use instead of the run folder's.
        dataset: The dataset name, when the run does not record it (:func:`given_dataset`); else
            :func:`recorded_dataset`.

    Raises:
        FileNotFoundError: no such checkpoint (or a folder without one), no such ``summary``.
        IsADirectoryError: ``args.yaml``, ``summary.csv`` or ``command.txt`` is a folder.
        ValueError: an ``args.yaml`` or ``summary.csv`` that is not train.py's, or short of the epochs its
            ``done.json`` records (:class:`CutSinceDone`); a ``dataset`` the run contradicts.
    """
    checkpoint = checkpoint_file(checkpoint)
    folder = checkpoint.parent
    args_yaml = folder / 'args.yaml'
    for name, what in (('args.yaml', "train.py's args.yaml"), ('summary.csv', "train.py's summary.csv"),
                       ('command.txt', "the run's train.py command line")):  # a link to nothing is not no file
        check_link_target(folder / name, what)
    run_dir = folder if args_yaml.exists() else None  # a folder there is refused by name, not taken for no run
    args = read_args_yaml(args_yaml) if run_dir else {}
    marker = read_done_marker(folder) if run_dir else {}
    if summary is None and run_dir and (folder / 'summary.csv').exists():  # a folder: refused, not skipped
        summary = folder / 'summary.csv'
    command_file = folder / 'command.txt'
    # a folder there is refused by name (read_text), not taken for no command
    command = read_text(command_file).strip() if run_dir and command_file.exists() else ''
    recorded = recorded_dataset(args, marker, command) if run_dir else None
    if dataset is not None:
        dataset = given_dataset(run_dir or checkpoint, dataset, recorded, args.get('num_classes'))
    dataset = dataset or recorded
    _check_data_folder(run_dir, args, dataset, recorded)
    rows = read_summary_rows(summary, unevaluated=True) if summary else []
    cut = cut_since_done(folder, rows, marker) if run_dir and summary == folder / 'summary.csv' else ''
    if cut:
        raise CutSinceDone(cut)
    sessions = read_sessions(folder) if run_dir else []
    fresh = [i for i, s in enumerate(sessions) if s.get('start') == 'new']
    record = RunRecord(checkpoint=checkpoint, run_dir=run_dir, args=args, model=args.get('model') or None,
                       model_kwargs=dict(args.get('model_kwargs') or {}), dataset=dataset,
                       command=portable_command(command) or None, rows=rows, marker=marker,
                       sessions=sessions[fresh[-1]:] if fresh else sessions)
    record.summary = summarize(summary, rows, record=record) if summary else None  # its epochs counted by the record
    return _described(record, marker)


def find_runs(paths: Sequence[Any], skipped: Optional[List[Tuple[Path, str]]] = None) -> List[Path]:
    """train.py run folders (holding a checkpoint of :data:`CHECKPOINTS`) at or below each path, sorted, each real
    folder once; folders this user may not read are passed, into ``skipped`` (refused without it: :func:`walk`).

    Raises:
        FileNotFoundError: a path does not exist, or holds no run.
    """
    runs = set()
    for path in map(Path, paths):
        if not path.exists():
            raise FileNotFoundError(f'{path} does not exist')
        if not path.is_dir():
            raise NotADirectoryError(f'{path} is {kind_of(path)}; allowed: a train.py run folder or a folder of them')
        # through linked run folders too; a folder of a checkpoint's name is found (run_checkpoint refuses it)
        found = {root for root, folders, names in walk(path, skipped=skipped) if set(CHECKPOINTS) & {*folders, *names}}
        # walk meets a run once, by the path it reaches first: a run linked from beside it is named by its own folder
        base = os.path.realpath(path)
        inside = {root: os.path.relpath(os.path.realpath(root), base) for root in found}
        found = {path / rel if rel != os.pardir and not rel.startswith(os.pardir + os.sep) else root
                 for root, rel in inside.items()}
        if not found:
            training = next((lock for lock in (reproduce_holding(Path(root))
                                               for root, _, names in walk(path, skipped=[]) if 'args.yaml' in names)
                             if lock), '')
            raise FileNotFoundError(f'{path} holds no train.py run (no {" or ".join(CHECKPOINTS)} at or below it)' + (
                f' yet: a timm-sl reproduce still running holds {training}, and has saved no checkpoint there; '
                f'allowed: the command again once it has' if training else ''))
        runs |= found
    unique: Dict[str, Path] = {}  # one run given twice (by a relative and an absolute path, or a link) is one run
    for run in sorted(runs):
        unique.setdefault(os.path.realpath(run), run)
    return sorted(unique.values())


def run_checkpoint(run_dir: Union[str, Path]) -> Path:
    """The checkpoint a run is released from: the best one, else the last.

    Raises:
        FileNotFoundError: the folder holds neither, or the first of them present is a link to nothing.
        IsADirectoryError: the first of them present is a folder.
    """
    run_dir = Path(run_dir)
    found = next((run_dir / c for c in CHECKPOINTS if (run_dir / c).exists() or (run_dir / c).is_symlink()), None)
    if found is not None and not found.exists():  # a link to nothing: not the next one, silently either
        raise FileNotFoundError(f'{found} is a link to {os.readlink(found)}, which does not exist; expected a '
                                f'checkpoint file (allowed: a link to one, or no {found.name})')
    if found is not None:
        check_regular_file(found, 'a checkpoint file')
    if found is not None and not found.is_file():  # not the next one, silently: the best checkpoint is this name
        raise IsADirectoryError(f'{found} is a folder; expected a checkpoint file (a train.py run folder holds its '
                                f'{" or ".join(CHECKPOINTS)} as files)')
    if found is None:
        raise FileNotFoundError(f'{run_dir} is a folder without a checkpoint ({" or ".join(CHECKPOINTS)}); allowed: '
                                f'a checkpoint file or a train.py run folder')
    return found


def checkpoint_file(path: Union[str, Path]) -> Path:
    """The checkpoint file ``path`` names: itself, a run folder's :func:`run_checkpoint`, or the ``model.safetensors``
    of a folder ``timm-sl export`` wrote (its ``config.json`` beside it, no train.py checkpoint).

    Raises:
        FileNotFoundError: nothing there, or a folder without a checkpoint.
    """
    path = Path(path)
    exported = path / 'model.safetensors'
    files = [path / 'model.safetensors', path / 'config.json']
    if path.is_dir() and any(f.exists() or f.is_symlink() for f in files) and \
            not any((path / c).exists() or (path / c).is_symlink() for c in CHECKPOINTS):  # an export's folder
        for file, other in zip(files, files[::-1]):  # each named: not 'a folder without a checkpoint'
            allowed = f'the {file.name} of a timm-sl export (export again)'
            if file.is_symlink() and not file.exists():
                raise FileNotFoundError(f'{shown(file)} is a link to {shown(os.readlink(file))}, which does not exist; '
                                        f'expected the {file.name} of a timm-sl export; allowed: a link to one, or '
                                        f'export again')
            check_regular_file(file, allowed)
            if file.is_dir():
                raise IsADirectoryError(f'{file} is a folder; expected the {file.name} of a timm-sl export; allowed: '
                                        f'export again')
            if not file.exists():
                raise FileNotFoundError(f'{path} holds {other.name} but no {file.name}; expected the {file.name} of a '
                                        f'timm-sl export beside it; allowed: export again, or a checkpoint file')
        return exported
    if path.is_dir():
        return run_checkpoint(path)
    check_regular_file(path, 'a checkpoint file')
    if not path.is_file():
        raise FileNotFoundError(f'checkpoint {path} does not exist')
    return path


@dataclass
class Checkpoint:
    """What a checkpoint file holds: the weights to use and what train.py recorded beside them."""
    path: Path
    state_dict: Dict[str, Any]  # name -> tensor
    source: str  # the key the weights came from ('plain' for a bare state dict, 'safetensors' for such a file)
    arch: Optional[str] = None
    args: Dict[str, Any] = field(default_factory=dict)  # train.py's arguments, when the checkpoint carries them
    epoch: Optional[int] = None
    metric: Optional[float] = None
    mapped: bool = False  # its tensors are memory-mapped from the file (read_checkpoint's mmap), not held in memory


_ZIP, _PICKLE = b'PK\x03\x04', b'\x80'  # how torch.save's archive (and its legacy pickle format) begin


def check_finite_weights(state_dict: Dict[str, Any], path: Union[str, Path]) -> None:
    """Refuse the weights of checkpoint ``path`` where they hold NaN or infinity (its run had diverged when it saved
    them): exported they output NaN whatever the card says, and charted from parameters they pass for trained ones.

    Raises:
        ValueError: naming the checkpoint, the tensors and what is allowed.
    """
    import torch
    bad = [k for k, v in state_dict.items() if v.is_floating_point() and not bool(torch.isfinite(v).all())]
    if bad:
        names = ', '.join(bad[:3]) + (', ...' if len(bad) > 3 else '')
        raise NonFiniteWeights(f'{path} holds NaN or infinite weights ({len(bad)} tensor(s): {names}): the run had '
                               f'diverged when it was saved; allowed: a checkpoint of an epoch before that '
                               f'(checkpoint-N.pth.tar of its run folder)')


def checkpoint_problem(path: Path) -> str:
    """Why train.py could not resume from a checkpoint ('' when it looks whole), without torch: torch.save writes a
    zip archive whose index is at its end (a cut file has none) and whose members carry checksums."""
    import zipfile
    try:
        with path.open('rb') as f:
            head = f.read(4)
        if head.startswith(_PICKLE):  # torch's legacy format: left to torch
            return ''
        if not head.startswith(_ZIP):
            return 'it is empty' if not head else 'it is not a torch.save archive'
        with zipfile.ZipFile(path) as archive:
            damaged = archive.testzip()
    except zipfile.BadZipFile as e:
        return f'not a whole zip archive: {e}'
    except (OSError, EOFError) as e:
        return str(e).splitlines()[0] if str(e).strip() else type(e).__name__
    return f'its member {damaged} is damaged' if damaged else ''


class _WeightsOnlyUnpickler(pickle._Unpickler):  # the Python unpickler: its opcodes can be restricted one by one
    """torch's weights-only reader for torch < 2.5, which has no ``safe_globals`` and refuses train.py's ``args``
    Namespace: the globals torch's reader allows and ``argparse.Namespace``, nothing else; objects made only by those
    globals (REDUCE) or as an empty Namespace (NEWOBJ), and state set only on a Namespace or an OrderedDict instance
    (BUILD, a dict of names: a state dict's ``_metadata``), so a pickle can neither call other code nor set attributes
    on anything else it loads (a BUILD on an allowed function would change it for the rest of the process)."""
    dispatch = dict(pickle._Unpickler.dispatch)

    def find_class(self, module: str, name: str) -> Any:
        from torch._weights_only_unpickler import _get_allowed_globals
        if (module, name) == ('argparse', 'Namespace'):
            return argparse.Namespace
        allowed = _get_allowed_globals()
        if f'{module}.{name}' in allowed:
            return allowed[f'{module}.{name}']
        raise pickle.UnpicklingError(f'Weights only load failed: {module}.{name} is not allowed')

    def _namespace_only(self) -> None:  # NEWOBJ: cls.__new__(cls, *args)
        args, cls = self.stack.pop(), self.stack.pop()
        if cls is not argparse.Namespace or args:
            raise pickle.UnpicklingError(f'Weights only load failed: making a {getattr(cls, "__name__", cls)} is not '
                                         f'allowed')
        self.append(argparse.Namespace())

    def _state_of_a_namespace_only(self) -> None:  # BUILD: inst.__setstate__(state) or its __dict__ updated
        state, inst = self.stack.pop(), self.stack[-1]  # a state dict's OrderedDict holds its _metadata so
        if type(inst) not in (argparse.Namespace, collections.OrderedDict) or not isinstance(state, dict) \
                or not all(isinstance(key, str) for key in state):
            raise pickle.UnpicklingError(f'Weights only load failed: setting the state of a {type(inst).__name__} '
                                         f'is not allowed')
        inst.__dict__.update(state)

    def _refused(self) -> None:
        raise pickle.UnpicklingError('Weights only load failed: an object built by its class (INST, OBJ, NEWOBJ_EX) '
                                     'is not allowed')

    dispatch[pickle.NEWOBJ[0]] = _namespace_only
    dispatch[pickle.BUILD[0]] = _state_of_a_namespace_only
    for _opcode in (pickle.INST, pickle.OBJ, pickle.NEWOBJ_EX):
        dispatch[_opcode[0]] = _refused
    del _opcode


class _WeightsOnlyPickle:
    """The ``pickle_module`` torch.load takes: :class:`_WeightsOnlyUnpickler` for its ``Unpickler`` and ``load``."""
    Unpickler = _WeightsOnlyUnpickler

    @staticmethod
    def load(f: Any, **kwargs: Any) -> Any:
        return _WeightsOnlyUnpickler(f, **kwargs).load()


def _weights_only_load(source: Any, **kwargs: Any) -> Any:
    """``torch.load(weights_only=True)`` with train.py's ``args`` Namespace allowed: through torch's ``safe_globals``
    (torch >= 2.5), else through :class:`_WeightsOnlyUnpickler`, which allows the same globals."""
    import torch
    if hasattr(torch.serialization, 'safe_globals'):
        with torch.serialization.safe_globals([argparse.Namespace]):
            return torch.load(source, map_location='cpu', weights_only=True, **kwargs)
    return torch.load(source, map_location='cpu', weights_only=False, pickle_module=_WeightsOnlyPickle, **kwargs)


def _load(path: Path, mmap: bool = False) -> Tuple[Any, bool]:
    """The file's content, read once, and whether its tensors are memory-mapped (``mmap``, for a zip archive), not
    read; one line naming the file (and why) when it is not a checkpoint."""
    import torch
    if path.stat().st_size == 0:
        raise ValueError(f'{path} is not a readable checkpoint (it is empty: 0 bytes; an interrupted save?)')
    if path.suffix == '.safetensors':
        import safetensors.torch
        try:
            return safetensors.torch.load_file(str(path), device='cpu'), False
        except Exception as e:  # noqa: BLE001 - safetensors raises several types for a bad file
            raise ValueError(f'{path} is not a readable safetensors file ({first_line(e)})') from e
    if mmap:  # torch maps a file by its name, a zip archive only: any other is read below, which names what is wrong
        try:
            return _weights_only_load(str(path), mmap=True), True
        except Exception:  # noqa: BLE001 - torch raises many types for a file it cannot map
            pass
    with path.open('rb') as f:
        head = f.read(64)
        if not (head.startswith(_ZIP) or head.startswith(_PICKLE)):
            try:
                head.decode('utf-8')
                kind = 'a text file'
            except UnicodeDecodeError:
                kind = f'a file that begins {head[:8]!r}'
            raise ValueError(f'{path} is not a readable torch checkpoint (it is {kind}; torch.save writes a zip '
                             f'archive)')
        f.seek(0)
        try:
            return _weights_only_load(f), False
        except Exception as e:  # noqa: BLE001 - torch raises many types for a bad file
            reason = first_line(e)
            if 'Weights only load failed' in reason:  # torch's lines of advice on unpickling code: not taken here
                reason = 'weights-only load refused it: it holds objects other than tensors and plain containers'
            else:
                reason = f'truncated or damaged: {reason}'
            raise ValueError(f'{path} is not a readable torch checkpoint ({reason})') from e


def read_checkpoint(path: Union[str, Path], mmap: bool = False) -> Checkpoint:
    """Read a train.py checkpoint, a plain state dict or a ``.safetensors`` file (or a run folder's checkpoint);
    ``mmap``: its tensors memory-mapped where torch can (a zip archive), for what needs their names and shapes only.

    Read once and safely: ``.safetensors`` with safetensors, anything else with ``torch.load(weights_only=True)``
    (train.py's ``args`` Namespace allowed explicitly, as timm's own loader allows it; before torch 2.5, through
    :class:`_WeightsOnlyUnpickler`), so nothing is unpickled beyond tensors and plain containers. The weights are picked
    as timm's ``load_state_dict(use_ema=True)`` picks them (EMA first; not for a run of ``--model-ema-force-cpu``, whose
    EMA weights train.py never evaluated) and cleaned by timm's ``clean_state_dict`` (DDP ``module.``, ``torch.compile``
    ``_orig_mod.``). timm's loader itself is not used: it drops the ``arch`` / ``args`` / ``epoch`` read here in the
    same pass.

    Raises:
        FileNotFoundError: no such file (or a folder without a checkpoint).
        ValueError: not a weights-only readable checkpoint, or it holds no state dict; one line naming the file.
    """
    import torch
    from timm.models import clean_state_dict
    path = checkpoint_file(path)
    content, mapped = _load(path, mmap)
    source, state = ('safetensors' if path.suffix == '.safetensors' else 'plain'), content
    saved = content.get('args') if isinstance(content, dict) else None
    saved = vars(saved) if isinstance(saved, argparse.Namespace) else saved
    saved = dict(saved) if isinstance(saved, dict) else {}
    for key, kind, ok in (('model', 'a model name', lambda v: isinstance(v, str)),
                          ('model_kwargs', 'a mapping of keyword arguments', lambda v: isinstance(v, dict))):
        if saved.get(key) is not None and not ok(saved[key]):  # as args.yaml's (read_args_yaml)
            raise ValueError(f'{shown(path)} is not a train.py checkpoint (its args {key}: {saved[key]!r} is not '
                             f'{kind}; edited?)')
    if isinstance(content, dict):
        # EMA weights kept on the CPU (--model-ema-force-cpu) are never evaluated: summary.csv's top-1, and the
        # choice of model_best, are the model's own weights'
        keys = STATE_KEYS[2:] if saved.get('model_ema_force_cpu') else STATE_KEYS
        key = next((k for k in keys if isinstance(content.get(k), dict)), None)
        if key is not None:
            source, state = key, content[key]
    if not isinstance(state, dict) or not state or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise ValueError(f'{path} holds no state dict (looked for {", ".join(STATE_KEYS)} or bare tensors)')
    meta = content if isinstance(content, dict) and source not in ('plain', 'safetensors') else {}
    arch, epoch = meta.get('arch'), meta.get('epoch')  # train.py counts epochs from 0: -1 is no epoch of a run
    metric = meta.get('metric')  # a number (NaN where the run diverged); anything else is no metric train.py saved
    metric = metric if isinstance(metric, (int, float)) and not isinstance(metric, bool) else None
    return Checkpoint(path=path, state_dict=clean_state_dict(state), source=source,
                      arch=arch if isinstance(arch, str) and arch else None, args=saved if meta else {},
                      epoch=epoch if _whole(epoch) and epoch >= 0 else None, metric=metric, mapped=mapped)


def saved_args(run_dir: Union[str, Path], skip: Sequence[Path] = ()) -> List[Tuple[int, Dict[str, Any]]]:
    """The ``(epoch, args)`` each checkpoint of a run folder records (``*.pth.tar``: train.py's ``checkpoint-N``,
    ``last``, ``model_best``, ``recovery-*``), by epoch, ``skip`` aside: the arguments of the session that saved it,
    where ``args.yaml`` is the last session's (a resume rewrites it, not them). Read memory-mapped; a file that is not
    a regular file, or not a readable train.py checkpoint, says nothing and is passed over."""
    skipped = {os.path.realpath(p) for p in skip}
    found = []
    for path in sorted(Path(run_dir).glob('*.pth.tar')):
        if not path.is_file() or os.path.realpath(path) in skipped:  # a FIFO is not read (it would hang)
            continue
        try:
            content, _ = _load(path, mmap=True)
        except (OSError, ValueError):
            continue
        args = content.get('args') if isinstance(content, dict) else None
        args = vars(args) if isinstance(args, argparse.Namespace) else args
        if isinstance(args, dict) and _whole(content.get('epoch')):
            found.append((content['epoch'], dict(args)))
    return sorted(found, key=lambda item: item[0])


def portable_command(command: str) -> str:
    """A recorded train.py command without this machine's paths: ``python``, ``train.py``, ``recipes/NAME``, DATA
    and OUTPUT placeholders, the file name alone of a :data:`PATH_NAMED` file (``--class-map map.txt``), no
    ``--resume`` (a resumed run's command is its first command plus ``--resume``).
    '' for a command cut inside a quote: no usable command, as :func:`recorded_dataset` reads it."""
    try:
        tokens = shlex.split(command)
    except ValueError:  # an unbalanced quote (command.txt cut short)
        return ''
    script = next((i for i, t in enumerate(tokens) if t.endswith('train.py')), None)
    if script is None:
        return command
    out = tokens[:script] + ['train.py']
    out[0] = 'python' if script > 0 and Path(tokens[0]).name.startswith('python') else out[0]
    rest = iter(tokens[script + 1:])
    for token in rest:
        option, joined, value = token.partition('=')  # --initial-checkpoint=PATH: a path as much as its two words
        if option.startswith('--') and option in (*PATH_PLACEHOLDERS, *PATH_NAMED, '--resume', '--config'):
            value = value if joined else next(rest, '')
            if option in PATH_PLACEHOLDERS:
                out += [option, PATH_PLACEHOLDERS[option]]
            elif option == '--config':
                out += [option, f'recipes/{Path(value).name}']
            elif option in PATH_NAMED:
                out += [option, Path(value).name]
        else:
            out.append(token)
    return shlex.join(out)
