"""Parameter and multiply-accumulate counts, as the paper reports them (MACs = FLOPs / 2)."""
from contextlib import contextmanager
from typing import Iterator, Optional, Sequence

import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from .layers import ShiftedPatchProjection

__all__ = ['count_params', 'count_macs', 'explicit_spt']


def count_params(model: nn.Module) -> int:
    """Number of parameters (trainable or not; buffers excluded)."""
    return sum(p.numel() for p in model.parameters())


@contextmanager
def explicit_spt(model: nn.Module) -> Iterator[None]:
    """Run every SPT projection in ``model`` on its explicit (paper-formulation) path inside the block."""
    projections = [m for m in model.modules() if isinstance(m, ShiftedPatchProjection)]
    saved = [m.fused for m in projections]
    try:
        for m in projections:
            m.fused = False
        yield
    finally:
        for m, fused in zip(projections, saved):
            m.fused = fused


def count_macs(model: nn.Module, input_size: Optional[Sequence[int]] = None) -> int:
    """Multiply-accumulates of one forward pass of a single image, counted by torch's ``FlopCounterMode``.

    SPT is counted as the paper formulates it (concatenated copies, LayerNorm, Linear), so the numbers compare with
    the paper's tables; the fused SPT kernel computes the same function with fewer MACs.

    The forward runs with autograd on: FlopCounterMode's module tracker fails on no-grad runs of models that pass
    tuples between modules (timm's PiT).

    Args:
        model: The model (evaluated in eval mode; its mode is restored).
        input_size: ``(C, H, W)``; defaults to ``model.pretrained_cfg['input_size']``.
    """
    if input_size is None:
        input_size = model.pretrained_cfg['input_size']
    param = next(model.parameters())
    x = torch.zeros(1, *input_size, device=param.device, dtype=param.dtype)
    was_training = model.training
    model.eval()
    try:
        with explicit_spt(model), FlopCounterMode(display=False) as counter:
            model(x)
    finally:
        model.train(was_training)
    return counter.get_total_flops() // 2
