"""HTML of ARIA's own report tables: one renderer per kind of
:class:`~aria_tda.report.report_table.ReportTable`, used by the sections
(:mod:`aria_tda.report.sections`) that own them.

Static ``<table>`` elements (they print and work without JavaScript). Every cell carries the
numbers of the table's CSV export, formatted by :mod:`aria_tda.report.number_format` as the LaTeX
export formats them; ``data-col`` / ``data-setting`` attributes let the page (and the tests) find
them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from aria_tda.report import number_format
from aria_tda.report.html.cells import (
    Cell,
    badge,
    best_high_by,
    best_low_within,
    block_starts,
    column_title,
    esc,
    html_table,
    num_cell,
    setting_attrs,
    text_cell,
    th,
    zbar_cell,
)
from aria_tda.report.report_table import ReportTable
from aria_tda.results import RELIABILITY_DIAGNOSTICS

__all__ = ["null_html", "plain_html"]


def _concentration_cols(df: pd.DataFrame) -> list[str]:
    """The top-K columns the reliability table shows: the unlike-query overlap the verdict
    reads and the hub count when measured, else the top-1 share and top-K overlap."""
    for group in (("unlike_overlap", "n_hubs"), ("top1_share", "topk_overlap")):
        got = [c for c in group if c in df.columns and df[c].map(number_format.finite).any()]
        if got:
            return got
    return []


def _topk_k(df: pd.DataFrame) -> str:
    ks = sorted({int(k) for k in df["topk_K"] if number_format.finite(k)}) if "topk_K" in df else []
    return str(ks[0]) if len(ks) == 1 else "K"


def reliability_html(t: ReportTable) -> str:
    conc = _concentration_cols(t.df)
    k = _topk_k(t.df)
    names = {"top1_share": "Top-1 share", "topk_overlap": f"Top-{k} overlap",
             "unlike_overlap": f"Unlike top-{k}", "n_hubs": "Hubs"}
    head = [
        [
            th(x)
            for x in (
                "Setting",
                "Method",
                "Stage",
                "Train segments",
                "Queries",
                "κ",
                "r<sub>1</sub>",
                "r<sub>2:5</sub>",
                "p",
                "v<sub>1</sub> const.",
                *(names[c] for c in conc),
                *(["Sanity checks"] if "sanity" in t.df.columns else []),
                "Verdict",
                "Why",
            )
        ]
    ]
    rows: list[tuple[Sequence[Cell], dict[str, str]]] = []
    for _, r in t.df.iterrows():
        cells = [
            text_cell(esc(r["setting"])),
            text_cell(esc(r["method"])),
            text_cell(esc(r["stage"])),
            num_cell(esc(number_format.integer(r["n_train"]))),
            num_cell(esc(number_format.integer(r["n_queries"]))),
        ]
        cells += [
            num_cell(
                esc(number_format.integer(r[c]) if c == "n_hubs" else number_format.fixed(r[c])),
                **{"data-col": c},
            )
            for c in ("kappa", "r1", "r2_5", "p", "v1_constancy", *conc)
        ]
        why = "" if pd.isna(r["verdict_reason"]) else esc(r["verdict_reason"])
        found = r.get("verdict_findings")
        if isinstance(found, str) and found:
            why += "".join(f"<br>· {esc(f)}" for f in found.split(" | "))
        if "sanity" in t.df.columns:
            cells.append(text_cell(_sanity_text(r), cls="sub", **{"data-col": "sanity"}))
        cells += [
            text_cell(badge(r["verdict"]), **{"data-col": "verdict"}),
            text_cell(why, cls="sub"),
        ]
        rows.append((cells, setting_attrs(r)))
    return html_table(head, rows, attrs={"id": "table-reliability"})


def _sanity_text(r: Any) -> str:
    """The attribution sanity checks of one reliability row, in words (escaped HTML)."""
    if r.get("sanity") != "computed":
        return esc("unavailable: the attribution was not computed by ARIA with its checks")

    def flag(col: str) -> str:
        return " <strong>flagged</strong>" if str(r.get(col)).lower() == "true" else ""

    return (
        f"model randomisation ρ {esc(number_format.fixed(r.get('randomization_rho')))} "
        f"[{esc(number_format.fixed(r.get('randomization_lo')))}, "
        f"{esc(number_format.fixed(r.get('randomization_hi')))}]{flag('randomization_flagged')}; "
        f"gradient-norm bias ρ {esc(number_format.fixed(r.get('norm_bias_rho')))}"
        f"{flag('norm_bias_flagged')}"
    )


def homogeneity_html(t: ReportTable) -> str:
    df, channels = t.df, t.layout["channels"]
    rel_cols = [c for c in RELIABILITY_DIAGNOSTICS if df[c].map(number_format.finite).any()]
    rel_head = {"r1": "r<sub>1</sub>", "r2_5": "r<sub>2:5</sub>", "p": "p", "kappa": "κ"}
    zsym = "z̄<sup>res</sup>" if t.layout.get("variant") == "residual" else "z̄"
    head1 = [th("", colspan="3")] + (
        [th("Reliability (S<sub>seg</sub>)", colspan=str(len(rel_cols)), **{"class": "grp"})]
        if rel_cols
        else []
    )
    head1 += [th(column_title(c), colspan="3", **{"class": "grp"}) for c in channels]
    head2 = [th("Setting"), th("Stage"), th("Verdict")] + [th(rel_head[c]) for c in rel_cols]
    head2 += [x for _ in channels for x in (th(f"{zsym} [95% CI]"), th("Pos ↑"), th("Sig ↑"))]
    best = {c: best_low_within(df, c) for c in rel_cols}
    rows: list[tuple[Sequence[Cell], dict[str, str]]] = []
    for i, (_, r) in enumerate(df.iterrows()):
        cells = [text_cell(esc(r["setting"])), text_cell(esc(r["stage"])),
                 text_cell(badge(r["verdict"]))]
        cells += [
            num_cell(
                esc(number_format.fixed(r[c])),
                cls="best" if i in best[c] else "",
                **{"data-col": c},
            )
            for c in rel_cols
        ]
        for c in channels:
            cells += [
                zbar_cell(r, c),
                num_cell(esc(number_format.pct(r[f"{c}_pos"])), **{"data-col": f"{c}_pos"}),
                num_cell(esc(number_format.pct(r[f"{c}_sig"])), **{"data-col": f"{c}_sig"}),
            ]
        rows.append((cells, setting_attrs(r)))
    return html_table([head1, head2], rows, attrs={"id": f"table-{t.name}"})


def alignment_html(t: ReportTable) -> str:
    df, channels = t.df, t.layout["channels"]
    best = {}
    for c in channels:
        for q in ("alpha_max", "alpha_reg"):
            vals = df[f"{c}_{q}"][df[f"{c}_{q}"].map(number_format.finite)].astype(float).round(3)
            best[f"{c}_{q}"] = vals.max() if len(vals) > 1 else None
    head1 = [th("", colspan="2")] + [
        th(column_title(c), colspan="2", **{"class": "grp"}) for c in channels
    ]
    head2 = [th("Setting"), th("Verdict")] + [
        x
        for _ in channels
        for x in (th("α<sup>max</sup> (feature)"), th("α<sup>reg</sup> (group)"))
    ]
    rows: list[tuple[Sequence[Cell], dict[str, str]]] = []
    for _, r in df.iterrows():
        cells = [text_cell(esc(r["setting"])), text_cell(badge(r["verdict"]))]
        for c in channels:
            for q, lab in (("alpha_max", "alpha_max_feature"), ("alpha_reg", "alpha_reg_group")):
                v = r[f"{c}_{q}"]
                is_best = (
                    best[f"{c}_{q}"] is not None
                    and number_format.finite(v)
                    and round(float(v), 3) == best[f"{c}_{q}"]
                )
                name = r[f"{c}_{lab}"]
                sub = (
                    f'<span class="ci">{esc(name)}</span>' if isinstance(name, str) and name else ""
                )
                cells.append(
                    num_cell(
                        esc(number_format.fixed(v)) + sub,
                        cls=("first " if q == "alpha_max" else "") + ("best" if is_best else ""),
                        **{"data-col": f"{c}_{q}"},
                    )
                )
        rows.append((cells, setting_attrs(r)))
    return html_table([head1, head2], rows, attrs={"id": f"table-{t.name}"})


def confound_html(t: ReportTable) -> str:
    out = ['<div class="confound-grid">']
    for n, ((setting, variant, channel, column), g) in enumerate(
        t.df.groupby(["setting", "variant", "channel", "column"], sort=False)
    ):
        out.append("<div>")
        sd = g["sd_across"].iloc[0]
        var = "" if variant == "original" else f" ({esc(variant)})"
        out.append(f"<h3>{esc(setting)}{var} · {esc(channel)} · by {esc(column)}</h3>")
        out.append(
            '<p class="note">SD of the stratum means across strata: '
            f"<b>{esc(number_format.fixed(sd))}</b> · {int(g['n'].sum()):,} labelled queries.</p>"
        )
        head = [
            [th(esc(str(column).capitalize())), th("n"), th("Mean z"), th("Pos ↑"), th("Sig ↑")]
        ]
        rows: list[tuple[Sequence[Cell], dict[str, str]]] = []
        for _, r in g.iterrows():
            small = (
                bool(r.get("small", False))
                if "small" in g.columns and not pd.isna(r.get("small"))
                else False
            )
            mz = r["mean_z"]
            cells = [
                text_cell(
                    esc(r["stratum"]) + (' <span class="sub">(small)</span>' if small else "")
                ),
                num_cell(esc(number_format.integer(r["n"]))),
                num_cell(
                    esc(number_format.signed(mz, 3)),
                    cls="pos" if number_format.finite(mz) and mz > 0 else "",
                    **{"data-col": "mean_z"},
                ),
                num_cell(esc(number_format.pct(r["pos"]))),
                num_cell(esc(number_format.pct(r["sig"]))),
            ]
            rows.append((cells, {"data-stratum": str(r["stratum"])}))
        out.append(
            html_table(
                head,
                rows,
                attrs={
                    "id": f"table-confound-{n + 1}",
                    "data-setting": str(setting),
                    "data-channel": str(channel),
                },
            )
        )
        out.append("</div>")
    out.append("</div>")
    return "".join(out)


def ranking_html(t: ReportTable) -> str:
    df, channels = t.df, t.layout["channels"]
    head = [
        [th("Setting"), th("Variant"), th("Verdict")]
        + [th(column_title(c) + " z̄ (rank)") for c in channels]
        + [th("Excluded")]
    ]
    rows: list[tuple[Sequence[Cell], dict[str, str]]] = []
    for _, r in df.iterrows():
        cells = [text_cell(esc(r["setting"])), text_cell(esc(r["variant"])),
                 text_cell(badge(r["verdict"]))]
        for c in channels:
            rk = r[f"{c}_rank"]
            cells.append(
                num_cell(
                    esc(number_format.signed(r[f"{c}_zbar"]))
                    + (
                        f' <span class="sub">({int(rk)})</span>' if number_format.finite(rk) else ""
                    ),
                    **{"data-col": f"{c}_zbar"},
                )
            )
        cells.append(text_cell(("excluded: " + esc(r["reason"])) if r["excluded"] else "—"))
        rows.append((cells, setting_attrs(r)))
    return html_table(head, rows, attrs={"id": "table-ranking"})


def generic_html(t: ReportTable, columns: Sequence[tuple[str, str, Any]]) -> str:
    """A plain table: ``columns`` = (column, header HTML, formatter)."""
    head = [[th(h) for _, h, _ in columns]]
    rows: list[tuple[Sequence[Cell], dict[str, str]]] = []
    for _, r in t.df.iterrows():
        cells = []
        for col, _, f in columns:
            v = r[col] if col in r.index else None
            cells.append(
                text_cell(esc(v)) if f is None else num_cell(esc(f(v)), **{"data-col": col})
            )
        rows.append((cells, {}))
    return html_table(head, rows, attrs={"id": f"table-{t.name}"})


def lds_summary_html(t: ReportTable) -> str:
    df, channels = t.df, t.layout["channels"]
    head = [
        [
            th("Setting"),
            th("Verdict"),
            th("LDS ↑"),
            th("r<sub>1</sub>"),
            th("r<sub>2:5</sub>"),
            th("p"),
            th("κ"),
        ]
        + [th(column_title(c) + " z̄") for c in channels]
    ]
    stages = bool(t.layout.get("stages"))
    starts = set(block_starts(df["stage"].astype(str).tolist())) if stages else set()
    rows: list[tuple[Sequence[Cell], dict[str, str]]] = []
    for i, (_, r) in enumerate(df.iterrows()):
        cells = [
            text_cell(esc(r["setting"])),
            text_cell(badge(r["verdict"])),
            num_cell(esc(number_format.fixed(r["lds"])), **{"data-col": "lds"}),
        ]
        cells += [
            num_cell(esc(number_format.fixed(r[c])), **{"data-col": c})
            for c in RELIABILITY_DIAGNOSTICS
        ]
        cells += [
            num_cell(esc(number_format.signed(r[f"{c}_zbar"])), **{"data-col": f"{c}_zbar"})
            for c in channels
        ]
        attrs = setting_attrs(r)
        if i in starts and i > 0:
            attrs["class"] = (attrs.get("class", "") + " block-start").strip()
        rows.append((cells, attrs))
    return html_table(head, rows, attrs={"id": "table-lds_summary"})


def lds_html(t: ReportTable) -> str:
    """LDS per method; per (method, stage) with a Stage column when the table has stages."""
    df = t.df.reset_index(drop=True)
    stages = bool(t.layout.get("stages"))
    extra = [c for c in ("lds_se",) if c in df.columns]
    head = [
        [th("Setting" if stages else "Method")]
        + ([th("Method"), th("Stage")] if stages else [])
        + [th("LDS ↑"), th("SD over queries")]
        + [th("SE of the mean") for _ in extra]
        + [th("Subsets"), th("Queries")]
    ]
    best = best_high_by(df, "lds", "stage") if stages else set()
    starts = set(block_starts(df["stage"].astype(str).tolist())) if stages else set()
    rows: list[tuple[Sequence[Cell], dict[str, str]]] = []
    for i, r in df.iterrows():
        cells = [text_cell(esc(r["method"]))]
        if stages:
            base = r.get("base_method")
            cells += [
                text_cell(esc(base if isinstance(base, str) and base else r["method"])),
                text_cell(esc(r["stage"])),
            ]
        cells += [
            num_cell(
                esc(number_format.fixed(r["lds"])),
                cls="best" if i in best else "",
                **{"data-col": "lds"},
            ),
            num_cell(esc(number_format.fixed(r["lds_sd"])), **{"data-col": "lds_sd"}),
        ]
        cells += [num_cell(esc(number_format.fixed(r[c])), **{"data-col": c}) for c in extra]
        cells += [
            num_cell(esc(number_format.integer(r["n_subsets"])), **{"data-col": "n_subsets"}),
            num_cell(esc(number_format.integer(r["n_queries"])), **{"data-col": "n_queries"}),
        ]
        attrs = {"data-setting": str(r["method"])}
        if i in starts and i > 0:
            attrs["class"] = "block-start"
        rows.append((cells, attrs))
    return html_table(head, rows, attrs={"id": "table-lds"})


def agreement_html(t: ReportTable) -> str:
    """Diagnostic-LDS rank agreement; one block of rows per stage when the table has stages."""
    df = t.df.reset_index(drop=True)
    staged = "stage" in df.columns
    ci = "spearman_lo" in df.columns
    stat_heads = (
        [th("Spearman"), th("95% CI"), th("p (exact)"), th("Kendall"), th("95% CI"),
         th("p (exact)")]
        if ci
        else [th("Spearman"), th("Kendall")]
    )
    head = [
        ([th("Stage")] if staged else [])
        + [th("Diagnostic"), *stat_heads, th("Methods")]
        + ([th("Set")] if "methods" in df.columns else [])
        + ([th("Methods compared")] if "order" in df.columns else [])
    ]
    stage_vals = df["stage"].astype(str).tolist() if staged else []
    starts = block_starts(stage_vals) if staged else []
    span = {s: [*starts, len(df)][j + 1] - s for j, s in enumerate(starts)}
    rows: list[tuple[Sequence[Cell], dict[str, str]]] = []
    for i, r in df.iterrows():
        cells: list[Cell] = []
        if staged and i in span:
            cells.append(text_cell(f"<b>{esc(r['stage'])}</b>", rowspan=str(span[i])))
        cells.append(text_cell(esc(r["diagnostic"])))
        for stat in ("spearman", "kendall"):
            cells.append(num_cell(esc(number_format.fixed(r[stat])), **{"data-col": stat}))
            if ci:
                lo, hi = r.get(f"{stat}_lo"), r.get(f"{stat}_hi")
                iv = (
                    f"[{number_format.signed(lo)}, {number_format.signed(hi)}]"
                    if number_format.finite(lo) and number_format.finite(hi)
                    else number_format.DASH
                )
                cells.append(num_cell(esc(iv), **{"data-col": f"{stat}_ci"}))
                cells.append(
                    num_cell(
                        esc(number_format.fixed(r.get(f"{stat}_p_exact"))),
                        **{"data-col": f"{stat}_p"},
                    )
                )
        cells.append(
            num_cell(esc(number_format.integer(r["n_methods"])), **{"data-col": "n_methods"})
        )
        if "methods" in df.columns:
            cells.append(text_cell(esc(r["methods"])))
        if "order" in df.columns:
            cells.append(text_cell(esc(r["order"])))
        attrs: dict[str, str] = {}
        if staged:
            attrs["data-stage"] = str(r["stage"])
            if i in span and i > 0:
                attrs["class"] = "block-start"
        rows.append((cells, attrs))
    return html_table(head, rows, attrs={"id": "table-agreement"})


def plain_html(t: ReportTable) -> str:
    """Every column of ``t``'s CSV export as it is (a table without a layout of its own).

    Parameters
    ----------
    t : ReportTable
        Any report table.
    """
    return generic_html(t, [(c, esc(c), None) for c in t.df.columns])


def null_html(t: ReportTable) -> str:
    """The null distribution: per K, channel and feature, μ, σ and B.

    Parameters
    ----------
    t : ReportTable
        The ``null`` table.

    Returns
    -------
    str
    """
    return generic_html(
        t,
        [
            ("K", "K", number_format.integer),
            ("channel", "Channel", None),
            ("feature", "Feature ('*' = channel)", None),
            ("mu", "μ", number_format.general),
            ("sigma", "σ", number_format.general),
            ("B", "B", number_format.integer),
        ],
    )
