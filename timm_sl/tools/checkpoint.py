"""The model a train.py checkpoint fits: built, checked key by key and loaded (the checkpoint itself is read by
:func:`timm_sl.tools.runs.read_checkpoint`).
"""
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple, Union

import torch

import timm

from .errors import BUILD_ERRORS, build_failure
from .runs import Checkpoint, RunRecord, given_dataset, read_checkpoint, read_run

__all__ = ['read_run_checkpoint', 'classifier_classes', 'state_mismatch', 'build_model', 'build_run_model',
           'model_from_checkpoint', 'trained_as', 'check_same_run']


def _named(model_name: str, kwargs: Dict[str, Any]) -> str:
    return f'{model_name} {kwargs}' if kwargs else model_name


def trained_as(checkpoint: Checkpoint) -> str:
    """What a train.py checkpoint says it was trained as: model name, the kwargs train.py built it with
    (:meth:`RunRecord.build_kwargs`) and class count."""
    name = checkpoint.arch or checkpoint.args.get('model')
    if not name:
        return 'an unknown model (no arch / args in the checkpoint)'
    args = checkpoint.args
    kwargs = RunRecord(checkpoint.path, args=args, model_kwargs=dict(args.get('model_kwargs') or {})).build_kwargs()
    if checkpoint.args.get('num_classes'):
        kwargs['num_classes'] = checkpoint.args['num_classes']
    return _named(name, kwargs)


def classifier_classes(model_name: str, model_kwargs: Dict[str, Any], state: Dict[str, torch.Tensor]) -> Optional[int]:
    """The class count of a state dict's classifier (named by the model's pretrained cfg; for ``slify``, by its
    base's)."""
    arch = model_kwargs.get('base') if model_name == 'slify' else model_name
    if not isinstance(arch, str):  # slify without base=NAME: building it says so
        return None
    try:
        classifier = timm.get_pretrained_cfg_value(arch, 'classifier') or 'head'
    except RuntimeError:  # no pretrained cfg registered for this name
        classifier = 'head'
    weight = state.get(f'{classifier}.weight')
    return None if weight is None or weight.ndim < 1 else weight.shape[0]


def state_mismatch(expected: Dict[str, torch.Tensor], state: Dict[str, torch.Tensor]) -> str:
    """One line naming missing / unexpected keys and shape mismatches ('' when ``state`` fits)."""
    def first(keys: List[str]) -> str:
        return ', '.join(keys[:3]) + (', ...' if len(keys) > 3 else '')

    missing = [k for k in expected if k not in state]
    unexpected = [k for k in state if k not in expected]
    shapes = [f'{k} {tuple(state[k].shape)} vs {tuple(v.shape)}' for k, v in expected.items()
              if k in state and state[k].shape != v.shape]
    parts = []
    if missing:
        parts.append(f'{len(missing)} missing key(s) ({first(missing)})')
    if unexpected:
        parts.append(f'{len(unexpected)} unexpected key(s) ({first(unexpected)})')
    if shapes:
        parts.append(f'{len(shapes)} shape mismatch(es), checkpoint vs model ({first(shapes)})')
    return '; '.join(parts)


def read_run_checkpoint(
        path: Union[str, Path],
        model_name: Optional[str] = None,
        model_kwargs: Optional[Dict[str, Any]] = None,
        **run_kwargs: Any,
) -> Tuple[RunRecord, Checkpoint]:
    """A checkpoint and the record of its run, completed by what the checkpoint itself records (``arch``, ``args``);
    with ``model_name`` / ``model_kwargs``, for the model a user names (default: the one the run trained)."""
    record = read_run(path, **run_kwargs)
    loaded = read_checkpoint(record.checkpoint)
    record = record.with_checkpoint(loaded.arch, loaded.args, loaded.epoch, loaded.metric)
    if run_kwargs.get('dataset') is not None:  # the classes the checkpoint's args record, where no args.yaml did
        given_dataset(record.run_dir or record.checkpoint, run_kwargs['dataset'], None, record.num_classes)
    if model_name or model_kwargs is not None:
        record = record.with_model(model_name or record.model, model_kwargs)
    return record, loaded


