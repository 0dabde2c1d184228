"""``timm-sl reproduce`` as a sweep: runs at once, pinned to GPUs, stopped and resumed, timed, shown, with the extra
train.py arguments merged into every run (a fake train.py that records what it was given and when)."""
import io
import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from timm_sl.tools.cli import main
from timm_sl.tools.sweep import (
    MAX_RUNS_PER_GPU, Gpu, Job, SweepStopped, default_jobs, device_groups, log_throughput, parse_gpus, run_jobs,
    train_throughput)


def exit_status(argv) -> int:
    """``timm-sl ARGV``'s exit status: what main returns, or the status it ends with (a failed run: 1)."""
    try:
        return main(argv)
    except SystemExit as e:
        return e.code


REPO = Path(__file__).resolve().parents[1]

# A stand-in for timm's train.py that keeps a record (record.jsonl: start / end time, pid, CUDA_VISIBLE_DEVICES, the
# pid of a helper process like a data worker, argv) and writes what the sweep reads: a progress line per epoch in
# train.py's format (10 steps of FAKE_STEP_S s at 1280 img/s, 640 in odd epochs), a summary.csv row and last.pth.tar
# after FAKE_EPOCH_S s per epoch. Ctrl-C (SIGINT) ends it with exit 0 after the last whole epoch, as train.py does.
FAKE_TRAIN = textwrap.dedent('''
    import json, os, subprocess, sys, time, zipfile
    from pathlib import Path
    argv = sys.argv[1:]
    def value(flag, default=None):
        return argv[argv.index(flag) + 1] if flag in argv else default
    out = Path(value('--output')) / value('--experiment')
    worker = subprocess.Popen([sys.executable, '-c', 'import signal, time; signal.signal(signal.SIGINT, '
                               'signal.SIG_IGN); time.sleep(600)'])
    record = dict(start=time.time(), pid=os.getpid(), worker=worker.pid, argv=argv,
                  gpu=os.environ.get('CUDA_VISIBLE_DEVICES'))
    start = int(zipfile.ZipFile(value('--resume')).read('epoch')) + 1 if value('--resume') else 0
    try:
        for epoch in range(start, int(value('--epochs'))):
            time.sleep(float(os.environ.get('FAKE_EPOCH_S', '0.2')))
            rate = 640 if epoch % 2 else 1280
            step = 0.2 if epoch % 2 else 0.1
            print(f'Train: {epoch} [   9/10 (100%)]  Loss: 2.30 (2.30)  Time: {step:.3f}s, {rate:.2f}/s  '
                  f'({step:.3f}s, {rate:.2f}/s)  LR: 1.000e-03  Data: 0.001 (0.001)', flush=True)
            with open(out / 'summary.csv', 'a') as f:
                f.write(('' if epoch else 'epoch,train_loss,eval_loss,eval_top1,eval_top5\\n') +
                        f'{epoch},1.0,1.0,{10 + epoch},50\\n')
            with zipfile.ZipFile(out / 'last.pth.tar', 'w') as z:  # a zip archive, as torch.save writes
                z.writestr('epoch', str(epoch))
    except KeyboardInterrupt:
        pass
    record['end'] = time.time()
    with open(out / 'record.jsonl', 'a') as f:
        f.write(json.dumps(record) + '\\n')
''')


@pytest.fixture
def fake_train(tmp_path):
    script = tmp_path / 'train.py'
    script.write_text(FAKE_TRAIN)
    (tmp_path / 'data').mkdir()
    return script



def _exit_status(argv) -> int:
    """What ``timm-sl`` ends with for ``argv``: main's return value, or the code of the SystemExit it raises."""
    try:
        return main(argv)
    except SystemExit as e:
        return e.code


def _args(tmp_path, *options, train_args=('--epochs', '2'), families=('vit',)):
    return ['reproduce', '--data-dir', str(tmp_path / 'data'), '--dataset', 'cifar10', '--families', *families,
            '--out', str(tmp_path / 'out'), '--train-script', str(tmp_path / 'train.py'), *options, '--', *train_args]


def _records(out: Path):
    return {d.name: [json.loads(line) for line in (d / 'record.jsonl').read_text().splitlines()]
            for d in sorted((out / 'runs').iterdir()) if (d / 'record.jsonl').is_file()}


def _alive(pid: int) -> bool:
    """The process exists and is not a zombie (an exited orphan its new parent has not reaped yet)."""
    try:
        status = Path(f'/proc/{pid}/status').read_text()
    except OSError:
        return False
    return '\nState:\tZ' not in status


def test_runs_at_once_never_more_than_jobs(fake_train, tmp_path, capsys):
    assert main(_args(tmp_path, '--seeds', '0', '1', '--jobs', '2')) == 0
    records = _records(tmp_path / 'out')
    assert sorted(records) == ['vit-base-s0', 'vit-base-s1', 'vit-sl-s0', 'vit-sl-s1']
    spans = [(r[0]['start'], r[0]['end']) for r in records.values()]
    at_start = [sum(s <= start < e for s, e in spans) for start, _ in spans]  # runs going when each one started
    assert max(at_start) == 2  # two at once, never three
    assert '4 runs (vit x seeds 0 1) on cifar10 with cifar10.yaml' in capsys.readouterr().out


