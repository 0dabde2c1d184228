"""Training behaviour of the paper's configurations (issue 13 §1): initialisation, stochastic-depth schedule and the
reference code's opt-in variants (T2T extra residual, CaiT class attention on raw patches), as kwargs that
``train.py --model-kwargs`` can set, without changing the architecture."""
import argparse
import csv
from pathlib import Path

import pytest
import torch
from torch import nn

import timm
from timm.layers import DropPath, calculate_drop_path_rates
from timm.models.cait import LayerScaleBlockClassAttn
from timm.models.vision_transformer import Block
from timm.utils import ParseKwargs

from timm_sl.models.sl_cait import LocalityClassAttn, PatchKeysClassAttnBlock, per_layer_scale
from timm_sl.models.sl_t2t import ExtraResidualBlock
import test_timm_scripts  # train.py helpers (image folder, subprocess run)

NORMAL_INIT_FAMILIES = ['sl_vit_32', 'sl_pit_32', 'sl_cait_32']
SHALLOW = dict(sl_vit_32=dict(depth=2), sl_pit_32=dict(depth=(1, 1, 1)), sl_cait_32=dict(depth=2),
               sl_t2t_32=dict(depth=2))  # where the depth is not the point: faster to build


def _std(param: torch.Tensor) -> float:
    return param.detach().float().std().item()


def _rate(module: nn.Module) -> float:
    """Stochastic-depth rate of a block's drop-path module (timm uses ``nn.Identity`` for 0)."""
    if isinstance(module, DropPath):
        return module.drop_prob
    assert isinstance(module, nn.Identity), type(module)
    return 0.


def _vit_rates(blocks) -> list:
    return [(_rate(b.drop_path1), _rate(b.drop_path2)) for b in blocks]


def _parse_model_kwargs(*pairs: str) -> dict:
    """``--model-kwargs`` values exactly as timm's train.py parses them (strings stay strings, True becomes bool)."""
    parser = argparse.ArgumentParser()
    parser.add_argument('--model-kwargs', nargs='*', default={}, action=ParseKwargs)
    return parser.parse_args(['--model-kwargs', *pairs]).model_kwargs


def _layout(model: nn.Module) -> dict:
    return {k: tuple(v.shape) for k, v in model.state_dict().items()}


# --- position embedding / class token -------------------------------------------------------------------------------

@pytest.mark.parametrize('name', NORMAL_INIT_FAMILIES)
@pytest.mark.parametrize('baseline', [False, True], ids=['sl', 'baseline'])
def test_small_configs_draw_pos_embed_and_cls_token_from_standard_normal(name, baseline):
    kwargs = dict(SHALLOW[name], **(dict(spt=False, lsa=False) if baseline else {}))  # the paper's baseline rows
    model = timm.create_model(name, **kwargs)
    assert 0.95 < _std(model.pos_embed) < 1.05
    assert 0.8 < _std(model.cls_token) < 1.2
    timm_init = timm.create_model(name, pos_embed_init='timm', **kwargs)
    assert 0.015 < _std(timm_init.pos_embed) < 0.025
    assert _std(timm_init.cls_token) < 0.025


def test_224_configs_keep_timm_init():
    for name in ('sl_vit_tiny', 'sl_pit_xs'):
        model = timm.create_model(name)
        assert 0.015 < _std(model.pos_embed) < 0.025 and _std(model.cls_token) < 0.025, name


# --- CaiT LayerScale ------------------------------------------------------------------------------------------------

def test_per_layer_scale_rule():
    assert [per_layer_scale(i) for i in (1, 18, 19, 24, 25, 36)] == [0.1, 0.1, 1e-5, 1e-5, 1e-6, 1e-6]


def test_cait_small_layer_scale_per_layer_index():
    model = timm.create_model('sl_cait_32')
    for i, block in enumerate(model.blocks, start=1):
        expected = 0.1 if i <= 18 else 1e-5
        for gamma in (block.gamma_1, block.gamma_2):
            assert torch.equal(gamma, torch.full_like(gamma, expected)), i
    for block in model.blocks_token_only:  # the class-attention layers count from 1 again: 0.1
        assert torch.equal(block.gamma_1, torch.full_like(block.gamma_1, 0.1))
        assert torch.equal(block.gamma_2, torch.full_like(block.gamma_2, 0.1))


def test_cait_timm_layer_scale_is_init_values_everywhere():
    model = timm.create_model('sl_cait_32', layer_scale_init='timm', init_values=1e-4, depth=2)
    for block in [*model.blocks, *model.blocks_token_only]:
        for gamma in (block.gamma_1, block.gamma_2):
            torch.testing.assert_close(gamma, torch.full_like(gamma, 1e-4), rtol=0, atol=0)



