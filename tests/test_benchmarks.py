"""benchmarks/peers.py and benchmarks/throughput.py run as documented and print their side-by-side tables (timings
themselves are not checked: they are machine noise here)."""
import argparse
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
               '--warmup', '1', '-b', '2', '--no-memory')
    row = re.search(r'\| vit \| infer \| [\d.]+ \| lucidrains \| ([\d.]+) \(([\d.]+)\) \| ([\d.]+) / ([\d.]+) \|', out)
    assert row, out
    assert float(row[1]) > 0 and row[3] == row[4] == '2.747'  # the same ViT configuration: equal parameters
    # SL / baseline for both families, and SL w/o Spool for the pooling one
    assert re.search(r'\| vit \| infer \| [\d.]+ \| [\d.]+ \| [\d.]+ \([\d.]+\) \| — \|', out), out
    assert re.search(r'\| pit \| infer \| [\d.]+ \| [\d.]+ \| [\d.]+ \([\d.]+\) \| [\d.]+ \([\d.]+\) \|', out), out


def test_peers_counts_kernel_ops_per_step():
    out = _run('peers.py', '--families', 'vit', '--modes', 'infer', '--rounds', '1', '--iters', '1', '--warmup', '1',
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
         '1', '--iters', '1', '--warmup', '1', '-b', '2', '--no-memory'],
        capture_output=True, text=True, cwd=ROOT, timeout=600,
        env={**os.environ, 'PYTHONPATH': os.pathsep.join([str(tmp_path), str(ROOT)])})  # the checkout, not an install
    assert result.returncode == 0, result.stderr[-2000:]
    assert 'lucidrains left out: vit-pytorch is not installed' in result.stderr
    assert '| vit | infer |' in result.stdout and 'lucidrains |' not in result.stdout


def test_peers_refuses_an_unknown_family(capsys, monkeypatch):
    assert "invalid choice: 'deit'" in _parse_error('peers', ['--families', 'deit'], monkeypatch, capsys)


def _tiny_image_folder(root: Path) -> Path:
    from PIL import Image
    for c in range(2):
        (root / f'class_{c}').mkdir(parents=True)
        for i in range(4):
            Image.new('RGB', (32, 32), (40 * i, 100 * c, 7)).save(root / f'class_{c}' / f'{i}.png')
    return root


def test_loader_times_each_stage_of_a_recipe(tmp_path):
    folder = _tiny_image_folder(tmp_path / 'train')
    out = _run('loader.py', str(folder), '--recipe', str(ROOT / 'recipes' / 'fashion_mnist.yaml'), '--images', '8')
    rates = re.findall(r'^(read \+ decode|crop \+ flip|recipe, CUDA \(prefetcher\)|recipe, CPU \(--no-prefetcher\))'
                       r' +(\d+) img/s per core$', out, flags=re.M)
    assert [name for name, _ in rates] == ['read + decode', 'crop + flip', 'recipe, CUDA (prefetcher)',
                                           'recipe, CPU (--no-prefetcher)'], out
    assert all(int(rate) > 0 for _, rate in rates)


def test_loader_builds_the_recipes_transform_as_train_py_does(tmp_path):
    """With the prefetcher (CUDA) the worker hands over uint8 CHW arrays of the recipe's size; without it a
    normalised float tensor: the two paths train.py takes."""
    import numpy as np
    import torch
    import yaml
    from PIL import Image
    sys.path.insert(0, str(ROOT / 'benchmarks'))
    try:
        from loader import train_transform
    finally:
        sys.path.remove(str(ROOT / 'benchmarks'))
    recipe = yaml.safe_load((ROOT / 'recipes' / 'fashion_mnist.yaml').read_text())
    import random
    random.seed(0)  # AutoAugment draws from Python's random, erasing from torch's
    torch.manual_seed(0)
    image = Image.new('RGB', (32, 32), (200, 10, 90))
    on_cuda = train_transform(recipe, use_prefetcher=True)(image)
    on_cpu = train_transform(dict(recipe, reprob=0.))(image)
    assert isinstance(on_cuda, (np.ndarray, torch.Tensor)) and on_cuda.dtype in (np.uint8, torch.uint8)
    assert tuple(on_cuda.shape) == (3, 32, 32)
    assert on_cpu.dtype == torch.float32 and tuple(on_cpu.shape) == (3, 32, 32)
    assert on_cpu.min() < 0  # normalised with the recipe's mean / std


def test_loader_refuses_a_missing_folder_in_one_line(tmp_path, capsys, monkeypatch):
    err = _parse_error('loader', [str(tmp_path / 'nope'), '--recipe', str(ROOT / 'recipes' / 'fashion_mnist.yaml')],
                       monkeypatch, capsys)
    assert 'is not a folder' in err and 'nope' in err


def test_launches_prints_kernel_ops_per_forward_and_the_speed_ratio(capsys, monkeypatch):
    import torch
    monkeypatch.syspath_prepend(str(ROOT / 'benchmarks'))
    import launches
    threads = torch.get_num_threads()
    try:
        assert launches.main(['--families', 'swin', '--time', '--by-op', '-b', '1', '--rounds', '1', '--iters', '1',
                              '--warmup', '1']) == 0
    finally:
        torch.set_num_threads(threads)
    out = capsys.readouterr().out
    ops = {key: int(n) for key, n in re.findall(r'\| swin \| sl_swin_32 \| (\w+) \| (\d+) \|', out)}
    assert set(ops) == {'sl', 'base', 'sl_no_spool'}, out
    assert ops['base'] < ops['sl'] <= ops['base'] + 20, out  # the LSA mask is no longer rebuilt per call
    assert re.search(r'\| sl \| \d+ \|  \| [\d.]+ \([\d.]+-[\d.]+\) \|', out) and 'swin: SL - base per op:' in out, out


