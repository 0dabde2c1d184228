"""timm's own, unmodified train.py / validate.py / benchmark.py / onnx_export.py drive the sl_ models (no import).

These scripts live in timm's git repository, not in its wheel: point ``TIMM_REPO`` at a checkout (or a folder holding
the scripts) to run these tests; they are skipped otherwise. Marked slow.
"""
import csv
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

pytestmark = pytest.mark.slow

TIMM_REPO = os.environ.get('TIMM_REPO')
needs_repo = pytest.mark.skipif(
    not TIMM_REPO or not (Path(TIMM_REPO) / 'train.py').exists(),
    reason="set TIMM_REPO to a folder with timm's train.py / validate.py / benchmark.py")


def _image_folder(root: Path, classes: int = 3, per_class: int = 12, size: int = 32) -> Path:
    """A tiny ImageFolder: each class is a bright square at its own place on noise, so it is learnable."""
    from PIL import Image
    g = torch.Generator().manual_seed(0)
    for split in ('train', 'val'):
        for c in range(classes):
            folder = root / split / f'class_{c}'
            folder.mkdir(parents=True, exist_ok=True)
            for i in range(per_class):
                img = torch.rand(size, size, 3, generator=g) * 80
                y0 = 4 + 8 * c
                img[y0:y0 + 8, y0:y0 + 8] = 255
                Image.fromarray(img.to(torch.uint8).numpy()).save(folder / f'{i}.png')
    return root


def _run(args, cwd, **extra_env: str):
    env = {k: v for k, v in os.environ.items() if k != 'TIMM_SL_NO_AUTOLOAD'}
    env['CUDA_VISIBLE_DEVICES'] = ''
    env.update(extra_env)
    result = subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result.stdout + result.stderr


@needs_repo
def test_train_and_validate_sl_vit_32(tmp_path):
    data = _image_folder(tmp_path / 'data')
    out = tmp_path / 'output'
    log = _run([
        str(Path(TIMM_REPO) / 'train.py'), str(data), '--model', 'sl_vit_32', '--num-classes', '3',
        '--model-kwargs', 'depth=2', 'shift_directions=cardinal',
        '--input-size', '3', '32', '32', '--epochs', '2', '--batch-size', '8', '--workers', '0',
        '--opt', 'adamw', '--lr', '1e-3', '--weight-decay', '0.05', '--warmup-epochs', '0',
        '--output', str(out), '--experiment', 'sl', '--log-interval', '1', '--no-prefetcher', '--device', 'cpu',
    ], cwd=tmp_path)
    assert 'Model sl_vit_32 created' in log
    summary = list(csv.DictReader(open(out / 'sl' / 'summary.csv')))
    assert len(summary) == 2 and all(float(row['train_loss']) > 0 for row in summary)
    checkpoint = out / 'sl' / 'model_best.pth.tar'
    state = torch.load(checkpoint, map_location='cpu', weights_only=False)['state_dict']
    assert 'blocks.0.attn.temperature' in state and 'patch_embed.proj.norm.weight' in state
    if not hasattr(torch.serialization, 'safe_globals'):  # test_timm_refuses_train_py_checkpoints_below_torch_2_5
        pytest.skip(f"torch {torch.__version__} has no safe_globals: timm's validate.py refuses train.py checkpoints")

    log = _run([
        str(Path(TIMM_REPO) / 'validate.py'), str(data / 'val'), '--model', 'sl_vit_32', '--num-classes', '3',
        '--model-kwargs', 'depth=2', 'shift_directions=cardinal', '--checkpoint', str(checkpoint),
        '--batch-size', '8', '--workers', '0', '--no-prefetcher', '--device', 'cpu',
    ], cwd=tmp_path)
    assert "'top1'" in log or 'top1' in log


@needs_repo
@pytest.mark.parametrize('model', ['sl_vit_32', 'sl_pit_32', 'sl_swin_32', 'sl_cait_32', 'sl_t2t_32'])
def test_benchmark_script(model, tmp_path):
    log = _run([
        str(Path(TIMM_REPO) / 'benchmark.py'), '--model', model, '--bench', 'both', '--batch-size', '4',
        '--num-warm-iter', '1', '--num-bench-iter', '5', '--device', 'cpu',
    ], cwd=tmp_path)
    assert 'infer_samples_per_sec' in log and 'train_samples_per_sec' in log


@needs_repo
@pytest.mark.parametrize('model', ['sl_vit_32', 'sl_pit_32', 'sl_swin_32', 'sl_cait_32', 'sl_t2t_32'])
def test_benchmark_script_torchcompile(model, tmp_path):
    """``benchmark.py --torchcompile`` (inductor, here on the CPU) compiles inference and a training step of every
    family without a graph break: dynamo's graph-break log stays empty."""
    log = _run([
        str(Path(TIMM_REPO) / 'benchmark.py'), '--model', model, '--bench', 'both', '--batch-size', '4',
        '--num-warm-iter', '1', '--num-bench-iter', '5', '--device', 'cpu', '--torchcompile',
    ], cwd=tmp_path, TORCH_LOGS='graph_breaks')
    assert 'infer_samples_per_sec' in log and 'train_samples_per_sec' in log
    assert 'Graph break' not in log, log[-3000:]


