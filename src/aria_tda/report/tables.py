r"""The report's tables, built once from a :class:`~aria_tda.report.load.ResultsData`.

Each builder returns a :class:`ReportTable` whose ``df`` is the CSV export (full precision,
one row per setting where the table is per setting) and whose ``layout`` tells the HTML and
LaTeX renderers how to group its columns. HTML, LaTeX and CSV all render the same frame, so
their numbers agree by construction.

Column names of the per-channel (wide) tables are ``{channel}_{quantity}``, e.g.
``harmony_zbar``, ``harmony_zbar_lo``, ``harmony_zbar_hi``, ``harmony_pos``, ``harmony_sig``
(fractions in [0, 1]), ``timbre_alpha_max``. Which columns a table holds is read from the
results schema (:data:`aria_tda.results.TABLES` and its column groups), never declared here.

The per-topic builders live in their own modules (:mod:`~aria_tda.report.embeddings`,
:mod:`~aria_tda.report.paired`, :mod:`~aria_tda.report.planted`, :mod:`~aria_tda.report.aspects`,
:mod:`~aria_tda.report.planted_aspects`), all built on
:mod:`aria_tda.report._table`; this module imports them, none of them imports it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from aria_tda.report._table import (
    ReportTable,
    channels_in,
    info_cols,
    is_staged,
    ordered_stages,
    settings_in,
)
from aria_tda.report.aspects import aspect_tables
from aria_tda.report.embeddings import embedding_alignment_table
from aria_tda.report.load import ResultsData
from aria_tda.report.paired import paired_tables
from aria_tda.report.planted import planted_tables
from aria_tda.report.planted_aspects import planted_aspect_tables
from aria_tda.results import (
    ALIGNMENT_MEASURES,
    HOMOGENEITY_SUMMARY,
    RELIABILITY_DIAGNOSTICS,
    TABLES,
)

__all__ = ["ReportTable", "build_tables"]

_RELIABILITY = TABLES["reliability"]


def reliability_table(data: ResultsData) -> ReportTable | None:
    rel = data.table("reliability")
    if rel is None or rel.empty:
        return None
    rows = []
    for s in settings_in(data, rel):
        r = rel[rel["setting"] == s].iloc[-1]
        # the schema's columns in its order; the verdict as the report resolves it
        row = {c: data.verdict(s) if c == "verdict" else r[c] for c in _RELIABILITY.columns}
        row.update({c: r[c] for c in _RELIABILITY.optional if c in rel.columns})
        rows.append(row)
    return ReportTable(
        "reliability",
        "Reliability diagnostics and collapse verdicts",
        "Reliability diagnostics of each setting's segment-level score matrix S_seg (paper Eqs. "
        "1–3): κ (shared score profile across queries), r₁ and r₂:₅ (energy on the first and the "
        "next four singular directions), p (per-query offset share), how constant v₁ is across "
        "queries, and, where measured, the top-K concentration: the share of queries whose "
        "top-1 is the most frequent top-1 and the mean share of two queries' top-K in common "
        "(on the tracks the homogeneity groups are drawn from). A collapsed setting retrieves "
        "(nearly) the same group for every query: its homogeneity numbers describe that fixed "
        "group, not attribution.",
        pd.DataFrame(rows),
    )


def homogeneity_table(data: ResultsData, *, variant: str, k: int) -> ReportTable | None:
    """Reliability + per-channel z-bar (95% CI), Pos, Sig at group size ``k`` for one variant."""
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


def alignment_table(data: ResultsData) -> ReportTable | None:
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


def confound_table(data: ResultsData, *, k: int | None) -> ReportTable | None:
    cf = data.table("confound")
    if cf is None or cf.empty:
        return None
    ks = sorted(set(cf["K"]))
    use_k = k if k in ks else (max(ks) if ks else None)
    sub = cf[cf["K"] == use_k].copy() if use_k is not None else cf.copy()
    s_order = {s: i for i, s in enumerate(data.settings)}
    c_order = {c: i for i, c in enumerate(data.channels)}
    v_order = {v: i for i, v in enumerate(data.variants)}
    sub["_s"] = sub["setting"].map(s_order).fillna(len(s_order))
    sub["_c"] = sub["channel"].map(c_order).fillna(len(c_order))
    sub["_v"] = sub["variant"].map(v_order).fillna(len(v_order))
    sub = sub.sort_values(
        ["_s", "_v", "_c", "column", "mean_z"],
        ascending=[True, True, True, True, False],
        kind="stable",
    )
    sub = sub.drop(columns=["_s", "_c", "_v"]).reset_index(drop=True)
    return ReportTable(
        "confound",
        f"Metadata confound breakdown at K = {use_k}",
        "z_c(q) stratified by a query metadata column: per stratum the number of queries n, mean "
        "z, Pos (z > 0) and Sig (z > 1.96); SD across = standard deviation of the stratum means. A "
        "confound driven by one dominant stratum predicts a large SD across strata.",
        sub,
        {"k": use_k},
    )


def ranking_table(data: ResultsData, *, k: int | None) -> ReportTable | None:
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


def lds_tables(data: ResultsData, *, k: int | None) -> list[ReportTable]:
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


SENS_GROUP_COLUMNS = ("setting", "stage", "method")


def sensitivity_table(data: ResultsData, *, k: int | None) -> ReportTable | None:
    """Wide TRAK sensitivity table: one row per (proj_dim, lam); columns per (group, channel).

    ``sensitivity.csv`` may carry an optional ``setting`` (or ``stage`` / ``method``) column to
    hold several settings (the paper's Semantic / Coarse / Fine column groups) and an optional
    boolean ``selected`` column marking the configuration used elsewhere.
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


def null_table(data: ResultsData) -> ReportTable | None:
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
    h = data.table("homogeneity")
    if h is None or h.empty:
        return None
    s_order = {s: i for i, s in enumerate(data.settings)}
    c_order = {c: i for i, c in enumerate(data.channels)}
    v_order = {v: i for i, v in enumerate(data.variants)}
    df = (
        h.assign(
            _s=h["setting"].map(s_order).fillna(len(s_order)),
            _v=h["variant"].map(v_order).fillna(len(v_order)),
            _c=h["channel"].map(c_order).fillna(len(c_order)),
        )
        .sort_values(["_s", "_v", "_c", "K"], kind="stable")
        .drop(columns=["_s", "_v", "_c"])
    )
    return ReportTable(
        "ksweep",
        "K-sweep",
        "z̄ per setting, variant, channel and group size K (the data behind the K-sweep plots).",
        df.reset_index(drop=True),
    )


def build_tables(data: ResultsData, *, k: int | None) -> dict[str, ReportTable]:
    """All tables the folder supports, by export name, in report order.

    Parameters
    ----------
    data : ResultsData
        The results folder, as read by :func:`aria_tda.report.load.load_results`.
    k : int or None
        Group size of the per-K tables (homogeneity per variant, confound, ranking, LDS
        summary, sensitivity), usually from :func:`aria_tda.report.load.choose_k`. ``None``
        leaves the homogeneity tables out; the confound, ranking and sensitivity tables then
        use the largest K they hold (as they do when ``k`` is not among their K).

    Returns
    -------
    dict[str, ReportTable]
        Only the tables the folder has data for: ``reliability``, ``homogeneity``,
        ``homogeneity_<variant>``, ``aspects``, ``set_aspects``, ``ksweep``, ``alignment``,
        ``alignment_embeddings``,
        ``confound``, ``ranking``,
        ``lds``, ``lds_summary``, ``agreement``, ``lds_paired``, ``paired``, ``planted``,
        ``planted_segment``, ``planted_aspects``, ``planted_confusion``, ``planted_naming``,
        ``planted_effects``, ``planted_agreement``,
        ``sensitivity``, ``null``.
    """
    out: dict[str, ReportTable] = {}

    def add(t: ReportTable | None) -> None:
        if t is not None:
            out[t.name] = t

    add(reliability_table(data))
    if k is not None:
        add(homogeneity_table(data, variant="original", k=k))
        for v in data.variants:
            if v != "original":
                add(homogeneity_table(data, variant=v, k=k))
    for t in aspect_tables(data):
        add(t)
    add(ksweep_table(data))
    alignment = alignment_table(data)
    add(alignment)
    add(embedding_alignment_table(data, alignment))
    add(confound_table(data, k=k))
    add(ranking_table(data, k=k))
    for t in lds_tables(data, k=k):
        add(t)
    for t in paired_tables(data, k=k):
        add(t)
    for t in planted_tables(data):
        add(t)
    for t in planted_aspect_tables(data):
        add(t)
    add(sensitivity_table(data, k=k))
    add(null_table(data))
    return out
