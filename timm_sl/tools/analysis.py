"""The paper's analyses: attention maps (Fig. 5), learned temperatures (Fig. 3), attention sharpness as KL divergence
from the uniform distribution (Fig. 4), and the tokenization receptive field (Eq. 3).

Attention probabilities are read from the forward the model runs, never recomputed: inside :func:`capture_attention`
each attention module takes its explicit (non-fused) path, and hooks on the submodule its softmax output passes through
record that tensor (as ``timm.utils.AttentionExtract`` does with hooks on ``attn_drop``). Outside the block nothing is
hooked and every module runs with its own kernel choice again.

Supported attention layers (plain timm and LSA versions alike, matched by their timm base class): timm ``Attention``
(ViT, PiT and the T2T backbone; T2T's tokenizer token layers are not part of the depth), Swin's ``WindowAttention``
(one distribution per query of each window, ``(B * windows, heads, N, N)``), CaiT's talking-heads attention (the
softmax distribution, before the post-softmax head mixing, which is a linear map across heads and not a distribution)
and CaiT's class attention (``(B, heads, 1, keys)``: the class token's row).
"""
import math
import os
import struct
import sys
import tempfile
import warnings
import weakref
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Callable, Dict, Iterator, List, NamedTuple, Optional, Sequence, Set, Tuple

import torch
from torch import nn

from timm.layers import Attention
from timm.models.cait import Cait, ClassAttn, TalkingHeadAttn
from timm.models.swin_transformer import WindowAttention, window_reverse

from ..layers import LsaMixin
from ..models import built_as
from .errors import first_line, shown
from .files import ANALYSED_IMAGE_SUFFIXES, IMAGE_SUFFIXES, check_regular_file
from .plot import is_marked

__all__ = ['AttentionMap', 'IMAGE_SUFFIXES', 'ImageBatch', 'attention_probs', 'attention_records',
           'capture_attention', 'default_data_config', 'depth_curve', 'final_attention_map', 'image_files',
           'kld_by_depth', 'kld_floor', 'image_batches', 'kld_to_uniform', 'learned_temperatures', 'load_images',
           'receptive_field', 'temperature_records']


def _heads_first(t: torch.Tensor) -> torch.Tensor:
    """``(B, queries, keys, heads)`` -> ``(B, heads, queries, keys)``."""
    return t.permute(0, 3, 1, 2)


def _as_is(t: torch.Tensor) -> torch.Tensor:
    return t


# Where each supported attention's explicit path hands on its softmax output: (timm class, submodule whose input is
# the probabilities, that input -> (B, heads, queries, keys)). Subclasses (the LSA layers) match their timm base and
# keep that point. Talking heads: the input of the post-softmax head mixing ``proj_w`` (``attn_drop`` comes after it
# and sees mixed weights, which are no distribution).
_OBSERVED_AT: Tuple[Tuple[type, str, Callable[[torch.Tensor], torch.Tensor]], ...] = (
    (TalkingHeadAttn, 'proj_w', _heads_first),
    (Attention, 'attn_drop', _as_is),
    (WindowAttention, 'attn_drop', _as_is),
    (ClassAttn, 'attn_drop', _as_is),
)


def _observation_point(module: nn.Module) -> Optional[Tuple[str, Callable[[torch.Tensor], torch.Tensor]]]:
    """Name of the submodule of a supported attention layer that receives its probabilities, and their layout fix."""
    for cls, attr, layout in _OBSERVED_AT:
        if isinstance(module, cls) and isinstance(getattr(module, attr, None), nn.Module):
            return attr, layout
    return None


def _supported() -> str:
    return f'{", ".join(cls.__name__ for cls, _, _ in _OBSERVED_AT)} and their LSA versions'


@contextmanager
def _recording(modules: Sequence[Tuple[str, nn.Module]]) -> Iterator[Dict[str, List[torch.Tensor]]]:
    """Hooks that append, per forward of each module, the probabilities seen at its observation point; the modules run
    their explicit path meanwhile (``fused_attn`` off). Hooks and kernel choices are restored on exit, errors included.

    ``timm.utils.AttentionExtract`` itself does not fit: it keeps only the last forward, leaves its hooks registered and
    the fused kernels (which bypass ``attn_drop``) on, sets the model's train/eval mode, and reads talking heads after
    the head mixing.

    Raises:
        RuntimeError: a module's forward did not pass exactly one tensor through its observation point (its explicit
            path no longer hands its probabilities to that submodule).
    """
    maps: Dict[str, List[torch.Tensor]] = {name: [] for name, _ in modules}
    handles = []
    fused = [(m, m.fused_attn) for _, m in modules if hasattr(m, 'fused_attn')]

    def track(name: str, module: nn.Module) -> None:
        point, layout = _observation_point(module)
        seen: List[torch.Tensor] = []

        def observe(_, args):
            seen.append(layout(args[0]).detach().to(torch.float32, copy=True))

        def start(*_):
            seen.clear()

        def finish(*_):
            if len(seen) != 1:
                raise RuntimeError(f'{name or type(module).__name__}: its forward passed {len(seen)} tensors through '
                                   f'{type(module).__name__}.{point} instead of one softmax output; its explicit path '
                                   f'changed and the attention cannot be read from it')
            maps[name].append(seen.pop())

        handles.append(getattr(module, point).register_forward_pre_hook(observe))
        handles.append(module.register_forward_pre_hook(start))
        handles.append(module.register_forward_hook(finish))

    try:
        for m, _ in fused:
            m.fused_attn = False
        for name, module in modules:
            track(name, module)
        yield maps
    finally:
        for handle in handles:
            handle.remove()
        for m, value in fused:
            m.fused_attn = value


