r"""``"chord_lcs"``: normalised longest common subsequence of chord root-motion sequences.

.. math:: \mathrm{sim}(a, b) = \frac{\mathrm{LCS}(a, b)}{\max(|a|, |b|)},
          \qquad \mathrm{sim}(\varnothing, \varnothing) = 1

LCS is computed bit-parallel (Allison & Dix 1986; Hyyrö 2004) with match masks precomputed
once per sequence (:mod:`aria_tda._simkernels`); :class:`SequenceFeature` holds a corpus of
sequences packed for the group kernel. :func:`lcs_length_reference` (the textbook dynamic
program) and :func:`lcs_similarity_reference` are the exact references.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import aria_tda._simkernels as _k
from aria_tda.errors import ParameterError, expected
from aria_tda.features.registry import FeatureSpec
from aria_tda.similarity.base import PreparedFeature, check_row_indices

__all__ = [
    "SequenceFeature", "as_symbols", "is_missing", "lcs_length", "lcs_similarity",
    "make_sequence_feature", "prepare_sequence",
]

MAX_ALPHABET = 256


def as_symbols(name: str, seq: Any) -> np.ndarray:
    """A sequence as uint8 symbols in ``[0, MAX_ALPHABET)`` (whole-number floats accepted).

    Parameters
    ----------
    name : str
        The sequence's name, for the messages.
    seq : array_like
        A 1-D integer sequence.

    Returns
    -------
    numpy.ndarray

    Raises
    ------
    ParameterError
        Not 1-D, not integers, or a symbol out of range.
    """
    arr = np.asarray(seq)
    if arr.ndim != 1:
        raise ParameterError(expected(
            name, "a 1-D integer sequence", f"an array of shape {arr.shape}"))
    if arr.size == 0:
        return np.zeros(0, dtype=np.uint8)
    if arr.dtype.kind == "f" and np.all(np.isfinite(arr)) and np.all(arr == np.round(arr)):
        arr = arr.astype(np.int64)
    if arr.dtype.kind not in "iu":
        raise ParameterError(expected(name, "integer symbols", f"dtype {arr.dtype}"))
    if arr.min() < 0 or arr.max() >= MAX_ALPHABET:
        raise ParameterError(expected(
            name, f"symbols in [0, {MAX_ALPHABET})", f"range [{arr.min()}, {arr.max()}]"))
    return arr.astype(np.uint8)


def lcs_length_reference(a: Any, b: Any) -> int:
    """Length of the longest common subsequence by the textbook O(|a||b|) dynamic program.

    Parameters
    ----------
    a, b : sequence of int
        Symbols in ``[0, 256)``.
    """
    x = as_symbols("a", a)
    y = as_symbols("b", b)
    prev = [0] * (len(y) + 1)
    for xi in x.tolist():
        cur = [0]
        for j, yj in enumerate(y.tolist()):
            cur.append(prev[j] + 1 if xi == yj else max(prev[j + 1], cur[j]))
        prev = cur
    return prev[-1]


def _normalised(lcs: float, la: int, lb: int) -> float:
    m = max(la, lb)
    return 1.0 if m == 0 else lcs / m


def lcs_similarity_reference(a: Any, b: Any) -> float:
    """Normalised LCS similarity ``LCS / max(|a|, |b|)`` (1 for two empty sequences), by DP.

    Parameters
    ----------
    a, b : sequence of int
        Symbols in ``[0, 256)``.
    """
    la, lb = len(as_symbols("a", a)), len(as_symbols("b", b))
    return _normalised(lcs_length_reference(a, b), la, lb)


def _pack(seqs: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    lens = np.fromiter((len(s) for s in seqs), dtype=np.int64, count=len(seqs))
    offsets = np.zeros(len(seqs) + 1, dtype=np.int64)
    np.cumsum(lens, out=offsets[1:])
    if len(seqs) and offsets[-1]:
        flat = np.concatenate(seqs).astype(np.uint8)
    else:
        flat = np.zeros(0, np.uint8)
    return flat, offsets


def lcs_length(a: Any, b: Any) -> int:
    """Length of the longest common subsequence, bit-parallel (any lengths).

    Parameters
    ----------
    a, b : sequence of int
        Symbols in ``[0, 256)``.
    """
    x = as_symbols("a", a)
    y = as_symbols("b", b)
    flat, offsets = _pack([x, y])
    alphabet = int(flat.max()) + 1 if flat.size else 1
    masks, woff = _k.build_masks(flat, offsets, alphabet)
    work = np.empty(max(1, masks.shape[0]), dtype=np.uint64)
    return int(_k.lcs_len_pair(masks, woff, flat, offsets, 0, 1, work))


def lcs_similarity(a: Any, b: Any) -> float:
    r"""Normalised LCS similarity of two root-motion sequences.

    .. math:: \mathrm{sim}(a, b) = \mathrm{LCS}(a, b) / \max(|a|, |b|), \quad
              \mathrm{sim}(\varnothing, \varnothing) = 1

    Bit-parallel; for many pairs use :meth:`SequenceFeature.pairwise` (masks are built once).

    Parameters
    ----------
    a, b : sequence of int
        Symbols in ``[0, 256)``.
    """
    x = as_symbols("a", a)
    y = as_symbols("b", b)
    return _normalised(lcs_length(x, y), len(x), len(y))


@dataclass(eq=False)
class SequenceFeature(PreparedFeature):
    """A sequence feature (chord root motions) with bit-parallel LCS match masks.

    Attributes
    ----------
    flat : np.ndarray [shape=(sum of lengths,), dtype=uint8]
    offsets : np.ndarray [shape=(n + 1,), dtype=int64]
        Sequence ``i`` is ``flat[offsets[i]:offsets[i+1]]`` (missing tracks are empty).
    alphabet : int
    masks, woff : match masks (see :func:`aria_tda._simkernels.build_masks`).
    """

    flat: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint8))
    offsets: np.ndarray = field(default_factory=lambda: np.zeros(1, np.int64))
    alphabet: int = 12
    masks: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), np.uint64))
    woff: np.ndarray = field(default_factory=lambda: np.zeros(1, np.int64))

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    def sequence(self, i: int) -> np.ndarray:
        """Sequence of track ``i`` (empty for a missing track).

        Parameters
        ----------
        i : int
            Row index.
        """
        return self.flat[self.offsets[i] : self.offsets[i + 1]]

    def _group_colsums(
        self,
        idx: np.ndarray,
        colsum: np.ndarray,
        *,
        emat: np.ndarray | None = None,
        weight: float = 0.0,
        k_e: int = 0,
        block: np.ndarray | None = None,
    ) -> None:
        if emat is None:
            emat = np.zeros((0, 0))
            k_e = 0
        if block is None:
            block = np.zeros((0, 0))
        _k.lcs_group_colsums(
            idx, self.masks, self.woff, self.flat, self.offsets,
            colsum, emat, float(weight), int(k_e), block,
        )

    def pair_similarity(self, ii: Any, jj: Any) -> np.ndarray:
        """Similarities of the pairs ``(ii[t], jj[t])`` → ``(n_pairs,)`` float64.

        Parameters
        ----------
        ii, jj : np.ndarray [shape=(n_pairs,), dtype=int]
            Row indices of the two members of each pair.
        """
        ii, jj = self._pair_indices(ii, jj)
        lcs = np.empty(ii.size, dtype=np.int64)
        _k.lcs_len_pairs(self.masks, self.woff, self.flat, self.offsets, ii, jj, lcs)
        lens = self.lengths
        m = np.maximum(lens[ii], lens[jj])
        out = np.where(m == 0, 1.0, lcs / np.maximum(m, 1))
        out[~(self.valid[ii] & self.valid[jj])] = np.nan
        return out

    def take(self, rows: Any) -> SequenceFeature:
        """The same feature re-indexed to ``rows``.

        Parameters
        ----------
        rows : np.ndarray [shape=(N',), dtype=int]
            Rows of this feature, in the new order.
        """
        rows = check_row_indices(rows, self.n)
        seqs = [self.sequence(int(i)) for i in rows]
        return make_sequence_feature(self.spec, seqs, self.valid[rows], self.alphabet)

    def _digest_arrays(self) -> tuple[np.ndarray, ...]:
        return (self.flat, self.offsets, self.valid)


def is_missing(v: Any) -> bool:
    """True for a missing sequence: ``None`` or a float NaN.

    Parameters
    ----------
    v : Any
        A track's value.

    Returns
    -------
    bool
    """
    return v is None or (isinstance(v, float) and v != v)


def prepare_sequence(spec: FeatureSpec, values: Any, *,
                     alphabet: int | None) -> SequenceFeature:
    """A sequence feature prepared for the LCS similarity.

    Parameters
    ----------
    spec : FeatureSpec
        The feature.
    values : sequence
        One 1-D integer sequence per track (:func:`is_missing`: the track lacks it).
    alphabet : int or None
        The number of symbols (at least the largest symbol + 1, at most ``MAX_ALPHABET``);
        ``None``: the largest symbol + 1, at least 12.

    Returns
    -------
    SequenceFeature

    Raises
    ------
    ParameterError
        Values that are not a list of 1-D integer sequences, or a bad ``alphabet``.
    """
    what = f"values[{spec.name}]"
    if isinstance(values, np.ndarray) and values.dtype != object:
        raise ParameterError(expected(
            what, "a list of 1-D integer sequences", f"an array of shape {values.shape}"))
    try:
        items = list(values)
    except TypeError:
        raise ParameterError(expected(
            what, "a list of 1-D integer sequences", type(values).__name__)) from None
    valid = np.ones(len(items), dtype=bool)
    seqs: list[np.ndarray] = []
    for i, v in enumerate(items):
        if is_missing(v):
            valid[i] = False
            seqs.append(np.zeros(0, np.uint8))
        else:
            seqs.append(as_symbols(f"values[{spec.name}][{i}]", v))
    top = max((int(s.max()) + 1 for s in seqs if s.size), default=1)
    if alphabet is None:
        alphabet = max(12, top)
    elif (isinstance(alphabet, bool) or not isinstance(alphabet, numbers.Integral)
          or not top <= alphabet <= MAX_ALPHABET):
        raise ParameterError(expected(
            "alphabet",
            f"an integer in [{top}, {MAX_ALPHABET}] (largest symbol + 1 = {top})", alphabet))
    return make_sequence_feature(spec, seqs, valid, int(alphabet))


def make_sequence_feature(spec: FeatureSpec, seqs: list[np.ndarray], valid: np.ndarray,
                          alphabet: int) -> SequenceFeature:
    """A :class:`SequenceFeature` of already checked symbol sequences (packed, bit masks built).

    Parameters
    ----------
    spec : FeatureSpec
        The feature.
    seqs : list of numpy.ndarray
        One uint8 sequence per track (empty for a missing one).
    valid : numpy.ndarray
        Boolean: the tracks that have the feature.
    alphabet : int
        The number of symbols.

    Returns
    -------
    SequenceFeature
    """
    flat, offsets = _pack(seqs)
    masks, woff = _k.build_masks(flat, offsets, alphabet)
    return SequenceFeature(
        spec, len(seqs), valid, flat=flat, offsets=offsets, alphabet=alphabet,
        masks=masks, woff=woff,
    )
