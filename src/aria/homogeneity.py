r"""Within-group musical homogeneity of attributed groups (paper §3.4, Eqs. g_d, z_c, summary).

Pipeline for one score matrix ``S_track`` (N tracks × T queries) — the original or its rank-1
residual, the functions do not care which:

1. :func:`top_k_groups` — ``A_K(q)``, the ``K_max`` highest-scoring tracks per query, best
   first, streamed over row chunks (``S_track`` need not fit in memory). Ties go to the lower
   row index, so the result is deterministic. Because ``A_K(q)`` is the first ``K`` entries of
   that list, the groups of all ``K`` are nested.
2. :func:`null_distribution` — for every ``K`` and feature ``d``, ``B`` random groups of size
   ``K`` drawn uniformly without replacement from the pool give :math:`\mu_d^{null}(K)`,
   :math:`\sigma_d^{null}(K)`; the channel null :math:`\mu_c, \sigma_c` is
   :math:`\tilde g_c` of the same ``B`` groups. It depends only on the pool, ``K`` and the
   features, so it is computed once and reused across queries, methods and variants
   (:meth:`NullDistribution.save` / :meth:`NullDistribution.load`).
3. :func:`homogeneity` — per query, feature and ``K``

   .. math:: g_d(q) = \binom{K}{2}^{-1} \sum_{\{x, x'\} \subseteq A_K(q)} \mathrm{sim}_d(x, x'),
      \qquad
      z_c(q) = \frac{\tilde g_c(q) - \mu_c^{null}}{\sigma_c^{null}}, \quad
      \tilde g_c(q) = \frac{1}{|F_c|} \sum_{d \in F_c} \frac{g_d(q) - \mu_d^{null}}{\sigma_d^{null}}

   for every ``K`` of the sweep from **one** pass: with ``c_j = Σ_{i<j} sim(x_i, x_j)`` over
   the ``K_max`` group in rank order, the pair sum of ``A_K(q)`` is the prefix sum
   ``Σ_{j<K} c_j``.
4. :func:`summarize` / :meth:`HomogeneityResult.summary` — per channel
   :math:`\bar z_c`, :math:`\mathrm{Pos}_c = \frac1T\sum 1[z_c > 0]`,
   :math:`\mathrm{Sig}_c = \frac1T\sum 1[z_c > 1.96]` (Eq. summary) with percentile bootstrap
   confidence intervals over queries.

Conventions
-----------
- ``prepared``: ``dict[channel, list[PreparedFeature]]`` (see :mod:`aria.similarity`), every
  feature indexed by the **rows of S_track** (use :meth:`PreparedFeature.take` to reorder a
  store-wide feature to S_track's rows; the corpus scale is kept).
- The *pool* is the set of rows eligible for groups — by default the tracks that have every
  feature (:func:`feature_pool`). Groups and the null are drawn from the same pool.
- Features whose null SD is zero (the same ``g_d`` for every random group) carry no
  information at that ``K``: they are left out of their channel's mean, with a warning.
- Per-query evidence: for ``K_e`` (default 300 if swept, else the largest ``K``) the pairs
  of ``A_{K_e}(q)`` with the largest contribution to :math:`\tilde g_c` are returned, where a
  pair's contribution is :math:`\frac{1}{|F_c|}\sum_d (\mathrm{sim}_d(x,x') - \mu_d)/\sigma_d`
  (its mean over the group's pairs is exactly :math:`\tilde g_c(q)`).
"""

from __future__ import annotations

import hashlib
import os
import threading
import warnings
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from aria import _simkernels as _k
from aria._checks import check_float, check_int, check_int_list
from aria._progress import progress as _progress
from aria.errors import AriaWarning, DataError, ManifestMismatchError, ParameterError, expected
from aria.similarity import PreparedFeature

__all__ = [
    "DEFAULT_KS",
    "HomogeneityResult",
    "NullDistribution",
    "feature_pool",
    "homogeneity",
    "null_distribution",
    "run_homogeneity",
    "summarize",
    "top_k_groups",
]

DEFAULT_KS: tuple[int, ...] = (20, 50, 100, 200, 300, 400, 500)
SIG_THRESHOLD = 1.96
_CHUNK_BYTES = 64 * 2**20


# ======================================================================================
# reading S_track
# ======================================================================================


