"""Every registered ``sl_`` model as pytest parameters: the 32 px configurations in the default run, the 64 px and
224 px ones marked ``slow`` (``python -m pytest -m slow``)."""
import pytest
import torch

import timm
import timm_sl  # noqa: F401  (registers the models even when the autoload hook is disabled)

ALL_MODELS = timm.list_models('sl_*')
FAST_MODELS = [name for name in ALL_MODELS if name.endswith('_32')]
MODELS = [pytest.param(name, marks=() if name in FAST_MODELS else pytest.mark.slow) for name in ALL_MODELS]


def model_input(model: torch.nn.Module, batch: int = 2) -> torch.Tensor:
    """A random batch of the size the model was built for (its ``img_size``, else its config's input size)."""
    chans, height, width = model.pretrained_cfg['input_size']
    size = getattr(model.patch_embed, 'img_size', None) or (height, width)
    size = (size, size) if isinstance(size, int) else size
    return torch.randn(batch, chans, *size)
