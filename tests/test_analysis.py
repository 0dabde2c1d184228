import json
import math
import os
import re
import shutil
import sys

import pytest
import torch
from PIL import Image

import timm
from timm.models.swin_transformer import window_partition
import timm_sl.tools.plot
from timm_sl.tools.analysis import (
    attention_layers, attention_probs, attention_records, capture_attention, depth_curve, final_attention_map,
    kld_by_depth, kld_floor, kld_to_uniform, learned_temperatures, load_images, receptive_field, temperature_records,
    tokenizer_geometry)
from timm_sl.tools.cli import main
from timm_sl.tools.plot import INPUT_LABEL, MAP_LABEL
from test_run_record import _fails, _train_run

# small configurations of every family at 32 px: (name, kwargs, number of attention layers captured)
FAMILIES = [
    ('sl_vit_32', dict(depth=2), 2),
    ('sl_pit_32', dict(depth=(1, 1, 1)), 3),
    ('sl_t2t_32', dict(depth=2), 2),  # backbone blocks only (the tokenizer's token layers are not depth)
    ('sl_cait_32', dict(depth=2, depth_token_only=1), 3),
    ('sl_swin_32', dict(depths=(2, 2, 2), window_size=2), 6),
]
IDS = [f[0] for f in FAMILIES]


def _model(name, kwargs, baseline=False):
    model = timm.create_model(name, **kwargs)
    if baseline:
        model = timm.create_model(name, **kwargs, **type(model).baseline_kwargs)
    return model.eval()


def test_kld_of_uniform_is_zero_and_of_one_hot_is_log_n():
    assert kld_to_uniform(torch.full((2, 3, 5, 5), 0.2)).item() == pytest.approx(0., abs=1e-7)
    one_hot = torch.eye(5).expand(2, 3, 5, 5)
    assert kld_to_uniform(one_hot).item() == pytest.approx(math.log(5), rel=1e-6)


@pytest.mark.parametrize('baseline', [False, True], ids=['sl', 'baseline'])
@pytest.mark.parametrize('name,kwargs,layers', FAMILIES, ids=IDS)
def test_capture_attention_rows_and_diagonal(name, kwargs, layers, baseline):
    model = _model(name, kwargs, baseline)
    x = torch.randn(2, 3, 32, 32)
    with torch.no_grad():
        plain = model(x)
        with capture_attention(model) as maps:
            captured = model(x)
    torch.testing.assert_close(captured, plain)  # capturing does not change the forward
    assert len(maps) == layers and all(len(v) == 1 for v in maps.values())
    for layer, (attn,) in maps.items():
        torch.testing.assert_close(attn.sum(-1), torch.ones(attn.shape[:-1]))
        if attn.shape[-2] == attn.shape[-1]:  # self-attention (class attention has a single query, never masked)
            diagonal = attn.diagonal(dim1=-2, dim2=-1)
            if baseline:
                assert torch.all(diagonal > 0), layer
            elif name.startswith('sl_swin'):  # a token alone in its shifted-window region keeps its self-relation
                assert torch.all((diagonal == 0) | (diagonal == 1)), layer
            else:
                assert torch.all(diagonal == 0), layer
    assert all(not m._forward_hooks and not m._forward_pre_hooks for m in model.modules())  # nothing stays hooked