@pytest.mark.parametrize('name', ['sl_cait_32', 'sl_cait_64'])
def test_cait_init_values_beside_per_layer_scale_is_refused_not_ignored(name):
    """The 32 / 64 px CaiTs start LayerScale per layer: an ``init_values`` given to them was overwritten without a word
    (0.5 asked, 0.1 built); it is refused, and taken once ``layer_scale_init='timm'`` is asked for too."""
    with pytest.raises(ValueError) as info:
        timm.create_model(name, depth=1, init_values=0.5)
    assert str(info.value) == (f"{name}: init_values=0.5 is unused with layer_scale_init='per_layer' (each LayerScale "
                               "starts at its layer's value); allowed: init_values left out, or "
                               "layer_scale_init='timm' with it.")
    model = timm.create_model(name, depth=1, init_values=0.5, layer_scale_init='timm')
    assert torch.equal(model.blocks[0].gamma_1, torch.full_like(model.blocks[0].gamma_1, 0.5))


def test_cait_variants_start_timm_layer_scale_at_1e_5():
    """Each variant's LayerScale start under ``layer_scale_init='timm'`` is 1e-5, as timm's CaiT models."""
    for name in ['sl_cait_32', 'sl_cait_xxs24']:
        model = timm.create_model(name, depth=1, layer_scale_init='timm')
        assert torch.equal(model.blocks[0].gamma_2, torch.full_like(model.blocks[0].gamma_2, 1e-5)), name

# --- stochastic depth -----------------------------------------------------------------------------------------------

def test_vit_drop_path_constant_by_default_linear_with_timm():
    constant = timm.create_model('sl_vit_32', drop_path_rate=0.1)
    assert _vit_rates(constant.blocks) == [(0.1, 0.1)] * 9
    ramp = timm.create_model('sl_vit_32', drop_path_rate=0.1, drop_path_schedule='timm')
    assert _vit_rates(ramp.blocks) == [(r, r) for r in calculate_drop_path_rates(0.1, 9)]
    assert _vit_rates(ramp.blocks)[0] == (0., 0.)
    assert _vit_rates(timm.create_model('sl_vit_32').blocks) == [(0., 0.)] * 9  # rate 0: no DropPath at all


def test_pit_drop_path_constant_by_default_stagewise_with_timm():
    constant = timm.create_model('sl_pit_32', drop_path_rate=0.2)
    assert _vit_rates(b for s in constant.transformers for b in s.blocks) == [(0.2, 0.2)] * 12
    ramp = timm.create_model('sl_pit_32', drop_path_rate=0.2, drop_path_schedule='timm')
    expected = [(r, r) for stage in calculate_drop_path_rates(0.2, [2, 6, 4], stagewise=True) for r in stage]
    assert _vit_rates(b for s in ramp.transformers for b in s.blocks) == expected


def test_cait_drop_path_constant_includes_class_attention():
    constant = timm.create_model('sl_cait_32', drop_path_rate=0.1, depth=3)
    assert [_rate(b.drop_path) for b in [*constant.blocks, *constant.blocks_token_only]] == [0.1] * 5
    timm_sched = timm.create_model('sl_cait_32', drop_path_rate=0.1, drop_path_schedule='timm', depth=3)
    assert [_rate(b.drop_path) for b in timm_sched.blocks] == [0.1] * 3
    assert [_rate(b.drop_path) for b in timm_sched.blocks_token_only] == [0., 0.]


def test_t2t_drop_path_linear_by_default_constant_on_request():
    ramp = timm.create_model('sl_t2t_32', drop_path_rate=0.1, depth=4)  # the reference T2T ramps too
    assert _vit_rates(ramp.blocks) == [(r, r) for r in calculate_drop_path_rates(0.1, 4)]
    constant = timm.create_model('sl_t2t_32', drop_path_rate=0.1, drop_path_schedule='constant', depth=4)
    assert _vit_rates(constant.blocks) == [(0.1, 0.1)] * 4


# --- T2T extra residual (reference bug, opt-in) ---------------------------------------------------------------------

def test_t2t_extra_residual_is_off_by_default():
    model = timm.create_model('sl_t2t_32', depth=2)
    assert all(type(b) is Block for b in model.blocks)


@pytest.mark.parametrize('lsa', [True, False])
def test_t2t_extra_residual_block_matches_hand_computation(lsa):
    model = timm.create_model('sl_t2t_32', extra_residual=True, lsa=lsa, depth=2).eval()
    block = model.blocks[0]
    assert isinstance(block, ExtraResidualBlock)
    x = torch.randn(2, 65, 256)
    with torch.no_grad():
        y = block.norm1(x)
        mid = x + block.attn(y) + y
        expected = mid + block.mlp(block.norm2(mid))
        plain = x + block.attn(y)
        plain = plain + block.mlp(block.norm2(plain))
        out = block(x)
    torch.testing.assert_close(out, expected)
    assert (out - plain).abs().max() > 0.1  # the extra term is really there
    images = torch.randn(2, 3, 32, 32)
    assert model(images).shape == (2, 100)


