"""The shared streaming kernel: block sums vs exact float64 sums, merging, moments, torch."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps

from aria_tda.errors import DataError, ParameterError
from aria_tda.scores import BlockStats, block_stats, stream_matvec, stream_stats
from aria_tda.scores.stats import blas_threads


def exact(s):
    s = np.asarray(s, dtype=np.float64)
    return s.sum(0), (s**2).sum(0), s.T @ s


def test_block_stats_matches_exact_sums(rng):
    s = rng.standard_normal((200, 9)) * 3 + 7
    st = block_stats(s, shift=np.zeros(9))
    colsum, sumsq, gram = exact(s)
    np.testing.assert_allclose(st.column_sums, colsum, rtol=1e-12)
    np.testing.assert_allclose(st.sum_squares, sumsq, rtol=1e-12)
    np.testing.assert_allclose(st.raw_gram(), gram, rtol=1e-12)
    np.testing.assert_allclose(st.mean, s.mean(0), rtol=1e-12)
    c = s - s.mean(0)
    np.testing.assert_allclose(st.centered_gram(), c.T @ c, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(st.centered_ss, (c**2).sum(0), rtol=1e-9)


def test_shift_does_not_change_raw_quantities(rng):
    s = rng.standard_normal((150, 6)) + 100
    a = block_stats(s)  # own means
    b = block_stats(s, shift=rng.standard_normal(6) * 50)
    np.testing.assert_allclose(a.raw_gram(), b.raw_gram(), rtol=1e-12)
    np.testing.assert_allclose(a.centered_gram(), b.centered_gram(), rtol=1e-7, atol=1e-8)
    np.testing.assert_allclose(a.column_sums, b.column_sums, rtol=1e-13)


def test_merge_equals_whole_and_refuses_other_shifts(rng):
    s = rng.standard_normal((300, 5))
    c = s[:40].mean(0)
    parts = [block_stats(s[a:b], shift=c, moments=4) for a, b in [(0, 40), (40, 41), (41, 300)]]
    merged = parts[0].merge(parts[1]).merge(parts[2])
    whole = block_stats(s, shift=c, moments=4)
    assert merged.n == 300
    for name in ("s1", "s2", "s3", "s4", "gram"):
        np.testing.assert_allclose(
            getattr(merged, name), getattr(whole, name), rtol=1e-12, atol=1e-12
        )
    with pytest.raises(ValueError, match="different shifts"):
        parts[0].merge(block_stats(s))


def test_central_moments_match_scipy(rng):
    s = (
        np.column_stack(
            [rng.standard_normal(5000), rng.exponential(size=5000), rng.lognormal(0, 1, 5000)]
        )
        + 40
    )
    st = stream_stats(s, chunk_rows=333, gram=False, moments=4)
    m2, m3, m4 = st.central_moments()
    np.testing.assert_allclose(m2, s.var(0), rtol=1e-10)
    np.testing.assert_allclose(m3 / m2**1.5, sps.skew(s), rtol=1e-8)
    np.testing.assert_allclose(m4 / m2**2 - 3, sps.kurtosis(s), rtol=1e-8)
    assert st.gram is None
    with pytest.raises(ValueError, match="without the Gram"):
        st.raw_gram()


@pytest.mark.parametrize("chunk_rows", [1, 13, 128, 1000])
def test_stream_equals_single_block(rng, chunk_rows):
    s = rng.standard_normal((257, 11))
    st = stream_stats(s, chunk_rows=chunk_rows, moments=4)
    one = block_stats(s, shift=st.shift, moments=4)
    np.testing.assert_allclose(st.raw_gram(), one.raw_gram(), rtol=1e-12)
    np.testing.assert_allclose(st.s4, one.s4, rtol=1e-12)
    np.testing.assert_allclose(st.shift, s[:chunk_rows].mean(0), rtol=1e-7)  # float32-rounded
    assert np.array_equal(st.shift, st.shift.astype(np.float32))


def test_float32_products_accumulate_in_float64(rng):
    s = (rng.standard_normal((20_000, 8)) + 5).astype(np.float32)
    st = stream_stats(s, chunk_rows=1000)
    assert st.gram.dtype == np.float64
    assert st.eps == np.finfo(np.float32).eps
    _, _, gram = exact(s)
    np.testing.assert_allclose(st.raw_gram(), gram, rtol=2e-7)
    st64 = stream_stats(s, chunk_rows=1000, compute_dtype="float64")
    assert st64.eps == np.finfo(np.float64).eps
    np.testing.assert_allclose(st64.raw_gram(), gram, rtol=1e-12)


def test_constant_mask(rng):
    s = rng.standard_normal((100, 4))
    s[:, 1] = 2.5
    s[:, 3] = 0.0
    assert stream_stats(s).constant_mask().tolist() == [False, True, False, True]
    s32 = s.astype(np.float32)
    s32[:, 0] = 1e4 + rng.standard_normal(100)  # varies: ~1000 float32 ulps
    assert stream_stats(s32).constant_mask().tolist() == [False, True, False, True]


def test_nonfinite_names_row_and_column(rng):
    s = rng.standard_normal((60, 5))
    s[41, 3] = np.inf
    with pytest.raises(DataError, match=r"got inf at row 41, column 3"):
        stream_stats(s, chunk_rows=8)
    with pytest.raises(DataError, match=r"row 41, column 3"):
        stream_stats(s, chunk_rows=8, gram=False, moments=4)
    with pytest.raises(DataError, match=r"row 41, column 3"):
        stream_matvec(s, np.ones(5), chunk_rows=8)


def test_matvec(rng):
    s = rng.standard_normal((99, 7)).astype(np.float32)
    v = rng.standard_normal(7)
    np.testing.assert_allclose(
        stream_matvec(s, v, chunk_rows=10), s.astype(np.float64) @ v, rtol=1e-12
    )
    np.testing.assert_allclose(
        stream_matvec(s, v, start=20, stop=30), s[20:30].astype(np.float64) @ v, rtol=1e-12
    )
    with pytest.raises(ParameterError, match=r"v: expected shape \(7,\)"):
        stream_matvec(s, np.ones(3))


def test_torch_kernel_same_numbers(rng):
    torch = pytest.importorskip("torch")
    s = rng.standard_normal((300, 6)) + 3
    ref = stream_stats(s, chunk_rows=64, moments=4)
    for got in (
        stream_stats(s, chunk_rows=64, moments=4, device="cpu"),
        stream_stats(torch.from_numpy(s), chunk_rows=64, moments=4, device="cpu"),
    ):
        for name in ("s1", "s2", "s3", "s4", "gram"):
            np.testing.assert_allclose(
                getattr(got, name), getattr(ref, name), rtol=1e-10, atol=1e-9
            )
        assert got.n == 300
    kern = block_stats(torch.from_numpy(s), shift=ref.shift)
    np.testing.assert_allclose(kern.raw_gram(), ref.raw_gram(), rtol=1e-12)
    bad = torch.from_numpy(s.copy())
    bad[200, 2] = float("nan")
    with pytest.raises(DataError, match="row 200, column 2"):
        stream_stats(bad, chunk_rows=64, device="cpu")
    v = rng.standard_normal(6)
    np.testing.assert_allclose(stream_matvec(s, v, device="cpu"), s @ v, rtol=1e-12)


def test_blas_threads_and_parameter_checks(rng):
    s = rng.standard_normal((50, 3))
    with blas_threads(1):
        st = stream_stats(s, n_threads=1)
    assert isinstance(st, BlockStats)
    with pytest.raises(ParameterError, match="n_threads"):
        stream_stats(s, n_threads=0)
    with pytest.raises(ParameterError, match="moments"):
        block_stats(s, moments=3)
    with pytest.raises(ParameterError, match=r"shift: expected shape \(3,\)"):
        stream_stats(s, shift=np.zeros(2))
    with pytest.raises(DataError, match="2-D block"):
        block_stats(np.ones(4))
