"""Progress of long commands when stderr is not a terminal (nohup, a pipe, CI): plain lines at a
bounded rate; ``ARIA_PROGRESS=0`` silences them. Run in a child process whose stderr is a pipe."""

from __future__ import annotations

import os
import subprocess
import sys

_WORK = """
import time
from aria_tda._progress import progress, progress_mode
print(progress_mode())
t = time.perf_counter()
for _ in progress(range({n}), desc="symbolic features", unit="file"):
    time.sleep({pause})
print(time.perf_counter() - t)
"""


def _run(n, pause, **env):
    base = {k: v for k, v in os.environ.items() if k not in ("ARIA_PROGRESS", "TQDM_DISABLE")}
    proc = subprocess.run([sys.executable, "-c", _WORK.format(n=n, pause=pause)],
                          env={**base, "ARIA_PROGRESS_INTERVAL": "0.25", **env},
                          capture_output=True, text=True, timeout=60, check=True)
    mode, elapsed = proc.stdout.split()
    return mode, float(elapsed), proc.stderr


def test_a_pipe_gets_plain_lines_at_a_bounded_rate():
    mode, elapsed, err = _run(40, 0.025)  # about 1 s of work
    assert mode == "lines"
    assert "\r" not in err and "\x1b" not in err
    lines = err.splitlines()
    assert lines and all(line.startswith("symbolic features: ") for line in lines)
    assert lines[-1].startswith("symbolic features: 100% (40/40 file)")
    # the first after one interval (0.25 s), then at most one per interval, and the last
    assert 2 <= len(lines) <= elapsed / 0.25 + 2


def test_quick_work_prints_nothing():
    mode, _, err = _run(5, 0)
    assert (mode, err) == ("lines", "")  # done before the first interval


def test_progress_0_silences_lines():
    mode, _, err = _run(40, 0.025, ARIA_PROGRESS="0")
    assert (mode, err) == ("None", "")
