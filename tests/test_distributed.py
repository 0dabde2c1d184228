"""Two processes started by torchrun (gloo, CPU) train every sl_ family through DistributedDataParallel."""
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import timm

from ddp_worker import MODELS


@pytest.mark.extended
def test_torchrun_two_process_ddp_training(tmp_path):
    worker = Path(__file__).with_name('ddp_worker.py')
    env = {k: v for k, v in os.environ.items() if k != 'TIMM_SL_NO_AUTOLOAD'}
    env.update(OMP_NUM_THREADS='1', CUDA_VISIBLE_DEVICES='')
    result = subprocess.run(
        [sys.executable, '-m', 'torch.distributed.run', '--standalone', '--nproc_per_node', '2', str(worker),
         str(tmp_path)], capture_output=True, text=True, env=env, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    for name, kwargs in MODELS.items():
        rank0 = torch.load(tmp_path / f'{name}.rank0.pt', weights_only=True)
        rank1 = torch.load(tmp_path / f'{name}.rank1.pt', weights_only=True)
        torch.manual_seed(0)
        initial = dict(timm.create_model(name, num_classes=5, **kwargs).named_parameters())
        assert rank0.keys() == rank1.keys() == initial.keys()
        for key in rank0:  # gradients were all-reduced: the replicas stayed identical ...
            torch.testing.assert_close(rank0[key], rank1[key], msg=f'{name}: {key} differs across ranks')
        # ... and they trained (temperatures included)
        moved = [k for k in rank0 if not torch.equal(rank0[k], initial[k].detach())]
        assert len(moved) == len(rank0), f'{name}: not updated: {sorted(set(rank0) - set(moved))}'
