"""``slify``: Shifted Patch Tokenization and Locality Self-Attention for any timm model that can take them.

The paper calls SPT and LSA "generic add-on modules applicable to any ViT"; :func:`slify` makes that concrete for a
timm model instance (or a timm model name):

* the model's timm ``PatchEmbed`` (or PiT's conv stem) becomes :class:`~timm_sl.layers.ShiftedPatchEmbed` with the
  same grid, image-size policy (strict / dynamic padding) and output format;
* every timm attention the package has an LSA form of (``timm.layers.Attention``, Swin's ``WindowAttention``,
  CaiT's ``TalkingHeadAttn`` / ``ClassAttn``) becomes that LSA form, rebuilt from the instance with every option it
  was built with, and its weights copied exactly;
* pooling the package knows (PiT's conv pooling, Swin's ``PatchMerging``) becomes Spool (``spt_pool``).

Weights carry over only where they mean the same thing: attention projections, relative-position tables, head-mixing
weights and PiT's class-token Linear are copied; a patch embedding's convolution does not mean what SPT's LayerNorm +
Linear over the shifted copies means, so SPT (and Spool) start from a fresh initialisation. PiT's position embedding is
resampled to SPT's non-overlapping grid.

The whole conversion is planned before anything changes: a model with a part that cannot be converted (no timm
``PatchEmbed``, an attention class without an LSA form, ...) is refused with :class:`SlifyError` naming every
reason, and is left untouched. With a model *name* the plan runs on a meta-device instance, so a refused name builds
nothing and downloads no weights.
"""
import copy
import inspect
import re
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple, Union

import torch
from torch import nn

import timm
from timm.layers import Attention, Format, PatchEmbed
from timm.models.cait import ClassAttn, TalkingHeadAttn
from timm.models.pit import ConvEmbedding, Pooling
from timm.models.swin_transformer import PatchMerging, WindowAttention

from .layers import (
    LocalityClassAttn, LocalitySelfAttention, LocalityTalkingHeadAttn, LocalityWindowAttention, LsaMixin,
    ShiftedPatchEmbed, ShiftedPatchMerging, ShiftedPatchProjection, ShiftedTokenPooling, class_attn_switches,
    resolve_shift)
from .models._sl_args import SL_ARG_NAMES, SlArgs, check_bool, check_optional_bool

__all__ = ['SlifyError', 'SlifyPlan', 'SLIFY_ARG_NAMES', 'plan_slify', 'slify', 'slify_refusal']

# slify's own switches next to the SL switches every sl_ model takes
SLIFY_ARG_NAMES: Tuple[str, ...] = SL_ARG_NAMES + ('spt_pool', 'spt_post_norm')

# class names that look like attention; blocks / stages holding one are not attention themselves, and attention
# *pooling* heads (ViT's 'map' pool) attend from learned latent queries: no self-relation for LSA to mask
_ATTENTION_NAME = re.compile(r'attention|attn', re.IGNORECASE)
_NOT_ATTENTION_NAME = re.compile(r'block|layer|stage|pool', re.IGNORECASE)


class SlifyError(ValueError):
    """A model ``slify`` cannot convert; ``reasons`` lists every part that stands in the way."""

    def __init__(self, model_name: str, reasons: List[str]) -> None:
        self.model_name = model_name
        self.reasons = list(reasons)
        super().__init__(f'cannot slify {model_name}: {"; ".join(reasons)}.')


def _qualname(module: nn.Module) -> str:
    cls = type(module)
    return f'{cls.__module__}.{cls.__qualname__}'


def _dd(module: nn.Module) -> Dict[str, Any]:
    tensor = next(module.parameters(), None)
    return {} if tensor is None else {'device': tensor.device, 'dtype': tensor.dtype}


def _copy_weights(new: nn.Module, old: nn.Module) -> nn.Module:
    """Load ``old``'s state into ``new``; only LSA's ``temperature`` may be missing (it keeps its own init)."""
    result = new.load_state_dict(old.state_dict(), strict=False)
    missing = [k for k in result.missing_keys if k != 'temperature']
    if missing or result.unexpected_keys:  # a timm class whose layout changed: better loud than half-loaded
        raise RuntimeError(f'{_qualname(old)} -> {type(new).__name__}: weights do not line up '
                           f'(missing {missing}, unexpected {result.unexpected_keys})')
    if hasattr(old, 'fused_attn') and hasattr(new, 'fused_attn'):
        new.fused_attn = old.fused_attn  # keep the instance's kernel choice (e.g. set off for attention maps)
    return new


