"""aria_tda.paired: exact permutation p-values, paired bootstrap intervals, rank agreement,
diagnostics under a query resample."""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pytest
from scipy.stats import kendalltau, spearmanr

from aria_tda.diagnostics import diagnose
from aria_tda.errors import DataError, ParameterError
from aria_tda.paired import (
    MAX_EXACT_N,
    bootstrap_counts,
    diagnostics_bootstrap,
    exact_rank_pvalue,
    paired_differences,
    paired_mean_differences,
    percentile_interval,
    rank_agreement,
)


def _brute_force(x, y, stat):
    """Exact p-values (greater, less, two-sided) from the permutation distribution enumerated
    here with scipy, independently of aria_tda.paired."""
    fn = spearmanr if stat == "spearman" else kendalltau
    obs = fn(x, y).statistic
    vals = np.array([fn(x, np.asarray(y)[list(p)]).statistic
                     for p in itertools.permutations(range(len(x)))])
    return {"greater": np.mean(vals >= obs - 1e-12), "less": np.mean(vals <= obs + 1e-12),
            "two-sided": np.mean(np.abs(vals) >= abs(obs) - 1e-12)}


@pytest.mark.parametrize("n", [3, 4, 5, 6])
@pytest.mark.parametrize("stat", ["spearman", "kendall"])
def test_exact_pvalue_matches_enumeration(n, stat):
    rng = np.random.default_rng(n)
    for trial in range(3):
        x = rng.normal(size=n)
        y = x + rng.normal(size=n) * (0.3 + trial)
        if trial == 2:
            y[0] = y[-1]  # a tie in y
        want = _brute_force(x, y, stat)
        for alt in ("greater", "less", "two-sided"):
            got = exact_rank_pvalue(x, y, statistic=stat, alternative=alt)
            assert got == pytest.approx(want[alt], abs=1e-12)


@pytest.mark.parametrize("n", [3, 4, 5, 6])
def test_perfect_agreement_has_the_smallest_p(n):
    x = np.arange(n, dtype=float)
    for stat in ("spearman", "kendall"):
        assert exact_rank_pvalue(x, 2 * x + 1, statistic=stat) == pytest.approx(
            1 / math.factorial(n))
        assert exact_rank_pvalue(x, -x, statistic=stat) == pytest.approx(1.0)
        assert exact_rank_pvalue(x, -x, statistic=stat, alternative="two-sided") == \
            pytest.approx(2 / math.factorial(n))


def test_exact_pvalue_checks():
    with pytest.raises(ParameterError, match="methods for the exact test"):
        exact_rank_pvalue(np.arange(MAX_EXACT_N + 1), np.arange(MAX_EXACT_N + 1))
    with pytest.raises(DataError):
        exact_rank_pvalue([1, 2, 3], [1, 2])
    with pytest.raises(ParameterError, match="statistic"):
        exact_rank_pvalue([1, 2, 3], [1, 2, 3], statistic="pearson")
    assert math.isnan(exact_rank_pvalue([1, 2, 3], [5, 5, 5]))


def _two_methods(rng, t, shift):
    """Per-query values of two methods: a large shared query effect, small method noise."""
    query = rng.normal(0.0, 1.0, size=t)
    return np.stack([query + shift + rng.normal(0, 0.3, t), query + rng.normal(0, 0.3, t)], 1)


def test_paired_interval_excludes_zero_for_a_known_shift():
    rng = np.random.default_rng(0)
    v = _two_methods(rng, 60, 0.3)
    res = paired_mean_differences(v, bootstrap_counts(60, 1000, 1))
    assert res["separated"][0] and res["diff_lo"][0] > 0
    assert res["diff_lo"][0] < 0.3 < res["diff_hi"][0]
    # pairing is what separates them: the per-method intervals overlap
    c = bootstrap_counts(60, 1000, 1)
    lo, hi = percentile_interval((c @ v) / 60.0)
    assert lo[0] < hi[1]


