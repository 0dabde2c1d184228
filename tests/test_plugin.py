"""The autoload hook: a fresh interpreter gets the sl_ models from `import timm` alone."""
import importlib.metadata
import os
import subprocess
import sys

import pytest

import _timm_sl_autoload as autoload


def _run(code: str, **env) -> str:
    full_env = {k: v for k, v in os.environ.items() if k != autoload.DISABLE_ENV}
    full_env.update(env)
    result = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, env=full_env, check=True)
    return result.stdout.strip()


def test_entry_point_is_declared():
    eps = importlib.metadata.entry_points(group=autoload.ENTRY_POINT_GROUP)
    assert 'timm_sl' in {ep.value for ep in eps}


def test_fresh_interpreter_creates_sl_model_without_import():
    code = "import timm; m = timm.create_model('sl_vit_32'); print(type(m).__name__, len(timm.list_models('sl_*')))"
    out = _run(code)
    name, count = out.split()
    assert name == 'SlVisionTransformer' and int(count) >= 3


def test_startup_imports_neither_torch_nor_timm():
    out = _run("import sys; print('torch' in sys.modules, 'timm' in sys.modules, '_timm_sl_autoload' in sys.modules)")
    assert out == 'False False True'


@pytest.mark.extended
def test_hook_can_be_disabled():
    assert _run("import timm; print(timm.list_models('sl_*'))", **{autoload.DISABLE_ENV: '1'}) == '[]'
    # the explicit import still registers the models
    code = "import timm, timm_sl; print(len(timm.list_models('sl_*')) > 0)"
    assert _run(code, **{autoload.DISABLE_ENV: '1'}) == 'True'


def test_timm_keeps_its_own_loader():
    out = _run("import timm; print(type(timm.__spec__.loader).__name__, type(timm.__loader__).__name__)")
    assert out == 'SourceFileLoader SourceFileLoader'


def test_submodule_first_import_also_triggers():
    assert _run("from timm.models import create_model; print(create_model('sl_vit_32').num_classes)") == '100'


def test_broken_plugin_warns_instead_of_breaking(monkeypatch):
    class BrokenEntryPoint:
        name, value = 'broken', 'no_such_module_xyz'

        def load(self):
            raise ImportError('no module named no_such_module_xyz')

    monkeypatch.setattr(importlib.metadata, 'entry_points', lambda **kw: [BrokenEntryPoint()])
    with pytest.warns(RuntimeWarning, match="timm plugin 'broken'.*failed to load"):
        assert autoload.load_plugins() == []


def test_install_is_idempotent_and_uninstall_removes(monkeypatch):
    monkeypatch.setattr(sys, 'meta_path', list(sys.meta_path))
    monkeypatch.delitem(sys.modules, 'timm', raising=False)  # pretend timm is not imported yet
    autoload.install()
    autoload.install()
    assert sum(f is autoload._finder for f in sys.meta_path) == 1
    autoload.uninstall()
    assert autoload._finder not in sys.meta_path


def test_a_look_up_before_the_import_keeps_the_hook():
    """transformers asks ``importlib.util.find_spec('timm')`` before it imports timm; the import still loads plugins."""
    code = ("import importlib.util; spec = importlib.util.find_spec('timm'); import timm; "
            "print(spec is not None, timm.is_model('sl_vit_32'), type(timm.__spec__.loader).__name__)")
    assert _run(code) == 'True True SourceFileLoader'


@pytest.mark.parametrize('first', [  # one interpreter each (~4 s): a layer and slify by default, the rest with -m slow
    'import timm_sl.layers.lsa', 'import timm_sl.slify',
    *(pytest.param(first, marks=pytest.mark.slow) for first in (
        'from timm_sl.layers import LocalitySelfAttention', 'import timm_sl.models.sl_pit',
        'from timm_sl.layers.lsa_cait import mix_heads')),
])
@pytest.mark.parametrize('autoload_off', ['', '1'])
def test_a_package_module_imported_before_timm_registers_the_models(first, autoload_off):
    """A module of the package that imports timm part-way through its own import (the models need it complete):
    the models register once it is done, not from inside it (a circular import)."""
    code = (f"{first}; import timm, sys; print(len(timm.list_models('sl_*')) >= 25, timm.is_model('slify'), "
            f"type(sys.modules['timm_sl.layers'].__loader__).__name__)")
    assert _run(code, **{autoload.DISABLE_ENV: autoload_off}) == 'True True SourceFileLoader'


def test_a_failed_package_import_keeps_the_registration_pending(monkeypatch):
    """A registration that waited on an import that then failed runs after the next import of the package."""
    from timm_sl import _registration

    class Loader:
        def __init__(self, fail):
            self.fail = fail

        def exec_module(self, module):
            if self.fail:
                raise ImportError('broken')

    monkeypatch.setattr(sys, 'meta_path', list(sys.meta_path))
    calls = []
    _registration.stop_tracking()
    monkeypatch.setattr(_registration, '_depth', 1)  # inside a package import: the callback must wait
    _registration.when_idle(lambda: calls.append('registered'))
    monkeypatch.setattr(_registration, '_depth', 0)
    module = type(sys)('timm_sl._fake')
    with pytest.raises(ImportError, match='broken'):
        _registration._CountingLoader(Loader(fail=True)).exec_module(module)
    assert calls == [] and _registration._finder in sys.meta_path  # still pending, counting again
    _registration._CountingLoader(Loader(fail=False)).exec_module(module)
    assert calls == ['registered'] and _registration._depth == 0
    _registration.stop_tracking()
