import copy
import math
import warnings

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode

import timm
from timm.layers import Attention, set_fused_attn
from timm.optim import create_optimizer_v2, param_groups_weight_decay
from timm.models.cait import ClassAttn, TalkingHeadAttn
from timm.models.swin_transformer import SwinTransformerBlock, WindowAttention
from timm_sl.convert import convert_module
from timm_sl.layers import (
    LocalityClassAttn, LocalitySelfAttention, LocalitySwinBlock, LocalityTalkingHeadAttn, LocalityWindowAttention,
    SlArgs, diagonal_bias, lsa_attn_bias, lsa_no_weight_decay, mask_diagonal_, set_lsa_switches, window_lsa_pattern)
from timm_sl.models.sl_t2t import TokenAttention


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


# ---- every attention kind: plain, Swin window, CaiT talking heads and class attention, T2T token attention ----

def _window_mask():
    """A shift mask of 2 windows of 9 tokens (timm's -100 for blocked pairs); token 0 of window 1 is alone."""
    mask = torch.zeros(2, 9, 9)
    mask[1, :, :3] = -100.
    mask[1, :3, :] = -100.
    mask[1, :3, :3] = 0.
    mask[1, 0, 1:] = -100.
    mask[1, 1:, 0] = -100.
    return mask


# kind -> (layer with LSA switches, its input, the timm layer it is the LSA form of, or None)
KINDS = {
    'plain': (lambda **sw: LocalitySelfAttention(48, num_heads=4, qkv_bias=True, **sw),
              lambda: (torch.randn(2, 7, 48),), lambda: Attention(48, num_heads=4, qkv_bias=True)),
    'window': (lambda **sw: LocalityWindowAttention(48, 4, window_size=3, **sw),
               lambda: (torch.randn(4, 9, 48), _window_mask()), lambda: WindowAttention(48, 4, window_size=3)),
    'talking_heads': (lambda **sw: LocalityTalkingHeadAttn(48, num_heads=4, **sw),
                      lambda: (torch.randn(2, 7, 48),), lambda: TalkingHeadAttn(48, num_heads=4)),
    'class_attn': (lambda **sw: LocalityClassAttn(48, num_heads=4, **dict(sw, diag_mask=False)),
                   lambda: (torch.randn(2, 7, 48),), lambda: ClassAttn(48, num_heads=4)),
    'token': (lambda **sw: TokenAttention(27, 64, **sw), lambda: (torch.randn(2, 10, 27),), None),
}
# the paper's ablation switches: mask only ("M"), temperature only ("T"), a fixed temperature ratio (Table 1)
SWITCHES = {
    'mask_only': dict(diag_mask=True, learn_temp=False),
    'temperature_only': dict(diag_mask=False, learn_temp=True),
    'temp_ratio': dict(diag_mask=False, learn_temp=False, temp_ratio=0.25),
    'lsa': dict(diag_mask=True, learn_temp=True),
}


@pytest.mark.parametrize('kind', list(KINDS))
def test_each_kind_fused_and_explicit_paths_agree(kind):
    make, inputs, _ = KINDS[kind]
    layer = make(diag_mask=True, learn_temp=True)
    with torch.no_grad():
        layer.temperature.uniform_(0.1, 0.6)  # heads differ, so a per-head mix-up would show
    args = inputs()
    x = args[0].requires_grad_()
    results = []
    for fused in (True, False):
        layer.fused_attn = fused
        layer.zero_grad()
        x.grad = None
        out = layer(*args)
        out.square().mean().backward()
        results.append((out.detach(), x.grad.clone(), layer.temperature.grad.clone()))
    assert torch.isfinite(results[0][0]).all()
    for a, b in zip(*results):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize('switches', list(SWITCHES))
