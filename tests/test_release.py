"""``timm-sl release`` and the pretrained-tags data file: runs -> Hub folders + cards -> tag entries -> (offline)
``timm.create_model('sl_vit_32.<tag>', pretrained=True)`` in a fresh interpreter."""
import argparse
import builtins
import collections
import io
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Tuple

import pytest
import torch

import timm
from timm_sl.tools.cli import main
from timm_sl.models._cfgs import PRETRAINED_ENV, PRETRAINED_FILE, read_pretrained_tags, with_pretrained_tags
from timm_sl.tools.release import release, repo_name
from timm_sl.tools.runs import RunRecord, find_runs, portable_command

from test_hub import _offline_cache
from test_run_record import _fails, _train_run

CIFAR10_MEAN, CIFAR10_STD = [0.4914, 0.4822, 0.4465], [0.247, 0.2435, 0.2616]
COMMAND = ('/venv/bin/python3 /src/timm/train.py --data-dir /home/someone/data '
           '--config /src/timm_sl/recipes/cifar10.yaml --model sl_vit_32 --lr 0.003 --seed 0 '
           '--output /home/someone/runs --experiment vit-sl-s0 '
           '--resume /home/someone/runs/vit-sl-s0/last.pth.tar --epochs 3')
PORTABLE = ('python train.py --data-dir DATA --config recipes/cifar10.yaml --model sl_vit_32 --lr 0.003 --seed 0 '
            '--output OUTPUT --experiment vit-sl-s0 --epochs 3')


def _run(root, name, kwargs, top1s, seed=0, model='sl_vit_32', classes=3, dataset='torch/cifar10'):
    """A train.py run folder as timm-sl reproduce leaves it (checkpoint with EMA, args.yaml, summary, marker); its
    model_best.pth.tar records the best epoch."""
    run = root / 'runs' / name
    run.mkdir(parents=True)
    torch.manual_seed(seed)
    arch, model = model, timm.create_model(model, num_classes=classes, **kwargs).eval()
    args = dict(model=arch, model_kwargs=kwargs, num_classes=classes, seed=seed, lr=0.003, epochs=len(top1s),
                mean=CIFAR10_MEAN, std=CIFAR10_STD, dataset=dataset, data_dir='/home/someone/data', workers=4)
    torch.save({'epoch': top1s.index(max(top1s)), 'arch': arch, 'state_dict_ema': model.state_dict(),
                'state_dict': {k: torch.zeros_like(v) for k, v in model.state_dict().items()},
                'args': argparse.Namespace(**args)}, run / 'model_best.pth.tar')
    (run / 'args.yaml').write_text(json.dumps(args))  # JSON is YAML
    (run / 'summary.csv').write_text('epoch,train_loss,eval_loss,eval_top1,eval_top5\n' + ''.join(
        f'{e},1.0,1.0,{t},99.0\n' for e, t in enumerate(top1s)))
    marker = dict(family='vit', variant='sl' if not kwargs else 'base', epochs=len(top1s), dataset='cifar10')
    (run / 'done.json').write_text(json.dumps(marker))
    (run / 'command.txt').write_text(COMMAND + '\n')
    return model


@pytest.fixture(scope='module')
def reproduced(tmp_path_factory):
    root = tmp_path_factory.mktemp('reproduce')
    models = {
        'vit-sl-s0': _run(root, 'vit-sl-s0', {}, [40., 80., 70.]),
        'vit-sl-s1': _run(root, 'vit-sl-s1', {}, [50., 75.], seed=1),
        'vit-base-s0': _run(root, 'vit-base-s0', dict(spt=False, lsa=False), [30., 60.]),
    }
    return root, models


@pytest.fixture(scope='module')
def released(reproduced, tmp_path_factory):
    root, _ = reproduced
    out = tmp_path_factory.mktemp('release')
    script = out / 'train.py'
    script.write_text(textwrap.dedent('''
        import argparse
        parser = argparse.ArgumentParser()
        parser.add_argument('--lr', type=float, default=0.05)
        parser.add_argument('--epochs', type=int, default=300)
        parser.add_argument('--seed', type=int, default=42)
        parser.add_argument('--num-classes', type=int, default=None)
        parser.add_argument('--dataset', default='')
        if __name__ == '__main__':
            raise SystemExit('must not run')
    '''))
    lines = []
    return out, release([root], out, 'timm-sl-test', train_script=script, echo=lines.append), lines


def test_release_exports_every_run_with_a_card(released, reproduced):
    out, result, lines = released
    root, _ = reproduced
    assert [r.repo_id for r in result] == [
        'timm-sl-test/sl_vit_32.base-cifar10-s0', 'timm-sl-test/sl_vit_32.sl-cifar10-s0',
        'timm-sl-test/sl_vit_32.sl-cifar10-s1']
    assert all(r.weights == 'state_dict_ema' and r.pushed is None for r in result)
    assert [r.best_top1 for r in result] == [60., 80., 75.] and [r.paper_top1 for r in result] == [93.58, 94.53, 94.53]
    assert lines[1] == (f'2/3: {root / "runs" / "vit-sl-s0"} -> {out / "sl_vit_32.sl-cifar10-s0"} (state_dict_ema, '
                        f'best top-1 80.00) as timm-sl-test/sl_vit_32.sl-cifar10-s0')
    assert lines[3] == (f'dry run: would push {out / "sl_vit_32.base-cifar10-s0"} to '
                        f'https://huggingface.co/timm-sl-test/sl_vit_32.base-cifar10-s0 (pass --push to upload)')
    card = (out / 'sl_vit_32.sl-cifar10-s0' / 'README.md').read_text()
    for text in ('| dataset | cifar10 |', '| Table 2 row | vit, SL |', '| measured best top-1 (%) | 80.00 |',
                 '| paper top-1 (%) for this row | 94.53 |', PORTABLE, '- Parameters: 2.', '- MACs: ',
                 "timm.create_model('hf-hub:timm-sl-test/sl_vit_32.sl-cifar10-s0', pretrained=True)",
                 'timm.create_model("sl_vit_32.cifar10", pretrained=True)', '| best epoch (counted from 1) | 2 of '):
        assert text in card, text
    # the recipe: what differs from train.py's defaults, without the machine's paths
    recipe = card.split('```yaml\n')[1].split('```')[0]
    assert 'lr: 0.003' in recipe and 'epochs: 3' in recipe and 'seed: 0' in recipe and 'num_classes: 3' in recipe
    assert 'data_dir' not in recipe and 'workers' not in recipe and 'dataset: torch/cifar10' in recipe
    assert json.loads((out / 'release.json').read_text())[0]['variant'] == 'base'
    assert '/home/someone' not in card


def test_portable_command():
    assert portable_command(COMMAND) == PORTABLE
    torchrun = ('/v/bin/python -m torch.distributed.run --standalone --nproc_per_node 4 /t/train.py '
                '--config /r/svhn.yaml')
    assert portable_command(torchrun) == ('python -m torch.distributed.run --standalone --nproc_per_node 4 train.py '
                                          '--config recipes/svhn.yaml')


def test_portable_command_takes_paths_written_with_an_equals_sign():
    """`timm-sl reproduce ... -- --initial-checkpoint=/home/me/in1k.pth` (one word) kept this machine's path on the
    public card, and `--resume=PATH` stayed in the 'exact' command."""
    command = ('/v/bin/python /t/train.py --data-dir=/home/me/data --config=/src/recipes/cifar10.yaml '
               '--output=/home/me/o --resume=/home/me/o/r/last.pth.tar --initial-checkpoint=/home/me/in1k.pth --lr=0.1')
    assert portable_command(command) == ('python train.py --data-dir DATA --config recipes/cifar10.yaml --output '
                                         'OUTPUT --initial-checkpoint CHECKPOINT --lr=0.1')


def test_portable_command_names_a_class_map_or_pretrained_path_by_file_name():
    """`timm-sl reproduce ... -- --class-map /home/me/map.txt --pretrained-path /home/me/w.pth` kept this machine's
    paths in the card's 'exact train.py command (paths replaced by DATA / OUTPUT)'."""
    command = ('/v/bin/python /t/train.py --data-dir /home/me/data --class-map /home/me/maps/map.txt '
               '--pretrained --pretrained-path=/home/me/w/in1k.pth --lr 0.1')
    assert portable_command(command) == ('python train.py --data-dir DATA --class-map map.txt --pretrained '
                                         '--pretrained-path in1k.pth --lr 0.1')


def test_pretrained_entries_take_the_best_seed_of_the_registered_architecture(released):
    out, _, lines = released
    entries = json.loads((out / 'pretrained_entries.json').read_text())
    assert list(entries) == ['sl_vit_32.cifar10']  # the baseline (spt=False lsa=False) cannot be a tag of sl_vit_32
    entry = entries['sl_vit_32.cifar10']
    assert entry['hf_hub_id'] == 'timm-sl-test/sl_vit_32.sl-cifar10-s0'
    assert entry['mean'] == CIFAR10_MEAN and entry['std'] == CIFAR10_STD and entry['num_classes'] == 3
    assert entry['input_size'] == [3, 32, 32] and entry['crop_pct'] == 1.0
    assert lines[-1].startswith('1 pretrained tag entry in ')


def test_tag_loads_offline_in_a_fresh_interpreter(released, reproduced, tmp_path):
    out, result, _ = released
    _, models = reproduced
    repo = result[1].repo_id
    cache = tmp_path / 'hf_cache'
    _offline_cache(out / repo.split('/')[1], cache, repo=repo)
    tags = tmp_path / 'tags.json'
    tags.write_text((out / 'pretrained_entries.json').read_text())
    x = torch.randn(2, 3, 32, 32)
    torch.save({'x': x, 'y': models['vit-sl-s0'](x).detach()}, tmp_path / 'io.pt')
    code = textwrap.dedent(f'''
        import torch, timm
        io = torch.load(r'{tmp_path / 'io.pt'}')
        tags = [n for n in timm.list_pretrained('sl_*') if '.' in n]
        assert tags == ['sl_vit_32.cifar10'], tags
        for name in ('sl_vit_32.cifar10', 'sl_vit_32'):  # the only tag with weights is the default
            m = timm.create_model(name, pretrained=True).eval()
            torch.testing.assert_close(m(io['x']), io['y'], atol=1e-5, rtol=1e-5)
            assert list(m.pretrained_cfg['mean']) == {CIFAR10_MEAN}, m.pretrained_cfg
        print('ok')
    ''')
    env = {k: v for k, v in os.environ.items() if k not in ('TIMM_SL_NO_AUTOLOAD', 'HF_HOME')}
    env.update(HF_HUB_OFFLINE='1', HF_HUB_CACHE=str(cache), **{PRETRAINED_ENV: str(tags)})
    result = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, env=env, timeout=300)
    assert result.stdout.strip() == 'ok', result.stderr[-2000:]


def test_push_uploads_each_folder(reproduced, tmp_path, monkeypatch):
    import timm_sl.tools.hub
    calls = []
    monkeypatch.setattr(timm_sl.tools.hub, 'push_folder', lambda folder, repo_id, **kw: calls.append(repo_id) or 'url')
    root, _ = reproduced
    result = release([root / 'runs' / 'vit-sl-s1'], tmp_path, 'org', '{family}-{seed}', push=True, echo=lambda _: None)
    assert calls == ['org/vit-1'] and result[0].pushed == 'url' and result[0].dataset == 'cifar10'


def test_release_errors_are_one_line(reproduced, tmp_path, capsys):
    root, _ = reproduced
    def fails(argv):  # one line on stderr, exit status 2
        with pytest.raises(SystemExit) as e:
            main(argv)
        assert e.value.code == 2
        return True

    assert fails(['release', str(tmp_path / 'nothing'), '--org', 'o', '--out', str(tmp_path / 'o')])
    assert capsys.readouterr().err == (f'timm-sl release: {tmp_path / "nothing"} does not exist; expected a timm-sl '
                                       f'reproduce output or train.py run folder\n')
    assert fails(['release', str(tmp_path), '--org', 'o', '--out', str(tmp_path / 'o')])
    assert capsys.readouterr().err == (f'timm-sl release: {tmp_path} holds no train.py run (no model_best.pth.tar or '
                                       f'last.pth.tar at or below it)\n')
    assert fails(['release', str(root), '--org', 'o', '--name-pattern', '{model}', '--out', str(tmp_path / 'o')])
    runs = sorted((root / 'runs').iterdir())
    assert capsys.readouterr().err == (f"timm-sl release: --name-pattern '{{model}}' names both {runs[0]} and "
                                       f"{runs[1]} o/sl_vit_32 (the Hub ignores case); allowed: a pattern whose "
                                       f"fields differ between them ({{run}}, {{seed}}), or release them one at a "
                                       f"time into different --out folders\n")
    info = RunRecord(Path('x'), model='sl_vit_32', family='vit', variant='sl', dataset='cifar10', seed=0)
    with pytest.raises(ValueError, match=r"uses an unknown field 'size'; allowed: model, family, variant"):
        repo_name('{model}-{size}', info)
    with pytest.raises(ValueError, match="repository name 'sl_vit_32/x' .* is not allowed on the Hub"):
        repo_name('{model}/x', info)
    assert find_runs([root]) == sorted((root / 'runs').iterdir())


def test_shipped_tags_file_is_empty():
    assert json.loads(PRETRAINED_FILE.read_text()) == {}
    if not os.environ.get(PRETRAINED_ENV):
        assert timm.list_pretrained('sl_*') == []


def test_tags_file_entries_merge_over_the_model_cfg_and_bad_files_are_named(tmp_path, monkeypatch):
    tags = tmp_path / 'tags.json'
    tags.write_text(json.dumps({'sl_vit_32.demo': {'hf_hub_id': 'o/n', 'mean': [0.5, 0.5, 0.5], 'num_classes': 10},
                                'sl_pit_32.demo': {'hf_hub_id': 'o/p'}}))
    monkeypatch.setenv(PRETRAINED_ENV, str(tags))
    base = timm.get_pretrained_cfg('sl_vit_32').to_dict()
    cfgs = with_pretrained_tags({'sl_vit_32': base})
    assert list(cfgs) == ['sl_vit_32', 'sl_vit_32.demo']
    assert cfgs['sl_vit_32.demo'] == {**base, 'hf_hub_id': 'o/n', 'mean': (0.5, 0.5, 0.5), 'num_classes': 10}
    tags.write_text(json.dumps({'sl_vit_32.demo': {'hf_hub_id': 'o/n', 'means': [0.5]}}))
    with pytest.raises(ValueError) as e:
        read_pretrained_tags()
    assert str(e.value).startswith(f'{tags}: sl_vit_32.demo has unknown field(s) means; allowed: PretrainedCfg fields')
    tags.write_text(json.dumps({'sl_vit_32': {'hf_hub_id': 'o/n'}}))
    with pytest.raises(ValueError, match=r"key 'sl_vit_32' is not MODEL.TAG \(e.g. sl_vit_32.cifar100\)"):
        read_pretrained_tags()
    tags.write_text(json.dumps({'sl_vit_32.x': {'mean': [0.5]}}))
    with pytest.raises(ValueError, match='sl_vit_32.x needs an object with "hf_hub_id"'):
        read_pretrained_tags()
    monkeypatch.setenv(PRETRAINED_ENV, str(tmp_path / 'missing.json'))
    with pytest.raises(FileNotFoundError, match=f'pretrained tags file {tmp_path / "missing.json"} '
                                                f'\\(from {PRETRAINED_ENV}\\) does not exist'):
        read_pretrained_tags()


