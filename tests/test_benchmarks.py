"""benchmarks/peers.py and benchmarks/throughput.py run as documented and print their side-by-side tables (timings
themselves are not checked: they are machine noise here)."""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]


def _run(script: str, *args: str) -> str:
    result = subprocess.run([sys.executable, str(ROOT / 'benchmarks' / script), *args], capture_output=True,
                            text=True, cwd=ROOT, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


def test_peers_prints_ratios_against_vit_pytorch_with_matching_parameter_counts():
    pytest.importorskip('vit_pytorch')
    out = _run('peers.py', '--families', 'vit', 'pit', '--modes', 'infer', '--rounds', '1', '--iters', '1',
               '--warmup', '0', '-b', '2', '--no-memory')
    row = re.search(r'\| vit \| infer \| [\d.]+ \| lucidrains \| ([\d.]+) \(([\d.]+)\) \| ([\d.]+) / ([\d.]+) \|', out)
    assert row, out
    assert float(row[1]) > 0 and row[3] == row[4] == '2.747'  # the same ViT configuration: equal parameters
    # SL / baseline for both families, and SL w/o Spool for the pooling one
    assert re.search(r'\| vit \| infer \| [\d.]+ \| [\d.]+ \| [\d.]+ \([\d.]+\) \| — \|', out), out
    assert re.search(r'\| pit \| infer \| [\d.]+ \| [\d.]+ \| [\d.]+ \([\d.]+\) \| [\d.]+ \([\d.]+\) \|', out), out


def test_peers_counts_kernel_ops_per_step():
    out = _run('peers.py', '--families', 'vit', '--modes', 'infer', '--rounds', '1', '--iters', '1', '--warmup', '0',
               '-b', '2', '--no-memory', '--count-ops')
    row = re.search(r'\| vit \| infer \| (\d+) \| (\d+) \| — \|', out)
    assert row, out
    sl, base = int(row[1]), int(row[2])
    # SPT (shift, concatenate, LayerNorm) and per LSA block the temperature and the -inf diagonal (4 ops, built per
    # call since no cache is kept: issue 22) add kernels; one more op per block than that would break this bound
    assert base < sl < base + 50, (sl, base)


def test_peers_without_vit_pytorch_leaves_it_out(tmp_path):
    (tmp_path / 'vit_pytorch.py').write_text('raise ImportError("not installed here")\n')  # shadows any install
    result = subprocess.run(
        [sys.executable, str(ROOT / 'benchmarks' / 'peers.py'), '--families', 'vit', '--modes', 'infer', '--rounds',
         '1', '--iters', '1', '--warmup', '0', '-b', '2', '--no-memory'],
        capture_output=True, text=True, cwd=ROOT, timeout=600,
        env={**os.environ, 'PYTHONPATH': os.pathsep.join([str(tmp_path), str(ROOT)])})  # the checkout, not an install
    assert result.returncode == 0, result.stderr[-2000:]
    assert 'lucidrains left out: vit-pytorch is not installed' in result.stderr
    assert '| vit | infer |' in result.stdout and 'lucidrains |' not in result.stdout


def test_peers_refuses_an_unknown_family():
    result = subprocess.run([sys.executable, str(ROOT / 'benchmarks' / 'peers.py'), '--families', 'deit'],
                            capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 2 and "invalid choice: 'deit'" in result.stderr


def test_launches_prints_kernel_ops_per_forward_and_the_speed_ratio():
    out = _run('launches.py', '--families', 'swin', '--time', '--by-op', '-b', '1', '--rounds', '1', '--iters', '1',
               '--warmup', '0')
    ops = {key: int(n) for key, n in re.findall(r'\| swin \| sl_swin_32 \| (\w+) \| (\d+) \|', out)}
    assert set(ops) == {'sl', 'base', 'sl_no_spool'}, out
    assert ops['base'] < ops['sl'] <= ops['base'] + 20, out  # the LSA mask is no longer rebuilt per call
    assert re.search(r'\| sl \| \d+ \|  \| [\d.]+ \([\d.]+-[\d.]+\) \|', out) and 'swin: SL - base per op:' in out, out
