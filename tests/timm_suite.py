"""Run timm's own model test suite (``tests/test_models.py`` from timm's sdist) over the ``sl_`` models.

timm's suite decides which checks a model gets by name patterns: ``NON_STD_FILTERS`` (transformer families whose
feature / head APIs differ from CNNs) and ``FEAT_INTER_FILTERS`` (model modules with ``forward_intermediates``).
Each ``sl_`` family is counted with its base family, so this script copies timm's test files into a temporary
directory and adds the ``sl_`` patterns to those two lists; nothing else in timm's tests is changed. The sdist of
the *installed* timm version is fetched from PyPI with pip (or taken from ``--timm-tests DIR``).

Usage: ``python tests/timm_suite.py [--timm-tests DIR] [-- extra pytest args]``
"""
import argparse
import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Dict, List, Optional, Sequence

# sl_ families in timm's NON_STD group, as their base families are (vit_*, pit_*, cait_*; swin_* is a standard
# model in timm's suite); sl_ model modules with forward_intermediates, as their base modules have
SL_NON_STD_FILTERS: Sequence[str] = ('sl_vit_*', 'sl_pit_*', 'sl_cait_*', 'sl_t2t_*')
SL_FEAT_INTER_MODULES: Sequence[str] = ('sl_vit', 'sl_pit', 'sl_swin', 'sl_cait', 'sl_t2t')
CACHE_DIR = Path(os.environ.get('TIMM_SL_CACHE', Path.home() / '.cache' / 'timm_sl'))


def fetch_timm_tests(version: Optional[str] = None) -> Path:
    """Path of the ``tests`` folder of timm's sdist for ``version`` (default: installed), downloading it once."""
    version = version or importlib.metadata.version('timm')
    target = CACHE_DIR / f'timm-{version}-tests'
    if (target / 'test_models.py').exists():
        return target
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [sys.executable, '-m', 'pip', 'download', f'timm=={version}', '--no-binary', ':all:', '--no-deps',
             '-q', '-d', tmp], check=True)
        sdist = next(Path(tmp).glob('timm-*.tar.gz'))
        with tarfile.open(sdist) as tar:
            members = [m for m in tar.getmembers() if re.match(r'^timm-[^/]+/tests/[^/]+\.py$', m.name)]
            tar.extractall(tmp, members=members)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(Path(tmp) / f'timm-{version}' / 'tests', target, dirs_exist_ok=True)
    return target


def _extend_list(source: str, name: str, extra: Sequence[str]) -> str:
    pattern = re.compile(rf'^{name} = \[', re.MULTILINE)
    if not pattern.search(source):
        raise RuntimeError(f"timm's test_models.py no longer defines {name}; update tests/timm_suite.py")
    items = ''.join(f'{e!r}, ' for e in extra)
    return pattern.sub(f'{name} = [{items}', source, count=1)


def prepare(timm_tests: Path, out_dir: Path) -> Path:
    """Copy timm's tests to ``out_dir`` with the sl_ patterns added; return the patched test_models.py."""
    shutil.copytree(timm_tests, out_dir, dirs_exist_ok=True)
    path = out_dir / 'test_models.py'
    source = path.read_text()
    source = _extend_list(source, 'NON_STD_FILTERS', SL_NON_STD_FILTERS)
    source = _extend_list(source, 'FEAT_INTER_FILTERS', SL_FEAT_INTER_MODULES)
    path.write_text(source)
    return path


# pytest plugin written next to the copied tests: keep only the tests parametrised with a matching model name
_SELECT_PLUGIN = """
import fnmatch, os

def pytest_collection_modifyitems(config, items):
    pattern = os.environ['TIMM_SL_SUITE_MODELS']
    keep, drop = [], []
    for item in items:
        name = getattr(getattr(item, 'callspec', None), 'params', {}).get('model_name')
        (keep if isinstance(name, str) and fnmatch.fnmatch(name.split('.')[0], pattern) else drop).append(item)
    config.hook.pytest_deselected(items=drop)
    items[:] = keep
"""


def run(timm_tests: Optional[Path] = None, pytest_args: Sequence[str] = (), models: str = 'sl_*') -> int:
    """Run the patched suite on the models matching ``models`` (fnmatch); return pytest's exit code."""
    timm_tests = timm_tests or fetch_timm_tests()
    with tempfile.TemporaryDirectory() as tmp:
        test_file = prepare(timm_tests, Path(tmp) / 'timm_tests')
        (Path(tmp) / '_timm_sl_select.py').write_text(_SELECT_PLUGIN)
        cmd = [sys.executable, '-m', 'pytest', str(test_file), '-p', '_timm_sl_select', '-p', 'no:cacheprovider',
               '-o', 'addopts=', '-W', 'ignore::pytest.PytestUnknownMarkWarning', '-q', '-rfEs', *pytest_args]
        env: Dict[str, str] = dict(os.environ, TIMM_SL_SUITE_MODELS=models)
        env['PYTHONPATH'] = os.pathsep.join(filter(None, [tmp, env.get('PYTHONPATH')]))
        env.pop('GITHUB_ACTIONS', None)  # that flag makes timm's suite skip large models, not ours
        return subprocess.run(cmd, cwd=tmp, env=env).returncode


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--timm-tests', type=Path, default=None, help="timm's tests folder (default: from PyPI)")
    parser.add_argument('--models', default='sl_*', help='model name pattern (default: sl_*)')
    parser.add_argument('pytest_args', nargs='*', help='extra pytest arguments (after --)')
    args = parser.parse_args(argv)
    return run(args.timm_tests, args.pytest_args, args.models)


if __name__ == '__main__':
    sys.exit(main())
