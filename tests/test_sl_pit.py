import pytest
import torch
from torch import nn

import timm
from timm.layers import Attention
from timm.models.pit import Pooling
from timm_sl.layers import LocalitySelfAttention, ShiftedPatchEmbed
from timm_sl.models.sl_pit import PointwisePooling, ShiftedTokenPooling

BASE = dict(spt=False, lsa=False, spt_pool=False)


@pytest.mark.parametrize('name,size,classes', [
    ('sl_pit_32', 32, 100), ('sl_pit_64', 64, 200), ('sl_pit_xs', 224, 1000)])
def test_sl_parts(name, size, classes):  # forward, backward: test_models.py
    model = timm.create_model(name, device='meta')
    assert model.pretrained_cfg['input_size'] == (3, size, size) and model.num_classes == classes
    assert isinstance(model.patch_embed, ShiftedPatchEmbed)
    attns = [b.attn for stage in model.transformers for b in stage.blocks]
    assert len(attns) == 12 and all(isinstance(a, LocalitySelfAttention) for a in attns)
    pools = [stage.pool for stage in model.transformers]
    assert pools[0] is None and all(isinstance(p, ShiftedTokenPooling) for p in pools[1:])
    assert {f'transformers.{s}.blocks.{b}.attn.temperature' for s, d in enumerate((2, 6, 4)) for b in range(d)} \
        <= model.no_weight_decay()


def test_spool_shapes_and_class_token():
    pool = ShiftedTokenPooling(96, 192)
    x, cls = torch.randn(2, 96, 16, 16), torch.randn(2, 1, 96)
    out, cls_out = pool(x, cls)
    assert out.shape == (2, 192, 8, 8) and cls_out.shape == (2, 1, 192)
    torch.testing.assert_close(cls_out, pool.fc(cls))  # the class token only goes through its own Linear
    # the class token never leaks into the map and vice versa
    out2, _ = pool(x, torch.randn(2, 1, 96))
    torch.testing.assert_close(out2, out)
    odd, _ = pool(torch.randn(1, 96, 7, 7), cls[:1])
    assert odd.shape == (1, 192, 4, 4)


def test_stage_shapes_with_spool():
    model = timm.create_model('sl_pit_64', features_only=True)
    feats = model(torch.randn(1, 3, 64, 64))
    assert [tuple(f.shape) for f in feats] == [(1, 96, 16, 16), (1, 192, 8, 8), (1, 384, 4, 4)]
    vit = timm.create_model('sl_pit_64').eval()
    final, inter = vit.forward_intermediates(torch.randn(1, 3, 64, 64))
    assert final.shape == (1, 1, 384) and [t.shape[1] for t in inter] == [96, 192, 384]


def _modules_by_name(model):
    return {name: type(m) for name, m in model.named_modules() if name}


def test_paper_baseline_pooling_is_depthwise_plus_pointwise():
    base = timm.create_model('sl_pit_64', **BASE)
    ref = timm.models.PoolingVisionTransformer(
        img_size=64, patch_size=4, stride=4, base_dims=(48, 48, 48), depth=(2, 6, 4), heads=(2, 4, 8), mlp_ratio=2,
        num_classes=200)
    pool = base.transformers[1].pool
    assert type(pool) is PointwisePooling and isinstance(pool, Pooling)
    assert pool.conv.groups == 96 and pool.conv.kernel_size == (3, 3) and pool.pw.kernel_size == (1, 1)
    extra = set(base.state_dict()) - set(ref.state_dict())
    assert extra == {f'transformers.{i}.pool.pw.{p}' for i in (1, 2) for p in ('weight', 'bias')}
    assert all(type(b.attn) is Attention for s in base.transformers for b in s.blocks)


def test_spt_stem_for_overlapping_pit_xs():
    model = timm.create_model('sl_pit_xs')
    assert model.patch_embed.patch_size == (8, 8) and model.patch_embed.proj.shift == (4, 4)
    assert model.pos_embed.shape == (1, 96, 28, 28)
    assert timm.create_model('sl_pit_xs', **BASE).pos_embed.shape == (1, 96, 27, 27)


def test_w_o_spool_keeps_conv_pooling():
    model = timm.create_model('sl_pit_64', spt_pool=False)
    assert type(model.transformers[1].pool) is PointwisePooling
    assert isinstance(model.patch_embed, ShiftedPatchEmbed)


