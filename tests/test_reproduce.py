"""``timm-sl reproduce``: planning, commands, resumability, report math and errors (a fake train.py), and one end to
end run with timm's own train.py (slow, needs ``TIMM_REPO``)."""
import io
import json
import os
import pickle
import re
import shutil
import statistics
import sys
import textwrap
from pathlib import Path
from typing import List

import pytest

from timm_sl.tools.cli import main
from timm_sl.tools.errors import shown
from timm_sl.tools.data_check import check_output_outside_data
from timm_sl.tools.reproduce import (
    VARIANTS, Outcome, Run, aggregate, check_failing_args, hold_output, plan_runs, planned_epochs, recipe_path,
    _plot_top1, run_state, train_command, write_report)
from timm_sl.tools.runs import read_summary_rows


def _exit_status(argv) -> int:
    """The exit status of ``timm-sl`` for ``argv``: what main returns, or the status of the SystemExit it ends in."""
    try:
        return main(argv)
    except SystemExit as e:
        return e.code


def _stopped(argv, monkeypatch, name: str, value: str) -> None:
    """A reproduce call whose fake train.py stops as the environment variable ``name`` tells it (exit 1), then the
    variable gone for the calls after it."""
    monkeypatch.setenv(name, value)
    assert _exit_status(argv) == 1
    monkeypatch.delenv(name)


REPO = Path(__file__).resolve().parents[1]

# A stand-in for timm's train.py: the arguments reproduce passes, a summary.csv whose best top-1 is known from the
# seed and kwargs, a last.pth.tar per epoch (a zip archive holding the epoch, as torch.save writes a zip); it crashes
# for spt_pool=False and stops after EPOCHS_BEFORE_KILL epochs (exit 3) when that variable is set, like an interrupted
# job. Its args.yaml records the data as train.py's does (the recipe's dataset unless --dataset is given); with
# FAKE_NO_SUMMARY set it exits 0 having trained nothing. The run named FAKE_HANG writes its pid to OUT/runs/hang.pid
# and sleeps; the others wait for that file, and leave a folder named FAKE_FOLDER in their run folder.
FAKE_TRAIN = textwrap.dedent('''
    import argparse, os, sys, time, zipfile
    from pathlib import Path
    import yaml
    p = argparse.ArgumentParser()
    for flag in ('--data-dir', '--config', '--model', '--lr', '--seed', '--output', '--experiment', '--resume',
                 '--epochs', '--dataset', '--num-classes', '--train-split', '--val-split'):
        p.add_argument(flag)
    for flag in ('-b', '--device', '--class-map'):
        p.add_argument(flag)
    p.add_argument('-j', '--workers')
    for flag in ('--aa', '--amp', '--batch-size', '--crop-pct', '--cutmix', '--dataset-download',
                 '--drop-path', '--hflip', '--input-size', '--interpolation', '--mean', '--min-lr', '--mixup',
                 '--mixup-prob', '--mixup-switch-prob', '--opt', '--ratio', '--remode', '--reprob', '--scale',
                 '--sched', '--smoothing', '--std', '--train-interpolation', '--warmup-epochs', '--warmup-lr',
                 '--weight-decay', '--lr-base', '--lr-base-size', '--lr-base-scale', '--img-size',
                 '--train-num-samples', '--val-num-samples'):  # the recipes' other keys, and a few more
        p.add_argument(flag)
    p.add_argument('--model-kwargs', nargs='*', default=[])
    p.add_argument('--warmup-prefix', action='store_true')  # the warm-up epochs come before --epochs, as train.py's
    a = p.parse_args()
    out = Path(a.output) / a.experiment
    out.mkdir(parents=True, exist_ok=True)
    with open(out / 'argv.log', 'a') as f:
        f.write(' '.join(sys.argv[1:]) + '\\n')
    dataset = yaml.safe_load(Path(a.config).read_text()).get('dataset', '') if a.dataset is None else a.dataset
    given = dict(class_map=a.class_map, num_classes=a.num_classes and int(a.num_classes),
                 epochs=a.epochs and int(a.epochs), train_split=a.train_split, val_split=a.val_split,
                 warmup_prefix=a.warmup_prefix, warmup_epochs=a.warmup_epochs and int(a.warmup_epochs))
    (out / 'args.yaml').write_text(yaml.safe_dump(dict(data=None, data_dir=a.data_dir, dataset=dataset,
                                                       **{k: v for k, v in given.items() if v})))
    if os.environ.get('FAKE_NO_SUMMARY'):
        sys.exit(0)
    if os.environ.get('FAKE_HANG') == a.experiment:
        (out.parent / 'hang.pid').write_text(str(os.getpid()))
        time.sleep(120)
    elif os.environ.get('FAKE_HANG'):
        while not (out.parent / 'hang.pid').exists():
            time.sleep(0.05)
    if os.environ.get('FAKE_FOLDER'):
        (out / os.environ['FAKE_FOLDER']).mkdir()
    if 'spt_pool=False' in a.model_kwargs and 'spt=False' not in a.model_kwargs:
        print('Traceback ...'); print('RuntimeError: boom in', a.experiment); sys.exit(1)
    start = int(zipfile.ZipFile(a.resume).read('epoch')) + 1 if a.resume else 0
    base = 50. + 10 * len(a.model_kwargs) * -1 + int(a.seed)
    summary = out / 'summary.csv'
    with open(summary, 'a') as f:
        f.write('epoch,train_loss,eval_loss,eval_top1,eval_top5,lr\\n')
        for epoch in range(start, int(a.epochs) + (int(a.warmup_epochs or 0) if a.warmup_prefix else 0)):
            if os.environ.get('EPOCHS_BEFORE_KILL') and epoch == int(os.environ['EPOCHS_BEFORE_KILL']):
                sys.exit(3)
            f.write(f'{epoch},1.0,1.0,{base + epoch},90.0,0.001\\n')
            f.flush()
            if os.environ.get('FAKE_LAST_SAVE_FAILS') and epoch == int(a.epochs) - 1:  # row written, then no checkpoint
                sys.exit(int(os.environ['FAKE_LAST_SAVE_FAILS']))
            with zipfile.ZipFile(out / 'last.pth.tar', 'w') as z:  # a zip archive, as torch.save writes
                z.writestr('epoch', str(epoch))
''')


@pytest.fixture
def fake_train(tmp_path):
    script = tmp_path / 'train.py'
    script.write_text(FAKE_TRAIN)
    return script


@pytest.fixture(autouse=True)
def _folders_of_a_few_images_train(request, monkeypatch):
    """The data folders here hold a few images a class, fewer than a recipe's batch, which reproduce refuses
    (:func:`~timm_sl.tools.reproduce.check_train_steps`); the tests of other checks let them through. A test that
    asks for ``batches_counted`` keeps the check."""
    if 'batches_counted' not in request.fixturenames:
        monkeypatch.setattr('timm_sl.tools.reproduce.check_train_steps', lambda *args, **kwargs: None)


@pytest.fixture
def batches_counted():
    """See :func:`_folders_of_a_few_images_train`."""


def test_plan_has_every_table2_row():
    runs = plan_runs('tiny-imagenet', ['vit', 'pit'], [0, 1], Path('out'))
    assert [r.name for r in runs] == [
        'vit-base-s0', 'vit-base-s1', 'vit-sl-s0', 'vit-sl-s1',
        'pit-base-s0', 'pit-base-s1', 'pit-sl_no_spool-s0', 'pit-sl_no_spool-s1', 'pit-sl-s0', 'pit-sl-s1']
    assert {r.model for r in runs} == {'sl_vit_64', 'sl_pit_64'}
    assert runs[0].model_kwargs == dict(spt=False, lsa=False) and runs[0].lr == 3e-3
    assert runs[6].model_kwargs == dict(spt_pool=False) and runs[6].lr == 1e-3
    assert runs[4].model_kwargs == dict(spt=False, lsa=False, spt_pool=False)
    assert runs[3].out_dir == Path('out/runs/vit-sl-s1')
    assert [r.model for r in plan_runs('svhn', ['swin'], [0], Path('o'))] == ['sl_swin_32'] * 3


def test_baseline_rows_are_the_model_classes_baselines():
    import timm
    for family, variants in VARIANTS.items():
        model_cls = type(timm.create_model(f'sl_{family}_32', **({'depth': 2} if family in ('vit', 'cait', 't2t')
                                                                   else {})))
        assert variants['base'] == model_cls.baseline_kwargs, family
        assert ('sl_no_spool' in variants) == ('spt_pool' in model_cls.baseline_kwargs), family


def test_merged_spt_options_leave_the_rows_that_do_not_use_them():
    """-- --model-kwargs shift_ratio=1.0 went to every row: the baselines (SPT off) were then refused by the model
    (an option its switch leaves unused); each row keeps what it uses, and every row builds."""
    import timm
    import torch
    from timm_sl.tools.reproduce import merge_model_kwargs
    runs = plan_runs('cifar10', ['vit', 'pit'], [0], Path('o'))
    merge_model_kwargs(runs, dict(shift_ratio=1.0, pool_layout='timm'))
    assert {r.name: r.model_kwargs for r in runs} == {
        'vit-base-s0': dict(spt=False, lsa=False, pool_layout='timm'), 'vit-sl-s0': dict(shift_ratio=1.0),
        'pit-base-s0': dict(spt=False, lsa=False, spt_pool=False, pool_layout='timm'),
        'pit-sl_no_spool-s0': dict(spt_pool=False, shift_ratio=1.0, pool_layout='timm'),
        'pit-sl-s0': dict(shift_ratio=1.0)}
    with torch.device('meta'):
        for run in runs[2:]:  # (pool_layout is PiT's: the ViT rows refuse it by name, as ever)
            timm.create_model(run.model, **run.model_kwargs)


@pytest.mark.parametrize('given', [dict(lsa_mask=True), dict(lsa_learn_temp=True)])
def test_a_merged_lsa_part_leaves_the_baseline_row(given):
    """-- --model-kwargs lsa_mask=True went to the baseline row too, where it outlived lsa=False: the row reported as
    'baseline' trained the paper's M (lsa_learn_temp=True: T). The SL rows keep it; the baseline has every switch off,
    as the demo's and throughput.py's baselines (one rule: layers.with_switches)."""
    from timm_sl.tools.paper import switches_label
    from timm_sl.tools.reproduce import merge_model_kwargs
    runs = plan_runs('cifar10', ['pit'], [0], Path('o'))
    merge_model_kwargs(runs, dict(given, depth=(1, 1, 1)))
    kwargs = {r.name: r.model_kwargs for r in runs}
    assert kwargs['pit-base-s0'] == dict(spt=False, lsa=False, spt_pool=False, depth=(1, 1, 1))
    assert switches_label(kwargs['pit-base-s0']) == 'baseline'
    assert kwargs['pit-sl-s0'] == dict(given, depth=(1, 1, 1))
    assert kwargs['pit-sl_no_spool-s0'] == dict(given, spt_pool=False, depth=(1, 1, 1))


def test_bad_plan_input_is_named():
    with pytest.raises(ValueError) as e:
        plan_runs('mnist', ['vit'], [0], Path('o'))
    assert str(e.value) == "unknown dataset 'mnist'; allowed: cifar10, cifar100, svhn, tiny-imagenet, fashion-mnist"
    with pytest.raises(ValueError) as e:
        plan_runs('cifar10', ['vit', 'deit'], [0], Path('o'))
    assert str(e.value) == "unknown family 'deit'; allowed: vit, t2t, cait, pit, swin"
    with pytest.raises(ValueError, match='no seeds given'):
        plan_runs('cifar10', ['vit'], [], Path('o'))
    for seed in (-1, 2 ** 32):  # every run failed once started: train.py seeds numpy with it
        with pytest.raises(ValueError) as e:
            plan_runs('cifar10', ['vit'], [0, seed], Path('o'))
        assert str(e.value) == (f'--seeds {seed} is not allowed; expected integers from 0 to 4294967231 (train.py '
                                f'seeds numpy with them)')


def test_recipes_are_found_and_shipped_in_the_wheel():
    try:
        import tomllib
    except ImportError:  # Python 3.10: pytest's own TOML reader there
        import tomli as tomllib
    assert recipe_path('tiny-imagenet') == REPO / 'recipes' / 'tiny_imagenet.yaml'
    assert planned_epochs(recipe_path('cifar100'), []) == 100
    assert planned_epochs(recipe_path('cifar100'), ['--epochs', '5', '--epochs=2']) == 2
    force = tomllib.loads((REPO / 'pyproject.toml').read_text())['tool']['hatch']['build']['targets']['wheel'][
        'force-include']
    assert force['recipes'] == 'timm_sl/recipes'


@pytest.mark.parametrize('given,epochs', [
    (['--warmup-prefix'], 15),  # the recipe's 10 warm-up epochs before the 5
    (['--cooldown-epochs', '2'], 7), (['--sched', 'step', '--cooldown-epochs', '2'], 5),  # no cool-down for a step
    (['--lr-cycle-limit', '2', '--cooldown-epochs=1'], 11), (['--lr-cycle-limit', '3', '--lr-cycle-mul', '2'], 35),
    (['--sched', 'multistep', '--warmup-prefix', '--warmup-epochs', '1'], 6),
    (['--sched', 'wsd', '--warmup-epochs', '1', '--decay-epochs', '2', '--cooldown-epochs', '3'], 8),
    (['--sched', 'wsd', '--warmup-epochs', '1', '--decay-epochs', '2', '--warmup-prefix'], 6),
    (['--sched', 'rsqrt', '--warmup-epochs', '1', '--decay-epochs', '2', '--warmup-prefix'], 6),
    (['--sched', 'wsd', '--cooldown-epochs', '3'], 5),  # decay_epochs 90 > 5: train.py cannot build it, nor count
])
def test_planned_epochs_are_those_train_py_trains(given, epochs):
    """-- --epochs 5 --warmup-prefix trained 15 epochs (timm's scheduler adds the warm-up, a cool-down and the cycles
    to --epochs), while reproduce counted 5: the progress read '15/5 epochs', and a run interrupted after 5 was taken
    for finished."""
    assert planned_epochs(recipe_path('cifar10'), ['--epochs', '5', *given]) == epochs


@pytest.mark.parametrize('content,says', [
    (b'- epochs\n', 'holds a YAML list, not a recipe; allowed: train.py arguments as "name: value" lines'),
    (b'epochs: [1\n', 'is not a YAML recipe (while parsing a flow sequence); allowed: train.py arguments as '
                      '"name: value" lines'),
    (b'epochs: \xe9\n', "is not a YAML recipe ('utf-8' codec can't decode byte 0xe9 in position 8: invalid "
                         'continuation byte); allowed: train.py arguments as "name: value" lines'),
    (b'epochs: ten\n', ": epochs: 'ten' is not allowed; expected an integer >= 1"),
    (b'epochs: 2.5\n', ': epochs: 2.5 is not allowed; expected an integer >= 1'),
    (b'epochs: -3\n', ': epochs: -3 is not allowed; expected an integer >= 1'),
    (b'epochs: 2\nworkers: true\n', ': workers: True is not allowed; expected an integer >= 0'),
    (b'epochs: 2\nval_split: 5\n', ': val_split: 5 is not allowed; expected text'),
])
def test_an_edited_recipe_is_one_line_naming_it(fake_train, tmp_path, capsys, monkeypatch, content, says):
    """A recipe that is a list, not YAML or not UTF-8 ended in a traceback; epochs: ten was "invalid literal for
    int()", epochs: 2.5 planned 2 epochs, epochs: -3 none, a number for a split an AttributeError."""
    from timm_sl.tools import reproduce as module
    recipe = tmp_path / 'cifar10.yaml'
    recipe.write_bytes(content)
    monkeypatch.setattr(module, 'recipe_path', lambda dataset: recipe)
    out = tmp_path / 'out'
    assert _exit_status(_reproduce_args(tmp_path, out, fake_train, train_args=['--device', 'cpu'])) == 2
    assert capsys.readouterr().err == f'timm-sl reproduce: {recipe}{" " * (not says.startswith(":"))}{says}\n'
    assert not out.exists()


def test_train_command(tmp_path):
    run = plan_runs('cifar100', ['pit'], [3], tmp_path)[1]  # SL without Spool
    recipe = recipe_path('cifar100')
    cmd = train_command(run, Path('/t/train.py'), '/data', recipe, ['--epochs', '1'], python='py')
    assert cmd == ['py', '/t/train.py', '--data-dir', '/data', '--config', str(recipe), '--model', 'sl_pit_32',
                   '--model-kwargs', 'spt_pool=False', '--lr', '0.001', '--seed', '3',
                   '--output', str(tmp_path / 'runs'), '--experiment', 'pit-sl_no_spool-s3', '--epochs', '1']
    cmd = train_command(run, Path('/t/train.py'), '/data', recipe, nproc=4, resume=run.out_dir / 'last.pth.tar',
                        python='py')
    assert cmd[:6] == ['py', '-m', 'torch.distributed.run', '--standalone', '--nproc_per_node', '4']
    assert cmd[-2:] == ['--resume', str(run.out_dir / 'last.pth.tar')]
    vit_sl = train_command(plan_runs('cifar100', ['vit'], [0], tmp_path)[1], Path('t.py'), 'd', recipe)
    assert '--model-kwargs' not in vit_sl and vit_sl[vit_sl.index('--lr') + 1] == '0.003'


def test_summary_rows_survive_resume_headers_and_repeated_epochs(tmp_path):
    summary = tmp_path / 'summary.csv'
    summary.write_text('epoch,train_loss,eval_loss,eval_top1,eval_top5,lr\n0,1,1,10,50,0.1\n1,1,1,20,60,0.1\n'
                       'epoch,train_loss,eval_loss,eval_top1,eval_top5,lr\n1,1,1,25,60,0.1\n2,1,1,30,70,0.1\n')
    assert [(r['epoch'], r['eval_top1']) for r in read_summary_rows(summary)] == [(0, 10), (1, 25), (2, 30)]


def test_run_state(tmp_path):
    run = plan_runs('cifar10', ['vit'], [0], tmp_path)[0]
    assert run_state(run, 3) == 'new'
    run.out_dir.mkdir(parents=True)
    (run.out_dir / 'summary.csv').write_text('epoch,eval_top1\n0,10\n1,20\n')
    assert run_state(run, 3) == 'new'
    (run.out_dir / 'last.pth.tar').write_text('1')
    assert run_state(run, 3) == 'resume'
    assert run_state(run, 2) == 'done'  # summary reached the last epoch (killed before the marker)
    (run.out_dir / 'done.json').write_text(json.dumps({'epochs': 3}))
    assert run_state(run, 3) == 'done' and run_state(run, 5) == 'resume'  # more epochs asked: resume


def _outcome(family, variant, seed, top1, status='done'):
    run = Run(family, variant, seed, f'sl_{family}_32', dict(VARIANTS[family][variant]), Path('x'))
    return Outcome(run, status, summary=None if top1 is None else dict(best_top1=top1))


def test_report_math():
    outcomes = [_outcome('pit', 'base', 0, 70.), _outcome('pit', 'base', 1, 72.), _outcome('pit', 'sl', 0, 75.),
                _outcome('pit', 'sl', 1, 78.), _outcome('pit', 'sl', 2, 99., status='failed'),
                _outcome('pit', 'sl_no_spool', 0, None, status='failed'), _outcome('vit', 'sl', 0, 60.)]
    rows = {(r['family'], r['variant']): r for r in aggregate(outcomes, 'cifar100')}
    base, sl, no_spool, vit = rows['pit', 'base'], rows['pit', 'sl'], rows['pit', 'sl_no_spool'], rows['vit', 'sl']
    assert base['mean'] == 71. and base['std'] == pytest.approx(statistics.stdev([70., 72.])) and base['delta'] is None
    assert sl['mean'] == 76.5 and sl['seeds'] == 2 and sl['runs'] == 3 and sl['delta'] == 5.5
    assert sl['paper'] == 79.00 and sl['paper_delta'] == pytest.approx(79.00 - 74.99)
    assert no_spool['mean'] is None and no_spool['delta'] is None and no_spool['paper'] == 77.08
    assert vit['std'] is None and vit['delta'] is None and vit['paper_delta'] == pytest.approx(76.92 - 73.81)


def test_rows_of_runs_trained_for_different_epochs_have_no_delta_and_say_so(fake_train, tmp_path, capsys):
    """A second call with a smaller --epochs keeps a finished run's epochs: best-over-2 against best-over-1 epoch is
    no SL gain."""
    out = tmp_path / 'out'
    assert main(_reproduce_args(tmp_path, out, fake_train, train_args=['--epochs', '2'])) == 0
    table = capsys.readouterr().out
    assert '| vit | SL | `sl_vit_32` | 1/1 | 51.00 | +20.00 |' in table and 'different numbers of epochs' not in table
    shutil.rmtree(out / 'runs' / 'vit-sl-s0')
    assert main(_reproduce_args(tmp_path, out, fake_train, train_args=['--epochs', '1'])) == 0
    note = ('Runs of a family trained different numbers of epochs (a finished run keeps its own: a smaller --epochs '
            'does not shorten it), so their best top-1 are over different epochs and SL − baseline is left out ("-") '
            'where they differ: vit: vit-base-s0 2 epochs, vit-sl-s0 1 epoch.')
    report = (out / 'report.md').read_text()
    for text in (capsys.readouterr().out, report):
        assert '| vit | baseline | `sl_vit_32` spt=False lsa=False | 1/1 | 31.00 | - |' in text
        assert '| vit | SL | `sl_vit_32` | 1/1 | 50.00 | - |' in text
        assert note in text
    rows = json.loads((out / 'results.json').read_text())['rows']
    assert [(r['delta'], r['delta_note'], r['run_epochs']) for r in rows] == [
        (None, '', {'vit-base-s0': 2}), (None, 'epochs differ', {'vit-sl-s0': 1})]


def test_a_top1_bar_over_seeds_of_different_epochs_says_so(fake_train, tmp_path, capsys, saved_figures):
    """Seeds 0 1 trained 3 epochs, seed 2 added with --epochs 1: the bars read 'mean ± std over 3 seeds' unqualified."""
    out = tmp_path / 'out'
    assert main(_reproduce_args(tmp_path, out, fake_train, train_args=['--epochs', '3'])) == 0
    argv = _reproduce_args(tmp_path, out, fake_train, train_args=['--epochs', '1'])
    argv[argv.index('--'):argv.index('--')] = ['--seeds', '0', '1', '2']
    assert main(argv) == 0
    capsys.readouterr()
    bars = next(ax for ax in saved_figures['top1.png'].axes if ax.get_ylabel() == 'best top-1 (%)')
    assert [t.get_text() for t in bars.get_xticklabels()] == ['vit\nbaseline\n(1-3 epochs)', 'vit\nSL\n(1-3 epochs)']


def test_report_sets_the_paper_only_beside_the_papers_configuration():
    """``-- --model-kwargs depth=1`` merges into every row: those runs are not Table 2's, no paper number beside
    them."""
    outcomes = [_outcome('vit', 'base', 0, 50.), _outcome('vit', 'sl', 0, 55.)]
    for outcome in outcomes:
        outcome.run.model_kwargs['depth'] = 1
    rows = aggregate(outcomes, 'cifar100')
    assert [(r['paper'], r['paper_delta'], r['delta']) for r in rows] == [(None, None, None), (None, None, 5.)]
    assert [r['paper'] for r in aggregate([_outcome('vit', 'sl', 0, 55.)], 'cifar100')] == [76.92]


@pytest.mark.parametrize('recorded', [dict(in_chans=1), dict(gp='avg'), dict(pretrained=True),
                                      dict(initial_checkpoint='in1k.pth')])
def test_runs_that_recorded_another_model_or_a_start_from_weights_get_no_paper_number(recorded):
    """``-- --in-chans 1`` / ``--gp`` build another model, ``--pretrained`` / ``--initial-checkpoint`` start from
    trained weights (the paper trained from scratch): such runs had the paper's number beside them (their kwargs
    were the row's)."""
    args = dict(model='sl_vit_32', model_kwargs={}, in_chans=3, gp=None)
    same, other = _outcome('vit', 'sl', 0, 55.), _outcome('vit', 'sl', 1, 57.)
    same.args, other.args = args, dict(args, **recorded)
    assert [r['paper'] for r in aggregate([same], 'cifar100')] == [76.92]  # as train.py records a plain run
    assert [r['paper'] for r in aggregate([same, other], 'cifar100')] == [None]


def test_runs_skip_resume_and_report_failures(fake_train, tmp_path, capsys):
    data = tmp_path / 'data'
    data.mkdir()
    out = tmp_path / 'out'
    args = ['reproduce', '--data-dir', str(data), '--dataset', 'cifar10', '--families', 'vit', 'pit', '--seeds', '0',
            '1', '--out', str(out), '--train-script', str(fake_train), '--', '--epochs', '3']
    os.environ['EPOCHS_BEFORE_KILL'] = '1'
    try:
        assert _exit_status(args) == 1
    finally:
        del os.environ['EPOCHS_BEFORE_KILL']
    printed = capsys.readouterr()
    assert 'run 1/10: vit-base-s0 started, ETA unknown until an epoch finishes' in printed.out
    # every run "interrupted" after one epoch (exit 3), pit without Spool crashed (exit 1): all failed
    assert 'timm-sl reproduce: 10 run(s) failed' in printed.err
    assert _exit_status(args) == 1
    printed = capsys.readouterr()
    assert ('run 1/10: vit-base-s0 started (resuming: 1/3 epochs done), ETA unknown until an epoch finishes'
            in printed.out)
    assert 'run 2/10: vit-base-s1 started (resuming: 1/3 epochs done), ETA 0:00:0' in printed.out
    argv = (out / 'runs' / 'vit-base-s0' / 'argv.log').read_text().splitlines()
    assert len(argv) == 2 and '--resume' not in argv[0] and argv[1].endswith(
        f'--resume {out / "runs" / "vit-base-s0" / "last.pth.tar"} --epochs 3')
    assert 'timm-sl reproduce: 2 run(s) failed: pit-sl_no_spool-s0, pit-sl_no_spool-s1 (see the report)' in printed.err
    rows = read_summary_rows(out / 'runs' / 'vit-base-s0' / 'summary.csv')
    assert [r['epoch'] for r in rows] == [0, 1, 2]  # one epoch before the interruption, two after the resume

    report = (out / 'report.md').read_text()
    assert 'shared the GPU' not in report and '(runs at once share a GPU, or the CPU)' in report  # no GPU here
    # fake top-1: 50 - 10 * (number of kwargs) + seed + best epoch (2)
    assert '| vit | baseline | `sl_vit_32` spt=False lsa=False | 2/2 | 32.50 ± 0.71 | - | 93.58 | - |' in report
    assert '| vit | SL | `sl_vit_32` | 2/2 | 52.50 ± 0.71 | +20.00 | 94.53 | +0.95 |' in report
    assert '| pit | SL w/o Spool | `sl_pit_32` spt_pool=False | 0/2 | - | - | 94.96 | +0.72 |' in report
    assert '- pit-sl_no_spool-s0: train.py exited with 1: RuntimeError: boom in pit-sl_no_spool-s0 (log: ' in report
    assert (out / 'top1.png').stat().st_size > 10000 and (out / 'curves.png').stat().st_size > 10000
    results = json.loads((out / 'results.json').read_text())
    assert results['dataset'] == 'cifar10' and len(results['runs']) == 10
    assert json.loads((out / 'runs' / 'vit-base-s0' / 'done.json').read_text())['dataset'] == 'cifar10'

    # a third call runs nothing that finished: only the crashing rows go again
    assert _exit_status(args) == 1
    printed = capsys.readouterr().out
    assert 'run 1/10: vit-base-s0 finished earlier, skipped' in printed
    assert printed.count('finished earlier, skipped') == 8
    assert len((out / 'runs' / 'vit-base-s0' / 'argv.log').read_text().splitlines()) == 2


def test_interrupt_keeps_finished_runs_in_the_report(fake_train, tmp_path, monkeypatch, capsys):
    import subprocess
    real_popen = subprocess.Popen
    calls = []

    def popen_then_interrupt(cmd, **kwargs):  # Ctrl-C as the second run starts
        calls.append(cmd)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real_popen(cmd, **kwargs)
    monkeypatch.setattr(subprocess, 'Popen', popen_then_interrupt)
    out = tmp_path / 'out'
    assert main(['reproduce', '--data-dir', str(tmp_path), '--dataset', 'cifar10', '--families', 'vit',
                 '--train-script', str(fake_train), '--out', str(out), '--', '--epochs', '2']) == 130
    assert 'stopping 0 running train.py process(es); run the same command again to resume' in capsys.readouterr().out
    report = (out / 'report.md').read_text()
    assert '| vit-base-s0 | done | 31.00 |' in report and '| vit-sl-s0 | not run | - |' in report



def test_ctrl_c_while_the_report_is_written_finishes_the_report_first(fake_train, tmp_path, monkeypatch, capsys):
    """Ctrl-C while the charts were drawn ended in a Python traceback, leaving a report.md that named charts never
    written (and, from an earlier call, a results.json of other results)."""
    import signal
    import timm_sl.tools.reproduce as reproduce
    real_plot = reproduce._plot_top1

    def ctrl_c_then_plot(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGINT)
        return real_plot(*args, **kwargs)
    monkeypatch.setattr(reproduce, '_plot_top1', ctrl_c_then_plot)
    out = tmp_path / 'out'
    args = ['reproduce', '--data-dir', str(tmp_path), '--dataset', 'cifar10', '--families', 'vit',
            '--train-script', str(fake_train), '--out', str(out), '--', '--epochs', '2']
    # a suite started in the background ignores SIGINT, and so would the command: it gets Ctrl-C as at a terminal
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        status = main(args)
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # given back as it was
    finally:
        signal.signal(signal.SIGINT, before)
    assert status == 130
    assert 'interrupted (SIGINT) while the report was written, which was written in full first' in \
        capsys.readouterr().out
    assert (out / 'top1.png').is_file() and (out / 'curves.png').is_file()
    assert len(json.loads((out / 'results.json').read_text())['runs']) == 2
    assert sorted(json.loads((out / 'report_manifest.json').read_text())['sha256']) == [
        'curves.png', 'report.md', 'results.json', 'top1.png']


def _refused(argv, capsys) -> str:
    """The one error line of a reproduce refused before any run (nothing written to its --out)."""
    assert _exit_status(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith('timm-sl reproduce: ') and err.count('\n') == 1, err
    assert not Path(argv[argv.index('--out') + 1]).exists()
    return err[len('timm-sl reproduce: '):-1]


def test_a_recipe_key_train_py_does_not_know_is_refused(fake_train, tmp_path, capsys, monkeypatch):
    """epoch: 5 in an edited recipe was set as a default of train.py's parser and ignored: 300 epochs, silently."""
    from timm_sl.tools import reproduce as module
    recipe = tmp_path / 'cifar10.yaml'
    recipe.write_text('epoch: 5\nnum_classes: 10\n')
    monkeypatch.setattr(module, 'recipe_path', lambda dataset: recipe)
    assert _refused(_reproduce_args(tmp_path, tmp_path / 'out', fake_train, train_args=['--device', 'cpu']),
                    capsys) == (f'{recipe}: epoch is not an argument of {fake_train}, which would ignore it (and use '
                                f'its own default); allowed: its argument names, e.g. epochs')


def test_a_script_other_than_train_py_is_named_not_the_recipe(fake_train, tmp_path, capsys):
    """--train-script validate.py (timm's script beside train.py) was refused as 'recipes/svhn.yaml: train_split is
    not an argument of validate.py', blaming the recipe."""
    script = tmp_path / 'validate.py'
    script.write_text('import argparse\np = argparse.ArgumentParser()\nfor f in ("--model", "--seed", "--split", '
                      '"--data-dir", "--epochs"):\n    p.add_argument(f)\n')
    assert _refused(_reproduce_args(tmp_path, tmp_path / 'out', script, train_args=['--device', 'cpu']), capsys) == (
        f"{script} is not timm's train.py (it has no --config, --model-kwargs, --lr, ... option, which each run is "
        f"given); allowed: timm's train.py (from a checkout of https://github.com/huggingface/pytorch-image-models)")


def test_train_script_options_are_read_from_its_source(tmp_path):
    """The options of a train.py as argparse names them, without running it (the fake trains when run)."""
    from timm_sl.tools.train_args import train_script_options
    script = tmp_path / 'train.py'
    script.write_text('import argparse\nraise SystemExit("not run")\np = argparse.ArgumentParser()\n'
                      'p.add_argument("data", nargs="?")\np.add_argument("-j", "--workers", type=int)\n'
                      'p.add_argument("--local_rank")\np.add_argument("--ts", dest="torchscript")\n'
                      'for f in ("--model-ema", "-b"):\n    p.add_argument(f)\n')
    assert train_script_options(script) == {'data': 'data', '-j': 'workers', '--workers': 'workers',
                                            '--local_rank': 'local_rank', '--ts': 'torchscript',
                                            '--model-ema': 'model_ema', '-b': 'b'}
    script.write_text(script.read_text() + 'p.add_argument("--" + "x")\n')
    assert train_script_options(script) is None  # not all known: nothing is checked against it
    script.write_text('print(1)\n')
    assert train_script_options(script) is None
    if TIMM_REPO and (Path(TIMM_REPO) / 'train.py').is_file():  # every recipe key is an argument of timm's train.py
        from timm_sl.tools.train_args import check_recipe_keys
        for recipe in sorted((REPO / 'recipes').glob('*.yaml')):
            check_recipe_keys(recipe, Path(TIMM_REPO) / 'train.py')


@pytest.mark.parametrize('train_args,message', [
    (['--exper', 'x'], '--experiment after -- is set for each run by reproduce'),
    (['--outp=x'], '--output after -- is set for each run by reproduce'),
    (['--see', '3'], '--seed after -- is set for each run by reproduce'),
    (['--resu', 'x.pth.tar'], '--resume after -- is set for each run by reproduce'),
    (['--mix', '0.1'], '--mix after -- is ambiguous for {script}: it begins --mixup, --mixup-prob, '
                       '--mixup-switch-prob; allowed: the whole name'),
    (['--epochz', '1'], '--epochz after -- is not an argument of {script}; allowed: its arguments, e.g. --epochs'),
])
def test_abbreviated_train_arguments_are_read_as_train_py_reads_them(fake_train, tmp_path, capsys, train_args,
                                                                      message):
    """train.py's argparse takes --exper for --experiment: every run wrote into one folder; an unknown or ambiguous
    one failed every run once started."""
    out = tmp_path / 'out'
    assert _exit_status(_reproduce_args(tmp_path, out, fake_train, train_args=['--epochs', '1', *train_args])) == 2
    err = capsys.readouterr().err
    assert err.startswith('timm-sl reproduce: ' + message.format(script=fake_train)) and err.count('\n') == 1, err
    assert not out.exists()


def test_abbreviated_epochs_and_model_kwargs_are_the_runs(fake_train, tmp_path, capsys):
    """-- --epoch 1 trained 1 epoch of a planned 300 (each run 'stopped from outside?'); -- --model-kw depth=2 came
    after the row's --model-kwargs, so train.py kept it alone: the baseline trained as SL."""
    out = tmp_path / 'out'
    assert main(_reproduce_args(tmp_path, out, fake_train, train_args=['--epoch', '1', '--model-kw', 'depth=2'])) == 0
    base = (out / 'runs' / 'vit-base-s0' / 'argv.log').read_text()
    assert base.count('--model-kwargs') == 1 and '--model-kwargs spt=False lsa=False depth=2 ' in base, base
    results = json.loads((out / 'results.json').read_text())
    assert [r['summary']['epochs'] for r in results['runs']] == [1, 1]



def test_no_gpu_with_a_train_py_that_trains_on_cuda_by_default_is_refused(fake_train, tmp_path, capsys,
                                                                          monkeypatch):
    """Without a GPU and without -- --device cpu, every run started and failed ('CUDA is not available but cuda was
    specified', timm's train.py's default device)."""
    from timm_sl.tools import reproduce as module
    monkeypatch.setattr(module, '_no_gpu_here', lambda env: True)
    source = fake_train.read_text()
    fake_train.write_text(source.replace("('-b', '--device', '--class-map')", "('-b', '--class-map')").replace(
        "p.add_argument('-j', '--workers')", "p.add_argument('-j', '--workers')\np.add_argument('--device', "
                                             "default='cuda')"))
    out = tmp_path / 'out'
    assert _refused(_reproduce_args(tmp_path, out, fake_train, train_args=['--epochs', '1']), capsys) == (
        f'no GPU found (torch sees none), and {fake_train} trains on --device cuda unless told: every run would fail '
        f'once started; allowed: -- --device cpu, or --gpus to name GPUs')
    assert main(_reproduce_args(tmp_path, out, fake_train, train_args=['--epochs', '1', '--device', 'cpu'])) == 0


@pytest.mark.parametrize('change,message', [
    (dict(dataset=['mnist']), "timm-sl reproduce: unknown dataset 'mnist'; allowed: cifar10, cifar100, svhn, "
                              "tiny-imagenet, fashion-mnist\n"),
    (dict(families=['vit', 'deit']), "timm-sl reproduce: unknown family 'deit'; allowed: vit, t2t, cait, pit, swin\n"),
    (dict(train_script=['/nowhere/train.py']), "timm-sl reproduce: --train-script /nowhere/train.py does not exist; "
                                               "expected timm's train.py (from a checkout of "
                                               "https://github.com/huggingface/pytorch-image-models)\n"),
    # there, but no file: it was 'not found'
    (dict(train_script=['/dev/null']), "timm-sl reproduce: --train-script /dev/null is a device, not a regular file; "
                                       "expected timm's train.py (from a checkout of "
                                       "https://github.com/huggingface/pytorch-image-models)\n"),
    (dict(data_dir=['/nowhere/data']), "timm-sl reproduce: --data-dir /nowhere/data does not exist; expected the "
                                       "dataset root (train.py's --data-dir)\n"),
    (dict(nproc=['0']), 'timm-sl reproduce: --nproc 0 is not allowed; expected an integer >= 1\n'),
])
def test_bad_input_is_one_line(fake_train, tmp_path, capsys, change, message):
    options = dict(data_dir=[str(tmp_path)], dataset=['cifar10'], families=['vit'], train_script=[str(fake_train)],
                   out=[str(tmp_path / 'out')])
    options.update(change)
    args = ['reproduce'] + [a for k, v in options.items() for a in ['--' + k.replace('_', '-'), *v]]
    assert _exit_status(args) == 2
    assert capsys.readouterr().err == message


@pytest.mark.parametrize('content,says', [('T-shirt/top\nAnkle boot\n', 'a syntax error at line 2: '),
                                          (b'\x00\x01', 'source code string cannot contain null bytes')])
def test_a_train_script_that_is_not_python_is_refused_before_any_run(tmp_path, capsys, content, says):
    """fm/label_names.txt given as --train-script started every run, each failing with a SyntaxError."""
    script = tmp_path / 'label_names.txt'
    script.write_bytes(content.encode() if isinstance(content, str) else content)
    out = tmp_path / 'out'
    assert _exit_status(['reproduce', '--data-dir', str(tmp_path), '--dataset', 'cifar10', '--families', 'vit',
                         '--out', str(out), '--train-script', str(script)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"timm-sl reproduce: {script} is not timm's train.py ({says}") and err.count('\n') == 1, err
    assert not out.exists()


def test_the_reports_command_keeps_nproc(fake_train, tmp_path, monkeypatch):
    """report.md's command without --nproc 2 was refused when run again (a run resumes only with its settings)."""
    from timm_sl.tools import reproduce as module
    monkeypatch.setattr(module, 'reproduce', lambda *a, **k: [])
    out = tmp_path / 'out'
    base = ['reproduce', '--data-dir', str(tmp_path), '--dataset', 'cifar10', '--families', 'vit', '--seeds', '0',
            '--out', str(out), '--train-script', str(fake_train), '--jobs', '1']
    assert _exit_status(base + ['--nproc', '2', '--', '--epochs', '1']) == 0
    assert (f'timm-sl reproduce --data-dir {tmp_path} --dataset cifar10 --families vit --seeds 0 --out {out} '
            f'--nproc 2 -- --epochs 1\n') in (out / 'report.md').read_text()
    assert _exit_status(base + ['--overwrite']) == 0
    assert f'--seeds 0 --out {out}\n' in (out / 'report.md').read_text()  # --nproc 1 is the default


def test_missing_train_script_without_timm_repo(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv('TIMM_REPO', raising=False)
    assert _exit_status(['reproduce', '--data-dir', str(tmp_path), '--dataset', 'cifar10']) == 2
    assert capsys.readouterr().err.startswith("timm-sl reproduce: timm's train.py not given: pass --train-script PATH "
                                              "or set TIMM_REPO")


TIMM_REPO = os.environ.get('TIMM_REPO')


@pytest.mark.slow
@pytest.mark.skipif(not TIMM_REPO or not (Path(TIMM_REPO) / 'train.py').exists(),
                    reason="set TIMM_REPO to a folder with timm's train.py")
def test_reproduce_end_to_end_with_timm_train_py(tmp_path):
    """Two families, one epoch, on a tiny generated ImageFolder: every row trains and lands in the report; a second
    call skips them all."""
    import subprocess
    from test_timm_scripts import _image_folder
    data = _image_folder(tmp_path / 'data', classes=3, per_class=8)
    out = tmp_path / 'out'
    cmd = [sys.executable, '-m', 'timm_sl.tools.cli', 'reproduce', '--data-dir', str(data), '--dataset', 'cifar10',
           '--families', 'vit', 'swin', '--out', str(out), '--', '--dataset', '', '--train-split', 'train',
           '--val-split', 'val', '--num-classes', '3', '--epochs', '1', '--warmup-epochs', '0', '--batch-size', '8',
           '--workers', '1', '--aug-repeats', '0', '--device', 'cpu', '--no-prefetcher']
    env = {k: v for k, v in os.environ.items() if k != 'TIMM_SL_NO_AUTOLOAD'}
    env.update(CUDA_VISIBLE_DEVICES='', OMP_NUM_THREADS='1')
    result = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert 'run 5/5: swin-sl-s0 started, ETA ' in result.stdout
    report = (out / 'report.md').read_text()
    rows = ('| vit | baseline |', '| vit | SL |', '| swin | baseline |', '| swin | SL w/o Spool |', '| swin | SL |')
    for row in rows:
        line = next(line for line in report.splitlines() if line.startswith(row))
        assert '| 1/1 |' in line, line
    results = json.loads((out / 'results.json').read_text())
    assert all(r['status'] == 'done' and r['summary']['epochs'] == 1 for r in results['runs'])
    again = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert again.returncode == 0 and again.stdout.count('finished earlier, skipped') == 5


def _reproduce_args(data, out, script, dataset='cifar10', families=('vit',), train_args=('--epochs', '2')):
    return ['reproduce', '--data-dir', str(data), '--dataset', dataset, '--families', *families, '--out', str(out),
            '--train-script', str(script), '--', *train_args]


def test_a_run_failed_under_torchrun_says_why(fake_train, tmp_path, capsys):
    """With --nproc 2 the reason was the last line of torchrun's report: '====...'."""
    out = tmp_path / 'out'
    argv = _reproduce_args(tmp_path, out, fake_train, families=('pit',))
    argv[argv.index('--'):argv.index('--')] = ['--nproc', '2', '--seeds', '0']
    assert _exit_status(argv) == 1
    results = json.loads((out / 'results.json').read_text())
    failed = {r['name']: r['message'] for r in results['runs'] if r['status'] == 'failed'}
    assert list(failed) == ['pit-sl_no_spool-s0']
    assert failed['pit-sl_no_spool-s0'].startswith('train.py exited with 1: RuntimeError: boom in pit-sl_no_spool-s0 ')


@pytest.mark.parametrize('sessions', ['[{"seconds": "abc", "start": "new"}]', '[{"seconds": NaN}]',
                                      '[{"seconds": 1e400}, 3, null]'])
def test_a_damaged_sessions_file_does_not_stop_the_report(fake_train, tmp_path, capsys, sessions):
    """'seconds' not a number in runs/<name>/sessions.json ended the command in "could not convert string to float:
    'abc'" / "cannot convert float NaN to integer", no file named and no report written."""
    out = tmp_path / 'out'
    assert main(_reproduce_args(tmp_path, out, fake_train)) == 0
    (out / 'runs' / 'vit-sl-s0' / 'sessions.json').write_text(sessions)
    (out / 'report.md').unlink()
    assert main(_reproduce_args(tmp_path, out, fake_train)) == 0
    assert '| vit-sl-s0 | done | 51.00 | 2 | 2 | - |' in (out / 'report.md').read_text()


@pytest.mark.parametrize('devices', ['"\\udcff"', '"0|1\\n2"', '[1, 2]', '{"a": 1}'])
def test_a_damaged_device_record_is_no_device(fake_train, tmp_path, capsys, devices):
    """'devices' of runs/<name>/sessions.json (the CUDA_VISIBLE_DEVICES a session ran with) damaged: a lone
    surrogate ended the command in a line quoting all of report.md as 'a name this locale cannot hold' (no report
    written); a newline or '|' broke the runs table's row, a list showed as the run's GPU."""
    out = tmp_path / 'out'
    assert main(_reproduce_args(tmp_path, out, fake_train)) == 0
    sessions = json.loads((out / 'runs' / 'vit-sl-s0' / 'sessions.json').read_text())
    (out / 'runs' / 'vit-sl-s0' / 'sessions.json').write_text(
        json.dumps(sessions)[:-2] + f', "devices": {devices}}}]')
    assert main(_reproduce_args(tmp_path, out, fake_train)) == 0
    assert '| vit-sl-s0 | done | 51.00 | 2 | 2 | 0:00:00 | - | - |\n' in (out / 'report.md').read_text()


def test_a_clean_exit_that_trained_nothing_is_a_failed_run(fake_train, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv('FAKE_NO_SUMMARY', '1')
    out = tmp_path / 'out'
    assert _exit_status(_reproduce_args(tmp_path, out, fake_train)) == 1
    printed = capsys.readouterr()
    assert 'timm-sl reproduce: 2 run(s) failed: vit-base-s0, vit-sl-s0 (see the report)' in printed.err
    log = out / 'runs' / 'vit-base-s0' / 'train.log'
    assert any(line.startswith('run 1/2: vit-base-s0 failed after 0:00:0') and line.endswith(
        f': train.py exited with 0 but wrote no summary.csv (no epoch finished) (log: {log})')
        for line in printed.out.splitlines())
    report = (out / 'report.md').read_text()
    assert f'- vit-base-s0: train.py exited with 0 but wrote no summary.csv (no epoch finished) (log: {log})' in report
    assert not (out / 'runs' / 'vit-base-s0' / 'done.json').exists()
    monkeypatch.delenv('FAKE_NO_SUMMARY')
    assert main(_reproduce_args(tmp_path, out, fake_train)) == 0  # nothing was marked done: both run again
    assert capsys.readouterr().out.count('finished earlier') == 0


@pytest.mark.skipif(sys.platform == 'win32', reason='no fcntl (--out is not held), no SIGINT')
def test_a_second_reproduce_into_the_same_out_is_refused(fake_train, tmp_path, capsys):
    """Two calls into one --out trained the same runs at once: the second deleted the first's summary.csv, the first
    reported its run failed, and both train.py processes wrote one run folder; so did two --out whose runs/ are one
    folder through a link."""
    import signal
    import subprocess
    import time
    out = tmp_path / 'out'
    # a suite started in the background ignores SIGINT, and so would the command: it gets Ctrl-C as at a terminal
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        first = subprocess.Popen([sys.executable, '-m', 'timm_sl.tools.cli',
                                  *_reproduce_args(tmp_path, out, fake_train)],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                 env={**os.environ, 'PYTHONPATH': str(REPO), 'FAKE_HANG': 'vit-base-s0'})
    finally:
        signal.signal(signal.SIGINT, before)
    try:
        deadline = time.monotonic() + 60
        while not (out / 'runs' / 'hang.pid').exists():  # its first run is training
            assert first.poll() is None and time.monotonic() < deadline
            time.sleep(0.1)
        assert _exit_status(_reproduce_args(tmp_path, out, fake_train)) == 2
        assert capsys.readouterr().err == (
            f'timm-sl reproduce: {out} is in use by another timm-sl reproduce (pid {first.pid}), which holds '
            f'{out / "runs" / ".reproduce.lock"}: two would train the same runs at once; allowed: wait for it to end, '
            f'or another --out\n')
        assert not (out / 'runs' / 'vit-sl-s0').exists()
        linked = tmp_path / 'linked'  # another --out whose runs are these: one lock, not one per --out
        linked.mkdir()
        (linked / 'runs').symlink_to(out / 'runs')
        assert _exit_status(_reproduce_args(tmp_path, linked, fake_train)) == 2
        assert capsys.readouterr().err == (
            f'timm-sl reproduce: {linked} is in use by another timm-sl reproduce (pid {first.pid}), which holds '
            f'{out / "runs" / ".reproduce.lock"}: two would train the same runs at once; allowed: wait for it to end, '
            f'or another --out\n')
    finally:
        first.send_signal(signal.SIGINT)  # Ctrl-C: it stops its run and writes its report
        first.wait(60)
    (out / 'runs' / 'hang.pid').unlink()
    assert main(_reproduce_args(tmp_path, out, fake_train)) == 0  # its end released --out
    assert main(_reproduce_args(tmp_path, out, fake_train)) == 0  # and this call's end too


@pytest.mark.parametrize('content', [b'99999999999999999999', b'\xff\xfe', '\u00b2'.encode(), b'12\x00'],
                         ids=['huge', 'not-utf8', 'superscript-digit', 'nul'])
def test_a_held_lock_file_of_damaged_contents_is_one_line_naming_it(tmp_path, capsys, content):
    """The lock file of a held --out is read for the process id of its holder: a number beyond any process id ended
    in an OverflowError traceback, bytes not UTF-8 or a digit int() does not take ('\u00b2') in Python's own words
    naming no file."""
    import subprocess
    pytest.importorskip('fcntl')
    out = tmp_path / 'out'
    (out / 'runs').mkdir(parents=True)
    lock = out / 'runs' / '.reproduce.lock'
    lock.write_bytes(content)
    holder = subprocess.Popen([sys.executable, '-c', 'import fcntl, sys, time; f = open(sys.argv[1], "rb"); '
                               'fcntl.flock(f, fcntl.LOCK_EX); print(flush=True); time.sleep(60)', str(lock)],
                              stdout=subprocess.PIPE)
    try:
        holder.stdout.readline()
        with pytest.raises(BlockingIOError) as e:
            with hold_output(out):
                pass
    finally:
        holder.kill()
        holder.wait()
    assert str(e.value) == (f'{out} is in use by another timm-sl reproduce, which holds {lock}: two would train the '
                            f'same runs at once; allowed: wait for it to end, or another --out')
    assert lock.read_bytes() == content


def test_the_out_stays_held_while_train_py_of_a_killed_reproduce_runs(fake_train, tmp_path, capsys):
    """timm-sl killed (SIGKILL, an OOM kill): its train.py went on in its own session, and a second reproduce took
    --out and started the same run beside it."""
    import signal
    import subprocess
    import time
    out = tmp_path / 'out'
    first = subprocess.Popen([sys.executable, '-m', 'timm_sl.tools.cli', *_reproduce_args(tmp_path, out, fake_train)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             env={**os.environ, 'PYTHONPATH': str(REPO), 'FAKE_HANG': 'vit-base-s0'})
    hang = out / 'runs' / 'hang.pid'
    deadline = time.monotonic() + 60
    while not hang.exists() or not hang.read_text():  # its first run is training
        assert first.poll() is None and time.monotonic() < deadline
        time.sleep(0.1)
    first.kill()
    first.wait(60)
    train_py = int(hang.read_text())
    try:
        assert _exit_status(_reproduce_args(tmp_path, out, fake_train)) == 2
        assert capsys.readouterr().err == (
            f'timm-sl reproduce: {out} is in use by the train.py processes of a timm-sl reproduce that ended (pid '
            f'{first.pid}), which hold {out / "runs" / ".reproduce.lock"} while they run: two would train the same '
            f'runs at once; allowed: wait for it to end, or another --out\n')
    finally:
        os.kill(train_py, signal.SIGKILL)
    deadline = time.monotonic() + 60
    while (status := _exit_status(_reproduce_args(tmp_path, out, fake_train))) == 2:  # until the orphan is gone
        assert time.monotonic() < deadline
        time.sleep(0.2)
    assert status == 0


@pytest.mark.parametrize('kind', ['link', 'folder'])
def test_a_link_or_folder_where_the_lock_file_goes_is_refused(fake_train, tmp_path, capsys, kind):
    """OUT/runs/.reproduce.lock linked to a file of the user's: that file was cut to reproduce's process id."""
    out = tmp_path / 'out'
    (out / 'runs').mkdir(parents=True)
    notes = tmp_path / 'notes.txt'
    notes.write_text('mine')
    if kind == 'link':
        (out / 'runs' / '.reproduce.lock').symlink_to(notes)
    else:
        (out / 'runs' / '.reproduce.lock').mkdir()
    assert _exit_status(_reproduce_args(tmp_path, out, fake_train)) == 2
    assert _one_error(capsys) == (
        f'{out}/runs/.reproduce.lock is a link to {notes} where timm-sl reproduce writes a file, which would replace '
        f'the file it links to; allowed: remove the link, or another --out' if kind == 'link' else
        f"{out}/runs/.reproduce.lock is a folder; expected reproduce's lock file; allowed: another --out")
    assert notes.read_text() == 'mine' and [p.name for p in (out / 'runs').iterdir()] == ['.reproduce.lock']


@pytest.mark.skipif(not Path('/proc/self').is_dir(), reason='no /proc')
def test_an_out_where_no_folder_can_be_made_is_named(fake_train, tmp_path, capsys):
    """--out /proc/x ended in '/proc/x: no such file or directory': neither --out nor why was said."""
    assert _exit_status(_reproduce_args(tmp_path, '/proc/timm-sl-out', fake_train)) == 2
    assert _one_error(capsys) == ('--out /proc/timm-sl-out: cannot write into folder /proc (no such file or '
                                  'directory), where the reproduce output folder goes; allowed: a place this user may '
                                  'write (not /proc, /sys), or another --out')
    assert not Path('/proc/timm-sl-out').exists()


@pytest.mark.parametrize('where,what', [
    ('report.md', 'report'), ('top1.png', 'top-1 chart'),
    ('runs/vit-sl-s0/command.txt', 'train.py command line of vit-sl-s0'),
    ('runs/vit-base-s0/sessions.json', 'record of train.py sessions of vit-base-s0')])
def test_a_link_where_reproduce_writes_a_file_is_refused(fake_train, tmp_path, capsys, where, what):
    """A report file (with --overwrite) or a run's bookkeeping file that is a link to a user's file: written through
    the link, the user's file was replaced."""
    out = tmp_path / 'out'
    notes = tmp_path / 'notes.txt'
    notes.write_text('mine')
    (out / where).parent.mkdir(parents=True)
    (out / where).symlink_to(notes)
    argv = _reproduce_args(tmp_path, out, fake_train, train_args=['--epochs', '1'])
    argv.insert(argv.index('--'), '--overwrite')
    assert _exit_status(argv) == 2
    assert _one_error(capsys) == (f'{out / where} is a link to {notes} where timm-sl reproduce writes a file, which '
                                  f'would replace the file it links to; allowed: remove the link, or another --out')
    assert notes.read_text() == 'mine'


def _image_bytes(suffix: str) -> bytes:
    """A whole 2 px image for a file named with ``suffix`` (.png: a PNG, .jpg / .jpeg: a JPEG, any case), else a few
    bytes: an empty or cut-off image is refused."""
    kind = {'.png': 'PNG', '.jpg': 'JPEG', '.jpeg': 'JPEG'}.get(suffix.lower())
    if kind is None:
        return b'data'
    from PIL import Image
    buffer = io.BytesIO()
    Image.new('RGB', (2, 2), (10, 120, 200)).save(buffer, kind)
    return buffer.getvalue()


def _folders(root, layout):
    """Create ``root/<path>`` for each path of ``layout``: a name with a suffix is a file (a whole image for an
    image's suffix: an empty or cut-off image is refused), else a folder."""
    root.mkdir(parents=True, exist_ok=True)
    for path in layout:
        target = root / path
        if target.suffix:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(_image_bytes(target.suffix))
        else:
            target.mkdir(parents=True, exist_ok=True)
    return root


DIGITS = [f'{split}/{d}/0.png' for split in ('train', 'test') for d in range(10)]


@pytest.mark.parametrize('dataset,layout,train_args,errors', [
    ('svhn', [], [], ['{D} holds neither train/ nor test/, the folders the svhn recipe reads its splits from '
                      '({D}/train/<class>/<image>)']),
    ('svhn', DIGITS[:10] + ['test/0.png'], [],
     ['{D}/test holds no class folders: expected {D}/test/<class>/<image>']),
    ('svhn', DIGITS[:10] + ['test/0/0.png', 'test/1/0.png', 'test/2/0.png'], [],
     ['{D}/test has 3 class folders; the run trains 10 classes (num_classes)']),
    ('svhn', DIGITS[:10] + ['test/0/0.png', 'test/1/0.png', 'test/x/0.png'], ['--num-classes', '3'],
     ['{D}/train has 10 class folders; the run trains 3 classes (num_classes)']),
    ('svhn', [f'train/{d}/0.png' for d in range(9)] + ['train/z/0.png'] + DIGITS[10:], [],
     ['{D}/train and {D}/test hold different classes: only in {D}/train: z; only in {D}/test: 9']),
    # Tiny-ImageNet as downloaded: train/<wnid>/images/*.JPEG (timm would label every image 'images'), val unsorted
    ('tiny-imagenet', ['train/n01/images/0.JPEG', 'train/n01/n01_boxes.txt', 'train/n02/images/0.JPEG',
                       'val/images/val_0.JPEG', 'val/val_annotations.txt'], [],
     ["{D}/train/n01/images holds images one folder too deep (1 more class folder alike): timm labels an image "
      "by the folder it is in, so the images in it would be class 'images'; run timm-sl prepare-tiny-imagenet {D}",
      '{D}/val is not sorted into class folders (val/images/, val_annotations.txt): '
      'run timm-sl prepare-tiny-imagenet {D}']),
    ('tiny-imagenet', ['train/n01/0.JPEG', 'train/n02/0.JPEG', 'val/n01/0.JPEG', 'val/n02/0.JPEG',
                       'val/images/0.JPEG', 'val/val_annotations.txt'], ['--num-classes', '2'],
     ['{D}/val/images would be read as one more class: remove it (the images are sorted into class folders)']),
    ('cifar10', ['file.txt'], [],
     ["--data-dir {D}/file.txt is a file; expected the dataset root (train.py's --data-dir)"]),
    # folders timm's reader labels otherwise than their names say: an empty class folder (skipped), a dot-folder with
    # images (a class), images beside the class folders (one more class)
    ('svhn', [p for p in DIGITS if p not in ('train/3/0.png', 'train/7/0.png')] + ['train/3/a.txt', 'train/7/0.webp'],
     [],
     ["{D}/train/3 holds no image (.png, .jpg, .jpeg): timm's folder reader skips it (1 more folder alike), shifting "
      "the labels of the classes sorted after it; add its images or remove it"]),
    ('svhn', DIGITS + ['test/.ipynb_checkpoints/0-checkpoint.png'], [],
     ["{D}/test/.ipynb_checkpoints holds images: timm's folder reader counts it as a class (dot-folders too), "
      "shifting the labels of the classes sorted after it; remove it"]),
    # a class folder's name with a line break in it: the line broke in two, naming neither half (now escaped)
    ('svhn', [p for p in DIGITS if p != 'train/3/0.png'] + ['train/3\nold/a.txt'],
     [],
     ["{D}/train/3\\nold holds no image (.png, .jpg, .jpeg): timm's folder reader skips it, shifting the labels of "
      "the classes sorted after it; add its images or remove it"]),
    ('svhn', DIGITS + ['train/stray.JPG'], [],
     ["{D}/train holds images outside its class folders: timm's folder reader counts them as one more class; move "
      "them into {D}/train/<class>/"]),
    # every top-1 measured on training images: both splits one folder (by name, synonym or link)
    ('svhn', DIGITS, ['--val-split', 'train'],
     ["the train split 'train' and the val split 'train' are both read from {D}/train: every top-1 would be measured "
      "on the images the run trains on; allowed: splits in different folders (-- --train-split / --val-split)"]),
    ('svhn', DIGITS[:10] + ['validation'], ['--train-split', 'validation', '--val-split', 'val'],
     ["the train split 'validation' and the val split 'val' are both read from {D}/validation: every top-1 would be "
      "measured on the images the run trains on; allowed: splits in different folders (-- --train-split / "
      "--val-split)"]),
    # each run failed once started: a model of no classes, a class map train.py cannot find or read
    ('svhn', DIGITS, ['--num-classes', '0'], ['--num-classes 0 is not allowed; expected an integer >= 1']),
    ('svhn', DIGITS, ['--num-classes=ten'], ['--num-classes ten is not allowed; expected an integer >= 1']),
    ('svhn', DIGITS, ['--class-map', 'no-map.txt'],
     [f'--class-map no-map.txt is not found (as given, nor in {{D}}/{split}), where train.py reads it; allowed: a '
      f'.txt file of class folder names, one a line, or a .pkl of {{{{name: index}}}}' for split in ('train', 'test')]),
    ('svhn', DIGITS + ['train/map.json', 'test/map.json'], ['--class-map', 'map.json'],
     ['--class-map map.json is neither .txt nor .pkl, which train.py reads; allowed: a .txt file of class folder '
      'names, one a line, or a .pkl of {{name: index}}']),  # once: the same line for both splits
    # a folder of the map's name: it was 'not found' (train.py opens it, and fails)
    ('svhn', DIGITS + ['train/map.txt/notes', 'test/map.txt/notes'], ['--class-map', 'map.txt'],
     [f'--class-map map.txt is a folder ({{D}}/{split}/map.txt), which train.py would open as the map; allowed: a '
      f'.txt file of class folder names, one a line, or a .pkl of {{{{name: index}}}}' for split in ('train', 'test')]),
    # no validation split: train.py measured no top-1 and every run read as 'diverged (NaN)' (an image folder was
    # refused for images 'one folder too deep', --data-dir read as the split)
    *[(dataset, DIGITS, ['--val-split', ''],
       [f"--val-split '' after -- leaves train.py without a validation split: no run would measure a top-1 (what the "
        f"report and Table 2 compare), and each would read as diverged; allowed: a split to measure on (the {dataset} "
        f"recipe's, without --val-split)"]) for dataset in ('svhn', 'cifar100')],
    ('svhn', DIGITS, ['--train-split='],
     ["--train-split '' after -- names no split: train.py would train on all of {D} (CIFAR: on its test set); allowed: "
      "a split to train on (the svhn recipe's, without --train-split)"]),
    # torchvision's ImageFolder (-- --dataset torch/folder) was not checked at all: one folder for both splits, a
    # class map it ignores, a dot-folder it counts as a class
    ('svhn', DIGITS, ['--dataset', 'torch/folder', '--val-split', 'training'],
     ["the train split 'train' and the val split 'training' are both read from {D}/train: every top-1 would be "
      "measured on the images the run trains on; allowed: splits in different folders (-- --train-split / "
      "--val-split)"]),
    ('svhn', DIGITS + ['train/map.txt', 'test/map.txt'], ['--dataset', 'torch/image_folder', '--class-map', 'map.txt'],
     ["--class-map map.txt would be ignored: train.py gives a class map to timm's own readers, not to torchvision's "
      "(--dataset torch/image_folder), which label the classes their own way; allowed: no --class-map, or timm's "
      "folder reader for a folder of class folders (--dataset '')"]),
    ('cifar10', ['file.txt/map.txt'], ['--class-map', 'map.txt'],  # CIFAR's labels, the map passed on and ignored
     ["--class-map map.txt would be ignored: train.py gives a class map to timm's own readers, not to torchvision's "
      "(--dataset torch/cifar10), which label the classes their own way; allowed: no --class-map, or timm's folder "
      "reader for a folder of class folders (--dataset '')"]),
    ('svhn', DIGITS + ['test/.ipynb_checkpoints/0-checkpoint.png'], ['--dataset', 'torch/folder'],
     ['{D}/test has 11 class folders (torchvision counts every folder); the run trains 10 classes (num_classes)']),
    # timm reads torch/<anything>/folder with torchvision's ImageFolder too (what follows the second '/'): unchecked
    ('svhn', DIGITS + ['test/.ipynb_checkpoints/0-checkpoint.png'], ['--dataset', 'TORCH/x/Folder'],
     ['{D}/test has 11 class folders (torchvision counts every folder); the run trains 10 classes (num_classes)']),
])
def test_data_layout_is_checked_before_any_run(fake_train, tmp_path, capsys, dataset, layout, train_args, errors):
    data = _folders(tmp_path / 'data', layout)
    data_dir = data / 'file.txt' if dataset == 'cifar10' else data
    out = tmp_path / 'out'
    argv = _reproduce_args(data_dir, out, fake_train, dataset, train_args=['--epochs', '1', *train_args])
    assert _exit_status(argv) == 2
    assert capsys.readouterr().err == ''.join(f'timm-sl reproduce: {e.format(D=data)}\n' for e in errors)
    assert not out.exists()  # nothing ran


@pytest.mark.parametrize('dataset,layout,train_args', [
    ('svhn', DIGITS, []),
    ('tiny-imagenet', ['train/n01/0.JPEG', 'train/n01/n01_boxes.txt', 'train/n02/0.JPEG', 'val/n01/0.JPEG',
                       'val/n02/0.JPEG', 'val/val_annotations.txt'], ['--num-classes', '2']),
    # val/images/ emptied of its images but kept by a file manager's file: no class to timm (it was said to be one)
    ('tiny-imagenet', ['train/n01/0.JPEG', 'train/n02/0.JPEG', 'val/n01/0.JPEG', 'val/n02/0.JPEG',
                       'val/val_annotations.txt', 'val/images/Thumbs.db'], ['--num-classes', '2']),
    ('svhn', DIGITS + ['train/.cache', 'test/.ipynb_checkpoints/notes.txt', 'test/4/1.PNG', 'train/0/x.txt'], []),
    ('svhn', DIGITS + ['train/map.txt', 'test/map.txt'], ['--class-map', 'map.txt']),  # in each split folder
    ('svhn', DIGITS + ['svhn.json', 'train/map.txt', 'test/map.txt'], ['--class-map', 'map.txt']),  # sorted order
    ('cifar10', [], []),  # torch/cifar10: train.py downloads it into an empty folder
    ('cifar10', ['tr/a/0.png', 'validation/a/0.png'],  # val: timm finds its synonym validation/
     ['--dataset', '', '--train-split', 'tr', '--val-split', 'val', '--num-classes', '1']),

    ('tiny-imagenet', ['train/n01/images/0.JPEG', 'train/n02/images/0.JPEG', 'val/n01/0.JPEG', 'val/n02/0.JPEG'],
     ['--dataset', 'torch/folder', '--num-classes', '2']),  # torchvision labels images below a class folder by it
])
def test_a_good_data_layout_runs(fake_train, tmp_path, capsys, dataset, layout, train_args):
    data = _folders(tmp_path / 'data', layout)
    for split in ('train', 'test'):
        if (data / split / 'map.txt').is_file():  # the class folders, in timm's order
            (data / split / 'map.txt').write_text(''.join(f'{d}\n' for d in range(10)))
    assert main(_reproduce_args(data, tmp_path / 'out', fake_train, dataset, train_args=['--epochs', '1',
                                                                                          *train_args])) == 0
    assert capsys.readouterr().err == ''


class _Os:  # a global a class map may not name: unpickling it would call os.system
    def __reduce__(self):
        return os.system, ('true',)


@pytest.mark.parametrize('map_name,content,prepared,error', [
    # a prepared folder's label names number its class folders in sorted order: a map that reorders them
    ('map.txt', ''.join(f'{d}\n' for d in reversed(range(10))), True,
     "--class-map {M} labels class '0' 9, not 0, but {D}/svhn.json (timm-sl prepare-svhn) labels the class folders "
     "in sorted order, as its label names do: every per-class name would be wrong; allowed: no --class-map, or one "
     "of the class folders in sorted order"),
    ('map.pkl', pickle.dumps({str(d): (d + 1) % 10 for d in range(10)}), True,
     "--class-map {M} labels class '0' 1, not 0, but {D}/svhn.json (timm-sl prepare-svhn) labels the class folders "
     "in sorted order, as its label names do: every per-class name would be wrong; allowed: no --class-map, or one "
     "of the class folders in sorted order"),
    ('map.txt', ''.join(f'{d}\n' for d in reversed(range(10))), False, None),  # the user's own order: theirs
    # what train.py could not read, or that leaves it no image: each run failed once started
    ('map.pkl', pickle.dumps(_Os()), False,
     '--class-map {M} is not readable (UnpicklingError: global posix.system is not allowed in a class map); allowed: '
     'a .txt file of class folder names, one a line, or a .pkl of {{name: index}}'),
    ('map.pkl', pickle.dumps(list(range(10))), False,
     '--class-map {M} holds a list, not a dict of class name to index; allowed: a .txt file of class folder names, '
     'one a line, or a .pkl of {{name: index}}'),
    ('map.txt', b'\xff\xfe0\n', False,
     "--class-map {M} is not readable (UnicodeDecodeError: 'utf-8' codec can't decode byte 0xff in position 0: "
     "invalid start byte); allowed: a .txt file of class folder names, one a line, or a .pkl of {{name: index}}"),
    ('map.txt', 'zero\none\n', False,
     [f'--class-map {{M}} names none of the class folders of {{D}}/{split} (0, 1, 2, ...); allowed: a map of those '
      f'class folder names' for split in ('train', 'test')]),
    # a name of no class folder: timm leaves the images of the folder it meant out, silently
    ('map.txt', '\ufeff' + ''.join(f'{d}\n' for d in range(10)), False,
     "--class-map {M} names '\\ufeff0', a class folder of neither split: timm gives its label to no image (and leaves "
     "out the folder it meant); allowed: names of the class folders (0, 1, 2, ...)"),
    # a label the head has no output for (the svhn recipe trains 10): each run failed on its first image of it
    ('map.pkl', pickle.dumps({str(d): d + 1 for d in range(10)}), False,
     "--class-map {M} labels class '9' 10, which is no class index of the 10 the run trains (num_classes): every run "
     "would fail on its first image of it; allowed: labels 0 to 9, or -- --num-classes"),
    ('map.pkl', pickle.dumps({'0': -1, '1': 1}), False,  # refused by the one class-map reader (runs.read_class_map)
     "--class-map {M} gives '0' the index -1, not a class number (0, 1, ...); allowed: a .txt file of class folder "
     "names, one a line, or a .pkl of {{name: index}}"),
    # two class folders of one label (a .pkl typo): timm trained and measured them as one class, with exit 0
    ('map.pkl', pickle.dumps({**{str(d): d for d in range(10)}, '1': 0}), False,
     [f"--class-map {{M}} gives class folders '0' and '1' of {{D}}/{split} the same label 0: timm would train and "
      f"measure them as one class; allowed: one label per class folder (to train them as one class, move their "
      f"images into one class folder)" for split in ('train', 'test')]),
], ids=['reordered-txt', 'reordered-pkl', 'own-order', 'pkl-global', 'pkl-list', 'not-utf8', 'names-none', 'bom',
        'beyond-head', 'negative', 'shared-label'])
def test_a_class_map_is_checked_against_the_class_folders(fake_train, tmp_path, capsys, map_name, content, prepared,
                                                          error):
    """A class map that reorders the classes of a folder timm-sl prepared made every per-class name of its label
    names wrong, silently; one train.py could not read, or that names no class folder, failed each run once started.
    """
    data = _folders(tmp_path / 'data', DIGITS + (['svhn.json'] if prepared else []))
    class_map = tmp_path / 'my maps' / map_name
    class_map.parent.mkdir()
    class_map.write_bytes(content if isinstance(content, bytes) else content.encode())
    out = tmp_path / 'out'
    status = _exit_status(_reproduce_args(data, out, fake_train, 'svhn',
                                          train_args=['--epochs', '1', '--class-map', str(class_map)]))
    if error is None:
        assert status == 0 and capsys.readouterr().err == ''
        return
    errors = [error] if isinstance(error, str) else error  # one line when it is the same for both splits
    assert status == 2 and capsys.readouterr().err == ''.join(
        f'timm-sl reproduce: {e.format(M=class_map, D=data)}\n' for e in errors)
    assert not out.exists()


def test_a_class_map_of_each_split_folder_must_label_alike(fake_train, tmp_path, capsys):
    """-- --class-map map.txt found in each split folder, the two files in other orders: timm's reader of each split
    reads its own, so every top-1 was measured against other labels than the run trained with (no word)."""
    data = _folders(tmp_path / 'data', DIGITS)
    (data / 'train' / 'map.txt').write_text(''.join(f'{d}\n' for d in range(10)))
    (data / 'test' / 'map.txt').write_text(''.join(f'{d}\n' for d in (1, 0, *range(2, 10))))
    argv = _reproduce_args(data, tmp_path / 'out', fake_train, 'svhn',
                           train_args=['--epochs', '1', '--class-map', 'map.txt'])
    assert _exit_status(argv) == 2
    assert _one_error(capsys) == (
        f"--class-map map.txt is read as {data}/train/map.txt for the train split and as {data}/test/map.txt for the "
        f"val split, which give class '0' label 0 and label 1: top-1 would be measured against other labels than the "
        f"run trains with; allowed: one map for both splits (the same file in each, or its path)")
    assert not (tmp_path / 'out').exists()


@pytest.mark.skipif(not hasattr(os, 'mkfifo'), reason='no FIFOs')
def test_a_class_map_that_is_a_fifo_is_refused(fake_train, tmp_path, capsys):
    """-- --class-map a FIFO: reproduce waited on it for ever (as train.py would)."""
    data = _folders(tmp_path / 'data', DIGITS)
    os.mkfifo(tmp_path / 'map.txt')
    argv = _reproduce_args(data, tmp_path / 'out', fake_train, 'svhn',
                           train_args=['--epochs', '1', '--class-map', str(tmp_path / 'map.txt')])
    assert _exit_status(argv) == 2
    assert _one_error(capsys) == (
        f'--class-map {tmp_path}/map.txt is no regular file ({tmp_path}/map.txt: a FIFO, socket or device), which '
        f'train.py would wait on or read without end; allowed: a .txt file of class folder names, one a line, or a '
        f'.pkl of {{name: index}}')


@pytest.mark.parametrize('train_args,error', [
    (['--dataset', 'torch/cifar100'],  # CIFAR-100's labels for the head of ten of the cifar10 recipe
     'torch/cifar100 has 100 classes, but the run trains 10 (num_classes): every run would fail on its first label '
     '>= 10; allowed: --num-classes 100 (the recipe of --dataset cifar100)'),
    (['--num-classes', '5'],
     'torch/cifar10 has 10 classes, but the run trains 5 (num_classes): every run would fail on its first label >= 5; '
     'allowed: --num-classes 10 (the recipe of --dataset cifar10)'),
])
def test_a_cifar_head_smaller_than_its_classes_is_refused(fake_train, tmp_path, capsys, train_args, error):
    """Every run failed once started (a label beyond the head: an index error, on a GPU a device-side assert)."""
    out = tmp_path / 'out'
    assert _exit_status(_reproduce_args(tmp_path, out, fake_train, train_args=['--epochs', '1', *train_args])) == 2
    assert _one_error(capsys) == error and not out.exists()


@pytest.mark.parametrize('dataset,train_args', [
    ('svhn', ['--class-map', 'map.txt', '--num-classes', '5']),  # five of the ten digits
    ('svhn', ['--class-map', 'map.txt']),  # five of the ten digits, a head of ten
    ('cifar10', ['--num-classes', '100']),
    ('svhn', ['--dataset', 'torch/cifar10']),  # CIFAR-10 trained with the svhn recipe, beside SVHN's numbers
])
def test_no_paper_number_beside_runs_of_other_classes(fake_train, tmp_path, capsys, dataset, train_args):
    """A run of five SVHN digits (a class map) had the paper's ten-digit top-1 beside it, and a paper delta."""
    data = _folders(tmp_path / 'data', DIGITS if dataset == 'svhn' else [])
    for split in ('train', 'test'):
        (data / split).mkdir(exist_ok=True)
        (data / split / 'map.txt').write_text('0\n1\n2\n3\n4\n')
    out = tmp_path / 'out'
    assert main(_reproduce_args(data, out, fake_train, dataset, train_args=['--epochs', '1', *train_args])) == 0
    rows = json.loads((out / 'results.json').read_text())['rows']
    assert [(r['mean'] is not None, r['paper'], r['paper_delta']) for r in rows] == [(True, None, None)] * 2
    assert main(_reproduce_args(data, tmp_path / 'all', fake_train, dataset, train_args=['--epochs', '1'])) == 0
    assert all(r['paper'] for r in json.loads((tmp_path / 'all' / 'results.json').read_text())['rows'])


def test_an_out_inside_a_split_folder_is_refused_in_one_line_for_a_name_with_a_newline(tmp_path):
    """The refusal named --out and the split folder as they are: a newline in --data-dir broke it in two lines."""
    data = tmp_path / 'new\nline'
    (data / 'train').mkdir(parents=True)
    with pytest.raises(ValueError) as e:
        check_output_outside_data(data / 'train' / 'out', dict(dataset='', train_split='train', val_split='val',
                                                               data_dir=str(data)))
    assert str(e.value).startswith(f"--out {shown(data / 'train' / 'out')} is inside {shown(data / 'train')}, ")
    assert len(str(e.value).splitlines()) == 1


@pytest.mark.parametrize('out', ['train/report', 'test', 'test/./a/b'])
def test_an_out_inside_a_split_folder_is_refused(fake_train, tmp_path, capsys, out):
    """--out data/train/report ran, then its top1.png / curves.png were images of a class 'report' for train.py."""
    data = _folders(tmp_path / 'data', DIGITS)
    assert _exit_status(_reproduce_args(data, data / out, fake_train, 'svhn', train_args=['--epochs', '1'])) == 2
    split = out.split('/')[0]
    assert capsys.readouterr().err == (
        f'timm-sl reproduce: --out {data / out} is inside {data / split}, which train.py reads as the {split} split: '
        f"the report's PNGs there would be images of one more class; allowed: an --out outside the split folders "
        f'of --data-dir\n')
    assert sorted(p.name for p in (data / split).iterdir()) == [str(d) for d in range(10)]  # nothing written there
    assert main(_reproduce_args(data, data / 'report', fake_train, 'svhn', train_args=['--epochs', '1'])) == 0


@pytest.mark.parametrize('name', ['ImageFolder', 'imagefolder', 'svhn', 'my/folder'])
def test_every_name_timm_reads_as_an_image_folder_is_checked(fake_train, tmp_path, capsys, name):
    """timm's create_dataset reads any --dataset without a reader prefix (torch/, hfds/, tfds/, wds/ ...) as an image
    folder: '-- --dataset ImageFolder' skipped the data check, and a dot-folder of images shifted the labels."""
    data = _folders(tmp_path / 'data', DIGITS + ['train/.ipynb_checkpoints/0-checkpoint.png'])
    out = tmp_path / 'out'
    assert _exit_status(_reproduce_args(data, out, fake_train, 'svhn', train_args=['--epochs', '1', '--dataset',
                                                                                     name])) == 2
    assert _one_error(capsys).startswith(f"{data}/train/.ipynb_checkpoints holds images: timm's folder reader counts")
    assert not out.exists()  # nothing ran


@pytest.mark.parametrize('name', ['ImageFolder', 'torch/folder', 'torch/image_folder', 'torch/x/folder', 'my/data'])
def test_an_out_inside_a_split_folder_is_refused_for_every_folder_reader(fake_train, tmp_path, capsys, name):
    data = _folders(tmp_path / 'data', DIGITS)
    assert _exit_status(_reproduce_args(data, data / 'train/0/report', fake_train, 'svhn',
                                        train_args=['--epochs', '1', '--dataset', name])) == 2
    assert _one_error(capsys).startswith(f'--out {data}/train/0/report is inside {data}/train, which train.py reads')
    assert not (data / 'train/0/report').exists()


@pytest.mark.parametrize('record,held,dataset', [
    ('fashion_mnist.json', 'fashion-mnist', 'svhn'), ('svhn.json', 'svhn', 'fashion-mnist'),
    ('fashion_mnist.json', 'fashion-mnist', 'cifar10')])
def test_a_folder_prepared_for_another_dataset_is_refused_before_any_run(fake_train, tmp_path, capsys, record, held,
                                                                         dataset):
    """Ten class folders fit both SVHN's and Fashion-MNIST's recipe: the prepare record names the data."""
    data = _folders(tmp_path / 'data', DIGITS + [record])
    out = tmp_path / 'out'
    assert _exit_status(_reproduce_args(data, out, fake_train, dataset, train_args=['--epochs', '1'])) == 2
    assert _one_error(capsys) == f'{data / record}: this folder holds {held}, not {dataset}; allowed: --dataset {held}'
    assert not out.exists()  # nothing ran
    assert main(_reproduce_args(data, out, fake_train, held, train_args=['--epochs', '1'])) == 0


def test_data_check_counts_the_classes_timm_counts(tmp_path):
    """check_data's classes are those of timm's folder reader: folders holding an image (any case of its extensions),
    dot-folders and linked folders included, empty ones left out."""
    from timm.data.readers.img_extensions import get_img_extensions
    from timm.data.readers.reader_image_folder import find_images_and_targets
    from timm_sl.tools.files import IMAGE_SUFFIXES  # the one list (data checks, data preparation, path table, analyses)
    from timm_sl.tools.data_check import _image_folders
    assert set(IMAGE_SUFFIXES) == get_img_extensions(as_set=True)
    split = _folders(tmp_path / 'train', ['a/0.png', 'b/0.JPEG', 'c/notes.txt', 'd', '.e/0.jpg', 'f/g/0.jpeg',
                                          'h/0.webp'])
    (split / 'i').symlink_to(split / 'a', target_is_directory=True)
    _, class_to_idx = find_images_and_targets(str(split))
    assert sorted(p.name for p in _image_folders(split)) == sorted(class_to_idx) == ['.e', 'a', 'b', 'g', 'i']


@pytest.fixture
def saved_figures(monkeypatch):
    """The figures saved while the test runs, by file name."""
    from matplotlib.figure import Figure
    saved, save = {}, Figure.savefig

    def record(fig, path, *args, **kwargs):
        saved[Path(path).name.removeprefix('.').split('.partial')[0]] = fig  # written beside it, then moved over it
        return save(fig, path, *args, **kwargs)
    monkeypatch.setattr(Figure, 'savefig', record)
    return saved


def _titles(fig):
    return [fig.get_suptitle()] + [ax.get_title() for ax in fig.axes]


def test_report_charts_start_at_zero_name_the_recorded_data_and_count_whole_epochs(fake_train, tmp_path, capsys,
                                                                                   saved_figures):
    data = _folders(tmp_path / 'digits', ['train/a/0.png', 'train/b/0.png', 'test/a/0.png', 'test/b/0.png'])
    out = tmp_path / 'out'
    assert _exit_status(_reproduce_args(data, out, fake_train, families=['vit', 'pit'],
                                train_args=['--dataset', '', '--num-classes', '2', '--epochs', '3'])) == 1
    capsys.readouterr()  # pit's SL w/o Spool crashes (fake train.py): no measured gain for that row
    top1, curves = saved_figures['top1.png'], saved_figures['curves.png']
    for fig in (top1, curves):
        titles = ' '.join(_titles(fig)).replace('\n', ' ')
        assert f'data: image folder {data}' in titles, titles
    assert top1.get_suptitle().startswith('cifar10 recipe; data: image folder'), top1.get_suptitle()

    bars = next(ax for ax in top1.axes if ax.get_ylabel() == 'best top-1 (%)')
    assert bars.get_ylim()[0] == 0 and bars.patches
    assert all(p.get_y() == 0 and p.get_height() > 0 for p in bars.patches)  # bars from 0 up to the mean
    measured = next(c for c in bars.containers if c.get_label() == 'measured')
    assert sorted(round(p.get_height(), 6) for p in measured) == [22., 32., 52., 52.]  # fake top-1 (seed 0)
    gains = next(ax for ax in top1.axes if ax.get_ylabel().startswith('top-1 gain'))
    measured = next(c for c in gains.containers if c.get_label() == 'measured')
    assert [round(p.get_height(), 6) for p in measured] == [20., 30.]  # no bar of 0 for the crashed row

    for ax in curves.axes:
        curves.canvas.draw()
        low, high = ax.get_xlim()
        ticks = [t.get_text() for t in ax.get_xticklabels() if low <= t.get_position()[0] <= high]
        assert ticks and all(float(t).is_integer() for t in ticks), ticks
    assert 'data: image folder' in (out / 'report.md').read_text()


@pytest.mark.parametrize('sl_top1', [None, 60.])  # a failed SL run: no measured gain; SL below the baseline
def test_top1_chart_values_and_notes_stay_clear_of_the_titles(tmp_path, saved_figures, sl_top1):
    """SVHN's paper bars (97.8) wrote their values over the panel title; a gain panel without a measured gain scaled
    the paper's -0.03 to its full height and drew 'not measured' above the panel, over its title."""
    outcomes = [_report_outcome('pit', 'base', 0, 70.), _outcome('pit', 'sl_no_spool', 0, None, status='failed')]
    outcomes += [_outcome('pit', 'sl', 0, None, status='failed') if sl_top1 is None else
                 _report_outcome('pit', 'sl', 0, sl_top1)]  # 60: the note of SL w/o Spool below the 0 line
    write_report(outcomes, 'svhn', tmp_path)
    fig = saved_figures['top1.png']
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    for ax in fig.axes:
        title, box = ax.title.get_window_extent(renderer), ax.get_window_extent(renderer)
        for text in ax.texts:
            extent = text.get_window_extent(renderer)
            assert not extent.overlaps(title), (text.get_text(), ax.get_title())
            assert box.y0 - 1 <= extent.y0 and extent.y1 <= box.y1 + 1, (text.get_text(), ax.get_title())
    gains = next(ax for ax in fig.axes if ax.get_ylabel().startswith('top-1 gain'))
    low, high = gains.get_ylim()
    assert high - low >= 2  # the paper's -0.03 is a sliver, not the whole panel


def test_cifar_must_be_present_or_downloadable(tmp_path, monkeypatch):
    from timm_sl.tools import reproduce as module
    data = module.train_data(recipe_path('cifar100'), str(tmp_path))
    assert (data['dataset'], data['num_classes']) == ('torch/cifar100', 100)
    assert module.check_data(data, 'cifar100') == []  # train.py downloads it
    monkeypatch.setattr(module.os, 'access', lambda path, mode: False)  # a read-only folder (root writes anyway)
    assert module.check_data(data, 'cifar100') == [
        f'{tmp_path}/cifar-100-python not found, and train.py cannot download torch/cifar100 into {tmp_path} '
        f'(not writable)']
    (tmp_path / 'cifar-100-python').mkdir()
    assert module.check_data(data, 'cifar100') == []


def _report_outcome(family, variant, seed, top1, epochs=3):
    """A finished run whose validation top-1 climbs to ``top1`` over ``epochs`` (epochs 1, 2, ... as the reader
    gives them)."""
    outcome = _outcome(family, variant, seed, top1)
    outcome.curve = [(e + 1, top1 - 5 * (epochs - 1 - e)) for e in range(epochs)]
    return outcome


def _bar_values(ax):
    """(label of its container, height) of every bar, and the texts written on the axes."""
    from matplotlib.container import BarContainer
    bars = [(c.get_label(), round(p.get_height(), 6)) for c in ax.containers if isinstance(c, BarContainer) for p in c]
    return bars, [t.get_text() for t in ax.texts]


@pytest.mark.parametrize('seeds,title', [
    ([0], 'measured best top-1, one seed per row (no spread)'),
    ([0, 1, 2], 'measured best top-1, mean ± std over 3 seeds'),
])
def test_top1_chart_says_what_its_bars_are_and_labels_every_bar(tmp_path, saved_figures, seeds, title):
    """One seed was titled "mean ± std over seeds" (with zero-length whiskers); the paper's bars had no values."""
    from matplotlib.collections import LineCollection
    outcomes = [_report_outcome('pit', variant, seed, top1 + seed)
                for variant, top1 in (('base', 70.), ('sl_no_spool', 72.), ('sl', 75.)) for seed in seeds]
    write_report(outcomes, 'cifar100', tmp_path)
    top1 = saved_figures['top1.png']
    left = next(ax for ax in top1.axes if ax.get_ylabel() == 'best top-1 (%)')
    right = next(ax for ax in top1.axes if ax.get_ylabel().startswith('top-1 gain'))
    assert left.get_title() == title
    whiskers = [seg for coll in left.collections if isinstance(coll, LineCollection) for seg in coll.get_segments()]
    assert len(whiskers) == (3 if len(seeds) > 1 else 0)  # a whisker only where there is a spread (none of length 0)
    rows = aggregate(outcomes, 'cifar100')
    bars, texts = _bar_values(left)
    assert bars == [('measured', round(r['mean'], 6)) for r in rows] + [('paper (cifar100)', r['paper']) for r in rows]
    spreads = [f'\n±{r["std"]:.2f}' if len(seeds) > 1 else '' for r in rows]
    assert texts == [f'{r["mean"]:.2f}{s}' for r, s in zip(rows, spreads)] + [f'{r["paper"]:.2f}' for r in rows]
    bars, texts = _bar_values(right)  # SL − baseline: measured and paper gains, each with its value
    deltas = rows[1:]
    assert [label for label, _ in bars] == ['measured'] * 2 + ['paper (cifar100)'] * 2
    assert texts == [f'{r["delta"]:+.2f}' for r in deltas] + [f'{r["paper_delta"]:+.2f}' for r in deltas]
    assert all(p.get_y() == 0 for p in right.patches)  # gains drawn from 0


def test_top1_chart_without_paper_numbers_has_no_paper_legend_entry(tmp_path, saved_figures):
    """A dataset the paper has no column for (Fashion-MNIST) drew no paper bars but still listed them in the legend,
    in the measured bars' colour."""
    outcomes = [_report_outcome('vit', 'base', 0, 70.), _report_outcome('vit', 'sl', 0, 74.)]
    write_report(outcomes, 'fashion-mnist', tmp_path)
    figure = saved_figures['top1.png']
    assert [t.get_text() for legend in figure.legends for t in legend.get_texts()] == ['measured']
    for ax in figure.axes:
        assert {label for label, _ in _bar_values(ax)[0]} == {'measured'}
        centres = [p.get_x() + p.get_width() / 2 for p in ax.patches]
        assert centres == pytest.approx([round(c) for c in centres])  # each bar on its label, no empty paper slot


@pytest.mark.parametrize('dataset,slot', [('fashion-mnist', 0.), ('cifar100', -0.2)])
def test_top1_chart_says_no_finished_run_in_the_measured_slot(tmp_path, saved_figures, dataset, slot):
    """Without paper numbers, 'no finished run' sat 0.2 left of its label and 'not measured' on the right panel's
    y-axis label (the panel's x range did not reach its slot)."""
    outcomes = [_report_outcome('vit', 'base', 0, 70.), _outcome('vit', 'sl', 0, None, status='failed')]
    write_report(outcomes, dataset, tmp_path)
    figure = saved_figures['top1.png']
    figure.canvas.draw()
    for ax, text in zip(figure.axes[:2], ('no finished run', 'not measured')):
        (placed,) = [t for t in ax.texts if t.get_text() == text]
        ticks = list(ax.get_xticks())
        x = placed.xy[0] if hasattr(placed, 'xy') else placed.get_position()[0]  # an annotation's point, or its own
        assert x == pytest.approx(ticks[-1] + slot)  # the measured bar's slot of the last label (vit SL)
        assert ax.get_xlim() == (-0.5, len(ticks) - 0.5)  # every label's slot inside the panel
        box = placed.get_window_extent()
        assert ax.get_window_extent().x0 < box.x0 and box.x1 < ax.get_window_extent().x1
        assert not box.overlaps(ax.yaxis.label.get_window_extent())


def test_top1_chart_with_rows_over_different_seed_counts_names_each_count(tmp_path, saved_figures):
    outcomes = [_report_outcome('vit', 'base', 0, 70.), _report_outcome('vit', 'base', 1, 71.),
                _report_outcome('vit', 'sl', 0, 74.)]
    write_report(outcomes, 'cifar100', tmp_path)
    left = next(ax for ax in saved_figures['top1.png'].axes if ax.get_ylabel() == 'best top-1 (%)')
    assert left.get_title().replace('\n', ' ') == ("measured best top-1, mean ± std over each row's seeds (one seed: "
                                                  "no spread)")
    assert [t.get_text() for t in left.get_xticklabels()] == ['vit\nbaseline\n(2 seeds)', 'vit\nSL\n(1 seed)']


def test_curves_panels_share_one_scale_and_count_epochs_as_the_report(tmp_path, saved_figures):
    """The panels had their own y ranges (a family at 30 % looked like one at 80 %); epochs count from 1 as in the
    report and the cards (the axis says that summary.csv counts from 0)."""
    outcomes = [_report_outcome('vit', 'base', 0, 80.), _report_outcome('vit', 'sl', 0, 85.),
                _report_outcome('pit', 'base', 0, 30.), _report_outcome('pit', 'sl', 0, 32.)]
    write_report(outcomes, 'cifar100', tmp_path)
    curves = saved_figures['curves.png']
    assert len(curves.axes) == 2 and curves.axes[0].get_ylim() == curves.axes[1].get_ylim()
    assert curves.axes[0].get_xlim() == curves.axes[1].get_xlim()
    low, high = curves.axes[0].get_ylim()
    assert low <= 20. and high >= 85.  # both families' values on the one scale
    for ax in curves.axes:
        assert ax.get_xlabel() == "epoch (from 1; train.py's summary.csv counts from 0)"
        assert [list(line.get_xdata()) for line in ax.get_lines()] == [[1, 2, 3]] * 2
    assert curves.axes[0].get_ylabel() == 'top-1 (%), same scale in every panel'


def test_curves_of_interrupted_runs_say_so(tmp_path, saved_figures):
    """After Ctrl-C the curve of an interrupted run was drawn and labelled as a finished one ('SL'), its last epoch
    read as where training ended."""
    stopped = _report_outcome('vit', 'sl', 0, 60., epochs=2)
    stopped.status = 'interrupted'
    write_report([_report_outcome('vit', 'base', 0, 80.), stopped], 'cifar100', tmp_path)
    ax = saved_figures['curves.png'].axes[0]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ['baseline', 'SL (interrupted run)']
    assert [line.get_linestyle() for line in ax.get_lines()] == ['-', ':']


def test_curves_of_runs_at_zero_percent_stay_on_0_to_100(tmp_path, saved_figures):
    """An untrained sweep (every epoch at 0 %) was drawn from about -0.05 to 0.05: negative top-1."""
    outcomes = [_report_outcome('vit', 'base', 0, 0.), _report_outcome('vit', 'sl', 0, 0.)]
    for outcome in outcomes:
        outcome.curve = [(1, 0.), (2, 0.), (3, 0.)]
    write_report(outcomes, 'cifar100', tmp_path)
    assert saved_figures['curves.png'].axes[0].get_ylim() == (0., 100.)


def test_coinciding_curves_stay_visible(tmp_path, saved_figures):
    """Baseline and SL at chance (10 %) every epoch: SL's line and markers hid the baseline's, which the legend named;
    each row's markers are now open rings smaller than the row's before it, so all show, nested (lines at one width:
    none made to look more than another)."""
    outcomes = [_report_outcome('pit', variant, 0, 10.) for variant in ('base', 'sl_no_spool', 'sl')]
    for outcome in outcomes:
        outcome.curve = [(1, 10.), (2, 10.)]
    write_report(outcomes, 'cifar10', tmp_path)
    lines = saved_figures['curves.png'].axes[0].get_lines()
    sizes = [line.get_markersize() for line in lines]
    assert [line.get_label() for line in lines] == ['baseline', 'SL w/o Spool', 'SL']
    assert sizes == sorted(sizes, reverse=True) and len(set(sizes)) == 3
    assert {line.get_markerfacecolor() for line in lines} == {'none'}  # open: a smaller ring does not cover a larger
    assert len({line.get_linewidth() for line in lines}) == 1


def test_a_long_data_path_in_the_chart_titles_stays_inside_them(tmp_path, saved_figures):
    """A data folder's path longer than a title line was kept whole, so one family's curves.png (5 inches wide) cut
    it off at both edges: the data the charts are of was unreadable."""
    data = 'image folder /home/someone/datasets/' + 'a_very_long_folder_name_' * 4 + '/cifar10_png'
    write_report([_report_outcome('vit', 'base', 0, 50.), _report_outcome('vit', 'sl', 0, 55.)], 'cifar10', tmp_path,
                 data=data)
    for name in ('top1.png', 'curves.png'):
        fig = saved_figures[name]
        fig.canvas.draw()
        box = fig._suptitle.get_window_extent(fig.canvas.get_renderer())
        assert fig.bbox.x0 <= box.x0 and box.x1 <= fig.bbox.x1, name
        assert ''.join(data.split()) in ''.join(fig.get_suptitle().split())


def _one_error(capsys) -> str:
    err = capsys.readouterr().err
    assert err.count('\n') == 1 and err.startswith('timm-sl reproduce: '), err
    return err[len('timm-sl reproduce: '):-1]


def test_a_run_trained_with_other_settings_is_neither_skipped_nor_resumed(fake_train, tmp_path, capsys):
    """A run folder's name does not say its kwargs, recipe or data: a re-run into the same --out without depth=1 took
    the finished runs as its own (and reported them as the full model), another recipe put its paper numbers beside
    them."""
    out = tmp_path / 'out'
    base = out / 'runs' / 'vit-base-s0'
    first = ['--epochs', '1', '--model-kwargs', 'depth=1', '-b', '32']
    assert main(_reproduce_args(tmp_path, out, fake_train, train_args=first)) == 0
    capsys.readouterr()
    report = (out / 'report.md').read_text()
    assert _exit_status(_reproduce_args(tmp_path, out, fake_train, train_args=first[:2] + first[4:])) == 2
    assert _one_error(capsys) == (
        f'{base} was trained with other settings (model_kwargs depth: 1 -> unset), and 1 more run folder alike: '
        f'reproduce resumes or skips a run only with the settings it started with; use another --out')
    assert _exit_status(_reproduce_args(tmp_path, out, fake_train, 'cifar100', train_args=first)) == 2
    assert "(recipe: 'cifar10.yaml' -> 'cifar100.yaml'; data dataset: 'torch/cifar10' -> 'torch/cifar100';" in \
        _one_error(capsys)
    assert _exit_status(_reproduce_args(tmp_path, out, fake_train, train_args=[*first, '-b', '64'])) == 2
    assert '(train_args -b: 32 -> 64)' in _one_error(capsys)
    assert _exit_status(_reproduce_args(tmp_path / 'out', out, fake_train, train_args=first)) == 2  # another folder
    assert f"(data data_dir: '{tmp_path}' -> '{out}')" in _one_error(capsys)
    assert (out / 'report.md').read_text() == report  # nothing was run or rewritten
    # how a run goes is no setting (workers, device), and more epochs continue it (documented)
    assert main(_reproduce_args(tmp_path, out, fake_train, train_args=['--epochs', '2', *first[2:], '-j', '0',
                                                                      '--device', 'cpu'])) == 0
    assert 'vit-base-s0 started (resuming: 1/2 epochs done)' in capsys.readouterr().out
    # a run of an older reproduce (no run.json): the model kwargs train.py recorded in args.yaml, its recipe
    (base / 'run.json').unlink()
    (base / 'args.yaml').write_text('model: sl_vit_32\nmodel_kwargs: {spt: false, lsa: false, depth: 1}\n')
    assert _exit_status(_reproduce_args(tmp_path, out, fake_train, 'cifar100', train_args=first)) == 2
    assert _one_error(capsys).startswith(f"{base} was trained with other settings (recipe: 'cifar10.yaml' -> "
                                         f"'cifar100.yaml'), and 1 more run folder alike")
    assert _exit_status(_reproduce_args(tmp_path, out, fake_train, train_args=['--epochs', '2'])) == 2
    assert _one_error(capsys).startswith(f'{base} was trained with other settings (model_kwargs depth: 1 -> unset), '
                                         f'and 1 more run folder alike')


def test_a_setting_of_a_newline_is_named_in_one_line(fake_train, tmp_path, capsys):
    """A train.py argument holding a newline (``-- --aa 'rand\\nm9'``), or a run.json edited into one, broke the
    'trained with other settings' line in two, its second half naming no file."""
    out = tmp_path / 'out'
    base = out / 'runs' / 'vit-base-s0'
    first = ['--epochs', '1', '--aa', 'rand\nm9']
    assert main(_reproduce_args(tmp_path, out, fake_train, train_args=first)) == 0
    capsys.readouterr()
    assert _exit_status(_reproduce_args(tmp_path, out, fake_train, train_args=['--epochs', '1', '--aa', 'm9'])) == 2
    assert f"{base} was trained with other settings (train_args --aa: 'rand\\nm9' -> m9)" in _one_error(capsys)
    settings = json.loads((base / 'run.json').read_text())
    settings['recipe_settings']['input_size'][2] = '32\n'
    (base / 'run.json').write_text(json.dumps(settings))
    assert _exit_status(_reproduce_args(tmp_path, out, fake_train, train_args=first)) == 2
    assert f"{base} was trained with other settings (recipe_settings input_size: 3 32 '32\\n' -> 3 32 32)" in \
        _one_error(capsys)


@pytest.mark.parametrize('again', [['--batch-size', '64'], ['--batch-size=64'], ['-b64'], ['--batch', '64']])
def test_one_option_spelled_two_ways_is_the_same_setting(fake_train, tmp_path, capsys, again):
    """A run started with ``-- -b 64`` and resumed with ``-- --batch-size 64`` (one option of train.py, spelled another
    way) was refused as trained "with other settings"."""
    source = fake_train.read_text()
    fake_train.write_text(source.replace("('-b', '--device', '--class-map')", "('--device', '--class-map')").replace(
        "'--aa', '--amp', '--batch-size', ", "'--aa', '--amp', ").replace(
        "p.add_argument('-j', '--workers')", "p.add_argument('-j', '--workers')\np.add_argument('-b', '--batch-size')"))
    out = tmp_path / 'out'
    assert main(_reproduce_args(tmp_path, out, fake_train, train_args=['--epochs', '1', '-b', '64'])) == 0
    capsys.readouterr()
    assert main(_reproduce_args(tmp_path, out, fake_train, train_args=['--epochs', '2', *again])) == 0
    assert 'vit-base-s0 started (resuming: 1/2 epochs done)' in capsys.readouterr().out
    assert _exit_status(_reproduce_args(tmp_path, out, fake_train, train_args=['--epochs', '3', '-b', '32'])) == 2
    assert '(train_args --batch-size: 64 -> 32)' in _one_error(capsys)
    for run in ('vit-base-s0', 'vit-sl-s0'):  # a run.json of an earlier reproduce recorded the flag as given
        record = out / 'runs' / run / 'run.json'
        settings = json.loads(record.read_text())
        settings['train_args'] = {'-b': ['64']}
        record.write_text(json.dumps(settings))
    assert main(_reproduce_args(tmp_path, out, fake_train, train_args=['--epochs', '3', *again])) == 0


@pytest.mark.parametrize('target', ['.', '..'])
def test_a_link_loop_in_the_data_is_named(fake_train, tmp_path, capsys, target):
    """A link back up in a class folder (with one in every class folder: without end, as timm's reader would) made
    the data check walk it 40 links deep, then blame the class folder for images 'one folder too deep'."""
    data = _folders(tmp_path / 'data', DIGITS)
    (data / 'train' / '3' / 'loop').symlink_to(target)
    out = tmp_path / 'out'
    assert _exit_status(_reproduce_args(data, out, fake_train, 'svhn', train_args=['--epochs', '1'])) == 2
    real = data / 'train' / ('3' if target == '.' else '')
    assert _one_error(capsys) == (f"{data}/train/3/loop links back to {str(real).rstrip('/')}, a folder it is in: "
                                  f"timm's folder reader would walk it without end; allowed: folders without such "
                                  f"links (remove it)")
    assert not out.exists()


@pytest.mark.parametrize('linked', ['test/3', 'train/3'])
def test_a_class_folder_linked_into_both_splits_is_refused(fake_train, tmp_path, capsys, linked):
    """test/3 a link to train/3 (or the reverse): every top-1 was measured partly on the images the run trained on,
    beside the paper's numbers, silently."""
    data = _folders(tmp_path / 'data', DIGITS)
    other = 'train/3' if linked == 'test/3' else 'test/3'
    shutil.rmtree(data / linked)
    (data / linked).symlink_to(Path('..') / other)
    out = tmp_path / 'out'
    assert _exit_status(_reproduce_args(data, out, fake_train, 'svhn', train_args=['--epochs', '1'])) == 2
    first, second = (data / 'train' / '3', data / 'test' / '3')
    assert _one_error(capsys) == (f'{first} and {second} are one folder (a link): its images would be in both splits, '
                                  f'so top-1 would be measured partly on images the run trains on; allowed: splits '
                                  f'that share no folder')
    assert not out.exists()


@pytest.mark.parametrize('dataset', ['', 'torch/folder'])
def test_two_class_folders_of_one_split_that_are_one_folder_are_refused(fake_train, tmp_path, capsys, dataset):
    """train/7 a link to train/3: each image of it was trained as class '3' and again as class '7', silently (only a
    folder shared by the two splits was refused)."""
    data = _folders(tmp_path / 'data', DIGITS)
    shutil.rmtree(data / 'train' / '7')
    (data / 'train' / '7').symlink_to('3')
    out = tmp_path / 'out'
    argv = _reproduce_args(data, out, fake_train, 'svhn', train_args=['--epochs', '1', '--dataset', dataset])
    assert _exit_status(argv) == 2
    assert _one_error(capsys) == (f"{data}/train/3 and {data}/train/7 are one folder (a link): each of its images "
                                  f"would be read as class '3' and again as class '7'; allowed: class folders that "
                                  f"share no folder")
    assert not out.exists()


def test_a_class_map_edited_between_sessions_is_another_setting(fake_train, tmp_path, capsys):
    """Only the map's path was recorded: a map edited between sessions (two classes swapped) resumed the run with
    other labels, unnoticed."""
    import hashlib
    data = _folders(tmp_path / 'data', DIGITS)
    class_map = tmp_path / 'map.txt'
    class_map.write_text(''.join(f'{d}\n' for d in range(10)))
    out = tmp_path / 'out'
    args = ['--class-map', str(class_map)]
    assert main(_reproduce_args(data, out, fake_train, 'svhn', train_args=['--epochs', '1', *args])) == 0
    assert main(_reproduce_args(data, out, fake_train, 'svhn', train_args=['--epochs', '2', *args])) == 0  # same map
    capsys.readouterr()
    before = hashlib.sha256(class_map.read_bytes()).hexdigest()[:12]
    class_map.write_text(''.join(f'{d}\n' for d in (1, 0, *range(2, 10))))
    after = hashlib.sha256(class_map.read_bytes()).hexdigest()[:12]
    summary = (out / 'runs' / 'vit-base-s0' / 'summary.csv').read_text()
    assert _exit_status(_reproduce_args(data, out, fake_train, 'svhn', train_args=['--epochs', '3', *args])) == 2
    assert _one_error(capsys) == (
        f'{out}/runs/vit-base-s0 was trained with other settings (data class_map_sha256: sha256 {before}... '
        f'{before}... -> sha256 {after}... {after}...), and 1 more run folder alike: reproduce resumes or skips a run '
        f'only with the settings it started with; use another --out')
    assert (out / 'runs' / 'vit-base-s0' / 'summary.csv').read_text() == summary


def test_a_run_of_an_older_reproduce_resumed_with_a_class_map_is_another_setting(fake_train, tmp_path, capsys):
    """A run of an older reproduce (no run.json) trained without a class map was resumed with -- --class-map (other
    labels for the epochs left), unnoticed: its args.yaml records the map train.py read, which was not compared."""
    data = _folders(tmp_path / 'data', DIGITS)
    class_map = tmp_path / 'map.txt'
    class_map.write_text(''.join(f'{d}\n' for d in (1, 0, *range(2, 10))))
    out = tmp_path / 'out'
    assert main(_reproduce_args(data, out, fake_train, 'svhn', train_args=['--epochs', '1'])) == 0
    capsys.readouterr()
    for run in ('vit-base-s0', 'vit-sl-s0'):  # as an older reproduce left them; train.py's args.yaml names every key
        folder = out / 'runs' / run
        (folder / 'run.json').unlink()
        args = (folder / 'args.yaml').read_text()
        kwargs = '{spt: false, lsa: false}' if 'base' in run else '{}'
        (folder / 'args.yaml').write_text(args + f"class_map: ''\nmodel: sl_vit_32\nmodel_kwargs: {kwargs}\n")
    summary = (out / 'runs' / 'vit-base-s0' / 'summary.csv').read_text()
    again = ['--epochs', '2', '--class-map', str(class_map)]
    assert _exit_status(_reproduce_args(data, out, fake_train, 'svhn', train_args=again)) == 2
    assert _one_error(capsys) == (
        f"{out}/runs/vit-base-s0 was trained with other settings (data class_map: '' -> '{class_map}'), and 1 more "
        f"run folder alike: reproduce resumes or skips a run only with the settings it started with; use another --out")
    assert (out / 'runs' / 'vit-base-s0' / 'summary.csv').read_text() == summary
    assert main(_reproduce_args(data, out, fake_train, 'svhn', train_args=['--epochs', '2'])) == 0  # the same data


def test_the_report_and_charts_name_the_splits_the_runs_read(fake_train, tmp_path, capsys):
    """Runs trained on SVHN's extra images (-- --train-split extra) were reported and charted as 'data: image folder
    DATA' under the svhn recipe: the recipe's training images, as far as the report said."""
    data = _folders(tmp_path / 'data', DIGITS + [f'extra/{d}/0.png' for d in range(10)])
    out = tmp_path / 'out'
    assert main(_reproduce_args(data, out, fake_train, 'svhn', train_args=['--epochs', '1', '--train-split', 'extra',
                                                                          '--val-split', 'test'])) == 0
    said = f'image folder {data}, train split extra, val split test'
    assert f'data: {said}\n' in (out / 'report.md').read_text()
    assert json.loads((out / 'results.json').read_text())['data'] == said


@pytest.mark.parametrize('dataset,given,folders', [
    ('svhn', ['--train-split', 'training'], DIGITS),
    ('cifar10', ['--train-split', 'training', '--val-split', 'eval'], [])])
def test_a_split_named_by_a_synonym_is_the_same_setting(fake_train, tmp_path, capsys, dataset, given, folders):
    """A run started with the recipe's splits and resumed with -- --train-split training (the same train/ folder, or
    CIFAR's same training set) was refused as trained "with other settings (data train_split: 'train' ->
    'training')"; a split that reads other images still is."""
    data = _folders(tmp_path / 'data', folders + [f'extra/{d}/0.png' for d in range(10)])
    out = tmp_path / 'out'
    assert main(_reproduce_args(data, out, fake_train, dataset, train_args=['--epochs', '1'])) == 0
    assert main(_reproduce_args(data, out, fake_train, dataset, train_args=['--epochs', '2', *given])) == 0
    assert 'vit-base-s0 started (resuming: 1/2 epochs done)' in capsys.readouterr().out
    if dataset == 'svhn':  # another folder: other images
        assert _exit_status(_reproduce_args(data, out, fake_train, dataset,
                                            train_args=['--epochs', '3', '--train-split', 'extra'])) == 2
        assert "(data train_split: 'train' -> 'extra')" in capsys.readouterr().err


@pytest.mark.parametrize('damage', ['cut', 'list'])
def test_a_damaged_run_record_is_not_taken_for_none(fake_train, tmp_path, capsys, damage):
    """A run.json cut short (a disk that filled) was read as absent: the run was compared by its args.yaml only (not
    its train.py arguments nor its class map) and resumed, whatever they were now."""
    out = tmp_path / 'out'
    base = out / 'runs' / 'vit-base-s0'
    assert main(_reproduce_args(tmp_path, out, fake_train, train_args=['--epochs', '1', '-b', '32'])) == 0
    record = base / 'run.json'
    record.write_text(record.read_text()[:40] if damage == 'cut' else '[]')
    capsys.readouterr()
    assert _exit_status(_reproduce_args(tmp_path, out, fake_train, train_args=['--epochs', '2', '-b', '32'])) == 2
    assert _one_error(capsys) == (
        f'{record} is damaged ({"not JSON" if damage == "cut" else "not a JSON object"}): what the run was trained '
        f'with is not known; allowed: delete the file to compare the run by its args.yaml (as a run of an older '
        f'reproduce), delete {base} to restart it, or another --out')
    assert len(read_summary_rows(base / 'summary.csv')) == 1


def test_two_run_folders_that_are_one_are_refused(fake_train, tmp_path, capsys):
    """runs/vit-sl-s0 a link to runs/vit-base-s0: the SL run restarted over the finished baseline (its summary.csv and
    run.json replaced), and the report gave the baseline SL's top-1 and SL - baseline +0.00."""
    out = tmp_path / 'out'
    (out / 'runs' / 'vit-base-s0').mkdir(parents=True)
    (out / 'runs' / 'vit-sl-s0').symlink_to('vit-base-s0')
    assert _exit_status(_reproduce_args(tmp_path, out, fake_train, train_args=['--epochs', '1'])) == 2
    assert _one_error(capsys) == (
        f"{out}/runs/vit-base-s0 and {out}/runs/vit-sl-s0 are one folder (a link): the runs vit-base-s0 and vit-sl-s0 "
        f"would write over each other's results; allowed: a folder of its own for each run (remove the link)")
    assert list((out / 'runs' / 'vit-base-s0').iterdir()) == []


def test_a_run_that_lost_its_last_checkpoint_is_not_trained_over(fake_train, tmp_path, capsys):
    """Without last.pth.tar a run was restarted from scratch: its summary.csv deleted, model_best.pth.tar replaced."""
    out = tmp_path / 'out'
    run = out / 'runs' / 'vit-sl-s0'
    assert main(_reproduce_args(tmp_path, out, fake_train, train_args=['--epochs', '1'])) == 0
    (run / 'last.pth.tar').unlink()
    (run / 'model_best.pth.tar').write_bytes(b'best')
    summary = (run / 'summary.csv').read_text()
    capsys.readouterr()
    assert _exit_status(_reproduce_args(tmp_path, out, fake_train, train_args=['--epochs', '2'])) == 2
    assert _one_error(capsys) == (
        f'{run}/last.pth.tar is missing, but the run has trained (summary.csv of 1 epoch, model_best.pth.tar): '
        f'reproduce resumes a run only from its last.pth.tar; put it back to resume, or delete {run} to restart the '
        f'run on purpose (or use another --out)')
    assert (run / 'summary.csv').read_text() == summary and (run / 'model_best.pth.tar').read_bytes() == b'best'



@pytest.mark.parametrize('summary', [None, 'epoch,train_loss,eval_loss,eval_top1,eval_top5,lr\n'])
@pytest.mark.parametrize('epochs', ['1', '2'])
def test_a_run_that_lost_its_summary_is_not_resumed(fake_train, tmp_path, capsys, summary, epochs):
    """summary.csv deleted (or emptied) beside last.pth.tar and done.json: the run was resumed and its results were only
    the epochs after (a finished run 'exited with 0 but wrote no summary.csv', a failure of a run that had finished)."""
    out = tmp_path / 'out'
    run = out / 'runs' / 'vit-sl-s0'
    assert main(_reproduce_args(tmp_path, out, fake_train, train_args=['--epochs', '1'])) == 0
    if summary is None:
        (run / 'summary.csv').unlink()
    else:
        (run / 'summary.csv').write_text(summary)
    capsys.readouterr()
    assert _exit_status(_reproduce_args(tmp_path, out, fake_train, train_args=['--epochs', epochs])) == 2
    assert _one_error(capsys) == (
        f'{run}/summary.csv {"is missing" if summary is None else "holds no epoch"}, but the run has trained '
        f'(last.pth.tar; done.json marks it finished): resumed, its results would be only the epochs trained from now '
        f'on; put the file back, or delete {run} to restart the run (or use another --out)')
    assert (run / 'last.pth.tar').is_file() and (run / 'done.json').is_file()

@pytest.mark.parametrize('name,what', [('summary.csv', "train.py's summary.csv"),
                                       ('last.pth.tar', 'a checkpoint file'), ('args.yaml', "train.py's args.yaml")])
@pytest.mark.parametrize('trained', [True, False])
def test_a_folder_where_train_py_writes_a_file_is_named(fake_train, tmp_path, capsys, name, what, trained):
    """A folder in place of summary.csv was 'holds no epoch', of last.pth.tar 'is missing' (both wrong), and of any of
    the three in a run not started yet, a failure of every run once started."""
    out = tmp_path / 'out'
    run = out / 'runs' / 'vit-sl-s0'
    if trained:
        assert main(_reproduce_args(tmp_path, out, fake_train, train_args=['--epochs', '1'])) == 0
        (run / name).unlink()
    (run / name).mkdir(parents=True)
    capsys.readouterr()
    assert _exit_status(_reproduce_args(tmp_path, out, fake_train, train_args=['--epochs', '2'])) == 2
    assert _one_error(capsys) == f'{run}/{name} is a folder; expected {what}; allowed: another --out'


def test_a_truncated_last_checkpoint_is_named_before_resuming(fake_train, tmp_path, capsys):
    """A cut last.pth.tar failed every re-run in train.py with torch's zip error."""
    out = tmp_path / 'out'
    run = out / 'runs' / 'vit-base-s0'
    assert main(_reproduce_args(tmp_path, out, fake_train, train_args=['--epochs', '1'])) == 0
    last = run / 'last.pth.tar'
    last.write_bytes(last.read_bytes()[:-30])  # its zip index (at the end) cut off
    capsys.readouterr()
    assert _exit_status(_reproduce_args(tmp_path, out, fake_train, train_args=['--epochs', '2'])) == 2
    assert _one_error(capsys) == (f'{last} is truncated or unreadable (not a whole zip archive: File is not a zip '
                                  f'file); delete {run} to restart the run (or use another --out)')
    assert len((run / 'argv.log').read_text().splitlines()) == 1  # train.py was not started again


@pytest.mark.parametrize('where,what', [('runs/vit-sl-s0', 'a run folder'), ('runs', 'the folder of the runs')])
def test_a_file_where_a_run_folder_goes_is_named(fake_train, tmp_path, capsys, where, what):
    out = tmp_path / 'out'
    (out / where).parent.mkdir(parents=True)
    (out / where).write_text('mine')
    assert _exit_status(_reproduce_args(tmp_path, out, fake_train)) == 2
    assert _one_error(capsys) == f'{out / where} is a file; expected {what}; allowed: another --out'
    assert (out / where).read_text() == 'mine'


def test_a_restart_from_scratch_counts_only_its_own_sessions(fake_train, tmp_path, capsys, monkeypatch):
    """sessions.json kept the sessions of an attempt that trained nothing, and the report summed them into the wall
    time of the run that started again from scratch."""
    out = tmp_path / 'out'
    monkeypatch.setenv('FAKE_NO_SUMMARY', '1')
    assert _exit_status(_reproduce_args(tmp_path, out, fake_train)) == 1
    monkeypatch.delenv('FAKE_NO_SUMMARY')
    sessions = out / 'runs' / 'vit-base-s0' / 'sessions.json'
    first = json.loads(sessions.read_text())
    first[0]['seconds'] = 1000.  # the attempt that trained nothing, made long
    sessions.write_text(json.dumps(first))
    assert main(_reproduce_args(tmp_path, out, fake_train)) == 0
    recorded = json.loads(sessions.read_text())
    assert [s['start'] for s in recorded] == ['new', 'new'] and recorded[0]['seconds'] == 1000.
    wall = {r['name']: r['wall_seconds'] for r in json.loads((out / 'results.json').read_text())['runs']}
    assert wall['vit-base-s0'] == recorded[1]['seconds'] < 1000.


def test_epochs_a_train_py_trained_after_its_reproduce_was_killed_leave_the_wall_time_unknown(fake_train, tmp_path):
    """A reproduce killed while it extended a run leaves its train.py training on; the next call skipped the finished
    run and gave as its wall time the sessions recorded before, as if they had trained all of its epochs."""
    import subprocess
    out = tmp_path / 'out'
    assert main(_reproduce_args(tmp_path, out, fake_train)) == 0
    run = out / 'runs' / 'vit-sl-s0'
    command = json.loads((run / 'done.json').read_text())['command']
    at = command.index('--epochs')
    command[at + 1] = '4'  # the extension the killed call started: its session is in no sessions.json
    subprocess.run(command + ['--resume', str(run / 'last.pth.tar')], check=True)
    assert main(_reproduce_args(tmp_path, out, fake_train, train_args=('--epochs', '4'))) == 0
    results = {r['name']: r for r in json.loads((out / 'results.json').read_text())['runs']}
    assert results['vit-sl-s0']['summary']['epochs'] == 4 and results['vit-sl-s0']['wall_seconds'] is None
    assert '| vit-sl-s0 | done | 53.00 | 4 | 4 | - |' in (out / 'report.md').read_text()
    assert results['vit-base-s0']['wall_seconds'] > 0  # trained by this call, and timed


def test_a_diverged_run_says_so_in_the_report_and_chart(tmp_path, saved_figures):
    """A finished run whose top-1 is NaN in every epoch: the report showed a literal None, the chart 'no finished
    run'."""
    outcomes = [_report_outcome('vit', 'base', 0, 70.), _report_outcome('vit', 'sl', 0, 74.)]
    outcomes[1].summary = dict(best_top1=None, best_top5=None, best_epoch=None, epochs=3, last_epoch=3)
    report = write_report(outcomes, 'cifar100', tmp_path).read_text()
    assert 'None' not in report
    assert '| vit | SL | `sl_vit_32` | 0/1 | diverged (NaN) | - | 76.92 |' in report  # Table 2 row
    assert '| vit-sl-s0 | done | diverged (NaN) | - | 3 |' in report  # the run's row
    top1 = saved_figures['top1.png']
    left = next(ax for ax in top1.axes if ax.get_ylabel() == 'best top-1 (%)')
    right = next(ax for ax in top1.axes if ax.get_ylabel().startswith('top-1 gain'))
    assert 'diverged (NaN)' in _bar_values(left)[1] and 'no finished run' not in _bar_values(left)[1]
    assert 'diverged (NaN)' in _bar_values(right)[1]
    outcomes[0].summary = dict(outcomes[1].summary)
    write_report(outcomes, 'cifar100', tmp_path)
    left = next(ax for ax in saved_figures['top1.png'].axes if ax.get_ylabel() == 'best top-1 (%)')
    assert left.get_title() == 'measured best top-1: every finished run diverged (NaN)'


def test_the_runs_table_counts_the_epochs_trained_not_the_rows(tmp_path, saved_figures):
    """-- --val-interval 2: train.py writes a summary.csv row only for the epochs it measured, so a run of 4 epochs read
    'best epoch 4 | epochs 2' in the report's table of runs."""
    from timm_sl.tools.runs import summarize
    summary = tmp_path / 'summary.csv'
    summary.write_text('epoch,train_loss,eval_loss,eval_top1,eval_top5,lr\n1,1.0,1.0,50.0,90.0,0.001\n'
                       '3,1.0,1.0,60.0,90.0,0.001\n')
    outcome = _outcome('vit', 'sl', 0, None)
    outcome.summary = summarize(summary, args=dict(val_interval=2))  # as its args.yaml records it
    report = write_report([outcome], 'cifar10', tmp_path / 'out').read_text()
    assert '| vit-sl-s0 | done | 60.00 | 4 | 4 |' in report


def _reported_run(tmp_path: Path, args: dict, epochs: tuple) -> dict:
    """results.json of one reported run of sl_vit_32 --epochs 4 with ``args``, whose summary.csv lists ``epochs``
    (from 0) with top-1 50, 60, ...; its report.md is beside it."""
    from timm_sl.tools.reproduce import _collect
    outcome = _outcome('vit', 'sl', 0, None)
    outcome.run.out_dir = tmp_path / 'run'
    outcome.run.out_dir.mkdir()
    (outcome.run.out_dir / 'args.yaml').write_text(json.dumps(dict(model='sl_vit_32', epochs=4, **args)))
    (outcome.run.out_dir / 'summary.csv').write_text('epoch,train_loss,eval_loss,eval_top1,eval_top5\n' + ''.join(
        f'{e},1.0,1.0,{50.0 + 10 * i},90.0\n' for i, e in enumerate(epochs)))
    _collect(outcome)
    write_report([outcome], 'cifar10', tmp_path / 'out')
    return json.loads((tmp_path / 'out' / 'results.json').read_text())


def test_results_count_the_epochs_a_run_of_val_interval_trained(tmp_path, saved_figures):
    """-- --val-interval 2 --epochs 4: summary.csv has rows of epochs 2 and 4 only, and results.json's summary said the
    run trained 2 epochs where the runs table says 4."""
    summary = _reported_run(tmp_path, dict(val_interval=2), epochs=(1, 3))['runs'][0]['summary']
    assert (summary['epochs'], summary['last_epoch'], summary['best_epoch']) == (4, 4, 4)
    assert '| vit-sl-s0 | done | 60.00 | 4 | 4 |' in (tmp_path / 'out' / 'report.md').read_text()


def test_the_runs_table_and_results_give_one_count_of_the_epochs_a_run_trained(tmp_path, saved_figures):
    """-- --start-epoch 2 --epochs 4: train.py trains epochs 3 and 4 only; results.json's summary said 2 epochs where
    the runs table said 4 (its last epoch), and its row's run_epochs 4."""
    results = _reported_run(tmp_path, dict(start_epoch=2), epochs=(2, 3))
    summary = results['runs'][0]['summary']
    assert (summary['epochs'], summary['last_epoch'], summary['best_epoch']) == (2, 4, 4)
    assert results['rows'][0]['run_epochs'] == {'vit-sl-s0': 2}
    assert '| vit-sl-s0 | done | 60.00 | 4 | 2 |' in (tmp_path / 'out' / 'report.md').read_text()


def test_a_run_that_diverged_partway_says_so_in_the_report_results_and_charts(tmp_path, saved_figures):
    """A run whose loss turned NaN at epoch 3 of 5 (its last weights NaN) read as a plain finished run ('done') with
    its best top-1 of the epochs before, in the runs table, the Table 2 row, results.json and both charts."""
    from timm_sl.tools.reproduce import _collect
    outcomes = [_outcome('vit', 'sl', 0, None), _outcome('vit', 'sl', 1, None)]
    for outcome, tail in zip(outcomes, ('3,1.0,1.0,63.0,90.0\n4,0.9,0.9,64.0,91.0\n',
                                        '3,nan,nan,10.0,50.0\n4,nan,nan,10.0,50.0\n')):
        outcome.run.out_dir = tmp_path / outcome.run.name
        outcome.run.out_dir.mkdir()
        (outcome.run.out_dir / 'args.yaml').write_text(json.dumps(dict(model='sl_vit_32', epochs=5)))
        (outcome.run.out_dir / 'summary.csv').write_text(
            'epoch,train_loss,eval_loss,eval_top1,eval_top5\n0,1.0,1.0,50.0,90.0\n1,1.0,1.0,62.0,90.0\n'
            '2,nan,nan,10.0,50.0\n' + tail)
        _collect(outcome)
    report = write_report(outcomes, 'cifar100', tmp_path / 'out').read_text()
    assert '| vit-sl-s0 | done | 64.00 | 5 | 5 |' in report
    assert '| vit-sl-s1 | diverged at epoch 3 (NaN) | 62.00 (before it diverged) | 2 | 5 |' in report
    assert '| vit | SL | `sl_vit_32` | 2/2 | 63.00 ± 1.41 (1 diverged partway: best before) | - | 76.92 |' in report
    results = json.loads((tmp_path / 'out' / 'results.json').read_text())
    assert [r['summary']['diverged_epoch'] for r in results['runs']] == [None, 3]
    assert [r['status'] for r in results['runs']] == ['done', 'done']
    assert (results['rows'][0]['diverged_partway'], results['rows'][0]['diverged']) == (1, 0)
    left = next(ax for ax in saved_figures['top1.png'].axes if ax.get_ylabel() == 'best top-1 (%)')
    assert [t.get_text() for t in left.get_xticklabels()] == ['vit\nSL\n(1 diverged partway: best before)']
    curves = saved_figures['curves.png'].axes[0]
    assert [t.get_text() for t in curves.get_legend().get_texts()] == ['SL', 'SL (diverged)']
    assert [line.get_linestyle() for line in curves.get_lines()] == ['-', '-.']
    docs = (Path(__file__).parents[1] / 'docs' / 'reproduce.md').read_text()
    assert 'diverged at epoch 3 (NaN)' in docs and 'diverged_epoch' in docs


def test_a_seed_that_diverged_is_named_beside_the_mean_of_the_others(tmp_path, saved_figures):
    """SL over seeds 0 and 1, seed 1 NaN: the report's row read 51.00 with 1/2 seeds, the chart's bar "SL (1 seed)" and
    its gain +19.50 over the baseline, nothing said that a seed of the row diverged."""
    outcomes = [_report_outcome('vit', 'base', 0, 70.), _report_outcome('vit', 'base', 1, 72.),
                _report_outcome('vit', 'sl', 0, 74.), _report_outcome('vit', 'sl', 1, 74.)]
    outcomes[3].summary = dict(best_top1=None, best_top5=None, best_epoch=None, epochs=3, last_epoch=3)
    report = write_report(outcomes, 'cifar100', tmp_path).read_text()
    assert '| vit | SL | `sl_vit_32` | 1/2 | 74.00 (1 more diverged) | +3.00 | 76.92 |' in report
    assert '| vit | baseline | `sl_vit_32` spt=False lsa=False | 2/2 | 71.00 ± 1.41 | - |' in report
    top1 = saved_figures['top1.png']
    left = next(ax for ax in top1.axes if ax.get_ylabel() == 'best top-1 (%)')
    right = next(ax for ax in top1.axes if ax.get_ylabel().startswith('top-1 gain'))
    assert [t.get_text() for t in left.get_xticklabels()] == ['vit\nbaseline\n(2 seeds)',
                                                              'vit\nSL\n(1 seed)\n(1 more diverged)']
    assert [t.get_text() for t in right.get_xticklabels()] == ['vit\nSL\n(1 more diverged)']
    outcomes[1].summary = dict(outcomes[3].summary)  # a baseline seed diverged too: the gain says so
    write_report(outcomes, 'cifar100', tmp_path)
    right = next(ax for ax in saved_figures['top1.png'].axes if ax.get_ylabel().startswith('top-1 gain'))
    assert [t.get_text() for t in right.get_xticklabels()] == ['vit\nSL\n(1 more diverged)\n'
                                                               '(baseline: 1 more diverged)']


@pytest.mark.parametrize('where,what', [
    ('runs/vit-sl-s0/sessions.json', "timm-sl reproduce's sessions.json"),
    ('runs/vit-base-s0/done.json', "timm-sl reproduce's done.json"),
    ('runs/vit-sl-s0/command.txt', "the run's train.py command line"),
    ('results.json', 'the results.json of the report'), ('top1.png', 'the top1.png of the report')])
def test_a_folder_where_reproduce_writes_a_file_is_named_before_any_run(fake_train, tmp_path, capsys, where, what):
    """A folder in a run's bookkeeping (sessions.json) stopped the sweep after a run had trained, with a traceback."""
    out = tmp_path / 'out'
    (out / where).mkdir(parents=True)
    (out / where / 'mine').write_text('mine')
    assert _exit_status(_reproduce_args(tmp_path, out, fake_train)) == 2
    assert _one_error(capsys) == f'{out / where} is a folder; expected {what}; allowed: another --out'
    assert not list(out.glob('runs/*/argv.log')) and (out / where / 'mine').read_text() == 'mine'  # nothing ran


@pytest.mark.skipif(not hasattr(os, 'mkfifo'), reason='no FIFOs')
def test_a_fifo_where_reproduce_reads_or_writes_a_file_is_named(fake_train, tmp_path, capsys):
    """A FIFO at a run's sessions.json, train.log or command.txt, or at report.md: reproduce waited on it for ever
    (reading the log of a finished run, writing the others); at run.json it was taken for no record (the run compared
    by its args.yaml only and extended). At train.py's own files: a wrong reason, or train.py waiting for ever."""
    done = tmp_path / 'done'
    assert main(_reproduce_args(tmp_path, done, fake_train, train_args=['--epochs', '1'])) == 0
    capsys.readouterr()
    for where, what in [('runs/vit-base-s0/train.log', "timm-sl reproduce's train.log"),
                        ('runs/vit-sl-s0/sessions.json', "timm-sl reproduce's sessions.json"),
                        ('runs/vit-sl-s0/run.json', "timm-sl reproduce's run.json"),
                        ('runs/vit-sl-s0/command.txt', "the run's train.py command line"),
                        ('report.md', 'the report.md of the report')]:
        out = tmp_path / where.replace('/', '-')
        shutil.copytree(done, out)
        (out / where).unlink()
        os.mkfifo(out / where)
        assert _exit_status(_reproduce_args(tmp_path, out, fake_train)) == 2
        assert _one_error(capsys) == (f'{out / where} is a FIFO (named pipe), not a regular file; expected {what}; '
                                      f'allowed: another --out')
        assert len(read_summary_rows(out / 'runs' / 'vit-sl-s0' / 'summary.csv')) == 1  # not extended
    # train.py's own: 'summary.csv holds no epoch', 'last.pth.tar is missing'; at args.yaml train.py waited for ever
    for name, what in [('summary.csv', "train.py's summary.csv"), ('last.pth.tar', 'a checkpoint file'),
                       ('args.yaml', "train.py's args.yaml")]:
        out = tmp_path / name
        shutil.copytree(done, out)
        (out / 'runs' / 'vit-sl-s0' / name).unlink()
        os.mkfifo(out / 'runs' / 'vit-sl-s0' / name)
        assert _exit_status(_reproduce_args(tmp_path, out, fake_train)) == 2
        assert _one_error(capsys) == (f"{out / 'runs' / 'vit-sl-s0' / name} is a FIFO (named pipe), not a regular "
                                      f"file; expected {what}; allowed: another --out")

def test_a_file_that_cannot_be_written_midway_stops_every_run_and_writes_the_report(fake_train, tmp_path, capsys,
                                                                                   monkeypatch):
    """done.json turning into a folder while its run trained raised out of the sweep: the other train.py went on
    running (an orphan, which a re-run would double), and no report was written."""
    monkeypatch.setenv('FAKE_HANG', 'vit-sl-s0')  # runs while vit-base-s0 finishes
    monkeypatch.setenv('FAKE_FOLDER', 'done.json')
    out = tmp_path / 'out'
    args = _reproduce_args(tmp_path, out, fake_train, train_args=['--epochs', '1'])
    args.insert(args.index('--'), '--jobs')
    args.insert(args.index('--'), '2')
    try:
        assert _exit_status(args) == 2
        pid = int((out / 'runs' / 'hang.pid').read_text())
        with pytest.raises(ProcessLookupError):  # stopped (and reaped) by the sweep
            os.kill(pid, 0)
    finally:
        if (out / 'runs' / 'hang.pid').exists():
            try:
                os.kill(int((out / 'runs' / 'hang.pid').read_text()), 9)
            except ProcessLookupError:
                pass
    assert _one_error(capsys) == (
        f'{out}/runs/vit-base-s0/done.json: is a directory; the sweep stopped every run as on Ctrl-C; allowed: make '
        f'it writable (a file, not a folder), then run the same command again to resume')
    report = (out / 'report.md').read_text()
    assert '| vit-base-s0 | done | 30.00 |' in report and '| vit-sl-s0 | interrupted | - |' in report
    sessions = json.loads((out / 'runs' / 'vit-sl-s0' / 'sessions.json').read_text())
    assert [s['status'] for s in sessions] == ['interrupted']


def test_report_files_reproduce_did_not_write_are_not_replaced(fake_train, tmp_path, capsys):
    """A user's report.md in --out was overwritten without a word."""
    out = tmp_path / 'mine'
    out.mkdir()
    (out / 'report.md').write_text('notes\n')
    args = _reproduce_args(tmp_path, out, fake_train, train_args=['--epochs', '1'])
    assert _exit_status(args) == 2
    assert _one_error(capsys) == (
        f'{out}/report.md would be replaced by the report but was not written by timm-sl reproduce, or was changed '
        f'since (report_manifest.json records what it wrote); allowed: move it away, another --out, or --overwrite to '
        f'replace it')
    assert (out / 'report.md').read_text() == 'notes\n'
    assert sorted(p.name for p in out.iterdir()) == ['report.md']  # nothing made: no runs/, no run started
    (out / 'report.md').unlink()
    assert main(args) == 0  # its own report files are rewritten by the same sweep again
    assert main(args) == 0 and 'finished earlier, skipped' in capsys.readouterr().out
    (out / 'top1.png').write_bytes(b'edited')
    assert _exit_status(args) == 2
    assert _one_error(capsys).startswith(f'{out}/top1.png would be replaced by the report but was not written')
    assert (out / 'top1.png').read_bytes() == b'edited'
    assert main(args[:args.index('--')] + ['--overwrite'] + args[args.index('--'):]) == 0
    assert (out / 'top1.png').read_bytes().startswith(b'\x89PNG')


def test_rows_are_labelled_by_what_their_switches_make_them(fake_train, tmp_path, capsys, saved_figures):
    """``-- --model-kwargs lsa_mask=False`` makes the SL row the paper's ST (SPT + learned temperature, no mask): the
    report, the bars and the curves said "SL" (the demo said "ST")."""
    out = tmp_path / 'out'
    assert main(_reproduce_args(tmp_path, out, fake_train, train_args=['--epochs', '1', '--model-kwargs',
                                                                      'lsa_mask=False'])) == 0
    capsys.readouterr()
    report = (out / 'report.md').read_text()
    assert '| vit | ST |' in report and '| vit | baseline |' in report and '| vit | SL |' not in report
    bars = next(ax for ax in saved_figures['top1.png'].axes if ax.get_ylabel() == 'best top-1 (%)')
    assert [t.get_text().split('\n')[:2] for t in bars.get_xticklabels()] == [['vit', 'baseline'], ['vit', 'ST']]
    assert [ax.get_title() for ax in saved_figures['top1.png'].axes][-1] == 'ST − baseline'
    curves = [line.get_label() for ax in saved_figures['curves.png'].axes for line in ax.get_lines()]
    assert 'ST' in curves and 'SL' not in curves
    ticks = saved_figures['curves.png'].axes[0].get_xticks()  # one epoch: one whole tick, none between
    assert list(ticks) == [1]


def test_top1_chart_names_the_recipe_and_the_kwargs_every_row_got(fake_train, tmp_path, capsys, saved_figures):
    """The chart of a depth=1 sweep read "vit baseline" / "vit SL" under "data: image folder ...": the paper's ViT."""
    out = tmp_path / 'out'
    assert main(_reproduce_args(tmp_path, out, fake_train, train_args=['--epochs', '1', '--model-kwargs',
                                                                      'depth=1'])) == 0
    top1 = saved_figures['top1.png']
    assert top1.get_suptitle().startswith('cifar10 recipe, every row with depth=1; data: '), top1.get_suptitle()
    assert 'Every row trained with the model kwargs depth=1 besides its own' in (out / 'report.md').read_text()
    from timm_sl.tools.reproduce import _bar_label
    rows = [dict(family='vit', variant='sl', model_kwargs=dict(depth=1), seeds=1, mean=1.),
            dict(family='vit', variant='base', model_kwargs=dict(spt=False, lsa=False), seeds=1, mean=1.)]
    assert [_bar_label(r, extra=True) for r in rows] == ['vit\nSL\ndepth=1', 'vit\nbaseline']


def test_a_run_folder_linked_out_of_its_runs_folder_is_refused(fake_train, tmp_path, capsys):
    """out2/runs/vit-base-s0 a link to out1/runs/vit-base-s0: the lock of out2 (in out2/runs) did not hold it, so a
    reproduce into out1 and one into out2 could train that run at once, over each other."""
    first, second = tmp_path / 'out1', tmp_path / 'out2'
    (first / 'runs' / 'vit-base-s0').mkdir(parents=True)
    (second / 'runs').mkdir(parents=True)
    (second / 'runs' / 'vit-base-s0').symlink_to(first / 'runs' / 'vit-base-s0')
    assert _exit_status(_reproduce_args(tmp_path, second, fake_train, train_args=['--epochs', '1'])) == 2
    assert _one_error(capsys) == (
        f'{second}/runs/vit-base-s0 is a link to {first}/runs/vit-base-s0, outside {second}/runs, whose lock keeps two '
        f'reproduce from training a run at once: another --out could train that folder beside this one; allowed: '
        f'remove the link (to keep the runs elsewhere, link {second}/runs itself)')
    assert list((first / 'runs' / 'vit-base-s0').iterdir()) == []
    (second / 'runs' / 'vit-base-s0').unlink()  # a link to a folder beside it in the same runs/: one lock holds both
    (second / 'runs' / 'old').mkdir()
    (second / 'runs' / 'vit-base-s0').symlink_to('old')
    assert main(_reproduce_args(tmp_path, second, fake_train, train_args=['--epochs', '1'])) == 0
    assert (second / 'runs' / 'old' / 'summary.csv').is_file()


@pytest.mark.parametrize('kwargs, families, error', [
    (['drop_path_rate=0.1', 'depth=1'], ('vit',), "--model-kwargs drop_path_rate=0.1 depth=1 after --: train.py gives "
     "the model drop_path_rate itself (every run would fail: got multiple values); allowed: -- --drop-path instead"),
    (['depth=1'], ('vit', 'pit'), "--model-kwargs depth=1 after --: sl_pit_32 with spt=False lsa=False spt_pool=False "
     "depth=1 cannot be built (every run of it would fail): depth=1 is invalid; allowed: a non-empty tuple of ints "
     ">= 0 (one per stage)."),
    (['depht=1'], ('vit',), "--model-kwargs depht=1 after --: sl_vit_32 with spt=False lsa=False depht=1 cannot be "
     "built (every run of it would fail): sl_vit_32 got unknown model kwargs ['depht']; allowed: "),
    # depth=0 builds, without an attention layer: the 'SL' row trained SPT alone (LSA had nothing to act on) and the
    # report compared it with a baseline as SL (found by fuzzing the kwargs after --; the demo refused it already)
    (['depth=0'], ('vit',), "--model-kwargs depth=0 after --: sl_vit_32 with spt=False lsa=False depth=0 has no "
     "attention layer left (an SL row would be SPT alone, LSA having nothing to act on), so the Table 2 rows would "
     "not be what they are labelled; allowed: kwargs that keep one (depth >= 1)"),
])
def test_model_kwargs_no_run_could_build_with_are_refused(fake_train, tmp_path, capsys, kwargs, families, error):
    """-- --model-kwargs drop_path_rate=0.1 (which train.py passes create_model itself), depth=1 for PiT (per stage)
    or a misspelt key: every run started, failed in train.py's create_model, and left a report of failures."""
    out = tmp_path / 'out'
    argv = _reproduce_args(tmp_path, out, fake_train, families=families,
                           train_args=['--epochs', '1', '--model-kwargs', *kwargs])
    assert _exit_status(argv) == 2
    assert _one_error(capsys).startswith(error)
    assert not out.exists()


def test_a_run_folder_linked_deeper_into_its_runs_folder_is_kept(fake_train, tmp_path):
    """A link into a folder below its own runs/ (runs/vit-base-s0 -> runs/archive/old) is held by that runs/ lock."""
    out = tmp_path / 'out'
    (out / 'runs' / 'archive' / 'old').mkdir(parents=True)
    (out / 'runs' / 'vit-base-s0').symlink_to(Path('archive') / 'old')
    assert main(_reproduce_args(tmp_path, out, fake_train, train_args=['--epochs', '1'])) == 0
    assert (out / 'runs' / 'archive' / 'old' / 'summary.csv').is_file()


@pytest.mark.parametrize('name', ['args.yaml', 'summary.csv', 'last.pth.tar'])
def test_a_link_where_train_py_writes_a_file_is_refused(fake_train, tmp_path, capsys, name):
    """runs/vit-base-s0/args.yaml a link to a user's file: train.py wrote its arguments through it (the user's file
    replaced); summary.csv's rows were appended to the file it names, last.pth.tar resumed another run."""
    out = tmp_path / 'out'
    notes = tmp_path / 'notes.txt'
    notes.write_text('mine')
    (out / 'runs' / 'vit-base-s0').mkdir(parents=True)
    (out / 'runs' / 'vit-base-s0' / name).symlink_to(notes)
    assert _exit_status(_reproduce_args(tmp_path, out, fake_train, train_args=['--epochs', '1'])) == 2
    assert _one_error(capsys) == (
        f'{out}/runs/vit-base-s0/{name} is a link to {notes} where timm-sl reproduce writes a file, which would '
        f'replace the file it links to; allowed: remove the link, or another --out')
    assert notes.read_text() == 'mine'


def test_a_link_to_nothing_where_a_run_folder_goes_is_refused(fake_train, tmp_path, capsys):
    """runs/vit-base-s0 a link to a folder since deleted: the sweep started, stopped at it with 'file exists ...
    allowed: make it writable (a file, not a folder)', and wrote a report of no runs."""
    out = tmp_path / 'out'
    (out / 'runs').mkdir(parents=True)
    (out / 'runs' / 'vit-base-s0').symlink_to('gone')
    assert _exit_status(_reproduce_args(tmp_path, out, fake_train, train_args=['--epochs', '1'])) == 2
    assert _one_error(capsys) == (
        f'{out}/runs/vit-base-s0 is a link to gone, which does not exist; expected a run folder (allowed: a link to a '
        f'folder, or no link, or another --out)')
    assert not (out / 'report.md').exists()


def test_a_folder_prepared_again_between_calls_is_other_data(fake_train, tmp_path, capsys):
    """A Fashion-MNIST folder prepared again with another --limit between two calls: the same command resumed every
    run on the other images (its first epochs trained on 100, the next on 200), and a finished run was reported as
    trained on them, silently."""
    data = _folders(tmp_path / 'data', DIGITS)

    def prepare(limit: int, source: str = 'b0564c3e') -> None:
        counts = {str(d): limit // 10 for d in range(10)}
        (data / 'fashion_mnist.json').write_text(json.dumps(dict(
            dataset='fashion-mnist', limit=limit, files={'train-images-idx3-ubyte': {'sha256': source}},
            counts={'train': counts, 'test': counts, 'extra': counts})))
    prepare(100)
    out = tmp_path / 'out'
    argv = _reproduce_args(data, out, fake_train, 'fashion-mnist', train_args=['--epochs', '1'])
    assert main(argv) == 0
    capsys.readouterr()
    recorded = json.loads((out / 'runs' / 'vit-base-s0' / 'run.json').read_text())['data']['prepared']
    assert recorded.startswith('fashion_mnist.json: 100 train, 100 test images, sha256 ')
    prepare(200)
    for epochs in ('1', '2'):  # a finished run is not reported as trained on them, nor resumed on them
        assert _exit_status(argv[:-1] + [epochs]) == 2
        error = _one_error(capsys)
        assert error.startswith(f"{out / 'runs' / 'vit-base-s0'} was trained with other settings (data prepared: "
                                f"'{recorded}' -> 'fashion_mnist.json: 200 train, 200 test images, sha256 ")
    prepare(100, source='0ae29f65')  # other source files, as many images
    assert _exit_status(argv) == 2
    assert '(data prepared: ' in _one_error(capsys)
    prepare(100)  # prepared again as before: the same images
    assert main(argv[:-1] + ['2']) == 0
    assert 'vit-base-s0 started (resuming: 1/2 epochs done)' in capsys.readouterr().out


def test_a_run_stopped_early_is_not_finished_by_a_smaller_epochs(fake_train, tmp_path, capsys, monkeypatch):
    """A run interrupted after 3 of 6 epochs, then the same command with --epochs 2: it was skipped as 'finished
    earlier' and reported as done, its best top-1 that of a schedule stopped a third of the way."""
    out = tmp_path / 'out'
    argv = _reproduce_args(tmp_path, out, fake_train, train_args=['--epochs', '6'])
    _stopped(argv, monkeypatch, 'EPOCHS_BEFORE_KILL', '3')
    capsys.readouterr()
    base = out / 'runs' / 'vit-base-s0'
    for epochs in ('2', '3'):
        assert _exit_status(argv[:-1] + [epochs]) == 2
        assert _one_error(capsys) == (
            f'{base} stopped after 3 of the 6 epochs train.py was last started with (interrupted), and 1 more run '
            f'folder alike: --epochs {epochs} would not continue it, and would report it as finished; allowed: '
            f'--epochs 4 or more to continue it '
            f'(train.py rebuilds the schedule for them), or another --out')
    assert main(argv[:-1] + ['4']) == 0  # continued to a schedule of 4
    assert 'vit-base-s0 started (resuming: 3/4 epochs done)' in capsys.readouterr().out
    assert main(argv[:-1] + ['2']) == 0  # finished at 4: a smaller --epochs leaves it as it is (documented)
    assert 'vit-base-s0 finished earlier, skipped' in capsys.readouterr().out
    assert main(argv[:-1] + ['6']) == 0
    monkeypatch.setenv('EPOCHS_BEFORE_KILL', '7')  # finished at 6, then interrupted on the way to 9
    assert _exit_status(argv[:-1] + ['9']) == 1
    monkeypatch.delenv('EPOCHS_BEFORE_KILL')
    capsys.readouterr()
    assert _exit_status(argv) == 2
    assert 'stopped after 7 of the 9 epochs' in _one_error(capsys)


def test_a_run_interrupted_in_its_warm_up_prefix_epochs_is_resumed(fake_train, tmp_path, capsys, monkeypatch):
    """-- --epochs 2 --warmup-epochs 1 --warmup-prefix: train.py trains 3 epochs (the warm-up before the 2); a run
    interrupted after 2 was skipped by the same command as 'finished earlier' and reported as done, and the progress
    read '3/2 epochs done'."""
    out = tmp_path / 'out'

    def argv(epochs: str = '2') -> list:
        return _reproduce_args(tmp_path, out, fake_train, train_args=['--epochs', epochs, '--warmup-epochs', '1',
                                                                     '--warmup-prefix'])
    monkeypatch.setenv('EPOCHS_BEFORE_KILL', '2')
    assert _exit_status(argv()) == 1
    monkeypatch.delenv('EPOCHS_BEFORE_KILL')
    assert 'vit-base-s0 failed after' in capsys.readouterr().out
    assert main(argv()) == 0
    printed = capsys.readouterr().out
    assert 'vit-base-s0 started (resuming: 2/3 epochs done)' in printed and 'finished earlier' not in printed
    assert 'vit-base-s0: 3/3 epochs done' in printed
    runs = json.loads((out / 'results.json').read_text())['runs']
    assert [r['summary']['last_epoch'] for r in runs] == [3, 3]
    monkeypatch.setenv('EPOCHS_BEFORE_KILL', '4')  # finished at 3, then interrupted on the way to 4 + 1
    assert _exit_status(argv('4')) == 1
    monkeypatch.delenv('EPOCHS_BEFORE_KILL')
    capsys.readouterr()
    assert _exit_status(argv()) == 2
    assert _one_error(capsys).startswith(
        f'{out / "runs" / "vit-base-s0"} stopped after 4 of the 5 epochs train.py was last started with (interrupted), '
        f'and 1 more run folder alike: --epochs 2 would not continue it, and would report it as finished; allowed: '
        f'--epochs 4 or more to continue it')


def test_a_split_folder_given_for_the_data_folder_is_one_line(fake_train, tmp_path, capsys):
    """--data-dir DATA/train: two lines, 'DATA/train/train not found' and 'DATA/train/test not found', neither saying
    that the folder given is a split folder."""
    data = _folders(tmp_path / 'data', DIGITS)
    out = tmp_path / 'out'
    assert _exit_status(_reproduce_args(data / 'train', out, fake_train, 'svhn', train_args=['--epochs', '1'])) == 2
    assert _one_error(capsys) == (
        f'{data}/train holds neither train/ nor test/, the folders the svhn recipe reads its splits from '
        f'({data}/train/train/<class>/<image>); it holds class folders of images itself, as a split folder does: '
        f'pass the folder that holds the splits, --data-dir {data}')
    assert not out.exists()


@pytest.mark.parametrize('given', [['--lr-base', '5e-4'], ['--lr-base-size=512'], ['--lr', '1e-3', '--lr-base-scale',
                                                                                     'sqrt']])
def test_a_base_learning_rate_after_the_separator_is_refused(fake_train, tmp_path, capsys, given):
    """-- --lr-base 5e-4 was passed on and ignored: train.py derives the learning rate from it only without --lr, which
    reproduce gives every run, so each trained at 3e-3 / 1e-3 and run.json recorded --lr-base as a setting."""
    out = tmp_path / 'out'
    assert _exit_status(_reproduce_args(tmp_path, out, fake_train, train_args=['--epochs', '1', *given])) == 2
    flag = next(a for a in given if a.startswith('--lr-')).split('=')[0]
    assert _one_error(capsys) == (
        f"{flag} after -- would be ignored: train.py derives the learning rate from --lr-base, --lr-base-size, "
        f"--lr-base-scale only without --lr, and reproduce gives every run its row's --lr (the paper's: ViT 3e-3, the "
        f"others 1e-3); allowed: -- --lr VALUE, for every run")
    assert not out.exists()


@pytest.mark.parametrize('dataset,given,says', [
    ('cifar10', ['--img-size', '16'], "--img-size 16 after -- would be ignored: train.py reads it only without "
     "--input-size, which the cifar10.yaml recipe sets (3 32 32), so every run would train at that size; allowed: -- "
     "--input-size 3 16 16 --model-kwargs img_size=16 (the model is built for its input size)"),
    ('svhn', ['--input-size', '3', '32', '32', '--img-size=64'], "--img-size 64 after -- would be ignored: train.py "
     "reads it only without --input-size, which is given after -- (3 32 32)"),
    ('svhn', ['--train-num-samples', '20'], "--train-num-samples 20 after -- would be ignored: train.py reads every "
     "image of the split once an epoch from an image folder (it gives --train-num-samples only to its hfids/, tfds/, "
     "wds/ readers); allowed: a data folder of fewer images (a copy of {data} with a few images per class in train/ "
     "and test/)"),
    ('fashion-mnist', ['--train-num-samples', '20'], "--train-num-samples 20 after -- would be ignored: train.py reads "
     "every image of the split once an epoch from an image folder (it gives --train-num-samples only to its hfids/, "
     "tfds/, wds/ readers); allowed: a data folder of fewer images (timm-sl prepare-fashion-mnist DATA --limit N, as "
     "--data-dir DATA)"),
    ('cifar10', ['--train-num-samples', '20'], "--train-num-samples 20 after -- would be ignored: train.py reads every "
     "image of the split once an epoch from torch/cifar10 (it gives --train-num-samples only to its hfids/, tfds/, "
     "wds/ readers); allowed: a data folder of a few images per class, read as an image folder (-- --dataset '', its "
     "train/ and test/ holding class folders)"),
    ('cifar10', ['--val-num-samples=5'], "--val-num-samples 5 after -- would be ignored: train.py reads every image "
     "of the split once an epoch from torch/cifar10"),
    ('svhn', ['--epoch-repeats', '2'], "--epoch-repeats 2 after -- would be ignored: train.py reads every image of "
     "the split once an epoch from an image folder (it gives --epoch-repeats only to its hfids/, tfds/, wds/ readers); "
     "allowed: more --epochs"),
    ('svhn', ['--train-split', 'train[:10%]'], "the train split 'train[:10%]' would be read as the whole train split: "
     "train.py reads an image folder's split as its folder and ignores [:10%] (only the hfds/, hfids/ and tfds/ "
     "readers take part of a split); allowed: --train-split train, or a data folder of fewer images (a copy of "
     "{data} with a few images per class in train/ and test/)"),
    ('svhn', ['--dataset', 'torch/folder', '--val-split', 'test[:50%]'], "the val split 'test[:50%]' would be read "
     "as the whole test split"),
    ('cifar10', ['--val-split', 'test[:10%]'], "the val split 'test[:10%]' would be read as the whole test split: "
     "train.py reads torch/cifar10's split as its whole training or test set and ignores [:10%]"),
])
def test_data_arguments_train_py_would_ignore_are_refused(fake_train, tmp_path, capsys, dataset, given, says):
    """-- --img-size 16 trained every run at the recipe's 32 px (train.py reads it only without --input-size, which
    every recipe sets), -- --train-num-samples 20 and -- --train-split 'train[:10%]' on every image of the split, once
    an epoch with -- --epoch-repeats 2 (an image folder's reader takes none of them), while the report named the split
    as given. The way to fewer images named prepare-fashion-mnist --limit for every recipe, which writes
    Fashion-MNIST, not fewer SVHN images."""
    data = _folders(tmp_path / 'data', [] if dataset == 'cifar10' else DIGITS)
    out = tmp_path / 'out'
    fake_train.write_text(FAKE_TRAIN.replace("'--val-num-samples'", "'--val-num-samples', '--epoch-repeats'"))
    assert _refused(_reproduce_args(data, out, fake_train, dataset, train_args=['--epochs', '1', *given]),
                    capsys).startswith(says.replace('{data}', str(data)))


@pytest.mark.parametrize('given', [['--start-epoch', '0'], ['--start-epoch=3'], ['--start-ep', '1']])
def test_a_start_epoch_after_the_separator_is_refused(fake_train, tmp_path, capsys, given):
    """-- --start-epoch 3 started every new run at epoch 3 (train.py skips the epochs before it) and trained a resumed
    one's epochs again from there (it overrides the epoch of --resume), while the report counted the epochs as trained
    once."""
    fake_train.write_text(FAKE_TRAIN.replace("'--val-num-samples'", "'--val-num-samples', '--start-epoch'"))
    out = tmp_path / 'out'
    assert _refused(_reproduce_args(tmp_path, out, fake_train, train_args=['--epochs', '4', *given]), capsys) == (
        '--start-epoch after -- would start every run at that epoch, a resumed one too (train.py takes it over the '
        'epoch of --resume): a new run would skip the epochs before it, a resumed one train its epochs again, and the '
        'report would count them as trained; allowed: leave it out (reproduce resumes each run at the epoch it '
        'reached)')


@pytest.mark.parametrize('dataset,given,says', [
    ('cifar10', ['--val-split', 'train'], "the val split 'train' is the training set of torch/cifar10, which train.py "
     "reads for the split names train / training: every top-1 would be measured on the images the run trains on; "
     "allowed: --val-split test (the recipe's, or any other name: the test set)"),
    ('cifar100', ['--val-split', 'training'], "the val split 'training' is the training set of torch/cifar100"),
    ('cifar10', ['--train-split', 'Train'], "the train split 'Train' is the test set of torch/cifar10 (train.py reads "
     "it as the training set only for the split names train / training, as written): every run would train on the "
     "images its top-1 is measured on; allowed: --train-split train (the recipe's)"),
    ('cifar100', ['--train-split', 'test', '--val-split', 'train'], "the train split 'test' is the test set of "
     "torch/cifar100"),
    # timm reads a torchvision dataset by what follows the second '/': torch/x/cifar10 is CIFAR-10
    ('cifar10', ['--dataset', 'torch/x/cifar10', '--train-split', 'test'], "the train split 'test' is the test set "
     "of torch/cifar10"),
])
def test_cifar_splits_that_read_one_set_are_refused(fake_train, tmp_path, capsys, dataset, given, says):
    """-- --val-split train with a CIFAR recipe was accepted: torchvision's CIFAR has a training set and a test set,
    and train.py reads every split name but 'train' / 'training' as the test set, so every top-1 was measured on the
    training images (the image folder datasets refused it); --train-split Train trained on the test set."""
    out = tmp_path / 'out'
    assert _exit_status(_reproduce_args(tmp_path, out, fake_train, dataset, train_args=['--epochs', '1', *given])) == 2
    assert _one_error(capsys).startswith(says)
    assert not out.exists()


@pytest.mark.parametrize('dataset,train_args,paper', [
    ('svhn', ['--train-split', 'extra'], False),  # SVHN's extra images: not the paper's training set
    ('svhn', ['--train-split', 'training'], True),  # a synonym: the same folder
    ('cifar10', ['--val-split', 'validation'], True),  # torchvision's test set, as 'test'
    ('cifar10', ['--train-split', 'training'], True),
])
def test_no_paper_number_beside_runs_of_other_splits(fake_train, tmp_path, capsys, dataset, train_args, paper):
    """-- --train-split extra with the svhn recipe trained on SVHN's 531,131 extra images, and the report put the
    paper's top-1 (trained on the 73,257 of train) beside it."""
    data = _folders(tmp_path / 'data', [] if dataset == 'cifar10' else
                    DIGITS + [f'extra/{d}/0.png' for d in range(10)])
    out = tmp_path / 'out'
    assert main(_reproduce_args(data, out, fake_train, dataset, train_args=['--epochs', '1', *train_args])) == 0
    rows = json.loads((out / 'results.json').read_text())['rows']
    assert [r['mean'] is not None and r['paper'] is not None for r in rows] == [paper] * 2


@pytest.mark.parametrize('given,says', [
    (['--drop-connect', '0.1'], "--drop-connect 0.1 after -- would be ignored: train.py takes it and never reads it "
     "(deprecated), so every run would train without it; allowed: --drop-path"),
    (['--model-ema-decay', '0.999'], "--model-ema-decay 0.999 after -- would be ignored: train.py reads it only with "
     "--model-ema, which neither the cifar10.yaml recipe nor the arguments after -- give, so every run would train "
     "without it; allowed: -- --model-ema ... with it, or leave it out"),
    (['--train-batches-per-epoch=5'], "--train-batches-per-epoch 5 after -- would be ignored: train.py reads it only "
     "with --train-img-sizes"),
    (['--bce-target-thresh', '0.2'], "--bce-target-thresh 0.2 after -- would be ignored: train.py reads it only with "
     "--bce-loss"),
    (['--distill-loss-weight', '0.5'], "--distill-loss-weight 0.5 after -- would be ignored: train.py reads it only "
     "with --kd-model-name"),
    (['--tta', '2'], "--tta 2 after -- would make every top-1 wrong: train.py's validation makes no augmented copies, "
     "so --tta N averages the outputs of N different validation images and scores them by the first one's label; "
     "allowed: leave it out"),
])
def test_train_py_arguments_it_would_not_act_on_are_refused(fake_train, tmp_path, capsys, given, says):
    """-- --drop-connect 0.1 (train.py never reads it), -- --model-ema-decay without --model-ema and
    -- --train-batches-per-epoch without --train-img-sizes trained every run without them while run.json and each
    card listed them."""
    flags = "'--drop-connect', '--model-ema-decay', '--model-ema', '--train-batches-per-epoch', '--train-img-sizes', " \
            "'--bce-target-thresh', '--bce-loss', '--distill-loss-weight', '--kd-model-name', '--tta', "
    fake_train.write_text(FAKE_TRAIN.replace("'--val-num-samples'", flags + "'--val-num-samples'"))
    out = tmp_path / 'out'
    assert _refused(_reproduce_args(tmp_path, out, fake_train, train_args=['--epochs', '1', *given]),
                    capsys).startswith(says)


def test_train_py_arguments_with_their_switch_are_passed_on(fake_train, tmp_path):
    """A switch's setting given with the switch (-- --model-ema --model-ema-decay 0.999) is passed to every run."""
    flags = "'--model-ema-decay', '--tta', "
    fake_train.write_text(FAKE_TRAIN.replace("'--val-num-samples'", flags + "'--val-num-samples'")
                          .replace("p.add_argument('--warmup-prefix'", "p.add_argument('--model-ema', "
                                   "action='store_true')\np.add_argument('--warmup-prefix'"))
    out = tmp_path / 'out'
    given = ['--epochs', '1', '--model-ema', '--model-ema-decay', '0.999', '--tta', '1']
    assert _exit_status(_reproduce_args(tmp_path, out, fake_train, train_args=given)) == 0
    assert (out / 'runs' / 'vit-sl-s0' / 'argv.log').read_text().split()[-len(given):] == given


@pytest.mark.parametrize('given,says', [
    (['--jsd-loss'], "--jsd-loss after -- would stop every run at its start (train.py asserts it only with "
     "--aug-splits N >= 2); allowed: -- --aug-splits 3 --jsd-loss --mixup 0 --cutmix 0, or leave it out"),
    (['--split-bn', '--aug-splits', '0'], "--split-bn after -- would stop every run at its start (train.py asserts it "
     "only with --aug-splits N >= 2 or --resplit)"),
    (['--aug-splits', '3', '--jsd-loss'], "--aug-splits 3 after -- would stop every run at its start (train.py asserts "
     "that its prefetcher mixes no augmentation splits, and the cifar10.yaml recipe sets mixup / cutmix); allowed: -- "
     "--aug-splits 3 --mixup 0 --cutmix 0"),
])
def test_train_py_arguments_that_stop_every_run_on_an_assertion_are_refused(fake_train, tmp_path, capsys, given,
                                                                             says):
    """-- --aug-splits 3 --jsd-loss (timm's AugMix recipe) with the recipes' mixup, or --jsd-loss alone, started every
    run to stop it at once, each run's reason in the report a bare 'AssertionError'."""
    fake_train.write_text(FAKE_TRAIN.replace("'--val-num-samples'", "'--aug-splits', '--val-num-samples'").replace(
        "p.add_argument('--warmup-prefix'", "p.add_argument('--jsd-loss', action='store_true')\n"
        "p.add_argument('--split-bn', action='store_true')\np.add_argument('--warmup-prefix'"))
    out = tmp_path / 'out'
    assert _refused(_reproduce_args(tmp_path, out, fake_train, train_args=['--epochs', '1', *given]),
                    capsys).startswith(says)
    ok = ['--epochs', '1', '--aug-splits', '3', '--jsd-loss', '--mixup', '0', '--cutmix', '0']
    assert _exit_status(_reproduce_args(tmp_path, out, fake_train, train_args=ok)) == 0


def test_a_resume_may_change_what_does_not_change_what_a_run_learns(fake_train, tmp_path, capsys):
    """A finished or stopped run resumed with -- --validation-batch-size 8 --grad-checkpointing (to fit a smaller GPU)
    was refused as trained with other settings, though neither changes what it learns."""
    fake_train.write_text(FAKE_TRAIN.replace("'--val-num-samples'", "'--validation-batch-size', '--val-num-samples'")
                          .replace("p.add_argument('--warmup-prefix'", "p.add_argument('--grad-checkpointing', "
                                   "action='store_true')\np.add_argument('--warmup-prefix'"))
    out = tmp_path / 'out'
    assert _exit_status(_reproduce_args(tmp_path, out, fake_train, train_args=['--epochs', '1', '-b', '32'])) == 0
    capsys.readouterr()
    again = ['--epochs', '2', '-b', '32', '--validation-batch-size', '8', '--grad-checkpointing']
    assert _exit_status(_reproduce_args(tmp_path, out, fake_train, train_args=again)) == 0
    assert (out / 'runs' / 'vit-sl-s0' / 'argv.log').read_text().splitlines()[-1].endswith(' '.join(again[2:]))
    assert _exit_status(_reproduce_args(tmp_path, out, fake_train, train_args=['--epochs', '2', '-b', '64'])) == 2
    assert 'train_args -b: 32 -> 64' in capsys.readouterr().err


@pytest.mark.parametrize('given,says', [
    (['--drop-block', '0.1'], "--drop-block 0.1 after --: sl_vit_32 with spt=False lsa=False cannot be built (every "
     "run of it would fail): sl_vit_32 got unknown model kwargs ['drop_block_rate']"),
    (['--bn-eps', '1e-3', '--model-kwargs', 'depth=1'], "--model-kwargs depth=1 --bn-eps 1e-3 after --: sl_vit_32 "
     "with spt=False lsa=False depth=1 cannot be built"),
    (['--gp', 'nonsense'], "--gp nonsense after --: sl_vit_32 with spt=False lsa=False cannot be built"),
])
def test_train_py_model_arguments_no_row_takes_are_refused(fake_train, tmp_path, capsys, given, says):
    """-- --drop-block 0.1 or --bn-eps 1e-3 (train.py gives them create_model; these models have no DropBlock, no
    BatchNorm) started every run only for each to fail on building its model."""
    fake_train.write_text(FAKE_TRAIN.replace("'--val-num-samples'", "'--drop-block', '--bn-eps', '--gp', "
                                             "'--val-num-samples'"))
    out = tmp_path / 'out'
    assert _refused(_reproduce_args(tmp_path, out, fake_train, train_args=['--epochs', '1', *given]),
                    capsys).startswith(says)
    assert _exit_status(_reproduce_args(tmp_path, out, fake_train, train_args=['--epochs', '1', '--gp', 'avg'])) == 0


@pytest.mark.parametrize('given', ['torch/CIFAR10', 'Torch/Cifar10', 'torch/x/CIFAR10'])
def test_a_torchvision_dataset_named_in_capitals_is_recorded_as_timm_reads_it(given):
    """train.py -- --dataset torch/CIFAR10 trains on CIFAR-10 (timm reads a torchvision name in lower case), but the
    run recorded the dataset 'CIFAR10': its card and release named no Table 2 row ('not a configuration the paper
    trained on CIFAR10') and no paper top-1."""
    from timm_sl.tools.paper import paper_top1
    from timm_sl.tools.runs import RunRecord, recorded_dataset
    args = dict(dataset=given, num_classes=10, model='sl_vit_32', model_kwargs={})
    dataset = recorded_dataset(args, {})
    record = RunRecord(Path('last.pth.tar'), args=args, model='sl_vit_32', model_kwargs={}, dataset=dataset)
    assert (dataset, record.table2_row()) == ('cifar10', ('vit', 'sl'))
    assert paper_top1(*record.table2_row(), dataset) is not None


@pytest.mark.parametrize('dataset,given', [('svhn', ['--train-split', 'train[:10%]']),
                                           ('svhn', ['--train-num-samples', '20']),
                                           ('fashion-mnist', ['--train-num-samples', '20'])])
def test_the_command_a_refusal_advises_for_fewer_images_takes_its_options(fake_train, tmp_path, capsys, dataset,
                                                                          given):
    """The refusal of a part of a split (or of --train-num-samples) with the svhn recipe advised 'timm-sl prepare-svhn
    --limit N', which prepare-svhn refuses (it writes every image: 'unrecognized arguments: --limit'), then
    'prepare-fashion-mnist --limit N', which writes Fashion-MNIST, not fewer SVHN images: only the fashion-mnist
    recipe is advised a prepare command."""
    import re
    from timm_sl.tools.cli import build_parser
    out = tmp_path / 'out'
    argv = _reproduce_args(tmp_path, out, fake_train, dataset, train_args=['--epochs', '1', '--device', 'cpu', *given])
    assert _exit_status(argv) == 2
    error = _one_error(capsys)
    advised = re.findall(r'prepare-[a-z-]+', error.split('allowed: ')[1])  # each advised with --limit N
    assert advised == (['prepare-fashion-mnist'] if dataset == 'fashion-mnist' else [])
    assert ('--limit N' in error) == bool(advised)
    for command in advised:
        build_parser().parse_args([command, str(tmp_path / 'data'), '--limit', '5'])  # SystemExit(2) if refused


def test_a_val_split_sorted_as_train_is_laid_out_is_prepared_as_the_refusal_advises(fake_train, tmp_path, capsys):
    """Tiny-ImageNet's val sorted by a script into val/<wnid>/images/ (as the archive lays out train): reproduce said
    'holds images one folder too deep ...; run timm-sl prepare-tiny-imagenet DATA', which then refused it ('image
    val_0.JPEG is neither in val/images nor in val/n01'); it now moves them up, as train's, and the data is read."""
    data = tmp_path / 'data'
    for i, wnid in enumerate(['n01', 'n02']):
        for split, name in (('train', f'{wnid}_0.JPEG'), ('val', f'val_{i}.JPEG')):
            (data / split / wnid / 'images').mkdir(parents=True)
            (data / split / wnid / 'images' / name).write_bytes(_image_bytes('.JPEG') + b'%s%d' % (split.encode(), i))
    (data / 'val' / 'val_annotations.txt').write_text('val_0.JPEG\tn01\t0\t0\t9\t9\nval_1.JPEG\tn02\t0\t0\t9\t9\n')
    argv = _reproduce_args(data, tmp_path / 'out', fake_train, 'tiny-imagenet',
                           train_args=['--epochs', '1', '--num-classes', '2'])
    assert _exit_status(argv) == 2
    err = capsys.readouterr().err  # one line per split
    assert f"{data / 'val' / 'n01' / 'images'} holds images one folder too deep" in err
    assert err.count(f'run timm-sl prepare-tiny-imagenet {data}\n') == 2
    assert main(['prepare-tiny-imagenet', str(data)]) == 0
    assert sorted(str(p.relative_to(data)) for p in data.rglob('*') if p.is_file()) == [
        'train/n01/n01_0.JPEG', 'train/n02/n02_0.JPEG', 'val/n01/val_0.JPEG', 'val/n02/val_1.JPEG',
        'val/val_annotations.txt']
    assert (data / 'val' / 'n02' / 'val_1.JPEG').read_bytes().endswith(b'val1')  # a whole JPEG with a trailer
    capsys.readouterr()
    assert main(argv) == 0


def test_a_val_class_folder_holding_an_image_its_annotations_put_elsewhere_is_refused_before_any_move(tmp_path,
                                                                                                       capsys):
    """An image in val/<wnid>/images/ that val_annotations.txt does not list for that class is refused before any
    file moves: moved up, timm would read it under that class."""
    data = tmp_path / 'data'
    for i, wnid in enumerate(['n01', 'n02']):
        (data / 'val' / wnid / 'images').mkdir(parents=True)
        (data / 'val' / wnid / 'images' / f'val_{i}.JPEG').write_bytes(b'%d' % i)
    (data / 'val' / 'n02' / 'images' / 'val_0.JPEG').write_bytes(b'0')
    (data / 'val' / 'val_annotations.txt').write_text('val_0.JPEG\tn01\t0\t0\t9\t9\nval_1.JPEG\tn02\t0\t0\t9\t9\n')
    before = sorted(data.rglob('*'))
    assert _exit_status(['prepare-tiny-imagenet', str(data)]) == 2
    err = capsys.readouterr().err
    assert err == (f"timm-sl prepare-tiny-imagenet: {data / 'val' / 'n02' / 'images'} still holds 1 file(s) "
                   f"(val_0.JPEG) not listed for class n02 in val_annotations.txt; timm would read them as one more "
                   f"class 'images': move them away and run again\n")
    assert sorted(data.rglob('*')) == before


def test_an_archive_extracted_again_over_a_val_sorted_as_train_is_prepared_once(tmp_path, capsys):
    """val/images/ extracted again beside val/<wnid>/images/ holding the same images: each is moved once, its second
    copy removed; copies that differ are refused before any file moves."""
    data = tmp_path / 'data'
    (data / 'val' / 'images').mkdir(parents=True)
    for i, wnid in enumerate(['n01', 'n02']):
        (data / 'val' / wnid / 'images').mkdir(parents=True)
        for folder in (data / 'val' / 'images', data / 'val' / wnid / 'images'):
            (folder / f'val_{i}.JPEG').write_bytes(b'%d' % i)
    (data / 'val' / 'val_annotations.txt').write_text('val_0.JPEG\tn01\t0\t0\t9\t9\nval_1.JPEG\tn02\t0\t0\t9\t9\n')
    other = tmp_path / 'other'
    shutil.copytree(data, other)
    (other / 'val' / 'n02' / 'images' / 'val_1.JPEG').write_bytes(b'another')
    assert main(['prepare-tiny-imagenet', str(data)]) == 0
    assert sorted(str(p.relative_to(data)) for p in data.rglob('*')) == [
        'val', 'val/n01', 'val/n01/val_0.JPEG', 'val/n02', 'val/n02/val_1.JPEG', 'val/val_annotations.txt']
    capsys.readouterr()
    before = sorted(other.rglob('*'))
    assert _exit_status(['prepare-tiny-imagenet', str(other)]) == 2
    assert capsys.readouterr().err == (
        f"timm-sl prepare-tiny-imagenet: {other / 'val' / 'images' / 'val_1.JPEG'} and "
        f"{other / 'val' / 'n02' / 'images' / 'val_1.JPEG'} differ, and both would be "
        f"{other / 'val' / 'n02' / 'val_1.JPEG'}; move one of them away by hand\n")
    assert sorted(other.rglob('*')) == before


@pytest.mark.parametrize('given,says', [
    (['--dataset', 'torch/fashion_mnist'], "--dataset torch/fashion_mnist after -- reads torchvision's FashionMNIST, "
     "whose 28 px single-channel images timm passes on unconverted: for 3-channel input (--input-size 3 32 32 of the "
     "fashion_mnist.yaml recipe) every run would fail on them (a 3-channel mean / std or AutoAugment fill on a "
     "1-channel image); allowed: timm-sl prepare-fashion-mnist DATA (class folders of 32 px RGB PNGs), read as an "
     "image folder (no --dataset), or 1-channel input with one value each for the mean and std (-- --input-size 1 32 "
     "32 --mean M --std S)"),
    (['--dataset', 'torch/fashion_mnist', '--aa', ''], "--dataset torch/fashion_mnist after -- reads torchvision's "
     "FashionMNIST, whose 28 px single-channel images timm passes on unconverted: for 3-channel input"),
    (['--dataset', 'torch/kmnist', '--input-size', '1', '32', '32'], "--mean 0.2878 0.2878 0.2878 of the "
     "fashion_mnist.yaml recipe has 3 values for 1-channel input (--input-size 1 32 32 after --): train.py would stop "
     "every run at its start (timm asserts one value per channel); allowed: -- --mean with one value"),
    (['--dataset', 'Torch/x/MNIST'], "--dataset Torch/x/MNIST after -- reads torchvision's MNIST, whose 28 px "
     "single-channel images"),
])
def test_a_torchvision_dataset_of_grey_images_is_refused_before_every_run_fails(fake_train, tmp_path, capsys, given,
                                                                                 says):
    """-- --dataset torch/fashion_mnist started every run, and each failed after its start with only 'TypeError: color
    must be int or single-element tuple' (AutoAugment's 3-channel fill on the grey images timm passes on); without
    AutoAugment with a broadcast error (the 3-value mean on a 1-channel image), for 1-channel input with a bare
    AssertionError (the recipe's 3-value mean)."""
    out = tmp_path / 'out'
    argv = _reproduce_args(tmp_path, out, fake_train, 'fashion-mnist', train_args=['--epochs', '1', *given])
    assert _exit_status(argv) == 2
    assert _one_error(capsys).startswith(says)
    assert not out.exists()
    # 1-channel input with one value each for the mean and std: train.py runs on the grey images (checked with it)
    from timm_sl.tools.reproduce import check_grey_torch_dataset, check_mean_std, train_data
    extra = ['--epochs', '1', *given, '--input-size', '1', '32', '32', '--mean', '0.3', '--std=0.35']
    check_grey_torch_dataset(extra, recipe_path('fashion-mnist'),
                             train_data(recipe_path('fashion-mnist'), str(tmp_path), extra))
    check_mean_std(extra, recipe_path('fashion-mnist'))


def test_an_empty_image_is_refused_before_any_run(fake_train, tmp_path, capsys):
    """An image of 0 bytes (a copy or download cut off, a full disk) was read by no check: timm's folder reader skips
    an image it cannot read with a warning in train.log and reads the next one in its place, so the top-1 was measured
    on other images than the split holds and the report read as a plain result."""
    data = _folders(tmp_path / 'data', DIGITS + ['test/3/1.png', 'test/3/2.png', 'train/5/1.PNG'])
    for image in ('test/3/2.png', 'test/3/1.png', 'train/5/1.PNG'):
        (data / image).write_bytes(b'')
    (data / 'test' / '4' / 'notes.txt').write_bytes(b'')  # no image: timm does not read it
    out = tmp_path / 'out'
    assert _exit_status(_reproduce_args(data, out, fake_train, 'svhn', train_args=['--epochs', '1'])) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"timm-sl reproduce: {data / 'train' / '5' / '1.PNG'} is empty (0 bytes): timm's folder reader would skip it "
        f"with a warning in the log and read the next image in its place, so the split would not be the images it "
        f"holds; allowed: images of their bytes (copy or extract them again, or remove them)",
        f"timm-sl reproduce: {data / 'test' / '3' / '1.png'} is empty (0 bytes) (1 more alike): timm's folder reader "
        f"would skip it with a warning in the log and read the next image in its place, so the split would not be the "
        f"images it holds; allowed: images of their bytes (copy or extract them again, or remove them)"]
    assert not out.exists()


_SCHEDULE_FLAGS = "'--decay-epochs', '--decay-rate', '--decay-milestones', '--patience-epochs', '--lr-cycle-mul', " \
    "'--lr-cycle-limit', '--lr-k-decay', "


@pytest.mark.parametrize('given,says', [
    (['--decay-epochs', '30', '--decay-rate', '0.1'], "--decay-epochs 30 after -- would be ignored: with the "
     "cifar10.yaml recipe and the arguments after --, train.py's --sched cosine scheduler does not read it (only "
     "--sched step, wsd or rsqrt do), so every run would train without it; allowed: -- --sched step ... with it, or "
     "leave it out"),
    (['--patience-epochs', '5'], "--patience-epochs 5 after -- would be ignored: with the cifar10.yaml recipe and the "
     "arguments after --, train.py's --sched cosine scheduler does not read it (only --sched plateau does)"),
    (['--decay-milestones', '30', '60'], "--decay-milestones 30 60 after -- would be ignored: with the cifar10.yaml "
     "recipe and the arguments after --, train.py's --sched cosine scheduler does not read it (only --sched "
     "multistep does)"),
    (['--sched', 'step', '--lr-k-decay', '2'], "--lr-k-decay 2 after -- would be ignored: with the cifar10.yaml recipe "
     "and the arguments after --, train.py's --sched step scheduler does not read it (only --sched cosine or poly "
     "do), so every run would train without it; allowed: -- --sched cosine ... with it, or leave it out"),
    (['--sched=step', '--min-lr', '1e-5'], "--min-lr 1e-5 after -- would be ignored: with the cifar10.yaml recipe and "
     "the arguments after --, train.py's --sched step scheduler does not read it"),
    (['--lr-cycle-mul', '2'], "--lr-cycle-mul 2 after -- would be ignored: with the cifar10.yaml recipe and the "
     "arguments after --, train.py's scheduler reads it only from a second cycle on, and --lr-cycle-limit is 1, so "
     "every run would train without it; allowed: -- --lr-cycle-limit 2 ... with it, or leave it out"),
])
def test_schedule_settings_the_schedule_does_not_read_are_refused(fake_train, tmp_path, capsys, given, says):
    """-- --decay-epochs 30 --decay-rate 0.1 with the recipes' cosine schedule trained every run without them (timm's
    cosine scheduler reads neither) while run.json and each card listed them."""
    fake_train.write_text(FAKE_TRAIN.replace("'--val-num-samples'", _SCHEDULE_FLAGS + "'--val-num-samples'"))
    out = tmp_path / 'out'
    assert _refused(_reproduce_args(tmp_path, out, fake_train, train_args=['--epochs', '1', *given]),
                    capsys).startswith(says)


def test_schedule_settings_the_schedule_reads_are_passed_on(fake_train, tmp_path):
    """A schedule setting given with a --sched that reads it (-- --sched step --decay-epochs 30) is passed to every
    run, and so is one the recipe's cosine schedule reads (--lr-k-decay, --lr-cycle-mul with --lr-cycle-limit 2)."""
    from timm_sl.tools.reproduce import check_unread_args
    check_unread_args(['--lr-cycle-limit', '2', '--lr-cycle-mul', '2'], recipe_path('cifar10'))
    fake_train.write_text(FAKE_TRAIN.replace("'--val-num-samples'", _SCHEDULE_FLAGS + "'--val-num-samples'"))
    for i, given in enumerate((['--sched', 'step', '--decay-epochs', '30', '--decay-rate', '0.5'],
                               ['--lr-k-decay', '2'])):
        out = tmp_path / f'out{i}'
        assert _exit_status(_reproduce_args(tmp_path, out, fake_train, train_args=['--epochs', '1', *given])) == 0
        assert (out / 'runs' / 'vit-sl-s0' / 'argv.log').read_text().split()[-len(given):] == given


def test_a_bce_loss_train_py_would_not_use_is_refused(fake_train, tmp_path, capsys):
    """-- --bce-loss --smoothing 0 --mixup 0 --cutmix 0 trained every run with plain cross-entropy (train.py picks its
    BCE loss only with mixup / cutmix or label smoothing on) while run.json and each card listed bce_loss: true."""
    fake_train.write_text(FAKE_TRAIN.replace("'--val-num-samples'", "'--bce-loss', '--val-num-samples'"))
    out = tmp_path / 'out'
    given = ['--epochs', '1', '--bce-loss', '--smoothing', '0', '--mixup', '0', '--cutmix', '0']
    assert _refused(_reproduce_args(tmp_path, out, fake_train, train_args=given), capsys) == (
        "--bce-loss after -- would be ignored: with the cifar10.yaml recipe and the arguments after --, train.py uses "
        "the BCE loss only with mixup / cutmix or label smoothing on, and --mixup, --cutmix and --smoothing are 0 (it "
        "trains with plain cross-entropy), so every run would train without it; allowed: -- --smoothing 0.1 ... with "
        "it, or leave it out")
    # with the recipe's smoothing and mixup / cutmix, or either of them, train.py uses it
    from timm_sl.tools.reproduce import check_unread_args
    for more in ([], ['--mixup', '0', '--cutmix', '0'], ['--smoothing', '0']):
        check_unread_args(['--bce-loss', *more], recipe_path('cifar10'))


def test_mixup_settings_with_mixing_off_are_refused(fake_train, tmp_path, capsys):
    """-- --mixup 0 --cutmix 0 --mixup-prob 1 trained every run without mixing, so without the --mixup-prob it lists;
    the recipe's own mixup settings with mixing off are not refused (a card leaves them out)."""
    out = tmp_path / 'out'
    given = ['--epochs', '1', '--mixup', '0', '--cutmix', '0', '--mixup-prob', '1']
    assert _refused(_reproduce_args(tmp_path, out, fake_train, train_args=given), capsys) == (
        "--mixup-prob 1 after -- would be ignored: with the cifar10.yaml recipe and the arguments after --, train.py "
        "reads it only with mixup or cutmix on, and --mixup and --cutmix are 0 (no --cutmix-minmax), so every run "
        "would train without it; allowed: -- --mixup 0.8 ... with it, or leave it out")
    from timm_sl.tools.reproduce import check_unread_args
    for extra in (['--mixup', '0', '--cutmix', '0'], ['--mixup', '0', '--mixup-prob', '1']):
        check_unread_args(extra, recipe_path('cifar10'))


def test_a_run_that_skipped_unreadable_images_is_marked_in_the_report(fake_train, tmp_path, capsys):
    """An image truncated past its header (not empty: the data check passes it) is skipped by timm's dataset with a
    warning in train.log, and the next image is read in its place: the run was reported as done and its top-1 as a
    plain result. Its skips are now counted from train.log and said in report.md, results.json and on stdout."""
    warning = 'WARNING: Skipped sample (index {}). image file is truncated'  # as timm 1.0.31 logs it
    prints = ''.join(f'    print({warning.format(i)!r}, file=sys.stderr)\n' for i in (7, 7, 3))
    fake_train.write_text(FAKE_TRAIN.replace('a = p.parse_args()\n', 'a = p.parse_args()\nif a.seed == "1":\n'
                                             + prints))
    out = tmp_path / 'out'
    argv = _reproduce_args(tmp_path, out, fake_train, families=('vit',), train_args=['--epochs', '1'])
    argv[argv.index('--out'):argv.index('--out')] = ['--seeds', '0', '1']
    assert _exit_status(argv) == 0
    log = out / 'runs' / 'vit-sl-s1' / 'train.log'
    said = (f'unreadable images skipped 3 times (sample indexes 3, 7; timm read the next image in each one\'s place, '
            f'so the run did not train or evaluate on the images its folders hold): see {log}')
    printed = capsys.readouterr().out.splitlines()
    assert f'vit-sl-s1: {said}' in printed and f'vit-base-s1: {said.replace("vit-sl-s1", "vit-base-s1")}' in printed
    assert not any(line.startswith('vit-sl-s0:') for line in printed)
    report = (out / 'report.md').read_text()
    assert '## Unreadable images\n\n- vit-base-s1: ' in report and f'- vit-sl-s1: {said}\n' in report
    assert '| vit-sl-s1 | done, unreadable images skipped | 51.00 |' in report
    assert '| vit-sl-s0 | done | 50.00 |' in report
    runs = {r['name']: r for r in json.loads((out / 'results.json').read_text())['runs']}
    assert runs['vit-sl-s1']['skipped_samples'] == 3 and runs['vit-sl-s1']['skipped'] == said
    assert runs['vit-sl-s0']['skipped_samples'] == 0 and runs['vit-sl-s0']['skipped'] == ''
    rows = {r['variant']: r for r in json.loads((out / 'results.json').read_text())['rows']}  # in the mean: said
    assert rows['sl']['skipped_runs'] == rows['base']['skipped_runs'] == 1
    assert '50.50 ± 0.71 (1 skipped unreadable images)' in report


@pytest.mark.parametrize('given', ['torch/svhn', 'TORCH/SVHN', 'torch/x/svhn'])
def test_a_torchvision_dataset_timm_does_not_read_is_refused_before_any_run(fake_train, tmp_path, capsys, given):
    """``-- --dataset torch/svhn`` started every run, each failing in seconds with timm's 'Unknown torchvision
    dataset svhn'; it is now refused first, naming what timm reads."""
    from timm_sl.tools.data_check import torch_dataset_names
    data = tmp_path / 'data'
    data.mkdir()
    said = _refused(_reproduce_args(data, tmp_path / 'out', fake_train, 'svhn', train_args=['--dataset', given]),
                    capsys)
    assert said == (f"--dataset {given} is not a torchvision dataset timm's train.py reads: every run would fail with "
                    f"'Unknown torchvision dataset svhn'; allowed: torch/ with {', '.join(torch_dataset_names())}, or "
                    f"an image folder of class folders (--dataset '', as the svhn and tiny-imagenet recipes read "
                    f"theirs)")
    assert 'cifar10, cifar100' in said and 'qmnist' in said and 'svhn,' not in said


def test_torch_dataset_names_are_those_timms_create_dataset_takes():
    """The torch/ names reproduce lets through are the names timm's create_dataset branches on, read from its source
    (its basic table and the names it compares in its torch/ branch)."""
    import inspect
    import re
    from timm.data import dataset_factory
    from timm_sl.tools.data_check import torch_dataset_names
    source = inspect.getsource(dataset_factory)
    table = re.search(r'_TORCH_BASIC_DS = dict\((.*?)\n\)', source, re.S)[1]
    basic = re.findall(r'(\w+)=', table)
    branch = inspect.getsource(dataset_factory.create_dataset)
    branch = branch[branch.index("if prefix == 'torch'"):branch.index("elif prefix == 'hfds'")]
    compared = re.findall(r"name == '(\w+)'", branch)
    assert basic and len(compared) >= 7
    assert sorted(torch_dataset_names()) == sorted({*basic, *compared})


def test_an_options_second_name_is_checked_as_its_first(fake_train, tmp_path, capsys):
    """-- --dr 0.5 (train.py's second name of --decay-rate) passed every check keyed on --decay-rate: with the recipes'
    cosine schedule every run trained without it, while -- --decay-rate 0.5 was refused."""
    from timm_sl.tools.train_args import expand_abbreviations, train_script_options, train_script_spellings
    fake_train.write_text(FAKE_TRAIN.replace("p.add_argument('-j', '--workers')",
                                             "p.add_argument('-j', '--workers')\n"
                                             "p.add_argument('--decay-rate', '--dr')"))
    options, spellings = train_script_options(fake_train), train_script_spellings(fake_train)
    assert expand_abbreviations(['--dr', '0.5', '--dr=0.1', '-j', '2', '--work', '1'], options, fake_train,
                                spellings) == ['--decay-rate', '0.5', '--decay-rate=0.1', '-j', '2', '--workers', '1']
    out = tmp_path / 'out'
    assert _refused(_reproduce_args(tmp_path, out, fake_train, train_args=['--epochs', '1', '--dr', '0.5']),
                    capsys).startswith("--decay-rate 0.5 after -- would be ignored: with the cifar10.yaml recipe and "
                                       "the arguments after --, train.py's --sched cosine scheduler does not read it")
    assert not out.exists()


def test_the_arguments_a_resume_may_change_are_the_cards_machine_arguments_and_the_docs_name_them():
    """The arguments a resume may change were a hand-kept second copy of the card's machine arguments (and
    docs/reproduce.md named three of the ten added last); they are now those arguments less the ones that decide a
    result, and the docs name each (the log, checkpoint and wandb ones as groups)."""
    from timm_sl.tools.reproduce import _HOW_FLAGS
    from timm_sl.tools.train_args import NON_RECIPE_KEYS
    assert {'--validation-batch-size', '--grad-checkpointing', '--fuser', '--workers', '-j'} <= set(_HOW_FLAGS)
    assert not {'--class-map', '--initial-checkpoint', '--worker-seeding', '--model-ema-force-cpu'} & set(_HOW_FLAGS)
    assert {f[2:].replace('-', '_') for f in _HOW_FLAGS if f.startswith('--')} - {'epochs'} <= NON_RECIPE_KEYS
    docs = (REPO / 'docs' / 'reproduce.md').read_text()
    grouped = ('--log-', '--recovery-interval', '--checkpoint-hist', '--wandb-', '--epochs', '--workers')
    assert [f for f in _HOW_FLAGS if f'`{f}`' not in docs and not f.startswith(grouped)] == []


@pytest.mark.parametrize('dataset,given,says', [
    ('svhn', ['--std', '1', '2'], "--std 1 2 after -- has 2 values for 3-channel input (--input-size 3 32 32 of the "
     "svhn.yaml recipe): train.py would stop every run at its start (timm asserts one value per channel); allowed: -- "
     "--std with 3 values, or one for every channel"),
    ('cifar10', ['--input-size', '1', '32', '32', '--mean', '0.5'], "--std 0.247 0.2435 0.2616 of the cifar10.yaml "
     "recipe has 3 values for 1-channel input (--input-size 1 32 32 after --)"),
    ('svhn', ['--mean', '0.1', '0.2', '0.3', '0.4'], "--mean 0.1 0.2 0.3 0.4 after -- has 4 values for 3-channel "
     "input"),
])
def test_a_mean_or_std_not_of_one_value_per_channel_is_refused(fake_train, tmp_path, capsys, dataset, given, says):
    """A --mean / --std of another length than the input's channels started every run, and each stopped at its start
    on a bare AssertionError (timm's data config asserts one value per channel)."""
    out = tmp_path / 'out'
    (tmp_path / 'data').mkdir()
    argv = _reproduce_args(tmp_path / 'data', out, fake_train, dataset, train_args=['--epochs', '1', *given])
    assert _exit_status(argv) == 2
    assert _one_error(capsys).startswith(says)
    assert not out.exists()
    from timm_sl.tools.reproduce import check_mean_std  # one value for every channel, or one per channel: allowed
    for more in (['--mean', '0.5', '--std', '0.25'], ['--mean', '0.5', '0.5', '0.5']):
        check_mean_std(['--epochs', '1', *more], recipe_path(dataset))


def test_a_cut_off_image_or_macos_metadata_file_is_refused_before_any_run(fake_train, tmp_path, capsys):
    """A PNG or JPEG cut to half its bytes (a copy or extraction cut off) and a macOS AppleDouble file ._2.png (4 KB of
    metadata, written when copying to exFAT or SMB) passed: timm's folder reader skipped each with a warning in
    train.log and read the next image in its place, so the run trained on other images than the split holds. Whole
    images pass: a JPEG padded after its end marker, with a trailer, or named .png, and a PNG that lost only its end."""
    data = _folders(tmp_path / 'data', DIGITS)
    png, jpeg = (data / 'train' / '0' / '0.png').read_bytes(), _image_bytes('.jpg')
    whole = {'train/1/padded.jpg': jpeg + b'\0' * 100, 'train/1/filled.JPEG': jpeg + b'\xff' * 7,
             'train/2/trailer.jpg': jpeg + bytes(range(256)) * 4, 'train/2/jpeg.png': jpeg,
             'train/3/end.png': png[:-12], 'train/3/trailing.png': png + b'junk'}
    for name, content in whole.items():
        (data / name).write_bytes(content)
    (data / 'test' / '2' / '._0.png').write_bytes(b'\0\x05\x16\x07\0\x02\0\0Mac OS X        ' + b'\0' * 4070)
    (data / 'test' / '5' / 'cut.jpg').write_bytes(jpeg[:len(jpeg) // 2])
    out = tmp_path / 'out'
    argv = _reproduce_args(data, out, fake_train, 'svhn', train_args=['--epochs', '1', '--device', 'cpu'])
    assert _exit_status(argv) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"timm-sl reproduce: {data / 'test' / '2' / '._0.png'} is macOS metadata (an AppleDouble ._ file, written "
        f"when copying to exFAT or SMB), not an image (1 more image timm cannot read): timm's folder reader would skip "
        f"it with a warning in the log and read the next image in its place, so the split would not be the images it "
        f"holds; allowed: whole PNG or JPEG images (copy or extract them again, or remove them; remove the ._ files: "
        f"find {data / 'test'} -name '._*' -delete)"]
    assert not out.exists()
    (data / 'test' / '2' / '._0.png').unlink()
    (data / 'test' / '5' / 'cut.jpg').unlink()
    (data / 'train' / '4' / '0.png').write_bytes(png[:len(png) // 2])
    assert _exit_status(argv) == 2
    assert _one_error(capsys) == (
        f"{data / 'train' / '4' / '0.png'} is cut off (it does not end as a PNG ends, with its IEND chunk): timm's "
        f"folder reader would skip it with a warning in the log and read the next image in its place, so the split "
        f"would not be the images it holds; allowed: whole PNG or JPEG images (copy or extract them again, or remove "
        f"them)")
    (data / 'train' / '4' / '0.png').write_bytes(png)
    assert _exit_status(argv) == 0  # the whole images above are read


def _svhn_refusal(fake_train: Path, tmp_path: Path, capsys, option: str, given: List[str]) -> str:
    """The one line reproduce --dataset svhn refuses train.py arguments ``given`` with (exit status 2, nothing made),
    its fake train.py taking ``option``."""
    fake_train.write_text(FAKE_TRAIN.replace("'--val-num-samples'", f"'{option}', '--val-num-samples'"))
    out = tmp_path / 'out'
    (tmp_path / 'data').mkdir()
    argv = _reproduce_args(tmp_path / 'data', out, fake_train, 'svhn', train_args=['--epochs', '1', *given])
    assert _exit_status(argv) == 2
    assert not out.exists()
    return _one_error(capsys)


@pytest.mark.parametrize('given,says', [
    (['--in-chans', '1'], "--in-chans 1 after -- builds every model for 1-channel input, but train.py reads the images "
     "as 3-channel (--input-size 3 32 32 of the svhn.yaml recipe): every run would fail on its first batch; allowed: "
     "-- --in-chans 3, or -- --input-size 1 H W"),
    (['--in-chans', '3', '--input-size', '1', '32', '32', '--mean', '0.3', '--std', '0.3'], "--in-chans 3 after -- "
     "builds every model for 3-channel input, but train.py reads the images as 1-channel (--input-size 1 32 32 after "
     "--)"),
])
def test_an_in_chans_other_than_the_inputs_channels_is_refused(fake_train, tmp_path, capsys, given, says):
    """-- --in-chans 3 --input-size 1 32 32 started every run: train.py builds the model from --in-chans and reads the
    images by --input-size, so each run failed on its first batch."""
    assert _svhn_refusal(fake_train, tmp_path, capsys, '--in-chans', given).startswith(says)
    from timm_sl.tools.reproduce import check_in_chans  # the same channels, or --in-chans left to --input-size
    for more in (['--in-chans', '3'], ['--in-chans', '1', '--input-size', '1', '32', '32'], []):
        check_in_chans(['--epochs', '1', *more], recipe_path('svhn'))


def test_skips_of_a_session_whose_epochs_were_not_kept_are_not_counted(fake_train, tmp_path, capsys, monkeypatch):
    """A session that skipped unreadable images and failed before its first epoch, then (the images replaced) a start
    from scratch that read every image: train.log keeps both sessions, and the clean run was reported as 'done,
    unreadable images skipped'. Only the log since the run's last start from scratch counts now."""
    warning = 'WARNING: Skipped sample (index 4). image file is truncated'
    fake_train.write_text(FAKE_TRAIN.replace('a = p.parse_args()\n', 'a = p.parse_args()\nif os.environ.get("SKIP"):'
                                             f'\n    print({warning!r}, file=sys.stderr); sys.exit(1)\n'))
    out = tmp_path / 'out'
    argv = _reproduce_args(tmp_path, out, fake_train, families=('vit',), train_args=['--epochs', '1'])
    monkeypatch.setenv('SKIP', '1')
    assert _exit_status(argv) != 0
    log = out / 'runs' / 'vit-sl-s0' / 'train.log'
    assert warning in log.read_text()
    monkeypatch.delenv('SKIP')
    assert _exit_status(argv) == 0
    capsys.readouterr()
    assert warning in log.read_text()  # the log keeps the failed session
    runs = {r['name']: r for r in json.loads((out / 'results.json').read_text())['runs']}
    assert runs['vit-sl-s0']['skipped_samples'] == 0 and runs['vit-sl-s0']['status'] == 'done'
    assert 'unreadable images skipped' not in (out / 'report.md').read_text()


def test_repeated_augmentation_in_one_process_is_refused_before_any_run(fake_train, tmp_path, capsys):
    """-- --aug-repeats 3 (timm's DeiT recipes) without --nproc started every run, and each stopped at its first batch
    on timm's loader assertion; a run of 2+ processes takes it."""
    fake_train.write_text(FAKE_TRAIN.replace("'--val-num-samples'", "'--aug-repeats', '--val-num-samples'"))
    out = tmp_path / 'out'
    says = _refused(_reproduce_args(tmp_path, out, fake_train, train_args=['--epochs', '1', '--aug-repeats', '3']),
                    capsys)
    assert says == ('--aug-repeats 3 after -- would stop every run at its start (train.py asserts that repeated '
                    'augmentation needs a distributed run); allowed: --nproc 2 or more before --, or -- '
                    '--aug-repeats 0')
    assert not (out / 'runs').exists()
    check_failing_args(['--aug-repeats', '3'], recipe_path('cifar10'), nproc=2)
    check_failing_args(['--aug-repeats', '0'], recipe_path('cifar10'))


@pytest.mark.parametrize('first,second', [('C', 'c'), ('1', '01')])
def test_class_folders_timm_sorts_as_equal_are_refused(fake_train, tmp_path, capsys, first, second):
    """Class folders 'C' and 'c' (letters of both cases) or '1' and '01' passed: timm's folder reader sorts class names
    ignoring case and leading zeros, so it labelled the two in a set's order, which changes from one Python process to
    the next: a resumed run or validate.py read either class with the other's label."""
    layout = [f'{split}/{name}/0.png' for split in ('train', 'test') for name in (first, second, 'a', 'b', 'd', 'e',
                                                                                   'f', 'g', 'h', 'i')]
    data = _folders(tmp_path / 'data', layout)
    out = tmp_path / 'out'
    assert _exit_status(_reproduce_args(data, out, fake_train, 'svhn', train_args=['--epochs', '1'])) == 2
    low, high = sorted((first, second))
    assert capsys.readouterr().err.splitlines() == [
        f"timm-sl reproduce: {data / split} holds class folders {low!r} and {high!r}, which timm's folder reader "
        f"cannot order (it sorts class names ignoring case, numbers by value): their labels would change from one "
        f"start of train.py or validate.py to the next, and between the splits; allowed: rename one of them, or -- "
        f"--class-map naming each folder's label" for split in ('train', 'test')]
    assert not out.exists()


def test_a_16_bit_grey_image_timm_would_read_clipped_is_refused(fake_train, tmp_path, capsys):
    """A 16-bit grey PNG (microscopy, medical scans) passed: PIL reads it as mode I;16 and timm's conversion to RGB
    clips every value above 255, so the runs trained on white images. One whose values stay within 0-255 is read as
    it is, and passes."""
    import numpy as np
    from PIL import Image
    data = _folders(tmp_path / 'data', DIGITS)
    ramp = np.arange(64, dtype=np.uint16).reshape(8, 8)
    for name, values in (('train/3/wide.png', ramp * 1000), ('train/3/wide2.png', ramp * 900),
                         ('test/4/narrow.png', ramp * 4)):
        Image.fromarray(values).save(data / name)
        assert Image.open(data / name).mode == 'I;16'
    out = tmp_path / 'out'
    argv = _reproduce_args(data, out, fake_train, 'svhn', train_args=['--epochs', '1'])
    assert _exit_status(argv) == 2
    assert _one_error(capsys) == (
        f"{data / 'train' / '3' / 'wide.png'} is a 16-bit grey image whose values reach 63000 (1 more alike): timm's "
        f"folder reader reads it as 8-bit, clipping every value above 255 to white, so the run would train on white "
        f"images; allowed: 8-bit images (scale them to 0-255 first)")
    assert not out.exists()
    for name in ('wide.png', 'wide2.png'):
        (data / 'train' / '3' / name).unlink()
    assert _exit_status(argv) == 0


def test_an_image_of_a_format_timm_does_not_read_beside_the_images_is_refused(fake_train, tmp_path, capsys):
    """A class folder of images saved from the web held a .webp and a .jfif (a browser's JPEG) beside its JPEGs: timm's
    folder reader reads .png / .jpg / .jpeg only and passed them by as it passes by a text file, so the runs trained
    without them and the report said nothing. A text file or a .DS_Store beside the images is no image: it passes."""
    data = _folders(tmp_path / 'data', DIGITS + ['train/3/notes.txt', 'train/3/.DS_Store', 'test/2/Thumbs.db'])
    (data / 'train' / '5' / 'cat.webp').write_bytes(b'RIFF\0\0\0\0WEBPVP8 ')
    (data / 'train' / '5' / 'dog.JFIF').write_bytes(_image_bytes('.jpg'))
    out = tmp_path / 'out'
    argv = _reproduce_args(data, out, fake_train, 'svhn', train_args=['--epochs', '1'])
    assert _exit_status(argv) == 2
    assert _one_error(capsys) == (
        f"{data / 'train' / '5' / 'cat.webp'} is an image timm's folder reader does not read (it reads .png, .jpg, "
        f".jpeg only) (1 more alike): the split would leave it out without a word; allowed: convert it to PNG or JPEG, "
        f"or move it out of {data / 'train'}")
    assert not out.exists()
    (data / 'train' / '5' / 'cat.webp').unlink()
    (data / 'train' / '5' / 'dog.JFIF').rename(data / 'train' / '5' / 'dog.jpg')
    assert _exit_status(argv) == 0


def test_an_image_that_is_a_link_to_nothing_is_refused(fake_train, tmp_path, capsys):
    """A split built of links to the images of another folder, some of whose images were moved or deleted since: the
    links to nothing passed, and timm's folder reader, which lists them as images, skipped each with a warning and
    read the next image (of the next class, at a class's end) in its place."""
    data = _folders(tmp_path / 'data', DIGITS)
    (data / 'train' / '6' / '1.png').symlink_to(tmp_path / 'moved' / '1.png')
    out = tmp_path / 'out'
    assert _exit_status(_reproduce_args(data, out, fake_train, 'svhn', train_args=['--epochs', '1'])) == 2
    assert _one_error(capsys) == (
        f"{data / 'train' / '6' / '1.png'} is a link to {tmp_path / 'moved' / '1.png'}, which does not exist: timm's "
        f"folder reader would skip it with a warning in the log and read the next image in its place, so the split "
        f"would not be the images it holds; allowed: whole PNG or JPEG images (copy or extract them again, or remove "
        f"them)")
    assert not out.exists()


@pytest.mark.parametrize('train_name,test_name,says', [
    ('cat ', 'cat', "('cat ' and 'cat' differ only in spaces at an end"),
    ('Cat', 'cat', "('Cat' and 'cat' differ only in case"),
    ('caf\u00e9', 'cafe\u0301', "('caf\\xe9' and 'cafe\\u0301' are one name with its accents written in two Unicode "
     "forms, NFC and NFD (as macOS writes names)")])
def test_a_class_spelled_otherwise_in_the_other_split_is_named_so(fake_train, tmp_path, capsys, train_name,
                                                                   test_name, says):
    """A class folder 'cat ' (a trailing space) in train and 'cat' in test was refused with 'only in train: cat ; only
    in test: cat', two names that read the same; so were 'café' copied from a Mac (its accent a second character)
    and 'café' made on Linux. The line now says what tells the two apart."""
    layout = [p for p in DIGITS if not p.split('/')[1] == '9']
    data = _folders(tmp_path / 'data', layout + [f'train/{train_name}/0.png', f'test/{test_name}/0.png'])
    assert _exit_status(_reproduce_args(data, tmp_path / 'out', fake_train, 'svhn', train_args=['--epochs', '1'])) == 2
    assert _one_error(capsys) == (
        f"{data / 'train'} and {data / 'test'} hold different classes: only in {data / 'train'}: {train_name}; only in "
        f"{data / 'test'}: {test_name} {says}: timm reads them as two classes; allowed: one spelling in both splits)")


def test_a_class_folder_without_an_image_torchvision_reads_is_refused_for_torch_folder(fake_train, tmp_path, capsys):
    """-- --dataset torch/folder with a class folder holding only notes (or nothing) passed, its class folders counted:
    torchvision's ImageFolder, which takes every folder for a class, stops train.py at its start ('Found no valid file
    for the classes 7'), so every run failed. Its images at any depth, and a .webp (which it reads), pass."""
    from torchvision.datasets.folder import IMG_EXTENSIONS
    from timm_sl.tools.data_check import TORCHVISION_IMAGE_SUFFIXES
    assert TORCHVISION_IMAGE_SUFFIXES == IMG_EXTENSIONS
    data = _folders(tmp_path / 'data', [p for p in DIGITS if p not in ('train/7/0.png', 'train/8/0.png')] +
                    ['train/7/notes.txt', 'train/8/deep/0.txt'])
    out = tmp_path / 'out'
    argv = _reproduce_args(data, out, fake_train, 'svhn', train_args=['--epochs', '1', '--dataset', 'torch/folder'])
    assert _exit_status(argv) == 2
    assert _one_error(capsys) == (
        f"{data / 'train' / '7'} holds no image torchvision's ImageFolder reads (.jpg, .jpeg, .png, .ppm, .bmp, .pgm, "
        f".tif, .tiff, .webp) (1 more folder alike): every run would stop at its start ('Found no valid file for the "
        f"classes 7'); allowed: add its images or remove it")
    assert not out.exists()
    from PIL import Image
    buffer = io.BytesIO()
    Image.new('RGB', (2, 2)).save(buffer, 'WEBP')  # a whole one: torchvision would stop at a cut-off one
    (data / 'train' / '7' / 'cat.webp').write_bytes(buffer.getvalue())
    (data / 'train' / '8' / 'deep' / '0.png').write_bytes(_image_bytes('.png'))
    assert _exit_status(argv) == 0


def test_an_image_larger_than_pil_opens_is_refused_before_any_run(fake_train, tmp_path, capsys):
    """A PNG of 20000x20000 pixels (a scan, a map tile) passed: PIL refuses to open an image of more than twice its
    MAX_IMAGE_PIXELS with a DecompressionBombError, which is no OSError, so timm's folder reader does not skip it and
    every run stopped at it in its first epoch."""
    import zlib
    from PIL import Image

    def chunk(kind: bytes, body: bytes) -> bytes:
        return len(body).to_bytes(4, 'big') + kind + body + zlib.crc32(kind + body).to_bytes(4, 'big')
    header = (20000).to_bytes(4, 'big') * 2 + bytes([8, 0, 0, 0, 0])  # 8-bit grey
    png = b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', header) + chunk(b'IDAT', zlib.compress(b'')) + chunk(b'IEND', b'')
    data = _folders(tmp_path / 'data', DIGITS)
    (data / 'test' / '1' / 'scan.png').write_bytes(png)
    with pytest.raises(Image.DecompressionBombError):
        Image.open(data / 'test' / '1' / 'scan.png')
    assert _refused(_reproduce_args(data, tmp_path / 'out', fake_train, 'svhn', train_args=['--epochs', '1']),
                    capsys) == (
        f"{data / 'test' / '1' / 'scan.png'} is an image of 20000x20000 pixels, more than PIL opens "
        f"({2 * Image.MAX_IMAGE_PIXELS:,}, its guard against decompression bombs): train.py would stop at it in every "
        f"run; allowed: images downscaled below that")


def test_a_finished_runs_summary_cut_short_since_is_not_read_as_a_shorter_run(fake_train, tmp_path, capsys):
    """summary.csv of a run done.json marks finished, its last row cut since (a copy of --out cut off): the run was
    skipped as finished and reported with one epoch fewer (its best top-1 without that epoch's, and a note that a
    smaller --epochs does not shorten a run); now the command ends in one line naming the file, which stays as it
    is."""
    out = tmp_path / 'out'
    run = out / 'runs' / 'vit-sl-s0'
    assert main(_reproduce_args(tmp_path, out, fake_train, train_args=['--epochs', '2'])) == 0
    cut = (run / 'summary.csv').read_text()[:-12]  # '1,1.0,1.0,51': the last row cut mid-write
    (run / 'summary.csv').write_text(cut)
    capsys.readouterr()
    assert _exit_status(_reproduce_args(tmp_path, out, fake_train, train_args=['--epochs', '2'])) == 2
    assert _one_error(capsys) == (
        f'{run}/summary.csv reaches epoch 1 of the 2 epochs {run}/done.json records as finished: it was cut short or '
        f"replaced since (a copy cut off, or train.py started again in the folder?), and its best top-1 and epochs "
        f"would be another run's; allowed: the run's whole summary.csv put back")
    assert (run / 'summary.csv').read_text() == cut


def test_repeated_augmentation_over_an_iterable_reader_is_refused_with_any_nproc():
    """timm's loader repeats augmentations only over a dataset it samples: -- --dataset wds/x --aug-repeats 3 stopped
    every run at its first batch under --nproc 2 as well, and the advice to add --nproc was wrong."""
    with pytest.raises(ValueError) as e:
        check_failing_args(['--dataset', 'wds/shards', '--aug-repeats', '3'], recipe_path('cifar10'), nproc=2)
    assert str(e.value) == ('--aug-repeats 3 after -- would stop every run at its start (train.py asserts that '
                            'repeated augmentation samples no wds/shards (an iterable reader)); allowed: -- '
                            '--aug-repeats 0')
    check_failing_args(['--dataset', 'hfds/x', '--aug-repeats', '3'], recipe_path('cifar10'), nproc=2)  # map-style


def test_an_empty_or_cut_off_image_is_refused_for_torch_folder_as_for_timms_reader(fake_train, tmp_path, capsys):
    """-- --dataset torch/folder over a class folder holding a 0-byte PNG (or a cut-off JPEG, a .bmp that is no image)
    passed: the image checks ran for timm's folder reader only, and torchvision's ImageFolder skips no image, so every
    run stopped part way through its first epoch. The same checks now run for the files torchvision takes for
    images, at any depth below a class folder."""
    from torchvision.datasets import ImageFolder
    data = _folders(tmp_path / 'data', DIGITS)
    (data / 'train' / '3' / 'deep').mkdir()
    (data / 'train' / '3' / 'deep' / '1.png').write_bytes(b'')
    folder = ImageFolder(str(data / 'train'))
    with pytest.raises(OSError):  # what train.py meets mid-epoch: PIL cannot identify it
        folder[[p for p, _ in folder.samples].index(str(data / 'train' / '3' / 'deep' / '1.png'))]
    out = tmp_path / 'out'
    argv = _reproduce_args(data, out, fake_train, 'svhn', train_args=['--epochs', '1', '--dataset', 'torch/folder'])
    assert _exit_status(argv) == 2
    assert _one_error(capsys) == (
        f"{data / 'train' / '3' / 'deep' / '1.png'} is empty (0 bytes): torchvision's ImageFolder skips no image: "
        f"train.py would stop at it in every run, part way through an epoch; allowed: images of their bytes (copy or "
        f"extract them again, or remove them)")
    assert not out.exists()
    (data / 'train' / '3' / 'deep' / '1.png').write_bytes(_image_bytes('.png'))
    (data / 'test' / '5' / '1.jpg').write_bytes(_image_bytes('.jpg')[:-40])
    (data / 'test' / '6' / 'scan.BMP').write_bytes(b'BM')
    assert _exit_status(argv) == 2
    assert _one_error(capsys) == (
        f"{data / 'test' / '5' / '1.jpg'} is cut off (it does not end as a JPEG ends, with its FF D9 marker) (1 more "
        f"image torchvision cannot read): torchvision's ImageFolder skips no image: train.py would stop at it in "
        f"every run, part way through an epoch; allowed: whole images (copy or extract them again, or remove them)")
    (data / 'test' / '5' / '1.jpg').unlink()
    (data / 'test' / '6' / 'scan.BMP').unlink()
    assert _exit_status(argv) == 0


def test_an_image_torchvision_passes_by_is_refused_for_torch_folder(fake_train, tmp_path, capsys):
    """-- --dataset torch/folder over a class folder holding a .gif or .jfif beside its images, or over a split folder
    holding images beside its class folders, passed: torchvision's ImageFolder reads neither (its classes are the
    subfolders, its images those of its suffixes), so every run trained without them and the report said nothing.
    A .webp, .bmp or .tif it reads, and a text file beside the class folders, pass."""
    from PIL import Image
    from torchvision.datasets import ImageFolder
    data = _folders(tmp_path / 'data', DIGITS + ['train/notes.txt'])
    for name in ('train/5/cat.gif', 'train/5/dog.jfif', 'test/2/x.webp', 'test/2/y.BMP', 'test/3/z.tif'):
        Image.new('RGB', (2, 2)).save(data / name, {'.jfif': 'JPEG', '.BMP': 'BMP'}.get(Path(name).suffix))
    assert len(ImageFolder(str(data / 'train'))) == 10  # the two left out
    out = tmp_path / 'out'
    argv = _reproduce_args(data, out, fake_train, 'svhn', train_args=['--epochs', '1', '--dataset', 'torch/folder'])
    assert _refused(argv, capsys) == (
        f"{data / 'train' / '5' / 'cat.gif'} is an image torchvision's ImageFolder does not read (it reads .jpg, "
        f".jpeg, .png, .ppm, .bmp, .pgm, .tif, .tiff, .webp only) (1 more alike): the split would leave it out "
        f"without a word; allowed: convert it to PNG, JPEG, WebP, BMP or TIFF, or move it out of {data / 'train'}")
    (data / 'train' / '5' / 'cat.gif').rename(data / 'train' / 'cat.gif')
    (data / 'train' / '5' / 'dog.jfif').rename(data / 'train' / 'dog.jpg')
    assert _refused(argv, capsys) == (
        f"{data / 'train'} holds images outside its class folders (cat.gif, dog.jpg): torchvision's ImageFolder leaves "
        f"them out without a word; allowed: move them into {data / 'train'}/<class>/, or out of {data / 'train'}")
    (data / 'train' / 'cat.gif').unlink()
    (data / 'train' / 'dog.jpg').rename(data / 'train' / '5' / 'dog.jpg')
    assert _exit_status(argv) == 0


def _forged_size(image: bytes, width: int, height: int) -> bytes:
    """A small JPEG or TIFF whose header gives ``width`` x ``height`` (its pixels left as they are): what PIL reads
    when it opens it, without the memory of such an image."""
    import struct
    data = bytearray(image)
    if data[:2] == b'\xff\xd8':  # the frame header (SOF0): length, precision, height, width
        at = data.index(b'\xff\xc0') + 5
        data[at:at + 4] = height.to_bytes(2, 'big') + width.to_bytes(2, 'big')
        return bytes(data)
    ifd = struct.unpack('<I', data[4:8])[0]  # a little-endian TIFF as PIL writes it: its first IFD's entries
    for i in range(struct.unpack('<H', data[ifd:ifd + 2])[0]):
        at = ifd + 2 + 12 * i
        tag, kind = struct.unpack('<HH', data[at:at + 4])
        if tag in (256, 257):  # ImageWidth, ImageLength: SHORT or LONG
            form = '<H' if kind == 3 else '<I'
            data[at + 8:at + 8 + struct.calcsize(form)] = struct.pack(form, width if tag == 256 else height)
    return bytes(data)


@pytest.mark.parametrize('name,kind,dataset', [('pano.jpg', 'JPEG', ''), ('scan.tif', 'TIFF', 'torch/folder')])
def test_a_jpeg_or_tiff_larger_than_pil_opens_is_refused_before_any_run(fake_train, tmp_path, capsys, name, kind,
                                                                         dataset):
    """A JPEG of 20000x20000 pixels (a stitched panorama) passed the data check, which read the size of a PNG only:
    PIL's guard against decompression bombs raises an error timm's folder reader does not skip, so every run stopped
    at it in its first epoch; under torch/folder a TIFF as large was refused as 'no image PIL reads'. Each is named
    with its size now; the image at its own size (a JPEG's EXIF before its frame header) passes."""
    from PIL import Image
    buffer = io.BytesIO()
    exif = Image.Exif()
    exif[0x010f] = 'camera'
    Image.new('RGB', (12, 9)).save(buffer, kind, **({'exif': exif} if kind == 'JPEG' else {}))
    data = _folders(tmp_path / 'data', DIGITS)
    (data / 'train' / '4' / name).write_bytes(_forged_size(buffer.getvalue(), 20000, 20000))
    with pytest.raises(Image.DecompressionBombError):
        Image.open(data / 'train' / '4' / name)
    out = tmp_path / 'out'
    argv = _reproduce_args(data, out, fake_train, 'svhn', train_args=['--epochs', '1', *(
        ['--dataset', dataset] if dataset else [])])
    assert _refused(argv, capsys) == (
        f"{data / 'train' / '4' / name} is an image of 20000x20000 pixels, more than PIL opens "
        f"({2 * Image.MAX_IMAGE_PIXELS:,}, its guard against decompression bombs): train.py would stop at it in every "
        f"run; allowed: images downscaled below that")
    (data / 'train' / '4' / name).write_bytes(buffer.getvalue())
    assert _exit_status(argv) == 0


def test_a_16_bit_grey_tiff_torchvision_would_read_clipped_is_refused(fake_train, tmp_path, capsys):
    """-- --dataset torch/folder over a class folder of 16-bit grey TIFFs (a microscope's, a scanner's) passed: the
    check read the bit depth of a PNG only, and torchvision's ImageFolder converts each to RGB clipping every value
    above 255, so the runs trained on white images. A 16-bit TIFF whose values stay within 0-255 passes."""
    import numpy as np
    from PIL import Image
    from torchvision.datasets import ImageFolder
    data = _folders(tmp_path / 'data', DIGITS)
    ramp = np.arange(64, dtype=np.uint16).reshape(8, 8)
    for name, values in (('train/3/wide.tif', ramp * 1000), ('test/4/narrow.tiff', ramp * 4)):
        Image.fromarray(values).save(data / name)
        assert Image.open(data / name).mode == 'I;16'
    folder = ImageFolder(str(data / 'train'))
    assert folder[[p for p, _ in folder.samples].index(str(data / 'train/3/wide.tif'))][0].getextrema()[0] == (0, 255)
    out = tmp_path / 'out'
    argv = _reproduce_args(data, out, fake_train, 'svhn', train_args=['--epochs', '1', '--dataset', 'torch/folder'])
    assert _refused(argv, capsys) == (
        f"{data / 'train' / '3' / 'wide.tif'} is a 16-bit grey image whose values reach 63000: torchvision's "
        f"ImageFolder reads it as 8-bit, clipping every value above 255 to white, so the run would train on white "
        f"images; allowed: 8-bit images (scale them to 0-255 first)")
    (data / 'train' / '3' / 'wide.tif').unlink()
    assert _exit_status(argv) == 0


@pytest.mark.parametrize('link', ['test/3', 'test/3/more'])
def test_a_class_folder_linked_into_both_splits_is_refused_for_torch_folder(fake_train, tmp_path, capsys, link):
    """-- --dataset torch/folder with test/3 a link to train/3 (or a link to it inside test/3, whose images
    torchvision reads at any depth) passed, as it was refused for timm's folder reader only: every top-1 was measured
    partly on the images the run trained on, beside the paper's numbers, silently."""
    data = _folders(tmp_path / 'data', DIGITS)
    if link == 'test/3':
        shutil.rmtree(data / link)
    (data / link).symlink_to(data / 'train' / '3')
    out = tmp_path / 'out'
    argv = _reproduce_args(data, out, fake_train, 'svhn', train_args=['--epochs', '1', '--dataset', 'torch/folder'])
    assert _refused(argv, capsys) == (
        f"{data / 'train' / '3'} and {data / link} are one folder (a link): its images would be in both splits, so "
        f"top-1 would be measured partly on images the run trains on; allowed: splits that share no folder")


def test_one_channel_input_over_torch_folder_is_refused_before_every_run_fails(fake_train, tmp_path, capsys):
    """-- --dataset torch/folder --input-size 1 32 32 (grey scans in class folders) started every run, and each failed
    on its first batch: torchvision's ImageFolder converts every image to RGB, whatever the input's channels, so a
    3-channel image met a 1-channel model (train.py checked: 'Input has 3 channels'). timm's folder reader, which
    reads them as 1-channel, and 3-channel input over torch/folder pass."""
    data = _folders(tmp_path / 'data', DIGITS)
    grey = ['--input-size', '1', '32', '32', '--mean', '0.5', '--std', '0.5']
    out = tmp_path / 'out'
    argv = _reproduce_args(data, out, fake_train, 'svhn', train_args=['--epochs', '1', '--dataset', 'torch/folder',
                                                                      *grey])
    assert _refused(argv, capsys) == (
        "--dataset torch/folder after -- reads the images with torchvision's ImageFolder, which converts every one to "
        "RGB: for 1-channel input (--input-size 1 32 32 after --) every run would fail on its first batch (3-channel "
        "images into a 1-channel model); allowed: 3-channel input, or timm's folder reader, which reads them as "
        "1-channel (no --dataset)")
    from timm_sl.tools.reproduce import check_grey_torch_dataset, train_data
    for extra in (grey, ['--dataset', 'torch/folder']):
        check_grey_torch_dataset(extra, recipe_path('svhn'), train_data(recipe_path('svhn'), str(data), extra))


def test_a_float_tiff_of_fractions_torchvision_would_read_black_is_refused(fake_train, tmp_path, capsys):
    """-- --dataset torch/folder over a class folder of floating-point grey TIFFs of values within 0-1 passed:
    torchvision's ImageFolder converts each to RGB reading every value as 0 or 1 of 255, so the runs trained on black
    images. One of values on the 0-255 scale passes."""
    import numpy as np
    from PIL import Image
    data = _folders(tmp_path / 'data', DIGITS)
    values = np.linspace(0, 0.75, 64, dtype=np.float32).reshape(8, 8)
    Image.fromarray(values).save(data / 'test' / '2' / 'scan.tif')
    assert Image.open(data / 'test' / '2' / 'scan.tif').convert('RGB').getextrema()[0][1] <= 1  # black
    out = tmp_path / 'out'
    argv = _reproduce_args(data, out, fake_train, 'svhn', train_args=['--epochs', '1', '--dataset', 'torch/folder'])
    assert _refused(argv, capsys) == (
        f"{data / 'test' / '2' / 'scan.tif'} is a floating-point grey image whose values reach 0.75: torchvision's "
        f"ImageFolder reads it as 8-bit, reading each of its fractions of 1 as 0 or 1 of 255, so the run would train "
        f"on black images; allowed: 8-bit images (scale them to 0-255 first)")
    Image.fromarray(values * 255).save(data / 'test' / '2' / 'scan.tif')
    assert _exit_status(argv) == 0


def test_a_pgm_or_ppm_beside_the_images_is_refused_for_timms_reader(fake_train, tmp_path, capsys):
    """A class folder holding a .pgm or .ppm beside its PNGs (the format of older face and digit data sets) passed:
    timm's folder reader reads .png / .jpg / .jpeg only and passed them by, so every run trained without them and the
    report said nothing. torchvision's ImageFolder (-- --dataset torch/folder) reads them: they pass there."""
    from PIL import Image
    data = _folders(tmp_path / 'data', DIGITS)
    Image.new('L', (8, 8), 7).save(data / 'train' / '1' / 'face.pgm')
    Image.new('RGB', (8, 8)).save(data / 'train' / '1' / 'face.PPM', 'PPM')
    out = tmp_path / 'out'
    assert _refused(_reproduce_args(data, out, fake_train, 'svhn', train_args=['--epochs', '1']), capsys) == (
        f"{data / 'train' / '1' / 'face.PPM'} is an image timm's folder reader does not read (it reads .png, .jpg, "
        f".jpeg only) (1 more alike): the split would leave it out without a word; allowed: convert it to PNG or JPEG, "
        f"or move it out of {data / 'train'}")
    argv = _reproduce_args(data, out, fake_train, 'svhn', train_args=['--epochs', '1', '--dataset', 'torch/folder'])
    assert _exit_status(argv) == 0


def test_a_run_resumed_after_a_disk_filled_mid_row_finishes(fake_train, tmp_path, capsys, monkeypatch):
    """The disk filled while train.py wrote an epoch's summary.csv row (cut off, no line end; the epoch's checkpoint not
    written). Resumed, train.py's header ran on from the cut row: one broken line, after which the run read as
    'train.py exited with 0 but wrote no summary.csv (no epoch finished)', failed at every command again. Now the cut
    row is dropped before train.py resumes (it trains that epoch again), and the run finishes with its epochs."""
    out = tmp_path / 'out'
    run = out / 'runs' / 'vit-sl-s0'
    monkeypatch.setenv('EPOCHS_BEFORE_KILL', '1')
    assert _exit_status(_reproduce_args(tmp_path, out, fake_train, train_args=['--epochs', '2'])) == 1
    monkeypatch.delenv('EPOCHS_BEFORE_KILL')
    with open(run / 'summary.csv', 'a') as f:
        f.write('1,1.0,1.0,5')  # epoch 1's row, cut off by the full disk
    capsys.readouterr()
    assert main(_reproduce_args(tmp_path, out, fake_train, train_args=['--epochs', '2'])) == 0
    assert 'vit-sl-s0 finished' in capsys.readouterr().out
    assert [r['epoch'] for r in read_summary_rows(run / 'summary.csv')] == [0, 1]
    results = json.loads((out / 'results.json').read_text())
    assert {r['name']: (r['status'], r['summary']['epochs']) for r in results['runs']} == {
        'vit-base-s0': ('done', 2), 'vit-sl-s0': ('done', 2)}


def test_a_runs_summary_with_a_broken_row_is_refused_before_any_run(fake_train, tmp_path, capsys):
    """A run's summary.csv with a broken row before its last (a cut row a resumed train.py wrote on from, an edit):
    the run was resumed (or skipped), and reported failed as 'wrote no summary.csv (no epoch finished)' at every
    command; now the command ends first in one line naming the file and line, which stays as it is."""
    out = tmp_path / 'out'
    run = out / 'runs' / 'vit-sl-s0'
    assert main(_reproduce_args(tmp_path, out, fake_train, train_args=['--epochs', '2'])) == 0
    text = (run / 'summary.csv').read_text().replace('\n1,', '\n1,1.0,1.0,5epoch,train_loss\n1,', 1)
    (run / 'summary.csv').write_text(text)
    capsys.readouterr()
    assert _exit_status(_reproduce_args(tmp_path, out, fake_train, train_args=['--epochs', '3'])) == 2
    assert _one_error(capsys) == (
        f"{run}/summary.csv:3: not a summary.csv row of 6 fields with a whole-number epoch from 0 and a numeric "
        f"eval_top1 (top-1 and top-5 from 0 to 100): '1,1.0,1.0,5epoch,train_loss'; the run cannot be resumed nor "
        f"reported with it; allowed: the file mended (or {run} deleted to restart the run, or another --out)")
    assert (run / 'summary.csv').read_text() == text


def test_a_run_folder_train_py_was_started_in_by_hand_since_is_refused(fake_train, tmp_path, capsys, monkeypatch):
    """An interrupted run's command.txt run by hand with another --lr (train.py writes into the same folder: its
    args.yaml, last.pth.tar and summary.csv rows from epoch 0): reproduce resumed from that training and reported it as
    the run's, 'finished (3/3 epochs)' at lr 0.003. Now the command ends in one line naming args.yaml and what differs;
    a folder whose args.yaml is the run's resumes as before."""
    import yaml
    out = tmp_path / 'out'
    run = out / 'runs' / 'vit-sl-s0'
    monkeypatch.setenv('EPOCHS_BEFORE_KILL', '1')
    assert _exit_status(_reproduce_args(tmp_path, out, fake_train, train_args=['--epochs', '2'])) == 1
    monkeypatch.delenv('EPOCHS_BEFORE_KILL')
    recorded = yaml.safe_load((run / 'args.yaml').read_text())
    own = dict(recorded, model='sl_vit_32', model_kwargs={}, seed=0, lr=0.003)  # as train.py records the run's start
    (run / 'args.yaml').write_text(yaml.safe_dump(dict(own, lr=0.05)))  # its command line, run with --lr 0.05
    capsys.readouterr()
    assert _exit_status(_reproduce_args(tmp_path, out, fake_train, train_args=['--epochs', '2'])) == 2
    assert _one_error(capsys) == (
        f"{run}/args.yaml records lr 0.05 (the run: 0.003), other than {run}/run.json: train.py was started again in "
        f"the folder with other settings (by hand, from an edited command.txt?), and its last.pth.tar and summary.csv "
        f"hold that training, which would pass for this run's; allowed: delete {run} to restart the run, or another "
        f"--out")
    (run / 'args.yaml').write_text(yaml.safe_dump(own))
    assert main(_reproduce_args(tmp_path, out, fake_train, train_args=['--epochs', '2'])) == 0


def test_a_run_whose_summary_is_behind_its_checkpoint_is_refused(fake_train, tmp_path, capsys, monkeypatch):
    """A copy of an interrupted run taken while it trained (summary.csv copied before epoch 2's row, last.pth.tar
    after epoch 2's checkpoint): resumed, its summary lacked epoch 2 for good, the report said it trained 3 epochs where
    the progress said 4/4, and left SL - baseline out as 'trained different numbers of epochs'. Now the command ends in
    one line naming both files and their epochs."""
    import torch
    out = tmp_path / 'out'
    run = out / 'runs' / 'vit-sl-s0'
    monkeypatch.setenv('EPOCHS_BEFORE_KILL', '2')
    assert _exit_status(_reproduce_args(tmp_path, out, fake_train, train_args=['--epochs', '4'])) == 1
    monkeypatch.delenv('EPOCHS_BEFORE_KILL')
    torch.save(dict(arch='sl_vit_32', epoch=1, state_dict={'w': torch.zeros(1)}), run / 'last.pth.tar')
    lines = (run / 'summary.csv').read_text().splitlines(keepends=True)
    (run / 'summary.csv').write_text(''.join(lines[:-1]))  # epoch 2's row: not yet written when it was copied
    capsys.readouterr()
    assert _exit_status(_reproduce_args(tmp_path, out, fake_train, train_args=['--epochs', '4'])) == 2
    assert _one_error(capsys) == (
        f"{run}/last.pth.tar is of epoch 2, but {run}/summary.csv reaches epoch 1 (counted from 1): its rows of the "
        f"epochs after were lost (a copy of the run taken while it trained?), and resumed, its results would lack "
        f"them; allowed: the run's whole summary.csv put back, or delete {run} to restart the run (or another --out)")
    assert (run / 'summary.csv').read_text() == ''.join(lines[:-1])


def test_a_run_whose_last_checkpoint_is_another_runs_is_refused(fake_train, tmp_path, capsys, monkeypatch):
    """An interrupted run's last.pth.tar replaced by another run's (seed 1's copied over it, or one of another lr):
    reproduce resumed from that run's weights and reported the result as this run's. Now the command ends in one line
    naming the checkpoint and what its train.py arguments record otherwise; the run's own checkpoint resumes."""
    import argparse
    import torch
    out = tmp_path / 'out'
    run = out / 'runs' / 'vit-sl-s0'
    monkeypatch.setenv('EPOCHS_BEFORE_KILL', '2')
    assert _exit_status(_reproduce_args(tmp_path, out, fake_train, train_args=['--epochs', '4'])) == 1
    monkeypatch.delenv('EPOCHS_BEFORE_KILL')
    own = dict(model='sl_vit_32', model_kwargs={}, seed=0, lr=0.003, epochs=4)
    for other, says in ((dict(seed=1), 'seed 1 (the run: 0)'), (dict(lr=0.01), 'lr 0.01 (the run: 0.003)')):
        torch.save(dict(arch='sl_vit_32', epoch=1, state_dict={'w': torch.zeros(1)},
                        args=argparse.Namespace(**dict(own, **other))), run / 'last.pth.tar')
        capsys.readouterr()
        assert _exit_status(_reproduce_args(tmp_path, out, fake_train, train_args=['--epochs', '4'])) == 2
        assert _one_error(capsys) == (
            f"{run}/last.pth.tar was saved by a train.py with {says}, other than {run}/run.json: another run's "
            f"checkpoint (copied over it?); resumed, the run would go on from that run's weights and pass for its own; "
            f"allowed: delete {run} to restart the run, or another --out")
    torch.save(dict(arch='sl_vit_32', epoch=1, state_dict={'w': torch.zeros(1)}, args=argparse.Namespace(**own)),
               run / 'last.pth.tar')
    capsys.readouterr()
    assert _exit_status(_reproduce_args(tmp_path, out, fake_train, train_args=['--epochs', '4'])) == 1
    assert 'vit-sl-s0 started (resuming: 2/4 epochs done)' in capsys.readouterr().out  # (the stand-in reads no torch)


def test_a_disk_that_fills_names_the_file_and_keeps_the_runs_records_whole(fake_train, tmp_path, capsys, monkeypatch):
    """The disk filled as reproduce wrote a run's sessions.json: the command ended on '[Errno 28] No space left on
    device; ... allowed: make it writable (a file, not a folder)', naming no file, and left the record of the run's
    earlier sessions cut to what fitted. Now the line names the file and asks for room, and the earlier record is
    whole (reproduce writes its files beside them, then moves them over)."""
    import errno
    out = tmp_path / 'out'
    run = out / 'runs' / 'vit-base-s0'  # the first run, at whose end the disk is full
    assert main(_reproduce_args(tmp_path, out, fake_train, train_args=['--epochs', '1'])) == 0
    before = (run / 'sessions.json').read_text()
    write_text = Path.write_text

    def full_disk(self, data, *args, **kwargs):
        if self.name.startswith(('sessions.json', '.sessions.json')):
            write_text(self, data[:10])  # what fitted
            raise OSError(errno.ENOSPC, 'No space left on device')
        return write_text(self, data, *args, **kwargs)
    monkeypatch.setattr(Path, 'write_text', full_disk)
    capsys.readouterr()
    assert _exit_status(_reproduce_args(tmp_path, out, fake_train, train_args=['--epochs', '2'])) == 2
    assert _one_error(capsys) == (
        f'{run}/sessions.json: no space left on device; the sweep stopped every run as on Ctrl-C; '
        f'allowed: room made on its disk, then run the same command again to resume')
    assert (run / 'sessions.json').read_text() == before and len(json.loads(before)) == 1
    assert sorted(p.name for p in run.iterdir() if 'partial' in p.name) == []


def test_a_whole_last_row_without_its_line_end_is_kept_on_resume(fake_train, tmp_path, capsys, monkeypatch):
    """A summary.csv whose last row is whole but lacks its line end (saved by an editor) read as that row, and the
    resume cut it as if the disk had: the epoch, whose checkpoint was written, was never written again. It gets its
    line end, and the run keeps every epoch's row."""
    out = tmp_path / 'out'
    run = out / 'runs' / 'vit-sl-s0'
    monkeypatch.setenv('EPOCHS_BEFORE_KILL', '1')
    assert _exit_status(_reproduce_args(tmp_path, out, fake_train, train_args=['--epochs', '2'])) == 1
    monkeypatch.delenv('EPOCHS_BEFORE_KILL')
    text = (run / 'summary.csv').read_text()
    (run / 'summary.csv').write_text(text.rstrip('\n'))
    assert [r['epoch'] for r in read_summary_rows(run / 'summary.csv')] == [0]
    capsys.readouterr()
    assert main(_reproduce_args(tmp_path, out, fake_train, train_args=['--epochs', '2'])) == 0
    assert [r['epoch'] for r in read_summary_rows(run / 'summary.csv')] == [0, 1]



def test_an_lr_given_after_dashes_is_compared_as_train_py_got_it():
    """``-- --lr 0.0012345678`` reaches train.py as written, but the run's lr was compared rounded to six digits
    (0.00123457): every later command refused the run as started again with other settings, naming the same lr twice.
    The recipe's lr, which reproduce writes with ``:g``, is still compared as written."""
    from timm_sl.tools.reproduce import _args_differ
    run = dict(model='sl_vit_32', model_kwargs={}, seed=0, lr=0.002)
    assert _args_differ(dict(run, lr=0.0012345678), dict(run, train_args={'--lr': ['0.0012345678']})) == []
    assert _args_differ(dict(run, lr=0.00123457), dict(run, lr=0.0012345678)) == []  # the recipe's, as `:g` writes it
    assert _args_differ(dict(run, lr=0.003), dict(run, train_args={'--lr': ['0.0012345678']})) == [
        "lr 0.003 (the run: '0.0012345678')"]



def test_a_training_split_smaller_than_one_batch_is_refused_before_any_run(batches_counted, fake_train, tmp_path,
                                                                           capsys):
    """40 images at the recipe's batch of 128: train.py's training loader drops an incomplete batch, so each run
    trained no step (no 'Train:' line, train_loss 0), and the report called it finished with the top-1 of its initial
    weights. It is refused before any run (the batch size read as train.py's option table spells it); one batch runs."""
    data = tmp_path / 'data'
    for split, n in (('train', 4), ('test', 2)):
        for c in range(10):
            (data / split / str(c)).mkdir(parents=True)
            for i in range(n):
                (data / split / str(c) / f'{i}.png').write_bytes(_image_bytes('.png'))
    out = tmp_path / 'out'
    argv = _reproduce_args(data, out, fake_train, dataset='svhn')
    for batch in ([], ['--batch-size', '41'], ['--batch-size=41']):
        assert _exit_status(argv + batch) == 2
        assert _one_error(capsys) == (
            f"{data / 'train'} holds 40 training images, fewer than one batch of {batch and 41 or 128}: train.py's "
            f"training loader drops an incomplete batch, so every run would train no step and be reported with the "
            f"top-1 of its initial weights; allowed: -- --batch-size 40 or less, or more images")
        assert not out.exists()
    nproc = argv[:argv.index('--')] + ['--nproc', '2', '--seeds', '0'] + argv[argv.index('--'):]
    assert _exit_status(nproc + ['--batch-size', '21']) == 2
    assert 'fewer than one batch of 21 per process (2 processes)' in _one_error(capsys)
    assert _exit_status(argv + ['--batch-size', '40']) == 0


def _checked(data: Path, args) -> list:
    """What reproduce's data check says of the image folder ``data`` for the svhn recipe with ``args`` after --."""
    from timm_sl.tools.data_check import check_data
    from timm_sl.tools.reproduce import train_data
    from timm_sl.tools.train_args import recipe_path
    return check_data(train_data(recipe_path('svhn'), str(data), list(args)), 'svhn')


def test_the_image_suffixes_of_an_input_key_are_what_the_data_check_reads(tmp_path):
    """-- --input-key gives timm's folder reader its image suffixes (';' between), which the data check ignored:
    '.png;.webp' was refused for a .webp train.py reads, '.png' passed a class folder of JPEGs train.py finds no image
    in (a class less, the labels after it shifted), and '.PNG' (compared with each suffix in lower case) passed a
    folder train.py finds no image in. The check reads the folder with those suffixes."""
    from PIL import Image
    from timm.data import create_dataset
    data = _folders(tmp_path / 'data', DIGITS)
    Image.new('RGB', (2, 2)).save(data / 'train' / '1' / 'a.webp')
    assert len(create_dataset('', root=str(data), split='train', input_key='.png;.webp')) == 11
    assert _checked(data, ['--input-key', '.png;.webp']) == []
    for name in ('train/4/0.png', 'test/4/0.png'):
        (data / name).rename((data / name).with_suffix('.jpg'))
    assert len(create_dataset('', root=str(data), split='test', input_key='.png').reader.class_to_idx) == 9
    assert _checked(data, ['--input-key', '.png'])[0] == (
        f"{data / 'train' / '4'} holds no image (.png): timm's folder reader skips it, shifting the labels of the "
        f"classes sorted after it; add its images or remove it")
    assert _checked(data, ['--input-key=.PNG;.jpg']) == [
        "--input-key .PNG;.jpg after -- names '.PNG', which matches no file: timm's folder reader takes it for image "
        "suffixes and compares each with a file's suffix in lower case, its dot included, so the images it means would "
        "be left out without a word; allowed: suffixes such as .png;.webp (lower case, no spaces)"]
    assert 'so every run would find no image in it' in _checked(data, ['--input-key', '.PNG'])[0]
    assert _checked(data, ['--input-key', '.png; .jpg'])[0].endswith(  # the PNGs are read, the JPEGs meant are not
        "names ' .jpg', which matches no file: timm's folder reader takes it for image suffixes and compares each with "
        "a file's suffix in lower case, its dot included, so the images it means would be left out without a word; "
        "allowed: suffixes such as .png;.webp (lower case, no spaces)")
    assert "names ' .jpg'" not in ' '.join(_checked(data, ['--input-key', '.png;.jpg']))
    assert _checked(data, ['--input-key', '.png;']) == [
        "--input-key .png; after -- names an empty suffix (a ';' at an end, or two together), which matches every file "
        "without one (LICENSE, .DS_Store): timm's folder reader would read those as images; allowed: suffixes such as "
        ".png;.webp"]
    (data / 'train' / '4' / '1.png').write_bytes(_image_bytes('.png'))
    (data / 'test' / '4' / '1.png').write_bytes(_image_bytes('.png'))
    assert _checked(data, ['--input-key', '.png;.webp']) == [
        f"{data / 'train' / '4' / '0.jpg'} is an image timm's folder reader does not read (it reads .png, .webp only): "
        f"the split would leave it out without a word; allowed: convert it to .png / .webp (-- --input-key), or move "
        f"it out of {data / 'train'}",
        f"{data / 'test' / '4' / '0.jpg'} is an image timm's folder reader does not read (it reads .png, .webp only): "
        f"the split would leave it out without a word; allowed: convert it to .png / .webp (-- --input-key), or move "
        f"it out of {data / 'test'}"]


def test_a_class_map_counts_only_its_folders_images_against_one_batch(batches_counted, tmp_path):
    """-- --class-map naming 2 of 10 class folders (timm's reader reads only those) with 4 images each passed the
    check of one batch of 16, which counted the images of every class folder: train.py read 8 images, trained no
    step, and each run was reported finished. Only the images of the folders the map names are counted."""
    from timm_sl.tools.reproduce import check_train_steps, train_data
    from timm_sl.tools.train_args import recipe_path
    data = _folders(tmp_path / 'data', [f'train/{c}/{i}.png' for c in range(10) for i in range(4)])
    (data / 'map.txt').write_text('3\n7\n')
    args = ['--class-map', str(data / 'map.txt'), '--num-classes', '2']
    with pytest.raises(ValueError) as e:
        check_train_steps(train_data(recipe_path('svhn'), str(data), args), recipe_path('svhn'),
                          args + ['--batch-size', '16'])
    assert str(e.value) == (
        f"{data / 'train'} holds 8 training images in the class folders --class-map {data / 'map.txt'} names, fewer "
        f"than one batch of 16: train.py's training loader drops an incomplete batch, so every run would train no "
        f"step and be reported with the top-1 of its initial weights; allowed: -- --batch-size 8 or less, or more "
        f"images")
    check_train_steps(train_data(recipe_path('svhn'), str(data), args), recipe_path('svhn'),
                      args + ['--batch-size', '8'])


@pytest.mark.parametrize('dataset', ['', 'torch/folder'])
def test_a_link_loop_names_the_reader_that_would_walk_it(tmp_path, dataset):
    """A link back up in a class folder under -- --dataset torch/folder was refused as a folder 'timm's folder reader
    would walk without end', a reader the run does not use; the line names the run's reader."""
    data = _folders(tmp_path / 'data', DIGITS)
    (data / 'train' / '3' / 'loop').symlink_to('.')
    reader = "torchvision's ImageFolder" if dataset else "timm's folder reader"
    assert _checked(data, ['--dataset', dataset]) == [
        f"{data}/train/3/loop links back to {data}/train/3, a folder it is in: {reader} would walk it without end; "
        f"allowed: folders without such links (remove it)"]


def test_a_split_given_as_a_tar_is_refused_for_what_it_is(tmp_path):
    """-- --train-split train.tar --val-split test.tar (timm's folder reader reads a split of that exact name, a tar
    through its tar reader) was refused as a folder holding 'neither train.tar/ nor test.tar/', both there. The line
    says what they are, that the check cannot look into them, and what is allowed."""
    import tarfile
    from timm.data import create_dataset
    data = _folders(tmp_path / 'data', DIGITS)
    for split in ('train', 'test'):
        with tarfile.open(data / f'{split}.tar', 'w') as tar:
            tar.add(data / split, arcname='.')
        shutil.rmtree(data / split)
    assert len(create_dataset('', root=str(data), split='train.tar')) == 10
    assert _checked(data, ['--train-split', 'train.tar', '--val-split', 'test.tar']) == [
        f"{data / 'train.tar'} is a file, not a folder: train.py would read the train.tar split from it (a .tar: its "
        f"images by timm's tar reader), which the data check cannot look into (classes, unreadable images, images of "
        f"both splits); allowed: the split as a folder of class folders, {data / 'train'}/<class>/<image> (extract it "
        f"there)"]


@pytest.mark.parametrize('given,says', [
    (['--input-img-mode', 'L'], "--input-img-mode L after -- reads every image with 1 channel, but the models take "
     "3-channel input (--input-size 3 32 32 of the svhn.yaml recipe): every run would fail on its first batch; "
     "allowed: -- --input-img-mode RGB, or leave it out"),
    (['--input-img-mode', 'RGBX'], "--input-img-mode RGBX after -- reads every image with 4 channels"),
    (['--input-img-mode', 'gray'], "--input-img-mode gray after -- reads every image with no PIL image mode"),
    (['--input-img-mode', 'RGB', '--input-size', '1', '32', '32', '--mean', '0.3', '--std', '0.3'],
     "--input-img-mode RGB after -- reads every image with 3 channels, but the models take 1-channel input "
     "(--input-size 1 32 32 after --): every run would fail on its first batch; allowed: -- --input-img-mode L"),
    (['--input-img-mode', 'L', '--dataset', 'torch/folder'], "--input-img-mode L after -- would be ignored: "
     "--dataset torch/folder reads the images with torchvision, which timm gives no image mode (they are read as RGB); "
     "allowed: leave it out"),
    (['--input-img-mode', 'F', '--input-size', '1', '32', '32', '--mean', '0.3', '--std', '0.3'], "--input-img-mode F "
     "after -- reads every image in a PIL mode of other than 8-bit values (F: 0-255 as floats, I / I;16: integers the "
     "normalisation refuses, P: palette indices): every run would train on other values than the images hold, or "
     "fail; allowed: -- --input-img-mode L, or leave it out"),
    (['--input-img-mode', 'P', '--input-size', '1', '32', '32', '--mean', '0.3', '--std', '0.3'], "--input-img-mode P "
     "after -- reads every image in a PIL mode of other than 8-bit values"),
])
def test_an_input_img_mode_other_than_the_inputs_channels_is_refused(fake_train, tmp_path, capsys, given, says):
    """-- --input-img-mode L with a 3-channel recipe started every run, each failing on its first batch ('color must be
    int or single-element tuple' from AutoAugment's fill); under torch/folder the mode was never read."""
    assert _svhn_refusal(fake_train, tmp_path, capsys, '--input-img-mode', given).startswith(says)
    from timm_sl.tools.reproduce import check_input_img_mode  # a mode of the input's channels is read as given
    for more in (['--input-img-mode', 'RGB'], ['--input-img-mode', 'L', '--input-size', '1', '32', '32'],
                 ['--input-img-mode', '1', '--input-size', '1', '32', '32'], []):
        check_input_img_mode(['--epochs', '1', *more], recipe_path('svhn'), {'dataset': ''})
    for dataset in ('torch/folder', 'torch/cifar10'):  # the mode torchvision reads them in, given again
        check_input_img_mode(['--input-img-mode', 'RGB'], recipe_path('svhn'), {'dataset': dataset})
    check_input_img_mode(['--input-img-mode', 'L', '--input-size', '1', '28', '28'], recipe_path('svhn'),
                         {'dataset': 'torch/fashion_mnist'})


def test_the_report_names_a_run_extended_by_a_larger_epochs_as_its_card_does(tmp_path, saved_figures):
    """A run of --epochs 2 resumed by a second reproduce with --epochs 3: the report's command (the last one, --epochs
    3) was given as the run's, though its first 2 epochs ran under a schedule of 2 (the run's card said so, the report
    did not). The report and results.json now name each schedule, from the run's sessions.json."""
    from timm_sl.tools.reproduce import _collect
    outcome = _outcome('vit', 'sl', 0, None)
    outcome.run.out_dir = tmp_path / 'run'
    outcome.run.out_dir.mkdir()
    (outcome.run.out_dir / 'args.yaml').write_text(json.dumps(dict(model='sl_vit_32', epochs=3, cooldown_epochs=0)))
    (outcome.run.out_dir / 'summary.csv').write_text('epoch,train_loss,eval_loss,eval_top1,eval_top5\n' + ''.join(
        f'{e},1.0,1.0,{50.0 + e},90.0\n' for e in range(3)))
    sessions = [dict(status='exited', code=0, seconds=1., epochs=[0, 2], given_epochs=2, start='new', log_from=0),
                dict(status='exited', code=0, seconds=1., epochs=[2, 3], given_epochs=3, start='resume')]
    (outcome.run.out_dir / 'sessions.json').write_text(json.dumps(sessions))
    _collect(outcome)
    report = write_report([outcome], 'cifar10', tmp_path / 'out', command='timm-sl reproduce -- --epochs 3').read_text()
    assert ('Extended runs (their sessions.json): each was resumed with a larger `--epochs`, so its first epochs '
            'trained under a shorter learning-rate schedule than the command above gives') in report
    assert '- vit-sl-s0: epochs 1-2 under `--epochs 2`, then epoch 3 under `--epochs 3`' in report
    results = json.loads((tmp_path / 'out' / 'results.json').read_text())
    assert results['runs'][0]['schedules'] == [dict(last_epoch=2, epochs=2), dict(last_epoch=3, epochs=3)]
    sessions[0].update(status='interrupted', code=-15, given_epochs=3)  # stopped, resumed with its own --epochs
    (outcome.run.out_dir / 'sessions.json').write_text(json.dumps(sessions))
    outcome.schedules = []
    _collect(outcome)
    assert 'Extended runs' not in write_report([outcome], 'cifar10', tmp_path / 'out2').read_text()


@pytest.mark.parametrize('log_from', [10 ** 30, 10 ** 6])
def test_a_sessions_record_of_a_log_offset_beyond_the_log_reads_the_whole_log(tmp_path, log_from):
    """sessions.json's log_from (where the log of the run's last start from scratch begins) edited or damaged into a
    number past any offset ended the report in "cannot fit 'int' into an offset-sized integer", naming no file; one
    past the log's end hid the images its train.py skipped. The whole log is read then, as for no record."""
    from timm_sl.tools.reproduce import _collect
    outcome = _outcome('vit', 'sl', 0, None)
    outcome.run.out_dir = tmp_path / 'run'
    outcome.run.out_dir.mkdir()
    (outcome.run.out_dir / 'train.log').write_text('Skipped sample (index 7). cannot identify image file\n')
    sessions = [dict(status='exited', code=0, seconds=1., epochs=[0, 2], given_epochs=2, start='new',
                     log_from=log_from)]
    (outcome.run.out_dir / 'sessions.json').write_text(json.dumps(sessions))
    assert _collect(outcome).skipped == [7]


def test_a_done_json_made_again_names_the_recipe_the_run_json_records(fake_train, tmp_path, capsys):
    """A finished run whose done.json is gone gets one from its command.txt; that file edited to another recipe's
    --config gave done.json the other dataset (which export names for an image folder), though this call had just
    checked the run's run.json recipe, the one it trained with."""
    out = tmp_path / 'out'
    assert main(_reproduce_args(tmp_path, out, fake_train)) == 0
    run = out / 'runs' / 'vit-sl-s0'
    (run / 'done.json').unlink()
    (run / 'command.txt').write_text((run / 'command.txt').read_text().replace('cifar10.yaml', 'cifar100.yaml'))
    assert main(_reproduce_args(tmp_path, out, fake_train)) == 0
    assert json.loads((run / 'done.json').read_text())['dataset'] == 'cifar10'


def _fake_checkpoint_epoch(path, mmap=False):
    """read_checkpoint of the fake train.py's last.pth.tar: a zip archive holding its epoch only."""
    import zipfile
    from timm_sl.tools.runs import Checkpoint
    epoch = int(zipfile.ZipFile(path).read('epoch'))
    return Checkpoint(path=Path(path), state_dict={}, source='state_dict', epoch=epoch)


@pytest.mark.parametrize('code', ['1', '0'])
def test_a_run_stopped_while_it_saved_its_last_checkpoint_is_resumed_not_taken_for_finished(
        fake_train, tmp_path, capsys, monkeypatch, code):
    """train.py writes an epoch's summary.csv row before its checkpoint. A disk that filled while it saved the last
    epoch's (exit 1), or a Ctrl-C then (exit 0: train.py catches KeyboardInterrupt), left the row of the last epoch
    and a last.pth.tar of the one before: the next call skipped the run as finished (the exit 0 marked it done at
    once), and that epoch's weights were never saved. The run now resumes from its last checkpoint."""
    monkeypatch.setattr('timm_sl.tools.reproduce.read_checkpoint', _fake_checkpoint_epoch)
    out = tmp_path / 'out'
    argv = _reproduce_args(tmp_path, out, fake_train, train_args=['--epochs', '2'])
    monkeypatch.setenv('FAKE_LAST_SAVE_FAILS', code)
    assert _exit_status(argv) == 1
    run = out / 'runs' / 'vit-sl-s0'
    results = {r['name']: r for r in json.loads((out / 'results.json').read_text())['runs']}
    assert results['vit-sl-s0']['status'] == 'failed' and not (run / 'done.json').exists()
    if code == '0':
        assert results['vit-sl-s0']['message'] == (
            f"train.py exited with 0 after the row of epoch 2 but before its checkpoint ({run / 'last.pth.tar'} is of "
            f"epoch 1; stopped from outside?); run the same command again to train that epoch again")
    monkeypatch.delenv('FAKE_LAST_SAVE_FAILS')
    capsys.readouterr()
    assert _exit_status(argv) == 0
    assert 'finished earlier' not in capsys.readouterr().out
    assert (run / 'argv.log').read_text().count('--resume') == 1 and (run / 'done.json').is_file()
    assert int(__import__('zipfile').ZipFile(run / 'last.pth.tar').read('epoch')) == 1
    assert [r['epoch'] for r in read_summary_rows(run / 'summary.csv')] == [0, 1]


def test_a_run_whose_first_checkpoint_was_cut_off_is_not_told_to_put_it_back(fake_train, tmp_path, capsys,
                                                                             monkeypatch):
    """A disk that filled while train.py saved its first checkpoint leaves a summary.csv row and a cut-off
    tmp.pth.tar, no last.pth.tar: the line said the checkpoint 'is missing; put it back to resume', of a file that
    never was."""
    out = tmp_path / 'out'
    argv = _reproduce_args(tmp_path, out, fake_train, train_args=['--epochs', '2'])
    _stopped(argv, monkeypatch, 'EPOCHS_BEFORE_KILL', '1')
    run = out / 'runs' / 'vit-base-s0'
    (run / 'last.pth.tar').unlink()  # as if its save had failed: timm's saver writes tmp.pth.tar, then renames it
    (run / 'tmp.pth.tar').write_bytes(b'PK\x03\x04 cut')
    capsys.readouterr()
    assert _exit_status(argv) == 2
    assert _one_error(capsys) == (
        f'{run / "last.pth.tar"} was never saved: train.py stopped while it wrote its first checkpoint '
        f'({run / "tmp.pth.tar"}, cut off: a full disk?), so the epochs of {run / "summary.csv"} cannot be resumed; '
        f'allowed: delete {run} to restart the run (or use another --out)')


def test_a_run_of_one_epoch_whose_checkpoint_was_never_saved_is_not_skipped_as_finished(fake_train, tmp_path, capsys,
                                                                                         monkeypatch):
    """train.py writes an epoch's row before its checkpoint: a one-epoch run whose disk filled while it saved its
    only checkpoint failed, and the next call skipped it as finished (exit 0), a run with no last.pth.tar."""
    out = tmp_path / 'out'
    argv = _reproduce_args(tmp_path, out, fake_train, train_args=['--epochs', '1'])
    _stopped(argv, monkeypatch, 'FAKE_LAST_SAVE_FAILS', '1')
    capsys.readouterr()
    assert _exit_status(argv) == 2
    run = out / 'runs' / 'vit-base-s0'
    first = capsys.readouterr().err.splitlines()[0]  # a line per run: each of the two alike
    assert first.startswith(f'timm-sl reproduce: {run / "last.pth.tar"} is missing, but the run has trained '
                            f'(summary.csv of 1 epoch)')
    assert not (run / 'done.json').exists()
    (run / 'tmp.pth.tar').write_bytes(b'PK\x03\x04 cut')  # what timm's saver leaves when the disk fills as it writes
    assert _exit_status(argv) == 2
    first = capsys.readouterr().err.splitlines()[0]
    assert first.startswith(f'timm-sl reproduce: {run / "last.pth.tar"} was never saved: train.py stopped while it '
                            f'wrote its first checkpoint')
    assert not (run / 'done.json').exists()


def test_an_input_key_under_torchvisions_readers_is_refused_as_ignored(tmp_path):
    """-- --dataset torch/folder --input-key .jpg passed the data check and trained on every image of torchvision's
    suffixes (timm gives its torchvision readers no input key)."""
    from timm_sl.tools.reproduce import check_ignored_data_args, train_data
    from timm_sl.tools.train_args import recipe_path
    for dataset in ('torch/folder', 'torch/cifar10'):
        extra = ['--dataset', dataset, '--input-key', '.jpg']
        with pytest.raises(ValueError) as info:
            check_ignored_data_args(extra, recipe_path('svhn'), train_data(recipe_path('svhn'), str(tmp_path), extra))
        assert str(info.value) == (
            f"--input-key .jpg would be ignored: --dataset {dataset} reads the images with torchvision, which timm "
            f"gives no input key (its ImageFolder takes every image of its own suffixes); allowed: leave it out")
    extra = ['--input-key', '.jpg']  # timm's folder reader takes it
    check_ignored_data_args(extra, recipe_path('svhn'), train_data(recipe_path('svhn'), str(tmp_path), extra))


@pytest.mark.parametrize('args_yaml', ['data_dir: DATA\nepochs: 2\nlr: 0.003\n', None, 'model: [unclosed\n'])
def test_a_run_without_run_json_whose_args_yaml_names_no_model_is_refused(fake_train, tmp_path, capsys, args_yaml):
    """A run folder without run.json whose args.yaml named no model (cut short, edited) or was gone was skipped as
    finished, and the report gave it the model of the command (`-- --model-kwargs depth=2` for a run of no depth)."""
    data = _folders(tmp_path / 'data', DIGITS)
    out = tmp_path / 'out'
    assert main(_reproduce_args(data, out, fake_train, 'svhn', train_args=['--epochs', '1'])) == 0
    base = out / 'runs' / 'vit-base-s0'
    for run in ('vit-base-s0', 'vit-sl-s0'):
        (out / 'runs' / run / 'run.json').unlink()
        if args_yaml is None:
            (out / 'runs' / run / 'args.yaml').unlink()
        else:
            (out / 'runs' / run / 'args.yaml').write_text(args_yaml)
    report = (out / 'report.md').read_text()
    capsys.readouterr()
    argv = _reproduce_args(data, out, fake_train, 'svhn', train_args=['--epochs', '1', '--model-kwargs', 'depth=2'])
    assert _exit_status(argv) == 2
    first = capsys.readouterr().err.splitlines()[0]
    what = 'records no model nor model_kwargs' if args_yaml and 'model' not in args_yaml else 'is missing or unreadable'
    assert first == (
        f"timm-sl reproduce: {base / 'args.yaml'} {what}, and {base / 'run.json'} is not there: what vit-base-s0 was "
        f"trained with is not known, and skipped or resumed it would be reported as this command's model; allowed: "
        f"the file put back whole, delete {base} to restart the run, or another --out")
    assert (out / 'report.md').read_text() == report


@pytest.mark.parametrize('ending', ['\n', '\r\n'])
def test_a_class_map_ending_in_a_blank_line_is_read_as_timm_reads_it(tmp_path, ending):
    """A .txt class map ending in a blank line (an editor's last newline) was refused as naming '', "a class folder of
    neither split ... leaves out the folder it meant", though train.py read every image with its label. The blank
    line is refused only where it labels images: those beside the class folders, which timm then reads as a class."""
    from timm.data import create_dataset
    from timm_sl.tools.data_check import check_data
    from timm_sl.tools.reproduce import train_data
    from timm_sl.tools.train_args import recipe_path
    data = _folders(tmp_path / 'data', DIGITS)
    class_map = tmp_path / 'map.txt'
    class_map.write_bytes(''.join(f'{d}{ending}' for d in range(10)).encode() + ending.encode())
    settings = train_data(recipe_path('svhn'), str(data), ['--class-map', str(class_map)])
    assert check_data(settings, 'svhn') == []
    read = create_dataset('', root=str(data), split='train', class_map=str(class_map))
    assert [(Path(f).parent.name, t) for f, t in read.reader.samples] == [(str(d), d) for d in range(10)]
    (data / 'train' / 'loose.png').write_bytes((data / 'train' / '0' / '0.png').read_bytes())
    read = create_dataset('', root=str(data), split='train', class_map=str(class_map))
    assert read.reader.samples[-1] == (str(data / 'train' / 'loose.png'), 10)  # a class of its own
    assert check_data(settings, 'svhn') == [
        f"--class-map {class_map} names '' (a blank line), which timm gives the images beside the class folders of "
        f"{data / 'train'}: they would be read as class 10, of no class folder; allowed: move them into "
        f"{data / 'train'}/<class>/, or remove the blank line"]



_MAP_CLASSES = ['cat', 'dog', 'emu']
_MAP_NAMES = ['', ' ', 'bird', 'Cat', 'cat ', ' dog', 'cat 0', 'cat\t0', '0', '\ufeffcat', 'c\x00t', 'do\x0cg', 'a b',
              'emu\x85', 'images', '\udcff']


def _fuzzed_text_map(rng) -> bytes:
    """A .txt class map of the three classes, mutated: blank, doubled, padded, hostile or dropped lines, shuffled,
    'name index' forms; LF, CRLF or CR; UTF-8, a BOM, UTF-16 or a Latin-1 byte."""
    lines = list(_MAP_CLASSES)
    for _ in range(rng.randint(0, 3)):
        op, at = rng.randrange(7), rng.randrange(len(lines) + 1)
        if op == 0:
            lines.insert(at, rng.choice(['', ' ', '\t']))
        elif op == 1 and lines:
            lines.insert(at, rng.choice(lines))
        elif op == 2 and lines:
            lines[at - 1] = rng.choice([' ', '\t', '']) + lines[at - 1] + rng.choice([' ', '\t', ''])
        elif op == 3:
            lines.insert(at, rng.choice(_MAP_NAMES))
        elif op == 4:
            rng.shuffle(lines)
        elif op == 5 and lines:
            lines[at - 1] += rng.choice([' ', '\t', ',']) + str(at - 1)
        elif lines:
            del lines[at - 1]
    end = rng.choice(['\n', '\n', '\r\n', '\r'])
    text = end.join(lines) + rng.choice([end, ''])
    encoding = rng.choice(['utf-8'] * 6 + ['utf-8-sig', 'utf-16', 'latin-1'])
    if encoding == 'latin-1':
        return text.encode('utf-8', 'surrogateescape').replace(b'a', b'\xe4', 1)
    return text.encode('utf-8' if '\udcff' in text else encoding, 'surrogateescape')


def _fuzzed_pkl_map(rng) -> bytes:
    """A .pkl class map of the three classes, mutated: hostile indices (negative, beyond, float, NaN, bool, text,
    None, a dict), hostile keys, a class dropped, two classes of one index, keys and values swapped, not a dict."""
    mapping = {c: i for i, c in enumerate(_MAP_CLASSES)}
    for _ in range(rng.randint(0, 2)):
        if not isinstance(mapping, dict) or not mapping:
            break
        op, key = rng.randrange(7), rng.choice(list(mapping))
        if op == 0:
            mapping[key] = rng.choice([-1, 3, 2, 1000, 1.0, 1.5, float('nan'), True, '1', None, 2 ** 70, {'a': 1}])
        elif op == 1:
            mapping[rng.choice([0, 1, None, ('cat',), 'bird', ''])] = rng.randrange(3)
        elif op == 2:
            mapping.pop(key)
        elif op == 3:
            mapping = rng.choice([list(_MAP_CLASSES), tuple(_MAP_CLASSES), 'cat', None])
        elif op == 4:
            mapping[key] = mapping[rng.choice(list(mapping))]
        elif op == 5:
            mapping = {v: k for k, v in mapping.items() if not isinstance(v, dict)}
    return pickle.dumps(mapping)


def test_class_maps_mutated_at_random_label_as_timm_reads_them_or_are_refused_in_one_line(tmp_path):
    """Seeded fuzz (pass 25) of -- --class-map files (.txt / .pkl, given by path or found in each split folder, alike
    or not, missing, a folder, another suffix) through the data check, with num_classes None / 2 / 3 / 4 / 1000. Where
    it finds nothing wrong, timm's own reader of each split reads images, every label a class index of the head, one
    label per class folder and the same label for a folder in both splits; else each line names the map or the data
    folder. The data folder is never changed. It failed on a .pkl map giving two class folders one label."""
    import hashlib
    import random
    from PIL import Image
    from timm.data import create_dataset
    from timm_sl.tools.data_check import check_data
    rng = random.Random(5)

    def tree(root: Path) -> dict:
        return {p: hashlib.sha1(p.read_bytes()).hexdigest() for p in sorted(root.rglob('*')) if p.is_file()}
    for case in range(150):
        root = tmp_path / f'c{case}'
        for split in ('train', 'val'):
            for i, c in enumerate(_MAP_CLASSES):
                (root / split / c).mkdir(parents=True)
                Image.new('RGB', (4, 4), (i * 80, 0, 0)).save(root / split / c / f'{c}.png')
        suffix = rng.choice(['.txt'] * 5 + ['.pkl'] * 2 + ['.TXT', '.csv', ''])
        made = _fuzzed_pkl_map if suffix == '.pkl' else _fuzzed_text_map
        where, name = rng.choice(['path', 'path', 'splits', 'splits-differ', 'missing', 'folder']), 'map' + suffix
        class_map = str(root / name) if where in ('path', 'missing', 'folder') else name
        if where == 'path':
            (root / name).write_bytes(made(rng))
        elif where == 'folder':
            (root / name).mkdir()
        elif where != 'missing':
            body = made(rng)
            (root / 'train' / name).write_bytes(body)
            (root / 'val' / name).write_bytes(body if where == 'splits' else made(rng))
        if rng.random() < .15:  # a class folder of an odd name
            odd = root / rng.choice(['train', 'val']) / rng.choice(['a b', 'Cat', 'bird', 'cat '])
            odd.mkdir(exist_ok=True)
            Image.new('RGB', (4, 4)).save(odd / 'x.png')
        heads = rng.choice([None, 2, 3, 3, 3, 4, 1000])
        data = dict(data_dir=str(root), dataset='', train_split='train', val_split='val', num_classes=heads,
                    class_map=class_map)
        before = tree(root)
        problems = check_data(data, 'tiny-imagenet')
        assert tree(root) == before, case
        for line in problems:
            assert '\n' not in line and (str(root) in line or class_map in line), (case, line)
        if problems:
            continue
        labels = []
        for split in ('train', 'val'):
            samples = create_dataset('', root=str(root), split=split, class_map=class_map).reader.samples
            assert samples, case
            folders = {Path(path).parent.name: label for path, label in samples}
            assert all(type(label) is int and (not heads or 0 <= label < heads) for label in folders.values()), case
            assert len(set(folders.values())) == len(folders), (case, folders)
            labels.append(folders)
        assert all(labels[0][c] == labels[1][c] for c in set(labels[0]) & set(labels[1])), (case, labels)

_PROBE = '''import json, os, sys
import timm.data
_create = timm.data.create_dataset
def _probed(name, root, split='validation', **kwargs):
    dataset = _create(name, root, split=split, **kwargs)
    read = getattr(dataset, 'reader', dataset)
    with open(os.path.join(os.environ['PROBE_OUT'], f'{os.getpid()}-{split}.json'), 'w') as f:
        json.dump(dict(class_to_idx=read.class_to_idx,
                       samples=[(os.path.relpath(p, root), int(t)) for p, t in read.samples]), f)
    return dataset
timm.data.create_dataset = _probed
'''


def _folder_of_every_kind(root: Path) -> Path:
    """Twelve classes (numbered: '10' sorts before '2' as text) in splits of other names, each kind the data check
    passes: upper-case suffixes, JPEG beside PNG, grey / palette / RGBA / 16-bit PNGs, hidden files, a linked class
    folder."""
    import numpy as np
    from PIL import Image
    for s, split in enumerate(('training', 'validation')):
        for c in range(12):
            folder = root / split / str(c)
            folder.mkdir(parents=True)
            pixels = np.full((32, 32), 20 * c + s, np.uint8)
            Image.fromarray(pixels).convert('RGB').save(folder / '0.PNG')
            Image.fromarray(pixels).convert(('L', 'P', 'RGBA', 'RGB')[c % 4]).save(folder / '1.png')
            Image.fromarray(pixels).save(folder / '2.JPG')
            Image.fromarray(pixels.astype(np.uint16)).save(folder / '3.png')
            (folder / '.DS_Store').write_bytes(b'\0\0\0\1Bud1')
        (root / split / 'Thumbs.db').write_bytes(b'\0' * 8)
    shutil.move(str(root / 'training' / '7'), str(root / 'seven'))
    (root / 'training' / '7').symlink_to(root / 'seven', target_is_directory=True)
    return root


@pytest.mark.extended
@pytest.mark.skipif(not TIMM_REPO or not (Path(TIMM_REPO) / 'train.py').exists(),
                    reason="set TIMM_REPO to a folder with timm's train.py")
@pytest.mark.parametrize('reader', ['', 'torch/folder'])
def test_train_py_reads_the_classes_and_images_the_data_check_passed(tmp_path, reader):
    """What the data check passes, timm's own train.py (started by reproduce) reads alike: every image, each labelled
    by its class folder, in both splits the classes in the order export checks label names against: timm's numeric
    order (0..11), torchvision's text order ('0', '1', '10', '11', '2', ...)."""
    import subprocess
    data = _folder_of_every_kind(tmp_path / 'data')
    script = tmp_path / 'timm' / 'train.py'  # timm's train.py, recording each dataset it builds
    script.parent.mkdir()
    (script.parent / '_probe.py').write_text(_PROBE)
    script.write_text('import _probe  # noqa\n' + (Path(TIMM_REPO) / 'train.py').read_text())
    probe = tmp_path / 'probe'
    probe.mkdir()
    cmd = [sys.executable, '-m', 'timm_sl.tools.cli', 'reproduce', '--data-dir', str(data), '--dataset', 'svhn',
           '--families', 'vit', '--out', str(tmp_path / 'out'), '--train-script', str(script), '--',
           '--dataset', reader, '--train-split', 'training', '--val-split', 'validation', '--num-classes', '12',
           '--epochs', '1', '--warmup-epochs', '0', '-b', '8', '--workers', '0', '--device', 'cpu',
           '--model-kwargs', 'depth=1', 'embed_dim=32', 'num_heads=2']
    env = {k: v for k, v in os.environ.items() if k != 'TIMM_SL_NO_AUTOLOAD'}
    env.update(CUDA_VISIBLE_DEVICES='', OMP_NUM_THREADS='1', PROBE_OUT=str(probe), PYTHONPATH=str(REPO))
    result = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1200)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    records = [json.loads(p.read_text()) for p in sorted(probe.glob('*.json'))]
    assert len(records) == 4  # two runs, two splits each
    for record in records:
        names = [str(c) for c in range(12)]
        assert record['class_to_idx'] == {n: i for i, n in enumerate(sorted(names) if reader else names)}
        assert len(record['samples']) == 48
        assert all(record['class_to_idx'][Path(path).parts[1]] == label for path, label in record['samples'])


def test_a_data_folder_held_by_reproduce_refuses_a_prepare_command(tmp_path):
    """A reproduce started while prepare-fashion-mnist --overwrite wrote its folder passed the data check, recorded
    the earlier preparation's '100 train, 100 test images' in run.json, and trained on the 3000 the prepare moved in
    meanwhile. The data folder is now held for reading from the check until every train.py has ended (they inherit
    the descriptor): a prepare is refused while a reproduce reads it, reproduces read it alike."""
    pytest.importorskip('fcntl')
    from timm_sl.tools._splits import _held
    from timm_sl.tools.reproduce import hold_data
    data = _folders(tmp_path / 'data', DIGITS)
    with hold_data(data) as reading, hold_data(data):
        assert reading is not None
        with pytest.raises(BlockingIOError, match=re.escape(f'{data} is being written by another timm-sl prepare '
                                                            f'command, or read by a timm-sl reproduce, still running')):
            with _held(data):
                pass
    with _held(data):  # let go once the runs ended
        pass


@pytest.mark.extended  # the checks before a refused reproduce: seconds on a loaded machine
def test_a_data_folder_a_prepare_command_writes_is_refused_before_any_run(fake_train, tmp_path, capsys):
    """The other side of the hold above: a reproduce while a prepare command writes the data folder."""
    fcntl = pytest.importorskip('fcntl')
    data = _folders(tmp_path / 'data', DIGITS)
    handle = os.open(data, os.O_RDONLY)  # a prepare command, still writing
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        assert _refused(_reproduce_args(data, tmp_path / 'out', fake_train, 'svhn', train_args=['--epochs', '1']),
                        capsys) == (
            f'--data-dir {data} is being written by a timm-sl prepare command still running: its split folders '
            f'checked now would be replaced under the runs (trained on images other than those checked and '
            f'recorded); allowed: wait for it to end')
    finally:
        os.close(handle)


def test_the_lock_names_the_runs_this_reproduce_trains(fake_train, tmp_path):
    """The lock of OUT/runs is held for all of a reproduce's run folders: export and release said of a run that failed
    in an earlier call 'not finished yet, a timm-sl reproduce still running holds ...' while a new reproduce trained
    others there. The lock file now names the runs it trains after its process id; a call that trains none names
    none."""
    pytest.importorskip('fcntl')
    out = tmp_path / 'out'
    argv = _reproduce_args(tmp_path, out, fake_train, families=('vit',), train_args=('--epochs', '1'))
    argv[argv.index('--'):argv.index('--')] = ['--seeds', '0']
    assert _exit_status(argv) == 0
    lock = (out / 'runs' / '.reproduce.lock').read_text().splitlines()
    assert lock[0].isdigit() and lock[1:] == ['vit-base-s0', 'vit-sl-s0']
    assert _exit_status(argv) == 0  # both finished earlier: skipped
    assert len((out / 'runs' / '.reproduce.lock').read_text().splitlines()) == 1


def test_reproduces_lock_waits_out_a_readers_instant(tmp_path):
    """A reproduce starting while export or release probed the lock (held shared for an instant) was refused as if
    another reproduce ran, blaming the process id left in the file."""
    fcntl = pytest.importorskip('fcntl')
    import threading
    from timm_sl.tools.reproduce import _lock_soon
    lock = tmp_path / '.reproduce.lock'
    lock.write_text('1')
    with open(lock) as reader, open(lock, 'a+') as ours:
        fcntl.flock(reader, fcntl.LOCK_SH)
        threading.Timer(0.1, fcntl.flock, (reader, fcntl.LOCK_UN)).start()
        _lock_soon(ours, fcntl)  # the reader lets go within the wait
    with open(lock) as reader, open(lock, 'a+') as ours:
        fcntl.flock(reader, fcntl.LOCK_SH)  # a reproduce still running
        with pytest.raises(BlockingIOError):
            _lock_soon(ours, fcntl, wait_s=0.1)


@pytest.mark.extended  # two sweeps of two runs each: over a second
def test_a_resume_of_a_run_stopped_while_it_saved_counts_the_epoch_trained_again(fake_train, tmp_path, capsys,
                                                                                  monkeypatch):
    """train.py stopped while it saved an epoch's checkpoint (its row written), then resumed by reproduce, trains that
    epoch again: the call's 'N epochs trained' and its train img/s left that epoch out (the rows' count and the log's
    images did not grow by it), the start line said 'resuming: 2/2 epochs done', and sessions.json began the session
    at the row's epoch. Each now counts from the epoch of the checkpoint the session resumed."""
    monkeypatch.setattr('timm_sl.tools.reproduce.read_checkpoint', _fake_checkpoint_epoch)
    step = "        print(f'Train: {epoch} [   3/4 (100%)]  Loss: 1 (1)  Time: 0.1s,  40.00/s  (0.100s,  40.00/s)')\n"
    fake_train.write_text(FAKE_TRAIN.replace('        f.flush()\n', '        f.flush()\n' + step))
    out = tmp_path / 'out'
    argv = _reproduce_args(tmp_path, out, fake_train, train_args=['--epochs', '2'])
    argv[argv.index('--'):argv.index('--')] = ['--seeds', '0']
    _stopped(argv, monkeypatch, 'FAKE_LAST_SAVE_FAILS', '1')
    swept = []
    monkeypatch.setattr('timm_sl.tools.reproduce._sweep_line', lambda sweep: swept.append(dict(sweep)) or 'line')
    capsys.readouterr()
    assert _exit_status(argv) == 0
    printed = capsys.readouterr().out
    assert 'run 1/2: vit-base-s0 started (resuming: 1/2 epochs done)' in printed
    assert 'run 2/2: vit-sl-s0 started (resuming: 1/2 epochs done)' in printed
    assert 'run 2/2: vit-sl-s0: 2/2 epochs done, top-1 ' in printed
    assert (swept[0]['epochs'], swept[0]['images']) == (2, 32)  # epoch 2 of each run again: 4 steps, 0.1 s, 40 img/s
    sessions = json.loads((out / 'runs' / 'vit-sl-s0' / 'sessions.json').read_text())
    assert [s['epochs'] for s in sessions] == [[0, 2], [1, 2]]


def test_macos_metadata_beside_torch_folder_class_folders_passes(fake_train, tmp_path, capsys):
    """A ._x.png (macOS AppleDouble metadata, written when copying to exFAT or SMB) beside the class folders of a
    torch/folder split was refused as an image outside the class folders, with the advice to move it into a class
    folder, where it would be an image no reader opens; torchvision's ImageFolder never reads it there, so it passes
    (a real image there is still refused: test_an_image_torchvision_passes_by_is_refused_for_torch_folder). timm's
    reader, which would read the metadata as a class of its own, still refuses it."""
    from torchvision.datasets import ImageFolder
    data = _folders(tmp_path / 'data', DIGITS)
    metadata = data / 'train' / '._0.png'
    metadata.write_bytes(b'\0\x05\x16\x07\0\x02\0\0Mac OS X        ' + b'\0' * 4070)
    assert len(ImageFolder(str(data / 'train'))) == len(list((data / 'train').glob('*/*.png')))
    out = tmp_path / 'out'
    argv = _reproduce_args(data, out, fake_train, 'svhn', train_args=['--epochs', '1', '--dataset', 'torch/folder'])
    assert _exit_status(argv) == 0
    capsys.readouterr()
    argv = _reproduce_args(data, tmp_path / 'out2', fake_train, 'svhn', train_args=['--epochs', '1'])
    assert _exit_status(argv) == 2
    assert str(metadata) in capsys.readouterr().err


def test_timm_refuses_resume_names_a_train_py_checkpoint_below_torch_2_5(tmp_path, monkeypatch):
    """Below torch 2.5 timm's train.py --resume stops at every train.py checkpoint (its args Namespace, loaded
    weights-only); the check says so for such a checkpoint only, and never on a torch with safe_globals."""
    import argparse
    import torch
    from timm_sl.tools.reproduce import timm_refuses_resume
    with_args, plain = tmp_path / 'with_args.pth.tar', tmp_path / 'plain.pth.tar'
    torch.save({'epoch': 0, 'state_dict': {'w': torch.ones(2)}, 'args': argparse.Namespace(epochs=1)}, with_args)
    torch.save({'epoch': 0, 'state_dict': {'w': torch.ones(2)}}, plain)
    if hasattr(torch.serialization, 'safe_globals'):
        assert not timm_refuses_resume(with_args)
        monkeypatch.delattr(torch.serialization, 'safe_globals')
    assert timm_refuses_resume(with_args)
    assert not timm_refuses_resume(plain)
    (tmp_path / 'cut.pth.tar').write_bytes(with_args.read_bytes()[:-30])  # checkpoint_problem's to name
    assert not timm_refuses_resume(tmp_path / 'cut.pth.tar')


@pytest.mark.extended
def test_a_run_to_resume_below_torch_2_5_is_refused_before_train_py_starts(fake_train, tmp_path, capsys, monkeypatch):
    """On torch 2.2 a larger --epochs started every run's train.py --resume, each failed with torch's
    'Weights only load failed ... Unsupported class argparse.Namespace' and the report listed them all as failed."""
    import argparse
    import torch
    out = tmp_path / 'out'
    argv = _reproduce_args(tmp_path, out, fake_train, train_args=['--epochs', '1'])
    assert main(argv) == 0
    runs = [out / 'runs' / name for name in ('vit-base-s0', 'vit-sl-s0')]
    for run in runs:  # a train.py checkpoint: its args are an argparse.Namespace
        torch.save({'epoch': 0, 'state_dict': {}, 'args': argparse.Namespace()}, run / 'last.pth.tar')
    monkeypatch.delattr(torch.serialization, 'safe_globals', raising=False)
    capsys.readouterr()
    assert _exit_status(argv[:-1] + ['2']) == 2
    assert _one_error(capsys) == (
        f"{runs[0] / 'last.pth.tar'} cannot be resumed on torch {torch.__version__}, and 1 more run folder alike: "
        "timm's train.py --resume loads a checkpoint weights-only, which below torch 2.5 (no "
        'torch.serialization.safe_globals) refuses the argparse.Namespace every train.py checkpoint holds; allowed: '
        'torch >= 2.5 to continue the runs, or another --out to train them from scratch')
    assert all(len((run / 'argv.log').read_text().splitlines()) == 1 for run in runs)  # train.py not started again
    assert main(argv) == 0  # finished at 1 epoch: skipped, nothing to resume


@pytest.mark.extended  # two sweeps of two runs each
def test_a_run_finished_before_its_call_was_killed_is_marked_done_when_skipped(fake_train, tmp_path, capsys):
    """A reproduce killed after train.py finished a run but before it wrote the run's done.json: the next call skipped
    it as finished earlier, but never marked it, so release named the baseline 'custom' (the row the kwargs alone make
    with -- --model-kwargs depth=1) and export found no recipe for it. It is now marked as a finished run is."""
    from timm_sl.tools.runs import read_done_marker, read_run
    out = tmp_path / 'out'
    argv = _reproduce_args(tmp_path, out, fake_train, train_args=['--epochs', '2', '--model-kwargs', 'depth=1'])
    assert main(argv) == 0
    base = out / 'runs' / 'vit-base-s0'
    marked = read_done_marker(base)
    (base / 'done.json').unlink()  # killed between train.py's exit and the mark
    capsys.readouterr()
    assert main(argv) == 0 and 'vit-base-s0 finished earlier, skipped' in capsys.readouterr().out
    again = read_done_marker(base)
    assert again['variant'] == 'base' and again['dataset'] == 'cifar10' and again['epochs'] == 2
    assert {k: v for k, v in again.items() if k != 'seconds'} == {k: v for k, v in marked.items() if k != 'seconds'}
    assert read_run(base / 'last.pth.tar').variant == 'base'
    # what the run records of itself, never this call's: a run with no command.txt (an older reproduce's), or one
    # edited into no command line, is left unmarked, as this call's recipe need not be the one it trained with
    (base / 'done.json').unlink()
    (base / 'command.txt').write_text('python train.py --config "cut')
    assert main(argv) == 0 and not (base / 'done.json').exists()
    (base / 'command.txt').unlink()
    assert main(argv) == 0 and not (base / 'done.json').exists()


def test_a_measured_bar_s_whisker_spans_one_std_either_side():
    """The top-1 chart's whisker is the bar's mean ± its std over seeds, as its title and value say: one drawn two
    std long either side (or from the bar's top) passed every test, which counted whiskers only."""
    from matplotlib.collections import LineCollection
    from matplotlib.figure import Figure
    from timm_sl.tools.reproduce import _paired_bars
    ax = Figure().subplots()
    _paired_bars(ax, [0, 1], [71., 40.], [None, None], 'cifar100', '{:.2f}', spread=[1.5, None])
    segments = [seg for coll in ax.collections if isinstance(coll, LineCollection) for seg in coll.get_segments()]
    assert len(segments) == 1
    (x0, low), (x1, high) = sorted(map(tuple, segments[0]), key=lambda p: p[1])
    assert (x0, x1, low, high) == (0, 0, 69.5, 72.5)
    assert [t.get_text() for t in ax.texts] == ['71.00\n±1.50', '40.00']


def test_a_class_folder_this_user_cannot_read_is_named_as_unreadable(tmp_path, monkeypatch):
    """A class folder the user may not read (extracted by root, mode 700) was refused as holding no image, with
    'add its images or remove it': the images are there. It is named as unreadable now; os.walk left it out without a
    word, so the run folders, images and classes below such a folder are never silently fewer."""
    from timm_sl.tools import reproduce as module
    from timm_sl.tools.runs import walk
    _folders(tmp_path, [f'{split}/{name}/0.png' for split in ('train', 'test') for name in 'abc'])
    locked = tmp_path / 'train' / 'b'
    scandir = os.scandir

    def refuse(path='.'):  # what the system does to a folder of mode 700 owned by another user (root reads it)
        if Path(path) == locked:
            raise PermissionError(13, 'Permission denied', str(path))
        return scandir(path)
    monkeypatch.setattr(os, 'scandir', refuse)
    said = (f'{locked}: cannot read this folder (permission denied), so what it holds would be left out; allowed: a '
            f'folder this user may read and enter, or move it away')
    data = module.train_data(recipe_path('fashion-mnist'), str(tmp_path), ['--num-classes', '3'])
    with pytest.raises(PermissionError) as info:
        module.check_data(data, 'fashion-mnist')
    assert str(info.value) == said
    with pytest.raises(PermissionError, match=re.escape(said)):
        list(walk(tmp_path))


def test_a_failed_run_s_last_line_is_read_in_the_encoding_train_py_wrote_it(tmp_path, monkeypatch):
    """train.py prints in the locale's encoding: under a Latin-1 locale a crash naming 'café' was reported as
    'caf\ufffd' (the log read as UTF-8 only); a UTF-8 log is read as UTF-8 whatever the locale."""
    import locale
    from timm_sl.tools.reproduce import _last_line
    monkeypatch.setattr(locale, 'getpreferredencoding', lambda do_setlocale=True: 'ISO-8859-1')
    log = tmp_path / 'train.log'
    log.write_bytes('Train: 1\nFileNotFoundError: /data/café/x.png\n'.encode('latin-1'))
    assert _last_line(log) == 'FileNotFoundError: /data/café/x.png'
    log.write_bytes('FileNotFoundError: /data/日本/x.png\n'.encode('utf-8'))
    assert _last_line(log) == 'FileNotFoundError: /data/日本/x.png'


def test_report_names_a_non_ascii_data_folder_as_its_text_under_a_latin1_locale(tmp_path, saved_figures, monkeypatch):
    """Under a Latin-1 locale the data folder 'fé' is read as 'fÃ©': report.md, its command line, results.json and
    the charts' titles named 'fÃ©', a folder no reader of them (in any locale) finds. They now name 'fé'; the
    report's 'SL − baseline' beside it stays as it is."""
    monkeypatch.setattr(sys, 'getfilesystemencoding', lambda: 'latin-1')
    read = '/data/f\xc3\xa9'  # '/data/fé', as Python reads it there
    outcomes = [_report_outcome('vit', 'base', 0, 70.), _report_outcome('vit', 'sl', 0, 74.)]
    write_report(outcomes, 'fashion-mnist', tmp_path, command=f'timm-sl reproduce --data-dir {read}',
                 data=f'image folder {read}')
    report = (tmp_path / 'report.md').read_text(encoding='utf-8')
    assert '\xc3' not in report and 'timm-sl reproduce --data-dir /data/fé\n' in report and 'SL − baseline' in report
    results = json.loads((tmp_path / 'results.json').read_text(encoding='utf-8'))
    assert results['data'].startswith('image folder /data/fé ')
    assert 'image folder /data/fé' in saved_figures['top1.png'].texts[0].get_text() + ' '.join(
        ax.get_title() for ax in saved_figures['top1.png'].axes) + saved_figures['top1.png'].get_suptitle()


def test_a_class_folder_listed_but_not_entered_is_refused_as_unreadable_images(tmp_path, monkeypatch):
    """A class folder of mode r without x (chmod 600: its names listed, its images not opened): its images were
    passed as neither empty nor broken, so every run trained with timm skipping them (a report of 0.00 % marked
    'unreadable images skipped'), where a folder of mode 000 is refused first."""
    from timm_sl.tools.data_check import _image_folders
    split = _folders(tmp_path / 'train', ['a/0.png', 'b/0.png', 'b/1.png'])
    locked = split / 'b'
    stat, lstat, access = os.stat, os.lstat, os.access

    def entered(call):  # what the system does below a folder this user may not enter (root enters every folder)
        def guarded(path, *args, **kwargs):
            if isinstance(path, (str, Path)) and Path(path).parent == locked:
                raise PermissionError(13, 'Permission denied', str(path))
            return call(path, *args, **kwargs)
        return guarded
    monkeypatch.setattr(os, 'stat', entered(stat))
    monkeypatch.setattr(os, 'lstat', entered(lstat))
    monkeypatch.setattr(os, 'access', lambda path, mode, **kw: not (Path(path) == locked and mode & os.X_OK) and
                        access(path, mode, **kw))
    broken = []
    _image_folders(split, empty=[], broken=broken)
    assert broken == [(locked / name, f'cannot be read (its folder {locked} may be listed but not entered by this '
                                      f'user: permission denied)') for name in ('0.png', '1.png')]


@pytest.mark.skipif(os.geteuid() == 0, reason='root enters every folder')
def test_a_class_folder_of_mode_600_stops_reproduce_before_a_run(tmp_path, capsys, fake_train):
    data = _folders(tmp_path / 'data', DIGITS)
    (data / 'test' / '3').chmod(0o600)
    out = tmp_path / 'out'
    try:
        assert _exit_status(_reproduce_args(data, out, fake_train, 'svhn', train_args=['--epochs', '1'])) == 2
    finally:
        (data / 'test' / '3').chmod(0o700)
    assert _one_error(capsys).startswith(f"{data / 'test' / '3' / '0.png'} cannot be read (its folder ")
    assert not out.exists()


def test_a_whisker_above_100_keeps_its_bar_value_and_its_cap(tmp_path, saved_figures):
    """Seeds of 95, 95 and 10 (one that never learned): 66.67 ± 49.07 reaches 115.7, above the panel's 108, so the
    whisker's cap was cut off and the bar's value (placed above the whisker) was not drawn at all."""
    outcomes = [_report_outcome('vit', variant, seed, top1) for variant in ('base', 'sl')
                for seed, top1 in enumerate((95., 95., 10.))]
    write_report(outcomes, 'cifar10', tmp_path)
    fig = saved_figures['top1.png']
    left = next(ax for ax in fig.axes if ax.get_ylabel() == 'best top-1 (%)')
    fig.canvas.draw()
    mean, std = statistics.fmean([95., 95., 10.]), statistics.stdev([95., 95., 10.])
    assert left.get_ylim()[1] > mean + std
    texts = [t for t in left.texts if t.get_text() == f'{mean:.2f}\n±{std:.2f}']
    assert len(texts) == 2 and all(t.get_visible() and t.get_window_extent().width > 0 for t in texts)
    for text in texts:  # drawn inside the panel, below its title
        box, panel = text.get_window_extent(), left.get_window_extent()
        assert panel.y0 <= box.y0 and box.y1 <= panel.y1 and box.y1 <= left.title.get_window_extent().y0


@pytest.mark.parametrize('epochs', [1, 3, 26])
def test_curves_have_no_epoch_tick_where_no_run_has_an_epoch(tmp_path, saved_figures, epochs):
    """26 epochs: curves.png's epoch axis (from 1) had ticks at 0 and 27, epochs no run has."""
    write_report([_report_outcome('vit', v, 0, 60., epochs) for v in ('base', 'sl')], 'cifar10', tmp_path)
    ax = saved_figures['curves.png'].axes[0]
    low, high = ax.get_xlim()
    shown = [t for t in ax.get_xticks() if low <= t <= high]
    assert shown and min(shown) >= 1 and max(shown) <= epochs


def test_a_data_folder_with_a_newline_is_named_quoted_in_the_charts(tmp_path, saved_figures):
    """A data folder 'two\\nlines' was titled 'two lines' (textwrap joins the halves): a folder that is not the one the
    runs read, and report.md's data line broke in two."""
    from timm_sl.tools.reproduce import describe_data
    outcomes = [_report_outcome('vit', v, 0, 60.) for v in ('base', 'sl')]
    for outcome in outcomes:
        outcome.data = describe_data({'data_dir': str(tmp_path / 'two\nlines'), 'val_split': 'v\nal'})
    report = write_report(outcomes, 'cifar10', tmp_path / 'out')
    folder = repr(str(tmp_path / 'two\nlines'))
    for name in ('top1.png', 'curves.png'):
        assert folder in ''.join(saved_figures[name].get_suptitle().split('\n'))
    assert f'data: image folder {folder}, val split {repr("v" + chr(10) + "al")}\n' in report.read_text()


@pytest.mark.parametrize('dataset', ['torch/ci\nfar10', 'x\x85y'])
def test_a_recorded_dataset_name_of_a_newline_is_quoted_in_the_reports_data_line(dataset):
    """args.yaml's dataset damaged into a name holding a newline broke report.md's data line (and the charts' titles)
    in two, as a data folder's did before; U+0085 (a line break to matplotlib) went into them as is."""
    from timm_sl.tools.reproduce import describe_data
    assert describe_data({'dataset': dataset, 'data_dir': 'd'}) == f'{dataset!r} in d'


_HOSTILE = [None, -1, 0, 10 ** 30, float('nan'), float('inf'), '', [], {}, [1, 2], {'a': 1}, True, 'no/such/path',
            'a\nb', 3.5, '0']


def _mutated_lines(rng, data: bytes) -> bytes:
    """``data`` with one line dropped, doubled, swapped, cut, given a stray byte or a number replaced, or a hostile
    line inserted."""
    lines = data.split(b'\n')
    i = rng.randrange(len(lines))
    op = rng.randrange(7)
    if op == 0:
        del lines[i]
    elif op == 1:
        lines.insert(i, lines[i])
    elif op == 2:
        j = rng.randrange(len(lines))
        lines[i], lines[j] = lines[j], lines[i]
    elif op == 3:
        lines[i] = lines[i][:rng.randrange(len(lines[i]) + 1)]
    elif op == 4:
        lines[i] += bytes([rng.randrange(128, 256)])
    elif op == 5 and re.search(rb'\d', lines[i]):
        m = rng.choice(list(re.finditer(rb'\d+(\.\d+)?', lines[i])))
        lines[i] = lines[i][:m.start()] + rng.choice([b'0', b'1.2.3', b'99999999999999999999', b'', b'-1', b'.']) + \
            lines[i][m.end():]
    else:
        lines.insert(i, rng.choice([b'\xff\xfe', b'Train: 1 [999999/10 (0%)] (1.0s, 5.0/s)', b'Train: 0 [ 0/0 (0%)]',
                                    b'Skipped sample (index 7). bad', b'\x00' * 4,
                                    b'Train: 2 [ 3/10 (40%)] (0..1s, 2/s)']))
    return b'\n'.join(lines)


def test_seeded_hostile_train_logs_and_settings_records_of_finished_runs(fake_train, tmp_path, capsys):
    """Seeded mutations of what reproduce reads back from a finished run folder: train.log (its progress lines give
    the runs table's img/s; a line damaged into '1.2.3s' ended the report in a ValueError traceback, one of an update
    beyond its epoch's count gave a wrong rate) and run.json (a setting of a newline broke the refusal in two): the
    report's numbers come from a log read as a log, or none; a refusal is one line naming the run folder."""
    import random
    from timm_sl.tools.reproduce import Outcome, _collect, check_runs, run_settings
    out = tmp_path / 'out'
    assert main(_reproduce_args(tmp_path, out, fake_train, train_args=['--epochs', '3'])) == 0
    capsys.readouterr()
    run = plan_runs('cifar10', ['vit'], [0], out)[1]
    recipe = recipe_path('cifar10')
    settings = {run.name: run_settings(run, str(tmp_path), recipe, ['--epochs', '3'])}
    log = ''.join(f'Train: {e} [   0/10 (  0%)]  Loss: 1.0  Time: 0.200s, 100.00/s  (0.200s, 100.00/s)\n'
                  f'Train: {e} [   9/10 (100%)]  Loss: 1.0  Time: 0.100s, 200.00/s  (0.110s, 180.00/s)\n'
                  for e in range(3)).encode()
    record = (run.out_dir / 'run.json').read_text()
    rng = random.Random(25)
    for case in range(300):
        mutated = _mutated_lines(rng, log)
        (run.out_dir / 'train.log').write_bytes(mutated)
        outcome = _collect(Outcome(run, 'done', 'finished earlier'))
        progress = [line for line in mutated.split(b'\n')[:-1] if b'Train:' in line]  # a last line is being written
        if progress == [line for line in log.split(b'\n') if b'Train:' in line]:
            assert outcome.img_s == pytest.approx(198.), (case, mutated)  # 9 x 0.11 x 180 images in 0.9 s an epoch
        else:
            assert outcome.img_s is None or 0 < outcome.img_s < float('inf'), (case, mutated)
        assert (outcome.summary['best_top1'], outcome.summary['epochs']) == (52., 3)
        settings_now = json.loads(record)
        keys = rng.choice([['lr'], ['seed'], ['model'], ['recipe_settings', 'input_size'], ['recipe_settings', 'mean'],
                           ['train_args'],
                           ['data', 'num_classes'], ['model_kwargs']])
        parent = settings_now
        for key in keys[:-1]:
            parent = parent[key]
        if isinstance(parent.get(keys[-1]), list) and rng.random() < 0.5:  # one of its words: a train.py flag's
            parent, keys = parent[keys[-1]], [*keys, rng.randrange(len(parent[keys[-1]]))]
        was = parent.get(keys[-1]) if isinstance(parent, dict) else parent[keys[-1]]
        parent[keys[-1]] = rng.choice(_HOSTILE)
        (run.out_dir / 'run.json').write_text(json.dumps(settings_now))
        problems = check_runs([run], settings, 3)
        assert all('\n' not in p and str(run.out_dir) in p for p in problems), (case, problems)
        assert problems or parent[keys[-1]] == was or keys[0] == 'train_args', (case, keys)  # a record is compared


def _texts_off_the_figure(fig) -> List[str]:
    """The drawn texts of ``fig`` (tick labels inside their axis' view) whose box leaves the figure."""
    from matplotlib.text import Text
    fig.canvas.draw()
    renderer, page, off = fig.canvas.get_renderer(), fig.bbox.padded(1), []
    for text in fig.findobj(Text):
        if not text.get_visible() or not text.get_text().strip():
            continue
        ax = next((a for a in fig.axes if text in a.get_xticklabels() + a.get_yticklabels()), None)
        if ax is not None:  # a tick matplotlib keeps outside the view is not drawn
            low, high = sorted(ax.get_xlim() if text in ax.get_xticklabels() else ax.get_ylim())
            if not low <= text.get_position()[0 if text in ax.get_xticklabels() else 1] <= high:
                continue
        box = text.get_window_extent(renderer)
        if not (page.x0 <= box.x0 and box.x1 <= page.x1 and page.y0 <= box.y0 and box.y1 <= page.y1):
            off.append(text.get_text())
    return off


def test_a_narrow_gain_panel_keeps_its_title_inside_the_figure(tmp_path):
    """One SL gain beside four bars: the gain panel is a fifth of the width, and its title 'SL − baseline (of the
    means)' ran off the figure's right edge ('SL − baseline (of the mea')."""
    pytest.importorskip('matplotlib')
    outcomes = [_outcome('cait', 'base', 0, 50.), _outcome('vit', 'base', 0, 40.), _outcome('vit', 'base', 1, 42.),
                _outcome('vit', 'sl', 0, 96.), _outcome('t2t', 'base', 0, 100.)]
    fig = _plot_top1(aggregate(outcomes, 'cifar100'), tmp_path / 'top1.png', 'cifar100', 'cifar100')
    assert _texts_off_the_figure(fig) == []
    assert fig.axes[1].get_title().replace('\n', ' ') == 'SL − baseline (of the means)'


def test_top1_charts_of_hostile_rows_at_random_draw_every_value_true_and_inside(monkeypatch):
    """Seeded fuzz of top1.png's drawing (24 figures; every fourth drawn to check its texts): 1-4 families of any rows,
    1-3 seeds, top-1 of 0, 100, equal values and ordinary ones, runs failed, interrupted, diverged or of other epoch
    counts, kwargs of every row long, emoji or RTL. Every measured bar is its row's mean, labelled to 2 places; every
    bar, whisker and gain lies inside its panel; only seeds > 1 claim a ± spread or a mean; no text leaves the figure
    (a narrow gain panel's title did)."""
    import math
    import random
    pytest.importorskip('matplotlib')
    from timm_sl.tools import plot
    monkeypatch.setattr(plot, 'save', lambda fig, path, before_replace=None: None)
    tops = [0., 100., 50., 50., None, 99.999, 0.001]
    extras = [{}, {'depth': 1}, {'depth': 1, 'note': 'x' * 120}, {'tag': '😀'}, {'tag': 'مرحبا'}]
    for seed in range(24):
        r = random.Random(seed)
        extra, outcomes = r.choice(extras), []
        for family in r.sample(sorted(VARIANTS), r.randint(1, 4)):
            for variant in r.sample(sorted(VARIANTS[family]), r.randint(1, len(VARIANTS[family]))):
                for s in range(r.choice([1, 1, 2, 3])):
                    top1 = r.choice(tops) if r.random() < .5 else round(r.uniform(0, 100), 3)
                    summary = None if r.random() < .1 else dict(best_top1=top1, epochs=r.choice([1, 2, 2, 3]))
                    if summary and r.random() < .15:
                        summary['diverged_epoch'] = 2
                    run = Run(family, variant, s, f'sl_{family}_32', {**VARIANTS[family][variant], **extra}, Path('x'))
                    outcomes.append(Outcome(run, r.choice(['done'] * 4 + ['failed', 'interrupted']), summary=summary))
        rows = aggregate(outcomes, r.choice(['cifar10', 'cifar100', 'svhn', 'tiny-imagenet']))
        fig, case = _plot_top1(rows, Path('top1.png'), 'cifar100', r.choice(['cifar100', '/data/' + 'd' * 200])), seed
        left, right = fig.axes[:2]
        measured = [r for r in rows if r['mean'] is not None]
        heights = [p.get_height() for p in left.patches][:len(measured)]  # the measured bars come first
        assert len(heights) == len(measured), case
        assert all(math.isclose(h, m['mean']) for h, m in zip(heights, measured)), case
        values = [t.get_text().split('\n')[0] for t in left.texts]
        assert all(f'{m["mean"]:.2f}' in values for m in measured), case
        low, high = left.get_ylim()
        assert all(0 <= low <= m['mean'] + (m['std'] or 0) <= high for m in measured), case
        low, high = right.get_ylim()
        assert all(low <= row[k] <= high for row in rows for k in ('delta', 'paper_delta') if row[k] is not None), case
        assert ('±' in left.get_title()) == any(m['seeds'] > 1 for m in measured), case
        gains = [row for row in rows if row['delta'] is not None]
        bases = [row for row in rows if row['variant'] == 'base' and row['family'] in {g['family'] for g in gains}]
        assert ('of the means' in right.get_title().replace('\n', ' ')) == any(
            row['seeds'] > 1 for row in gains + bases), case
        if seed % 4 == 0:
            assert _texts_off_the_figure(fig) == [], case
        fig.clear()


def test_the_gain_panel_claims_means_only_where_a_gain_drawn_is_of_them(tmp_path):
    """A family of two seeds without a gain gave '(of the means)' to the gain panel whose only gain was of one seed
    against one seed."""
    pytest.importorskip('matplotlib')
    single = [_outcome('vit', 'base', 0, 40.), _outcome('vit', 'sl', 0, 46.)]
    seeds = [_outcome('t2t', 'base', 0, 60.), _outcome('t2t', 'base', 1, 62.)]
    fig = _plot_top1(aggregate(single + seeds, 'cifar100'), tmp_path / 'top1.png', 'cifar100', 'cifar100')
    assert fig.axes[1].get_title() == 'SL − baseline'
    fig = _plot_top1(aggregate(single + [_outcome('vit', 'base', 1, 42.)], 'cifar100'), tmp_path / 'top1.png',
                     'cifar100', 'cifar100')
    assert fig.axes[1].get_title().replace('\n', ' ') == 'SL − baseline (of the means)'


def test_a_full_disk_at_any_write_of_reproduces_own_files_is_one_line_and_the_same_command_then_ends(
        fake_train, tmp_path, capsys, monkeypatch):
    """A disk that fills while reproduce writes a file of its own (a run's records, the report, the charts, the
    manifest of the report files) ends in one line naming that file; once room is made, the same command ends the
    sweep. A report file written before its manifest could record it was refused as 'not written by timm-sl
    reproduce' by every later call."""
    import errno
    import pathlib
    data = tmp_path / 'data'
    _folders(data, {'train': {str(c): ['a.png'] for c in range(10)}, 'test': {str(c): ['a.png'] for c in range(10)}})
    targets = [('sessions.json', 1), ('report.md', 1), ('report_manifest.json', 1), ('report_manifest.json', 2),
               ('top1.png', 1), ('curves.png', 1)]
    try:
        import matplotlib.figure
    except ImportError:
        targets = targets[:-2]
    for target, nth in targets:
        out = tmp_path / f'{target}-{nth}'
        argv = _reproduce_args(data, out, fake_train, train_args=('--epochs', '1'))
        seen = []

        def full(path) -> bool:
            name = Path(str(path)).name
            seen.append(name.lstrip('.').split('.partial')[0] == target)
            return seen.count(True) == nth and seen[-1]

        def write_text(self, *args, real=pathlib.Path.write_text, **kwargs):
            if full(self):
                raise OSError(errno.ENOSPC, 'No space left on device', str(self))
            return real(self, *args, **kwargs)
        with monkeypatch.context() as m:
            m.setattr(pathlib.Path, 'write_text', write_text)
            if target.endswith('.png'):
                real_save = matplotlib.figure.Figure.savefig
                m.setattr(matplotlib.figure.Figure, 'savefig',
                          lambda self, file, *a, **k: full(file) and (_ for _ in ()).throw(
                              OSError(errno.ENOSPC, 'No space left on device', str(file))) or real_save(
                              self, file, *a, **k))
            assert _exit_status(argv) == 2, target
        err = _one_error(capsys)
        assert target in err and 'no space left on device' in err, err
        assert _exit_status(argv) == 0, (target, nth, capsys.readouterr().err)
        capsys.readouterr()
        results = json.loads((out / 'results.json').read_text())
        assert [(r['status'], r['summary']['epochs']) for r in results['runs']] == [('done', 1)] * 2, target
    if len(targets) < 6:
        pytest.importorskip('matplotlib')


def test_seeded_writes_of_the_report_cut_at_a_random_moment_leave_files_the_manifest_records(tmp_path, monkeypatch):
    """150 reports written over earlier ones, each cut at a seeded write or move into place (a full disk, or a kill:
    KeyboardInterrupt) of report.md, the charts, results.json or the manifest: every report file there is still one
    the manifest records, so the next call replaces it instead of refusing it as not its own (a kill after the
    manifest was saved and before its file was moved left the earlier file refused). Charts stubbed (no
    matplotlib)."""
    import errno
    import os
    import pathlib
    import random
    from timm_sl.tools import reproduce
    from timm_sl.tools.errors import write_atomically
    from timm_sl.tools.reproduce import check_report_files

    def chart(first, path, *args):  # record: the last argument, where given
        write_atomically(path, lambda file: file.write_bytes(random.randbytes(16)),
                         args[-1] if callable(args[-1]) else None)
    monkeypatch.setattr(reproduce, '_plot_top1', chart)
    monkeypatch.setattr(reproduce, '_plot_curves', chart)
    monkeypatch.setattr('timm_sl.tools.plot.require_matplotlib', lambda: None)
    real_text, real_bytes, real_replace = pathlib.Path.write_text, pathlib.Path.write_bytes, os.replace
    out = tmp_path / 'out'
    for case in range(150):
        rng = random.Random(case)
        calls, cut = [0], rng.randrange(1, 22)

        def maybe_cut(path):
            calls[0] += 1
            if calls[0] == cut:
                raise OSError(errno.ENOSPC, 'No space left on device', str(path)) if rng.random() < 0.5 \
                    else KeyboardInterrupt()
        monkeypatch.setattr(pathlib.Path, 'write_text',
                            lambda self, *a, **k: (maybe_cut(self), real_text(self, *a, **k))[1])
        monkeypatch.setattr(pathlib.Path, 'write_bytes',
                            lambda self, *a, **k: (maybe_cut(self), real_bytes(self, *a, **k))[1])
        monkeypatch.setattr(os, 'replace', lambda source, target: (maybe_cut(target), real_replace(source, target))[1])
        outcomes = [_report_outcome('vit', v, 0, rng.uniform(10, 90)) for v in ('base', 'sl')]
        try:
            write_report(outcomes, 'cifar10', out)
        except (OSError, KeyboardInterrupt):
            pass
        monkeypatch.setattr(pathlib.Path, 'write_text', real_text)
        monkeypatch.setattr(pathlib.Path, 'write_bytes', real_bytes)
        monkeypatch.setattr(os, 'replace', real_replace)
        check_report_files(out)  # raised: a file of reproduce's it would refuse as not its own


def test_class_folders_sharing_a_label_are_found_in_one_pass_lists_too():
    """Every pair of class folders was compared (about 29 s a split for ImageNet-21k's 21,841); a pass with a dict
    missed two folders sharing a list label (a .pkl edit) once it skipped unhashable labels."""
    from timm_sl.tools.data_check import _sharing_a_label
    names = [f'n{i:05d}' for i in range(21841)]
    mapping = {n: i for i, n in enumerate(names)}
    assert _sharing_a_label(names, mapping) is None
    assert _sharing_a_label(names, dict(mapping, n21840=5)) == ('n00005', 'n21840')
    assert _sharing_a_label(['a', 'b', 'c'], {'a': [1], 'b': 2, 'c': [1]}) == ('a', 'c')
    assert _sharing_a_label(['a', 'b'], {'a': [1], 'b': [2]}) is None
