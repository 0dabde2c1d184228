"""Export timm ``train.py`` checkpoints to Hugging Face Hub folders, and push them.

An exported folder is exactly what timm's own hub loading reads: ``model.safetensors`` + ``config.json`` (written by
timm's ``save_for_hf``: architecture, model_args, pretrained_cfg) + a ``README.md`` model card. It loads with
``timm.create_model('local-dir:DIR', pretrained=True)`` and, once pushed, ``'hf-hub:ORG/NAME'``.

Checkpoints and their run folders are read by :mod:`timm_sl.tools.runs` (weights-only; the run's record: arguments,
summary, dataset), models built from them by :mod:`timm_sl.tools.checkpoint`; :func:`export_run` writes a folder from
those two.
"""
import contextlib
import json
import math
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, NamedTuple, Optional, Sequence, Tuple, Union

import torch
from huggingface_hub import ModelCard, ModelCardData

from timm.models import save_for_hf

from .errors import ToolError, first_line, held_folder, make_folder, shown
from .files import check_not_link, flag_arg, kind_of, name_text
from .checkpoint import build_run_model, read_run_checkpoint, state_mismatch
from .paper import model_switches, switches_label
from .profile import count_macs, count_params
from .runs import (
    IMAGE_FOLDER_READERS, TORCHVISION_FOLDER, Checkpoint, NonFiniteWeights, RunRecord, check_finite_weights,
    check_regular_file,
    dataset_reader, diverged_text, format_top1, nan_epochs_text, read_checkpoint, read_class_map, read_text, saved_args,
    settings_differ, train_path)
from .train_args import format_recipe, recipe_args
from .transformers_compat import make_transformers_compatible

__all__ = ['Exported', 'check_export', 'check_revision', 'export_checkpoint', 'export_run', 'read_exported_config',
           'read_label_names', 'session_notes', 'training_data_config', 'exported_data_config', 'push_folder',
           'CITATION', 'EXPORTED_FILES']

EXPORTED_FILES = ('model.safetensors', 'config.json', 'README.md')  # what an export writes (and replaces)
PLACEHOLDER = 'ORG/NAME'  # the repository an exported card's usage names until it is pushed

CITATION = """@article{lee2021vision,
  title={Vision Transformer for Small-Size Datasets},
  author={Lee, Seung Hoon and Lee, Seunghyun and Song, Byung Cheol},
  journal={arXiv preprint arXiv:2112.13492},
  year={2021}
}"""


class NamesError(ValueError):
    """Label names refused for what they are (their count or order for the run), not for the run's own files."""


def _odd_label_name(names: Sequence[str]) -> Optional[str]:
    """The first of ``names`` that is blank or holds a line break of any kind (at its end too: ``'cat\\n'`` of a JSON
    list, which ``splitlines()`` gives as one line), which no class can be named by; None where there is none."""
    return next((n for n in names if not n.strip() or n.splitlines() != [n]), None)


def read_label_names(path: Union[str, Path]) -> List[str]:
    """Class names from a file: a JSON list, or one name per line (blank lines ignored).

    Raises:
        FileNotFoundError / IsADirectoryError: no such file, or a folder.
        ValueError: a JSON value that is not a list of strings, no names at all, a blank name or one of several lines,
            or a name given twice.
    """
    path = Path(path)
    text = read_text(path, 'the class names (a JSON list or one name per line)')
    if text.lstrip().startswith(('[', '{', '"')):
        try:
            names = json.loads(text)
        except json.JSONDecodeError as e:
            raise ValueError(f'{path} is not valid JSON ({e}); give a JSON list or one name per line') from e
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise ValueError(f'{path} holds JSON that is not a list of strings; give a JSON list or one name per line')
    else:
        # lines as an editor shows them: Python's splitlines() also breaks at a form feed, '\x1c' or U+2028 inside a
        # line, making one name two (every class after it named by the next one's name); those are refused below
        names = [line.strip() for line in text.split('\n') if line.strip()]
    if not names:
        raise ValueError(f'{path} holds no label names')
    odd = _odd_label_name(names)
    if odd is not None:  # class i would be named nothing, or a name would be cut across lines by who reads it so
        raise ValueError(f'{path} holds the label name {odd!r} (class {names.index(odd)}); allowed: a name of one line '
                         f'for each class, not blank')
    twice = next((n for i, n in enumerate(names) if n in names[:i]), None)
    if twice is not None:  # two classes under one name: a prediction of either reads the same (label2id keeps one)
        raise ValueError(f'{path} names two classes {twice!r} (classes {names.index(twice)} and '
                         f'{names.index(twice, names.index(twice) + 1)}); allowed: one name per class, each once')
    return names


def training_data_config(model: torch.nn.Module, train_args: Optional[Dict[str, Any]], where: Any = 'the run',
                         allowed: Optional[str] = None) -> Dict[str, Any]:
    """The data config the run trained with, resolved as train.py does over its arguments (the model's pretrained cfg
    filling what they leave unset), by timm's resolver for exported models: a run of ``--in-chans 1`` gets one
    channel's input size, mean and std, not the cfg's three.

    Raises:
        ValueError: arguments no training ran with (``--mean x``, ``--std 0``, an input size that is not three
            positive whole numbers, an interpolation timm does not know, ...), which a loader of the export would
            preprocess by; naming ``where`` (the run's args.yaml) and what is ``allowed`` there.
    """
    from timm.data import resolve_input_data_config

    def number(v: Any) -> bool:
        return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
    allowed = allowed or ('allowed: the args.yaml train.py wrote (numbers for mean / std / crop_pct, std above 0, an '
                          'input size of three positive whole numbers)')

    def refused(odd: str) -> ValueError:
        return ValueError(f'{where} gives the data config {odd}, which no training ran with and a loader of the export '
                          f'would preprocess by; {allowed}')
    given = dict(train_args or {})
    odd = next((f'{k}: {given[k]!r}' for k in ('mean', 'std') if given.get(k) is not None and not (
        isinstance(given[k], (list, tuple)) and all(map(number, given[k])))), None)  # train.py's: a list of floats
    if odd is not None:  # before timm's resolver, whose reason for a dict would be Python's 'unhashable type'
        raise refused(odd)
    try:
        config = resolve_input_data_config(model, {k: v for k, v in dict(train_args or {}).items() if not (  # train.py:
            k == 'img_size' and (train_args or {}).get('input_size') is not None)})  # --img-size unread beside this
    except (TypeError, ValueError, AssertionError) as e:  # timm's own reason: which setting it is, it says or not
        raise ValueError(f'{where} gives a data config timm cannot resolve ({first_line(e)}), which no training ran '
                         f'with; {allowed}') from None
    size, crop = config.get('input_size'), config.get('crop_pct', 1.)
    odd = next((f'{k}: {config.get(k)!r}' for k, ok in (
        ('input_size', isinstance(size, (list, tuple)) and len(size) == 3
         and all(_whole(v) and v > 0 for v in size)),
        ('mean', isinstance(config.get('mean'), (list, tuple)) and all(map(number, config['mean']))),
        ('std', isinstance(config.get('std'), (list, tuple)) and all(number(v) and v > 0 for v in config['std'])),
        ('crop_pct', crop is None or (number(crop) and crop > 0 and _resized_side(size, crop) >= 1)),
        ('interpolation', isinstance(config.get('interpolation', ''), str))) if not ok), None)
    if odd is not None:
        raise refused(odd)
    from timm.data.transforms import str_to_interp_mode
    try:  # timm's eval transform looks it up (train.py's too): 'random' is a train interpolation only
        str_to_interp_mode(config['interpolation'])
    except KeyError:
        raise ValueError(f'{where} gives the interpolation {config["interpolation"]!r}, which timm does not know; '
                         f'{allowed}') from None
    return config


def _resized_side(size: Any, crop: float) -> float:
    """The side timm's eval transform resizes an image to before its crop (the input side / ``crop_pct``): below 1 no
    image can be preprocessed (a crop_pct of 1e9); infinite where the input size is not numbers (refused as that)."""
    try:
        return min(size[-2:]) / crop
    except (TypeError, ValueError, ZeroDivisionError):
        return math.inf


