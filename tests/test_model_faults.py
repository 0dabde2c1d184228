"""Model faults found by held-back checks (issue 12 §4, §6): T2T's fixed table on resize, exact channel adaptation,
empty batches, the load message after adaptation, class attention without a mask."""
import functools
import logging
import re

import pytest
import torch
from torch import nn

import timm
from timm_sl.layers import ShiftedPatchProjection
from timm_sl.models._filters import adapt_spt_in_chans
from timm_sl.models.sl_cait import LocalityClassAttn

from sl_models import FAST_MODELS

SMALL = dict(depth=2)  # two blocks keep every family fast; the faults do not depend on depth
SMALL_KWARGS = {'sl_pit_32': dict(depth=(1, 1, 1)), 'sl_swin_32': dict(depths=(1, 1, 1))}


def _small(name: str) -> dict:
    return SMALL_KWARGS.get(name, SMALL)


def _randomise(model: nn.Module) -> nn.Module:
    """Move every parameter away from its init (LayerNorm affines off 1 / 0, as after training)."""
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.3)
    return model


# ---- T2T: set_input_size keeps the fixed sin/cos table fixed ----

def test_t2t_set_input_size_rebuilds_the_fixed_table():
    model = timm.create_model('sl_t2t_32', **SMALL)
    params = sum(p.numel() for p in model.parameters())
    model.set_input_size(img_size=48)
    fresh = timm.create_model('sl_t2t_32', img_size=48, **SMALL)
    assert not isinstance(model.pos_embed, nn.Parameter) and not model.pos_embed.requires_grad
    assert 'pos_embed' in dict(model.named_buffers()) and 'pos_embed' in model.state_dict()
    assert model.pos_embed.shape == (1, 145, 256)  # 12x12 grid + class token
    torch.testing.assert_close(model.pos_embed, fresh.pos_embed, rtol=0, atol=0)
    assert sum(p.numel() for p in model.parameters()) == params
    assert model(torch.randn(1, 3, 48, 48)).shape == (1, 100)
    with pytest.raises(ValueError, match='T2TEmbed cannot change patch_size'):
        model.set_input_size(img_size=32, patch_size=8)
    torch.testing.assert_close(model.pos_embed, fresh.pos_embed, rtol=0, atol=0)  # a refused resize leaves it


@functools.lru_cache(maxsize=None)  # one model per family: a refused resize leaves it as it was (asserted)
def _resizable(name: str) -> nn.Module:
    if name == 'slify':
        from timm_sl import slify
        return slify('vit_tiny_patch16_224', depth=1, img_size=32, patch_size=4)
    return timm.create_model(name, **_small(name))


@pytest.mark.parametrize('name', ['sl_vit_32', 'sl_t2t_32', 'sl_swin_32', 'slify'])
@pytest.mark.parametrize('size', ['64', 64.0, (64,), 0, -32, (0, 32), True])
def test_set_input_size_refuses_what_the_constructor_refuses(name, size):
    """set_input_size(img_size=0 / True / '64' / (64,) / 64.0) gave raw TypeError / IndexError / RuntimeError /
    ZeroDivisionError, or resized silently to nothing (sl_t2t_32 at img_size=True: a 1x1 image, a 2-entry table):
    one line naming the value, as the constructor does, the model left as it was."""
    model = _resizable(name)
    before = model.patch_embed.img_size, model.patch_embed.grid_size
    with pytest.raises(ValueError, match=rf'^img_size={re.escape(repr(size))} is invalid; allowed: an int > 0 or a '
                                         r'pair of them\.$'):
        model.set_input_size(img_size=size)
    assert (model.patch_embed.img_size, model.patch_embed.grid_size) == before


@pytest.mark.parametrize('name,size,patch', [('sl_vit_32', 2, 4), ('sl_cait_32', 2, 4), ('sl_swin_32', 1, 2)])
def test_an_image_smaller_than_a_patch_is_refused(name, size, patch):
    """An img_size below the patch built a model of a 0x0 grid that no input of that size could run (Swin: a
    ZeroDivisionError while building)."""
    with pytest.raises(ValueError, match=rf': img_size={size}, patch_size={patch}(, window_size=4 \(stage 0\))? give '
                                         r'a 0x0 token grid; allowed: at least one token per axis'):
        timm.create_model(name, img_size=size)


