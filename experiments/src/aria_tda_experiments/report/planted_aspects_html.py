"""HTML of the planted-aspect tables (:mod:`aria_tda_experiments.report.planted_aspects`) and
their section.

One section, "Planted aspects": the main table (recall@k and AP against chance, learned and
counterfactual effects, ARIA's leading channel called right or wrong in words), then the
confusion matrices, naming, effects and agreement tables, then the K-sweep panels of the plant
queries, one folded group per setting.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from aria_tda.report import number_format
from aria_tda.report.html.cells import Cell, esc, html_table, num_cell, text_cell, th
from aria_tda.report.report_table import ReportTable
from aria_tda_experiments.report.planted_aspects import CONTROL, above_chance, flag

__all__ = ["PLANTED_ASPECT_TABLES", "planted_aspects_html", "planted_aspects_section"]

#: The report tables of this section, in order.
PLANTED_ASPECT_TABLES = (
    "planted_aspects",
    "planted_confusion",
    "planted_naming",
    "planted_effects",
    "planted_agreement",
)

Rows = list[tuple[Sequence[Cell], dict[str, str]]]


def _ci(lo: Any, hi: Any, show: Any = number_format.fixed) -> str:
    if not (number_format.finite(lo) and number_format.finite(hi)):
        return ""
    return f'<span class="ci">[{esc(show(lo))}, {esc(show(hi))}]</span>'


def _sub(text: str) -> str:
    return f'<span class="ci">{text}</span>'


def _lead(df: pd.DataFrame, multi: bool) -> list[Cell]:
    return [th("Modality")] if multi else []


def _block_attrs(i: int, key: Any, prev: Any, **extra: str) -> dict[str, str]:
    attrs = dict(extra)
    if i > 0 and key != prev:
        attrs["class"] = "block-start"
    return attrs


def _yes_no(x: Any) -> str:
    f = flag(x)
    return number_format.DASH if f is None else "yes" if f else "no"


def _ratio(x: Any) -> str:
    """A fraction in [0, 1] with 3 decimals (recall, AP and their chance levels)."""
    return number_format.fixed(x, 3)


def _signed3(x: Any) -> str:
    return number_format.signed(x, 3)


def _leading_cell(r: Mapping[str, Any], suffix: str) -> Cell:
    """ARIA's leading channel, its z̄, and right / wrong in words (not by colour alone)."""
    ch = r.get(f"top_channel{suffix}")
    col = f"top_channel{suffix}"
    if ch is None or (isinstance(ch, float) and not number_format.finite(ch)) or str(ch) == "":
        return text_cell(number_format.DASH, **{"data-col": col})
    z = r.get(f"top_channel_z{suffix}")
    sig = flag(r.get("top_channel_sig")) if not suffix else None
    ztxt = f"z̄ {number_format.signed(z)}" + (
        ", sig." if sig else ", not sig." if sig is False else ""
    )
    right = r.get(f"right{suffix}")
    right = None if str(r.get("aspect")) == CONTROL else flag(right)
    if right is None:
        verdict, cls, attrs = "", "", {}
    elif right:
        verdict, cls, attrs = "✓ right: ", "best", {"data-verdict": "right"}
    else:
        verdict, cls, attrs = "✗ wrong: ", "", {"data-verdict": "wrong"}
    extra = ""
    if right is False and not suffix and number_format.finite(r.get("aspect_z")):
        extra = _sub(f"{esc(r.get('aspect'))} z̄ {esc(number_format.signed(r.get('aspect_z')))}")
    return text_cell(
        f"{verdict}{esc(ch)}" + _sub(esc(ztxt)) + extra, cls=cls, **{"data-col": col}, **attrs
    )


def _contrast_cell(r: Mapping[str, Any]) -> Cell:
    """The channel rising most over the control queries' z̄, with its Δz̄ and right / wrong."""
    col = "top_channel_vs_control"
    ch = r.get(col)
    if str(r.get("aspect")) == CONTROL or ch is None or str(ch) in ("", "nan"):
        return text_cell(number_format.DASH, **{"data-col": col})
    right = str(ch) == str(r.get("aspect"))
    verdict = "✓ right: " if right else "✗ wrong: "
    dz = r.get("top_channel_vs_control_dz")
    return text_cell(f"{verdict}{esc(ch)}" + _sub(f"Δz̄ {esc(number_format.signed(dz))}"),
                     cls="best" if right else "", **{"data-col": col,
                                                     "data-verdict": "right" if right else "wrong"})


