"""Every registered ``sl_`` model through one matrix (the 32 px configurations in the default run, the rest ``slow``;
see sl_models.py): forward and backward, the SL parts in place, the baseline switches, state-dict keys and parameter
counts, fused vs explicit attention, pickling, determinism, state round trips and a meta-device build. Checks that
belong to one family (Swin's mask order, CaiT's mask after the head mixing, T2T's tokenizer, ...) live in that
family's tests/test_sl_*.py; export paths in test_export_paths.py, precision edge cases in test_numerics.py."""
import copy
import io
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file
from torch import nn

import timm
from timm.layers import Attention, PatchEmbed
from timm.models.cait import ClassAttn, TalkingHeadAttn
from timm.models.pit import ConvEmbedding, Pooling
from timm.models.swin_transformer import PatchMerging, WindowAttention
from timm_sl.layers import LsaMixin, ShiftedPatchProjection, lsa_no_weight_decay
from sl_models import ALL_MODELS, FAST_MODELS, MODELS, TIMM_BASELINES, model_input

TIMM_ATTENTION = (Attention, WindowAttention, TalkingHeadAttn, ClassAttn)

# (parameters, digest of the state dict's keys and shapes) of every registered model, SL and with its
# baseline_kwargs: neither may change (a new key, a renamed one or another shape changes the digest)
STATE_LAYOUT = {
    ('sl_cait_32', 'sl'): (9075564, '21100aafd2db'),
    ('sl_cait_32', 'base'): (9038116, 'dbac5d23c220'),
    ('sl_cait_64', 'sl'): (9234544, 'af720376f09f'),
    ('sl_cait_64', 'base'): (9085064, '415d02e1ee14'),
    ('sl_cait_s24', 'sl'): (48103736, '729ad51ba3ba'),
    ('sl_cait_s24', 'base'): (46916200, '1996ec829271'),
    ('sl_cait_xs24', 'sl'): (27453220, '29a5818554a1'),
    ('sl_cait_xs24', 'base'): (26560648, '9657fd9a290f'),
    ('sl_cait_xxs24', 'sl'): (12553872, '98ec8efc8519'),
    ('sl_cait_xxs24', 'base'): (11956264, '381b0693c027'),
    ('sl_cait_xxs36', 'sl'): (17897376, '0236211706fa'),
    ('sl_cait_xxs36', 'base'): (17299720, '581053388d2d'),
    ('sl_pit_32', 'sl'): (8685208, 'fe0f5eaff2c5'),
    ('sl_pit_32', 'base'): (7015780, '39048fe13f0a'),
    ('sl_pit_64', 'sl'): (8741348, 'f0aade8a9855'),
    ('sl_pit_64', 'base'): (7057736, '4a91fcd5f035'),
    ('sl_pit_b', 'sl'): (86944290, '48b8eda770fe'),
    ('sl_pit_b', 'base'): (73764840, '4544048a9840'),
    ('sl_pit_s', 'sl'): (27656194, '0a1bfe27efbd'),
    ('sl_pit_s', 'base'): (23461912, 'd398c2a24894'),
    ('sl_pit_ti', 'sl'): (5688484, 'bbf48099c15f'),
    ('sl_pit_ti', 'base'): (4847272, '202da46500bc'),
    ('sl_pit_xs', 'sl'): (12494116, 'a8c3b0c2e1ec'),
    ('sl_pit_xs', 'base'): (10618888, '87430ed23a46'),
    ('sl_swin_32', 'sl'): (8572240, '806c49369dd4'),
    ('sl_swin_32', 'base'): (7083262, '95c3c1cea29a'),
    ('sl_swin_64', 'sl'): (8628380, 'd6496d5fc328'),
    ('sl_swin_64', 'base'): (7125218, '011bfd6d80a5'),
    ('sl_swin_b', 'sl'): (98833912, 'fc8bbfbc6f21'),
    ('sl_swin_b', 'base'): (87768224, 'ad8def022cb1'),
    ('sl_swin_s', 'sl'): (55841260, '7e90b93db2c6'),
    ('sl_swin_s', 'base'): (49606258, '6d1ed8189e32'),
    ('sl_swin_t', 'sl'): (34523212, 'bd78a929a492'),
    ('sl_swin_t', 'base'): (28288354, '2796fe526270'),
    ('sl_t2t_14', 'sl'): (21579580, 'b055a29e8d99'),
    ('sl_t2t_14', 'base'): (21465422, '4011f7eecb67'),
    ('sl_t2t_19', 'sl'): (39198893, '237985b03d48'),
    ('sl_t2t_19', 'base'): (39084686, '588b5bc611a1'),
    ('sl_t2t_24', 'sl'): (64114856, '00c1c3a3fb78'),
    ('sl_t2t_24', 'base'): (64000590, '5c13a8c0fdd1'),
    ('sl_t2t_32', 'sl'): (6529059, '638ea34a58aa'),
    ('sl_t2t_32', 'base'): (6508058, 'dea75a76bc20'),
    ('sl_t2t_64', 'sl'): (6679112, '5de5336c7182'),
    ('sl_t2t_64', 'base'): (6658110, 'be604f68b806'),
    ('sl_vit_32', 'sl'): (2747248, '68460174b403'),
    ('sl_vit_32', 'base'): (2709796, 'c9d02ef06183'),
    ('sl_vit_64', 'sl'): (2906228, '4d479e4ba3cf'),
    ('sl_vit_64', 'base'): (2756744, 'd2cfce784bf6'),
    ('sl_vit_base', 'sl'): (88934776, '111435a949ea'),
    ('sl_vit_base', 'base'): (86567656, 'f9c7444cdce8'),
    ('sl_vit_small', 'sl'): (23238064, 'efc18dc46148'),
    ('sl_vit_small', 'base'): (22050664, 'd53c14400eec'),
    ('sl_vit_tiny', 'sl'): (6314956, '0466b2cf8668'),
    ('sl_vit_tiny', 'base'): (5717416, 'e809facbc7f1'),
}