@needs_repo
def test_train_script_torchcompile(tmp_path):
    """``train.py --torchcompile``: the compiled model trains (loss falls over the epochs) and breaks no graph."""
    data = _image_folder(tmp_path / 'data')
    out = tmp_path / 'output'
    log = _run([
        str(Path(TIMM_REPO) / 'train.py'), str(data), '--model', 'sl_vit_32', '--num-classes', '3',
        '--model-kwargs', 'depth=2', '--input-size', '3', '32', '32', '--epochs', '3', '--batch-size', '8',
        '--workers', '0', '--opt', 'adamw', '--lr', '1e-3', '--warmup-epochs', '0', '--output', str(out),
        '--experiment', 'compiled', '--no-prefetcher', '--device', 'cpu', '--torchcompile',
    ], cwd=tmp_path, TORCH_LOGS='graph_breaks')
    assert 'Graph break' not in log, log[-3000:]
    losses = [float(row['train_loss']) for row in csv.DictReader(open(out / 'compiled' / 'summary.csv'))]
    assert len(losses) == 3 and losses[-1] < losses[0]


@needs_repo
@pytest.mark.parametrize('model', ['sl_vit_32', 'sl_pit_32', 'sl_swin_32', 'sl_cait_32', 'sl_t2t_32'])
def test_onnx_export_script(model, tmp_path):
    """timm's onnx_export.py (exportable mode, TorchScript exporter, ONNX Runtime check of the forward)."""
    pytest.importorskip('onnxruntime')
    import timm
    checkpoint = tmp_path / 'weights.pth'  # the script loads pretrained weights unless given a checkpoint
    torch.save({'state_dict': timm.create_model(model).state_dict()}, checkpoint)
    path = tmp_path / f'{model}.onnx'
    _run([str(Path(TIMM_REPO) / 'onnx_export.py'), str(path), '--model', model, '--checkpoint', str(checkpoint),
          '--batch-size', '2', '--check-forward', '--opset', '17'], cwd=tmp_path)
    import onnx
    onnx.checker.check_model(str(path))
    ops = {node.op_type for node in onnx.load(str(path)).graph.node}
    assert 'Softmax' in ops and 'Where' in ops  # the explicit attention path with the diagonal mask


@needs_repo
def test_timm_refuses_train_py_checkpoints_below_torch_2_5(tmp_path):
    """docs/export.md: below torch 2.5 (no ``torch.serialization.safe_globals``; 2.4 has ``add_safe_globals`` only)
    timm's validate.py ``--checkpoint`` and train.py ``--resume`` refuse every train.py checkpoint (its ``args``
    Namespace), each with the message the docs quote; ``timm-sl export`` reads the same checkpoint there."""
    if hasattr(torch.serialization, 'safe_globals'):
        pytest.skip(f'torch {torch.__version__} has safe_globals: timm reads train.py checkpoints (the test above)')
    data = _image_folder(tmp_path / 'data', per_class=4)
    model = ['--model', 'sl_vit_32', '--num-classes', '3', '--model-kwargs', 'depth=1']
    common = ['--batch-size', '8', '--workers', '0', '--no-prefetcher', '--device', 'cpu']
    train = [str(Path(TIMM_REPO) / 'train.py'), str(data), *model, *common, '--opt', 'adamw', '--warmup-epochs', '0',
             '--output', str(tmp_path / 'output')]
    _run([*train, '--epochs', '1', '--experiment', 'run'], cwd=tmp_path)
    checkpoint = tmp_path / 'output' / 'run' / 'last.pth.tar'

    def refused(args) -> str:
        env = {k: v for k, v in os.environ.items() if k != 'TIMM_SL_NO_AUTOLOAD'}
        result = subprocess.run([sys.executable, *args], cwd=tmp_path, env={**env, 'CUDA_VISIBLE_DEVICES': ''},
                                capture_output=True, text=True, timeout=900)
        assert result.returncode != 0, result.stdout[-2000:]
        return result.stderr
    log = refused([str(Path(TIMM_REPO) / 'validate.py'), str(data / 'val'), *model, *common,
                   '--checkpoint', str(checkpoint)])
    assert 'weights_only=True blocked loading this checkpoint' in log, log[-2000:]
    log = refused([*train, '--epochs', '2', '--experiment', 'resumed', '--resume', str(checkpoint)])
    # torch's wording, as docs/export.md quotes it per version (2.3 was not run: either is taken there)
    version = tuple(int(part) for part in torch.__version__.split('+')[0].split('.')[:2])
    wording = {(2, 2): r'Unsupported class argparse\.Namespace',
               (2, 4): r'Unsupported global: GLOBAL argparse\.Namespace'}.get(
        version, r'Unsupported (class|global: GLOBAL) argparse\.Namespace')
    assert re.search(wording, log), log[-2000:]
    doc = (Path(__file__).parents[1] / 'docs' / 'export.md').read_text().replace('\n', ' ')
    assert '"weights_only=True blocked loading this checkpoint"' in doc  # the messages users are told to expect
    assert ('"Unsupported class argparse.Namespace" on 2.2, "Unsupported global: GLOBAL argparse.Namespace" on 2.4'
            in doc)
    from timm_sl.tools.hub import export_checkpoint
    export_checkpoint(checkpoint, 'sl_vit_32', tmp_path / 'export', model_kwargs={'depth': 1})
    assert (tmp_path / 'export' / 'model.safetensors').is_file()
