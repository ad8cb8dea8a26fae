"""Faults injected into the writers of score matrices and spill files, through the CLI in a
child process: a full file system (no SIGBUS, one line, nothing left), a kill -9 mid-write
followed by a rerun (byte-identical, nothing left), outputs that are inputs or files ARIA did
not write (refused before any work), a spill folder that is a file."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from aria_tda.features.store import StoreWriter
from aria_tda.scores import save_scores
from faultlib import cli, fill, kill_when, leftovers, one_line_error, small_fs, start_cli


@pytest.fixture
def seg(tmp_path):
    """A segment-level matrix (400 segments of 100 tracks x 150 queries) and its map."""
    rng = np.random.default_rng(7)
    d = tmp_path / "in"
    path = save_scores(rng.standard_normal((400, 150)).astype(np.float32), d / "seg.npy")
    pd.DataFrame({"track_id": np.repeat([f"t{i:03d}" for i in range(100)], 4)}).to_csv(
        d / "map.csv", index=False)
    return path, d / "map.csv"


def _embedding_store(path: Path, n: int, seed: int) -> Path:
    params = {"encoder": {"encoder": "toy", "weights_sha256": "0" * 64, "layer": -1,
                          "sample_rate": 16000, "window_seconds": 1.0, "dim": 8}}
    w = StoreWriter(path, modality="embedding", params=params)
    x = np.random.default_rng(seed).standard_normal((n, 8)) + 0.1
    w.append([f"s{i}" for i in range(n)], {"embedding": x})
    return path


def _no_space(proc, out: Path) -> str:
    line = one_line_error(proc)  # exit 2, not a SIGBUS (-7 / 135), one line, no traceback
    assert "No space left on tmpfs (mounted at " in line and "need " in line, line
    assert str(out) in line, line
    return line


# -- a full file system --------------------------------------------------------------------
@pytest.mark.parametrize("suffix", [".npy", ".zarr"])
def test_aggregate_on_a_full_disk(tmp_path, seg, suffix):
    path, seg_map = seg
    with small_fs(tmp_path, "4m") as fs:
        fill(fs, 64 * 2**10)  # S_track takes 117 kB (a zarr store twice that while it fills)
        out = fs / "res" / f"track{suffix}"
        proc = cli(["aggregate", path, "--segments", seg_map, "--out", out])
        _no_space(proc, out)
        assert not out.exists() and leftovers(fs) == []


@pytest.mark.slow
def test_retrieve_on_a_full_disk(tmp_path):
    train = _embedding_store(tmp_path / "train", 300, 1)
    queries = _embedding_store(tmp_path / "queries", 200, 2)
    with small_fs(tmp_path, "4m") as fs:
        fill(fs, 64 * 2**10)  # the cosine matrix takes 234 kB
        for suffix in (".npy", ".zarr"):
            out = fs / f"cos{suffix}"
            proc = cli(["retrieve", train, queries, "--out", out])
            _no_space(proc, out)
            assert not out.exists() and not (fs / f"cos{suffix}.queries.csv").exists()
        assert leftovers(fs) == []


@pytest.mark.slow
def test_tiled_spill_on_a_full_disk(tmp_path):
    s = np.random.default_rng(3).standard_normal((60, 500))
    path = save_scores(s, tmp_path / "wide.npy")
    with small_fs(tmp_path, "1m") as fs:  # the spilled Gram takes 2 MB
        spill = fs / "spill"
        proc = cli(["diagnose", path, "--exact-tiled", "--memory", "64MB", "--spill-dir", spill])
        line = one_line_error(proc)
        assert "No space left on tmpfs (mounted at " in line and str(spill) in line, line
        assert leftovers(fs) == [] and not list(fs.rglob("gram.f64"))


def test_spill_dir_that_is_a_file(tmp_path):
    path = save_scores(np.random.default_rng(4).standard_normal((30, 8)), tmp_path / "s.npy")
    (tmp_path / "notes").write_text("mine")
    proc = cli(["diagnose", path, "--exact-tiled", "--spill-dir", tmp_path / "notes"])
    line = one_line_error(proc)
    assert "--spill-dir: expected a folder, got a file: " in line, line
    assert (tmp_path / "notes").read_text() == "mine"


# -- kill -9 mid-write, then a rerun -----------------------------------------------------------
@pytest.mark.slow
def test_aggregate_killed_mid_write_then_rerun(tmp_path):
    rng = np.random.default_rng(5)
    path = save_scores(rng.standard_normal((20000, 300)).astype(np.float32),
                       tmp_path / "in" / "big.npy")
    seg_map = tmp_path / "in" / "map.csv"
    pd.DataFrame({"track_id": np.repeat([f"t{i:05d}" for i in range(5000)], 4)}).to_csv(
        seg_map, index=False)
    args = ["aggregate", path, "--segments", seg_map, "--chunk-rows", "256", "--out"]

    ref = tmp_path / "ref" / "track.npy"
    assert cli([*args, ref]).returncode == 0

    out_dir = tmp_path / "out"
    out_dir.mkdir()
    out = out_dir / "track.npy"
    proc = start_cli([*args, out])
    killed = kill_when(proc, lambda: any(".tmp-" in p.name for p in out_dir.iterdir()),
                       poll=0.005)
    assert killed, "the run finished before it could be killed mid-write"
    assert leftovers(out_dir) and not out.exists()  # what a kill leaves: a 24 MB temporary

    rerun = cli([*args, out])
    assert rerun.returncode == 0, rerun.stderr[-2000:]
    assert leftovers(out_dir) == []
    for suffix in ("", ".row_ids.npy"):
        a = out.with_name(out.name + suffix).read_bytes()
        b = ref.with_name(ref.name + suffix).read_bytes()
        assert a == b, suffix
    man = {k: v for k, v in json.loads(Path(f"{out}.manifest.json").read_text()).items()
           if k != "created"}
    ref_man = json.loads(Path(f"{ref}.manifest.json").read_text())
    assert man == {k: v for k, v in ref_man.items() if k != "created"}


# -- never over an input, never over a file ARIA did not write ---------------------------------
def test_aggregate_output_that_is_an_input(tmp_path, seg):
    path, seg_map = seg
    before = {p: p.read_bytes() for p in (path, seg_map)}
    link = tmp_path / "link.npy"
    link.symlink_to(path)
    tracks = tmp_path / "tracks.npy"
    tracks.write_text("\n".join(f"t{i:03d}" for i in range(100)))
    for out, what in ((path, "scores"), (link, "scores"), (seg_map.with_suffix(".npy"), None),
                      (tracks, "tracks")):
        if what is None:  # the map itself as the output (an .npy map)
            np.save(out, np.repeat([f"t{i:03d}" for i in range(100)], 4))
            mapped = out.read_bytes()
            proc = cli(["aggregate", path, "--segments", out, "--out", out])
            assert out.read_bytes() == mapped
            what = "segments"
        else:
            proc = cli(["aggregate", path, "--segments", seg_map, "--tracks", tracks,
                        "--out", out])
        line = one_line_error(proc)
        assert f"got the {what} input" in line and "refusing to overwrite an input" in line, line
    assert all(p.read_bytes() == b for p, b in before.items())
    assert leftovers(tmp_path) == []


def test_retrieve_output_that_is_an_input(tmp_path):
    train = _embedding_store(tmp_path / "train", 5, 1)
    queries = _embedding_store(tmp_path / "queries", 4, 2)
    link = tmp_path / "q.zarr"
    link.symlink_to(queries)
    proc = cli(["retrieve", train, queries, "--out", link])
    line = one_line_error(proc)
    assert "got the queries input" in line, line
    assert link.is_symlink() and (queries / "aria-manifest.json").is_file()


@pytest.mark.slow
def test_users_file_is_refused_and_arias_own_replaced_only_with_overwrite(tmp_path, seg):
    path, seg_map = seg
    mine = tmp_path / "results.npy"
    np.save(mine, np.arange(10.0))
    before = mine.read_bytes()
    for extra in ([], ["--overwrite"]):  # a file ARIA did not write: never written over
        proc = cli(["aggregate", path, "--segments", seg_map, "--out", mine, *extra])
        line = one_line_error(proc)
        assert "already exists and ARIA did not write it as track_scores" in line, line
        assert "remove it yourself" in line and mine.read_bytes() == before
        assert not Path(f"{mine}.manifest.json").exists()
    # a segment-level matrix of the user's (an ARIA manifest of another kind) likewise
    proc = cli(["aggregate", path, "--segments", seg_map, "--out", path.with_name("seg.npy")])
    assert "refusing to overwrite an input" in one_line_error(proc)
    other = save_scores(np.ones((3, 3)), tmp_path / "other.npy")
    proc = cli(["aggregate", path, "--segments", seg_map, "--out", other])
    line = one_line_error(proc)
    assert "its manifest says kind 'scores'" in line and "--overwrite" in line
    # an earlier ARIA output of another kind is replaced when asked
    ok = cli(["aggregate", path, "--segments", seg_map, "--out", other, "--overwrite"])
    assert ok.returncode == 0, ok.stderr[-2000:]
    assert np.load(other).shape == (100, 150)
    again = cli(["aggregate", path, "--segments", seg_map, "--out", other])  # now its kind
    assert again.returncode == 0, again.stderr[-2000:]
    assert mine.read_bytes() == before and leftovers(tmp_path) == []
