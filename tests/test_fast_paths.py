"""The reformulated fast paths compute what their plain formulations compute (values and gradients)."""
import pytest
import torch
from torch import nn

from timm_sl.layers.lsa import lsa_attn_bias
from timm_sl.layers.lsa_cait import mix_heads


def _mix_by_linear(attn, mix, extra_bias=None):
    out = mix(attn.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
    return out if extra_bias is None else out + extra_bias


@pytest.mark.parametrize('heads,bias', [(4, True), (3, False)])
@pytest.mark.parametrize('diag', [False, True])
def test_mix_heads_is_the_linear_over_heads(heads, bias, diag):
    torch.manual_seed(0)
    mix = nn.Linear(heads, heads, bias=bias)
    attn = torch.randn(2, heads, 7, 7, requires_grad=True)
    extra = lsa_attn_bias(7, attn.dtype, attn.device) if diag else None
    got, want = mix_heads(attn, mix.weight, mix.bias, extra), _mix_by_linear(attn, mix, extra)
    assert torch.equal(torch.isinf(got), torch.isinf(want))
    finite = torch.isfinite(want)
    torch.testing.assert_close(got[finite], want[finite])
    weights = torch.randn_like(want).masked_fill(~finite, 0)
    params = [attn, *mix.parameters()]
    g_got = torch.autograd.grad(got.masked_fill(~finite, 0).mul(weights).sum(), params)
    g_want = torch.autograd.grad(want.masked_fill(~finite, 0).mul(weights).sum(), params)
    for a, b in zip(g_got, g_want):
        torch.testing.assert_close(a, b)


@pytest.mark.parametrize('diag_mask', [True, False])
def test_talking_heads_fast_and_explicit_paths_agree(diag_mask):
    """``fused_attn`` picks the batched mixing; off, the mixing Linears run as modules (the path attention capture
    observes): the same attention either way, values and gradients."""
    from timm_sl.layers.lsa_cait import LocalityTalkingHeadAttn
    torch.manual_seed(0)
    layer = LocalityTalkingHeadAttn(32, num_heads=4, head_dim=16, diag_mask=diag_mask)
    x = torch.randn(2, 9, 32, requires_grad=True)
    outputs, grads = [], []
    for fused in (True, False):
        layer.fused_attn = fused
        out = layer(x)
        outputs.append(out)
        grads.append(torch.autograd.grad(out.square().sum(), [x, *layer.parameters()]))
    torch.testing.assert_close(outputs[0], outputs[1])
    for a, b in zip(*grads):
        torch.testing.assert_close(a, b)
