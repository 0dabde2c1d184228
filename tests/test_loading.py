"""Weights into sl_ models: timm's pretrained path through the families' checkpoint filters (input channels adapted
exactly, a head kept where it fits, other SPT layouts and LSA switches refused in one line), a conv stem's load,
timm's load_checkpoint, warm_start, and files that are damaged or would execute pickled code."""
import logging
import os
import re

import pytest
import torch
from safetensors.torch import save_file

import timm
from timm.models import load_checkpoint
from timm_sl.layers import ShiftedPatchProjection
from timm_sl.models._filters import adapt_spt_in_chans
from sl_models import FAST_MODELS, randomise, small_kwargs

GREY_CASES = [(name, {}) for name in FAST_MODELS] + [('sl_vit_32', dict(pre_norm=True))]
@pytest.mark.parametrize('bias', [True, False])
@pytest.mark.parametrize('src,dst', [(3, 1), (1, 3), (3, 6)])
def test_spt_channel_adaptation_is_exact(bias, src, dst):
    x = torch.randn(2, min(src, dst), 16, 16, dtype=torch.float64)
    # the same image given with either channel count: one copy per channel group
    x_src, x_dst = x.repeat(1, src // x.shape[1], 1, 1), x.repeat(1, dst // x.shape[1], 1, 1)
    for dtype, tol in ((torch.float64, 1e-10), (torch.float32, 1e-5)):  # float64: exact up to rounding
        source = randomise(ShiftedPatchProjection(src, 24, 4, bias=bias, dtype=dtype))
        target = ShiftedPatchProjection(dst, 24, 4, bias=bias, dtype=dtype)
        state = dict(source.state_dict())
        assert adapt_spt_in_chans(state, '', target)
        target.load_state_dict(state)
        torch.testing.assert_close(target(x_dst.to(dtype)), source(x_src.to(dtype)), rtol=tol, atol=tol)


@pytest.mark.parametrize('name,kwargs', GREY_CASES, ids=[f'{n}-{k}' for n, k in GREY_CASES])
def test_grey_checkpoint_adaptation_is_exact(name, kwargs, tmp_path, caplog):
    # float64 throughout (weights, adaptation, SPT): what remains is the map, not rounding
    kwargs = dict(small_kwargs(name), dtype=torch.float64, **kwargs)
    rgb = randomise(timm.create_model(name, **kwargs)).eval()
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
    grey = randomise(timm.create_model('sl_vit_32', in_chans=1, depth=1)).eval()
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
    rgb = timm.create_model(name, spt=False, **small_kwargs(name)).eval()
    torch.save(rgb.state_dict(), tmp_path / 'rgb.pth')
    with caplog.at_level(logging.INFO):
        grey = timm.create_model(name, spt=False, pretrained=True, in_chans=1, **small_kwargs(name),
                                 pretrained_cfg_overlay=dict(file=str(tmp_path / 'rgb.pth'))).eval()
    assert any(f'Converted input conv {stem}' in r.getMessage() for r in caplog.records)
    g = torch.randn(1, 1, 32, 32)
    torch.testing.assert_close(grey(g), rgb(g.expand(-1, 3, -1, -1)), rtol=0, atol=1e-5)


@pytest.mark.parametrize('name,saved_kw,load_kw,said', [
    ('sl_vit_32', {}, dict(spt=False), r'an SPT projection \(patch_embed.proj\): its model had spt=True, and sl_vit_32 '
                                       r'is built with spt=False; allowed: spt=True, as its model was trained'),
    ('sl_cait_32', {}, dict(spt=False), r'an SPT projection \(patch_embed.proj\): its model had spt=True'),
    ('sl_pit_32', dict(lsa=False), dict(spt=False, spt_pool=True, lsa=False),
     r'an SPT projection \(patch_embed.proj\): its model had spt=True, and sl_pit_32 is built with spt=False'),
    ('sl_pit_32', {}, dict(spt_pool=False), r'SPT projections \(transformers.1.pool.merge.proj and 1 more\): its '
                                            r'model had spt_pool=True, and sl_pit_32 is built with spt_pool=False'),
    ('sl_pit_32', dict(spt_pool=False), {}, r'no SPT projection \(transformers.1.pool.merge.proj and 1 more\): its '
                                            r'model had spt_pool=False, and sl_pit_32 is built with spt_pool=True; '
                                            r'allowed: spt_pool=False'),
    ('sl_swin_32', {}, dict(spt_pool=False), r'SPT projections \(layers.1.downsample.proj and 1 more\): its model '
                                             r'had spt_pool=True'),
    ('sl_swin_32', dict(spt_pool=False), {}, r'no SPT projection \(layers.1.downsample.proj and 1 more\): its model '
                                             r'had spt_pool=False'),
], ids=['vit', 'cait', 'pit-stem', 'pit-spool', 'pit-no-spool', 'swin-spool', 'swin-no-spool'])
def test_a_checkpoint_of_other_spt_switches_is_refused_in_one_line(name, saved_kw, load_kw, said, tmp_path):
    """An SPT checkpoint into a baseline (spt=False) model, or Spool weights into spt_pool=False and the reverse,
    ended in load_state_dict's multi-line list of every missing and unexpected key, which said neither why nor what
    to pass (never an AttributeError about a stem module the baseline does not have)."""
    torch.save(timm.create_model(name, **saved_kw, **small_kwargs(name)).state_dict(), tmp_path / 'w.pth')
    with pytest.raises(ValueError, match=rf'^this checkpoint has {said}') as refused:
        timm.create_model(name, pretrained=True, pretrained_cfg_overlay=dict(file=str(tmp_path / 'w.pth')),
                          **load_kw, **small_kwargs(name))
    assert '\n' not in str(refused.value) and str(refused.value).endswith(
        'or timm_sl.warm_start(model, state_dict) to start from its other weights')


def test_warm_start_public_paths():
    """warm_start is public at the package root and in timm_sl.models (docs/hub.md)."""
    import timm_sl
    from timm_sl.models import warm_start
    assert timm_sl.warm_start is warm_start


@pytest.mark.parametrize('name', FAST_MODELS)
def test_a_saved_state_dict_of_the_models_class_count_keeps_its_head(name, tmp_path):
    """A 10-class state dict loaded with num_classes=10 and pretrained_cfg_overlay=dict(file=...) lost its head:
    timm dropped it because the cfg says 100 classes, and the model answered with a random classifier, silently.
    A head of the model's shape is kept; one of another class count is still dropped (timm's fine-tuning start)."""
    torch.manual_seed(0)
    saved = timm.create_model(name, num_classes=10, **small_kwargs(name)).eval()
    randomise(saved)
    torch.save(saved.state_dict(), tmp_path / 'mine.pth')
    overlay = dict(file=str(tmp_path / 'mine.pth'))
    loaded = timm.create_model(name, pretrained=True, pretrained_cfg_overlay=overlay, num_classes=10,
                               **small_kwargs(name)).eval()
    x = torch.randn(2, 3, 32, 32)
    with torch.no_grad():
        torch.testing.assert_close(loaded(x), saved(x), rtol=0, atol=0)
    assert loaded.pretrained_cfg['num_classes'] == 10
    other = timm.create_model(name, pretrained=True, pretrained_cfg_overlay=overlay, num_classes=7,
                              **small_kwargs(name))
    assert other.pretrained_cfg['num_classes'] == 100 and other.get_classifier().weight.shape[0] == 7


@pytest.mark.parametrize('name', FAST_MODELS)
def test_a_checkpoint_of_other_lsa_switches_is_refused_in_one_line(name, tmp_path):
    """Weights trained with lsa=False loaded into the default (LSA) model, or the reverse, ended in load_state_dict's
    multi-line list of every block's temperature key, which said neither why nor what to pass."""
    for saved_kw, load_kw, said in [(dict(lsa=False), {}, 'has no learned LSA temperatures'),
                                    ({}, dict(lsa_learn_temp=False), 'has learned LSA temperatures')]:
        torch.save(timm.create_model(name, **saved_kw, **small_kwargs(name)).state_dict(), tmp_path / 'w.pth')
        pattern = rf'^this checkpoint {said} \(\S+\.temperature and \d+ more\).*allowed: '
        with pytest.raises(ValueError, match=pattern) as e:
            timm.create_model(name, pretrained=True, pretrained_cfg_overlay=dict(file=str(tmp_path / 'w.pth')),
                              **load_kw, **small_kwargs(name))
        assert '\n' not in str(e.value)


def test_a_slify_model_refusing_weights_of_other_lsa_switches_is_named_as_built(tmp_path):
    """A slify model given a state dict trained with lsa=False: the line named the base's class (VisionTransformer),
    which the user never named; now slify(BASE)."""
    kwargs = dict(base='vit_tiny_patch16_224', img_size=32, patch_size=4, depth=1, num_classes=10)
    torch.save(timm.create_model('slify', lsa=False, **kwargs).state_dict(), tmp_path / 'w.pth')
    with pytest.raises(ValueError, match=r'which slify\(vit_tiny_patch16_224\) with lsa_learn_temp on needs'):
        timm.create_model('slify', pretrained=True, pretrained_cfg_overlay=dict(file=str(tmp_path / 'w.pth')), **kwargs)


class _Payload:
    """Pickles to a call that would leave a marker file: proves a loader executed pickled code."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return os.mknod, (self.marker,)


@pytest.fixture()
def files(tmp_path):
    model = timm.create_model('sl_vit_32', depth=1)
    save_file(model.state_dict(), tmp_path / 'good.safetensors')
    data = (tmp_path / 'good.safetensors').read_bytes()
    (tmp_path / 'truncated.safetensors').write_bytes(data[:len(data) // 2])
    (tmp_path / 'garbage.pth').write_bytes(b'not a checkpoint')
    torch.save({'state_dict': model.state_dict()}, tmp_path / 'good.pth')
    data = (tmp_path / 'good.pth').read_bytes()
    (tmp_path / 'truncated.pth').write_bytes(data[:len(data) // 2])
    torch.save({'state_dict': model.state_dict(), 'x': _Payload(str(tmp_path / 'EXECUTED'))}, tmp_path / 'code.pth')
    save_file(timm.create_model('sl_vit_32', depth=2).state_dict(), tmp_path / 'deeper.safetensors')
    save_file(timm.create_model('vit_tiny_patch16_224', pretrained=False).state_dict(), tmp_path / 'vit.safetensors')
    return tmp_path


def _pretrained(name, path, **kwargs):
    return timm.create_model(name, pretrained=True, pretrained_cfg_overlay=dict(file=str(path)), **kwargs)


def test_pretrained_file_errors(files):
    assert _pretrained('sl_vit_32', files / 'good.safetensors', depth=1) is not None
    with pytest.raises(Exception, match='incomplete metadata|deserializ'):
        _pretrained('sl_vit_32', files / 'truncated.safetensors', depth=1)
    with pytest.raises(RuntimeError, match=r'Unexpected key\(s\) in state_dict: "blocks.1'):
        _pretrained('sl_vit_32', files / 'deeper.safetensors', depth=1)  # another architecture
    with pytest.raises(ValueError, match='convolutional patch embedding .* cannot load; load it with spt=False'):
        _pretrained('sl_vit_tiny', files / 'vit.safetensors')
    with pytest.raises(RuntimeError, match='weights_only'):
        _pretrained('sl_vit_32', files / 'code.pth', depth=1)
    assert not (files / 'EXECUTED').exists()


def test_load_checkpoint_errors(files):
    model = timm.create_model('sl_vit_32', depth=1)
    with pytest.raises(RuntimeError, match='failed finding central directory|corrupted'):
        load_checkpoint(model, str(files / 'truncated.pth'))
    with pytest.raises(RuntimeError, match='weights_only'):
        load_checkpoint(model, str(files / 'code.pth'))
    assert not (files / 'EXECUTED').exists()


def test_warm_start_refuses_a_path_or_a_model_in_one_line():
    """warm_start(model, 'run/model_best.pth.tar') failed with "'str' object has no attribute 'get'"."""
    from timm_sl import warm_start
    model = timm.create_model('sl_vit_32', depth=1)
    with pytest.raises(TypeError, match=r"^warm_start takes a state dict, got str 'run/model_best.pth.tar'; allowed: "
                                        r"a state dict or a checkpoint dict holding one \(timm.models.load_state_dict"
                                        r"\(path\) of a file, model.state_dict\(\) of a model\)$"):
        warm_start(model, 'run/model_best.pth.tar')
    base = timm.create_model('vit_tiny_patch16_224', depth=1, img_size=32, patch_size=4)
    with pytest.raises(TypeError, match=r'^warm_start takes a state dict, got VisionTransformer; allowed: '):
        warm_start(model, base)


def _exported_config(folder, architecture, **model_args):
    """A folder with only a ``timm-sl export`` style config.json (the model is refused before weights are read)."""
    import json
    folder.mkdir()
    cfg = dict(input_size=[3, 32, 32], mean=[0.5] * 3, std=[0.5] * 3, num_classes=10)
    (folder / 'config.json').write_text(json.dumps(dict(
        architecture=architecture, num_classes=10, model_args=model_args, pretrained_cfg=cfg)))
    return folder


@pytest.mark.parametrize('architecture, model_args, said', [
    ('sl_vit_32', dict(depth=True), 'depth=True is invalid'),
    ('sl_swin_32', dict(depths=2), 'depths=2 is invalid'),
    ('sl_pit_32', dict(drop_path_rate=1.5, spt=False, lsa=False), 'drop_path_rate=1.5 is invalid'),
    ('slify', dict(base='vit_tiny_patch16_224', depth=1, img_size=32, patch_size=4, lsa_mask='yes'),
     "lsa_mask='yes' is invalid"),
])
def test_local_dir_config_of_refused_model_args_is_named(architecture, model_args, said, tmp_path):
    folder = _exported_config(tmp_path / 'exported', architecture, **model_args)
    with pytest.raises(ValueError) as info:
        timm.create_model(f'local-dir:{folder}', pretrained=True)
    name = said.split('=')[0]
    assert str(info.value).startswith(f'{folder}/config.json (model_args {name}): {said}')
    assert '\n' not in str(info.value)


def test_a_kwarg_given_over_a_saved_config_is_not_blamed_on_it(tmp_path):
    folder = _exported_config(tmp_path / 'exported', 'sl_vit_32', depth=1)
    with pytest.raises(ValueError, match=r'^depth=True is invalid; allowed: an int >= 0\.$'):
        timm.create_model(f'local-dir:{folder}', pretrained=True, depth=True)


def test_hf_hub_config_of_refused_model_args_is_named(monkeypatch):
    import timm.models._factory as factory
    from timm.models._hub import _parse_model_cfg
    cfg = dict(architecture='sl_vit_32', num_classes=10, model_args=dict(depth=True),
               pretrained_cfg=dict(num_classes=10))
    monkeypatch.setattr(factory, 'load_model_config_from_hf', lambda model_id, cache_dir=None: _parse_model_cfg(
        cfg, {'hf_hub_id': model_id, 'source': 'hf-hub'}))
    with pytest.raises(ValueError, match=r'^config\.json of hf-hub:me/sl_vit_32\.x \(model_args depth\): depth=True '):
        timm.create_model('hf-hub:me/sl_vit_32.x', pretrained=True)


@pytest.mark.parametrize('base, kind, said', [
    ('eva02_tiny_patch14_224', 'SlifyError', 'cannot slify eva02_tiny_patch14_224: attention class '),
    ('resnet18', 'SlifyError', 'cannot slify resnet18: no timm PatchEmbed.'),
    ('no_such_model_x', 'RuntimeError', 'Unknown model (no_such_model_x)'),
])
def test_local_dir_config_of_a_base_slify_refuses_is_named(base, kind, said, tmp_path):
    """An export's config.json edited to a base slify cannot convert (a SlifyError, a ValueError's subclass) or timm
    does not know (a RuntimeError) was refused by a line naming no file; it now starts with that config.json, and
    the error keeps its type (SlifyError's reasons too)."""
    from timm_sl.slify import SlifyError
    folder = _exported_config(tmp_path / 'exported', 'slify', base=base)
    with pytest.raises(Exception) as info:
        timm.create_model(f'local-dir:{folder}', pretrained=True)
    assert type(info.value).__name__ == kind
    assert str(info.value).startswith(f'{folder}/config.json (model_args base): {said}')
    if kind == 'SlifyError':
        assert isinstance(info.value, SlifyError) and info.value.model_name == base and info.value.reasons
    with pytest.raises(Exception, match=r'^(cannot slify|Unknown model)'):  # the caller's own base: as it was
        timm.create_model('slify', base=base)


def test_warm_start_refusal_advises_a_reader_of_train_py_checkpoints(tmp_path):
    """warm_start given a path advised torch.load(path): from torch 2.6 (weights-only by default) that refuses every
    train.py checkpoint (its args Namespace). The reader it names now reads one (torch >= 2.5, timm's) into a state
    dict warm_start maps."""
    import argparse
    from timm_sl import warm_start
    model = timm.create_model('sl_vit_32', depth=1)
    base = timm.create_model('vit_tiny_patch16_224', depth=1, img_size=32, patch_size=4, num_classes=100)
    path = tmp_path / 'model_best.pth.tar'
    torch.save({'epoch': 0, 'arch': 'vit_tiny_patch16_224', 'state_dict': base.state_dict(),
                'args': argparse.Namespace(model='vit_tiny_patch16_224')}, path)
    with pytest.raises(TypeError) as info:
        warm_start(model, str(path))
    advised = re.search(r'\((\S+)\(path\) of a file', str(info.value)).group(1)
    assert advised == 'timm.models.load_state_dict'
    if not hasattr(torch.serialization, 'safe_globals'):
        pytest.skip(f'torch {torch.__version__}: timm reads train.py checkpoints from torch 2.5 on (docs/export.md)')
    report = warm_start(model, timm.models.load_state_dict(str(path)))
    assert 'blocks.0.attn.qkv.weight' in report['mapped']
    key = 'blocks.0.attn.qkv.weight'
    torch.testing.assert_close(model.state_dict()[key], base.state_dict()[key])
