"""timm_sl.slify: SPT / LSA / Spool on timm model instances and names, the registered ``slify`` entry, refusals, and
the architecture table of docs/slify.md."""
import copy
import logging
import os
import re
import sys
import warnings
from functools import partial
from pathlib import Path

import pytest
import torch
from torch import nn

import timm
from timm.layers import Attention, PatchEmbed
from timm_sl import SlifyError, slify, slify_refusal
from timm_sl.convert import convert_module
from timm_sl.layers import LocalitySelfAttention, LsaMixin, ShiftedPatchEmbed, ShiftedPatchProjection, SlArgs

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / 'benchmarks'))
from throughput import SLIFY_SURVEY, slify_survey_rows  # noqa: E402

# slify(base) == registered sl_ model, each pair built small: (base, sl_ model, shared kwargs, input size)
EQUIVALENT = [
    ('vit_tiny_patch16_224', 'sl_vit_tiny', dict(depth=2, img_size=64), 64),
    ('pit_xs_224', 'sl_pit_xs', dict(depth=(1, 2, 1), img_size=64), 64),
    ('swin_tiny_patch4_window7_224', 'sl_swin_t', dict(depths=(2, 1, 1, 1), window_size=4, img_size=64), 64),
    ('cait_xxs24_224', 'sl_cait_xxs24', dict(depth=2, depth_token_only=1, img_size=64), 64),
]


def _structure(model: nn.Module):
    return [(name, type(m).__qualname__, type(m).__module__) for name, m in model.named_modules()]


@pytest.mark.parametrize('base,sl_name,kwargs,size', EQUIVALENT, ids=[e[1] for e in EQUIVALENT])
def test_slify_equals_registered_sl_model(base, sl_name, kwargs, size):
    converted = slify(base, num_classes=10, **kwargs).eval()
    registered = timm.create_model(sl_name, num_classes=10, **kwargs).eval()
    # the root keeps the base's class (the sl_ model subclasses it); every module below is the same type
    assert type(registered).__mro__[1] is type(converted)
    assert _structure(converted)[1:] == _structure(registered)[1:]
    ref_state = registered.state_dict()
    assert {k: v.shape for k, v in converted.state_dict().items()} == {k: v.shape for k, v in ref_state.items()}
    with torch.no_grad():
        for module in registered.modules():  # temperatures away from their init, so a mix-up would show
            if isinstance(module, LsaMixin):
                module.temperature.uniform_(0.05, 0.5)
    converted.load_state_dict(registered.state_dict(), strict=True)
    x = torch.randn(2, 3, size, size)
    with torch.no_grad():
        torch.testing.assert_close(converted(x), registered(x), rtol=0, atol=0)
    assert converted.sl_args == registered.sl_args


def test_attention_weights_carry_over_and_spt_starts_fresh():
    base = timm.create_model('vit_tiny_patch16_224', depth=2, img_size=32, qkv_bias=True)
    old_attn = [copy.deepcopy(b.attn) for b in base.blocks]
    old_state = copy.deepcopy(base.state_dict())
    model = slify(base)
    assert model is base  # converted in place
    for block, old in zip(model.blocks, old_attn):
        assert type(block.attn).__name__ == 'LocalitySelfAttention'
        for key, value in old.state_dict().items():
            assert torch.equal(block.attn.state_dict()[key], value), key
        torch.testing.assert_close(block.attn.temperature, torch.full((3,), 64 ** -0.5))
    assert isinstance(model.patch_embed, ShiftedPatchEmbed)
    # everything outside the patch embedding and attention (norms, MLPs, head, pos / cls) is untouched
    for key, value in old_state.items():
        if not key.startswith('patch_embed.'):
            assert torch.equal(model.state_dict()[key], value), key
    assert model.patch_embed.proj.weight.shape == (192, 16 * 16 * 3 * 5)


def test_replacements_keep_train_or_eval_mode():
    model = slify(timm.create_model('pit_xs_224', depth=(1, 1, 1), img_size=64).eval())
    assert not any(m.training for m in model.modules())
    model = slify(timm.create_model('pit_xs_224', depth=(1, 1, 1), img_size=64).train())
    assert all(m.training for m in model.modules())


def test_every_attention_option_is_kept():
    """qk_norm with a custom eps, scale_norm, proj_bias=False, dropouts, a head dim that is not dim // heads."""
    norm = partial(nn.LayerNorm, eps=1e-3)
    attn = Attention(64, num_heads=2, attn_head_dim=24, qkv_bias=True, qk_norm=True, scale_norm=True,
                     proj_bias=False, attn_drop=0.1, proj_drop=0.2, norm_layer=norm)
    host = nn.Sequential(PatchEmbed(16, 4, 3, 64), attn)
    slify(host, spt=False)
    new = host[1]
    assert isinstance(new, LocalitySelfAttention)
    assert (new.num_heads, new.head_dim, new.attn_dim) == (2, 24, 48)
    assert new.q_norm.eps == new.k_norm.eps == new.norm.eps == 1e-3  # a rebuild from their class would give 1e-5
    assert new.proj.bias is None and new.qkv.bias is not None
    assert (new.attn_drop.p, new.proj_drop.p) == (0.1, 0.2)
    assert new.fused_attn == attn.fused_attn
    # with every LSA part off it computes exactly the timm attention it came from
    plain = convert_module(attn, SlArgs(lsa=False)).eval()
    x = torch.randn(2, 5, 64)
    with torch.no_grad():
        torch.testing.assert_close(plain(x), attn.eval()(x))


@pytest.mark.parametrize('kwargs,fmt_shape', [
    (dict(), (2, 16, 32)),
    (dict(flatten=False), (2, 32, 4, 4)),
    (dict(output_fmt='NHWC'), (2, 4, 4, 32)),
    (dict(strict_img_size=False, dynamic_img_pad=True, output_fmt='NHWC'), (2, 5, 5, 32)),
])
def test_spt_keeps_patch_embed_grid_and_format(kwargs, fmt_shape):
    embed = PatchEmbed(img_size=16, patch_size=4, in_chans=3, embed_dim=32, bias=False, **kwargs)
    host = nn.Sequential(embed)
    slify(host, lsa=False)
    spt = host[0]
    assert isinstance(spt, ShiftedPatchEmbed) and spt.proj.bias is None
    for attr in ('img_size', 'patch_size', 'grid_size', 'flatten', 'output_fmt', 'strict_img_size', 'dynamic_img_pad'):
        assert getattr(spt, attr) == getattr(embed, attr), attr
    size = 18 if kwargs.get('dynamic_img_pad') else 16
    assert spt(torch.randn(2, 3, size, size)).shape == fmt_shape


