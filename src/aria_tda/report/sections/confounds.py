"""The confound section: :math:`z_c(q)` stratified by a query metadata column (``confound``)."""

from __future__ import annotations

from collections.abc import Mapping

from aria_tda.report.html.cells import esc
from aria_tda.report.html.tables import confound_html
from aria_tda.report.latex.cells import PREAMBLE
from aria_tda.report.latex.tables import confound_latex
from aria_tda.report.load import ResultsData
from aria_tda.report.report_table import ReportTable
from aria_tda.report.sections.base import BaseSection, PageContext
from aria_tda.results import TABLES

__all__ = ["CONFOUNDS", "confound_table"]


def confound_table(data: ResultsData, *, k: int | None) -> ReportTable | None:
    """The ``confound`` table at ``k`` (else the largest K it holds), ordered.

    Parameters
    ----------
    data : ResultsData
        The results folder, as read by :func:`aria_tda.report.load.load_results`.
    k : int or None
        The report's group size (a table without it uses its largest K).

    Returns
    -------
    ReportTable or None
        ``None`` when the folder has no rows for it.
    """
    cf = data.table("confound")
    if cf is None or cf.empty:
        return None
    ks = sorted(set(cf["K"]))
    use_k = k if k in ks else (max(ks) if ks else None)
    sub = cf[cf["K"] == use_k] if use_k is not None else cf
    sub = data.in_study_order(sub, ["setting", "variant", "channel", "column", "mean_z"],
                              ascending=[True, True, True, True, False])
    return ReportTable(
        "confound",
        f"Metadata confound breakdown at K = {use_k}",
        "z_c(q) stratified by a query metadata column: per stratum the number of queries n, mean "
        "z, Pos (z > 0) and Sig (z > 1.96); SD across = standard deviation of the stratum means. A "
        "confound driven by one dominant stratum predicts a large SD across strata.",
        sub,
        {"k": use_k},
    )

class ConfoundSection(BaseSection):
    """The metadata confound breakdown (``confound``)."""

    name = "confound"
    title = "Confound"
    order = 500
    specs = (TABLES["confound"], TABLES["queries"])
    exports = ("confound",)

    def tables(self, data: ResultsData, k: int | None) -> dict[str, ReportTable]:
        t = confound_table(data, k=k)
        return {} if t is None else {t.name: t}

    def html(self, data: ResultsData, tables: Mapping[str, ReportTable],
             ctx: PageContext) -> str | None:
        t = tables.get("confound")
        if t is None:
            return None
        return ctx.section("confound", "Confound", esc(t.title), confound_html(t), t.caption)

    def latex(self, table: ReportTable) -> str | None:
        return PREAMBLE + confound_latex(table) if table.name == "confound" else None


#: The section object (registered in :mod:`aria_tda.report.sections.registry`).
CONFOUNDS = ConfoundSection()
