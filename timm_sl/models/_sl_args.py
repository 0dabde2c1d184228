"""Model-kwargs checks of the ``sl_`` families; the SL switches themselves (:class:`SlArgs`) live in
:mod:`timm_sl.layers.sl_args` (shared with :func:`timm_sl.slify`) and are re-exported here."""
import inspect
from typing import Any, Dict, Tuple

from ..layers.sl_args import (  # noqa: F401  (re-exported: the families' and users' import path)
    SL_ARG_NAMES, SlArgs, accepted_kwargs, check_bool, check_model_kwargs, check_optional_bool, check_options_used,
    unused_options, without_unused_options)
from ..layers.spt import (  # noqa: F401  (slify's too)
    MAX_GLOBAL_TOKENS, asked_for, check_global_tokens, check_size, owner_name, patch_grid)

__all__ = ['MAX_GLOBAL_TOKENS', 'SlArgs', 'SL_ARG_NAMES', 'accepted_kwargs', 'asked_for', 'backbone_kwarg',
           'check_bool', 'check_depths', 'check_global_tokens', 'check_model_kwargs', 'check_optional_bool',
           'check_options_used', 'check_patch_tokens', 'owner_name', 'patch_grid', 'unused_options',
           'without_unused_options']


def check_depths(kwargs: Dict[str, Any], *names: str, per_stage: bool = False, positive: Tuple[str, ...] = ()) -> None:
    """Check depth kwargs before timm builds anything: each an int >= 0 (>= 1 for those in ``positive``: widths, head
    counts), or (``per_stage``) a non-empty sequence of them, all such sequences of one length. Raises ``ValueError``
    naming the value and what is allowed."""
    lengths = {}
    for name in names:
        if name not in kwargs:
            continue
        value, low = kwargs[name], 1 if name in positive else 0
        items = value if per_stage and isinstance(value, (tuple, list)) else [value]
        if per_stage and not isinstance(value, (tuple, list)):  # timm takes len() of it: 'int' has no len()
            items = []
        if not items or not all(isinstance(v, int) and not isinstance(v, bool) and v >= low for v in items):
            shape = f'a non-empty tuple of ints >= {low} (one per stage)' if per_stage else f'an int >= {low}'
            raise ValueError(f'{name}={value!r} is invalid; allowed: {shape}.')
        if per_stage:
            lengths[name] = len(items)
    if len(set(lengths.values())) > 1:
        raise ValueError(f'per-stage kwargs disagree on the number of stages: {lengths}; allowed: equal lengths.')


def backbone_kwarg(kwargs: Dict[str, Any], backbone: type, name: str) -> Any:
    """``kwargs[name]``, else the default of ``backbone``'s constructor argument ``name``."""
    if name in kwargs:
        return kwargs[name]
    return inspect.signature(backbone).parameters[name].default


def check_patch_tokens(model_cls: type, kwargs: Dict[str, Any], backbone: type) -> None:
    """:func:`check_global_tokens` for a backbone whose tokens are one patch grid (``img_size`` / ``patch_size``
    kwargs as timm's ``PatchEmbed``: ViT, CaiT), each size checked first (``img_size=None``: a dynamic size)."""
    img, patch = backbone_kwarg(kwargs, backbone, 'img_size'), backbone_kwarg(kwargs, backbone, 'patch_size')
    if img is not None:
        check_size(img, 'img_size')
    check_size(patch)
    grid = patch_grid(img, patch, ceil=kwargs.get('dynamic_img_pad') is True)
    check_global_tokens(model_cls, grid, f'img_size={img!r}, patch_size={patch!r}')