def test_swin_post_embed_norm_dropped_unless_asked():
    kw = dict(depths=(1, 1), num_heads=(2, 4), embed_dim=32, window_size=4, img_size=32)
    assert isinstance(slify('swin_tiny_patch4_window7_224', **kw).patch_embed.norm, nn.Identity)
    kept = slify('swin_tiny_patch4_window7_224', spt_post_norm=True, **kw).patch_embed.norm
    assert isinstance(kept, nn.LayerNorm) and kept.normalized_shape == (32,)


@pytest.mark.parametrize('name,kwargs,reason', [
    ('eva02_tiny_patch14_224', dict(depth=1),
     'cannot slify eva02_tiny_patch14_224: attention class timm.models.eva.EvaAttention has no LSA form '
     '(rotary position embedding).'),
    ('xcit_nano_12_p16_224', dict(depth=1),
     'cannot slify xcit_nano_12_p16_224: no timm PatchEmbed (its patch_embed is timm.models.xcit.ConvPatchEmbed); '
     'attention class timm.models.xcit.XCA has no LSA form.'),
    ('beit_base_patch16_224', dict(depth=1),
     'cannot slify beit_base_patch16_224: attention class timm.models.beit.Attention has no LSA form '
     '(relative-position bias inside the attention).'),
])
def test_refusal_names_the_reason(name, kwargs, reason):
    with pytest.raises(SlifyError) as info:
        slify(name, **kwargs)
    assert str(info.value) == reason
    assert info.value.model_name == name and info.value.reasons


def test_slify_refusal_answers_without_building():
    assert slify_refusal('vit_tiny_patch16_224') is None
    assert slify_refusal('convnext_atto') == ('cannot slify convnext_atto: no timm PatchEmbed (its stem is '
                                              'torch.nn.modules.container.Sequential).')
    assert slify_refusal('convnext_atto', spt=False) == 'cannot slify convnext_atto: no attention layer for LSA.'


def test_slify_refusal_reads_as_slify_for_an_instance():
    """slify_refusal named an instance by its class ('cannot slify Eva') where slify names its architecture, and took
    model kwargs or a bad spt_pool with an instance silently where slify refuses them."""
    model = timm.create_model('eva02_tiny_patch14_224', depth=1)
    with pytest.raises(SlifyError) as info:
        slify(model)
    assert slify_refusal(model) == str(info.value)
    assert str(info.value).startswith('cannot slify eva02_tiny_patch14_224: ')
    vit = timm.create_model('vit_tiny_patch16_224', depth=1)
    for kwargs, error in ((dict(img_size=32), TypeError), (dict(spt_pool='yes'), ValueError)):
        with pytest.raises(error) as expected:
            slify(copy.deepcopy(vit), **kwargs)
        with pytest.raises(error) as got:
            slify_refusal(vit, **kwargs)
        assert str(got.value) == str(expected.value)


@pytest.mark.parametrize('kwargs', [dict(spt_pool=True), dict(spt_pool=False), dict(spt=False, spt_pool=True)])
def test_spool_switch_on_a_model_without_pooling_is_refused(kwargs):
    """A ViT has nothing Spool replaces: spt_pool was recorded on the model anyway (analysis then labelled a plain
    ViT 'SL w/o Spool' / 'L + Spool'), where create_model('sl_vit_32', spt_pool=...) refuses the kwarg."""
    with pytest.raises(SlifyError, match=rf"^cannot slify vit_tiny_patch16_224: spt_pool={kwargs['spt_pool']} has no "
                                         r"pooling layer to act on .*; allowed: spt_pool unset\.$"):
        slify('vit_tiny_patch16_224', depth=1, **kwargs)
    assert slify('pit_ti_224', depth=(1, 1, 1), spt_pool=False).spt_pool is False  # where there is pooling: taken


def test_refused_instance_is_untouched():
    """A model with one convertible and one unconvertible part: nothing is converted, not even the convertible part."""
    model = timm.create_model('vit_tiny_patch16_224', depth=2, img_size=32)
    model.blocks[1].attn = nn.MultiheadAttention(192, 3)  # no LSA form
    before = copy.deepcopy(model.state_dict())
    with pytest.raises(SlifyError, match=r'attention class torch\.nn\.modules\.activation\.MultiheadAttention has '
                                         r'no LSA form'):
        slify(model)
    assert type(model.patch_embed) is PatchEmbed and type(model.blocks[0].attn) is Attention
    assert all(torch.equal(model.state_dict()[k], v) for k, v in before.items())
    assert not any(isinstance(m, (LsaMixin, ShiftedPatchProjection)) for m in model.modules())


def test_refusals_for_already_sl_nothing_to_do_and_bad_arguments():
    with pytest.raises(SlifyError, match=r'already has SL layers \(LocalitySelfAttention, ShiftedPatchProjection\)'):
        slify(timm.create_model('sl_vit_32', depth=1))
    with pytest.raises(SlifyError, match='nothing to convert with these switches'):
        slify('vit_tiny_patch16_224', depth=1, spt=False, lsa=False)
    with pytest.raises(ValueError, match=r"shift_directions='up' is not supported"):
        slify('vit_tiny_patch16_224', depth=1, shift_directions='up')
    with pytest.raises(ValueError, match=r'shift_ratio=0.1 with patch size \(4, 4\) gives a shift of \(0, 0\) px'):
        slify('vit_tiny_patch16_224', pretrained=True, depth=1, patch_size=4, img_size=32, shift_ratio=0.1)
    with pytest.raises(TypeError, match=r"slify got model kwargs \['depth'\] with a model instance"):
        slify(timm.create_model('vit_tiny_patch16_224', depth=1), depth=2)
    with pytest.raises(ValueError, match=r"base=None is invalid; the slify model needs the timm model to convert"):
        timm.create_model('slify')



