"""What sl_ models accept and refuse, early and in one line naming the value and what is allowed: image size and
channels, every family's kwargs (unknown ones, the token bound, options a switch leaves unused), resizing with
set_input_size, empty batches."""
import functools
import re

import pytest
import torch
from torch import nn

import timm
from timm_sl.models.sl_cait import LocalityClassAttn
from sl_models import FAST_MODELS, MODELS, model_input, small_kwargs


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
    ('sl_swin_32', dict(window_size=0), ValueError, r'window_size=0 is invalid; allowed: an int >= 1'),
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
    with pytest.raises(ValueError, match=rf"^{name}: {kwarg}='maybe' is invalid; allowed: True or False\.$"):
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
    with pytest.raises(ValueError, match=rf'^{name}: img_size={re.escape(repr(size))}.*{grid}.*global attention'):
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



# ---- T2T: set_input_size keeps the fixed sin/cos table fixed ----

def test_t2t_set_input_size_rebuilds_the_fixed_table():
    model = timm.create_model('sl_t2t_32', **small_kwargs('sl_t2t_32'))
    params = sum(p.numel() for p in model.parameters())
    model.set_input_size(img_size=48)
    fresh = timm.create_model('sl_t2t_32', img_size=48, **small_kwargs('sl_t2t_32'))
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
    return timm.create_model(name, **small_kwargs(name))


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


# ---- empty batches ----

# timm's own Swin block reshapes with -1 (window partition, block forward), so timm's swin_* fails on B = 0 too
EMPTY_BATCH = [pytest.param(n, marks=pytest.mark.xfail(strict=True, raises=RuntimeError, reason="timm's Swin block "
                                                        "cannot run an empty batch")) if 'swin' in n else n
               for n in FAST_MODELS]


@pytest.mark.parametrize('name', EMPTY_BATCH)
def test_empty_batch(name):
    model = timm.create_model(name, **small_kwargs(name)).eval()
    out = model(torch.randn(0, 3, 32, 32))
    assert out.shape == (0, model.num_classes)


def test_t2t_empty_batch_nchw_tokens():
    model = timm.create_model('sl_t2t_32', **small_kwargs('sl_t2t_32'))
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


# every path that builds a model from user kwargs: one row each, so a path added beside them is one more row
BUILD_PATHS = {
    'sl_': lambda kw: timm.create_model('sl_vit_32', **kw),
    'baseline': lambda kw: timm.create_model('sl_vit_32', spt=False, lsa=False, **kw),
    'slify model': lambda kw: timm.create_model('slify', base='vit_tiny_patch16_224', **kw),
    'slify(name)': lambda kw: __import__('timm_sl').slify('deit_tiny_patch16_224', **kw),
}
# counts and rates the sl_ families refuse, which a baseline or a slify base took without a word (in_chans=True: a
# 1-channel stem; a CaiT's depth=True: one block; drop_path_rate=1.5: the first training step fails) or refused far from
# the kwarg (depth=-1: 'number of steps must be non-negative'; in_chans='3': a string-formatting TypeError)
BAD_COUNTS = [
    (dict(in_chans=True), 'in_chans=True is invalid; allowed: an int >= 1.'),
    (dict(in_chans=0), 'in_chans=0 is invalid; allowed: an int >= 1.'),
    (dict(in_chans='3'), "in_chans='3' is invalid; allowed: an int >= 1."),
    (dict(depth=-1), 'depth=-1 is invalid; allowed: an int >= 0.'),
    (dict(depth=True), 'depth=True is invalid; allowed: an int >= 0.'),
    (dict(num_heads=3.0), 'num_heads=3.0 is invalid; allowed: an int >= 1.'),
    (dict(drop_path_rate=1.5), 'drop_path_rate=1.5 is invalid; allowed: a number in [0, 1).'),
    (dict(drop_path_rate=float('nan')), 'drop_path_rate=nan is invalid; allowed: a number in [0, 1).'),
]


