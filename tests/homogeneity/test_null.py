"""The null distribution of homogeneity (aria_tda.homogeneity.null)."""

from __future__ import annotations

import numpy as np
import pytest

from aria_tda.errors import AriaWarning, ManifestMismatchError, ParameterError
from aria_tda.homogeneity import NullDistribution, homogeneity, null_distribution, top_k_groups
from aria_tda.similarity import pairwise_reference, prepare_feature

from ._helpers import make_features, vspec


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
                g = [
                    np.triu(pairwise_reference(pf, grp, values), 1).sum() / (k * (k - 1) / 2)
                    for grp in groups
                ]
                np.testing.assert_allclose(null.g[a, f], g, rtol=1e-10)
                f += 1
    np.testing.assert_allclose(null.mu, null.g.mean(axis=2))
    np.testing.assert_allclose(null.sigma, null.g.std(axis=2, ddof=1))
    # channel null: mean of standardised features on the same groups -> mean 0 by construction
    np.testing.assert_allclose(null.mu_c, 0.0, atol=1e-12)
    zf = (null.g - null.mu[..., None]) / null.sigma[..., None]
    np.testing.assert_allclose(null.g_channel[:, 1], zf[:, 2:4].mean(axis=1))
    assert null.to_frame().shape == (2 * (5 + 3), 7)  # + mc_se (issue 12)


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
