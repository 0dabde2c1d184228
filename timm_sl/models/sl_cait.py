"""SL-CaiT: timm's Cait with SPT, LSA in the talking-heads attention and a learnable temperature in class attention.

Paper: `Vision Transformer for Small-Size Datasets` - https://arxiv.org/abs/2112.13492

SPT enters through Cait's ``patch_layer`` seam, the attention classes through ``attn_block`` and
``attn_block_token_only``. Both attention classes also take an explicit ``head_dim`` (timm's derive it from the
width): the paper's small-data CaiT has 4 heads of 64 (inner width 256) on a 192-wide model.

Talking-heads LSA: ``(temperature * q) k^T``, pre-softmax head mixing (``proj_l``), **then** ``-inf`` on the
diagonal, softmax, post-softmax mixing (``proj_w``). Masking before the pre-softmax mixing would feed ``-inf`` into a
linear map and give NaN (``-inf * 0``, ``-inf + inf``); the reference code masks before mixing with ``-1e-9``, which
masks nothing — not reproduced. Class attention (one query, the class token) gets the learnable temperature only and
no diagonal mask, as in the reference code: its only "self" relation is the class token attending to itself
among the patch tokens, which carries the summary being built.
"""
from typing import Any, Dict, Optional, Set

import torch
import torch.nn.functional as F
from torch import nn

from timm.models import build_model_with_cfg, generate_default_cfgs, register_model
from timm.models.cait import Cait, ClassAttn, TalkingHeadAttn, checkpoint_filter_fn as timm_filter_fn

from ..layers import LsaMixin, lsa_attn_bias, lsa_no_weight_decay
from ._cfgs import sl_cfg, small_data_cfg
from ._filters import sl_filter
from ._sl_args import SlArgs, check_depths

__all__ = ['SlCait', 'LocalityTalkingHeadAttn', 'LocalityClassAttn']


def _resize_heads(module: nn.Module, dim: int, num_heads: int, head_dim: Optional[int], names: tuple) -> int:
    """Rebuild ``module``'s input projections (``names``) and ``proj`` for ``num_heads * head_dim`` inner width.

    timm's CaiT attention derives the head width from ``dim // num_heads`` and offers no argument for it; the
    projections it built are replaced here when another ``head_dim`` is asked for. Returns the head dim in use.
    """
    if head_dim is None or head_dim * num_heads == dim:
        return dim // num_heads
    inner = head_dim * num_heads
    for name in names:
        old = getattr(module, name)
        ratio = old.out_features // dim
        setattr(module, name, nn.Linear(dim, inner * ratio, bias=old.bias is not None,
                                        device=old.weight.device, dtype=old.weight.dtype))
    module.proj = nn.Linear(inner, dim, device=module.proj.weight.device, dtype=module.proj.weight.dtype)
    return head_dim


