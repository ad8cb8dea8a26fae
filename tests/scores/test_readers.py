"""Readers and writers of score matrices: every format, streaming, manifests, bad files."""

from __future__ import annotations

import threading
import zipfile

import numpy as np
import pytest

from aria_tda.errors import DataError, FileFormatError, ParameterError
from aria_tda.manifest import read_manifest
from aria_tda.scores import (
    ArraySource,
    ScoreSource,
    ScoreWriter,
    as_source,
    open_scores,
    save_scores,
)
from aria_tda.scores.readers import NpySource, default_chunk_rows


def chunks_concat(src: ScoreSource, chunk_rows, **kw) -> np.ndarray:
    parts = []
    starts = []
    for start, block in src.iter_chunks(chunk_rows, **kw):
        starts.append(start)
        parts.append(block.copy())
    assert starts == sorted(starts)
    return np.concatenate(parts)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.int32])
def test_npy_streams_exactly(rng, tmp_path, dtype):
    s = (rng.standard_normal((103, 7)) * 10).astype(dtype)
    np.save(tmp_path / "s.npy", s)
    src = open_scores(tmp_path / "s.npy")
    assert isinstance(src, NpySource)
    assert src.shape == (103, 7)
    want = (
        np.float32 if np.dtype(dtype).itemsize <= 4 and np.dtype(dtype).kind == "f" else np.float64
    )
    assert src.block_dtype == want
    for rows in (1, 10, 103, 1000):
        for prefetch in (True, False):
            for reuse in (True, False):
                got = chunks_concat(src, rows, prefetch=prefetch, reuse_buffers=reuse)
                np.testing.assert_array_equal(got, s.astype(want))
    np.testing.assert_array_equal(src.read_rows(5, 9), s[5:9].astype(want))
    np.testing.assert_array_equal(src.read_columns([6, 0]), s[:, [6, 0]].astype(want))
    np.testing.assert_array_equal(src.to_numpy(), s.astype(want))
    part = np.concatenate([b for _, b in src.iter_chunks(4, start=10, stop=21)])
    np.testing.assert_array_equal(part, s[10:21].astype(want))
    src.close()


def test_fortran_order_and_big_endian_npy(rng, tmp_path):
    s = rng.standard_normal((50, 6))
    np.save(tmp_path / "f.npy", np.asfortranarray(s))
    np.save(tmp_path / "b.npy", s.astype(">f8"))
    for name in ("f.npy", "b.npy"):
        np.testing.assert_array_equal(chunks_concat(open_scores(tmp_path / name), 7), s)


def test_npz_stored_and_compressed(rng, tmp_path):
    s = rng.standard_normal((40, 5)).astype(np.float32)
    np.savez(tmp_path / "one.npz", s)
    np.savez(tmp_path / "two.npz", scores=s, other=s[:3])
    np.savez_compressed(
        tmp_path / "comp.npz", scores=s, row_ids=np.array([f"seg{i}" for i in range(40)])
    )
    np.testing.assert_array_equal(chunks_concat(open_scores(tmp_path / "one.npz"), 6), s)
    two = open_scores(tmp_path / "two.npz", key="scores")
    np.testing.assert_array_equal(chunks_concat(two, 6), s)
    comp = open_scores(tmp_path / "comp.npz")  # row_ids is not a candidate for the matrix
    assert comp.row_ids[3] == "seg3"
    np.testing.assert_array_equal(chunks_concat(comp, 6), s)
    np.testing.assert_array_equal(comp.read_rows(30, 33), s[30:33])
    np.testing.assert_array_equal(comp.read_rows(2, 4), s[2:4])  # backwards seek
    with pytest.raises(FileFormatError, match=r"holds 2 arrays .*pass key="):
        open_scores(tmp_path / "two.npz")
    with pytest.raises(
        FileFormatError, match=r"no array named 'nope'; it holds \['other', 'scores'\]"
    ):
        open_scores(tmp_path / "two.npz", key="nope")


