"""timm's ``train.py`` and its arguments, without torch: the script, its defaults, and the recipe a run's arguments
make. (A run folder's files are read by :mod:`timm_sl.tools.runs`.)

timm's ``train.py`` lives in timm's git repository, not in its wheel; :func:`find_train_script` locates it from an
explicit path or ``TIMM_REPO``.
"""
import argparse
import ast
import contextlib
import difflib
import importlib.machinery
import importlib.util
import io
import os
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from .errors import first_line
from .paper import DATASETS

__all__ = ['NON_RECIPE_KEYS', 'RECIPE_KEYS', 'SWITCHED_GROUPS', 'UNREAD_KEYS', 'SCHEDULE_KEYS', 'MIXING_KEYS',
           'TRAIN_PY_MODEL_ARGS', 'unread_reason', 'find_train_script', 'recipe_train_script', 'check_train_script',
           'train_script_defaults', 'recipe_args', 'format_recipe', 'last_flag_value', 'recipe_path', 'read_recipe',
           'train_script_options', 'check_recipe_keys', 'expand_abbreviations', 'train_script_default',
           'train_script_spellings', 'spell_option']

# train.py arguments that describe the machine, paths or logging, not how the model was trained
NON_RECIPE_KEYS = frozenset({
    'data', 'data_dir', 'dataset_download', 'output', 'experiment', 'resume', 'no_resume_opt', 'initial_checkpoint',
    'pretrained_path', 'config', 'class_map', 'workers', 'pin_mem', 'no_prefetcher', 'prefetcher', 'device',
    'device_modules', 'distributed', 'world_size', 'rank', 'local_rank', 'log_interval', 'recovery_interval',
    'checkpoint_hist', 'log_wandb', 'wandb_project', 'wandb_tags', 'wandb_resume_id', 'torchscript', 'torchcompile',
    'torchcompile_mode', 'fuser', 'channels_last', 'synchronize_step', 'use_multi_epochs_loader', 'worker_seeding',
    'save_images', 'prev_num_classes', 'validation_batch_size', 'model_ema_force_cpu', 'no_ddp_bb',
    'grad_checkpointing', 'dist_bn',
})

# settings that act only with their switch on, by the switch: the beginnings of their names (train.py reads
# ``train_batches_per_epoch`` only for the loader of ``--train-img-sizes``); listed with it, not without
SWITCHED_GROUPS = {'amp': ('amp_',), 'model_ema': ('model_ema_',), 'naflex_loader': ('naflex_',),
                   'kd_model_name': ('kd_', 'distill_loss_weight', 'task_loss_weight'), 'bce_loss': ('bce_',),
                   'layer_decay': ('layer_decay_',), 'lr_noise': ('lr_noise_',),
                   'train_img_sizes': ('train_batch_sizes', 'train_size_', 'train_batches_per_epoch',
                                       'variable_batch_loss_scale')}

# train.py arguments it parses and never reads, with what it reads instead: no part of a recipe
UNREAD_KEYS = {'drop_connect': '--drop-path'}

# the schedule settings train.py gives timm's scheduler factory (timm.scheduler.create_scheduler_v2), by the --sched
# values whose scheduler reads each: with another --sched the setting acts on nothing (poly reads decay_rate as its
# power; cooldown_epochs lengthens the cycled schedules and wsd / rsqrt only)
_CYCLED = ('cosine', 'tanh', 'poly')
SCHEDULE_KEYS = {
    'decay_epochs': ('step', 'wsd', 'rsqrt'), 'decay_milestones': ('multistep',),
    'decay_rate': ('step', 'multistep', 'plateau', 'poly'), 'patience_epochs': ('plateau',),
    'lr_cycle_mul': _CYCLED, 'lr_cycle_decay': _CYCLED, 'lr_cycle_limit': _CYCLED, 'lr_k_decay': ('cosine', 'poly'),
    'cooldown_epochs': (*_CYCLED, 'wsd', 'rsqrt'), 'min_lr': (*_CYCLED, 'plateau', 'wsd', 'rsqrt'),
    'warmup_lr': (*_CYCLED, 'step', 'multistep', 'plateau', 'wsd', 'rsqrt', 'constant'),
}
# read by the cycled schedules only from their second cycle on: with --lr-cycle-limit 1 they act on nothing
_CYCLE_KEYS = ('lr_cycle_mul', 'lr_cycle_decay')

