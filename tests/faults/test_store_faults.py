"""Faults of the feature and embedding store writers (``aria-tda features``, ``aria-tda embed``),
in real child processes: two writers racing on one store, a file system that fills up mid-write,
and kill -9 at chosen moments followed by a rerun compared with an uninterrupted run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from aria_tda.features.extract import extract_to_store
from aria_tda.features.store import FeatureStore
from faultlib import cli, fill, kill_when, leftovers, one_line_error, small_fs, start_cli
from features._midifiles import make_midi, note, save  # tests/features' helpers

TESTS = Path(__file__).resolve().parents[1]
EMBED_TESTS = TESTS / "embed"

#: ``aria-tda embed`` in a child process with the embed tests' toy encoder registered
EMBED_MAIN = (
    "import sys\n"
    "import _toy_encoder as toy\n"
    "from aria_tda.embed.encoders.registry import ENCODERS\n"
    "ENCODERS['toy'] = toy.SPEC\n"
    "from aria_tda.cli import main\n"
    "sys.exit(main(sys.argv[1:]))\n"
)


def midi_corpus(root: Path, n: int = 6, bad: int | None = 2) -> Path:
    """``n`` tiny MIDI files ``m0.mid`` ... (``m{bad}.mid`` empty: recorded as an error)."""
    root.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        if i == bad:
            (root / f"m{i}.mid").write_bytes(b"")
        else:
            save(make_midi([[*note(0, 96, 60 + i), *note(96, 192, 64 + i)]]), root / f"m{i}.mid")
    return root


@pytest.fixture
def toy(monkeypatch, tmp_path):
    """The toy encoder (registered here too), its checkpoint and a corpus of 3 tones + 1 bad."""
    monkeypatch.syspath_prepend(str(EMBED_TESTS))
    import _toy_encoder

    from aria_tda.embed.encoders.registry import ENCODERS

    monkeypatch.setitem(ENCODERS, "toy", _toy_encoder.SPEC)
    ckpt = _toy_encoder.save_checkpoint(tmp_path / "toy.npy")
    audio = _toy_encoder.make_corpus(tmp_path / "audio", n=3)
    return ckpt, audio


def embed_env(**extra: str) -> dict[str, str]:
    path = os.pathsep.join(p for p in (str(EMBED_TESTS), os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONWARNINGS": "ignore", "PYTHONPATH": path, **extra}


def start_embed(args, **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", EMBED_MAIN, "embed", *map(str, args)],
                            env=embed_env(**env), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


def run_embed(args, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", EMBED_MAIN, "embed", *map(str, args)],
                          env=embed_env(**env), capture_output=True, text=True, timeout=300)


def features_args(src: Path, out: Path) -> list[str]:
    return ["features", "symbolic", str(src), "--out", str(out), "--flush-every", "1"]


def content(path: Path) -> tuple[dict, dict, list, list]:
    """What a store holds, timestamps aside: manifest, part bytes, rows, failed files."""
    st = FeatureStore.open(path)
    man = json.loads((path / "aria-manifest.json").read_text())
    for key in ("created", "updated"):
        man.pop(key, None)
    parts = {q["file"]: (path / q["file"]).read_bytes() for q in man["parts"]}
    rows = [st.track_ids.tolist(), {n: st.vectors(n).tolist() for n in st.feature_names},
            st.metadata.to_dict("list")]
    errors = sorted((r.path, r.track_id, r.error) for r in st.errors.itertuples())
    return man, parts, rows, errors


def race(procs) -> tuple[subprocess.CompletedProcess[str], ...]:
    done = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        done.append(subprocess.CompletedProcess(p.args, p.returncode, out, err))
    return tuple(done)


def loser_and_winner(a, b, pa, pb):
    assert sorted((a.returncode, b.returncode)) == [0, 2], (a.stdout, a.stderr[-800:],
                                                            b.stdout, b.stderr[-800:])
    return (a, b, pb) if a.returncode == 2 else (b, a, pa)


# --------------------------------------------------------------------------- concurrent writers


@pytest.mark.slow
def test_two_features_processes_racing_on_one_store(tmp_path):
    src = midi_corpus(tmp_path / "in", n=5, bad=None)
    out = tmp_path / "store"
    env = {"ARIA_TEST_STORE_STALL": "1.0"}  # the winner holds the store for 5 s at least
    pa_, pb_ = start_cli(features_args(src, out), env=env), start_cli(features_args(src, out),
                                                                      env=env)
    a, b = race([pa_, pb_])
    loser, winner, holder = loser_and_winner(a, b, pa_, pb_)
    line = one_line_error(loser)
    assert "LockedError" in line and f"being written by process pid {holder.pid}" in line
    assert "5 symbolic rows written" in winner.stdout
    st = FeatureStore.open(out)
    assert st.track_ids.tolist() == [f"m{i}" for i in range(5)]
    assert [q["file"] for q in st.manifest["parts"]] == [f"part-{i:05d}.parquet"
                                                         for i in range(5)]
    assert leftovers(out) == []


@pytest.mark.slow
def test_two_embed_processes_racing_on_one_store(tmp_path, toy):
    ckpt, audio = toy
    out = tmp_path / "emb"
    args = [audio, "--encoder", "toy", "--weights", ckpt, "--out", out]
    pa_, pb_ = (start_embed(args, ARIA_TEST_STORE_STALL="2.5"),
                start_embed(args, ARIA_TEST_STORE_STALL="2.5"))
    a, b = race([pa_, pb_])
    loser, _winner, holder = loser_and_winner(a, b, pa_, pb_)
    line = one_line_error(loser)
    assert "this embedding store is being written by process pid" in line
    assert f"pid {holder.pid}" in line
    st = FeatureStore.open(out)
    assert st.track_ids.tolist() == ["t0", "t1", "t2"] and st.errors["track_id"].tolist() == ["bad"]
    assert leftovers(out) == []


# --------------------------------------------------------------------------- a full disk


@pytest.mark.slow
@pytest.mark.parametrize("leave", [20_000, 0])
def test_features_on_a_disk_that_fills_up(tmp_path, leave):
    src = midi_corpus(tmp_path / "in")
    ref = tmp_path / "ref"
    extract_to_store(src, ref, modality="symbolic", flush_every=1)
    with small_fs(tmp_path, "512k") as mnt:
        out = mnt / "store"
        ballast = fill(mnt, leave)
        proc = cli(features_args(src, out))
        line = one_line_error(proc)
        assert "DiskFullError: No space left on" in line and str(mnt) in line
        assert leftovers(mnt) == []
        if (out / "aria-manifest.json").exists():  # what was committed stays readable
            n = len(FeatureStore.open(out))
            assert n < 5
            assert sorted(p.name for p in out.iterdir() if p.name.startswith("part-")) == [
                f"part-{i:05d}.parquet" for i in range(len(FeatureStore.open(out).manifest[
                    "parts"]))]
        else:
            assert not out.exists()  # nothing finalised: no store at all
        if leave == 0:
            assert not out.exists()
        ballast.unlink()
        summary = extract_to_store(src, out, modality="symbolic", flush_every=1)
        assert summary["n_extracted"] + summary["n_skipped"] == 5
        assert content(out) == content(ref)
        assert leftovers(mnt) == []


@pytest.mark.slow
def test_embed_on_a_disk_that_fills_up(tmp_path, toy):
    ckpt, audio = toy
    ref = tmp_path / "ref"
    args = [audio, "--encoder", "toy", "--weights", ckpt]
    assert run_embed([*args, "--out", ref]).returncode == 0
    with small_fs(tmp_path, "512k") as mnt:
        out = mnt / "emb"
        ballast = fill(mnt, 4096)
        line = one_line_error(run_embed([*args, "--out", out]))
        assert "DiskFullError: No space left on" in line
        assert leftovers(mnt) == []
        assert not out.exists() or len(FeatureStore.open(out)) < 3
        ballast.unlink()
        again = run_embed([*args, "--out", out])
        assert again.returncode == 0, again.stderr[-800:]
        assert content(out) == content(ref)
        assert leftovers(mnt) == []


# --------------------------------------------------------------------------- kill -9


def _temp_of(store: Path, prefix: str):
    def ready() -> bool:
        return store.is_dir() and any(p.name.startswith(prefix) and ".tmp-" in p.name
                                      for p in store.iterdir())
    return ready


@pytest.mark.slow
@pytest.mark.parametrize("moment", [".part-00001.parquet", ".errors.parquet"])
def test_features_killed_mid_write_then_rerun_equals_an_uninterrupted_run(tmp_path, moment):
    src = midi_corpus(tmp_path / "in")
    ref = tmp_path / "ref"
    extract_to_store(src, ref, modality="symbolic", flush_every=1)
    out = tmp_path / "store"
    proc = start_cli(features_args(src, out), env={"ARIA_TEST_STORE_STALL": "0.5"})
    assert kill_when(proc, _temp_of(out, moment), timeout=120)
    assert leftovers(out)  # the killed write's temporary is still there
    committed = len(FeatureStore.open(out))  # what was committed opens
    assert 1 <= committed < 5
    rerun = cli(features_args(src, out))
    assert rerun.returncode == 0, rerun.stderr[-800:]
    assert f"{committed} files already in the store" in rerun.stdout
    assert leftovers(out) == []
    assert content(out) == content(ref)


@pytest.mark.slow
def test_embed_killed_mid_write_then_rerun_equals_an_uninterrupted_run(tmp_path, toy):
    ckpt, audio = toy
    args = [audio, "--encoder", "toy", "--weights", ckpt]
    ref = tmp_path / "ref"
    assert run_embed([*args, "--out", ref]).returncode == 0
    out = tmp_path / "emb"
    proc = start_embed([*args, "--out", out], ARIA_TEST_STORE_STALL="30")
    t0 = time.monotonic()
    assert kill_when(proc, _temp_of(out, ".part-00000.parquet"), timeout=120)
    assert time.monotonic() - t0 < 60
    assert leftovers(out)
    again = run_embed([*args, "--out", out])
    assert again.returncode == 0, again.stderr[-800:]
    assert leftovers(out) == []
    assert content(out) == content(ref)
