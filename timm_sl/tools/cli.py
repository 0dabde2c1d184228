"""The ``timm-sl`` command.

Only the standard library is imported here: ``timm-sl --help`` and ``--version`` answer without loading torch or
timm. Each ``cmd_*`` function imports what it needs. A mistake ends as one line on stderr (``timm-sl COMMAND: what
was wrong; what is allowed``) and exit status 2, not as a traceback: the parser reports the arguments' (without the
usage lines), :func:`main` every error of :data:`~timm_sl.tools.errors.USER_ERRORS` that a command or the library
functions below it raise; this module is the only place that turns exceptions into exit statuses.
"""
import argparse
import contextlib
import difflib
import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Optional, Sequence, Tuple, Union

from .arg_types import MAX_SEED, OneLineParser, dataset_name, kwarg_words, positive_float as _positive_float, \
    positive_int, seed as _seed, shift_ratio as _shift_ratio
from .errors import (
    BUILD_ERRORS, USER_ERRORS, describe, name_text, shown, write_atomically)
from .paths import check_command_paths
from .plot import figure_path
from ..version import __version__

if TYPE_CHECKING:  # torch is imported where a command needs it: `timm-sl --help` stays quick
    import torch

__all__ = ['CommandFailed', 'build_parser', 'main']


def _format_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(str(c)) for c in col) for col in zip(header, *rows)]
    lines = ['  '.join(str(c).ljust(w) for c, w in zip(header, widths)).rstrip()]
    lines.append('  '.join('-' * w for w in widths))
    lines += ['  '.join(str(c).ljust(w) for c, w in zip(row, widths)).rstrip() for row in rows]
    return '\n'.join(lines)


def _did_you_mean(word: str, choices: Sequence[str]) -> str:
    close = difflib.get_close_matches(word, choices, n=3, cutoff=0.6)
    return f' (did you mean {" or ".join(close)}?)' if close else ''


def _did_you_mean_model(name: str, names: Sequence[str]) -> str:
    """Close ``sl_`` names, also for a plain timm name (``vit_tiny_patch16_224`` -> ``sl_vit_tiny``)."""
    return _did_you_mean(name if name.startswith('sl_') else f'sl_{name}', names)


def _register_models() -> List[str]:
    """Register the ``sl_`` models and the ``slify`` model (also when the autoload hook is off) and return the
    ``sl_`` names."""
    import timm
    import timm_sl.models  # noqa: F401
    import timm_sl.slify_entry  # noqa: F401
    return timm.list_models('sl_*')


def _check_model_name(args: argparse.Namespace, name: str) -> None:
    names = _register_models()
    slify = args.command != 'demo'  # the demo trains an sl_ model against its own baseline: it refuses slify
    if name not in names and not (slify and name == 'slify'):
        if name.startswith(('local-dir:', 'hf-hub:')) and args.command in ('temperature', 'kld', 'attention',
                                                                            'receptive-field'):
            folder = name.split(':', 1)[1] if name.startswith('local-dir:') else 'FOLDER'
            raise ValueError(f'--model {name}: an exported model is read with --checkpoint {folder} (its '
                             f'model.safetensors and config.json), --model left out; allowed: --model NAME of an sl_ '
                             f'model or slify, or --checkpoint FOLDER of a timm-sl export (an hf-hub: one downloaded '
                             f'first)')
        also = ', or slify (--model-kwargs base=NAME: any timm model it converts)' if slify else ''
        raise ValueError(f'unknown model {name!r}{_did_you_mean_model(name, names)}; allowed: the sl_ models '
                         f'{", ".join(names)}{also}')


def _model_error(args: argparse.Namespace, name: str, kwargs: Dict[str, Any], error: Exception) -> ValueError:
    """One line for a model that could not be built; unknown kwargs get close matches among the accepted ones."""
    hints = ''
    if isinstance(error, TypeError) and 'unknown model kwargs' in str(error):
        import timm
        import torch
        from timm_sl.layers.sl_args import accepted_kwargs
        base = {k: v for k, v in kwargs.items() if k == 'base'}  # slify is built of its base (none: 'base=None')
        try:
            with torch.device('meta'):
                allowed = sorted(accepted_kwargs(type(timm.create_model(name, **base))))
        except BUILD_ERRORS:  # the error's own list of what is allowed stands
            allowed = []
        hints = ''.join(_did_you_mean(k, allowed) for k in kwargs if k not in allowed)
    wrong_type = isinstance(error, TypeError) and not any(
        words in str(error) for words in ('unknown model kwargs', 'keyword argument'))  # a value of another type
    # torch's / timm's own words that name none of the kwargs (drop_rate=2: 'dropout probability has to be ...')
    import traceback
    ours = 'timm_sl' in Path(traceback.extract_tb(error.__traceback__)[-1].filename).parts  # already one line
    unnamed = isinstance(error, (ValueError, RuntimeError)) and not ours and not any(k in str(error) for k in kwargs)
    wrong_type = wrong_type or unnamed and bool(kwargs)
    if isinstance(error, (ArithmeticError, AssertionError)) or wrong_type:  # timm divides by sizes it does not check
        given = ' '.join(f'{k}={v}' for k, v in kwargs.items())  # (num_heads=0), asserts on others (global_pool)
        allowed = 'sizes above 0 (num_heads, patch_size, dims)' if isinstance(error, ArithmeticError) else \
            "the values timm's constructor accepts"  # and takes a word for a number as it comes (embed_dim=nan)
        texts = [f'{k}={v!r}' for k, v in kwargs.items() if isinstance(v, str) and k != 'base']  # slify's is a name
        if wrong_type and texts:
            allowed = f"values of the types timm's constructor takes (read as text, not a number: {', '.join(texts)})"
        reason = describe(error)  # mlp_ratio=nan: int('nannan...'), the text repeated once per channel
        reason = reason if len(reason) <= 200 else f'{reason[:200]}...'
        return ValueError(f'{name} cannot be built with --model-kwargs {given} ({type(error).__name__}: '
                          f'{reason}); allowed: {allowed}')
    return ValueError(f'{describe(error)}{hints}')


def _check_whole_model(args: argparse.Namespace, kwargs: Dict[str, Any]) -> None:
    """Refuse ``features_only`` in ``--model-kwargs``, beside a model name or a checkpoint alike."""
    if kwargs.get('features_only'):  # timm cuts the model after its last out_indices block: kld read 9 of 12 depths
        raise ValueError(f'--model-kwargs features_only={kwargs["features_only"]!r}: timm-sl {args.command} needs the '
                         f'whole model, and timm builds a features_only one without the blocks after its last '
                         f'out_indices (and without its classifier); allowed: features_only left out')


def _create_model(args: argparse.Namespace, name: str, kwargs: Dict[str, Any], **create_kwargs: Any):
    """``timm.create_model`` for a command: a wrong name, kwarg or missing weights end as one line."""
    import timm
    _check_model_name(args, name)
    for key in sorted(set(kwargs) & set(create_kwargs)):  # create_model's 'got multiple values for keyword argument'
        raise ValueError(f'--model-kwargs {key}={kwargs[key]!r}: timm-sl {args.command} gives the model {key} itself; '
                         f'allowed: --{key.replace("_", "-")} instead, or {key} left out of --model-kwargs')
    _check_whole_model(args, kwargs)
    arch = kwargs.get('base') if name == 'slify' else name  # slify loads its base's weights (an unknown base: it
    known = isinstance(arch, str) and timm.is_model(arch.split('.')[0])  # says so as it is built)
    if create_kwargs.get('pretrained') and known and not timm.list_pretrained(arch if '.' in arch else f'{arch}.*'):
        whose = f'slify({arch}): {arch}' if arch != name else name
        raise ValueError(f'{whose} has no pretrained weights (no tag in timm.list_pretrained); allowed: --checkpoint '
                         f'FILE (a train.py checkpoint), or neither for random init')
    try:
        with _hub_retries_in_one_line(args) if create_kwargs.get('pretrained') else contextlib.nullcontext():
            return timm.create_model(name, **kwargs, **create_kwargs)
    except BUILD_ERRORS as e:  # unknown / bad kwarg, weights that cannot be loaded
        raise _model_error(args, name, kwargs, e) from e
    except OSError as e:  # offline: the Hub's 'An error happened while trying to locate the file ...', naming nothing
        if not create_kwargs.get('pretrained'):
            raise
        whose = f'slify({arch})' if arch != name else name
        reason = describe(e).splitlines()[0]
        raise ValueError(f'--pretrained {whose}: its weights could not be downloaded or read ({type(e).__name__}: '
                         f'{reason}); allowed: --pretrained with the Hugging Face Hub reachable or the weights in its '
                         f'cache (HF_HOME), --checkpoint FILE, or neither for random init') from e


class _HubRetries(logging.Filter):
    """huggingface_hub's warnings per retry of a request to the Hub that failed (offline: about 20 lines over a minute
    before the error; an HTTP error it retries; rate limiting) as one note on stderr, the first time."""

    def __init__(self, command: str) -> None:
        super().__init__()
        self.command, self.noted = command, False

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        if not (' thrown while requesting ' in text or text.startswith(('Retrying in ', 'Rate limited. '))):
            return True
        if not self.noted:  # offline: '[Errno -2] ...'; an answer such as 'HTTP Error 503'; 'Rate limited. ...'
            self.noted = True
            reason = text.split(' thrown while requesting ')[0].strip("'").split(' Waiting ')[0].rstrip('.')
            print(f'timm-sl {self.command}: a request to the Hugging Face Hub failed ({reason}); huggingface_hub '
                  f'retries for about a minute (HF_HUB_OFFLINE=1: the weights in its cache, at once)', file=sys.stderr,
                  flush=True)
        return False


@contextlib.contextmanager
def _hub_retries_in_one_line(args: argparse.Namespace) -> Iterator[None]:
    """While pretrained weights load: :class:`_HubRetries` on the logger of huggingface_hub's requests."""
    logger = logging.getLogger('huggingface_hub.utils._http')
    retries = _HubRetries(args.command)
    logger.addFilter(retries)
    try:
        yield
    finally:
        logger.removeFilter(retries)


def _require_plotting(args: argparse.Namespace) -> None:
    """Before any work: a command that draws needs matplotlib (the ``[demo]`` extra), and its ``--out`` must be free
    or an earlier chart (anything else only with ``--overwrite``: see :func:`~timm_sl.tools.plot.check_chart_out`)."""
    from timm_sl.tools.plot import check_chart_out, require_matplotlib
    require_matplotlib()
    check_chart_out(args.out, args.overwrite)


