"""The TRAK sensitivity sweep in the report (``sensitivity.csv``, ``aria-tda sensitivity``):
z̄ across projection dimension × λ, wide, with its HTML and LaTeX (paper appendix)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from aria_tda.report import number_format
from aria_tda.report.html.cells import Cell, column_title, esc, html_table, num_cell, th
from aria_tda.report.latex.cells import MISSING, escape, latex_table, signed_cell, table_label
from aria_tda.report.latex.cells import column_title as _tex_title
from aria_tda.report.load import ResultsData
from aria_tda.report.report_table import ReportTable, channels_in

__all__ = ["sensitivity_html", "sensitivity_latex", "sensitivity_table"]

SENS_GROUP_COLUMNS = ("setting", "stage", "method")


def sensitivity_table(data: ResultsData, *, k: int | None) -> ReportTable | None:
    """Wide TRAK sensitivity table: one row per (proj_dim, lam); columns per (group, channel).

    ``sensitivity.csv`` may carry an optional ``setting`` (or ``stage`` / ``method``) column to
    hold several settings (the paper's Semantic / Coarse / Fine column groups) and an optional
    boolean ``selected`` column marking the configuration used elsewhere.

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
    sens = data.table("sensitivity")
    if sens is None or sens.empty:
        return None
    ks = sorted(set(sens["K"]))
    use_k = k if k in ks else max(ks)
    sub = sens[sens["K"] == use_k]
    gcol = next((c for c in SENS_GROUP_COLUMNS if c in sub.columns), None)
    groups = list(dict.fromkeys(str(g) for g in sub[gcol])) if gcol else [""]
    channels = channels_in(data, sub)
    keys = (
        sub[["proj_dim", "lam"]]
        .drop_duplicates()
        .sort_values(["proj_dim", "lam"])
        .itertuples(index=False)
    )
    rows = []
    for proj, lam in keys:
        row: dict[str, Any] = {"proj_dim": int(proj), "lam": float(lam)}
        sel = sub[(sub["proj_dim"] == proj) & (sub["lam"] == lam)]
        row["selected"] = (
            bool(sel["selected"].map(bool).any()) if "selected" in sel.columns else False
        )
        for g in groups:
            sg = sel[sel[gcol].astype(str) == g] if gcol else sel
            for c in channels:
                cc = sg[sg["channel"] == c]
                row[f"{g}_{c}" if g else c] = cc.iloc[-1]["zbar"] if len(cc) else np.nan
        rows.append(row)
    return ReportTable(
        "sensitivity",
        f"TRAK hyperparameter sensitivity at K = {use_k}",
        f"z̄ at K = {use_k} across projection dimension and regularisation λ (★ = the "
        "configuration used elsewhere).",
        pd.DataFrame(rows),
        {"channels": channels, "groups": groups, "k": use_k},
    )

def sensitivity_html(t: ReportTable) -> str:
    """HTML of the sensitivity table (column groups per setting or stage, ★ = selected).

    Parameters
    ----------
    t : ReportTable
        The table, from :func:`sensitivity_table`.

    Returns
    -------
    str
    """
    df, channels, groups = t.df, t.layout["channels"], t.layout["groups"]
    head = []
    if groups != [""]:
        head.append(
            [th("", colspan="2")]
            + [th(column_title(g), colspan=str(len(channels)), **{"class": "grp"}) for g in groups]
        )
    head.append(
        [th("Projection dim"), th("λ")] + [th(column_title(c)) for _ in groups for c in channels]
    )
    rows: list[tuple[Sequence[Cell], dict[str, str]]] = []
    for _, r in df.iterrows():
        lam = number_format.lam(r["lam"]) + (" ★" if r.get("selected") else "")
        cells = [num_cell(esc(int(r["proj_dim"]))), num_cell(esc(lam))]
        for g in groups:
            for c in channels:
                v = r[f"{g}_{c}" if g else c]
                cells.append(
                    num_cell(
                        esc(number_format.signed(v)),
                        cls="pos" if number_format.finite(v) and v > 0 else "",
                        **{"data-col": f"{g}_{c}" if g else c},
                    )
                )
        rows.append((cells, {}))
    return html_table(head, rows, attrs={"id": "table-sensitivity"})



def _lam_tex(x: Any) -> str:
    s = number_format.lam(x)
    if s.startswith("1e"):
        return rf"$10^{{{int(s[2:])}}}$"
    return f"${s}$" if s != number_format.DASH else MISSING


def sensitivity_latex(t: ReportTable) -> str:
    """Paper appendix layout: rows (projection dim, lambda), column groups per setting/stage.

    Parameters
    ----------
    t : ReportTable
        The table, from :func:`sensitivity_table`.

    Returns
    -------
    str
    """
    df, channels, groups = t.df, t.layout["channels"], t.layout["groups"]
    nc = len(channels)
    abbrev = [escape(c[:3].capitalize()) + "." for c in channels]
    body = [r"\toprule"]
    if groups != [""]:
        head1 = ["", ""] + [rf"\multicolumn{{{nc}}}{{c}}{{{_tex_title(g)}}}" for g in groups]
        rules = "".join(
            rf"\cmidrule(lr){{{3 + nc * i}-{2 + nc * (i + 1)}}}" for i in range(len(groups))
        )
        body += [" & ".join(head1) + r" \\", rules]
    body.append(" & ".join(["Proj.", r"$\lambda$"] + abbrev * len(groups)) + r" \\")
    body.append(r"\midrule")
    projs = list(dict.fromkeys(df["proj_dim"]))
    for pi, proj in enumerate(projs):
        if pi:
            body.append(r"\midrule")
        sub = df[df["proj_dim"] == proj]
        for j, (_, r) in enumerate(sub.iterrows()):
            first = (
                rf"\multirow{{{len(sub)}}}{{*}}{{{int(proj)}}}"
                if j == 0 and len(sub) > 1
                else (str(int(proj)) if j == 0 else "")
            )
            lam = _lam_tex(r["lam"]) + (r"\rlap{$^{\star}$}" if r.get("selected") else "")
            cells = [first, lam] + [
                signed_cell(r[f"{g}_{c}" if g else c]) for g in groups for c in channels
            ]
            body.append(" & ".join(cells) + r" \\")
    body.append(r"\bottomrule")
    star = (
        " Selected configuration marked $(\\star)$."
        if df.get("selected", pd.Series(dtype=bool)).any()
        else ""
    )
    cap = (
        rf"TRAK hyperparameter sensitivity. $\bar{{z}}$ at $K{{=}}{t.layout['k']}$ across "
        rf"projection dim and $\lambda$. Positive values in \textbf{{bold}}.{star}"
    )
    return latex_table(
        body,
        colspec="cc" + "r" * (nc * len(groups)),
        caption=cap,
        label=table_label(t.name),
        resize=nc * len(groups) > 6,
    )
