"""SL-ViT: timm's VisionTransformer with Shifted Patch Tokenization and Locality Self-Attention.

Paper: `Vision Transformer for Small-Size Datasets` - https://arxiv.org/abs/2112.13492

The backbone is timm's own ``VisionTransformer``; SPT enters as its ``embed_layer`` and LSA as its ``attn_layer``.
With ``spt=False, lsa=False`` the model is timm's ViT of the same configuration, module for module.
"""
from typing import Any, Dict, Optional, Tuple, Union

from timm.models import VisionTransformer, build_model_with_cfg, generate_default_cfgs, register_model
from timm.models.vision_transformer import checkpoint_filter_fn as vit_checkpoint_filter_fn

from ..layers import LocalitySelfAttention, set_lsa_switches
from ._cfgs import sl_cfg, small_data_cfg, with_pretrained_tags
from ._family import no_weight_decay_with_lsa, pop_sl_kwargs
from ._filters import sl_filter
from ._saved_config import saved_config_named
from ._sl_args import (
    asked_for, check_bool, check_depths, check_global_tokens, check_patch_tokens, check_size, patch_grid)

__all__ = ['SlVisionTransformer']


class SlVisionTransformer(VisionTransformer):
    """timm ``VisionTransformer`` with SPT as patch embedding and LSA in every block.

    Takes every ``VisionTransformer`` argument plus the SL switches of :class:`timm_sl.models.SlArgs`
    (``spt``, ``shift_ratio``, ``shift_directions``, ``lsa``, ``lsa_mask``, ``lsa_learn_temp``, ``lsa_temp_ratio``).

    Args:
        pos_embed_init: 'timm' or 'normal' (N(0, 1) position embedding and class token, as the reference code).
        drop_path_schedule: 'timm' (linear ramp) or 'constant' (``drop_path_rate`` in every block, as the reference).
    """
    # kwargs that turn this model into its family's baseline architecture
    baseline_kwargs: Dict[str, Any] = dict(spt=False, lsa=False)
    no_weight_decay = no_weight_decay_with_lsa(VisionTransformer)

    def __init__(self, pos_embed_init: str = 'timm', drop_path_schedule: str = 'timm', **kwargs: Any) -> None:
        sl_args, training = pop_sl_kwargs(type(self), kwargs, pos_embed_init, drop_path_schedule)
        check_depths(kwargs, 'depth', 'num_heads', positive=('num_heads',))
        check_patch_tokens(type(self), kwargs, VisionTransformer)
        sl_args.inject_embed_layer(kwargs)
        if sl_args.uses_lsa_layer:
            if 'attn_layer' in kwargs:
                raise ValueError('attn_layer cannot be combined with LSA; pass lsa=False to use your own attention.')
            kwargs['attn_layer'] = LocalitySelfAttention  # timm's Block takes a class: switches set right after
        super().__init__(**kwargs)
        if sl_args.uses_lsa_layer:
            set_lsa_switches(self.blocks, **sl_args.lsa_kwargs())
        self.sl_args = sl_args
        training.apply(self, self.blocks)

    def set_input_size(
            self,
            img_size: Optional[Union[int, Tuple[int, int]]] = None,
            patch_size: Optional[Union[int, Tuple[int, int]]] = None,
    ) -> None:
        """timm's resize, refusing first (as the constructor does) a size that is not one and a token grid too large
        for global attention."""
        for name, size in (('img_size', img_size), ('patch_size', patch_size)):
            if size is not None:
                check_size(size, name)
        img = self.patch_embed.img_size if img_size is None else img_size
        patch = self.patch_embed.patch_size if patch_size is None else patch_size
        grid = patch_grid(img, patch, ceil=bool(getattr(self.patch_embed, 'dynamic_img_pad', False)))
        check_global_tokens(self, grid, f'img_size={img!r}, patch_size={patch!r}')
        super().set_input_size(img_size=img_size, patch_size=patch_size)


