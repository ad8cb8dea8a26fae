r"""The alignment section: how the dominant singular vector :math:`u_1` of S_track lines up with
each channel (paper Eq. α), for every setting and for the embedding-retrieval settings alone
(paper Table 3, :mod:`aria_tda.report.embeddings`)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from aria_tda.report.embeddings import embedding_alignment_table
from aria_tda.report.html.cells import esc
from aria_tda.report.html.tables import alignment_html
from aria_tda.report.latex.cells import PREAMBLE
from aria_tda.report.latex.tables import alignment_latex
from aria_tda.report.load import ResultsData
from aria_tda.report.report_table import ReportTable, channels_in, info_cols, settings_in
from aria_tda.report.sections.base import BaseSection, PageContext
from aria_tda.results import ALIGNMENT_MEASURES, TABLES

__all__ = ["ALIGNMENT", "alignment_table"]

_NAV = {"alignment": "Alignment", "alignment_embeddings": "Table 3"}


def alignment_table(data: ResultsData) -> ReportTable | None:
    """The ``alignment`` table: α_max and α_reg per setting and channel.

    Parameters
    ----------
    data : ResultsData
        The results folder, as read by :func:`aria_tda.report.load.load_results`.

    Returns
    -------
    ReportTable or None
        ``None`` when the folder has no rows for it.
    """
    a = data.table("alignment")
    if a is None or a.empty:
        return None
    channels = channels_in(data, a)
    rows = []
    for s in settings_in(data, a):
        row = info_cols(data, s)
        ss = a[a["setting"] == s]
        for c in channels:
            cc = ss[ss["channel"] == c]
            last = cc.iloc[-1] if len(cc) else None
            for q in ALIGNMENT_MEASURES:
                row[f"{c}_{q}"] = last[q] if last is not None else np.nan
        rows.append(row)
    methods = (
        a["alpha_reg_method"].dropna()
        if "alpha_reg_method" in a.columns
        else pd.Series([], dtype=object)
    )
    fit = f"the {methods.iloc[0]}" if len(methods) else "the in-sample OLS R²"
    return ReportTable(
        "alignment",
        "Axis-channel alignment of u₁",
        "Alignment of the dominant left singular vector u₁ of S_track with each channel (paper Eq. "
        "α): α_max is the largest |corr(u₁, feature dimension)| (the feature is named below), "
        f"α_reg the square root of {fit} of u₁ regressed on a feature group (the group is named "
        "below).",
        pd.DataFrame(rows),
        {"channels": channels},
    )

class AlignmentSection(BaseSection):
    """Axis-channel alignment of u₁ (``alignment``, ``alignment_embeddings``)."""

    name = "alignment"
    title = "Alignment"
    order = 400
    specs = (TABLES["alignment"],)
    exports = ("alignment", "alignment_embeddings")

    def tables(self, data: ResultsData, k: int | None) -> dict[str, ReportTable]:
        alignment = alignment_table(data)
        out = [alignment, embedding_alignment_table(data, alignment)]
        return {t.name: t for t in out if t is not None}

    def html(self, data: ResultsData, tables: Mapping[str, ReportTable],
             ctx: PageContext) -> str | None:
        parts = [ctx.section(name, nav, esc(t.title), alignment_html(t), t.caption)
                 for name, nav in _NAV.items() if (t := tables.get(name)) is not None]
        return "\n".join(parts) or None

    def latex(self, table: ReportTable) -> str | None:
        return PREAMBLE + alignment_latex(table) if table.name in _NAV else None


#: The section object (registered in :mod:`aria_tda.report.sections.registry`).
ALIGNMENT = AlignmentSection()
