"""Interpreter start-up cost of the autoload hook, measured side by side in one run.

Starts ``python -c pass`` repeatedly with the hook armed and disabled (``TIMM_SL_NO_AUTOLOAD=1``), interleaved, and
reports the median wall time of each and the difference; also checks that start-up imports neither torch nor timm.
"""
import os
import statistics
import subprocess
import sys
import time

from timm_sl.tools.arg_types import OneLineParser, positive_int


def _start(env) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, '-c', 'pass'], env=env, check=True)
    return time.perf_counter() - t0


def main() -> int:
    p = OneLineParser(description=__doc__.splitlines()[0])
    p.add_argument('--runs', type=positive_int, default=40)
    args = p.parse_args()
    armed = {k: v for k, v in os.environ.items() if k != 'TIMM_SL_NO_AUTOLOAD'}
    disabled = dict(armed, TIMM_SL_NO_AUTOLOAD='1')
    times = {'armed': [], 'disabled': []}
    for i in range(args.runs):
        for name in (('armed', 'disabled') if i % 2 == 0 else ('disabled', 'armed')):
            times[name].append(_start(armed if name == 'armed' else disabled))
    code = "import sys; print(sorted(m for m in ('torch', 'timm', 'timm_sl') if m in sys.modules))"
    loaded = subprocess.run([sys.executable, '-c', code], env=armed, capture_output=True, text=True).stdout.strip()
    med = {k: statistics.median(v) * 1e3 for k, v in times.items()}
    print(f'python -c pass, median of {args.runs}: hook armed {med["armed"]:.1f} ms, '
          f'disabled {med["disabled"]:.1f} ms, '
          f'difference {med["armed"] - med["disabled"]:+.1f} ms')
    print(f'heavy modules imported at start-up: {loaded}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