# timm's ViT filter converts foreign layouts (and loads timm ViT weights into the baselines); native SL checkpoints
# are adapted by the shared SL filter
checkpoint_filter_fn = sl_filter(vit_checkpoint_filter_fn)


def _create_sl_vit(variant: str, pretrained: bool = False, **kwargs: Any) -> SlVisionTransformer:
    check_bool('pretrained', pretrained)  # pretrained='False' is true: it would load a tag's weights
    out_indices = kwargs.pop('out_indices', 3)
    with asked_for(variant), saved_config_named(kwargs):  # refusals name the model asked for and a config.json
        return build_model_with_cfg(
            SlVisionTransformer,
            variant,
            pretrained,
            pretrained_filter_fn=checkpoint_filter_fn,
            feature_cfg=dict(out_indices=out_indices, feature_cls='getter'),
            **kwargs,
        )


default_cfgs = generate_default_cfgs(with_pretrained_tags({
    'sl_vit_tiny': sl_cfg(),
    'sl_vit_small': sl_cfg(),
    'sl_vit_base': sl_cfg(),
    'sl_vit_32': small_data_cfg(32),
    'sl_vit_64': small_data_cfg(64),
}))

# The paper's small-data ViT (Table 2): patch 4 (32 px) / 8 (64 px) for an 8x8 token grid, dim 192, depth 9,
# 12 heads of dim 16, MLP ratio 2; no qkv bias, N(0, 1) position embedding / class token and one stochastic-depth
# rate in every block, as in the reference code.
_SMALL_VIT = dict(embed_dim=192, depth=9, num_heads=12, mlp_ratio=2, qkv_bias=False, pos_embed_init='normal',
                  drop_path_schedule='constant')


@register_model
def sl_vit_tiny(pretrained: bool = False, **kwargs: Any) -> SlVisionTransformer:
    """SL-ViT-Tiny (DeiT-Tiny: patch 16, dim 192, depth 12, 3 heads) at 224 px."""
    model_args = dict(patch_size=16, embed_dim=192, depth=12, num_heads=3)
    return _create_sl_vit('sl_vit_tiny', pretrained=pretrained, **dict(model_args, **kwargs))


@register_model
def sl_vit_32(pretrained: bool = False, **kwargs: Any) -> SlVisionTransformer:
    """SL-ViT of the paper's small-dataset setting for 32 px inputs (CIFAR, SVHN): patch 4."""
    model_args = dict(img_size=32, patch_size=4, **_SMALL_VIT)
    return _create_sl_vit('sl_vit_32', pretrained=pretrained, **dict(model_args, **kwargs))


@register_model
def sl_vit_64(pretrained: bool = False, **kwargs: Any) -> SlVisionTransformer:
    """SL-ViT of the paper's small-dataset setting for 64 px inputs (Tiny-ImageNet): patch 8."""
    model_args = dict(img_size=64, patch_size=8, **_SMALL_VIT)
    return _create_sl_vit('sl_vit_64', pretrained=pretrained, **dict(model_args, **kwargs))


@register_model
def sl_vit_small(pretrained: bool = False, **kwargs: Any) -> SlVisionTransformer:
    """SL-ViT-Small at 224 px; mirrors timm's ``vit_small_patch16_224`` (DeiT-Small's architecture, timm's
    ``deit_small_patch16_224``): patch 16, dim 384, depth 12, 6 heads."""
    model_args = dict(patch_size=16, embed_dim=384, depth=12, num_heads=6)
    return _create_sl_vit('sl_vit_small', pretrained=pretrained, **dict(model_args, **kwargs))


@register_model
def sl_vit_base(pretrained: bool = False, **kwargs: Any) -> SlVisionTransformer:
    """SL-ViT-Base at 224 px; mirrors timm's ``vit_base_patch16_224`` (DeiT-Base's architecture, timm's
    ``deit_base_patch16_224``): patch 16, dim 768, depth 12, 12 heads."""
    model_args = dict(patch_size=16, embed_dim=768, depth=12, num_heads=12)
    return _create_sl_vit('sl_vit_base', pretrained=pretrained, **dict(model_args, **kwargs))
