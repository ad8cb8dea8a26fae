r"""LaTeX of the planted-aspect tables (:mod:`aria_tda_experiments.report.planted_aspects`).

The same numbers as the HTML page, in booktabs: recall@k and AP with their intervals and
chance levels (bold where the interval lies above chance), the learned and counterfactual
effects in nats/token, and ARIA's leading channel marked *right* or *wrong* in words; the
confusion matrices (diagonal in bold), naming, effects and agreement tables.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from aria_tda.report import number_format
from aria_tda.report.latex.cells import MISSING, escape, latex_table, num_cell, table_label
from aria_tda.report.report_table import ReportTable
from aria_tda_experiments.report.planted_aspects import CONTROL, above_chance, flag

__all__ = ["PLANTED_ASPECT_LATEX"]


def _sgn(x: Any, nd: int = 3, *, bold: bool = False) -> str:
    if not number_format.finite(x):
        return MISSING
    s = number_format.signed(x, nd)
    s = "$-$" + s[1:] if s.startswith("-") else s
    return rf"\textbf{{{s}}}" if bold else s


def _pct(x: Any) -> str:
    return number_format.pct(x, 0, missing=MISSING).replace("%", r"\%")


def _ci(lo: Any, hi: Any, show: Any) -> str:
    if not (number_format.finite(lo) and number_format.finite(hi)):
        return ""
    return f" [{show(lo)}, {show(hi)}]"


def _yes_no(x: Any) -> str:
    f = flag(x)
    return MISSING if f is None else "yes" if f else "no"


def _int(x: Any) -> str:
    return number_format.integer(x, missing=MISSING).replace(",", "{,}")


def _starts(keys: Sequence[Any]) -> list[bool]:
    return [i == 0 or keys[i] != keys[i - 1] for i in range(len(keys))]


def _leading(r: pd.Series, suffix: str) -> list[str]:
    ch = r.get(f"top_channel{suffix}")
    if ch is None or (isinstance(ch, float) and not number_format.finite(ch)) or str(ch) == "":
        return [MISSING, MISSING]
    right = None if str(r["aspect"]) == CONTROL else flag(r.get(f"right{suffix}"))
    word = "" if right is None else r" (\textbf{right})" if right else " (wrong)"
    return [escape(ch) + word, _sgn(r.get(f"top_channel_z{suffix}"), 2)]


def _aspects_latex(t: ReportTable) -> str:
    df = t.df.reset_index(drop=True)
    multi = bool(t.layout.get("multi_modality"))
    residual = bool(t.layout.get("residual"))
    k = t.layout.get("k")
    kk = str(int(k)) if k is not None else "k"
    head = (["Modality"] if multi else []) + [
        "Setting", "Aspect", "$n$", rf"$R@{kk}$ [95\% CI]", "chance", r"AP [95\% CI]", "chance",
        "Learned", r"$\Delta$ loss [95\% CI]", "Leading (orig.)", r"$\bar z$",
    ] + (["Leading (resid.)", r"$\bar z$"] if residual else [])
    body = [r"\toprule", " & ".join(head) + r" \\", r"\midrule"]
    keys = [(r.get("modality"), r["setting"]) for _, r in df.iterrows()]
    for i, (first, (_, r)) in enumerate(zip(_starts(keys), df.iterrows(), strict=True)):
        if first and i:
            body.append(r"\midrule")
        aspect = str(r["aspect"])
        cells = ([escape(r["modality"]) if first else ""] if multi else []) + [
            escape(r["setting"]) if first else "",
            r"\emph{control}" if aspect == CONTROL else escape(aspect),
            _int(r.get("n_queries")),
            num_cell(r["recall_at_k"], bold=above_chance(r.get("ci_low"), r.get("chance")))
            + _ci(r.get("ci_low"), r.get("ci_high"), num_cell),
            num_cell(r.get("chance")),
            num_cell(r["average_precision"],
                   bold=above_chance(r.get("ap_ci_low"), r.get("ap_chance")))
            + _ci(r.get("ap_ci_low"), r.get("ap_ci_high"), num_cell),
            num_cell(r.get("ap_chance")),
            _yes_no(r.get("learned")),
            _sgn(r["counterfactual_effect"], bold=above_chance(r.get("cf_ci_low"), 0.0))
            + _ci(r.get("cf_ci_low"), r.get("cf_ci_high"), _sgn),
            *_leading(r, ""),
            *(_leading(r, "_residual") if residual else []),
        ]
        body.append(" & ".join(cells) + r" \\")
    body.append(r"\bottomrule")
    cap = (
        rf"Planted ground truth per aspect. $R@{kk}$: share of the marked set among a plant "
        rf"query's top-{kk} attributed items (mean over the $n$ plant queries; percentile "
        r"bootstrap CI over queries); chance $= k/n_{\mathrm{train}}$, the recall of a random "
        r"ranking. AP: average precision of the marked set (chance: its expectation under a "
        r"random ranking). Bold: the interval lies above chance. $\Delta$ loss: counterfactual "
        r"effect, the rise of the plant queries' loss in nats/token when the marked set is "
        r"left out of training (mean over seeds). Leading: the channel with the highest "
        rf"$\bar z$ over the plant queries at $K{{=}}{kk}$"
        + (" on the original score matrix and its rank-1 residual" if residual else "")
        + r"; \textbf{right} when it is the planted aspect, wrong otherwise. Control: queries "
        r"from unmarked prompts against the union of the marked sets."
    )
    colspec = "l" * (2 + multi) + "r" * 7 + "lr" + ("lr" if residual else "")
    return latex_table(body, colspec=colspec, caption=cap, label=table_label(t.name), resize=True)


def _confusion_latex(t: ReportTable) -> str:
    df = t.df.reset_index(drop=True)
    channels: list[str] = t.layout["channels"]
    variants: list[str] = t.layout.get("variants") or ["original"]
    multi = bool(t.layout.get("multi_modality"))
    names = {"original": "Original", "residual": "Rank-1 residual"}
    lead = (["Modality"] if multi else []) + ["Setting", "Planted", "$n$"]
    nc = len(channels) + 1
    head1 = [""] * len(lead) + [
        rf"\multicolumn{{{nc}}}{{c}}{{{escape(names.get(v, v))}}}" for v in variants]
    rules = "".join(
        rf"\cmidrule(lr){{{len(lead) + 1 + nc * i}-{len(lead) + nc * (i + 1)}}}"
        for i in range(len(variants)))
    head2 = lead + [h for _ in variants for h in [escape(c) for c in channels] + ["Right"]]
    body = [r"\toprule", " & ".join(head1) + r" \\", rules, " & ".join(head2) + r" \\",
            r"\midrule"]
    prev = None
    for (m, s, a), g in df.groupby(["modality", "setting", "aspect"], sort=False):
        by_v = {str(r["variant"]): r for _, r in g.iterrows()}
        first = (m, s) != prev
        if first and prev is not None:
            body.append(r"\midrule")
        prev = (m, s)
        cells = ([escape(m) if first else ""] if multi else []) + [
            escape(s) if first else "", escape(a), _int(g["n_queries"].max())]
        for v in variants:
            r = by_v.get(v)
            for c in channels:
                n = _int(r[f"{c}_n"]) if r is not None else MISSING
                cells.append(rf"\textbf{{{n}}}" if c == str(a) else n)
            cells.append(_pct(r.get("right_share")) if r is not None else MISSING)
        body.append(" & ".join(cells) + r" \\")
    body.append(r"\bottomrule")
    cap = (
        "Planted aspect (rows) against ARIA's leading channel (columns): the number of the $n$ "
        "plant queries whose highest $z$ at $K{=}k$ is each channel, per setting, on the "
        r"original score matrix and its rank-1 residual. Bold: the diagonal, where ARIA names "
        r"the planted aspect; Right: its share of the row (chance: one over the number of "
        r"channels)."
    )
    return latex_table(body, colspec="l" * (len(lead) - 1) + "r" + "r" * (nc * len(variants)),
                       caption=cap, label=table_label(t.name), resize=nc * len(variants) > 8)


def _naming_latex(t: ReportTable) -> str:
    df = t.df.reset_index(drop=True)
    multi = bool(t.layout.get("multi_modality"))
    has = set(df.columns)
    has_right = {"n_right", "n_queries"} <= has
    has_rows = {"n_rows_found", "n_rows_right"} <= has
    head = (["Modality"] if multi else []) + ["Setting", "Scores"] + (
        ["Reading"] if "reading" in has else []) + ["Queries"] + (
        ["Named right"] if has_right else []) + ["Found", "Right when found"] + (
        ["Rows right"] if has_rows else []) + (
        ["Controls none"] if "control_none_share" in has else [])
    body = [r"\toprule", " & ".join(head) + r" \\", r"\midrule"]
    keys = [(r.get("modality"), r["setting"]) for _, r in df.iterrows()]
    for first, (_, r) in zip(_starts(keys), df.iterrows(), strict=True):
        cells = ([escape(r["modality"]) if first else ""] if multi else []) + [
            escape(r["setting"]) if first else "", escape(r["variant"])]
        if "reading" in has:
            cells.append(escape(r["reading"]))
        cells.append(_int(r["n_queries"]))
        if has_right:
            cells.append(_int(r["n_right"]))
        cells += [
            _int(r["n_found"]),
            f"{_pct(r['right_when_found'])} ({_int(r['n_right_found'])}/{_int(r['n_found'])})",
        ]
        if has_rows:
            cells.append(f"{_int(r['n_rows_right'])}/{_int(r['n_rows_found'])}")
        if "control_none_share" in has:
            cells.append(_pct(r["control_none_share"]))
        body.append(" & ".join(cells) + r" \\")
    body.append(r"\bottomrule")
    cap = (
        "How often ARIA names the planted aspect, by the paper's reading (the leading channel) "
        "and the distinctive reading (the channel beyond what the method shows for every "
        "query, or none): over all plant queries (named right), over those whose top-$k$ "
        "holds at least half of the marked set (found), over the (setting, plant) rows whose "
        "recall lies above chance (rows right), and the share of control queries answered "
        "none; chance: one over the number of channels."
    )
    n_text = 2 + multi + ("reading" in has)
    return latex_table(body, colspec="l" * n_text + "r" * (len(head) - n_text), caption=cap,
                       label=table_label(t.name), resize=len(head) > 8)


def _effects_latex(t: ReportTable) -> str:
    df = t.df.reset_index(drop=True)
    multi = bool(t.layout.get("multi_modality"))
    has = set(df.columns)
    opt = [c for c in ("seed", "n", "learned") if c in has]
    names = {"seed": "Seed", "n": "$n$", "learned": "Learned"}
    head = (["Modality"] if multi else []) + ["Kind", "Aspect", r"Effect [95\% CI]"] + [
        names[c] for c in opt]
    body = [r"\toprule", " & ".join(head) + r" \\", r"\midrule"]
    keys = [(r.get("modality"), r["kind"]) for _, r in df.iterrows()]
    for i, (first, (_, r)) in enumerate(zip(_starts(keys), df.iterrows(), strict=True)):
        if first and i:
            body.append(r"\midrule")
        cells = ([escape(r["modality"]) if first else ""] if multi else []) + [
            escape(r["kind"]) if first else "",
            escape(r["aspect"]),
            _sgn(r["effect"], bold=above_chance(r["ci_low"], 0.0))
            + _ci(r["ci_low"], r["ci_high"], _sgn),
        ]
        for c in opt:
            v = r.get(c)
            cells.append(_yes_no(v) if c == "learned" else number_format.integer(v, missing=""))
        body.append(" & ".join(cells) + r" \\")
    body.append(r"\bottomrule")
    cap = (
        "Effects of the plants in nats/token. Learned (per seed): continuation loss on "
        "held-out items beginning the plant, model trained without the marked set minus with "
        "it. Counterfactual: the plant queries' loss, retrained without the marked set minus "
        r"with it, mean over seeds. Percentile bootstrap 95\% CIs over the $n$ items; bold: the "
        "interval excludes 0."
    )
    return latex_table(body, colspec="l" * (2 + multi) + "r" * (1 + len(opt)), caption=cap,
                       label=table_label(t.name), resize=False)


def _agreement_latex(t: ReportTable) -> str:
    df = t.df.reset_index(drop=True)
    multi = bool(t.layout.get("multi_modality"))
    has = set(df.columns)
    stats = [(s, f"{s}_p_exact" in has) for s in ("spearman", "kendall")]
    head = (["Modality"] if multi else []) + ["Diagnostic"] + [
        h for s, p in stats for h in ([s.capitalize()] + (["$p$"] if p else []))] + ["Methods"]
    body = [r"\toprule", " & ".join(head) + r" \\", r"\midrule"]
    for _, r in df.iterrows():
        cells = ([escape(r["modality"])] if multi else []) + [escape(r["diagnostic"])]
        for s, p in stats:
            cells.append(_sgn(r[s]))
            if p:
                cells.append(num_cell(r.get(f"{s}_p_exact")))
        cells.append(_int(r["n_methods"]))
        body.append(" & ".join(cells) + r" \\")
    body.append(r"\bottomrule")
    cap = (
        "Rank agreement across attribution methods between each reliability diagnostic "
        "(lower = better; sign flipped) and plant detection (mean recall@$k$ over the plant "
        "queries): Spearman and Kendall correlations of the two method rankings"
        + ("; $p$: exact one-sided permutation p-value over the $n!$ orderings of the methods."
           if any(p for _, p in stats) else ".")
    )
    return latex_table(body, colspec="l" * (1 + multi) + "r" * (len(head) - 1 - multi), caption=cap,
                       label=table_label(t.name), resize=False)


#: LaTeX renderer per planted-aspect table name.
PLANTED_ASPECT_LATEX = {
    "planted_aspects": _aspects_latex,
    "planted_confusion": _confusion_latex,
    "planted_naming": _naming_latex,
    "planted_effects": _effects_latex,
    "planted_agreement": _agreement_latex,
}
