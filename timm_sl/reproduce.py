"""``timm-sl reproduce``: the paper's Table 2 rows, trained by timm's own ``train.py``, in one resumable command.

Each run (family x Table 2 row x seed) is one ``train.py`` process (``torchrun`` when ``--nproc`` > 1) with the
dataset's recipe from ``recipes/``, writing into ``OUT/runs/<name>``. A run that finished is skipped (a ``done.json``
marker written after train.py exits cleanly, or a ``summary.csv`` that reached the last epoch); an interrupted run is
resumed from its ``last.pth.tar``. The report (``OUT/report.md``, ``top1.png``, ``curves.png``, ``results.json``)
holds every finished run, and lists crashed runs as failed.

Argument setup (:func:`add_reproduce_args`) and planning import neither torch nor timm.
"""
import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .paper import DATASETS, FAMILIES, VARIANT_LABELS, VARIANTS, learning_rate, model_name, paper_top1
from .runs import DONE_MARKER
from .train_args import find_train_script, read_summary_rows, summarize

__all__ = ['Run', 'plan_runs', 'recipe_path', 'planned_epochs', 'train_command',
           'run_state', 'reproduce', 'aggregate', 'report_table', 'write_report', 'add_reproduce_args', 'run_from_args']

LOG_NAME = 'train.log'


@dataclass
class Run:
    """One train.py run: a family's Table 2 row with one seed."""
    family: str
    variant: str
    seed: int
    model: str
    model_kwargs: Dict[str, Any]
    out_dir: Path

    @property
    def name(self) -> str:
        return f'{self.family}-{self.variant}-s{self.seed}'

    @property
    def lr(self) -> float:
        return learning_rate(self.family)


@dataclass
class Outcome:
    """What happened to a run in this invocation: 'done' (now or before), 'failed', 'interrupted' or 'not run'."""
    run: Run
    status: str
    message: str = ''
    seconds: float = 0.
    summary: Optional[Dict[str, Any]] = None
    curve: List[Tuple[int, float]] = field(default_factory=list)


def _check_choice(kind: str, value: str, allowed: Sequence[str]) -> None:
    if value not in allowed:
        raise ValueError(f'unknown {kind} {value!r}; allowed: {", ".join(allowed)}')


def recipe_path(dataset: str) -> Path:
    """The recipe YAML of a dataset: shipped in the wheel as ``timm_sl/recipes``, or ``recipes/`` of a checkout."""
    _check_choice('dataset', dataset, list(DATASETS))
    name = DATASETS[dataset][0]
    here = Path(__file__).resolve().parent
    for folder in (here / 'recipes', here.parent / 'recipes'):
        if (folder / name).is_file():
            return folder / name
    raise FileNotFoundError(f'recipe {name} not found in {here / "recipes"} or {here.parent / "recipes"}')


def plan_runs(dataset: str, families: Sequence[str], seeds: Sequence[int], output: Path) -> List[Run]:
    """Every Table 2 row of ``families`` for each seed, family by family, baseline first.

    Raises:
        ValueError: an unknown family or dataset (named, with what is allowed), or no seeds.
    """
    _check_choice('dataset', dataset, list(DATASETS))
    for family in families:
        _check_choice('family', family, FAMILIES)
    if not seeds:
        raise ValueError('no seeds given; pass at least one, e.g. --seeds 0')
    runs = []
    for family in dict.fromkeys(families):
        for variant, kwargs in VARIANTS[family].items():
            for seed in dict.fromkeys(seeds):
                run = Run(family, variant, seed, model_name(family, dataset), dict(kwargs), Path())
                run.out_dir = Path(output) / 'runs' / run.name
                runs.append(run)
    return runs


def _last_value(args: Sequence[str], flag: str) -> Optional[str]:
    """The value of the last ``flag VALUE`` / ``flag=VALUE`` in ``args`` (argparse keeps the last)."""
    value = None
    for i, arg in enumerate(args):
        if arg == flag and i + 1 < len(args):
            value = args[i + 1]
        elif arg.startswith(flag + '='):
            value = arg.split('=', 1)[1]
    return value


