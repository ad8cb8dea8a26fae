r"""LaTeX of ARIA's own report tables, one renderer per table, in the paper's layouts.

Homogeneity (paper Table 2, and "Residual homogeneity"), reliability, alignment (Table 3),
confound (Table 6, one table per group), ranking and the null distribution; the sections
(:mod:`aria_tda.report.sections`) call them (LDS, LDS summary and agreement are in
:mod:`aria_tda.report.latex.ground_truth`). :func:`ksweep_figure_latex` writes the figure
around the K-sweep PDFs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd

from aria_tda.report import number_format
from aria_tda.report.latex.cells import (
    DAGGER,
    MISSING,
    PREAMBLE,
    column_title,
    escape,
    latex_table,
    num_cell,
    pct_cell,
    setting_rows,
    signed_cell,
    table_label,
)
from aria_tda.report.report_table import ReportTable
from aria_tda.results import RELIABILITY_DIAGNOSTICS

__all__ = ["ksweep_figure_latex"]


def homogeneity_latex(t: ReportTable) -> str:
    """Paper Table 2 layout (Table "Residual homogeneity" for the residual variant)."""
    df, channels, k = t.df, t.layout["channels"], t.layout["k"]
    residual = t.layout.get("variant") == "residual"
    rel_cols = [
        c
        for c in RELIABILITY_DIAGNOSTICS
        if c in df.columns and df[c].map(number_format.finite).any()
    ]
    rel_head = {"r1": "$r_1$", "r2_5": "$r_{2:5}$", "p": "$p$", "kappa": r"$\kappa$"}
    zsym = r"$\bar{z}^{\mathrm{res}}$" if residual else r"$\bar{z}$"
    n0 = 2 + len(rel_cols)
    head1 = (
        ["", ""]
        + [""] * len(rel_cols)
        + [rf"\multicolumn{{3}}{{c}}{{{column_title(c)}}}" for c in channels]
    )
    rules = "".join(
        rf"\cmidrule(lr){{{n0 + 1 + 3 * i}-{n0 + 3 + 3 * i}}}" for i in range(len(channels))
    )
    head2 = (
        ["Method", "Stage"]
        + [rel_head[c] for c in rel_cols]
        + [zsym, r"Pos$\uparrow$", r"Sig$\uparrow$"] * len(channels)
    )

    def after(r: pd.Series) -> list[str]:
        out = []
        for c in channels:
            out += [signed_cell(r[f"{c}_zbar"]), pct_cell(r[f"{c}_pos"]), pct_cell(r[f"{c}_sig"])]
        return out

    body_rows, any_collapsed, abbreviated = setting_rows(t, after, rel_cols=rel_cols)
    body = [
        r"\toprule",
        " & ".join(head1) + r" \\",
        rules,
        " & ".join(head2) + r" \\",
        r"\midrule",
        *body_rows,
        r"\bottomrule",
    ]
    nq = (
        pd.to_numeric(df.get("n_queries"), errors="coerce").max()
        if "n_queries" in df.columns
        else math.nan
    )
    ntest = (
        rf", $N_{{\text{{test}}}}{{=}}{number_format.integer(nq).replace(',', '{,}')}$"
        if number_format.finite(nq)
        else ""
    )
    what = (
        r"Residual within-group homogeneity ($\bar{z}^{\mathrm{res}}_c$, Pos, Sig) after "
        r"subtracting $\sigma_1 u_1 v_1^\top$ from $S^{\mathrm{seg}}$"
        if residual
        else r"Reliability diagnostics and within-group homogeneity ($\bar z_c$, Pos, Sig)"
    )
    cap = f"{what} at $K{{=}}{k}${ntest}."
    if abbreviated:
        cap += " Stage: S/C/F = semantic/coarse/fine."
    if residual and rel_cols:
        cap += r" Reliability diagnostics are computed on the original $S^{\mathrm{seg}}$."
    cap += (
        r" Bold marks positive $\bar z$ and the best (lowest) reliability value within each "
        r"method group."
    )
    notes = (
        [
            DAGGER
            + r"~collapsed (reliability verdict): $\bar z$ reflects a fixed group, not attribution."
        ]
        if any_collapsed
        else []
    )
    colspec = "ll" + "c" * len(rel_cols) + " rrr" * len(channels)
    return latex_table(
        body, colspec=colspec, caption=cap, label=table_label(t.name), resize=True, notes=notes
    )


def reliability_latex(t: ReportTable) -> str:
    df = t.df
    conc = [c for c in ("top1_share", "topk_overlap") if c in df.columns
            and df[c].map(number_format.finite).any()]
    ks = sorted({int(k) for k in df["topk_K"] if number_format.finite(k)}) if "topk_K" in df else []
    k = str(ks[0]) if len(ks) == 1 else "K"
    names = {"top1_share": "top-1 share", "topk_overlap": f"top-{k} overlap"}
    head = [
        "Setting",
        "Method",
        "Stage",
        r"$\kappa$",
        "$r_1$",
        "$r_{2:5}$",
        "$p$",
        r"$v_1$ const.",
        *(names[c] for c in conc),
        "Verdict",
    ]
    body = [r"\toprule", " & ".join(head) + r" \\", r"\midrule"]
    for _, r in df.iterrows():
        verdict = escape(r["verdict"]) if isinstance(r["verdict"], str) else MISSING
        if r["verdict"] == "collapsed":
            verdict = rf"\textbf{{{verdict}}}"
        stage = MISSING if str(r["stage"]) in ("-", "", "nan") else escape(r["stage"])
        cells = (
            [escape(r["setting"]), escape(r["method"]), stage]
            + [num_cell(r[c]) for c in ("kappa", "r1", "r2_5", "p", "v1_constancy", *conc)]
            + [verdict]
        )
        body.append(" & ".join(cells) + r" \\")
    body.append(r"\bottomrule")
    cap = (
        r"Reliability diagnostics of $S^{\mathrm{seg}}$ ($\kappa$, $r_1$, $r_{2:5}$, $p$; "
        r"paper Eqs.~1--3), constancy of $v_1$ across queries ($|\sum_j v_{1j}|/\sqrt{T}$) and "
        r"the collapse verdict."
        + (r" Top-1 share: queries whose top-1 is the most frequent top-1; top-$K$ overlap: "
           r"mean share of two queries' top-$K$ in common (the verdict's top-$K$ rule)."
           if conc else "")
    )
    return latex_table(body, colspec="lll" + "c" * (5 + len(conc)) + "l", caption=cap,
                       label=table_label(t.name), resize=False)


def alignment_latex(t: ReportTable) -> str:
    """Paper Table 3 layout; bold marks the best value in each column."""
    df, channels = t.df, t.layout["channels"]
    cols = [f"{c}_{q}" for c in channels for q in ("alpha_max", "alpha_reg")]
    best = {}
    for col in cols:
        vals = [round(float(v), 3) for v in df[col] if number_format.finite(v)]
        best[col] = max(vals) if len(vals) > 1 else None
    head1 = [""] + [rf"\multicolumn{{2}}{{c}}{{{column_title(c)}}}" for c in channels]
    rules = "".join(rf"\cmidrule(lr){{{2 + 2 * i}-{3 + 2 * i}}}" for i in range(len(channels)))
    head2 = ["Setting"] + [r"$\alpha^{\max}$", r"$\alpha^{\mathrm{reg}}$"] * len(channels)
    body = [r"\toprule", " & ".join(head1) + r" \\", rules, " & ".join(head2) + r" \\", r"\midrule"]
    for _, r in df.iterrows():
        cells = [escape(r["setting"])]
        for col in cols:
            v = r[col]
            cells.append(
                num_cell(
                    v,
                    bold=best[col] is not None
                    and number_format.finite(v)
                    and round(float(v), 3) == best[col],
                )
            )
        body.append(" & ".join(cells) + r" \\")
    body.append(r"\bottomrule")
    cap = (
        r"Axis-channel alignment of $u_1$ of $S^{\mathrm{track}}$. $\alpha_c^{\max}$: "
        r"single-dimension max correlation. $\alpha_c^{\mathrm{reg}}$: multivariate OLS "
        r"$\sqrt{R^2}$. Bold marks the best value in each column."
    )
    return latex_table(
        body,
        colspec="l" + "cc" * len(channels),
        caption=cap,
        label=table_label(t.name),
        resize=len(channels) > 4,
    )


def confound_latex(t: ReportTable) -> str:
    """Paper Table 6 layout, one table per (setting, variant, channel, column) group."""
    df = t.df
    out = []
    keys = ["setting", "variant", "channel", "column"]
    for n, (key, g) in enumerate(df.groupby(keys, sort=False)):
        setting, variant, channel, column = (str(x) for x in key)
        body = [
            r"\toprule",
            " & ".join(
                [column_title(column), "$n$", r"Mean\,z", r"Pos$\uparrow$", r"Sig$\uparrow$"]
            )
            + r" \\",
            r"\midrule",
        ]
        for _, r in g.iterrows():
            body.append(
                " & ".join(
                    [
                        escape(r["stratum"]),
                        number_format.integer(r["n"], missing=MISSING).replace(",", "{,}"),
                        signed_cell(r["mean_z"], 3),
                        pct_cell(r["pos"]),
                        pct_cell(r["sig"]),
                    ]
                )
                + r" \\"
            )
        body.append(r"\bottomrule")
        sd = g["sd_across"].iloc[0]
        total = int(g["n"].sum())
        var = "" if variant == "original" else f" ({escape(variant)})"
        cap = (
            f"{column_title(channel)} z-score of {escape(setting)}{var} stratified by "
            f"{escape(column)} "
            f"at $K{{=}}{t.layout.get('k')}$ "
            f"($n{{=}}{number_format.integer(total).replace(',', '{,}')}$ labelled queries); "
            f"SD of the stratum means across strata: {number_format.fixed(sd, 3, missing=MISSING)}."
        )
        out.append(
            latex_table(
                body,
                colspec="lrrrr",
                caption=cap,
                label=f"{table_label(t.name)}-{n + 1}",
                resize=False,
            )
        )
    return "\n".join(out)


def ranking_latex(t: ReportTable) -> str:
    df, channels = t.df, t.layout["channels"]
    head = ["Setting", "Variant"] + [column_title(c) for c in channels] + ["Excluded"]
    body = [r"\toprule", " & ".join(head) + r" \\", r"\midrule"]
    for _, r in df.iterrows():
        cells = [escape(r["setting"]), escape(r["variant"])]
        for c in channels:
            rk = r[f"{c}_rank"]
            cells.append(
                signed_cell(r[f"{c}_zbar"], bold_positive=False)
                + (f" ({int(rk)})" if number_format.finite(rk) else "")
            )
        cells.append("yes" if r["excluded"] else "no")
        body.append(" & ".join(cells) + r" \\")
    body.append(r"\bottomrule")
    cap = (
        rf"Settings ranked per channel on $\bar z_c$ at $K{{=}}{t.layout['k']}$ "
        "(rank in parentheses); collapsed settings are excluded."
    )
    return latex_table(
        body,
        colspec="ll" + "r" * len(channels) + "c",
        caption=cap,
        label=table_label(t.name),
        resize=len(channels) > 4,
    )


def null_latex(t: ReportTable) -> str:
    body = [r"\toprule", r"$K$ & Channel & Feature & $\mu$ & $\sigma$ & $B$ \\", r"\midrule"]
    for _, r in t.df.iterrows():
        feat = r"\emph{channel}" if str(r["feature"]) == "*" else escape(r["feature"])
        body.append(
            " & ".join(
                [
                    str(int(r["K"])),
                    escape(r["channel"]),
                    feat,
                    number_format.general(r["mu"], missing=MISSING),
                    number_format.general(r["sigma"], missing=MISSING),
                    number_format.integer(r["B"], missing=MISSING),
                ]
            )
            + r" \\"
        )
    body.append(r"\bottomrule")
    return latex_table(
        body,
        colspec="rllrrr",
        caption="Null distribution of within-group similarity over $B$ random groups of size "
        "$K$: per feature and per channel.",
        label=table_label(t.name),
        resize=False,
    )



def ksweep_figure_latex(files: Sequence[tuple[str, str]], *, k: int | None) -> str:
    """A ``figure`` with one subfigure per setting.

    Parameters
    ----------
    files : sequence of (str, str)
        ``(pdf path relative to the exports folder, setting)`` per panel, in order.
    k : int or None
        The tables' group size, named in the caption (the dotted line of each panel).

    Returns
    -------
    str
        :data:`PREAMBLE`, then one ``figure`` environment (three panels a row, four when there
        are exactly four).
    """
    width = "0.32" if len(files) != 4 else "0.245"
    lines = [
        PREAMBLE.rstrip(),
        "% PDF paths are relative to this folder: \\graphicspath{{path/to/this/folder/}}",
        r"\begin{figure}[t]",
        r"\centering",
    ]
    for i, (path, setting) in enumerate(files):
        sep = r"\hfill" if (i + 1) % (3 if width == "0.32" else 4) else r"\\[0.4em]"
        lines.append(
            rf"\begin{{subfigure}}[t]{{{width}\textwidth}}\includegraphics[width=\linewidth]{{{path}}}"
            rf"\caption{{{escape(setting)}}}\end{{subfigure}}{sep if i < len(files) - 1 else ''}"
        )
    kk = f" The dotted line marks $K{{=}}{k}$." if k is not None else ""
    lines.append(
        r"\caption{Homogeneity $\bar z_c$ across $K$. Dashed curves use the original "
        r"$S^{\mathrm{seg}}$, solid curves use the rank-1 residual; bands are bootstrap 95\% CIs "
        r"over queries." + kk + "}"
    )
    lines += [r"\label{fig:aria-ksweep}", r"\end{figure}"]
    return "\n".join(lines) + "\n"
