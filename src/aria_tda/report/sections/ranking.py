r"""The ranking section: settings ranked per channel on :math:`\bar z`, collapsed settings
excluded (``ranking``, paper section 4.4)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from aria_tda.report.html.cells import esc
from aria_tda.report.html.tables import ranking_html
from aria_tda.report.latex.cells import PREAMBLE
from aria_tda.report.latex.tables import ranking_latex
from aria_tda.report.load import ResultsData
from aria_tda.report.report_table import ReportTable, channels_in, info_cols, settings_in
from aria_tda.report.sections.base import BaseSection, PageContext
from aria_tda.results import TABLES

__all__ = ["RANKING", "ranking_table"]


def ranking_table(data: ResultsData, *, k: int | None) -> ReportTable | None:
    """The ``ranking`` table: per variant and setting, z̄ and rank per channel.

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
    rk = data.table("ranking")
    if rk is None or rk.empty:
        return None
    ks = sorted(set(rk["K"]))
    use_k = k if k in ks else max(ks)
    sub = rk[rk["K"] == use_k]
    channels = channels_in(data, sub)
    rows = []
    for v in [v for v in data.variants if v in set(sub["variant"])] or sorted(set(sub["variant"])):
        sv = sub[sub["variant"] == v]
        for s in settings_in(data, sv):
            ss = sv[sv["setting"] == s]
            row = info_cols(data, s)
            row["variant"] = v
            row["excluded"] = bool(ss["excluded"].any())
            reasons = [str(r) for r in ss["reason"] if isinstance(r, str) and r.strip()]
            row["reason"] = reasons[0] if reasons else ""
            for c in channels:
                cc = ss[ss["channel"] == c]
                row[f"{c}_zbar"] = cc.iloc[-1]["zbar"] if len(cc) else np.nan
                row[f"{c}_rank"] = cc.iloc[-1]["rank"] if len(cc) else np.nan
            rows.append(row)
    return ReportTable(
        "ranking",
        f"Method ranking on z̄ at K = {use_k}",
        "Settings ranked per channel on z̄ (1 = highest). Collapsed settings are excluded from the "
        "ranking (paper section 4.4): their z̄ describes a fixed group, not attribution.",
        pd.DataFrame(rows),
        {"channels": channels, "k": use_k},
    )

class RankingSection(BaseSection):
    """The method ranking on z̄ (``ranking``)."""

    name = "ranking"
    title = "Ranking"
    order = 550
    specs = (TABLES["ranking"],)
    exports = ("ranking",)

    def tables(self, data: ResultsData, k: int | None) -> dict[str, ReportTable]:
        t = ranking_table(data, k=k)
        return {} if t is None else {t.name: t}

    def html(self, data: ResultsData, tables: Mapping[str, ReportTable],
             ctx: PageContext) -> str | None:
        t = tables.get("ranking")
        if t is None:
            return None
        return ctx.section("ranking", "Ranking", esc(t.title), ranking_html(t), t.caption)

    def latex(self, table: ReportTable) -> str | None:
        return PREAMBLE + ranking_latex(table) if table.name == "ranking" else None


#: The section object (registered in :mod:`aria_tda.report.sections.registry`).
RANKING = RankingSection()