# settings of train.py's mixup / cutmix, read only with either on (--mixup or --cutmix above 0, or --cutmix-minmax)
MIXING_KEYS = ('mixup_prob', 'mixup_switch_prob', 'mixup_mode', 'mixup_off_epoch')

# train.py's defaults of the settings that decide whether another is read (:func:`unread_reason`), for a run's record
# or a recipe that leaves one out
_DECIDING_DEFAULTS = {'sched': 'cosine', 'lr_cycle_limit': 1, 'mixup': 0., 'cutmix': 0., 'cutmix_minmax': None,
                      'smoothing': 0.1, 'jsd_loss': False}


def _number(value: Any) -> Optional[float]:
    """A setting's value as a number, or None where it is none (text, a list: what train.py would do is not known)."""
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def unread_reason(key: str, args: Dict[str, Any]) -> Optional[Tuple[str, str]]:
    """Whether train.py acts on the setting ``key`` beside the other ``args`` (a run's arguments or a recipe's
    settings, by train.py's names; one left out has train.py's default): None where it does (or this cannot tell),
    else ``(why not, what is allowed)`` as phrases: a schedule setting that the --sched in use does not read
    (:data:`SCHEDULE_KEYS`), a cycle setting with one cycle, ``bce_loss`` where train.py picks another loss, a
    mixup / cutmix setting (:data:`MIXING_KEYS`) with both off."""
    given = {**_DECIDING_DEFAULTS, **{k: args[k] for k in _DECIDING_DEFAULTS if k in args}}
    sched = given['sched']
    if key in SCHEDULE_KEYS and isinstance(sched, str) and sched not in SCHEDULE_KEYS[key]:
        readers = SCHEDULE_KEYS[key]
        return (f"train.py's --sched {sched} scheduler does not read it (only --sched "
                f"{', '.join(readers[:-1])}{' or ' * (len(readers) > 1)}{readers[-1]} "
                f"{'do' if len(readers) > 1 else 'does'})",
                f'-- --sched {readers[0]} ... with it, or leave it out')
    limit = _number(given['lr_cycle_limit'])
    if key in _CYCLE_KEYS and limit is not None and limit <= 1:
        return (f"train.py's scheduler reads it only from a second cycle on, and --lr-cycle-limit is "
                f"{given['lr_cycle_limit']}",
                '-- --lr-cycle-limit 2 ... with it, or leave it out')
    alphas = [_number(given['mixup']), _number(given['cutmix'])]
    mixing = given['cutmix_minmax'] is not None or any(a is None or a > 0 for a in alphas)
    if key in MIXING_KEYS and not mixing:
        return ('train.py reads it only with mixup or cutmix on, and --mixup and --cutmix are 0 (no --cutmix-minmax)',
                '-- --mixup 0.8 ... with it, or leave it out')
    if key == 'bce_loss' and given['jsd_loss']:
        return 'train.py trains with its JSD loss under --jsd-loss, never the BCE loss', 'leave it out'
    smoothing = _number(given['smoothing']) if given['smoothing'] is not None else 0.
    if key == 'bce_loss' and not mixing and smoothing == 0:
        return ('train.py uses the BCE loss only with mixup / cutmix or label smoothing on, and --mixup, --cutmix and '
                '--smoothing are 0 (it trains with plain cross-entropy)',
                '-- --smoothing 0.1 ... with it, or leave it out')
    return None


