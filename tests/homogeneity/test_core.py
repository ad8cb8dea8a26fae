"""Homogeneity of attributed groups: z-scores, K-sweep, evidence pairs (homogeneity.core)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from aria_tda.errors import AriaWarning, ParameterError
from aria_tda.homogeneity import (
    constant_queries,
    homogeneity,
    null_distribution,
    run_homogeneity,
    top_k_groups,
)
from aria_tda.similarity import pairwise_reference

from ._helpers import make_features, topk_reference


def test_k_sweep_prefix_sums_equal_direct_recomputation(rng):
    n = 200
    prepared, raw = make_features(rng, n)
    ks = [4, 9, 20, 31]
    null = null_distribution(prepared, ks=ks, B=10, seed=1)
    groups = top_k_groups(rng.standard_normal((n, 12)), 31)
    res = homogeneity(groups, prepared, null, n_pairs=0)
    f = 0
    for ch, feats in prepared.items():
        for pf, values in zip(feats, raw[ch].values(), strict=True):
            for q in range(groups.shape[0]):
                block = pairwise_reference(pf, groups[q], values)
                for a, k in enumerate(ks):
                    direct = np.triu(block[:k, :k], 1).sum() / (k * (k - 1) / 2)
                    assert res.g[a, f, q] == pytest.approx(direct, rel=1e-12)
            f += 1
    # the same z from separate one-K runs on truncated groups
    for k in ks:
        one = homogeneity(groups[:, :k], prepared, null, ks=[k], n_pairs=0)
        np.testing.assert_allclose(one.z[0], res.z[ks.index(k)], rtol=1e-12)


def test_z_follows_equation_zc(rng):
    prepared, _ = make_features(rng, 100)
    null = null_distribution(prepared, ks=[10, 20], B=25, seed=2)
    groups = top_k_groups(rng.standard_normal((100, 9)), 20)
    res = homogeneity(groups, prepared, null)
    zf = (res.g - null.mu[:, :, None]) / null.sigma[:, :, None]
    np.testing.assert_allclose(res.z_feature, zf)
    for c, members in enumerate([[0, 1], [2, 3], [4]]):
        gc = zf[:, members].mean(axis=1)
        np.testing.assert_allclose(
            res.z[:, c], (gc - null.mu_c[:, c, None]) / null.sigma_c[:, c, None]
        )
    np.testing.assert_array_equal(res.z_at(20, "harmony"), res.z[1, 1])


def test_random_scores_are_calibrated(rng):
    # Random S_track makes every A_K(q) a uniform random K-subset: z_c(q) then has the null's
    # distribution, so zbar ~ 0 with SE sqrt(1/T + 1/B) (query noise + the shared error of
    # the estimated null mean); Pos/Sig deviate from 50% / 2.5% by binomial noise
    # (SE 0.011 / 0.0035 at T=2000), that same null error, and the mild non-normality of a
    # mean of dependent pairwise similarities (measured over 6 seeds: |Pos-0.5| <= 0.04,
    # Sig in [0.018, 0.03]). Tolerances are 4 SE for zbar and these envelopes plus margin.
    n, t, b = 2000, 2000, 1000
    prepared, _ = make_features(rng, n)
    s = rng.standard_normal((n, t)).astype(np.float32)
    res, null, groups = run_homogeneity(s, prepared, ks=[20, 50], B=b, seed=11, n_pairs=0)
    assert groups.shape == (t, 50) and null.B == b
    summ = res.summary(n_boot=200)
    tol = 4 * np.sqrt(1 / t + 1 / b)
    assert (summ["zbar"].abs() < tol).all(), summ
    assert ((summ["pos"] - 0.5).abs() < 0.06).all(), summ
    assert ((summ["sig"] - 0.025).abs() < 0.015).all(), summ
    assert np.all(summ["zbar_lo"] <= summ["zbar"]) and np.all(summ["zbar"] <= summ["zbar_hi"])


def test_planted_cluster_structure_shows_on_its_channel_only(rng):
    n, t, n_cl = 1200, 150, 8
    clusters = rng.integers(0, n_cl, n)
    prepared, _ = make_features(rng, n, clusters=clusters)
    q_cluster = rng.integers(0, n_cl, t)
    s = (clusters[:, None] == q_cluster[None, :]) * 3.0 + rng.standard_normal((n, t))
    res, _, _ = run_homogeneity(
        s, prepared, ks=[20, 50, 100], B=200, seed=5, evidence_k=50, n_pairs=5
    )
    summ = res.summary(n_boot=100).set_index(["K", "channel"])
    for k in (20, 50, 100):
        assert summ.loc[(k, "harmony"), "zbar"] > 5
        assert summ.loc[(k, "harmony"), "sig"] > 0.9
        for other in ("rhythm", "timbre"):
            assert abs(summ.loc[(k, other), "zbar"]) < 0.6
    # the evidence pairs of the harmony channel come from the query's cluster
    rows = res.pair_rows[:, 1, 0]
    same = clusters[rows[:, 0]] == clusters[rows[:, 1]]
    assert same.mean() > 0.95


def test_evidence_pairs_decompose_channel_score(rng):
    prepared, _ = make_features(rng, 90)
    null = null_distribution(prepared, ks=[6, 15], B=15, seed=4)
    groups = top_k_groups(rng.standard_normal((90, 5)), 15)
    res = homogeneity(groups, prepared, null, evidence_k=15, n_pairs=200)
    a = 1  # K = 15
    for q in range(5):
        grp = groups[q]
        for c, members in enumerate([[0, 1], [2, 3], [4]]):
            feats = [prepared[res.channels[c]][i] for i in range(len(members))]
            e = sum(
                (pf.pairwise(grp) - null.mu[a, m]) / null.sigma[a, m]
                for pf, m in zip(feats, members, strict=True)
            ) / len(members)
            iu = np.triu_indices(15, 1)
            # mean contribution over the group's pairs is exactly g~_c(q)
            assert e[iu].mean() == pytest.approx(res.g_channel[a, c, q], rel=1e-9, abs=1e-9)
            order = np.argsort(-e[iu], kind="stable")[:105]
            got = res.pair_contribution[q, c]
            np.testing.assert_allclose(got[:105], e[iu][order], rtol=1e-9, atol=1e-9)
            assert np.isnan(got[105:]).all()  # only 105 pairs exist
            pr = res.pair_rows[q, c, :105]
            raw_mean = np.mean([pf.pair_similarity(pr[:, 0], pr[:, 1]) for pf in feats], axis=0)
            np.testing.assert_allclose(res.pair_similarity[q, c, :105], raw_mean)
    df = res.pairs_frame(track_ids=np.array([f"t{i}" for i in range(90)]))
    assert set(df.columns) >= {
        "K",
        "query",
        "channel",
        "rank",
        "track_a",
        "track_b",
        "similarity",
        "contribution",
    }
    assert len(df) == 5 * 3 * 105 and df["track_a"].str.startswith("t").all()


def test_identical_groups_evaluated_once_and_threads_agree(rng):
    prepared, _ = make_features(rng, 100)
    null = null_distribution(prepared, ks=[10, 30], B=10, seed=0)
    base = top_k_groups(rng.standard_normal((100, 4)), 30)
    groups = base[[0, 1, 0, 2, 3, 1, 0]]
    r1 = homogeneity(groups, prepared, null, n_jobs=1)
    r2 = homogeneity(groups, prepared, null, n_jobs=2)
    assert r1.n_unique_groups == 4
    np.testing.assert_array_equal(r1.z, r2.z)
    np.testing.assert_array_equal(r1.pair_rows, r2.pair_rows)
    np.testing.assert_array_equal(r1.z[..., 0], r1.z[..., 2])
    ref = homogeneity(base[[0]], prepared, null)
    np.testing.assert_allclose(r1.z[..., 0], ref.z[..., 0], rtol=1e-12)


def test_any_score_matrix_residual_style(rng, tmp_path):
    # the pipeline only sees S_track: a residual (S - sigma1 u1 v1^T) goes through unchanged
    n, t = 150, 20
    prepared, _ = make_features(rng, n)
    s = rng.standard_normal((n, t)) + 5.0 * np.outer(rng.standard_normal(n), np.ones(t))
    u, sv, vt = np.linalg.svd(s, full_matrices=False)
    resid = s - sv[0] * np.outer(u[:, 0], vt[0])
    res, null, g1 = run_homogeneity(s, prepared, ks=[10, 20], B=20, seed=0)
    path = tmp_path / "resid.npy"
    np.save(path, resid)
    res2, _, g2 = run_homogeneity(np.load(path, mmap_mode="r"), prepared, ks=[10, 20], null=null)
    np.testing.assert_array_equal(g2, topk_reference(resid, 20))
    assert not np.array_equal(g1, g2)  # the rank-1 axis dominated the original ranking
    assert res2.z.shape == res.z.shape


# ------------------------------------ issue 13 item 3: constant query columns are excluded


def test_constant_query_column_is_excluded_not_scored(rng):
    # tracks are sorted by cluster, so the first K rows (the tie rule's "top K" of a constant
    # column) are one cluster: scored, that query would get a large z and inflate z-bar
    n, t, n_cl = 300, 40, 6
    clusters = np.sort(rng.integers(0, n_cl, n))
    prepared, _ = make_features(rng, n, clusters=clusters)
    s = rng.standard_normal((n, t))
    s[:, 7] = 0.25  # a degenerate query: every track scores the same
    with pytest.warns(
        AriaWarning,
        match=r"1 of 40 queries have a constant score column "
        r"\(column 7\)",
    ) as rec:
        res, _, groups = run_homogeneity(s, prepared, ks=[10, 20], B=50, seed=0, n_pairs=3)
    assert sum("constant score column" in str(w.message) for w in rec) == 1
    np.testing.assert_array_equal(groups[7], np.arange(20))  # the tie rule's first rows
    assert res.constant is not None and res.constant.tolist() == [q == 7 for q in range(t)]
    assert np.isnan(res.z[..., 7]).all() and np.isnan(res.g[..., 7]).all()
    assert (res.pair_rows[7] == -1).all() and 7 not in set(res.pairs_frame()["query"])
    summ = res.summary(n_boot=0)
    assert (summ["n_queries"] == t - 1).all() and (summ["n_constant_excluded"] == 1).all()
    others = np.delete(np.arange(t), 7)
    k20 = summ[summ["K"] == 20].set_index("channel")
    np.testing.assert_allclose(k20.loc["harmony", "zbar"], res.z_at(20, "harmony")[others].mean())
    # what the old code did: the constant query scored from rows 0..K-1 (one cluster)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        null = null_distribution(prepared, ks=[10, 20], B=50, seed=0)
    scored = homogeneity(groups, prepared, null, n_pairs=0)
    assert scored.z_at(20, "harmony")[7] > 3
    assert scored.summary(n_boot=0)["n_constant_excluded"].eq(0).all()


def test_constant_queries_detection(rng):
    s = rng.standard_normal((50, 5)).astype(np.float32)
    s[:, 1] = 3.0
    s[:, 2] = np.float32(1.0) + np.float32(1e-7) * rng.integers(0, 3, 50)  # rounding noise
    s[:, 3] = 0.0
    s[10:, 4] = 2.0  # constant only over the pool rows 10..49
    got = constant_queries(s, pool=np.arange(10, 50), chunk_rows=7)
    assert got.tolist() == [False, True, True, True, True]
    assert constant_queries(s).tolist() == [False, True, True, True, False]
    with pytest.raises(ParameterError, match="constant: expected a boolean mask of the 3"):
        prepared, _ = make_features(rng, 30)
        null = null_distribution(prepared, ks=[5], B=5)
        homogeneity(
            top_k_groups(rng.standard_normal((30, 3)), 5),
            prepared,
            null,
            constant=np.zeros(4, bool),
        )
