"""Reference twins of :mod:`aria_tda_experiments.audio`: the tokenizers' nearest-centroid kernel and
the query audio's Griffin-Lim.

:func:`~aria_tda_experiments.audio.tokenizers.assign` (chunked ``‖c‖² − 2x·c`` ranking, one matrix
product per chunk) against :func:`~aria_tda_experiments.audio.tokenizers.assign_reference` (one row
at a time, exact ``Σ (x − c)²``), on seeded Gaussian points and centroids; permuting the points
permutes the labels and distances alike.

:func:`~aria_tda_experiments.audio.query_audio.griffin_lim` (gathered frames, ``bincount``
overlap-add) against :func:`~aria_tda_experiments.audio.query_audio.griffin_lim_reference` (one
frame and one sample at a time), on short random magnitudes with frames reaching past both ends of
the signal.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from aria_tda_experiments.audio.query_audio import griffin_lim, griffin_lim_reference
from aria_tda_experiments.audio.tokenizers import assign, assign_reference
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


def _gl_inputs(rng: np.random.Generator) -> tuple[tuple[Any, ...], dict[str, Any]]:
    n_fft = int(rng.choice([8, 16]))
    step = int(rng.integers(2, n_fft // 2 + 1))
    length = int(rng.integers(n_fft, 4 * n_fft))
    centres = np.arange(step // 2, length, step)
    window = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(n_fft) / n_fft)
    mag = rng.random((len(centres), n_fft // 2 + 1))
    return (mag,), {"window": window, "centres": centres, "length": length,
                    "n_iter": int(rng.integers(0, 4)), "momentum": float(rng.uniform(0, 0.99)),
                    "seed": int(rng.integers(0, 100))}


TWINS = [
    Twin(name="bench.audio.assign", fast=assign, reference=assign_reference,
         make=_assign_inputs, chunk=("chunk_rows", (1, 7, 1000)), permute=_permute_points,
         rtol=1e-9, atol=1e-9),
    Twin(name="bench.audio.griffin_lim", fast=griffin_lim, reference=griffin_lim_reference,
         make=_gl_inputs, rtol=1e-9, atol=1e-9),
]
