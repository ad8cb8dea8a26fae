"""Shared inputs of the similarity tests."""

from __future__ import annotations

import numpy as np

from aria_tda.features.registry import FeatureSpec, feature_spec

CHORDS = feature_spec("audio", "chord_progression")
CQT = feature_spec("audio", "cqt")


def vec_spec(dim: int, name: str = "v") -> FeatureSpec:
    return FeatureSpec(name, "c", "audio", "vector", dim, "std_euclidean", "audio", "test")


def random_sequences(rng, n, *, max_len=64, alphabet=12, p_empty=0.1):
    out = []
    for _ in range(n):
        if rng.random() < p_empty:
            out.append(np.zeros(0, dtype=np.int64))
        else:
            out.append(rng.integers(0, alphabet, rng.integers(1, max_len + 1)))
    return out
