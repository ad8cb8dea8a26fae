"""The dossier's attributed items and per-channel evidence (see :mod:`.dossier_html`).

Each attributed item carries its **musical reasons** before anything else: how like the query
it is on each channel against the pool's tracks (the study's ``item_alignment`` numbers, with
the channels that cannot discriminate said so), the key, meter, tempo and instruments of the
query and of the item, and the material they share with its position in both pieces
(:mod:`aria_tda.media.reasons`); material that cannot discriminate is listed apart with why.
Then its player, the aligned view (query above, item below, one time axis from the matched
position, bars and beats, the prompt boundary) and notation excerpts; every picture opens full
size.
"""

from __future__ import annotations

import math
from typing import Any

from aria_tda.report import words
from aria_tda.report.html.cells import esc

__all__ = ["audio_html", "evidence_section", "figure_html", "items_section"]


def audio_html(v: Any, aid: str, label: str) -> str:
    """A clip's player and the file and time range it plays (or why it cannot play).

    Parameters
    ----------
    v : ClipView or None
        The clip.
    aid : str
        The player's element id.
    label : str
        Its accessible name.
    """
    if v is None:
        return ""
    if v.audio is None:
        why = v.missing or "no clip"
        return f'<p class="missing-media" data-missing="{esc(aid)}">Not playable: {esc(why)}</p>'
    w0, w1 = v.window
    return (
        f'<audio id="{esc(aid)}" controls preload="metadata" aria-label="{esc(label)}" '
        f'data-window="{w0:.3f},{w1:.3f}" src="{v.audio.data_uri()}"></audio>'
        f'<p class="note clip-source">'
        f"{esc(words.describe_clip_range(v.source, v.window, v.duration))}.</p>"
    )


def figure_html(asset: Any, alt: str, cls: str = "pic") -> str:
    """A picture that opens full size (a button around it; Escape closes).

    Parameters
    ----------
    asset : Asset or None
        The picture (nothing when ``None``).
    alt : str
        Its text alternative.
    cls : str
        The ``<img>`` class.
    """
    if asset is None:
        return ""
    return (f'<button type="button" class="zoom" aria-expanded="false" title="open full size">'
            f'<img class="{cls}" alt="{esc(alt)}" src="{asset.data_uri()}"></button>')


def _likeness(d: Any, it: dict[str, Any]) -> str:
    like = it.get("likeness") or {}
    if not like:
        return ('<p class="note">How like the query this item is on each channel against the '
                "pool is not in these results: the study names no query features "
                "(<code>query_features</code>), so there is nothing to compare the item with."
                "</p>")
    rows = []
    for c in d.channels:
        x = like.get(c)
        if x is None:
            continue
        cls = "" if x["informative"] else ' class="weak"'
        rows.append(f'<li data-channel="{esc(c)}"{cls}>'
                    f"{esc(words.describe_likeness(c, **x))}</li>")
    return ('<ul class="likeness">' + "".join(rows) + "</ul>"
            '<p class="note">The study\'s numbers: each channel\'s similarity to the query, '
            "standardised over the pool and ranked among the pool's tracks.</p>")


def _facts(m: Any, tid: str) -> str:
    facts = getattr(m, "facts", {}) or {}
    q, t = facts.get(""), facts.get(tid)
    if q is None and t is None:
        return ""
    rows = []
    for who, f in (("Query", q), ("Item", t)):
        rows.append(f"<dt>{who}</dt><dd>{esc(f.describe()) if f is not None else 'unknown'}</dd>")
    return f'<dl class="facts kv">{"".join(rows)}</dl>'