@pytest.mark.parametrize('kwargs,message', [
    (dict(spt=False, shift_ratio=0.25), 'shift_ratio=0.25 is unused with spt=False'),
    (dict(spt=False, spt_pool=False, shift_directions='all'), "shift_directions='all' is unused with spt=False"),
    (dict(spt=False, spt_post_norm=True), 'spt_post_norm=True is unused with spt=False'),
])
def test_an_spt_option_with_spt_off_is_refused(kwargs, message):
    """slify(name, spt=False, shift_ratio=0.25) converted the attention and dropped the ratio, silently."""
    for make in (partial(slify, 'pit_xs_224'), partial(timm.create_model, 'slify', base='pit_xs_224')):
        with pytest.raises(ValueError, match=rf'^slify: {re.escape(message)}'):
            make(**kwargs)
    with torch.device('meta'):  # Spool alone takes the shift directions
        model = slify('pit_xs_224', spt=False, spt_pool=True, shift_directions='all')
    assert model.sl_args.shift_directions == 'all' and not isinstance(model.patch_embed, ShiftedPatchEmbed)


@pytest.mark.parametrize('via_entry', [False, True], ids=['slify', 'entry'])
def test_unknown_kwarg_with_a_name_is_named_with_the_allowed_ones(via_entry, monkeypatch):
    """As ``create_model`` for an sl_ model: one line naming the unknown kwargs, the base and what is allowed (the SL
    switches and the base class's constructor kwargs), before anything real is built."""
    calls = []
    create = timm.create_model

    def spy(name, *args, **kwargs):
        calls.append((name, torch.empty(0).device.type))
        return create(name, *args, **kwargs)
    monkeypatch.setattr(timm, 'create_model', spy)
    kwargs = dict(depth=1, img_size=32, num_classes=3, foo=1, depht=2, features_only=False)
    with pytest.raises(TypeError) as error:
        if via_entry:  # train.py --model slify --model-kwargs base=vit_tiny_patch16_224 foo=1 ...
            create('slify', base='vit_tiny_patch16_224', **kwargs)
        else:
            slify('vit_tiny_patch16_224', **kwargs)
    message = str(error.value)
    assert '\n' not in message
    assert re.fullmatch(r"slify of vit_tiny_patch16_224 \(VisionTransformer\) got unknown model kwargs "
                        r"\['depht', 'foo'\]; allowed: .*\.", message), message
    allowed = set(message.split('allowed: ')[1].rstrip('.').split(', '))
    assert {'depth', 'img_size', 'num_classes', 'spt', 'lsa_mask', 'shift_ratio', 'spt_pool'} <= allowed
    assert not {'foo', 'depht', 'features_only'} & allowed
    assert all(device == 'meta' for _, device in calls)

def test_registered_entry_follows_the_base_cfg_and_switches():
    model = timm.create_model('slify', base='vit_tiny_patch16_224', depth=1, img_size=32, num_classes=7,
                              lsa_mask=False, shift_directions='cardinal')
    assert model.pretrained_cfg['architecture'] == 'vit_tiny_patch16_224'
    data = timm.data.resolve_data_config({}, model=model)
    assert data['mean'] == timm.data.IMAGENET_INCEPTION_MEAN or data['mean'] == model.pretrained_cfg['mean']
    attn = model.blocks[0].attn
    assert (attn.diag_mask, attn.learn_temp) == (False, True)
    assert model.patch_embed.proj.shift_directions == 'cardinal' and model.num_classes == 7
    assert model(torch.randn(1, 3, 32, 32)).shape == (1, 7)


def test_pretrained_loads_timm_weights_then_converts(tmp_path, caplog):
    """The weights are read twice (to refuse a converted model's, then by create_model): timm's loading log once."""
    from safetensors.torch import save_file
    kw = dict(depth=1, img_size=32)
    source = timm.create_model('vit_tiny_patch16_224', **kw)
    save_file(source.state_dict(), tmp_path / 'w.safetensors')
    overlay = dict(file=str(tmp_path / 'w.safetensors'))
    with caplog.at_level(logging.INFO, logger='timm'):
        model = slify('vit_tiny_patch16_224', pretrained=True, pretrained_cfg_overlay=overlay, **kw)
    said = [r.getMessage() for r in caplog.records]
    assert said == [f'Loading pretrained weights from file ({overlay["file"]})',
                    f"Loaded  from checkpoint '{overlay['file']}'"], said
    caplog.clear()
    with caplog.at_level(logging.INFO, logger='timm'), pytest.raises(FileNotFoundError):
        slify('vit_tiny_patch16_224', pretrained=True, pretrained_cfg_overlay=dict(file=str(tmp_path / 'no.pth')), **kw)
    assert [r.getMessage() for r in caplog.records].count(f"No checkpoint found at '{tmp_path / 'no.pth'}'") == 1
    assert torch.equal(model.blocks[0].attn.qkv.weight, source.blocks[0].attn.qkv.weight)
    assert torch.equal(model.pos_embed, source.pos_embed) and torch.equal(model.head.weight, source.head.weight)
    via_entry = timm.create_model('slify', base='vit_tiny_patch16_224', pretrained=True,
                                  pretrained_cfg_overlay=overlay, **kw)
    assert torch.equal(via_entry.blocks[0].attn.proj.weight, source.blocks[0].attn.proj.weight)