def test_throughput_refuses_a_timm_benchmark_it_cannot_run_before_measuring(tmp_path, capsys, monkeypatch):
    """--timm-benchmark missing, a folder or a FIFO was run after every measurement: a traceback (or a wait forever)."""
    monkeypatch.syspath_prepend(str(ROOT / 'benchmarks'))
    from throughput import parse_args  # --models with no name: no model is built to be checked
    (tmp_path / 'benchmark.py').write_text('')
    os.mkfifo(tmp_path / 'fifo.py')
    for path, error in ((tmp_path / 'no.py', 'does not exist'),
                        (tmp_path, f"is a folder; expected timm's benchmark.py ({tmp_path / 'benchmark.py'} is there)"),
                        (tmp_path / 'fifo.py', 'is a FIFO (named pipe), not a regular file')):
        with pytest.raises(SystemExit):
            parse_args(['--models', '--timm-benchmark', str(path)])
        assert f'argument --timm-benchmark: {path} {error}' in capsys.readouterr().err
    assert parse_args([
        '--models', '--timm-benchmark', str(tmp_path / 'benchmark.py')]).timm_benchmark.endswith('benchmark.py')


def test_throughput_refuses_an_output_it_cannot_write_before_measuring(tmp_path, capsys, monkeypatch):
    """``--csv FOLDER`` and ``--markdown /proc/x`` ended in a traceback after the whole measurement; a FIFO there
    waited forever. They are refused in one line before anything is timed, as --plot is."""
    monkeypatch.syspath_prepend(str(ROOT / 'benchmarks'))
    from throughput import parse_args  # --models with no name: no model is built to be checked
    fifo = tmp_path / 'rows.csv'
    os.mkfifo(fifo)
    for option, path, error in (
            ('--csv', tmp_path, f"{tmp_path} is a folder; expected a file to write"),
            ('--markdown', '/proc/x', "/proc/x: cannot write into folder /proc (no such file or directory), where a "
                                      "file to write goes; allowed: a place this user may write (not /proc, /sys)"),
            ('--csv', fifo, f"{fifo} is a FIFO (named pipe), not a regular file; expected a file to write"),
            ('--slify-survey', tmp_path / 'no' / 's.md', f"{tmp_path / 'no' / 's.md'}: folder {tmp_path / 'no'} does "
                                                         f"not exist, where a file to write goes; create it first")):
        with pytest.raises(SystemExit):
            parse_args(['--models', option, str(path)])
        assert capsys.readouterr().err.splitlines()[-1].endswith(f'argument {option}: {error}')
    args = parse_args(['--models', '--csv', str(tmp_path / 'rows.txt'), '--markdown', str(tmp_path / 't.md')])
    assert (args.csv, args.markdown) == (str(tmp_path / 'rows.txt'), str(tmp_path / 't.md'))
    assert sorted(p.name for p in tmp_path.iterdir()) == ['rows.csv']  # the checks leave nothing behind


def test_throughput_refuses_models_it_cannot_time_before_measuring(capsys, monkeypatch):
    """A timm name in --models, a typo, kwargs that break one family or a --slify base that does not convert ended in
    a traceback after the models before it were timed; spt=False lsa=False timed the baseline against itself as 'sl'.
    Each is refused in one line before anything is timed."""
    monkeypatch.syspath_prepend(str(ROOT / 'benchmarks'))
    from throughput import parse_args
    for argv, error in (
            (['--models', 'vit_tiny_patch16_224'], '--models vit_tiny_patch16_224 is not an sl_ model (no baseline '
                                                   'to time it against); allowed: sl_cait_32, '),
            (['--models', 'sl_vit_32', 'sl_pit_32', '--model-kwargs', 'depth=1'],
             "sl_pit_32 with --model-kwargs depth=1 cannot be built (sl variant): depth=1 is invalid; allowed: a "
             "non-empty tuple"),
            (['--models', 'sl_vit_32', '--model-kwargs', 'spt=False', 'lsa=False'],
             '--model-kwargs spt=False lsa=False make the sl variant of sl_vit_32 its own baseline'),
            (['--models', '--slify', 'eva02_tiny_patch14_224'],
             '--slify eva02_tiny_patch14_224: cannot slify eva02_tiny_patch14_224: attention class'),
            (['--models', '--slify', 'no_such_model'], '--slify no_such_model: Unknown model (no_such_model)'),
            (['--device', 'gpu'], "--device 'gpu' is not a torch device")):
        with pytest.raises(SystemExit):
            parse_args(argv)
        assert f': error: {error}' in capsys.readouterr().err.splitlines()[-1], argv


def test_throughput_names_each_variant_by_what_its_kwargs_make_it(monkeypatch, capsys):
    """With --model-kwargs lsa=False the rows said 'sl' and 'sl_no_spool' and the header named no kwargs: a table of
    SPT-only models read as SL's. The rows name the paper's tag and the header the kwargs."""
    monkeypatch.syspath_prepend(str(ROOT / 'benchmarks'))
    import throughput
    monkeypatch.setattr(throughput, 'interleaved_rounds', lambda steps, *a: {key: [1.] for key in steps})
    assert throughput.main(['--models', 'sl_pit_32', '--modes', 'infer', '-b', '1', '--repeats', '1', '--iters', '1',
                            '--model-kwargs', 'depth=(1,1,1)', 'lsa=False']) == 0
    out = capsys.readouterr().out
    assert 'model kwargs depth=(1, 1, 1) lsa=False' in out.splitlines()[0], out
    assert [line.split(' | ')[1] for line in out.splitlines() if line.startswith('| sl_pit_32')] == \
        ['S', 'S w/o Spool'], out
    assert throughput.variant_label('sl', {}) == 'sl' and throughput.variant_label('slify', {'lsa': False}) == 'slify'


def test_throughputs_baseline_has_every_switch_off(monkeypatch):
    """--model-kwargs lsa_mask=True reached the baseline too: every ratio was SL against a masked model."""
    monkeypatch.syspath_prepend(str(ROOT / 'benchmarks'))
    from throughput import variant_kwargs
    assert variant_kwargs('sl_pit_32', dict(lsa_mask=True, depth=(1, 1, 1))) == {
        'sl': dict(lsa_mask=True, depth=(1, 1, 1)), 'base': dict(depth=(1, 1, 1), spt=False, lsa=False, spt_pool=False),
        'sl_no_spool': dict(lsa_mask=True, depth=(1, 1, 1), spt_pool=False)}


