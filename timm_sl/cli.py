"""The ``timm-sl`` command."""
import argparse
import sys
from typing import List, Optional, Sequence

__all__ = ['main']


def _format_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(str(c)) for c in col) for col in zip(header, *rows)]
    lines = ['  '.join(str(c).ljust(w) for c, w in zip(header, widths)).rstrip()]
    lines.append('  '.join('-' * w for w in widths))
    lines += ['  '.join(str(c).ljust(w) for c, w in zip(row, widths)).rstrip() for row in rows]
    return '\n'.join(lines)


def cmd_list(args: argparse.Namespace) -> int:
    import timm
    import timm_sl  # noqa: F401  (registers the models even when the autoload hook is disabled)
    from timm_sl.profile import count_macs, count_params

    names = timm.list_models(args.filter)
    if not names:
        print(f'no sl_ model matches {args.filter!r}', file=sys.stderr)
        return 1
    from timm_sl.paper import TABLE2

    header = ['model', 'params (M)', 'MACs (M)', 'input', 'classes', 'pretrained tags']
    if args.baseline:
        header[3:3] = ['base params (M)', 'base MACs (M)', 'paper SL / base (MACs M, params M)']
    rows = []
    for name in names:
        model = timm.create_model(name)
        cfg = model.pretrained_cfg
        tags = [t.split('.', 1)[1] for t in timm.list_pretrained(f'{name}.*')]
        row = [name, f'{count_params(model) / 1e6:.2f}', f'{count_macs(model) / 1e6:.1f}',
               'x'.join(str(s) for s in cfg['input_size']), str(cfg['num_classes']), ', '.join(tags) or '-']
        if args.baseline:
            base = timm.create_model(name, **type(model).baseline_kwargs)
            paper = TABLE2.get(name)
            paper_text = f"{paper['sl'][0]}/{paper['sl'][1]} ; {paper['base'][0]}/{paper['base'][1]}" if paper else '-'
            row[3:3] = [f'{count_params(base) / 1e6:.2f}', f'{count_macs(base) / 1e6:.1f}', paper_text]
        rows.append(row)
    print(_format_table(header, rows))
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    import statistics
    from timm_sl.demo import run_demo
    from timm_sl.plot import plot_curves

    results = run_demo(args.model, epochs=args.epochs, seeds=args.seeds, batch_size=args.batch_size, lr=args.lr,
                       model_kwargs=args.model_kwargs, limit=args.limit)
    sl, base = results
    print(f'\n{args.model} on scikit-learn digits (1797 images, 8x8 upscaled), {args.epochs} epochs, '
          f'{args.seeds} seed(s): validation top-1 (%), mean over seeds')
    rows = [[str(e + 1), f'{a:.2f}', f'{b:.2f}'] for e, (a, b) in enumerate(zip(sl.mean_curve, base.mean_curve))]
    print(_format_table(['epoch', 'SL top-1', 'baseline top-1'], rows))

    def spread(values):
        return f'{statistics.fmean(values):.2f}' + (f' +- {statistics.stdev(values):.2f}' if len(values) > 1 else '')
    print()
    print(_format_table(['model', 'kwargs', 'best top-1', 'train img/s', 'params (M)'], [
        [r.name, ' '.join(f'{k}={v}' for k, v in r.kwargs.items()) or '-', spread(r.best),
         f'{statistics.fmean(r.train_img_s):.1f}', f'{r.params / 1e6:.2f}'] for r in results]))
    plot_curves({f'SL ({args.model})': sl.mean_curve, 'baseline': base.mean_curve}, args.out,
                title=f'{args.model} vs baseline on digits')
    print(f'\nlearning curves: {args.out}')
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from timm_sl.hub import export_checkpoint
    try:
        out, source = export_checkpoint(args.checkpoint, args.model, args.out, model_kwargs=args.model_kwargs,
                                        summary=args.summary, dataset=args.dataset, label_names=args.label_names)
    except (FileNotFoundError, ValueError) as e:
        print(f'timm-sl export: {e}', file=sys.stderr)
        return 1
    print(f'exported {args.checkpoint} ({source} weights) as {args.model} to {out}: '
          f'{", ".join(sorted(p.name for p in out.iterdir()))}')
    return 0


def cmd_reproduce(args: argparse.Namespace) -> int:
    from timm_sl.reproduce import run_from_args
    return run_from_args(args)


def cmd_release(args: argparse.Namespace) -> int:
    from timm_sl.release import run_from_args
    return run_from_args(args)


def cmd_push(args: argparse.Namespace) -> int:
    from timm_sl.hub import push_folder
    try:
        url = push_folder(args.folder, args.repo_id, private=args.private, revision=args.revision)
    except (RuntimeError, FileNotFoundError) as e:
        print(f'timm-sl push: {e}', file=sys.stderr)
        return 1
    print(f'pushed {args.folder} to {args.repo_id}: {url}')
    return 0


