"""Exports load in Hugging Face transformers (model, image processor, pipeline) as they load in timm: the same logits,
the preprocessing the run trained with, the class names; offline, in a fresh interpreter, for an ``sl_`` model, a
baseline (``spt=False, lsa=False``) and a ``slify`` model; docs/transformers.md runs as written."""
import argparse
import ast
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

import timm
from timm.models import save_for_hf
from timm_sl.tools.cli import main
from timm_sl.tools.hub import export_checkpoint
from timm_sl.tools.transformers_compat import make_transformers_compatible, transformers_compatible_config

from test_hub import LABELS, TRAINING, _offline_cache, _train_run

transformers = pytest.importorskip(
    'transformers', reason='transformers is not installed (pip install ".[test]"): exports are not checked in it')
from transformers import (  # noqa: E402
    AutoImageProcessor, AutoModel, AutoModelForImageClassification, pipeline)

DOC = Path(__file__).parents[1] / 'docs' / 'transformers.md'
# transformers 5 builds models with torch >= 2.6 only (docs/transformers.md; the last test checks the refusal)
builds_models = pytest.mark.skipif(
    not transformers.utils.is_torch_available(),
    reason=f'transformers {transformers.__version__} builds no model on torch {torch.__version__} (it needs >= 2.6)')
SL_KWARGS = dict(depth=2)
KINDS = {  # kind -> model name, model kwargs
    'sl': ('sl_vit_32', SL_KWARGS),
    'baseline': ('sl_vit_32', dict(depth=2, spt=False, lsa=False)),
    'slify': ('slify', dict(base='vit_tiny_patch16_224', img_size=32, patch_size=4, depth=2)),
}
OFFLINE = dict(HF_HUB_OFFLINE='1', TRANSFORMERS_OFFLINE='1')


def _export(kind: str, root: Path) -> Path:
    """``timm-sl export`` of a run of each kind (sl_ model, baseline kwargs, slify)."""
    name, kwargs = KINDS[kind]
    out = root / f'{kind}-export'
    export_checkpoint(_train_run(root / kind, name, kwargs), name, out, model_kwargs=kwargs, label_names=LABELS)
    return out


def _reference(kind: str, root: Path) -> torch.nn.Module:
    """The model as trained: built by name, holding the exported weights (not read through either hub loader)."""
    name, kwargs = KINDS[kind]
    model = timm.create_model(name, num_classes=len(LABELS), **kwargs).eval()
    model.load_state_dict(torch.load(root / kind / 'model_best.pth.tar', weights_only=False)['state_dict'])
    return model


@pytest.fixture(scope='module')
def exports(tmp_path_factory):
    root = tmp_path_factory.mktemp('exports')
    torch.manual_seed(0)
    folders = {kind: _export(kind, root) for kind in KINDS}
    return {kind: (folder, _reference(kind, root)) for kind, folder in folders.items()}


def _image(seed: int = 0, size=(45, 37)) -> Image.Image:
    """A non-square image, so resizing and the 0.9 centre crop matter."""
    pixels = np.random.RandomState(seed).randint(0, 256, (size[1], size[0], 3), dtype=np.uint8)
    return Image.fromarray(pixels)


def _training_transform():
    return timm.data.create_transform(**TRAINING)


@pytest.mark.parametrize('kind', KINDS)
def test_config_holds_the_class_count_once_and_the_architecture(kind, exports):
    folder, _ = exports[kind]
    config = json.loads((folder / 'config.json').read_text())
    assert config['architecture'] == KINDS[kind][0] and config['num_classes'] == len(LABELS)
    assert 'num_classes' not in config['model_args'] and config['label_names'] == LABELS
    for key, value in KINDS[kind][1].items():  # the kwargs that make the model what it is
        assert config['model_args'][key] == (list((value, value)) if key == 'img_size' else value)