def test_each_run_is_pinned_to_a_gpu_spread_evenly(fake_train, tmp_path, capsys):
    assert main(_args(tmp_path, '--seeds', '0', '1', '--jobs', '4', '--gpus', '0,1')) == 0
    records = _records(tmp_path / 'out')
    assert sorted(r[0]['gpu'] for r in records.values()) == ['0', '0', '1', '1']
    printed = capsys.readouterr().out
    assert '4 run(s) at once (--jobs), GPU 0 / 1' in printed and 'started on GPU 1' in printed
    report = (tmp_path / 'out' / 'report.md').read_text()
    assert f'| vit-sl-s1 | done | 11.00 | 2 | 2 | ' in report  # best epoch from 1 and '| 853 | 1 |' in report
    sessions = json.loads((tmp_path / 'out' / 'runs' / 'vit-sl-s1' / 'sessions.json').read_text())
    assert [s['devices'] for s in sessions] == ['1'] and sessions[0]['epochs'] == [0, 2]
    assert sessions[0]['given_epochs'] == 2  # train.py's --epochs, which a cool-down would train more than


def test_device_groups_and_gpu_options():
    assert device_groups(['0', '1', '2', '3'], 1) == ['0', '1', '2', '3']
    assert device_groups(['0', '1', '2', '3', '4'], 2) == ['0,1', '2,3']
    with pytest.raises(ValueError, match=r'--nproc 4 needs 4 GPUs per run; --gpus gives 2 \(0,1\)'):
        device_groups(['0', '1'], 4)
    assert parse_gpus('auto') is None and parse_gpus('0, 2') == ['0', '2'] and parse_gpus('01') == ['1']
    for bad in ('', '0,,1', '1,1', 'x', '0,gpu1', '-1', '1.0', '1,01'):
        with pytest.raises(ValueError, match='--gpus'):
            parse_gpus(bad)


@pytest.mark.parametrize('option,message', [
    (['--jobs', '0'], '--jobs 0 is not allowed; expected an integer >= 1'),
    (['--gpus', '0,0'], '--gpus 0,0 names a device twice; expected each device once'),
    (['--gpus', 'x'], "--gpus 'x' is not allowed; expected auto or GPU indices (integers >= 0) separated by commas, "
                      "e.g. 0,1"),
    (['--train-args', '--epochs', 'x'], '--epochs x after -- is not allowed; expected an integer >= 1'),
    (['--train-args', '--epochs=0'], '--epochs 0 after -- is not allowed; expected an integer >= 1'),
    (['--gpus', '0', '--nproc', '2'], '--nproc 2 needs 2 GPUs per run; --gpus gives 1 (0)'),
    # GPU 2 stayed idle, unsaid
    (['--gpus', '0,1,2', '--nproc', '2'], '--gpus 0,1,2 gives 3 GPUs, not a multiple of --nproc 2: GPU 2 would stay '
                                          'idle; allowed: a multiple of 2 GPUs (e.g. --gpus 0,1)'),
])
def test_bad_sweep_options_are_one_line(fake_train, tmp_path, capsys, option, message):
    if option[0] == '--train-args':  # what goes after --
        assert _exit_status(_args(tmp_path, train_args=option[1:])) == 2
    else:
        assert _exit_status(_args(tmp_path, *option)) == 2
    assert capsys.readouterr().err == f'timm-sl reproduce: {message}\n'
    assert not (tmp_path / 'out').exists()


@pytest.mark.parametrize('device,refused', [('cuda:1', True), ('cuda:0', False), ('cuda', False)])
def test_a_device_index_no_pinned_run_sees_is_refused(fake_train, tmp_path, capsys, device, refused):
    """Each run sees only its own GPU (CUDA_VISIBLE_DEVICES=0 or 1) as cuda:0: '-- --device cuda:1' failed every run
    once started, or trained on another run's GPU."""
    status = _exit_status(_args(tmp_path, '--gpus', '0,1', train_args=('--epochs', '1', '--device', device)))
    err = capsys.readouterr().err
    if refused:
        assert status == 2 and err == (
            'timm-sl reproduce: --device cuda:1 after -- names a GPU no run sees: each run sees only its own GPU(s) '
            '(CUDA_VISIBLE_DEVICES), as cuda:0; allowed: --gpus 1 to pick that GPU, and --device cuda\n')
        assert not (tmp_path / 'out').exists()
    else:
        assert status == 0, err


def test_default_jobs_rule():
    h100 = [Gpu('0', 79.2)]
    assert default_jobs(h100, workers=3, cores=16)[0] == 4  # 16 cores / (3 + 1): the data workers decide
    assert default_jobs(h100, workers=4, cores=16)[0] == 3
    assert default_jobs(h100, workers=0, cores=64)[0] == MAX_RUNS_PER_GPU
    assert default_jobs([Gpu('0', 12.)], workers=1, cores=64)[0] == 1  # memory decides
    assert default_jobs([Gpu('0', 79.2), Gpu('1', 79.2)], workers=1, cores=16)[0] == 8
    assert default_jobs([Gpu(str(i), 79.2) for i in range(4)], nproc=2, workers=3, cores=64)[0] == 8
    assert default_jobs([], workers=1, cores=64) == (1, 'no GPU: one run at a time')
    assert '16 cores / (1 x (3 workers + 1)) = 4 by CPU' in default_jobs(h100, workers=3, cores=16)[1]


