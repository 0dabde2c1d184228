"""The size ladders (issue 14): SL twins of timm's standard sizes.

With the SL switches off each ladder model is its timm model (module types, heads, state-dict keys and shapes, parameter
count) and timm's state dict loads into it strictly; with them on, the parameters it adds are exactly what SPT, LSA and
Spool predict. The default run builds the models on the meta device (no memory, no init); the slow tests build them
for real at 224 px and compare outputs with timm's, through timm's own pretrained-file loading.
"""
import functools
from typing import Any, Dict, Tuple

import pytest
import torch
from torch import nn

import timm
from timm.layers import Attention
from timm.models.cait import ClassAttn, TalkingHeadAttn
from timm.models.pit import Pooling
from timm.models.swin_transformer import PatchMerging, WindowAttention
from timm_sl.models.sl_t2t import TokenAttention
from timm_sl.tools.profile import count_macs, count_params

from sl_models import LADDER_MODELS, TIMM_BASELINES

TIMM_LADDERS = [name for name in LADDER_MODELS if name in TIMM_BASELINES]
T2T_MODELS = ['sl_t2t_14', 'sl_t2t_19', 'sl_t2t_24']
# every 224 px config: the ladders and the paper's five ImageNet models they extend
MODELS_224 = sorted(TIMM_BASELINES) + T2T_MODELS
# T2T paper (T2T-ViT_t-14 / 19 / 24): params (M). Its code keeps the fixed sin/cos table as a (frozen) Parameter and
# counts it; here it is a buffer, so the table (197 tokens x width) is added back before comparing.
T2T_PAPER_PARAMS_M = {'sl_t2t_14': 21.5, 'sl_t2t_19': 39.2, 'sl_t2t_24': 64.1}
ATTENTION_CLASSES = (Attention, WindowAttention, TalkingHeadAttn, ClassAttn, TokenAttention)
SPT_COPIES = 5  # the image and its 4 diagonal shifts


@functools.lru_cache(maxsize=None)
def _cached_meta_model(name: str, kwargs: Tuple[Tuple[str, Any], ...]) -> nn.Module:
    with torch.device('meta'):
        return timm.create_model(name, **dict(kwargs))


def _meta_model(name: str, **kwargs) -> nn.Module:
    """The model on the meta device, built once per module run (meta tensors hold no values to change)."""
    return _cached_meta_model(name, tuple(sorted(kwargs.items())))


def _sl_baseline(name: str, **kwargs) -> nn.Module:
    model = _meta_model(name, **kwargs)
    return _meta_model(name, **type(model).baseline_kwargs, **kwargs)


def _timm_model(name: str, **kwargs) -> nn.Module:
    """timm's model of the config, built at the SL model's input size (timm registers CaiT-XS24 at 384 px only)."""
    img_size = timm.get_pretrained_cfg(name).input_size[-1]
    return timm.create_model(TIMM_BASELINES[name], img_size=img_size, **kwargs)


def _shapes(model: nn.Module) -> Dict[str, torch.Size]:
    return {k: v.shape for k, v in model.state_dict().items()}


def _module_types(model: nn.Module) -> Dict[str, type]:
    return {name: type(m) for name, m in model.named_modules() if name}


def _heads(model: nn.Module) -> Dict[str, int]:
    return {name: m.num_heads for name, m in model.named_modules() if isinstance(m, ATTENTION_CLASSES)}


def _spt_params(in_chans: int, patch: int, dim: int) -> int:
    """SPT projection: LayerNorm over the flattened copies, then Linear (with bias)."""
    patch_dim = SPT_COPIES * in_chans * patch * patch
    return 2 * patch_dim + patch_dim * dim + dim


def _conv_params(in_chans: int, kernel: int, dim: int, groups: int = 1) -> int:
    return in_chans // groups * kernel * kernel * dim + dim


def _predicted_sl_additions(base: nn.Module) -> int:
    """Parameters SPT, LSA and Spool add to ``base`` (the timm model with the SL switches off), from their definitions:
    one temperature per head of every attention; SPT instead of the conv patch embedding; Spool instead of the pooling
    / merging layers."""
    added = sum(_heads(base).values())  # LSA: a learnable temperature per head
    embed = base.patch_embed
    if isinstance(getattr(embed, 'proj', None), nn.Conv2d):  # ViT, CaiT, Swin: SPT of the same patch
        conv = embed.proj
        added += _spt_params(conv.in_channels, conv.kernel_size[0], conv.out_channels)
        added -= _conv_params(conv.in_channels, conv.kernel_size[0], conv.out_channels)
        if isinstance(embed.norm, nn.LayerNorm):  # Swin's post-embedding norm: SPT normalises before projecting
            added -= 2 * conv.out_channels
    elif hasattr(embed, 'conv'):  # PiT: overlapping stem (kernel > stride) -> SPT of patch = stride, one more row/col
        conv = embed.conv
        stride, dim = conv.stride[0], conv.out_channels
        added += _spt_params(conv.in_channels, stride, dim) - _conv_params(conv.in_channels, conv.kernel_size[0], dim)
        conv_grid, spt_grid = base.pos_embed.shape[-1], embed.img_size[0] // stride
        added += dim * (spt_grid ** 2 - conv_grid ** 2)
    else:  # T2T: the raw image's 4 shifted copies widen the first token layer's norm and qkv
        attn = embed.stages[0].layer.attn
        extra = (SPT_COPIES - 1) * attn.qkv.in_features
        added += 2 * extra + extra * attn.qkv.out_features
    for m in base.modules():
        if isinstance(m, Pooling):  # PiT: grouped 3x3 conv -> SPT 2x2 merge (class-token Linear unchanged)
            i, o = m.fc.in_features, m.fc.out_features
            added += _spt_params(i, 2, o) - _conv_params(i, m.conv.kernel_size[0], o, groups=m.conv.groups)
        elif isinstance(m, PatchMerging):  # Swin: LayerNorm(4C) + Linear(4C, out, no bias) -> SPT 2x2 merge
            i, o = m.dim, m.out_dim
            added += _spt_params(i, 2, o) - (2 * 4 * i + 4 * i * o)
    return added