def planned_epochs(recipe: Path, extra_args: Sequence[str]) -> int:
    """Epochs a run trains: ``--epochs`` among the extra train.py arguments, else the recipe's."""
    value = _last_value(extra_args, '--epochs')
    if value is not None:
        return int(value)
    import yaml
    return int(yaml.safe_load(Path(recipe).read_text()).get('epochs', 300))


def train_command(run: Run, script: Path, data_dir: str, recipe: Path, extra_args: Sequence[str] = (),
                  nproc: int = 1, resume: Optional[Path] = None, python: str = sys.executable) -> List[str]:
    """The train.py command line of a run; the extra arguments come last, so they override the recipe and the plan."""
    launcher = [python] if nproc == 1 else [python, '-m', 'torch.distributed.run', '--standalone',
                                            '--nproc_per_node', str(nproc)]
    cmd = [*launcher, str(script), '--data-dir', str(data_dir), '--config', str(recipe), '--model', run.model]
    if run.model_kwargs:
        cmd += ['--model-kwargs', *(f'{k}={v}' for k, v in run.model_kwargs.items())]
    cmd += ['--lr', f'{run.lr:g}', '--seed', str(run.seed),
            '--output', str(run.out_dir.parent), '--experiment', run.name]
    if resume is not None:
        cmd += ['--resume', str(resume)]
    return cmd + list(extra_args)


def run_state(run: Run, epochs: int) -> str:
    """'done' (marker for at least ``epochs``, or summary.csv reached the last epoch), 'resume' (a last.pth.tar to
    continue from) or 'new'."""
    marker = run.out_dir / DONE_MARKER
    if marker.is_file() and json.loads(marker.read_text()).get('epochs', 0) >= epochs:
        return 'done'
    summary = run.out_dir / 'summary.csv'
    if summary.is_file():
        try:
            rows = read_summary_rows(summary)
        except ValueError:
            rows = []
        if rows and int(rows[-1]['epoch']) + 1 >= epochs:
            return 'done'
    return 'resume' if (run.out_dir / 'last.pth.tar').is_file() else 'new'


def _last_line(log: Path) -> str:
    """The last non-blank line of a log (a crash's exception message)."""
    lines = log.read_text(errors='replace').split('\n') if log.is_file() else []
    lines = [line.strip() for line in lines if line.strip()]
    return lines[-1] if lines else 'no output'


def _format_seconds(seconds: float) -> str:
    seconds = int(round(seconds))
    return f'{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}'


def _collect(outcome: Outcome) -> Outcome:
    summary = outcome.run.out_dir / 'summary.csv'
    if summary.is_file():
        try:
            rows = read_summary_rows(summary)
            outcome.summary = summarize(summary, rows)
            outcome.curve = [(int(r['epoch']), r['eval_top1']) for r in rows]
        except ValueError:
            pass
    return outcome


