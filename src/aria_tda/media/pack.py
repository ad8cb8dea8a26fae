r"""The listening room's media: clips, pictures and drawn evidence for a query and its items.

One builder (:func:`build_query_media`) turns a query and its attributed training items into
playable clips (loudness-matched Ogg/Vorbis), pictures (piano rolls of the query beside each
item on the same scales for MIDI; spectrogram, chroma, beats and chords for audio) and, per
channel, the drawn evidence of :mod:`aria_tda.media.aspects`. Two users:

- the dossier (:mod:`aria_tda.media.dossier`) embeds every asset as a ``data:`` URI;
- the report (:func:`aria_tda.media.report_media.write_report_media`) writes a bounded set
  into the folder ``report_media/`` beside ``report.html``, which the page loads lazily with
  relative URLs (which queries and items: :mod:`aria_tda.media.selection`).

Conventions
-----------
- Nothing here fails for a missing or unreadable file: the clip is marked ``missing`` with a
  sentence naming what is missing, and the numbers stay on the page.
- Clips: the attributed window plus ``context`` seconds each side, at most ``max_seconds``
  long (:func:`aria_tda.media.load_clip`); loudness-matched to -23 LUFS
  (:func:`aria_tda.media.loudness_match`); encoded as Ogg/Vorbis at about ``bitrate_kbps``.
- Asset names are ASCII: an item id becomes a short slug plus a hash of the id, so two ids
  never share a file and no id can reach outside the folder.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from aria_tda.errors import one_line
from aria_tda.media.clip_views import (
    MIMES,
    Asset,
    ClipView,
    encode_views,
    keep_view,
    load_view,
    reuse_view,
    slug,
)

__all__ = ["AspectView", "Asset", "ClipView", "QueryMedia", "build_query_media"]


@dataclass
class AspectView:
    """The drawn evidence of one channel for the query and one item."""

    channel: str
    similarity: float
    sentence: str
    picture: Asset | None = None
    missing: str | None = None


@dataclass
class QueryMedia:
    """Everything the listening room shows for one query.

    Attributes
    ----------
    query : ClipView
    items : list of ClipView
        The attributed items, in rank order.
    rolls : dict
        item id -> piano roll (SVG) of the query beside that item on the same scales (MIDI).
    aspects : dict
        item id -> channel -> :class:`AspectView`.
    problems : list of str
        Things that could not be drawn or played (each also on the clip or aspect concerned).
    facts : dict
        ``""`` (the query) or item id -> its key, meter, tempo and instruments
        (:mod:`aria_tda.media.reasons`; filled when built with ``reasons=True``).
    shared : dict
        item id -> the material it shares with the query (``SharedMaterial`` list).
    aligned : dict
        item id -> the query above the item on one time axis from the matched position.
    notation : dict
        item id -> ``[(caption, SVG)]`` notation excerpts of the query and the item (MIDI).
    """

    query: ClipView
    items: list[ClipView]
    rolls: dict[str, Asset] = field(default_factory=dict)
    aspects: dict[str, dict[str, AspectView]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    facts: dict[str, Any] = field(default_factory=dict)
    shared: dict[str, list[Any]] = field(default_factory=dict)
    aligned: dict[str, Asset] = field(default_factory=dict)
    notation: dict[str, list[tuple[str, Asset]]] = field(default_factory=dict)


def _roll(query: ClipView, item: ClipView, problems: list[str]) -> Asset | None:
    """Piano roll of the query beside an item, on the same time and pitch scales."""
    qn = getattr(query.clip, "notes", None)
    tn = getattr(item.clip, "notes", None)
    if qn is None or tn is None:
        return None
    try:
        from aria_tda.media.draw import piano_roll_svg

        pitches = [int(p) for n in (qn, tn) if len(n) for p in (n["pitch"].min(), n["pitch"].max())]
        lo, hi = (min(pitches), max(pitches)) if pitches else (48, 84)
        t_end = max(query.duration, item.duration, 1e-3)
        svg = piano_roll_svg([qn, tn], ["query", f"item {item.item_id}"],
                             [query.window, item.window], t_range=(0.0, t_end),
                             pitch_range=(max(lo - 2, 0), min(hi + 2, 127)))
    except Exception as exc:
        problems.append(f"could not draw the piano roll of {item.item_id}: {one_line(exc)}")
        return None
    return Asset(f"r/{slug(query.item_id)}__{slug(item.item_id)}.svg", MIMES["svg"],
                 svg.encode("utf-8"))


def _aspects(query: ClipView, item: ClipView, channels: Iterable[str],
             problems: list[str]) -> dict[str, AspectView]:
    try:
        from aria_tda.media.aspects import aspect_evidence
    except ImportError as exc:  # pragma: no cover - part of the library
        problems.append(f"the drawn evidence is not available: {one_line(exc)}")
        return {}
    out: dict[str, AspectView] = {}
    for ch in channels:
        if query.clip is None or item.clip is None:
            what = query.missing or item.missing or "no clip"
            out[ch] = AspectView(ch, float("nan"), "", None, f"not drawn: {what}")
            continue
        try:
            ev = aspect_evidence(ch, query.clip, item.clip)
        except Exception as exc:
            msg = f"{ch}: could not compute the evidence ({one_line(exc)})"
            problems.append(f"{item.item_id}: {msg}")
            out[ch] = AspectView(ch, float("nan"), "", None, msg)
            continue
        svg = getattr(ev, "svg", None)
        pic = None
        if svg:
            pic = Asset(f"a/{slug(query.item_id)}__{slug(item.item_id)}__{slug(ch)}.svg",
                        MIMES["svg"], svg.encode("utf-8"))
        out[ch] = AspectView(ch, float(ev.similarity), str(ev.sentence), pic)
    return out


def build_query_media(
    index: Any,
    query_id: str,
    item_ids: Sequence[str],
    *,
    channels: Sequence[str] = (),
    context: float = 1.0,
    max_seconds: float = 20.0,
    sr: int = 22050,
    bitrate_kbps: int = 32,
    soundfont: str | None = None,
    pictures: bool = True,
    cache: dict[str, ClipView] | None = None,
    refs: Mapping[str, Any] | None = None,
    reasons: bool = False,
    boundary: float | None = None,
) -> QueryMedia:
    """Clips, pictures and drawn evidence of one query and its attributed items.

    Parameters
    ----------
    index : aria_tda.media.MediaIndex
        Where each id's file is (:func:`aria_tda.media.resolve_media`).
    query_id : str
        The query, as in the results tables.
    item_ids : sequence of str
        Its attributed training items, best first.
    channels : sequence of str
        Channels whose evidence is drawn for every (query, item) pair (none: no evidence).
    context : float
        Seconds of context each side of the attributed window.
    max_seconds : float
        Longest clip.
    sr : int
        Sample rate of the clips (Hz).
    bitrate_kbps : int
        Bit rate of the clips (Ogg/Vorbis, kb/s).
    soundfont : str, optional
        General-MIDI soundfont for MIDI (default: the one the set-up installs).
    pictures : bool
        Draw piano rolls / audio panels.
    cache : dict, optional
        item id (with its window) -> :class:`ClipView` of training items already built (the
        report reuses a track's clip across queries); filled with the new ones.
    refs : mapping, optional
        item id -> :class:`aria_tda.media.MediaRef` to play instead of the item's own entry
        (the segment that scored highest for this query, :mod:`aria_tda.media.attributed`).
    reasons : bool
        Also compute the musical reasons of every pair: facts, shared material, aligned
        views and notation (:func:`aria_tda.media.reasons.add_reasons`; the dossier).
    boundary : float, optional
        Where the query's prompt ends, seconds into its file (marked in the aligned views).

    Returns
    -------
    QueryMedia
    """
    problems: list[str] = []
    # built clips are kept on disk (aria_tda.media.cache) and reused by the next build; the
    # drawn evidence needs the samples themselves, so a build with channels loads every clip
    opts = {"context": context, "max_seconds": max_seconds, "sr": sr, "soundfont": soundfont,
            "bitrate_kbps": bitrate_kbps, "pictures": pictures}
    built: dict[int, str] = {}  # id(view) -> disk cache key of a clip built here

    def load(ref: Any, view: ClipView) -> None:
        key = None if channels or reasons else reuse_view(ref, view, opts)
        if view.audio is None:
            load_view(ref, view, context=context, max_seconds=max_seconds, sr=sr,
                      soundfont=soundfont)
            if key is not None:
                built[id(view)] = key

    qv = ClipView(str(query_id), "query")
    load(index.query(str(query_id)), qv)
    items: list[ClipView] = []
    for tid in item_ids:
        tid = str(tid)
        ref = None if refs is None else refs.get(tid)
        key = tid if ref is None else f"{tid}\x00{ref.start}\x00{ref.end}\x00{ref.unit}"
        if cache is not None and key in cache:
            items.append(cache[key])
            continue
        v = ClipView(tid, "train", segment=None if ref is None else key)
        load(index.train(tid) if ref is None else ref, v)
        items.append(v)
        if cache is not None:
            cache[key] = v
    encode_views([qv, *items], bitrate_kbps=bitrate_kbps, pictures=pictures, problems=problems)
    for v in (qv, *items):
        if id(v) in built:
            keep_view(built[id(v)], v, pictures=pictures)
    qm = QueryMedia(qv, items, problems=problems)
    for v in items:
        if pictures and qv.kind == "midi" and v.kind == "midi":
            roll = _roll(qv, v, problems)
            if roll is not None:
                qm.rolls[v.item_id] = roll
        if channels:
            qm.aspects[v.item_id] = _aspects(qv, v, channels, problems)
    if reasons:
        from aria_tda.media.reasons import add_reasons

        qm.problems = problems
        add_reasons(qm, boundary=boundary)
    qm.problems = list(dict.fromkeys(problems))  # each once
    return qm