@torch.no_grad()
def attention_probs(module: nn.Module, *args: Any, **kwargs: Any) -> torch.Tensor:
    """Softmax attention ``(B, heads, queries, keys)`` (fp32) of a supported attention module, read from its forward
    on ``args`` / ``kwargs`` (e.g. ``x`` and Swin's window ``mask``).

    Raises:
        TypeError: ``module`` is not a supported attention layer.
    """
    if _observation_point(module) is None:
        raise TypeError(f'{type(module).__name__} is not a supported attention layer; supported: {_supported()}')
    with _recording([('', module)]) as maps:
        module(*args, **kwargs)
    return maps[''][0]


def attention_layers(model: nn.Module) -> List[Tuple[str, nn.Module]]:
    """The model's supported attention layers, ``(name, module)`` in definition (= depth) order."""
    return [(name, m) for name, m in model.named_modules() if _observation_point(m) is not None]


def _no_attention(model: nn.Module) -> str:
    """Why ``model`` has nothing to capture: attention layers of another kind, or none at all (``depth=0``)."""
    others = sorted({type(m).__name__ for m in model.modules() if 'attn' in type(m).__name__.lower() or
                     'attention' in type(m).__name__.lower()})
    found = f'its attention: {", ".join(others)}' if others else 'it has no attention layer at all: depth 0?'
    return (f'{built_as(model)} has no supported attention layer ({found}); allowed: a model with at least one '
            f'attention layer of a supported kind: {_supported()}')


@contextmanager
def capture_attention(
        model: nn.Module,
        names: Optional[Sequence[str]] = None,
) -> Iterator[Dict[str, List[torch.Tensor]]]:
    """Within the block, every forward of ``model`` appends each attention layer's probabilities (fp32, as its forward
    computed them) to ``maps[module_name]`` (depth order). ``names`` restricts capture to those layers.

    The captured layers run their explicit (non-fused) path inside the block, so the model's output may differ from
    the fused one by rounding; ``fused_attn`` is restored afterwards.

    Raises:
        ValueError: the model has no supported attention layer, or ``names`` holds one that is not.
    """
    modules = attention_layers(model)
    if not modules:
        raise ValueError(_no_attention(model))
    if names is not None:
        unknown = sorted(set(names) - {name for name, _ in modules})
        if unknown:
            raise ValueError(f'not attention layers of {built_as(model)}: {unknown}')
        modules = [(name, m) for name, m in modules if name in names]
    with _recording(modules) as maps:
        yield maps


@dataclass
class AttentionMap:
    """Per-head attention over the token grid, ``maps`` of shape ``(B, heads, h, w)``.

    Attributes:
        layer: Name of the attention layer it comes from.
        kind: ``'class token'`` (the class token's attention over the patch tokens) or ``'received'`` (mean over
            the queries of the attention each token receives: for models without a class token).
        description: One sentence saying what the map is, for reports.
        uniform: The weight every cell would hold if each query spread its weight evenly over the keys it may
            attend to (``1/N`` for ``N`` keys; ``1/(N-1)`` for a class token whose own key LSA masks).
        uniform_note: One sentence saying how ``uniform`` follows from the keys, for reports.
    """
    maps: torch.Tensor
    layer: str
    kind: str
    description: str
    uniform: float = float('nan')
    uniform_note: str = ''


def _grid(num_tokens: int, height: int, width: int, patch: Any = None) -> Tuple[int, int]:
    """Token grid ``(h, w)`` with ``h * w == num_tokens`` and the aspect ratio of a ``height x width`` image cut into
    ``patch`` (an ``(h, w)`` pair; a ``2 x 4`` patch makes a 32 x 32 image a 16 x 8 grid)."""
    ph, pw = patch if isinstance(patch, (tuple, list)) and len(patch) == 2 and all(
        isinstance(p, int) and p > 0 for p in patch) else (1, 1)
    h = max(1, round(math.sqrt(num_tokens * height / ph / (width / pw))))
    if num_tokens % h:
        raise ValueError(f'{num_tokens} tokens do not form a grid with the aspect ratio of a {height}x{width} image'
                         + (f' in {ph}x{pw} patches' if ph != pw else ''))
    return h, num_tokens // h