def install_note() -> str:
    """How a card's reader installs timm_sl: ``pip install git+URL`` when the installed package names its source
    repository (``[project.urls]``), else from a checkout of the source. No placeholder a reader would have to fill."""
    from importlib import metadata
    try:
        urls = metadata.metadata('timm-sl').get_all('Project-URL') or []
    except metadata.PackageNotFoundError:
        urls = []
    source = next((u.split(',', 1)[1].strip() for u in urls if u.lower().startswith(('source', 'repository'))), None)
    how = (f'`pip install git+{source}`' if source else
           'from a checkout of its source (`pip install .` in that folder)')
    return (f'timm_sl is not published on PyPI: install it {how}. Installing it registers the `sl_` models with timm, '
            f'so `timm.create_model` finds them without importing timm_sl.')


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _batch_text(world: Any, batch: Any, accum: Any) -> str:
    """A session's batch: ``world`` processes (None: not recorded) x ``batch`` (per process) x ``accum`` steps."""
    accum = accum or 1
    steps = f' x {accum} accumulation steps' if accum != 1 else ''
    if not _whole(world):
        return f'batch_size {batch}{steps} on processes the run did not record'
    total = f' = global batch {world * batch * accum}' if _whole(batch) and _whole(accum) else ''
    return f'{world} process{"es" * (world != 1)} x batch_size {batch}{steps}{total}'


def _epochs_text(epochs: Sequence[int]) -> str:
    """Checkpoint epochs (train.py's, from 0) as a card says them, from 1."""
    lo, hi = min(epochs) + 1, max(epochs) + 1
    return f'epoch {lo}' if lo == hi else f'epochs {lo}-{hi}'


def _other_sessions(others: Sequence[Tuple[int, Dict[str, Any]]], said: Any, seen: Sequence[Any]) -> List[str]:
    """``, another session (its checkpoints of epochs ...) VERB X`` for each value ``said(args)`` of the run's other
    checkpoints (``others``: :func:`~timm_sl.tools.runs.saved_args`) that is none of ``seen`` (None: nothing to say)."""
    groups: Dict[str, List[Any]] = {}
    for epoch, args in others:  # an epoch of the run folder's checkpoints, or the name of the run it was resumed from
        text = said(args)
        if text is not None and text not in seen:
            groups.setdefault(text, []).append(epoch)
    said_of = []
    for text, epochs in groups.items():
        ours = [e for e in epochs if not isinstance(e, str)]
        whose = [f'another session (its checkpoints of {_epochs_text(ours)})'] if ours else []
        said_of.append(f', {" and ".join(whose + [e for e in epochs if isinstance(e, str)])} {text}')
    return said_of


def _resumed_run(record: RunRecord) -> List[Tuple[str, Dict[str, Any]]]:
    """``(its name as a card says it, its args)`` of the checkpoint a run resumed into a new folder resumed from
    (whose session trained the run's first epochs, in another folder); [] for a run not resumed from another folder,
    or where that checkpoint is not at hand, records no args or is no longer the one it resumed from
    (:meth:`~timm_sl.tools.runs.RunRecord.resume_changed`: :func:`_changed_resume` says so)."""
    path = record.resume_checkpoint() if record.run_dir else None
    if path is None or os.path.realpath(path.parent) == os.path.realpath(record.run_dir):  # its own: in ``others``
        return []
    if record.resume_changed():  # its run trained on: another epoch's args, not those of the epochs resumed from
        return []
    try:
        saved = read_checkpoint(path, mmap=True)
    except (OSError, ValueError):
        return []
    epoch = f', epoch {saved.epoch + 1}' if _whole(saved.epoch) else ''
    return [(f"the run it was resumed from (`{record.args['resume']}`{epoch})", dict(saved.args))] if saved.args else []


def _changed_resume(record: RunRecord) -> str:
    """For a run resumed into a new folder from a checkpoint that is no longer the one it resumed from (see
    :meth:`~timm_sl.tools.runs.RunRecord.resume_changed`), a card's clause saying so ('' for none)."""
    path = record.resume_checkpoint() if record.run_dir else None
    if path is None or os.path.realpath(path.parent) == os.path.realpath(record.run_dir):
        return ''
    why = record.resume_changed()
    return (f"`{record.args['resume']}` cannot be taken for the checkpoint this run resumed from ({why}), so the "
            f"arguments of the session that trained those epochs are not known") if why else ''


def _batch_of(args: Dict[str, Any], record: RunRecord, world: Any = None) -> Tuple[Any, Any, Any]:
    """A session's (processes, batch_size, accumulation steps) from its args, ``record.args``'s where unset."""
    return (args.get('world_size', world), args.get('batch_size', record.args.get('batch_size')),
            args.get('grad_accum_steps', record.args.get('grad_accum_steps')) or 1)


def _resumed_batch(record: RunRecord, saved: Dict[str, Any], last_world: Any,
                   others: Sequence[Tuple[int, Dict[str, Any]]] = ()) -> List[str]:
    """For a run resumed with another batch or process count, each session's batch as a card's sentence ([] for
    none): ``saved``, the exported checkpoint's args; ``args.yaml`` and ``last_world`` (``last.pth.tar``'s
    ``world_size``) the last session's; ``others``, the args of the run's other checkpoints, by epoch."""
    world = saved.get('world_size')
    ours = _batch_of(saved, record)
    last = (last_world, record.args.get('batch_size', ours[1]), record.args.get('grad_accum_steps', ours[2]) or 1)
    more = _other_sessions(others, lambda args: f'on {_batch_text(*_batch_of(args, record))}',
                           [f'on {_batch_text(*b)}' for b in (ours, last)])
    if not ((_whole(last[0]) and _whole(world) and last[0] != world) or last[1:] != ours[1:] or more):
        return []
    return [f'The run was resumed with another batch: the session that saved these weights trained on '
            f'{_batch_text(*ours)}, its last session (whose arguments the recipe above gives) on '
            f'{_batch_text(*last)}{"".join(more)}; no one train.py run of this recipe reproduces these weights.', '']


def _distributed(record: RunRecord, saved: Dict[str, Any]) -> List[str]:
    """The processes a distributed run trained on (``saved``: the exported checkpoint's args, ``world_size`` there as
    train.py writes ``args.yaml`` before it knows them), whose global batch the recipe's ``batch_size`` is not."""
    world = saved.get('world_size')
    if not (_whole(world) and world > 1):
        return []
    _, batch, accum = _batch_of(saved, record)
    total = f' = {world * batch * accum}' if _whole(batch) and _whole(accum) else ''
    return [f'Trained on {world} processes (distributed data parallel): `batch_size` is per process, the global '
            f'batch was {world} x batch_size' + (f' x {accum} accumulation steps' if accum != 1 else '')
            + f'{total}; one process running this recipe trains with a {world} times smaller batch.', '']


# arguments a resumed session may not share with the one that saved the weights but that another line says (the
# batch, extended epochs), that check_same_run compares (the model's), or that train.py fills in when unset
_SESSION_SKIP = frozenset({'epochs', 'batch_size', 'grad_accum_steps', 'model', 'model_kwargs', 'num_classes',
                           'in_chans', 'input_size', 'gp', 'dataset', 'lr_base_scale', 'dist_bn'})


def _other_session_args(record: RunRecord, saved: Dict[str, Any], defaults: Optional[Dict[str, Any]],
                        others: Sequence[Tuple[int, Dict[str, Any]]] = ()) -> List[str]:
    """The recipe arguments the last session (``args.yaml``) gave otherwise than the session that saved the weights
    (``saved``: the checkpoint's args) or another session (``others``: the args of the run's other checkpoints), as
    a card's sentence ([] for none): the recipe is the last session's."""
    def norm(value: Any) -> Any:
        return list(value) if isinstance(value, tuple) else value

    def differ(args: Dict[str, Any]) -> List[str]:
        keys = {*recipe_args(record.args, defaults), *recipe_args(args, defaults)} - _SESSION_SKIP
        if not record.extended_from():  # no sessions.json to say the run was extended: its checkpoints' epochs say it
            keys |= {'epochs'} & {*record.args, *args}
        if _resumed_optimizer(args) or _resumed_optimizer(record.args):  # not the settings it used: see
            keys -= set(_OPTIMIZER_KEYS)  # _optimizer_note
        return [k for k in sorted(keys) if k in args and record.args.get(k) not in (None, '')
                and norm(args[k]) != norm(record.args.get(k))]

    def said(args: Dict[str, Any]) -> Optional[str]:
        keys = differ(args)
        return 'with ' + ', '.join(f'`{k}: {args[k]!r}`' for k in keys) if keys else None

    if not saved:
        return []
    ours = said(saved)
    more = _other_sessions(others, said, [ours])
    if not (ours or more):
        return []
    last = "its last session's"
    ours = f'{ours}, where the recipe above gives {last}' if ours else f'with the recipe above, {last}'
    return [f'The run was resumed with other arguments: the session that saved these weights trained {ours}'
            f'{"".join(more)}; no one train.py run of this recipe reproduces these weights.', '']


