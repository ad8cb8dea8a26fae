"""Audio encoders for the embedding-retrieval baselines (paper §4.3): published and demo-trained.

:func:`load_encoder` builds one by name from a local checkpoint (:data:`ENCODERS` lists them);
:class:`Encoder` is what each provides (frame embeddings at its own sample rate, averaged over
time by :meth:`Encoder.embed`). ``aria-tda embed`` (:mod:`aria_tda.embed`) runs them over a corpus.
"""

from __future__ import annotations

from aria_tda.embed.encoders.base import Encoder, EncoderSpec, file_sha256
from aria_tda.embed.encoders.registry import ENCODERS, load_encoder

__all__ = ["ENCODERS", "Encoder", "EncoderSpec", "file_sha256", "load_encoder"]
