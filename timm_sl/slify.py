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
import inspect
import logging
import re
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, Optional, Set, Tuple, Union

import torch
from torch import nn

import timm
from timm.layers import PatchEmbed
from timm.models import build_model_with_cfg, load_pretrained
from timm.models.swin_transformer import WindowAttention

from .convert import SL_FORMS, Replacement, check_sl_args, plan_replacements, qualname, replace_modules, \
    spt_from_timm
from .layers import (
    SL_ARG_NAMES, LsaMixin, ShiftedPatchEmbed, ShiftedPatchProjection, SlArgs, check_bool, check_model_kwargs,
    check_optional_bool, check_options_used, resolve_shift)
from .layers.sl_args import accepted_kwargs, paired_kwargs
from .layers.spt import check_global_tokens, check_not_empty, check_size, patch_grid

__all__ = ['SlifyError', 'SlifyPlan', 'SLIFY_ARG_NAMES', 'plan_slify', 'slify', 'slify_refusal', 'converted_weights',
           'convert_model']

# slify's own switches next to the SL switches every sl_ model takes
SLIFY_ARG_NAMES: Tuple[str, ...] = SL_ARG_NAMES + ('spt_pool', 'spt_post_norm')

# class names that look like attention; blocks / stages holding one are not attention themselves, and attention
# *pooling* heads (ViT's 'map' pool) attend from learned latent queries: no self-relation for LSA to mask
_ATTENTION_NAME = re.compile(r'attention|attn', re.IGNORECASE)
_NOT_ATTENTION_NAME = re.compile(r'block|layer|stage|pool', re.IGNORECASE)
_POOL_NAME = re.compile(r'pool', re.IGNORECASE)


class SlifyError(ValueError):
    """A model ``slify`` cannot convert; ``reasons`` lists every part that stands in the way."""

    def __init__(self, model_name: str, reasons: List[str]) -> None:
        self.model_name = model_name
        self.reasons = list(reasons)
        super().__init__(f'cannot slify {model_name}: {"; ".join(reasons)}.')


def _forms_of(kind: str) -> Tuple[type, ...]:
    return tuple(cls for cls, (k, _) in SL_FORMS.items() if k == kind)


# ---------------------------------------------------------------------------------------------------------------------
# Planning: what to convert comes from the shared table (timm_sl.convert); slify adds the checks that say why
# a model cannot be converted, and plans one kind after the other (stem, attention, pooling: the order its random
# inits draw in)

@dataclass(frozen=True)
class SlifyPlan:
    """Every replacement a conversion makes (``steps``), or why it cannot be made (``reasons``)."""
    model_name: str
    steps: Tuple[Replacement, ...]
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
        return replace_modules(model, list(self.steps))


def _attention_reason(module: nn.Module) -> str:
    """Why an attention class has no LSA form, with the position scheme that rules out a drop-in where one shows."""
    reason = f'attention class {qualname(module)} has no LSA form'
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
    """A class named as attention (not a block, stage or pooling head holding one), or one that computes attention
    under another name: heads and an attention dropout of its own (ConViT's ``MHSA`` / ``GPSA``, XCiT's ``XCA``, a
    ViT's ``ParallelScalingBlock``)."""
    name = type(module).__name__
    if _ATTENTION_NAME.search(name) and not _NOT_ATTENTION_NAME.search(name):
        return True
    return not _POOL_NAME.search(name) and isinstance(getattr(module, 'num_heads', None), int) \
        and isinstance(getattr(module, 'attn_drop', None), nn.Module)


