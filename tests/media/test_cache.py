"""The disk cache of built clips: keyed on content and options, atomic, damage-tolerant,
trimmed; a rebuilt report reuses its clips byte for byte and rebuilds only what changed."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from aria_tda.media import cache as mc


@pytest.fixture
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ARIA_CACHE_DIR", str(tmp_path / "cache"))
    return mc.media_cache_dir()


def _ref(path: Path, kind: str = "audio", start=1.0, end=3.0):
    return SimpleNamespace(path=path, kind=kind, start=start, end=end, unit="s", missing=None)


def _clip(notes=None, picture=b"\x89PNG..."):
    return mc.CachedClip("audio" if notes is None else "midi", b"OggS" + bytes(range(200)),
                         picture, 4.25, (1.0, 3.0), notes)


OPTS = {"context": 1.0, "max_seconds": 20.0, "sr": 22050, "bitrate_kbps": 32,
        "pictures": True, "soundfont": None}


def test_the_key_follows_content_window_and_options_not_the_path(tmp_path, private_cache):
    a, b = tmp_path / "a.wav", tmp_path / "b.wav"
    a.write_bytes(b"RIFF" + bytes(1000))
    b.write_bytes(b"RIFF" + bytes(1000))
    k = mc.clip_key(_ref(a), **OPTS)
    assert k == mc.clip_key(_ref(b), **OPTS)  # same bytes elsewhere: same clip
    assert k != mc.clip_key(_ref(a, start=1.5), **OPTS)
    assert k != mc.clip_key(_ref(a), **{**OPTS, "sr": 16000})
    assert k != mc.clip_key(_ref(a), **{**OPTS, "pictures": False})
    b.write_bytes(b"RIFF" + bytes(999) + b"\x01")
    assert k != mc.clip_key(_ref(b), **OPTS)  # one byte differs
    assert mc.clip_key(_ref(tmp_path / "gone.wav"), **OPTS) is None
    assert mc.clip_key(SimpleNamespace(path=a, missing="no such file"), **OPTS) is None


def test_round_trip_with_notes_and_without_a_picture(private_cache):
    notes = pd.DataFrame({"pitch": np.array([60, 64], dtype=np.int64),
                          "start": [0.0, 0.5], "end": [0.5, 1.0],
                          "velocity": np.array([80, 90], dtype=np.int64),
                          "is_drum": [False, False]})
    for key, clip in (("ab" * 32, _clip()), ("cd" * 32, _clip(notes, picture=None))):
        mc.store(key, clip)
        got = mc.load(key)
        assert got is not None
        assert (got.kind, got.audio, got.picture, got.duration, got.window) == (
            clip.kind, clip.audio, clip.picture, clip.duration, clip.window)
        if clip.notes is None:
            assert got.notes is None
        else:
            pd.testing.assert_frame_equal(got.notes, clip.notes)
    assert [p.name for p in private_cache.rglob("*") if p.name.startswith(".")] == []


@pytest.mark.parametrize("damage", [b"", b"PK\x03\x04garbage", b"not a zip at all"])
def test_a_damaged_entry_is_a_miss_and_is_written_anew(private_cache, damage):
    key = "ef" * 32
    mc.store(key, _clip())
    entry = private_cache / key[:2] / f"{key}.npz"
    entry.write_bytes(damage)
    assert mc.load(key) is None
    mc.store(key, _clip())
    assert mc.load(key) == _clip()


def test_prune_removes_the_least_recently_used_first(private_cache):
    keys = [f"{i:02d}" * 32 for i in range(4)]
    for i, k in enumerate(keys):
        mc.store(k, _clip())
        p = private_cache / k[:2] / f"{k}.npz"
        os.utime(p, (1_000_000 + i, 1_000_000 + i))
    mc.load(keys[0])  # used now: kept
    size = (private_cache / keys[0][:2] / f"{keys[0]}.npz").stat().st_size
    assert mc.prune(max_bytes=2 * size) == 2
    assert mc.load(keys[0]) is not None and mc.load(keys[3]) is not None
    assert mc.load(keys[1]) is None and mc.load(keys[2]) is None
    assert mc.prune(max_bytes=10 * size) == 0


def test_an_unwritable_cache_keeps_nothing_and_raises_nothing(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("a file where the cache folder would be")
    monkeypatch.setenv("ARIA_CACHE_DIR", str(blocker))
    mc.store("12" * 32, _clip())
    assert mc.load("12" * 32) is None
