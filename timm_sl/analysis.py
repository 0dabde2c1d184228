"""The paper's analyses: attention maps (Fig. 5), learned temperatures (Fig. 3), attention sharpness as KL divergence
from the uniform distribution (Fig. 4), and the tokenization receptive field (Eq. 3).

Attention is captured only inside :func:`capture_attention`: it hooks the attention modules for the duration of the
block and recomputes their probabilities from the module input; outside it nothing is hooked and the normal (fused)
forward path runs untouched.

Supported attention layers (plain timm and LSA versions alike): timm ``Attention`` (ViT, PiT and the T2T backbone;
T2T's tokenizer token layers are not part of the depth), Swin's ``WindowAttention`` (one distribution per query of
each window, ``(B * windows, heads, N, N)``), CaiT's talking-heads attention (the softmax distribution, before the
post-softmax head mixing, which is a linear map across heads and not a distribution) and CaiT's class attention
(``(B, heads, 1, N)``: the class token's row).
"""
import math
import statistics
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, NamedTuple, Optional, Sequence, Tuple

import torch
from torch import nn

from timm.layers import Attention
from timm.layers.attention import resolve_self_attn_mask
from timm.models.cait import ClassAttn, TalkingHeadAttn
from timm.models.swin_transformer import WindowAttention, window_reverse

from .layers import LsaMixin, lsa_attn_bias
from .models.sl_swin import window_attn_bias

__all__ = ['AttentionMap', 'IMAGE_SUFFIXES', 'ImageBatch', 'attention_probs', 'attention_records',
           'capture_attention', 'depth_curve', 'final_attention_map', 'kld_by_depth', 'kld_to_uniform',
           'learned_temperatures', 'load_images', 'receptive_field', 'temperature_records']


def _split_heads(t: torch.Tensor, num_heads: int) -> torch.Tensor:
    """``(B, N, heads * d)`` -> ``(B, heads, N, d)``."""
    B, N, _ = t.shape
    return t.reshape(B, N, num_heads, -1).transpose(1, 2)


