"""SL-PiT: timm's PoolingVisionTransformer with SPT, LSA and SPT pooling (Spool).

Paper: `Vision Transformer for Small-Size Datasets` - https://arxiv.org/abs/2112.13492

timm's ``PoolingVisionTransformer`` builds its convolutional stem, its blocks' attention and its pooling layers inline,
with no constructor argument to swap them, so :class:`SlPoolingVisionTransformer` replaces those submodules after
timm has built the model, through the conversion path it shares with ``slify`` (:mod:`timm_sl.convert`; each
replacement keeps the configuration and the weights that mean the same thing):

* ``patch_embed``: SPT with patch = the stem's stride (non-overlapping, as SPT is defined). For PiT-XS's overlapping
  16/8 stem this is an 8 px SPT whose half-patch shift gives the same 16 px receptive field. Where the grid changes
  (the 224 px configs: 27x27 -> 28x28) the position embedding is resampled to it (the policy shared with ``slify``).
* every block's ``attn``: :class:`~timm_sl.layers.LocalitySelfAttention`.
* every stage's ``pool``: :class:`~timm_sl.layers.ShiftedTokenPooling` (Spool; ``spt_pool``), or
  :class:`PointwisePooling`, the reference code's depthwise 3x3 + pointwise 1x1 pooling that the paper's baseline PiT
  uses (``pool_layout``).
"""
from typing import Any, Dict, Optional, Tuple

import torch
from torch import nn

from timm.models import build_model_with_cfg, generate_default_cfgs, register_model
from timm.models.pit import Pooling, PoolingVisionTransformer, checkpoint_filter_fn as timm_filter_fn

from ..convert import convert_modules, copy_timm_state, module_dd
from ..layers import ShiftedTokenPooling, check_in_chans, check_size  # noqa: F401  (ShiftedTokenPooling: re-exported)
from ._cfgs import sl_cfg, small_data_cfg, with_pretrained_tags
from ._family import no_weight_decay_with_lsa, pop_sl_kwargs
from ._filters import sl_filter
from ._saved_config import saved_config_named
from ._sl_args import (
    asked_for, backbone_kwarg, check_bool, check_depths, check_global_tokens, check_optional_bool, check_options_used,
    patch_grid)
from ._training import check_choice

__all__ = ['SlPoolingVisionTransformer', 'ShiftedTokenPooling', 'PointwisePooling']

POOL_LAYOUTS = ('timm', 'pointwise')