def _row_uniform(keys: int, masked: bool, query: str) -> Tuple[float, str]:
    """Weight per key of ``query``'s row spread evenly over ``keys`` keys, its own masked when ``masked``."""
    if masked and keys > 1:
        return 1 / (keys - 1), (f'uniform level 1/(N-1) = 1/{keys - 1}: {query} attends over N = {keys} keys, its '
                                f'own masked (LSA)')
    return 1 / keys, f'uniform level 1/N = 1/{keys}: {query} attends over N = {keys} keys'


def _received_uniform(keys: int, prefix: int, masked: bool) -> Tuple[float, str]:
    """Attention a patch token receives, averaged over the patch queries, when every query spreads its weight evenly
    over the ``keys`` tokens (all but itself when ``masked``): ``1/N`` without prefix tokens, masked or not."""
    patches = keys - prefix
    level = (patches - 1) / (patches * (keys - 1)) if masked and keys > 1 else 1 / keys
    value = f'1/N = 1/{keys}' if abs(level * keys - 1) < 1e-9 else f'{level:.4g}'
    spread = (f'the N - 1 = {keys - 1} tokens other than itself (of N = {keys}, LSA)' if masked and keys > 1
              else f'the N = {keys} tokens')
    return level, f'uniform level {value}: what a token receives when every query spreads over {spread}'


def _owner(model: nn.Module, name: str) -> nn.Module:
    return model.get_submodule(name.rsplit('.', 1)[0]) if '.' in name else model


@torch.no_grad()
def final_attention_map(model: nn.Module, images: torch.Tensor) -> AttentionMap:
    """The paper's Fig. 5 quantity: the final class token's attention over the patch tokens, per head.

    - ViT, PiT, T2T: row of the class token in the last attention layer, patch columns (prefix tokens dropped).
    - CaiT: the last class-attention layer (its only query is the class token), over the patch tokens its block
      received (timm's keys are ``[class, patches]``; with ``class_attn_kv='raw_patches'`` the patches only).
    - Swin (no class token; the classifier reads the average of the last stage's tokens): the attention each token
      receives in the last block, averaged over the queries of its window and put back on the grid (windows and
      cyclic shift undone). Through that block's attention, this is the token's weight in the pooled feature.
    - A ViT without class token (``class_token=False``): the received attention, averaged over all queries.
    - A model that pools its patch tokens (``global_pool='avg'``, train.py's ``--gp avg``), class token or not: its
      classifier never reads the class token, so the received attention of its last patch-token layer, as above.

    Raises:
        ValueError: the model has no supported attention layer, or pools through an attention-pooling layer
            (``global_pool='map'`` / ``'prr'``): its classifier reads that layer, whose attention is not drawn.
    """
    layers = attention_layers(model)
    if not layers:
        raise ValueError(_no_attention(model))
    pool = getattr(model, 'global_pool', 'token')
    attn_pool = getattr(model, 'attn_pool', None)
    if isinstance(attn_pool, nn.Module):  # 'map' / 'prr': an attention after the last block, read by no hook here
        raise ValueError(f'{built_as(model)} pools with global_pool={pool!r}: its classifier reads the '
                         f'attention-pooling layer attn_pool ({type(attn_pool).__name__}), whose attention is not '
                         f"drawn, not any block's map; allowed: global_pool 'token' or 'avg' (train.py's --gp)")
    pooled = isinstance(pool, str) and pool not in ('token', '')  # Swin's 'avg' is read from its windows below
    class_layers = [(n, m) for n, m in layers if isinstance(m, ClassAttn)]
    patch_layers = [(n, m) for n, m in layers if not isinstance(m, ClassAttn)]
    if isinstance(model, Cait) and not class_layers and not pooled:  # its class token joins in class attention only
        raise ValueError(f'{built_as(model)} has no class-attention block (depth_token_only=0): its class token '
                         f'never attends to the patch tokens and its classifier reads that token as it was learned, '
                         f"whatever the image; no block's map is what it reads; allowed: depth_token_only >= 1, "
                         f"or global_pool 'avg' (train.py's --gp)")
    # pooled, CaiT's patch tokens leave its last self-attention: its class attention feeds its class token only
    name, module = (patch_layers if pooled and patch_layers else class_layers or layers)[-1]
    H, W = images.shape[-2:]
    block = _owner(model, name)
    block_inputs: List[torch.Size] = []  # the tokens the block gets: Swin's NHWC map, CaiT's patch tokens
    handle = block.register_forward_pre_hook(lambda m, args: block_inputs.append(args[0].shape))
    try:
        with capture_attention(model, [name]) as maps:
            model(images)
    finally:
        handle.remove()
    probs = maps[name][-1]  # (B, heads, queries, keys)
    if isinstance(module, WindowAttention):
        return _window_received_attention(block, name, probs, block_inputs[-1][1:3], pool)
    keys, masked = probs.shape[-1], bool(getattr(module, 'diag_mask', False))  # LSA masks each query's own key
    if isinstance(module, ClassAttn):
        weights, kind = probs[:, :, 0, -block_inputs[-1][1]:], 'class token'
        text = f'attention of the class token over the patch tokens in {name} (the last {type(module).__name__})'
        uniform = _row_uniform(keys, False, 'the class token')  # class attention has no diagonal mask
    else:
        # CaiT's self-attention runs over the patch tokens alone (its class token joins in the class attention)
        prefix = 0 if isinstance(model, Cait) else getattr(model, 'num_prefix_tokens', getattr(model, 'num_tokens', 1))
        if getattr(model, 'cls_token', None) is not None and not pooled:
            weights, kind = probs[:, :, 0, prefix:], 'class token'
            text = f'attention of the class token over the patch tokens in {name} (the last {type(module).__name__})'
            uniform = _row_uniform(keys, masked, 'the class token')
        else:
            weights, kind = probs[:, :, prefix:, prefix:].mean(-2), 'received'
            why = f'pools its patch tokens (global_pool={pool!r}), not its class token' if pooled and \
                getattr(model, 'cls_token', None) is not None else 'has no class token'
            text = f'{built_as(model)} {why}: attention each patch token receives in {name}, averaged over the ' \
                   f'queries'
            uniform = _received_uniform(keys, prefix, masked)
    h, w = _grid(weights.shape[-1], H, W, getattr(getattr(model, 'patch_embed', None), 'patch_size', None))
    return AttentionMap(weights.reshape(*weights.shape[:2], h, w), name, kind, text, *uniform)