# train.py arguments that make a recipe, each listed on a card where it differs from train.py's default; with
# NON_RECIPE_KEYS, UNREAD_KEYS and the settings of SWITCHED_GROUPS, every argument of train.py has its role here
# (a test fails on an argument of a newer train.py until its role is decided)
RECIPE_KEYS = frozenset({
    'aa', 'amp', 'aug_repeats', 'aug_splits', 'batch_size', 'bce_loss', 'bn_eps', 'bn_momentum', 'clip_grad',
    'clip_mode', 'color_jitter', 'color_jitter_prob', 'cooldown_epochs', 'crop_pct', 'cutmix', 'cutmix_minmax',
    'dataset', 'dataset_trust_remote_code', 'decay_epochs', 'decay_milestones', 'decay_rate', 'drop', 'drop_block',
    'drop_path', 'epoch_repeats', 'epochs', 'eval_metric', 'fast_norm', 'gaussian_blur_prob', 'gp',
    'grad_accum_steps', 'grayscale_prob', 'head_init_bias', 'head_init_scale', 'hflip', 'img_size', 'in_chans',
    'input_img_mode', 'input_key', 'input_size', 'interpolation', 'jsd_loss', 'kd_model_name', 'layer_decay', 'lr',
    'lr_base', 'lr_base_scale', 'lr_base_size', 'lr_cycle_decay', 'lr_cycle_limit', 'lr_cycle_mul', 'lr_k_decay',
    'lr_noise', 'mean', 'min_lr', 'mixup', 'mixup_mode', 'mixup_off_epoch', 'mixup_prob', 'mixup_switch_prob',
    'model', 'model_dtype', 'model_ema', 'model_kwargs', 'momentum', 'naflex_loader', 'no_aug', 'num_classes',
    'opt', 'opt_betas', 'opt_eps', 'opt_kwargs', 'patience_epochs', 'pretrained', 'ratio', 'recount', 'remode',
    'reprob', 'resplit', 'scale', 'sched', 'sched_on_updates', 'seed', 'smoothing', 'split_bn', 'start_epoch',
    'std', 'sync_bn', 'target_key', 'train_crop_mode', 'train_img_sizes', 'train_interpolation',
    'train_num_samples', 'train_split', 'tta', 'val_interval', 'val_num_samples', 'val_split', 'vflip',
    'warmup_epochs', 'warmup_lr', 'warmup_prefix', 'weight_decay',
})

# the keywords train.py gives timm.create_model itself, by the argument that sets each: one in --model-kwargs too is
# given twice (TypeError: got multiple values), in every run
TRAIN_PY_MODEL_ARGS = {
    'pretrained': '--pretrained', 'in_chans': '--in-chans', 'num_classes': '--num-classes', 'drop_rate': '--drop',
    'drop_path_rate': '--drop-path', 'drop_block_rate': '--drop-block', 'global_pool': '--gp',
    'bn_momentum': '--bn-momentum', 'bn_eps': '--bn-eps', 'scriptable': '--torchscript',
    'checkpoint_path': '--initial-checkpoint', 'pretrained_cfg_overlay': '--pretrained-path',
}

TRAIN_SCRIPT = "timm's train.py (from a checkout of https://github.com/huggingface/pytorch-image-models)"


