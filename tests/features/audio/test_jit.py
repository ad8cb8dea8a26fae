"""librosa's numba JIT cache: ARIA's own location, warmed once, rebuilt when corrupt; cold
multi-process extraction works the first time, every time."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
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


@needs_librosa
@pytest.mark.slow
@pytest.mark.parametrize("attempt", [1, 2, 3])
def test_cold_multiprocess_audio_extraction(tmp_path_factory, attempt):
    """``aria-tda features audio --workers 2`` from an empty JIT cache succeeds (issue 13: it
    crashed in 3 of 5 cold starts when workers compiled into the venv at once)."""
    tmp = tmp_path_factory.mktemp(f"cold{attempt}")
    src = _wavs(tmp / "wavs")
    cache = tmp / "cache"
    out = tmp / "store"
    argv = [
        sys.executable,
        "-m",
        "aria_tda",
        "features",
        "audio",
        str(src),
        "--out",
        str(out),
        "--workers",
        "2",
        "--json",
    ]
    proc = subprocess.run(argv, env=_cold_env(cache), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    from aria_tda.features.store import FeatureStore

    st = FeatureStore.open(out)
    assert st.track_ids.tolist() == [f"tone{i}" for i in range(4)]
    assert st.errors["track_id"].tolist() == ["silent"]
    assert "silent" in st.errors["error"][0]
    assert list(cache.glob("numba/*/**/*.nbi")), "the kernels were cached under ARIA_CACHE_DIR"


@needs_librosa
@pytest.mark.slow
def test_a_corrupt_cache_is_detected_and_rebuilt(tmp_path):
    """Garbage in the cached machine code: the probe fails, the cache is wiped and rebuilt, and
    the extraction then succeeds instead of failing on every file."""
    src = _wavs(tmp_path / "wavs", n=2)
    env = _cold_env(tmp_path / "cache")
    argv = [sys.executable, "-m", "aria_tda", "features", "audio", str(src), "--workers", "2"]
    first = subprocess.run(
        [*argv, "--out", str(tmp_path / "s1")], env=env, capture_output=True, text=True, timeout=600
    )
    assert first.returncode == 0, first.stderr[-2000:]
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
