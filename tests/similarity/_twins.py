"""Reference twins of aria_tda.similarity: bit-parallel LCS vs the dynamic program, group blocks
(Gram path / LCS group kernel) vs pair-by-pair recomputation from the raw values."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from aria_tda.features.registry import FeatureSpec
from aria_tda.similarity import lcs_length, lcs_similarity, pairwise, prepare_feature
from aria_tda.similarity.cross import cross_similarity, cross_similarity_reference
from aria_tda.similarity.lcs import lcs_length_reference, lcs_similarity_reference
from aria_tda.similarity.prepare import pairwise_reference
from twinlib import Inputs, Twin

VEC = FeatureSpec("v", "c", "audio", "vector", 6, "std_euclidean", "audio", "test")
SEQ = FeatureSpec("s", "c", "audio", "sequence", None, "chord_lcs", "audio", "test")


def _two_sequences(rng: np.random.Generator) -> Inputs:
    # lengths across the 64-bit word boundary, small alphabet for long common subsequences
    la, lb = rng.integers(0, 140, 2)
    return (rng.integers(0, 4, la), rng.integers(0, 4, lb)), {}


def _swap(rng: np.random.Generator, args: tuple[Any, ...], kwargs: dict[str, Any]):
    return (args[1], args[0]), kwargs, lambda res: res  # LCS is symmetric


def _vector_group(rng: np.random.Generator) -> Inputs:
    x = rng.standard_normal((40, 6)) * rng.uniform(0.1, 20, 6)
    x[3] = np.nan  # a missing track
    x[5] = x[4] + 1e-9  # a near duplicate (the Gram path recomputes it exactly)
    pf = prepare_feature(VEC, x)
    return (pf, np.r_[3, 4, 5, rng.permutation(np.arange(6, 40))[:12]], x), {}


def _sequence_group(rng: np.random.Generator) -> Inputs:
    seqs: list[Any] = [rng.integers(0, 12, rng.integers(0, 90)) for _ in range(40)]
    seqs[2] = None  # a missing track
    pf = prepare_feature(SEQ, seqs)
    return (pf, rng.permutation(40)[:15], seqs), {}


def _permute_idx(rng: np.random.Generator, args: tuple[Any, ...], kwargs: dict[str, Any]):
    pf, idx, values = args
    perm = rng.permutation(idx.size)
    return (pf, idx[perm], values), kwargs, lambda block: block[np.ix_(perm, perm)]


def _vector_cross(rng: np.random.Generator) -> Inputs:
    x = rng.standard_normal((30, 6)) * rng.uniform(0.1, 20, 6)
    x[:, 2] = 4.0  # a zero-variance dimension: dropped for the queries too
    x[3] = np.nan
    with warnings.catch_warnings():  # the dropped dimension is announced; expected here
        warnings.simplefilter("ignore")
        pf = prepare_feature(VEC, x)
    q = rng.standard_normal((5, 6)) * rng.uniform(0.1, 20, 6)
    q[1] = np.nan  # a query without the feature
    q[2] = x[7]  # a query identical to a track (the Gram path recomputes it exactly)
    return (pf, q), {"rows": rng.permutation(30)[:17]}


def _sequence_cross(rng: np.random.Generator) -> Inputs:
    seqs: list[Any] = [rng.integers(0, 12, rng.integers(0, 90)) for _ in range(25)]
    seqs[2] = None
    pf = prepare_feature(SEQ, seqs)
    q: list[Any] = [rng.integers(0, 14, rng.integers(0, 80)) for _ in range(4)]  # symbols > 11
    q[1] = None
    q[3] = np.zeros(0, dtype=np.int64)
    return (pf, q), {"rows": rng.permutation(25)[:11]}


def _permute_cross_rows(rng: np.random.Generator, args: tuple[Any, ...],
                        kwargs: dict[str, Any]):
    perm = rng.permutation(kwargs["rows"].size)
    return args, {**kwargs, "rows": kwargs["rows"][perm]}, lambda res: res[:, perm]


TWINS = [
    Twin("similarity.lcs_length", lcs_length, lcs_length_reference, _two_sequences,
         permute=_swap),
    Twin("similarity.lcs_similarity", lcs_similarity, lcs_similarity_reference, _two_sequences,
         permute=_swap, rtol=0, atol=1e-15),
    Twin("similarity.pairwise[vector]", pairwise, pairwise_reference, _vector_group,
         permute=_permute_idx),
    Twin("similarity.pairwise[sequence]", pairwise, pairwise_reference, _sequence_group,
         permute=_permute_idx, rtol=0, atol=1e-15),
    Twin("similarity.cross_similarity[vector]", cross_similarity, cross_similarity_reference,
         _vector_cross, chunk=("chunk_rows", (1, 4, 100)), permute=_permute_cross_rows,
         rtol=1e-10, atol=1e-12),
    Twin("similarity.cross_similarity[sequence]", cross_similarity, cross_similarity_reference,
         _sequence_cross, chunk=("chunk_rows", (1, 4, 100)), permute=_permute_cross_rows,
         rtol=0, atol=1e-15),
]