def test_workers_read_from_the_train_args_for_the_rule(fake_train, tmp_path, capsys, monkeypatch):
    from timm_sl.tools import reproduce as module
    monkeypatch.setattr(module, '_no_gpu_here', lambda env: False)
    monkeypatch.setattr(module, 'probe_gpus', lambda: [Gpu('3', 79.2), Gpu('5', 79.2)])
    monkeypatch.setattr(module.os, 'sched_getaffinity', lambda pid: set(range(16)), raising=False)
    assert main(_args(tmp_path, train_args=['--epochs', '1', '-j', '1', '--workers', '3'])) == 0
    printed = capsys.readouterr().out
    assert '4 run(s) at once (2 x min(6, 79 GiB / 8 GiB per run) = 12 by GPU, 16 cores / (1 x (3 workers + 1)) = 4 ' \
           'by CPU), GPU 3 / 5' in printed
    assert sorted(r[0]['gpu'] for r in _records(tmp_path / 'out').values()) == ['3', '5']


@pytest.mark.parametrize('workers', [['-j0'], ['-j=0'], ['--workers=0'], ['--workers', '3', '-j0']])
def test_workers_in_every_spelling_train_py_takes_are_planned_with(fake_train, monkeypatch, workers):
    """-j0 / -j=0 (as train.py's argparse takes them) were not read: the rule planned with the recipe's workers."""
    import argparse
    from timm_sl.tools import reproduce as module
    monkeypatch.setattr(module, '_no_gpu_here', lambda env: False)
    monkeypatch.setattr(module, 'probe_gpus', lambda: [Gpu('3', 79.2)])
    monkeypatch.setattr(module.os, 'sched_getaffinity', lambda pid: set(range(4)), raising=False)
    args = argparse.Namespace(jobs=None, gpus='auto', nproc=1)
    jobs, _, how = module.plan_sweep(args, module.recipe_path('cifar10'), ['--epochs', '1', *workers], fake_train)
    assert jobs == 4 and '4 cores / (1 x (0 workers + 1)) = 4 by CPU' in how


def test_gpus_found_but_not_a_multiple_of_nproc_say_which_stay_idle(fake_train, tmp_path, capsys, monkeypatch):
    from timm_sl.tools import reproduce as module
    monkeypatch.setattr(module, '_no_gpu_here', lambda env: False)
    monkeypatch.setattr(module, 'probe_gpus', lambda: [Gpu(str(i), 79.2) for i in range(3)])
    assert main(_args(tmp_path, '--nproc', '2', '--jobs', '1', train_args=['--epochs', '1'])) == 0
    assert '1 run(s) at once (--jobs), GPU 0,1 (GPU 2 idle: --nproc 2)\n' in capsys.readouterr().out


