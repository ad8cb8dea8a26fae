"""Top-K attributed groups and the feature pool (aria_tda.homogeneity.groups)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from aria_tda.errors import AriaWarning, DataError, ParameterError
from aria_tda.homogeneity import feature_pool, homogeneity, null_distribution, top_k_groups
from aria_tda.similarity import prepare_feature

from ._helpers import make_features, topk_reference, vspec


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
    mm = np.load(path, mmap_mode="r")
    np.testing.assert_array_equal(top_k_groups(mm, 50, pool=pool, chunk_rows=33), want)

    class ChunkedSource:  # the ScoreSource protocol: shape + iter_chunks
        shape = s.shape

        def iter_chunks(self, chunk_rows=None):
            for start in range(0, s.shape[0], 17):
                yield start, s[start : start + 17]

    np.testing.assert_array_equal(top_k_groups(ChunkedSource(), 50, pool=pool), want)


def test_top_k_groups_bad_input(rng):
    s = rng.standard_normal((20, 3))
    msg = r"k_max: expected at most the pool size 10 \(of 20 tracks\), got 11"
    with pytest.raises(ParameterError, match=msg):
        top_k_groups(s, 11, pool=np.arange(10))
    s[4, 1] = np.nan
    with pytest.raises(DataError, match="1 NaN score"):
        top_k_groups(s, 3)
    # NaN in a row outside the pool is never read as a score
    assert top_k_groups(s, 3, pool=np.delete(np.arange(20), 4)).shape == (3, 3)
    with pytest.raises(ParameterError, match="2-D"):
        top_k_groups(np.zeros(5), 2)


def test_groups_with_missing_features_are_rejected(rng):
    prepared, raw = make_features(rng, 60)
    x = raw["rhythm"]["onset"].copy()
    x[[3, 8]] = np.nan
    prepared["rhythm"][0] = prepare_feature(vspec("onset", "rhythm", 4), x)
    msg = r"2 of 60 tracks \(3.3%\) lack at least one feature \(onset: 2\)"
    with pytest.warns(AriaWarning, match=msg):
        pool = feature_pool(prepared)
    assert pool.sum() == 58 and not pool[[3, 8]].any()
    with pytest.raises(DataError, match=r"more than max_missing_fraction=0\.01"):
        feature_pool(prepared, max_missing_fraction=0.01)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AriaWarning)
        null = null_distribution(prepared, ks=[5], B=5)
    bad = np.array([[3, 0, 1, 2, 4]])
    msg = r"groups: 1 track\(s\) without feature 'onset' \(e\.g\. row 3\)"
    with pytest.raises(DataError, match=msg):
        homogeneity(bad, prepared, null)
    with pytest.raises(DataError, match="the same track twice"):
        homogeneity(np.array([[0, 1, 1, 2, 4]]), prepared, null)
    with pytest.raises(ParameterError, match="ks: expected values <= the group width 5"):
        homogeneity(np.array([[0, 1, 2, 4, 5]]), prepared, null, ks=[5, 6])
    with pytest.raises(ParameterError, match="K: expected one of the null's K values"):
        homogeneity(np.array([[0, 1, 2, 4, 5]]), prepared, null, ks=[4])
