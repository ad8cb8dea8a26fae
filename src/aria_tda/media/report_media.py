"""The report's bounded media folder: clips and pictures beside ``report.html``.

:func:`write_report_media` writes, for the queries and items :mod:`aria_tda.media.selection`
chooses, the clips, pictures and piano rolls of :func:`aria_tda.media.pack.build_query_media`
into ``report_media/`` (:func:`media_folder`), and returns the manifest the page reads. For a
setting with a segment map each query plays the segment *that setting* attributed (the same
as the query's dossier for that setting), and every clip records its file and time range.
"""

from __future__ import annotations

import os
import re
import time
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aria_tda._progress import progress as _progress
from aria_tda.errors import AriaWarning, one_line
from aria_tda.media.clip_views import Asset, ClipView, NotesOnly
from aria_tda.media.pack import build_query_media

__all__ = [
    "MEDIA_DIR",
    "MediaStats",
    "check_media_folder",
    "media_folder",
    "summary_line",
    "write_report_media",
]

#: The folder of the report's media, beside ``report.html``.
MEDIA_DIR = "report_media"

_MARK = "README.txt"  # what the folder is, for a person who finds it
_MARK_TEXT = ("Clips and pictures of the report beside this folder (written by aria-tda "
              "report); the page loads them from here. Keep or remove them together.\n")


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


def _listed(data: Any, ids: Sequence[Any], chosen: Mapping[str, list[str]],
            top: int) -> dict[str, dict[str, list[str]]]:
    """str(query) -> setting -> its kept tracks, in rank order (either variant)."""
    out: dict[str, dict[str, list[str]]] = {str(q): {} for q in ids}
    topk = data.table("topk")
    if topk is None or topk.empty or top <= 0:
        return out
    sel = topk[topk["query"].isin(set(ids)) & (topk["rank"] < topk["rank"].min() + top)]
    sel = sel.sort_values(["rank"], kind="stable")
    for q, tid, st in zip(sel["query"], sel["track_id"], sel["setting"], strict=True):
        per = out[str(q)].setdefault(str(st), [])
        if str(tid) in chosen.get(str(q), ()) and str(tid) not in per:
            per.append(str(tid))
    return out


def write_report_media(
    data: Any,
    folder: str | os.PathLike[str],
    *,
    queries: int = 20,
    pick: str | Sequence[Any] = "reading",
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
        Keep media for this many queries ...
    pick : {"reading", "first"} or sequence of query ids
        ... chosen by this rule (:func:`aria_tda.media.selection.pick_media_queries`: by
        default the strongest and the weakest by the distinctive reading) ...
    top : int
        ... and their ``top`` best items in every setting. For a setting with a segment map
        each query plays the segment that setting attributed (what its dossier plays).
    max_items : int, optional
        At most this many training clips in all (original scores before residual, settings
        in report order, best ranks first; :func:`~aria_tda.media.selection.select_media_items`);
        ``None``: no cap.
    context, max_seconds, bitrate_kbps, soundfont
        As for :func:`~aria_tda.media.pack.build_query_media`.
    log : callable, optional
        Receives the progress lines: one when the work starts, one per query (``media: query
        3/20 (2), 4 clips, 4.1 s``; with more than :data:`LINE_EVERY_QUERY` queries at most
        one every :data:`LINE_SECONDS` seconds, and the last), and a closing line with the
        files, megabytes and seconds.
    progress : bool or None
        Also draw a tqdm bar over the queries (:func:`aria_tda._progress.progress`: ``None``
        follows ``ARIA_PROGRESS`` / ``TQDM_DISABLE`` and whether stderr is a terminal).

    Returns
    -------
    manifest : dict
        What the page's JavaScript reads: per query its clip, its items, and per setting
        (``""``: the settings without a segment map) their clips and piano rolls, as URLs
        relative to the report; ``pick``: the rule and why each query was kept.
    stats : MediaStats
    """
    from aria_tda._output_folders import owned_folder, remove_owned_folder
    from aria_tda._outputs import MEDIA_FOLDER
    from aria_tda.media.attributed import segment_pickers, segment_refs
    from aria_tda.media.selection import pick_media_queries, select_media_items
    from aria_tda.media.sources import resolve_media

    t0 = time.perf_counter()
    folder = Path(folder)
    prefix = folder.name
    ids, why = pick_media_queries(data, queries, pick)
    segmented = {str(r.get("name")) for r in data.meta.get("settings") or []
                 if isinstance(r, Mapping) and r.get("segments")}
    chosen = select_media_items(data, ids, top=top, max_items=max_items, per_query=segmented)
    listed = _listed(data, ids, chosen, top)
    manifest: dict[str, Any] = {"folder": prefix, "queries": {}, "tracks": {},
                                "limits": {"queries": int(queries), "top": int(top)},
                                "pick": why}
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
    opts: dict[str, Any] = {"context": context, "max_seconds": max_seconds,
                            "bitrate_kbps": bitrate_kbps, "soundfont": soundfont, "cache": cache}
    say = _Lines(log, len(ids), _query_names(data, ids))
    say.start(f"media: clips and pictures of {len(ids)} queries ({why['_rule']}; top "
              f"{int(top)} items of each setting) into {folder}")
    with _progress(total=len(ids), desc="media", unit="query", enabled=progress,
                   leave=False) as bar:
        for i, q in enumerate(ids):
            tq = time.perf_counter()
            per = listed[str(q)]
            # the settings without a segment map play each track's own window (one clip per
            # track, shared by every query); each setting with one plays its own segment
            plain = [t for t in chosen[str(q)]
                     if any(t in ts for st, ts in per.items() if st not in segmented)]
            groups: list[tuple[str, list[str], Any]] = [("", plain, None)]
            for st in data.settings:
                if str(st) in segmented and per.get(str(st)):
                    ts = per[str(st)]
                    groups.append((str(st), ts, segment_refs(index, pickers, q,
                                                             [(t, str(st)) for t in ts])))
            entry: dict[str, Any] = {"items": chosen[str(q)], "clips": {}, "rolls": {},
                                     "problems": [], "why": why.get(str(q), "")}
            seen: list[ClipView] = []
            for st, ts, refs in groups:
                qm = build_query_media(index, str(q), ts, refs=refs, **opts)
                if "query" not in entry:
                    entry["query"] = _clip_json(qm.query, prefix)
                    seen.append(qm.query)
                    assets.update((x.name, x) for x in (qm.query.audio, qm.query.picture)
                                  if x is not None)
                clips = entry["clips"].setdefault(st, {})
                for v in qm.items:
                    js = _clip_json(v, prefix)
                    if v.segment is None:
                        manifest["tracks"].setdefault(v.item_id, js)
                    clips[v.item_id] = js
                    if all(v is not o for o in seen):
                        seen.append(v)
                    assets.update((x.name, x) for x in (v.audio, v.picture) if x is not None)
                rolls = entry["rolls"].setdefault(st, {})
                for tid, roll in qm.rolls.items():
                    assets[roll.name] = roll
                    rolls[tid] = f"{prefix}/{roll.name}"
                entry["problems"] += [p for p in qm.problems if p not in entry["problems"]]
            manifest["queries"][str(q)] = entry
            n_bad = sum(v.missing is not None for v in seen)
            n_missing += n_bad
            say.query(i, q, sum(v.audio is not None for v in seen), n_bad,
                      time.perf_counter() - tq)
            bar.update(1)
            for v in seen:  # free the samples; a cached track keeps only its notes
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