def _analysis_model(args: argparse.Namespace, checkpoint: Optional[str] = None, baseline_of=None):
    """The model an analysis subcommand looks at: random init, ``--pretrained`` weights or a train.py checkpoint.
    ``baseline_of`` (an SL model) switches SPT/LSA off with its class's ``baseline_kwargs`` (the
    ``--compare-checkpoint`` model, never pretrained)."""
    import timm
    import timm_sl  # noqa: F401  (registers the models even when the autoload hook is disabled)
    if args.model not in timm.list_models('sl_*'):
        raise SystemExit(f'timm-sl: unknown model {args.model!r}; allowed: {", ".join(timm.list_models("sl_*"))}')
    kwargs = dict(args.model_kwargs)
    if baseline_of is not None:
        kwargs.update(type(baseline_of).baseline_kwargs)
    pretrained = getattr(args, 'pretrained', False) and baseline_of is None
    try:
        if checkpoint:
            from timm_sl.hub import model_from_checkpoint
            model = model_from_checkpoint(checkpoint, args.model, kwargs)[0]
        else:
            model = timm.create_model(args.model, pretrained=pretrained, **kwargs)
    except (FileNotFoundError, ValueError, TypeError, RuntimeError) as e:
        raise SystemExit(f'timm-sl: {e}') from e
    return model.eval()


def _load_images(paths: List[str], model):
    """Image files / folders as ``(files, batch through the model's eval transform, the batch as PIL images)``."""
    import torch
    from pathlib import Path
    from PIL import Image
    from timm.data import create_transform, resolve_data_config
    files = []
    for p in map(Path, paths):
        if not p.exists():
            raise SystemExit(f'timm-sl: {p} does not exist')
        files += sorted(f for f in p.rglob('*') if f.suffix.lower() in ('.png', '.jpg', '.jpeg')) if p.is_dir() else [p]
    if not files:
        raise SystemExit(f'timm-sl: no images (.png, .jpg, .jpeg) found in {", ".join(paths)}')
    config = resolve_data_config({}, model=model)
    transform = create_transform(**config)
    try:
        batch = torch.stack([transform(Image.open(f).convert('RGB')) for f in files])
    except OSError as e:
        raise SystemExit(f'timm-sl: cannot read image: {e}') from e
    mean = torch.tensor(config['mean']).view(-1, 1, 1)
    std = torch.tensor(config['std']).view(-1, 1, 1)
    shown = [Image.fromarray((((x * std + mean).clamp(0, 1) * 255).round().byte().permute(1, 2, 0)).numpy())
             for x in batch]
    return files, batch, shown


def _runs(args: argparse.Namespace):
    """``(label, model)``: the SL model, then its baseline when ``--compare-checkpoint`` is given."""
    model = _analysis_model(args, args.checkpoint)
    yield 'SL', model
    if args.compare_checkpoint:
        yield 'baseline', _analysis_model(args, args.compare_checkpoint, baseline_of=model)


def cmd_temperature(args: argparse.Namespace) -> int:
    from timm_sl.analysis import learned_temperatures
    from timm_sl.plot import plot_curves
    model = _analysis_model(args, args.checkpoint)
    temps = learned_temperatures(model)
    if not temps:
        print(f'timm-sl: {args.model} has no LSA temperature (lsa off?)', file=sys.stderr)
        return 1
    fixed = [m.init_temperature * m.temp_ratio for n, m in model.named_modules() if n in temps]
    rows = [[str(i + 1), name, f'{t.mean():.4f}', f'{t.min():.4f}', f'{t.max():.4f}', f'{f:.4f}']
            for i, ((name, t), f) in enumerate(zip(temps.items(), fixed))]
    print(_format_table(['depth', 'layer', 'mean', 'min head', 'max head', 'head_dim^-0.5'], rows))
    plot_curves({'learned (mean over heads)': [t.mean().item() for t in temps.values()],
                 'min head': [t.min().item() for t in temps.values()],
                 'max head': [t.max().item() for t in temps.values()],
                 'fixed head_dim^-0.5': fixed}, args.out, title=f'{args.model}: learned temperature per depth',
                y_label='temperature (multiplier of QK^T)', x_label='depth')
    print(f'plot: {args.out}')
    return 0


