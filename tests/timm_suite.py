"""Run timm's own model test suite (``tests/test_models.py`` from timm's sdist) over the ``sl_`` models.

timm's suite decides which checks a model gets by name patterns: ``NON_STD_FILTERS`` (transformer families whose
feature / head APIs differ from CNNs) and ``FEAT_INTER_FILTERS`` (model modules with ``forward_intermediates``).
Each ``sl_`` family is counted with its base family, so this script copies timm's test files into a temporary
directory and adds the ``sl_`` patterns to those two lists; nothing else in timm's tests is changed. The sdist of
the *installed* timm version is fetched from PyPI with pip (or taken from ``--timm-tests DIR``).

Models above ``--max-params`` (default 35 M, counted on the meta device) are left out, as timm's own CI leaves out its
biggest models: they are the upper rungs of the size ladders (``sl_vit_base``, ``sl_swin_b``, ...), whose classes and
code paths the smaller rungs of the same family already run, and each adds minutes on a CPU runner.
``--max-params 0`` runs every model.

Usage: ``python tests/timm_suite.py [--timm-tests DIR] [--models PATTERN] [--max-params M] [-- extra pytest args]``
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
from typing import Dict, List, Optional, Sequence, Tuple

# sl_ families in timm's NON_STD group, as their base families are (vit_*, pit_*, cait_*; swin_* is a standard
# model in timm's suite); sl_ model modules with forward_intermediates, as their base modules have
SL_NON_STD_FILTERS: Sequence[str] = ('sl_vit_*', 'sl_pit_*', 'sl_cait_*', 'sl_t2t_*')
SL_FEAT_INTER_MODULES: Sequence[str] = ('sl_vit', 'sl_pit', 'sl_swin', 'sl_cait', 'sl_t2t')
CACHE_DIR = Path(os.environ.get('TIMM_SL_CACHE', Path.home() / '.cache' / 'timm_sl'))
DEFAULT_MAX_PARAMS_M = 35.


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
import os

def pytest_collection_modifyitems(config, items):
    names = set(os.environ['TIMM_SL_SUITE_MODELS'].split(','))
    keep, drop = [], []
    for item in items:
        name = getattr(getattr(item, 'callspec', None), 'params', {}).get('model_name')
        (keep if isinstance(name, str) and name.split('.')[0] in names else drop).append(item)
    config.hook.pytest_deselected(items=drop)
    items[:] = keep
"""


def select_models(pattern: str = 'sl_*', max_params_m: float = DEFAULT_MAX_PARAMS_M) -> Tuple[List[str], List[str]]:
    """``(selected, left_out)``: registered models matching ``pattern``, split by ``max_params_m`` M parameters
    (``<= 0``: no limit). Parameters are counted on models built on the meta device (no memory, no init)."""
    import torch
    import timm
    import timm_sl  # noqa: F401  (registers the models even when the autoload hook is disabled)

    names = timm.list_models(pattern)
    if max_params_m <= 0:
        return names, []
    selected, left_out = [], []
    for name in names:
        with torch.device('meta'):
            params = sum(p.numel() for p in timm.create_model(name).parameters())
        (selected if params <= max_params_m * 1e6 else left_out).append(name)
    return selected, left_out


def run(
        timm_tests: Optional[Path] = None,
        pytest_args: Sequence[str] = (),
        models: str = 'sl_*',
        max_params_m: float = DEFAULT_MAX_PARAMS_M,
) -> int:
    """Run the patched suite on the models matching ``models`` (fnmatch) with at most ``max_params_m`` M parameters
    (``<= 0``: all); return pytest's exit code."""
    selected, left_out = select_models(models, max_params_m)
    if left_out:
        print(f'timm_suite: leaving out {len(left_out)} model(s) over {max_params_m:g} M parameters '
              f'(--max-params 0 runs them): {", ".join(left_out)}', flush=True)
    if not selected:
        print(f'timm_suite: no model matches {models!r} within {max_params_m:g} M parameters', file=sys.stderr)
        return 5  # pytest's "no tests collected"
    timm_tests = timm_tests or fetch_timm_tests()
    with tempfile.TemporaryDirectory() as tmp:
        test_file = prepare(timm_tests, Path(tmp) / 'timm_tests')
        (Path(tmp) / '_timm_sl_select.py').write_text(_SELECT_PLUGIN)
        cmd = [sys.executable, '-m', 'pytest', str(test_file), '-p', '_timm_sl_select', '-p', 'no:cacheprovider',
               '-o', 'addopts=', '-W', 'ignore::pytest.PytestUnknownMarkWarning', '-q', '-rfEs', *pytest_args]
        env: Dict[str, str] = dict(os.environ, TIMM_SL_SUITE_MODELS=','.join(selected))
        env['PYTHONPATH'] = os.pathsep.join(filter(None, [tmp, env.get('PYTHONPATH')]))
        env.pop('GITHUB_ACTIONS', None)  # that flag makes timm's suite skip large models, not ours
        return subprocess.run(cmd, cwd=tmp, env=env).returncode


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--timm-tests', type=Path, default=None, help="timm's tests folder (default: from PyPI)")
    parser.add_argument('--models', default='sl_*', help='model name pattern (default: sl_*)')
    parser.add_argument('--max-params', type=float, default=DEFAULT_MAX_PARAMS_M, metavar='M',
                        help=f'leave out models over M million parameters (default {DEFAULT_MAX_PARAMS_M:g}; 0: all)')
    parser.add_argument('pytest_args', nargs='*', help='extra pytest arguments (after --)')
    args = parser.parse_args(argv)
    return run(args.timm_tests, args.pytest_args, args.models, args.max_params)


if __name__ == '__main__':
    sys.exit(main())