def _plan_spt(model: nn.Module, sl_args: SlArgs, post_norm: bool, steps: List[Replacement],
              reasons: List[str]) -> None:
    stem_classes = _forms_of('spt')
    stems = [(n, m) for n, m in model.named_modules() if type(m) in stem_classes]
    if not stems:
        found = ''
        for attr in ('patch_embed', 'stem'):
            if isinstance(getattr(model, attr, None), nn.Module):
                found = f' (its {attr} is {qualname(getattr(model, attr))})'
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

    if post_norm and isinstance(getattr(stem, 'norm', None), (nn.Identity, type(None))):
        reasons.append(f'spt_post_norm=True keeps the norm after {path}, and it has none; allowed: spt_post_norm '
                       f'left out')
        return

    def spt_with_norm(old: nn.Module, args: SlArgs) -> nn.Module:
        return spt_from_timm(old, args, post_norm=post_norm)

    # PiT's overlapping conv stem: its position map is resampled to SPT's grid (the shared policy)
    steps += plan_replacements(model, sl_args, kinds=('spt',), forms={PatchEmbed: ('spt', spt_with_norm)})


def plan_slify(
        model: nn.Module,
        sl_args: Optional[SlArgs] = None,
        spt_pool: Optional[bool] = None,
        spt_post_norm: bool = False,
        model_name: Optional[str] = None,
) -> SlifyPlan:
    """Plan the conversion of ``model`` without changing it (see :func:`slify` for the arguments)."""
    if not isinstance(model, nn.Module):  # a name: 'str' object has no attribute 'modules'
        raise TypeError(f'plan_slify takes a model instance, not {type(model).__name__}; allowed: an nn.Module '
                        f'(slify_refusal(name, ...) for a timm model name).')
    check_sl_args(sl_args, optional=True)
    sl_args = sl_args or SlArgs()
    asked_pool = spt_pool
    spt_pool = sl_args.spt if spt_pool is None else spt_pool
    model_name = model_name or type(model).__name__
    steps: List[Replacement] = []
    reasons: List[str] = []
    already = sorted({type(m).__name__ for m in model.modules() if isinstance(m, (LsaMixin, ShiftedPatchProjection))})
    if already:
        return SlifyPlan(model_name, (), (f'it already has SL layers ({", ".join(already)})',))
    if sl_args.spt:
        _plan_spt(model, sl_args, spt_post_norm, steps, reasons)
    if sl_args.uses_lsa_layer:
        lsa_steps = plan_replacements(model, sl_args, kinds=('lsa',))
        lsa_classes = _forms_of('lsa')
        for module in model.modules():
            if type(module) not in lsa_classes and _looks_like_attention(module):
                reason = _attention_reason(module)
                if reason not in reasons:
                    reasons.append(reason)
        if not lsa_steps and not reasons:
            reasons.append('no attention layer for LSA')
        steps += lsa_steps
    pool_steps = plan_replacements(model, sl_args, kinds=('spool',))
    if asked_pool is not None and not pool_steps:  # as an sl_ model without pooling refuses the kwarg
        reasons.append(f"spt_pool={asked_pool} has no pooling layer to act on (Spool replaces PiT's conv pooling "
                       f"and Swin's PatchMerging); allowed: spt_pool unset")
    if spt_pool:
        steps += pool_steps
    if not steps and not reasons:
        reasons.append('nothing to convert with these switches')
    return SlifyPlan(model_name, tuple(steps), tuple(reasons))


def _global_attention(model: nn.Module) -> bool:
    """Whether ``model`` attends over its whole token grid at once (not in windows, as Swin does)."""
    return not any(isinstance(m, WindowAttention) for m in model.modules())


def _check_tokens(model: nn.Module, sl_args: SlArgs, model_name: str) -> None:
    """The ``sl_`` models' bound on global attention (:func:`~timm_sl.layers.spt.check_global_tokens`) for the token
    grid ``model``'s stem gives once converted: ``ValueError`` before a ``slify(name, img_size=4096)`` is built. Under
    windows (Swin; memory grows with the image area only) the grid must still hold a token: timm builds a Swin of an
    img_size below its patch (a 0x0 grid) that no input can run."""
    check = check_global_tokens if _global_attention(model) else check_not_empty
    for stem in (m for m in model.modules() if type(m) in _forms_of('spt')):
        asked = f'img_size={stem.img_size!r}, patch_size={stem.patch_size!r}'
        if isinstance(stem, PatchEmbed):
            grid = patch_grid(stem.img_size, stem.patch_size, ceil=stem.dynamic_img_pad)
        else:  # PiT's conv stem: SPT takes patches of its stride, the baseline's conv overlaps
            conv = stem.conv
            grid = patch_grid(stem.img_size, conv.stride) if sl_args.spt else patch_grid(
                stem.img_size, conv.kernel_size, conv.stride, conv.padding[0])
            asked += f', stride={conv.stride[0]}'
        check(f'slify of {model_name}', grid, asked)


