"""The report page: one self-contained HTML document around the tables.

The summary (verdict counts, how to read the numbers), the registered sections
(:mod:`aria_tda.report.sections`) in their order, a navigation bar, the run's parameters,
seeds, versions and timings, and the skeleton of the per-query view that ``assets/report.js``
fills from the packed evidence blocks. The page carries its CSS
and JavaScript inline and a Content-Security-Policy (:data:`CSP`) that forbids every network
request.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterable, Mapping, Sequence
from importlib import resources
from typing import TYPE_CHECKING, Any

from aria_tda.errors import AriaWarning, one_line
from aria_tda.report import number_format, words
from aria_tda.report.html.cells import (
    Cell,
    badge,
    clean_json,
    esc,
    html_table,
    json_default,
    json_for_script,
    num_cell,
    text_cell,
    th,
)
from aria_tda.report.html.tables import null_html
from aria_tda.report.load import ResultsData
from aria_tda.report.report_table import ReportTable
from aria_tda.report.sections.base import PageContext, Section

if TYPE_CHECKING:  # the report's page reads what the listening room packed
    from aria_tda.media.query_evidence import EvidencePayload

__all__ = ["render_html"]

#: Nothing from the network: inline style and script, ``data:`` images, and the listening
#: room's clips and pictures from local files beside the page (``report_media/``; ``'self'``
#: when the page is served from a folder, ``file:`` when it is opened from disk).
CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; "
    "img-src data: 'self' file:; media-src 'self' file:; "
    "base-uri 'none'; form-action 'none'"
)


def _asset(name: str) -> str:
    return resources.files("aria_tda.report").joinpath("assets", name).read_text(encoding="utf-8")


def _kv(items: Iterable[tuple[Any, Any]]) -> str:
    out = ['<dl class="kv">']
    for k, v in items:
        if isinstance(v, (dict, list, tuple)):
            v = json.dumps(clean_json(v), default=json_default, ensure_ascii=False)
        out.append(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>")
    out.append("</dl>")
    return "".join(out)


def _summary(data: ResultsData, tables: Mapping[str, ReportTable], k: int | None) -> str:
    rel = tables.get("reliability")
    parts = []
    if rel is not None:
        counts: dict[str, list[str]] = {}
        for s, v in zip(rel.df["setting"], rel.df["verdict"], strict=True):
            counts.setdefault(v if isinstance(v, str) else "unknown", []).append(str(s))
        items = []
        for v in (
            "collapsed",
            "suspect",
            "ok",
            *[x for x in counts if x not in ("collapsed", "suspect", "ok")],
        ):
            if v in counts:
                items.append(f"<li>{badge(v)} {len(counts[v])}: {esc(', '.join(counts[v]))}</li>")
        parts.append(
            f"<p>{len(rel.df)} setting(s) analysed; verdicts:</p><ul>{''.join(items)}</ul>"
        )
        if "collapsed" in counts:
            parts.append(
                '<p class="note">Collapsed settings retrieve (nearly) the same group for every '
                "query: their homogeneity numbers describe that fixed group, not attribution, and "
                "they are excluded from rankings.</p>"
            )
    asp = tables.get("aspects")
    if asp is not None:
        items = []
        for _, r in asp.df[asp.df["variant"] == "original"].iterrows():
            shares = {c: r.get(f"{c}_named_share") for c in asp.layout["channels"]}
            named = ", ".join(f"{esc(c)} {100 * float(v):.0f}%" for c, v in shares.items()
                              if v == v and float(v) > 0)
            items.append(
                f"<li><b>{esc(r['setting'])}</b>: follows its queries along "
                f"<b>{esc(r['method_aspect'])}</b>; a distinctive aspect for "
                f"{100 * (1 - float(r['none_share'])):.0f}% of its queries"
                + (f" ({named})" if named else "") + "</li>")
        parts.append("<p>Which aspect (the distinctive reading, original scores):</p>"
                     f"<ul>{''.join(items)}</ul>")
    parts.append(
        '<dl class="howto">'
        "<dt>Distinctive aspect</dt><dd>the channel that explains a query's attribution "
        "beyond what the same method shows for every query, or none (a randomly ranking "
        "score matrix names a query with probability α).</dd>"
        "<dt>κ, r₁, r₂:₅, p</dt><dd>reliability of the score matrix (lower = more "
        "query-dependent; paper Eqs. 1–3).</dd>"
        "<dt>z_c(q)</dt><dd>how much more alike, along channel c, the top-K tracks of query q are "
        "than random groups of K training tracks, in SD units of that random-group null "
        "(0 = chance, 1.96 ≈ the top 2.5% of random groups).</dd>"
        "<dt>z̄, Pos, Sig</dt><dd>mean of z_c(q) over queries, fraction of queries with "
        "z &gt; 0, fraction with z &gt; 1.96.</dd>"
        "<dt>Residual</dt><dd>the same analysis after removing the rank-1 component σ₁u₁v₁ᵀ of "
        "the score matrix.</dd>"
        "</dl>"
    )
    if k is not None:
        parts.append(
            f'<p class="note">Tables are at group size K = {k} '
            f"(K-sweep plots show every K: {esc(', '.join(map(str, data.ks)))}).</p>"
        )
    return "".join(parts)


def _run_details(data: ResultsData) -> str:
    meta = data.meta
    out = []
    top: list[tuple[str, Any]] = [
        (k, meta.get(k)) for k in ("kind", "aria_version", "created") if k in meta
    ]
    top.append(("results folder", str(data.path)))
    out.append(_kv(top))
    study = data.study
    if study:
        out.append("<h3>Study parameters</h3>")
        out.append(_kv(study.items()))
    settings = [s for s in meta.get("settings") or [] if isinstance(s, Mapping)]
    if settings:
        keys = list(dict.fromkeys(k for s in settings for k in s))
        head = [[th(esc(k)) for k in keys]]
        srows: list[tuple[Sequence[Cell], dict[str, str]]] = [
            (
                [
                    text_cell(
                        esc(
                            json.dumps(clean_json(s.get(k)), default=json_default)
                            if isinstance(s.get(k), (dict, list))
                            else ("" if s.get(k) is None else s.get(k))
                        )
                    )
                    for k in keys
                ],
                {},
            )
            for s in settings
        ]
        out.append(
            "<h3>Settings</h3>"
            + html_table(head, srows, cls="data compact", attrs={"id": "table-settings"})
        )
    ch = meta.get("channels")
    if isinstance(ch, Mapping) and ch:
        out.append(
            "<h3>Channels and features</h3>"
            + _kv(
                (c, ", ".join(map(str, f)) if isinstance(f, (list, tuple)) else f)
                for c, f in ch.items()
            )
        )
    seeds = {
        k: v for k, v in study.items() if "seed" in str(k).lower() or k in ("B", "n_bootstrap")
    }
    if seeds:
        out.append("<h3>Randomness</h3>" + _kv(seeds.items()))
    versions = meta.get("versions")
    if isinstance(versions, Mapping) and versions:
        out.append("<h3>Versions</h3>" + _kv(versions.items()))
    timings = meta.get("timings")
    if isinstance(timings, Mapping) and timings:
        rows: list[tuple[Sequence[Cell], dict[str, str]]] = [
            ([text_cell(esc(k)), num_cell(esc(number_format.seconds(v)))], {})
            for k, v in timings.items()
        ]
        total = sum(float(v) for v in timings.values() if number_format.finite(v))
        rows.append(([text_cell("<b>total</b>"), num_cell(esc(number_format.seconds(total)))], {}))
        out.append(
            "<h3>Timings</h3>"
            + html_table(
                [[th("Stage"), th("Wall time")]],
                rows,
                cls="data compact",
                attrs={"id": "table-timings"},
            )
        )
    known = {
        "kind",
        "aria_version",
        "created",
        "study",
        "settings",
        "channels",
        "versions",
        "timings",
        "notes",
    }
    extra = [(k, v) for k, v in meta.items() if k not in known]
    if extra:
        out.append("<h3>Other metadata</h3>" + _kv(extra))
    return "".join(out)


def _query_view(payload: EvidencePayload | None) -> str:
    if payload is None or payload.empty:
        return (
            '<p class="note" id="query-view-missing">This results folder has no per-query tables '
            "(topk.parquet, query_z.parquet, pairs.parquet), so there is no per-query evidence to "
            "show.</p>"
        )
    h = payload.header
    units = "".join(f"<li>{esc(t)}</li>" for t in words.UNITS.values())
    k_txt = f"K = {h['k']}" if h.get("k") is not None else "—"
    pk_txt = f" (pairs at K = {h['pairs_k']})" if h.get("pairs_k") not in (None, h.get("k")) else ""
    return f"""