@pytest.mark.parametrize('script', ['throughput', 'peers', 'launches', 'loader', 'startup'])
def test_a_benchmarks_usage_error_is_one_line(script, capsys, monkeypatch):
    """A misspelt option printed argparse's usage lines (4 to 9 of them) above the error, as the timm-sl command once
    did: one line, naming the script and the option, exit status 2."""
    import importlib
    monkeypatch.syspath_prepend(str(ROOT / 'benchmarks'))
    module = importlib.import_module(script)
    monkeypatch.setattr(sys, 'argv', [f'{script}.py', '--no-such-option'])
    with pytest.raises(SystemExit) as e:
        module.parse_args(['--no-such-option']) if hasattr(module, 'parse_args') else module.main()
    assert e.value.code == 2
    assert re.fullmatch(rf'{script}\.py: error: (unrecognized arguments: --no-such-option|the following arguments '
                        rf'are required: [^\n]+)\n', capsys.readouterr().err)


# every file option of the benchmark scripts: (script, option, a name it takes), one row per path that writes a table
_TABLE_OUTPUTS = [('throughput', '--csv', 'rows.csv'), ('throughput', '--markdown', 'table.md'),
                  ('throughput', '--slify-survey', 'survey.md'), ('peers', '--out', 'peers.md')]


def _parse(script: str, argv, monkeypatch):
    import importlib
    monkeypatch.syspath_prepend(str(ROOT / 'benchmarks'))
    # throughput.py builds every model it times to check it: none here
    return importlib.import_module(script).parse_args((['--models'] if script == 'throughput' else []) + argv)


def _parse_error(script: str, argv, monkeypatch, capsys) -> str:
    """The one line (after ``SCRIPT.py: error: ``) with which the script's parse refuses ``argv``, exit status 2."""
    monkeypatch.setattr(sys, 'argv', [f'{script}.py'])  # argparse names the script by it
    with pytest.raises(SystemExit) as e:
        _parse(script, argv, monkeypatch)
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.startswith(f'{script}.py: error: ') and err.count('\n') == 1, err
    return err[len(f'{script}.py: error: '):-1]


@pytest.mark.parametrize('script, option, name', _TABLE_OUTPUTS)
def test_a_users_file_at_a_table_option_is_kept_without_overwrite(script, option, name, tmp_path, capsys,
                                                                   monkeypatch):
    """--csv / --markdown / --slify-survey / peers.py --out over a user's notes replaced them after the measuring
    without a word, where --plot keeps a file timm-sl did not draw; each is refused before any measurement unless
    --overwrite, and an earlier table of the script is replaced as before."""
    path = tmp_path / name
    path.write_text('my notes\n')
    assert _parse_error(script, [option, str(path)], monkeypatch, capsys).endswith(
        f'{option} {path} is a file this script did not write (it does not begin with '
        f"{'model,variant,mode,' if option == '--csv' else 'device:'!r}): it is kept; allowed: a new file name, a "
        f'table of an earlier run, or --overwrite to replace it')
    assert path.read_text() == 'my notes\n'
    assert getattr(_parse(script, [option, str(path), '--overwrite'], monkeypatch), option[2:].replace('-', '_'))
    path.write_text('model,variant,mode,batch\n' if option == '--csv' else 'device: CPU, 2 threads; torch\n')
    assert getattr(_parse(script, [option, str(path)], monkeypatch), option[2:].replace('-', '_')) == str(path)


@pytest.mark.parametrize('first, second', [('--csv', '--markdown'), ('--markdown', '--slify-survey'),
                                           ('--plot', '--csv')])
def test_two_throughput_outputs_naming_one_file_are_refused(first, second, tmp_path, capsys, monkeypatch):
    """--csv t.md --markdown t.md wrote the table, then the CSV over it: one asked-for output lost without a word.
    Refused before any measurement, naming both options."""
    path = tmp_path / 'out.png'
    with pytest.raises(SystemExit):
        _parse('throughput', [first, str(path), second, str(tmp_path / '.' / 'out.png')], monkeypatch)
    assert capsys.readouterr().err.rstrip().endswith(
        f"{second} {tmp_path / '.' / 'out.png'} is the file {first} writes too: one would replace the other; "
        f"allowed: a file of its own for each")
    assert not path.exists()


@pytest.mark.parametrize('kind, error', [('folder', 'is a folder; expected a file to write'),
                                         ('missing', 'does not exist, where a file to write goes; create it first')])
def test_peers_refuses_an_out_it_cannot_write_before_measuring(kind, error, tmp_path, capsys, monkeypatch):
    """peers.py --out FOLDER (or in a missing folder) ended in a traceback after the first family was measured, as
    throughput.py's --markdown once did: refused in argparse's one line first, by the same check."""
    path = tmp_path if kind == 'folder' else tmp_path / 'no' / 'peers.md'
    with pytest.raises(SystemExit):
        _parse('peers', ['--out', str(path)], monkeypatch)
    err = capsys.readouterr().err
    assert err.count('\n') == 1 and 'argument --out: ' in err and error in err, err


@pytest.mark.parametrize('script', ['throughput', 'peers', 'launches'])
def test_a_device_that_cannot_be_timed_is_refused_in_one_line(script, tmp_path, capsys, monkeypatch):
    """--device meta timed tensors without data and printed its ratios as measured; peers.py / launches.py --device
    cuda on a machine without one ended in a traceback once the models were built. One line first, by one check."""
    import torch
    monkeypatch.setattr(sys, 'argv', [f'{script}.py'])  # argparse names the script by it
    for device, error in (('meta', '--device meta: a meta device cannot be timed here; allowed: cpu, cuda, cuda:N'),
                          ('cuda', f'--device cuda: torch {torch.__version__} sees no CUDA device here; allowed: '
                                   f'--device cpu')):
        monkeypatch.setattr(torch.cuda, 'is_available', lambda: False)
        assert _parse_error(script, ['--device', device], monkeypatch, capsys) == error
    monkeypatch.setattr(torch.cuda, 'is_available', lambda: True)
    monkeypatch.setattr(torch.cuda, 'device_count', lambda: 2)
    with pytest.raises(SystemExit):
        _parse(script, ['--device', 'cuda:2'], monkeypatch)
    assert capsys.readouterr().err == (f'{script}.py: error: --device cuda:2: torch sees 2 CUDA device(s) here; '
                                       f'allowed: cpu, cuda, cuda:0 to cuda:1\n')
    assert _parse(script, ['--device', 'cuda:1'], monkeypatch).device == 'cuda:1'