def _check_embed_norm(create_kwargs: Dict[str, Any], sl_args: SlArgs, spt_post_norm: bool, name: str) -> None:
    """Refuse ``embed_norm_layer`` asked of a model whose patch embedding SPT replaces without its norm: the norm
    would be built, then dropped with the convolution it follows."""
    norm = create_kwargs.get('embed_norm_layer')
    if norm is not None and sl_args.spt and not spt_post_norm:
        raise ValueError(f'slify of {name}: embed_norm_layer={norm!r} asks for a norm after the patch embedding, '
                         f'which SPT drops (it normalises each patch before projecting); allowed: spt_post_norm=True '
                         f'to keep it, spt=False, or embed_norm_layer left out.')


def _split_kwargs(kwargs: Dict[str, Any]) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """(slify switches, everything else) of a kwargs dict."""
    switches = {k: kwargs[k] for k in SLIFY_ARG_NAMES if k in kwargs}
    return switches, {k: v for k, v in kwargs.items() if k not in switches}


def _factory_kwarg_names() -> Set[str]:
    """Kwargs that ``timm.create_model`` and ``build_model_with_cfg`` take themselves (never the model class's)."""
    names = {'features_only', 'out_indices', 'feature_cls', 'pruned'}  # popped inside build_model_with_cfg
    for fn in (timm.create_model, build_model_with_cfg):
        names |= {p.name for p in inspect.signature(fn).parameters.values() if p.kind == p.POSITIONAL_OR_KEYWORD}
    return names


def _unknown_kwargs_error(name: str, create_kwargs: Dict[str, Any]) -> Optional[Exception]:
    """The one-line error naming the kwargs of ``create_kwargs`` that ``name``'s model class does not take, and the
    allowed ones (the SL switches and that class's constructor kwargs), or a value it refuses; None when none can be
    named."""
    try:
        with torch.device('meta'):
            model_cls = type(timm.create_model(name))
    except Exception:  # a model that needs kwargs to build at all: leave timm's own error
        return None
    given = {k: v for k, v in create_kwargs.items() if k not in _factory_kwarg_names()}
    try:
        owner = f'slify of {name} ({model_cls.__name__})'
        check_model_kwargs(model_cls, given, also_allowed=SLIFY_ARG_NAMES, owner=owner, complete=False,
                           known=_registered_config(name, model_cls, given))
    except (TypeError, ValueError) as error:
        return error
    return None


def _registered_config(name: str, model_cls: type, given: Dict[str, Any]) -> Dict[str, Any]:
    """The arguments timm's model function for ``name`` hands ``model_cls`` (``vit_small_patch16_224``:
    ``num_heads=6``, where the class default is 12), read as the constructor is entered while it builds on the meta
    device; ``{}`` when ``given`` holds no kwarg checked against another, or when it cannot be built."""
    if not paired_kwargs(model_cls) & set(given):
        return {}
    code = getattr(model_cls.__init__, '__code__', None)
    seen: Dict[str, Any] = {}

    def watch(frame: Any, event: str, arg: Any) -> None:
        if event == 'call' and frame.f_code is code and not seen:
            args = dict(frame.f_locals)
            for value in [v for k, v in args.items() if k == 'kwargs' and isinstance(v, dict)]:
                args.update(value)
            seen.update({k: v for k, v in args.items() if k not in ('self', '__class__', 'kwargs')})

    previous = sys.getprofile()
    sys.setprofile(watch)
    try:
        with torch.device('meta'):
            timm.create_model(name)
    except Exception:  # a model that needs kwargs to build at all: nothing known
        return {}
    finally:
        sys.setprofile(previous)
    return seen


