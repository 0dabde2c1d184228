"""Locality Self-Attention inside Swin's shifted windows.

Inside a window, LSA computes, in this order: ``(temperature * q) k^T`` + relative-position bias (not scaled by the
temperature) + shifted-window mask, ``-inf`` on the window's diagonal, softmax; the three additive terms go to
``F.scaled_dot_product_attention`` as one mask. A token whose shifted-window region holds only itself keeps its
self-relation (otherwise its row would be all ``-inf``).
"""
from typing import Any, Dict, Optional

import torch
import torch.nn.functional as F

from timm.layers import register_notrace_function
from timm.models.swin_transformer import WindowAttention

from .lsa import TimmLsaMixin, lsa_attn_bias
from .shared_tensors import SharedTensorCache

__all__ = ['LocalityWindowAttention', 'window_attn_bias']


def window_attn_bias(
        rel_pos_bias: torch.Tensor,
        mask: Optional[torch.Tensor],
        diag_mask: bool,
        dtype: torch.dtype,
) -> torch.Tensor:
    """Additive logit bias of a window attention: relative-position bias ``(1, heads, N, N)`` + shifted-window
    ``mask`` ``(nW, N, N)``, and ``-inf`` on the diagonal when ``diag_mask``. Shape ``(nW or 1, heads, N, N)``.

    timm's shift mask blocks with a finite ``-100``. With the diagonal masked, a token alone in its shifted-window
    region would then spread its attention over the blocked tokens (all at ``-100``); so under LSA blocked entries
    become ``-inf``, which lets :func:`lsa_attn_bias` spot such rows and give them back their self-relation. Under
    LSA the sum is ``rel_pos_bias + window_lsa_structure(mask)``: the finite position bias plus a 0 / ``-inf``
    pattern that depends on the mask alone.
    """
    if not diag_mask:
        return rel_pos_bias if mask is None else rel_pos_bias + mask.unsqueeze(1).to(rel_pos_bias.dtype)  # timm's sum
    structure = window_lsa_structure(mask, rel_pos_bias.shape[-1], rel_pos_bias.device)
    return (rel_pos_bias + structure).to(dtype)


def _window_structure(mask: torch.Tensor) -> torch.Tensor:
    return lsa_attn_bias(mask.shape[-1], torch.float32, mask.device, (mask >= 0).unsqueeze(1))


_STRUCTURES = SharedTensorCache(max_entries=64)


@register_notrace_function
def window_lsa_structure(mask: Optional[torch.Tensor], num_tokens: int, device: torch.device) -> torch.Tensor:
    """The LSA part of a window attention's bias, float32: ``-inf`` where the shift ``mask`` blocks (``< 0``) and on
    the diagonal, 0 elsewhere, and 0 on the diagonal of a row that would otherwise have no key. ``(nW, 1, N, N)``,
    or the shared ``(N, N)`` diagonal bias without a mask.

    It depends on the mask alone, so it is built once per mask and reused (no kernel per call): timm's block passes
    the same mask buffer every forward. A mask made per call (timm's ``dynamic_mask``), one made under inference
    mode, or a graph capture (tracing, ``torch.compile``, a CUDA graph) builds it afresh. Do not modify the result
    in place.
    """
    if mask is None:
        return lsa_attn_bias(num_tokens, torch.float32, device, shared=True)
    if not torch.jit.is_scripting():
        return _shared_window_structure(mask)
    return _window_structure(mask)


@torch.jit.unused
def _shared_window_structure(mask: torch.Tensor) -> torch.Tensor:
    return _STRUCTURES.get('window_lsa_structure', lambda: _window_structure(mask), mask.device, source=mask)


class LocalityWindowAttention(TimmLsaMixin, WindowAttention):
    """timm's Swin ``WindowAttention`` with LSA (diagonal mask per window, per-head learnable temperature); the LSA
    switches of :class:`~timm_sl.layers.TimmLsaMixin`."""

    timm_cls = WindowAttention

    def host_head_dim(self) -> int:
        return self.qkv.out_features // 3 // self.num_heads

    def reset_parameters(self) -> None:
        super().reset_parameters()
        if hasattr(self, 'temperature'):  # WindowAttention.__init__ calls this before init_lsa
            self.reset_temperature()

    @classmethod
    def timm_config(cls, attn: WindowAttention) -> Dict[str, Any]:
        return dict(
            dim=attn.dim,
            num_heads=attn.num_heads,
            head_dim=attn.qkv.out_features // 3 // attn.num_heads,
            window_size=attn.window_size,
            qkv_bias=attn.qkv.bias is not None,
            attn_drop=attn.attn_drop.p,
            proj_drop=attn.proj_drop.p,
        )

    @classmethod
    def from_window_attention(cls, attn: WindowAttention, **switches: Any) -> 'LocalityWindowAttention':
        """:meth:`from_timm` under the name it has had."""
        return cls.from_timm(attn, **switches)

    def forward(self, x: torch.Tensor, mask: Optional[torch.Tensor] = None) -> torch.Tensor:
        # timm's WindowAttention.forward has no hook for a tensor scale or an extra mask: its attention core is
        # written out here with the LSA terms; the projections and the position-bias table are timm's.
        B_, N, C = x.shape
        qkv = F.linear(x, *self.scaled_qkv_params(self.qkv.weight, self.qkv.bias))
        q, k, v = qkv.reshape(B_, N, 3, self.num_heads, -1).permute(2, 0, 3, 1, 4).unbind(0)

        bias = window_attn_bias(self._get_rel_pos_bias(), mask, self.diag_mask, q.dtype)  # (nW or 1, nH, N, N)
        num_win = bias.shape[0]

        if self.fused_attn:
            if num_win > 1:  # SDPA takes a mask per batch entry
                bias = bias.unsqueeze(0).expand(B_ // num_win, -1, -1, -1, -1).reshape(-1, self.num_heads, N, N)
            x = F.scaled_dot_product_attention(
                q, k, v,
                attn_mask=bias.to(q.dtype),
                dropout_p=self.attn_drop.p if self.training else 0.,
                scale=1.0,
            )
        else:
            # the per-window bias broadcast over the images of the batch, not copied for each of them
            attn = (q @ k.transpose(-2, -1)).view(-1, num_win, self.num_heads, N, N) + bias.unsqueeze(0)
            attn = self.softmax(attn.view(-1, self.num_heads, N, N))
            attn = self.attn_drop(attn)
            x = attn @ v

        x = x.transpose(1, 2).reshape(B_, N, -1)
        x = self.proj(x)
        x = self.proj_drop(x)
        return x

    def extra_repr(self) -> str:
        return f'dim={self.dim}, window_size={self.window_size}, num_heads={self.num_heads}, {self.lsa_repr()}'
