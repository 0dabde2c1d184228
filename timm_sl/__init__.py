"""timm_sl: Shifted Patch Tokenization and Locality Self-Attention for timm.

Importing this package registers the ``sl_`` models with timm's registry. Once the package is installed this
happens by itself when ``timm`` is imported (see ``_timm_sl_autoload``), so ``import timm_sl`` is optional.

One exception keeps ``timm-sl --help`` fast: when the ``timm-sl`` command imports this package (on its way to
``timm_sl.cli``) and timm is not loaded yet, nothing heavy is imported here; the command registers the models itself
before it runs a subcommand, and the names below load on first use.
"""
import sys
from pathlib import Path

from .version import __version__

_EXPORTS = {
    'LocalitySelfAttention': 'layers', 'ShiftedPatchEmbed': 'layers', 'ShiftedPatchProjection': 'layers',
    'SL_ARG_NAMES': 'models', 'SlArgs': 'models', 'SlCait': 'models', 'SlPoolingVisionTransformer': 'models',
    'SlSwinTransformer': 'models', 'SlT2T': 'models', 'SlVisionTransformer': 'models',
    'SlifyError': 'slify', 'plan_slify': 'slify', 'slify': 'slify', 'slify_refusal': 'slify',
}


def _imported_by_command() -> bool:
    argv = getattr(sys, 'argv', None) or ['']
    return 'timm' not in sys.modules and Path(argv[0]).stem == 'timm-sl'


if _imported_by_command():
    def __getattr__(name: str):
        if name not in _EXPORTS:
            raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
        import importlib
        return getattr(importlib.import_module(f'.{_EXPORTS[name]}', __name__), name)
else:
    from .layers import LocalitySelfAttention, ShiftedPatchEmbed, ShiftedPatchProjection
    from .models import (
        SL_ARG_NAMES, SlArgs, SlCait, SlPoolingVisionTransformer, SlSwinTransformer, SlT2T, SlVisionTransformer)
    from .slify import SlifyError, plan_slify, slify, slify_refusal
    from . import slify_entry as _slify_entry  # noqa: F401  (registers the `slify` model with timm)