def test_stopped_sweep_leaves_no_process_and_resumes(fake_train, tmp_path):
    """SIGINT to the sweep (Ctrl-C) while two runs train: both are stopped with their helper processes (which ignore
    SIGINT), the sweep exits 130 with the report, and the same command continues each run from its last epoch."""
    env = dict(os.environ, FAKE_EPOCH_S='0.7', PYTHONPATH=str(REPO))
    cmd = [sys.executable, '-m', 'timm_sl.tools.cli', *_args(tmp_path, '--jobs', '2', train_args=['--epochs', '3'])]
    # a suite started in the background ignores SIGINT, and so would the sweep: it gets Ctrl-C as at a terminal
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        sweep = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    finally:
        signal.signal(signal.SIGINT, before)
    runs = tmp_path / 'out' / 'runs'
    deadline = time.monotonic() + 120
    while not all((runs / r / 'last.pth.tar').is_file() for r in ('vit-base-s0', 'vit-sl-s0')):
        assert time.monotonic() < deadline and sweep.poll() is None, sweep.stdout.read() if sweep.poll() else ''
        time.sleep(0.05)
    sweep.send_signal(signal.SIGINT)
    printed = sweep.communicate(timeout=60)[0]
    assert sweep.returncode == 130, printed
    assert 'stopping 2 running train.py process(es); run the same command again to resume' in printed
    assert 'run 2/2: vit-sl-s0 interrupted; run the same command again to resume' in printed
    first = _records(tmp_path / 'out')
    for name, (record,) in first.items():
        assert not _alive(record['pid']) and not _alive(record['worker']), name  # no orphan
        assert not (runs / name / 'done.json').exists()
    report = (tmp_path / 'out' / 'report.md').read_text()
    assert '| vit-base-s0 | interrupted |' in report and '| vit-sl-s0 | interrupted |' in report

    again = subprocess.run(cmd, env=dict(env, FAKE_EPOCH_S='0.05'), capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stdout + again.stderr
    assert 'run 1/2: vit-base-s0 started (resuming: ' in again.stdout
    for name, records in _records(tmp_path / 'out').items():
        assert len(records) == 2 and records[1]['argv'][-4:] == ['--resume', str(runs / name / 'last.pth.tar'),
                                                                 '--epochs', '3']
        rows = (runs / name / 'summary.csv').read_text().splitlines()[1:]
        assert [int(r.split(',')[0]) for r in rows] == [0, 1, 2]  # each epoch once: resumed, not restarted
        sessions = json.loads((runs / name / 'sessions.json').read_text())
        assert [s['status'] for s in sessions] == ['interrupted', 'exited']
        assert sessions[1]['epochs'][1] == 3 and sessions[0]['seconds'] >= 0.7  # one fake epoch (rounded to 0.1 s)
        wall = sum(s['seconds'] for s in sessions)
        results = json.loads((tmp_path / 'out' / 'results.json').read_text())
        assert next(r for r in results['runs'] if r['name'] == name)['wall_seconds'] == pytest.approx(wall, abs=0.2)


def test_throughput_from_train_py_logs(tmp_path):
    """Batches of 128; epoch 0's first step takes 5 s (compilation), the others 0.1 s; epoch 1 steps 0.2 s, logged
    again after a resume; epoch 2 has only its last line (the first was read before: all steps count)."""
    log = tmp_path / 'train.log'
    log.write_text(
        'Train: 0 [   0/10 ( 10%)]  Loss: 2.3 (2.3)  Time: 5.000s,   25.60/s  (5.000s,   25.60/s)  LR: 1e-3\n'
        'Train: 0 [   9/10 (100%)]  Loss: 2.3 (2.3)  Time: 0.100s, 1280.00/s  (0.590s,  216.95/s)  LR: 1e-3\n'
        'Test: [   0/2]  Time: 0.1\n'
        'Train: 1 [   0/10 ( 10%)]  Loss: 2.3 (2.3)  Time: 0.300s,  426.67/s  (0.300s,  426.67/s)  LR: 1e-3\n'
        'Train: 1 [   4/10 ( 50%)]  Loss: 2.3 (2.3)  Time: 0.200s,  640.00/s  (0.220s,  581.82/s)  LR: 1e-3\n'
        'Train: 1 [   0/10 ( 10%)]  Loss: 2.3 (2.3)  Time: 0.200s,  640.00/s  (0.200s,  640.00/s)  LR: 1e-3\n'
        'Train: 1 [   9/10 (100%)]  Loss: 2.3 (2.3)  Time: 0.200s,  640.00/s  (0.200s,  640.00/s)  LR: 1e-3\n'
        'Train: 2 [   9/10 (100%)]  Loss: 2.3 (2.3)  Time: 0.100s, 1280.00/s  (0.100s, 1280.00/s)  LR: 1e-3\n'
        'Train: 3 [   3/10 (  40%)]  Loss: 2.3 (2.3)  Time: 0.1')  # a line being written
    epochs, offset = log_throughput(log)
    assert epochs == {0: (10, 0.59, 216.95, 5.), 1: (10, 0.2, 640., 0.2), 2: (10, 0.1, 1280., None)}
    assert offset == log.read_text().rfind('\n') + 1 and log_throughput(log, offset) == ({}, offset)
    images, seconds = train_throughput(log)
    assert images == pytest.approx(9 * 128 + 9 * 128 + 10 * 128, rel=1e-4)
    assert seconds == pytest.approx(0.9 + 1.8 + 1.0, rel=1e-4)
    assert train_throughput(log, steady=False) == pytest.approx((30 * 128, 5.9 + 2. + 1.), rel=1e-4)
    assert train_throughput(tmp_path / 'missing.log') is None


def test_a_damaged_progress_line_is_no_progress_line(tmp_path):
    """A progress line damaged in the log (a number of two points, an update beyond its epoch's count) is read as no
    line: not a ValueError out of every reader of the log (reproduce's report, the sweep's progress), nor a rate."""
    log = tmp_path / 'train.log'
    log.write_text(
        'Train: 0 [   0/10 ( 10%)]  Loss: 2.3 (2.3)  Time: 0.100s, 1280.00/s  (0.100s, 1280.00/s)  LR: 1e-3\n'
        'Train: 0 [   9/10 (100%)]  Loss: 2.3 (2.3)  Time: 0.100s, 1280.00/s  (0.1.00s, 1280.00/s)  LR: 1e-3\n'
        'Train: 1 [   9/10 (100%)]  Loss: 2.3 (2.3)  Time: 0.100s, 1280.00/s  (0.100s, 1280.00/s)  LR: 1e-3\n'
        'Train: 1 [999999/10 (100%)]  Loss: 2.3 (2.3)  Time: 1.000s, 5.00/s  (1.000s, 5.00/s)  LR: 1e-3\n')
    assert log_throughput(log)[0] == {0: (1, 0.1, 1280., 0.1), 1: (10, 0.1, 1280., None)}


def test_progress_lines_without_a_terminal_and_a_bar_on_one(fake_train, tmp_path, capsys):
    stale = tmp_path / 'out' / 'runs' / 'vit-base-s0'  # an attempt that finished no epoch: started afresh
    stale.mkdir(parents=True)
    (stale / 'summary.csv').write_text('epoch,train_loss,eval_loss,eval_top1,eval_top5\n')
    assert main(_args(tmp_path, '--jobs', '2')) == 0
    lines = capsys.readouterr().out.splitlines()
    assert 'run 1/2: vit-base-s0 started, ETA unknown until an epoch finishes' in lines
    epoch = [line for line in lines if line.startswith('run 2/2: vit-sl-s0: 1/2 epochs done, top-1 10.00')]
    assert len(epoch) == 1 and '1,280 img/s; sweep: ' in epoch[0] and ', ETA 0:' in epoch[0]
    assert any(line.startswith('run 2/2: vit-sl-s0 finished in 0:00:0') for line in lines)

    jobs = [Job(f'j{i}', tmp_path / f'j{i}', 2, lambda i=i: [sys.executable, str(fake_train), '--output', str(tmp_path),
                                                             '--experiment', f'j{i}', '--epochs', '2'])
            for i in range(2)]
    results = run_jobs(jobs, concurrency=2, tty=True, echo=lambda line: pytest.fail(line), poll=0.05)
    assert [r.code for r in results] == [0, 0] and [r.epochs_after for r in results] == [2, 2]
    bar = capsys.readouterr().out
    assert 'run 1/2: j0 started' in bar  # events above the bar
    assert '4/4' in bar and '2/2 runs done, 0 running' in bar and 'epochs done' not in bar


def test_jobs_of_a_sweep_that_ignores_sigint_stop_on_its_sigint(tmp_path):
    """A sweep started as a background job of a script (SIGINT ignored, and so in each train.py it started): its
    SIGINT did not stop train.py, which was killed after the grace time, perhaps while saving its checkpoint."""
    script = 'import signal, sys, time; print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)\n' \
             'sys.stdout.flush(); time.sleep(30)'
    import threading
    jobs = [Job('j0', tmp_path / 'j0', 1, lambda: [sys.executable, '-c', script])]

    def stop():  # kill PID, as one stops a background job
        while not (tmp_path / 'j0' / 'train.log').is_file() or not (tmp_path / 'j0' / 'train.log').read_text():
            time.sleep(0.02)
        os.kill(os.getpid(), signal.SIGTERM)
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        start = time.monotonic()
        threading.Thread(target=stop, daemon=True).start()
        results = run_jobs(jobs, echo=lambda line: None, tty=False, poll=0.05, grace=20)
        assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN  # the sweep's own as it was
    finally:
        signal.signal(signal.SIGINT, before)
    assert results[0].status == 'interrupted' and time.monotonic() - start < 10  # stopped by SIGINT, not killed
    assert (tmp_path / 'j0' / 'train.log').read_text().startswith('True\n')


def test_a_second_sigterm_while_the_stop_records_the_runs_leaves_none_unrecorded(fake_train, tmp_path, monkeypatch):
    """SIGTERM (or Ctrl-C) again while the stopped sweep recorded its first run (sessions.json): the KeyboardInterrupt
    left run_jobs, the other runs got no record and reproduce wrote no report."""
    import threading
    monkeypatch.setenv('FAKE_EPOCH_S', '0.5')
    jobs = [Job(f'j{i}', tmp_path / f'j{i}', 9, lambda i=i: [sys.executable, str(fake_train), '--output',
                                                             str(tmp_path), '--experiment', f'j{i}', '--epochs', '9'])
            for i in range(2)]
    recorded = []

    def finish(result):  # the second signal comes while the first run's record is written
        recorded.append(result.job.name)
        if len(recorded) == 1:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.1)

    def stop():
        while not all((tmp_path / f'j{i}' / 'summary.csv').is_file() for i in range(2)):
            time.sleep(0.02)
        os.kill(os.getpid(), signal.SIGTERM)
    threading.Thread(target=stop, daemon=True).start()
    results = run_jobs(jobs, concurrency=2, finish=finish, echo=lambda line: None, tty=False, poll=0.05, grace=10)
    assert [r.status for r in results] == ['interrupted', 'interrupted'] and recorded == ['j0', 'j1']
    for i in range(2):  # no data worker of either left behind
        worker = json.loads((tmp_path / f'j{i}' / 'record.jsonl').read_text())['worker']
        deadline = time.monotonic() + 10
        while _alive(worker):
            assert time.monotonic() < deadline
            time.sleep(0.05)


