"""SL / baseline throughput, measured side by side in one process.

For each model, the SL model, its same-configuration baseline (``type(model).baseline_kwargs``: SPT, LSA and Spool
off) and, for the pooling families (PiT, Swin), SL without Spool are timed in interleaved rounds (the order rotates
every round) so that machine noise hits all alike. Each round gives a throughput ratio variant / baseline; the table
reports the median ratio with its min-max spread, next to the MACs ratio (baseline MACs / variant MACs, the ratio a
purely compute-bound run would show).

Examples::

    python benchmarks/throughput.py                                   # every small config + sl_vit_tiny on CPU
    python benchmarks/throughput.py --models sl_vit_64 --device cuda --batch-size 128 --amp
"""
import argparse
import csv
import statistics
import sys
import time
from contextlib import nullcontext
from typing import Callable, Dict, List

import torch

import timm
import timm_sl  # noqa: F401  (registers the sl_ models even when the autoload hook is disabled)
from timm.optim import create_optimizer_v2
from timm_sl.profile import count_macs, count_params


def _sync(device: torch.device) -> None:
    if device.type == 'cuda':
        torch.cuda.synchronize(device)


def make_step(model: torch.nn.Module, mode: str, batch: torch.Tensor, amp: bool) -> Callable[[], None]:
    """One inference forward, or one full train step (forward, loss, backward, AdamW step)."""
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
    target = torch.randint(0, model.num_classes, (batch.shape[0],), device=batch.device)

    def step() -> None:
        optimizer.zero_grad(set_to_none=True)
        with autocast:
            loss = torch.nn.functional.cross_entropy(model(batch), target)
        loss.backward()
        optimizer.step()
    return step


def time_steps(step: Callable[[], None], iters: int, device: torch.device) -> float:
    _sync(device)
    start = time.perf_counter()
    for _ in range(iters):
        step()
    _sync(device)
    return time.perf_counter() - start


def variants_of(model_cls: type) -> Dict[str, Dict[str, object]]:
    """Configurations timed against each other: the SL model, its baseline and, for pooling families, SL w/o Spool."""
    variants: Dict[str, Dict[str, object]] = {'sl': {}, 'base': dict(model_cls.baseline_kwargs)}
    if 'spt_pool' in model_cls.baseline_kwargs:
        variants['sl_no_spool'] = dict(spt_pool=False)
    return variants


def bench_model(name: str, mode: str, args: argparse.Namespace) -> List[Dict[str, object]]:
    """Time every variant of ``name`` in interleaved rounds; one row per non-baseline variant, relative to base."""
    device = torch.device(args.device)
    first = timm.create_model(name, **args.model_kwargs)
    models = {
        key: timm.create_model(name, **{**args.model_kwargs, **kw}) for key, kw in variants_of(type(first)).items()}
    size = first.pretrained_cfg['input_size'] if args.img_size is None else (3, args.img_size, args.img_size)
    batch = torch.randn(args.batch_size, *size, device=device)
    steps = {}
    for key, model in models.items():
        model.to(device)
        steps[key] = make_step(model, mode, batch, args.amp)
        for _ in range(args.warmup):
            steps[key]()
    keys = list(models)
    elapsed: Dict[str, List[float]] = {key: [] for key in keys}
    for r in range(args.repeats):
        order = keys[r % len(keys):] + keys[:r % len(keys)]  # rotate who goes first
        for key in order:
            elapsed[key].append(time_steps(steps[key], args.iters, device))
    base_macs = count_macs(models['base'], size)
    rows = []
    for key in keys:
        if key == 'base':
            continue
        ratios = [b / s for b, s in zip(elapsed['base'], elapsed[key])]
        rows.append({
            'model': name, 'variant': key, 'mode': mode, 'batch': args.batch_size, 'input': 'x'.join(map(str, size)),
            'img_s': args.iters * args.batch_size / statistics.median(elapsed[key]),
            'base_img_s': args.iters * args.batch_size / statistics.median(elapsed['base']),
            'ratio': statistics.median(ratios), 'ratio_min': min(ratios), 'ratio_max': max(ratios),
            'macs_ratio': base_macs / count_macs(models[key], size),
            'params_m': count_params(models[key]) / 1e6, 'base_params_m': count_params(models['base']) / 1e6,
        })
    return rows