def cmd_list(args: argparse.Namespace) -> int:
    """The table, a row printed as soon as it is counted (models built on the meta device: see model_counts)."""
    import timm
    from timm_sl.tools.paper import TABLE2
    from timm_sl.tools.profile import built_input_size, model_counts

    sl_names = set(_register_models())
    names = [n for n in timm.list_models(args.filter) if n in sl_names]
    if not names:
        raise ValueError(f'no sl_ model matches {args.filter!r}; allowed: a pattern of sl_ names, e.g. sl_vit_*')
    header = ['model', 'params (M)', 'MACs (M)', 'input', 'classes', 'pretrained tags']
    widths = [max(len(n) for n in names), 10, 8, 9, 7, 15]
    if args.baseline:
        header[3:3] = ['base params (M)', 'base MACs (M)', 'paper MACs/params (M): SL ; base']
        widths[3:3] = [15, 13, 32]

    def line(cells: Sequence[str]) -> str:
        return '  '.join(str(c).ljust(w) for c, w in zip(cells, widths)).rstrip()
    print(line(header), line(['-' * w for w in widths]), sep='\n', flush=True)
    for name in names:
        params, macs, model = model_counts(name)
        cfg = model.pretrained_cfg
        tags = [t.split('.', 1)[1] for t in timm.list_pretrained(f'{name}.*')]
        # the input and classes the model is built with, which its MACs are counted at (a plugin's sl_ model built
        # at 32 px with 10 classes kept timm's cfg of its parent: '3x224x224', '1000' beside 32 px MACs)
        row = [name, f'{params / 1e6:.2f}', f'{macs / 1e6:.1f}', 'x'.join(map(str, built_input_size(model))),
               str(getattr(model, 'num_classes', cfg['num_classes'])), ', '.join(tags) or '-']
        if args.baseline:
            baseline = getattr(type(model), 'baseline_kwargs', None)  # None: not a timm_sl class (a user's plugin)
            base_params, base_macs, _ = model_counts(name, **baseline) if baseline is not None else (None, None, None)
            paper = TABLE2.get(name)
            paper_text = f"{paper['sl'][0]}/{paper['sl'][1]} ; {paper['base'][0]}/{paper['base'][1]}" if paper else '-'
            row[3:3] = ['-', '-', paper_text] if baseline is None else \
                [f'{base_params / 1e6:.2f}', f'{base_macs / 1e6:.1f}', paper_text]
        print(line(row), flush=True)
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    import statistics
    from timm_sl.tools.demo import run_demo
    from timm_sl.tools.plot import plot_curves

    _require_plotting(args)
    if args.seed + args.seeds - 1 > MAX_SEED:  # the last runs' seeds: found before the first runs train
        raise ValueError(f'--seed {args.seed} --seeds {args.seeds} runs up to seed {args.seed + args.seeds - 1}; '
                         f'allowed: seeds up to {MAX_SEED} (a lower --seed or fewer --seeds)')
    if args.model == 'slify':  # building it first would ask for base=NAME, which the demo then refuses anyway
        raise ValueError('slify is not an sl_ model: the demo trains an sl_ model against its own baseline (spt / lsa '
                         'off); allowed: the models of timm.list_models("sl_*"), e.g. --model sl_vit_32')
    probe = _create_model(args, args.model, args.model_kwargs)  # a wrong name or kwarg: one line, before training
    from timm_sl.tools.analysis import attention_layers
    if not attention_layers(probe):  # its switches say LSA, yet no layer has it: SPT alone, labelled 'SL'
        given = ' '.join(f'{k}={v}' for k, v in args.model_kwargs.items())
        raise ValueError(f'{args.model} with --model-kwargs {given} has no attention layer, so LSA has nothing to act '
                         f'on; allowed: a model with at least one attention layer (depth >= 1)')
    results = run_demo(args.model, epochs=args.epochs, seeds=args.seeds, seed=args.seed, batch_size=args.batch_size,
                       lr=args.lr, model_kwargs=args.model_kwargs, limit=args.limit,
                       label=_variant(probe))  # what the kwargs make it: 'SL', or the paper's tag (lsa=False: 'S')
    sl, base = results
    given = ''.join(f', {k}={v}' for k, v in args.model_kwargs.items())
    print(f'\n{args.model} on scikit-learn digits ({sl.train_images} training / {sl.val_images} validation images, '
          f'8x8 upscaled), {args.epochs} epoch{"s" * (args.epochs != 1)} (counted from 1), {args.seeds} seed(s): '
          f'validation top-1 (%), mean '
          f'over seeds')
    if sl.val_images < 100:
        print(f'warning: {sl.val_images} validation image(s): each is {100 / sl.val_images:.3g} points of top-1, so '
              f'these numbers are a smoke test, not a comparison (drop --limit for all 1797 images)', file=sys.stderr)
    rows = [[str(e + 1), f'{a:.2f}', f'{b:.2f}'] for e, (a, b) in enumerate(zip(sl.mean_curve, base.mean_curve))]
    print(_format_table(['epoch', f'{sl.name} top-1', 'baseline top-1'], rows))

    def spread(values):
        return f'{statistics.fmean(values):.2f}' + (f' +- {statistics.stdev(values):.2f}' if len(values) > 1 else '')
    print()
    print(_format_table(['model', 'kwargs', 'best top-1', 'train img/s', 'params (M)'], [
        [r.name, ' '.join(f'{k}={v}' for k, v in r.kwargs.items()) or '-', spread(r.best),
         f'{statistics.fmean(r.train_img_s):.1f}', f'{r.params / 1e6:.2f}'] for r in results]))
    seeds = f'seed {args.seed}' if args.seeds == 1 else \
        f'mean over {args.seeds} seeds, {args.seed}-{args.seed + args.seeds - 1}'
    images = f'top-1 of {sl.val_images} validation images' + (
        f', {100 / sl.val_images:.3g} points each: a smoke test' if sl.val_images < 100 else '')
    title = f'{args.model}{given}, {sl.name} vs baseline on digits, trained from scratch ({seeds}); {images}'
    switches = ('spt', 'lsa', 'spt_pool')
    base_given = ''.join(f', {k}={v}' for k, v in base.kwargs.items() if k not in switches)
    off = '/'.join(k for k in switches if base.kwargs.get(k) is False)  # PiT's / Swin's: the pooling SPT's too
    plot_curves({f'{sl.name} ({args.model}{given})': sl.mean_curve,
                 f'baseline ({args.model}{base_given}, {off} off)': base.mean_curve}, args.out, title=title,
                y_label='validation top-1 (%)', x_label='epoch', x_start=1, y_range=(0., 100.))
    print(f'\nlearning curves: {shown(args.out)}')
    return 0


def _note_still_training(args: argparse.Namespace, checkpoint: Union[str, Path]) -> None:
    """One line, once per checkpoint, where the run folder of ``checkpoint`` is among those of a ``timm-sl
    reproduce`` still running: its weights are read as saved now, not as the run will end."""
    from timm_sl.tools.runs import checkpoint_file, reproduce_holding
    file = checkpoint_file(checkpoint)
    noted = vars(args).setdefault('noted_training', set())
    lock = reproduce_holding(file.parent)
    if lock and file not in noted:
        noted.add(file)
        print(f'timm-sl {args.command}: note: {shown(file.parent)} may still be training (a timm-sl reproduce '
              f'still running holds {shown(lock)}): {shown(file.name)} is read as saved now; read it again once that '
              f'reproduce has ended',
              file=sys.stderr)  # as the other notes: not mixed into the tables kld and temperature print


def cmd_export(args: argparse.Namespace) -> int:
    from timm_sl.tools.hub import export_checkpoint
    from timm_sl.tools.runs import checkpoint_file
    from timm_sl.tools.train_args import recipe_train_script, train_script_defaults
    if args.model:
        _check_model_name(args, args.model)
    script = recipe_train_script(args.train_script)  # as release: --train-script, else TIMM_REPO
    before = _folder_state(Path(args.out))
    out, source = export_checkpoint(args.checkpoint, args.model, args.out, model_kwargs=args.model_kwargs,
                                    summary=args.summary, dataset=args.dataset, label_names=args.label_names,
                                    overwrite=args.overwrite,
                                    train_defaults=train_script_defaults(script) if script else None)
    after = _folder_state(out)
    written = sorted(name for name in after if before.get(name) != after[name])
    kept = sorted(set(after) - set(written))
    _note_still_training(args, args.checkpoint)
    print(f'exported {shown(checkpoint_file(args.checkpoint))} ({source} weights) to {shown(out)}: '
          f'{", ".join(map(shown, written))}' +
          (f' (kept, not written by this export: {", ".join(map(shown, kept))})' if kept else ''))
    return 0


def _folder_state(folder: Path) -> Dict[str, Tuple[int, int, int]]:
    """Each entry of ``folder`` (none when it is missing) -> (inode, size, mtime): what an export wrote there is
    what changed, not what ``--overwrite`` found there (a user's notes.txt was listed as exported)."""
    if not folder.is_dir():
        return {}
    return {p.name: (s.st_ino, s.st_size, s.st_mtime_ns) for p in folder.iterdir() for s in [p.lstat()]}


def cmd_reproduce(args: argparse.Namespace) -> int:
    from timm_sl.tools.reproduce import run_from_args
    return run_from_args(args)


def cmd_release(args: argparse.Namespace) -> int:
    from timm_sl.tools.release import run_from_args
    return run_from_args(args)


def cmd_push(args: argparse.Namespace) -> int:
    from timm_sl.tools.hub import push_folder
    url = push_folder(args.folder, args.repo_id, private=args.private, revision=args.revision)
    print(f'pushed {shown(args.folder)} to {args.repo_id}: {url}')
    return 0


def _baseline_kwargs(name: str) -> Dict[str, Any]:
    """The switches that make ``name`` its paper baseline (SPT, LSA and Spool off)."""
    from timm_sl.tools.paper import VARIANTS, family_of
    return dict(VARIANTS.get(family_of(name), {}).get('base', dict(spt=False, lsa=False)))