@pytest.mark.parametrize('path,kwargs,says', [
    pytest.param(path, kwargs, says, id=f'{path}-{next(iter(kwargs))}={next(iter(kwargs.values()))!r}',
                 # slify reads the named model's own head count (one more build, profiled): over 1 s each
                 marks=[pytest.mark.extended] if path.startswith('slify') and 'num_heads' in kwargs else [])
    for kwargs, says in BAD_COUNTS for path in BUILD_PATHS])
def test_every_build_path_refuses_a_bad_count_in_the_same_line(path, kwargs, says):
    """A count or rate an sl_ model refuses is refused in the same line by its baseline and by slify."""
    with torch.device('meta'), pytest.raises(ValueError) as refused:
        BUILD_PATHS[path](dict(kwargs))
    assert str(refused.value) == says


@pytest.mark.parametrize('path', ['slify model', 'slify(name)'])
@pytest.mark.parametrize('patch', [0, (0, 16), '16'])
def test_every_build_path_refuses_a_bad_patch_size(path, patch):
    """slify's bases ended on timm's ZeroDivisionError for patch_size=0 (a PiT's stem was built of no kernel)."""
    with torch.device('meta'), pytest.raises(ValueError) as refused:
        BUILD_PATHS[path](dict(patch_size=patch))
    assert str(refused.value) == f'patch_size={patch!r} is invalid; allowed: an int > 0 or a pair of them.'


@pytest.mark.parametrize('name', ['sl_vit_32', 'sl_cait_32', 'sl_pit_32', 'sl_swin_32', 'sl_t2t_32'])
def test_an_sl_model_refuses_text_for_pretrained(name):
    """``pretrained='False'`` was taken for True: 'No pretrained weights exist ... Use pretrained=False', or with a
    pretrained tag its weights loaded; it is refused as slify refuses it."""
    with pytest.raises(ValueError) as refused:
        timm.create_model(name, pretrained='False')
    assert str(refused.value) == "pretrained='False' is invalid; allowed: True or False."


def test_sl_swin_refuses_one_int_for_depths():
    """``sl_swin_32`` given ``depths=2`` ended on "object of type 'int' has no len()"; the class built by hand and
    slify of a Swin named it."""
    with pytest.raises(ValueError) as refused:
        timm.create_model('sl_swin_32', depths=2)
    assert str(refused.value) == 'depths=2 is invalid; allowed: a non-empty tuple of ints >= 0 (one per stage).'


@pytest.mark.parametrize('path', list(BUILD_PATHS))
@pytest.mark.parametrize('kwarg,value', [('act_layer', 'relux'), ('norm_layer', 'lnx')])
def test_every_build_path_refuses_an_unknown_layer_name(path, kwarg, value):
    """``--model-kwargs act_layer=relux`` (a typo of relu) ended on timm's bare KeyError 'relux' (kld printed its
    traceback); it is refused naming the kwarg and the names timm knows, and a known name still builds."""
    with torch.device('meta'), pytest.raises(ValueError) as refused:
        BUILD_PATHS[path]({kwarg: value})
    line = str(refused.value)
    assert f"{kwarg}={value!r} is invalid; allowed: a name timm knows (" in line and '\n' not in line
    assert (' relu, ' if kwarg == 'act_layer' else ' layernorm, ') in line
    with torch.device('meta'):
        BUILD_PATHS[path]({kwarg: 'relu' if kwarg == 'act_layer' else 'layernorm'})


@pytest.mark.parametrize('name', ['sl_cait_32', 'sl_swin_32'])
def test_a_layer_name_a_backbone_cannot_resolve_is_refused(name):
    """``sl_cait_32`` given ``act_layer='relu'`` (CaiT and Swin resolve no layer by name) ended on "'str' object is not
    callable"."""
    kwarg = 'act_layer' if name == 'sl_cait_32' else 'norm_layer'
    cls = 'SlCait' if name == 'sl_cait_32' else 'SlSwinTransformer'
    with pytest.raises(ValueError) as refused:
        timm.create_model(name, **{kwarg: 'relu'})
    assert str(refused.value) == (f"{name}: {kwarg}='relu' is invalid; allowed: a layer class; {cls} takes no {kwarg} "
                                  f"by name, so leave it out.")
