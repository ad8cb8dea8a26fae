"""HTML of ARIA's own report tables: one renderer per kind of
:class:`~aria_tda.report._table.ReportTable`, used by the sections
(:mod:`aria_tda.report.sections`) that own them.

Static ``<table>`` elements (they print and work without JavaScript). Every cell carries the
numbers of the table's CSV export, formatted by :mod:`aria_tda.report._fmt` as the LaTeX export
formats them; ``data-col`` / ``data-setting`` attributes let the page (and the tests) find
them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from aria_tda.report import _fmt
from aria_tda.report._table import ReportTable
from aria_tda.report.html._cells import (
    Cell,
    _best_low_within,
    _e,
    _num,
    _setting_attrs,
    _table,
    _th,
    _title,
    _txt,
    _zcell,
    badge,
)
from aria_tda.results import RELIABILITY_DIAGNOSTICS

__all__ = ["null_html", "plain_html"]


def _concentration_cols(df: pd.DataFrame) -> list[str]:
    """The top-K columns the reliability table shows: the unlike-query overlap the verdict
    reads and the hub count when measured, else the top-1 share and top-K overlap."""
    for group in (("unlike_overlap", "n_hubs"), ("top1_share", "topk_overlap")):
        got = [c for c in group if c in df.columns and df[c].map(_fmt.finite).any()]
        if got:
            return got
    return []


def _topk_k(df: pd.DataFrame) -> str:
    ks = sorted({int(k) for k in df["topk_K"] if _fmt.finite(k)}) if "topk_K" in df else []
    return str(ks[0]) if len(ks) == 1 else "K"


def reliability_html(t: ReportTable) -> str:
    conc = _concentration_cols(t.df)
    k = _topk_k(t.df)
    names = {"top1_share": "Top-1 share", "topk_overlap": f"Top-{k} overlap",
             "unlike_overlap": f"Unlike top-{k}", "n_hubs": "Hubs"}
    head = [
        [
            _th(x)
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
            _txt(_e(r["setting"])),
            _txt(_e(r["method"])),
            _txt(_e(r["stage"])),
            _num(_e(_fmt.integer(r["n_train"]))),
            _num(_e(_fmt.integer(r["n_queries"]))),
        ]
        cells += [
            _num(_e(_fmt.integer(r[c]) if c == "n_hubs" else _fmt.fixed(r[c])),
                 **{"data-col": c})
            for c in ("kappa", "r1", "r2_5", "p", "v1_constancy", *conc)
        ]
        why = "" if pd.isna(r["verdict_reason"]) else _e(r["verdict_reason"])
        found = r.get("verdict_findings")
        if isinstance(found, str) and found:
            why += "".join(f"<br>· {_e(f)}" for f in found.split(" | "))
        if "sanity" in t.df.columns:
            cells.append(_txt(_sanity_text(r), cls="sub", **{"data-col": "sanity"}))
        cells += [
            _txt(badge(r["verdict"]), **{"data-col": "verdict"}),
            _txt(why, cls="sub"),
        ]
        rows.append((cells, _setting_attrs(r)))
    return _table(head, rows, attrs={"id": "table-reliability"})


def _sanity_text(r: Any) -> str:
    """The attribution sanity checks of one reliability row, in words (escaped HTML)."""
    if r.get("sanity") != "computed":
        return _e("unavailable: the attribution was not computed by ARIA with its checks")

    def flag(col: str) -> str:
        return " <strong>flagged</strong>" if str(r.get(col)).lower() == "true" else ""

    return (f"model randomisation ρ {_e(_fmt.fixed(r.get('randomization_rho')))} "
            f"[{_e(_fmt.fixed(r.get('randomization_lo')))}, "
            f"{_e(_fmt.fixed(r.get('randomization_hi')))}]{flag('randomization_flagged')}; "
            f"gradient-norm bias ρ {_e(_fmt.fixed(r.get('norm_bias_rho')))}"
            f"{flag('norm_bias_flagged')}")


def homogeneity_html(t: ReportTable) -> str:
    df, channels = t.df, t.layout["channels"]
    rel_cols = [c for c in RELIABILITY_DIAGNOSTICS if df[c].map(_fmt.finite).any()]
    rel_head = {"r1": "r<sub>1</sub>", "r2_5": "r<sub>2:5</sub>", "p": "p", "kappa": "κ"}
    zsym = "z̄<sup>res</sup>" if t.layout.get("variant") == "residual" else "z̄"
    head1 = [_th("", colspan="3")] + (
        [_th("Reliability (S<sub>seg</sub>)", colspan=str(len(rel_cols)), **{"class": "grp"})]
        if rel_cols
        else []
    )
    head1 += [_th(_title(c), colspan="3", **{"class": "grp"}) for c in channels]
    head2 = [_th("Setting"), _th("Stage"), _th("Verdict")] + [_th(rel_head[c]) for c in rel_cols]
    head2 += [x for _ in channels for x in (_th(f"{zsym} [95% CI]"), _th("Pos ↑"), _th("Sig ↑"))]
    best = {c: _best_low_within(df, c) for c in rel_cols}
    rows: list[tuple[Sequence[Cell], dict[str, str]]] = []
    for i, (_, r) in enumerate(df.iterrows()):
        cells = [_txt(_e(r["setting"])), _txt(_e(r["stage"])), _txt(badge(r["verdict"]))]
        cells += [
            _num(_e(_fmt.fixed(r[c])), cls="best" if i in best[c] else "", **{"data-col": c})
            for c in rel_cols
        ]
        for c in channels:
            cells += [
                _zcell(r, c),
                _num(_e(_fmt.pct(r[f"{c}_pos"])), **{"data-col": f"{c}_pos"}),
                _num(_e(_fmt.pct(r[f"{c}_sig"])), **{"data-col": f"{c}_sig"}),
            ]
        rows.append((cells, _setting_attrs(r)))
    return _table([head1, head2], rows, attrs={"id": f"table-{t.name}"})


def alignment_html(t: ReportTable) -> str:
    df, channels = t.df, t.layout["channels"]
    best = {}
    for c in channels:
        for q in ("alpha_max", "alpha_reg"):
            vals = df[f"{c}_{q}"][df[f"{c}_{q}"].map(_fmt.finite)].astype(float).round(3)
            best[f"{c}_{q}"] = vals.max() if len(vals) > 1 else None
    head1 = [_th("", colspan="2")] + [
        _th(_title(c), colspan="2", **{"class": "grp"}) for c in channels
    ]
    head2 = [_th("Setting"), _th("Verdict")] + [
        x
        for _ in channels
        for x in (_th("α<sup>max</sup> (feature)"), _th("α<sup>reg</sup> (group)"))
    ]
    rows: list[tuple[Sequence[Cell], dict[str, str]]] = []
    for _, r in df.iterrows():
        cells = [_txt(_e(r["setting"])), _txt(badge(r["verdict"]))]
        for c in channels:
            for q, lab in (("alpha_max", "alpha_max_feature"), ("alpha_reg", "alpha_reg_group")):
                v = r[f"{c}_{q}"]
                is_best = (
                    best[f"{c}_{q}"] is not None
                    and _fmt.finite(v)
                    and round(float(v), 3) == best[f"{c}_{q}"]
                )
                name = r[f"{c}_{lab}"]
                sub = (
                    f'<span class="ci">{_e(name)}</span>' if isinstance(name, str) and name else ""
                )
                cells.append(
                    _num(
                        _e(_fmt.fixed(v)) + sub,
                        cls=("first " if q == "alpha_max" else "") + ("best" if is_best else ""),
                        **{"data-col": f"{c}_{q}"},
                    )
                )
        rows.append((cells, _setting_attrs(r)))
    return _table([head1, head2], rows, attrs={"id": f"table-{t.name}"})


def confound_html(t: ReportTable) -> str:
    out = ['<div class="confound-grid">']
    for n, ((setting, variant, channel, column), g) in enumerate(
        t.df.groupby(["setting", "variant", "channel", "column"], sort=False)
    ):
        out.append("<div>")
        sd = g["sd_across"].iloc[0]
        var = "" if variant == "original" else f" ({_e(variant)})"
        out.append(f"<h3>{_e(setting)}{var} · {_e(channel)} · by {_e(column)}</h3>")
        out.append(
            '<p class="note">SD of the stratum means across strata: '
            f"<b>{_e(_fmt.fixed(sd))}</b> · {int(g['n'].sum()):,} labelled queries.</p>"
        )
        head = [
            [_th(_e(str(column).capitalize())), _th("n"), _th("Mean z"), _th("Pos ↑"), _th("Sig ↑")]
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
                _txt(_e(r["stratum"]) + (' <span class="sub">(small)</span>' if small else "")),
                _num(_e(_fmt.integer(r["n"]))),
                _num(
                    _e(_fmt.signed(mz, 3)),
                    cls="pos" if _fmt.finite(mz) and mz > 0 else "",
                    **{"data-col": "mean_z"},
                ),
                _num(_e(_fmt.pct(r["pos"]))),
                _num(_e(_fmt.pct(r["sig"]))),
            ]
            rows.append((cells, {"data-stratum": str(r["stratum"])}))
        out.append(
            _table(
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
        [_th("Setting"), _th("Variant"), _th("Verdict")]
        + [_th(_title(c) + " z̄ (rank)") for c in channels]
        + [_th("Excluded")]
    ]
    rows: list[tuple[Sequence[Cell], dict[str, str]]] = []
    for _, r in df.iterrows():
        cells = [_txt(_e(r["setting"])), _txt(_e(r["variant"])), _txt(badge(r["verdict"]))]
        for c in channels:
            rk = r[f"{c}_rank"]
            cells.append(
                _num(
                    _e(_fmt.signed(r[f"{c}_zbar"]))
                    + (f' <span class="sub">({int(rk)})</span>' if _fmt.finite(rk) else ""),
                    **{"data-col": f"{c}_zbar"},
                )
            )
        cells.append(_txt(("excluded: " + _e(r["reason"])) if r["excluded"] else "—"))
        rows.append((cells, _setting_attrs(r)))
    return _table(head, rows, attrs={"id": "table-ranking"})


def generic_html(t: ReportTable, columns: Sequence[tuple[str, str, Any]]) -> str:
    """A plain table: ``columns`` = (column, header HTML, formatter)."""
    head = [[_th(h) for _, h, _ in columns]]
    rows: list[tuple[Sequence[Cell], dict[str, str]]] = []
    for _, r in t.df.iterrows():
        cells = []
        for col, _, f in columns:
            v = r[col] if col in r.index else None
            cells.append(_txt(_e(v)) if f is None else _num(_e(f(v)), **{"data-col": col}))
        rows.append((cells, {}))
    return _table(head, rows, attrs={"id": f"table-{t.name}"})


def lds_summary_html(t: ReportTable) -> str:
    df, channels = t.df, t.layout["channels"]
    head = [
        [
            _th("Setting"),
            _th("Verdict"),
            _th("LDS ↑"),
            _th("r<sub>1</sub>"),
            _th("r<sub>2:5</sub>"),
            _th("p"),
            _th("κ"),
        ]
        + [_th(_title(c) + " z̄") for c in channels]
    ]
    stages = bool(t.layout.get("stages"))
    starts = set(_block_starts(df["stage"].astype(str).tolist())) if stages else set()
    rows: list[tuple[Sequence[Cell], dict[str, str]]] = []
    for i, (_, r) in enumerate(df.iterrows()):
        cells = [
            _txt(_e(r["setting"])),
            _txt(badge(r["verdict"])),
            _num(_e(_fmt.fixed(r["lds"])), **{"data-col": "lds"}),
        ]
        cells += [
            _num(_e(_fmt.fixed(r[c])), **{"data-col": c}) for c in RELIABILITY_DIAGNOSTICS
        ]
        cells += [
            _num(_e(_fmt.signed(r[f"{c}_zbar"])), **{"data-col": f"{c}_zbar"}) for c in channels
        ]
        attrs = _setting_attrs(r)
        if i in starts and i > 0:
            attrs["class"] = (attrs.get("class", "") + " block-start").strip()
        rows.append((cells, attrs))
    return _table(head, rows, attrs={"id": "table-lds_summary"})


def _best_high_by(
    df: pd.DataFrame, col: str, by: str | None, *, distinct: bool = False
) -> set[int]:
    """Row positions holding the highest value of ``col`` (within groups of ``by``) among
    several rows (``distinct``: only where the group's values are not all equal)."""
    out: set[int] = set()
    if col not in df.columns:
        return out
    frame = df.reset_index(drop=True)
    groups = frame.groupby(by, sort=False) if by is not None else [(None, frame)]
    for _, g in groups:
        vals = g[col][g[col].map(_fmt.finite)].astype(float).round(3)
        if len(vals) > 1 and not (distinct and vals.nunique() == 1):
            out |= set(vals.index[vals == vals.max()])
    return out


def _block_starts(values: Sequence[Any]) -> list[int]:
    """Positions where a run of equal consecutive values starts."""
    return [i for i, v in enumerate(values) if i == 0 or v != values[i - 1]]


def lds_html(t: ReportTable) -> str:
    """LDS per method; per (method, stage) with a Stage column when the table has stages."""
    df = t.df.reset_index(drop=True)
    stages = bool(t.layout.get("stages"))
    extra = [c for c in ("lds_se",) if c in df.columns]
    head = [
        [_th("Setting" if stages else "Method")]
        + ([_th("Method"), _th("Stage")] if stages else [])
        + [_th("LDS ↑"), _th("SD over queries")]
        + [_th("SE of the mean") for _ in extra]
        + [_th("Subsets"), _th("Queries")]
    ]
    best = _best_high_by(df, "lds", "stage") if stages else set()
    starts = set(_block_starts(df["stage"].astype(str).tolist())) if stages else set()
    rows: list[tuple[Sequence[Cell], dict[str, str]]] = []
    for i, r in df.iterrows():
        cells = [_txt(_e(r["method"]))]
        if stages:
            base = r.get("base_method")
            cells += [
                _txt(_e(base if isinstance(base, str) and base else r["method"])),
                _txt(_e(r["stage"])),
            ]
        cells += [
            _num(_e(_fmt.fixed(r["lds"])), cls="best" if i in best else "", **{"data-col": "lds"}),
            _num(_e(_fmt.fixed(r["lds_sd"])), **{"data-col": "lds_sd"}),
        ]
        cells += [_num(_e(_fmt.fixed(r[c])), **{"data-col": c}) for c in extra]
        cells += [
            _num(_e(_fmt.integer(r["n_subsets"])), **{"data-col": "n_subsets"}),
            _num(_e(_fmt.integer(r["n_queries"])), **{"data-col": "n_queries"}),
        ]
        attrs = {"data-setting": str(r["method"])}
        if i in starts and i > 0:
            attrs["class"] = "block-start"
        rows.append((cells, attrs))
    return _table(head, rows, attrs={"id": "table-lds"})


def agreement_html(t: ReportTable) -> str:
    """Diagnostic-LDS rank agreement; one block of rows per stage when the table has stages."""
    df = t.df.reset_index(drop=True)
    staged = "stage" in df.columns
    ci = "spearman_lo" in df.columns
    stat_heads = (
        [_th("Spearman"), _th("95% CI"), _th("p (exact)"), _th("Kendall"), _th("95% CI"),
         _th("p (exact)")]
        if ci
        else [_th("Spearman"), _th("Kendall")]
    )
    head = [
        ([_th("Stage")] if staged else [])
        + [_th("Diagnostic"), *stat_heads, _th("Methods")]
        + ([_th("Set")] if "methods" in df.columns else [])
        + ([_th("Methods compared")] if "order" in df.columns else [])
    ]
    stage_vals = df["stage"].astype(str).tolist() if staged else []
    starts = _block_starts(stage_vals) if staged else []
    span = {s: [*starts, len(df)][j + 1] - s for j, s in enumerate(starts)}
    rows: list[tuple[Sequence[Cell], dict[str, str]]] = []
    for i, r in df.iterrows():
        cells: list[Cell] = []
        if staged and i in span:
            cells.append(_txt(f"<b>{_e(r['stage'])}</b>", rowspan=str(span[i])))
        cells.append(_txt(_e(r["diagnostic"])))
        for stat in ("spearman", "kendall"):
            cells.append(_num(_e(_fmt.fixed(r[stat])), **{"data-col": stat}))
            if ci:
                lo, hi = r.get(f"{stat}_lo"), r.get(f"{stat}_hi")
                iv = (
                    f"[{_fmt.signed(lo)}, {_fmt.signed(hi)}]"
                    if _fmt.finite(lo) and _fmt.finite(hi)
                    else _fmt.DASH
                )
                cells.append(_num(_e(iv), **{"data-col": f"{stat}_ci"}))
                cells.append(
                    _num(_e(_fmt.fixed(r.get(f"{stat}_p_exact"))), **{"data-col": f"{stat}_p"})
                )
        cells.append(_num(_e(_fmt.integer(r["n_methods"])), **{"data-col": "n_methods"}))
        if "methods" in df.columns:
            cells.append(_txt(_e(r["methods"])))
        if "order" in df.columns:
            cells.append(_txt(_e(r["order"])))
        attrs: dict[str, str] = {}
        if staged:
            attrs["data-stage"] = str(r["stage"])
            if i in span and i > 0:
                attrs["class"] = "block-start"
        rows.append((cells, attrs))
    return _table(head, rows, attrs={"id": "table-agreement"})


def plain_html(t: ReportTable) -> str:
    """Every column of ``t``'s CSV export as it is (a table without a layout of its own).

    Parameters
    ----------
    t : ReportTable
        Any report table.
    """
    return generic_html(t, [(c, _e(c), None) for c in t.df.columns])


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
            ("K", "K", _fmt.integer),
            ("channel", "Channel", None),
            ("feature", "Feature ('*' = channel)", None),
            ("mu", "μ", _fmt.general),
            ("sigma", "σ", _fmt.general),
            ("B", "B", _fmt.integer),
        ],
    )
