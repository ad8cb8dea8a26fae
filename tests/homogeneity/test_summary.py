"""Summary metrics z-bar / Pos / Sig with bootstrap intervals (aria_tda.homogeneity.summary)."""

from __future__ import annotations

import numpy as np
import pytest

from aria_tda.errors import ParameterError
from aria_tda.homogeneity import summarize


def test_summarize_point_values_and_intervals(rng):
    z = np.array([-1.0, 0.5, 2.0, 3.0, np.nan])
    out = summarize(z, n_boot=500, seed=1)
    assert out["zbar"] == pytest.approx(1.125)
    assert out["pos"] == pytest.approx(0.75) and out["sig"] == pytest.approx(0.5)
    assert out["n_queries"] == 4
    assert out["zbar_lo"] <= out["zbar"] <= out["zbar_hi"]
    big = rng.standard_normal((4000, 2)) + np.array([0.0, 0.3])
    s = summarize(big, n_boot=400, seed=0)
    se = 1 / np.sqrt(4000)
    np.testing.assert_allclose(s["zbar_hi"] - s["zbar_lo"], 2 * 1.96 * se, rtol=0.15)
    assert s["zbar_lo"][1] > 0.2 and s["zbar_hi"][0] < 0.1
    again = summarize(big, n_boot=400, seed=0)
    np.testing.assert_array_equal(again["zbar_lo"], s["zbar_lo"])
    with pytest.raises(ParameterError, match="level"):
        summarize(z, level=1.0)