def reproduce(
        runs: Sequence[Run],
        script: Path,
        data_dir: str,
        recipe: Path,
        extra_args: Sequence[str] = (),
        nproc: int = 1,
        echo=print,
        env: Optional[Dict[str, str]] = None,
) -> List[Outcome]:
    """Run (or skip / resume) every planned run in order; a crash is recorded and the next run goes on.

    Progress goes to ``echo`` as ``run i/N: name, ETA h:mm:ss``; train.py's own output goes to the run's train.log.
    """
    epochs = planned_epochs(recipe, extra_args)
    outcomes, durations = [], []
    for i, run in enumerate(runs, 1):
        state = run_state(run, epochs)
        if state == 'done':
            outcomes.append(_collect(Outcome(run, 'done', 'finished earlier')))
            echo(f'run {i}/{len(runs)}: {run.name} finished earlier, skipped')
            continue
        todo = sum(run_state(r, epochs) != 'done' for r in runs[i - 1:])
        eta = _format_seconds(statistics.fmean(durations) * todo) if durations else 'unknown until a run finishes'
        resume = run.out_dir / 'last.pth.tar' if state == 'resume' else None
        echo(f'run {i}/{len(runs)}: {run.name}' + (' (resuming)' if resume else '') + f', ETA {eta}')
        run.out_dir.mkdir(parents=True, exist_ok=True)
        if resume is None and (run.out_dir / 'summary.csv').exists():
            (run.out_dir / 'summary.csv').unlink()  # a run restarted from scratch must not mix with an old summary
        cmd = train_command(run, script, data_dir, recipe, extra_args, nproc=nproc, resume=resume)
        (run.out_dir / 'command.txt').write_text(shlex.join(cmd) + '\n')
        log = run.out_dir / LOG_NAME
        start = time.monotonic()
        try:
            with log.open('a') as f:
                code = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, env=env).returncode
        except KeyboardInterrupt:  # Ctrl-C reaches train.py too; keep what finished, report, resume next time
            echo(f'run {i}/{len(runs)}: {run.name} interrupted; run the same command again to resume')
            outcomes.append(_collect(Outcome(run, 'interrupted', 'interrupted', time.monotonic() - start)))
            outcomes += [_collect(Outcome(r, 'not run')) for r in runs[i:]]
            break
        seconds = time.monotonic() - start
        if code != 0:
            message = f'train.py exited with {code}: {_last_line(log)} (log: {log})'
            echo(f'run {i}/{len(runs)}: {run.name} failed: {message}')
            outcomes.append(_collect(Outcome(run, 'failed', message, seconds)))
            continue
        durations.append(seconds)
        (run.out_dir / DONE_MARKER).write_text(json.dumps(
            dict(epochs=epochs, seconds=round(seconds, 1), command=cmd, family=run.family, variant=run.variant,
                 seed=run.seed, model=run.model, model_kwargs=run.model_kwargs), indent=1))
        outcomes.append(_collect(Outcome(run, 'done', seconds=seconds)))
    return outcomes


def _mean_std(values: Sequence[float]) -> Tuple[float, Optional[float]]:
    return statistics.fmean(values), (statistics.stdev(values) if len(values) > 1 else None)


def aggregate(outcomes: Sequence[Outcome], dataset: str) -> List[Dict[str, Any]]:
    """One row per (family, Table 2 row): best top-1 mean / std over the finished seeds, SL - baseline delta, and
    the paper's top-1 and delta for the dataset. Rows without a finished run have ``mean=None``."""
    groups: Dict[Tuple[str, str], List[Outcome]] = {}
    for outcome in outcomes:
        groups.setdefault((outcome.run.family, outcome.run.variant), []).append(outcome)
    rows = []
    for (family, variant), members in groups.items():
        values = [o.summary['best_top1'] for o in members if o.status == 'done' and o.summary]
        mean, std = _mean_std(values) if values else (None, None)
        rows.append(dict(family=family, variant=variant, model=members[0].run.model,
                         model_kwargs=members[0].run.model_kwargs, seeds=len(values), runs=len(members),
                         mean=mean, std=std, paper=paper_top1(family, variant, dataset)))
    by_key = {(r['family'], r['variant']): r for r in rows}
    for row in rows:
        base = by_key.get((row['family'], 'base'))
        paper_base = paper_top1(row['family'], 'base', dataset)
        row['delta'] = None if row['variant'] == 'base' or row['mean'] is None or base is None or base['mean'] is None \
            else row['mean'] - base['mean']
        row['paper_delta'] = None if row['variant'] == 'base' or row['paper'] is None or paper_base is None \
            else row['paper'] - paper_base
    return rows


def _fmt(value: Optional[float], signed: bool = False) -> str:
    if value is None:
        return '-'
    return f'{value:+.2f}' if signed else f'{value:.2f}'


def report_table(rows: Sequence[Dict[str, Any]], dataset: str) -> str:
    """The Markdown table of :func:`aggregate` rows."""
    lines = [f'| family | row | model | seeds | best top-1 (%) | SL − baseline | paper ({dataset}) | paper Δ |',
             '|---|---|---|---|---|---|---|---|']
    for r in rows:
        model = ' '.join([f'`{r["model"]}`'] + [f'{k}={v}' for k, v in r['model_kwargs'].items()])
        top1 = '-' if r['mean'] is None else _fmt(r['mean']) + (f' ± {r["std"]:.2f}' if r['std'] is not None else '')
        lines.append(f'| {r["family"]} | {VARIANT_LABELS[r["variant"]]} | {model} | '
                     f'{r["seeds"]}/{r["runs"]} | {top1} | {_fmt(r["delta"], True)} | {_fmt(r["paper"])} | '
                     f'{_fmt(r["paper_delta"], True)} |')
    return '\n'.join(lines)


