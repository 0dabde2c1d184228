"""The one path from timm modules to their SL forms.

:data:`SL_FORMS` maps each timm class the package has an SL form of to the function that builds that form from an
instance (with the switches of an :class:`~timm_sl.layers.SlArgs`): it reads the instance's configuration back from
its attributes, builds the SL layer with it and copies, strictly, the state that means the same thing in both.
:func:`plan_replacements` lists the modules of a model to replace (in module order), :func:`replace_modules` builds
every replacement and then swaps them all in. The families whose timm class has no constructor seam for a layer
(SL-PiT's stem, attention and pooling; SL-Swin's attention and merging, through :func:`convert_modules`) and
:func:`timm_sl.slify` (which plans one kind after the other, with its own checks) both convert through these. The
layers themselves know nothing of timm's modules: all of that lives here.

Position-embedding policy for a replaced stem: when the new stem's token grid differs from the old one (PiT's
overlapping conv stem becomes a non-overlapping SPT: 27x27 -> 28x28 at 224 px), the parent's ``(1, D, H, W)`` position
map is resampled (bicubic) to the new grid, keeping what it holds (pretrained position information under ``slify``);
where the grid does not change (every small-data config) it is left exactly as it is.
"""
import copy
from dataclasses import dataclass
from typing import Any, Callable, Collection, Dict, Iterable, List, Mapping, Optional, Tuple, Union

import torch
import torch.nn.functional as F
from torch import nn

from timm.layers import Attention, Format, PatchEmbed
from timm.models.cait import ClassAttn, TalkingHeadAttn
from timm.models.pit import ConvEmbedding, Pooling
from timm.models.swin_transformer import PatchMerging, SwinTransformerBlock, WindowAttention

from .layers import (
    LocalityClassAttn, LocalitySelfAttention, LocalitySwinBlock, LocalityTalkingHeadAttn, LocalityWindowAttention,
    ShiftedPatchEmbed,
    ShiftedPatchMerging, ShiftedTokenPooling, SlArgs, check_size, class_attn_switches)

__all__ = ['KINDS', 'Converter', 'Replacement', 'SL_FORMS', 'SL_HOSTS', 'convert_module', 'convert_modules',
           'copy_timm_state', 'module_dd', 'plan_replacements', 'qualname', 'replace_modules', 'resample_pos_embed',
           'spt_from_timm', 'check_sl_args']

Converter = Callable[[nn.Module, SlArgs], nn.Module]
KINDS = ('spt', 'lsa', 'spool')


def qualname(obj: object) -> str:
    """``module.Class`` of a class, or of an instance's class."""
    cls = obj if isinstance(obj, type) else type(obj)
    return f'{cls.__module__}.{cls.__qualname__}'


def module_dd(module: nn.Module) -> Dict[str, Any]:
    """``device`` / ``dtype`` of ``module``'s first parameter (none for a module without parameters)."""
    tensor = next(module.parameters(), None)
    return {} if tensor is None else {'device': tensor.device, 'dtype': tensor.dtype}


def copy_timm_state(new: nn.Module, old: nn.Module, own: Iterable[str] = ('temperature',)) -> nn.Module:
    """Load ``old``'s state into ``new``: every key must line up except ``new``'s ``own`` ones (LSA's
    ``temperature`` keeps its init). Also keeps the instance's attention kernel choice (``fused_attn``)."""
    result = new.load_state_dict(old.state_dict(), strict=False)
    missing = [k for k in result.missing_keys if k not in set(own)]
    if missing or result.unexpected_keys:  # a timm class whose layout changed: better loud than half-loaded
        raise RuntimeError(f'{qualname(old)} -> {type(new).__name__}: weights do not '
                           f'line up (missing {missing}, unexpected {result.unexpected_keys})')
    if hasattr(old, 'fused_attn') and hasattr(new, 'fused_attn'):
        new.fused_attn = old.fused_attn  # e.g. set off on the instance for attention maps
    return new


# ---------------------------------------------------------------------------------------------------------------------
# One builder per timm class: its configuration read back from the instance, the SL layer built, the state copied

def check_sl_args(sl_args: Any, optional: bool = False) -> None:
    """Raise ``TypeError`` unless ``sl_args`` is an :class:`SlArgs` (a dict of switches ended on an AttributeError),
    or None where ``optional``."""
    if not isinstance(sl_args, SlArgs) and not (optional and sl_args is None):
        raise TypeError(f'sl_args={sl_args!r} is invalid; allowed: {"None or " * optional}an SlArgs '
                        f'(SlArgs(**switches)).')