def _analysis_run(args: argparse.Namespace, checkpoint: Optional[str] = None, baseline_first: bool = False):
    """``(model, run record)`` an analysis subcommand looks at: random init or ``--pretrained`` weights (record None),
    or a train.py checkpoint (``--model``, else the model its run recorded).

    A checkpoint whose run recorded the model is built with the kwargs it recorded (with ``--model-kwargs``:
    those, plus every kwarg the run recorded that they leave out; a compared run is built with its own only; an option
    its weights do not record set to another value than the run's, or its default, is refused). One that records
    none is built as whichever of the model (``--model-kwargs`` as given) and its baseline (SPT/LSA off) its state
    dict fits strictly (an LSA layer's learned ``temperature``, SPT's projection), the baseline tried first with
    ``baseline_first``.
    What the model is comes from the model built (:func:`_variant`), never from the flag that named the file.
    """
    kwargs = dict(args.model_kwargs or {})
    built = vars(args).setdefault('built_kwargs', {})  # (checkpoint, baseline_first) -> kwargs it was built with
    _check_whole_model(args, kwargs)  # a checkpoint's run too: its weights did not say why the wrapper failed
    if not checkpoint:
        built[None, baseline_first] = kwargs
        return _create_model(args, args.model, kwargs, pretrained=getattr(args, 'pretrained', False)).eval(), None
    import dataclasses
    from timm_sl.layers.sl_args import SL_ARG_NAMES
    from timm_sl.tools.checkpoint import build_model, build_run_model, check_same_run, read_run_checkpoint
    from timm_sl.tools.runs import checkpoint_file
    name = args.model
    if name:
        _check_model_name(args, name)
    try:
        record, loaded = read_run_checkpoint(checkpoint)
        check_same_run(record, loaded)  # its args.yaml gives the data config, whichever model is built
        _note_still_training(args, checkpoint)
        exported = _exported_config(record)
        if exported and not record.model:  # an exported folder: its config.json names the model (and errors say so)
            arch, model_args = exported[1]['architecture'], exported[1].get('model_args', {})
            record = record.with_model(arch, model_args)
            loaded = dataclasses.replace(loaded, arch=arch, args=dict(model=arch, model_kwargs=model_args))
        source = f'its {exported[0].name}' if exported else 'its run'
        name = name or record.model
        if not name:
            raise ValueError(f'{checkpoint} records no model (no args.yaml beside it naming one, no arch / args in '
                             f'it); allowed: name it with --model')
        if not args.model and name != 'slify' and name not in _register_models():  # the run's, not the user's
            raise ValueError(f'{checkpoint} records model {name!r} ({source}), not an sl_ model; allowed: a '
                             f'checkpoint of an sl_ model or slify, or --model NAME for the model its weights fit')
        _check_model_name(args, name)
        if 'ema' in loaded.source:  # what titles say of the weights (see _run_file)
            vars(args).setdefault('ema_checkpoints', set()).add(checkpoint)
        if record.model == name and (record.args or loaded.args):  # as train.py built it (--in-chans / --gp too),
            # as export builds it; a hand-saved `arch` alone records no kwargs: built as the bare state dicts below
            kept = SL_ARG_NAMES + ('spt_pool', 'base')  # slify's base is what the model is, as a switch is
            if baseline_first:  # the compared run is the one it recorded: the kwargs given are the first model's
                kwargs = {}
            elif args.model_kwargs is not None:
                _check_unseen_options(checkpoint_file(checkpoint), source, record.model_kwargs, kwargs)
            # a kwarg the run recorded and --model-kwargs leave out is the run's (a head count, an activation: the
            # weights load all the same without it, into another model than the one trained)
            run = record if args.model_kwargs is None else record.with_model(name, {**record.model_kwargs, **kwargs})
            model, built[checkpoint, baseline_first] = build_run_model(run, loaded)
            if args.model_kwargs is not None and not baseline_first:  # loaded: its weights do not record the kwarg
                _check_other_values(checkpoint_file(checkpoint), source, record.build_kwargs(), kwargs)
                unrecorded = [k for k in kwargs if k not in record.build_kwargs() and k not in kept]
                if unrecorded:  # the run trained with the model's default: the one built must be alike
                    _check_built_alike(checkpoint_file(checkpoint), source, unrecorded, kwargs,
                                       build_run_model(record, loaded, load=False)[0], model)
            return model.eval(), record
        from timm_sl.layers import with_switches
        baseline = with_switches(kwargs, _baseline_kwargs(name))  # SPT's options and a given lsa_mask off with them
        candidates = [baseline, kwargs] if baseline_first else [kwargs, baseline]
        first_error = None
        for candidate in [c for i, c in enumerate(candidates) if c not in candidates[:i]]:
            try:
                model, built[checkpoint, baseline_first] = build_model(loaded, name, candidate)
            except ValueError as e:  # does not fit: the other candidate may
                first_error = first_error or e
                continue
            return model.eval(), record
        if record.model and record.model != name:  # another model's run: say that, not its hundred keys
            file = checkpoint_file(checkpoint)
            if baseline_first:
                raise _not_the_first_model(file, record.model, source, name) from first_error
            raise ValueError(f'--checkpoint {file} holds {record.model} ({source}), not --model {name}; allowed: '
                             f'--model {record.model}, or --model left out') from first_error
        if baseline_first:  # a bare state dict: its hundred keys say less than what it is not
            what = 'records no model kwargs' if record.model else 'records no model'  # a hand-saved arch alone
            raise ValueError(f'--compare-checkpoint {checkpoint_file(checkpoint)} {what} and fits neither '
                             f'{name} nor its baseline with --model-kwargs {kwargs} (the weights of another model or '
                             f'configuration); allowed: a checkpoint of {name} (SL, its baseline or another mix of its '
                             f'switches), with --model-kwargs giving the configuration it was trained with') \
                from first_error
        raise first_error
    except (FileNotFoundError,) + BUILD_ERRORS as e:
        raise _model_error(args, name, kwargs, e) from e


def _check_unseen_options(checkpoint: Path, source: str, trained: Dict[str, Any], given: Dict[str, Any]) -> None:
    """Refuse ``--model-kwargs`` that set an SL option the weights do not record (SPT's shift and its directions,
    LSA's diagonal mask, the temperature ratio) to another value than the run ``trained`` with: the weights load
    all the same, into a model that is not the one trained (a non-learned temperature, a mask, a shift apart)."""
    from timm_sl.layers.sl_args import SL_ARG_NAMES, SlArgs
    was = SlArgs(**{k: v for k, v in trained.items() if k in SL_ARG_NAMES})
    now = SlArgs(**{k: v for k, v in {**trained, **given}.items() if k in SL_ARG_NAMES})
    for key, read in (('shift_ratio', 'shift_ratio'), ('shift_directions', 'shift_directions'),
                      ('lsa_mask', 'diag_mask'), ('lsa_temp_ratio', 'lsa_temp_ratio')):
        if key in given and getattr(was, read) != getattr(now, read) and (was.spt or not key.startswith('shift')):
            value = trained[key] if key in trained else f'{getattr(was, read)!r}, its default'
            raise ValueError(f'--model-kwargs {key}={given[key]!r}: {checkpoint} was trained with {key}={value} '
                             f'({source}), which its weights do not record: they would load into another model than '
                             f'the one trained; allowed: {key} left out (the run\'s), or the value it trained with')


def _same_value(a: Any, b: Any) -> bool:
    """Whether a kwarg given on the command line (a tuple) and one a run recorded (YAML: a list) are one value."""
    def plain(value: Any) -> Any:
        return tuple(map(plain, value)) if isinstance(value, (list, tuple)) else value
    return plain(a) == plain(b)


def _check_other_values(checkpoint: Path, source: str, trained: Dict[str, Any], given: Dict[str, Any]) -> None:
    """Refuse ``--model-kwargs`` that set a kwarg the run recorded to another value, once its weights loaded into the
    model built with them: they do not record it (a baseline's head count, an activation), and the model analysed would
    be another than the one trained. The SL options are :func:`_check_unseen_options`'."""
    from timm_sl.layers.sl_args import SL_ARG_NAMES
    for key, value in given.items():
        if key in trained and key not in SL_ARG_NAMES and not _same_value(value, trained[key]):
            raise ValueError(f'--model-kwargs {key}={value!r}: {checkpoint} was trained with {key}={trained[key]!r} '
                             f'({source}), which its weights do not record: they would load into another model than '
                             f'the one trained; allowed: {key} left out (the run\'s), or the value it trained with')


def _inference_settings(model: 'torch.nn.Module') -> Dict[str, Any]:
    """Each module's kind and plain settings (a head count, a size, a flag), by module path: what makes two models of
    the same weights compute alike. Dropout and stochastic depth count as identity, as they act in eval."""
    import torch
    from timm.layers import DropPath, PatchDropout
    settings = {}
    for path, module in model.named_modules():
        if isinstance(module, (torch.nn.Dropout, DropPath, PatchDropout, torch.nn.Identity)):
            settings[path] = 'identity'
            continue
        settings[path] = type(module).__name__
        for key, value in vars(module).items():
            if not key.startswith('_') and key != 'training' and isinstance(value, (bool, int, float, str, tuple)):
                settings[f'{path}.{key}' if path else key] = value
    return settings


def _check_built_alike(checkpoint: Path, source: str, unrecorded: Sequence[str], given: Dict[str, Any],
                       trained: 'torch.nn.Module', built: 'torch.nn.Module') -> None:
    """Refuse ``--model-kwargs`` the run did not record (it trained with the model's default) that build another
    model than the trained one, which the weights load into all the same (a head count, an activation); a default
    given again, or a training-only rate (dropout, stochastic depth), passes."""
    was, now = _inference_settings(trained), _inference_settings(built)
    changed = next((k for k in [*was, *now] if was.get(k, '(none)') != now.get(k, '(none)')), None)
    if changed is not None:
        words = ' '.join(f'{k}={given[k]!r}' for k in unrecorded)
        raise ValueError(f'--model-kwargs {words}: {checkpoint} was trained without {", ".join(unrecorded)} ({source} '
                         f'records none: the model\'s default), and the model they build is another than the one '
                         f'trained ({changed}: {was.get(changed, "(none)")!r} -> {now.get(changed, "(none)")!r}), '
                         f'which its weights do not tell; allowed: {", ".join(unrecorded)} left out')


def _not_the_first_model(checkpoint: Path, held: str, source: str, first: str) -> ValueError:
    """A compared checkpoint of another model than the first: one line naming both (not its missing keys)."""
    return ValueError(f'--compare-checkpoint {checkpoint} holds {held} ({source}), the first model is {first}; '
                      f'allowed: a checkpoint of {first} (SL, its baseline or another mix of its switches) to compare '
                      f'with')


# model kwargs two compared models may differ in: the SL switches (what is compared) and the depth (kld lines the
# layers up, the attention map is the last layer's)
_COMPARED_FREELY = ('spt_pool', 'depth', 'depths', 'depth_token_only')


