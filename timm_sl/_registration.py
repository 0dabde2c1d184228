"""When the ``sl_`` models are registered with timm: right after ``timm`` is imported, but never while one of this
package's own modules is part-way through its import.

``import timm_sl.layers`` in a fresh interpreter imports timm from inside ``timm_sl.layers``. Registering the models at
that moment would import ``timm_sl.models``, which needs the half-executed ``timm_sl.layers`` (a circular import).
So, until the models are registered, every ``timm_sl.*`` module is executed through a loader that counts the imports
in progress, and a registration that falls inside one runs as soon as the outermost of them has finished.

Standard library only: the package's torch-free commands (``timm-sl --help``) import it too.
"""
import sys
from typing import Callable, List

__all__ = ['track_imports', 'stop_tracking', 'when_idle']

_PACKAGE = __name__.rpartition('.')[0]
_pending: List[Callable[[], None]] = []
_depth = 0


class _CountingLoader:
    """Executes a module with its own loader, counting this package's imports in progress."""

    def __init__(self, loader) -> None:
        self._loader = loader

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module) -> None:
        global _depth
        # the module carries its own loader, as if it had been imported without this one
        module.__loader__ = self._loader
        if getattr(module, '__spec__', None) is not None:
            module.__spec__.loader = self._loader
        _depth += 1
        try:
            self._loader.exec_module(module)
        finally:
            _depth -= 1
        if _depth == 0:
            _run_pending()

    def __getattr__(self, name):
        return getattr(self._loader, name)


class _SubmoduleFinder:
    """``sys.meta_path`` finder giving this package's submodules a :class:`_CountingLoader`."""

    def find_spec(self, fullname, path=None, target=None):
        if not fullname.startswith(_PACKAGE + '.'):
            return None
        for finder in sys.meta_path:
            if finder is self:
                continue
            find_spec = getattr(finder, 'find_spec', None)
            spec = find_spec(fullname, path, target) if find_spec is not None else None
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, 'exec_module'):
                    spec.loader = _CountingLoader(spec.loader)
                return spec
        return None


_finder = _SubmoduleFinder()


def _run_pending() -> None:
    while _pending:
        _pending.pop(0)()


def track_imports() -> None:
    """Start counting this package's imports in progress (idempotent)."""
    if _finder not in sys.meta_path:
        sys.meta_path.insert(0, _finder)


def stop_tracking() -> None:
    """Stop counting (modules imported from now on load as usual)."""
    while _finder in sys.meta_path:
        sys.meta_path.remove(_finder)


def when_idle(callback: Callable[[], None]) -> None:
    """Call ``callback()`` now, or, while one of this package's modules is being imported, once that import is done."""
    if _depth == 0:
        callback()
    else:
        _pending.append(callback)
