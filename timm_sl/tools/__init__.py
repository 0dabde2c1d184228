"""Dataset preparation helpers and the sweep scheduler of ``timm-sl reproduce``.

The helpers load on first use, so that ``timm_sl.tools.sweep`` (imported by ``timm-sl --help``) brings in neither
numpy nor PIL.
"""
import importlib
from typing import Any

_EXPORTS = {
    'prepare_svhn': 'svhn', 'read_svhn_mat': 'svhn',
    'prepare_tiny_imagenet_train': 'tiny_imagenet', 'prepare_tiny_imagenet_val': 'tiny_imagenet',
    'prepare_fashion_mnist': 'fashion_mnist', 'read_fashion_mnist': 'fashion_mnist',
}
__all__ = list(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(f'.{_EXPORTS[name]}', __name__), name)
    raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
