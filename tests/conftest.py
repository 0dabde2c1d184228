import os

import pytest
import torch

import timm_sl  # noqa: F401  (registers the sl_ models even when the autoload hook is disabled)


def pytest_configure(config):
    """Under pytest-xdist, one torch thread per worker (and per process a test starts): with a worker per core, each
    worker's default of a thread per core oversubscribed the cores, and their threads spun waiting for each other
    (tests/test_export_paths.py's TorchScript and FX tests, 2 workers on 2 cores: 26 s of CPU with one thread a worker,
    50-56 s with the default)."""
    if int(os.environ.get('PYTEST_XDIST_WORKER_COUNT', '1')) > 1:
        given = os.environ.get('OMP_NUM_THREADS', '').split(',')[0].strip()  # OpenMP's nested form: '4,2'
        threads = int(given) if given.isdigit() and int(given) > 0 else 1
        os.environ['OMP_NUM_THREADS'] = os.environ.get('OMP_NUM_THREADS') or '1'  # an empty one: what torch reads
        torch.set_num_threads(threads)


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)
