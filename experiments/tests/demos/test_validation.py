"""aria_tda_experiments.validation: one shared bootstrap for paired LDS / diagnostic differences and
the agreement's intervals, on a synthetic LDS ground truth with a known best method."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from aria_tda.errors import DataError
from aria_tda_experiments.validation import agreement_table, compare_methods


@pytest.fixture(scope="module")
def truth():
    rng = np.random.default_rng(0)
    n, t, s = 60, 20, 16
    true = rng.normal(size=(n, t))
    subsets = np.stack([np.sort(rng.choice(n, n // 2, replace=False)) for _ in range(s)])
    mask = np.zeros((s, n))
    np.put_along_axis(mask, subsets, 1.0, axis=1)
    outputs = mask @ true + 2.0 * rng.normal(size=(s, t))
    scores = {
        "good": true + 0.3 * rng.normal(size=(n, t)),
        "noise": rng.normal(size=(n, t)),
    }
    scores["good_copy"] = scores["good"].copy()
    return scores, subsets, outputs


def test_paired_lds_separates_a_real_difference(truth):
    scores, subsets, outputs = truth
    c = compare_methods(scores, subsets, outputs, n_boot=300, seed=1)
    assert c.lds_replicates.shape == (300, 3) and c.resampled == "queries+subsets"
    rows = pd.DataFrame(c.paired_rows())
    assert set(rows["quantity"]) == {"lds", "r1", "r2_5", "p", "kappa"}
    lds = rows[rows.quantity == "lds"].set_index(["setting_a", "setting_b"])
    good_noise = lds.loc[("good", "noise")]
    assert good_noise["diff"] > 0.3 and good_noise["separated"] and good_noise["diff_lo"] > 0
    same = lds.loc[("good", "good_copy")]  # identical scores: a zero-width interval at 0
    assert same["diff"] == 0 and not same["separated"]
    # diagnostic replicates are recentred: duplicated query columns inflate r1 of a resample
    assert (c.diagnostic_bias["r1"] > 0).all()
    np.testing.assert_allclose(c.diagnostic_replicates["r1"].mean(axis=0), c.diagnostics["r1"])
    vs = c.versus_best()
    assert vs["good"]["best"] == "good" and vs["noise"]["separated"]
    assert vs["noise"]["diff_hi"] < 0
    # queries only: still paired, a different replicate set
    q = compare_methods(scores, subsets, outputs, n_boot=50, seed=1, resample_subsets=False)
    assert q.resampled == "queries" and q.lds == pytest.approx(c.lds)


def test_agreement_table_has_intervals_and_exact_p(truth):
    scores, subsets, outputs = truth
    c = compare_methods(scores, subsets, outputs, n_boot=200, seed=2)
    lds = dict(zip(c.methods, c.lds, strict=True))
    diags = {m: {d: float(c.diagnostics[d][i]) for d in c.diagnostics}
             for i, m in enumerate(c.methods)}
    t = agreement_table(lds, diags, c)
    for col in ("spearman_lo", "spearman_hi", "spearman_p_exact", "kendall_lo", "kendall_hi",
                "kendall_p_exact", "n_methods", "n_boot"):
        assert col in t.columns
    assert (t["n_methods"] == 3).all()
    ok = t[np.isfinite(t["spearman"])]
    assert len(ok)
    assert (ok["spearman_lo"] <= ok["spearman"] + 1e-12).all()
    assert (ok["spearman_hi"] >= ok["spearman"] - 1e-12).all()
    # with 3 methods the smallest exact p is 1/3! and p takes values k/6
    assert ((ok["spearman_p_exact"] * 6).round(9) % 1 == 0).all()
    assert ok["spearman_p_exact"].min() >= 1 / 6 - 1e-12
    plain = agreement_table(lds, diags)
    assert plain["spearman_lo"].isna().all() and not plain["spearman_p_exact"].isna().all()


def test_agreement_table_undefined_for_two_methods():
    t = agreement_table({"A": 0.1, "B": 0.2}, {m: {d: 0.5 for d in ("r1", "r2_5", "p", "kappa")}
                                              for m in "AB"})
    assert t["spearman"].isna().all() and math.isnan(t["kendall_p_exact"].iloc[0])


def test_paired_contrast_reads_either_order_and_names_a_missing_pair():
    from aria_tda_experiments.validation import paired_contrast

    paired = pd.DataFrame([
        {"quantity": "lds", "setting_a": "TRAK", "setting_b": "GradDot", "diff": 0.04,
         "diff_lo": 0.01, "diff_hi": 0.07, "separated": True},
        {"quantity": "r1", "setting_a": "TRAK", "setting_b": "GradDot", "diff": -0.2,
         "diff_lo": -0.3, "diff_hi": 0.1, "separated": False},
    ])
    ab = paired_contrast(paired, "TRAK", "GradDot")
    assert ab == {"a": "TRAK", "b": "GradDot", "diff": 0.04, "lo": 0.01, "hi": 0.07,
                  "separated": True}
    ba = paired_contrast(paired, "GradDot", "TRAK")
    assert ba["diff"] == -0.04 and (ba["lo"], ba["hi"]) == (-0.07, -0.01) and ba["separated"]
    r1 = paired_contrast(paired, "GradDot", "TRAK", quantity="r1")
    assert r1["diff"] == 0.2 and (r1["lo"], r1["hi"]) == (-0.1, 0.3) and not r1["separated"]
    with pytest.raises(DataError, match="TracIn"):
        paired_contrast(paired, "TracIn", "TRAK")


def test_a_diagnostic_equal_to_rounding_for_every_method_is_not_ranked():
    """p of column-centred matrices is 0 to ~1e-33 for every method: its order is noise, so
    no agreement is reported for it (the planted audio study once ranked such values)."""
    lds = {"A": 0.3, "B": 0.2, "C": 0.1, "D": 0.05}
    diag = {m: {"r1": r, "r2_5": 0.2, "kappa": r / 2, "p": noise}
            for (m, r), noise in zip({"A": 0.1, "B": 0.2, "C": 0.3, "D": 0.4}.items(),
                                     (1.4e-33, 2.2e-33, 1.7e-33, 1.5e-33), strict=True)}
    t = agreement_table(lds, diag).set_index("diagnostic")
    assert math.isnan(t.loc["p", "spearman"]) and math.isnan(t.loc["p", "kendall"])
    assert t.loc["r1", "spearman"] == pytest.approx(1.0)