def test_extra_model_kwargs_merge_with_each_rows_own(fake_train, tmp_path, capsys):
    assert main(_args(tmp_path, families=['vit', 'pit'], train_args=[
        '--epochs', '1', '--model-kwargs', 'mlp_ratio=2.0', 'attn_drop_rate=0.1', '--torchcompile'])) == 0
    argv = {name: r[0]['argv'] for name, r in _records(tmp_path / 'out').items()}
    for name, words in argv.items():
        assert words.count('--model-kwargs') == 1 and words[-1] == '--torchcompile', name
    kwargs = {name: words[words.index('--model-kwargs') + 1:words.index('--lr')] for name, words in argv.items()}
    assert kwargs['vit-base-s0'] == ['spt=False', 'lsa=False', 'mlp_ratio=2.0', 'attn_drop_rate=0.1']
    assert kwargs['vit-sl-s0'] == ['mlp_ratio=2.0', 'attn_drop_rate=0.1']
    assert kwargs['pit-sl_no_spool-s0'] == ['spt_pool=False', 'mlp_ratio=2.0', 'attn_drop_rate=0.1']
    report = (tmp_path / 'out' / 'report.md').read_text()
    assert '| vit | baseline | `sl_vit_32` spt=False lsa=False mlp_ratio=2.0 attn_drop_rate=0.1 | 1/1 |' in report
    assert '-- --epochs 1 --model-kwargs mlp_ratio=2.0 attn_drop_rate=0.1 --torchcompile\n' in report


