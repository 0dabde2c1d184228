"""SL-Swin: timm's SwinTransformer with SPT, LSA in the windows and SPT merging (Spool).

Paper: `Vision Transformer for Small-Size Datasets` - https://arxiv.org/abs/2112.13492

SPT enters through timm's ``embed_layer`` seam. timm builds each block's ``WindowAttention`` and each stage's
``PatchMerging`` inline with no constructor argument to swap them, so :class:`SlSwinTransformer` replaces those
submodules after timm has built the model, keeping their configuration and initial weights.

Inside a window, LSA computes, in this order: ``(temperature * q) k^T`` + relative-position bias (not scaled by the
temperature) + shifted-window mask, ``-inf`` on the window's diagonal, softmax; the three additive terms go to
``F.scaled_dot_product_attention`` as one mask. A token whose shifted-window region holds only itself keeps its
self-relation (otherwise its row would be all ``-inf``).
"""
from typing import Any, Dict, Optional, Set

import torch
import torch.nn.functional as F

from timm.models import build_model_with_cfg, generate_default_cfgs, register_model
from timm.models.swin_transformer import PatchMerging, SwinTransformer, WindowAttention
from timm.models.swin_transformer import checkpoint_filter_fn as timm_filter_fn

from ..layers import LsaMixin, ShiftedPatchMerging, lsa_attn_bias, lsa_no_weight_decay
from ._cfgs import sl_cfg, small_data_cfg, with_pretrained_tags
from ._filters import sl_filter
from ._sl_args import SlArgs, check_depths, check_optional_bool

