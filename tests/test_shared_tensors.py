"""Constants shared between attention calls: the diagonal bias and a Swin mask's LSA pattern are built once, handed to
every call, and rebuilt whenever what they were built from (or they themselves) changed."""
import gc
from unittest import mock

import torch
import torch.nn.functional as F

import timm
from timm_sl.layers import LocalitySelfAttention, lsa_attn_bias
from timm_sl.layers import lsa as lsa_module
from timm_sl.layers import lsa_window
from timm_sl.layers.shared_tensors import SharedTensorCache

CPU = torch.device('cpu')


def test_cache_builds_once_per_key_and_rebuilds_after_in_place_change():
    cache = SharedTensorCache(max_entries=2)
    builds = []

    def build(value):
        builds.append(value)
        return torch.full((2,), float(value))

    first = cache.get('a', lambda: build(1), CPU)
    assert cache.get('a', lambda: build(2), CPU) is first and builds == [1]
    first.add_(5)  # a caller broke the contract: the entry must not be handed out again
    again = cache.get('a', lambda: build(3), CPU)
    assert again is not first and again.tolist() == [3., 3.] and builds == [1, 3]
    cache.get('b', lambda: build(4), CPU)
    cache.get('c', lambda: build(5), CPU)  # beyond max_entries: the least recently used ('a') goes
    assert len(cache) == 2
    cache.get('a', lambda: build(6), CPU)
    assert builds[-1] == 6


def test_cache_holds_at_most_max_bytes_but_always_the_newest():
    cache = SharedTensorCache(max_entries=8, max_bytes=100)
    cache.get('a', lambda: torch.zeros(10), CPU)  # 40 bytes
    cache.get('b', lambda: torch.zeros(10), CPU)
    assert len(cache) == 2 and cache.nbytes() == 80
    cache.get('c', lambda: torch.zeros(10), CPU)  # 120 > 100: 'a' goes
    assert len(cache) == 2 and cache.nbytes() == 80
    cache.get('big', lambda: torch.zeros(50), CPU)  # alone over the budget: kept, everything older goes
    assert len(cache) == 1 and cache.nbytes() == 200


def test_cache_entries_of_a_source_follow_its_identity_version_and_life():
    cache = SharedTensorCache(max_entries=8)
    source = torch.zeros(3)
    doubled = cache.get('double', lambda: source * 2, CPU, source=source)
    assert cache.get('double', lambda: source * 3, CPU, source=source) is doubled
    source.add_(1)  # the source changed in place: rebuilt from its new values
    assert cache.get('double', lambda: source * 2, CPU, source=source).tolist() == [2., 2., 2.]
    other = torch.ones(3)
    assert cache.get('double', lambda: other * 4, CPU, source=other).tolist() == [4., 4., 4.]  # another object
    assert len(cache) == 2
    del source, other
    gc.collect()
    assert len(cache) == 0  # freed sources take their entries with them


def test_inference_source_or_graph_capture_builds_without_keeping():
    cache = SharedTensorCache(max_entries=4)
    with torch.inference_mode():
        source = torch.ones(3)  # an inference tensor: no version counter to watch
    first = cache.get('k', lambda: source * 2, CPU, source=source)
    assert cache.get('k', lambda: source * 2, CPU, source=source) is not first and len(cache) == 0
    def add_shared(x):
        return x + cache.get('c', lambda: torch.ones(3), CPU)
    traced = torch.jit.trace(add_shared, torch.zeros(3), check_trace=False)  # the check would rerun it eagerly
    assert len(cache) == 0 and torch.equal(traced(torch.zeros(3)), torch.ones(3))  # tracing recorded the build


def test_entry_built_under_inference_mode_serves_training():
    cache = SharedTensorCache(max_entries=2)
    with torch.inference_mode():
        bias = cache.get('k', lambda: torch.zeros(4), CPU)
    assert not bias.is_inference()
    x = torch.randn(4, requires_grad=True)
    (x + bias).sum().backward()  # an inference tensor could not take part in autograd like this
    assert torch.equal(x.grad, torch.ones(4))


def test_lsa_attn_bias_is_fresh_by_default_and_shared_on_request():
    fresh = lsa_attn_bias(5, torch.float32, CPU)
    assert fresh is not lsa_attn_bias(5, torch.float32, CPU)
    shared = lsa_attn_bias(5, torch.float32, CPU, shared=True)
    assert shared is lsa_attn_bias(5, torch.float32, CPU, shared=True)
    assert torch.equal(shared, fresh)
    assert lsa_attn_bias(5, torch.float64, CPU, shared=True).dtype == torch.float64  # one per dtype
    assert lsa_attn_bias(6, torch.float32, CPU, shared=True).shape == (6, 6)  # and per token count
    big = lsa_module.MAX_SHARED_BIAS_TOKENS + 1  # above the limit: built per call, nothing held
    once, twice = (lsa_attn_bias(big, torch.float32, CPU, shared=True) for _ in range(2))
    assert once is not twice and torch.equal(once, twice)