def _other_configuration(name: str, first: Dict[str, Any], other: Dict[str, Any]) -> str:
    """What makes a compared model (built as ``name`` with ``other``) another configuration than the first (built
    with ``first``) beyond the SL switches and the depth: ``'embed_dim=96 (first: default)'``; '' when the two
    build one architecture. Both are built once more, as baselines of the first model's depth on the meta device (no
    memory: a Swin's stage count must match its ``num_heads``), and compared by their tensors' shapes and attention
    heads: a kwarg given in one and left to its default in the other is no difference where the default is its value."""
    import timm
    import torch
    from timm_sl.layers.sl_args import SL_ARG_NAMES
    free = set(SL_ARG_NAMES) | set(_COMPARED_FREELY)
    depth = {k: v for k, v in first.items() if k in _COMPARED_FREELY and k != 'spt_pool'}

    def architecture(kwargs: Dict[str, Any]):
        kept = dict({k: v for k, v in kwargs.items() if k not in free}, **depth)
        with torch.device('meta'):
            model = timm.create_model(name, **kept, **_baseline_kwargs(name))
        return ([(k, tuple(v.shape)) for k, v in model.state_dict().items()] +
                [(n, m.num_heads) for n, m in model.named_modules() if isinstance(getattr(m, 'num_heads', None), int)])
    def changes(key: str) -> bool:  # the first model with the other's value of ``key``: another architecture?
        changed = {k: v for k, v in first.items() if k != key}
        changed.update({key: other[key]} if key in other else {})
        try:
            return architecture(changed) != built
        except BUILD_ERRORS:
            return True
    for source in (first, other):  # at the first model's depth, else the other's (a Swin of fewer stages than it)
        depth = {k: v for k, v in source.items() if k in _COMPARED_FREELY and k != 'spt_pool'}
        try:
            built = architecture(first)
            if built == architecture(other):
                return ''
        except BUILD_ERRORS:  # a kwarg that needs its depth (a Swin stage count): try the other's
            continue
        keys = [k for k in dict.fromkeys([*first, *other])
                if k not in free and first.get(k, '-') != other.get(k, '-') and changes(k)]
        return ', '.join(f'{k}={other[k] if k in other else "default"} (first: '
                         f'{first[k] if k in first else "default"})' for k in keys) or 'its tensors\' shapes'
    return ''  # neither depth builds both: nothing to compare them by


def _exported_config(record) -> Optional[Tuple[Path, Dict[str, Any]]]:
    """``(config.json, its content)`` beside a checkpoint that is an exported folder's ``model.safetensors`` (no run
    folder): the model it names (``architecture``, ``model_args``) and the data config it trained with
    (``pretrained_cfg``), as ``timm-sl export`` writes them; None for any other checkpoint."""
    from timm_sl.tools.hub import read_exported_config
    config = record.checkpoint.parent / 'config.json'
    if record.run_dir is not None or record.checkpoint.suffix != '.safetensors' or not config.exists():
        return None
    return config, read_exported_config(config)


def _variant(model) -> str:
    """What a model is, from the switches it was built with (strictly loaded checkpoints included):
    :func:`~timm_sl.tools.paper.switches_label` (``SL``, ``baseline``, ``ST``, ``SL w/o Spool``, ...)."""
    from timm_sl.tools.paper import model_switches, switches_label
    switches = model_switches(model)
    return type(model).__name__ if switches is None else switches_label(switches)


def _model_name(name: str, model) -> str:
    """The model as titles and lines name it: ``slify(BASE)`` for ``slify`` (``model``'s timm architecture), else
    ``name``."""
    return f"slify({model.pretrained_cfg.get('architecture')})" if name == 'slify' else name


# kwargs a chart's label already says (the switches: 'SL', 'S', 'SM@2t', ...; slify's base: in its name) or that do not
# change what the analyses measure (the classifier's classes)
_LABELLED_KWARGS = ('spt', 'lsa', 'lsa_mask', 'lsa_learn_temp', 'lsa_temp_ratio', 'spt_pool', 'base', 'num_classes')


def _default_global_pool(model) -> Optional[str]:
    """The ``global_pool`` ``model``'s timm class builds with when none is given (``'token'``, Swin's ``'avg'``): an
    export records it either way, and one given (train.py's ``--gp avg``) is another configuration."""
    import inspect
    for cls in type(model).__mro__:
        parameter = inspect.signature(cls.__init__).parameters.get('global_pool')
        if parameter is not None and isinstance(parameter.default, str):
            return parameter.default
    return None


# kwargs timm reads as (height, width), a single number for both
_SQUARE_KWARGS = ('img_size', 'patch_size', 'window_size', 'stride_size')


def _title_model(args: argparse.Namespace, model, labels: Sequence[str] = ('SL', 'baseline')) -> str:
    """The model as a chart's title names it: :func:`_model_name` and the configuration kwargs its models were built
    with (``sl_vit_32, depth=2``), each model's (named by ``labels``) where a compared one was built with others: a
    chart of a 2-block model must not pass for the registered configuration."""
    compare = getattr(args, 'compare_checkpoint', None)
    keys = [(args.checkpoint, False)] + ([(compare, True)] if compare else [])
    built = getattr(args, 'built_kwargs', {})
    size = tuple(model.pretrained_cfg.get('input_size', ()))

    def default(key: str, value: Any) -> bool:  # an export's config.json records these at their defaults too
        if key == 'in_chans':
            return (value,) == size[:1]
        if key == 'img_size':
            return (tuple(value) if isinstance(value, (list, tuple)) else (value, value)) == size[1:]
        return key == 'global_pool' and value == _default_global_pool(model)

    def written(key: str, value: Any) -> Any:  # one value one way: an export's JSON [32, 32] is a run's img_size=32
        if not isinstance(value, (list, tuple)):
            return value
        value = tuple(written('', v) for v in value)
        return value[0] if key in _SQUARE_KWARGS and len(value) == 2 and value[0] == value[1] else value
    given = [''.join(f', {k}={written(k, v)}' for k, v in built.get(key, {}).items() if k not in _LABELLED_KWARGS and
                     not default(k, v)) for key in keys]
    name = _model_name(args.model, model)
    if len({frozenset(g.split(', ')) for g in given}) <= 1:  # an export lists its kwargs in another order
        return name + (given[0] if given else '')
    return name + ' (' + '; '.join(f'{label}: {kwargs[2:] or "its default configuration"}'
                                   for label, kwargs in zip(labels, given)) + ')'


def _switches(model) -> str:
    sl_args = getattr(model, 'sl_args', None)
    if sl_args is None:
        return 'no SL switches'
    return (f'spt={sl_args.spt}, lsa mask={sl_args.diag_mask}, learned temperature={sl_args.learn_temp}' +
            (f', spt_pool={model.spt_pool}' if hasattr(model, 'spt_pool') else ''))


def _run_file(path: str, args: Optional[argparse.Namespace] = None) -> str:
    """A checkpoint as titles name it: its run folder and file (every train.py run has a ``model_best.pth.tar``); a
    run folder given for it by the checkpoint read from it. ``(EMA weights)`` follows when those were the ones
    analysed (:func:`_analysis_run`, as timm's loader picks them): early in a run they are still close to the init."""
    from timm_sl.tools.runs import checkpoint_file
    ema = ' (EMA weights)' if path in getattr(args, 'ema_checkpoints', ()) else ''
    path = checkpoint_file(path).resolve()
    return shown(f'{path.parent.name}/{path.name}' if path.parent.name else path.name) + ema  # a newline: quoted


def _weights(args: argparse.Namespace, labels: Sequence[str] = ('SL', 'baseline')) -> str:
    """What the analysed weights are, for titles (the compared checkpoint's too, each named by its ``labels``
    entry): figures of an untrained model must say so."""
    if getattr(args, 'checkpoint', None):
        weights = f'checkpoint {_run_file(args.checkpoint, args)}'
    elif getattr(args, 'pretrained', False):
        weights = 'pretrained'
    else:
        weights = 'RANDOM INIT (untrained: no --checkpoint/--pretrained)'
    compare = getattr(args, 'compare_checkpoint', None)
    return f'{labels[0]} {weights}, {labels[1]} checkpoint {_run_file(compare, args)}' if compare else weights


def _data_config(model, record) -> Tuple[Dict[str, Any], str]:
    """The data config images go through for ``model``, and where it comes from: the one the run trained with when
    it records its arguments (as ``export`` writes it), else the model's default."""
    from timm_sl.tools.hub import exported_data_config, training_data_config
    exported = _exported_config(record) if record is not None and not record.args else None
    if exported:
        recorded = {**model.pretrained_cfg, **exported[1].get('pretrained_cfg', {})}
        where = f'the data config its export recorded ({shown(exported[0])})'
        return exported_data_config(model, recorded, exported[0]), where
    if record is not None and record.args:
        where = record.run_dir / 'args.yaml' if record.run_dir else f'the arguments saved in {record.checkpoint}'
        config = training_data_config(model, record.args, where)
        return config, f'the data config its run trained with ({shown(where)})'
    why = 'its run records no arguments' if record is not None else 'no --checkpoint'
    from timm_sl.tools.analysis import default_data_config
    return default_data_config(model), f"the model's default data config at its image size ({why})"


def _input_config(args: argparse.Namespace, label: str, model, record) -> Dict[str, Any]:
    """``label``'s data config (:func:`_data_config`), printed as one line."""
    config, source = _data_config(model, record)
    size = 'x'.join(map(str, config['input_size'][1:]))
    mean, std = (tuple(round(v, 4) for v in config[k]) for k in ('mean', 'std'))
    print(f"{label} input: {size} px, mean {mean}, std {std}, crop_pct {config.get('crop_pct')}, "
          f"{config.get('interpolation')}: {source}")
    height, width = config['input_size'][1:]  # what region of each image the model sees: drawn where it differs
    vars(args).setdefault('views', {})[label] = (config.get('crop_pct'), config.get('crop_mode'), height / width)
    return config


def _load_images(args: argparse.Namespace, label: str, model, record, loaded: Dict[str, Any]):
    """The images through ``label``'s data config (:func:`_input_config`), read once per config (``loaded`` holds
    them)."""
    from timm_sl.tools.analysis import load_images
    config = _input_config(args, label, model, record)
    key = repr(sorted(config.items()))
    if key not in loaded:
        loaded[key] = load_images(args.images, model, config)
    return loaded[key]


