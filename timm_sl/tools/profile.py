"""Parameter and multiply-accumulate counts, as the paper reports them (MACs = FLOPs / 2)."""
from contextlib import contextmanager
from typing import Any, Callable, ContextManager, Iterator, Optional, Sequence, Tuple

import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

__all__ = ['built_input_size', 'count_params', 'count_macs', 'explicit_attention', 'model_counts']


def count_params(model: nn.Module) -> int:
    """Number of parameters (trainable or not; buffers excluded)."""
    return sum(p.numel() for p in model.parameters())


@contextmanager
def _set_on_modules(model: nn.Module, select: Callable[[nn.Module], bool], attr: str, value: Any) -> Iterator[None]:
    """Set ``attr`` to ``value`` on every selected submodule of ``model`` inside the block, restoring it after."""
    modules = [m for m in model.modules() if select(m)]
    saved = [getattr(m, attr) for m in modules]
    try:
        for m in modules:
            setattr(m, attr, value)
        yield
    finally:
        for m, old in zip(modules, saved):
            setattr(m, attr, old)


def explicit_attention(model: nn.Module) -> ContextManager[None]:
    """Run every attention module in ``model`` (timm's and ours: a ``fused_attn`` flag) on its matmul/softmax path.

    ``FlopCounterMode`` counts SDPA only for the kernels torch registers a formula for, which changes between torch
    versions (torch 2.14 does not count the CPU flash kernel); the explicit ``q @ k^T`` and ``attn @ v`` are plain
    matmuls, counted on every torch.
    """
    return _set_on_modules(model, lambda m: isinstance(getattr(m, 'fused_attn', None), bool), 'fused_attn', False)


def built_input_size(model: nn.Module) -> Tuple[int, int, int]:
    """``(C, H, W)`` of the input ``model`` was built for: its ``pretrained_cfg['input_size']``, with the channels and
    image size it was built with (``in_chans=1``, ``img_size=48``), which timm leaves out of that cfg. A model whose
    patch embedding takes any size (``dynamic_img_size=True``) keeps a cfg's size that is not its registered one: an
    export's, the size it was trained at."""
    chans, height, width = model.pretrained_cfg['input_size']
    embed = getattr(model, 'patch_embed', None)
    size = getattr(embed, 'img_size', None)
    if size is not None and (getattr(embed, 'strict_img_size', True) or _registered_size(model) == (height, width)):
        height, width = (size, size) if isinstance(size, int) else tuple(size)
    in_chans = getattr(model, 'in_chans', None)
    return (in_chans if isinstance(in_chans, int) else chans), height, width


def _registered_size(model: nn.Module) -> Optional[Tuple[int, int]]:
    """``(H, W)`` of the input size timm registers for ``model``'s architecture (None when it registers none)."""
    from timm.models import get_pretrained_cfg
    arch = model.pretrained_cfg.get('architecture')
    cfg = get_pretrained_cfg(arch) if arch else None
    return tuple(cfg.input_size[1:]) if cfg is not None else None


def count_macs(model: nn.Module, input_size: Optional[Sequence[int]] = None) -> int:
    """Multiply-accumulates of one forward pass of a single image, counted by torch's ``FlopCounterMode``.

    Counted as the paper formulates the model, the same on every torch version and SDPA kernel: SPT as concatenated
    copies, LayerNorm, Linear (its only form), and attention as explicit matmuls (:func:`explicit_attention`).

    The forward runs with autograd on: FlopCounterMode's module tracker fails on no-grad runs of models that pass
    tuples between modules (timm's PiT).

    Args:
        model: The model (evaluated in eval mode; its mode is restored).
        input_size: Shape of one sample without the batch axis, e.g. ``(C, H, W)``; defaults to the input the
            model was built for (:func:`built_input_size`).
    """
    if input_size is None:
        input_size = built_input_size(model)
    param = next(model.parameters())
    x = torch.zeros(1, *input_size, device=param.device, dtype=param.dtype)
    was_training = model.training
    model.eval()
    try:
        with explicit_attention(model), FlopCounterMode(display=False) as counter:
            model(x)
    finally:
        model.train(was_training)
    return counter.get_total_flops() // 2


def model_counts(name: str, **kwargs: Any) -> Tuple[int, int, nn.Module]:
    """``(parameters, MACs, model)`` of a registered model, built on the meta device: no weights are allocated or
    initialised and the counted forward does no arithmetic, so the counts are those of the real model (the same
    shapes, the same ops) in a fraction of the time. The model is for its cfg and structure only."""
    import timm
    with torch.device('meta'):
        model = timm.create_model(name, **kwargs)
    return count_params(model), count_macs(model), model
