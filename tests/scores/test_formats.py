"""Each tool's native score files, and incomplete files that must be errors, never zeros."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import numpy as np
import pytest

from aria_tda.diagnostics import diagnose
from aria_tda.errors import DataError, FileFormatError
from aria_tda.scores import as_source, open_scores, save_scores
from aria_tda.scores.formats import FORMATS, sniff_format
from aria_tda.scores.formats.npy import NpySource

SAFETENSORS_CODES = {"<f4": "F32", "<f2": "F16", "<f8": "F64", "<u2": "BF16"}


def write_safetensors(path: Path, tensors: dict[str, np.ndarray], *, bf16: tuple = ()) -> Path:
    """A safetensors file per the format's spec (8-byte length, JSON header, raw data)."""
    header: dict = {"__metadata__": {"format": "pt"}}
    blobs, offset = [], 0
    for name, arr in tensors.items():
        arr = np.ascontiguousarray(arr)
        code = "BF16" if name in bf16 else SAFETENSORS_CODES[arr.dtype.str]
        raw = arr.tobytes()
        header[name] = {
            "dtype": code,
            "shape": list(arr.shape),
            "data_offsets": [offset, offset + len(raw)],
        }
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    path.write_bytes(len(text).to_bytes(8, "little") + text + b"".join(blobs))
    return path


# -- TRAK ------------------------------------------------------------------------------
def test_trak_mmap_is_an_npy_file(rng, tmp_path):
    """TRAK's finalize_scores writes scores/<exp>.mmap with open_memmap: float16, train x test."""
    (tmp_path / "scores").mkdir()
    s = rng.standard_normal((120, 9)).astype(np.float16)
    mm = np.lib.format.open_memmap(
        tmp_path / "scores" / "quickstart.mmap", mode="w+", dtype=np.float16, shape=s.shape
    )
    mm[:] = s
    mm.flush()
    del mm
    path = tmp_path / "scores" / "quickstart.mmap"
    assert sniff_format(path) == "npy"
    src = open_scores(path)
    assert isinstance(src, NpySource) and src.shape == (120, 9)
    assert src.block_dtype == np.float32  # float16 is computed in float32
    np.testing.assert_array_equal(src.to_numpy(), s.astype(np.float32))
    d = diagnose(path)
    assert d.r1 == pytest.approx(diagnose(s.astype(np.float32)).r1, rel=1e-12)


# -- Kronfluence -----------------------------------------------------------------------
def test_kronfluence_all_modules_is_queries_by_train(rng, tmp_path):
    s = rng.standard_normal((80, 6)).astype(np.float32)  # ARIA: train x queries
    path = write_safetensors(tmp_path / "pairwise_scores.safetensors", {"all_modules": s.T})
    src = open_scores(path)
    assert src.shape == (80, 6) and src.transposed
    np.testing.assert_array_equal(src.to_numpy(), s)
    for rows in (1, 7, 80):
        got = np.concatenate([b.copy() for _, b in src.iter_chunks(rows)])
        np.testing.assert_array_equal(got, s)
    # transpose=True reads the tensor as stored
    np.testing.assert_array_equal(open_scores(path, transpose=True).to_numpy(), s.T)
    d = diagnose(path)
    ref = diagnose(s)
    assert (d.kappa, d.r1, d.p) == pytest.approx((ref.kappa, ref.r1, ref.p), rel=1e-12)


def test_kronfluence_per_module_scores_are_summed(rng, tmp_path):
    parts = {f"model.layer{i}.mlp": rng.standard_normal((5, 40)).astype(np.float32) for i in (1, 2)}
    path = write_safetensors(tmp_path / "pairwise_scores.safetensors", parts)
    total = sum(p.astype(np.float64) for p in parts.values()).T
    np.testing.assert_allclose(open_scores(path).to_numpy(), total, rtol=1e-6)
    np.testing.assert_allclose(open_scores(path, key="all_modules").to_numpy(), total, rtol=1e-6)
    one = open_scores(path, key="model.layer2.mlp")
    np.testing.assert_array_equal(one.to_numpy(), parts["model.layer2.mlp"].T)
    with pytest.raises(FileFormatError, match="no tensor named 'nope'"):
        open_scores(path, key="nope")


def test_safetensors_dtypes_and_bad_files(rng, tmp_path):
    s = rng.standard_normal((4, 30)).astype(np.float32)
    bits = (s.view(np.uint32) >> 16).astype("<u2")  # bfloat16 bit patterns
    path = write_safetensors(
        tmp_path / "x.safetensors",
        {"h": s.astype(np.float16), "d": s.astype(np.float64), "b": bits},
        bf16=("b",),
    )
    np.testing.assert_array_equal(
        open_scores(path, key="h").to_numpy(), s.astype(np.float16).astype(np.float32).T
    )
    assert open_scores(path, key="d").block_dtype == np.float64
    want = (bits.astype(np.uint32) << 16).view(np.float32).T
    np.testing.assert_array_equal(open_scores(path, key="b").to_numpy(), want)
    # truncated data, junk header, 3-D per-token scores
    data = path.read_bytes()
    (tmp_path / "cut.safetensors").write_bytes(data[:-100])
    with pytest.raises(FileFormatError, match="truncated"):
        open_scores(tmp_path / "cut.safetensors", key="h")
    (tmp_path / "junk.safetensors").write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00not json!!")
    with pytest.raises(FileFormatError, match="not a readable safetensors file"):
        open_scores(tmp_path / "junk.safetensors")
    tok = write_safetensors(
        tmp_path / "tok.safetensors", {"all_modules": np.zeros((2, 3, 4), np.float32)}
    )
    with pytest.raises(DataError, match="2-D matrix"):
        open_scores(tok)