# Fewer blocks for the matrix tests that count no parameters (state, determinism, buffers, kernel counts): every
# kind of block a family has stays (Swin: two per stage, so the shifted-window block too; CaiT: its class-attention
# blocks), each test's check is per layer. ViT keeps its registered depth.
FEWER_BLOCKS = {'pit': dict(depth=(1, 1, 1)), 'swin': dict(depths=(2, 2, 2)), 'cait': dict(depth=2),
                't2t': dict(depth=2)}
FEWER_BLOCKS_224 = {'pit': dict(depth=(1, 1, 1)), 'swin': dict(depths=(2, 1, 1, 1)), 'cait': dict(depth=2)}


def _blocks(name: str, table: dict = FEWER_BLOCKS) -> dict:
    """The kwargs that build ``name`` with fewer blocks (none for ViT)."""
    return dict(table.get(name.split('_')[1], {}))


def _layout(model: nn.Module):
    import hashlib
    text = ';'.join(f'{k}:{tuple(v.shape)}' for k, v in model.state_dict().items())
    return sum(p.numel() for p in model.parameters()), hashlib.sha1(text.encode()).hexdigest()[:12]


def _temperatures(model: nn.Module):
    return {f'{n}.temperature': m for n, m in model.named_modules() if isinstance(m, LsaMixin)}


def _perturb_temperatures(model: nn.Module) -> None:
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, LsaMixin):
                module.temperature.uniform_(0.05, 0.5)


def _sl_state(model: nn.Module):
    """The LSA and SPT tensors of a model, by name."""
    state = {}
    for name, module in model.named_modules():
        if isinstance(module, LsaMixin):
            state[f'{name}.temperature'] = module.temperature.detach().clone()
        if isinstance(module, ShiftedPatchProjection):
            state.update({f'{name}.{k}': v.detach().clone() for k, v in module.state_dict().items()})
    return state


# ---- structure (meta device: every registered model in the default run) ----

