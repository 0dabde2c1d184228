"""SL-Swin: timm's SwinTransformer with SPT, LSA in the windows and SPT merging (Spool).

Paper: `Vision Transformer for Small-Size Datasets` - https://arxiv.org/abs/2112.13492

SPT enters through timm's ``embed_layer`` seam. timm builds each block's ``WindowAttention`` and each stage's
``PatchMerging`` inline with no constructor argument to swap them, so :class:`SlSwinTransformer` replaces those
submodules after timm has built the model, through the conversion path it shares with ``slify``
(:mod:`timm_sl.convert`): :class:`~timm_sl.layers.LocalityWindowAttention` keeps each attention's
configuration and weights, :class:`~timm_sl.layers.ShiftedPatchMerging` (Spool) takes each merging's widths.
"""
from typing import Any, Dict, Optional, Sequence, Tuple, Union

from torch import nn

from timm.models import build_model_with_cfg, generate_default_cfgs, register_model
from timm.models.swin_transformer import (
    SwinTransformer, calc_stage_window_sizes, resolve_stage_window_sizes, resolve_window_args)
from timm.models.swin_transformer import checkpoint_filter_fn as timm_filter_fn

from ..convert import convert_modules
from ..layers import LocalityWindowAttention, check_size, window_attn_bias  # noqa: F401  (re-exported)
from ..layers.spt import check_window_tokens
from ._cfgs import sl_cfg, small_data_cfg, with_pretrained_tags
from ._family import no_weight_decay_with_lsa
from ._filters import sl_filter
from ._saved_config import saved_config_named
from ._sl_args import SlArgs, asked_for, backbone_kwarg, check_bool, check_depths, check_optional_bool, patch_grid
from ._training import check_drop_path_rate

__all__ = ['SlSwinTransformer', 'LocalityWindowAttention', 'window_attn_bias']


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
    no_weight_decay = no_weight_decay_with_lsa(SwinTransformer)

    def __init__(self, spt_pool: Optional[bool] = None, **kwargs: Any) -> None:
        sl_args = SlArgs.pop_from(kwargs, type(self), spt_pool)  # Swin has no training-behaviour switches
        check_drop_path_rate(kwargs.get('drop_path_rate', 0.))
        check_depths(kwargs, 'depths', per_stage=True)
        _check_stage_heads(backbone_kwarg(kwargs, SwinTransformer, 'num_heads'),
                           backbone_kwarg(kwargs, SwinTransformer, 'depths'))
        check_optional_bool('spt_pool', spt_pool)
        img, patch = (backbone_kwarg(kwargs, SwinTransformer, name) for name in ('img_size', 'patch_size'))
        check_size(img, 'img_size')
        grid, depths = patch_grid(img, patch), backbone_kwarg(kwargs, SwinTransformer, 'depths')
        if grid is not None:  # windows given at construction are held to the bound their resize is held to
            windows = resolve_stage_window_sizes(backbone_kwarg(kwargs, SwinTransformer, 'window_size'), len(depths))
            _check_stage_windows(type(self), grid, windows, kwargs.get('always_partition') is True,
                                 f'img_size={img!r}, patch_size={patch!r}, window_size={kwargs.get("window_size")!r}')
        sl_args.inject_embed_layer(kwargs, post_norm=False)
        super().__init__(**kwargs)
        self.sl_args = sl_args
        self.spt_pool = sl_args.spt if spt_pool is None else spt_pool
        convert_modules(self, sl_args, [kind for kind, on in (('lsa', sl_args.uses_lsa_layer), ('spool', self.spt_pool))
                                         if on])

    def set_input_size(
            self,
            img_size: Optional[Union[int, Tuple[int, int]]] = None,
            patch_size: Optional[Union[int, Tuple[int, int]]] = None,
            window_size: Optional[Union[int, Tuple[int, int], Sequence[Any]]] = None,
            window_ratio: Optional[Union[int, Sequence[int]]] = None,
            always_partition: Optional[bool] = None,
    ) -> None:
        """timm's resize, refusing first windows past the attention bound (:func:`check_window_tokens`): unless given
        ``window_size``, timm scales each stage's windows with the grid (``sl_swin_32`` at 4096 px: 512x512 windows).
        """
        for name, size in (('img_size', img_size), ('patch_size', patch_size)):
            if size is not None:
                check_size(size, name)
        img = self.patch_embed.img_size if img_size is None else img_size
        patch = self.patch_embed.patch_size if patch_size is None else patch_size
        grid = patch_grid(img, patch)
        if grid is not None:
            sizes, ratios = resolve_window_args(window_size, window_ratio, len(self.layers))
            windows = calc_stage_window_sizes(grid, self._ref_window_sizes, self._ref_grid_size, sizes, ratios)
            partition = always_partition if always_partition is not None else any(
                block.always_partition for stage in self.layers for block in stage.blocks)
            _check_stage_windows(self, grid, windows, partition, f'img_size={img!r}, patch_size={patch!r}')
        super().set_input_size(img_size=img_size, patch_size=patch_size, window_size=window_size,
                               window_ratio=window_ratio, always_partition=always_partition)


def _check_stage_heads(heads: Any, depths: Sequence[int]) -> None:
    """timm's Swin takes ``num_heads[i]`` for each stage ``i`` of ``depths``: an int or a shorter tuple failed in its
    init with a bare TypeError / IndexError."""
    if not (isinstance(heads, (tuple, list)) and len(heads) >= len(depths) and all(
            isinstance(h, int) and not isinstance(h, bool) and h >= 1 for h in heads)):
        raise ValueError(f'num_heads={heads!r} is invalid with depths={tuple(depths)!r}; allowed: a tuple of ints '
                         f'>= 1, one per stage ({len(depths)}).')


def _check_stage_windows(owner: Union[type, nn.Module], grid: Tuple[int, int], windows: Sequence[Tuple[int, int]],
                         partition: bool, asked: str) -> None:
    """:func:`check_window_tokens` for each stage's windows over its map (the patch grid halved per stage)."""
    for index, window in enumerate(windows):
        feat = tuple(-(-g // 2 ** index) for g in grid)
        if not partition:  # timm: a window larger than its stage's map is the map
            window = tuple(min(w, f) for w, f in zip(window, feat))
        check_window_tokens(owner, feat, window, f'{asked} (stage {index})')


def _create_sl_swin(variant: str, pretrained: bool = False, **kwargs: Any) -> SlSwinTransformer:
    check_bool('pretrained', pretrained)  # pretrained='False' is true: it would load a tag's weights
    depths = kwargs.get('depths', (2, 2, 6, 2))
    out_indices = kwargs.pop('out_indices', tuple(range(len(depths) if isinstance(depths, (tuple, list)) else 0)))
    with asked_for(variant), saved_config_named(kwargs):  # refusals name the model asked for and a config.json
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
