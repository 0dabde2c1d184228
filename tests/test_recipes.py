"""The train.py recipes parse with timm's train.py arguments, every documented train.py / torchrun command runs (slow,
with ``TIMM_REPO``), and the Tiny-ImageNet val tool works."""
import csv
import importlib.util
import math
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import List, Optional

import pytest
import yaml

import timm
from timm_sl.tools.cli import main
from timm_sl.tools import prepare_tiny_imagenet_val

ROOT = Path(__file__).parents[1]
RECIPES = sorted((ROOT / 'recipes').glob('*.yaml'))
TIMM_REPO = os.environ.get('TIMM_REPO')
SCRIPTS = ('train.py', 'validate.py', 'benchmark.py', 'onnx_export.py')
EXPECTED = {  # recipe -> (input size, classes)
    'cifar10': (32, 10), 'cifar100': (32, 100), 'svhn': (32, 10), 'tiny_imagenet': (64, 200), 'imagenet': (224, 1000),
    'fashion_mnist': (32, 10)}


def _load(path):
    return yaml.safe_load(path.read_text())


def test_every_dataset_has_a_recipe():
    assert {p.stem for p in RECIPES} == set(EXPECTED)


@pytest.mark.parametrize('path', RECIPES, ids=lambda p: p.stem)
def test_recipe_values_match_the_models(path):
    cfg = _load(path)
    size, classes = EXPECTED[path.stem]
    assert cfg['input_size'] == [3, size, size] and cfg['num_classes'] == classes
    assert cfg['opt'] == 'adamw' and cfg['weight_decay'] == 0.05 and cfg['epochs'] == 100
    suffix = {32: '32', 64: '64'}.get(size)
    models = timm.list_models(f'sl_*_{suffix}') if suffix else ['sl_vit_tiny', 'sl_pit_xs', 'sl_swin_t']
    for name in models:  # every model the recipe is meant for builds at its size and class count
        assert timm.get_pretrained_cfg_value(name, 'input_size') == (3, size, size)


@pytest.mark.parametrize('path', [p for p in RECIPES if p.stem != 'imagenet'], ids=lambda p: p.stem)
def test_small_data_recipes_express_the_reference_augmentation(path):
    """recipes/README.md: a 4-px pad-and-crop as square crops keeping at least as much of the image, the ImageNet
    AutoAugment policy, horizontal flip (SVHN too), random erasing 0.25 with a constant fill."""
    cfg = _load(path)
    size = cfg['input_size'][-1]
    assert cfg['scale'] == [((size - 4) / size) ** 2, 1.0] and cfg['ratio'] == [1.0, 1.0]
    assert cfg['train_interpolation'] == 'bicubic' and cfg['hflip'] == 0.5
    assert cfg['aa'] == 'original' and cfg['reprob'] == 0.25 and cfg['remode'] == 'const'


def _train_py_parser():
    if not TIMM_REPO or not (Path(TIMM_REPO) / 'train.py').exists():
        pytest.skip("set TIMM_REPO to a folder with timm's train.py to check the recipes against its arguments")
    spec = importlib.util.spec_from_file_location('timm_train_script', Path(TIMM_REPO) / 'train.py')
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # defines the parsers; main() only runs under __main__
    return module.parser


@pytest.mark.parametrize('path', RECIPES, ids=lambda p: p.stem)
def test_recipe_keys_are_train_py_arguments(path, tmp_path):
    parser = _train_py_parser()
    dests = {action.dest for action in parser._actions}
    cfg = _load(path)
    assert set(cfg) - dests == set()
    parser.set_defaults(**cfg)
    args = parser.parse_args([str(tmp_path), '--model', 'sl_vit_32'])
    assert args.epochs == 100 and args.model == 'sl_vit_32'
    assert args.aug_repeats == 0  # train.py refuses repeated augmentation in a single process
    for key, value in cfg.items():  # values have the types train.py's own flags give
        flag = next(a for a in parser._actions if a.dest == key)
        if flag.type is not None:
            values = value if isinstance(value, list) else [value]
            assert all(isinstance(v, flag.type) for v in values), (key, value, flag.type)


