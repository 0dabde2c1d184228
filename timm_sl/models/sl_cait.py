"""SL-CaiT: timm's Cait with SPT, LSA in the talking-heads attention and a learnable temperature in class attention.

Paper: `Vision Transformer for Small-Size Datasets` - https://arxiv.org/abs/2112.13492

SPT enters through Cait's ``patch_layer`` seam, the attention classes through ``attn_block`` and
``attn_block_token_only``. Both attention classes also take an explicit ``head_dim`` (timm's derive it from the
width): the paper's small-data CaiT has 4 heads of 64 (inner width 256) on a 192-wide model.

The LSA forms of both attentions (:class:`~timm_sl.layers.LocalityTalkingHeadAttn`, mask after the pre-softmax
head mixing; :class:`~timm_sl.layers.LocalityClassAttn`, temperature only) live in :mod:`timm_sl.layers.lsa_cait`.

Training behaviour (see :mod:`timm_sl.models._training`): ``layer_scale_init='per_layer'`` starts LayerScale as the
reference code does, from CaiT's depth rule applied to each layer's index (0.1 up to layer 18, 1e-5 up to 24, 1e-6
beyond; the class-attention layers count from 1 again); ``class_attn_kv='raw_patches'`` is the reference code's class
attention, whose keys and values are the un-normalised patch tokens only (an opt-in for exact reproduction).
"""
from functools import partial
from typing import Any, Dict, Optional

import torch

from timm.models import build_model_with_cfg, generate_default_cfgs, register_model
from timm.models.cait import Cait, LayerScaleBlockClassAttn, checkpoint_filter_fn as timm_filter_fn

from ..layers import LocalityClassAttn, LocalityTalkingHeadAttn, class_attn_switches  # noqa: F401  (re-exported)
from ._cfgs import sl_cfg, small_data_cfg, with_pretrained_tags
from ._family import no_weight_decay_with_lsa, pop_sl_kwargs
from ._filters import sl_filter
from ._saved_config import saved_config_named
from ._sl_args import asked_for, check_bool, check_depths, check_patch_tokens, owner_name
from ._training import check_choice

__all__ = ['SlCait', 'LocalityTalkingHeadAttn', 'LocalityClassAttn', 'PatchKeysClassAttnBlock', 'class_attn_switches',
           'per_layer_scale']

LAYER_SCALE_INITS = ('timm', 'per_layer')
CLASS_ATTN_KV = ('normed', 'raw_patches')


def per_layer_scale(layer: int) -> float:
    """The reference code's LayerScale start for the ``layer``-th block (1-based): CaiT's rule for the init as a
    function of network depth (0.1 up to 18, 1e-5 up to 24, 1e-6 beyond), applied to the layer index instead."""
    return 0.1 if layer <= 18 else 1e-5 if layer <= 24 else 1e-6


class PatchKeysClassAttnBlock(LayerScaleBlockClassAttn):
    """The reference code's class-attention block: the normalised class token attends to the raw (un-normalised)
    patch tokens only, not to itself; timm's block normalises ``[class, patches]`` and attends to all of it.

    Needs :class:`LocalityClassAttn` (its ``kv`` argument) as the attention; the parameters are timm's block's.
    """

    def forward(self, x: torch.Tensor, x_cls: torch.Tensor) -> torch.Tensor:
        x_cls = x_cls + self.drop_path(self.gamma_1 * self.attn(self.norm1(x_cls), kv=x))
        x_cls = x_cls + self.drop_path(self.gamma_2 * self.mlp(self.norm2(x_cls)))
        return x_cls


class SlCait(Cait):
    """timm ``Cait`` with SPT patch embedding and LSA attention.

    Args:
        head_dim: Width of each attention head (default ``embed_dim // num_heads``, as timm's CaiT).
        layer_scale_init: 'timm' (``init_values`` in every block) or 'per_layer' (the reference code's per-index
            values, see :func:`per_layer_scale`; ``init_values`` is then refused).
        class_attn_kv: 'normed' (timm and the CaiT paper: keys / values are LayerNorm([class, patches])) or
            'raw_patches' (the reference code: the un-normalised patch tokens only).
        pos_embed_init: 'timm' or 'normal' (N(0, 1) position embedding and class token, as the reference code).
        drop_path_schedule: 'timm' (constant in the self-attention blocks, none in the class-attention blocks) or
            'constant' (``drop_path_rate`` in every block, class attention included, as the reference code).
        **kwargs: ``Cait`` arguments and the SL switches of :class:`timm_sl.models.SlArgs`.
    """
    baseline_kwargs: Dict[str, Any] = dict(spt=False, lsa=False)
    no_weight_decay = no_weight_decay_with_lsa(Cait)

    def __init__(
            self,
            head_dim: Optional[int] = None,
            layer_scale_init: str = 'timm',
            class_attn_kv: str = 'normed',
            pos_embed_init: str = 'timm',
            drop_path_schedule: str = 'timm',
            **kwargs: Any,
    ) -> None:
        sl_args, training = pop_sl_kwargs(type(self), kwargs, pos_embed_init, drop_path_schedule)
        check_depths(kwargs, 'depth', 'depth_token_only', 'num_heads', positive=('num_heads',))
        check_patch_tokens(type(self), kwargs, Cait)
        check_choice('layer_scale_init', layer_scale_init, LAYER_SCALE_INITS)
        if layer_scale_init == 'per_layer' and kwargs.get('init_values') is not None:  # overwritten below
            raise ValueError(f"{owner_name(type(self))}: init_values={kwargs['init_values']!r} is unused with "
                             "layer_scale_init='per_layer' (each LayerScale starts at its layer's value); allowed: "
                             "init_values left out, or layer_scale_init='timm' with it.")
        check_choice('class_attn_kv', class_attn_kv, CLASS_ATTN_KV)
        sl_args.inject_embed_layer(kwargs, key='patch_layer')
        dim, heads = kwargs.get('embed_dim', 768), kwargs.get('num_heads', 12)
        if head_dim is not None and (not isinstance(head_dim, int) or isinstance(head_dim, bool) or head_dim < 1):
            raise ValueError(f'head_dim={head_dim!r} is invalid; allowed: a positive int or None.')
        custom_heads = head_dim is not None and head_dim * heads != dim
        raw_patches = class_attn_kv == 'raw_patches'
        layers = {}
        if sl_args.uses_lsa_layer or custom_heads:
            layers['attn_block'] = partial(LocalityTalkingHeadAttn, head_dim=head_dim, **sl_args.lsa_kwargs())
        if sl_args.uses_lsa_layer or custom_heads or raw_patches:  # timm's ClassAttn cannot take separate keys
            layers['attn_block_token_only'] = partial(
                LocalityClassAttn, head_dim=head_dim, **class_attn_switches(sl_args.lsa_kwargs()))
        if raw_patches:
            layers['block_layers_token'] = PatchKeysClassAttnBlock
        for key in layers:
            if key in kwargs:
                raise ValueError(f"{key} cannot be combined with LSA, head_dim or class_attn_kv='raw_patches'; "
                                 "pass lsa=False, head_dim=None, class_attn_kv='normed'.")
        super().__init__(**kwargs, **layers)
        self.sl_args = sl_args
        if layer_scale_init == 'per_layer':
            self._per_layer_scale()
        training.apply(self, [*self.blocks, *self.blocks_token_only])

    @torch.no_grad()
    def _per_layer_scale(self) -> None:
        for blocks in (self.blocks, self.blocks_token_only):
            for layer, block in enumerate(blocks, start=1):
                block.gamma_1.fill_(per_layer_scale(layer))
                block.gamma_2.fill_(per_layer_scale(layer))