# the optimizer settings a session resumed with the optimizer's state does not use: train.py loads them with that
# state (its param groups), after it built the optimizer from them and before its scheduler takes their lr as its base
_OPTIMIZER_KEYS = ('lr', 'weight_decay', 'momentum', 'opt_eps', 'opt_betas')


def _resumed_optimizer(args: Dict[str, Any]) -> bool:
    """The session resumed with the optimizer's state (``--resume`` without ``--no-resume-opt``)."""
    return bool(args.get('resume')) and not args.get('no_resume_opt')


def _resumed_from(record: RunRecord) -> Optional[Dict[str, Any]]:
    """The args of the session that built the optimizer a run resumed into this folder trained with: ``--resume``'s
    checkpoint (a relative one in train.py's working directory), and so on back while that one resumed with the
    optimizer's state too; None where one of them is not at hand (moved, or pruned by ``--checkpoint-hist``)."""
    args, seen = record.args, set()
    if _changed_resume(record):  # not the checkpoint it resumed from: not its optimizer's settings either
        return None
    while _resumed_optimizer(args):
        path = record.resume_checkpoint(args) if record.run_dir else None
        if path is None or os.path.realpath(path) in seen:
            return None
        seen.add(os.path.realpath(path))
        try:
            args = read_checkpoint(path, mmap=True).args
        except (OSError, ValueError):
            return None
    return args if args is not record.args else None


def _optimizer_note(record: RunRecord, sessions: Sequence[Tuple[Any, Dict[str, Any]]]) -> List[str]:
    """For a last session (``args.yaml``) resumed with the optimizer's state and given other optimizer settings
    (``--lr``) than those in that state, which train.py did not use, a card's sentence naming those it used: the
    settings of the latest session that built its optimizer anew, from scratch or with ``--no-resume-opt``
    (``sessions``: ``(epoch, args)`` of the run's checkpoints); [] for none, or where no checkpoint of it is left."""
    if not _resumed_optimizer(record.args):
        return []
    built = [(e, a) for e, a in sessions if _whole(e) and not _resumed_optimizer(a)]
    first = max(built, key=lambda s: s[0])[1] if built else _resumed_from(record)

    def norm(value: Any) -> Any:
        return list(value) if isinstance(value, tuple) else value
    keys = [k for k in _OPTIMIZER_KEYS if first and first.get(k) is not None and record.args.get(k) is not None
            and norm(first[k]) != norm(record.args[k])]
    if not keys:
        return []
    given = ', '.join(f'`{k}: {record.args[k]!r}`' for k in keys)
    used = ', '.join(f'`{k}: {first[k]!r}`' for k in keys)
    return [f"The last session resumed the run with the optimizer's state (`--resume` without `--no-resume-opt`), "
            f"which keeps the optimizer settings the run trained with before: it trained with {used}, not the "
            f"{given} the recipe above gives (train.py did not use them; summary.csv's lr column shows the rates "
            f"used).", '']


def session_notes(record: RunRecord, checkpoint: Checkpoint,
                  train_defaults: Optional[Dict[str, Any]] = None) -> Tuple[List[str], List[str]]:
    """What a card says of a resumed run whose sessions trained otherwise than the one that saved ``checkpoint``:
    ``(batch, arguments)`` sentences (see :func:`_resumed_batch`, :func:`_other_session_args`; [] for none), from
    ``args.yaml`` (the last session's) and the args every checkpoint of the run folder records."""
    saved = dict(checkpoint.args or {})
    # a last session that did not resume is the folder's whole run: a train.py run started again with the same
    # --experiment leaves checkpoints of the run it replaced, of other arguments, that are none of this run's sessions
    resumed = bool(record.args.get('resume'))
    others = saved_args(record.run_dir, skip=[checkpoint.path]) if record.run_dir and resumed else []
    same = ('model', 'model_kwargs', 'num_classes')  # a checkpoint of another model there is another run's
    others = [(epoch, args) for epoch, args in [*others, *_resumed_run(record)]
              if all(args.get(k) == saved.get(k) for k in same)]
    return (_resumed_batch(record, saved, _last_world_size(record, checkpoint), others),
            _other_session_args(record, saved, train_defaults, others)
            + _optimizer_note(record, [*others, (checkpoint.epoch, saved)]))


def _recipe_section(record: RunRecord, train_defaults: Optional[Dict[str, Any]],
                    saved: Optional[Dict[str, Any]] = None,
                    notes: Tuple[List[str], List[str]] = ([], [])) -> List[str]:
    """The card's recipe: what differs from train.py's defaults when they are known, else the run's arguments; with
    the processes of a distributed run (``saved``: the exported checkpoint's args) or what :func:`session_notes` says
    (``notes``) of a run resumed otherwise."""
    if not record.args:
        return []
    ddp = (notes[0] or _distributed(record, dict(saved or {}))) + notes[1]
    recipe = format_recipe(recipe_args(record.args, train_defaults)).rstrip()
    title = ("train.py arguments that differ from train.py's defaults" if train_defaults is not None else
             "the run's train.py arguments as recorded, less switches left off, paths, machine and logging; timm's "
             "train.py was not at hand to compare with its defaults")
    schedules = record.schedules()  # (epochs trained under it, its --epochs): a cool-down trains more than those
    extended = []
    if schedules:
        (trained, given), last = schedules[0], schedules[-1][1]
        extended = [f'`epochs: {last}` is the last session\'s: the run was extended from {trained} epochs (its first '
                    f'{trained} ran under a schedule of `--epochs {given}`, then it was resumed), so one train.py run '
                    f'of this recipe does not reproduce it exactly.', '']
    return [f'## Training recipe ({title})', '', '```yaml', recipe, '```', '', *ddp, *extended]


def _card_data(record: RunRecord) -> ModelCardData:
    """The card's YAML header, by huggingface_hub (what the Hub indexes: library, license, tags, data, metric)."""
    measured = bool(record.summary and record.summary.get('best_top1') is not None and not record.unmeasured_top1())
    return ModelCardData(library_name='timm', license='apache-2.0',
                         tags=['image-classification', 'timm', 'timm_sl'],
                         datasets=[record.dataset] if record.dataset else None,
                         metrics=['accuracy'] if measured else None)


def _variant_line(model: torch.nn.Module) -> List[str]:
    """The card's line saying what the model's SPT / LSA switches make it (``SL``, ``baseline``, ``SL w/o Spool``,
    an ablation tag), as reports name it; none for a model without them."""
    switches = model_switches(model)
    if switches is None:
        return []
    said = ', '.join(f'{name} {"on" if switches[key] else "off"}' for name, key in (
        ('SPT', 'spt'), ('LSA', 'lsa'), ('SPT pooling', 'spt_pool')) if key != 'spt_pool' or hasattr(model, 'spt_pool'))
    return [f'- Variant: {switches_label(switches)} ({said})']