def _documented_commands(markdown: Path, section: Optional[str] = None) -> List[List[str]]:
    """The commands of the ``bash`` blocks of ``markdown`` (or of its ``## section``) that run one of timm's scripts."""
    text = markdown.read_text()
    if section is not None:
        text = text.split(f'## {section}\n', 1)[1].split('\n## ', 1)[0]
    commands = []
    for block in re.findall(r'```bash\n(.*?)```', text, flags=re.S):
        for line in block.replace('\\\n', ' ').splitlines():
            argv = shlex.split(line, comments=True)
            if any(arg in SCRIPTS for arg in argv):
                commands.append(argv)
    return commands


RECIPE_COMMANDS = _documented_commands(ROOT / 'recipes' / 'README.md')
README_COMMANDS = _documented_commands(ROOT / 'README.md', "With timm's scripts")


def _option(argv: List[str], name: str) -> Optional[str]:
    return argv[argv.index(name) + 1] if name in argv else None


def _command_id(argv: List[str]) -> str:
    return '-'.join([argv[0], Path(_option(argv, '--config') or 'flags').stem, _option(argv, '--model') or '']
                    + (['baseline'] if '--model-kwargs' in argv else []))


def test_documented_commands_are_found():
    assert [argv[0] for argv in RECIPE_COMMANDS] == ['python'] * 6 + ['torchrun'] * 2
    assert [next(a for a in argv if a in SCRIPTS) for argv in README_COMMANDS] == [
        'train.py', 'benchmark.py', 'onnx_export.py', 'train.py']  # the last: an ImageFolder on CPU
    for argv in RECIPE_COMMANDS:
        assert (ROOT / _option(argv, '--config')).is_file()


def test_repeated_augmentation_only_where_train_py_supports_it():
    """timm's train.py stops on ``--aug-repeats`` in one process: only torchrun commands with 2+ processes carry it."""
    for path in RECIPES:
        cfg = _load(path)
        assert 'aug_repeats' not in cfg and 'workers' not in cfg, path.name
    for argv in RECIPE_COMMANDS + README_COMMANDS:
        if argv[0] == 'torchrun':
            assert _option(argv, '--aug-repeats') == '3' and int(_option(argv, '--nproc_per_node')) >= 2
        else:
            assert '--aug-repeats' not in argv, argv


def test_readme_flags_spell_out_the_cifar100_recipe():
    """The README's flag-by-flag train.py command trains like recipes/cifar100.yaml (its model and lr aside)."""
    parser = _train_py_parser()
    argv = README_COMMANDS[0]
    flags = parser.parse_args(argv[argv.index('train.py') + 1:])
    parser.set_defaults(**_load(ROOT / 'recipes' / 'cifar100.yaml'))
    recipe = parser.parse_args(['DATA', '--model', 'sl_vit_32', '--lr', '3e-3', '--output', 'output'])
    data_config = {'input_size', 'mean', 'std', 'crop_pct', 'interpolation'}  # left to the model's pretrained_cfg
    assert {k for k in vars(recipe) if getattr(flags, k) != getattr(recipe, k)} == data_config
    pretrained_cfg = timm.create_model('sl_vit_32').pretrained_cfg
    assert {k: tuple(v) if isinstance(v, list) else v for k, v in _load(ROOT / 'recipes' / 'cifar100.yaml').items()
            if k in data_config} == {k: pretrained_cfg[k] for k in data_config}


needs_repo = pytest.mark.skipif(
    not TIMM_REPO or not (Path(TIMM_REPO) / 'train.py').exists(),
    reason="set TIMM_REPO to a folder with timm's train.py to run the documented commands")


def _image_folder(root: Path, size: int, per_class: int) -> Path:
    """A tiny ImageFolder with every split name a recipe uses (train, test, val, validation), 3 classes."""
    import numpy as np
    from PIL import Image
    rng = np.random.default_rng(0)
    for split in ('train', 'test', 'val', 'validation'):
        for c in range(3):
            folder = root / split / f'class_{c}'
            folder.mkdir(parents=True)
            for i in range(per_class):
                Image.fromarray(rng.integers(0, 256, (size, size, 3), dtype=np.uint8)).save(folder / f'{i}.png')
    return root