def _aspects_html(t: ReportTable) -> str:
    df = t.df.reset_index(drop=True)
    multi = bool(t.layout.get("multi_modality"))
    residual = bool(t.layout.get("residual"))
    k = t.layout.get("k")
    kk = str(k) if k is not None else "k"
    has = set(df.columns)
    found = "found" in has
    contrast = "top_channel_vs_control" in has
    head = [
        _lead(df, multi)
        + [th("Setting"), th("Aspect"), th("Plant queries")]
        + ([th("Found")] if found else [])
        + [th(f"recall@{esc(kk)} ↑"), th("AP ↑"), th("Learned"),
           th("Counterfactual effect<br>(nats/token)"),
           th("ARIA's leading channel<br>(original scores)")]
        + ([th("ARIA's leading channel<br>(rank-1 residual)")] if residual else [])
        + ([th("Rises most over<br>control queries")] if contrast else [])
    ]
    rows: Rows = []
    prev = None
    for i, r in df.iterrows():
        key = (r.get("modality"), r["setting"])
        cells: list[Cell] = [text_cell(esc(r["modality"]))] if multi else []
        first = key != prev
        aspect = str(r["aspect"])
        cells += [
            text_cell(esc(r["setting"]) if first else ""),
            text_cell(f"<i>{esc(aspect)}</i>" if aspect == CONTROL else esc(aspect),
                      **{"data-col": "aspect"}),
            num_cell(esc(number_format.integer(r.get("n_queries"))), **{"data-col": "n_queries"}),
        ]
        if found:
            cells.append(text_cell(_yes_no(r.get("found")), **{"data-col": "found"}))
        rec_above = above_chance(r.get("ci_low"), r.get("chance"))
        cells.append(num_cell(
            esc(_ratio(r["recall_at_k"])) + _ci(r.get("ci_low"), r.get("ci_high"), _ratio)
            + _sub(f"chance {esc(_ratio(r.get('chance')))}"),
            cls="best" if rec_above else "", **{"data-col": "recall_at_k"},
        ))
        ap_above = above_chance(r.get("ap_ci_low"), r.get("ap_chance"))
        ap_chance = r.get("ap_chance")
        cells.append(num_cell(
            esc(_ratio(r["average_precision"]))
            + _ci(r.get("ap_ci_low"), r.get("ap_ci_high"), _ratio)
            + (_sub(f"chance {esc(_ratio(ap_chance))}") if number_format.finite(ap_chance) else ""),
            cls="best" if ap_above else "", **{"data-col": "average_precision"},
        ))
        le = r.get("learned_effect")
        cells.append(text_cell(
            esc(_yes_no(r.get("learned")))
            + (_sub(f"{esc(_signed3(le))} nats/token") if number_format.finite(le) else ""),
            **{"data-col": "learned"},
        ))
        cf_lo = r.get("cf_ci_low")
        cells.append(num_cell(
            esc(_signed3(r["counterfactual_effect"])) + _ci(cf_lo, r.get("cf_ci_high"), _signed3),
            cls="best" if above_chance(cf_lo, 0.0) else "",
            **{"data-col": "counterfactual_effect"},
        ))
        cells.append(_leading_cell(r, ""))
        if residual:
            cells.append(_leading_cell(r, "_residual"))
        if contrast:
            cells.append(_contrast_cell(r))
        attrs = _block_attrs(int(i), key, prev, **{"data-setting": str(r["setting"]),
                                                  "data-aspect": aspect})
        rows.append((cells, attrs))
        prev = key
    return html_table(head, rows, attrs={"id": "table-planted_aspects"})