@pytest.mark.parametrize('train_args,message', [
    (['--model-kwargs', 'lsa=True', 'depth=2'], '--model-kwargs lsa=True after -- would change the Table 2 rows, '
                                                'which set lsa, spt themselves; allowed: other model kwargs (e.g. '
                                                'depth=2), which every row gets'),
    (['--model-kwargs', 'depth'], "--model-kwargs after --: 'depth' is not KEY=VALUE; allowed: words like depth=6 "
     "mlp_ratio=2"),
    # train.py keeps the last --model-kwargs (and a dict the last KEY): depth=2 was dropped from every run unsaid
    (['--model-kwargs', 'depth=2', '--model-kwargs', 'mlp_ratio=2'], '--model-kwargs given 2 times after -- '
     '(--model-kwargs depth=2, then --model-kwargs mlp_ratio=2): train.py keeps only the last; allowed: all KEY=VALUE '
     'words after one --model-kwargs (--model-kwargs depth=2 mlp_ratio=2)'),
    (['--model-kwargs', 'depth=2', 'depth=3'], '--model-kwargs after --: depth given twice (depth=2 depth=3); allowed: '
     'each KEY once'),
    (['--model', 'sl_vit_tiny'], '--model after -- is set for each run by reproduce (--model, --output, --experiment, '
                                 '--resume, --seed); allowed after --: the other train.py arguments'),
    # train.py reads the last --config: every run trained cifar100's recipe under a report of cifar10's
    *[([flag, 'recipes/cifar100.yaml'] if flag else ['--config=recipes/cifar100.yaml'],
       f'{flag or "--config=recipes/cifar100.yaml"} after -- would replace the recipe reproduce passes for --dataset '
       f"cifar10 (train.py reads the last --config), while the report and paper column stay cifar10's; allowed: "
       f'--dataset to pick a recipe, single settings after -- (e.g. -- --epochs 10)') for flag in ('--config', '-c',
                                                                                                  '--conf', '')],
])
def test_extra_arguments_that_would_change_every_row_are_refused(fake_train, tmp_path, capsys, train_args, message):
    assert _exit_status(_args(tmp_path, train_args=['--epochs', '1', *train_args])) == 2
    assert capsys.readouterr().err == f'timm-sl reproduce: {message}\n'
    assert not (tmp_path / 'out').exists()


def test_unknown_model_without_the_plugin_installed_says_how_to_install(fake_train, tmp_path, capsys, monkeypatch):
    import importlib.metadata
    fake_train.write_text("print('RuntimeError: Unknown model (sl_vit_32)'); raise SystemExit(1)")
    real = importlib.metadata.entry_points

    def plugins(found):  # the timm.plugins entry points this Python has, as found
        return lambda **kwargs: found if kwargs.get('group') == 'timm.plugins' else real(**kwargs)
    monkeypatch.setattr(importlib.metadata, 'entry_points',
                        plugins([importlib.metadata.EntryPoint('timm_sl', 'timm_sl', 'timm.plugins')]))
    assert exit_status(_args(tmp_path)) == 1
    log = tmp_path / 'out' / 'runs' / 'vit-base-s0' / 'train.log'
    message = f'train.py exited with 1: RuntimeError: Unknown model (sl_vit_32) (log: {log})'
    assert f'- vit-base-s0: {message}\n' in (tmp_path / 'out' / 'report.md').read_text()  # installed: no hint
    monkeypatch.setattr(importlib.metadata, 'entry_points', plugins([]))
    assert exit_status(_args(tmp_path)) == 1
    assert f'- vit-base-s0: {message}; timm_sl is not installed in this Python (no timm.plugins entry point), so ' \
        f'train.py does not know the sl_ models: pip install .' in (tmp_path / 'out' / 'report.md').read_text()


def test_a_run_stopped_from_outside_is_not_marked_done(fake_train, tmp_path, capsys):
    """train.py exits 0 when a SIGINT reaches it alone (not through the sweep): the run failed, and resumes later."""
    fake_train.write_text(FAKE_TRAIN.replace("for epoch in range(start, int(value('--epochs'))):",
                                             "for epoch in range(start, min(start + 1, int(value('--epochs')))):"))
    assert exit_status(_args(tmp_path)) == 1
    assert '- vit-sl-s0: train.py exited with 0 after 1 of 2 epochs (stopped from outside?); run the same command ' \
           'again to resume' in (tmp_path / 'out' / 'report.md').read_text()
    assert not (tmp_path / 'out' / 'runs' / 'vit-sl-s0' / 'done.json').exists()
    assert main(_args(tmp_path)) == 0  # each run trains its second epoch
    assert 'started (resuming: 1/2 epochs done)' in capsys.readouterr().out


def _without_matplotlib(monkeypatch) -> None:
    """Imports of matplotlib fail from now on in this test, as on a machine without it."""
    import builtins
    real_import = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name.split('.')[0] == 'matplotlib':
            raise ImportError('No module named matplotlib')
        return real_import(name, *args, **kwargs)
    monkeypatch.setattr(builtins, '__import__', no_matplotlib)


def test_without_matplotlib_the_report_has_its_tables(fake_train, tmp_path, monkeypatch):
    """A GPU machine may lack matplotlib: report.md and results.json are written, without the charts."""
    _without_matplotlib(monkeypatch)
    assert main(_args(tmp_path)) == 0
    report = (tmp_path / 'out' / 'report.md').read_text()
    assert 'No charts: the charts need matplotlib, which is not installed: pip install "timm-sl[demo]".\n' in report
    assert '| vit | SL | `sl_vit_32` | 1/1 | 11.00 |' in report and '(top1.png)' not in report
    assert (tmp_path / 'out' / 'results.json').is_file() and not (tmp_path / 'out' / 'top1.png').exists()