<div id="query-view">
 <div class="qv-controls">
  <div><label for="qv-setting">Setting</label><select id="qv-setting"></select></div>
  <div><label for="qv-variant">Scores</label><select id="qv-variant"></select></div>
  <div><label for="qv-search">Find a query (index, label or metadata)</label>
   <input id="qv-search" type="search" placeholder="e.g. 12 or a title" autocomplete="off">
   <select id="qv-list" size="7" aria-label="matching queries"></select>
   <span class="status" id="qv-count"></span></div>
  <div class="qv-nav"><label>Step</label><button type="button" id="qv-prev">◀ previous</button>\
<button type="button" id="qv-next">next ▶</button></div>
 </div>
 <div id="qv-banner" class="banner" hidden></div>
 <div class="status" id="qv-status" role="status" aria-live="polite">loading…</div>
 <div class="qv-meta" id="qv-query"></div>
 <section class="qv-aspect" id="qv-aspect" aria-live="polite"></section>
 <div class="qv-grid">
  <div>
   <h3>The paper's z<sub>c</sub>(q): how alike its top-K are, per channel ({esc(k_txt)})</h3>
   <div id="qv-zchart"></div>
   <p class="note">Grey curve: the null reference N(0, 1) that z<sub>c</sub>(q) follows for \
