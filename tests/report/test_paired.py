"""The report's paired comparisons (lds_paired, paired z-bar) and the agreement's CI + exact p."""

from __future__ import annotations

import re

import pandas as pd

from aria_tda.report import load_results, write_report
from aria_tda.report.tables import build_tables
from aria_tda.results import write_table


def _table_html(page: str, table_id: str) -> str:
    m = re.search(rf'<table[^>]*id="{table_id}".*?</table>', page, re.S)
    assert m, table_id
    return m.group(0)


def _heads(table: str) -> list[str]:
    return [re.sub(r"<[^>]+>", "", h) for h in re.findall(r"<th[^>]*>(.*?)</th>", table)]


def test_paired_tables_render(results, tmp_path):
    path, _ = results
    tables = build_tables(load_results(path), k=300)
    z = tables["paired"]
    assert z.layout["k"] == 300 and set(z.df["K"]) == {300}
    assert set(z.df["variant"]) == {"original"}
    out = write_report(path, latex=True, tables_dir=tmp_path / "t", plots=False)
    page = out.html.read_text()
    lp = _table_html(page, "table-lds_paired")
    assert _heads(lp) == ["Quantity", "A", "B", "A", "B", "A − B", "95% CI", "Separated"]
    rows = re.findall(r"<tr[^>]*>.*?</tr>", lp.split("<tbody>")[1], re.S)
    assert len(rows) == 2
    assert ">separated<" in rows[0] and "[+0.080, +0.250]" in rows[0]
    assert ">not separated<" in rows[1] and "[-0.310, +0.020]" in rows[1]
    pz = _table_html(page, "table-paired")
    assert _heads(pz)[0] == "Channel"
    n_pairs = len(z.df)
    assert len(re.findall(r"<tr[^>]*>", pz.split("<tbody>")[1])) == n_pairs
    tex = (out.exports / "lds_paired.tex").read_text()
    assert r"LDS & TRAK & MERT" in tex and r"\textbf{yes}" in tex
    assert r"[$-$0.310, +0.020] & no" in tex
    assert (out.exports / "paired.tex").read_text().count(r"\\") >= n_pairs
    assert (out.exports / "paired.csv").is_file()


def test_agreement_with_intervals_and_exact_p(results, tmp_path):
    path, _ = results
    agr = pd.DataFrame({
        "diagnostic": ["kappa", "r1"], "spearman": [1.0, 0.5], "spearman_lo": [0.5, -0.5],
        "spearman_hi": [1.0, 1.0], "spearman_p_exact": [1 / 24, 0.375], "kendall": [1.0, 0.33],
        "kendall_lo": [0.33, -0.33], "kendall_hi": [1.0, 1.0],
        "kendall_p_exact": [1 / 24, 0.375], "n_methods": [4, 4],
    })
    write_table(path, "agreement", agr)
    out = write_report(path, latex=True, tables_dir=tmp_path / "t", plots=False)
    table = _table_html(out.html.read_text(), "table-agreement")
    assert _heads(table) == ["Diagnostic", "Spearman", "95% CI", "p (exact)", "Kendall",
                             "95% CI", "p (exact)", "Methods"]
    assert "[+0.50, +1.00]" in table and "0.042" in table
    tex = (out.exports / "agreement.tex").read_text()
    assert r"Spearman & 95\% CI & $p$ & Kendall" in tex
    assert r"[$-$0.50, +1.00]" in tex and "exact one-sided permutation" in tex
