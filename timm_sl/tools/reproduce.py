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
from .runs import DONE_MARKER, read_args_yaml, read_done_marker, read_summary_rows, summarize
from .train_args import find_train_script

__all__ = ['Run', 'plan_runs', 'recipe_path', 'planned_epochs', 'train_data', 'describe_data', 'check_data',
           'train_command', 'run_state', 'reproduce', 'aggregate', 'report_table', 'write_report', 'add_reproduce_args',
           'run_from_args']

# timm's folder datasets look for a split's folder under its synonyms too (timm.data.dataset_factory)
_SPLIT_SYNONYMS = (('train', 'training'), ('val', 'valid', 'validation', 'eval', 'evaluation'))
# the folder torchvision keeps each recipe's torch/ dataset in, under --data-dir
_TORCH_FOLDERS = {'torch/cifar10': 'cifar-10-batches-py', 'torch/cifar100': 'cifar-100-python'}

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
    data: str = ''  # the data as the run recorded it in args.yaml (:func:`describe_data`); '' when not recorded


def _check_choice(kind: str, value: str, allowed: Sequence[str]) -> None:
    if value not in allowed:
        raise ValueError(f'unknown {kind} {value!r}; allowed: {", ".join(allowed)}')


def recipe_path(dataset: str) -> Path:
    """The recipe YAML of a dataset: shipped in the wheel as ``timm_sl/recipes``, or ``recipes/`` of a checkout."""
    _check_choice('dataset', dataset, list(DATASETS))
    name = DATASETS[dataset][0]
    here = Path(__file__).resolve().parents[1]  # the timm_sl package
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


def train_data(recipe: Path, data_dir: str, extra_args: Sequence[str] = ()) -> Dict[str, Any]:
    """The data settings train.py will run with: the recipe's, overridden by the extra train.py arguments.

    Keys: ``data_dir``, ``dataset`` ('' for an image folder), ``train_split``, ``val_split``, ``num_classes``,
    ``class_map``.

    Raises:
        ValueError: ``--num-classes`` among the extra arguments is not an integer.
    """
    import yaml
    config = yaml.safe_load(Path(recipe).read_text()) or {}
    data = dict(data_dir=str(data_dir), dataset=config.get('dataset', ''),
                train_split=config.get('train_split', 'train'), val_split=config.get('val_split', 'validation'),
                num_classes=config.get('num_classes'), class_map=config.get('class_map', ''))
    for key in data:
        value = _last_value(extra_args, '--' + key.replace('_', '-'))
        if value is not None:
            data[key] = value
    try:
        data['num_classes'] = None if data['num_classes'] is None else int(data['num_classes'])
    except ValueError:
        raise ValueError(f'--num-classes {data["num_classes"]} is not allowed; expected an integer') from None
    return data


def describe_data(args: Dict[str, Any]) -> str:
    """The data of a train.py run (its ``args.yaml``, or :func:`train_data`) in a few words, for titles."""
    root = args.get('data_dir') or args.get('data') or '?'
    return f'{args["dataset"]} in {root}' if args.get('dataset') else f'image folder {root}'


def _split_folder(root: Path, split: str) -> Optional[Path]:
    """The folder timm's folder dataset reads for ``split`` (the name, else a synonym), or None where it would fall
    back to reading all of ``root``."""
    name = split.split('[')[0]
    names = next((group for group in _SPLIT_SYNONYMS if name in group), ())
    return next((root / n for n in (name, *names) if (root / n).is_dir()), None)


def _listed(names: Sequence[str], most: int = 3) -> str:
    return ', '.join(list(names)[:most]) + (', ...' if len(names) > most else '')


