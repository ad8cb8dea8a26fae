"""Score matrices are written with a manifest that round-trips."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")

from aria_tda.attribution import AttributionResult, load_attribution, save_attribution
from aria_tda.errors import DataError, ManifestMismatchError
from aria_tda.manifest import read_manifest


def test_save_load_round_trip(tmp_path, rng):
    scores = rng.normal(size=(9, 4)).astype(np.float32)
    res = AttributionResult(
        scores, "TRAK", {"proj_dim": 512, "lam": 0.01, "n_models": 10}, seed=3, seconds=1.5
    )
    path = res.save(tmp_path / "trak.npy")
    back, manifest = load_attribution(path, method="TRAK")
    np.testing.assert_array_equal(back, scores)
    assert manifest["method"] == "TRAK" and manifest["seed"] == 3
    assert manifest["parameters"]["proj_dim"] == 512 and manifest["parameters"]["lam"] == 0.01
    assert manifest["parameters"]["run"]["seconds"] == 1.5
    assert read_manifest(path)["parameters"]["n_models"] == 10
    with pytest.raises(ManifestMismatchError, match="method"):
        load_attribution(path, method="GradDot")


def test_save_rejects_bad_input(tmp_path):
    with pytest.raises(DataError, match="scores"):
        save_attribution(np.zeros(3), tmp_path / "x.npy", method="TRAK")
    assert not list(tmp_path.iterdir())
