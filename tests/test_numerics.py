"""Numerics of every family: the -inf diagonal never gives NaN/inf (lone tokens, windows of one token, shifted
windows whose region holds only the token itself, odd grids) in fp32 / bf16 / fp16."""
import pytest
import torch

import timm
from timm_sl.tools.analysis import capture_attention
from sl_models import model_input

# tiny and odd configurations; the comment says which edge each one reaches
EDGE_CASES = [
    ('sl_vit_32', dict(img_size=4, depth=2)),  # one patch + class token
    ('sl_vit_32', dict(img_size=4, depth=2, class_token=False, global_pool='avg')),  # a lone token: nothing to mask
    ('sl_vit_32', dict(img_size=30, depth=2)),  # 30 px, patch 4: border past the last whole patch
    ('sl_pit_32', dict(img_size=34)),  # odd grids 17 -> 9 -> 5 through the Spool padding
    ('sl_swin_32', dict(window_size=1, depths=(1, 1, 1))),  # windows of one token: every row would be masked
    ('sl_swin_32', dict(window_size=2, depths=(2, 2, 2))),  # shifted windows whose region holds only the token
    ('sl_swin_32', dict(img_size=36, depths=(2, 2, 2))),  # odd 9 and 5 grids, padded windows
    ('sl_cait_32', dict(img_size=4, depth=2)),  # one patch token
    ('sl_t2t_32', dict(img_size=33, depth=2)),  # odd input through the soft splits
]
PRECISIONS = [None, torch.bfloat16, torch.float16]


@pytest.mark.parametrize('dtype', PRECISIONS, ids=['fp32', 'bf16', 'fp16'])
@pytest.mark.parametrize('name,kwargs', EDGE_CASES,
                         ids=[f'{n}-{"-".join(map(str, k.values()))}' for n, k in EDGE_CASES])
def test_edge_grids_are_finite_forward_and_backward(name, kwargs, dtype):
    model = timm.create_model(name, drop_path_rate=0., **kwargs).train()
    x = model_input(model)
    with torch.autocast('cpu', dtype=dtype or torch.bfloat16, enabled=dtype is not None):
        out = model(x)
    assert out.shape == (2, model.num_classes) and torch.isfinite(out).all()
    out.float().logsumexp(-1).mean().backward()
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    assert grads and all(torch.isfinite(g).all() for g in grads)


def test_swin_rows_left_alone_by_the_window_mask_keep_their_self_relation():
    model = timm.create_model('sl_swin_32', window_size=2, depths=(2, 2, 2)).eval()
    with torch.no_grad(), capture_attention(model, ['layers.2.blocks.1.attn']) as maps:
        model(torch.randn(1, 3, 32, 32))
    attn = maps['layers.2.blocks.1.attn'][0]  # 4x4 grid, windows of 2x2, shift 1: the last window mixes 4 regions
    assert torch.isfinite(attn).all()
    diagonal = attn.diagonal(dim1=-2, dim2=-1)
    lone = diagonal == 1  # a token alone in its region attends to itself only
    assert lone.any() and (diagonal[~lone] == 0).all()  # every other token's self-relation is masked
