"""README.md, docs/ and recipes/README.md: every link resolves, every ``timm-sl`` command of their ``bash`` blocks
parses with the CLI as written, every train.py command builds its model (and, with ``TIMM_REPO``, parses with
train.py's own arguments); the README stays a short entry page. test_recipes.py runs the train.py commands (slow)."""
import argparse
import re
import shlex
from pathlib import Path
from typing import List, Tuple

import pytest
import torch
import yaml

import timm
from timm.utils import ParseKwargs
from timm_sl.tools.cli import build_parser

from test_recipes import SCRIPTS, _train_py_parser

ROOT = Path(__file__).parents[1]
PAGES = [ROOT / 'README.md', *sorted((ROOT / 'docs').glob('*.md')), ROOT / 'recipes' / 'README.md']
README_MAX_LINES = 250


def _bash_commands(page: Path) -> List[Tuple[str, List[str]]]:
    """(line, argv) of each command of the page's ``bash`` blocks, continuations joined, ``VAR=value`` prefixes and
    here-document bodies left out."""
    commands = []
    for block in re.findall(r'```bash\n(.*?)```', page.read_text(), flags=re.S):
        heredoc = None
        for line in block.replace('\\\n', ' ').splitlines():
            if heredoc is not None:
                heredoc = None if line.strip() == heredoc else heredoc
                continue
            match = re.search(r"<<\s*'?(\w+)'?", line)
            heredoc = match.group(1) if match else None
            argv = shlex.split(line, comments=True)
            while argv and re.fullmatch(r'[A-Z_]+=\S*', argv[0]):
                argv = argv[1:]
            if argv:
                commands.append((line.strip(), argv))
    return commands


COMMANDS = [(page, line, argv) for page in PAGES for line, argv in _bash_commands(page)]
CLI_COMMANDS = [(page, line, argv) for page, line, argv in COMMANDS if argv[0] == 'timm-sl']
TRAIN_COMMANDS = [(page, line, argv) for page, line, argv in COMMANDS if 'train.py' in argv]


def _id(item) -> str:
    page, line, _ = item
    return f'{page.relative_to(ROOT)}:{line[:60]}'


def _heading_anchors(page: Path) -> set:
    """GitHub's anchors of the page's headings: lower case, punctuation but '-' and '_' dropped, spaces to '-'."""
    return {re.sub(r'[^\w\- ]', '', h.strip().lower()).replace(' ', '-')
            for h in re.findall(r'^#+ (.*)$', page.read_text(), flags=re.M)}


def test_readme_is_a_short_entry_page_linking_every_docs_page():
    readme = (ROOT / 'README.md').read_text()
    assert len(readme.splitlines()) <= README_MAX_LINES
    linked = set(re.findall(r'\]\((docs/[\w.-]+\.md)', readme))
    assert {f'docs/{p.name}' for p in (ROOT / 'docs').glob('*.md')} <= linked