def _run_documented(argv: List[str], cwd: Path, data: Optional[Path] = None, out: Optional[Path] = None,
                    extra: List[str] = ()) -> str:
    """Run a documented command with timm's scripts from TIMM_REPO on CPU: data, epochs, batch and output overridden
    by arguments appended after the documented ones (argparse keeps the last), torchrun with 2 processes."""
    argv = [str(ROOT / a) if a.startswith('recipes/') else a for a in argv]
    launcher, argv = argv[0], argv[1:]
    i = next(i for i, a in enumerate(argv) if a in SCRIPTS)
    script = str(Path(TIMM_REPO) / argv[i])
    if launcher == 'torchrun':  # 2 CPU processes; the shim lets train.py's DDP call run on CPU
        argv[argv.index('--nproc_per_node') + 1] = '2'
        argv[i:i + 1] = [str(Path(__file__).with_name('cpu_ddp_train.py')), script]
        i += 1
        head = [sys.executable, '-m', 'torch.distributed.run', '--standalone']
    else:
        argv[i] = script
        head = [sys.executable]
    if data is not None:
        argv[i + 1] = str(data)
        argv += ['--dataset', '', '--epochs', '1', '-b', '8', '--workers', '1', '--device', 'cpu', '--no-prefetcher',
                 '--output', str(out), '--experiment', 'run', '--log-interval', '1']
    env = {k: v for k, v in os.environ.items() if k != 'TIMM_SL_NO_AUTOLOAD'}
    env.update(CUDA_VISIBLE_DEVICES='', OMP_NUM_THREADS='1')
    result = subprocess.run(
        head + argv + list(extra), cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result.stdout + result.stderr


def _trained_one_epoch(out: Path, argv: List[str]) -> dict:
    """The run's summary row and saved args, checked against the command."""
    rows = list(csv.DictReader(open(out / 'run' / 'summary.csv')))
    assert len(rows) == 1 and math.isfinite(float(rows[0]['train_loss'])) and float(rows[0]['train_loss']) > 0
    args = yaml.safe_load((out / 'run' / 'args.yaml').read_text())
    assert args['model'] == _option(argv, '--model')
    if _option(argv, '--config'):  # the recipe reached train.py: every key not overridden on the command line
        recipe = _load(ROOT / _option(argv, '--config'))
        kept = set(recipe) - {'epochs', 'batch_size', 'dataset', 'lr'}
        assert {k: args[k] for k in kept} == {k: recipe[k] for k in kept}
    return args


@pytest.mark.slow
@needs_repo
@pytest.mark.parametrize('argv', [a for a in RECIPE_COMMANDS if _option(a, '--nnodes') in (None, '1')],
                         ids=_command_id)
def test_recipes_readme_command_runs(argv, tmp_path):
    size = timm.get_pretrained_cfg_value(_option(argv, '--model'), 'input_size')[-1]
    data = _image_folder(tmp_path / 'data', size, per_class=8 if size <= 64 else 4)  # 224 px: one step
    log = _run_documented(argv, tmp_path, data, tmp_path / 'out')
    args = _trained_one_epoch(tmp_path / 'out', argv)
    if argv[0] == 'torchrun':
        assert 'Training in distributed mode with multiple processes' in log and 'total 2' in log
        assert args['aug_repeats'] == 3


@pytest.mark.slow
@needs_repo
def test_readme_timm_scripts_commands_run(tmp_path):
    """README "With timm's scripts": train (one epoch), benchmark (5 iterations of 8), ONNX export of that checkpoint,
    and the ImageFolder command on CPU (3 classes here)."""
    onnx = pytest.importorskip('onnx')
    train, bench, export, folder = README_COMMANDS
    data = _image_folder(tmp_path / 'data', 32, per_class=8)
    _run_documented(folder, tmp_path, data, tmp_path / 'folder', extra=['--num-classes', '3'])
    _trained_one_epoch(tmp_path / 'folder', folder)
    _run_documented(train, tmp_path, data, tmp_path / 'out')
    _trained_one_epoch(tmp_path / 'out', train)
    log = _run_documented(
        bench, tmp_path, extra=['-b', '8', '--num-warm-iter', '1', '--num-bench-iter', '5', '--device', 'cpu'])
    assert 'infer_samples_per_sec' in log and 'train_samples_per_sec' in log
    checkpoint = str(tmp_path / 'out' / 'run' / 'model_best.pth.tar')
    _run_documented([checkpoint if a == 'model_best.pth.tar' else a for a in export], tmp_path)
    onnx_file = tmp_path / export[export.index('onnx_export.py') + 1]  # --check-forward compared it in ONNX Runtime
    onnx.checker.check_model(str(onnx_file))
    assert 'Softmax' in {node.op_type for node in onnx.load(str(onnx_file)).graph.node}


def test_prepare_tiny_imagenet_val(tmp_path):
    val = tmp_path / 'val'
    (val / 'images').mkdir(parents=True)
    rows = []
    for i, wnid in enumerate(['n01', 'n02', 'n01']):
        (val / 'images' / f'val_{i}.JPEG').write_bytes(b'jpeg')
        rows.append(f'val_{i}.JPEG\t{wnid}\t0\t0\t10\t10')
    (val / 'val_annotations.txt').write_text('\n'.join(rows) + '\n')
    assert prepare_tiny_imagenet_val(tmp_path) == {'n01': 2, 'n02': 1}
    assert sorted(p.name for p in (val / 'n01').iterdir()) == ['val_0.JPEG', 'val_2.JPEG']
    assert not (val / 'images').exists()
    assert prepare_tiny_imagenet_val(tmp_path) == {'n01': 2, 'n02': 1}  # idempotent
    assert main(['prepare-tiny-imagenet', str(tmp_path)]) == 0


def test_prepare_tiny_imagenet_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match='val_annotations.txt not found'):
        prepare_tiny_imagenet_val(tmp_path)
    (tmp_path / 'val').mkdir()
    (tmp_path / 'val' / 'val_annotations.txt').write_text('missing.JPEG\tn01\n')
    with pytest.raises(ValueError, match='image missing.JPEG is neither in'):
        prepare_tiny_imagenet_val(tmp_path)