def _plot_top1(rows: Sequence[Dict[str, Any]], path: Path, dataset: str) -> None:
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    measured = [r for r in rows if r['mean'] is not None]
    deltas = [r for r in rows if r['variant'] != 'base']
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    labels = [f'{r["family"]}\n{VARIANT_LABELS[r["variant"]]}' for r in measured]
    left.bar(range(len(measured)), [r['mean'] for r in measured], yerr=[r['std'] or 0 for r in measured], capsize=3,
             color=['tab:gray' if r['variant'] == 'base' else 'tab:blue' for r in measured])
    left.set_xticks(range(len(measured)), labels, fontsize=8)
    left.set_ylabel('best top-1 (%)')
    if measured:
        low = min(r['mean'] - (r['std'] or 0) for r in measured)
        left.set_ylim(max(0., low - 5), min(100., max(r['mean'] + (r['std'] or 0) for r in measured) + 2))
    left.set_title(f'measured best top-1, mean ± std over seeds ({dataset})')
    x = range(len(deltas))
    right.bar([i - 0.2 for i in x], [r['delta'] or 0. for r in deltas], width=0.4, label='measured')
    right.bar([i + 0.2 for i in x], [r['paper_delta'] or 0. for r in deltas], width=0.4, label=f'paper ({dataset})')
    right.axhline(0, color='black', linewidth=0.8)
    right.set_xticks(list(x), [f'{r["family"]}\n{VARIANT_LABELS[r["variant"]]}' for r in deltas], fontsize=8)
    right.set_ylabel('top-1 gain over baseline (points)')
    right.set_title('SL − baseline')
    right.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _plot_curves(outcomes: Sequence[Outcome], path: Path) -> None:
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    families = list(dict.fromkeys(o.run.family for o in outcomes))
    fig, axes = plt.subplots(1, max(1, len(families)), figsize=(5 * max(1, len(families)), 4), squeeze=False)
    colors = {'base': 'tab:gray', 'sl_no_spool': 'tab:orange', 'sl': 'tab:blue'}
    for ax, family in zip(axes[0], families):
        shown = set()
        for o in outcomes:
            if o.run.family != family or not o.curve:
                continue
            label = VARIANT_LABELS[o.run.variant] if o.run.variant not in shown else None
            shown.add(o.run.variant)
            ax.plot([e + 1 for e, _ in o.curve], [t for _, t in o.curve], marker='o', markersize=3,
                    color=colors[o.run.variant], label=label, linestyle='--' if o.status == 'failed' else '-')
        ax.set_title(f'{family}: validation top-1 per epoch')
        ax.set_xlabel('epoch')
        ax.set_ylabel('top-1 (%)')
        ax.grid(alpha=0.3)
        if shown:
            ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_report(outcomes: Sequence[Outcome], dataset: str, output: Path, command: str = '') -> Path:
    """``report.md`` (table, failed runs, per-run results), ``top1.png``, ``curves.png`` and ``results.json``."""
    output = Path(output)
    output.mkdir(parents=True, exist_ok=True)
    rows = aggregate(outcomes, dataset)
    lines = [f'# Table 2 reproduction: {dataset}', '']
    if command:
        lines += ['```bash', command, '```', '']
    lines += [report_table(rows, dataset), '',
              'Best top-1 over epochs (as the paper reports), mean ± sample std over the finished seeds; '
              'SL − baseline: difference of the means. Paper: Table 2.', '',
              '![top-1](top1.png)', '', '![learning curves](curves.png)', '']
    failed = [o for o in outcomes if o.status == 'failed']
    if failed:
        lines += ['## Failed runs', ''] + [f'- {o.run.name}: {o.message}' for o in failed] + ['']
    lines += ['## Runs', '', '| run | status | best top-1 (%) | best epoch | epochs | minutes |',
              '|---|---|---|---|---|---|']
    for o in outcomes:
        s = o.summary or {}
        lines.append(f'| {o.run.name} | {o.status} | {_fmt(s.get("best_top1"))} | {s.get("best_epoch", "-")} | '
                     f'{s.get("epochs", "-")} | {o.seconds / 60:.1f} |')
    report = output / 'report.md'
    report.write_text('\n'.join(lines) + '\n')
    _plot_top1(rows, output / 'top1.png', dataset)
    _plot_curves(outcomes, output / 'curves.png')
    (output / 'results.json').write_text(json.dumps(dict(dataset=dataset, rows=rows, runs=[
        dict(name=o.run.name, family=o.run.family, variant=o.run.variant, seed=o.run.seed, model=o.run.model,
             model_kwargs=o.run.model_kwargs, status=o.status, message=o.message, dir=str(o.run.out_dir),
             summary=o.summary) for o in outcomes]), indent=1))
    return report


