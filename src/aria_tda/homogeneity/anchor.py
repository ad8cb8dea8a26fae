r"""Query-anchored alignment: how much more similar to the query its attributed tracks are,
per channel, than tracks drawn at random from the pool.

For a query :math:`q` with features extracted like the training tracks' (a query feature
store), every feature :math:`d` gives the similarity :math:`\mathrm{sim}_d(q, x)` of the query
to each pool track (:func:`~aria_tda.similarity.cross_similarity`, on the corpus' scale).
Standardised over the pool and averaged over the channel's features,

.. math:: a_c(q, x) = \frac{1}{|F_c|} \sum_{d \in F_c}
          \frac{\mathrm{sim}_d(q, x) - \overline{\mathrm{sim}}_d(q)}{s_d(q)}

(mean and SD over the pool), the alignment of a group :math:`G` of ``K`` pool tracks with
:math:`q` is standardised against uniform random groups of the same size, whose mean and
variance are exact for sampling without replacement from the pool (``P`` tracks):

.. math:: z_c(q, G) = \frac{\frac{1}{K} \sum_{x \in G} a_c(q, x)}
          {\sqrt{\operatorname{Var}_P a_c(q, \cdot) \, \frac{P - K}{K (P - 1)}}}.

For a set of queries that share one group, :math:`z_c(S, G) = |S|^{-1/2} \sum_{q \in S}
z_c(q, G)` (Stouffer). :func:`anchored_z` evaluates any list of (group, member queries)
pairs in blocks of queries, never holding more than ``block x P`` similarities per feature,
and the same statistic of given reference groups (the null's) for a sample of queries (the
reading's threshold). :func:`anchored_z_reference` is its exact reference (every similarity from the
pairwise reference, every mean and variance written out).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from aria_tda import _simkernels as _k
from aria_tda._checks import check_int
from aria_tda._progress import progress as _progress
from aria_tda.errors import DataError, ParameterError, expected
from aria_tda.homogeneity.groups import flatten_prepared
from aria_tda.homogeneity.scan_checks import pool_mask
from aria_tda.similarity.cross import cross_similarity, cross_similarity_reference

__all__ = ["AnchorCache", "AnchoredZ", "anchored_z", "channel_scores"]


@dataclass(frozen=True, eq=False)
class AnchoredZ:
    """Query-anchored z of every evaluated group and of the threshold sample.

    Attributes
    ----------
    channels : tuple of str
    z : np.ndarray [shape=(n_channels, n_evaluations)]
        :math:`z_c(S, G)` per (group, members) pair (NaN where no member has the channel).
    null_z : np.ndarray [shape=(n_channels, n_sample, n_null)]
        :math:`z_c(q, R)` of the reference groups ``R`` for each query of the sample (what a
        query's channels are compared with).
    sample : np.ndarray [shape=(n_sample,), dtype=int64]
        The sampled queries.
    """

    channels: tuple[str, ...]
    z: np.ndarray
    null_z: np.ndarray
    sample: np.ndarray


class AnchorCache:
    r"""What :func:`anchored_z` can reuse between calls over the same corpus, queries and pool.

    The query scores :math:`a_c(q, \cdot)` and the reference groups' z of the threshold sample
    depend on the features, the queries' values and the pool, never on the score matrix: a
    study reads every setting and variant against them. Pass one cache to each call and they
    are computed once, up to ``max_bytes`` of scores (beyond it, blocks are recomputed as
    without a cache). A call over other features, values or pool empties it first.

    Parameters
    ----------
    max_bytes : int
        Most bytes of query scores kept (default 1 GiB).
    """

    def __init__(self, max_bytes: int = 1 << 30) -> None:
        self.max_bytes = check_int("max_bytes", max_bytes, min_value=0)
        self._owner: tuple[Any, Any, np.ndarray] | None = None
        self._blocks: dict[bytes, tuple[np.ndarray, np.ndarray]] = {}
        self._null: dict[tuple[int, bytes, bytes], np.ndarray] = {}
        self._bytes = 0

    def _bind(self, prepared: Any, values: Any, rows: np.ndarray) -> None:
        o = self._owner
        if o is None or o[0] is not prepared or o[1] is not values or \
                not np.array_equal(o[2], rows):
            self._owner = (prepared, values, rows.copy())
            self._blocks.clear()
            self._null.clear()
            self._bytes = 0

    def _scores(self, qidx: np.ndarray, compute: Any) -> tuple[np.ndarray, np.ndarray]:
        key = qidx.tobytes()
        got = self._blocks.get(key)
        if got is None:
            got = compute()
            size = sum(x.nbytes for x in got)
            if self._bytes + size <= self.max_bytes:
                for x in got:
                    x.flags.writeable = False
                self._blocks[key] = got
                self._bytes += size
        return got


def _check(prepared: Any, query_values: Any, pool: Any, evaluations: Any, k: Any,
           null_groups: Any, n_sample: Any, seed: Any, n_queries: Any) -> tuple[Any, ...]:
    channels, feats, chan = flatten_prepared(prepared)
    k = check_int("k", k, min_value=1)
    n_sample = check_int("n_sample", n_sample, min_value=0)
    seed = check_int("seed", seed, min_value=0)
    t = check_int("n_queries", n_queries, min_value=1)
    if not isinstance(query_values, Mapping):
        raise ParameterError(expected("query_values", "a mapping feature name -> values",
                                      type(query_values).__name__))
    missing = [f.name for f in feats if f.name not in query_values]
    if len(missing) == len(feats):
        raise DataError(expected("query_values", "values of the study's features",
                                 f"none of {[f.name for f in feats]}"))
    n = feats[0].n
    mask = pool_mask(pool, n)
    rows = np.flatnonzero(mask)
    if k > rows.size:
        raise ParameterError(expected("k", f"at most the pool size {rows.size}", k))
    pos = np.full(n, -1, dtype=np.int64)
    pos[rows] = np.arange(rows.size)
    evals = []
    for i, (grp, members) in enumerate(evaluations):
        g = np.asarray(grp, dtype=np.int64).reshape(-1)
        m = np.asarray(members, dtype=np.int64).reshape(-1)
        if g.size != k or ((g.size and (pos[np.clip(g, 0, n - 1)] < 0).any()) or g.min() < 0):
            raise ParameterError(expected(f"evaluations[{i}]", f"a group of {k} pool rows",
                                          g.tolist()[:5]))
        if m.size and (m.min() < 0 or m.max() >= t):
            raise ParameterError(expected(f"evaluations[{i}]", f"members in [0, {t})",
                                          m.tolist()[:5]))
        evals.append((pos[g], m))
    ng = np.zeros((0, k), dtype=np.int64) if null_groups is None else \
        np.asarray(null_groups, dtype=np.int64)
    if ng.ndim != 2 or ng.shape[1] != k or (ng.size and (
            ng.min() < 0 or ng.max() >= n or (pos[ng] < 0).any())):
        raise ParameterError(expected("null_groups", f"groups of {k} pool rows (n, {k})",
                                      f"shape {ng.shape}"))
    return channels, feats, chan, k, pos[ng] if ng.size else ng, n_sample, seed, t, rows, evals


def channel_scores(feats: list[Any], chan: np.ndarray, n_c: int, values: Mapping[str, Any],
                   qidx: np.ndarray, rows: np.ndarray, cross: Any) -> np.ndarray:
    """:math:`a_c(q, x)` for the queries ``qidx`` over the pool ``rows`` → (C, nq, P).

    Each feature's query-to-track similarities are standardised over the pool per query, then
    averaged over the channel's features the query has.

    Parameters
    ----------
    feats : list of PreparedFeature
        The features.
    chan : numpy.ndarray
        The channel of each feature.
    n_c : int
        The number of channels.
    values : mapping
        Feature name to the queries' own values (a feature absent here is skipped).
    qidx : numpy.ndarray
        The queries.
    rows : numpy.ndarray
        The pool's rows.
    cross : callable
        ``cross(feature, query_values, rows=rows)`` → query-to-track similarities.

    Returns
    -------
    numpy.ndarray
        ``(C, nq, P)``; NaN for a channel none of whose features the query has.
    """
    acc = np.zeros((n_c, qidx.size, rows.size))
    cnt = np.zeros((n_c, qidx.size, 1))
    for f, c in zip(feats, chan, strict=True):
        if f.name not in values:
            continue
        vals = values[f.name]
        sub = vals[qidx] if isinstance(vals, np.ndarray) else [vals[int(i)] for i in qidx]
        sim = cross(f, sub, rows=rows)
        mu = sim.mean(axis=1, keepdims=True)
        sd = sim.std(axis=1, keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            std = np.where(sd > 0, (sim - mu) / np.where(sd > 0, sd, 1.0), 0.0)
        ok = np.isfinite(sim).all(axis=1)  # a query without the feature has a NaN row
        acc[c, ok] += std[ok]
        cnt[c, ok, 0] += 1
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(cnt > 0, acc / np.where(cnt > 0, cnt, 1.0), np.nan)


def _sample(t: int, valid: np.ndarray, n_sample: int, seed: int) -> np.ndarray:
    cols = np.flatnonzero(valid)
    rng = np.random.default_rng([seed, 104729])
    return np.sort(rng.choice(cols, min(n_sample, cols.size), replace=False))


def anchored_z(
    prepared: Any,
    query_values: Mapping[str, Any],
    evaluations: Sequence[tuple[Any, Any]],
    k: int,
    *,
    pool: Any = None,
    n_queries: int,
    valid: Any = None,
    null_groups: Any = None,
    n_sample: int = 64,
    seed: int = 0,
    block: int = 32,
    progress: bool | None = None,
    cache: AnchorCache | None = None,
) -> AnchoredZ:
    r"""Query-anchored :math:`z_c` of (group, member queries) pairs, and the threshold sample.

    Parameters
    ----------
    prepared : dict[str, list[PreparedFeature]]
        The corpus' features, indexed by the rows of S_track.
    query_values : mapping of str to values
        Per feature name, the queries' raw values in query-column order (``(T, d)`` arrays for
        vectors with NaN rows for a missing feature; lists of sequences or ``None`` for
        sequences). Features absent from the mapping are left out of their channel.
    evaluations : sequence of (group, members)
        ``group``: ``k`` pool rows; ``members``: the query columns it is read for.
    k : int
        Group size.
    pool : bool mask or int rows, optional
        The pool (default all rows).
    n_queries : int
        ``T``.
    valid : np.ndarray [shape=(T,), dtype=bool], optional
        Queries the threshold sample may draw (default all).
    null_groups : np.ndarray [shape=(n_null, k), dtype=int], optional
        Reference groups (pool rows) evaluated for every sampled query (default none).
    n_sample : int
        Queries in the threshold sample.
    seed : int
        Seed of the sample.
    block : int
        Queries per block (memory: ``block x P`` similarities per feature).
    progress : bool, optional
        Draw a progress bar.
    cache : AnchorCache, optional
        Reuse the query scores and the threshold sample's z of earlier calls over the same
        ``prepared``, ``query_values`` and pool (the same numbers, computed once).

    Returns
    -------
    AnchoredZ
    """
    channels, feats, chan, k, null_pos, n_sample, seed, t, rows, evals = _check(
        prepared, query_values, pool, evaluations, k, null_groups, n_sample, seed, n_queries)
    block = check_int("block", block, min_value=1)
    vmask = np.ones(t, dtype=bool) if valid is None else np.asarray(valid, dtype=bool)
    if cache is not None:
        cache._bind(prepared, query_values, rows)
    return _anchored(channels, feats, chan, query_values, evals, k, rows, t, vmask, null_pos,
                     n_sample, seed, block, progress, cross_similarity, cache)


def _anchored(channels: tuple[str, ...], feats: list[Any], chan: np.ndarray,
              values: Mapping[str, Any], evals: list[tuple[np.ndarray, np.ndarray]], k: int,
              rows: np.ndarray, t: int, vmask: np.ndarray, null_pos: np.ndarray,
              n_sample: int, seed: int, block: int, progress: bool | None,
              cross: Any, cache: AnchorCache | None = None) -> AnchoredZ:
    n_c = len(channels)
    p = rows.size
    of_query: list[list[int]] = [[] for _ in range(t)]
    for e, (_, m) in enumerate(evals):
        for q in m:
            of_query[int(q)].append(e)
    sample = _sample(t, vmask, n_sample, seed) if null_pos.shape[0] else \
        np.zeros(0, dtype=np.int64)
    in_sample = np.zeros(t, dtype=bool)
    in_sample[sample] = True
    n_null = null_pos.shape[0]
    zsum = np.zeros((n_c, len(evals)))
    zcnt = np.zeros((n_c, len(evals)))
    null_key = (k, hashlib.blake2b(null_pos.tobytes()).digest(), sample.tobytes())
    known = cache._null.get(null_key) if cache is not None else None
    if known is not None:
        in_sample[:] = False
    nsum = np.zeros((n_c, sample.size * n_null))
    ncnt = np.zeros((n_c, sample.size * n_null))
    at = {int(q): i for i, q in enumerate(sample)}
    groups = np.stack([g for g, _ in evals]) if evals else np.zeros((0, k), dtype=np.int64)
    fpc = (p - k) / (k * (p - 1)) if p > 1 else 0.0
    # the same blocks in every call over the same queries (what the cache is keyed on)
    todo = np.flatnonzero(np.array([bool(of_query[q]) or (q in at) for q in range(t)]))
    with _progress(total=int(todo.size), desc="query-anchored z", unit="query",
                   enabled=progress) as bar:
        for s in range(0, todo.size, block):
            qidx = todo[s : s + block]
            if not any(of_query[int(q)] or in_sample[q] for q in qidx):
                bar.update(qidx.size)
                continue

            def compute(qidx: np.ndarray = qidx) -> tuple[np.ndarray, np.ndarray]:
                a = channel_scores(feats, chan, n_c, values, qidx, rows, cross)  # (C, nq, P)
                v = a.var(axis=2) * fpc
                with np.errstate(invalid="ignore"):
                    return a, np.where(v > 0, np.sqrt(np.where(v > 0, v, 1.0)), np.nan)

            a, scale = cache._scores(qidx, compute) if cache is not None else compute()
            js = np.asarray([j for j, q in enumerate(qidx) for _ in of_query[int(q)]],
                            dtype=np.int64)
            es = np.asarray([e for q in qidx for e in of_query[int(q)]], dtype=np.int64)
            _k.anchored_z_accumulate(a, scale, js, es, es, groups, zsum, zcnt)
            mine = [(j, at[int(q)]) for j, q in enumerate(qidx) if in_sample[q]]
            if mine and n_null:
                bs = np.arange(n_null, dtype=np.int64)
                js = np.repeat(np.asarray([j for j, _ in mine], dtype=np.int64), n_null)
                gs = np.tile(bs, len(mine))
                os = (np.repeat(np.asarray([i for _, i in mine], dtype=np.int64), n_null)
                      * n_null + gs)
                _k.anchored_z_accumulate(a, scale, js, gs, os, null_pos, nsum, ncnt)
            bar.update(qidx.size)
    if known is not None:
        null_z = known.copy()
    else:
        null_z = np.where(ncnt > 0, nsum, np.nan).reshape(n_c, sample.size, n_null)
        if cache is not None:
            cache._null[null_key] = null_z.copy()
    with np.errstate(invalid="ignore", divide="ignore"):
        z = np.where(zcnt > 0, zsum / np.sqrt(np.where(zcnt > 0, zcnt, 1.0)), np.nan)
    return AnchoredZ(channels=channels, z=z, null_z=null_z, sample=sample)


def anchored_z_reference(
    prepared: Any,
    query_values: Mapping[str, Any],
    evaluations: Sequence[tuple[Any, Any]],
    k: int,
    *,
    pool: Any = None,
    n_queries: int,
    valid: Any = None,
    null_groups: Any = None,
    n_sample: int = 64,
    seed: int = 0,
    block: int = 32,
    progress: bool | None = None,
    cache: AnchorCache | None = None,
) -> AnchoredZ:
    r"""Exact reference of :func:`anchored_z`: every similarity pair by pair
    (:func:`~aria_tda.similarity.cross.cross_similarity_reference`), one query at a time.

    Parameters
    ----------
    prepared : dict[str, list[PreparedFeature]]
    query_values : mapping of str to values
    evaluations : sequence of (group, members)
    k : int
    pool : bool mask or int rows, optional
    n_queries : int
    valid : np.ndarray [shape=(T,), dtype=bool], optional
    null_groups : np.ndarray [shape=(n_null, k), dtype=int], optional
    n_sample, seed : int
    block : int
        Ignored (one query at a time).
    progress : bool, optional
        Ignored.
    cache : AnchorCache, optional
        Ignored (everything is recomputed).
    """
    channels, feats, chan, k, null_pos, n_sample, seed, t, rows, evals = _check(
        prepared, query_values, pool, evaluations, k, null_groups, n_sample, seed, n_queries)
    vmask = np.ones(t, dtype=bool) if valid is None else np.asarray(valid, dtype=bool)
    n_c, p = len(channels), rows.size

    def scores(q: int) -> np.ndarray:  # a_c(q, x) over the pool, (C, P)
        out = np.full((n_c, p), np.nan)
        for c in range(n_c):
            parts = []
            for f, fc in zip(feats, chan, strict=True):
                if fc != c or f.name not in query_values:
                    continue
                v = query_values[f.name]
                one = v[q : q + 1] if isinstance(v, np.ndarray) else [v[q]]
                sim = cross_similarity_reference(f, one, rows=rows)[0]
                if not np.isfinite(sim).all():
                    continue
                sd = float(np.sqrt(np.mean((sim - np.mean(sim)) ** 2)))
                parts.append((sim - np.mean(sim)) / sd if sd > 0 else np.zeros(p))
            if parts:
                out[c] = np.mean(parts, axis=0)
        return out

    def z_one(a: np.ndarray, grp: np.ndarray) -> np.ndarray:
        z = np.full(n_c, np.nan)
        for c in range(n_c):
            if np.isnan(a[c]).any():
                continue
            var = float(np.mean((a[c] - np.mean(a[c])) ** 2))
            fpc = (p - k) / (k * (p - 1)) if p > 1 else 0.0
            if var * fpc > 0:
                z[c] = float(np.mean(a[c, grp])) / np.sqrt(var * fpc)
        return z

    seen: dict[int, np.ndarray] = {}
    z = np.full((n_c, len(evals)), np.nan)
    for e, (grp, members) in enumerate(evals):
        vals = []
        for q in members:
            if int(q) not in seen:
                seen[int(q)] = scores(int(q))
            vals.append(z_one(seen[int(q)], grp))
        for c in range(n_c):
            got = [v[c] for v in vals if np.isfinite(v[c])]
            if got:
                z[c, e] = float(np.sum(got)) / np.sqrt(len(got))
    sample = _sample(t, vmask, n_sample, seed) if null_pos.shape[0] else \
        np.zeros(0, dtype=np.int64)
    null_z = np.full((n_c, sample.size, null_pos.shape[0]), np.nan)
    for i, q in enumerate(sample):
        a = seen.get(int(q))
        if a is None:
            a = scores(int(q))
        for b, g in enumerate(null_pos):
            null_z[:, i, b] = z_one(a, g)
    return AnchoredZ(channels=channels, z=z, null_z=null_z, sample=sample)