def _shared(m: Any, tid: str, v: Any) -> str:
    shared = (getattr(m, "shared", {}) or {}).get(tid)
    if shared is None:
        return ""
    qk, ik = getattr(m.query, "kind", None), getattr(v, "kind", None)
    if not shared and qk and ik and qk != ik:
        return (f'<p class="note">The query is {esc(qk)} and this item {esc(ik)}: their material '
                "is not compared note for note here (the facts above are comparable).</p>")
    good = [x for x in shared if x.informative]
    weak = [x for x in shared if not x.informative]
    out = []
    if good:
        out.append('<ul class="shared">' + "".join(
            f'<li data-kind="{esc(x.kind)}">{esc(x.sentence)}</li>' for x in good) + "</ul>")
    else:
        out.append('<p class="note">No shared melodic, rhythmic or harmonic material that '
                   "could tell this item apart from others was found in the two excerpts.</p>")
    if weak:
        out.append(f"<details><summary>Shared material that cannot discriminate ({len(weak)})"
                   "</summary><ul>" + "".join(
                       f'<li class="weak">{esc(x.sentence)}{_caveat(x)}</li>' for x in weak)
                   + "</ul></details>")
    return "".join(out)


def _caveat(x: Any) -> str:
    """Why shared material cannot discriminate, unless its sentence says so already."""
    c = str(getattr(x, "caveat", "") or "").strip()
    if not c or c.lower().rstrip(".") in str(x.sentence).lower():
        return ""
    return f' <span class="caveat">({esc(c)})</span>'


def _pictures(m: Any, v: Any, tid: str) -> str:
    if m is None:
        return ""
    aligned = (getattr(m, "aligned", {}) or {}).get(tid)
    out = []
    if aligned is not None:
        out.append(figure_html(aligned, f"the query above item {tid} on one time axis from "
                                        "the matched position, with bars, beats and the "
                                        "shared material marked", "pic aligned"))
    else:
        out.append(figure_html(m.rolls.get(tid), f"piano roll of the query beside item {tid}",
                               "pic roll"))
        out.append(figure_html(v.picture if v is not None else None,
                               f"spectrogram, chroma, beats and chords of item {tid}"))
    for caption, asset in (getattr(m, "notation", {}) or {}).get(tid, []):
        out.append(f'<figure class="notation">{figure_html(asset, caption, "pic score")}'
                   f"<figcaption>{esc(caption)}</figcaption></figure>")
    return "".join(out)


def items_section(d: Any, label: str) -> str:
    """The attributed items, each with its musical reasons, player and pictures.

    Parameters
    ----------
    d : DossierData
        The dossier.
    label : str
        The collapsed-setting label (HTML; empty unless collapsed).
    """
    m = d.media
    lis = []
    for i, it in enumerate(d.items):
        tid = it["track_id"]
        v = None if m is None else m.items[i]
        head = (f'<span class="rank">#{it["rank"]}</span> <span class="tid">{esc(tid)}</span>'
                + (f' <span class="sub">{esc(it["label"])}</span>' if it["label"] else ""))
        player = audio_html(v, f"player-{i}", f"item {tid}") if m is not None else ""
        buttons = ""
        if v is not None and v.audio is not None:
            buttons = (
                f'<button type="button" class="ab" data-index="{i}" title="play the query, '
                'then this item (key a)">A/B: query \u2192 item</button>'
                f'<button type="button" class="toggle" data-index="{i}" title="switch between '
                'the query and this item at the same point (key t)">\u21c4 toggle</button>'
            )
        reasons = (f'<div class="reasons"><h3>Musical reasons</h3>{_likeness(d, it)}'
                   f"{_facts(m, tid)}{_shared(m, tid, v)}</div>")
        lis.append(
            f'<li class="item" data-index="{i}" data-item="{esc(tid)}" tabindex="0" '
            f'aria-label="item {i + 1}: {esc(tid)}">'
            f'<div class="item-head">{head}</div>'
            f'<p class="score">{esc(words.describe_score(it["score"], it["rank"]))}</p>'
            f"{reasons}{player}<div class=\"buttons\">{buttons}</div>"
            f"{_pictures(m, v, tid)}</li>"
        )
    if not lis:
        lis.append('<li class="note">No attributed items for this query in these results.</li>')
    return (
        f'<section id="items"><h2>Top {len(d.items)} attributed training items</h2>' + label
        + '<p class="note keys">Keys: <kbd>j</kbd>/<kbd>k</kbd> next/previous item, '
        "<kbd>a</kbd> A/B (query, then item), <kbd>t</kbd> toggle query \u21c4 item, "
        "<kbd>space</kbd> play/pause, <kbd>1</kbd>\u2013<kbd>9</kbd> channel; Tab reaches "
        "every item, Enter selects it.</p>"
        '<p class="shortcuts"><label><input type="checkbox" id="shortcuts" checked> '
        "single-key shortcuts (turn off if they get in the way of a screen reader)</label></p>"
        f'<ol id="item-list">{"".join(lis)}</ol></section>'
    )


