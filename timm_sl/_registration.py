"""When the ``sl_`` models are registered with timm: right after ``timm`` is imported, but never while one of this
package's own modules is part-way through its import.

``import timm_sl.layers`` in a fresh interpreter imports timm from inside ``timm_sl.layers``. Registering the models at
that moment would import ``timm_sl.models``, which needs the half-executed ``timm_sl.layers`` (a circular import).
So, until the models are registered, every ``timm_sl.*`` module is executed through a loader that counts the imports
in progress, and a registration that falls inside one runs as soon as the outermost of them has finished.

Standard library only: the package's torch-free commands (``timm-sl --help``) import it too. Used only with the
start-up hook (``_timm_sl_autoload``), whose finder and loader wrappers it shares.
"""
import sys
from typing import Callable, List

from _timm_sl_autoload import WrappedLoader, WrappingFinder

__all__ = ['track_imports', 'stop_tracking', 'when_idle']

_PACKAGE = __name__.rpartition('.')[0]
_pending: List[Callable[[], None]] = []
_depth = 0


class _CountingLoader(WrappedLoader):
    """Executes a module with its own loader, counting this package's imports in progress."""

    def run(self, module) -> None:
        global _depth
        _depth += 1
        try:
            self._loader.exec_module(module)
        except BaseException:
            _depth -= 1
            if _depth == 0 and _pending:  # the import failed: the next one of the package that completes registers
                track_imports()
            raise
        _depth -= 1
        if _depth == 0:
            _run_pending()


# this package's submodules get a counting loader
_finder = WrappingFinder(lambda name: name.startswith(_PACKAGE + '.'), _CountingLoader)


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