# ---------------------------------------------------------------------------------------------------------------------
# Converters: one per timm class the package has an SL form of. Each takes the instance and returns its replacement.

def _head_dim(qkv_out: int, num_heads: int, projections: int) -> int:
    return qkv_out // projections // num_heads


def _lsa_attention(old: Attention, sl_args: SlArgs) -> nn.Module:
    return _copy_weights(sl_args.attn_layer(lsa_cls=LocalitySelfAttention).from_attention(old), old)


def _lsa_window_attention(old: WindowAttention, sl_args: SlArgs) -> nn.Module:
    return _copy_weights(sl_args.attn_layer(lsa_cls=LocalityWindowAttention).from_window_attention(old), old)


def _lsa_talking_heads(old: TalkingHeadAttn, sl_args: SlArgs) -> nn.Module:
    # the class SlCait configures (head_dim=None: taken from the instance below), so both paths share one type
    cls = LocalityTalkingHeadAttn.configured(head_dim=None, **sl_args.lsa_kwargs())
    new = cls(old.qkv.in_features, num_heads=old.num_heads, head_dim=_head_dim(old.qkv.out_features, old.num_heads, 3),
              qkv_bias=old.qkv.bias is not None, attn_drop=old.attn_drop.p, proj_drop=old.proj_drop.p, **_dd(old))
    return _copy_weights(new, old)


def _lsa_class_attention(old: ClassAttn, sl_args: SlArgs) -> nn.Module:
    cls = LocalityClassAttn.configured(head_dim=None, **class_attn_switches(sl_args.lsa_kwargs()))
    new = cls(old.q.in_features, num_heads=old.num_heads, head_dim=_head_dim(old.q.out_features, old.num_heads, 1),
              qkv_bias=old.q.bias is not None, attn_drop=old.attn_drop.p, proj_drop=old.proj_drop.p, **_dd(old))
    return _copy_weights(new, old)


_LSA_FORMS: Dict[type, Callable[[nn.Module, SlArgs], nn.Module]] = {
    Attention: _lsa_attention,
    WindowAttention: _lsa_window_attention,
    TalkingHeadAttn: _lsa_talking_heads,
    ClassAttn: _lsa_class_attention,
}


def _spt_from_patch_embed(old: PatchEmbed, sl_args: SlArgs, post_norm: bool) -> ShiftedPatchEmbed:
    conv = old.proj
    new = ShiftedPatchEmbed(
        img_size=old.img_size, patch_size=old.patch_size, in_chans=conv.in_channels, embed_dim=conv.out_channels,
        flatten=old.flatten, output_fmt=None if old.output_fmt == Format.NCHW else old.output_fmt.value,
        bias=conv.bias is not None, strict_img_size=old.strict_img_size, dynamic_img_pad=old.dynamic_img_pad,
        post_norm=False, **sl_args.spt_kwargs(), **_dd(old))
    if post_norm:
        new.norm = copy.deepcopy(old.norm)  # the same norm over the embedding, with its weights
    return new


def _spt_from_conv_stem(old: ConvEmbedding, sl_args: SlArgs) -> ShiftedPatchEmbed:
    # SPT patches do not overlap: the patch is the stem's stride (PiT-XS's 16/8 stem -> an 8 px SPT, whose half-patch
    # shift sees the same 16 px), as SlPoolingVisionTransformer does
    return ShiftedPatchEmbed(
        img_size=old.img_size, patch_size=old.conv.stride, in_chans=old.conv.in_channels,
        embed_dim=old.conv.out_channels, flatten=False, **sl_args.spt_kwargs(), **_dd(old))