def _meta_twin(name: str, create_kwargs: Dict[str, Any]) -> nn.Module:
    """``name`` built on the meta device (no memory, no weights): enough to plan a conversion, so a refused name
    builds nothing real and downloads nothing. A kwarg the model class does not take fails here, in one line, and so
    does an ``img_size`` that is not a positive int or pair (timm's own errors name no kwarg, or accept ``True``)."""
    for key in ('img_size', 'patch_size'):  # patch_size=0: timm's ZeroDivisionError (PiT: a stem of no kernel)
        size = create_kwargs.get(key)
        if size is not None and _unknown_kwargs_error(name, {key: size}) is None:
            check_size(size, key)
    try:
        with torch.device('meta'):
            twin = timm.create_model(name, **create_kwargs)
    except (TypeError, AssertionError, IndexError, ValueError, RuntimeError, KeyError) as error:  # timm's name no kwarg
        # (global_pool='maxx'), or fail deep in torch (depth=-1: 'number of steps must be non-negative')
        unknown = _unknown_kwargs_error(name, create_kwargs)
        if unknown is None:
            raise
        raise unknown from error
    # text for a bool kwarg (qkv_bias='maybe' is true) and the values an sl_ model refuses (num_classes=-1: no
    # classifier, a NaN drop rate): timm builds them without a word (checked on the model's class: not the wrapper
    # features_only makes, which takes none of them; a kwarg its model function took itself is timm's to judge)
    model_cls = _model_class(name, create_kwargs, twin)
    if model_cls is not None:
        given = {k: v for k, v in create_kwargs.items() if k in accepted_kwargs(model_cls)}
        check_model_kwargs(model_cls, given, also_allowed=SLIFY_ARG_NAMES,
                           owner=f'slify of {name} ({model_cls.__name__})', complete=False,
                           known=_registered_config(name, model_cls, given))
    return twin


def _model_class(name: str, create_kwargs: Dict[str, Any], twin: nn.Module) -> Optional[type]:
    """The class of the model ``name`` builds: ``twin``'s, or with ``features_only`` (whose wrapper takes none of the
    model's kwargs) that of the same model built without it on the meta device; None when that cannot be built."""
    if not create_kwargs.get('features_only'):
        return type(twin)
    plain = {k: v for k, v in create_kwargs.items() if k not in _factory_kwarg_names()}
    try:
        with torch.device('meta'):
            return type(timm.create_model(name, **plain))
    except Exception:  # a kwarg only features_only takes: the features model built, and its checks stand
        return None


def _target(model_or_name: Union[str, nn.Module], create_kwargs: Dict[str, Any],
            pretrained: bool = False) -> Tuple[nn.Module, str]:
    """The model a conversion is planned on (a meta-device twin for a name) and the name its refusals give."""
    if isinstance(model_or_name, str):
        return _meta_twin(model_or_name, create_kwargs), model_or_name
    if not isinstance(model_or_name, nn.Module):
        raise TypeError(f'slify takes a timm model name or an nn.Module, not {type(model_or_name).__name__}.')
    if create_kwargs or pretrained:
        given = sorted(create_kwargs) + (['pretrained'] if pretrained else [])
        raise TypeError(f'slify got model kwargs {given} with a model instance; allowed with an instance: '
                        f'{", ".join(SLIFY_ARG_NAMES)} (pass a model name to create one).')
    name = (getattr(model_or_name, 'pretrained_cfg', None) or {}).get('architecture') or type(model_or_name).__name__
    return model_or_name, name


def _parse_switches(kwargs: Dict[str, Any], spt_pool: Optional[bool],
                    spt_post_norm: bool) -> Tuple[SlArgs, Dict[str, Any]]:
    """(validated SL switches, ``create_model`` kwargs) of slify's arguments."""
    switches, create_kwargs = _split_kwargs(kwargs)
    sl_args = SlArgs(**switches)
    check_optional_bool('spt_pool', spt_pool)
    check_options_used({**switches, **({} if spt_pool is None else {'spt_pool': spt_pool}),
                        'spt_post_norm': spt_post_norm}, 'slify')
    check_bool('spt_post_norm', spt_post_norm)
    return sl_args, create_kwargs


