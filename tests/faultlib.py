"""Fault-injection helpers: a small real file system that fills up, CLI runs in a child
process (a SIGBUS or a hang must fail a test, not kill the suite), kills at chosen moments,
and the leftovers a writer must not leave."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

#: Names a killed or failed writer may leave behind (ARIA's temporaries, old and new style).
LEFTOVER = re.compile(r"\.(tmp|old)-|^\.staging-|\.staging\.npy$")


def can_mount() -> bool:
    """True when this process may mount a tmpfs (root, as on the CI machine)."""
    return hasattr(os, "geteuid") and os.geteuid() == 0 and shutil.which("mount") is not None


@contextlib.contextmanager
def small_fs(parent: Path, size: str = "4m") -> Iterator[Path]:
    """A fresh tmpfs of ``size`` mounted under ``parent`` for the body (skips without root)."""
    if not can_mount():
        pytest.skip("mounting a small tmpfs needs root (the CI machine runs as root)")
    mnt = Path(parent) / f"fs-{uuid.uuid4().hex[:6]}"
    mnt.mkdir(parents=True)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mnt)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)
        with contextlib.suppress(OSError):
            mnt.rmdir()


def fill(folder: Path, leave: int) -> Path:
    """Fill the file system of ``folder`` until about ``leave`` bytes stay free."""
    st = os.statvfs(folder)
    free = st.f_bavail * st.f_frsize
    ballast = Path(folder) / "ballast.bin"
    n = max(0, free - leave)
    with open(ballast, "wb") as fh:
        block = b"\0" * 2**16
        while n > 0:
            try:
                fh.write(block[: min(n, len(block))])
                fh.flush()
            except OSError:
                break
            n -= len(block)
    return ballast


def free(folder: Path) -> int:
    """Free bytes on the file system of ``folder``."""
    st = os.statvfs(folder)
    return st.f_bavail * st.f_frsize


def leftovers(*folders: Path) -> list[str]:
    """Temporaries left under ``folders`` (recursively), as relative names."""
    found = []
    for d in folders:
        for p in Path(d).rglob("*"):
            if LEFTOVER.search(p.name):
                found.append(str(p.relative_to(d)))
    return sorted(found)


def cli(args: Sequence[str], *, cwd: Path | None = None, timeout: float = 300,
        env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``aria-tda ARGS`` in a child process; returns the finished process (text output)."""
    full_env = {**os.environ, "PYTHONWARNINGS": "ignore", **(env or {})}
    return subprocess.run([sys.executable, "-m", "aria_tda.cli", *map(str, args)],
                          cwd=cwd, env=full_env, capture_output=True, text=True,
                          timeout=timeout)


def one_line_error(proc: subprocess.CompletedProcess[str]) -> str:
    """Assert ``proc`` failed cleanly (status 2, one stderr line, no traceback); return it."""
    err = proc.stderr.strip()
    assert proc.returncode == 2, (proc.returncode, err[-2000:])
    assert "Traceback" not in err, err[-2000:]
    lines = [line for line in err.splitlines() if "error:" in line]
    assert len(lines) == 1, err[-2000:]
    return lines[0]


def start_cli(args: Sequence[str], *, cwd: Path | None = None,
              env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """Start ``aria-tda ARGS`` in a child process (its own process group)."""
    full_env = {**os.environ, "PYTHONWARNINGS": "ignore", **(env or {})}
    return subprocess.Popen([sys.executable, "-m", "aria_tda.cli", *map(str, args)], cwd=cwd,
                            env=full_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)


def kill_when(proc: subprocess.Popen[str], ready, *, timeout: float = 120,
              poll: float = 0.02) -> bool:
    """SIGKILL ``proc``'s process group as soon as ``ready()`` is true; False if it ended first."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if proc.poll() is not None:
            return False
        if ready():
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            return True
        time.sleep(poll)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    raise AssertionError("the condition to kill at never came")


def tree_bytes(folder: Path, *, skip: Sequence[str] = ()) -> dict[str, bytes]:
    """Every regular file under ``folder`` by relative path (for byte-wise comparison)."""
    out = {}
    for p in sorted(Path(folder).rglob("*")):
        rel = str(p.relative_to(folder))
        if p.is_file() and not any(re.search(s, rel) for s in skip):
            out[rel] = p.read_bytes()
    return out
