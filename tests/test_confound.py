"""Confound breakdown: per-stratum summaries and the across-strata SD."""

from __future__ import annotations

import numpy as np
import pytest

from aria_tda.confound import stratify
from aria_tda.errors import DataError


def test_stratify_against_hand_computation():
    z = np.array([1.0, 3.0, -1.0, 0.5, 2.5, np.nan, 4.0])
    labels = ["rock", "rock", "folk", "folk", "folk", "rock", None]
    strata, sd = stratify(z, labels, min_count=1)
    by = {s.stratum: s for s in strata}
    assert by["rock"].n == 2 and by["rock"].mean_z == pytest.approx(2.0)
    assert by["rock"].pos == 1.0 and by["rock"].sig == 0.5
    assert by["folk"].n == 3 and by["folk"].mean_z == pytest.approx(2.0 / 3)
    assert by["folk"].pos == pytest.approx(2 / 3) and by["folk"].sig == pytest.approx(1 / 3)
    assert [s.stratum for s in strata] == ["rock", "folk"]
    assert sd == pytest.approx(np.std([2.0, 2.0 / 3], ddof=1))


def test_small_strata_flagged_and_left_out_of_sd(rng):
    z = rng.normal(size=40)
    labels = ["a"] * 20 + ["b"] * 18 + ["c"] * 2
    strata, sd = stratify(z, labels, min_count=5)
    small = {s.stratum for s in strata if s.small}
    assert small == {"c"}
    means = [s.mean_z for s in strata if s.stratum in {"a", "b"}]
    assert sd == pytest.approx(np.std(means, ddof=1))


def test_single_stratum_sd_is_nan():
    _, sd = stratify(np.ones(3), ["x", "x", "x"])
    assert np.isnan(sd)


def test_length_mismatch():
    with pytest.raises(DataError, match="one per query"):
        stratify(np.ones(3), ["a"])
