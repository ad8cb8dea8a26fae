r"""The evidence dossier: one self-contained HTML file for one query, to hear and to see.

``write_dossier(results_dir, query, setting=..., top=5, out=...)`` (``aria-tda evidence``)
writes a page that can be attached to an expert report:

1. the setting's **verdict first** (``reliability.csv``); a collapsed setting's evidence is
   labelled as such on every section;
2. the query and its top-N attributed training items, each with its own player
   (``<audio controls preload="metadata">``, loudness-matched Ogg/Vorbis), A/B in one click (the
   query, then the item), keyboard navigation (``j``/``k`` move between items, ``a`` plays
   A/B, ``space`` plays or pauses, ``1``-``9`` pick a channel);
3. pictures: piano rolls of the query beside each item on the same scales (MIDI), or the
   spectrogram, chroma, beats and chords of each clip (audio);
4. per channel (a selector), the evidence drawn from the two clips
   (:mod:`aria_tda.media.aspects`), the query's :math:`z_c(q)` and the attributed pairs that
   contribute most, each number with its sentence (:mod:`aria_tda.report.words`).

Media are embedded as ``data:`` URIs, so the file opens offline anywhere; its
Content-Security-Policy allows nothing but the page's own inline style, script and ``data:``
media. A missing file is named on the page and the numbers are kept.

The page itself is written by :mod:`aria_tda.media.dossier_html`.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from aria_tda._checks import check_float, check_int
from aria_tda.errors import ParameterError, expected, one_line
from aria_tda.media.selection import query_order, resolve_query
from aria_tda.report.load import ResultsData, choose_k, load_results

__all__ = ["DossierData", "gather_dossier", "query_aspect", "write_dossier"]


@dataclass
class DossierData:
    r"""What the dossier shows (numbers and media), gathered from a results folder.

    Attributes
    ----------
    title : str
        The study's title.
    results : str
        The results folder.
    query : int
        The query (value of the tables' ``query`` column).
    query_label : str
        Its label (``query_id`` / ``label`` of the queries table, when present).
    query_meta : dict
        Its row of the queries table.
    setting : str
    verdict, reason : str or None
        The setting's collapse verdict and why.
    reliability : dict
        The setting's diagnostics (kappa, r1, r2_5, p) when known.
    k, pairs_k : int or None
        Group size of the z-scores, of the pairs.
    channels : list of str
    z : dict
        channel -> :math:`z_c(q)` (NaN where absent).
    items : list of dict
        ``rank``, ``track_id``, ``score``, ``label`` of the top-N items, and ``likeness``:
        channel -> ``alignment``, ``percentile``, ``tied``, ``informative`` (the study's
        ``item_alignment`` table: how like the query the item is, against the pool).
    pairs : dict
        channel -> list of ``track_a``, ``track_b``, ``similarity``, ``contribution``.
    random_mean : dict
        channel -> a random pair's mean similarity (the null's per-feature :math:`\mu`).
    channel : str
        The channel shown first: the query's distinctive aspect when it has one, else its
        highest z.
    aspect : dict or None
        The distinctive reading of the query (:func:`query_aspect`), ``None`` when the
        results hold none.
    media : aria_tda.media.pack.QueryMedia or None
    media_note : str or None
        Why there are no media, when there are none.
    provenance : dict or None
        What produced the setting's scores and how its method was validated
        (:func:`aria_tda.media.provenance.gather_provenance`).
    prompt_seconds : float or None
        Where the query's prompt ends and its generated part begins, seconds into its media
        file (the queries table's ``prompt_seconds``), when known.
    rendering : str or None
        How the query's audio was made when it is not the model's own output (the queries
        table's ``rendering``, e.g. an inversion without a codec), said beside its player.
    timings : dict
        Seconds per step.
    """

    title: str
    results: str
    query: int
    query_label: str
    query_meta: dict[str, str]
    setting: str
    verdict: str | None
    reason: str | None
    reliability: dict[str, float]
    k: int | None
    pairs_k: int | None
    channels: list[str]
    z: dict[str, float]
    items: list[dict[str, Any]]
    pairs: dict[str, list[dict[str, Any]]]
    random_mean: dict[str, float]
    channel: str
    n_queries: int
    aspect: dict[str, Any] | None = None
    media: Any = None
    media_note: str | None = None
    timings: dict[str, float] = field(default_factory=dict)
    findings: tuple[str, ...] = ()
    provenance: dict[str, Any] | None = None
    prompt_seconds: float | None = None
    rendering: str | None = None


def _setting(data: ResultsData, setting: str | None) -> str:
    if not data.settings:
        raise ParameterError(expected("setting", "a setting of the results", "a folder with none"))
    if setting is None:
        return data.settings[0]
    if setting not in data.settings:
        raise ParameterError(expected("setting", "one of " + ", ".join(map(repr, data.settings)),
                                      setting))
    return setting


def _at_k(df: Any, k: int | None) -> tuple[Any, int | None]:
    if df is None or df.empty:
        return df, None
    kk = k if k in set(df["K"]) else int(df["K"].max())
    return df[df["K"].to_numpy() == kk], kk


def _random_mean(data: ResultsData, setting: str, variant: str, k: int | None) -> dict[str, float]:
    from aria_tda.media.query_evidence import random_pair_means

    return random_pair_means(data, k).get((setting, variant), {})


def query_aspect(data: ResultsData, setting: str, variant: str,
                 query: int) -> dict[str, Any] | None:
    """The distinctive reading of one query (``query_aspects`` and ``aspects`` tables).

    Parameters
    ----------
    data : ResultsData
        The results folder.
    setting, variant : str
        The block.
    query : int
        The query.

    Returns
    -------
    dict or None
        ``named`` (a channel or ``"none"``), ``delta`` and ``z`` (channel -> value),
        ``anchor``, ``K``, ``alpha``, ``threshold``, ``method_aspect`` and ``baseline``
        (channel -> median z); ``None`` when the folder holds no reading of the query.
    """
    qa, asp = data.table("query_aspects"), data.table("aspects")
    if qa is None or asp is None or qa.empty or asp.empty:
        return None
    rows = qa[(qa["setting"] == setting) & (qa["variant"] == variant) & (qa["query"] == query)]
    block = asp[(asp["setting"] == setting) & (asp["variant"] == variant)]
    if rows.empty or block.empty:
        return None
    first = block.iloc[0]
    return {
        "named": str(rows["named"].iloc[0]),
        "delta": {str(c): float(v) for c, v in zip(rows["channel"], rows["delta"], strict=True)},
        "z": {str(c): float(v) for c, v in zip(rows["channel"], rows["z"], strict=True)},
        "anchor": str(first["anchor"]), "K": int(first["K"]),
        "alpha": float(first.get("alpha", np.nan)),
        "threshold": float(first.get("threshold", np.nan)),
        "method_aspect": str(first["method_aspect"]),
        "baseline": {str(c): float(v) for c, v in zip(block["channel"], block["baseline"],
                                                       strict=True)},
    }


def gather_dossier(
    data: ResultsData,
    query: Any,
    *,
    setting: str | None = None,
    top: int = 5,
    channel: str | None = None,
    k: int | None = None,
    pairs: int = 5,
) -> DossierData:
    """The numbers of one query's dossier (no media yet).

    Parameters
    ----------
    data : ResultsData
        The results folder (:func:`aria_tda.report.load.load_results`).
    query : int or str
        The query (see :func:`resolve_query`).
    setting : str, optional
        Default: the first setting.
    top : int
        Attributed items shown (>= 1).
    channel : str, optional
        The channel shown first (default: the query's highest z).
    k : int, optional
        Group size of the z-scores and pairs (default: as the report, :func:`choose_k`).
    pairs : int
        Contributing pairs shown per channel.

    Returns
    -------
    DossierData
    """
    top = check_int("top", top, min_value=1)
    pairs = check_int("pairs", pairs, min_value=0)
    q = resolve_query(data, query)
    s = _setting(data, setting)
    kk = choose_k(data, k)
    info = data.setting_info(s)
    variant = "original"
    channels = list(data.channels)
    if channel is not None and channel not in channels:
        raise ParameterError(expected("channel", "one of " + ", ".join(channels), channel))

    qz, zk = _at_k(data.table("query_z"), kk)
    z = {c: math.nan for c in channels}
    if qz is not None and not qz.empty:
        rows = qz[(qz["setting"] == s) & (qz["variant"] == variant) & (qz["query"] == q)]
        for c, v in zip(rows["channel"], rows["z"], strict=True):
            z[str(c)] = float(v)

    topk = data.table("topk")
    tracks = data.table("tracks")
    labels: dict[str, str] = {}
    if tracks is not None and "label" in tracks.columns:
        labels = dict(zip(tracks["track_id"].astype(str), tracks["label"].astype(str),
                          strict=True))
    items: list[dict[str, Any]] = []
    if topk is not None and not topk.empty:
        rows = topk[(topk["setting"] == s) & (topk["variant"] == variant) & (topk["query"] == q)]
        best = rows.sort_values("rank")[["rank", "track_id", "score"]].head(top)
        for r, tid, sc in best.itertuples(index=False):
            items.append({"rank": int(r), "track_id": str(tid), "score": float(sc),
                          "label": labels.get(str(tid), "")})

    _likeness(data, s, variant, q, items)
    pr, pk = _at_k(data.table("pairs"), kk)
    pair_rows: dict[str, list[dict[str, Any]]] = {c: [] for c in channels}
    if pr is not None and not pr.empty and pairs:
        rows = pr[(pr["setting"] == s) & (pr["variant"] == variant) & (pr["query"] == q)]
        rows = rows.sort_values("contribution", ascending=False, kind="stable")
        for c, g in rows.groupby("channel", sort=False):
            pair_rows.setdefault(str(c), [])
            for a, b, sim, con in g[["track_a", "track_b", "similarity", "contribution"]].head(
                pairs
            ).itertuples(index=False):
                pair_rows[str(c)].append({"track_a": str(a), "track_b": str(b),
                                          "similarity": float(sim), "contribution": float(con)})

    qt = data.table("queries")
    meta: dict[str, str] = {}
    if qt is not None and len(qt):
        hit = qt[qt["query"] == q]
        if len(hit):
            meta = {str(c): "" if v is None or (isinstance(v, float) and math.isnan(v)) else str(v)
                    for c, v in hit.iloc[0].items() if c != "query"}
    label = meta.get("label") or meta.get("query_id") or ""
    aspect = query_aspect(data, s, variant, q)
    if channel is None and aspect is not None and aspect["named"] in channels:
        channel = aspect["named"]
    if channel is None:
        finite = [(v, c) for c, v in z.items() if math.isfinite(v)]
        channel = max(finite)[1] if finite else (channels[0] if channels else "")
    rel = {}
    rt = data.table("reliability")
    if rt is not None and len(rt):
        hit = rt[rt["setting"] == s]
        if len(hit):
            rel = {c: float(hit.iloc[0][c]) for c in ("kappa", "r1", "r2_5", "p")
                   if c in hit.columns and np.isfinite(hit.iloc[0][c])}
    from aria_tda.media.provenance import gather_provenance

    return DossierData(
        title=data.title, results=str(data.path), query=q, query_label=label, query_meta=meta,
        setting=s, verdict=info.get("verdict"), reason=info.get("reason"), reliability=rel,
        k=zk if zk is not None else kk, pairs_k=pk, channels=channels, z=z, items=items,
        pairs=pair_rows, random_mean=_random_mean(data, s, variant, pk), channel=channel,
        n_queries=len(query_order(data)), aspect=aspect,
        findings=tuple(info.get("findings") or ()),
        provenance=gather_provenance(data, s), prompt_seconds=_number(meta.get("prompt_seconds")),
        rendering=meta.get("rendering") or None,
    )


def _number(text: Any) -> float | None:
    try:
        v = float(text)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) and v >= 0 else None


def _likeness(data: ResultsData, setting: str, variant: str, query: int,
              items: list[dict[str, Any]]) -> None:
    """Fill each item's ``likeness`` from the ``item_alignment`` table (empty without it)."""
    for it in items:
        it["likeness"] = {}
    ia = data.table("item_alignment")
    if ia is None or ia.empty:
        return
    rows = ia[(ia["setting"] == setting) & (ia["variant"] == variant) & (ia["query"] == query)]
    by = {item["track_id"]: item for item in items}
    for tid, ch, a, pct, tied, inf in rows[["track_id", "channel", "alignment", "percentile",
                                             "tied", "informative"]].itertuples(index=False):
        hit = by.get(str(tid))
        if hit is not None:
            hit["likeness"][str(ch)] = {"alignment": float(a), "percentile": float(pct),
                                       "tied": float(tied), "informative": bool(inf)}


def write_dossier(
    results_dir: str | os.PathLike[str],
    query: Any,
    *,
    out: str | os.PathLike[str],
    setting: str | None = None,
    top: int = 5,
    channel: str | None = None,
    k: int | None = None,
    context: float = 1.0,
    max_seconds: float = 20.0,
    bitrate_kbps: int = 32,
    soundfont: str | None = None,
    media: bool = True,
    log: Callable[[str], None] | None = None,
) -> Path:
    """Write the evidence dossier of one query: one self-contained HTML file.

    Parameters
    ----------
    results_dir : path
        A results folder (``aria-tda run`` / ``aria-tda demo``).
    query : int or str
        The query: its id (``query`` value or ``query_id``) or its 0-based index.
    out : path
        The HTML file to write: a new path, or an earlier dossier of ARIA (replaced
        atomically). Any other file, a folder, a link, the results folder's own files (its
        ``results.json``, tables, ``report.html``) and anything inside its ``.cache`` are
        refused before any work.
    setting : str, optional
        The setting whose attribution is shown (default: the first).
    top : int
        Attributed training items shown (>= 1).
    channel : str, optional
        The channel shown first (default: the query's highest z).
    k : int, optional
        Group size of the z-scores and pairs (default: as the report).
    context : float
        Seconds of context played each side of an attributed window (>= 0).
    max_seconds : float
        Longest clip in seconds (> 0).
    bitrate_kbps : int
        Bit rate of the embedded clips (Ogg/Vorbis, kb/s).
    soundfont : str, optional
        General-MIDI soundfont for MIDI (default: the one the set-up installs).
    media : bool
        Embed clips and pictures (``False``: numbers and words only).
    log : callable, optional
        Receives one line per step, with its time (the CLI prints them on stderr).

    Returns
    -------
    pathlib.Path
        ``out``.

    Raises
    ------
    FileFormatError
        ``results_dir`` is not a results folder.
    ParameterError
        An unknown query, setting or channel (the message lists valid ones), a bad number, or
        an ``out`` that ARIA may not write (one line naming it and ``--out``).
    """
    from aria_tda._outputs import DOSSIER_PAGE, check_page_output, results_keeps, write_page
    from aria_tda.media.dossier_html import render_dossier

    context = check_float("context", context, min_value=0.0)
    max_seconds = check_float("max_seconds", max_seconds, min_value=0.0, min_inclusive=False)
    bitrate_kbps = check_int("bitrate_kbps", bitrate_kbps, min_value=6, max_value=510)
    say = log or (lambda _m: None)
    t0 = time.perf_counter()
    data = load_results(results_dir)
    # before any work: a new path or an earlier dossier of ARIA, never the results folder's
    # own files, its cache or the study's inputs (aria_tda._outputs)
    out_path = check_page_output("out", out, DOSSIER_PAGE, flag="--out",
                                 keeps=results_keeps(data.path, data.meta))
    d = gather_dossier(data, query, setting=setting, top=top, channel=channel, k=k)
    d.timings["read results"] = time.perf_counter() - t0
    say(f"query {d.query}{' (' + d.query_label + ')' if d.query_label else ''}, setting "
        f"{d.setting} ({d.verdict or 'no verdict'}), {len(d.items)} items "
        f"[{d.timings['read results']:.1f} s]")
    if media:
        t1 = time.perf_counter()
        d.media, d.media_note = _media(data, d, context=context, max_seconds=max_seconds,
                                       bitrate_kbps=bitrate_kbps, soundfont=soundfont)
        d.timings["clips, pictures and evidence"] = time.perf_counter() - t1
        n_ok = 0 if d.media is None else sum(
            v.audio is not None for v in [d.media.query, *d.media.items])
        say(f"media: {n_ok} of {1 + len(d.items)} clips playable "
            f"[{d.timings['clips, pictures and evidence']:.1f} s]")
    else:
        d.media_note = "Media were left out of this dossier (media=False / --no-media)."
    t2 = time.perf_counter()
    page = render_dossier(d)
    write_page(out_path, page, DOSSIER_PAGE)
    d.timings["page"] = time.perf_counter() - t2
    say(f"wrote {out_path} ({len(page.encode('utf-8')) / 1e6:.2f} MB) "
        f"[{time.perf_counter() - t0:.1f} s in all]")
    return out_path


def _media(data: ResultsData, d: DossierData, *, context: float, max_seconds: float,
           bitrate_kbps: int, soundfont: str | None) -> tuple[Any, str | None]:
    """The query's media (clips, pictures, evidence), or ``None`` and why not."""
    from aria_tda.media.pack import build_query_media

    try:
        from aria_tda.media.sources import resolve_media

        index = resolve_media(data, setting=d.setting)
    except ImportError as exc:  # pragma: no cover - the media package is part of the library
        return None, f"media support is not available: {one_line(exc)}"
    except Exception as exc:
        return None, f"media could not be located: {one_line(exc)}"
    from aria_tda.media.attributed import segment_pickers, segment_refs

    ids: Sequence[str] = [it["track_id"] for it in d.items]
    # a segment-level setting: play each track's segment that scored highest for this query
    pickers = segment_pickers(data, [d.query], settings=[d.setting])
    refs = segment_refs(index, pickers, d.query, [(t, d.setting) for t in ids])
    qm = build_query_media(index, str(d.query), ids, channels=d.channels, context=context,
                           max_seconds=max_seconds, bitrate_kbps=bitrate_kbps,
                           soundfont=soundfont, refs=refs, reasons=True,
                           boundary=d.prompt_seconds)
    for p in pickers.values():
        if p.problem:
            qm.problems.append(p.problem)
    return qm, None