def _analysed_model(args: argparse.Namespace, checkpoint: Optional[str] = None, baseline_first: bool = False):
    """:func:`_analysis_run`, with ``--model`` optional beside ``--checkpoint``: then the model the checkpoint's run
    recorded, which titles and lines name and a compared checkpoint is built as (as with ``--model`` given)."""
    if not args.model and not args.checkpoint:
        raise ValueError('no model to analyse; allowed: --model NAME (random init, --pretrained or a --checkpoint), '
                         'or --checkpoint FILE alone when its run records its model')
    model, record = _analysis_run(args, checkpoint, baseline_first)
    args.model = args.model or record.model
    return model, record


def _runs(args: argparse.Namespace):
    """``[(label, model, run record)]``: the ``--checkpoint`` model (or random init / pretrained), then the
    ``--compare-checkpoint`` one, each labelled by what it is (:func:`_variant`). The flags say "SL" and
    "baseline": where a checkpoint holds something else, one line on stderr says so."""
    model, record = _analysed_model(args, args.checkpoint)
    runs = [(_variant(model), model, record)]
    if not args.compare_checkpoint:
        return runs
    compared, compared_record = _analysed_model(args, args.compare_checkpoint, baseline_first=True)
    first, other = _model_name(args.model, model), _model_name(args.model, compared)
    from timm_sl.tools.runs import checkpoint_file
    if first != other:  # slify runs of two bases: two models, one name
        raise _not_the_first_model(checkpoint_file(args.compare_checkpoint), other, 'its run', first)
    differs = _other_configuration(args.model, args.built_kwargs[args.checkpoint, False],
                                   args.built_kwargs[args.compare_checkpoint, True])
    if differs:  # labelled 'baseline', its other width / heads / patches would pass for the effect of SL
        raise ValueError(f'--compare-checkpoint {checkpoint_file(args.compare_checkpoint)} is another configuration '
                         f'of {first} than the first model: {differs}; allowed: a checkpoint of the first model\'s '
                         f'configuration (SL, its baseline or another mix of its switches; another depth)')
    datasets = [r.dataset if r is not None else None for r in (record, compared_record)]
    if None not in datasets and datasets[0] != datasets[1]:  # attention learnt from other images
        raise ValueError(f'--compare-checkpoint {checkpoint_file(args.compare_checkpoint)} was trained on '
                         f'{datasets[1]}, the first model on {datasets[0]} (as their runs record); allowed: a '
                         f'checkpoint trained on {datasets[0]}, as the paper compares SL and its baseline')
    runs.append((_variant(compared), compared, compared_record))
    first = '--checkpoint' if args.checkpoint else '--pretrained' if getattr(args, 'pretrained', False) else \
        'random init'
    flags = [(first, args.checkpoint, 'SL'), ('--compare-checkpoint', args.compare_checkpoint, 'baseline')]
    wrong = [(f'{flag} {_run_file(path)}' if path else f'the {flag} model') + f' holds {label} ({_switches(m)}), '
             f'not {meant}' for (flag, path, meant), (label, m, _) in zip(flags, runs)
             if (label == 'baseline') != (meant == 'baseline')]
    if wrong:
        print(f'timm-sl {args.command}: note: each model is labelled by what it holds, not by its flag: '
              f'{"; ".join(wrong)}', file=sys.stderr)
    if runs[0][0] == runs[1][0]:  # two models of one kind: told apart by their flags
        runs = [(f'{label} ({flag})', m, r) for (label, m, r), (flag, _, _) in zip(runs, flags)]
    return runs


def _check_finite(label: str, record, numbers: Dict[str, float]) -> None:
    """Refuse a model whose numbers (layer -> value) are NaN or inf, as a diverged run's weights give: charts drew
    them as gaps, a blank map on a -0.1..0.1 colour scale, or a KL of 0 (perfectly uniform)."""
    import math
    bad = [layer for layer, value in numbers.items() if not math.isfinite(value)]
    if bad:
        source = f'{label} (checkpoint {record.checkpoint})' if record is not None else label
        raise ValueError(f'{source} gives NaN / inf in {", ".join(bad)} (its weights hold NaN or inf: a diverged '
                         f'run?); allowed: a model whose numbers are finite, e.g. an earlier checkpoint of the run')


def _check_finite_weights(args: argparse.Namespace, model) -> None:
    """Refuse a checkpoint whose weights hold NaN or inf (a run that had diverged when it was saved) for a chart drawn
    from its parameters, not its outputs: its finite temperatures were charted as a trained model's."""
    if args.checkpoint:
        from timm_sl.tools.runs import check_finite_weights, checkpoint_file
        check_finite_weights(model.state_dict(), checkpoint_file(args.checkpoint))


def _depth_axis(first_layer: str) -> str:
    """The depth axis names its first layer: ``temperature`` counts T2T's tokenizer attention (it learns a
    temperature), ``kld`` starts at the first block, so the two charts' depth 1 may be different layers."""
    return f'depth (1 = {first_layer})'


def _not_sl(model) -> str:
    """What a chart of one model adds to its name where the model is not SL (``' (L: spt=False, ...)'``): a temperature
    chart has no legend naming the model, and one of an LSA-only run passed for SL's."""
    variant = _variant(model)
    return '' if variant == 'SL' else f' ({variant}: {_switches(model)})'


def cmd_temperature(args: argparse.Namespace) -> int:
    from timm_sl.tools.analysis import attention_layers, temperature_records
    from timm_sl.tools.plot import plot_curves
    _require_plotting(args)
    model, record = _analysed_model(args, args.checkpoint)
    records = temperature_records(model)
    _check_finite(_variant(model), record, {r['layer']: r['min'] + r['max'] for r in records})
    _check_finite_weights(args, model)  # finite temperatures of a diverged model are no trained model's
    if not records:
        sl_args = getattr(model, 'sl_args', None)
        if sl_args is not None and sl_args.learn_temp and not attention_layers(model):  # lsa on, nothing to learn in
            raise ValueError(f'{args.model} as built has no attention layer (depth 0?), so no LSA temperature; '
                             f'allowed: a model with at least one attention layer')
        switches = f'lsa={sl_args.lsa}, lsa_learn_temp={sl_args.lsa_learn_temp}' if sl_args is not None else '-'
        source = f'{args.checkpoint} holds' if args.checkpoint else 'this is'
        raise ValueError(f'{args.model} has no learned LSA temperature: {source} {args.model} with {switches} '
                         f'(SL switches); allowed: a model with a learned temperature (lsa=True with lsa_learn_temp '
                         f'unset, or lsa_learn_temp=True)')
    # a model of another lsa_temp_ratio learns from head_dim^-0.5 / ratio: without that line, a chart of its untrained
    # weights read as a temperature learned away from head_dim^-0.5
    ratios = sorted({r['temp_ratio'] for r in records if r['temp_ratio'] != 1})
    start = [f'start: head_dim^-0.5 / {"lsa_temp_ratio" if len(ratios) > 1 else ratios[0]}'] if ratios else []
    columns = ('mean', 'min', 'max', 'fixed') + (('start',) if ratios else ())
    rows = [[str(i + 1), r['layer']] + [f'{r[k]:.4f}' for k in columns] for i, r in enumerate(records)]
    print(_format_table(['depth', 'layer', 'mean', 'min head', 'max head', 'head_dim^-0.5'] + start, rows))
    plot_curves({'learned (mean over heads)': [r['mean'] for r in records],
                 'min head': [r['min'] for r in records],
                 'max head': [r['max'] for r in records],
                 'fixed head_dim^-0.5': [r['fixed'] for r in records],
                 **{label: [r['start'] for r in records] for label in start}}, args.out,
                title=f'{_title_model(args, model)}{_not_sl(model)}, {_weights(args)}: learned temperature per depth',
                y_label="multiplier of QK^T ('temperature'; higher = sharper)",
                x_label=_depth_axis(records[0]['layer']),
                y_range=(0., None))
    print(f'plot: {shown(args.out)}')
    return 0


def _check_out_not_an_input(args: argparse.Namespace, numbers: Optional[Path] = None) -> None:
    """Before any work: the chart (and ``numbers``, attention's JSON beside it) must not replace one of the images it
    is drawn from (an image named directly is read whatever its suffix, ``.json`` too)."""
    from timm_sl.tools.analysis import image_files
    out, given_out = Path(args.out).resolve(), shown(args.out)
    existing = [p for p in args.images if Path(p).exists()]  # a missing one is load_images' to report
    for given in image_files(existing):  # through links: a folder's linked subfolder, a link to an image
        if given.resolve() == out:
            raise ValueError(f'--out {given_out} is one of the input images ({shown(given)}); allowed: a chart path '
                             f'that is not an input image')
        if numbers is not None and given.resolve() == numbers.resolve():
            raise ValueError(f'--out {given_out}: its numbers {shown(numbers)} would replace one of the input images '
                             f'({shown(given)}), even with --overwrite; allowed: an --out whose .json name is not an '
                             f'input image')


_ATTENTION_KEYS = {'image', 'model', 'layer', 'grid', 'mean', 'heads'}


def _attention_numbers(args: argparse.Namespace) -> Path:
    """Before any work: where ``attention`` writes its numbers (``--out`` with .json). Replaced only when it is free
    or holds numbers an earlier ``attention`` wrote, as its chart is (any regular file with ``--overwrite``)."""
    import json
    numbers = Path(args.out).with_suffix('.json')
    out, json_name = shown(args.out), shown(numbers)
    if numbers.exists() and not args.overwrite:  # a folder or FIFO there: refused by its rule in paths.py
        try:
            old = json.loads(numbers.read_text(encoding='utf-8'))
            ours = isinstance(old, list) and old and all(isinstance(r, dict) and _ATTENTION_KEYS <= set(r) for r in old)
        except (OSError, UnicodeDecodeError, ValueError):
            ours = False
        if not ours:
            raise ValueError(f'--out {out}: its numbers would replace {json_name}, which timm-sl attention did not '
                             f'write; allowed: an --out whose .json name is free or holds numbers of an earlier '
                             f'timm-sl attention (move {shown(numbers.name)} away, pick another --out, or --overwrite '
                             f'to replace it)')
    return numbers