def _window_received_attention(block: nn.Module, name: str, probs: torch.Tensor, grid: Tuple[int, int],
                               pool: Any = 'avg') -> AttentionMap:
    """Attention each token receives in a Swin block, from its window attention's probabilities
    ``(B * windows, heads, N, N)`` and the block's input grid ``(H, W)``; ``pool`` is the model's ``global_pool``
    (only an average makes it the token's weight in the pooled feature)."""
    H, W = grid
    wh, ww = block.window_size
    received = probs.mean(-2).transpose(1, 2).reshape(-1, wh, ww, probs.shape[1])
    pad_h, pad_w = math.ceil(H / wh) * wh, math.ceil(W / ww) * ww
    tokens = window_reverse(received, (wh, ww), pad_h, pad_w)[:, :H, :W]  # (B, H, W, heads), in shifted order
    if any(block.shift_size):
        tokens = torch.roll(tokens, shifts=tuple(block.shift_size), dims=(1, 2))
    pooled = 'its weight in the average-pooled feature' if pool == 'avg' else \
        f'its classifier reads the tokens with global_pool={pool!r}, not an average: no weight of a token in it'
    text = (f'Swin has no class token: attention each token receives in {name} (the last window attention), '
            f'averaged over the queries of its {wh}x{ww} window: {pooled}')
    # a query spreading evenly over the keys of its (shifted-window) region gives each 1/region (1/(region-1) with
    # LSA's mask, from the others), and a key is averaged over the window's N queries: 1/N either way
    keys = wh * ww
    note = (f'uniform level 1/N = 1/{keys}: what a token receives when every query spreads evenly over the keys it '
            f'may attend to in its {wh}x{ww} window of N = {keys} tokens')
    return AttentionMap(tokens.permute(0, 3, 1, 2).contiguous(), name, 'received', text, 1 / keys, note)


def kld_to_uniform(attn: torch.Tensor) -> torch.Tensor:
    """Mean KL divergence ``KL(p || uniform)`` of attention rows ``(..., N)``: 0 for uniform rows, ``log N`` for
    one-hot rows. Higher = sharper (the paper's Fig. 4 measure). The uniform reference spans all ``N`` keys of the
    row (a Swin window's keys, masked or not)."""
    n = attn.shape[-1]
    p = attn.float().clamp_min(0)
    kl = torch.special.xlogy(p, p * n).sum(-1)  # 0 log 0 = 0; a NaN weight (diverged weights) stays NaN, not 0
    return kl.mean()


# a weight below this is a masked key's: ``-inf`` gives 0, timm's Swin shift mask (``-100`` on the logit) ~4e-44
MASKED_WEIGHT = 1e-30


