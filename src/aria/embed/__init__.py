"""Embedding-retrieval baselines (paper §4.3): ``aria embed`` and ``aria retrieve``.

- :func:`embed_to_store` (:mod:`aria.embed.pipeline`) — time-averaged embeddings of an audio
  corpus with an encoder of :mod:`aria.encoders`, into a resumable embedding store;
- :func:`retrieve` (:mod:`aria.embed.retrieve`) — the cosine score matrix (training tracks ×
  queries) of two such stores, in ARIA's score format, ready for ``aria run``.

Audio reading and resampling: :mod:`aria.embed.audio`; the engine's per-file extractor:
:mod:`aria.embed.extractor`.
"""

from __future__ import annotations

from aria.embed.pipeline import embed_to_store
from aria.embed.retrieve import retrieve

__all__ = ["embed_to_store", "retrieve"]
