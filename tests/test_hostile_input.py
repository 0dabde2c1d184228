"""Bad input fails early with a message naming the value and what is allowed: image size and channels, kwargs of
every family, unknown kwargs, and broken or foreign checkpoint files (read without unpickling code)."""
import os
import re

import pytest
import torch
from safetensors.torch import save_file

import timm
from timm.models import load_checkpoint
from timm_sl.tools.checkpoint import model_from_checkpoint
from timm_sl.tools.runs import read_checkpoint
from sl_models import FAST_MODELS, MODELS, model_input


@pytest.mark.parametrize('name', MODELS)
def test_wrong_image_size_is_named(name):
    model = timm.create_model(name).eval()
    x = model_input(model)
    with pytest.raises(AssertionError, match=rf"Input height \({x.shape[2] + 8}\) doesn't match model"):
        model(torch.randn(1, 3, x.shape[2] + 8, x.shape[3] + 8))


@pytest.mark.parametrize('name', MODELS)
def test_wrong_channel_count_is_named(name):
    model = timm.create_model(name).eval()
    x = model_input(model)
    with pytest.raises(AssertionError, match=r'Input has 1 channels; this .* was built for in_chans=3'):
        model(x[:, :1])


@pytest.mark.parametrize('name', FAST_MODELS)
def test_size_not_a_multiple_of_the_patch_follows_the_baseline(name):
    """A stride-P patch conv drops what lies past the last whole patch; the SPT models take the same sizes and give
    the same token grids as their baselines."""
    sl = timm.create_model(name, img_size=30).eval()
    base = timm.create_model(name, img_size=30, **type(sl).baseline_kwargs).eval()
    x = torch.randn(2, 3, 30, 30)
    with torch.no_grad():
        out_sl, out_base = sl.forward_features(x), base.forward_features(x)
    assert out_sl.shape == out_base.shape and torch.isfinite(out_sl).all()


BAD_KWARGS = [
    ('sl_vit_32', dict(shift_ratio=2), ValueError, r'shift_ratio=2 is out of range; allowed: a number in \(0, 1.0\]'),
    ('sl_vit_32', dict(shift_ratio=0.1), ValueError, r'shift of \(0, 0\) px.*use shift_ratio >= 0.25'),
    ('sl_vit_32', dict(shift_directions='up'), ValueError, r"shift_directions='up' is not supported; allowed: "),
    ('sl_vit_32', dict(spt='yes'), ValueError, r"spt='yes' is invalid; allowed: True or False"),
    ('sl_vit_32', dict(lsa_temp_ratio=0), ValueError, r'lsa_temp_ratio=0 is invalid; allowed: a finite number > 0'),
    ('sl_vit_32', dict(depth=-1), ValueError, r'depth=-1 is invalid; allowed: an int >= 0'),
    ('sl_vit_32', dict(depth=2.5), ValueError, r'depth=2.5 is invalid; allowed: an int >= 0'),
    # img_size / num_heads of ViT, CaiT and T2T reached timm raw: str // int, IndexError, ZeroDivisionError
    ('sl_vit_32', dict(img_size='32'), ValueError, r"img_size='32' is invalid; allowed: an int > 0 or a pair of them"),
    ('sl_vit_32', dict(img_size=(32,)), ValueError, r'img_size=\(32,\) is invalid; allowed: an int > 0 or a pair'),
    ('sl_vit_32', dict(num_heads=0), ValueError, r'num_heads=0 is invalid; allowed: an int >= 1'),
    ('sl_cait_32', dict(img_size=32.0), ValueError, r'img_size=32.0 is invalid; allowed: an int > 0'),
    ('sl_cait_32', dict(num_heads=0), ValueError, r'num_heads=0 is invalid; allowed: an int >= 1'),
    ('sl_t2t_32', dict(img_size='32'), ValueError, r"img_size='32' is invalid; allowed: an int > 0"),
    ('sl_t2t_32', dict(num_heads=0), ValueError, r'num_heads=0 is invalid; allowed: an int >= 1'),
    ('sl_cait_32', dict(depth_token_only=-2), ValueError, r'depth_token_only=-2 is invalid'),
    ('sl_cait_32', dict(head_dim=0), ValueError, r'head_dim=0 is invalid; allowed: a positive int or None'),
    ('sl_t2t_32', dict(depth=-1), ValueError, r'depth=-1 is invalid'),
    ('sl_t2t_32', dict(soft_splits=((3, 2, 1),)), ValueError, r'whose strides multiply to 2; allowed: patch_size=2'),
    ('sl_pit_32', dict(depth=(1, 1)), ValueError, r"disagree on the number of stages: \{'depth': 2, 'heads': 3"),
    ('sl_pit_32', dict(depth=(1, -1, 1)), ValueError, r'depth=\(1, -1, 1\) is invalid; allowed: a non-empty tuple'),
    ('sl_pit_32', dict(pool_layout='avg'), ValueError, r"pool_layout='avg' is not supported; allowed: "),
    ('sl_pit_32', dict(spt_pool=1), ValueError, r'spt_pool=1 is invalid; allowed: True, False or None'),
    ('sl_swin_32', dict(depths=()), ValueError, r'depths=\(\) is invalid; allowed: a non-empty tuple'),
    ('sl_swin_32', dict(window_size=0), AssertionError, r'Window sizes must be positive'),  # timm's own check
    ('sl_swin_32', dict(spt_pool='no'), ValueError, r"spt_pool='no' is invalid"),
]