def _confusion_html(t: ReportTable) -> str:
    """One row per (setting, planted aspect); a column group per score variant."""
    df = t.df.reset_index(drop=True)
    channels: list[str] = t.layout["channels"]
    variants: list[str] = t.layout.get("variants") or ["original"]
    multi = bool(t.layout.get("multi_modality"))
    names = {"original": "Original scores", "residual": "Rank-1 residual"}
    span = str(len(channels) + 1)
    fixed = [th(h, rowspan="2") for h in (
        (["Modality"] if multi else []) + ["Setting", "Planted aspect", "Plant queries"])]
    head = [
        fixed + [th(esc(names.get(v, v)), colspan=span, **{"class": "grp"}) for v in variants],
        [c for _ in variants for c in [th(esc(ch)) for ch in channels] + [th("Right")]],
    ]
    rows: Rows = []
    prev = None
    for (m, s, a), g in df.groupby(["modality", "setting", "aspect"], sort=False):
        by_v = {str(r["variant"]): r for _, r in g.iterrows()}
        key = (m, s)
        first = key != prev
        cells: list[Cell] = [text_cell(esc(m) if first else "")] if multi else []
        cells += [
            text_cell(esc(s) if first else ""),
            text_cell(esc(a), **{"data-col": "aspect"}),
            num_cell(esc(number_format.integer(g["n_queries"].max())), **{"data-col": "n_queries"}),
        ]
        for v in variants:
            r = by_v.get(v)
            for c in channels:
                diag = c == str(a)
                n = r[f"{c}_n"] if r is not None else None
                cls = " ".join(x for x in ("first" if c == channels[0] else "",
                                           "best" if diag else "") if x)
                cells.append(num_cell(
                    esc(number_format.integer(n)), cls=cls, **{"data-col": f"{v}:{c}"},
                    **({"title": "planted aspect = leading channel"} if diag else {}),
                ))
            share = r.get("right_share") if r is not None else None
            rn = r.get("right_n") if r is not None else None
            nq = r["n_queries"] if r is not None else None
            of = (f"{number_format.integer(rn)} of {number_format.integer(nq)}"
                  if number_format.finite(rn) else "")
            cells.append(num_cell(esc(number_format.pct(share, 0)), title=of,
                                  **{"data-col": f"{v}:right_share"}))
        rows.append((cells, _block_attrs(len(rows), key, prev, **{
            "data-setting": str(s), "data-aspect": str(a)})))
        prev = key
    return html_table(head, rows, cls="data compact", attrs={"id": "table-planted_confusion"})


def _naming_html(t: ReportTable) -> str:
    df = t.df.reset_index(drop=True)
    multi = bool(t.layout.get("multi_modality"))
    has = set(df.columns)
    rows_cols = {"n_rows_found", "n_rows_right"} <= has
    head = [
        _lead(df, multi)
        + [th("Setting"), th("Scores")]
        + ([th("Reading")] if "reading" in has else [])
        + [th("Plant queries")]
        + ([th("Named right")] if {"n_right", "n_queries"} <= has else [])
        + [th("Found the marked set"), th("Right when found ↑")]
        + ([th("Rows above chance named right ↑")] if rows_cols else [])
        + ([th("Controls answered none ↑")] if "control_none_share" in has else [])
    ]
    rows: Rows = []
    prev = None
    for i, r in df.iterrows():
        key = (r.get("modality"), r["setting"])
        first = key != prev
        cells: list[Cell] = [text_cell(esc(r["modality"]) if first else "")] if multi else []
        nq = r.get("n_queries")
        cells += [
            text_cell(esc(r["setting"]) if first else ""),
            text_cell(esc(r["variant"])),
        ]
        if "reading" in has:
            cells.append(text_cell(esc(r["reading"])))
        cells.append(num_cell(esc(number_format.integer(nq)), **{"data-col": "n_queries"}))
        if {"n_right", "n_queries"} <= has:
            share = (float(r["n_right"]) / float(nq)
                     if number_format.finite(nq) and float(nq) else None)
            cells.append(
                num_cell(
                    esc(number_format.integer(r["n_right"]))
                    + _sub(esc(number_format.pct(share, 0))),
                    **{"data-col": "n_right"},
                )
            )
        cells.append(num_cell(esc(number_format.integer(r["n_found"])), **{"data-col": "n_found"}))
        cells.append(
            num_cell(
                esc(number_format.pct(r["right_when_found"], 0))
                + _sub(
                    f"{esc(number_format.integer(r['n_right_found']))} of "
                    f"{esc(number_format.integer(r['n_found']))}"
                ),
                **{"data-col": "right_when_found"},
            )
        )
        if rows_cols:
            cells.append(num_cell(
                esc(number_format.pct(r.get("rows_right_share"), 0))
                + _sub(f"{esc(number_format.integer(r['n_rows_right']))} of "
                       f"{esc(number_format.integer(r['n_rows_found']))}"),
                **{"data-col": "rows_right_share"}))
        if "control_none_share" in has:
            cells.append(num_cell(esc(number_format.pct(r.get("control_none_share"), 0)),
                                  **{"data-col": "control_none_share"}))
        rows.append((cells, _block_attrs(int(i), key, prev, **{
            "data-setting": str(r["setting"]), "data-variant": str(r["variant"])})))
        prev = key
    return html_table(head, rows, cls="data compact", attrs={"id": "table-planted_naming"})


