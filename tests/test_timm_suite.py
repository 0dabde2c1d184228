"""timm's own tests/test_models.py over every sl_ model (see tests/timm_suite.py). Marked slow: it downloads
timm's sdist from PyPI once (cached under ~/.cache/timm_sl) and runs ~10 checks per model."""
import pytest

import timm

from timm_suite import run

pytestmark = pytest.mark.slow


def test_timm_model_suite_passes_for_every_sl_model():
    assert timm.list_models('sl_*'), 'no sl_ model registered'
    assert run() == 0
