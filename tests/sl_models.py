"""Every registered ``sl_`` model as pytest parameters: the 32 px configurations in the default run, the 64 px and
224 px ones marked ``slow`` (``python -m pytest -m slow``)."""
import pytest
import torch

import timm
import timm_sl  # noqa: F401  (registers the models even when the autoload hook is disabled)
from timm_sl.models import sl_cait, sl_pit, sl_swin, sl_vit

ALL_MODELS = timm.list_models('sl_*')
FAST_MODELS = [name for name in ALL_MODELS if name.endswith('_32')]
MODELS = [pytest.param(name, marks=() if name in FAST_MODELS else pytest.mark.slow) for name in ALL_MODELS]

# timm's registered model that each 224 px sl_ config mirrors (its baseline architecture; timm's weights load into it).
# T2T has none: timm has no T2T-ViT.
TIMM_BASELINES = {**sl_vit.TIMM_BASELINES, **sl_pit.TIMM_BASELINES, **sl_swin.TIMM_BASELINES, **sl_cait.TIMM_BASELINES}
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
