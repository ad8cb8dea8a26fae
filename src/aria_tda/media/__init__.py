"""The music behind a result: where it lies, clips of it to hear, and pictures of it.

- :mod:`aria_tda.media.sources` — :func:`resolve_media`: which file (and which window of it)
  holds each query's and training item's music, from what a study already has (the queries
  file, the feature store's metadata, the segment map); missing media named, never raised.
- :mod:`aria_tda.media.clips` — :func:`load_clip` (the window, with context, cut from audio
  or rendered from MIDI), :func:`loudness_match` (ITU-R BS.1770 integrated loudness),
  :func:`encode_clip` (Ogg/Vorbis, Ogg/Opus or WAV bytes for a web page).
- :mod:`aria_tda.media.attributed`, :mod:`aria_tda.media.recorded` — which window of a
  track was attributed; whether the files a run recorded are still there.
- :mod:`aria_tda.media.draw`, :mod:`aria_tda.media.aspects` — pictures of clips and the
  per-channel evidence for one (query, item) pair.
- :mod:`aria_tda.media.clip_views`, :mod:`aria_tda.media.cache`, :mod:`aria_tda.media.pack`
  — a query's clips, pictures and drawn evidence (:func:`~aria_tda.media.pack.build_query_media`),
  cached by content; :mod:`aria_tda.media.selection` — which queries and items get them;
  :mod:`aria_tda.media.report_media` — the report's bounded media folder
  (:func:`~aria_tda.media.report_media.write_report_media`).
- :mod:`aria_tda.media.provenance` — what produced a setting's scores and how far its
  method was validated; :mod:`aria_tda.media.pdf` — a dossier printed to PDF.
- :mod:`aria_tda.media.query_evidence` — the report's per-query evidence, packed compactly.
- :mod:`aria_tda.media.dossier` — the evidence dossier of one query
  (:func:`~aria_tda.media.dossier.write_dossier`, ``aria-tda evidence``).

This package is the one home of the listening room; the report (:mod:`aria_tda.report`)
calls it and draws no music itself.
"""

from aria_tda.media.clips import (
    Clip,
    encode_clip,
    integrated_loudness,
    load_clip,
    loudness_match,
    mime_type,
)
from aria_tda.media.sources import MediaIndex, MediaRef, resolve_media

__all__ = [
    "Clip",
    "MediaIndex",
    "MediaRef",
    "encode_clip",
    "integrated_loudness",
    "load_clip",
    "loudness_match",
    "mime_type",
    "resolve_media",
]
