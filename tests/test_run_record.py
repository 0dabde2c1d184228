"""From a train.py run to an exported folder: the run record read once, every kind of model (sl_, baseline kwargs,
slify) exported and loaded back, checkpoints as timm reads them, and one-line errors (exit status 2)."""
import argparse
import json
import math
import os
import re
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest
import torch
from PIL import Image

import timm
from timm_sl.tools.checkpoint import model_from_checkpoint
from timm_sl.tools.cli import main
from timm_sl.tools.hub import export_checkpoint
from timm_sl.tools.runs import RunRecord, read_checkpoint
from test_loading import files  # noqa: F401  (a fixture: damaged, foreign and code-carrying checkpoint files)


def _train_run(folder: Path, model: str, kwargs: dict, args_yaml: bool = True, **extra_args) -> torch.nn.Module:
    """A train.py run folder: checkpoint with ``arch`` and ``args`` (and, unless told not to, args.yaml +
    summary.csv)."""
    folder.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    model_obj = timm.create_model(model, num_classes=4, **kwargs).eval()
    args = dict(model=model, model_kwargs=kwargs, num_classes=4, seed=1, lr=1e-3, epochs=2, **extra_args)
    torch.save({'epoch': 1, 'arch': model, 'state_dict': model_obj.state_dict(), 'args': argparse.Namespace(**args)},
               folder / 'model_best.pth.tar')
    if args_yaml:
        (folder / 'args.yaml').write_text(json.dumps(args))
        (folder / 'summary.csv').write_text('epoch,train_loss,eval_loss,eval_top1,eval_top5\n0,1,1,50.0,90.0\n'
                                            '1,1,1,55.5,95.0\n')
    return model_obj


def _fails(argv, capsys) -> str:
    """A command's error: exit status 2 and one line on stderr."""
    with pytest.raises(SystemExit) as e:
        main(argv)
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.count('\n') == 1, err
    return err.rstrip('\n')


def _loads_equal_in_fresh_interpreter(folder: Path, model: torch.nn.Module, tmp_path: Path, size: int = 32) -> None:
    x = torch.randn(2, 3, size, size)
    with torch.no_grad():
        torch.save({'x': x, 'y': model(x)}, tmp_path / 'io.pt')
    code = textwrap.dedent(f'''
        import torch, timm
        io = torch.load(r'{tmp_path / 'io.pt'}')
        m = timm.create_model(r'local-dir:{folder}', pretrained=True).eval()
        with torch.no_grad():
            torch.testing.assert_close(m(io['x']), io['y'], atol=1e-5, rtol=1e-5)
        print('ok')
    ''')
    env = {k: v for k, v in os.environ.items() if k != 'TIMM_SL_NO_AUTOLOAD'}
    result = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, env=env, timeout=300)
    assert result.stdout.strip() == 'ok', result.stderr[-2000:]


SLIFY_KWARGS = dict(base='vit_tiny_patch16_224', img_size=32, patch_size=4, depth=2)


def test_slify_run_exports_with_its_base_and_loads_back(tmp_path, capsys):
    model = _train_run(tmp_path / 'run', 'slify', SLIFY_KWARGS, img_size=32)
    out = tmp_path / 'out'
    assert main(['export', str(tmp_path / 'run' / 'model_best.pth.tar'), '--model', 'slify', '--out', str(out)]) == 0
    config = json.loads((out / 'config.json').read_text())
    assert config['architecture'] == 'slify' and config['model_args']['base'] == 'vit_tiny_patch16_224'
    assert config['num_classes'] == 4 and config['pretrained_cfg']['input_size'] == [3, 32, 32]
    assert '`vit_tiny_patch16_224` converted by `slify`' in (out / 'README.md').read_text()
    _loads_equal_in_fresh_interpreter(out, model, tmp_path)
    five = timm.create_model(f'local-dir:{out}', pretrained=True, num_classes=5)
    assert five.num_classes == 5 and five.sl_args.spt
    # adapted as the sl_ models' exports are (was: the SPT projection re-initialised with a warning for in_chans,
    # a multi-line size-mismatch error for img_size)
    grey = timm.create_model(f'local-dir:{out}', pretrained=True, in_chans=1).eval()
    g = torch.randn(2, 1, 32, 32)
    with torch.no_grad():
        torch.testing.assert_close(grey(g), model(g.expand(-1, 3, -1, -1)), atol=1e-4, rtol=1e-4)
    big = timm.create_model(f'local-dir:{out}', pretrained=True, img_size=64).eval()
    assert big.pos_embed.shape == (1, 257, 192) and big(torch.randn(1, 3, 64, 64)).shape == (1, 4)


@pytest.mark.parametrize('kwargs', [{}, dict(spt=False, lsa=False)], ids=['sl', 'baseline'])
def test_export_takes_the_model_the_checkpoint_records(kwargs, tmp_path, capsys):
    """No --model: a train.py checkpoint names its arch and kwargs (here without an args.yaml beside it)."""
    model = _train_run(tmp_path / 'run', 'sl_vit_32', dict(depth=1, **kwargs), args_yaml=False)
    out = tmp_path / 'out'
    assert main(['export', str(tmp_path / 'run' / 'model_best.pth.tar'), '--out', str(out)]) == 0
    config = json.loads((out / 'config.json').read_text())
    assert config['architecture'] == 'sl_vit_32' and config['model_args']['depth'] == 1
    assert all(config['model_args'][k] == v for k, v in kwargs.items())
    loaded = timm.create_model(f'local-dir:{out}', pretrained=True).eval()
    x = torch.randn(2, 3, 32, 32)
    with torch.no_grad():
        torch.testing.assert_close(loaded(x), model(x))


def test_export_without_a_recorded_model_asks_for_it(tmp_path, capsys):
    torch.save(timm.create_model('sl_vit_32', depth=1).state_dict(), tmp_path / 'bare.pth')
    err = _fails(['export', str(tmp_path / 'bare.pth'), '--out', str(tmp_path / 'o')], capsys)
    assert err == (f'timm-sl export: {tmp_path / "bare.pth"} records no model (no args.yaml beside it, no arch / args '
                   f'in it); name it with --model')


def test_state_dict_of_a_compiled_model_exports(tmp_path):
    """torch.compile wraps the model: its state dict keys start with _orig_mod. (timm's clean_state_dict strips it)."""
    model = timm.create_model('sl_vit_32', depth=1, num_classes=3).eval()
    torch.save({'state_dict': {f'_orig_mod.{k}': v for k, v in model.state_dict().items()}}, tmp_path / 'c.pth')
    out, source = export_checkpoint(tmp_path / 'c.pth', 'sl_vit_32', tmp_path / 'out', model_kwargs=dict(depth=1))
    loaded = timm.create_model(f'local-dir:{out}', pretrained=True).eval()
    x = torch.randn(1, 3, 32, 32)
    with torch.no_grad():
        torch.testing.assert_close(loaded(x), model(x))


