"""The dossier page: one self-contained HTML document for one query (see :mod:`.dossier`).

Every text that comes from the results (ids, labels, metadata, file names) is escaped; every
picture is an ``<img>`` with a ``data:`` URI (an SVG drawn from a hostile label cannot run or
inject anything); the Content-Security-Policy (:data:`DOSSIER_CSP`) allows only the page's own
inline style and script and ``data:`` images and media, so nothing is fetched from anywhere.
"""

from __future__ import annotations

import datetime as _dt
import math
from importlib import resources
from typing import Any

from aria_tda.media.dossier_items import audio_html, evidence_section, figure_html, items_section
from aria_tda.media.pdf import TITLE_MARK
from aria_tda.media.provenance import VERDICT_MEANING, provenance_html
from aria_tda.report import words
from aria_tda.report.html.cells import esc

__all__ = ["DOSSIER_CSP", "render_dossier"]

DOSSIER_CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:; "
    "media-src data:; base-uri 'none'; form-action 'none'"
)

_COLLAPSED = ("Collapsed setting: queries that are not alike get largely the same top-K group, "
              "so this evidence describes that fixed group, not what this query drew on.")


def _asset(name: str) -> str:
    return resources.files("aria_tda.report").joinpath("assets", name).read_text(encoding="utf-8")


def _num(x: Any, fmt: str = ".3g") -> str:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return "\u2014"
    return format(v, fmt) if math.isfinite(v) else "\u2014"


def _label(d: Any) -> str:
    return _COLLAPSED_HTML if d.verdict == "collapsed" else ""


_COLLAPSED_HTML = f'<p class="collapsed-label" role="note">\u26a0 {esc(_COLLAPSED)}</p>'


def _verdict(d: Any) -> str:
    v = d.verdict or "unknown"
    rel = ", ".join(f"{esc(k)} = {_num(val)}" for k, val in d.reliability.items())
    says, not_says = VERDICT_MEANING.get(v, ("", ""))
    meaning = (f"It says: {says}. It does not say: {not_says}." if says
               else "No reliability verdict is recorded for this setting.")
    found = getattr(d, "findings", ())
    return (
        f'<section id="verdict" class="verdict {esc(v)}" data-verdict="{esc(v)}">'
        f"<h2>Verdict of the setting {esc(d.setting)}: "
        f'<span class="badge {esc(v)}">{esc(v)}</span></h2>'
        f'<p class="verdict-text">{esc(meaning)}</p>'
        + (f'<p class="note">Why: {esc(d.reason)}</p>' if d.reason else "")
        + ('<ul class="note findings">' + "".join(f"<li>{esc(f)}</li>" for f in found)
           + "</ul>" if found else "")
        + (f'<p class="note">Reliability of the score matrix: {rel} (lower = more '
           "query-dependent).</p>" if rel else "")
        + "</section>"
    )


def _query_section(d: Any) -> str:
    m = d.media
    meta = "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in d.query_meta.items() if v)
    body = [_label(d)]
    if d.rendering:
        body.append(f'<p class="caution rendering">How this query\'s audio was made: '
                    f"{esc(d.rendering)}.</p>")
    if d.prompt_seconds is not None:
        body.append(f'<p class="note">The first {d.prompt_seconds:.2f} s of the query are its '
                    "prompt (given to the model); what follows was generated. The pictures "
                    "mark the boundary.</p>")
    if m is None:
        body.append(f'<p class="missing-media">No media: {esc(d.media_note or "none")}</p>')
    else:
        body.append(audio_html(m.query, "player-query", f"query {d.query}"))
        facts = (getattr(m, "facts", {}) or {}).get("")
        if facts is not None:
            body.append(f'<p class="facts">{esc(facts.describe())}</p>')
        body.append(figure_html(m.query.picture,
                                f"spectrogram, chroma, beats and chords of query {d.query}"))
    if meta:
        body.append(f'<dl class="kv">{meta}</dl>')
    return f'<section id="query-section"><h2>The query</h2>{"".join(body)}</section>'