def test_prepare_tiny_imagenet_moves_training_images_into_their_class_folder(tmp_path):
    """timm labels an image by the folder it is in: Tiny-ImageNet's ``train/<wnid>/images/*.JPEG`` would be one
    class, 'images', for every training image."""
    from timm.data.readers.reader_image_folder import find_images_and_targets
    from timm_sl.tools.data_check import check_data
    import io
    from PIL import Image
    jpeg = io.BytesIO()
    Image.new('RGB', (2, 2)).save(jpeg, 'JPEG')  # a whole image: a cut-off one is refused
    for i, wnid in enumerate(['n01', 'n02']):
        (tmp_path / 'train' / wnid / 'images').mkdir(parents=True)
        (tmp_path / 'train' / wnid / 'images' / f'{wnid}_0.JPEG').write_bytes(jpeg.getvalue())
        (tmp_path / 'train' / wnid / f'{wnid}_boxes.txt').write_text(f'{wnid}_0.JPEG\t0\t0\t10\t10\n')
        (tmp_path / 'val' / 'images').mkdir(parents=True, exist_ok=True)
        (tmp_path / 'val' / 'images' / f'val_{i}.JPEG').write_bytes(jpeg.getvalue())
    (tmp_path / 'val' / 'val_annotations.txt').write_text('val_0.JPEG\tn01\t0\t0\t9\t9\nval_1.JPEG\tn02\t0\t0\t9\t9\n')
    assert find_images_and_targets(str(tmp_path / 'train'))[1] == {'images': 0}  # as downloaded: one class
    assert main(['prepare-tiny-imagenet', str(tmp_path)]) == 0
    for split in ('train', 'val'):
        samples, classes = find_images_and_targets(str(tmp_path / split))
        assert classes == {'n01': 0, 'n02': 1} and [target for _, target in samples] == [0, 1], split
    assert (tmp_path / 'train' / 'n01' / 'n01_boxes.txt').is_file()
    assert not (tmp_path / 'train' / 'n01' / 'images').exists()
    data = dict(data_dir=str(tmp_path), dataset='', train_split='train', val_split='val', num_classes=2, class_map='')
    assert check_data(data, 'tiny-imagenet') == []
    assert main(['prepare-tiny-imagenet', str(tmp_path)]) == 0  # idempotent
    assert find_images_and_targets(str(tmp_path / 'train'))[1] == {'n01': 0, 'n02': 1}


