"""The TRAK sensitivity sweep in the report: the wide table, its HTML and its LaTeX."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from aria_tda.report import load_results, write_report
from aria_tda.report.tables import build_tables


def _body_rows(tex: str) -> list[list[str]]:
    body = tex.split(r"\midrule", 1)[1].split(r"\bottomrule", 1)[0]
    rows = [ln.strip().removesuffix(r"\\").strip() for ln in body.splitlines()]
    return [[c.strip() for c in r.split("&")] for r in rows if "&" in r]


def _num(cell: str) -> float:
    s = re.sub(r"\\textbf\{(.*?)\}", r"\1", cell).replace("$", "").replace("−", "-")
    return float(s)


def test_table_reads_stage_and_selected(results):
    path, frames = results
    tables = build_tables(load_results(path), k=300)
    sens = tables["sensitivity"]
    assert sens.layout["groups"] == ["semantic", "fine"]
    assert len(sens.df) == 6 and sens.df["selected"].sum() == 1
    src = frames["sensitivity"]
    row = sens.df.iloc[0]
    want = src[(src.proj_dim == row.proj_dim) & (src.lam == row.lam) & (src.stage == "fine")
               & (src.channel == "harmony")]["zbar"].iloc[-1]
    assert row["fine_harmony"] == pytest.approx(want)


def test_latex_and_html_carry_the_csv_numbers(results, tmp_path):
    path, _ = results
    out = write_report(path, latex=True, tables_dir=tmp_path / "t", plots=False, media=False,
                       quiet=True)
    tex = (out.exports / "sensitivity.tex").read_text()
    csv = pd.read_csv(out.exports / "sensitivity.csv")
    rows = _body_rows(tex)
    assert len(rows) == len(csv) == 6
    assert sum(r"\star" in r[1] for r in rows) == 1
    for cells, (_, row) in zip(rows, csv.iterrows(), strict=True):
        assert [_num(c) for c in cells[2:]] == pytest.approx(
            [round(row[c], 2) for c in csv.columns[3:]])
    page = out.html.read_text()
    assert '<section id="sensitivity">' in page and 'href="#sensitivity"' in page
    table = re.search(r'<table[^>]*id="table-sensitivity".*?</table>', page, re.S)
    assert table is not None
    assert table.group(0).count('data-col="semantic_rhythm"') == len(csv)
