"""What a timm ``train.py`` run leaves behind, read without torch: its script, arguments, recipe and summary.

timm's ``train.py`` lives in timm's git repository, not in its wheel; :func:`find_train_script` locates it from an
explicit path or ``TIMM_REPO``. A run folder holds ``args.yaml`` (every argument), ``summary.csv`` (one row per epoch,
a header repeated after each ``--resume``) and checkpoints.
"""
import csv
import importlib.util
import os
from pathlib import Path
from typing import Any, Dict, List, Optional, Union

__all__ = ['NON_RECIPE_KEYS', 'find_train_script', 'train_script_defaults', 'read_args_yaml', 'recipe_args',
           'format_recipe', 'read_summary_rows', 'summarize']

# train.py arguments that describe the machine, paths or logging, not how the model was trained
NON_RECIPE_KEYS = frozenset({
    'data', 'data_dir', 'dataset_download', 'output', 'experiment', 'resume', 'no_resume_opt', 'initial_checkpoint',
    'pretrained_path', 'config', 'class_map', 'workers', 'pin_mem', 'no_prefetcher', 'prefetcher', 'device',
    'device_modules', 'distributed', 'world_size', 'rank', 'local_rank', 'log_interval', 'recovery_interval',
    'checkpoint_hist', 'log_wandb', 'wandb_project', 'wandb_tags', 'wandb_resume_id', 'torchscript', 'torchcompile',
    'torchcompile_mode', 'fuser', 'channels_last', 'synchronize_step', 'use_multi_epochs_loader', 'worker_seeding',
    'save_images', 'eval_metric', 'prev_num_classes',
})

# without train.py's defaults to compare with, the recipe is these keys (when set)
RECIPE_KEYS = (
    'model', 'model_kwargs', 'dataset', 'num_classes', 'input_size', 'mean', 'std', 'interpolation', 'crop_pct',
    'epochs', 'batch_size', 'opt', 'lr', 'weight_decay', 'sched', 'warmup_epochs', 'warmup_lr', 'min_lr', 'smoothing',
    'drop_path', 'aa', 'reprob', 'scale', 'ratio', 'mixup', 'cutmix', 'mixup_prob', 'mixup_switch_prob', 'aug_repeats',
    'model_ema', 'amp', 'seed',
)


def find_train_script(path: Optional[Union[str, Path]] = None) -> Path:
    """timm's ``train.py``: ``path`` when given, else ``$TIMM_REPO/train.py``.

    Raises:
        FileNotFoundError: neither names an existing file; the message says where it looked.
    """
    if path:
        script = Path(path)
        where = str(script)
    elif os.environ.get('TIMM_REPO'):
        script = Path(os.environ['TIMM_REPO']) / 'train.py'
        where = f'{script} (from TIMM_REPO)'
    else:
        raise FileNotFoundError("timm's train.py not given: pass --train-script PATH or set TIMM_REPO to a checkout of "
                                "https://github.com/huggingface/pytorch-image-models")
    if not script.is_file():
        raise FileNotFoundError(f"timm's train.py not found at {where}")
    return script


def train_script_defaults(script: Union[str, Path]) -> Dict[str, Any]:
    """Default value of every argument of a ``train.py`` (its module-level ``parser``), by importing the script.

    train.py guards its ``main()`` with ``__name__ == '__main__'``; importing it defines the parsers only.
    """
    spec = importlib.util.spec_from_file_location('_timm_train_script', str(script))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return vars(module.parser.parse_args([]))


def read_args_yaml(path: Union[str, Path]) -> Dict[str, Any]:
    """The arguments a train.py run saved in ``args.yaml`` (safe YAML load)."""
    import yaml
    args = yaml.safe_load(Path(path).read_text())
    if not isinstance(args, dict):
        raise ValueError(f'{path} is not a train.py args.yaml (expected a mapping of argument names)')
    return args


def recipe_args(args: Dict[str, Any], defaults: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """The arguments that make the recipe: those that differ from train.py's ``defaults`` (or, without them, the
    usual recipe keys that are set), minus paths, machine and logging settings (:data:`NON_RECIPE_KEYS`)."""
    def same(a: Any, b: Any) -> bool:
        norm = (lambda v: list(v) if isinstance(v, tuple) else v)
        return norm(a) == norm(b)

    if defaults is None:
        return {k: args[k] for k in RECIPE_KEYS if args.get(k) not in (None, '', {}, [])}
    return {k: v for k, v in args.items()
            if k not in NON_RECIPE_KEYS and not k.startswith('wandb') and not (k in defaults and same(v, defaults[k]))}


def format_recipe(recipe: Dict[str, Any]) -> str:
    """A recipe as YAML lines (``key: value``, train.py's names)."""
    import yaml
    return yaml.safe_dump({k: list(v) if isinstance(v, tuple) else v for k, v in recipe.items()},
                          default_flow_style=None, sort_keys=False)


def read_summary_rows(path: Union[str, Path]) -> List[Dict[str, float]]:
    """Rows of a train.py ``summary.csv`` as numbers, one per epoch in order.

    Headers repeated by ``--resume`` are skipped and an epoch written twice (a run stopped between its summary and
    its checkpoint, then resumed) keeps its last row.

    Raises:
        ValueError: not a summary.csv (no ``epoch`` / ``eval_top1`` columns).
    """
    with Path(path).open(newline='') as f:
        rows = list(csv.DictReader(f))
    if not rows or 'eval_top1' not in rows[0] or 'epoch' not in rows[0]:
        raise ValueError(f'{path} is not a train.py summary.csv (no epoch / eval_top1 columns)')
    by_epoch: Dict[int, Dict[str, float]] = {}
    for row in rows:
        if row['epoch'] == 'epoch':
            continue
        values = {k: float(v) for k, v in row.items() if k and v not in (None, '')}
        by_epoch[int(values['epoch'])] = values
    return [by_epoch[e] for e in sorted(by_epoch)]


def summarize(path: Union[str, Path], rows: Optional[List[Dict[str, float]]] = None) -> Dict[str, Any]:
    """Best epoch of a ``summary.csv`` by ``eval_top1`` (the paper reports the best test accuracy over epochs);
    ``rows`` when :func:`read_summary_rows` already read them."""
    rows = read_summary_rows(path) if rows is None else rows
    if not rows:
        raise ValueError(f'{path} has no finished epoch')
    best = max(rows, key=lambda r: r['eval_top1'])
    return {
        'best_top1': best['eval_top1'], 'best_top5': best.get('eval_top5'), 'best_epoch': int(best['epoch']),
        'epochs': len(rows), 'last_epoch': int(rows[-1]['epoch']),
    }
