r"""Feature similarity functions of the evidence channels (paper appendix "Similarity functions").

Two similarity functions, named by :attr:`aria.features.registry.FeatureSpec.similarity`:

``"std_euclidean"`` — standardised Euclidean similarity (vectors, histograms, scalars)
    .. math:: \mathrm{sim}(a, b) = \frac{1}{1 + \lVert z_a - z_b \rVert_2},
              \qquad z_{x,k} = \frac{x_k - m_k}{s_k}

    ``s_k`` is the sample standard deviation (``ddof=1``, as :func:`scipy.spatial.distance.seuclidean`)
    of dimension ``k`` over **all tracks that have the feature** (NaN rows excluded), fixed
    once per corpus by :func:`prepare_feature` before any query and shared by all queries,
    groups and methods. ``m_k`` (the mean) does not change distances; it only centres the data
    for numerical accuracy. Range ``(0, 1]``; 1 iff the standardised vectors coincide.

    *Zero-variance dimensions.* A dimension whose standard deviation is zero (or below
    ``1e-12`` times its largest absolute value) carries no information: every track has the
    same value, so ``(a_k - b_k) / s_k`` would be ``0 / 0``. Such dimensions are **dropped
    from the distance** (their scale is stored as ``inf``, i.e. they contribute 0) and an
    :class:`~aria.errors.AriaWarning` says how many. If every dimension is dropped the feature
    is constant and every pair has similarity 1.

``"chord_lcs"`` — normalised longest common subsequence of chord root-motion sequences
    .. math:: \mathrm{sim}(a, b) = \frac{\mathrm{LCS}(a, b)}{\max(|a|, |b|)},
              \qquad \mathrm{sim}(\varnothing, \varnothing) = 1

    over root-motion intervals mod 12 (so transposing a progression does not change its
    sequence: the measure is transposition invariant). Range ``[0, 1]``.

    *Why ``max``.* ``1 - LCS/max(|a|, |b|)`` is a metric on sequences (Bakkelund 2009,
    "An LCS-based string metric"), so similarities are mutually consistent (triangle
    inequality), whereas the Dice form ``2 LCS / (|a| + |b|)`` is not a metric and the
    ``min`` form scores any progression contained in a longer one as identical (1). With
    ``max`` a short progression that merely occurs inside a long one is *not* called similar,
    which is what a harmony-homogeneity measure wants. Equal lengths give ``LCS / n`` in all
    three forms.

    *Empty sequences.* A track whose chord recogniser found a single chord (or none) has an
    empty root-motion sequence: a legitimate value ("no progression"). Two empty sequences
    are identical (similarity 1); an empty and a non-empty one share nothing (similarity 0).
    A *missing* feature (the track was not analysed) is ``None`` and is different: it makes
    the track unavailable (NaN similarity), see :attr:`PreparedFeature.valid`.

    Symbols are small non-negative integers (``0..11`` for root motions; any alphabet below
    256 is accepted). LCS uses the bit-parallel algorithm of Allison & Dix (1986) / Hyyrö
    (2004) with match masks precomputed once per sequence (:mod:`aria._simkernels`); the
    dynamic program :func:`lcs_length_reference` is the exact reference.

Conventions
-----------
- ``values`` for a vector feature: array ``(N, d)`` (``(N,)`` means ``d = 1``), one row per
  track; a row with any NaN is a missing feature. ``inf`` is an error.
- ``values`` for a sequence feature: a length-``N`` sequence of 1-D integer arrays (or lists)
  or ``None`` for missing.
- ``PreparedFeature.pairwise(idx)`` returns the ``(k, k)`` similarity matrix of the tracks
  ``idx`` (row indices into ``values``), diagonal = self-similarity (1 where the feature is
  present), NaN in rows/columns of tracks without the feature.

References
----------
Allison, L., Dix, T. I. (1986). A bit-string longest-common-subsequence algorithm. IPL 23.
Hyyrö, H. (2004). Bit-parallel LCS-length computation revisited. AWOCA.
Bakkelund, D. (2009). An LCS-based string metric. University of Oslo.
Mardia, K. V., Kent, J. T., Bibby, J. M. (1979). Multivariate Analysis. Academic Press.
"""

from __future__ import annotations

import hashlib
import numbers
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from aria import _simkernels as _k
from aria.errors import AriaWarning, DataError, ParameterError, expected
from aria.features.registry import FeatureSpec

