"""Export -> local-dir / offline hf-hub load round trips, adaptation on load, and clear errors."""
import argparse
import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Tuple

import pytest
import torch

import timm
from timm.models import save_for_hf
from timm_sl.tools.cli import main
from timm_sl.tools.runs import read_checkpoint
from timm_sl.tools.hub import export_checkpoint, push_folder
from timm_sl.tools.transformers_compat import make_transformers_compatible

KWARGS = dict(depth=2, shift_directions='cardinal')


LABELS = ['airplane', 'automobile', 'bird', 'cat', 'deer']
# what the runs trained with (not sl_vit_32's default cfg: CIFAR-100 statistics, bicubic, crop 1.0)
TRAINING = dict(input_size=(3, 32, 32), mean=(0.4914, 0.4822, 0.4465), std=(0.247, 0.2435, 0.2616),
                interpolation='bilinear', crop_pct=0.9, crop_mode='center')


def _train_run(root: Path, name: str, kwargs: dict) -> Path:
    """A train.py checkpoint (weights + args) with its args.yaml, as a run leaves them."""
    root.mkdir(parents=True)
    model = timm.create_model(name, num_classes=len(LABELS), **kwargs)
    args = dict(model=name, model_kwargs=kwargs, num_classes=len(LABELS), input_size=list(TRAINING['input_size']),
                mean=list(TRAINING['mean']),
                std=list(TRAINING['std']), interpolation=TRAINING['interpolation'], crop_pct=TRAINING['crop_pct'])
    torch.save({'epoch': 1, 'arch': name, 'state_dict': model.state_dict(), 'args': argparse.Namespace(**args)},
               root / 'model_best.pth.tar')
    (root / 'args.yaml').write_text(json.dumps(args))  # JSON is YAML
    return root / 'model_best.pth.tar'


@pytest.fixture(scope='module')
def trained(tmp_path_factory):
    """A train.py-style checkpoint (state_dict + state_dict_ema + args), its summary.csv and args.yaml."""
    root = tmp_path_factory.mktemp('run')
    torch.manual_seed(0)
    model = timm.create_model('sl_vit_32', num_classes=7, **KWARGS).eval()
    ema = {k: v + 0.01 * torch.randn_like(v) if v.is_floating_point() else v for k, v in model.state_dict().items()}
    args = argparse.Namespace(model='sl_vit_32', epochs=3, lr=1e-3, opt='adamw', model_kwargs=KWARGS)
    torch.save({'epoch': 2, 'arch': 'sl_vit_32', 'state_dict': model.state_dict(), 'state_dict_ema': ema,
                'args': args, 'metric': 60.0}, root / 'model_best.pth.tar')  # summary.csv's top-1 at epoch 2
    (root / 'summary.csv').write_text('epoch,train_loss,eval_loss,eval_top1,eval_top5\n'
                                      '0,2.0,1.9,40.0,80.0\n1,1.5,1.4,61.5,92.25\n2,1.2,1.3,60.0,91.0\n')
    # trained with CIFAR-10 statistics (sl_vit_32's default cfg has CIFAR-100's), on this machine's paths
    (root / 'args.yaml').write_text(
        'model: sl_vit_32\nepochs: 3\nlr: 0.001\nmean: [0.4914, 0.4822, 0.4465]\nstd: [0.247, 0.2435, 0.2616]\n'
        'interpolation: bilinear\ncrop_pct: 0.9\ndata_dir: /home/someone/data\noutput: /home/someone/out\n'
        'workers: 8\nmodel_kwargs: {depth: 2, shift_directions: cardinal}\n')
    model.load_state_dict(ema)
    return root, model

CIFAR10_MEAN, CIFAR10_STD = (0.4914, 0.4822, 0.4465), (0.247, 0.2435, 0.2616)


def _export(trained, tmp_path):
    root, _ = trained
    return export_checkpoint(root / 'model_best.pth.tar', 'sl_vit_32', tmp_path / 'export', model_kwargs=KWARGS,
                             summary=root / 'summary.csv', dataset='cifar10')


def test_export_folder_contents_and_card(trained, tmp_path):
    out, source = _export(trained, tmp_path)
    assert source == 'state_dict_ema'
    assert {p.name for p in out.iterdir()} == {'model.safetensors', 'config.json', 'README.md'}
    config = json.loads((out / 'config.json').read_text())
    assert config['architecture'] == 'sl_vit_32' and config['num_classes'] == 7
    assert config['model_args']['depth'] == 2 and config['model_args']['shift_directions'] == 'cardinal'
    assert config['pretrained_cfg']['input_size'] == [3, 32, 32]
    card = (out / 'README.md').read_text()
    assert '| best top-1 (%) | 61.50 |' in card and '| top-5 at that epoch (%) | 92.25 |' in card
    assert '| best epoch (counted from 1) | 2 of 3 |' in card and '| epochs run | 3 |' in card
    assert 'epochs: 3' in card and 'arXiv:2112.13492' in card and 'state_dict_ema' in card
    # the recipe that matters, not the machine's paths; how to install a package that is not on PyPI
    assert '/home/someone' not in card and 'workers' not in card and 'model_kwargs: {depth: 2' in card
    assert 'not published on PyPI' in card and '<' not in card.split('## Usage')[1].split('```')[0]
    assert 'pip install timm-sl' not in card


def test_card_recipe_keeps_the_augmentation_arguments(trained, tmp_path):
    """Without train.py's defaults at hand the recipe still lists random erasing's mode, flips and the training
    interpolation: they change what the weights learned."""
    from timm_sl.tools.train_args import recipe_args
    args = dict(model='sl_vit_32', reprob=0.25, remode='pixel', hflip=0.5, vflip=0., train_interpolation='random',
                workers=4)
    assert recipe_args(args) == dict(model='sl_vit_32', reprob=0.25, remode='pixel', hflip=0.5, vflip=0.,
                                     train_interpolation='random')


def test_card_recipe_without_train_py_lists_every_argument_that_changes_training():
    """Without train.py's defaults the recipe was a fixed list of usual keys: a run's cooldown_epochs, warmup_prefix,
    drop, momentum, layer_decay (and any argument a newer train.py records) were left out of its card. Now every
    recorded argument is, but switches left off (train.py's are all off by default), unset ones and the machine's."""
    from timm_sl.tools.train_args import recipe_args
    trains = dict(model='sl_vit_32', sched='cosine', cooldown_epochs=10, warmup_prefix=True, drop=0.1, momentum=0.9,
                  layer_decay=0.75, lr_cycle_limit=2, lr_cycle_mul=1.5, epoch_repeats=2.,
                  drop_path=0.1, smoothing=0.1, mixup=0.8, cutmix=1.0, aa='rand-m9-mstd0.5-inc1', reprob=0.25,
                  min_lr=0, a_newer_argument=3)
    args = dict(trains, jsd_loss=False, opt_eps=None, opt_kwargs={}, data_dir='/home/someone/data', workers=4,
                decay_epochs=30,  # cosine reads no decay_epochs
                output='/home/someone/out', wandb_project='p', eval_metric='top1')
    assert recipe_args(args) == trains


def test_card_recipe_leaves_out_the_settings_of_a_switch_left_off_and_the_machines():
    """Without train.py's defaults a card's recipe of a run without --amp listed 'amp_dtype: float16' (read as fp16
    training), the EMA decay of a run without EMA, and the machine's --validation-batch-size / --grad-checkpointing."""
    from timm_sl.tools.train_args import recipe_args
    args = dict(model='sl_vit_32', lr=0.001, amp=False, amp_dtype='float16', amp_impl='native', model_ema=False,
                model_ema_decay=0.9998, naflex_loader=False, naflex_max_seq_len=576, kd_model_name=None,
                kd_loss='kl', validation_batch_size=256, grad_checkpointing=True, model_ema_force_cpu=True,
                no_ddp_bb=True, dist_bn='reduce')
    assert recipe_args(args) == dict(model='sl_vit_32', lr=0.001)
    on = dict(args, amp=True, model_ema=True)
    assert recipe_args(on) == dict(model='sl_vit_32', lr=0.001, amp=True, amp_dtype='float16', amp_impl='native',
                                   model_ema=True, model_ema_decay=0.9998)
    assert recipe_args(dict(on, amp_dtype='bfloat16'), defaults=dict(on, amp=False)) == dict(amp=True,
                                                                                             amp_dtype='bfloat16')


@pytest.mark.parametrize('how', ['TIMM_REPO', '--train-script'])
def test_export_compares_the_recipe_with_train_py_as_release_does(tmp_path, monkeypatch, how):
    """timm-sl export never read TIMM_REPO (release does): its card listed the usual keys though train.py was at hand.
    Now export takes train.py as release does: --train-script, else $TIMM_REPO/train.py."""
    from test_run_record import _train_run
    _train_run(tmp_path / 'run', 'sl_vit_32', dict(depth=1), cooldown_epochs=5)
    (tmp_path / 'timm').mkdir()
    (tmp_path / 'timm' / 'train.py').write_text(
        'import argparse\nparser = argparse.ArgumentParser()\nparser.add_argument("--lr", type=float, default=0.05)'
        '\nparser.add_argument("--seed", type=int, default=1)\nparser.add_argument("--epochs", type=int, default=2)\n')
    monkeypatch.delenv('TIMM_REPO', raising=False)
    assert main(['export', str(tmp_path / 'run'), '--out', str(tmp_path / 'plain')]) == 0
    card = (tmp_path / 'plain' / 'README.md').read_text()
    assert ("## Training recipe (the run's train.py arguments as recorded, less switches left off, paths, machine and "
            "logging; timm's train.py was not at hand to compare with its defaults)") in card
    assert 'cooldown_epochs: 5' in card and 'seed: 1' in card
    if how == 'TIMM_REPO':
        monkeypatch.setenv('TIMM_REPO', str(tmp_path / 'timm'))
        given = []
    else:
        given = ['--train-script', str(tmp_path / 'timm' / 'train.py')]
    assert main(['export', str(tmp_path / 'run'), '--out', str(tmp_path / 'out'), *given]) == 0
    card = (tmp_path / 'out' / 'README.md').read_text()
    recipe = card.split("## Training recipe (train.py arguments that differ from train.py's defaults)")[1]
    recipe = recipe.split('```yaml\n')[1].split('```')[0]
    assert 'lr: 0.001' in recipe and 'cooldown_epochs: 5' in recipe and 'seed' not in recipe and 'epochs' not in \
        recipe.replace('cooldown_epochs', '')