@pytest.mark.parametrize('name,kwargs,error,message', BAD_KWARGS,
                         ids=[f'{n}-{next(iter(k))}' for n, k, _, _ in BAD_KWARGS])
def test_bad_kwargs_are_named(name, kwargs, error, message):
    with pytest.raises(error, match=message):
        timm.create_model(name, **kwargs)


@pytest.mark.parametrize('size', [0, (0, 32), -5, '32', 32.0, (32,), True])
def test_slify_names_a_bad_img_size(size):
    """slify(name, img_size=0) reached timm raw ('Expected a positive image size (H, W), got (0, 0)', str // int,
    IndexError; True built a 1 px model): the same line as the sl_ families give, before anything is built."""
    with pytest.raises(ValueError, match=rf'^img_size={re.escape(repr(size))} is invalid; allowed: an int > 0 or a '
                                         r'pair of them\.$'):
        timm.create_model('slify', base='vit_tiny_patch16_224', img_size=size)


@pytest.mark.parametrize('name', MODELS)
def test_unknown_kwargs_are_named_with_the_allowed_ones(name):
    with pytest.raises(TypeError, match=r"got unknown model kwargs \['depht'\]; allowed: .*lsa.*shift_ratio"):
        timm.create_model(name, depht=3)




@pytest.mark.parametrize('name, kwarg', [('sl_vit_32', 'qkv_bias'), ('sl_pit_32', 'distilled'),
                                         ('sl_swin_32', 'strict_img_size'), ('sl_cait_32', 'qkv_bias'),
                                         ('sl_t2t_14', 'qk_norm')])
def test_text_for_a_bool_kwarg_is_refused(name, kwarg):
    """``--model-kwargs qkv_bias=maybe`` arrives as the string 'maybe' (not a literal), which built a model with
    qkv_bias on: text given to a kwarg whose default is a bool is refused, naming it and True / False."""
    with pytest.raises(ValueError, match=rf"^Sl\w+: {kwarg}='maybe' is invalid; allowed: True or False\.$"):
        timm.create_model(name, **{kwarg: 'maybe'})
    with torch.device('meta'):
        timm.create_model(name, **{kwarg: False})  # a bool is taken
    if kwarg == 'qkv_bias':
        with torch.device('meta'):
            assert not any(k.endswith('qkv.bias') for k in timm.create_model(name, qkv_bias=False).state_dict())


TOO_MANY_TOKENS = [  # (name, kwargs, the grid that is refused)
    ('sl_vit_32', dict(img_size=4096), r'1024x1024 token grid \(1048576 tokens\)'),
    ('sl_vit_base', dict(img_size=4096), r'256x256 token grid \(65536 tokens\)'),
    ('sl_vit_32', dict(img_size=513, dynamic_img_pad=True), '129x129 token grid'),  # the padded last patch counts
    ('sl_cait_32', dict(img_size=1024), '256x256 token grid'),
    ('sl_pit_32', dict(img_size=1024), r'512x512 token grid \(262144 tokens\) in the first stage'),
    ('sl_pit_xs', dict(img_size=2048, spt=False), '255x255 token grid'),  # timm's overlapping 16 / 8 conv stem
    ('sl_t2t_14', dict(img_size=1024), r'first soft split \(kernel, stride, padding\)=\(7, 4, 2\) give a 256x256'),
    ('sl_t2t_32', dict(img_size=1024), '512x512 token grid'),
]