def _aspect_section(d: Any) -> str:
    """The distinctive reading first: the query's aspect (or none), the method's own, and the
    per-channel numbers with the paper's z beside them."""
    a = d.aspect
    if a is None:
        return (f'<section id="aspect"><h2>Which aspect</h2>{_label(d)}<p class="note">'
                f"{esc(words.TEMPLATES['aspect_missing'])}.</p></section>")
    lead = words.describe_aspect(a["named"], a["delta"], method=d.setting, anchor=a["anchor"],
                                 threshold=a["threshold"], alpha=a["alpha"])
    method = words.describe_method_aspect(d.setting, a["method_aspect"],
                                          a["baseline"].get(a["method_aspect"]))
    rows = []
    for c in d.channels:
        dl, za, zp = a["delta"].get(c, math.nan), a["z"].get(c, math.nan), d.z.get(c, math.nan)
        mark = " named" if c == a["named"] else ""
        rows.append(
            f'<tr data-channel="{esc(c)}" class="{mark.strip()}"><td class="txt">{esc(c)}</td>'
            f'<td class="num">{esc(words.format_signed(dl))}</td>'
            f'<td class="num">{esc(words.format_signed(za))}</td>'
            f'<td class="num">{esc(words.format_signed(a["baseline"].get(c, math.nan)))}</td>'
            f'<td class="num">{esc(words.format_signed(zp))}</td></tr>')
    anchor = {"query": "the query's own features",
              "both": "the query's own features and the attributed group"}.get(
        a["anchor"], "the attributed group (no query features in the study)")
    answer = "none" if a["named"] == "none" else a["named"]
    return (
        f'<section id="aspect" data-named="{esc(answer)}" aria-live="polite">'
        f"<h2>Which aspect: {esc('no distinctive aspect' if answer == 'none' else answer)}</h2>"
        + _label(d)
        + f'<p class="lead">{esc(lead)}.</p><p class="note">{esc(method)}.</p>'
        '<table class="data compact" id="aspect-table"><thead><tr><th>Channel</th>'
        f'<th title="{esc(words.UNITS["delta"])}">Δ (distinctive)</th>'
        f"<th>z of the distinctive top-{esc(a['K'])}</th><th>method's median z</th>"
        f"<th>paper's z (top-{esc(d.k)} alike)</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
        f'<p class="note">Anchored on {esc(anchor)}; threshold '
        f'{esc(words.format_signed(a["threshold"]))}'
        f" (alpha {esc(words.format_percent(a['alpha']))}). The paper's z says how alike the "
        "attributed items are to each other; the distinctive reading asks what sets this "
        "query's attribution apart from what the method gives every query.</p></section>"
    )


def _z_section(d: Any) -> str:
    rows, sentences = [], []
    for c in d.channels:
        z = d.z.get(c, math.nan)
        sentences.append(f'<li data-channel="{esc(c)}">{esc(words.describe_z(c, z, k=d.k))}</li>')
        rows.append(
            f'<tr data-channel="{esc(c)}"><td class="txt">{esc(c)}</td>'
            f'<td class="num">{esc(words.format_signed(z))}</td>'
            f'<td class="num">{esc(words.format_percent(words.above_chance(z)))}</td>'
            f'<td class="txt">{esc(words.reading_of_z(z))}</td></tr>'
        )
    return (
        '<section id="channels"><h2>How alike its attributed group is, per channel (the '
        "paper's z)</h2>"
        + _label(d)
        + f'<ul class="sentences">{"".join(sentences)}</ul>'
        '<table class="data compact" id="z-table"><thead><tr><th>Channel</th><th>z</th>'
        "<th>above random groups</th><th>reading</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table></section>"
    )


def _units_section(d: Any) -> str:
    items = "".join(f"<li>{esc(t)}</li>" for t in words.UNITS.values())
    timing = "; ".join(f"{esc(k)} {v:.1f} s" for k, v in d.timings.items())
    problems = ""
    if d.media is not None and d.media.problems:
        problems = ("<h3>Could not be shown</h3><ul>"
                    + "".join(f"<li>{esc(p)}</li>" for p in d.media.problems) + "</ul>")
    return (f'<section id="units"><h2>How to read the numbers</h2><ul class="units">{items}</ul>'
            f"{problems}"
            + (f'<p class="note">Built in: {timing}.</p>' if timing else "") + "</section>")


def render_dossier(d: Any) -> str:
    """The dossier page of :class:`aria_tda.media.dossier.DossierData` ``d``.

    Parameters
    ----------
    d : DossierData
        The query's numbers and media.

    Returns
    -------
    str
        A complete HTML document, media embedded, no external reference.
    """
    from aria_tda._version import __version__

    title = f"Evidence dossier: query {d.query}"
    if d.query_label:
        title += f" \u2014 {d.query_label}"
    sub = [esc(d.title), f"setting {esc(d.setting)}", f"K = {esc(d.k)}",
           f"{d.n_queries} queries in the study",
           esc(_dt.datetime.now().strftime("%Y-%m-%d %H:%M"))]
    dot = " \u00b7 "
    cls = "dossier collapsed" if d.verdict == "collapsed" else "dossier"
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{esc(DOSSIER_CSP)}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<meta name="generator" content="aria-tda {esc(__version__)}">'
        f"<title>{esc(title)} \u00b7 {TITLE_MARK}</title>"
        f"<style>{_asset('report.css')}{_asset('dossier.css')}</style>"
        f'</head>\n<body class="{cls}" data-query="{esc(d.query)}" data-setting="{esc(d.setting)}" '
        f'data-channel="{esc(d.channel)}">'
        f'<header class="top"><h1>{esc(title)}</h1><p class="sub">{dot.join(sub)}</p>'
        "</header><main>"
        + '<div id="announce" class="sr-only" aria-live="polite" aria-atomic="true"></div>'
        + _verdict(d) + _aspect_section(d) + _query_section(d)
        + items_section(d, _label(d)) + _z_section(d)
        + evidence_section(d, _label(d))
        + (provenance_html(d.provenance, d.verdict) if d.provenance is not None else "")
        + _units_section(d)
        + f"</main><footer>Written by ARIA {esc(__version__)} from {esc(d.results)}. This file is "
        "self-contained: the clips and pictures are embedded; it opens offline and makes no "
        f"network requests.</footer>\n<script>{_asset('dossier.js')}</script></body></html>\n"
    )
