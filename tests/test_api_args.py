"""The public functions with bad arguments: what a refusal names (the model the user asked for), and arguments that
were taken without a word (a value that gave a silently wrong model, or a traceback far from the argument)."""
import pytest
import torch

import timm
import timm_sl  # noqa: F401  (registers the sl_ models)
import timm_sl.layers
from timm_sl import SlVisionTransformer, slify


@pytest.mark.parametrize('name,kwargs,says', [
    ('sl_vit_32', dict(qkv_bias='maybe'), "sl_vit_32: qkv_bias='maybe' is invalid; allowed: True or False."),
    ('sl_vit_64', dict(depht=1), "sl_vit_64 got unknown model kwargs ['depht']; allowed: "),
    ('sl_cait_32', dict(spt=False, shift_ratio=.25), 'sl_cait_32: shift_ratio=0.25 is unused with spt=False; '),
    ('sl_swin_32', dict(patch_size=64), 'sl_swin_32: img_size=32, patch_size=64, window_size=4 (stage 0) give a 0x0 '),
    ('sl_t2t_32', dict(img_size=4096), 'sl_t2t_32: img_size=4096, first soft split'),
    ('sl_pit_32', dict(img_size=4096, stride=2), 'sl_pit_32: img_size=4096, patch_size=2, stride=2 give a 2048x2048'),
])
def test_a_refusal_names_the_model_asked_for(name, kwargs, says):
    """``timm.create_model('sl_vit_32', qkv_bias='maybe')`` said 'SlVisionTransformer: ...', a class the user never
    named (five registered models share it, at other sizes)."""
    with pytest.raises((TypeError, ValueError)) as refused:
        timm.create_model(name, **kwargs)
    assert str(refused.value).startswith(says)


def test_a_resize_names_the_model_and_the_class_names_itself():
    """A later ``set_input_size`` names the registered model it was built as; a class built by hand, its class."""
    model = timm.create_model('sl_vit_32', depth=1)
    with pytest.raises(ValueError, match=r'^sl_vit_32: img_size=4096, patch_size=\(4, 4\) give a 1024x1024 token '):
        model.set_input_size(img_size=4096)
    with pytest.raises(ValueError, match=r"^SlVisionTransformer: qkv_bias='x' is invalid; allowed: True or False\.$"):
        SlVisionTransformer(qkv_bias='x')
    timm.create_model('sl_vit_32', depth=1)  # the name is not left behind for the next model built
    with pytest.raises(ValueError, match=r"^SlVisionTransformer: qkv_bias='x'"):
        SlVisionTransformer(qkv_bias='x')


@pytest.mark.parametrize('name,kwargs,says', [
    # timm asserted 'dim should be divisible by num_heads', naming neither value
    ('sl_vit_32', dict(num_heads=5), 'sl_vit_32: embed_dim=192, num_heads=5: the heads do not divide the width; '),
    ('sl_t2t_32', dict(embed_dim=190), 'sl_t2t_32: embed_dim=190, num_heads=4: the heads do not divide the width; '),
    # built without a classifier: 192 features passed for logits
    ('sl_vit_32', dict(num_classes=-1), 'sl_vit_32: num_classes=-1 is invalid; allowed: an int >= 0 (0: no '),
    ('sl_pit_32', dict(num_classes='10'), "sl_pit_32: num_classes='10' is invalid; allowed: an int >= 0"),
    # built; the first training step failed in torch's dropout, naming no kwarg
    ('sl_cait_32', dict(drop_rate=float('nan')), 'sl_cait_32: drop_rate=nan is invalid; allowed: a number in [0, 1).'),
    ('sl_swin_32', dict(attn_drop_rate=1.5), 'sl_swin_32: attn_drop_rate=1.5 is invalid; allowed: a number in [0, 1)'),
    # ZeroDivisionError, a 12-line TypeError from torch.empty, an AssertionError with no message
    ('sl_vit_32', dict(embed_dim=0), 'sl_vit_32: embed_dim=0 is invalid; allowed: an int >= 1.'),
    ('sl_vit_32', dict(mlp_ratio='2'), "sl_vit_32: mlp_ratio='2' is invalid; allowed: a finite number > 0."),
    ('sl_swin_32', dict(mlp_ratio=(2, 0, 2)),
     'sl_swin_32: mlp_ratio=(2, 0, 2) is invalid; allowed: a finite number > 0, or a tuple of them (one per stage).'),
    ('sl_vit_32', dict(weight_init='foo'), "sl_vit_32: weight_init='foo' is invalid; allowed: '', 'skip', 'reset', "),
    # timm's Swin indexes num_heads per stage: IndexError / TypeError
    ('sl_swin_32', dict(num_heads=(3, 6)),
     'num_heads=(3, 6) is invalid with depths=(2, 6, 4); allowed: a tuple of ints >= 1, one per stage (3).'),
    ('sl_swin_32', dict(num_heads=4), 'num_heads=4 is invalid with depths=(2, 6, 4); allowed: a tuple of ints >= 1, '),
])
def test_a_bad_backbone_kwarg_is_one_line_naming_it(name, kwargs, says):
    """Backbone kwargs timm takes without a word, or refuses far from the kwarg, are refused as the model is built."""
    with pytest.raises(ValueError) as refused:
        timm.create_model(name, **kwargs)
    assert str(refused.value).startswith(says) and '\n' not in str(refused.value)


