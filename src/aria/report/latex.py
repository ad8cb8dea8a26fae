r"""LaTeX (booktabs) renderings of the report's tables, in the paper's layouts.

Each function takes a :class:`~aria.report.tables.ReportTable` and returns the text of one
``table`` environment (several for the confound breakdown). The cells are the CSV export's
numbers, rounded: reliability diagnostics, alignment and LDS to 3 decimals, :math:`\bar z` to 2
decimals with an explicit sign, Pos / Sig as percentages with 1 decimal. Bold marks positive
:math:`\bar z` and, within a method group of several stages, the best (lowest) reliability value
(paper Tables 1-2); in the alignment table the best value per column (Table 3). Settings whose
verdict is ``collapsed`` carry a dagger explained under the table.

Needs ``\usepackage{booktabs, multirow, graphicx}`` (and ``subcaption`` for the K-sweep figure).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pandas as pd

from aria.report import _fmt
from aria.report.tables import ReportTable

__all__ = ["PREAMBLE", "escape", "render_latex"]

PREAMBLE = "% needs \\usepackage{booktabs,multirow,graphicx} (and subcaption for the K-sweep figure)\n"

_SPECIAL = {
    "\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
    "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
    "<": r"\textless{}", ">": r"\textgreater{}", "|": r"\textbar{}",
}
STAGE_ABBREV = {"semantic": "S", "coarse": "C", "fine": "F"}
DAGGER = r"$^\dagger$"
MISSING = "---"


def escape(s: Any) -> str:
    """Escape text for LaTeX (every special character; newlines become spaces)."""
    text = " ".join(str(s).split())
    return "".join(_SPECIAL.get(ch, ch) for ch in text)


def _num(x: Any, nd: int = 3, *, bold: bool = False) -> str:
    s = _fmt.fixed(x, nd, missing=MISSING)
    return rf"\textbf{{{s}}}" if bold and s != MISSING else s


def _signed(x: Any, nd: int = 2, *, bold_positive: bool = True) -> str:
    if not _fmt.finite(x):
        return MISSING
    s = _fmt.signed(x, nd)
    if s.startswith("-"):
        return "$-$" + s[1:]
    return rf"\textbf{{{s}}}" if bold_positive and float(x) > 0 else s


def _pct(x: Any) -> str:
    s = _fmt.pct(x, missing=MISSING)
    return s.replace("%", r"\%")


def _label(name: str) -> str:
    return "tab:aria-" + "".join(ch if ch.isalnum() else "-" for ch in name)


def _caption(text: str) -> str:
    return text


def _table(body: list[str], *, colspec: str, caption: str, label: str, resize: bool, notes: Sequence[str] = ()) -> str:
    lines = [r"\begin{table}[t]", r"\centering", rf"\caption{{{caption}}}", rf"\label{{{label}}}"]
    if resize:
        lines.append(r"\resizebox{\linewidth}{!}{%")
    lines.append(rf"\begin{{tabular}}{{{colspec}}}")
    lines += body
    lines.append(r"\end{tabular}" + ("%" if resize else ""))
    if resize:
        lines.append("}")
    if notes:
        lines.append(r"\par\smallskip\begin{minipage}{\linewidth}\footnotesize")
        lines += [n + r"\\" for n in notes]
        lines.append(r"\end{minipage}")
    lines.append(r"\end{table}")
    return "\n".join(lines) + "\n"


def _title(c: str) -> str:
    return escape(c[:1].upper() + c[1:])


def _stage_text(stages: Sequence[Any]) -> tuple[dict[str, str], bool]:
    real = [str(s) for s in stages if str(s) not in ("-", "", "nan", "None")]
    abbreviate = bool(real) and all(s.lower() in STAGE_ABBREV for s in real)
    out = {}
    for s in {str(x) for x in stages}:
        if s in ("-", "", "nan", "None"):
            out[s] = MISSING
        else:
            out[s] = STAGE_ABBREV[s.lower()] if abbreviate else escape(s)
    return out, abbreviate


def _method_groups(df: pd.DataFrame) -> list[list[int]]:
    """Consecutive rows sharing a method (with a real stage) form a group."""
    groups: list[list[int]] = []
    prev = None
    for i, (m, st) in enumerate(zip(df["method"].astype(str), df["stage"].astype(str), strict=True)):
        key = m if st not in ("-", "", "nan", "None") else None
        if groups and key is not None and key == prev:
            groups[-1].append(i)
        else:
            groups.append([i])
        prev = key
    return groups


def _best_low(df: pd.DataFrame, rows: list[int], col: str) -> set[int]:
    if len(rows) < 2 or col not in df.columns:
        return set()
    vals = [(float(df.iloc[i][col]), i) for i in rows if _fmt.finite(df.iloc[i][col])]
    if not vals:
        return set()
    best = round(min(v for v, _ in vals), 3)
    return {i for v, i in vals if round(v, 3) == best}


def _setting_rows(t: ReportTable, cells_after: Any, *, rel_cols: Sequence[str]) -> tuple[list[str], bool, bool]:
    """Body rows (one per setting) with Method/Stage grouping; returns (rows, any_collapsed, abbreviated)."""
    df = t.df
    stage_map, abbreviated = _stage_text(df["stage"].tolist())
    groups = _method_groups(df)
    rows: list[str] = []
    any_collapsed = False
    for gi, g in enumerate(groups):
        if gi > 0 and (len(g) > 1 or len(groups[gi - 1]) > 1):
            rows.append(r"\midrule")
        bold = {c: _best_low(df, g, c) for c in rel_cols}
        for j, i in enumerate(g):
            r = df.iloc[i]
            collapsed = r.get("verdict") == "collapsed"
            any_collapsed |= collapsed
            mark = DAGGER if collapsed else ""
            stage = stage_map[str(r["stage"])]
            if len(g) > 1:
                method = rf"\multirow{{{len(g)}}}{{*}}{{{escape(r['method'])}}}" if j == 0 else ""
                first = [method, stage + mark]
            else:
                first = [escape(r["setting"]) + mark, stage]
            rel = [_num(r[c], bold=i in bold[c]) for c in rel_cols]
            rows.append(" & ".join(first + rel + cells_after(r)) + r" \\")
    return rows, any_collapsed, abbreviated


def homogeneity_latex(t: ReportTable) -> str:
    """Paper Table 2 layout (Table "Residual homogeneity" for the residual variant)."""
    df, channels, k = t.df, t.layout["channels"], t.layout["k"]
    residual = t.layout.get("variant") == "residual"
    rel_cols = [c for c in ("r1", "r2_5", "p", "kappa") if c in df.columns and df[c].map(_fmt.finite).any()]
    rel_head = {"r1": "$r_1$", "r2_5": "$r_{2:5}$", "p": "$p$", "kappa": r"$\kappa$"}
    zsym = r"$\bar{z}^{\mathrm{res}}$" if residual else r"$\bar{z}$"
    n0 = 2 + len(rel_cols)
    head1 = ["", ""] + [""] * len(rel_cols) + [rf"\multicolumn{{3}}{{c}}{{{_title(c)}}}" for c in channels]
    rules = "".join(rf"\cmidrule(lr){{{n0 + 1 + 3 * i}-{n0 + 3 + 3 * i}}}" for i in range(len(channels)))
    head2 = ["Method", "Stage"] + [rel_head[c] for c in rel_cols] + [zsym, r"Pos$\uparrow$", r"Sig$\uparrow$"] * len(channels)

    def after(r: pd.Series) -> list[str]:
        out = []
        for c in channels:
            out += [_signed(r[f"{c}_zbar"]), _pct(r[f"{c}_pos"]), _pct(r[f"{c}_sig"])]
        return out

    body_rows, any_collapsed, abbreviated = _setting_rows(t, after, rel_cols=rel_cols)
    body = [r"\toprule", " & ".join(head1) + r" \\", rules, " & ".join(head2) + r" \\", r"\midrule", *body_rows, r"\bottomrule"]
    nq = pd.to_numeric(df.get("n_queries"), errors="coerce").max() if "n_queries" in df.columns else math.nan
    ntest = rf", $N_{{\text{{test}}}}{{=}}{_fmt.integer(nq).replace(',', '{,}')}$" if _fmt.finite(nq) else ""
    what = (
        r"Residual within-group homogeneity ($\bar{z}^{\mathrm{res}}_c$, Pos, Sig) after subtracting "
        r"$\sigma_1 u_1 v_1^\top$ from $S^{\mathrm{seg}}$"
        if residual else r"Reliability diagnostics and within-group homogeneity ($\bar z_c$, Pos, Sig)"
    )
    cap = f"{what} at $K{{=}}{k}${ntest}."
    if abbreviated:
        cap += " Stage: S/C/F = semantic/coarse/fine."
    if residual and rel_cols:
        cap += r" Reliability diagnostics are computed on the original $S^{\mathrm{seg}}$."
    cap += r" Bold marks positive $\bar z$ and the best (lowest) reliability value within each method group."
    notes = [DAGGER + r"~collapsed (reliability verdict): $\bar z$ reflects a fixed group, not attribution."] if any_collapsed else []
    colspec = "ll" + "c" * len(rel_cols) + " rrr" * len(channels)
    return _table(body, colspec=colspec, caption=cap, label=_label(t.name), resize=True, notes=notes)


def reliability_latex(t: ReportTable) -> str:
    df = t.df
    head = ["Setting", "Method", "Stage", r"$\kappa$", "$r_1$", "$r_{2:5}$", "$p$", r"$v_1$ const.", "Verdict"]
    body = [r"\toprule", " & ".join(head) + r" \\", r"\midrule"]
    for _, r in df.iterrows():
        verdict = escape(r["verdict"]) if isinstance(r["verdict"], str) else MISSING
        if r["verdict"] == "collapsed":
            verdict = rf"\textbf{{{verdict}}}"
        stage = MISSING if str(r["stage"]) in ("-", "", "nan") else escape(r["stage"])
        cells = [escape(r["setting"]), escape(r["method"]), stage] + [_num(r[c]) for c in ("kappa", "r1", "r2_5", "p", "v1_constancy")] + [verdict]
        body.append(" & ".join(cells) + r" \\")
    body.append(r"\bottomrule")
    cap = (r"Reliability diagnostics of $S^{\mathrm{seg}}$ ($\kappa$, $r_1$, $r_{2:5}$, $p$; paper Eqs.~1--3), "
           r"constancy of $v_1$ across queries ($|\sum_j v_{1j}|/\sqrt{T}$) and the collapse verdict.")
    return _table(body, colspec="lllcccccl", caption=cap, label=_label(t.name), resize=False)


def alignment_latex(t: ReportTable) -> str:
    """Paper Table 3 layout; bold marks the best value in each column."""
    df, channels = t.df, t.layout["channels"]
    cols = [f"{c}_{q}" for c in channels for q in ("alpha_max", "alpha_reg")]
    best = {}
    for col in cols:
        vals = [round(float(v), 3) for v in df[col] if _fmt.finite(v)]
        best[col] = max(vals) if len(vals) > 1 else None
    head1 = [""] + [rf"\multicolumn{{2}}{{c}}{{{_title(c)}}}" for c in channels]
    rules = "".join(rf"\cmidrule(lr){{{2 + 2 * i}-{3 + 2 * i}}}" for i in range(len(channels)))
    head2 = ["Setting"] + [r"$\alpha^{\max}$", r"$\alpha^{\mathrm{reg}}$"] * len(channels)
    body = [r"\toprule", " & ".join(head1) + r" \\", rules, " & ".join(head2) + r" \\", r"\midrule"]
    for _, r in df.iterrows():
        cells = [escape(r["setting"])]
        for col in cols:
            v = r[col]
            cells.append(_num(v, bold=best[col] is not None and _fmt.finite(v) and round(float(v), 3) == best[col]))
        body.append(" & ".join(cells) + r" \\")
    body.append(r"\bottomrule")
    cap = (r"Axis-channel alignment of $u_1$ of $S^{\mathrm{track}}$. $\alpha_c^{\max}$: single-dimension max "
           r"correlation. $\alpha_c^{\mathrm{reg}}$: multivariate OLS $\sqrt{R^2}$. Bold marks the best value in each column.")
    return _table(body, colspec="l" + "cc" * len(channels), caption=cap, label=_label(t.name), resize=len(channels) > 4)


def confound_latex(t: ReportTable) -> str:
    """Paper Table 6 layout, one table per (setting, variant, channel, column) group."""
    df = t.df
    out = []
    keys = ["setting", "variant", "channel", "column"]
    for n, (key, g) in enumerate(df.groupby(keys, sort=False)):
        setting, variant, channel, column = (str(x) for x in key)
        body = [r"\toprule", " & ".join([_title(column), "$n$", r"Mean\,z", r"Pos$\uparrow$", r"Sig$\uparrow$"]) + r" \\", r"\midrule"]
        for _, r in g.iterrows():
            body.append(" & ".join([escape(r["stratum"]), _fmt.integer(r["n"], missing=MISSING).replace(",", "{,}"), _signed(r["mean_z"], 3), _pct(r["pos"]), _pct(r["sig"])]) + r" \\")
        body.append(r"\bottomrule")
        sd = g["sd_across"].iloc[0]
        total = int(g["n"].sum())
        var = "" if variant == "original" else f" ({escape(variant)})"
        cap = (f"{_title(channel)} z-score of {escape(setting)}{var} stratified by {escape(column)} at "
               f"$K{{=}}{t.layout.get('k')}$ ($n{{=}}{_fmt.integer(total).replace(',', '{,}')}$ labelled queries); "
               f"SD of the stratum means across strata: {_fmt.fixed(sd, 3, missing=MISSING)}.")
        out.append(_table(body, colspec="lrrrr", caption=cap, label=f"{_label(t.name)}-{n + 1}", resize=False))
    return "\n".join(out)


def ranking_latex(t: ReportTable) -> str:
    df, channels = t.df, t.layout["channels"]
    head = ["Setting", "Variant"] + [_title(c) for c in channels] + ["Excluded"]
    body = [r"\toprule", " & ".join(head) + r" \\", r"\midrule"]
    for _, r in df.iterrows():
        cells = [escape(r["setting"]), escape(r["variant"])]
        for c in channels:
            rk = r[f"{c}_rank"]
            cells.append(_signed(r[f"{c}_zbar"], bold_positive=False) + (f" ({int(rk)})" if _fmt.finite(rk) else ""))
        cells.append("yes" if r["excluded"] else "no")
        body.append(" & ".join(cells) + r" \\")
    body.append(r"\bottomrule")
    cap = rf"Settings ranked per channel on $\bar z_c$ at $K{{=}}{t.layout['k']}$ (rank in parentheses); collapsed settings are excluded."
    return _table(body, colspec="ll" + "r" * len(channels) + "c", caption=cap, label=_label(t.name), resize=len(channels) > 4)


def lds_latex(t: ReportTable) -> str:
    df = t.df
    best = max((round(float(v), 3) for v in df["lds"] if _fmt.finite(v)), default=None)
    body = [r"\toprule", r"Method & LDS$\uparrow$ & SD & Subsets & Queries \\", r"\midrule"]
    for _, r in df.iterrows():
        body.append(" & ".join([
            escape(r["method"]),
            _num(r["lds"], bold=len(df) > 1 and _fmt.finite(r["lds"]) and round(float(r["lds"]), 3) == best),
            _num(r["lds_sd"]), _fmt.integer(r["n_subsets"], missing=MISSING), _fmt.integer(r["n_queries"], missing=MISSING).replace(",", "{,}"),
        ]) + r" \\")
    body.append(r"\bottomrule")
    return _table(body, colspec="lcccc", caption="Linear datamodeling score (LDS) per attribution method (mean over queries, SD over queries).",
                  label=_label(t.name), resize=False)


def lds_summary_latex(t: ReportTable) -> str:
    """Paper Table 1 layout: LDS, reliability of $S^{\\mathrm{seg}}$ and $\\bar z$ per channel."""
    df, channels, k = t.df, t.layout["channels"], t.layout["k"]
    rel_cols = ["r1", "r2_5", "p", "kappa"]
    abbrev = _channel_abbrev(channels)
    nz = len(channels)
    head1 = ["", "", r"\multicolumn{4}{c}{Reliability ($S^{\mathrm{seg}}$)}", ""]
    if nz:
        head1.append(rf"\multicolumn{{{nz}}}{{c}}{{Homogeneity $\bar z$ at $K{{=}}{k}$}}")
    rules = r"\cmidrule(lr){3-6}" + (rf"\cmidrule(lr){{8-{7 + nz}}}" if nz else "")
    head2 = ["Method", "LDS", "$r_1$", "$r_{2:5}$", "$p$", r"$\kappa$", "", *abbrev]
    best_lds = max((round(float(v), 3) for v in df["lds"] if _fmt.finite(v)), default=None)
    best_rel = {c: min((round(float(v), 3) for v in df[c] if _fmt.finite(v)), default=None) for c in rel_cols}
    body = [r"\toprule", " & ".join(head1) + r" \\", rules, " & ".join(head2) + r" \\", r"\midrule"]
    for _, r in df.iterrows():
        name = escape(r["setting"]) + (DAGGER if r.get("verdict") == "collapsed" else "")
        cells = [name, _num(r["lds"], bold=len(df) > 1 and _fmt.finite(r["lds"]) and round(float(r["lds"]), 3) == best_lds)]
        cells += [_num(r[c], bold=len(df) > 1 and _fmt.finite(r[c]) and round(float(r[c]), 3) == best_rel[c]) for c in rel_cols]
        cells.append("")
        cells += [_signed(r[f"{c}_zbar"], bold_positive=False) for c in channels]
        body.append(" & ".join(cells) + r" \\")
    body.append(r"\bottomrule")
    names = ", ".join(f"{a}: {escape(c)}" for a, c in zip(abbrev, channels, strict=True))
    cap = (rf"Ground-truth validation. Reliability diagnostics ($r_1$, $r_{{2:5}}$, $p$, $\kappa$) and within-group "
           rf"homogeneity $\bar z$ at $K{{=}}{k}$ ({names}). LDS is the attribution ground truth. "
           r"Bold marks the best LDS (highest) and the best reliability value (lowest) per column.")
    return _table(body, colspec="lccccc" + "c" + "c" * nz, caption=cap, label=_label(t.name), resize=nz > 6)


def _channel_abbrev(channels: Sequence[str]) -> list[str]:
    first = [c[:1].upper() for c in channels]
    if len(set(first)) == len(first):
        return first
    return [escape(c[:3].capitalize()) + "." for c in channels]


def agreement_latex(t: ReportTable) -> str:
    body = [r"\toprule", r"Diagnostic & Spearman & Kendall & Methods \\", r"\midrule"]
    for _, r in t.df.iterrows():
        body.append(" & ".join([escape(r["diagnostic"]), _num(r["spearman"]), _num(r["kendall"]), _fmt.integer(r["n_methods"], missing=MISSING)]) + r" \\")
    body.append(r"\bottomrule")
    return _table(body, colspec="lccc", caption="Rank agreement across methods between each reliability diagnostic (lower = better) and LDS (higher = better).",
                  label=_label(t.name), resize=False)


def _lam_tex(x: Any) -> str:
    s = _fmt.lam(x)
    if s.startswith("1e"):
        return rf"$10^{{{int(s[2:])}}}$"
    return f"${s}$" if s != _fmt.DASH else MISSING


def sensitivity_latex(t: ReportTable) -> str:
    """Paper appendix layout: rows (projection dim, lambda), column groups per setting/stage."""
    df, channels, groups = t.df, t.layout["channels"], t.layout["groups"]
    nc = len(channels)
    abbrev = [escape(c[:3].capitalize()) + "." for c in channels]
    body = [r"\toprule"]
    if groups != [""]:
        head1 = ["", ""] + [rf"\multicolumn{{{nc}}}{{c}}{{{_title(g)}}}" for g in groups]
        rules = "".join(rf"\cmidrule(lr){{{3 + nc * i}-{2 + nc * (i + 1)}}}" for i in range(len(groups)))
        body += [" & ".join(head1) + r" \\", rules]
    body.append(" & ".join(["Proj.", r"$\lambda$"] + abbrev * len(groups)) + r" \\")
    body.append(r"\midrule")
    projs = list(dict.fromkeys(df["proj_dim"]))
    for pi, proj in enumerate(projs):
        if pi:
            body.append(r"\midrule")
        sub = df[df["proj_dim"] == proj]
        for j, (_, r) in enumerate(sub.iterrows()):
            first = rf"\multirow{{{len(sub)}}}{{*}}{{{int(proj)}}}" if j == 0 and len(sub) > 1 else (str(int(proj)) if j == 0 else "")
            lam = _lam_tex(r["lam"]) + (r"\rlap{$^{\star}$}" if r.get("selected") else "")
            cells = [first, lam] + [_signed(r[f"{g}_{c}" if g else c]) for g in groups for c in channels]
            body.append(" & ".join(cells) + r" \\")
    body.append(r"\bottomrule")
    star = " Selected configuration marked $(\\star)$." if df.get("selected", pd.Series(dtype=bool)).any() else ""
    cap = rf"TRAK hyperparameter sensitivity. $\bar{{z}}$ at $K{{=}}{t.layout['k']}$ across projection dim and $\lambda$. Positive values in \textbf{{bold}}.{star}"
    return _table(body, colspec="cc" + "r" * (nc * len(groups)), caption=cap, label=_label(t.name), resize=nc * len(groups) > 6)


def null_latex(t: ReportTable) -> str:
    body = [r"\toprule", r"$K$ & Channel & Feature & $\mu$ & $\sigma$ & $B$ \\", r"\midrule"]
    for _, r in t.df.iterrows():
        feat = r"\emph{channel}" if str(r["feature"]) == "*" else escape(r["feature"])
        body.append(" & ".join([str(int(r["K"])), escape(r["channel"]), feat, _fmt.general(r["mu"], missing=MISSING),
                                _fmt.general(r["sigma"], missing=MISSING), _fmt.integer(r["B"], missing=MISSING)]) + r" \\")
    body.append(r"\bottomrule")
    return _table(body, colspec="rllrrr", caption="Null distribution of within-group similarity over $B$ random groups of size $K$: per feature and per channel.",
                  label=_label(t.name), resize=False)


_RENDERERS = {
    "reliability": reliability_latex,
    "alignment": alignment_latex,
    "confound": confound_latex,
    "ranking": ranking_latex,
    "lds": lds_latex,
    "lds_summary": lds_summary_latex,
    "agreement": agreement_latex,
    "sensitivity": sensitivity_latex,
    "null": null_latex,
}


def render_latex(t: ReportTable) -> str | None:
    """LaTeX of table ``t`` (``None`` for tables exported as CSV only, e.g. the K-sweep data)."""
    if t.name.startswith("homogeneity"):
        return PREAMBLE + homogeneity_latex(t)
    fn = _RENDERERS.get(t.name)
    return PREAMBLE + fn(t) if fn else None


def ksweep_figure_latex(files: Sequence[tuple[str, str]], *, k: int | None) -> str:
    """A ``figure`` with one subfigure per setting (``files``: (relative pdf path, setting))."""
    width = "0.32" if len(files) != 4 else "0.245"
    lines = [PREAMBLE.rstrip(), "% PDF paths are relative to this folder: \\graphicspath{{path/to/this/folder/}}",
             r"\begin{figure}[t]", r"\centering"]
    for i, (path, setting) in enumerate(files):
        sep = r"\hfill" if (i + 1) % (3 if width == "0.32" else 4) else r"\\[0.4em]"
        lines.append(rf"\begin{{subfigure}}[t]{{{width}\textwidth}}\includegraphics[width=\linewidth]{{{path}}}"
                     rf"\caption{{{escape(setting)}}}\end{{subfigure}}{sep if i < len(files) - 1 else ''}")
    kk = f" The dotted line marks $K{{=}}{k}$." if k is not None else ""
    lines.append(r"\caption{Homogeneity $\bar z_c$ across $K$. Dashed curves use the original $S^{\mathrm{seg}}$, "
                 r"solid curves use the rank-1 residual; bands are bootstrap 95\% CIs over queries." + kk + "}")
    lines += [r"\label{fig:aria-ksweep}", r"\end{figure}"]
    return "\n".join(lines) + "\n"
