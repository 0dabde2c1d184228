"""Locality Self-Attention inside Swin's shifted windows.

Inside a window, LSA computes, in this order: ``(temperature * q) k^T`` + relative-position bias (not scaled by the
temperature) + shifted-window mask, ``-inf`` on the window's diagonal, softmax; the three additive terms go to
``F.scaled_dot_product_attention`` as one mask. A token whose shifted-window region holds only itself keeps its
self-relation (otherwise its row would be all ``-inf``).
"""
from typing import Optional

import torch
import torch.nn.functional as F

from timm.models.swin_transformer import WindowAttention

from .lsa import LsaMixin, lsa_attn_bias

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
    become ``-inf``, which lets :func:`~timm_sl.layers.lsa_attn_bias` spot such rows and give them back their
    self-relation. Under LSA the sum is the finite position bias plus a 0 / ``-inf`` pattern of the mask alone.
    """
    if not diag_mask:
        return rel_pos_bias if mask is None else rel_pos_bias + mask.unsqueeze(1).to(rel_pos_bias.dtype)  # timm's sum
    allowed = None if mask is None else (mask >= 0).unsqueeze(1)
    structure = lsa_attn_bias(rel_pos_bias.shape[-1], torch.float32, rel_pos_bias.device, allowed)
    return (rel_pos_bias + structure).to(dtype)


class LocalityWindowAttention(WindowAttention, LsaMixin):
    """timm's Swin ``WindowAttention`` with LSA (diagonal mask per window, per-head learnable temperature).

    timm's constructor plus the LSA switches ``diag_mask``, ``learn_temp``, ``temp_ratio`` of
    :class:`~timm_sl.layers.LsaMixin`; timm's projections, relative-position table and index.
    """

    def __init__(
            self,
            dim: int,
            num_heads: int,
            head_dim: Optional[int] = None,
            window_size=7,
            qkv_bias: bool = True,
            attn_drop: float = 0.,
            proj_drop: float = 0.,
            diag_mask: bool = True,
            learn_temp: bool = True,
            temp_ratio: float = 1.0,
            device=None,
            dtype=None,
    ) -> None:
        super().__init__(
            dim, num_heads, head_dim=head_dim, window_size=window_size, qkv_bias=qkv_bias, attn_drop=attn_drop,
            proj_drop=proj_drop, device=device, dtype=dtype)
        self.init_lsa(head_dim or dim // num_heads, diag_mask, learn_temp, temp_ratio, device=device, dtype=dtype)

    def reset_parameters(self) -> None:
        super().reset_parameters()
        if hasattr(self, 'temperature'):  # WindowAttention.__init__ calls this before init_lsa
            self.reset_temperature()

    def init_non_persistent_buffers(self) -> None:
        """timm's hook after a meta-device build: the relative-position index, then a fixed temperature."""
        WindowAttention.init_non_persistent_buffers(self)
        LsaMixin.init_non_persistent_buffers(self)

    def forward(self, x: torch.Tensor, mask: Optional[torch.Tensor] = None) -> torch.Tensor:
        B_, N, C = x.shape
        qkv = self.qkv(x).reshape(B_, N, 3, self.num_heads, -1).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        q = q * self.temperature.to(q.dtype).view(-1, 1, 1)  # the position bias is added unscaled, after
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
