"""Checkpoint mapping shared by every ``sl_`` family: native checkpoints adapted to the model being built, and
non-SL timm weights mapped onto an ``sl_`` model.

timm's per-family filters convert *foreign* layouts (original repositories, JAX, ...) and assume a convolutional patch
embedding, so they cannot read SPT weights. :func:`sl_filter` keeps them for foreign checkpoints and otherwise
adapts a native state dict: the SPT projection to another ``in_chans``, absolute position embeddings to another
grid, relative-position tables to another window, fixed (buffer) position tables left to the model.
:func:`warm_start` is the opt-in map from a non-SL timm state dict of the same family.
"""
import logging
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

import torch
import torch.nn.functional as F
from torch import nn

from timm.layers import resample_abs_pos_embed, resize_rel_pos_bias_table
from timm.models import clean_state_dict

from ..layers import ShiftedPatchProjection

__all__ = ['unwrap_state_dict', 'adapt_sl_state_dict', 'keep_fitting_classifier', 'sl_filter', 'resize_channel_axis',
           'adapt_norm_linear_chans', 'adapt_norm_linear_entries', 'adapt_spt_in_chans', 'claim_stem_adaptation',
           'warm_start', 'built_as']

_logger = logging.getLogger(__name__)

FilterFn = Callable[[Dict[str, torch.Tensor], nn.Module], Dict[str, torch.Tensor]]