@pytest.mark.parametrize('content,message', [
    (None, 'is a folder; allowed: a JSON file'),  # a folder where the file goes: was "does not exist"
    (b'\xff\xfe{}', 'is not UTF-8 text (invalid start byte at byte 0); allowed: a JSON file'),  # was: no file named
    # values timm computes with: were a TypeError / AssertionError at create_model, naming neither file nor tag
    (b'{"sl_vit_32.x": {"hf_hub_id": "o/n", "num_classes": "ten"}}', 'sl_vit_32.x has num_classes="ten"; allowed: an '
                                                                    'int >= 0'),
    (b'{"sl_vit_32.x": {"hf_hub_id": "o/n", "input_size": [3, 32]}}', 'sl_vit_32.x has input_size=[3, 32]; allowed: '
                                                                     'a list [C, H, W] of ints >= 1'),
    (b'{"sl_vit_32.x": {"hf_hub_id": "o/n", "std": [0, 0, 0]}}', 'sl_vit_32.x has std=[0, 0, 0]; allowed: a list of '
                                                                'numbers > 0'),
])
def test_hostile_tags_files_are_named_with_what_is_allowed(content, message, tmp_path, monkeypatch):
    tags = tmp_path / 'tags.json'
    if content is None:
        tags.mkdir()
    else:
        tags.write_bytes(content)
    monkeypatch.setenv(PRETRAINED_ENV, str(tags))
    with pytest.raises(OSError if content is None else ValueError) as info:
        read_pretrained_tags()
    assert str(tags) in str(info.value) and str(info.value).endswith(message) and '\n' not in str(info.value)