class _Found(Exception):
    """Carries the state dict timm's loader read out of ``load_pretrained`` (see :func:`_pretrained_sl_weights`)."""

    def __init__(self, state_dict: Dict[str, torch.Tensor]) -> None:
        super().__init__('state dict read')
        self.state_dict = state_dict


def _hand_over(state_dict: Dict[str, torch.Tensor], model: Optional[nn.Module] = None) -> Dict[str, torch.Tensor]:
    raise _Found(state_dict)


def _holds_sl_layers(state_dict: Dict[str, torch.Tensor]) -> bool:
    """Keys (or a shape) only SPT / LSA make: an SPT projection (a Linear with its LayerNorm), LSA's temperature."""
    embed = state_dict.get('patch_embed.proj.weight')
    return (embed is not None and embed.ndim == 2) or any(
        k.endswith('.temperature') or '.proj.norm.' in k for k in state_dict)


# timm's loaders log where they read from and what they found: said once, by the load that builds the model
_LOADER_LOGS = ('timm.models._builder', 'timm.models._helpers', 'timm.models._hub')


@contextmanager
def _quiet_loaders() -> Iterator[None]:
    """timm's loading logs held back (a read that only checks the weights, before the load that uses them)."""
    def drop(record: logging.LogRecord) -> bool:
        return False
    loggers = [logging.getLogger(name) for name in _LOADER_LOGS]
    for logger in loggers:
        logger.addFilter(drop)
    try:
        yield
    finally:
        for logger in loggers:
            logger.removeFilter(drop)


def _pretrained_sl_weights(twin: nn.Module) -> Optional[Dict[str, torch.Tensor]]:
    """The state dict ``twin``'s pretrained cfg points at (file, url, Hub, ...; read by timm's own loader) when it
    holds SL layers' weights, i.e. a converted model's; None for the base model's own weights, a custom-load
    format, or a source timm cannot read (the ordinary ``create_model`` path then loads or reports it)."""
    cfg = getattr(twin, 'pretrained_cfg', None) or {}
    if not cfg or cfg.get('custom_load'):
        return None
    try:
        with _quiet_loaders():  # the load that follows (or create_model's) logs what it reads
            load_pretrained(twin, dict(cfg), filter_fn=_hand_over)
    except _Found as found:
        return found.state_dict if _holds_sl_layers(found.state_dict) else None
    except Exception:  # no weights, no network, ...: create_model(pretrained=True) says so as it always has
        return None
    return None


def converted_weights(name: str, **kwargs: Any) -> Optional[Dict[str, torch.Tensor]]:
    """The pretrained state dict of ``timm.create_model(name, pretrained=True, **kwargs)`` (slify switches ignored)
    when it holds a converted model's weights (SPT / LSA keys), else None. Builds nothing real."""
    _, create_kwargs = _split_kwargs(kwargs)
    return _pretrained_sl_weights(_meta_twin(name, create_kwargs))


