"""LDS and agreement tables in both layouts: the symbolic demo's (one row per method, one block
of agreement rows) and the audio demo's (``method`` = setting name beside ``stage`` /
``base_method`` / ``lds_se``; one block of agreement rows per stage)."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from aria_tda.report import load_results, write_report
from aria_tda.report.tables import build_tables
from aria_tda.results import write_table

STAGES = ("semantic", "coarse", "fine")
METHODS = ("TRAK", "GradCos")


def _audio_lds(path):
    """Audio-layout lds.csv / agreement.csv over the fixture's TRAK/<stage> settings plus
    GradCos/<stage> (LDS only: not in the results' settings)."""
    lds = pd.DataFrame(
        [
            {
                "method": f"{m}/{st}",
                "lds": 0.1 * (i + 1) + (0.3 if m == "GradCos" and st == "coarse" else 0.0),
                "lds_sd": 0.2,
                "n_subsets": 32,
                "n_queries": 14,
                "stage": st,
                "base_method": m,
                "lds_se": 0.05,
            }
            for i, st in enumerate(STAGES)
            for m in METHODS
        ]
    )
    agr = pd.DataFrame(
        [
            {
                "stage": st,
                "diagnostic": d,
                "spearman": 0.5 - 0.25 * j,
                "kendall": 0.4 - 0.2 * j,
                "n_methods": 2,
                "methods": "all",
                "order": "TRAK, GradCos",
            }
            for j, st in enumerate(STAGES)
            for d in ("r1", "kappa")
        ]
    )
    write_table(path, "lds", lds)
    write_table(path, "agreement", agr)
    return lds, agr


def _table_html(page: str, table_id: str) -> str:
    m = re.search(rf'<table[^>]*id="{table_id}".*?</table>', page, re.S)
    assert m, table_id
    return m.group(0)


def _heads(table: str) -> list[str]:
    return [re.sub(r"<[^>]+>", "", h) for h in re.findall(r"<th[^>]*>(.*?)</th>", table)]


def test_symbolic_layout_unchanged(results, tmp_path):
    path, _ = results
    out = write_report(path, latex=True, tables_dir=tmp_path / "t", plots=False)
    page = out.html.read_text()
    lds = _table_html(page, "table-lds")
    assert _heads(lds) == ["Method", "LDS ↑", "SD over queries", "Subsets", "Queries"]
    assert 'class="num best"' not in lds and "block-start" not in lds
    agr = _table_html(page, "table-agreement")
    assert _heads(agr) == ["Diagnostic", "Spearman", "Kendall", "Methods"]
    assert "rowspan" not in agr
    tex = (out.exports / "lds.tex").read_text()
    assert r"Method & LDS$\uparrow$ & SD & Subsets & Queries \\" in tex
    assert r"TRAK & \textbf{0.318}" in tex  # best LDS in bold, as before
    agr_tex = (out.exports / "agreement.tex").read_text()
    assert r"Diagnostic & Spearman & Kendall & Methods \\" in agr_tex
    assert r"\multirow" not in agr_tex
    assert build_tables(load_results(path), k=300)["lds"].layout == {"stages": []}


def test_audio_lds_and_agreement_tables(results):
    path, _ = results
    lds, agr = _audio_lds(path)
    tables = build_tables(load_results(path), k=300)
    assert tables["lds"].layout["stages"] == list(STAGES)
    assert "per stage" in tables["lds"].title and "within a stage" in tables["lds"].caption
    pd.testing.assert_frame_equal(
        tables["lds"].df.drop(columns=["lds"]), lds.drop(columns=["lds"]), check_dtype=False
    )
    assert tables["agreement"].layout["stages"] == list(STAGES)
    assert list(tables["agreement"].df["stage"]) == list(agr["stage"])
    # the summary matches settings by name: the fixture's TRAK/<stage> settings
    summary = tables["lds_summary"]
    assert list(summary.df["setting"]) == ["TRAK/semantic", "TRAK/coarse", "TRAK/fine"]
    want = lds.set_index("method")["lds"]
    for _, r in summary.df.iterrows():
        assert r["lds"] == pytest.approx(want[r["setting"]])
    assert summary.layout["stages"] == list(STAGES)


def test_audio_layout_html(results):
    path, _ = results
    _audio_lds(path)
    page = write_report(path, plots=False).html.read_text()
    lds = _table_html(page, "table-lds")
    assert _heads(lds) == [
        "Setting",
        "Method",
        "Stage",
        "LDS ↑",
        "SD over queries",
        "SE of the mean",
        "Subsets",
        "Queries",
    ]
    rows = re.findall(r"<tr[^>]*>.*?</tr>", lds.split("<tbody>")[1], re.S)
    assert len(rows) == 6
    # best per stage: ties on semantic (0.1) and fine (0.3) mark both; GradCos wins coarse
    best = [r for r in rows if 'class="num best"' in r]
    assert [re.search(r'data-setting="([^"]+)"', r).group(1) for r in best] == [
        "TRAK/semantic",
        "GradCos/semantic",
        "GradCos/coarse",
        "TRAK/fine",
        "GradCos/fine",
    ]
    assert sum("block-start" in r for r in rows) == 2  # coarse and fine start a block
    agr = _table_html(page, "table-agreement")
    assert _heads(agr)[:5] == ["Stage", "Diagnostic", "Spearman", "Kendall", "Methods"]
    assert agr.count('rowspan="2"') == 3
    for st in STAGES:
        assert agr.count(f'data-stage="{st}"') == 2
    assert "Agreement of diagnostics with LDS, per stage" in page


def test_audio_layout_latex(results, tmp_path):
    path, _ = results
    _audio_lds(path)
    out = write_report(path, latex=True, tables_dir=tmp_path / "t", plots=False)
    tex = (out.exports / "lds.tex").read_text()
    assert r"Stage & Method & LDS$\uparrow$ & SD & SE & Subsets & Queries \\" in tex
    assert r"\multirow{2}{*}{semantic} & TRAK" in tex
    assert tex.count(r"\midrule") == 3  # header + two stage boundaries
    assert r"GradCos & \textbf{0.500}" in tex  # coarse: 0.2 + 0.3
    agr = (out.exports / "agreement.tex").read_text()
    assert r"Stage & Diagnostic & Spearman & Kendall & Methods \\" in agr
    for st in STAGES:
        assert rf"\multirow{{2}}{{*}}{{{st}}} & r1" in agr
    assert r"\begin{tabular}{llccc}" in agr
    summary = (out.exports / "lds_summary.tex").read_text()
    assert "within each stage" in summary
    for t in (tex, agr, summary):
        assert t.count("{") == t.count("}")
