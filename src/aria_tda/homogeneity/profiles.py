r"""Distinctive profiles: what a query (or a set of queries) attributes beyond the method's
other queries, and the top-K groups of those profiles.

For a set :math:`S` of query columns (one query, or the queries that share a metadata
value) of a track-level matrix :math:`S^{track}` with columns standardised over the pool
(:math:`\tilde S_{xq} = (S_{xq} - m_q) / s_q`, mean and SD over the pool's rows),

.. math:: p_S(x) = \frac{1}{|S|} \sum_{q \in S} \tilde S_{xq}
          - \frac{1}{|V \setminus S|} \sum_{q \in V \setminus S} \tilde S_{xq},

:math:`V` the valid (non-constant) queries: how much more the set's queries attribute track
:math:`x` than the method's other queries do. Tracks every query attributes (hubs, the
method's own preferences) cancel; tracks this set's queries share rise — averaging the set's
columns adds up their common influence while their noise averages out. The distinctive group
:math:`D_K(S)` is the top-``K`` of :math:`p_S` over the pool (ties: lower row first, as
:func:`~aria_tda.homogeneity.top_k_groups`).

:func:`distinctive_groups` computes, in two streaming passes over :math:`S^{track}` (column
moments, then the profiles' running top-K), the group of every query, of every requested set
and of ``n_reference`` random sets of each set's size drawn from the queries outside it (the
method-conditional reference of the set reading, :mod:`~aria_tda.homogeneity.distinctive`).
:func:`distinctive_groups_reference` is its exact in-memory reference (every profile built in
full and sorted).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

import aria_tda._simkernels as _k
from aria_tda._checks import check_int
from aria_tda._progress import progress as _progress
from aria_tda.errors import DataError, ParameterError, expected
from aria_tda.homogeneity.scan_checks import pool_mask, raise_if_nan, row_source

__all__ = ["DistinctiveGroups", "distinctive_groups", "reference_sets"]


@dataclass(frozen=True, eq=False)
class DistinctiveGroups:
    r"""The distinctive groups of every query, of the requested sets and of their references.

    Attributes
    ----------
    k : int
    valid : np.ndarray [shape=(T,), dtype=bool]
        Queries with a non-constant column over the pool (the others have no group: -1).
    query_groups : np.ndarray [shape=(T, k), dtype=int64]
        :math:`D_K(\{q\})`, best first.
    set_members : tuple of np.ndarray
        Query columns of each requested set (valid ones only).
    set_groups : np.ndarray [shape=(n_sets, k), dtype=int64]
        (-1 for a set without a valid member).
    reference_members : tuple of np.ndarray [shape=(R, size), dtype=int64]
        Per set: random sets of its size from the valid queries outside it.
    reference_groups : tuple of np.ndarray [shape=(R, k), dtype=int64]
    """

    k: int
    valid: np.ndarray
    query_groups: np.ndarray
    set_members: tuple[np.ndarray, ...]
    set_groups: np.ndarray
    reference_members: tuple[np.ndarray, ...]
    reference_groups: tuple[np.ndarray, ...]


def reference_sets(valid: np.ndarray, members: Sequence[np.ndarray], n_reference: int,
                   seed: int) -> list[np.ndarray]:
    """For each set, ``n_reference`` random sets of its size drawn without replacement from the
    valid queries *outside* it (``numpy.random.default_rng([seed, i])`` for set ``i``, one
    ``choice`` per random set): the method's other queries, read the same way.

    A set with no valid member, or with fewer valid queries outside it than its size, gets
    none (an empty ``(0, size)`` array).

    Parameters
    ----------
    valid : np.ndarray [shape=(T,), dtype=bool]
        The queries a set may hold.
    members : sequence of int arrays
        The (valid) query columns of each set.
    n_reference : int
        Random sets per set.
    seed : int
        Seed.
    """
    out: list[np.ndarray] = []
    for i, m in enumerate(members):
        outside = np.setdiff1d(np.flatnonzero(valid), m)
        if m.size == 0 or outside.size < m.size or not n_reference:
            out.append(np.zeros((0, m.size), dtype=np.int64))
            continue
        rng = np.random.default_rng([seed, i])
        out.append(np.stack([np.sort(rng.choice(outside, m.size, replace=False))
                             for _ in range(n_reference)]).astype(np.int64))
    return out


def _checked(s_track: Any, k: Any, pool: Any, sets: Any, n_reference: Any, seed: Any,
             chunk_rows: Any, exclude: Any) -> tuple[Any, ...]:
    k = check_int("k", k, min_value=1)
    n_reference = check_int("n_reference", n_reference, min_value=0)
    seed = check_int("seed", seed, min_value=0)
    if chunk_rows is not None:
        chunk_rows = check_int("chunk_rows", chunk_rows, min_value=1)
    n, t, src = row_source(s_track)
    mask = pool_mask(pool, n)
    if k > int(mask.sum()):
        raise ParameterError(expected("k", f"at most the pool size {int(mask.sum())}", k))
    excl = np.zeros(t, dtype=bool) if exclude is None else np.asarray(exclude, dtype=bool)
    if excl.shape != (t,):
        raise ParameterError(expected("exclude", f"a boolean mask of the {t} queries",
                                      excl.shape))
    members = []
    for i, s in enumerate(sets or ()):
        arr = np.unique(np.asarray(s, dtype=np.int64).reshape(-1))
        if arr.size and (arr.min() < 0 or arr.max() >= t):
            raise ParameterError(expected(f"sets[{i}]", f"query columns in [0, {t})",
                                          f"range [{arr.min()}, {arr.max()}]"))
        members.append(arr)
    return k, n_reference, seed, chunk_rows, n, t, src, mask, excl, members


def _column_moments(src: Any, t: int, mask: np.ndarray, chunk_rows: int | None,
                    progress: bool | None) -> tuple[np.ndarray, np.ndarray]:
    """Pool mean and SD (``ddof=0``) of every column, in one pass (shifted sums)."""
    shift = None
    s1 = np.zeros(t)
    s2 = np.zeros(t)
    cnt = 0
    with _progress(total=int(mask.size), desc="distinctive: moments", unit="row",
                   enabled=progress) as bar:
        for start, block in src.iter_chunks(chunk_rows):
            b = np.asarray(block, dtype=np.float64)
            sub = b[mask[start : start + b.shape[0]]]
            if sub.shape[0]:
                if np.isnan(sub).any():
                    raise_if_nan(np.isnan(sub).sum(axis=0))
                if shift is None:
                    shift = sub[0].copy()
                d = sub - shift
                s1 += d.sum(axis=0)
                s2 += np.einsum("ij,ij->j", d, d)
                cnt += sub.shape[0]
            bar.update(b.shape[0])
    assert shift is not None  # the pool holds at least k >= 1 rows
    mean = s1 / cnt
    var = np.maximum(s2 / cnt - mean * mean, 0.0)
    return mean + shift, np.sqrt(var)


def _weights(t: int, valid: np.ndarray, member_lists: list[np.ndarray]) -> np.ndarray:
    """``(T, n)`` weights: +1/|S| on a set's members, -1/|V \\ S| on the other valid queries."""
    w = np.zeros((t, len(member_lists)))
    n_valid = int(valid.sum())
    for j, m in enumerate(member_lists):
        if m.size == 0 or m.size >= n_valid:  # nothing inside or outside: no profile (-1)
            continue
        w[valid, j] = -1.0 / (n_valid - m.size)
        w[m, j] = 1.0 / m.size
    return w