__all__ = ['SlSwinTransformer', 'LocalityWindowAttention', 'window_attn_bias']


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
    become ``-inf``, which lets :func:`lsa_attn_bias` spot such rows and give them back their self-relation.
    """
    bias = rel_pos_bias
    if not diag_mask:
        return bias if mask is None else bias + mask.unsqueeze(1).to(bias.dtype)  # (nW, nH, N, N): timm's sum
    if mask is not None:
        bias = bias.masked_fill(mask.unsqueeze(1) < 0, float('-inf'))  # (nW, nH, N, N)
    return lsa_attn_bias(bias.shape[-1], dtype, bias.device, bias)


class LocalityWindowAttention(LsaMixin, WindowAttention):
    """timm's Swin ``WindowAttention`` with LSA (diagonal mask per window, per-head learnable temperature)."""

    def __init__(
            self,
            dim: int,
            num_heads: int,
            diag_mask: bool = True,
            learn_temp: bool = True,
            temp_ratio: float = 1.0,
            device=None,
            dtype=None,
            **kwargs: Any,
    ) -> None:
        super().__init__(dim, num_heads, device=device, dtype=dtype, **kwargs)
        head_dim = self.qkv.out_features // 3 // num_heads
        self.init_lsa(num_heads, head_dim, diag_mask, learn_temp, temp_ratio, device=device, dtype=dtype)

    def reset_parameters(self) -> None:
        super().reset_parameters()
        if hasattr(self, 'temperature'):  # WindowAttention.__init__ calls this before init_lsa
            self.reset_temperature()

    @classmethod
    def from_window_attention(cls, attn: WindowAttention, **lsa_kwargs: Any) -> 'LocalityWindowAttention':
        """An LSA window attention with the configuration and weights of timm's ``WindowAttention``."""
        weight = attn.qkv.weight
        new = cls(
            attn.dim,
            attn.num_heads,
            head_dim=attn.qkv.out_features // 3 // attn.num_heads,
            window_size=attn.window_size,
            qkv_bias=attn.qkv.bias is not None,
            attn_drop=attn.attn_drop.p,
            proj_drop=attn.proj_drop.p,
            device=weight.device,
            dtype=weight.dtype,
            **lsa_kwargs,
        )
        new.load_state_dict(attn.state_dict(), strict=False)  # 'temperature' keeps its own init
        return new

    def forward(self, x: torch.Tensor, mask: Optional[torch.Tensor] = None) -> torch.Tensor:
        # timm's WindowAttention.forward has no hook for a tensor scale or an extra mask: its attention core is
        # written out here with the LSA terms; the projections and the position-bias table are timm's.
        B_, N, C = x.shape
        qkv = F.linear(x, *self.scaled_qkv_params(self.qkv.weight, self.qkv.bias))
        q, k, v = qkv.reshape(B_, N, 3, self.num_heads, -1).permute(2, 0, 3, 1, 4).unbind(0)

        bias = window_attn_bias(self._get_rel_pos_bias(), mask, self.diag_mask, q.dtype)  # before expanding over batch
        if mask is not None:
            bias = bias.unsqueeze(0).expand(B_ // bias.shape[0], -1, -1, -1, -1).reshape(-1, self.num_heads, N, N)

        if self.fused_attn:
            x = F.scaled_dot_product_attention(
                q, k, v,
                attn_mask=bias.to(q.dtype),
                dropout_p=self.attn_drop.p if self.training else 0.,
                scale=1.0,
            )
        else:
            attn = q @ k.transpose(-2, -1) + bias
            attn = self.softmax(attn)
            attn = self.attn_drop(attn)
            x = attn @ v

        x = x.transpose(1, 2).reshape(B_, N, -1)
        x = self.proj(x)
        x = self.proj_drop(x)
        return x

    def extra_repr(self) -> str:
        return f'dim={self.dim}, window_size={self.window_size}, num_heads={self.num_heads}, {self.lsa_repr()}'


class SlSwinTransformer(SwinTransformer):
    """timm ``SwinTransformer`` with SPT patch embedding, LSA in every window attention and Spool merging.

    Args:
        spt_pool: Spool instead of ``PatchMerging``; ``None`` follows ``spt`` (the paper's "w/o Spool" rows are
            ``spt_pool=False``).
        **kwargs: ``SwinTransformer`` arguments and the SL switches of :class:`timm_sl.models.SlArgs`.

    As in the reference code, the SPT patch embedding has no LayerNorm after its projection (SPT normalises the
    patch before projecting it); Spool merges with a one-token shift whatever ``shift_ratio`` the embedding uses.
    """
    baseline_kwargs: Dict[str, Any] = dict(spt=False, lsa=False, spt_pool=False)

    def __init__(self, spt_pool: Optional[bool] = None, **kwargs: Any) -> None:
        sl_args = SlArgs.pop_from(kwargs, type(self))
        check_depths(kwargs, 'depths', per_stage=True)
        check_optional_bool('spt_pool', spt_pool)
        sl_args.inject_embed_layer(kwargs, post_norm=False)
        super().__init__(**kwargs)
        self.sl_args = sl_args
        self.spt_pool = sl_args.spt if spt_pool is None else spt_pool
        lsa_layer = sl_args.attn_layer(lsa_cls=LocalityWindowAttention) if sl_args.uses_lsa_layer else None
        for stage in self.layers:
            if self.spt_pool and isinstance(stage.downsample, PatchMerging):
                merge = stage.downsample
                stage.downsample = ShiftedPatchMerging(
                    merge.dim, merge.out_dim, shift_directions=sl_args.shift_directions, input_fmt='NHWC',
                    device=merge.reduction.weight.device, dtype=merge.reduction.weight.dtype)
            if lsa_layer is not None:
                for block in stage.blocks:
                    block.attn = lsa_layer.from_window_attention(block.attn)

    @torch.jit.ignore
    def no_weight_decay(self) -> Set[str]:
        return super().no_weight_decay() | lsa_no_weight_decay(self)


def _create_sl_swin(variant: str, pretrained: bool = False, **kwargs: Any) -> SlSwinTransformer:
    depths = kwargs.get('depths', (2, 2, 6, 2))
    out_indices = kwargs.pop('out_indices', tuple(range(len(depths))))
    return build_model_with_cfg(
        SlSwinTransformer,
        variant,
        pretrained,
        pretrained_filter_fn=sl_filter(timm_filter_fn),
        feature_cfg=dict(flatten_sequential=True, out_indices=out_indices),
        **kwargs,
    )


default_cfgs = generate_default_cfgs(with_pretrained_tags({
    'sl_swin_t': sl_cfg(crop_pct=.9, pool_size=(7, 7), classifier='head.fc'),
    'sl_swin_s': sl_cfg(crop_pct=.9, pool_size=(7, 7), classifier='head.fc'),
    'sl_swin_b': sl_cfg(crop_pct=.9, pool_size=(7, 7), classifier='head.fc'),
    'sl_swin_32': small_data_cfg(32, pool_size=(4, 4), classifier='head.fc'),
    'sl_swin_64': small_data_cfg(64, pool_size=(4, 4), classifier='head.fc'),
}))

# The paper's small-data Swin (Table 2): dim 96, 3 stages of depths (2, 6, 4) with (3, 6, 12) heads, window 4,
# MLP ratio 2; patch 2 (32 px) / 4 (64 px) for a 16x16 first-stage grid.
_SMALL_SWIN = dict(embed_dim=96, depths=(2, 6, 4), num_heads=(3, 6, 12), window_size=4, mlp_ratio=2)


@register_model
def sl_swin_t(pretrained: bool = False, **kwargs: Any) -> SlSwinTransformer:
    """SL-Swin-T at 224 px (Swin-T: patch 4, window 7, dim 96, depths (2, 2, 6, 2), heads (3, 6, 12, 24))."""
    model_args = dict(patch_size=4, window_size=7, embed_dim=96, depths=(2, 2, 6, 2), num_heads=(3, 6, 12, 24))
    return _create_sl_swin('sl_swin_t', pretrained=pretrained, **dict(model_args, **kwargs))


@register_model
def sl_swin_32(pretrained: bool = False, **kwargs: Any) -> SlSwinTransformer:
    """SL-Swin of the paper's small-dataset setting for 32 px inputs: patch 2."""
    model_args = dict(img_size=32, patch_size=2, **_SMALL_SWIN)
    return _create_sl_swin('sl_swin_32', pretrained=pretrained, **dict(model_args, **kwargs))


@register_model
def sl_swin_64(pretrained: bool = False, **kwargs: Any) -> SlSwinTransformer:
    """SL-Swin of the paper's small-dataset setting for 64 px inputs: patch 4."""
    model_args = dict(img_size=64, patch_size=4, **_SMALL_SWIN)
    return _create_sl_swin('sl_swin_64', pretrained=pretrained, **dict(model_args, **kwargs))


@register_model
def sl_swin_s(pretrained: bool = False, **kwargs: Any) -> SlSwinTransformer:
    """SL-Swin-S at 224 px; mirrors timm's ``swin_small_patch4_window7_224`` (patch 4, window 7, dim 96, depths
    (2, 2, 18, 2), heads (3, 6, 12, 24))."""
    model_args = dict(patch_size=4, window_size=7, embed_dim=96, depths=(2, 2, 18, 2), num_heads=(3, 6, 12, 24))
    return _create_sl_swin('sl_swin_s', pretrained=pretrained, **dict(model_args, **kwargs))


@register_model
def sl_swin_b(pretrained: bool = False, **kwargs: Any) -> SlSwinTransformer:
    """SL-Swin-B at 224 px; mirrors timm's ``swin_base_patch4_window7_224`` (patch 4, window 7, dim 128, depths
    (2, 2, 18, 2), heads (4, 8, 16, 32))."""
    model_args = dict(patch_size=4, window_size=7, embed_dim=128, depths=(2, 2, 18, 2), num_heads=(4, 8, 16, 32))
    return _create_sl_swin('sl_swin_b', pretrained=pretrained, **dict(model_args, **kwargs))