def kld_floor(attn: torch.Tensor) -> torch.Tensor:
    """Mean KL to uniform that attention rows ``(..., N)`` would have, spread evenly over the keys their masks leave
    them: ``log(N / k)`` for ``k`` keys of weight at least :data:`MASKED_WEIGHT`. The least KL a row's masks allow:
    ``log(N / (N - 1))`` under LSA's diagonal mask, ``log(N / region)`` in a shifted Swin window's region, 0 without
    masks; only the KL above it is sharpness the softmax chose. (A learned weight below 1e-30, a logit 69 below the
    row's largest, counts as masked too.)"""
    n = attn.shape[-1]
    keys = (attn >= MASKED_WEIGHT).sum(-1).clamp_min(1).double()
    floor = (math.log(n) - keys.log()).masked_fill(attn.isnan().any(-1), math.nan)  # NaN rows have no floor
    return floor.mean().float()


def learned_temperatures(model: nn.Module) -> Dict[str, torch.Tensor]:
    """Per LSA layer that learns it (depth order): its per-head multiplier of ``QK^T`` (the paper's Fig. 3 quantity).
    A layer with ``learn_temp`` off keeps its initial value in a buffer, which is no learned temperature."""
    return {name: m.temperature.detach().float().cpu() for name, m in model.named_modules()
            if isinstance(m, LsaMixin) and m.learn_temp}


def receptive_field(kernel: int, shift: Optional[int] = None, stride: Optional[int] = None) -> int:
    """Tokenization receptive field (paper Eq. 3, ``r_token = r_trans * j + (k - j)`` with ``r_trans = 1``).

    Standard tokenization is a ``k x k`` convolution of stride ``j`` (a patch embedding: ``k = j = P``): ``r = k``.
    SPT's token also sees the copies shifted by ``s`` in every direction, i.e. a ``(k + 2s)`` window: ``r = k + 2s``.
    """
    stride = kernel if stride is None else stride
    k = kernel if shift is None else kernel + 2 * shift
    return 1 * stride + (k - stride)


def tokenizer_geometry(model: nn.Module) -> Tuple[Tuple[int, int], Tuple[int, int], Tuple[int, int]]:
    """``(kernel, stride, shift)`` of the model's first tokenization step, each an ``(h, w)`` pair (a patch may be
    ``2 x 4``); shift ``(0, 0)`` without SPT.

    A patch embedding is a ``P x P`` stride-``P`` step (a convolution's own kernel and stride where it has one: PiT's
    overlapping stem); T2T's first soft split is a ``k x k`` stride-``j`` unfold of the
    (shifted) image.
    """
    embed = getattr(model, 'patch_embed', None)
    if isinstance(getattr(embed, 'backbone', None), nn.Module):  # a hybrid ViT: a CNN makes its tokens
        raise ValueError(f'{built_as(model)} takes its tokens from a CNN backbone '
                         f'({type(embed.backbone).__name__} in its {type(embed).__name__}): its receptive field is the '
                         f"backbone's, not one tokenization step's (its 1x1 projection after the backbone reads 1 "
                         f'cell); allowed: a model whose patch_embed is a patch embedding or a T2T tokenizer')
    if embed is not None and hasattr(embed, 'soft_splits'):  # T2T tokenizer
        kernel, stride, _ = embed.soft_splits[0]
        return (kernel, kernel), (stride, stride), tuple(embed.shift)
    proj = getattr(embed, 'proj', None)
    if proj is not None and hasattr(proj, 'shift'):  # SPT projection
        return tuple(proj.patch_size), tuple(proj.patch_size), tuple(proj.shift)
    conv = next((m for m in (proj, getattr(embed, 'conv', None)) if isinstance(m, nn.Conv2d)), None)
    if conv is not None:  # its own kernel and stride: PiT's stem overlaps (kernel 16, stride 8)
        return tuple(conv.kernel_size), tuple(conv.stride), (0, 0)
    size = getattr(embed, 'patch_size', None)
    if size is None:
        raise ValueError(f'{built_as(model)} has no patch_embed with a patch size')
    size = (size, size) if isinstance(size, int) else tuple(size)
    return size, size, (0, 0)


def _rows(attn: torch.Tensor) -> int:
    """Attention rows (queries) in a captured tensor ``(..., keys)``."""
    return attn.numel() // max(attn.shape[-1], 1)


def depth_curve(
        maps: Dict[str, List[torch.Tensor]],
        measure: Callable[[torch.Tensor], torch.Tensor] = kld_to_uniform,
) -> List[float]:
    """Per-depth mean of ``measure`` (KL to uniform; :func:`kld_floor` for its floor) over all captured forwards, each
    weighted by its rows: the mean over every row, however the images were batched."""
    return [math.fsum(measure(a).item() * _rows(a) for a in captured) / sum(map(_rows, captured))
            for captured in maps.values()]