def resize_channel_axis(value: torch.Tensor, dim: int, dst: int, reduce: str = 'sum') -> torch.Tensor:
    """Re-size an input-channel axis as timm's ``adapt_input_conv`` does for convolutions: to one channel by summing
    (``reduce='sum'``, weights) or averaging (``'mean'``), to more by tiling — weights then rescaled by ``src / dst``
    so a replicated input gives the same response (exactly when ``dst`` is a multiple of ``src``)."""
    src = value.shape[dim]
    if dst == 1:
        return value.sum(dim, keepdim=True) if reduce == 'sum' else value.mean(dim, keepdim=True)
    repeats = [1] * value.ndim
    repeats[dim] = -(-dst // src)
    value = value.repeat(*repeats).narrow(dim, 0, dst)
    return value * (src / dst) if reduce == 'sum' else value


def adapt_norm_linear_chans(
        norm_weight: torch.Tensor,
        norm_bias: torch.Tensor,
        weight: torch.Tensor,
        bias: Optional[torch.Tensor],
        dst: int,
        groups: int,
        rest: int = 1,
) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor, Optional[torch.Tensor]]:
    """``LayerNorm`` then ``Linear`` over features laid out ``(groups, channels, rest)``, re-sized to ``dst`` channels.

    For an input whose channels are copies of one image (grey fed as RGB, or RGB fed as two RGB copies), the LayerNorm
    mean and variance over the whole vector are those of a single copy, so the map is exact (to float rounding) when
    ``dst`` is 1 or a multiple of the source channels; other counts are timm's best-effort tiling. The LayerNorm
    affine cannot stay per channel once channels merge, so it is folded into the Linear (``W diag(gamma)`` summed or
    tiled over channels, ``gamma = 1``) and its shift ``W beta`` moves to:

    * the Linear bias, when there is one (``beta = 0``);
    * otherwise the LayerNorm shift itself: a normalised vector sums to zero, so adding a constant column ``a`` to
      the Linear weight changes nothing but its response to ``beta``; with ``beta = 1`` and
      ``a = (W beta - W' 1) / features`` the new ``W' beta`` is the old ``W beta``.

    Returns:
        ``(norm_weight, norm_bias, weight, bias)`` for ``dst`` channels (``bias`` None when it was).
    """
    out_dim, features = weight.shape
    shift = weight @ norm_bias
    folded = (weight * norm_weight).reshape(out_dim, groups, features // (groups * rest), rest)
    folded = resize_channel_axis(folded, 2, dst).reshape(out_dim, -1)
    new_features = folded.shape[1]
    ones = torch.ones(new_features, dtype=norm_weight.dtype, device=norm_weight.device)
    if bias is not None:
        return ones, torch.zeros_like(ones), folded, bias + shift
    folded = folded + ((shift - folded.sum(1)) / new_features).unsqueeze(1)
    return ones, ones.clone(), folded, None


def adapt_norm_linear_entries(
        state_dict: Dict[str, torch.Tensor],
        norm: str,
        linear: str,
        dst: int,
        groups: int,
        rest: int = 1,
) -> None:
    """:func:`adapt_norm_linear_chans` on the state-dict entries of a LayerNorm (prefix ``norm``) and the Linear after
    it (prefix ``linear``), in place, and log it; a channel count the map cannot make exact is logged as a warning."""
    weight = state_dict[linear + 'weight']
    src = weight.shape[1] // (groups * rest)
    adapted = adapt_norm_linear_chans(
        state_dict[norm + 'weight'], state_dict[norm + 'bias'], weight, state_dict.get(linear + 'bias'), dst, groups,
        rest)
    for key, value in zip((norm + 'weight', norm + 'bias', linear + 'weight', linear + 'bias'), adapted):
        if value is not None:
            state_dict[key] = value
    _logger.info(f'Adapted pretrained {linear[:-1]} and its LayerNorm {norm[:-1]} from {src} to {dst} input '
                 f'channel(s) (LayerNorm affine folded into the Linear).')
    if dst != 1 and dst % src:
        _logger.warning(f'{linear[:-1]}: {src} -> {dst} input channels is approximate (weights tiled and rescaled by '
                        f'{src}/{dst}); the map is exact for 1 channel or a multiple of {src}.')


def adapt_spt_in_chans(
        state_dict: Dict[str, torch.Tensor],
        prefix: str,
        proj: ShiftedPatchProjection,
        src_chans: Optional[int] = None,
) -> bool:
    """Adapt a checkpoint's SPT projection (``prefix`` + ``weight``/``bias``/``norm.*``) to ``proj``'s input channels
    in place, with :func:`adapt_norm_linear_chans` (exact for a replicated input, with or without a projection bias).

    The width alone cannot tell channels from patch size or shifted copies (patch 8 over 3 channels is as wide as
    patch 4 over 12), so ``src_chans``, when given, is the channel count the checkpoint was made for: a width that
    reads as another count is a checkpoint of another patch size or ``shift_directions``, and is refused.

    Returns:
        Whether the channel count differed (and the entries were adapted).

    Raises:
        ValueError: the checkpoint's projection width fits no channel count of ``proj``'s patch and copies, or
            another one than ``src_chans``.
    """
    weight = state_dict.get(prefix + 'weight')
    if weight is None or weight.shape == proj.weight.shape:
        return False
    ph, pw = proj.patch_size
    groups = ph * pw * proj.num_copies  # the flattened patch is (py, px, copy, channel)
    src = weight.shape[1] // groups
    if weight.shape[0] != proj.embed_dim or weight.shape[1] % groups or (src_chans is not None and src != src_chans):
        made_for = '' if src_chans is None else (f' over {src_chans} input channel(s), as the pretrained cfg\'s '
                                                 f'input_size declares')
        raise ValueError(f'{prefix}weight has shape {tuple(weight.shape)}, which does not fit this model\'s '
                         f'{tuple(proj.weight.shape)} (patch {proj.patch_size}, {proj.num_copies} copies, '
                         f'{proj.in_chans} channel(s)); allowed: a checkpoint of the same embed_dim, patch size and '
                         f'shift_directions{made_for} (another in_chans is adapted)')
    adapt_norm_linear_entries(state_dict, prefix + 'norm.', prefix, proj.in_chans, groups)
    return True


def claim_stem_adaptation(model: nn.Module) -> None:
    """Tell timm's loader that this model's filter adapted the input stem to ``in_chans`` already.

    After the filter, ``load_pretrained`` compares the ``first_conv`` weight with the model's and, finding them equal
    while ``in_chans`` differs from the checkpoint's, warns "weights already match ... Loading unchanged", untrue
    once the filter has adapted them. timm's documented switch for a model that adapts its own stem is a ``first_conv``
    trait of None (timm reads ``model._traits``, it has no public setter).
    """
    model._traits = {**getattr(model, '_traits', {}), 'first_conv': None}


def unwrap_state_dict(checkpoint: Dict) -> Dict[str, torch.Tensor]:
    """The state dict of a checkpoint dict, picked as timm's ``load_state_dict`` picks it (EMA weights first, then
    ``state_dict``, then ``model``); a bare state dict as it is."""
    for key in ('state_dict_ema', 'model_ema', 'state_dict', 'model'):
        if isinstance(checkpoint.get(key), dict):
            return dict(checkpoint[key])
    return dict(checkpoint)


def _resample_pos_embed(value: torch.Tensor, target: torch.Tensor, model: nn.Module) -> torch.Tensor:
    if value.ndim == 4:  # (1, D, H, W) maps (PiT)
        return F.interpolate(value, size=target.shape[-2:], mode='bicubic', align_corners=False)
    prefix = target.shape[1] - model.patch_embed.num_patches  # class / register tokens carried by the embedding
    return resample_abs_pos_embed(value, new_size=model.patch_embed.grid_size, num_prefix_tokens=max(prefix, 0))


def keep_fitting_classifier(state_dict: Dict[str, torch.Tensor], model: nn.Module, cfg: Optional[Dict]) -> None:
    """Make timm's loader keep a classifier whose weights fit ``model``'s head exactly.

    timm drops the checkpoint's classifier whenever the model's ``num_classes`` differs from ``cfg['num_classes']``,
    even when the weights were saved with the model's own class count (``num_classes=10`` and a 10-class state dict
    named by ``pretrained_cfg_overlay=dict(file=...)``): the head would start random, silently. When every
    classifier entry the checkpoint holds has the model's shape, ``cfg`` (the dict timm's loader decides with) is set
    to the model's ``num_classes``, which is then what its weights are for.
    """
    if not cfg or not cfg.get('classifier') or cfg.get('num_classes') == getattr(model, 'num_classes', None):
        return
    names = (cfg['classifier'],) if isinstance(cfg['classifier'], str) else tuple(cfg['classifier'])
    target = model.state_dict()
    keys = [f'{name}.{part}' for name in names for part in ('weight', 'bias') if f'{name}.{part}' in state_dict]
    if keys and all(k in target and target[k].shape == state_dict[k].shape for k in keys):
        cfg['num_classes'] = model.num_classes


def built_as(model: nn.Module) -> str:
    """The model as its user named it: the registered ``sl_`` name, or ``slify(BASE)`` for a converted timm model (its
    class is the base's, which the user never named)."""
    arch = (getattr(model, 'pretrained_cfg', None) or {}).get('architecture')
    if not isinstance(arch, str) or not arch:
        return type(model).__name__
    return arch if arch.startswith('sl_') else f'slify({arch})'


def _check_temperatures(state_dict: Dict[str, torch.Tensor], target: Dict[str, torch.Tensor],
                        model_name: str) -> None:
    """Refuse, in one line, a checkpoint whose learned LSA temperatures the model lacks, or the reverse: a model of
    other LSA switches than the checkpoint's (``load_state_dict`` listed every block's temperature key instead)."""
    wanted = sorted(k for k in target if k.endswith('.temperature'))
    held = sorted(k for k in state_dict if k.endswith('.temperature'))
    if wanted and not held:
        raise ValueError(f'this checkpoint has no learned LSA temperatures ({wanted[0]} and {len(wanted) - 1} more), '
                         f'which {model_name} with lsa_learn_temp on needs: its model had lsa=False or '
                         f'lsa_learn_temp=False (or was a timm model); allowed: the switches it was trained with '
                         f'(lsa=False or lsa_learn_temp=False), or timm_sl.warm_start(model, state_dict) to start from '
                         f'its weights')
    if held and not wanted:
        raise ValueError(f'this checkpoint has learned LSA temperatures ({held[0]} and {len(held) - 1} more), which '
                         f'{model_name} built with lsa=False or lsa_learn_temp=False has not; allowed: lsa and '
                         f'lsa_learn_temp left on, as its model had them (lsa_mask and lsa_temp_ratio as it was '
                         f'trained)')
    for key in wanted:  # one value per head: another num_heads (its qkv has the same shape whatever the heads)
        if key in state_dict and state_dict[key].shape != target[key].shape:
            raise ValueError(f'this checkpoint has {tuple(state_dict[key].shape)[0]} LSA temperatures (heads) in '
                             f'{key}, where {model_name} has {tuple(target[key].shape)[0]}: its model had another '
                             f'num_heads; allowed: the num_heads it was trained with')


def _check_projections(state_dict: Dict[str, torch.Tensor], target: Dict[str, torch.Tensor], model: nn.Module,
                       model_name: str) -> None:
    """Refuse, in one line, a checkpoint with SPT projections (a LayerNorm and a linear layer: the stem's, Spool's)
    where the model has timm's convolution or PatchMerging, or the reverse: the model was built with other ``spt`` /
    ``spt_pool`` than the checkpoint's (``load_state_dict`` listed every key of both instead)."""
    def switches(prefixes: List[str], value: bool) -> str:
        names = sorted({'spt' if p.startswith('patch_embed.') else 'spt_pool' for p in prefixes})
        return ' and '.join(f'{name}={value}' for name in names)

    def stage_in(prefix: str, keys: Dict[str, torch.Tensor]) -> bool:  # the same stage there (not another depth)
        parts = prefix.split('.')
        stage = '.'.join(parts[:2] if parts[1].isdigit() else parts[:1]) + '.'
        return any(k.startswith(stage) for k in keys)

    built = [n for n, m in model.named_modules() if isinstance(m, ShiftedPatchProjection)]
    held = [k[:-len('.norm.weight')] for k in state_dict if k.endswith('.proj.norm.weight')]
    held = [p for p in held if getattr(state_dict.get(f'{p}.weight'), 'ndim', 0) == 2]
    extra = sorted(p for p in held if p not in built and f'{p}.norm.weight' not in target and stage_in(p, target))
    lacking = sorted(p for p in built if f'{p}.norm.weight' not in state_dict and stage_in(p, state_dict))
    for names, ckpt, model_has in ((extra, True, False), (lacking, False, True)):
        if names:
            more = f' and {len(names) - 1} more' if len(names) > 1 else ''
            what = ('SPT projections' if more else 'an SPT projection') if ckpt else 'no SPT projection'
            raise ValueError(f'this checkpoint has {what} '
                             f'({names[0]}{more}): its model had {switches(names, ckpt)}, and {model_name} is built '
                             f'with {switches(names, model_has)}; allowed: {switches(names, ckpt)}, as its model was '
                             f'trained, or timm_sl.warm_start(model, state_dict) to start from its other weights')


def adapt_sl_state_dict(state_dict: Dict[str, torch.Tensor], model: nn.Module) -> Dict[str, torch.Tensor]:
    """Adapt a native state dict to ``model`` (input channels, grid, windows; a classifier that fits the model's
    head is kept: :func:`keep_fitting_classifier`); other mismatches are left for ``load_state_dict`` to report."""
    keep_fitting_classifier(state_dict, model, getattr(model, 'pretrained_cfg', None))
    target = model.state_dict()
    _check_temperatures(state_dict, target, built_as(model))
    _check_projections(state_dict, target, model, built_as(model))
    # the stem's checkpoint channels are those of the pretrained cfg's input size (timm's convention; an export
    # records the channels its run trained with); a projection between stages has no other width to adapt from
    cfg_chans = (getattr(model, 'pretrained_cfg', None) or {}).get('input_size', (None,))[0]
    adapted = [adapt_spt_in_chans(state_dict, f'{name}.', module,
                                  cfg_chans if name.startswith('patch_embed.') else module.in_chans)
               for name, module in model.named_modules()
               if isinstance(module, ShiftedPatchProjection) and f'{name}.weight' in state_dict]
    if any(adapted):
        claim_stem_adaptation(model)
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
                f'timm_sl.warm_start(model, state_dict).')
        if set(state_dict) - model_keys and not _has_sl_modules(state_dict):
            state_dict = base_filter(state_dict, model)
        return adapt_sl_state_dict(dict(state_dict), model)
    return filter_fn


