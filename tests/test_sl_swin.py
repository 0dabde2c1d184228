import pytest
import torch
from torch import nn

import timm
from timm.models.swin_transformer import PatchMerging, WindowAttention
from timm_sl.layers import ShiftedPatchEmbed, ShiftedPatchMerging
from timm_sl.models.sl_swin import LocalityWindowAttention

BASE = dict(spt=False, lsa=False, spt_pool=False)


@pytest.mark.parametrize('name,size,classes', [
    ('sl_swin_32', 32, 100), ('sl_swin_64', 64, 200), ('sl_swin_t', 224, 1000)])
def test_sl_parts(name, size, classes):  # forward, backward, no_weight_decay: test_models.py
    model = timm.create_model(name, device='meta')
    assert model.pretrained_cfg['input_size'] == (3, size, size) and model.num_classes == classes
    assert any('relative_position_bias_table' in n for n in model.no_weight_decay())
    assert isinstance(model.patch_embed, ShiftedPatchEmbed) and isinstance(model.patch_embed.norm, nn.Identity)
    assert all(isinstance(b.attn, LocalityWindowAttention) for s in model.layers for b in s.blocks)
    assert isinstance(model.layers[0].downsample, nn.Identity)
    assert all(isinstance(s.downsample, ShiftedPatchMerging) for s in model.layers[1:])


def test_small_config_stage_shapes():
    model = timm.create_model('sl_swin_64', features_only=True)
    feats = model(torch.randn(1, 3, 64, 64))
    assert [tuple(f.shape) for f in feats] == [(1, 16, 16, 96), (1, 8, 8, 192), (1, 4, 4, 384)]
    assert [b.attn.window_size for b in model.layers_0.blocks] == [(4, 4), (4, 4)]


def _capture_probs(attn: WindowAttention):
    """Attention probabilities from the explicit path (timm's WindowAttention softmax module)."""
    store = {}
    attn.softmax.register_forward_hook(lambda m, i, o: store.__setitem__('p', o.detach()))
    return store


def test_shifted_window_attention_masks_diagonal_with_bias_and_shift_mask():
    model = timm.create_model('sl_swin_32').eval()
    block = model.layers[0].blocks[1]
    assert block.shift_size == (2, 2) and block.attn_mask is not None
    with torch.no_grad():
        block.attn.relative_position_bias_table.normal_(std=2.)  # a bias large enough to matter
    block.attn.fused_attn = False
    store = _capture_probs(block.attn)
    x = torch.randn(2, 16, 16, 96)
    block(x)
    probs = store['p']                                   # (B * nW, nH, N, N)
    num_win, N = block.attn_mask.shape[0], block.attn_mask.shape[-1]
    probs = probs.view(2, num_win, 3, N, N)
    torch.testing.assert_close(probs.sum(-1), torch.ones_like(probs.sum(-1)))
    assert torch.all(probs.diagonal(dim1=-2, dim2=-1) == 0)
    blocked = (block.attn_mask < -50).view(1, num_win, 1, N, N).expand_as(probs)  # timm's shift mask: -100
    assert blocked.any() and probs.masked_select(blocked).max() < 1e-30


def test_an_edit_of_the_shift_mask_takes_effect_at_once():
    """The block's mask (LSA's pattern) is read every call: an in-place edit (also through ``.data``, which no
    version counter sees) changes the next forward."""
    model = timm.create_model('sl_swin_32').eval()
    block = model.layers[0].blocks[1]
    block.attn.fused_attn = False
    store = _capture_probs(block.attn)
    x = torch.randn(1, 16, 16, 96)
    block(x)
    blocked = (block.attn_mask < -50).view(1, -1, 1, *block.attn_mask.shape[-2:]).expand(1, -1, 3, -1, -1)
    assert store['p'].view_as(blocked).masked_select(blocked).max() < 1e-30
    block.attn_mask.data.zero_()  # nothing blocked any more
    block(x)
    assert store['p'].view_as(blocked).masked_select(blocked).min() > 0