def _model_card(record: RunRecord, model: torch.nn.Module, source: str, recipe: Sequence[str],
                repo_id: str = PLACEHOLDER, extra: Sequence[str] = (), epoch: Any = None) -> ModelCard:
    """The model card: huggingface_hub's ``ModelCard`` with :func:`_card_data` as its header; ``epoch``: the one the
    checkpoint records (train.py's, from 0)."""
    cfg = model.pretrained_cfg
    name, dataset, summary = record.model, record.dataset, record.summary
    arch = {k: v for k, v in record.arch_kwargs().items() if k != 'num_classes'}  # --in-chans 1 / --gp named too
    variant = ', '.join(f'{k}={v}' for k, v in arch.items()) or 'SPT + LSA'
    what = (f"`{arch.get('base')}` converted by `slify` ({variant})" if name == 'slify' else f'`{name}` ({variant})')
    start = record.started_from()  # the recipe leaves out --initial-checkpoint (a path): said here
    trained = f'fine-tuned from trained weights ({start}), not trained from scratch,' if start else 'trained'
    class_map = _read_class_map(record)  # the recipe leaves it out (a path): said here
    lines = [
        f'# {name}' + (f' ({dataset})' if dataset else ''), '',
        f'A {what} image classifier from *Vision Transformer for Small-Size Datasets* (Lee, Lee &'
        f" Song, 2021), {trained} with timm's train.py and exported with `timm-sl export`.", '',
        '## Model details', '',
        *_variant_line(model),
        f'- Parameters: {count_params(model) / 1e6:.2f} M',
        f'- MACs: {count_macs(model, cfg["input_size"]) / 1e6:.1f} M at {"x".join(map(str, cfg["input_size"]))}',
        f'- Classes: {model.num_classes}' + (
            f" numbered by the class map the run trained with (`--class-map {Path(str(class_map)).name}`): class i is "
            f"the map's class i, not the i-th class folder in sorted order" if class_map else ''),
        f'- Preprocessing (as trained): mean {tuple(cfg["mean"])}, std {tuple(cfg["std"])}, '
        f'{cfg["interpolation"]} interpolation, crop_pct {cfg.get("crop_pct")}',
        f'- Weights: `{source}` of the training checkpoint' + (' (EMA)' if 'ema' in source else ''), '',
    ]
    interval = record.val_interval()
    epochs = summary and summary['epochs']  # the report's and results.json's count
    bound = bool(record.rows) and record.epochs_bound()  # resumed off --val-interval's grid, from a checkpoint not here
    epochs = f'up to {epochs}' if bound else epochs
    if summary and not summary.get('evaluated', True):
        lines += ['## Results', '', f"Not evaluated: the run trained {epochs} epochs without a validation "
                  "split (train.py's summary.csv records no top-1), so no accuracy is known.", '']
    elif summary and summary['best_top1'] is None:
        lines += ['## Results', '', f"No epoch of the {epochs} run has a finite top-1 (NaN: the run "
                  'diverged); these weights are not a trained model.', '']
    elif summary:
        weights = record.weights_result(epoch)
        first = record.first_epoch()  # > 1: resumed from another folder's checkpoint, or begun at --start-epoch
        lines += ['## Results', '', '| metric | value |', '|---|---|']
        if weights['epoch'] is not None:
            later = weights['epoch'] > summary['last_epoch']  # copied mid-run: the checkpoint is newer than the summary
            of = f' (summary.csv ends at epoch {summary["last_epoch"]})' if later else f' of {summary["last_epoch"]}'
            of += ', saved during it' if weights['midway'] else ''
            lines += [f'| these weights: epoch (counted from 1) | {weights["epoch"]}{of}'
                      + ((' (the best listed epoch)' if first > 1 else ' (the best evaluated epoch)' if interval > 1
                          else ' (the best epoch)') if weights['is_best'] else '') + ' |',
                      f'| these weights: top-1 (%) | {format_top1(weights["top1"])} |']
        lines += [f'| best top-1 (%) | {summary["best_top1"]:.2f} |']
        if summary.get('best_top5') is not None:
            lines.append(f'| top-5 at that epoch (%) | {summary["best_top5"]:.2f} |')
        # train.py --val-interval N: summary.csv lists every N-th epoch (and the last) of those the run trained
        listed = (f' (evaluated every {interval} epochs and after the last: `--val-interval {interval}`; summary.csv '
                  f'lists {len(record.rows)})') if interval > 1 else ''
        lines += [f'| best epoch (counted from 1) | {summary["best_epoch"]} of {summary["last_epoch"]} |',
                  f'| epochs run | {epochs}{listed} |', '', *([weights['note'], ''] if weights['note'] else [])]
        diverged = diverged_text(summary)  # NaN from an epoch on, to the end: the best is of an epoch before it
        if diverged:
            lines += [f'The run {diverged} and stayed so to its last epoch ({summary["last_epoch"]}): the best top-1 '
                      f'above is of an epoch before it, and the recipe below, run to its end, gives NaN weights.', '']
        unmeasured = record.unmeasured_top1()  # train.py's --tta: its validation makes no augmented copies
        if unmeasured:
            lines += [f"This run's top-1 were {unmeasured}; they are not these weights' top-1 on the validation "
                      f"split.", '']
        start = record.args.get('start_epoch')
        if first > 1 and not record.args.get('resume') and start == first - 1:  # train.py --start-epoch, no resume
            lines += [f"summary.csv lists epochs {first}-{summary['last_epoch']} only: the run began at epoch {first} "
                      f"(`--start-epoch {start}`, its learning-rate schedule {start} epochs in), with no epoch trained "
                      f"before it.", '']
        elif first > 1:
            resume = record.args.get('resume')
            began = (f'ran in another run folder (this one was resumed from its `{Path(str(resume)).name}`'
                     + (', not at hand to say at which epoch' if bound else '') + '), whose summary.csv holds their '
                     'top-1' if resume else 'are not in it')
            covers = 'covers at most epochs {}-{}' if bound else 'lists epochs {}-{} only'
            changed = _changed_resume(record)
            lines += [f"summary.csv {covers.format(first, summary['last_epoch'])}: the run's first {first - 1} "
                      f"epoch{'s' * (first > 2)}{' or more' if bound else ''} {began}; the best top-1 above is the "
                      f"best of the listed epochs" + (f"; {changed}." if changed else '.'), '']
    unfinished = record.unfinished() if summary else ''  # stopped, or still running, short of its --epochs
    if unfinished:
        lines += [f'The run did not train its planned epochs ({unfinished}): the results above are of the epochs it '
                  f'ran, not of the recipe below run to its end.', '']
    lines += [*extra, *recipe]
    lines += [
        '## Usage', '', install_note(), '', '```python', 'import timm',
        f"model = timm.create_model('hf-hub:{repo_id}', pretrained=True).eval()",
        'config = timm.data.resolve_data_config({}, model=model)  # the training mean / std / size',
        'transform = timm.data.create_transform(**config)',
        *(["x = transform(image.convert('L')).unsqueeze(0)  # a PIL image, as one channel: trained on grey images"]
          if cfg['input_size'][0] == 1 else []), '```', '',
        '## Intended use', '',
        'Image classification on data like the training set, and a starting point for fine-tuning on small datasets.'
        ' Not evaluated for robustness, fairness or any safety-critical use.', '',
        '## Citation', '', '```bibtex', CITATION, '```', '',
    ]
    return ModelCard(f'---\n{_card_data(record).to_yaml()}\n---\n\n' + '\n'.join(lines))


STAGING = '.timm-sl-export-'  # the hidden folder of --out an export writes its files in before moving them there


def _leftovers(out_dir: Path) -> List[Path]:
    """The hidden folders of an export killed outright (SIGKILL, out of memory) in ``out_dir``: named as an export
    names its :data:`STAGING` folder, holding nothing but files an export writes there."""
    if not out_dir.is_dir():
        return []
    return [path for path in sorted(out_dir.iterdir())
            if path.name.startswith(STAGING) and path.is_dir() and not path.is_symlink()
            and all(f.name in EXPORTED_FILES and f.is_file() and not f.is_symlink() for f in path.iterdir())]


@contextlib.contextmanager
def _held(out_dir: Path) -> Iterator[None]:
    """Hold ``out_dir`` while an export writes there (:func:`~timm_sl.tools.errors.held_folder`), its
    :func:`_leftovers` removed once held: another export holding it would be writing in them.

    Raises:
        BlockingIOError: another export or release holds it, one line.
    """
    with held_folder(out_dir, f'--out {out_dir} is being written by another timm-sl export or release still running: '
                              f'the files of both would be mixed; allowed: wait for it to end, or another --out'):
        for leftover in _leftovers(out_dir):
            shutil.rmtree(leftover, ignore_errors=True)
        yield


def _check_out_dir(out_dir: Path, overwrite: bool) -> None:
    if out_dir.exists() and not out_dir.is_dir():
        raise ValueError(f'--out {out_dir} is {kind_of(out_dir)}; allowed: a new or empty folder')
    leftovers = _leftovers(out_dir)  # an export killed there: removed once the folder is held (see _held)
    if out_dir.is_dir() and any(p not in leftovers for p in out_dir.iterdir()) and not overwrite:
        raise ValueError(f'--out {out_dir} is not empty; allowed: a new or empty folder, or --overwrite to replace '
                         f'the files an export writes there')
    for name in EXPORTED_FILES:
        if (out_dir / name).is_dir():
            raise IsADirectoryError(f'{out_dir / name} is a folder where export writes a file; allowed: move it away')
        check_regular_file(out_dir / name, 'a file export writes; allowed: move it away')
        check_not_link(out_dir / name, 'timm-sl export')


