"""Kernels per forward of every family at 32 px: baseline against SL, side by side in one process.

On a launch-bound GPU run (small inputs, eager mode) each extra small kernel costs CPU issue time, so the SL /
baseline throughput ratio follows the kernel counts. Per family (the paper's 32 px configs) this prints, for the
baseline (``type(model).baseline_kwargs``: SPT, LSA and Spool off), SL without Spool (pooling families) and SL:

* ``ops``: aten ops one inference forward dispatches, views left out and composites (``linear``, ``layer_norm``)
  counted as the kernels they run (``count_kernel_ops``): deterministic, the same on every machine;
* ``kernels`` (CUDA only): device kernels ``torch.profiler`` records for one forward;
* with ``--time``: the speed SL / baseline from interleaved rounds (the order rotates every round), median and
  min-max of the per-round ratios (``--rounds``, ``--iters`` and ``--warmup`` set them, and are refused without
  ``--time``);
* with ``--by-op``: the aten ops whose counts differ between SL and baseline.

Examples::

    python benchmarks/launches.py                                     # ops per forward, CPU
    python benchmarks/launches.py --time -b 32 --rounds 7 --iters 5   # plus CPU eager SL / baseline speed
    python benchmarks/launches.py --device cuda --amp -b 128 --time   # plus profiler kernel counts on the GPU
"""
import argparse
import statistics
import sys
from typing import Dict, List, Optional

import torch

import timm
import timm_sl  # noqa: F401  (registers the sl_ models even when the autoload hook is disabled)
from timm_sl.tools.arg_types import OneLineParser, non_negative_int, positive_int
from timm_sl.tools.paper import FAMILIES, model_name

from _timing import (check_device, check_warm, count_kernel_ops, interleaved_rounds, make_step, run_header, sync,
                     tally_kernel_ops)
from throughput import variants_of

DATASET = 'cifar10'  # the paper's 32 px configurations
IMG_SIZE = 32
TIMING = dict(rounds=5, iters=5, warmup=2)  # --time's defaults; without --time the three options are refused


def cuda_kernels(step) -> int:
    """Device kernels (and memsets / copies) one call of ``step`` launches, from ``torch.profiler``."""
    step()
    sync(torch.device('cuda'))
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        step()
        sync(torch.device('cuda'))
    return sum(1 for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA)


def bench_family(family: str, args: argparse.Namespace) -> Dict[str, object]:
    name = model_name(family, DATASET)
    device = torch.device(args.device)
    torch.manual_seed(0)
    models = {key: timm.create_model(name, **kw).to(device).eval() for key, kw in variants_of(name).items()}
    batch = torch.randn(args.batch_size, 3, IMG_SIZE, IMG_SIZE, device=device)
    steps = {key: make_step(model, 'infer', batch, args.amp) for key, model in models.items()}
    row: Dict[str, object] = dict(family=family, model=name, ops={k: count_kernel_ops(s) for k, s in steps.items()})
    if device.type == 'cuda':
        row['kernels'] = {k: cuda_kernels(s) for k, s in steps.items()}
    if args.by_op:
        row['by_op'] = {k: tally_kernel_ops(steps[k]) for k in ('base', 'sl')}
    if args.time:
        elapsed = interleaved_rounds(steps, args.rounds, args.iters, args.warmup, device)
        row['speed'] = {k: [b / t for b, t in zip(elapsed['base'], elapsed[k])] for k in steps if k != 'base'}
    return row


def report(rows: List[Dict[str, object]]) -> str:
    lines = ['| family | model | variant | ops / forward | kernels / forward | speed vs base (min-max) |',
             '|---|---|---|---:|---:|---|']
    for row in rows:
        for key, ops in row['ops'].items():
            kernels = row.get('kernels', {}).get(key, '')
            speed = row.get('speed', {}).get(key)
            speed = '1' if key == 'base' and 'speed' in row else (
                f'{statistics.median(speed):.2f} ({min(speed):.2f}-{max(speed):.2f})' if speed else '')
            lines.append(f"| {row['family']} | {row['model']} | {key} | {ops} | {kernels} | {speed} |")
    for row in rows:
        if 'by_op' in row:
            base, sl = row['by_op']['base'], row['by_op']['sl']
            diff = {op: sl[op] - base[op] for op in sorted(set(base) | set(sl)) if sl[op] != base[op]}
            lines.append(f"{row['family']}: SL - base per op: " + ', '.join(f'{op} {d:+d}' for op, d in diff.items()))
    return '\n'.join(lines)


def parse_args(argv: Optional[List[str]]) -> argparse.Namespace:
    parser = OneLineParser(description=__doc__.splitlines()[0])
    parser.add_argument('--families', nargs='+', default=list(FAMILIES), choices=list(FAMILIES))
    parser.add_argument('--device', default='cpu')
    parser.add_argument('-b', '--batch-size', type=positive_int, default=8)
    parser.add_argument('--amp', action='store_true', help='autocast (bfloat16 on CPU, float16 on CUDA)')
    parser.add_argument('--threads', type=positive_int, default=1, help='CPU threads (torch.set_num_threads)')
    parser.add_argument('--time', action='store_true', help='also time SL / baseline in interleaved rounds')
    parser.add_argument('--by-op', action='store_true', help='also list the ops whose counts differ SL - base')
    parser.add_argument('--rounds', type=positive_int, default=None, help=f'with --time: interleaved rounds '
                                                                          f'(default {TIMING["rounds"]})')
    parser.add_argument('--iters', type=positive_int, default=None,
                        help=f'with --time: steps per round (default {TIMING["iters"]})')
    parser.add_argument('--warmup', type=non_negative_int, default=None,
                        help=f'with --time: untimed steps before the rounds (default {TIMING["warmup"]}; 0: with 3 '
                             f'rounds or more)')
    args = parser.parse_args(argv)
    given = [f'--{dest} {getattr(args, dest)}' for dest in TIMING if getattr(args, dest) is not None]
    if given and not args.time:  # nothing is timed: a table that looks as if they shaped it
        parser.error(f'{", ".join(given)} without --time: only the ops are counted, nothing is timed; allowed: '
                     f'--time {" ".join(given)}, or neither')
    for dest, default in TIMING.items():
        if getattr(args, dest) is None:
            setattr(args, dest, default)
    try:  # before any model is built: a device that is not here, a cold first round
        check_device(args.device)
        if args.time:
            check_warm(args.rounds, args.warmup, '--rounds')
    except ValueError as e:
        parser.error(str(e))
    return args


def main(argv: Optional[List[str]] = None) -> int:
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    details = [f'batch {args.batch_size}, {IMG_SIZE} px', 'eager']
    if args.time:
        details.append(f'{args.rounds} interleaved rounds of {args.iters} steps')
    print(run_header(args.device, args.amp, *details) + '\n')
    print(report([bench_family(family, args) for family in args.families]))
    return 0


if __name__ == '__main__':
    sys.exit(main())
