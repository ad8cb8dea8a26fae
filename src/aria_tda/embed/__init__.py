"""Embedding-retrieval baselines (paper §4.3): ``aria-tda embed`` and ``aria-tda retrieve``.

Everything about encoder embeddings lives here, in two layers:

- storage (no torch, no encoder; what a study may import):

  - :mod:`aria_tda.embed.store` — what an embedding store holds (:func:`embedding_info`),
    refusing to compare two encoders (:func:`check_comparable`), reading it;
  - :mod:`aria_tda.embed.retrieval` — the cosine score matrix (training tracks × queries) of
    two stores in ARIA's score format, ready for ``aria-tda run`` (:func:`retrieve`,
    :func:`write_cosine_scores`), through the streaming kernel :func:`cosine_scores`;

- encoders and extraction (torch):

  - :mod:`aria_tda.embed.encoders` — the published encoders (mert, clap, clews), the
    :class:`Encoder` interface and the registry (:func:`load_encoder`, :data:`ENCODERS`; other
    packages add encoders through the ``aria_tda.encoders`` entry-point group);
  - :mod:`aria_tda.embed.pipeline` — :func:`embed_to_store`, time-averaged embeddings of an
    audio corpus into a resumable embedding store, with the engine's per-file extractor
    :mod:`aria_tda.embed.extractor` and audio reading/resampling :mod:`aria_tda.embed.audio`.

The names below are loaded on first use, so importing :mod:`aria_tda.embed.store` or
:mod:`aria_tda.embed.retrieval` never imports the encoders.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aria_tda._lazy import lazy_exports

#: Public name -> module that defines it (imported lazily: this package stays light).
_LAZY = {
    "embed_to_store": "aria_tda.embed.pipeline",
    "retrieve": "aria_tda.embed.retrieval",
    "write_cosine_scores": "aria_tda.embed.retrieval",
    "cosine_scores": "aria_tda.embed.retrieval",
    "embedding_info": "aria_tda.embed.store",
    "check_comparable": "aria_tda.embed.store",
    "read_embeddings": "aria_tda.embed.store",
    "Encoder": "aria_tda.embed.encoders.base",
    "EncoderSpec": "aria_tda.embed.encoders.base",
    "ENCODERS": "aria_tda.embed.encoders.registry",
    "load_encoder": "aria_tda.embed.encoders.registry",
}

__all__ = [
    "ENCODERS",
    "Encoder",
    "EncoderSpec",
    "check_comparable",
    "cosine_scores",
    "embed_to_store",
    "embedding_info",
    "load_encoder",
    "read_embeddings",
    "retrieve",
    "write_cosine_scores",
]

if TYPE_CHECKING:  # typed re-exports for mypy and IDEs; at run time they load on first use
    from aria_tda.embed.encoders.base import Encoder, EncoderSpec
    from aria_tda.embed.encoders.registry import ENCODERS, load_encoder
    from aria_tda.embed.pipeline import embed_to_store
    from aria_tda.embed.retrieval import cosine_scores, retrieve, write_cosine_scores
    from aria_tda.embed.store import check_comparable, embedding_info, read_embeddings


__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
