"""Reference twins of :mod:`aria_tda.embed` (collected by tests/common/test_reference_twins.py).

The streaming cosine kernel against its float64 single-block ``*_reference``, with block-size
invariance (``block_rows``) and permutation invariance: permuting the training rows and the
queries permutes the rows and columns of the score matrix.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from aria_tda.embed.retrieval import cosine_scores, cosine_scores_reference
from twinlib import Twin


def _make_cosine(rng: np.random.Generator) -> tuple[tuple[Any, ...], dict[str, Any]]:
    scale = rng.uniform(0.1, 10.0, size=(40, 1))
    return (rng.normal(size=(40, 12)) * scale, rng.normal(size=(9, 12))), {}


def _permute_cosine(rng: np.random.Generator, args: Any, kwargs: Any) -> Any:
    a, b = args
    r, c = rng.permutation(a.shape[0]), rng.permutation(b.shape[0])
    return (a[r], b[c]), dict(kwargs), lambda res: np.asarray(res)[r][:, c]


TWINS = [
    Twin(
        name="embed.cosine_scores",
        fast=cosine_scores,
        reference=cosine_scores_reference,
        make=_make_cosine,
        chunk=("block_rows", (1, 7, 1000)),
        permute=_permute_cosine,
        rtol=0.0,
        atol=3e-6,
    )
]