@pytest.mark.parametrize('kwargs,match', [
    (dict(pool_layout='avg'), r"pool_layout='avg' is not supported; allowed: 'timm', 'pointwise'"),
    (dict(spt_pool='yes'), r"spt_pool='yes' is invalid; allowed: True, False or None"),
    (dict(shift_directions='x'), r"shift_directions='x' is not supported"),
])
def test_bad_kwargs(kwargs, match):
    with pytest.raises(ValueError, match=match):
        timm.create_model('sl_pit_32', **kwargs)


@pytest.mark.parametrize('kwargs,bad', [
    (dict(patch_size=0), 'patch_size=0'), (dict(stride=0), 'stride=0'), (dict(stride=-1, spt=False), 'stride=-1'),
    (dict(img_size=-32), 'img_size=-32'),
])
def test_a_patch_stride_or_image_size_that_is_no_size_is_refused_by_name(kwargs, bad):
    """Not a message that suggests stride=0, nor a ZeroDivisionError / negative-dimension error from inside timm."""
    with pytest.raises(ValueError, match=rf'^{bad} is invalid; allowed: an int > 0 or a pair of them\.$'):
        timm.create_model('sl_pit_32', **kwargs)


@pytest.mark.parametrize('kwargs', [dict(patch_size=4), dict(patch_size=4, spt=True)])
def test_a_patch_size_spt_would_ignore_is_refused(kwargs):
    # SPT's patch is the stem's stride: patch_size alone would leave sl_pit_32 cutting 2x2 patches, silently
    with pytest.raises(ValueError, match=r"^sl_pit_32: patch_size=4 does not change the SPT patch, which is the "
                                         r"stem's stride \(2\); allowed: stride=4"):
        timm.create_model('sl_pit_32', **kwargs)
    assert timm.create_model('sl_pit_32', patch_size=4, stride=4).patch_embed.patch_size == (4, 4)
    baseline = timm.create_model('sl_pit_32', patch_size=4, spt=False)  # the baseline's conv kernel, stride 2
    assert baseline.patch_embed.conv.kernel_size == (4, 4) and baseline.patch_embed.conv.stride == (2, 2)
    assert timm.create_model('sl_pit_xs', patch_size=16).patch_embed.patch_size == (8, 8)  # its own value: allowed


def test_the_patch_size_refusal_says_how_to_load_weights_made_with_it():
    """A model made with sl_pit_32 patch_size=4 before the refusal was sl_pit_32 itself (SPT ignored patch_size),
    so its export / checkpoint loads with patch_size dropped; the refusal pointed only to stride=4 (weights that do
    not fit) or spt=False (another model)."""
    with pytest.raises(ValueError, match=r"; weights of a model made with it before are sl_pit_32's own: drop "
                                         r"patch_size to load them$"):
        timm.create_model('sl_pit_32', patch_size=4)


@pytest.mark.parametrize('kwargs,bad', [(dict(heads=(0, 4, 8)), r'heads=\(0, 4, 8\)'),
                                        (dict(base_dims=(48, 0, 48), spt=False), r'base_dims=\(48, 0, 48\)')])
def test_a_stage_without_heads_or_width_is_refused_by_name(kwargs, bad):
    """Was a ZeroDivisionError from inside timm; a stage of depth 0 stays allowed (it is an empty stage)."""
    with pytest.raises(ValueError, match=rf'^{bad} is invalid; allowed: a non-empty tuple of ints >= 1 \(one per '
                                         r'stage\)\.$'):
        timm.create_model('sl_pit_32', **kwargs)
    assert timm.create_model('sl_pit_32', depth=(0, 1, 1)).num_classes == 100


def test_spool_passes_the_class_token_gradient_back():
    """d/d(cls) of sum(W cls + b) is W^T 1: the class token's gradient reaches the stage before the pooling (a
    detached class token trains a PiT whose earlier stages never learn from what the class token carries)."""
    pool = ShiftedTokenPooling(8, 16)
    cls = torch.randn(2, 1, 8, requires_grad=True)
    pool(torch.randn(2, 8, 4, 4), cls)[1].sum().backward()
    torch.testing.assert_close(cls.grad, pool.fc.weight.detach().sum(0).expand(2, 1, 8))