@pytest.mark.parametrize('linked', ['val/images', 'train/n02/images'])
def test_prepare_tiny_imagenet_refuses_an_images_folder_that_is_a_link(tmp_path, capsys, linked):
    """val/images as a link to a folder elsewhere: its images were moved out of that folder, then the command ended in
    'val/images: not a directory' with train/ not prepared: half done, and the other folder emptied."""
    root = tmp_path / 'tiny'
    for i, wnid in enumerate(['n01', 'n02']):
        (root / 'train' / wnid / 'images').mkdir(parents=True)
        (root / 'train' / wnid / 'images' / f'{wnid}_0.JPEG').write_bytes(b'jpeg')
        (root / 'val' / 'images').mkdir(parents=True, exist_ok=True)
        (root / 'val' / 'images' / f'val_{i}.JPEG').write_bytes(b'jpeg')
    (root / 'val' / 'val_annotations.txt').write_text('val_0.JPEG\tn01\t0\t0\t9\t9\nval_1.JPEG\tn02\t0\t0\t9\t9\n')
    elsewhere = tmp_path / 'elsewhere'
    (root / linked).rename(elsewhere)
    (root / linked).symlink_to(elsewhere)
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob('*'))
    with pytest.raises(SystemExit) as e:
        main(['prepare-tiny-imagenet', str(root)])
    assert e.value.code == 2 and capsys.readouterr().err == (
        f'timm-sl prepare-tiny-imagenet: {root / linked} is a link (to {elsewhere}); the images are moved out of it '
        f'into class folders, which would empty the folder it links to; allowed: a real folder (copy the images in, '
        f'or prepare the folder the link points into)\n')
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob('*')) == before  # nothing moved


@pytest.mark.skipif(not hasattr(os, 'mkfifo'), reason='no FIFOs')
@pytest.mark.parametrize('name', ['wnids.txt', 'val/val_annotations.txt'])
def test_prepare_tiny_imagenet_names_a_fifo_where_it_reads_a_text_file(tmp_path, capsys, name):
    """A FIFO at wnids.txt was taken for no list (the classes of val/ went unchecked against it), one at
    val/val_annotations.txt was 'not found'."""
    root = tmp_path / 'tiny'
    (root / 'train' / 'n01' / 'images').mkdir(parents=True)
    (root / 'val' / 'images').mkdir(parents=True)
    (root / 'val' / 'images' / 'val_0.JPEG').write_bytes(b'jpeg')
    (root / 'val' / 'val_annotations.txt').write_text('val_0.JPEG\tn01\t0\t0\t9\t9\n')
    (root / name).unlink(missing_ok=True)
    os.mkfifo(root / name)
    with pytest.raises(SystemExit) as e:
        main(['prepare-tiny-imagenet', str(root)])
    assert e.value.code == 2 and capsys.readouterr().err == (
        f"timm-sl prepare-tiny-imagenet: {root / name} is a FIFO (named pipe), not a regular file; expected "
        f"Tiny-ImageNet's {name}\n")
    assert (root / 'val' / 'images' / 'val_0.JPEG').is_file()  # nothing moved