@pytest.mark.parametrize('name,kwargs', [
    ('sl_swin_32', dict(mlp_ratio=(2, 2, 2))), ('sl_swin_32', dict(depths=(1, 1))), ('sl_vit_32', dict(num_classes=0)),
    ('sl_vit_32', dict(weight_init='jax', drop_rate=0.1, mlp_ratio=1.5)), ('sl_cait_32', dict(num_heads=5)),
    ('sl_swin_32', dict(embed_dim=95)),  # Swin's heads take head_dim = width // heads: any width builds
])
def test_what_the_backbone_takes_still_builds(name, kwargs):
    with torch.device('meta'):
        timm.create_model(name, **kwargs)


@pytest.mark.parametrize('call,error,says', [
    (lambda: timm_sl.slify('vit_tiny_patch16_224', depth=1, qkv_bias='maybe'), ValueError,
     "slify of vit_tiny_patch16_224 (VisionTransformer): qkv_bias='maybe' is invalid; allowed: True or False."),
    (lambda: timm_sl.slify('vit_tiny_patch16_224', depth=1, global_pool='maxx'), ValueError,
     "slify of vit_tiny_patch16_224 (VisionTransformer): global_pool='maxx' is invalid; allowed: '', 'avg', "
     "'avgmax', 'max', 'token', 'map' or 'prr'."),
    (lambda: timm.create_model('slify', base='vit_tiny_patch16_224', depth=1, num_classes=-1), ValueError,
     'slify of vit_tiny_patch16_224 (VisionTransformer): num_classes=-1 is invalid; allowed: an int >= 0'),
    (lambda: timm_sl.plan_slify('vit_tiny_patch16_224'), TypeError,
     'plan_slify takes a model instance, not str; allowed: an nn.Module (slify_refusal(name, ...) for a timm model '
     'name).'),
    (lambda: timm_sl.plan_slify(torch.nn.Linear(2, 2), sl_args=dict(spt=False)), TypeError,
     "sl_args={'spt': False} is invalid; allowed: None or an SlArgs (SlArgs(**switches))."),
])
def test_slify_refuses_what_an_sl_model_refuses(call, error, says):
    """``slify(name, qkv_bias='maybe')`` built the base with qkv_bias on and ``num_classes=-1`` without a classifier,
    where ``sl_vit_*`` refuses both; ``plan_slify`` of a name or a dict of switches ended in an AttributeError."""
    with pytest.raises(error) as refused:
        call()
    assert str(refused.value) == says or str(refused.value).startswith(says)


def test_warm_start_refuses_a_diverged_runs_weights_and_leaves_the_model():
    """A state dict holding NaN (a run that diverged) was copied in: the model started from NaN and trained on NaN
    losses, reported as a warm start."""
    model = timm.create_model('sl_vit_32', depth=1)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    source = timm.create_model('vit_tiny_patch16_224', depth=1, img_size=32, patch_size=4, embed_dim=192,
                               num_heads=12, mlp_ratio=2, qkv_bias=False, num_classes=100).state_dict()
    source['blocks.0.mlp.fc1.weight'][0, 0] = float('nan')
    with pytest.raises(ValueError, match=r"^warm_start: the state dict holds NaN or inf in 1 of the tensors it would "
                                         r"copy \(e\.g\. 'blocks\.0\.mlp\.fc1\.weight'\): the weights of a run that "
                                         r"diverged; allowed: finite weights"):
        timm_sl.warm_start(model, source)
    assert all(torch.equal(v, before[k]) for k, v in model.state_dict().items())
    with pytest.raises(TypeError, match=r'^warm_start initialises a model, got str; allowed: an nn\.Module'):
        timm_sl.warm_start('sl_vit_32', source)


