"""Score writers never write over an input or a file they did not make, leave nothing behind,
and reserve their space before memory-mapping it (issue 26)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from aria_tda._io import _HOST
from aria_tda.diagnostics.tiled import check_spill_dir, tiled_gram
from aria_tda.errors import DiskFullError, FileFormatError, ParameterError
from aria_tda.manifest import make_manifest, read_manifest, write_manifest
from aria_tda.scores import ScoreWriter, aggregate, open_scores, save_scores
from aria_tda.scores.writers import check_output_path
from faultlib import fill, leftovers, small_fs


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


@pytest.fixture
def seg(rng, tmp_path):
    s = rng.standard_normal((40, 6))
    return s, save_scores(s, tmp_path / "seg.npy"), np.repeat([f"t{i}" for i in range(10)], 4)


# -- inputs are read-only ----------------------------------------------------------------
def test_output_that_is_an_input_is_refused(seg, tmp_path):
    _, path, tracks = seg
    before = path.read_bytes()
    link = tmp_path / "link.npy"
    link.symlink_to(path)
    hard = tmp_path / "hard.npy"
    hard.hardlink_to(path)
    for out in (path, link, hard, tmp_path / "sub" / ".." / "seg.npy"):
        with pytest.raises(ParameterError, match=r"out: expected a path other than the command's "
                           r"inputs, got the scores input"):
            aggregate(path, segments=tracks, out=out)
    assert path.read_bytes() == before and link.is_symlink()


def test_segment_map_and_sidecars_are_inputs_too(seg, tmp_path):
    _, path, tracks = seg
    np.save(tmp_path / "map.npy", tracks)
    with pytest.raises(ParameterError, match="got the segments input"):
        aggregate(path, segments=tmp_path / "map.npy", out=tmp_path / "map.npy")
    np.save(tmp_path / "y.npy.row_ids.npy", tracks)  # a map named like OUT's row-id sidecar
    with pytest.raises(ParameterError, match=r"segments input .*its sidecar 'y\.npy\.row_ids"):
        aggregate(path, segments=tmp_path / "y.npy.row_ids.npy", out=tmp_path / "y.npy")
    np.testing.assert_array_equal(np.load(tmp_path / "map.npy"), tracks)
    assert not (tmp_path / "y.npy").exists()


def test_a_zarr_output_holding_the_input_is_refused(rng, tmp_path):
    store = tmp_path / "s.zarr"
    save_scores(rng.standard_normal((8, 3)), store)
    with pytest.raises(ParameterError, match="got the scores input"):
        save_scores(store / "zarr.json", store)  # the store as both input and output
    with pytest.raises(ParameterError, match="got the scores input"):
        save_scores(open_scores(store), store)
    assert open_scores(store).shape == (8, 3)


# -- files ARIA did not write ------------------------------------------------------------
def test_a_users_file_is_never_written_over(seg, tmp_path):
    s, path, tracks = seg
    mine = tmp_path / "results.npy"
    np.save(mine, np.arange(5.0))
    before = mine.read_bytes()
    with pytest.raises(ParameterError, match=r"results\.npy' already exists and ARIA did not "
                       r"write it as track_scores \(there is no ARIA manifest"):
        aggregate(path, segments=tracks, out=mine)
    with pytest.raises(ParameterError, match="already exists and ARIA did not write it as scores"):
        save_scores(s, mine)
    with pytest.raises(ParameterError, match="remove it yourself"):
        aggregate(path, segments=tracks, out=mine, overwrite=True)  # not even when asked
    assert mine.read_bytes() == before and read_manifest(mine) is None


def test_a_manifest_of_another_kind_or_purpose_is_refused(seg, tmp_path):
    _, path, tracks = seg
    other = save_scores(np.ones((2, 2)), tmp_path / "other.npy")
    with pytest.raises(ParameterError, match="its manifest says kind 'scores'"):
        aggregate(path, segments=tracks, out=other)
    np.testing.assert_array_equal(open_scores(other).to_numpy(), np.ones((2, 2)))
    got = aggregate(path, segments=tracks, out=other, overwrite=True)  # ARIA's own, when asked
    assert got.shape == (10, 6) and read_manifest(other)["kind"] == "track_scores"
    cos = tmp_path / "cos.npy"
    np.save(cos, np.ones((10, 6), dtype=np.float32))
    write_manifest(cos, make_manifest("track_scores", parameters={"score": "cosine"}))
    with pytest.raises(ParameterError, match="its manifest describes another track_scores"):
        aggregate(path, segments=tracks, out=cos)
    (tmp_path / "bad.npy").write_bytes(b"x")
    (tmp_path / "bad.npy.manifest.json").write_text("{not json")
    with pytest.raises(ParameterError, match=r"manifest .* is unreadable"):
        check_output_path("out", tmp_path / "bad.npy", kind="scores")
    foreign = tmp_path / "f.zarr"
    import zarr

    zarr.open_array(str(foreign), mode="w", shape=(2, 2), dtype="f8")[:] = 1.0
    with pytest.raises(ParameterError, match=r"f\.zarr' already exists and ARIA did not write"):
        save_scores(np.ones((3, 3)), foreign)
    assert np.asarray(zarr.open_array(str(foreign), mode="r")[:]).shape == (2, 2)


def test_an_earlier_output_of_the_same_kind_is_replaced(seg, tmp_path):
    _, path, tracks = seg
    for suffix in (".npy", ".zarr"):
        out = tmp_path / f"track{suffix}"
        aggregate(path, segments=tracks, out=out)
        again = aggregate(path, segments=tracks[::-1].copy(), out=out, normalize="rank")
        assert read_manifest(out)["parameters"]["normalize"] == "rank"
        assert again.row_ids.tolist() == [f"t{i}" for i in range(9, -1, -1)]
    assert leftovers(tmp_path) == []


# -- temporaries -------------------------------------------------------------------------
def test_leftovers_of_dead_writers_are_swept_live_ones_kept(rng, tmp_path):
    dead = _dead_pid()
    stale = tmp_path / f".out.npy.tmp-{dead}-{_HOST}abcd"
    stale.write_bytes(b"\0" * 4096)
    stale_zarr = tmp_path / f".out.zarr.tmp-{dead}-{_HOST}cdef"
    stale_zarr.mkdir()
    (stale_zarr / ".staging.npy.tmp-1-00000000").write_bytes(b"\0")
    live = tmp_path / f".other.npy.tmp-{os.getppid()}-{_HOST}abcd"  # pytest's parent: alive
    live.write_text("a live writer's")
    save_scores(rng.standard_normal((4, 3)), tmp_path / "out.npy")
    assert not stale.exists() and not stale_zarr.exists() and live.exists()


def test_zarr_staging_file_is_unique_to_the_process(tmp_path):
    with ScoreWriter(tmp_path / "a.zarr", shape=(6, 4), dtype=np.float64) as w:
        w.array[:] = 1.0
        names = [p.name for p in w._tmp.iterdir() if "staging" in p.name]
        assert len(names) == 1 and names[0] != ".staging.npy"
        assert f".tmp-{os.getpid()}-" in names[0]
    np.testing.assert_array_equal(open_scores(tmp_path / "a.zarr").to_numpy(), np.ones((6, 4)))
    assert leftovers(tmp_path) == []


# -- full disks ----------------------------------------------------------------------------
_MAPPED = textwrap.dedent("""
    import sys
    import numpy as np
    import aria_tda.scores.writers as wr
    from aria_tda.errors import DiskFullError
    wr.check_output_space = lambda *a, **k: None   # only the reservation stands in the way
    if sys.argv[2] == "zarr":
        wr.check_space = lambda *a, **k: None
    out = sys.argv[1]
    try:
        with wr.ScoreWriter(out, shape=(512, 256), dtype=np.float64, kind="track_scores") as w:
            w.array[:] = 1.0
    except DiskFullError as exc:
        print(exc)
        sys.exit(3)