def test_card_recipe_leaves_out_what_train_py_did_not_read():
    """A card of a run of --drop-connect 0.1 (train.py never reads it), of --train-batches-per-epoch 5 without
    --train-img-sizes, --bce-target-thresh without --bce-loss or --distill-loss-weight without --kd-model-name listed
    them as the recipe, though the run trained without them; with their switch they are listed."""
    from timm_sl.tools.train_args import recipe_args
    args = dict(model='sl_vit_32', lr=0.001, drop_connect=0.1, train_img_sizes=None, train_batches_per_epoch=5,
                train_size_schedule='random', bce_loss=False, bce_target_thresh=0.2, kd_model_name=None,
                distill_loss_weight=0.5, task_loss_weight=0.5, layer_decay=None, layer_decay_min_scale=0.1,
                lr_noise=None, lr_noise_std=2.0)
    assert recipe_args(args) == dict(model='sl_vit_32', lr=0.001)
    on = dict(args, train_img_sizes=[24, 32], bce_loss=True, kd_model_name='resnet18', layer_decay=0.75,
              lr_noise=[0.5])
    assert recipe_args(on) == {k: v for k, v in on.items() if k != 'drop_connect'}


def test_card_of_a_run_of_tta_says_its_top1_is_not_the_models(tmp_path):
    """A run of train.py --tta 2 (whose validation makes no augmented copies: it averaged the outputs of two different
    images per score) was carded with that top-1 as the model's."""
    import argparse as ap
    import torch
    from timm_sl.tools.hub import export_checkpoint
    model = timm.create_model('sl_vit_32', num_classes=3, depth=1)
    args = ap.Namespace(model='sl_vit_32', epochs=1, lr=1e-3, model_kwargs=dict(depth=1), tta=2)
    torch.save({'epoch': 0, 'arch': 'sl_vit_32', 'state_dict': model.state_dict(), 'args': args, 'metric': 70.0},
               tmp_path / 'model_best.pth.tar')
    (tmp_path / 'summary.csv').write_text('epoch,train_loss,eval_loss,eval_top1,eval_top5\n0,2.0,1.9,70.0,100.0\n')
    (tmp_path / 'args.yaml').write_text('model: sl_vit_32\nepochs: 1\nlr: 0.001\ntta: 2\nnum_classes: 3\n'
                                        'model_kwargs: {depth: 1}\n')
    out, _ = export_checkpoint(tmp_path / 'model_best.pth.tar', None, tmp_path / 'export')
    card = (out / 'README.md').read_text()
    assert '| best top-1 (%) | 70.00 |' in card
    assert ("This run's top-1 were measured with `--tta 2`: train.py's validation makes no augmented copies, so each "
            "score averaged the outputs of 2 different validation images and took the first one's label; they are not "
            "these weights' top-1 on the validation split.") in card


def test_every_train_py_argument_has_its_role():
    """Each argument of timm's train.py is named once, with its role: a recipe's (RECIPE_KEYS), the machine's, paths'
    or logs' (NON_RECIPE_KEYS), one it never reads (UNREAD_KEYS) or a setting of a switch (SWITCHED_GROUPS). An
    argument of a newer train.py fails here until someone decides whether reproduce and the cards must treat it apart
    (train.py ignored --drop-connect and --train-batches-per-epoch without a word)."""
    if not TIMM_REPO or not (Path(TIMM_REPO) / 'train.py').exists():
        pytest.skip("set TIMM_REPO to a folder with timm's train.py to check its arguments")
    from timm_sl.tools.train_args import (
        NON_RECIPE_KEYS, RECIPE_KEYS, SWITCHED_GROUPS, UNREAD_KEYS, train_script_defaults)
    switched = {k for k in train_script_defaults(Path(TIMM_REPO) / 'train.py')
                if any(k != s and k.startswith(p) for s, prefixes in SWITCHED_GROUPS.items() for p in prefixes)}
    roles = [RECIPE_KEYS, NON_RECIPE_KEYS, set(UNREAD_KEYS), switched]
    unnamed = sorted(k for k in train_script_defaults(Path(TIMM_REPO) / 'train.py') if not any(k in r for r in roles))
    assert not unnamed, f'train.py arguments without a role in timm_sl/tools/train_args.py: {unnamed}'
    twice = sorted(k for k in RECIPE_KEYS if k in NON_RECIPE_KEYS or k in UNREAD_KEYS or k in switched)
    assert not twice and set(SWITCHED_GROUPS) <= RECIPE_KEYS, twice