def kld_by_depth(model: nn.Module, images: Any, floor: bool = False, batch_size: int = 64) -> Dict[str, Any]:
    """Attention layer name (depth order) -> mean KL to uniform of its attention for ``images`` (paper Fig. 4): a
    tensor, or batches of images one at a time (:func:`image_batches`: a folder never all in memory); with
    ``floor``, ``(KL, its floor)`` (:func:`kld_floor`: what the layer's masks alone give).

    A tensor's images go through ``batch_size`` at a time and each batch's maps are reduced before the next: a folder's
    maps at once (images x heads x N x N floats per layer, 18 GB for 10,000 images through ``sl_vit_32``) would not
    fit in memory."""
    sums: Dict[str, List[float]] = {}  # layer -> [KL * rows, floor * rows, rows]
    batches = images.split(batch_size) if isinstance(images, torch.Tensor) else images
    with torch.no_grad(), capture_attention(model) as maps:
        for batch in batches:
            model(batch)
            for name, captured in maps.items():
                total = sums.setdefault(name, [0., 0., 0])
                for attn in captured:
                    total[0] += kld_to_uniform(attn).item() * _rows(attn)
                    total[1] += kld_floor(attn).item() * _rows(attn) if floor else 0.
                    total[2] += _rows(attn)
                captured.clear()
    if floor:
        return {name: (kl / rows, low / rows) for name, (kl, low, rows) in sums.items()}
    return {name: kl / rows for name, (kl, _, rows) in sums.items()}


def temperature_records(model: nn.Module) -> List[Dict[str, Any]]:
    """Per LSA layer that learns its temperature (depth order): ``layer``, learned ``mean`` / ``min`` / ``max`` over
    heads, the ``fixed`` ``head_dim ** -0.5`` of standard attention (paper Fig. 3) and the ``start`` the layer learns
    from: ``fixed`` divided by its ``temp_ratio``."""
    modules = dict(model.named_modules())
    return [dict(layer=name, mean=t.mean().item(), min=t.min().item(), max=t.max().item(),
                 fixed=modules[name].init_temperature * modules[name].temp_ratio,
                 start=modules[name].init_temperature, temp_ratio=modules[name].temp_ratio)
            for name, t in learned_temperatures(model).items()]


def attention_records(files: Sequence[Path], label: str, result: AttentionMap) -> List[Dict[str, Any]]:
    """One JSON-ready record per image of ``result`` (from :func:`final_attention_map`): the heads-averaged map
    ``mean`` and the per-head maps ``heads``, their ``grid``, the ``peak`` (row, col) and ``peak_weight``, the map's
    total weight ``map_sum``, ``kl`` (the map, normalised, against the uniform map) and the ``uniform`` level of a
    cell (:class:`AttentionMap`)."""
    records = []
    for file, per_head in zip(files, result.maps):
        mean = per_head.mean(0)
        records.append(dict(
            image=str(file), model=label, layer=result.layer, kind=result.kind, description=result.description,
            grid=list(mean.shape), peak=list(divmod(int(mean.argmax()), mean.shape[1])),
            peak_weight=mean.max().item(), map_sum=mean.sum().item(), uniform=result.uniform,
            kl=kld_to_uniform((mean / mean.sum()).flatten()).item(), mean=mean.tolist(), heads=per_head.tolist()))
    return records


class ImageBatch(NamedTuple):
    """Images prepared for an analysis: the files, the batch through the model's eval transform, and that batch
    as PIL images (de-normalised), to draw maps on."""
    files: List[Path]
    tensor: torch.Tensor
    images: List[Any]


def _image_files(folder: Path) -> List[Path]:
    """The image files under ``folder`` (sorted), through linked folders too (``Path.rglob`` skips those before
    Python 3.13), each real folder once: a link back up does not loop. Every image suffix
    (:data:`~timm_sl.tools.files.ANALYSED_IMAGE_SUFFIXES`), not only timm's: a .webp or .gif named directly is read,
    so a folder holding it reads it too (left out, a mean was over fewer images than the folder holds, unsaid)."""
    from .runs import walk
    return sorted(root / n for root, _, names in walk(folder) for n in names
                  if Path(n).suffix.lower() in ANALYSED_IMAGE_SUFFIXES)


def image_files(paths: Sequence[str]) -> List[Path]:
    """The image files ``paths`` name: files as given, folders searched recursively (:func:`_image_files`); a
    file named twice (a folder and a file in it, ``imgs ./imgs``, a link to it) once, where first named: counted
    twice, it weighed double in kld's mean and took two rows of attention's chart.

    Raises:
        FileNotFoundError: a path does not exist.
    """
    files: Dict[Path, Path] = {}
    for p in map(Path, paths):
        if not p.exists():
            raise FileNotFoundError(f'{shown(p)} does not exist')
        for file in _image_files(p) if p.is_dir() else [p]:
            files.setdefault(file.resolve(), file)
    return list(files.values())