@pytest.mark.parametrize('name', ALL_MODELS)
def test_sl_parts_replace_every_timm_part(name):
    """SPT tokenizes, every attention is an LSA layer (no timm attention left), Spool pools; the cfg's input size
    and classes are the model's."""
    model = timm.create_model(name, device='meta')
    assert model.num_classes == model.pretrained_cfg['num_classes']
    modules = list(model.modules())
    assert not [type(m).__name__ for m in modules if type(m) in TIMM_ATTENTION]
    lsa = [m for m in modules if isinstance(m, LsaMixin)]
    assert lsa and all(m.learn_temp and m.temp_ratio == 1. for m in lsa)
    assert all(m.diag_mask != isinstance(m, ClassAttn) for m in lsa)  # class attention never masks
    assert not [type(m).__name__ for m in modules if type(m) in (PatchEmbed, ConvEmbedding, Pooling, PatchMerging)]
    tokenizer = model.patch_embed
    assert any(isinstance(m, ShiftedPatchProjection) for m in tokenizer.modules()) or tokenizer.offsets  # T2T shifts


@pytest.mark.parametrize('name', ALL_MODELS)
def test_state_dict_layout_and_parameter_count_never_change(name):
    model = timm.create_model(name, device='meta')
    base = timm.create_model(name, device='meta', **type(model).baseline_kwargs)
    assert (_layout(model), _layout(base)) == (STATE_LAYOUT[name, 'sl'], STATE_LAYOUT[name, 'base'])
    assert not any(isinstance(m, LsaMixin) and m.learn_temp for m in base.modules())
    # what SL adds to the baseline: the learned temperatures and the SPT / Spool layers
    extra = set(model.state_dict()) - set(base.state_dict())
    assert extra and all(k.endswith('.temperature') or any(s in k for s in ('patch_embed.', 'pool.', 'downsample.'))
                         for k in extra)


@pytest.mark.parametrize('name', [pytest.param(n, marks=() if n in ('sl_vit_tiny', 'sl_pit_xs', 'sl_swin_t',
                                                                    'sl_cait_xxs24') else pytest.mark.slow)
                                  for n in TIMM_BASELINES])
def test_baseline_kwargs_give_timms_model(name):
    """With ``baseline_kwargs`` a 224 px config is timm's model: module for module, its state dict loads strictly and
    the output is timm's."""
    baseline_kwargs = type(timm.create_model(name, device='meta')).baseline_kwargs
    blocks = _blocks(name, FEWER_BLOCKS_224)
    base = timm.create_model(name, **baseline_kwargs, **blocks).eval()
    ref = timm.create_model(TIMM_BASELINES[name], img_size=224, **blocks).eval()
    assert {n: type(m) for n, m in base.named_modules() if n} == {n: type(m) for n, m in ref.named_modules() if n}
    base.load_state_dict(ref.state_dict())
    x = torch.randn(1, 3, 224, 224)
    with torch.no_grad():
        torch.testing.assert_close(base(x), ref(x))


# ---- forward / backward ----

@pytest.mark.parametrize('name', MODELS)
def test_forward_shape_finite_and_backward_reaches_every_parameter(name):
    model = timm.create_model(name, num_classes=5)
    x = model_input(model)
    out = model(x)
    assert out.shape == (2, 5) and torch.isfinite(out).all()
    nn.functional.cross_entropy(out, torch.tensor([0, 3])).backward()
    missing = [n for n, p in model.named_parameters() if p.grad is None or not p.grad.abs().sum() > 0]
    assert missing == []


@pytest.mark.parametrize('name', MODELS)
def test_fused_and_explicit_attention_agree(name):
    """Every attention's fused path (SDPA, batched head mixing) against its explicit one (timm's ``fused_attn``
    switch, e.g. ``TIMM_FUSED_ATTN=0``), forward and gradients, with temperatures that differ per head."""
    model = timm.create_model(name, drop_path_rate=0.).eval()
    _perturb_temperatures(model)
    x = model_input(model)
    results = []
    for fused in (True, False):
        for m in model.modules():
            if hasattr(m, 'fused_attn'):
                m.fused_attn = fused
        model.zero_grad()
        out = model(x)
        out.logsumexp(-1).mean().backward()
        results.append((out.detach(), {n: p.grad.clone() for n, p in model.named_parameters()}))
    (out_a, grads_a), (out_b, grads_b) = results
    torch.testing.assert_close(out_a, out_b, rtol=1e-4, atol=1e-5)
    for n in grads_a:
        torch.testing.assert_close(grads_a[n], grads_b[n], rtol=1e-3, atol=1e-5, msg=n)


