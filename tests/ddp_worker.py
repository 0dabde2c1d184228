"""Worker for tests/test_distributed.py, started by torchrun: a few DDP train steps of several sl_ models.

It initialises the process group with timm's own ``init_distributed_device`` (what timm's train.py calls), wraps
each model in ``DistributedDataParallel`` *without* ``find_unused_parameters`` (an unused parameter then fails the
second step), trains three steps on per-rank random data and saves the parameters of each model for the test.
"""
import sys
from types import SimpleNamespace

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel

import timm
from timm.optim import create_optimizer_v2
from timm.utils import init_distributed_device

MODELS = {
    'sl_vit_32': dict(depth=2),
    'sl_pit_32': dict(depth=(1, 1, 1)),
    'sl_swin_32': dict(depths=(2, 1, 1)),
    'sl_cait_32': dict(depth=2, depth_token_only=1),
    'sl_t2t_32': dict(depth=2),
}


def main(out_dir: str) -> None:
    args = SimpleNamespace(device='cpu', dist_backend='gloo', dist_url='env://')
    device = init_distributed_device(args)
    assert args.distributed and args.world_size == 2, 'expected to be started by torchrun with 2 processes'
    for name, kwargs in MODELS.items():
        torch.manual_seed(0)  # same initial weights on every rank (DDP also broadcasts rank 0's)
        model = timm.create_model(name, num_classes=5, **kwargs).to(device)
        ddp = DistributedDataParallel(model)
        optimizer = create_optimizer_v2(model, 'adamw', lr=1e-3, weight_decay=0.05)
        for step in range(3):
            g = torch.Generator().manual_seed(1000 * args.rank + step)  # different data on each rank
            x, y = torch.randn(4, 3, 32, 32, generator=g), torch.randint(0, 5, (4,), generator=g)
            loss = F.cross_entropy(ddp(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        torch.save({n: p.detach().clone() for n, p in model.named_parameters()}, f'{out_dir}/{name}.rank{args.rank}.pt')
    dist.barrier()
    dist.destroy_process_group()


if __name__ == '__main__':
    main(sys.argv[1])
