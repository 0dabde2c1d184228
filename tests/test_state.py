"""Determinism and state: same seed, same model and output; state dicts round trip exactly; reset_classifier and
set_input_size keep the LSA temperatures and the SPT weights."""
import pytest
import torch
from safetensors.torch import load_file, save_file

import timm
from timm_sl.layers import LsaMixin, ShiftedPatchProjection
from sl_models import FAST_MODELS, MODELS, model_input


def _sl_state(model):
    """The LSA and SPT tensors of a model, by name."""
    state = {}
    for name, module in model.named_modules():
        if isinstance(module, LsaMixin):
            state[f'{name}.temperature'] = module.temperature.detach().clone()
        if isinstance(module, ShiftedPatchProjection):
            state.update({f'{name}.{k}': v.detach().clone() for k, v in module.state_dict().items()})
    return state


def _perturb_temperatures(model):
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, LsaMixin):
                module.temperature.uniform_(0.05, 0.5)


@pytest.mark.parametrize('name', MODELS)
def test_same_seed_same_model_and_output(name):
    outs = []
    for _ in range(2):
        torch.manual_seed(7)
        model = timm.create_model(name, drop_path_rate=0.1).train()  # stochastic depth: the RNG matters
        torch.manual_seed(8)
        x = model_input(model)
        outs.append((model.state_dict(), model(x).detach()))
    (sd_a, out_a), (sd_b, out_b) = outs
    assert sd_a.keys() == sd_b.keys() and all(torch.equal(sd_a[k], sd_b[k]) for k in sd_a)
    assert torch.equal(out_a, out_b)


@pytest.mark.parametrize('name', MODELS)
def test_state_dict_round_trips_exactly(name, tmp_path):
    torch.manual_seed(0)
    model = timm.create_model(name).eval()
    _perturb_temperatures(model)
    save_file(model.state_dict(), tmp_path / 'w.safetensors')
    torch.manual_seed(1)
    twin = timm.create_model(name).eval()
    twin.load_state_dict(load_file(tmp_path / 'w.safetensors'), strict=True)
    for k, v in model.state_dict().items():
        assert torch.equal(twin.state_dict()[k], v), k
    x = model_input(model)
    with torch.no_grad():
        assert torch.equal(twin(x), model(x))


@pytest.mark.parametrize('name', MODELS)
def test_reset_classifier_keeps_lsa_and_spt(name):
    model = timm.create_model(name).eval()
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
    original = timm.create_model(name, lsa_learn_temp=False).eval()
    model = timm.create_model(name, lsa_learn_temp=False, device='meta').to_empty(device='cpu').eval()
    with torch.no_grad():
        for buffer in model.buffers():
            buffer.fill_(float('nan') if buffer.is_floating_point() else -1)
    reinit_non_persistent_buffers(model)
    model.load_state_dict(original.state_dict())
    x = model_input(original)
    torch.testing.assert_close(model(x), original(x))