@pytest.mark.parametrize('name', MODELS)
def test_grad_checkpointing_same_output(name):
    model = timm.create_model(name).eval()
    if name.startswith('sl_pit'):
        with pytest.raises(AssertionError, match='gradient checkpointing not supported'):  # as timm's PiT
            model.set_grad_checkpointing()
        return
    x = model_input(model)
    with torch.no_grad():
        out = model(x)
        model.set_grad_checkpointing()
        torch.testing.assert_close(model(x), out)


@pytest.mark.parametrize('name', ALL_MODELS)
def test_no_weight_decay_lists_the_learned_temperatures(name):
    model = timm.create_model(name, device='meta')
    learned = {n for n, p in model.named_parameters() if n.endswith('temperature')}
    assert learned and lsa_no_weight_decay(model) == learned and learned <= model.no_weight_decay()
    fixed = timm.create_model(name, device='meta', lsa_learn_temp=False)
    assert not any('temperature' in n for n in fixed.no_weight_decay())
    assert _temperatures(fixed) and not any('temperature' in k for k in fixed.state_dict())


# ---- state ----

@pytest.mark.parametrize('name', MODELS)
def test_pickle_and_deepcopy_keep_the_switches_and_the_output(name):
    model = timm.create_model(name, lsa_mask=False, lsa_temp_ratio=0.5, **_blocks(name)).eval()
    _perturb_temperatures(model)
    buffer = io.BytesIO()
    torch.save(model, buffer)
    buffer.seek(0)
    loaded = torch.load(buffer, weights_only=False)
    for twin in (loaded, copy.deepcopy(model)):
        layers = _temperatures(twin)
        assert [type(m) for m in layers.values()] == [type(m) for m in _temperatures(model).values()]
        assert all(not m.diag_mask and m.temp_ratio == 0.5 for m in layers.values())
        x = model_input(model)
        with torch.no_grad():
            torch.testing.assert_close(twin(x), model(x))


@pytest.mark.parametrize('name', MODELS)
def test_same_seed_same_model_and_output(name):
    outs = []
    for _ in range(2):
        torch.manual_seed(7)
        model = timm.create_model(name, drop_path_rate=0.1, **_blocks(name)).train()  # stochastic depth: RNG matters
        torch.manual_seed(8)
        x = model_input(model)
        outs.append((model.state_dict(), model(x).detach()))
    (sd_a, out_a), (sd_b, out_b) = outs
    assert sd_a.keys() == sd_b.keys() and all(torch.equal(sd_a[k], sd_b[k]) for k in sd_a)
    assert torch.equal(out_a, out_b)


@pytest.mark.parametrize('name', MODELS)
def test_state_dict_round_trips_exactly(name, tmp_path):
    torch.manual_seed(0)
    model = timm.create_model(name, **_blocks(name)).eval()
    _perturb_temperatures(model)
    save_file(model.state_dict(), tmp_path / 'w.safetensors')
    torch.manual_seed(1)
    twin = timm.create_model(name, **_blocks(name)).eval()
    twin.load_state_dict(load_file(tmp_path / 'w.safetensors'), strict=True)
    for k, v in model.state_dict().items():
        assert torch.equal(twin.state_dict()[k], v), k
    x = model_input(model)
    with torch.no_grad():
        assert torch.equal(twin(x), model(x))


@pytest.mark.parametrize('name', MODELS)
def test_reset_classifier_keeps_lsa_and_spt(name):
    model = timm.create_model(name, **_blocks(name)).eval()
    _perturb_temperatures(model)
    before = _sl_state(model)
    assert before
    x = model_input(model)
    with torch.no_grad():
        features = model.forward_features(x)
        model.reset_classifier(7)
        after = _sl_state(model)
        assert after.keys() == before.keys() and all(torch.equal(after[k], before[k]) for k in before)
        torch.testing.assert_close(model.forward_features(x), features)
        assert model(x).shape == (2, 7)
    assert all(n in dict(model.named_parameters()) for n in before if n.endswith('temperature'))  # still learnable