def _effects_html(t: ReportTable) -> str:
    df = t.df.reset_index(drop=True)
    multi = bool(t.layout.get("multi_modality"))
    has = set(df.columns)
    opt = [(c, h) for c, h in (("seed", "Seed"), ("n", "Items (n)"), ("learned", "Learned"),
                               ("measure", "Measure")) if c in has]
    head = [
        _lead(df, multi)
        + [th("Kind"), th("Aspect"), th("Effect (nats/token)")]
        + [th(h) for _, h in opt]
    ]
    rows: Rows = []
    prev = None
    for i, r in df.iterrows():
        key = (r.get("modality"), r["kind"])
        cells: list[Cell] = [text_cell(esc(r["modality"]))] if multi else []
        lo = r["ci_low"]
        cells += [
            text_cell(esc(r["kind"]) if key != prev else ""),
            text_cell(esc(r["aspect"]), **{"data-col": "aspect"}),
            num_cell(esc(_signed3(r["effect"])) + _ci(lo, r["ci_high"], _signed3),
                     cls="best" if above_chance(lo, 0.0) else "", **{"data-col": "effect"}),
        ]
        for c, _ in opt:
            v = r.get(c)
            if c == "learned":
                cells.append(text_cell(_yes_no(v), **{"data-col": c}))
            elif c in ("seed", "n"):
                cells.append(num_cell(esc(number_format.integer(v, missing="")), **{"data-col": c}))
            else:
                cells.append(text_cell("" if v is None or not isinstance(v, str) else esc(v)))
        rows.append((cells, _block_attrs(int(i), key, prev, **{"data-kind": str(r["kind"])})))
        prev = key
    return html_table(head, rows, cls="data compact", attrs={"id": "table-planted_effects"})


def _agreement_html(t: ReportTable) -> str:
    df = t.df.reset_index(drop=True)
    multi = bool(t.layout.get("multi_modality"))
    has = set(df.columns)
    stats = [(s, n, f"{s}_p_exact" in has) for s, n in (("spearman", "Spearman ρ"),
                                                          ("kendall", "Kendall τ"))]
    head = [
        _lead(df, multi) + [th("Diagnostic")]
        + [c for s, n, p in stats for c in ([th(n)] + ([th("p (exact)")] if p else []))]
        + [th("Methods")]
        + ([th("Methods compared")] if "methods" in has else [])
        + ([th("Order")] if "order" in has else [])
    ]
    rows: Rows = []
    for _, r in df.iterrows():
        cells: list[Cell] = [text_cell(esc(r["modality"]))] if multi else []
        cells.append(text_cell(esc(r["diagnostic"])))
        for s, _, p in stats:
            cells.append(num_cell(esc(number_format.signed(r[s], 3)), **{"data-col": s}))
            if p:
                cells.append(num_cell(esc(number_format.fixed(r.get(f"{s}_p_exact"), 3)),
                                      **{"data-col": f"{s}_p_exact"}))
        cells.append(
            num_cell(esc(number_format.integer(r["n_methods"])), **{"data-col": "n_methods"})
        )
        for c in ("methods", "order"):
            if c in has:
                v = r.get(c)
                cells.append(text_cell(esc(v) if isinstance(v, str) else ""))
        rows.append((cells, {"data-diagnostic": str(r["diagnostic"])}))
    return html_table(head, rows, cls="data compact", attrs={"id": "table-planted_agreement"})