@pytest.mark.parametrize('defaults', [None, dict(eval_metric='top1', lr=0.05)])
def test_card_recipe_names_another_eval_metric(defaults):
    """--eval-metric loss chose the weights model_best.pth.tar holds (and drives --sched plateau), yet no card's
    recipe named it; train.py's default top1 stays out."""
    from timm_sl.tools.train_args import recipe_args
    assert recipe_args(dict(model='sl_vit_32', lr=0.05, eval_metric='loss'), defaults)['eval_metric'] == 'loss'
    assert 'eval_metric' not in recipe_args(dict(model='sl_vit_32', lr=0.05, eval_metric='top1'), defaults)


def test_install_note_names_a_real_source_or_a_checkout(monkeypatch):
    from importlib import metadata
    from timm_sl.tools import hub
    real = metadata.metadata

    def with_urls(urls):
        class Meta(dict):
            def get_all(self, key):
                return urls if key == 'Project-URL' else None
        monkeypatch.setattr(metadata, 'metadata', lambda name: Meta())
    with_urls(['Source, https://example.org/timm-sl.git'])
    assert '`pip install git+https://example.org/timm-sl.git`' in hub.install_note()
    with_urls([])
    assert 'from a checkout of its source (`pip install .` in that folder)' in hub.install_note()
    monkeypatch.setattr(metadata, 'metadata', real)


def test_export_carries_the_training_data_config(trained, tmp_path):
    out, _ = _export(trained, tmp_path)
    loaded = timm.create_model(f'local-dir:{out}', pretrained=True)
    cfg = loaded.pretrained_cfg
    assert tuple(cfg['mean']) == CIFAR10_MEAN and tuple(cfg['std']) == CIFAR10_STD
    assert cfg['interpolation'] == 'bilinear' and cfg['crop_pct'] == 0.9 and tuple(cfg['input_size']) == (3, 32, 32)
    data = timm.data.resolve_data_config({}, model=loaded)
    assert tuple(data['mean']) == CIFAR10_MEAN and tuple(data['std']) == CIFAR10_STD and data['crop_pct'] == 0.9
    assert 'mean (0.4914, 0.4822, 0.4465)' in (out / 'README.md').read_text()


def test_export_without_args_keeps_the_model_defaults(trained, tmp_path):
    root, model = trained
    bare = tmp_path / 'bare' / 'model.pth'
    bare.parent.mkdir()
    torch.save(model.state_dict(), bare)
    out, source = export_checkpoint(bare, 'sl_vit_32', tmp_path / 'export', model_kwargs=KWARGS)
    cfg = json.loads((out / 'config.json').read_text())['pretrained_cfg']
    assert source == 'plain' and tuple(cfg['mean']) == timm.get_pretrained_cfg('sl_vit_32').mean


@pytest.mark.parametrize('text', ['zero\none\ntwo\nthree\nfour\nfive\nsix\n\n',
                                  '["zero", "one", "two", "three", "four", "five", "six"]'])
def test_label_names_round_trip(trained, tmp_path, text):
    root, _ = trained
    names = tmp_path / 'labels.txt'
    names.write_text(text)
    out, _ = export_checkpoint(root / 'model_best.pth.tar', 'sl_vit_32', tmp_path / 'export', model_kwargs=KWARGS,
                               label_names=names)
    loaded = timm.create_model(f'local-dir:{out}', pretrained=True)
    assert list(loaded.pretrained_cfg['label_names']) == ['zero', 'one', 'two', 'three', 'four', 'five', 'six']


def test_label_names_must_number_the_classes(trained, tmp_path):
    root, _ = trained
    names = tmp_path / 'labels.txt'
    names.write_text('cat\ndog\n')
    message = (f'{names}: 2 label names given but {root / "model_best.pth.tar"} has 7 classes; give exactly one '
               f'name per class, in class-index order')  # the file is named: it was the checkpoint alone
    with pytest.raises(ValueError) as e:
        export_checkpoint(root / 'model_best.pth.tar', 'sl_vit_32', tmp_path / 'x', model_kwargs=KWARGS,
                          label_names=names)
    assert str(e.value) == message
    names.write_text('{"0": "cat"}')
    with pytest.raises(ValueError, match='holds JSON that is not a list of strings'):
        export_checkpoint(root / 'model_best.pth.tar', 'sl_vit_32', tmp_path / 'x', label_names=names)


@pytest.mark.parametrize('text,says', [
    ('cat\ndog\ncat\n', "names two classes 'cat' (classes 0 and 2); allowed: one name per class, each once"),
    ('["cat", " ", "dog"]', "holds the label name ' ' (class 1); allowed: a name of one line for each class, not "
                            "blank"),
    ('["cat", "dog\\nfox"]', "holds the label name 'dog\\nfox' (class 1); allowed: a name of one line for each "
                              "class, not blank")])
def test_label_names_each_name_one_class(tmp_path, text, says):
    """Label names of a class twice (or blank, or of two lines) were exported: two classes under one name, which a
    prediction of either reads the same (and transformers' label2id keeps one of)."""
    from timm_sl.tools.hub import read_label_names
    names = tmp_path / 'labels.txt'
    names.write_text(text)
    with pytest.raises(ValueError) as e:
        read_label_names(names)
    assert str(e.value) == f'{names} {says}'


def test_local_dir_round_trip(trained, tmp_path):
    out, _ = _export(trained, tmp_path)
    _, model = trained
    loaded = timm.create_model(f'local-dir:{out}', pretrained=True).eval()
    x = torch.randn(2, 3, 32, 32)
    torch.testing.assert_close(loaded(x), model(x), atol=1e-5, rtol=1e-5)


def _offline_cache(folder: Path, cache: Path, repo: str = 'timm-sl/sl_vit_32.demo') -> None:
    """The layout huggingface_hub keeps in HF_HUB_CACHE for a downloaded model repo."""
    commit = 'a' * 40
    base = cache / f'models--{repo.replace("/", "--")}'
    snapshot = base / 'snapshots' / commit
    snapshot.mkdir(parents=True)
    for f in folder.iterdir():
        shutil.copy(f, snapshot / f.name)
    (base / 'refs').mkdir()
    (base / 'refs' / 'main').write_text(commit)


def test_hf_hub_round_trip_from_offline_cache_in_fresh_interpreter(trained, tmp_path):
    out, _ = _export(trained, tmp_path)
    _, model = trained
    cache = tmp_path / 'hf_cache'
    _offline_cache(out, cache)
    x = torch.randn(2, 3, 32, 32)
    torch.save({'x': x, 'y': model(x).detach()}, tmp_path / 'io.pt')
    code = ("import torch, timm; io = torch.load(r'%s'); m = timm.create_model('hf-hub:timm-sl/sl_vit_32.demo', "
            "pretrained=True).eval(); torch.testing.assert_close(m(io['x']), io['y'], atol=1e-5, rtol=1e-5); "
            "print('ok')" % (tmp_path / 'io.pt'))
    env = {k: v for k, v in os.environ.items() if k not in ('TIMM_SL_NO_AUTOLOAD', 'HF_HOME')}
    env.update(HF_HUB_OFFLINE='1', HF_HUB_CACHE=str(cache))
    result = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, env=env)
    assert result.stdout.strip() == 'ok', result.stderr[-2000:]


def test_adaptation_on_load(trained, tmp_path):
    out, _ = _export(trained, tmp_path)
    _, model = trained
    x = torch.randn(2, 3, 32, 32)
    five = timm.create_model(f'local-dir:{out}', pretrained=True, num_classes=5).eval()
    assert five(x).shape == (2, 5)
    torch.testing.assert_close(five.forward_features(x), model.forward_features(x), atol=1e-5, rtol=1e-5)
    big = timm.create_model(f'local-dir:{out}', pretrained=True, img_size=64).eval()
    assert big.pos_embed.shape == (1, 257, 192) and big(torch.randn(1, 3, 64, 64)).shape == (1, 7)
    grey = timm.create_model(f'local-dir:{out}', pretrained=True, in_chans=1).eval()
    g = torch.randn(2, 1, 32, 32)  # a grey image as one channel == the same image replicated to RGB
    torch.testing.assert_close(grey(g), model(g.expand(-1, 3, -1, -1)), atol=1e-4, rtol=1e-4)
    assert timm.create_model(f'local-dir:{out}', pretrained=True, in_chans=4)(torch.randn(1, 4, 32, 32)).shape == (1, 7)