random groups; dashed line: z = 1.96.
   Box: this setting's queries (25–75%, whiskers 5–95%); dot: this query.</p>
   <div class="tablewrap"><table class="data compact" id="qv-ztable"><thead><tr>\
<th>Channel</th><th>z<sub>c</sub>(q)</th>
   <th title="normal approximation Φ(z)">above random groups</th><th>rank among queries</th>\
<th>reading</th></tr></thead><tbody></tbody></table></div>
   <h3>Track pairs contributing most per channel{esc(pk_txt)}</h3>
   <div id="qv-pairs"></div>
   <ul class="units note" id="qv-units">{units}</ul>
  </div>
  <div>
   <h3>Listen and see</h3>
   <p class="note qv-keys" id="qv-keys">Keys, while this view is on screen: <kbd>j</kbd>/\
<kbd>k</kbd> next/previous item, <kbd>a</kbd> A/B (query, then item), <kbd>t</kbd> toggle \
query ⇄ item, <kbd>space</kbd> play/pause, <kbd>n</kbd>/<kbd>p</kbd> next/previous \
query; Tab reaches every track, Enter selects it. <label><input type="checkbox" \
id="qv-shortcuts" checked> single-key shortcuts</label></p>
   <div id="qv-media"></div>
   <h3>Top attributed training tracks (first {int(h["top_n"])})</h3>
   <div class="tablewrap"><table class="data compact" id="qv-topk"><thead><tr><th>Rank</th>\
<th>Track</th><th title="{esc(words.UNITS["score"])}">Score</th><th>Listen</th></tr></thead>\
<tbody></tbody></table></div>
  </div>
 </div>
</div>"""


def _section_html(sec: Section, data: ResultsData, tables: Mapping[str, ReportTable],
                  ctx: PageContext) -> str:
    """One section's HTML; a plugin section that fails is one warning and shows nothing."""
    mark = len(ctx.toc)
    try:
        return sec.html(data, tables, ctx) or ""
    except Exception as exc:
        if type(sec).__module__.startswith("aria_tda.report.sections."):
            raise  # ARIA's own section: a bug, loud
        del ctx.toc[mark:]
        warnings.warn(f"report section {sec.name!r}: its HTML failed ({one_line(exc)}); left "
                      "out", AriaWarning, stacklevel=3)
        return ""