def test_torch_files(rng, tmp_path):
    torch = pytest.importorskip("torch")
    s = rng.standard_normal((30, 4)).astype(np.float32)
    t = torch.from_numpy(s)
    torch.save(t, tmp_path / "t.pt")
    torch.save({"score": t}, tmp_path / "d.pth")
    torch.save({"a": t, "b": t * 2, "row_ids": [f"r{i}" for i in range(30)]}, tmp_path / "two.pt")
    torch.save(t.to(torch.float64), tmp_path / "legacy.pt", _use_new_zipfile_serialization=False)
    torch.save(t.to(torch.bfloat16), tmp_path / "bf.pt")
    for name in ("t.pt", "d.pth"):
        np.testing.assert_array_equal(chunks_concat(open_scores(tmp_path / name), 7), s)
    b = open_scores(tmp_path / "two.pt", key="b")
    np.testing.assert_array_equal(b.to_numpy(), s * 2)
    assert b.row_ids[29] == "r29"
    np.testing.assert_array_equal(
        open_scores(tmp_path / "legacy.pt").to_numpy(), s.astype(np.float64)
    )
    bf = open_scores(tmp_path / "bf.pt")
    assert bf.block_dtype == np.float32
    np.testing.assert_allclose(bf.to_numpy(), s, rtol=1e-2)
    with pytest.raises(FileFormatError, match="holds 2 2-D tensors"):
        open_scores(tmp_path / "two.pt")
    with pytest.raises(FileFormatError, match="no tensor named 'c'"):
        open_scores(tmp_path / "two.pt", key="c")
    (tmp_path / "bad.pt").write_bytes(b"not a torch file at all")
    with pytest.raises(FileFormatError, match="not a readable torch file"):
        open_scores(tmp_path / "bad.pt")


def test_zarr_array_and_group(rng, tmp_path):
    zarr = pytest.importorskip("zarr")
    s = rng.standard_normal((45, 6)).astype(np.float32)
    arr = zarr.create_array(
        str(tmp_path / "a.zarr"), shape=s.shape, chunks=(8, 6), dtype="float32", compressors=None
    )
    arr[:] = s
    src = open_scores(tmp_path / "a.zarr")
    assert src.chunk_rows() % 8 == 0  # default blocks are aligned to the stored chunks
    np.testing.assert_array_equal(chunks_concat(src, 10), s)
    np.testing.assert_array_equal(src.read_columns([1, 4]), s[:, [1, 4]])
    g = zarr.open_group(str(tmp_path / "g.zarr"), mode="w")
    g.create_array("x", shape=s.shape, chunks=(8, 6), dtype="float64")[:] = s
    g.create_array("y", shape=s.shape, chunks=(8, 6), dtype="float64")[:] = s
    with pytest.raises(FileFormatError, match="pass key="):
        open_scores(tmp_path / "g.zarr")
    np.testing.assert_array_equal(open_scores(tmp_path / "g.zarr", key="y").to_numpy(), s)
    np.testing.assert_array_equal(as_source(arr).to_numpy(), s)


@pytest.mark.parametrize("suffix", [".npy", ".zarr"])
def test_save_scores_roundtrip_with_manifest(rng, tmp_path, suffix):
    s = rng.standard_normal((70, 5)).astype(np.float32)
    ids = [f"track{i // 3}:{i % 3}" for i in range(70)]
    out = save_scores(
        s,
        tmp_path / f"s{suffix}",
        method="trak",
        stage="coarse",
        parameters={"proj_dim": 512},
        seed=3,
        row_ids=ids,
        chunk_rows=16,
    )
    src = open_scores(out)
    np.testing.assert_array_equal(src.to_numpy(), s)
    assert src.row_ids.tolist() == ids
    m = read_manifest(out)
    assert m["kind"] == "scores" and m["shape"] == [70, 5] and m["dtype"] == "float32"
    assert m["method"] == "trak" and m["stage"] == "coarse" and m["seed"] == 3
    assert m["parameters"] == {"proj_dim": 512}
    assert "training segments" in m["orientation"]
    assert src.manifest == m
    # converting a stored matrix keeps its manifest fields unless overridden
    again = save_scores(src, tmp_path / f"copy{suffix}", stage="fine")
    m2 = read_manifest(again)
    assert m2["method"] == "trak" and m2["stage"] == "fine"
    assert open_scores(again).row_ids.tolist() == ids