@pytest.mark.parametrize('name,kwargs,grid', TOO_MANY_TOKENS,
                         ids=[f'{n}-{k["img_size"]}' for n, k, _ in TOO_MANY_TOKENS])
def test_global_attention_over_too_many_tokens_is_refused_at_construction(name, kwargs, grid, monkeypatch):
    """A global-attention grid past 16384 tokens would ask for the square of it per head in the forward (1 TiB for
    sl_vit_32 at 4096 px): refused in one line before any module is built."""
    built = []
    monkeypatch.setattr(torch.nn.Module, '__init__', lambda self, *a, **k: built.append(self))
    with pytest.raises(ValueError, match=rf'{grid}.* under global attention; allowed: at most 16384 tokens \(e\.g\. a '
                                         r'128x128 grid\)') as error:
        timm.create_model(name, **kwargs)
    assert '\n' not in str(error.value) and f"img_size={kwargs['img_size']}" in str(error.value)
    assert not built



@pytest.mark.parametrize('name,size,grid', [
    ('sl_vit_32', 4096, r'1024x1024 token grid'),
    ('sl_vit_base', (4096, 4096), r'256x256 token grid'),
    ('sl_t2t_32', 1024, r'first soft split \(kernel, stride, padding\)=\(3, 2, 1\) give a 512x512 token grid'),
    # timm scales the windows with the grid: their logits are held to global attention's bound
    ('sl_swin_32', 4096, r'\(stage 0\) give windows of 512x512 over a 2048x2048 token map, 1099511627776 '
                         r'attention logits per head and image; allowed: at most 268435456 \('),
    ('sl_swin_32', 1024, r'windows of 128x128 over a 512x512 token map'),  # 128x128 windows, each within 16384 tokens
])
def test_set_input_size_past_the_token_bound_is_refused_and_leaves_the_model(name, size, grid):
    """The constructor's bound holds for timm's resize too (else it builds, and the forward asks for terabytes)."""
    model = timm.create_model(name, **(dict(depths=(1, 1, 1)) if 'swin' in name else dict(depth=1)))
    before = model.patch_embed.grid_size, model.layers[0].blocks[0].window_size if 'swin' in name else \
        model.pos_embed.shape
    with pytest.raises(ValueError, match=rf'^Sl\w+: img_size={re.escape(repr(size))}.*{grid}.*global attention'):
        model.set_input_size(img_size=size)
    assert (model.patch_embed.grid_size, model.layers[0].blocks[0].window_size if 'swin' in name else
            model.pos_embed.shape) == before
    model.set_input_size(img_size=48)  # within the bound: timm's resize, as before
    assert model(torch.randn(1, 3, 48, 48)).shape == (1, model.num_classes)

@pytest.mark.parametrize('name,kwargs', [
    ('sl_vit_32', dict(img_size=512)),  # 128x128 patches: the bound itself
    ('sl_vit_32', dict(img_size=(8, 32768))),  # 2x8192
    ('sl_t2t_14', dict(img_size=512)),  # its first soft split gives 128x128
    ('sl_pit_32', dict(img_size=256)),
    ('sl_swin_32', dict(img_size=4096)),  # windowed attention: memory grows with the image area only
])
def test_token_grids_up_to_the_bound_build(name, kwargs):
    with torch.device('meta'):
        assert timm.create_model(name, **kwargs).patch_embed.img_size == timm.layers.to_2tuple(kwargs['img_size'])

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


def test_training_checkpoint_errors(files):
    with pytest.raises(FileNotFoundError, match='missing.pth does not exist'):
        read_checkpoint(files / 'missing.pth')
    for name, reason in (('garbage.pth', r'it is a text file; torch.save writes a zip archive'),
                         ('truncated.pth', r'truncated or damaged: '),
                         ('code.pth', r'weights-only load refused it: it holds objects other than tensors')):
        with pytest.raises(ValueError, match=rf'{name} is not a readable torch checkpoint \({reason}'):
            read_checkpoint(files / name)
    assert not (files / 'EXECUTED').exists()
    with pytest.raises(ValueError, match=r"good.pth does not fit sl_vit_32 \{'depth': 2"):
        model_from_checkpoint(files / 'good.pth', 'sl_vit_32', dict(depth=2))