def test_paired_interval_covers_zero_at_about_the_nominal_rate():
    covered = []
    for seed in range(200):  # fixed seeds: deterministic, not flaky
        rng = np.random.default_rng(1000 + seed)
        v = _two_methods(rng, 60, 0.0)
        res = paired_mean_differences(v, bootstrap_counts(60, 400, seed))
        covered.append(res["diff_lo"][0] <= 0 <= res["diff_hi"][0])
    rate = float(np.mean(covered))
    assert 0.90 <= rate <= 0.99, rate


def test_paired_mean_differences_uses_shared_queries():
    v = np.array([[1.0, 0.0], [2.0, np.nan], [3.0, 1.0]])
    res = paired_mean_differences(v, bootstrap_counts(3, 20, 0))
    assert res["diff"][0] == pytest.approx(1.5)  # queries 0 and 2 only
    assert res["n_queries"][0] == 2


def test_paired_differences_rows():
    point = np.array([0.3, 0.1, 0.1])
    reps = point + np.random.default_rng(0).normal(0, 0.01, size=(500, 1)) * [1, 1, 1]
    reps[:, 1] += np.random.default_rng(1).normal(0, 0.2, 500)
    rows = paired_differences(point, reps, ["A", "B", "C"])
    assert [(r["setting_a"], r["setting_b"]) for r in rows] == [("A", "B"), ("A", "C"),
                                                                ("B", "C")]
    ac = rows[1]
    assert ac["diff"] == pytest.approx(0.2) and ac["separated"]
    assert ac["diff_lo"] == pytest.approx(0.2) and ac["diff_hi"] == pytest.approx(0.2)
    assert not rows[0]["separated"] and not rows[2]["separated"]  # B is noisy
    with pytest.raises(DataError):
        paired_differences(point, reps[:, :2], ["A", "B", "C"])


def test_rank_agreement_interval_and_p():
    rng = np.random.default_rng(3)
    lds = np.array([0.30, 0.25, 0.20, 0.15, 0.10, 0.05])
    diag = -lds * 2  # orders the methods exactly as LDS
    # clear separation: every replicate keeps the order
    reps_l = lds + rng.normal(0, 0.002, size=(400, 6))
    reps_d = diag + rng.normal(0, 0.002, size=(400, 6))
    a = rank_agreement(-diag, lds, -reps_d, reps_l)
    assert a["value"] == pytest.approx(1.0) and a["lo"] == pytest.approx(1.0)
    assert a["p_exact"] == pytest.approx(1 / 720) and a["n_methods"] == 6
    # LDS noise larger than its spread: the same point value, an interval covering 0
    noisy = lds + rng.normal(0, 0.2, size=(400, 6))
    b = rank_agreement(-diag, lds, -reps_d, noisy, statistic="kendall")
    assert b["value"] == pytest.approx(1.0) and b["lo"] < 0 < b["hi"]
    assert b["n_boot"] == 400
    c = rank_agreement(-diag, lds)
    assert math.isnan(c["lo"]) and c["n_boot"] == 0


def test_diagnostics_bootstrap_equals_diagnose_at_unit_counts():
    rng = np.random.default_rng(5)
    s = rng.normal(size=(80, 1)) + rng.normal(size=(80, 14))
    s[:, 4] = 2.0  # constant column
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        d = diagnose(s)
    got = diagnostics_bootstrap(s, np.ones((1, 14), dtype=np.int64))
    for k in ("r1", "r2_5", "p", "kappa"):
        assert got[k][0] == pytest.approx(getattr(d, k), rel=1e-10), k
    reps = diagnostics_bootstrap(s, bootstrap_counts(14, 50, 0))
    assert reps["r1"].shape == (50,) and np.isfinite(reps["kappa"]).all()
    assert reps["r1"].std() > 0
    with pytest.raises(DataError, match="counts"):
        diagnostics_bootstrap(s, np.ones((2, 13), dtype=np.int64))


def test_bootstrap_counts():
    c = bootstrap_counts(7, 5, 3)
    assert c.shape == (5, 7) and (c.sum(axis=1) == 7).all()
    np.testing.assert_array_equal(c, bootstrap_counts(7, 5, 3))
    assert bootstrap_counts(7, 0).shape == (0, 7)
    lo, hi = percentile_interval(np.zeros((0, 2)))
    assert np.isnan(lo).all() and np.isnan(hi).all()
