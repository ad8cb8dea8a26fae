"""The diagnostics do not depend on the matrix's scale, at every input dtype and on every path.

κ, p and the constant-column rule do not change when one column is multiplied by a positive
factor; r_i and v1 do not change when the whole matrix is. Influence scores are routinely tiny
(1e-20: learning-rate-scaled, Hessian-inverse products) or huge, and float32 squares of values
below ~1e-19 underflow: the kernel scales every column by a power of two first
(:func:`aria_tda.scores.blockstats.column_scale`). Everything here is compared with the float64
computation from the definitions (:func:`diagnose_reference`).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from aria_tda.diagnostics import diagnose
from aria_tda.diagnostics.core import diagnose_reference
from aria_tda.scores.blockstats import column_scale
from aria_tda.scores.stats import block_stats, stream_stats
from aria_tda.verdict import classify

FIELDS = ("kappa", "r1", "r2_5", "p", "v1_constancy")


def healthy(seed: int = 0, m: int = 400, t: int = 24) -> np.ndarray:
    """A healthy matrix: weak shared structure, per-query offsets, unit-scale noise."""
    rng = np.random.default_rng(seed)
    shared = rng.standard_normal((m, 1)) * rng.uniform(0.2, 0.6, t)
    return shared + rng.standard_normal((m, t)) + 0.3 * rng.standard_normal(t)


def rel(a: float, b: float) -> float:
    return abs(a - b) / max(abs(b), 1e-300)


def assert_close(d, ref, tol: float) -> None:
    for name in FIELDS:
        assert rel(getattr(d, name), getattr(ref, name)) <= tol, (
            name, getattr(d, name), getattr(ref, name)
        )
    assert d.constant_columns == ref.constant_columns
    np.testing.assert_array_equal(d.constant_indices, ref.constant_indices)


def quiet(fn, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kw)


# the largest factor each dtype represents without overflowing the matrix itself
FACTORS = {
    np.float64: (1e-30, 1e-21, 1e-10, 1.0, 1e10, 1e21, 1e30),
    np.float32: (1e-30, 1e-21, 1e-10, 1.0, 1e10, 1e21, 1e30),
    np.float16: (2.0**-10, 1.0, 2.0**8),
}


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16], ids=lambda d: d.__name__)
def test_exact_path_is_scale_invariant_at_every_dtype(dtype):
    base = healthy()
    for factor in FACTORS[dtype]:
        s = (base * factor).astype(dtype)
        ref = quiet(diagnose_reference, s)  # float64 from the stored values
        assert_close(quiet(diagnose, s, chunk_rows=97), ref, 1e-5)
        assert_close(quiet(diagnose, s, chunk_rows=97, compute_dtype="float64"), ref, 1e-12)
    # and the values are those of the unscaled matrix (the factor is a power of ten, so the
    # stored values differ by rounding only)
    one = quiet(diagnose_reference, base.astype(dtype))
    tiny = quiet(diagnose, (base * FACTORS[dtype][0]).astype(dtype))
    assert_close(tiny, one, 1e-5 if dtype != np.float16 else 1e-2)


def test_float32_underflow_no_longer_flips_the_verdict():
    """The issue's case: a healthy matrix x 1e-21 went from ok to suspect (p = 0.67)."""
    base = healthy(1, m=1500, t=100).astype(np.float32)
    verdicts = set()
    for factor in (1.0, 1e-21, 1e-30, 1e21):
        d = quiet(diagnose, (base.astype(np.float64) * factor).astype(np.float32))
        assert d.constant_columns == 0
        assert d.p < 0.2
        verdicts.add(
            classify(kappa=d.kappa, r1=d.r1, r2_5=d.r2_5, p=d.p, v1_constancy=d.v1_constancy).label
        )
    assert verdicts == {"ok"}


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=lambda d: d.__name__)
def test_columns_whose_magnitudes_differ_by_1e20(dtype):
    rng = np.random.default_rng(3)
    base = healthy(2, m=300, t=12)
    mags = np.logspace(-10, 10, 12)  # 1e-10 ... 1e10
    for factor in (1e-20, 1.0, 1e15) if dtype == np.float64 else (1e-10, 1.0, 1e10):
        s = (base * mags * factor).astype(dtype)
        ref = quiet(diagnose_reference, s)
        assert_close(quiet(diagnose, s, chunk_rows=64), ref, 1e-5)
        assert_close(quiet(diagnose, s, chunk_rows=64, compute_dtype="float64"), ref, 1e-12)
    # κ and p only see each column relative to itself: equal to the unscaled matrix's
    flat = quiet(diagnose_reference, base)
    d = quiet(diagnose, (base * mags).astype(dtype))
    assert rel(d.kappa, flat.kappa) < 1e-5 and rel(d.p, flat.p) < 1e-5
    assert rng is not None