@pytest.mark.parametrize('page', PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_links_resolve(page):
    """Relative links point to files that exist, and their #anchors to headings of those files."""
    for target in re.findall(r'\]\(([^)\s]+)\)', page.read_text()):
        if re.match(r'[a-z]+:', target):  # http(s), mailto
            continue
        path, _, anchor = target.partition('#')
        file = (page.parent / path).resolve() if path else page
        assert file.exists(), f'{page.name}: link {target} points to a missing file'
        if anchor:
            assert anchor in _heading_anchors(file), f'{page.name}: link {target} names no heading of {file.name}'


def test_documented_commands_are_found():
    assert {page.name for page, _, _ in CLI_COMMANDS} >= {'README.md', 'reproduce.md', 'analysis.md'}
    assert {argv[1] for _, _, argv in CLI_COMMANDS} >= {
        'export', 'push', 'release', 'reproduce', 'attention', 'temperature', 'kld', 'receptive-field',
        'prepare-svhn', 'prepare-tiny-imagenet', 'prepare-fashion-mnist'}
    assert len(TRAIN_COMMANDS) >= 10


@pytest.mark.parametrize('item', CLI_COMMANDS, ids=_id)
def test_cli_command_parses_as_written(item):
    page, line, argv = item
    try:
        args = build_parser().parse_args(argv[1:])
    except SystemExit as e:
        pytest.fail(f'{page.name}: `{line}` does not parse (exit {e.code})')
    assert args.command == argv[1]


def _model_of(argv: List[str]) -> Tuple[str, dict, int]:
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument('--model')
    parser.add_argument('--model-kwargs', nargs='*', default={}, action=ParseKwargs)
    parser.add_argument('--num-classes', type=int, default=None)
    args, _ = parser.parse_known_args(argv[argv.index('train.py') + 1:])
    return args.model, args.model_kwargs, args.num_classes


@pytest.mark.parametrize('item', TRAIN_COMMANDS, ids=_id)
def test_train_py_command_builds_its_model(item):
    """The model and --model-kwargs of the command are accepted (built on the meta device: nothing allocated)."""
    page, line, argv = item
    name, kwargs, num_classes = _model_of(argv)
    with torch.device('meta'):
        model = timm.create_model(name, **({'num_classes': num_classes} if num_classes else {}), **kwargs)
    if num_classes:
        assert model.num_classes == num_classes


@pytest.mark.parametrize('item', TRAIN_COMMANDS, ids=_id)
def test_train_py_command_parses_with_train_py(item):
    page, line, argv = item
    parser = _train_py_parser()  # skips without TIMM_REPO
    config = argparse.ArgumentParser(add_help=False)
    config.add_argument('--config')
    recipe, args = config.parse_known_args(argv[argv.index('train.py') + 1:])
    if recipe.config:  # as train.py does: the recipe's values become the defaults of its argument parser
        parser.set_defaults(**yaml.safe_load((ROOT / recipe.config).read_text()))
    try:
        parsed = parser.parse_args(args)
    except SystemExit as e:
        pytest.fail(f'{page.name}: `{line}` is refused by train.py (exit {e.code})')
    assert parsed.model == _model_of(argv)[0]


def test_scripts_other_than_train_py_are_timm_scripts_or_this_repository_files():
    """A `python X.py` command runs one of timm's scripts or a file of this repository that exists."""
    for page, line, argv in COMMANDS:
        if argv[0] in ('python', 'python3') and len(argv) > 1 and argv[1].endswith('.py'):
            assert argv[1] in SCRIPTS or (ROOT / argv[1]).is_file(), f'{page.name}: `{line}`'


def test_reproduce_page_digits_folder_script_runs_as_written(tmp_path):
    """docs/reproduce.md's here-document writes the 32 px digits ImageFolder it describes (400 train / 100 val)."""
    import subprocess
    import sys
    text = (ROOT / 'docs' / 'reproduce.md').read_text()
    script = re.search(r"python - <<'PY'[^\n]*\n(.*?)\nPY\n", text, flags=re.S).group(1)
    result = subprocess.run([sys.executable, '-'], input=script, cwd=tmp_path, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    counts = {split: len(list((tmp_path / 'digits' / split).rglob('*.png'))) for split in ('train', 'val')}
    assert counts == {'train': 400, 'val': 100}
    assert sorted(p.name for p in (tmp_path / 'digits' / 'train').iterdir()) == [str(d) for d in range(10)]
    from PIL import Image
    with Image.open(next((tmp_path / 'digits' / 'val').rglob('*.png'))) as image:
        assert image.size == (32, 32) and image.mode == 'RGB'


def test_readme_counts_the_registered_configurations():
    """The README's number of sl_ configurations is the registry's, not a number from an earlier day."""
    count = len(timm.list_models('sl_*'))
    text = (ROOT / 'README.md').read_text()
    assert f'the {count} registered `sl_` configurations' in text


def _readme_model_rows() -> List[Tuple[str, str, str]]:
    """(model, 'params SL / base', 'MACs SL / base') of each model of the README's table (two per shared row)."""
    rows = []
    for line in (ROOT / 'README.md').read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip('|').split('|')]
        if len(cells) == 6 and cells[0].startswith('`sl_'):
            rows += zip(re.findall(r'`(sl_\w+)`', cells[0]), cells[4].split(', '), cells[5].split(', '))
    return rows


@pytest.mark.slow  # every registered model and its baseline counted (meta device): ~40 s on 2 cores
@pytest.mark.parametrize('name,params,macs', _readme_model_rows())
def test_readme_model_table_counts_are_the_models(name, params, macs, monkeypatch):
    """Each params / MACs pair of the README's table is the model's and its baseline's as ``timm-sl list --baseline``
    counts them, to the digits written (sl_cait_xxs24's baseline read 2524 M MACs for 2523.48)."""
    from timm_sl.tools.profile import model_counts
    monkeypatch.setenv('TIMM_FUSED_ATTN', '0')
    base = dict(spt=False, lsa=False, **(dict(spt_pool=False) if 'pit' in name or 'swin' in name else {}))
    counts = [model_counts(name)[:2], model_counts(name, **base)[:2]]
    for written, index, unit in ((params, 0, 1e6), (macs, 1, 1e6)):
        digits = [len(v.strip().partition('.')[2]) for v in written.split('/')]
        counted = [c[index] for c in counts]
        assert [f'{c / unit:.{d}f}' for c, d in zip(counted, digits)] == [v.strip() for v in written.split('/')], name


def test_test_files_the_docs_name_exist():
    """A page that points a reader at a test module names one that is there (docs/testing.md named a
    tests/test_state.py that never existed)."""
    for page in PAGES:
        for path in re.findall(r'`(tests/[\w/]+\.py)', page.read_text()):
            assert (ROOT / path).is_file(), f'{page.relative_to(ROOT)} names {path}, which does not exist'


def test_recipes_page_regime_is_the_recipes():
    """The regime recipes/README.md gives for every YAML (and for the ones it names as exceptions) is what the YAMLs
    hold (it said 'Each YAML' holds 10 warm-up epochs, batch 128 and Mixup with probability 0.5, which imagenet.yaml
    does not)."""
    text = (ROOT / 'recipes' / 'README.md').read_text()
    match = re.search(r'^Each YAML.*?\(paper, section 4\.1\)\.', text, flags=re.S | re.M)
    common, rest = match.group(0).replace('\n', ' '), text[match.end():]
    patterns = dict(epochs=r'\((\d+) epochs', weight_decay=r'weight decay ([\d.]+)', min_lr=r'schedule to ([\de.-]+)',
                    warmup_epochs=r'(\d+) warm-up epochs', smoothing=r'label smoothing ([\d.]+)',
                    drop_path=r'drop path ([\d.]+)', reprob=r'random erasing ([\d.]+)',
                    mixup_prob=r'applied with probability ([\d.]+)', mixup_switch_prob=r'switch probability ([\d.]+)',
                    batch_size=r'batch (\d+)\)')
    regime = {key: float(re.search(pattern, common).group(1)) for key, pattern in patterns.items()}
    excepted = set(re.findall(r'^Each YAML but `(\w+\.yaml)`', common))
    train_defaults = dict(mixup_prob=1.0, mixup_switch_prob=0.5)  # train.py's, where a recipe leaves them out
    for path in sorted((ROOT / 'recipes').glob('*.yaml')):
        recipe = {**train_defaults, **yaml.safe_load(path.read_text())}
        held = {key: float(recipe[key]) for key in regime}
        if path.name not in excepted:
            assert held == regime, f'recipes/README.md: {path.name} holds {held}, not the regime it states'
            continue
        assert held != regime
        own = re.search(rf'`{path.name}` holds .*?\((.*?)\)', rest, flags=re.S).group(1).replace('\n', ' ')
        stated = dict(batch_size=r'batch (\d+)', lr=r'lr ([\de.-]+)', warmup_epochs=r'(\d+) warm-up epochs',
                      mixup=r'Mixup ([\d.]+)', cutmix=r'CutMix ([\d.]+)')
        for key, pattern in stated.items():
            assert float(re.search(pattern, own).group(1)) == float(recipe[key]), f'{path.name}: {key}'
        assert ('on every batch' in own) == (recipe['mixup_prob'] == 1.0)


def test_implementation_page_layout_names_every_source_file():
    """docs/implementation.md's source layout names each module of the package and of benchmarks/ (it left out
    _registration.py, manifest.py, _splits.py, demo/digits.py, version.py, benchmarks/launches.py and loader.py)."""
    text = (ROOT / 'docs' / 'implementation.md').read_text()
    layout = re.search(r'^## Layout\n\n```\n(.*?)```', text, flags=re.S | re.M).group(1)
    named = set(re.findall(r'[\w/]+\.py', layout))
    for path in sorted([*(ROOT / 'timm_sl').rglob('*.py'), *(ROOT / 'benchmarks').glob('*.py')]):
        if path.name != '__init__.py':
            assert path.name in {Path(n).name for n in named}, f'docs/implementation.md: layout omits {path.name}'


def test_source_stays_within_120_columns():
    """The house style, as timm's: the package's, the tests' and the benchmarks' Python lines fit 120 columns."""
    files = [p for d in ('timm_sl', 'tests', 'benchmarks') for p in sorted((ROOT / d).rglob('*.py'))]
    wide = [f'{p.relative_to(ROOT)}:{i}' for p in files
            for i, line in enumerate(p.read_text(encoding='utf-8').splitlines(), 1) if len(line) > 120]
    assert files and not wide, f'lines over 120 columns: {wide}'


def test_readme_demo_tables_are_laid_out_as_the_demo_prints_them():
    """The README's demo output is two tables as ``timm-sl demo`` lays them out (it left out the rule under each
    header that the command prints); rows are elided (epochs 2-4, 6-9), so each table is re-laid from its own cells."""
    from timm_sl.tools.cli import _format_table
    text = (ROOT / 'README.md').read_text()
    block = re.search(r'What `timm-sl demo` \(seed 0\) printed.*?```\n(.*?)```', text, flags=re.S).group(1)
    tables = block.strip('\n').split('\n\n')
    assert [t.splitlines()[0].split()[0] for t in tables] == ['epoch', 'model']
    for table in tables:
        header, _, *rows = [re.split(r' {2,}', line.rstrip()) for line in table.splitlines()]
        assert _format_table(header, rows) == table, table


def _onnx_export_model(argv: List[str]) -> torch.nn.Module:
    """The model timm 1.0.31's ``onnx_export.py`` builds for ``argv``: ``--model`` and ``--checkpoint`` only (it has
    no ``--model-kwargs``), pretrained without a checkpoint, exportable."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument('--model')
    parser.add_argument('--checkpoint', default='')
    args, _ = parser.parse_known_args(argv)
    return timm.create_model(args.model, num_classes=None, in_chans=3, pretrained=not args.checkpoint,
                             checkpoint_path=args.checkpoint, exportable=True).eval()


def test_export_page_onnx_command_builds_a_model_kwargs_run_as_trained(tmp_path, monkeypatch):
    """docs/export.md's ``onnx_export.py`` command, given the export of a run of ``--model-kwargs lsa_mask=False``,
    builds that run's model (no diagonal mask) with its weights; its ``--checkpoint`` form would load the same weights
    into the registered, masked model without an error, as the page says."""
    from timm_sl.tools.hub import export_checkpoint
    commands = [argv for line, argv in _bash_commands(ROOT / 'docs' / 'export.md') if 'onnx_export.py' in argv]
    assert len(commands) == 1 and '--checkpoint' not in commands[0]
    kwargs = dict(depth=1, embed_dim=32, num_heads=2, lsa_mask=False)
    trained = timm.create_model('sl_vit_32', num_classes=10, **kwargs).eval()
    run = tmp_path / 'output' / 'run'
    run.mkdir(parents=True)
    args = argparse.Namespace(model='sl_vit_32', model_kwargs=kwargs, num_classes=10)
    torch.save({'epoch': 0, 'arch': 'sl_vit_32', 'state_dict': trained.state_dict(), 'args': args},
               run / 'model_best.pth.tar')
    monkeypatch.chdir(tmp_path)
    export_checkpoint(run / 'model_best.pth.tar', None, tmp_path / 'run-export')
    model = _onnx_export_model(commands[0])
    x = torch.rand(2, 3, 32, 32)
    assert [block.attn.diag_mask for block in model.blocks] == [False]
    with torch.no_grad():
        assert torch.allclose(model(x), trained(x), atol=1e-6)
    masked = timm.create_model('sl_vit_32', num_classes=10, **{**kwargs, 'lsa_mask': None}).eval()
    masked.load_state_dict(trained.state_dict())  # what --model sl_vit_32 --checkpoint gives: it loads, masked
    assert masked.blocks[0].attn.diag_mask