def _readable(path: Path) -> None:
    """Give a written file the mode a new file gets under the umask (safetensors writes 0600)."""
    umask = os.umask(0)
    os.umask(umask)
    path.chmod(0o666 & ~umask)


class Exported(NamedTuple):
    """An exported folder, the checkpoint key its weights came from and the pretrained cfg written for them (the
    exported data config, ``num_classes`` and ``label_names``)."""
    folder: Path
    source: str
    pretrained_cfg: Dict[str, Any]


def _checked_model(record: RunRecord, checkpoint: Checkpoint, label_names: Optional[List[str]] = None,
                   load: bool = True, names_file: Optional[Path] = None) -> Tuple[torch.nn.Module, Dict[str, Any]]:
    """What :func:`export_run` checks before it writes anything, and the model it exports (``load=False``: built
    without weights, see :func:`timm_sl.tools.checkpoint.build_model`); ``(model, model kwargs)``. ``names_file``:
    the file ``label_names`` were read from, which a refusal of them names."""
    if record.rows and record.run_dir:  # the run folder's summary: its row of the checkpoint's epoch is its own
        _check_summary_is_the_checkpoints(checkpoint, record, record.run_dir / 'summary.csv')
    if not record.model and record.run_dir is None and (record.checkpoint.parent / 'config.json').is_file() and \
            record.checkpoint.name == 'model.safetensors':  # config.json names the model, for loaders, not for this
        raise ValueError(f'{record.checkpoint} is the weights of a folder timm-sl export wrote, exported already; '
                         f'allowed: timm-sl push {record.checkpoint.parent} (or timm.create_model("local-dir:'
                         f'{record.checkpoint.parent}")), or export a train.py checkpoint or run folder')
    if not record.model:
        said = f'{record.run_dir / "args.yaml"} names none' if record.run_dir else 'no args.yaml beside it'
        raise ValueError(f'{record.checkpoint} records no model ({said}, no arch / args in it); name it with --model')
    model, model_kwargs = build_run_model(record, checkpoint, load=load)
    _check_kwargs_are_the_runs(record, checkpoint)
    training_data_config(model, record.args, _args_file(record))
    if label_names is None:
        return model, model_kwargs
    try:
        if len(label_names) != model.num_classes:
            raise NamesError(f'{len(label_names)} label names given but {record.checkpoint} has {model.num_classes} '
                             f'classes; give exactly one name per class, in class-index order')
        _check_class_map_order(record, label_names)
        _check_folder_class_order(record, label_names)
    except NamesError as e:  # the names' file is what was wrong: named first, as every refusal of a file is
        if names_file is None:
            raise
        raise ValueError(f'{shown(names_file)}: {e}') from None
    return model, model_kwargs


def _args_file(record: RunRecord) -> Path:
    """The file a run's arguments were read from: its args.yaml, else the checkpoint's ``args``."""
    return record.run_dir / 'args.yaml' if record.run_dir and record.args else record.checkpoint


def _check_kwargs_are_the_runs(record: RunRecord, checkpoint: Checkpoint) -> None:
    """``--model-kwargs`` given for the model a run records must be the kwargs it records (``args.yaml``, else the
    checkpoint's ``args``): others that its weights fit (``lsa_mask=False``, none for a run of ``lsa_mask=False``)
    build a model that was never trained, carded with the trained model's top-1.

    Raises:
        ValueError: naming the run's file, both kwargs and what is allowed.
    """
    args = record.args if 'model_kwargs' in record.args else checkpoint.args
    trained = args.get('model') or checkpoint.arch
    if 'model_kwargs' not in args or trained != record.model:
        return
    recorded = dict(args.get('model_kwargs') or {})
    if settings_differ({'model_kwargs': record.model_kwargs}, {'model_kwargs': recorded}):  # (1, 1) is YAML's [1, 1]
        where = record.run_dir / 'args.yaml' if args is record.args and record.run_dir else checkpoint.path
        raise ValueError(f'--model-kwargs {record.model_kwargs or "(none)"} are not the run\'s: {where} records '
                         f'{recorded or "none"} for {trained}, which its weights were trained (and scored) with; '
                         f'allowed: leave out --model-kwargs (the run\'s are used)')


def _check_class_map_order(record: RunRecord, label_names: Sequence[str]) -> None:
    """Label names for a run of train.py's ``--class-map``, whose classes are the map's indices, not the class
    folders in sorted order: as many as the map has classes, each a name the map holds (a class folder's), at its
    index.

    Raises:
        ValueError / OSError: the class map the run records is gone or unreadable (the names cannot be checked), or the
            names are of another count or order; naming the map and what is allowed.
    """
    given = record.args.get('class_map')
    if not given:
        return
    source = record.run_dir / 'args.yaml' if record.run_dir else record.checkpoint
    where = record.class_map_file()
    if where is None:
        raise FileNotFoundError(
            f'{source} records --class-map {given}, which is not there now (as given, nor in the data folder it '
            f'records): the order of the classes the run learned is unknown, so --label-names cannot be checked; '
            f'allowed: the class map back where train.py read it, or no --label-names')
    try:
        mapping = read_class_map(where)
    except ValueError as e:
        raise ValueError(f'{where} (the --class-map {source} records) {e}; allowed: the class map train.py read') \
            from None
    classes = max(mapping.values(), default=-1) + 1
    if len(label_names) != classes:
        raise NamesError(f'{len(label_names)} label names given but the class map the run trained with ({where}) has '
                         f'{classes} classes; allowed: one name per class, in the order of that map')
    by_index = {v: k for k, v in reversed(list(mapping.items()))}
    order = ', '.join(str(by_index.get(i, '?')) for i in range(min(classes, 3))) + (', ...' if classes > 3 else '')
    named = all(isinstance(k, str) for k in mapping)  # a map of names (class folders), as timm's are
    unknown = next((i for i, n in enumerate(label_names) if named and n not in mapping), None)
    if unknown is not None:
        raise NamesError(f'--label-names names {label_names[unknown]!r} (class {unknown}), which the class map the run '
                         f'trained with ({where}) does not hold: its names are the class folders the run learned; '
                         f'allowed: the names of that map in its order ({order})')
    moved = next((i for i, n in enumerate(label_names) if mapping.get(n, i) != i), None)
    if moved is not None:
        name = label_names[moved]
        raise NamesError(f'--label-names puts {name!r} at class {moved}, but the class map the run trained with '
                         f'({where}) makes {name!r} class {mapping[name]}: the names are in another order than the '
                         f'classes the run learned; allowed: the names in the order of that map ({order})')


def _read_class_map(record: RunRecord) -> Optional[str]:
    """The ``--class-map`` a run's reader numbered its classes by: None also where timm gives it no reader that takes
    one (a ``torch/`` dataset, torchvision's ImageFolder among them, numbers its classes its own way)."""
    class_map = record.args.get('class_map')
    return None if dataset_reader(record.args.get('dataset')) in ('torch', TORCHVISION_FOLDER) else class_map or None


def _folder_classes(record: RunRecord) -> Optional[Tuple[Path, List[str], str]]:
    """The training folder of a run that read an image folder without ``--class-map`` (train.py's ``--data-dir`` and
    split, as timm's ``create_dataset`` finds it), its classes in the order the run's reader numbered them and that
    reader's name: timm's (leaf folder names in natural order: ``c2`` before ``c10``) or torchvision's
    (``torch/image_folder``: folder names sorted); None for a dataset read by another reader (``torch/cifar10``,
    ``hfds/...``), or a folder not there now."""
    from timm.data.dataset_factory import _search_split
    from timm.data.readers.reader_image_folder import find_images_and_targets
    reader = dataset_reader(record.args.get('dataset'))
    if _read_class_map(record) or reader not in IMAGE_FOLDER_READERS:
        return None
    data = record.args.get('data_dir') or record.args.get('data')
    root = train_path(record.run_dir, record.args, data) if isinstance(data, str) and data else None
    if root is None or not root.is_dir():
        return None
    folder = Path(_search_split(str(root), str(record.args.get('train_split') or 'train')))
    if reader == TORCHVISION_FOLDER:  # in the order train.py numbered them, named as a label names file reads them
        classes, reader_name = sorted(e.name for e in os.scandir(folder) if e.is_dir()), "torchvision's"
    else:
        classes, reader_name = list(find_images_and_targets(str(folder))[1]), "timm's"
    return folder, [name_text(name) for name in classes], reader_name


