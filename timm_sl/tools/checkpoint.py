"""Reading train.py checkpoints, and building the model a checkpoint fits: the one place that opens weights files.

A file is read once, safely: ``.safetensors`` with safetensors, anything else with ``torch.load(weights_only=True)``
(train.py's ``args`` Namespace is allowed explicitly, as timm's own loader allows it), so nothing is unpickled beyond
tensors and plain containers. The weights are picked as timm's ``load_state_dict(use_ema=True)`` picks them (EMA
first) and cleaned with timm's ``clean_state_dict`` (DDP ``module.`` and ``torch.compile`` ``_orig_mod.`` prefixes).
"""
import argparse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple, Union

import torch

import timm
from timm.models import clean_state_dict

from .runs import RunRecord, read_run

__all__ = ['Checkpoint', 'STATE_KEYS', 'read_checkpoint', 'read_run_checkpoint', 'classifier_classes',
           'state_mismatch', 'build_model', 'model_from_checkpoint', 'trained_as']

# train.py's CheckpointSaver keys in timm's order of preference (load_state_dict with use_ema=True): EMA weights first
STATE_KEYS = ('state_dict_ema', 'model_ema', 'state_dict', 'model')


@dataclass
class Checkpoint:
    """What a checkpoint file holds: the weights to use and what train.py recorded beside them."""
    path: Path
    state_dict: Dict[str, torch.Tensor]
    source: str  # the key the weights came from ('plain' for a bare state dict, 'safetensors' for such a file)
    arch: Optional[str] = None
    args: Dict[str, Any] = field(default_factory=dict)  # train.py's arguments, when the checkpoint carries them
    epoch: Optional[int] = None
    metric: Optional[float] = None


def _first_line(error: Exception) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def _load(path: Path) -> Any:
    """The file's content, read once; one line naming the file when it is not a checkpoint."""
    try:
        if path.suffix == '.safetensors':
            import safetensors.torch
            return safetensors.torch.load_file(str(path), device='cpu')
        with torch.serialization.safe_globals([argparse.Namespace]):
            return torch.load(path, map_location='cpu', weights_only=True)
    except Exception as e:  # noqa: BLE001 - torch / safetensors raise many types for a bad file
        reason = _first_line(e)
        if path.suffix == '.safetensors':
            raise ValueError(f'{path} is not a readable safetensors file ({reason})') from e
        if 'Weights only load failed' in reason:  # torch's lines of advice on unpickling code: not taken here
            reason = 'it holds objects other than tensors and plain containers'
        raise ValueError(f'{path} is not a readable torch checkpoint (weights-only load failed: {reason})') from e


def read_checkpoint(path: Union[str, Path]) -> Checkpoint:
    """Read a train.py checkpoint, a plain state dict or a ``.safetensors`` file.

    Raises:
        FileNotFoundError: no such file.
        ValueError: not a weights-only readable checkpoint, or it holds no state dict; one line naming the file.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f'checkpoint {path} does not exist')
    content = _load(path)
    source, state = ('safetensors' if path.suffix == '.safetensors' else 'plain'), content
    if isinstance(content, dict):
        key = next((k for k in STATE_KEYS if isinstance(content.get(k), dict)), None)
        if key is not None:
            source, state = key, content[key]
    if not isinstance(state, dict) or not state or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise ValueError(f'{path} holds no state dict (looked for {", ".join(STATE_KEYS)} or bare tensors)')
    meta = content if isinstance(content, dict) and source not in ('plain', 'safetensors') else {}
    args = meta.get('args')
    args = vars(args) if isinstance(args, argparse.Namespace) else args
    return Checkpoint(path=path, state_dict=clean_state_dict(state), source=source, arch=meta.get('arch'),
                      args=dict(args) if isinstance(args, dict) else {}, epoch=meta.get('epoch'),
                      metric=meta.get('metric'))


def _named(model_name: str, kwargs: Dict[str, Any]) -> str:
    return f'{model_name} {kwargs}' if kwargs else model_name


def trained_as(checkpoint: Checkpoint) -> str:
    """What a train.py checkpoint says it was trained as: model name, ``--model-kwargs`` and class count."""
    name = checkpoint.arch or checkpoint.args.get('model')
    if not name:
        return 'an unknown model (no arch / args in the checkpoint)'
    kwargs = dict(checkpoint.args.get('model_kwargs') or {})
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


def read_run_checkpoint(path: Union[str, Path], model_name: Optional[str] = None,
                        model_kwargs: Optional[Dict[str, Any]] = None, **run_kwargs: Any) -> Tuple[RunRecord, Checkpoint]:
    """A checkpoint and the record of its run, completed by what the checkpoint itself records (``arch``, ``args``);
    with ``model_name`` / ``model_kwargs``, for the model a user names (default: the one the run trained)."""
    record = read_run(path, **run_kwargs)
    loaded = read_checkpoint(path)
    record = record.with_checkpoint(loaded.arch, loaded.args)
    if model_name or model_kwargs is not None:
        record = record.with_model(model_name or record.model, model_kwargs)
    return record, loaded


def build_model(checkpoint: Checkpoint, model_name: str,
                model_kwargs: Optional[Dict[str, Any]] = None) -> Tuple[torch.nn.Module, Dict[str, Any]]:
    """Build ``model_name`` and load the checkpoint into it strictly (``num_classes`` read from the classifier unless
    given). Returns ``(model, model kwargs used)``.

    Raises:
        ValueError: the checkpoint does not fit ``model_name`` with ``model_kwargs``: one line saying what the
            checkpoint was trained as and which keys / shapes differ.
    """
    state = checkpoint.state_dict
    model_kwargs = dict(model_kwargs or {})
    if 'num_classes' not in model_kwargs:
        classes = classifier_classes(model_name, model_kwargs, state)
        if classes is not None:
            model_kwargs['num_classes'] = classes
    wanted = _named(model_name, model_kwargs)
    try:
        model = timm.create_model(model_name, **model_kwargs)
    except (RuntimeError, TypeError, ValueError) as e:
        raise ValueError(f'{checkpoint.path} cannot build {wanted} (it was trained as {trained_as(checkpoint)}): '
                         f'{_first_line(e)}') from e
    mismatch = state_mismatch(model.state_dict(), state)
    if mismatch:
        raise ValueError(f'{checkpoint.path} does not fit {wanted} (it was trained as {trained_as(checkpoint)}): '
                         f'{mismatch}')
    model.load_state_dict(state, strict=True)
    return model, model_kwargs


def model_from_checkpoint(
        path: Union[str, Path],
        model_name: str,
        model_kwargs: Optional[Dict[str, Any]] = None,
) -> Tuple[torch.nn.Module, Dict[str, Any], Checkpoint]:
    """:func:`read_checkpoint` then :func:`build_model`: ``(model, model kwargs used, checkpoint)``."""
    checkpoint = read_checkpoint(path)
    model, model_kwargs = build_model(checkpoint, model_name, model_kwargs)
    return model, model_kwargs, checkpoint
