"""Timing helpers shared by the benchmarks: one step per mode, interleaved rounds, peak training memory.

Every benchmark here times models side by side in one process: :func:`interleaved_rounds` runs each model's step for
``iters`` steps per round, rotating which model goes first every round, so machine noise hits all of them alike.
"""
import collections
import sys
import time
from contextlib import nullcontext
from typing import Callable, Counter, Dict, List, Optional

import torch
from torch.utils._python_dispatch import TorchDispatchMode

import timm
from timm.optim import create_optimizer_v2

__all__ = ['check_device', 'run_header', 'sync', 'make_step', 'time_steps', 'interleaved_rounds',
           'peak_train_memory', 'count_kernel_ops', 'tally_kernel_ops']

# aten ops that launch no kernel of their own: views and metadata, and allocations. Composites (linear, layer_norm,
# matmul, contiguous, to, ...) are not listed: under inference mode they reach the counter whole, and are split into
# their parts there (a real copy then shows as _to_copy / clone, a no-op cast or contiguous as nothing)
_NO_KERNEL_OPS = frozenset({
    'view', 'reshape', '_unsafe_view', '_reshape_alias', 'view_as', 'permute', 'transpose', 't', 'expand', 'unsqueeze',
    'squeeze', 'select', 'slice', 'as_strided', 'diagonal', 'unbind', 'split', 'split_with_sizes', 'unflatten',
    'flatten', 'alias', 'detach', 'detach_', 'lift_fresh', 'empty', 'empty_like', 'dropout',
})


def escape_unencodable_output() -> None:
    """Standard output escapes what its encoding cannot hold (a table's '—' under a Latin-1 locale), as standard error
    does: not a traceback after every model was timed."""
    if hasattr(sys.stdout, 'reconfigure'):
        sys.stdout.reconfigure(errors='backslashreplace')


def check_device(text: str) -> torch.device:
    """The device ``--device`` names, where timing means something: the CPU, or a CUDA device torch sees here.

    Raises:
        ValueError: naming the device and what is allowed (``meta`` times no arithmetic; a missing GPU would fail
            after the models are built).
    """
    try:
        device = torch.device(text)
    except RuntimeError as e:
        raise ValueError(f'--device {text!r} is not a torch device ({str(e).splitlines()[0]}); allowed: cpu, cuda, '
                         f'cuda:N') from e
    if device.type not in ('cpu', 'cuda'):
        raise ValueError(f'--device {text}: a {device.type} device cannot be timed here; allowed: cpu, cuda, cuda:N')
    if device.type == 'cuda':
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if not count:
            raise ValueError(f'--device {text}: torch {torch.__version__} sees no CUDA device here; allowed: '
                             f'--device cpu')
        if device.index is not None and device.index >= count:
            raise ValueError(f'--device {text}: torch sees {count} CUDA device(s) here; allowed: cpu, cuda, '
                             f'cuda:0 to cuda:{count - 1}')
    return device


def run_context(device: str) -> Dict[str, object]:
    """Where a run's times were taken, as the header line and each CSV row say it: the device's name (a GPU's name; on
    the CPU, with torch's thread count, which the times scale with), the threads (CPU only), torch and timm.
    ``device`` is one :func:`check_device` took."""
    where = torch.device(device)
    threads = torch.get_num_threads() if where.type == 'cpu' else ''
    name = torch.cuda.get_device_name(where) if where.type == 'cuda' else \
        f'CPU, {threads} thread' + ('' if threads == 1 else 's')
    return {'device_name': name, 'threads': threads, 'torch': torch.__version__, 'timm': timm.__version__}


def run_header(device: str, amp: bool, *details: str) -> str:
    """The line every benchmark prints above its table, so that its times have a context: :func:`run_context`'s
    device name, torch and timm, ``amp``, then ``details`` (batch, rounds, ...), joined by ``; ``."""
    context = run_context(device)
    return '; '.join([f"device: {context['device_name']}", f"torch {context['torch']}, timm {context['timm']}",
                      f'amp={amp}', *details])


def check_warm(rounds: int, warmup: int, rounds_option: str) -> None:
    """Refuse timing with no warm-up step and fewer than three rounds: the model timed first pays torch's first-call
    costs (allocator growth, kernel selection) inside its round, and a median of one or two rounds keeps that in the
    ratio.

    Raises:
        ValueError: naming both options and what is allowed.
    """
    if warmup == 0 and rounds < 3:
        raise ValueError(f"--warmup 0 with {rounds_option} {rounds}: the model timed first would pay torch's "
                         f"first-call costs inside its round, which the median of fewer than 3 rounds keeps in the "
                         f"ratio; allowed: --warmup 1 or more, or {rounds_option} 3 or more")


def sync(device: torch.device) -> None:
    if device.type == 'cuda':
        torch.cuda.synchronize(device)