def test_a_tag_of_no_registered_model_is_refused(tmp_path):
    """A tag whose model no family registers (a typo, a model renamed) was ignored, silently: no tag, no error."""
    tags = tmp_path / 'tags.json'
    tags.write_text(json.dumps({'sl_vit_32.ok': {'hf_hub_id': 'o/n'}, 'sl_vit_33.c10': {'hf_hub_id': 'o/n'}}))
    env = {k: v for k, v in os.environ.items() if k != 'TIMM_SL_NO_AUTOLOAD'}
    env[PRETRAINED_ENV] = str(tags)
    result = subprocess.run([sys.executable, '-c', 'import timm_sl.models'], capture_output=True, text=True, env=env,
                            timeout=300)
    assert result.returncode != 0
    assert result.stderr.strip().splitlines()[-1] == (
        f'ValueError: {tags}: sl_vit_33.c10 names no registered sl_ model (sl_vit_33); did you mean sl_vit_32? '
        f'allowed: a model of `timm-sl list` (sl_cait_32, ..., sl_vit_tiny)')
    # through timm's plugin loading: the same line as a warning; the families and the file's other tags in, no slify
    probe = ("import timm; print(timm.is_model('sl_vit_32'), 'sl_vit_32.ok' in timm.list_pretrained('sl_vit_32*'), "
             "timm.is_model('slify'))")
    result = subprocess.run([sys.executable, '-c', probe], capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 0 and result.stdout.split() == ['True', 'True', 'False']
    assert "failed to load: ValueError('" + str(tags) + ": sl_vit_33.c10 names no registered sl_ model" in result.stderr


def test_a_run_without_a_dataset_needs_dataset(tmp_path, capsys):
    """Not ORG/sl_vit_32.sl-data-s0 with "dataset": null, silently."""
    from timm_sl.tools.cli import main
    _run(tmp_path, 'r', {}, [40.], dataset='', classes=10)  # an image folder, and no recipe of the package read
    (tmp_path / 'runs' / 'r' / 'done.json').unlink()
    with pytest.raises(SystemExit):
        main(['release', str(tmp_path / 'runs'), '--org', 'o', '--out', str(tmp_path / 'rel')])
    assert capsys.readouterr().err == (
        f'timm-sl release: {tmp_path / "runs" / "r"} records no dataset (no --dataset in its args.yaml, and no recipe '
        f'of timm-sl whose data it read); allowed: --dataset NAME (e.g. cifar10, cifar100, svhn, tiny-imagenet, '
        f'fashion-mnist)\n')
    assert not (tmp_path / 'rel').exists()
    assert main(['release', str(tmp_path / 'runs'), '--org', 'o', '--out', str(tmp_path / 'rel'),
                 '--dataset', 'cifar10']) == 0
    assert json.loads((tmp_path / 'rel' / 'release.json').read_text())[0]['repo_id'] == 'o/sl_vit_32.sl-cifar10-s0'


def test_dataset_never_overrides_the_dataset_a_run_records(tmp_path, capsys):
    """A Fashion-MNIST run released with --dataset cifar100 was named sl_vit_32.sl-cifar100-s0, carried CIFAR-100's
    paper top-1 and gave the tag sl_vit_32.cifar100 10 classes; release and export refuse it in one line."""
    _run(tmp_path, 'vit-sl-s0', {}, [40., 50.], classes=10, dataset='')  # an image folder of 10 classes
    run, rel = tmp_path / 'runs' / 'vit-sl-s0', tmp_path / 'rel'
    (run / 'done.json').write_text(json.dumps(dict(family='vit', variant='sl', epochs=2, dataset='fashion-mnist')))
    (run / 'command.txt').write_text(COMMAND.replace('cifar10.yaml', 'fashion_mnist.yaml') + '\n')
    argv = ['release', str(tmp_path / 'runs'), '--org', 'o', '--out', str(rel)]
    says = (f"{run} records the dataset 'fashion-mnist', not --dataset 'cifar100'; allowed: leave out --dataset (it "
            f"names the dataset of runs that record none), or runs of 'cifar100'")
    assert _fails(argv + ['--dataset', 'cifar100'], capsys) == f'timm-sl release: {says}'
    assert _fails(['export', str(run), '--out', str(tmp_path / 'e'), '--dataset', 'cifar100'], capsys) == \
        f'timm-sl export: {says}'
    assert not rel.exists() and not (tmp_path / 'e').exists()
    # the run's own dataset, however spelt, is no disagreement
    assert main(argv + ['--dataset', 'fashion_mnist']) == 0
    assert json.loads((rel / 'release.json').read_text())[0]['repo_id'] == 'o/sl_vit_32.sl-fashion-mnist-s0'
    # a run that records none: --dataset names it, but not as a dataset of another class count
    (run / 'done.json').write_text(json.dumps(dict(family='vit', variant='sl', epochs=2)))
    (run / 'command.txt').unlink()
    says = (f"{run} has 10 classes, which cannot be --dataset 'cifar100' (100 classes); allowed: a dataset of 10 "
            f"classes (cifar10, svhn, fashion-mnist), or a name of your own data")
    assert _fails(argv + ['--dataset', 'cifar100', '--overwrite'], capsys) == f'timm-sl release: {says}'
    assert _fails(['export', str(run), '--out', str(tmp_path / 'e'), '--dataset', 'cifar100'], capsys) == \
        f'timm-sl export: {says}'
    # without args.yaml, the classes of the checkpoint's args
    (run / 'args.yaml').unlink()
    assert _fails(['export', str(run / 'model_best.pth.tar'), '--out', str(tmp_path / 'e'), '--dataset',
                   'tinyimagenet'], capsys) == (
        f"timm-sl export: {run / 'model_best.pth.tar'} has 10 classes, which cannot be --dataset 'tinyimagenet' (200 "
        f"classes); allowed: a dataset of 10 classes (cifar10, svhn, fashion-mnist), or a name of your own data")
    assert main(['export', str(run / 'model_best.pth.tar'), '--out', str(tmp_path / 'e'), '--dataset', 'svhn']) == 0
    assert 'datasets:\n- svhn\n' in (tmp_path / 'e' / 'README.md').read_text()


def test_a_run_whose_data_folder_holds_another_dataset_is_refused(tmp_path, capsys):
    """Fashion-MNIST trained with the SVHN recipe (reproduce --dataset svhn on a prepare-fashion-mnist folder) records
    svhn; its data folder's prepare record says otherwise: not released as sl_vit_32.sl-svhn-s0."""
    _run(tmp_path, 'vit-sl-s0', {}, [40., 50.], classes=10, dataset='')
    run, rel, data = tmp_path / 'runs' / 'vit-sl-s0', tmp_path / 'rel', tmp_path / 'fm'
    data.mkdir()
    (data / 'fashion_mnist.json').write_text(json.dumps(dict(dataset='fashion-mnist')))
    args = json.loads((run / 'args.yaml').read_text())
    (run / 'args.yaml').write_text(json.dumps({**args, 'data_dir': str(data)}))
    (run / 'done.json').write_text(json.dumps(dict(family='vit', variant='sl', epochs=2, dataset='svhn')))
    argv = ['release', str(tmp_path / 'runs'), '--org', 'o', '--out', str(rel)]
    says = (f'{data / "fashion_mnist.json"}: the data folder of {run} holds fashion-mnist, not svhn (the dataset the '
            f'run records); allowed: runs whose data is svhn')
    assert _fails(argv, capsys) == f'timm-sl release: {says}'
    assert _fails(['export', str(run), '--out', str(tmp_path / 'e')], capsys) == f'timm-sl export: {says}'
    assert not rel.exists() and not (tmp_path / 'e').exists()
    # a run that records no dataset: --dataset must name the one its folder holds
    (run / 'done.json').write_text(json.dumps(dict(family='vit', variant='sl', epochs=2)))
    assert _fails(argv + ['--dataset', 'svhn'], capsys) == (
        f'timm-sl release: {data / "fashion_mnist.json"}: the data folder of {run} holds fashion-mnist, not --dataset '
        f'svhn; allowed: --dataset fashion-mnist')
    assert main(argv + ['--dataset', 'fashion-mnist']) == 0
    assert json.loads((rel / 'release.json').read_text())[0]['repo_id'] == 'o/sl_vit_32.sl-fashion-mnist-s0'


@pytest.mark.parametrize('kind', ['fifo', 'folder'])
def test_a_record_of_a_prepared_folder_that_is_no_file_is_refused(kind, tmp_path, capsys):
    """A FIFO (or a folder) at a data folder's fashion_mnist.json was taken for no record: the run, recording svhn,
    was exported as svhn with nothing said of the record there."""
    _run(tmp_path, 'vit-sl-s0', dict(depth=1), [40., 50.], classes=10, dataset='')
    run, data = tmp_path / 'runs' / 'vit-sl-s0', tmp_path / 'fm'
    data.mkdir()
    record = data / 'fashion_mnist.json'
    os.mkfifo(record) if kind == 'fifo' else record.mkdir()
    args = json.loads((run / 'args.yaml').read_text())
    (run / 'args.yaml').write_text(json.dumps({**args, 'data_dir': str(data)}))
    (run / 'done.json').write_text(json.dumps(dict(family='vit', variant='sl', epochs=2, dataset='svhn')))
    what = 'the record timm-sl prepare-fashion-mnist writes there (allowed: the file, or none)'
    assert _fails(['export', str(run), '--out', str(tmp_path / 'e')], capsys) == 'timm-sl export: ' + (
        f'{record} is a FIFO (named pipe), not a regular file; expected {what}' if kind == 'fifo' else
        f'{record} is a folder; expected {what}')
    assert not (tmp_path / 'e').exists()


def test_a_relative_data_dir_is_train_py_s_not_the_commands(tmp_path, capsys, monkeypatch):
    """A relative --data-dir was looked for in the folder export runs from: the prepare record of the run's own data
    folder went unread (Fashion-MNIST exported as the svhn its done.json says), and another folder of that name here
    was said to be the run's. train.py's working directory is known from a relative --output (runs/EXPERIMENT)."""
    proj, elsewhere = tmp_path / 'proj', tmp_path / 'elsewhere'
    _run(proj, 'vit-sl-s0', dict(depth=1), [40., 50.], classes=10, dataset='')
    run = proj / 'runs' / 'vit-sl-s0'
    for folder, name in ((proj / 'fm', 'fashion_mnist.json'), (elsewhere / 'fm', 'svhn.json')):
        folder.mkdir(parents=True)
        (folder / name).write_text('{}')
    args = json.loads((run / 'args.yaml').read_text())
    (run / 'args.yaml').write_text(json.dumps({**args, 'data_dir': 'fm', 'output': 'runs'}))
    (run / 'done.json').write_text(json.dumps(dict(family='vit', variant='sl', epochs=2, dataset='svhn')))
    monkeypatch.chdir(elsewhere)
    assert _fails(['export', str(run), '--out', str(tmp_path / 'e')], capsys) == (
        f"timm-sl export: {proj / 'fm' / 'fashion_mnist.json'}: the data folder of {run} holds fashion-mnist, not "
        f"svhn (the dataset the run records); allowed: runs whose data is svhn")
    (run / 'done.json').write_text(json.dumps(dict(family='vit', variant='sl', epochs=2, dataset='fashion-mnist')))
    (run / 'args.yaml').write_text(json.dumps({**args, 'data_dir': 'fm', 'output': str(proj / 'runs')}))
    assert main(['export', str(run), '--out', str(tmp_path / 'e')]) == 0  # ./fm (svhn) is not known to be its


def test_the_variant_is_the_recorded_kwargs_row_and_done_json_must_agree(tmp_path, capsys):
    """A baseline run (spt=False lsa=False) whose done.json says 'sl' was released as sl_vit_32.sl-cifar10-s0."""
    _run(tmp_path, 'vit-base-s0', dict(spt=False, lsa=False), [40., 50.])
    run, rel = tmp_path / 'runs' / 'vit-base-s0', tmp_path / 'rel'
    marker = json.loads((run / 'done.json').read_text())
    (run / 'done.json').write_text(json.dumps({**marker, 'variant': 'sl'}))
    says = (f"{run / 'done.json'} records the variant 'sl', but the model kwargs of its args.yaml (spt=False "
            f"lsa=False) make 'base'; allowed: a done.json whose variant is 'base' (or none)")
    argv = ['release', str(tmp_path / 'runs'), '--org', 'o', '--out', str(rel)]
    assert _fails(argv, capsys) == f'timm-sl release: {says}'
    assert _fails(['export', str(run), '--out', str(tmp_path / 'e')], capsys) == f'timm-sl export: {says}'
    assert not rel.exists() and not (tmp_path / 'e').exists()
    # kwargs every row got (-- --model-kwargs depth=1) keep the row reproduce recorded
    _run(tmp_path / 'depth1', 'vit-base-s0', dict(spt=False, lsa=False, depth=1), [40., 50.])  # done.json: 'base'
    assert main(['release', str(tmp_path / 'depth1' / 'runs'), '--org', 'o', '--out', str(rel)]) == 0
    assert json.loads((rel / 'release.json').read_text())[0]['repo_id'] == 'o/sl_vit_32.base-cifar10-s0'


@pytest.mark.parametrize('org,reason', [('a--b', 'Cannot have -- or ..'), ('-org', 'cannot start or end with'),
                                        ('x' * 97, 'maximum length is 96')])
def test_hub_names_follow_huggingface_hub(org, reason, tmp_path):
    with pytest.raises(ValueError, match=rf"^--org '{org}' is not allowed on the Hub \(.*{reason}"):
        release([tmp_path], tmp_path / 'o', org)


def test_a_release_record_cut_short_leaves_the_earlier_whole(tmp_path, monkeypatch):
    """release.json, pretrained_entries.json and the manifest were written in place: a full disk while writing them
    left them cut (release.json may be all that says what an earlier --push uploaded, and a cut manifest made the next
    release refuse its own files)."""
    _run(tmp_path, 'vit-sl-s0', dict(depth=1), [40., 50.])
    (tmp_path / 'runs' / 'vit-sl-s0' / 'done.json').write_text(json.dumps(dict(family='vit', variant='sl', epochs=2)))
    out = tmp_path / 'rel'
    release([tmp_path / 'runs'], out, 'o', echo=lambda line: None)
    names = ('release.json', 'pretrained_entries.json', 'release_manifest.json')
    before = {name: (out / name).read_bytes() for name in names}
    write_text = Path.write_text

    def cut_short(path, text, *args, **kwargs):
        if path.name.endswith('.json') and path.parent == out:
            write_text(path, text[:5])
            raise OSError(28, 'No space left on device')
        return write_text(path, text, *args, **kwargs)
    monkeypatch.setattr(Path, 'write_text', cut_short)
    with pytest.raises(OSError, match='No space left on device'):
        release([tmp_path / 'runs'], out, 'o', echo=lambda line: None)
    monkeypatch.setattr(Path, 'write_text', write_text)
    assert {name: (out / name).read_bytes() for name in names} == before
    assert sorted(p.name for p in out.iterdir()) == sorted([*names, 'sl_vit_32.sl-cifar10-s0'])


@pytest.mark.parametrize('dataset', ['x\ny', 'caf\u00e9', 'torch/a..b'])
def test_a_dataset_the_hub_cannot_name_names_the_run(dataset, tmp_path, capsys):
    """An args.yaml dataset no Hub name may hold (found by mutating args.yaml through release at random) was refused
    as a repository name of --name-pattern alone, naming neither the run nor its args.yaml."""
    run = tmp_path / 'runs' / 'r'
    _run(tmp_path, 'r', {}, [40., 80.], dataset=dataset)
    err = _fails(['release', str(run), '--org', 'o', '--out', str(tmp_path / 'o')], capsys)
    assert err.startswith('timm-sl release: repository name ') and f' of {run} (from --name-pattern ' in err, err
    assert "and the run's model, dataset, seed and folder name) is not allowed on the Hub (" in err, err
    assert not (tmp_path / 'o').exists()


def test_a_hub_name_with_a_line_break_keeps_the_whole_reason(tmp_path):
    """A name with a line break (a run folder's, by --name-pattern {run}) cut the Hub's reason at it: '... 96: 'nl)'."""
    with pytest.raises(ValueError) as e:
        release([tmp_path], tmp_path / 'o', 'nl\nx')
    assert str(e.value).startswith("--org 'nl\\nx' is not allowed on the Hub (") and str(e.value).endswith(
        ": 'nl\\nx'.)") and '\n' not in str(e.value)


@pytest.mark.parametrize('pattern,says', [
    ('{model', "is not a format string (expected '}' before end of string); allowed: the fields {model} {family} "
               "{variant} {dataset} {seed} {run} (a literal brace doubled)"),
    ('{model}}x', "is not a format string (Single '}' encountered in format string); allowed: the fields {model} "),
    ('{model!z}', 'is not a format string (Unknown conversion specifier z); allowed: the fields {model} '),
    ('{model.upper}', "uses an unknown field 'model.upper'; allowed: model, family, variant, dataset, seed, run"),
    ('{foo}-{seed}', "uses an unknown field 'foo'; allowed: model, family, variant, dataset, seed, run"),
    ('x{}', "uses an unknown field '' (an empty {}); allowed: model, family"),
])
def test_a_bad_name_pattern_names_the_option_and_the_fields(pattern, says, reproduced, tmp_path, capsys):
    root, _ = reproduced
    err = _fails(['release', str(root), '--org', 'o', '--name-pattern', pattern, '--out', str(tmp_path / 'o')], capsys)
    assert err.startswith(f'timm-sl release: --name-pattern {pattern!r} {says}'), err
    assert not (tmp_path / 'o').exists()


def test_release_replaces_only_its_own_unchanged_files(reproduced, tmp_path, capsys):
    """A card edited since the last release (or any file release did not write) is refused, not replaced;
    --overwrite replaces it; files release never writes stay."""
    root, _ = reproduced
    out = tmp_path / 'rel'
    argv = ['release', str(root / 'runs' / 'vit-sl-s1'), '--org', 'o', '--out', str(out)]
    assert main(argv) == 0
    assert main(argv) == 0  # its own files, unchanged: released again
    card = out / 'sl_vit_32.sl-cifar10-s1' / 'README.md'
    manifest = json.loads((out / 'release_manifest.json').read_text())['sha256']
    assert sorted(manifest) == ['pretrained_entries.json', 'release.json', 'sl_vit_32.sl-cifar10-s1/README.md',
                                'sl_vit_32.sl-cifar10-s1/config.json', 'sl_vit_32.sl-cifar10-s1/model.safetensors']
    card.write_text(card.read_text() + '\nMy notes on this model.\n')
    (card.parent / 'LICENSE').write_text('mine')
    edited = card.read_text()
    capsys.readouterr()
    assert _fails(argv, capsys) == (
        f'timm-sl release: {card} would be replaced but was not written by timm-sl release, or was changed since '
        f'(release_manifest.json records what it wrote); allowed: move it away, or --overwrite to replace it')
    assert card.read_text() == edited
    assert main(argv + ['--overwrite']) == 0
    assert 'My notes' not in card.read_text() and (card.parent / 'LICENSE').read_text() == 'mine'
    # files of the user's own in a new --out: refused too, nothing written
    mine = tmp_path / 'mine'
    (mine / 'sl_vit_32.sl-cifar10-s1').mkdir(parents=True)
    (mine / 'release.json').write_text('my list')
    (mine / 'sl_vit_32.sl-cifar10-s1' / 'config.json').write_text('{}')
    argv[-1] = str(mine)
    assert _fails(argv, capsys).startswith(f'timm-sl release: {mine / "release.json"} (and 1 more) would be replaced '
                                           f'but was not written by timm-sl release')
    assert (mine / 'release.json').read_text() == 'my list' and len(list(mine.rglob('*'))) == 3
    (mine / 'sl_vit_32.sl-cifar10-s1' / 'README.md').mkdir()
    assert _fails(argv + ['--overwrite'], capsys) == (
        f'timm-sl release: {mine / "sl_vit_32.sl-cifar10-s1" / "README.md"} is a folder; expected the README.md of a '
        f'released model; allowed: move it away')


NOT_TRAIN_PY = "allowed: timm's train.py (from a checkout of https://github.com/huggingface/pytorch-image-models)"


@pytest.mark.parametrize('name,content,says', [
    ('empty.py', '', 'no module-level argparse parser named `parser`'),
    ('plain.py', 'import os\nparser = os.sep\n', 'no module-level argparse parser named `parser`'),
    ('broken.py', 'def f(:\n    pass\n', 'a syntax error at line 1: '),  # Python's words differ by version
    ('needs.py', 'import argparse\nparser = argparse.ArgumentParser()\nparser.add_argument("--x", required=True)\n',
     'its parser needs arguments: the following arguments are required: --x'),
    ('imports.py', 'import timm_sl_no_such_module\n',
     "importing it raised ModuleNotFoundError: No module named 'timm_sl_no_such_module'"),
    ('exits.py', 'raise SystemExit(3)\n', 'importing it raised SystemExit: 3'),
    # names without .py (importlib finds no loader for them by the suffix): read all the same
    ('train_copy', '', 'no module-level argparse parser named `parser`'),
    ('label_names.txt', 'Ankle boot\nBag\n', 'a syntax error at line 1: '),
    # validate.py: its defaults (seed 42) were taken for train.py's, and the cards' recipes left the runs' seed out
    ('validate.py', 'import argparse\nparser = argparse.ArgumentParser()\nparser.add_argument("--seed", default=42)\n',
     'its parser has no --epochs or --lr: not a training script (validate.py, benchmark.py?)'),
])
def test_a_train_script_that_is_not_train_py_is_one_line(name, content, says, reproduced, tmp_path, capsys):
    root, _ = reproduced
    script = tmp_path / name
    script.write_text(content)
    argv = ['release', str(root), '--org', 'o', '--out', str(tmp_path / 'o'), '--train-script', str(script)]
    err = _fails(argv, capsys)
    assert err.startswith(f"timm-sl release: {script} is not timm's train.py ({says}") and \
        err.endswith(f'); {NOT_TRAIN_PY}') and err.count('allowed:') == 1, err
    assert not (tmp_path / 'o').exists()


def test_a_train_script_without_the_py_suffix_is_read(tmp_path):
    from timm_sl.tools.train_args import train_script_defaults
    script = tmp_path / 'train_copy'
    script.write_text('import argparse\nparser = argparse.ArgumentParser()\nparser.add_argument("--lr", default=0.1)\n'
                      'parser.add_argument("--epochs", default=3)\n')
    assert train_script_defaults(script) == {'lr': 0.1, 'epochs': 3}


def test_a_train_script_folder_is_one_line(reproduced, tmp_path, capsys):
    from timm_sl.tools.train_args import train_script_defaults
    root, _ = reproduced
    argv = ['release', str(root), '--org', 'o', '--out', str(tmp_path / 'o'), '--train-script', str(tmp_path)]
    expected = "expected timm's train.py (from a checkout of https://github.com/huggingface/pytorch-image-models)"
    assert _fails(argv, capsys) == f'timm-sl release: --train-script {tmp_path} is a folder; {expected}'
    (tmp_path / 'train.py').write_text('')
    assert _fails(argv, capsys) == (f'timm-sl release: --train-script {tmp_path} is a folder; {expected} '
                                    f'({tmp_path / "train.py"} is there)')
    for path, error in ((tmp_path, IsADirectoryError), (tmp_path / 'missing.py', FileNotFoundError)):
        with pytest.raises(error, match=f'^.*{path}'):  # the library function too, not a traceback from the import
            train_script_defaults(path)


def test_the_dataset_is_the_runs_own_record_not_a_report_around_it(tmp_path, capsys):
    """A Fashion-MNIST run below a CIFAR-10 reproduction's results.json: not `datasets: cifar10`, CIFAR-10's paper
    top-1 and an sl_vit_32.cifar10 tag."""
    (tmp_path / 'results.json').write_text(json.dumps(dict(dataset='cifar10', rows=[], runs=[])))
    _run(tmp_path, 'vit-sl-s0', {}, [40., 50.], classes=10, dataset='')  # an image folder of 10 classes
    run, rel = tmp_path / 'runs' / 'vit-sl-s0', tmp_path / 'rel'
    argv = ['release', str(tmp_path / 'runs'), '--org', 'o', '--out', str(rel)]
    (run / 'command.txt').unlink()
    (run / 'done.json').write_text(json.dumps(dict(family='vit', variant='sl', epochs=2)))  # a marker without dataset
    assert _fails(argv, capsys) == (
        f'timm-sl release: {run} records no dataset (no --dataset in its args.yaml, and no recipe of timm-sl whose '
        f'data it read); allowed: --dataset NAME (e.g. cifar10, cifar100, svhn, tiny-imagenet, fashion-mnist)')
    # the recipe its command names, which reads an image folder as the run did (--dataset '')
    (run / 'command.txt').write_text(COMMAND.replace('cifar10.yaml', 'fashion_mnist.yaml') + '\n')
    assert main(argv) == 0
    released = json.loads((rel / 'release.json').read_text())[0]
    assert released['dataset'] == 'fashion-mnist' and released['paper_top1'] is None
    card = (rel / 'sl_vit_32.sl-fashion-mnist-s0' / 'README.md').read_text()
    assert 'datasets:\n- fashion-mnist\n' in card and '| paper top-1 for this row | - (not in Table 2) |' in card
    assert list(json.loads((rel / 'pretrained_entries.json').read_text())) == ['sl_vit_32.fashionmnist']
    # cifar10.yaml reads torch/cifar10: a run of it with --dataset '' read some image folder, whose name it lacks
    for recorded in (dict(), dict(dataset='cifar10')):  # also where timm-sl reproduce's done.json names the recipe
        (run / 'command.txt').write_text(COMMAND + '\n')
        (run / 'done.json').write_text(json.dumps(dict(family='vit', variant='sl', epochs=2, **recorded)))
        assert _fails(argv, capsys).startswith(f'timm-sl release: {run} records no dataset')
    # the dataset done.json records, of a recipe that reads an image folder of the run's 10 classes
    (run / 'done.json').write_text(json.dumps(dict(family='vit', variant='sl', epochs=2, dataset='svhn')))
    shutil.rmtree(rel)
    assert main(argv) == 0 and json.loads((rel / 'release.json').read_text())[0]['dataset'] == 'svhn'
    (run / 'args.yaml').write_text(json.dumps(dict(json.loads((run / 'args.yaml').read_text()), num_classes=7)))
    assert _fails(argv, capsys).startswith(f'timm-sl release: {run} records no dataset')
    # train.py's --dataset is the run's own word (in args.yaml and the checkpoint alike: train.py writes both)
    args = dict(json.loads((run / 'args.yaml').read_text()), dataset='torch/cifar10', num_classes=10)
    (run / 'args.yaml').write_text(json.dumps(args))
    checkpoint = torch.load(run / 'model_best.pth.tar', weights_only=False)
    torch.save(dict(checkpoint, args=argparse.Namespace(**args)), run / 'model_best.pth.tar')
    shutil.rmtree(rel)
    assert main(argv) == 0 and json.loads((rel / 'release.json').read_text())[0]['dataset'] == 'cifar10'
    # an args.yaml that says another dataset than its checkpoint: one of them is another run's
    (run / 'args.yaml').write_text(json.dumps(dict(args, dataset='torch/cifar100', num_classes=100)))
    assert _fails(argv + ['--overwrite'], capsys).startswith(
        f"timm-sl release: {run / 'args.yaml'} is not the args.yaml of {run / 'model_best.pth.tar'} (num_classes 100 "
        f"there, 10 in the checkpoint; dataset 'torch/cifar100' there, 'torch/cifar10' in the checkpoint)")


def test_released_weights_of_another_epoch_say_so_and_rank_by_their_own_top1(tmp_path):
    """No model_best.pth.tar: release exports last.pth.tar, whose epoch is not the best one."""
    _run(tmp_path, 'vit-sl-s0', {}, [40., 80., 70.])
    _run(tmp_path, 'vit-sl-s1', {}, [50., 75.], seed=1)
    run = tmp_path / 'runs' / 'vit-sl-s0'
    last = torch.load(run / 'model_best.pth.tar', weights_only=False)
    torch.save(dict(last, epoch=2), run / 'last.pth.tar')
    (run / 'model_best.pth.tar').unlink()
    lines = []
    released = release([tmp_path / 'runs'], tmp_path / 'rel', 'o', echo=lines.append)
    first, second = released
    assert first.checkpoint == str(run / 'last.pth.tar')
    assert (first.best_top1, first.weights_epoch, first.weights_top1) == (80., 3, 70.)
    assert (second.best_top1, second.weights_epoch, second.weights_top1) == (75., 2, 75.)
    assert lines[0].endswith('(state_dict_ema, best top-1 80.00; these weights: epoch 3, top-1 70.00) as '
                             'o/sl_vit_32.sl-cifar10-s0')
    card = (tmp_path / 'rel' / 'sl_vit_32.sl-cifar10-s0' / 'README.md').read_text()
    for text in ('| measured best top-1 (%) | 80.00 |', '| top-1 (%) of these weights (epoch 3) | 70.00 |',
                 '| these weights: epoch (counted from 1) | 3 of 3 |', '| these weights: top-1 (%) | 70.00 |',
                 "These weights are epoch 3's (top-1 70.00 %), not the best epoch's: the best top-1 above (epoch 2) "
                 "belongs to another checkpoint"):
        assert text in card, text
    card = (tmp_path / 'rel' / 'sl_vit_32.sl-cifar10-s1' / 'README.md').read_text()
    assert '| these weights: epoch (counted from 1) | 2 of 2 (the best epoch) |' in card
    assert 'of these weights' not in card and 'another checkpoint' not in card
    # the tag points at the weights that score best: s1's 75.00, not s0's 70.00 (whose run peaked at 80.00)
    entries = json.loads((tmp_path / 'rel' / 'pretrained_entries.json').read_text())
    assert entries['sl_vit_32.cifar10']['hf_hub_id'] == 'o/sl_vit_32.sl-cifar10-s1'


def test_failed_and_interrupted_runs_are_not_released(tmp_path, capsys):
    _run(tmp_path, 'vit-sl-s0', {}, [40., 50., 60.])
    _run(tmp_path, 'vit-sl-s1', {}, [70., 90.], seed=1)  # interrupted after 2 of 3 epochs: the best top-1 so far
    _run(tmp_path, 'vit-sl-s2', {}, [20.], seed=2)  # done.json of an earlier plan; this one stopped at epoch 1 of 4
    runs = tmp_path / 'runs'
    (runs / 'vit-sl-s1' / 'done.json').unlink()
    args = json.loads((runs / 'vit-sl-s1' / 'args.yaml').read_text())
    (runs / 'vit-sl-s1' / 'args.yaml').write_text(json.dumps(dict(args, epochs=3)))
    (runs / 'vit-sl-s2' / 'done.json').write_text(json.dumps(dict(epochs=4, dataset='cifar10')))
    lines = []
    released = release([runs], tmp_path / 'rel', 'o', echo=lines.append)
    assert [r.repo_id for r in released] == ['o/sl_vit_32.sl-cifar10-s0']
    # every run is read before anything is written: the skipped ones are said first, each with its number
    assert lines[0] == (f'2/3: skipped: {runs / "vit-sl-s1"} is not a finished run (summary.csv reaches epoch 2 of '
                        f'the 3 args.yaml plans (no done.json: failed or interrupted)); allowed: runs that trained '
                        f'their planned epochs (resume it to finish it)')
    assert lines[1].startswith(f'3/3: skipped: {runs / "vit-sl-s2"}/summary.csv reaches epoch 1 of the 4 epochs '
                               f'{runs / "vit-sl-s2"}/done.json records as finished: it was cut short or replaced '
                               f'since (a copy cut off, or train.py started again in the folder?)')
    assert lines[2].startswith(f'1/3: {runs / "vit-sl-s0"} -> ')
    entries = json.loads((tmp_path / 'rel' / 'pretrained_entries.json').read_text())
    assert entries['sl_vit_32.cifar10']['hf_hub_id'] == 'o/sl_vit_32.sl-cifar10-s0'
    assert not (tmp_path / 'rel' / 'sl_vit_32.sl-cifar10-s1').exists()
    assert _fails(['release', str(runs / 'vit-sl-s1'), '--org', 'o', '--out', str(tmp_path / 'rel2')], capsys) == (
        f'timm-sl release: no finished run to release under {runs / "vit-sl-s1"} (1 skipped); allowed: runs that '
        f'trained their planned epochs with a finite top-1')


def test_only_the_papers_configurations_get_a_paper_row():
    from timm_sl.tools.paper import table2_row
    assert table2_row('sl_vit_32', {}, 'cifar10') == ('vit', 'sl')
    assert table2_row('sl_pit_32', dict(spt_pool=False, num_classes=100), 'cifar100') == ('pit', 'sl_no_spool')
    assert table2_row('sl_swin_64', dict(spt=False, lsa=False, spt_pool=False), 'tiny-imagenet') == ('swin', 'base')
    assert table2_row('sl_vit_32', {}, 'fashion-mnist') == ('vit', 'sl')  # a row, with no paper number there
    for model, kwargs, dataset in [('sl_vit_tiny', {}, 'cifar10'), ('sl_pit_ti', {}, 'cifar10'),
                                   ('sl_swin_t', {}, 'cifar10'), ('sl_vit_32', {}, 'tiny-imagenet'),
                                   ('sl_vit_64', {}, 'cifar10'), ('sl_vit_32', dict(depth=1), 'cifar10'),
                                   ('slify', dict(base='vit_tiny_patch16_224'), 'cifar10'), (None, {}, 'cifar10'),
                                   ('sl_vit_32', {}, None)]:
        assert table2_row(model, kwargs, dataset) is None, (model, kwargs, dataset)


@pytest.mark.parametrize('model,kwargs', [('sl_vit_tiny', {}), ('sl_vit_32', dict(depth=1))])
def test_a_configuration_the_paper_did_not_train_has_no_paper_number(model, kwargs, tmp_path):
    """sl_vit_tiny is a ViT, and reproduce's marker says 'vit', 'sl' of a depth=1 run: neither is Table 2's ViT."""
    _run(tmp_path, 'vit-sl-s0', kwargs, [40., 50.], model=model)
    (tmp_path / 'runs' / 'vit-sl-s0' / 'done.json').write_text(
        json.dumps(dict(family='vit', variant='sl', epochs=2, dataset='cifar10')))
    r, = release([tmp_path / 'runs'], tmp_path / 'rel', 'o', echo=lambda _: None)
    assert r.paper_top1 is None
    card = (tmp_path / 'rel' / r.repo_id.split('/')[1] / 'README.md').read_text()
    assert '94.53' not in card and '| paper top-1 for this row | - (not in Table 2) |' in card
    assert (f'| Table 2 row | none (`{model}` with these kwargs is not a configuration the paper trained on '
            f'cifar10) |') in card


@pytest.mark.parametrize('train_args,built', [
    (dict(in_chans=1, mean=[0.5], std=[0.25]), dict(in_chans=1)), (dict(gp='avg'), dict(global_pool='avg')),
], ids=['in-chans', 'gp'])
def test_a_run_of_train_py_model_arguments_is_no_table2_row_and_no_tag(train_args, built, tmp_path):
    """--in-chans 1 / --gp avg build another model than Table 2's (and than the tag's `sl_vit_32`, which the tag entry
    would have loaded those weights into): was carded as 'vit, SL' with the paper's 94.53 and entered as
    sl_vit_32.cifar10; a run of --in-chans 3 (train.py's default) and --gp token (sl_vit_32's own pool) still is the
    row (--gp token made it no row, no tag)."""
    _run(tmp_path, 'vit-sl-s0', {}, [40., 50.])
    run = tmp_path / 'runs' / 'vit-sl-s0'
    checkpoint = torch.load(run / 'model_best.pth.tar', weights_only=False)
    state = timm.create_model('sl_vit_32', num_classes=3, **built).state_dict()
    vars(checkpoint['args']).update(train_args)
    torch.save(dict(checkpoint, state_dict_ema=state, state_dict=state), run / 'model_best.pth.tar')
    (run / 'args.yaml').write_text(json.dumps(vars(checkpoint['args'])))
    r, = release([tmp_path / 'runs'], tmp_path / 'rel', 'o', echo=lambda _: None)
    card = (tmp_path / 'rel' / r.repo_id.split('/')[1] / 'README.md').read_text()
    assert r.paper_top1 is None and '94.53' not in card and r.model_kwargs == built
    assert json.loads((tmp_path / 'rel' / 'pretrained_entries.json').read_text()) == {}
    vars(checkpoint['args']).update(in_chans=3, gp='token')
    torch.save(checkpoint, run / 'model_best.pth.tar')
    (run / 'args.yaml').write_text(json.dumps(vars(checkpoint['args'])))
    r, = release([tmp_path / 'runs'], tmp_path / 'rel3', 'o', echo=lambda _: None)
    card = (tmp_path / 'rel3' / r.repo_id.split('/')[1] / 'README.md').read_text()
    assert '`sl_vit_32` (SPT + LSA)' in card and 'global_pool' not in card.split('\n## ')[0]
    assert r.paper_top1 == 94.53 and list(json.loads((tmp_path / 'rel3' / 'pretrained_entries.json').read_text())) == [
        'sl_vit_32.cifar10']


@pytest.mark.parametrize('start', [dict(pretrained=True), dict(initial_checkpoint='/home/me/imagenet.pth')])
def test_a_run_started_from_trained_weights_is_no_table2_row(start, tmp_path):
    """The paper trained every Table 2 row from scratch: a run of --pretrained / --initial-checkpoint was carded as
    'vit, SL' beside the paper's 94.53."""
    _run(tmp_path, 'vit-sl-s0', {}, [40., 50.])
    run = tmp_path / 'runs' / 'vit-sl-s0'
    checkpoint = torch.load(run / 'model_best.pth.tar', weights_only=False)
    vars(checkpoint['args']).update(start)
    torch.save(checkpoint, run / 'model_best.pth.tar')
    (run / 'args.yaml').write_text(json.dumps(vars(checkpoint['args'])))
    r, = release([tmp_path / 'runs'], tmp_path / 'rel', 'o', echo=lambda _: None)
    card = (tmp_path / 'rel' / r.repo_id.split('/')[1] / 'README.md').read_text()
    assert r.paper_top1 is None and '94.53' not in card
    assert f'| Table 2 row | none (started from {"--pretrained" if "pretrained" in start else "--initial-checkpoint"}'\
        in card and 'the paper trained from scratch)' in card and '/home/me' not in card  # no local folder on a card


def test_a_run_from_trained_weights_resumed_without_saying_so_is_no_table2_row(tmp_path):
    """train.py rewrites args.yaml on --resume: a run of --initial-checkpoint resumed without it (its weights come
    from last.pth.tar) left the start only in the released checkpoint's args, and was carded as 'vit, SL' beside the
    paper's 94.53 with a pretrained tag."""
    _run(tmp_path, 'vit-sl-s0', {}, [40., 50.])
    run = tmp_path / 'runs' / 'vit-sl-s0'
    checkpoint = torch.load(run / 'model_best.pth.tar', weights_only=False)
    vars(checkpoint['args']).update(initial_checkpoint='/data/in1k.pth', pretrained=False)
    torch.save(checkpoint, run / 'model_best.pth.tar')
    (run / 'args.yaml').write_text(json.dumps(dict(vars(checkpoint['args']), initial_checkpoint='',
                                                   resume=str(run / 'last.pth.tar'))))
    r, = release([tmp_path / 'runs'], tmp_path / 'rel', 'o', echo=lambda _: None)
    card = (tmp_path / 'rel' / r.repo_id.split('/')[1] / 'README.md').read_text()
    assert r.paper_top1 is None and '94.53' not in card
    assert '| Table 2 row | none (started from --initial-checkpoint in1k.pth; the paper trained from scratch) |' \
        in card


@pytest.mark.extended
@pytest.mark.parametrize('resumed', [False, True], ids=['recorded', 'resumed-without-saying-so'])
def test_a_fine_tuned_run_is_named_and_tagged_as_fine_tuned(resumed, tmp_path):
    """A run of --initial-checkpoint was released as sl_vit_32.sl-cifar10-s0 with the tag sl_vit_32.cifar10 (the
    card: 'timm.create_model("sl_vit_32.cifar10", pretrained=True) loads these weights'), the name and tag of the
    paper's from-scratch row: a fine-tuned run that scored better took the tag from the from-scratch run of the same
    model and dataset."""
    _run(tmp_path, 'vit-sl-s0', {}, [40., 50.])
    _run(tmp_path, 'vit-sl-ft-s0', {}, [40., 90.])
    run = tmp_path / 'runs' / 'vit-sl-ft-s0'
    checkpoint = torch.load(run / 'model_best.pth.tar', weights_only=False)
    vars(checkpoint['args']).update(initial_checkpoint='/data/in1k.pth')
    torch.save(checkpoint, run / 'model_best.pth.tar')
    in_yaml = dict(initial_checkpoint='', resume=str(run / 'last.pth.tar')) if resumed else {}
    (run / 'args.yaml').write_text(json.dumps(dict(vars(checkpoint['args']), **in_yaml)))
    lines = []
    tuned, scratch = release([tmp_path / 'runs'], tmp_path / 'rel', 'o', echo=lines.append)
    assert (scratch.repo_id, tuned.repo_id) == ('o/sl_vit_32.sl-cifar10-s0', 'o/sl_vit_32.sl-ft-cifar10-s0')
    assert tuned.started_from == '--initial-checkpoint in1k.pth' and scratch.started_from is None
    entries = json.loads((tmp_path / 'rel' / 'pretrained_entries.json').read_text())
    assert {tag: e['hf_hub_id'] for tag, e in entries.items()} == {
        'sl_vit_32.cifar10': scratch.repo_id, 'sl_vit_32.ft_cifar10': tuned.repo_id}
    card = (tmp_path / 'rel' / 'sl_vit_32.sl-ft-cifar10-s0' / 'README.md').read_text()
    assert 'timm.create_model("sl_vit_32.ft_cifar10", pretrained=True)' in card and '"sl_vit_32.cifar10"' not in card


@pytest.mark.extended
def test_a_run_extended_with_more_epochs_lists_each_sessions_command(tmp_path):
    """A run of --epochs 1 resumed with --epochs 2 (reproduce's documented extension) was carded as one command from
    scratch with --epochs 2 and `epochs: 2`, although its first epoch ran under a 1-epoch schedule."""
    _run(tmp_path, 'vit-sl-s0', {}, [40., 50.])
    run = tmp_path / 'runs' / 'vit-sl-s0'

    def session(start, before, after, status='exited', code=0):
        return dict(status=status, code=code, seconds=1., devices='', epochs=[before, after], start=start)

    def card(sessions):
        (run / 'sessions.json').write_text(json.dumps(sessions))
        out = tmp_path / f'rel{len(list(tmp_path.glob("rel*")))}'
        release([tmp_path / 'runs'], out, 'o', echo=lambda line: None)
        return (out / 'sl_vit_32.sl-cifar10-s0' / 'README.md').read_text()

    first = PORTABLE.replace(' --epochs 3', ' --epochs 1')
    second = PORTABLE.replace(' --epochs 3', ' --resume OUTPUT/vit-sl-s0/last.pth.tar --epochs 2')
    text = card([session('new', 0, 1), session('resume', 1, 2)])
    assert 'Exact train.py command' not in text and f'\n{PORTABLE}\n' not in text
    assert ('This run was extended from 1 to 2 epochs (its sessions.json): train.py ran it once per schedule and '
            'resumed it each time with a larger `--epochs`, so one command from scratch does not reproduce it '
            'exactly') in text
    assert f'```bash\n{first}\n{second}\n```' in text
    assert ("`epochs: 2` is the last session's: the run was extended from 1 epochs (its first 1 ran under a schedule "
            "of `--epochs 1`, then it was resumed)") in text
    # an interrupted session resumed under the same --epochs, or sessions before a start from scratch: one schedule
    for sessions in ([session('new', 0, 1, 'killed', -9), session('resume', 1, 2)],
                     [session('new', 0, 1), session('new', 0, 2)]):
        text = card(sessions)
        assert f'Exact train.py command (paths replaced by DATA / OUTPUT):\n\n```bash\n{PORTABLE}\n```' in text
        assert 'extended' not in text


def test_runs_whose_repository_names_differ_only_in_case_are_refused(tmp_path, capsys):
    """The Hub's repository names ignore case: Run1 and run1 would push into one repository, the second run's weights
    over the first's."""
    for name, seed in (('Run1', 0), ('run1', 1)):
        _run(tmp_path, name, {}, [40., 60.], seed=seed)
    argv = ['release', str(tmp_path / 'runs'), '--org', 'o', '--out', str(tmp_path / 'rel'), '--name-pattern',
            '{model}-{run}']
    err = _fails(argv, capsys)
    assert err.startswith(f"timm-sl release: --name-pattern '{{model}}-{{run}}' names both "
                          f"{tmp_path / 'runs' / 'Run1'} and {tmp_path / 'runs' / 'run1'} o/sl_vit_32-run1 (the Hub "
                          f"ignores case)"), err
    assert not (tmp_path / 'rel').exists()


def test_a_run_whose_args_yaml_names_no_model_is_released_as_its_checkpoint_records(tmp_path):
    """An args.yaml without `model` / `model_kwargs` (cut or edited; export takes the checkpoint's arch / args): was
    AttributeError: 'NoneType' object has no attribute 'startswith'."""
    model = _run(tmp_path, 'r', dict(depth=1), [40., 60.])
    args = json.loads((tmp_path / 'runs' / 'r' / 'args.yaml').read_text())
    del args['model'], args['model_kwargs']
    (tmp_path / 'runs' / 'r' / 'args.yaml').write_text(json.dumps(args))
    marker = json.loads((tmp_path / 'runs' / 'r' / 'done.json').read_text())  # the SL row of -- --model-kwargs depth=1
    (tmp_path / 'runs' / 'r' / 'done.json').write_text(json.dumps(dict(marker, variant='sl')))
    r, = release([tmp_path / 'runs'], tmp_path / 'rel', 'org', echo=lambda _: None)
    assert (r.model, r.model_kwargs, r.variant, r.repo_id) == ('sl_vit_32', dict(depth=1), 'sl',
                                                               'org/sl_vit_32.sl-cifar10-s0')
    loaded = timm.create_model(f'local-dir:{r.folder}', pretrained=True).eval()
    x = torch.randn(1, 3, 32, 32)
    with torch.no_grad():
        torch.testing.assert_close(loaded(x), model(x))


@pytest.mark.parametrize('seed', ['', 'seed: null\n'])
def test_a_run_whose_args_yaml_lost_its_seed_is_named_by_its_checkpoints_seed(seed, tmp_path):
    """An args.yaml whose seed line was cut (found by mutating args.yaml through release at random) was released as
    o/sl_vit_32.sl-cifar10-sNone with a card of seed None, though its checkpoint records the seed it trained with."""
    _run(tmp_path, 'r', {}, [40., 80.], seed=3)
    args = json.loads((tmp_path / 'runs' / 'r' / 'args.yaml').read_text())
    del args['seed']
    (tmp_path / 'runs' / 'r' / 'args.yaml').write_text(json.dumps(args)[:-1] + ', "seed": null}' if seed else
                                                        json.dumps(args))
    result = release([tmp_path / 'runs' / 'r'], tmp_path / 'o', 'o', echo=lambda line: None)
    assert [(r.repo_id, r.seed) for r in result] == [('o/sl_vit_32.sl-cifar10-s3', 3)]
    assert '| seed | 3 |' in (tmp_path / 'o' / 'sl_vit_32.sl-cifar10-s3' / 'README.md').read_text()


def test_an_args_yaml_mutated_at_random_names_its_release_or_is_refused_in_one_line(tmp_path):
    """200 copies of a run's args.yaml, each with one or two values replaced by a hostile one (None, -1, NaN, a list,
    a dict, a name with a line break ...), a key dropped, or its text edited (a line dropped, doubled or cut): each is
    read for release and named as the run records it (the seed args.yaml gives, else its checkpoint's), or refused in
    one line naming the run; never another error. (It found a seed or dataset that is no number / name refused as
    --name-pattern's fault, a dataset the Hub cannot name refused without the run, a model name with a line break
    splitting done.json's refusal in two, and a lost seed line named -sNone.)"""
    import random
    import yaml
    from timm_sl.tools.release import DEFAULT_PATTERN, read_release_record
    run = tmp_path / 'runs' / 'r'
    _run(tmp_path, 'r', dict(depth=1), [40., 80., 70.], seed=3)
    (run / 'done.json').write_text(json.dumps(dict(family='vit', variant='sl', epochs=3, dataset='cifar10')))
    args = dict(json.loads((run / 'args.yaml').read_text()), interpolation='bicubic', img_size=32, crop_pct=0.9,
                class_map='', resume='', initial_checkpoint='', input_size=None, in_chans=None, gp=None, amp=False)
    hostile = [None, -1, 0, 10 ** 30, float('nan'), float('inf'), '', [], {}, [1, 2], {'a': 1}, 'x\ny', '/no/such',
               True, 1.5, 'sl_vit_32', 'sl_pit_32', 'cifar10', 'torch/cifar100', 'caf\u00e9', 'a..b', 224]
    rng = random.Random(25)
    for case in range(200):
        edited = json.loads(json.dumps(args))
        for _ in range(rng.randint(1, 2)):
            key = rng.choice(list(edited))
            if isinstance(edited[key], (dict, list)) and edited[key] and rng.random() < .5:
                inner = edited[key]
                inner[rng.choice(list(inner) if isinstance(inner, dict) else range(len(inner)))] = rng.choice(hostile)
            elif rng.random() < .15:
                del edited[key]
            else:
                edited[key] = rng.choice(hostile)
        text = yaml.safe_dump(edited) if rng.random() < .5 else json.dumps(edited)
        if rng.random() < .3:
            lines = yaml.safe_dump(args).splitlines(True)
            j = rng.randrange(len(lines))
            lines[j:j + 1] = rng.choice([[], [lines[j]] * 2, [lines[j][:rng.randrange(len(lines[j]) + 1)]]])
            text = ''.join(lines)
        (run / 'args.yaml').write_text(text)
        try:
            record = read_release_record(run)
            name = repo_name(DEFAULT_PATTERN, record)
        except (ValueError, OSError) as e:
            assert str(run) in str(e) and '\n' not in str(e), (text, str(e))
            continue
        given = yaml.safe_load(text).get('seed')
        seed = given if isinstance(given, int) and not isinstance(given, bool) else 3
        variant = 'sl-ft' if record.started_from() else 'sl'  # a --initial-checkpoint: fine-tuned
        assert isinstance(record.dataset, str) and record.seed == seed, (text, name)
        assert name == f'sl_vit_32.{variant}-{record.dataset}-s{seed}', (text, name)


def test_a_run_folder_without_a_checkpoint_is_said_to_be_skipped(tmp_path):
    """A run that failed before its first checkpoint (args.yaml, no model_best / last; a checkpoint-N.pth.tar is not
    the run's result) was left out of a release without a word."""
    _run(tmp_path, 'vit-sl-s0', {}, [40., 50.])
    _run(tmp_path, 'vit-sl-s1', {}, [40., 50.], seed=1)
    failed = tmp_path / 'runs' / 'vit-sl-s1'
    (failed / 'model_best.pth.tar').rename(failed / 'checkpoint-1.pth.tar')
    said = []
    r, = release([tmp_path / 'runs'], tmp_path / 'rel', 'o', echo=said.append)
    assert r.run_dir == str(tmp_path / 'runs' / 'vit-sl-s0')
    assert said[0] == (f'skipped: {failed} holds an args.yaml but no model_best.pth.tar or last.pth.tar (a run that '
                       f'failed before its first checkpoint, or whose checkpoints were moved)')


@pytest.mark.parametrize('pattern', ['release.json', 'Release_Manifest.json', 'pretrained_entries.json'])
def test_a_name_pattern_that_names_a_file_release_writes_is_refused_before_writing(pattern, tmp_path, capsys):
    """--name-pattern release.json exported the run into the folder OUT/release.json, then failed writing the file of
    that name with 'relA/release.json: is a directory' (a half release, and a reason that named no option)."""
    _run(tmp_path, 'vit-sl-s0', {}, [40., 50.])
    out = tmp_path / 'rel'
    assert _fails(['release', str(tmp_path / 'runs'), '--org', 'o', '--out', str(out), '--name-pattern', pattern],
                  capsys) == (f"timm-sl release: --name-pattern {pattern!r} names {tmp_path / 'runs' / 'vit-sl-s0'} "
                              f"{pattern!r}, a file release writes in --out; allowed: a pattern that names no file of "
                              f"release.json, pretrained_entries.json, release_manifest.json")
    assert not out.exists()


def test_label_names_that_do_not_fit_one_of_the_runs_are_refused_before_writing(tmp_path, capsys):
    """Runs of 3 and 4 classes released with 3 --label-names: the first was exported (and recorded), then the second
    failed: a half release; each run is now held against the names before anything is written."""
    _run(tmp_path, 'a', {}, [40., 50.], classes=3)
    _run(tmp_path, 'b', {}, [40., 50.], classes=4, seed=1)
    (tmp_path / 'labels.txt').write_text('cat\ndog\nfox\n')
    out = tmp_path / 'rel'
    assert _fails(['release', str(tmp_path / 'runs'), '--org', 'o', '--out', str(out), '--label-names',
                   str(tmp_path / 'labels.txt')], capsys) == (
        f'timm-sl release: {tmp_path / "labels.txt"}: 3 label names given but {tmp_path / "runs" / "b"} has 4 classes '
        f'(its args.yaml); allowed: '
        f'--label-names with one name per class of every run released (release runs of other class counts one at a '
        f'time)')
    assert not out.exists()


@pytest.mark.extended
def test_linked_run_folders_are_released(tmp_path, capsys):
    """Path.rglob does not enter linked folders (before Python 3.13): a folder of links to run folders kept elsewhere
    was 'holds no train.py run', and beside a real run a linked one was left out, silently; a link back up does not
    loop."""
    _run(tmp_path / 'elsewhere', 'vit-sl-s1', {}, [40., 50.], seed=1)
    _run(tmp_path, 'vit-sl-s0', {}, [40., 50.])
    (tmp_path / 'runs' / 'linked').symlink_to(tmp_path / 'elsewhere' / 'runs' / 'vit-sl-s1')
    (tmp_path / 'runs' / 'up').symlink_to(tmp_path / 'runs')
    released = release([tmp_path / 'runs'], tmp_path / 'rel', 'o', echo=lambda _: None)
    assert sorted(r.repo_id for r in released) == ['o/sl_vit_32.sl-cifar10-s0', 'o/sl_vit_32.sl-cifar10-s1']


@pytest.mark.parametrize('links_first', [True, False])
def test_a_run_linked_beside_itself_is_named_by_its_own_folder(links_first, tmp_path, monkeypatch):
    """os.walk meets a run once, by the path it lists first: a link 'b' to run folder 'a' beside it gave a run named
    'b' (its repository 'o/b', its card's source 'runs/b') where the folder listed 'b' before 'a'."""
    import timm_sl.tools.runs
    walk = os.walk

    def ordered(*args, **kwargs):  # the file system's listing order, links first or last
        for root, folders, names in walk(*args, **kwargs):
            folders.sort(key=lambda f: os.path.islink(os.path.join(root, f)) != links_first)
            yield root, folders, names

    monkeypatch.setattr(timm_sl.tools.runs.os, 'walk', ordered)
    _run(tmp_path, 'a', {}, [40., 50.])
    (tmp_path / 'runs' / 'b').symlink_to('a')
    (tmp_path / 'runs' / 'c').mkdir()
    (tmp_path / 'runs' / 'c' / 'up').symlink_to('../a')
    assert find_runs([tmp_path / 'runs']) == [tmp_path / 'runs' / 'a']
    assert find_runs([tmp_path / 'runs' / 'b']) == [tmp_path / 'runs' / 'b']  # given as the link: as given


def test_a_failed_upload_leaves_the_release_recorded(reproduced, tmp_path, monkeypatch):
    """release.json and pretrained_entries.json were written after every upload: when the second upload failed, the
    folders were exported and the first pushed, but nothing recorded which (or the tag entries)."""
    import timm_sl.tools.hub
    from timm_sl.tools.errors import ToolError

    def push(folder, repo_id, **kw):
        if repo_id.endswith('-1'):
            raise ToolError(f'upload of {folder} to {repo_id} failed: 503')
        return f'https://hub/{repo_id}/commit'

    monkeypatch.setattr(timm_sl.tools.hub, 'push_folder', push)
    root, _ = reproduced
    with pytest.raises(ToolError):
        release([root / 'runs' / 'vit-sl-s0', root / 'runs' / 'vit-sl-s1'], tmp_path, 'org', '{family}-{seed}',
                push=True, echo=lambda _: None)
    recorded = json.loads((tmp_path / 'release.json').read_text())
    assert [(r['repo_id'], r['pushed']) for r in recorded] == [('org/vit-0', 'https://hub/org/vit-0/commit'),
                                                               ('org/vit-1', None)]
    assert list(json.loads((tmp_path / 'pretrained_entries.json').read_text())) == ['sl_vit_32.cifar10']
    assert release([root / 'runs'], tmp_path, 'org', '{family}-{seed}-{variant}', echo=lambda _: None)  # its own files


def test_a_run_given_twice_is_released_once(tmp_path):
    """A run named by its folder and by a folder above it, once relative and once absolute (or through a link), was
    refused as two runs whose names collide ('--name-pattern names both RUN and RUN')."""
    _run(tmp_path, 'vit-sl-s0', {}, [40., 50.])
    (tmp_path / 'link').symlink_to(tmp_path / 'runs' / 'vit-sl-s0')
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        lines = []
        released = release([Path('runs'), tmp_path / 'runs' / 'vit-sl-s0', Path('link')], tmp_path / 'rel', 'o',
                           echo=lines.append)
    finally:
        os.chdir(cwd)
    assert [r.repo_id for r in released] == ['o/sl_vit_32.sl-cifar10-s0'] and not any('skipped' in x for x in lines)


@pytest.mark.parametrize('fault', ['weights', 'args', 'nan'])
def test_a_later_run_whose_checkpoint_does_not_fit_is_refused_before_writing(fault, tmp_path, capsys, monkeypatch):
    """The second run's checkpoint holds another model's weights (or another run's args, or NaN weights: a diverged
    run): the first run was exported and recorded, then the second failed (a half release, no release.json); every run
    is now checked before anything is written, its checkpoint memory-mapped (not held in memory) for that check."""
    import timm_sl.tools.runs
    _run(tmp_path, 'a', {}, [40., 50.])
    _run(tmp_path, 'b', dict(depth=1), [40., 50.], seed=1)
    (tmp_path / 'runs' / 'b' / 'done.json').unlink()  # its variant is no Table 2 row's
    path = tmp_path / 'runs' / 'b' / 'model_best.pth.tar'
    saved = torch.load(path, weights_only=False)
    if fault == 'weights':
        saved['state_dict_ema'] = timm.create_model('sl_vit_32', num_classes=3, depth=2).state_dict()
        says = (f"{path} does not fit sl_vit_32 {{'depth': 1, 'num_classes': 3}} (it was trained as sl_vit_32 "
                f"{{'depth': 1, 'num_classes': 3}}): 12 unexpected key(s) (blocks.1.norm1.weight, blocks.1.norm1.bias, "
                f"blocks.1.attn.temperature, ...)")
    elif fault == 'args':
        saved['args'].lr = 0.1
        saved['args'].num_classes = 5
        says = (f"{path.parent / 'args.yaml'} is not the args.yaml of {path} (num_classes 3 there, 5 in the "
                f"checkpoint): another run's, cut short or edited?; allowed: the args.yaml train.py wrote with this "
                f"checkpoint")
    else:
        saved['state_dict_ema']['head.bias'] = torch.full((3,), float('nan'))
        says = (f'{path} holds NaN or infinite weights (1 tensor(s): head.bias): the run had diverged when it was '
                f'saved; allowed: a checkpoint of an epoch before that (checkpoint-N.pth.tar of its run folder)')
    torch.save(saved, path)
    maps = []
    load = torch.load
    monkeypatch.setattr(torch, 'load', lambda *a, **kw: maps.append(kw.get('mmap', False)) or load(*a, **kw))
    out = tmp_path / 'rel'
    assert _fails(['release', str(tmp_path / 'runs'), '--org', 'o', '--out', str(out)], capsys) == \
        f'timm-sl release: {says}'
    assert not out.exists() and maps[-2:] == [True, True]  # a's and b's checks


@pytest.mark.parametrize('name,what', [
    ('sl_vit_32.sl-cifar10-s0/README.md', 'the README.md of a released model'),
    ('release.json', 'the release.json of a release'),
    ('release_manifest.json', 'the release_manifest.json of a release'),
    ('x/config.json', 'the config.json of an export'),
])
def test_a_fifo_where_release_or_export_writes_is_refused(name, what, tmp_path, capsys):
    """A FIFO in --out where release (or export) writes a file: hashing it to see whether it was release's own, or
    writing it (with --overwrite), waited for a reader forever."""
    import signal

    def hung(*_):
        raise AssertionError(f'timm-sl hung on the FIFO {name}')

    _run(tmp_path, 'vit-sl-s0', {}, [40., 50.])
    out = tmp_path / 'rel'
    (out / name).parent.mkdir(parents=True)
    os.mkfifo(out / name)
    argv = (['export', str(tmp_path / 'runs' / 'vit-sl-s0'), '--out', str(out / 'x')] if name.startswith('x/') else
            ['release', str(tmp_path / 'runs'), '--org', 'o', '--out', str(out)])
    old = signal.signal(signal.SIGALRM, hung)
    signal.alarm(60)
    try:
        assert _fails(argv + ['--overwrite'], capsys) == (
            f'timm-sl {argv[0]}: {out / name} is a FIFO (named pipe), not a regular file; expected {what}; allowed: '
            f'move it away')
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    assert sorted(p.name for p in out.rglob('*')) == sorted({Path(name).name, *Path(name).parent.parts})


def test_a_folder_where_export_writes_a_file_is_refused_before_writing(tmp_path, capsys):
    """export --overwrite into a folder whose README.md is a folder wrote the weights and config.json, then ended in
    'README.md: is a directory' (no allowed), a half export left behind."""
    _run(tmp_path, 'vit-sl-s0', {}, [40., 50.])
    (tmp_path / 'o' / 'README.md').mkdir(parents=True)
    assert _fails(['export', str(tmp_path / 'runs' / 'vit-sl-s0'), '--out', str(tmp_path / 'o'), '--overwrite'],
                  capsys) == (f'timm-sl export: {tmp_path / "o" / "README.md"} is a folder; expected the README.md '
                              f'of an export; allowed: move it away')
    assert [p.name for p in (tmp_path / 'o').iterdir()] == ['README.md']


@pytest.mark.parametrize('where', ['out', 'repo-folder', 'export-out', 'device'])
def test_a_fifo_or_device_where_release_or_export_makes_a_folder_is_named_as_such(where, tmp_path, capsys):
    """`release --out FIFO` (or a FIFO where a model's folder goes, or `export --out FIFO`, `--out /dev/null`) was
    called 'a file': it is a FIFO (a device), and nothing waits on it."""
    _run(tmp_path, 'vit-sl-s0', {}, [40., 50.])
    out = tmp_path / 'rel'
    fifo = {'out': out, 'export-out': out, 'repo-folder': out / 'sl_vit_32.sl-cifar10-s0'}.get(where)
    if fifo is not None:
        fifo.parent.mkdir(parents=True, exist_ok=True)
        os.mkfifo(fifo)
    command = 'export' if where == 'export-out' else 'release'
    argv = ([command, str(tmp_path / 'runs' / 'vit-sl-s0')] if command == 'export' else
            [command, str(tmp_path / 'runs'), '--org', 'o'])
    err = _fails(argv + ['--out', str(out if where == 'repo-folder' else fifo or '/dev/null')], capsys)
    kind = 'a device' if where == 'device' else 'a FIFO (named pipe)'
    name = f'--out {fifo or "/dev/null"}' if where != 'repo-folder' else str(fifo)
    assert err.startswith(f'timm-sl {command}: {name} is {kind}') and 'is a file' not in err, err
    assert sorted(p.name for p in tmp_path.joinpath('rel').glob('*')) == ([fifo.name] if where == 'repo-folder' else [])


@pytest.mark.parametrize('name', ['x/README.md', 'x/model.safetensors', 'sl_vit_32.sl-cifar10-s0/config.json',
                                  'release.json', 'release_manifest.json'])
def test_a_link_where_release_or_export_writes_is_refused_and_its_file_kept(name, tmp_path, capsys):
    """--overwrite (or a manifest that matched the file a link names) wrote an export's README.md, model.safetensors,
    a release's config.json or release.json through a link in --out: the user's file it named, elsewhere, was
    replaced by the card / weights."""
    _run(tmp_path, 'vit-sl-s0', {}, [40., 50.])
    out = tmp_path / 'rel'
    (out / name).parent.mkdir(parents=True)
    mine = tmp_path / 'my notes.md'
    mine.write_text('mine\n')
    (out / name).symlink_to(mine)
    argv = (['export', str(tmp_path / 'runs' / 'vit-sl-s0'), '--out', str(out / 'x')] if name.startswith('x/') else
            ['release', str(tmp_path / 'runs'), '--org', 'o', '--out', str(out)])
    assert _fails(argv + ['--overwrite'], capsys) == (
        f'timm-sl {argv[0]}: {out / name} is a link to {mine} where timm-sl {argv[0]} writes a file, which would '
        f'replace the file it links to; allowed: remove the link, or move it away')
    assert mine.read_text() == 'mine\n' and sorted(p.name for p in out.rglob('*')) == sorted(
        {Path(name).name, *Path(name).parent.parts} - {'.'})


@pytest.mark.skipif(not Path('/proc/self').is_dir(), reason='a /proc file system')
@pytest.mark.parametrize('command', ['export', 'release'])
def test_an_out_folder_the_system_will_not_create_is_named_as_such(command, tmp_path, capsys):
    """export / release --out /proc/x said '/proc/x: no such file or directory', as if an input were missing."""
    _run(tmp_path, 'vit-sl-s0', {}, [40., 50.])
    argv = ([command, str(tmp_path / 'runs' / 'vit-sl-s0')] if command == 'export' else
            [command, str(tmp_path / 'runs'), '--org', 'o'])
    assert _fails(argv + ['--out', '/proc/timm-sl-x'], capsys) == (
        f'timm-sl {command}: --out /proc/timm-sl-x: cannot write into folder /proc (no such file or directory), where '
        f'the {command} folder goes; allowed: a place this user may write (not /proc, /sys)')


def test_a_run_resumed_with_other_arguments_does_not_call_its_last_command_exact(tmp_path):
    """command.txt is the last session's: a run whose best epoch trained with --lr 0.001, resumed with --lr 0.003,
    was carded 'Exact train.py command' with the --lr 0.003 command, beside a recipe saying that no one run of it
    reproduces these weights."""
    _run(tmp_path, 'vit-sl-s0', {}, [40., 50.])
    run = tmp_path / 'runs' / 'vit-sl-s0'
    saved = torch.load(run / 'model_best.pth.tar', weights_only=False)
    saved['args'].lr = 0.001
    torch.save(saved, run / 'model_best.pth.tar')
    release([tmp_path / 'runs'], tmp_path / 'rel', 'o', echo=lambda line: None)
    text = (tmp_path / 'rel' / 'sl_vit_32.sl-cifar10-s0' / 'README.md').read_text()
    assert 'Exact train.py command' not in text
    assert ("The last session's train.py command (paths replaced by DATA / OUTPUT); the run was resumed with other "
            "arguments than the session that saved these weights (the training recipe below names them), so it alone "
            f"does not reproduce them:\n\n```bash\n{PORTABLE}\n```") in text
    assert 'the session that saved these weights trained with `lr: 0.001`' in text


def test_a_class_map_run_without_label_names_gets_no_tag(tmp_path):
    """A run of train.py --class-map learned the map's numbering of the classes (Tiny-ImageNet's wnids.txt order, not
    the class folders' sorted order): released without label names, it became the tag MODEL.DATASET, which promises
    the dataset's classes in their own order, with nothing saying otherwise."""
    data = tmp_path / 'data'
    (data / 'train').mkdir(parents=True)
    (data / 'train' / 'map.txt').write_text('fox\ncat\ndog\n')
    _run(tmp_path, 'vit-sl-s0', {}, [40., 50.])
    run = tmp_path / 'runs' / 'vit-sl-s0'
    for name in ('args.yaml', 'model_best.pth.tar'):  # the map in both: train.py saves its arguments in each
        if name == 'args.yaml':
            args = json.loads((run / name).read_text())
            (run / name).write_text(json.dumps(dict(args, class_map='map.txt', data_dir=str(data), dataset='')))
        else:
            saved = torch.load(run / name, weights_only=False)
            vars(saved['args']).update(class_map='map.txt', data_dir=str(data), dataset='')
            torch.save(saved, run / name)
    released = release([tmp_path / 'runs'], tmp_path / 'rel', 'o', dataset='mydata', echo=lambda line: None)
    assert json.loads((tmp_path / 'rel' / 'pretrained_entries.json').read_text()) == {}
    assert released[0].class_map == 'map.txt'
    assert 'Once the package lists the tag' not in Path(released[0].folder, 'README.md').read_text()
    names = tmp_path / 'names.txt'
    names.write_text('fox\ncat\ndog\n')  # the names say the map's numbering: the tag carries them
    released = release([tmp_path / 'runs'], tmp_path / 'rel2', 'o', dataset='mydata', label_names=names,
                       echo=lambda line: None)
    entries = json.loads((tmp_path / 'rel2' / 'pretrained_entries.json').read_text())
    assert entries['sl_vit_32.mydata']['label_names'] == ['fox', 'cat', 'dog']


@pytest.mark.parametrize('given', ['torch/image_folder', 'torch/folder', 'ImageFolder', 'imagetar'])
def test_an_image_folder_named_by_its_reader_records_no_dataset(given, tmp_path, capsys):
    """train.py's --dataset torch/image_folder (or ImageFolder, its help's word for the default) reads the --data-dir
    image folder: release named the run sl_vit_32.sl-image_folder-s0, carded it as trained on 'image_folder' and
    refused --dataset for it ('records the dataset 'image_folder'')."""
    _run(tmp_path, 'r', {}, [40.], dataset=given, classes=10)
    (tmp_path / 'runs' / 'r' / 'done.json').unlink()
    argv = ['release', str(tmp_path / 'runs'), '--org', 'o', '--out', str(tmp_path / 'rel')]
    assert _fails(argv, capsys).startswith(f'timm-sl release: {tmp_path / "runs" / "r"} records no dataset (')
    assert main(argv + ['--dataset', 'svhn']) == 0
    assert json.loads((tmp_path / 'rel' / 'release.json').read_text())[0]['repo_id'] == 'o/sl_vit_32.sl-svhn-s0'
    assert main(['export', str(tmp_path / 'runs' / 'r'), '--out', str(tmp_path / 'e')]) == 0
    card = (tmp_path / 'e' / 'README.md').read_text()
    assert 'datasets:' not in card and '# sl_vit_32\n' in card and 'folder' not in card.split('## Training')[0]


def test_weights_of_a_diverged_epoch_get_no_pretrained_tag(tmp_path, capsys):
    """The only run of sl_vit_32 on cifar10 diverged (its model_best epoch's eval_loss nan, top-1 NaN): release wrote
    the tag entry sl_vit_32.cifar10 for its weights all the same, to be merged and published as trained weights."""
    _run(tmp_path, 'r', {}, [40., 50.])
    run = tmp_path / 'runs' / 'r'
    (run / 'summary.csv').write_text('epoch,train_loss,eval_loss,eval_top1,eval_top5\n0,1,1,40,99\n1,nan,nan,33,66\n')
    assert main(['release', str(tmp_path / 'runs'), '--org', 'o', '--out', str(tmp_path / 'rel')]) == 0
    assert '0 pretrained tag entries in' in capsys.readouterr().out
    assert json.loads((tmp_path / 'rel' / 'pretrained_entries.json').read_text()) == {}

    def strict(word):  # JSON has no NaN: release.json held a bare NaN, which JSON readers other than Python's refuse
        raise ValueError(f'release.json holds {word}')
    record, = json.loads((tmp_path / 'rel' / 'release.json').read_text(), parse_constant=strict)
    assert (record['weights_epoch'], record['weights_top1'], record['weights_diverged']) == (2, None, True)
    (run / 'summary.csv').write_text('epoch,train_loss,eval_loss,eval_top1,eval_top5\n0,1,1,40,99\n1,1,1,50,99\n')
    assert main(['release', str(tmp_path / 'runs'), '--org', 'o', '--out', str(tmp_path / 'rel2')]) == 0
    assert list(json.loads((tmp_path / 'rel2' / 'pretrained_entries.json').read_text())) == ['sl_vit_32.cifar10']


def test_release_reads_each_file_of_a_run_once(tmp_path, monkeypatch):
    from timm_sl.tools.release import release
    run = tmp_path / 'runs' / 'r'
    _train_run(run, 'sl_vit_32', dict(depth=1), dataset='')
    (run / 'command.txt').write_text('python train.py --model sl_vit_32\n')
    reads = collections.Counter()
    real_open = io.open

    def counting_open(file, mode='r', *args, **kwargs):
        if 'r' in mode and isinstance(file, (str, os.PathLike)):
            reads[Path(file).resolve()] += 1
        return real_open(file, mode, *args, **kwargs)

    monkeypatch.setattr(io, 'open', counting_open)
    monkeypatch.setattr(builtins, 'open', counting_open)
    # Path.open: on Python 3.10 it reaches io.open through a reference taken at import, which the patch above misses
    monkeypatch.setattr(Path, 'open', lambda self, mode='r', *a, **k: counting_open(self, mode, *a, **k))
    release([tmp_path / 'runs'], tmp_path / 'rel', 'org', dataset='digits', echo=lambda _: None)
    runs = (tmp_path / 'runs').resolve()  # what release wrote under rel/ it reads again to record its sha256
    ours = {p.relative_to(tmp_path.resolve()): n for p, n in reads.items() if runs in p.parents}
    assert ours and all(n == 1 for n in ours.values()), ours
    assert {Path('runs/r/args.yaml'), Path('runs/r/summary.csv'), Path('runs/r/model_best.pth.tar')} <= set(ours)


def test_release_refuses_weights_of_nan_or_infinity(tmp_path):
    """export refused a checkpoint of NaN weights, release exported it (its model output NaN wherever it loaded):
    both write a folder through export_run, which refuses them before anything is written."""
    from timm_sl.tools.release import release
    model = _run(tmp_path, 'vit-sl-s0', {}, [40., 80.])
    run = tmp_path / 'runs' / 'vit-sl-s0'
    saved = torch.load(run / 'model_best.pth.tar', weights_only=False)
    saved['state_dict_ema'] = dict(model.state_dict(), **{'head.bias': torch.full((3,), float('nan'))})
    torch.save(saved, run / 'model_best.pth.tar')
    with pytest.raises(ValueError, match=r'model_best.pth.tar holds NaN or infinite weights \(1 tensor\(s\): '
                                         r'head.bias\): the run had diverged when it was saved'):
        release([tmp_path], tmp_path / 'out', 'timm-sl-test')
    assert not any((tmp_path / 'out').glob('*/config.json'))


def test_label_names_of_a_dataset_name_timm_reads_as_an_image_folder_are_checked(tmp_path, capsys):
    """train.py's --dataset cifar10 (no reader prefix) reads the --data-dir image folder in timm's order: label names
    that are its class folders in another order (sorted: c10 before c2) were exported and released unchecked, every
    prediction named by a wrong class."""
    data = tmp_path / 'data'
    classes = [f'c{i}' for i in range(1, 11)]
    for name in classes:
        (data / 'train' / name).mkdir(parents=True)
        (data / 'train' / name / 'x.png').write_bytes(b'')
    root = tmp_path / 'repro'
    _run(root, 'vit-sl-s0', {}, [40., 80.], classes=10, dataset='cifar10')
    run = root / 'runs' / 'vit-sl-s0'
    (run / 'args.yaml').write_text(json.dumps(dict(json.loads((run / 'args.yaml').read_text()), data_dir=str(data))))
    names = tmp_path / 'names.txt'
    names.write_text('\n'.join(sorted(classes)) + '\n')
    says = (f"--label-names puts 'c10' at class 1, but the run learned the class folders of {data / 'train'} in timm's "
            f"order, where 'c10' is class 9: a name of a class folder names that folder's class only; allowed: the "
            f"names in that order (c1, c2, c3, ...)")
    out = tmp_path / 'out'
    assert _fails(['export', str(run), '--out', str(out), '--label-names', str(names)], capsys) == \
        f'timm-sl export: {names}: {says}'
    with pytest.raises(ValueError, match='^' + re.escape(f'{names}: {says}')):
        release([root], tmp_path / 'release', 'org', label_names=str(names), echo=lambda line: None)
    assert not out.exists() and not (tmp_path / 'release').exists()
    names.write_text('\n'.join(classes) + '\n')
    assert main(['export', str(run), '--out', str(out), '--label-names', str(names)]) == 0
    assert json.loads((out / 'config.json').read_text())['label_names'] == classes


def test_a_run_of_tta_is_released_without_its_top1_as_a_result(tmp_path, capsys):
    """A run of train.py --tta 2 (whose validation averaged the outputs of two different images, scored by the first
    one's label): release printed 'best top-1 97.00', carded it as the measured top-1 beside the paper's and wrote
    the tag sl_vit_32.cifar10 chosen by it; now it says why that top-1 is no measurement, and writes no tag."""
    _run(tmp_path, 'r', {}, [40., 97.])
    run = tmp_path / 'runs' / 'r'
    (run / 'args.yaml').write_text(json.dumps(dict(json.loads((run / 'args.yaml').read_text()), tta=2)))
    out = tmp_path / 'rel'
    assert main(['release', str(tmp_path / 'runs'), '--org', 'me', '--out', str(out)]) == 0
    printed = capsys.readouterr().out
    why = ("measured with `--tta 2`: train.py's validation makes no augmented copies, so each score averaged the "
           "outputs of 2 different validation images and took the first one's label")
    assert f'(state_dict_ema, best top-1 - (not a measurement of these weights, {why})) as me/' in printed
    assert '97.00' not in printed and '0 pretrained tag entries in' in printed
    assert json.loads((out / 'pretrained_entries.json').read_text()) == {}
    record, = json.loads((out / 'release.json').read_text())
    assert (record['best_top1'], record['weights_top1'], record['top1_unmeasured']) == (None, None, why)
    card = next(out.glob('*/README.md')).read_text()
    section = card[card.index("## Reproduction of the paper's Table 2"):card.index('## Training recipe')]
    assert f'| measured best top-1 | - (not a measurement of these weights: {why}) |' in section
    assert '97.00' not in section and 'create_model("sl_vit_32.cifar10"' not in card
    assert f"This run's top-1 were {why}; they are not these weights' top-1 on the validation split." in card
    assert 'metrics:' not in card.split('---')[1]  # the header claims no accuracy metric for the Hub to index
    from timm_sl.tools.release import _top1_fields  # NaN outputs of the weights' epoch still say they diverged
    assert _top1_fields(float('nan'), measured=False) == dict(weights_top1=None, weights_diverged=True)
    assert _top1_fields(97.0, measured=False) == dict(weights_top1=None, weights_diverged=False)
    (run / 'args.yaml').write_text(json.dumps(dict(json.loads((run / 'args.yaml').read_text()), tta=0)))
    assert main(['release', str(tmp_path / 'runs'), '--org', 'me', '--out', str(tmp_path / 'rel2')]) == 0
    assert list(json.loads((tmp_path / 'rel2' / 'pretrained_entries.json').read_text())) == ['sl_vit_32.cifar10']


@pytest.mark.parametrize('command', ['release', 'export'])
def test_a_finished_runs_summary_cut_short_since_is_named(tmp_path, capsys, command):
    """A finished run's summary.csv cut short after done.json was written (a copy of the runs cut off): release
    skipped it as 'not a finished run ... (resume it to finish it)', which reproduce would not do (done.json marks it
    finished), and export carded its best top-1 and epochs from the rows left; both now name the file in one line."""
    _run(tmp_path, 'r', {}, [40., 80., 90.])
    run = tmp_path / 'runs' / 'r'
    text = (run / 'summary.csv').read_text()
    (run / 'summary.csv').write_text(text[:-8])  # the last row cut mid-write
    out = tmp_path / 'rel'
    argv = (['release', str(tmp_path / 'runs'), '--org', 'me', '--out', str(out)] if command == 'release' else
            ['export', str(run), '--out', str(out)])
    says = (f'{run}/summary.csv reaches epoch 2 of the 3 epochs {run}/done.json records as finished: it was cut short '
            f'or replaced since (a copy cut off, or train.py started again in the folder?), and its best top-1 and '
            f"epochs would be another run's; allowed: the run's whole summary.csv put back")
    if command == 'release':  # skipped, as an unfinished run is, with the others released
        _run(tmp_path, 'ok', {}, [40., 80.], seed=1)
        lines = []
        released = release([tmp_path / 'runs'], out, 'me', echo=lines.append)
        assert lines[0] == f'2/2: skipped: {says}'
        assert [r.seed for r in released] == [1]
    else:
        assert _fails(argv, capsys) == f'timm-sl export: {says}'
        assert not out.exists()
    (run / 'summary.csv').write_text(text)
    assert main(argv + ['--overwrite']) == 0


def _release_beside_a_good_seed(tmp_path: Path, capsys, summary: str, nan_weights: bool = False) -> Tuple[Path, list]:
    """Runs vit-sl-s0 (top-1 40 then 80) and vit-sl-s1 of ``summary`` (its summary.csv rows; ``nan_weights``: a NaN
    in its weights) released into tmp_path/rel: the second's folder, and the lines release printed."""
    _run(tmp_path, 'vit-sl-s0', {}, [40., 80.])
    _run(tmp_path, 'vit-sl-s1', {}, [40., 80.], seed=1)
    run = tmp_path / 'runs' / 'vit-sl-s1'
    if nan_weights:
        saved = torch.load(run / 'model_best.pth.tar', weights_only=False)
        saved['state_dict_ema']['head.bias'] = torch.full((3,), float('nan'))
        torch.save(saved, run / 'model_best.pth.tar')
    (run / 'summary.csv').write_text('epoch,train_loss,eval_loss,eval_top1,eval_top5\n' + summary)
    assert main(['release', str(tmp_path / 'runs'), '--org', 'o', '--out', str(tmp_path / 'rel')]) == 0
    return run, capsys.readouterr().out.splitlines()


def test_a_run_that_diverged_from_its_first_epoch_is_skipped_not_the_whole_release(tmp_path, capsys):
    """One seed of a sweep diverged from its first epoch (NaN weights, NaN top-1 in every epoch): release refused
    every run, advising a checkpoint-N.pth.tar it does not take; that run is now skipped with one line saying why and
    the others are released."""
    run, lines = _release_beside_a_good_seed(tmp_path, capsys, '0,nan,nan,33,66\n1,nan,nan,33,66\n', nan_weights=True)
    out = tmp_path / 'rel'
    assert lines[0] == (f'2/2: skipped: {run} diverged from its first epoch (summary.csv: a NaN eval_loss or '
                        f'top-1 in each of its 2 epochs), and its weights are NaN; allowed: runs with a finite '
                        f'top-1 (train it again, say with a lower --lr)')
    assert lines[1].startswith(f"1/2: {tmp_path / 'runs' / 'vit-sl-s0'} -> ")
    assert [r['seed'] for r in json.loads((out / 'release.json').read_text())] == [0]
    assert _fails(['release', str(run), '--org', 'o', '--out', str(tmp_path / 'rel2')], capsys) == (
        f'timm-sl release: no finished run to release under {run} (1 skipped); allowed: runs that trained their '
        f'planned epochs with a finite top-1')


def test_a_dry_run_with_private_says_the_repositories_would_be_private(reproduced, tmp_path):
    """``--private`` without ``--push``: the dry-run lines named a public-looking address and no privacy at all."""
    root, _ = reproduced
    lines = []
    result = release([root], tmp_path / 'out', 'o', private=True, echo=lines.append)
    dry = [line for line in lines if line.startswith('dry run: ')]
    assert dry and len(dry) == len(result)
    assert dry[0] == (f'dry run: would push {tmp_path / "out" / "sl_vit_32.base-cifar10-s0"} to '
                      f'https://huggingface.co/o/sl_vit_32.base-cifar10-s0 as a private repository (pass --push to '
                      f'upload)')
    assert all(' as a private repository (pass --push to upload)' in line for line in dry)


def test_release_lines_quote_folders_named_with_a_newline(tmp_path):
    """release's own lines wrote the run folder and --out as given: a name with a newline broke each line in two,
    neither half naming the folder (export / push / prepare-* already quoted them)."""
    _run(tmp_path / 'r\nz', 's\n0', {}, [40., 80.])
    out = tmp_path / 'o\nut'
    lines = []
    release([tmp_path / 'r\nz'], out, 'o', echo=lines.append)
    assert all('\n' not in line for line in lines), lines
    run, folder = repr(str(tmp_path / 'r\nz' / 'runs' / 's\n0')), repr(str(out / 'sl_vit_32.sl-cifar10-s0'))
    assert lines[0].startswith(f'1/1: {run} -> {folder} (')
    assert lines[1].startswith(f'dry run: would push {folder} to ')
    assert lines[-1].startswith(f"1 pretrained tag entry in {repr(str(out / 'pretrained_entries.json'))}")


@pytest.mark.parametrize('flag', ['push', 'private', 'overwrite'])
def test_release_refuses_a_switch_that_is_no_bool_before_anything(flag, reproduced, tmp_path, monkeypatch):
    """release(..., push='no') took the text for True and uploaded every run (overwrite='no' replaced changed files):
    each switch that is no bool is refused first, naming it, with nothing written or pushed."""
    import timm_sl.tools.hub as hub
    monkeypatch.setattr(hub, 'push_folder', lambda *a, **k: pytest.fail('pushed'))
    root, _ = reproduced
    with pytest.raises(TypeError, match=f"^release: {flag}='no' is invalid; allowed: True or False$"):
        release([root], tmp_path / 'out', 'timm-sl-test', **{flag: 'no'})
    assert not (tmp_path / 'out').exists()


@pytest.mark.extended  # a release of a real model and card: seconds
def test_a_command_txt_other_than_the_runs_args_yaml_is_not_carded_as_its_exact_command(tmp_path):
    """The run's command.txt run by hand with another --lr into its folder (the training of its weights, args.yaml and
    checkpoint): reproduce refuses to resume that folder, but release carded 'Exact train.py command ... --lr 0.003'
    above a recipe of lr 0.01. The card now says command.txt is not the weights' command, and what differs
    (RunRecord.command_differs, test_run_record.py)."""
    _run(tmp_path, 'vit-sl-s0', {}, [40., 50.])
    run = tmp_path / 'runs' / 'vit-sl-s0'
    args = dict(json.loads((run / 'args.yaml').read_text()), lr=0.01)
    (run / 'args.yaml').write_text(json.dumps(args))
    saved = torch.load(run / 'model_best.pth.tar', weights_only=False)
    saved['args'] = argparse.Namespace(**args)  # the by-hand training saved these weights
    torch.save(saved, run / 'model_best.pth.tar')
    release([tmp_path / 'runs'], tmp_path / 'rel', 'o', echo=lambda line: None)
    text = next((tmp_path / 'rel').glob('*/README.md')).read_text()
    assert 'Exact train.py command' not in text and PORTABLE not in text
    assert ("The run's recorded train.py command (command.txt) gives --lr 0.003 (args.yaml: 0.01): train.py was "
            "started again in its folder with other arguments (by hand?), which trained these weights, so its exact "
            "command is not known; the training recipe below lists the arguments args.yaml records.") in text


def test_a_run_of_nan_top1_in_every_epoch_but_finite_weights_is_skipped(tmp_path, capsys):
    """Every evaluation of a run NaN (say, under --amp overflowing in eval), its weights finite: its card says 'these
    weights are not a trained model', yet release would push it (it skipped only runs whose weights are NaN)."""
    run, lines = _release_beside_a_good_seed(tmp_path, capsys, '0,1.0,nan,nan,nan\n1,1.0,nan,nan,nan\n')
    out = tmp_path / 'rel'
    assert lines[0] == (f'2/2: skipped: {run} has no epoch with a finite top-1 (summary.csv: a NaN eval_loss or '
                        f'top-1 in each of its 2 epochs), so its weights, finite as they are, are not a trained '
                        f'model (its card says so); allowed: runs with a finite top-1 (train it again, say with a '
                        f'lower --lr or without --amp)')
    assert [r['seed'] for r in json.loads((out / 'release.json').read_text())] == [0]
    assert [p.name for p in out.iterdir() if p.name.endswith('-s1')] == []


def test_a_folder_this_user_cannot_read_is_passed_and_said_when_runs_are_looked_for(tmp_path, monkeypatch):
    """A disk's lost+found (root's, mode 700) or another user's folder beside the runs stopped the release ('cannot
    read this folder'), as a data folder's class would: a search for runs passes it, and says so."""
    from pathlib import Path
    _run(tmp_path, 'vit-sl-s0', {}, [40., 50.])
    locked = tmp_path / 'runs' / 'lost+found'
    locked.mkdir()
    scandir = os.scandir

    def refuse(path='.'):  # what the system does to a folder of mode 700 owned by another user (root reads it)
        if not isinstance(path, int) and Path(path) == locked:  # shutil walks folders by descriptor too
            raise PermissionError(13, 'Permission denied', str(path))
        return scandir(path)
    monkeypatch.setattr(os, 'scandir', refuse)
    said = []
    r, = release([tmp_path / 'runs'], tmp_path / 'rel', 'o', echo=said.append)
    assert r.run_dir == str(tmp_path / 'runs' / 'vit-sl-s0')
    assert said[0] == f'skipped: {locked} cannot be read (permission denied); a run in it is not released'


def test_label_names_are_checked_against_class_folders_of_non_ascii_names_under_a_latin1_locale(tmp_path,
                                                                                                 monkeypatch):
    """Under a Latin-1 locale Python reads the class folder 'café' (UTF-8 on disk) as 'cafÃ©', which no name of a
    --label-names file (UTF-8) equals: label names in another order than the run's classes were exported unchecked,
    every prediction named by a wrong class. The folders' names are now read as UTF-8 where they are."""
    from types import SimpleNamespace
    from timm_sl.tools.files import name_text
    from timm_sl.tools.hub import _check_folder_class_order
    classes = ['café', 'Straße', '日本']  # timm's order
    monkeypatch.setattr(sys, 'getfilesystemencoding', lambda: 'latin-1')
    data = tmp_path / 'data'
    for name in classes:  # the folder name as Python reads it under the Latin-1 locale
        folder = data / 'train' / name.encode('utf-8').decode('latin-1')
        folder.mkdir(parents=True)
        (folder / 'x.png').write_bytes(b'')
    assert [name_text('caf\xe9'), name_text('caf\xc3\xa9')] == ['café', 'café']  # a Latin-1 name stays itself
    record = SimpleNamespace(run_dir=tmp_path, args={'data_dir': str(data), 'dataset': ''})
    with pytest.raises(ValueError) as raised:
        _check_folder_class_order(record, ['Straße', 'café', '日本'])
    assert str(raised.value) == (
        f"--label-names puts 'Straße' at class 0, but the run learned the class folders of {data / 'train'} in timm's "
        f"order, where 'Straße' is class 1: a name of a class folder names that folder's class only; allowed: the "
        f"names in that order (café, Straße, 日本)")
    _check_folder_class_order(record, classes)


def test_a_second_release_into_one_out_keeps_the_earlier_runs_record(reproduced, tmp_path, capsys):
    """Releasing seed 1 into the --out that held seed 0's release rewrote release.json and pretrained_entries.json of
    seed 1 alone: seed 0's folder stayed, unlisted (and what a --push of it recorded was lost), and the tag named seed
    1, though seed 0's weights score better. Records of folders still there as release wrote them are kept."""
    root, _ = reproduced
    out = tmp_path / 'rel'
    assert main(['release', str(root / 'runs' / 'vit-sl-s0'), '--org', 'o', '--out', str(out)]) == 0
    assert main(['release', str(root / 'runs' / 'vit-sl-s1'), '--org', 'o', '--out', str(out)]) == 0
    listed = [r['repo_id'] for r in json.loads((out / 'release.json').read_text())]
    assert listed == ['o/sl_vit_32.sl-cifar10-s0', 'o/sl_vit_32.sl-cifar10-s1']
    entries = json.loads((out / 'pretrained_entries.json').read_text())
    assert entries['sl_vit_32.cifar10']['hf_hub_id'] == 'o/sl_vit_32.sl-cifar10-s0'  # 80.0 > 75.0
    shutil.rmtree(out / 'sl_vit_32.sl-cifar10-s0')  # a folder moved away: its record goes with it
    assert main(['release', str(root / 'runs' / 'vit-sl-s1'), '--org', 'o', '--out', str(out)]) == 0
    assert [r['repo_id'] for r in json.loads((out / 'release.json').read_text())] == ['o/sl_vit_32.sl-cifar10-s1']
    entries = json.loads((out / 'pretrained_entries.json').read_text())
    assert entries['sl_vit_32.cifar10']['hf_hub_id'] == 'o/sl_vit_32.sl-cifar10-s1'


def test_a_run_released_again_replaces_its_record_and_what_is_not_kept_is_said(reproduced, tmp_path, capsys,
                                                                               monkeypatch):
    """The same run released again under another name was listed twice and the tag stayed on its first name; a --push
    release could tag an earlier dry run's repository, never pushed, without a word; an earlier record dropped for its
    files changed since went without a word (with where it was pushed)."""
    import timm_sl.tools.hub
    root, _ = reproduced
    out, s0, s1 = tmp_path / 'rel', root / 'runs' / 'vit-sl-s0', root / 'runs' / 'vit-sl-s1'
    assert main(['release', str(s0), '--org', 'o', '--out', str(out)]) == 0
    assert main(['release', str(s0), '--org', 'o', '--out', str(out), '--name-pattern', 'vit-{seed}']) == 0
    assert [r['repo_id'] for r in json.loads((out / 'release.json').read_text())] == ['o/vit-0']
    assert json.loads((out / 'pretrained_entries.json').read_text())['sl_vit_32.cifar10']['hf_hub_id'] == 'o/vit-0'
    capsys.readouterr()
    monkeypatch.setattr(timm_sl.tools.hub, 'push_folder', lambda folder, repo_id, **kw: 'url')
    assert main(['release', str(s1), '--org', 'o', '--out', str(out), '--push']) == 0
    assert (f'note: tag sl_vit_32.cifar10 names o/vit-0, which an earlier release did not push: timm-sl push '
            f'{out / "vit-0"} --repo-id o/vit-0 before merging it\n') in capsys.readouterr().out  # seed 0 scores best
    (out / 'vit-0' / 'README.md').write_text('edited by hand')
    assert main(['release', str(s1), '--org', 'o', '--out', str(out)]) == 0
    assert (f'note: the earlier record of {out / "vit-0"} (not pushed) is not kept: its files are gone or changed '
            f'since release wrote them\n') in capsys.readouterr().out
    assert [r['repo_id'] for r in json.loads((out / 'release.json').read_text())] == ['o/sl_vit_32.sl-cifar10-s1']


@pytest.mark.parametrize('field,value', [('model_kwargs', [1, 2]), ('weights_top1', 'x'), ('weights_diverged', 'no')])
def test_an_earlier_record_of_another_form_is_not_kept_nor_a_traceback(field, value, reproduced, tmp_path, capsys):
    """An earlier release.json whose sha256 the manifest records but whose entry is not of the form release writes
    (another version's, or edited with its manifest; found by mutating OUT's records at random, then releasing
    again): model_kwargs as a list ended in an AttributeError traceback, weights_top1 as text in a TypeError."""
    from timm_sl.tools.manifest import sha256
    root, _ = reproduced
    out = tmp_path / 'rel'
    assert main(['release', str(root / 'runs' / 'vit-sl-s0'), '--org', 'o', '--out', str(out)]) == 0
    record = json.loads((out / 'release.json').read_text())
    record[0][field] = value
    (out / 'release.json').write_text(json.dumps(record))
    manifest = json.loads((out / 'release_manifest.json').read_text())
    manifest['sha256']['release.json'] = sha256(out / 'release.json')
    (out / 'release_manifest.json').write_text(json.dumps(manifest))
    capsys.readouterr()
    assert main(['release', str(root / 'runs' / 'vit-sl-s1'), '--org', 'o', '--out', str(out)]) == 0
    assert (f'note: the earlier record of {out / "sl_vit_32.sl-cifar10-s0"} (not pushed) is not kept: its {field} '
            f'{value!r} in {out / "release.json"} is not of the form release writes\n') in capsys.readouterr().out
    assert [r['repo_id'] for r in json.loads((out / 'release.json').read_text())] == ['o/sl_vit_32.sl-cifar10-s1']
    entries = json.loads((out / 'pretrained_entries.json').read_text())
    assert entries['sl_vit_32.cifar10']['hf_hub_id'] == 'o/sl_vit_32.sl-cifar10-s1'


def test_an_earlier_release_record_mutated_at_random_is_kept_whole_or_dropped_with_a_note(released, tmp_path):
    """300 copies of an --out's release.json, each with values replaced by hostile ones (None, -1, NaN, a list, a
    dict, text ...) or its text edited, the manifest vouching for it half the time (another version's record, or
    one edited with its sha256): the next release keeps each earlier record as release wrote it or drops it with a
    note, and chooses tags from what it keeps; never another error. (It found model_kwargs as a list ending in an
    AttributeError traceback.)"""
    import random
    from timm_sl.tools.manifest import sha256
    from timm_sl.tools.release import MANIFEST, _earlier_records, pretrained_entries
    out = tmp_path / 'out'
    shutil.copytree(released[0], out)
    text, manifest = (out / 'release.json').read_text(), json.loads((out / MANIFEST).read_text())['sha256']
    original = json.loads(text)
    hostile = [None, -1, 0, 10 ** 30, float('nan'), float('inf'), '', [], {}, [1, 2], {'a': 1}, 'x\ny', '/no/such',
               True, 1.5, 'sl_vit_32', '../a', 'o/x']
    rng = random.Random(25)
    for case in range(300):
        record = json.loads(text)
        for _ in range(rng.randint(1, 3)):
            entry = rng.choice(record)
            key = rng.choice(list(entry))
            if isinstance(entry[key], dict) and entry[key] and rng.random() < .5:
                entry[key][rng.choice(list(entry[key]))] = rng.choice(hostile)
            elif rng.random() < .1:
                del entry[key]
            else:
                entry[key] = rng.choice(hostile)
        edited = json.dumps(record)
        if rng.random() < .2:
            i = rng.randrange(len(edited) + 1)
            edited = edited[:i] + rng.choice(['', '"', '[', '{', ',', 'NaN', '}', 'null']) + edited[i + 1:]
        (out / 'release.json').write_text(edited)
        vouched = dict(manifest, **{'release.json': sha256(out / 'release.json')}) if rng.random() < .5 else manifest
        said = []
        kept = _earlier_records(out, [], [], vouched, said.append)
        pretrained_entries(kept)
        assert all('\n' not in line for line in said), said
        if vouched is manifest:  # a record changed since release wrote it is none of its own: all said, none kept
            assert not kept and said, (edited, said)
        for r in kept:  # vouched for: of the form release writes (the run's values are its sha256's to vouch for)
            first = next(e for e in original if Path(e['folder']).name == Path(r.folder).name)
            assert isinstance(r.model_kwargs, dict) and isinstance(r.pretrained_cfg, dict), (edited, r)
            assert r.folder == str(out / Path(first['folder']).name), (edited, r)


@pytest.mark.parametrize('target, nth', [('release_manifest.json', 1), ('release_manifest.json', 2),
                                         ('pretrained_entries.json', 1)])
def test_a_full_disk_while_the_record_is_written_leaves_release_able_to_run_again(reproduced, tmp_path, capsys,
                                                                                   monkeypatch, target, nth):
    """An exported folder's files, release.json and pretrained_entries.json were moved into place before the manifest
    recorded them: a disk that filled in between, or a kill, left files every later release refused as 'not written
    by timm-sl release'."""
    import errno
    import pathlib
    root, _ = reproduced
    out = tmp_path / 'out'
    argv = ['release', str(root / 'runs' / 'vit-sl-s0'), '--org', 'me', '--out', str(out)]  # the exported folder's
    seen = []  # record is the manifest's first write, release.json's its second

    def write_text(self, *args, real=pathlib.Path.write_text, **kwargs):
        seen.append(self.name.lstrip('.').split('.partial')[0] == target)
        if seen.count(True) == nth and seen[-1]:
            raise OSError(errno.ENOSPC, 'No space left on device', str(self))
        return real(self, *args, **kwargs)
    with monkeypatch.context() as m:
        m.setattr(pathlib.Path, 'write_text', write_text)
        assert target in _fails(argv, capsys)
    assert main(argv) in (0, None), capsys.readouterr().err
    assert len(json.loads((out / 'release.json').read_text())) == 1
