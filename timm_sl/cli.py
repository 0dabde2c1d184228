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
    header = ['model', 'params (M)', 'MACs (M)', 'input', 'classes', 'pretrained tags']
    if args.baseline:
        header[3:3] = ['base params (M)', 'base MACs (M)']
    rows = []
    for name in names:
        model = timm.create_model(name)
        cfg = model.pretrained_cfg
        tags = [t.split('.', 1)[1] for t in timm.list_pretrained(f'{name}.*')]
        row = [name, f'{count_params(model) / 1e6:.2f}', f'{count_macs(model) / 1e6:.1f}',
               'x'.join(str(s) for s in cfg['input_size']), str(cfg['num_classes']), ', '.join(tags) or '-']
        if args.baseline:
            base = timm.create_model(name, **type(model).baseline_kwargs)
            row[3:3] = [f'{count_params(base) / 1e6:.2f}', f'{count_macs(base) / 1e6:.1f}']
        rows.append(row)
    print(_format_table(header, rows))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog='timm-sl', description='SPT + LSA vision transformers for timm.')
    sub = parser.add_subparsers(dest='command', required=True)
    p = sub.add_parser('list', help='table of the sl_ models: params, MACs, input size, pretrained tags')
    p.add_argument('--filter', default='sl_*', help='model name pattern (default: sl_*)')
    p.add_argument('--baseline', action='store_true', help='add params / MACs of each model with spt/lsa off')
    p.set_defaults(func=cmd_list)
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == '__main__':
    sys.exit(main())
