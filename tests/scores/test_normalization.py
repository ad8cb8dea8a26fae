"""Per-query normalisation: z-score, exact average ranks, and the heavy-tail rule of auto."""

from __future__ import annotations

import numpy as np
import pytest

import aria_tda.scores.normalization as N
from aria_tda.errors import AriaWarning, DataError, ParameterError
from aria_tda.manifest import read_manifest
from aria_tda.scores import (
    choose_normalization,
    column_moments,
    normalize,
    save_scores,
)
from aria_tda.scores.normalization import normalize_reference


def test_zscore_matches_reference(rng):
    s = rng.standard_normal((300, 7)) * rng.random(7) * 10 + rng.standard_normal(7) * 100
    got = normalize(s, method="zscore", chunk_rows=41)
    np.testing.assert_allclose(
        got.to_numpy(), normalize_reference(s, method="zscore").to_numpy(), rtol=1e-9, atol=1e-9
    )
    assert got.manifest["parameters"]["normalize"] == "zscore"
    z = got.to_numpy()
    np.testing.assert_allclose(z.mean(0), 0, atol=1e-10)
    np.testing.assert_allclose(z.std(0), 1, rtol=1e-10)


def test_rank_exact_with_ties(rng):
    s = rng.integers(0, 6, size=(200, 5)).astype(np.float64)  # many ties
    got = normalize(s, method="rank").to_numpy()
    np.testing.assert_array_equal(got, normalize_reference(s, method="rank").to_numpy())
    # average ranks: each column sums to M(M+1)/2, highest score gets the highest rank
    np.testing.assert_allclose(got.sum(0), 200 * 201 / 2)
    j = int(np.argmax(s[:, 0]))
    assert got[j, 0] == got[:, 0].max()


def test_rank_out_of_core_transpose_equals_in_memory(rng, tmp_path, monkeypatch):
    s = rng.standard_normal((500, 9)).astype(np.float32)
    s[::7, 3] = 0.25  # ties
    path = save_scores(s, tmp_path / "s.npy")
    ref = normalize_reference(s, method="rank").to_numpy()
    monkeypatch.setattr(N, "IN_MEMORY_BYTES", 0)
    monkeypatch.setattr(N, "COLUMN_BLOCK_BYTES", 8 * 500 * 2)  # two columns per block
    got = normalize(path, method="rank", chunk_rows=64, tmp_dir=tmp_path)
    np.testing.assert_array_equal(got.to_numpy(), ref)
    out = normalize(path, method="rank", chunk_rows=64, out=tmp_path / "r.zarr")
    np.testing.assert_array_equal(out.to_numpy(), ref)
    assert read_manifest(tmp_path / "r.zarr")["parameters"]["normalize"] == "rank"
    assert not list(tmp_path.glob("aria-transpose-*"))  # temporary transpose removed


def test_zscore_to_file(rng, tmp_path):
    s = rng.standard_normal((80, 4))
    out = normalize(s, method="zscore", out=tmp_path / "z.npy", chunk_rows=16)
    np.testing.assert_allclose(
        out.to_numpy(), normalize_reference(s, method="zscore").to_numpy(), atol=1e-12
    )
    assert out.manifest["kind"] == "normalized_scores"


def test_constant_column_zscores_to_zero(rng):
    s = rng.standard_normal((50, 3))
    s[:, 1] = 4.0
    with pytest.warns(AriaWarning, match="z-score is undefined for them, so they are set to 0"):
        z = normalize(s, method="zscore").to_numpy()
    np.testing.assert_array_equal(z[:, 1], 0.0)
    np.testing.assert_allclose(z, normalize_reference(s, method="zscore").to_numpy(), atol=1e-12)
    np.testing.assert_array_equal(normalize(s, method="rank").to_numpy()[:, 1], 25.5)


@pytest.mark.parametrize(
    ("draw", "want"),
    [
        (lambda r, n: r.standard_normal(n), "zscore"),
        (lambda r, n: r.uniform(-1, 1, n), "zscore"),
        (lambda r, n: r.laplace(size=n), "zscore"),  # excess kurtosis 3
        (lambda r, n: np.tanh(r.standard_normal(n)), "zscore"),  # bounded, cosine-like
        (lambda r, n: r.lognormal(0, 1.5, n), "rank"),
        (lambda r, n: r.pareto(1.5, n), "rank"),
        (lambda r, n: r.standard_t(2, n) * 1e-3, "rank"),  # heavy tails at any scale
    ],
)
def test_auto_rule(rng, draw, want):
    s = np.column_stack([draw(rng, 5000) * rng.uniform(0.1, 100) for _ in range(6)])
    method, med = choose_normalization(s)
    assert method == want, med
    assert (med > N.KURTOSIS_THRESHOLD) == (want == "rank")
    got = normalize(s, method="auto")
    assert got.manifest["parameters"]["normalize"] == want
    assert got.manifest["parameters"]["median_excess_kurtosis"] == pytest.approx(med)


def test_auto_rule_uses_the_median_and_threshold(rng):
    gauss = [rng.standard_normal(4000) for _ in range(5)]
    heavy = [rng.lognormal(0, 2, 4000) for _ in range(2)]
    s = np.column_stack(gauss + heavy)  # a few odd queries do not flip the choice
    assert choose_normalization(s)[0] == "zscore"
    s2 = np.column_stack(gauss[:2] + heavy + heavy)
    assert choose_normalization(s2)[0] == "rank"
    lap = np.column_stack([rng.laplace(size=4000) for _ in range(3)])
    assert choose_normalization(lap, kurtosis_threshold=1.0)[0] == "rank"
    mom = column_moments(lap)
    np.testing.assert_allclose(np.median(mom.excess_kurtosis), 3.0, atol=0.6)
    assert choose_normalization(mom, kurtosis_threshold=1.0)[0] == "rank"


def test_errors(rng):
    s = rng.standard_normal((40, 3))
    with pytest.raises(
        ParameterError, match="normalize: expected one of 'zscore', 'rank', 'auto', got 'minmax'"
    ):
        normalize(s, method="minmax")
    s[17, 2] = np.nan
    with pytest.raises(DataError, match=r"row 17, column 2"):
        normalize(s, method="rank")
    with pytest.raises(DataError, match=r"row 17, column 2"):
        normalize(s, method="zscore")