def evidence_section(d: Any, label: str) -> str:
    """The drawn evidence of each channel for the selected item, and the contributing pairs.

    Parameters
    ----------
    d : DossierData
        The dossier.
    label : str
        The collapsed-setting label (HTML; empty unless collapsed).
    """
    opts = "".join(
        f'<option value="{esc(c)}"{" selected" if c == d.channel else ""}>{esc(c)} (z = '
        f"{esc(words.format_signed(d.z.get(c, math.nan)))})</option>"
        for c in d.channels
    )
    blocks = []
    m = d.media
    for i, it in enumerate(d.items):
        tid = it["track_id"]
        per = {} if m is None else m.aspects.get(tid, {})
        for c in d.channels:
            a = per.get(c)
            if a is None:
                why = d.media_note or ("; ".join(m.problems) if m is not None and m.problems
                                       else "not computed")
                inner = f'<p class="missing-media">No drawn evidence: {esc(why)}</p>'
            elif a.missing:
                inner = f'<p class="missing-media">{esc(a.missing)}</p>'
            else:
                like = (it.get("likeness") or {}).get(c)
                flag = ("" if like is None or like["informative"] else
                        f'<p class="missing-media">This channel cannot tell tracks apart for '
                        f"this query ({esc(words.describe_likeness(c, **like))}): the "
                        "similarity below says nothing about this item.</p>")
                inner = flag + (figure_html(a.picture, f"{c} evidence: query against item {tid}",
                                            "pic aspect")
                         + f'<p class="sentence">{esc(a.sentence)}</p>'
                         + f'<p class="note">{esc(words.describe_similarity(c, a.similarity))}'
                         "</p>")
            blocks.append(f'<div class="aspect" data-index="{i}" data-channel="{esc(c)}" hidden>'
                          f'<h3>{esc(c)}: the query against item #{it["rank"]} '
                          f"{esc(tid)}</h3>{inner}</div>")
    pairs = []
    for c in d.channels:
        rows = []
        for p in d.pairs.get(c, []):
            sentence = words.describe_pair(c, p["similarity"], p["contribution"], k=d.pairs_k,
                                           random_mean=d.random_mean.get(c))
            rows.append(f'<tr><td class="txt">{esc(p["track_a"])}</td>'
                        f'<td class="txt">{esc(p["track_b"])}</td>'
                        f'<td class="txt">{esc(sentence)}</td></tr>')
        body = ("<table class=\"data compact\"><thead><tr><th>Track A</th><th>Track B</th>"
                f"<th>In words</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
                if rows else '<p class="note">No contributing pairs recorded for this channel.</p>')
        pairs.append(f'<div class="pairs" data-channel="{esc(c)}" hidden><h3>Pairs of the '
                     f"top-{esc(d.pairs_k)} group contributing most to {esc(c)}</h3>{body}</div>")
    return (
        '<section id="evidence"><h2>Evidence by channel (the excerpts\' own statistics)</h2>'
        + label
        + f'<p><label for="channel">Channel</label> <select id="channel">{opts}</select> '
        '<span class="note">for the item selected above</span></p>'
        + '<p class="note">These drawings compare the two excerpts directly (histograms, '
        "profiles, curves); the study's numbers are the musical reasons above.</p>"
        + "".join(blocks) + "".join(pairs) + "</section>"
    )