def cmd_kld(args: argparse.Namespace) -> int:
    from timm_sl.tools.analysis import image_batches, kld_by_depth
    from timm_sl.tools.plot import plot_curves
    _check_out_not_an_input(args)
    _require_plotting(args)
    curves, floors, layers, files = {}, {}, {}, []
    for label, model, record in _runs(args):  # a folder's images 64 at a time: never all in memory
        files, batches = image_batches(args.images, model, _input_config(args, label, model, record))
        measured = kld_by_depth(model, batches, floor=True)
        _check_finite(label, record, {layer: kl for layer, (kl, _) in measured.items()})
        curves[label] = [kl for kl, _ in measured.values()]
        floors[label] = [floor for _, floor in measured.values()]
        layers[label] = list(measured)
    if len(layers) == 2:  # a depth of the chart must be one layer in both (CaiT's class attention comes last)
        (first, names), (second, other) = layers.items()
        unlike = next((d for d, (a, b) in enumerate(zip(names, other)) if a != b), None)
        if unlike is not None:
            raise ValueError(f'--compare-checkpoint {_run_file(args.compare_checkpoint)} does not line up with the '
                             f'first model depth for depth: depth {unlike + 1} is {names[unlike]} in {first}, '
                             f'{other[unlike]} in {second}; allowed: models whose attention layers match layer for '
                             f'layer (the same config; another depth only where the layers it adds come last)')
    floors = {label: floor for label, floor in floors.items() if max(floor) > 0}  # masked keys: KL cannot reach 0
    # a row per depth of the deepest model (compared checkpoints may differ in depth: '-' where one has none)
    rows = [[str(d + 1), ' / '.join(dict.fromkeys(names[d] for names in layers.values() if d < len(names)))] +
            [f'{c[d]:.4f}' if d < len(c) else '-' for c in [*curves.values(), *floors.values()]]
            for d in range(max(map(len, layers.values())))]
    print(_format_table(['depth', 'layer'] + [f'{k} KL(attn || uniform)' for k in curves] +
                        [f'{k} floor (masks alone)' for k in floors], rows))
    plot_curves(curves, args.out, floors=floors, floor_label='floor of its masks',
                title=f'{_title_model(args, model, list(curves))}, {_weights(args, list(curves))}: attention KL '
                      f'divergence from uniform '
                      f'({len(files)} image{"s" if len(files) != 1 else ""})',
                y_label='mean KL(attention || uniform) (nats)', x_label=_depth_axis(next(iter(layers.values()))[0]),
                y_range=(0., None))
    print(f'plot: {shown(args.out)}')
    return 0


ATTENTION_MAX_IMAGES = 24  # one row of panels per image, ~300 px each: 24 rows are a 7,200 px tall chart


def _check_attention_image_count(paths: List[str]) -> None:
    """Refuses, before a model is built, more images than a chart can show (250 made a 75,000 px tall PNG)."""
    from timm_sl.tools.analysis import image_files
    count = len(image_files([p for p in paths if os.path.exists(p)]))  # a missing one: named where images load
    if count > ATTENTION_MAX_IMAGES:
        raise ValueError(f'{", ".join(paths)}: {count} images; attention draws a row per image, allowed: at most '
                         f'{ATTENTION_MAX_IMAGES} (name files, or a smaller folder; kld summarises folders of any '
                         f'size)')


def cmd_attention(args: argparse.Namespace) -> int:
    import json
    from timm_sl.tools.analysis import attention_records, final_attention_map
    from timm_sl.tools.plot import plot_attention
    numbers = _attention_numbers(args)
    _check_out_not_an_input(args, numbers)
    _require_plotting(args)
    _check_attention_image_count(args.images)
    drawn, inputs = None, {}
    columns, notes, records, uniform, seen = {}, [], [], {}, {}
    for label, model, record in _runs(args):
        loaded = _load_images(args, label, model, record, inputs)
        drawn = drawn or loaded  # the images drawn: as the first model sees them, and as another model sees them
        own_view = args.views[label] != next(iter(args.views.values()))  # where that crops another region
        try:
            result = final_attention_map(model, loaded.tensor)
        except ValueError as e:  # a run trained with --gp map: named by its checkpoint
            if record is None:
                raise
            raise ValueError(f'{label} (checkpoint {record.checkpoint}): {e}') from None
        _check_finite(label, record, {result.layer: result.maps.sum().item()})
        maps = result.maps  # (B, heads, h, w)
        views = [('', maps.mean(1))] if args.heads == 'mean' else [(f' h{i}', maps[:, i]) for i in range(maps.shape[1])]
        for tag, view in views:
            columns[label + tag] = [grid.tolist() for grid in view]
        if own_view:
            seen[label + views[0][0]] = label, loaded.images
        notes.append(f'{label}: {result.description}' + (' (heads averaged)' if args.heads == 'mean' else '') +
                     f'; {result.uniform_note}')
        uniform[label] = result.uniform
        records += attention_records(loaded.files, label, result)
    # images named by file name, by path where two share one; quoted and escaped where it would break the row
    names = [f.name for f in drawn.files]
    labels = [shown(name if names.count(name) == 1 else f) for f, name in zip(drawn.files, names)]
    names = dict(zip(map(str, drawn.files), labels))
    print(_format_table(['image', 'model', 'layer', 'grid', 'peak (row, col)', 'peak weight', 'map sum',
                         'KL(map || uniform)'], [
        [names[r['image']], r['model'], r['layer'], 'x'.join(map(str, r['grid'])), str(tuple(r['peak'])),
         f"{r['peak_weight']:.4f}", f"{r['map_sum']:.4f}", f"{r['kl']:.4f}"] for r in records]))
    plot_attention(drawn.images, columns, args.out, notes=notes, uniform=uniform, row_labels=labels, views=seen,
                   title=f'{_title_model(args, model, list(uniform))}, {_weights(args, list(uniform))}: final '
                         f'attention map '
                         f'({result.kind})')
    # a re-run takes them
    text = json.dumps([dict(r, image=name_text(r['image'])) for r in records], indent=1)  # 'café', not 'cafÃ©'
    write_atomically(numbers, lambda file: file.write_text(text, encoding='utf-8'))
    print(f'plot: {shown(args.out)}\nnumbers: {shown(numbers)}')
    return 0


def cmd_receptive_field(args: argparse.Namespace) -> int:
    from timm_sl.tools.analysis import receptive_field, tokenizer_geometry
    from timm_sl.layers import resolve_shift
    from timm_sl.layers.sl_args import SlArgs
    if (args.model or args.checkpoint) and args.patch_size:
        raise ValueError(f'--patch-size and {"--model" if args.model else "--checkpoint"} measure different things; '
                         f'allowed: --model NAME (its own tokenizer: patch size and shift) or --patch-size P '
                         f'[--shift-ratio R], not both')
    if (args.model or args.checkpoint) and args.shift_ratio is not None:  # it was ignored: the model's shift answered
        raise ValueError(f'--shift-ratio goes with --patch-size; {"--model" if args.model else "--checkpoint"} '
                         f'measures the model as built; allowed: --model NAME --model-kwargs shift_ratio=R (what the '
                         f'model is built with), or --patch-size P --shift-ratio R')
    if args.model or args.checkpoint:  # a checkpoint's run names its model
        model, record = _analysed_model(args, args.checkpoint)
        kernel, stride, shift = tokenizer_geometry(model)  # per axis: a patch may be 2 x 4
        what = f'{_model_name(args.model, model)}: first tokenization step kernel {_axes(kernel)}, ' \
               f'stride {_axes(stride)}'
        if not any(shift):
            print(f'{what}, no SPT: r_token = {_axes(map(receptive_field, kernel, (None, None), stride))}')
            return 0
        baseline = _baseline_step(args, model)
        if baseline is not None and baseline[:2] != (kernel, stride):  # PiT's overlapping conv stem: SPT replaced it
            base_kernel, base_stride, _ = baseline
            overlap = 'an overlapping ' if any(k > j for k, j in zip(base_kernel, base_stride)) else 'another '
            standard = f'non-overlapping {"x".join(map(str, kernel))} patches' if kernel == stride else \
                'the same step unshifted'
            base_r = _axes(map(receptive_field, base_kernel, (None, None), base_stride))
            print(f"{what}: standard tokenization ({standard}, the paper's comparison) r_token = "
                  f'{_axes(map(receptive_field, kernel, (None, None), stride))}, SPT (shift {_axes(shift)}) r_token = '
                  f'{_axes(map(receptive_field, kernel, shift, stride))}; its own baseline (spt=False) tokenizes with '
                  f'{overlap}step instead, kernel {_axes(base_kernel)}, stride {_axes(base_stride)}: '
                  f'r_token = {base_r}')
            return 0
    elif args.patch_size:
        if args.model_kwargs is not None or args.pretrained:  # they were ignored: the bare patch answered
            given = '--model-kwargs' if args.model_kwargs is not None else '--pretrained'
            raise ValueError(f'{given} goes with --model; --patch-size measures a bare patch; allowed: --patch-size P '
                             f'[--shift-ratio R], or --model NAME [--model-kwargs shift_ratio=R ...]')
        kernel = stride = (args.patch_size, args.patch_size)
        ratio = SlArgs.shift_ratio if args.shift_ratio is None else args.shift_ratio  # the models' default
        try:
            shift = resolve_shift(args.patch_size, ratio)
        except ValueError as e:  # it names the model kwarg: say which option gave it
            given = ' (the default)' if args.shift_ratio is None else ''
            raise ValueError(f'--patch-size {args.patch_size} --shift-ratio {ratio}{given}: {e}') from e
        what = f'patch {args.patch_size}'
    else:
        raise ValueError('nothing to measure; allowed: --model NAME, --checkpoint FILE or --patch-size P')
    print(f'{what}: standard tokenization r_token = {_axes(map(receptive_field, kernel, (None, None), stride))}, '
          f'SPT (shift {_axes(shift)}) r_token = {_axes(map(receptive_field, kernel, shift, stride))}')
    return 0


def _baseline_step(args: argparse.Namespace, model) -> Optional[Tuple[Tuple[int, int], ...]]:
    """:func:`~timm_sl.tools.analysis.tokenizer_geometry` of the analysed model's baseline stem: the model as built
    with ``spt=False`` (slify's: its base), on the meta device; None where that does not build."""
    import timm
    import torch
    from timm_sl.layers import with_switches
    from timm_sl.slify import SLIFY_ARG_NAMES
    from timm_sl.tools.analysis import tokenizer_geometry
    kwargs = dict(vars(args).get('built_kwargs', {}).get((args.checkpoint, False), args.model_kwargs or {}))
    name = args.model
    if name == 'slify':  # SPT replaced the base's own stem
        name = kwargs.pop('base', None)
        kwargs = {k: v for k, v in kwargs.items() if k not in SLIFY_ARG_NAMES}
    else:
        kwargs = with_switches(kwargs, dict(spt=False))
    try:
        with torch.device('meta'):
            return tokenizer_geometry(timm.create_model(name, **kwargs))
    except BUILD_ERRORS:  # a configuration only its SPT version takes: nothing to compare with
        return None