def check_data(data: Dict[str, Any], dataset: str) -> List[str]:
    """What is wrong with the data folder for the runs, one line per problem (empty: nothing found wrong).

    ``data``: :func:`train_data`; ``dataset``: the recipe's name, for the messages. An image folder (dataset '')
    needs a folder per split with one folder of images per class, as many as ``num_classes``, and the same classes in
    both splits; timm labels an image by the folder it sits in, so a layout one level too deep (Tiny-ImageNet's
    ``train/<wnid>/images/``) or an unsorted Tiny-ImageNet ``val/`` would train silently on wrong labels. A torch/
    dataset (CIFAR) is downloaded by train.py when missing: its folder must then be writable. Other readers (hfds/,
    tfds/, wds/) are left to train.py.
    """
    root = Path(data['data_dir'])
    if not root.is_dir():
        return [f'--data-dir {root} is not a folder']
    name = str(data['dataset'] or '').lower()
    if name in _TORCH_FOLDERS:
        if not (root / _TORCH_FOLDERS[name]).is_dir() and not os.access(root, os.W_OK):
            return [f'{root / _TORCH_FOLDERS[name]} not found, and train.py cannot download {name} into {root} '
                    f'(not writable)']
        return []
    if name not in ('', 'folder', 'image_folder'):
        return []
    errors, classes = [], {}
    for split in (data['train_split'], data['val_split']):
        folder = _split_folder(root, split)
        if folder is None:
            errors.append(f'{root / split} not found: the {dataset} recipe reads the {split} split from an image '
                          f'folder, {root / split}/<class>/<image>')
            continue
        class_dirs = sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith('.'))
        if (folder / 'val_annotations.txt').is_file() and (folder / 'images').is_dir():  # Tiny-ImageNet's val
            errors.append(f'{folder} is not sorted into class folders ({folder.name}/images/, val_annotations.txt): '
                          f'run timm-sl prepare-tiny-imagenet {root}' if class_dirs == [folder / 'images'] else
                          f'{folder / "images"} would be read as one more class: remove it (the images are sorted '
                          f'into class folders)')
            continue
        if not class_dirs:
            errors.append(f'{folder} holds no class folders: expected {folder}/<class>/<image>')
            continue
        nested = [sub for c in class_dirs for sub in sorted(
            p for p in c.iterdir() if p.is_dir() and not p.name.startswith('.') and any(p.iterdir()))[:1]]
        if nested:
            sub, more = nested[0], len(nested) - 1
            fix = (f'run timm-sl prepare-tiny-imagenet {root}' if dataset == 'tiny-imagenet' else
                   f'move them up to {folder}/<class>/')
            errors.append(f'{sub} holds images one folder too deep' +
                          (f' ({more} more class folder{"s" if more > 1 else ""} alike)' if more else '') +
                          f": timm labels an image by the folder it is in, so every image would be class "
                          f"'{sub.name}'; {fix}")
            continue
        if data['num_classes'] and not data['class_map'] and len(class_dirs) != data['num_classes']:
            errors.append(f'{folder} has {len(class_dirs)} class folders; the run trains {data["num_classes"]} '
                          f'classes (num_classes)')
            continue
        classes[folder] = {c.name for c in class_dirs}
    if len(classes) == 2 and not data['class_map']:
        (train, train_names), (val, val_names) = classes.items()
        if train_names != val_names:
            errors.append(f'{train} and {val} hold different classes: only in {train}: '
                          f'{_listed(sorted(train_names - val_names))}; only in {val}: '
                          f'{_listed(sorted(val_names - train_names))}')
    return errors


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
    summary = run.out_dir / 'summary.csv'
    epochs_done = read_done_marker(run.out_dir).get('epochs')
    if summary.is_file() and isinstance(epochs_done, int) and epochs_done >= epochs:
        return 'done'
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
    args = outcome.run.out_dir / 'args.yaml'
    if args.is_file():
        try:
            outcome.data = describe_data(read_args_yaml(args))
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
        outcome = _collect(Outcome(run, 'done', seconds=seconds))
        if code != 0 or outcome.summary is None:  # a clean exit that trained nothing failed too
            outcome.status = 'failed'
            outcome.message = (f'train.py exited with {code}: {_last_line(log)}' if code else
                               'train.py exited with 0 but wrote no summary.csv (no epoch finished)') + f' (log: {log})'
            echo(f'run {i}/{len(runs)}: {run.name} failed: {outcome.message}')
            outcomes.append(outcome)
            continue
        durations.append(seconds)
        (run.out_dir / DONE_MARKER).write_text(json.dumps(
            dict(epochs=epochs, seconds=round(seconds, 1), command=cmd, family=run.family, variant=run.variant,
                 seed=run.seed, model=run.model, model_kwargs=run.model_kwargs), indent=1))
        outcomes.append(outcome)
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
        values = [o.summary['best_top1'] for o in members
                  if o.status == 'done' and o.summary and o.summary['best_top1'] is not None]
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