@pytest.mark.parametrize('kind', KINDS)
@builds_models
def test_transformers_logits_equal_the_trained_model(kind, exports):
    folder, reference = exports[kind]
    x = torch.randn(3, 3, 32, 32)
    model = AutoModelForImageClassification.from_pretrained(folder).eval()
    with torch.no_grad():
        torch.testing.assert_close(model(pixel_values=x).logits, reference(x), atol=1e-5, rtol=1e-5)
        backbone = AutoModel.from_pretrained(folder).eval()  # no head: the pooled features
        features = reference.forward_head(reference.forward_features(x), pre_logits=True)
        torch.testing.assert_close(backbone(pixel_values=x).pooler_output, features, atol=1e-5, rtol=1e-5)
    assert model.config.id2label == dict(enumerate(LABELS)) and model.config.label2id == {
        n: i for i, n in enumerate(LABELS)}


@pytest.mark.parametrize('kind', ['sl', 'baseline'])
def test_timm_still_loads_the_export(kind, exports):
    folder, reference = exports[kind]
    x = torch.randn(3, 3, 32, 32)
    model = timm.create_model(f'local-dir:{folder}', pretrained=True).eval()
    torch.testing.assert_close(model(x), reference(x), atol=1e-5, rtol=1e-5)
    assert list(model.pretrained_cfg['label_names']) == LABELS and model.num_classes == len(LABELS)


def test_timm_loads_a_slify_export(exports):
    folder, reference = exports['slify']
    x = torch.randn(3, 3, 32, 32)
    torch.testing.assert_close(timm.create_model(f'local-dir:{folder}', pretrained=True).eval()(x), reference(x))


@pytest.mark.parametrize('kind', KINDS)
@builds_models
def test_image_processor_is_the_training_preprocessing(kind, exports):
    folder, _ = exports[kind]
    processor = AutoImageProcessor.from_pretrained(folder)
    assert {k: processor.data_config[k] for k in TRAINING} == TRAINING
    images = [_image(0), _image(1, size=(30, 52))]
    expected = torch.stack([_training_transform()(image) for image in images])
    torch.testing.assert_close(processor(images)['pixel_values'], expected)


@pytest.mark.parametrize('kind', KINDS)
@builds_models
def test_pipeline_gives_the_trained_model_scores_with_the_label_names(kind, exports):
    folder, reference = exports[kind]
    image = _image(2)
    with torch.no_grad():
        probs = reference(_training_transform()(image).unsqueeze(0)).softmax(-1)[0]
    classify = pipeline('image-classification', model=str(folder))
    result = classify(image, top_k=len(LABELS))
    order = probs.argsort(descending=True).tolist()
    assert [r['label'] for r in result] == [LABELS[i] for i in order]
    torch.testing.assert_close(torch.tensor([r['score'] for r in result]), probs[order], atol=1e-5, rtol=1e-5)


@builds_models
def test_a_new_head_for_fine_tuning(exports):
    folder, reference = exports['sl']
    x = torch.randn(2, 3, 32, 32)
    model = AutoModelForImageClassification.from_pretrained(folder, num_labels=3, ignore_mismatched_sizes=True).eval()
    assert model(pixel_values=x).logits.shape == (2, 3)
    features = model.timm_model.forward_head(model.timm_model.forward_features(x), pre_logits=True)
    expected = reference.forward_head(reference.forward_features(x), pre_logits=True)
    torch.testing.assert_close(features, expected, atol=1e-5, rtol=1e-5)