def test_t2t_of_one_soft_split_resizes():
    """A T2T of one soft split (no token layer) failed its resize with IndexError (it read the first token layer)."""
    model = timm.create_model('sl_t2t_32', soft_splits=((4, 4, 0),), patch_size=4, depth=1)
    model.set_input_size(img_size=48)
    assert model.pos_embed.shape == (1, 145, 256) and model(torch.randn(1, 3, 48, 48)).shape == (1, 100)


# ---- grey-channel adaptation is exact, with or without a projection bias ----

@pytest.mark.parametrize('bias', [True, False])
@pytest.mark.parametrize('src,dst', [(3, 1), (1, 3), (3, 6)])
def test_spt_channel_adaptation_is_exact(bias, src, dst):
    x = torch.randn(2, min(src, dst), 16, 16, dtype=torch.float64)
    # the same image given with either channel count: one copy per channel group
    x_src, x_dst = x.repeat(1, src // x.shape[1], 1, 1), x.repeat(1, dst // x.shape[1], 1, 1)
    for dtype, tol in ((torch.float64, 1e-10), (torch.float32, 1e-5)):  # float64: exact up to rounding
        source = _randomise(ShiftedPatchProjection(src, 24, 4, bias=bias, dtype=dtype))
        target = ShiftedPatchProjection(dst, 24, 4, bias=bias, dtype=dtype)
        state = dict(source.state_dict())
        assert adapt_spt_in_chans(state, '', target)
        target.load_state_dict(state)
        torch.testing.assert_close(target(x_dst.to(dtype)), source(x_src.to(dtype)), rtol=tol, atol=tol)


GREY_CASES = [(name, {}) for name in FAST_MODELS] + [('sl_vit_32', dict(pre_norm=True))]


@pytest.mark.parametrize('name,kwargs', GREY_CASES, ids=[f'{n}-{k}' for n, k in GREY_CASES])
def test_grey_checkpoint_adaptation_is_exact(name, kwargs, tmp_path, caplog):
    # float64 throughout (weights, adaptation, SPT): what remains is the map, not rounding
    kwargs = dict(_small(name), dtype=torch.float64, **kwargs)
    rgb = _randomise(timm.create_model(name, **kwargs)).eval()
    torch.save(rgb.state_dict(), tmp_path / 'rgb.pth')
    with caplog.at_level(logging.INFO):
        grey = timm.create_model(name, pretrained=True, pretrained_cfg_overlay=dict(file=str(tmp_path / 'rgb.pth')),
                                 in_chans=1, **kwargs).eval()
    g = torch.randn(2, 1, 32, 32, dtype=torch.float64)
    with torch.no_grad():
        expected, out = rgb(g.expand(-1, 3, -1, -1)), grey(g)
    assert expected.abs().mean() > 0.1  # outputs of a size where a wrong map would show
    torch.testing.assert_close(out, expected, rtol=0, atol=1e-5)
    # the log says what happened: adapted by the SL filter, not timm's "weights already match ... Loading unchanged"
    messages = [r.getMessage() for r in caplog.records]
    assert not any('Loading unchanged' in m or 'already match' in m for m in messages), messages
    assert any(m.startswith('Adapted pretrained ') and 'from 3 to 1 input channel(s)' in m for m in messages), messages


def test_inexact_channel_count_warns(caplog):
    state = {f'proj.{k}': v for k, v in ShiftedPatchProjection(3, 8, 2).state_dict().items()}
    with caplog.at_level(logging.INFO):
        adapt_spt_in_chans(state, 'proj.', ShiftedPatchProjection(4, 8, 2))
    assert [r.levelname for r in caplog.records] == ['INFO', 'WARNING']
    assert caplog.records[1].getMessage() == (
        'proj: 3 -> 4 input channels is approximate (weights tiled and rescaled by 3/4); the map is exact for 1 '
        'channel or a multiple of 3.')


@pytest.mark.parametrize('source,kwargs', [
    ('sl_vit_64', dict(num_classes=100)),  # patch 8 over 3 channels is as wide as patch 4 over 12
    ('sl_vit_32', dict(shift_directions='all')),  # 9 copies
])
def test_checkpoint_of_another_patch_or_shift_is_refused_not_channel_adapted(source, kwargs, tmp_path):
    """A stem width that reads as another channel count than the checkpoint's is another patch / shift layout: one
    line naming the shapes, never a silent 'adaptation' from a channel count the weights were not made for."""
    model = timm.create_model(source, depth=1, **{k: v for k, v in kwargs.items() if k != 'num_classes'},
                              num_classes=kwargs.get('num_classes', 100))
    torch.save(model.state_dict(), tmp_path / 'other.pth')
    with pytest.raises(ValueError, match=r'^patch_embed\.proj\.weight has shape .* does not fit this model') as info:
        timm.create_model('sl_vit_32', depth=1, pretrained=True,
                          pretrained_cfg_overlay=dict(file=str(tmp_path / 'other.pth')))
    assert '\n' not in str(info.value)
    assert "over 3 input channel(s), as the pretrained cfg's input_size declares" in str(info.value)


@pytest.mark.parametrize('source,kwargs', [
    (dict(), dict(spt=False)),  # SPT's shifted copies read as 15 channels, "adapted" to 3 and loaded silently
    (dict(spt=False), dict()),
    (dict(shift_directions='all'), dict()),
])
def test_t2t_checkpoint_of_another_spt_layout_is_refused_not_channel_adapted(source, kwargs, tmp_path):
    """T2T's first token layer reads (copies x channels x k x k) values: a width of another copy count is another
    spt / shift_directions, refused in one line as the SPT stems refuse theirs, never loaded as adapted channels."""
    small = dict(depth=1, lsa=False)  # lsa off: no temperature keys, so nothing else stops a wrong load
    torch.save(timm.create_model('sl_t2t_32', **small, **source).state_dict(), tmp_path / 'other.pth')
    with pytest.raises(ValueError, match=r'^patch_embed\.stages\.0\.layer\.attn\.qkv\.weight has shape .* does not '
                                         r'fit this model') as info:
        timm.create_model('sl_t2t_32', pretrained=True, pretrained_cfg_overlay=dict(file=str(tmp_path / 'other.pth')),
                          **small, **kwargs)
    assert '\n' not in str(info.value)
    assert "over 3 input channel(s), as the pretrained cfg's input_size declares" in str(info.value)


def test_a_grey_checkpoint_loads_into_rgb_when_its_cfg_says_grey(tmp_path):
    """The checkpoint's channels are the ones its cfg declares (timm's convention): declared, a grey checkpoint is
    adapted to RGB exactly; undeclared, its width is refused (it could as well be another patch size)."""
    grey = _randomise(timm.create_model('sl_vit_32', in_chans=1, depth=1)).eval()
    torch.save(grey.state_dict(), tmp_path / 'grey.pth')
    with pytest.raises(ValueError, match='does not fit this model'):
        timm.create_model('sl_vit_32', depth=1, pretrained=True,
                          pretrained_cfg_overlay=dict(file=str(tmp_path / 'grey.pth')))
    rgb = timm.create_model('sl_vit_32', depth=1, in_chans=3, pretrained=True, pretrained_cfg_overlay=dict(
        file=str(tmp_path / 'grey.pth'), input_size=(1, 32, 32))).eval()
    g = torch.randn(2, 1, 32, 32)
    with torch.no_grad():
        torch.testing.assert_close(rgb(g.expand(-1, 3, -1, -1)), grey(g), atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize('name,stem', [('sl_vit_32', 'patch_embed.proj'), ('sl_pit_32', 'patch_embed.conv')])
def test_conv_stem_grey_load_keeps_timms_message(name, stem, tmp_path, caplog):
    """Without SPT the stem is a convolution (PiT's named ``conv``, as in timm): timm adapts it, and says so."""
    rgb = timm.create_model(name, spt=False, **_small(name)).eval()
    torch.save(rgb.state_dict(), tmp_path / 'rgb.pth')
    with caplog.at_level(logging.INFO):
        grey = timm.create_model(name, spt=False, pretrained=True, in_chans=1, **_small(name),
                                 pretrained_cfg_overlay=dict(file=str(tmp_path / 'rgb.pth'))).eval()
    assert any(f'Converted input conv {stem}' in r.getMessage() for r in caplog.records)
    g = torch.randn(1, 1, 32, 32)
    torch.testing.assert_close(grey(g), rgb(g.expand(-1, 3, -1, -1)), rtol=0, atol=1e-5)


def test_spt_checkpoint_into_a_conv_stem_names_the_keys(tmp_path):
    """An SPT checkpoint into a baseline (spt=False) model: load_state_dict's list of keys, as every family gives,
    never an AttributeError about a stem module the baseline does not have."""
    torch.save(timm.create_model('sl_pit_32', lsa=False, depth=(1, 1, 1)).state_dict(), tmp_path / 'spt.pth')
    with pytest.raises(RuntimeError, match='Unexpected key.*patch_embed.proj.norm.weight'):
        timm.create_model('sl_pit_32', spt=False, lsa=False, depth=(1, 1, 1), pretrained=True,
                          pretrained_cfg_overlay=dict(file=str(tmp_path / 'spt.pth')))


# ---- empty batches ----

# timm's own Swin block reshapes with -1 (window partition, block forward), so timm's swin_* fails on B = 0 too
EMPTY_BATCH = [pytest.param(n, marks=pytest.mark.xfail(strict=True, raises=RuntimeError, reason="timm's Swin block "
                                                        "cannot run an empty batch")) if 'swin' in n else n
               for n in FAST_MODELS]


@pytest.mark.parametrize('name', EMPTY_BATCH)
def test_empty_batch(name):
    model = timm.create_model(name, **_small(name)).eval()
    out = model(torch.randn(0, 3, 32, 32))
    assert out.shape == (0, model.num_classes)


def test_t2t_empty_batch_nchw_tokens():
    model = timm.create_model('sl_t2t_32', **SMALL)
    model.patch_embed.output_fmt = timm.layers.Format.NCHW
    assert model.patch_embed(torch.randn(0, 3, 32, 32)).shape == (0, 256, 8, 8)


# ---- class attention refuses a diagonal mask ----

def test_class_attention_refuses_diag_mask():
    message = (r'^diag_mask=True is not supported by LocalityClassAttn: class attention has no diagonal mask '
               r'\(the reference applies none\); allowed: diag_mask=False\.$')
    with pytest.raises(ValueError, match=message):
        LocalityClassAttn(48, num_heads=4, diag_mask=True)
    model = timm.create_model('sl_cait_32', depth=1, lsa_mask=True)  # the talking-heads layers are masked, CA not
    assert model.blocks[0].attn.diag_mask and not model.blocks_token_only[0].attn.diag_mask


def test_warm_start_public_paths():
    """warm_start is public at the package root and in timm_sl.models (docs/hub.md)."""
    import timm_sl
    from timm_sl.models import warm_start
    assert timm_sl.warm_start is warm_start


# ---- an SPT / pooling option its switch leaves unused is refused, not silently dropped ----

UNUSED_OPTIONS = [  # (name, kwargs, the option and the switch the message names)
    ('sl_vit_32', dict(spt=False, shift_ratio=0.25), 'shift_ratio=0.25 is unused with spt=False'),
    ('sl_cait_32', dict(spt=False, shift_directions='all'), "shift_directions='all' is unused with spt=False"),
    ('sl_t2t_32', dict(spt=False, shift_ratio=1.0), 'shift_ratio=1.0 is unused with spt=False'),
    ('sl_swin_32', dict(spt=False, spt_pool=False, shift_directions='cardinal'),
     "shift_directions='cardinal' is unused with spt=False, spt_pool=False"),
    ('sl_pit_32', dict(spt=False, shift_directions='all'), "shift_directions='all' is unused with spt=False"),
    ('sl_pit_32', dict(pool_layout='timm'), "pool_layout='timm' is unused with spt_pool following spt=True"),
    ('sl_pit_xs', dict(spt_pool=True, pool_layout='pointwise'), "pool_layout='pointwise' is unused with spt_pool=True"),
]


@pytest.mark.parametrize('name,kwargs,message', UNUSED_OPTIONS,
                         ids=[f'{n}-{"-".join(k)}' for n, k, _ in UNUSED_OPTIONS])
def test_an_option_its_switch_leaves_unused_is_refused(name, kwargs, message):
    """spt=False, shift_ratio=0.25 built the baseline and dropped the ratio: the user believed it took effect."""
    with pytest.raises(ValueError, match=rf'^\w+: {re.escape(message)}; allowed: \w+ left out, or \w+=\w+\.$'):
        with torch.device('meta'):
            timm.create_model(name, **kwargs)


@pytest.mark.parametrize('name,kwargs', [
    ('sl_pit_32', dict(spt=False, spt_pool=True, shift_directions='all')),  # Spool's copies
    ('sl_swin_32', dict(spt=False, spt_pool=True, shift_directions='cardinal')),
    ('sl_pit_32', dict(spt_pool=False, pool_layout='timm')),
    ('sl_vit_32', dict(lsa=False, shift_ratio=0.25)),
])
def test_an_option_its_switches_use_builds(name, kwargs):
    with torch.device('meta'):
        model = timm.create_model(name, **kwargs)
    assert model.sl_args.shift_directions == kwargs.get('shift_directions', 'diagonal')


@pytest.mark.parametrize('given,switches,expected', [
    (dict(depth=6), dict(spt=False, lsa=False), dict(depth=6, spt=False, lsa=False)),
    (dict(shift_ratio=0.25), dict(spt=False, lsa=False), dict(spt=False, lsa=False)),  # SPT's option goes with SPT
    (dict(shift_ratio=0.25), dict(lsa=False), dict(shift_ratio=0.25, lsa=False)),
    (dict(lsa_mask=True, lsa_learn_temp=False), dict(spt=False, lsa=False), dict(spt=False, lsa=False)),
    (dict(lsa_mask=False), dict(spt_pool=False), dict(lsa_mask=False, spt_pool=False)),  # LSA on: kept
    (dict(lsa_temp_ratio=2.0), dict(spt=False, lsa=False), dict(lsa_temp_ratio=2.0, spt=False, lsa=False)),
    (dict(lsa_mask=False), dict(spt=False, lsa=False, lsa_mask=True), dict(spt=False, lsa=False, lsa_mask=True)),
])
def test_kwargs_under_other_switches_lose_what_those_switches_turn_off(given, switches, expected):
    """One user's kwargs given to a model and to its baseline: an lsa_mask / lsa_learn_temp given outlived the
    baseline's lsa=False (the 'baseline' trained as the paper's M or T), SPT's options were refused with SPT off. The
    switches' own settings win; lsa_temp_ratio stays (Table 1 sets it on the baseline)."""
    from timm_sl.layers import with_switches
    assert with_switches(given, switches) == expected


@pytest.mark.parametrize('name', FAST_MODELS)
def test_a_saved_state_dict_of_the_models_class_count_keeps_its_head(name, tmp_path):
    """A 10-class state dict loaded with num_classes=10 and pretrained_cfg_overlay=dict(file=...) lost its head:
    timm dropped it because the cfg says 100 classes, and the model answered with a random classifier, silently.
    A head of the model's shape is kept; one of another class count is still dropped (timm's fine-tuning start)."""
    torch.manual_seed(0)
    saved = timm.create_model(name, num_classes=10, **_small(name)).eval()
    _randomise(saved)
    torch.save(saved.state_dict(), tmp_path / 'mine.pth')
    overlay = dict(file=str(tmp_path / 'mine.pth'))
    loaded = timm.create_model(name, pretrained=True, pretrained_cfg_overlay=overlay, num_classes=10,
                               **_small(name)).eval()
    x = torch.randn(2, 3, 32, 32)
    with torch.no_grad():
        torch.testing.assert_close(loaded(x), saved(x), rtol=0, atol=0)
    assert loaded.pretrained_cfg['num_classes'] == 10
    other = timm.create_model(name, pretrained=True, pretrained_cfg_overlay=overlay, num_classes=7, **_small(name))
    assert other.pretrained_cfg['num_classes'] == 100 and other.get_classifier().weight.shape[0] == 7


@pytest.mark.parametrize('name', FAST_MODELS)
def test_a_checkpoint_of_other_lsa_switches_is_refused_in_one_line(name, tmp_path):
    """Weights trained with lsa=False loaded into the default (LSA) model, or the reverse, ended in load_state_dict's
    multi-line list of every block's temperature key, which said neither why nor what to pass."""
    for saved_kw, load_kw, said in [(dict(lsa=False), {}, 'has no learned LSA temperatures'),
                                    ({}, dict(lsa_learn_temp=False), 'has learned LSA temperatures')]:
        torch.save(timm.create_model(name, **saved_kw, **_small(name)).state_dict(), tmp_path / 'w.pth')
        pattern = rf'^this checkpoint {said} \(\S+\.temperature and \d+ more\).*allowed: '
        with pytest.raises(ValueError, match=pattern) as e:
            timm.create_model(name, pretrained=True, pretrained_cfg_overlay=dict(file=str(tmp_path / 'w.pth')),
                              **load_kw, **_small(name))
        assert '\n' not in str(e.value)
