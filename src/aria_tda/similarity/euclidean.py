r"""``"std_euclidean"``: standardised Euclidean similarity of vector features.

.. math:: \mathrm{sim}(a, b) = \frac{1}{1 + \lVert z_a - z_b \rVert_2},
          \qquad z_{x,k} = \frac{x_k - m_k}{s_k}

``s_k`` is the sample SD (``ddof=1``) of dimension ``k`` over all tracks that have the
feature, fixed once per corpus (:func:`standardization_scale`); zero-variance dimensions are
dropped (scale ``inf``). :class:`VectorFeature` evaluates groups through a Gram matrix
(BLAS) with exact recomputation of near-duplicate pairs (:data:`GRAM_RECOMPUTE_TOL`);
:func:`std_euclidean_similarity` is the exact single-pair formula.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import aria_tda._simkernels as _k
from aria_tda.errors import AriaWarning, DataError, ParameterError, expected
from aria_tda.features.registry import FeatureSpec
from aria_tda.similarity.base import PreparedFeature, check_row_indices

__all__ = [
    "VectorFeature", "as_feature_matrix", "prepare_vector", "standardization_scale",
    "std_euclidean_similarity",
]

#: relative threshold below which a Gram-derived squared distance is recomputed exactly
GRAM_RECOMPUTE_TOL = 1e-6
#: a dimension with ``std <= ZERO_VAR_RTOL * max|x|`` is treated as zero-variance
ZERO_VAR_RTOL = 1e-12
#: Gram elements per batch of groups evaluated at once (bounds the batch's memory: 32 MB)
_BATCH_ELEMENTS = 2**22


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
        raise ParameterError(expected(
            "a, b, scale", "arrays of one length d", (a.shape, b.shape, s.shape)))
    if np.any(~(s > 0)):
        raise ParameterError(expected("scale", "positive values (inf = dropped dimension)", s))
    keep = np.isfinite(s)
    diff = (a[keep] - b[keep]) / s[keep]
    return float(1.0 / (1.0 + np.sqrt(np.sum(diff * diff))))


def as_feature_matrix(name: str, values: Any) -> np.ndarray:
    """A vector feature's values as a float64 ``(n_tracks, dim)`` matrix (1-D: one column).

    Parameters
    ----------
    name : str
        The values' name, for the messages.
    values : array_like
        The values; NaN marks a missing feature.

    Returns
    -------
    numpy.ndarray

    Raises
    ------
    ParameterError
        Not numeric, or not 1-D/2-D.
    DataError
        An infinite value.
    """
    try:
        x = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise ParameterError(expected(
            name, "a numeric array (n_tracks, dim)", type(values).__name__)) from None
    if x.ndim == 1:
        x = x[:, None]
    if x.ndim != 2:
        raise ParameterError(expected(
            name, "an array of shape (n_tracks, dim)", f"shape {x.shape}"))
    if np.isinf(x).any():
        raise DataError(expected(
            name, "finite values or NaN for a missing feature",
            f"{int(np.isinf(x).sum())} infinite values"))
    return x


def standardization_scale(values: Any, *,
                          name: str = "values") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-dimension ``(mean, scale, dropped)`` over the rows without NaN.

    ``scale`` is the sample SD (``ddof=1``); zero-variance dimensions (SD ``<= 1e-12`` times
    their largest absolute value) get ``scale = inf`` and ``dropped = True``.

    Parameters
    ----------
    values : np.ndarray [shape=(N, d) or (N,)]
        One row per track; a row with a NaN is a missing feature.
    name : str
        What to call ``values`` in error messages.

    Raises
    ------
    DataError
        if fewer than two rows have the feature, or a value is infinite.
    """
    x = as_feature_matrix(name, values)
    rows = ~np.isnan(x).any(axis=1)
    if np.count_nonzero(rows) < 2:
        raise DataError(expected(
            name, "at least 2 tracks with the feature to fix its scale",
            f"{np.count_nonzero(rows)}"))
    xv = x[rows]
    mean = xv.mean(axis=0)
    sd = xv.std(axis=0, ddof=1)
    amax = np.abs(xv).max(axis=0)
    dropped = ~(sd > ZERO_VAR_RTOL * amax)
    scale = np.where(dropped, np.inf, sd)
    return mean, scale, dropped


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
        _k.vec_group_colsums(gram, zg, colsum, emat, float(weight), int(k_e), block,
                             GRAM_RECOMPUTE_TOL)

    def _groups_colsums(self, groups: np.ndarray, colsum: np.ndarray) -> None:
        g_n, k = groups.shape
        if self.z.shape[1] == 0:  # every dimension dropped: every pair is 1
            colsum[:] = np.arange(k, dtype=np.float64)
            return
        step = max(1, _BATCH_ELEMENTS // max(1, k * k))  # bounds the (G, k, k) Gram block
        for s in range(0, g_n, step):
            zg = self.z[groups[s : s + step]]  # (G, k, d)
            gram = np.matmul(zg, zg.transpose(0, 2, 1))
            _k.vec_groups_colsums(gram, zg, colsum[s : s + step], GRAM_RECOMPUTE_TOL)

    def pair_similarity(self, ii: Any, jj: Any) -> np.ndarray:
        """Similarities of the pairs ``(ii[t], jj[t])`` → ``(n_pairs,)`` float64.

        Parameters
        ----------
        ii, jj : np.ndarray [shape=(n_pairs,), dtype=int]
            Row indices of the two members of each pair.
        """
        ii, jj = self._pair_indices(ii, jj)
        diff = self.z[ii] - self.z[jj]
        out = 1.0 / (1.0 + np.sqrt(np.einsum("ij,ij->i", diff, diff)))
        out[~(self.valid[ii] & self.valid[jj])] = np.nan
        return out

    def take(self, rows: Any) -> VectorFeature:
        """The same feature re-indexed to ``rows``, keeping the corpus-wide scale.

        Parameters
        ----------
        rows : np.ndarray [shape=(N',), dtype=int]
            Rows of this feature, in the new order.
        """
        rows = check_row_indices(rows, self.n)
        return VectorFeature(
            self.spec, rows.size, self.valid[rows], z=np.ascontiguousarray(self.z[rows]),
            mean=self.mean, scale=self.scale, dropped=self.dropped,
        )

    def _digest_arrays(self) -> tuple[np.ndarray, ...]:
        return (self.z, self.valid, self.scale)


def prepare_vector(spec: FeatureSpec, values: Any, *, scale: Any, mean: Any) -> VectorFeature:
    """A vector feature prepared for the standardised Euclidean similarity.

    Parameters
    ----------
    spec : FeatureSpec
        The feature (its ``dim``, when known, is checked).
    values : array_like
        ``(n_tracks, dim)`` values; a track with any NaN dimension lacks the feature (a
        warning when only some are NaN).
    scale : array_like or None
        Per-dimension scale (positive; ``inf`` drops a dimension); ``None``: the sample SD
        over the tracks (:func:`standardization_scale`).
    mean : array_like or None
        Per-dimension mean, only with ``scale`` (default zeros).

    Returns
    -------
    VectorFeature
    """
    name = f"values[{spec.name}]"
    x = as_feature_matrix(name, values)
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
            raise ParameterError(expected(
                "scale", f"{x.shape[1]} positive values (inf = dropped)", scale_))
        dropped = ~np.isfinite(scale_)
        if mean is None:
            mean_ = np.zeros(x.shape[1])
        else:
            mean_ = np.asarray(mean, dtype=np.float64).reshape(-1)
        if mean_.shape != scale_.shape:
            raise ParameterError(expected("mean", f"{x.shape[1]} values", mean_.shape))
    n_drop = int(dropped.sum())
    if n_drop:
        what = "all" if n_drop == x.shape[1] else f"{n_drop} of {x.shape[1]}"
        warnings.warn(
            f"{spec.name}: {what} dimension(s) have zero variance over the corpus and are "
            "dropped from the standardised distance (they contribute 0)",
            AriaWarning,
            stacklevel=3,
        )
    keep = ~dropped
    z = (x[:, keep] - mean_[keep]) / scale_[keep]
    z[~valid] = 0.0
    return VectorFeature(spec, x.shape[0], valid, z=np.ascontiguousarray(z), mean=mean_,
                         scale=scale_, dropped=dropped)