@pytest.mark.parametrize('script, option', [('peers', '-b'), ('peers', '--threads'), ('peers', '--rounds'),
                                            ('launches', '--iters'), ('launches', '--rounds'), ('launches', '-b'),
                                            ('launches', '--threads'), ('startup', '--runs'), ('loader', '--images')])
@pytest.mark.parametrize('value', ['0', '-3'])
def test_a_count_below_one_is_refused_in_one_line(script, option, value, capsys, monkeypatch):
    """launches.py --time --iters 0 printed a speed ratio of empty rounds (noise) and --rounds 0 a blank one; -b 0
    counted the ops of an empty batch; loader.py --images -3 printed negative img/s; peers.py --threads 0,
    startup.py --runs 0 ended in a traceback, peers.py -b 0 in a line of exit status 1 after the parse. Each count
    is refused by argparse in one line, exit status 2."""
    import importlib
    monkeypatch.syspath_prepend(str(ROOT / 'benchmarks'))
    module = importlib.import_module(script)
    argv = (['folder', '--recipe', 'r.yaml'] if script == 'loader' else []) + [option, value]
    monkeypatch.setattr(sys, 'argv', [f'{script}.py', *argv])
    with pytest.raises(SystemExit) as e:
        module.parse_args(argv) if hasattr(module, 'parse_args') else module.main()
    assert e.value.code == 2
    assert capsys.readouterr().err.endswith(f': {value} is not allowed; expected an integer >= 1\n')


@pytest.mark.parametrize('extra, size', [(['--img-size', '48'], '3x48x48'), (['img_size=48'], '3x48x48'),
                                         (['in_chans=1'], '1x32x32')])
def test_throughput_times_the_input_its_models_are_built_for(extra, size, monkeypatch, capsys):
    """--img-size 48 fed 48 px to models built for 32 px, --model-kwargs img_size=48 or in_chans=1 fed the registered
    3x32x32 to models built otherwise: a traceback after the models were built. The models are built for --img-size,
    the input is what they are built for, and two sizes at once are refused."""
    monkeypatch.syspath_prepend(str(ROOT / 'benchmarks'))
    import throughput
    monkeypatch.setattr(throughput, 'interleaved_rounds', lambda steps, *a: {key: [1.] for key in steps})
    monkeypatch.setattr(sys, 'argv', ['throughput.py'])
    quick = ['--models', 'sl_vit_32', '--modes', 'infer', '-b', '1', '--repeats', '1', '--iters', '1']
    small = ['--model-kwargs', 'depth=1', 'embed_dim=32', 'num_heads=2']
    assert throughput.main(quick + (extra + small if extra[0] == '--img-size' else small + extra)) == 0
    rows = [line.split(' | ') for line in capsys.readouterr().out.splitlines() if line.startswith('| sl_vit_32')]
    assert [(row[1], row[4]) for row in rows] == [('sl', size)], extra
    with pytest.raises(SystemExit):
        throughput.parse_args(quick + ['--img-size', '40', '--model-kwargs', 'img_size=48'])
    assert capsys.readouterr().err == ('throughput.py: error: --img-size 40 and --model-kwargs img_size=48 name two '
                                       'input sizes; allowed: one of them\n')


def test_timm_benchmarks_table_builds_the_variants_as_the_rows_above(tmp_path, monkeypatch):
    """--timm-benchmark passed --model-kwargs lsa_mask=True to the baseline too (a masked LSA model named 'base'),
    and --img-size to no model: its ratios compared other models than the table above them. Each variant is given
    the kwargs its row is built with, and the size; a failing benchmark.py is one line naming it and the variant."""
    import json
    monkeypatch.syspath_prepend(str(ROOT / 'benchmarks'))
    import throughput
    fake = tmp_path / 'benchmark.py'
    fake.write_text('import json, sys\nwith open(sys.argv[0] + ".calls", "a") as f:\n    f.write(json.dumps(sys.argv) '
                    '+ "\\n")\nprint("--result")\nprint(json.dumps({"infer_samples_per_sec": 10.0, '
                    '"train_samples_per_sec": 4.0}))\n')
    args = throughput.parse_args(['--models', 'sl_pit_32', '--img-size', '48', '--timm-benchmark', str(fake),
                                  '--model-kwargs', 'lsa_mask=True', 'lsa=False'])
    table = throughput.timm_benchmark_table(args)
    calls = [json.loads(line) for line in (tmp_path / 'benchmark.py.calls').read_text().splitlines()]
    kwargs = [sorted(call[call.index('--model-kwargs') + 1:]) for call in calls]
    assert kwargs == [['img_size=48', 'lsa=False', 'lsa_mask=True'],
                      ['img_size=48', 'lsa=False', 'spt=False', 'spt_pool=False'],
                      ['img_size=48', 'lsa=False', 'lsa_mask=True', 'spt_pool=False']], kwargs
    assert all(call[call.index('--img-size') + 1] == '48' for call in calls)
    assert [line.split(' | ')[1] for line in table.splitlines()[2:]] == ['SM', 'base', 'SM w/o Spool'], table
    fake.write_text('import sys\nsys.exit("RuntimeError: no such kernel")\n')
    with pytest.raises(SystemExit) as e:
        throughput.timm_benchmark_table(args)
    assert str(e.value) == (f"throughput.py: timm's benchmark.py {fake} failed on sl_pit_32 (SM variant, exit status "
                            f"1): RuntimeError: no such kernel")
    with pytest.raises(ValueError, match="benchmark.py builds every model with in_chans=3; allowed: one of them"):
        throughput.check_models(argparse.Namespace(**{**vars(args), 'model_kwargs': dict(in_chans=1)}))