def test_converted_weights_in_a_base_cfg_load_through_the_entry_and_slify_refuses_them(tmp_path, caplog):
    """A file of a converted model's weights named by the base's cfg (pretrained_cfg_overlay=dict(file=...)): the
    slify model converts first and loads it (adapted to in_chans); slify(pretrained=True), which loads the base's
    own weights before converting, refuses it in one line naming the file and the way that loads it."""
    kw = dict(depth=1, img_size=32, num_classes=10)
    source = slify('vit_tiny_patch16_224', **kw).eval()
    path = tmp_path / 'converted.pth'
    torch.save(source.state_dict(), path)
    overlay = dict(file=str(path), num_classes=10, input_size=(3, 32, 32))
    with pytest.raises(ValueError, match=r'converted.pth holds converted \(SL\) weights.*create_model\(\'slify\'') as e:
        slify('vit_tiny_patch16_224', pretrained=True, pretrained_cfg_overlay=overlay, **kw)
    assert '\n' not in str(e.value)
    x = torch.randn(2, 3, 32, 32)
    loaded = timm.create_model('slify', base='vit_tiny_patch16_224', pretrained=True, pretrained_cfg_overlay=overlay,
                               **kw).eval()
    torch.testing.assert_close(loaded(x), source(x), rtol=0, atol=0)
    assert 'state_dict' not in loaded.pretrained_cfg
    grey = timm.create_model('slify', base='vit_tiny_patch16_224', pretrained=True, pretrained_cfg_overlay=overlay,
                             in_chans=1, **kw).eval()
    torch.testing.assert_close(grey(x[:, :1]), source(x[:, :1].expand(-1, 3, -1, -1)), rtol=1e-4, atol=1e-5)
    # grey weights declared grey (input_size): timm builds the base with 1 channel, and nothing says otherwise
    torch.save(grey.state_dict(), tmp_path / 'grey.pth')
    grey_overlay = dict(overlay, file=str(tmp_path / 'grey.pth'), input_size=(1, 32, 32))
    with warnings.catch_warnings(), caplog.at_level(logging.WARNING):
        warnings.simplefilter('error')
        again = timm.create_model('slify', base='vit_tiny_patch16_224', pretrained=True,
                                  pretrained_cfg_overlay=grey_overlay, **kw).eval()
    assert caplog.records == [], [r.getMessage() for r in caplog.records]  # was: '... the model has 3. Loading ...'
    torch.testing.assert_close(again(x[:, :1]), grey(x[:, :1]), rtol=0, atol=0)


@pytest.mark.parametrize('base,kwargs', [
    ('vit_tiny_patch16_224', dict(depth=2, img_size=32, out_indices=(0, 1))),
    ('pit_xs_224', dict(depth=(1, 1, 1), img_size=64)),
    ('swin_tiny_patch4_window7_224', dict(depths=(2, 1), num_heads=(2, 4), embed_dim=32, window_size=4, img_size=32,
                                          out_indices=(0, 1))),
], ids=['vit', 'pit', 'swin'])
def test_converted_weights_load_with_features_only(base, kwargs, tmp_path):
    """features_only with a converted model's weights (a slify export through local-dir: / hf-hub:, or a file named
    by the cfg) ended in "'FeatureGetterNet' object has no attribute 'num_classes'"; they load as timm loads
    pretrained weights for features: into the whole model, then wrapped."""
    out_indices = kwargs.pop('out_indices', None)
    source = slify(base, num_classes=3, **kwargs).eval()
    torch.save(source.state_dict(), tmp_path / 'w.pth')
    size = kwargs['img_size']
    overlay = dict(file=str(tmp_path / 'w.pth'), num_classes=3, input_size=(3, size, size))
    features = timm.create_model('slify', base=base, pretrained=True, pretrained_cfg_overlay=overlay, num_classes=3,
                                 features_only=True, **kwargs, **({'out_indices': out_indices} if out_indices else {}))
    x = torch.randn(1, 3, size, size)
    got = features.eval()(x)
    ref = source.forward_intermediates(x, indices=len(got), intermediates_only=True)
    for g, r in zip(got, ref):
        torch.testing.assert_close(g if g.shape == r.shape else g.permute(0, 3, 1, 2), r)


def test_refused_name_builds_nothing(monkeypatch):
    """The plan runs on a meta twin: a refused name never builds real weights or loads pretrained ones."""
    calls = []
    create = timm.create_model

    def spy(name, *args, **kwargs):
        calls.append((kwargs.get('pretrained', False), torch.empty(0).device.type))
        return create(name, *args, **kwargs)
    monkeypatch.setattr(timm, 'create_model', spy)
    with pytest.raises(SlifyError):
        slify('eva02_tiny_patch14_224', pretrained=True, depth=1)
    assert calls == [(False, 'meta')]


@pytest.mark.parametrize('base,kwargs,grid', [
    ('vit_tiny_patch16_224', dict(img_size=4096), r'\(4096, 4096\), patch_size=\(16, 16\) give a 256x256'),
    ('cait_xxs24_224', dict(img_size=4096, depth=1), '256x256 token grid'),
    ('pit_xs_224', dict(img_size=2048), r'stride=8 give a 256x256 token grid'),  # SPT's patch is the stem's stride
    ('pit_xs_224', dict(img_size=2048, spt=False), '255x255 token grid'),  # timm's overlapping 16 / 8 conv
])
def test_global_attention_over_too_many_tokens_is_refused_before_building(base, kwargs, grid, monkeypatch):
    """slify(name, img_size=4096) built the model, then its forward asked for the square of 65536 tokens per head:
    the sl_ models' bound, checked on the meta twin (nothing real built); Swin's windows stay free."""
    calls = []
    create = timm.create_model
    monkeypatch.setattr(timm, 'create_model', lambda name, *a, **k: calls.append(torch.empty(0).device.type) or
                        create(name, *a, **k))
    for make in (partial(slify, base), partial(create, 'slify', base=base), partial(slify_refusal, base)):
        calls.clear()
        with pytest.raises(ValueError, match=rf'^slify of {base}: img_size=.*{grid}.* under global attention; '
                                             r'allowed: at most 16384 tokens') as error:
            make(**kwargs)
        assert '\n' not in str(error.value) and set(calls) == {'meta'}
    with torch.device('meta'):
        slify('swin_tiny_patch4_window7_224', img_size=4096)  # windowed attention: memory grows with the area



def test_a_swin_below_its_patch_size_is_refused_when_built(monkeypatch):
    """timm builds a Swin of an img_size below its patch (a 0x0 token grid); slify of it ended in timm's "cannot
    reshape tensor of 0 elements" from the LSA window pattern: refused in one line, as the sl_ models do."""
    base = 'swin_tiny_patch4_window7_224'
    calls = []
    create = timm.create_model
    monkeypatch.setattr(timm, 'create_model', lambda name, *a, **k: calls.append(torch.empty(0).device.type) or
                        create(name, *a, **k))
    grid = (rf"^slify of {base}: img_size=\(2, 2\), patch_size=\(4, 4\) give a 0x0 token grid; allowed: at least "
            r"one token per axis: an img_size at least the patch \(or kernel\) size\.$")
    for make in (partial(slify, base), partial(create, 'slify', base=base), partial(slify_refusal, base)):
        calls.clear()
        with pytest.raises(ValueError, match=grid):
            make(img_size=2)
        assert set(calls) == {'meta'}
    with pytest.raises(ValueError, match=grid):
        slify(base, img_size=2, lsa=False)  # SPT alone: the grid has no token either
    with torch.device('meta'):
        model = create(base, img_size=2, depths=(1, 1, 1, 1))
    with pytest.raises(ValueError, match=grid):
        slify(model)