@pytest.mark.parametrize('kwargs,says', [
    (dict(dim=48, num_heads=3, diag_mask='maybe'), "diag_mask='maybe' is invalid; allowed: True or False."),
    (dict(dim=48, num_heads=3, learn_temp=0), 'learn_temp=0 is invalid; allowed: True or False.'),
    (dict(dim=0, num_heads=1), 'dim=0 is invalid; allowed: an int >= 1.'),
    (dict(dim=48, num_heads=0), 'num_heads=0 is invalid; allowed: an int >= 1.'),
    (dict(dim=10, num_heads=3), 'dim=10, num_heads=3: the heads do not divide the width; allowed: a num_heads that '
                                'divides dim, or attn_head_dim set.'),
])
def test_an_lsa_layer_built_by_hand_names_a_bad_argument(kwargs, says):
    """``LocalitySelfAttention(48, num_heads=3, diag_mask='maybe')`` built a masked layer (a string is true);
    ``dim=0`` / ``num_heads=0`` ended in a ZeroDivisionError, ``dim=10, num_heads=3`` in timm's bare assertion."""
    with pytest.raises(ValueError) as refused:
        timm_sl.LocalitySelfAttention(**kwargs)
    assert str(refused.value) == says


def test_an_lsa_layer_with_its_own_head_dim_still_builds():
    attn = timm_sl.LocalitySelfAttention(10, num_heads=3, attn_head_dim=4, diag_mask=False, learn_temp=True)
    assert attn.head_dim == 4 and attn.diag_mask is False


def test_weights_of_another_head_count_are_one_line(tmp_path):
    """Weights of ``num_heads=6`` loaded into ``sl_vit_32`` (12 heads) ended in torch's multi-line 'Error(s) in
    loading state_dict' (qkv has the same shape for any head count; only the temperatures differ)."""
    path = tmp_path / 'six_heads.pth'
    torch.save(timm.create_model('sl_vit_32', depth=1, num_heads=6).state_dict(), path)
    with pytest.raises(ValueError) as refused:
        timm.create_model('sl_vit_32', depth=1, pretrained=True, pretrained_cfg_overlay=dict(file=str(path)))
    assert str(refused.value) == ('this checkpoint has 6 LSA temperatures (heads) in blocks.0.attn.temperature, where '
                                  'sl_vit_32 has 12: its model had another num_heads; allowed: the num_heads it was '
                                  'trained with')
    timm.create_model('sl_vit_32', depth=1, num_heads=6, pretrained=True, pretrained_cfg_overlay=dict(file=str(path)))


@pytest.mark.parametrize('kinds,error,says', [
    (['lsaa'], ValueError, "kinds=['lsaa'] is invalid; allowed: a collection of 'lsa', 'spool', 'spt'."),
    ('lsa', ValueError, "kinds='lsa' is invalid; allowed: a collection of 'lsa', 'spool', 'spt'."),
])
def test_convert_modules_refuses_a_kind_it_does_not_know(kinds, error, says):
    """``convert_modules(model, SlArgs(), ['lsaa'])`` converted nothing and returned the model as if done; ``'lsa'``
    (a string, not a collection) failed in a TypeError about ``in <string>``."""
    from timm_sl.convert import convert_modules
    model = timm.create_model('vit_tiny_patch16_224', depth=1)
    with pytest.raises(error) as refused:
        convert_modules(model, timm_sl.SlArgs(), kinds)
    assert str(refused.value) == says
    with pytest.raises(TypeError, match=r"^sl_args=\{'spt': True\} is invalid; allowed: an SlArgs"):
        convert_modules(model, dict(spt=True))
    assert type(convert_modules(model, timm_sl.SlArgs(), ['lsa']).blocks[0].attn).__name__ == 'LocalitySelfAttention'


