"""Several train.py processes at once: a sweep scheduler for ``timm-sl reproduce``, torch-free.

Each job is one train.py process (or one torchrun of ``nproc`` processes) with its own log and run folder, started
in its own session and pinned to its devices through ``CUDA_VISIBLE_DEVICES``. At most ``jobs`` run at once; a new
job goes to the device group with the fewest running jobs. A job that fails does not stop the others. Ctrl-C (or
SIGTERM / SIGHUP to the sweep) sends SIGINT to every job's process group, waits :data:`STOP_GRACE_S` for train.py to
stop, then kills what is left: no process outlives the sweep, and every run resumes from its last finished epoch.

Progress is read from what train.py writes: ``summary.csv`` (a row per finished epoch) and its log lines
``Train: E [ i/N (..%)] ... (avg s, avg/s) ...`` (training images per second, the running average of the epoch).
On a terminal a tqdm bar counts epochs of the whole sweep (runs done, aggregate img/s, ETA); elsewhere each event
(run started / finished / failed, epoch) is one plain line.

The default number of concurrent runs is :func:`default_jobs`; its constants are at the top of this module.
"""
import contextlib
import errno
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, Iterator, List, Optional, Sequence, Tuple

from .errors import describe
from .runs import read_summary_rows, summary_rows

__all__ = ['GPU_GIB_PER_RUN', 'MAX_RUNS_PER_GPU', 'TRAIN_PY_WORKERS', 'STOP_GRACE_S', 'Job', 'JobResult', 'Gpu',
           'default_jobs', 'probe_gpus', 'parse_gpus', 'device_groups', 'log_throughput', 'train_throughput',
           'format_seconds', 'run_jobs', 'SweepStopped']

# ---- the default --jobs rule (docs/reproduce.md, "How many runs at once"); set from measurements on the GPU ----
GPU_GIB_PER_RUN = 8.0  # GPU memory one run may take (a 32 px paper model, batch 128, AMP, torch.compile) + headroom
MAX_RUNS_PER_GPU = 6  # beyond this, runs on one GPU slow each other down more than they add
TRAIN_PY_WORKERS = 4  # train.py's default -j: data-loading processes per run; each run keeps -j + 1 cores busy
# ---------------------------------------------------------------------------------------------------------------

STOP_GRACE_S = 20.  # after Ctrl-C, seconds train.py gets to stop before its process group is killed
POLL_S = 1.  # how often running jobs' logs and summaries are read
_TICK_S = 0.05  # how often their processes are asked whether they ended

# timm's ImageDataset on an image it cannot open or decode: this warning, then the next image read in its place
_SKIPPED_LINE = re.compile(r'Skipped sample \(index (\d+)\)')
# timm train.py's progress line: epoch, update index, updates per epoch, then "(avg s, avg/s)"
_TRAIN_LINE = re.compile(r'Train: (\d+) \[\s*(\d+)/(\d+)\b.*?\(\s*(\d+(?:\.\d+)?)s,\s*(\d+(?:\.\d+)?)/s\)')


@dataclass
class Gpu:
    """A device as the sweep's children will see it: its ``CUDA_VISIBLE_DEVICES`` entry and memory (GiB)."""
    id: str
    gib: Optional[float] = None


@dataclass
class Job:
    """One train.py run of the sweep. ``command`` is called when the job starts (it may prepare the run folder)."""
    name: str
    out_dir: Path
    epochs: int  # planned epochs
    command: Callable[[], List[str]]
    log_name: str = 'train.log'
    label: str = ''  # how event lines name the job (default: its name)
    done: Optional[int] = None  # epochs it starts from (default: those its summary.csv reaches)

    @property
    def log(self) -> Path:
        return self.out_dir / self.log_name


@dataclass
class JobResult:
    """What happened to a job in this sweep: ``exited`` (see ``code``), ``interrupted`` or ``not run``."""
    job: Job
    status: str
    code: Optional[int] = None
    seconds: float = 0.
    devices: str = ''  # CUDA_VISIBLE_DEVICES it ran with; '' when not pinned
    epochs_before: int = 0
    epochs_after: int = 0
    message: str = ''  # filled by the ``finish`` callback: why a run that exited counts as failed ('' when done)


