"""LDS: vectorised == scipy reference == dattri.metric.lds; sign convention; ground truth."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from aria_tda.attribution import (  # noqa: E402
    lds,
    lds_reference,
    query_log_probs,
    retrain_outputs,
    sample_subsets,
)
from aria_tda.attribution.lds import model_outputs  # noqa: E402
from aria_tda.errors import AriaWarning, DataError, ParameterError  # noqa: E402


def _planted(rng, n=40, t=7, s=32, noise=0.5):
    scores = rng.normal(size=(n, t))
    subsets = sample_subsets(n, n_subsets=s, seed=int(rng.integers(1000)))
    mask = np.zeros((s, n))
    np.put_along_axis(mask, subsets, 1.0, axis=1)
    outputs = mask @ scores + noise * rng.normal(size=(s, t))
    return scores, subsets, outputs


def test_lds_equals_reference_and_dattri(rng):
    from dattri.metric import lds as dattri_lds

    scores, subsets, outputs = _planted(rng)
    fast, ref = lds(scores, subsets, outputs), lds_reference(scores, subsets, outputs)
    d_corr, _ = dattri_lds(
        torch.tensor(scores, dtype=torch.float64), (torch.tensor(outputs), torch.tensor(subsets))
    )
    np.testing.assert_allclose(fast.per_query, ref.per_query, atol=1e-12)
    np.testing.assert_allclose(fast.per_query, d_corr.numpy(), atol=1e-12)
    assert fast.mean == pytest.approx(float(d_corr.mean()))
    assert fast.n_subsets == 32 and fast.n_queries == 7 and fast.n_undefined == 0


def test_lds_handles_ties_like_spearman(rng):
    from dattri.metric import lds as dattri_lds

    scores = rng.integers(0, 3, size=(30, 5)).astype(float)
    subsets = sample_subsets(30, n_subsets=12, seed=1)
    outputs = rng.integers(0, 4, size=(12, 5)).astype(float)
    d_corr, _ = dattri_lds(torch.tensor(scores), (torch.tensor(outputs), torch.tensor(subsets)))
    np.testing.assert_allclose(lds(scores, subsets, outputs).per_query, d_corr.numpy(), atol=1e-12)


def test_lds_sign_convention(rng):
    """A score that predicts the outputs gets LDS near +1, its negation near -1."""
    scores, subsets, outputs = _planted(rng, noise=0.01)
    assert lds(scores, subsets, outputs).mean > 0.95
    assert lds(-scores, subsets, outputs).mean < -0.95
    assert abs(lds(rng.normal(size=scores.shape), subsets, outputs).mean) < 0.3


def test_lds_constant_query_is_nan_with_warning(rng):
    scores, subsets, outputs = _planted(rng)
    outputs[:, 2] = 1.0
    with pytest.warns(AriaWarning, match="undefined for 1 of 7"):
        res = lds(scores, subsets, outputs)
    assert np.isnan(res.per_query[2]) and res.n_undefined == 1 and np.isfinite(res.mean)
    row = res.to_row("TRAK")
    assert set(row) == {"method", "lds", "lds_sd", "n_subsets", "n_queries"}


def test_lds_validates_inputs(rng):
    scores, subsets, outputs = _planted(rng)
    with pytest.raises(DataError, match="outputs"):
        lds(scores, subsets, outputs[:, :3])
    with pytest.raises(DataError, match="subsets"):
        lds(scores, subsets + 100, outputs)
    with pytest.raises(DataError, match="scores"):
        lds(np.full_like(scores, np.nan), subsets, outputs)
    with pytest.raises(ParameterError, match="at least 3"):
        lds(scores, subsets[:2], outputs[:2])
    with pytest.raises(ParameterError, match="fraction"):
        sample_subsets(10, fraction=1.0)


def test_retrain_outputs_are_query_log_probs_and_resume(tiny, tmp_path):
    from _lm import train_model

    calls = []

    def retrain(indices, *, seed):
        calls.append((tuple(indices), seed))
        return train_model(tiny["train"][indices], seed=seed, steps=6)[0]

    subsets = sample_subsets(12, n_subsets=3, seed=0)
    out = retrain_outputs(
        retrain, subsets, tiny["queries"], target="last_token", seed=5, cache_dir=tmp_path
    )
    assert out.shape == (3, 5) and np.all(out < 0)
    assert [c[1] for c in calls] == [5, 6, 7]
    model = train_model(tiny["train"][subsets[1]], seed=6, steps=6)[0]
    np.testing.assert_allclose(out[1], query_log_probs(model, tiny["queries"], target="last_token"))
    again = retrain_outputs(
        retrain, subsets, tiny["queries"], target="last_token", seed=5, cache_dir=tmp_path
    )
    assert len(calls) == 3  # every subset reused from the cache
    np.testing.assert_array_equal(again, out)
    retrain_outputs(
        retrain, subsets, tiny["queries"], target="sequence", seed=5, cache_dir=tmp_path
    )
    assert len(calls) == 6  # another target: recomputed, not silently reused
    np.testing.assert_array_equal(model_outputs([model], tiny["queries"])[0], out[1])


def test_query_log_probs_match_bench_losses(tiny):
    from aria_tda_experiments.model import last_token_loss, sequence_loss

    q = torch.as_tensor(tiny["queries"])
    with torch.no_grad():
        np.testing.assert_allclose(
            query_log_probs(tiny["model"], q, target="sequence"),
            -sequence_loss(tiny["model"], q).double().numpy(),
            rtol=1e-6,
        )
        np.testing.assert_allclose(
            query_log_probs(tiny["model"], q, target="last_token", batch_size=2),
            -last_token_loss(tiny["model"], q).double().numpy(),
            rtol=1e-6,
        )


def test_lds_bootstrap_is_paired_and_matches_lds_at_unit_counts():
    from aria_tda.attribution.lds import lds_bootstrap
    from aria_tda.paired import bootstrap_counts

    rng = np.random.default_rng(4)
    n, t, s = 40, 12, 10
    scores = rng.normal(size=(n, t))
    subsets = np.stack([np.sort(rng.choice(n, n // 2, replace=False)) for _ in range(s)])
    mask = np.zeros((s, n))
    np.put_along_axis(mask, subsets, 1.0, axis=1)
    outputs = mask @ scores + rng.normal(size=(s, t))
    ones = np.ones((1, t), dtype=np.int64)
    assert lds_bootstrap(scores, subsets, outputs, ones)[0] == pytest.approx(
        lds(scores, subsets, outputs).mean)
    qc, sc = bootstrap_counts(t, 30, 0), bootstrap_counts(s, 30, 1)
    a = lds_bootstrap(scores, subsets, outputs, qc, sc)
    b = lds_bootstrap(scores, subsets, outputs, qc, sc, block=4)
    np.testing.assert_allclose(a, b)
    assert a.std() > 0
    with pytest.raises(DataError, match="subset_counts"):
        lds_bootstrap(scores, subsets, outputs, qc, sc[:5])
