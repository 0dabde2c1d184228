"""SL models against other implementations of the same models, side by side in one process.

For every family (ViT, PiT, Swin, CaiT, T2T at 32 px, the paper's small-data configs) this times, in interleaved
rounds (the order rotates every round): the ``sl_`` model, its baseline (``type(model).baseline_kwargs``: SPT, LSA and
Spool off) and, for the pooling families, SL without Spool; lucidrains' ``vit_pytorch.vit_for_small_dataset.ViT``
(ViT only; ``pip install vit-pytorch``); and, with ``--reference DIR``, the authors' models built by their
``models.create_model`` from a checkout of their repository at DIR (imported from there, SPT and LSA on).

It prints, per family and mode, the speed ratio ours / peer (> 1: ours is faster) from the fastest round of each
(and the median of the per-round ratios), the parameter counts of both (a mismatch means the configs differ), SL /
baseline, and the peak memory of one training step SL / baseline (CUDA: ``max_memory_allocated``; CPU: the memory
events of ``torch.profiler``). With ``--count-ops`` it also counts the kernel ops one step dispatches per model (views
and no-op casts left out): deterministic, the same on every machine, and what a launch-bound GPU run pays for. With
``--compile`` every model, the peers' too, runs ``torch.compile``d (``--compile-mode``, as timm's
``--torchcompile-mode``), and the tables give each model's dynamo graph count next to its times (1: no graph break).

Examples::

    python benchmarks/peers.py                                    # CPU, 1 thread, batch 32, every family
    python benchmarks/peers.py --reference ../vit-small-datasets --out peers.md
    python benchmarks/peers.py --device cuda --amp --batch-size 128 --threads 8
    python benchmarks/peers.py --count-ops --rounds 1 --iters 1 -b 2 --no-memory   # kernel ops per step only
    python benchmarks/peers.py --device cuda --amp -b 128 --compile --reference ../vit-small-datasets
"""
import argparse
import statistics
import sys
from types import SimpleNamespace
from typing import Callable, Dict, List, Optional

import torch

import timm
import timm_sl  # noqa: F401  (registers the sl_ models even when the autoload hook is disabled)
from timm_sl.tools.arg_types import OneLineParser, non_negative_int, output_file, positive_int
from timm_sl.tools.errors import write_atomically
from timm_sl.tools.paper import FAMILIES, model_name
from timm_sl.tools.profile import count_params

from _timing import (check_device, check_warm, count_kernel_ops, escape_unencodable_output, interleaved_rounds,
                     make_step, peak_train_memory, run_header)
from throughput import HEADER, check_outputs, variants_of

COMPILE_CALLS = 3  # untimed calls of each compiled step before the rounds, whatever --warmup says
DATASET = 'cifar10'  # the paper's 32 px configurations (sl_vit_32, ...)
IMG_SIZE = 32


def lucidrains_vit(num_classes: int) -> torch.nn.Module:
    """``vit_pytorch``'s SPT + LSA ViT in ``sl_vit_32``'s configuration (patch 4, dim 192, depth 9, 12 heads of 16,
    MLP 384)."""
    from vit_pytorch.vit_for_small_dataset import ViT
    return ViT(image_size=IMG_SIZE, patch_size=4, num_classes=num_classes, dim=192, depth=9, heads=12, dim_head=16,
               mlp_dim=384)


def reference_factory(directory: str) -> Callable[[str, int], torch.nn.Module]:
    """The authors' ``create_model(img_size, n_classes, args)``, imported from their checkout at ``directory``.

    Raises:
        ValueError: naming the folder, when it holds no importable ``models.create_model``.
    """
    sys.path.insert(0, directory)
    try:
        from models.create_model import create_model
    except ImportError as e:
        raise ValueError(f'--reference {directory}: cannot import models.create_model from it ({e}); allowed: a '
                         'checkout of the authors\' repository (the folder holding models/ and utils/)') from e

    def build(family: str, num_classes: int) -> torch.nn.Module:
        args = SimpleNamespace(model=family, sd=0., is_SPT=True, is_LSA=True)
        return create_model(IMG_SIZE, num_classes, args)
    return build


