"""The source interface: transposed reading, and the "looks transposed" check."""

from __future__ import annotations

import numpy as np
import pytest

from aria_tda.diagnostics import diagnose
from aria_tda.errors import DataError, ParameterError
from aria_tda.scores import aggregate, as_source, open_scores, save_scores
from aria_tda.scores.source import TransposedSource, check_orientation, transpose_source


def blocks(src, rows):
    return np.concatenate([b.copy() for _, b in src.iter_chunks(rows)])


@pytest.mark.parametrize("kind", ["npy", "npz", "npz_compressed", "zarr", "torch", "memory"])
def test_transpose_reads_the_stored_transpose(rng, tmp_path, kind):
    s = rng.standard_normal((37, 5)).astype(np.float32)  # train x queries
    stored = np.ascontiguousarray(s.T)  # queries x train, as captum/LogIX write it
    if kind == "npy":
        obj = save_scores(stored, tmp_path / "t.npy")
    elif kind == "npz":
        np.savez(tmp_path / "t.npz", scores=stored)
        obj = tmp_path / "t.npz"
    elif kind == "npz_compressed":
        np.savez_compressed(tmp_path / "t.npz", scores=stored)
        obj = tmp_path / "t.npz"
    elif kind == "zarr":
        obj = save_scores(stored, tmp_path / "t.zarr")
    elif kind == "torch":
        torch = pytest.importorskip("torch")
        torch.save(torch.from_numpy(stored), tmp_path / "t.pt")
        obj = tmp_path / "t.pt"
    else:
        obj = stored
    src = as_source(obj, transpose=True)
    assert src.shape == (37, 5) and src.transposed
    for rows in (1, 6, 37):
        np.testing.assert_array_equal(blocks(src, rows), s)
    np.testing.assert_array_equal(src.read_columns([4, 1]), s[:, [4, 1]])
    np.testing.assert_array_equal(transpose_source(src).to_numpy(), stored)


def test_transposed_source_wraps_any_source(rng, tmp_path):
    s = rng.standard_normal((20, 3))
    base = open_scores(save_scores(s.T.copy(), tmp_path / "b.npy"))
    t = TransposedSource(base)
    assert t.path == base.path and t.describe().startswith("transpose of NpySource")
    np.testing.assert_array_equal(t.to_numpy(), s)
    assert transpose_source(t) is base
    with pytest.raises(ParameterError, match="transpose: expected True or False"):
        open_scores(tmp_path / "b.npy", transpose="yes")


def test_diagnose_transpose_equals_diagnose_of_the_transpose(rng, tmp_path):
    s = rng.standard_normal((200, 7)) + np.outer(rng.random(200), np.ones(7))
    path = save_scores(np.ascontiguousarray(s.T), tmp_path / "qt.npy")
    d = diagnose(path, transpose=True, chunk_rows=33, with_u1=True)
    ref = diagnose(s, with_u1=True)
    assert (d.n_train, d.n_queries) == (200, 7)
    for name in ("kappa", "r1", "r2_5", "p", "v1_constancy"):
        assert getattr(d, name) == pytest.approx(getattr(ref, name), rel=1e-10)
    np.testing.assert_allclose(d.u1, ref.u1, atol=1e-10)


def test_check_orientation():
    check_orientation((10, 3), 10, what="the segment map")
    check_orientation((10, 3), 7, what="the segment map")  # wrong, but not transposed
    with pytest.raises(DataError, match=r"looks transposed \(3 × 10\); pass --transpose"):
        check_orientation((3, 10), 10, what="the segment map")


def test_aggregate_says_looks_transposed(rng, tmp_path):
    s = rng.standard_normal((60, 4))
    seg = np.repeat([f"t{i}" for i in range(12)], 5)
    stored = save_scores(np.ascontiguousarray(s.T), tmp_path / "qt.npy")
    with pytest.raises(DataError, match=r"looks transposed \(4 × 60\); pass --transpose"):
        aggregate(stored, segments=seg)
    with pytest.raises(DataError, match="looks transposed"):
        aggregate(s.T, tracks=[str(i) for i in range(60)])
    got = aggregate(stored, segments=seg, transpose=True)
    np.testing.assert_allclose(got.to_numpy(), aggregate(s, segments=seg).to_numpy(), atol=1e-12)
    # a table map with a row column gets the same hint
    import pandas as pd

    pd.DataFrame({"row": np.arange(60), "track_id": seg}).to_csv(tmp_path / "m.csv", index=False)
    with pytest.raises(DataError, match="looks transposed"):
        aggregate(stored, segments=tmp_path / "m.csv")