def distinctive_groups(
    s_track: Any,
    k: int,
    *,
    pool: Any = None,
    sets: Sequence[Any] = (),
    n_reference: int = 200,
    seed: int = 0,
    exclude: Any = None,
    chunk_rows: int | None = None,
    progress: bool | None = None,
) -> DistinctiveGroups:
    r"""The distinctive groups :math:`D_K` of every query, of ``sets`` and of their references.

    Parameters
    ----------
    s_track : np.ndarray [shape=(N, T)] | ScoreSource | path
        Track-level scores (original or residual).
    k : int
        Group size.
    pool : bool mask or int rows, optional
        Rows eligible for groups (default all).
    sets : sequence of int arrays, optional
        Query columns of each set to read (excluded queries are dropped from them).
    n_reference : int
        Random sets per set, from the queries outside it (the set reading's reference).
    seed : int
        Seed of the random sets.
    exclude : np.ndarray [shape=(T,), dtype=bool], optional
        Queries to leave out (e.g. constant columns); columns constant over the pool are left
        out in any case.
    chunk_rows : int, optional
        Rows per streamed block.
    progress : bool, optional
        Draw progress bars.

    Returns
    -------
    DistinctiveGroups
    """
    k, n_reference, seed, chunk_rows, n, t, src, mask, excl, members = _checked(
        s_track, k, pool, sets, n_reference, seed, chunk_rows, exclude)
    mean, sd = _column_moments(src, t, mask, chunk_rows, progress)
    valid = ~excl & (sd > 0) & np.isfinite(sd)
    n_valid = int(valid.sum())
    if n_valid < 2:
        raise DataError(expected("s_track", "at least 2 queries that rank the pool", n_valid))
    members = [m[valid[m]] for m in members]
    ref = reference_sets(valid, members, n_reference, seed)
    lists = [m for m in members]
    for r in ref:
        lists.extend(r)
    w = _weights(t, valid, lists) if lists else np.zeros((t, 0))
    inv_sd = np.where(valid, 1.0 / np.where(sd > 0, sd, 1.0), 0.0)
    n_cols = t + w.shape[1]
    hv = np.full((n_cols, k), -np.inf)
    hi = np.full((n_cols, k), -1, dtype=np.int64)
    count = np.zeros(n_cols, dtype=np.int64)
    nan_count = np.zeros(n_cols, dtype=np.int64)
    expect = 0
    with _progress(total=n, desc="distinctive groups", unit="row", enabled=progress) as bar:
        for start, block in src.iter_chunks(chunk_rows):
            b = np.asarray(block, dtype=np.float64)
            if start != expect or b.ndim != 2 or b.shape[1] != t:
                raise DataError(expected(
                    "s_track chunks", f"consecutive row blocks (start {expect}, {t} columns)",
                    f"start {start}, shape {b.shape}"))
            z = (b - mean) * inv_sd  # invalid columns are 0
            rowsum = z.sum(axis=1, keepdims=True)
            prof = np.empty((b.shape[0], n_cols))
            prof[:, :t] = (n_valid * z - rowsum) / (n_valid - 1)
            if w.shape[1]:
                prof[:, t:] = z @ w
            _k.topk_stream_update(np.ascontiguousarray(prof), start, mask, hv, hi, count,
                                  nan_count)
            expect = start + b.shape[0]
            bar.update(b.shape[0])
    if expect != n:
        raise DataError(expected("s_track chunks", f"{n} rows in total", expect))
    order = np.lexsort((hi, -hv), axis=1)
    groups = np.take_along_axis(hi, order, axis=1)
    groups[:t][~valid] = -1
    rest = groups[t:]
    for j, m in enumerate(members):
        if m.size == 0 or m.size >= n_valid:
            rest[j] = -1
    return _assemble(k, valid, groups[:t], rest, members, ref)


