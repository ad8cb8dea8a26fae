"""Reference twins of :mod:`aria.bench.audio`: the nearest-centroid kernel of the tokenizers.

:func:`~aria.bench.audio.tokenizers.assign` (chunked ``‖c‖² − 2x·c`` ranking, one matrix
product per chunk) against :func:`~aria.bench.audio.tokenizers.assign_reference` (one row at a
time, exact ``Σ (x − c)²``), on seeded Gaussian points and centroids; permuting the points
permutes the labels and distances alike.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from aria.bench.audio.tokenizers import assign, assign_reference
from twinlib import Twin


def _assign_inputs(rng: np.random.Generator) -> tuple[tuple[Any, ...], dict[str, Any]]:
    n, k, d = int(rng.integers(1, 60)), int(rng.integers(1, 12)), int(rng.integers(1, 9))
    return (rng.standard_normal((n, d)), rng.standard_normal((k, d))), {}


def _permute_points(
    rng: np.random.Generator, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[tuple[Any, ...], dict[str, Any], Any]:
    x, c = args
    perm = rng.permutation(len(x))
    return (x[perm], c), kwargs, lambda out: (out[0][perm], out[1][perm])


TWINS = [
    Twin(name="bench.audio.assign", fast=assign, reference=assign_reference,
         make=_assign_inputs, chunk=("chunk_rows", (1, 7, 1000)), permute=_permute_points,
         rtol=1e-9, atol=1e-9),
]
