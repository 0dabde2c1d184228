"""Start-up hook that loads timm plugins the moment ``timm`` finishes importing.

``timm_sl_autoload.pth`` (installed into site-packages) imports this module at interpreter start-up and calls
:func:`install`. That only puts a small finder on ``sys.meta_path``: it imports nothing heavy (no torch, no timm)
and costs well under a millisecond. When some code later runs ``import timm``, the finder lets the import finish and
then imports every entry point of the ``timm.plugins`` group (timm_sl registers its ``sl_`` models this way), so
``timm.create_model('sl_vit_tiny')`` and timm's own scripts work without an ``import timm_sl``.

Set ``TIMM_SL_NO_AUTOLOAD=1`` to disable the hook. Standard library only, by design.
"""
import os
import sys
import warnings

ENTRY_POINT_GROUP = 'timm.plugins'
DISABLE_ENV = 'TIMM_SL_NO_AUTOLOAD'
_TARGET = 'timm'


def _disabled() -> bool:
    return os.environ.get(DISABLE_ENV, '').strip().lower() not in ('', '0', 'false', 'no')


def load_plugins() -> list:
    """Import every ``timm.plugins`` entry point; a failing plugin warns instead of breaking ``import timm``.

    Returns:
        The names of the entry points that loaded.
    """
    from importlib.metadata import entry_points
    try:
        eps = entry_points(group=ENTRY_POINT_GROUP)
    except TypeError:  # Python < 3.10
        eps = entry_points().get(ENTRY_POINT_GROUP, [])
    loaded = []
    for ep in eps:
        try:
            ep.load()
            loaded.append(ep.name)
        except Exception as e:  # noqa: BLE001 - a broken plugin must not make timm unimportable
            warnings.warn(f'timm plugin {ep.name!r} ({ep.value}) failed to load: {e!r}', RuntimeWarning, stacklevel=2)
    return loaded


class WrappedLoader:
    """A module's own loader, wrapped: executing the module first gives it its own loader back (as if it had been
    imported without the wrapper), then runs :meth:`run`, by default the loader's ``exec_module``."""

    def __init__(self, loader) -> None:
        self._loader = loader

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module) -> None:
        module.__loader__ = self._loader
        if getattr(module, '__spec__', None) is not None:
            module.__spec__.loader = self._loader
        self.run(module)

    def run(self, module) -> None:
        self._loader.exec_module(module)

    def __getattr__(self, name):
        return getattr(self._loader, name)


class WrappingFinder:
    """``sys.meta_path`` finder: for a module name that ``matches``, the spec the other finders give, with its loader
    wrapped by ``wrap`` (a :class:`WrappedLoader` class)."""

    def __init__(self, matches, wrap) -> None:
        self._matches = matches
        self._wrap = wrap

    def find_spec(self, fullname, path=None, target=None):
        if not self._matches(fullname):
            return None
        for finder in sys.meta_path:
            if finder is self:
                continue
            find_spec = getattr(finder, 'find_spec', None)
            spec = find_spec(fullname, path, target) if find_spec is not None else None
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, 'exec_module'):
                    spec.loader = self._wrap(spec.loader)
                return spec
        return None


class _LoaderWrapper(WrappedLoader):
    """Wraps timm's own loader: executes the module as usual, then loads the plugins."""

    def run(self, module) -> None:
        uninstall()  # timm is being executed: the hook has done its work
        self._loader.exec_module(module)
        if not _disabled():
            load_plugins()
        while _callbacks:
            _callbacks.pop(0)()


class TimmImportFinder(WrappingFinder):
    """``sys.meta_path`` finder that fires once, for the top-level ``timm`` import, then removes itself.

    A mere look-up (``importlib.util.find_spec('timm')``, as transformers' availability check does before it imports
    timm) leaves it armed: it removes itself when timm's module is executed.
    """

    def __init__(self) -> None:
        super().__init__(lambda name: name == _TARGET, _LoaderWrapper)


_finder = TimmImportFinder()
_callbacks: list = []


def after_timm_import(callback) -> None:
    """Call ``callback()`` once ``timm`` has finished importing (at once if it has); also with the hook disabled."""
    if _TARGET in sys.modules:
        callback()
        return
    _callbacks.append(callback)
    if _finder not in sys.meta_path:
        sys.meta_path.insert(0, _finder)


def install() -> None:
    """Arm the hook (idempotent). If timm is already imported, load the plugins now."""
    if _disabled():
        return
    if _TARGET in sys.modules:
        load_plugins()
        return
    if _finder not in sys.meta_path:
        sys.meta_path.insert(0, _finder)


def uninstall() -> None:
    """Disarm the hook."""
    while _finder in sys.meta_path:
        sys.meta_path.remove(_finder)
