"""Leading singular triple and the streamed rank-1 residual (paper §4.4)."""

from __future__ import annotations

import numpy as np
import pytest

from aria_tda.diagnostics import diagnose
from aria_tda.errors import DataError, ParameterError
from aria_tda.scores import Rank1, rank1, residual, save_scores
from aria_tda.scores.lowrank import fix_sign, top_eigenpairs


def svd_rank1(s):
    u, sv, vt = np.linalg.svd(s, full_matrices=False)
    sign = fix_sign(vt[0])
    return sv, u[:, 0] * sign, vt[0] * sign


def test_rank1_matches_svd(rng, tmp_path):
    s = rng.standard_normal((300, 8)) + np.outer(rng.random(300), rng.random(8)) * 4
    sv, u1, v1 = svd_rank1(s)
    path = save_scores(s, tmp_path / "s.npy")
    for src in (s, path):
        r = rank1(src, chunk_rows=33)
        assert r.sigma1 == pytest.approx(sv[0], rel=1e-12)
        np.testing.assert_allclose(r.v1, v1, atol=1e-10)
        np.testing.assert_allclose(r.u1, u1, atol=1e-10)
        assert r.v1.sum() >= 0
        assert np.linalg.norm(r.u1) == pytest.approx(1.0)


def test_residual_rows_and_spectrum(rng, tmp_path):
    s = rng.standard_normal((200, 6)) @ np.diag([5, 3, 2, 1, 1, 0.5]) + 2
    sv, u1, v1 = svd_rank1(s)
    res = residual(save_scores(s, tmp_path / "s.npy"), chunk_rows=17)
    assert res.shape == s.shape and res.block_dtype == np.float64
    expected = s - sv[0] * np.outer(u1, v1)
    np.testing.assert_allclose(res.to_numpy(), expected, atol=1e-9)
    np.testing.assert_allclose(
        np.concatenate([b for _, b in res.iter_chunks(23)]), expected, atol=1e-9
    )
    # the residual's leading energy is sigma_2^2 of the original
    d = diagnose(res)
    assert d.sigma1 == pytest.approx(sv[1], rel=1e-9)
    assert d.r1 == pytest.approx(sv[1] ** 2 / (sv[1:] ** 2).sum(), rel=1e-9)
    # orthogonal to v1: (S - s1 u1 v1^T) v1 = 0
    np.testing.assert_allclose(res.to_numpy() @ v1, 0, atol=1e-9)


def test_residual_with_precomputed_rank1(rng):
    s = rng.standard_normal((50, 4))
    d = diagnose(s, with_u1=True)
    r = Rank1(d.sigma1, d.u1, d.v1)
    np.testing.assert_allclose(residual(s, rank1=r).to_numpy(), residual(s).to_numpy(), atol=1e-12)
    with pytest.raises(ParameterError, match="rank1: expected a Rank1"):
        residual(s, rank1=(1.0, d.u1, d.v1))
    with pytest.raises(ParameterError, match="rank1: expected vectors of shapes"):
        residual(s[:10], rank1=r)


def test_sign_convention():
    assert fix_sign(np.array([0.5, -0.2])) == 1.0
    assert fix_sign(np.array([-0.5, 0.2])) == -1.0
    assert fix_sign(np.array([0.0, -1.0, 1.0])) == -1.0  # tie: first non-zero made positive
    assert fix_sign(np.zeros(3)) == 1.0


def test_top_eigenpairs_subset_equals_full(rng):
    a = rng.standard_normal((40, 12))
    g = a.T @ a
    w_full, v_full = top_eigenpairs(g, 12)
    w3, v3 = top_eigenpairs(g, 3)
    np.testing.assert_allclose(w3, w_full[:3], rtol=1e-12)
    np.testing.assert_allclose(np.abs(v3), np.abs(v_full[:, :3]), atol=1e-10)
    w20, _ = top_eigenpairs(g, 20)
    assert w20.shape == (20,) and np.all(w20[12:] == 0)
    np.testing.assert_allclose(w_full, np.sort(np.linalg.eigvalsh(g))[::-1], rtol=1e-10)


def test_rank1_of_zero_matrix():
    with pytest.raises(DataError, match="all-zero"):
        rank1(np.zeros((5, 3)))


def test_many_columns_take_lanczos_and_equal_lapack(rng):
    """From LANCZOS_MIN_T columns the top eigenpairs come from ARPACK: equal to LAPACK's dense
    solver (the twin), the same on every call (a fixed start), and a rank-deficient Gram whose
    smaller eigenvalues cluster at zero still gives LAPACK's answer."""
    import scipy.linalg

    from aria_tda.scores.lowrank import LANCZOS_MIN_T

    t = LANCZOS_MIN_T + 16
    a = rng.standard_normal((1500, t)) + np.outer(rng.standard_normal(1500), np.ones(t))
    g = a.T @ a
    w, v = top_eigenpairs(g, 10)
    w_ref, v_ref = scipy.linalg.eigh(g, subset_by_index=[t - 10, t - 1])
    w_ref, v_ref = w_ref[::-1], v_ref[:, ::-1]
    np.testing.assert_allclose(w, w_ref, rtol=1e-12)
    np.testing.assert_allclose(v[:, 0], v_ref[:, 0] * fix_sign(v_ref[:, 0]), atol=1e-10)
    np.testing.assert_allclose(np.abs(v), np.abs(v_ref), atol=1e-8)
    w2, v2 = top_eigenpairs(g, 10)
    assert np.array_equal(w, w2) and np.array_equal(v, v2)
    low = np.outer(np.arange(1.0, t + 1), np.arange(1.0, t + 1))  # rank 1
    w1, v1 = top_eigenpairs(low, 3)
    assert w1[0] == pytest.approx(float(np.sum(np.arange(1.0, t + 1) ** 2)), rel=1e-12)
    assert np.all(w1[1:] <= 1e-6 * w1[0])
    np.testing.assert_allclose(v1[:, 0], np.arange(1.0, t + 1) / np.linalg.norm(
        np.arange(1.0, t + 1)), atol=1e-12)
