"""Run a timm script (train.py) under torchrun on CPU: ``python cpu_ddp_train.py SCRIPT ARGS...``.

timm's train.py wraps the model as ``DistributedDataParallel(model, device_ids=[device])``, which torch accepts for GPU
modules only; on CPU, DDP must be given no ``device_ids``. This shim drops a CPU-only ``device_ids`` and runs the script
unmodified, so the tests can run the documented torchrun commands (gloo, 2 processes) on a machine without GPUs.
"""
import runpy
import sys

import torch
from torch.nn.parallel import DistributedDataParallel

_ddp_init = DistributedDataParallel.__init__


def _ddp_init_cpu(self, module, device_ids=None, *args, **kwargs):
    if device_ids is not None and all(torch.device(d).type == 'cpu' for d in device_ids):
        device_ids = None
    _ddp_init(self, module, device_ids, *args, **kwargs)


if __name__ == '__main__':
    DistributedDataParallel.__init__ = _ddp_init_cpu
    sys.argv = sys.argv[1:]
    runpy.run_path(sys.argv[0], run_name='__main__')