def test_checkpoint_errors_name_the_file(tmp_path):
    with pytest.raises(FileNotFoundError, match='does not exist'):
        read_checkpoint(tmp_path / 'nope.pth')
    bad = tmp_path / 'corrupt.pth'
    bad.write_bytes(b'not a checkpoint')
    with pytest.raises(ValueError, match='corrupt.pth is not a readable torch checkpoint'):
        read_checkpoint(bad)
    empty = tmp_path / 'empty.pth'
    torch.save({'epoch': 1}, empty)
    with pytest.raises(ValueError, match='empty.pth holds no state dict'):
        read_checkpoint(empty)


def test_mismatched_architecture_is_named(trained, tmp_path):
    root, _ = trained
    ckpt = root / 'model_best.pth.tar'
    with pytest.raises(ValueError) as e:
        export_checkpoint(ckpt, 'sl_vit_32', tmp_path / 'x', model_kwargs=dict(depth=3))
    assert str(e.value) == (
        f"{ckpt} does not fit sl_vit_32 {{'depth': 3, 'num_classes': 7}} (it was trained as sl_vit_32 "
        f"{{'depth': 2, 'shift_directions': 'cardinal'}}): 12 missing key(s) (blocks.2.norm1.weight, "
        f"blocks.2.norm1.bias, blocks.2.attn.temperature, ...)")


def test_checkpoint_into_the_wrong_model_says_what_it_was_trained_as(trained):
    from timm_sl.tools.checkpoint import model_from_checkpoint
    ckpt = trained[0] / 'model_best.pth.tar'
    with pytest.raises(ValueError) as e:
        model_from_checkpoint(ckpt, 'sl_pit_32', {})
    message = str(e.value)
    assert '\n' not in message
    assert message.startswith(f"{ckpt} does not fit sl_pit_32 {{'num_classes': 7}} (it was trained as sl_vit_32 "
                              f"{{'depth': 2, 'shift_directions': 'cardinal'}}): ")
    with pytest.raises(ValueError) as e:
        model_from_checkpoint(ckpt, 'sl_vit_32', dict(depht=2))
    assert str(e.value).startswith(f"{ckpt} cannot build sl_vit_32 {{'depht': 2, 'num_classes': 7}} (it was trained as "
                                   f"sl_vit_32 {{'depth': 2, 'shift_directions': 'cardinal'}}): ")


def test_cli_export_errors_are_one_line(trained, tmp_path, capsys):
    root, _ = trained
    with pytest.raises(SystemExit) as e:
        main(['export', str(tmp_path / 'missing.pth.tar'), '--model', 'sl_vit_32', '--out', str(tmp_path)])
    assert e.value.code == 2
    assert capsys.readouterr().err == (f'timm-sl export: {tmp_path / "missing.pth.tar"} does not exist; expected a '
                                       f'checkpoint file, a train.py run folder or an exported folder\n')
    with pytest.raises(SystemExit) as e:
        main(['export', str(root / 'model_best.pth.tar'), '--model', 'sl_vit_32', '--model-kwargs', 'depth=3',
              '--out', str(tmp_path)])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith('timm-sl export: ') and "was trained as sl_vit_32 {'depth': 2" in err and err.count('\n') == 1


def test_export_of_an_exported_folder_says_it_is_exported_already(trained, tmp_path):
    """export EXPORTED_FOLDER (or its model.safetensors) said it 'records no model (no args.yaml beside it ...); name
    it with --model' where config.json beside it names the model: it is exported already."""
    out, _ = _export(trained, tmp_path)
    for given in out, out / 'model.safetensors':
        with pytest.raises(SystemExit) as e:
            main(['export', str(given), '--out', str(tmp_path / 'again')])
        assert str(e.value) == (f'timm-sl export: {out / "model.safetensors"} is the weights of a folder timm-sl '
                                f'export wrote, exported already; allowed: timm-sl push {out} (or timm.create_model('
                                f'"local-dir:{out}")), or export a train.py checkpoint or run folder')
    assert not (tmp_path / 'again').exists()


