"""HTML of the report's tables: one renderer per :class:`~aria.report.tables.ReportTable`.

Static ``<table>`` elements (they print and work without JavaScript). Every cell carries the
numbers of the table's CSV export, formatted by :mod:`aria.report._fmt` as the LaTeX export
formats them; ``data-col`` / ``data-setting`` attributes let the page (and the tests) find
them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from aria.report import _fmt
from aria.report.html._cells import (
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
from aria.report.tables import ReportTable

__all__ = ["table_html"]


def reliability_html(t: ReportTable) -> str:
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
            _num(_e(_fmt.fixed(r[c])), **{"data-col": c})
            for c in ("kappa", "r1", "r2_5", "p", "v1_constancy")
        ]
        cells += [
            _txt(badge(r["verdict"]), **{"data-col": "verdict"}),
            _txt(_e("" if pd.isna(r["verdict_reason"]) else r["verdict_reason"]), cls="sub"),
        ]
        rows.append((cells, _setting_attrs(r)))
    return _table(head, rows, attrs={"id": "table-reliability"})


def homogeneity_html(t: ReportTable) -> str:
    df, channels = t.df, t.layout["channels"]
    rel_cols = [c for c in ("r1", "r2_5", "p", "kappa") if df[c].map(_fmt.finite).any()]
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
    return _table([head1, head2], rows, attrs={"id": "table-alignment"})


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
    rows: list[tuple[Sequence[Cell], dict[str, str]]] = []
    for _, r in df.iterrows():
        cells = [
            _txt(_e(r["setting"])),
            _txt(badge(r["verdict"])),
            _num(_e(_fmt.fixed(r["lds"])), **{"data-col": "lds"}),
        ]
        cells += [
            _num(_e(_fmt.fixed(r[c])), **{"data-col": c}) for c in ("r1", "r2_5", "p", "kappa")
        ]
        cells += [
            _num(_e(_fmt.signed(r[f"{c}_zbar"])), **{"data-col": f"{c}_zbar"}) for c in channels
        ]
        rows.append((cells, _setting_attrs(r)))
    return _table(head, rows, attrs={"id": "table-lds_summary"})


def sensitivity_html(t: ReportTable) -> str:
    df, channels, groups = t.df, t.layout["channels"], t.layout["groups"]
    head = []
    if groups != [""]:
        head.append(
            [_th("", colspan="2")]
            + [_th(_title(g), colspan=str(len(channels)), **{"class": "grp"}) for g in groups]
        )
    head.append(
        [_th("Projection dim"), _th("λ")] + [_th(_title(c)) for _ in groups for c in channels]
    )
    rows: list[tuple[Sequence[Cell], dict[str, str]]] = []
    for _, r in df.iterrows():
        lam = _fmt.lam(r["lam"]) + (" ★" if r.get("selected") else "")
        cells = [_num(_e(int(r["proj_dim"]))), _num(_e(lam))]
        for g in groups:
            for c in channels:
                v = r[f"{g}_{c}" if g else c]
                cells.append(
                    _num(
                        _e(_fmt.signed(v)),
                        cls="pos" if _fmt.finite(v) and v > 0 else "",
                        **{"data-col": f"{g}_{c}" if g else c},
                    )
                )
        rows.append((cells, {}))
    return _table(head, rows, attrs={"id": "table-sensitivity"})


def table_html(t: ReportTable) -> str:
    """The HTML of one report table.

    Parameters
    ----------
    t : ReportTable
        A table from :func:`aria.report.tables.build_tables`; its ``name`` picks the renderer
        (``reliability``, ``homogeneity*``, ``alignment``, ``confound``, ``ranking``,
        ``lds_summary``, ``sensitivity``, ``lds``, ``agreement``, ``null``).

    Returns
    -------
    str
        A ``<div class="tablewrap">`` around the ``<table>`` (a grid of tables for
        ``confound``); ``""`` for a table without an HTML layout (the K-sweep data).
    """
    if t.name == "reliability":
        return reliability_html(t)
    if t.name.startswith("homogeneity"):
        return homogeneity_html(t)
    if t.name == "alignment":
        return alignment_html(t)
    if t.name == "confound":
        return confound_html(t)
    if t.name == "ranking":
        return ranking_html(t)
    if t.name == "lds_summary":
        return lds_summary_html(t)
    if t.name == "sensitivity":
        return sensitivity_html(t)
    if t.name == "lds":
        cols: list[tuple[str, str, Any]] = [
            ("method", "Method", None),
            ("lds", "LDS ↑", _fmt.fixed),
            ("lds_sd", "SD over queries", _fmt.fixed),
        ]
        if "lds_se" in t.df.columns:
            cols.append(("lds_se", "SE of the mean", _fmt.fixed))
        return generic_html(
            t,
            [*cols, ("n_subsets", "Subsets", _fmt.integer), ("n_queries", "Queries", _fmt.integer)],
        )
    if t.name == "agreement":
        cols = [
            ("diagnostic", "Diagnostic", None),
            ("spearman", "Spearman", _fmt.fixed),
            ("kendall", "Kendall", _fmt.fixed),
            ("n_methods", "Methods", _fmt.integer),
            ("methods", "Set", None),
        ]
        if "order" in t.df.columns:
            cols.append(("order", "Methods compared", None))
        return generic_html(t, cols)
    if t.name == "null":
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
    return ""
