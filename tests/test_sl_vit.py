import argparse

import pytest
import torch
from torch import nn

import timm
from timm.layers import Attention, PatchEmbed
from timm.models import VisionTransformer, load_checkpoint
from timm.utils import ParseKwargs
from timm_sl.layers import LocalitySelfAttention, ShiftedPatchEmbed
from timm_sl.models import SlVisionTransformer

VIT_MODELS = ['sl_vit_tiny', 'sl_vit_32', 'sl_vit_64']


def _input(model, batch=2):
    return torch.randn(batch, *model.pretrained_cfg['input_size'])


def test_registered():
    assert set(VIT_MODELS) <= set(timm.list_models('sl_vit_*'))


@pytest.mark.parametrize('name,size,classes,patch', [
    ('sl_vit_tiny', 224, 1000, 16), ('sl_vit_32', 32, 100, 4), ('sl_vit_64', 64, 200, 8)])
def test_default_cfgs_and_sl_parts(name, size, classes, patch):  # forward: test_models.py
    model = timm.create_model(name, device='meta')
    assert model.pretrained_cfg['input_size'] == (3, size, size)
    assert model.num_classes == classes and model.patch_embed.patch_size == (patch, patch)
    assert isinstance(model.patch_embed, ShiftedPatchEmbed)
    assert all(isinstance(b.attn, LocalitySelfAttention) for b in model.blocks)


def _modules_by_name(model):
    return {name: type(m) for name, m in model.named_modules() if name}


def test_baseline_loads_timm_vit_weights_through_timm_filter():
    ref = timm.create_model('vit_tiny_patch16_224', num_classes=10)
    base = timm.create_model('sl_vit_tiny', spt=False, lsa=False, num_classes=10)
    missing = base.load_state_dict(ref.state_dict())
    assert not missing.missing_keys and not missing.unexpected_keys


@pytest.mark.parametrize('kwargs,expected,tag', [
    (dict(), dict(spt=True, mask=True, learn=True), 'SL'),
    (dict(lsa=False), dict(spt=True, mask=None, learn=None), 'S'),
    (dict(spt=False), dict(spt=False, mask=True, learn=True), 'L'),
    (dict(lsa_mask=False), dict(spt=True, mask=False, learn=True), 'ST'),          # "T"
    (dict(lsa_learn_temp=False), dict(spt=True, mask=True, learn=False), 'SM'),    # "M"
    (dict(lsa=False, lsa_mask=True), dict(spt=True, mask=True, learn=False), 'SM'),
    (dict(lsa=False, lsa_temp_ratio=0.25), dict(spt=True, mask=False, learn=False), 'S@0.25t'),  # Table 1 row
    (dict(spt=False, lsa=False), dict(spt=False, mask=None, learn=None), 'base'),
])
def test_ablation_switches(kwargs, expected, tag):
    model = timm.create_model('sl_vit_32', depth=2, **kwargs)
    assert isinstance(model.patch_embed, ShiftedPatchEmbed) == expected['spt']
    attn = model.blocks[0].attn
    if expected['mask'] is None:
        assert type(attn) is Attention
    else:
        assert isinstance(attn, LocalitySelfAttention)
        assert attn.diag_mask == expected['mask'] and attn.learn_temp == expected['learn']
    assert model.sl_args.ablation_tag() == tag


def test_fixed_temperature_ratio_keeps_baseline_parameters():
    fixed = timm.create_model('sl_vit_32', spt=False, lsa=False, lsa_temp_ratio=0.5)
    base = timm.create_model('sl_vit_32', spt=False, lsa=False)
    assert set(fixed.state_dict()) == set(base.state_dict())
    torch.testing.assert_close(fixed.blocks[0].attn.temperature, torch.full((12,), 16 ** -0.5 / 0.5))


def test_kwargs_from_train_py_command_line():
    parser = argparse.ArgumentParser()
    parser.add_argument('--model-kwargs', nargs='*', default={}, action=ParseKwargs)
    args = parser.parse_args(['--model-kwargs', 'lsa_mask=False', 'shift_directions=cardinal',
                              'shift_ratio=0.25', 'lsa_temp_ratio=0.5', 'spt=True'])
    model = timm.create_model('sl_vit_64', **args.model_kwargs)
    assert model.patch_embed.proj.shift_directions == 'cardinal' and model.patch_embed.proj.shift == (2, 2)
    assert not model.blocks[0].attn.diag_mask and model.blocks[0].attn.temp_ratio == 0.5


