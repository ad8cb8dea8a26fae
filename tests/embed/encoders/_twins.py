"""Reference twins of the encoder kernels (collected by tests/common/test_reference_twins.py)."""

from __future__ import annotations

import numpy as np

from aria_tda.embed.encoders.clews.cqt import cqt_kernels, cqt_magnitude, cqt_magnitude_reference
from twinlib import Twin


def _cqt(rng):
    # 24 bins from 100 Hz at 4 kHz: kernels of up to 672 samples in a 1024-sample buffer
    kernels, lengths, _ = cqt_kernels(4000, fmin=100.0, n_bins=24, bins_per_octave=12)
    y = rng.standard_normal(int(rng.integers(1500, 2500))).astype(np.float32)
    return (y, kernels.real.copy(), kernels.imag.copy(), lengths), {"hop_length": 50}


def _permute_bins(rng, args, kwargs):
    y, kr, ki, lengths = args
    perm = rng.permutation(len(lengths))
    return (y, kr[perm], ki[perm], lengths[perm]), kwargs, lambda out: out[perm]


TWINS = [
    Twin(
        "clews_cqt_magnitude",
        cqt_magnitude,
        cqt_magnitude_reference,
        _cqt,
        permute=_permute_bins,
        rtol=1e-4,
        atol=1e-5,
    ),
]
