"""The harness around the ``sl_`` models: the ``timm-sl`` command (:mod:`.cli`), export / Hub / release, ``reproduce``
and its sweep scheduler (:mod:`.sweep`), train.py run records, analysis, charts, the demo and data preparation.

It imports the core (``timm_sl.layers``, ``timm_sl.models``, ``timm_sl.slify``) and nothing of it that is private;
the core never imports it. Its functions raise plain exceptions (see :mod:`.errors`); only :mod:`.cli` turns them
into one line and an exit status. Importing this package loads nothing (``timm-sl --help`` stays torch-free); the
data preparation functions below load on first use (neither numpy nor PIL before).
"""
import importlib
from typing import Any

_EXPORTS = {
    'prepare_svhn': 'svhn', 'read_svhn_mat': 'svhn',
    'prepare_tiny_imagenet': 'tiny_imagenet', 'prepare_tiny_imagenet_train': 'tiny_imagenet',
    'prepare_tiny_imagenet_val': 'tiny_imagenet',
    'prepare_fashion_mnist': 'fashion_mnist', 'read_fashion_mnist': 'fashion_mnist',
}
__all__ = list(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
    return getattr(importlib.import_module(f'.{_EXPORTS[name]}', __name__), name)