@pytest.mark.parametrize('kind', list(KINDS))
def test_each_kind_with_the_ablation_switches(kind, switches):
    """Built with the switches directly, or with the defaults and switched afterwards (the seam of the backbones
    that take a bare class): the same layer, drawing the same random numbers; the temperature is learned (a
    parameter in the state dict) or fixed (a non-persistent buffer) at ``head_dim ** -0.5 / temp_ratio``; the mask is
    what changes the output."""
    make, inputs, _ = KINDS[kind]
    sw = dict(SWITCHES[switches], diag_mask=False) if kind == 'class_attn' else SWITCHES[switches]
    torch.manual_seed(0)
    direct = make(**sw)
    after_direct = torch.randn(4)
    torch.manual_seed(0)
    switched = make()
    set_lsa_switches([switched], **sw)
    assert torch.equal(torch.randn(4), after_direct)  # the switches draw no random number
    learn, ratio = sw.get('learn_temp'), sw.get('temp_ratio', 1.)
    diag = sw['diag_mask']
    for layer in (direct, switched):
        assert (layer.diag_mask, layer.learn_temp, layer.temp_ratio) == (diag, learn, ratio)
        assert ('temperature' in dict(layer.named_parameters())) == learn == ('temperature' in layer.state_dict())
        init = torch.full_like(layer.temperature, layer.lsa_head_dim ** -0.5 / ratio)
        torch.testing.assert_close(layer.temperature, init)
    assert list(direct.state_dict()) == list(switched.state_dict())
    args = inputs()
    with torch.no_grad():
        torch.testing.assert_close(switched(*args), direct(*args))
        unmasked = make(**dict(sw, diag_mask=False))
        unmasked.load_state_dict(direct.state_dict())
        assert torch.allclose(unmasked(*args), direct(*args)) != diag