# --- CaiT class attention on raw patch tokens (reference, opt-in) ---------------------------------------------------

def test_cait_class_attention_normed_by_default():
    model = timm.create_model('sl_cait_32', depth=2)
    assert all(type(b) is LayerScaleBlockClassAttn for b in model.blocks_token_only)


@pytest.mark.parametrize('lsa', [True, False])
def test_cait_raw_patch_class_attention_matches_hand_computation(lsa):
    model = timm.create_model('sl_cait_32', class_attn_kv='raw_patches', lsa=lsa, depth=2).eval()
    block = model.blocks_token_only[0]
    assert isinstance(block, PatchKeysClassAttnBlock)
    attn = block.attn
    patches, cls = torch.randn(2, 64, 192) * 3 + 1, torch.randn(2, 1, 192)  # far from normalised on purpose
    heads, hd = attn.num_heads, attn.head_dim
    with torch.no_grad():
        q = attn.q(block.norm1(cls)).reshape(2, 1, heads, hd).transpose(1, 2)
        q = q * attn.temperature.view(1, heads, 1, 1)
        k = attn.k(patches).reshape(2, 64, heads, hd).transpose(1, 2)  # raw patches only: no LayerNorm, no class
        v = attn.v(patches).reshape(2, 64, heads, hd).transpose(1, 2)
        mixed = ((q @ k.transpose(-2, -1)).softmax(-1) @ v).transpose(1, 2).reshape(2, 1, heads * hd)
        x_cls = cls + block.gamma_1 * attn.proj(mixed)
        expected = x_cls + block.gamma_2 * block.mlp(block.norm2(x_cls))
        out = block(patches, cls)
    torch.testing.assert_close(out, expected)
    with torch.no_grad():
        normed = LayerScaleBlockClassAttn.forward(block, patches, cls)
    assert (out - normed).abs().max() > 1e-3  # timm's normalised [class, patches] gives something else
    assert model(torch.randn(2, 3, 32, 32)).shape == (2, 100)


def test_cait_raw_patches_on_timm_heads_baseline_keeps_timm_keys():
    """With timm's own head width and LSA off the class attention is timm's ClassAttn; raw_patches swaps in this
    package's class attention, with exactly timm's parameters."""
    kwargs = dict(spt=False, lsa=False, head_dim=48, depth=2)  # 4 heads of 48 = timm's width
    timm_attn = timm.create_model('sl_cait_32', **kwargs)
    raw = timm.create_model('sl_cait_32', class_attn_kv='raw_patches', **kwargs)
    assert not isinstance(timm_attn.blocks_token_only[0].attn, LocalityClassAttn)
    assert isinstance(raw.blocks_token_only[0].attn, LocalityClassAttn)
    assert _layout(raw) == _layout(timm_attn)


# --- kwargs from train.py, bad values, architecture -----------------------------------------------------------------

def test_knobs_reachable_with_train_py_string_values():
    kwargs = _parse_model_kwargs('pos_embed_init=timm', 'drop_path_schedule=timm', 'layer_scale_init=timm',
                                 'class_attn_kv=raw_patches', 'drop_path_rate=0.1')
    assert kwargs['pos_embed_init'] == 'timm' and kwargs['drop_path_rate'] == 0.1
    cait = timm.create_model('sl_cait_32', depth=2, **kwargs)
    assert _std(cait.pos_embed) < 0.025
    assert cait.blocks[0].gamma_1[0].item() == pytest.approx(1e-5)
    assert [_rate(b.drop_path) for b in cait.blocks_token_only] == [0., 0.]
    assert isinstance(cait.blocks_token_only[0], PatchKeysClassAttnBlock)

    t2t_kwargs = _parse_model_kwargs('extra_residual=True', 'drop_path_schedule=constant', 'drop_path_rate=0.1')
    t2t = timm.create_model('sl_t2t_32', depth=2, **t2t_kwargs)
    assert isinstance(t2t.blocks[0], ExtraResidualBlock) and _rate(t2t.blocks[0].drop_path1) == 0.1

    vit = timm.create_model('sl_vit_tiny', **_parse_model_kwargs('pos_embed_init=normal'))
    assert 0.95 < _std(vit.pos_embed) < 1.05