class SweepStopped(OSError):
    """A file the sweep writes could not be written (``error``): every running job was stopped as on Ctrl-C, and
    ``results`` holds what happened to each job (``interrupted`` / ``not run`` for those it stopped)."""

    def __init__(self, error: OSError, results: List['JobResult']):
        fix = ('room made on its disk' if error.errno in (errno.ENOSPC, errno.EDQUOT) else
               'make it writable (a file, not a folder)')
        super().__init__(f'{describe(error)}; the sweep stopped every run as on Ctrl-C; allowed: {fix}, then run the '
                         f'same command again to resume')
        self.error, self.results = error, results


def format_seconds(seconds: float) -> str:
    seconds = int(round(seconds))
    return f'{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}'


def parse_gpus(text: str) -> Optional[List[str]]:
    """``--gpus``: ``auto`` (None: detect) or GPU indices separated by commas (``0,1``), each a ``CUDA_VISIBLE_DEVICES``
    entry.

    Raises:
        ValueError: empty, an entry not a GPU index (an integer >= 0), or an entry repeated.
    """
    if text == 'auto':
        return None
    ids = [part.strip() for part in text.split(',')]
    if not all(i.isdigit() and i.isascii() for i in ids):
        raise ValueError(f'--gpus {text!r} is not allowed; expected auto or GPU indices (integers >= 0) separated by '
                         f'commas, e.g. 0,1')
    ids = [str(int(i)) for i in ids]  # 01 is GPU 1
    if len(set(ids)) != len(ids):
        raise ValueError(f'--gpus {text} names a device twice; expected each device once')
    return ids


def probe_gpus(python: str = sys.executable, env: Optional[Dict[str, str]] = None) -> List[Gpu]:
    """The CUDA devices visible to a child of this process (honouring ``CUDA_VISIBLE_DEVICES``) with their memory.

    Asked of torch in a separate interpreter, so that this process neither imports torch nor holds a CUDA context;
    no devices (or no CUDA torch) gives ``[]``.
    """
    code = ('import torch\nfor i in range(torch.cuda.device_count() if torch.cuda.is_available() else 0):\n'
            '    print(torch.cuda.get_device_properties(i).total_memory / 2 ** 30)')
    env = dict(os.environ if env is None else env)
    try:
        out = subprocess.run([python, '-c', code], capture_output=True, text=True, env=env, timeout=300).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    gib = [float(line) for line in out.split()]
    visible = [v.strip() for v in env.get('CUDA_VISIBLE_DEVICES', '').split(',') if v.strip()]
    ids = visible[:len(gib)] if len(visible) >= len(gib) else [str(i) for i in range(len(gib))]
    return [Gpu(i, g) for i, g in zip(ids, gib)]


def device_groups(gpus: Sequence[str], nproc: int) -> List[str]:
    """The ``CUDA_VISIBLE_DEVICES`` value of each slot a run can take: one GPU per run, ``nproc`` GPUs per torchrun.

    Raises:
        ValueError: fewer GPUs than ``nproc``.
    """
    if len(gpus) < nproc:
        raise ValueError(f'--nproc {nproc} needs {nproc} GPUs per run; --gpus gives {len(gpus)} ({",".join(gpus)})')
    return [','.join(gpus[i:i + nproc]) for i in range(0, len(gpus) - nproc + 1, nproc)]


