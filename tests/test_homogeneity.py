"""Homogeneity core: top-K groups, null, z-scores, K-sweep, summaries, bad input."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from aria.errors import AriaWarning, DataError, ManifestMismatchError, ParameterError
from aria.features.registry import FeatureSpec
from aria.homogeneity import (
    NullDistribution,
    feature_pool,
    homogeneity,
    null_distribution,
    run_homogeneity,
    summarize,
    top_k_groups,
)
from aria.similarity import pairwise_reference, prepare_feature


def vspec(name: str, channel: str, dim: int) -> FeatureSpec:
    return FeatureSpec(name, channel, "audio", "vector", dim, "std_euclidean", "audio", "test")


def sspec(name: str, channel: str) -> FeatureSpec:
    return FeatureSpec(name, channel, "audio", "sequence", None, "chord_lcs", "audio", "test")


def make_features(rng, n, *, clusters=None):
    """Three channels; with ``clusters`` (n,) the 'harmony' features are clustered."""
    raw = {
        "rhythm": {"onset": rng.standard_normal((n, 4)), "beat": rng.random((n, 3))},
        "harmony": {
            "chroma": rng.standard_normal((n, 5)),
            "chords": [rng.integers(0, 12, rng.integers(0, 25)) for _ in range(n)],
        },
        "timbre": {"mfcc": rng.exponential(size=(n, 2))},
    }
    if clusters is not None:
        n_cl = int(clusters.max()) + 1
        centres = rng.standard_normal((n_cl, 5)) * 4
        raw["harmony"]["chroma"] = centres[clusters] + rng.standard_normal((n, 5))
        motifs = [rng.integers(0, 12, 16) for _ in range(n_cl)]
        chords = []
        for c in clusters:
            s = motifs[c].copy()
            flip = rng.random(16) < 0.2
            s[flip] = rng.integers(0, 12, flip.sum())
            chords.append(s)
        raw["harmony"]["chords"] = chords
    prepared = {}
    for ch, feats in raw.items():
        prepared[ch] = [
            prepare_feature(sspec(name, ch) if isinstance(v, list) else vspec(name, ch, v.shape[1]), v)
            for name, v in feats.items()
        ]
    return prepared, raw


def topk_reference(s, k, pool=None):
    """Full sort per column: decreasing score, then increasing row index."""
    n, t = s.shape
    rows = np.arange(n) if pool is None else np.flatnonzero(pool)
    out = np.empty((t, k), dtype=np.int64)
    for q in range(t):
        order = np.lexsort((rows, -s[rows, q]))
        out[q] = rows[order[:k]]
    return out


# ----------------------------------------------------------------------------- top-K groups


def test_top_k_groups_equals_full_sort_with_ties(rng):
    s = rng.integers(0, 5, (300, 40)).astype(np.float32)  # many ties
    want = topk_reference(s, 25)
    np.testing.assert_array_equal(top_k_groups(s, 25), want)
    np.testing.assert_array_equal(top_k_groups(s, 25, chunk_rows=7), want)
    g, sc = top_k_groups(s, 25, chunk_rows=64, return_scores=True)
    np.testing.assert_array_equal(g, want)
    np.testing.assert_array_equal(sc, np.take_along_axis(s.T, want, axis=1))


def test_top_k_groups_pool_and_sources(rng, tmp_path):
    s = rng.standard_normal((200, 30))
    pool = rng.random(200) < 0.6
    want = topk_reference(s, 50, pool)
    np.testing.assert_array_equal(top_k_groups(s, 50, pool=pool), want)
    np.testing.assert_array_equal(top_k_groups(s, 50, pool=np.flatnonzero(pool)), want)
    path = tmp_path / "s_track.npy"
    np.save(path, s)
    np.testing.assert_array_equal(top_k_groups(np.load(path, mmap_mode="r"), 50, pool=pool, chunk_rows=33), want)

    class ChunkedSource:  # the ScoreSource protocol: shape + iter_chunks
        shape = s.shape

        def iter_chunks(self, chunk_rows=None):
            for start in range(0, s.shape[0], 17):
                yield start, s[start : start + 17]

    np.testing.assert_array_equal(top_k_groups(ChunkedSource(), 50, pool=pool), want)


def test_top_k_groups_bad_input(rng):
    s = rng.standard_normal((20, 3))
    with pytest.raises(ParameterError, match=r"k_max: expected at most the pool size 10 \(of 20 tracks\), got 11"):
        top_k_groups(s, 11, pool=np.arange(10))
    s[4, 1] = np.nan
    with pytest.raises(DataError, match="1 NaN score"):
        top_k_groups(s, 3)
    # NaN in a row outside the pool is never read as a score
    assert top_k_groups(s, 3, pool=np.delete(np.arange(20), 4)).shape == (3, 3)
    with pytest.raises(ParameterError, match="2-D"):
        top_k_groups(np.zeros(5), 2)


# ----------------------------------------------------------------------------------- null


def test_null_matches_direct_computation(rng):
    prepared, raw = make_features(rng, 150)
    null = null_distribution(prepared, ks=[5, 12], B=30, seed=7, n_jobs=2)
    # redraw the documented sequence of random groups and recompute g_d exactly
    draw = np.random.default_rng(7)
    rows = np.arange(150)
    for a, k in enumerate([5, 12]):
        groups = [draw.choice(rows, k, replace=False) for _ in range(30)]
        f = 0
        for ch, feats in prepared.items():
            for pf, values in zip(feats, raw[ch].values(), strict=True):
                g = [np.triu(pairwise_reference(pf, grp, values), 1).sum() / (k * (k - 1) / 2) for grp in groups]
                np.testing.assert_allclose(null.g[a, f], g, rtol=1e-10)
                f += 1
    np.testing.assert_allclose(null.mu, null.g.mean(axis=2))
    np.testing.assert_allclose(null.sigma, null.g.std(axis=2, ddof=1))
    # channel null: mean of standardised features on the same groups -> mean 0 by construction
    np.testing.assert_allclose(null.mu_c, 0.0, atol=1e-12)
    zf = (null.g - null.mu[..., None]) / null.sigma[..., None]
    np.testing.assert_allclose(null.g_channel[:, 1], zf[:, 2:4].mean(axis=1))
    assert null.to_frame().shape == (2 * (5 + 3), 6)


def test_null_reproducible_storable_and_checked(rng, tmp_path):
    prepared, _ = make_features(rng, 120)
    a = null_distribution(prepared, ks=[10], B=20, seed=3)
    b = null_distribution(prepared, ks=[10], B=20, seed=3, n_jobs=1)
    np.testing.assert_array_equal(a.g, b.g)
    path = a.save(tmp_path / "null.npz")
    assert (tmp_path / "null.npz.manifest.json").is_file()
    c = NullDistribution.load(path, prepared=prepared)
    np.testing.assert_array_equal(c.g, a.g)
    np.testing.assert_array_equal(c.sigma_c, a.sigma_c)
    assert c.ks == (10,) and c.B == 20 and c.seed == 3 and c.features == a.features
    other, _ = make_features(np.random.default_rng(99), 120)
    with pytest.raises(ManifestMismatchError, match="feature data/scale differ"):
        NullDistribution.load(path, prepared=other)
    with pytest.raises(ManifestMismatchError, match="pool"):
        a.check(prepared, pool=np.arange(100))


def test_null_bad_input(rng):
    prepared, _ = make_features(rng, 40)
    with pytest.raises(ParameterError, match="B: expected an integer >= 2, got 1"):
        null_distribution(prepared, ks=[5], B=1)
    with pytest.raises(ParameterError, match="ks: expected group sizes at most the pool size 40"):
        null_distribution(prepared, ks=[5, 41], B=5)
    with pytest.raises(ParameterError, match=r"ks\[0\]: expected an integer >= 2"):
        null_distribution(prepared, ks=[1], B=5)
    with pytest.raises(ParameterError, match="prepared"):
        null_distribution({}, ks=[5])


def test_constant_feature_left_out_of_channel(rng):
    prepared, _ = make_features(rng, 80)
    with pytest.warns(AriaWarning, match="all dimension"):
        const = prepare_feature(vspec("flat", "timbre", 2), np.ones((80, 2)))
    prepared["timbre"].append(const)
    with pytest.warns(AriaWarning, match="'flat' has the same g_d in every random group"):
        null = null_distribution(prepared, ks=[10], B=20, seed=0)
    assert not null.used[0, -1] and null.used[0, :-1].all()
    groups = top_k_groups(rng.standard_normal((80, 6)), 10)
    res = homogeneity(groups, prepared, null, n_pairs=3)
    assert np.isnan(res.z_feature[0, -1]).all()
    np.testing.assert_allclose(res.g_channel[0, 2], res.z_feature[0, 4])  # timbre = mfcc only
    assert np.isfinite(res.z).all()
    # a channel made only of a constant feature: z is NaN (warned), no evidence pairs
    only_const = {"rhythm": prepared["rhythm"], "flat": [const]}
    with pytest.warns(AriaWarning, match="same g_d"):
        null2 = null_distribution(only_const, ks=[10], B=20, seed=0)
    with pytest.warns(AriaWarning, match="channel 'flat' has no informative feature"):
        res2 = homogeneity(groups, only_const, null2, n_pairs=3)
    assert np.isnan(res2.z[0, 1]).all() and np.isfinite(res2.z[0, 0]).all()
    assert (res2.pair_rows[:, 1] == -1).all() and np.isnan(res2.pair_contribution[:, 1]).all()
    assert set(res2.pairs_frame()["channel"]) == {"rhythm"}
    summ = res2.summary(n_boot=50)
    assert summ.loc[summ["channel"] == "flat", "n_queries"].item() == 0


# ---------------------------------------------------------------------------- homogeneity


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
        np.testing.assert_allclose(res.z[:, c], (gc - null.mu_c[:, c, None]) / null.sigma_c[:, c, None])
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
    res, _, _ = run_homogeneity(s, prepared, ks=[20, 50, 100], B=200, seed=5, evidence_k=50, n_pairs=5)
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
                (pf.pairwise(grp) - null.mu[a, m]) / null.sigma[a, m] for pf, m in zip(feats, members, strict=True)
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
    assert set(df.columns) >= {"K", "query", "channel", "rank", "track_a", "track_b", "similarity", "contribution"}
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


def test_groups_with_missing_features_are_rejected(rng):
    prepared, raw = make_features(rng, 60)
    x = raw["rhythm"]["onset"].copy()
    x[[3, 8]] = np.nan
    prepared["rhythm"][0] = prepare_feature(vspec("onset", "rhythm", 4), x)
    with pytest.warns(AriaWarning, match=r"2 of 60 tracks \(3.3%\) lack at least one feature \(onset: 2\)"):
        pool = feature_pool(prepared)
    assert pool.sum() == 58 and not pool[[3, 8]].any()
    with pytest.raises(DataError, match=r"more than max_missing_fraction=0\.01"):
        feature_pool(prepared, max_missing_fraction=0.01)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AriaWarning)
        null = null_distribution(prepared, ks=[5], B=5)
    bad = np.array([[3, 0, 1, 2, 4]])
    with pytest.raises(DataError, match=r"groups: 1 track\(s\) without feature 'onset' \(e\.g\. row 3\)"):
        homogeneity(bad, prepared, null)
    with pytest.raises(DataError, match="the same track twice"):
        homogeneity(np.array([[0, 1, 1, 2, 4]]), prepared, null)
    with pytest.raises(ParameterError, match="ks: expected values <= the group width 5"):
        homogeneity(np.array([[0, 1, 2, 4, 5]]), prepared, null, ks=[5, 6])
    with pytest.raises(ParameterError, match="K: expected one of the null's K values"):
        homogeneity(np.array([[0, 1, 2, 4, 5]]), prepared, null, ks=[4])


# -------------------------------------------------------------------------------- summary


def test_summarize_point_values_and_intervals(rng):
    z = np.array([-1.0, 0.5, 2.0, 3.0, np.nan])
    out = summarize(z, n_boot=500, seed=1)
    assert out["zbar"] == pytest.approx(1.125)
    assert out["pos"] == pytest.approx(0.75) and out["sig"] == pytest.approx(0.5)
    assert out["n_queries"] == 4
    assert out["zbar_lo"] <= out["zbar"] <= out["zbar_hi"]
    big = rng.standard_normal((4000, 2)) + np.array([0.0, 0.3])
    s = summarize(big, n_boot=400, seed=0)
    se = 1 / np.sqrt(4000)
    np.testing.assert_allclose(s["zbar_hi"] - s["zbar_lo"], 2 * 1.96 * se, rtol=0.15)
    assert s["zbar_lo"][1] > 0.2 and s["zbar_hi"][0] < 0.1
    again = summarize(big, n_boot=400, seed=0)
    np.testing.assert_array_equal(again["zbar_lo"], s["zbar_lo"])
    with pytest.raises(ParameterError, match="level"):
        summarize(z, level=1.0)