def _reconstruct(module, probs, x):
    """Output of ``module`` rebuilt from captured probabilities: proves they are the ones the forward uses."""
    heads = module.num_heads
    if hasattr(module, 'qkv'):
        v = module.qkv(x).chunk(3, dim=-1)[2]
    else:  # class attention
        v = module.v(x)
    v = v.reshape(x.shape[0], x.shape[1], heads, -1).transpose(1, 2)
    if hasattr(module, 'proj_w'):  # talking heads: post-softmax mixing across heads
        probs = module.proj_w(probs.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
    out = (probs @ v).transpose(1, 2).reshape(x.shape[0], probs.shape[2], -1)
    return module.proj(out)


@pytest.mark.parametrize('baseline', [False, True], ids=['sl', 'baseline'])
@pytest.mark.parametrize('name,kwargs,layers', FAMILIES, ids=IDS)
def test_captured_probabilities_reproduce_each_layer_output(name, kwargs, layers, baseline):
    model = _model(name, kwargs, baseline)
    inputs = {}

    def record(name):
        def hook(module, args, kwargs_, output):
            inputs[name] = (args, kwargs_, output)
        return hook

    hooks = [m.register_forward_hook(record(n), with_kwargs=True) for n, m in attention_layers(model)]
    with torch.no_grad():
        model(torch.randn(2, 3, 32, 32))
    for h in hooks:
        h.remove()
    assert len(inputs) == layers
    masked = 0
    for layer, (args, kwargs_, out) in inputs.items():
        module = model.get_submodule(layer)
        probs = attention_probs(module, *args, **kwargs_)
        masked += kwargs_.get('mask') is not None
        with torch.no_grad():
            torch.testing.assert_close(_reconstruct(module, probs, args[0]), out, rtol=1e-4, atol=1e-5)
    if name.startswith('sl_swin'):  # timm's shifted block of each stage has its window mask; under LSA every block
        assert masked == (3 if baseline else layers)  # has the block's LSA pattern (diagonal, shift regions)


@pytest.mark.parametrize('name,kwargs,layers', FAMILIES, ids=IDS)
def test_final_attention_map_per_family(name, kwargs, layers):
    model = _model(name, kwargs)
    x = torch.randn(2, 3, 32, 32)
    result = final_attention_map(model, x)
    grid = {'sl_vit_32': 8, 'sl_pit_32': 4, 'sl_t2t_32': 8, 'sl_cait_32': 8, 'sl_swin_32': 4}[name]
    heads = result.maps.shape[1]
    assert result.maps.shape == (2, heads, grid, grid) and torch.all(result.maps >= 0)
    with torch.no_grad(), capture_attention(model, [result.layer]) as maps:
        model(x)
    probs = maps[result.layer][0]
    if name == 'sl_swin_32':
        assert result.kind == 'received' and 'no class token' in result.description
    else:
        assert result.kind == 'class token'
        torch.testing.assert_close(result.maps.flatten(2), probs[:, :, 0, -grid * grid:])
        total = result.maps.sum((-2, -1))
        if name == 'sl_cait_32':  # class attention is not diagonal-masked: the class token keeps some weight
            torch.testing.assert_close(total, 1 - probs[:, :, 0, 0])
        else:  # LSA: the class token cannot attend to itself, all its weight is on the patches
            torch.testing.assert_close(total, torch.ones_like(total))


@pytest.mark.parametrize('baseline', [False, True], ids=['sl', 'baseline'])
@pytest.mark.parametrize('name,kwargs,layers', FAMILIES, ids=IDS)
def test_final_attention_map_uniform_level_counts_the_keys(name, kwargs, layers, baseline):
    """The uniform level of a map's cell: 1/N for the N keys the row attends over, 1/(N-1) where LSA masks the class
    token's own key (the figure drew the mean of all maps, neither); class attention is never masked, and a Swin
    token receives 1/N of its N-token window either way."""
    result = final_attention_map(_model(name, kwargs, baseline), torch.randn(2, 3, 32, 32))
    cells = result.maps.shape[-1] * result.maps.shape[-2]
    if name == 'sl_swin_32':
        assert result.uniform == 1 / 4 and 'uniform level 1/N = 1/4' in result.uniform_note
        torch.testing.assert_close(result.maps.mean((-2, -1)), torch.full(result.maps.shape[:2], 1 / 4))
    elif name == 'sl_cait_32' or baseline:  # the class token's row spans itself and the patches
        assert result.uniform == 1 / (cells + 1)
        assert f'uniform level 1/N = 1/{cells + 1}: the class token attends over N = {cells + 1} keys' == \
            result.uniform_note
    else:  # LSA: its own key masked, the row is spread over the patches
        assert result.uniform == 1 / cells
        assert result.uniform_note == (f'uniform level 1/(N-1) = 1/{cells}: the class token attends over '
                                       f'N = {cells + 1} keys, its own masked (LSA)')
        torch.testing.assert_close(result.maps.mean((-2, -1)), torch.full(result.maps.shape[:2], 1 / cells))


def test_swin_received_attention_undoes_windows_and_shift():
    model = _model('sl_swin_32', dict(depths=(2, 2, 2), window_size=2))
    block = model.layers[-1].blocks[-1]
    assert block.shift_size == (1, 1)  # the last block is a shifted one: the case to get right
    x = torch.randn(2, 3, 32, 32)
    result = final_attention_map(model, x)
    with torch.no_grad(), capture_attention(model, [result.layer]) as maps:
        model(x)
    received = maps[result.layer][0].mean(-2)  # (B * windows, heads, N)
    # independent path: follow each token's grid index through roll + partition, then scatter back
    index = torch.arange(16).view(1, 4, 4, 1)
    index = window_partition(torch.roll(index, shifts=(-1, -1), dims=(1, 2)), (2, 2)).reshape(-1, 4)  # (win, N)
    expected = torch.zeros(2, received.shape[1], 16)
    for b in range(2):
        for w in range(4):
            expected[b][:, index[w]] = received[b * 4 + w]
    torch.testing.assert_close(result.maps.flatten(2), expected)
    torch.testing.assert_close(result.maps.sum((-2, -1)), torch.full((2, received.shape[1]), 4.))  # 4 windows


def test_swin_attention_says_its_weight_in_the_pooled_feature_only_of_an_average():
    """A Swin trained with --gp max: the footnote said the map was each token's 'weight in the average-pooled
    feature', which a max over the tokens has none of."""
    kwargs = dict(depths=(1, 1, 1), window_size=2)
    x = torch.randn(1, 3, 32, 32)
    assert final_attention_map(_model('sl_swin_32', kwargs), x).description.endswith(
        ': its weight in the average-pooled feature')
    assert final_attention_map(_model('sl_swin_32', dict(kwargs, global_pool='max')), x).description.endswith(
        ": its classifier reads the tokens with global_pool='max', not an average: no weight of a token in it")


@pytest.mark.parametrize('name,kwargs,patch', [('sl_vit_32', dict(depth=1), (2, 4)),
                                               ('sl_vit_32', dict(depth=1), (2, 8)),
                                               ('sl_cait_32', dict(depth=1, depth_token_only=1), (2, 4))])
def test_final_attention_map_of_a_patch_that_is_not_square(name, kwargs, patch):
    """--model-kwargs patch_size=(2,4) cuts a 32 x 32 image into 16 x 8 tokens: attention refused the model ('128
    tokens do not form a grid with the aspect ratio of a 32x32 image'), a grid taken from the image's aspect alone;
    patch_size=(2,8)'s 16 x 4 tokens were drawn as an 8 x 8 grid, each row of the map two rows of tokens."""
    model = _model(name, dict(kwargs, patch_size=patch))
    images = torch.randn(1, 3, 32, 32)
    result = final_attention_map(model, images)
    grid = (32 // patch[0], 32 // patch[1])
    assert result.maps.shape[-2:] == grid
    with capture_attention(model, [result.layer]) as maps:
        model(images)
    row = maps[result.layer][-1][:, :, 0, -grid[0] * grid[1]:]  # the class token's row over the patches, row by row
    torch.testing.assert_close(result.maps, row.reshape(1, -1, *grid))


def test_final_attention_without_class_token_uses_received_attention():
    model = _model('sl_vit_32', dict(depth=1, class_token=False, global_pool='avg'))
    result = final_attention_map(model, torch.randn(1, 3, 32, 32))
    assert result.kind == 'received' and result.maps.shape == (1, 12, 8, 8)
    torch.testing.assert_close(result.maps.sum((-2, -1)), torch.ones(1, 12))  # 64 rows of 1, averaged
    assert result.uniform == 1 / 64  # each query over the 63 others, a token receives 63 / 63 / 64 on average
    assert result.uniform_note == ('uniform level 1/N = 1/64: what a token receives when every query spreads over '
                                   'the N - 1 = 63 tokens other than itself (of N = 64, LSA)')  # not '64 others'


@pytest.mark.parametrize('name,kwargs,layer,built', [
    ('sl_vit_32', dict(depth=2), 'blocks.1.attn', 'sl_vit_32'),
    ('sl_cait_32', dict(depth=2, depth_token_only=1), 'blocks.1.attn', 'sl_cait_32'),
    ('slify', dict(base='vit_tiny_patch16_224', img_size=32, patch_size=4, depth=2), 'blocks.1.attn',
     'slify(vit_tiny_patch16_224)')])
def test_final_attention_of_a_model_that_pools_its_patch_tokens_is_what_they_receive(name, kwargs, layer, built):
    """A ViT trained with --gp avg keeps its class token, but its classifier reads the patch tokens' average: the
    chart drew the class token's attention, which no prediction uses (CaiT's class attention too). The received
    attention of the last patch-token layer is drawn, and the footnote says why, naming the model as it was built
    (it said 'SlVisionTransformer pools ...', and 'VisionTransformer' for slify)."""
    model = _model(name, dict(kwargs, global_pool='avg'))
    images = torch.randn(2, 3, 32, 32)
    result = final_attention_map(model, images)
    with capture_attention(model, [layer]) as maps:
        model(images)
    prefix = 0 if name == 'sl_cait_32' else 1  # CaiT's self-attention holds the patch tokens only
    expected = maps[layer][-1][:, :, prefix:, prefix:].mean(-2).reshape(2, -1, 8, 8)
    assert (result.kind, result.layer) == ('received', layer)
    torch.testing.assert_close(result.maps, expected)
    assert result.description == (f"{built} pools its patch tokens (global_pool='avg'), not its "
                                   f"class token: attention each patch token receives in {layer}, averaged over the "
                                   f"queries")
    assert final_attention_map(_model(name, kwargs), images).kind == 'class token'


@pytest.mark.parametrize('pool,layer', [('map', 'AttentionPoolLatent'), ('prr', 'AttentionPoolPrr')])
def test_final_attention_refuses_a_model_that_pools_through_an_attention_layer(pool, layer):
    """--model-kwargs global_pool=map drew what each patch token receives in the last block, while the classifier
    reads the pooling layer's own attention (its learned query), which was never drawn."""
    with pytest.raises(ValueError, match=(
            rf"^sl_vit_32 pools with global_pool='{pool}': its classifier reads the attention-pooling layer "
            rf"attn_pool \({layer}\), whose attention is not drawn, not any block's map; allowed: global_pool "
            rf"'token' or 'avg' \(train.py's --gp\)$")):
        final_attention_map(_model('sl_vit_32', dict(depth=1, global_pool=pool)), torch.randn(1, 3, 32, 32))


def test_cli_attention_refuses_a_map_pooled_model_or_run(tmp_path, image_dir, capsys, figures):
    """The chart and its JSON were written for a --gp map model, with a map its classifier does not read."""
    out = tmp_path / 'a.png'
    err = _fails(['attention', str(image_dir), '--model', 'sl_vit_32', '--model-kwargs', 'depth=1', 'global_pool=map',
                  '--out', str(out)], capsys)
    assert err.startswith("timm-sl attention: sl_vit_32 pools with global_pool='map': ")
    err = _fails(['attention', str(image_dir), '--model', 'slify', '--model-kwargs', 'base=vit_tiny_patch16_224',
                  'img_size=32', 'patch_size=4', 'depth=1', 'global_pool=map', '--out', str(out)], capsys)
    assert err.startswith("timm-sl attention: slify(vit_tiny_patch16_224) pools with global_pool='map': ")
    run = tmp_path / 'run'
    run.mkdir()
    model = timm.create_model('sl_vit_32', num_classes=4, depth=1, global_pool='map')
    args = dict(model='sl_vit_32', model_kwargs={'depth': 1}, num_classes=4, gp='map')
    torch.save({'epoch': 1, 'arch': 'sl_vit_32', 'state_dict': model.state_dict(), 'args': args},
               run / 'model_best.pth.tar')
    (run / 'args.yaml').write_text(json.dumps(args))
    err = _fails(['attention', str(image_dir), '--model', 'sl_vit_32', '--checkpoint', str(run / 'model_best.pth.tar'),
                  '--out', str(out)], capsys)
    assert err.startswith(f"timm-sl attention: SL (checkpoint {run / 'model_best.pth.tar'}): sl_vit_32 "
                          f"pools with global_pool='map': its classifier reads the attention-pooling layer ")
    assert not figures and not out.exists() and not out.with_suffix('.json').exists()


def test_capture_rejects_unknown_layers_and_models():
    model = _model('sl_vit_32', dict(depth=1))
    with pytest.raises(ValueError, match=r"not attention layers of sl_vit_32: \['blocks.0.mlp'\]"):
        with capture_attention(model, ['blocks.0.mlp']):
            pass
    with pytest.raises(ValueError, match='Linear has no supported attention layer'):
        with capture_attention(torch.nn.Linear(2, 2)):
            pass
    with pytest.raises(TypeError, match='Linear is not a supported attention layer'):
        attention_probs(torch.nn.Linear(2, 2), torch.randn(1, 2, 2))


def test_depth_curve_for_sl_and_baseline():
    x = torch.randn(4, 3, 32, 32)
    curves = {}
    for key, baseline in (('sl', False), ('base', True)):
        torch.manual_seed(0)
        model = _model('sl_vit_32', dict(depth=2), baseline)
        with torch.no_grad(), capture_attention(model) as maps:
            model(x)
        curves[key] = depth_curve(maps)
        assert curves[key] == [kld_to_uniform(a[0]).item() for a in maps.values()]
    assert len(curves['sl']) == 2 and all(v >= 0 for c in curves.values() for v in c)


def test_learned_temperatures_and_receptive_field():
    model = timm.create_model('sl_vit_32', depth=2)
    with torch.no_grad():
        model.blocks[1].attn.temperature.fill_(0.5)
    temps = learned_temperatures(model)
    assert list(temps) == ['blocks.0.attn', 'blocks.1.attn'] and torch.all(temps['blocks.1.attn'] == 0.5)
    # the mask with a fixed temperature: a buffer at its initial value, not a learned temperature
    assert learned_temperatures(timm.create_model('sl_vit_32', depth=2, lsa_learn_temp=False)) == {}
    assert list(learned_temperatures(timm.create_model('sl_vit_32', depth=2, lsa=False, lsa_learn_temp=True))) == [
        'blocks.0.attn', 'blocks.1.attn']
    assert receptive_field(16) == 16 and receptive_field(16, shift=8) == 32 and receptive_field(4, 2) == 8
    assert receptive_field(7, shift=2, stride=4) == 11 and receptive_field(7, stride=4) == 7


@pytest.mark.parametrize('name,kwargs,expected', [
    ('sl_vit_32', {}, (4, 4, 2)), ('sl_pit_32', {}, (2, 2, 1)), ('sl_swin_32', {}, (2, 2, 1)),
    ('sl_cait_32', dict(depth=1), (4, 4, 2)), ('sl_t2t_32', dict(depth=1), (3, 2, 1)),
    ('sl_vit_32', dict(spt=False), (4, 4, 0)), ('sl_t2t_32', dict(depth=1, spt=False), (3, 2, 0)),
    ('sl_vit_32', dict(depth=1, patch_size=(2, 4)), ((2, 4), (2, 4), (1, 2))),
    ('sl_vit_32', dict(depth=1, patch_size=(2, 4), spt=False), ((2, 4), (2, 4), 0)),
])
def test_tokenizer_geometry_per_family(name, kwargs, expected):
    """Each of (kernel, stride, shift) per axis (h, w): a 2 x 4 patch was measured as 2 x 2."""
    expected = tuple(v if isinstance(v, tuple) else (v, v) for v in expected)
    assert tokenizer_geometry(timm.create_model(name, **kwargs)) == expected


@pytest.fixture(scope='module')
def image_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp('images')
    torch.manual_seed(0)
    for i in range(2):
        Image.fromarray((torch.rand(40, 48, 3) * 255).to(torch.uint8).numpy()).save(folder / f'{i}.png')
    return folder


@pytest.fixture
def figures(monkeypatch):
    """The matplotlib figures the CLI draws, in order."""
    drawn = []
    for name in ('plot_curves', 'plot_attention'):
        draw = getattr(timm_sl.tools.plot, name)
        monkeypatch.setattr(timm_sl.tools.plot, name, lambda *a, _draw=draw, **k: drawn.append(_draw(*a, **k)))
    return drawn


def _title(fig):
    return fig.get_suptitle() or fig.axes[0].get_title()


def _cli_kwargs(kwargs):
    """``--model-kwargs`` words for a kwargs dict (tuples without spaces, as timm's ParseKwargs reads them)."""
    return [f'{k}={v}'.replace(' ', '') for k, v in kwargs.items()]


def _checkpoint(path, name, kwargs, baseline=False):
    model = _model(name, kwargs, baseline)
    torch.save({'state_dict': model.state_dict(), 'epoch': 3}, path)
    return model


def test_receptive_field_of_a_patch_that_is_not_square_names_both_axes(capsys):
    """--model-kwargs patch_size=(2,4): it said 'kernel 2, stride 2 ... SPT (shift 1) r_token = 4', the height's
    numbers as if the patch were 2 x 2."""
    assert main(['receptive-field', '--model', 'sl_vit_32', '--model-kwargs', 'depth=1', 'patch_size=(2,4)']) == 0
    assert capsys.readouterr().out == ('sl_vit_32: first tokenization step kernel 2x4, stride 2x4: standard '
                                       'tokenization r_token = 2x4, SPT (shift 1x2) r_token = 4x8\n')


def test_cli_temperature_kld_receptive_field(tmp_path, image_dir, capsys, figures):
    assert main(['temperature', '--model', 'sl_vit_32', '--model-kwargs', 'depth=2',
                 '--out', str(tmp_path / 't.png')]) == 0
    out = capsys.readouterr().out
    assert '0.2500' in out and (tmp_path / 't.png').exists()  # 16 ** -0.5 for every head at init
    assert _title(figures[0]) == ('sl_vit_32, depth=2, RANDOM INIT (untrained: no --checkpoint/--pretrained): '
                                  'learned temperature per depth')
    assert main(['kld', str(image_dir), '--model', 'sl_vit_32', '--model-kwargs', 'depth=2',
                 '--out', str(tmp_path / 'k.png')]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines() if line[:1] in ('1', '2')]
    assert [r[1] for r in rows] == ['blocks.0.attn', 'blocks.1.attn'] and all(float(r[2]) >= 0 for r in rows)
    assert 'RANDOM INIT' in _title(figures[1]) and Image.open(tmp_path / 'k.png').format == 'PNG'
    line = figures[1].axes[0].get_lines()[0]  # then its mask floor
    assert list(line.get_ydata()) == pytest.approx([float(r[2]) for r in rows], abs=1e-4)
    assert main(['receptive-field', '--patch-size', '4']) == 0
    assert 'standard tokenization r_token = 4, SPT (shift 2) r_token = 8' in capsys.readouterr().out
    assert main(['receptive-field', '--model', 'sl_t2t_32', '--model-kwargs', 'depth=1']) == 0
    assert 'kernel 3, stride 2: standard tokenization r_token = 3, SPT (shift 1) r_token = 5' in capsys.readouterr().out


@pytest.mark.parametrize('name,kwargs', [('sl_swin_32', dict(depths=(1, 1, 1), window_size=2)),
                                         ('sl_cait_32', dict(depth=1, depth_token_only=1))], ids=['swin', 'cait'])
def test_cli_kld_sl_vs_baseline_checkpoints(tmp_path, image_dir, capsys, name, kwargs, figures):
    sl = _checkpoint(tmp_path / 'sl.pth', name, kwargs)
    base = _checkpoint(tmp_path / 'base.pth', name, kwargs, baseline=True)
    cli_kwargs = _cli_kwargs(kwargs)
    assert main(['kld', str(image_dir), '--model', name, '--model-kwargs', *cli_kwargs,
                 '--checkpoint', str(tmp_path / 'sl.pth'), '--compare-checkpoint', str(tmp_path / 'base.pth'),
                 '--out', str(tmp_path / 'k.png')]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines() if line[:1].isdigit()]
    assert [r[1] for r in rows] == [layer for layer, _ in attention_layers(sl)]
    batch = load_images([str(image_dir)], sl).tensor  # the CLI's own batch: files through the model's eval transform
    for model, column in ((sl, 2), (base, 3)):
        with torch.no_grad(), capture_attention(model) as maps:
            model(batch)
        assert [float(r[column]) for r in rows] == pytest.approx(depth_curve(maps), abs=1e-4)
        assert list(kld_by_depth(model, batch).values()) == pytest.approx(depth_curve(maps), abs=1e-6)
    title = _title(figures[0]).replace('\n', ' ')
    assert f'SL checkpoint {tmp_path.name}/sl.pth, baseline checkpoint {tmp_path.name}/base.pth' in title
    assert 'RANDOM INIT' not in title
    assert [t.get_text() for t in figures[0].axes[0].get_legend().get_texts()] == [
        'SL', 'baseline', 'SL: floor of its masks']  # no shifted window in depths 1: no baseline floor


@pytest.mark.parametrize('name,kwargs', [(n, k) for n, k, _ in FAMILIES], ids=IDS)
def test_cli_attention_every_family(tmp_path, image_dir, capsys, name, kwargs, figures):
    _checkpoint(tmp_path / 'sl.pth', name, kwargs)
    _checkpoint(tmp_path / 'base.pth', name, kwargs, baseline=True)
    cli_kwargs = _cli_kwargs(kwargs)
    out = tmp_path / 'attn.png'
    assert main(['attention', str(image_dir / '0.png'), str(image_dir / '1.png'), '--model', name,
                 '--model-kwargs', *cli_kwargs, '--checkpoint', str(tmp_path / 'sl.pth'),
                 '--compare-checkpoint', str(tmp_path / 'base.pth'), '--out', str(out)]) == 0
    printed = capsys.readouterr().out
    records = json.loads(out.with_suffix('.json').read_text())
    assert [(r['image'][-5:], r['model']) for r in records] == [
        ('0.png', 'SL'), ('1.png', 'SL'), ('0.png', 'baseline'), ('1.png', 'baseline')]
    for r in records:
        heads = torch.tensor(r['heads'])
        mean = torch.tensor(r['mean'])
        torch.testing.assert_close(mean, heads.mean(0))  # the heads-averaged map is the mean of the per-head maps
        assert list(mean.shape) == r['grid'] and torch.all(mean >= 0)
        assert r['peak'] == list(divmod(int(mean.argmax()), mean.shape[1]))
        if name in ('sl_vit_32', 'sl_pit_32', 'sl_t2t_32') and r['model'] == 'SL':
            assert mean.sum().item() == pytest.approx(1.0, abs=1e-5)  # LSA: all class-token weight on patches
        assert f"{mean.max():.4f}" in printed
    fig = figures[0]
    panels = [ax for ax in fig.axes if ax.get_images()]
    assert [ax.get_title() for ax in panels[:3]] == ['input', 'SL', 'baseline'] and len(panels) == 2 * 3
    overlays = [im for ax in panels for im in ax.get_images() if im.get_label() == MAP_LABEL]
    peak = max(r['peak_weight'] for r in records)  # one colour scale for the four maps: 0 .. the largest weight
    assert len(overlays) == 4 and len({im.get_clim() for im in overlays}) == 1
    assert overlays[0].get_clim() == (0., pytest.approx(peak, rel=1e-5))
    assert f'checkpoint {tmp_path.name}/sl.pth' in fig.get_suptitle().replace('\n', ' ')
    assert Image.open(out).format == 'PNG'


def test_cli_attention_figure_names_runs_images_and_uniform_levels(tmp_path, image_dir, capsys, figures):
    """The title named the file model_best.pth.tar only (every run has one), rows did not name their images, and the
    "uniform" line was the mean of the maps: now the run folders, the file names, and 1/64 (SL) and 1/65
    (baseline) for sl_vit_32's 65 keys."""
    runs = {}
    for label, baseline in (('sl', False), ('base', True)):
        runs[label] = tmp_path / f'20250101-{label}-sl_vit_32-32' / 'model_best.pth.tar'
        runs[label].parent.mkdir()
        _checkpoint(runs[label], 'sl_vit_32', dict(depth=1), baseline=baseline)
    out = tmp_path / 'attn.png'
    assert main(['attention', str(image_dir), '--model', 'sl_vit_32', '--model-kwargs', 'depth=1',
                 '--checkpoint', str(runs['sl']), '--compare-checkpoint', str(runs['base']), '--out', str(out)]) == 0
    capsys.readouterr()
    fig = figures[0]
    assert fig.get_suptitle().replace('\n', ' ') == (
        'sl_vit_32, depth=1, SL checkpoint 20250101-sl-sl_vit_32-32/model_best.pth.tar, baseline checkpoint '
        '20250101-base-sl_vit_32-32/model_best.pth.tar: final attention map (class token)')
    inputs = [ax for ax in fig.axes if [im.get_label() for im in ax.get_images()] == [INPUT_LABEL]]
    assert [ax.get_ylabel() for ax in inputs] == ['0.png', '1.png']
    bar = next(ax for ax in fig.axes if 'shared scale' in ax.get_ylabel())
    assert [line.get_ydata()[0] for line in bar.get_lines()] == pytest.approx([1 / 64] * 2 + [1 / 65] * 2)
    label = bar.get_ylabel().replace('\n', ' ')
    assert 'dashed: uniform, SL 1/64 = 0.01562' in label and 'dotted: uniform, baseline 1/65 = 0.01538' in label
    notes = fig.get_supxlabel().replace('\n', ' ')
    assert 'uniform level 1/(N-1) = 1/64: the class token attends over N = 65 keys, its own masked (LSA)' in notes
    assert 'uniform level 1/N = 1/65: the class token attends over N = 65 keys' in notes
    records = json.loads(out.with_suffix('.json').read_text())
    assert [r['uniform'] for r in records] == pytest.approx([1 / 64] * 2 + [1 / 65] * 2)


def test_attention_table_names_images_that_share_a_file_name_by_path(tmp_path, image_dir, capsys, figures):
    """Two folders' 0.png: the chart named their rows by path, the table by file name only (two rows '0.png' with
    different numbers); both say the path, and an image given twice is one row."""
    other = tmp_path / 'other'
    other.mkdir()
    (other / '0.png').write_bytes((image_dir / '1.png').read_bytes())
    assert main(['attention', str(image_dir / '0.png'), str(other / '0.png'), str(image_dir / '1.png'),
                 str(image_dir / '1.png'), '--model', 'sl_vit_32', '--model-kwargs', 'depth=1',
                 '--out', str(tmp_path / 'a.png')]) == 0
    rows = [line.split()[0] for line in capsys.readouterr().out.splitlines() if 'blocks.0.attn' in line]
    labels = [str(image_dir / '0.png'), str(other / '0.png'), '1.png']
    assert rows == labels
    inputs = [ax for ax in figures[0].axes if [im.get_label() for im in ax.get_images()] == [INPUT_LABEL]]
    assert [ax.get_ylabel().replace('\n', '') for ax in inputs] == labels


def test_a_file_name_with_a_newline_is_one_row_and_one_error_line(tmp_path, image_dir, capsys, figures):
    """An image named 'new\\nline.png': its table row broke in two (a row 'new' and a row 'line.png  SL ...'), and an
    error naming such a file read as two errors ('timm-sl kld: new' / 'timm-sl kld: line.png is not ...'). Both name
    it quoted with the newline escaped, as the chart's row label does."""
    folder = tmp_path / 'images'
    folder.mkdir()
    (folder / 'new\nline.png').write_bytes((image_dir / '0.png').read_bytes())
    out = tmp_path / 'a\nb.png'
    assert main(['attention', str(folder), '--model', 'sl_vit_32', '--model-kwargs', 'depth=1', '--out', str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines if 'blocks.0.attn' in line] == ["'new\\nline.png'"]
    assert lines[-2:] == [f'plot: {str(out)!r}', f"numbers: {str(out.with_suffix('.json'))!r}"]
    inputs = [ax for ax in figures[0].axes if [im.get_label() for im in ax.get_images()] == [INPUT_LABEL]]
    assert [ax.get_ylabel().replace('\n', '') for ax in inputs] == ["'new\\nline.png'"]
    bad = folder / 'new\nline.png'
    bad.write_text('not an image')
    for command in ('kld', 'attention'):
        with pytest.raises(SystemExit) as info:
            main([command, str(folder), '--model', 'sl_vit_32', '--out', str(tmp_path / 'c.png')])
        assert '\n' not in str(info.value) and str(info.value).startswith(
            f'timm-sl {command}: {str(bad)!r} is not a readable image')
        with pytest.raises(SystemExit, match=f"^timm-sl {command}: 'no\\\\nsuch.png' does not exist; "
                                                "expected an image file or folder$"):
            main([command, 'no\nsuch.png', '--model', 'sl_vit_32', '--out', str(tmp_path / 'c.png')])


def test_cli_attention_per_head_and_errors(tmp_path, image_dir, capsys, figures):
    out = tmp_path / 'heads.png'
    assert main(['attention', str(image_dir), '--model', 'sl_vit_32', '--model-kwargs', 'depth=1', 'num_heads=3',
                 '--heads', 'all', '--out', str(out)]) == 0
    panels = [ax for ax in figures[0].axes if ax.get_images()]
    assert [ax.get_title() for ax in panels[:4]] == ['input', 'SL h0', 'SL h1', 'SL h2']  # input + 3 heads
    assert figures[0].get_suptitle().replace('\n', ' ').startswith(
        'sl_vit_32, depth=1, num_heads=3, RANDOM INIT (untrained: no --checkpoint/--pretrained)')
    assert len(json.loads(out.with_suffix('.json').read_text())[0]['heads']) == 3
    assert main(['attention', str(image_dir), '--model', 'sl_vit_32', '--model-kwargs', 'depth=1',
                 '--heads', 'all', '--out', str(out)]) == 0  # 12 heads: 13 panels an image were one 4020 px row
    assert figures[1].get_size_inches()[0] * figures[1].dpi <= 6 * 300 + 120
    with pytest.raises(SystemExit, match="timm-sl attention: unknown model 'vit_tiny_patch16_224'"):
        main(['attention', str(image_dir), '--model', 'vit_tiny_patch16_224'])
    with pytest.raises(SystemExit, match='sl_vit_32 has no pretrained weights'):
        main(['attention', str(image_dir), '--model', 'sl_vit_32', '--pretrained'])
    with pytest.raises(SystemExit, match='missing.pth does not exist'):
        main(['attention', str(image_dir), '--model', 'sl_vit_32', '--checkpoint', str(tmp_path / 'missing.pth')])
    with pytest.raises(SystemExit, match=r"unknown model kwargs \['depht'\]"):
        main(['temperature', '--model', 'sl_vit_32', '--model-kwargs', 'depht=2'])
    (tmp_path / 'empty').mkdir()
    with pytest.raises(SystemExit, match=r'^timm-sl attention: no images \(.png, .jpg, .jpeg, .webp, .jfif, .jpe, '
                                         r'.gif, .bmp, .tif, .tiff, .heic, .heif, .avif, .jp2, .pgm, .ppm, .pbm, '
                                         r'.pnm\) found in '):
        main(['attention', str(tmp_path / 'empty'), '--model', 'sl_vit_32'])
    (tmp_path / 'broken.png').write_text('not an image')
    with pytest.raises(SystemExit, match=r'^timm-sl kld: .*broken.png is not a readable image: '):
        main(['kld', str(tmp_path / 'broken.png'), '--model', 'sl_vit_32'])
    with pytest.raises(SystemExit, match=r'^timm-sl attention: .*nothing.png does not exist; expected an image file or '
                                             r'folder$'):
        main(['attention', str(tmp_path / 'nothing.png'), '--model', 'sl_vit_32'])
    _checkpoint(tmp_path / 'other.pth', 'sl_vit_32', dict(depth=1))
    with pytest.raises(SystemExit, match='does not fit sl_vit_32'):
        main(['attention', str(image_dir), '--model', 'sl_vit_32', '--model-kwargs', 'depth=2',
              '--checkpoint', str(tmp_path / 'other.pth')])


@pytest.mark.parametrize('name,kwargs', [(n, k) for n, k, _ in FAMILIES], ids=IDS)
def test_cli_temperature_every_family_from_checkpoint(tmp_path, capsys, name, kwargs):
    model = _model(name, kwargs)
    temps = learned_temperatures(model)
    expected = []
    with torch.no_grad():
        for i, layer in enumerate(temps):
            values = torch.linspace(0.1, 0.2, len(temps[layer])) + i  # T2T's token layers have a single head
            model.get_submodule(layer).temperature.copy_(values)
            expected.append([values.mean().item(), values.min().item(), values.max().item()])
    torch.save({'state_dict_ema': model.state_dict()}, tmp_path / 'ckpt.pth')
    cli_kwargs = _cli_kwargs(kwargs)
    assert main(['temperature', '--model', name, '--model-kwargs', *cli_kwargs, '--checkpoint',
                 str(tmp_path / 'ckpt.pth'), '--out', str(tmp_path / 't.png')]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines() if line[:1].isdigit()]
    assert [r[1] for r in rows] == list(temps)  # every LSA layer, tokenizer layers included, depth order
    assert [float(v) for r in rows for v in r[2:5]] == pytest.approx(sum(expected, []), abs=1e-4)
    records = temperature_records(model)
    assert [r[k] for r in records for k in ('mean', 'min', 'max')] == pytest.approx(sum(expected, []), abs=1e-6)
    assert Image.open(tmp_path / 't.png').format == 'PNG'


def test_load_images_and_attention_records(image_dir):
    model = _model('sl_vit_32', dict(depth=1))
    loaded = load_images([str(image_dir)], model)
    assert [f.name for f in loaded.files] == ['0.png', '1.png'] and loaded.tensor.shape == (2, 3, 32, 32)
    assert [im.size for im in loaded.images] == [(32, 32)] * 2  # what the model saw, de-normalised, to draw on
    result = final_attention_map(model, loaded.tensor)
    records = attention_records(loaded.files, 'SL', result)
    assert [r['image'] for r in records] == [str(f) for f in loaded.files]
    for r, maps in zip(records, result.maps):
        mean = maps.mean(0)
        assert r['peak_weight'] == pytest.approx(mean.max().item()) and r['map_sum'] == pytest.approx(1., abs=1e-5)
        assert r['kl'] == pytest.approx(kld_to_uniform(mean.flatten() / mean.sum()).item())
    with pytest.raises(FileNotFoundError, match='missing does not exist'):
        load_images([str(image_dir / 'missing')], model)


def test_an_image_too_large_for_pil_is_one_line(tmp_path, image_dir, capsys, monkeypatch):
    """PIL refuses an image past twice its ``MAX_IMAGE_PIXELS`` with an error that is no ``OSError``: one line naming
    the file and the limit, not a traceback (a 40x48 image stands in for a 200-megapixel one)."""
    monkeypatch.setattr(Image, 'MAX_IMAGE_PIXELS', 100)
    with pytest.raises(SystemExit) as error:
        main(['attention', str(image_dir / '0.png'), '--model', 'sl_vit_32', '--model-kwargs', 'depth=1',
              '--out', str(tmp_path / 'a.png')])
    line = capsys.readouterr().err.strip()
    assert error.value.code == 2 and '\n' not in line and not (tmp_path / 'a.png').exists()
    assert line.startswith('timm-sl attention: ') and f'{image_dir / "0.png"} is too large to read (' in line
    assert line.endswith('allowed: an image of at most 200 pixels (downscale it first)')


def test_load_images_follows_linked_folders_once(tmp_path, image_dir):
    """Images in a linked subfolder were silently left out (``Path.rglob`` does not enter links before Python
    3.13); a link back up must not loop."""
    folder = tmp_path / 'images'
    folder.mkdir()
    (folder / 'a.png').write_bytes((image_dir / '0.png').read_bytes())
    (folder / 'linked').symlink_to(image_dir, target_is_directory=True)
    (folder / 'up').symlink_to(folder, target_is_directory=True)
    loaded = load_images([str(folder)], _model('sl_vit_32', dict(depth=1)))
    assert loaded.files == [folder / 'a.png', folder / 'linked' / '0.png', folder / 'linked' / '1.png']


def _sharpened(module, forward):
    """``forward`` run with the logits of ``module`` times 4 during the call only (LSA: temperature, timm: scale)."""
    def run(*args, **kwargs):
        with torch.no_grad():
            if hasattr(module, 'temperature'):
                module.temperature.mul_(4)
            else:
                module.scale *= 4
        try:
            return forward(*args, **kwargs)
        finally:
            with torch.no_grad():
                if hasattr(module, 'temperature'):
                    module.temperature.div_(4)
                else:
                    module.scale /= 4
    return run


@pytest.mark.parametrize('name,kwargs,baseline', [(n, k, False) for n, k, _ in FAMILIES] + [
    ('sl_vit_32', dict(depth=2), True), ('sl_swin_32', dict(depths=(2, 2, 2), window_size=2), True)],
    ids=IDS + ['sl_vit_32-baseline', 'sl_swin_32-baseline'])
def test_captured_attention_follows_a_changed_forward(name, kwargs, baseline):
    """Each layer's forward is replaced by one that multiplies its logits by 4 while it runs (and restores them
    after): the captured distribution must become ``p ** 4`` renormalised. Maps recomputed from the module's state
    after the call would not see the change."""
    model = _model(name, kwargs, baseline)
    with torch.no_grad():
        for m in model.modules():  # logits linear in the scale: no additive position bias, no bias in the head mixing
            if hasattr(m, 'relative_position_bias_table'):
                m.relative_position_bias_table.zero_()
            if hasattr(m, 'proj_l'):
                m.proj_l.bias.zero_()
            if baseline and hasattr(m, 'attn_mask') and m.attn_mask is not None:
                m.attn_mask.masked_fill_(m.attn_mask < 0, float('-inf'))  # timm's finite -100 shift mask
    x = torch.randn(2, 3, 32, 32)
    with torch.no_grad(), capture_attention(model) as plain:
        model(x)
    layers = attention_layers(model)
    assert len(layers) == len(plain)
    for layer, module in layers:
        module.forward = _sharpened(module, module.forward)
        try:
            with torch.no_grad(), capture_attention(model, [layer]) as maps:
                model(x)
        finally:
            del module.forward
        p = plain[layer][0]
        expected = p ** 4 / (p ** 4).sum(-1, keepdim=True)
        assert (expected - p).abs().max() > 1e-4, layer  # the change is visible (well above the tolerance)
        torch.testing.assert_close(maps[layer][0], expected, rtol=1e-4, atol=1e-6, msg=layer)


def test_capture_switches_to_the_explicit_path_and_restores_it():
    model = _model('sl_cait_32', dict(depth=1, depth_token_only=1))
    fused_modules = [m for _, m in attention_layers(model) if hasattr(m, 'fused_attn')]
    assert fused_modules  # class attention has a fused path
    for m in fused_modules:
        m.fused_attn = True
    seen = []
    hooks = [m.register_forward_pre_hook(lambda m, args: seen.append(m.fused_attn)) for m in fused_modules]
    with torch.no_grad(), capture_attention(model):
        model(torch.randn(1, 3, 32, 32))
    assert seen == [False] * len(fused_modules) and all(m.fused_attn for m in fused_modules)
    with pytest.raises(RuntimeError, match='boom'):
        with capture_attention(model):
            raise RuntimeError('boom')
    assert all(m.fused_attn for m in fused_modules)
    for h in hooks:
        h.remove()
    assert all(not m._forward_hooks and not m._forward_pre_hooks for m in model.modules())


def test_capture_refuses_a_forward_that_bypasses_the_observed_softmax():
    """A forward that no longer hands its probabilities to ``attn_drop`` (e.g. a fused-only rewrite) must fail loudly,
    not give maps from somewhere else; the hooks and kernel switches are undone."""
    model = _model('sl_vit_32', dict(depth=1))
    attn = model.blocks[0].attn
    attn.forward = lambda x, **kwargs: torch.zeros_like(x)
    with pytest.raises(RuntimeError, match=r'blocks\.0\.attn: its forward passed 0 tensors through '
                                           r'LocalitySelfAttention\.attn_drop instead of one softmax output'):
        with torch.no_grad(), capture_attention(model):
            model(torch.randn(1, 3, 32, 32))
    assert attn.fused_attn and not attn._forward_hooks and not attn.attn_drop._forward_pre_hooks


def test_final_attention_map_with_raw_patch_keys():
    """class_attn_kv='raw_patches': the class token's keys are the 64 patch tokens only; the map is that whole row."""
    model = timm.create_model('sl_cait_32', class_attn_kv='raw_patches', depth=1, depth_token_only=1).eval()
    x = torch.randn(2, 3, 32, 32)
    result = final_attention_map(model, x)
    assert result.kind == 'class token' and result.maps.shape == (2, 4, 8, 8)
    with torch.no_grad(), capture_attention(model, [result.layer]) as maps:
        model(x)
    torch.testing.assert_close(result.maps.flatten(2), maps[result.layer][0][:, :, 0])
    torch.testing.assert_close(result.maps.sum((-2, -1)), torch.ones(2, 4))


def test_capture_class_attention_with_raw_patch_keys():
    """class_attn_kv='raw_patches': the class token attends to the raw patch tokens only (64 keys, not 65), and the
    captured probabilities rebuild the layer's output."""
    model = timm.create_model('sl_cait_32', class_attn_kv='raw_patches', depth=1, depth_token_only=1).eval()
    block = model.blocks_token_only[0]
    seen = {}
    block.attn.register_forward_hook(lambda m, args, kwargs, out: seen.update(args=args, kwargs=kwargs, out=out),
                                     with_kwargs=True)
    x = torch.randn(2, 3, 32, 32)
    with torch.no_grad(), capture_attention(model, ['blocks_token_only.0.attn']) as maps:
        model(x)
    probs = maps['blocks_token_only.0.attn'][0]
    kv = seen['kwargs']['kv']
    assert probs.shape == (2, block.attn.num_heads, 1, 64) == (2, block.attn.num_heads, 1, kv.shape[1])
    torch.testing.assert_close(probs.sum(-1), torch.ones(2, block.attn.num_heads, 1))
    v = block.attn.v(kv).reshape(2, 64, block.attn.num_heads, -1).transpose(1, 2)
    out = (probs @ v).transpose(1, 2).reshape(2, 1, -1)
    torch.testing.assert_close(block.attn.proj(out), seen['out'], rtol=1e-4, atol=1e-5)


def test_cli_labels_checkpoints_by_what_they_hold_not_by_their_flags(tmp_path, image_dir, capsys, figures):
    """Swapped files (the baseline given as --checkpoint, SL as --compare-checkpoint) were built as the flags said
    and labelled "SL" / "baseline" by flag. Each is labelled by what its state dict holds (SL: LSA's learned
    temperatures, SPT's projection), and one line on stderr says the flags said otherwise."""
    sl = _checkpoint(tmp_path / 'sl.pth', 'sl_vit_32', dict(depth=1))
    _checkpoint(tmp_path / 'base.pth', 'sl_vit_32', dict(depth=1), baseline=True)
    out = tmp_path / 'attn.png'
    assert main(['attention', str(image_dir / '0.png'), '--model', 'sl_vit_32', '--model-kwargs', 'depth=1',
                 '--checkpoint', str(tmp_path / 'base.pth'), '--compare-checkpoint', str(tmp_path / 'sl.pth'),
                 '--out', str(out)]) == 0
    err = capsys.readouterr().err
    records = json.loads(out.with_suffix('.json').read_text())
    assert [r['model'] for r in records] == ['baseline', 'SL']
    assert [r['uniform'] for r in records] == pytest.approx([1 / 65, 1 / 64])  # the baseline's 65 keys, SL's mask
    expected = final_attention_map(sl, load_images([str(image_dir / '0.png')], sl).tensor).maps.mean(1)[0]
    torch.testing.assert_close(torch.tensor(records[1]['mean']), expected)  # the SL file's map, labelled SL
    note = [line for line in err.splitlines() if 'note:' in line]
    assert len(note) == 1 and note[0] == (
        f'timm-sl attention: note: each model is labelled by what it holds, not by its flag: '
        f'--checkpoint {tmp_path.name}/base.pth holds baseline (spt=False, lsa mask=False, learned '
        f'temperature=False), not SL; --compare-checkpoint {tmp_path.name}/sl.pth holds SL (spt=True, lsa '
        f'mask=True, learned temperature=True), not baseline')
    title = figures[0].get_suptitle().replace('\n', ' ')
    assert f'baseline checkpoint {tmp_path.name}/base.pth, SL checkpoint {tmp_path.name}/sl.pth' in title
    assert main(['kld', str(image_dir), '--model', 'sl_vit_32', '--model-kwargs', 'depth=1',
                 '--checkpoint', str(tmp_path / 'base.pth'), '--compare-checkpoint', str(tmp_path / 'sl.pth'),
                 '--out', str(tmp_path / 'k.png')]) == 0
    captured = capsys.readouterr()
    assert 'baseline KL(attn || uniform)  SL KL(attn || uniform)' in captured.out
    assert captured.err.count('note:') == 1
    assert [t.get_text() for t in figures[1].axes[0].get_legend().get_texts()] == [
        'baseline', 'SL', 'SL: floor of its masks']


def test_cli_labels_a_recorded_baseline_run_and_two_of_a_kind(tmp_path, image_dir, capsys, figures):
    """A train.py checkpoint records its model kwargs: a run of spt=False lsa=False given alone was drawn as "SL".
    Two SL checkpoints are told apart by their flags (the same label twice merged them into one column)."""
    model = _model('sl_vit_32', dict(depth=1), baseline=True)
    torch.save({'state_dict': model.state_dict(), 'epoch': 3, 'arch': 'sl_vit_32',
                'args': {'model': 'sl_vit_32', 'model_kwargs': {'depth': 1, 'spt': False, 'lsa': False}}},
               tmp_path / 'run.pth')
    out = tmp_path / 'attn.png'
    assert main(['attention', str(image_dir / '0.png'), '--model', 'sl_vit_32', '--checkpoint',
                 str(tmp_path / 'run.pth'), '--out', str(out)]) == 0
    assert 'note:' not in capsys.readouterr().err  # nothing contradicts: no --compare-checkpoint
    assert [r['model'] for r in json.loads(out.with_suffix('.json').read_text())] == ['baseline']
    assert [ax.get_title() for ax in figures[0].axes if ax.get_images()] == ['input', 'baseline']
    for name in ('a.pth', 'b.pth'):
        _checkpoint(tmp_path / name, 'sl_vit_32', dict(depth=1))
    assert main(['attention', str(image_dir / '0.png'), '--model', 'sl_vit_32', '--model-kwargs', 'depth=1',
                 '--checkpoint', str(tmp_path / 'a.pth'), '--compare-checkpoint', str(tmp_path / 'b.pth'),
                 '--out', str(out)]) == 0
    err = capsys.readouterr().err
    assert f'--compare-checkpoint {tmp_path.name}/b.pth holds SL (' in err and err.count('note:') == 1
    assert [r['model'] for r in json.loads(out.with_suffix('.json').read_text())] == [
        'SL (--checkpoint)', 'SL (--compare-checkpoint)']
    _checkpoint(tmp_path / 'base.pth', 'sl_vit_32', dict(depth=1), baseline=True)
    assert main(['attention', str(image_dir / '0.png'), '--model', 'sl_vit_32', '--model-kwargs', 'depth=1',
                 'spt=False', 'lsa=False', '--compare-checkpoint', str(tmp_path / 'base.pth'), '--out', str(out)]) == 0
    err = capsys.readouterr().err  # a baseline without checkpoint: no file to name
    assert 'the random init model holds baseline (spt=False, lsa mask=False, learned temperature=False), not SL' in err
    assert [r['model'] for r in json.loads(out.with_suffix('.json').read_text())] == [
        'baseline (random init)', 'baseline (--compare-checkpoint)']


def test_cli_kld_and_temperature_charts_start_at_zero_and_name_their_units(tmp_path, image_dir, capsys, figures):
    """The KL axis spanned the data alone, so an untrained model's flat curve (0.018 +- 0.0003) filled the height
    like a steep one; it starts at 0 now (KL >= 0), in nats. The temperature axis starts at 0 too, and says that
    the value multiplies QK^T (higher: sharper), which "temperature" alone reads the other way round."""
    assert main(['kld', str(image_dir), '--model', 'sl_vit_32', '--model-kwargs', 'depth=3',
                 '--out', str(tmp_path / 'k.png')]) == 0
    assert main(['temperature', '--model', 'sl_vit_32', '--model-kwargs', 'depth=3',
                 '--out', str(tmp_path / 't.png')]) == 0
    capsys.readouterr()
    kld, temperature = (fig.axes[0] for fig in figures)
    line = kld.get_lines()[0]
    values = list(line.get_ydata())
    low, high = kld.get_ylim()
    assert low == 0. and max(values) < high <= 1.1 * max(values)
    assert kld.get_ylabel() == 'mean KL(attention || uniform) (nats)'
    low, high = temperature.get_ylim()
    assert low == 0. and 0.25 < high <= 0.3  # every head at 16 ** -0.5: one flat line, measured from 0
    assert temperature.get_ylabel() == "multiplier of QK^T ('temperature'; higher = sharper)"


def test_kld_floor_is_what_the_masks_alone_give():
    torch.manual_seed(0)
    free = torch.rand(2, 3, 5, 5).softmax(-1)
    assert kld_floor(free).item() == 0.  # every key open
    masked = torch.randn(2, 3, 5, 5).masked_fill(torch.eye(5, dtype=torch.bool), float('-inf')).softmax(-1)
    assert kld_floor(masked).item() == pytest.approx(math.log(5 / 4), rel=1e-6)  # LSA's diagonal
    shifted = torch.randn(1, 1, 4, 4)
    shifted[..., :2, 2:] -= 100.  # timm's Swin shift mask: -100, a weight of ~4e-44, not exactly 0
    shifted[..., 2:, :2] -= 100.
    probs = shifted.softmax(-1)
    assert probs.min() > 0 and kld_floor(probs).item() == pytest.approx(math.log(2), rel=1e-6)
    assert kld_to_uniform(masked).item() >= kld_floor(masked).item()


def test_cli_kld_draws_each_models_mask_floor(tmp_path, image_dir, capsys, figures):
    """An untrained sl_vit_32 read 0.018 against its baseline's 0.002 as if SL's attention were sharper: 0.0155 of
    it is log(65/64), what the masked own key alone gives. The chart draws that floor under each curve whose masks
    have one (a shifted Swin window's region too, baseline included); the table prints it."""
    assert main(['kld', str(image_dir), '--model', 'sl_vit_32', '--model-kwargs', 'depth=2',
                 '--out', str(tmp_path / 'k.png')]) == 0
    out = capsys.readouterr().out
    assert 'SL floor (masks alone)' in out
    ax = figures[0].axes[0]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ['SL', 'SL: floor of its masks']
    sl, floor = ax.get_lines()
    assert list(floor.get_ydata()) == pytest.approx([math.log(65 / 64)] * 2, rel=1e-5)
    assert all(kl > f for kl, f in zip(sl.get_ydata(), floor.get_ydata()))
    kwargs = dict(depths=(2, 1, 1), window_size=2)
    _checkpoint(tmp_path / 'sl.pth', 'sl_swin_32', kwargs)
    _checkpoint(tmp_path / 'base.pth', 'sl_swin_32', kwargs, baseline=True)
    assert main(['kld', str(image_dir), '--model', 'sl_swin_32', '--model-kwargs', *_cli_kwargs(kwargs),
                 '--checkpoint', str(tmp_path / 'sl.pth'), '--compare-checkpoint', str(tmp_path / 'base.pth'),
                 '--out', str(tmp_path / 'k.png')]) == 0
    capsys.readouterr()
    ax = figures[1].axes[0]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        'SL', 'baseline', 'SL: floor of its masks', 'baseline: floor of its masks']
    base_floor = ax.get_lines()[3].get_ydata()
    assert base_floor[0] == 0. and base_floor[1] > 0.1  # the second block's shifted windows mask across regions


def test_a_floor_at_a_single_depth_is_drawn(tmp_path, image_dir, capsys, figures):
    """At depth 1 a floor is one point: a dotted line without a marker drew nothing while the legend named it."""
    assert main(['kld', str(image_dir), '--model', 'sl_vit_32', '--model-kwargs', 'depth=1',
                 '--out', str(tmp_path / 'k.png')]) == 0
    capsys.readouterr()
    floor = figures[0].axes[0].get_lines()[1]
    assert floor.get_label() == 'SL: floor of its masks' and len(floor.get_ydata()) == 1
    assert floor.get_marker() not in ('None', '', ' ', None) and floor.get_markersize() > 0


def _run_folder(folder, name, kwargs, **train_args):
    """A train.py run folder: ``model_best.pth.tar`` and the ``args.yaml`` recording ``name``, ``kwargs`` and
    ``train_args``."""
    import yaml
    folder.mkdir()
    model = _checkpoint(folder / 'model_best.pth.tar', name, kwargs)
    (folder / 'args.yaml').write_text(yaml.safe_dump(dict(model=name, model_kwargs=kwargs, **train_args)))
    return model


def test_kld_and_attention_normalise_with_the_training_data_config(tmp_path, image_dir, capsys, figures):
    """kld / attention put a run's images through the model's default mean / std (CIFAR-100's), not the data config
    the run trained with (its args.yaml), as export does."""
    from timm.data import resolve_data_config
    model = _run_folder(tmp_path / 'run', 'sl_vit_32', dict(depth=1), mean=[0.5] * 3, std=[0.25] * 3)
    checkpoint = str(tmp_path / 'run' / 'model_best.pth.tar')
    with torch.no_grad():  # sharper attention than at init, so that its KL follows the input
        model.blocks[0].attn.qkv.weight.mul_(20)
    torch.save({'state_dict': model.state_dict()}, checkpoint)
    trained = dict(resolve_data_config({}, model=model), mean=(0.5,) * 3, std=(0.25,) * 3)
    batch = load_images([str(image_dir)], model, trained).tensor
    default = load_images([str(image_dir)], model).tensor
    assert not torch.allclose(batch, default)
    said = (f"SL input: 32x32 px, mean (0.5, 0.5, 0.5), std (0.25, 0.25, 0.25), crop_pct 1.0, bicubic: the data "
            f"config its run trained with ({tmp_path / 'run' / 'args.yaml'})")

    assert main(['kld', str(image_dir), '--model', 'sl_vit_32', '--checkpoint', checkpoint,
                 '--out', str(tmp_path / 'k.png')]) == 0
    printed = capsys.readouterr().out
    assert said in printed.splitlines()
    (row,) = [line.split() for line in printed.splitlines() if line[:1].isdigit()]
    assert float(row[2]) == pytest.approx(kld_by_depth(model, batch)['blocks.0.attn'], abs=1e-4)
    assert float(row[2]) != pytest.approx(kld_by_depth(model, default)['blocks.0.attn'], abs=1e-4)

    out = tmp_path / 'a.png'
    assert main(['attention', str(image_dir), '--model', 'sl_vit_32', '--checkpoint', checkpoint,
                 '--out', str(out)]) == 0
    assert said in capsys.readouterr().out.splitlines()
    records = json.loads(out.with_suffix('.json').read_text())
    expected = final_attention_map(model, batch).maps.mean(1)
    torch.testing.assert_close(torch.tensor([r['mean'] for r in records]), expected, atol=1e-6, rtol=1e-5)
    assert not torch.allclose(expected, final_attention_map(model, default).maps.mean(1), atol=1e-4)

    # a checkpoint that records no arguments: the model's default, and the output says so
    _checkpoint(tmp_path / 'bare.pth', 'sl_vit_32', dict(depth=1))
    assert main(['kld', str(image_dir), '--model', 'sl_vit_32', '--model-kwargs', 'depth=1', '--checkpoint',
                 str(tmp_path / 'bare.pth'), '--out', str(tmp_path / 'k.png')]) == 0
    assert ("SL input: 32x32 px, mean (0.5071, 0.4865, 0.4409), std (0.2673, 0.2564, 0.2762), crop_pct 1.0, "
            "bicubic: the model's default data config at its image size (its run records no arguments)") in \
        capsys.readouterr().out.splitlines()


@pytest.mark.parametrize('name,kwargs', [('slify', ['base=vit_tiny_patch16_224', 'img_size=32', 'patch_size=4',
                                                     'depth=1']), ('sl_vit_32', ['img_size=64', 'depth=1'])])
def test_images_are_sized_for_the_model_as_built(name, kwargs, tmp_path, image_dir, capsys):
    """A model built with img_size= keeps its registered cfg's input size (slify: 224): the images were resized to that
    and the forward failed with a traceback."""
    assert main(['kld', str(image_dir), '--model', name, '--model-kwargs', *kwargs,
                 '--out', str(tmp_path / 'k.png')]) == 0
    size = kwargs[1 if name == 'slify' else 0].split('=')[1]
    assert f'input: {size}x{size} px' in capsys.readouterr().out


def test_slify_models_are_named_by_their_base(tmp_path, image_dir, capsys, figures):
    """Every chart and line of a slify model named it 'slify', not which timm model was converted."""
    kwargs = ['--model', 'slify', '--model-kwargs', 'base=vit_tiny_patch16_224', 'img_size=32', 'patch_size=4',
              'depth=1']
    for command in ('temperature', 'kld', 'attention'):
        images = [] if command == 'temperature' else [str(image_dir)]
        assert main([command, *images, *kwargs, '--out', str(tmp_path / f'{command}.png')]) == 0
        assert _title(figures[-1]).replace('\n', ' ').startswith(
            'slify(vit_tiny_patch16_224), img_size=32, patch_size=4, depth=1, RANDOM INIT ')
    assert main(['receptive-field', *kwargs]) == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith('slify(vit_tiny_patch16_224): first tokenization ')


@pytest.mark.parametrize('command', [['demo'], ['temperature', '--model', 'sl_vit_32'],
                                     ['kld', 'img', '--model', 'sl_vit_32'],
                                     ['attention', 'img', '--model', 'sl_vit_32']])
def test_out_that_is_a_folder_is_refused_before_any_work(command, tmp_path, capsys):
    """A folder named like a chart was only found when the chart was saved (demo: after training), as
    'figs/dir.png: is a directory'."""
    (tmp_path / 'dir.png').mkdir()
    with pytest.raises(SystemExit) as info:
        main(command + ['--out', str(tmp_path / 'dir.png')])
    assert info.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"timm-sl {command[0]}: error: argument --out: '{tmp_path / 'dir.png'}' is a folder; allowed: a chart file "
        f"name ending in .png, .jpg, .jpeg, .pdf, .svg, e.g. '{tmp_path / 'dir.png' / 'chart.png'}'")


def test_attention_refuses_to_replace_files_it_did_not_write(tmp_path, image_dir, capsys, figures, monkeypatch):
    """attention --out X.png replaced a user's X.json, and wrote X.png before failing on a folder X.json."""
    import timm_sl.tools.cli as cli
    built = []
    monkeypatch.setattr(cli, '_analysis_run', lambda *a, _run=cli._analysis_run, **k: built.append(1) or _run(*a, **k))
    command = ['attention', str(image_dir), '--model', 'sl_vit_32', '--model-kwargs', 'depth=1', '--out']
    out = tmp_path / 'attn.png'
    out.with_suffix('.json').write_text('{"mine": 1}\n')
    with pytest.raises(SystemExit, match=(
            f'^timm-sl attention: --out {out}: its numbers would replace {out.with_suffix(".json")}, which timm-sl '
            f'attention did not write; allowed: an --out whose .json name is free or holds numbers of an earlier '
            f'timm-sl attention \\(move attn.json away, pick another --out, or --overwrite to replace it\\)$')):
        main(command + [str(out)])
    assert out.with_suffix('.json').read_text() == '{"mine": 1}\n' and not out.exists() and not built

    folder = tmp_path / 'f.png'
    folder.with_suffix('.json').mkdir()
    with pytest.raises(SystemExit, match=f'^timm-sl attention: {folder.with_suffix(".json")} is a folder; expected '
                                         f'attention.s numbers \\(--out with .json\\); allowed: an --out whose'):
        main(command + [str(folder)])
    assert not folder.exists() and not built

    image = tmp_path / 'photo.png'
    image.write_bytes((image_dir / '0.png').read_bytes())
    for cmd in ('attention', 'kld'):  # the chart would replace the image it is drawn from
        with pytest.raises(SystemExit, match=f'^timm-sl {cmd}: --out {image} is one of the input images'):
            main([cmd, str(image), '--model', 'sl_vit_32', '--out', str(image)])
        with pytest.raises(SystemExit, match=f'^timm-sl {cmd}: --out {image_dir / "1.png"} is one of the input'):
            main([cmd, str(image_dir), '--model', 'sl_vit_32', '--out', str(image_dir / '1.png')])
    assert image.read_bytes() == (image_dir / '0.png').read_bytes() and not built
    linked = tmp_path / 'linked'  # an image of a linked subfolder: --out through the link replaced it
    linked.mkdir()
    (linked / 'in.png').write_bytes(image.read_bytes())
    (tmp_path / 'folder').mkdir()
    (tmp_path / 'folder' / 'sub').symlink_to(linked)
    for cmd in ('attention', 'kld'):
        with pytest.raises(SystemExit, match=f'^timm-sl {cmd}: --out {tmp_path / "folder/sub/in.png"} is one of the '
                                             f'input images'):
            main([cmd, str(tmp_path / 'folder'), '--model', 'sl_vit_32', '--out', str(tmp_path / 'folder/sub/in.png')])
    assert (linked / 'in.png').read_bytes() == image.read_bytes() and not built

    fresh = tmp_path / 'new.png'  # numbers of an earlier attention: replaced, as its chart is
    assert main(command + [str(fresh), '--heads', 'all']) == 0
    assert main(command + [str(fresh)]) == 0
    assert 'heads' in json.loads(fresh.with_suffix('.json').read_text())[0] and len(built) == 2


def test_attention_numbers_never_replace_an_input_image(tmp_path, image_dir):
    """An image named directly is read whatever its suffix: ``attention scan.json --out scan.png --overwrite`` wrote
    its numbers over the image it had just drawn (the chart's own check covered --out, not its .json)."""
    image = tmp_path / 'scan.json'
    image.write_bytes((image_dir / '0.png').read_bytes())
    with pytest.raises(SystemExit, match=f'^timm-sl attention: --out {tmp_path / "scan.png"}: its numbers '
                                         f'{image} would replace one of the input images'):
        main(['attention', str(image), '--model', 'sl_vit_32', '--model-kwargs', 'depth=1', '--out',
              str(tmp_path / 'scan.png'), '--overwrite'])
    assert image.read_bytes() == (image_dir / '0.png').read_bytes() and not (tmp_path / 'scan.png').exists()


def test_attention_numbers_in_a_fifo_are_refused_and_overwrite_replaces_a_users_json(tmp_path, image_dir, monkeypatch):
    """A FIFO at --out's .json was read to see whether attention wrote it: the command waited forever for a writer.
    ``--overwrite`` replaces a user's file there (its chart's too)."""
    import timm_sl.tools.cli as cli
    monkeypatch.setattr(cli, '_analysis_run', lambda *a, **k: pytest.fail('a model was built before --out was checked'))
    os.mkfifo(tmp_path / 'attn.json')
    command = ['attention', str(image_dir), '--model', 'sl_vit_32', '--model-kwargs', 'depth=1', '--out']
    for flags in [], ['--overwrite']:
        with pytest.raises(SystemExit, match=f'^timm-sl attention: {tmp_path / "attn.json"} is a FIFO '
                                             f'\\(named pipe\\), not a regular file; expected attention.s numbers'):
            main(command + [str(tmp_path / 'attn.png'), *flags])
    monkeypatch.undo()
    mine = tmp_path / 'mine.png'
    mine.write_bytes(b'my own file')
    mine.with_suffix('.json').write_text('{"mine": 1}')
    assert main(command + [str(mine), '--overwrite']) == 0
    from timm_sl.tools.plot import is_chart
    assert json.loads(mine.with_suffix('.json').read_text())[0]['model'] == 'SL' and is_chart(mine)


@pytest.mark.parametrize('cmd', ['kld', 'attention'])
@pytest.mark.parametrize('model,kwargs,owner', [
    ('sl_vit_32', ['patch_size=64'], 'sl_vit_32: img_size=32, patch_size=64'),
    ('sl_vit_32', ['patch_size=64', 'spt=False'], 'sl_vit_32: img_size=32, patch_size=64'),
    ('sl_swin_32', ['patch_size=64'], 'sl_swin_32: img_size=32, patch_size=64, window_size=4 (stage 0)')])
def test_a_model_whose_patch_exceeds_its_input_is_one_line(cmd, model, kwargs, owner, tmp_path, image_dir, capsys):
    """``kld --model-kwargs patch_size=64`` (32 px images) ended in a traceback from the model's forward (ViT), or in
    a ZeroDivisionError said to be a size below 1 (Swin): the model now refuses its empty token grid when built."""
    with pytest.raises(SystemExit) as info:
        main([cmd, str(image_dir), '--model', model, '--model-kwargs', *kwargs, '--out', str(tmp_path / 'c.png')])
    assert info.value.code == 2
    assert capsys.readouterr().err == (f'timm-sl {cmd}: {owner} give a 0x0 token grid; allowed: at least one token per '
                                       f'axis: an img_size at least the patch (or kernel) size.\n')


def test_a_fifo_among_the_images_is_refused_not_waited_on(tmp_path, image_dir):
    """A FIFO named like an image in the images folder: PIL opened it and the command waited forever for a writer."""
    folder = tmp_path / 'images'
    folder.mkdir()
    (folder / 'a.png').write_bytes((image_dir / '0.png').read_bytes())
    os.mkfifo(folder / 'b.png')
    for cmd in ('kld', 'attention'):
        with pytest.raises(SystemExit, match=f'^timm-sl {cmd}: {folder / "b.png"} is a FIFO \\(named pipe\\), not a '
                                             f'regular file; expected an image file$'):
            main([cmd, str(folder), '--model', 'sl_vit_32', '--model-kwargs', 'depth=1', '--out',
                  str(tmp_path / 'c.png')])


def test_a_model_without_attention_layers_is_named_so(image_dir, tmp_path):
    """``kld --model-kwargs depth=0`` said the model 'has no supported attention layer to capture' and listed the
    supported kinds, as if its attention were of another kind: it has none."""
    for cmd in ('kld', 'attention'):
        with pytest.raises(SystemExit, match=f'^timm-sl {cmd}: sl_vit_32 has no supported attention layer '
                                             f'\\(it has no attention layer at all: depth 0\\?\\); allowed: a model '
                                             f'with at least one attention layer of a supported kind: '):
            main([cmd, str(image_dir), '--model', 'sl_vit_32', '--model-kwargs', 'depth=0', '--out',
                  str(tmp_path / 'c.png')])


def test_titles_name_the_checkpoint_a_run_folder_gives(tmp_path, image_dir, capsys, figures):
    """A run folder given for a checkpoint is named in the chart by the file read from it (its model_best.pth.tar,
    else last.pth.tar), not by the folder as if it were a file in its parent."""
    _run_folder(tmp_path / 'sl', 'sl_vit_32', dict(depth=1))
    _run_folder(tmp_path / 'base', 'sl_vit_32', dict(depth=1, spt=False, lsa=False))
    (tmp_path / 'base' / 'model_best.pth.tar').rename(tmp_path / 'base' / 'last.pth.tar')
    assert main(['temperature', '--model', 'sl_vit_32', '--checkpoint', str(tmp_path / 'sl'),
                 '--out', str(tmp_path / 't.png')]) == 0
    assert _title(figures[0]) == 'sl_vit_32, depth=1, checkpoint sl/model_best.pth.tar: learned temperature per depth'
    assert main(['kld', str(image_dir), '--model', 'sl_vit_32', '--checkpoint', str(tmp_path / 'sl'),
                 '--compare-checkpoint', str(tmp_path / 'base'), '--out', str(tmp_path / 'k.png')]) == 0
    assert _title(figures[1]).startswith('sl_vit_32, depth=1, SL checkpoint sl/model_best.pth.tar, baseline '
                                         'checkpoint base/last.pth.tar: ')


def test_titles_say_when_a_checkpoints_ema_weights_are_analysed(tmp_path, capsys, figures):
    """A train.py --model-ema checkpoint holds two sets of weights; the analyses read the EMA ones (as timm's loader
    and export do), which early in a run are still near the init: the title says so."""
    model = _model('sl_vit_32', dict(depth=1))
    ema = {k: v.clone() for k, v in model.state_dict().items()}
    ema['blocks.0.attn.temperature'].fill_(0.3)
    torch.save({'state_dict': model.state_dict(), 'state_dict_ema': ema}, tmp_path / 'ema.pth.tar')
    torch.save({'state_dict': ema}, tmp_path / 'raw.pth.tar')
    for name, weights in ('ema', ' (EMA weights)'), ('raw', ''):
        assert main(['temperature', '--model', 'sl_vit_32', '--model-kwargs', 'depth=1', '--checkpoint',
                     str(tmp_path / f'{name}.pth.tar'), '--out', str(tmp_path / 't.png')]) == 0
        assert '0.3000' in capsys.readouterr().out
        assert _title(figures[-1]) == (f'sl_vit_32, depth=1, checkpoint {tmp_path.name}/{name}.pth.tar{weights}: '
                                       f'learned temperature per depth')


@pytest.mark.parametrize('command', ['kld', 'attention', 'temperature', 'receptive-field'])
def test_another_runs_args_yaml_is_refused_with_model_named(tmp_path, image_dir, command, figures):
    """A run folder whose args.yaml is another run's (another model, mean / std) was refused with --model left out,
    but with --model naming the checkpoint's model its images went through that run's data config, silently."""
    import yaml
    (tmp_path / 'run').mkdir()
    model = _model('sl_vit_32', dict(depth=1))
    torch.save({'state_dict': model.state_dict(), 'arch': 'sl_vit_32',
                'args': dict(model='sl_vit_32', model_kwargs=dict(depth=1))}, tmp_path / 'run' / 'model_best.pth.tar')
    (tmp_path / 'run' / 'args.yaml').write_text(yaml.safe_dump(dict(model='sl_vit_64', mean=[0.9] * 3)))
    images = [str(image_dir)] if command in ('kld', 'attention') else []
    out = [] if command == 'receptive-field' else ['--out', str(tmp_path / 'c.png')]
    with pytest.raises(SystemExit, match="args.yaml is not the args.yaml of .*model 'sl_vit_64' there"):
        main([command, *images, '--model', 'sl_vit_32', '--model-kwargs', 'depth=1', '--checkpoint',
              str(tmp_path / 'run'), *out])


def test_a_run_of_another_model_is_named_as_the_checkpoints_with_model_left_out(tmp_path):
    """--model left out: a run of a plain timm model was refused as "unknown model 'vit_tiny_patch16_224' (did you
    mean sl_vit_tiny?)", a name the user never gave, without the file it came from."""
    model = timm.create_model('vit_tiny_patch16_224', img_size=32, patch_size=4, depth=1, num_classes=10)
    torch.save({'state_dict': model.state_dict(), 'arch': 'vit_tiny_patch16_224',
                'args': dict(model='vit_tiny_patch16_224', model_kwargs=dict(img_size=32, patch_size=4, depth=1))},
               tmp_path / 'plain.pth.tar')
    checkpoint = str(tmp_path / 'plain.pth.tar')
    for argv in ['temperature', '--out', str(tmp_path / 't.png')], ['receptive-field']:
        with pytest.raises(SystemExit) as info:
            main([*argv, '--checkpoint', checkpoint])
        assert str(info.value) == (f"timm-sl {argv[0]}: {checkpoint} records model 'vit_tiny_patch16_224' (its run), "
                                   f"not an sl_ model; allowed: a checkpoint of an sl_ model or slify, or --model "
                                   f"NAME for the model its weights fit")


def test_model_kwargs_beside_a_slify_run_keep_its_base(tmp_path, capsys, figures):
    """--model-kwargs beside a slify run's checkpoint kept the run's SPT / LSA switches but dropped its base: every
    such call failed with "base=None is invalid ... e.g. --model-kwargs base=vit_small_patch16_224", another model."""
    kwargs = dict(base='vit_tiny_patch16_224', img_size=32, patch_size=4, depth=1)
    model = timm.create_model('slify', num_classes=10, **kwargs)
    model.blocks[0].attn.temperature.data.fill_(0.3)
    torch.save({'state_dict': model.state_dict(), 'arch': 'slify', 'args': dict(model='slify', model_kwargs=kwargs)},
               tmp_path / 'slify.pth.tar')
    assert main(['temperature', '--checkpoint', str(tmp_path / 'slify.pth.tar'), '--model-kwargs', 'img_size=32',
                 'patch_size=4', 'depth=1', '--out', str(tmp_path / 't.png')]) == 0
    assert '0.3000' in capsys.readouterr().out
    assert _title(figures[-1]).startswith(
        'slify(vit_tiny_patch16_224), img_size=32, patch_size=4, depth=1, checkpoint ')


def test_titles_say_ema_weights_of_a_run_that_records_its_model(tmp_path, capsys, figures):
    """A train.py --model-ema run folder records its model (args.yaml, the checkpoint's args): its EMA weights were
    analysed under a title that did not say so, with --model given or taken from the run."""
    _run_folder(tmp_path / 'run', 'sl_vit_32', dict(depth=1))
    model = _model('sl_vit_32', dict(depth=1))
    ema = {k: v.clone() for k, v in model.state_dict().items()}
    ema['blocks.0.attn.temperature'].fill_(0.3)
    torch.save({'state_dict': model.state_dict(), 'state_dict_ema': ema, 'arch': 'sl_vit_32',
                'args': dict(model='sl_vit_32', model_kwargs=dict(depth=1))}, tmp_path / 'run' / 'model_best.pth.tar')
    for named in ['--model', 'sl_vit_32'], []:
        out = str(tmp_path / 't.png')
        assert main(['temperature', *named, '--checkpoint', str(tmp_path / 'run'), '--out', out]) == 0
        assert '0.3000' in capsys.readouterr().out
        assert _title(figures[-1]) == 'sl_vit_32, depth=1, checkpoint run/model_best.pth.tar (EMA weights): ' \
                                      'learned temperature per depth'


def test_kld_of_compared_checkpoints_of_other_depths_keeps_every_depth(tmp_path, image_dir, capsys, figures):
    """Each run is built as it recorded: a compared baseline shallower than the first model cut the table to its
    depth (the first model's deeper rows silently gone), a deeper one was an IndexError traceback."""
    _run_folder(tmp_path / 'sl2', 'sl_vit_32', dict(depth=2))
    _run_folder(tmp_path / 'base1', 'sl_vit_32', dict(depth=1, spt=False, lsa=False))
    for first, compared in ('sl2', 'base1'), ('base1', 'sl2'):
        assert main(['kld', str(image_dir), '--model', 'sl_vit_32', '--checkpoint', str(tmp_path / first),
                     '--compare-checkpoint', str(tmp_path / compared), '--out', str(tmp_path / 'k.png')]) == 0
        rows = [line.split() for line in capsys.readouterr().out.splitlines() if line[:1] in ('1', '2', '3')]
        assert [r[:2] for r in rows] == [['1', 'blocks.0.attn'], ['2', 'blocks.1.attn']]
        baseline = 2 if first == 'base1' else 3  # the column of the baseline's KL
        assert rows[1][baseline] == '-' and all(float(v) >= 0 for v in rows[0][2:])
        plotted = {line.get_label(): list(line.get_ydata()) for line in figures[-1].axes[0].get_lines()}
        assert plotted['SL'] == pytest.approx([float(r[5 - baseline]) for r in rows], abs=1e-4)
        assert plotted['baseline'] == pytest.approx([float(rows[0][baseline])], abs=1e-4)


def test_nan_attention_is_not_read_as_uniform_and_is_refused(tmp_path, image_dir, capsys):
    """A diverged run's NaN weights: kld read the NaN layer as KL 0.0000 (perfectly uniform) over a floor of
    log(65), attention drew a blank map on a -0.1..0.1 colour scale and reported KL 0, temperature plotted no point
    for inf. The measures keep NaN; the commands refuse such a model in one line naming the checkpoint and layer."""
    attn = torch.softmax(torch.randn(2, 3, 5, 5), -1)
    attn[0, 0, 1] = float('nan')
    assert math.isnan(kld_to_uniform(attn).item()) and math.isnan(kld_floor(attn).item())
    model = _run_folder(tmp_path / 'nan', 'sl_vit_32', dict(depth=2))
    state = model.state_dict()
    state['blocks.1.attn.qkv.weight'].fill_(float('nan'))
    state['blocks.0.attn.temperature'].fill_(float('inf'))
    torch.save({'state_dict': state}, tmp_path / 'nan' / 'model_best.pth.tar')
    run = tmp_path / 'nan' / 'model_best.pth.tar'
    for command, layer in ('kld', 'blocks.0.attn, blocks.1.attn'), ('attention', 'blocks.1.attn'), \
            ('temperature', 'blocks.0.attn'):
        images = [] if command == 'temperature' else [str(image_dir)]
        with pytest.raises(SystemExit):
            main([command, *images, '--model', 'sl_vit_32', '--checkpoint', str(run), '--out',
                  str(tmp_path / 'c.png')])
        assert capsys.readouterr().err.splitlines()[-1] == (
            f'timm-sl {command}: SL (checkpoint {run}) gives NaN / inf in {layer} (its weights hold NaN or inf: a '
            f'diverged run?); allowed: a model whose numbers are finite, e.g. an earlier checkpoint of the run')
        assert not (tmp_path / 'c.png').exists()


@pytest.mark.parametrize('command', ['temperature', 'kld', 'attention'])
def test_every_analysis_takes_the_model_a_checkpoint_recorded(command, tmp_path, image_dir, capsys, figures):
    """temperature / kld / attention required --model even where the checkpoint's run records it (receptive-field
    does not): one rule for all; the title names the recorded model."""
    _run_folder(tmp_path / 'run', 'sl_vit_32', dict(depth=1))
    images = [] if command == 'temperature' else [str(image_dir)]
    assert main([command, *images, '--checkpoint', str(tmp_path / 'run'), '--out', str(tmp_path / 'c.png')]) == 0
    assert _title(figures[-1]).startswith('sl_vit_32, depth=1, checkpoint run/model_best.pth.tar')
    with pytest.raises(SystemExit, match=f'^timm-sl {command}: no model to analyse; allowed: --model NAME '):
        main([command, *images, '--out', str(tmp_path / 'd.png')])
    assert not (tmp_path / 'd.png').exists()


def test_depth_axes_name_their_first_layer(tmp_path, image_dir, figures):
    """T2T: temperature's depth 1 is the tokenizer's LSA layer, kld's the first block; both axes said 'depth'."""
    out = str(tmp_path / 'c.png')
    for command in (['temperature'], ['kld', str(image_dir)]):
        assert main([*command, '--model', 'sl_t2t_32', '--model-kwargs', 'depth=1', '--out', out]) == 0
    assert [fig.axes[0].get_xlabel() for fig in figures] == ['depth (1 = patch_embed.stages.0.layer.attn)',
                                                              'depth (1 = blocks.0.attn)']


def test_kld_refuses_compared_checkpoints_whose_layers_do_not_line_up(tmp_path, image_dir, figures):
    """CaiT of another depth: the chart and table put SL's class attention and the baseline's self-attention at one
    depth ('blocks_token_only.0.attn / blocks.1.attn'), a comparison of two kinds of layer."""
    _run_folder(tmp_path / 'sl', 'sl_cait_32', dict(depth=1, depth_token_only=1))
    _run_folder(tmp_path / 'base', 'sl_cait_32', dict(depth=2, depth_token_only=1, spt=False, lsa=False))
    with pytest.raises(SystemExit, match=r'^timm-sl kld: --compare-checkpoint base/model_best.pth.tar does not line '
                                         r'up with the first model depth for depth: depth 2 is '
                                         r'blocks_token_only.0.attn in SL, blocks.1.attn in baseline; allowed: '):
        main(['kld', str(image_dir), '--model', 'sl_cait_32', '--checkpoint', str(tmp_path / 'sl'),
              '--compare-checkpoint', str(tmp_path / 'base'), '--out', str(tmp_path / 'k.png')])
    assert not figures and not (tmp_path / 'k.png').exists()


def test_receptive_field_of_a_checkpoint_uses_the_recorded_model(tmp_path, capsys):
    """``receptive-field --checkpoint X`` without --model answered 'nothing to measure'."""
    _run_folder(tmp_path / 'run', 'sl_t2t_32', dict(depth=1))
    assert main(['receptive-field', '--checkpoint', str(tmp_path / 'run' / 'model_best.pth.tar')]) == 0
    assert capsys.readouterr().out.strip() == ('sl_t2t_32: first tokenization step kernel 3, stride 2: standard '
                                               'tokenization r_token = 3, SPT (shift 1) r_token = 5')
    _checkpoint(tmp_path / 'bare.pth', 'sl_vit_32', dict(depth=1))
    with pytest.raises(SystemExit, match=f'^timm-sl receptive-field: {tmp_path / "bare.pth"} records no model '
                                         r'\(no args.yaml beside it naming one, no arch / args in it\); allowed: '
                                         'name it with --model$'):
        main(['receptive-field', '--checkpoint', str(tmp_path / 'bare.pth')])
    assert main(['receptive-field', '--model', 'sl_vit_32', '--model-kwargs', 'depth=1', '--checkpoint',
                 str(tmp_path / 'bare.pth')]) == 0
    assert 'sl_vit_32: first tokenization step kernel 4, stride 4' in capsys.readouterr().out


def test_a_compared_run_of_another_model_is_one_short_line(tmp_path, image_dir, capsys, figures):
    """kld / attention comparing runs of two models (sl_vit_32 with sl_pit_32), or --model naming another model than
    the run's: a true but 600-character line of missing / unexpected keys of the model it was tried as."""
    _run_folder(tmp_path / 'vit', 'sl_vit_32', dict(depth=1))
    _run_folder(tmp_path / 'pit', 'sl_pit_32', dict(depth=(1, 1, 1)))
    pit = tmp_path / 'pit' / 'model_best.pth.tar'
    for command in 'kld', 'attention':
        with pytest.raises(SystemExit) as info:
            main([command, str(image_dir), '--checkpoint', str(tmp_path / 'vit'), '--compare-checkpoint',
                  str(tmp_path / 'pit'), '--out', str(tmp_path / 'c.png')])
        assert str(info.value) == (f'timm-sl {command}: --compare-checkpoint {pit} holds sl_pit_32 (its run), the '
                                   f'first model is sl_vit_32; allowed: a checkpoint of sl_vit_32 (SL, its baseline '
                                   f'or another mix of its switches) to compare with')
    with pytest.raises(SystemExit) as info:
        main(['temperature', '--model', 'sl_vit_32', '--checkpoint', str(pit), '--out', str(tmp_path / 'c.png')])
    assert str(info.value) == (f'timm-sl temperature: --checkpoint {pit} holds sl_pit_32 (its run), not --model '
                               f'sl_vit_32; allowed: --model sl_pit_32, or --model left out')
    assert not figures and not (tmp_path / 'c.png').exists()


def _refused(argv, chart):
    """The one line ``main(argv)`` exits with, after checking that no ``chart`` was drawn."""
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert not chart.exists()
    return str(info.value)


@pytest.mark.parametrize('command', ['kld', 'attention'])
def test_a_compared_run_of_another_configuration_is_refused(command, tmp_path, image_dir, figures):
    """A compared baseline run of another width, head count, MLP ratio or patch size was drawn and tabled as
    'baseline' beside SL, as if the two differed by SL alone. Refused in one line naming what differs; a kwarg given
    at its default value and another depth are the same configuration."""
    _run_folder(tmp_path / 'sl', 'sl_vit_32', dict(depth=1))
    argv = [command, str(image_dir), '--checkpoint', str(tmp_path / 'sl'), '--out', str(tmp_path / 'c.png'),
            '--compare-checkpoint']
    for i, (kwargs, differs) in enumerate([(dict(embed_dim=96), 'embed_dim=96 (first: default)'),
                                           (dict(num_heads=6), 'num_heads=6 (first: default)'),
                                           (dict(mlp_ratio=1.0), 'mlp_ratio=1.0 (first: default)'),
                                           (dict(patch_size=8), 'patch_size=8 (first: default)')]):
        _run_folder(tmp_path / f'other{i}', 'sl_vit_32', dict(depth=1, spt=False, lsa=False, **kwargs))
        assert _refused([*argv, str(tmp_path / f'other{i}')], tmp_path / 'c.png') == (
            f'timm-sl {command}: --compare-checkpoint {tmp_path}/other{i}/model_best.pth.tar is another '
            f'configuration of sl_vit_32 than the first model: {differs}; allowed: a checkpoint of the first model\'s '
            f'configuration (SL, its baseline or another mix of its switches; another depth)')
    # random init beside the run: its default num_classes (100) is the one the run records, not named
    assert _refused([command, str(image_dir), '--model', 'sl_vit_32', '--out', str(tmp_path / 'c.png'),
                     '--compare-checkpoint', str(tmp_path / 'other0')], tmp_path / 'c.png').endswith(
        "the first model: embed_dim=96 (first: default); allowed: a checkpoint of the first model's configuration (SL, "
        'its baseline or another mix of its switches; another depth)')
    assert not figures and not (tmp_path / 'c.png').exists()
    _run_folder(tmp_path / 'same', 'sl_vit_32', dict(depth=2, spt=False, lsa=False, embed_dim=192, num_heads=12))
    assert main([*argv, str(tmp_path / 'same')]) == 0


def test_a_compared_run_trained_on_another_dataset_is_refused(tmp_path, image_dir, figures):
    """SL trained on CIFAR-10 and a baseline trained on SVHN (ten classes each) were charted as SL vs baseline, the
    dataset named nowhere: their attention differs by what they learnt from, not by SL alone."""
    _run_folder(tmp_path / 'sl', 'sl_vit_32', dict(depth=1, num_classes=10), dataset='torch/cifar10', num_classes=10)
    for name, dataset in ('svhn', 'torch/svhn'), ('c10', 'torch/cifar10'):
        _run_folder(tmp_path / name, 'sl_vit_32', dict(depth=1, num_classes=10, spt=False, lsa=False),
                    dataset=dataset, num_classes=10)
    for command in 'kld', 'attention':
        argv = [command, str(image_dir), '--checkpoint', str(tmp_path / 'sl'), '--out', str(tmp_path / 'c.png')]
        assert _refused([*argv, '--compare-checkpoint', str(tmp_path / 'svhn')], tmp_path / 'c.png') == (
            f'timm-sl {command}: --compare-checkpoint {tmp_path}/svhn/model_best.pth.tar was trained on svhn, the '
            f'first model on cifar10 (as their runs record); allowed: a checkpoint trained on cifar10, as the paper '
            f'compares SL and its baseline')
        assert not figures and not (tmp_path / 'c.png').exists()
    assert main([*argv, '--compare-checkpoint', str(tmp_path / 'c10')]) == 0


def test_a_run_that_does_not_fit_the_kwargs_given_says_what_its_args_yaml_trained(tmp_path, figures):
    """A run whose args.yaml records sl_vit_32 {'depth': 1} (its checkpoint carries no arch / args, as train.py's
    model_best of older runs), given --model-kwargs it does not fit: 'it was trained as an unknown model (no arch /
    args in the checkpoint)', where its run folder says what it was."""
    _run_folder(tmp_path / 'run', 'sl_vit_32', dict(depth=1))
    with pytest.raises(SystemExit) as info:
        main(['temperature', '--checkpoint', str(tmp_path / 'run'), '--model-kwargs', 'depth=1', 'num_heads=6',
              '--out', str(tmp_path / 't.png')])
    assert str(info.value).startswith(
        f"timm-sl temperature: {tmp_path / 'run' / 'model_best.pth.tar'} does not fit sl_vit_32 {{'depth': 1, "
        f"'num_heads': 6, 'num_classes': 100}} (it was trained as sl_vit_32 {{'depth': 1}}): 1 shape mismatch(es)")


def test_a_checkpoint_that_records_only_its_arch_says_what_its_args_yaml_trained(tmp_path, figures):
    """A hand-saved checkpoint holding ``arch`` but no ``args``, in a run folder whose args.yaml records depth=1: 'it
    was trained as sl_vit_32', the depth its run recorded left out; now the kwargs of its args.yaml."""
    _run_folder(tmp_path / 'run', 'sl_vit_32', dict(depth=1))
    saved = torch.load(tmp_path / 'run' / 'model_best.pth.tar')
    torch.save({**saved, 'arch': 'sl_vit_32'}, tmp_path / 'run' / 'model_best.pth.tar')
    with pytest.raises(SystemExit) as info:
        main(['kld', str(tmp_path), '--checkpoint', str(tmp_path / 'run'), '--model-kwargs', 'depth=1', 'num_heads=6',
              '--out', str(tmp_path / 'k.png')])
    assert "(it was trained as sl_vit_32 {'depth': 1}): 1 shape mismatch(es)" in str(info.value)


def test_a_checkpoint_that_records_only_its_arch_is_built_with_the_kwargs_given(tmp_path, figures):
    """A hand-saved checkpoint holding ``arch`` but no ``args`` (and no args.yaml): ``--model-kwargs depth=1`` was
    checked against the model's defaults as if the run had recorded them, and refused as 'does not fit sl_vit_32
    {'num_classes': 100}', a model nobody asked for; it records no kwargs, so it is built as given."""
    torch.save({'state_dict': _model('sl_vit_32', dict(depth=1)).state_dict(), 'arch': 'sl_vit_32'},
               tmp_path / 'hand.pth')
    for model in ([], ['--model', 'sl_vit_32']):
        assert main(['temperature', *model, '--model-kwargs', 'depth=1', '--checkpoint', str(tmp_path / 'hand.pth'),
                     '--out', str(tmp_path / 't.png')]) == 0


def test_a_checkpoint_of_its_arch_that_fits_no_kwargs_given_says_so(tmp_path, image_dir, figures):
    """An arch-only checkpoint that the kwargs given do not fit said '--checkpoint X holds sl_vit_32, not --model
    sl_vit_32' (compared: 'holds sl_vit_32, the first model is sl_vit_32'): a contradiction, not what was wrong."""
    for name, kwargs, baseline in (('sl.pth', dict(depth=2), False), ('base.pth', dict(depth=1), True)):
        torch.save({'state_dict': _model('sl_vit_32', kwargs, baseline=baseline).state_dict(), 'arch': 'sl_vit_32'},
                   tmp_path / name)
    with pytest.raises(SystemExit) as info:
        main(['temperature', '--model-kwargs', 'depth=3', '--checkpoint', str(tmp_path / 'sl.pth'), '--out',
              str(tmp_path / 't.png')])
    assert f"{tmp_path / 'sl.pth'} does not fit sl_vit_32 {{'depth': 3, " in str(info.value)
    with pytest.raises(SystemExit) as info:
        main(['kld', str(image_dir), '--model-kwargs', 'depth=2', '--checkpoint', str(tmp_path / 'sl.pth'),
              '--compare-checkpoint', str(tmp_path / 'base.pth'), '--out', str(tmp_path / 'k.png')])
    assert 'base.pth records no model kwargs and fits neither sl_vit_32 nor its baseline' in str(info.value)


def test_pretrained_slify_is_checked_for_its_bases_weights(tmp_path, monkeypatch):
    """``--model slify --pretrained`` said 'slify has no pretrained weights' whatever its base: slify loads its
    base's. A base with none is named; one with weights is built pretrained."""
    kwargs = ['img_size=32', 'patch_size=4', 'depth=1']
    with pytest.raises(SystemExit) as info:
        main(['temperature', '--model', 'slify', '--pretrained', '--model-kwargs', 'base=vit_base_patch16_gap_224',
              *kwargs, '--out', str(tmp_path / 't.png')])
    assert str(info.value) == (
        'timm-sl temperature: slify(vit_base_patch16_gap_224): vit_base_patch16_gap_224 has no pretrained weights (no '
        'tag in timm.list_pretrained); allowed: --checkpoint FILE (a train.py checkpoint), or neither for random init')
    built = []
    create = timm.create_model

    def offline(name, pretrained=False, **kw):  # no download: the call is what is checked
        built.append((name, pretrained, kw.get('base')))
        return create(name, **kw)
    monkeypatch.setattr(timm, 'create_model', offline)
    assert main(['temperature', '--model', 'slify', '--pretrained', '--model-kwargs', 'base=vit_tiny_patch16_224',
                 *kwargs, '--out', str(tmp_path / 't.png')]) == 0
    assert built[0] == ('slify', True, 'vit_tiny_patch16_224')


def test_a_compared_bare_state_dict_of_another_model_is_one_short_line(tmp_path, image_dir, figures):
    """A compared state dict that records no model (no args.yaml, no arch / args) of sl_pit_32 beside an sl_vit_32
    run: a 600-character line of the keys it misses as sl_vit_32; now what it is not, and what is allowed."""
    _run_folder(tmp_path / 'vit', 'sl_vit_32', dict(depth=1))
    torch.save(_model('sl_pit_32', dict(depth=(1, 1, 1))).state_dict(), tmp_path / 'pit.pth')
    for command in 'kld', 'attention':
        for kwargs in [], ['--model-kwargs', 'depth=1']:
            given = '{}' if not kwargs else "{'depth': 1}"
            assert _refused([command, str(image_dir), '--checkpoint', str(tmp_path / 'vit'), *kwargs,
                             '--compare-checkpoint', str(tmp_path / 'pit.pth'), '--out', str(tmp_path / 'c.png')],
                            tmp_path / 'c.png') == (
                f'timm-sl {command}: --compare-checkpoint {tmp_path / "pit.pth"} records no model and fits neither '
                f'sl_vit_32 nor its baseline with --model-kwargs {given} (the weights of another model or '
                f'configuration); allowed: a checkpoint of sl_vit_32 (SL, its baseline or another mix of its '
                f'switches), with --model-kwargs giving the configuration it was trained with')
    assert not figures and not (tmp_path / 'c.png').exists()


def test_an_exported_folders_weights_take_the_model_and_data_config_of_its_config_json(tmp_path, image_dir, capsys,
                                                                                      figures):
    """An exported folder's model.safetensors 'records no model' although config.json beside it names the model
    (and its kwargs and the data config its run trained with); with --model the kwargs were lost (depth 12)."""
    _run_folder(tmp_path / 'run', 'sl_vit_32', dict(depth=1), mean=[0.5] * 3, std=[0.25] * 3)
    assert main(['export', str(tmp_path / 'run'), '--out', str(tmp_path / 'exported')]) == 0
    weights = tmp_path / 'exported' / 'model.safetensors'
    for named in [], ['--model', 'sl_vit_32']:
        capsys.readouterr()
        out = str(tmp_path / 'k.png')
        assert main(['kld', str(image_dir), *named, '--checkpoint', str(weights), '--out', out]) == 0
        out = capsys.readouterr().out
        assert out.splitlines()[0] == (f'SL input: 32x32 px, mean (0.5, 0.5, 0.5), std (0.25, 0.25, 0.25), crop_pct '
                                       f'1.0, bicubic: the data config its export recorded '
                                       f'({tmp_path / "exported" / "config.json"})')
        assert _title(figures[-1]).startswith('sl_vit_32, depth=1, checkpoint exported/model.safetensors: attention KL')
        assert [line.split()[1] for line in out.splitlines() if line[:1] == '1'] == ['blocks.0.attn']
    with pytest.raises(SystemExit, match=f'^timm-sl temperature: --checkpoint {weights} holds sl_vit_32 \\(its '
                                         f'config.json\\), not --model sl_vit_64; allowed: --model sl_vit_32'):
        main(['temperature', '--model', 'sl_vit_64', '--checkpoint', str(weights), '--out', str(tmp_path / 't.png')])
    with pytest.raises(SystemExit, match=r"does not fit sl_vit_32 {'depth': 2, 'in_chans': 3, 'global_pool': 'token', "
                                         r"'img_size': \[32, 32\], 'num_classes': 100} \(it was trained "
                                         r"as sl_vit_32 {'depth': 1, 'in_chans': 3, "):
        main(['temperature', '--checkpoint', str(weights), '--model-kwargs', 'depth=2', '--out',
              str(tmp_path / 't.png')])
    (tmp_path / 'exported' / 'config.json').write_text('{"model_args": []}')
    with pytest.raises(SystemExit, match=f'^timm-sl kld: {tmp_path / "exported" / "config.json"} holds no usable '
                                         f'architecture, model_args \\(a model name, '):
        main(['kld', str(image_dir), '--checkpoint', str(weights), '--out', str(tmp_path / 'k.png')])
    (tmp_path / 'exported' / 'config.json').write_text('[1]')
    with pytest.raises(SystemExit, match=f'^timm-sl temperature: {tmp_path / "exported" / "config.json"} is JSON but '
                                         f'not an object'):
        main(['temperature', '--checkpoint', str(weights), '--out', str(tmp_path / 't.png')])


def test_an_exported_folder_is_a_checkpoint_of_its_model_safetensors(tmp_path, image_dir, capsys, figures):
    """--checkpoint EXPORT_FOLDER (what timm-sl export wrote) was 'a folder without a checkpoint', where its
    model.safetensors was taken when named: the folder names it, for --compare-checkpoint too."""
    _run_folder(tmp_path / 'run', 'sl_vit_32', dict(depth=1))
    _run_folder(tmp_path / 'base', 'sl_vit_32', dict(depth=1, spt=False, lsa=False))
    for run in 'run', 'base':
        assert main(['export', str(tmp_path / run), '--out', str(tmp_path / f'{run}-exported')]) == 0
    assert main(['kld', str(image_dir), '--checkpoint', str(tmp_path / 'run-exported'), '--compare-checkpoint',
                 str(tmp_path / 'base-exported'), '--out', str(tmp_path / 'k.png')]) == 0
    assert _title(figures[-1]).startswith('sl_vit_32, depth=1, SL checkpoint run-exported/model.safetensors, '
                                          'baseline checkpoint base-exported/model.safetensors: attention KL')
    assert [line.get_label() for line in figures[-1].axes[0].get_lines()][:2] == ['SL', 'baseline']
    assert main(['temperature', '--checkpoint', str(tmp_path / 'run-exported'), '--out', str(tmp_path / 't.png')]) == 0


def test_attention_of_a_model_that_crops_another_region_is_drawn_beside_what_it_sees(tmp_path, capsys, figures):
    """A compared run trained with --crop-pct 0.5 attends over the centre of each image, but its map was drawn beside
    the first model's whole image, as if its cells covered that: each map now sits beside the pixels its model saw."""
    image = torch.zeros(32, 32, 3, dtype=torch.uint8)
    image[:8, :8] = 255  # a white corner: in the first model's view, cropped away in the second's
    Image.fromarray(image.numpy()).save(tmp_path / 'corner.png')
    _run_folder(tmp_path / 'sl', 'sl_vit_32', dict(depth=1))
    _run_folder(tmp_path / 'base', 'sl_vit_32', dict(depth=1, spt=False, lsa=False), crop_pct=0.5)
    _run_folder(tmp_path / 'base2', 'sl_vit_32', dict(depth=1, spt=False, lsa=False))
    argv = ['attention', str(tmp_path / 'corner.png'), '--checkpoint', str(tmp_path / 'sl'), '--out',
            str(tmp_path / 'a.png'), '--compare-checkpoint']
    assert main([*argv, str(tmp_path / 'base')]) == 0
    panels = [ax for ax in figures[-1].axes if ax.get_images()]
    assert [ax.get_title() for ax in panels] == ['input', 'SL', 'input (baseline)', 'baseline']
    first, second = (ax.get_images()[0].get_array() for ax in (panels[0], panels[2]))
    assert first[:4, :4].min() == 255 and second.max() < 32  # the corner is in the first view only (bicubic: ~0)
    assert main([*argv, str(tmp_path / 'base'), '--heads', 'all']) == 0  # named by its model, before its first head
    titles = [ax.get_title() for ax in figures[-1].axes if ax.get_images()]
    assert titles.index('input (baseline)') == titles.index('baseline h0') - 1 == 13
    assert main([*argv, str(tmp_path / 'base2')]) == 0  # the same view: one input panel
    assert [ax.get_title() for ax in figures[-1].axes if ax.get_images()] == ['input', 'SL', 'baseline']


def _slify_run(folder, kwargs):
    """A train.py run folder of a 10-class slify model of ``kwargs`` (model_best.pth.tar, args.yaml); its model."""
    import yaml
    model = timm.create_model('slify', num_classes=10, **kwargs)
    folder.mkdir()
    args = dict(model='slify', model_kwargs=kwargs, num_classes=10)
    torch.save({'state_dict': model.state_dict(), 'arch': 'slify', 'args': args}, folder / 'model_best.pth.tar')
    (folder / 'args.yaml').write_text(yaml.safe_dump(args))
    return model


def test_compared_slify_runs_of_another_base_are_refused(tmp_path, image_dir, figures):
    """kld / attention of slify runs of two bases (vit_tiny, vit_small): both labelled SL, compared as one model, the
    title naming only the second ('slify(vit_small_patch16_224), SL (--checkpoint) checkpoint ...')."""
    for name, base in ('tiny', 'vit_tiny_patch16_224'), ('small', 'vit_small_patch16_224'):
        _slify_run(tmp_path / name, dict(base=base, img_size=32, patch_size=4, depth=1))
    for command in 'kld', 'attention':
        assert _refused([command, str(image_dir), '--checkpoint', str(tmp_path / 'tiny'), '--compare-checkpoint',
                         str(tmp_path / 'small'), '--out', str(tmp_path / 'c.png')], tmp_path / 'c.png') == (
            f'timm-sl {command}: --compare-checkpoint {tmp_path / "small" / "model_best.pth.tar"} holds '
            f'slify(vit_small_patch16_224) (its run), the first model is slify(vit_tiny_patch16_224); allowed: a '
            f'checkpoint of slify(vit_tiny_patch16_224) (SL, its baseline or another mix of its switches) to compare '
            f'with')
    assert not figures and not (tmp_path / 'c.png').exists()


def test_kld_goes_through_a_folder_in_batches_with_the_mean_of_every_row(monkeypatch):
    """kld put every image of a folder through the model at once and kept each layer's maps of all of them: 18 GB
    for 10,000 images through sl_vit_32, a process killed without a word. Batches of at most 64, each reduced before
    the next; the means are those of all rows (a short last batch weighs by its rows)."""
    torch.manual_seed(0)
    model, images = _model('sl_vit_32', dict(depth=2)), torch.randn(70, 3, 32, 32)
    with torch.no_grad(), capture_attention(model) as maps:
        model(images)
    whole = [value for a in maps.values() for value in (kld_to_uniform(a[0]).item(), kld_floor(a[0]).item())]
    sizes = []
    model.register_forward_pre_hook(lambda m, args: sizes.append(len(args[0])))
    batched = [value for pair in kld_by_depth(model, images, floor=True).values() for value in pair]
    assert batched == pytest.approx(whole, rel=1e-5)
    assert sizes == [64, 6]
    assert depth_curve({'a': [torch.full((3, 4, 4), 0.25), torch.eye(4)[None]]}) == pytest.approx([math.log(4) / 4])


def test_an_exported_folder_given_as_model_points_at_checkpoint(tmp_path):
    """--model local-dir:FOLDER (how timm loads an export) said "unknown model 'local-dir:FOLDER'" and listed the sl_
    models: the export itself goes to --checkpoint, which the line now says."""
    with pytest.raises(SystemExit) as info:
        main(['temperature', '--model', f'local-dir:{tmp_path}', '--out', str(tmp_path / 't.png')])
    assert str(info.value) == (
        f'timm-sl temperature: --model local-dir:{tmp_path}: an exported model is read with --checkpoint {tmp_path} '
        f'(its model.safetensors and config.json), --model left out; allowed: --model NAME of an sl_ model or slify, '
        f'or --checkpoint FOLDER of a timm-sl export (an hf-hub: one downloaded first)')


def test_kld_reads_a_folder_a_batch_at_a_time(tmp_path, monkeypatch, capsys, figures):
    """kld read every image of a folder into one tensor (and a drawn copy of each) before the first forward: a
    folder of 50,000 images at 224 px is 30 GB of floats. It now reads 64 at a time, each batch when the model takes
    it, with the numbers of the whole folder at once."""
    import timm_sl.tools.analysis as analysis
    torch.manual_seed(0)
    (tmp_path / 'images').mkdir()
    for i in range(130):
        Image.fromarray((torch.rand(8, 8, 3) * 255).to(torch.uint8).numpy()).save(tmp_path / 'images' / f'{i:03}.png')
    reads, seen = [], []
    check = analysis.check_regular_file
    monkeypatch.setattr(analysis, 'check_regular_file', lambda *a: (reads.append(a[0]), check(*a))[1])
    measure = analysis.kld_by_depth

    def watched(model, images, **kwargs):
        def batches():
            for batch in images:
                seen.append((len(reads), len(batch)))
                yield batch
        return measure(model, batches(), **kwargs)
    monkeypatch.setattr(analysis, 'kld_by_depth', watched)
    model = _checkpoint(tmp_path / 'sl.pth', 'sl_vit_32', dict(depth=1))
    assert main(['kld', str(tmp_path / 'images'), '--model', 'sl_vit_32', '--model-kwargs', 'depth=1', '--checkpoint',
                 str(tmp_path / 'sl.pth'), '--out', str(tmp_path / 'k.png')]) == 0
    # every header first (130 opened), then each batch's pixels read when the model asks for it
    assert seen == [(130 + 64, 64), (130 + 128, 64), (130 + 130, 2)]
    whole = measure(model, load_images([str(tmp_path / 'images')], model).tensor)['blocks.0.attn']
    row = capsys.readouterr().out.splitlines()[-2].split()
    assert row[:2] == ['1', 'blocks.0.attn'] and float(row[2]) == pytest.approx(whole, abs=1e-4)
    assert _title(figures[0]).endswith('(130 images)')


def test_kld_refuses_a_file_that_is_no_image_before_the_first_forward(tmp_path, monkeypatch, capsys):
    """Read a batch at a time, kld met a file that is no image only in its batch: after the batches and models
    before it had run (minutes on a large folder). Every header is now read before the first forward."""
    import timm_sl.tools.analysis as analysis
    (tmp_path / 'images').mkdir()
    for i in range(70):
        Image.new('RGB', (8, 8), (i, 0, 0)).save(tmp_path / 'images' / f'{i:03}.png')
    (tmp_path / 'images' / '999.png').write_bytes(b'not a png')
    forwards = []
    monkeypatch.setattr(analysis, 'kld_by_depth', lambda *a, **k: forwards.append(1))
    _checkpoint(tmp_path / 'sl.pth', 'sl_vit_32', dict(depth=1))
    with pytest.raises(SystemExit):
        main(['kld', str(tmp_path / 'images'), '--model', 'sl_vit_32', '--model-kwargs', 'depth=1', '--checkpoint',
              str(tmp_path / 'sl.pth'), '--out', str(tmp_path / 'k.png')])
    assert forwards == []
    assert f"{tmp_path / 'images' / '999.png'} is not a readable image" in capsys.readouterr().err


def test_attention_numbers_are_never_left_half_written(tmp_path, image_dir, monkeypatch, figures):
    """A write of attn.json cut short (disk full, the process killed) left half a JSON, which the next run refused
    to replace as a file 'timm-sl attention did not write'. The numbers are written beside it and moved over it: an
    interrupted write leaves the earlier numbers, and the next run replaces them."""
    from pathlib import Path
    command = ['attention', str(image_dir), '--model', 'sl_vit_32', '--model-kwargs', 'depth=1', '--out',
               str(tmp_path / 'attn.png')]
    assert main(command) == 0
    earlier = (tmp_path / 'attn.json').read_text()
    write_text = Path.write_text

    def cut_short(path, text, *args, **kwargs):
        write_text(path, text[:len(text) // 2], *args, **kwargs)
        raise OSError(28, 'No space left on device')
    monkeypatch.setattr(Path, 'write_text', cut_short)
    with pytest.raises(SystemExit, match=f'^timm-sl attention: {tmp_path / "attn.json"}: no space left on device$'):
        main(command)
    monkeypatch.undo()
    assert (tmp_path / 'attn.json').read_text() == earlier and sorted(p.name for p in tmp_path.iterdir()) == [
        'attn.json', 'attn.png']
    assert main(command) == 0


def test_attention_refuses_more_images_than_a_chart_shows_before_building_a_model(tmp_path, monkeypatch, figures):
    import timm_sl.tools.cli as cli
    folder = tmp_path / 'many'
    folder.mkdir()
    tile = Image.fromarray(torch.zeros(8, 8, 3, dtype=torch.uint8).numpy())
    for i in range(cli.ATTENTION_MAX_IMAGES + 1):
        tile.save(folder / f'{i}.png')
    monkeypatch.setattr(cli, '_runs', lambda args: pytest.fail('a model was built'))
    with pytest.raises(SystemExit, match=rf'^timm-sl attention: .*many: {cli.ATTENTION_MAX_IMAGES + 1} images; '
                                         rf'attention draws a row per image, allowed: at most '
                                         rf'{cli.ATTENTION_MAX_IMAGES} '):
        main(['attention', str(folder), '--model', 'sl_vit_32', '--out', str(tmp_path / 'a.png')])
    assert not figures and not (tmp_path / 'a.png').exists()
    (folder / '0.png').unlink()  # at the cap: drawn
    monkeypatch.undo()
    drawn = []
    monkeypatch.setattr(timm_sl.tools.plot, 'plot_attention', lambda images, *a, **k: drawn.append(len(images)))
    assert main(['attention', str(folder), '--model', 'sl_vit_32', '--model-kwargs', 'depth=1',
                 '--out', str(tmp_path / 'a.png')]) == 0
    assert drawn == [cli.ATTENTION_MAX_IMAGES]


@pytest.mark.parametrize('suffix', ['png', 'jpg'])
def test_a_chart_drawn_into_the_image_folder_is_never_read_as_an_input(tmp_path, capsys, suffix):
    """``kld imgs --out imgs/k.png`` then ``attention imgs``: the chart was silently one more input image (a row of
    the attention chart, a share of the KL mean)."""
    images = tmp_path / 'imgs'
    images.mkdir()
    Image.fromarray(torch.zeros(40, 48, 3, dtype=torch.uint8).numpy()).save(images / 'a.png')
    model = ['--model', 'sl_vit_32', '--model-kwargs', 'depth=1']
    assert main(['kld', str(images), *model, '--out', str(images / f'k.{suffix}')]) == 0
    capsys.readouterr()
    with pytest.raises(SystemExit):
        main(['attention', str(images), *model, '--out', str(tmp_path / 'a.png')])
    assert capsys.readouterr().err == (
        f'timm-sl attention: {images / f"k.{suffix}"} is a chart timm-sl drew, not an input image; allowed: the images '
        f'to analyse (move the chart out of the folder, or give --out outside it)\n')
    (images / f'k.{suffix}').rename(tmp_path / f'k.{suffix}')  # moved out: the folder is analysed again
    assert main(['attention', str(images), *model, '--out', str(tmp_path / 'a.png')]) == 0


def test_titles_name_the_configuration_the_models_were_built_with(tmp_path, image_dir, figures):
    """A chart of sl_vit_32 built with depth=1 (--model-kwargs, or recorded by its run) was titled 'sl_vit_32, ...':
    a 1-block model passed for the registered 9-block one. Titles name the kwargs; compared runs of another depth
    each theirs."""
    out = str(tmp_path / 'c.png')
    assert main(['temperature', '--model', 'sl_vit_32', '--model-kwargs', 'depth=1', 'mlp_ratio=2', 'lsa_mask=False',
                 '--out', out]) == 0
    assert _title(figures[-1]) == ('sl_vit_32, depth=1, mlp_ratio=2 (ST: spt=True, lsa mask=False, learned temperature'
                                   '=True), RANDOM INIT (untrained: no --checkpoint/--pretrained): learned temperature '
                                   'per depth')
    _run_folder(tmp_path / 'sl', 'sl_vit_32', dict(depth=1))
    _run_folder(tmp_path / 'base', 'sl_vit_32', dict(depth=2, spt=False, lsa=False))
    assert main(['kld', str(image_dir), '--checkpoint', str(tmp_path / 'sl'), '--compare-checkpoint',
                 str(tmp_path / 'base'), '--out', out]) == 0
    assert _title(figures[-1]).startswith('sl_vit_32 (SL: depth=1; baseline: depth=2), SL checkpoint '
                                          'sl/model_best.pth.tar, baseline checkpoint base/model_best.pth.tar: ')
    assert main(['attention', str(image_dir), '--checkpoint', str(tmp_path / 'sl'), '--out', out]) == 0
    title = _title(figures[-1]).replace('\n', ' ')
    assert title.startswith('sl_vit_32, depth=1, checkpoint sl/model_best.pth.tar: final attention map'), title


def test_a_compared_baseline_is_not_given_the_lsa_mask_of_model_kwargs(tmp_path, image_dir, capsys, figures):
    """--model-kwargs lsa_mask=True beside two bare state dicts built the baseline's with the mask too (it outlived
    lsa=False): its KL read 0.018 instead of 0.003 and it was labelled M, 'not baseline'."""
    _checkpoint(tmp_path / 'sl.pth', 'sl_vit_32', dict(depth=1))
    base = _checkpoint(tmp_path / 'base.pth', 'sl_vit_32', dict(depth=1), baseline=True)
    assert main(['kld', str(image_dir), '--model', 'sl_vit_32', '--model-kwargs', 'depth=1', 'lsa_mask=True',
                 '--checkpoint', str(tmp_path / 'sl.pth'), '--compare-checkpoint', str(tmp_path / 'base.pth'),
                 '--out', str(tmp_path / 'k.png')]) == 0
    captured = capsys.readouterr()
    assert 'note:' not in captured.err
    row = next(line.split() for line in captured.out.splitlines() if line.startswith('1 '))
    expected = kld_by_depth(base, load_images([str(image_dir)], base).tensor)['blocks.0.attn']
    assert float(row[3]) == pytest.approx(expected, abs=1e-4)
    assert [line.get_label() for line in figures[-1].axes[0].get_lines()][:2] == ['SL', 'baseline']


def test_receptive_field_of_pits_overlapping_stem_names_its_stride(capsys):
    """The baseline of sl_pit_ti tokenizes with PiT's stem, a 16 x 16 convolution of stride 8: it printed 'kernel 16,
    stride 16', the stride of a patch of its size."""
    assert main(['receptive-field', '--model', 'sl_pit_ti', '--model-kwargs', 'spt=False', 'lsa=False',
                 'spt_pool=False']) == 0
    assert capsys.readouterr().out == 'sl_pit_ti: first tokenization step kernel 16, stride 8, no SPT: r_token = 16\n'
    with torch.device('meta'):
        assert tokenizer_geometry(timm.create_model('sl_vit_32', spt=False, lsa=False)) == ((4, 4), (4, 4), (0, 0))


@pytest.mark.parametrize('model', [['sl_pit_ti'], ['slify', '--model-kwargs', 'base=pit_ti_224']])
def test_receptive_field_of_spt_says_pits_own_baseline_stem_reaches_as_far(model, capsys):
    """SL-PiT's SPT tokenizes 8x8 patches where its baseline's stem is a 16 x 16 convolution of stride 8: it printed
    'standard tokenization r_token = 8, SPT (shift 4) r_token = 16', as if SPT doubled what the baseline reaches,
    which is 16 too. The line says what the 8 is and gives the baseline's own step and r_token."""
    assert main(['receptive-field', '--model', *model]) == 0
    name = 'sl_pit_ti' if model == ['sl_pit_ti'] else 'slify(pit_ti_224)'
    assert capsys.readouterr().out == (
        f"{name}: first tokenization step kernel 8, stride 8: standard tokenization (non-overlapping 8x8 patches, "
        f"the paper's comparison) r_token = 8, SPT (shift 4) r_token = 16; its own baseline (spt=False) tokenizes "
        f"with an overlapping step instead, kernel 16, stride 8: r_token = 16\n")
    assert main(['receptive-field', '--model', 'sl_vit_32']) == 0  # a ViT's baseline patches as SPT's step does
    assert capsys.readouterr().out == ('sl_vit_32: first tokenization step kernel 4, stride 4: standard tokenization '
                                       'r_token = 4, SPT (shift 2) r_token = 8\n')


def test_receptive_field_of_a_hybrid_vit_is_refused_not_read_off_its_projection(capsys):
    """slify of a hybrid ViT (LSA only): its tokens come out of a ResNet, yet receptive-field printed 'kernel 1,
    stride 1, no SPT: r_token = 1', the 1x1 projection after the backbone."""
    with pytest.raises(SystemExit) as info:
        main(['receptive-field', '--model', 'slify', '--model-kwargs', 'base=vit_small_r26_s32_224', 'spt=False'])
    assert str(info.value) == (
        "timm-sl receptive-field: slify(vit_small_r26_s32_224) takes its tokens from a CNN backbone (ResNetV2 in its "
        "HybridEmbed): its receptive field is the backbone's, not one tokenization step's (its 1x1 projection after "
        "the backbone reads 1 cell); allowed: a model whose patch_embed is a patch embedding or a T2T tokenizer")
    assert capsys.readouterr().out == ''


def test_attention_takes_the_kwargs_of_a_baseline_checkpoint(tmp_path, capsys):
    pytest.importorskip('matplotlib')
    _train_run(tmp_path / 'run', 'sl_vit_32', dict(depth=1, spt=False, lsa=False))
    Image.fromarray((torch.rand(32, 32, 3) * 255).to(torch.uint8).numpy()).save(tmp_path / 'img.png')
    assert main(['attention', str(tmp_path / 'img.png'), '--model', 'sl_vit_32', '--checkpoint',
                 str(tmp_path / 'run' / 'model_best.pth.tar'), '--out', str(tmp_path / 'a.png')]) == 0
    assert (tmp_path / 'a.png').is_file()


def test_a_run_and_an_export_of_one_configuration_are_titled_as_one(tmp_path, image_dir, figures):
    """A run of img_size=64 compared with an export of the same configuration was titled as two configurations,
    'SL: depth=1, img_size=64; baseline: depth=1, img_size=[64, 64]': the export's JSON writes the size as a list."""
    _run_folder(tmp_path / 'sl', 'sl_vit_32', dict(depth=1, img_size=64))
    _run_folder(tmp_path / 'base', 'sl_vit_32', dict(depth=1, img_size=64, spt=False, lsa=False))
    assert main(['export', str(tmp_path / 'base'), '--out', str(tmp_path / 'base-exported')]) == 0
    assert main(['kld', str(image_dir), '--checkpoint', str(tmp_path / 'sl'), '--compare-checkpoint',
                 str(tmp_path / 'base-exported'), '--out', str(tmp_path / 'k.png')]) == 0
    assert _title(figures[-1]).startswith('sl_vit_32, depth=1, img_size=64, SL checkpoint sl/model_best.pth.tar, '
                                          'baseline checkpoint base-exported/model.safetensors: attention KL')


def test_a_16_bit_grey_image_is_refused_not_analysed_as_white(tmp_path, image_dir):
    """A 16-bit grey PNG went through PIL's 8-bit conversion, which clips every value above 255: the model was
    analysed on a white image and the chart drew it as data. It is refused; one whose values fit 8 bits is read."""
    images = tmp_path / 'images'
    images.mkdir()
    values = torch.arange(64 * 64, dtype=torch.int32).reshape(64, 64) * 16
    Image.fromarray(values.numpy().astype('uint16')).save(images / 'scan.png')
    with pytest.raises(SystemExit, match=f"^timm-sl kld: {images / 'scan.png'} is an image of mode I;16 whose values "
                                         f"reach 65520; reading it as 8-bit \\(as timm reads images\\) clips every "
                                         f"value above 255 to white; allowed: 8-bit images"):
        main(['kld', str(images), '--model', 'sl_vit_32', '--model-kwargs', 'depth=1', '--out',
              str(tmp_path / 'k.png')])
    Image.fromarray((values // 257).numpy().astype('uint16')).save(images / 'scan.png')
    batch = timm_sl.tools.analysis.load_images([str(images)], _model('sl_vit_32', dict(depth=1)))
    assert batch.tensor.shape == (1, 3, 32, 32)


def test_temperature_of_another_temp_ratio_draws_where_it_starts(tmp_path, capsys, figures):
    """An untrained sl_vit_32 with lsa_temp_ratio=2.0 was charted at half the fixed head_dim^-0.5 line with nothing
    saying it starts there: its initial value read as a temperature learned away from it. Table and chart add its
    start; a model of ratio 1 has no such line."""
    argv = ['temperature', '--model', 'sl_vit_32', '--out', str(tmp_path / 't.png'), '--model-kwargs', 'depth=1']
    assert main(argv + ['lsa_temp_ratio=2.0']) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split('  ')[-1] == 'start: head_dim^-0.5 / 2.0'
    assert lines[2].split()[-2:] == ['0.2500', '0.1250']
    curves = {line.get_label(): list(line.get_ydata()) for line in figures[-1].axes[0].get_lines()}
    assert curves['start: head_dim^-0.5 / 2.0'] == pytest.approx([0.125])
    assert curves['fixed head_dim^-0.5'] == pytest.approx([0.25])
    assert main(argv) == 0
    assert 'start' not in capsys.readouterr().out
    assert not any('start' in line.get_label() for line in figures[-1].axes[0].get_lines())


def test_titles_name_a_global_pool_a_run_trained_with(tmp_path, image_dir, figures):
    """A run trained with --gp avg was titled as the registered model (global_pool was dropped from titles as if at
    its default, whatever its value), and beside its export, which lists its kwargs in another order, a chart named
    one configuration twice."""
    _run_folder(tmp_path / 'sl', 'sl_vit_32', dict(depth=1, global_pool='avg'))
    _run_folder(tmp_path / 'base', 'sl_vit_32', dict(depth=1, global_pool='avg', spt=False, lsa=False))
    assert main(['export', str(tmp_path / 'base'), '--out', str(tmp_path / 'base-exported')]) == 0
    config = tmp_path / 'base-exported' / 'config.json'
    exported = json.loads(config.read_text())
    exported['model_args'] = dict(reversed(list(exported['model_args'].items())))
    config.write_text(json.dumps(exported))
    assert main(['kld', str(image_dir), '--checkpoint', str(tmp_path / 'sl'), '--compare-checkpoint',
                 str(tmp_path / 'base-exported'), '--out', str(tmp_path / 'k.png')]) == 0
    assert _title(figures[-1]).startswith('sl_vit_32, depth=1, global_pool=avg, SL checkpoint sl/model_best.pth.tar, '
                                          'baseline checkpoint base-exported/model.safetensors: attention KL')
    _run_folder(tmp_path / 'token', 'sl_vit_32', dict(depth=1, global_pool='token'))
    assert main(['kld', str(image_dir), '--checkpoint', str(tmp_path / 'token'), '--out', str(tmp_path / 'k.png')]) == 0
    assert _title(figures[-1]).startswith('sl_vit_32, depth=1, checkpoint token/model_best.pth.tar: attention KL')


def test_a_slify_vit_is_not_said_to_have_a_spool_switch(tmp_path, image_dir, capsys, figures):
    """slify of a ViT (nothing Spool acts on) recorded spt_pool=True on the model, and the analyses' note said the
    compared run 'holds S (spt=True, ..., spt_pool=True)'; a slify PiT keeps the switch it has."""
    for name, lsa in ('sl', True), ('s', False):
        model = _slify_run(tmp_path / name, dict(base='vit_tiny_patch16_224', img_size=32, patch_size=4, depth=1,
                                                 lsa=lsa))
    assert main(['kld', str(image_dir), '--checkpoint', str(tmp_path / 'sl'), '--compare-checkpoint',
                 str(tmp_path / 's'), '--out', str(tmp_path / 'k.png')]) == 0
    assert capsys.readouterr().err == (
        f'timm-sl kld: note: each model is labelled by what it holds, not by its flag: --compare-checkpoint '
        f's/model_best.pth.tar holds S (spt=True, lsa mask=False, learned temperature=False), not baseline\n')
    assert not hasattr(model, 'spt_pool')
    assert timm.create_model('slify', base='pit_ti_224', depth=(1, 1, 1), spt_pool=False).spt_pool is False


def test_temperature_of_a_diverged_checkpoint_is_refused(tmp_path, capsys, figures):
    """A checkpoint saved after its run diverged (NaN in an MLP weight, temperatures still finite) was charted as a
    trained model's temperatures; it is refused in one line naming the file and the tensors, as export refuses it."""
    model = _run_folder(tmp_path / 'run', 'sl_vit_32', dict(depth=2))
    state = model.state_dict()
    state['blocks.1.mlp.fc1.weight'][0, 0] = float('nan')
    torch.save({'state_dict': state}, tmp_path / 'run' / 'model_best.pth.tar')
    with pytest.raises(SystemExit):
        main(['temperature', '--checkpoint', str(tmp_path / 'run'), '--out', str(tmp_path / 't.png')])
    assert capsys.readouterr().err.splitlines()[-1] == (
        f'timm-sl temperature: {tmp_path / "run" / "model_best.pth.tar"} holds NaN or infinite weights (1 tensor(s): '
        f'blocks.1.mlp.fc1.weight): the run had diverged when it was saved; allowed: a checkpoint of an epoch before '
        f'that (checkpoint-N.pth.tar of its run folder)')
    assert not figures and not (tmp_path / 't.png').exists()


def test_an_image_named_twice_is_analysed_once(tmp_path, image_dir, capsys, figures):
    """`kld imgs imgs/0.png ./imgs` read 0.png three times: the mean weighed it triple and the title said '5 images'
    for 2 files; attention drew it in two rows. Each file counts once, where first named."""
    from timm_sl.tools.analysis import image_files
    out = str(tmp_path / 'c.png')
    assert main(['kld', str(image_dir), str(image_dir / '0.png'), f'{image_dir}/.', '--model', 'sl_vit_32',
                 '--model-kwargs', 'depth=1', '--out', out]) == 0
    assert _title(figures[-1]).endswith('attention KL divergence from uniform (2 images)')
    assert [p.name for p in image_files([str(image_dir / '1.png'), str(image_dir)])] == ['1.png', '0.png']
    capsys.readouterr()
    assert main(['attention', str(image_dir / '0.png'), str(image_dir), '--model', 'sl_vit_32', '--model-kwargs',
                 'depth=1', '--out', out]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines()]
    assert [row[0] for row in rows if row[1:2] == ['SL']] == ['0.png', '1.png']


def test_final_attention_refuses_a_cait_without_class_attention(tmp_path, image_dir, capsys, figures):
    """A CaiT built with depth_token_only=0 (no class-attention block) had the first patch token's row of its last
    self-attention drawn as 'attention of the class token over the patch tokens', though its class token never
    attends to the image; pooled over its patch tokens (global_pool='avg') it is still drawn."""
    with pytest.raises(ValueError, match=(
            r"^sl_cait_32 has no class-attention block \(depth_token_only=0\): its class token never attends to the "
            r"patch tokens and its classifier reads that token as it was learned, whatever the image; no block's map "
            r"is what it reads; allowed: depth_token_only >= 1, or global_pool 'avg' \(train.py's --gp\)$")):
        final_attention_map(_model('sl_cait_32', dict(depth=1, depth_token_only=0)), torch.randn(1, 3, 32, 32))
    pooled = final_attention_map(_model('sl_cait_32', dict(depth=1, depth_token_only=0, global_pool='avg')),
                                 torch.randn(1, 3, 32, 32))
    assert pooled.kind == 'received' and pooled.layer == 'blocks.0.attn'
    out = tmp_path / 'a.png'
    err = _fails(['attention', str(image_dir), '--model', 'sl_cait_32', '--model-kwargs', 'depth=1',
                  'depth_token_only=0', '--out', str(out)], capsys)
    assert err.startswith('timm-sl attention: sl_cait_32 has no class-attention block (depth_token_only=0): ')
    assert not figures and not out.exists() and not out.with_suffix('.json').exists()


@pytest.mark.parametrize('kwargs,size', [(dict(img_size=48), (3, 48, 48)), (dict(in_chans=1), (1, 32, 32))])
def test_images_load_at_the_input_the_model_was_built_for(kwargs, size, image_dir):
    """load_images(paths, model) of a model built with img_size=48 (or in_chans=1) read the images at the registered
    3x32x32, which the model refused ("Input height (32) doesn't match model (48)")."""
    model = _model('sl_vit_32', dict(depth=1, **kwargs))
    batch = load_images([str(image_dir)], model)
    assert tuple(batch.tensor.shape[1:]) == size
    assert final_attention_map(model, batch.tensor).maps.shape[-2:] == (size[1] // 4, size[2] // 4)


def test_model_kwargs_never_change_what_a_runs_weights_do_not_record(tmp_path, image_dir, capsys, figures):
    """--model-kwargs lsa_mask=True beside two recorded runs built the compared baseline run with the mask (its KL
    read as SL's, labelled M); and an option the weights do not record (shift_ratio, shift_directions, lsa_mask,
    lsa_temp_ratio) given with another value than the run's built another model than the one trained, which loaded
    all the same: charted as the run's (a temperature chart 'starting' at head_dim^-0.5 / 2)."""
    _run_folder(tmp_path / 'sl', 'sl_vit_32', dict(depth=1))
    base = _run_folder(tmp_path / 'base', 'sl_vit_32', dict(depth=1, spt=False, lsa=False))
    assert main(['kld', str(image_dir), '--model-kwargs', 'depth=1', 'lsa_mask=True', '--checkpoint',
                 str(tmp_path / 'sl'), '--compare-checkpoint', str(tmp_path / 'base'),
                 '--out', str(tmp_path / 'k.png')]) == 0
    captured = capsys.readouterr()
    assert 'note:' not in captured.err
    row = next(line.split() for line in captured.out.splitlines() if line.startswith('1 '))
    expected = kld_by_depth(base.eval(), load_images([str(image_dir)], base).tensor)['blocks.0.attn']
    assert float(row[3]) == pytest.approx(expected, abs=1e-4)
    assert [line.get_label() for line in figures[-1].axes[0].get_lines()][:2] == ['SL', 'baseline']
    figures.clear()
    checkpoint = tmp_path / 'sl' / 'model_best.pth.tar'
    for given, trained in (('lsa_temp_ratio=2', 'lsa_temp_ratio=1.0, its default'),
                           ('shift_ratio=0.25', 'shift_ratio=0.5, its default'),
                           ('lsa_mask=False', 'lsa_mask=True, its default')):
        key = given.split('=')[0]
        err = _fails(['temperature', '--checkpoint', str(tmp_path / 'sl'), '--model-kwargs', 'depth=1', given,
                      '--out', str(tmp_path / 't.png')], capsys)
        assert err == (f"timm-sl temperature: --model-kwargs {given}: {checkpoint} was trained with {trained} "
                       f"(its run), which its weights do not record: they would load into another model than the "
                       f"one trained; allowed: {key} left out (the run's), or the value it trained with")
    assert not figures
    assert main(['temperature', '--checkpoint', str(tmp_path / 'sl'), '--model-kwargs', 'depth=1', 'lsa_mask=True',
                 'shift_ratio=0.5', '--out', str(tmp_path / 't.png')]) == 0


@pytest.mark.parametrize('kwargs,says', [
    (['spt=False'], ' (L: spt=False, lsa mask=True, learned temperature=True)'),
    (['lsa_mask=False'], ' (ST: spt=True, lsa mask=False, learned temperature=True)'),
    ([], ''),
])
def test_a_temperature_chart_names_a_model_that_is_not_sl(kwargs, says, tmp_path, figures):
    """A temperature chart of sl_vit_32 with spt=False (LSA alone) or lsa_mask=False was titled 'sl_vit_32, depth=1'
    as SL's is, and it has no legend naming the model: it passed for SL's Fig. 3."""
    argv = ['temperature', '--model', 'sl_vit_32', '--out', str(tmp_path / 't.png'), '--model-kwargs', 'depth=1']
    assert main(argv + kwargs) == 0
    assert _title(figures[-1]) == (f'sl_vit_32, depth=1{says}, RANDOM INIT (untrained: no --checkpoint/--pretrained): '
                                   f'learned temperature per depth')


def test_export_over_a_folder_lists_only_what_it_wrote(tmp_path, capsys):
    """`timm-sl export RUN --out DIR --overwrite` over a folder holding the user's notes.txt listed notes.txt among
    the files it exported (the folder's content, not what it wrote)."""
    _run_folder(tmp_path / 'run', 'sl_vit_32', dict(depth=1))
    (tmp_path / 'out').mkdir()
    (tmp_path / 'out' / 'notes.txt').write_text('mine')
    assert main(['export', str(tmp_path / 'run'), '--out', str(tmp_path / 'out'), '--overwrite']) == 0
    line = capsys.readouterr().out.strip().splitlines()[-1]
    assert line.endswith(f"to {tmp_path / 'out'}: README.md, config.json, model.safetensors (kept, not written by "
                         f"this export: notes.txt)"), line
    assert (tmp_path / 'out' / 'notes.txt').read_text() == 'mine'


def test_export_over_a_folder_with_a_dangling_link_keeps_it_and_says_so(tmp_path, capsys):
    """A user's link to nothing in --out (notes -> a moved file) ended export on FileNotFoundError naming the link."""
    _run_folder(tmp_path / 'run', 'sl_vit_32', dict(depth=1))
    (tmp_path / 'out').mkdir()
    (tmp_path / 'out' / 'notes').symlink_to(tmp_path / 'moved')
    assert main(['export', str(tmp_path / 'run'), '--out', str(tmp_path / 'out'), '--overwrite']) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1].endswith('(kept, not written by this export: notes)')
    assert (tmp_path / 'out' / 'notes').is_symlink()


def test_a_folder_reads_the_webp_gif_and_bmp_images_a_file_named_directly_is_read_as(tmp_path):
    """--images FOLDER left out its .webp, .gif and .bmp images (and .WEBP) while each, named directly, was read: a
    kld mean was over fewer images than the folder holds, unsaid. A folder now reads every image a named file is read
    as, each as that file named directly; one PIL cannot decode is refused, named, as when named directly."""
    from timm_sl.tools.analysis import image_files
    model = _model('sl_vit_32', dict(depth=1))
    folder = tmp_path / 'imgs'
    (folder / 'web').mkdir(parents=True)
    for i, (name, kind) in enumerate([('a.png', 'PNG'), ('b.webp', 'WEBP'), ('c.gif', 'GIF'), ('web/d.BMP', 'BMP'),
                                      ('e.WEBP', 'WEBP')]):
        Image.new('RGB', (32, 32), (40 * i, 200 - 30 * i, 90)).save(folder / name, kind)
    (folder / 'notes.txt').write_text('not an image')
    loaded = load_images([str(folder)], model)
    assert [p.relative_to(folder).as_posix() for p in loaded.files] == ['a.png', 'b.webp', 'c.gif', 'e.WEBP',
                                                                        'web/d.BMP']
    for file, batch in zip(loaded.files, loaded.tensor):
        assert torch.equal(batch, load_images([str(file)], model).tensor[0])
    assert len(image_files([str(folder)])) == 5
    (folder / 'f.gif').write_bytes(b'GIF89a')  # cut off
    with pytest.raises(ValueError, match='^' + re.escape(f"{folder / 'f.gif'} is not a readable image: ")):
        load_images([str(folder)], model)



def _png_chunk(kind: bytes, data: bytes) -> bytes:
    import struct
    import zlib
    return struct.pack('>I', len(data)) + kind + data + struct.pack('>I', zlib.crc32(kind + data))


def test_an_image_pil_refuses_with_a_value_error_is_named_in_one_line(tmp_path, capsys):
    """PIL refuses some damaged files with a ValueError ('Truncated IHDR chunk'), not an OSError: its line named no
    file (``timm-sl kld: Truncated IHDR chunk``)."""
    bad = tmp_path / 'images' / 'cut.png'
    bad.parent.mkdir()
    bad.write_bytes(b'\x89PNG\r\n\x1a\n' + _png_chunk(b'IHDR', bytes(5)) + _png_chunk(b'IEND', b''))
    with pytest.raises(SystemExit):
        main(['kld', str(bad.parent), '--model', 'sl_vit_32', '--model-kwargs', 'depth=1'])
    assert capsys.readouterr().err == (f'timm-sl kld: {bad} is not a readable image: Truncated IHDR chunk; allowed: '
                                       f'whole images of a format PIL reads (copy or extract it again, or move it out '
                                       f'of the way)\n')



def test_images_mutated_at_random_are_read_or_refused_in_one_line_naming_the_file(tmp_path):
    """A seeded fuzz of kld's / attention's image reading (:func:`load_images`): small images of every format and
    mode PIL writes, their bytes cut, flipped or pieces inserted, or a header field of a PNG (a chunk's length, the
    size, bit depth, colour type) or a GIF (a frame's place and size) set to a hostile value. Each is read as one
    finite image, or refused by a ValueError / OSError of one line naming the file; nothing else escapes."""
    import io
    import random
    import struct
    from timm_sl.tools.errors import USER_ERRORS, describe
    model = _model('sl_vit_32', dict(depth=1))
    rng = random.Random(24)
    kinds = {'.png': 'PNG', '.jpg': 'JPEG', '.gif': 'GIF', '.bmp': 'BMP', '.webp': 'WEBP', '.tif': 'TIFF'}
    hostile = [0, 1, 5, 12, 13, 255, 0xffff, 0x7fffffff, 0xffffffff]
    refused = read = 0
    for case in range(300):
        suffix = rng.choice(sorted(kinds))
        mode = rng.choice(['RGB', 'L', 'P', 'RGBA', '1', 'LA'])
        buffer = io.BytesIO()
        pixels = torch.randint(0, 256, (rng.choice([1, 6]), rng.choice([1, 9]), 3), dtype=torch.uint8).numpy()
        image = Image.fromarray(pixels).convert(mode)
        image.save(buffer, kinds[suffix]) if (suffix, mode) not in (('.jpg', 'P'), ('.jpg', 'RGBA'), ('.jpg', 'LA'),
                                                                   ('.bmp', 'LA')) else \
            image.convert('RGB').save(buffer, kinds[suffix])
        data = bytearray(buffer.getvalue())
        for _ in range(rng.randint(1, 3)):
            pick, at = rng.random(), rng.randrange(len(data))
            if pick < 0.2:
                data = data[:at]
            elif pick < 0.4:
                data[at] ^= 1 << rng.randrange(8)
            elif pick < 0.5:
                data[at:at] = rng.choice([b'\x00' * 4, b'\xff' * 4, b'IEND'])
            elif suffix == '.png' and len(data) >= 33:  # the IHDR chunk's length, width, height, depth, colour type
                field = rng.choice([(8, '>I'), (16, '>I'), (20, '>I'), (24, '>B'), (25, '>B')])
                data[field[0]:field[0] + struct.calcsize(field[1])] = struct.pack(
                    field[1], rng.choice(hostile) & (0xff if field[1] == '>B' else 0xffffffff))
            elif suffix == '.gif' and b',' in data[13:]:  # the first frame's left, top, width, height
                place = data.index(b',', 13) + 1 + 2 * rng.randrange(4)
                data[place:place + 2] = struct.pack('<H', rng.choice(hostile) & 0xffff)
        file = tmp_path / f'{case}' / f'image{suffix}'
        file.parent.mkdir()
        file.write_bytes(bytes(data))
        try:
            batch = load_images([str(file.parent)], model)
        except USER_ERRORS as e:
            refused += 1
            line = describe(e)
            assert '\n' not in line and str(file) in line, (case, line)
        else:
            read += 1
            assert batch.files == [file] and torch.isfinite(batch.tensor).all(), case
    assert refused > 50 and read > 50  # both ways taken


def test_model_kwargs_beside_a_run_keep_the_kwargs_its_weights_do_not_record(tmp_path, image_dir, capsys, figures):
    """A baseline run of 3 heads (its weights hold no per-head tensor), analysed with --model-kwargs depth=1 as it was
    trained: the run's num_heads was dropped and the model built with 12, its weights loaded without a word: 12
    attention maps drawn, and a compared SL run of 12 heads passed for its configuration. The run's kwargs are kept;
    one given another value than the run's is refused."""
    base = dict(depth=1, num_heads=3, spt=False, lsa=False)
    _run_folder(tmp_path / 'base', 'sl_vit_32', base)
    _run_folder(tmp_path / 'sl', 'sl_vit_32', dict(depth=1))
    out = ['--out', str(tmp_path / 'a.png')]
    assert main(['attention', str(image_dir / '0.png'), '--checkpoint', str(tmp_path / 'base'), '--model-kwargs',
                 'depth=1', '--heads', 'all', *out]) == 0
    assert len(json.loads((tmp_path / 'a.json').read_text())[0]['heads']) == 3
    assert _title(figures[-1]).startswith('sl_vit_32, depth=1, num_heads=3, checkpoint base/model_best.pth.tar')
    with pytest.raises(SystemExit) as info:
        main(['attention', str(image_dir / '0.png'), '--checkpoint', str(tmp_path / 'base'), '--model-kwargs',
              'depth=1', 'num_heads=12', *out])
    assert str(info.value) == (
        f"timm-sl attention: --model-kwargs num_heads=12: {tmp_path / 'base' / 'model_best.pth.tar'} was trained with "
        f"num_heads=3 (its run), which its weights do not record: they would load into another model than the one "
        f"trained; allowed: num_heads left out (the run's), or the value it trained with")
    with pytest.raises(SystemExit) as info:
        main(['kld', str(image_dir), '--checkpoint', str(tmp_path / 'sl'), '--compare-checkpoint',
              str(tmp_path / 'base'), '--model-kwargs', 'depth=1', '--out', str(tmp_path / 'k.png')])
    assert str(info.value).startswith(
        f"timm-sl kld: --compare-checkpoint {tmp_path / 'base' / 'model_best.pth.tar'} is another configuration of "
        f"sl_vit_32 than the first model: num_heads=3 (first: default)")


def test_a_float_image_of_fractions_is_refused_not_analysed_as_black(tmp_path):
    """A floating-point grey TIFF of values within 0-1 (a scientific camera's, a processed scan) went through PIL's
    8-bit conversion, which rounds each value to 0 or 1 of 255: the model was analysed on a black image and the chart
    drew it as data. It is refused; one of values on the 0-255 scale is read."""
    import numpy as np
    images = tmp_path / 'images'
    images.mkdir()
    values = np.linspace(0, 0.98, 64 * 64, dtype=np.float32).reshape(64, 64)
    Image.fromarray(values).save(images / 'scan.tif')
    assert Image.open(images / 'scan.tif').convert('L').getextrema()[1] <= 1  # black
    with pytest.raises(SystemExit, match=f"^timm-sl kld: {re.escape(str(images / 'scan.tif'))} is an image of mode F "
                                         f"whose values reach 0.98 \\(fractions of 1\\); reading it as 8-bit \\(as "
                                         f"timm reads images\\) reads each as 0 or 1 of 255: a black image; allowed: "
                                         f"8-bit images"):
        main(['kld', str(images), '--model', 'sl_vit_32', '--model-kwargs', 'depth=1', '--out',
              str(tmp_path / 'k.png')])
    Image.fromarray(values * 255).save(images / 'scan.tif')
    batch = timm_sl.tools.analysis.load_images([str(images)], _model('sl_vit_32', dict(depth=1)))
    assert batch.images[0].getextrema()[0][1] > 200


def test_model_kwargs_a_run_did_not_record_must_build_the_model_trained(tmp_path, image_dir, figures):
    """A run trained with the default 12 heads (its args.yaml records no num_heads), analysed with --model-kwargs
    num_heads=3: the weights loaded into a 3-head model without a word and 3 maps were drawn of a model never trained.
    A kwarg the run did not record is refused when it builds another model; the default given again, or a training-only
    rate, still passes."""
    _run_folder(tmp_path / 'run', 'sl_vit_32', dict(depth=1, spt=False, lsa=False))
    file = tmp_path / 'run' / 'model_best.pth.tar'
    command = ['attention', str(image_dir / '0.png'), '--checkpoint', str(tmp_path / 'run'), '--heads', 'all',
               '--out', str(tmp_path / 'a.png'), '--model-kwargs', 'depth=1']
    with pytest.raises(SystemExit) as info:
        main([*command, 'num_heads=3'])
    assert str(info.value) == (
        f"timm-sl attention: --model-kwargs num_heads=3: {file} was trained without num_heads (its run records none: "
        f"the model's default), and the model they build is another than the one trained (blocks.0.attn.num_heads: "
        f"12 -> 3), which its weights do not tell; allowed: num_heads left out")
    with pytest.raises(SystemExit, match=r"act_layer='relu'.*\(blocks.0.mlp.act: 'GELU' -> 'ReLU'\)"):
        main([*command, 'act_layer=relu'])
    for alike in ('num_heads=12', 'drop_path_rate=0.1'):
        assert main([*command, alike]) == 0, alike
        assert len(json.loads((tmp_path / 'a.json').read_text())[0]['heads']) == 12


def test_a_compared_run_is_built_as_it_recorded_and_a_gp_run_keeps_its_pool(tmp_path, image_dir, capsys):
    """kld --model-kwargs num_heads=3 beside an SL run of 3 heads built the compared baseline run (trained at the
    default 12) with 3 heads, its weights loaded without a word, and the two compared as one configuration; a run of
    train.py's --gp avg given global_pool=max (the same keys) was analysed with max pooling. The compared run is built
    as it recorded, and a value other than train.py's own shaping arguments is refused."""
    _run_folder(tmp_path / 'sl', 'sl_vit_32', dict(depth=1, num_heads=3))
    _run_folder(tmp_path / 'base', 'sl_vit_32', dict(depth=1, spt=False, lsa=False))
    with pytest.raises(SystemExit) as info:
        main(['kld', str(image_dir), '--checkpoint', str(tmp_path / 'sl'), '--compare-checkpoint',
              str(tmp_path / 'base'), '--model-kwargs', 'depth=1', 'num_heads=3', '--out', str(tmp_path / 'k.png')])
    assert str(info.value).startswith(
        f"timm-sl kld: --compare-checkpoint {tmp_path / 'base' / 'model_best.pth.tar'} is another configuration of "
        f"sl_vit_32 than the first model: num_heads=default (first: 3)")
    import yaml
    (tmp_path / 'gp').mkdir()  # train.py's --gp avg: a model_kwargs without global_pool, weights of an avg-pool model
    _checkpoint(tmp_path / 'gp' / 'model_best.pth.tar', 'sl_vit_32', dict(depth=1, global_pool='avg'))
    (tmp_path / 'gp' / 'args.yaml').write_text(yaml.safe_dump(dict(model='sl_vit_32', model_kwargs=dict(depth=1),
                                                                   gp='avg')))
    with pytest.raises(SystemExit) as info:
        main(['attention', str(image_dir / '0.png'), '--checkpoint', str(tmp_path / 'gp'), '--model-kwargs', 'depth=1',
              'global_pool=max', '--out', str(tmp_path / 'a.png')])
    assert str(info.value) == (
        f"timm-sl attention: --model-kwargs global_pool='max': {tmp_path / 'gp' / 'model_best.pth.tar'} was trained "
        f"with global_pool='avg' (its run), which its weights do not record: they would load into another model than "
        f"the one trained; allowed: global_pool left out (the run's), or the value it trained with")


def test_an_image_pil_cannot_read_is_refused_saying_what_it_is_and_what_is_allowed(tmp_path):
    """kld / attention over a folder copied from a Mac (a ._ file beside each image), an iPhone's .heic, or an image
    cut off were refused with PIL's 'cannot identify image file' alone: no word of what the file is or what is
    allowed, where reproduce's data check names macOS metadata and says how to remove it."""
    model = _model('sl_vit_32', dict(depth=1))
    folder = tmp_path / 'imgs'
    folder.mkdir()
    Image.new('RGB', (8, 8)).save(folder / 'a.png')
    cases = {'._a.png': (b'\x00\x05\x16\x07' + bytes(60), " (macOS metadata, an AppleDouble ._ file written when "
                                                         "copying to exFAT or SMB, not an image); allowed: remove the "
                                                         "._ files"),
             'b.heic': (b'\x00\x00\x00\x18ftypheic' + bytes(40), ' (HEIC, which PIL reads only with the pillow-heif '
                                                                 'plugin); allowed: convert it to PNG or JPEG'),
             'c.png': (b'\x89PNG\r\n', '; allowed: whole images of a format PIL reads (copy or extract it again, or '
                                       'move it out of the way)')}
    for name, (data, end) in cases.items():
        (folder / name).write_bytes(data)
        with pytest.raises(ValueError) as info:
            load_images([str(folder)], model)
        assert str(info.value) == (f"{folder / name} is not a readable image: cannot identify image file "
                                   f"{str(folder / name)!r}{end}")
        (folder / name).unlink()


def _damaged_lzw_tiff(path):
    """A TIFF whose LZW strip is garbage past its middle: libtiff says so on file descriptor 2, PIL then refuses it."""
    Image.fromarray((torch.arange(32 * 32 * 3).reshape(32, 32, 3) % 251).to(torch.uint8).numpy()).save(
        path, compression='tiff_lzw')
    with Image.open(path) as image:
        (start,), (size,) = image.tag_v2[273], image.tag_v2[279]  # StripOffsets, StripByteCounts: one strip
    data = bytearray(path.read_bytes())
    data[start + size // 2:start + size] = b'\xff' * (size - size // 2)
    path.write_bytes(bytes(data))


def test_a_damaged_tiff_is_refused_in_one_line_and_a_warned_image_still_warns(tmp_path, capfd, monkeypatch):
    """A damaged TIFF was refused in one line after libtiff's own lines (written by C code to descriptor 2, naming
    its 'tempfile.tif') and PIL's warnings; what a decoder says is held back, dropped with a refused file and passed on
    with one that is read."""
    images = tmp_path / 'imgs'
    images.mkdir()
    _damaged_lzw_tiff(images / 'scan.tif')
    model = _model('sl_vit_32', dict(depth=1))
    with pytest.raises(ValueError) as info:
        load_images([str(images)], model)
    assert str(info.value) == (f"{images / 'scan.tif'} is not a readable image: decoder error -2; allowed: whole "
                               f"images of a format PIL reads (copy or extract it again, or move it out of the way)")
    assert capfd.readouterr().err == ''  # the command's one line is the refusal's
    (images / 'scan.tif').unlink()
    for name in 'abc':
        Image.new('RGB', (40, 40)).save(images / f'{name}.png')
    monkeypatch.setattr(Image, 'MAX_IMAGE_PIXELS', 1000)  # 1,600 pixels: PIL warns of a decompression bomb, and reads
    with pytest.warns(Image.DecompressionBombWarning) as warned:
        assert load_images([str(images)], model).tensor.shape == (3, 3, 32, 32)
    assert len(warned) == 1  # once, as Python says a warning of one place: not once for each image, nor twice each
    monkeypatch.setattr(sys, 'stderr', None)  # Python started with descriptor 2 closed (`2>&-`)
    with pytest.warns(Image.DecompressionBombWarning):
        assert load_images([str(images / 'a.png')], model).tensor.shape == (1, 3, 32, 32)


@pytest.mark.parametrize('command', ['temperature', 'receptive-field', 'kld', 'attention'])
def test_pretrained_in_model_kwargs_names_the_option(command, tmp_path, image_dir):
    """--model-kwargs pretrained=False ended on timm's 'create_model() got multiple values for keyword argument
    'pretrained'' (reproduce refuses it after -- naming --pretrained); it names the command's --pretrained."""
    images = [str(image_dir / '0.png')] if command in ('kld', 'attention') else []
    out = [] if command == 'receptive-field' else ['--out', str(tmp_path / 'c.png')]
    with pytest.raises(SystemExit) as info:
        main([command, *images, '--model', 'sl_vit_32', '--model-kwargs', 'depth=1', 'pretrained=False', *out])
    assert str(info.value) == (f'timm-sl {command}: --model-kwargs pretrained=False: timm-sl {command} gives the model '
                               f'pretrained itself; allowed: --pretrained instead, or pretrained left out of '
                               f'--model-kwargs')
    assert not (tmp_path / 'c.png').exists()


@pytest.mark.parametrize('command', ['temperature', 'receptive-field', 'kld', 'attention'])
def test_features_only_in_model_kwargs_is_refused(command, tmp_path, image_dir):
    """--model-kwargs features_only=True built timm's features wrapper, cut after block 9 of sl_vit_32's 12: kld and
    temperature charted 9 depths as the model's, attention drew block 9's maps as the final ones, and receptive-field
    said the model 'has no patch_embed'; it is refused before any chart."""
    images = [str(image_dir / '0.png')] if command in ('kld', 'attention') else []
    out = [] if command == 'receptive-field' else ['--out', str(tmp_path / 'c.png')]
    with pytest.raises(SystemExit) as info:
        main([command, *images, '--model', 'sl_vit_32', '--model-kwargs', 'features_only=True', *out])
    assert str(info.value) == (f'timm-sl {command}: --model-kwargs features_only=True: timm-sl {command} needs the '
                               f'whole model, and timm builds a features_only one without the blocks after its last '
                               f'out_indices (and without its classifier); allowed: features_only left out')
    assert not (tmp_path / 'c.png').exists()


@pytest.mark.parametrize('kwarg', ['features_only=True', 'pretrained=False'])
@pytest.mark.parametrize('command', ['temperature', 'attention'])
def test_timm_switches_in_model_kwargs_beside_a_run_are_refused(command, kwarg, tmp_path, image_dir):
    """--checkpoint RUN --model-kwargs features_only=True ended on timm's 'AssertionError: last-n (3) is out of range'
    (a deeper run: its weights' missing keys), and pretrained=False was taken where beside --model it is refused; the
    features_only line is the one beside --model, pretrained's names the checkpoint."""
    _run_folder(tmp_path / 'run', 'sl_vit_32', dict(depth=1))
    images = [str(image_dir / '0.png')] if command == 'attention' else []
    with pytest.raises(SystemExit) as info:
        main([command, *images, '--checkpoint', str(tmp_path / 'run'), '--model-kwargs', kwarg,
              '--out', str(tmp_path / 'c.png')])
    if kwarg.startswith('features_only'):
        assert str(info.value) == (f'timm-sl {command}: --model-kwargs features_only=True: timm-sl {command} needs the '
                                   f'whole model, and timm builds a features_only one without the blocks after its '
                                   f'last out_indices (and without its classifier); allowed: features_only left out')
    else:
        assert str(info.value) == (f"timm-sl {command}: model kwarg pretrained=False for "
                                   f"{tmp_path / 'run' / 'model_best.pth.tar'}: the checkpoint's weights are the "
                                   f"model's; timm's pretrained ones would be loaded and replaced; allowed: pretrained "
                                   f"left out of the model kwargs")
    assert not (tmp_path / 'c.png').exists()


def test_attention_numbers_name_images_by_their_text_under_a_latin1_locale(tmp_path, image_dir, capsys, figures,
                                                                            monkeypatch):
    """Under a Latin-1 locale the image 'café.png' is read as 'cafÃ©.png': the attention JSON named it so (any reader
    of the JSON, in any locale, got a name no file has), and its table row and chart row were 'cafÃ©.png'."""
    monkeypatch.setattr(sys, 'getfilesystemencoding', lambda: 'latin-1')
    image = tmp_path / 'caf\xc3\xa9.png'  # 'café.png' (UTF-8 on disk), as Python reads it under the Latin-1 locale
    shutil.copy(image_dir / '0.png', image)
    out = tmp_path / 'attn.png'
    assert main(['attention', str(image), '--model', 'sl_vit_32', '--model-kwargs', 'depth=1', '--out', str(out)]) == 0
    assert '\ncafé.png  SL  ' in capsys.readouterr().out
    assert [r['image'] for r in json.loads(out.with_suffix('.json').read_text(encoding='utf-8'))] == [
        str(tmp_path / 'café.png')]
    assert [ax.get_ylabel() for ax in figures[0].axes if [im.get_label() for im in ax.get_images()] == [INPUT_LABEL]
            ] == ['café.png']


@pytest.mark.parametrize('edit, says', [
    (dict(input_size=[3, 64, 64]), 'gives a data config timm cannot resolve (Requested image size (64, 64), but '
                                   'the model requires (32, 32).)'),
    (dict(input_size=[1, 32, 32], mean=[0.5], std=[0.5]), 'gives a data config timm cannot resolve (Requested 1 '
                                                          'input channels, but the model accepts 3.)'),
    (dict(input_size=[1, 32, 32]), 'gives a mean of [0.5071, 0.4865, 0.4409] for an input of 1 channel(s)'),
    (dict(mean=[0.5, 0.5]), 'gives a mean of [0.5, 0.5] for an input of 3 channel(s)'),
    (dict(mean='x'), "gives a mean of 'x' for an input of 3 channel(s)"),
    (dict(std=[0, 0, 0]), 'gives the data config std: (0, 0, 0), which no training ran with'),
    (dict(interpolation='nope'), "gives the interpolation 'nope', which timm does not know"),
])
def test_an_exported_folders_data_config_edited_by_hand_names_its_config_json(edit, says, tmp_path, image_dir,
                                                                              capsys):
    """A config.json whose pretrained_cfg was edited after export ended the analyses in a traceback (an input size
    the model asserts on, a mean of 2 channels or text, an unknown interpolation) or in timm's own line without the
    file (a std of 0): it is refused in one line naming config.json, as push refuses it."""
    _run_folder(tmp_path / 'run', 'sl_vit_32', dict(depth=1))
    assert main(['export', str(tmp_path / 'run'), '--out', str(tmp_path / 'exported')]) == 0
    config = tmp_path / 'exported' / 'config.json'
    saved = json.loads(config.read_text())
    saved['pretrained_cfg'].update(edit)
    config.write_text(json.dumps(saved))
    capsys.readouterr()
    with pytest.raises(SystemExit):
        main(['attention', str(image_dir), '--checkpoint', str(tmp_path / 'exported'), '--out',
              str(tmp_path / 'a.png')])
    err = capsys.readouterr().err
    assert err.startswith(f'timm-sl attention: {config} {says}') and err.count('\n') == 1, err
    assert err.endswith('allowed: the file as timm-sl export / release writes it (export again)\n'), err


@pytest.mark.parametrize('broken, says', [
    ('model.safetensors', 'model.safetensors is a link to {gone}, which does not exist; expected the '
                          'model.safetensors'),
    ('config.json', 'config.json is a link to {gone}, which does not exist; expected the config.json'),
    ('model.safetensors/', 'model.safetensors is a folder; expected the model.safetensors'),
    ('config.json/', 'config.json is a folder; expected the config.json'),
    ('-model.safetensors', 'holds config.json but no model.safetensors; expected the model.safetensors'),
])
def test_an_exported_folder_with_a_broken_file_names_it(broken, says, tmp_path, capsys):
    """An export folder whose model.safetensors or config.json was a link to nothing or a folder, or whose weights were
    gone, was called 'a folder without a checkpoint (model_best.pth.tar or last.pth.tar)': a false reason, and its
    allowed list left out the export folder the analyses take."""
    _run_folder(tmp_path / 'run', 'sl_vit_32', dict(depth=1))
    folder, gone = tmp_path / 'exported', tmp_path / 'gone'
    assert main(['export', str(tmp_path / 'run'), '--out', str(folder)]) == 0
    name = broken.strip('/-')
    (folder / name).unlink()
    if broken.endswith('/'):
        (folder / name).mkdir()
    elif not broken.startswith('-'):
        (folder / name).symlink_to(gone)
    capsys.readouterr()
    with pytest.raises(SystemExit):
        main(['temperature', '--checkpoint', str(folder), '--out', str(tmp_path / 't.png')])
    err = capsys.readouterr().err
    first = f'{folder} ' if broken.startswith('-') else f'{folder}{os.sep}'
    assert err.startswith(f'timm-sl temperature: {first}{says.format(gone=gone)}'), err
    assert err.count('\n') == 1 and 'allowed' in err, err


def test_a_compared_swin_of_other_stages_is_checked_for_its_configuration(tmp_path, image_dir):
    """Two sl_swin_32 runs of two stages (depths=(2, 2), num_heads=(3, 6), as users shrink it), the compared one of
    patch_size=4: the configuration check built both at the default three-stage depth, which two num_heads cannot
    build, and passed them as one configuration without a word. Both are now built at the first model's depth."""
    small = dict(depths=(2, 2), num_heads=(3, 6), window_size=2)
    _run_folder(tmp_path / 'sl', 'sl_swin_32', small)
    _run_folder(tmp_path / 'base', 'sl_swin_32', dict(small, patch_size=4, spt=False, lsa=False, spt_pool=False))
    with pytest.raises(SystemExit) as info:
        main(['kld', str(image_dir), '--checkpoint', str(tmp_path / 'sl'), '--compare-checkpoint',
              str(tmp_path / 'base'), '--out', str(tmp_path / 'k.png')])
    assert str(info.value).startswith(
        f"timm-sl kld: --compare-checkpoint {tmp_path / 'base' / 'model_best.pth.tar'} is another configuration of "
        f"sl_swin_32 than the first model: patch_size=4 (first: default)")
    # the other order: the compared Swin of fewer stages than the first, which cannot be built at the first's depth
    from timm_sl.tools.cli import _other_configuration
    assert _other_configuration('sl_swin_32', dict(depths=(2, 2, 2), num_heads=(3, 6, 12), window_size=2),
                                dict(small, patch_size=4)) == 'patch_size=4 (first: default)'
    assert _other_configuration('sl_swin_32', dict(depths=(2, 2, 2), num_heads=(3, 6, 12), window_size=2), small) == ''


def test_a_run_folder_with_a_newline_is_named_quoted_in_titles(tmp_path):
    """A checkpoint in a run folder 'run\\nA' was titled 'run' and 'A/model_best.pth.tar' on two lines (two names,
    neither the folder's), and a refusal naming it was two lines."""
    from timm_sl.tools.cli import _run_file
    file = tmp_path / 'run\nA' / 'model_best.pth.tar'
    file.parent.mkdir()
    file.write_bytes(b'')
    assert _run_file(str(file)) == repr('run\nA/model_best.pth.tar')
    (tmp_path / 'run').mkdir()
    (tmp_path / 'run' / 'model_best.pth.tar').write_bytes(b'')
    assert _run_file(str(tmp_path / 'run' / 'model_best.pth.tar')) == 'run/model_best.pth.tar'


def test_the_data_config_line_quotes_a_run_folder_named_with_a_newline(tmp_path, image_dir, capsys, monkeypatch,
                                                                        figures):
    """kld / attention's data-config line wrote the run's args.yaml as given: a run folder named with a newline broke
    the line in two (found by fuzzing argv at random)."""
    pytest.importorskip('matplotlib')
    monkeypatch.chdir(tmp_path)
    _run_folder(tmp_path / 'run\nz', 'sl_vit_32', dict(depth=1), mean=[0.5] * 3, std=[0.25] * 3)
    assert main(['kld', str(image_dir), '--checkpoint', 'run\nz', '--out', 'k.png']) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.endswith("the data config its run trained with ('run\\nz/args.yaml')")