def _resampled_pos_embed(pos_embed: nn.Parameter, grid: Tuple[int, int]) -> nn.Parameter:
    """A ``(1, D, H, W)`` position map resampled to ``grid`` (PiT's embedding after the stem's grid changed)."""
    with torch.no_grad():
        value = torch.nn.functional.interpolate(pos_embed.float(), size=grid, mode='bicubic', align_corners=False)
    return nn.Parameter(value.to(pos_embed.dtype), requires_grad=pos_embed.requires_grad)


def _spool_pit(old: Pooling, sl_args: SlArgs) -> nn.Module:
    new = ShiftedTokenPooling(
        old.fc.in_features, old.fc.out_features, shift_directions=sl_args.shift_directions, **_dd(old))
    new.fc.load_state_dict(old.fc.state_dict())  # the class-token Linear means the same in both
    return new


def _spool_swin(old: PatchMerging, sl_args: SlArgs) -> nn.Module:
    return ShiftedPatchMerging(
        old.dim, old.out_dim, shift_directions=sl_args.shift_directions, input_fmt='NHWC', **_dd(old))


_SPOOL_FORMS: Dict[type, Callable[[nn.Module, SlArgs], nn.Module]] = {
    Pooling: _spool_pit,
    PatchMerging: _spool_swin,
}


# ---------------------------------------------------------------------------------------------------------------------
# Planning

@dataclass(frozen=True)
class _Step:
    path: str  # dotted path of the module (or parameter) to replace
    kind: str  # 'spt', 'lsa', 'spool', 'pos_embed'
    source: str  # qualified class name of what is replaced
    build: Callable[[], Union[nn.Module, nn.Parameter]]


@dataclass(frozen=True)
class SlifyPlan:
    """Every replacement a conversion makes (``steps``), or why it cannot be made (``reasons``)."""
    model_name: str
    steps: Tuple[_Step, ...]
    reasons: Tuple[str, ...]

    @property
    def ok(self) -> bool:
        return not self.reasons

    def summary(self) -> Dict[str, int]:
        """Number of replacements of each kind."""
        counts: Dict[str, int] = {}
        for step in self.steps:
            counts[step.kind] = counts.get(step.kind, 0) + 1
        return counts

    def apply(self, model: nn.Module) -> nn.Module:
        """Build every replacement, then swap them all in (a failing build leaves ``model`` as it was)."""
        if self.reasons:
            raise SlifyError(self.model_name, list(self.reasons))
        built = [(step.path, step.build()) for step in self.steps]
        for path, new in built:
            parent_path, _, attr = path.rpartition('.')
            parent = model.get_submodule(parent_path)
            if isinstance(new, nn.Module):
                new.train(getattr(parent, attr).training)  # an eval-mode model stays in eval mode (no dropout)
            setattr(parent, attr, new)
        return model


def _attention_reason(module: nn.Module) -> str:
    """Why an attention class has no LSA form, with the position scheme that rules out a drop-in where one shows."""
    reason = f'attention class {_qualname(module)} has no LSA form'
    forward_args = inspect.signature(module.forward).parameters
    if 'rope' in forward_args or 'rope' in type(module).__name__.lower():
        return reason + ' (rotary position embedding)'
    names = [n for n, _ in module.named_parameters(recurse=False)] + [n for n, _ in module.named_children()]
    names += list(forward_args) + list(vars(module))
    if any('rel_pos' in n or 'relative_position' in n for n in names):
        return reason + ' (relative-position bias inside the attention)'
    if hasattr(module, 'logit_scale'):
        return reason + ' (cosine attention with a learned logit scale)'
    return reason


def _looks_like_attention(module: nn.Module) -> bool:
    name = type(module).__name__
    return bool(_ATTENTION_NAME.search(name)) and not _NOT_ATTENTION_NAME.search(name)


