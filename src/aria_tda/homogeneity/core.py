r"""Within-group homogeneity of attributed groups: :math:`g_d(q)`, :math:`z_c(q)` (paper §3.4).

.. math:: g_d(q) = \binom{K}{2}^{-1} \sum_{\{x, x'\} \subseteq A_K(q)} \mathrm{sim}_d(x, x'),
   \qquad
   z_c(q) = \frac{\tilde g_c(q) - \mu_c^{null}}{\sigma_c^{null}}, \quad
   \tilde g_c(q) = \frac{1}{|F_c|} \sum_{d \in F_c} \frac{g_d(q) - \mu_d^{null}}{\sigma_d^{null}}

for every ``K`` of the sweep from one pass (:mod:`aria_tda.homogeneity.sweep`), plus each
query's evidence pairs. :func:`homogeneity_reference` is the exact reference of
:func:`homogeneity` (every query's group evaluated on its own, every pair summed directly,
evidence pairs by a full sort).

The module is a little under 700 lines: :class:`HomogeneityResult` (with the joint
query + null bootstrap behind its summary), the fast path, its reference and the
:func:`run_homogeneity` driver (with ``B="auto"``) share the checked-call object ``_Call``;
splitting them would spread one contract over several files.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from aria_tda._checks import check_int
from aria_tda.errors import AriaWarning, DataError, ParameterError, expected
from aria_tda.homogeneity.display import HomogeneityDisplay
from aria_tda.homogeneity.groups import (
    check_ks,
    check_pool_valid,
    constant_queries,
    feature_pool,
    flatten_prepared,
    top_k_groups,
)
from aria_tda.homogeneity.null import (
    AUTO_B_START,
    NullDistribution,
    auto_null,
    null_distribution,
)
from aria_tda.homogeneity.summary import summarize
from aria_tda.homogeneity.sweep import (
    DEFAULT_KS,
    EvidenceRequest,
    channel_mean,
    evaluate_groups,
    group_sums_reference,
    pair_raw_similarity,
    pairs_per_k,
    resolve_n_jobs,
    standardize,
)
from aria_tda.results import default_k_report
from aria_tda.similarity import PreparedFeature

__all__ = ["HomogeneityResult", "homogeneity", "run_homogeneity"]


@dataclass(frozen=True, eq=False, repr=False)
class HomogeneityResult(HomogeneityDisplay):
    r"""Homogeneity of every query's attributed groups, for every ``K`` of the sweep.

    Shown as one line (``repr``: ks, channels, T, the leading channel by mean z at
    ``evidence_k``) or a table in a notebook; ``to_frame()`` is the tidy per-query table.

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
        Row indices of the top contributing pairs of :math:`A_{K_e}(q)`, best first
        (-1 = none).
    pair_contribution : np.ndarray [shape=(T, n_channels, n_pairs)]
        The pair's standardised similarity averaged over the channel's features.
    pair_similarity : np.ndarray [shape=(T, n_channels, n_pairs)]
        The pair's raw similarity averaged over the channel's features.
    n_unique_groups : int
        Distinct groups evaluated (identical groups of different queries are computed once).
    B, seed : int
        Of the null used.
    constant : np.ndarray [shape=(T,), dtype=bool] or None
        Queries excluded because their score column is constant (:func:`constant_queries`):
        every per-query array is NaN (pairs -1) for them, and the summaries leave them out.
    null_g : np.ndarray [shape=(n_K, n_features, B)] or None
        :math:`g_d` of the null's reference groups at :attr:`ks` (``null.g``), so that
        :meth:`summary` can resample them with the queries; ``None``: query-only intervals.
    null_used : np.ndarray [shape=(n_K, n_features), dtype=bool] or None
        The null's ``used`` at :attr:`ks`.
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
    constant: np.ndarray | None = None
    null_g: np.ndarray | None = None
    null_used: np.ndarray | None = None

    @property
    def n_queries(self) -> int:
        """``T``, the number of query columns (excluded ones included)."""
        return int(self.z.shape[2])

    @property
    def n_constant_excluded(self) -> int:
        """Queries left out because their score column is constant."""
        return 0 if self.constant is None else int(np.count_nonzero(self.constant))

    def z_at(self, k: int, channel: str) -> np.ndarray:
        """:math:`z_c(q)` for one ``K`` and channel → ``(T,)``.

        Parameters
        ----------
        k : int
            One of :attr:`ks`.
        channel : str
            One of :attr:`channels`.
        """
        if k not in self.ks:
            raise ParameterError(expected("k", f"one of {list(self.ks)}", k))
        if channel not in self.channels:
            raise ParameterError(expected("channel", f"one of {list(self.channels)}", channel))
        return self.z[self.ks.index(k), self.channels.index(channel)]

    def summary(self, *, n_boot: int = 1000, level: float = 0.95, seed: int = 0,
                null_resampling: bool = True) -> Any:
        r"""Per ``K`` and channel: ``zbar, pos, sig`` with bootstrap CIs (:func:`summarize`).

        Each bootstrap replicate resamples the queries and, when the result holds the null's
        reference groups (:attr:`null_g`), those ``B`` groups too: :math:`\mu`,
        :math:`\sigma` of the features and channels are recomputed from the resampled groups
        and every resampled query's :math:`z` with them, so the intervals carry the null's
        Monte-Carlo error as well as the query sampling.

        Parameters
        ----------
        n_boot : int
            Bootstrap resamples (0: no intervals).
        level : float
            Confidence level of the intervals.
        seed : int
            Seed of the bootstrap.
        null_resampling : bool
            Resample the null's groups jointly with the queries (default); ``False`` gives
            the query-only intervals of earlier releases (they ignore the null's error and
            under-cover).

        Returns
        -------
        pandas.DataFrame
            Columns ``K, channel, zbar, zbar_lo, zbar_hi, pos, pos_lo, pos_hi, sig, sig_lo,
            sig_hi, n_queries, null_mc_se, n_constant_excluded``: ``n_queries`` counts the
            queries summarised (finite :math:`z`); queries with a constant score column are
            not among them, ``n_constant_excluded`` says how many there were. ``null_mc_se``
            is the null's Monte-Carlo SE of ``zbar`` (SD over null resamples, queries fixed;
            NaN without null resampling or with ``n_boot < 2``).
        """
        import pandas as pd

        n_k, n_c, t = self.z.shape
        draws = None
        if null_resampling and self.null_g is not None and self.null_used is not None:
            draws = self._null_draws()
        stats = summarize(self.z.reshape(n_k * n_c, t).T, n_boot=n_boot, level=level,
                          seed=seed, null_draws=draws)
        stats.setdefault("null_mc_se", np.full(n_k * n_c, np.nan))
        df = pd.DataFrame({k: np.asarray(v).reshape(-1) for k, v in stats.items()})
        df.insert(0, "channel", np.tile(np.asarray(self.channels, dtype=object), n_k))
        df.insert(0, "K", np.repeat(np.asarray(self.ks), n_c))
        df["n_constant_excluded"] = self.n_constant_excluded
        return df

    def _null_draws(self) -> Any:
        """``null_draws`` for :func:`summarize`: resample the null's ``B`` groups."""
        from aria_tda.homogeneity.null import resampled_z

        assert self.null_g is not None and self.null_used is not None
        g_null, used = self.null_g, self.null_used
        chan = np.asarray([self.channels.index(c) for c, _ in self.features])
        n_k, n_c, t = self.z.shape
        b = g_null.shape[2]

        def draws(rng: np.random.Generator, r: int) -> np.ndarray:
            idx = rng.integers(0, b, size=(r, b))
            z = resampled_z(self.g, g_null, used, chan, n_c, idx)  # (r, nK, nC, T)
            return z.reshape(r, n_k * n_c, t).transpose(0, 2, 1)

        return draws

    def query_frame(self, query_ids: Any = None) -> Any:
        """Long table ``K, query, channel, z`` (query = id or column index).

        Parameters
        ----------
        query_ids : array-like [shape=(T,)], optional
            Query ids (default: column indices).
        """
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
        """Long table ``K, query, channel, rank, track_a, track_b, similarity, contribution``.

        Parameters
        ----------
        track_ids : array-like [shape=(N,)], optional
            Track ids for ``track_a`` / ``track_b`` (default: row indices).
        query_ids : array-like [shape=(T,)], optional
            Query ids (default: column indices).
        """
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
        chans = np.asarray(self.channels, dtype=object)
        return pd.DataFrame({
            "K": self.evidence_k,
            "query": np.repeat(q, n_c * n_p)[keep],
            "channel": np.tile(np.repeat(chans, n_p), t)[keep],
            "rank": np.tile(np.arange(1, n_p + 1), t * n_c)[keep],
            "track_a": a,
            "track_b": b,
            "similarity": self.pair_similarity.reshape(-1)[keep],
            "contribution": self.pair_contribution.reshape(-1)[keep],
        })