# schedule settings a run could give, and another value of each: what train.py's scheduler reads changes the lr
_SCHEDULE_BASE = dict(epochs=10, warmup_epochs=2, decay_epochs=3, decay_milestones=[3, 6], patience_epochs=1,
                      decay_rate=0.5, min_lr=1e-3, warmup_lr=1e-4, lr_cycle_mul=1.0, lr_cycle_decay=0.5,
                      lr_cycle_limit=1, lr_k_decay=1.0, cooldown_epochs=0, warmup_prefix=False, lr_noise=None, seed=0,
                      eval_metric='top1')
_SCHEDULE_OTHER = dict(decay_epochs=5, decay_milestones=[4, 7], patience_epochs=3, decay_rate=0.3, min_lr=2e-3,
                       warmup_lr=3e-4, lr_cycle_mul=2.0, lr_cycle_decay=0.3, lr_cycle_limit=3, lr_k_decay=2.0,
                       cooldown_epochs=2)


def _lr_schedule(**args) -> tuple:
    """The epochs and the lr of each epoch (0..59) of timm's scheduler built as train.py builds it from ``args``
    (a plateau run's metric never improves)."""
    import argparse as ap
    import warnings
    import torch
    from timm.scheduler import create_scheduler_v2, scheduler_kwargs
    optimizer = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', FutureWarning)  # plateau: deprecated
        scheduler, epochs = create_scheduler_v2(optimizer, **scheduler_kwargs(ap.Namespace(**{**_SCHEDULE_BASE,
                                                                                                **args})))
    lrs = [optimizer.param_groups[0]['lr']]
    for epoch in range(1, 60):
        if scheduler is not None:
            scheduler.step(epoch, 1.0)
        lrs.append(optimizer.param_groups[0]['lr'])
    return epochs, lrs


@pytest.mark.parametrize('sched', ['cosine', 'tanh', 'step', 'multistep', 'plateau', 'poly', 'wsd', 'rsqrt',
                                   'constant', 'none'])
def test_schedule_settings_table_is_what_timm_reads(sched):
    """A schedule setting the --sched in use does not read (--decay-epochs under cosine) is told apart by SCHEDULE_KEYS
    and the cycle rule: each setting the table calls read changes timm's schedule, each other one does not."""
    from timm_sl.tools.train_args import SCHEDULE_KEYS, unread_reason
    assert set(_SCHEDULE_OTHER) == set(SCHEDULE_KEYS)
    for limit in (1, 3):
        base = dict(sched=sched, lr_cycle_limit=limit)
        other = dict(_SCHEDULE_OTHER, lr_cycle_limit=4 - limit)
        acts = {k for k, v in other.items() if _lr_schedule(**{**base, k: v}) != _lr_schedule(**base)}
        assert acts == {k for k in _SCHEDULE_OTHER if unread_reason(k, base) is None}, (sched, limit)