@builds_models
def test_a_save_for_hf_folder_loads_in_transformers_once_made_compatible(tmp_path):
    model = timm.create_model('sl_pit_32', num_classes=4).eval()
    save_for_hf(model, tmp_path, safe_serialization=True)
    with pytest.raises(TypeError, match="multiple values for keyword argument 'num_classes'"):
        AutoModelForImageClassification.from_pretrained(tmp_path)
    config_file = make_transformers_compatible(tmp_path)
    x = torch.randn(2, 3, 32, 32)
    loaded = AutoModelForImageClassification.from_pretrained(tmp_path).eval()
    torch.testing.assert_close(loaded(pixel_values=x).logits, model(x), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(timm.create_model(f'local-dir:{tmp_path}', pretrained=True).eval()(x), model(x),
                               atol=1e-5, rtol=1e-5)
    text = config_file.read_text()
    assert make_transformers_compatible(tmp_path) == config_file and config_file.read_text() == text  # idempotent


def test_compatible_config_changes_only_what_transformers_needs():
    config = dict(architecture='sl_vit_32', num_classes=3, pretrained_cfg=dict(mean=[0.5] * 3),
                  model_args=dict(num_classes=3, depth=2))
    fixed = transformers_compatible_config(config)
    assert fixed == dict(architecture='sl_vit_32', num_classes=3, pretrained_cfg=dict(mean=[0.5] * 3),
                         model_args=dict(depth=2))
    assert config['model_args'] == dict(num_classes=3, depth=2)  # the argument is left alone
    assert transformers_compatible_config(fixed) == fixed
    only_classes = transformers_compatible_config(dict(config, model_args=dict(num_classes=3)))
    assert 'model_args' not in only_classes and only_classes['num_classes'] == 3
    base = dict(base='vit_tiny_patch16_224.augreg_in21k')
    slified = transformers_compatible_config(dict(config, architecture='vit_tiny_patch16_224', model_args=base))
    assert slified['architecture'] == 'slify' and slified['model_args'] == base
    with pytest.raises(ValueError) as e:
        transformers_compatible_config(dict(config, num_classes=5))
    assert str(e.value) == ('config.json says num_classes=5 but model_args has num_classes=3; the exported weights '
                            'have one class count')
    with pytest.raises(ValueError, match='not a timm hub config: expected a dict with "architecture"'):
        transformers_compatible_config(dict(model_type='vit'))


def test_folder_errors_name_the_file(tmp_path):
    with pytest.raises(FileNotFoundError, match=f'{re.escape(str(tmp_path / "config.json"))} does not exist'):
        make_transformers_compatible(tmp_path)
    (tmp_path / 'config.json').write_text('{"architecture": ')
    with pytest.raises(ValueError, match='config.json is not valid JSON'):
        make_transformers_compatible(tmp_path)
    (tmp_path / 'config.json').write_text('{"model_type": "vit"}')
    with pytest.raises(ValueError, match='config.json: not a timm hub config'):
        make_transformers_compatible(tmp_path)


def _fresh_env(cache: Path) -> dict:
    """A fresh interpreter that loads plugins itself (no TIMM_SL_NO_AUTOLOAD), offline, on a private HF cache."""
    env = {k: v for k, v in os.environ.items() if k not in ('TIMM_SL_NO_AUTOLOAD', 'HF_HOME')}
    env.update(OFFLINE, HF_HUB_CACHE=str(cache))
    return env


FRESH = '''
import sys, torch
from PIL import Image
from transformers import AutoModelForImageClassification, pipeline
import timm
io = torch.load(sys.argv[1])
for kind, (repo, x, logits, pixels, top) in io.items():
    image = Image.fromarray(pixels.numpy())
    model = AutoModelForImageClassification.from_pretrained(repo).eval()
    torch.testing.assert_close(model(pixel_values=x).logits, logits, atol=1e-5, rtol=1e-5)
    result = pipeline('image-classification', model=repo)(image, top_k=1)[0]
    assert result['label'] == top, (kind, result, top)
    if kind != 'slify':
        torch.testing.assert_close(timm.create_model('hf-hub:' + repo, pretrained=True).eval()(x), logits,
                                   atol=1e-5, rtol=1e-5)
    print(kind, 'ok')
'''


@builds_models
def test_every_kind_loads_offline_from_the_hub_cache_in_a_fresh_interpreter(exports, tmp_path):
    """transformers (model and pipeline) and timm's hf-hub: read a Hub download offline; nothing imports timm_sl."""
    cache, io = tmp_path / 'hf_cache', {}
    for kind, (folder, reference) in exports.items():
        repo = f'timm-sl/{kind}-export'
        _offline_cache(folder, cache, repo)
        x, image = torch.randn(2, 3, 32, 32), _image(3)
        with torch.no_grad():
            top = LABELS[int(reference(_training_transform()(image).unsqueeze(0)).argmax())]
            io[kind] = (repo, x, reference(x), torch.from_numpy(np.array(image)), top)
    torch.save(io, tmp_path / 'io.pt')
    result = subprocess.run([sys.executable, '-c', FRESH, str(tmp_path / 'io.pt')], capture_output=True, text=True,
                            env=_fresh_env(cache), cwd=tmp_path)
    assert result.stdout.split('\n')[:-1] == [f'{kind} ok' for kind in KINDS], result.stderr[-3000:]


def _doc_blocks(language: str):
    return re.findall(rf'```{language}\n(.*?)```', DOC.read_text(), flags=re.S)


@builds_models
def test_the_documented_commands_run_as_written(tmp_path, monkeypatch):
    """docs/transformers.md: its export command on a run, then every Python block in one fresh offline interpreter
    (the Hub repository read from a cache); the printed predictions are the trained model's."""
    (export,) = _doc_blocks('bash')
    argv = shlex.split(export)
    assert argv[0] == 'timm-sl'
    run = _train_run(tmp_path / 'run', 'sl_vit_32', {})
    (tmp_path / 'classes.txt').write_text('\n'.join(LABELS) + '\n')
    _image(4).save(tmp_path / 'cat.png')
    monkeypatch.chdir(tmp_path)
    assert main(argv[1:]) == 0
    folder = tmp_path / argv[argv.index('--out') + 1]
    reference = timm.create_model('sl_vit_32', num_classes=len(LABELS)).eval()
    reference.load_state_dict(torch.load(run, weights_only=False)['state_dict'])
    with torch.no_grad():
        top = LABELS[int(reference(_training_transform()(Image.open('cat.png').convert('RGB')).unsqueeze(0)).argmax())]
    blocks = _doc_blocks('python')
    hub_repo = re.search(r"'hf-hub:([\w-]+/[\w.-]+)'", '\n'.join(blocks)).group(1)
    _offline_cache(folder, tmp_path / 'hf_cache', hub_repo)
    save_for_hf(timm.create_model('sl_vit_32', num_classes=2, depth=1), tmp_path / 'my_folder', safe_serialization=True)
    result = subprocess.run([sys.executable, '-c', '\n'.join(blocks)], capture_output=True, text=True,
                            env=_fresh_env(tmp_path / 'hf_cache'), cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    pipeline_output, transformers_top, timm_top = result.stdout.strip().split('\n')
    assert [r['label'] for r in ast.literal_eval(pipeline_output)][0] == top
    assert transformers_top == top and timm_top == top
    assert AutoModelForImageClassification.from_pretrained(tmp_path / 'my_folder').num_labels == 2


def test_an_older_torch_is_refused_as_documented(exports):
    """docs/transformers.md: on torch < 2.6 transformers 5's AutoModelForImageClassification raises an ImportError
    ("requires PyTorch >= 2.6"); timm's ``local-dir:`` loads the same folder there."""
    if transformers.utils.is_torch_available():
        pytest.skip(f'transformers builds models on torch {torch.__version__}: the tests above load them')
    assert 'requires PyTorch >= 2.6' in DOC.read_text().replace('\n', ' ')
    with pytest.raises(ImportError, match=r'requires PyTorch >= 2\.6'):
        AutoModelForImageClassification.from_pretrained(exports['sl'][0])
    folder, reference = exports['sl']
    x = torch.randn(2, 3, 32, 32)
    torch.testing.assert_close(timm.create_model(f'local-dir:{folder}', pretrained=True).eval()(x), reference(x))


def test_a_config_saved_with_a_byte_order_mark_is_read_and_its_labels_kept(tmp_path):
    """A config.json an editor saved as UTF-8 with a byte-order mark was refused as 'not valid JSON' (every other text
    file is read by its mark); its non-ASCII label names are read as UTF-8 whatever the locale, and written back."""
    model = timm.create_model('sl_vit_32', num_classes=2, depth=1)
    save_for_hf(model, tmp_path, model_config={'label_names': ['café', 'naïve']})
    config = tmp_path / 'config.json'
    config.write_bytes(b'\xef\xbb\xbf' + json.dumps(json.loads(config.read_bytes()), ensure_ascii=False).encode())
    make_transformers_compatible(tmp_path)
    fixed = json.loads(config.read_bytes().decode('utf-8'))
    assert fixed['label_names'] == ['café', 'naïve'] and fixed['architecture'] == 'sl_vit_32'
    # a config already compatible, saved again with a mark, is written back without it: timm and transformers read
    # config.json as UTF-8 and refuse a mark ('Unexpected UTF-8 BOM')
    config.write_bytes(b'\xef\xbb\xbf' + config.read_bytes())
    make_transformers_compatible(tmp_path)
    assert json.loads(config.read_bytes().decode('utf-8')) == fixed