@pytest.mark.parametrize('kind', [k for k in KINDS if KINDS[k][2] is not None])
def test_each_kind_without_mask_at_its_initial_temperature_is_the_timm_layer(kind):
    _, inputs, make_timm = KINDS[kind]
    source = make_timm().eval()
    for sl_args in (SlArgs(lsa=False), SlArgs(lsa_mask=False)):  # fixed, then learned temperature at its init
        layer = convert_module(source, sl_args).eval()
        args = inputs()
        with torch.no_grad():
            torch.testing.assert_close(layer(*args), source(*args), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize('fused', [True, False], ids=['fused', 'explicit'])
@pytest.mark.parametrize('kind', list(KINDS))
def test_each_kind_traces_into_one_graph(kind, fused):
    """Dynamo captures every attention forward whole (``fullgraph=True``: no query it cannot trace, no branch on a
    tensor's value), both paths, forward and backward; the compiled layer computes what the eager one does."""
    make, inputs, _ = KINDS[kind]
    layer = make(diag_mask=True, learn_temp=True)
    layer.fused_attn = fused
    args = inputs()
    torch._dynamo.reset()
    compiled = torch.compile(layer, backend='eager', fullgraph=True)
    out = compiled(*args)
    out.sum().backward()
    assert layer.temperature.grad is not None
    torch.testing.assert_close(out, layer(*args))


# ---- the mask's cost per call (a launch-bound GPU pays per kernel) and its traced form ----

class _KernelOps(TorchDispatchMode):
    """aten ops that launch a kernel (views left out), by name."""

    def __init__(self):
        super().__init__()
        self.ops = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func.overloadpacket.__name__ not in ('view', 'diagonal', 'unsqueeze', 'reshape', '_unsafe_view'):
            self.ops.append(func.overloadpacket.__name__)
        return func(*args, **(kwargs or {}))


def test_the_diagonal_takes_two_kernels_and_its_trace_fits_any_token_count():
    with _KernelOps() as counter:
        bias = diagonal_bias(5, torch.float32, torch.device('cpu'))
    assert counter.ops == ['zeros', 'fill_']
    assert torch.isneginf(bias.diagonal()).all() and (bias.fill_diagonal_(0) == 0).all()
    assert diagonal_bias(1, torch.float32, torch.device('cpu')).item() == 0  # a lone token keeps its only key
    # traced (as the ONNX export traces): the token count is a traced size, so the graph serves other counts,
    # a lone token included
    with warnings.catch_warnings():
        warnings.simplefilter('error', torch.jit.TracerWarning)
        traced = torch.jit.trace(lambda x: x + diagonal_bias(x.shape[-1], x.dtype, x.device), torch.zeros(4, 4))
    for n in (1, 3, 6):
        logits = torch.randn(n, n)
        torch.testing.assert_close(traced(logits), logits + diagonal_bias(n, logits.dtype, logits.device))


def test_mask_diagonal_in_place_in_one_kernel_and_traced():
    logits = torch.randn(2, 3, 5, 5)
    want = logits + diagonal_bias(5, logits.dtype, logits.device)
    with _KernelOps() as counter:
        got = mask_diagonal_(logits)
    assert counter.ops == ['fill_'] and got is logits and torch.equal(got, want)
    lone = torch.randn(2, 3, 1, 1)
    assert torch.equal(mask_diagonal_(lone.clone()), lone)
    traced = torch.jit.trace(lambda x: mask_diagonal_(x * 1), torch.randn(2, 3, 4, 4))  # the export path
    for n in (1, 6):
        x = torch.randn(2, 3, n, n)
        assert torch.equal(traced(x), x + diagonal_bias(n, x.dtype, x.device))


# kernel ops each LSA kind may add to its timm layer's forward: the temperature multiply and the diagonal
LSA_OPS = {'plain': 3, 'window': 1, 'talking_heads': 2, 'class_attn': 1}


def _sdpa_with_a_mask_is_one_kernel() -> bool:
    """torch 2.2's CPU SDPA has no fused kernel that takes a mask: it decomposes into ~15 math ops, which counts
    torch's fallback, not what LSA adds."""
    q, mask = torch.randn(1, 2, 4, 8), torch.zeros(4, 4)
    with torch.no_grad(), _KernelOps() as counter:
        F.scaled_dot_product_attention(q, q, q, attn_mask=mask)
    return len(counter.ops) == 1


@pytest.mark.parametrize('kind', list(LSA_OPS))
def test_each_kind_adds_few_kernels_to_the_timm_layer(kind):
    """The window kind as its block calls it: timm's layer with timm's shift mask, the LSA layer with the block's
    pattern (the mask then adds nothing per call)."""
    if kind != 'window' and not _sdpa_with_a_mask_is_one_kernel():
        pytest.skip("this torch's CPU SDPA decomposes a masked call into math ops (torch 2.2)")
    make, inputs, make_timm = KINDS[kind]
    layer, source = make(), make_timm()
    args = inputs()
    lsa_args = args
    if kind == 'window':
        lsa_args = (args[0], window_lsa_pattern(args[1], 9, torch.float32, torch.device('cpu')))
    counts = []
    for module, module_args in ((source, args), (layer, lsa_args)):
        with torch.no_grad(), _KernelOps() as counter:
            module(*module_args)
        counts.append(len(counter.ops))
    assert counts[1] - counts[0] <= LSA_OPS[kind], counts


# ---- Swin: the LSA pattern as each block's constant ----

def _fallback_twin(model):
    """A copy whose blocks hold timm's own shift masks: its window attentions derive the LSA pattern per call."""
    twin = copy.deepcopy(model)
    for block in twin.modules():
        if isinstance(block, LocalitySwinBlock):
            SwinTransformerBlock._init_buffers(block)
            assert block.attn_mask is None or block.attn_mask.dim() == 3
    return twin


def _blocks(model):
    return [m for m in model.modules() if isinstance(m, SwinTransformerBlock)]


def test_swin_blocks_hold_the_lsa_pattern_and_compute_what_the_per_call_pattern_does():
    model = timm.create_model('sl_swin_32').eval()
    with torch.no_grad():
        for block in _blocks(model):
            block.attn.relative_position_bias_table.normal_(std=2.)
    blocks = _blocks(model)
    assert all(type(b) is LocalitySwinBlock for b in blocks)
    assert not [k for k in model.state_dict() if 'attn_mask' in k]  # non-persistent: checkpoints do not change
    shifted = blocks[1]
    timm_mask = shifted.get_attn_mask(device=torch.device('cpu'), dtype=torch.float32)
    assert shifted.attn_mask.shape == (timm_mask.shape[0], 1, 16, 16)
    assert torch.equal(shifted.attn_mask, window_lsa_pattern(timm_mask, 16, torch.float32, torch.device('cpu')))
    assert torch.isneginf(blocks[0].attn_mask.diagonal(dim1=-2, dim2=-1)).all()  # no shift: the diagonal alone
    x = torch.randn(2, 3, 32, 32)
    with torch.no_grad():
        assert torch.equal(model(x), _fallback_twin(model)(x))
        # the block's forward: the relative-position bias added to its pattern, no mask rebuilt
        with _KernelOps() as counter:
            shifted.attn(torch.randn(32, 16, 96), shifted.attn_mask)
        assert not {'arange', 'eq', 'masked_fill', 'masked_fill_', 'where', 'all'} & set(counter.ops)

    model.set_input_size(img_size=48)  # new grid: timm remakes its masks, the blocks their patterns
    x = torch.randn(2, 3, 48, 48)
    assert all(b.attn_mask.dim() == 4 for b in _blocks(model))
    shifted = _blocks(model)[1]
    timm_mask = shifted.get_attn_mask(device=torch.device('cpu'), dtype=torch.float32)
    assert timm_mask.shape[0] == 16 and shifted.attn_mask.shape[0] == 16  # 24x24 tokens: timm's windows of 6
    assert torch.equal(shifted.attn_mask, window_lsa_pattern(timm_mask, 36, torch.float32, torch.device('cpu')))
    with torch.no_grad():
        assert torch.equal(model(x), _fallback_twin(model)(x))
    model = model.to(torch.float64)
    assert _blocks(model)[1].attn_mask.dtype == torch.float64
    with torch.no_grad():
        assert torch.equal(model(x.double()), _fallback_twin(model)(x.double()))


def test_swin_switches_remake_the_block_pattern():
    model = timm.create_model('sl_swin_32').eval()
    plain = timm.create_model('sl_swin_32', lsa_mask=False).eval()
    plain.load_state_dict(model.state_dict())
    x = torch.randn(2, 3, 32, 32)
    set_lsa_switches(model.layers, diag_mask=False)
    assert all(b.attn_mask is None or b.attn_mask.dim() == 3 for b in _blocks(model))  # timm's shift masks
    with torch.no_grad():
        torch.testing.assert_close(model(x), plain(x))
    set_lsa_switches(model.layers)
    assert all(b.attn_mask.dim() == 4 for b in _blocks(model))
    block = _blocks(model)[1]
    block.attn.init_lsa(block.attn.lsa_head_dim, diag_mask=False)  # the attention alone, its block left behind
    with pytest.raises(ValueError, match='diag_mask=False but got its block'):
        block(torch.randn(1, 16, 16, 96))


def test_swin_with_dynamic_size_derives_the_pattern_per_call():
    model = timm.create_model('sl_swin_32').eval()
    dynamic = timm.create_model('sl_swin_32', strict_img_size=False).eval()
    dynamic.load_state_dict(model.state_dict())
    assert all(b.dynamic_mask and b.attn_mask is None for b in _blocks(dynamic))
    x = torch.randn(2, 3, 32, 32)
    with torch.no_grad():
        assert torch.equal(dynamic(x), model(x))


@pytest.mark.extended
@pytest.mark.parametrize('num_tokens', [5, 1])
def test_diagonal_mask_compiles_with_inductor(num_tokens):
    """``torch.compile``'s default backend (inductor, CPU) builds the masked softmax LSA captures: on torch 2.2 its code
    generation once failed (an AssertionError) on the mask's bool ``&``, so ``train.py --torchcompile`` of every model
    with the LSA mask failed there."""
    def masked_softmax(logits: torch.Tensor) -> torch.Tensor:
        return (logits + diagonal_bias(logits.shape[-1], logits.dtype, logits.device)).softmax(-1)

    torch._dynamo.reset()
    logits = torch.randn(2, 3, num_tokens, num_tokens)
    out = torch.compile(masked_softmax)(logits)
    torch.testing.assert_close(out, masked_softmax(logits))
    assert (out.diagonal(dim1=-2, dim2=-1) == 0).all() if num_tokens > 1 else torch.equal(out, torch.ones_like(out))