def warm_start(model: torch.nn.Module, source: Dict[str, torch.Tensor]) -> Dict[str, List[str]]:
    """Initialise an ``sl_`` model from a non-SL timm state dict of the same family (opt-in, in place).

    Every parameter / buffer with the same name and shape is copied. An SPT patch projection is initialised from the
    source's convolutional patch embedding (``patch_embed.proj.weight`` of shape ``(D, C, P, P)``): the slice that
    reads the unshifted copy gets the convolution's weights, the shifted copies start at zero, the SPT LayerNorm at
    identity and the bias is copied. LSA temperatures keep their ``head_dim ** -0.5`` start, which equals the
    source's fixed scale when the source has the model's ``num_heads``. A state dict does not record its head count
    (``qkv`` has the same shape for any): a source of another ``num_heads`` is copied all the same, its attention
    then split into other heads, so the caller must know that the two agree.

    ``source`` may also be a checkpoint holding the state dict (train.py's, whose EMA weights are read when it has
    them, as timm's loader reads them), with DDP / ``torch.compile`` prefixes (removed as timm's loader removes them).

    Returns:
        ``{'mapped': [...], 'not_mapped': [...], 'unused_source': [...]}`` (key names), also the caller's report.

    Raises:
        ValueError: nothing of ``source`` fits the model (another family or size); the model is left unchanged.
        ValueError: a tensor it would copy holds NaN or inf (a diverged run's); the model is left unchanged.
        TypeError: ``source`` is no dict (a file's path: read it with ``timm.models.load_state_dict`` first),
            ``model`` no ``nn.Module``.
    """
    if not isinstance(source, dict):  # a path or the source model itself: 'str' object has no attribute 'get'
        given = f'{type(source).__name__} {source!r}' if isinstance(source, (str, Path)) else type(source).__name__
        raise TypeError(f'warm_start takes a state dict, got {given}; allowed: a state dict or a checkpoint dict '
                        f'holding one (timm.models.load_state_dict(path) of a file, model.state_dict() of a model)')
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f'warm_start initialises a model, got {type(model).__name__}; allowed: an nn.Module '
                        f'(timm.create_model(name) of an sl_ model)')
    source = clean_state_dict(unwrap_state_dict(source))
    target = model.state_dict()
    mapped, new_state = [], {}
    for key, value in source.items():
        if key in target and target[key].shape == value.shape:
            new_state[key] = value
            mapped.append(key)
    for name, module in model.named_modules():
        if not isinstance(module, ShiftedPatchProjection):
            continue
        conv = source.get(f'{name}.weight')
        ph, pw = module.patch_size
        if conv is None or conv.ndim != 4 or tuple(conv.shape) != (module.embed_dim, module.in_chans, ph, pw):
            continue
        weight = torch.zeros(module.embed_dim, ph, pw, module.num_copies, module.in_chans, dtype=conv.dtype)
        weight[:, :, :, 0, :] = conv.permute(0, 2, 3, 1)  # the unshifted copy is copy 0 of the (py, px, copy, c) layout
        new_state[f'{name}.weight'] = weight.reshape(module.embed_dim, -1)
        new_state[f'{name}.norm.weight'] = torch.ones(module.patch_dim, dtype=conv.dtype)
        new_state[f'{name}.norm.bias'] = torch.zeros(module.patch_dim, dtype=conv.dtype)
        mapped += [f'{name}.weight (from conv)', f'{name}.norm.weight', f'{name}.norm.bias']
        if f'{name}.bias' in source and module.bias is not None:
            new_state[f'{name}.bias'] = source[f'{name}.bias']
    bad = [k for k, v in new_state.items() if v.is_floating_point() and not torch.isfinite(v).all()]
    if bad:  # a diverged run's weights: the model would start from NaN and train on NaN losses
        raise ValueError(f'warm_start: the state dict holds NaN or inf in {len(bad)} of the tensors it would copy '
                         f'(e.g. {bad[0]!r}): the weights of a run that diverged; allowed: finite weights (an '
                         f'earlier checkpoint of that run); the model is left unchanged')
    if not mapped:
        example = next(iter(source), None)
        raise ValueError(f'warm_start mapped nothing into {type(model).__name__}: none of the {len(source)} keys of '
                         f'the state dict (e.g. {example!r}) has a name and shape of the model\'s; allowed: a timm '
                         f'state dict of the same family and size')
    model.load_state_dict(new_state, strict=False)
    loaded = {k.split(' ')[0] for k in mapped}
    return {
        'mapped': mapped,
        'not_mapped': sorted(k for k in target if k not in loaded),
        'unused_source': sorted(k for k in source if k not in loaded),
    }