def test_set_input_size_of_a_slified_vit_keeps_the_token_bound():
    model = slify('vit_tiny_patch16_224', depth=1)
    with pytest.raises(ValueError, match=r'^ShiftedPatchEmbed: img_size=4096, patch_size=\(16, 16\) give a 256x256 '
                                         r'token grid .* under global attention'):
        model.set_input_size(img_size=4096)
    assert model.patch_embed.grid_size == (14, 14) and model.pos_embed.shape == (1, 197, 192)
    model.set_input_size(img_size=64)  # within the bound: timm's resize
    assert model(torch.randn(1, 3, 64, 64)).shape == (1, 1000)
    assert not ShiftedPatchEmbed(img_size=32, patch_size=4).global_tokens  # a layer alone: its host decides


def test_set_input_size_of_a_slified_swin_keeps_the_window_bound():
    """timm scales a Swin's windows with the grid: a slified Swin (timm's class) at 4096 px asked for 128x128 windows,
    an N x N index per block (4 GiB) and the pattern; the LSA block refuses them before making its buffers."""
    model = slify('swin_tiny_patch4_window7_224', depths=(1, 1, 1, 1), num_classes=3)
    with pytest.raises(ValueError, match=r'^LocalitySwinBlock: feat_size=\(1024, 1024\) give windows of 128x128 over '
                                         r'a 1024x1024 token map, 17179869184 attention logits per head and image; '
                                         r'allowed: at most 268435456') as error:
        model.set_input_size(img_size=4096)
    assert '\n' not in str(error.value)
    model.set_input_size(img_size=4096, window_size=7)  # kept windows: memory grows with the area only
    assert model.layers[0].blocks[0].window_size == (7, 7)
    model.set_input_size(img_size=64, window_size=4)  # a refused resize is mended by the next one
    assert model.layers[0].blocks[0].window_size == (4, 4) and model(torch.randn(1, 3, 64, 64)).shape == (1, 3)


# ---------------------------------------------------------------------------------------------------------------------
# the converted models in timm's machinery

SMALL_BASES = [
    ('vit_tiny_patch16_224', dict(depth=2, img_size=32)),
    ('pit_xs_224', dict(depth=(1, 1, 1), img_size=64)),
    ('swin_tiny_patch4_window7_224', dict(depths=(2, 1), num_heads=(2, 4), embed_dim=32, window_size=4, img_size=32)),
    ('cait_xxs24_224', dict(depth=2, depth_token_only=1, img_size=32)),
]
FEATURE_KWARGS = {'vit_tiny_patch16_224': dict(out_indices=(0, 1)), 'cait_xxs24_224': dict(out_indices=(0, 1))}
SMALL_IDS = [b[0].split('_')[0] for b in SMALL_BASES]


def _size(kwargs):
    return kwargs['img_size']


@pytest.mark.parametrize('base,kwargs', SMALL_BASES, ids=SMALL_IDS)
def test_deepcopy_and_state_dict_round_trip(base, kwargs):
    model = slify(base, **kwargs).eval()
    x = torch.randn(2, 3, _size(kwargs), _size(kwargs))
    with torch.no_grad():
        ref = model(x)
        torch.testing.assert_close(copy.deepcopy(model)(x), ref, rtol=0, atol=0)
        twin = slify(base, **kwargs).eval()
        twin.load_state_dict(model.state_dict(), strict=True)
        torch.testing.assert_close(twin(x), ref, rtol=0, atol=0)
    y = model.train()(x).sum()
    y.backward()
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for n, p in model.named_parameters()
               if p.requires_grad and 'head_dist' not in n)


@pytest.mark.parametrize('base,kwargs', [
    pytest.param(*b, marks=() if b[0].startswith('vit') else pytest.mark.slow) for b in SMALL_BASES], ids=SMALL_IDS)
def test_torch_compile_matches_eager(base, kwargs):
    model = slify(base, **kwargs).eval()
    x = torch.randn(2, 3, _size(kwargs), _size(kwargs))
    with torch.no_grad():
        torch.testing.assert_close(torch.compile(model, backend='eager')(x), model(x))


@pytest.mark.parametrize('base,kwargs', SMALL_BASES, ids=SMALL_IDS)
def test_torchscript_matches_eager(base, kwargs):
    model = slify(base, **kwargs).eval()
    x = torch.randn(1, 3, _size(kwargs), _size(kwargs))
    scripted = torch.jit.script(model)
    with torch.no_grad():
        torch.testing.assert_close(scripted(x), model(x), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize('base,kwargs', SMALL_BASES, ids=SMALL_IDS)
def test_features_only_and_intermediates(base, kwargs):
    x = torch.randn(1, 3, _size(kwargs), _size(kwargs))
    features = timm.create_model('slify', base=base, features_only=True, **kwargs, **FEATURE_KWARGS.get(base, {}))
    assert any(isinstance(m, ShiftedPatchProjection) for m in features.modules())
    assert any(isinstance(m, LsaMixin) for m in features.modules())
    maps = features(x)
    assert len(maps) == len(features.feature_info.channels())
    assert [m.shape[1] for m in maps] == features.feature_info.channels() or \
        [m.shape[-1] for m in maps] == features.feature_info.channels()
    model = slify(base, **kwargs).eval()
    final, inter = model.forward_intermediates(x)
    assert len(inter) >= 1 and all(torch.isfinite(t).all() for t in inter)


# ---------------------------------------------------------------------------------------------------------------------
# the architecture table of docs/slify.md

def test_survey_outcomes_match_the_readme_table():
    """Every architecture of docs/slify.md's table converts or is refused as it says (small configs, meta device)."""
    rows = slify_survey_rows()
    assert len(rows) >= 12 and {r['arch'] for r in rows} >= {
        'ViT', 'DeiT', 'DeiT III', 'ViT + registers', 'FlexiViT', 'EVA-02', 'BEiT', 'PiT', 'Swin', 'Swin V2', 'CaiT',
        'XCiT', 'LeViT', 'MViTv2'}
    table = {}
    for line in (ROOT / 'docs' / 'slify.md').read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip('|').split('|')]
        if len(cells) >= 4 and cells[1].startswith('`'):
            table[cells[1].strip('`')] = cells[2]
    for row in rows:
        assert row['model'] in table, f"{row['model']} is missing from the docs/slify.md table"
        assert table[row['model']] == row['outcome'], row['model']
    assert len(table) == len(rows)


