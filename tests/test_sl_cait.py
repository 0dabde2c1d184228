import pytest
import torch
from torch import nn

import timm
from timm.models.cait import ClassAttn, TalkingHeadAttn
from timm_sl.layers import ShiftedPatchEmbed
from timm_sl.models.sl_cait import LocalityClassAttn, LocalityTalkingHeadAttn


@pytest.mark.parametrize('name,size,classes', [
    ('sl_cait_32', 32, 100), ('sl_cait_64', 64, 200), ('sl_cait_xxs24', 224, 1000)])
def test_sl_parts(name, size, classes):  # forward, backward: test_models.py
    model = timm.create_model(name, device='meta')
    assert model.pretrained_cfg['input_size'] == (3, size, size) and model.num_classes == classes
    assert isinstance(model.patch_embed, ShiftedPatchEmbed)
    assert all(isinstance(b.attn, LocalityTalkingHeadAttn) and b.attn.diag_mask for b in model.blocks)
    assert all(isinstance(b.attn, LocalityClassAttn) and not b.attn.diag_mask for b in model.blocks_token_only)
    nwd = model.no_weight_decay()
    assert sum(n.endswith('attn.temperature') for n in nwd) == 26


def test_small_config_head_dim():
    model = timm.create_model('sl_cait_64')
    attn = model.blocks[0].attn
    assert attn.num_heads == 4 and attn.head_dim == 64
    assert attn.qkv.weight.shape == (768, 192) and attn.proj.weight.shape == (192, 256)
    cls_attn = model.blocks_token_only[0].attn
    assert cls_attn.q.weight.shape == (256, 192) and cls_attn.proj.weight.shape == (192, 256)
    assert model.blocks[0].mlp.fc1.out_features == 384 and model.blocks_token_only[0].mlp.fc1.out_features == 384


def _probe_talking_heads():
    """Talking-heads LSA (8 wide, 2 heads of 4) whose output exposes its attention: tokens are one-hot, v = x and the
    post-softmax mixing and output projection are identities, so out[i, c] = P_head(c)[i, c]."""
    dim, heads = 8, 2
    attn = LocalityTalkingHeadAttn(dim, num_heads=heads)
    with torch.no_grad():
        attn.qkv.weight[2 * dim:] = torch.eye(dim)
        attn.proj_w.weight.copy_(torch.eye(heads))
        attn.proj_w.bias.zero_()
        attn.proj.weight.copy_(torch.eye(dim))
        attn.proj.bias.zero_()
        attn.proj_l.weight.normal_()   # a real pre-softmax head mixing
    return attn, torch.eye(dim)[:6].unsqueeze(0)


def test_talking_heads_zero_self_weight():
    attn, x = _probe_talking_heads()
    out = attn(x)[0]
    assert torch.isfinite(out).all()
    assert torch.all(out.diagonal() == 0)          # tokens 0-3 through head 0, tokens 4-5 through head 1
    off_diagonal = out[:6, :6].masked_select(~torch.eye(6, dtype=torch.bool))
    assert torch.all(off_diagonal[off_diagonal != 0] > 0) and (off_diagonal > 0).sum() >= 6 * 3


def _manual_talking_heads(attn, x, mask_diag):
    B, N, C = x.shape
    q, k, v = attn.qkv(x).reshape(B, N, 3, attn.num_heads, attn.head_dim).permute(2, 0, 3, 1, 4)
    logits = (q @ k.transpose(-2, -1)) * attn.temperature.view(-1, 1, 1)
    logits = attn.proj_l(logits.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
    if mask_diag:
        logits = logits.masked_fill(torch.eye(N, dtype=torch.bool), float('-inf'))
    probs = attn.proj_w(logits.softmax(-1).permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
    return attn.proj((probs @ v).transpose(1, 2).reshape(B, N, -1))


@pytest.mark.parametrize('mask_diag', [True, False])
def test_talking_heads_matches_formula_with_mask_after_mixing(mask_diag):
    attn = LocalityTalkingHeadAttn(48, num_heads=4, head_dim=16, diag_mask=mask_diag)
    with torch.no_grad():
        attn.temperature.uniform_(0.1, 0.5)
    x = torch.randn(2, 7, 48)
    torch.testing.assert_close(attn(x), _manual_talking_heads(attn, x, mask_diag), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize('dtype', [torch.float32, torch.bfloat16])
def test_no_nan_or_inf_in_any_precision(dtype):
    model = timm.create_model('sl_cait_32', depth=4).to(dtype)
    x = torch.randn(2, 3, 32, 32, dtype=dtype, requires_grad=True)
    out = model(x)
    out.float().square().mean().backward()
    assert torch.isfinite(out).all() and torch.isfinite(x.grad).all()
    assert all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)
    single = LocalityTalkingHeadAttn(16, num_heads=2).to(dtype)
    assert torch.isfinite(single(torch.randn(1, 1, 16, dtype=dtype))).all()


def _modules_by_name(model):
    return {name: type(m) for name, m in model.named_modules() if name}


def test_small_baseline_is_plain_talking_heads_with_timm_keys():
    base = timm.create_model('sl_cait_64', spt=False, lsa=False)
    attn = base.blocks[0].attn
    assert isinstance(attn, TalkingHeadAttn) and not attn.diag_mask and not attn.learn_temp
    assert set(attn.state_dict()) == set(TalkingHeadAttn(192, num_heads=4).state_dict())
    assert isinstance(base.blocks_token_only[0].attn, ClassAttn)
    torch.testing.assert_close(attn.temperature, torch.full((4,), 64 ** -0.5))
    x = torch.randn(1, 5, 192)
    torch.testing.assert_close(attn(x), _manual_talking_heads(attn, x, mask_diag=False), rtol=1e-5, atol=1e-5)


def test_bad_head_dim():
    with pytest.raises(ValueError, match='head_dim=0 is invalid; allowed: a positive int or None'):
        timm.create_model('sl_cait_32', head_dim=0)
