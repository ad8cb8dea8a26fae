r"""The group evaluator: pair sums of every group at every ``K`` of the sweep, in one pass.

With ``c_j = Σ_{i<j} sim(x_i, x_j)`` over a ``K_max`` group in rank order, the pair sum of
its first ``K`` members is the prefix sum ``Σ_{j<K} c_j``: one ``K_max × K_max`` block per
feature (Gram via BLAS for vectors, bit-parallel LCS for chord sequences) gives every ``K``.
The same pass optionally keeps each channel's top contributing pairs (the evidence pairs).

:func:`group_sums` is the fast kernel; :func:`group_sums_reference` recomputes every pair
with :meth:`aria_tda.similarity.PreparedFeature.pair_similarity` and sums each prefix directly.
Both are internal to :mod:`aria_tda.homogeneity` (used by the null and by
:func:`aria_tda.homogeneity.homogeneity`).
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

import aria_tda._simkernels as _k
from aria_tda._checks import check_int
from aria_tda._memory import threads_that_fit
from aria_tda._progress import progress as _progress
from aria_tda.results import DEFAULT_KS
from aria_tda.similarity import PreparedFeature

__all__ = [
    "DEFAULT_KS", "EvidenceRequest", "channel_mean", "evaluate_groups", "group_sums",
    "pair_raw_similarity", "pairs_per_k", "resolve_n_jobs", "standardize",
]



def resolve_n_jobs(n_jobs: int | None) -> int:
    """The number of threads: ``n_jobs`` checked, or every CPU this process may use.

    Parameters
    ----------
    n_jobs : int or None
        At least 1; ``None``: the process's CPU affinity.

    Returns
    -------
    int
    """
    if n_jobs is None:
        try:
            return max(1, len(os.sched_getaffinity(0)))
        except AttributeError:  # pragma: no cover - non-Linux
            return max(1, os.cpu_count() or 1)
    return check_int("n_jobs", n_jobs, min_value=1)


@dataclass
class EvidenceRequest:
    """What :func:`evaluate_groups` keeps of each group besides its pair sums: the top pairs.

    Attributes
    ----------
    k_e : int
        The group size at which the evidence pairs are taken (the first ``k_e`` members).
    weights : numpy.ndarray
        Per feature, its weight in its channel's pair score (shape ``(nF,)``).
    n_pairs : int
        Pairs kept per channel.
    n_channels : int
        The number of channels.
    """

    k_e: int
    weights: np.ndarray  # (nF,)
    n_pairs: int
    n_channels: int


def evaluate_groups(
    feats: list[PreparedFeature],
    chan: np.ndarray,
    groups: np.ndarray,
    ks: np.ndarray,
    *,
    n_jobs: int,
    evidence: EvidenceRequest | None = None,
    desc: str = "groups",
    progress: bool | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pair sums ``(G, nF, nK)`` of every group's first ``ks`` members (+ top evidence pairs).

    Parameters
    ----------
    feats : list of PreparedFeature
        The features.
    chan : numpy.ndarray
        The channel of each feature.
    groups : numpy.ndarray
        ``(G, K_max)`` row indices, one group per row, in rank order.
    ks : numpy.ndarray
        The prefix sizes.
    n_jobs : int
        Threads.
    evidence : EvidenceRequest, optional
        Also keep each channel's top contributing pairs.
    desc : str
        The progress bar's label.
    progress : bool, optional
        Draw a progress bar.

    Returns
    -------
    tuple of numpy.ndarray
        The pair sums ``(G, nF, nK)``, the evidence pairs' rows ``(G, nC, n_pairs, 2)``
        (``-1``: none) and their weighted similarities ``(G, nC, n_pairs)``.
    """
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
        if evidence is None:  # the whole block of groups per feature (batched kernels)
            cs = np.empty((hi - lo, k))
            for f, pf in enumerate(feats):
                pf._groups_colsums(groups[lo:hi], cs)
                sums[lo:hi, f] = np.cumsum(cs, axis=1)[:, ks - 1]
            return hi - lo
        for g in range(lo, hi):
            idx = groups[g]
            emat[:] = 0.0
            for f, pf in enumerate(feats):
                pf._group_colsums(idx, colsum, emat=emat[chan[f]],
                                  weight=float(evidence.weights[f]), k_e=ke)
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
        n_jobs = threads_that_fit(n_jobs)  # a worker's BLAS buffer must fit under a limit
        if n_jobs == 1 or len(tasks) == 1:
            for task in tasks:
                bar.update(work(task))
        else:
            with ThreadPoolExecutor(n_jobs) as ex:
                for done in ex.map(work, tasks):
                    with lock:
                        bar.update(done)
    return sums, pi, pv


