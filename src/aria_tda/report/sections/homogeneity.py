r"""The homogeneity section: :math:`\bar z_c` with its CI, Pos and Sig per channel at the report's
K (original scores, then each other variant), the K-sweep plots and data, and the null
distribution (shown with the run details)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from aria_tda.report.html.cells import esc
from aria_tda.report.html.tables import homogeneity_html
from aria_tda.report.latex.cells import PREAMBLE
from aria_tda.report.latex.tables import homogeneity_latex, null_latex
from aria_tda.report.load import ResultsData
from aria_tda.report.report_table import ReportTable, channels_in, info_cols, settings_in
from aria_tda.report.sections.base import BaseSection, PageContext
from aria_tda.results import HOMOGENEITY_SUMMARY, RELIABILITY_DIAGNOSTICS, TABLES

__all__ = ["HOMOGENEITY", "homogeneity_table", "ksweep_plots", "ksweep_table", "null_table"]

#: What the K-sweep section says under its panels.
KSWEEP_CAPTION = (
    "Mean homogeneity z̄_c against the group size K, one panel per setting. Dashed curves "
    "(open markers) use the original score matrix S_seg, solid curves (filled markers) its "
    "rank-1 residual; colours and markers identify channels; bands are bootstrap 95% CIs "
    "over queries; the dotted line marks the tables' K."
)


def homogeneity_table(data: ResultsData, *, variant: str, k: int) -> ReportTable | None:
    """Reliability + per-channel z-bar (95% CI), Pos, Sig at group size ``k`` for one variant.

    Parameters
    ----------
    data : ResultsData
        The results folder, as read by :func:`aria_tda.report.load.load_results`.
    variant : str
        ``"original"``, ``"residual"``, ... (the table is ``homogeneity`` or
        ``homogeneity_<variant>``).
    k : int
        The group size.

    Returns
    -------
    ReportTable or None
        ``None`` when the folder has no rows for it.
    """
    h = data.table("homogeneity")
    if h is None:
        return None
    sub = h[(h["variant"] == variant) & (h["K"] == k)]
    if sub.empty:
        return None
    rel = data.table("reliability")
    channels = channels_in(data, sub)
    rows = []
    for s in settings_in(data, sub):
        row = info_cols(data, s)
        rr = rel[rel["setting"] == s] if rel is not None else None
        for c in RELIABILITY_DIAGNOSTICS:
            row[c] = rr.iloc[-1][c] if rr is not None and len(rr) else np.nan
        ss = sub[sub["setting"] == s]
        for c in channels:
            cc = ss[ss["channel"] == c]
            last = cc.iloc[-1] if len(cc) else None
            for q in HOMOGENEITY_SUMMARY:
                row[f"{c}_{q}"] = last[q] if last is not None else np.nan
        row["n_queries"] = int(ss["n_queries"].max()) if len(ss) else np.nan
        rows.append(row)
    residual = variant == "residual"
    name = "homogeneity" if variant == "original" else f"homogeneity_{variant}"
    title = (
        f"Residual homogeneity at K = {k}"
        if residual
        else f"Homogeneity at K = {k}"
        if variant == "original"
        else f"Homogeneity ({variant}) at K = {k}"
    )
    what = (
        "z̄ (mean over queries of z_c(q), with its bootstrap 95% CI over queries), Pos (fraction "
        "of queries with z > 0) and Sig (fraction with z > 1.96). Reliability diagnostics are "
        "those of the original S_seg."
    )
    caption = (
        f"Homogeneity after subtracting the rank-1 component σ₁u₁v₁ᵀ from S_seg, at K = {k}: {what}"
        if residual
        else f"Within-group homogeneity per channel at K = {k} ({variant} scores): {what}"
    )
    return ReportTable(
        name, title, caption, pd.DataFrame(rows), {"channels": channels, "k": k, "variant": variant}
    )

def null_table(data: ResultsData) -> ReportTable | None:
    """The ``null`` table: μ, σ per K, channel (feature ``*``) and feature.

    Parameters
    ----------
    data : ResultsData
        The results folder, as read by :func:`aria_tda.report.load.load_results`.

    Returns
    -------
    ReportTable or None
        ``None`` when the folder has no rows for it.
    """
    nl = data.table("null")
    if nl is None or nl.empty:
        return None
    c_order = {c: i for i, c in enumerate(data.channels)}
    df = nl.assign(
        _c=nl["channel"].map(c_order).fillna(len(c_order)), _f=(nl["feature"] != "*").astype(int)
    )
    df = (
        df.sort_values(["K", "_c", "_f", "feature"], kind="stable")
        .drop(columns=["_c", "_f"])
        .reset_index(drop=True)
    )
    return ReportTable(
        "null",
        "Null distribution",
        "Mean and SD of the within-group similarity over B random groups of size K drawn from the "
        "training pool: per feature, and per channel (feature '*').",
        df,
    )

def ksweep_table(data: ResultsData) -> ReportTable | None:
    """The ``ksweep`` table: z̄ per setting, variant, channel and K (the plots' data).

    Parameters
    ----------
    data : ResultsData
        The results folder, as read by :func:`aria_tda.report.load.load_results`.

    Returns
    -------
    ReportTable or None
        ``None`` when the folder has no rows for it.
    """
    h = data.table("homogeneity")
    if h is None or h.empty:
        return None
    return ReportTable(
        "ksweep",
        "K-sweep",
        "z̄ per setting, variant, channel and group size K (the data behind the K-sweep plots).",
        data.in_study_order(h, ["setting", "variant", "channel", "K"]),
    )

def ksweep_plots(data: ResultsData, k: int | None, *,
                 enabled: bool) -> tuple[dict[str, str], str | None]:
    """The K-sweep panel of each setting as inline SVG, and a note when there are none.

    Parameters
    ----------
    data : ResultsData
        The results folder (its ``homogeneity`` table).
    k : int or None
        The tables' K, marked with a dotted line.
    enabled : bool
        Whether plots are wanted.

    Returns
    -------
    (dict[str, str], str or None)
        Setting → ``<svg>``, and why there are no panels (``None`` when there are, or when the
        folder has no homogeneity results).
    """
    from aria_tda.report import plots

    h = data.table("homogeneity")
    if h is None or h.empty:
        return {}, None
    if not enabled:
        return {}, "K-sweep plots were turned off for this report."
    if not plots.available():
        return (
            {},
            "K-sweep plots need matplotlib: pip install 'aria-tda[report]'. The K-sweep numbers "
            "are in the tables and ksweep.csv.",
        )
    out = {}
    for i, s in enumerate(data.settings):
        rows = h[h["setting"] == s]
        if rows.empty:
            continue
        channels = [c for c in data.channels if c in set(rows["channel"])]
        out[s] = plots.ksweep_svg(
            rows,
            setting=s,
            channels=data.channels if len(channels) == len(data.channels) else channels,
            salt=f"aria-ksweep-{i}",
            k_report=k,
            verdict=data.verdict(s),
        )
    return out, None


class HomogeneitySection(BaseSection):
    """Homogeneity per variant at K, the K-sweep (plots and ``ksweep`` data) and the null."""

    name = "homogeneity"
    title = "Homogeneity"
    order = 300
    specs = (TABLES["homogeneity"], TABLES["query_z"], TABLES["null"])
    exports = ("homogeneity", "ksweep", "null")

    def tables(self, data: ResultsData, k: int | None) -> dict[str, ReportTable]:
        out: list[ReportTable | None] = []
        if k is not None:
            out.append(homogeneity_table(data, variant="original", k=k))
            out += [homogeneity_table(data, variant=v, k=k) for v in data.variants
                    if v != "original"]
        out += [ksweep_table(data), null_table(data)]
        return {t.name: t for t in out if t is not None}

    def html(self, data: ResultsData, tables: Mapping[str, ReportTable],
             ctx: PageContext) -> str | None:
        parts = []
        t = tables.get("homogeneity")
        if t is not None:
            parts.append(ctx.section("homogeneity", "Homogeneity", esc(t.title),
                                     homogeneity_html(t), t.caption))
        svgs, note = ksweep_plots(data, ctx.k, enabled=ctx.plots)
        if svgs:
            figs = "".join(
                f'<figure class="plot" data-setting="{esc(s)}" aria-label="K-sweep of {esc(s)}">'
                f"{svg}</figure>"
                for s, svg in svgs.items()
            )
            parts.append(ctx.section("ksweep", "K-sweep", "K-sweep",
                                     f'<div class="plots">{figs}</div>', KSWEEP_CAPTION))
        elif note:
            parts.append(ctx.section("ksweep", "K-sweep", "K-sweep",
                                     f'<p class="note">{esc(note)}</p>'))
        for name, t in tables.items():
            if name.startswith("homogeneity_"):
                variant = t.layout.get("variant")
                parts.append(ctx.section(name, "Residual" if variant == "residual"
                                         else esc(variant), esc(t.title), homogeneity_html(t),
                                         t.caption))
        return "\n".join(parts) or None

    def latex(self, table: ReportTable) -> str | None:
        if table.name == "homogeneity" or table.name.startswith("homogeneity_"):
            return PREAMBLE + homogeneity_latex(table)
        if table.name == "null":
            return PREAMBLE + null_latex(table)
        return None


#: The section object (registered in :mod:`aria_tda.report.sections.registry`).
HOMOGENEITY = HomogeneitySection()
