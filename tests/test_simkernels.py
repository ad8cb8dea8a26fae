"""Numba kernels of aria_tda._simkernels not covered through aria_tda.similarity."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from aria_tda import _simkernels


def test_kernel_topk_insert_matches_sort(rng):
    ke, n_top = 30, 7
    emat = rng.standard_normal((ke, ke))
    oi, oj, ov = np.empty(n_top, np.int64), np.empty(n_top, np.int64), np.empty(n_top)
    _simkernels.topk_insert(emat, ke, n_top, oi, oj, ov)
    il = np.tril_indices(ke, -1)
    np.testing.assert_array_equal(ov, np.sort(emat[il])[::-1][:n_top])
    np.testing.assert_array_equal(emat[oj, oi], ov)
    assert np.all(oi < oj)


# -- topk_stream_update: the streamed per-column top-K heaps ---------------------------------
def _worse(va, ia, vb, ib):
    return va < vb or (va == vb and ia > ib)


def _stream_update_column_by_column(block, row0, pool_mask, hv, hi, count, nan_count):
    """Plain-Python column-by-column sweep with swap-based heap moves (the kernel's contract)."""
    kk = hv.shape[1]
    for t in range(block.shape[1]):
        for r in range(block.shape[0]):
            g = row0 + r
            if not pool_mask[g]:
                continue
            v = float(block[r, t])
            if v != v:
                nan_count[t] += 1
                continue
            if count[t] < kk:
                pos = int(count[t])
                hv[t, pos], hi[t, pos] = v, g
                while pos > 0:
                    parent = (pos - 1) // 2
                    if not _worse(hv[t, pos], hi[t, pos], hv[t, parent], hi[t, parent]):
                        break
                    hv[t, [pos, parent]] = hv[t, [parent, pos]]
                    hi[t, [pos, parent]] = hi[t, [parent, pos]]
                    pos = parent
                count[t] += 1
            elif v > hv[t, 0]:
                hv[t, 0], hi[t, 0] = v, g
                pos = 0
                while 2 * pos + 1 < kk:
                    child = 2 * pos + 1
                    if child + 1 < kk and _worse(hv[t, child + 1], hi[t, child + 1],
                                                 hv[t, child], hi[t, child]):
                        child += 1
                    if not _worse(hv[t, child], hi[t, child], hv[t, pos], hi[t, pos]):
                        break
                    hv[t, [pos, child]] = hv[t, [child, pos]]
                    hi[t, [pos, child]] = hi[t, [child, pos]]
                    pos = child


def _stream(update, x, k, mask, bounds):
    t = x.shape[1]
    state = (np.full((t, k), -np.inf), np.full((t, k), -1, np.int64),
             np.zeros(t, np.int64), np.zeros(t, np.int64))
    for s, e in itertools.pairwise(bounds):
        update(np.ascontiguousarray(x[s:e]), int(s), mask, *state)
    return state


def _assert_bitwise(a, b):
    for u, w in zip(a, b, strict=True):
        assert u.dtype == w.dtype
        np.testing.assert_array_equal(u.view(np.int64), w.view(np.int64))


def _expected_top(x, k, mask):
    """Per column: (scores, rows) of the k best pool rows (ties: lower row), NaN counts."""
    rows = np.flatnonzero(mask[: x.shape[0]])
    out = []
    for t in range(x.shape[1]):
        col = x[rows, t].astype(np.float64)
        keep = ~np.isnan(col)
        v, g = col[keep], rows[keep]
        order = np.lexsort((g, -v))[:k]
        out.append((v[order], g[order]))
    nans = np.isnan(x[rows]).sum(axis=0)
    return out, nans


def _sorted_heaps(hv, hi, count):
    out = []
    for t in range(hv.shape[0]):
        v, g = hv[t, : count[t]], hi[t, : count[t]]
        order = np.lexsort((g, -v))
        out.append((v[order], g[order]))
    return out


def _assert_heaps(hv, hi, count):
    """Every filled prefix is a min-heap under the tie rule; unfilled slots untouched."""
    for t in range(hv.shape[0]):
        c = int(count[t])
        for pos in range(1, c):
            parent = (pos - 1) // 2
            assert not _worse(hv[t, pos], hi[t, pos], hv[t, parent], hi[t, parent])
        assert np.all(hi[t, c:] == -1) and np.all(hv[t, c:] == -np.inf)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_kernel_topk_stream_update_is_the_column_by_column_sweep(rng, dtype):
    # enough rows per column that held candidates overflow the kernel's per-column buffer,
    # and a column count that is not a multiple of the tile width
    m, t = 700, 2 * _simkernels._TOPK_TILE + 3
    x = np.cumsum(rng.standard_normal((m, t)), axis=0)  # drifting: many heap moves
    x[:, :5] = rng.integers(0, 3, (m, 5))  # heavy ties
    x[:, 5:8] = np.where(rng.random((m, 3)) < 0.5, -0.0, 0.0)  # signed zeros tie
    x[rng.random((m, t)) < 0.03] = np.nan
    x[rng.random((m, t)) < 0.02] = -np.inf
    x = x.astype(dtype)
    mask = rng.random(m) < 0.8
    assert m > 3 * _simkernels._TOPK_BUCKET
    for k in (1, 7, 64, m):
        bounds = np.unique(np.r_[0, rng.integers(0, m, 6), m])
        fast = _stream(_simkernels.topk_stream_update, x, k, mask, bounds)
        _assert_bitwise(fast, _stream(_stream_update_column_by_column, x, k, mask, bounds))
        # and block boundaries do not matter
        _assert_bitwise(fast, _stream(_simkernels.topk_stream_update, x, k, mask, [0, m]))


def test_kernel_topk_stream_update_heavy_ties_k_all_rows(rng):
    m, t = 300, 21
    x = rng.integers(0, 4, (m, t)).astype(np.float32)  # four distinct scores
    x[:, 0] = 1.0  # one column entirely tied
    x[rng.random((m, t)) < 0.05] = np.nan
    mask = np.ones(m, dtype=bool)
    mask[rng.choice(m, 40, replace=False)] = False
    want, nans = _expected_top(x, m, mask)
    for k in (m, int(mask.sum()), 5):
        hv, hi, count, nan_count = _stream(_simkernels.topk_stream_update, x, k, mask,
                                           [0, 1, 90, 91, 250, m])
        _assert_heaps(hv, hi, count)
        np.testing.assert_array_equal(nan_count, nans)
        got = _sorted_heaps(hv, hi, count)
        for (wv, wg), (gv, gg) in zip(want, got, strict=True):
            np.testing.assert_array_equal(gv, wv[:k])
            np.testing.assert_array_equal(gg, wg[:k])  # ties: the lower rows are kept
    # the all-tied column keeps exactly its first 5 pool rows with a score
    assert sorted(hi[0, :5]) == list(np.flatnonzero(mask & ~np.isnan(x[:, 0]))[:5])


def test_kernel_topk_stream_update_continues_a_heap_built_elsewhere(rng):
    # the concentration accumulator hands the kernel heaps it built itself (sorted, worst
    # first): the kernel must continue them exactly like its own
    m, t, k = 400, 9, 30
    x = rng.standard_normal((m, t))
    mask = np.ones(m, dtype=bool)
    hv, hi, count, nan_count = _stream(_simkernels.topk_stream_update, x, k, mask, [0, 150])
    order = np.lexsort((-hi, hv), axis=1)  # worst first: a valid heap in another layout
    hv2, hi2 = np.take_along_axis(hv, order, axis=1), np.take_along_axis(hi, order, axis=1)
    ref = (hv2.copy(), hi2.copy(), count.copy(), nan_count.copy())
    _simkernels.topk_stream_update(x[150:], 150, mask, hv2, hi2, count, nan_count)
    _stream_update_column_by_column(x[150:], 150, mask, *ref)
    _assert_bitwise((hv2, hi2, count, nan_count), ref)
    want, _ = _expected_top(x, k, mask)
    for (wv, wg), (gv, gg) in zip(want, _sorted_heaps(hv2, hi2, count), strict=True):
        np.testing.assert_array_equal(gv, wv)
        np.testing.assert_array_equal(gg, wg)
