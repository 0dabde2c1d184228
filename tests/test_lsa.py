import math

import pytest
import torch
from torch import nn

import timm
from timm.layers import Attention, set_fused_attn
from timm.optim import create_optimizer_v2, param_groups_weight_decay
from timm_sl.layers import LocalitySelfAttention, lsa_attn_bias, lsa_no_weight_decay


def _probe_attention(diag_mask=True, num_tokens=6):
    """Single-head LSA whose output row i *is* attention row i: tokens are one-hot, v = x, proj = identity."""
    dim = 8
    attn = LocalitySelfAttention(dim, num_heads=1, qkv_bias=False, diag_mask=diag_mask)
    with torch.no_grad():
        attn.qkv.weight[2 * dim:] = torch.eye(dim)       # v = x
        attn.proj.weight.copy_(torch.eye(dim))
        attn.proj.bias.zero_()
    x = torch.eye(dim)[:num_tokens].unsqueeze(0)        # token i = e_i
    return attn, x


def _attention_rows(attn, x):
    return attn(x)[0, :, :x.shape[1]]


@pytest.mark.parametrize('fused', [True, False])
def test_diagonal_gets_zero_attention(fused):
    attn, x = _probe_attention()
    attn.fused_attn = fused
    rows = _attention_rows(attn, x)
    torch.testing.assert_close(rows.sum(-1), torch.ones(6))
    assert torch.all(rows.diagonal() == 0)
    assert torch.all(rows.fill_diagonal_(1) > 0)


def test_without_mask_the_diagonal_is_attended():
    attn, x = _probe_attention(diag_mask=False)
    assert torch.all(_attention_rows(attn, x).diagonal() > 0)


def _manual_lsa(attn: LocalitySelfAttention, x: torch.Tensor) -> torch.Tensor:
    B, N, C = x.shape
    q, k, v = attn.qkv(x).reshape(B, N, 3, attn.num_heads, attn.head_dim).permute(2, 0, 3, 1, 4)
    logits = (q @ k.transpose(-2, -1)) * attn.temperature.view(-1, 1, 1)
    if attn.diag_mask:
        logits = logits.masked_fill(torch.eye(N, dtype=torch.bool), float('-inf'))
    out = logits.softmax(-1) @ v
    return attn.proj(out.transpose(1, 2).reshape(B, N, -1))


@pytest.mark.parametrize('fused', [True, False])
@pytest.mark.parametrize('diag_mask,learn_temp,temp_ratio', [(True, True, 1.), (False, True, 1.), (True, False, .25)])
def test_matches_the_paper_formula(fused, diag_mask, learn_temp, temp_ratio):
    attn = LocalitySelfAttention(48, num_heads=4, diag_mask=diag_mask, learn_temp=learn_temp, temp_ratio=temp_ratio)
    if learn_temp:
        with torch.no_grad():
            attn.temperature.uniform_(0.1, 0.6)  # heads differ, so a per-head mix-up would show
    attn.fused_attn = fused
    x = torch.randn(2, 10, 48)
    torch.testing.assert_close(attn(x), _manual_lsa(attn, x), rtol=1e-5, atol=1e-5)


def test_fused_equals_explicit_forward_and_backward():
    attn = LocalitySelfAttention(64, num_heads=4, qkv_bias=True)
    with torch.no_grad():
        attn.temperature.uniform_(0.1, 0.6)
    x = torch.randn(3, 17, 64, requires_grad=True)
    results = []
    for fused in (True, False):
        attn.fused_attn = fused
        attn.zero_grad()
        x.grad = None
        out = attn(x)
        out.square().mean().backward()
        results.append((out.detach(), x.grad.clone(), attn.temperature.grad.clone(), attn.qkv.weight.grad.clone()))
    for a, b in zip(*results):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)


