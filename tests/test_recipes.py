"""The train.py recipes parse with timm's train.py argument names, and the Tiny-ImageNet val tool works."""
import importlib.util
import os
from pathlib import Path

import pytest
import yaml

import timm
from timm_sl.cli import main
from timm_sl.tools import prepare_tiny_imagenet_val

RECIPES = sorted((Path(__file__).parents[1] / 'recipes').glob('*.yaml'))
EXPECTED = {  # recipe -> (input size, classes)
    'cifar10': (32, 10), 'cifar100': (32, 100), 'svhn': (32, 10), 'tiny_imagenet': (64, 200), 'imagenet': (224, 1000)}


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


def _train_py_parser():
    repo = os.environ.get('TIMM_REPO')
    if not repo or not (Path(repo) / 'train.py').exists():
        pytest.skip("set TIMM_REPO to a folder with timm's train.py to check the recipes against its arguments")
    spec = importlib.util.spec_from_file_location('timm_train_script', Path(repo) / 'train.py')
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