@pytest.mark.parametrize('content', [b'not a checkpoint at all', 'truncated'])
def test_a_file_that_is_not_a_checkpoint_is_one_line(content, tmp_path, capsys):
    run = tmp_path / 'runs' / 'r'
    _train_run(run, 'sl_vit_32', dict(depth=1))
    data = (run / 'model_best.pth.tar').read_bytes()
    (run / 'model_best.pth.tar').write_bytes(data[:len(data) // 2] if content == 'truncated' else content)
    ckpt = run / 'model_best.pth.tar'
    for argv in (['export', str(ckpt), '--model', 'sl_vit_32', '--out', str(tmp_path / 'o')],
                 ['release', str(tmp_path / 'runs'), '--org', 'o', '--out', str(tmp_path / 'rel'), '--dataset', 'd']):
        err = _fails(argv, capsys)
        assert err.startswith(f'timm-sl {argv[0]}: {ckpt} is not a readable torch checkpoint'), err


def test_export_refuses_a_non_empty_out_and_writes_readable_files(tmp_path, capsys):
    _train_run(tmp_path / 'run', 'sl_vit_32', dict(depth=1))
    ckpt = str(tmp_path / 'run' / 'model_best.pth.tar')
    out = tmp_path / 'out'
    out.mkdir()
    (out / 'notes.txt').write_text('mine')
    assert _fails(['export', ckpt, '--out', str(out)], capsys) == (
        f'timm-sl export: --out {out} is not empty; allowed: a new or empty folder, or --overwrite to replace the '
        f'files an export writes there')
    assert {p.name for p in out.iterdir()} == {'notes.txt'}
    old = os.umask(0o022)
    try:
        assert main(['export', ckpt, '--out', str(out), '--overwrite']) == 0
    finally:
        os.umask(old)
    assert {p.name: p.stat().st_mode & 0o777 for p in out.iterdir()} == {
        'notes.txt': 0o644, 'README.md': 0o644, 'config.json': 0o644, 'model.safetensors': 0o644}


def test_card_says_what_its_recipe_list_is(tmp_path):
    _train_run(tmp_path / 'run', 'sl_vit_32', dict(depth=1))
    out, _ = export_checkpoint(tmp_path / 'run' / 'model_best.pth.tar', None, tmp_path / 'out')
    card = (out / 'README.md').read_text()
    assert "differ from train.py's defaults" not in card
    assert ("## Training recipe (the run's train.py arguments as recorded, less switches left off, paths, machine and "
            "logging; timm's train.py was not at hand to compare with its defaults)") in card
    assert '| best top-1 (%) | 55.50 |' in card  # the run folder's summary.csv, read without --summary


def test_import_does_not_depend_on_the_program_name():
    code = ("import sys; sys.argv[0] = 'timm-sl'; import timm_sl, timm; assert 'sl_vit_32' in timm.list_models("
            "'sl_*'); print(timm_sl.SlVisionTransformer.__name__)")
    result = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, timeout=300,
                            env=dict(os.environ, TIMM_SL_NO_AUTOLOAD='1'))
    assert result.stdout.strip() == 'SlVisionTransformer', result.stderr[-2000:]


def test_release_of_a_slify_run_and_a_baseline_run(tmp_path):
    from timm_sl.tools.release import release
    slify_model = _train_run(tmp_path / 'runs' / 'slify', 'slify', SLIFY_KWARGS, img_size=32, dataset='')
    base_model = _train_run(tmp_path / 'runs' / 'base', 'sl_vit_32', dict(depth=1, spt=False, lsa=False), dataset='')
    released = release([tmp_path / 'runs'], tmp_path / 'rel', 'org', '{model}-{variant}', dataset='digits',
                       echo=lambda _: None)
    assert [(r.model, r.family, r.variant) for r in released] == [('sl_vit_32', 'vit', 'custom'),
                                                                  ('slify', 'slify', 'custom')]
    x = torch.randn(2, 3, 32, 32)
    for r, model in zip(released, (base_model, slify_model)):
        loaded = timm.create_model(f'local-dir:{r.folder}', pretrained=True).eval()
        with torch.no_grad():
            torch.testing.assert_close(loaded(x), model(x))


def test_safetensors_weights_export(tmp_path):
    from safetensors.torch import save_file
    model = timm.create_model('sl_vit_32', depth=1, num_classes=3).eval()
    save_file(model.state_dict(), tmp_path / 'w.safetensors')
    out, source = export_checkpoint(tmp_path / 'w.safetensors', 'sl_vit_32', tmp_path / 'out',
                                    model_kwargs=dict(depth=1))
    assert source == 'safetensors'
    loaded = timm.create_model(f'local-dir:{out}', pretrained=True).eval()
    x = torch.randn(1, 3, 32, 32)
    with torch.no_grad():
        torch.testing.assert_close(loaded(x), model(x))


def test_export_applies_model_kwargs_given_without_model(tmp_path, capsys):
    """--model-kwargs alone replace the run's kwargs (they were silently dropped when --model was not given)."""
    _train_run(tmp_path / 'run', 'sl_vit_32', dict(depth=1))
    err = _fails(['export', str(tmp_path / 'run' / 'model_best.pth.tar'), '--model-kwargs', 'depth=2',
                  '--out', str(tmp_path / 'o')], capsys)
    assert err.startswith('timm-sl export: ') and 'depth' in err and 'blocks.1' in err


@pytest.mark.parametrize('kwarg,error', [('num_heads=0', 'num_heads=0 is invalid; allowed: an int >= 1.'),
                                         ('global_pool=bogus', "global_pool='bogus' is invalid; allowed: ''")])
def test_export_with_kwargs_timm_divides_or_asserts_on_is_one_line(kwarg, error, tmp_path, capsys):
    """timm divides by num_heads unchecked and asserts on global_pool: export's build was a traceback for both (the
    model now names num_heads=0 and global_pool='bogus' itself, on one line)."""
    _train_run(tmp_path / 'run', 'sl_vit_32', dict(depth=1))
    err = _fails(['export', str(tmp_path / 'run' / 'model_best.pth.tar'), '--model-kwargs', kwarg,
                  '--out', str(tmp_path / 'o')], capsys)
    assert err.startswith('timm-sl export: ') and 'cannot build sl_vit_32' in err  # one line: _fails
    assert error in err and not (tmp_path / 'o').exists()


def test_export_of_slify_without_base_is_one_line(tmp_path, capsys):
    _train_run(tmp_path / 'run', 'sl_vit_32', dict(depth=1))
    err = _fails(['export', str(tmp_path / 'run' / 'model_best.pth.tar'), '--model', 'slify', '--model-kwargs',
                  'depth=1', '--out', str(tmp_path / 'o')], capsys)
    assert err.startswith('timm-sl export: ') and "base=None is invalid" in err


# ---- what real run folders hold: read, not refused; what cannot be read names the file ----

def _export(tmp_path, target, capsys=None):
    return main(['export', str(target), '--out', str(tmp_path / 'out')])


def test_export_of_a_run_folder_takes_its_best_checkpoint(tmp_path, capsys):
    _train_run(tmp_path / 'run', 'sl_vit_32', dict(depth=1))
    assert _export(tmp_path, tmp_path / 'run') == 0
    assert 'model_best.pth.tar' in capsys.readouterr().out
    (tmp_path / 'empty').mkdir()
    assert _fails(['export', str(tmp_path / 'empty'), '--out', str(tmp_path / 'o2')], capsys) == (
        f'timm-sl export: {tmp_path / "empty"} is a folder without a checkpoint (model_best.pth.tar or last.pth.tar); '
        f'allowed: a checkpoint file or a train.py run folder')


@pytest.mark.parametrize('name', ['README.md', 'summary.csv', 'args.yaml'])
def test_export_of_a_text_file_says_it_is_text(name, tmp_path, capsys):
    _train_run(tmp_path / 'run', 'sl_vit_32', dict(depth=1))
    (tmp_path / 'run' / 'README.md').write_text('# notes\n')
    target = tmp_path / 'run' / name
    assert _fails(['export', str(target), '--model', 'sl_vit_32', '--out', str(tmp_path / 'o')], capsys) == (
        f'timm-sl export: {target} is not a readable torch checkpoint (it is a text file; torch.save writes a zip '
        f'archive)')


def test_args_yaml_without_model_takes_the_checkpoints_arch(tmp_path):
    _train_run(tmp_path / 'run', 'sl_vit_32', dict(depth=1))
    (tmp_path / 'run' / 'args.yaml').write_text('seed: 1\nlr: 0.001\nnum_classes: 4\n')  # no model, no model_kwargs
    out, _ = export_checkpoint(tmp_path / 'run' / 'model_best.pth.tar', None, tmp_path / 'out')
    config = json.loads((out / 'config.json').read_text())
    assert config['architecture'] == 'sl_vit_32' and config['model_args']['depth'] == 1


def test_summary_cut_mid_line_nan_and_unknown_columns(tmp_path):
    from timm_sl.tools.runs import read_summary_rows, summarize
    summary = tmp_path / 'summary.csv'
    summary.write_text('epoch,train_loss,eval_top1,eval_top5,note\n0,1,nan,nan,warm-up\n1,1,40.5,80,x\n'
                       '2,1,42.25,81,y\n3,0.9,4')
    rows = read_summary_rows(summary)
    assert [r['epoch'] for r in rows] == [0, 1, 2] and 'note' not in rows[1]
    assert summarize(summary, rows) == dict(best_top1=42.25, best_top5=81., best_epoch=3, epochs=3, last_epoch=3,
                                             diverged_epoch=None)  # its NaN epoch 1 recovered
    summary.write_text('epoch,eval_top1\n0,nan\n')
    assert summarize(summary)['best_top1'] is None
    summary.write_text('epoch,eval_top1\n0,40\n1,oops\n2,41\n')
    with pytest.raises(ValueError, match=rf'^{summary}:3: not a summary.csv row'):
        read_summary_rows(summary)


def test_a_header_of_other_columns_after_a_resume_starts_its_rows(tmp_path):
    """A run resumed under another timm, whose train.py writes an lr column (or its columns in another order), repeats
    a header of other columns: the file was refused as 'not a summary.csv row' at that header."""
    from timm_sl.tools.runs import summarize
    summary = tmp_path / 'summary.csv'
    summary.write_text('epoch,train_loss,eval_loss,eval_top1,eval_top5\n0,1,1,50,90\n1,1,1,55,95\n'
                       'epoch,train_loss,eval_loss,eval_top5,eval_top1,lr\n2,1,1,96,60,0.001\n3,1,1,97,61.5,0.001\n')
    assert summarize(summary) == dict(best_top1=61.5, best_top5=97., best_epoch=4, epochs=4, last_epoch=4,
                                  diverged_epoch=None)


def test_summary_counts_the_epochs_trained_of_a_run_of_val_interval(tmp_path):
    """train.py --val-interval 2 writes a summary.csv row every 2nd epoch: summarize said a 4-epoch run ran 2 epochs."""
    from timm_sl.tools.runs import read_run, summarize
    _train_run(tmp_path / 'run', 'sl_vit_32', dict(depth=1))
    summary = tmp_path / 'run' / 'summary.csv'
    summary.write_text('epoch,eval_top1,eval_top5\n1,40,80\n3,45,85\n')
    assert summarize(summary)['epochs'] == 2  # no args.yaml given: one row an epoch
    assert summarize(summary, args=dict(val_interval=2))['epochs'] == 4
    args = json.loads((tmp_path / 'run' / 'args.yaml').read_text())
    (tmp_path / 'run' / 'args.yaml').write_text(json.dumps(dict(args, epochs=4, val_interval=2)))
    record = read_run(tmp_path / 'run')
    assert record.summary['epochs'] == record.epochs_run() == 4 and record.summary['last_epoch'] == 4


def test_summary_names_the_epoch_a_run_diverged_at(tmp_path):
    """A run whose loss turned NaN at epoch 3 of 5 summarized as a run that finished: only its best of the epochs
    before."""
    from timm_sl.tools.runs import diverged_text, read_summary_rows, summarize
    summary = tmp_path / 'summary.csv'
    summary.write_text('epoch,train_loss,eval_loss,eval_top1,eval_top5\n0,1,1,50,90\n1,1,1,62,91\n2,nan,nan,10,50\n'
                       '3,nan,nan,10,50\n4,nan,nan,10,50\n')
    result = summarize(summary)
    assert (result['best_top1'], result['best_epoch'], result['last_epoch'], result['diverged_epoch']) == (62, 2, 5, 3)
    assert diverged_text(result) == 'diverged at epoch 3 (NaN)'
    summary.write_text('epoch,eval_top1\n0,nan\n1,nan\n')  # NaN from the start
    assert (summarize(summary)['best_top1'], summarize(summary)['diverged_epoch']) == (None, 1)
    summary.write_text('epoch,eval_top1\n0,40\n1,nan\n2,41\n')  # one NaN epoch it recovered from
    assert summarize(summary)['diverged_epoch'] is None and diverged_text(summarize(summary)) == ''
    summary.write_text('epoch,train_loss\n0,1\n')  # no validation split: nothing measured
    assert summarize(summary, read_summary_rows(summary, unevaluated=True))['diverged_epoch'] is None


def test_card_of_a_run_with_nan_top1(tmp_path):
    _train_run(tmp_path / 'run', 'sl_vit_32', dict(depth=1))
    (tmp_path / 'run' / 'summary.csv').write_text('epoch,eval_top1,eval_top5\n0,nan,nan\n1,nan,nan\n')
    out, _ = export_checkpoint(tmp_path / 'run' / 'model_best.pth.tar', None, tmp_path / 'out')
    card = (out / 'README.md').read_text()
    assert 'nan' not in card.lower().replace('nan:', '') and 'No epoch of the 2 run has a finite top-1' in card
    (tmp_path / 'run' / 'summary.csv').write_text('epoch,eval_top1,eval_top5\n0,nan,nan\n1,30,60\n')
    out, _ = export_checkpoint(tmp_path / 'run' / 'model_best.pth.tar', None, tmp_path / 'out2')
    assert '| best top-1 (%) | 30.00 |' in (out / 'README.md').read_text()


def test_other_encodings_empty_marker_and_broken_yaml(tmp_path):
    from timm_sl.tools.runs import read_run
    _train_run(tmp_path / 'run', 'sl_vit_32', dict(depth=1))
    (tmp_path / 'run' / 'args.yaml').write_bytes('model: sl_vit_32\ndata_dir: /données\nseed: 3\n'.encode('latin-1'))
    (tmp_path / 'run' / 'done.json').write_text('')
    (tmp_path / 'run' / 'command.txt').write_bytes('python train.py --data-dir /données\n'.encode('latin-1'))
    record = read_run(tmp_path / 'run' / 'model_best.pth.tar')
    assert record.model == 'sl_vit_32' and record.args['data_dir'] == '/données' and record.seed == 3
    assert record.command == 'python train.py --data-dir DATA'
    (tmp_path / 'run' / 'args.yaml').write_text('model: [sl_vit_32\n')
    with pytest.raises(ValueError, match=rf'^{tmp_path / "run" / "args.yaml"} is not a train.py args.yaml \(not '
                                         rf'valid YAML: '):
        read_run(tmp_path / 'run' / 'model_best.pth.tar')


def test_a_command_cut_inside_a_quote_is_no_command(tmp_path, capsys):
    """A command.txt cut inside a quote made export / release print only 'No closing quotation'."""
    from timm_sl.tools.runs import portable_command, read_run
    _train_run(tmp_path / 'run', 'sl_vit_32', dict(depth=1))
    (tmp_path / 'run' / 'command.txt').write_text('python train.py --data-dir "fm --model x')
    assert portable_command('python train.py --data-dir "fm --model x') == ''
    assert read_run(tmp_path / 'run' / 'model_best.pth.tar').command is None
    assert main(['export', str(tmp_path / 'run'), '--out', str(tmp_path / 'out')]) == 0
    assert 'sl_vit_32' in (tmp_path / 'out' / 'README.md').read_text()


def test_export_refuses_another_runs_summary(tmp_path, capsys):
    """export --summary OTHER/summary.csv put the other run's top-1 on the card."""
    _train_run(tmp_path / 'run', 'sl_vit_32', dict(depth=1))
    best = tmp_path / 'run' / 'model_best.pth.tar'
    content = torch.load(best, weights_only=False)
    torch.save(dict(content, metric=55.5), best)  # as train.py records it: epoch 1 had eval_top1 55.5
    other = tmp_path / 'other' / 'summary.csv'
    other.parent.mkdir()
    other.write_text('epoch,train_loss,eval_loss,eval_top1,eval_top5\n0,1,1,60.0,90.0\n1,1,1,70.25,95.0\n')
    assert _fails(['export', str(best), '--out', str(tmp_path / 'out'), '--summary', str(other)], capsys) == (
        f'timm-sl export: {other} is not the summary of {best}: its eval_top1 at epoch 2 (counted from 1) is 70.25, '
        f'the checkpoint '
        f'records 55.5; allowed: the summary.csv of the run that wrote the checkpoint')
    assert not (tmp_path / 'out').exists()
    copy = tmp_path / 'copy.csv'
    copy.write_text((tmp_path / 'run' / 'summary.csv').read_text())
    assert main(['export', str(best), '--out', str(tmp_path / 'out'), '--summary', str(copy)]) == 0
    assert '| best top-1 (%) | 55.50 |' in (tmp_path / 'out' / 'README.md').read_text()


@pytest.mark.parametrize('metric', [True, 'high', [55.5]])
def test_a_checkpoint_metric_that_is_no_number_is_no_metric(tmp_path, metric):
    """A checkpoint whose ``metric`` is True was held against its own summary.csv as 'the checkpoint records 1'."""
    from timm_sl.tools.runs import read_checkpoint
    _train_run(tmp_path / 'run', 'sl_vit_32', dict(depth=1))
    best = tmp_path / 'run' / 'model_best.pth.tar'
    torch.save(dict(torch.load(best, weights_only=False), metric=metric), best)
    assert read_checkpoint(best).metric is None
    copy = tmp_path / 'copy.csv'
    copy.write_text((tmp_path / 'run' / 'summary.csv').read_text())
    assert main(['export', str(best), '--out', str(tmp_path / 'out'), '--summary', str(copy)]) == 0


def test_reproduce_reads_a_half_written_marker_as_none(tmp_path):
    from timm_sl.tools.reproduce import plan_runs, run_state
    run = plan_runs('cifar10', ['vit'], [0], tmp_path)[0]
    run.out_dir.mkdir(parents=True)
    (run.out_dir / 'done.json').write_text('{"epochs": ')
    (run.out_dir / 'summary.csv').write_text('epoch,eval_top1\n0,10\n')
    assert run_state(run, epochs=2) == 'new'
    (run.out_dir / 'summary.csv').write_text('epoch,eval_top1\n0,10\n1,20\n2,3')  # the last line cut: 2 epochs done
    assert run_state(run, epochs=2) == 'new'  # finished only beside its last.pth.tar (its last save could have failed)
    with zipfile.ZipFile(run.out_dir / 'last.pth.tar', 'w') as archive:  # a zip archive, as torch.save writes
        archive.writestr('epoch', '1')
    assert run_state(run, epochs=2) == 'done'


def test_an_empty_checkpoint_is_called_empty(tmp_path, capsys):
    for name in ('model_best.pth.tar', 'w.safetensors'):
        (tmp_path / name).write_bytes(b'')
        assert _fails(['export', str(tmp_path / name), '--model', 'sl_vit_32', '--out', str(tmp_path / 'o')],
                      capsys) == (f'timm-sl export: {tmp_path / name} is not a readable checkpoint (it is empty: 0 '
                                  f'bytes; an interrupted save?)')


def test_a_run_file_that_is_a_folder_is_refused_by_name(tmp_path, capsys):
    """Not the next checkpoint, not a card without metrics, not 'no args.yaml': the folder is named."""
    run = tmp_path / 'runs' / 'r'
    _train_run(run, 'sl_vit_32', dict(depth=1))
    (run / 'model_best.pth.tar').rename(run / 'last.pth.tar')
    (run / 'model_best.pth.tar').mkdir()
    release = ['release', str(tmp_path / 'runs'), '--org', 'o', '--out', str(tmp_path / 'rel'), '--dataset', 'd']
    for argv in (['export', str(run), '--out', str(tmp_path / 'o')], release):
        assert _fails(argv, capsys) == (
            f'timm-sl {argv[0]}: {run / "model_best.pth.tar"} is a folder; expected a checkpoint file')
    (run / 'model_best.pth.tar').rmdir()
    for name, what in (('summary.csv', "train.py's summary.csv"), ('args.yaml', "train.py's args.yaml")):
        (run / name).rename(run / f'{name}.bak')
        (run / name).mkdir()
        for argv in (['export', str(run), '--out', str(tmp_path / 'o')], release):
            assert _fails(argv, capsys) == f'timm-sl {argv[0]}: {run / name} is a folder; expected {what}'
        (run / name).rmdir()
        (run / f'{name}.bak').rename(run / name)
    assert not (tmp_path / 'o').exists() and not (tmp_path / 'rel').exists()


@pytest.mark.parametrize('text,says', [
    ('model: sl_vit_32\nmodel_kwargs:', "is not the args.yaml of {ckpt} (model_kwargs {{}} there, {{'depth': 1}} in "
                                         "the checkpoint): another run's, cut short or edited?; allowed: the "
                                         "args.yaml train.py wrote with this checkpoint"),
    ('model: sl_vit', "is not the args.yaml of {ckpt} (model 'sl_vit' there, 'sl_vit_32' in the checkpoint): "
                      "another run's, cut short or edited?"),
    ('model: sl_vit_32\nmodel_kwargs: [1, 2]', 'is not a train.py args.yaml (model_kwargs: [1, 2] is not a mapping '
                                               'of keyword arguments; cut short or edited?)'),
    ('model: 5', 'is not a train.py args.yaml (model: 5 is not a model name; cut short or edited?)'),
    ('model: sl_vit_32\nmodel_kwargs: {depth: 1}\nseed: [1, 2]',
     'is not a train.py args.yaml (seed: [1, 2] is not a whole number; cut short or edited?)'),
    ('model: sl_vit_32\nmodel_kwargs: {depth: 1}\nseed: /no/such',
     "is not a train.py args.yaml (seed: '/no/such' is not a whole number; cut short or edited?)"),
    ('model: sl_vit_32\nmodel_kwargs: {depth: 1}\ndataset: {a: 1}',
     "is not a train.py args.yaml (dataset: {{'a': 1}} is not a dataset name; cut short or edited?)"),
    ('model: sl_vit_32\nmodel_kwargs: {depth: 1}\ndataset: -1',
     'is not a train.py args.yaml (dataset: -1 is not a dataset name; cut short or edited?)'),
])
def test_a_cut_or_malformed_args_yaml_is_blamed_on_args_yaml(text, says, tmp_path, capsys):
    """(A seed or dataset that is no number / name, found by mutating args.yaml through release at random, was
    refused as a repository name --name-pattern made, naming neither args.yaml nor the run.)"""
    run = tmp_path / 'runs' / 'r'
    _train_run(run, 'sl_vit_32', dict(depth=1))
    (run / 'args.yaml').write_text(text)
    says = says.format(ckpt=run / 'model_best.pth.tar')
    for argv in (['export', str(run), '--out', str(tmp_path / 'o')],
                 ['release', str(tmp_path / 'runs'), '--org', 'o', '--out', str(tmp_path / 'rel'), '--dataset', 'd']):
        err = _fails(argv, capsys)
        assert err.startswith(f'timm-sl {argv[0]}: {run / "args.yaml"} {says}'), err


@pytest.mark.parametrize('name,epoch,top1', [('last.pth.tar', 2, 52.0), ('checkpoint-0.pth.tar', 0, 50.0)])
def test_a_checkpoint_of_another_epoch_states_its_own_top1(name, epoch, top1, tmp_path):
    """Not the best epoch's top-1 on the card of weights that are another epoch's."""
    run = tmp_path / 'run'
    _train_run(run, 'sl_vit_32', dict(depth=1))  # model_best.pth.tar records epoch 1 (counted from 0): the best
    (run / 'summary.csv').write_text('epoch,eval_top1,eval_top5\n0,50,90\n1,55.5,95\n2,52,93\n')
    torch.save(dict(torch.load(run / 'model_best.pth.tar', weights_only=False), epoch=epoch), run / name)
    out, _ = export_checkpoint(run / name, None, tmp_path / 'out')
    card = (out / 'README.md').read_text()
    for text in (f'| these weights: epoch (counted from 1) | {epoch + 1} of 3 |', f'| these weights: top-1 (%) | '
                 f'{top1:.2f} |', '| best top-1 (%) | 55.50 |', '| best epoch (counted from 1) | 2 of 3 |',
                 f"These weights are epoch {epoch + 1}'s (top-1 {top1:.2f} %), not the best epoch's: the best top-1 "
                 f"above (epoch 2) belongs to another checkpoint (train.py keeps it as model_best.pth.tar)."):
        assert text in card, text
    out, _ = export_checkpoint(run / 'model_best.pth.tar', None, tmp_path / 'best')
    card = (out / 'README.md').read_text()
    assert '| these weights: epoch (counted from 1) | 2 of 3 (the best epoch) |' in card
    assert '| these weights: top-1 (%) | 55.50 |' in card and 'another checkpoint' not in card
    # a checkpoint without its epoch (a bare state dict), and one whose epoch summary.csv does not list
    torch.save(torch.load(run / name, weights_only=False)['state_dict'], tmp_path / 'bare.pth')
    out, _ = export_checkpoint(tmp_path / 'bare.pth', 'sl_vit_32', tmp_path / 'bare', model_kwargs=dict(depth=1),
                               summary=run / 'summary.csv')
    card = (out / 'README.md').read_text()
    assert 'these weights: epoch' not in card and ("The checkpoint does not record its epoch: the best top-1 above "
                                                   "may be another checkpoint's, not these weights'.") in card
    # an epoch train.py never records (it counts from 0): not 'epoch (counted from 1) | 0 of 3'
    torch.save(dict(torch.load(run / name, weights_only=False), epoch=-1), tmp_path / 'minus.pth.tar')
    out, _ = export_checkpoint(tmp_path / 'minus.pth.tar', None, tmp_path / 'minus', summary=run / 'summary.csv')
    card = (out / 'README.md').read_text()
    assert 'these weights: epoch' not in card and 'The checkpoint does not record its epoch' in card, card
    torch.save(dict(torch.load(run / name, weights_only=False), epoch=7), run / name)
    out, _ = export_checkpoint(run / name, None, tmp_path / 'seven')
    card = (out / 'README.md').read_text()
    # a checkpoint newer than summary.csv (a run folder copied while it trained): not 'epoch 8 of 3'
    assert '| these weights: epoch (counted from 1) | 8 (summary.csv ends at epoch 3) |' in card, card
    assert '| these weights: top-1 (%) | - |' in card and ' of 3 |' not in card.split('best epoch')[0]
    assert "These weights are epoch 8's, which summary.csv does not list" in card


def test_a_summary_top1_that_is_not_a_percentage_names_the_file(tmp_path):
    """A summary.csv edited to a top-1 of 420 (or -30, or a top-5 of 1e31) was read as written: the card said 'best
    top-1 (%) | 420.00'. timm's accuracy is a percentage; a NaN (a diverged epoch's) stays readable."""
    from timm_sl.tools.runs import read_summary_rows
    summary = tmp_path / 'summary.csv'
    for top1, top5 in (('420', '90'), ('-30.25', '90'), ('40', '1e31')):
        summary.write_text(f'epoch,eval_top1,eval_top5\n0,{top1},{top5}\n1,41,91\n')
        with pytest.raises(ValueError, match=rf"^{summary}:2: not a summary.csv row .* \(top-1 and top-5 from 0 to "
                                             rf"100\): '0,{top1},{top5}'$"):
            read_summary_rows(summary)
    summary.write_text('epoch,eval_top1,eval_top5\n0,nan,nan\n1,0,100\n')
    assert [r['eval_top1'] for r in read_summary_rows(summary)][1:] == [0.]


@pytest.mark.parametrize('epoch', ['inf', 'nan', '-inf', '1e400', '-1'])
def test_a_summary_epoch_that_is_not_a_whole_number_names_the_file(epoch, tmp_path, capsys):
    from timm_sl.tools.runs import read_summary_rows
    run = tmp_path / 'run'
    _train_run(run, 'sl_vit_32', dict(depth=1))
    summary = run / 'summary.csv'
    summary.write_text(f'epoch,eval_top1\n0,40\n{epoch},41\n2,42\n')
    with pytest.raises(ValueError, match=rf"^{summary}:3: not a summary.csv row of 2 fields with a whole-number epoch "
                                         rf"from 0 and a numeric eval_top1 \(top-1 and top-5 from 0 to 100\): "
                                         rf"'{epoch},41'$"):
        read_summary_rows(summary)
    assert _fails(['export', str(run), '--out', str(tmp_path / 'o')], capsys).startswith(
        f'timm-sl export: {summary}:3: not a summary.csv row')
    summary.write_text(f'epoch,eval_top1\n0,40\n{epoch},41\n')  # the last line: left out as a cut row is
    assert [r['epoch'] for r in read_summary_rows(summary)] == [0]


@pytest.mark.parametrize('text,line', [('epoch,eval_top1,eval_top1\n0,40,90\n1,50,95\n', 1),
                                       ('epoch,eval_top1,eval_top5\n0,40,90\nepoch,eval_top1,eval_top1\n1,50,95\n', 3)])
def test_a_summary_column_named_twice_names_the_file(text, line, tmp_path):
    """A header naming eval_top1 twice had each row read by its last one: the top-5 carded as the best top-1."""
    from timm_sl.tools.runs import read_summary_rows
    summary = tmp_path / 'summary.csv'
    summary.write_text(text)
    with pytest.raises(ValueError, match=rf"^{summary}:{line}: column 'eval_top1' is named twice in the header; "
                                         rf"allowed: a train.py summary.csv, each column once$"):
        read_summary_rows(summary)


def test_summary_rows_out_of_order_name_the_file(tmp_path):
    """Rows sorted (by top-1, in a spreadsheet) were read as a resume from an earlier checkpoint: epoch 1's row
    dropped, and the run carded as stopped at epoch 1 of 2 ('failed or interrupted')."""
    from timm_sl.tools.runs import read_summary_rows
    summary = tmp_path / 'summary.csv'
    summary.write_text('epoch,eval_top1\n1,40\n0,50\n')
    with pytest.raises(ValueError, match=rf"^{summary}:3: epoch 0 follows epoch 1 without the header train.py "
                                         rf"writes when a session resumes \(a timm >= 1\.0\.31 train\.py resuming "
                                         rf"again drops it\); allowed: the rows in the order train\.py wrote them, "
                                         rf"that header before a resumed session's first row$"):
        read_summary_rows(summary)
    summary.write_text('epoch,eval_top1\n0,40\n1,50\nepoch,eval_top1\n1,45\n')  # a resume: its header first
    assert [r['eval_top1'] for r in read_summary_rows(summary)] == [40, 45]
    # what the line advises for a session resumed by an older train.py whose header a newer one dropped: timm's own
    # trim_summary (timm >= 1.0.31, on a later resume) keeps only the first header, and with it back the file reads
    from timm.utils import trim_summary
    summary.write_text('epoch,eval_top1\n0,40\n1,50\n2,55\nepoch,eval_top1\n1,45\n2,60\n')
    trim_summary(str(summary), 3)
    with pytest.raises(ValueError, match='epoch 1 follows epoch 2 without the header'):
        read_summary_rows(summary)
    lines = summary.read_text().splitlines()
    summary.write_text('\n'.join([*lines[:4], lines[0], *lines[4:]]) + '\n')
    assert [r['eval_top1'] for r in read_summary_rows(summary)] == [40, 45, 60]


NAMES = ['T-shirt/top', 'Trouser', 'Pullover', 'Dress']


@pytest.mark.parametrize('bom,codec', [(b'', 'utf-8-sig'), (b'', 'utf-16'), (b'\xfe\xff', 'utf-16-be'),
                                       (b'', 'utf-32')])
def test_text_files_with_a_byte_order_mark_are_read_as_written(bom, codec, tmp_path, capsys):
    """Label names and summary.csv saved by an editor that writes a BOM, or in UTF-16: not '\\ufeffT-shirt/top', not
    'no epoch / eval_top1 columns'."""
    from timm_sl.tools.hub import read_label_names
    from timm_sl.tools.runs import summarize
    run = tmp_path / 'run'
    _train_run(run, 'sl_vit_32', dict(depth=1))
    for i, text in enumerate(['\n'.join(NAMES) + '\n', json.dumps(NAMES)]):
        (tmp_path / f'labels{i}').write_bytes(bom + text.encode(codec))
        assert read_label_names(tmp_path / f'labels{i}') == NAMES
    (run / 'summary.csv').write_bytes(bom + 'epoch,eval_top1\n0,40\n1,42.5\n'.encode(codec))
    assert summarize(run / 'summary.csv')['best_top1'] == 42.5
    (run / 'args.yaml').write_bytes(bom + (run / 'args.yaml').read_text().encode(codec))
    assert main(['export', str(run), '--out', str(tmp_path / 'o'), '--label-names', str(tmp_path / 'labels0')]) == 0
    assert json.loads((tmp_path / 'o' / 'config.json').read_text())['label_names'] == NAMES
    assert '| best top-1 (%) | 42.50 |' in (tmp_path / 'o' / 'README.md').read_text()



@pytest.mark.parametrize('text,name', [('["cat\\n", "dog"]', "'cat\\n'"), ('cat\nd\x0cog\nbird\n', "'d\\x0cog'"),
                                       ('c\u2028at\ndog\n', "'c\\u2028at'"), ('cat\rdog\n', "'cat\\rdog'")],
                         ids=['json-newline-at-end', 'form-feed', 'line-separator', 'lone-cr'])
def test_a_label_name_with_a_line_break_in_it_is_refused_not_split(tmp_path, text, name):
    """A JSON name 'cat\\n' passed as one line (splitlines() drops a break at its end), and a line holding a form
    feed or U+2028 was read as two names, shifting every class name after it, without a word."""
    from timm_sl.tools.hub import read_label_names
    (tmp_path / 'labels.txt').write_text(text, encoding='utf-8', newline='')
    with pytest.raises(ValueError, match=rf'^{re.escape(str(tmp_path / "labels.txt"))} holds the label name '
                                         rf'{re.escape(name)} \(class \d\); allowed: a name of one line'):
        read_label_names(tmp_path / 'labels.txt')
    (tmp_path / 'labels.txt').write_text('cat\r\ndog\r\n', encoding='utf-8', newline='')
    assert read_label_names(tmp_path / 'labels.txt') == ['cat', 'dog']


def test_utf16_without_a_byte_order_mark_is_refused_naming_the_file(tmp_path, capsys):
    from timm_sl.tools.hub import read_label_names
    (tmp_path / 'labels.txt').write_bytes('\n'.join(NAMES).encode('utf-16-le'))
    with pytest.raises(ValueError, match=rf'^{tmp_path / "labels.txt"} holds NUL bytes \(UTF-16 or UTF-32 without a '
                                         rf'byte-order mark, or not text\); expected the class names .*; allowed: '
                                         rf'UTF-8, or UTF-16 / UTF-32 with a byte-order mark$'):
        read_label_names(tmp_path / 'labels.txt')
    (tmp_path / 'labels.txt').write_bytes(b'\xff\xfe' + 'T'.encode('utf-16-le') + b'\x00')  # an odd byte count
    with pytest.raises(ValueError, match=rf'^{tmp_path / "labels.txt"} begins with the byte-order mark of utf-16 but '
                                         rf'is not utf-16 from byte 4 on'):
        read_label_names(tmp_path / 'labels.txt')


def test_zero_bytes_a_crash_leaves_after_a_summary_are_a_cut_row(tmp_path):
    from timm_sl.tools.runs import read_summary_rows
    (tmp_path / 'summary.csv').write_bytes(b'epoch,eval_top1\n0,40\n1,41\n2' + b'\x00' * 100)
    assert [r['epoch'] for r in read_summary_rows(tmp_path / 'summary.csv')] == [0, 1]


@pytest.mark.parametrize('saved,in_yaml,says', [
    (dict(model_kwargs=dict(depth=1, lsa_mask=False)), {},
     "model_kwargs {'depth': 1} there, {'depth': 1, 'lsa_mask': False} in the checkpoint"),
    (dict(num_classes=100, dataset='torch/cifar100'), {}, "num_classes 4 there, 100 in the checkpoint; dataset "
                                                          "'torch/cifar10' there, 'torch/cifar100' in the checkpoint"),
    ({}, dict(model=None, model_kwargs=dict(depth=1, lsa_mask=False)),
     "model_kwargs {'depth': 1, 'lsa_mask': False} there, {'depth': 1} in the checkpoint"),
], ids=['kwargs-without-weights', 'classes-and-dataset', 'kwargs-without-model'])
def test_an_args_yaml_of_another_run_is_refused_naming_what_differs(saved, in_yaml, says, tmp_path, capsys):
    """lsa_mask=False has no weights of its own: the wrong model loaded the checkpoint (also from an args.yaml
    without `model`, whose kwargs were built unchecked); another class count / dataset named the card's dataset from
    args.yaml (cifar10) for a checkpoint of cifar100."""
    run = tmp_path / 'runs' / 'r'
    classes = saved.get('num_classes', 4)
    model = timm.create_model('sl_vit_32', depth=1, num_classes=classes)
    args = dict(model='sl_vit_32', model_kwargs=dict(depth=1), num_classes=4, seed=1, epochs=2, dataset='torch/cifar10')
    run.mkdir(parents=True)
    torch.save({'epoch': 1, 'arch': 'sl_vit_32', 'state_dict': model.state_dict(),
                'args': argparse.Namespace(**dict(args, **saved))}, run / 'model_best.pth.tar')
    (run / 'args.yaml').write_text(json.dumps({k: v for k, v in dict(args, **in_yaml).items() if v is not None}))
    (run / 'summary.csv').write_text('epoch,eval_top1\n0,50.0\n1,55.5\n')
    for argv in (['export', str(run), '--out', str(tmp_path / 'o')],
                 ['release', str(tmp_path / 'runs'), '--org', 'o', '--out', str(tmp_path / 'rel')]):
        assert _fails(argv, capsys) == (
            f'timm-sl {argv[0]}: {run / "args.yaml"} is not the args.yaml of {run / "model_best.pth.tar"} ({says}): '
            f"another run's, cut short or edited?; allowed: the args.yaml train.py wrote with this checkpoint")
    assert not (tmp_path / 'o').exists() and not (tmp_path / 'rel' / 'release.json').exists()


@pytest.mark.parametrize('train_args,built', [
    (dict(in_chans=1), dict(in_chans=1)), (dict(input_size=[1, 32, 32]), dict(in_chans=1)),
    (dict(gp='avg'), dict(global_pool='avg')),
], ids=['in-chans', 'input-size', 'gp'])
def test_a_run_of_train_py_model_arguments_outside_model_kwargs_exports(train_args, built, tmp_path):
    """train.py builds the model with --in-chans (else --input-size's channels) and --gp besides --model-kwargs: a
    grey-image run exports and loads back with the logits it trained to (was: 'does not fit sl_vit_32, trained as
    sl_vit_32')."""
    run = tmp_path / 'run'
    run.mkdir()
    torch.manual_seed(0)
    model = timm.create_model('sl_vit_32', depth=1, num_classes=4, **built).eval()
    args = dict(model='sl_vit_32', model_kwargs=dict(depth=1), num_classes=4, seed=1, epochs=2, dataset='',
                in_chans=None, gp=None, input_size=None)
    args.update(train_args)
    torch.save({'epoch': 1, 'arch': 'sl_vit_32', 'state_dict': model.state_dict(), 'args': argparse.Namespace(**args)},
               run / 'model_best.pth.tar')
    (run / 'args.yaml').write_text(json.dumps(args))
    out, _ = export_checkpoint(run, None, tmp_path / 'out')
    config = json.loads((out / 'config.json').read_text())
    assert all(config['model_args'][k] == v for k, v in built.items())
    card = (out / 'README.md').read_text()  # was '(SPT + LSA)', and RGB images for a grey model
    assert f"A `sl_vit_32` ({', '.join(f'{k}={v}' for k, v in built.items())}, depth=1)" in card
    assert ("transform(image.convert('L'))" in card) == ('in_chans' in built)
    loaded = timm.create_model(f'local-dir:{out}', pretrained=True).eval()
    x = torch.randn(2, built.get('in_chans', 3), 32, 32)
    with torch.no_grad():
        torch.testing.assert_close(loaded(x), model(x))


def test_ema_weights_train_py_never_evaluated_are_not_exported_under_the_models_top1(tmp_path):
    """--model-ema-force-cpu: train.py evaluates only the model's own weights (summary.csv, model_best's choice), so
    the card's top-1 is theirs: they are exported, not the EMA weights of unknown top-1."""
    run = tmp_path / 'run'
    own = _train_run(run, 'sl_vit_32', dict(depth=1), model_ema=True, model_ema_force_cpu=True)
    checkpoint = torch.load(run / 'model_best.pth.tar', weights_only=False)
    ema = {k: v + 1 for k, v in checkpoint['state_dict'].items()}
    torch.save(dict(checkpoint, state_dict_ema=ema), run / 'model_best.pth.tar')
    out, source = export_checkpoint(run, None, tmp_path / 'out')
    assert source == 'state_dict' and '- Weights: `state_dict` of the training checkpoint\n' in (
        out / 'README.md').read_text()
    loaded = timm.create_model(f'local-dir:{out}', pretrained=True).eval()
    x = torch.randn(1, 3, 32, 32)
    with torch.no_grad():
        torch.testing.assert_close(loaded(x), own(x))
    # evaluated EMA weights (train.py's summary is theirs) are exported as timm's loader picks them
    checkpoint['args'].model_ema_force_cpu = False
    torch.save(dict(checkpoint, state_dict_ema=ema), run / 'model_best.pth.tar')
    assert export_checkpoint(run, None, tmp_path / 'out2')[1] == 'state_dict_ema'


def test_an_out_that_is_a_link_to_nothing_says_so(tmp_path, capsys):
    """Was 'dangl: file exists' (the system's word when asked to create the folder a broken link names)."""
    _train_run(tmp_path / 'runs' / 'r', 'sl_vit_32', dict(depth=1))
    link = tmp_path / 'dangl'
    link.symlink_to(tmp_path / 'nowhere' / 'x')
    for argv in (['export', str(tmp_path / 'runs' / 'r')], ['release', str(tmp_path / 'runs'), '--org', 'o']):
        assert _fails(argv + ['--out', str(link)], capsys) == (
            f'timm-sl {argv[0]}: --out {link} is a link to {tmp_path / "nowhere" / "x"}, which does not exist; '
            f'expected the {argv[0]} folder (allowed: a link to a folder, or no link)')
        assert _fails(argv + ['--out', str(link / 'sub')], capsys) == (
            f'timm-sl {argv[0]}: --out {link / "sub"}: {link} is a link to {tmp_path / "nowhere" / "x"}, which does '
            f'not exist; allowed: a link to a folder, or no link')


@pytest.mark.parametrize('train_args,built', [
    (dict(in_chans=1), dict(in_chans=1)), (dict(input_size=[1, 32, 32]), dict(in_chans=1)),
    (dict(gp='avg'), dict(global_pool='avg')),
], ids=['in-chans', 'input-size', 'gp'])
def test_analysis_of_a_run_of_train_py_model_arguments_builds_it_as_export_does(train_args, built, tmp_path, capsys):
    """temperature / kld / attention build a run's model as export does (--in-chans, --input-size, --gp besides
    --model-kwargs; grey images read grey), and a kwarg that contradicts the run names what it trained as (was: 'does
    not fit sl_vit_32, trained as sl_vit_32')."""
    pytest.importorskip('matplotlib')
    run = tmp_path / 'run'
    _train_run(run, 'sl_vit_32', dict(depth=1), **dict(dict(in_chans=None, gp=None, input_size=None), **train_args))
    torch.manual_seed(0)
    model = timm.create_model('sl_vit_32', depth=1, num_classes=4, **built)
    torch.save(dict(torch.load(run / 'model_best.pth.tar', weights_only=False), state_dict=model.state_dict()),
               run / 'model_best.pth.tar')
    Image.fromarray((torch.rand(32, 32, 3) * 255).to(torch.uint8).numpy()).save(tmp_path / 'img.png')
    checkpoint = ['--model', 'sl_vit_32', '--checkpoint', str(run / 'model_best.pth.tar')]
    for i, argv in enumerate((['temperature'], ['temperature', '--model-kwargs', 'depth=1'],
                              ['kld', str(tmp_path / 'img.png')], ['attention', str(tmp_path / 'img.png')])):
        assert main(argv + checkpoint + ['--out', str(tmp_path / f'{i}.png')]) == 0
        assert (tmp_path / f'{i}.png').is_file()
    capsys.readouterr()
    other = dict(in_chans=3) if 'in_chans' in built else dict(global_pool='token')
    err = _fails(['temperature'] + checkpoint + ['--model-kwargs', 'depth=1'] + [f'{k}={v}' for k, v in other.items()]
                 + ['--out', str(tmp_path / 'x.png')], capsys)
    assert f"(it was trained as sl_vit_32 {{{', '.join(f'{k!r}: {v!r}' for k, v in built.items())}, 'depth': 1, " in err


def test_card_of_a_distributed_run_says_its_global_batch(tmp_path):
    """train.py writes args.yaml before it knows the processes it runs on; the checkpoint's args record them: a 4-GPU
    run's card gave `batch_size: 128` as the recipe, which one process trains with a 4 times smaller batch."""
    run = tmp_path / 'run'
    _train_run(run, 'sl_vit_32', dict(depth=1), batch_size=128, torchcompile='inductor')
    checkpoint = torch.load(run / 'model_best.pth.tar', weights_only=False)
    vars(checkpoint['args']).update(world_size=4, distributed=True)
    state = {f'module._orig_mod.{k}': v for k, v in checkpoint['state_dict'].items()}  # prefixes train.py unwraps
    torch.save(dict(checkpoint, state_dict=state), run / 'model_best.pth.tar')
    out, _ = export_checkpoint(run, None, tmp_path / 'out')
    card = (out / 'README.md').read_text()
    assert ('Trained on 4 processes (distributed data parallel): `batch_size` is per process, the global batch was 4 x '
            'batch_size = 512; one process running this recipe trains with a 4 times smaller batch.') in card
    vars(checkpoint['args']).update(world_size=1, distributed=False)
    torch.save(checkpoint, run / 'model_best.pth.tar')
    assert 'processes' not in (export_checkpoint(run, None, tmp_path / 'out1')[0] / 'README.md').read_text()


def test_a_checkpoint_of_another_run_in_a_run_folder_is_refused_by_its_summary(tmp_path, capsys):
    """Another seed's model_best.pth.tar copied (or linked) into a run folder of the same arguments: the card gave
    the folder's summary.csv top-1 of that epoch (50.00) as these weights' (the checkpoint records 61.0)."""
    for seed, top1s in ((0, (50.0, 55.5)), (1, (61.0, 60.0))):
        _train_run(tmp_path / 'runs' / f's{seed}', 'sl_vit_32', dict(depth=1), dataset='torch/cifar10')
        best = tmp_path / 'runs' / f's{seed}' / 'model_best.pth.tar'
        torch.save(dict(torch.load(best, weights_only=False), epoch=top1s.index(max(top1s)), metric=max(top1s)), best)
        rows = ''.join(f'{e},{t}\n' for e, t in enumerate(top1s))
        (best.parent / 'summary.csv').write_text('epoch,eval_top1\n' + rows)
    ours = tmp_path / 'runs' / 's0'
    (ours / 'model_best.pth.tar').write_bytes((tmp_path / 'runs' / 's1' / 'model_best.pth.tar').read_bytes())
    for argv in (['export', str(ours), '--out', str(tmp_path / 'o')],
                 ['release', str(tmp_path / 'runs'), '--org', 'o', '--out', str(tmp_path / 'rel'), '--name-pattern',
                  '{run}']):
        assert _fails(argv, capsys) == (
            f'timm-sl {argv[0]}: {ours / "summary.csv"} is not the summary of {ours / "model_best.pth.tar"}: its '
            f'eval_top1 at epoch 1 (counted from 1) is 50, the checkpoint records 61; allowed: the summary.csv of the '
            f'run that wrote the checkpoint')
    assert not (tmp_path / 'o').exists() and not (tmp_path / 'rel' / 'release.json').exists()


def test_analysis_of_a_grey_model_without_run_arguments_reads_images_grey(tmp_path):
    """A bare state dict (no args) or random init of --model-kwargs in_chans=1: the images went through the default
    three-channel config (AssertionError 'Input has 3 channels' from the SPT projection)."""
    pytest.importorskip('matplotlib')
    torch.save(timm.create_model('sl_vit_32', in_chans=1, depth=1, num_classes=4).state_dict(), tmp_path / 'bare.pth')
    Image.fromarray((torch.rand(32, 32, 3) * 255).to(torch.uint8).numpy()).save(tmp_path / 'img.png')
    for i, checkpoint in enumerate((['--checkpoint', str(tmp_path / 'bare.pth')], [])):
        for command in ('kld', 'attention'):
            out = tmp_path / f'{command}{i}.png'
            assert main([command, str(tmp_path / 'img.png'), '--model', 'sl_vit_32', '--model-kwargs', 'in_chans=1',
                         'depth=1', *checkpoint, '--out', str(out)]) == 0 and out.is_file()


def test_a_run_of_tuple_model_kwargs_is_its_own_args_yaml(tmp_path):
    """train.py keeps --model-kwargs depth=(1,1,1) a tuple in the checkpoint and YAML writes it as a list in args.yaml:
    the export refused the run's own args.yaml as another run's."""
    model = _train_run(tmp_path / 'run', 'sl_pit_32', dict(depth=(1, 1, 1)))
    assert main(['export', str(tmp_path / 'run'), '--out', str(tmp_path / 'out')]) == 0
    loaded = timm.create_model(f'local-dir:{tmp_path / "out"}', pretrained=True).eval()
    x = torch.randn(1, 3, 32, 32)
    with torch.no_grad():
        torch.testing.assert_close(loaded(x), model(x))


@pytest.mark.parametrize('model,kwargs,in_yaml,says', [
    ('sl_swin_32', {}, dict(gp='max'), "builds global_pool='max' there, its default global_pool in the checkpoint"),
    ('sl_vit_32', dict(lsa_mask=False), dict(model_kwargs=None),
     "builds its default lsa_mask there, lsa_mask=False in the checkpoint"),
], ids=['resumed-with-gp', 'kwargs-left-out'])
def test_an_args_yaml_that_builds_another_model_than_the_checkpoints_is_refused(model, kwargs, in_yaml, says, tmp_path,
                                                                                capsys):
    """train.py rewrites args.yaml on --resume: a run of sl_swin_32 resumed with --gp max (its weights fit either
    pool) left args.yaml saying max beside a best checkpoint trained and scored with avg pooling, and export / release
    built the max-pool model for those weights, silently (an argument set in one file and unset in the other was not
    compared); so did an args.yaml without its model_kwargs (lsa_mask=False has no weights of its own)."""
    run = tmp_path / 'runs' / 'r'
    _train_run(run, model, kwargs, gp=None, dataset='torch/cifar10')
    args = json.loads((run / 'args.yaml').read_text())
    (run / 'args.yaml').write_text(json.dumps({k: v for k, v in dict(args, **in_yaml).items() if v is not None}))
    for argv in (['export', str(run), '--out', str(tmp_path / 'o')],
                 ['release', str(tmp_path / 'runs'), '--org', 'o', '--out', str(tmp_path / 'rel')]):
        err = _fails(argv, capsys)
        assert err.startswith(f'timm-sl {argv[0]}: {run / "args.yaml"} is not the args.yaml of '
                              f'{run / "model_best.pth.tar"} ({says}; resumed with another') and 'allowed' in err, err
    assert not (tmp_path / 'o').exists() and not (tmp_path / 'rel' / 'release.json').exists()
    (run / 'args.yaml').write_text(json.dumps(dict(args, gp='avg' if model == 'sl_swin_32' else None)))
    assert main(['export', str(run), '--out', str(tmp_path / 'o')]) == 0  # its own pool named: the same model


@pytest.mark.parametrize('last,says', [
    (dict(world_size=1, batch_size=512), 'the session that saved these weights trained on 4 processes x batch_size 128 '
     '= global batch 512, its last session (whose arguments the recipe above gives) on 1 process x batch_size 512 = '
     'global batch 512;'),
    (dict(world_size=2, batch_size=128), 'the session that saved these weights trained on 4 processes x batch_size 128 '
     '= global batch 512, its last session (whose arguments the recipe above gives) on 2 processes x batch_size 128 = '
     'global batch 256;'),
], ids=['another-batch-one-process', 'fewer-processes'])
def test_card_of_a_run_resumed_with_another_batch_or_process_count_says_each(last, says, tmp_path):
    """A run of 4 processes x 128 resumed on one process with --batch-size 512 (args.yaml is the last session's, the
    process count the checkpoint's) was carded 'the global batch was 4 x batch_size = 2048', a batch no session
    trained with; resumed on 2 processes, 'Trained on 4 processes' for the whole run."""
    run = tmp_path / 'run'
    _train_run(run, 'sl_vit_32', dict(depth=1), batch_size=128)
    checkpoint = torch.load(run / 'model_best.pth.tar', weights_only=False)
    vars(checkpoint['args']).update(world_size=4, distributed=True)
    torch.save(checkpoint, run / 'model_best.pth.tar')
    vars(checkpoint['args']).update(last)
    torch.save(checkpoint, run / 'last.pth.tar')
    args = json.loads((run / 'args.yaml').read_text())
    (run / 'args.yaml').write_text(json.dumps(dict(args, batch_size=last['batch_size'])))
    card = (export_checkpoint(run, None, tmp_path / 'out')[0] / 'README.md').read_text()
    assert f'The run was resumed with another batch: {says} no one train.py run' in card
    assert 'Trained on' not in card and '2048' not in card
    (run / 'last.pth.tar').write_bytes(b'')  # cannot be read: the last session's processes are not known
    card = (export_checkpoint(run, None, tmp_path / 'out2')[0] / 'README.md').read_text()
    assert ('Trained on' in card) == (last['batch_size'] == 128)


@pytest.mark.parametrize('start,says', [
    (dict(initial_checkpoint='/home/me/in1k.pth'), '--initial-checkpoint in1k.pth'), (dict(pretrained=True),
                                                                                     '--pretrained')])
def test_export_card_of_a_fine_tuned_run_says_so(start, says, tmp_path):
    """The card's recipe leaves out --initial-checkpoint (a path of this machine): an exported run fine-tuned from
    ImageNet weights was carded 'trained with timm's train.py', as if from scratch, with nothing saying otherwise."""
    _train_run(tmp_path / 'run', 'sl_vit_32', dict(depth=1), **start)
    card = (export_checkpoint(tmp_path / 'run', None, tmp_path / 'out')[0] / 'README.md').read_text()
    assert f"(Lee, Lee & Song, 2021), fine-tuned from trained weights ({says}), not trained from scratch, with " \
           f"timm's train.py" in card and '/home/me' not in card
    _train_run(tmp_path / 'run2', 'sl_vit_32', dict(depth=1))
    card = (export_checkpoint(tmp_path / 'run2', None, tmp_path / 'out2')[0] / 'README.md').read_text()
    assert "(Lee, Lee & Song, 2021), trained with timm's train.py" in card and 'fine-tuned from' not in card


def test_a_start_from_pretrained_path_names_that_file():
    """train.py --pretrained --pretrained-path FILE loads FILE as the pretrained weights: the card said 'started from
    --pretrained', the model's own published weights."""
    from timm_sl.tools.runs import RunRecord
    record = RunRecord(Path('c.pth'), args=dict(pretrained=True, pretrained_path='/home/me/my weights.safetensors'))
    assert record.started_from() == '--pretrained --pretrained-path my weights.safetensors'
    assert RunRecord(Path('c.pth'), args=dict(pretrained=True, pretrained_path=None)).started_from() == '--pretrained'
    assert RunRecord(Path('c.pth'), args=dict(pretrained=False, pretrained_path='/x.pth')).started_from() is None


def test_card_of_a_run_resumed_with_another_lr_says_what_the_weights_trained_with(tmp_path):
    """train.py rewrites args.yaml on --resume: a run whose best epoch trained with --lr 0.001, resumed with --lr 0.003
    and --smoothing 0.2, was carded with the recipe `lr: 0.003`, `smoothing: 0.2` alone, as if one run of it had
    trained these weights."""
    run = tmp_path / 'run'
    _train_run(run, 'sl_vit_32', dict(depth=1), smoothing=0.1, workers=4, batch_size=128)
    args = json.loads((run / 'args.yaml').read_text())
    (run / 'args.yaml').write_text(json.dumps(dict(args, lr=3e-3, smoothing=0.2, workers=8, resume='x')))
    card = (export_checkpoint(run, None, tmp_path / 'out')[0] / 'README.md').read_text()
    assert ('The run was resumed with other arguments: the session that saved these weights trained with '
            "`smoothing: 0.1`, where the recipe above gives its last session's;") in card and 'workers' not in card
    (run / 'args.yaml').write_text(json.dumps(dict(args, lr=3e-3, smoothing=0.2, resume='x', no_resume_opt=True)))
    card = (export_checkpoint(run, None, tmp_path / 'o1')[0] / 'README.md').read_text()
    assert ('The run was resumed with other arguments: the session that saved these weights trained with `lr: 0.001`, '
            "`smoothing: 0.1`, where the recipe above gives its last session's;") in card  # its own optimizer
    (run / 'args.yaml').write_text(json.dumps(dict(args, lr=None, workers=8)))  # train.py fills in an unset lr
    assert 'resumed with' not in (export_checkpoint(run, None, tmp_path / 'o2')[0] / 'README.md').read_text()


def test_card_of_a_run_resumed_with_its_optimizer_names_the_lr_train_py_used(tmp_path):
    """train.py resumed with the optimizer's state keeps the lr (weight decay, ...) the run trained with before,
    whatever --lr the resumed session gives: a run of --lr 0.001 resumed with --lr 0.005 trained every epoch from a
    base lr of 0.001 (summary.csv's lr column), but its card gave `lr: 0.005` as the recipe and said the first
    session's checkpoints trained with `lr: 0.001`, as if the resumed epochs had not."""
    run = tmp_path / 'run'
    _train_run(run, 'sl_vit_32', dict(depth=1), weight_decay=0.05)
    first = torch.load(run / 'model_best.pth.tar', weights_only=False)
    first['args'].epochs = 4  # a run of --epochs 4, interrupted after 2
    torch.save(dict(first, epoch=0), run / 'checkpoint-0.pth.tar')
    resumed = dict(vars(first['args']), lr=5e-3, weight_decay=0.05, resume=str(run / 'last.pth.tar'), epochs=4)
    torch.save(dict(first, epoch=3, args=argparse.Namespace(**resumed)), run / 'model_best.pth.tar')
    (run / 'args.yaml').write_text(json.dumps(resumed))
    (run / 'summary.csv').write_text('epoch,train_loss,eval_loss,eval_top1,eval_top5,lr\n0,1,1,50,90,0.001\n'
                                     '1,1,1,52,90,0.0005\nepoch,train_loss,eval_loss,eval_top1,eval_top5,lr\n'
                                     '2,1,1,53,90,0.0005\n3,1,1,55.5,95,0.00015\n')
    card = (export_checkpoint(run, None, tmp_path / 'out')[0] / 'README.md').read_text()
    assert ("The last session resumed the run with the optimizer's state (`--resume` without `--no-resume-opt`), "
            "which keeps the optimizer settings the run trained with before: it trained with `lr: 0.001`, not the "
            "`lr: 0.005` the recipe above gives (train.py did not use them; summary.csv's lr column shows the rates "
            "used).") in card
    assert 'resumed with other arguments' not in card


def test_card_of_a_run_resumed_into_a_new_folder_names_the_lr_of_the_checkpoint_it_resumed(tmp_path, monkeypatch):
    """train.py --resume output/a/checkpoint-0.pth.tar --lr 0.01 into a new folder (train.py's default, a new
    experiment name per start) keeps the optimizer's lr of that checkpoint's run (0.001): the card gave `lr: 0.01` as
    the recipe and said nothing, as no checkpoint of that run was in the new folder."""
    monkeypatch.chdir(tmp_path)  # train.py's working directory: --output output, relative
    _train_run(tmp_path / 'output' / 'a', 'sl_vit_32', dict(depth=1), output='output')
    first = torch.load(tmp_path / 'output' / 'a' / 'model_best.pth.tar', weights_only=False)
    torch.save(dict(first, epoch=0, version=2), tmp_path / 'output' / 'a' / 'checkpoint-0.pth.tar')  # resumed at 1
    run = tmp_path / 'output' / 'b'
    _train_run(run, 'sl_vit_32', dict(depth=1))
    resumed = dict(vars(first['args']), lr=0.01, resume='output/a/checkpoint-0.pth.tar', epochs=3)
    torch.save(dict(first, epoch=2, args=argparse.Namespace(**resumed)), run / 'model_best.pth.tar')
    (run / 'args.yaml').write_text(json.dumps(resumed))
    (run / 'summary.csv').write_text('epoch,train_loss,eval_loss,eval_top1,eval_top5,lr\n1,1,1,50,90,0.00075\n'
                                     '2,1,1,55.5,95,0.00025\n')
    card = (export_checkpoint(run, None, tmp_path / 'out')[0] / 'README.md').read_text()
    assert "it trained with `lr: 0.001`, not the `lr: 0.01` the recipe above gives" in card
    (tmp_path / 'output' / 'a' / 'checkpoint-0.pth.tar').unlink()  # not at hand: nothing to name
    card = (export_checkpoint(run, None, tmp_path / 'o2')[0] / 'README.md').read_text()
    assert "optimizer's state" not in card



def _resumed_into_new_folder(tmp_path: Path, **resumed_args) -> tuple:
    """``(output/b, output/a's checkpoint)``: output/a a run of --epochs 2 --smoothing 0.1 whose last.pth.tar (timm's
    version 2) resumes at epoch 2 (from 0), and output/b resumed from it into a new folder with --epochs 4 and
    ``resumed_args``, its summary.csv listing epochs 2-3 (from 0); relative to train.py's working directory
    ``tmp_path``."""
    _train_run(tmp_path / 'output' / 'a', 'sl_vit_32', dict(depth=1), output='output', smoothing=0.1)
    first = dict(torch.load(tmp_path / 'output' / 'a' / 'model_best.pth.tar', weights_only=False), version=2)
    torch.save(first, tmp_path / 'output' / 'a' / 'last.pth.tar')
    run = tmp_path / 'output' / 'b'
    _train_run(run, 'sl_vit_32', dict(depth=1))
    resumed = dict(vars(first['args']), resume='output/a/last.pth.tar', epochs=4, **resumed_args)
    torch.save(dict(first, epoch=3, args=argparse.Namespace(**resumed)), run / 'model_best.pth.tar')
    (run / 'args.yaml').write_text(json.dumps(resumed))
    (run / 'summary.csv').write_text('epoch,train_loss,eval_loss,eval_top1,eval_top5\n2,1,1,50,90\n3,1,1,55.5,95\n')
    return run, first

def test_card_of_a_run_resumed_into_a_new_folder_names_the_arguments_of_the_run_it_resumed(tmp_path, monkeypatch):
    """train.py --epochs 2 --smoothing 0.1 into output/a, then --resume output/a/last.pth.tar --epochs 4 --smoothing 0
    into a new folder: the card gave `epochs: 4` and `smoothing: 0.0` as the recipe and said only that the first 2
    epochs ran in another run folder, not that they trained under a 2-epoch schedule with another smoothing."""
    monkeypatch.chdir(tmp_path)  # train.py's working directory: --output output, relative
    run, _ = _resumed_into_new_folder(tmp_path, smoothing=0.0)
    card = (export_checkpoint(run, None, tmp_path / 'out')[0] / 'README.md').read_text()
    assert ("The run was resumed with other arguments: the session that saved these weights trained with the recipe "
            "above, its last session's, the run it was resumed from (`output/a/last.pth.tar`, epoch 2) with "
            "`epochs: 2`, `smoothing: 0.1`; no one train.py run of this recipe reproduces these weights.") in card
    (tmp_path / 'output' / 'a' / 'last.pth.tar').unlink()  # not at hand: nothing to name
    card = (export_checkpoint(run, None, tmp_path / 'o2')[0] / 'README.md').read_text()
    assert 'resumed with other arguments' not in card


def test_card_of_a_train_py_run_extended_with_more_epochs_says_its_first_session_had_another_schedule(tmp_path):
    """train.py --epochs 2, then --resume last.pth.tar --epochs 3 in the same folder (no timm-sl reproduce record of
    its sessions): its card gave `epochs: 3` as the recipe and said nothing, though epochs 1-2 trained under a 2-epoch
    schedule (the checkpoints of that session record it)."""
    run = tmp_path / 'run'
    _train_run(run, 'sl_vit_32', dict(depth=1))
    first = torch.load(run / 'model_best.pth.tar', weights_only=False)
    for epoch in (0, 1):
        torch.save(dict(first, epoch=epoch), run / f'checkpoint-{epoch}.pth.tar')
    resumed = dict(vars(first['args']), resume=str(run / 'last.pth.tar'), epochs=3)
    torch.save(dict(first, epoch=2, args=argparse.Namespace(**resumed)), run / 'model_best.pth.tar')
    (run / 'args.yaml').write_text(json.dumps(resumed))
    with (run / 'summary.csv').open('a') as f:
        f.write('epoch,train_loss,eval_loss,eval_top1,eval_top5\n2,1,1,60,95\n')
    card = (export_checkpoint(run, None, tmp_path / 'out')[0] / 'README.md').read_text()
    assert ('The run was resumed with other arguments: the session that saved these weights trained with the recipe '
            'above, its last session\'s, another session (its checkpoints of epochs 1-2) with `epochs: 2`; no one '
            'train.py run of this recipe reproduces these weights.') in card
    card = (export_checkpoint(run / 'checkpoint-1.pth.tar', None, tmp_path / 'o2')[0] / 'README.md').read_text()
    assert 'the session that saved these weights trained with `epochs: 2`, where the recipe above gives' in card


def test_card_of_a_run_started_again_in_its_folder_does_not_call_it_resumed(tmp_path):
    """train.py --experiment NAME --lr 0.01 --epochs 3, then the same command with --lr 0.05 --epochs 2 (no --resume)
    into the same folder: the second run leaves the first's checkpoint-2.pth.tar there, and its card said the run was
    resumed with other arguments (`lr: 0.01`, `epochs: 3`) and that no one run of its recipe reproduces the weights."""
    run = tmp_path / 'run'
    _train_run(run, 'sl_vit_32', dict(depth=1))
    saved = torch.load(run / 'model_best.pth.tar', weights_only=False)
    old = dict(vars(saved['args']), lr=0.01, epochs=3)
    torch.save(dict(saved, epoch=2, args=argparse.Namespace(**old)), run / 'checkpoint-2.pth.tar')
    card = (export_checkpoint(run, None, tmp_path / 'out')[0] / 'README.md').read_text()
    assert 'resumed' not in card and 'lr: 0.01' not in card


def test_a_best_checkpoint_that_links_to_nothing_is_refused_by_name(tmp_path, capsys):
    """A model_best.pth.tar linking to a moved file: the run's last.pth.tar was exported in its place, silently (with
    no last.pth.tar, the folder was said to hold no checkpoint)."""
    run = tmp_path / 'run'
    _train_run(run, 'sl_vit_32', dict(depth=1))
    (run / 'model_best.pth.tar').rename(run / 'last.pth.tar')
    (run / 'model_best.pth.tar').symlink_to(tmp_path / 'moved.pth.tar')
    assert _fails(['export', str(run), '--out', str(tmp_path / 'o')], capsys) == (
        f'timm-sl export: {run / "model_best.pth.tar"} is a link to {tmp_path / "moved.pth.tar"}, which does not '
        f'exist; expected a checkpoint file (allowed: the file, a link to one, or none)')
    assert not (tmp_path / 'o').exists()


@pytest.mark.parametrize('name,what', [
    ('args.yaml', "train.py's args.yaml"), ('summary.csv', "train.py's summary.csv"),
    ('done.json', "timm-sl reproduce's done.json"), ('sessions.json', "timm-sl reproduce's sessions.json"),
    ('model_best.pth.tar', 'a checkpoint file'),
])
def test_a_run_file_that_is_a_fifo_is_refused_by_name(name, what, tmp_path, capsys):
    """A FIFO where a run's file goes: reading args.yaml or summary.csv waited for a writer forever, done.json was
    taken for no marker, and model_best.pth.tar was 'a folder' (or, named itself, 'does not exist')."""
    import signal

    def hung(*_):
        raise AssertionError(f'timm-sl hung reading the FIFO {name}')

    run = tmp_path / 'runs' / 'r'
    _train_run(run, 'sl_vit_32', dict(depth=1))
    if (run / name).exists():
        (run / name).unlink()
    os.mkfifo(run / name)
    release = ['release', str(tmp_path / 'runs'), '--org', 'o', '--out', str(tmp_path / 'rel'), '--dataset', 'd']
    old = signal.signal(signal.SIGALRM, hung)
    signal.alarm(60)
    try:
        for argv in (['export', str(run), '--out', str(tmp_path / 'o')], release):
            assert _fails(argv, capsys) == (f'timm-sl {argv[0]}: {run / name} is a FIFO (named pipe), not a regular '
                                            f'file; expected {what}')
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    assert not (tmp_path / 'o').exists() and not (tmp_path / 'rel').exists()


@pytest.mark.parametrize('name,what', [('done.json', "timm-sl reproduce's done.json"),
                                       ('sessions.json', "timm-sl reproduce's sessions.json")])
def test_a_run_record_that_is_a_folder_is_refused_by_name(name, what, tmp_path, capsys):
    """A folder where done.json (or sessions.json) goes was taken for no marker: the dataset, Table 2 row and planned
    epochs the run records passed over, silently, and the run released as one of no record."""
    run = tmp_path / 'runs' / 'r'
    _train_run(run, 'sl_vit_32', dict(depth=1))
    (run / name).mkdir()
    release = ['release', str(tmp_path / 'runs'), '--org', 'o', '--out', str(tmp_path / 'rel'), '--dataset', 'd']
    for argv in (['export', str(run), '--out', str(tmp_path / 'o')], release):
        assert _fails(argv, capsys) == f'timm-sl {argv[0]}: {run / name} is a folder; expected {what}'
    assert not (tmp_path / 'o').exists() and not (tmp_path / 'rel').exists()


def test_label_names_of_a_class_map_run_are_held_against_its_map(tmp_path, capsys):
    """A run of train.py --class-map learned the map's classes (fox=0, cat=1, dog=2), not the class folders in sorted
    order: label names in sorted order were exported unchecked, every name on another class, and the card did not say
    a map was used; now the names are held against the map the run records (count, names and order), or refused
    when it is gone (names the map does not hold, as many as its classes, passed unchecked)."""
    data = tmp_path / 'data'
    (data / 'train').mkdir(parents=True)
    (data / 'train' / 'map.txt').write_text('fox\ncat\ndog\n')
    run = tmp_path / 'runs' / 'r'
    _train_run(run, 'sl_vit_32', dict(depth=1), class_map='map.txt', data_dir=str(data), dataset='')
    saved = torch.load(run / 'model_best.pth.tar', weights_only=False)
    model = timm.create_model('sl_vit_32', num_classes=3, depth=1)
    torch.save(dict(saved, state_dict=model.state_dict(), args=argparse.Namespace(**dict(
        vars(saved['args']), num_classes=3))), run / 'model_best.pth.tar')
    (run / 'args.yaml').write_text(json.dumps(dict(vars(saved['args']), num_classes=3)))
    names = tmp_path / 'names.txt'
    release = ['release', str(tmp_path / 'runs'), '--org', 'o', '--out', str(tmp_path / 'rel'), '--dataset', 'd',
               '--label-names', str(names)]
    export = ['export', str(run), '--out', str(tmp_path / 'o'), '--label-names', str(names)]
    where = data / 'train' / 'map.txt'
    for text, says in (
            ('cat\ndog\nfox\n', f"--label-names puts 'cat' at class 0, but the class map the run trained with "
                                f"({where}) makes 'cat' class 1: the names are in another order than the classes the "
                                f"run learned; allowed: the names in the order of that map (fox, cat, dog)"),
            ('fox\ncat\nwolf\n', f"--label-names names 'wolf' (class 2), which the class map the run trained with "
                                 f"({where}) does not hold: its names are the class folders the run learned; allowed: "
                                 f"the names of that map in its order (fox, cat, dog)"),
            ('fox\ncat\ndog\n', f"{run / 'args.yaml'} records --class-map map.txt, which is not there now (as given, "
                                f"nor in the data folder it records): the order of the classes the run learned is "
                                f"unknown, so --label-names cannot be checked; allowed: the class map back where "
                                f"train.py read it, or no --label-names")):
        names.write_text(text)
        if 'not there' in says:
            where.rename(data / 'elsewhere.txt')
        for argv in (export, release):  # the names' file named first (not the map's absence: args.yaml is named)
            assert _fails(argv, capsys) == f'timm-sl {argv[0]}: ' + ('' if 'not there' in says else f'{names}: ') + says
    assert not (tmp_path / 'o').exists() and not (tmp_path / 'rel').exists()
    (data / 'elsewhere.txt').rename(where)
    where.write_text('fox\ncat\n')  # a map of fewer classes than the run's head
    assert _fails(export, capsys) == (f'timm-sl export: {names}: 3 label names given but the class map the run '
                                      f'trained with ({where}) has 2 classes; allowed: one name per class, in the '
                                      f'order of that map')
    where.write_text('fox\ncat\ndog\n')
    assert main(export) == 0
    card = (tmp_path / 'o' / 'README.md').read_text()
    assert ('- Classes: 3 numbered by the class map the run trained with (`--class-map map.txt`): class i is the '
            "map's class i, not the i-th class folder in sorted order") in card
    assert json.loads((tmp_path / 'o' / 'config.json').read_text())['label_names'] == ['fox', 'cat', 'dog']


def test_a_relative_class_map_is_read_in_train_py_working_directory(tmp_path, capsys, monkeypatch):
    """A relative --class-map was looked for in the working directory of export first, not train.py's: exported from
    a folder holding another map.txt, label names were held against that map (the right names refused, names in
    another order passed). train.py's working directory is the run folder's OUTPUT parent for a relative --output;
    unknown (an absolute --output), a map here that is not the data folder's is refused in one line."""
    data, proj, elsewhere = tmp_path / 'data', tmp_path / 'proj', tmp_path / 'elsewhere'
    for folder, text in ((data / 'train', 'dog\ncat\nfox\n'), (proj, 'fox\ncat\ndog\n'),
                         (elsewhere, 'cat\nfox\ndog\n')):
        folder.mkdir(parents=True)
        (folder / 'map.txt').write_text(text)
    run = proj / 'runs' / 'r'  # train.py --output runs --experiment r, run in proj/
    _train_run(run, 'sl_vit_32', dict(depth=1), class_map='map.txt', data_dir=str(data), dataset='', output='runs',
               experiment='r')
    model = timm.create_model('sl_vit_32', num_classes=3, depth=1)
    saved = torch.load(run / 'model_best.pth.tar', weights_only=False)
    args = dict(vars(saved['args']), num_classes=3)
    torch.save(dict(saved, state_dict=model.state_dict(), args=argparse.Namespace(**args)), run / 'model_best.pth.tar')
    (run / 'args.yaml').write_text(json.dumps(args))
    names = tmp_path / 'names.txt'
    names.write_text('fox\ncat\ndog\n')
    monkeypatch.chdir(elsewhere)
    assert main(['export', str(run), '--out', str(tmp_path / 'o'), '--label-names', str(names)]) == 0
    names.write_text('cat\nfox\ndog\n')  # the order of the map here, which train.py never read
    assert 'puts \'cat\' at class 0' in _fails(['export', str(run), '--out', str(tmp_path / 'o2'), '--label-names',
                                                str(names)], capsys)
    (run / 'args.yaml').write_text(json.dumps(dict(args, output=str(proj / 'runs'))))  # train.py's folder unknown
    assert _fails(['export', str(run), '--out', str(tmp_path / 'o2'), '--label-names', str(names)], capsys) == (
        f"timm-sl export: {run / 'args.yaml'} records --class-map map.txt, relative to train.py's working directory, "
        f"which the run does not record (its --output is absolute, or the run folder moved): {elsewhere / 'map.txt'} "
        f"here may not be the map train.py read (it differs from {data / 'train' / 'map.txt'}, in the data folder); "
        f"allowed: run the command from another folder, or the absolute path of the map train.py read as class_map "
        f"in args.yaml")
    monkeypatch.chdir(tmp_path)  # no map.txt here: the data folder's, as timm's reader falls back to it
    names.write_text('dog\ncat\nfox\n')
    assert main(['export', str(run), '--out', str(tmp_path / 'o3'), '--label-names', str(names)]) == 0
    assert not (tmp_path / 'o2').exists()


@pytest.mark.parametrize('name,what', [
    ('args.yaml', "train.py's args.yaml"), ('summary.csv', "train.py's summary.csv"),
    ('command.txt', "the run's train.py command line"), ('done.json', "timm-sl reproduce's done.json"),
    ('sessions.json', "timm-sl reproduce's sessions.json")])
def test_a_link_to_nothing_in_a_run_folder_is_not_taken_for_no_file(name, what, tmp_path, capsys):
    """A run folder's args.yaml (summary.csv, done.json, ...) as a link to nothing was taken for no file: the run
    exported as one without args.yaml (its summary unread too) or without metrics, dataset or command, silently."""
    run = tmp_path / 'run'
    _train_run(run, 'sl_vit_32', dict(depth=1))
    (run / name).unlink(missing_ok=True)
    (run / name).symlink_to(tmp_path / 'gone' / name)
    assert _fails(['export', str(run), '--out', str(tmp_path / 'o')], capsys) == (
        f"timm-sl export: {run / name} is a link to {tmp_path / 'gone' / name}, which does not exist; expected {what} "
        f"(allowed: the file, a link to one, or none)")
    assert not (tmp_path / 'o').exists()


_LOADER = ', which no training ran with and a loader of the export would preprocess by'


@pytest.mark.parametrize('args,says', [
    (dict(mean='x'), f"the data config mean: 'x'{_LOADER}"),  # as args.yaml says it, not as timm expands it
    (dict(std={'a': 1}), f"the data config std: {{'a': 1}}{_LOADER}"),  # was Python's 'unhashable type: dict'
    (dict(mean=[0.5, None, 0.5]), f"the data config mean: [0.5, None, 0.5]{_LOADER}"),
    (dict(std=[0, 0, 0]), f'the data config std: (0, 0, 0){_LOADER}'),
    (dict(crop_pct='x'), f"the data config crop_pct: 'x'{_LOADER}"),
    (dict(interpolation=5), f'the data config interpolation: 5{_LOADER}'),
    (dict(interpolation='vit_tiny_patch16_224'),  # timm's transform looked it up: a KeyError traceback (analyses)
     "the interpolation 'vit_tiny_patch16_224', which timm does not know"),
    (dict(input_size='abc'), "a data config timm cannot resolve ('<=' not supported between instances of 'str' and "
                             "'int'), which no training ran with"),
    (dict(img_size=64), 'a data config timm cannot resolve (Requested image size (64, 64), but the model requires '
                        '(32, 32).), which no training ran with'),
    (dict(mean=[0.5, 0.5]), 'a data config timm cannot resolve (mean must have one value or 3 values, got 2.), which '
                            'no training ran with')])
def test_an_args_yaml_data_config_no_training_ran_with_is_refused(args, says, tmp_path, capsys):
    """An args.yaml of --mean x (--std 0, --crop-pct x) was exported into config.json as it was, for loaders to
    preprocess by; --input-size abc ended in a traceback, --img-size 64 (of a 32 px model) in timm's line naming no
    file; a mean of two values was said to be a wrong input_size; an interpolation timm does not know (found by
    mutating args.yaml at random) ended `attention` in timm's KeyError."""
    run = tmp_path / 'run'
    _train_run(run, 'sl_vit_32', dict(depth=1), **args)
    allowed = (f"gives {says}; allowed: the args.yaml train.py wrote (numbers for mean / std / crop_pct, std above 0, "
               f"an input size of three positive whole numbers)")
    assert _fails(['export', str(run), '--out', str(tmp_path / 'o')], capsys) == (
        f"timm-sl export: {run / 'args.yaml'} {allowed}")
    assert not (tmp_path / 'o').exists()
    pytest.importorskip('matplotlib')  # the analyses draw: without it they stop first (the floor's venv)
    image = tmp_path / 'x.png'
    Image.new('RGB', (32, 32)).save(image)
    assert _fails(['attention', str(image), '--checkpoint', str(run), '--out', str(tmp_path / 'a.png')], capsys) == (
        f"timm-sl attention: {run / 'args.yaml'} {allowed}")


def test_card_of_a_run_resumed_twice_says_each_sessions_batch_and_arguments(tmp_path):
    """A run resumed twice, with another batch, process count and --lr each time, was carded with two sessions only
    (the one that saved the weights and the last): the first session's batch and lr, recorded by its checkpoint-N
    files, went unsaid; and when the weights' session and the last agreed, the card said nothing was resumed."""
    run = tmp_path / 'run'
    _train_run(run, 'sl_vit_32', dict(depth=1), batch_size=128, world_size=2)
    checkpoint = torch.load(run / 'model_best.pth.tar', weights_only=False)
    for name, epoch, values in [('checkpoint-0.pth.tar', 0, dict(batch_size=64, world_size=1, lr=5e-4)),
                                ('checkpoint-1.pth.tar', 1, dict(batch_size=64, world_size=1, lr=5e-4)),
                                ('last.pth.tar', 4, dict(batch_size=256, world_size=4, lr=3e-3))]:
        vars(checkpoint['args']).update(values)
        torch.save(dict(checkpoint, epoch=epoch), run / name)
    os.mkfifo(run / 'checkpoint-3.pth.tar')  # not read (it would hang)
    torch.save(dict(checkpoint, epoch=3, args=argparse.Namespace(**dict(vars(checkpoint['args']), lr=0.5, batch_size=8,
                                                                       model_kwargs=dict(depth=2)))),
               run / 'another-model.pth.tar')  # another run's checkpoint, put there: not a session of this run
    (run / 'recovery-0-1.pth.tar').write_bytes(b'cut')  # not a checkpoint: says nothing
    # the last session's: resumed (without the optimizer's state, so with its own lr)
    args = dict(json.loads((run / 'args.yaml').read_text()), resume=str(run / 'last.pth.tar'), no_resume_opt=True)
    (run / 'args.yaml').write_text(json.dumps(dict(args, batch_size=256, lr=3e-3)))
    card = (export_checkpoint(run, None, tmp_path / 'out')[0] / 'README.md').read_text()
    assert ('the session that saved these weights trained on 2 processes x batch_size 128 = global batch 256, its last '
            'session (whose arguments the recipe above gives) on 4 processes x batch_size 256 = global batch 1024, '
            'another session (its checkpoints of epochs 1-2) on 1 process x batch_size 64 = global batch 64;') in card
    assert ("trained with `lr: 0.001`, where the recipe above gives its last session's, another session (its "
            "checkpoints of epochs 1-2) with `lr: 0.0005`;") in card
    assert 'lr: 0.5' not in card and 'batch_size 8' not in card
    (run / 'args.yaml').write_text(json.dumps(dict(args, world_size=2)))  # the last session is the weights' own
    vars(checkpoint['args']).update(batch_size=128, world_size=2, lr=1e-3)
    torch.save(dict(checkpoint, epoch=4), run / 'last.pth.tar')
    card = (export_checkpoint(run, None, tmp_path / 'out2')[0] / 'README.md').read_text()
    assert ('its last session (whose arguments the recipe above gives) on 2 processes x batch_size 128 = global batch '
            '256, another session (its checkpoints of epochs 1-2) on 1 process x batch_size 64') in card
    assert ("trained with the recipe above, its last session's, another session (its checkpoints of epochs 1-2) with "
            "`lr: 0.0005`;") in card
    for name in ('checkpoint-0.pth.tar', 'checkpoint-1.pth.tar'):
        (run / name).unlink()
    card = (export_checkpoint(run, None, tmp_path / 'out3')[0] / 'README.md').read_text()
    assert 'resumed with' not in card and 'Trained on 2 processes' in card


def test_a_run_resumed_from_an_earlier_checkpoint_drops_the_rows_it_replaced(tmp_path):
    """A run of 4 epochs resumed with --resume checkpoint-1.pth.tar (epochs 2.. trained again) and stopped after
    epoch 2 kept the first session's epochs 3 and 4 in its summary: its best top-1 (epoch 4's 90 %) was of weights
    no longer anywhere, and the run counted as finished (summary.csv 'reaches' epoch 4 of 4) and was released."""
    from timm_sl.tools.runs import read_run
    run = tmp_path / 'run'
    _train_run(run, 'sl_vit_32', dict(depth=1))
    (run / 'args.yaml').write_text(json.dumps(dict(json.loads((run / 'args.yaml').read_text()), epochs=4)))
    head = 'epoch,train_loss,eval_loss,eval_top1,eval_top5\n'
    (run / 'summary.csv').write_text(head + '0,1,1,50,90\n1,1,1,55.5,95\n2,1,1,80,95\n3,1,1,90,99\n'
                                     + head + '2,1,1,60,95\n')
    record = read_run(run / 'model_best.pth.tar')
    assert [(r['epoch'], r['eval_top1']) for r in record.rows] == [(0, 50), (1, 55.5), (2, 60)]
    assert record.summary['best_top1'] == 60 and record.summary['last_epoch'] == 3
    assert record.unfinished() == 'summary.csv reaches epoch 3 of the 4 args.yaml plans (no done.json: failed or ' \
                                  'interrupted)'


def test_the_card_of_a_run_of_another_eval_metric_does_not_call_its_best_top1_model_best(tmp_path):
    """A run of --eval-metric loss keeps its lowest-loss epoch as model_best.pth.tar: exporting that file, the card
    said the best top-1 epoch 'belongs to another checkpoint (train.py keeps it as model_best.pth.tar)', the file it
    was exporting."""
    run = tmp_path / 'run'
    _train_run(run, 'sl_vit_32', dict(depth=1), eval_metric='loss')
    (run / 'summary.csv').write_text('epoch,train_loss,eval_loss,eval_top1,eval_top5\n0,1,0.9,50,90\n1,1,0.5,45,95\n')
    card = (export_checkpoint(run, None, tmp_path / 'out')[0] / 'README.md').read_text()
    assert ("These weights are epoch 2's (top-1 45.00 %), not the best epoch's: the best top-1 above (epoch 1) belongs "
            "to another checkpoint (train.py chose model_best.pth.tar by --eval-metric loss, not by top-1).") in card
    assert 'keeps it as model_best' not in card


@pytest.mark.parametrize('given', [['depth=1', 'lsa_mask=False'], []], ids=['lsa_mask-off', 'none'])
def test_model_kwargs_other_than_the_runs_that_fit_its_weights_are_refused(given, tmp_path, capsys):
    """--model-kwargs lsa_mask=False (or none, for a run of lsa_mask=False) fit the weights of a run that records other
    kwargs: the export built a model that was never trained, carded with the trained model's top-1, silently."""
    recorded = dict(depth=1) if given else dict(lsa_mask=False)
    _train_run(tmp_path / 'run', 'sl_vit_32', recorded)  # lsa_mask has no weights: they fit either model
    (tmp_path / 'run' / 'args.yaml').write_text(json.dumps(dict(
        json.loads((tmp_path / 'run' / 'args.yaml').read_text()), model_kwargs=recorded)))
    saved = torch.load(tmp_path / 'run' / 'model_best.pth.tar', weights_only=False)
    saved['args'].model_kwargs = recorded
    torch.save(saved, tmp_path / 'run' / 'model_best.pth.tar')
    err = _fails(['export', str(tmp_path / 'run'), '--out', str(tmp_path / 'o'), '--model-kwargs', *given], capsys)
    said = "{'depth': 1, 'lsa_mask': False}" if given else '(none)'
    assert err == (f"timm-sl export: --model-kwargs {said} are not the run's: {tmp_path / 'run' / 'args.yaml'} records "
                   f"{recorded} for sl_vit_32, which its weights were trained (and scored) with; allowed: leave out "
                   f"--model-kwargs (the run's are used)")
    assert not (tmp_path / 'o').exists()
    assert main(['export', str(tmp_path / 'run'), '--out', str(tmp_path / 'o')]) == 0


def test_a_run_recording_an_spt_option_with_spt_off_still_exports(tmp_path):
    """A baseline run of an earlier reproduce recorded -- --model-kwargs shift_ratio=0.25 beside spt=False (train.py
    took and never used it); the model now refuses that pair, and the run's own record must still build."""
    folder = tmp_path / 'run'
    recorded = dict(depth=1, spt=False, lsa=False, shift_ratio=0.25)
    model = _train_run(folder, 'sl_vit_32', dict(depth=1, spt=False, lsa=False))
    args = dict(model='sl_vit_32', model_kwargs=recorded, num_classes=4, seed=1, lr=1e-3, epochs=2)
    checkpoint = torch.load(folder / 'model_best.pth.tar', weights_only=False)
    torch.save({**checkpoint, 'args': argparse.Namespace(**args)}, folder / 'model_best.pth.tar')
    (folder / 'args.yaml').write_text(json.dumps(args))
    assert main(['export', str(folder), '--out', str(tmp_path / 'out')]) == 0
    loaded = timm.create_model(f'local-dir:{tmp_path / "out"}', pretrained=True).eval()
    x = torch.randn(1, 3, 32, 32)
    with torch.no_grad():
        torch.testing.assert_close(loaded(x), model(x))


def test_the_card_of_a_resumed_runs_model_best_of_a_later_epoch_does_not_send_readers_to_it(tmp_path):
    """train.py chooses its best anew in a resumed session: its model_best.pth.tar then holds a later, worse epoch.
    Exporting that file, the card said the best epoch's weights were another checkpoint's, 'train.py keeps it as
    model_best.pth.tar': the very file it was exporting, which no longer holds them."""
    run = tmp_path / 'run'
    _train_run(run, 'sl_vit_32', dict(depth=1))
    saved = torch.load(run / 'model_best.pth.tar', weights_only=False)
    torch.save(dict(saved, epoch=2, metric=52.0), run / 'model_best.pth.tar')  # the resumed session's best
    head = 'epoch,train_loss,eval_loss,eval_top1,eval_top5\n'
    (run / 'summary.csv').write_text(head + '0,1,1,50,90\n1,1,1,55.5,95\n' + head + '2,1,1,52,93\n3,1,1,51,93\n')
    card = (export_checkpoint(run, None, tmp_path / 'out')[0] / 'README.md').read_text()
    assert ("These weights are epoch 3's (top-1 52.00 %), not the best epoch's: the best top-1 above (epoch 2) belongs "
            "to another checkpoint (not this model_best.pth.tar: train.py chooses its best anew in each session, so a "
            "session resumed after the best epoch replaced it).") in card
    assert 'keeps it as model_best' not in card
    torch.save(dict(saved, epoch=3), run / 'last.pth.tar')  # another file than model_best: kept as said before
    card = (export_checkpoint(run / 'last.pth.tar', None, tmp_path / 'last')[0] / 'README.md').read_text()
    assert 'belongs to another checkpoint (train.py keeps it as model_best.pth.tar).' in card


@pytest.mark.parametrize('metric,why', [
    ('top1', "train.py chose this model_best.pth.tar by the top-1 it measured of epoch 1's NaN outputs, which is "
             "chance (the class a NaN output ranks first), and no later epoch's top-1 beat it"),
    ('loss', "train.py chose this model_best.pth.tar by --eval-metric loss, whose NaN at epoch 1 no later loss "
             "compares below, so it kept epoch 1's weights"),
])
def test_a_model_best_of_a_diverged_first_epoch_is_said_to_be_so(metric, why, tmp_path):
    """A run whose first epoch's outputs were NaN (its eval_loss) and that recovered: train.py kept that epoch as
    model_best.pth.tar (its chance top-1 unbeaten, or a NaN loss nothing compares below). The card said a session
    resumed after the best epoch had replaced model_best, in a run never resumed."""
    run = tmp_path / 'run'
    _train_run(run, 'sl_vit_32', dict(depth=1), eval_metric=metric)
    saved = torch.load(run / 'model_best.pth.tar', weights_only=False)
    torch.save(dict(saved, epoch=0, metric=10.0 if metric == 'top1' else math.nan), run / 'model_best.pth.tar')
    (run / 'summary.csv').write_text('epoch,train_loss,eval_loss,eval_top1,eval_top5\n0,2.3,nan,10.0,50.0\n'
                                     '1,2.2,2.1,9.0,50.0\n')
    card = (export_checkpoint(run, None, tmp_path / 'out')[0] / 'README.md').read_text()
    assert ("These weights are epoch 1's (diverged: its outputs were NaN), not the best epoch's: the best top-1 above "
            f"(epoch 2) belongs to another checkpoint ({why}).") in card
    assert 'resumed' not in card


@pytest.mark.parametrize('given,reader,recorded', [
    ('', 'folder', None), ('cifar10', 'folder', 'cifar10'), ('ImageFolder', 'folder', None),
    ('my/data', 'folder', 'data'), ('torch/image_folder', 'torch/folder', None),
    ('TORCH/x/Folder', 'torch/folder', None), ('torch/cifar10', 'torch', 'cifar10'),
    ('torch/imagefolder', 'torch', 'imagefolder'), ('HFDS/beans', 'hfds', 'beans'), ('wds/shards', 'wds', 'shards'),
])
def test_the_reader_of_a_dataset_name_is_the_one_timm_reads_it_with(given, reader, recorded):
    """One answer for export's label-name check, reproduce's data checks and the run's recorded dataset, as timm's
    create_dataset picks the reader (only the prefix picks it, any case; torch/ takes what follows the second '/');
    reproduce had read torch/x/folder as no image folder, where the card's check read it as torchvision's."""
    from timm_sl.tools.runs import dataset_reader, recorded_dataset
    assert (dataset_reader(given), recorded_dataset(dict(dataset=given), {})) == (reader, recorded)


@pytest.mark.parametrize('reader,given,says', [
    ('', ['c1', 'c10', 'c2', 'c3'],
     "--label-names puts 'c10' at class 1, but the run learned the class folders of {folder} in timm's order, where "
     "'c10' is class 3: a name of a class folder names that folder's class only; allowed: the names in that order "
     "(c1, c2, c3, ...)"),
    ('torch/image_folder', ['c1', 'c2', 'c3', 'c10'],
     "--label-names puts 'c2' at class 1, but the run learned the class folders of {folder} in torchvision's order, "
     "where 'c2' is class 2: a name of a class folder names that folder's class only; allowed: the names in that "
     "order (c1, c10, c2, ...)"),
])
def test_label_names_of_a_runs_class_folders_in_another_order_are_refused(reader, given, says, tmp_path, capsys):
    """A run of an image folder learned its class folders in its reader's order (timm's natural order: c2 before c10;
    torchvision's sorted order): label names that are those folders in another order were exported, every prediction
    named by a wrong class."""
    data = tmp_path / 'data'
    for name in ('c1', 'c2', 'c3', 'c10'):
        (data / 'train' / name).mkdir(parents=True)
        (data / 'train' / name / 'x.png').write_bytes(b'')
    run = tmp_path / 'run'
    _train_run(run, 'sl_vit_32', dict(depth=1), data_dir=str(data), dataset=reader)
    names = tmp_path / 'names.txt'
    names.write_text('\n'.join(given) + '\n')
    out = tmp_path / 'out'
    assert _fails(['export', str(run), '--out', str(out), '--label-names', str(names)], capsys) == \
        f'timm-sl export: {names}: ' + says.format(folder=data / 'train')
    assert not out.exists()
    right = sorted(given, key=lambda n: (int(n[1:]) if not reader else n))
    names.write_text('\n'.join(right) + '\n')
    assert main(['export', str(run), '--out', str(out), '--label-names', str(names)]) == 0
    assert json.loads((out / 'config.json').read_text())['label_names'] == right


def test_label_names_of_a_runs_class_folders_with_one_edited_in_another_order_are_refused(tmp_path, capsys):
    """Label names of a names file in another class order with one name edited besides ('C10' for 'c10', a typo):
    not the same set as the class folders, so the order went unchecked and every other class was exported under a
    wrong name. A name that is a class folder's is now held at that folder's class."""
    data = tmp_path / 'data'
    for name in ('c1', 'c2', 'c3', 'c10'):
        (data / 'train' / name).mkdir(parents=True)
        (data / 'train' / name / 'x.png').write_bytes(b'')
    run = tmp_path / 'run'
    _train_run(run, 'sl_vit_32', dict(depth=1), data_dir=str(data), dataset='')
    names, out = tmp_path / 'names.txt', tmp_path / 'out'
    names.write_text('c2\nc1\nc3\nC10\n')
    assert _fails(['export', str(run), '--out', str(out), '--label-names', str(names)], capsys) == (
        f"timm-sl export: {names}: --label-names puts 'c2' at class 0, but the run learned the class folders of "
        f"{data / 'train'} in timm's order, where 'c2' is class 1: a name of a class folder names that folder's class "
        f"only; allowed: the names in that order (c1, c2, c3, ...)")
    assert not out.exists()
    for given in ('c1\nc2\nc3\nC10\n', 'cat\ndog\nfox\nowl\n'):  # at their classes, or names of one's own
        names.write_text(given)
        assert main(['export', str(run), '--out', str(out), '--label-names', str(names), '--overwrite']) == 0
        assert json.loads((out / 'config.json').read_text())['label_names'] == given.split()


def test_a_class_map_torchvision_never_read_is_not_taken_for_the_runs_class_order(tmp_path, capsys):
    """train.py --dataset torch/folder --class-map m.txt: timm gives no class map to torchvision's ImageFolder, which
    numbers the folders sorted. The card said the classes were numbered by the map, and --label-names were checked
    against no order at all."""
    data = tmp_path / 'data'
    for name in ('c1', 'c2', 'c3', 'c10'):
        (data / 'train' / name).mkdir(parents=True)
        (data / 'train' / name / 'x.png').write_bytes(b'')
    (tmp_path / 'm.txt').write_text('c2\nc1\nc3\nc10\n')
    run = tmp_path / 'run'
    _train_run(run, 'sl_vit_32', dict(depth=1), data_dir=str(data), dataset='torch/folder',
               class_map=str(tmp_path / 'm.txt'))
    names = tmp_path / 'names.txt'
    names.write_text('c2\nc1\nc3\nc10\n')  # the map's order, which the run never learned
    assert "in torchvision's order, where 'c2' is class 2" in _fails(
        ['export', str(run), '--out', str(tmp_path / 'out'), '--label-names', str(names)], capsys)
    card = (export_checkpoint(run, None, tmp_path / 'o2')[0] / 'README.md').read_text()
    assert 'numbered by the class map' not in card


def test_the_card_of_a_run_stopped_short_of_its_epochs_says_so(tmp_path):
    """A run of --epochs 10 interrupted (or still running) after 2: its card gave the top-1 of 2 epochs beside the
    recipe's `epochs: 10`, as if that recipe run to its end had scored it."""
    run = tmp_path / 'run'
    _train_run(run, 'sl_vit_32', dict(depth=1))
    (run / 'args.yaml').write_text(json.dumps(dict(json.loads((run / 'args.yaml').read_text()), epochs=10)))
    card = (export_checkpoint(run, None, tmp_path / 'out')[0] / 'README.md').read_text()
    assert ('The run did not train its planned epochs (summary.csv reaches epoch 2 of the 10 args.yaml plans (no '
            'done.json: failed or interrupted)): the results above are of the epochs it ran, not of the recipe below '
            'run to its end.') in card
    (run / 'args.yaml').write_text(json.dumps(dict(json.loads((run / 'args.yaml').read_text()), epochs=2)))
    assert 'did not train' not in (export_checkpoint(run, None, tmp_path / 'o2')[0] / 'README.md').read_text()


def test_a_run_stopped_in_its_cooldown_epochs_is_not_taken_for_finished(tmp_path, capsys):
    """train.py --epochs 1 --cooldown-epochs 2 trains 3 epochs (its schedule's): stopped after 2, its card said nothing
    of it and release released it as finished, as 2 reaches args.yaml's --epochs."""
    runs = tmp_path / 'runs'
    run = runs / 'run'
    _train_run(run, 'sl_vit_32', dict(depth=1))
    (run / 'args.yaml').write_text(json.dumps(dict(json.loads((run / 'args.yaml').read_text()), epochs=1,
                                                   cooldown_epochs=2, sched='cosine', warmup_epochs=0)))
    card = (export_checkpoint(run, None, tmp_path / 'out')[0] / 'README.md').read_text()
    assert ("The run did not train its planned epochs (summary.csv reaches epoch 2 of the 3 args.yaml plans (no "
            "done.json: failed or interrupted; train.py's schedule trains 3 for --epochs 1)): the results above are "
            "of the epochs it ran") in card
    with pytest.raises(SystemExit):
        main(['release', str(runs), '--org', 'o', '--out', str(tmp_path / 'rel'), '--dataset', 'd'])
    assert f'skipped: {run} is not a finished run (summary.csv reaches epoch 2 of the 3' in capsys.readouterr().out
    with (run / 'summary.csv').open('a') as f:
        f.write('2,1,1,50.0,90.0\n')
    assert 'did not train' not in (export_checkpoint(run, None, tmp_path / 'o2')[0] / 'README.md').read_text()


def test_the_card_of_a_run_of_val_interval_counts_the_epochs_it_trained(tmp_path):
    """train.py --val-interval 2 --epochs 4 writes summary.csv rows of epochs 2 and 4 only: its card said 2 epochs run
    and that the run's first epoch was not in summary.csv, as if it had run elsewhere."""
    run = tmp_path / 'run'
    _train_run(run, 'sl_vit_32', dict(depth=1))
    args = json.loads((run / 'args.yaml').read_text())
    (run / 'args.yaml').write_text(json.dumps(dict(args, epochs=4, val_interval=2)))
    (run / 'summary.csv').write_text('epoch,train_loss,eval_loss,eval_top1,eval_top5\n1,1,1,50,90\n3,1,1,55.5,95\n')
    saved = torch.load(run / 'model_best.pth.tar', weights_only=False)
    torch.save(dict(saved, epoch=3), run / 'model_best.pth.tar')
    card = (export_checkpoint(run, None, tmp_path / 'out')[0] / 'README.md').read_text()
    assert ('| epochs run | 4 (evaluated every 2 epochs and after the last: `--val-interval 2`; summary.csv lists 2) |'
            in card)
    assert '| these weights: epoch (counted from 1) | 4 of 4 (the best evaluated epoch) |' in card
    assert 'summary.csv lists epochs' not in card and 'did not train' not in card
    # begun at --start-epoch 2 of 6: rows of epochs 4 and 6 (counted from 1)
    (run / 'args.yaml').write_text(json.dumps(dict(args, epochs=6, val_interval=2, start_epoch=2)))
    (run / 'summary.csv').write_text('epoch,train_loss,eval_loss,eval_top1,eval_top5\n3,1,1,50,90\n5,1,1,55.5,95\n')
    torch.save(dict(saved, epoch=5), run / 'model_best.pth.tar')
    card = (export_checkpoint(run, None, tmp_path / 'o2')[0] / 'README.md').read_text()
    assert 'summary.csv lists epochs 3-6 only: the run began at epoch 3 (`--start-epoch 2`' in card
    assert '| epochs run | 4 (evaluated every 2 epochs' in card


def test_the_card_of_a_run_of_start_epoch_says_it_began_there(tmp_path):
    """train.py --start-epoch 2 --epochs 4 (no --resume) trains epochs 3-4 only: its card said 'the run's first 2
    epochs are not in it' (summary.csv), as if they had run elsewhere; the recipe it lists does not hold start_epoch."""
    run = tmp_path / 'run'
    _train_run(run, 'sl_vit_32', dict(depth=1))
    (run / 'args.yaml').write_text(json.dumps(dict(json.loads((run / 'args.yaml').read_text()), epochs=4,
                                                   start_epoch=2)))
    (run / 'summary.csv').write_text('epoch,train_loss,eval_loss,eval_top1,eval_top5\n2,1,1,50,90\n3,1,1,55.5,95\n')
    saved = torch.load(run / 'model_best.pth.tar', weights_only=False)
    torch.save(dict(saved, epoch=3), run / 'model_best.pth.tar')
    card = (export_checkpoint(run, None, tmp_path / 'out')[0] / 'README.md').read_text()
    assert ('summary.csv lists epochs 3-4 only: the run began at epoch 3 (`--start-epoch 2`, its learning-rate '
            'schedule 2 epochs in), with no epoch trained before it.') in card
    assert 'not in it' not in card and 'did not train its planned' not in card


def test_a_run_without_a_validation_split_exports_and_its_card_says_it_was_not_evaluated(tmp_path, capsys):
    """train.py run with --val-split '' writes a summary.csv of train columns only: export and release refused it as
    'not a train.py summary.csv (no epoch / eval_top1 columns)', which train.py had written."""
    run = tmp_path / 'runs' / 'r'
    _train_run(run, 'sl_vit_32', dict(depth=1), val_split='')
    (run / 'summary.csv').write_text('epoch,train_loss,lr\n0,2.3,0.01\n1,2.1,0.005\n')
    assert main(['export', str(run), '--out', str(tmp_path / 'o')]) == 0
    card = (tmp_path / 'o' / 'README.md').read_text()
    assert ("Not evaluated: the run trained 2 epochs without a validation split (train.py's summary.csv records no "
            "top-1), so no accuracy is known.") in card
    assert 'diverged' not in card and 'metrics:' not in card
    assert main(['release', str(tmp_path / 'runs'), '--org', 'o', '--out', str(tmp_path / 'rel'),
                 '--dataset', 'd']) == 0
    card = next((tmp_path / 'rel').glob('*/README.md')).read_text()
    assert '| measured best top-1 | - (not evaluated: no validation split) |' in card and 'diverged' not in card
    (run / 'summary.csv').write_text('epoch,lr\n0,0.01\n')  # no train.py summary either way: refused as before
    err = _fails(['export', str(run), '--out', str(tmp_path / 'o2')], capsys)
    assert err == f'timm-sl export: {run / "summary.csv"} is not a train.py summary.csv (no epoch / eval_top1 columns)'


def test_a_recovery_checkpoint_is_not_carded_with_the_top1_of_the_epoch_it_was_saved_during(tmp_path):
    """train.py's recovery-E-B.pth.tar (--recovery-interval) records epoch E but holds weights of its batch B: the card
    gave them the top-1 train.py measured at the end of that epoch, and called them the best epoch's."""
    run = tmp_path / 'run'
    _train_run(run, 'sl_vit_32', dict(depth=1))  # summary.csv's best is epoch 1 (counted from 0)
    saved = torch.load(run / 'model_best.pth.tar', weights_only=False)
    torch.save({k: v for k, v in saved.items() if k != 'metric'}, run / 'recovery-1-20.pth.tar')
    card = (export_checkpoint(run / 'recovery-1-20.pth.tar', None, tmp_path / 'out')[0] / 'README.md').read_text()
    assert '| these weights: epoch (counted from 1) | 2 of 2, saved during it |' in card
    assert '| these weights: top-1 (%) | - |' in card and 'the best epoch)' not in card
    assert ("These weights were saved during epoch 2 (train.py's recovery checkpoint, before that epoch ended): no "
            "top-1 of summary.csv is theirs, the best above is another checkpoint's.") in card


def test_a_run_whose_eval_loss_is_nan_is_carded_as_diverged_not_with_its_chance_top1(tmp_path, capsys):
    """A diverged model outputs NaN; timm's accuracy of NaN outputs is the share of the class NaN ranks first (10 %
    of 10 balanced classes), written to summary.csv beside eval_loss nan. The card gave that chance top-1 as the run's
    best top-1, of a trained model; release named it too."""
    from timm.utils import accuracy
    nan_top1, nan_top5 = (float(a) for a in accuracy(torch.full((20, 4), math.nan), torch.arange(20) % 4, (1, 2)))
    run = tmp_path / 'runs' / 'r'
    _train_run(run, 'sl_vit_32', dict(depth=1))
    (run / 'summary.csv').write_text(f'epoch,train_loss,eval_loss,eval_top1,eval_top5\n0,nan,nan,{nan_top1},'
                                     f'{nan_top5}\n1,nan,nan,{nan_top1},{nan_top5}\n')
    card = (export_checkpoint(run, None, tmp_path / 'out')[0] / 'README.md').read_text()
    assert 'No epoch of the 2 run has a finite top-1 (NaN: the run diverged)' in card and '25.00' not in card
    # not a trained model, its card says: release skips it (it pushed it, best top-1 '-')
    assert _fails(['release', str(tmp_path / 'runs'), '--org', 'o', '--out', str(tmp_path / 'rel'), '--dataset', 'd',
                   '--name-pattern', '{run}'], capsys).startswith('timm-sl release: no finished run to release under ')
    assert not (tmp_path / 'rel').exists()
    # an epoch that diverged after the best: the best stands, the diverged one's top-1 is not a number
    (run / 'summary.csv').write_text('epoch,train_loss,eval_loss,eval_top1,eval_top5\n0,1,1,30,60\n'
                                     f'1,nan,nan,{nan_top1},{nan_top5}\n')
    card = (export_checkpoint(run, None, tmp_path / 'out2')[0] / 'README.md').read_text()
    assert '| best top-1 (%) | 30.00 |' in card and '| these weights: top-1 (%) | NaN (diverged) |' in card
    assert ('The run diverged at epoch 2 (NaN) and stayed so to its last epoch (2): the best top-1 above is of an '
            'epoch before it, and the recipe below, run to its end, gives NaN weights.') in card
    (run / 'summary.csv').write_text('epoch,train_loss,eval_loss,eval_top1,eval_top5\n0,1,1,30,60\n'
                                     f'1,nan,nan,{nan_top1},{nan_top5}\n2,1,1,31,61\n')  # recovered: no such note
    assert 'The run diverged' not in (export_checkpoint(run, None, tmp_path / 'out3')[0] / 'README.md').read_text()


def test_the_card_of_a_run_resumed_from_another_folder_says_its_summary_begins_late(tmp_path):
    """train.py --resume OTHER/last.pth.tar --experiment new starts a new folder whose summary.csv begins at the
    resumed epoch: the card called epoch 3's top-1 the run's best ('the best epoch') with 'epochs run 1', though the
    run's first two epochs, perhaps better, were another folder's."""
    run = tmp_path / 'run'
    _train_run(run, 'sl_vit_32', dict(depth=1), resume='/home/me/out/first/last.pth.tar')
    (run / 'summary.csv').write_text('epoch,train_loss,eval_loss,eval_top1,eval_top5\n2,1,1,55.5,95\n')
    torch.save(dict(torch.load(run / 'model_best.pth.tar', weights_only=False), epoch=2, metric=55.5),
               run / 'model_best.pth.tar')
    card = (export_checkpoint(run, None, tmp_path / 'out')[0] / 'README.md').read_text()
    assert '| these weights: epoch (counted from 1) | 3 of 3 (the best listed epoch) |' in card
    assert ("summary.csv lists epochs 3-3 only: the run's first 2 epochs ran in another run folder (this one was "
            "resumed from its `last.pth.tar`), whose summary.csv holds their top-1; the best top-1 above is the best "
            "of the listed epochs.") in card and '/home/me' not in card
    (run / 'summary.csv').write_text('epoch,train_loss,eval_loss,eval_top1,eval_top5\n0,1,1,50,90\n1,1,1,52,95\n'
                                     '2,1,1,55.5,95\n')  # the whole run: as before
    card = (export_checkpoint(run, None, tmp_path / 'out2')[0] / 'README.md').read_text()
    assert '3 of 3 (the best epoch) |' in card and 'listed' not in card


def test_training_checkpoint_errors(files):
    with pytest.raises(FileNotFoundError, match='missing.pth does not exist'):
        read_checkpoint(files / 'missing.pth')
    for name, reason in (('garbage.pth', r'it is a text file; torch.save writes a zip archive'),
                         ('truncated.pth', r'truncated or damaged: '),
                         ('code.pth', r'weights-only load refused it: it holds objects other than tensors')):
        with pytest.raises(ValueError, match=rf'{name} is not a readable torch checkpoint \({reason}'):
            read_checkpoint(files / name)
    assert not (files / 'EXECUTED').exists()
    with pytest.raises(ValueError, match=r"good.pth does not fit sl_vit_32 \{'depth': 2"):
        model_from_checkpoint(files / 'good.pth', 'sl_vit_32', dict(depth=2))


def _extended_run(run: Path, sessions: list, first_args: dict = None) -> None:
    """A run of --epochs 3 --cooldown-epochs 2 (5 epochs) resumed with --epochs 6 (8 epochs): args.yaml is the last
    session's; ``first_args``: args its first session's checkpoint-2.pth.tar records (None: no such checkpoint)."""
    _train_run(run, 'sl_vit_32', dict(depth=1))
    args = dict(json.loads((run / 'args.yaml').read_text()), epochs=6, cooldown_epochs=2, sched='cosine',
                warmup_epochs=0, resume=str(run / 'last.pth.tar'), experiment='r')
    (run / 'args.yaml').write_text(json.dumps(args))
    (run / 'summary.csv').write_text('epoch,train_loss,eval_loss,eval_top1,eval_top5\n' + ''.join(
        f'{e},1,1,{50 + e},90\n' for e in range(8)))
    saved = torch.load(run / 'model_best.pth.tar', weights_only=False)
    torch.save(dict(saved, epoch=7, args=argparse.Namespace(**args)), run / 'model_best.pth.tar')
    if first_args is not None:
        torch.save(dict(saved, epoch=2, args=argparse.Namespace(**dict(args, resume='', **first_args))),
                   run / 'checkpoint-2.pth.tar')
    (run / 'sessions.json').write_text(json.dumps(sessions))
    (run / 'command.txt').write_text('python train.py --data-dir /d --model sl_vit_32 --output /o --experiment r '
                                     '--cooldown-epochs 2 --epochs 6\n')


@pytest.mark.parametrize('recorded, first_args', [(True, None), (False, None), (False, dict(epochs=3))],
                         ids=['recorded', 'older-sessions-json', 'checkpoint-args'])
def test_an_extended_run_of_cooldown_epochs_gives_each_session_its_own_epochs(recorded, first_args, tmp_path):
    """A run of --epochs 3 --cooldown-epochs 2 (trains 5) resumed with --epochs 6 (trains 8): its commands were given
    as `--epochs 5` then `--epochs 8` (rerun, those train 7 and 10 epochs), and the card said `epochs: 8` and a
    schedule of `--epochs 5`, where args.yaml says 6."""
    from timm_sl.tools.runs import read_run
    run = tmp_path / 'r'

    def session(start, before, after, given):
        return dict(status='exited', code=0, seconds=1., devices='', epochs=[before, after], start=start,
                    **(dict(given_epochs=given) if recorded else {}))
    _extended_run(run, [session('new', 0, 5, 3), session('resume', 5, 8, 6)], first_args)
    record = read_run(run)
    base = 'python train.py --data-dir DATA --model sl_vit_32 --output OUTPUT --experiment r --cooldown-epochs 2'
    assert record.session_commands() == [f'{base} --epochs 3', f'{base} --resume OUTPUT/r/last.pth.tar --epochs 6']
    assert record.extended_from() == [5] and record.schedules() == [(5, 3), (8, 6)]
    card = (export_checkpoint(run, None, tmp_path / 'out')[0] / 'README.md').read_text()
    assert ("`epochs: 6` is the last session's: the run was extended from 5 epochs (its first 5 ran under a schedule "
            "of `--epochs 3`, then it was resumed)") in card


def test_an_extended_runs_first_epochs_are_those_its_checkpoints_record(tmp_path):
    """An older sessions.json without each session's --epochs: those its checkpoints' args record are the session's,
    where the schedule of args.yaml's other settings would give another (the first session had a shorter cool-down)."""
    from timm_sl.tools.runs import read_run
    session = dict(status='exited', code=0, seconds=1., devices='', start='new')
    _extended_run(tmp_path / 'r', [dict(session, epochs=[0, 5]), dict(session, epochs=[5, 8], start='resume')],
                  dict(epochs=4, cooldown_epochs=1))
    base = 'python train.py --data-dir DATA --model sl_vit_32 --output OUTPUT --experiment r --cooldown-epochs 2'
    assert read_run(tmp_path / 'r').session_commands()[0] == f'{base} --epochs 4'


def test_a_run_of_val_interval_resumed_off_its_grid_counts_from_the_resumed_checkpoint(tmp_path):
    """--val-interval 2, resumed into a new folder from a last.pth.tar of epoch 5 (a 5-epoch schedule's last), trains
    epochs 6-10 and lists 6, 8 and 10: the card said 6 epochs run from epoch 5, as if it resumed on the grid; where that
    checkpoint is gone it now says the count is an upper bound."""
    from timm_sl.tools.runs import read_run
    first = tmp_path / 'first'
    first.mkdir()
    run = tmp_path / 'run'
    _train_run(run, 'sl_vit_32', dict(depth=1), resume=str(first / 'last.pth.tar'))
    args = json.loads((run / 'args.yaml').read_text())
    (run / 'args.yaml').write_text(json.dumps(dict(args, epochs=10, val_interval=2)))
    (run / 'summary.csv').write_text('epoch,train_loss,eval_loss,eval_top1,eval_top5\n' + ''.join(
        f'{e},1,1,{50 + e},90\n' for e in (5, 7, 9)))
    saved = torch.load(run / 'model_best.pth.tar', weights_only=False)
    torch.save(dict(saved, epoch=9), run / 'model_best.pth.tar')
    torch.save(dict(saved, epoch=4, version=2), first / 'last.pth.tar')  # train.py resumes at its epoch + 1
    card = (export_checkpoint(run, None, tmp_path / 'out')[0] / 'README.md').read_text()
    assert '| epochs run | 5 (evaluated every 2 epochs' in card and read_run(run).summary['epochs'] == 5
    assert ("summary.csv lists epochs 6-10 only: the run's first 5 epochs ran in another run folder (this one was "
            "resumed from its `last.pth.tar`), whose summary.csv holds their top-1") in card
    (first / 'last.pth.tar').unlink()  # not at hand: epoch 5 or 6 (counted from 1) could be the first
    card = (export_checkpoint(run, None, tmp_path / 'out2')[0] / 'README.md').read_text()
    assert '| epochs run | up to 6 (evaluated every 2 epochs' in card
    assert ("summary.csv covers at most epochs 5-10: the run's first 4 epochs or more ran in another run folder (this "
            "one was resumed from its `last.pth.tar`, not at hand to say at which epoch), whose summary.csv holds "
            "their top-1") in card


def test_card_counts_the_macs_of_a_dynamic_size_model_at_the_size_it_trained_at(tmp_path):
    """A run of a dynamic_img_size model trained at 48 px: its card said "MACs: 23.7 M at 3x48x48", the count of the
    32 px image its patch embedding was built for, beside the 48 px it names."""
    from timm_sl.tools.profile import count_macs
    model = _train_run(tmp_path / 'run', 'sl_vit_32', dict(depth=1, dynamic_img_size=True), input_size=[3, 48, 48])
    card = (export_checkpoint(tmp_path / 'run' / 'model_best.pth.tar', None, tmp_path / 'out')[0] / 'README.md'
            ).read_text()
    assert f'- MACs: {count_macs(model, (3, 48, 48)) / 1e6:.1f} M at 3x48x48' in card
    assert count_macs(model, (3, 48, 48)) != count_macs(model, (3, 32, 32))


def test_card_of_a_run_resumed_from_a_checkpoint_that_changed_since_does_not_name_its_arguments(tmp_path, monkeypatch):
    """train.py --epochs 2 into output/a, --resume output/a/last.pth.tar --epochs 4 into output/b, then output/a
    trained on (its last.pth.tar now epoch 8, of --epochs 8 --smoothing 0.3): b's card named those as the arguments
    of 'the run it was resumed from', which b never resumed from; now it says the checkpoint changed since."""
    monkeypatch.chdir(tmp_path)  # train.py's working directory: --output output, relative
    run, first = _resumed_into_new_folder(tmp_path, smoothing=0.0)
    later = dict(vars(first['args']), epochs=8, smoothing=0.3)
    torch.save(dict(first, epoch=7, args=argparse.Namespace(**later)), tmp_path / 'output' / 'a' / 'last.pth.tar')
    card = (export_checkpoint(run, None, tmp_path / 'out')[0] / 'README.md').read_text()
    assert 'smoothing: 0.3' not in card and 'the run it was resumed from' not in card
    assert ("the best top-1 above is the best of the listed epochs; `output/a/last.pth.tar` cannot be taken for the "
            "checkpoint this run resumed from (it has changed since: it now resumes at epoch 9, where this run began "
            "at epoch 3), so the arguments of the session that trained those epochs are not known.") in card
    again = argparse.Namespace(**dict(later, epochs=2))
    torch.save(dict(first, args=again), tmp_path / 'output' / 'a' / 'last.pth.tar')
    card = (export_checkpoint(run, None, tmp_path / 'o2')[0] / 'README.md').read_text()  # epoch 2 again: accepted
    assert "the run it was resumed from (`output/a/last.pth.tar`, epoch 2) with `epochs: 2`, `smoothing: 0.3`" in card
    assert 'cannot be taken for' not in card


def test_card_of_a_run_resumed_with_start_epoch_does_not_say_its_checkpoint_changed(tmp_path, monkeypatch):
    """train.py --resume output/a/last.pth.tar --start-epoch 2: train.py begins at epoch 3 whatever epoch the
    checkpoint holds, so the card said the unchanged checkpoint 'has changed since'; it says what cannot be told."""
    monkeypatch.chdir(tmp_path)
    run, first = _resumed_into_new_folder(tmp_path, start_epoch=2)
    torch.save(dict(first, epoch=5), tmp_path / 'output' / 'a' / 'last.pth.tar')  # resumes at 6: --start-epoch wins
    card = (export_checkpoint(run, None, tmp_path / 'out')[0] / 'README.md').read_text()
    assert 'has changed since' not in card
    assert ("`output/a/last.pth.tar` cannot be taken for the checkpoint this run resumed from (its epoch cannot be "
            "held against this run's first: --start-epoch 2 overrode it)") in card


@pytest.mark.parametrize('command, args, differs', [
    ('--model sl_vit_32 --lr 0.003 --seed 0', dict(lr=0.01), ['--lr 0.003 (args.yaml: 0.01)']),
    ('--model sl_vit_32 --seed=0 --seed 1', dict(seed=0), ['--seed 1 (args.yaml: 0)']),  # argparse keeps the last
    ('--model sl_vit_32', dict(model='sl_pit_32'), ['--model sl_vit_32 (args.yaml: sl_pit_32)']),
    ('--model-kwargs drop_rate=0.1 --lr 0.003', dict(model_kwargs={}),
     ['--model-kwargs drop_rate=0.1 (args.yaml: none)']),
    ('--model-kwargs spt=False lsa=False depth=1 --lr 3e-3', dict(model_kwargs=dict(depth=1, lsa=False, spt=False)),
     []),  # args.yaml's order, the lr written otherwise
    ('--model-kwargs img_size=(32,32)', dict(model_kwargs=dict(img_size=[32, 32])), []),  # a tuple YAML lists
    ('--lr 0.003 --model-kwargs', dict(lr=None, seed=0), []),  # what either does not say is not compared
    ("--lr '0.003", dict(lr=0.01), []),  # command.txt cut inside a quote: no command
])
def test_the_command_is_compared_with_args_yaml(command, args, differs):
    """RunRecord.command_differs: what command.txt gives other than args.yaml records (model, kwargs, seed, lr):
    train.py started again in the run folder with other arguments: a card must not give command.txt for its weights."""
    record = RunRecord(checkpoint=Path('x'), args=dict(dict(model='sl_vit_32', lr=0.003, seed=0), **args),
                       command=f'python train.py --data-dir DATA {command} --output OUTPUT')
    assert record.command_differs() == differs


@pytest.mark.extended  # three exports of a real model: seconds
def test_another_runs_checkpoint_copied_into_a_run_is_refused_by_every_reader(tmp_path, capsys):
    """A finished run's model_best.pth.tar replaced by another run's (lr 0.002, 3 epochs): export carded it as a
    session 'resumed with other arguments', release would push it under the run's name, temperature / kld analysed it
    as the run's. A checkpoint of other model / kwargs / seed / lr than args.yaml at an epoch summary.csv does not
    list is refused by the one reader of them all; one of a listed epoch is a session resumed with other arguments."""
    from timm_sl.tools.checkpoint import read_run_checkpoint
    from timm_sl.tools.hub import check_export
    from timm_sl.tools.runs import read_run
    run = tmp_path / 'run'
    _train_run(run, 'sl_vit_32', dict(depth=1))
    saved = torch.load(run / 'model_best.pth.tar', weights_only=False)
    other = argparse.Namespace(**dict(vars(saved['args']), lr=0.002, epochs=3))
    torch.save(dict(saved, epoch=2, args=other), run / 'model_best.pth.tar')
    err = _fails(['export', str(run), '--out', str(tmp_path / 'out')], capsys)
    assert err == (f"timm-sl export: {run / 'model_best.pth.tar'} was saved by a train.py with lr 0.002 (args.yaml: "
                   f"0.001), at epoch 3, which {run / 'summary.csv'} does not list: another run's checkpoint (copied "
                   f"into the folder?), not this run's weights; allowed: the run's own checkpoint put back, or that "
                   f"run's folder")
    assert not (tmp_path / 'out').exists()
    for read in (lambda: read_run_checkpoint(run), lambda: check_export(read_run(run))):  # temperature, kld; release
        with pytest.raises(ValueError, match='was saved by a train.py with lr 0.002'):
            read()
    torch.save(dict(saved, epoch=1, args=other), run / 'model_best.pth.tar')  # a listed epoch: resumed with lr 0.002
    card = (export_checkpoint(run, None, tmp_path / 'o1')[0] / 'README.md').read_text()
    assert 'The run was resumed with other arguments' in card


@pytest.mark.extended  # exports of a real model: seconds
def test_the_hidden_folder_of_an_export_killed_outright_is_removed_not_refused(tmp_path, capsys):
    """An export killed outright (SIGKILL, out of memory) while it wrote its hidden folder in --out left it there: the
    next export said '--out X is not empty' over a folder `ls` shows empty, and with --overwrite it stayed for good.
    It is removed once the folder is held; one holding another file is not an export's, and is kept; while another
    export holds the folder, a second is refused in one line."""
    fcntl = pytest.importorskip('fcntl')
    run, out = tmp_path / 'run', tmp_path / 'out'
    _train_run(run, 'sl_vit_32', dict(depth=1))
    leftover = out / '.timm-sl-export-k1ll3d'
    leftover.mkdir(parents=True)
    (leftover / 'model.safetensors').write_bytes(b'half')
    (leftover / 'config.json').write_text('{}')
    assert main(['export', str(run), '--out', str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ['README.md', 'config.json', 'model.safetensors']
    other = tmp_path / 'o2'
    (other / '.timm-sl-export-mine').mkdir(parents=True)
    (other / '.timm-sl-export-mine' / 'notes.txt').write_text('mine')
    assert _fails(['export', str(run), '--out', str(other)], capsys).startswith(f'timm-sl export: --out {other} is '
                                                                               f'not empty;')
    assert (other / '.timm-sl-export-mine' / 'notes.txt').read_text() == 'mine'
    handle = os.open(out, os.O_RDONLY)
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)  # another export writing there
        assert _fails(['export', str(run), '--out', str(out), '--overwrite'], capsys) == (
            f'timm-sl export: --out {out} is being written by another timm-sl export or release still running: the '
            f'files of both would be mixed; allowed: wait for it to end, or another --out')
    finally:
        os.close(handle)


UNLISTED = 'which {summary} does not list'


@pytest.mark.parametrize('name, args, epoch, metric, refused', [
    ('model_best.pth.tar', dict(lr=0.002), 2, None, "lr 0.002 (args.yaml: 0.003)"),
    ('last.pth.tar', dict(seed=5, model='sl_pit_32'), 4, None,
     "model 'sl_pit_32' (args.yaml: 'sl_vit_32'); seed 5 (args.yaml: 0)"),
    ('model_best.pth.tar', dict(model_kwargs=dict(depth=2)), 2, None,
     "model_kwargs {'depth': 2} (args.yaml: {'depth': 1})"),
    ('model_best.pth.tar', dict(lr=0.002), 1, None, ''),  # a listed epoch: a session resumed with another lr
    ('model_best.pth.tar', dict(lr=0.002), 1, 12.0, ''),  # ... that saved the metric its row lists
    ('model_best.pth.tar', dict(lr=0.002), 1, 31.5, "lr 0.002 (args.yaml: 0.003)|with top1 31.5 where {summary} "
     "lists 12 for that epoch"),  # a listed epoch of another metric: another run's
    ('model_best.pth.tar', dict(lr=0.002, eval_metric='loss'), 0, 2.5, "lr 0.002 (args.yaml: 0.003)|with loss 2.5 "
     "where {summary} lists 2.25 for that epoch"),  # train.py's --eval-metric: the row's value of it
    ('model_best.pth.tar', dict(lr=0.003), 1, 31.5, ''),  # the run's own settings: not this check's
    ('model_best.pth.tar', dict(lr=0.002), None, None, ''),  # no epoch recorded: nothing to hold against the rows
    ('recovery-2-5.pth.tar', dict(lr=0.002), 2, None, ''),  # saved during an epoch: its row was never written
    ('model_best.pth.tar', dict(lr=0.003, epochs=3), 2, None, ''),  # same run, its summary.csv behind: not this check's
])
def test_a_checkpoint_of_other_settings_at_an_unlisted_epoch_is_another_runs(name, args, epoch, metric, refused):
    """RunRecord.with_checkpoint (the one reader of a run's checkpoint for export, release, temperature, kld): another
    run's checkpoint copied into a run folder was taken for a session of this run resumed with other arguments, also
    where summary.csv lists its epoch (but with another value of the metric train.py saved it by)."""
    from timm_sl.tools.runs import ForeignCheckpoint
    ours = dict(model='sl_vit_32', model_kwargs=dict(depth=1), seed=0, lr=0.003, epochs=2)
    record = RunRecord(checkpoint=Path('r') / name, run_dir=Path('r'), args=ours, model='sl_vit_32',
                       rows=[dict(epoch=0.0, eval_top1=10.0, eval_loss=2.25), dict(epoch=1.0, eval_top1=12.0)])
    saved = dict(ours, **args)
    if not refused:
        assert record.with_checkpoint('sl_vit_32', saved, epoch, metric).checkpoint_args == saved
        return
    with pytest.raises(ForeignCheckpoint) as e:
        record.with_checkpoint('sl_vit_32', saved, epoch, metric)
    settings, where = (refused.split('|') + [UNLISTED])[:2]
    where = where.format(summary=Path('r') / 'summary.csv')
    unlisted = where == UNLISTED.format(summary=Path('r') / 'summary.csv')
    whose = ("another run's checkpoint (copied into the folder?), not this run's weights; allowed: the run's own "
             "checkpoint put back, or that run's folder" if unlisted else
             "not the weights the run's rows describe (another run's checkpoint copied into the folder, or one saved "
             "before a session resumed here from an earlier epoch with other arguments and wrote that epoch's row "
             f"again); allowed: a checkpoint of the session that wrote the rows ({Path('r') / 'last.pth.tar'}), or "
             "that other run's folder")  # the listed epoch: perhaps this folder's own, of an older session
    assert str(e.value) == (f"{Path('r') / name} was saved by a train.py with {settings}, at epoch {epoch + 1}, "
                            f"{where}: {whose}")


def test_an_interrupted_exports_hidden_folder_is_its_own_and_removed_once_held(tmp_path):
    """The hidden folder an export killed outright left in --out made the next export say '--out X is not empty' over
    a folder `ls` shows empty. Such a folder (export's name, export's files only) does not count, and is removed once
    the folder is held; a second export while one holds it is refused."""
    fcntl = pytest.importorskip('fcntl')
    from timm_sl.tools.hub import _check_out_dir, _held
    out = tmp_path / 'out'
    killed, mine = out / '.timm-sl-export-k1ll3d', out / '.timm-sl-export-mine'
    killed.mkdir(parents=True)
    (killed / 'model.safetensors').write_bytes(b'half')
    _check_out_dir(out, overwrite=False)  # empty but for the leftover
    mine.mkdir()
    (mine / 'notes.txt').write_text('mine')
    with pytest.raises(ValueError, match=f'--out {out} is not empty; allowed'):
        _check_out_dir(out, overwrite=False)
    with _held(out):
        assert sorted(p.name for p in out.iterdir()) == ['.timm-sl-export-mine']  # a user's file in it: kept
        with pytest.raises(BlockingIOError) as e, _held(out):  # another export meanwhile
            pass
    assert str(e.value) == (f'--out {out} is being written by another timm-sl export or release still running: the '
                            f'files of both would be mixed; allowed: wait for it to end, or another --out')


def test_a_run_whose_args_yaml_names_no_model_keeps_the_row_reproduce_recorded(tmp_path):
    """A reproduce run (done.json: vit, sl) of -- --model-kwargs depth=1 whose args.yaml names no model: the model and
    kwargs came from the checkpoint, and the row was computed from those kwargs alone ('custom'), so release named it
    sl_vit_32.custom-... where the same run with its model in args.yaml is sl_vit_32.sl-..."""
    from timm_sl.tools.runs import read_run
    run = tmp_path / 'vit-sl-s0'
    run.mkdir()
    (run / 'args.yaml').write_text(json.dumps(dict(seed=0, lr=0.003, epochs=2, num_classes=4)))
    (run / 'summary.csv').write_text('epoch,train_loss,eval_loss,eval_top1,eval_top5\n0,1,1,50.0,90.0\n'
                                     '1,1,1,55.5,95.0\n')
    (run / 'done.json').write_text(json.dumps(dict(epochs=2, family='vit', variant='sl', seed=0, model='sl_vit_32',
                                                   model_kwargs=dict(depth=1))))
    (run / 'model_best.pth.tar').write_bytes(b'')
    record = read_run(run).with_checkpoint('sl_vit_32', dict(model='sl_vit_32', model_kwargs=dict(depth=1)), 1)
    assert (record.model, record.model_kwargs, record.family, record.variant) == ('sl_vit_32', dict(depth=1), 'vit',
                                                                                  'sl')


@pytest.mark.extended  # an export and a release of a real model: seconds
def test_an_export_or_release_into_an_out_another_wrote_meanwhile_is_refused(tmp_path, capsys, monkeypatch):
    """Two exports into one new --out at once both said 'exported' and the folder held one run's weights and card; two
    releases into one --out each wrote a release.json of its own runs only. --out is checked again once held, and a
    release holds its --out as an export does."""
    pytest.importorskip('fcntl')
    import timm_sl.tools.hub as hub
    from timm_sl.tools.errors import held_folder
    run, out = tmp_path / 'runs' / 'r', tmp_path / 'out'
    _train_run(run, 'sl_vit_32', dict(depth=1))
    checked_model = hub._checked_model

    def another_export_ends_meanwhile(*args, **kwargs):
        out.mkdir(exist_ok=True)
        (out / 'README.md').write_text('the card of another run')
        return checked_model(*args, **kwargs)
    monkeypatch.setattr(hub, '_checked_model', another_export_ends_meanwhile)
    assert _fails(['export', str(run), '--out', str(out)], capsys) == (
        f'timm-sl export: --out {out} is not empty; allowed: a new or empty folder, or --overwrite to replace the '
        f'files an export writes there')
    assert (out / 'README.md').read_text() == 'the card of another run'
    monkeypatch.undo()
    rel = tmp_path / 'rel'
    rel.mkdir()
    with held_folder(rel, 'held by the test'):
        assert _fails(['release', str(tmp_path / 'runs'), '--org', 'o', '--out', str(rel), '--dataset', 'd'],
                      capsys) == (
            f'timm-sl release: --out {rel} is being written by another timm-sl release still running: the record '
            f'(release.json) of each would list its own runs only; allowed: wait for it to end, or another --out')
    assert list(rel.iterdir()) == []


def test_a_finished_run_extended_with_more_epochs_is_unfinished_until_it_reaches_them(tmp_path):
    """A finished run of 2 epochs that reproduce (or train.py by hand) resumes with --epochs 4 keeps its done.json of
    2 epochs while train.py writes epochs 3 and 4: exported or released meanwhile (or after it was interrupted at
    epoch 3), it read as finished, its card without a word that the 4 epochs its args.yaml plans were not trained."""
    from timm_sl.tools.release import read_release_record
    from timm_sl.tools.runs import read_run
    run = tmp_path / 'runs' / 'vit-sl-s0'
    _train_run(run, 'sl_vit_32', dict(depth=1))
    (run / 'done.json').write_text(json.dumps(dict(epochs=2, family='vit', variant='sl', seed=1, model='sl_vit_32',
                                                   model_kwargs=dict(depth=1))))
    assert read_run(run).unfinished() == ''
    (run / 'args.yaml').write_text(json.dumps(dict(json.loads((run / 'args.yaml').read_text()), epochs=4)))
    with open(run / 'summary.csv', 'a') as f:
        f.write('2,1,1,60.0,95.0\n')
    reason = ('summary.csv reaches epoch 3 of the 4 args.yaml plans (done.json records 2: train.py was started again '
              'since with more, and is still running or was interrupted)')
    assert read_run(run).unfinished() == reason
    with pytest.raises(ValueError, match=re.escape(f'{run} is not a finished run ({reason})')):
        read_release_record(run, dataset='digits')
    with open(run / 'summary.csv', 'a') as f:
        f.write('3,1,1,61.0,95.0\n')
    assert read_run(run).unfinished() == ''


def test_a_run_a_reproduce_still_trains_is_named_so_not_failed_or_interrupted(tmp_path, capsys):
    """A run exported, released or analysed while its reproduce still ran: the card and release's skip said it had
    'failed or interrupted' (no done.json yet), release said to resume it, and nothing said its weights were read
    mid-run. The reproduce's lock, held, now names it, and export / the analyses say so in one line."""
    fcntl = pytest.importorskip('fcntl')
    from timm_sl.tools.cli import _note_still_training
    from timm_sl.tools.release import read_release_record
    from timm_sl.tools.runs import mark_training, read_run
    run = tmp_path / 'runs' / 'vit-sl-s0'
    _train_run(run, 'sl_vit_32', dict(depth=1))
    (run / 'args.yaml').write_text(json.dumps(dict(json.loads((run / 'args.yaml').read_text()), epochs=4)))
    lock = tmp_path / 'runs' / '.reproduce.lock'
    lock.write_text('123\nvit-sl-s1\n')  # a reproduce that trains another run beside it: not this run's
    interrupted = 'summary.csv reaches epoch 2 of the 4 args.yaml plans (no done.json: failed or interrupted)'
    assert read_run(run).unfinished() == interrupted
    args = argparse.Namespace(command='export')
    _note_still_training(args, run)
    assert capsys.readouterr().err == ''
    with open(lock) as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # as a reproduce running into tmp_path holds it
        assert read_run(run).unfinished() == interrupted  # ... training other runs: this one failed earlier
        _note_still_training(args, run)
        assert capsys.readouterr().err == ''
        mark_training(tmp_path / 'runs', ['vit-sl-s0', 'vit-sl-s1'])  # ... and this one
        assert lock.read_text() == '123\nvit-sl-s0\nvit-sl-s1\n'
        running = (f'summary.csv reaches epoch 2 of the 4 args.yaml plans (no done.json: not finished yet, a timm-sl '
                   f'reproduce still running holds {lock})')
        assert read_run(run).unfinished() == running
        with pytest.raises(ValueError) as e:
            read_release_record(run, dataset='digits')
        assert str(e.value) == (f'{run} is not a finished run ({running}); allowed: runs that trained their planned '
                                f'epochs (release again once that reproduce has ended)')
        _note_still_training(args, run)
        _note_still_training(args, run / 'model_best.pth.tar')  # once per checkpoint
        assert capsys.readouterr().err == (
            f'timm-sl export: note: {run} may still be training (a timm-sl reproduce still running holds {lock}): '
            f'model_best.pth.tar is read as saved now; read it again once that reproduce has ended\n')
    assert read_run(run).unfinished() == interrupted  # let go: the reproduce ended


def test_a_run_whose_last_checkpoint_a_reproduce_still_saves_is_not_finished(tmp_path):
    """While a reproduce still ran, a run whose summary.csv had reached its last epoch, but whose checkpoint of that
    epoch train.py had not saved yet, read as finished: release would push the epoch before's weights. Held by a
    running reproduce, such a run is unfinished until a checkpoint holds the last row's epoch; a run of an earlier
    reproduce that ended (its checkpoint saved) is finished while another reproduce runs beside it."""
    fcntl = pytest.importorskip('fcntl')
    from timm_sl.tools.runs import read_run
    run = tmp_path / 'runs' / 'vit-sl-s0'
    _train_run(run, 'sl_vit_32', dict(depth=1))  # model_best.pth.tar of epoch 2 (1 from 0), 2 rows of 2 epochs
    with open(run / 'summary.csv', 'a') as f:
        f.write('2,1,1,60.0,95.0\n')
    (run / 'args.yaml').write_text(json.dumps(dict(json.loads((run / 'args.yaml').read_text()), epochs=3)))
    lock = tmp_path / 'runs' / '.reproduce.lock'
    lock.write_text('123\nvit-sl-s0\n')
    assert read_run(run).unfinished() == ''  # no reproduce running: the disk filled, which resume trains again
    with open(lock) as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        assert read_run(run).unfinished() == (
            f'summary.csv reaches epoch 3 of the 3 args.yaml plans (no done.json: not finished yet, a timm-sl '
            f'reproduce still running holds {lock}), but its checkpoints hold epoch 2 at most: train.py is saving the '
            f'last one')
        (run / 'last.pth.tar').write_bytes((run / 'model_best.pth.tar').read_bytes()[:100])  # being written
        assert 'checkpoints hold epoch 2 at most' in read_run(run).unfinished()
        checkpoint = torch.load(run / 'model_best.pth.tar', weights_only=False)
        torch.save(dict(checkpoint, epoch=2), run / 'last.pth.tar')  # saved: train.py ends, reproduce with it
        assert read_run(run).unfinished() == ''


def test_a_folder_whose_reproduce_has_saved_no_checkpoint_yet_says_so(tmp_path):
    """release (or export) of a reproduce's --out between its first summary row and its first checkpoint said only
    'holds no train.py run': a reproduce still running there is named."""
    fcntl = pytest.importorskip('fcntl')
    from timm_sl.tools.runs import find_runs
    run = tmp_path / 'runs' / 'vit-sl-s0'
    _train_run(run, 'sl_vit_32', dict(depth=1))
    (run / 'model_best.pth.tar').unlink()
    lock = tmp_path / 'runs' / '.reproduce.lock'
    lock.write_text('123\nvit-sl-s0\n')
    plain = f'{tmp_path} holds no train.py run (no model_best.pth.tar or last.pth.tar at or below it)'
    with pytest.raises(FileNotFoundError) as e:
        find_runs([tmp_path])
    assert str(e.value) == plain
    with open(lock) as held, pytest.raises(FileNotFoundError) as e:
        fcntl.flock(held, fcntl.LOCK_EX)
        find_runs([tmp_path])
    assert str(e.value) == (plain + f' yet: a timm-sl reproduce still running holds {lock}, and has saved no '
                                    f'checkpoint there; allowed: the command again once it has')


@pytest.mark.parametrize('mmap', [False, True])
def test_train_py_checkpoint_reads_on_torch_without_safe_globals(tmp_path, monkeypatch, mmap):
    """torch 2.2-2.4 (the floor) has no ``torch.serialization.safe_globals``: a train.py checkpoint (its ``args``
    Namespace) still reads, and a pickle that calls code is still refused, in one line naming the file."""
    monkeypatch.delattr(torch.serialization, 'safe_globals', raising=False)
    weights = {'w': torch.ones(2)}
    torch.save({'epoch': 3, 'arch': 'sl_vit_32', 'state_dict': weights, 'args': argparse.Namespace(lr=0.5)},
               tmp_path / 'ckpt.pth.tar')
    checkpoint = read_checkpoint(tmp_path / 'ckpt.pth.tar', mmap=mmap)
    assert (checkpoint.arch, checkpoint.epoch, checkpoint.args['lr']) == ('sl_vit_32', 3, 0.5)
    assert torch.equal(checkpoint.state_dict['w'], torch.ones(2))
    torch.save({'state_dict': weights, 'hook': os.getcwd}, tmp_path / 'code.pth')
    with pytest.raises(ValueError, match=r'code.pth is not a readable torch checkpoint \(weights-only load refused it'):
        read_checkpoint(tmp_path / 'code.pth', mmap=mmap)


def _with_pickle_ops(checkpoint: Path, ops: bytes, out: Path) -> Path:
    """``checkpoint`` (a zip archive torch.save wrote) with ``ops`` run first in its pickle, their result popped."""
    import zipfile
    with zipfile.ZipFile(checkpoint) as zin, zipfile.ZipFile(out, 'w', zipfile.ZIP_STORED) as zout:
        for info in zin.infolist():
            data = zin.read(info.filename)
            if info.filename.endswith('data.pkl'):  # after its PROTO opcode
                data = data[:2] + ops + b'0' + data[2:]
            zout.writestr(info.filename, data)
    return out


@pytest.mark.parametrize('ops', [
    # GLOBAL torch._utils._rebuild_tensor_v2, then BUILD with slot state {'__defaults__': ({'neg': True},)}: every
    # tensor torch rebuilds afterwards in the process would be negated
    b'ctorch._utils\n_rebuild_tensor_v2\nN}X\x0c\x00\x00\x00__defaults__}X\x03\x00\x00\x00neg\x88s\x85s\x86b',
    b'ccollections\nOrderedDict\n)\x81}X\x01\x00\x00\x00a\x88sb',  # NEWOBJ of an allowed class, then its state
    b'(ccollections\nOrderedDict\no',  # OBJ: an object made by its class
], ids=['build-on-a-function', 'newobj-and-build', 'obj'])
def test_a_checkpoint_that_sets_state_on_what_it_loads_is_refused_without_safe_globals(ops, tmp_path, monkeypatch):
    """The reader for torch without ``safe_globals`` (2.2-2.4) restricted the globals only: a checkpoint could set
    attributes on an allowed function through BUILD (torch's _rebuild_tensor_v2's defaults: every tensor loaded in the
    process afterwards came back negated, also through torch's own loader). Only a Namespace's state is set, only a
    Namespace is made by NEWOBJ; the checkpoint is refused in one line and torch is left as it was."""
    monkeypatch.delattr(torch.serialization, 'safe_globals', raising=False)
    good = tmp_path / 'good.pth.tar'
    torch.save({'state_dict': {'w': torch.ones(2)}, 'epoch': 3, 'args': argparse.Namespace(lr=0.5)}, good)
    with pytest.raises(ValueError, match=r'evil.pth.tar is not a readable torch checkpoint \(weights-only load '):
        read_checkpoint(_with_pickle_ops(good, ops, tmp_path / 'evil.pth.tar'))
    assert torch.equal(read_checkpoint(good).state_dict['w'], torch.ones(2))
    assert torch.equal(torch.load(good, weights_only=False)['state_dict']['w'], torch.ones(2))


def test_run_settings_agree_on_a_number_written_as_int_or_float():
    """The one run-settings comparison read kwargs by their JSON form: ``--model-kwargs lsa_temp_ratio=2`` and a run
    whose args.yaml records 2.0 differed, so export refused the run's own kwargs as another run's. Numbers agree by
    value, a tuple with the list YAML writes for it; a bool agrees with a bool only."""
    from timm_sl.tools.runs import settings_differ

    def differ(given, recorded):
        return settings_differ({'model_kwargs': given}, {'model_kwargs': recorded})
    assert differ({'lsa_temp_ratio': 2}, {'lsa_temp_ratio': 2.0}) == []
    assert differ({'depth': (1, 1, 1)}, {'depth': [1, 1, 1]}) == []
    assert differ({'depth': (1, 1)}, {'depth': [1, 1, 1]}) == ['model_kwargs']
    assert differ({'spt': True}, {'spt': 1}) == ['model_kwargs']
    assert differ({'spt': False}, {}) == ['model_kwargs']
    assert settings_differ({'model': 'sl_vit_32'}, {'model': 'sl_pit_32'}) == ['model']


def test_the_best_epoch_of_tied_top1_is_the_first_as_train_py_keeps_it(tmp_path):
    """train.py's checkpoint saver replaces model_best.pth.tar only on a strictly higher top-1, so of tied epochs the
    first is the one whose weights it keeps; the summary's best epoch must be that one, or the card calls
    model_best's weights another epoch's."""
    from timm_sl.tools.runs import summarize
    summary = tmp_path / 'summary.csv'
    summary.write_text('epoch,eval_loss,eval_top1,eval_top5\n0,2,40,80\n1,1.5,60,85\n2,1.2,55,88\n3,1.0,60,91\n')
    result = summarize(summary)
    assert (result['best_top1'], result['best_top5'], result['best_epoch']) == (60, 85, 2)


def test_a_checkpoint_that_sets_attributes_on_an_allowed_function_is_refused_without_safe_globals(tmp_path,
                                                                                                  monkeypatch):
    """BUILD with a plain dict of names on an allowed global (torch's ``_rebuild_tensor_v2``) would set attributes on
    it for the rest of the process (``__wrapped__`` changes what ``inspect.signature`` reads of it): only a
    Namespace's or a state dict's OrderedDict's state is set. A reader that checked the state's form alone, not what
    it is set on, passed every test."""
    import inspect
    monkeypatch.delattr(torch.serialization, 'safe_globals', raising=False)
    good = tmp_path / 'good.pth.tar'
    torch.save({'state_dict': {'w': torch.ones(2)}, 'epoch': 3}, good)
    ops = b'ctorch._utils\n_rebuild_tensor_v2\n}X\x0b\x00\x00\x00__wrapped__\x88sb'  # GLOBAL, {'__wrapped__': True}
    rebuild = torch._utils._rebuild_tensor_v2
    try:
        with pytest.raises(ValueError, match=r'evil.pth.tar is not a readable torch checkpoint \(weights-only load '):
            read_checkpoint(_with_pickle_ops(good, ops, tmp_path / 'evil.pth.tar'))
        assert '__wrapped__' not in vars(rebuild)
        assert list(inspect.signature(rebuild).parameters)[:2] == ['storage', 'storage_offset']
    finally:
        vars(rebuild).pop('__wrapped__', None)


@pytest.mark.parametrize('style', ['header per session', 'trimmed on resume'])
def test_any_history_of_sessions_train_py_writes_reads_as_the_epochs_its_weights_trained(tmp_path, style):
    """summary.csv files written by timm's own ``update_summary`` for 150 random histories: a run, then sessions
    resumed from an earlier or the last checkpoint, some stopped early. Written as a train.py of each style does: a
    header at each session's start (timm before 1.0.31), or ``trim_summary`` at a resume and one header (1.0.31). The
    reader gives, per epoch, the row of the session whose weights the run holds, and refuses none."""
    import random
    from timm.utils import trim_summary, update_summary
    from timm_sl.tools.runs import read_summary_rows
    rng = random.Random(0)
    for history in range(150):
        path = tmp_path / f'{history}.csv'
        expected: dict = {}
        start, value = 0, 0.
        for session in range(rng.randint(1, 4)):
            if style == 'trimmed on resume':
                trim_summary(str(path), start)
            expected = {epoch: top1 for epoch, top1 in expected.items() if epoch < start}
            for epoch in range(start, start + rng.randint(1, 4)):
                value += 1.
                update_summary(epoch, {'loss': 1.}, {'loss': 1., 'top1': value, 'top5': 100.}, str(path), lr=1e-3,
                               write_header=(epoch == start) if style == 'header per session' else None)
                expected[epoch] = value
            start = rng.randint(1, max(expected) + 1)  # the next session resumes from checkpoint-(start - 1)
        rows = read_summary_rows(path)
        assert [(int(r['epoch']), r['eval_top1']) for r in rows] == sorted(expected.items()), path.read_text()


def test_a_summary_csv_mutated_at_random_is_read_or_refused_in_one_line(tmp_path):
    """400 copies of a resumed run's summary.csv, each with one to three random edits (a character dropped or put in,
    two lines swapped or one doubled, the file cut): each is read as rows of whole epochs in order whose top-1 / top-5
    are percentages, or refused in one line naming the file; nothing else. (It found top-1s of 420 read as written.)"""
    import random
    from timm_sl.tools.runs import read_summary_rows
    header = 'epoch,train_loss,eval_loss,eval_top1,eval_top5,lr\n'
    text = (header + '0,2.1,2.0,20.5,60.0,0.001\n1,1.9,1.8,30.25,70.0,0.001\n2,1.7,1.6,41.0,80.0,0.0005\n' + header
            + '2,1.6,1.5,42.0,81.0,0.0005\n3,1.5,1.4,45.0,85.0,0.0001\n')
    pieces = [',', '\n', '-', 'nan', 'inf', '\x00', '"', 'epoch', ' ', '1e309', '0x1', '\r', '\ufeff', '9' * 30]
    rng = random.Random(0)
    path = tmp_path / 'summary.csv'
    for case in range(400):
        edited = text
        for _ in range(rng.randint(1, 3)):
            op, i = rng.randrange(5), rng.randrange(len(edited) + 1)
            lines = edited.splitlines(True) or ['']
            j, k = rng.randrange(len(lines)), rng.randrange(len(lines))
            if op == 0:
                edited = edited[:i] + edited[i + 1:]
            elif op == 1:
                edited = edited[:i] + rng.choice(pieces) + edited[i:]
            elif op == 2:
                lines[j], lines[k] = lines[k], lines[j]
                edited = ''.join(lines)
            elif op == 3:
                edited = edited[:i]
            else:
                edited = ''.join(lines[:j] + [lines[j]] + lines[j:])
        path.write_text(edited, encoding='utf-8')
        try:
            rows = read_summary_rows(path)
        except ValueError as e:
            assert str(e).startswith(str(path)) and '\n' not in str(e), (edited, str(e))
            continue
        epochs = [r['epoch'] for r in rows]
        assert epochs == sorted(set(epochs)) and all(e == int(e) >= 0 for e in epochs), (edited, epochs)
        assert all(math.isnan(r[k]) or 0 <= r[k] <= 100 for r in rows for k in ('eval_top1', 'eval_top5') if k in r), (
            edited, rows)


def test_a_done_json_of_a_family_dataset_or_variant_that_is_no_name_is_refused_or_passed_over(tmp_path):
    """done.json's dataset as a list (or family as a dict) ended in a TypeError traceback; a family other than the
    model's was taken for the run's, and its variant then refused as though the kwargs were wrong."""
    from timm_sl.tools.runs import read_run
    _train_run(tmp_path / 'run', 'sl_vit_32', dict(depth=1))
    marker = tmp_path / 'run' / 'done.json'
    marker.write_text(json.dumps(dict(epochs=2, family='vit', variant='sl', dataset=[1, 2])))
    assert read_run(tmp_path / 'run').dataset is None
    for family in ({'a': 1}, 'pit', 7):
        marker.write_text(json.dumps(dict(epochs=2, family=family, variant='sl')))
        with pytest.raises(ValueError) as e:
            read_run(tmp_path / 'run')
        assert str(e.value).startswith(f'{marker} records the family {family!r}, but the model of its args.yaml '
                                       f"(sl_vit_32) is of the family 'vit'"), str(e.value)


def test_an_args_yaml_model_name_with_a_line_break_is_one_line_beside_done_json(tmp_path, capsys):
    """An args.yaml model 'x\\ny' (found by mutating args.yaml through release at random) broke done.json's family
    refusal into two lines, the second naming nothing."""
    run = tmp_path / 'runs' / 'r'
    _train_run(run, 'sl_vit_32', dict(depth=1))
    (run / 'args.yaml').write_text(json.dumps(dict(model='x\ny', model_kwargs={'depth': 1}, num_classes=4, seed=1,
                                                   epochs=2)))
    (run / 'done.json').write_text(json.dumps(dict(epochs=2, family='vit', variant='sl')))
    for argv in (['export', str(run), '--out', str(tmp_path / 'o')],
                 ['release', str(run), '--org', 'o', '--out', str(tmp_path / 'rel'), '--dataset', 'd']):
        err = _fails(argv, capsys)
        assert err.startswith(f"timm-sl {argv[0]}: {run / 'done.json'} records the family 'vit', but the model of "
                              f"its args.yaml ('x\\ny') is of the family"), err


@pytest.mark.parametrize('key,value,kind', [('model_kwargs', 10 ** 30, 'a mapping of keyword arguments'),
                                            ('model_kwargs', 'cifar10', 'a mapping of keyword arguments'),
                                            ('model', 1.5, 'a model name')])
def test_a_checkpoint_whose_args_are_no_model_or_kwargs_is_refused_naming_it(key, value, kind, tmp_path, capsys):
    """A checkpoint whose saved args hold model_kwargs that are no mapping (found by mutating a run's files together
    at random through release) ended in a TypeError traceback, or a line naming no file ('dictionary update sequence
    element #0 has length 1')."""
    run = tmp_path / 'runs' / 'r'
    _train_run(run, 'sl_vit_32', dict(depth=1))
    content = torch.load(run / 'model_best.pth.tar', weights_only=False)
    setattr(content['args'], key, value)
    torch.save(content, run / 'model_best.pth.tar')
    for argv in (['export', str(run), '--out', str(tmp_path / 'o')],
                 ['release', str(run), '--org', 'o', '--out', str(tmp_path / 'rel'), '--dataset', 'd']):
        err = _fails(argv, capsys)
        assert err == (f'timm-sl {argv[0]}: {run / "model_best.pth.tar"} is not a train.py checkpoint (its args '
                       f'{key}: {value!r} is not {kind}; edited?)'), err


def test_done_and_sessions_json_mutated_at_random_are_read_or_refused_in_one_line(tmp_path):
    """300 copies of a run's done.json / sessions.json, each with a value replaced by a hostile one (None, -1, NaN,
    a list, a dict, a name with a newline ...) or the text edited: each is read as the run's (its model, family, seed
    and epochs those of args.yaml and summary.csv) or refused in one line naming the file; never another error. (It
    found the TypeErrors, the family taken from done.json over the model's and sessions' --epochs of -1.)"""
    import random
    from timm_sl.tools.runs import read_run
    run = tmp_path / 'run'
    _train_run(run, 'sl_vit_32', dict(depth=1))
    command = ['python', 'train.py', 'data', '--model', 'sl_vit_32', '--epochs', '2', '--seed', '1']
    files = {'done.json': dict(epochs=2, seconds=12.5, command=command, family='vit', variant='sl', seed=1,
                               model='sl_vit_32', model_kwargs={'depth': 1}, dataset=None),
             'sessions.json': [dict(status='exited', code=0, seconds=2.5, devices=['cpu'], epochs=[0, 1],
                                    given_epochs=1, start='new', log_from=0),
                               dict(status='exited', code=0, seconds=5., devices=['cpu'], epochs=[1, 2], given_epochs=2,
                                    start='resume')]}
    hostile = [None, -1, 0, 10 ** 30, float('nan'), float('inf'), '', [], {}, [1, 2], {'a': 1}, 'x\ny', '/no/such',
               True, 1.5, 'pit', 'sl', 'cifar10', 'new']
    rng = random.Random(0)

    def mutate(value):
        if isinstance(value, (dict, list)) and value:
            key = rng.choice(list(value) if isinstance(value, dict) else range(len(value)))
            if isinstance(value[key], (dict, list)) and value[key] and rng.random() < .5:
                mutate(value[key])
            else:
                value[key] = rng.choice(hostile)
    for case in range(300):
        name = rng.choice(list(files))
        for other, value in files.items():
            (run / other).write_text(json.dumps(value))
        value = json.loads(json.dumps(files[name]))
        mutate(value)
        text = json.dumps(value)
        if rng.random() < .3:
            i = rng.randrange(len(text) + 1)
            text = text[:i] + rng.choice(['', '"', '[', '{', ',', 'NaN', '\x00']) + text[i + 1:]
        (run / name).write_text(text)
        try:
            record = read_run(run)
        except ValueError as e:
            assert str(run / name) in str(e) and '\n' not in str(e), (text, str(e))
            continue
        assert (record.model, record.family, record.seed, record.summary['last_epoch']) == ('sl_vit_32', 'vit', 1, 2), (
            text, record)
        assert isinstance(record.variant, str) and record.dataset is None, (text, record)
        assert all(1 <= given <= end for end, given in record.schedules()), (text, record.schedules())


@pytest.mark.parametrize('given', [0, -1, 7, 10 ** 30])
def test_an_extended_runs_session_epochs_that_its_schedule_cannot_have_are_not_taken(given, tmp_path):
    """A sessions.json edited to a first session's --epochs of 0, -1 or more than the epochs it ran (it exited cleanly
    at epoch 5) was taken as written: the card said its first 5 epochs ran under a schedule of `--epochs 7` (or -1)
    and gave that command; the rule for a session without one is used instead."""
    from timm_sl.tools.runs import read_run
    run = tmp_path / 'r'
    session = dict(status='exited', code=0, seconds=1., devices='', start='new')
    _extended_run(run, [dict(session, epochs=[0, 5], given_epochs=given),
                        dict(session, epochs=[5, 8], start='resume', given_epochs=6)])
    assert read_run(run).schedules() == [(5, 3), (8, 6)]


def test_exports_line_quotes_paths_named_with_a_newline(tmp_path, capsys, monkeypatch):
    """export's closing line wrote the run folder and --out as given: one named with a newline broke it in two lines,
    neither naming the folder (found by fuzzing argv at random); it quotes them as every other line does."""
    monkeypatch.chdir(tmp_path)
    _train_run(Path('run\nz'), 'sl_vit_32', dict(depth=1))
    assert main(['export', 'run\nz', '--out', 'out\nz']) == 0
    line = capsys.readouterr().out
    assert line == ("exported 'run\\nz/model_best.pth.tar' (state_dict weights) to 'out\\nz': README.md, config.json, "
                    "model.safetensors\n")