def make_step(model: torch.nn.Module, mode: str, batch: torch.Tensor, amp: bool,
              num_classes: Optional[int] = None) -> Callable[[], None]:
    """One inference forward (eval, inference mode), or one full train step (forward, cross-entropy, backward,
    AdamW step). ``num_classes`` defaults to ``model.num_classes`` (models outside timm may lack it)."""
    autocast = torch.autocast(batch.device.type, dtype=torch.bfloat16 if batch.device.type == 'cpu'
                              else torch.float16) if amp else nullcontext()
    if mode == 'infer':
        model.eval()

        def step() -> None:
            with torch.inference_mode(), autocast:
                model(batch)
        return step

    model.train()
    optimizer = create_optimizer_v2(model, 'adamw', lr=1e-4, weight_decay=0.05)
    num_classes = model.num_classes if num_classes is None else num_classes
    target = torch.randint(0, num_classes, (batch.shape[0],), device=batch.device)

    def step() -> None:
        optimizer.zero_grad(set_to_none=True)
        with autocast:
            loss = torch.nn.functional.cross_entropy(model(batch), target)
        loss.backward()
        optimizer.step()
    return step


def time_steps(step: Callable[[], None], iters: int, device: torch.device) -> float:
    sync(device)
    start = time.perf_counter()
    for _ in range(iters):
        step()
    sync(device)
    return time.perf_counter() - start


def interleaved_rounds(steps: Dict[str, Callable[[], None]], rounds: int, iters: int, warmup: int,
                       device: torch.device) -> Dict[str, List[float]]:
    """Seconds per round (``iters`` steps) of every step, rounds interleaved with a rotating order."""
    for step in steps.values():
        for _ in range(warmup):
            step()
    keys = list(steps)
    elapsed: Dict[str, List[float]] = {key: [] for key in keys}
    for r in range(rounds):
        order = keys[r % len(keys):] + keys[:r % len(keys)]  # rotate who goes first
        for key in order:
            elapsed[key].append(time_steps(steps[key], iters, device))
    return elapsed


def peak_train_memory(step: Callable[[], None], device: torch.device) -> int:
    """Peak bytes allocated during one call of ``step`` above what was live before it.

    CUDA: ``torch.cuda.max_memory_allocated``. CPU: the allocation / free events of ``torch.profiler`` (memory
    profiling), accumulated in time order.
    """
    step()  # optimizer state and caches exist from here on
    if device.type == 'cuda':
        sync(device)
        torch.cuda.reset_peak_memory_stats(device)
        before = torch.cuda.memory_allocated(device)
        step()
        sync(device)
        return torch.cuda.max_memory_allocated(device) - before
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], profile_memory=True) as prof:
        step()
    # the raw allocation (+) / free (-) records: prof.events() folds them into the ops that made them
    records = sorted((e for e in prof.profiler.kineto_results.events() if e.name() == '[memory]'),
                     key=lambda e: e.start_ns() if hasattr(e, 'start_ns') else e.start_us() * 1000)  # torch < 2.3
    live = peak = 0
    for record in records:
        live += record.nbytes()
        peak = max(peak, live)
    return peak


# composites counted whole, not as torch's decomposition of them: attention given a mask (LSA's diagonal) runs on torch
# 2.2's CPU as its math path, a dozen ops, where a GPU's memory-efficient kernel takes the mask (one kernel); dropout
# outside training is no op in eager, where torch 2.2's decomposition of it copies its input (so it counts as none)
_FUSED_OPS = frozenset({'scaled_dot_product_attention', 'dropout'})


class _KernelOpCounter(TorchDispatchMode):
    """Counts of every kernel-launching aten op, by name. A composite op (one torch runs as other ops, e.g. ``linear``
    as ``addmm``) is run as its parts, each counted: under inference mode such ops reach a dispatch mode whole, and
    leaving them out dropped every linear layer, LayerNorm and matmul of an inference forward from the count."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: Counter[str] = collections.Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func.overloadpacket.__name__ not in _FUSED_OPS and torch._C._dispatch_has_kernel_for_dispatch_key(
                func.name(), 'CompositeImplicitAutograd'):
            with self:  # the parts dispatch to this mode again
                out = func.decompose(*args, **kwargs)
            if out is not NotImplemented:
                return out
        name = func.overloadpacket.__name__
        if name not in _NO_KERNEL_OPS:
            self.ops[name] += 1
        return func(*args, **kwargs)


def tally_kernel_ops(step: Callable[[], None]) -> Counter[str]:
    """The kernel-launching aten ops one call of ``step`` dispatches, by name (views left out, composites counted as
    the ops they run), after one untimed call: caches and optimizer state exist then, as in a timed step."""
    step()
    with _KernelOpCounter() as counter:
        step()
    return counter.ops


def count_kernel_ops(step: Callable[[], None]) -> int:
    """aten ops that one call of ``step`` dispatches, views left out and composites counted as their parts: about
    the kernels a GPU would launch, the cost that dominates a small model there. Deterministic, so comparable across
    machines, and the same whether ``step`` runs under inference mode or not."""
    return sum(tally_kernel_ops(step).values())
