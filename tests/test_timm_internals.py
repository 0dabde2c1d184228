"""Every timm internal timm_sl relies on, named in one place.

timm_sl injects SPT / LSA through timm's constructor seams where there are some; where there are none it reads or
replaces attributes and calls private helpers of timm's classes. A timm upgrade that renames or changes one of those
fails here, with a message saying what changed and which timm_sl code to update, instead of as a shape error deep in
a model test. (timm's public API -- create_model, build_model_with_cfg, the registry -- is exercised everywhere else.)
"""
import inspect

import pytest
import torch
from torch import nn

import timm
from timm.layers import Attention, PatchEmbed
from timm.models.cait import Cait, ClassAttn, TalkingHeadAttn
from timm.models.pit import Pooling, PoolingVisionTransformer
from timm.models.swin_transformer import PatchMerging, SwinTransformer, WindowAttention

import timm_sl.convert
from timm_sl.convert import convert_module
from timm_sl.layers import LocalityClassAttn, LocalitySelfAttention, LocalityTalkingHeadAttn, SlArgs
from timm_sl.models.sl_swin import LocalityWindowAttention

LSA_KWARGS = {'diag_mask', 'learn_temp', 'temp_ratio'}


def _init_params(cls: type) -> set:
    return set(inspect.signature(cls.__init__).parameters) - {'self', 'args', 'kwargs'}


def _rebuilt_kwargs(source: nn.Module, lsa_cls: type, monkeypatch) -> set:
    """Constructor arguments the conversion table (timm_sl/convert.py) passes when it rebuilds ``source`` as
    ``lsa_cls``."""
    seen = {}

    class Probe(lsa_cls):
        def __init__(self, *args, **kwargs):
            seen.update(dict(zip(_positional(lsa_cls), args)), **kwargs)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(timm_sl.convert, lsa_cls.__name__, Probe)
    timm_sl.convert.convert_module(source)
    return set(seen) - LSA_KWARGS - {'device', 'dtype'}


def _positional(cls: type) -> list:
    return [n for n in inspect.signature(cls.__init__).parameters if n != 'self']


def _missing(obj: object, names) -> list:
    return [n for n in names if not hasattr(obj, n)]


# ---- constructor arguments rebuilt when a timm attention is replaced by its LSA version ----

def test_attention_constructor_arguments_are_all_carried_over(monkeypatch):
    """The conversion table (timm_sl/convert.py) rebuilds a timm ``Attention`` from its attributes (PiT builds its
    attention inline). A new ``Attention`` option would be silently dropped."""
    expected = _init_params(Attention) - {'device', 'dtype'}
    carried = _rebuilt_kwargs(Attention(32, num_heads=4), LocalitySelfAttention, monkeypatch)
    assert carried == expected, (
        f'timm.layers.Attention.__init__ takes {sorted(expected)}; the conversion of Attention '
        f'(timm_sl/convert.py) passes {sorted(carried)}: carry over {sorted(expected - carried)}, '
        f'drop {sorted(carried - expected)}.')


@pytest.mark.parametrize('options', [
    dict(), dict(qkv_bias=True, qk_norm=True, norm_layer=nn.LayerNorm),
    dict(scale_norm=True, proj_bias=False, dim_out=48, norm_layer=nn.LayerNorm),
    dict(gated=True, attn_head_dim=12)])
