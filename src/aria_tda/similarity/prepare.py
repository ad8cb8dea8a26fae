"""Preparing a corpus's features for fast pairwise similarity, and the group-level reference.

:func:`prepare_feature` picks the similarity function a registry entry names
(:mod:`~aria_tda.similarity.euclidean` or :mod:`~aria_tda.similarity.lcs`) and fixes the corpus
scale once; :func:`prepare_channels` does it for every feature of a feature set (the
registry's ``"extended"`` by default, ``"paper"`` for the paper's) that a store holds, grouped
by evidence channel. :func:`pairwise` is the ``(k, k)`` block of a group (the fast kernel);
:func:`pairwise_reference` recomputes it from the raw values, pair by pair.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from aria_tda.errors import AriaWarning, DataError, ParameterError, expected
from aria_tda.features.registry import FeatureSpec
from aria_tda.similarity.base import PreparedFeature, check_row_indices
from aria_tda.similarity.euclidean import VectorFeature, as_feature_matrix, prepare_vector
from aria_tda.similarity.euclidean import std_euclidean_similarity as _std_euclidean
from aria_tda.similarity.lcs import SequenceFeature, lcs_similarity_reference, prepare_sequence

__all__ = ["pairwise", "prepare_channels", "prepare_feature"]


def prepare_feature(
    spec: FeatureSpec,
    values: Any,
    *,
    scale: Any = None,
    mean: Any = None,
    alphabet: int | None = None,
) -> PreparedFeature:
    r"""Prepare one feature of a corpus for fast pairwise similarity.

    Parameters
    ----------
    spec : FeatureSpec
        The registry entry; ``spec.kind`` / ``spec.similarity`` pick the function.
    values : np.ndarray [shape=(N, d)] | sequence of N integer arrays (or None)
        One row per track. For vectors a row with a NaN is a missing feature (a partly-NaN
        row is treated as missing as well, with a warning).
    scale, mean : np.ndarray [shape=(d,)], optional
        Vector features only: reuse a scale fixed elsewhere (e.g. on the whole store) instead
        of estimating it over ``values``. By default the scale is estimated once here over
        all rows with the feature (:func:`standardization_scale`). To re-index to a subset,
        prefer :meth:`PreparedFeature.take`, which keeps the corpus-wide scale.
    alphabet : int, optional
        Sequence features only: number of symbols (default: ``max(symbol) + 1``, at least 12).

    Returns
    -------
    PreparedFeature
        :class:`VectorFeature` or :class:`SequenceFeature`, with ``.pairwise(idx) -> (k, k)``.

    Warns
    -----
    AriaWarning
        zero-variance dimensions dropped; partly-NaN rows treated as missing.
    """
    if not isinstance(spec, FeatureSpec):
        raise ParameterError(expected("spec", "a FeatureSpec", type(spec).__name__))
    if spec.kind == "vector" and spec.similarity == "std_euclidean":
        return prepare_vector(spec, values, scale=scale, mean=mean)
    if spec.kind == "sequence" and spec.similarity == "chord_lcs":
        return prepare_sequence(spec, values, alphabet=alphabet)
    raise ParameterError(expected(
        "spec", "kind/similarity 'vector'/'std_euclidean' or 'sequence'/'chord_lcs'",
        f"{spec.kind}/{spec.similarity}"))


def prepare_channels(
    store: Any,
    *,
    rows: Any = None,
    channels: Sequence[str] | None = None,
    feature_set: str = "extended",
) -> dict[str, list[PreparedFeature]]:
    """Prepare the features of a feature set that a store holds, grouped by evidence channel.

    Scales are fixed over **all tracks of the store** that have the feature (the corpus),
    then the features are re-indexed to ``rows`` (e.g. the store rows of S_track's tracks,
    in S_track's order) with :meth:`PreparedFeature.take`, so the scale does not depend on
    which tracks a score matrix covers.

    Parameters
    ----------
    store : aria_tda.features.store.FeatureStore
        Anything with ``modality``, ``feature_names``, ``vectors(name)``, ``sequences(name)``.
    rows : np.ndarray [shape=(N,), dtype=int], optional
        Store rows in the order of S_track's rows (default: the store's order).
    channels : sequence of str, optional
        Restrict to these channels (default: every channel of the modality).
    feature_set : {"extended", "paper"}
        Which features a channel reads (:data:`aria_tda.features.registry.FEATURE_SETS`):
        ``"extended"`` (default: the paper's and ARIA's pattern features) or ``"paper"``
        (the paper's 12 symbolic / 7 audio features).

    Returns
    -------
    dict[str, list[PreparedFeature]]
        Channel → its features in registry order; features of the set absent from the store
        (e.g. a store extracted before the pattern features existed) are skipped with an
        :class:`~aria_tda.errors.AriaWarning` and the channel uses the others; a channel with
        none is left out.
    """
    from aria_tda.features.registry import channels as registry_channels

    wanted = registry_channels(store.modality, feature_set=feature_set)
    if channels is not None:
        unknown = [c for c in channels if c not in wanted]
        if unknown:
            raise ParameterError(expected(
                "channels", "channels of " + repr(store.modality) + ": " + ", ".join(wanted),
                unknown))
        wanted = {c: wanted[c] for c in channels}
    have = set(store.feature_names)
    out: dict[str, list[PreparedFeature]] = {}
    for channel, specs in wanted.items():
        missing = [s.name for s in specs if s.name not in have]
        if missing:
            others = [s.name for s in specs if s.name in have]
            then = (f"the channel uses the others, {others}" if others
                    else "the channel is left out")
            warnings.warn(
                f"channel {channel!r}: feature(s) {missing} not in the store (feature set "
                f"{feature_set!r}); {then}",
                AriaWarning,
                stacklevel=2,
            )
        feats = []
        for spec in specs:
            if spec.name not in have:
                continue
            if spec.kind == "vector":
                values = store.vectors(spec.name)
            else:
                values = store.sequences(spec.name)
            pf = prepare_feature(spec, values)
            feats.append(pf if rows is None else pf.take(rows))
        if feats:
            out[channel] = feats
    if not out:
        raise DataError(expected(
            "store", f"at least one {store.modality} feature of feature set {feature_set!r}",
            sorted(have)))
    return out


def pairwise(pf: PreparedFeature, idx: Any, values: Any) -> np.ndarray:
    """The ``(k, k)`` similarity matrix of the tracks ``idx``: ``pf.pairwise(idx)``.

    The function form of :meth:`PreparedFeature.pairwise`, with the signature of its exact
    reference :func:`pairwise_reference` (which needs the raw ``values``).

    Parameters
    ----------
    pf : PreparedFeature
        The prepared feature.
    idx : np.ndarray [shape=(k,), dtype=int]
        Row indices.
    values : np.ndarray [shape=(N, d)] | sequence of N integer arrays
        The raw values ``pf`` was prepared from; the fast path reads the prepared data and
        only checks that there are ``pf.n`` of them.
    """
    if len(values) != pf.n:
        raise ParameterError(expected("values", f"{pf.n} rows (as pf)", len(values)))
    return pf.pairwise(idx)


def pairwise_reference(pf: PreparedFeature, idx: Any, values: Any) -> np.ndarray:
    """Exact ``(k, k)`` similarity matrix from the raw ``values``, pair by pair.

    Uses :func:`std_euclidean_similarity` with ``pf.scale`` or
    :func:`lcs_similarity_reference` (dynamic programming). For tests; O(k² d) or O(k² L²)
    in Python.

    Parameters
    ----------
    pf : PreparedFeature
        The prepared feature (for its scale and which tracks are valid).
    idx : np.ndarray [shape=(k,), dtype=int]
        Row indices.
    values : np.ndarray [shape=(N, d)] | sequence of N integer arrays
        The raw values ``pf`` was prepared from.
    """
    idx = check_row_indices(idx, pf.n)
    k = idx.size
    out = np.full((k, k), np.nan)
    if isinstance(pf, VectorFeature):
        x = as_feature_matrix("values", values)

        def sim(i: int, j: int) -> float:
            return _std_euclidean(x[i], x[j], pf.scale)
    elif isinstance(pf, SequenceFeature):
        items = list(values)

        def sim(i: int, j: int) -> float:
            return lcs_similarity_reference(items[i], items[j])
    else:  # pragma: no cover - defensive
        raise ParameterError(expected(
            "pf", "a VectorFeature or SequenceFeature", type(pf).__name__))
    for a in range(k):
        for b in range(a, k):  # symmetric: compute once, mirror
            if pf.valid[idx[a]] and pf.valid[idx[b]]:
                out[a, b] = out[b, a] = sim(int(idx[a]), int(idx[b]))
    return out