def spt_from_timm(stem: Union[PatchEmbed, ConvEmbedding], sl_args: SlArgs, post_norm: bool = False) -> nn.Module:
    """SPT in place of a timm ``PatchEmbed`` or PiT's ``ConvEmbedding``.

    Kept: the image size, channels, width and, for a ``PatchEmbed``, its grid, image-size policy (strict / dynamic
    padding) and output format. SPT's patch is the stem's stride (SPT patches do not overlap: PiT-XS's 16/8 stem
    becomes an 8 px SPT whose half-patch shift sees the same 16 px), so an overlapping stem's grid changes (see
    :func:`resample_pos_embed`). Nothing is copied: a convolution does not mean what SPT's LayerNorm + Linear over the
    shifted copies means, so SPT starts from its own init. With ``post_norm`` the stem's norm after the projection is
    kept, with its weights; otherwise it is dropped (SPT normalises each patch before projecting).
    """
    if not isinstance(stem, (PatchEmbed, ConvEmbedding)):
        raise TypeError(f'stem={qualname(stem)} is invalid; allowed: {qualname(PatchEmbed)} or '
                        f'{qualname(ConvEmbedding)}.')
    check_sl_args(sl_args)
    spt = dict(**sl_args.spt_kwargs(), **module_dd(stem))
    if type(stem) is ConvEmbedding:
        conv = stem.conv
        return ShiftedPatchEmbed(img_size=stem.img_size, patch_size=conv.stride, in_chans=conv.in_channels,
                                 embed_dim=conv.out_channels, flatten=False, **spt)
    conv = stem.proj
    new = ShiftedPatchEmbed(
        img_size=stem.img_size, patch_size=stem.patch_size, in_chans=conv.in_channels, embed_dim=conv.out_channels,
        flatten=stem.flatten, output_fmt=None if stem.output_fmt == Format.NCHW else stem.output_fmt.value,
        bias=conv.bias is not None, strict_img_size=stem.strict_img_size, dynamic_img_pad=stem.dynamic_img_pad,
        post_norm=False, **spt)
    if post_norm:
        new.norm = copy.deepcopy(stem.norm)  # the same norm over the embedding, with its weights
    return new


def _lsa_attention(attn: Attention, sl_args: SlArgs) -> LocalitySelfAttention:
    """Every constructor option of timm's ``Attention``, its norms and weights, and its kernel choice."""
    norm = attn.q_norm if not isinstance(attn.q_norm, nn.Identity) else attn.norm
    new = LocalitySelfAttention(
        attn.qkv.in_features,
        num_heads=attn.num_heads,
        attn_head_dim=attn.head_dim,
        dim_out=attn.proj.out_features,
        qkv_bias=attn.qkv.bias is not None,
        qk_norm=not isinstance(attn.q_norm, nn.Identity),
        scale_norm=not isinstance(attn.norm, nn.Identity),
        proj_bias=attn.proj.bias is not None,
        gated=attn.gate is not None,
        attn_drop=attn.attn_drop.p,
        proj_drop=attn.proj_drop.p,
        norm_layer=None if isinstance(norm, nn.Identity) else type(norm),
        **sl_args.lsa_kwargs(),
        **module_dd(attn),
    )
    # the norms themselves, not rebuilt from their class: a partial's options (eps, ...) would be lost
    new.q_norm, new.k_norm, new.norm = (copy.deepcopy(m) for m in (attn.q_norm, attn.k_norm, attn.norm))
    return copy_timm_state(new, attn)


def _lsa_window_attention(attn: WindowAttention, sl_args: SlArgs) -> LocalityWindowAttention:
    new = LocalityWindowAttention(
        attn.dim, attn.num_heads, head_dim=attn.qkv.out_features // 3 // attn.num_heads, window_size=attn.window_size,
        qkv_bias=attn.qkv.bias is not None, attn_drop=attn.attn_drop.p, proj_drop=attn.proj_drop.p,
        **sl_args.lsa_kwargs(), **module_dd(attn))
    return copy_timm_state(new, attn)


def _lsa_talking_heads(attn: TalkingHeadAttn, sl_args: SlArgs) -> LocalityTalkingHeadAttn:
    new = LocalityTalkingHeadAttn(
        attn.qkv.in_features, num_heads=attn.num_heads, qkv_bias=attn.qkv.bias is not None,
        attn_drop=attn.attn_drop.p, proj_drop=attn.proj_drop.p, head_dim=attn.qkv.out_features // 3 // attn.num_heads,
        **sl_args.lsa_kwargs(), **module_dd(attn))
    return copy_timm_state(new, attn)