SET_INPUT_SIZE = [n for n in FAST_MODELS if not n.startswith(('sl_pit', 'sl_cait'))]  # timm's PiT, CaiT have none


@pytest.mark.parametrize('name', SET_INPUT_SIZE)
def test_set_input_size_keeps_lsa_and_spt(name):
    model = timm.create_model(name).eval()
    _perturb_temperatures(model)
    before = _sl_state(model)
    model.set_input_size(img_size=48)
    after = _sl_state(model)
    assert after.keys() == before.keys() and all(torch.equal(after[k], before[k]) for k in before)
    with torch.no_grad():
        out = model(torch.randn(2, 3, 48, 48))
    assert out.shape == (2, model.num_classes) and torch.isfinite(out).all()
    with pytest.raises(AssertionError, match=r"Input height \(32\) doesn't match model \(48\)"):
        model(torch.randn(2, 3, 32, 32))
    diag = [m for m in model.modules() if isinstance(m, LsaMixin) and m.diag_mask]
    assert diag  # the masking switch survived


@pytest.mark.parametrize('name', ['sl_pit_32', 'sl_cait_32'])
def test_families_without_set_input_size_say_so(name):
    assert not hasattr(timm.create_model(name), 'set_input_size')  # as timm's PiT and CaiT: rebuild with img_size


@pytest.mark.parametrize('name', FAST_MODELS)
def test_a_meta_device_build_restores_its_non_persistent_buffers(name):
    """Built on the meta device, materialised uninitialised (here: NaN / -1), given timm's buffer hook and then the
    checkpoint -- as transformers' timm wrapper loads a model -- the model computes what the original does. A fixed
    LSA temperature is a buffer too."""
    from timm.models._manipulate import reinit_non_persistent_buffers
    original = timm.create_model(name, lsa_learn_temp=False, lsa_temp_ratio=0.5, **_blocks(name)).eval()
    model = timm.create_model(name, lsa_learn_temp=False, lsa_temp_ratio=0.5, device='meta', **_blocks(name))
    model = model.to_empty(device='cpu').eval()
    with torch.no_grad():
        for buffer in model.buffers():
            buffer.fill_(float('nan') if buffer.is_floating_point() else -1)
    reinit_non_persistent_buffers(model)
    model.load_state_dict(original.state_dict())
    x = model_input(original)
    torch.testing.assert_close(model(x), original(x))


