"""The report's tables: wide per-setting frames built from the long results tables."""

from __future__ import annotations

import numpy as np
import pytest

from aria_tda.report import load_results
from aria_tda.report.tables import build_tables
from aria_tda.results import write_table


def test_wide_tables_match_long_tables(results):
    path, frames = results
    data = load_results(path)
    tables = build_tables(data, k=100)
    h = frames["homogeneity"]
    for variant, name in (("original", "homogeneity"), ("residual", "homogeneity_residual")):
        wide = tables[name].df
        assert list(wide["setting"]) == data.settings  # one row per setting, in order
        for _, row in wide.iterrows():
            for c in data.channels:
                src = h[
                    (h.setting == row.setting)
                    & (h.variant == variant)
                    & (h.K == 100)
                    & (h.channel == c)
                ].iloc[0]
                for q in ("zbar", "zbar_lo", "zbar_hi", "pos", "sig"):
                    assert row[f"{c}_{q}"] == pytest.approx(src[q], abs=1e-6)
    rel = frames["reliability"].set_index("setting")
    wide = tables["homogeneity"].df.set_index("setting")
    for c in ("r1", "r2_5", "p", "kappa"):
        np.testing.assert_allclose(wide[c], rel.loc[wide.index, c])
    # confound table filtered to the chosen K (fixture has K = 300 only -> falls back to it)
    assert set(tables["confound"].df["K"]) == {300}
    # ranking keeps collapsed settings, flagged excluded
    rk = tables["ranking"].df
    assert (
        rk[rk.setting == "TRAK/coarse"]["excluded"].all()
        and not rk[rk.setting != "TRAK/coarse"]["excluded"].any()
    )


def test_extra_columns_are_tolerated(results):
    path, frames = results
    rel = frames["reliability"].assign(energy_1=0.5, something_new="x")
    write_table(path, "reliability", rel)
    data = load_results(path)
    assert data.missing == []
    assert "energy_1" in build_tables(data, k=300)["reliability"].df.columns


def test_columns_come_from_the_results_schema(results):
    """The report declares no table's columns: it reads them from aria_tda.results.TABLES."""
    from aria_tda.results import (
        ALIGNMENT_MEASURES,
        HOMOGENEITY_SUMMARY,
        RELIABILITY_DIAGNOSTICS,
        TABLES,
    )

    path, _ = results
    data = load_results(path)
    tables = build_tables(data, k=100)
    spec = TABLES["reliability"]
    rel = tables["reliability"].df
    assert list(rel.columns[: len(spec.columns)]) == list(spec.columns)
    assert set(rel.columns) - set(spec.columns) <= set(spec.optional)
    assert set(RELIABILITY_DIAGNOSTICS) <= set(spec.columns)
    assert set(HOMOGENEITY_SUMMARY) <= set(TABLES["homogeneity"].columns)
    assert set(ALIGNMENT_MEASURES) <= set(TABLES["alignment"].columns)
    hom = tables["homogeneity"].df
    c = data.channels[0]
    assert [x for x in hom.columns if x in RELIABILITY_DIAGNOSTICS] == list(RELIABILITY_DIAGNOSTICS)
    assert {f"{c}_{q}" for q in HOMOGENEITY_SUMMARY} <= set(hom.columns)
    al = tables["alignment"].df
    assert {f"{c}_{q}" for q in ALIGNMENT_MEASURES} <= set(al.columns)


def test_report_table_modules_form_no_circle():
    """tables imports the per-topic builders; they and the renderers import only report_table."""
    import ast
    from pathlib import Path

    import aria_tda.report as report

    root = Path(report.__file__).parent
    for rel in ("report_table.py", "sections/paired.py", "sections/aspects.py", "embeddings.py",
                "sections/base.py", "latex/cells.py",
                "latex/ground_truth.py", "latex/tables.py"):
        tree = ast.parse((root / rel).read_text())
        names = {
            n.module
            for n in ast.walk(tree)
            if isinstance(n, ast.ImportFrom) and n.module
        }
        assert "aria_tda.report.tables" not in names, rel
