"""Reliability diagnostics (paper §3.2): streaming path vs the exact in-memory reference,
and the invariants κ, r_i and p must satisfy."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest
from scipy.special import gammaln

from aria_tda.diagnostics import Diagnostics, diagnose, diagnose_reference
from aria_tda.errors import AriaWarning, DataError, FileFormatError, ParameterError
from aria_tda.scores import save_scores
from aria_tda.verdict import classify

FIELDS = ("kappa", "r1", "r2_5", "p", "sigma1", "frobenius", "v1_constancy")


def structured(rng, m=400, t=12, *, rank=3, noise=0.3, offset=2.0):
    """Low rank + noise + per-column offsets: every diagnostic is away from its bounds."""
    a = rng.standard_normal((m, rank)) @ rng.standard_normal((rank, t))
    return a + noise * rng.standard_normal((m, t)) + offset * rng.standard_normal(t)


def assert_matches(d: Diagnostics, ref: Diagnostics, rtol=1e-6, *, u1=False, atol=1e-12):
    for f in FIELDS:
        assert getattr(d, f) == pytest.approx(getattr(ref, f), rel=rtol, abs=atol), f
    np.testing.assert_allclose(d.energy_ratios, ref.energy_ratios, rtol=rtol, atol=1e-10)
    np.testing.assert_allclose(d.v1, ref.v1, rtol=rtol, atol=1e-7)
    assert d.constant_columns == ref.constant_columns
    if u1:
        np.testing.assert_allclose(d.u1, ref.u1, rtol=rtol, atol=1e-7)


@pytest.mark.parametrize("shape", [(400, 12), (60, 30), (9, 25), (1000, 2)])
def test_matches_exact_reference(rng, shape):
    s = structured(rng, *shape, rank=min(3, *shape))
    assert_matches(
        diagnose(s, chunk_rows=37, with_u1=True), diagnose_reference(s, with_u1=True), u1=True
    )


def test_float32_input_close_to_float64_reference(rng):
    s = structured(rng, 3000, 16).astype(np.float32)
    ref = diagnose_reference(s.astype(np.float64), with_u1=True)
    d = diagnose(s, chunk_rows=500)  # float32 block products, float64 accumulation
    assert_matches(d, ref, rtol=1e-5, atol=1e-6)
    d64 = diagnose(s, chunk_rows=500, compute_dtype="float64")
    assert_matches(d64, ref, rtol=1e-9)


def test_invariant_ranges_and_energy_sum(rng):
    s = structured(rng, 300, 20)
    d = diagnose(s, n_energy=20)
    assert 0.0 <= d.kappa <= 1.0
    assert 0.0 <= d.p <= 1.0
    assert 0.0 <= d.v1_constancy <= 1.0
    assert sum(d.energy_ratios) == pytest.approx(1.0, abs=1e-12)
    assert list(d.energy_ratios) == sorted(d.energy_ratios, reverse=True)
    assert d.r2_5 == pytest.approx(sum(d.energy_ratios[1:5]))
    assert d.sigma1**2 / d.frobenius**2 == pytest.approx(d.r1)


def test_energy_ratios_padded_beyond_rank(rng):
    d = diagnose(rng.standard_normal((50, 4)))
    assert len(d.energy_ratios) == 10
    assert d.energy_ratios[4:] == (0.0,) * 6
    assert sum(d.energy_ratios) == pytest.approx(1.0)


def test_planted_rank_one_collapse(rng):
    u = rng.random(2000) + 0.5
    v = np.ones(30)
    s = np.outer(u, v) + 1e-4 * rng.standard_normal((2000, 30))
    d = diagnose(s)
    assert d.r1 > 0.9999
    assert d.r2_5 < 1e-4
    assert d.kappa > 0.99
    assert d.v1_constancy == pytest.approx(1.0, abs=1e-6)
    assert d.collapsed() and d.verdict.label == "collapsed"
    # rank one but v1 not constant across queries: r1 ~ 1, constancy well below 1; the queries
    # fall in two camps, each retrieving one same top-K; collapsed() says what the verdict says
    v2 = np.linspace(-1, 2, 30)
    d2 = diagnose(np.outer(u, v2))
    assert d2.r1 == pytest.approx(1.0)
    assert d2.v1_constancy < 0.6
    assert classify(d2) == d2.verdict
    assert d2.verdict.rule == "query-dependence"
    assert d2.collapsed() == (d2.verdict.label == "collapsed")


def expected_abs_corr(m: int) -> float:
    """E|r| of the Pearson r of two independent Gaussian samples of size m (exact).

    r has density proportional to (1 - r^2)^((m-4)/2) on [-1, 1], so
    E|r| = Gamma((m-1)/2) / (sqrt(pi) Gamma(m/2))  ~  sqrt(2 / (pi m)).
    """
    return math.exp(gammaln((m - 1) / 2) - gammaln(m / 2)) / math.sqrt(math.pi)


def test_iid_noise_kappa_near_expectation(rng):
    m, t = 2000, 40
    d = diagnose(rng.standard_normal((m, t)))
    e = expected_abs_corr(m)
    assert e == pytest.approx(math.sqrt(2 / (math.pi * m)), rel=1e-3)
    # sd of |r| is ~ sqrt(1 - 2/pi)/sqrt(m); averaged over t(t-1)/2 nearly independent pairs
    sd = math.sqrt(1 - 2 / math.pi) / math.sqrt(m) / math.sqrt(t * (t - 1) / 2)
    assert abs(d.kappa - e) < 5 * sd
    assert d.r1 < 0.1


def test_row_and_column_permutation_invariance(rng):
    s = structured(rng, 500, 15)
    d = diagnose(s, with_u1=True)
    rows = rng.permutation(500)
    cols = rng.permutation(15)
    dr = diagnose(s[rows], with_u1=True)
    dc = diagnose(s[:, cols], with_u1=True)
    for other in (dr, dc):
        for f in FIELDS:
            assert getattr(other, f) == pytest.approx(getattr(d, f), rel=1e-10)
        np.testing.assert_allclose(other.energy_ratios, d.energy_ratios, rtol=1e-9, atol=1e-14)
    np.testing.assert_allclose(dr.u1, d.u1[rows], atol=1e-9)
    np.testing.assert_allclose(dc.v1, d.v1[cols], atol=1e-9)


@pytest.mark.parametrize("chunk_rows", [1, 7, 64, 499, 500, 10_000])
def test_chunk_size_invariance(rng, chunk_rows):
    s = structured(rng, 500, 10)
    ref = diagnose(s, chunk_rows=500)
    d = diagnose(s, chunk_rows=chunk_rows)
    for f in FIELDS:
        assert getattr(d, f) == pytest.approx(getattr(ref, f), rel=1e-11)


def test_column_offset_moves_p_not_kappa(rng):
    s = rng.standard_normal((800, 10)) + 0.5 * rng.standard_normal((800, 1))
    d0 = diagnose(s)
    d1 = diagnose(s + 50.0 * (1 + rng.random(10)))
    assert d1.kappa == pytest.approx(d0.kappa, rel=1e-9)
    assert d0.p < 0.05
    assert d1.p > 0.99
    # per-column positive/negative rescaling does not move kappa either (|corr|)
    d2 = diagnose(s * np.where(np.arange(10) % 2, -3.0, 0.25))
    assert d2.kappa == pytest.approx(d0.kappa, rel=1e-9)


def test_p_and_kappa_stable_under_huge_offsets_in_float32(rng):
    # the shifted sums keep kappa exact even when mean >> spread (p ~ 1)
    s = (rng.standard_normal((4000, 8)) + 1e4).astype(np.float32)
    ref = diagnose_reference(s.astype(np.float64), with_u1=True)
    d = diagnose(s, chunk_rows=333)
    assert d.kappa == pytest.approx(ref.kappa, rel=1e-4)
    assert d.p == pytest.approx(ref.p, rel=1e-7)


def test_constant_columns_excluded_and_counted(rng):
    s = structured(rng, 300, 8)
    s[:, 2] = 3.5
    s[:, 5] = 0.0
    with pytest.warns(AriaWarning, match=r"2 of 8 score columns are constant \(columns 2, 5\)"):
        d = diagnose(s)
    assert d.constant_columns == 2
    assert d.constant_indices.tolist() == [2, 5]
    keep = [0, 1, 3, 4, 6, 7]
    with pytest.warns(AriaWarning):
        ref = diagnose_reference(s, with_u1=True)
    assert d.kappa == pytest.approx(diagnose_reference(s[:, keep], with_u1=True).kappa, rel=1e-9)
    assert_matches(d, ref)
    # the all-zero column is left out of p; the constant 3.5 column contributes exactly 1
    sub = s[:, [0, 1, 2, 3, 4, 6, 7]]
    terms = sub.sum(0) ** 2 / (300 * (sub**2).sum(0))
    assert d.p == pytest.approx(terms.mean(), rel=1e-12)


def test_all_columns_constant_gives_nan_kappa(rng):
    s = np.tile(rng.random(5) + 1, (100, 1))
    with (
        pytest.warns(AriaWarning, match="kappa is undefined"),
        pytest.warns(AriaWarning, match="5 of 5"),
    ):
        d = diagnose(s)
    assert math.isnan(d.kappa)
    assert d.r1 == pytest.approx(1.0)
    assert d.p == pytest.approx(1.0)
    assert d.to_dict()["kappa"] is None


@pytest.mark.parametrize(
    ("matrix", "match"),
    [
        (np.zeros((10, 3)), "all-zero matrix"),
        (np.ones((10, 1)), "at least 2 queries"),
        (np.ones((1, 5)), "at least 2 training rows"),
        (np.ones(5), "2-D matrix"),
        (np.ones((2, 3, 4)), "2-D matrix"),
        (np.ones((0, 4)), "non-empty"),
        (np.ones((3, 3), dtype=complex), "real floating-point"),
    ],
)
def test_bad_matrices_are_data_errors(matrix, match):
    with pytest.raises(DataError, match=match), warnings.catch_warnings():
        warnings.simplefilter("ignore", AriaWarning)
        diagnose(matrix)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_nonfinite_error_names_first_row_and_column(rng, bad):
    s = rng.standard_normal((100, 6))
    s[73, 4] = bad
    s[90, 1] = bad
    with pytest.raises(DataError, match=rf"got {bad} at row 73, column 4"):
        diagnose(s, chunk_rows=16)
    # in the very first block too (the shift is computed there)
    s[3, 2] = np.nan
    with pytest.raises(DataError, match=r"row 3, column 2"):
        diagnose(s, chunk_rows=16)


def test_overflowing_values(rng):
    # float32 squares overflow: the block is redone in float64, results stay exact
    s = (rng.standard_normal((50, 4)) * 1e25).astype(np.float32)
    d = diagnose(s)
    assert d.r1 == pytest.approx(
        diagnose_reference(s.astype(np.float64), with_u1=True).r1, rel=1e-5
    )
    with pytest.raises(DataError, match="too large"):
        diagnose(np.full((10, 3), 1e300) * rng.random((10, 3)))


def test_parameters_validated(rng):
    s = rng.standard_normal((20, 3))
    with pytest.raises(ParameterError, match="chunk_rows: expected an integer >= 1, got 0"):
        diagnose(s, chunk_rows=0)
    with pytest.raises(ParameterError, match="n_energy"):
        diagnose(s, n_energy=0)
    with pytest.raises(ParameterError, match="compute_dtype"):
        diagnose(s, compute_dtype="float16")


def test_to_dict_is_json(rng):
    d = diagnose(structured(rng, 100, 5), with_u1=True)
    rec = json.loads(json.dumps(d.to_dict()))
    for k in (
        "n_train",
        "n_queries",
        "kappa",
        "r1",
        "r2_5",
        "p",
        "energy_ratios",
        "constant_columns",
    ):
        assert k in rec
    assert len(rec["energy_ratios"]) == 10
    full = d.to_dict(vectors=True)
    assert len(full["v1"]) == 5 and len(full["u1"]) == 100


@pytest.mark.parametrize("suffix", [".npy", ".zarr"])
def test_from_files_equals_in_memory(rng, tmp_path, suffix):
    s = structured(rng, 700, 9).astype(np.float32)
    path = save_scores(s, tmp_path / f"s{suffix}")
    d_file = diagnose(path, chunk_rows=64, with_u1=True)
    d_mem = diagnose(s, chunk_rows=64, with_u1=True)
    for f in FIELDS:
        assert getattr(d_file, f) == pytest.approx(getattr(d_mem, f), rel=1e-12)
    np.testing.assert_allclose(d_file.u1, d_mem.u1, rtol=1e-12)


def test_float16_file(rng, tmp_path):
    s = structured(rng, 500, 6).astype(np.float16)
    np.save(tmp_path / "h.npy", s)
    d = diagnose(tmp_path / "h.npy", chunk_rows=100)
    assert_matches(d, diagnose_reference(s.astype(np.float64), with_u1=True), rtol=1e-5, atol=1e-6)


def test_missing_file():
    with pytest.raises(FileFormatError, match="no such file"):
        diagnose("/nonexistent/scores.npy")


def test_torch_tensor_and_torch_cpu_kernel_same_numbers(rng):
    torch = pytest.importorskip("torch")
    s = structured(rng, 600, 10)
    ref = diagnose(s, with_u1=True)
    for d in (
        diagnose(torch.from_numpy(s), with_u1=True),
        diagnose(s, device="cpu", chunk_rows=128, with_u1=True),
        diagnose(torch.from_numpy(s), device="cpu", with_u1=True),
    ):
        assert_matches(d, ref, rtol=1e-10, u1=True)
    s32 = s.astype(np.float32)
    # float32 products in two BLAS libraries: rounding-level differences (v1's sum cancels)
    assert_matches(diagnose(s32, device="cpu"), diagnose(s32), rtol=1e-5, atol=1e-6)
    bf = torch.from_numpy(s32).to(torch.bfloat16)
    d_bf = diagnose(bf)
    assert d_bf.r1 == pytest.approx(ref.r1, rel=1e-2)


def test_cuda_device_unavailable_is_parameter_error(rng):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():  # pragma: no cover - exercised on GPU machines
        s = structured(rng, 600, 10)
        assert_matches(diagnose(s, device="cuda"), diagnose(s), rtol=1e-9)
        return
    with pytest.raises(ParameterError, match="CUDA is not available"):
        diagnose(rng.standard_normal((10, 3)), device="cuda")


def test_peak_memory_does_not_grow_with_rows(rng, tmp_path):
    """Streaming: peak allocations depend on the block size and T^2, not on M."""
    import tracemalloc

    peaks = []
    for m in (2_000, 20_000):
        path = save_scores(rng.standard_normal((m, 40)).astype(np.float32), tmp_path / f"s{m}.npy")
        tracemalloc.start()
        diagnose(path, chunk_rows=500)
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
    block_bytes = 500 * 41 * 4
    assert peaks[1] < 1.2 * peaks[0]
    assert peaks[1] < 20 * block_bytes  # a few blocks, not the 3.2 MB matrix