def test_card_recipe_leaves_out_schedule_settings_the_schedule_does_not_read():
    """A run of -- --decay-epochs 30 --decay-rate 0.5 --lr-k-decay 2 under the recipes' cosine schedule listed them on
    its card, though timm's cosine scheduler reads no --decay-epochs / --decay-rate (and --lr-cycle-mul only with
    --lr-cycle-limit above 1); now a card lists what the schedule read."""
    from timm_sl.tools.train_args import recipe_args
    defaults = dict(sched='cosine', decay_epochs=90, decay_rate=0.1, patience_epochs=10, lr_k_decay=1.0,
                    lr_cycle_mul=1.0, lr_cycle_limit=1, min_lr=0, cooldown_epochs=0, lr=None)
    args = dict(defaults, lr=0.001, decay_epochs=30, decay_rate=0.5, patience_epochs=3, lr_k_decay=2.0,
                lr_cycle_mul=2.0, min_lr=1e-6, cooldown_epochs=5)
    assert recipe_args(args, defaults) == dict(lr=0.001, lr_k_decay=2.0, min_lr=1e-6, cooldown_epochs=5)
    assert recipe_args(dict(args, lr_cycle_limit=3), defaults) == dict(
        lr=0.001, lr_k_decay=2.0, lr_cycle_mul=2.0, lr_cycle_limit=3, min_lr=1e-6, cooldown_epochs=5)
    assert recipe_args(dict(args, sched='step'), defaults) == dict(sched='step', lr=0.001, decay_epochs=30,
                                                                   decay_rate=0.5)
    # a card without train.py's defaults lists every recorded setting the schedule read, none it did not
    assert recipe_args(dict(defaults, lr=0.001)) == dict(sched='cosine', lr_k_decay=1.0, lr_cycle_limit=1, min_lr=0,
                                                         cooldown_epochs=0, lr=0.001)


def test_card_recipe_leaves_out_a_bce_loss_train_py_did_not_use():
    """A run of --bce-loss --smoothing 0 --mixup 0 --cutmix 0 (train.py picks its BCE loss only with mixup / cutmix or
    label smoothing on, so it trained with plain cross-entropy) listed bce_loss: true on its card, and its
    bce_target_thresh; with smoothing or mixing on, or under --jsd-loss, the card lists what train.py used."""
    from timm_sl.tools.train_args import recipe_args
    defaults = dict(bce_loss=False, bce_target_thresh=None, smoothing=0.1, mixup=0., cutmix=0., cutmix_minmax=None,
                    jsd_loss=False, lr=None)
    args = dict(defaults, lr=0.001, bce_loss=True, bce_target_thresh=0.2, smoothing=0.)
    assert recipe_args(args, defaults) == dict(lr=0.001, smoothing=0.)
    assert recipe_args(dict(args, smoothing=0.1), defaults) == dict(lr=0.001, bce_loss=True, bce_target_thresh=0.2)
    assert recipe_args(dict(args, mixup=0.8), defaults) == dict(lr=0.001, bce_loss=True, bce_target_thresh=0.2,
                                                                smoothing=0., mixup=0.8)
    assert recipe_args(dict(args, cutmix_minmax=[0.2, 0.8]), defaults)['bce_loss'] is True
    assert recipe_args(dict(args, smoothing=0.1, jsd_loss=True), defaults) == dict(lr=0.001, jsd_loss=True)
    assert recipe_args(args) == dict(lr=0.001, smoothing=0., mixup=0., cutmix=0.)  # without train.py's defaults


def test_card_recipe_leaves_out_mixup_settings_with_mixing_off():
    """A run of the recipe with --mixup 0 --cutmix 0 listed the recipe's mixup_prob, mixup_switch_prob, mixup_mode and
    mixup_off_epoch on its card, though train.py reads them only with mixup or cutmix on."""
    from timm_sl.tools.train_args import recipe_args
    defaults = dict(mixup=0., cutmix=0., cutmix_minmax=None, mixup_prob=1.0, mixup_switch_prob=0.5, mixup_mode='batch',
                    mixup_off_epoch=0, lr=None)
    args = dict(lr=0.001, mixup=0., cutmix=0., cutmix_minmax=None, mixup_prob=0.5, mixup_switch_prob=0.3,
                mixup_mode='elem', mixup_off_epoch=80)
    assert recipe_args(args, defaults) == dict(lr=0.001)
    assert recipe_args(args) == dict(lr=0.001, mixup=0., cutmix=0.)
    mixing = dict(mixup_prob=0.5, mixup_switch_prob=0.3, mixup_mode='elem', mixup_off_epoch=80)
    assert recipe_args(dict(args, cutmix=1.0), defaults) == dict(lr=0.001, cutmix=1.0, **mixing)
    assert recipe_args(dict(args, cutmix_minmax=[0.2, 0.8]), defaults) == dict(lr=0.001, cutmix_minmax=[0.2, 0.8],
                                                                               **mixing)