def test_constant_is_relative_to_the_column_not_to_float32_underflow():
    base = healthy(4, m=200, t=8)
    base[:, 2] = 7.0  # constant
    base[:, 5] = 1e-25 * np.random.default_rng(0).standard_normal(200)  # tiny but varying
    for factor in (1e-15, 1.0, 1e15):
        s = (base * factor).astype(np.float32)
        d = quiet(diagnose, s)
        ref = quiet(diagnose_reference, s)
        assert d.constant_columns == ref.constant_columns == 1
        assert list(d.constant_indices) == [2]
        assert_close(d, ref, 1e-5)


@pytest.mark.parametrize(
    ("mode", "memory"), [("exact-tiled", "250KB"), ("approx", None)], ids=["tiled", "approx"]
)
@pytest.mark.parametrize("factor", [1e-30, 1e-21, 1.0, 1e21])
def test_tiled_and_approx_paths_are_scale_invariant(mode, memory, factor):
    base = healthy(5, m=500, t=40) * np.logspace(-6, 6, 40)
    s = (base * factor).astype(np.float32)
    ref = quiet(diagnose_reference, s)
    d = quiet(diagnose, s, mode=mode, memory=memory, chunk_rows=128)
    tol = 1e-5 if mode == "exact-tiled" else 1e-3  # approx: r_i within their intervals
    for name in ("kappa", "p") if mode == "approx" else FIELDS:
        assert rel(getattr(d, name), getattr(ref, name)) <= tol, name
    if mode == "approx":
        lo, hi = d.r1_interval
        assert lo - 1e-12 <= ref.r1 <= hi + 1e-12
    assert d.constant_columns == ref.constant_columns


@pytest.mark.parametrize("factor", [1e-30, 1e-21, 1.0, 1e21])
def test_torch_path_is_scale_invariant(factor):
    pytest.importorskip("torch")
    base = healthy(6, m=300, t=16) * np.logspace(-5, 5, 16)
    s = (base * factor).astype(np.float32)
    ref = quiet(diagnose_reference, s)
    assert_close(quiet(diagnose, s, device="cpu", chunk_rows=70), ref, 1e-5)
    assert_close(
        quiet(diagnose, s, device="cpu", chunk_rows=70, compute_dtype="float64"), ref, 1e-12
    )


@pytest.mark.parametrize("factor", [1e-21, 1.0, 1e21])
def test_block_sums_are_those_of_the_unscaled_float64_matrix(factor):
    """The kernel's sums (a reference twin: plain float64 sums about the same shift)."""
    base = healthy(7, m=120, t=6) * np.logspace(-8, 8, 6)
    s = (base * factor).astype(np.float32)
    st = block_stats(s)
    x = s.astype(np.float64)
    y = x - st.shift
    np.testing.assert_allclose(st.s2, (y * y).sum(0), rtol=1e-5)
    corr = st.centered_gram() / np.sqrt(np.outer(st.centered_ss, st.centered_ss))
    np.testing.assert_allclose(corr, np.corrcoef(x, rowvar=False), atol=1e-5)
    streamed = stream_stats(s, chunk_rows=50)
    np.testing.assert_allclose(streamed.sum_squares, (x * x).sum(0), rtol=1e-5)


def test_column_scale_is_a_power_of_two_near_the_block_maximum():
    y = np.array([[3e-21, 0.0, 0.0, 2.5], [-1e-21, 0.0, 0.0, -1e3]], dtype=np.float32)
    shift = np.array([0.0, 5e20, 0.0, 1.0])
    scale = column_scale(y, shift)
    m, _ = np.frexp(scale)
    assert np.all(m == 0.5)  # powers of two: scaling is exact
    assert 0.5 <= 3e-21 * scale[0] < 1.0
    assert 0.5 <= 5e20 * scale[1] < 1.0  # zero in the block: from the shift
    assert scale[2] == scale[1]  # zero, shift zero: from the largest magnitude seen
    assert scale[3] == 1.0  # ordinary magnitudes are left alone (no extra pass)
    assert column_scale(np.zeros((2, 2)), np.zeros(2)).tolist() == [1.0, 1.0]


def test_values_beyond_float64_squares_are_refused_clearly():
    from aria_tda.errors import DataError

    s = np.random.default_rng(0).random((10, 3)) * 1e300
    with pytest.raises(DataError, match="too large"):
        quiet(diagnose, s)
