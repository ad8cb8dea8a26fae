r"""The media files a run's tables name, as the run found them, and whether they still are.

A report or a dossier made after the run plays the files that the queries file and the feature
store name *then*. A file rewritten since (another take, a re-rendered MIDI) or gone would be
other music, or none, under the run's numbers; so the run records each file and the page
refuses one that is no longer the same, saying so on the clip.

Conventions
-----------
- **Record.** ``results.json`` ``media`` (:data:`MEDIA_KEY`), written by ``aria-tda run``
  (:func:`aria_tda.study.tables.write_tables`): for each query of the queries table and each
  training track of the ``topk`` table whose media file was found, under ``"query:<id>"`` or
  ``"train:<track_id>"`` (the ids of :class:`~aria_tda.media.sources.MediaRef`),
  ``{"path": absolute path, "size": bytes, "mtime_ns": int, "digest": content digest}``
  (:func:`aria_tda._fingerprint.content_digest`: the bytes, cached by the file's stat key, so
  a rerun on unchanged files costs one ``stat`` each) — :func:`record_media`.
- **Check.** :func:`recorded_problem`: a file whose digest is the recorded one plays, wherever it
  now lies; one that is gone is "missing (it was there when the results were made)"; one whose
  bytes differ — or another file found where the recorded one was — is refused, "changed since
  the results were made". Results folders without a record (older ones, or made by other
  writers) are not checked.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from aria_tda.media.sources import MediaIndex, MediaRef

__all__ = ["MEDIA_KEY", "record_media", "recorded_problem"]

#: The key of ``results.json`` that holds the record.
MEDIA_KEY = "media"


def _entry(ref: MediaRef) -> dict[str, Any] | None:
    """The record of one playable reference (``None``: nothing to record)."""
    from aria_tda._fingerprint import content_digest

    if ref.missing is not None or ref.path is None:
        return None
    try:
        path = ref.path.resolve()
        st = path.stat()
        digest = content_digest(path)
    except OSError:
        return None
    return {"path": str(path), "size": int(st.st_size), "mtime_ns": int(st.st_mtime_ns),
            "digest": digest}


def record_media(index: MediaIndex, *, queries: Iterable[Any],
                 tracks: Iterable[Any]) -> dict[str, dict[str, Any]]:
    """Record the media files of ``queries`` and ``tracks`` as they are now (module docstring).

    Parameters
    ----------
    index : MediaIndex
        Where the media lie (:func:`aria_tda.media.sources.resolve_media`).
    queries : iterable
        Query indices or ids, as the tables name them.
    tracks : iterable
        Training track ids.

    Returns
    -------
    dict
        ``"query:<id>"`` / ``"train:<track_id>"`` -> ``{"path", "size", "mtime_ns",
        "digest"}``; references with no file are left out.
    """
    out: dict[str, dict[str, Any]] = {}
    for q in queries:
        ref = index.query(q)
        entry = _entry(ref)
        if entry is not None:
            out[f"query:{ref.item_id}"] = entry
    for t in dict.fromkeys(str(t) for t in tracks):
        ref = index.train(t)
        entry = _entry(ref)
        if entry is not None:
            out[f"train:{t}"] = entry
    return out


def recorded_problem(ref: MediaRef, record: Mapping[str, Any] | None) -> str | None:
    """Why ``ref``'s file is not the one the run recorded (``None``: it is, or none recorded).

    Parameters
    ----------
    ref : MediaRef
        A reference as resolved now.
    record : mapping or None
        Its entry of ``results.json`` ``media``.

    Returns
    -------
    str or None
        One sentence for the page (:attr:`MediaRef.missing`).
    """
    from aria_tda._fingerprint import content_digest

    if not isinstance(record, Mapping) or not isinstance(record.get("digest"), str):
        return None
    what = "query file" if ref.role == "query" else "training file"
    then = str(record.get("path") or "")
    if ref.path is None:
        return None  # no file named now (a queries file gone): the reference says why
    if not ref.path.exists():
        if Path(then) == ref.path.absolute():
            return (f"{what} {then} is missing: it was there when the results were made; "
                    "nothing is played in its place")
        return None  # another file was named and is missing: the reference says so
    try:
        now = content_digest(ref.path)
    except OSError as exc:
        return f"{what} {ref.path} cannot be read ({os.strerror(exc.errno or 0)})"
    if now == record["digest"]:
        return None
    if then and Path(then) != ref.path.resolve():
        gone = "is missing" if not Path(then).exists() else "has changed"
        return (f"{what} {ref.path} is not the file the results were made from ({then}, which "
                f"{gone} since); not played")
    return (f"{what} {ref.path} changed since the results were made (its content differs "
            "from the file the run read); not played")
