"""The one path from timm modules to their SL forms.

:data:`SL_FORMS` maps each timm class the package has an SL form of to that form's ``from_timm`` constructor (with the
switches of an :class:`~timm_sl.layers.SlArgs`); :func:`plan_replacements` lists the modules of a model to replace
(in module order), :func:`replace_modules` builds every replacement and then swaps them all in. The families whose
timm class has no constructor seam for a layer (SL-PiT's stem, attention and pooling; SL-Swin's attention and merging,
through :func:`convert_modules`) and :func:`timm_sl.slify` (which plans one kind after the other, with its own checks)
both convert through these.

Position-embedding policy for a replaced stem: when the new stem's token grid differs from the old one (PiT's
overlapping conv stem becomes a non-overlapping SPT: 27x27 -> 28x28 at 224 px), the parent's ``(1, D, H, W)`` position
map is resampled (bicubic) to the new grid, keeping what it holds (pretrained position information under ``slify``);
where the grid does not change (every small-data config) it is left exactly as it is.
"""
from dataclasses import dataclass
from typing import Callable, Collection, Dict, List, Mapping, Optional, Tuple, Union

import torch
import torch.nn.functional as F
from torch import nn

from timm.layers import Attention, PatchEmbed
from timm.models.cait import ClassAttn, TalkingHeadAttn
from timm.models.pit import ConvEmbedding, Pooling
from timm.models.swin_transformer import PatchMerging, WindowAttention

from .from_timm import qualname
from .lsa import LocalitySelfAttention
from .lsa_cait import LocalityClassAttn, LocalityTalkingHeadAttn
from .lsa_window import LocalityWindowAttention
from .sl_args import SlArgs
from .spool import ShiftedTokenPooling
from .spt import ShiftedPatchEmbed, ShiftedPatchMerging

__all__ = ['KINDS', 'Converter', 'Replacement', 'SL_FORMS', 'convert_modules', 'plan_replacements', 'replace_modules',
           'resample_pos_embed']

Converter = Callable[[nn.Module, SlArgs], nn.Module]
KINDS = ('spt', 'lsa', 'spool')


def _spt(stem: nn.Module, sl_args: SlArgs) -> nn.Module:
    return ShiftedPatchEmbed.from_timm(stem, **sl_args.spt_kwargs())


def _lsa(lsa_cls: type) -> Converter:
    def convert(attn: nn.Module, sl_args: SlArgs) -> nn.Module:
        return lsa_cls.for_switches(sl_args).from_timm(attn)
    return convert


def _spool(spool_cls: type) -> Converter:
    def convert(pool: nn.Module, sl_args: SlArgs) -> nn.Module:
        return spool_cls.from_timm(pool, shift_directions=sl_args.shift_directions)
    return convert


# timm class -> (kind, converter); matched on the exact class (a subclass may carry options a rebuild would drop)
SL_FORMS: Dict[type, Tuple[str, Converter]] = {
    PatchEmbed: ('spt', _spt),
    ConvEmbedding: ('spt', _spt),
    Attention: ('lsa', _lsa(LocalitySelfAttention)),
    WindowAttention: ('lsa', _lsa(LocalityWindowAttention)),
    TalkingHeadAttn: ('lsa', _lsa(LocalityTalkingHeadAttn)),
    ClassAttn: ('lsa', _lsa(LocalityClassAttn)),
    Pooling: ('spool', _spool(ShiftedTokenPooling)),
    PatchMerging: ('spool', _spool(ShiftedPatchMerging)),
}


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
        forms: Optional[Mapping[type, Tuple[str, Converter]]] = None,
) -> List[Replacement]:
    """Every module of ``model`` (in module order) whose class has an SL form of one of ``kinds``, as a
    :class:`Replacement`; a replaced stem whose grid changes brings its position map's resampling along.

    Args:
        model: The model to plan for (not changed).
        sl_args: The switches the forms are built with.
        kinds: Which of 'spt', 'lsa', 'spool' to convert.
        forms: Entries added to (or, mapped to ``None``, removed from) :data:`SL_FORMS` for this plan.
    """
    table = dict(SL_FORMS)
    for cls, form in (forms or {}).items():
        if form is None:
            table.pop(cls, None)
        else:
            table[cls] = form
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
    failing build leaves ``model`` as it was. A new module takes the train / eval mode of the one it replaces."""
    built = [(step.path, step.build()) for step in steps]
    for path, new in built:
        parent_path, _, attr = path.rpartition('.')
        parent = model.get_submodule(parent_path)
        if isinstance(new, nn.Module):
            new.train(getattr(parent, attr).training)
        setattr(parent, attr, new)
    return model


def convert_modules(
        model: nn.Module,
        sl_args: SlArgs,
        kinds: Collection[str] = KINDS,
        forms: Optional[Mapping[type, Tuple[str, Converter]]] = None,
) -> nn.Module:
    """:func:`plan_replacements` then :func:`replace_modules`: ``model`` with its modules of ``kinds`` in SL form."""
    return replace_modules(model, plan_replacements(model, sl_args, kinds, forms))