class _Refused(ValueError):
    """A readable image refused for what it holds (a chart of ours, 16-bit values): its line is final, not a
    decoding error of PIL's to name the file in."""


def _check_8_bit(image: Any, file: Path) -> None:
    """Refuse a 16-bit / 32-bit grey image whose values pass 255: PIL's conversion to 'L' or 'RGB' (timm's reading
    too) clips them, so the model would see a white (or saturated) image and the chart would show it as data; and a
    floating-point one of values within 0-1, which that conversion makes a black image."""
    if image.mode in ('I', 'F') or image.mode.startswith('I;'):
        high = image.getextrema()[1]
        if high > 255:
            raise _Refused(f'{shown(file)} is an image of mode {image.mode} whose values reach {high:g}; reading it '
                           f'as 8-bit (as timm reads images) clips every value above 255 to white; allowed: 8-bit '
                           f'images (scale it to 0-255 first)')
        if image.mode == 'F' and 0 < high <= 1:  # fractions of 1 (a float TIFF): 0 or 1 of 255 each
            raise _Refused(f'{shown(file)} is an image of mode F whose values reach {high:g} (fractions of 1); '
                           f'reading it as 8-bit (as timm reads images) reads each as 0 or 1 of 255: a black '
                           f'image; allowed: 8-bit images (scale it to 0-255 first)')


def _unread_reason(file: Path) -> str:
    """What a file PIL cannot read is, where its name or first bytes tell (macOS metadata beside an image, a format
    PIL reads only with a plugin), and what is allowed instead: the end of a refusal's line."""
    try:
        with open(file, 'rb') as f:
            head = f.read(12)
    except OSError:
        head = b''
    if file.name.startswith('._') and head.startswith(b'\x00\x05\x16\x07'):
        return (' (macOS metadata, an AppleDouble ._ file written when copying to exFAT or SMB, not an image); '
                'allowed: remove the ._ files')
    if file.suffix.lower() in ('.heic', '.heif') or head[4:12] in (b'ftypheic', b'ftypheix', b'ftypmif1'):
        return ' (HEIC, which PIL reads only with the pillow-heif plugin); allowed: convert it to PNG or JPEG'
    return '; allowed: whole images of a format PIL reads (copy or extract it again, or move it out of the way)'


def default_data_config(model: nn.Module) -> Dict[str, Any]:
    """The eval data config of ``model`` at the input it was built for: timm's from its pretrained cfg, with the
    channels and image size it was built with (``img_size=48``, ``in_chans=1``: mean and std of one channel), which
    that cfg leaves as registered."""
    from timm.data import resolve_data_config
    from .hub import training_data_config
    from .profile import built_input_size
    config = resolve_data_config({}, model=model)
    input_size = built_input_size(model)
    if tuple(input_size) != tuple(config['input_size']):
        config = training_data_config(model, {'input_size': input_size})  # mean / std of its channels too
    return config


class _SaidOnlyIfRead:
    """What the decoders say while one file is read, held back: passed on where the file was read after all, dropped
    where it is refused (its one line says it instead). That is libtiff's lines, which C code writes to descriptor 2
    naming its own 'tempfile.tif', and PIL's warnings, which go through the user's warning filters as ever and are
    passed on once per reader. Where descriptor 2 cannot be held (none, no temporary file) its lines go out as they
    come."""

    def __init__(self) -> None:
        self._held: Optional[IO[bytes]] = None  # one file for every read (0.26 ms a read to create one each)
        self._warned: Set[Tuple[Any, ...]] = set()

    def _hold(self) -> Optional[int]:
        """Descriptor 2 pointed at the held file; its own copy to put back (None: not held)."""
        try:
            if sys.stderr is not None:  # None: Python started with descriptor 2 closed
                sys.stderr.flush()
            if self._held is None:
                self._held = tempfile.TemporaryFile()
                weakref.finalize(self, self._held.close)  # closed with the reader that holds this
            self._held.seek(0)
            self._held.truncate()
            saved = os.dup(2)
        except (OSError, ValueError):  # ValueError: a sys.stderr closed by its owner
            return None
        os.dup2(self._held.fileno(), 2)
        return saved

    @contextmanager
    def reading(self) -> Iterator[None]:
        saved = self._hold()
        with warnings.catch_warnings(record=True) as caught:  # under the user's filters: -W error still raises
            try:
                yield
            finally:
                if saved is not None:
                    os.dup2(saved, 2)
                    os.close(saved)
        if saved is not None:
            self._held.seek(0)
            said = self._held.read()
            while said:  # as the decoder wrote it, where it would have gone
                said = said[os.write(2, said):]
        for w in caught:
            key = (w.category, str(w.message), w.filename, w.lineno)
            if key not in self._warned:
                self._warned.add(key)
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno, registry={})