class PointwisePooling(Pooling):
    """timm's PiT pooling (depthwise 3x3 stride 2 conv, class token through a Linear) plus a pointwise 1x1 conv.

    The reference implementation's pooling: it is why the paper's baseline PiT has 7.1 M parameters where timm's
    layout has 6.9 M.
    """

    def __init__(self, in_feature: int, out_feature: int, stride: int, device=None, dtype=None) -> None:
        super().__init__(in_feature, out_feature, stride, device=device, dtype=dtype)
        self.pw = nn.Conv2d(out_feature, out_feature, kernel_size=1, device=device, dtype=dtype)

    def forward(self, x: torch.Tensor, cls_token: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        x, cls_token = super().forward(x, cls_token)
        return self.pw(x), cls_token



def _pointwise_from_timm(pool: Pooling, _: Any) -> PointwisePooling:
    """The pointwise layout in place of timm's ``Pooling`` (``pool_layout='pointwise'``), a conversion-table entry: the
    class-token Linear is copied; the convolutions keep their own init (the small-data configurations are seeded that
    way)."""
    new = PointwisePooling(pool.fc.in_features, pool.fc.out_features, stride=pool.conv.stride[0], **module_dd(pool))
    copy_timm_state(new.fc, pool.fc, own=())
    return new


class SlPoolingVisionTransformer(PoolingVisionTransformer):
    """timm ``PoolingVisionTransformer`` with SPT stem, LSA in every block and Spool between stages.

    Args:
        spt_pool: Spool instead of the convolutional pooling; ``None`` follows ``spt`` (the paper's "w/o Spool" rows
            are ``spt_pool=False``).
        pool_layout: Pooling when ``spt_pool`` is off: 'timm' (timm's grouped conv) or 'pointwise' (the reference
            code's depthwise + pointwise conv, the paper's baseline).
        pos_embed_init: 'timm' or 'normal' (N(0, 1) position embedding and class token, as the reference code).
        drop_path_schedule: 'timm' (linear ramp over all blocks) or 'constant' (``drop_path_rate`` in every block,
            as the reference code).
        **kwargs: ``PoolingVisionTransformer`` arguments and the SL switches of :class:`timm_sl.models.SlArgs`.
    """
    baseline_kwargs: Dict[str, Any] = dict(spt=False, lsa=False, spt_pool=False)
    no_weight_decay = no_weight_decay_with_lsa(PoolingVisionTransformer)

    def __init__(
            self,
            spt_pool: Optional[bool] = None,
            pool_layout: str = 'timm',
            pos_embed_init: str = 'timm',
            drop_path_schedule: str = 'timm',
            **kwargs: Any,
    ) -> None:
        sl_args, training = pop_sl_kwargs(type(self), kwargs, pos_embed_init, drop_path_schedule, spt_pool)
        check_depths(kwargs, 'depth', 'heads', 'base_dims', per_stage=True, positive=('heads', 'base_dims'))
        check_optional_bool('spt_pool', spt_pool)
        check_choice('pool_layout', pool_layout, POOL_LAYOUTS)
        img, patch, stride = (backbone_kwarg(kwargs, PoolingVisionTransformer, n)
                              for n in ('img_size', 'patch_size', 'stride'))
        check_in_chans(backbone_kwarg(kwargs, PoolingVisionTransformer, 'in_chans'))
        check_size(img, 'img_size')
        check_size(patch)
        check_size(stride, 'stride')
        # the first stage attends over the whole stem grid (SPT's stem: non-overlapping patches of the stride)
        grid = patch_grid(img, stride) if sl_args.spt else patch_grid(img, patch, stride)
        check_global_tokens(type(self), grid, f'img_size={img!r}, patch_size={patch!r}, stride={stride!r}',
                            ' in the first stage')
        super().__init__(**kwargs)
        if not sl_args.spt:  # the baseline's stem is timm's conv (the cfg's first_conv names SPT's projection)
            self._traits = {**getattr(self, '_traits', {}), 'first_conv': 'patch_embed.conv'}
        self.sl_args = sl_args
        self.spt_pool = sl_args.spt if spt_pool is None else spt_pool
        self.pool_layout = pool_layout
        kinds = [kind for kind, on in (('spt', sl_args.spt), ('lsa', sl_args.uses_lsa_layer), ('spool', self.spt_pool))
                 if on]
        forms = None
        if not self.spt_pool and pool_layout == 'pointwise':  # the reference code's pooling in place of timm's
            kinds.append('pool')
            forms = {Pooling: ('pool', _pointwise_from_timm)}
        convert_modules(self, sl_args, kinds, forms)
        training.apply(self, [block for stage in self.transformers for block in stage.blocks])


def _check_spt_patch(variant: str, model_args: Dict[str, Any], kwargs: Dict[str, Any]) -> None:
    """Refuse a ``patch_size`` that SPT would ignore: SPT's patch is the stem's ``stride``; ``patch_size`` sets only
    the baseline's conv kernel, so ``sl_pit_32`` with ``patch_size=4`` alone would still tokenize 2x2 patches. Refuse
    as well a ``pool_layout`` given with Spool on (the variant's own layout is its baseline's)."""
    if 'pool_layout' in kwargs:  # a bad value is named as such before it is found unused
        check_choice('pool_layout', kwargs['pool_layout'], POOL_LAYOUTS)
    check_options_used(kwargs, variant)
    patch = kwargs.get('patch_size', model_args['patch_size'])
    check_size(patch)
    if kwargs.get('spt', True) is not False and 'stride' not in kwargs and patch != model_args['patch_size']:
        raise ValueError(f'{variant}: patch_size={patch!r} does not change the SPT patch, which is the stem\'s stride '
                         f'({model_args["stride"]}); allowed: stride={patch!r} for an SPT patch of {patch!r} (with '
                         f'patch_size for the baseline\'s kernel), or spt=False; weights of a model made with it '
                         f'before are {variant}\'s own: drop patch_size to load them')


def _create_sl_pit(variant: str, pretrained: bool = False, **kwargs: Any) -> SlPoolingVisionTransformer:
    check_bool('pretrained', pretrained)  # pretrained='False' is true: it would load a tag's weights
    out_indices = kwargs.pop('out_indices', (0, 1, 2))
    with asked_for(variant), saved_config_named(kwargs):  # refusals name the model asked for and a config.json
        return build_model_with_cfg(
            SlPoolingVisionTransformer,
            variant,
            pretrained,
            pretrained_filter_fn=sl_filter(timm_filter_fn),
            feature_cfg=dict(feature_cls='hook', out_indices=out_indices),
            **kwargs,
        )


default_cfgs = generate_default_cfgs(with_pretrained_tags({
    'sl_pit_xs': sl_cfg(),
    'sl_pit_ti': sl_cfg(),
    'sl_pit_s': sl_cfg(),
    'sl_pit_b': sl_cfg(),
    'sl_pit_32': small_data_cfg(32),
    'sl_pit_64': small_data_cfg(64),
}))

# The paper's small-data PiT (Table 2): stage widths 96 / 192 / 384 (48 per head), depths (2, 6, 4), heads
# (2, 4, 8), MLP ratio 2, non-overlapping patch 2 (32 px) / 4 (64 px) for a 16x16 first-stage grid; the reference
# code's pooling layout, N(0, 1) position embedding / class token and one stochastic-depth rate in every block.
_SMALL_PIT = dict(base_dims=(48, 48, 48), depth=(2, 6, 4), heads=(2, 4, 8), mlp_ratio=2, pool_layout='pointwise',
                  pos_embed_init='normal', drop_path_schedule='constant')


@register_model
def sl_pit_xs(pretrained: bool = False, **kwargs: Any) -> SlPoolingVisionTransformer:
    """SL-PiT-XS at 224 px (timm's pit_xs_224 layout; SPT stem of patch 8)."""
    model_args = dict(patch_size=16, stride=8, base_dims=(48, 48, 48), depth=(2, 6, 4), heads=(2, 4, 8), mlp_ratio=4)
    _check_spt_patch('sl_pit_xs', model_args, kwargs)
    return _create_sl_pit('sl_pit_xs', pretrained=pretrained, **dict(model_args, **kwargs))


@register_model
def sl_pit_32(pretrained: bool = False, **kwargs: Any) -> SlPoolingVisionTransformer:
    """SL-PiT of the paper's small-dataset setting for 32 px inputs: patch 2."""
    model_args = dict(img_size=32, patch_size=2, stride=2, **_SMALL_PIT)
    _check_spt_patch('sl_pit_32', model_args, kwargs)
    return _create_sl_pit('sl_pit_32', pretrained=pretrained, **dict(model_args, **kwargs))


@register_model
def sl_pit_64(pretrained: bool = False, **kwargs: Any) -> SlPoolingVisionTransformer:
    """SL-PiT of the paper's small-dataset setting for 64 px inputs: patch 4."""
    model_args = dict(img_size=64, patch_size=4, stride=4, **_SMALL_PIT)
    _check_spt_patch('sl_pit_64', model_args, kwargs)
    return _create_sl_pit('sl_pit_64', pretrained=pretrained, **dict(model_args, **kwargs))


@register_model
def sl_pit_ti(pretrained: bool = False, **kwargs: Any) -> SlPoolingVisionTransformer:
    """SL-PiT-Ti at 224 px; mirrors timm's ``pit_ti_224`` (stem 16/8, widths 64/128/256, depths (2, 6, 4), heads
    (2, 4, 8)); SPT stem of patch 8."""
    model_args = dict(patch_size=16, stride=8, base_dims=(32, 32, 32), depth=(2, 6, 4), heads=(2, 4, 8), mlp_ratio=4)
    _check_spt_patch('sl_pit_ti', model_args, kwargs)
    return _create_sl_pit('sl_pit_ti', pretrained=pretrained, **dict(model_args, **kwargs))


@register_model
def sl_pit_s(pretrained: bool = False, **kwargs: Any) -> SlPoolingVisionTransformer:
    """SL-PiT-S at 224 px; mirrors timm's ``pit_s_224`` (stem 16/8, widths 144/288/576, depths (2, 6, 4), heads
    (3, 6, 12)); SPT stem of patch 8."""
    model_args = dict(patch_size=16, stride=8, base_dims=(48, 48, 48), depth=(2, 6, 4), heads=(3, 6, 12), mlp_ratio=4)
    _check_spt_patch('sl_pit_s', model_args, kwargs)
    return _create_sl_pit('sl_pit_s', pretrained=pretrained, **dict(model_args, **kwargs))


@register_model
def sl_pit_b(pretrained: bool = False, **kwargs: Any) -> SlPoolingVisionTransformer:
    """SL-PiT-B at 224 px; mirrors timm's ``pit_b_224`` (stem 14/7, widths 256/512/1024, depths (3, 6, 4), heads
    (4, 8, 16)); SPT stem of patch 7 (3 px shift)."""
    model_args = dict(patch_size=14, stride=7, base_dims=(64, 64, 64), depth=(3, 6, 4), heads=(4, 8, 16), mlp_ratio=4)
    _check_spt_patch('sl_pit_b', model_args, kwargs)
    return _create_sl_pit('sl_pit_b', pretrained=pretrained, **dict(model_args, **kwargs))