def peers_of(family: str, num_classes: int, reference: Optional[Callable]) -> Dict[str, torch.nn.Module]:
    peers = {}
    if family == 'vit':
        try:
            peers['lucidrains'] = lucidrains_vit(num_classes)
        except ImportError:
            print('vit: lucidrains left out: vit-pytorch is not installed (pip install vit-pytorch)', file=sys.stderr)
    if reference is not None:
        peers['reference'] = reference(family, num_classes)
    return peers


def graph_count(model: torch.nn.Module, mode: str, batch: torch.Tensor, amp: bool) -> str:
    """How many graphs dynamo captures of one forward in ``mode`` (1: no graph break); '?' where dynamo fails."""
    model.train(mode == 'train')
    torch._dynamo.reset()
    autocast = torch.autocast(batch.device.type, dtype=torch.bfloat16 if batch.device.type == 'cpu'
                              else torch.float16, enabled=amp)
    try:
        with autocast, torch.no_grad():
            return str(torch._dynamo.explain(model)(batch).graph_count)
    except Exception as e:  # noqa: BLE001  (a peer dynamo cannot trace is reported, not fatal)
        print(f'{type(model).__name__}: dynamo failed: {type(e).__name__}: {e}'.splitlines()[0], file=sys.stderr)
        return '?'



def bench_family(family: str, mode: str, args: argparse.Namespace, reference: Optional[Callable]) -> Dict:
    """Time ours (SL, baseline, SL w/o Spool) and the peers of one family in interleaved rounds."""
    name = model_name(family, DATASET)
    device = torch.device(args.device)
    torch.manual_seed(0)
    first = timm.create_model(name)
    models = {key: (first if key == 'sl' else timm.create_model(name, **kw))
              for key, kw in variants_of(name).items()}
    num_classes = first.num_classes
    models.update(peers_of(family, num_classes, reference))
    batch = torch.randn(args.batch_size, 3, IMG_SIZE, IMG_SIZE, device=device)
    steps, graphs = {}, {}
    for key, model in models.items():
        model.to(device)
        if args.compile:
            graphs[key] = graph_count(model, mode, batch, args.amp)
    if args.compile:
        torch._dynamo.reset()  # each family compiles afresh: no cache entries left by another family's models
    for key, model in models.items():
        if args.compile:
            model = torch.compile(model, mode=args.compile_mode)
        steps[key] = make_step(model, mode, batch, args.amp, num_classes=num_classes)
        if key in ('sl', 'base', 'sl_no_spool'):
            continue
        try:  # a peer that cannot run here (device, AMP) is reported and left out, not fatal
            steps[key]()
        except Exception as e:  # noqa: BLE001
            print(f'{family} {mode}: {key} left out, it failed: {type(e).__name__}: {e}', file=sys.stderr)
            del steps[key]
    models = {key: models[key] for key in steps}
    if args.compile:  # the first calls compile (and, reduce-overhead, record CUDA graphs): never in a timed round
        for step in steps.values():
            for _ in range(COMPILE_CALLS):
                step()
    elapsed = interleaved_rounds(steps, args.rounds, args.iters, args.warmup, device)
    memory = {}
    if mode == 'train' and not args.no_memory:
        memory = {key: peak_train_memory(steps[key], device) for key in models}
    ops = {key: count_kernel_ops(step) for key, step in steps.items()} if args.count_ops else {}
    return dict(family=family, model=name, mode=mode, elapsed=elapsed, memory=memory, ops=ops, graphs=graphs,
                params={key: count_params(m) for key, m in models.items()})


