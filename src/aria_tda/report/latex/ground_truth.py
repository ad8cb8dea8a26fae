r"""LaTeX of the ground-truth tables: LDS, LDS summary (paper Table 1), agreement, planted.

Both layouts of the LDS tables: the symbolic demo's (one row per method, the best LDS in bold)
and the audio demo's, where ``lds.csv``'s ``method`` holds setting names (``TRAK/semantic``)
beside ``stage`` / ``base_method`` columns and ``agreement.csv`` has one block of rows per
stage: rows are then grouped by stage (``\multirow`` + ``\midrule``) and the best value is
marked within each stage, since each stage's LDS is measured on its own retrained model.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from aria_tda.report import _fmt
from aria_tda.report._table import ReportTable
from aria_tda.report.latex._cells import DAGGER, MISSING, _label, _num, _signed, _table, escape
from aria_tda.report.paired import paired_digits
from aria_tda.results import RELIABILITY_DIAGNOSTICS

__all__ = [
    "agreement_latex",
    "lds_latex",
    "lds_summary_latex",
    "paired_latex",
    "planted_latex",
]


def _blocks(values: Sequence[Any]) -> list[list[int]]:
    """Runs of equal consecutive values, as lists of row positions."""
    out: list[list[int]] = []
    for i, v in enumerate(values):
        if out and values[out[-1][0]] == v:
            out[-1].append(i)
        else:
            out.append([i])
    return out


def _best_high(
    df: pd.DataFrame, rows: Sequence[int], col: str, *, distinct: bool = False
) -> set[int]:
    vals = [(round(float(df.iloc[i][col]), 3), i) for i in rows if _fmt.finite(df.iloc[i][col])]
    if len(rows) < 2 or not vals or (distinct and len({v for v, _ in vals}) == 1):
        return set()
    best = max(v for v, _ in vals)
    return {i for v, i in vals if v == best}


def _best_low(df: pd.DataFrame, rows: Sequence[int], col: str) -> set[int]:
    vals = [(round(float(df.iloc[i][col]), 3), i) for i in rows if _fmt.finite(df.iloc[i][col])]
    if len(rows) < 2 or not vals:
        return set()
    best = min(v for v, _ in vals)
    return {i for v, i in vals if v == best}


def _multirow(n: int, text: str, j: int) -> str:
    if j:
        return ""
    return rf"\multirow{{{n}}}{{*}}{{{text}}}" if n > 1 else text


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
    best = _best_high(df, range(len(df)), "lds")
    body = [r"\toprule", r"Method & LDS$\uparrow$ & SD & Subsets & Queries \\", r"\midrule"]
    for i, (_, r) in enumerate(df.iterrows()):
        body.append(
            " & ".join(
                [
                    escape(r["method"]),
                    _num(r["lds"], bold=i in best),
                    _num(r["lds_sd"]),
                    _fmt.integer(r["n_subsets"], missing=MISSING),
                    _fmt.integer(r["n_queries"], missing=MISSING).replace(",", "{,}"),
                ]
            )
            + r" \\"
        )
    body.append(r"\bottomrule")
    return _table(
        body,
        colspec="lcccc",
        caption="Linear datamodeling score (LDS) per attribution method (mean over queries, "
        "SD over queries).",
        label=_label(t.name),
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
        _blocks(df["stage"].astype(str).tolist())
        if t.layout.get("stages")
        else [list(range(len(df)))]
    )
    body = [r"\toprule", " & ".join(head1) + r" \\", rules, " & ".join(head2) + r" \\", r"\midrule"]
    for bi, block in enumerate(blocks):
        if bi:
            body.append(r"\midrule")
        best_lds = _best_high(df, block, "lds")
        best_rel = {c: _best_low(df, block, c) for c in rel_cols}
        for i in block:
            r = df.iloc[i]
            name = escape(r["setting"]) + (DAGGER if r.get("verdict") == "collapsed" else "")
            cells = [name, _num(r["lds"], bold=i in best_lds)]
            cells += [_num(r[c], bold=i in best_rel[c]) for c in rel_cols]
            cells.append("")
            cells += [_signed(r[f"{c}_zbar"], bold_positive=False) for c in channels]
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
    return _table(
        body, colspec="lccccc" + "c" + "c" * nz, caption=cap, label=_label(t.name), resize=nz > 6
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
    blocks = _blocks(df["stage"].astype(str).tolist()) if staged else [list(range(len(df)))]
    for bi, block in enumerate(blocks):
        if bi:
            body.append(r"\midrule")
        for j, i in enumerate(block):
            r = df.iloc[i]
            cells = [_multirow(len(block), escape(r["stage"]), j)] if staged else []
            cells.append(escape(r["diagnostic"]))
            for stat in ("spearman", "kendall"):
                cells.append(_num(r[stat]))
                if ci:
                    lo, hi = r.get(f"{stat}_lo"), r.get(f"{stat}_hi")
                    ok = _fmt.finite(lo) and _fmt.finite(hi)
                    cells.append(f"[{_signed(lo, bold_positive=False)}, "
                                 f"{_signed(hi, bold_positive=False)}]" if ok else MISSING)
                    cells.append(_num(r.get(f"{stat}_p_exact")))
            cells.append(_fmt.integer(r["n_methods"], missing=MISSING))
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
    return _table(
        body,
        colspec=("l" if staged else "") + ("lcccccc" if ci else "lcc") + "c",
        caption=cap,
        label=_label(t.name),
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
    for bi, block in enumerate(_blocks(df["stage"].astype(str).tolist())):
        if bi:
            body.append(r"\midrule")
        best = _best_high(df, block, "lds")
        for j, i in enumerate(block):
            r = df.iloc[i]
            base = r.get("base_method")
            method = base if isinstance(base, str) and base else r["method"]
            cells = [
                _multirow(len(block), escape(r["stage"]), j),
                escape(method),
                _num(r["lds"], bold=i in best),
                _num(r["lds_sd"]),
                *([_num(r["lds_se"])] if se else []),
                _fmt.integer(r["n_subsets"], missing=MISSING),
                _fmt.integer(r["n_queries"], missing=MISSING).replace(",", "{,}"),
            ]
            body.append(" & ".join(cells) + r" \\")
    body.append(r"\bottomrule")
    cap = (
        "Linear datamodeling score (LDS) per attribution method and stage (mean over queries, "
        "SD over queries" + ("; SE: standard error of the mean" if se else "") + "). Each "
        "stage's LDS is measured on that stage model retrained on random subsets; bold marks "
        "the best LDS within each stage."
    )
    return _table(
        body,
        colspec="ll" + "c" * (len(head) - 2),
        caption=cap,
        label=_label(t.name),
        resize=False,
    )


def _chance_tex(ks: Sequence[int], values: Any, label: str) -> str:
    cells = [rf"\multicolumn{{2}}{{l}}{{\emph{{{label}}}}}"] + [
        _fmt.pct(values.get(k), 0, missing=MISSING).replace("%", r"\%") for k in ks
    ]
    return " & ".join(cells) + r" \\"


def planted_latex(t: ReportTable) -> str:
    """Recall@K per setting (Stage | Method | recall@K ...), best within each stage in bold.

    Parameters
    ----------
    t : ReportTable
        A ``planted`` / ``planted_<level>`` table from
        :func:`aria_tda.report.planted.planted_tables` (``layout``: ``ks``, ``level`` and where
        the chance level goes: ``chance``, ``chance_blocks`` or ``chance_cells``).

    Returns
    -------
    str
        One ``table`` environment; the chance level, when known, is a last row, a row per
        stage, or a parenthesis in each cell.
    """
    df = t.df.reset_index(drop=True)
    ks, level = t.layout["ks"], t.layout.get("level", "track")
    chance = t.layout.get("chance") or {}
    chance_blocks = t.layout.get("chance_blocks") or {}
    in_cells = bool(t.layout.get("chance_cells"))
    head = ["Stage", "Method", *[rf"$R@{int(k)}\uparrow$" for k in ks]]
    body = [r"\toprule", " & ".join(head) + r" \\", r"\midrule"]
    any_collapsed = False
    for bi, block in enumerate(_blocks(df["stage"].astype(str).tolist())):
        if bi:
            body.append(r"\midrule")
        best = {k: _best_high(df, block, f"recall_at_{k}", distinct=True) for k in ks}
        for j, i in enumerate(block):
            r = df.iloc[i]
            collapsed = r.get("verdict") == "collapsed"
            any_collapsed |= collapsed
            stage = r["stage"]
            stage_txt = MISSING if str(stage) in ("-", "", "nan", "None") else escape(stage)
            cells = [
                _multirow(len(block), stage_txt, j),
                escape(r["method"]) + (DAGGER if collapsed else ""),
            ]
            for k in ks:
                s = _fmt.pct(r[f"recall_at_{k}"], 0, missing=MISSING).replace("%", r"\%")
                s = rf"\textbf{{{s}}}" if i in best[k] and s != MISSING else s
                ch = r.get(f"chance_at_{k}")
                if in_cells and _fmt.finite(ch):
                    s += " (" + _fmt.pct(ch, 0).replace("%", r"\%") + ")"
                cells.append(s)
            body.append(" & ".join(cells) + r" \\")
        st = str(df.iloc[block[0]]["stage"])
        if st in chance_blocks:
            body.append(_chance_tex(ks, chance_blocks[st], "chance"))
    if chance:
        body.append(r"\midrule")
        body.append(_chance_tex(ks, chance, "chance"))
    body.append(r"\bottomrule")
    nq = int(pd.to_numeric(df["n_queries"], errors="coerce").max()) if len(df) else 0
    items = "tracks" if level == "track" else f"{escape(level)}s"
    queries = "the planted query" if nq == 1 else f"the {nq} planted queries"
    cap = (
        f"Planted influence ({escape(level)} level): recall@$K$ is the fraction of {queries} "
        "(generations from held-out versions of training works) whose source "
        f"work has a training {escape(level)} among the top-$K$ attributed {items}. Bold marks "
        "the best value within each stage."
    )
    if chance or chance_blocks or in_cells:
        vs = [int(v) for v in t.layout.get("chance_v") or []]
        n = t.layout.get("chance_n")
        nv = (
            f" ($N{{=}}{int(n)}$, $v{{=}}{vs[0] if len(vs) == 1 else f'{vs[0]}..{vs[-1]}'}$)"
            if n is not None and vs
            else ""
        )
        where = " (in parentheses)" if in_cells else " (per stage)" if chance_blocks else ""
        cap += (
            rf" Chance{where}: $1-\binom{{N-v}}{{K}}/\binom{{N}}{{K}}$ for $N$ training "
            f"{items} of which $v$ belong to the source work{nv}."
        )
    notes = [DAGGER + r"~collapsed (reliability verdict)."] if any_collapsed else []
    return _table(
        body,
        colspec="ll" + "c" * len(ks),
        caption=cap,
        label=_label(t.name),
        resize=len(ks) > 8,
        notes=notes,
    )


_PAIRED_QUANTITY_TEX = {"lds": "LDS", "r1": "$r_1$", "r2_5": "$r_{2:5}$", "p": "$p$",
                        "kappa": r"$\kappa$", "zbar": r"$\bar z$"}


def paired_latex(t: ReportTable) -> str:
    """LaTeX of the ``lds_paired`` or ``paired`` table.

    Parameters
    ----------
    t : ReportTable
        A table from :func:`aria_tda.report.paired.paired_tables`.

    Returns
    -------
    str
        One ``table`` environment.
    """
    df = t.df.reset_index(drop=True)
    z = t.name == "paired"
    staged = bool(t.layout.get("stages"))
    level = str(t.layout.get("level", "95%")).replace("%", r"\%")
    head = (["Stage"] if staged else []) + (["Channel"] if z else ["Quantity"]) + [
        "A", "B", "A", "B", r"A$-$B", f"{level} CI", "Separated"]
    body = [r"\toprule", " & ".join(head) + r" \\", r"\midrule"]
    prev = None
    for _, r in df.iterrows():
        nd = paired_digits(r["quantity"])
        key = r["quantity"] if not z else r["channel"]
        if prev is not None and key != prev:
            body.append(r"\midrule")
        prev = key

        def num(x: Any, signed: bool = False, nd: int = nd) -> str:
            s = (_fmt.signed if signed else _fmt.fixed)(x, nd, missing=MISSING)
            return s.replace("-", "$-$") if s != MISSING else s

        ci = MISSING
        if _fmt.finite(r["diff_lo"]) and _fmt.finite(r["diff_hi"]):
            ci = f"[{num(r['diff_lo'], True)}, {num(r['diff_hi'], True)}]"
        sep = bool(r["separated"]) if _fmt.finite(r["diff_lo"]) else False
        cells = [escape(r["stage"])] if staged else []
        cells += [
            escape(r["channel"]) if z else _PAIRED_QUANTITY_TEX.get(r["quantity"],
                                                            escape(r["quantity"])),
            escape(r["setting_a"]), escape(r["setting_b"]),
            num(r.get("value_a")), num(r.get("value_b")), num(r["diff"], True), ci,
            r"\textbf{yes}" if sep else "no",
        ]
        body.append(" & ".join(cells) + r" \\")
    body.append(r"\bottomrule")
    cap = (
        r"Paired differences (A$-$B) with " + level + " percentile bootstrap intervals: every "
        "replicate resamples the same queries for both "
        + (r"settings; $\bar z$ per channel at $K = " + str(t.layout.get("k")) + "$, settings "
           "on the same null (its mean cancels in the difference)." if z else
           "methods, and for LDS the same retrained subsets.")
        + " Separated only where the interval excludes 0."
    )
    return _table(body, colspec=("l" if staged else "") + "lll" + "r" * 4 + "c",
                  caption=cap, label=_label(t.name), resize=True)