def _wrap(text: str, width: int) -> str:
    """Lines of at most ``width`` characters, paths kept whole."""
    import textwrap
    return textwrap.fill(text, width, break_long_words=False, break_on_hyphens=False)


def _bar_label(row: Dict[str, Any]) -> str:
    return f'{row["family"]}\n' + VARIANT_LABELS[row['variant']].replace(' w/o ', ' w/o\n')


def _plot_top1(rows: Sequence[Dict[str, Any]], path: Path, dataset: str, data: str):
    """Best top-1 per Table 2 row (bars from 0, the paper's value as a tick) and SL − baseline gains; returns the
    figure. A row without a finished run has no bar, and says so."""
    from .plot import _figure
    deltas = [r for r in rows if r['variant'] != 'base']
    width = max(len(rows), 1), max(len(deltas), 1)  # panels as wide as their bars: ~0.6 in per tick label
    fig = _figure(max(12., 0.6 * sum(width) + 2.5), 5)
    left, right = fig.subplots(1, 2, width_ratios=width)
    x = range(len(rows))
    measured = [i for i in x if rows[i]['mean'] is not None]
    left.bar(measured, [rows[i]['mean'] for i in measured], yerr=[rows[i]['std'] or 0 for i in measured], capsize=3,
             color=['tab:gray' if rows[i]['variant'] == 'base' else 'tab:blue' for i in measured])
    for i in measured:
        left.annotate(f'{rows[i]["mean"]:.2f}', (i, rows[i]['mean']), xytext=(0, 2), textcoords='offset points',
                      ha='center', va='bottom', fontsize=8)
    paper = [i for i in x if rows[i]['paper'] is not None]
    left.scatter(paper, [rows[i]['paper'] for i in paper], marker='_', s=400, linewidths=2, color='black', zorder=3)
    for i in x:
        if rows[i]['mean'] is None:
            left.text(i, 1, 'no finished run', rotation=90, ha='center', va='bottom', fontsize=8)
    left.set_xticks(list(x), [_bar_label(r) for r in rows], fontsize=8)
    left.set_ylim(0, 100)  # bars start at 0: the gains are read on the right
    left.set_ylabel('best top-1 (%)')
    left.set_title('measured best top-1, mean ± std over seeds' +
                   (f'\nblack tick: paper ({dataset})' if paper else ''))
    x = range(len(deltas))
    have = [i for i in x if deltas[i]['delta'] is not None]
    gains = right.bar([i - 0.2 for i in have], [deltas[i]['delta'] for i in have], width=0.4, label='measured')
    right.bar_label(gains, fmt='{:+.2f}', fontsize=8)  # a gain of 0 has no visible bar: its value says so
    have_paper = [i for i in x if deltas[i]['paper_delta'] is not None]
    right.bar([i + 0.2 for i in have_paper], [deltas[i]['paper_delta'] for i in have_paper], width=0.4,
              label=f'paper ({dataset})')
    for i in x:
        if deltas[i]['delta'] is None:
            right.text(i - 0.2, 0, 'not measured', rotation=90, ha='center', va='bottom', fontsize=8)
    right.axhline(0, color='black', linewidth=0.8)
    right.set_xticks(list(x), [_bar_label(r) for r in deltas], fontsize=8)
    right.set_ylabel('top-1 gain over baseline (points)')
    right.set_title('SL − baseline')
    right.legend()
    fig.suptitle(_wrap(f'data: {data}', int(fig.get_figwidth() * 9)))
    fig.savefig(path, dpi=110)
    return fig


