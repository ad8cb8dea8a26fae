"""Resource limits met by real processes: a memory limit under ``aria-tda diagnose`` (``prlimit
--as``, from tight to generous), and ARIA's caches under ``$ARIA_CACHE_DIR`` on a full and on a
read-only file system.

Under a memory limit every outcome is a result or exactly one line that names the limit and
what needs less (``--memory``, ``--approx``, raising the limit): never a traceback, never a hang
(a BLAS library that cannot map its buffers spins for ever; the child's timeout fails the test).
A cache that cannot be written is used read-only or bypassed with one warning per process and
cache, and is never called damaged; only a cache that is not a database is.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from faultlib import cli, fill, one_line_error, small_fs

pytestmark = pytest.mark.slow

_MB = 2**20


# ------------------------------------------------------------------------------- memory


def _limited(limit: int, args: list[str], timeout: float = 300) -> subprocess.CompletedProcess:
    """``aria-tda ARGS`` in a child process whose address space is limited to ``limit`` bytes."""
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    return subprocess.run(["prlimit", f"--as={limit}", sys.executable, "-m", "aria_tda.cli",
                           *map(str, args)], env=env, capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture(scope="module")
def baseline() -> int:
    """Address space of a fresh ``aria-tda`` process once its command line is parsed (NumPy and
    its BLAS loaded: it grows with the machine's CPUs)."""
    if shutil.which("prlimit") is None or not Path("/proc/self/status").is_file():
        pytest.skip("prlimit and /proc are needed to limit a child's address space")
    code = ("from aria_tda.cli import build_parser; build_parser(); import re; "
            "print(re.search(r'VmSize:\\s+(\\d+)', open('/proc/self/status').read()).group(1))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    return int(out.stdout.strip()) * 1024


@pytest.fixture(scope="module")
def scores(tmp_path_factory) -> Path:
    """A 100,000 x 400 float32 matrix on disk (160 MB: more than some limits leave)."""
    path = tmp_path_factory.mktemp("memory") / "scores.npy"
    rng = np.random.default_rng(7)
    a = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(100_000, 400))
    for i in range(0, 100_000, 20_000):
        a[i:i + 20_000] = rng.standard_normal((20_000, 400), dtype=np.float32)
    a.flush()
    del a
    return path


def _result_or_one_line(proc: subprocess.CompletedProcess) -> str:
    """``"ok"`` for a diagnosis, else the one error line (asserted to name the limit)."""
    if proc.returncode == 0:
        assert "verdict" in proc.stdout and "Traceback" not in proc.stderr, proc.stderr[-2000:]
        return "ok"
    line = one_line_error(proc)
    assert "MemoryLimitError" in line and "ulimit -v" in line, line
    assert re.search(r"raise the limit|--memory \d+MB|--approx", line), line
    return line


@pytest.mark.parametrize("extra_mb", [40, 200, 380, 470, 560, 800, 1500])
def test_diagnose_under_a_memory_limit_is_a_result_or_one_line(baseline, scores, extra_mb):
    """Before: llvmlite's "could not find libllvmlite.so", a ``SystemError`` or NumPy's
    ``_ArrayMemoryError`` traceback, or a hang in OpenBLAS, depending on the limit."""
    outcome = _result_or_one_line(_limited(baseline + extra_mb * _MB,
                                           ["diagnose", scores, "--no-progress"]))
    if extra_mb >= 800:
        assert outcome == "ok"  # the default budget follows the limit: blocks that fit
    if extra_mb <= 40:  # (at 200 MB it once failed too; the command now loads less)
        assert "loading NumPy, SciPy and numba" in outcome and "needs about" in outcome


@pytest.mark.parametrize("flags", [["--approx"], ["--exact-tiled"], ["--memory", "8GB"],
                                   ["--exact-tiled", "--memory", "256KB"]])
def test_every_mode_under_a_memory_limit_is_a_result_or_one_line(baseline, scores, flags):
    """A budget larger than the limit allows (``--memory 8GB``) or too small for the tiled
    pass: one line too (the first names the limit, the second the least budget)."""
    proc = _limited(baseline + 600 * _MB, ["diagnose", scores, "--no-progress", *flags])
    if "256KB" in flags:
        line = one_line_error(proc)
        assert "ParameterError: memory: expected at least" in line, line
    else:
        _result_or_one_line(proc)


@pytest.mark.parametrize("extra_mb", [60, 400, 700, 1500])
def test_a_study_run_under_a_memory_limit_is_a_result_or_one_line(tmp_path, rng, planted_study,
                                                                  baseline, extra_mb):
    """Another command than diagnose: pyarrow, SciPy or llvmlite failing to load, a memory map
    refused, BLAS threads (which spun for ever at about 950 MB here) — one line, or the run."""
    study = planted_study(tmp_path / "study", rng)
    proc = _limited(baseline + extra_mb * _MB, ["run", study, "--out", tmp_path / "out",
                                                "--quiet"])
    if proc.returncode == 0:
        assert (tmp_path / "out" / "results.json").is_file()
    else:
        line = one_line_error(proc)
        assert "MemoryLimitError" in line and "ulimit -v" in line and "raise the limit" in line
    if extra_mb >= 1500:
        assert proc.returncode == 0, proc.stderr[-2000:]


def test_a_pool_under_a_limit_starts_only_the_threads_whose_blas_buffers_fit(baseline):
    del baseline  # (skips where prlimit or /proc is missing)
    """Before: at a limit just above a study's libraries, the homogeneity pool's second thread
    met OpenBLAS's ``exit(1)`` ("Memory allocation still failed after 10 retries") when it
    first called BLAS, past every handler. Threads that would not fit are not started."""
    code = ("import sys; from aria_tda._memory import threads_that_fit, headroom, "
            "BLAS_THREAD_BYTES as b; print(headroom(), threads_that_fit(8), "
            "threads_that_fit(8, per_thread=1))")
    runs = {}
    for extra_mb in (150, 4000):  # (the child loads no NumPy: it maps far less than baseline)
        proc = subprocess.run(["prlimit", f"--as={extra_mb * _MB}", sys.executable,
                               "-c", code], capture_output=True, text=True, check=True)
        room, fit, small = map(int, proc.stdout.split())
        runs[extra_mb] = fit
        assert fit == max(1, min(8, room // 2 // (64 * _MB))), (room, fit)
        assert small == 8  # threads that need nothing all fit
    assert runs[150] == 1 and runs[4000] == 8
    free = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True).stdout.split()
    assert free[0] == "None" and free[1] == "8"  # no limit: every thread asked for


# ------------------------------------------------------------------------------- caches


def _remount_read_only(fs: Path) -> None:
    r = subprocess.run(["mount", "-o", "remount,ro", str(fs)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot remount a tmpfs read-only here: {r.stderr.strip()}")


def _cache_warnings(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "cannot be written" in line]


@pytest.fixture
def study(tmp_path, rng, planted_study):
    return planted_study(tmp_path / "study", rng)


@pytest.mark.parametrize("state", ["full", "read-only"])
def test_an_unwritable_digest_cache_is_one_warning_and_never_damaged(tmp_path, study, state):
    """Before: a full cache folder was "damaged" (removed and "rebuilt") on every run."""
    with small_fs(tmp_path, "1m") as fs:
        cache = fs / "cache"
        env = {"ARIA_CACHE_DIR": str(cache)}
        first = cli(["run", study, "--out", tmp_path / "a", "--quiet"], env=env)
        assert first.returncode == 0, first.stderr[-2000:]
        assert (cache / "fingerprints.sqlite").is_file()
        if state == "full":
            fill(fs, 0)
        else:
            _remount_read_only(fs)
        reason = "No space left on device" if state == "full" else "Read-only file system"
        for out in ("b", "c"):  # every run: one warning, the run done, nothing "damaged"
            for name in ("scores.npy", "queries.csv"):  # a new stat key: a digest to store
                os.utime(study.parent / name)
            proc = cli(["run", study, "--out", tmp_path / out, "--quiet"], env=env)
            assert proc.returncode == 0, proc.stderr[-2000:]
            assert "damaged" not in proc.stderr, proc.stderr[-2000:]
            warned = _cache_warnings(proc.stderr)
            assert len(warned) == 1 and reason in warned[0], proc.stderr[-2000:]
            assert "fingerprint cache" in warned[0] and "used read-only" in warned[0]
        subprocess.run(["mount", "-o", "remount,rw", str(fs)], capture_output=True)


def test_a_fresh_digest_cache_on_a_full_disk_is_bypassed_with_one_warning(tmp_path, study):
    with small_fs(tmp_path, "1m") as fs:
        fill(fs, 0)
        proc = cli(["run", study, "--out", tmp_path / "a", "--quiet"],
                   env={"ARIA_CACHE_DIR": str(fs / "cache")})
        assert proc.returncode == 0, proc.stderr[-2000:]
        warned = _cache_warnings(proc.stderr)
        assert len(warned) == 1 and "No space left on device" in warned[0], proc.stderr
        assert "fingerprint cache" in warned[0] and "damaged" not in proc.stderr


def test_a_damaged_digest_cache_is_rebuilt_once(tmp_path, study):
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "fingerprints.sqlite").write_bytes(b"not a database, " * 512)
    env = {"ARIA_CACHE_DIR": str(cache)}
    proc = cli(["run", study, "--out", tmp_path / "a", "--quiet"], env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stderr.count("the fingerprint cache is damaged") == 1, proc.stderr
    again = cli(["run", study, "--out", tmp_path / "b", "--quiet"], env=env)
    assert again.returncode == 0 and "damaged" not in again.stderr, again.stderr[-2000:]


def test_librosas_jit_cache_on_a_full_disk_is_moved_aside_with_one_warning(tmp_path):
    """Before: numba raised ``OSError: No space left`` at a kernel's first call, and the probe
    called the cache corrupt and wiped it, on every run."""
    pytest.importorskip("librosa")
    import importlib.util

    from aria_tda.features.audio.render import midi_from_notes, render_file

    spec = importlib.util.find_spec("pretty_midi")  # its small soundfont loads fast
    small = Path(spec.origin).parent / "TimGM6mb.sf2" if spec and spec.origin else None

    music = tmp_path / "music"
    music.mkdir()
    for i in range(2):
        mid = tmp_path / f"a{i}.mid"
        midi_from_notes([(b * 0.5, 0.5, 48 + (b * (5 + i)) % 24, 80) for b in range(12)]
                        ).save(mid)
        try:
            render_file(mid, music / f"a{i}.wav", sr=22050, duration=6.0,
                        soundfont=small if small is not None and small.is_file() else None)
        except Exception as exc:  # no FluidSynth / soundfont here
            pytest.skip(f"cannot render test audio: {exc}")
    with small_fs(tmp_path, "1m") as fs:
        fill(fs, 0)
        proc = cli(["features", "audio", music, "--out", tmp_path / "store", "--workers", "1",
                    "--no-progress"], env={"ARIA_CACHE_DIR": str(fs / "cache")}, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "2 audio rows written" in proc.stdout + proc.stderr
    warned = [line for line in _cache_warnings(proc.stderr) if "numba JIT cache" in line]
    assert len(warned) == 1 and "No space left on device" in warned[0], proc.stderr[-3000:]
    assert "corrupt" not in proc.stderr and "Traceback" not in proc.stderr
    aside = re.search(r"compiled into (\S+) for this run only", warned[0])
    assert aside and not Path(aside.group(1)).exists()  # the private folder went with the run