# ---------------------------------------------------------------------------------------------------------------------
# timm's unmodified train.py / validate.py (slow; skipped without TIMM_REPO)

def _script(path: Path) -> list:
    """Python's arguments that run a timm script without putting its folder on sys.path, so a timm checkout beside it
    does not shadow installed timm: what ``python -P`` does, on Python 3.10 too (which has no ``-P``)."""
    return ['-c', 'import runpy, sys; del sys.argv[0]; runpy.run_path(sys.argv[0], run_name="__main__")', str(path)]


@pytest.mark.slow
def test_train_and_validate_scripts_with_the_slify_entry(tmp_path):
    from test_timm_scripts import TIMM_REPO, _image_folder, _run
    if not TIMM_REPO or not (Path(TIMM_REPO) / 'train.py').exists():
        pytest.skip("set TIMM_REPO to a folder with timm's train.py / validate.py")
    data = _image_folder(tmp_path / 'data')
    out = tmp_path / 'output'
    model_args = ['--model', 'slify', '--num-classes', '3', '--model-kwargs', 'base=vit_tiny_patch16_224', 'depth=2',
                  'img_size=32', 'lsa_mask=False', '--input-size', '3', '32', '32']
    log = _run([
        *_script(Path(TIMM_REPO) / 'train.py'), str(data), *model_args, '--epochs', '1', '--batch-size', '8',
        '--workers', '0', '--opt', 'adamw', '--lr', '1e-3', '--warmup-epochs', '0', '--output', str(out),
        '--experiment', 'slify', '--no-prefetcher', '--device', 'cpu',
    ], cwd=tmp_path)
    assert 'Model slify created' in log
    # the data config is the base's (vit_tiny_patch16_224: mean / std 0.5, crop 0.9), not a generic default
    assert re.search(r'mean: \(0\.5, 0\.5, 0\.5\)', log) and re.search(r'crop_pct: 0\.9\b', log), log[-3000:]
    checkpoint = out / 'slify' / 'model_best.pth.tar'
    from timm_sl.tools.runs import _weights_only_load  # train.py stores its args next to the weights
    state = _weights_only_load(str(checkpoint))['state_dict']
    assert 'blocks.0.attn.temperature' in state and 'patch_embed.proj.norm.weight' in state
    if not hasattr(torch.serialization, 'safe_globals'):  # test_timm_refuses_train_py_checkpoints_below_torch_2_5
        pytest.skip(f"torch {torch.__version__} has no safe_globals: timm's validate.py refuses train.py checkpoints")
    log = _run([*_script(Path(TIMM_REPO) / 'validate.py'), str(data / 'val'), *model_args,
                '--checkpoint', str(checkpoint), '--batch-size', '8', '--workers', '0', '--no-prefetcher',
                '--device', 'cpu'], cwd=tmp_path)
    assert 'top1' in log


# ---------------------------------------------------------------------------------------------------------------------
# timm's own tests/test_models.py over the `slify` entry (slow; fetches timm's sdist once, see tests/timm_suite.py)

_BASE_PLUGIN = """
import os
import timm

_create_model = timm.create_model


def create_model(model_name, *args, **kwargs):
    # timm's suite creates models by name alone: give the `slify` entry its base
    if model_name.split('.')[0] == 'slify':
        kwargs.setdefault('base', os.environ['TIMM_SL_SLIFY_BASE'])
    return _create_model(model_name, *args, **kwargs)


timm.create_model = create_model
"""


@pytest.mark.slow
@pytest.mark.parametrize('base,non_std', [('vit_tiny_patch16_224', True)])
def test_timm_model_suite_passes_for_the_slify_entry(base, non_std, tmp_path):
    import subprocess
    import timm_suite
    tests = tmp_path / 'timm_tests'
    test_file = timm_suite.prepare(timm_suite.fetch_timm_tests(), tests)
    source = test_file.read_text()
    if non_std:  # counted with its base family, as timm counts the base
        source = timm_suite._extend_list(source, 'NON_STD_FILTERS', ['slify'])
    test_file.write_text(timm_suite._extend_list(source, 'FEAT_INTER_FILTERS', ['slify_entry']))
    (tmp_path / '_timm_sl_select.py').write_text(timm_suite._SELECT_PLUGIN)
    (tmp_path / '_timm_sl_slify_base.py').write_text(_BASE_PLUGIN)
    env = dict(os.environ, TIMM_SL_SUITE_MODELS='slify', TIMM_SL_SLIFY_BASE=base)
    env['PYTHONPATH'] = os.pathsep.join(filter(None, [str(tmp_path), env.get('PYTHONPATH')]))
    env.pop('GITHUB_ACTIONS', None)
    cmd = [sys.executable, '-m', 'pytest', str(test_file), '-p', '_timm_sl_slify_base', '-p', '_timm_sl_select',
           '-p', 'no:cacheprovider', '-o', 'addopts=', '-W', 'ignore::pytest.PytestUnknownMarkWarning', '-q', '-rfEs']
    result = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=1800)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert re.search(r'\d+ passed', result.stdout)


def test_optimizer_factory_does_not_decay_the_temperatures():
    """The converted model keeps its base class's no_weight_decay(); timm's factory leaves 1-d tensors undecayed."""
    from timm.optim import create_optimizer_v2
    model = slify('vit_tiny_patch16_224', depth=1, img_size=32)
    optimizer = create_optimizer_v2(model, 'adamw', lr=1e-3, weight_decay=0.05)
    temperature = model.blocks[0].attn.temperature
    group = next(g for g in optimizer.param_groups if any(p is temperature for p in g['params']))
    assert group['weight_decay'] == 0.


