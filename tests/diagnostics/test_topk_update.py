"""The NumPy top-K update of the diagnostics pass: the column-by-column sweep, whatever the
blocks, slabs and merge groups (ties to the lower row, NaN counted, -inf kept)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import aria_tda.diagnostics.topk_update as tu
from aria_tda.diagnostics.concentration import TopKAccumulator
from aria_tda.diagnostics.topk_update import topk_update, work_bytes


def _sweep(x: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The reference: per column, the k best (score desc, row asc) of the non-NaN rows."""
    m, t = x.shape
    values = np.full((t, k), -np.inf)
    rows = np.full((t, k), -1, dtype=np.int64)
    count = np.zeros(t, dtype=np.int64)
    nan = np.zeros(t, dtype=np.int64)
    for j in range(t):
        col = [(float(x[i, j]), i) for i in range(m) if not np.isnan(x[i, j])]
        nan[j] = m - len(col)
        best = sorted(col, key=lambda vr: (-vr[0], vr[1]))[:k]
        count[j] = len(best)
        for slot, (v, i) in enumerate(best):
            values[j, slot], rows[j, slot] = v, i
    return values, rows, count, nan


def _streamed(x: np.ndarray, k: int, bounds: list[int]) -> tuple[np.ndarray, ...]:
    t = x.shape[1]
    state = (np.full((t, k), -np.inf), np.full((t, k), -1, dtype=np.int64),
             np.zeros(t, dtype=np.int64), np.zeros(t, dtype=np.int64))
    for a, b in itertools.pairwise(bounds):
        topk_update(x[a:b], a, *state)
    return state


def _matrix(rng: np.random.Generator, kind: str, m: int, t: int) -> np.ndarray:
    if kind == "normal":
        return rng.standard_normal((m, t))
    if kind == "ties":
        return rng.integers(0, 3, (m, t)).astype(np.float64)
    if kind == "increasing":  # every row beats the thresholds: every slab is narrowed
        return np.sort(rng.standard_normal((m, t)), axis=0)
    if kind == "constant":
        return np.zeros((m, t))
    x = rng.standard_normal((m, t))
    x[rng.random((m, t)) < 0.1] = np.nan
    x[rng.random((m, t)) < 0.05] = -np.inf
    x[rng.random((m, t)) < 0.05] = np.inf
    return x


@pytest.mark.parametrize("kind", ["normal", "ties", "increasing", "constant", "special"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("small", [False, True], ids=["default", "tiny-slabs"])
def test_update_is_the_column_by_column_sweep(rng, monkeypatch, kind, dtype, small):
    if small:  # slabs of 3 rows, merges of 5 entries: every boundary case of the loops
        monkeypatch.setattr(tu, "SLAB_ROWS", 3)
        monkeypatch.setattr(tu, "MERGE_ENTRIES", 5)
    for _ in range(8):
        m, t, k = int(rng.integers(1, 150)), int(rng.integers(1, 12)), int(rng.integers(1, 25))
        x = _matrix(rng, kind, m, t).astype(dtype)
        cuts = sorted({0, m, *rng.integers(0, m + 1, int(rng.integers(0, 5))).tolist()})
        got = _streamed(x, k, cuts)
        want = _sweep(x, k)
        for g, w, name in zip(got, want, ("values", "rows", "count", "nan"), strict=True):
            np.testing.assert_array_equal(g, w, err_msg=f"{name}: {kind} {m}x{t} k={k} {cuts}")


def test_float32_blocks_against_float64_thresholds():
    # kept scores from a float64 block, then float32 rows just around them: the comparison in
    # float32 must decide as float64 does (the threshold rounded down, never to nearest)
    k = 1
    first = np.array([[0.1], [0.3]])  # float64 0.3 lies between two float32 values
    x32 = np.array([[np.float32(0.3)], [np.nextafter(np.float32(0.3), np.float32(0))]],
                   dtype=np.float32)
    state = (np.full((1, k), -np.inf), np.full((1, k), -1, dtype=np.int64),
             np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64))
    topk_update(first, 0, *state)
    topk_update(x32, 2, *state)
    want = _sweep(np.vstack([first, x32.astype(np.float64)]), k)
    np.testing.assert_array_equal(state[0], want[0])
    np.testing.assert_array_equal(state[1], want[1])


def test_accumulator_memory_estimate_covers_the_update(rng):
    # what the update allocates stays within what the accumulator declares for its blocks
    import tracemalloc

    t, k, rows = 300, 10, 500
    x = np.sort(rng.standard_normal((rows, t)), axis=0)  # the costliest order: all narrowed
    acc = TopKAccumulator(t, (1, k), n_rows=2 * rows)
    acc.update(x[:1], 0)  # the state exists
    tracemalloc.start()
    try:
        acc.update(x[1:], 1)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak <= work_bytes(t, k, rows) + 16 * t, (peak, work_bytes(t, k, rows))


def test_the_compiled_and_numpy_kernels_keep_the_same_pairs(monkeypatch):
    """Above NUMBA_MIN_ENTRIES kept pairs the accumulator uses the compiled heaps; both kernels
    keep the same (score, row) pairs, ties to the lower row, over blocks of any size."""
    from aria_tda.diagnostics import concentration

    rng = np.random.default_rng(3)
    s = np.round(rng.standard_normal((700, 40)), 1).astype(np.float32)  # many exact ties
    got = {}
    for name, threshold in (("numpy", 10**12), ("compiled", 1)):
        monkeypatch.setattr(concentration, "NUMBA_MIN_ENTRIES", threshold)
        acc = concentration.TopKAccumulator(40, (1, 5, 25), n_rows=700)
        for a, b in ((0, 3), (3, 180), (180, 181), (181, 700)):
            acc.update(s[a:b], a)
        vals, rows = acc._candidates()  # best first, whatever the kernel's layout
        got[name] = (vals, rows, acc.result().to_dict())
    assert np.array_equal(got["numpy"][0], got["compiled"][0])
    assert np.array_equal(got["numpy"][1], got["compiled"][1])
    assert got["numpy"][2] == got["compiled"][2]
    # a state set from sorted candidates (a merge, torch blocks) stays with the NumPy kernel
    monkeypatch.setattr(concentration, "NUMBA_MIN_ENTRIES", 1)
    a = concentration.TopKAccumulator(40, (1, 5, 25), n_rows=700)
    a.update(s[:300], 0)
    b = concentration.TopKAccumulator(40, (1, 5, 25), n_rows=700)
    b.update(s[300:400], 300)
    merged = a.merge(b)
    merged.update(s[400:], 400)
    assert np.array_equal(merged._candidates()[1], got["numpy"][1])