@pytest.mark.parametrize('name, kwargs, message', [
    ('sl_vit_32', dict(pos_embed_init='gaussian'),
     "pos_embed_init='gaussian' is not supported; allowed: 'timm', 'normal'."),
    ('sl_pit_32', dict(drop_path_schedule='linear'),
     "drop_path_schedule='linear' is not supported; allowed: 'timm', 'constant'."),
    ('sl_cait_32', dict(layer_scale_init=0.1), "layer_scale_init=0.1 is not supported; allowed: 'timm', 'per_layer'."),
    ('sl_cait_32', dict(class_attn_kv='raw'),
     "class_attn_kv='raw' is not supported; allowed: 'normed', 'raw_patches'."),
    ('sl_t2t_32', dict(extra_residual='true'), "extra_residual='true' is invalid; allowed: True or False."),
    ('sl_vit_32', dict(drop_path_rate=1.0), 'drop_path_rate=1.0 is invalid; allowed: a number in [0, 1).'),
    ('sl_t2t_32', dict(drop_path_rate=-0.1), 'drop_path_rate=-0.1 is invalid; allowed: a number in [0, 1).'),
    # Swin has no training-behaviour switch, but the same rate check (built, then failed in the first training step)
    ('sl_swin_32', dict(drop_path_rate=-0.5), 'drop_path_rate=-0.5 is invalid; allowed: a number in [0, 1).'),
    ('sl_swin_32', dict(drop_path_rate=1.5), 'drop_path_rate=1.5 is invalid; allowed: a number in [0, 1).'),
])
def test_bad_values_raise_clear_errors(name, kwargs, message):
    with pytest.raises(ValueError) as info:
        timm.create_model(name, **kwargs)
    assert str(info.value) == message


@pytest.mark.parametrize('name, kwarg', [
    ('sl_t2t_32', 'pos_embed_init'), ('sl_vit_32', 'extra_residual'), ('sl_pit_32', 'layer_scale_init'),
    ('sl_vit_32', 'class_attn_kv'),
])
def test_knob_of_another_family_is_an_unknown_kwarg(name, kwarg):
    with pytest.raises(TypeError, match=rf"unknown model kwargs \['{kwarg}'\]"):
        timm.create_model(name, **{kwarg: 'normal'})


@pytest.mark.parametrize('name, kwargs', [
    ('sl_vit_32', dict(pos_embed_init='timm', drop_path_schedule='timm', drop_path_rate=0.1)),
    ('sl_pit_32', dict(pos_embed_init='timm', drop_path_schedule='timm', drop_path_rate=0.1)),
    ('sl_cait_32', dict(pos_embed_init='timm', drop_path_schedule='timm', layer_scale_init='timm', drop_path_rate=.1)),
    ('sl_cait_32', dict(class_attn_kv='raw_patches')),
    ('sl_cait_32', dict(class_attn_kv='raw_patches', spt=False, lsa=False)),
    ('sl_t2t_32', dict(extra_residual=True, drop_path_schedule='constant', drop_path_rate=0.1)),
    ('sl_t2t_32', dict(extra_residual=True, spt=False, lsa=False)),
])
def test_knobs_leave_architecture_unchanged(name, kwargs):
    base_kwargs = dict(SHALLOW[name], **{k: v for k, v in kwargs.items() if k in ('spt', 'lsa')})
    reference = timm.create_model(name, **base_kwargs)
    model = timm.create_model(name, **kwargs, **SHALLOW[name])
    assert _layout(model) == _layout(reference)
    assert sum(p.numel() for p in model.parameters()) == sum(p.numel() for p in reference.parameters())
    assert model(torch.randn(2, 3, 32, 32)).shape == (2, 100)


@pytest.mark.slow
@pytest.mark.skipif(not test_timm_scripts.TIMM_REPO, reason="set TIMM_REPO to a folder with timm's train.py")
@pytest.mark.parametrize('model, model_kwargs', [
    ('sl_cait_32', ['class_attn_kv=raw_patches', 'layer_scale_init=timm', 'pos_embed_init=timm']),
    ('sl_t2t_32', ['extra_residual=True', 'drop_path_schedule=constant']),
])
def test_timm_train_script_takes_the_knobs(model, model_kwargs, tmp_path):
    """timm's unmodified train.py passes every knob through ``--model-kwargs`` as plain strings / bools."""
    data = test_timm_scripts._image_folder(tmp_path / 'data', per_class=4)
    log = test_timm_scripts._run([
        str(Path(test_timm_scripts.TIMM_REPO) / 'train.py'), str(data), '--model', model, '--num-classes', '3',
        '--model-kwargs', 'depth=2', *model_kwargs, '--drop-path', '0.1',
        '--input-size', '3', '32', '32', '--epochs', '1', '--batch-size', '4', '--workers', '1',
        '--warmup-epochs', '0', '--output', str(tmp_path / 'out'), '--experiment', 'x', '--no-prefetcher',
        '--device', 'cpu',
    ], cwd=tmp_path)
    assert f'Model {model} created' in log
    summary = list(csv.DictReader(open(tmp_path / 'out' / 'x' / 'summary.csv')))
    assert len(summary) == 1 and float(summary[0]['train_loss']) > 0