def slify_refusal(
        model_or_name: Union[str, nn.Module],
        spt_pool: Optional[bool] = None,
        spt_post_norm: bool = False,
        **kwargs: Any,
) -> Optional[str]:
    """The refusal message ``slify`` would raise for these arguments, or None when it converts (nothing is built for
    real and nothing is changed). Invalid arguments raise as they do in ``slify``."""
    sl_args, create_kwargs = _parse_switches(kwargs, spt_pool, spt_post_norm)
    model, name = _target(model_or_name, create_kwargs)
    plan = plan_slify(model, sl_args, spt_pool, spt_post_norm, model_name=name)
    if plan.ok:  # what is asked of a model slify converts (a refused one is told why it is refused)
        _check_embed_norm(create_kwargs, sl_args, spt_post_norm, name)
        _check_tokens(model, sl_args, name)
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
            weights carry over, SPT starts fresh). ``pretrained_cfg_overlay=dict(file=...)`` loads a local file
            of the base's weights; converted (SL) weights are refused: the registered ``slify`` model loads them.
        spt_pool: Spool in place of PiT's conv pooling / Swin's ``PatchMerging``; ``None`` follows ``spt``. Set on
            a model with no such pooling, it is refused (it would record a Spool switch that acts on nothing).
        spt_post_norm: Keep the patch embedding's norm after SPT. Off by default: SPT normalises each patch before
            projecting, and the reference code (and this package's SL-Swin) drop Swin's post-embedding LayerNorm.
        **kwargs: The SL switches of :class:`timm_sl.models.SlArgs` (``spt``, ``shift_ratio``, ``shift_directions``,
            ``lsa``, ``lsa_mask``, ``lsa_learn_temp``, ``lsa_temp_ratio``); with a name, also ``create_model`` kwargs.

    Returns:
        The converted model (same class as the base; ``model.sl_args`` holds the switches).

    Raises:
        SlifyError: a part of the model cannot be converted; the message names each reason, the model is untouched.
        ValueError: an invalid SL switch (e.g. a shift ratio that gives a 0 px shift for this patch size), or
            ``pretrained=True`` with weights of a converted model.
        TypeError: ``create_model`` kwargs given with a model instance, or, with a name, a kwarg the model's class
            does not take (the message names it and lists the allowed ones; nothing is built).
    """
    return convert_model(model_or_name, pretrained, spt_pool, spt_post_norm, kwargs)


def convert_model(model_or_name: Union[str, nn.Module], pretrained: bool, spt_pool: Optional[bool],
                  spt_post_norm: bool, kwargs: Dict[str, Any], check_weights: bool = True) -> nn.Module:
    """:func:`slify`; ``check_weights=False`` skips reading the pretrained weights to refuse a converted model's (for
    a caller that has read them already: the ``slify`` model)."""
    check_bool('pretrained', pretrained)  # pretrained='False' is true: it would load (or download) weights
    sl_args, create_kwargs = _parse_switches(kwargs, spt_pool, spt_post_norm)
    model, name = _target(model_or_name, create_kwargs, pretrained)
    if isinstance(model_or_name, str):  # planned on the meta twin: a refused name builds nothing real
        plan = plan_slify(model, sl_args, spt_pool, spt_post_norm, model_name=name)
        if not plan.ok:
            raise SlifyError(name, list(plan.reasons))
        _check_embed_norm(create_kwargs, sl_args, spt_post_norm, name)  # create kwargs come with a name only
        _check_tokens(model, sl_args, name)
        if pretrained and check_weights and _pretrained_sl_weights(model) is not None:
            where = model.pretrained_cfg.get('file') or model.pretrained_cfg.get('hf_hub_id') or 'the pretrained cfg'
            raise ValueError(
                f'{where} holds converted (SL) weights, and slify(pretrained=True) loads {name}\'s own weights before '
                f'converting; allowed: timm.create_model(\'slify\', base={name!r}, pretrained=True, ...) with the '
                f'same pretrained_cfg_overlay, which converts first and loads them (adapted to num_classes, in_chans, '
                f'img_size)')
        model = timm.create_model(name, pretrained=pretrained, **create_kwargs)
    plan = plan_slify(model, sl_args, spt_pool, spt_post_norm, model_name=name)
    if plan.ok:
        _check_tokens(model, sl_args, name)
    pooling = bool(plan_replacements(model, sl_args, kinds=('spool',)))  # a ViT has nothing Spool acts on
    plan.apply(model)
    for stem in model.modules():  # its resize keeps the bound
        if isinstance(stem, ShiftedPatchEmbed):
            stem.global_tokens = _global_attention(model)
    model.sl_args = sl_args
    if pooling:  # recorded where it acts, as sl_pit / sl_swin record it: a ViT's notes said spt_pool=True
        model.spt_pool = sl_args.spt if spt_pool is None else spt_pool
    return model