def test_throughput_with_no_model_to_time_says_so(tmp_path, capsys, monkeypatch):
    """--models --csv rows.csv (no name after --models, no --slify) ended with exit status 0, no table and no word:
    the CSV asked for was never written. Refused before the survey or any timing, naming the options; --models
    alone asked for nothing at all."""
    monkeypatch.syspath_prepend(str(ROOT / 'benchmarks'))
    import throughput
    for argv, error in ((['--csv', str(tmp_path / 'rows.csv'), '--plot', str(tmp_path / 'r.png')],
                         '--csv, --plot: no row to write (--models names none, no --slify); allowed: --models NAME ... '
                         'or --slify BASE ... beside it'),
                        ([], 'nothing to time: --models names none, and no --slify or --slify-survey; allowed: '
                             '--models NAME ..., --slify BASE ..., --slify-survey FILE')):
        assert throughput.main(['--models', *argv]) == 2
        assert capsys.readouterr().err == f'throughput.py: error: {error}\n'
    assert list(tmp_path.iterdir()) == []


def test_throughputs_csv_names_the_kwargs_its_models_were_built_with(tmp_path, monkeypatch, capsys):
    """--csv with --model-kwargs depth=1 wrote rows that named sl_vit_32 and sl alone (the Markdown header names the
    kwargs, the CSV did not): read later, the rows were taken for the registered models. Each row names the kwargs,
    the device and amp."""
    import csv
    monkeypatch.syspath_prepend(str(ROOT / 'benchmarks'))
    import throughput
    monkeypatch.setattr(throughput, 'interleaved_rounds', lambda steps, *a: {key: [1.] for key in steps})
    monkeypatch.setattr(sys, 'argv', ['throughput.py'])
    path = tmp_path / 'rows.csv'
    assert throughput.main(['--models', 'sl_vit_32', '--modes', 'infer', '-b', '1', '--repeats', '1', '--iters', '1',
                            '--model-kwargs', 'depth=1', 'embed_dim=32', 'num_heads=2', '--csv', str(path)]) == 0
    capsys.readouterr()
    with open(path, newline='') as f:
        rows = list(csv.DictReader(f))
    assert [(r['model'], r['variant'], r['model_kwargs'], r['device'], r['amp']) for r in rows] == \
        [('sl_vit_32', 'sl', 'depth=1 embed_dim=32 num_heads=2', 'cpu', 'False')]
    assert path.read_text().startswith(throughput.CSV_HEAD)  # still a table of this script to a later run


def test_loader_refuses_a_recipe_or_folder_it_cannot_time_in_one_line(tmp_path, capsys, monkeypatch):
    """loader.py --recipe missing, a folder, broken YAML or a YAML list, and a split of no image, ended in a
    traceback (the last after the header line); each is argparse's one line, exit status 2, naming the file."""
    monkeypatch.syspath_prepend(str(ROOT / 'benchmarks'))
    from loader import parse_args
    folder = _tiny_image_folder(tmp_path / 'train')
    (tmp_path / 'bad.yaml').write_text('aa: [\n')
    (tmp_path / 'list.yaml').write_text('- 1\n')
    (tmp_path / 'empty' / 'a').mkdir(parents=True)
    expected = 'a recipe YAML (train.py --config)'
    for where, recipe, error in (
            (folder, tmp_path / 'no.yaml', f'--recipe {tmp_path / "no.yaml"} does not exist; expected {expected}'),
            (folder, tmp_path, f'--recipe {tmp_path} is a folder; expected {expected}'),
            (folder, tmp_path / 'bad.yaml', f'--recipe {tmp_path / "bad.yaml"} is not a YAML recipe (while parsing a '
                                            f'flow node); allowed: train.py arguments as "name: value" lines'),
            (folder, tmp_path / 'list.yaml', f'--recipe {tmp_path / "list.yaml"} holds a YAML list, not a recipe; '
                                             f'allowed: train.py arguments as "name: value" lines'),
            (tmp_path / 'empty', ROOT / 'recipes' / 'fashion_mnist.yaml', f'{tmp_path / "empty"}: Found 0 images')):
        monkeypatch.setattr(sys, 'argv', ['loader.py'])
        with pytest.raises(SystemExit) as e:
            parse_args([str(where), '--recipe', str(recipe)])
        err = capsys.readouterr().err
        assert e.value.code == 2 and err.startswith(f'loader.py: error: {error}') and err.count('\n') == 1, err
    assert parse_args([str(folder), '--recipe', str(ROOT / 'recipes' / 'fashion_mnist.yaml')]).recipe['aa']


def test_peers_compile_mode_without_compile_is_refused(capsys, monkeypatch):
    """peers.py --compile-mode max-autotune without --compile timed every model eager without a word."""
    assert _parse_error('peers', ['--compile-mode', 'max-autotune'], monkeypatch, capsys) == (
        '--compile-mode max-autotune without --compile: nothing would be compiled; allowed: --compile --compile-mode '
        'max-autotune, or neither')
    assert _parse('peers', ['--compile', '--compile-mode', 'max-autotune'], monkeypatch).compile_mode == 'max-autotune'


def test_the_slify_survey_refuses_an_input_size(tmp_path, capsys, monkeypatch):
    """--slify-survey s.md --img-size 32 fed 32 px to vit_tiny_patch16_224 built for 224 px: a traceback once the
    first architecture was built. Refused before anything is built."""
    monkeypatch.setattr(sys, 'argv', ['throughput.py'])
    for size in (['--img-size', '32'], ['--model-kwargs', 'img_size=32']):
        with pytest.raises(SystemExit):
            _parse('throughput', ['--slify-survey', str(tmp_path / 's.md'), *size], monkeypatch)
        assert capsys.readouterr().err == (
            "throughput.py: error: --slify-survey times each architecture at the size it is built for (the README's "
            "table); allowed: --img-size / --model-kwargs img_size without it\n")
    assert not (tmp_path / 's.md').exists()


def test_peers_refuses_a_reference_it_cannot_import_in_argparses_line(tmp_path, capsys, monkeypatch):
    """peers.py --reference DIR without the authors' models/ ended with a bare line of exit status 1 after the
    parse; it is argparse's one line, exit status 2, naming the folder."""
    assert _parse_error('peers', ['--reference', str(tmp_path)], monkeypatch, capsys).startswith(
        f"--reference {tmp_path}: cannot import models.create_model from it (No module named 'models'); allowed: a "
        f"checkout of the authors' repository (the folder holding models/ and utils/)")