def test_window_attention_fused_equals_explicit_with_shift_mask():
    model = timm.create_model('sl_swin_32').eval()
    block = model.layers[0].blocks[1]
    with torch.no_grad():
        block.attn.temperature.uniform_(0.1, 0.5)
        block.attn.relative_position_bias_table.normal_()
    x = torch.randn(2, 16, 16, 96, requires_grad=True)
    outs = []
    for fused in (True, False):
        block.attn.fused_attn = fused
        x.grad = None
        block.zero_grad()
        out = block(x)
        out.square().mean().backward()
        outs.append((out.detach(), x.grad.clone(), block.attn.temperature.grad.clone()))
    for a, b in zip(*outs):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize('fused', [True, False])
def test_single_token_windows_and_lonely_rows_are_finite(fused):
    attn = LocalityWindowAttention(8, 2, window_size=1)
    attn.fused_attn = fused
    x = torch.randn(3, 1, 8)
    out = attn(x)
    assert torch.isfinite(out).all()
    # a shift-mask row that allows only the token itself: it attends to itself instead of producing NaN
    attn = LocalityWindowAttention(8, 2, window_size=2)
    attn.fused_attn = fused
    mask = torch.zeros(1, 4, 4)
    mask[0, 0, 1:] = -100.
    mask[0, 1:, 0] = -100.
    x = torch.randn(2, 4, 8)
    out = attn(x, mask=mask)
    assert torch.isfinite(out).all()
    # token 0 is alone in its region: its output is its own value row, not a mix of the blocked tokens
    v = attn.qkv(x).chunk(3, dim=-1)[2]
    torch.testing.assert_close(out[:, 0], attn.proj(v[:, 0]), rtol=1e-5, atol=1e-6)


def _modules_by_name(model):
    return {name: type(m) for name, m in model.named_modules() if name}


def test_w_o_spool_keeps_patch_merging_and_lsa_keeps_timm_weights_layout():
    model = timm.create_model('sl_swin_64', spt_pool=False)
    assert isinstance(model.layers[1].downsample, PatchMerging)
    ref_keys = set(timm.create_model('sl_swin_64', **BASE).state_dict())
    extra = set(model.state_dict()) - ref_keys
    assert all(k.endswith('.attn.temperature') or k.startswith('patch_embed.proj.') for k in extra)


def test_set_input_size_keeps_lsa_state():
    model = timm.create_model('sl_swin_32').eval()
    with torch.no_grad():
        model.layers[1].blocks[0].attn.temperature.fill_(0.25)
    model.set_input_size(img_size=(64, 64))
    assert model(torch.randn(1, 3, 64, 64)).shape == (1, 100)
    attn = model.layers[1].blocks[0].attn
    assert isinstance(attn, LocalityWindowAttention) and torch.all(attn.temperature == 0.25)
    assert model.layers[0].blocks[0].attn.window_size == (8, 8)  # timm scales windows with the grid


def test_dynamic_image_size():
    model = timm.create_model('sl_swin_32', strict_img_size=False).eval()
    assert model(torch.randn(1, 3, 48, 48)).shape == (1, 100)
    assert model(torch.randn(1, 3, 32, 32)).shape == (1, 100)


@pytest.mark.parametrize('kwargs,bad', [(dict(img_size=0), 'img_size=0'),
                                        (dict(img_size=(32, -8), spt=False), r'img_size=\(32, -8\)')])
def test_an_image_size_that_is_no_size_is_refused_by_name(kwargs, bad):
    """Not a reshape / negative-dimension error from inside timm's window masks."""
    with pytest.raises(ValueError, match=rf'^{bad} is invalid; allowed: an int > 0 or a pair of them\.$'):
        timm.create_model('sl_swin_32', **kwargs)


@pytest.mark.parametrize('kwargs', [dict(img_size=1024, window_size=128), dict(img_size=1024, window_size=64)])
def test_windows_given_at_construction_keep_the_bound(kwargs):
    """Windows given to the constructor were not checked (their resize is): 64x64 windows over a 512x512 map built
    4 GiB of masks per shifted block."""
    with pytest.raises(ValueError, match=rf'^sl_swin_32: img_size=1024, patch_size=2, window_size='
                                         rf'{kwargs["window_size"]} \(stage 0\) give windows of .* attention logits '
                                         r'per head and image; allowed: at most 268435456') as error:
        timm.create_model('sl_swin_32', **kwargs)
    assert '\n' not in str(error.value)
    with torch.device('meta'):
        model = timm.create_model('sl_swin_32', img_size=1024, window_size=16)
    assert model.layers[0].blocks[0].window_size == (16, 16)
