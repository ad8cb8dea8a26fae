"""aria_tda.paired.tables: paired z-bar differences from a query_z table."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from aria_tda.errors import DataError
from aria_tda.paired import zbar_paired_table


def _query_z(rng, shift):
    rows = []
    base = rng.normal(0, 1, size=40)
    for s, add in (("A", shift), ("B", 0.0), ("C", 0.0)):
        for v in ("original", "residual"):
            for k in (5, 10):
                for c in ("melody", "rhythm"):
                    z = base + add + rng.normal(0, 0.2, 40)
                    if s == "C":
                        z[:3] = np.nan  # excluded queries
                    rows += [(s, v, k, q, c, z[q]) for q in range(40)]
    return pd.DataFrame(rows, columns=["setting", "variant", "K", "query", "channel", "z"])


def test_zbar_pairs_per_cell():
    qz = _query_z(np.random.default_rng(0), 0.5)
    t = zbar_paired_table(qz, n_boot=300, seed=1)
    assert len(t) == 3 * 2 * 2 * 2  # pairs x variants x K x channels
    ab = t[(t.setting_a == "A") & (t.setting_b == "B")]
    assert ab["separated"].all() and (ab["diff_lo"] > 0).all()
    assert ab["diff"].to_numpy() == pytest.approx(0.5, abs=0.15)
    bc = t[(t.setting_a == "B") & (t.setting_b == "C")]
    assert (bc["n_queries"] == 37).all()
    assert (bc["diff_lo"] < bc["diff"]).all() and (bc["diff"] < bc["diff_hi"]).all()
    # value_a is the setting's own z-bar, as in the homogeneity table
    a = qz[(qz.setting == "A") & (qz.variant == "original") & (qz.K == 5)
           & (qz.channel == "melody")]["z"].mean()
    first = ab[(ab.variant == "original") & (ab.K == 5) & (ab.channel == "melody")].iloc[0]
    assert first["value_a"] == pytest.approx(a)


def test_zbar_pairs_only_on_a_shared_null():
    qz = _query_z(np.random.default_rng(0), 0.0)
    t = zbar_paired_table(qz, n_boot=20, null_groups={"A": 1, "B": 1, "C": 2})
    assert set(zip(t.setting_a, t.setting_b, strict=True)) == {("A", "B")}
    one = zbar_paired_table(qz[qz.setting == "A"], n_boot=20)
    assert one.empty
    with pytest.raises(DataError, match="query_z"):
        zbar_paired_table(qz.drop(columns="z"))