def test_throughput_keeps_the_benchmark_py_it_runs(tmp_path, capsys, monkeypatch):
    """--markdown benchmark.py --overwrite beside --timm-benchmark benchmark.py ran timm's script, then wrote the
    table over it. An output naming the script this run reads is refused, --overwrite or not."""
    script = tmp_path / 'benchmark.py'
    script.write_text('# timm\n')
    monkeypatch.setattr(sys, 'argv', ['throughput.py'])
    for option in ('--markdown', '--csv'):
        with pytest.raises(SystemExit):
            _parse('throughput', ['--timm-benchmark', str(script), option, str(tmp_path / '.' / 'benchmark.py'),
                                  '--overwrite'], monkeypatch)
        assert capsys.readouterr().err == (
            f"throughput.py: error: {option} {tmp_path / '.' / 'benchmark.py'} is the benchmark.py --timm-benchmark "
            f"runs: it is kept, even with --overwrite; allowed: another file to write\n")
    assert script.read_text() == '# timm\n'


def test_peers_compile_is_never_timed(monkeypatch):
    """peers.py --compile --warmup 0 timed torch.compile itself in the first round (0.0 img/s, SL / baseline 0.33 on
    a CPU): each compiled step now runs untimed until compiled, whatever --warmup says."""
    import torch
    monkeypatch.syspath_prepend(str(ROOT / 'benchmarks'))
    import peers
    calls = {}

    def counted(model, mode, batch, amp, num_classes=None):
        key = len(calls)
        calls[key] = 0

        def step():
            calls[key] += 1
        return step
    seen = {}
    monkeypatch.setattr(peers, 'make_step', counted)
    monkeypatch.setattr(peers, 'peers_of', lambda *a: {})
    def stand_in(*args, **kwargs):  # the models are not what is checked here
        model = torch.nn.Linear(1, 1)
        model.num_classes = 10
        return model
    monkeypatch.setattr(peers.timm, 'create_model', stand_in)
    monkeypatch.setattr(peers, 'graph_count', lambda *a: '1')
    monkeypatch.setattr(torch, 'compile', lambda model, mode=None: model)
    monkeypatch.setattr(peers, 'interleaved_rounds', lambda steps, *a: seen.update(calls) or {k: [1.] for k in steps})
    args = peers.parse_args(['--families', 'vit', '--modes', 'infer', '--compile', '--warmup', '0', '--no-memory'])
    peers.bench_family('vit', 'infer', args, None)
    assert seen == {0: peers.COMPILE_CALLS, 1: peers.COMPILE_CALLS}


def test_peers_count_ops_with_compile_is_refused(capsys, monkeypatch):
    """peers.py --compile --count-ops printed the eager op counts (67 / 39 for ViT, as without --compile) under
    'Kernel ops per step' beside the compiled times: refused in one line."""
    assert _parse_error('peers', ['--compile', '--count-ops'], monkeypatch, capsys) == (
        '--count-ops with --compile: the count runs each model eager (the same counts as without --compile), not the '
        'kernels the compiled model launches; allowed: one of them')


def test_kernel_op_counts_keep_the_linear_layers_and_norms_of_an_inference_forward(monkeypatch):
    """Under inference mode linear, layer_norm and matmul reached the op counter whole, and were left out as
    composites: launches.py and peers.py --count-ops counted no linear layer, LayerNorm or matmul of an inference
    forward (sl_pit_32's SL and SL w/o Spool read 94 ops alike, Spool's norm and projection uncounted). Each is counted
    as the kernels it runs, the same as outside inference mode."""
    import torch
    monkeypatch.syspath_prepend(str(ROOT / 'benchmarks'))
    from _timing import count_kernel_ops, make_step
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.LayerNorm(8))
    model.num_classes = 8
    x = torch.randn(2, 8)

    def no_grad() -> None:
        with torch.no_grad():
            model(x) @ x.T

    def inference() -> None:
        with torch.inference_mode():
            model(x) @ x.T
    assert count_kernel_ops(make_step(model, 'infer', x, amp=False)) == 2  # addmm, native_layer_norm
    assert count_kernel_ops(inference) == count_kernel_ops(no_grad) == 3  # and mm


@pytest.mark.extended  # builds the three registered sl_pit_32 variants: seconds
def test_launches_counts_spools_norm_and_projection(monkeypatch):
    """The counts of sl_pit_32 by hand: each Spool (pad, cat of the shifted copies, their copy into patches, LayerNorm,
    projection) runs 3 ops more than the SL w/o Spool pooling (depthwise and pointwise conv), two Spools 6."""
    monkeypatch.syspath_prepend(str(ROOT / 'benchmarks'))
    import launches
    import torch
    threads = torch.get_num_threads()
    try:
        row = launches.bench_family('pit', launches.parse_args(['--families', 'pit', '-b', '1']))
    finally:
        torch.set_num_threads(threads)
    assert row['ops']['sl'] - row['ops']['sl_no_spool'] == 6, row['ops']


def _launches_header(monkeypatch, capsys, argv):
    import launches
    import torch
    monkeypatch.setattr(launches, 'bench_family', lambda family, args: dict(family=family, model='m', ops={'sl': 1}))
    threads = torch.get_num_threads()
    try:
        assert launches.main(argv) == 0
    finally:
        torch.set_num_threads(threads)
    return capsys.readouterr().out.splitlines()


def test_launches_prints_the_header_of_the_other_benchmarks(monkeypatch, capsys):
    """launches.py printed its table with no header: its --time speed column named no device, threads, torch, batch
    or amp. It prints the header throughput.py and peers.py print (one function for all three)."""
    import timm
    import torch
    monkeypatch.syspath_prepend(str(ROOT / 'benchmarks'))
    lines = _launches_header(monkeypatch, capsys, ['--families', 'vit', '--time', '--rounds', '2', '--iters', '3',
                                                   '-b', '4', '--amp'])
    assert lines[0] == (f'device: CPU, 1 thread; torch {torch.__version__}, timm {timm.__version__}; amp=True; '
                        f'batch 4, 32 px; eager; 2 interleaved rounds of 3 steps')
    assert lines[1] == '' and lines[2].startswith('| family | model |')
    lines = _launches_header(monkeypatch, capsys, ['--families', 'vit', '--threads', '2'])
    assert lines[0].startswith('device: CPU, 2 threads; torch ') and lines[0].endswith('; amp=False; batch 8, 32 px; '
                                                                                       'eager')


