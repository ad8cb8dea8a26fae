r"""Similarity of outside items (the queries) to a corpus' tracks, on the corpus' own scale.

:func:`cross_similarity` compares the feature values of items that are not in the corpus —
typically the generated queries, whose features were extracted like the training tracks' —
with the corpus' tracks, using the same similarity function and the same per-corpus
normalisation the within-group homogeneity uses:

- ``"std_euclidean"``: a query vector is standardised with the **corpus'** mean and scale
  (:class:`~aria_tda.similarity.VectorFeature`; dropped zero-variance dimensions stay
  dropped), then :math:`\mathrm{sim}(q, x) = 1 / (1 + \lVert z_q - z_x \rVert_2)`;
- ``"chord_lcs"``: :math:`\mathrm{LCS}(q, x) / \max(|q|, |x|)` (1 when both are empty).

A query without the feature (NaN vector, ``None`` sequence) gives a NaN row, a track without
it a NaN column. :func:`cross_similarity_reference` is the exact reference (one pair at a time
with :func:`~aria_tda.similarity.std_euclidean_similarity` and the textbook LCS).
"""

from __future__ import annotations

from typing import Any

import numpy as np

import aria_tda._simkernels as _k
from aria_tda.errors import ParameterError, expected
from aria_tda.similarity.base import PreparedFeature, check_row_indices
from aria_tda.similarity.euclidean import (
    GRAM_RECOMPUTE_TOL,
    VectorFeature,
    as_feature_matrix,
    std_euclidean_similarity,
)
from aria_tda.similarity.lcs import (
    SequenceFeature,
    is_missing,
    lcs_similarity_reference,
    make_sequence_feature,
    prepare_sequence,
)

__all__ = ["cross_similarity"]


def _rows(feature: PreparedFeature, rows: Any) -> np.ndarray:
    if rows is None:
        return np.arange(feature.n, dtype=np.int64)
    return check_row_indices(rows, feature.n)


def _query_vectors(feature: VectorFeature, values: Any) -> tuple[np.ndarray, np.ndarray]:
    """Query values standardised on the corpus' scale ``(n_q, d_kept)`` and their validity."""
    x = as_feature_matrix(f"values[{feature.name}]", values)
    d = feature.scale.shape[0]
    if x.shape[1] != d:
        raise ParameterError(expected(
            f"values[{feature.name}]", f"{d} columns (the corpus' dimension)", x.shape[1]))
    valid = ~np.isnan(x).any(axis=1)
    keep = ~feature.dropped
    z = (x[:, keep] - feature.mean[keep]) / feature.scale[keep]
    z[~valid] = 0.0
    return np.ascontiguousarray(z), valid


def _vector_cross(feature: VectorFeature, values: Any, rows: np.ndarray) -> np.ndarray:
    zq, qvalid = _query_vectors(feature, values)
    zx = feature.z[rows]
    if zq.shape[1] == 0:  # every dimension dropped: a constant feature, every pair is 1
        out = np.ones((zq.shape[0], rows.size))
    else:
        zx = np.ascontiguousarray(zx)
        nq = np.einsum("ij,ij->i", zq, zq)
        nx = np.einsum("ij,ij->i", zx, zx)
        out = np.empty((zq.shape[0], rows.size))
        # near-duplicate pairs are recomputed exactly (cancellation), as the group kernel does
        _k.cross_sims(zq @ zx.T, nq, nx, zq, zx, GRAM_RECOMPUTE_TOL, out)
    out[~qvalid, :] = np.nan
    out[:, ~feature.valid[rows]] = np.nan
    return out


def _query_sequences(feature: SequenceFeature, values: Any) -> SequenceFeature:
    from aria_tda.similarity.lcs import as_symbols

    try:
        items = list(values)
    except TypeError:
        raise ParameterError(expected(
            f"values[{feature.name}]", "a list of 1-D integer sequences",
            type(values).__name__)) from None
    top = max((int(as_symbols("values", v).max()) + 1 for v in items
               if not is_missing(v) and len(v)), default=1)
    alphabet = max(feature.alphabet, top)
    return prepare_sequence(feature.spec, items, alphabet=alphabet)