def test_zarr_output_is_uncompressed(rng, tmp_path):
    zarr = pytest.importorskip("zarr")
    save_scores(rng.standard_normal((20, 3)), tmp_path / "s.zarr")
    arr = zarr.open_group(str(tmp_path / "s.zarr"), mode="r")["scores"]
    assert tuple(arr.compressors) == ()


class Exploding(ArraySource):
    """A source whose third block fails to read."""

    def _read_into(self, start, stop, out):
        if start >= 20:
            raise OSError("disk on fire")
        return super()._read_into(start, stop, out)


@pytest.mark.parametrize("suffix", [".npy", ".zarr"])
def test_failed_write_leaves_nothing(rng, tmp_path, suffix):
    target = tmp_path / f"s{suffix}"
    src = Exploding(rng.standard_normal((50, 4)).astype(np.float32))
    src.zero_copy = False
    with pytest.raises(OSError, match="disk on fire"):
        save_scores(src, target, chunk_rows=10)
    assert list(tmp_path.iterdir()) == []
    # an existing matrix is left untouched
    save_scores(np.ones((5, 2)), target)
    with pytest.raises(OSError):
        save_scores(src, target, chunk_rows=10)
    np.testing.assert_array_equal(open_scores(target).to_numpy(), np.ones((5, 2)))


def test_prefetch_errors_propagate_and_threads_end(rng):
    src = Exploding(rng.standard_normal((50, 4)).astype(np.float32))
    src.zero_copy = False
    src.io_bound = True
    def prefetchers():
        return [t for t in threading.enumerate() if t.name == "aria-prefetch"]

    assert prefetchers() == []
    with pytest.raises(OSError, match="disk on fire"):
        for _ in src.iter_chunks(10, prefetch=True):
            pass
    # breaking out early stops the reader thread too
    ok = ArraySource(rng.standard_normal((50, 4)).astype(np.float64)[:, ::2])  # not zero-copy
    ok.io_bound = True
    for _start, _block in ok.iter_chunks(5):
        break
    assert prefetchers() == []  # (a progress bar's monitor thread may start; that is not ours)


def test_a_reader_thread_that_dies_mid_handover_is_an_error_not_a_hang(rng, monkeypatch):
    """If the reader cannot even hand over its error (memory gone), the consumer says so."""
    import queue as queue_module

    from aria_tda.scores import source as source_module

    class NoRoomForErrors(queue_module.Queue):
        def put(self, item, block=True, timeout=None):
            if isinstance(item, BaseException):
                raise MemoryError("no room to hand the error over")
            super().put(item, block, timeout)

    monkeypatch.setattr(source_module.queue, "Queue", NoRoomForErrors)
    src = Exploding(rng.standard_normal((50, 4)).astype(np.float32))
    src.zero_copy = False
    src.io_bound = True
    with pytest.raises(RuntimeError, match=r"reader thread .* ended without handing over"):
        for _ in src.iter_chunks(10, prefetch=True):
            pass


def test_writer_columns_and_rows(rng, tmp_path):
    s = rng.standard_normal((30, 8))
    for suffix in (".npy", ".zarr"):
        with ScoreWriter(
            tmp_path / f"w{suffix}", shape=(30, 8), dtype=np.float64, kind="track_scores"
        ) as w:
            w.write_rows(0, s[:10])
            w.array[:, 4:8] = s[:, 4:8]
            w.array[10:, :4] = s[10:, :4]
        got = open_scores(tmp_path / f"w{suffix}")
        np.testing.assert_array_equal(got.to_numpy(), s)
        assert got.manifest["kind"] == "track_scores"
    assert not list(tmp_path.glob(".*"))  # no temporaries or staging files left