__all__ = [
    "PreparedFeature",
    "SequenceFeature",
    "VectorFeature",
    "lcs_length",
    "lcs_length_reference",
    "lcs_similarity",
    "lcs_similarity_reference",
    "pairwise_reference",
    "prepare_channels",
    "prepare_feature",
    "standardization_scale",
    "std_euclidean_similarity",
]

#: relative threshold below which a Gram-derived squared distance is recomputed exactly
GRAM_RECOMPUTE_TOL = 1e-6
#: a dimension with ``std <= ZERO_VAR_RTOL * max|x|`` is treated as zero-variance
ZERO_VAR_RTOL = 1e-12
MAX_ALPHABET = 256


# --------------------------------------------------------------------------------------
# single-pair functions (exact)
# --------------------------------------------------------------------------------------


def std_euclidean_similarity(a: Any, b: Any, scale: Any) -> float:
    r"""Standardised Euclidean similarity of two feature vectors (exact reference).

    Parameters
    ----------
    a, b : np.ndarray [shape=(d,)]
        Raw (unstandardised) feature vectors.
    scale : np.ndarray [shape=(d,)]
        Per-dimension standard deviations ``s_k`` (from :func:`standardization_scale`);
        ``inf`` marks a dropped (zero-variance) dimension.

    Returns
    -------
    float
        :math:`1 / (1 + \sqrt{\sum_k ((a_k - b_k)/s_k)^2})`, NaN if ``a`` or ``b`` has a NaN.
    """
    a = np.asarray(a, dtype=np.float64).reshape(-1)
    b = np.asarray(b, dtype=np.float64).reshape(-1)
    s = np.asarray(scale, dtype=np.float64).reshape(-1)
    if not (a.shape == b.shape == s.shape):
        raise ParameterError(expected("a, b, scale", "arrays of one length d", (a.shape, b.shape, s.shape)))
    if np.any(~(s > 0)):
        raise ParameterError(expected("scale", "positive values (inf = dropped dimension)", s))
    keep = np.isfinite(s)
    diff = (a[keep] - b[keep]) / s[keep]
    return float(1.0 / (1.0 + np.sqrt(np.sum(diff * diff))))


def _as_symbols(name: str, seq: Any) -> np.ndarray:
    arr = np.asarray(seq)
    if arr.ndim != 1:
        raise ParameterError(expected(name, "a 1-D integer sequence", f"an array of shape {arr.shape}"))
    if arr.size == 0:
        return np.zeros(0, dtype=np.uint8)
    if arr.dtype.kind == "f" and np.all(np.isfinite(arr)) and np.all(arr == np.round(arr)):
        arr = arr.astype(np.int64)
    if arr.dtype.kind not in "iu":
        raise ParameterError(expected(name, "integer symbols", f"dtype {arr.dtype}"))
    if arr.min() < 0 or arr.max() >= MAX_ALPHABET:
        raise ParameterError(expected(name, f"symbols in [0, {MAX_ALPHABET})", f"range [{arr.min()}, {arr.max()}]"))
    return arr.astype(np.uint8)


def lcs_length_reference(a: Any, b: Any) -> int:
    """Length of the longest common subsequence by the textbook O(|a||b|) dynamic program."""
    x = _as_symbols("a", a)
    y = _as_symbols("b", b)
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
    """Normalised LCS similarity ``LCS / max(|a|, |b|)`` (1 for two empty sequences), by DP."""
    return _normalised(lcs_length_reference(a, b), len(_as_symbols("a", a)), len(_as_symbols("b", b)))