def render_html(
    data: ResultsData,
    tables: Mapping[str, ReportTable],
    *,
    k: int | None,
    evidence: EvidencePayload | None,
    plots: bool = True,
    media: Mapping[str, Any] | None = None,
    sections: Sequence[Section] | None = None,
) -> str:
    """The report page (a complete HTML document).

    Parameters
    ----------
    data : ResultsData
        The results folder, as read by :func:`aria_tda.report.load.load_results`: title, run
        metadata, missing pieces and notes come from it.
    tables : Mapping[str, ReportTable]
        The report's tables by export name (:func:`aria_tda.report.tables.build_tables`).
    k : int or None
        Group size of the tables, named in the summary.
    evidence : EvidencePayload or None
        The packed per-query evidence
        (:func:`aria_tda.media.query_evidence.build_evidence`); ``None``
        or empty shows a note that the folder has no per-query tables.
    plots : bool
        Draw the sections' figures (the K-sweeps; they need matplotlib, else the page says
        so).
    media : Mapping, optional
        The listening room's manifest (:func:`aria_tda.media.report_media.write_report_media`):
        clips and pictures of a bounded set of queries and items, as URLs relative to the page;
        ``None``: the per-query view says there are none.
    sections : sequence of Section, optional
        The sections of the page, in order (default: every registered one,
        :func:`aria_tda.report.sections.registry.sections`); the summary comes first, the
        per-query view and the run details last.

    Returns
    -------
    str
        The page: inline CSS and JavaScript, the evidence blocks as ``text/plain`` scripts, no
        external reference.
    """
    if sections is None:
        from aria_tda.report.sections.registry import sections as registered

        sections = registered()
    ctx = PageContext(k=k, plots=plots)
    parts = [ctx.section("summary", "Summary", "Summary", _summary(data, tables, k))]
    parts += [_section_html(sec, data, tables, ctx) for sec in sections]
    parts.append(ctx.section(
        "query",
        "Per-query evidence",
        "Per-query evidence",
        _query_view(evidence),
        "For one query: its top attributed training tracks (with players and pictures for the "
        "queries and items whose media the report keeps), its z-score per channel against the "
        "random-group null, and the pairs of attributed tracks that contribute most to each "
        "channel's similarity, in words. 'aria-tda evidence RESULTS --query Q' writes one "
        "query's full dossier.",
    ))
    details = _run_details(data)
    t = tables.get("null")
    if t is not None:
        details += (
            f"<details><summary>Null distribution ({len(t.df)} rows)</summary>"
            f"{null_html(t)}</details>"
        )
    parts.append(ctx.section("run", "Run details", "Parameters, seeds, versions and timings",
                             details))

    notes = [str(n) for n in data.meta.get("notes") or []]
    missing_html = ""
    if data.missing:
        missing_html = (
            '<div class="missing" id="missing"><b>Missing pieces.</b> This report shows what the '
            "results folder holds; the following is absent or unusable:<ul>"
            + "".join(f"<li>{esc(m)}</li>" for m in data.missing)
            + "</ul></div>"
        )
    notes_html = (
        (
            '<div class="note"><b>Notes from the run:</b><ul>'
            + "".join(f"<li>{esc(n)}</li>" for n in notes)
            + "</ul></div>"
        )
        if notes
        else ""
    )

    nav = "".join(f'<a href="#{esc(sid)}">{text}</a>' for sid, text in ctx.toc if text)
    study = data.study
    sub = [f"results: {esc(data.path.name)}"]
    if study.get("modality"):
        sub.append(f"modality: {esc(study['modality'])}")
    if data.meta.get("created"):
        sub.append(f"created {esc(data.meta['created'])}")
    sub.append(f"ARIA {esc(data.meta.get('aria_version', ''))}")
    payload_json: dict[str, Any] = {
        "evidence": None,
        "media": clean_json(media) if media is not None else None,
        "words": {"templates": words.TEMPLATES, "units": words.UNITS, "sig": words.SIG_Z},
    }
    blocks_html = ""
    if evidence is not None and not evidence.empty:
        payload_json["evidence"] = clean_json(evidence.header)
        blocks_html = "".join(
            f'<script type="text/plain" id="aria-block-{b.header["id"]}">{b.data}</script>\n'
            for b in evidence.blocks
        )
    from aria_tda._version import __version__

    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{esc(CSP)}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta name="color-scheme" content="light">'
        f'<meta name="generator" content="aria-tda {esc(__version__)}">'
        f"<title>{esc(data.title)}</title><style>{_asset('report.css')}</style></head>\n<body>"
        f'<header class="top"><h1>{esc(data.title)}</h1>'
        f'<p class="sub">{" · ".join(sub)}</p></header>'
        f'<nav class="toc" aria-label="sections">{nav}</nav>\n<main>{missing_html}{notes_html}'
        + "\n".join(p for p in parts if p)
        + f"</main><footer>Generated by ARIA {esc(__version__)} from {esc(str(data.path))}. "
        "This file is self-contained: it opens offline and makes no network requests.</footer>\n"
        '<script type="application/json" id="aria-data">'
        f"{json_for_script(payload_json)}</script>\n"
        f"{blocks_html}<script>{_asset('report.js')}</script></body></html>\n"
    )