def test_attention_rebuilt_from_attributes_computes_the_same(options):
    """What the conversion reads (qkv, q_norm, norm, gate, proj, attn_drop, head_dim, ...) reproduces timm's layer:
    with no mask and a fixed temperature equal to timm's scale, the LSA layer is the same function."""
    source = Attention(32, num_heads=4, **options).eval()
    rebuilt = convert_module(source, SlArgs(lsa=False)).eval()
    x = torch.randn(2, 5, 32)
    torch.testing.assert_close(rebuilt(x), source(x), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize('make,lsa_cls', [
    (lambda: WindowAttention(32, 4, window_size=4), LocalityWindowAttention),
    (lambda: TalkingHeadAttn(32, num_heads=4), LocalityTalkingHeadAttn),
    (lambda: ClassAttn(32, num_heads=4), LocalityClassAttn),
], ids=['WindowAttention', 'TalkingHeadAttn', 'ClassAttn'])
def test_window_and_cait_constructor_arguments_are_all_carried_over(make, lsa_cls, monkeypatch):
    """The conversion table (timm_sl/convert.py) rebuilds Swin's and CaiT's attention from their attributes (CaiT's
    with the ``head_dim`` the SL classes add)."""
    source = make()
    expected = _init_params(type(source)) - {'device', 'dtype'} | {'head_dim'}
    carried = _rebuilt_kwargs(source, lsa_cls, monkeypatch)
    assert carried == expected, (
        f'timm {type(source).__name__}.__init__ takes {sorted(expected)}; its conversion (timm_sl/convert.py) '
        f'passes {sorted(carried)}: carry over {sorted(expected - carried)}, drop {sorted(carried - expected)}.')


# ---- attributes and private methods read from timm modules ----

ATTRIBUTES = [
    # (timm object, attributes timm_sl reads, where)
    (lambda: Attention(32, num_heads=4),
     ('qkv', 'num_heads', 'head_dim', 'attn_dim', 'proj', 'q_norm', 'k_norm', 'norm', 'gate', 'attn_drop', 'proj_drop',
      'fused_attn', 'scale'),
     'the conversion of Attention (convert.py), LocalitySelfAttention.forward (layers/lsa.py), '
     'analysis._OBSERVED_AT'),
    (lambda: WindowAttention(32, 4, window_size=4),
     ('_get_rel_pos_bias', 'qkv', 'num_heads', 'dim', 'window_size', 'attn_drop', 'proj_drop', 'fused_attn', 'softmax',
      'proj', 'reset_parameters'),
     'LocalityWindowAttention (layers/lsa_window.py), analysis._OBSERVED_AT'),
    (lambda: TalkingHeadAttn(32, num_heads=4),
     ('qkv', 'proj_l', 'proj_w', 'proj', 'attn_drop', 'proj_drop', 'num_heads', 'scale'),
     'LocalityTalkingHeadAttn and _resize_heads (layers/lsa_cait.py), analysis._OBSERVED_AT'),
    (lambda: ClassAttn(32, num_heads=4),
     ('q', 'k', 'v', 'proj', 'attn_drop', 'proj_drop', 'num_heads', 'fused_attn', 'scale'),
     'LocalityClassAttn and _resize_heads (layers/lsa_cait.py), analysis._OBSERVED_AT'),
    (lambda: Pooling(16, 32, stride=2),
     ('conv', 'fc'),
     'the conversion of Pooling (convert.py, models/sl_pit.py _pointwise_from_timm): pool.conv.stride, '
     'pool.fc in/out features'),
    (lambda: PatchMerging(16, 32),
     ('dim', 'out_dim', 'reduction'),
     'the conversion of PatchMerging (convert.py)'),
    (lambda: PatchEmbed(32, 4, 3, 16),
     ('proj', 'patch_size', 'img_size', 'grid_size', 'num_patches', 'strict_img_size', 'set_input_size', 'feat_ratio',
      'dynamic_feat_size'),
     'ShiftedPatchEmbed swaps PatchEmbed.proj (layers/spt.py)'),
]


@pytest.mark.parametrize('make,names,where', ATTRIBUTES, ids=[a[2].split(' ')[0] for a in ATTRIBUTES])
def test_module_attributes(make, names, where):
    module = make()
    missing = _missing(module, names)
    assert not missing, f'timm {type(module).__name__} no longer has {missing}: update {where}.'


def test_window_attention_rel_pos_bias_shape():
    """``_get_rel_pos_bias()`` is private: LSA adds it to the logits as ``(1, heads, N, N)``."""
    attn = WindowAttention(32, 4, window_size=4)
    assert attn._get_rel_pos_bias().shape == (1, 4, 16, 16), (
        'timm WindowAttention._get_rel_pos_bias() changed its output; update window_attn_bias and '
        'LocalityWindowAttention.forward (layers/lsa_window.py).')


class _Zeros(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.zeros_like(x)


@pytest.mark.parametrize('make,point,args', [
    (lambda: Attention(32, num_heads=4), 'attn_drop', lambda: (torch.randn(2, 5, 32),)),
    (lambda: WindowAttention(32, 4, window_size=2), 'attn_drop', lambda: (torch.randn(2, 4, 32),)),
    (lambda: TalkingHeadAttn(32, num_heads=4), 'proj_w', lambda: (torch.randn(2, 5, 32),)),
    (lambda: ClassAttn(32, num_heads=4), 'attn_drop', lambda: (torch.randn(2, 5, 32),)),
], ids=['Attention', 'WindowAttention', 'TalkingHeadAttn', 'ClassAttn'])
def test_attention_hands_its_softmax_to_the_observed_module(make, point, args):
    """The attention analysis (analysis._OBSERVED_AT) reads each timm attention's probabilities, in its explicit path
    (``fused_attn`` off), as the input of one submodule (talking heads: the post-softmax head mixing ``proj_w``; else
    ``attn_drop``). That input must be a distribution per query, and what the module outputs must flow through it."""
    from timm_sl.tools.analysis import attention_probs
    module = make().eval()
    x = args()
    where = f'timm {type(module).__name__} no longer passes its softmax output through .{point}: update ' \
            f'analysis._OBSERVED_AT (timm_sl/tools/analysis.py)'
    probs = attention_probs(module, *x)
    queries = 1 if isinstance(module, ClassAttn) else x[0].shape[1]
    assert probs.shape == (2, 4, queries, x[0].shape[1]), where
    torch.testing.assert_close(probs.sum(-1), torch.ones(2, 4, queries), msg=where)
    if hasattr(module, 'fused_attn'):
        module.fused_attn = False
    with torch.no_grad():
        out = module(*x)
        setattr(module, point, _Zeros())
        silenced = module(*x)
    assert not torch.allclose(out, silenced), where
    torch.testing.assert_close(silenced, module.proj.bias.expand_as(silenced), msg=where)  # no weight reaches v


def test_pit_layout():
    """SL-PiT swaps submodules after timm built them: stem ``patch_embed.conv``, stages ``transformers[i].pool`` /
    ``.blocks[j].attn`` (an ``Attention``), a 4-D ``pos_embed``."""
    model = PoolingVisionTransformer(img_size=32, patch_size=2, stride=2, base_dims=(8, 8), depth=(1, 1),
                                     heads=(1, 2), mlp_ratio=1)
    where = 'update SlPoolingVisionTransformer (models/sl_pit.py)'
    assert isinstance(model.patch_embed.conv, nn.Conv2d) and hasattr(model.patch_embed, 'img_size'), where
    assert model.pos_embed.ndim == 4, f'PiT pos_embed is no longer (1, D, H, W): {where}'
    stages = list(model.transformers)
    assert any(isinstance(s.pool, Pooling) for s in stages), f'PiT stages lost .pool: {where}'
    assert all(isinstance(b.attn, Attention) for s in stages for b in s.blocks), f'PiT blocks lost .attn: {where}'


def test_swin_layout():
    """SL-Swin swaps ``layers[i].downsample`` (PatchMerging) and ``layers[i].blocks[j].attn``; the analysis reads each
    block's ``window_size`` and ``shift_size``."""
    model = SwinTransformer(img_size=32, patch_size=2, embed_dim=16, depths=(2, 1), num_heads=(1, 2), window_size=4)
    where = 'update SlSwinTransformer (models/sl_swin.py) and analysis._window_received_attention'
    assert any(isinstance(s.downsample, PatchMerging) for s in model.layers), where
    blocks = [b for s in model.layers for b in s.blocks]
    assert all(isinstance(b.attn, WindowAttention) for b in blocks), where
    assert not _missing(blocks[1], ('window_size', 'shift_size')), where
    assert any(blocks[1].shift_size), where


def test_cait_layout():
    """SL-CaiT goes through ``patch_layer`` / ``attn_block`` / ``attn_block_token_only`` and reads ``blocks`` and
    ``blocks_token_only``."""
    params = _init_params(Cait)
    missing = [n for n in ('patch_layer', 'attn_block', 'attn_block_token_only', 'depth_token_only') if n not in params]
    assert not missing, f'timm Cait lost the constructor seams {missing}: update SlCait (models/sl_cait.py).'
    model = Cait(img_size=32, patch_size=4, embed_dim=32, depth=1, num_heads=2)
    assert isinstance(model.blocks[0].attn, TalkingHeadAttn) and isinstance(model.blocks_token_only[0].attn, ClassAttn)
    seen = []
    model.blocks_token_only[0].register_forward_pre_hook(lambda m, args: seen.append(args[0].shape))
    model(torch.randn(1, 3, 32, 32))
    assert seen == [(1, 64, 32)], ('a class-attention block no longer gets the patch tokens as its first input: '
                                   'update analysis.final_attention_map')


def test_vision_transformer_seams():
    """SL-ViT / SL-T2T pass ``embed_layer`` and ``attn_layer``; T2T replaces ``pos_embed`` with a buffer and reads
    ``no_embed_class`` / ``num_prefix_tokens``; timm's blocks take an attention *class* (``issubclass``)."""
    from timm.models import VisionTransformer
    params = _init_params(VisionTransformer)
    assert {'embed_layer', 'attn_layer', 'pre_norm'} <= params, 'update SlVisionTransformer / SlT2T'
    model = VisionTransformer(img_size=32, patch_size=4, embed_dim=32, depth=1, num_heads=2,
                              attn_layer=LocalitySelfAttention)
    assert isinstance(model.blocks[0].attn, LocalitySelfAttention)
    assert not _missing(model, ('pos_embed', 'no_embed_class', 'num_prefix_tokens', 'cls_token', 'set_input_size')), \
        'update SlT2T (models/sl_t2t.py)'


def test_vit_weight_init_calls_module_hooks():
    """timm's ViT init (``init_weights_vit_timm``) calls ``init_weights()`` on non-Linear modules (the SPT projection
    re-draws its Linear weight there) and otherwise ``reset_parameters()`` (LSA resets its temperature there)."""
    model = timm.create_model('sl_vit_32', depth=1)
    with torch.no_grad():
        model.patch_embed.proj.weight.zero_()
        model.blocks[0].attn.temperature.fill_(5.)
    model.init_weights()
    where = ('ShiftedPatchProjection.init_weights (layers/spt.py), '
             'LocalitySelfAttention.reset_parameters (layers/lsa.py)')
    assert model.patch_embed.proj.weight.std() > 0.01, f"timm's ViT init no longer calls init_weights(): {where}"
    assert torch.allclose(model.blocks[0].attn.temperature, torch.full((12,), 16 ** -0.5)), (
        f"timm's ViT init no longer calls reset_parameters(): {where}")


# ---- private helpers and module-level functions imported from timm ----

PRIVATE_IMPORTS = [
    ('timm.layers', '_assert', 'layers/spt.py, models/sl_t2t.py'),
    ('timm.layers.attention', 'maybe_add_mask', 'layers/lsa.py, models/sl_t2t.py'),
    ('timm.layers.attention', 'resolve_self_attn_mask', 'layers/lsa.py'),
    ('timm.models.swin_transformer', 'window_reverse', 'tools/analysis.py'),
    ('timm.models.vision_transformer', 'checkpoint_filter_fn', 'models/sl_vit.py'),
    ('timm.models.pit', 'checkpoint_filter_fn', 'models/sl_pit.py'),
    ('timm.models.swin_transformer', 'checkpoint_filter_fn', 'models/sl_swin.py'),
    ('timm.models.cait', 'checkpoint_filter_fn', 'models/sl_cait.py'),
    ('timm.models.swin_transformer', 'resolve_window_args', 'SlSwinTransformer.set_input_size (models/sl_swin.py)'),
    ('timm.models.swin_transformer', 'calc_stage_window_sizes', 'SlSwinTransformer.set_input_size (models/sl_swin.py)'),
]


def test_swin_resize_reference_windows():
    """SlSwinTransformer.set_input_size works out the windows timm's resize will make (from the reference windows
    and grid timm keeps on the model) to refuse one past the token bound before timm builds its masks."""
    with torch.device('meta'):
        model = timm.create_model('swin_tiny_patch4_window7_224')
    assert _missing(model, ['_ref_window_sizes', '_ref_grid_size']) == [], (
        "timm's SwinTransformer no longer keeps its reference windows: update SlSwinTransformer.set_input_size "
        "(models/sl_swin.py).")


@pytest.mark.parametrize('module,name,where', PRIVATE_IMPORTS, ids=[f'{m}.{n}' for m, n, _ in PRIVATE_IMPORTS])
def test_module_level_names(module, name, where):
    import importlib
    assert hasattr(importlib.import_module(module), name), f'{module}.{name} is gone: update {where}.'


def test_first_conv_trait_switches_off_timms_stem_adaptation():
    """After an SL filter adapted the stem to ``in_chans`` it sets the model's ``_traits['first_conv']`` to None
    (claim_stem_adaptation, models/_filters.py), timm's documented switch for a model that adapts its own stem; the
    loader's behaviour with it is tested in test_loading.py (no "Loading unchanged" after a grey load)."""
    from timm.models import get_model_traits
    from timm_sl.models._filters import claim_stem_adaptation
    model = nn.Linear(2, 2)
    model._traits = {'first_conv': 'weight', 'img_size': None}
    claim_stem_adaptation(model)
    assert get_model_traits(model)['first_conv'] is None and 'img_size' in get_model_traits(model), (
        "timm's get_model_traits no longer reads model._traits: update claim_stem_adaptation (models/_filters.py).")
