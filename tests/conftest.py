import pytest
import torch

import timm_sl  # noqa: F401  (registers the sl_ models even when the autoload hook is disabled)


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)