@pytest.mark.parametrize('build,says', [
    (lambda: timm_sl.ShiftedPatchProjection(3, 0, 4), 'embed_dim=0 is invalid; allowed: an int >= 1.'),
    (lambda: timm_sl.ShiftedPatchProjection(3, '8', 4), "embed_dim='8' is invalid; allowed: an int >= 1."),
    (lambda: timm_sl.layers.LocalityWindowAttention(96, num_heads=0), 'num_heads=0 is invalid; allowed: an int >= 1.'),
    (lambda: timm_sl.layers.LocalityTalkingHeadAttn(0, num_heads=1), 'dim=0 is invalid; allowed: an int >= 1.'),
])
def test_other_sl_layers_built_by_hand_name_a_bad_width(build, says):
    """An SPT projection of width 0 built (tokens of no width), of width '8' failed in torch.empty; a window or
    talking-heads attention of 0 heads or width ended in a ZeroDivisionError."""
    with pytest.raises(ValueError) as refused:
        build()
    assert str(refused.value) == says


def test_a_swin_built_by_hand_with_one_depth_names_it():
    """``SlSwinTransformer(depths=5)`` (an int for the per-stage tuple) ended in timm's "object of type 'int' has no
    len()"."""
    with pytest.raises(ValueError, match=r'^depths=5 is invalid; allowed: a non-empty tuple of ints >= 0 \(one per '
                                         r'stage\)\.$'):
        timm_sl.SlSwinTransformer(depths=5)


@pytest.mark.parametrize('name,kwargs,says', [
    ('sl_vit_32', dict(class_token=False, global_pool='token'),
     "sl_vit_32: class_token=False, global_pool='token': token pooling needs the class token; allowed: "
     "class_token=True, or another global_pool."),
    ('sl_vit_32', dict(global_pool='maxx'),
     "sl_vit_32: global_pool='maxx' is invalid; allowed: '', 'avg', 'avgmax', 'max', 'token', 'map' or 'prr'."),
    ('sl_cait_32', dict(global_pool='max'), "sl_cait_32: global_pool='max' is invalid; allowed: '', 'token' or 'avg'."),
    ('sl_pit_32', dict(global_pool='avg'), "sl_pit_32: global_pool='avg' is invalid; allowed: '' or 'token'."),
    ('sl_swin_32', dict(global_pool='maxx'),
     "sl_swin_32: global_pool='maxx' is invalid; allowed: '', 'avg', 'avgmax', 'catavgmax' or 'max'."),
    ('sl_swin_32', dict(window_size=0),
     'sl_swin_32: window_size=0 is invalid; allowed: an int >= 1, an (h, w) pair of them, or one of those per stage.'),
    ('sl_swin_32', dict(window_size=(4, (0, 4), 4)), 'sl_swin_32: window_size=(4, (0, 4), 4) is invalid; allowed: '),
])
def test_a_bad_pooling_or_window_names_model_kwarg_and_value(name, kwargs, says):
    """timm asserted 'Token pooling needs the class token.', 'Only avg, ... pooling (or none) is supported.',
    'Invalid pool type: maxx', 'Window sizes must be positive, got ((0, 0), ...)': no model, no kwarg."""
    with pytest.raises(ValueError) as refused:
        timm.create_model(name, **kwargs)
    assert str(refused.value).startswith(says)


_POOLS = ('', 'avg', 'avgmax', 'catavgmax', 'max', 'token', 'map', 'prr', 'fast', 'fastmax', 'maxx', 'Avg', None)