def find_train_script(path: Optional[Union[str, Path]] = None) -> Path:
    """timm's ``train.py``: ``path`` when given, else ``$TIMM_REPO/train.py``.

    Raises:
        FileNotFoundError / IsADirectoryError: neither names an existing file; the message says where it looked.
        ValueError: it names something other than a file or folder (a device such as /dev/null, a pipe).
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
    if script.is_dir():
        inside = f" ({script / 'train.py'} is there)" if (script / 'train.py').is_file() else ''
        raise IsADirectoryError(f'{where} is a folder; allowed: {TRAIN_SCRIPT}{inside}')
    if script.exists() and not script.is_file():  # a device (/dev/null), a pipe: there, but no file to read
        raise ValueError(f'{where} is not a regular file; allowed: {TRAIN_SCRIPT}')
    if not script.is_file():
        raise FileNotFoundError(f"timm's train.py not found at {where}; allowed: {TRAIN_SCRIPT}, as --train-script "
                                f"PATH or TIMM_REPO=CHECKOUT")
    return script


def recipe_train_script(path: Optional[Union[str, Path]] = None) -> Optional[Path]:
    """The train.py whose defaults a card's recipe is compared with (``timm-sl export`` and ``release`` alike):
    ``path`` when given, else ``$TIMM_REPO/train.py`` when ``TIMM_REPO`` is set; None when neither is (the card then
    lists the run's arguments as recorded). Raises what :func:`find_train_script` raises."""
    return find_train_script(path) if path or os.environ.get('TIMM_REPO') else None


def _not_train_py(script: Path, reason: str) -> ValueError:
    return ValueError(f'{script} is not timm\'s train.py ({reason}); allowed: {TRAIN_SCRIPT}')


def _syntax(e: SyntaxError) -> str:
    return f'a syntax error at line {e.lineno}: {e.msg}' if e.lineno else e.msg  # no line: NUL bytes


def check_train_script(script: Optional[Union[str, Path]] = None) -> Path:
    """:func:`find_train_script`, and the file is Python source (compiled, not run: e.g. not a text file).

    Raises:
        FileNotFoundError / IsADirectoryError: as :func:`find_train_script`.
        ValueError: not Python source (a syntax error, or bytes that are not source); one line naming the file.
    """
    script = find_train_script(script)
    try:
        compile(script.read_bytes(), str(script), 'exec', dont_inherit=True)
    except SyntaxError as e:
        raise _not_train_py(script, _syntax(e)) from None
    except ValueError as e:  # NUL bytes: not source
        raise _not_train_py(script, first_line(e)) from None
    return script


def train_script_defaults(script: Union[str, Path]) -> Dict[str, Any]:
    """Default value of every argument of a ``train.py`` (its module-level ``parser``), by importing the script.

    train.py guards its ``main()`` with ``__name__ == '__main__'``; importing it defines the parsers only.

    Raises:
        FileNotFoundError / IsADirectoryError: no such file, or a folder.
        ValueError: a file that is not timm's train.py: it cannot be imported (syntax error, a module it imports is
            missing, it exits) or holds no module-level ``argparse`` ``parser`` that parses no arguments; one line
            naming the file.
    """
    script = find_train_script(script)

    def refuse(reason: str) -> ValueError:
        return _not_train_py(script, reason)

    # a copy of train.py under another name (no .py suffix) is imported too: the loader is given, not guessed
    loader = importlib.machinery.SourceFileLoader('_timm_train_script', str(script))
    spec = importlib.util.spec_from_file_location('_timm_train_script', str(script), loader=loader)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except SyntaxError as e:
        raise refuse(_syntax(e)) from None
    except (Exception, SystemExit) as e:  # noqa: BLE001 - whatever a script raises on import, it is not train.py
        raise refuse(f'importing it raised {type(e).__name__}: {first_line(e)}') from None
    parser = getattr(module, 'parser', None)
    if not isinstance(parser, argparse.ArgumentParser):
        raise refuse('no module-level argparse parser named `parser`')
    errors = io.StringIO()
    try:
        with contextlib.redirect_stderr(errors):
            defaults = vars(parser.parse_args([]))
    except SystemExit:  # argparse printed why (a required argument) and exited
        said = [line for line in errors.getvalue().splitlines() if line.strip()]
        said = said[-1].split(': error: ', 1)[-1] if said else 'it exited'
        raise refuse(f'its parser needs arguments: {said}') from None
    if not {'epochs', 'lr'} <= set(defaults):  # validate.py's defaults (seed 42) passed for train.py's in cards
        raise refuse(f'its parser has no {" or ".join(f"--{k}" for k in ("epochs", "lr") if k not in defaults)}: '
                     f'not a training script (validate.py, benchmark.py?)')
    return defaults


def recipe_args(args: Dict[str, Any], defaults: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """The arguments that make the recipe, minus paths, machine and logging settings (:data:`NON_RECIPE_KEYS`) and
    the settings of a switch left off (:data:`SWITCHED_GROUPS`: ``amp_dtype`` without ``amp``), those train.py
    never reads (:data:`UNREAD_KEYS`) and those it does not read beside the others (:func:`unread_reason`:
    ``decay_epochs`` under ``sched: cosine``, ``bce_loss`` without smoothing or mixing): those that differ
    from train.py's ``defaults``; without them, every argument the run recorded except switches left off (train.py's
    switches are all off by default), unset ones (None, empty) and ``eval_metric: top1``."""
    def same(a: Any, b: Any) -> bool:
        norm = (lambda v: list(v) if isinstance(v, tuple) else v)
        return norm(a) == norm(b)

    unread = {k for k in args if unread_reason(k, args)}  # --decay-epochs under --sched cosine
    off = tuple(p for switch, prefixes in SWITCHED_GROUPS.items() if not args.get(switch) or switch in unread
                for p in prefixes)

    def recipe(k: str) -> bool:
        return k not in NON_RECIPE_KEYS and k not in UNREAD_KEYS and k not in unread and \
            not k.startswith(('wandb', *off))

    if defaults is None:  # any argument may change what is trained (cooldown_epochs, momentum, layer_decay, drop, ...)
        return {k: v for k, v in args.items() if recipe(k) and v is not False and v not in (None, '', {}, [], ())
                and not (k == 'eval_metric' and v == 'top1')}  # train.py's default metric is no part of a recipe
    return {k: v for k, v in args.items() if recipe(k) and not (k in defaults and same(v, defaults[k]))}


def format_recipe(recipe: Dict[str, Any]) -> str:
    """A recipe as YAML lines (``key: value``, train.py's names)."""
    import yaml
    return yaml.safe_dump({k: list(v) if isinstance(v, tuple) else v for k, v in recipe.items()},
                          default_flow_style=None, sort_keys=False)


def last_flag_value(args: Sequence[str], flag: str) -> Optional[str]:
    """The value of the last ``flag VALUE`` / ``flag=VALUE`` in ``args`` (argparse keeps the last)."""
    value = None
    for i, arg in enumerate(args):
        if arg == flag and i + 1 < len(args):
            value = args[i + 1]
        elif arg.startswith(flag + '='):
            value = arg.split('=', 1)[1]
    return value


def recipe_path(dataset: str) -> Path:
    """The recipe YAML of a dataset: shipped in the wheel as ``timm_sl/recipes``, or ``recipes/`` of a checkout."""
    if dataset not in DATASETS:
        raise ValueError(f'unknown dataset {dataset!r}; allowed: {", ".join(DATASETS)}')
    name = DATASETS[dataset][0]
    here = Path(__file__).resolve().parents[1]  # the timm_sl package
    for folder in (here / 'recipes', here.parent / 'recipes'):
        if (folder / name).is_file():
            return folder / name
    raise FileNotFoundError(f'recipe {name} not found in {here / "recipes"} or {here.parent / "recipes"}')


# recipe keys reproduce reads itself: integers with their least value, or text (train.py takes a recipe's values as
# they are, and fails on a wrong type only where it uses one, mid-run)
_RECIPE_TYPES = {'epochs': 1, 'num_classes': 1, 'workers': 0, 'dataset': str, 'train_split': str, 'val_split': str,
                 'class_map': str}


def read_recipe(path: Union[str, Path]) -> Dict[str, Any]:
    """A recipe YAML (train.py's ``--config``) as ``{argument: value}``; an empty file is ``{}``.

    Raises:
        ValueError: naming the file: not UTF-8 YAML, not a mapping, or a key reproduce reads (``epochs``,
            ``num_classes``, ``workers``, the data keys) of another type.
    """
    import yaml
    path = Path(path)
    try:
        recipe = yaml.safe_load(path.read_text(encoding='utf-8'))
    except (yaml.YAMLError, UnicodeDecodeError) as e:
        raise ValueError(f'{path} is not a YAML recipe ({first_line(e)}); allowed: train.py arguments as '
                         f'"name: value" lines') from None
    if recipe is None:
        return {}
    if not isinstance(recipe, dict):
        raise ValueError(f'{path} holds a YAML {type(recipe).__name__}, not a recipe; allowed: train.py arguments as '
                         f'"name: value" lines')
    for key, least in _RECIPE_TYPES.items():
        value = recipe.get(key)
        if value is None:
            continue
        if least is str:
            if not isinstance(value, str):
                raise ValueError(f'{path}: {key}: {value!r} is not allowed; expected text')
        elif not isinstance(value, int) or isinstance(value, bool) or value < least:
            raise ValueError(f'{path}: {key}: {value!r} is not allowed; expected an integer >= {least}')
    return recipe


def _source_tree(script: Union[str, Path]) -> Optional[ast.AST]:
    """A train.py's source parsed with :mod:`ast` (never run: the script may train when imported), or None."""
    try:
        return ast.parse(Path(script).read_bytes())
    except (SyntaxError, ValueError, OSError):
        return None


def _option_calls(script: Union[str, Path]) -> Optional[List[Tuple[List[str], str]]]:
    """``(option strings, dest)`` of each ``add_argument`` call in a train.py's source (:func:`_source_tree`; a
    positional argument's dest is its name), or None when the source has no such call or one whose names are not plain
    strings (a ``for`` loop over strings is followed): then what it accepts is not known."""
    tree = _source_tree(script)
    if tree is None:
        return None
    calls: List[Tuple[List[str], str]] = []
    known = True

    def add(names: List[str], dest: Optional[str]) -> None:
        longs = [n for n in names if n.startswith('--')]
        if dest is None:
            dest = longs[0][2:] if longs else names[0].lstrip('-') if names[0].startswith('-') else names[0]
            dest = dest.replace('-', '_') if names[0].startswith('-') else dest
        calls.append((names, dest))

    def visit(node: ast.AST, loops: Dict[str, List[str]]) -> None:
        nonlocal known
        if isinstance(node, ast.For) and isinstance(node.target, ast.Name) and \
                isinstance(node.iter, (ast.Tuple, ast.List)) and \
                all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.iter.elts):
            loops = {**loops, node.target.id: [e.value for e in node.iter.elts]}
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == 'add_argument':
            dest = next((k.value for k in node.keywords if k.arg == 'dest'), None)
            plain = all(isinstance(a, ast.Constant) and isinstance(a.value, str) for a in node.args)
            looped = [a.id for a in node.args if isinstance(a, ast.Name) and a.id in loops]
            if dest is not None and not (isinstance(dest, ast.Constant) and isinstance(dest.value, str)):
                known = False
            elif node.args and plain:
                add([a.value for a in node.args], dest and dest.value)
            elif len(node.args) == 1 and looped:  # for flag in ('--a', '--b'): p.add_argument(flag)
                for name in loops[looped[0]]:
                    add([name], dest and dest.value)
            else:
                known = False
        for child in ast.iter_child_nodes(node):
            visit(child, loops)

    visit(tree, {})
    return calls if calls and known else None


def train_script_options(script: Union[str, Path]) -> Optional[Dict[str, str]]:
    """``{option string: dest}`` of every ``add_argument`` call in a train.py's source (:func:`_option_calls`), or
    None when what it accepts is not known."""
    calls = _option_calls(script)
    return None if calls is None else {name: dest for names, dest in calls for name in names}


def train_script_spellings(script: Union[str, Path]) -> Optional[Dict[str, str]]:
    """``{option string: its spelling}`` of a train.py's source (:func:`_option_calls`): each option string of an
    ``add_argument`` call spelled as its first ``--`` name (``-b`` as ``--batch-size``), so that one option given two
    ways compares equal; None when what it accepts is not known."""
    calls = _option_calls(script)
    if calls is None:
        return None
    return {name: next((n for n in names if n.startswith('--')), names[0]) for names, _ in calls for name in names}


def spell_option(arg: str, spellings: Optional[Dict[str, str]]) -> Tuple[str, Optional[str]]:
    """An option word of train.py's command line as ``(option, value written into the word or None)``, the option
    spelled as :func:`train_script_spellings` spells it: ``-b64``, ``-b`` and ``--batch`` (an abbreviation argparse
    takes) are ``--batch-size``. Without ``spellings``, or a word none of them reads, the option as written."""
    name, sep, value = arg.partition('=')
    attached = value if sep else None
    if not spellings:
        return name, attached
    if name in spellings:
        return spellings[name], attached
    if name.startswith('--'):
        found = {spellings[o] for o in spellings if o.startswith(name)}
        return (found.pop() if len(found) == 1 else name), attached
    short = next((o for o in sorted(spellings, key=len, reverse=True)
                  if not o.startswith('--') and len(o) > 1 and arg.startswith(o)), None)  # -b64: -b with 64
    return (spellings[short], arg[len(short):]) if short else (name, attached)


def train_script_default(script: Union[str, Path], option: str) -> Any:
    """The ``default=`` of ``option`` in a train.py's source (:func:`_source_tree`) when it is a constant; None when
    the source gives none or it is not known."""
    tree = _source_tree(script)
    for node in ast.walk(tree) if tree is not None else ():
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == 'add_argument' \
                and any(isinstance(a, ast.Constant) and a.value == option for a in node.args):
            default = next((k.value for k in node.keywords if k.arg == 'default'), None)
            return default.value if isinstance(default, ast.Constant) else None
    return None


# the options reproduce gives each train.py run (timm_sl.tools.reproduce.train_command)
_PASSED = ('--data-dir', '--config', '--model', '--model-kwargs', '--lr', '--seed', '--output', '--experiment',
           '--resume')


def check_recipe_keys(recipe: Union[str, Path], script: Union[str, Path]) -> None:
    """Refuse a recipe key that is no argument of ``script`` (:func:`train_script_options`; nothing is checked when
    they are not known): train.py sets a recipe's keys as its parser's defaults, so an unknown one (``epoch: 5``) is
    ignored without a word and the run trains with train.py's own default.

    Raises:
        ValueError: the first such key, naming the recipe and the script, with the nearest argument names; or a script
            without the options each run is given (not train.py: validate.py, benchmark.py), naming it.
    """
    options = train_script_options(script)
    if options is None:
        return
    missing = [flag for flag in _PASSED if flag not in options]
    if missing:  # validate.py, benchmark.py ...: every recipe key would be blamed instead
        raise _not_train_py(Path(script), f'it has no {", ".join(missing[:3])}{", ..." * (len(missing) > 3)} '
                                          f'option, which each run is given')
    dests = set(options.values())
    for key in read_recipe(recipe):
        if key not in dests:
            near = difflib.get_close_matches(str(key), sorted(dests), n=3)
            raise ValueError(f'{recipe}: {key} is not an argument of {script}, which would ignore it (and use its own '
                             f'default); allowed: its argument names' +
                             (f', e.g. {", ".join(near)}' if near else ''))


def expand_abbreviations(args: Sequence[str], options: Optional[Dict[str, str]], script: Union[str, Path] = 'train.py',
                         spellings: Optional[Dict[str, str]] = None) -> List[str]:
    """``args`` with each abbreviated ``--option`` (``--exper``, ``--epoch=5``) written out as the one option of
    ``options`` it begins (:func:`train_script_options`), as train.py's argparse reads it, and with ``spellings``
    (:func:`train_script_spellings`) each second ``--`` name of an option (``--dr``) as its first (``--decay-rate``):
    the checks on the arguments know an option by one name. Without ``options``, ``args`` as they are.

    Raises:
        ValueError: an ``--option`` that is none of ``script``'s, or begins more than one (train.py would stop at
            once, in every run); one line.
    """
    if not options:
        return list(args)
    out = []
    for arg in args:
        name, sep, value = arg.partition('=')
        if name.startswith('--') and len(name) > 2 and name not in options:
            found = [o for o in options if o.startswith(name)]
            if len(found) != 1:
                near = difflib.get_close_matches(name, sorted(o for o in options if o.startswith('--')), n=3)
                raise ValueError(f'{name} after -- ' + (
                    f'is ambiguous for {script}: it begins {", ".join(found[:4])}{", ..." * (len(found) > 4)}; '
                    f'allowed: the whole name' if found else
                    f'is not an argument of {script}; allowed: its arguments' +
                    (f', e.g. {", ".join(near)}' if near else '')))
            arg = found[0] + sep + value
            name = found[0]
        first = (spellings or {}).get(name, name)
        if name.startswith('--') and first.startswith('--') and first != name:
            arg = first + sep + value
        out.append(arg)
    return out
