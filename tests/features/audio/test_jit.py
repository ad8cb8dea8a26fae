"""librosa's numba JIT cache: ARIA's own location, warmed once, rebuilt when corrupt; cold
multi-process extraction works the first time, every time."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import time
from importlib.metadata import version
from pathlib import Path

import numpy as np
import pytest

from aria_tda.errors import AriaWarning
from aria_tda.features.audio import jit

pytestmark = pytest.mark.filterwarnings("error::aria_tda.errors.AriaWarning")


@pytest.fixture
def numba_config():
    """Restore numba's in-process cache setting after a test that moves it."""
    cfg = sys.modules.get("numba.core.config")
    old = getattr(cfg, "CACHE_DIR", None)
    yield
    if cfg is not None:
        cfg.CACHE_DIR = old


def test_cache_dir_is_per_user_and_version_and_overridable(tmp_path, monkeypatch, numba_config):
    from aria_tda._version import __version__

    monkeypatch.setenv("ARIA_CACHE_DIR", str(tmp_path / "a"))
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    monkeypatch.delenv(jit._MARK, raising=False)
    py = f"py{sys.version_info.major}.{sys.version_info.minor}"
    want = tmp_path / "a" / "numba" / f"{__version__}-{version('numba')}-{py}"
    assert jit.numba_cache_dir() == want
    assert jit.configure_numba_cache() == want and os.environ["NUMBA_CACHE_DIR"] == str(want)
    # ARIA's own setting follows ARIA_CACHE_DIR (e.g. in a child with another environment)
    monkeypatch.setenv("ARIA_CACHE_DIR", str(tmp_path / "b"))
    assert jit.configure_numba_cache().parent == tmp_path / "b" / "numba"
    # a NUMBA_CACHE_DIR the user chose is respected
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "mine"))
    assert jit.configure_numba_cache() == tmp_path / "mine"