def _sdpa_masks(module, x, calls=2):
    masks = []
    real = F.scaled_dot_product_attention

    def spy(*args, attn_mask=None, **kwargs):
        masks.append(attn_mask)
        return real(*args, attn_mask=attn_mask, **kwargs)
    with mock.patch.object(F, 'scaled_dot_product_attention', spy), torch.no_grad():
        outs = [module(x) for _ in range(calls)]
    return masks, outs


def test_attention_reuses_its_diagonal_bias_and_a_damaged_one_is_rebuilt():
    attn = LocalitySelfAttention(16, num_heads=2).eval()
    x = torch.randn(2, 7, 16)
    masks, (out1, out2) = _sdpa_masks(attn, x)
    assert masks[0] is masks[1] and torch.isneginf(masks[0].diagonal()).all()
    masks[0].zero_()  # someone wrote into the shared bias: the next call must not use it
    masks2, (out3,) = _sdpa_masks(attn, x, calls=1)
    assert masks2[0] is not masks[0] and torch.isneginf(masks2[0].diagonal()).all()
    torch.testing.assert_close(out3, out1, rtol=0, atol=0)


def _shift_blocks(model):
    return [b for layer in model.layers for b in layer.blocks if b.attn_mask is not None]


def test_swin_mask_pattern_is_built_once_and_follows_its_mask():
    model = timm.create_model('sl_swin_32').eval()
    block = _shift_blocks(model)[0]
    calls = []
    real = lsa_window._window_structure

    def counting(mask):
        calls.append(mask)
        return real(mask)
    x = torch.randn(2, 3, 32, 32)
    with mock.patch.object(lsa_window, '_window_structure', counting), torch.no_grad():
        ref = model(x)
        built = len(calls)
        assert built == len(_shift_blocks(model))  # one per shift mask ...
        torch.testing.assert_close(model(x), ref, rtol=0, atol=0)
        assert len(calls) == built  # ... and none on the next forward
        block.attn_mask.zero_()  # an in-place change of the mask (every region joined): rebuilt from it
        changed = model(x)
        assert len(calls) == built + 1 and calls[-1] is block.attn_mask
    assert not torch.equal(changed, ref)
    # the cache gives what a fresh build gives
    fresh = lsa_window._window_structure(block.attn_mask)
    torch.testing.assert_close(lsa_window.window_lsa_structure(block.attn_mask, fresh.shape[-1], CPU), fresh)


def test_swin_inference_mode_then_training_step():
    model = timm.create_model('sl_swin_32')
    x = torch.randn(2, 3, 32, 32)
    model.eval()
    with torch.inference_mode():
        expected = model(x)
    model.train()
    model(x).logsumexp(-1).sum().backward()  # shared constants first built in inference mode serve autograd
    assert all(p.grad is not None for p in model.parameters() if p.requires_grad)
    model.eval()
    with torch.no_grad():
        torch.testing.assert_close(model(x), expected)


def test_fake_tensor_mode_neither_keeps_nor_receives_shared_tensors():
    """Shape / memory estimation under FakeTensorMode: its tensors are not kept for real calls, and a strict fake
    forward after a real one is not handed the real cached bias."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    model = timm.create_model('sl_vit_32', img_size=40).eval()  # 101 tokens: a count no other test caches
    x = torch.randn(2, 3, 40, 40)
    with torch.no_grad():
        expected = model(x)
    with FakeTensorMode(allow_non_fake_inputs=True) as mode, torch.no_grad():
        assert model(mode.from_tensor(x)).shape == (2, 100)
    bias = lsa_attn_bias(101, torch.float32, CPU, shared=True)
    assert type(bias) is torch.Tensor and torch.isneginf(bias.diagonal()).all()
    with torch.no_grad():
        torch.testing.assert_close(model(x), expected, rtol=0, atol=0)
    # a strict fake mode refuses real tensors: the model's state goes in converted, the shared bias must not go in
    with FakeTensorMode() as strict, torch.no_grad():
        state = {n: strict.from_tensor(t) for n, t in [*model.named_parameters(), *model.named_buffers()]}
        out = torch.func.functional_call(model, state, (strict.from_tensor(x),))
    assert out.shape == (2, 100)
