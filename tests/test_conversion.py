"""The one conversion path (timm_sl/convert.py): SL-PiT and SL-Swin replace timm's inline modules through it, as
``slify`` does, so the two build the same model from the same seed; each conversion is strict."""
import ast
from pathlib import Path

import pytest
import torch
from torch import nn

from timm.layers import Attention, PatchEmbed
from timm.models.cait import ClassAttn, TalkingHeadAttn
from timm.models.pit import PoolingVisionTransformer
from timm.models.swin_transformer import SwinTransformer, WindowAttention
from timm_sl import slify
from timm_sl.convert import SL_FORMS, convert_module, copy_timm_state, resample_pos_embed, spt_from_timm
from timm_sl.layers import LocalityClassAttn, LocalityTalkingHeadAttn, LocalityWindowAttention, SlArgs
from timm_sl.models import SlPoolingVisionTransformer, SlSwinTransformer

ROOT = Path(__file__).resolve().parents[1] / 'timm_sl'

# an overlapping 4/2 stem: timm's grid is 15x15 at 32 px, SPT's (patch = stride) 16x16, so the position map must follow
PIT = dict(img_size=32, patch_size=4, stride=2, base_dims=(16, 16), depth=(1, 1), heads=(2, 4), mlp_ratio=2,
           num_classes=10)
SWIN = dict(img_size=32, patch_size=2, window_size=4, embed_dim=24, depths=(1, 2), num_heads=(2, 4), num_classes=10)


def _same_state(a: nn.Module, b: nn.Module) -> None:
    sa, sb = a.state_dict(), b.state_dict()
    assert list(sa) == list(sb)
    unequal = [k for k in sa if not torch.equal(sa[k], sb[k])]
    assert not unequal, f'differ: {unequal}'


def test_family_pit_and_slify_build_the_same_model_from_the_same_seed():
    torch.manual_seed(0)
    family = SlPoolingVisionTransformer(spt_pool=False, **PIT).eval()
    torch.manual_seed(0)
    baseline = PoolingVisionTransformer(**PIT)
    timm_pos_embed = baseline.pos_embed.detach().clone()
    converted = slify(baseline, spt_pool=False).eval()
    assert timm_pos_embed.shape[-2:] == (15, 15) and family.pos_embed.shape[-2:] == (16, 16)
    # the shared policy: the replaced stem's position map is timm's, resampled to the new grid (not drawn afresh)
    assert torch.equal(family.pos_embed, resample_pos_embed(nn.Parameter(timm_pos_embed), (16, 16)))
    _same_state(family, converted)
    x = torch.randn(2, 3, 32, 32)
    with torch.no_grad():
        assert torch.equal(family(x), converted(x))


def test_family_pit_keeps_the_position_map_where_the_grid_does_not_change():
    kwargs = dict(PIT, patch_size=2)  # non-overlapping stem: SPT's grid is timm's
    torch.manual_seed(0)
    family = SlPoolingVisionTransformer(**kwargs)
    torch.manual_seed(0)
    baseline = PoolingVisionTransformer(**kwargs)
    assert torch.equal(family.pos_embed, baseline.pos_embed)


def test_family_swin_and_slify_build_the_same_model_from_the_same_seed():
    torch.manual_seed(0)
    family = SlSwinTransformer(spt=False, spt_pool=True, **SWIN).eval()
    torch.manual_seed(0)
    converted = slify(SwinTransformer(**SWIN), spt=False, spt_pool=True).eval()
    assert [type(m) for m in family.modules()][1:] == [type(m) for m in converted.modules()][1:]
    # Spool draws its init in module order in the family, after all attention in slify: compare the copies only
    family_state = {k: v for k, v in family.state_dict().items() if '.downsample.' not in k}
    converted_state = {k: v for k, v in converted.state_dict().items() if '.downsample.' not in k}
    assert list(family_state) == list(converted_state)
    assert all(torch.equal(v, converted_state[k]) for k, v in family_state.items())
    converted.load_state_dict(family.state_dict())
    x = torch.randn(2, 3, 32, 32)
    with torch.no_grad():
        assert torch.equal(family(x), converted(x))


@pytest.mark.parametrize('timm_module,lsa_cls,call', [
    (lambda: WindowAttention(16, 2, window_size=4), LocalityWindowAttention, lambda m, x: m(x)),
    (lambda: TalkingHeadAttn(16, num_heads=2), LocalityTalkingHeadAttn, lambda m, x: m(x)),
    (lambda: ClassAttn(16, num_heads=2, qkv_bias=True), LocalityClassAttn, lambda m, x: m(x)),
], ids=['window', 'talking_heads', 'class_attn'])
def test_conversion_without_mask_and_fixed_temperature_is_the_timm_layer(timm_module, lsa_cls, call):
    source = timm_module().eval()
    rebuilt = convert_module(source, SlArgs(lsa=False)).eval()
    assert type(rebuilt) is lsa_cls
    x = torch.randn(3, 16, 16)
    with torch.no_grad():
        torch.testing.assert_close(call(rebuilt, x), call(source, x), rtol=1e-5, atol=1e-6)