@pytest.mark.parametrize('name,base,tiny', [
    ('sl_vit_32', 'VisionTransformer', dict(depth=1)), ('sl_t2t_32', 'VisionTransformer', dict(depth=1)),
    ('sl_cait_32', 'Cait', dict(depth=1, depth_token_only=1)), ('sl_pit_32', 'PoolingVisionTransformer', {}),
    ('sl_swin_32', 'SwinTransformer', dict(depths=(1, 1, 1))),
])
def test_the_global_pools_allowed_are_those_the_installed_timm_takes(name, base, tiny):
    """Each global_pool the family's timm class builds with builds the sl_ model too, and each it refuses is refused
    in one line naming it (so a change in timm's accepted set shows here)."""
    import timm.models
    base_cls = next(getattr(module, base) for module in vars(timm.models).values()
                    if isinstance(getattr(module, base, None), type))
    for pool in _POOLS:
        with torch.device('meta'):
            try:
                given = {} if pool is None else {'global_pool': pool}  # create_model drops a None kwarg
                base_cls(**given, **({'img_size': 32} if base != 'PoolingVisionTransformer' else {}))
                timm_takes = True
            except (AssertionError, AttributeError, TypeError, ValueError):
                timm_takes = False
            try:
                timm.create_model(name, global_pool=pool, **tiny)
                taken = True
            except ValueError as error:
                assert str(error).startswith(f'{name}: global_pool={pool!r} is invalid; allowed: '), str(error)
                taken = False
        assert taken == timm_takes, (name, pool)


@pytest.mark.parametrize('args,says', [
    ((0, 0), 'ShiftedTokenPooling: in_feature=0 is invalid; allowed: an int >= 1.'),
    (('8', 16), "ShiftedTokenPooling: in_feature='8' is invalid; allowed: an int >= 1."),
    ((8, 0), 'ShiftedTokenPooling: out_feature=0 is invalid; allowed: an int >= 1.'),
    ((8, True), 'ShiftedTokenPooling: out_feature=True is invalid; allowed: an int >= 1.'),
])
def test_spool_built_by_hand_names_its_own_arguments(args, says):
    """``ShiftedTokenPooling(0, 0)`` said 'in_chans=0 is invalid' (and (8, 0) 'embed_dim=0'): names it does not take;
    so did ``ShiftedPatchMerging``, whose arguments are ``in_dim`` / ``out_dim``."""
    with pytest.raises(ValueError) as refused:
        timm_sl.layers.ShiftedTokenPooling(*args)
    assert str(refused.value) == says
    assert timm_sl.layers.ShiftedTokenPooling(8, 16).fc.out_features == 16
    with pytest.raises(ValueError) as refused:
        timm_sl.layers.ShiftedPatchMerging(*args)
    assert str(refused.value) == says.replace('ShiftedTokenPooling', 'ShiftedPatchMerging').replace(
        'in_feature', 'in_dim').replace('out_feature', 'out_dim')


@pytest.mark.parametrize('name,args,kwargs,says', [
    ('prepare_svhn', (None,), {}, 'prepare_svhn: root=None is invalid; '),
    ('prepare_svhn', ('out',), dict(source=3), 'prepare_svhn: source=3 is invalid; '),
    ('prepare_fashion_mnist', (3,), {}, 'prepare_fashion_mnist: root=3 is invalid; '),
    ('prepare_fashion_mnist', ('out',), dict(source=b'in'), "prepare_fashion_mnist: source=b'in' is invalid; "),
    ('prepare_tiny_imagenet', (None,), {}, 'prepare_tiny_imagenet: root=None is invalid; '),
    ('prepare_tiny_imagenet_train', (3,), {}, 'prepare_tiny_imagenet_train: root=3 is invalid; '),
    ('prepare_tiny_imagenet_val', (None,), {}, 'prepare_tiny_imagenet_val: root=None is invalid; '),
])
def test_a_data_preparer_given_no_path_names_the_argument(name, args, kwargs, says, tmp_path, monkeypatch):
    """``prepare_svhn(None)`` said 'expected str, bytes or os.PathLike object, not NoneType', naming no argument."""
    import timm_sl.tools
    monkeypatch.chdir(tmp_path)
    with pytest.raises(TypeError) as refused:
        getattr(timm_sl.tools, name)(*args, **kwargs)
    assert str(refused.value) == says + 'allowed: a folder path (str or os.PathLike)'
    assert list(tmp_path.iterdir()) == []