def _row_chunks(s_track: Any, chunk_rows: int | None) -> tuple[int, int, Iterator[tuple[int, np.ndarray]]]:
    """``(n_rows, n_cols, iterator of (start, block))`` over row chunks of ``S_track``.

    The one place that knows how to read a score matrix: a :class:`aria.scores.ScoreSource`
    (or anything with ``shape`` and ``iter_chunks``), a path / tensor through
    :func:`aria.scores.as_source` when the score engine is installed, or an ndarray / memmap.
    """
    src = s_track
    if not hasattr(src, "iter_chunks"):
        try:
            from aria.scores import as_source
        except ImportError:  # score engine not installed: plain arrays and .npy files only
            if isinstance(src, (str, os.PathLike)):
                src = np.load(src, mmap_mode="r")
            elif hasattr(src, "detach"):
                src = src.detach().cpu().numpy()
            elif not isinstance(src, np.ndarray):
                src = np.asarray(src)
        else:
            if isinstance(src, np.ndarray) and src.ndim != 2:
                raise ParameterError(expected("s_track", "a 2-D score matrix (n_tracks, n_queries)", f"shape {src.shape}"))
            src = as_source(src)
    shape = tuple(getattr(src, "shape", ()))
    if len(shape) != 2:
        raise ParameterError(expected("s_track", "a 2-D score matrix (n_tracks, n_queries)", f"shape {shape}"))
    n, t = int(shape[0]), int(shape[1])
    if isinstance(src, np.ndarray):
        if src.dtype.kind not in "fiu":
            raise ParameterError(expected("s_track", "a numeric score matrix", f"dtype {src.dtype}"))
        rows = chunk_rows or max(1, _CHUNK_BYTES // max(1, t * src.dtype.itemsize))

        def gen() -> Iterator[tuple[int, np.ndarray]]:
            for start in range(0, n, rows):
                yield start, np.asarray(src[start : start + rows])

        return n, t, gen()
    return n, t, iter(src.iter_chunks(chunk_rows))


def _pool_mask(pool: Any, n: int) -> np.ndarray:
    if pool is None:
        return np.ones(n, dtype=bool)
    arr = np.asarray(pool)
    if arr.dtype == bool:
        if arr.shape != (n,):
            raise ParameterError(expected("pool", f"a boolean mask of length {n}", f"shape {arr.shape}"))
        return arr.copy()
    if arr.ndim != 1 or (arr.size and arr.dtype.kind not in "iu"):
        raise ParameterError(expected("pool", "a boolean mask or 1-D integer row indices", f"shape {arr.shape}, dtype {arr.dtype}"))
    if arr.size and (arr.min() < 0 or arr.max() >= n):
        raise ParameterError(expected("pool", f"row indices in [0, {n})", f"range [{arr.min()}, {arr.max()}]"))
    mask = np.zeros(n, dtype=bool)
    mask[arr.astype(np.int64)] = True
    return mask


def top_k_groups(
    s_track: Any,
    k_max: int,
    *,
    pool: Any = None,
    chunk_rows: int | None = None,
    return_scores: bool = False,
    progress: bool | None = None,
) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    r"""Attributed groups :math:`A_{K_{max}}(q)`: the top ``k_max`` rows of every column.

    Streams ``S_track`` in row chunks, keeping a running top-``k_max`` min-heap per column
    (memory ``O(T k_max)``, not ``O(N T)``).

    Parameters
    ----------
    s_track : np.ndarray [shape=(N, T)] | ScoreSource | path
        Track-level scores, rows = tracks, columns = queries; higher = more influential.
    k_max : int
        Group size (the largest ``K`` of the sweep); at most the pool size.
    pool : np.ndarray [shape=(N,), dtype=bool] | np.ndarray [int], optional
        Rows eligible for groups (default all; usually :func:`feature_pool`).
    chunk_rows : int, optional
        Rows per chunk (default: about 64 MiB per chunk).
    return_scores : bool
        Also return the scores of the selected rows.

    Returns
    -------
    groups : np.ndarray [shape=(T, k_max), dtype=int64]
        Row indices, best first: decreasing score, ties broken by the lower row index.
        ``groups[q, :K]`` is :math:`A_K(q)` for every ``K <= k_max``.
    scores : np.ndarray [shape=(T, k_max), dtype=float64]
        Only with ``return_scores``.

    Raises
    ------
    ParameterError
        ``k_max`` < 1 or larger than the pool.
    DataError
        NaN scores in an eligible row.
    """
    k_max = check_int("k_max", k_max, min_value=1)
    if chunk_rows is not None:
        chunk_rows = check_int("chunk_rows", chunk_rows, min_value=1)
    n, t, chunks = _row_chunks(s_track, chunk_rows)
    mask = _pool_mask(pool, n)
    n_pool = int(mask.sum())
    if k_max > n_pool:
        raise ParameterError(expected("k_max", f"at most the pool size {n_pool} (of {n} tracks)", k_max))
    hv = np.full((t, k_max), -np.inf)
    hi = np.full((t, k_max), -1, dtype=np.int64)
    count = np.zeros(t, dtype=np.int64)
    nan_count = np.zeros(t, dtype=np.int64)
    expect = 0
    with _progress(total=n, desc="top-K groups", unit="row", enabled=progress) as bar:
        for start, block in chunks:
            block = np.asarray(block)
            if start != expect or block.ndim != 2 or block.shape[1] != t:
                raise DataError(expected("s_track chunks", f"consecutive row blocks (start {expect}, {t} columns)", f"start {start}, shape {block.shape}"))
            if block.dtype.kind not in "f":
                block = block.astype(np.float64)
            _k.topk_stream_update(np.ascontiguousarray(block), start, mask, hv, hi, count, nan_count)
            expect = start + block.shape[0]
            bar.update(block.shape[0])
    if expect != n:
        raise DataError(expected("s_track chunks", f"{n} rows in total", expect))
    if nan_count.any():
        bad = np.flatnonzero(nan_count)
        raise DataError(
            expected("s_track", "finite scores", f"{int(nan_count.sum())} NaN score(s) in {bad.size} query column(s), e.g. column {int(bad[0])}")
        )
    order = np.lexsort((hi, -hv), axis=1)
    groups = np.take_along_axis(hi, order, axis=1)
    if return_scores:
        return groups, np.take_along_axis(hv, order, axis=1)
    return groups


# ======================================================================================
# features and pool
# ======================================================================================


def _flatten(prepared: Any) -> tuple[tuple[str, ...], list[PreparedFeature], np.ndarray]:
    """``(channels, features, channel index per feature)`` with consistency checks."""
    if not isinstance(prepared, Mapping) or not prepared:
        raise ParameterError(expected("prepared", "a non-empty dict channel -> list of PreparedFeature", type(prepared).__name__))
    channels: list[str] = []
    feats: list[PreparedFeature] = []
    chan: list[int] = []
    for c, (name, items) in enumerate(prepared.items()):
        items = [items] if isinstance(items, PreparedFeature) else list(items)
        if not items:
            raise ParameterError(expected(f"prepared[{name!r}]", "at least one PreparedFeature", "an empty list"))
        for f in items:
            if not isinstance(f, PreparedFeature):
                raise ParameterError(expected(f"prepared[{name!r}]", "PreparedFeature items (aria.similarity.prepare_feature)", type(f).__name__))
            feats.append(f)
            chan.append(c)
        channels.append(str(name))
    n = feats[0].n
    for f in feats:
        if f.n != n:
            raise DataError(expected(f"prepared feature {f.name!r}", f"{n} rows like {feats[0].name!r}", f.n))
    return tuple(channels), feats, np.asarray(chan, dtype=np.int64)


def feature_pool(prepared: Any, *, max_missing_fraction: float = 0.5) -> np.ndarray:
    """Rows that have every feature: the pool for groups and the null.

    Parameters
    ----------
    prepared : dict[str, list[PreparedFeature]]
    max_missing_fraction : float
        Error out when more than this fraction of tracks lacks a feature (usually a sign that
        ids of the score matrix and the feature store do not match).

    Returns
    -------
    np.ndarray [shape=(N,), dtype=bool]

    Warns
    -----
    AriaWarning
        when some tracks are excluded; says how many and which features they lack.
    """
    max_missing_fraction = check_float("max_missing_fraction", max_missing_fraction, min_value=0, max_value=1)
    _, feats, _ = _flatten(prepared)
    valid = np.logical_and.reduce([f.valid for f in feats])
    n = valid.size
    missing = n - int(valid.sum())
    if missing:
        per = ", ".join(f"{f.name}: {f.n_missing}" for f in feats if f.n_missing)
        frac = missing / n
        msg = f"{missing} of {n} tracks ({frac:.1%}) lack at least one feature ({per})"
        if frac > max_missing_fraction:
            raise DataError(msg + f"; more than max_missing_fraction={max_missing_fraction} — do the score-matrix and feature-store ids match?")
        warnings.warn(msg + "; they are excluded from attributed groups and the null pool", AriaWarning, stacklevel=2)
    return valid


def _digest_pool(mask: np.ndarray) -> str:
    h = hashlib.blake2b(digest_size=16)
    h.update(str(mask.size).encode())
    h.update(np.packbits(mask).tobytes())
    return h.hexdigest()


# ======================================================================================
# the group evaluator: pair sums at every prefix size, one pass per group
# ======================================================================================


def _n_jobs(n_jobs: int | None) -> int:
    if n_jobs is None:
        try:
            return max(1, len(os.sched_getaffinity(0)))
        except AttributeError:  # pragma: no cover - non-Linux
            return max(1, os.cpu_count() or 1)
    return check_int("n_jobs", n_jobs, min_value=1)


@dataclass
class _Evidence:
    k_e: int
    weights: np.ndarray  # (nF,)
    n_pairs: int
    n_channels: int


def _evaluate_groups(
    feats: list[PreparedFeature],
    chan: np.ndarray,
    groups: np.ndarray,
    ks: np.ndarray,
    *,
    n_jobs: int,
    evidence: _Evidence | None = None,
    desc: str = "groups",
    progress: bool | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pair sums ``(G, nF, nK)`` of every group's first ``ks`` members (+ top evidence pairs)."""
    n_groups, k = groups.shape
    n_f = len(feats)
    sums = np.empty((n_groups, n_f, ks.size))
    n_ch, n_top = (evidence.n_channels, evidence.n_pairs) if evidence is not None else (0, 0)
    pi = np.full((n_groups, n_ch, n_top, 2), -1, dtype=np.int64)
    pv = np.full((n_groups, n_ch, n_top), -np.inf)
    step = max(1, min(64, n_groups // (8 * n_jobs) or 1))
    tasks = [(s, min(n_groups, s + step)) for s in range(0, n_groups, step)]
    lock = threading.Lock()

    def work(task: tuple[int, int]) -> int:
        lo, hi = task
        colsum = np.empty(k)
        if evidence is not None:
            ke = evidence.k_e
            emat = np.zeros((evidence.n_channels, ke, ke))
            oi = np.empty(n_top, dtype=np.int64)
            oj = np.empty(n_top, dtype=np.int64)
            ov = np.empty(n_top)
        for g in range(lo, hi):
            idx = groups[g]
            if evidence is None:
                for f, pf in enumerate(feats):
                    pf._group_colsums(idx, colsum)
                    sums[g, f] = np.cumsum(colsum)[ks - 1]
                continue
            emat[:] = 0.0
            for f, pf in enumerate(feats):
                pf._group_colsums(idx, colsum, emat=emat[chan[f]], weight=float(evidence.weights[f]), k_e=ke)
                sums[g, f] = np.cumsum(colsum)[ks - 1]
            for c in range(evidence.n_channels):
                _k.topk_insert(emat[c], ke, n_top, oi, oj, ov)
                pi[g, c, :, 0] = np.where(oi >= 0, idx[np.maximum(oi, 0)], -1)
                pi[g, c, :, 1] = np.where(oj >= 0, idx[np.maximum(oj, 0)], -1)
                pv[g, c] = ov
        return hi - lo

    from threadpoolctl import threadpool_limits

    # the per-group Gram products are small (K_max x d): multi-threaded BLAS only spins, so
    # BLAS runs single-threaded and the parallelism is over groups (kernels release the GIL)
    with _progress(total=n_groups, desc=desc, unit="group", enabled=progress) as bar, \
            threadpool_limits(limits=1, user_api="blas"):
        if n_jobs == 1 or len(tasks) == 1:
            for task in tasks:
                bar.update(work(task))
        else:
            with ThreadPoolExecutor(n_jobs) as ex:
                for done in ex.map(work, tasks):
                    with lock:
                        bar.update(done)
    return sums, pi, pv


def _pairs_per_k(ks: np.ndarray) -> np.ndarray:
    return ks * (ks - 1) / 2.0


# ======================================================================================
# the null distribution
# ======================================================================================


@dataclass(frozen=True, eq=False)
class NullDistribution:
    r"""Null of :math:`g_d` and :math:`\tilde g_c` from ``B`` random groups per ``K``.

    Attributes
    ----------
    ks : tuple[int, ...]
    B, seed : int
    channels : tuple[str, ...]
    features : tuple[tuple[str, str], ...]
        ``(channel, feature name)`` in evaluation order.
    g : np.ndarray [shape=(n_K, n_features, B)]
        :math:`g_d` of each random group.
    mu, sigma : np.ndarray [shape=(n_K, n_features)]
        :math:`\mu_d^{null}`, :math:`\sigma_d^{null}` (SD with ``ddof=1``).
    used : np.ndarray [shape=(n_K, n_features), dtype=bool]
        Features entering their channel's mean (``sigma > 0``).
    g_channel : np.ndarray [shape=(n_K, n_channels, B)]
        :math:`\tilde g_c` of each random group.
    mu_c, sigma_c : np.ndarray [shape=(n_K, n_channels)]
        :math:`\mu_c^{null}` (0 up to rounding, by construction) and :math:`\sigma_c^{null}`.
    n_rows, n_pool : int
    pool : np.ndarray [shape=(n_rows,), dtype=bool]
        The rows the random groups were drawn from.
    pool_digest : str
    feature_digests : tuple[str, ...]
        Content hashes of the prepared features; reuse with other data is refused.
    """

    ks: tuple[int, ...]
    B: int
    seed: int
    channels: tuple[str, ...]
    features: tuple[tuple[str, str], ...]
    g: np.ndarray
    mu: np.ndarray
    sigma: np.ndarray
    used: np.ndarray
    g_channel: np.ndarray
    mu_c: np.ndarray
    sigma_c: np.ndarray
    n_rows: int
    n_pool: int
    pool_digest: str
    feature_digests: tuple[str, ...]
    pool: np.ndarray

    def k_index(self, k: int) -> int:
        if k not in self.ks:
            raise ParameterError(expected("K", f"one of the null's K values {list(self.ks)}", k))
        return self.ks.index(k)

    def manifest_fields(self) -> dict[str, Any]:
        return {
            "ks": list(self.ks),
            "B": self.B,
            "seed": self.seed,
            "channels": list(self.channels),
            "features": [f"{c}/{n}" for c, n in self.features],
            "n_rows": self.n_rows,
            "n_pool": self.n_pool,
            "pool_digest": self.pool_digest,
            "feature_digests": list(self.feature_digests),
        }

    def check(self, prepared: Any, *, pool: Any = None) -> None:
        """Raise :class:`ManifestMismatchError` unless this null was made from ``prepared`` (and ``pool``)."""
        channels, feats, chan = _flatten(prepared)
        problems = []
        names = tuple((channels[c], f.name) for f, c in zip(feats, chan, strict=True))
        if names != self.features:
            problems.append(f"features: null has {list(self.features)}, asked {list(names)}")
        elif tuple(f.digest for f in feats) != self.feature_digests:
            changed = [n for (_, n), a, b in zip(names, self.feature_digests, (f.digest for f in feats), strict=True) if a != b]
            problems.append(f"feature data/scale differ for {changed}")
        if feats[0].n != self.n_rows:
            problems.append(f"n_rows: null has {self.n_rows}, asked {feats[0].n}")
        elif pool is not None and _digest_pool(_pool_mask(pool, self.n_rows)) != self.pool_digest:
            problems.append("pool: a different set of eligible tracks")
        if problems:
            raise ManifestMismatchError("null distribution was made with other data; refusing to reuse it:\n  " + "\n  ".join(problems))

    def to_frame(self) -> Any:
        """Long table ``K, channel, feature, mu, sigma, B`` (channel rows have ``feature='*'``)."""
        import pandas as pd

        rows = []
        for a, k in enumerate(self.ks):
            for f, (c, name) in enumerate(self.features):
                rows.append((k, c, name, self.mu[a, f], self.sigma[a, f], self.B))
            for ci, cname in enumerate(self.channels):
                rows.append((k, cname, "*", self.mu_c[a, ci], self.sigma_c[a, ci], self.B))
        return pd.DataFrame(rows, columns=["K", "channel", "feature", "mu", "sigma", "B"])

    def save(self, path: str | os.PathLike[str]) -> Any:
        """Write an ``.npz`` atomically, with its manifest (``<path>.manifest.json``)."""
        from pathlib import Path

        from aria._io import atomic_path
        from aria.manifest import make_manifest, write_manifest

        path = Path(path)
        with atomic_path(path) as tmp, open(tmp, "wb") as fh:
            np.savez(fh, g=self.g, mu=self.mu, sigma=self.sigma, used=self.used,
                     g_channel=self.g_channel, mu_c=self.mu_c, sigma_c=self.sigma_c, pool=self.pool)
        write_manifest(path, make_manifest("null_distribution", **self.manifest_fields()))
        return path

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, prepared: Any = None, pool: Any = None) -> NullDistribution:
        """Read a null written by :meth:`save`; with ``prepared`` (and ``pool``), check it matches."""
        from aria._checks import check_existing_path
        from aria.errors import FileFormatError
        from aria.manifest import read_manifest

        p = check_existing_path("path", path, kind="file")
        m = read_manifest(p)
        if m is None or m.get("kind") != "null_distribution":
            raise FileFormatError(f"path: {str(p)!r} has no null_distribution manifest")
        try:
            with np.load(p) as z:
                arrays = {k: z[k] for k in ("g", "mu", "sigma", "used", "g_channel", "mu_c", "sigma_c", "pool")}
        except (OSError, KeyError, ValueError) as exc:
            raise FileFormatError(f"path: cannot read null distribution {str(p)!r}: {exc}") from None
        null = cls(
            ks=tuple(m["ks"]), B=int(m["B"]), seed=int(m["seed"]), channels=tuple(m["channels"]),
            features=tuple((s.split("/", 1)[0], s.split("/", 1)[1]) for s in m["features"]),
            n_rows=int(m["n_rows"]), n_pool=int(m["n_pool"]), pool_digest=m["pool_digest"],
            feature_digests=tuple(m["feature_digests"]), **arrays,
        )
        if prepared is not None:
            null.check(prepared, pool=pool)
        return null


def _check_ks(ks: Any, *, name: str = "ks") -> np.ndarray:
    return np.asarray(check_int_list(name, ks, min_value=2), dtype=np.int64)


def null_distribution(
    prepared: Any,
    *,
    ks: Sequence[int] = DEFAULT_KS,
    pool: Any = None,
    B: int = 200,
    seed: int = 0,
    n_jobs: int | None = None,
    progress: bool | None = None,
) -> NullDistribution:
    r"""Null distribution of homogeneity from ``B`` random groups per ``K`` (Eqs. g_d, z_c).

    For each ``K`` independently, ``B`` groups of size ``K`` are drawn uniformly without
    replacement from the pool (``numpy.random.default_rng(seed)``; for each ``K`` in
    increasing order, ``B`` calls of ``rng.choice(pool_rows, K, replace=False)``).

    Parameters
    ----------
    prepared : dict[str, list[PreparedFeature]]
    ks : sequence of int
        Group sizes (each >= 2 and <= pool size).
    pool : bool mask or int rows, optional
        Eligible rows; default :func:`feature_pool` (tracks with every feature).
    B : int
        Random groups per ``K`` (>= 2; the paper uses 200).
    seed : int
    n_jobs : int, optional
        Worker threads (default: the CPUs available).

    Returns
    -------
    NullDistribution
    """
    channels, feats, chan = _flatten(prepared)
    ks_arr = _check_ks(ks)
    B = check_int("B", B, min_value=2)
    seed = check_int("seed", seed, min_value=0)
    n_jobs = _n_jobs(n_jobs)
    n = feats[0].n
    mask = feature_pool(prepared) if pool is None else _pool_mask(pool, n)
    rows = np.flatnonzero(mask)
    _check_pool_valid(feats, rows, what="pool")
    if ks_arr[-1] > rows.size:
        raise ParameterError(expected("ks", f"group sizes at most the pool size {rows.size}", ks_arr.tolist()))
    rng = np.random.default_rng(seed)
    n_f, n_k = len(feats), ks_arr.size
    g = np.empty((n_k, n_f, B))
    for a, k in enumerate(ks_arr):
        grp = np.stack([rng.choice(rows, int(k), replace=False) for _ in range(B)]).astype(np.int64)
        sums, _, _ = _evaluate_groups(feats, chan, grp, np.array([k]), n_jobs=n_jobs,
                                      desc=f"null K={k}", progress=progress)
        g[a] = sums[:, :, 0].T / _pairs_per_k(np.array([k]))[0]
    mu = g.mean(axis=2)
    sigma = g.std(axis=2, ddof=1)
    used = sigma > 1e-12 * np.maximum(np.abs(mu), np.finfo(float).tiny)
    for a, f in zip(*np.nonzero(~used), strict=True):
        warnings.warn(
            f"null K={ks_arr[a]}: feature {feats[f].name!r} has the same g_d in every random group "
            f"(sigma_d = {sigma[a, f]:.3g}); it is left out of channel {channels[chan[f]]!r} at this K",
            AriaWarning, stacklevel=2,
        )
    zs = _standardize(g, mu[..., None], sigma[..., None], used[..., None])
    g_channel = _channel_mean(zs, chan, used, len(channels))
    mu_c = g_channel.mean(axis=2)
    sigma_c = g_channel.std(axis=2, ddof=1)
    return NullDistribution(
        ks=tuple(int(k) for k in ks_arr), B=B, seed=seed, channels=channels,
        features=tuple((channels[c], f.name) for f, c in zip(feats, chan, strict=True)),
        g=g, mu=mu, sigma=sigma, used=used, g_channel=g_channel, mu_c=mu_c, sigma_c=sigma_c,
        n_rows=n, n_pool=int(rows.size), pool_digest=_digest_pool(mask),
        feature_digests=tuple(f.digest for f in feats), pool=mask,
    )


def _standardize(g: np.ndarray, mu: np.ndarray, sigma: np.ndarray, used: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(used, (g - mu) / np.where(used, sigma, 1.0), np.nan)


def _channel_mean(zs: np.ndarray, chan: np.ndarray, used: np.ndarray, n_ch: int) -> np.ndarray:
    """Mean over each channel's used features: ``zs`` (nK, nF, X) -> (nK, nC, X)."""
    out = np.full((zs.shape[0], n_ch, zs.shape[2]), np.nan)
    for c in range(n_ch):
        for a in range(zs.shape[0]):
            sel = (chan == c) & used[a]
            if sel.any():
                out[a, c] = zs[a, sel].mean(axis=0)
    return out


def _check_pool_valid(feats: list[PreparedFeature], rows: np.ndarray, *, what: str) -> None:
    for f in feats:
        bad = rows[~f.valid[rows]]
        if bad.size:
            raise DataError(
                f"{what}: {bad.size} track(s) without feature {f.name!r} (e.g. row {int(bad[0])}); "
                "restrict groups to tracks with every feature (pool=feature_pool(prepared))"
            )


# ======================================================================================
# homogeneity of attributed groups
# ======================================================================================


@dataclass(frozen=True, eq=False)
class HomogeneityResult:
    r"""Homogeneity of every query's attributed groups, for every ``K`` of the sweep.

    Attributes
    ----------
    ks : tuple[int, ...]
    channels : tuple[str, ...]
    features : tuple[tuple[str, str], ...]
    g : np.ndarray [shape=(n_K, n_features, T)]
        :math:`g_d(q)` (Eq. g_d).
    z_feature : np.ndarray [shape=(n_K, n_features, T)]
        :math:`(g_d - \mu_d)/\sigma_d` (NaN for features left out at that K).
    g_channel : np.ndarray [shape=(n_K, n_channels, T)]
        :math:`\tilde g_c(q)`.
    z : np.ndarray [shape=(n_K, n_channels, T)]
        :math:`z_c(q)` (Eq. z_c).
    evidence_k : int
        ``K`` at which the evidence pairs are taken.
    pair_rows : np.ndarray [shape=(T, n_channels, n_pairs, 2), dtype=int64]
        Row indices of the top contributing pairs of :math:`A_{K_e}(q)`, best first (-1 = none).
    pair_contribution : np.ndarray [shape=(T, n_channels, n_pairs)]
        The pair's standardised similarity averaged over the channel's features.
    pair_similarity : np.ndarray [shape=(T, n_channels, n_pairs)]
        The pair's raw similarity averaged over the channel's features.
    n_unique_groups : int
        Distinct groups evaluated (identical groups of different queries are computed once).
    B, seed : int
        Of the null used.
    """

    ks: tuple[int, ...]
    channels: tuple[str, ...]
    features: tuple[tuple[str, str], ...]
    g: np.ndarray
    z_feature: np.ndarray
    g_channel: np.ndarray
    z: np.ndarray
    evidence_k: int
    pair_rows: np.ndarray
    pair_contribution: np.ndarray
    pair_similarity: np.ndarray
    n_unique_groups: int
    B: int
    seed: int

    @property
    def n_queries(self) -> int:
        return int(self.z.shape[2])

    def z_at(self, k: int, channel: str) -> np.ndarray:
        """:math:`z_c(q)` for one ``K`` and channel → ``(T,)``."""
        if k not in self.ks:
            raise ParameterError(expected("k", f"one of {list(self.ks)}", k))
        if channel not in self.channels:
            raise ParameterError(expected("channel", f"one of {list(self.channels)}", channel))
        return self.z[self.ks.index(k), self.channels.index(channel)]

    def summary(self, *, n_boot: int = 1000, level: float = 0.95, seed: int = 0) -> Any:
        """Per ``K`` and channel: ``zbar, pos, sig`` with bootstrap CIs (see :func:`summarize`).

        Returns a DataFrame with columns ``K, channel, zbar, zbar_lo, zbar_hi, pos, pos_lo,
        pos_hi, sig, sig_lo, sig_hi, n_queries``.
        """
        import pandas as pd

        n_k, n_c, t = self.z.shape
        stats = summarize(self.z.reshape(n_k * n_c, t).T, n_boot=n_boot, level=level, seed=seed)
        df = pd.DataFrame({k: np.asarray(v).reshape(-1) for k, v in stats.items()})
        df.insert(0, "channel", np.tile(np.asarray(self.channels, dtype=object), n_k))
        df.insert(0, "K", np.repeat(np.asarray(self.ks), n_c))
        return df

    def query_frame(self, query_ids: Any = None) -> Any:
        """Long table ``K, query, channel, z`` (query = id or column index)."""
        import pandas as pd

        n_k, n_c, t = self.z.shape
        q = np.arange(t) if query_ids is None else np.asarray(query_ids)
        if q.shape != (t,):
            raise ParameterError(expected("query_ids", f"{t} ids", q.shape))
        return pd.DataFrame({
            "K": np.repeat(np.asarray(self.ks), n_c * t),
            "query": np.tile(q, n_k * n_c),
            "channel": np.tile(np.repeat(np.asarray(self.channels, dtype=object), t), n_k),
            "z": self.z.reshape(-1),
        })

    def pairs_frame(self, *, track_ids: Any = None, query_ids: Any = None) -> Any:
        """Long table ``K, query, channel, rank, track_a, track_b, similarity, contribution``."""
        import pandas as pd

        t, n_c, n_p, _ = self.pair_rows.shape
        q = np.arange(t) if query_ids is None else np.asarray(query_ids)
        if q.shape != (t,):
            raise ParameterError(expected("query_ids", f"{t} ids", q.shape))
        keep = (self.pair_rows[..., 0] >= 0).reshape(-1)
        a = self.pair_rows[..., 0].reshape(-1)[keep]
        b = self.pair_rows[..., 1].reshape(-1)[keep]
        if track_ids is not None:
            ids = np.asarray(track_ids)
            a, b = ids[a], ids[b]
        return pd.DataFrame({
            "K": self.evidence_k,
            "query": np.repeat(q, n_c * n_p)[keep],
            "channel": np.tile(np.repeat(np.asarray(self.channels, dtype=object), n_p), t)[keep],
            "rank": np.tile(np.arange(1, n_p + 1), t * n_c)[keep],
            "track_a": a,
            "track_b": b,
            "similarity": self.pair_similarity.reshape(-1)[keep],
            "contribution": self.pair_contribution.reshape(-1)[keep],
        })


def homogeneity(
    groups: Any,
    prepared: Any,
    null: NullDistribution,
    *,
    ks: Sequence[int] | None = None,
    evidence_k: int | None = None,
    n_pairs: int = 10,
    n_jobs: int | None = None,
    progress: bool | None = None,
) -> HomogeneityResult:
    r"""Within-group homogeneity :math:`g_d(q)` and :math:`z_c(q)` for every ``K`` in one pass.

    Parameters
    ----------
    groups : np.ndarray [shape=(T, k_max), dtype=int]
        From :func:`top_k_groups` (rank order matters: ``groups[:, :K]`` is :math:`A_K`).
    prepared : dict[str, list[PreparedFeature]]
        The features the null was made from (checked through content hashes).
    null : NullDistribution
        From :func:`null_distribution` on the same pool and features.
    ks : sequence of int, optional
        The sweep (default: every ``K`` of the null that is ``<= k_max``); each must be in
        ``null.ks``.
    evidence_k : int, optional
        ``K`` for the top contributing pairs (default 300 if swept, else the largest ``K``).
    n_pairs : int
        Pairs kept per query and channel (0 to skip).
    n_jobs : int, optional
        Worker threads.

    Returns
    -------
    HomogeneityResult

    Notes
    -----
    Cost per distinct group: one ``K_max x K_max`` block per feature (Gram via BLAS for
    vectors, bit-parallel LCS for chord sequences); every smaller ``K`` comes from prefix
    sums of the block's column sums. Queries with identical groups are evaluated once.
    """
    channels, feats, chan = _flatten(prepared)
    if not isinstance(null, NullDistribution):
        raise ParameterError(expected("null", "a NullDistribution", type(null).__name__))
    null.check(prepared)
    arr = np.asarray(groups)
    if arr.ndim != 2 or arr.dtype.kind not in "iu" or arr.shape[0] < 1:
        raise ParameterError(expected("groups", "an int array (n_queries, k_max)", f"shape {arr.shape}, dtype {arr.dtype}"))
    n = feats[0].n
    if arr.size and (arr.min() < 0 or arr.max() >= n):
        raise ParameterError(expected("groups", f"row indices in [0, {n})", f"range [{arr.min()}, {arr.max()}]"))
    k_max = arr.shape[1]
    if ks is None:
        ks_arr = np.asarray([k for k in null.ks if k <= k_max], dtype=np.int64)
        if ks_arr.size == 0:
            raise ParameterError(expected("groups", f"at least {min(null.ks)} columns (smallest K of the null)", k_max))
    else:
        ks_arr = _check_ks(ks)
    for k in ks_arr:
        if k > k_max:
            raise ParameterError(expected("ks", f"values <= the group width {k_max}", ks_arr.tolist()))
        null.k_index(int(k))
    if evidence_k is None:
        evidence_k = 300 if 300 in ks_arr else int(ks_arr[-1])
    elif int(evidence_k) not in ks_arr:
        raise ParameterError(expected("evidence_k", f"one of ks {ks_arr.tolist()}", evidence_k))
    evidence_k = int(evidence_k)
    n_pairs = check_int("n_pairs", n_pairs, min_value=0)
    n_jobs = _n_jobs(n_jobs)
    width = int(ks_arr[-1])
    grp = np.ascontiguousarray(arr[:, :width], dtype=np.int64)
    members = np.unique(grp)
    _check_pool_valid(feats, members, what="groups")
    outside = members[~null.pool[members]]
    if outside.size:
        raise DataError(
            f"groups: {outside.size} track(s) outside the null's pool (e.g. row {int(outside[0])}); "
            "draw groups and the null from the same pool"
        )
    srt = np.sort(grp, axis=1)
    if (srt[:, 1:] == srt[:, :-1]).any():
        raise DataError("groups: a row lists the same track twice")
    del srt

    ki = np.asarray([null.k_index(int(k)) for k in ks_arr])
    mu, sigma, used = null.mu[ki], null.sigma[ki], null.used[ki]
    mu_c, sigma_c = null.mu_c[ki], null.sigma_c[ki]

    uniq, inverse = np.unique(grp, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    evidence = None
    e_pos = int(np.flatnonzero(ks_arr == evidence_k)[0])
    if n_pairs:
        n_used = np.bincount(chan[used[e_pos]], minlength=len(channels)).astype(float)
        w = np.zeros(len(feats))
        offset = np.zeros(len(channels))
        for f in range(len(feats)):
            if used[e_pos, f]:
                w[f] = 1.0 / (n_used[chan[f]] * sigma[e_pos, f])
                offset[chan[f]] += mu[e_pos, f] * w[f]
        evidence = _Evidence(evidence_k, w, min(n_pairs, evidence_k * (evidence_k - 1) // 2), len(channels))
    sums, pi, pv = _evaluate_groups(feats, chan, uniq, ks_arr, n_jobs=n_jobs, evidence=evidence,
                                    desc="homogeneity", progress=progress)
    if evidence is not None:  # a channel without an informative feature has no evidence pairs
        pi[:, n_used == 0] = -1
    g_u = sums.transpose(1, 2, 0) / _pairs_per_k(ks_arr)[None, :, None]  # (nF, nK, U)
    g_u = g_u.transpose(1, 0, 2)  # (nK, nF, U)
    zf_u = _standardize(g_u, mu[..., None], sigma[..., None], used[..., None])
    gc_u = _channel_mean(zf_u, chan, used, len(channels))
    with np.errstate(divide="ignore", invalid="ignore"):
        z_u = (gc_u - mu_c[..., None]) / sigma_c[..., None]
    bad_c = ~np.isfinite(sigma_c) | ~(sigma_c > 0)
    for a, c in zip(*np.nonzero(bad_c), strict=True):
        warnings.warn(f"K={ks_arr[a]}: channel {channels[c]!r} has no informative feature; z_c is NaN", AriaWarning, stacklevel=2)

    t = grp.shape[0]
    n_c = len(channels)
    if evidence is not None:
        pair_rows = pi[inverse]
        contrib = pv[inverse] - offset[None, :, None]
        contrib[pair_rows[..., 0] < 0] = np.nan
        pair_sim = _pair_raw_similarity(feats, chan, n_c, pi, inverse)
    else:
        pair_rows = np.zeros((t, n_c, 0, 2), dtype=np.int64)
        contrib = np.zeros((t, n_c, 0))
        pair_sim = np.zeros((t, n_c, 0))
    return HomogeneityResult(
        ks=tuple(int(k) for k in ks_arr), channels=channels,
        features=tuple((channels[c], f.name) for f, c in zip(feats, chan, strict=True)),
        g=g_u[..., inverse], z_feature=zf_u[..., inverse], g_channel=gc_u[..., inverse], z=z_u[..., inverse],
        evidence_k=evidence_k, pair_rows=pair_rows, pair_contribution=contrib, pair_similarity=pair_sim,
        n_unique_groups=int(uniq.shape[0]), B=null.B, seed=null.seed,
    )


def _pair_raw_similarity(feats: list[PreparedFeature], chan: np.ndarray, n_c: int, pi: np.ndarray, inverse: np.ndarray) -> np.ndarray:
    """Mean raw similarity over each channel's features of the selected pairs."""
    out = np.full(pi.shape[:3], np.nan)
    for c in range(n_c):
        rows = pi[:, c].reshape(-1, 2)
        ok = rows[:, 0] >= 0
        acc = np.zeros(int(ok.sum()))
        members = [f for f in range(len(feats)) if chan[f] == c]
        for f in members:
            acc += feats[f].pair_similarity(rows[ok, 0], rows[ok, 1])
        flat = np.full(rows.shape[0], np.nan)
        flat[ok] = acc / len(members)
        out[:, c] = flat.reshape(pi.shape[0], pi.shape[2])
    return out[inverse]


# ======================================================================================
# summaries
# ======================================================================================


def summarize(
    z: Any,
    *,
    n_boot: int = 1000,
    level: float = 0.95,
    seed: int = 0,
    threshold: float = SIG_THRESHOLD,
) -> dict[str, np.ndarray]:
    r"""Summary metrics of query z-scores (Eq. summary) with bootstrap CIs over queries.

    .. math:: \bar z = \frac1T \sum_q z(q), \quad
              \mathrm{Pos} = \frac1T \sum_q 1[z(q) > 0], \quad
              \mathrm{Sig} = \frac1T \sum_q 1[z(q) > 1.96]

    Parameters
    ----------
    z : np.ndarray [shape=(T,) or (T, m)]
        One column per series (e.g. per K × channel); NaN entries (degenerate channels) are
        left out of that column.
    n_boot : int
        Bootstrap resamples of the queries (with replacement); 0 gives NaN intervals.
    level : float
        Confidence level of the percentile intervals.

    Returns
    -------
    dict[str, np.ndarray]
        ``zbar, zbar_lo, zbar_hi, pos, pos_lo, pos_hi, sig, sig_lo, sig_hi`` (fractions in
        [0, 1]) and ``n_queries``, each of shape ``(m,)`` (scalars for 1-D ``z``).
    """
    arr = np.asarray(z, dtype=np.float64)
    one = arr.ndim == 1
    if one:
        arr = arr[:, None]
    if arr.ndim != 2 or arr.shape[0] < 1:
        raise ParameterError(expected("z", "an array (n_queries,) or (n_queries, m)", f"shape {arr.shape}"))
    n_boot = check_int("n_boot", n_boot, min_value=0)
    level = check_float("level", level, min_value=0, max_value=1, min_inclusive=False, max_inclusive=False)
    valid = np.isfinite(arr)
    x = np.where(valid, arr, 0.0)
    stats = np.concatenate([x, (x > 0) & valid, (x > threshold) & valid], axis=1).astype(np.float64)
    vv = np.concatenate([valid] * 3, axis=1).astype(np.float64)
    n_valid = vv.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        point = stats.sum(axis=0) / n_valid
    lo = np.full_like(point, np.nan)
    hi = np.full_like(point, np.nan)
    if n_boot:
        t = arr.shape[0]
        rng = np.random.default_rng(check_int("seed", seed, min_value=0))
        boots = np.empty((n_boot, point.size))
        step = max(1, min(n_boot, 2**24 // max(1, t)))
        for s in range(0, n_boot, step):
            cnt = rng.multinomial(t, np.full(t, 1.0 / t), size=min(step, n_boot - s)).astype(np.float64)
            with np.errstate(invalid="ignore", divide="ignore"):
                boots[s : s + cnt.shape[0]] = (cnt @ stats) / (cnt @ vv)
        alpha = (1.0 - level) / 2.0
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            lo, hi = np.nanquantile(boots, [alpha, 1.0 - alpha], axis=0)
    m = arr.shape[1]
    out: dict[str, Any] = {}
    for i, name in enumerate(("zbar", "pos", "sig")):
        sl = slice(i * m, (i + 1) * m)
        out[name], out[f"{name}_lo"], out[f"{name}_hi"] = point[sl], lo[sl], hi[sl]
    out["n_queries"] = valid.sum(axis=0)
    if one:
        return {k: v[0] for k, v in out.items()}
    return out


# ======================================================================================
# one call for one score matrix
# ======================================================================================


def run_homogeneity(
    s_track: Any,
    prepared: Any,
    *,
    ks: Sequence[int] = DEFAULT_KS,
    B: int = 200,
    seed: int = 0,
    null: NullDistribution | None = None,
    pool: Any = None,
    chunk_rows: int | None = None,
    evidence_k: int | None = None,
    n_pairs: int = 10,
    n_jobs: int | None = None,
    max_missing_fraction: float = 0.5,
    progress: bool | None = None,
) -> tuple[HomogeneityResult, NullDistribution, np.ndarray]:
    """Groups, null (unless given) and homogeneity of one ``S_track`` (original or residual).

    Returns ``(result, null, groups)``; pass ``null`` back in for the next score matrix over
    the same tracks (the residual, another method) so it is computed only once.
    """
    ks_arr = _check_ks(ks)
    mask = feature_pool(prepared, max_missing_fraction=max_missing_fraction) if pool is None else pool
    if null is None:
        null = null_distribution(prepared, ks=ks_arr.tolist(), pool=mask, B=B, seed=seed, n_jobs=n_jobs, progress=progress)
    else:
        null.check(prepared, pool=mask)
    groups = top_k_groups(s_track, int(ks_arr[-1]), pool=mask, chunk_rows=chunk_rows, progress=progress)
    res = homogeneity(groups, prepared, null, ks=ks_arr.tolist(), evidence_k=evidence_k, n_pairs=n_pairs,
                      n_jobs=n_jobs, progress=progress)
    return res, null, groups  # type: ignore[return-value]