def _pack(seqs: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    lens = np.fromiter((len(s) for s in seqs), dtype=np.int64, count=len(seqs))
    offsets = np.zeros(len(seqs) + 1, dtype=np.int64)
    np.cumsum(lens, out=offsets[1:])
    flat = np.concatenate(seqs).astype(np.uint8) if len(seqs) and offsets[-1] else np.zeros(0, np.uint8)
    return flat, offsets


def lcs_length(a: Any, b: Any) -> int:
    """Length of the longest common subsequence, bit-parallel (any lengths)."""
    x = _as_symbols("a", a)
    y = _as_symbols("b", b)
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
    """
    x = _as_symbols("a", a)
    y = _as_symbols("b", b)
    return _normalised(lcs_length(x, y), len(x), len(y))


# --------------------------------------------------------------------------------------
# prepared features
# --------------------------------------------------------------------------------------


def _check_idx(idx: Any, n: int) -> np.ndarray:
    arr = np.asarray(idx)
    if arr.ndim != 1 or (arr.size and arr.dtype.kind not in "iu"):
        raise ParameterError(expected("idx", "a 1-D array of integer row indices", f"shape {arr.shape}, dtype {arr.dtype}"))
    arr = arr.astype(np.int64, copy=False)
    if arr.size and (arr.min() < 0 or arr.max() >= n):
        raise ParameterError(expected("idx", f"row indices in [0, {n})", f"range [{arr.min()}, {arr.max()}]"))
    return np.ascontiguousarray(arr)


@dataclass(eq=False)
class PreparedFeature:
    """A feature ready for fast pairwise similarity (base class; see :func:`prepare_feature`).

    Attributes
    ----------
    spec : FeatureSpec
    n : int
        Number of tracks (rows).
    valid : np.ndarray [shape=(n,), dtype=bool]
        Tracks that have the feature.
    """

    spec: FeatureSpec
    n: int
    valid: np.ndarray
    _digest: str | None = field(default=None, init=False, repr=False)

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def channel(self) -> str:
        return self.spec.channel

    @property
    def n_missing(self) -> int:
        return int(self.n - np.count_nonzero(self.valid))

    def pairwise(self, idx: Any) -> np.ndarray:
        """Similarity matrix ``(k, k)`` float64 of the tracks ``idx`` (fast path)."""
        idx = _check_idx(idx, self.n)
        k = idx.size
        block = np.empty((k, k), dtype=np.float64)
        if k:
            colsum = np.empty(k)
            self._group_colsums(idx, colsum, block=block)
            np.fill_diagonal(block, 1.0)
            bad = ~self.valid[idx]
            block[bad, :] = np.nan
            block[:, bad] = np.nan
        return block

    def pair_similarity(self, ii: Any, jj: Any) -> np.ndarray:
        """Similarities of the pairs ``(ii[t], jj[t])`` → ``(n_pairs,)`` float64."""
        raise NotImplementedError

    def take(self, rows: Any) -> PreparedFeature:
        """The same feature re-indexed to ``rows`` (e.g. to S_track's row order), **keeping
        the corpus-wide scale** (it is not re-estimated on the subset)."""
        raise NotImplementedError

    def group_sum(self, idx: Any) -> float:
        """Sum of ``sim`` over all unordered pairs of the group ``idx``."""
        idx = _check_idx(idx, self.n)
        colsum = np.zeros(idx.size)
        self._group_colsums(idx, colsum)
        return float(colsum.sum())

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
        """Kernel entry: ``colsum[j] = Σ_{i<j} sim(idx_i, idx_j)``.

        Optionally ``emat[j, i] += weight * sim`` for ``i < j < k_e`` (evidence accumulation,
        lower triangle) and ``block`` (k, k) filled with the similarities.
        """
        raise NotImplementedError

    @property
    def digest(self) -> str:
        """Content hash of the prepared data (values, scale), used to check a stored null."""
        if self._digest is None:
            h = hashlib.blake2b(digest_size=16)
            h.update(f"{self.spec.name}|{self.spec.similarity}|{self.n}".encode())
            for arr in self._digest_arrays():
                h.update(np.ascontiguousarray(arr).view(np.uint8).reshape(-1).data)
            self._digest = h.hexdigest()
        return self._digest

    def _digest_arrays(self) -> tuple[np.ndarray, ...]:
        raise NotImplementedError


@dataclass(eq=False)
class VectorFeature(PreparedFeature):
    r"""A vector feature standardised with a fixed per-dimension scale.

    Attributes
    ----------
    z : np.ndarray [shape=(n, d_eff), dtype=float64]
        ``(x - mean) / scale`` over the kept dimensions; rows of missing tracks are 0.
    mean, scale : np.ndarray [shape=(d,)]
        Corpus centre and standard deviation (``inf`` for dropped dimensions).
    dropped : np.ndarray [shape=(d,), dtype=bool]
        Zero-variance dimensions excluded from the distance.
    """

    z: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    mean: np.ndarray = field(default_factory=lambda: np.zeros(0))
    scale: np.ndarray = field(default_factory=lambda: np.zeros(0))
    dropped: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))

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
        k = idx.size
        if emat is None:
            emat = np.zeros((0, 0))
            k_e = 0
        if block is None:
            block = np.zeros((0, 0))
        zg = self.z[idx]
        if zg.shape[1] == 0:  # every dimension dropped: the feature is constant
            colsum[:k] = np.arange(k, dtype=np.float64)
            if k_e:
                emat[:k_e, :k_e] += weight * np.tril(np.ones((k_e, k_e)), -1)
            if block.shape[0] == k:
                block[:] = 1.0
            return
        gram = zg @ zg.T  # BLAS syrk
        _k.vec_group_colsums(gram, zg, colsum, emat, float(weight), int(k_e), block, GRAM_RECOMPUTE_TOL)

    def pair_similarity(self, ii: Any, jj: Any) -> np.ndarray:
        ii = _check_idx(ii, self.n)
        jj = _check_idx(jj, self.n)
        if ii.shape != jj.shape:
            raise ParameterError(expected("ii, jj", "index arrays of one length", (ii.size, jj.size)))
        diff = self.z[ii] - self.z[jj]
        out = 1.0 / (1.0 + np.sqrt(np.einsum("ij,ij->i", diff, diff)))
        out[~(self.valid[ii] & self.valid[jj])] = np.nan
        return out

    def take(self, rows: Any) -> VectorFeature:
        rows = _check_idx(rows, self.n)
        return VectorFeature(
            self.spec, rows.size, self.valid[rows], z=np.ascontiguousarray(self.z[rows]),
            mean=self.mean, scale=self.scale, dropped=self.dropped,
        )

    def _digest_arrays(self) -> tuple[np.ndarray, ...]:
        return (self.z, self.valid, self.scale)


@dataclass(eq=False)
class SequenceFeature(PreparedFeature):
    """A sequence feature (chord root motions) with bit-parallel LCS match masks.

    Attributes
    ----------
    flat : np.ndarray [shape=(sum of lengths,), dtype=uint8]
    offsets : np.ndarray [shape=(n + 1,), dtype=int64]
        Sequence ``i`` is ``flat[offsets[i]:offsets[i+1]]`` (missing tracks are empty).
    alphabet : int
    masks, woff : match masks (see :func:`aria._simkernels.build_masks`).
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
        ii = _check_idx(ii, self.n)
        jj = _check_idx(jj, self.n)
        if ii.shape != jj.shape:
            raise ParameterError(expected("ii, jj", "index arrays of one length", (ii.size, jj.size)))
        lcs = np.empty(ii.size, dtype=np.int64)
        _k.lcs_len_pairs(self.masks, self.woff, self.flat, self.offsets, ii, jj, lcs)
        lens = self.lengths
        m = np.maximum(lens[ii], lens[jj])
        out = np.where(m == 0, 1.0, lcs / np.maximum(m, 1))
        out[~(self.valid[ii] & self.valid[jj])] = np.nan
        return out

    def take(self, rows: Any) -> SequenceFeature:
        rows = _check_idx(rows, self.n)
        seqs = [self.sequence(int(i)) for i in rows]
        return _make_sequence_feature(self.spec, seqs, self.valid[rows], self.alphabet)

    def _digest_arrays(self) -> tuple[np.ndarray, ...]:
        return (self.flat, self.offsets, self.valid)


# --------------------------------------------------------------------------------------
# preparation
# --------------------------------------------------------------------------------------


def standardization_scale(values: Any, *, name: str = "values") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-dimension ``(mean, scale, dropped)`` over the rows without NaN.

    ``scale`` is the sample SD (``ddof=1``); zero-variance dimensions (SD ``<= 1e-12`` times
    their largest absolute value) get ``scale = inf`` and ``dropped = True``.

    Raises
    ------
    DataError
        if fewer than two rows have the feature, or a value is infinite.
    """
    x = _as_matrix(name, values)
    rows = ~np.isnan(x).any(axis=1)
    if np.count_nonzero(rows) < 2:
        raise DataError(expected(name, "at least 2 tracks with the feature to fix its scale", f"{np.count_nonzero(rows)}"))
    xv = x[rows]
    mean = xv.mean(axis=0)
    sd = xv.std(axis=0, ddof=1)
    amax = np.abs(xv).max(axis=0)
    dropped = ~(sd > ZERO_VAR_RTOL * amax)
    scale = np.where(dropped, np.inf, sd)
    return mean, scale, dropped


def _as_matrix(name: str, values: Any) -> np.ndarray:
    try:
        x = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise ParameterError(expected(name, "a numeric array (n_tracks, dim)", type(values).__name__)) from None
    if x.ndim == 1:
        x = x[:, None]
    if x.ndim != 2:
        raise ParameterError(expected(name, "an array of shape (n_tracks, dim)", f"shape {x.shape}"))
    if np.isinf(x).any():
        raise DataError(expected(name, "finite values or NaN for a missing feature", f"{int(np.isinf(x).sum())} infinite values"))
    return x


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
        return _prepare_vector(spec, values, scale=scale, mean=mean)
    if spec.kind == "sequence" and spec.similarity == "chord_lcs":
        return _prepare_sequence(spec, values, alphabet=alphabet)
    raise ParameterError(expected("spec", "kind/similarity 'vector'/'std_euclidean' or 'sequence'/'chord_lcs'", f"{spec.kind}/{spec.similarity}"))


def _prepare_vector(spec: FeatureSpec, values: Any, *, scale: Any, mean: Any) -> VectorFeature:
    name = f"values[{spec.name}]"
    x = _as_matrix(name, values)
    if spec.dim is not None and x.shape[1] != spec.dim:
        raise DataError(expected(name, f"{spec.dim} columns (registry dim)", f"{x.shape[1]}"))
    nan = np.isnan(x)
    partial = nan.any(axis=1) & ~nan.all(axis=1)
    if partial.any():
        warnings.warn(
            f"{spec.name}: {int(partial.sum())} track(s) have some NaN dimensions; "
            "treating the whole feature as missing for them",
            AriaWarning,
            stacklevel=3,
        )
    valid = ~nan.any(axis=1)
    if scale is None:
        if mean is not None:
            raise ParameterError(expected("mean", "None unless scale is given", "an array"))
        mean_, scale_, dropped = standardization_scale(x, name=name)
    else:
        scale_ = np.asarray(scale, dtype=np.float64).reshape(-1)
        if scale_.shape != (x.shape[1],) or np.any(~(scale_ > 0)):
            raise ParameterError(expected("scale", f"{x.shape[1]} positive values (inf = dropped)", scale_))
        dropped = ~np.isfinite(scale_)
        mean_ = np.zeros(x.shape[1]) if mean is None else np.asarray(mean, dtype=np.float64).reshape(-1)
        if mean_.shape != scale_.shape:
            raise ParameterError(expected("mean", f"{x.shape[1]} values", mean_.shape))
    n_drop = int(dropped.sum())
    if n_drop:
        what = "all" if n_drop == x.shape[1] else f"{n_drop} of {x.shape[1]}"
        warnings.warn(
            f"{spec.name}: {what} dimension(s) have zero variance over the corpus and are dropped "
            "from the standardised distance (they contribute 0)",
            AriaWarning,
            stacklevel=3,
        )
    keep = ~dropped
    z = (x[:, keep] - mean_[keep]) / scale_[keep]
    z[~valid] = 0.0
    return VectorFeature(spec, x.shape[0], valid, z=np.ascontiguousarray(z), mean=mean_, scale=scale_, dropped=dropped)


def _is_missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and v != v)


def _prepare_sequence(spec: FeatureSpec, values: Any, *, alphabet: int | None) -> SequenceFeature:
    if isinstance(values, np.ndarray) and values.dtype != object:
        raise ParameterError(expected(f"values[{spec.name}]", "a list of 1-D integer sequences", f"an array of shape {values.shape}"))
    try:
        items = list(values)
    except TypeError:
        raise ParameterError(expected(f"values[{spec.name}]", "a list of 1-D integer sequences", type(values).__name__)) from None
    valid = np.ones(len(items), dtype=bool)
    seqs: list[np.ndarray] = []
    for i, v in enumerate(items):
        if _is_missing(v):
            valid[i] = False
            seqs.append(np.zeros(0, np.uint8))
        else:
            seqs.append(_as_symbols(f"values[{spec.name}][{i}]", v))
    top = max((int(s.max()) + 1 for s in seqs if s.size), default=1)
    if alphabet is None:
        alphabet = max(12, top)
    elif isinstance(alphabet, bool) or not isinstance(alphabet, numbers.Integral) or not top <= alphabet <= MAX_ALPHABET:
        raise ParameterError(expected("alphabet", f"an integer in [{top}, {MAX_ALPHABET}] (largest symbol + 1 = {top})", alphabet))
    return _make_sequence_feature(spec, seqs, valid, int(alphabet))


def _make_sequence_feature(spec: FeatureSpec, seqs: list[np.ndarray], valid: np.ndarray, alphabet: int) -> SequenceFeature:
    flat, offsets = _pack(seqs)
    masks, woff = _k.build_masks(flat, offsets, alphabet)
    return SequenceFeature(
        spec, len(seqs), valid, flat=flat, offsets=offsets, alphabet=alphabet,
        masks=masks, woff=woff,
    )


def prepare_channels(
    store: Any,
    *,
    rows: Any = None,
    channels: Sequence[str] | None = None,
) -> dict[str, list[PreparedFeature]]:
    """Prepare every registry feature a feature store holds, grouped by evidence channel.

    Scales are fixed over **all tracks of the store** that have the feature (the corpus),
    then the features are re-indexed to ``rows`` (e.g. the store rows of S_track's tracks,
    in S_track's order) with :meth:`PreparedFeature.take`, so the scale does not depend on
    which tracks a score matrix covers.

    Parameters
    ----------
    store : aria.features.store.FeatureStore
        Anything with ``modality``, ``feature_names``, ``vectors(name)``, ``sequences(name)``.
    rows : np.ndarray [shape=(N,), dtype=int], optional
        Store rows in the order of S_track's rows (default: the store's order).
    channels : sequence of str, optional
        Restrict to these channels (default: every channel of the modality).

    Returns
    -------
    dict[str, list[PreparedFeature]]
        Channel → its features in registry order; registry features absent from the store
        are skipped with an :class:`~aria.errors.AriaWarning`, and a channel with none is
        left out.
    """
    from aria.features.registry import channels as registry_channels

    wanted = registry_channels(store.modality)
    if channels is not None:
        unknown = [c for c in channels if c not in wanted]
        if unknown:
            raise ParameterError(expected("channels", "channels of " + repr(store.modality) + ": " + ", ".join(wanted), unknown))
        wanted = {c: wanted[c] for c in channels}
    have = set(store.feature_names)
    out: dict[str, list[PreparedFeature]] = {}
    for channel, specs in wanted.items():
        missing = [s.name for s in specs if s.name not in have]
        if missing:
            warnings.warn(
                f"channel {channel!r}: feature(s) {missing} not in the store; the channel uses the others",
                AriaWarning,
                stacklevel=2,
            )
        feats = []
        for spec in specs:
            if spec.name not in have:
                continue
            values = store.vectors(spec.name) if spec.kind == "vector" else store.sequences(spec.name)
            pf = prepare_feature(spec, values)
            feats.append(pf if rows is None else pf.take(rows))
        if feats:
            out[channel] = feats
    if not out:
        raise DataError(expected("store", f"at least one {store.modality} registry feature", sorted(have)))
    return out


# --------------------------------------------------------------------------------------
# exact reference for a whole group
# --------------------------------------------------------------------------------------


def pairwise_reference(pf: PreparedFeature, idx: Any, values: Any) -> np.ndarray:
    """Exact ``(k, k)`` similarity matrix from the raw ``values``, pair by pair.

    Uses :func:`std_euclidean_similarity` with ``pf.scale`` or :func:`lcs_similarity_reference`
    (dynamic programming). For tests; O(k² d) or O(k² L²) in Python.
    """
    idx = _check_idx(idx, pf.n)
    k = idx.size
    out = np.full((k, k), np.nan)
    if isinstance(pf, VectorFeature):
        x = _as_matrix("values", values)

        def sim(i: int, j: int) -> float:
            return std_euclidean_similarity(x[i], x[j], pf.scale)
    elif isinstance(pf, SequenceFeature):
        items = list(values)

        def sim(i: int, j: int) -> float:
            return lcs_similarity_reference(items[i], items[j])
    else:  # pragma: no cover - defensive
        raise ParameterError(expected("pf", "a VectorFeature or SequenceFeature", type(pf).__name__))
    for a in range(k):
        for b in range(a, k):  # symmetric: compute once, mirror
            if pf.valid[idx[a]] and pf.valid[idx[b]]:
                out[a, b] = out[b, a] = sim(int(idx[a]), int(idx[b]))
    return out