def _image_reader(paths: Sequence[str], model: nn.Module, data_config: Optional[Dict[str, Any]]
                  ) -> Tuple[List[Path], Dict[str, Any], Callable[..., Optional[torch.Tensor]]]:
    """The image files ``paths`` name, the data config they go through and the function that reads one file
    through its eval transform (see :func:`load_images` for what is refused)."""
    from PIL import Image
    from timm.data import create_transform
    files = image_files(paths)
    if not files:
        raise ValueError(f'no images ({", ".join(ANALYSED_IMAGE_SUFFIXES)}) found in {", ".join(map(shown, paths))}')
    config = data_config or default_data_config(model)
    transform = create_transform(**config)
    mode = 'L' if config['input_size'][0] == 1 else 'RGB'  # as train.py reads images for its input size

    said = _SaidOnlyIfRead()

    @contextmanager
    def opened(f: Path) -> Iterator[Any]:
        """``f`` opened by PIL (its header read, its pixels not yet), every refusal one line naming it."""
        check_regular_file(f, 'an image file')  # opened, a FIFO waits for a writer forever
        try:
            with said.reading(), Image.open(f) as image:
                if is_marked(image):
                    raise _Refused(f'{shown(f)} is a chart timm-sl drew, not an input image; allowed: the images to '
                                   f'analyse (move the chart out of the folder, or give --out outside it)')
                _check_8_bit(image, f)
                yield image
        except _Refused:
            raise
        except Image.DecompressionBombError as e:  # not an OSError: PIL's guard against a forged size
            raise ValueError(f'{shown(f)} is too large to read ({e}); allowed: an image of at most '
                             f'{2 * Image.MAX_IMAGE_PIXELS} pixels (downscale it first)') from e
        except (OSError, ValueError, SyntaxError, EOFError, IndexError, TypeError, struct.error) as e:
            # a damaged file: PIL raises OSError mostly, but ValueError ('Truncated IHDR chunk', 'tile cannot extend
            # outside image') and others too, whose message names no file
            raise ValueError(f'{shown(f)} is not a readable image: {first_line(e)}{_unread_reason(f)}') from e

    def read(f: Path, decode: bool = True) -> Optional[torch.Tensor]:
        """``f`` through the eval transform; ``decode=False``: its header checked only (no pixels read)."""
        with opened(f) as image:
            if not decode:
                return None
            pixels = image.convert(mode)  # decoded here: a damaged file refused by name
        return transform(pixels)
    return files, config, read


def image_batches(paths: Sequence[str], model: nn.Module, data_config: Optional[Dict[str, Any]] = None,
                  batch_size: int = 64) -> Tuple[List[Path], Iterator[torch.Tensor]]:
    """The image files ``paths`` name and their batches (``batch_size`` images each) through the eval transform, as
    :func:`load_images` reads them, each batch read when it is asked for: a folder of any size is never all in memory
    (50,000 images at 224 px are 30 GB of floats).

    Raises:
        FileNotFoundError, ValueError: as :func:`load_images`; every file's header is read first, so a file that is
            no image, a chart or 16-bit is refused before any batch (pixels that cannot be decoded: in their batch).
    """
    files, _, read = _image_reader(paths, model, data_config)
    for f in files:  # what a header shows (no image, a chart, 16-bit) refused before the first forward
        read(f, decode=False)
    return files, (torch.stack([read(f) for f in files[i:i + batch_size]]) for i in range(0, len(files), batch_size))


def load_images(paths: Sequence[str], model: nn.Module, data_config: Optional[Dict[str, Any]] = None) -> ImageBatch:
    """Image files and folders (searched recursively for every image suffix) through the eval transform of
    ``data_config`` (``resolve_data_config`` output, e.g. the one a run trained with; default:
    :func:`default_data_config`).

    Raises:
        FileNotFoundError: a path does not exist.
        ValueError: no image found, or a file is not a readable image (or one too large for PIL to open, or no
            regular file: a FIFO, a device).
    """
    from PIL import Image
    files, config, read = _image_reader(paths, model, data_config)
    batch = torch.stack([read(f) for f in files])
    mean = torch.tensor(config['mean']).view(-1, 1, 1)
    std = torch.tensor(config['std']).view(-1, 1, 1)
    pixels = ((batch * std + mean).clamp(0, 1) * 255).round().byte().permute(0, 2, 3, 1)
    drawn = [Image.fromarray(x.squeeze(-1).numpy()).convert('RGB') for x in pixels]  # grey drawn grey
    return ImageBatch(files, batch, drawn)