@pytest.mark.parametrize('name', FAST_MODELS)
def test_lsa_adds_at_most_three_kernels_per_attention_layer(name):
    """An eager GPU run at 32 px is launch-bound: each kernel costs issue time. LSA alone (SPT and Spool off) adds to
    the baseline's inference forward at most 3 kernel ops per LSA layer: the temperature multiply and the diagonal
    (two kernels built per call; written into the logits; or, in Swin, the block's constant pattern added to the
    position bias in place of timm's shift mask). A mask rebuilt from scratch per call costs more."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / 'benchmarks'))
    from _timing import make_step, tally_kernel_ops
    model = timm.create_model(name, **_blocks(name))
    lsa_only = {k: v for k, v in type(model).baseline_kwargs.items() if k != 'lsa'}
    torch.manual_seed(0)
    x = torch.randn(2, 3, 32, 32)
    ops = {key: tally_kernel_ops(make_step(timm.create_model(name, **kwargs, **_blocks(name)), 'infer', x, amp=False))
           for key, kwargs in (('lsa', lsa_only), ('base', type(model).baseline_kwargs))}
    layers = sum(isinstance(m, LsaMixin) for m in model.modules())
    # torch 2.2's CPU has no fused attention kernel that takes a mask: it runs the masked attention as its math path,
    # whose output the head merge then copies (a clone a layer of more heads than one); a GPU's fused kernel takes it
    copies = ops['lsa']['clone'] - ops['base']['clone']
    added = sum(ops['lsa'].values()) - sum(ops['base'].values()) - copies
    assert 0 < added <= 3 * layers and 0 <= copies <= layers, (ops, layers)


# (heads, head dim) of every LSA layer of the paper's small configurations, from DESIGN / paper Table 2, in module
# order: T2T's token layers have one head over their input width; CaiT's last 2 are class attention
PAPER_HEADS = {
    'sl_vit_32': [(12, 16)] * 9,
    'sl_t2t_32': [(1, 3 * 5 * 3 * 3)] + [(4, 64)] * 12,
    'sl_swin_32': [(3, 32)] * 2 + [(6, 32)] * 6 + [(12, 32)] * 4,
    'sl_pit_32': [(2, 48)] * 2 + [(4, 48)] * 6 + [(8, 48)] * 4,
    'sl_cait_32': [(4, 64)] * 26,
}


@pytest.mark.parametrize('name', sorted(PAPER_HEADS))
def test_small_configs_have_the_papers_heads(name):
    """Heads do not change a parameter or MAC count (heads x head dim is the width), nor does a qkv bias by much
    (0.02%): another head count, or a qkv bias in ViT / T2T / CaiT (the reference has none), passed every test."""
    model = timm.create_model(name, device='meta')
    heads = [(m.num_heads, m.lsa_head_dim) for m in model.modules() if isinstance(m, LsaMixin)]
    assert heads == PAPER_HEADS[name]
    if name in ('sl_vit_32', 'sl_t2t_32', 'sl_cait_32'):
        assert all(m.qkv.bias is None for m in model.modules() if isinstance(m, LsaMixin) and hasattr(m, 'qkv'))


# the 224 px configurations and the timm model each is built on (README's table): theirs are the reference heads
TIMM_BASES = {
    'sl_vit_tiny': 'vit_tiny_patch16_224', 'sl_vit_small': 'vit_small_patch16_224',
    'sl_vit_base': 'vit_base_patch16_224',
    'sl_pit_ti': 'pit_ti_224', 'sl_pit_xs': 'pit_xs_224', 'sl_pit_s': 'pit_s_224', 'sl_pit_b': 'pit_b_224',
    'sl_swin_t': 'swin_tiny_patch4_window7_224', 'sl_swin_s': 'swin_small_patch4_window7_224',
    'sl_swin_b': 'swin_base_patch4_window7_224', 'sl_cait_xxs24': 'cait_xxs24_224', 'sl_cait_xxs36': 'cait_xxs36_224',
    'sl_cait_xs24': 'cait_xs24_384', 'sl_cait_s24': 'cait_s24_224',
}
# T2T-ViT, which timm does not have (T2T paper, Table 1): one head over each token layer's input (a 7x7 soft split of
# 3 channels x 5 SPT copies, then 3x3 of token_dim 64), then the blocks' heads of 64
T2T_HEADS = {
    'sl_t2t_14': [(1, 3 * 5 * 7 * 7), (1, 64 * 3 * 3)] + [(6, 64)] * 14,
    'sl_t2t_19': [(1, 3 * 5 * 7 * 7), (1, 64 * 3 * 3)] + [(7, 64)] * 19,
    'sl_t2t_24': [(1, 3 * 5 * 7 * 7), (1, 64 * 3 * 3)] + [(8, 64)] * 24,
}


def _timm_attention_heads(model: torch.nn.Module):
    """(heads, head dim) of each attention layer of a timm model, read from its projections."""
    found = []
    for module in model.modules():
        heads = getattr(module, 'num_heads', None)
        if isinstance(heads, int) and type(module).__name__.lower().endswith(('attention', 'attn')):
            width = module.qkv.out_features // 3 if hasattr(module, 'qkv') else module.q.out_features
            found.append((heads, width // heads))
    return found


@pytest.mark.parametrize('name', sorted(TIMM_BASES) + sorted(T2T_HEADS))
def test_224_configs_have_their_timm_models_heads(name):
    """sl_vit_tiny built with 6 heads (of width 32) passed every test: heads change no parameter or MAC count. Each
    LSA layer of a 224 px configuration has the heads and head width of the timm model's layer it replaces (T2T's:
    the T2T paper's)."""
    ours = timm.create_model(name, device='meta')
    heads = [(m.num_heads, m.lsa_head_dim) for m in ours.modules() if isinstance(m, LsaMixin)]
    assert heads == (T2T_HEADS[name] if name in T2T_HEADS else
                     _timm_attention_heads(timm.create_model(TIMM_BASES[name], device='meta')))
