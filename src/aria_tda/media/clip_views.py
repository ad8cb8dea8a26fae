r"""The listening room's clips: load, reuse from the disk cache, loudness-match and encode.

The query's and each item's :class:`ClipView` are filled here for
:func:`aria_tda.media.pack.build_query_media`: a clip built before comes from the disk
cache (:mod:`aria_tda.media.cache`); else it is cut from its file
(:func:`aria_tda.media.load_clip`), loudness-matched with the others of the query
(:func:`aria_tda.media.loudness_match`) and encoded as Ogg/Vorbis. Nothing here raises for a
missing or unreadable file: the view is marked ``missing`` with a sentence; so is a file that
changed or went since the run (:mod:`aria_tda.media.recorded`, through its reference). What no
clip can do without — a General-MIDI soundfont, FluidSynth — is also one warning, which names
where ARIA looked and how to install it.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from aria_tda.errors import AriaWarning, FileFormatError, MissingDependencyError, one_line

__all__ = ["Asset", "ClipView", "slug"]

MIMES = {"ogg": "audio/ogg", "svg": "image/svg+xml", "png": "image/png"}


@dataclass(frozen=True)
class Asset:
    """One media file: its name inside the media folder, its MIME type and its bytes."""

    name: str
    mime: str
    data: bytes

    def data_uri(self) -> str:
        """The asset as a ``data:`` URI (base64)."""
        return f"data:{self.mime};base64," + base64.b64encode(self.data).decode("ascii")


@dataclass
class ClipView:
    """One playable thing (the query or a training item) as the page shows it.

    Attributes
    ----------
    item_id : str
        The query id or training item id, as in the results tables.
    role : str
        ``"query"`` or ``"train"``.
    kind : str or None
        ``"audio"`` or ``"midi"``; ``None`` when there is no file.
    source : str
        The file (and window) the clip was cut from, for the page's caption.
    missing : str or None
        ``None`` when playable; else the sentence saying what is missing.
    audio : Asset or None
        The encoded clip.
    picture : Asset or None
        Spectrogram / chroma / beats / chords of an audio clip (PNG); MIDI clips are drawn
        beside the query instead (:attr:`QueryMedia.rolls`).
    duration : float
        Clip length in seconds.
    window : tuple of float
        The attributed window within the clip, in seconds from its start.
    segment : str or None
        The key of the segment played (a track's best segment for a query), else ``None``.
    """

    item_id: str
    role: str
    kind: str | None = None
    source: str = ""
    missing: str | None = None
    audio: Asset | None = None
    picture: Asset | None = None
    duration: float = 0.0
    window: tuple[float, float] = (0.0, 0.0)
    segment: str | None = None
    clip: Any = field(default=None, repr=False)


def slug(item_id: str) -> str:
    """An ASCII file stem for an item id: a readable part and 8 hex digits of its SHA-1.

    Parameters
    ----------
    item_id : str
        Any id.

    Returns
    -------
    str
        E.g. ``"haydn_opus74no1_movement1.mxl_11968-3f2a9c01"``.
    """
    readable = re.sub(r"[^A-Za-z0-9._-]+", "_", str(item_id)).strip("._")[:40] or "item"
    return f"{readable}-{hashlib.sha1(str(item_id).encode('utf-8')).hexdigest()[:8]}"


def _describe_source(ref: Any) -> str:
    path = getattr(ref, "path", None)
    if path is None:
        return ""
    path = _tidy(path)
    start, end = getattr(ref, "start", None), getattr(ref, "end", None)
    unit = getattr(ref, "unit", "s")
    if start is None and end is None:
        return f"{path} (whole file)"
    a = "start" if start is None else f"{start:g}"
    b = "end" if end is None else f"{end:g}"
    return f"{path} [{a}\u2013{b} {'s' if unit == 's' else unit}]"


def _tidy(path: Any) -> str:
    """``path`` without ``..`` and ``.`` parts, for the caption, when that is the same file."""
    text = os.path.normpath(str(path))
    try:
        return text if text == str(path) or os.path.samefile(text, path) else str(path)
    except OSError:
        return str(path)


def load_view(ref: Any, view: ClipView, *, context: float, max_seconds: float, sr: int,
              soundfont: str | None) -> None:
    """Fill ``view.clip`` from ``ref`` or mark the view missing (never raises for the file)."""
    from aria_tda.media.clips import load_clip

    view.kind = getattr(ref, "kind", None)
    view.source = _describe_source(ref)
    if getattr(ref, "missing", None):
        view.missing = str(ref.missing)
        return
    try:
        if view.kind == "midi":
            from aria_tda.features.audio.render import find_soundfont

            find_soundfont(soundfont)  # none, or a wrong one named: one warning, not per clip
        view.clip = load_clip(ref, context=context, sr=sr, max_seconds=max_seconds,
                              soundfont=soundfont)
    except (MissingDependencyError, FileFormatError) as exc:
        if isinstance(exc, MissingDependencyError) or "soundfont" in str(exc).lower():
            # no soundfont (or FluidSynth): said once, in full, where ARIA looked included
            warnings.warn(f"{exc}; the MIDI clips are not playable", AriaWarning, stacklevel=2)
        view.missing = f"could not load {ref.path}: {one_line(exc)}"
    except Exception as exc:  # an unreadable file: the page says so
        view.missing = f"could not load {ref.path}: {one_line(exc)}"


def _stem(v: ClipView) -> str:
    """The asset name of a view's clip and picture, without the extension."""
    return ("q/" if v.role == "query" else "t/") + slug(v.segment or v.item_id)


def reuse_view(ref: Any, view: ClipView, opts: Mapping[str, Any]) -> str | None:
    """Fill ``view`` from the disk cache when its clip was built before; return its key
    (``None``: not cacheable)."""
    from aria_tda.media import cache as media_cache

    key = media_cache.clip_key(ref, **opts)
    hit = media_cache.load(key)
    if hit is None or hit.kind != getattr(ref, "kind", None):
        return key
    view.kind, view.source = hit.kind, _describe_source(ref)
    stem = _stem(view)
    view.audio = Asset(stem + ".ogg", MIMES["ogg"], hit.audio)
    if hit.picture is not None:
        view.picture = Asset(stem + ".png", MIMES["png"], hit.picture)
    view.duration, view.window = hit.duration, hit.window
    view.clip = NotesOnly(hit.notes)  # the piano rolls draw its notes
    return key


def keep_view(key: str, v: ClipView, *, pictures: bool) -> None:
    """Put a clip built here into the disk cache (not a failed one: it is tried again)."""
    from aria_tda.media import cache as media_cache

    if v.audio is None or v.missing is not None or v.kind is None:
        return
    if pictures and v.kind == "audio" and v.picture is None:
        return  # its picture failed: draw it again next time
    media_cache.store(key, media_cache.CachedClip(
        v.kind, v.audio.data, None if v.picture is None else v.picture.data, v.duration,
        v.window, getattr(v.clip, "notes", None) if v.kind == "midi" else None))


def encode_views(views: Sequence[ClipView], *, bitrate_kbps: int, pictures: bool,
                 problems: list[str]) -> None:
    """Loudness-match the loaded clips together, encode them, draw the audio panels."""
    from aria_tda.media.clips import encode_clip, loudness_match

    loaded = [v for v in views
              if v.clip is not None and v.audio is None and v.missing is None]
    if not loaded:
        return
    try:
        matched = loudness_match([v.clip for v in loaded])
    except Exception as exc:
        problems.append(f"loudness matching failed ({one_line(exc)}); clips play as recorded")
        matched = [v.clip for v in loaded]
    for v, c in zip(loaded, matched, strict=True):
        v.clip = c
        v.duration = float(len(c.samples)) / float(c.sr)
        v.window = (float(c.window[0]), float(c.window[1]))
        stem = _stem(v)
        try:
            v.audio = Asset(stem + ".ogg", MIMES["ogg"], encode_clip(c, bitrate_kbps=bitrate_kbps))
        except Exception as exc:
            v.missing = f"could not encode the clip of {v.item_id}: {one_line(exc)}"
            problems.append(v.missing)
            continue
        if pictures and v.kind == "audio":
            try:
                from aria_tda.media.draw import audio_panels_png

                png = audio_panels_png(c.samples, c.sr, v.window)
                v.picture = Asset(stem + ".png", MIMES["png"], png)
            except Exception as exc:
                problems.append(f"could not draw {v.item_id}: {one_line(exc)}")


@dataclass(frozen=True)
class NotesOnly:
    """What the report keeps of a cached track's clip once encoded: its notes (for rolls)."""

    notes: Any