def test_converted_weights_of_the_models_class_count_keep_their_head(tmp_path):
    """A converted model's 10-class weights named by the base's cfg (its cfg: 1000 classes) loaded with
    num_classes=10 through the slify model lost their head to timm's class-count rule: a random classifier."""
    kw = dict(depth=1, img_size=32, patch_size=4, num_classes=10)
    source = slify('deit_tiny_patch16_224', **kw).eval()
    torch.save(source.state_dict(), tmp_path / 'mine.pth')
    loaded = timm.create_model('slify', base='deit_tiny_patch16_224', pretrained=True,
                               pretrained_cfg_overlay=dict(file=str(tmp_path / 'mine.pth')), **kw).eval()
    x = torch.randn(2, 3, 32, 32)
    with torch.no_grad():
        torch.testing.assert_close(loaded(x), source(x), rtol=0, atol=0)


def test_the_slify_model_given_a_model_as_base_says_so_in_one_line():
    """timm.create_model('slify', base=model) put the whole model's repr, a line per layer, in its message."""
    base = timm.create_model('vit_tiny_patch16_224', depth=1, img_size=32, patch_size=4)
    with pytest.raises(ValueError) as refused:
        timm.create_model('slify', base=base)
    assert str(refused.value) == ('base=VisionTransformer(...) is invalid: the slify model builds its base from a '
                                  'name; allowed: a timm model name, or timm_sl.slify(model) to convert a model '
                                  'instance.')


@pytest.mark.parametrize('make', [
    lambda **kw: slify('vit_tiny_patch16_224', **kw),
    lambda **kw: timm.create_model('slify', base='vit_tiny_patch16_224', **kw),
], ids=['slify', 'slify_model'])
def test_features_only_checks_the_model_kwargs_as_the_full_model_does(make):
    """With features_only=True, qkv_bias='maybe' built (taken as True) while the full model refused it."""
    with pytest.raises(ValueError) as refused:
        make(features_only=True, out_indices=(0,), depth=1, img_size=32, qkv_bias='maybe')
    assert str(refused.value) == ("slify of vit_tiny_patch16_224 (VisionTransformer): qkv_bias='maybe' is invalid; "
                                  "allowed: True or False.")
    with pytest.raises(ValueError, match=r'drop_rate=nan is invalid'):
        make(features_only=True, out_indices=(0,), depth=1, img_size=32, drop_rate=float('nan'))
    features = make(features_only=True, depth=1, img_size=32, qkv_bias=False, out_indices=(0,))
    assert features.model.blocks[0].attn.qkv.bias is None


@pytest.mark.parametrize('name,kwargs', [('vit_small_patch16_224', dict(embed_dim=390)),  # 6 heads; the class: 12
                                         ('vit_medium_patch16_gap_256', dict(class_token=False))])  # pools 'avg'
def test_kwargs_are_checked_against_the_registered_config_not_the_class_defaults(name, kwargs):
    """slify('vit_small_patch16_224', embed_dim=390) was refused as 'embed_dim=390, num_heads=12' (the class's default
    head count, not the model's 6), and a gap ViT's class_token=False as token pooling without a class token."""
    model = slify(name, depth=1, **kwargs)
    assert all(getattr(model, k, None) == v or getattr(model, 'has_class_token', None) is v for k, v in kwargs.items())
    assert model.blocks[0].attn.num_heads == timm.create_model(name, depth=1, **kwargs).blocks[0].attn.num_heads


_OF = 'slify of {} ({}): '
_REGISTERED_REFUSALS = [
    ('vit_tiny_patch16_224', dict(num_heads=5, img_size=32, depth=1),
     _OF.format('vit_tiny_patch16_224', 'VisionTransformer') + 'embed_dim=192, num_heads=5: the heads do not divide '
     'the width; allowed: a num_heads that divides embed_dim (or an embed_dim that is a multiple of num_heads).'),
    ('vit_small_patch16_224', dict(embed_dim=200, img_size=32, depth=1),
     _OF.format('vit_small_patch16_224', 'VisionTransformer') + 'embed_dim=200, num_heads=6: the heads do not divide'),
    ('swin_tiny_patch4_window7_224', dict(depths=2), _OF.format('swin_tiny_patch4_window7_224', 'SwinTransformer')
     + 'depths=2 is invalid; allowed: a non-empty tuple of ints, one per stage.'),
    ('swin_tiny_patch4_window7_224', dict(num_heads=(3, 6)),
     _OF.format('swin_tiny_patch4_window7_224', 'SwinTransformer') + 'depths=(2, 2, 6, 2), num_heads=(3, 6): 4 stages, '
     '2 num_heads; allowed: at least as many num_heads as stages (4).'),
    ('pit_ti_224', dict(depth=(1, 1)), _OF.format('pit_ti_224', 'PoolingVisionTransformer')
     + 'depth=(1, 1), base_dims=[32, 32, 32]: 2 stages, 3 base_dims; allowed: as many base_dims as stages (2).'),
    ('pit_ti_224', dict(depth=1), _OF.format('pit_ti_224', 'PoolingVisionTransformer')
     + 'depth=1 is invalid; allowed: a non-empty tuple of ints, one per stage.'),
]


@pytest.mark.parametrize('via_entry', [False, True], ids=['slify', 'entry'])
@pytest.mark.parametrize('name,kwargs,message', _REGISTERED_REFUSALS,
                         ids=['vit-heads', 'vit-width', 'swin-depths-int', 'swin-heads-short', 'pit-depth-short',
                              'pit-depth-int'])
def test_a_kwarg_the_named_models_other_values_refuse_is_named(via_entry, name, kwargs, message):
    """slify('vit_tiny_patch16_224', num_heads=5) ended on timm's 'dim should be divisible by num_heads', Swin's
    depths=2 on "'int' object is not iterable", num_heads=(3, 6) on an IndexError, and a PiT given depth=(1, 1) was
    built, to fail at its first forward on a LayerNorm shape: each is one line naming the kwarg, the named model's
    other value it disagrees with, and what is allowed."""
    with pytest.raises(ValueError) as refused:
        if via_entry:
            timm.create_model('slify', base=name, **kwargs)
        else:
            slify(name, **kwargs)
    assert str(refused.value).startswith(message), str(refused.value)
    assert '\n' not in str(refused.value)


