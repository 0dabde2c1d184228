import math

import pytest
import torch
from PIL import Image

import timm
from timm_sl.analysis import (
    attention_probs, capture_attention, depth_curve, kld_to_uniform, learned_temperatures, receptive_field)
from timm_sl.cli import main


def test_kld_of_uniform_is_zero_and_of_one_hot_is_log_n():
    assert kld_to_uniform(torch.full((2, 3, 5, 5), 0.2)).item() == pytest.approx(0., abs=1e-7)
    one_hot = torch.eye(5).expand(2, 3, 5, 5)
    assert kld_to_uniform(one_hot).item() == pytest.approx(math.log(5), rel=1e-6)


@pytest.mark.parametrize('name,kwargs', [('sl_vit_32', dict(depth=3)), ('sl_pit_32', {}), ('sl_t2t_32', dict(depth=2))])
def test_capture_attention_rows_and_diagonal(name, kwargs):
    model = timm.create_model(name, **kwargs).eval()
    x = torch.randn(2, 3, 32, 32)
    with torch.no_grad():
        plain = model(x)
        with capture_attention(model) as maps:
            captured = model(x)
    torch.testing.assert_close(captured, plain)  # capturing does not change the forward
    assert all(len(v) == 1 for v in maps.values())
    for attn in (a[0] for a in maps.values()):
        torch.testing.assert_close(attn.sum(-1), torch.ones(attn.shape[:-1]))
        assert torch.all(attn.diagonal(dim1=-2, dim2=-1) == 0)  # LSA
    # nothing stays hooked afterwards
    assert all(not m._forward_hooks for m in model.modules())


def test_capture_matches_the_module_output():
    model = timm.create_model('sl_vit_32', depth=1).eval()
    attn = model.blocks[0].attn
    x = torch.randn(1, 65, 192)
    probs = attention_probs(attn, x)
    v = attn.qkv(x).reshape(1, 65, 3, 12, 16).permute(2, 0, 3, 1, 4)[2]
    out = attn.proj((probs @ v).transpose(1, 2).reshape(1, 65, 192))
    torch.testing.assert_close(out, attn(x), rtol=1e-5, atol=1e-5)


def test_depth_curve_for_sl_and_baseline():
    x = torch.randn(4, 3, 32, 32)
    curves = {}
    for key, kwargs in (('sl', {}), ('base', dict(spt=False, lsa=False))):
        torch.manual_seed(0)
        model = timm.create_model('sl_vit_32', depth=2, **kwargs).eval()
        with torch.no_grad(), capture_attention(model) as maps:
            model(x)
        curves[key] = depth_curve(maps)
    assert len(curves['sl']) == 2 and all(v >= 0 for c in curves.values() for v in c)


def test_learned_temperatures_and_receptive_field():
    model = timm.create_model('sl_vit_32', depth=2)
    with torch.no_grad():
        model.blocks[1].attn.temperature.fill_(0.5)
    temps = learned_temperatures(model)
    assert list(temps) == ['blocks.0.attn', 'blocks.1.attn'] and torch.all(temps['blocks.1.attn'] == 0.5)
    assert receptive_field(16) == 16 and receptive_field(16, shift=8) == 32 and receptive_field(4, 2) == 8


def test_cli_temperature_kld_receptive_field(tmp_path, capsys):
    for i in range(2):
        Image.fromarray((torch.rand(32, 32, 3) * 255).to(torch.uint8).numpy()).save(tmp_path / f'{i}.png')
    assert main(['temperature', '--model', 'sl_vit_32', '--model-kwargs', 'depth=2',
                 '--out', str(tmp_path / 't.png')]) == 0
    out = capsys.readouterr().out
    assert '0.2500' in out and (tmp_path / 't.png').exists()  # 16 ** -0.5 for every head at init
    assert main(['kld', str(tmp_path), '--model', 'sl_vit_32', '--model-kwargs', 'depth=2',
                 '--out', str(tmp_path / 'k.png')]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines() if line[:1] in ('1', '2')]
    assert len(rows) == 2 and all(float(r[1]) >= 0 for r in rows)
    assert Image.open(tmp_path / 'k.png').size == (720, 460)
    assert main(['receptive-field', '--patch-size', '4']) == 0
    assert 'standard tokenization r_token = 4, SPT (shift 2) r_token = 8' in capsys.readouterr().out


def test_unsupported_family_is_named():
    with pytest.raises(ValueError, match='SlSwinTransformer has no timm Attention'):
        with capture_attention(timm.create_model('sl_swin_32')):
            pass
