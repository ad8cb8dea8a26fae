r"""The listening room's media: clips, pictures and drawn evidence for a query and its items.

One builder (:func:`build_query_media`) turns a query and its attributed training items into
playable clips (loudness-matched Ogg/Vorbis), pictures (piano rolls of the query beside each
item on the same scales for MIDI; spectrogram, chroma, beats and chords for audio) and, per
channel, the drawn evidence of :mod:`aria_tda.media.aspects`. Two users:

- the dossier (:mod:`aria_tda.media.dossier`) embeds every asset as a ``data:`` URI;
- the report (:func:`write_report_media`) writes a bounded set (by default the top 3 items of
  the first 20 queries, every setting) into the folder ``report_media/`` beside
  ``report.html``, which the page loads lazily with relative URLs.

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

import os
import re
import time
import warnings
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aria_tda._progress import progress as _progress
from aria_tda.errors import AriaWarning, one_line
from aria_tda.media.clip_views import (
    MIMES,
    Asset,
    ClipView,
    NotesOnly,
    encode_views,
    keep_view,
    load_view,
    reuse_view,
    slug,
)

__all__ = [
    "MEDIA_DIR",
    "AspectView",
    "Asset",
    "ClipView",
    "MediaStats",
    "QueryMedia",
    "build_query_media",
    "check_media_folder",
    "media_folder",
    "select_media_items",
    "summary_line",
    "write_report_media",
]

#: The folder of the report's media, beside ``report.html``.
MEDIA_DIR = "report_media"

_MARK = "README.txt"  # what the folder is, for a person who finds it
_MARK_TEXT = ("Clips and pictures of the report beside this folder (written by aria-tda "
              "report); the page loads them from here. Keep or remove them together.\n")


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
    """

    query: ClipView
    items: list[ClipView]
    rolls: dict[str, Asset] = field(default_factory=dict)
    aspects: dict[str, dict[str, AspectView]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def media_folder(page: str | os.PathLike[str]) -> Path:
    """The media folder of a report page: ``<stem>_media`` beside it (``report_media``).

    Parameters
    ----------
    page : path
        The report's HTML file.
    """
    p = Path(page)
    return p.with_name(f"{p.stem}_media")


#: The files of a media folder: clips and pictures of queries (``q/``) and training items
#: (``t/``), piano rolls (``r/``) and drawn evidence (``a/``), named by :func:`slug`.
_ASSET = re.compile(r"[qt]/[^/]+-[0-9a-f]{8}\.(?:ogg|png)|[ra]/[^/]+-[0-9a-f]{8}\.svg")


def _legacy_media(path: Path, files: list[str], others: list[str]) -> frozenset[str] | None:
    """A media folder written before folders carried their manifest: ARIA's README in it.

    Its README and the files named like assets are ARIA's; anything else in it is kept.
    """
    if _MARK not in files:
        return None
    try:
        text = (path / _MARK).read_text(encoding="utf-8")[:400]
    except (OSError, UnicodeDecodeError):
        return None
    if "(written by aria-tda report)" not in text:
        return None
    return frozenset(f for f in files if f == _MARK or _ASSET.fullmatch(f))


def check_media_folder(folder: str | os.PathLike[str], *, keeps: Iterable[Any] = (),
                       others: Iterable[tuple[Path, str]] = ()) -> None:
    """Refuse, before any work, a media folder that :func:`write_report_media` may not write.

    The folder must be new, empty or a report media folder ARIA wrote; only ARIA's earlier
    files in it are replaced (:func:`aria_tda._output_folders.check_folder_output`).

    Parameters
    ----------
    folder : path
        The media folder (:func:`media_folder` of the page).
    keeps : iterable of aria_tda._outputs.Keep
        Paths it must not be, hold or lie inside (the results folder and its files).
    others : iterable of (Path, str)
        The report's other outputs.

    Raises
    ------
    ParameterError
        ``out: 'x_media' holds files ARIA did not write (...); choose another --out (...)``.
    """
    from aria_tda._output_folders import check_folder_output
    from aria_tda._outputs import MEDIA_FOLDER

    check_folder_output("out", folder, MEDIA_FOLDER, flag="--out", keeps=keeps, others=others,
                        legacy=_legacy_media)


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
        key = None if channels else reuse_view(ref, view, opts)
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
    qm.problems = list(dict.fromkeys(problems))  # each once
    return qm


# ------------------------------------------------------------------------------------------
# The report's bounded media folder
# ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MediaStats:
    """What :func:`write_report_media` wrote: files, bytes, queries, clips, seconds."""

    folder: Path | None
    files: int
    bytes: int
    queries: int
    clips: int
    missing: int
    seconds: float


def select_media_items(
    data: Any, query_ids: Sequence[Any], *, top: int,
    first_setting: dict[tuple[str, str], str] | None = None,
    max_items: int | None = None,
    per_query: Collection[str] = (),
) -> dict[str, list[str]]:
    """The training items whose media the report keeps, per query.

    For each query, the union over every setting (original scores, then residual) of its
    ``top`` best-ranked tracks, in the order met.

    Parameters
    ----------
    data : aria_tda.report.load.ResultsData
        The results folder.
    query_ids : sequence
        The queries kept (values of the tables' ``query`` column).
    top : int
        Items per query and setting.
    first_setting : dict, optional
        Filled with (str(query), track id) -> the first setting that lists the track (whose
        best segment the report plays).
    max_items : int, optional
        At most this many training clips in all, taken in the order above across queries
        (the original scores' best ranks of the first settings first); ``None``: no cap. A
        track listed by several queries is one clip, except where the setting that lists it
        first for a query is in ``per_query``: each such (query, track) is a clip of its own.
    per_query : collection of str
        Settings with a segment map: a query plays its own best segment of each listed track
        (:mod:`aria_tda.media.attributed`), so each (query, track) is a clip of its own.

    Returns
    -------
    dict[str, list[str]]
        str(query) -> track ids.
    """
    topk = data.table("topk")
    out: dict[str, list[str]] = {str(q): [] for q in query_ids}
    if topk is None or topk.empty or top <= 0:
        return out
    want = set(query_ids)
    sel = topk[topk["query"].isin(want) & (topk["rank"] < topk["rank"].min() + top)]
    var_order = {v: i for i, v in enumerate(data.variants)}
    set_order = {s: i for i, s in enumerate(data.settings)}
    sel = sel.assign(_v=sel["variant"].map(var_order).fillna(99),
                     _s=sel["setting"].map(set_order).fillna(999))
    sel = sel.sort_values(["_v", "_s", "rank"], kind="stable")
    kept: set[tuple[str, str]] = set()  # the clips: ("", track) or (query, track)
    for q, tid, st in zip(sel["query"], sel["track_id"], sel["setting"], strict=True):
        lst = out[str(q)]
        if str(tid) in lst:
            continue
        clip = (str(q) if str(st) in per_query else "", str(tid))
        if max_items is not None and clip not in kept and len(kept) >= max_items:
            continue
        kept.add(clip)
        if str(tid) not in lst:
            lst.append(str(tid))
            if first_setting is not None:
                first_setting[(str(q), str(tid))] = str(st)
    return out



def _clip_json(v: ClipView, prefix: str) -> dict[str, Any]:
    return {
        "kind": v.kind,
        "source": v.source,
        "missing": v.missing,
        "audio": None if v.audio is None else f"{prefix}/{v.audio.name}",
        "picture": None if v.picture is None else f"{prefix}/{v.picture.name}",
        "duration": round(v.duration, 3),
        "window": [round(v.window[0], 3), round(v.window[1], 3)],
    }


def write_report_media(
    data: Any,
    folder: str | os.PathLike[str],
    *,
    queries: int = 20,
    top: int = 3,
    max_items: int | None = 120,
    context: float = 1.0,
    max_seconds: float = 20.0,
    bitrate_kbps: int = 32,
    soundfont: str | None = None,
    log: Callable[[str], None] | None = None,
    progress: bool | None = False,
) -> tuple[dict[str, Any], MediaStats]:
    """Write the report's bounded set of clips and pictures into ``folder``.

    Parameters
    ----------
    data : aria_tda.report.load.ResultsData
        The results folder.
    folder : path
        The media folder (``report_media`` beside the report): new, empty or ARIA's earlier
        media folder, whose own files are replaced (:func:`check_media_folder`); files ARIA
        did not write there are kept.
    queries : int
        Keep media for the first ``queries`` queries (the order of the per-query view).
    top : int
        ... and their ``top`` best items in every setting.
    max_items : int, optional
        At most this many training clips in all (original scores before residual, settings
        in report order, best ranks first; with a segment map, each query's segment of a
        track is a clip of its own: :func:`select_media_items`); ``None``: no cap.
    context, max_seconds, bitrate_kbps, soundfont
        As for :func:`build_query_media`.
    log : callable, optional
        Receives the progress lines (:func:`media_line`): one when the work starts, one per
        query (``media: query 3/20 (2), 4 clips, 4.1 s``; with more than
        :data:`LINE_EVERY_QUERY` queries at most one every :data:`LINE_SECONDS` seconds, and
        the last), and a closing line with the files, megabytes and seconds.
    progress : bool or None
        Also draw a tqdm bar over the queries (:func:`aria_tda._progress.progress`: ``None``
        follows ``ARIA_PROGRESS`` / ``TQDM_DISABLE`` and whether stderr is a terminal).

    Returns
    -------
    manifest : dict
        What the page's JavaScript reads: per query its clip, its items and their clips and
        piano rolls, as URLs relative to the report.
    stats : MediaStats
    """
    from aria_tda._output_folders import owned_folder, remove_owned_folder
    from aria_tda._outputs import MEDIA_FOLDER
    from aria_tda.media.attributed import segment_pickers, segment_refs
    from aria_tda.media.sources import resolve_media

    t0 = time.perf_counter()
    folder = Path(folder)
    prefix = folder.name
    ids = _query_order(data)[:max(int(queries), 0)]
    first: dict[tuple[str, str], str] = {}
    segmented = {str(r.get("name")) for r in data.meta.get("settings") or []
                 if isinstance(r, Mapping) and r.get("segments")}
    chosen = select_media_items(data, ids, top=top, first_setting=first, max_items=max_items,
                                per_query=segmented)
    manifest: dict[str, Any] = {"folder": prefix, "queries": {}, "tracks": {},
                                "limits": {"queries": int(queries), "top": int(top)}}
    if not ids:
        return manifest, MediaStats(None, 0, 0, 0, 0, 0, time.perf_counter() - t0)
    try:
        index = resolve_media(data.path)
    except Exception as exc:
        warnings.warn(f"report: no media ({one_line(exc)})", AriaWarning, stacklevel=2)
        manifest["error"] = f"media could not be located: {one_line(exc)}"
        return manifest, MediaStats(None, 0, 0, 0, 0, 0, time.perf_counter() - t0)
    cache: dict[str, ClipView] = {}
    assets: dict[str, Asset] = {}
    pickers = segment_pickers(data, ids)  # one pass over each segment-level matrix
    n_missing = 0
    say = _Lines(log, len(ids), _query_names(data, ids))
    say.start(f"media: clips and pictures of {len(ids)} queries (top {int(top)} items of "
              f"each setting) into {folder}")
    with _progress(total=len(ids), desc="media", unit="query", enabled=progress,
                   leave=False) as bar:
        for i, q in enumerate(ids):
            tq = time.perf_counter()
            refs = segment_refs(index, pickers, q, [
                (t, first.get((str(q), t), "")) for t in chosen[str(q)]])
            qm = build_query_media(index, str(q), chosen[str(q)], context=context,
                                   max_seconds=max_seconds, bitrate_kbps=bitrate_kbps,
                                   soundfont=soundfont, cache=cache, refs=refs)
            entry: dict[str, Any] = {"query": _clip_json(qm.query, prefix), "items": chosen[str(q)],
                                     "rolls": {}, "clips": {}, "problems": qm.problems}
            n_missing += qm.query.missing is not None
            found = [qm.query.audio, qm.query.picture]
            for v in qm.items:
                if v.segment is not None:  # this query's best segment of the track
                    entry["clips"][v.item_id] = _clip_json(v, prefix)
                    n_missing += v.missing is not None
                elif v.item_id not in manifest["tracks"]:
                    manifest["tracks"][v.item_id] = _clip_json(v, prefix)
                    n_missing += v.missing is not None
                found += [v.audio, v.picture]
            for tid, roll in qm.rolls.items():
                found.append(roll)
                entry["rolls"][tid] = f"{prefix}/{roll.name}"
            assets.update((x.name, x) for x in found if x is not None)
            manifest["queries"][str(q)] = entry
            n_clips = sum(v.audio is not None for v in (qm.query, *qm.items))
            n_bad = sum(v.missing is not None for v in (qm.query, *qm.items))
            say.query(i, q, n_clips, n_bad, time.perf_counter() - tq)
            bar.update(1)
            qm.query.clip = None  # free the samples; a cached track keeps only its notes
            for v in qm.items:
                if v.clip is not None and not isinstance(v.clip, NotesOnly):
                    v.clip = NotesOnly(getattr(v.clip, "notes", None))
    n_files, n_bytes = len(assets), sum(len(x.data) for x in assets.values())
    if assets:  # only ARIA's earlier media in the folder are replaced (owned_folder)
        with owned_folder(folder, MEDIA_FOLDER, name="out", flag="--out",
                          legacy=_legacy_media) as tmp:
            (tmp / _MARK).write_text(_MARK_TEXT, encoding="utf-8")
            for x in assets.values():
                p = tmp / x.name
                p.parent.mkdir(parents=True, exist_ok=True)
                p.write_bytes(x.data)
    else:  # an earlier report's media, of which nothing is left
        remove_owned_folder(folder, MEDIA_FOLDER, legacy=_legacy_media)
    stats = MediaStats(folder if assets else None, n_files, n_bytes, len(ids),
                       len(ids) + len(cache), n_missing,
                       time.perf_counter() - t0)
    # no build time here: the page embeds the manifest and must not change between builds
    manifest["stats"] = {"files": n_files, "bytes": n_bytes}
    from aria_tda.media.cache import prune

    prune()  # the clips kept for the next build stay within their size
    say.end(summary_line(stats))
    return manifest, stats


#: Up to this many queries, :func:`write_report_media` logs a line for every query ...
LINE_EVERY_QUERY = 100
#: ... beyond, at most one line every this many seconds (and the last query's).
LINE_SECONDS = 5.0


def summary_line(stats: MediaStats) -> str:
    """The closing progress line of :func:`write_report_media`: files, MB and seconds.

    Parameters
    ----------
    stats : MediaStats
        What was written.

    Returns
    -------
    str
        E.g. ``"media: 85 files, 3.2 MB for 20 queries (63 clips, 2 of them not playable) in
        61.3 s -> results/report_media"``.
    """
    bad = f", {stats.missing} of them not playable" if stats.missing else ""
    where = f" -> {stats.folder}" if stats.folder is not None else " (nothing to write)"
    return (f"media: {stats.files} files, {stats.bytes / 1e6:.1f} MB for {stats.queries} "
            f"queries ({stats.clips} clips{bad}) in {stats.seconds:.1f} s{where}")


class _Lines:
    """The progress lines of :func:`write_report_media` (none without a ``log``)."""

    def __init__(self, log: Callable[[str], None] | None, n: int, names: dict[Any, str]):
        self.log, self.n, self.names = log, n, names
        self.last = float("-inf")

    def start(self, msg: str) -> None:
        if self.log is not None:
            self.log(msg)
            self.last = time.perf_counter()

    def query(self, i: int, q: Any, clips: int, bad: int, seconds: float) -> None:
        if self.log is None:
            return
        now = time.perf_counter()
        if self.n > LINE_EVERY_QUERY and i + 1 < self.n and now - self.last < LINE_SECONDS:
            return
        self.last = now
        extra = f", {bad} not playable" if bad else ""
        self.log(f"media: query {i + 1}/{self.n} ({self.names.get(q, q)}), {clips} clips"
                 f"{extra}, {seconds:.1f} s")

    def end(self, msg: str) -> None:
        if self.log is not None:
            self.log(msg)


def _query_names(data: Any, ids: Sequence[Any]) -> dict[Any, str]:
    """query -> how the progress lines name it: ``2`` or ``2 gen02`` (with a ``query_id``)."""
    t = data.table("queries")
    if t is None or "query_id" not in t.columns or "query" not in t.columns:
        return {}
    want = set(ids)
    return {q: f"{q} {qid}" for q, qid in zip(t["query"], t["query_id"], strict=True)
            if q in want and isinstance(qid, str) and qid and qid != str(q)}


def _query_order(data: Any) -> list[Any]:
    """The queries in the per-query view's order (sorted query values of the tables)."""
    import numpy as np

    vals = []
    for name in ("topk", "query_z", "pairs", "queries"):
        t = data.table(name)
        if t is not None and len(t) and "query" in t.columns:
            vals.append(t["query"].to_numpy())
    if not vals:
        return []
    return [int(q) for q in np.unique(np.concatenate(vals)).astype(np.int64)]
