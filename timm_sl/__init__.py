"""timm_sl: Shifted Patch Tokenization and Locality Self-Attention for timm.

Importing this package registers the ``sl_`` models with timm's registry the moment timm is imported (at once when
it already is); once the package is installed this also happens by itself when ``timm`` is imported (see
``_timm_sl_autoload``), so ``import timm_sl`` is optional. The package imports neither torch nor timm by itself, so
``timm-sl --help`` answers at once; the names below load on first use. This behaves the same in every process,
whatever started it.
"""
import importlib
import sys
import types

from .version import __version__

_EXPORTS = {
    'LocalitySelfAttention': 'layers', 'ShiftedPatchEmbed': 'layers', 'ShiftedPatchProjection': 'layers',
    'SL_ARG_NAMES': 'models', 'SlArgs': 'models', 'SlCait': 'models', 'SlPoolingVisionTransformer': 'models',
    'SlSwinTransformer': 'models', 'SlT2T': 'models', 'SlVisionTransformer': 'models', 'warm_start': 'models',
    'SlifyError': 'slify', 'plan_slify': 'slify', 'slify': 'slify', 'slify_refusal': 'slify',
}
__all__ = ['__version__', *_EXPORTS]


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
    return getattr(importlib.import_module(f'.{_EXPORTS[name]}', __name__), name)


def __dir__():
    return sorted(set(globals()) | set(_EXPORTS))


class _Package(types.ModuleType):
    """The package's module type: ``timm_sl.slify`` is the function, as ``from timm_sl import slify`` promises, also
    after the submodule of the same name has been imported (the import system binds a submodule on its package; this
    keeps the name for the function)."""

    @property
    def slify(self):
        return importlib.import_module('.slify', __name__).slify

    @slify.setter
    def slify(self, value) -> None:
        pass


sys.modules[__name__].__class__ = _Package


def _register_models() -> None:
    importlib.import_module('.models', __name__)
    importlib.import_module('.slify_entry', __name__)  # the `slify` model (it lives next to the converter)


try:
    from _timm_sl_autoload import after_timm_import
    from ._registration import stop_tracking, track_imports, when_idle
except ImportError:  # a start-up hook installed by an older timm_sl (reinstall to refresh it): register now
    _register_models()
else:
    # when one of this package's own modules imports timm (`import timm_sl.layers` first), the models register once
    # that module is complete, not from inside it (see _registration)
    if 'timm' not in sys.modules:
        track_imports()

    def _register_when_idle() -> None:
        stop_tracking()
        when_idle(_register_models)

    after_timm_import(_register_when_idle)