def _logits(module: nn.Module, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """``QK^T`` times the LSA temperature (per head) or the module's fixed ``scale``."""
    scale = module.temperature.to(q.dtype).view(-1, 1, 1) if isinstance(module, LsaMixin) else module.scale
    return (q * scale) @ k.transpose(-2, -1)


def _diag_bias(module: nn.Module, logits: torch.Tensor) -> Optional[torch.Tensor]:
    return lsa_attn_bias(logits.shape[-1], logits.dtype, logits.device) if getattr(module, 'diag_mask', False) else None


def _softmax(logits: torch.Tensor, bias: Optional[torch.Tensor] = None) -> torch.Tensor:
    return (logits if bias is None else logits + bias).float().softmax(dim=-1)


def _self_attention_probs(module: Attention, x: torch.Tensor, attn_mask: Optional[torch.Tensor] = None,
                          is_causal: bool = False) -> torch.Tensor:
    q, k, _ = module.qkv(x).chunk(3, dim=-1)
    q, k = module.q_norm(_split_heads(q, module.num_heads)), module.k_norm(_split_heads(k, module.num_heads))
    bias = resolve_self_attn_mask(x.shape[1], q, attn_mask, is_causal)
    if getattr(module, 'diag_mask', False):
        bias = lsa_attn_bias(x.shape[1], q.dtype, q.device, bias)
    return _softmax(_logits(module, q, k), bias)


def _window_probs(module: WindowAttention, x: torch.Tensor, mask: Optional[torch.Tensor] = None) -> torch.Tensor:
    q, k, _ = (_split_heads(t, module.num_heads) for t in module.qkv(x).chunk(3, dim=-1))
    logits = _logits(module, q, k)
    bias = window_attn_bias(module._get_rel_pos_bias(), mask, getattr(module, 'diag_mask', False), logits.dtype)
    shape = logits.shape
    return _softmax(logits.view(-1, *bias.shape), bias).view(shape)


def _talking_heads_probs(module: TalkingHeadAttn, x: torch.Tensor) -> torch.Tensor:
    q, k, _ = (_split_heads(t, module.num_heads) for t in module.qkv(x).chunk(3, dim=-1))
    logits = module.proj_l(_logits(module, q, k).permute(0, 2, 3, 1)).permute(0, 3, 1, 2)  # pre-softmax mixing
    return _softmax(logits, _diag_bias(module, logits))


def _class_attention_probs(module: ClassAttn, x: torch.Tensor, kv: Optional[torch.Tensor] = None) -> torch.Tensor:
    # kv: separate keys (the reference's raw-patch class attention, ``class_attn_kv='raw_patches'``)
    q = _split_heads(module.q(x[:, :1]), module.num_heads)
    k = _split_heads(module.k(x if kv is None else kv), module.num_heads)
    return _softmax(_logits(module, q, k))


# (attention class, probabilities from the module's forward arguments); LSA subclasses match their timm base
_PROBS: Tuple[Tuple[type, Callable[..., torch.Tensor]], ...] = (
    (Attention, _self_attention_probs),
    (WindowAttention, _window_probs),
    (TalkingHeadAttn, _talking_heads_probs),
    (ClassAttn, _class_attention_probs),
)


def _probs_fn(module: nn.Module) -> Optional[Callable[..., torch.Tensor]]:
    return next((fn for cls, fn in _PROBS if isinstance(module, cls)), None)


@torch.no_grad()
def attention_probs(module: nn.Module, x: torch.Tensor, **kwargs) -> torch.Tensor:
    """Softmax attention ``(B, heads, queries, keys)`` (fp32) that a supported attention module computes for ``x``
    (``kwargs``: the module's other forward arguments, e.g. Swin's window ``mask``).

    Raises:
        TypeError: ``module`` is not a supported attention layer.
    """
    fn = _probs_fn(module)
    if fn is None:
        raise TypeError(f'{type(module).__name__} is not a supported attention layer; supported: '
                        f'{", ".join(cls.__name__ for cls, _ in _PROBS)} and their LSA versions')
    return fn(module, x, **kwargs)


def attention_layers(model: nn.Module) -> List[Tuple[str, nn.Module]]:
    """The model's supported attention layers, ``(name, module)`` in definition (= depth) order."""
    return [(name, m) for name, m in model.named_modules() if _probs_fn(m) is not None]


@contextmanager
def capture_attention(
        model: nn.Module,
        names: Optional[Sequence[str]] = None,
) -> Iterator[Dict[str, List[torch.Tensor]]]:
    """Within the block, every forward of ``model`` appends each attention layer's probabilities to
    ``maps[module_name]`` (depth order). ``names`` restricts capture to those layers.

    Raises:
        ValueError: the model has no supported attention layer, or ``names`` holds one that is not.
    """
    modules = attention_layers(model)
    if not modules:
        raise ValueError(f'{type(model).__name__} has no supported attention layer to capture; supported: '
                         f'{", ".join(cls.__name__ for cls, _ in _PROBS)} and their LSA versions')
    if names is not None:
        unknown = sorted(set(names) - {name for name, _ in modules})
        if unknown:
            raise ValueError(f'not attention layers of {type(model).__name__}: {unknown}')
        modules = [(name, m) for name, m in modules if name in names]
    maps: Dict[str, List[torch.Tensor]] = {name: [] for name, _ in modules}

    def make_hook(name: str):
        def hook(module, args, kwargs, output):
            maps[name].append(attention_probs(module, *args, **kwargs))
        return hook

    handles = [m.register_forward_hook(make_hook(name), with_kwargs=True) for name, m in modules]
    try:
        yield maps
    finally:
        for handle in handles:
            handle.remove()


@dataclass
class AttentionMap:
    """Per-head attention over the token grid, ``maps`` of shape ``(B, heads, h, w)``.

    Attributes:
        layer: Name of the attention layer it comes from.
        kind: ``'class token'`` (the class token's attention over the patch tokens) or ``'received'`` (mean over
            the queries of the attention each token receives: for models without a class token).
        description: One sentence saying what the map is, for reports.
    """
    maps: torch.Tensor
    layer: str
    kind: str
    description: str


def _grid(num_tokens: int, height: int, width: int) -> Tuple[int, int]:
    """Token grid ``(h, w)`` with ``h * w == num_tokens`` and the image's aspect ratio."""
    h = max(1, round(math.sqrt(num_tokens * height / width)))
    if num_tokens % h:
        raise ValueError(f'{num_tokens} tokens do not form a grid with the aspect ratio of a {height}x{width} image')
    return h, num_tokens // h


def _owner(model: nn.Module, name: str) -> nn.Module:
    return model.get_submodule(name.rsplit('.', 1)[0]) if '.' in name else model


@torch.no_grad()
def final_attention_map(model: nn.Module, images: torch.Tensor) -> AttentionMap:
    """The paper's Fig. 5 quantity: the final class token's attention over the patch tokens, per head.

    - ViT, PiT, T2T: row of the class token in the last attention layer, patch columns (prefix tokens dropped).
    - CaiT: the last class-attention layer (its only query is the class token).
    - Swin (no class token; the classifier reads the average of the last stage's tokens): the attention each token
      receives in the last block, averaged over the queries of its window and put back on the grid (windows and
      cyclic shift undone). Through that block's attention, this is the token's weight in the pooled feature.
    - A ViT without class token (``class_token=False``): the received attention, averaged over all queries.
    """
    layers = attention_layers(model)
    if not layers:
        raise ValueError(f'{type(model).__name__} has no supported attention layer')
    class_layers = [(n, m) for n, m in layers if isinstance(m, ClassAttn)]
    name, module = (class_layers or layers)[-1]
    H, W = images.shape[-2:]
    if isinstance(module, WindowAttention):
        return _window_received_attention(model, name, images)
    with capture_attention(model, [name]) as maps:
        model(images)
    probs = maps[name][-1]  # (B, heads, queries, keys)
    if isinstance(module, ClassAttn):
        prefix, has_cls = 1, True
    else:
        prefix = getattr(model, 'num_prefix_tokens', getattr(model, 'num_tokens', 1))
        has_cls = getattr(model, 'cls_token', None) is not None
    if has_cls:
        weights, kind = probs[:, :, 0, prefix:], 'class token'
        text = f'attention of the class token over the patch tokens in {name} (the last {type(module).__name__})'
    else:
        weights, kind = probs[:, :, prefix:, prefix:].mean(-2), 'received'
        text = f'{type(model).__name__} has no class token: attention each patch token receives in {name}, ' \
               f'averaged over the queries'
    h, w = _grid(weights.shape[-1], H, W)
    return AttentionMap(weights.reshape(*weights.shape[:2], h, w), name, kind, text)


def _window_received_attention(model: nn.Module, name: str, images: torch.Tensor) -> AttentionMap:
    block = _owner(model, name)
    grid: List[Tuple[int, int]] = []
    handle = block.register_forward_pre_hook(lambda m, args: grid.append(tuple(args[0].shape[1:3])))  # NHWC input
    try:
        with capture_attention(model, [name]) as maps:
            model(images)
    finally:
        handle.remove()
    H, W = grid[-1]
    wh, ww = block.window_size
    probs = maps[name][-1]  # (B * windows, heads, N, N)
    received = probs.mean(-2).transpose(1, 2).reshape(-1, wh, ww, probs.shape[1])
    pad_h, pad_w = math.ceil(H / wh) * wh, math.ceil(W / ww) * ww
    tokens = window_reverse(received, (wh, ww), pad_h, pad_w)[:, :H, :W]  # (B, H, W, heads), in shifted order
    if any(block.shift_size):
        tokens = torch.roll(tokens, shifts=tuple(block.shift_size), dims=(1, 2))
    text = (f'Swin has no class token: attention each token receives in {name} (the last window attention), '
            f'averaged over the queries of its {wh}x{ww} window: its weight in the average-pooled feature')
    return AttentionMap(tokens.permute(0, 3, 1, 2).contiguous(), name, 'received', text)


def kld_to_uniform(attn: torch.Tensor) -> torch.Tensor:
    """Mean KL divergence ``KL(p || uniform)`` of attention rows ``(..., N)``: 0 for uniform rows, ``log N`` for
    one-hot rows. Higher = sharper (the paper's Fig. 4 measure). The uniform reference spans all ``N`` keys of the
    row (a Swin window's keys, masked or not)."""
    n = attn.shape[-1]
    p = attn.float().clamp_min(0)
    kl = torch.where(p > 0, p * (p * n).log(), torch.zeros_like(p)).sum(-1)
    return kl.mean()


def learned_temperatures(model: nn.Module) -> Dict[str, torch.Tensor]:
    """Per LSA layer (depth order): its per-head multiplier of ``QK^T`` (the paper's Fig. 3 quantity)."""
    return {name: m.temperature.detach().float().cpu() for name, m in model.named_modules() if isinstance(m, LsaMixin)}


def receptive_field(kernel: int, shift: Optional[int] = None, stride: Optional[int] = None) -> int:
    """Tokenization receptive field (paper Eq. 3, ``r_token = r_trans * j + (k - j)`` with ``r_trans = 1``).

    Standard tokenization is a ``k x k`` convolution of stride ``j`` (a patch embedding: ``k = j = P``): ``r = k``.
    SPT's token also sees the copies shifted by ``s`` in every direction, i.e. a ``(k + 2s)`` window: ``r = k + 2s``.
    """
    stride = kernel if stride is None else stride
    k = kernel if shift is None else kernel + 2 * shift
    return 1 * stride + (k - stride)


def tokenizer_geometry(model: nn.Module) -> Tuple[int, int, int]:
    """``(kernel, stride, shift)`` of the model's first tokenization step (shift 0 without SPT).

    A patch embedding is a ``P x P`` stride-``P`` step; T2T's first soft split is a ``k x k`` stride-``j`` unfold of the
    (shifted) image.
    """
    embed = getattr(model, 'patch_embed', None)
    if embed is not None and hasattr(embed, 'soft_splits'):  # T2T tokenizer
        kernel, stride, _ = embed.soft_splits[0]
        return kernel, stride, embed.shift[0]
    proj = getattr(embed, 'proj', None)
    if proj is not None and hasattr(proj, 'shift'):  # SPT projection
        return proj.patch_size[0], proj.patch_size[0], proj.shift[0]
    size = getattr(embed, 'patch_size', None)
    if size is None:
        raise ValueError(f'{type(model).__name__} has no patch_embed with a patch size')
    size = size if isinstance(size, int) else size[0]
    return size, size, 0


def depth_curve(maps: Dict[str, List[torch.Tensor]]) -> List[float]:
    """Per-depth mean KL to uniform over all captured forwards."""
    return [statistics.fmean(kld_to_uniform(a).item() for a in captured) for captured in maps.values()]


def kld_by_depth(model: nn.Module, images: torch.Tensor) -> Dict[str, float]:
    """Attention layer name (depth order) -> mean KL to uniform of its attention for ``images`` (paper Fig. 4)."""
    with torch.no_grad(), capture_attention(model) as maps:
        model(images)
    return dict(zip(maps, depth_curve(maps)))


def temperature_records(model: nn.Module) -> List[Dict[str, Any]]:
    """Per LSA layer (depth order): ``layer``, learned ``mean`` / ``min`` / ``max`` over heads and the ``fixed``
    ``head_dim ** -0.5`` (times the layer's ``temp_ratio``) it starts from (paper Fig. 3)."""
    modules = dict(model.named_modules())
    return [dict(layer=name, mean=t.mean().item(), min=t.min().item(), max=t.max().item(),
                 fixed=modules[name].init_temperature * modules[name].temp_ratio)
            for name, t in learned_temperatures(model).items()]


def attention_records(files: Sequence[Path], label: str, result: AttentionMap) -> List[Dict[str, Any]]:
    """One JSON-ready record per image of ``result`` (from :func:`final_attention_map`): the heads-averaged map
    ``mean`` and the per-head maps ``heads``, their ``grid``, the ``peak`` (row, col) and ``peak_weight``, the map's
    total weight ``map_sum`` and ``kl`` (the map, normalised, against the uniform map)."""
    records = []
    for file, per_head in zip(files, result.maps):
        mean = per_head.mean(0)
        records.append(dict(
            image=str(file), model=label, layer=result.layer, kind=result.kind, description=result.description,
            grid=list(mean.shape), peak=list(divmod(int(mean.argmax()), mean.shape[1])),
            peak_weight=mean.max().item(), map_sum=mean.sum().item(),
            kl=kld_to_uniform((mean / mean.sum()).flatten()).item(), mean=mean.tolist(), heads=per_head.tolist()))
    return records


IMAGE_SUFFIXES = ('.png', '.jpg', '.jpeg')


class ImageBatch(NamedTuple):
    """Images prepared for an analysis: the files, the batch through the model's eval transform, and that batch
    as PIL images (de-normalised), to draw maps on."""
    files: List[Path]
    tensor: torch.Tensor
    images: List[Any]


def load_images(paths: Sequence[str], model: nn.Module) -> ImageBatch:
    """Image files and folders (searched recursively for :data:`IMAGE_SUFFIXES`) through ``model``'s eval transform.

    Raises:
        FileNotFoundError: a path does not exist.
        ValueError: no image found, or a file is not a readable image.
    """
    from PIL import Image
    from timm.data import create_transform, resolve_data_config
    files: List[Path] = []
    for p in map(Path, paths):
        if not p.exists():
            raise FileNotFoundError(f'{p} does not exist')
        files += sorted(f for f in p.rglob('*') if f.suffix.lower() in IMAGE_SUFFIXES) if p.is_dir() else [p]
    if not files:
        raise ValueError(f'no images ({", ".join(IMAGE_SUFFIXES)}) found in {", ".join(map(str, paths))}')
    config = resolve_data_config({}, model=model)
    transform = create_transform(**config)
    tensors = []
    for f in files:
        try:
            with Image.open(f) as image:
                tensors.append(transform(image.convert('RGB')))
        except OSError as e:
            raise ValueError(f'{f} is not a readable image: {e}') from e
    batch = torch.stack(tensors)
    mean = torch.tensor(config['mean']).view(-1, 1, 1)
    std = torch.tensor(config['std']).view(-1, 1, 1)
    shown = [Image.fromarray((((x * std + mean).clamp(0, 1) * 255).round().byte().permute(1, 2, 0)).numpy())
             for x in batch]
    return ImageBatch(files, batch, shown)
