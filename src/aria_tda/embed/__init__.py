"""Embedding-retrieval baselines (paper §4.3): ``aria-tda embed`` and ``aria-tda retrieve``.

- :func:`embed_to_store` (:mod:`aria_tda.embed.pipeline`) — time-averaged embeddings of an audio
  corpus with an encoder of :mod:`aria_tda.encoders`, into a resumable embedding store;
- :func:`retrieve` (:mod:`aria_tda.embed.retrieve`) — the cosine score matrix (training tracks ×
  queries) of two such stores, in ARIA's score format, ready for ``aria-tda run``.

Audio reading and resampling: :mod:`aria_tda.embed.audio`; the engine's per-file extractor:
:mod:`aria_tda.embed.extractor`.
"""

from __future__ import annotations

from aria_tda.embed.pipeline import embed_to_store
from aria_tda.embed.retrieve import retrieve

__all__ = ["embed_to_store", "retrieve"]