def group_sums(
    feats: list[PreparedFeature],
    groups: np.ndarray,
    ks: np.ndarray,
    *,
    n_jobs: int | None = None,
    progress: bool | None = None,
) -> np.ndarray:
    r"""Pair sums :math:`\sum_{i<j<K} \mathrm{sim}_d(x_i, x_j)` of every group at every ``K``.

    Parameters
    ----------
    feats : list of PreparedFeature
        The features (rows = the group's row indices).
    groups : np.ndarray [shape=(G, k), dtype=int64]
        One group per row, in rank order.
    ks : np.ndarray [shape=(n_K,), dtype=int64]
        Increasing prefix sizes, each ``<= k``.
    n_jobs : int, optional
        Worker threads (default: the CPUs available).
    progress : bool, optional
        Draw a progress bar.

    Returns
    -------
    np.ndarray [shape=(G, n_features, n_K)]
    """
    grp = np.ascontiguousarray(groups, dtype=np.int64)
    ks_arr = np.asarray(ks, dtype=np.int64)
    chan = np.zeros(len(feats), dtype=np.int64)
    sums, _, _ = evaluate_groups(feats, chan, grp, ks_arr, n_jobs=resolve_n_jobs(n_jobs),
                                 progress=progress)
    return sums


def group_sums_reference(
    feats: list[PreparedFeature],
    groups: np.ndarray,
    ks: np.ndarray,
    *,
    n_jobs: int | None = None,
    progress: bool | None = None,
) -> np.ndarray:
    """Exact reference of :func:`group_sums`: every pair by
    :meth:`~aria_tda.similarity.PreparedFeature.pair_similarity`, every prefix summed directly.

    Parameters
    ----------
    feats : list of PreparedFeature
        The features.
    groups : np.ndarray [shape=(G, k), dtype=int64]
        One group per row, in rank order.
    ks : np.ndarray [shape=(n_K,), dtype=int64]
        Prefix sizes.
    n_jobs : int, optional
        Ignored.
    progress : bool, optional
        Ignored.
    """
    grp = np.asarray(groups, dtype=np.int64)
    ks_arr = np.asarray(ks, dtype=np.int64)
    out = np.empty((grp.shape[0], len(feats), ks_arr.size))
    for g in range(grp.shape[0]):
        for f, pf in enumerate(feats):
            for a, k in enumerate(ks_arr):
                ii, jj = np.triu_indices(int(k), 1)
                out[g, f, a] = float(np.sum(pf.pair_similarity(grp[g, ii], grp[g, jj])))
    return out


def pairs_per_k(ks: np.ndarray) -> np.ndarray:
    """The number of pairs in a group of each size: ``K (K - 1) / 2``.

    Parameters
    ----------
    ks : numpy.ndarray
        Group sizes.

    Returns
    -------
    numpy.ndarray
        As floats.
    """
    return ks * (ks - 1) / 2.0


def standardize(g: np.ndarray, mu: np.ndarray, sigma: np.ndarray,
                used: np.ndarray) -> np.ndarray:
    """``(g - mu) / sigma`` where ``used``, NaN elsewhere.

    Parameters
    ----------
    g : numpy.ndarray
        Pair sums.
    mu, sigma : numpy.ndarray
        The null's mean and standard deviation (broadcast against ``g``).
    used : numpy.ndarray
        Boolean: where the feature is used.

    Returns
    -------
    numpy.ndarray
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(used, (g - mu) / np.where(used, sigma, 1.0), np.nan)


def channel_mean(zs: np.ndarray, chan: np.ndarray, used: np.ndarray, n_ch: int) -> np.ndarray:
    """Mean over each channel's used features: ``zs`` (nK, nF, X) -> (nK, nC, X).

    Parameters
    ----------
    zs : numpy.ndarray
        Per-feature z, shape ``(nK, nF, X)``.
    chan : numpy.ndarray
        The channel of each feature.
    used : numpy.ndarray
        ``(nK, nF)`` boolean: features used at each ``K``.
    n_ch : int
        The number of channels.

    Returns
    -------
    numpy.ndarray
        ``(nK, nC, X)``; NaN for a channel without a used feature.
    """
    out = np.full((zs.shape[0], n_ch, zs.shape[2]), np.nan)
    for c in range(n_ch):
        for a in range(zs.shape[0]):
            sel = (chan == c) & used[a]
            if sel.any():
                out[a, c] = zs[a, sel].mean(axis=0)
    return out


def pair_raw_similarity(feats: list[PreparedFeature], chan: np.ndarray, n_c: int,
                        pi: np.ndarray, inverse: np.ndarray) -> np.ndarray:
    """Mean raw similarity over each channel's features of the selected pairs.

    Parameters
    ----------
    feats : list of PreparedFeature
        The features.
    chan : numpy.ndarray
        The channel of each feature.
    n_c : int
        The number of channels.
    pi : numpy.ndarray
        Pair rows ``(G, nC, n_pairs, 2)`` as :func:`evaluate_groups` gives (``-1``: none).
    inverse : numpy.ndarray
        For each output row, the row of ``pi`` it repeats.

    Returns
    -------
    numpy.ndarray
        ``(len(inverse), nC, n_pairs)``; NaN where there is no pair.
    """
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
