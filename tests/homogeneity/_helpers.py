"""Shared inputs of the homogeneity tests: feature specs, a three-channel feature set and a
full-sort top-K reference."""

from __future__ import annotations

import numpy as np

from aria_tda.features.registry import FeatureSpec
from aria_tda.similarity import prepare_feature


def vspec(name: str, channel: str, dim: int) -> FeatureSpec:
    return FeatureSpec(name, channel, "audio", "vector", dim, "std_euclidean", "audio", "test")


def sspec(name: str, channel: str) -> FeatureSpec:
    return FeatureSpec(name, channel, "audio", "sequence", None, "chord_lcs", "audio", "test")


def make_features(rng, n, *, clusters=None):
    """Three channels; with ``clusters`` (n,) the 'harmony' features are clustered."""
    raw = {
        "rhythm": {"onset": rng.standard_normal((n, 4)), "beat": rng.random((n, 3))},
        "harmony": {
            "chroma": rng.standard_normal((n, 5)),
            "chords": [rng.integers(0, 12, rng.integers(0, 25)) for _ in range(n)],
        },
        "timbre": {"mfcc": rng.exponential(size=(n, 2))},
    }
    if clusters is not None:
        n_cl = int(clusters.max()) + 1
        centres = rng.standard_normal((n_cl, 5)) * 4
        raw["harmony"]["chroma"] = centres[clusters] + rng.standard_normal((n, 5))
        motifs = [rng.integers(0, 12, 16) for _ in range(n_cl)]
        chords = []
        for c in clusters:
            s = motifs[c].copy()
            flip = rng.random(16) < 0.2
            s[flip] = rng.integers(0, 12, flip.sum())
            chords.append(s)
        raw["harmony"]["chords"] = chords
    prepared = {}
    for ch, feats in raw.items():
        prepared[ch] = [
            prepare_feature(
                sspec(name, ch) if isinstance(v, list) else vspec(name, ch, v.shape[1]), v
            )
            for name, v in feats.items()
        ]
    return prepared, raw


def topk_reference(s, k, pool=None):
    """Full sort per column: decreasing score, then increasing row index."""
    n, t = s.shape
    rows = np.arange(n) if pool is None else np.flatnonzero(pool)
    out = np.empty((t, k), dtype=np.int64)
    for q in range(t):
        order = np.lexsort((rows, -s[rows, q]))
        out[q] = rows[order[:k]]
    return out
