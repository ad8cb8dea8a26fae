"""The validation section: ground truth the library computes — the linear datamodeling score
(:mod:`aria_tda.attribution.lds`) per method, LDS beside the reliability diagnostics and
:math:`\\bar z` (paper Table 1), and the agreement of the diagnostics with LDS."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from aria_tda.report.html.cells import esc
from aria_tda.report.html.tables import agreement_html, lds_html, lds_summary_html
from aria_tda.report.latex.cells import PREAMBLE
from aria_tda.report.latex.ground_truth import agreement_latex, lds_latex, lds_summary_latex
from aria_tda.report.load import ResultsData
from aria_tda.report.report_table import (
    ReportTable,
    channels_in,
    info_cols,
    is_staged,
    ordered_stages,
    settings_in,
)
from aria_tda.report.sections.base import BaseSection, PageContext
from aria_tda.results import RELIABILITY_DIAGNOSTICS, TABLES

__all__ = ["VALIDATION", "lds_tables"]

_HTML = {"lds_summary": lds_summary_html, "lds": lds_html, "agreement": agreement_html}
_LATEX = {"lds_summary": lds_summary_latex, "lds": lds_latex, "agreement": agreement_latex}


def lds_tables(data: ResultsData, *, k: int | None) -> list[ReportTable]:
    """The ``lds``, ``lds_summary`` and ``agreement`` tables the folder has data for.

    Parameters
    ----------
    data : ResultsData
        The results folder, as read by :func:`aria_tda.report.load.load_results`.
    k : int or None
        The report's group size (a table without it uses its largest K).

    Returns
    -------
    list of ReportTable
    """
    out = []
    lds = data.table("lds")
    if lds is not None and not lds.empty:
        staged = is_staged(lds)
        out.append(
            ReportTable(
                "lds",
                "Linear datamodeling score (LDS)" + (", per stage" if staged else ""),
                "Counterfactual validation of each attribution method: LDS is the mean over "
                "queries of the Spearman correlation between predicted and retrained-model outputs "
                "over random training subsets (higher = better); SD over queries"
                + ("; SE = SD / √queries" if "lds_se" in lds.columns else "")
                + (
                    ". Each stage's LDS is measured against that stage model retrained on the "
                    "subsets, so compare methods within a stage (best per stage in bold)."
                    if staged
                    else "."
                ),
                lds.reset_index(drop=True),
                {"stages": ordered_stages(lds) if staged else []},
            )
        )
        rel = data.table("reliability")
        h = data.table("homogeneity")
        if rel is not None:
            rows = []
            methods = {str(m): r for m, r in zip(lds["method"], lds["lds"], strict=True)}
            hk = (
                h[(h["variant"] == "original") & (h["K"] == k)]
                if h is not None and k is not None
                else None
            )
            channels = channels_in(data, hk) if hk is not None and len(hk) else []
            for s in settings_in(data, rel):
                info = data.setting_info(s)
                m = str(info["method"])
                if m not in methods and s not in methods:
                    continue
                row = info_cols(data, s)
                row["lds"] = methods.get(s, methods.get(m))
                rr = rel[rel["setting"] == s].iloc[-1]
                for c in RELIABILITY_DIAGNOSTICS:
                    row[c] = rr[c]
                for c in channels:
                    cc = hk[(hk["setting"] == s) & (hk["channel"] == c)] if hk is not None else None
                    row[f"{c}_zbar"] = cc.iloc[-1]["zbar"] if cc is not None and len(cc) else np.nan
                rows.append(row)
            if rows:
                summary = pd.DataFrame(rows)
                stages = ordered_stages(summary) if is_staged(summary) else []
                out.append(
                    ReportTable(
                        "lds_summary",
                        f"LDS, reliability and homogeneity at K = {k}",
                        "Ground-truth validation: LDS beside the reliability diagnostics of "
                        f"S_seg and z̄ at K = {k} per channel (paper Table 1 layout). Lower "
                        "diagnostics and higher LDS are better"
                        + (" (best marked within each stage)." if stages else "."),
                        summary,
                        {"channels": channels, "k": k, "stages": stages},
                    )
                )
    agr = data.table("agreement")
    if agr is not None and not agr.empty:
        staged = "stage" in agr.columns
        out.append(
            ReportTable(
                "agreement",
                "Agreement of diagnostics with LDS" + (", per stage" if staged else ""),
                "Rank agreement across methods between each reliability diagnostic (lower = "
                "better) and LDS (higher = better): Spearman and Kendall correlations of the two "
                "method rankings"
                + (
                    "; one block per stage, ranking that stage's methods by its own LDS."
                    if staged
                    else "."
                )
                + (
                    " CI: percentile bootstrap over queries and LDS subsets, one resample shared "
                    "by all methods; p: exact one-sided permutation p-value over the n! "
                    "orderings of the n methods (smallest possible 1/n!)."
                    if "spearman_lo" in agr.columns
                    else ""
                ),
                agr.reset_index(drop=True),
                {"stages": ordered_stages(agr) if staged else []},
            )
        )
    return out

class ValidationSection(BaseSection):
    """LDS, the LDS summary and the agreement of diagnostics with LDS."""

    name = "validation"
    title = "LDS"
    order = 600
    specs = (TABLES["lds"], TABLES["agreement"])
    exports = ("lds", "lds_summary", "agreement")

    def tables(self, data: ResultsData, k: int | None) -> dict[str, ReportTable]:
        return {t.name: t for t in lds_tables(data, k=k)}

    def html(self, data: ResultsData, tables: Mapping[str, ReportTable],
             ctx: PageContext) -> str | None:
        navs = (("lds_summary", "LDS"), ("lds", "LDS" if "lds_summary" not in tables else ""),
                ("agreement", "Agreement"))
        parts = [ctx.section(name, nav, esc(t.title), _HTML[name](t), t.caption)
                 for name, nav in navs if (t := tables.get(name)) is not None]
        return "\n".join(parts) or None

    def latex(self, table: ReportTable) -> str | None:
        fn = _LATEX.get(table.name)
        return PREAMBLE + fn(table) if fn else None


#: The section object (registered in :mod:`aria_tda.report.sections.registry`).
VALIDATION = ValidationSection()
