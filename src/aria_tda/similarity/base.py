"""The prepared-feature interface every similarity function implements.

A :class:`PreparedFeature` holds one feature of a corpus in the form its similarity function
needs (standardised vectors, or packed sequences with match masks) and evaluates that
similarity over groups of tracks: :meth:`PreparedFeature.pairwise` (a ``(k, k)`` block),
:meth:`PreparedFeature.pair_similarity` (a list of pairs), :meth:`PreparedFeature.group_sum`,
and the kernel entry ``_group_colsums`` used by :mod:`aria_tda.homogeneity`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from aria_tda.errors import ParameterError, expected
from aria_tda.features.registry import FeatureSpec

__all__ = ["PreparedFeature", "check_row_indices"]


def check_row_indices(idx: Any, n: int) -> np.ndarray:
    """Row indices of a feature's tracks, checked: 1-D integers in ``[0, n)``.

    Parameters
    ----------
    idx : array_like
        The indices.
    n : int
        The number of tracks.

    Returns
    -------
    numpy.ndarray
        Contiguous int64.

    Raises
    ------
    ParameterError
        Not a 1-D integer array, or an index out of range.
    """
    arr = np.asarray(idx)
    if arr.ndim != 1 or (arr.size and arr.dtype.kind not in "iu"):
        raise ParameterError(expected(
            "idx", "a 1-D array of integer row indices", f"shape {arr.shape}, dtype {arr.dtype}"))
    arr = arr.astype(np.int64, copy=False)
    if arr.size and (arr.min() < 0 or arr.max() >= n):
        raise ParameterError(expected(
            "idx", f"row indices in [0, {n})", f"range [{arr.min()}, {arr.max()}]"))
    return np.ascontiguousarray(arr)


@dataclass(eq=False)
class PreparedFeature:
    """A feature ready for fast pairwise similarity (base class; see
    :func:`aria_tda.similarity.prepare_feature`).

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
        """Similarity matrix ``(k, k)`` float64 of the tracks ``idx`` (fast path).

        Parameters
        ----------
        idx : np.ndarray [shape=(k,), dtype=int]
            Row indices.
        """
        idx = check_row_indices(idx, self.n)
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
        """Similarities of the pairs ``(ii[t], jj[t])`` → ``(n_pairs,)`` float64.

        Parameters
        ----------
        ii, jj : np.ndarray [shape=(n_pairs,), dtype=int]
            Row indices of the two members of each pair.
        """
        raise NotImplementedError

    def _pair_indices(self, ii: Any, jj: Any) -> tuple[np.ndarray, np.ndarray]:
        """Checked row indices of the two members of each pair (one length, in range)."""
        ii = check_row_indices(ii, self.n)
        jj = check_row_indices(jj, self.n)
        if ii.shape != jj.shape:
            raise ParameterError(expected(
                "ii, jj", "index arrays of one length", (ii.size, jj.size)))
        return ii, jj

    def take(self, rows: Any) -> PreparedFeature:
        """The same feature re-indexed to ``rows`` (e.g. to S_track's row order), **keeping
        the corpus-wide scale** (it is not re-estimated on the subset).

        Parameters
        ----------
        rows : np.ndarray [shape=(N',), dtype=int]
            Rows of this feature, in the new order.
        """
        raise NotImplementedError

    def group_sum(self, idx: Any) -> float:
        """Sum of ``sim`` over all unordered pairs of the group ``idx``.

        Parameters
        ----------
        idx : np.ndarray [shape=(k,), dtype=int]
            Row indices of the group.
        """
        idx = check_row_indices(idx, self.n)
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

    def _groups_colsums(self, groups: np.ndarray, colsum: np.ndarray) -> None:
        """Kernel entry for a batch: ``colsum[g, j] = Σ_{i<j} sim(groups[g, i], groups[g, j])``
        (``groups`` (G, k), ``colsum`` (G, k)); one group at a time unless a subclass batches."""
        for g in range(groups.shape[0]):
            self._group_colsums(groups[g], colsum[g])

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