def _create_sl_cait(variant: str, pretrained: bool = False, **kwargs: Any) -> SlCait:
    check_bool('pretrained', pretrained)  # pretrained='False' is true: it would load a tag's weights
    out_indices = kwargs.pop('out_indices', 3)
    if kwargs.get('layer_scale_init', 'timm') == 'timm':
        kwargs.setdefault('init_values', 1e-5)  # every variant's LayerScale start, as timm's CaiT models
    with asked_for(variant), saved_config_named(kwargs):  # refusals name the model asked for and a config.json
        return build_model_with_cfg(
            SlCait,
            variant,
            pretrained,
            pretrained_filter_fn=sl_filter(timm_filter_fn),
            feature_cfg=dict(out_indices=out_indices, feature_cls='getter'),
            **kwargs,
        )


default_cfgs = generate_default_cfgs(with_pretrained_tags({
    'sl_cait_xxs24': sl_cfg(crop_pct=1.0),
    'sl_cait_xxs36': sl_cfg(crop_pct=1.0),
    'sl_cait_xs24': sl_cfg(crop_pct=1.0),
    'sl_cait_s24': sl_cfg(crop_pct=1.0),
    'sl_cait_32': small_data_cfg(32),
    'sl_cait_64': small_data_cfg(64),
}))

# The paper's small-data CaiT (Table 2): dim 192, 24 talking-heads layers + 2 class-attention layers, 4 heads of 64
# (inner width 256), MLP hidden 384, LayerScale; patch 4 (32 px) / 8 (64 px) for 8x8 tokens; no qkv bias, per-layer
# LayerScale init, N(0, 1) position embedding / class token, one stochastic-depth rate in every block (reference).
_SMALL_CAIT = dict(embed_dim=192, depth=24, num_heads=4, head_dim=64, mlp_ratio=2, mlp_ratio_token_only=2,
                   qkv_bias=False, layer_scale_init='per_layer', pos_embed_init='normal',
                   drop_path_schedule='constant')


@register_model
def sl_cait_xxs24(pretrained: bool = False, **kwargs: Any) -> SlCait:
    """SL-CaiT-XXS24 at 224 px (patch 16, dim 192, depth 24, 4 heads)."""
    model_args = dict(patch_size=16, embed_dim=192, depth=24, num_heads=4)
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
    model_args = dict(patch_size=16, embed_dim=192, depth=36, num_heads=4)
    return _create_sl_cait('sl_cait_xxs36', pretrained=pretrained, **dict(model_args, **kwargs))


@register_model
def sl_cait_xs24(pretrained: bool = False, **kwargs: Any) -> SlCait:
    """SL-CaiT-XS24 at 224 px; mirrors timm's ``cait_xs24_384`` built at 224 px (patch 16, dim 288, depth 24,
    6 heads). timm registers XS24 at 384 px only; its weights load into the baseline with the position embedding
    resampled to the 14x14 grid."""
    model_args = dict(patch_size=16, embed_dim=288, depth=24, num_heads=6)
    return _create_sl_cait('sl_cait_xs24', pretrained=pretrained, **dict(model_args, **kwargs))


@register_model
def sl_cait_s24(pretrained: bool = False, **kwargs: Any) -> SlCait:
    """SL-CaiT-S24 at 224 px; mirrors timm's ``cait_s24_224`` (patch 16, dim 384, depth 24, 8 heads)."""
    model_args = dict(patch_size=16, embed_dim=384, depth=24, num_heads=8)
    return _create_sl_cait('sl_cait_s24', pretrained=pretrained, **dict(model_args, **kwargs))