_RENDERERS = {
    "planted_aspects": _aspects_html,
    "planted_confusion": _confusion_html,
    "planted_naming": _naming_html,
    "planted_effects": _effects_html,
    "planted_agreement": _agreement_html,
}


def planted_aspects_html(t: ReportTable) -> str:
    """The HTML of one planted-aspect table.

    Parameters
    ----------
    t : ReportTable
        One of :data:`PLANTED_ASPECT_TABLES`, from
        :func:`aria_tda_experiments.report.planted_aspects.planted_aspect_tables`.

    Returns
    -------
    str
        A ``<div class="tablewrap">`` around a ``<table id="table-<name>">``; ``""`` for
        another table.
    """
    fn = _RENDERERS.get(t.name)
    return fn(t) if fn else ""


def _panels_html(panels: Sequence[tuple[str, str, str]], note: str | None) -> str:
    out = []
    by_setting: dict[str, list[tuple[str, str]]] = {}
    for setting, aspect, svg in panels:
        by_setting.setdefault(setting, []).append((aspect, svg))
    for j, (setting, items) in enumerate(by_setting.items()):
        figs = "".join(
            f'<figure class="plot" data-setting="{esc(setting)}" data-aspect="{esc(a)}" '
            f'aria-label="K-sweep of the {esc(a)} plant queries, {esc(setting)}">{svg}</figure>'
            for a, svg in items
        )
        out.append(
            f'<details class="planted-sweep"{" open" if j == 0 else ""} '
            f'data-setting="{esc(setting)}"><summary>{esc(setting)}: {len(items)} panel(s)'
            f'</summary><div class="plots">{figs}</div></details>'
        )
    if note:
        out.append(f'<p class="note">{esc(note)}</p>')
    return "".join(out)


def planted_aspects_section(
    tables: Mapping[str, ReportTable],
    panels: Sequence[tuple[str, str, str]] = (),
    note: str | None = None,
) -> tuple[str, str, str] | None:
    """The "Planted aspects" section: its title, body and caption.

    Parameters
    ----------
    tables : Mapping[str, ReportTable]
        The report's tables by name; those of :data:`PLANTED_ASPECT_TABLES` are shown, the
        first present leading (its caption becomes the section's).
    panels : sequence of (str, str, str)
        ``(setting, aspect, svg)`` per K-sweep panel of the plant queries, in order; grouped
        per setting in folded blocks (the first open).
    note : str, optional
        Shown under the panels (e.g. why there are none, or how many were left out).

    Returns
    -------
    (title, body, caption) or None
        ``None`` when there is nothing to show. The title is HTML-escaped.
    """
    present = [tables[n] for n in PLANTED_ASPECT_TABLES if n in tables]
    if not present and not panels and not note:
        return None
    if not present and not panels:  # only a note (e.g. plots turned off) and no table
        return None
    body, title, caption = "", "Planted aspects", ""
    for j, t in enumerate(present):
        if j == 0:
            title, caption = t.title, t.caption
            body += planted_aspects_html(t)
        else:
            body += (
                f'<h3 id="h-{esc(t.name)}">{esc(t.title)}</h3>'
                f'<p class="caption">{esc(t.caption)}</p>{planted_aspects_html(t)}'
            )
    if panels or note:
        body += (
            '<h3 id="h-planted_sweep">K-sweeps of the plant queries</h3><p class="caption">'
            "Mean homogeneity z̄ of each aspect's plant queries against the group size K, one "
            "panel per setting and planted aspect (named in the panel title; its channel is "
            "drawn thicker and labelled 'planted'). Dashed curves (open markers): the original "
            "score matrix; solid (filled): its rank-1 residual; bands: bootstrap 95% CIs over "
            "the queries; the dotted line marks k. z̄ = 0 is chance (no more alike than random "
            "groups of K training items); a right reading has the planted channel on top.</p>"
            + _panels_html(panels, note)
        )
    return esc(title), body, caption