def test_per_stage_kwargs_that_fit_the_named_model_build():
    """A shorter Swin (fewer depths than heads, as timm takes it) and a PiT given all its stage tuples still build."""
    assert len(slify('swin_tiny_patch4_window7_224', depths=(1, 1), img_size=64).layers) == 2
    pit = slify('pit_ti_224', depth=(1, 1), heads=(2, 4), base_dims=(32, 32))
    assert pit(torch.randn(1, 3, 224, 224)).shape == (1, 1000)


@pytest.mark.parametrize('make', [
    lambda **kw: slify('vit_tiny_patch16_224', img_size=32, depth=1, **kw),
    lambda **kw: timm.create_model('slify', base='vit_tiny_patch16_224', img_size=32, depth=1, **kw),
], ids=['slify', 'slify_model'])
@pytest.mark.parametrize('value', ['False', 'no', 0])
def test_pretrained_that_is_no_bool_is_refused_before_any_download(make, value, monkeypatch):
    """slify(name, pretrained='False') took the text for True and went to download the base's weights."""
    monkeypatch.setattr(timm.models._builder, 'load_pretrained', lambda *a, **k: pytest.fail('loaded weights'))
    with pytest.raises(ValueError) as refused:
        make(pretrained=value)
    assert str(refused.value) == f'pretrained={value!r} is invalid; allowed: True or False.'


# ---------------------------------------------------------------------------------------------------------------------
# timm's whole zoo, checked for meaning

@pytest.mark.parametrize('name,kwargs,classes', [
    ('xcit_nano_12_p16_224', dict(spt=False), ['timm.models.xcit.XCA']),  # converted its 2 class attentions only
    ('convit_tiny', {}, ['timm.models.convit.GPSA', 'timm.models.convit.MHSA']),
    ('vit_base_patch16_xp_224', {}, ['timm.models.vision_transformer.ParallelScalingBlock']),
    ('vit_dpwee_patch16_reg1_gap_256', {}, ['timm.models.vision_transformer.DiffParallelScalingBlock']),
])
def test_attention_under_another_class_name_is_named_in_the_refusal(name, kwargs, classes):
    """XCiT with spt=False converted its two class-attention layers, left its cross-covariance attention (XCA) as it
    was and reported the model converted; ConViT and the parallel-block ViTs were refused with 'no attention layer'."""
    reasons = '; '.join(f'attention class {c} has no LSA form' for c in classes)
    assert slify_refusal(name, **kwargs) == f'cannot slify {name}: {reasons}.'


@pytest.mark.parametrize('name,kwargs', [('vit_tiny_patch16_224', dict(depth=1)), ('pit_ti_224', {}),
                                         ('vit_tiny_patch16_224', dict(depth=1, lsa=False))])
def test_spt_post_norm_on_a_stem_without_a_norm_is_refused(name, kwargs):
    """spt_post_norm=True on a stem with no norm after its projection was taken and acted on nothing."""
    assert slify_refusal(name, spt_post_norm=True, **kwargs) == (
        f'cannot slify {name}: spt_post_norm=True keeps the norm after patch_embed, and it has none; allowed: '
        f'spt_post_norm left out.')


@pytest.mark.parametrize('make', [
    lambda **kw: slify('vit_tiny_patch16_224', **kw),
    lambda **kw: slify_refusal('vit_tiny_patch16_224', **kw),
    lambda **kw: timm.create_model('slify', base='vit_tiny_patch16_224', **kw)], ids=['slify', 'refusal', 'entry'])
def test_embed_norm_layer_that_spt_would_drop_is_refused(make):
    """slify(name, embed_norm_layer='layernorm') built the asked-for norm and dropped it with the convolution: the
    model had no norm after its patch embedding, without a word."""
    with pytest.raises(ValueError, match=r"^slify of vit_tiny_patch16_224: embed_norm_layer='layernorm' asks for a "
                                         r"norm after the patch embedding, which SPT drops .*; allowed: "
                                         r"spt_post_norm=True to keep it, spt=False, or embed_norm_layer left out\.$"):
        make(depth=1, embed_norm_layer='layernorm')


def test_embed_norm_layer_is_kept_with_spt_post_norm():
    kept = slify('vit_tiny_patch16_224', depth=1, img_size=32, patch_size=8, embed_dim=32, num_heads=2,
                 embed_norm_layer='layernorm', spt_post_norm=True)
    assert isinstance(kept.patch_embed.norm, nn.LayerNorm) and kept.patch_embed.norm.normalized_shape == (32,)


def test_a_kwarg_a_config_class_takes_is_not_called_unknown():
    """NaFlexVit takes depth through its **kwargs (its config's fields): a build timm refused for another kwarg
    (global_pool='maxx', or out_indices past depth=1) was reported as 'got unknown model kwargs ['depth']'."""
    name = 'naflexvit_base_patch16_gap'
    with pytest.raises(AssertionError, match=r'^Only avg, avgmax, max, token or map pooling'):
        slify_refusal(name, spt=False, depth=1, global_pool='maxx')
    with pytest.raises(TypeError, match=rf"^slify of {name} \(NaFlexVit\) got unknown model kwargs \['foo'\]; ") as e:
        slify_refusal(name, spt=False, depth=1, foo=3)
    allowed = str(e.value).split('; allowed: ')[1].rstrip('.').split(', ')
    assert {'depth', 'embed_dim', 'num_heads', 'global_pool', 'img_size', 'spt'} <= set(allowed)  # its config's too


def test_a_refused_model_given_embed_norm_layer_is_told_why_it_is_refused():
    """slify of a model slify refuses, given embed_norm_layer, answered with the embed-norm line and its advice
    (spt_post_norm=True), which led only to the refusal it hid."""
    message = slify_refusal('naflexvit_base_patch16_gap', depth=1, embed_norm_layer=nn.LayerNorm)
    assert message.startswith('cannot slify naflexvit_base_patch16_gap: no timm PatchEmbed'), message