def test_truncated_safetensors_is_a_clear_error(trained, tmp_path):
    out, _ = _export(trained, tmp_path)
    data = (out / 'model.safetensors').read_bytes()
    (out / 'model.safetensors').write_bytes(data[:len(data) // 2])
    with pytest.raises(Exception, match='(?i)safetensor|incomplete|invalid|header|deserializ'):
        timm.create_model(f'local-dir:{out}', pretrained=True)


def test_cli_export_and_push_offline(trained, tmp_path, capsys, monkeypatch):
    root, _ = trained
    out = tmp_path / 'cli_export'
    assert main(['export', str(root / 'model_best.pth.tar'), '--model', 'sl_vit_32', '--model-kwargs', 'depth=2',
                 'shift_directions=cardinal', '--out', str(out), '--summary', str(root / 'summary.csv')]) == 0
    assert 'state_dict_ema weights' in capsys.readouterr().out
    monkeypatch.setenv('HF_HUB_OFFLINE', '1')
    with pytest.raises(SystemExit) as e:
        main(['push', str(out), '--repo-id', 'timm-sl/nothing'])
    assert e.value.code == 2 and 'timm-sl push:' in capsys.readouterr().err
    with pytest.raises(FileNotFoundError, match='missing config.json'):
        push_folder(tmp_path, 'timm-sl/nothing')


def test_warm_start_from_timm_vit():
    from timm_sl import warm_start
    source_model = timm.create_model('vit_tiny_patch16_224', num_classes=10)
    source = source_model.state_dict()
    sl = timm.create_model('sl_vit_tiny', num_classes=10)
    report = warm_start(sl, source)
    state = sl.state_dict()
    torch.testing.assert_close(state['blocks.3.attn.qkv.weight'], source['blocks.3.attn.qkv.weight'])
    torch.testing.assert_close(state['head.weight'], source['head.weight'])
    weight = state['patch_embed.proj.weight'].reshape(192, 16, 16, 5, 3)
    torch.testing.assert_close(weight[:, :, :, 0, :], source['patch_embed.proj.weight'].permute(0, 2, 3, 1))
    assert torch.all(weight[:, :, :, 1:, :] == 0) and torch.all(state['patch_embed.proj.norm.weight'] == 1)
    assert report['not_mapped'] == sorted(f'blocks.{i}.attn.temperature' for i in range(12))
    assert report['unused_source'] == []
    # temperatures start at the source's fixed scale
    assert torch.allclose(sl.blocks[0].attn.temperature, torch.full((3,), 64 ** -0.5))


@pytest.mark.extended
@pytest.mark.parametrize('name,kwargs', [
    ('sl_pit_32', {}), ('sl_swin_32', {}), ('sl_cait_32', dict(depth=2)), ('sl_t2t_32', dict(depth=2))])
def test_every_family_round_trips_and_adapts(name, kwargs, tmp_path):
    from timm.models import save_for_hf
    model = timm.create_model(name, num_classes=7, **kwargs).eval()
    save_for_hf(model, tmp_path, model_args=dict(num_classes=7, **kwargs), safe_serialization=True)
    x = torch.randn(2, 3, 32, 32)
    loaded = timm.create_model(f'local-dir:{tmp_path}', pretrained=True).eval()
    torch.testing.assert_close(loaded(x), model(x), atol=1e-5, rtol=1e-5)
    assert timm.create_model(f'local-dir:{tmp_path}', pretrained=True, num_classes=5).eval()(x).shape == (2, 5)
    grey = timm.create_model(f'local-dir:{tmp_path}', pretrained=True, in_chans=1).eval()
    assert torch.isfinite(grey(torch.randn(1, 1, 32, 32))).all()
    big = timm.create_model(f'local-dir:{tmp_path}', pretrained=True, img_size=64).eval()
    assert big(torch.randn(1, 3, 64, 64)).shape == (1, 7)


def test_output_and_side_files_of_the_wrong_kind_are_one_line(trained, tmp_path, capsys):
    """A folder where a file is read, a file where a folder is written: one line saying which, nothing written."""
    root, _ = trained
    ckpt = str(root / 'model_best.pth.tar')
    (tmp_path / 'names').mkdir()
    (tmp_path / 'a_file').write_text('mine')
    for extra, message in (
            (['--label-names', str(tmp_path / 'names')],
             f'--label-names {tmp_path / "names"} is a folder; expected the class names (a JSON list or one name per '
             f'line)'),
            (['--summary', str(tmp_path / 'names')],
             f"--summary {tmp_path / 'names'} is a folder; expected train.py's summary.csv"),
            (['--out', str(tmp_path / 'a_file')], f'--out {tmp_path / "a_file"} is a file; expected the export '
                                                   f'folder')):
        argv = ['export', ckpt] + extra + (['--out', str(tmp_path / 'out')] if '--out' not in extra else [])
        with pytest.raises(SystemExit):
            main(argv)
        assert capsys.readouterr().err == f'timm-sl export: {message}\n'
    assert not (tmp_path / 'out').exists() and (tmp_path / 'a_file').read_text() == 'mine'


@pytest.mark.parametrize('repo_id,reason', [
    ('bad id!!', 'Repo id must use alphanumeric chars'), ('org/x--y', 'Cannot have -- or ..'),
    ('a/b/c', "Repo id must be in the form 'repo_name' or 'namespace/repo_name'")])
def test_push_checks_the_repo_id_before_anything_else(repo_id, reason, tmp_path, capsys, monkeypatch):
    """The id is checked before push reads the folder's files or contacts the Hub (the kind of thing the folder is,
    checked by main before any command works, comes first: a folder is given)."""
    import huggingface_hub
    monkeypatch.setattr(huggingface_hub, 'HfApi', lambda *a, **k: pytest.fail('the Hub was contacted'))
    (tmp_path / 'config.json').write_text('{"architecture": ')  # cut files: read first, they would be named
    (tmp_path / 'model.safetensors').write_bytes(b'x')
    with pytest.raises(SystemExit) as e:
        main(['push', str(tmp_path), '--repo-id', repo_id])
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.count('\n') == 1
    assert err.startswith(f'timm-sl push: --repo-id {repo_id!r} is not a Hub repository id ({reason}'), err
    assert err.endswith("); allowed: ORG/NAME (or NAME), each of letters, digits, '-', '_' and '.'\n")


def test_push_of_a_missing_folder_or_a_file_says_so(tmp_path, capsys, monkeypatch):
    import huggingface_hub
    monkeypatch.setattr(huggingface_hub, 'HfApi', lambda *a, **k: pytest.fail('the Hub was contacted'))
    (tmp_path / 'model.safetensors').write_bytes(b'x')
    for path, what in ((tmp_path / 'missing', 'does not exist'), (tmp_path / 'model.safetensors', 'is a file')):
        with pytest.raises(SystemExit):
            main(['push', str(path), '--repo-id', 'org/name'])
        assert capsys.readouterr().err == (f'timm-sl push: {path} {what}; expected a folder written by timm-sl export '
                                           f'or release\n')


def test_push_checks_config_json_and_model_safetensors_before_uploading(tmp_path, capsys, monkeypatch):
    """A cut config.json or model.safetensors was uploaded as it was."""
    import huggingface_hub
    from safetensors.torch import load_file, save_file
    uploaded = []

    class Api:
        def create_repo(self, *a, **k):
            pass

        def upload_folder(self, folder_path, allow_patterns=None, **k):
            import fnmatch
            uploaded.append(sorted(p.name for p in Path(folder_path).iterdir() if allow_patterns is None
                                   or any(fnmatch.fnmatch(p.name, pattern) for pattern in allow_patterns)))
            return 'https://hub/commit'

    monkeypatch.setattr(huggingface_hub, 'HfApi', Api)
    config, weights = tmp_path / 'config.json', tmp_path / 'model.safetensors'
    save_for_hf(timm.create_model('sl_vit_32', depth=1, num_classes=7), tmp_path, model_args=dict(depth=1),
                safe_serialization=True)
    make_transformers_compatible(tmp_path)  # as export writes it
    whole, exported = weights.read_bytes(), config.read_text()
    again = 'allowed: the file as timm-sl export / release writes it (export again)'
    for cut_config, cut_weights, says in (
            ('{"architecture": ', None, f'{config} is not JSON (line 1: Expecting value); {again}'),
            ('[1]', None, f'{config} is JSON but not an object (list); {again}'),
            (None, whole[:len(whole) // 2], f'{weights} is not a readable safetensors file (')):
        if cut_config:
            config.write_text(cut_config)
        if cut_weights:
            weights.write_bytes(cut_weights)
        with pytest.raises(SystemExit):
            main(['push', str(tmp_path), '--repo-id', 'org/name'])
        err = capsys.readouterr().err
        assert err.startswith(f'timm-sl push: {says}') and err.endswith(f'{again}\n') and err.count('\n') == 1, err
        config.write_text(exported)
        weights.write_bytes(whole)
    # edited after export: a config timm cannot build, weights of another model; refused before anything is uploaded
    for edit, says in (
            (lambda c: dict(c, architecture='sl_vit_3'), f'{config} does not build a model in timm (Unknown model'),
            (lambda c: dict(c, num_classes=5), f'{weights} does not fit the model {config} describes (2 shape '
                                               f'mismatch(es), checkpoint vs model (head.weight (7, 192) vs (5, 192)'),
            # what a loader preprocesses and labels by, which timm loads without an error (a 2-value mean averaged)
            (lambda c: dict(c, pretrained_cfg=dict(c['pretrained_cfg'], label_names=['a', 'b', 'c'])),
             f"{config} gives label_names that are not one name per class of its 7, each once (['a', 'b', 'c'])"),
            # names export refuses in a --label-names file: of two lines, or blank (were uploaded)
            (lambda c: dict(c, pretrained_cfg=dict(c['pretrained_cfg'], label_names=list('abcdef') + ['g\nh'])),
             f"{config} gives the label name 'g\\nh' (class 6); allowed: a name of one line for each class, not blank"),
            (lambda c: dict(c, pretrained_cfg=dict(c['pretrained_cfg'], label_names=[' '] + list('bcdefg'))),
             f"{config} gives the label name ' ' (class 0); allowed: a name of one line for each class, not blank"),
            # timm names the classes by them, transformers (the top level's label_names: none) LABEL_0, ...
            (lambda c: dict(c, pretrained_cfg=dict(c['pretrained_cfg'], label_names=list('abcdefg'))),
             f'{config} gives pretrained_cfg.label_names but no label_names, which transformers reads: timm would '
             f'name the classes, transformers LABEL_0, LABEL_1, ...'),
            (lambda c: dict(c, pretrained_cfg=dict(c['pretrained_cfg'], mean=[0.5, 0.5])),
             f'{config} gives a mean of [0.5, 0.5] for an input of 3 channel(s)'),
            (lambda c: dict(c, pretrained_cfg=dict(c['pretrained_cfg'], std=[0.5, 0, 0.5])),
             f'{config} gives the data config std: (0.5, 0, 0.5), which no training ran with'),
            # a loader's transform fails on these: timm's KeyError, the fixed 32 px model's assert on 64 px images
            (lambda c: dict(c, pretrained_cfg=dict(c['pretrained_cfg'], interpolation='nope')),
             f"{config} gives the interpolation 'nope', which timm does not know"),
            (lambda c: dict(c, pretrained_cfg=dict(c['pretrained_cfg'], input_size=[32, 32])),  # was: 'a mean of ...
             f'{config} gives the input size [32, 32]; expected [channels, height, width]'),  # for 32 channel(s)'
            (lambda c: dict(c, pretrained_cfg=dict(c['pretrained_cfg'], input_size=[0, 32, 32])),
             f'{config} gives the input size [0, 32, 32]; expected [channels, height, width]'),
            (lambda c: dict(c, pretrained_cfg=dict(c['pretrained_cfg'], crop_pct=1e9)),  # resized to 0 px (a mutation)
             f'{config} gives the data config crop_pct: 1000000000.0, which no training ran with'),
            (lambda c: dict(c, pretrained_cfg=dict(c['pretrained_cfg'], input_size=[3, 64, 64])),
             f'{config} gives a data config timm cannot resolve (Requested image size (64, 64), but the model '
             f'requires (32, 32).)')):
        config.write_text(json.dumps(edit(json.loads(exported))))
        with pytest.raises(SystemExit):
            main(['push', str(tmp_path), '--repo-id', 'org/name'])
        err = capsys.readouterr().err
        assert err.startswith(f'timm-sl push: {says}') and err.endswith(f'{again}\n') and err.count('\n') == 1, err
    save_file({'w': torch.arange(64.)}, str(weights))
    config.write_text(exported)
    with pytest.raises(SystemExit):
        main(['push', str(tmp_path), '--repo-id', 'org/name'])
    assert capsys.readouterr().err.startswith(f'timm-sl push: {weights} does not fit the model {config} describes (')
    weights.write_bytes(whole)
    nan = load_file(str(weights))  # weights export refuses (a run diverged), edited in after it: were uploaded
    nan['head.bias'][0] = float('nan')
    save_file(nan, str(weights))
    with pytest.raises(SystemExit):
        main(['push', str(tmp_path), '--repo-id', 'org/name'])
    assert capsys.readouterr().err == (f'timm-sl push: {weights} holds NaN or infinite weights (1 tensor(s): '
                                       f'head.bias); {again}\n')
    weights.write_bytes(whole)
    assert uploaded == []
    (tmp_path / 'notes.txt').write_text('a user file beside the export: not public')  # was uploaded with them
    assert push_folder(tmp_path, 'org/name') == 'https://hub/commit'
    assert uploaded == [['config.json', 'model.safetensors']]


def test_card_header_is_huggingface_hubs_model_card_data(trained, tmp_path):
    """The card is written by huggingface_hub's ModelCard: its header reads back as ModelCardData; a run without a
    finite top-1 claims no metric."""
    from huggingface_hub import ModelCard
    out, _ = _export(trained, tmp_path)
    card = ModelCard.load(out / 'README.md')
    assert card.data.to_dict() == {'library_name': 'timm', 'license': 'apache-2.0', 'datasets': ['cifar10'],
                                   'metrics': ['accuracy'], 'tags': ['image-classification', 'timm', 'timm_sl']}
    assert card.text.lstrip('\n').startswith('# sl_vit_32 (cifar10)\n\nA `sl_vit_32` (depth=2, '
                                              'shift_directions=cardinal) image')
    root, _ = trained
    (tmp_path / 'nan.csv').write_text('epoch,eval_top1\n0,nan\n')
    out, _ = export_checkpoint(root / 'model_best.pth.tar', 'sl_vit_32', tmp_path / 'nan', model_kwargs=KWARGS,
                               summary=tmp_path / 'nan.csv', dataset='cifar10')
    assert ModelCard.load(out / 'README.md').data.to_dict() == {
        'library_name': 'timm', 'license': 'apache-2.0', 'datasets': ['cifar10'],
        'tags': ['image-classification', 'timm', 'timm_sl']}


def test_warm_start_reads_a_checkpoints_ema_weights_as_timm_does():
    """A --model-ema checkpoint: timm's loader (train.py's --initial-checkpoint, load_checkpoint) reads its EMA
    weights; warm_start read the model's own, silently other weights than the ones timm would load."""
    from timm_sl import warm_start
    own = timm.create_model('vit_tiny_patch16_224', depth=1, num_classes=10).state_dict()
    ema = {k: v + 1 for k, v in own.items()}
    for checkpoint in ({'state_dict': own, 'state_dict_ema': ema}, {'model': own, 'model_ema': ema}):
        sl = timm.create_model('sl_vit_tiny', depth=1, num_classes=10)
        warm_start(sl, checkpoint)
        torch.testing.assert_close(sl.state_dict()['blocks.0.attn.qkv.weight'], ema['blocks.0.attn.qkv.weight'])
    sl = timm.create_model('sl_vit_tiny', depth=1, num_classes=10)
    warm_start(sl, {'model': {f'_orig_mod.{k}': v for k, v in own.items()}, 'epoch': 2})
    torch.testing.assert_close(sl.state_dict()['head.weight'], own['head.weight'])


def test_warm_start_reads_a_checkpoint_and_refuses_what_maps_nothing():
    """A train.py checkpoint (the dict torch.load gives) or a DDP state dict mapped nothing and returned quietly,
    leaving the model at its random init; a state dict of another size too."""
    from timm_sl import warm_start
    source = timm.create_model('vit_tiny_patch16_224', depth=2, num_classes=10).state_dict()
    for wrapped in ({'epoch': 3, 'arch': 'vit_tiny_patch16_224', 'state_dict': source},
                    {f'module.{k}': v for k, v in source.items()}):
        sl = timm.create_model('sl_vit_tiny', depth=2, num_classes=10)
        report = warm_start(sl, wrapped)
        assert 'blocks.1.attn.qkv.weight' in report['mapped'] and report['unused_source'] == []
        torch.testing.assert_close(sl.state_dict()['head.weight'], source['head.weight'])
    sl = timm.create_model('sl_vit_tiny', depth=2)
    before = {k: v.clone() for k, v in sl.state_dict().items()}
    other = timm.create_model('vit_small_patch16_224', depth=2, num_classes=10).state_dict()
    with pytest.raises(ValueError, match=r"^warm_start mapped nothing into SlVisionTransformer: none of the \d+ keys "
                                         r"of the state dict .*; allowed: a timm state dict of the same family and "
                                         r"size$"):
        warm_start(sl, other)
    assert all(torch.equal(v, before[k]) for k, v in sl.state_dict().items())


@pytest.mark.parametrize('name', ['config.json', 'model.safetensors'])
def test_push_of_a_folder_or_a_broken_link_where_an_exported_file_goes_says_so(name, tmp_path, capsys, monkeypatch):
    """A config.json that is a folder (or a model.safetensors linking to nothing, or a FIFO) was called 'missing'."""
    import huggingface_hub
    monkeypatch.setattr(huggingface_hub, 'HfApi', lambda *a, **k: pytest.fail('the Hub was contacted'))
    save_for_hf(timm.create_model('sl_vit_32', depth=1, num_classes=7), tmp_path, model_args=dict(depth=1),
                safe_serialization=True)
    path = tmp_path / name
    path.unlink()
    path.mkdir()
    with pytest.raises(SystemExit):
        main(['push', str(tmp_path), '--repo-id', 'org/name'])
    assert capsys.readouterr().err == f'timm-sl push: {path} is a folder; expected the {name} of an export; allowed: ' \
                                      f'export again\n'
    path.rmdir()
    path.symlink_to(tmp_path / 'gone')
    with pytest.raises(SystemExit):
        main(['push', str(tmp_path), '--repo-id', 'org/name'])
    assert capsys.readouterr().err == (f'timm-sl push: {path} is a link to {tmp_path / "gone"}, which does not exist; '
                                       f'expected the {name} of an export (allowed: the file, a link to one, or '
                                       f'none, or export again)\n')
    path.unlink()
    os.mkfifo(path)  # not 'missing'
    with pytest.raises(SystemExit):
        main(['push', str(tmp_path), '--repo-id', 'org/name'])
    assert capsys.readouterr().err == (f'timm-sl push: {path} is a FIFO (named pipe), not a regular file; expected '
                                       f'the {name} of an export; allowed: export again\n')


@pytest.mark.parametrize('public', [True, False], ids=['public', 'private'])
def test_push_private_into_a_public_repository_is_refused_before_uploading(public, tmp_path, capsys, monkeypatch):
    """--private into a repository that exists and is public: the Hub keeps it public (create_repo leaves a repository
    that exists as it is) and the weights were uploaded there, publicly, with no word."""
    import huggingface_hub
    uploaded = []

    class Api:
        def create_repo(self, *a, **k):
            pass

        def repo_info(self, repo_id, **k):
            return argparse.Namespace(private=not public)

        def upload_folder(self, folder_path, **k):
            uploaded.append(folder_path)
            return 'https://hub/commit'

    monkeypatch.setattr(huggingface_hub, 'HfApi', Api)
    save_for_hf(timm.create_model('sl_vit_32', depth=1, num_classes=7), tmp_path, model_args=dict(depth=1),
                safe_serialization=True)
    make_transformers_compatible(tmp_path)
    if not public:
        assert push_folder(tmp_path, 'org/name', private=True) == 'https://hub/commit' and uploaded
        return
    with pytest.raises(SystemExit):
        main(['push', str(tmp_path), '--repo-id', 'org/name', '--private'])
    err = capsys.readouterr().err
    assert err == ('timm-sl push: --private: org/name exists on the Hub and is public, so the upload would be public; '
                   'nothing was uploaded; allowed: make org/name private on the Hub first, another --repo-id, or '
                   'leave out --private to upload to the public repository\n'), err
    assert uploaded == []
    assert push_folder(tmp_path, 'org/name') == 'https://hub/commit'  # no --private: the public repository, as asked


def test_export_refuses_weights_of_nan_or_infinity(trained, tmp_path, capsys):
    """last.pth.tar of a run that diverged, copied away (no summary.csv beside it): its NaN weights were exported with
    a card of a trained model, and loaded in timm they output NaN."""
    root, _ = trained
    saved = torch.load(root / 'model_best.pth.tar', weights_only=False)
    ema = dict(saved['state_dict_ema'], **{'head.bias': torch.full_like(saved['state_dict_ema']['head.bias'], math.nan),
                                           'head.weight': torch.full_like(saved['state_dict_ema']['head.weight'],
                                                                          math.inf)})
    torch.save(dict(saved, state_dict_ema=ema), tmp_path / 'last.pth.tar')
    with pytest.raises(SystemExit):
        main(['export', str(tmp_path / 'last.pth.tar'), '--out', str(tmp_path / 'out')])
    assert capsys.readouterr().err == (
        f'timm-sl export: {tmp_path / "last.pth.tar"} holds NaN or infinite weights (2 tensor(s): head.weight, '
        f'head.bias): the run had diverged when it was saved; allowed: a checkpoint of an epoch before that '
        f'(checkpoint-N.pth.tar of its run folder)\n')
    assert not (tmp_path / 'out').exists()


@pytest.mark.parametrize('revision', [None, 'v2'])
def test_the_card_push_uploads_names_the_repository_it_is_pushed_to(revision, trained, tmp_path, monkeypatch):
    """export, then push: the card on the Hub told its readers timm.create_model('hf-hub:ORG/NAME'), the exported
    card's stand-in, not the repository it was on (nor its branch). The folder itself stays as exported."""
    import huggingface_hub
    pushed = {}

    class Api:
        def create_repo(self, *a, **k):
            pass

        def create_branch(self, *a, **k):
            pass

        def upload_folder(self, folder_path, allow_patterns=None, **k):
            pushed.update({p.name: p.read_bytes() for p in Path(folder_path).iterdir()})
            return 'https://hub/commit'

    monkeypatch.setattr(huggingface_hub, 'HfApi', Api)
    out, _ = _export(trained, tmp_path)
    exported = {name: (out / name).read_bytes() for name in ('README.md', 'config.json', 'model.safetensors')}
    assert b"timm.create_model('hf-hub:ORG/NAME', pretrained=True)" in exported['README.md']
    assert push_folder(out, 'me/sl-c10', revision=revision) == 'https://hub/commit'
    target = 'me/sl-c10@v2' if revision else 'me/sl-c10'
    assert f"timm.create_model('hf-hub:{target}', pretrained=True)".encode() in pushed['README.md']
    assert b'ORG/NAME' not in pushed['README.md'] and sorted(pushed) == sorted(exported)
    assert pushed['README.md'] == exported['README.md'].replace(b'ORG/NAME', target.encode())
    assert pushed['model.safetensors'] == exported['model.safetensors']
    assert pushed['config.json'] == exported['config.json']
    assert {name: (out / name).read_bytes() for name in exported} == exported  # the folder as it was


@pytest.mark.parametrize('revision', ['', '  '])
def test_push_folder_refuses_an_empty_revision_before_anything_else(revision, tmp_path, monkeypatch):
    """push_folder(folder, repo_id, revision='') (a script's unset variable) uploaded to the main branch: the CLI's
    option refused it, the library function did not."""
    import huggingface_hub
    monkeypatch.setattr(huggingface_hub, 'HfApi', lambda *a, **k: pytest.fail('the Hub was contacted'))
    with pytest.raises(ValueError, match=r"is not allowed \(an empty branch name pushes to main\); expected a branch "):
        push_folder(tmp_path, 'org/name', revision=revision)


def test_export_of_a_run_diverged_from_its_first_epoch_does_not_advise_an_earlier_checkpoint(trained, tmp_path,
                                                                                               capsys):
    """A run whose loss was NaN from its first epoch (a huge --lr): export advised 'a checkpoint of an epoch before
    that (checkpoint-N.pth.tar of its run folder)', of which it has none; the line now says it diverged from its
    first epoch, as its summary.csv records, and what is allowed."""
    root, _ = trained
    run = tmp_path / 'run'
    run.mkdir()
    saved = torch.load(root / 'model_best.pth.tar', weights_only=False)
    nan = {k: torch.full_like(v, math.nan) if v.is_floating_point() else v for k, v in saved['state_dict'].items()}
    torch.save(dict(saved, state_dict=nan, state_dict_ema=nan, epoch=1), run / 'model_best.pth.tar')
    (run / 'args.yaml').write_text((root / 'args.yaml').read_text())
    (run / 'summary.csv').write_text('epoch,train_loss,eval_loss,eval_top1,eval_top5\n0,nan,nan,10.0,50.0\n'
                                     '1,nan,nan,10.0,50.0\n')
    with pytest.raises(SystemExit):
        main(['export', str(run), '--out', str(tmp_path / 'out'), '--dataset', 'cifar10'])
    err = capsys.readouterr().err
    assert err.startswith(f'timm-sl export: {run / "model_best.pth.tar"} holds NaN or infinite weights (')
    assert err.endswith(
        '): the run had diverged when it was saved, from its first epoch (its summary.csv: a NaN eval_loss or '
        'top-1 in each of its 2 epochs), so no checkpoint of it holds trained weights; allowed: a run with a finite '
        'top-1 (train it again, say with a lower --lr)\n'), err
    assert '10.0' in (run / 'summary.csv').read_text() and 'NaN top-1 in' not in err  # the file's top-1 is 10.0
    assert not (tmp_path / 'out').exists()


def test_an_export_over_an_earlier_one_cut_short_leaves_it_whole_and_keeps_each_files_mode(trained, tmp_path,
                                                                                           monkeypatch):
    """export --overwrite over an earlier export wrote into its files: cut short while writing the weights (a full
    disk, Ctrl-C) it left the earlier card beside half the new weights, and a model.safetensors the user had made
    private (chmod 600) came back readable by all. Each file is now written whole first and moved over its earlier
    one, keeping that one's mode, as release.json and the charts are."""
    root, _ = trained
    out, _ = _export(trained, tmp_path)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    for file in out.iterdir():
        file.chmod(0o600)
    import timm_sl.tools.hub as hub

    def cut_short(model, folder, **kwargs):
        (Path(folder) / 'model.safetensors').write_bytes(b'\0' * 100)
        raise OSError(28, 'No space left on device')
    monkeypatch.setattr(hub, 'save_for_hf', cut_short)
    with pytest.raises(OSError, match='No space left'):
        export_checkpoint(root / 'model_best.pth.tar', 'sl_vit_32', out, model_kwargs=KWARGS, overwrite=True,
                          summary=root / 'summary.csv', dataset='cifar10')
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before  # nothing half-written, nothing left beside
    monkeypatch.undo()
    export_checkpoint(root / 'model_best.pth.tar', 'sl_vit_32', out, model_kwargs=KWARGS, overwrite=True,
                      summary=root / 'summary.csv', dataset='cifar10', label_names=[str(i) for i in range(7)])
    assert sorted(p.name for p in out.iterdir()) == sorted(before)
    assert json.loads((out / 'config.json').read_text())['label_names'] == [str(i) for i in range(7)]
    assert {p.name: p.stat().st_mode & 0o777 for p in out.iterdir()} == dict.fromkeys(before, 0o600)


@pytest.mark.parametrize('value', ['no', 'False', 1])
def test_export_refuses_an_overwrite_that_is_no_bool_before_writing(value, trained, tmp_path):
    """export_checkpoint(..., overwrite='no') took the text for True and replaced the README.md of a non-empty folder
    (prepare_fashion_mnist's overwrite='no' is refused so since): refused first, naming the argument."""
    root, _ = trained
    out = tmp_path / 'export'
    out.mkdir()
    (out / 'README.md').write_text('mine\n')
    with pytest.raises(TypeError, match=f"^export_checkpoint: overwrite={value!r} is invalid; allowed: True or False$"):
        export_checkpoint(root / 'model_best.pth.tar', 'sl_vit_32', out, model_kwargs=KWARGS, overwrite=value,
                          summary=root / 'summary.csv', dataset='cifar10')
    assert [p.name for p in out.iterdir()] == ['README.md'] and (out / 'README.md').read_text() == 'mine\n'


def test_a_run_of_img_size_beside_the_recipes_input_size_exports_the_size_it_trained_at():
    """train.py reads --img-size only without --input-size (which every recipe sets): the run trained at 32 px, and
    export refused its args.yaml as 'a data config timm cannot resolve ... which no training ran with'."""
    from timm_sl.tools.hub import training_data_config
    model = timm.create_model('sl_vit_32', depth=1, num_classes=10)
    config = training_data_config(model, dict(input_size=[3, 32, 32], img_size=48, mean=[0.3] * 3, std=[0.4] * 3))
    assert config['input_size'] == (3, 32, 32) and config['mean'] == (0.3, 0.3, 0.3)
    with pytest.raises(ValueError, match=r'^the run gives a data config timm cannot resolve \(Requested image size'):
        training_data_config(model, dict(img_size=48))  # alone, train.py would have built a 48 px model


def test_kwargs_given_as_a_tuple_are_the_runs_that_yaml_recorded_as_a_list(tmp_path):
    """train.py's args.yaml writes ``--model-kwargs depth=(1,1,1)`` as a list: the same kwargs given to export again
    (as docs/transformers.md says) are the run's, not refused as another model's."""
    import yaml
    kwargs = dict(depth=(1, 1, 1), heads=(1, 1, 1), base_dims=(8, 8, 8), spt=False, lsa=False)
    run = _train_run(tmp_path / 'run', 'sl_pit_32', kwargs)
    args = json.loads((run.parent / 'args.yaml').read_text())
    (run.parent / 'args.yaml').write_text(yaml.safe_dump(dict(args, model_kwargs=kwargs)))
    assert main(['export', str(run), '--model', 'sl_pit_32', '--model-kwargs', 'depth=(1,1,1)', 'heads=(1,1,1)',
                 'base_dims=(8,8,8)', 'spt=False', 'lsa=False', '--out', str(tmp_path / 'out')]) == 0
    config = json.loads((tmp_path / 'out' / 'config.json').read_text())
    assert config['model_args']['depth'] == [1, 1, 1] and config['model_args']['spt'] is False
    with pytest.raises(ValueError, match=r"--model-kwargs \{'depth': \(1, 1, 1\), .*'drop_rate': 0.1\} are not the "
                       r"run's: .*args.yaml records \{'base_dims': \[8, 8, 8\], 'depth': \[1, 1, 1\], "):
        export_checkpoint(run, 'sl_pit_32', tmp_path / 'other', model_kwargs=dict(kwargs, drop_rate=0.1))


@pytest.mark.parametrize('name, kwargs, line', [
    pytest.param('sl_pit_32', dict(depth=(1, 1, 1), spt=False, lsa=False, spt_pool=False),
                 '- Variant: baseline (SPT off, LSA off, SPT pooling off)', marks=pytest.mark.extended),
    pytest.param('sl_swin_32', dict(depths=(1, 1, 1), spt_pool=False),
                 '- Variant: SL w/o Spool (SPT on, LSA on, SPT pooling off)', marks=pytest.mark.extended),
    pytest.param('sl_cait_32', dict(depth=1, depth_token_only=1), '- Variant: SL (SPT on, LSA on)',
                 marks=pytest.mark.extended),
    ('sl_t2t_32', dict(depth=1, spt=False, lsa=False, embed_dim=16, num_heads=1, token_dim=8),
     '- Variant: baseline (SPT off, LSA off)'),
])
def test_the_card_says_what_the_switches_make_the_model(name, kwargs, line, tmp_path):
    """A family's card with model kwargs (a baseline, SL at a small depth) says which of SL / baseline it is: the
    kwargs alone named no variant, so a baseline read as the paper's SPT + LSA model."""
    out, _ = export_checkpoint(_train_run(tmp_path / 'run', name, kwargs), None, tmp_path / 'out')
    details = (out / 'README.md').read_text().split('## Model details')[1].split('\n## ')[0]
    assert line in details.split('\n')


def test_a_token_file_this_user_cannot_read_is_named_not_the_network(tmp_path, monkeypatch, capsys):
    """A Hub token left by `sudo hf auth login` (root's, mode 600) made push say 'could not reach the Hugging Face
    Hub ... check the network': the network was fine. The file and the system's reason are named now."""
    import huggingface_hub
    token = tmp_path / 'hf' / 'token'

    class Api:
        def create_repo(self, *a, **k):  # what huggingface_hub does reading a token file of another user
            raise PermissionError(13, 'Permission denied', str(token))
    monkeypatch.setattr(huggingface_hub, 'HfApi', Api)
    save_for_hf(timm.create_model('sl_vit_32', depth=1, num_classes=7), tmp_path, model_args=dict(depth=1),
                safe_serialization=True)
    make_transformers_compatible(tmp_path)
    with pytest.raises(SystemExit) as info:
        main(['push', str(tmp_path), '--repo-id', 'org/name'])
    assert info.value.code == 2
    assert capsys.readouterr().err == (
        f'timm-sl push: could not push org/name: {token}: permission denied; allowed: a file this user may read and '
        f'write (one another user made, such as a token of sudo hf auth login: chown it), or HF_TOKEN / HF_HOME set '
        f'elsewhere\n')


def test_a_full_temporary_folder_at_the_push_is_named_not_a_token_file(tmp_path, monkeypatch, capsys):
    """Staging the upload on a full TMPDIR ended as 'could not push ...: exp/model.safetensors: no space left on
    device; allowed: ... a token of sudo hf auth login: chown it': neither the file nor a token was the cause."""
    import re
    import shutil
    import huggingface_hub
    class Api:
        def __getattr__(self, name):
            pytest.fail(f'the Hub was asked ({name}) before the upload was staged')
    monkeypatch.setattr(huggingface_hub, 'HfApi', Api)
    save_for_hf(timm.create_model('sl_vit_32', depth=1, num_classes=7), tmp_path / 'exp', model_args=dict(depth=1),
                safe_serialization=True)
    make_transformers_compatible(tmp_path / 'exp')
    monkeypatch.setattr(os, 'link', lambda *a, **k: (_ for _ in ()).throw(OSError(18, 'Invalid cross-device link')))

    def full(source, target, **kwargs):  # what the system says when TMPDIR has no room: the source is named
        raise OSError(28, 'No space left on device', str(source))
    monkeypatch.setattr(shutil, 'copyfile', full)
    with pytest.raises(SystemExit):
        main(['push', str(tmp_path / 'exp'), '--repo-id', 'org/name'])
    err = capsys.readouterr().err
    assert re.fullmatch(rf'timm-sl push: \S+: could not copy {re.escape(str(tmp_path / "exp"))} there for the upload '
                        r'\(no space left on device\); allowed: TMPDIR set to a folder with room for it\n', err), err


def test_label_names_files_mutated_at_random_are_the_runs_class_order_or_refused_naming_the_file(tmp_path):
    """Seeded mutations of a --label-names file for a run of class folders (c1, c2, c3, c10: timm's natural order):
    lines swapped, shifted, reversed, sorted (c10 before c2), dropped, doubled, blank, edited (a typo, another case),
    padded, in other encodings and line ends, cut. Either the names read keep every class folder's name at its class,
    or the file is refused in one line naming it. Names in another order with one edited passed unchecked."""
    import codecs
    import random
    from types import SimpleNamespace
    from timm_sl.tools.hub import _check_folder_class_order, read_label_names
    classes = ['c1', 'c2', 'c3', 'c10']
    data = tmp_path / 'data'
    for name in classes:
        (data / 'train' / name).mkdir(parents=True)
        (data / 'train' / name / 'x.png').write_bytes(b'')
    record = SimpleNamespace(run_dir=tmp_path, args={'data_dir': str(data), 'dataset': ''})
    rng, names_file = random.Random(25), tmp_path / 'names.txt'
    edits = {
        'swap': lambda n: (lambda i, j: [n[j] if k == i else n[i] if k == j else v for k, v in enumerate(n)])(
            *rng.sample(range(len(n)), 2)) if len(n) > 1 else n,
        'shift': lambda n: n[1:] + n[:1], 'reverse': lambda n: n[::-1], 'sorted': sorted,
        'drop': lambda n: n[:-1], 'double': lambda n: n + n[:1], 'blank': lambda n: n[:1] + [''] + n[1:],
        'typo': lambda n: [v + 'x' if i == 0 else v for i, v in enumerate(n)],
        'case': lambda n: [v.upper() if i == len(n) - 1 else v for i, v in enumerate(n)],
        'pad': lambda n: [f' {v}\t' for v in n]}
    seen = {'ok': 0, 'refused': 0}
    for _ in range(300):
        names = list(classes)
        for edit in rng.sample(sorted(edits), rng.randint(1, 3)):
            names = edits[edit](names)
        form = rng.choice(['\n', '\r\n', 'json', 'utf-16', 'bom', 'cut'])
        text = json.dumps(names) if form == 'json' else ('\n' if form in ('cut', 'utf-16', 'bom') else form).join(names)
        raw = text.encode('utf-16') if form == 'utf-16' else codecs.BOM_UTF8 * (form == 'bom') + text.encode()
        names_file.write_bytes(raw[:rng.randrange(1, len(raw) + 1)] if form == 'cut' else raw)
        try:
            read = read_label_names(names_file)
        except ValueError as e:
            assert str(e).startswith(str(names_file)) and '\n' not in str(e), str(e)
            seen['refused'] += 1
            continue
        if len(read) != len(classes):  # refused for its count by export, which needs the model
            continue
        try:
            _check_folder_class_order(record, read)
        except ValueError as e:
            assert "in timm's order" in str(e) and '\n' not in str(e), str(e)
            assert any(n in classes and classes.index(n) != i for i, n in enumerate(read)), (read, str(e))
            seen['refused'] += 1
            continue
        assert all(classes.index(n) == i for i, n in enumerate(read) if n in classes), (raw, read)
        seen['ok'] += 1
    assert seen['ok'] > 20 and seen['refused'] > 100, seen


def _recorded_uploads(monkeypatch) -> list:
    """huggingface_hub's HfApi replaced by one that records each upload's files (name -> bytes) in the list returned."""
    import huggingface_hub
    uploaded = []

    class Api:
        def create_repo(self, *a, **k):
            pass

        def upload_folder(self, folder_path, **k):
            uploaded.append({p.name: p.read_bytes() for p in Path(folder_path).iterdir()})
            return 'https://hub/commit'

    monkeypatch.setattr(huggingface_hub, 'HfApi', Api)
    return uploaded


def _pushed_leaving_it_as_it_was(folder: Path, capsys) -> Tuple[int, str]:
    """``timm-sl push FOLDER``'s exit status and stderr; the folder's files are checked unchanged by it."""
    import hashlib
    before = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.iterdir()}
    try:
        code = main(['push', str(folder), '--repo-id', 'org/name'])
    except SystemExit as e:
        code = e.code
    assert before == {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.iterdir()}
    return code, capsys.readouterr().err


def test_export_folders_mutated_at_random_are_pushed_whole_or_refused_naming_the_file(tmp_path, capsys, monkeypatch):
    """Seeded mutations of an exported folder (config.json's label names, pretrained_cfg values; model.safetensors
    with NaN, a tensor dropped or added; files beside): push leaves the folder as it was, and either uploads files that
    load in timm with names both timm and transformers read alike (one line each, once, not blank) and finite
    weights, or refuses in one line naming a file of the folder. NaN weights and names of two lines were uploaded."""
    import random
    from safetensors.torch import load_file, save_file
    uploaded = _recorded_uploads(monkeypatch)
    source = tmp_path / 'export'
    save_for_hf(timm.create_model('sl_vit_32', depth=1, num_classes=3), source, model_args=dict(depth=1),
                safe_serialization=True)
    make_transformers_compatible(source)
    exported = json.loads((source / 'config.json').read_text())
    (source / 'config.json').write_text(json.dumps(dict(exported, label_names=['cat', 'dog', 'fox'])))
    rng, folder = random.Random(25), tmp_path / 'f'
    hostile = [None, 0, -1, '', 'a\nb', ' ', 3, ['x'], {}, float('nan'), 'cat']

    def config_edit():
        config = json.loads((folder / 'config.json').read_text())
        names = list(config['label_names'])
        names[rng.randrange(3)] = rng.choice(hostile)
        where = rng.choice(['top', 'cfg', 'both'])
        config.update(label_names=names if where != 'cfg' else config['label_names'])
        if where != 'top':
            config['pretrained_cfg']['label_names'] = names
        if rng.random() < 0.3:
            config['pretrained_cfg'][rng.choice(['mean', 'std', 'crop_pct', 'input_size'])] = rng.choice(hostile)
        (folder / 'config.json').write_text(json.dumps(config))

    def weights_edit():
        state = load_file(str(folder / 'model.safetensors'))
        name = rng.choice(sorted(state))
        how = rng.choice(['nan', 'inf', 'drop', 'extra'])
        if how in ('nan', 'inf'):
            state[name] = state[name].clone()
            state[name].view(-1)[0] = float(how)
        elif how == 'drop':
            del state[name]
        else:
            state['extra'] = torch.zeros(2)
        save_file(state, str(folder / 'model.safetensors'))

    def files_edit():
        (folder / rng.choice(['notes.txt', 'pytorch_model.bin'])).write_bytes(b'beside')

    outcome = {'pushed': 0, 'refused': 0}
    for _ in range(24):
        shutil.rmtree(folder, ignore_errors=True)
        shutil.copytree(source, folder)
        for _ in range(rng.randint(1, 2)):
            rng.choice([config_edit, config_edit, weights_edit, files_edit])()
        uploaded.clear()
        code, err = _pushed_leaving_it_as_it_was(folder, capsys)
        if code:
            assert err.startswith(f'timm-sl push: {folder}/') and err.count('\n') == 1, err
            outcome['refused'] += 1
            continue
        files, = uploaded
        assert sorted(files) == ['README.md', 'config.json', 'model.safetensors'] or \
            sorted(files) == ['config.json', 'model.safetensors']
        config = json.loads(files['config.json'])
        names = config.get('label_names')
        # timm names the classes by the top level's names where there are (else pretrained_cfg's), transformers by
        # the top level's only: pretrained_cfg's alone would name them apart
        assert names is not None or config['pretrained_cfg'].get('label_names') is None, config
        assert names is None or (len(names) == 3 == len(set(names)) and all(
            isinstance(n, str) and n.strip() and n.splitlines() == [n] for n in names)), names
        assert all(bool(torch.isfinite(v).all()) for v in load_file(str(folder / 'model.safetensors')).values())
        outcome['pushed'] += 1
    assert outcome['pushed'] >= 2 and outcome['refused'] >= 12, outcome


def _pushed_export(tmp_path, monkeypatch, name='sl_vit_32', **kwargs):
    """An export of a tiny ``name`` (label names, CIFAR-10's data config) and an upload that records the files."""
    uploaded = _recorded_uploads(monkeypatch)
    folder = tmp_path / 'export'
    save_for_hf(timm.create_model(name, num_classes=3, **kwargs), folder, model_args=kwargs, safe_serialization=True,
                model_config=dict(label_names=['cat', 'dog', 'fox']))
    config = json.loads((folder / 'config.json').read_text())
    config['pretrained_cfg'].update(mean=list(CIFAR10_MEAN), std=list(CIFAR10_STD), crop_pct=0.9,
                                    interpolation='bilinear', crop_mode='center')
    (folder / 'config.json').write_text(json.dumps(config))
    return folder, config, uploaded


def _push_with(tmp_path, monkeypatch, capsys, key, value) -> Tuple[Path, str, list]:
    """push of a tiny export whose ``pretrained_cfg[key]`` is ``value``: the folder, stderr and what was uploaded."""
    folder, config, uploaded = _pushed_export(tmp_path, monkeypatch, depth=1)
    config['pretrained_cfg'][key] = value
    (folder / 'config.json').write_text(json.dumps(config))
    code, err = _pushed_leaving_it_as_it_was(folder, capsys)
    assert code
    return folder, err, uploaded


@pytest.mark.parametrize('key,value', [('crop_pct', 0), ('crop_pct', []), ('crop_pct', None), ('interpolation', ''),
                                       ('crop_mode', '')])
def test_push_refuses_a_data_config_value_timm_reads_as_unset(key, value, tmp_path, capsys, monkeypatch):
    """A config.json of crop_pct 0 (or [], null), interpolation '' was pushed: timm's resolver takes such a value for
    unset and loaders of the upload preprocessed by its default (crop 0.875, bicubic) with no word."""
    folder, err, uploaded = _push_with(tmp_path, monkeypatch, capsys, key, value)
    assert err.startswith(f'timm-sl push: {folder / "config.json"} gives a {key} of {value!r}, which timm reads as '
                          f'unset (') and err.count('\n') == 1 and not uploaded, err


@pytest.mark.parametrize('value', [2, [1], [0.5]])
def test_push_refuses_a_config_whose_weights_timm_cannot_load(value, tmp_path, capsys, monkeypatch):
    """A config.json of pretrained_cfg.first_conv 2 (T2T and slify models name no first conv of their own, so timm's
    loader reads the file's) built a model and was pushed, but timm.create_model('hf-hub:...', pretrained=True) of the
    upload raised a TypeError: push builds the model as a loader does, with its weights."""
    folder, config, uploaded = _pushed_export(tmp_path, monkeypatch, 'sl_t2t_32', depth=1)
    config['pretrained_cfg']['first_conv'] = value
    (folder / 'config.json').write_text(json.dumps(config))
    with pytest.raises(SystemExit):
        main(['push', str(folder), '--repo-id', 'org/name'])
    err = capsys.readouterr().err
    assert err.startswith(f'timm-sl push: {folder / "config.json"} does not load model.safetensors in timm (') \
        and err.count('\n') == 1 and not uploaded, err


@pytest.mark.parametrize('name,kwargs', [('sl_pit_32', dict(depth=(1, 1, 1))), ('sl_vit_32', dict(depth=1))])
@pytest.mark.parametrize('value', [float('inf'), '/nope/x', 3])
def test_push_refuses_a_classifier_that_a_loader_of_another_class_count_cannot_adapt(name, kwargs, value, tmp_path,
                                                                                      capsys, monkeypatch):
    """A config.json of pretrained_cfg.classifier inf (or a name of no module) was pushed: its upload loaded as it was,
    but timm.create_model(..., pretrained=True, num_classes=5), the adaptation hub.md documents, raised (a size
    mismatch, or a false 'missing 1 required positional argument')."""
    folder, config, uploaded = _pushed_export(tmp_path, monkeypatch, name, **kwargs)
    config['pretrained_cfg']['classifier'] = value
    (folder / 'config.json').write_text(json.dumps(config))
    with pytest.raises(SystemExit):
        main(['push', str(folder), '--repo-id', 'org/name'])
    err = capsys.readouterr().err
    assert err.startswith(f'timm-sl push: {folder / "config.json"} does not load model.safetensors in timm for a head '
                          f'of another class count (') and err.count('\n') == 1 and not uploaded, err


@pytest.mark.parametrize('key,value', [('hf_hub_filename', 'weights.bin'), ('hf_hub_filename', 7),
                                       ('custom_load', 'hf')])
def test_push_refuses_a_pretrained_cfg_that_sends_hf_hub_loads_elsewhere(key, value, tmp_path, capsys, monkeypatch):
    """A config.json of pretrained_cfg.hf_hub_filename 'weights.bin' (or 7, custom_load 'hf') loaded from local-dir:
    and was pushed, but timm.create_model('hf-hub:...', pretrained=True) of the upload looked for another file (or
    raised an AttributeError): the file timm reads from the Hub is the config's, not model.safetensors."""
    folder, err, uploaded = _push_with(tmp_path, monkeypatch, capsys, key, value)
    assert err.startswith(f'timm-sl push: {folder / "config.json"} gives pretrained_cfg.{key} {value!r}: an hf-hub: '
                          f'load') and err.count('\n') == 1 and not uploaded, err


def test_exports_of_every_kind_mutated_at_random_load_back_as_their_config_says_or_are_refused(tmp_path, capsys,
                                                                                                monkeypatch):
    """Seeded mutations of pretrained_cfg / model_args values of exports of every family (vit, pit, swin, cait, t2t, a
    baseline, slify): push leaves the folder as it was and either uploads files that load in timm (as they are and for
    another class count) to the logits of their weights, with the config's label names and data config, or refuses
    in one line naming config.json. A crop_pct 0, a first_conv 2 or a classifier inf were uploaded."""
    import random
    from safetensors.torch import load_file
    from timm.data import resolve_data_config
    kinds = [('sl_vit_32', dict(depth=1)), ('sl_pit_32', dict(depth=(1, 1, 1))), ('sl_swin_32', dict(depths=(1, 1, 1))),
             ('sl_cait_32', dict(depth=1, depth_token_only=1)), ('sl_t2t_32', dict(depth=1)),
             ('sl_vit_32', dict(depth=1, spt=False, lsa=False)),
             ('slify', dict(base='vit_tiny_patch16_224', img_size=32, patch_size=8, depth=1))]
    rng, folder, x = random.Random(25), tmp_path / 'f', torch.randn(1, 3, 32, 32)
    hostile = [None, 0, -1, '', [], {}, 2, float('inf'), 'bicubic', '/nope', [0.5], 'a\nb']
    keys = ['crop_pct', 'interpolation', 'crop_mode', 'first_conv', 'classifier', 'mean', 'input_size',
            'hf_hub_filename', 'num_classes', 'label_offset']
    outcome = {'pushed': 0, 'refused': 0}
    for i in range(28):
        name, kwargs = kinds[i % len(kinds)]
        source, config, uploaded = _pushed_export(tmp_path / str(i), monkeypatch, name, **kwargs)
        cfg = config['pretrained_cfg']
        for _ in range(rng.randint(1, 2)):
            cfg[rng.choice(keys)] = rng.choice(hostile)
        (source / 'config.json').write_text(json.dumps(config))
        code, err = _pushed_leaving_it_as_it_was(source, capsys)
        if code:
            assert err.startswith(f'timm-sl push: {source}/config.json') and err.count('\n') == 1, err
            outcome['refused'] += 1
            continue
        files, = uploaded
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir()
        for file, data in files.items():
            (folder / file).write_bytes(data)
        assert 'hf_hub_filename' not in cfg or not cfg['hf_hub_filename'], cfg  # hf-hub: would read another file
        model = timm.create_model(f'local-dir:{folder}', pretrained=True).eval()
        assert timm.create_model(f'local-dir:{folder}', pretrained=True, num_classes=5)(x).shape == (1, 5)
        ref = timm.create_model(name, num_classes=3, **kwargs).eval()
        ref.load_state_dict(load_file(str(folder / 'model.safetensors')))
        torch.testing.assert_close(model(x), ref(x))
        assert model.pretrained_cfg['label_names'] == ['cat', 'dog', 'fox']
        data = resolve_data_config({}, model=model)
        assert [data[k] for k in ('crop_pct', 'interpolation', 'crop_mode')] == [
            cfg.get(k) for k in ('crop_pct', 'interpolation', 'crop_mode')], (data, cfg)
        assert list(data['mean']) == list(cfg['mean']) and list(data['input_size']) == list(cfg['input_size'])
        outcome['pushed'] += 1
    assert outcome['pushed'] >= 5 and outcome['refused'] >= 8, outcome