@pytest.mark.parametrize('kwargs,match', [
    (dict(shift_ratio=2), r'shift_ratio=2 is out of range; allowed: a number in \(0, 1'),
    (dict(shift_directions='up'), r"shift_directions='up' is not supported; allowed: 'diagonal'"),
    (dict(lsa='yes'), r"lsa='yes' is invalid; allowed: True or False"),
    (dict(spt=1), r'spt=1 is invalid; allowed: True or False'),
    (dict(lsa_mask='off'), r"lsa_mask='off' is invalid; allowed: True, False or None"),
    (dict(lsa_temp_ratio=0), r'lsa_temp_ratio=0 is invalid; allowed: a finite number > 0'),
    (dict(patch_size=2, shift_ratio=0.25), r'gives a shift of \(0, 0\) px'),
])
def test_bad_kwargs_raise_clear_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        timm.create_model('sl_vit_32', **kwargs)


def test_unknown_kwarg_is_named():
    with pytest.raises(TypeError, match='shift_ration'):
        timm.create_model('sl_vit_32', shift_ration=0.5)


def test_features_only_and_intermediates():
    model = timm.create_model('sl_vit_32', features_only=True, out_indices=(2, 8))
    feats = model(torch.randn(2, 3, 32, 32))
    assert [f.shape for f in feats] == [(2, 192, 8, 8)] * 2
    vit = timm.create_model('sl_vit_32').eval()
    final, inter = vit.forward_intermediates(torch.randn(1, 3, 32, 32), indices=3)
    assert final.shape == (1, 65, 192) and [t.shape for t in inter] == [(1, 192, 8, 8)] * 3


def test_dynamic_img_size():
    model = timm.create_model('sl_vit_32', dynamic_img_size=True).eval()
    assert model(torch.randn(1, 3, 48, 40)).shape == (1, 100)


def test_set_input_size_keeps_sl_state():
    model = timm.create_model('sl_vit_32').eval()
    with torch.no_grad():
        model.blocks[3].attn.temperature.fill_(0.123)
    proj = model.patch_embed.proj.weight.clone()
    model.set_input_size(img_size=(64, 64))
    assert model.pos_embed.shape == (1, 257, 192)
    assert model(torch.randn(1, 3, 64, 64)).shape == (1, 100)
    assert torch.all(model.blocks[3].attn.temperature == 0.123)
    torch.testing.assert_close(model.patch_embed.proj.weight, proj)
    model.reset_classifier(7)
    assert model(torch.randn(1, 3, 64, 64)).shape == (1, 7)
    assert torch.all(model.blocks[3].attn.temperature == 0.123)


def test_pretrained_without_weights_is_timm_error():
    with pytest.raises(RuntimeError, match='No pretrained weights exist for sl_vit_32'):
        timm.create_model('sl_vit_32', pretrained=True)


def test_checkpoint_file_round_trip_and_pos_embed_resize(tmp_path):
    model = timm.create_model('sl_vit_32', num_classes=10).eval()
    path = tmp_path / 'checkpoint.pth'
    torch.save({'state_dict': model.state_dict(), 'epoch': 3}, path)
    same = timm.create_model('sl_vit_32', num_classes=10, pretrained=True,
                             pretrained_cfg_overlay=dict(file=str(path), num_classes=10)).eval()
    x = torch.randn(2, 3, 32, 32)
    torch.testing.assert_close(same(x), model(x))
    bigger = timm.create_model('sl_vit_32', num_classes=10, img_size=64, pretrained=True,
                               pretrained_cfg_overlay=dict(file=str(path), num_classes=10)).eval()
    assert bigger.pos_embed.shape == (1, 257, 192)
    torch.testing.assert_close(bigger.blocks[0].attn.temperature, model.blocks[0].attn.temperature)
    other = timm.create_model('sl_vit_32', num_classes=10)
    load_checkpoint(other, str(path))
    torch.testing.assert_close(other.eval()(x), model(x))


def test_model_class_can_be_built_directly():
    model = SlVisionTransformer(img_size=32, patch_size=4, embed_dim=32, depth=1, num_heads=2, num_classes=3,
                                shift_directions='all')
    assert model.patch_embed.proj.num_copies == 9
    assert model(torch.randn(1, 3, 32, 32)).shape == (1, 3)
    with pytest.raises(ValueError, match='embed_layer cannot be combined with spt=True'):
        SlVisionTransformer(img_size=32, patch_size=4, embed_layer=PatchEmbed)