def _lsa_class_attn(attn: ClassAttn, sl_args: SlArgs) -> LocalityClassAttn:
    new = LocalityClassAttn(
        attn.q.in_features, num_heads=attn.num_heads, qkv_bias=attn.q.bias is not None, attn_drop=attn.attn_drop.p,
        proj_drop=attn.proj_drop.p, head_dim=attn.q.out_features // attn.num_heads,
        **class_attn_switches(sl_args.lsa_kwargs()), **module_dd(attn))
    return copy_timm_state(new, attn)


def _spool_pooling(pool: Pooling, sl_args: SlArgs) -> ShiftedTokenPooling:
    """Spool in place of PiT's ``Pooling``: the class-token Linear means the same in both and is copied; the token
    map's merge starts from SPT's own init (a strided conv does not mean what SPT does)."""
    new = ShiftedTokenPooling(pool.fc.in_features, pool.fc.out_features, shift_directions=sl_args.shift_directions,
                              **module_dd(pool))
    copy_timm_state(new.fc, pool.fc, own=())
    return new


def _spool_patch_merging(merge: PatchMerging, sl_args: SlArgs) -> ShiftedPatchMerging:
    """Spool in place of Swin's ``PatchMerging`` (channels-last, same widths). Nothing is copied: its LayerNorm +
    Linear over the 2x2 group do not mean what SPT's over the shifted copies do."""
    return ShiftedPatchMerging(merge.dim, merge.out_dim, shift_directions=sl_args.shift_directions, input_fmt='NHWC',
                               **module_dd(merge))


# timm class -> (kind, builder); matched on the exact class (a subclass may carry options a rebuild would drop)
SL_FORMS: Dict[type, Tuple[str, Converter]] = {
    PatchEmbed: ('spt', spt_from_timm),
    ConvEmbedding: ('spt', spt_from_timm),
    Attention: ('lsa', _lsa_attention),
    WindowAttention: ('lsa', _lsa_window_attention),
    TalkingHeadAttn: ('lsa', _lsa_talking_heads),
    ClassAttn: ('lsa', _lsa_class_attn),
    Pooling: ('spool', _spool_pooling),
    PatchMerging: ('spool', _spool_patch_merging),
}


# Hosts whose own constants follow their SL child: (host class, child class) -> the host's SL class, which adds no
# state, only makes the constants. timm builds Swin's blocks inline (no seam for the block or its attention), so the
# block that gets an LSA attention becomes a LocalitySwinBlock in place; its attn_mask then holds LSA's pattern.
SL_HOSTS: Dict[type, Tuple[type, type]] = {
    SwinTransformerBlock: (LocalityWindowAttention, LocalitySwinBlock),
}


def convert_module(module: nn.Module, sl_args: Optional[SlArgs] = None) -> nn.Module:
    """The SL form of one timm ``module`` (the :data:`SL_FORMS` entry of its exact class), built with ``sl_args``
    (default: SPT and LSA on).

    Raises:
        TypeError: ``module``'s class has no SL form.
    """
    form = SL_FORMS.get(type(module))
    if form is None:
        raise TypeError(f'{qualname(module)} has no SL form; allowed: {", ".join(map(qualname, SL_FORMS))}.')
    if sl_args is not None:
        check_sl_args(sl_args)
    return form[1](module, sl_args or SlArgs())


# ---------------------------------------------------------------------------------------------------------------------
# Planning and swapping

@dataclass(frozen=True)
class Replacement:
    """One planned swap: the module (or position map) at ``path`` becomes ``build()``."""
    path: str  # dotted path of the module (or parameter) to replace
    kind: str  # 'spt', 'lsa', 'spool', 'pos_embed'
    source: str  # qualified class name of what is replaced
    build: Callable[[], Union[nn.Module, nn.Parameter]]


