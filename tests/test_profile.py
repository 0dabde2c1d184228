"""MAC counting is the paper formulation on every torch version and SDPA kernel (issue: torch 2.14's FlopCounterMode
does not count the CPU flash SDPA kernel, so counting the fused path lost every attention matmul)."""
import pytest
import torch

import timm
from timm.layers import Attention
from timm_sl.layers import LocalitySelfAttention
from timm_sl.tools.profile import count_macs, explicit_attention

from sl_models import FAST_MODELS


def _attention_flags(model):
    return [m.fused_attn for m in model.modules() if isinstance(getattr(m, 'fused_attn', None), bool)]


def _set_fused_attn(model, fused):
    for m in model.modules():
        if isinstance(getattr(m, 'fused_attn', None), bool):
            m.fused_attn = fused


@pytest.mark.parametrize('attn_cls', [Attention, LocalitySelfAttention], ids=lambda c: c.__name__)
def test_one_attention_layer_matches_hand_formula_on_the_fused_path(attn_cls):
    tokens, dim = 10, 64
    attn = attn_cls(dim, num_heads=4, qkv_bias=True)
    attn.fused_attn = True
    qkv, scores, mix, proj = tokens * dim * 3 * dim, tokens * tokens * dim, tokens * tokens * dim, tokens * dim * dim
    assert count_macs(attn, input_size=(tokens, dim)) == qkv + scores + mix + proj
    assert attn.fused_attn is True  # restored


@pytest.mark.extended
@pytest.mark.parametrize('name', FAST_MODELS)
def test_macs_do_not_depend_on_the_attention_kernel(name):
    model = timm.create_model(name)
    _set_fused_attn(model, True)
    fused = count_macs(model)
    _set_fused_attn(model, False)
    assert count_macs(model) == fused
    assert set(_attention_flags(model)) == {False}
    _set_fused_attn(model, True)
    assert count_macs(model) == fused and set(_attention_flags(model)) == {True}


def test_explicit_paths_are_restored_after_an_error():
    model = timm.create_model('sl_vit_32')
    _set_fused_attn(model, True)
    with pytest.raises(RuntimeError, match='inside'):
        with explicit_attention(model):
            assert set(_attention_flags(model)) == {False}
            raise RuntimeError('inside')
    assert set(_attention_flags(model)) == {True}


def test_count_keeps_training_mode_and_counts_one_sample():
    model = timm.create_model('sl_vit_32').train()
    macs = count_macs(model)
    assert model.training
    assert count_macs(model, input_size=(3, 32, 32)) == macs


@pytest.mark.parametrize('name,kwargs', [('sl_vit_32', dict(depth=1)), ('sl_t2t_32', dict(depth=1)),
                                         ('slify', dict(base='vit_tiny_patch16_224', depth=1, patch_size=4))])
def test_count_macs_counts_the_input_the_model_was_built_for(name, kwargs):
    """count_macs(model) of a model built with img_size=48 or in_chans=1 fed it the registered 3x32x32 input (timm
    leaves the cfg's input_size as registered): 'Input height (32) doesn't match model (48)', or, with
    dynamic_img_size, the MACs of a 32 px image for a 48 px model."""
    from timm_sl.tools.profile import built_input_size, count_macs
    with torch.device('meta'):
        model = timm.create_model(name, img_size=48, in_chans=1, **kwargs)
        dynamic = timm.create_model('sl_vit_32', depth=1, img_size=48, dynamic_img_size=True)
    assert built_input_size(model) == (1, 48, 48)
    assert count_macs(model) == count_macs(model, (1, 48, 48))
    assert count_macs(dynamic) == count_macs(dynamic, (3, 48, 48)) != count_macs(dynamic, (3, 32, 32))


def test_a_dynamic_size_model_is_counted_at_its_cfgs_size():
    """A model whose patch embedding takes any size keeps its cfg's input size (an export's: the size it trained at),
    not the size its patch embedding was built for."""
    from timm_sl.tools.profile import built_input_size
    with torch.device('meta'):
        model = timm.create_model('sl_vit_32', depth=1, dynamic_img_size=True)
        fixed = timm.create_model('sl_vit_32', depth=1)
    for m in (model, fixed):
        m.pretrained_cfg = {**m.pretrained_cfg, 'input_size': (3, 48, 48)}
    assert built_input_size(model) == (3, 48, 48)
    assert built_input_size(fixed) == (3, 32, 32)  # it cannot take 48 px: what it was built for
    with torch.device('meta'):  # loaded from its export: the registered model, the cfg of the size it trained at
        exported = timm.create_model('sl_vit_32', depth=1, dynamic_img_size=True,
                                     pretrained_cfg_overlay=dict(input_size=(3, 48, 48)))
    assert built_input_size(exported) == (3, 48, 48)
