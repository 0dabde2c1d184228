"""Parameter and multiply-accumulate counts, as the paper reports them (MACs = FLOPs / 2)."""
from typing import Optional, Sequence

import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

__all__ = ['count_params', 'count_macs']


def count_params(model: nn.Module) -> int:
    """Number of parameters (trainable or not; buffers excluded)."""
    return sum(p.numel() for p in model.parameters())


@torch.no_grad()
def count_macs(model: nn.Module, input_size: Optional[Sequence[int]] = None) -> int:
    """Multiply-accumulates of one forward pass of a single image, counted by torch's ``FlopCounterMode``.

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
        with FlopCounterMode(display=False) as counter:
            model(x)
    finally:
        model.train(was_training)
    return counter.get_total_flops() // 2