def _sequence_cross(feature: SequenceFeature, values: Any, rows: np.ndarray) -> np.ndarray:
    q = _query_sequences(feature, values)
    corpus = feature
    if q.alphabet != feature.alphabet:  # a query symbol beyond the corpus' alphabet
        corpus = make_sequence_feature(
            feature.spec, [feature.sequence(i) for i in range(feature.n)], feature.valid,
            q.alphabet)
    nq_words = q.woff[-1]
    flat = np.concatenate([q.flat, corpus.flat])
    offsets = np.concatenate([q.offsets[:-1], corpus.offsets + q.offsets[-1]])
    masks = np.vstack([q.masks, corpus.masks])
    woff = np.concatenate([q.woff[:-1], corpus.woff + nq_words])
    n_q = q.n
    ii = np.repeat(np.arange(n_q, dtype=np.int64), rows.size)
    jj = np.tile(rows + n_q, n_q)
    lcs = np.empty(ii.size, dtype=np.int64)
    _k.lcs_len_pairs(masks, woff, flat, offsets, ii, jj, lcs)
    lens = np.diff(offsets)
    m = np.maximum(lens[ii], lens[jj])
    out = np.where(m == 0, 1.0, lcs / np.maximum(m, 1)).reshape(n_q, rows.size)
    out[~q.valid, :] = np.nan
    out[:, ~corpus.valid[rows]] = np.nan
    return out


def cross_similarity(feature: PreparedFeature, values: Any, *, rows: Any = None,
                     chunk_rows: int | None = None) -> np.ndarray:
    r"""Similarity of outside items (queries) to the corpus' tracks ``rows``.

    Parameters
    ----------
    feature : PreparedFeature
        The corpus' prepared feature (its scale is used for the queries too).
    values : np.ndarray [shape=(n_q, d)] | sequence of n_q integer arrays (or None)
        The queries' raw values of the same feature, as the feature store holds them.
    rows : np.ndarray [shape=(n,), dtype=int], optional
        The tracks to compare with (default: all).
    chunk_rows : int, optional
        Tracks per block (bounds the memory of the vector path to ``n_q x chunk_rows``).

    Returns
    -------
    np.ndarray [shape=(n_q, n), dtype=float64]
        ``sim(q, x)`` in ``(0, 1]`` (``[0, 1]`` for ``chord_lcs``); NaN where the query or the
        track lacks the feature.
    """
    if not isinstance(feature, PreparedFeature):
        raise ParameterError(expected("feature", "a PreparedFeature", type(feature).__name__))
    idx = _rows(feature, rows)
    fn: Any
    if isinstance(feature, VectorFeature):
        fn = _vector_cross
    elif isinstance(feature, SequenceFeature):
        fn = _sequence_cross
    else:
        raise ParameterError(expected(
            "feature", "a VectorFeature or SequenceFeature", type(feature).__name__))
    step = idx.size if not chunk_rows else max(1, int(chunk_rows))
    if step >= idx.size:
        return np.asarray(fn(feature, values, idx))
    parts = [fn(feature, values, idx[s : s + step]) for s in range(0, idx.size, step)]
    return np.concatenate(parts, axis=1)


def cross_similarity_reference(feature: PreparedFeature, values: Any, *, rows: Any = None,
                               chunk_rows: int | None = None) -> np.ndarray:
    """Exact reference of :func:`cross_similarity`: every (query, track) pair on its own.

    Parameters
    ----------
    feature : PreparedFeature
        The corpus' prepared feature.
    values : np.ndarray [shape=(n_q, d)] | sequence of n_q integer arrays (or None)
        The queries' raw values.
    rows : np.ndarray [shape=(n,), dtype=int], optional
        The tracks.
    chunk_rows : int, optional
        Ignored.
    """
    idx = _rows(feature, rows)
    if isinstance(feature, VectorFeature):
        x = as_feature_matrix("values", values)
        # the corpus' raw value of a track, back from its standardised row
        keep = ~feature.dropped
        out = np.empty((x.shape[0], idx.size))
        for a in range(x.shape[0]):
            for b, r in enumerate(idx):
                if np.isnan(x[a]).any() or not feature.valid[r]:
                    out[a, b] = np.nan
                    continue
                raw = feature.mean.copy()
                raw[keep] = feature.z[r] * feature.scale[keep] + feature.mean[keep]
                out[a, b] = std_euclidean_similarity(np.where(keep, x[a], 0.0),
                                                     np.where(keep, raw, 0.0),
                                                     np.where(keep, feature.scale, np.inf))
        return out
    if isinstance(feature, SequenceFeature):
        items = list(values)
        out = np.empty((len(items), idx.size))
        for a, v in enumerate(items):
            for b, r in enumerate(idx):
                if is_missing(v) or not feature.valid[r]:
                    out[a, b] = np.nan
                else:
                    out[a, b] = lcs_similarity_reference(np.asarray(v), feature.sequence(int(r)))
        return out
    raise ParameterError(expected(
        "feature", "a VectorFeature or SequenceFeature", type(feature).__name__))