def ratio(elapsed: Dict[str, List[float]], faster: str, than: str) -> str:
    """Speed of ``faster`` relative to ``than``: best rounds' ratio, and the median of the per-round ratios."""
    best = min(elapsed[than]) / min(elapsed[faster])
    median = statistics.median(t / s for t, s in zip(elapsed[than], elapsed[faster]))
    return f'{best:.2f} ({median:.2f})'


def tables(results: List[Dict], args: argparse.Namespace) -> str:
    graph_col = ' graphs |' if args.compile else ''
    peer_lines = ['| family | mode | ours img/s | peer | ours / peer: best (median) | params M: ours / peer |'
                  + graph_col,
                  '|---|---|---|---|---|---|' + '---|' * args.compile]
    base_lines = ['| family | mode | SL img/s | baseline img/s | SL / baseline: best (median) | '
                  'SL w/o Spool / baseline |' + graph_col, '|---|---|---|---|---|---|' + '---|' * args.compile]
    mem_lines = ['| family | peak train MiB: SL | baseline | SL / baseline | peers MiB |', '|---|---|---|---|---|']
    ops_lines = ['| family | mode | SL | baseline | SL w/o Spool | peers |', '|---|---|---|---|---|---|']
    for r in results:
        e, p, g = r['elapsed'], r['params'], r['graphs']
        img_s = {key: args.iters * args.batch_size / min(t) for key, t in e.items()}
        for peer in (k for k in e if k not in ('sl', 'base', 'sl_no_spool')):
            graphs = f" {g['sl']} / {g[peer]} |" if g else ''
            peer_lines.append(f"| {r['family']} | {r['mode']} | {img_s['sl']:.1f} | {peer} | "
                              f"{ratio(e, 'sl', peer)} | {p['sl'] / 1e6:.3f} / {p[peer] / 1e6:.3f} |{graphs}")
        no_spool = ratio(e, 'sl_no_spool', 'base') if 'sl_no_spool' in e else '—'
        graphs = f" {' / '.join(str(g[k]) for k in ('sl', 'base', 'sl_no_spool') if k in g)} |" if g else ''
        base_lines.append(f"| {r['family']} | {r['mode']} | {img_s['sl']:.1f} | {img_s['base']:.1f} | "
                          f"{ratio(e, 'sl', 'base')} | {no_spool} |{graphs}")
        m = r['memory']
        if m:
            peers = ', '.join(f'{k} {v / 2**20:.1f}' for k, v in m.items() if k not in ('sl', 'base', 'sl_no_spool'))
            mem_lines.append(f"| {r['family']} | {m['sl'] / 2**20:.1f} | {m['base'] / 2**20:.1f} | "
                             f"{m['sl'] / m['base']:.3f} | {peers or '—'} |")
        ops = r['ops']
        if ops:
            peers = ', '.join(f'{k} {v}' for k, v in ops.items() if k not in ('sl', 'base', 'sl_no_spool'))
            ops_lines.append(f"| {r['family']} | {r['mode']} | {ops['sl']} | {ops['base']} | "
                             f"{ops.get('sl_no_spool', '—')} | {peers or '—'} |")
    if len(peer_lines) > 2:
        out = ['Ours / peer (speed ratio, > 1: ours faster):', '', *peer_lines, '']
    else:  # an empty table would read as a comparison that found nothing
        out = ["Ours / peer: no peer was timed (lucidrains' ViT needs vit-pytorch and --families vit; the authors' "
               "models need --reference DIR).", '']
    out += ['SL / baseline (speed ratio):', '', *base_lines]
    if len(mem_lines) > 2:
        out += ['', 'Peak memory of one training step (allocated above what was live before it):', '', *mem_lines]
    if len(ops_lines) > 2:
        out += ['', 'Kernel ops per step (aten ops dispatched, views and no-op casts left out):', '', *ops_lines]
    return '\n'.join(out)


