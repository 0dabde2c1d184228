"""The paper's analyses: attention maps, learned temperatures (Fig. 3), attention sharpness as KL divergence from
the uniform distribution (Fig. 4), and the tokenization receptive field (Eq. 3).

Attention is captured only inside :func:`capture_attention`: it hooks the attention modules for the duration of the
block and recomputes their probabilities from the module input; outside it nothing is hooked and the normal (fused)
forward path runs untouched.
"""
import statistics
from contextlib import contextmanager
from typing import Dict, Iterator, List, Optional

import torch
from torch import nn

from timm.layers import Attention

from .layers import LocalitySelfAttention, LsaMixin, lsa_attn_bias

__all__ = ['attention_probs', 'capture_attention', 'depth_curve', 'kld_to_uniform', 'learned_temperatures',
           'receptive_field']


@torch.no_grad()
def attention_probs(module: Attention, x: torch.Tensor) -> torch.Tensor:
    """Softmax attention ``(B, heads, N, N)`` that a timm ``Attention`` (or LSA) module computes for input ``x``."""
    B, N, _ = x.shape
    q, k, _ = module.qkv(x).reshape(B, N, 3, module.num_heads, module.head_dim).permute(2, 0, 3, 1, 4).unbind(0)
    q, k = module.q_norm(q), module.k_norm(k)
    if isinstance(module, LocalitySelfAttention):
        logits = (q * module.temperature.to(q.dtype).view(-1, 1, 1)) @ k.transpose(-2, -1)
        if module.diag_mask:
            logits = logits + lsa_attn_bias(N, logits.dtype, logits.device)
    else:
        logits = (q * module.scale) @ k.transpose(-2, -1)
    return logits.softmax(dim=-1)


@contextmanager
def capture_attention(model: nn.Module) -> Iterator[Dict[str, List[torch.Tensor]]]:
    """Within the block, every forward of ``model`` appends each attention layer's probabilities to
    ``maps[module_name]`` (in depth order). Supports timm ``Attention`` / LSA (ViT, PiT, T2T backbones).

    Raises:
        ValueError: the model has no supported attention layer.
    """
    modules = [(name, m) for name, m in model.named_modules() if isinstance(m, Attention)]
    if not modules:
        raise ValueError(f'{type(model).__name__} has no timm Attention / LocalitySelfAttention layer to capture; '
                         f'supported: ViT, PiT and T2T backbones')
    maps: Dict[str, List[torch.Tensor]] = {name: [] for name, _ in modules}

    def make_hook(name: str):
        def hook(module, inputs, output):
            maps[name].append(attention_probs(module, inputs[0]))
        return hook

    handles = [m.register_forward_hook(make_hook(name)) for name, m in modules]
    try:
        yield maps
    finally:
        for handle in handles:
            handle.remove()


def kld_to_uniform(attn: torch.Tensor) -> torch.Tensor:
    """Mean KL divergence ``KL(p || uniform)`` of attention rows ``(..., N)``: 0 for uniform rows, ``log N`` for
    one-hot rows. Higher = sharper (the paper's Fig. 4 measure)."""
    n = attn.shape[-1]
    p = attn.clamp_min(0)
    kl = torch.where(p > 0, p * (p * n).log(), torch.zeros_like(p)).sum(-1)
    return kl.mean()


def learned_temperatures(model: nn.Module) -> Dict[str, torch.Tensor]:
    """Per LSA layer (depth order): its per-head multiplier of ``QK^T`` (the paper's Fig. 3 quantity)."""
    return {name: m.temperature.detach().float().cpu() for name, m in model.named_modules() if isinstance(m, LsaMixin)}


def receptive_field(patch_size: int, shift: Optional[int] = None) -> int:
    """Tokenization receptive field (paper Eq. 3, ``r_token = r_trans * j + (k - j)`` with ``r_trans = 1``).

    Standard tokenization is a ``P x P`` stride-``P`` convolution: ``r = P``. SPT's token also sees the copies shifted
    by ``s`` in every direction, i.e. a ``(P + 2s)`` window at stride ``P``: ``r = P + 2s``.
    """
    kernel = patch_size if shift is None else patch_size + 2 * shift
    stride = patch_size
    return 1 * stride + (kernel - stride)


def depth_curve(maps: Dict[str, List[torch.Tensor]]) -> List[float]:
    """Per-depth mean KL to uniform over all captured forwards."""
    return [statistics.fmean(kld_to_uniform(a).item() for a in captured) for captured in maps.values()]
