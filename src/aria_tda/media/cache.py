r"""A content-keyed cache of the listening room's clips: what a rebuilt report need not redo.

Building a clip is the expensive part of a report's media (rendering MIDI with FluidSynth,
reading and resampling audio, loudness matching, encoding, and for audio the spectrogram
panels with their beat and chord analysis: about 0.8 s a clip on one core). A report rebuilt
from the same results, a demo rerun, or another report over the same training tracks gets the
same clips, so each is kept once built.

Conventions
-----------
- **Key.** SHA-256 of: :data:`MEDIA_VERSION` and ARIA's version (a new release never reads an
  older release's clips), the content digest of the source file
  (:func:`aria_tda._fingerprint.content_digest`: the bytes, not the path or the mtime; cached
  by inode, size and times), the window and its unit, the clip options (context, longest clip,
  sample rate, bit rate, whether pictures are drawn) and, for MIDI, the soundfont's content
  digest. Anything that changes the clip changes the key; a stale entry is never read.
- **Entry.** One ``.npz`` file (read with ``allow_pickle=False``): the encoded clip, the
  audio picture (PNG) if any, the clip's duration and window, and for MIDI the notes that the
  piano rolls draw. Written atomically (temporary name, then rename), so concurrent builders
  never see half an entry; an unreadable entry is treated as absent and rebuilt.
- **Where.** ``$ARIA_CACHE_DIR/media-v<MEDIA_VERSION>`` (default ``~/.cache/aria``). After each
  report the oldest entries are removed while the folder exceeds :data:`MAX_BYTES`. A cache
  that cannot be written (a read-only or full file system) is read as it is, and what it lacks
  is built without it, with one warning per process; it is never called damaged.
- Missing files, failed renders and failed encodes are never cached: they are tried again.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np

__all__ = ["MAX_BYTES", "MEDIA_VERSION", "CachedClip", "clip_key", "load", "media_cache_dir",
           "prune", "store"]

#: Bumped whenever what a clip's bytes are made of changes (rendering, encoding, pictures).
MEDIA_VERSION = 1
#: The cache folder is trimmed to this size (oldest entries first) after each report.
MAX_BYTES = 1 << 30


def media_cache_dir() -> Path:
    """``$ARIA_CACHE_DIR/media-v<MEDIA_VERSION>`` (default ``~/.cache/aria``)."""
    from aria_tda._fingerprint import cache_dir

    return cache_dir() / f"media-v{MEDIA_VERSION}"


@dataclass(frozen=True)
class CachedClip:
    """One built clip: encoded audio, its picture, its timing and (MIDI) its notes.

    Attributes
    ----------
    kind : str
        ``"audio"`` or ``"midi"``.
    audio : bytes
        The encoded clip.
    picture : bytes or None
        The audio panels (PNG); ``None`` for MIDI or when not drawn.
    duration : float
        Clip length in seconds.
    window : tuple of float
        The attributed window in the clip, seconds from its start.
    notes : pandas.DataFrame or None
        The clip's notes in clip time (MIDI).
    """

    kind: str
    audio: bytes
    picture: bytes | None
    duration: float
    window: tuple[float, float]
    notes: Any = None


def clip_key(ref: Any, **options: Any) -> str | None:
    """The cache key of the clip of ``ref`` built with ``options``; ``None``: not cacheable.

    Parameters
    ----------
    ref : aria_tda.media.MediaRef
        Where the clip comes from (its ``path``, ``start``, ``end``, ``unit``, ``kind``).
    **options
        The options the clip is built with (JSON-serialisable values; ``soundfont`` names the
        soundfont given by the user, ``None`` for the default one).

    Returns
    -------
    str or None
        Hex SHA-256; ``None`` when the file is missing or cannot be read (it is not cached).
    """
    from aria_tda._fingerprint import content_digest
    from aria_tda._version import __version__

    path = getattr(ref, "path", None)
    if path is None or getattr(ref, "missing", None):
        return None
    try:
        digest = content_digest(path)
        sf = None
        if getattr(ref, "kind", None) == "midi":
            from aria_tda.features.audio.render import find_soundfont

            sf = content_digest(find_soundfont(options.get("soundfont")))
    except Exception:  # unreadable, no soundfont: the builder says why, uncached
        return None
    payload = {"media": MEDIA_VERSION, "aria": __version__, "file": digest, "soundfont": sf,
               "kind": getattr(ref, "kind", None), "start": _num(getattr(ref, "start", None)),
               "end": _num(getattr(ref, "end", None)), "unit": getattr(ref, "unit", "s"),
               **{k: v for k, v in options.items() if k != "soundfont"}}
    text = json.dumps(payload, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _num(x: Any) -> float | None:
    return None if x is None else float(x)


def _entry(key: str) -> Path:
    return media_cache_dir() / key[:2] / f"{key}.npz"


def load(key: str | None) -> CachedClip | None:
    """The entry of ``key``, or ``None`` (absent, or unreadable: then it is rebuilt).

    Parameters
    ----------
    key : str or None
        From :func:`clip_key`.
    """
    if key is None:
        return None
    path = _entry(key)
    try:
        with np.load(path, allow_pickle=False) as z:
            meta = json.loads(bytes(z["meta"]).decode("utf-8"))
            picture = bytes(z["picture"]) if "picture" in z.files else None
            notes = None
            if meta.get("notes"):
                import pandas as pd

                notes = pd.DataFrame({c: z[f"notes.{c}"] for c in meta["notes"]})
            clip = CachedClip(str(meta["kind"]), bytes(z["audio"]), picture,
                              float(meta["duration"]), (float(meta["window"][0]),
                                                        float(meta["window"][1])), notes)
    except Exception:  # absent, truncated, foreign: not a hit
        return None
    with contextlib.suppress(OSError):
        os.utime(path)  # recently used: pruned last
    return clip


def store(key: str | None, clip: CachedClip) -> None:
    """Keep ``clip`` under ``key`` (atomically; a full or read-only disk keeps nothing).

    Parameters
    ----------
    key : str or None
        From :func:`clip_key`; ``None`` stores nothing.
    clip : CachedClip
        What was built.
    """
    if key is None:
        return
    from aria_tda._io import atomic_path

    arrays: dict[str, np.ndarray] = {"audio": np.frombuffer(clip.audio, dtype=np.uint8)}
    if clip.picture is not None:
        arrays["picture"] = np.frombuffer(clip.picture, dtype=np.uint8)
    cols: list[str] = []
    if clip.notes is not None:
        for c in clip.notes.columns:
            col = np.asarray(clip.notes[c])
            if col.dtype.kind not in "biuf":
                return  # notes of an unexpected type: not cached
            arrays[f"notes.{c}"] = col
            cols.append(str(c))
    meta = {"kind": clip.kind, "duration": clip.duration, "window": list(clip.window),
            "notes": cols if clip.notes is not None else None}
    arrays["meta"] = np.frombuffer(json.dumps(meta).encode("utf-8"), dtype=np.uint8)
    buf = io.BytesIO()
    np.savez(buf, **cast(Any, arrays))  # names only: nothing here is allow_pickle
    try:
        with atomic_path(_entry(key)) as tmp:
            tmp.write_bytes(buf.getvalue())
    except OSError as exc:  # a full or read-only disk: not kept, said once per process
        from aria_tda._fingerprint import cache_unwritable

        cache_unwritable("media cache", media_cache_dir(), exc,
                         "clips it lacks are built without it (again next time)")


def prune(max_bytes: int = MAX_BYTES) -> int:
    """Remove the least recently used entries while the cache holds more than ``max_bytes``.

    Parameters
    ----------
    max_bytes : int
        The size to trim to.

    Returns
    -------
    int
        Entries removed.
    """
    root = media_cache_dir()
    if not root.is_dir():
        return 0
    entries = []
    for p in root.glob("*/*.npz"):
        with contextlib.suppress(OSError):
            st = p.stat()
            entries.append((st.st_mtime, st.st_size, p))
    total = sum(size for _, size, _ in entries)
    removed = 0
    for _, size, p in sorted(entries, key=lambda e: e[0]):
        if total <= max_bytes:
            break
        with contextlib.suppress(OSError):
            p.unlink()
            total -= size
            removed += 1
    return removed