def test_a_failing_probe_wipes_the_cache_and_recompiles(tmp_path, monkeypatch, numba_config):
    monkeypatch.setenv("ARIA_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    cache = jit.numba_cache_dir()
    cache.mkdir(parents=True)
    (cache / "junk.nbi").write_bytes(b"corrupt")
    calls = []

    def probe(path):
        calls.append(path)
        if len(calls) == 1:
            return -11, ""  # the first probe segfaults on the corrupt cache
        (path / "kernel.nbc").write_bytes(b"compiled")
        return 0, ""

    monkeypatch.setattr(jit, "_probe", probe)
    with pytest.warns(AriaWarning, match=r"probe died \(SIGSEGV\).*corrupt: wiped and recompiled"):
        assert jit.prepare_workers()
    assert len(calls) == 2 and not (cache / "junk.nbi").exists()
    assert (cache / "kernel.nbc").is_file() and (cache / jit._STAMP).is_file()
    assert jit.prepare_workers() and len(calls) == 2  # warm and unchanged: no probe
    (cache / "kernel.nbc").write_bytes(b"changed by someone")
    assert jit.prepare_workers() and len(calls) == 3  # a changed cache is probed again
    assert jit.prepare_workers(force=True) and len(calls) == 4


def test_a_probe_that_keeps_failing_warns_and_goes_on(tmp_path, monkeypatch, numba_config):
    monkeypatch.setenv("ARIA_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    monkeypatch.setattr(jit, "_probe", lambda path: (1, "ValueError: boom"))
    with pytest.warns(AriaWarning) as record:
        assert jit.prepare_workers() is False
    assert any("even with a fresh JIT cache" in str(w.message) for w in record)
    assert not (jit.numba_cache_dir() / jit._STAMP).exists()


_TRY_LOCK = """
import fcntl, sys
with open(sys.argv[1], "a+") as fh:
    try:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        print("held")
    else:
        print("free")
"""


def _lock_state(cache: Path) -> str:
    lock = cache.with_name(cache.name + ".lock")
    return subprocess.run([sys.executable, "-c", _TRY_LOCK, str(lock)], capture_output=True,
                          text=True, check=True).stdout.strip()


@pytest.fixture
def first_use(tmp_path, monkeypatch, numba_config):
    """A process whose first in-process use is still to come, with a cache of its own that a
    (stand-in) probe warms."""
    monkeypatch.setenv("ARIA_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    monkeypatch.delenv(jit._PROBE, raising=False)
    monkeypatch.setitem(jit._state, "ready", False)
    probes = []

    def probe(path):
        probes.append(path)
        (path / "kernel.nbc").write_bytes(b"compiled")
        return 0, ""

    monkeypatch.setattr(jit, "_probe", probe)
    return jit.numba_cache_dir(), probes


def test_the_first_in_process_use_compiles_under_the_cache_lock(first_use):
    """Two processes compiling one kernel's signatures at once can cross their machine code in
    the cache (a segfault for whoever loads it): the first use in a process holds the lock that
    probes and other processes' first uses take, after a probe has warmed the cache."""
    cache, probes = first_use
    with jit.in_process():
        assert len(probes) == 1  # the cache was warmed (and stamped) first
        assert _lock_state(cache) == "held"
        with jit.in_process():  # nested: no second lock (it would wait on itself)
            assert _lock_state(cache) == "held"
    assert _lock_state(cache) == "free" and jit._state["ready"]
    with jit.in_process():  # later uses run freely
        assert _lock_state(cache) == "free"
    assert len(probes) == 1


def test_a_failed_first_use_leaves_the_next_one_under_the_lock(first_use):
    cache, _ = first_use
    with pytest.raises(ValueError, match="bad clip"), jit.in_process():
        raise ValueError("bad clip")
    assert not jit._state["ready"]
    with jit.in_process():
        assert _lock_state(cache) == "held"


def test_in_the_probe_itself_nothing_waits_on_the_parents_lock(first_use, monkeypatch):
    cache, probes = first_use
    monkeypatch.setenv(jit._PROBE, "1")
    with jit._locked(cache), jit.in_process():  # the parent's lock, held: no deadlock
        pass
    assert probes == [] and not jit._state["ready"]


# --------------------------------------------------------------------------- real cold starts

needs_librosa = pytest.mark.skipif(
    importlib.util.find_spec("librosa") is None or importlib.util.find_spec("soundfile") is None,
    reason="audio extras not installed",
)


def _wavs(root: Path, n: int = 4) -> Path:
    import soundfile as sf

    root.mkdir(parents=True, exist_ok=True)
    sr = 48000
    t = np.arange(4 * sr) / sr
    for i in range(n):
        f0 = 220.0 * 2 ** (i / 12)
        pulse = (np.sin(2 * np.pi * (1.5 + 0.25 * i) * t) > 0.8).astype(float)
        y = 0.3 * np.sin(2 * np.pi * f0 * t) * (0.5 + 0.5 * pulse)
        sf.write(root / f"tone{i}.wav", y.astype(np.float32), sr)
    sf.write(root / "silent.wav", np.zeros(sr, dtype=np.float32), sr)
    return root


def _cold_env(cache: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", jit._MARK)}
    env.update(ARIA_CACHE_DIR=str(cache), ARIA_PROGRESS="0")
    return env


#: independent cold starts of the same extraction (issue 13 crashed 3 of 5 of them)
COLD_ATTEMPTS = (1, 2, 3)
#: seconds the cold starts may take together (each took up to ~100 s on a loaded machine)
COLD_TIMEOUT = 900.0


@pytest.fixture(scope="module")
def cold_starts(tmp_path_factory):
    """``aria-tda features audio --workers 2 --json`` on 4 tones and a silent file, once per
    attempt, each from an empty JIT cache of its own: ``{attempt: (returncode, stderr, store,
    cache)}``.

    The attempts share nothing (own inputs, store, output files and ``ARIA_CACHE_DIR``), so
    they run at the same time: each compiles its kernels in one probe process, on one core;
    one after the other they left the second core of a two-core machine idle for minutes.
    """
    started = {}
    try:
        for attempt in COLD_ATTEMPTS:
            root = tmp_path_factory.mktemp(f"cold{attempt}")
            src, cache, out = _wavs(root / "wavs"), root / "cache", root / "store"
            argv = [sys.executable, "-m", "aria_tda", "features", "audio", str(src), "--out",
                    str(out), "--workers", "2", "--json"]
            with open(root / "stdout", "wb") as fo, open(root / "stderr", "wb") as fe:
                proc = subprocess.Popen(argv, env=_cold_env(cache), stdout=fo, stderr=fe)
            started[attempt] = (proc, root, out, cache)
        deadline = time.monotonic() + COLD_TIMEOUT
        done = {}
        for attempt, (proc, root, out, cache) in started.items():
            try:
                rc = proc.wait(timeout=max(1.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                rc = None
            err = (root / "stderr").read_text(errors="replace")
            if rc is None:
                err = f"timed out after {COLD_TIMEOUT:g} s\n{err}"
            done[attempt] = (rc, err, out, cache)
        return done
    finally:
        for proc, *_ in started.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()


@needs_librosa
@pytest.mark.slow
@pytest.mark.parametrize("attempt", COLD_ATTEMPTS)
def test_cold_multiprocess_audio_extraction(cold_starts, attempt):
    """``aria-tda features audio --workers 2`` from an empty JIT cache succeeds (issue 13: it
    crashed in 3 of 5 cold starts when workers compiled into the venv at once)."""
    rc, stderr, out, cache = cold_starts[attempt]
    assert rc == 0, stderr[-2000:]
    assert "Traceback" not in stderr
    from aria_tda.features.store import FeatureStore

    st = FeatureStore.open(out)
    assert st.track_ids.tolist() == [f"tone{i}" for i in range(4)]
    assert st.errors["track_id"].tolist() == ["silent"]
    assert "silent" in st.errors["error"][0]
    assert list(cache.glob("numba/*/**/*.nbi")), "the kernels were cached under ARIA_CACHE_DIR"


@needs_librosa
@pytest.mark.slow
def test_a_corrupt_cache_is_detected_and_rebuilt(cold_starts, tmp_path):
    """Garbage in the cached machine code: the probe fails, the cache is wiped and rebuilt, and
    the extraction then succeeds instead of failing on every file.

    The cache to damage is a copy of the one the first cold start compiled (and checked, in
    the test above): compiling another from scratch here would take as long again.
    """
    rc, stderr, _, warm = cold_starts[COLD_ATTEMPTS[0]]
    assert rc == 0, stderr[-2000:]
    shutil.copytree(warm, tmp_path / "cache", symlinks=True)
    src = _wavs(tmp_path / "wavs", n=2)
    env = _cold_env(tmp_path / "cache")
    argv = [sys.executable, "-m", "aria_tda", "features", "audio", str(src), "--workers", "2"]
    files = list((tmp_path / "cache").glob("numba/*/**/*.nbc"))
    assert files
    for f in files:
        f.write_bytes(os.urandom(200))
    second = subprocess.run(
        [*argv, "--out", str(tmp_path / "s2")], env=env, capture_output=True, text=True, timeout=600
    )
    assert second.returncode == 0, second.stderr[-2000:]
    assert "corrupt: wiped and recompiled" in second.stderr and "Traceback" not in second.stderr
    from aria_tda.features.store import FeatureStore

    st = FeatureStore.open(tmp_path / "s2")
    assert len(st) == 2 and st.errors["track_id"].tolist() == ["silent"]
