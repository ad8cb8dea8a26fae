r"""Top-K concentration: how much the queries' top-K sets coincide (the paper's collapse).

The paper calls a setting collapsed when it "retrieves nearly the same tracks for every query".
κ, r₁ and p (:mod:`aria_tda.diagnostics`) describe the whole score matrix; this module measures
the top-K sets themselves, where homogeneity looks.

Conventions
-----------
``S`` is ``(M, T)``: rows are training segments (or tracks), columns queries. For every query
``j`` its top-K set :math:`A_K(j)` holds the ``K`` rows with the largest scores — larger =
more influential, the signed scores as given (the convention of
:func:`aria_tda.homogeneity.top_k_groups`); equal scores go to the lower row index, so every
result is deterministic and the sets of all ``K`` are nested. Let
:math:`c_r(K) = |\{j : r \in A_K(j)\}|` (how many queries have row ``r`` in their top-K).

- **distinct ratio** :math:`|\bigcup_j A_K(j)| / (T K)` — quanda's ``TopKCardinalityMetric`` at
  ``top_k=K``; 1 when no two queries share a row, :math:`1/T` when every query has the same
  set. Its ceiling depends on the sizes (at most :math:`\min(1, M/(TK))`), so the verdict does
  not use it.
- **mean pairwise overlap** :math:`\frac{2}{T(T-1)} \sum_{j<j'} |A_K(j) \cap A_K(j')| / K
  = \sum_r c_r (c_r - 1) \,/\, (K\,T(T-1))` — exact, from the row counts (never the
  :math:`O(T^2 K)` pairs). 1 when every query has the same set; its chance level (independent
  random sets) is :math:`K/M`, and :meth:`Concentration.overlap_excess` is the chance-corrected
  :math:`(o - K/M) / (1 - K/M)`.
- **top-1 share** — the share of queries whose top-1 row is the most frequent top-1 row
  (``top1_row``; ties: the lower row index); chance level about :math:`1/M`.

``K`` larger than ``M`` is clipped to ``M`` (with an :class:`~aria_tda.errors.AriaWarning`).
A constant query column ranks nothing: its top-K are the first K rows by the tie rule, and it
is counted like any other column (as quanda does).

How it is computed
------------------
:class:`TopKAccumulator` keeps, per query, the running ``K_max`` best (score, row) pairs and sees
row blocks in increasing row order — NumPy blocks through
:func:`~aria_tda.diagnostics.topk_update.topk_update` (one vectorised comparison per score once a
column holds ``K_max``; the same sets as the numba heaps of
:func:`aria_tda.homogeneity.top_k_groups`, without loading numba for a diagnosis), torch blocks
with a stable sort on their own device. Memory is :math:`O(T K_{max})` plus one
block; separately processed row ranges (Dask) are combined with :meth:`TopKAccumulator.merge`.
It is an observer of the diagnostics pass (:func:`aria_tda.diagnostics.diagnose` with ``topk=``),
so the measure costs no second read. :func:`topk_concentration` streams any score input alone;
with ``groups`` (a segment → track map) it ranks tracks by the mean of their segments' scores
— in every query column the order of the study's z-score aggregation
(:mod:`aria_tda.scores.aggregation`: a per-column positive affine map of the mean), memory
:math:`O(N T)` for ``N`` tracks. :func:`topk_concentration_reference` is the exact in-memory
twin (a full sort per column and explicit pairwise intersections).

How it relates to κ, r₁ and p
-----------------------------
The measure depends only on the rankings inside each column, so it is invariant to any
per-query increasing map: an offset-dominated matrix (p ≈ 1) ranks exactly as its residual
does and is *not* concentrated. κ and r₁ see the whole column; a few dominant training rows
whose sign flips with the query's class make every query's top-1 one of the same rows while
κ stays low (the correlation is carried by the thousands of other rows) and v₁ is not constant
— the case :mod:`aria_tda.verdict` calls collapsed through this measure. A rank-1 matrix with a
constant v₁ is concentrated and collapsed by both.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from aria_tda._checks import check_choice, check_int, check_int_list
from aria_tda.diagnostics.dependence import (
    SAMPLE_QUERIES,
    SAMPLE_ROWS,
    dependence_from_top,
    dependence_k,
    query_dependence_reference,
    row_name,
    sample_indices,
)
from aria_tda.diagnostics.topk_measures import (
    LEVELS,
    Concentration,
    clip_ks,
    concentration_from_groups,
    measures_from_ranked,
)
from aria_tda.diagnostics.topk_update import topk_update, work_bytes
from aria_tda.errors import DataError, ParameterError, expected
from aria_tda.scores.readers import as_source
from aria_tda.scores.stats import locate_nonfinite

__all__ = [
    "LEVELS",
    "NUMBA_MIN_ENTRIES",
    "Concentration",
    "TopKAccumulator",
    "concentration_from_groups",
    "topk_concentration",
]

# ----------------------------------------------------------------------------------------
# the streaming accumulator
# ----------------------------------------------------------------------------------------
def _is_torch(x: Any) -> bool:
    return type(x).__module__.startswith("torch")


#: From this many kept (score, row) pairs (``K_max x T``) on, blocks go to the compiled kernel
#: (:func:`aria_tda._simkernels.topk_stream_update`, numba); below it, to the NumPy one
#: (:func:`~aria_tda.diagnostics.topk_update.topk_update`), so a small diagnosis never loads numba.
NUMBA_MIN_ENTRIES = 50_000


class TopKAccumulator:
    r"""Per-query running top-``K_max`` rows over row blocks (see the module docstring).

    Parameters
    ----------
    n_cols : int
        ``T``, the query columns of every block.
    ks : sequence of int
        The ``K`` to measure (``K_max = max(ks)``).
    n_rows : int, optional
        ``M``; default: the end of the last row block seen.

    Notes
    -----
    Blocks must arrive in increasing row order (ranges processed elsewhere are combined with
    :meth:`merge`). A block buffer may be reused by the caller: nothing of it is kept.
    """

    def __init__(self, n_cols: int, ks: Sequence[int], *, n_rows: int | None = None) -> None:
        self.n_cols = check_int("n_cols", n_cols, min_value=1)
        self.ks = tuple(check_int_list("ks", ks, min_value=1))
        self.n_rows = None if n_rows is None else check_int("n_rows", n_rows, min_value=1)
        self.k_max = self.ks[-1] if self.n_rows is None else min(self.ks[-1], self.n_rows)
        self.next_row = 0
        self.end = 0
        self._hv: np.ndarray | None = None  # (T, K_max) kept scores, best first (NumPy path)
        self._hi: np.ndarray | None = None  # their rows
        self._count: np.ndarray | None = None
        self._nan: np.ndarray | None = None
        self._mask: np.ndarray | None = None  # the compiled kernel's pool mask (all rows)
        # which kernel owns the state: the compiled one keeps heaps, the NumPy one best first
        # (None: not decided; a state set from sorted candidates stays with NumPy)
        self._compiled: bool | None = None
        self._tv: Any = None  # (K', T) sorted values / rows (torch path)
        self._ti: Any = None
        # the score sample of the query-dependence measures (rows drawn once, seeded)
        self._srows = (np.zeros(0, dtype=np.int64) if self.n_rows is None
                       else sample_indices(self.n_rows, SAMPLE_ROWS, salt=0))
        self._scols = sample_indices(self.n_cols, SAMPLE_QUERIES, salt=1)
        self._sample = np.full((self._srows.size, self._scols.size), np.nan, np.float32)

    # -- updates -----------------------------------------------------------------------
    def memory_bytes(self, rows: int) -> int:
        """Peak bytes the accumulator holds while it takes blocks of ``rows`` rows.

        The kept pairs (float64 scores and int64 rows, ``T x K_max``), the per-column counts,
        the score sample, and the update's per-block buffers
        (:func:`~aria_tda.diagnostics.topk_update.work_bytes`).

        Parameters
        ----------
        rows : int
            Rows per block.
        """
        rows = check_int("rows", rows, min_value=1)
        heaps = 16 * self.n_cols * self.k_max + 16 * self.n_cols
        per_block = 16 * self.n_cols + work_bytes(self.n_cols, self.k_max, rows)
        return heaps + per_block + self._sample.nbytes

    def update(self, block: Any, row0: int) -> None:
        """Add rows ``row0 .. row0 + len(block) - 1``.

        Parameters
        ----------
        block : numpy.ndarray or torch.Tensor [shape=(rows, T)]
            float16/32/64 (float16 and integers are compared in float32/float64).
        row0 : int
            The row of ``S`` the block starts at (not before the end of the previous block).
        """
        shape = tuple(block.shape)
        if len(shape) != 2 or shape[1] != self.n_cols:
            raise ParameterError(expected("block", f"a (rows, {self.n_cols}) block",
                                          f"shape {shape}"))
        row0 = int(row0)
        if row0 < self.next_row:
            raise ParameterError(expected(
                "row0", f"blocks in increasing row order (at least {self.next_row}; combine "
                "separate row ranges with merge())", row0))
        n = shape[0]
        if n == 0:
            return
        self._take_sample(block, row0, n)
        if _is_torch(block):
            self._update_torch(block, row0)
        else:
            self._update_numpy(np.asarray(block), row0)
        self.next_row = row0 + n
        self.end = max(self.end, row0 + n)

    def _take_sample(self, block: Any, row0: int, n: int) -> None:
        """Copy the sampled rows of the block (the sampled queries' columns)."""
        lo, hi = np.searchsorted(self._srows, [row0, row0 + n])
        if hi <= lo:
            return
        sel = self._srows[lo:hi] - row0
        if _is_torch(block):
            import torch

            part = block[torch.as_tensor(sel, device=block.device)][
                :, torch.as_tensor(self._scols, device=block.device)]
            self._sample[lo:hi] = part.double().cpu().numpy()
        else:
            self._sample[lo:hi] = np.asarray(block)[sel][:, self._scols]

    def _update_numpy(self, block: np.ndarray, row0: int) -> None:
        if self._tv is not None:
            self._to_numpy()
        if block.dtype not in (np.float32, np.float64):
            block = block.astype(np.float32 if block.dtype.itemsize <= 2 else np.float64)
        if self._hv is None or self._hi is None or self._count is None or self._nan is None:
            self._hv = np.full((self.n_cols, self.k_max), -np.inf)
            self._hi = np.full((self.n_cols, self.k_max), -1, dtype=np.int64)
            self._count = np.zeros(self.n_cols, dtype=np.int64)
            self._nan = np.zeros(self.n_cols, dtype=np.int64)
        if self._compiled is None:  # decided at the first block, kept for the state's layout
            self._compiled = self.k_max * self.n_cols >= NUMBA_MIN_ENTRIES
        if self._compiled:
            # many kept pairs: the compiled heaps (the homogeneity's kernel, the same sets);
            # a vectorised merge of K_max = 500 over 7,148 queries took 20 s a block
            from aria_tda import _simkernels

            stop = row0 + block.shape[0]
            if self._mask is None or self._mask.size < stop:  # every row is eligible
                self._mask = np.ones(max(stop, self.n_rows or 0), dtype=bool)
            _simkernels.topk_stream_update(block, row0, self._mask, self._hv, self._hi,
                                           self._count, self._nan)
            return
        topk_update(block, row0, self._hv, self._hi, self._count, self._nan)

    def _update_torch(self, block: Any, row0: int) -> None:
        import torch

        if self._hv is not None:  # earlier NumPy blocks: continue in NumPy
            self._update_numpy(block.detach().cpu().numpy(), row0)
            return
        x = block if block.dtype in (torch.float32, torch.float64) else block.float()
        k = min(self.k_max, x.shape[0])
        # a stable descending sort keeps equal scores in row order: ties to the lower row
        vals, idx = torch.sort(x, dim=0, descending=True, stable=True)
        vals, idx = vals[:k].double(), idx[:k] + row0
        if self._tv is not None:
            vals = torch.cat([self._tv, vals])  # earlier rows first: they win ties
            idx = torch.cat([self._ti, idx])
            order = torch.sort(vals, dim=0, descending=True, stable=True).indices[: self.k_max]
            vals, idx = vals.gather(0, order), idx.gather(0, order)
        self._tv, self._ti = vals, idx

    def _to_numpy(self) -> None:
        """Move the torch state into the NumPy state (its rows are already best first)."""
        vals = self._tv.detach().cpu().numpy().T.astype(np.float64)
        rows = self._ti.detach().cpu().numpy().T.astype(np.int64)
        self._tv = self._ti = None
        self._set_heaps(vals, rows)

    def _set_heaps(self, vals: np.ndarray, rows: np.ndarray) -> None:
        """The update's state from candidates ``(T, <= K_max)`` (row ``-1``: unfilled).

        The state is then best first, the NumPy kernel's layout, which later blocks keep.
        """
        self._compiled = False
        hv = np.full((self.n_cols, self.k_max), -np.inf)
        hi = np.full((self.n_cols, self.k_max), -1, dtype=np.int64)
        w = min(self.k_max, vals.shape[1])
        hv[:, :w], hi[:, :w] = vals[:, :w], rows[:, :w]
        # the filled entries first, best first (score descending, then the lower row)
        order = np.lexsort((hi, -hv, hi < 0), axis=1)
        self._hv = np.take_along_axis(hv, order, axis=1)
        self._hi = np.take_along_axis(hi, order, axis=1)
        self._count = (self._hi >= 0).sum(axis=1).astype(np.int64)
        self._nan = np.zeros(self.n_cols, dtype=np.int64)

    # -- state ---------------------------------------------------------------------------
    def _candidates(self) -> tuple[np.ndarray, np.ndarray]:
        """``(values, rows)`` ``(T, k)``, best first; unfilled slots have row ``-1``."""
        if self._tv is not None:
            v = self._tv.detach().cpu().numpy().T.astype(np.float64)
            r = self._ti.detach().cpu().numpy().T.astype(np.int64)
            return v, r
        if self._hv is None or self._hi is None:
            return (np.full((self.n_cols, 0), -np.inf), np.full((self.n_cols, 0), -1, np.int64))
        if self._nan is not None and self._nan.any():
            bad = np.flatnonzero(self._nan)
            raise DataError(expected("scores", "finite scores",
                                     f"{int(self._nan.sum())} NaN score(s) in {bad.size} query "
                                     f"column(s), e.g. column {int(bad[0])}"))
        pad = self._hi < 0
        order = np.lexsort((self._hi, -self._hv, pad), axis=1)
        return (np.take_along_axis(self._hv, order, axis=1),
                np.take_along_axis(self._hi, order, axis=1))

    def merge(self, other: TopKAccumulator) -> TopKAccumulator:
        """A new accumulator over the rows of both (disjoint row ranges, any order).

        Parameters
        ----------
        other : TopKAccumulator
            Same ``n_cols`` and ``ks``.
        """
        if other.n_cols != self.n_cols or other.ks != self.ks:
            raise ParameterError(expected("other", f"an accumulator of {self.n_cols} columns "
                                          f"and ks {list(self.ks)}",
                                          f"{other.n_cols} columns, ks {list(other.ks)}"))
        n_rows = self.n_rows if self.n_rows is not None else other.n_rows
        out = TopKAccumulator(self.n_cols, self.ks, n_rows=n_rows)
        va, ra = self._candidates()
        vb, rb = other._candidates()
        v, r = np.concatenate([va, vb], axis=1), np.concatenate([ra, rb], axis=1)
        order = np.lexsort((r, -v, r < 0), axis=1)[:, : out.k_max]
        v, r = np.take_along_axis(v, order, axis=1), np.take_along_axis(r, order, axis=1)
        out._set_heaps(v, r)
        if out._sample.shape == self._sample.shape == other._sample.shape:
            out._sample = np.where(np.isnan(self._sample), other._sample, self._sample)
        out.end = max(self.end, other.end)
        out.next_row = out.end
        return out

    def result(self, *, level: str = "segment") -> Concentration:
        """The :class:`Concentration` of the rows seen.

        Parameters
        ----------
        level : {"segment", "track"}
            What the rows are (recorded in the result).
        """
        level = check_choice("level", level, LEVELS)
        m = self.n_rows if self.n_rows is not None else self.end
        if m < 1:
            raise DataError(expected("scores", "at least one row", "no rows"))
        _, rows = self._candidates()
        ks = [min(k, m) for k in self.ks]
        if rows.shape[1] < min(ks[-1], m) or (rows[:, : min(ks[-1], m)] < 0).any():
            raise DataError(expected("scores", f"{m} rows", f"{self.end} rows seen"))
        res = measures_from_ranked(rows, self.ks, m, level)
        k = dependence_k(res.ks, m)
        if k is None or self.n_rows is None or np.isnan(self._sample).any():
            return res
        return replace(res, dependence=dependence_from_top(rows, self._sample.astype(np.float64),
                                                     self._scols, k, m,
                                                     ks=res.ks))


# ----------------------------------------------------------------------------------------
# one call on any input
# ----------------------------------------------------------------------------------------
def _track_codes(groups: Any, m: int) -> tuple[np.ndarray, np.ndarray]:
    g = np.asarray(groups)
    if g.shape != (m,) or g.dtype.kind not in "iu":
        raise ParameterError(expected("groups", f"an integer track id per row ({m},)",
                                      f"shape {g.shape}, dtype {g.dtype}"))
    ids, codes = np.unique(g, return_inverse=True)
    return ids, codes.astype(np.int64)


def topk_concentration(
    scores: Any,
    ks: Sequence[int] = (1, 10),
    *,
    key: str | None = None,
    transpose: bool = False,
    chunk_rows: int | None = None,
    progress: bool | None = None,
    groups: Any = None,
) -> Concentration:
    r"""The top-K concentration of a score matrix, in one streaming pass.

    Parameters
    ----------
    scores : array-like, torch.Tensor, ScoreSource or path
        ``(M, T)``, training segments x queries; larger = more influential. Never loaded whole.
    ks : sequence of int
        The ``K`` to measure (clipped to the rows ranked, with a warning).
    key : str, optional
        Array of a file with several.
    transpose : bool
        ``scores`` is stored queries x training segments: measure its transpose.
    chunk_rows : int, optional
        Rows per streamed block.
    progress : bool, optional
        Draw a progress bar.
    groups : array-like of int [shape=(M,)], optional
        Segment → track id. Then tracks are ranked by the mean of their segments' scores
        (the per-column order of the study's z-score aggregation) and ``level="track"``;
        ``top1_row`` is a track id. Memory :math:`O(NT)` for ``N`` tracks.

    Returns
    -------
    Concentration

    Raises
    ------
    DataError
        NaN or inf scores (naming the first).
    """
    src = as_source(scores, key=key, transpose=transpose)
    m, t = src.shape
    ks_ = check_int_list("ks", ks, min_value=1)
    if groups is None:
        acc = TopKAccumulator(t, ks_, n_rows=m)
        for s, block in src.iter_chunks(chunk_rows, reuse_buffers=True, progress=progress,
                                        desc="top-K pass"):
            if not np.isfinite(block).all():
                raise locate_nonfinite(block, s)
            acc.update(block, s)
        return acc.result(level="segment")
    ids, codes = _track_codes(groups, m)
    sums = np.zeros((ids.size, t))
    acc = TopKAccumulator(t, ks_, n_rows=int(ids.size))
    for s, block in src.iter_chunks(chunk_rows, reuse_buffers=True, progress=progress,
                                    desc="top-K pass"):
        if not np.isfinite(block).all():
            raise locate_nonfinite(block, s)
        _add_rows(sums, codes[s : s + block.shape[0]], block)
    n_seg = np.bincount(codes, minlength=ids.size).astype(np.float64)
    acc.update(sums / n_seg[:, None], 0)
    res = acc.result(level="track")
    return _with_ids(res, ids)


def _add_rows(sums: np.ndarray, codes: np.ndarray, block: np.ndarray) -> None:
    """``sums[codes[i]] += block[i]`` in float64 (rows sorted by code, summed per run)."""
    order = np.argsort(codes, kind="stable")
    c = codes[order]
    starts = np.flatnonzero(np.r_[True, c[1:] != c[:-1]])
    sums[c[starts]] += np.add.reduceat(block[order].astype(np.float64), starts, axis=0)


def _with_ids(res: Concentration, ids: np.ndarray) -> Concentration:
    dep = res.dependence
    if dep is not None:
        dep = replace(dep, hubs=tuple(replace(h, row=row_name(ids[int(h.row)])) for h in dep.hubs))
    return replace(res, top1_row=int(ids[res.top1_row]), dependence=dep)


def topk_concentration_reference(
    scores: Any,
    ks: Sequence[int] = (1, 10),
    *,
    key: str | None = None,
    transpose: bool = False,
    chunk_rows: int | None = None,
    progress: bool | None = None,
    groups: Any = None,
) -> Concentration:
    """Exact in-memory reference of :func:`topk_concentration`: the matrix read whole, one
    stable sort per column (decreasing score, then increasing row), explicit set
    intersections over every query pair, and per-track means by a loop over tracks.

    Parameters
    ----------
    scores : array-like, torch.Tensor, ScoreSource or path
        ``(M, T)``, read whole.
    ks : sequence of int
        The ``K`` to measure.
    key : str, optional
        Array of a file with several.
    transpose : bool
        Measure the transpose of ``scores``.
    chunk_rows : int, optional
        Ignored.
    progress : bool, optional
        Ignored.
    groups : array-like of int [shape=(M,)], optional
        Segment → track id (tracks ranked by the mean of their segments' scores).
    """
    s = np.asarray(as_source(scores, key=key, transpose=transpose).to_numpy(), dtype=np.float64)
    if not np.isfinite(s).all():
        i, j = np.argwhere(~np.isfinite(s))[0]
        raise DataError(f"scores: expected finite scores, got {s[i, j]} at row {i}, column {j}")
    level, ids = "segment", None
    if groups is not None:
        g = np.asarray(groups)
        ids = np.unique(g)
        s = np.stack([s[g == tid].sum(axis=0) / np.count_nonzero(g == tid) for tid in ids])
        level = "track"
    m, t = s.shape
    ks_ = list(clip_ks(check_int_list("ks", ks, min_value=1), m))
    tops = []
    for j in range(t):
        col = [float(v) for v in s[:, j]]
        order = sorted(range(m), key=lambda r: (-col[r], r))
        tops.append(order)
    distinct, overlap = [], []
    for k in ks_:
        sets = [set(o[:k]) for o in tops]
        distinct.append(len(set().union(*sets)) / (t * k))
        shared = sum(len(sets[a] & sets[b]) for a in range(t) for b in range(a + 1, t))
        overlap.append(shared / (k * t * (t - 1) / 2) if t > 1 else math.nan)
    firsts = [o[0] for o in tops]
    best = min(set(firsts), key=lambda r: (-firsts.count(r), r))
    k_dep = dependence_k(ks_, m)
    return Concentration(
        ks=tuple(ks_),
        level=level,
        n_rows=m,
        n_queries=t,
        distinct_ratio=tuple(distinct),
        mean_overlap=tuple(overlap),
        top1_share=firsts.count(best) / t,
        top1_row=int(ids[best]) if ids is not None else int(best),
        dependence=None if k_dep is None else query_dependence_reference(s, k_dep, ids=ids,
                                                                         ks=ks_),
    )
