"""Model-kwargs checks of the ``sl_`` families; the SL switches themselves (:class:`SlArgs`) live in
:mod:`timm_sl.layers.sl_args` (shared with :func:`timm_sl.slify`) and are re-exported here."""
import inspect
from typing import Any, Dict, Optional, Tuple

from timm.layers import to_2tuple

from ..layers.sl_args import (  # noqa: F401  (re-exported: the families' and users' import path)
    SL_ARG_NAMES, SlArgs, accepted_kwargs, check_bool, check_model_kwargs, check_optional_bool)

__all__ = ['MAX_GLOBAL_TOKENS', 'SlArgs', 'SL_ARG_NAMES', 'accepted_kwargs', 'backbone_kwarg', 'check_bool',
           'check_depths', 'check_global_tokens', 'check_model_kwargs', 'check_optional_bool', 'check_patch_tokens',
           'patch_grid']

# Most tokens one global (non-windowed) attention may attend over: a 128x128 grid. Its attention map is 16384^2
# logits, 1 GiB in fp32 per head and image; every registered configuration is far below (largest: T2T's first soft
# split at 224 px, 56x56).
MAX_GLOBAL_TOKENS = 16384


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


def patch_grid(
        img_size: Any,
        kernel: Any,
        stride: Any = None,
        padding: int = 0,
        ceil: bool = False,
) -> Optional[Tuple[int, int]]:
    """Token grid of a patch embedding: a ``kernel`` x ``kernel`` window every ``stride`` px (default: ``kernel``,
    non-overlapping) over the image padded by ``padding``; ``ceil`` pads the last partial patch (timm's
    ``dynamic_img_pad``). None without a fixed integer size (left for the backbone to judge)."""
    sizes = [to_2tuple(v) for v in (img_size, kernel, kernel if stride is None else stride)]
    if not all(len(v) == 2 and all(isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in v)
               for v in sizes) or not isinstance(padding, int):
        return None
    (h, w), (kh, kw), (sh, sw) = sizes
    if ceil:
        return -(-h // sh), -(-w // sw)
    return (h + 2 * padding - kh) // sh + 1, (w + 2 * padding - kw) // sw + 1


def check_patch_tokens(model_cls: type, kwargs: Dict[str, Any], backbone: type) -> None:
    """:func:`check_global_tokens` for a backbone whose tokens are one patch grid (``img_size`` / ``patch_size``
    kwargs as timm's ``PatchEmbed``: ViT, CaiT)."""
    img, patch = backbone_kwarg(kwargs, backbone, 'img_size'), backbone_kwarg(kwargs, backbone, 'patch_size')
    grid = patch_grid(img, patch, ceil=kwargs.get('dynamic_img_pad') is True)
    check_global_tokens(model_cls, grid, f'img_size={img!r}, patch_size={patch!r}')


def check_global_tokens(model_cls: type, grid: Optional[Tuple[int, int]], asked: str, where: str = '') -> None:
    """Refuse, before anything is built, a token grid above :data:`MAX_GLOBAL_TOKENS` under global attention (its
    memory grows with the square of the token count). ``asked`` names the kwargs that gave ``grid``."""
    if grid is None or grid[0] * grid[1] <= MAX_GLOBAL_TOKENS:
        return
    side = int(MAX_GLOBAL_TOKENS ** .5)
    raise ValueError(
        f'{model_cls.__name__}: {asked} give a {grid[0]}x{grid[1]} token grid ({grid[0] * grid[1]} tokens){where} '
        f'under global attention; allowed: at most {MAX_GLOBAL_TOKENS} tokens (e.g. a {side}x{side} grid): a smaller '
        f'img_size or a larger patch stride.')