class LocalityTalkingHeadAttn(LsaMixin, TalkingHeadAttn):
    """timm's talking-heads attention with LSA (mask after the pre-softmax head mixing) and an optional head dim.

    With ``diag_mask=False, learn_temp=False, temp_ratio=1`` it computes plain talking-heads attention (the baseline
    of a config whose head dim timm's class cannot express); its state dict then has exactly timm's keys.
    """

    def __init__(
            self,
            dim: int,
            num_heads: int = 8,
            head_dim: Optional[int] = None,
            diag_mask: bool = True,
            learn_temp: bool = True,
            temp_ratio: float = 1.0,
            device=None,
            dtype=None,
            **kwargs: Any,
    ) -> None:
        super().__init__(dim, num_heads=num_heads, device=device, dtype=dtype, **kwargs)
        self.head_dim = _resize_heads(self, dim, num_heads, head_dim, ('qkv',))
        self.init_lsa(num_heads, self.head_dim, diag_mask, learn_temp, temp_ratio, device=device, dtype=dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, N, C = x.shape
        qkv = F.linear(x, *self.scaled_qkv_params(self.qkv.weight, self.qkv.bias))
        q, k, v = qkv.reshape(B, N, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4).unbind(0)
        attn = q @ k.transpose(-2, -1)
        attn = self.proj_l(attn.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
        if self.diag_mask:  # after the pre-softmax mixing: -inf must not pass through proj_l
            attn = attn + lsa_attn_bias(N, attn.dtype, attn.device)
        attn = attn.softmax(dim=-1)
        attn = self.proj_w(attn.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
        attn = self.attn_drop(attn)
        x = (attn @ v).transpose(1, 2).reshape(B, N, -1)
        x = self.proj(x)
        x = self.proj_drop(x)
        return x

    def extra_repr(self) -> str:
        return f'num_heads={self.num_heads}, head_dim={self.head_dim}, {self.lsa_repr()}'


class LocalityClassAttn(LsaMixin, ClassAttn):
    """timm's class attention with LSA's learnable per-head temperature and an optional head dim (no diagonal mask:
    see the module docstring). ``diag_mask`` is accepted for a uniform interface and ignored."""

    def __init__(
            self,
            dim: int,
            num_heads: int = 8,
            head_dim: Optional[int] = None,
            diag_mask: bool = False,
            learn_temp: bool = True,
            temp_ratio: float = 1.0,
            device=None,
            dtype=None,
            **kwargs: Any,
    ) -> None:
        super().__init__(dim, num_heads=num_heads, device=device, dtype=dtype, **kwargs)
        self.head_dim = _resize_heads(self, dim, num_heads, head_dim, ('q', 'k', 'v'))
        self.init_lsa(num_heads, self.head_dim, False, learn_temp, temp_ratio, device=device, dtype=dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, N, C = x.shape
        q = F.linear(x[:, 0], *self.scaled_qkv_params(self.q.weight, self.q.bias))
        q = q.reshape(B, 1, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.k(x).reshape(B, N, self.num_heads, self.head_dim).transpose(1, 2)
        v = self.v(x).reshape(B, N, self.num_heads, self.head_dim).transpose(1, 2)
        if self.fused_attn:
            x_cls = F.scaled_dot_product_attention(
                q, k, v, dropout_p=self.attn_drop.p if self.training else 0., scale=1.0)
        else:
            attn = (q @ k.transpose(-2, -1)).softmax(dim=-1)
            attn = self.attn_drop(attn)
            x_cls = attn @ v
        x_cls = x_cls.transpose(1, 2).reshape(B, 1, -1)
        x_cls = self.proj(x_cls)
        x_cls = self.proj_drop(x_cls)
        return x_cls

    def extra_repr(self) -> str:
        return f'num_heads={self.num_heads}, head_dim={self.head_dim}, {self.lsa_repr()}'


class SlCait(Cait):
    """timm ``Cait`` with SPT patch embedding and LSA attention.

    Args:
        head_dim: Width of each attention head (default ``embed_dim // num_heads``, as timm's CaiT).
        **kwargs: ``Cait`` arguments and the SL switches of :class:`timm_sl.models.SlArgs`.
    """
    baseline_kwargs: Dict[str, Any] = dict(spt=False, lsa=False)

    def __init__(self, head_dim: Optional[int] = None, **kwargs: Any) -> None:
        sl_args = SlArgs.pop_from(kwargs, type(self))
        check_depths(kwargs, 'depth', 'depth_token_only')
        sl_args.inject_embed_layer(kwargs, key='patch_layer')
        dim, heads = kwargs.get('embed_dim', 768), kwargs.get('num_heads', 12)
        if head_dim is not None and (not isinstance(head_dim, int) or isinstance(head_dim, bool) or head_dim < 1):
            raise ValueError(f'head_dim={head_dim!r} is invalid; allowed: a positive int or None.')
        custom_heads = head_dim is not None and head_dim * heads != dim
        if sl_args.uses_lsa_layer or custom_heads:
            switches = sl_args.lsa_kwargs()
            for key, cls in (('attn_block', LocalityTalkingHeadAttn), ('attn_block_token_only', LocalityClassAttn)):
                if key in kwargs:
                    raise ValueError(f'{key} cannot be combined with LSA or head_dim; pass lsa=False, head_dim=None.')
                kwargs[key] = cls.configured(head_dim=head_dim, **switches)
        super().__init__(**kwargs)
        self.sl_args = sl_args

    @torch.jit.ignore
    def no_weight_decay(self) -> Set[str]:
        return super().no_weight_decay() | lsa_no_weight_decay(self)


def _create_sl_cait(variant: str, pretrained: bool = False, **kwargs: Any) -> SlCait:
    out_indices = kwargs.pop('out_indices', 3)
    return build_model_with_cfg(
        SlCait,
        variant,
        pretrained,
        pretrained_filter_fn=sl_filter(timm_filter_fn),
        feature_cfg=dict(out_indices=out_indices, feature_cls='getter'),
        **kwargs,
    )


default_cfgs = generate_default_cfgs({
    'sl_cait_xxs24': sl_cfg(crop_pct=1.0),
    'sl_cait_xxs36': sl_cfg(crop_pct=1.0),
    'sl_cait_xs24': sl_cfg(crop_pct=1.0),
    'sl_cait_s24': sl_cfg(crop_pct=1.0),
    'sl_cait_32': small_data_cfg(32),
    'sl_cait_64': small_data_cfg(64),
})

# The paper's small-data CaiT (Table 2): dim 192, 24 talking-heads layers + 2 class-attention layers, 4 heads of 64
# (inner width 256), MLP hidden 384, LayerScale; patch 4 (32 px) / 8 (64 px) for 8x8 tokens; no qkv bias (reference).
_SMALL_CAIT = dict(embed_dim=192, depth=24, num_heads=4, head_dim=64, mlp_ratio=2, mlp_ratio_token_only=2,
                   qkv_bias=False, init_values=1e-5)


@register_model
def sl_cait_xxs24(pretrained: bool = False, **kwargs: Any) -> SlCait:
    """SL-CaiT-XXS24 at 224 px (patch 16, dim 192, depth 24, 4 heads)."""
    model_args = dict(patch_size=16, embed_dim=192, depth=24, num_heads=4, init_values=1e-5)
    return _create_sl_cait('sl_cait_xxs24', pretrained=pretrained, **dict(model_args, **kwargs))


@register_model
def sl_cait_32(pretrained: bool = False, **kwargs: Any) -> SlCait:
    """SL-CaiT of the paper's small-dataset setting for 32 px inputs: patch 4."""
    model_args = dict(img_size=32, patch_size=4, **_SMALL_CAIT)
    return _create_sl_cait('sl_cait_32', pretrained=pretrained, **dict(model_args, **kwargs))


@register_model
def sl_cait_64(pretrained: bool = False, **kwargs: Any) -> SlCait:
    """SL-CaiT of the paper's small-dataset setting for 64 px inputs: patch 8."""
    model_args = dict(img_size=64, patch_size=8, **_SMALL_CAIT)
    return _create_sl_cait('sl_cait_64', pretrained=pretrained, **dict(model_args, **kwargs))


@register_model
def sl_cait_xxs36(pretrained: bool = False, **kwargs: Any) -> SlCait:
    """SL-CaiT-XXS36 at 224 px; mirrors timm's ``cait_xxs36_224`` (patch 16, dim 192, depth 36, 4 heads)."""
    model_args = dict(patch_size=16, embed_dim=192, depth=36, num_heads=4, init_values=1e-5)
    return _create_sl_cait('sl_cait_xxs36', pretrained=pretrained, **dict(model_args, **kwargs))


@register_model
def sl_cait_xs24(pretrained: bool = False, **kwargs: Any) -> SlCait:
    """SL-CaiT-XS24 at 224 px; mirrors timm's ``cait_xs24_384`` built at 224 px (patch 16, dim 288, depth 24,
    6 heads). timm registers XS24 at 384 px only; its weights load into the baseline with the position embedding
    resampled to the 14x14 grid."""
    model_args = dict(patch_size=16, embed_dim=288, depth=24, num_heads=6, init_values=1e-5)
    return _create_sl_cait('sl_cait_xs24', pretrained=pretrained, **dict(model_args, **kwargs))


@register_model
def sl_cait_s24(pretrained: bool = False, **kwargs: Any) -> SlCait:
    """SL-CaiT-S24 at 224 px; mirrors timm's ``cait_s24_224`` (patch 16, dim 384, depth 24, 8 heads)."""
    model_args = dict(patch_size=16, embed_dim=384, depth=24, num_heads=8, init_values=1e-5)
    return _create_sl_cait('sl_cait_s24', pretrained=pretrained, **dict(model_args, **kwargs))


# timm's registered model that each 224 px config mirrors (built at 224 px): with ``baseline_kwargs`` the SL model has
# its architecture, and timm's weights for it load into that baseline
TIMM_BASELINES: Dict[str, str] = {
    'sl_cait_xxs24': 'cait_xxs24_224',
    'sl_cait_xxs36': 'cait_xxs36_224',
    'sl_cait_xs24': 'cait_xs24_384',
    'sl_cait_s24': 'cait_s24_224',
}