""")


@pytest.mark.parametrize("fmt", ["npy", "zarr"])
def test_memory_mapped_output_reserves_its_space(tmp_path, fmt):
    """With the up-front check out of the way, the reservation itself must stop the write:
    a sparse file mapped on a full tmpfs dies with SIGBUS (exit -7)."""
    with small_fs(tmp_path, "2m") as fs:
        fill(fs, 300 * 2**10)
        out = fs / f"out.{fmt}"
        r = subprocess.run([sys.executable, "-c", _MAPPED, str(out), fmt], capture_output=True,
                           text=True, timeout=120)
        assert r.returncode == 3, (r.returncode, r.stderr[-2000:])
        assert r.stdout.startswith("No space left on tmpfs (mounted at ") and str(out) in r.stdout
        assert not out.exists() and leftovers(fs) == []


def test_zarr_output_checks_room_for_staging_and_chunks(tmp_path):
    with small_fs(tmp_path, "2m") as fs:
        fill(fs, 1500 * 2**10)  # room for the chunks (1 MB), not for the staging copy too
        with pytest.raises(DiskFullError, match=r"need 2\.\d MB, have 1\.\d MB, writing .*t\.zarr"):
            with ScoreWriter(fs / "t.zarr", shape=(512, 256), dtype=np.float64) as w:
                w.array[:] = 2.0
        assert not (fs / "t.zarr").exists() and leftovers(fs) == []


# -- the tiled spill -------------------------------------------------------------------------
def test_spill_dir_that_is_a_file_is_a_parameter_error(rng, tmp_path):
    f = tmp_path / "file"
    f.write_text("mine")
    with pytest.raises(ParameterError, match=r"--spill-dir: expected a folder, got a file: "):
        check_spill_dir(f, name="--spill-dir")
    with pytest.raises(ParameterError, match="spill_dir: expected a folder, got a path under the"):
        tiled_gram(rng.standard_normal((20, 5)), memory="64MB", spill_dir=f / "sub")
    assert f.read_text() == "mine"


def test_spill_checks_space_and_leaves_nothing(rng, tmp_path):
    s = rng.standard_normal((50, 400))
    with small_fs(tmp_path, "1m") as fs:
        with pytest.raises(DiskFullError, match=r"No space left on tmpfs .*need 1\.\d MB"):
            tiled_gram(s, memory="64MB", spill_dir=fs / "spill")
        assert leftovers(fs) == [] and not list(fs.rglob("gram.f64"))
    dead = _dead_pid()
    (tmp_path / "spill" / f".aria-gram.tmp-{dead}-{_HOST}abcd").mkdir(parents=True)
    with tiled_gram(s[:, :20], memory="64MB", spill_dir=tmp_path / "spill") as tg:
        assert tg.path.parent.name.startswith(".aria-gram.tmp-")
        assert len(list((tmp_path / "spill").iterdir())) == 1  # the dead run's folder is gone
    assert list((tmp_path / "spill").iterdir()) == []


def test_file_format_error_kept_for_a_folder_where_a_file_goes(tmp_path):
    (tmp_path / "d.npy").mkdir()
    with pytest.raises(FileFormatError, match="existing directory"):
        check_output_path("out", tmp_path / "d.npy", kind="scores", overwrite=True)


_HOLD_WRITER = """
import sys, time
import numpy as np
from aria_tda.scores.writers import ScoreWriter
with ScoreWriter(sys.argv[1], shape=(4, 3), dtype=np.float32) as w:
    print("writing", flush=True)
    time.sleep(30)
    w.write_rows(0, np.ones((4, 3)))
"""


def test_two_processes_never_write_one_matrix_at_once(tmp_path):
    import subprocess
    import sys

    from aria_tda.errors import LockedError
    from aria_tda.scores.writers import ScoreWriter

    out = tmp_path / "out.npy"
    holder = subprocess.Popen([sys.executable, "-c", _HOLD_WRITER, str(out)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "writing"
        with pytest.raises(LockedError, match=rf"out\.npy: this score matrix is being written "
                                              rf"by process pid {holder.pid}"), \
                ScoreWriter(out, shape=(2, 2), dtype=np.float64):
            pass
        assert not out.exists()  # the refused writer made nothing
        # another output of the same folder is free to write meanwhile
        with ScoreWriter(tmp_path / "other.npy", shape=(2, 2), dtype=np.float64) as w:
            w.write_rows(0, np.zeros((2, 2)))
    finally:
        holder.kill()
        holder.wait()
    with ScoreWriter(out, shape=(2, 2), dtype=np.float64) as w:  # the dead holder's lock
        w.write_rows(0, np.eye(2))
    assert np.array_equal(np.load(out), np.eye(2))
    assert sorted(p.name for p in tmp_path.iterdir() if "aria-lock" in p.name) == []