def _axes(pair) -> str:
    """An ``(h, w)`` pair as receptive-field prints it: ``4`` where both axes agree, else ``2x4`` (h x w)."""
    h, w = pair
    return str(h) if h == w else f'{h}x{w}'


def cmd_prepare_tiny_imagenet(args: argparse.Namespace) -> int:
    from timm_sl.tools import prepare_tiny_imagenet
    if args.copy:
        raise ValueError("--copy is no longer offered: copies leave val/images/, which timm reads as a 201st class "
                       "'images' that shifts every label; copy the dataset folder first and run without --copy")
    counts, train = prepare_tiny_imagenet(args.root)  # every move checked before the first
    print(f'{sum(counts.values())} validation images in {len(counts)} class folders under {shown(args.root + "/val")}')
    if train:
        print(f'{len(train)} training class folders with their images directly inside under '
              f'{shown(args.root + "/train")}')
    return 0


def _what_was_written(splits: Sequence[str], written: Sequence[str]) -> str:
    """What a prepare-* command that keeps finished splits did, for the end of its line."""
    if not written:
        return ' (already there: nothing written)'
    kept = [split for split in splits if split not in written]
    return f' ({", ".join(written)} written; {", ".join(kept)} already there)' if kept else ''


def cmd_prepare_svhn(args: argparse.Namespace) -> int:
    from timm_sl.tools import prepare_svhn
    info = prepare_svhn(args.root, source=args.source, extra=args.extra, overwrite=args.overwrite,
                        progress=sys.stderr.isatty())  # no bars in a log: its last line is the error's
    counts = info['counts']
    print(', '.join(f'{sum(c.values())} {split}' for split, c in counts.items())
          + f' images in digit folders 0-9 under {shown(args.root + "/{" + ",".join(counts) + "}")}'
          + _what_was_written(list(counts), info['written']))
    return 0