def test_charts_of_an_earlier_call_do_not_outlive_its_results(fake_train, tmp_path, monkeypatch):
    """Resumed on a machine without matplotlib, the report said 'No charts' while top1.png and curves.png of the
    earlier call stayed beside it, showing that call's numbers."""
    out = tmp_path / 'out'
    assert main(_args(tmp_path, train_args=('--epochs', '1'))) == 0  # with matplotlib
    assert (out / 'top1.png').is_file() and (out / 'curves.png').is_file()
    _without_matplotlib(monkeypatch)
    assert main(_args(tmp_path)) == 0  # resumed to 2 epochs
    assert ('No charts: the charts need matplotlib, which is not installed: pip install "timm-sl[demo]". '
            '(top1.png and curves.png of an earlier call, which showed its results, removed.)'
            in (out / 'report.md').read_text())
    assert not (out / 'top1.png').exists() and not (out / 'curves.png').exists()
    assert set(json.loads((out / 'report_manifest.json').read_text())['sha256']) == {'report.md', 'results.json'}


@pytest.mark.parametrize('fails', ['finish', 'start'])
def test_a_file_error_stops_every_job_as_ctrl_c_does(tmp_path, fails):
    """An OSError in a job's bookkeeping (its finish, or the start of the next job) left the running jobs behind."""
    sleeper = [sys.executable, '-c', 'import os, time; print(os.getpid(), flush=True); time.sleep(120)']
    waits = (f'import pathlib, time\nlog = pathlib.Path({str(tmp_path / "slow" / "train.log")!r})\n'
             f'while not log.is_file() or not log.read_text():\n    time.sleep(0.02)')  # until the slow one runs
    jobs = [Job('quick', tmp_path / 'quick', 1, lambda: [sys.executable, '-c', waits]),
            Job('slow', tmp_path / 'slow', 1, lambda: sleeper)]

    def bad_command():
        raise IsADirectoryError(21, 'Is a directory', str(tmp_path / 'third' / 'command.txt'))
    jobs.append(Job('third', tmp_path / 'third', 1, bad_command))

    def finish(result):
        if fails == 'finish' and result.job.name == 'quick':
            raise IsADirectoryError(21, 'Is a directory', str(tmp_path / 'quick' / 'done.json'))
    lines = []
    with pytest.raises(SweepStopped) as e:
        run_jobs(jobs, concurrency=2, finish=finish, echo=lines.append, tty=False, poll=0.05, grace=5)
    assert [r.status for r in e.value.results] == ['exited', 'interrupted', 'not run']
    failed = 'quick/done.json' if fails == 'finish' else 'third/command.txt'
    assert str(e.value) == (f'{tmp_path}/{failed}: is a directory; the sweep stopped every run as on Ctrl-C; allowed: '
                            f'make it writable (a file, not a folder), then run the same command again to resume')
    pid = int((tmp_path / 'slow' / 'train.log').read_text().split()[0])
    assert not _alive(pid)  # no orphan
    assert 'stopping 1 running train.py process(es); run the same command again to resume' in lines


@pytest.mark.parametrize('resumed', [False, True])
def test_a_run_of_val_interval_counts_its_epochs_not_its_summary_rows(tmp_path, resumed):
    """A run of train.py --val-interval 2 (a summary.csv row after every second epoch and the last) printed 'finished
    (2/4 epochs)' after training all 4, '1/4 epochs done' after its second; sessions.json recorded epochs [0, 2] and
    the report 'epochs trained' half the epochs. Each now counts the epochs its rows reach."""
    out = tmp_path / 'j'
    out.mkdir()
    header = 'epoch,train_loss,eval_loss,eval_top1,eval_top5\n'
    if resumed:  # an earlier session stopped after epoch 2 (its row) and 3 (no row): resumed from epoch 2
        (out / 'summary.csv').write_text(header + '1,1,1,20,90\n')
    start = 2 if resumed else 0
    script = (f'import pathlib\nf = pathlib.Path({str(out / "summary.csv")!r}).open("a")\nf.write({header!r})\n'
              f'for e in range({start}, 4):\n    if (e + 1) % 2 == 0:\n        f.write(f"{{e}},1,1,{{e + 20}},90\\n")\n'
              f'        f.flush()\n')
    lines = []
    result, = run_jobs([Job('j', out, 4, lambda: [sys.executable, '-c', script])], concurrency=1, echo=lines.append,
                       tty=False, poll=0.05)
    assert (result.code, result.epochs_before, result.epochs_after) == (0, start, 4)
    assert lines[0].startswith('run 1/1: j started' + (' (resuming: 2/4 epochs done)' if resumed else ''))
    done = [line.split(';')[0] for line in lines if 'epochs done, top-1' in line]
    assert done == ([] if resumed else ['run 1/1: j: 2/4 epochs done, top-1 21.00']) + [
        'run 1/1: j: 4/4 epochs done, top-1 23.00']
    assert lines[-1].startswith('run 1/1: j finished in ') and '(4/4 epochs)' in lines[-1]


def test_an_epoch_trained_again_after_a_resume_is_shown_once_its_new_row_is_written(tmp_path):
    """A run resumed from a checkpoint one epoch behind its summary.csv (stopped while it saved) trains that epoch
    again: the first look took the earlier session's row of it for the epoch just trained (its top-1 shown before the
    epoch ran). Only the rows this session writes count."""
    out = tmp_path / 'j'
    out.mkdir()
    header = 'epoch,train_loss,eval_loss,eval_top1,eval_top5\n'
    (out / 'summary.csv').write_text(header + '0,1,1,20,90\n1,1,1,21,90\n')  # the row of epoch 2, no checkpoint
    script = (f'import pathlib, time\ntime.sleep(0.3)\nf = pathlib.Path({str(out / "summary.csv")!r}).open("a")\n'
              f'f.write({header!r} + "1,1,1,25,90\\n")\nf.flush()\ntime.sleep(0.3)\nf.write("2,1,1,30,90\\n")\n')
    lines = []
    result, = run_jobs([Job('j', out, 3, lambda: [sys.executable, '-c', script], done=1)], concurrency=1,
                       echo=lines.append, tty=False, poll=0.05)
    assert (result.code, result.epochs_before, result.epochs_after) == (0, 1, 3)
    done = [line.split(';')[0] for line in lines if 'epochs done, top-1' in line]
    assert done == ['run 1/1: j: 2/3 epochs done, top-1 25.00', 'run 1/1: j: 3/3 epochs done, top-1 30.00']


