"""Export and compile paths of every sl_ model: TorchScript, torch.compile, FX, ONNX (timm's onnx_export path),
channels_last and mixed precision."""
import warnings
from pathlib import Path

import pytest
import torch

import timm
import timm_sl
from timm.layers import set_layer_config
from timm.models import create_feature_extractor, get_graph_node_names
from sl_models import FAST_MODELS, MODELS, model_input


def _pair(name, **kwargs):
    model = timm.create_model(name, **kwargs).eval()
    return model, model_input(model)


@pytest.mark.parametrize('name', MODELS)
def test_torchscript_matches_eager(name):
    model, x = _pair(name)
    scripted = torch.jit.script(model)  # scripting takes the explicit SPT path
    with torch.no_grad():
        torch.testing.assert_close(scripted(x), model(x), rtol=1e-4, atol=1e-4)


@pytest.mark.slow
@pytest.mark.parametrize('name', FAST_MODELS)
def test_compile_inductor_forward_and_backward(name):
    model = timm.create_model(name, drop_path_rate=0.)
    x = model_input(model)
    twin = timm.create_model(name, drop_path_rate=0.)
    twin.load_state_dict(model.state_dict())
    torch._dynamo.reset()
    compiled = torch.compile(twin)
    model(x).logsumexp(-1).mean().backward()
    compiled(x).logsumexp(-1).mean().backward()
    for (n, p), q in zip(model.named_parameters(), twin.parameters()):
        torch.testing.assert_close(q.grad, p.grad, rtol=1e-3, atol=1e-4, msg=n)


@pytest.mark.parametrize('name', MODELS)
def test_fx_graph_matches_eager(name):
    model, x = _pair(name)
    _, eval_nodes = get_graph_node_names(model)
    graph = create_feature_extractor(model, return_nodes=[eval_nodes[-1]]).eval()
    with torch.no_grad():
        torch.testing.assert_close(graph(x)[eval_nodes[-1]], model(x), rtol=1e-5, atol=1e-5)


def _exportable(name, **kwargs):
    with set_layer_config(exportable=True):  # as timm's onnx_export.py builds its model
        return timm.create_model(name, exportable=True, **kwargs).eval()


@pytest.mark.parametrize('name', FAST_MODELS)
def test_exportable_mode_takes_explicit_paths(name):
    model = _exportable(name)
    attention = [m for m in model.modules() if hasattr(m, 'fused_attn')]
    assert attention and not any(m.fused_attn for m in attention)
    eager = timm.create_model(name).eval()
    eager.load_state_dict(model.state_dict())
    x = model_input(model)
    with torch.no_grad():
        torch.testing.assert_close(model(x), eager(x), rtol=1e-4, atol=1e-5)


def _onnx_case(name, use_dynamo, tmp_path):
    onnx = pytest.importorskip('onnx')
    ort = pytest.importorskip('onnxruntime')
    from timm.utils.onnx import onnx_export
    model = _exportable(name)
    with torch.no_grad():  # sharpen attention and open CaiT's LayerScale (1e-5): the diagonal must visibly matter
        for param_name, param in model.named_parameters():
            if param_name.endswith('temperature') or 'gamma' in param_name:
                param.fill_(1.)
    path = str(tmp_path / f'{name}.onnx')
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        onnx_export(model, path, example_input=model_input(model), check=True, use_dynamo=use_dynamo,
                    opset=18 if use_dynamo else 17)
    package = str(Path(timm_sl.__file__).parent)  # the tracer finds no branch of ours on a traced size
    assert not [f'{w.filename}:{w.lineno}: {w.message}' for w in caught
                if issubclass(w.category, torch.jit.TracerWarning) and w.filename.startswith(package)]
    onnx.checker.check_model(path)
    session = ort.InferenceSession(path, providers=['CPUExecutionProvider'])
    x = model_input(model, batch=3)  # another batch size than the export's: the batch axis is dynamic
    out = torch.from_numpy(session.run(None, {session.get_inputs()[0].name: x.numpy()})[0])
    with torch.no_grad():
        ref = model(x)
        torch.testing.assert_close(out, ref, rtol=1e-4, atol=1e-4)
        # the match is not trivial: the same weights without the diagonal mask land an order of magnitude further away
        unmasked = timm.create_model(name, lsa_mask=False).eval()
        unmasked.load_state_dict(model.state_dict())
        error, gap = (out - ref).abs().max().item(), (unmasked(x) - out).abs().max().item()
        assert gap > 10 * max(error, 1e-7), (gap, error)


@pytest.mark.extended  # CI's extended run: timm's onnx_export.py path, 1.7 s a model
@pytest.mark.parametrize('name', MODELS)
def test_onnx_export_torchscript_exporter(name, tmp_path):
    _onnx_case(name, False, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize('name', FAST_MODELS)
def test_onnx_export_dynamo_exporter(name, tmp_path):
    _onnx_case(name, True, tmp_path)


@pytest.mark.parametrize('name', MODELS)
def test_channels_last_matches_contiguous(name):
    model, x = _pair(name)
    with torch.no_grad():
        ref = model(x)
        model = model.to(memory_format=torch.channels_last)
        out = model(x.contiguous(memory_format=torch.channels_last))
    torch.testing.assert_close(out, ref, rtol=1e-4, atol=1e-5)


def _relative_error(a, b):
    return ((a.float() - b.float()).norm() / b.float().norm()).item()


@pytest.mark.parametrize('dtype', [torch.bfloat16, torch.float16], ids=['bf16', 'fp16'])
@pytest.mark.parametrize('name', MODELS)
def test_cpu_autocast_close_to_fp32_with_finite_gradients(name, dtype):
    if dtype == torch.float16 and torch.__version__ < '2.3':  # before it, no CPU half LayerNorm (timm's pit_xs alike)
        pytest.skip('torch < 2.3 has no float16 LayerNorm on the CPU')
    model = timm.create_model(name, drop_path_rate=0.)
    x = model_input(model)
    with torch.no_grad():
        ref = model.eval()(x)
    model.train()
    with torch.autocast('cpu', dtype=dtype):
        out = model(x)
    assert out.dtype == dtype and torch.isfinite(out).all()
    out.float().logsumexp(-1).mean().backward()
    assert all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)
    assert _relative_error(out, ref) < (0.05 if dtype == torch.bfloat16 else 0.01)


@pytest.mark.parametrize('name', MODELS)
def test_bf16_weights_forward(name):
    model, x = _pair(name)
    with torch.no_grad():
        ref = model(x)
        out = model.to(torch.bfloat16)(x.to(torch.bfloat16))
    assert out.dtype == torch.bfloat16 and torch.isfinite(out).all()
    assert _relative_error(out, ref) < 0.05


@pytest.mark.skipif(not torch.cuda.is_available(), reason='needs a CUDA device')
@pytest.mark.parametrize('name', FAST_MODELS)
def test_cuda_fp16_autocast(name):
    model = timm.create_model(name, drop_path_rate=0.).cuda()
    x = model_input(model).cuda()
    with torch.no_grad():
        ref = model.eval()(x)
    model.train()
    with torch.autocast('cuda', dtype=torch.float16):
        out = model(x)
    out.float().logsumexp(-1).mean().backward()
    assert torch.isfinite(out).all() and _relative_error(out, ref) < 0.01
    assert all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)
