"""Checkpoint filtering shared by every ``sl_`` family: native checkpoints adapted to the model being built.

timm's per-family filters convert *foreign* layouts (original repositories, JAX, ...) and assume a convolutional patch
embedding, so they cannot read SPT weights. :func:`sl_filter` keeps them for foreign checkpoints and otherwise
adapts a native state dict: the SPT projection to another ``in_chans``, absolute position embeddings to another
grid, relative-position tables to another window, fixed (buffer) position tables left to the model.
"""
from typing import Callable, Dict

import torch
import torch.nn.functional as F
from torch import nn

from timm.layers import resample_abs_pos_embed, resize_rel_pos_bias_table

from ..layers import ShiftedPatchProjection, adapt_spt_in_chans

__all__ = ['unwrap_state_dict', 'adapt_sl_state_dict', 'sl_filter']

FilterFn = Callable[[Dict[str, torch.Tensor], nn.Module], Dict[str, torch.Tensor]]


def unwrap_state_dict(state_dict: Dict) -> Dict[str, torch.Tensor]:
    state_dict = state_dict.get('model', state_dict)
    return dict(state_dict.get('state_dict', state_dict))


def _resample_pos_embed(value: torch.Tensor, target: torch.Tensor, model: nn.Module) -> torch.Tensor:
    if value.ndim == 4:  # (1, D, H, W) maps (PiT)
        return F.interpolate(value, size=target.shape[-2:], mode='bicubic', align_corners=False)
    prefix = target.shape[1] - model.patch_embed.num_patches  # class / register tokens carried by the embedding
    return resample_abs_pos_embed(value, new_size=model.patch_embed.grid_size, num_prefix_tokens=max(prefix, 0))


def adapt_sl_state_dict(state_dict: Dict[str, torch.Tensor], model: nn.Module) -> Dict[str, torch.Tensor]:
    """Adapt a native state dict to ``model`` (input channels, grid, windows); other mismatches are left for
    ``load_state_dict`` to report."""
    target = model.state_dict()
    for name, module in model.named_modules():
        if isinstance(module, ShiftedPatchProjection) and f'{name}.weight' in state_dict:
            adapt_spt_in_chans(state_dict, f'{name}.', module)
    persistent_buffers = {n for n, _ in model.named_buffers()}
    for key, value in list(state_dict.items()):
        if key not in target or target[key].shape == value.shape:
            continue
        if key.endswith('pos_embed') and key in persistent_buffers:
            state_dict[key] = target[key]  # a fixed table (T2T's sin/cos): the model's own, for its grid
        elif key.endswith('pos_embed'):
            state_dict[key] = _resample_pos_embed(value, target[key], model)
        elif key.endswith('relative_position_bias_table'):
            module = model.get_submodule(key.rsplit('.', 1)[0])
            state_dict[key] = resize_rel_pos_bias_table(
                value, new_window_size=module.window_size, new_bias_shape=target[key].shape)
    return state_dict


def _has_sl_modules(keys) -> bool:
    """Keys only SL layers produce: LSA temperatures, the SPT projection's LayerNorm, T2T's soft-split stages."""
    return any(k.endswith('.temperature') or '.proj.norm.' in k or '.stages.' in k for k in keys)


def sl_filter(base_filter: FilterFn) -> FilterFn:
    """A family's checkpoint filter: ``base_filter`` (timm's) for foreign layouts, then :func:`adapt_sl_state_dict`.

    A state dict is foreign when it has keys the model lacks and none of the SL layers' own keys; one with SL keys is
    native and goes straight to adaptation, so an architecture mismatch surfaces as ``load_state_dict``'s list of
    missing / unexpected keys instead of a shape error inside timm's filter.

    Raises:
        ValueError: a foreign (convolutional patch embedding) checkpoint for a model whose tokenizer is SPT.
    """
    def filter_fn(state_dict: Dict[str, torch.Tensor], model: nn.Module) -> Dict[str, torch.Tensor]:
        state_dict = unwrap_state_dict(state_dict)
        model_keys = set(model.state_dict())
        embed_weight = state_dict.get('patch_embed.proj.weight')
        spt_model = any(isinstance(m, ShiftedPatchProjection) for m in model.patch_embed.modules())
        if spt_model and embed_weight is not None and embed_weight.ndim == 4:
            raise ValueError(
                f'this checkpoint has a convolutional patch embedding (timm / original layout), which '
                f'{type(model).__name__} with SPT cannot load; load it with spt=False, or start from it with '
                f'timm_sl.hub.warm_start(model, state_dict).')
        if set(state_dict) - model_keys and not _has_sl_modules(state_dict):
            state_dict = base_filter(state_dict, model)
        return adapt_sl_state_dict(dict(state_dict), model)
    return filter_fn