def cmd_prepare_fashion_mnist(args: argparse.Namespace) -> int:
    from timm_sl.tools.fashion_mnist import prepare_fashion_mnist
    info = prepare_fashion_mnist(args.root, source=args.source, limit=args.limit, overwrite=args.overwrite,
                                 progress=sys.stderr.isatty())
    counts = ', '.join(f'{sum(c.values())} {split}' for split, c in info['counts'].items())
    print(f'{counts} images in class folders {info["classes"][0]} ... {info["classes"][-1]} under '
          f'{shown(args.root + "/{" + ",".join(info["counts"]) + "}")}'
          + _what_was_written(list(info['counts']), info['written']))
    print(f'mean / std of the training images, as train.py takes them: --mean {" ".join(map(str, info["mean"]))} '
          f'--std {" ".join(map(str, info["std"]))} (recipes/fashion_mnist.yaml holds those of all 60,000)')
    root = shown(args.root)
    print(f'class names: {shown(args.root + "/label_names.txt")}; train: timm-sl reproduce --data-dir {root} '
          f'--dataset fashion-mnist, or python train.py {root} --config recipes/fashion_mnist.yaml --model ...')
    return 0


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Adds ``(default: ...)`` to an option's help unless the help already says what the default is, the option is
    required, or there is no default (None)."""

    def _get_help_string(self, action: argparse.Action) -> Optional[str]:
        text = action.help or ''
        if 'default' in text or action.required or action.default is None:
            return text
        return super()._get_help_string(action)


class _Parser(OneLineParser):
    """Every (sub)command's ``--help`` shows the option defaults, once; a usage error is one line on stderr
    (``timm-sl COMMAND: error: ...``, without argparse's usage lines: also for words no option takes) and exit status
    2. A command with an ``after_dashes`` hint (reproduce) gets everything after the first ``--`` as its
    ``train_args``, and its hint appended to an error when words before ``--`` are not its own."""

    def __init__(self, *args: Any, formatter_class=_HelpFormatter, **kwargs: Any) -> None:
        super().__init__(*args, formatter_class=formatter_class, **kwargs)
        self.commands: Dict[str, '_Parser'] = {}  # name -> subparser, on the top-level parser
        self.after_dashes = ''  # where the command passes on what follows --, the hint for words put before it
        self.hint = ''

    def parse_args(self, args: Optional[Sequence[str]] = None, namespace: Optional[argparse.Namespace] = None):
        argv = list(sys.argv[1:] if args is None else args)
        command = self.commands.get(argv[0]) if argv else None
        after: Optional[List[str]] = None
        if command is not None and command.after_dashes:
            if '--' in argv:
                argv, after = argv[:argv.index('--')], argv[argv.index('--') + 1:]
            options = [o for o in command._option_string_actions if o.startswith('--')]
            if any(w.startswith('-') and not any(o.startswith(w.split('=')[0]) for o in options) for w in argv[1:]):
                command.hint = command.after_dashes  # e.g. a train.py option among the required ones missing
        if command is not None:
            command.refuse_repeats(argv[1:argv.index('--') if '--' in argv else len(argv)])
        parsed, stray = self.parse_known_args(argv, namespace)
        if command is not None and command.after_dashes:
            stray += parsed.train_args  # words no option took, before any --
            parsed.train_args = after or []
            command.hint = command.after_dashes if stray else ''
        if stray:
            (command or self).error(f'unrecognized arguments: {" ".join(map(_word, stray))}')
        return parsed

    def refuse_repeats(self, words: Sequence[str]) -> None:
        """Refuse an option that takes a value given more than once among ``words`` (this command's, before any
        ``--``): argparse kept the last and dropped the others without a word (``--model-kwargs depth=2 --model-kwargs
        lsa=False`` built the default depth). A switch (``--overwrite``) given twice is the same switch."""
        given: Dict[argparse.Action, List[str]] = {}
        for i, word in enumerate(words):
            if not word.startswith('--') or word == '--':
                continue
            name, sep, value = word.partition('=')
            action = self._option_string_actions.get(name)
            if action is None:  # an abbreviation argparse takes: --model-kw for --model-kwargs
                found = {a for o, a in self._option_string_actions.items() if o.startswith(name)}
                action = found.pop() if len(found) == 1 else None
            if action is None or action.nargs == 0:
                continue
            values = [value] if sep else []
            for later in words[i + 1:] if not sep else ():
                if later.startswith('-') and not later[1:2].isdigit() or action.nargs is None and values:
                    break
                values.append(later)
            given.setdefault(action, []).append(' '.join([action.option_strings[-1], *map(_word, values)]))
        for action, uses in given.items():
            if len(uses) > 1:
                option = action.option_strings[-1]
                once = ''
                if action.nargs in ('*', '+'):  # all its values after one option
                    joined = ' '.join(v for use in uses for v in use.split(' ')[1:])
                    once = f' (it takes all its values at once: {option} {joined})'
                times = 'twice' if len(uses) == 2 else f'{len(uses)} times'
                self.error(f'{option} given {times} ({", then ".join(uses)}), and only the last would count; '
                           f'allowed: each option once{once}')


def _word(word: str) -> str:
    """A command-line word as an error line quotes it: :func:`shown`, and quoted where it is empty or blank (an unset
    ``"$VAR"``), which would otherwise leave nothing to see."""
    return shown(word) if word.strip() else repr(word)


class _ModelKwargs(argparse.Action):
    """``KEY=VALUE`` words into a dict (:func:`~timm_sl.tools.arg_types.kwarg_words`)."""

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        try:
            setattr(namespace, self.dest, kwarg_words(values))
        except ValueError as e:
            raise argparse.ArgumentError(self, str(e)) from None


def _branch(text: str) -> str:
    """A branch name for ``push --revision``: an empty one (``--revision "$BRANCH"``, the variable unset) pushed to
    the main branch (:func:`~timm_sl.tools.hub.check_revision`, refused here before the folder is read)."""
    from timm_sl.tools.hub import check_revision
    try:
        check_revision(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return text


OVERWRITE_CHART = 'replace a file at --out that timm-sl did not draw (an earlier chart is always replaced)'


def build_parser() -> argparse.ArgumentParser:
    """The ``timm-sl`` parser: one ``sub.add_parser`` per command, each with a ``cmd_*`` function as ``func``."""
    parser = _Parser(prog='timm-sl', description='SPT + LSA vision transformers for timm.')
    parser.add_argument('--version', action='version', version=f'%(prog)s {__version__}')
    sub = parser.add_subparsers(dest='command', required=True, metavar='COMMAND')

    p = sub.add_parser('list', help='table of the sl_ models: params, MACs, input size, pretrained tags')
    p.add_argument('--filter', default='sl_*', help='model name pattern')
    p.add_argument('--baseline', action='store_true', help='add params / MACs of each model with spt/lsa off '
                                                              '(PiT / Swin: spt_pool too)')
    p.set_defaults(func=cmd_list)

    p = sub.add_parser('demo', help='train an sl_ model and its baseline from scratch on the bundled digits (CPU)')
    p.add_argument('--model', default='sl_vit_32', help='sl_ model')
    p.add_argument('--epochs', type=positive_int, default=10, help='training epochs per run')
    p.add_argument('--seeds', type=positive_int, default=1, help='runs per model, reported as mean +- std')
    p.add_argument('--seed', type=_seed, default=0, help='first seed; runs use seed, seed + 1, ... (same seed: same '
                                                         'numbers)')
    p.add_argument('--batch-size', type=positive_int, default=64, help='training batch size')
    p.add_argument('--lr', type=_positive_float, default=1e-3, help='peak learning rate (AdamW, cosine schedule)')
    p.add_argument('--limit', type=positive_int, default=None,
                   help='use only this many images, each digit as often (quick checks; at least 20)')
    p.add_argument('--model-kwargs', nargs='*', default={}, action=_ModelKwargs, help='e.g. depth=6 lsa_mask=False')
    p.add_argument('--out', type=figure_path, default='sl_demo.png', help='chart of the learning curves')
    p.add_argument('--overwrite', action='store_true', help=OVERWRITE_CHART)
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser(
        'export', help='write a Hub-ready folder (safetensors, config.json, card) from a train.py checkpoint')
    p.add_argument('checkpoint', help="train.py checkpoint, or a run folder (its model_best.pth.tar, else "
                                      "last.pth.tar); EMA weights are used when present")
    p.add_argument('--model', default=None,
                   help="model the checkpoint was trained as (sl_ name or slify; default: what the run recorded)")
    p.add_argument('--model-kwargs', nargs='*', default=None, action=_ModelKwargs,
                   help="as given to train.py (default: the run's, when --model is the run's model)")
    p.add_argument('--out', required=True, help='output folder: new or empty')
    p.add_argument('--overwrite', action='store_true', help='write into a non-empty --out')
    p.add_argument('--summary', default=None,
                   help="train.py's summary.csv, for the card's metrics (default: the run folder's, when args.yaml is "
                        "beside the checkpoint)")
    p.add_argument('--dataset', default=None, type=dataset_name,
                   help="dataset name for the card of a run that records none, e.g. tiny-imagenet (default: the run's; "
                        "another than the run's, or of another class count, is refused)")
    p.add_argument('--label-names', default=None, help='class names: a JSON list or one name per line')
    p.add_argument('--train-script', default=None,
                   help="timm's train.py, whose defaults the card's recipe is compared with "
                        "(default: $TIMM_REPO/train.py when set)")
    p.set_defaults(func=cmd_export)

    from timm_sl.tools.reproduce import add_reproduce_args
    p = sub.add_parser('reproduce', help="train every Table 2 row (baseline / SL) with timm's train.py, one report")
    add_reproduce_args(p)
    p.after_dashes = ("; train.py's arguments go after --, e.g. timm-sl reproduce --data-dir DATA --dataset cifar10 "
                      "-- --epochs 3")
    p.set_defaults(func=cmd_reproduce)

    from timm_sl.tools.release import add_release_args
    p = sub.add_parser('release', help='export train.py runs with model cards and push them to the Hub (dry run)')
    add_release_args(p)
    p.set_defaults(func=cmd_release)

    p = sub.add_parser('push', help='upload an exported folder to the Hugging Face Hub')
    p.add_argument('folder', help='a folder written by timm-sl export')
    p.add_argument('--repo-id', required=True, help='ORG/NAME')
    p.add_argument('--private', action='store_true', help='create the repository as private')
    p.add_argument('--revision', type=_branch, default=None, help='branch to push to (created if missing)')
    p.set_defaults(func=cmd_push)

    def add_model_source(p: argparse.ArgumentParser) -> None:
        p.add_argument('--model', default=None,
                       help="sl_ model name (with --checkpoint: default, the model its run recorded)")
        source = p.add_mutually_exclusive_group()
        source.add_argument('--checkpoint', default=None, help='train.py checkpoint (neither: random init)')
        source.add_argument('--pretrained', action='store_true', help="the model's pretrained weights")
        p.add_argument('--model-kwargs', nargs='*', default=None, action=_ModelKwargs,
                       help="as given to train.py (default: with --checkpoint, its run's; else none)")

    def add_image_analysis(p: argparse.ArgumentParser) -> None:
        p.add_argument('images', nargs='+', help='image files or folders')
        add_model_source(p)
        p.add_argument('--compare-checkpoint', default=None,
                       help='checkpoint of the baseline (spt=False, lsa=False) of the same config, shown beside')

    p = sub.add_parser('temperature', help="learned LSA temperature per depth vs head_dim^-0.5 (paper Fig. 3)")
    add_model_source(p)
    p.add_argument('--out', type=figure_path, default='sl_temperature.png', help='chart')
    p.add_argument('--overwrite', action='store_true', help=OVERWRITE_CHART)
    p.set_defaults(func=cmd_temperature)

    p = sub.add_parser('kld', help='attention KL divergence from uniform per depth (paper Fig. 4)')
    add_image_analysis(p)
    p.add_argument('--out', type=figure_path, default='sl_kld.png', help='chart')
    p.add_argument('--overwrite', action='store_true', help=OVERWRITE_CHART)
    p.set_defaults(func=cmd_kld)

    p = sub.add_parser('attention', help="final class token's attention over the image (paper Fig. 5); chart + JSON")
    add_image_analysis(p)
    p.add_argument('--heads', choices=('mean', 'all'), default='mean', help='average the heads or one map per head')
    p.add_argument('--out', type=figure_path, default='sl_attention.png',
                   help='chart; the numbers go to the same name with .json')
    p.add_argument('--overwrite', action='store_true', help='replace a file at --out or its .json that timm-sl did '
                                                            'not write (earlier ones are always replaced)')
    p.set_defaults(func=cmd_attention)

    p = sub.add_parser('receptive-field', help='tokenization receptive field, standard vs SPT (paper Eq. 3)')
    add_model_source(p)
    p.add_argument('--patch-size', type=positive_int, default=None, help='instead of --model: a patch size')
    p.add_argument('--shift-ratio', type=_shift_ratio, default=None,
                   help="with --patch-size: shift / patch size (default: 0.5, the models' own; a model's: "
                        "--model-kwargs shift_ratio=R)")
    p.set_defaults(func=cmd_receptive_field)

    p = sub.add_parser('prepare-tiny-imagenet', help="sort Tiny-ImageNet's val images into class folders and move "
                                                     "train/<wnid>/images/* up into train/<wnid>/")
    p.add_argument('root', help='the folder holding train/ and val/')
    p.add_argument('--copy', action='store_true', help=argparse.SUPPRESS)  # refused with a reason, see the command
    p.set_defaults(func=cmd_prepare_tiny_imagenet)

    p = sub.add_parser('prepare-svhn', help="write SVHN's .mat files as train/ and test/ folders of digit PNGs")
    p.add_argument('root', metavar='DIR', help="output folder, train.py's --data-dir")
    p.add_argument('--source', metavar='MATS', default=None,
                   help='folder holding train_32x32.mat, test_32x32.mat (the torchvision.datasets.SVHN root; '
                        'default: DIR)')
    p.add_argument('--extra', action='store_true', help='also write extra_32x32.mat (531,131 images) to DIR/extra')
    p.add_argument('--overwrite', action='store_true', help='replace split folders an earlier run wrote')
    p.set_defaults(func=cmd_prepare_svhn)

    p = sub.add_parser('prepare-fashion-mnist', help="write Fashion-MNIST's idx files (no download) as train/ and "
                                                     "test/ class folders of 32 px RGB PNGs")
    p.add_argument('root', metavar='DIR', help="output folder, train.py's --data-dir")
    p.add_argument('--source', metavar='IDX', default='/usr/share/datasets/fashion-mnist',
                   help="folder of the four idx files, e.g. torchvision's FashionMNIST/raw (default: Debian's "
                        "dataset-fashion-mnist, %(default)s)")
    p.add_argument('--limit', type=positive_int, default=None,
                   help='at most this many images per split, the first of each file (quick runs; default: all)')
    p.add_argument('--overwrite', action='store_true', help='replace split folders an earlier run wrote with other '
                                                            'settings')
    p.set_defaults(func=cmd_prepare_fashion_mnist)
    parser.commands = sub.choices
    return parser


class CommandFailed(SystemExit):
    """How :func:`main` ends a command that failed: exit status 2 (or the error's own ``exit_status``), after printing
    ``message`` (``timm-sl COMMAND: ...``) on stderr. A ``SystemExit``, so that the console command ends without a
    traceback."""

    def __init__(self, message: str, status: int = 2) -> None:
        super().__init__(status)
        self.message = message

    def __str__(self) -> str:
        return self.message


class _NamedStdout:
    """``sys.stdout`` whose write errors name it: a full disk under ``timm-sl list > out.txt`` says
    'standard output: no space left on device', not an '[Errno 28]' naming nothing (the system leaves the name out)."""
    name = 'standard output'

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def _named(self, method: str, *args: Any) -> Any:
        try:
            return getattr(self._stream, method)(*args)
        except OSError as e:
            if e.filename is None and e.strerror and not isinstance(e, BrokenPipeError):
                raise OSError(e.errno, e.strerror, self.name) from e
            raise

    def write(self, text: str) -> int:
        text = name_text(text)  # a path under a Latin-1 locale: 'café', not 'cafÃ©'
        try:
            return self._named('write', text)
        except UnicodeEncodeError:  # '日本' in a name, under a Latin-1 locale: escaped, as Python's stderr does
            encoding = self._stream.encoding or 'utf-8'
            return self._named('write', text.encode(encoding, 'backslashreplace').decode(encoding))

    def flush(self) -> None:
        self._named('flush')

    def __getattr__(self, name: str) -> Any:  # fileno, isatty, encoding, buffer: the stream's own
        return getattr(self._stream, name)


def _drop_stdout(stream: Any) -> None:
    """Point standard output at the null device: what is left in its buffer can no longer be written, and Python's
    own flush at exit would add a second error (exit status 120) after the command's one line."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), stream.fileno())
    except (OSError, ValueError):  # no file descriptor (a test's stream): nothing is flushed at exit
        pass


def _flush_or_drop(stream: Any) -> None:
    """Write what standard output still holds; where it cannot take it, drop it (:func:`_drop_stdout`): a command
    that fails already says why in its own line."""
    try:
        stream.flush()
    except OSError:
        _drop_stdout(stream)


def main(argv: Optional[List[str]] = None) -> int:
    """Run one ``timm-sl`` command; its exit status (2 and one line on stderr for bad input, see the module)."""
    parser = build_parser()
    args = parser.parse_args(argv)  # --help, --version and argument errors end here, before torch loads
    stdout, sys.stdout = sys.stdout, _NamedStdout(sys.stdout)
    try:
        check_command_paths(parser.commands[args.command], args)  # every path the command reads or writes, first
        _register_models()  # every command may create sl_ models, also when the autoload hook is off (and a bad
        status = args.func(args)  # TIMM_SL_PRETRAINED tags file is one line, as any other file)
        sys.stdout.flush()  # what the command printed last: a write error here is the command's, named
        return status
    except BrokenPipeError:  # the reader left (`timm-sl list | head`): no message, as for any command-line tool
        _drop_stdout(stdout)
        return 1
    except KeyboardInterrupt:  # Ctrl-C before a command's own handling (a sweep stops its runs itself): one line
        _flush_or_drop(stdout)
        print(f'timm-sl {args.command}: interrupted', file=sys.stderr)
        return 130
    except USER_ERRORS as e:
        if isinstance(e, OSError) and e.filename == _NamedStdout.name:
            _drop_stdout(stdout)
        else:  # what the command printed before it failed, written now: not at exit, after the line below
            _flush_or_drop(stdout)
        message = '\n'.join(f'timm-sl {args.command}: {line}' for line in name_text(describe(e)).splitlines())
        print(message, file=sys.stderr)
        raise CommandFailed(message, getattr(e, 'exit_status', 2)) from e
    finally:
        sys.stdout = stdout


if __name__ == '__main__':
    sys.exit(main())