def test_timm_fused_attn_switch_picks_explicit_path():
    set_fused_attn(False)
    try:
        explicit = LocalitySelfAttention(32, num_heads=2)
    finally:
        set_fused_attn(True)
    fused = LocalitySelfAttention(32, num_heads=2)
    fused.load_state_dict(explicit.state_dict())
    assert not explicit.fused_attn and fused.fused_attn
    x = torch.randn(2, 9, 32)
    torch.testing.assert_close(fused(x), explicit(x), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize('fused', [True, False])
def test_single_token_is_not_nan(fused):
    attn = LocalitySelfAttention(16, num_heads=2)
    attn.fused_attn = fused
    x = torch.randn(2, 1, 16)
    out = attn(x)
    assert torch.isfinite(out).all()
    # a lone token can only attend to itself: the output is its own value projection
    v = attn.qkv(x)[..., 32:]
    torch.testing.assert_close(out, attn.proj(v))


def test_attn_bias_diagonal_and_dead_rows():
    bias = lsa_attn_bias(4, torch.float32, torch.device('cpu'))
    assert torch.isneginf(bias.diagonal()).all() and (bias.fill_diagonal_(0) == 0).all()
    assert lsa_attn_bias(1, torch.float32, torch.device('cpu')).item() == 0
    # row 0 may only see itself under this mask: it keeps its diagonal instead of becoming all -inf
    allowed = torch.ones(3, 3, dtype=torch.bool)
    allowed[0] = torch.tensor([True, False, False])
    bias = lsa_attn_bias(3, torch.float32, torch.device('cpu'), allowed)
    assert bias[0, 0] == 0 and torch.isneginf(bias[0, 1:]).all()
    assert torch.isneginf(bias[1, 1]) and torch.isneginf(bias[2, 2])
    additive = torch.randn(2, 3, 3)
    bias = lsa_attn_bias(3, torch.float32, torch.device('cpu'), additive)
    assert bias.shape == (2, 3, 3)
    off = ~torch.eye(3, dtype=torch.bool)
    torch.testing.assert_close(bias[:, off], additive[:, off])


def test_attn_mask_combines_with_diagonal():
    attn, x = _probe_attention()
    allowed = torch.ones(6, 6, dtype=torch.bool)
    allowed[:, 3:] = False  # nobody may look at tokens 3..5
    for fused in (True, False):
        attn.fused_attn = fused
        rows = attn(x, attn_mask=allowed)[0, :, :6]
        assert torch.all(rows[:, 3:] == 0) and torch.all(rows.diagonal() == 0)
        torch.testing.assert_close(rows.sum(-1), torch.ones(6))


def test_temperature_init_gradient_and_state():
    attn = LocalitySelfAttention(48, num_heads=3)
    assert attn.temperature.shape == (3,)
    torch.testing.assert_close(attn.temperature, torch.full((3,), 16 ** -0.5))
    attn(torch.randn(2, 5, 48)).sum().backward()
    assert attn.temperature.grad is not None and (attn.temperature.grad != 0).all()
    assert 'temperature' in attn.state_dict()


def test_fixed_temperature_is_a_non_persistent_buffer():
    attn = LocalitySelfAttention(48, num_heads=3, learn_temp=False, temp_ratio=0.25)
    assert 'temperature' not in dict(attn.named_parameters()) and 'temperature' not in attn.state_dict()
    torch.testing.assert_close(attn.temperature, torch.full((3,), 4 / math.sqrt(16)))
    assert set(attn.state_dict()) == set(Attention(48, num_heads=3).state_dict())


def test_state_dict_keys_extend_timm_attention():
    lsa_keys = set(LocalitySelfAttention(48, num_heads=3, qkv_bias=True).state_dict())
    assert lsa_keys - set(Attention(48, num_heads=3, qkv_bias=True).state_dict()) == {'temperature'}


@pytest.mark.parametrize('ratio', [0, -1, float('inf'), 'half', True])
def test_bad_temp_ratio(ratio):
    with pytest.raises(ValueError, match='temp_ratio=.*allowed: a finite number > 0'):
        LocalitySelfAttention(16, num_heads=2, temp_ratio=ratio)


def test_configured_class_binds_defaults_and_is_a_class():
    cls = LocalitySelfAttention.configured(diag_mask=False, learn_temp=True, temp_ratio=0.5)
    assert isinstance(cls, type) and issubclass(cls, LocalitySelfAttention)
    assert cls is LocalitySelfAttention.configured(diag_mask=False, learn_temp=True, temp_ratio=0.5)
    layer = cls(32, num_heads=2)
    assert not layer.diag_mask and layer.learn_temp and layer.temp_ratio == 0.5
    assert cls.__qualname__ == LocalitySelfAttention.__qualname__


def test_temperature_is_excluded_from_weight_decay():
    model = timm.create_model('sl_vit_32', depth=2)
    names = lsa_no_weight_decay(model)
    assert names == {'blocks.0.attn.temperature', 'blocks.1.attn.temperature'}
    assert names <= model.no_weight_decay()
    temps = {id(model.blocks[i].attn.temperature) for i in range(2)}
    # timm's optimizer factory honours no_weight_decay()
    opt = create_optimizer_v2(model, 'adamw', lr=1e-3, weight_decay=0.05)
    for group in opt.param_groups:
        if temps & {id(p) for p in group['params']}:
            assert group['weight_decay'] == 0
    # ... even when 1-D parameters are not excluded wholesale
    groups = param_groups_weight_decay(model, 0.05, weight_decay_exclude_1d=False,
                                       no_weight_decay_list=model.no_weight_decay())
    decayed = {id(p) for g in groups if g['weight_decay'] > 0 for p in g['params']}
    assert not temps & decayed
    assert id(model.blocks[0].attn.qkv.weight) in decayed


def test_temperature_learns_under_training():
    model = timm.create_model('sl_vit_32', depth=1, num_classes=3)
    opt = create_optimizer_v2(model, 'adamw', lr=1e-2, weight_decay=0.05)
    before = model.blocks[0].attn.temperature.detach().clone()
    loss = nn.functional.cross_entropy(model(torch.randn(4, 3, 32, 32)), torch.tensor([0, 1, 2, 0]))
    loss.backward()
    opt.step()
    assert not torch.equal(before, model.blocks[0].attn.temperature.detach())


def test_configured_layers_pickle_and_deepcopy():
    import copy
    import io
    model = timm.create_model('sl_vit_32', depth=2, lsa_mask=False, lsa_temp_ratio=0.5).eval()
    with torch.no_grad():
        model.blocks[1].attn.temperature.fill_(0.3)
    buffer = io.BytesIO()
    torch.save(model, buffer)
    buffer.seek(0)
    loaded = torch.load(buffer, weights_only=False)
    assert type(loaded.blocks[0].attn) is LocalitySelfAttention
    assert not loaded.blocks[0].attn.diag_mask and loaded.blocks[0].attn.temp_ratio == 0.5
    x = torch.randn(2, 3, 32, 32)
    torch.testing.assert_close(loaded(x), model(x))
    torch.testing.assert_close(copy.deepcopy(model)(x), model(x))