def test_a_handler_installed_outside_python_is_left_to_it(monkeypatch):
    """signal.signal cannot put back a handler installed outside Python (getsignal gives None for it): the sweep put
    it back as None (a TypeError in place of its results), then left its own in its place. Such a signal is left as
    the sweep found it; the others are the sweep's while it runs and restored after."""
    import signal as signals
    from timm_sl.tools import sweep
    real_get, seen = signals.getsignal, {}
    monkeypatch.setattr(sweep.signal, 'getsignal', lambda sig: None if sig == signals.SIGTERM else real_get(sig))
    before = real_get(signals.SIGTERM), real_get(signals.SIGHUP)
    with sweep._terminate_as_interrupt():
        seen.update(term=real_get(signals.SIGTERM), hup=real_get(signals.SIGHUP))
    assert seen == dict(term=before[0], hup=sweep._raise_interrupt)
    assert (real_get(signals.SIGTERM), real_get(signals.SIGHUP)) == before


# A shell train.py for the seeded stops below: from the epoch of its `last` file on, per epoch a short sleep, a
# summary.csv row, then `last`; Ctrl-C (SIGINT) ends it after the epoch under way; its data worker (a `sleep` in the
# background, which ignores SIGINT as a shell's background job does) is left for the sweep to kill.
SH_TRAIN = textwrap.dedent('''
    cd "$1"; sleep 30 & echo $! >> workers; stop=0; trap 'stop=1' INT
    e=$(cat last 2>/dev/null || echo 0)
    [ -f summary.csv ] || echo epoch,train_loss,eval_loss,eval_top1,eval_top5 > summary.csv
    while [ "$e" -lt "$2" ] && [ "$stop" = 0 ]; do
      sleep 0.03; echo "$e,1.0,1.0,$((10 + e)),50" >> summary.csv; e=$((e + 1)); echo $e > last
    done
''')


@pytest.mark.skipif(sys.platform == 'win32', reason='POSIX signals and sh')
def test_seeded_sweeps_stopped_at_random_record_every_run_once_and_resume_to_their_epochs(tmp_path):
    """Seeded: sweeps of 2-3 jobs, 1-3 at once, SIGTERM / SIGINT to the sweep at a random event, sometimes again at a
    random later event (a second Ctrl-C while it stops), then the same jobs run again. Each time: run_jobs returns
    (no KeyboardInterrupt out of it), every job started is recorded once (``finish``), no worker outlives the sweep,
    each result's epochs are its summary.csv's; after the rerun every job reached its epochs, each epoch once."""
    signals = (signal.SIGTERM, signal.SIGINT)
    before = signal.signal(signal.SIGINT, signal.default_int_handler)  # a background suite ignores it
    try:
        for seed in range(24):
            rng = random.Random(seed)
            root = tmp_path / str(seed)
            names = [f'j{i}' for i in range(rng.choice([2, 3]))]
            epochs = {n: rng.choice([1, 2, 3]) for n in names}
            jobs = [Job(n, root / n, epochs[n], lambda n=n: ['sh', '-c', SH_TRAIN, 'sh', str(root / n), str(epochs[n])])
                    for n in names]
            events = iter(range(10 ** 6))
            first, second = rng.randrange(1, 8), rng.choice([None, 1, 2, 3, 4])
            recorded = []

            def echo(line):  # the signals come while the sweep runs (its handlers are on), as a kill from outside
                k = next(events)
                if k == first or (second is not None and k == first + second):
                    os.kill(os.getpid(), rng.choice(signals))

            def finish(result):
                recorded.append(result.job.name)
                echo('')

            results = run_jobs(jobs, concurrency=rng.choice([1, 2, 3]), finish=finish, echo=echo, tty=False,
                               poll=0.01, grace=5)
            started = [r.job.name for r in results if r.status != 'not run']
            assert sorted(recorded) == sorted(started), seed
            for r in results:
                summary = r.job.out_dir / 'summary.csv'
                rows = summary.read_text().splitlines()[1:] if summary.is_file() else []
                assert r.epochs_after == len(rows), (seed, r)
            workers = [int(p) for n in names if (root / n / 'workers').is_file()
                       for p in (root / n / 'workers').read_text().split()]
            deadline = time.monotonic() + 5
            while any(_alive(p) for p in workers):
                assert time.monotonic() < deadline, seed
                time.sleep(0.01)
            results = run_jobs(jobs, concurrency=2, echo=lambda line: None, tty=False, poll=0.01)
            for n in names:
                rows = [line.split(',')[0] for line in (root / n / 'summary.csv').read_text().splitlines()[1:]]
                assert rows == [str(e) for e in range(epochs[n])], (seed, n, rows)
            assert [r.epochs_after for r in results] == [epochs[n] for n in names], seed
    finally:
        signal.signal(signal.SIGINT, before)
