"""SL / baseline throughput, measured side by side in one process.

For each model, the SL model, its same-configuration baseline (``type(model).baseline_kwargs``: SPT, LSA and Spool
off) and, for the pooling families (PiT, Swin), SL without Spool are timed in interleaved rounds (the order rotates
every round) so that machine noise hits all alike. Each round gives a throughput ratio variant / baseline; the table
reports the median ratio with its min-max spread, next to the MACs ratio (baseline MACs / variant MACs, the ratio a
purely compute-bound run would show).

``--slify BASE ...`` times ``timm_sl.slify`` of timm models against the unconverted model the same way, and
``--slify-survey FILE`` writes the README's "SPT/LSA on any timm model" table: every architecture of
:data:`SLIFY_SURVEY`, whether ``slify`` converts it (or why not), and for those that convert the SL / baseline ratio.

Examples::

    python benchmarks/throughput.py                                   # every small config + sl_vit_tiny on CPU
    python benchmarks/throughput.py --models sl_vit_64 --device cuda --batch-size 128 --amp
    python benchmarks/throughput.py --models --slify vit_small_patch16_224 pit_xs_224 --modes infer -b 8
    python benchmarks/throughput.py --models --slify-survey survey.md --modes infer -b 8 --repeats 3 --iters 2
"""
import argparse
import copy
import csv
import os
import statistics
import sys
from typing import Any, Dict, List, Optional, Tuple

import torch

import timm
import timm_sl  # noqa: F401  (registers the sl_ models even when the autoload hook is disabled)
from timm_sl import SlifyError, plan_slify, slify
from timm_sl.layers import with_switches
from timm_sl.models import SlArgs
from timm_sl.tools.arg_types import OneLineParser
from timm_sl.tools.errors import BUILD_ERRORS, build_failure, write_atomically
from timm_sl.tools.paper import VARIANT_LABELS, VARIANTS, family_of, switches_label
from timm_sl.tools.profile import built_input_size, count_macs, count_params

from _timing import (check_device, check_warm, escape_unencodable_output, interleaved_rounds, make_step, run_context,
                     run_header)

# The README's architecture survey: (architecture, timm model, create kwargs). Outcomes are planned on the meta device
# (full size, nothing allocated); tests/test_slify.py checks the README table against them.
SLIFY_SURVEY: List[Tuple[str, str, Dict[str, Any]]] = [
    ('ViT', 'vit_tiny_patch16_224', {}),
    ('ViT, MAP pooling head', 'vit_small_patch16_224', dict(global_pool='map')),
    ('DeiT', 'deit_small_patch16_224', {}),
    ('DeiT, distilled', 'deit_tiny_distilled_patch16_224', {}),
    ('DeiT III', 'deit3_small_patch16_224', {}),
    ('ViT + registers', 'vit_little_patch16_reg4_gap_256', {}),
    ('FlexiViT', 'flexivit_small', {}),
    ('PiT', 'pit_xs_224', {}),
    ('Swin', 'swin_tiny_patch4_window7_224', {}),
    ('CaiT', 'cait_xxs24_224', {}),
    ('ViT + RoPE', 'vit_medium_patch16_rope_reg1_gap_256', {}),
    ('ViT, relative position', 'vit_relpos_small_patch16_224', {}),
    ('EVA-02', 'eva02_tiny_patch14_224', {}),
    ('BEiT', 'beit_base_patch16_224', {}),
    ('Swin V2', 'swinv2_tiny_window8_256', {}),
    ('XCiT', 'xcit_nano_12_p16_224', {}),
    ('LeViT', 'levit_128s', {}),
    ('MViTv2', 'mvitv2_tiny', {}),
    ('ConvNeXt', 'convnext_atto', {}),
]


def variants_of(name: str) -> Dict[str, Dict[str, object]]:
    """Configurations timed against each other: the SL model, then the other Table 2 rows of its family (baseline
    and, for pooling families, SL w/o Spool)."""
    rows = VARIANTS[family_of(name)]
    return {'sl': dict(rows['sl']), **{k: dict(v) for k, v in rows.items() if k != 'sl'}}


