"""Axis-channel alignment (paper Eq. alpha): fast path vs reference, planted alignment, edge
cases."""

from __future__ import annotations

import numpy as np
import pytest

from aria_tda.alignment import alignment, alignment_reference, channel_alignment, sequence_histogram
from aria_tda.errors import DataError, ParameterError


def test_matches_reference(rng):
    n = 300
    groups = {
        "a": rng.normal(size=(n, 5)), "b": rng.normal(size=(n, 1)), "c": rng.normal(size=(n, 12))
    }
    u1 = rng.normal(size=n)
    res = alignment(u1, groups)
    ref = alignment_reference(u1, groups)
    ref_max, ref_reg = ref.alpha_max, ref.alpha_reg
    assert res.alpha_max == pytest.approx(ref_max, rel=1e-10)
    assert res.alpha_reg == pytest.approx(ref_reg, rel=1e-8)


def test_u1_built_from_a_feature_gives_one(rng):
    n = 500
    chroma = rng.dirichlet(np.ones(12), size=n)
    mfcc = rng.normal(size=(n, 26))
    u1 = chroma @ rng.normal(size=12)
    u1 /= np.linalg.norm(u1)
    res = channel_alignment(u1, {"harmony": {"chroma": chroma}, "timbre": {"mfcc": mfcc}})
    assert res["harmony"].alpha_reg == pytest.approx(1.0, abs=1e-9)
    assert res["harmony"].alpha_reg_group == "chroma"
    # unrelated channel: sqrt(R^2) of noise on 26 dims ~ sqrt(26/500)
    assert res["timbre"].alpha_reg < 0.4
    # single-dimension alignment
    u_single = 3.0 * mfcc[:, 7] - 1.0
    assert alignment(u_single, {"mfcc": mfcc}).alpha_max == pytest.approx(1.0)
    assert alignment(u_single, {"mfcc": mfcc}).alpha_max_feature == "mfcc[7]"


def test_sign_and_scale_invariant(rng):
    groups = {"g": rng.normal(size=(100, 3))}
    u = rng.normal(size=100)
    a, b = alignment(u, groups), alignment(-5 * u + 2, groups)
    assert a.alpha_max == pytest.approx(b.alpha_max) and a.alpha_reg == pytest.approx(b.alpha_reg)


def test_nan_rows_and_constant_dims(rng):
    X = rng.normal(size=(50, 3))
    X[:, 1] = 4.0  # constant dimension
    X[3] = np.nan
    u = X[:, 0].copy()
    u[3] = 0.0
    res = alignment(u, {"g": X})
    assert res.alpha_max == pytest.approx(1.0) and res.alpha_max_feature == "g[0]"
    assert res.n == 49


def test_bad_input(rng):
    with pytest.raises(DataError, match="shape"):
        alignment(rng.normal(size=10), {"g": rng.normal(size=(9, 2))})
    with pytest.raises(ParameterError, match="u1"):
        alignment(np.zeros(2), {"g": np.zeros((2, 1))})
    with pytest.raises(DataError, match="NaN"):
        alignment(np.array([1.0, np.nan, 2.0]), {"g": np.zeros((3, 1))})


def test_sequence_histogram():
    h = sequence_histogram([np.array([0, 5, 5, 7]), np.array([], dtype=int)])
    assert h[0, 5] == pytest.approx(0.5) and h[0].sum() == pytest.approx(1.0)
    assert np.isnan(h[1]).all()
    with pytest.raises(DataError, match="symbols"):
        sequence_histogram([np.array([12])])


def test_constant_channel_is_undefined(rng):
    res = alignment(rng.normal(size=20), {"g": np.full((20, 3), 2.0)})
    assert np.isnan(res.alpha_max) and np.isnan(res.alpha_reg) and res.alpha_reg_group == ""


# ------------------------------------------- issue 13 item 4: alpha_reg cannot overfit (d >= n)


def test_alpha_reg_does_not_overfit_when_dimensions_exceed_tracks(rng):
    # CQT-like group (168 dims) on a 120-track study, independent of u1: the in-sample OLS
    # R^2 of the old code was exactly 1 (alpha_reg = 1.000); the cross-validated fit is ~0
    n, d = 120, 168
    res = alignment(rng.normal(size=n), {"cqt": rng.normal(size=(n, d))})
    assert res.alpha_reg < 0.15
    assert res.alpha_reg_method == "ridge-cv R² (5-fold)"
    assert res.to_dict()["alpha_reg_method"] == "ridge-cv R² (5-fold)"
    small = alignment_reference(rng.normal(size=30), {"g": rng.normal(size=(30, 40))})
    assert small.alpha_reg < 0.3


def test_alpha_reg_high_for_a_planted_linear_signal(rng):
    # correlated high-dimensional features (5 latent factors) and u1 linear in one factor
    n, d = 120, 168
    latent = rng.normal(size=(n, 5))
    x = latent @ rng.normal(size=(5, d)) + 0.3 * rng.normal(size=(n, d))
    u1 = latent[:, 0] + 0.1 * rng.normal(size=n)
    res = alignment(u1, {"cqt": x, "noise": rng.normal(size=(n, 20))})
    assert res.alpha_reg > 0.95 and res.alpha_reg_group == "cqt"
    # deterministic given the seed of the folds; another seed changes it only a little
    assert alignment(u1, {"cqt": x}).alpha_reg == res.alpha_reg
    assert alignment(u1, {"cqt": x}, seed=3).alpha_reg == pytest.approx(res.alpha_reg, abs=0.01)