def cmd_kld(args: argparse.Namespace) -> int:
    import torch
    from timm_sl.analysis import capture_attention, depth_curve
    from timm_sl.plot import plot_curves
    curves, layers, batch = {}, [], None
    for label, model in _runs(args):
        batch = _load_images(args.images, model)[1] if batch is None else batch
        with torch.no_grad(), capture_attention(model) as maps:
            model(batch)
        curves[label] = depth_curve(maps)
        layers = layers or list(maps)
    rows = [[str(d + 1), layer] + [f'{c[d]:.4f}' for c in curves.values()] for d, layer in enumerate(layers)]
    print(_format_table(['depth', 'layer'] + [f'{k} KL(attn || uniform)' for k in curves], rows))
    plot_curves(curves, args.out, title=f'{args.model}: attention KL divergence from uniform ({len(batch)} images)',
                y_label='mean KL (nats)', x_label='depth')
    print(f'plot: {args.out}')
    return 0


def cmd_attention(args: argparse.Namespace) -> int:
    import json
    from pathlib import Path
    from timm_sl.analysis import final_attention_map, kld_to_uniform
    from timm_sl.plot import plot_attention
    files = batch = shown = None
    columns, notes, records, rows = {}, [], [], []
    for label, model in _runs(args):
        if batch is None:
            files, batch, shown = _load_images(args.images, model)
        result = final_attention_map(model, batch)
        maps = result.maps  # (B, heads, h, w)
        views = [('', maps.mean(1))] if args.heads == 'mean' else [(f' h{i}', maps[:, i]) for i in range(maps.shape[1])]
        for tag, view in views:
            columns[label + tag] = [grid.tolist() for grid in view]
        notes.append(f'{label}: {result.description}' + (' (heads averaged)' if args.heads == 'mean' else ''))
        for file, per_head in zip(files, maps):
            mean = per_head.mean(0)
            peak = divmod(int(mean.argmax()), mean.shape[1])
            kl = kld_to_uniform((mean / mean.sum()).flatten()).item()
            rows.append([file.name, label, result.layer, f'{mean.shape[0]}x{mean.shape[1]}', f'{peak}',
                         f'{mean.max():.4f}', f'{mean.sum():.4f}', f'{kl:.4f}'])
            records.append(dict(image=str(file), model=label, layer=result.layer, kind=result.kind,
                                description=result.description, grid=list(mean.shape), peak=list(peak),
                                mean=mean.tolist(), heads=per_head.tolist()))
    print(_format_table(['image', 'model', 'layer', 'grid', 'peak (row, col)', 'peak weight', 'map sum',
                         'KL(map || uniform)'], rows))
    plot_attention(shown, columns, args.out, title=f'{args.model}: final attention map ({result.kind})', notes=notes)
    numbers = Path(args.out).with_suffix('.json')
    numbers.write_text(json.dumps(records, indent=1))
    print(f'plot: {args.out}\nnumbers: {numbers}')
    return 0


def cmd_receptive_field(args: argparse.Namespace) -> int:
    from timm_sl.analysis import receptive_field, tokenizer_geometry
    from timm_sl.layers import resolve_shift
    if args.model:
        kernel, stride, shift = tokenizer_geometry(_analysis_model(args))
        what = f'{args.model}: first tokenization step kernel {kernel}, stride {stride}'
        if not shift:
            print(f'{what}, no SPT: r_token = {receptive_field(kernel, stride=stride)}')
            return 0
    elif args.patch_size:
        kernel = stride = args.patch_size
        shift = resolve_shift(args.patch_size, args.shift_ratio)[0]
        what = f'patch {args.patch_size}'
    else:
        raise SystemExit('timm-sl receptive-field: give --model NAME or --patch-size P')
    print(f'{what}: standard tokenization r_token = {receptive_field(kernel, stride=stride)}, '
          f'SPT (shift {shift}) r_token = {receptive_field(kernel, shift, stride)}')
    return 0