def add_reproduce_args(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``timm-sl reproduce`` (no torch import)."""
    parser.add_argument('--data-dir', required=True, help="dataset root as train.py's --data-dir takes it")
    parser.add_argument('--dataset', required=True, help=f'recipe to use: {", ".join(DATASETS)}')
    parser.add_argument('--families', nargs='+', default=list(FAMILIES), help=f'default: {" ".join(FAMILIES)}')
    parser.add_argument('--seeds', nargs='+', type=int, default=[0], help='seeds per row (default: 0)')
    parser.add_argument('--out', default='reproduce',
                        help='output folder: runs/, report.md, PNGs (default: %(default)s)')
    parser.add_argument('--train-script', default=None, help="timm's train.py (default: $TIMM_REPO/train.py)")
    parser.add_argument('--nproc', type=int, default=1, help='processes per run; > 1 launches torchrun (default: 1)')
    parser.add_argument('train_args', nargs=argparse.REMAINDER,
                        help='after --: extra train.py arguments for every run, e.g. -- --epochs 1 --device cpu')


def run_from_args(args: argparse.Namespace) -> int:
    """``timm-sl reproduce``: plan, run, report; bad input ends in one line on stderr (exit 2), a crashed run in
    exit 1 after the report."""
    extra = list(args.train_args)
    if extra[:1] == ['--']:
        extra = extra[1:]
    try:
        if args.nproc < 1:
            raise ValueError(f'--nproc {args.nproc} is not allowed; expected an integer >= 1')
        script = find_train_script(args.train_script)
        runs = plan_runs(args.dataset, args.families, args.seeds, Path(args.out))
        recipe = recipe_path(args.dataset)
        if not Path(args.data_dir).exists():
            raise FileNotFoundError(f'--data-dir {args.data_dir} does not exist')
    except (ValueError, FileNotFoundError) as e:
        print(f'timm-sl reproduce: {e}', file=sys.stderr)
        return 2
    print(f'{len(runs)} runs ({", ".join(args.families)} x seeds {" ".join(map(str, args.seeds))}) on {args.dataset} '
          f'with {recipe.name}; output {args.out}', flush=True)
    outcomes = reproduce(runs, script, args.data_dir, recipe, extra, nproc=args.nproc,
                         echo=lambda line: print(line, flush=True))
    command = 'timm-sl reproduce ' + shlex.join(
        ['--data-dir', args.data_dir, '--dataset', args.dataset, '--families', *args.families,
         '--seeds', *map(str, args.seeds), '--out', args.out] + (['--', *extra] if extra else []))
    report = write_report(outcomes, args.dataset, Path(args.out), command)
    print(report_table(aggregate(outcomes, args.dataset), args.dataset))
    failed = [o.run.name for o in outcomes if o.status == 'failed']
    print(f'report: {report}')
    if any(o.status == 'interrupted' for o in outcomes):
        return 130
    if failed:
        print(f'timm-sl reproduce: {len(failed)} run(s) failed: {", ".join(failed)} (see the report)',
              file=sys.stderr)
        return 1
    return 0
