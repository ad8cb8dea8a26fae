"""std_euclidean: scale, Gram path against the exact formula, VectorFeature
(aria_tda.similarity.euclidean)."""

from __future__ import annotations

import numpy as np
import pytest

from aria_tda.errors import AriaWarning, ParameterError
from aria_tda.similarity import (
    VectorFeature,
    pairwise_reference,
    prepare_feature,
    standardization_scale,
    std_euclidean_similarity,
)

from ._helpers import CQT, vec_spec


def test_standardization_scale_is_sample_sd_over_rows_with_feature(rng):
    x = rng.normal(3.0, 2.0, (200, 4))
    x[5] = np.nan
    mean, scale, dropped = standardization_scale(x)
    ok = np.delete(x, 5, axis=0)
    np.testing.assert_allclose(scale, ok.std(axis=0, ddof=1))
    np.testing.assert_allclose(mean, ok.mean(axis=0))
    assert not dropped.any()


def test_std_euclidean_single_pair_formula():
    a, b, s = np.array([1.0, 2.0]), np.array([4.0, 6.0]), np.array([3.0, 2.0])
    # ((4-1)/3)^2 + ((6-2)/2)^2 = 1 + 4 -> distance sqrt(5)
    assert std_euclidean_similarity(a, b, s) == pytest.approx(1 / (1 + np.sqrt(5)))
    assert std_euclidean_similarity(a, a, s) == 1.0
    with pytest.raises(ParameterError, match="scale"):
        std_euclidean_similarity(a, b, [0.0, 1.0])


def test_vector_pairwise_equals_reference_incl_near_duplicates(rng):
    x = rng.standard_normal((300, 168)) * rng.uniform(0.1, 50, 168) + rng.uniform(-100, 100, 168)
    x[1] = x[0]  # exact duplicate
    x[2] = x[0] + 1e-9 * rng.standard_normal(168)  # near duplicate: Gram cancellation regime
    x[3] = x[0] + 1e-4 * rng.standard_normal(168)
    pf = prepare_feature(CQT, x)
    assert isinstance(pf, VectorFeature)
    idx = np.r_[0, 1, 2, 3, rng.permutation(np.arange(4, 300))[:60]]
    fast = pf.pairwise(idx)
    ref = pairwise_reference(pf, idx, x)
    np.testing.assert_allclose(fast, ref, rtol=1e-10, atol=0)
    assert fast[0, 1] == 1.0
    # reported numerical accuracy of the Gram path: relative error of the distance <= 1e-8
    d_fast, d_ref = 1 / fast[0, 2] - 1, 1 / ref[0, 2] - 1
    assert abs(d_fast - d_ref) <= 1e-8 * d_ref


def test_vector_similarity_invariant_to_affine_rescaling(rng):
    x = rng.standard_normal((100, 6))
    a = rng.uniform(0.01, 100, 6) * rng.choice([-1, 1], 6)
    b = rng.uniform(-1e3, 1e3, 6)
    spec = vec_spec(6)
    p1, p2 = prepare_feature(spec, x), prepare_feature(spec, x * a + b)
    idx = np.arange(100)
    np.testing.assert_allclose(p1.pairwise(idx), p2.pairwise(idx), rtol=1e-9)


def test_zero_variance_dimensions_dropped_with_warning(rng):
    x = rng.standard_normal((50, 5))
    x[:, 2] = 7.25
    with pytest.warns(AriaWarning, match=r"1 of 5 dimension\(s\) have zero variance"):
        pf = prepare_feature(vec_spec(5), x)
    assert pf.dropped.tolist() == [False, False, True, False, False]
    assert np.isinf(pf.scale[2])
    idx = np.arange(50)
    ref = prepare_feature(vec_spec(4), np.delete(x, 2, axis=1)).pairwise(idx)
    np.testing.assert_allclose(pf.pairwise(idx), ref, rtol=1e-12)
    np.testing.assert_allclose(pf.pairwise(idx), pairwise_reference(pf, idx, x), rtol=1e-10)


def test_constant_feature_gives_similarity_one():
    with pytest.warns(AriaWarning, match="all dimension"):
        pf = prepare_feature(vec_spec(3), np.ones((10, 3)))
    np.testing.assert_array_equal(pf.pairwise(np.arange(10)), 1.0)
    assert pf.group_sum(np.arange(10)) == 45.0


def test_missing_vectors_are_nan_and_partial_nan_warns(rng):
    x = rng.standard_normal((20, 3))
    x[4] = np.nan
    x[9, 1] = np.nan
    with pytest.warns(AriaWarning, match="1 track"):
        pf = prepare_feature(vec_spec(3), x)
    assert pf.valid.sum() == 18
    block = pf.pairwise([4, 9, 0, 1])
    assert np.isnan(block[:2]).all() and np.isnan(block[:, :2]).all()
    assert np.isfinite(block[2:, 2:]).all()
    # the scale ignores missing rows
    np.testing.assert_allclose(pf.scale, np.delete(x, [4, 9], axis=0).std(axis=0, ddof=1))


def test_take_keeps_corpus_scale(rng):
    x = rng.standard_normal((100, 4))
    pf = prepare_feature(vec_spec(4), x)
    rows = np.arange(10)
    sub = pf.take(rows)
    np.testing.assert_array_equal(sub.scale, pf.scale)
    np.testing.assert_allclose(sub.pairwise(np.arange(10)), pf.pairwise(rows))
    ii, jj = np.arange(5), np.arange(5, 10)
    np.testing.assert_allclose(pf.pair_similarity(ii, jj), pf.pairwise(np.arange(10))[ii, jj])
    # an explicit scale reproduces the same similarities
    again = prepare_feature(vec_spec(4), x[:10], scale=pf.scale, mean=pf.mean)
    np.testing.assert_allclose(
        again.pairwise(np.arange(10)), sub.pairwise(np.arange(10)), rtol=1e-12
    )


def test_digest_changes_with_data(rng):
    x = rng.standard_normal((10, 3))
    a, b = prepare_feature(vec_spec(3), x), prepare_feature(vec_spec(3), x)
    assert a.digest == b.digest
    x[0, 0] += 1
    assert prepare_feature(vec_spec(3), x).digest != a.digest
