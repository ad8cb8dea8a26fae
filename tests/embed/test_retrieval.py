"""The streaming cosine-score kernel of the embedding baselines (aria_tda.embed.retrieval)."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from aria_tda.embed.retrieval import cosine_scores, cosine_scores_reference, default_block_rows
from aria_tda.errors import DataError, ParameterError
from aria_tda.scores.writers import ScoreWriter


class _Blocks:
    """A writer that records the blocks it is handed."""

    def __init__(self, shape):
        self.out = np.full(shape, np.nan, dtype=np.float32)
        self.sizes = []

    def write_rows(self, start, block):
        self.sizes.append(block.shape[0])
        self.out[start:start + block.shape[0]] = block


def test_matches_the_naive_product_and_is_a_cosine(rng):
    a = rng.normal(size=(50, 16)) * rng.uniform(0.1, 10, size=(50, 1))
    b = rng.normal(size=(7, 16))
    s = cosine_scores(a, b, block_rows=8)
    naive = (a / np.linalg.norm(a, axis=1)[:, None]) @ (b / np.linalg.norm(b, axis=1)[:, None]).T
    assert s.dtype == np.float32 and s.shape == (50, 7)
    np.testing.assert_allclose(s, naive, atol=2e-6)
    assert np.all(np.abs(s) <= 1 + 1e-6)
    np.testing.assert_allclose(cosine_scores(b, b).diagonal(), 1.0, atol=1e-6)
    np.testing.assert_allclose(cosine_scores(3.0 * a, b), s, atol=1e-6)  # scale-free


def test_streams_row_blocks_to_the_writer(rng):
    a, b = rng.normal(size=(23, 5)), rng.normal(size=(4, 5))
    sink = _Blocks((23, 4))
    assert cosine_scores(a, b, block_rows=5, out=sink) is None
    assert sink.sizes == [5, 5, 5, 5, 3]
    np.testing.assert_allclose(sink.out, cosine_scores_reference(a, b), atol=2e-6)


def test_never_holds_the_full_matrix(tmp_path, rng):
    n, t, d = 6000, 400, 32  # full float32 matrix 9.6 MB; one block of 100 rows 160 kB
    train = np.lib.format.open_memmap(tmp_path / "a.npy", mode="w+", dtype=np.float32,
                                      shape=(n, d))
    train[:] = rng.normal(size=(n, d)).astype(np.float32)
    train.flush()
    train = np.load(tmp_path / "a.npy", mmap_mode="r")
    q = rng.normal(size=(t, d)).astype(np.float32)
    with ScoreWriter(tmp_path / "s.npy", shape=(n, t), dtype=np.float32) as w:
        tracemalloc.start()
        cosine_scores(train, q, block_rows=100, out=w)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    full = n * t * 4
    assert peak < full / 10, f"peak {peak} bytes vs the full matrix {full}"
    got = np.load(tmp_path / "s.npy", mmap_mode="r")
    np.testing.assert_allclose(got[::97], cosine_scores_reference(train[::97], q), atol=2e-6)


def test_zero_norm_and_bad_shapes_are_named(rng):
    a, b = rng.normal(size=(6, 4)), rng.normal(size=(3, 4))
    a[4] = 0.0
    with pytest.raises(DataError, match=r"train: the embedding of track 'x4' has norm zero"):
        cosine_scores(a, b, train_ids=[f"x{i}" for i in range(6)], block_rows=2)
    with pytest.raises(DataError, match=r"track 'x4'"):
        cosine_scores_reference(a, b, train_ids=[f"x{i}" for i in range(6)])
    a[4] = np.nan
    with pytest.raises(DataError, match=r"row 4 has NaN"):
        cosine_scores(a, b)
    b[1] = 0.0
    with pytest.raises(DataError, match=r"queries: the embedding of track 'q1'"):
        cosine_scores(rng.normal(size=(2, 4)), b, query_ids=["q0", "q1", "q2"])
    with pytest.raises(DataError, match="dimension 4, got dimension 5"):
        cosine_scores(rng.normal(size=(2, 4)), rng.normal(size=(2, 5)))
    with pytest.raises(DataError, match="non-empty 2-D"):
        cosine_scores(np.zeros((0, 4)), b)
    with pytest.raises(ParameterError, match="block_rows"):
        cosine_scores(rng.normal(size=(2, 4)), rng.normal(size=(2, 4)), block_rows=0)


def test_default_block_rows():
    assert default_block_rows(7148) * 7148 * 4 <= 64 * 2**20
    assert default_block_rows(10**9) == 1
