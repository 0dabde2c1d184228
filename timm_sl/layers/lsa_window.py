"""Locality Self-Attention inside Swin's shifted windows.

Inside a window, LSA computes, in this order: ``(temperature * q) k^T`` + relative-position bias (not scaled by the
temperature) + shifted-window mask, ``-inf`` on the window's diagonal, softmax; the three additive terms go to
``F.scaled_dot_product_attention`` as one mask. A token whose shifted-window region holds only itself keeps its
self-relation (otherwise its row would be all ``-inf``).

The 0 / ``-inf`` part (shift mask, diagonal, lone-token rule) depends on the block's geometry only, so
:class:`LocalitySwinBlock` makes it once, where timm makes the block's shift mask; each forward then adds the
relative-position bias to it (one kernel). A window attention handed timm's own shift mask (or none) derives the
pattern per call (:func:`window_attn_bias`).
"""
from typing import Optional, Tuple

import torch
import torch.nn.functional as F

from timm.layers import to_2tuple
from timm.models.swin_transformer import SwinTransformerBlock, WindowAttention

from .lsa import LsaMixin, check_heads, lsa_attn_bias
from .spt import check_window_tokens

__all__ = ['LocalitySwinBlock', 'LocalityWindowAttention', 'window_attn_bias', 'window_lsa_pattern']


def window_lsa_pattern(
        shift_mask: Optional[torch.Tensor],
        window_area: int,
        dtype: torch.dtype,
        device: torch.device,
) -> torch.Tensor:
    """LSA's additive 0 / ``-inf`` pattern of a window attention, ``(nW or 1, 1, N, N)``: the pairs timm's
    ``shift_mask`` ``(nW, N, N)`` blocks (its finite ``-100``) and the diagonal at ``-inf``, except where a token is
    alone in its shifted-window region (it keeps its self-relation)."""
    allowed = None if shift_mask is None else shift_mask >= 0
    return lsa_attn_bias(window_area, dtype, device, allowed).reshape(-1, 1, window_area, window_area)


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
    self-relation. Under LSA the sum is the finite position bias plus :func:`window_lsa_pattern`.
    """
    if not diag_mask:
        return rel_pos_bias if mask is None else rel_pos_bias + mask.unsqueeze(1).to(rel_pos_bias.dtype)  # timm's sum
    structure = window_lsa_pattern(mask, rel_pos_bias.shape[-1], torch.float32, rel_pos_bias.device)
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
        check_heads(dim, num_heads, head_dim if head_dim is not None else 0)  # timm's takes dim // num_heads
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
        """``mask``: timm's shift mask ``(nW, N, N)`` (0 / ``-100``) or None, from which the LSA pattern is derived
        here; or the complete pattern ``(nW or 1, 1, N, N)`` a :class:`LocalitySwinBlock` made once
        (:func:`window_lsa_pattern`), which is only added to the relative-position bias."""
        B_, N, C = x.shape
        qkv = self.qkv(x).reshape(B_, N, 3, self.num_heads, -1).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        q = q * self.temperature.to(q.dtype).view(-1, 1, 1)  # the position bias is added unscaled, after
        if mask is not None and mask.dim() == 4:  # the block's pattern: shift mask, diagonal and lone tokens in it
            if not self.diag_mask:
                raise ValueError('This LocalityWindowAttention has diag_mask=False but got its block\'s LSA pattern; '
                                 'remake the block\'s mask after switching (set_lsa_switches does).')
            bias = self._get_rel_pos_bias() + mask  # (nW or 1, nH, N, N)
        else:
            bias = window_attn_bias(self._get_rel_pos_bias(), mask, self.diag_mask, q.dtype)
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


class LocalitySwinBlock(SwinTransformerBlock):
    """timm's ``SwinTransformerBlock`` whose ``attn_mask`` buffer holds LSA's pattern when its attention is a
    :class:`LocalityWindowAttention` with ``diag_mask``: the shift mask, diagonal and lone-token rule as one
    non-persistent ``(nW or 1, 1, N, N)`` 0 / ``-inf`` constant (:func:`window_lsa_pattern`).

    No state or constructor of its own: timm's blocks are built inline by its ``SwinTransformerStage`` (no seam for
    the block or its attention), so :mod:`timm_sl.convert` turns a timm block into this class when it gives the
    block an LSA attention. The pattern is made in ``_init_buffers``, the one place timm (re)makes the block's shift
    mask: at build, in ``set_input_size`` and in ``init_non_persistent_buffers`` (after a meta-device build);
    ``.to()`` moves and casts it with the model. With ``dynamic_mask`` (timm's non-strict image size) timm makes the
    shift mask per call and the attention derives the pattern per call.
    """
    holds_lsa_pattern = True  # :func:`~timm_sl.layers.set_lsa_switches` remakes its buffers after a switch

    def set_input_size(
            self,
            feat_size: Tuple[int, int],
            window_size: Tuple[int, int],
            always_partition: Optional[bool] = None,
    ) -> None:
        """timm's resize, refusing first windows past the attention bound (:func:`~timm_sl.layers.spt.
        check_window_tokens`) before their buffers (``N x N`` index and pattern) are made: a slified Swin's resize
        (timm's class) scales the windows with the grid and meets no other check. An ``sl_swin`` model refuses them
        before anything changes; a slified one has its stem and earlier blocks resized already (resize it again)."""
        partition = self.always_partition if always_partition is None else always_partition
        window = to_2tuple(window_size)
        if not partition:  # timm: a window larger than the map is the map
            window = tuple(min(w, f) for w, f in zip(window, feat_size))
        check_window_tokens(type(self), tuple(feat_size), window, f'feat_size={tuple(feat_size)!r}')
        super().set_input_size(feat_size, window_size, always_partition)

    def _init_buffers(self) -> None:
        super()._init_buffers()  # timm's shift mask (None without a shift)
        if not self.dynamic_mask and isinstance(self.attn, LocalityWindowAttention) and self.attn.diag_mask:
            weight = self.norm1.weight
            pattern = window_lsa_pattern(self.attn_mask, self.window_area, weight.dtype, weight.device)
            self.register_buffer('attn_mask', pattern, persistent=False)