# timm.create_model's own switches, not the model's: each builds another thing than the model a checkpoint's
# weights load into whole (pretrained weights loaded then replaced, a feature wrapper, a file's weights)
_CREATE_SWITCHES = {
    'pretrained': "the checkpoint's weights are the model's; timm's pretrained ones would be loaded and replaced",
    'features_only': "timm's feature wrapper holds no classifier and no block after its last out_indices, so the "
                     "checkpoint's weights do not fit it",
    'checkpoint_path': "the checkpoint's weights are the model's; another file's would be loaded and replaced",
    'pretrained_cfg': 'it names the weights timm would load; the checkpoint gives them',
    'pretrained_cfg_overlay': 'it names the weights timm would load; the checkpoint gives them',
}


def _check_create_switches(path: Union[str, Path], model_kwargs: Dict[str, Any]) -> None:
    """Refuse model kwargs that are :data:`_CREATE_SWITCHES` for the model built to hold ``path``'s weights."""
    for key in [k for k in model_kwargs if k in _CREATE_SWITCHES]:
        raise ValueError(f'model kwarg {key}={model_kwargs[key]!r} for {path}: {_CREATE_SWITCHES[key]}; allowed: '
                         f'{key} left out of the model kwargs')


def build_model(checkpoint: Checkpoint, model_name: str, model_kwargs: Optional[Dict[str, Any]] = None,
                load: bool = True) -> Tuple[torch.nn.Module, Dict[str, Any]]:
    """Build ``model_name`` and load the checkpoint into it strictly (``num_classes`` read from the classifier unless
    given). Returns ``(model, model kwargs used)``. ``load=False`` checks the fit only: the model is built without
    weights (on the meta device where it builds there) and nothing is loaded, so the checkpoint's tensors may be
    memory-mapped (:func:`~timm_sl.tools.runs.read_checkpoint` ``mmap=True``) and are never read.

    Raises:
        ValueError: the checkpoint does not fit ``model_name`` with ``model_kwargs``: one line saying what the
            checkpoint was trained as and which keys / shapes differ.
    """
    state = checkpoint.state_dict
    model_kwargs = dict(model_kwargs or {})
    _check_create_switches(checkpoint.path, model_kwargs)
    if 'num_classes' not in model_kwargs:
        classes = classifier_classes(model_name, model_kwargs, state)
        if classes is not None:
            model_kwargs['num_classes'] = classes
    wanted = _named(model_name, model_kwargs)
    try:
        model = None
        if not load:
            try:
                with torch.device('meta'):
                    model = timm.create_model(model_name, **model_kwargs)
            except BUILD_ERRORS:  # a model that computes on its tensors as it is built: built as usual, below
                pass
        model = model or timm.create_model(model_name, **model_kwargs)
    except BUILD_ERRORS as e:
        raise ValueError(f'{checkpoint.path} cannot build {wanted} (it was trained as {trained_as(checkpoint)}): '
                         f'{build_failure(e)}') from e
    mismatch = state_mismatch(model.state_dict(), state)
    if mismatch:
        raise ValueError(f'{checkpoint.path} does not fit {wanted} (it was trained as {trained_as(checkpoint)}): '
                         f'{mismatch}')
    if load:
        model.load_state_dict(state, strict=True)
    return model, model_kwargs


# what an args.yaml and the arguments its checkpoint carries agree on when both are one train.py run's
SAME_RUN_KEYS = ('model', 'model_kwargs', 'num_classes', 'dataset', 'in_chans', 'input_size', 'gp')