def timm_benchmark_table(args: argparse.Namespace) -> str:
    """Run timm's benchmark.py on every variant (``--model-kwargs`` carries the switches) and tabulate the ratios."""
    import json
    import subprocess
    lines = ['| model | variant | infer img/s | train img/s | infer ratio | train ratio |', '|---|---|---|---|---|---|']
    for name in args.models:
        model_cls = type(timm.create_model(name, **args.model_kwargs))
        rates = {}
        for key, kwargs in variants_of(model_cls).items():
            kv = [f'{k}={v}' for k, v in {**args.model_kwargs, **kwargs}.items()]
            cmd = [sys.executable, args.timm_benchmark, '--model', name, '--bench', 'both', '-b', str(args.batch_size),
                   '--device', args.device, '--num-bench-iter', str(max(5, args.iters * args.repeats)),
                   '--num-warm-iter', str(args.warmup)] + (['--model-kwargs', *kv] if kv else [])
            if args.amp:
                cmd.append('--amp')
            out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
            result = json.loads(out[out.index('{', out.index('--result')):])
            rates[key] = (result['infer_samples_per_sec'], result['train_samples_per_sec'])
        for key, (infer, train) in rates.items():
            lines.append(f"| {name} | {key} | {infer:.1f} | {train:.1f} | {infer / rates['base'][0]:.3f} | "
                         f"{train / rates['base'][1]:.3f} |")
    return '\n'.join(lines)


def to_markdown(rows: List[Dict[str, object]]) -> str:
    lines = ['| model | variant | mode | batch | input | img/s | base img/s | ratio to base (median, min-max) | '
             'MACs ratio |', '|---|---|---|---|---|---|---|---|---|']
    for r in rows:
        lines.append(
            f"| {r['model']} | {r['variant']} | {r['mode']} | {r['batch']} | {r['input']} | {r['img_s']:.1f} | "
            f"{r['base_img_s']:.1f} | {r['ratio']:.3f} ({r['ratio_min']:.3f}-{r['ratio_max']:.3f}) | "
            f"{r['macs_ratio']:.3f} |")
    return '\n'.join(lines)


def parse_args(argv: List[str]) -> argparse.Namespace:
    from timm.utils import ParseKwargs
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument('--models', nargs='+', default=[
        'sl_vit_32', 'sl_vit_64', 'sl_pit_64', 'sl_swin_64', 'sl_cait_64', 'sl_t2t_64', 'sl_vit_tiny'])
    p.add_argument('--modes', nargs='+', default=['infer', 'train'], choices=['infer', 'train'])
    p.add_argument('--batch-size', type=int, default=32)
    p.add_argument('--img-size', type=int, default=None, help='default: the model cfg input size')
    p.add_argument('--device', default='cpu')
    p.add_argument('--amp', action='store_true', help='autocast: bfloat16 on CPU, float16 on CUDA')
    p.add_argument('--repeats', type=int, default=6, help='interleaved rounds per pair')
    p.add_argument('--iters', type=int, default=5, help='steps per round')
    p.add_argument('--warmup', type=int, default=2)
    p.add_argument('--threads', type=int, default=None, help='torch CPU threads')
    p.add_argument('--model-kwargs', nargs='*', default={}, action=ParseKwargs)
    p.add_argument('--csv', default=None, help='also write the rows to this CSV file')
    p.add_argument('--markdown', default=None, help='also write the table to this Markdown file')
    p.add_argument('--plot', default=None, help='also draw the ratios to this PNG file')
    p.add_argument('--timm-benchmark', default=None, metavar='BENCHMARK_PY',
                   help="also measure every variant with timm's own benchmark.py (path to it), ratios alike")
    return p.parse_args(argv)


def main(argv: List[str] = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    rows = []
    for name in args.models:
        for mode in args.modes:
            for row in bench_model(name, mode, args):
                rows.append(row)
                print(f"{name} {row['variant']} {mode}: ratio to base = {row['ratio']:.3f}",
                      file=sys.stderr, flush=True)
    if args.device.startswith('cuda'):
        device = torch.cuda.get_device_name()
    else:
        device = f'CPU, {torch.get_num_threads()} threads'
    header = f'device: {device}; torch {torch.__version__}, timm {timm.__version__}; amp={args.amp}'
    table = to_markdown(rows)
    print(header)
    print(table)
    if args.timm_benchmark:
        print('\nThe same variants through timm\'s benchmark.py (one run each, no interleaving):')
        print(timm_benchmark_table(args))
    if args.markdown:
        with open(args.markdown, 'w') as f:
            f.write(header + '\n\n' + table + '\n')
    if args.plot:
        from timm_sl.plot import plot_ratios
        plot_ratios([f"{r['model']} {r['variant']} {r['mode']}" for r in rows], [r['ratio'] for r in rows],
                    [r['ratio_min'] for r in rows], [r['ratio_max'] for r in rows], [r['macs_ratio'] for r in rows],
                    args.plot, title=header)
    if args.csv:
        with open(args.csv, 'w', newline='') as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    return 0


if __name__ == '__main__':
    sys.exit(main())