@pytest.mark.parametrize('script', ['throughput', 'peers', 'launches'])
def test_a_negative_warmup_is_refused_in_one_line(script, capsys, monkeypatch):
    """--warmup -1 ran as --warmup 0 without a word in throughput.py, peers.py and launches.py."""
    monkeypatch.setattr(sys, 'argv', [f'{script}.py'])
    time = ['--time'] if script == 'launches' else []
    assert _parse_error(script, time + ['--warmup', '-1'], monkeypatch, capsys) == (
        'argument --warmup: -1 is not allowed; expected an integer >= 0')
    assert _parse(script, time + ['--warmup', '0'], monkeypatch).warmup == 0


@pytest.mark.parametrize('given', [['--rounds', '3'], ['--iters', '2', '--warmup', '0']])
def test_launches_timing_options_without_time_are_refused(given, capsys, monkeypatch):
    """launches.py --rounds / --iters / --warmup without --time were ignored without a word (nothing is timed)."""
    monkeypatch.setattr(sys, 'argv', ['launches.py'])
    monkeypatch.syspath_prepend(str(ROOT / 'benchmarks'))
    import launches
    with pytest.raises(SystemExit) as e:
        launches.parse_args(given)
    assert e.value.code == 2
    options = ' '.join(given)
    named = ', '.join(' '.join(given[i:i + 2]) for i in range(0, len(given), 2))
    assert capsys.readouterr().err == (f'launches.py: error: {named} without --time: only the ops are counted, '
                                       f'nothing is timed; allowed: --time {options}, or neither\n')
    args = launches.parse_args(['--time', *given])
    assert (args.rounds, args.iters, args.warmup) == (int(dict(zip(given[::2], given[1::2])).get('--rounds', 5)),
                                                      int(dict(zip(given[::2], given[1::2])).get('--iters', 5)),
                                                      int(dict(zip(given[::2], given[1::2])).get('--warmup', 2)))



def test_timm_benchmark_runs_on_the_threads_of_the_rows_above(tmp_path, monkeypatch):
    """throughput.py --threads 1 --timm-benchmark timed the rows above on 1 thread and ran timm's benchmark.py on every
    core without a word: its table compared other runs than the header names. benchmark.py runs on --threads too."""
    import json
    monkeypatch.syspath_prepend(str(ROOT / 'benchmarks'))
    import throughput
    fake = tmp_path / 'benchmark.py'
    fake.write_text('import json, os, sys\nwith open(sys.argv[0] + ".threads", "a") as f:\n'
                    '    f.write(os.environ.get("OMP_NUM_THREADS", "-") + "\\n")\nprint("--result")\n'
                    'print(json.dumps({"infer_samples_per_sec": 10.0, "train_samples_per_sec": 4.0}))\n')
    monkeypatch.setenv('OMP_NUM_THREADS', '7')
    args = throughput.parse_args(['--models', 'sl_vit_32', '--timm-benchmark', str(fake), '--threads', '1'])
    for threads, seen in ((1, '1'), (None, '7')):  # without --threads: the environment's, as in-process
        throughput.timm_benchmark_table(argparse.Namespace(**{**vars(args), 'threads': threads}))
        assert (tmp_path / 'benchmark.py.threads').read_text().split() == [seen, seen], threads
        (tmp_path / 'benchmark.py.threads').unlink()


def test_peers_says_when_no_peer_was_timed(monkeypatch):
    """peers.py without vit-pytorch and --reference (or --families pit) printed the 'Ours / peer' table with no row and
    no word: a comparison that seemed to have found nothing. It says no peer was timed and what each one needs."""
    monkeypatch.syspath_prepend(str(ROOT / 'benchmarks'))
    import peers
    args = argparse.Namespace(compile=False, iters=1, batch_size=2)
    ours = dict(family='pit', mode='infer', elapsed={'sl': [1.], 'base': [1.], 'sl_no_spool': [1.]},
                params={'sl': 1, 'base': 1, 'sl_no_spool': 1}, graphs={}, memory={}, ops={})
    text = peers.tables([ours], args)
    assert text.splitlines()[0] == ("Ours / peer: no peer was timed (lucidrains' ViT needs vit-pytorch and --families "
                                    "vit; the authors' models need --reference DIR).")
    assert '| family | mode | ours img/s | peer |' not in text and '| pit | infer | 2.0 | 2.0 | 1.00 (1.00) |' in text
    with_peer = dict(ours, elapsed={**ours['elapsed'], 'reference': [2.]}, params={**ours['params'], 'reference': 1})
    assert peers.tables([with_peer], args).splitlines()[:3] == [
        'Ours / peer (speed ratio, > 1: ours faster):', '',
        '| family | mode | ours img/s | peer | ours / peer: best (median) | params M: ours / peer |']


def test_a_failing_timm_benchmark_leaves_the_measured_outputs_written(tmp_path, monkeypatch):
    """--timm-benchmark ran before --csv / --markdown were written: timm's benchmark.py failing on a variant ended the
    command with its one line, and every measurement of the rows above was lost. It runs last."""
    monkeypatch.syspath_prepend(str(ROOT / 'benchmarks'))
    import throughput
    fake = tmp_path / 'benchmark.py'
    fake.write_text('import sys\nsys.exit("RuntimeError: no such kernel")\n')
    csv_path, markdown = tmp_path / 'rows.csv', tmp_path / 'rows.md'
    with pytest.raises(SystemExit, match="benchmark.py .* failed on sl_vit_32"):
        throughput.main(['--models', 'sl_vit_32', '--model-kwargs', 'depth=1', '--modes', 'infer', '-b', '1',
                         '--repeats', '1', '--iters', '1', '--warmup', '1', '--timm-benchmark', str(fake),
                         '--csv', str(csv_path), '--markdown', str(markdown)])
    assert csv_path.read_text().splitlines()[0].startswith('model,') and 'sl_vit_32' in markdown.read_text()