def default_jobs(gpus: Sequence[Gpu], nproc: int = 1, workers: int = TRAIN_PY_WORKERS,
                 cores: Optional[int] = None) -> Tuple[int, str]:
    """How many runs to start at once, and why (one phrase).

    Without a GPU: 1 (runs on CPU share its cores anyway). With GPUs, the fewest of: per GPU
    ``min(MAX_RUNS_PER_GPU, memory // GPU_GIB_PER_RUN)`` (per group of ``nproc`` GPUs for torchrun), and for the
    data workers ``cores // (nproc * (workers + 1))``, as each process keeps its ``-j`` workers and itself busy; at
    least 1.
    """
    if not gpus:
        return 1, 'no GPU: one run at a time'
    if cores is None:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else (os.cpu_count() or 1)
    groups = max(1, len(gpus) // max(nproc, 1))
    gib = min((g.gib for g in gpus if g.gib), default=None)
    per_gpu = MAX_RUNS_PER_GPU if gib is None else max(1, min(MAX_RUNS_PER_GPU, int(gib // GPU_GIB_PER_RUN)))
    by_cpu = max(1, cores // (max(nproc, 1) * (workers + 1)))
    jobs = max(1, min(per_gpu * groups, by_cpu))
    memory = f'{gib:.0f} GiB / {GPU_GIB_PER_RUN:g} GiB per run' if gib else 'memory unknown'
    return jobs, (f'{groups} x min({MAX_RUNS_PER_GPU}, {memory}) = {per_gpu * groups} by GPU, '
                  f'{cores} cores / ({max(nproc, 1)} x ({workers} workers + 1)) = {by_cpu} by CPU')


def log_throughput(log: Path, offset: int = 0) -> Tuple[Dict[int, Tuple[int, float, float, Optional[float]]], int]:
    """train.py's progress lines of a log from byte ``offset``: per epoch the last ``(updates, avg step s, avg img/s,
    first step s)`` seen (the first step's time when its line, update 0, was read since it began, else None), and the
    offset after the last whole line read."""
    epochs: Dict[int, Tuple[int, float, float, Optional[float]]] = {}
    try:
        with open(log, 'rb') as f:
            f.seek(offset)
            data = f.read()
    except OSError:
        return epochs, offset
    end = data.rfind(b'\n') + 1
    for line in data[:end].decode('utf-8', 'replace').splitlines():
        m = _TRAIN_LINE.search(line)
        if m and int(m[2]) < int(m[3]):  # train.py's update index is below its count: else a damaged line
            epoch, index, step = int(m[1]), int(m[2]), float(m[4])
            first = step if index == 0 else epochs.get(epoch, (0, 0., 0., None))[3]
            epochs[epoch] = (index + 1, step, float(m[5]), first)
    return epochs, offset + end


def train_throughput(log: Path, steady: bool = True, offset: int = 0) -> Optional[Tuple[float, float]]:
    """``(images, seconds)`` of a run's training steps, from its whole log (every session of a resumed run; from byte
    ``offset`` on: the sessions since), without the first step of each epoch (``steady``; it holds torch.compile's
    compilation and the data loader's start).

    Per epoch, train.py's last progress line gives the updates so far, their average time and average images per
    second (images = updates x step time x img/s); its first line (update 0) the first step's time. An epoch logged
    again after a resume counts once (its last lines). None when the log has no progress line.
    """
    epochs, _ = log_throughput(log, offset)
    if not epochs:
        return None
    images = seconds = 0.
    for n, step, rate, first in epochs.values():
        if steady and n > 1 and first is not None:  # n - 1 batches in n x step - first seconds
            images += (n - 1) * step * rate
            seconds += n * step - first
        else:
            images += n * step * rate
            seconds += n * step
    return images, seconds


def skipped_samples(log: Path, start: int = 0) -> List[int]:
    """The sample index of each time timm's dataset skipped an image it could not read (a truncated or damaged file;
    it logs ``Skipped sample (index N). <error>`` and reads the next image in its place), in the order logged, from
    byte ``start`` of the log on (0: every session); [] when the log is absent or unreadable."""
    try:
        with open(log, 'rb') as f:
            f.seek(start)
            text = f.read().decode('utf-8', 'replace')
    except OSError:
        return []
    return [int(m[1]) for m in _SKIPPED_LINE.finditer(text)]


def _epochs_done(out_dir: Path) -> List[Dict[str, float]]:
    try:
        return read_summary_rows(out_dir / 'summary.csv')
    except (OSError, ValueError, KeyError, IndexError):  # absent, or a row being written
        return []


def _summary_size(out_dir: Path) -> int:
    try:
        return (out_dir / 'summary.csv').stat().st_size
    except OSError:
        return 0


def _epochs_since(out_dir: Path, offset: int) -> List[Dict[str, float]]:
    """The summary.csv rows written from byte ``offset`` on (a session's: an epoch it trains again after a resume
    counts, though an earlier session wrote a row of it), read under the file's header; [] when none can be read."""
    path = out_dir / 'summary.csv'
    try:
        with open(path, 'rb') as f:
            data = f.read()
    except OSError:
        return []
    header = data[:data.find(b'\n') + 1] if offset else b''
    try:
        return summary_rows((header + data[offset:]).decode('utf-8', 'replace'), path)
    except (ValueError, KeyError, IndexError):
        return []


def _epochs_reached(rows: List[Dict[str, float]]) -> int:
    """The epochs a run has trained by its summary.csv ``rows``: its last row's epoch (train.py's, from 0) + 1, not
    the rows, which a run of ``--val-interval N`` writes after every N-th epoch only (and after its last)."""
    return int(rows[-1]['epoch']) + 1 if rows else 0


class _Display:
    """One progress display: a tqdm bar on a terminal, else one line per event."""

    def __init__(self, total_epochs: int, done_epochs: int, runs: int, echo: Callable[[str], None], tty: bool):
        self.echo, self.tty, self.runs = echo, tty, runs
        self.bar = None
        if tty:
            from tqdm import tqdm
            self.bar = tqdm(total=total_epochs, initial=done_epochs, unit='epoch', dynamic_ncols=True,
                            file=sys.stdout, desc='sweep')

    def event(self, line: str, epoch: bool = False) -> None:
        if self.bar is None:
            self.echo(line)
        elif not epoch:
            self.bar.write(line)

    def update(self, epochs: int, postfix: str) -> None:
        if self.bar is not None:
            self.bar.update(epochs)
            self.bar.set_postfix_str(postfix, refresh=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


class _Running:
    def __init__(self, job: Job, proc: subprocess.Popen, devices: str, start: float, epochs_before: int, index: int,
                 summary_from: int = 0):
        self.job, self.proc, self.devices, self.start, self.index = job, proc, devices, start, index
        self.epochs_before = self.epochs_seen = epochs_before
        self.summary_from = summary_from  # summary.csv's size at the start: the rows after it are this session's
        self.log_offset = job.log.stat().st_size if job.log.is_file() else 0
        self.rate = 0.  # img/s of the current epoch (train.py's running average)
        self.rates: Dict[int, float] = {}  # img/s of each epoch logged in this session


def _stop(running: Sequence[_Running], grace: float, came: Sequence[int] = ()) -> None:
    """SIGINT to each job's process group (train.py stops after its current step), SIGKILL to what is left after
    ``grace`` seconds, or sooner once a signal more is in ``came`` (a second Ctrl-C: no more waiting)."""
    for r in running:
        try:
            os.killpg(r.proc.pid, signal.SIGINT)
        except ProcessLookupError:
            pass
    deadline, seen = time.monotonic() + grace, len(came)
    while time.monotonic() < deadline and len(came) == seen and any(r.proc.poll() is None for r in running):
        time.sleep(_TICK_S)
    for r in running:
        _kill_group(r)
        r.proc.wait()


def _kill_group(r: _Running) -> None:
    """SIGKILL to a job's process group: also the data / compile workers of a train.py that has exited."""
    try:
        os.killpg(r.proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt


@contextlib.contextmanager
def _sigint_for_children() -> Iterator[None]:
    """While a job starts: SIGINT caught (as Ctrl-C) where this process ignores it (a background job of a script
    ignores it, and its children inherit that): a process starts with a caught signal's default, so train.py stops
    on the sweep's SIGINT instead of being killed after the grace time, perhaps while it saves a checkpoint."""
    try:
        ignored = signal.getsignal(signal.SIGINT) == signal.SIG_IGN
        if ignored:
            signal.signal(signal.SIGINT, _raise_interrupt)
    except ValueError:  # not the main thread
        ignored = False
    try:
        yield
    finally:
        if ignored:
            signal.signal(signal.SIGINT, signal.SIG_IGN)


@contextlib.contextmanager
def _terminate_as_interrupt() -> Iterator[None]:
    """While the sweep runs, SIGTERM and SIGHUP raise ``KeyboardInterrupt`` as Ctrl-C does (in the main thread; in
    another, Ctrl-C alone stops the sweep); a signal whose handler was installed outside Python is left to it."""
    previous = {}
    try:
        for sig in [s for s in (getattr(signal, 'SIGHUP', None), signal.SIGTERM) if s is not None]:
            if signal.getsignal(sig) is None:  # a handler installed outside Python: signal.signal cannot put it back
                continue
            try:
                previous[sig] = signal.signal(sig, _raise_interrupt)
            except ValueError:  # not the main thread
                pass
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@contextlib.contextmanager
def signals_held() -> Iterator[List[int]]:
    """Ctrl-C (SIGINT), SIGTERM and SIGHUP held off while the block runs, yielding the list of those that came (a
    report or a run's record cut short by a second Ctrl-C). A signal this process ignores stays ignored, and one whose
    handler was installed outside Python is left to it; outside the main thread nothing is held."""
    came: List[int] = []
    held = {}
    for sig in (signal.SIGINT, signal.SIGTERM, getattr(signal, 'SIGHUP', None)):
        try:
            if sig is not None and signal.getsignal(sig) not in (signal.SIG_IGN, None):
                held[sig] = signal.signal(sig, lambda signum, frame: came.append(signum))
        except ValueError:  # not the main thread: nothing held
            pass
    try:
        yield came
    finally:
        for sig, handler in held.items():
            signal.signal(sig, handler)


class _Sweep:
    """The state of one :func:`run_jobs` call: the jobs pending, running and ended, the display, the epochs trained."""

    def __init__(self, jobs: Sequence[Job], devices: List[str], finish: Optional[Callable[[JobResult], None]],
                 display_to: Tuple[Callable[[str], None], bool], env: Dict[str, str], numbering: List[int],
                 total: int, pass_fds: Sequence[int]):
        self.jobs, self.devices, self.finish, self.env = jobs, devices, finish, env
        self.numbering, self.total, self.pass_fds = numbering, total, pass_fds
        self.planned = sum(j.epochs for j in jobs)
        self.before = {id(j): min(_epochs_reached(_epochs_done(j.out_dir)) if j.done is None else j.done, j.epochs)
                       for j in jobs}
        self.display = _Display(self.planned, sum(self.before.values()), len(jobs), *display_to)
        self.results: Dict[int, JobResult] = {}
        self.running: List[_Running] = []
        self.pending = list(range(len(jobs)))
        self.failures: List[OSError] = []  # files that could not be written: the sweep stops (SweepStopped)
        self.start_time = time.monotonic()
        self.trained = 0  # epochs finished in this call
        self.came: List[int] = []  # signals held off while a run was recorded: the sweep stops after

    def name(self, i: int) -> str:
        return f'run {self.numbering[i]}/{self.total}: {self.jobs[i].label or self.jobs[i].name}'

    def eta(self) -> str:
        if self.trained == 0:
            return 'ETA unknown until an epoch finishes'
        left = self.planned - sum(self.before.values()) - self.trained
        return f'ETA {format_seconds(left * (time.monotonic() - self.start_time) / self.trained)}'

    def status(self) -> str:
        done = sum(1 for r in self.results.values() if r.status == 'exited' and not r.message)
        failed = len(self.results) - done
        rate = sum(r.rate for r in self.running)
        return (f'{done}/{len(self.jobs)} runs done' + (f', {failed} failed' if failed else '') +
                f', {len(self.running)} running, {rate:,.0f} img/s')

    def look(self, r: _Running) -> None:
        """Read what the run wrote since the last look: its img/s from the log, an event per new summary.csv row."""
        epochs, r.log_offset = log_throughput(r.job.log, r.log_offset)
        r.rates.update({e: rate for e, (_, _, rate, _) in epochs.items()})
        if epochs:
            r.rate = epochs[max(epochs)][2]
        rows = _epochs_since(r.job.out_dir, r.summary_from)
        new = _epochs_reached(rows) - r.epochs_seen
        if new <= 0:
            return
        self.trained += new
        for row in rows:  # a line per row, also when several were written since (--val-interval N: every N-th epoch)
            done = int(row['epoch']) + 1
            if done <= r.epochs_seen:
                continue
            rate = r.rates.get(int(row['epoch']))
            speed = f', {rate:,.0f} img/s' if rate else ''
            self.display.event(f'{self.name(r.index)}: {done}/{r.job.epochs} epochs done, top-1 '
                               f'{row["eval_top1"]:.2f}{speed}; sweep: {self.status()}, {self.eta()}', epoch=True)
        r.epochs_seen += new
        self.display.update(new, self.status())

    def start(self, i: int) -> None:
        """Start job ``i`` on the device slot with the fewest running jobs."""
        job = self.jobs[i]
        load = {d: sum(r.devices == d for r in self.running) for d in self.devices}
        slot = min(self.devices, key=lambda d: load[d])
        job.out_dir.mkdir(parents=True, exist_ok=True)
        cmd = job.command()
        summary_from = _summary_size(job.out_dir)
        child_env = dict(self.env, CUDA_VISIBLE_DEVICES=slot) if slot else self.env
        proc = None
        try:
            with job.log.open('ab') as log, _sigint_for_children():
                proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                        env=child_env, start_new_session=True, pass_fds=tuple(self.pass_fds))
        finally:  # a Ctrl-C right after the start: the process is stopped with the others, not left behind
            if proc is not None:  # no longer pending: an interrupt from here on stops it as a started run
                self.running.append(_Running(job, proc, slot, time.monotonic(), self.before[id(job)], i,
                                             summary_from))
                self.pending.remove(i)
        done = self.before[id(job)]
        resumed = f' (resuming: {done}/{job.epochs} epochs done)' if done else ''
        self.display.event(f'{self.name(i)} started{resumed}' + (f' on GPU {slot}' if slot else '') +
                           f', {self.eta()}')

    def start_pending(self, concurrency: int) -> None:
        """Start pending jobs up to ``concurrency`` running; a job whose start raises ``OSError`` is left pending and
        the error kept in :attr:`failures`."""
        while self.pending and len(self.running) < concurrency and not self.failures:
            try:
                self.start(self.pending[0])  # leaves pending once its process runs
            except OSError as e:
                self.failures.append(e)
                return

    def ended(self, r: _Running, code: Optional[int], status: str = 'exited') -> JobResult:
        _kill_group(r)  # what the run left behind (data or compile workers) goes with it
        self.look(r)
        result = JobResult(r.job, status, code, time.monotonic() - r.start, r.devices, r.epochs_before,
                           r.epochs_seen)
        self.results[r.index] = result
        self.running.remove(r)
        if self.finish is not None:
            try:
                with signals_held() as came:  # a Ctrl-C now: the record written in full, then the sweep stopped
                    self.finish(result)
            except OSError as e:  # e.g. its bookkeeping file is a folder: the other jobs are stopped, not orphaned
                self.failures.append(e)
            self.came += came
        return result

    def collect(self, finished: Sequence[Tuple[_Running, Optional[int]]]) -> None:
        """End the runs whose process exited (``finished``: each run and its exit code, None while it runs)."""
        for r, code in finished:
            if code is None:
                continue
            result = self.ended(r, code)
            spent = format_seconds(result.seconds)
            if result.message:
                self.display.event(f'{self.name(r.index)} failed after {spent}: {result.message}')
            else:
                self.display.event(f'{self.name(r.index)} finished in {spent} ({result.epochs_after}/'
                                   f'{r.job.epochs} epochs); sweep: {self.status()}')
            self.display.update(0, self.status())

    def stop(self, grace: float) -> None:
        """Stop every running job (``interrupted``); the jobs not started are ``not run``."""
        stopping = list(self.running)
        # held: a second Ctrl-C / SIGTERM left runs unstopped or unrecorded (sessions.json), and no report
        with signals_held() as came:
            if self.failures:
                self.display.event(f'could not write {describe(self.failures[0])}')
            self.display.event(f'stopping {len(stopping)} running train.py process(es); run the same command again '
                               f'to resume')
            _stop(stopping, grace, came)
            for r in stopping:
                self.ended(r, r.proc.returncode, 'interrupted')
                self.display.event(f'{self.name(r.index)} interrupted; run the same command again to resume')
        for i in self.pending:
            done = self.before[id(self.jobs[i])]
            self.results[i] = JobResult(self.jobs[i], 'not run', epochs_before=done, epochs_after=done)


def run_jobs(
        jobs: Sequence[Job],
        concurrency: int = 1,
        devices: Sequence[str] = ('',),
        finish: Optional[Callable[[JobResult], None]] = None,
        echo: Callable[[str], None] = print,
        tty: Optional[bool] = None,
        env: Optional[Dict[str, str]] = None,
        poll: float = POLL_S,
        grace: float = STOP_GRACE_S,
        numbering: Optional[Sequence[int]] = None,
        total: Optional[int] = None,
        pass_fds: Sequence[int] = (),
) -> List[JobResult]:
    """Run ``jobs``, at most ``concurrency`` at once, spread over ``devices``; return a result per job, in order.

    Args:
        jobs: The runs to start, in order.
        concurrency: Runs at once.
        devices: ``CUDA_VISIBLE_DEVICES`` per slot ('' leaves the variable as it is); a job starts on the slot with
            the fewest running jobs.
        finish: Called with each job's result when its process ends (before the event line is shown): may set
            ``message`` to count it as failed.
        echo: Where event lines go when there is no terminal bar.
        tty: Show a tqdm bar (default: when stdout is a terminal).
        env: Environment of the processes (default: this one's).
        poll: Seconds between looks at running jobs.
        grace: Seconds train.py gets to stop after Ctrl-C.
        numbering: Each job's number in the event lines (``run 3/12``; default 1, 2, ...), and ``total`` the 12.
        pass_fds: File descriptors each process inherits (reproduce's lock: held while a process lives).

    On Ctrl-C or SIGTERM / SIGHUP every running job is stopped (its result ``interrupted``), the jobs not started are
    ``not run``, and the results return as usual.

    Raises:
        SweepStopped: ``finish`` or a job's start (its folder, log, ``command``) raised an ``OSError``; every running
            job was stopped first, as on Ctrl-C (no process outlives the sweep), and the exception holds the results.
    """
    sweep = _Sweep(jobs, list(devices) or [''], finish, (echo, sys.stdout.isatty() if tty is None else tty),
                   dict(os.environ if env is None else env), list(numbering or range(1, len(jobs) + 1)),
                   total or len(jobs), pass_fds)
    try:
        with _terminate_as_interrupt():
            try:
                last_look = time.monotonic()
                while sweep.pending or sweep.running:
                    sweep.start_pending(concurrency)
                    if sweep.failures:
                        raise KeyboardInterrupt  # stop the others as Ctrl-C does
                    time.sleep(_TICK_S)
                    finished = [(r, r.proc.poll()) for r in sweep.running]
                    if time.monotonic() - last_look >= poll:
                        last_look = time.monotonic()
                        for r, code in finished:
                            if code is None:
                                sweep.look(r)
                    sweep.collect(finished)
                    if sweep.came:  # a Ctrl-C / SIGTERM while a run was recorded
                        raise KeyboardInterrupt
            except KeyboardInterrupt:
                sweep.stop(grace)
    finally:
        sweep.display.close()
    results = [sweep.results[i] for i in range(len(jobs))]
    if sweep.failures:
        raise SweepStopped(sweep.failures[0], results)
    return results
