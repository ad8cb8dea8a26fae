"""Top-K groups, the null and homogeneity on a real Dask cluster equal the single-machine path.

A LocalCluster of two worker *processes* on loopback; identical groups (tie order included),
identical null and homogeneity arrays; a worker killed mid-task changes nothing.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from aria_tda.errors import DataError
from aria_tda.homogeneity import (
    constant_queries,
    homogeneity,
    null_distribution,
    run_homogeneity,
    top_k_groups,
)
from aria_tda.homogeneity.distributed import groups_and_constant_dask
from aria_tda.scores import save_scores
from dasklib import kill_during

from ._helpers import make_features, topk_reference

distributed = pytest.importorskip("dask.distributed")

RESULT_FIELDS = ("g", "z_feature", "g_channel", "z", "pair_rows", "pair_contribution",
                 "pair_similarity", "constant", "null_g", "null_used")


@pytest.fixture
def client(dask_client):
    """The session's LocalCluster (two worker processes on loopback; tests/conftest.py)."""
    return dask_client


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(7)
    n, t = 140, 23
    prepared, _ = make_features(rng, n, clusters=rng.integers(0, 5, n))
    s = rng.standard_normal((n, t))
    s[:, 4] = 2.5  # constant query
    s[:9, 5] = 3.0  # ties: the lower rows win
    s[::3, 6] = np.round(s[::3, 6])
    return prepared, s


def _same_result(a, b):
    for f in RESULT_FIELDS:
        np.testing.assert_array_equal(getattr(a, f), getattr(b, f), err_msg=f)
    assert (a.ks, a.channels, a.features, a.evidence_k, a.n_unique_groups, a.B) == (
        b.ks, b.channels, b.features, b.evidence_k, b.n_unique_groups, b.B)


def test_top_k_identical_with_ties_pool_and_files(data, tmp_path, client):
    _, s = data
    pool = np.ones(s.shape[0], dtype=bool)
    pool[[0, 3, 50]] = False
    for src in (s, save_scores(s.astype(np.float32), tmp_path / "st.npy")):
        for kw in ({}, {"pool": pool}, {"chunk_rows": 13}):
            want, wscores = top_k_groups(src, 12, return_scores=True, **kw)
            got, gscores = top_k_groups(src, 12, return_scores=True, client=client, **kw)
            np.testing.assert_array_equal(got, want)
            np.testing.assert_array_equal(gscores, wscores)
    np.testing.assert_array_equal(top_k_groups(s, 12, client=client), topk_reference(s, 12))
    got, const = groups_and_constant_dask(s, 12, pool, client)
    np.testing.assert_array_equal(const, constant_queries(s, pool=pool))
    assert const[4] and const.sum() == 1


def test_top_k_nan_is_the_local_error(data, client):
    _, s = data
    bad = s.copy()
    bad[30, 17] = np.nan
    with pytest.raises(DataError) as local:
        top_k_groups(bad, 5)
    with pytest.raises(DataError) as dist:
        top_k_groups(bad, 5, client=client)
    assert str(dist.value) == str(local.value)


def test_null_and_homogeneity_identical(data, client):
    prepared, s = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = null_distribution(prepared, ks=[3, 8, 15], B=25, seed=4)
        got = null_distribution(prepared, ks=[3, 8, 15], B=25, seed=4, client=client)
    for f in ("g", "mu", "sigma", "used", "g_channel", "mu_c", "sigma_c", "pool"):
        np.testing.assert_array_equal(getattr(got, f), getattr(want, f), err_msg=f)
    groups = top_k_groups(s, 15)
    const = constant_queries(s)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = homogeneity(groups, prepared, want, evidence_k=8, n_pairs=5, constant=const)
        b = homogeneity(groups, prepared, want, evidence_k=8, n_pairs=5, constant=const,
                        client=client)
    _same_result(b, a)


def test_run_homogeneity_identical(data, tmp_path, client):
    prepared, s = data
    path = save_scores(s, tmp_path / "st.npy")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want, wnull, wgroups = run_homogeneity(s, prepared, ks=[4, 10], B=20, seed=2,
                                               n_pairs=4)
        got, gnull, ggroups = run_homogeneity(path, prepared, ks=[4, 10], B=20, seed=2,
                                              n_pairs=4, client=client)
    np.testing.assert_array_equal(ggroups, wgroups)
    np.testing.assert_array_equal(gnull.g, wnull.g)
    _same_result(got, want)
    assert got.n_constant_excluded == 1


@pytest.mark.slow
def test_worker_killed_mid_task(data, client):
    prepared, s = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want, wnull, _ = run_homogeneity(s, prepared, ks=[4, 10], B=20, seed=2)

    def run():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return run_homogeneity(s, prepared, ks=[4, 10], B=20, seed=2, client=client)

    got, gnull, _ = kill_during(client, run, delay="0.3")
    np.testing.assert_array_equal(gnull.g, wnull.g)
    _same_result(got, want)