def variant_kwargs(name: str, model_kwargs: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
    """Each variant's kwargs: the user's ``model_kwargs`` under the variant's switches (:func:`with_switches`: the
    baseline has every switch off, also where ``lsa_mask=True`` is given)."""
    return {key: with_switches(model_kwargs, kw) for key, kw in variants_of(name).items()}


def variant_label(key: str, kwargs: Dict[str, Any]) -> str:
    """How a row names the Table 2 variant ``key`` built with ``kwargs`` (the user's and the variant's): the key
    (``sl``, ``sl_no_spool``) while they leave its switches as the key says, else what they make it (``--model-kwargs
    lsa=False``: ``S``, not ``sl``). Any other key (``slify``) is kept."""
    if key not in VARIANT_LABELS:
        return key
    made = switches_label(kwargs)
    return key if made == VARIANT_LABELS[key] else made


def size_kwargs(args: argparse.Namespace) -> Dict[str, Any]:
    """What every timed model is built with for ``--img-size`` (nothing without it): the models take that input, and
    its MACs are counted at it."""
    return {} if args.img_size is None else dict(img_size=args.img_size)


def check_models(args: argparse.Namespace) -> None:
    """Before any measurement: every ``--models`` name is an ``sl_`` model whose variants build with
    ``--model-kwargs`` (on the meta device), none of them the baseline itself, every ``--slify`` base is a timm model
    that converts, and ``--device`` is there.

    Raises:
        ValueError: naming the model, the kwargs (or the device) and what is allowed.
    """
    check_device(args.device)
    given = ' '.join(f'{k}={v}' for k, v in args.model_kwargs.items())
    with_kwargs = f' with --model-kwargs {given}' if given else ''
    if args.slify_survey and (args.img_size is not None or 'img_size' in args.model_kwargs):
        raise ValueError("--slify-survey times each architecture at the size it is built for (the README's table); "
                         "allowed: --img-size / --model-kwargs img_size without it")
    if args.img_size is not None and args.model_kwargs.get('img_size', args.img_size) != args.img_size:
        raise ValueError(f'--img-size {args.img_size} and --model-kwargs img_size={args.model_kwargs["img_size"]} '
                         f'name two input sizes; allowed: one of them')
    if getattr(args, 'timm_benchmark', None) and args.model_kwargs.get('in_chans', 3) != 3:
        raise ValueError(f"--timm-benchmark with --model-kwargs in_chans={args.model_kwargs['in_chans']}: timm's "
                         f"benchmark.py builds every model with in_chans=3; allowed: one of them")
    names = timm.list_models('sl_*')
    for name in args.models:
        if name not in names or family_of(name) not in VARIANTS:
            raise ValueError(f'--models {name} is not an sl_ model (no baseline to time it against); allowed: '
                             f'{", ".join(names)} (timm models: --slify NAME)')
        for key, kwargs in variant_kwargs(name, {**args.model_kwargs, **size_kwargs(args)}).items():
            try:
                with torch.device('meta'):
                    timm.create_model(name, **kwargs)
                label = switches_label(kwargs)
            except BUILD_ERRORS as e:
                raise ValueError(f'{name}{with_kwargs} cannot be built ({key} variant): {build_failure(e)}') from e
            if key != 'base' and label == 'baseline':
                raise ValueError(f'--model-kwargs {given} make the {key} variant of {name} its own baseline, so its '
                                 f'ratio would time the baseline against itself; allowed: kwargs that keep SPT or '
                                 f'LSA on')
    for base in args.slify:
        try:
            with torch.device('meta'):
                slify(timm.create_model(base, **size_kwargs(args)), **args.model_kwargs)
        except (SlifyError, *BUILD_ERRORS) as e:
            raise ValueError(f'--slify {base}{with_kwargs}: {build_failure(e)}') from e


def bench_variants(name: str, models: Dict[str, torch.nn.Module], size: Tuple[int, int, int], mode: str,
                   args: argparse.Namespace, labels: Optional[Dict[str, str]] = None) -> List[Dict[str, object]]:
    """Time ``models`` (one keyed 'base') in interleaved rounds; one row per non-baseline model, relative to base,
    named by ``labels`` (key -> label; default: the key)."""
    device = torch.device(args.device)
    batch = torch.randn(args.batch_size, *size, device=device)
    steps = {}
    for key, model in models.items():
        model.to(device)
        steps[key] = make_step(model, mode, batch, args.amp)
    elapsed = interleaved_rounds(steps, args.repeats, args.iters, args.warmup, device)
    keys = list(models)
    base_macs = count_macs(models['base'], size)
    rows = []
    for key in keys:
        if key == 'base':
            continue
        ratios = [b / s for b, s in zip(elapsed['base'], elapsed[key])]
        rows.append({
            'model': name, 'variant': (labels or {}).get(key, key), 'mode': mode, 'batch': args.batch_size,
            'input': 'x'.join(map(str, size)),
            'img_s': args.iters * args.batch_size / statistics.median(elapsed[key]),
            'base_img_s': args.iters * args.batch_size / statistics.median(elapsed['base']),
            'ratio': statistics.median(ratios), 'ratio_min': min(ratios), 'ratio_max': max(ratios),
            'macs_ratio': base_macs / count_macs(models[key], size),
            'params_m': count_params(models[key]) / 1e6, 'base_params_m': count_params(models['base']) / 1e6,
            # what the CSV alone would not say: the models are these, not the registered configurations
            'model_kwargs': ' '.join(f'{k}={v}' for k, v in args.model_kwargs.items()),
            'device': args.device, 'amp': args.amp, **run_context(args.device),
        })
    return rows


def bench_model(name: str, mode: str, args: argparse.Namespace) -> List[Dict[str, object]]:
    """Every variant of the sl_ model ``name`` (SL, baseline, SL w/o Spool) timed side by side."""
    variants = variant_kwargs(name, {**args.model_kwargs, **size_kwargs(args)})
    models = {key: timm.create_model(name, **kw) for key, kw in variants.items()}
    size = built_input_size(models['base'])  # the channels and size --model-kwargs / --img-size build it for
    labels = {key: variant_label(key, kw) for key, kw in variants.items()}
    return bench_variants(name, models, size, mode, args, labels)


def bench_slify(base: str, mode: str, args: argparse.Namespace,
                create_kwargs: Optional[Dict[str, Any]] = None) -> List[Dict[str, object]]:
    """The timm model ``base`` against ``slify`` of a copy of it (``--model-kwargs`` are the SL switches)."""
    model = timm.create_model(base, **{**(create_kwargs or {}), **size_kwargs(args)})
    models = {'base': model, 'slify': slify(copy.deepcopy(model), **args.model_kwargs)}
    size = built_input_size(model)
    made = variant_label('sl', args.model_kwargs)  # 'sl', or what the switches make it: 'ST' for lsa_mask=False
    return bench_variants(base, models, size, mode, args, {'slify': 'slify' if made == 'sl' else f'slify {made}'})


def slify_survey_rows() -> List[Dict[str, str]]:
    """Outcome of ``slify`` (default switches) for every :data:`SLIFY_SURVEY` architecture, planned on meta."""
    rows = []
    for arch, name, kwargs in SLIFY_SURVEY:
        with torch.device('meta'):
            model = timm.create_model(name, **kwargs)
        plan = plan_slify(model, SlArgs(), model_name=name)
        if plan.ok:
            kinds = {'spt': 'SPT', 'lsa': 'LSA', 'spool': 'Spool'}
            summary = plan.summary()
            outcome = 'converts: ' + ', '.join(f'{label} ×{summary[k]}' for k, label in kinds.items() if k in summary)
        else:
            outcome = 'refused: ' + str(SlifyError(name, list(plan.reasons))).split(': ', 1)[1]
        rows.append({'arch': arch, 'model': name, 'kwargs': kwargs, 'outcome': outcome, 'ok': plan.ok})
    return rows


def slify_survey_table(args: argparse.Namespace, header: str, path: Optional[str] = None) -> str:
    """The README table: outcome per architecture, and the measured ratio for those that convert (written to
    ``path`` row by row, so a long run shows its progress)."""
    modes = ', '.join(args.modes)
    lines = [f'| architecture | timm model | `slify` | SL / baseline throughput ({modes}) | MACs, baseline / SL |',
             '|---|---|---|---|---|']
    for row in slify_survey_rows():
        ratio, macs = '—', '—'
        if row['ok']:
            timed = [bench_slify(row['model'], mode, args, row['kwargs'])[0] for mode in args.modes]
            ratio = ' / '.join(f"{t['ratio']:.2f} ({t['ratio_min']:.2f}-{t['ratio_max']:.2f})" for t in timed)
            macs = f"{timed[0]['macs_ratio']:.3f}"
            print(f"{row['model']}: {ratio}", file=sys.stderr, flush=True)
        kwargs = ''.join(f', {k}={v!r}' for k, v in row['kwargs'].items())
        lines.append(f"| {row['arch']}{kwargs} | `{row['model']}` | {row['outcome']} | {ratio} | {macs} |")
        if path:
            text = header + '\n\n' + '\n'.join(lines) + '\n'
            write_atomically(path, lambda file: file.write_text(text, encoding='utf-8'))
    return header + '\n\n' + '\n'.join(lines) + '\n'


def timm_benchmark_table(args: argparse.Namespace) -> str:
    """Run timm's benchmark.py on every variant, built as the rows above are (:func:`variant_kwargs`, ``--img-size``),
    and tabulate the ratios."""
    import json
    import subprocess
    lines = ['| model | variant | infer img/s | train img/s | infer ratio | train ratio |', '|---|---|---|---|---|---|']
    for name in args.models:
        rates, labels = {}, {}
        for key, kwargs in variant_kwargs(name, {**args.model_kwargs, **size_kwargs(args)}).items():
            labels[key] = variant_label(key, kwargs)
            kv = [f'{k}={v}' for k, v in kwargs.items()]
            size = ['--img-size', str(kwargs['img_size'])] if 'img_size' in kwargs else []
            cmd = [sys.executable, args.timm_benchmark, '--model', name, '--bench', 'both', '-b', str(args.batch_size),
                   '--device', args.device, '--num-bench-iter', str(max(5, args.iters * args.repeats)),
                   '--num-warm-iter', str(args.warmup), *size] + (['--model-kwargs', *kv] if kv else [])
            if args.amp:  # the dtype of make_step's autocast
                cmd += ['--amp', '--amp-dtype', 'bfloat16' if args.device == 'cpu' else 'float16']
            # benchmark.py has no threads option; torch in its process reads them from OMP_NUM_THREADS
            env = None if args.threads is None else {**os.environ, 'OMP_NUM_THREADS': str(args.threads)}
            done = subprocess.run(cmd, capture_output=True, text=True, env=env)
            out = done.stdout
            if done.returncode or '--result' not in out:
                last = (done.stderr.strip().splitlines() or ['no output'])[-1]
                raise SystemExit(f"throughput.py: timm's benchmark.py {args.timm_benchmark} failed on {name} "
                                 f"({labels[key]} variant, exit status {done.returncode}): {last}")
            result = json.loads(out[out.index('{', out.index('--result')):])
            rates[key] = (result['infer_samples_per_sec'], result['train_samples_per_sec'])
        for key, (infer, train) in rates.items():
            lines.append(f"| {name} | {labels[key]} | {infer:.1f} | {train:.1f} | {infer / rates['base'][0]:.3f} | "
                         f"{train / rates['base'][1]:.3f} |")
    return '\n'.join(lines)


def to_markdown(rows: List[Dict[str, object]]) -> str:
    lines = ['| model | variant | mode | batch | input | img/s | base img/s | ratio to base (median, min-max) | '
             'MACs, base / variant |', '|---|---|---|---|---|---|---|---|---|']
    for r in rows:
        lines.append(
            f"| {r['model']} | {r['variant']} | {r['mode']} | {r['batch']} | {r['input']} | {r['img_s']:.1f} | "
            f"{r['base_img_s']:.1f} | {r['ratio']:.3f} ({r['ratio_min']:.3f}-{r['ratio_max']:.3f}) | "
            f"{r['macs_ratio']:.3f} |")
    return '\n'.join(lines)


def parse_args(argv: List[str]) -> argparse.Namespace:
    from timm.utils import ParseKwargs
    from timm_sl.tools.arg_types import non_negative_int, output_file, positive_int, timm_benchmark
    from timm_sl.tools.plot import OUT_SUFFIXES, check_chart_out, figure_path
    p = OneLineParser(description=__doc__.splitlines()[0])
    p.add_argument('--models', nargs='*', default=[
        'sl_vit_32', 'sl_vit_64', 'sl_pit_64', 'sl_swin_64', 'sl_cait_64', 'sl_t2t_64', 'sl_vit_tiny'])
    p.add_argument('--modes', nargs='+', default=['infer', 'train'], choices=['infer', 'train'])
    p.add_argument('-b', '--batch-size', type=positive_int, default=32)
    p.add_argument('--img-size', type=positive_int, default=None,
                   help='build every timed model for this input size; default: the size each is built for')
    p.add_argument('--device', default='cpu')
    p.add_argument('--amp', action='store_true', help='autocast: bfloat16 on CPU, float16 on CUDA')
    p.add_argument('--repeats', type=positive_int, default=6, help='interleaved rounds per pair')
    p.add_argument('--iters', type=positive_int, default=5, help='steps per round')
    p.add_argument('--warmup', type=non_negative_int, default=2,
                   help='untimed steps before the rounds (0: with 3 repeats or more)')
    p.add_argument('--threads', type=positive_int, default=None, help='torch CPU threads')
    p.add_argument('--model-kwargs', nargs='*', default={}, action=ParseKwargs,
                   help='model kwargs of the sl_ models; the SL switches of --slify / --slify-survey')
    p.add_argument('--slify', nargs='*', default=[], metavar='BASE',
                   help='also time timm_sl.slify of these timm models against the models themselves')
    p.add_argument('--slify-survey', default=None, metavar='FILE', type=output_file,
                   help="write the README's slify architecture table (outcome + measured ratios) to FILE")
    p.add_argument('--csv', default=None, type=output_file, help='also write the rows to this CSV file')
    p.add_argument('--markdown', default=None, type=output_file, help='also write the table to this Markdown file')
    p.add_argument('--plot', default=None, type=figure_path,
                   help=f'also draw the ratios to this chart file ({", ".join(OUT_SUFFIXES)})')
    p.add_argument('--overwrite', action='store_true',
                   help='replace a file at --plot, --csv, --markdown or --slify-survey that is not a timm-sl chart '
                        'or a table of this script (one is always replaced)')
    p.add_argument('--timm-benchmark', default=None, metavar='BENCHMARK_PY', type=timm_benchmark,
                   help="also measure every variant with timm's own benchmark.py (path to it), ratios alike")
    args = p.parse_args(argv)
    try:  # a wrong name or kwarg, or a cold first round: refused before the first model is timed
        check_warm(args.repeats, args.warmup, '--repeats')
        check_models(args)
    except ValueError as e:
        p.error(str(e))
    if args.plot:  # before the measurements (a missing folder, an extension matplotlib cannot write: figure_path)
        try:  # a user's file there is kept
            check_chart_out(args.plot, args.overwrite, option='--plot')
        except ValueError as e:
            p.error(str(e))
    for option, dest in (('--plot', 'plot'), ('--csv', 'csv'), ('--markdown', 'markdown'),
                         ('--slify-survey', 'slify_survey')):  # an output over the script this run reads
        path = getattr(args, dest)
        if path and args.timm_benchmark and os.path.realpath(path) == os.path.realpath(args.timm_benchmark):
            p.error(f'{option} {path} is the benchmark.py --timm-benchmark runs: it is kept, even with --overwrite; '
                    f'allowed: another file to write')
    try:
        check_outputs(args, {'plot': ('--plot', None), 'csv': ('--csv', CSV_HEAD), 'markdown': ('--markdown', HEADER),
                             'slify_survey': ('--slify-survey', HEADER)})
    except ValueError as e:
        p.error(str(e))
    return args


# how the first line of a table this script (or peers.py) writes begins: a file that begins otherwise is a user's
HEADER, CSV_HEAD = 'device: ', 'model,variant,mode,'


def check_outputs(args: argparse.Namespace, outputs: Dict[str, Tuple[str, Optional[str]]]) -> None:
    """Refuse, before any measurement, two options (``outputs``: dest -> (option, how a table of ours begins, None
    where another check keeps a user's file)) that name one file, where the later table would replace the earlier
    without a word; and, without ``args.overwrite``, a file there that begins otherwise (a user's, kept).

    Raises:
        ValueError: naming the option(s), the file and what is allowed.
    """
    import os
    from timm_sl.tools.errors import shown
    seen: Dict[str, str] = {}
    for dest, (option, head) in outputs.items():
        path = getattr(args, dest, None)
        if not path:
            continue
        same = seen.setdefault(os.path.realpath(path), option)
        if same != option:
            raise ValueError(f'{option} {shown(path)} is the file {same} writes too: one would replace the other; '
                             f'allowed: a file of its own for each')
        if head is None or args.overwrite or not os.path.isfile(path):
            continue
        with open(path, 'rb') as f:
            first = f.read(len(head.encode()))
        if first != head.encode():
            raise ValueError(f'{option} {shown(path)} is a file this script did not write (it does not begin with '
                             f'{head.strip()!r}): it is kept; allowed: a new file name, a table of an earlier run, or '
                             f'--overwrite to replace it')


def check_something_to_time(args: argparse.Namespace) -> None:
    """Refuse a run with no model to time (``--models`` naming none, no ``--slify``) that asks for a table of rows,
    which would be left unwritten without a word, or for nothing at all (``--slify-survey`` alone is a survey).

    Raises:
        ValueError: naming the options and what is allowed.
    """
    if args.models or args.slify:
        return
    given = [option for option, dest in (('--csv', 'csv'), ('--markdown', 'markdown'), ('--plot', 'plot'),
                                         ('--timm-benchmark', 'timm_benchmark')) if getattr(args, dest)]
    if given:
        raise ValueError(f'{", ".join(given)}: no row to write (--models names none, no --slify); allowed: '
                         f'--models NAME ... or --slify BASE ... beside it')
    if not args.slify_survey:
        raise ValueError('nothing to time: --models names none, and no --slify or --slify-survey; allowed: '
                         '--models NAME ..., --slify BASE ..., --slify-survey FILE')


def main(argv: List[str] = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    escape_unencodable_output()
    try:  # before the survey or any model is timed
        check_something_to_time(args)
    except ValueError as e:
        print(f'throughput.py: error: {e}', file=sys.stderr)
        return 2
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    header = run_header(args.device, args.amp, f'batch {args.batch_size}')
    if args.model_kwargs:  # the rows are of these models, not of the registered configurations
        header += '; model kwargs ' + ' '.join(f'{k}={v}' for k, v in args.model_kwargs.items())
    if args.slify_survey:
        slify_survey_table(args, header, args.slify_survey)
    rows = []
    jobs = [(name, bench_model) for name in args.models] + [(base, bench_slify) for base in args.slify]
    for name, bench in jobs:
        for mode in args.modes:
            for row in bench(name, mode, args):
                rows.append(row)
                print(f"{name} {row['variant']} {mode}: ratio to base = {row['ratio']:.3f}",
                      file=sys.stderr, flush=True)
    if not rows:
        return 0
    table = to_markdown(rows)
    print(header)
    print(table)
    if args.markdown:
        write_atomically(args.markdown, lambda file: file.write_text(header + '\n\n' + table + '\n', encoding='utf-8'))
    if args.plot:
        from timm_sl.tools.plot import plot_ratios
        plot_ratios([f"{r['model']} {r['variant']} {r['mode']}" for r in rows], [r['ratio'] for r in rows],
                    [r['ratio_min'] for r in rows], [r['ratio_max'] for r in rows], [r['macs_ratio'] for r in rows],
                    args.plot, title=header)
    if args.csv:
        def write_csv(file):
            with open(file, 'w', newline='', encoding='utf-8') as f:
                writer = csv.DictWriter(f, fieldnames=list(rows[0]))
                writer.writeheader()
                writer.writerows(rows)
        write_atomically(args.csv, write_csv)
    if args.timm_benchmark:  # last: its failure (one line) leaves the measurements above written
        print('\nThe same variants through timm\'s benchmark.py (one run each, no interleaving):')
        print(timm_benchmark_table(args))
    return 0


if __name__ == '__main__':
    sys.exit(main())