@pytest.mark.parametrize('script, rounds', [('throughput', '--repeats'), ('peers', '--rounds'),
                                            ('launches', '--rounds')])
def test_no_warmup_with_fewer_than_three_rounds_is_refused(script, rounds, capsys, monkeypatch):
    """--warmup 0 with one round printed a ratio in which the model timed first paid torch's first-call costs and the
    others did not, without a word. Refused before any model is built; three rounds (a median that drops the cold
    one) or a warm-up step are taken; peers.py --compile warms every compiled step itself."""
    monkeypatch.setattr(sys, 'argv', [f'{script}.py'])
    time = ['--time'] if script == 'launches' else []
    for given in ('1', '2'):
        assert _parse_error(script, time + ['--warmup', '0', rounds, given], monkeypatch, capsys) == (
            f"--warmup 0 with {rounds} {given}: the model timed first would pay torch's first-call costs inside its "
            f"round, which the median of fewer than 3 rounds keeps in the ratio; allowed: --warmup 1 or more, or "
            f"{rounds} 3 or more")
    assert _parse(script, time + ['--warmup', '0', rounds, '3'], monkeypatch).warmup == 0
    assert _parse(script, time + ['--warmup', '1', rounds, '1'], monkeypatch).warmup == 1
    if script == 'peers':
        assert _parse(script, ['--warmup', '0', '--rounds', '1', '--compile'], monkeypatch).compile


def test_throughputs_csv_rows_name_the_threads_torch_and_timm(tmp_path, monkeypatch, capsys):
    """The CSV's rows said device 'cpu' and no thread count, torch or timm: the header line that gives the times their
    context was printed, not written, so a CSV read later could not be compared with another. Each row carries them."""
    import csv
    import timm
    import torch
    monkeypatch.syspath_prepend(str(ROOT / 'benchmarks'))
    import throughput
    monkeypatch.setattr(throughput, 'interleaved_rounds', lambda steps, *a: {key: [1.] for key in steps})
    monkeypatch.setattr(sys, 'argv', ['throughput.py'])
    threads = torch.get_num_threads()
    path = tmp_path / 'rows.csv'
    try:
        assert throughput.main(['--models', 'sl_vit_32', '--modes', 'infer', '-b', '1', '--repeats', '1', '--iters',
                                '1', '--threads', '1', '--model-kwargs', 'depth=1', 'embed_dim=32', 'num_heads=2',
                                '--csv', str(path)]) == 0
    finally:
        torch.set_num_threads(threads)
    header = capsys.readouterr().out.splitlines()[0]
    with open(path, newline='') as f:
        row, = csv.DictReader(f)
    assert (row['device'], row['device_name'], row['threads'], row['torch'], row['timm']) == \
        ('cpu', 'CPU, 1 thread', '1', torch.__version__, timm.__version__)
    assert header.startswith(f"device: {row['device_name']}; torch {row['torch']}, timm {row['timm']};")


def test_throughput_names_a_slify_row_by_what_its_switches_make_it(monkeypatch):
    """--slify BASE --model-kwargs lsa_mask=False named its row 'slify', where the sl_ rows beside it said 'ST': a
    mask-free conversion read as the full SL one. The row is 'slify ST' (plain 'slify' with the default switches)."""
    import argparse
    monkeypatch.syspath_prepend(str(ROOT / 'benchmarks'))
    import throughput
    monkeypatch.setattr(throughput, 'interleaved_rounds', lambda steps, *a: {key: [1.] for key in steps})
    for kwargs, label in (({'lsa_mask': False}, 'slify ST'), ({}, 'slify')):
        args = argparse.Namespace(device='cpu', batch_size=1, amp=False, img_size=32, model_kwargs=kwargs, repeats=1,
                                  iters=1, warmup=0)
        assert [row['variant'] for row in throughput.bench_slify('test_vit', 'infer', args)] == [label]


def test_peak_train_memory_reads_the_event_times_of_torch_2_2(monkeypatch):
    """On torch 2.2 peers.py stopped in a traceback after its timing rounds ("'_KinetoEvent' object has no attribute
    'start_ns'"): that torch's profiler events give their start in microseconds only. The CPU peak is read either
    way."""
    import torch
    monkeypatch.syspath_prepend(str(ROOT / 'benchmarks'))
    from _timing import peak_train_memory

    class Event:  # torch 2.2's event: start_us, no start_ns
        def __init__(self, start: int, nbytes: int) -> None:
            self.start, self.size = start, nbytes

        def name(self) -> str:
            return '[memory]'

        def start_us(self) -> int:
            return self.start

        def nbytes(self) -> int:
            return self.size

    class Profile:
        def __init__(self, *args, **kwargs) -> None:
            events = [Event(3, -4000), Event(1, 4000), Event(2, 800), Event(4, 100)]  # out of time order
            self.profiler = argparse.Namespace(kineto_results=argparse.Namespace(events=lambda: events))

        def __enter__(self) -> 'Profile':
            return self

        def __exit__(self, *exc) -> None:
            return None

    monkeypatch.setattr(torch.profiler, 'profile', Profile)
    assert peak_train_memory(lambda: None, torch.device('cpu')) == 4800


@pytest.mark.extended  # a subprocess that times a model
def test_peers_prints_its_table_under_a_latin1_locale():
    """Under a Latin-1 locale peers.py ended in a traceback ("'latin-1' codec can't encode character '\\u2014'") after
    every model was timed: its table's '—' is now escaped, as standard error escapes what it cannot encode."""
    env = dict(os.environ, PYTHONIOENCODING='latin-1')  # standard output as a Latin-1 locale makes it
    result = subprocess.run([sys.executable, str(ROOT / 'benchmarks' / 'peers.py'), '--families', 'vit', '--modes',
                             'infer', '--rounds', '1', '--iters', '1', '--warmup', '1', '-b', '2', '--no-memory'],
                            capture_output=True, cwd=ROOT, timeout=600, env=env)
    assert result.returncode == 0, result.stderr.decode('latin-1')[-2000:]
    assert re.search(rb'\| vit \| infer \| [\d.]+ \| [\d.]+ \| [\d.]+ \([\d.]+\) \| \\u2014 \|', result.stdout), \
        result.stdout
