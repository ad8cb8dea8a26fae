"""The music behind a result: where it lies, clips of it to hear, and pictures of it.

- :mod:`aria_tda.media.sources` — :func:`resolve_media`: which file (and which window of it)
  holds each query's and training item's music, from what a study already has (the queries
  file, the feature store's metadata, the segment map); missing media named, never raised.
- :mod:`aria_tda.media.clips` — :func:`load_clip` (the window, with context, cut from audio
  or rendered from MIDI), :func:`loudness_match` (ITU-R BS.1770 integrated loudness),
  :func:`encode_clip` (Ogg/Vorbis, Ogg/Opus or WAV bytes for a web page).
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