def test_ladder_names_registered_with_their_cfgs():
    assert set(LADDER_MODELS) <= set(timm.list_models('sl_*'))
    for name in LADDER_MODELS:
        cfg = timm.get_pretrained_cfg(name)
        assert (cfg.input_size, cfg.num_classes, cfg.paper_ids) == ((3, 224, 224), 1000, 'arXiv:2112.13492'), name
    # every 224 px sl_ config names its timm model, except T2T (timm has none)
    at_224 = {n for n in timm.list_models('sl_*') if timm.get_pretrained_cfg(n).input_size == (3, 224, 224)}
    assert at_224 - set(TIMM_BASELINES) == set(T2T_MODELS)
    assert all(timm.is_model(base) for base in TIMM_BASELINES.values())


@pytest.mark.parametrize('name', sorted(TIMM_BASELINES))
def test_baseline_is_the_timm_model(name):
    base = _sl_baseline(name)
    with torch.device('meta'):
        ref = _timm_model(name)
    assert _module_types(base) == _module_types(ref)
    assert _heads(base) == _heads(ref)
    assert _shapes(base) == _shapes(ref)
    assert count_params(base) == count_params(ref)
    base.load_state_dict(ref.state_dict(), strict=True)
    assert type(base).__name__.startswith('Sl') and type(base).__mro__[1] is type(ref)


@pytest.mark.parametrize('name', MODELS_224)
def test_sl_adds_exactly_spt_lsa_spool(name):
    sl, base = _meta_model(name), _sl_baseline(name)
    assert count_params(sl) - count_params(base) == _predicted_sl_additions(base) > 0
    temperatures = [k for k in sl.state_dict() if k.endswith('.temperature')]
    assert len(temperatures) == len(_heads(base)) and not any(k.endswith('.temperature') for k in base.state_dict())


@pytest.mark.parametrize('name', MODELS_224)
def test_sl_forward_shapes_on_meta(name):
    sl = _meta_model(name).eval()
    x = torch.empty(2, 3, 224, 224, device='meta')
    assert sl(x).shape == (2, 1000)
    assert sl.forward_head(sl.forward_features(x), pre_logits=True).shape == (2, sl.num_features)


@pytest.mark.parametrize('name,img_size', [
    ('sl_pit_ti', 48),
    pytest.param('sl_vit_small', 32, marks=pytest.mark.slow),
    pytest.param('sl_cait_xxs36', 32, marks=pytest.mark.slow),
    pytest.param('sl_t2t_19', 32, marks=pytest.mark.slow),
])
def test_sl_runs_at_tiny_input(name, img_size):
    sl = timm.create_model(name, img_size=img_size, num_classes=3)
    x = torch.randn(2, 3, img_size, img_size)
    out = sl(x)
    out.sum().backward()
    assert out.shape == (2, 3) and torch.isfinite(out).all()
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in sl.parameters())


@pytest.mark.parametrize('name', T2T_MODELS)
def test_t2t_baseline_matches_t2t_paper_params(name):
    base = _sl_baseline(name)
    table = base.pos_embed.numel()
    assert table == (1 + 14 * 14) * base.embed_dim
    assert round((count_params(base) + table) / 1e6, 1) == T2T_PAPER_PARAMS_M[name]


@pytest.mark.slow
@pytest.mark.parametrize('name', TIMM_LADDERS)
def test_timm_weights_load_into_baseline_and_give_timm_outputs(name, tmp_path):
    """timm's own checkpoint (at timm's registered input size) through timm's pretrained-file path: same outputs."""
    from safetensors.torch import save_file
    ref = timm.create_model(TIMM_BASELINES[name]).eval()  # cait_xs24_384 at 384 px: the pos table is resampled
    path = tmp_path / 'timm.safetensors'
    save_file(ref.state_dict(), str(path))
    base = timm.create_model(
        name, pretrained=True, pretrained_cfg_overlay=dict(file=str(path)), **_sl_baseline(name).baseline_kwargs)
    if ref.pretrained_cfg['input_size'] != base.pretrained_cfg['input_size']:
        ref = _timm_model(name)
        ref.load_state_dict(base.state_dict())
    x = torch.randn(1, 3, 224, 224)
    with torch.no_grad():
        torch.testing.assert_close(base.eval()(x), ref.eval()(x))
    assert count_macs(base) == count_macs(ref, base.pretrained_cfg['input_size'])
    sl = timm.create_model(name).eval()
    with torch.no_grad():
        out = sl(x)
    assert out.shape == (1, 1000) and torch.isfinite(out).all()


def test_timm_suite_leaves_out_models_over_the_size_limit():
    from timm_suite import select_models
    assert select_models('sl_vit_*', max_params_m=35) == (
        ['sl_vit_32', 'sl_vit_64', 'sl_vit_small', 'sl_vit_tiny'], ['sl_vit_base'])
    assert select_models('sl_vit_*', max_params_m=0) == (timm.list_models('sl_vit_*'), [])