def test_bad_paths_and_files(tmp_path, rng):
    with pytest.raises(FileFormatError, match="no such file"):
        open_scores(tmp_path / "missing.npy")
    (tmp_path / "junk.npy").write_bytes(b"hello world, not numpy")
    with pytest.raises(FileFormatError, match=r"not a readable \.npy"):
        open_scores(tmp_path / "junk.npy")
    np.save(tmp_path / "t.npy", rng.standard_normal((100, 10)))
    data = (tmp_path / "t.npy").read_bytes()
    (tmp_path / "t.npy").write_bytes(data[: len(data) - 100])
    with pytest.raises(FileFormatError, match=r"truncated: the header promises shape \(100, 10\)"):
        open_scores(tmp_path / "t.npy")
    (tmp_path / "x.csv").write_text("a,b\n")
    with pytest.raises(FileFormatError, match=r"unsupported score-matrix format '\.csv'"):
        open_scores(tmp_path / "x.csv")
    (tmp_path / "dir").mkdir()
    with pytest.raises(FileFormatError, match="not a zarr store"):
        open_scores(tmp_path / "dir")
    (tmp_path / "bad.npz").write_bytes(b"PK\x03\x04garbage")
    with pytest.raises(FileFormatError, match=r"not a readable \.npz"):
        open_scores(tmp_path / "bad.npz")
    with zipfile.ZipFile(tmp_path / "cut.npz", "w") as zf:
        zf.writestr("scores.npy", data[:200])
    with pytest.raises(FileFormatError, match="truncated"):
        open_scores(tmp_path / "cut.npz")
    np.save(tmp_path / "obj.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(FileFormatError, match="Python objects"):
        open_scores(tmp_path / "obj.npy")
    np.save(tmp_path / "three.npy", np.zeros((2, 2, 2)))
    with pytest.raises(DataError, match=r"2-D matrix .* got shape \(2, 2, 2\)"):
        open_scores(tmp_path / "three.npy")
    np.save(tmp_path / "empty.npy", np.zeros((0, 3)))
    with pytest.raises(DataError, match="non-empty"):
        open_scores(tmp_path / "empty.npy")
    with pytest.raises(FileFormatError, match="drop key"):
        open_scores(tmp_path / "three.npy", key="x")


def test_manifest_shape_mismatch_is_caught(rng, tmp_path):
    save_scores(rng.standard_normal((10, 3)), tmp_path / "s.npy")
    np.save(tmp_path / "s.npy", rng.standard_normal((11, 3)))  # replaced behind ARIA's back
    with pytest.raises(FileFormatError, match="manifest says shape"):
        open_scores(tmp_path / "s.npy")


def test_as_source_and_parameters(rng, tmp_path):
    s = rng.standard_normal((10, 3))
    src = as_source(s, row_ids=[str(i) for i in range(10)])
    assert as_source(src) is src
    assert src.zero_copy
    assert isinstance(as_source([[1.0, 2.0], [3.0, 4.0]]), ArraySource)
    with pytest.raises(ParameterError, match="scores: expected an array"):
        as_source(object())
    with pytest.raises(DataError, match="row_ids: expected 10 ids"):
        as_source(s, row_ids=["a"])
    with pytest.raises(ParameterError, match="chunk_rows"):
        next(src.iter_chunks(-1))
    with pytest.raises(ParameterError, match=r"out: expected a path ending in \.npy or \.zarr"):
        save_scores(s, tmp_path / "s.h5")
    path = save_scores(s, tmp_path / "s.npy")
    with pytest.raises(ParameterError, match="refusing to overwrite an input"):
        save_scores(open_scores(path), path)
    assert default_chunk_rows((10**7, 2000), np.float32) == 64 * 2**20 // 8000
    assert default_chunk_rows((100, 7000), np.float32) == 100


def test_blocks_are_independent_unless_buffers_are_reused(rng, tmp_path):
    s = rng.standard_normal((100, 3)).astype(np.float32)
    src = open_scores(save_scores(s, tmp_path / "s.npy"))
    kept = [b for _, b in src.iter_chunks(10)]  # keeping blocks is safe by default
    np.testing.assert_array_equal(np.concatenate(kept), s)
    for _, block in src.iter_chunks(10, reuse_buffers=True):
        assert not block.flags.writeable
    for _, block in src.iter_chunks(10, reuse_buffers=True, prefetch=False):
        assert not block.flags.writeable
