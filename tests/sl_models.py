"""Every registered ``sl_`` model as pytest parameters: the 32 px configurations in the default run, the 64 px and
224 px ones marked ``slow`` (``python -m pytest -m slow``)."""
import pytest
import torch

import timm
import timm_sl  # noqa: F401  (registers the models even when the autoload hook is disabled)

ALL_MODELS = timm.list_models('sl_*')
FAST_MODELS = [name for name in ALL_MODELS if name.endswith('_32')]
MODELS = [pytest.param(name, marks=() if name in FAST_MODELS else pytest.mark.slow) for name in ALL_MODELS]

# timm's registered model that each 224 px sl_ config mirrors: with ``baseline_kwargs`` the SL model has its
# architecture, and timm's weights for it load into that baseline (CaiT-XS24 built at 224 px). T2T has none: timm has
# no T2T-ViT.
TIMM_BASELINES = {
    'sl_vit_tiny': 'vit_tiny_patch16_224', 'sl_vit_small': 'vit_small_patch16_224',
    'sl_vit_base': 'vit_base_patch16_224',
    'sl_pit_ti': 'pit_ti_224', 'sl_pit_xs': 'pit_xs_224', 'sl_pit_s': 'pit_s_224', 'sl_pit_b': 'pit_b_224',
    'sl_swin_t': 'swin_tiny_patch4_window7_224', 'sl_swin_s': 'swin_small_patch4_window7_224',
    'sl_swin_b': 'swin_base_patch4_window7_224',
    'sl_cait_xxs24': 'cait_xxs24_224', 'sl_cait_xxs36': 'cait_xxs36_224', 'sl_cait_xs24': 'cait_xs24_384',
    'sl_cait_s24': 'cait_s24_224',
}
# the SL twins of timm's standard sizes beyond the paper's five 224 px configurations (issue 14)
LADDER_MODELS = [
    'sl_vit_small', 'sl_vit_base', 'sl_pit_ti', 'sl_pit_s', 'sl_pit_b', 'sl_swin_s', 'sl_swin_b',
    'sl_cait_xxs36', 'sl_cait_xs24', 'sl_cait_s24', 'sl_t2t_19', 'sl_t2t_24',
]


def model_input(model: torch.nn.Module, batch: int = 2) -> torch.Tensor:
    """A random batch of the size the model was built for (its ``img_size``, else its config's input size)."""
    chans, height, width = model.pretrained_cfg['input_size']
    size = getattr(model.patch_embed, 'img_size', None) or (height, width)
    size = (size, size) if isinstance(size, int) else size
    return torch.randn(batch, chans, *size)


def small_kwargs(name: str) -> dict:
    """Kwargs that build ``name`` (a 32 px configuration) with one or two blocks of each kind: fast, and every
    family's blocks still there."""
    return {'sl_pit_32': dict(depth=(1, 1, 1)), 'sl_swin_32': dict(depths=(1, 1, 1))}.get(name, dict(depth=2))


def randomise(model: torch.nn.Module) -> torch.nn.Module:
    """Move every parameter away from its init (LayerNorm affines off 1 / 0, as after training)."""
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.3)
    return model