def _assemble(k: int, valid: np.ndarray, query_groups: np.ndarray, rest: np.ndarray,
              members: list[np.ndarray], ref: list[np.ndarray]) -> DistinctiveGroups:
    n_sets = len(members)
    set_groups = rest[:n_sets].copy()
    ref_groups: list[np.ndarray] = []
    at = n_sets
    for r in ref:
        ref_groups.append(rest[at : at + r.shape[0]].copy())
        at += r.shape[0]
    return DistinctiveGroups(k=k, valid=valid, query_groups=query_groups,
                             set_members=tuple(members), set_groups=set_groups,
                             reference_members=tuple(ref), reference_groups=tuple(ref_groups))


def distinctive_groups_reference(
    s_track: Any,
    k: int,
    *,
    pool: Any = None,
    sets: Sequence[Any] = (),
    n_reference: int = 200,
    seed: int = 0,
    exclude: Any = None,
    chunk_rows: int | None = None,
    progress: bool | None = None,
) -> DistinctiveGroups:
    """Exact reference of :func:`distinctive_groups`: the whole matrix in memory, every profile
    built from its definition and fully sorted (stable: ties to the lower row).

    Parameters
    ----------
    s_track : np.ndarray [shape=(N, T)] | ScoreSource | path
    k : int
    pool : bool mask or int rows, optional
    sets : sequence of int arrays, optional
    n_reference : int
    seed : int
    exclude : np.ndarray [shape=(T,), dtype=bool], optional
    chunk_rows : int, optional
        Ignored.
    progress : bool, optional
        Ignored.
    """
    k, n_reference, seed, _, _, t, src, mask, excl, members = _checked(
        s_track, k, pool, sets, n_reference, seed, None, exclude)
    s = np.concatenate([np.asarray(b, dtype=np.float64) for _, b in src.iter_chunks(None)])
    rows = np.flatnonzero(mask)
    sub = s[rows]
    if np.isnan(sub).any():
        raise_if_nan(np.isnan(sub).sum(axis=0))
    sd = sub.std(axis=0)
    valid = ~excl & (sd > 0)
    members = [m[valid[m]] for m in members]
    z = np.zeros_like(sub)
    z[:, valid] = (sub[:, valid] - sub[:, valid].mean(axis=0)) / sd[valid]
    vcols = np.flatnonzero(valid)

    def top(profile: np.ndarray) -> np.ndarray:
        order = np.argsort(-profile, kind="stable")[:k]
        return rows[order]

    qg = np.full((t, k), -1, dtype=np.int64)
    for q in vcols:
        others = vcols[vcols != q]
        qg[q] = top(z[:, q] - z[:, others].mean(axis=1))
    ref = reference_sets(valid, members, n_reference, seed)

    def set_group(m: np.ndarray) -> np.ndarray:
        if m.size == 0 or m.size >= vcols.size:
            return np.full(k, -1, dtype=np.int64)
        out = np.setdiff1d(vcols, m)
        return top(z[:, m].mean(axis=1) - z[:, out].mean(axis=1))

    rest = [set_group(m) for m in members]
    for r in ref:
        rest.extend(set_group(m) for m in r)
    rest_arr = np.stack(rest) if rest else np.zeros((0, k), dtype=np.int64)
    return _assemble(k, valid, qg, rest_arr, members, ref)