@dataclass
class _Call:
    """A checked :func:`homogeneity` call: what the fast path and the reference share."""

    channels: tuple[str, ...]
    feats: list[PreparedFeature]
    chan: np.ndarray
    grp: np.ndarray
    ks: np.ndarray
    evidence_k: int
    n_pairs: int
    mu: np.ndarray
    sigma: np.ndarray
    used: np.ndarray
    mu_c: np.ndarray
    sigma_c: np.ndarray
    evidence: EvidenceRequest | None
    offset: np.ndarray
    n_used: np.ndarray
    constant: np.ndarray | None
    k_index: np.ndarray


def _check_constant(constant: Any, t: int) -> np.ndarray | None:
    """The ``constant`` mask checked; one warning naming the count and a few columns."""
    if constant is None:
        return None
    mask = np.asarray(constant)
    if mask.dtype != bool or mask.shape != (t,):
        raise ParameterError(expected(
            "constant", f"a boolean mask of the {t} queries (constant_queries)",
            f"shape {mask.shape}, dtype {mask.dtype}"))
    bad = np.flatnonzero(mask)
    if bad.size:
        few = ", ".join(str(int(q)) for q in bad[:5]) + (", ..." if bad.size > 5 else "")
        warnings.warn(
            f"{bad.size} of {t} queries have a constant score column (column {few}): they rank "
            "no track, so they are excluded from homogeneity and its summaries "
            "(n_constant_excluded)", AriaWarning, stacklevel=4)
    return mask.copy()


