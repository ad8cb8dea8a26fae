r"""LaTeX of the ground-truth tables: LDS, LDS summary (paper Table 1), agreement.

Both layouts of the LDS tables: the symbolic demo's (one row per method, the best LDS in bold)
and the audio demo's, where ``lds.csv``'s ``method`` holds setting names (``TRAK/semantic``)
beside ``stage`` / ``base_method`` columns and ``agreement.csv`` has one block of rows per
stage: rows are then grouped by stage (``\multirow`` + ``\midrule``) and the best value is
marked within each stage, since each stage's LDS is measured on its own retrained model.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from aria_tda.report import number_format
from aria_tda.report.latex.cells import (
    DAGGER,
    MISSING,
    best_high,
    escape,
    latex_table,
    multirow,
    num_cell,
    signed_cell,
    stage_blocks,
    table_label,
)
from aria_tda.report.report_table import ReportTable
from aria_tda.results import RELIABILITY_DIAGNOSTICS

__all__ = [
    "agreement_latex",
    "lds_latex",
    "lds_summary_latex",
]


def _best_low(df: pd.DataFrame, rows: Sequence[int], col: str) -> set[int]:
    vals = [
        (round(float(df.iloc[i][col]), 3), i) for i in rows if number_format.finite(df.iloc[i][col])
    ]
    if len(rows) < 2 or not vals:
        return set()
    best = min(v for v, _ in vals)
    return {i for v, i in vals if v == best}


def lds_latex(t: ReportTable) -> str:
    """LDS per method (symbolic layout) or per method and stage (audio layout).

    Parameters
    ----------
    t : ReportTable
        The ``lds`` table of :func:`aria_tda.report.tables.build_tables`; a non-empty
        ``layout["stages"]`` selects the per-stage layout.

    Returns
    -------
    str
        One ``table`` environment; bold marks the best LDS (within each stage).
    """
    if t.layout.get("stages"):
        return _lds_staged_latex(t)
    df = t.df
    best = best_high(df, range(len(df)), "lds")
    body = [r"\toprule", r"Method & LDS$\uparrow$ & SD & Subsets & Queries \\", r"\midrule"]
    for i, (_, r) in enumerate(df.iterrows()):
        body.append(
            " & ".join(
                [
                    escape(r["method"]),
                    num_cell(r["lds"], bold=i in best),
                    num_cell(r["lds_sd"]),
                    number_format.integer(r["n_subsets"], missing=MISSING),
                    number_format.integer(r["n_queries"], missing=MISSING).replace(",", "{,}"),
                ]
            )
            + r" \\"
        )
    body.append(r"\bottomrule")
    return latex_table(
        body,
        colspec="lcccc",
        caption="Linear datamodeling score (LDS) per attribution method (mean over queries, "
        "SD over queries).",
        label=table_label(t.name),
        resize=False,
    )


def lds_summary_latex(t: ReportTable) -> str:
    """Paper Table 1 layout: LDS, reliability of $S^{\\mathrm{seg}}$ and $\\bar z$ per channel.

    Parameters
    ----------
    t : ReportTable
        The ``lds_summary`` table of :func:`aria_tda.report.tables.build_tables`; a non-empty
        ``layout["stages"]`` groups its rows by stage (best values marked within a stage).

    Returns
    -------
    str
        One ``table`` environment.
    """
    df, channels, k = t.df, t.layout["channels"], t.layout["k"]
    rel_cols = list(RELIABILITY_DIAGNOSTICS)
    abbrev = _channel_abbrev(channels)
    nz = len(channels)
    head1 = ["", "", r"\multicolumn{4}{c}{Reliability ($S^{\mathrm{seg}}$)}", ""]
    if nz:
        head1.append(rf"\multicolumn{{{nz}}}{{c}}{{Homogeneity $\bar z$ at $K{{=}}{k}$}}")
    rules = r"\cmidrule(lr){3-6}" + (rf"\cmidrule(lr){{8-{7 + nz}}}" if nz else "")
    head2 = ["Method", "LDS", "$r_1$", "$r_{2:5}$", "$p$", r"$\kappa$", "", *abbrev]
    blocks = (
        stage_blocks(df["stage"].astype(str).tolist())
        if t.layout.get("stages")
        else [list(range(len(df)))]
    )
    body = [r"\toprule", " & ".join(head1) + r" \\", rules, " & ".join(head2) + r" \\", r"\midrule"]
    for bi, block in enumerate(blocks):
        if bi:
            body.append(r"\midrule")
        best_lds = best_high(df, block, "lds")
        best_rel = {c: _best_low(df, block, c) for c in rel_cols}
        for i in block:
            r = df.iloc[i]
            name = escape(r["setting"]) + (DAGGER if r.get("verdict") == "collapsed" else "")
            cells = [name, num_cell(r["lds"], bold=i in best_lds)]
            cells += [num_cell(r[c], bold=i in best_rel[c]) for c in rel_cols]
            cells.append("")
            cells += [signed_cell(r[f"{c}_zbar"], bold_positive=False) for c in channels]
            body.append(" & ".join(cells) + r" \\")
    body.append(r"\bottomrule")
    names = ", ".join(f"{a}: {escape(c)}" for a, c in zip(abbrev, channels, strict=True))
    cap = (
        r"Ground-truth validation. Reliability diagnostics ($r_1$, $r_{2:5}$, $p$, $\kappa$) "
        rf"and within-group homogeneity $\bar z$ at $K{{=}}{k}$ ({names}). "
        "LDS is the attribution ground truth. "
        r"Bold marks the best LDS (highest) and the best reliability value (lowest) per column"
        + (" within each stage." if len(blocks) > 1 else ".")
    )
    return latex_table(
        body,
        colspec="lccccc" + "c" + "c" * nz,
        caption=cap,
        label=table_label(t.name),
        resize=nz > 6,
    )


def _channel_abbrev(channels: Sequence[str]) -> list[str]:
    first = [c[:1].upper() for c in channels]
    if len(set(first)) == len(first):
        return first
    return [escape(c[:3].capitalize()) + "." for c in channels]


def agreement_latex(t: ReportTable) -> str:
    """Rank agreement of each diagnostic with LDS; one block per stage when there are stages.

    Parameters
    ----------
    t : ReportTable
        The ``agreement`` table of :func:`aria_tda.report.tables.build_tables` (a ``stage``
        column adds a Stage column with one ``\\multirow`` block per stage).

    Returns
    -------
    str
        One ``table`` environment.
    """
    df = t.df.reset_index(drop=True)
    staged = "stage" in df.columns
    ci = "spearman_lo" in df.columns
    head = (
        r"Diagnostic & Spearman & 95\% CI & $p$ & Kendall & 95\% CI & $p$ & Methods"
        if ci
        else "Diagnostic & Spearman & Kendall & Methods"
    )
    body = [r"\toprule", ("Stage & " if staged else "") + head + r" \\", r"\midrule"]
    blocks = stage_blocks(df["stage"].astype(str).tolist()) if staged else [list(range(len(df)))]
    for bi, block in enumerate(blocks):
        if bi:
            body.append(r"\midrule")
        for j, i in enumerate(block):
            r = df.iloc[i]
            cells = [multirow(len(block), escape(r["stage"]), j)] if staged else []
            cells.append(escape(r["diagnostic"]))
            for stat in ("spearman", "kendall"):
                cells.append(num_cell(r[stat]))
                if ci:
                    lo, hi = r.get(f"{stat}_lo"), r.get(f"{stat}_hi")
                    ok = number_format.finite(lo) and number_format.finite(hi)
                    cells.append(f"[{signed_cell(lo, bold_positive=False)}, "
                                 f"{signed_cell(hi, bold_positive=False)}]" if ok else MISSING)
                    cells.append(num_cell(r.get(f"{stat}_p_exact")))
            cells.append(number_format.integer(r["n_methods"], missing=MISSING))
            body.append(" & ".join(cells) + r" \\")
    body.append(r"\bottomrule")
    cap = (
        "Rank agreement across methods between each reliability diagnostic "
        "(lower = better) and LDS (higher = better)"
    )
    cap += ", per stage (each stage's methods ranked by that stage's LDS)." if staged else "."
    if ci:
        cap += (
            r" Intervals: percentile bootstrap over queries and LDS subsets, shared by all "
            r"methods; $p$: exact one-sided permutation p-value over the $n!$ orderings of the "
            r"$n$ methods (smallest possible $1/n!$)."
        )
    return latex_table(
        body,
        colspec=("l" if staged else "") + ("lcccccc" if ci else "lcc") + "c",
        caption=cap,
        label=table_label(t.name),
        resize=False,
    )


def _lds_staged_latex(t: ReportTable) -> str:
    """Audio layout: Stage | Method | LDS | SD | (SE) | Subsets | Queries, blocks per stage."""
    df = t.df.reset_index(drop=True)
    se = "lds_se" in df.columns
    head = [
        "Stage",
        "Method",
        r"LDS$\uparrow$",
        "SD",
        *(["SE"] if se else []),
        "Subsets",
        "Queries",
    ]
    body = [r"\toprule", " & ".join(head) + r" \\", r"\midrule"]
    for bi, block in enumerate(stage_blocks(df["stage"].astype(str).tolist())):
        if bi:
            body.append(r"\midrule")
        best = best_high(df, block, "lds")
        for j, i in enumerate(block):
            r = df.iloc[i]
            base = r.get("base_method")
            method = base if isinstance(base, str) and base else r["method"]
            cells = [
                multirow(len(block), escape(r["stage"]), j),
                escape(method),
                num_cell(r["lds"], bold=i in best),
                num_cell(r["lds_sd"]),
                *([num_cell(r["lds_se"])] if se else []),
                number_format.integer(r["n_subsets"], missing=MISSING),
                number_format.integer(r["n_queries"], missing=MISSING).replace(",", "{,}"),
            ]
            body.append(" & ".join(cells) + r" \\")
    body.append(r"\bottomrule")
    cap = (
        "Linear datamodeling score (LDS) per attribution method and stage (mean over queries, "
        "SD over queries" + ("; SE: standard error of the mean" if se else "") + "). Each "
        "stage's LDS is measured on that stage model retrained on random subsets; bold marks "
        "the best LDS within each stage."
    )
    return latex_table(
        body,
        colspec="ll" + "c" * (len(head) - 2),
        caption=cap,
        label=table_label(t.name),
        resize=False,
    )