def parse_args(argv: List[str]) -> argparse.Namespace:
    p = OneLineParser(description=__doc__.splitlines()[0])
    p.add_argument('--families', nargs='+', default=list(FAMILIES), choices=list(FAMILIES))
    p.add_argument('--modes', nargs='+', default=['infer', 'train'], choices=['infer', 'train'])
    p.add_argument('--device', default='cpu')
    p.add_argument('-b', '--batch-size', type=positive_int, default=32)
    p.add_argument('--threads', type=positive_int, default=1, help='torch CPU threads (default 1)')
    p.add_argument('--rounds', type=positive_int, default=7, help='interleaved rounds')
    p.add_argument('--iters', type=positive_int, default=3, help='steps per round')
    p.add_argument('--warmup', type=non_negative_int, default=2,
                   help='untimed steps before the rounds (0: with 3 rounds or more, or --compile)')
    p.add_argument('--amp', action='store_true', help='autocast: bfloat16 on CPU, float16 on CUDA')
    p.add_argument('--reference', default=None, metavar='DIR',
                   help="a checkout of the authors' repository: also time their models (imported from DIR)")
    p.add_argument('--no-memory', action='store_true', help='skip the peak training memory measurement')
    p.add_argument('--count-ops', action='store_true',
                   help='also count the kernel ops of one step per model (what launch-bound GPU runs pay for)')
    p.add_argument('--compile', action='store_true',
                   help='torch.compile every model (ours and the peers); the tables add each graph count')
    p.add_argument('--compile-mode', default=None, choices=['default', 'reduce-overhead', 'max-autotune'],
                   help="torch.compile's mode (timm's --torchcompile-mode); default: torch's default")
    p.add_argument('--out', default=None, type=output_file, help='also write the tables to this Markdown file')
    p.add_argument('--overwrite', action='store_true', help='replace a file at --out that is not a table of this '
                                                            'script (one is always replaced)')
    args = p.parse_args(argv)
    if args.compile_mode and not args.compile:  # the tables would say 'eager' of a run that asked for a mode
        p.error(f'--compile-mode {args.compile_mode} without --compile: nothing would be compiled; allowed: '
                f'--compile --compile-mode {args.compile_mode}, or neither')
    if args.count_ops and args.compile:  # under a dispatch mode the compiled models ran eager: their ops, not its
        p.error('--count-ops with --compile: the count runs each model eager (the same counts as without '
                '--compile), not the kernels the compiled model launches; allowed: one of them')
    try:  # before any measurement: a device that is not here; a user's file at --out is kept
        check_device(args.device)
        if not args.compile:  # compiled steps are called COMPILE_CALLS times before the rounds, whatever --warmup says
            check_warm(args.rounds, args.warmup, '--rounds')
        check_outputs(args, {'out': ('--out', HEADER)})
        args.build_reference = reference_factory(args.reference) if args.reference else None
    except ValueError as e:
        p.error(str(e))
    return args


def main(argv: Optional[List[str]] = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    escape_unencodable_output()
    torch.set_num_threads(args.threads)
    reference = args.build_reference
    compiled = f"compiled ({args.compile_mode or 'default'} mode)" if args.compile else 'eager'
    header = run_header(args.device, args.amp, compiled, f'batch {args.batch_size}, {IMG_SIZE} px',
                        f'{args.rounds} interleaved rounds of {args.iters} steps')
    results = []
    for family in args.families:
        for mode in args.modes:
            results.append(bench_family(family, mode, args, reference))
            e = results[-1]['elapsed']
            print(f"{family} {mode}: " + ', '.join(f'{k} {min(v) / args.iters * 1e3:.1f} ms' for k, v in e.items()),
                  file=sys.stderr, flush=True)
            if args.out:  # the tables so far: a run cut short (a time limit) keeps what it measured
                text = header + '\n\n' + tables(results, args) + '\n'
                write_atomically(args.out, lambda file: file.write_text(text, encoding='utf-8'))
    print(header + '\n\n' + tables(results, args))
    return 0


if __name__ == '__main__':
    sys.exit(main())
