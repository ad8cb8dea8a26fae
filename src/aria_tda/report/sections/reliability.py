"""The reliability section: each setting's diagnostics, collapse verdict, findings and sanity
checks (the ``reliability`` results table, paper Eqs. 1-3)."""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from aria_tda.report.html.cells import esc
from aria_tda.report.html.tables import reliability_html
from aria_tda.report.latex.cells import PREAMBLE
from aria_tda.report.latex.tables import reliability_latex
from aria_tda.report.load import ResultsData
from aria_tda.report.report_table import ReportTable, settings_in
from aria_tda.report.sections.base import BaseSection, PageContext
from aria_tda.results import TABLES

__all__ = ["RELIABILITY", "reliability_table"]

_RELIABILITY = TABLES["reliability"]


def reliability_table(data: ResultsData) -> ReportTable | None:
    """The ``reliability`` table: one row per setting, the schema's columns in its order, the
    verdict as the report resolves it.

    Parameters
    ----------
    data : ResultsData
        The results folder, as read by :func:`aria_tda.report.load.load_results`.

    Returns
    -------
    ReportTable or None
        ``None`` when the folder has no rows for it.
    """
    rel = data.table("reliability")
    if rel is None or rel.empty:
        return None
    rows = []
    for s in settings_in(data, rel):
        r = rel[rel["setting"] == s].iloc[-1]
        # the schema's columns in its order; the verdict as the report resolves it
        row = {c: data.verdict(s) if c == "verdict" else r[c] for c in _RELIABILITY.columns}
        row.update({c: r[c] for c in _RELIABILITY.optional if c in rel.columns})
        rows.append(row)
    return ReportTable(
        "reliability",
        "Reliability diagnostics and collapse verdicts",
        "Reliability diagnostics of each setting's segment-level score matrix S_seg (paper Eqs. "
        "1–3): κ (shared score profile across queries), r₁ and r₂:₅ (energy on the first and the "
        "next four singular directions), p (per-query offset share), how constant v₁ is across "
        "queries, and, where measured, the top-K concentration: the share of queries whose "
        "top-1 is the most frequent top-1 and the mean share of two queries' top-K in common "
        "(on the tracks the homogeneity groups are drawn from). A collapsed setting retrieves "
        "(nearly) the same group for every query: its homogeneity numbers describe that fixed "
        "group, not attribution.",
        pd.DataFrame(rows),
    )

class ReliabilitySection(BaseSection):
    """Reliability diagnostics and collapse verdicts (table ``reliability``)."""

    name = "reliability"
    title = "Reliability"
    order = 100
    specs = (_RELIABILITY,)
    exports = ("reliability",)

    def tables(self, data: ResultsData, k: int | None) -> dict[str, ReportTable]:
        t = reliability_table(data)
        return {} if t is None else {t.name: t}

    def html(self, data: ResultsData, tables: Mapping[str, ReportTable],
             ctx: PageContext) -> str | None:
        t = tables.get("reliability")
        if t is None:
            return None
        return ctx.section("reliability", "Reliability", esc(t.title), reliability_html(t),
                           t.caption)

    def latex(self, table: ReportTable) -> str | None:
        return PREAMBLE + reliability_latex(table) if table.name == "reliability" else None


#: The section object (registered in :mod:`aria_tda.report.sections.registry`).
RELIABILITY = ReliabilitySection()
