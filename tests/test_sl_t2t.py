import math

import pytest
import torch
from torch import nn

import timm
from timm.layers import Attention
from timm_sl.layers import LocalitySelfAttention
from timm_sl.models.sl_t2t import TokenAttention, sinusoid_position_embedding


@pytest.mark.parametrize('name,size,classes,stage_grids', [
    ('sl_t2t_32', 32, 100, [(16, 16)]),
    ('sl_t2t_64', 64, 200, [(32, 32), (16, 16)]),
    ('sl_t2t_14', 224, 1000, [(56, 56), (28, 28)]),
])
def test_token_counts_per_stage(name, size, classes, stage_grids):
    model = timm.create_model(name).eval()
    x = torch.randn(1, 3, size, size)
    grids = []
    hooks = [
        s.register_forward_hook(lambda m, i, o: grids.append(tuple(o.shape[-2:]))) for s in model.patch_embed.stages]
    out = model(x)
    for h in hooks:
        h.remove()
    assert grids == stage_grids
    final = (8, 8) if size < 224 else (14, 14)
    assert model.patch_embed.grid_size == final and model.patch_embed.num_patches == final[0] * final[1]
    assert model.patch_embed(x).shape == (1, final[0] * final[1], model.embed_dim)
    assert out.shape == (1, classes) and torch.isfinite(out).all()


def test_sl_parts_and_baseline():
    sl = timm.create_model('sl_t2t_64')
    assert sl.patch_embed.shift == (1, 1) and sl.patch_embed.stages[0].layer.attn.qkv.in_features == 3 * 5 * 9
    token_attns = [s.layer.attn for s in sl.patch_embed.stages]
    assert all(a.diag_mask and a.learn_temp for a in token_attns)
    assert all(isinstance(b.attn, LocalitySelfAttention) for b in sl.blocks)
    assert sum(n.endswith('temperature') for n in sl.no_weight_decay()) == 2 + 12

    base = timm.create_model('sl_t2t_64', spt=False, lsa=False)
    assert base.patch_embed.stages[0].layer.attn.qkv.in_features == 3 * 9
    assert all(type(b.attn) is Attention for b in base.blocks)
    assert all(not s.layer.attn.diag_mask and not s.layer.attn.learn_temp for s in base.patch_embed.stages)
    assert not any('temperature' in k for k in base.state_dict())
    assert 'pos_embed' in base.state_dict() and 'pos_embed' not in dict(base.named_parameters())


def test_sinusoid_table():
    table = sinusoid_position_embedding(5, 6)[0]
    pos, i = 3, 2
    assert table[pos, 2 * i].item() == pytest.approx(math.sin(pos / 10000 ** (2 * i / 6)), abs=1e-6)
    assert table[pos, 2 * i + 1].item() == pytest.approx(math.cos(pos / 10000 ** (2 * i / 6)), abs=1e-6)
    model = timm.create_model('sl_t2t_32')
    torch.testing.assert_close(model.pos_embed, sinusoid_position_embedding(65, 256))


@pytest.mark.parametrize('diag_mask', [True, False])
def test_token_attention_fused_equals_explicit_and_masks(diag_mask):
    attn = TokenAttention(27, 64, diag_mask=diag_mask, learn_temp=True)
    assert attn.temperature.item() == pytest.approx(27 ** -0.5)
    x = torch.randn(2, 10, 27)
    fused = attn(x)
    attn.fused_attn = False
    torch.testing.assert_close(attn(x), fused, rtol=1e-5, atol=1e-5)
    # residual through v, output width token_dim
    assert fused.shape == (2, 10, 64)
    assert torch.isfinite(TokenAttention(27, 64, diag_mask=True)(torch.randn(1, 1, 27))).all()


def test_dynamic_size_and_errors():
    model = timm.create_model('sl_t2t_32', dynamic_img_size=True).eval()
    assert model(torch.randn(1, 3, 48, 48)).shape == (1, 100)
    with pytest.raises(ValueError, match=r'patch_size=8 does not match the soft splits .* allowed: patch_size=4'):
        timm.create_model('sl_t2t_32', patch_size=8)
    with pytest.raises(AssertionError, match='Input height'):
        timm.create_model('sl_t2t_32')(torch.randn(1, 3, 64, 64))


@pytest.mark.parametrize('kwargs,message', [
    (dict(soft_splits='abc'), r"soft_splits='abc' is invalid; allowed: a non-empty sequence of \(kernel, stride, "
                              r"padding\) int triples"),  # was IndexError
    (dict(soft_splits=((3, -2, 1), (3, 2, 1))), r'soft_splits=\(\(3, -2, 1\), \(3, 2, 1\)\) is invalid'),  # was:
    # "allowed: patch_size=-4"
    (dict(soft_splits=()), r'soft_splits=\(\) is invalid'),  # was: "allowed: patch_size=1"
    (dict(token_dim=0), r'^token_dim=0 is invalid; allowed: an int >= 1\.$'),  # built; failed in the forward
    (dict(soft_splits=((64, 4, 0), (3, 2, 1)), patch_size=8), r'give a -7x-7 token grid after it; allowed: at least '
                                                              r'one token per axis'),  # built with a -3x-3 grid
    (dict(soft_splits=((3, 2, 1), (64, 2, 0)), patch_size=4), r'^T2TEmbed: img_size=32, soft splits .* give a '
                                                              r'-23x-23 token grid; allowed: at least one token'),
])
def test_soft_splits_and_token_dim_are_checked(kwargs, message):
    with pytest.raises(ValueError, match=message) as error:
        timm.create_model('sl_t2t_32', depth=1, **kwargs)
    assert '\n' not in str(error.value)


@pytest.mark.parametrize('name,shift', [('sl_t2t_32', 1), ('sl_t2t_64', 1), ('sl_t2t_14', 2)])
def test_spt_shift_is_half_the_first_soft_split_stride(name, shift):
    """int(first stride * 0.5): 1 px for the small configs (3x3, stride 2), 2 px for the 224 px ones (7x7, stride 4).
    For the small configs half the kernel is also 1 px, so a shift following the kernel passed every other test."""
    model = timm.create_model(name, device='meta')
    assert model.patch_embed.soft_splits[0][1] == 2 * shift and model.patch_embed.shift == (shift, shift)