@pytest.mark.skipif(
    pytest.importorskip("importlib").util.find_spec("safetensors") is None,
    reason="the safetensors package is not installed (ARIA does not need it)",
)
def test_safetensors_package_files(rng, tmp_path):  # pragma: no cover - optional
    from safetensors.numpy import save_file

    s = rng.standard_normal((7, 50)).astype(np.float32)
    save_file({"all_modules": s}, str(tmp_path / "p.safetensors"))
    np.testing.assert_array_equal(open_scores(tmp_path / "p.safetensors").to_numpy(), s.T)


# -- dattri / captum / LogIX (torch) ---------------------------------------------------
def test_torch_test_by_train_needs_transpose(rng, tmp_path):
    torch = pytest.importorskip("torch")
    s = rng.standard_normal((50, 4)).astype(np.float32)
    torch.save(torch.from_numpy(s.T.copy()), tmp_path / "tracin.pt")  # captum: test x train
    src = open_scores(tmp_path / "tracin.pt", transpose=True)
    assert src.shape == (50, 4)
    np.testing.assert_array_equal(src.to_numpy(), s)


def test_sparse_inputs_are_refused(tmp_path):
    torch = pytest.importorskip("torch")
    sparse = torch.eye(6, 4).to_sparse()
    torch.save(sparse, tmp_path / "sp.pt")
    with pytest.raises(DataError, match="expected a dense tensor"):
        open_scores(tmp_path / "sp.pt")
    with pytest.raises(DataError, match="sparse"):
        as_source(sparse)
    from scipy import sparse as sp

    with pytest.raises(DataError, match=r"dense matrix \(call \.toarray\(\) first\)"):
        as_source(sp.csr_matrix(np.eye(3)))


# -- incomplete stores -----------------------------------------------------------------
def _zarr_store(rng, tmp_path):
    zarr = pytest.importorskip("zarr")
    s = rng.standard_normal((45, 6)).astype(np.float32) + 3.0
    arr = zarr.create_array(
        str(tmp_path / "a.zarr"), shape=s.shape, chunks=(8, 6), dtype="float32", compressors=None
    )
    arr[:] = s
    return s, tmp_path / "a.zarr"


def test_zarr_missing_chunk_is_an_error_not_zeros(rng, tmp_path):
    _, path = _zarr_store(rng, tmp_path)
    (path / "c" / "2" / "0").unlink()
    with pytest.raises(FileFormatError, match=r"1 of 6 chunks are missing.*'c/2/0', rows from 16"):
        open_scores(path)
    with pytest.raises(FileFormatError, match="incomplete zarr store"):
        diagnose(path)


def test_zarr_truncated_chunk_is_an_error(rng, tmp_path):
    _, path = _zarr_store(rng, tmp_path)
    chunk = path / "c" / "3" / "0"
    chunk.write_bytes(chunk.read_bytes()[:50])
    src = open_scores(path)
    with pytest.raises(FileFormatError, match="cannot read rows"):
        src.to_numpy()


def test_aria_zarr_stores_keep_all_zero_chunks(tmp_path):
    pytest.importorskip("zarr")
    s = np.zeros((40, 3))
    s[0] = 1.0
    out = save_scores(s, tmp_path / "z.zarr", chunk_rows=8)
    from aria_tda.scores.writers import ZARR_CHUNK_BYTES

    assert ZARR_CHUNK_BYTES  # one chunk here; a multi-chunk store is checked below
    np.testing.assert_array_equal(open_scores(out).to_numpy(), s)
    import zarr

    g = zarr.open_group(str(tmp_path / "w.zarr"), mode="w")
    a = g.create_array(
        "scores",
        shape=(40, 3),
        chunks=(8, 3),
        dtype="float64",
        fill_value=0.0,
        config={"write_empty_chunks": True},
    )
    a[:] = s
    assert a.nchunks_initialized == a.nchunks
    np.testing.assert_array_equal(open_scores(tmp_path / "w.zarr").to_numpy(), s)


def test_corrupt_compressed_npz_member_is_a_file_format_error(rng, tmp_path):
    s = rng.standard_normal((400, 50))
    np.savez_compressed(tmp_path / "c.npz", scores=s)
    with zipfile.ZipFile(tmp_path / "c.npz") as zf:
        info = zf.getinfo("scores.npy")
    data = bytearray((tmp_path / "c.npz").read_bytes())
    mid = info.header_offset + 30 + len(info.filename) + info.compress_size // 2
    data[mid : mid + 64] = bytes(64)
    (tmp_path / "c.npz").write_bytes(bytes(data))
    with pytest.raises(FileFormatError, match=r"c\.npz\['scores'\]: truncated or corrupt member"):
        open_scores(tmp_path / "c.npz").to_numpy()


def test_compressed_npz_member_shorter_than_its_header(rng, tmp_path):
    np.save(tmp_path / "t.npy", rng.standard_normal((100, 10)))
    data = (tmp_path / "t.npy").read_bytes()
    with zipfile.ZipFile(tmp_path / "cut.npz", "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("scores.npy", data[:600])
    with pytest.raises(FileFormatError, match=r"truncated member 'scores\.npy'.*shape \(100, 10\)"):
        open_scores(tmp_path / "cut.npz")


def test_format_table_lists_every_suffix():
    suffixes = {s for f in FORMATS.values() for s in f.suffixes}
    assert suffixes == {".npy", ".mmap", ".npz", ".pt", ".pth", ".safetensors", ".bin", ".zarr"}
    assert [f.name for f in FORMATS.values() if f.queries_first] == ["safetensors"]