def _check_folder_class_order(record: RunRecord, label_names: Sequence[str]) -> None:
    """A label name that is a class folder's name (:func:`_folder_classes`, as many folders as names) must be at that
    folder's class: at another, the predictions of both are named wrongly (a names file of another order, one name
    edited too). Names of one's own (not the folders') are not checked.

    Raises:
        ValueError: naming the folder, the first misplaced name and the order allowed.
    """
    found = _folder_classes(record)
    if found is None or len(found[1]) != len(label_names):
        return
    folder, classes, reader = found
    moved = next((i for i, n in enumerate(label_names) if n in classes and classes.index(n) != i), None)
    if moved is None:
        return
    name = label_names[moved]
    order = ', '.join(classes[:3]) + (', ...' if len(classes) > 3 else '')
    raise NamesError(f'--label-names puts {name!r} at class {moved}, but the run learned the class folders of '
                     f'{folder} in {reader} order, where {name!r} is class {classes.index(name)}: a name of a class '
                     f"folder names that folder's class only; allowed: the names in that order ({order})")


def _check_run_weights(record: RunRecord, checkpoint: Checkpoint) -> None:
    """:func:`~timm_sl.tools.runs.check_finite_weights` of a run's checkpoint; where its summary.csv has a NaN top-1
    in every epoch (it diverged from its first), the line says so: no checkpoint of it holds trained weights.

    Raises:
        NonFiniteWeights: naming the checkpoint, and what is allowed.
    """
    try:
        check_finite_weights(checkpoint.state_dict, checkpoint.path)
    except NonFiniteWeights as e:
        summary = record.summary or {}
        if summary.get('best_top1') is not None or summary.get('diverged_epoch') != 1:
            raise
        reason = str(e).split('; allowed:')[0]
        raise NonFiniteWeights(f'{reason}, from its first epoch (its summary.csv: '
                               f'{nan_epochs_text(summary["epochs"])}), so no checkpoint of it holds trained weights; '
                               f'allowed: a run with a finite top-1 (train it again, say with a lower --lr)') from None


def check_export(record: RunRecord, label_names: Optional[List[str]] = None,
                 names_file: Optional[Path] = None) -> Checkpoint:
    """Refuse a run :func:`export_run` would refuse (a checkpoint that does not fit the model its ``args.yaml``
    names, another run's ``summary.csv``, label names of another class count, NaN weights), reading the checkpoint
    memory-mapped (see :func:`~timm_sl.tools.runs.read_checkpoint`; its weights scanned for NaN, not held): for
    :func:`timm_sl.tools.release.release` to check every run before it writes anything, without holding every run's
    weights at once. Returns the checkpoint read so, for the export (its weights are read then). ``names_file``: the
    file ``label_names`` were read from, which a refusal of them names.

    Raises:
        ValueError / OSError: as :func:`export_run` would, before writing.
    """
    checkpoint = read_checkpoint(record.checkpoint, mmap=True)
    record = record.with_checkpoint(checkpoint.arch, checkpoint.args, checkpoint.epoch, checkpoint.metric)
    _checked_model(record, checkpoint, label_names, load=False, names_file=names_file)
    # a diverged run among many: refused before the others are written
    _check_run_weights(record, checkpoint)
    return checkpoint


def export_run(
        record: RunRecord,
        out_dir: Union[str, Path],
        checkpoint: Optional[Checkpoint] = None,
        label_names: Optional[Union[List[str], str, Path]] = None,
        train_defaults: Optional[Dict[str, Any]] = None,
        repo_id: str = PLACEHOLDER,
        card_sections: Sequence[str] = (),
        overwrite: bool = False,
        before_replace: Optional[Callable[[Path], None]] = None,
) -> Exported:
    """Write a Hub-ready folder for a run's checkpoint.

    Args:
        record: The run (:func:`timm_sl.tools.runs.read_run`), completed by the checkpoint and naming its model.
        out_dir: A new or empty folder (any folder with ``overwrite``).
        checkpoint: ``record.checkpoint`` when already read.
        label_names: Class names: a list, or a file (JSON list or one per line).
        train_defaults: train.py's defaults; the card's recipe lists the arguments that differ from them (without
            them, every argument the run recorded but switches left off, paths and machine, and the card says so).
        repo_id: The Hub repository the card's usage names.
        card_sections: Markdown lines the card gains before its recipe.
        overwrite: Write into a non-empty ``out_dir``.
        before_replace: Called with the folder of the export's files, written whole, before they are moved into
            ``out_dir`` (release records their sha256 there).

    The exported ``pretrained_cfg`` carries the data config the run trained with (mean, std, input size,
    interpolation, crop), resolved from the run's arguments as train.py resolved it. A ``slify`` model is exported as
    ``slify`` with its ``base`` among the model arguments, so that ``local-dir:`` / ``hf-hub:`` rebuild it.

    Raises:
        FileNotFoundError: no such checkpoint / label names file.
        ValueError: a non-empty ``out_dir``, a checkpoint that does not fit the model (see
            :func:`timm_sl.tools.checkpoint.build_model`), or label names that do not number the model's classes.
    """
    out_dir = Path(out_dir)
    overwrite = flag_arg(overwrite, 'overwrite', 'export_run')  # 'no' is true to Python
    _check_out_dir(out_dir, overwrite)
    names_file = Path(label_names) if isinstance(label_names, (str, Path)) else None
    if names_file is not None:
        label_names = read_label_names(names_file)
    checkpoint = checkpoint or read_checkpoint(record.checkpoint)
    _check_run_weights(record, checkpoint)  # export and release alike
    model, model_kwargs = _checked_model(record, checkpoint, label_names, names_file=names_file)
    model.pretrained_cfg.update(training_data_config(model, record.args, _args_file(record)))
    # the weights are the run's: slify is rebuilt by the converter (not its base), and no registered tag applies
    model.pretrained_cfg.update(architecture=record.model, tag=None)
    model_config = {'label_names': list(label_names)} if label_names else {}
    recipe = _recipe_section(record, train_defaults, checkpoint.args, session_notes(record, checkpoint, train_defaults))
    card = _model_card(record, model, checkpoint.source, recipe, repo_id=repo_id, extra=card_sections,
                       epoch=checkpoint.epoch)
    make_folder(out_dir)
    # written whole into a hidden folder of out_dir first, then each file moved over its earlier one: an export cut
    # short (a full disk, Ctrl-C) leaves an earlier export whole, and a file keeps the mode its user gave it
    with _held(out_dir):
        _check_out_dir(out_dir, overwrite)  # again: an export into the same new --out may have ended meanwhile
        _write_staged(out_dir, model, model_kwargs, model_config, card, before_replace)
    written = dict(model.pretrained_cfg, num_classes=model.num_classes, label_names=list(label_names or []) or None)
    return Exported(out_dir, checkpoint.source, written)


def _write_staged(out_dir: Path, model: torch.nn.Module, model_kwargs: Dict[str, Any], model_config: Dict[str, Any],
                  card: ModelCard, before_replace: Optional[Callable[[Path], None]] = None) -> None:
    """Write an export's files into a :data:`STAGING` folder of ``out_dir``, then move each over its earlier one."""
    staging = Path(tempfile.mkdtemp(dir=out_dir, prefix=STAGING))
    try:
        save_for_hf(model, staging, model_config=model_config, model_args=model_kwargs, safe_serialization=True)
        make_transformers_compatible(staging)  # save_for_hf adds num_classes to model_args too: there only once
        _readable(staging / 'model.safetensors')
        card.save(staging / 'README.md')
        if before_replace is not None:
            before_replace(staging)
        for file in sorted(staging.iterdir()):
            if (out_dir / file.name).is_file():
                shutil.copymode(out_dir / file.name, file)
            os.replace(file, out_dir / file.name)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _last_world_size(record: RunRecord, checkpoint: Checkpoint) -> Any:
    """The processes of a run's last session: ``world_size`` of its ``last.pth.tar`` when that is not ``checkpoint``
    (None when there is none, or it cannot be read: the card then says the run did not record them)."""
    last = record.run_dir / 'last.pth.tar' if record.run_dir else None
    if last is None or not last.is_file() or last.resolve() == checkpoint.path.resolve():
        return checkpoint.args.get('world_size')
    try:
        return read_checkpoint(last).args.get('world_size')
    except (OSError, ValueError):
        return None


