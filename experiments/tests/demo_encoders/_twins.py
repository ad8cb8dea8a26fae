"""Reference twins of :mod:`aria_tda_experiments.encoders`: the CQT and log-mel front ends.

:func:`~aria_tda_experiments.encoders.frontends.cqt` (kernels zero-padded to the longest, a chunk of
frames times the kernel matrices) against ``cqt_reference`` (each kernel over its own support,
frame by frame and bin by bin); :func:`~aria_tda_experiments.encoders.frontends.log_mel` (``rfft``
of a chunk of frames) against ``log_mel_reference`` (an explicit DFT matrix, frame by frame). Both
on short seeded noise with random hops and sizes; neither kernel has a permutation symmetry.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from aria_tda_experiments.encoders.frontends import cqt, cqt_reference, log_mel, log_mel_reference
from twinlib import Twin


def _cqt_inputs(rng: np.random.Generator) -> tuple[tuple[Any, ...], dict[str, Any]]:
    hop = int(rng.integers(64, 400))
    y = rng.standard_normal(int(rng.integers(hop, 3000)))
    return (y,), {"sr": 8000, "hop": hop, "fmin": float(rng.uniform(80, 200)),
                  "n_bins": int(rng.integers(1, 30)), "bins_per_octave": 12}


def _mel_inputs(rng: np.random.Generator) -> tuple[tuple[Any, ...], dict[str, Any]]:
    hop = int(rng.integers(32, 300))
    y = rng.standard_normal(int(rng.integers(hop, 3000)))
    return (y,), {"sr": 8000, "hop": hop, "n_fft": int(rng.choice([64, 128, 256])),
                  "n_mels": int(rng.integers(4, 20))}


TWINS = [
    Twin(name="encoders.offline.cqt", fast=cqt, reference=cqt_reference, make=_cqt_inputs,
         chunk=("chunk_frames", (1, 3, 1000)), rtol=1e-9, atol=1e-12),
    Twin(name="encoders.offline.log_mel", fast=log_mel, reference=log_mel_reference,
         make=_mel_inputs, chunk=("chunk_frames", (1, 5, 1000)), rtol=1e-9, atol=1e-9),
]