def test_conversion_refuses_a_class_without_an_sl_form():
    class MyAttention(WindowAttention):  # a subclass may carry options a rebuild would drop: exact classes only
        pass
    with pytest.raises(TypeError, match=r'^test_conversion\..*MyAttention has no SL form; allowed: '
                                        r'timm.layers.patch_embed.PatchEmbed, .*WindowAttention'):
        convert_module(MyAttention(16, 2, window_size=4))


def test_state_copy_is_strict():
    with pytest.raises(RuntimeError, match=r"weights do not line up \(missing \['bias'\], unexpected \[\]\)"):
        copy_timm_state(nn.Linear(4, 4), nn.Linear(4, 4, bias=False), own=())


def test_every_form_names_its_kind():
    assert {kind for kind, _ in SL_FORMS.values()} == {'spt', 'lsa', 'spool'}


def _imports(path: Path) -> set:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            names.add('.' * node.level + (node.module or ''))
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


def test_the_core_never_imports_the_harness():
    """What timm loads (layers, models, slify, registration) imports nothing of timm_sl.tools, which imports it: a
    model must build without the CLI, charts and run records, and the harness may change without touching it."""
    core = [p for p in sorted(ROOT.rglob('*.py')) if 'tools' not in p.relative_to(ROOT).parts]
    assert ROOT / 'layers' / 'lsa.py' in core and ROOT / 'models' / 'sl_vit.py' in core
    for path in core:
        depth = len(path.relative_to(ROOT).parts) - 1  # how many dots lead back to the package
        wrong = {n for n in _imports(path) if n.startswith('timm_sl.tools') or (
            n.startswith('.') and n.lstrip('.').startswith('tools') and len(n) - len(n.lstrip('.')) == depth + 1)}
        assert not wrong, f'{path.relative_to(ROOT)} imports {wrong}'


def test_layers_and_slify_do_not_import_the_families_and_families_not_slify():
    for path in [ROOT / 'slify.py', ROOT / 'convert.py', *sorted((ROOT / 'layers').glob('*.py'))]:
        wrong = {n for n in _imports(path) if n.lstrip('.').startswith('models') or n.startswith('timm_sl.models')}
        assert not wrong, f'{path.name} imports {wrong}'
    for path in sorted((ROOT / 'models').glob('*.py')):
        wrong = {n for n in _imports(path) if 'slify' in n}
        assert not wrong, f'models/{path.name} imports {wrong}'


@pytest.mark.parametrize('call,error,message', [
    (lambda: convert_module(Attention(16, 4), dict(lsa=True)), TypeError,
     "sl_args={'lsa': True} is invalid; allowed: an SlArgs (SlArgs(**switches))."),
    (lambda: spt_from_timm(PatchEmbed(32, 4, 3, 16), None), TypeError,
     'sl_args=None is invalid; allowed: an SlArgs (SlArgs(**switches)).'),
    (lambda: spt_from_timm(nn.Linear(2, 2), SlArgs()), TypeError,
     'stem=torch.nn.modules.linear.Linear is invalid; allowed: timm.layers.patch_embed.PatchEmbed or '
     'timm.models.pit.ConvEmbedding.'),
    (lambda: resample_pos_embed(nn.Parameter(torch.zeros(1, 5, 8)), (2, 2)), ValueError,
     'pos_embed of shape (1, 5, 8) is invalid; allowed: a (1, D, H, W) position map.'),
    (lambda: resample_pos_embed(nn.Parameter(torch.zeros(1, 8, 4, 4)), (0, 0)), ValueError,
     'grid=(0, 0) is invalid; allowed: an int > 0 or a pair of them.'),
    (lambda: resample_pos_embed(nn.Parameter(torch.zeros(1, 8, 4, 4)), '2'), ValueError,
     "grid='2' is invalid; allowed: an int > 0 or a pair of them."),
], ids=['convert_module-dict', 'spt_from_timm-none', 'spt_from_timm-linear', 'resample-3d', 'resample-0',
        'resample-str'])
def test_conversion_functions_name_a_bad_argument(call, error, message):
    """convert_module(attn, dict(lsa=True)) and spt_from_timm(stem, None) ended on "'dict' object has no attribute
    'lsa_kwargs'", spt_from_timm(Linear) on "no attribute 'proj'", resample_pos_embed of a (1, N, D) table or a 0 / text
    grid on torch's interpolate errors (one of them many lines)."""
    with pytest.raises(error) as refused:
        call()
    assert str(refused.value) == message
    assert resample_pos_embed(nn.Parameter(torch.zeros(1, 8, 4, 4)), (2, 3)).shape == (1, 8, 2, 3)