def _check_summary_is_the_checkpoints(loaded: Checkpoint, record: RunRecord, summary: Path) -> None:
    """A ``summary`` given for a checkpoint that records its metric and epoch (train.py's) must say the same at that
    epoch: another run's summary.csv would put that run's top-1 on the card."""
    metric, epoch = loaded.metric, loaded.epoch
    if not (isinstance(metric, (int, float)) and math.isfinite(metric)):
        return
    column = f'eval_{loaded.args.get("eval_metric") or "top1"}'
    said = (record.epoch_row(epoch) or {}).get(column)
    if said is not None and math.isfinite(said) and not math.isclose(said, metric, rel_tol=1e-6, abs_tol=1e-4):
        raise ValueError(f'{summary} is not the summary of {loaded.path}: its {column} at epoch {epoch + 1} (counted '
                         f'from 1) is {said:g}, the checkpoint records {metric:g}; allowed: the summary.csv of the run '
                         f'that wrote the checkpoint')


def export_checkpoint(
        checkpoint: Union[str, Path],
        model_name: Optional[str],
        out_dir: Union[str, Path],
        model_kwargs: Optional[Dict[str, Any]] = None,
        summary: Optional[Union[str, Path]] = None,
        dataset: Optional[str] = None,
        label_names: Optional[Union[List[str], str, Path]] = None,
        overwrite: bool = False,
        train_defaults: Optional[Dict[str, Any]] = None,
) -> Tuple[Path, str]:
    """``timm-sl export``: :func:`export_run` for a checkpoint file and its run folder; ``(folder, weights key)``.

    ``model_name`` / ``model_kwargs`` default to what the run recorded (``args.yaml`` beside the checkpoint, else the
    checkpoint's ``arch`` / ``args``); ``summary`` and ``dataset`` to the run folder's ``summary.csv`` and dataset;
    ``train_defaults`` (train.py's) as :func:`export_run` takes them.
    """
    flag_arg(overwrite, 'overwrite', 'export_checkpoint')  # 'no' is true to Python: a user's README.md replaced
    record, loaded = read_run_checkpoint(checkpoint, model_name, model_kwargs, summary=summary, dataset=dataset)
    if summary is not None:
        _check_summary_is_the_checkpoints(loaded, record, Path(summary))
    exported = export_run(record, out_dir, checkpoint=loaded, label_names=label_names, overwrite=overwrite,
                          train_defaults=train_defaults)
    return exported.folder, exported.source


_EXPORT_AGAIN = 'allowed: the file as timm-sl export / release writes it (export again)'


def read_exported_config(config: Union[str, Path]) -> Dict[str, Any]:
    """An exported folder's ``config.json`` (timm's ``save_for_hf``: ``architecture``, ``model_args``,
    ``pretrained_cfg``) as a mapping.

    Raises:
        FileNotFoundError / IsADirectoryError: no such file, or a folder.
        ValueError: not JSON, JSON that is not an object, or one without a model name (``architecture``) or with
            ``model_args`` / ``pretrained_cfg`` that are not objects; naming the file.
    """
    config = Path(config)
    try:
        parsed = json.loads(read_text(config, 'the config.json of an exported model'))
    except json.JSONDecodeError as e:
        raise ValueError(f'{config} is not JSON (line {e.lineno}: {e.msg}); {_EXPORT_AGAIN}') from None
    if not isinstance(parsed, dict):
        raise ValueError(f'{config} is JSON but not an object ({type(parsed).__name__}); {_EXPORT_AGAIN}')
    wrong = [key for key in ('model_args', 'pretrained_cfg') if not isinstance(parsed.get(key, {}), dict)]
    if not (isinstance(parsed.get('architecture'), str) and parsed['architecture']):
        wrong.insert(0, 'architecture')
    if wrong:
        raise ValueError(f'{config} holds no usable {", ".join(wrong)} (a model name, model_args and pretrained_cfg '
                         f'objects); {_EXPORT_AGAIN}')
    return parsed


def exported_data_config(model: torch.nn.Module, cfg: Dict[str, Any], config: Path,
                         allowed: str = _EXPORT_AGAIN) -> Dict[str, Any]:
    """The data config a loader of an exported folder preprocesses by: timm's resolver over its ``config.json``'s
    ``pretrained_cfg`` (``cfg``, for ``model`` built from that file).

    Raises:
        ValueError: one that no training ran with or that ``model`` cannot take (a mean / std of another channel count,
            which timm averages without an error; an input size the model does not take, by timm's resolver; an
            interpolation timm does not know), naming ``config``.
    """
    from timm.data import resolve_data_config
    size = cfg.get('input_size')
    if not (isinstance(size, (list, tuple)) and len(size) == 3 and all(_whole(v) and v > 0 for v in size)):
        raise ValueError(f'{config} gives the input size {size!r}; expected [channels, height, width], three positive '
                         f'whole numbers; {allowed}')
    chans = size[0]
    odd = next((k for k in ('mean', 'std') if not (isinstance(cfg.get(k), (list, tuple)) and len(cfg[k]) == chans)),
               None)
    if odd is not None:
        raise ValueError(f'{config} gives a {odd} of {cfg.get(odd)!r} for an input of {chans} channel(s); {allowed}')
    try:
        data = resolve_data_config({}, pretrained_cfg=dict(cfg))
    except (TypeError, ValueError, AssertionError) as e:
        raise ValueError(f'{config} gives a data config timm cannot resolve ({first_line(e)}); {allowed}') from None
    odd = next((k for k in ('crop_pct', 'interpolation', 'crop_mode') if k in cfg and data.get(k) != cfg[k]), None)
    if odd is not None:  # timm's resolver takes 0, '', [] or null for unset: a loader would preprocess by its default
        raise ValueError(f'{config} gives a {odd} of {first_line(repr(cfg[odd]))[:40]}, which timm reads as unset '
                         f'({data.get(odd)!r}, its default); {allowed}')
    training_data_config(model, data, config, allowed)  # numbers, a std above 0, three whole numbers, a known resize
    return data


def _check_exported_files(folder: Path) -> None:
    """``config.json`` is a JSON object that timm builds a model from and ``model.safetensors`` the weights of that
    model (names and shapes), so a cut, edited or foreign file is refused here, not found by those who download it."""
    import timm
    from safetensors.torch import load_file
    config, weights = folder / 'config.json', folder / 'model.safetensors'
    again = _EXPORT_AGAIN
    saved = read_exported_config(config)
    try:
        state = load_file(str(weights))
    except Exception as e:  # noqa: BLE001 - safetensors' own error type differs by version
        raise ValueError(f'{weights} is not a readable safetensors file ({first_line(e)}); {again}') from None
    try:  # as timm builds it from the Hub: architecture, model_args, num_classes
        model = timm.create_model(f'local-dir:{folder}')
    except Exception as e:  # noqa: BLE001 - an edited config fails in many ways
        raise ValueError(f'{config} does not build a model in timm ({first_line(e)}); {again}') from None
    mismatch = state_mismatch(model.state_dict(), state)
    if mismatch:
        raise ValueError(f'{weights} does not fit the model {config} describes ({mismatch}); {again}')
    try:  # export refuses them: edited since, or not its file (a loader's outputs would be NaN)
        check_finite_weights(state, weights)
    except NonFiniteWeights as e:
        raise NonFiniteWeights(f'{str(e).split(": the run had")[0]}; {again}') from None
    given = saved.get('pretrained_cfg', {})
    odd = next((k for k in ('hf_hub_filename', 'custom_load') if given.get(k) not in (None, False, '')), None)
    if odd is not None:  # local-dir: reads model.safetensors whatever they say, hf-hub: another file, or another way
        raise ValueError(f'{config} gives pretrained_cfg.{odd} {first_line(repr(given[odd]))[:40]}: an hf-hub: load of '
                         f'the upload would not read its model.safetensors as timm-sl export wrote it; {again}')
    # as a loader does: timm's loader reads pretrained_cfg (first_conv, ...) beside the weights, and its classifier
    for how, kwargs in (('', {}), (' for a head of another class count', dict(num_classes=model.num_classes + 1))):
        try:  # ... where a loader fits a new head (hub.md: loading adapts)
            timm.create_model(f'local-dir:{folder}', pretrained=True, **kwargs)
        except Exception as e:  # noqa: BLE001 - an edited pretrained_cfg fails in many ways
            raise ValueError(f'{config} does not load {weights.name} in timm{how} ({first_line(e)}); {again}') from None
    cfg = model.pretrained_cfg  # timm sets its input size to the built model's; transformers' processor reads the file
    exported_data_config(model, {**cfg, **saved.get('pretrained_cfg', {})}, config)  # as export resolved it
    names = cfg.get('label_names')
    if names is not None and not (isinstance(names, list) and len(names) == model.num_classes
                                  and all(isinstance(n, str) for n in names) and len(set(names)) == len(names)):
        raise ValueError(f'{config} gives label_names that are not one name per class of its {model.num_classes}, '
                         f'each once ({first_line(repr(names))[:80]}); {again}')
    odd = _odd_label_name(names or [])
    if odd is not None:  # as export refuses it: a class named nothing, or a name cut across lines where it is shown
        raise ValueError(f'{config} gives the label name {odd!r} (class {names.index(odd)}); allowed: a name of one '
                         f'line for each class, not blank; {again}')
    # timm reads these where the top level has none (the top level's replace them), transformers the top level's only
    if saved.get('pretrained_cfg', {}).get('label_names') is not None and saved.get('label_names') is None:
        raise ValueError(f'{config} gives pretrained_cfg.label_names but no label_names, which transformers reads: '
                         f'timm would name the classes, transformers LABEL_0, LABEL_1, ...; {again}')


