"""One graph everywhere: every registered model, the ablation switches and ``slify``'s converted architectures trace
into a single dynamo graph (``fullgraph=True`` fails on any break) for inference and for a training step.

A break sends ``torch.compile`` back to Python between graphs on every call (and, on the GPU, keeps CUDA graphs off):
a 32 px SL-ViT once ran 61x slower compiled than eager on torch 2.11 for one untraceable call in SPT. The cheap
``eager`` backend checks the capture without inductor's code generation. No layer picks its path by input size, so a
small batch traces what a real one does. CI runs this file on the newest torch and on the oldest one the project
supports, its ``extended`` tests included (``.ci/run``).
"""
import pytest
import torch

import timm
from timm_sl import slify
from sl_models import ALL_MODELS, FAST_MODELS, model_input

# every other registered model traces in the slow run; the default run covers each 224 px family built shallow
SLOW_MODELS = [pytest.param(name, marks=pytest.mark.slow) for name in ALL_MODELS if name not in FAST_MODELS]
SHALLOW_224 = [('sl_vit_tiny', dict(depth=2)), ('sl_pit_xs', dict(depth=(1, 1, 1))),
               ('sl_swin_t', dict(depths=(1, 1, 1, 1))), ('sl_cait_xxs24', dict(depth=2)), ('sl_t2t_14', dict(depth=2))]

# the paper's ablation rows (Tables 1, 4, 5) and the other switches, on the families whose layers they change
SWITCHES = [
    ('sl_vit_32', dict(lsa=False)), ('sl_vit_32', dict(spt=False, lsa_mask=False)),
    ('sl_vit_32', dict(spt=False, lsa=False, lsa_temp_ratio=0.5)), ('sl_vit_32', dict(shift_directions='all')),
    ('sl_pit_32', dict(spt_pool=False)), ('sl_pit_32', dict(spt_pool=False, pool_layout='pointwise')),
    ('sl_swin_32', dict(spt_pool=False)), ('sl_swin_32', dict(lsa_learn_temp=False)),
    ('sl_cait_32', dict(lsa_mask=False)), ('sl_t2t_32', dict(spt=False, lsa_mask=False)),
]
# slify's converting architectures (benchmarks/throughput.py's survey), built small: the layers are what matter
SLIFIED = [
    ('vit_tiny_patch16_224', dict(depth=2)), ('vit_small_patch16_224', dict(depth=2, global_pool='map')),
    ('deit_tiny_distilled_patch16_224', dict(depth=2)), ('deit3_small_patch16_224', dict(depth=2)),
    ('vit_little_patch16_reg4_gap_256', dict(depth=2)), ('flexivit_small', dict(depth=2)),
    ('pit_xs_224', dict(depth=(1, 1, 1))), ('swin_tiny_patch4_window7_224', dict(depths=(1, 1, 1, 1))),
    ('cait_xxs24_224', dict(depth=2)),
]


def _assert_one_graph(model: torch.nn.Module, x: torch.Tensor, train: bool) -> None:
    """Compile with ``fullgraph=True`` (raises on a break) and check the compiled forward (and backward) is eager's."""
    torch._dynamo.reset()
    model.train(train)
    compiled = torch.compile(model, fullgraph=True, backend='eager')
    if not train:
        with torch.no_grad():
            torch.testing.assert_close(compiled(x), model(x), rtol=1e-5, atol=1e-5)
        return
    torch.manual_seed(0)  # the same drop-path draws in both
    compiled(x).logsumexp(-1).mean().backward()
    grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    model.zero_grad()
    torch.manual_seed(0)
    model(x).logsumexp(-1).mean().backward()
    assert grads, 'no parameter received a gradient'
    for n, p in model.named_parameters():
        if n in grads:
            torch.testing.assert_close(grads[n], p.grad, rtol=1e-4, atol=1e-6, msg=n)


# a training step of each registered model runs in CI's extended run (and on the floor): the default run steps the
# same families' layers in train mode through SHALLOW_224 and SLIFIED
@pytest.mark.parametrize('name', FAST_MODELS + SLOW_MODELS)
@pytest.mark.parametrize('train', [False, pytest.param(True, marks=pytest.mark.extended)], ids=['infer', 'train'])
def test_registered_models_are_one_graph(name, train):
    model = timm.create_model(name, drop_path_rate=0.1)
    _assert_one_graph(model, model_input(model), train=train)


@pytest.mark.parametrize('name,kwargs', SHALLOW_224, ids=[n for n, _ in SHALLOW_224])
def test_224px_families_are_one_graph(name, kwargs):
    model = timm.create_model(name, drop_path_rate=0.1, **kwargs)
    _assert_one_graph(model, model_input(model), train=True)


@pytest.mark.extended
@pytest.mark.parametrize('name,kwargs', SWITCHES, ids=[f'{n}-{k}' for n, k in SWITCHES])
def test_switches_are_one_graph(name, kwargs):
    model = timm.create_model(name, **kwargs)
    _assert_one_graph(model, model_input(model), train=True)


@pytest.mark.parametrize('base,kwargs', SLIFIED, ids=[b for b, _ in SLIFIED])
def test_slified_models_are_one_graph(base, kwargs):
    model = slify(base, **kwargs)
    x = torch.randn(2, *model.pretrained_cfg['input_size'])
    _assert_one_graph(model, x, train=True)