def cmd_prepare_tiny_imagenet(args: argparse.Namespace) -> int:
    from timm_sl.tools import prepare_tiny_imagenet_val
    counts = prepare_tiny_imagenet_val(args.root, copy=args.copy)
    print(f'{sum(counts.values())} validation images in {len(counts)} class folders under {args.root}/val')
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog='timm-sl', description='SPT + LSA vision transformers for timm.')
    sub = parser.add_subparsers(dest='command', required=True)
    p = sub.add_parser('list', help='table of the sl_ models: params, MACs, input size, pretrained tags')
    p.add_argument('--filter', default='sl_*', help='model name pattern (default: sl_*)')
    p.add_argument('--baseline', action='store_true', help='add params / MACs of each model with spt/lsa off')
    p.set_defaults(func=cmd_list)

    from timm.utils import ParseKwargs
    p = sub.add_parser('demo', help='train an sl_ model and its baseline from scratch on the bundled digits (CPU)')
    p.add_argument('--model', default='sl_vit_32', help='sl_ model (default: sl_vit_32)')
    p.add_argument('--epochs', type=_positive_int, default=10)
    p.add_argument('--seeds', type=_positive_int, default=1, help='runs per model, reported as mean +- std')
    p.add_argument('--batch-size', type=_positive_int, default=64)
    p.add_argument('--lr', type=float, default=1e-3)
    p.add_argument('--limit', type=_positive_int, default=None, help='use only this many images (quick checks)')
    p.add_argument('--model-kwargs', nargs='*', default={}, action=ParseKwargs, help='e.g. depth=6 lsa_mask=False')
    p.add_argument('--out', default='sl_demo.png', help='PNG of the learning curves (default: sl_demo.png)')
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser(
        'export', help='write a Hub-ready folder (safetensors, config.json, card) from a train.py checkpoint')
    p.add_argument('checkpoint', help="train.py checkpoint (EMA weights are used when present)")
    p.add_argument('--model', required=True, help='sl_ model name the checkpoint was trained as')
    p.add_argument('--model-kwargs', nargs='*', default={}, action=ParseKwargs, help='as given to train.py')
    p.add_argument('--out', required=True, help='output folder')
    p.add_argument('--summary', default=None, help="train.py's summary.csv, for the card's metrics")
    p.add_argument('--dataset', default=None, help='dataset name for the card, e.g. tinyimagenet')
    p.add_argument('--label-names', default=None, help='class names: a JSON list or one name per line')
    p.set_defaults(func=cmd_export)

    from timm_sl.reproduce import add_reproduce_args
    p = sub.add_parser('reproduce', help="train every Table 2 row (baseline / SL) with timm's train.py, one report")
    add_reproduce_args(p)
    p.set_defaults(func=cmd_reproduce)

    from timm_sl.release import add_release_args
    p = sub.add_parser('release', help='export train.py runs with model cards and push them to the Hub (dry run)')
    add_release_args(p)
    p.set_defaults(func=cmd_release)

    p = sub.add_parser('push', help='upload an exported folder to the Hugging Face Hub')
    p.add_argument('folder')
    p.add_argument('--repo-id', required=True, help='ORG/NAME')
    p.add_argument('--private', action='store_true')
    p.add_argument('--revision', default=None, help='branch to push to (created if missing)')
    p.set_defaults(func=cmd_push)

    def add_model_source(p: argparse.ArgumentParser, required: bool = True) -> None:
        p.add_argument('--model', required=required, help='sl_ model name')
        source = p.add_mutually_exclusive_group()
        source.add_argument('--checkpoint', default=None, help='train.py checkpoint (default: random init)')
        source.add_argument('--pretrained', action='store_true', help="the model's pretrained weights")
        p.add_argument('--model-kwargs', nargs='*', default={}, action=ParseKwargs, help='as given to train.py')

    def add_image_analysis(p: argparse.ArgumentParser) -> None:
        p.add_argument('images', nargs='+', help='image files or folders')
        add_model_source(p)
        p.add_argument('--compare-checkpoint', default=None,
                       help='checkpoint of the baseline (spt=False, lsa=False) of the same config, shown beside')

    p = sub.add_parser('temperature', help="learned LSA temperature per depth vs head_dim^-0.5 (paper Fig. 3)")
    add_model_source(p)
    p.add_argument('--out', default='sl_temperature.png')
    p.set_defaults(func=cmd_temperature)

    p = sub.add_parser('kld', help='attention KL divergence from uniform per depth (paper Fig. 4)')
    add_image_analysis(p)
    p.add_argument('--out', default='sl_kld.png')
    p.set_defaults(func=cmd_kld)

    p = sub.add_parser('attention', help="final class token's attention over the image (paper Fig. 5); PNG + JSON")
    add_image_analysis(p)
    p.add_argument('--heads', choices=('mean', 'all'), default='mean', help='average the heads or one map per head')
    p.add_argument('--out', default='sl_attention.png', help='PNG; the numbers go to the same name with .json')
    p.set_defaults(func=cmd_attention)

    p = sub.add_parser('receptive-field', help='tokenization receptive field, standard vs SPT (paper Eq. 3)')
    add_model_source(p, required=False)
    p.add_argument('--patch-size', type=_positive_int, default=None, help='instead of --model: a patch size')
    p.add_argument('--shift-ratio', type=float, default=0.5, help='with --patch-size (default 0.5)')
    p.set_defaults(func=cmd_receptive_field)

    p = sub.add_parser('prepare-tiny-imagenet', help="sort Tiny-ImageNet's val images into class folders")
    p.add_argument('root', help='the folder holding train/ and val/')
    p.add_argument('--copy', action='store_true', help='copy instead of move')
    p.set_defaults(func=cmd_prepare_tiny_imagenet)
    return parser


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f'{value} is not allowed; expected an integer >= 1')
    return value


def main(argv: Optional[List[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == '__main__':
    sys.exit(main())