def _plot_curves(outcomes: Sequence[Outcome], path: Path, data: str):
    """Validation top-1 per epoch, one panel per family (dashed: a failed run); returns the figure."""
    from matplotlib.ticker import MaxNLocator
    from .plot import _figure
    families = list(dict.fromkeys(o.run.family for o in outcomes))
    fig = _figure(5 * max(1, len(families)), 4.5)
    axes = fig.subplots(1, max(1, len(families)), squeeze=False)
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
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # whole epochs only
        ax.set_title(f'{family}: validation top-1 per epoch')
        ax.set_xlabel('epoch')
        ax.set_ylabel('top-1 (%)')
        ax.grid(alpha=0.3)
        if shown:
            ax.legend()
    fig.suptitle(_wrap(f'data: {data}', 50 * max(1, len(families))))
    fig.savefig(path, dpi=110)
    return fig


def _data_of(outcomes: Sequence[Outcome], planned: str = '') -> str:
    """The data the runs recorded (each different one once); ``planned`` (what train.py was given) when none did."""
    recorded = list(dict.fromkeys(o.data for o in outcomes if o.data))
    return '; '.join(recorded) if recorded else (f'{planned} (as given to train.py)' if planned else 'not recorded')


def write_report(outcomes: Sequence[Outcome], dataset: str, output: Path, command: str = '', data: str = '') -> Path:
    """``report.md`` (table, failed runs, per-run results), ``top1.png``, ``curves.png`` and ``results.json``.

    ``dataset`` names the recipe (and the paper's column); the data named in the report and charts is what the runs
    recorded in their args.yaml, else ``data`` (what train.py was given, :func:`describe_data`).
    """
    output = Path(output)
    output.mkdir(parents=True, exist_ok=True)
    rows = aggregate(outcomes, dataset)
    data = _data_of(outcomes, data)
    lines = [f'# Table 2 reproduction: {dataset} recipe', '', f'data: {data}', '']
    if command:
        lines += ['```bash', command, '```', '']
    lines += [report_table(rows, dataset), '',
              'Best top-1 over epochs (as the paper reports), mean ± sample std over the finished seeds; '
              'SL − baseline: difference of the means. Paper: Table 2. Epochs are counted from 1 (the first epoch '
              "is epoch 1; train.py's summary.csv counts from 0).", '',
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
    _plot_top1(rows, output / 'top1.png', dataset, data)
    _plot_curves(outcomes, output / 'curves.png', data)
    (output / 'results.json').write_text(json.dumps(dict(dataset=dataset, data=data, rows=rows, runs=[
        dict(name=o.run.name, family=o.run.family, variant=o.run.variant, seed=o.run.seed, model=o.run.model,
             model_kwargs=o.run.model_kwargs, status=o.status, message=o.message, dir=str(o.run.out_dir),
             summary=o.summary, data=o.data) for o in outcomes]), indent=1))
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
    """``timm-sl reproduce``: plan, run, report. Returns the exit status: 0, 1 when a run crashed (after the report),
    130 when interrupted.

    Raises:
        ValueError / FileNotFoundError: bad input, before anything runs (the data folder's problems one per line).
    """
    extra = list(args.train_args)
    if extra[:1] == ['--']:
        extra = extra[1:]
    if args.nproc < 1:
        raise ValueError(f'--nproc {args.nproc} is not allowed; expected an integer >= 1')
    script = find_train_script(args.train_script)
    runs = plan_runs(args.dataset, args.families, args.seeds, Path(args.out))
    recipe = recipe_path(args.dataset)
    if not Path(args.data_dir).exists():
        raise FileNotFoundError(f'--data-dir {args.data_dir} does not exist')
    data = train_data(recipe, args.data_dir, extra)
    errors = check_data(data, args.dataset)  # before anything runs: every problem, one line each
    if errors:
        raise ValueError('\n'.join(errors))
    print(f'{len(runs)} runs ({", ".join(args.families)} x seeds {" ".join(map(str, args.seeds))}) on {args.dataset} '
          f'with {recipe.name}; output {args.out}', flush=True)
    outcomes = reproduce(runs, script, args.data_dir, recipe, extra, nproc=args.nproc,
                         echo=lambda line: print(line, flush=True))
    command = 'timm-sl reproduce ' + shlex.join(
        ['--data-dir', args.data_dir, '--dataset', args.dataset, '--families', *args.families,
         '--seeds', *map(str, args.seeds), '--out', args.out] + (['--', *extra] if extra else []))
    report = write_report(outcomes, args.dataset, Path(args.out), command, describe_data(data))
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