def _staged(folder: Path, staged: Path, repo_id: str, revision: Optional[str]) -> str:
    """``folder``'s :data:`EXPORTED_FILES` as pushed, in ``staged``: the card's ``hf-hub:ORG/NAME`` naming
    ``repo_id`` (``@revision`` on a branch), the other files linked (copied where links cannot be made); ``folder``
    itself stays as it is."""
    for name in EXPORTED_FILES:
        source = folder / name
        if not source.is_file():
            continue
        if name == 'README.md':
            target = f'{repo_id}@{revision}' if revision else repo_id
            text = read_text(source, 'the model card').replace(f"'hf-hub:{PLACEHOLDER}'", f"'hf-hub:{target}'")
            (staged / name).write_text(text, encoding='utf-8')
            continue
        try:
            os.link(source, staged / name)
        except OSError:  # another file system, or links not allowed
            shutil.copyfile(source, staged / name)
    return str(staged)


def _check_private(api: Any, repo_id: str) -> None:
    """Refuse to upload with ``--private`` into a repository that exists on the Hub and is public.

    Raises:
        ToolError: naming the repository and what is allowed; nothing is uploaded.
    """
    if getattr(api.repo_info(repo_id), 'private', None) is False:
        raise ToolError(f'--private: {repo_id} exists on the Hub and is public, so the upload would be public; nothing '
                        f'was uploaded; allowed: make {repo_id} private on the Hub first, another --repo-id, or leave '
                        f'out --private to upload to the public repository')


def check_revision(revision: Optional[str]) -> None:
    """Refuse an empty branch name (``--revision "$BRANCH"``, the variable unset): the Hub takes it for the main
    branch, and the upload lands there."""
    if revision is not None and not (isinstance(revision, str) and revision.strip()):
        raise ValueError(f'{revision!r} is not allowed (an empty branch name pushes to main); expected a branch name, '
                         f'e.g. v1, or no --revision for main')


def push_folder(folder: Union[str, Path], repo_id: str, private: bool = False, revision: Optional[str] = None,
                commit_message: str = 'Upload timm_sl model') -> str:
    """Upload an exported folder's :data:`EXPORTED_FILES` to the Hub (nothing else it holds: a user's files beside
    them stay private); returns the commit URL.

    Raises:
        ValueError: ``repo_id`` is not a Hub repository id (by huggingface_hub's own validator) or ``revision`` is
            empty, checked first; or ``config.json`` / ``model.safetensors`` cannot be read (checked before anything
            is uploaded).
        FileNotFoundError / NotADirectoryError: ``folder`` does not exist, is a file, or is not an exported model
            folder.
        ToolError: not logged in, offline, or the Hub refused the upload — with what to do about it.
    """
    from huggingface_hub import HfApi
    from huggingface_hub.utils import HFValidationError, HfHubHTTPError, validate_repo_id
    try:
        validate_repo_id(repo_id)
    except HFValidationError as e:
        reason = (str(e).strip().splitlines() or ['invalid'])[0]
        raise ValueError(f'--repo-id {repo_id!r} is not a Hub repository id ({reason}); allowed: ORG/NAME (or NAME), '
                         f"each of letters, digits, '-', '_' and '.'") from None
    check_revision(revision)
    folder = Path(folder)
    if not folder.exists():
        raise FileNotFoundError(f'{folder} does not exist; allowed: a folder written by timm-sl export or release')
    if not folder.is_dir():
        raise NotADirectoryError(f'{folder} is {kind_of(folder)}; allowed: a folder written by timm-sl export or '
                                 f'release')
    odd = next((folder / f for f in ('config.json', 'model.safetensors') if (folder / f).is_dir()
                or ((folder / f).is_symlink() and not (folder / f).exists())), None)
    if odd is not None:  # not 'missing': the name is there
        what = 'a folder' if odd.is_dir() else f'a link to {os.readlink(odd)}, which does not exist'
        raise (IsADirectoryError if odd.is_dir() else FileNotFoundError)(
            f'{odd} is {what}; allowed: the file as timm-sl export / release writes it (export again)')
    for f in ('config.json', 'model.safetensors'):  # a FIFO is not 'missing' (nor read: it would wait forever)
        check_regular_file(folder / f, f'a file; {_EXPORT_AGAIN}')
    missing = [f for f in ('config.json', 'model.safetensors') if not (folder / f).is_file()]
    if missing:
        raise FileNotFoundError(f'{folder} is not an exported model folder: missing {", ".join(missing)}')
    _check_exported_files(folder)
    api = HfApi()
    with tempfile.TemporaryDirectory() as tmp:  # the card names the repository it is pushed to
        try:
            staged = _staged(folder, Path(tmp), repo_id, revision)
        except OSError as e:  # the system names the file copied, not the temporary folder that is full
            raise type(e)(f'{tmp}: could not copy {folder} there for the upload ({(e.strerror or str(e)).lower()}); '
                          f'allowed: TMPDIR set to a folder with room for it') from e
        try:
            api.create_repo(repo_id, private=private, exist_ok=True)
            if private:  # create_repo leaves a repository that exists as it is: a public one takes the upload publicly
                _check_private(api, repo_id)
            if revision:
                api.create_branch(repo_id, branch=revision, exist_ok=True)
            info = api.upload_folder(repo_id=repo_id, folder_path=staged, revision=revision,
                                     commit_message=commit_message, allow_patterns=list(EXPORTED_FILES))
        except ToolError:  # refused here, not by the Hub
            raise
        except HfHubHTTPError as e:
            status = getattr(getattr(e, 'response', None), 'status_code', None)
            if status in (401, 403):
                raise ToolError(f'the Hub refused {repo_id} ({status}): log in with `hf auth login` or set HF_TOKEN '
                                f'to a token with write access') from e
            raise ToolError(f'upload of {folder} to {repo_id} failed: {e}') from e
        except Exception as e:  # offline mode, DNS, connection refused, ...
            if isinstance(e, OSError) and e.filename:  # a file, not the network: a token `sudo hf auth login` made
                raise ToolError(f'could not push {repo_id}: {e.filename}: {(e.strerror or str(e)).lower()}; allowed: '
                                f'a file this user may read and write (one another user made, such as a token of sudo '
                                f'hf auth login: chown it), or HF_TOKEN / HF_HOME set elsewhere') from e
            raise ToolError(f'could not reach the Hugging Face Hub to push {repo_id} ({type(e).__name__}: {e}); '
                            f'check the network (and that HF_HUB_OFFLINE is not set)') from e
    return str(getattr(info, 'commit_url', info))