def _check_call(groups: Any, prepared: Any, null: NullDistribution, ks: Sequence[int] | None,
                evidence_k: int | None, n_pairs: int, constant: Any) -> _Call:
    channels, feats, chan = flatten_prepared(prepared)
    if not isinstance(null, NullDistribution):
        raise ParameterError(expected("null", "a NullDistribution", type(null).__name__))
    null.check(prepared)
    arr = np.asarray(groups)
    if arr.ndim != 2 or arr.dtype.kind not in "iu" or arr.shape[0] < 1:
        raise ParameterError(expected(
            "groups", "an int array (n_queries, k_max)", f"shape {arr.shape}, dtype {arr.dtype}"))
    n = feats[0].n
    if arr.size and (arr.min() < 0 or arr.max() >= n):
        raise ParameterError(expected(
            "groups", f"row indices in [0, {n})", f"range [{arr.min()}, {arr.max()}]"))
    k_max = arr.shape[1]
    if ks is None:
        ks_arr = np.asarray([k for k in null.ks if k <= k_max], dtype=np.int64)
        if ks_arr.size == 0:
            raise ParameterError(expected(
                "groups", f"at least {min(null.ks)} columns (smallest K of the null)", k_max))
    else:
        ks_arr = check_ks(ks)
    for k in ks_arr:
        if k > k_max:
            raise ParameterError(expected(
                "ks", f"values <= the group width {k_max}", ks_arr.tolist()))
        null.k_index(int(k))
    if evidence_k is None:
        evidence_k = default_k_report(ks_arr.tolist())
    elif int(evidence_k) not in ks_arr:
        raise ParameterError(expected("evidence_k", f"one of ks {ks_arr.tolist()}", evidence_k))
    evidence_k = int(evidence_k)
    n_pairs = check_int("n_pairs", n_pairs, min_value=0)
    width = int(ks_arr[-1])
    grp = np.ascontiguousarray(arr[:, :width], dtype=np.int64)
    members = np.unique(grp)
    check_pool_valid(feats, members, what="groups")
    outside = members[~null.pool[members]]
    if outside.size:
        raise DataError(
            f"groups: {outside.size} track(s) outside the null's pool "
            f"(e.g. row {int(outside[0])}); draw groups and the null from the same pool"
        )
    srt = np.sort(grp, axis=1)
    if (srt[:, 1:] == srt[:, :-1]).any():
        raise DataError("groups: a row lists the same track twice")
    del srt

    ki = np.asarray([null.k_index(int(k)) for k in ks_arr])
    mu, sigma, used = null.mu[ki], null.sigma[ki], null.used[ki]
    evidence = None
    e_pos = int(np.flatnonzero(ks_arr == evidence_k)[0])
    offset = np.zeros(len(channels))
    n_used = np.bincount(chan[used[e_pos]], minlength=len(channels)).astype(float)
    if n_pairs:
        w = np.zeros(len(feats))
        for f in range(len(feats)):
            if used[e_pos, f]:
                w[f] = 1.0 / (n_used[chan[f]] * sigma[e_pos, f])
                offset[chan[f]] += mu[e_pos, f] * w[f]
        evidence = EvidenceRequest(evidence_k, w, min(n_pairs, evidence_k * (evidence_k - 1) // 2),
                                   len(channels))
    return _Call(channels, feats, chan, grp, ks_arr, evidence_k, n_pairs, mu, sigma, used,
                 null.mu_c[ki], null.sigma_c[ki], evidence, offset, n_used,
                 _check_constant(constant, grp.shape[0]), ki)


def _z_scores(call: _Call, g: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(z_feature, g_channel, z)`` from ``g`` (nK, nF, X); warns for empty channels."""
    zf = standardize(g, call.mu[..., None], call.sigma[..., None], call.used[..., None])
    gc = channel_mean(zf, call.chan, call.used, len(call.channels))
    with np.errstate(divide="ignore", invalid="ignore"):
        z = (gc - call.mu_c[..., None]) / call.sigma_c[..., None]
    bad_c = ~np.isfinite(call.sigma_c) | ~(call.sigma_c > 0)
    for a, c in zip(*np.nonzero(bad_c), strict=True):
        warnings.warn(
            f"K={call.ks[a]}: channel {call.channels[c]!r} has no informative feature; "
            "z_c is NaN", AriaWarning, stacklevel=3)
    return zf, gc, z


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
    constant: Any = None,
    client: Any = None,
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
    progress : bool, optional
        Draw a progress bar.
    constant : np.ndarray [shape=(T,), dtype=bool], optional
        Queries whose score column is constant (:func:`constant_queries`): excluded, with
        one :class:`~aria_tda.errors.AriaWarning` (their groups would be the first rows by the
        tie rule, not an attribution).
    client : dask.distributed.Client, optional
        Evaluate the distinct groups as Dask tasks over blocks of groups
        (:func:`aria_tda.homogeneity.distributed.evaluate_groups_dask`, the features scattered
        once); the standardisation against the null runs here. Same result as without.

    Returns
    -------
    HomogeneityResult

    Notes
    -----
    Cost per distinct group: one ``K_max x K_max`` block per feature (Gram via BLAS for
    vectors, bit-parallel LCS for chord sequences); every smaller ``K`` comes from prefix
    sums of the block's column sums. Queries with identical groups are evaluated once.
    """
    call = _check_call(groups, prepared, null, ks, evidence_k, n_pairs, constant)
    n_jobs = resolve_n_jobs(n_jobs)
    uniq, inverse = np.unique(call.grp, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    evidence = call.evidence
    if client is None:
        sums, pi, pv = evaluate_groups(call.feats, call.chan, uniq, call.ks, n_jobs=n_jobs,
                                       evidence=evidence, desc="homogeneity",
                                       progress=progress)
    else:
        from aria_tda.homogeneity.distributed import evaluate_groups_dask

        (sums, pi, pv), = evaluate_groups_dask(client, call.feats, call.chan, [(uniq, call.ks)],
                                               evidence=evidence, progress=progress,
                                               desc="homogeneity")
    if evidence is not None:  # a channel without an informative feature has no evidence pairs
        pi[:, call.n_used == 0] = -1
    g_u = sums.transpose(1, 2, 0) / pairs_per_k(call.ks)[None, :, None]  # (nF, nK, U)
    g_u = g_u.transpose(1, 0, 2)  # (nK, nF, U)
    zf_u, gc_u, z_u = _z_scores(call, g_u)

    t = call.grp.shape[0]
    n_c = len(call.channels)
    if evidence is not None:
        pair_rows = pi[inverse]
        contrib = pv[inverse] - call.offset[None, :, None]
        contrib[pair_rows[..., 0] < 0] = np.nan
        pair_sim = pair_raw_similarity(call.feats, call.chan, n_c, pi, inverse)
    else:
        pair_rows = np.zeros((t, n_c, 0, 2), dtype=np.int64)
        contrib = np.zeros((t, n_c, 0))
        pair_sim = np.zeros((t, n_c, 0))
    return _result(call, null, g_u[..., inverse], zf_u[..., inverse], gc_u[..., inverse],
                   z_u[..., inverse], pair_rows, contrib, pair_sim, int(uniq.shape[0]))


def _result(call: _Call, null: NullDistribution, g: np.ndarray, zf: np.ndarray, gc: np.ndarray,
            z: np.ndarray, pair_rows: np.ndarray, contrib: np.ndarray, pair_sim: np.ndarray,
            n_unique: int) -> HomogeneityResult:
    if call.constant is not None and call.constant.any():
        c = call.constant
        for arr in (g, zf, gc, z):
            arr[..., c] = np.nan
        pair_rows[c] = -1
        contrib[c] = np.nan
        pair_sim[c] = np.nan
    return HomogeneityResult(
        ks=tuple(int(k) for k in call.ks), channels=call.channels,
        features=tuple((call.channels[c], f.name)
                       for f, c in zip(call.feats, call.chan, strict=True)),
        g=g, z_feature=zf, g_channel=gc, z=z, evidence_k=call.evidence_k,
        pair_rows=pair_rows, pair_contribution=contrib, pair_similarity=pair_sim,
        n_unique_groups=n_unique, B=null.B, seed=null.seed, constant=call.constant,
        null_g=null.g[call.k_index], null_used=null.used[call.k_index],
    )


def homogeneity_reference(
    groups: Any,
    prepared: Any,
    null: NullDistribution,
    *,
    ks: Sequence[int] | None = None,
    evidence_k: int | None = None,
    n_pairs: int = 10,
    n_jobs: int | None = None,
    progress: bool | None = None,
    constant: Any = None,
    client: Any = None,
) -> HomogeneityResult:
    r"""Exact reference of :func:`homogeneity`: every query's group on its own, every
    :math:`g_d` summed pair by pair (:func:`~aria_tda.homogeneity.sweep.group_sums_reference`),
    each channel's pair contributions
    :math:`\frac{1}{|F_c|}\sum_d (\mathrm{sim}_d - \mu_d)/\sigma_d` sorted in full (ties:
    earlier pair in ``(j, i)`` scan order).

    Parameters
    ----------
    groups : np.ndarray [shape=(T, k_max), dtype=int]
        Attributed groups, rank order.
    prepared : dict[str, list[PreparedFeature]]
        The features.
    null : NullDistribution
        The null.
    ks : sequence of int, optional
        The sweep.
    evidence_k : int, optional
        ``K`` of the evidence pairs.
    n_pairs : int
        Pairs kept per query and channel.
    n_jobs : int, optional
        Ignored.
    progress : bool, optional
        Ignored.
    constant : np.ndarray [shape=(T,), dtype=bool], optional
        Queries to exclude.
    client : dask.distributed.Client, optional
        Ignored.
    """
    call = _check_call(groups, prepared, null, ks, evidence_k, n_pairs, constant)
    t, n_c, n_f = call.grp.shape[0], len(call.channels), len(call.feats)
    sums = group_sums_reference(call.feats, call.grp, call.ks)  # (T, nF, nK)
    g = sums.transpose(2, 1, 0) / pairs_per_k(call.ks)[:, None, None]
    zf, gc, z = _z_scores(call, g)
    n_top = call.evidence.n_pairs if call.evidence is not None else 0
    pair_rows = np.full((t, n_c, n_top, 2), -1, dtype=np.int64)
    contrib = np.full((t, n_c, n_top), np.nan)
    pair_sim = np.full((t, n_c, n_top), np.nan)
    if n_top:
        a = int(np.flatnonzero(call.ks == call.evidence_k)[0])
        jj, ii = np.nonzero(np.tril(np.ones((call.evidence_k, call.evidence_k), bool), -1))
        for q in range(t):
            rows_i, rows_j = call.grp[q, ii], call.grp[q, jj]
            sims = [call.feats[f].pair_similarity(rows_i, rows_j) for f in range(n_f)]
            for c in range(n_c):
                members = [f for f in range(n_f) if call.chan[f] == c]
                used = [f for f in members if call.used[a, f]]
                if not used:
                    continue
                e = sum((sims[f] - call.mu[a, f]) / call.sigma[a, f] for f in used) / len(used)
                order = np.argsort(-np.asarray(e), kind="stable")[:n_top]
                m = order.size
                pair_rows[q, c, :m, 0] = rows_i[order]
                pair_rows[q, c, :m, 1] = rows_j[order]
                contrib[q, c, :m] = np.asarray(e)[order]
                pair_sim[q, c, :m] = np.mean([sims[f][order] for f in members], axis=0)
    n_unique = int(np.unique(call.grp, axis=0).shape[0])
    return _result(call, null, g, zf, gc, z, pair_rows, contrib, pair_sim, n_unique)


def run_homogeneity(
    s_track: Any,
    prepared: Any,
    *,
    ks: Sequence[int] = DEFAULT_KS,
    B: int | str = 200,
    seed: int = 0,
    null: NullDistribution | None = None,
    pool: Any = None,
    chunk_rows: int | None = None,
    evidence_k: int | None = None,
    n_pairs: int = 10,
    n_jobs: int | None = None,
    max_missing_fraction: float = 0.5,
    progress: bool | None = None,
    client: Any = None,
    segment_counts: Any = None,
    normalize: str = "zscore",
) -> tuple[HomogeneityResult, NullDistribution, np.ndarray]:
    """Groups, null (unless given) and homogeneity of one ``S_track`` (original or residual).

    Query columns that are constant over the pool (:func:`constant_queries`) are excluded,
    with one warning.

    Parameters
    ----------
    s_track : np.ndarray [shape=(N, T)] | ScoreSource | path
        Track-level scores.
    prepared : dict[str, list[PreparedFeature]]
        The features, indexed by the rows of ``s_track``.
    ks : sequence of int
        The K sweep.
    B : int or "auto"
        Random groups per ``K`` of the null. ``"auto"``: start at
        :data:`~aria_tda.homogeneity.null.AUTO_B_START`, measure the query-resampling SE of
        :math:`\bar z` (``sd(z)/sqrt(T)`` per ``K`` and channel) and double ``B`` until the
        null's Monte-Carlo SE is below :data:`~aria_tda.homogeneity.null.AUTO_FRACTION` of it
        (see :func:`null_distribution`); ``null.B`` / ``result.B`` record the ``B`` used.
    seed : int
        Seed of the null.
    null : NullDistribution, optional
        A null computed before for the same features and pool (reused, after a check).
    pool : bool mask or int rows, optional
        Eligible rows (default :func:`feature_pool`).
    chunk_rows : int, optional
        Rows per chunk when streaming ``s_track``.
    evidence_k : int, optional
        ``K`` of the evidence pairs.
    n_pairs : int
        Evidence pairs per query and channel.
    n_jobs : int, optional
        Worker threads.
    max_missing_fraction : float
        See :func:`feature_pool`.
    progress : bool, optional
        Draw progress bars.
    client : dask.distributed.Client, optional
        Run on a Dask cluster: the null (when not given) once, its random groups evaluated
        as tasks; the top-K groups and the constant queries in one pass of tasks over blocks
        of query columns; the queries' groups as tasks over blocks of groups
        (:mod:`aria_tda.homogeneity.distributed`). Same result as without.
    segment_counts : int array [shape=(N,)], optional
        Segments averaged into each row of ``s_track``; unequal counts over the pool give the
        segment-matched null (:func:`null_distribution`), and a given ``null`` is checked.
    normalize : {"zscore", "rank"}
        The normalisation ``s_track`` was aggregated with (for the segment-matched null).

    Returns
    -------
    result : HomogeneityResult
    null : NullDistribution
        Pass it back in for the next score matrix over the same tracks (the residual,
        another method) so it is computed only once.
    groups : np.ndarray [shape=(T, K_max), dtype=int64]
    """
    ks_arr = check_ks(ks)
    if pool is None:
        mask = feature_pool(prepared, max_missing_fraction=max_missing_fraction)
    else:
        mask = pool
    auto = null is None and isinstance(B, str)
    if auto and B != "auto":
        raise ParameterError(expected("B", 'an integer >= 2 or "auto"', B))
    if null is None:
        null = null_distribution(prepared, ks=ks_arr.tolist(), pool=mask,
                                 B=AUTO_B_START if auto else B, seed=seed, n_jobs=n_jobs,
                                 progress=progress, client=client,
                                 segment_counts=segment_counts, normalize=normalize)
    else:
        null.check(prepared, pool=mask, segment_counts=segment_counts, normalize=normalize)
    if client is None:
        groups = top_k_groups(s_track, int(ks_arr[-1]), pool=mask, chunk_rows=chunk_rows,
                              progress=progress)
        constant = constant_queries(s_track, pool=mask, chunk_rows=chunk_rows)
    else:
        from aria_tda.homogeneity.distributed import groups_and_constant_dask

        groups, constant = groups_and_constant_dask(s_track, int(ks_arr[-1]), mask, client,
                                                    chunk_rows=chunk_rows, progress=progress)
    res = homogeneity(groups, prepared, null, ks=ks_arr.tolist(), evidence_k=evidence_k,
                      n_pairs=n_pairs, n_jobs=n_jobs, progress=progress, constant=constant,
                      client=client)
    if auto:
        first = null
        null = auto_null(prepared, ks=ks_arr.tolist(), pool=mask, B="auto", seed=seed,
                         n_jobs=n_jobs, progress=progress, query_se=_query_se(res.z),
                         first=first, client=client, segment_counts=segment_counts,
                         normalize=normalize)
        if null.B != first.B:
            with warnings.catch_warnings():  # the first pass has already warned
                warnings.simplefilter("ignore", AriaWarning)
                res = homogeneity(groups, prepared, null, ks=ks_arr.tolist(),
                                  evidence_k=evidence_k, n_pairs=n_pairs, n_jobs=n_jobs,
                                  progress=progress, constant=constant, client=client)
    return res, null, groups  # type: ignore[return-value]


def _query_se(z: np.ndarray) -> np.ndarray:
    """Query-resampling SE of z-bar, ``sd(z)/sqrt(n)`` per K and channel (inf if undefined)."""
    with warnings.catch_warnings(), np.errstate(invalid="ignore", divide="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        n = np.isfinite(z).sum(axis=2)
        se = np.nanstd(z, axis=2, ddof=1) / np.sqrt(n)
    return np.where(np.isfinite(se) & (se > 0), se, np.inf)