def resample_pos_embed(pos_embed: nn.Parameter, grid: Tuple[int, int]) -> nn.Parameter:
    """A ``(1, D, H, W)`` position map resampled (bicubic) to ``grid``: the position-embedding policy for a stem
    whose grid changed (see the module docstring)."""
    if not isinstance(pos_embed, torch.Tensor) or pos_embed.dim() != 4:
        raise ValueError(f'pos_embed of shape {tuple(getattr(pos_embed, "shape", ())) or type(pos_embed).__name__} is '
                         f'invalid; allowed: a (1, D, H, W) position map.')
    check_size(grid, 'grid')
    with torch.no_grad():
        value = F.interpolate(pos_embed.float(), size=grid, mode='bicubic', align_corners=False)
    return nn.Parameter(value.to(pos_embed.dtype), requires_grad=pos_embed.requires_grad)


def _pos_embed_step(model: nn.Module, stem_path: str, stem: nn.Module) -> Optional[Replacement]:
    """The parent's position map follows a conv stem whose grid changes under SPT (patch = stride)."""
    if not isinstance(stem, ConvEmbedding):
        return None  # a PatchEmbed keeps its grid
    parent_path = stem_path.rpartition('.')[0]
    pos_embed = getattr(model.get_submodule(parent_path), 'pos_embed', None)
    grid = tuple(s // p for s, p in zip(stem.img_size, stem.conv.stride))
    if not isinstance(pos_embed, nn.Parameter) or pos_embed.dim() != 4 or tuple(pos_embed.shape[-2:]) == grid:
        return None
    path = f'{parent_path}.pos_embed' if parent_path else 'pos_embed'
    return Replacement(path, 'pos_embed', 'nn.Parameter', lambda: resample_pos_embed(pos_embed, grid))


def plan_replacements(
        model: nn.Module,
        sl_args: SlArgs,
        kinds: Collection[str] = KINDS,
        forms: Optional[Mapping[type, Optional[Tuple[str, Converter]]]] = None,
) -> List[Replacement]:
    """Every module of ``model`` (in module order) whose class has an SL form of one of ``kinds``, as a
    :class:`Replacement`; a replaced stem whose grid changes brings its position map's resampling along.

    Args:
        model: The model to plan for (not changed).
        sl_args: The switches the forms are built with.
        kinds: Which of 'spt', 'lsa', 'spool' to convert.
        forms: Entries added to (or, mapped to ``None``, removed from) :data:`SL_FORMS` for this plan.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f'model={type(model).__name__} is invalid; allowed: an nn.Module (timm.create_model(name)).')
    check_sl_args(sl_args)
    table = dict(SL_FORMS)
    for cls, form in (forms or {}).items():
        if form is None:
            table.pop(cls, None)
        else:
            table[cls] = form
    known = sorted(set(KINDS) | {form[0] for form in table.values()})
    unknown = list(kinds) if isinstance(kinds, str) else [k for k in kinds if k not in known]
    if unknown:  # a misspelled kind converted nothing of it, without a word; a string was read letter by letter
        raise ValueError(f'kinds={kinds!r} is invalid; allowed: a collection of {", ".join(map(repr, known))}.')
    steps = []
    for path, module in model.named_modules():
        kind, convert = table.get(type(module), (None, None))
        if kind not in kinds:
            continue
        steps.append(Replacement(path, kind, qualname(module), lambda m=module, c=convert: c(m, sl_args)))
        if kind == 'spt':
            pos_step = _pos_embed_step(model, path, module)
            if pos_step is not None:
                steps.append(pos_step)
    return steps


def replace_modules(model: nn.Module, steps: List[Replacement]) -> nn.Module:
    """Build every replacement (in order: that order is the order random inits draw in), then swap them all in, so a
    failing build leaves ``model`` as it was. A new module takes the train / eval mode of the one it replaces; its
    parent, when :data:`SL_HOSTS` lists the pair, becomes the host's SL class and remakes its constants."""
    built = [(step.path, step.build()) for step in steps]
    for path, new in built:
        parent_path, _, attr = path.rpartition('.')
        parent = model.get_submodule(parent_path)
        if isinstance(new, nn.Module):
            new.train(getattr(parent, attr).training)
        setattr(parent, attr, new)
        host = SL_HOSTS.get(type(parent))
        if host is not None and isinstance(new, host[0]):
            parent.__class__ = host[1]
            parent.init_non_persistent_buffers()
    return model


def convert_modules(
        model: nn.Module,
        sl_args: SlArgs,
        kinds: Collection[str] = KINDS,
        forms: Optional[Mapping[type, Optional[Tuple[str, Converter]]]] = None,
) -> nn.Module:
    """:func:`plan_replacements` then :func:`replace_modules`: ``model`` with its modules of ``kinds`` in SL form."""
    return replace_modules(model, plan_replacements(model, sl_args, kinds, forms))