def _as_yaml_writes(value: Any) -> Any:
    """A checkpoint's argument as ``args.yaml`` holds it: YAML writes a tuple (``--model-kwargs depth=(1,1,1)``)
    as a list."""
    if isinstance(value, dict):
        return {k: _as_yaml_writes(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_as_yaml_writes(v) for v in value]
    return value


def check_same_run(record: RunRecord, checkpoint: Checkpoint) -> None:
    """Refuse a run folder's ``args.yaml`` that is not the checkpoint's: train.py saves its arguments in both, so a
    model, kwargs, class count or dataset that differ mean another run's file (or one cut short or edited), whose
    model would be built (``lsa_mask=False`` has no weights of its own: the wrong model loads them) and named.

    Raises:
        ValueError: naming ``args.yaml``, the checkpoint and each argument that differs.
    """
    if record.run_dir is None or not checkpoint.args:
        return
    saved = dict(checkpoint.args, model=checkpoint.args.get('model') or checkpoint.arch)
    differ = []
    for key in SAME_RUN_KEYS:
        if key not in record.args or (key == 'model_kwargs' and 'model' not in record.args and not record.args[key]):
            continue  # an args.yaml without `model` (or kwargs) takes the checkpoint's model and kwargs
        ours, theirs = _as_yaml_writes(record.args[key]), _as_yaml_writes(saved.get(key))
        if key == 'model_kwargs':  # train.py writes {} for none
            ours, theirs = dict(ours or {}), dict(theirs or {})
        if ours is not None and theirs is not None and ours != theirs:
            differ.append(f'{key} {ours!r} there, {theirs!r} in the checkpoint')
    if not differ and saved['model']:  # an argument one file leaves unset: the models the two would build
        kwargs = record.args.get('model_kwargs') or ({} if 'model' in record.args else saved.get('model_kwargs'))
        ours = RunRecord(checkpoint.path, args=record.args, model=record.args.get('model') or saved['model'],
                         model_kwargs=dict(kwargs or {}))
        theirs = RunRecord(checkpoint.path, args=saved, model=saved['model'],
                           model_kwargs=dict(saved.get('model_kwargs') or {}))
        ours, theirs = _as_yaml_writes(ours.arch_kwargs()), _as_yaml_writes(theirs.arch_kwargs())
        def said(kwargs: Dict[str, Any], k: str) -> str:
            return f'{k}={kwargs[k]!r}' if k in kwargs else f'its default {k}'

        differ = [f'builds {said(ours, k)} there, {said(theirs, k)} in the checkpoint'
                  for k in sorted({*ours, *theirs}) if ours.get(k) != theirs.get(k)]
        if differ:  # train.py rewrites args.yaml on --resume
            differ[-1] += '; resumed with another --gp / --in-chans / --model-kwargs?'
    if differ:
        raise ValueError(f'{record.run_dir / "args.yaml"} is not the args.yaml of {checkpoint.path} '
                         f'({"; ".join(differ)}): another run\'s, cut short or edited?; allowed: the args.yaml '
                         f'train.py wrote with this checkpoint')


def build_run_model(record: RunRecord, checkpoint: Checkpoint,
                    load: bool = True) -> Tuple[torch.nn.Module, Dict[str, Any]]:
    """:func:`build_model` for the model a run record names, with the arguments train.py built it with
    (:meth:`RunRecord.build_kwargs`: ``--in-chans``, ``--gp`` and ``--num-classes`` too), once
    :func:`check_same_run` found the run folder's ``args.yaml`` to be the checkpoint's."""
    check_same_run(record, checkpoint)
    if not checkpoint.args and record.args and checkpoint.arch in (None, '', record.model):  # errors say what
        from dataclasses import replace  # args.yaml says it was trained as (a hand-saved `arch` records no kwargs)
        checkpoint = replace(checkpoint, arch=record.model, args=record.args)
    from timm_sl.layers import without_unused_options
    kwargs = without_unused_options(record.build_kwargs())  # what train.py took and the model never used
    if record.num_classes:
        kwargs.setdefault('num_classes', record.num_classes)
    return build_model(checkpoint, record.model, kwargs, load=load)


def model_from_checkpoint(
        path: Union[str, Path],
        model_name: str,
        model_kwargs: Optional[Dict[str, Any]] = None,
) -> Tuple[torch.nn.Module, Dict[str, Any], Checkpoint]:
    """:func:`read_checkpoint` then :func:`build_model`: ``(model, model kwargs used, checkpoint)``."""
    checkpoint = read_checkpoint(path)
    model, model_kwargs = build_model(checkpoint, model_name, model_kwargs)
    return model, model_kwargs, checkpoint