def _plan_spt(model: nn.Module, sl_args: SlArgs, post_norm: bool, steps: List[_Step], reasons: List[str]) -> None:
    stems = [(n, m) for n, m in model.named_modules() if type(m) in (PatchEmbed, ConvEmbedding)]
    if not stems:
        found = ''
        for attr in ('patch_embed', 'stem'):
            if isinstance(getattr(model, attr, None), nn.Module):
                found = f' (its {attr} is {_qualname(getattr(model, attr))})'
                break
        reasons.append(f'no timm PatchEmbed{found}')
        return
    if len(stems) > 1:
        reasons.append(f'{len(stems)} patch embeddings ({", ".join(n for n, _ in stems)}); SPT replaces one image '
                       f'tokenizer')
        return
    path, stem = stems[0]
    conv = stem.proj if isinstance(stem, PatchEmbed) else stem.conv
    resolve_shift(conv.stride, sl_args.shift_ratio)  # a bad ratio for this patch size fails now, before any build
    if isinstance(stem, PatchEmbed) and (
            not isinstance(conv, nn.Conv2d) or conv.kernel_size != conv.stride or conv.padding != (0, 0)
            or conv.groups != 1 or conv.dilation != (1, 1)):
        reasons.append(f'{path} is not a plain non-overlapping patch projection ({conv}); SPT needs kernel == stride')
        return
    if isinstance(stem, PatchEmbed):
        steps.append(_Step(path, 'spt', _qualname(stem), lambda: _spt_from_patch_embed(stem, sl_args, post_norm)))
        return
    steps.append(_Step(path, 'spt', _qualname(stem), lambda: _spt_from_conv_stem(stem, sl_args)))
    # PiT: the overlapping stem's grid becomes the non-overlapping SPT grid; its position map follows
    parent_path = path.rpartition('.')[0]
    parent = model.get_submodule(parent_path)
    grid = tuple(s // p for s, p in zip(stem.img_size, stem.conv.stride))
    pos_embed = getattr(parent, 'pos_embed', None)
    if isinstance(pos_embed, nn.Parameter) and tuple(pos_embed.shape[-2:]) != grid:
        pos_path = f'{parent_path}.pos_embed' if parent_path else 'pos_embed'
        steps.append(_Step(pos_path, 'pos_embed', 'nn.Parameter', lambda: _resampled_pos_embed(pos_embed, grid)))


def plan_slify(
        model: nn.Module,
        sl_args: Optional[SlArgs] = None,
        spt_pool: Optional[bool] = None,
        spt_post_norm: bool = False,
        model_name: Optional[str] = None,
) -> SlifyPlan:
    """Plan the conversion of ``model`` without changing it (see :func:`slify` for the arguments)."""
    sl_args = sl_args or SlArgs()
    spt_pool = sl_args.spt if spt_pool is None else spt_pool
    model_name = model_name or type(model).__name__
    steps: List[_Step] = []
    reasons: List[str] = []
    already = sorted({type(m).__name__ for m in model.modules() if isinstance(m, (LsaMixin, ShiftedPatchProjection))})
    if already:
        return SlifyPlan(model_name, (), (f'it already has SL layers ({", ".join(already)})',))
    if sl_args.spt:
        _plan_spt(model, sl_args, spt_post_norm, steps, reasons)
    if sl_args.uses_lsa_layer:
        lsa_steps = []
        for path, module in model.named_modules():
            convert = _LSA_FORMS.get(type(module))
            if convert is not None:
                lsa_steps.append(_Step(path, 'lsa', _qualname(module), lambda m=module, c=convert: c(m, sl_args)))
            elif _looks_like_attention(module):
                reason = _attention_reason(module)
                if reason not in reasons:
                    reasons.append(reason)
        if not lsa_steps and not reasons:
            reasons.append('no attention layer for LSA')
        steps += lsa_steps
    if spt_pool:
        for path, module in model.named_modules():
            convert = _SPOOL_FORMS.get(type(module))
            if convert is not None:
                steps.append(_Step(path, 'spool', _qualname(module), lambda m=module, c=convert: c(m, sl_args)))
    if not steps and not reasons:
        reasons.append('nothing to convert with these switches')
    return SlifyPlan(model_name, tuple(steps), tuple(reasons))


def _split_kwargs(kwargs: Dict[str, Any]) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """(slify switches, everything else) of a kwargs dict."""
    switches = {k: kwargs[k] for k in SLIFY_ARG_NAMES if k in kwargs}
    return switches, {k: v for k, v in kwargs.items() if k not in switches}


def _meta_twin(name: str, create_kwargs: Dict[str, Any]) -> nn.Module:
    """``name`` built on the meta device (no memory, no weights): enough to plan a conversion, so a refused name
    builds nothing real and downloads nothing."""
    with torch.device('meta'):
        return timm.create_model(name, **create_kwargs)


def slify_refusal(model_or_name: Union[str, nn.Module], **kwargs: Any) -> Optional[str]:
    """The refusal message ``slify`` would raise for these arguments, or None when it converts (nothing is built for
    real and nothing is changed)."""
    switches, create_kwargs = _split_kwargs(kwargs)
    spt_pool, post_norm = switches.pop('spt_pool', None), switches.pop('spt_post_norm', False)
    sl_args = SlArgs(**switches)
    if isinstance(model_or_name, str):
        model, name = _meta_twin(model_or_name, create_kwargs), model_or_name
    else:
        model, name = model_or_name, type(model_or_name).__name__
    plan = plan_slify(model, sl_args, spt_pool, post_norm, model_name=name)
    return None if plan.ok else str(SlifyError(plan.model_name, list(plan.reasons)))


def slify(
        model_or_name: Union[str, nn.Module],
        pretrained: bool = False,
        spt_pool: Optional[bool] = None,
        spt_post_norm: bool = False,
        **kwargs: Any,
) -> nn.Module:
    """The SL version of a timm model: SPT as its patch embedding, LSA in its attention, Spool in its pooling.

    Args:
        model_or_name: A timm model instance (converted in place and returned) or a timm model name (created with
            ``timm.create_model(name, pretrained=pretrained, **kwargs)``, then converted).
        pretrained: With a name: load timm's pretrained weights before converting (for fine-tuning; the attention
            weights carry over, SPT starts fresh). ``pretrained_cfg_overlay=dict(file=...)`` loads a local file.
        spt_pool: Spool in place of PiT's conv pooling / Swin's ``PatchMerging``; ``None`` follows ``spt``.
        spt_post_norm: Keep the patch embedding's norm after SPT. Off by default: SPT normalises each patch before
            projecting, and the reference code (and this package's SL-Swin) drop Swin's post-embedding LayerNorm.
        **kwargs: The SL switches of :class:`timm_sl.models.SlArgs` (``spt``, ``shift_ratio``, ``shift_directions``,
            ``lsa``, ``lsa_mask``, ``lsa_learn_temp``, ``lsa_temp_ratio``); with a name, also ``create_model`` kwargs.

    Returns:
        The converted model (same class as the base; ``model.sl_args`` holds the switches).

    Raises:
        SlifyError: a part of the model cannot be converted; the message names each reason, the model is untouched.
        ValueError: an invalid SL switch (e.g. a shift ratio that gives a 0 px shift for this patch size).
        TypeError: ``create_model`` kwargs given with a model instance.
    """
    switches, create_kwargs = _split_kwargs(kwargs)
    sl_args = SlArgs(**switches)
    check_optional_bool('spt_pool', spt_pool)
    check_bool('spt_post_norm', spt_post_norm)
    if isinstance(model_or_name, str):
        name = model_or_name
        plan = plan_slify(_meta_twin(name, create_kwargs), sl_args, spt_pool, spt_post_norm, model_name=name)
        if not plan.ok:
            raise SlifyError(name, list(plan.reasons))
        model = timm.create_model(name, pretrained=pretrained, **create_kwargs)
    elif isinstance(model_or_name, nn.Module):
        if create_kwargs or pretrained:
            given = sorted(create_kwargs) + (['pretrained'] if pretrained else [])
            raise TypeError(f'slify got model kwargs {given} with a model instance; allowed with an instance: '
                            f'{", ".join(SLIFY_ARG_NAMES)} (pass a model name to create one).')
        model = model_or_name
        name = (getattr(model, 'pretrained_cfg', None) or {}).get('architecture') or type(model).__name__
    else:
        raise TypeError(f'slify takes a timm model name or an nn.Module, not {type(model_or_name).__name__}.')
    plan = plan_slify(model, sl_args, spt_pool, spt_post_norm, model_name=name)
    plan.apply(model)
    model.sl_args = sl_args
    model.spt_pool = sl_args.spt if spt_pool is None else spt_pool
    return model