@pytest.mark.parametrize('name,kwargs,says', [
    ('prepare_fashion_mnist', dict(overwrite='no'), "prepare_fashion_mnist: overwrite='no' is invalid"),
    ('prepare_fashion_mnist', dict(progress=0), 'prepare_fashion_mnist: progress=0 is invalid'),
    ('prepare_svhn', dict(extra='no'), "prepare_svhn: extra='no' is invalid"),
    ('prepare_svhn', dict(overwrite='False'), "prepare_svhn: overwrite='False' is invalid"),
])
def test_a_data_preparer_flag_that_is_no_bool_is_refused_first(name, kwargs, says, tmp_path):
    """``overwrite='no'`` is true to Python: a folder prepared with other settings was replaced, ``extra='no'`` asked
    for extra_32x32.mat. A flag that is no bool is refused before anything is read or written."""
    import timm_sl.tools
    with pytest.raises(TypeError) as refused:
        getattr(timm_sl.tools, name)(tmp_path / 'out', source=tmp_path / 'missing', **kwargs)
    assert str(refused.value) == says + '; allowed: True or False'
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize('call,error,says', [
    (lambda tools, tmp: tools.read_fashion_mnist(tmp, 'val'), ValueError,
     "read_fashion_mnist: split='val' is invalid; allowed: 'train', 'test'"),
    (lambda tools, tmp: tools.read_fashion_mnist(None, 'train'), TypeError,
     'read_fashion_mnist: source=None is invalid; allowed: a folder path (str or os.PathLike)'),
    (lambda tools, tmp: tools.read_svhn_mat(None), TypeError,
     'read_svhn_mat: path=None is invalid; allowed: a .mat file path (str or os.PathLike)'),
])
def test_a_data_reader_names_a_bad_split_or_path(call, error, says, tmp_path):
    """``read_fashion_mnist(source, 'val')`` ended on a bare ``KeyError: 'val'``, a None path on pathlib's 'expected
    str, bytes or os.PathLike object, not NoneType'."""
    import timm_sl.tools
    with pytest.raises(error) as refused:
        call(timm_sl.tools, tmp_path)
    assert str(refused.value) == says

@pytest.mark.parametrize('limit', ['3', True, 2.5, 0])
def test_a_fashion_mnist_limit_that_is_no_count_is_refused_first(limit, tmp_path):
    """prepare_fashion_mnist(out, limit='3') ended on "'<' not supported between instances of 'str' and 'int'", and
    limit=True or 2.5 were taken for a count (a refusal about classes left without images)."""
    from timm_sl.tools import prepare_fashion_mnist
    with pytest.raises(ValueError) as refused:
        prepare_fashion_mnist(tmp_path / 'out', limit=limit)
    assert str(refused.value) == f'--limit {limit!r} is not allowed; expected an integer >= 1'
    assert not (tmp_path / 'out').exists()


@pytest.mark.parametrize('make,says', [
    (lambda: timm.create_model('sl_vit_32', depth=1, init_values=float('nan')),
     'sl_vit_32: init_values=nan is invalid; allowed: None or a finite number (LayerScale off / its start).'),
    (lambda: timm.create_model('sl_cait_32', depth=1, layer_scale_init='timm', init_values='1e-5'),
     "sl_cait_32: init_values='1e-5' is invalid; allowed: None or a finite number"),
    (lambda: slify('vit_tiny_patch16_224', depth=1, img_size=32, init_values=float('inf')),
     'slify of vit_tiny_patch16_224 (VisionTransformer): init_values=inf is invalid; allowed: None or a finite'),
    (lambda: timm.create_model('sl_swin_32', mlp_ratio=(2, 2)),
     'sl_swin_32: mlp_ratio=(2, 2) is invalid with depths=(2, 6, 4); allowed: one value, or one per stage (3).'),
    (lambda: slify('swin_tiny_patch4_window7_224', mlp_ratio=(4, 4)),
     'slify of swin_tiny_patch4_window7_224 (SwinTransformer): mlp_ratio=(4, 4) is invalid with depths=(2, 2, 6, 2); '
     'allowed: one value, or one per stage (4).'),
], ids=['vit-nan', 'cait-text', 'slify-inf', 'swin-short', 'slify-swin-short'])
def test_layer_scale_start_and_per_stage_mlp_ratio_are_checked(make, says):
    """init_values=nan built a ViT whose every output was NaN (text ended on a bare TypeError), and a Swin mlp_ratio
    tuple of fewer stages than depths on timm's IndexError: each is one line naming the kwarg and what is allowed."""
    with pytest.raises(ValueError) as refused:
        make()
    assert str(refused.value).startswith(says) and '\n' not in str(refused.value)
    assert len(timm.create_model('sl_swin_32', mlp_ratio=(2, 2, 3)).layers[2].blocks[0].mlp.fc1.weight) == 384 * 3
