r"""The null distribution of homogeneity (paper Eqs. g_d, z_c): ``B`` random groups per ``K``.

For every ``K`` and feature ``d``, ``B`` random groups of size ``K`` drawn uniformly without
replacement from the pool give :math:`\mu_d^{null}(K)`, :math:`\sigma_d^{null}(K)`; the
channel null :math:`\mu_c, \sigma_c` is :math:`\tilde g_c` of the same ``B`` groups. It depends
only on the pool, ``K`` and the features, so it is computed once and reused across queries,
methods and variants (:meth:`NullDistribution.save` / :meth:`NullDistribution.load`).

With a segment map whose tracks have unequal segment counts :math:`n_i`, the top-K of a
*random* score column is not a uniform draw: the track mean of Eq. track-agg has variance
:math:`\propto 1/n_i`, so tracks with few segments reach the top more often. The
*segment-matched* null (``segment_counts=``) draws each reference group as the top-``K`` of
one simulated random ``S_track`` column, normalised and aggregated as the study does, so that
random scores read as :math:`z_c \approx 0` whatever the segment map (see
:func:`null_distribution`). With equal counts it is the uniform null.

:func:`null_distribution_reference` is its exact reference (the same random groups, every
pair similarity recomputed and summed directly).

Monte-Carlo error: ``mu``, ``sigma``, ``mu_c``, ``sigma_c`` are estimates from ``B`` groups, so
every query's :math:`z_c` shares their error. The null keeps every group's :math:`g_d` (``g``),
so a bootstrap can resample the ``B`` groups jointly with the queries
(:meth:`aria_tda.homogeneity.HomogeneityResult.summary`); :meth:`NullDistribution.mc_se` gives the
error per ``K`` and channel, and ``B="auto"`` grows ``B`` (200, 400, ... up to
:data:`AUTO_B_MAX`) until it is below :data:`AUTO_FRACTION` of the query-resampling SE.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from aria_tda._checks import check_int
from aria_tda.errors import AriaWarning, ManifestMismatchError, ParameterError, expected
from aria_tda.homogeneity.draws import describe_sampling, draw_groups, sampling_of
from aria_tda.homogeneity.groups import (
    check_ks,
    check_pool_valid,
    digest_pool,
    feature_pool,
    flatten_prepared,
)
from aria_tda.homogeneity.scan_checks import pool_mask
from aria_tda.homogeneity.sweep import (
    DEFAULT_KS,
    channel_mean,
    evaluate_groups,
    group_sums_reference,
    pairs_per_k,
    resolve_n_jobs,
    standardize,
)

__all__ = ["AUTO_B_MAX", "AUTO_B_START", "AUTO_FRACTION", "NullDistribution", "auto_null",
           "null_distribution", "resampled_z"]

#: first ``B`` tried by ``B="auto"`` (doubled until the Monte-Carlo error is small enough)
AUTO_B_START = 200
#: largest ``B`` tried by ``B="auto"``
AUTO_B_MAX = 3200
#: ``B="auto"`` stops once the null's Monte-Carlo SE of z̄ is below this fraction of the
#: query-resampling SE
AUTO_FRACTION = 0.25
#: bootstrap resamples of the reference groups behind :meth:`NullDistribution.mc_se`
MC_SE_BOOT = 200


def resampled_z(g_query: np.ndarray, g_null: np.ndarray, used: np.ndarray, chan: np.ndarray,
                n_c: int, idx: np.ndarray) -> np.ndarray:
    """:math:`z_c` of the queries under resampled nulls.

    ``g_query`` (nK, nF, T), ``g_null`` (nK, nF, B), ``used`` (nK, nF), ``idx`` (R, B) rows of
    resampled reference groups -> ``(R, nK, nC, T)``: per replicate, ``mu_d, sigma_d`` and
    ``mu_c, sigma_c`` recomputed from the resampled groups (features ``used`` as in the
    original null).

    Parameters
    ----------
    g_query : numpy.ndarray
        The queries' pair sums, ``(nK, nF, T)``.
    g_null : numpy.ndarray
        The reference groups' pair sums, ``(nK, nF, B)``.
    used : numpy.ndarray
        ``(nK, nF)`` boolean: features used at each ``K``.
    chan : numpy.ndarray
        The channel of each feature.
    n_c : int
        The number of channels.
    idx : numpy.ndarray
        ``(R, B)`` rows of the resampled reference groups.

    Returns
    -------
    numpy.ndarray
        ``(R, nK, nC, T)``.
    """
    n_k, n_f, b = g_null.shape
    t = g_query.shape[2]
    out = np.empty((idx.shape[0], n_k, n_c, t))
    step = max(1, 2**21 // max(1, n_k * n_f * (b + t)))
    for s in range(0, idx.shape[0], step):
        ii = idx[s : s + step]
        r = ii.shape[0]
        g = g_null[:, :, ii]  # (nK, nF, r, B)
        mu = g.mean(axis=3, keepdims=True)
        sd = g.std(axis=3, ddof=1, keepdims=True)
        with np.errstate(divide="ignore", invalid="ignore"):
            zn = ((g - mu) / sd).reshape(n_k, n_f, r * b)
            zq = ((g_query[:, :, None, :] - mu) / sd).reshape(n_k, n_f, r * t)
        gcn = channel_mean(zn, chan, used, n_c).reshape(n_k, n_c, r, b)
        gcq = channel_mean(zq, chan, used, n_c).reshape(n_k, n_c, r, t)
        mu_c = gcn.mean(axis=3, keepdims=True)
        sd_c = gcn.std(axis=3, ddof=1, keepdims=True)
        with np.errstate(divide="ignore", invalid="ignore"):
            out[s : s + r] = ((gcq - mu_c) / sd_c).transpose(2, 0, 1, 3)
    return out


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
    B_auto : bool
        Whether ``B`` was chosen by ``B="auto"`` (``B`` is the number used).
    pool_digest : str
    feature_digests : tuple[str, ...]
        Content hashes of the prepared features; reuse with other data is refused.
    sampling : {"uniform", "segment-matched"}
        How the reference groups were drawn (:func:`null_distribution`).
    segments_digest, normalize : str or None
        Of a segment-matched null: the hash of the segment counts and the normalisation it
        simulates (``None`` for a uniform null); reuse with another segment map is refused.
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
    B_auto: bool = False
    sampling: str = "uniform"
    segments_digest: str | None = None
    normalize: str | None = None

    def k_index(self, k: int) -> int:
        """Position of ``K = k`` in :attr:`ks`.

        Parameters
        ----------
        k : int
            A group size of this null.
        """
        if k not in self.ks:
            raise ParameterError(expected("K", f"one of the null's K values {list(self.ks)}", k))
        return self.ks.index(k)

    def manifest_fields(self) -> dict[str, Any]:
        """The parameters and digests recorded in the null's manifest."""
        return {
            "ks": list(self.ks),
            "B": self.B,
            "B_auto": self.B_auto,
            "seed": self.seed,
            "channels": list(self.channels),
            "features": [f"{c}/{n}" for c, n in self.features],
            "n_rows": self.n_rows,
            "n_pool": self.n_pool,
            "pool_digest": self.pool_digest,
            "feature_digests": list(self.feature_digests),
            "sampling": self.sampling,
            "segments_digest": self.segments_digest,
            "normalize": self.normalize,
        }

    def check(self, prepared: Any, *, pool: Any = None, segment_counts: Any = None,
              normalize: str = "zscore") -> None:
        """Raise :class:`ManifestMismatchError` unless this null was made from ``prepared``
        (and ``pool``, and the segment map of ``segment_counts`` and ``normalize``).

        Parameters
        ----------
        prepared : dict[str, list[PreparedFeature]]
            The features to use the null with.
        pool : bool mask or int rows, optional
            The pool to use it with (not checked when ``None``).
        segment_counts : int array [shape=(n_rows,)], optional
            Segments per row of the S_track to use it with (not checked when ``None``): the
            null must be the one :func:`null_distribution` makes for them.
        normalize : {"zscore", "rank"}
            The normalisation of that S_track (checked with ``segment_counts``).
        """
        channels, feats, chan = flatten_prepared(prepared)
        problems = []
        names = tuple((channels[c], f.name) for f, c in zip(feats, chan, strict=True))
        if names != self.features:
            problems.append(f"features: null has {list(self.features)}, asked {list(names)}")
        elif tuple(f.digest for f in feats) != self.feature_digests:
            changed = [n for (_, n), a, b in zip(names, self.feature_digests,
                                                 (f.digest for f in feats), strict=True)
                       if a != b]
            problems.append(f"feature data/scale differ for {changed}")
        if feats[0].n != self.n_rows:
            problems.append(f"n_rows: null has {self.n_rows}, asked {feats[0].n}")
        elif pool is not None and digest_pool(pool_mask(pool, self.n_rows)) != self.pool_digest:
            problems.append("pool: a different set of eligible tracks")
        if segment_counts is not None and feats[0].n == self.n_rows:
            mask = self.pool if pool is None else pool_mask(pool, self.n_rows)
            want = sampling_of(segment_counts, normalize, mask)[:3]
            have = (self.sampling, self.segments_digest, self.normalize)
            if want != have:
                problems.append(f"segments: null has {describe_sampling(*have)} reference groups, "
                                f"asked {describe_sampling(*want)}")
        if problems:
            raise ManifestMismatchError(
                "null distribution was made with other data; refusing to reuse it:\n  "
                + "\n  ".join(problems))

    def mc_se(self, *, n_boot: int = MC_SE_BOOT, seed: int = 0) -> np.ndarray:
        r"""Monte-Carlo SE of :math:`z_c` due to the null's ``B`` groups, per ``K`` and channel.

        The SD, over bootstrap resamples of the ``B`` reference groups, of :math:`z_c` of a
        group whose :math:`g_d` equal the null means :math:`\mu_d` (a query at the null's
        centre). It is the shift every query's :math:`z_c` shares, so it is also the
        Monte-Carlo SE of :math:`\bar z` near the null (about :math:`1/\sqrt{B}`).

        Parameters
        ----------
        n_boot : int
            Bootstrap resamples of the reference groups (>= 2).
        seed : int
            Seed of the resamples.

        Returns
        -------
        np.ndarray [shape=(n_K, n_channels)]
        """
        n_boot = check_int("n_boot", n_boot, min_value=2)
        rng = np.random.default_rng(check_int("seed", seed, min_value=0))
        idx = rng.integers(0, self.B, size=(n_boot, self.B))
        chan = np.asarray([self.channels.index(c) for c, _ in self.features])
        z = resampled_z(self.mu[..., None], self.g, self.used, chan, len(self.channels), idx)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return np.asarray(np.nanstd(z[..., 0], axis=0, ddof=1))

    def to_frame(self) -> Any:
        r"""Long table ``K, channel, feature, mu, sigma, B, mc_se`` (channel rows have
        ``feature='*'``).

        ``mc_se`` is the Monte-Carlo SE of the estimate: on feature rows that of
        :math:`\mu_d` (:math:`\sigma_d/\sqrt{B}`, units of :math:`g_d`); on channel rows that of
        :math:`z_c` near the null (:meth:`mc_se`, units of :math:`z`).
        """
        import pandas as pd

        mc = self.mc_se()
        rows = []
        for a, k in enumerate(self.ks):
            for f, (c, name) in enumerate(self.features):
                rows.append((k, c, name, self.mu[a, f], self.sigma[a, f], self.B,
                             self.sigma[a, f] / np.sqrt(self.B)))
            for ci, cname in enumerate(self.channels):
                rows.append((k, cname, "*", self.mu_c[a, ci], self.sigma_c[a, ci], self.B,
                             mc[a, ci]))
        return pd.DataFrame(rows, columns=["K", "channel", "feature", "mu", "sigma", "B",
                                           "mc_se"])

    def save(self, path: str | os.PathLike[str]) -> Any:
        """Write an ``.npz`` atomically, with its manifest (``<path>.manifest.json``).

        Parameters
        ----------
        path : str or path-like
            Target file.
        """
        from pathlib import Path

        from aria_tda._io import atomic_path
        from aria_tda.manifest import make_manifest, write_manifest

        path = Path(path)
        with atomic_path(path) as tmp, open(tmp, "wb") as fh:
            np.savez(fh, g=self.g, mu=self.mu, sigma=self.sigma, used=self.used,
                     g_channel=self.g_channel, mu_c=self.mu_c, sigma_c=self.sigma_c,
                     pool=self.pool)
        write_manifest(path, make_manifest("null_distribution", **self.manifest_fields()))
        return path

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, prepared: Any = None, pool: Any = None,
             segment_counts: Any = None, normalize: str = "zscore") -> NullDistribution:
        """Read a null written by :meth:`save`; with ``prepared`` (and ``pool``, and
        ``segment_counts``), check it matches. A null saved before segment-matched nulls
        existed reads as uniform.

        Parameters
        ----------
        path : str or path-like
            The ``.npz`` written by :meth:`save`.
        prepared : dict[str, list[PreparedFeature]], optional
            Check the null was made from these features (:meth:`check`).
        pool : bool mask or int rows, optional
            ... and this pool.
        segment_counts : int array [shape=(n_rows,)], optional
            ... and this segment map (:meth:`check`).
        normalize : {"zscore", "rank"}
            ... normalised this way.
        """
        from aria_tda._checks import check_existing_path
        from aria_tda.errors import FileFormatError
        from aria_tda.manifest import read_manifest

        p = check_existing_path("path", path, kind="file")
        m = read_manifest(p)
        if m is None or m.get("kind") != "null_distribution":
            raise FileFormatError(f"path: {str(p)!r} has no null_distribution manifest")
        names = ("g", "mu", "sigma", "used", "g_channel", "mu_c", "sigma_c", "pool")
        try:
            with np.load(p) as z:
                arrays = {k: z[k] for k in names}
        except (OSError, KeyError, ValueError) as exc:
            raise FileFormatError(
                f"path: cannot read null distribution {str(p)!r}: {exc}") from None
        null = cls(
            ks=tuple(m["ks"]), B=int(m["B"]), seed=int(m["seed"]), channels=tuple(m["channels"]),
            features=tuple((s.split("/", 1)[0], s.split("/", 1)[1]) for s in m["features"]),
            n_rows=int(m["n_rows"]), n_pool=int(m["n_pool"]), pool_digest=m["pool_digest"],
            feature_digests=tuple(m["feature_digests"]), B_auto=bool(m.get("B_auto", False)),
            sampling=str(m.get("sampling") or "uniform"),
            segments_digest=m.get("segments_digest"), normalize=m.get("normalize"), **arrays,
        )
        if null.g.shape != (len(null.ks), len(null.features), null.B):
            raise ManifestMismatchError(
                f"path: null distribution {str(p)!r} does not hold the g_d of its {null.B} "
                f"reference groups (shape {null.g.shape}); recompute it with "
                "null_distribution")
        if prepared is not None:
            null.check(prepared, pool=pool, segment_counts=segment_counts, normalize=normalize)
        return null


def null_distribution(
    prepared: Any,
    *,
    ks: Sequence[int] = DEFAULT_KS,
    pool: Any = None,
    B: int | str = 200,
    seed: int = 0,
    n_jobs: int | None = None,
    progress: bool | None = None,
    query_se: Any = None,
    client: Any = None,
    segment_counts: Any = None,
    normalize: str = "zscore",
) -> NullDistribution:
    r"""Null distribution of homogeneity from ``B`` random groups per ``K`` (Eqs. g_d, z_c).

    For each ``K`` independently (in increasing order), ``B`` reference groups of size ``K``
    are drawn with ``numpy.random.default_rng(seed)``:

    - **uniform** (the paper's null; without ``segment_counts``, or when every pool row has
      the same count): ``B`` calls of ``rng.choice(pool_rows, K, replace=False)``.
    - **segment-matched** (``segment_counts`` unequal over the pool): each group is the
      top-``K`` over the pool (decreasing score, ties to the lower row, as
      :func:`~aria_tda.homogeneity.top_k_groups`) of one simulated random ``S_track`` column:
      i.i.d. scores for every segment of every row, normalised over all
      :math:`M = \sum_i n_i` segments as ``normalize`` says, averaged per track
      (Eq. track-agg). ``zscore``: i.i.d. :math:`N(0, 1)` segment scores. Their track mean is
      exactly :math:`N(0, 1/n_i)`, independent across tracks, and z-scoring the column maps
      every segment by the same increasing affine map, which leaves the order of the track
      means unchanged; so one :math:`N(0,1)/\sqrt{n_i}` draw per pool row (``B`` blocks of
      ``rng.standard_normal``) gives the top-``K`` exactly, in distribution. ``rank``: the
      ranks of i.i.d. continuous scores are a uniformly random permutation of ``1..M``
      (whatever their distribution); the column is simulated segment by segment
      (``rng.permuted``), each row's mean rank is its rank sum (an exact integer) over
      :math:`n_i`, so equal means tie exactly (:func:`~aria_tda.scores.aggregate`'s rounding
      may order them when an :math:`n_i` is not a power of 2).

    What is exact and what is modelled: the segment-matched groups have exactly the
    distribution of the top-``K`` of a random column under the study's normalisation and
    aggregation; for ``rank`` this holds for any i.i.d. continuous segment scores, for
    ``zscore`` for i.i.d. Gaussian ones (other i.i.d. scores give Gaussian track means only
    approximately, for large :math:`n_i`). Scores correlated within a track are not modelled.
    The uniform null ignores ties at the ``K``-th place, which ``rank`` with equal
    :math:`n_i \ge 2` can produce (probability :math:`O(K/M)` per column).

    Parameters
    ----------
    prepared : dict[str, list[PreparedFeature]]
        The features, indexed by the rows of S_track.
    ks : sequence of int
        Group sizes (each >= 2 and <= pool size).
    pool : bool mask or int rows, optional
        Eligible rows; default :func:`feature_pool` (tracks with every feature).
    B : int or "auto"
        Random groups per ``K`` (>= 2; the paper uses 200). ``"auto"``: ``B`` =
        :data:`AUTO_B_START`, doubled (a fresh null with the same ``seed`` each time, so the
        result equals ``null_distribution(B=null.B)``) until :meth:`NullDistribution.mc_se`
        is below :data:`AUTO_FRACTION` × ``query_se`` in every ``K`` and channel, or ``B``
        reaches :data:`AUTO_B_MAX` (then with a warning); ``null.B`` is the ``B`` used.
    seed : int
        Seed of the random groups.
    n_jobs : int, optional
        Worker threads (default: the CPUs available).
    progress : bool, optional
        Draw progress bars.
    query_se : float or np.ndarray [shape=(n_K, n_channels)], optional
        The query-resampling SE of :math:`\bar z` to compare with (required by ``"auto"``;
        :func:`~aria_tda.homogeneity.run_homogeneity` measures it on the queries; ``1/sqrt(T)``
        is its value for ``T`` queries of unit-variance ``z``).
    client : dask.distributed.Client, optional
        Evaluate the random groups as Dask tasks
        (:func:`aria_tda.homogeneity.distributed.evaluate_groups_dask`; the features scattered
        once). The groups are drawn here as without a client, so the null is the same.
    segment_counts : int array [shape=(n_rows,)], optional
        Segments per row of ``S_track`` (each >= 1; ``numpy.bincount`` of the segment map's
        track codes, :func:`aria_tda.scores.segment_codes`). ``None``: one segment per row.
    normalize : {"zscore", "rank"}
        The per-query normalisation ``S_track`` was aggregated with (``auto`` resolved: the
        ``normalize`` its manifest records). Used only by a segment-matched null.

    Returns
    -------
    NullDistribution
        ``sampling`` says which null it is; a segment-matched one records the digest of
        ``segment_counts`` and ``normalize`` (:meth:`NullDistribution.check`).
    """
    if isinstance(B, str):
        return auto_null(prepared, ks=ks, pool=pool, B=B, seed=seed, n_jobs=n_jobs,
                         progress=progress, query_se=query_se, client=client,
                         segment_counts=segment_counts, normalize=normalize)
    return _null(prepared, ks=ks, pool=pool, B=B, seed=seed, n_jobs=n_jobs, progress=progress,
                 exact=False, client=client, segment_counts=segment_counts, normalize=normalize)


def _auto_ratio(null: NullDistribution, query_se: Any) -> float:
    """Largest ``mc_se / query_se`` over the null's ``K`` and channels (NaN cells ignored)."""
    se = np.broadcast_to(np.asarray(query_se, dtype=np.float64), null.mu_c.shape)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = null.mc_se() / se
    ratio = ratio[np.isfinite(ratio)]
    return float(ratio.max()) if ratio.size else 0.0


def auto_null(prepared: Any, *, ks: Sequence[int], pool: Any, B: str, seed: int,
              n_jobs: int | None, progress: bool | None, query_se: Any,
              first: NullDistribution | None = None, client: Any = None,
              segment_counts: Any = None, normalize: str = "zscore") -> NullDistribution:
    """``B="auto"``: double ``B`` until the null's MC error is small (see
    :func:`null_distribution`); ``first`` is an already computed null to start from.

    Parameters
    ----------
    prepared : dict
        Channel name to prepared features.
    ks : sequence of int
        Group sizes.
    pool : array_like or None
        The track pool.
    B : str
        ``"auto"`` (anything else is refused).
    seed : int
        The null's seed.
    n_jobs : int or None
        Threads.
    progress : bool or None
        Draw progress bars.
    query_se : array_like
        The query-resampling SE of z-bar per cell (positive; ``inf`` ignores a cell).
    first : NullDistribution, optional
        A null already computed (its ``B`` is the first tried).
    client : dask.distributed.Client, optional
        Draw the groups on a cluster.
    segment_counts : array_like, optional
        Segments per track: the segment-matched null.
    normalize : str
        The normalisation the segment-matched null simulates.

    Returns
    -------
    NullDistribution
        The first null whose Monte-Carlo SE is at most :data:`AUTO_FRACTION` of ``query_se``,
        or the one at :data:`AUTO_B_MAX` (with a warning); marked ``B_auto``.

    Raises
    ------
    ParameterError
        ``B`` other than ``"auto"``, no ``query_se``, or a non-positive SE.
    """
    import dataclasses

    if B != "auto":
        raise ParameterError(expected("B", 'an integer >= 2 or "auto"', B))
    if query_se is None:
        raise ParameterError(expected(
            "query_se", 'the query-resampling SE of z-bar, with B="auto"', None))
    se = np.asarray(query_se, dtype=np.float64)
    if not np.all(se > 0):
        raise ParameterError(expected("query_se", "positive SEs (inf: ignore a cell)",
                                      se.tolist()))
    b = AUTO_B_START if first is None else first.B
    null = first
    while True:
        if null is None:
            null = _null(prepared, ks=ks, pool=pool, B=b, seed=seed, n_jobs=n_jobs,
                         progress=progress, exact=False, client=client,
                         segment_counts=segment_counts, normalize=normalize)
        ratio = _auto_ratio(null, se)
        if ratio <= AUTO_FRACTION:
            break
        if b >= AUTO_B_MAX:
            warnings.warn(
                f'B="auto": at B = {b} the null\'s Monte-Carlo SE of z-bar is still {ratio:.2f} '
                f"x the query-resampling SE (target {AUTO_FRACTION}); the intervals include it",
                AriaWarning, stacklevel=3)
            break
        b = min(2 * b, AUTO_B_MAX)
        null = None
    return dataclasses.replace(null, B_auto=True)


def null_distribution_reference(
    prepared: Any,
    *,
    ks: Sequence[int] = DEFAULT_KS,
    pool: Any = None,
    B: int | str = 200,
    seed: int = 0,
    n_jobs: int | None = None,
    progress: bool | None = None,
    query_se: Any = None,
    client: Any = None,
    segment_counts: Any = None,
    normalize: str = "zscore",
) -> NullDistribution:
    """Exact reference of :func:`null_distribution`: the same random groups (uniform or
    segment-matched), each group's ``g_d`` from every pair's similarity summed directly
    (:func:`group_sums_reference`).

    Parameters
    ----------
    prepared : dict[str, list[PreparedFeature]]
        The features.
    ks : sequence of int
        Group sizes.
    pool : bool mask or int rows, optional
        Eligible rows.
    B : int
        Random groups per ``K`` (``"auto"`` is not supported by the reference).
    seed : int
        Seed of the random groups.
    n_jobs : int, optional
        Ignored.
    progress : bool, optional
        Ignored.
    query_se : float or np.ndarray, optional
        Ignored (only used by ``B="auto"``).
    client : dask.distributed.Client, optional
        Ignored.
    segment_counts : int array [shape=(n_rows,)], optional
        Segments per row of ``S_track``.
    normalize : {"zscore", "rank"}
        Its normalisation.
    """
    return _null(prepared, ks=ks, pool=pool, B=B, seed=seed, n_jobs=1, progress=False,
                 exact=True, segment_counts=segment_counts, normalize=normalize)


def _null(prepared: Any, *, ks: Sequence[int], pool: Any, B: int | str, seed: int,
          n_jobs: int | None, progress: bool | None, exact: bool,
          client: Any = None, segment_counts: Any = None,
          normalize: str = "zscore") -> NullDistribution:
    channels, feats, chan = flatten_prepared(prepared)
    ks_arr = check_ks(ks)
    if isinstance(B, str):
        raise ParameterError(expected("B", "an integer >= 2 (\"auto\": null_distribution)", B))
    B = check_int("B", B, min_value=2)
    seed = check_int("seed", seed, min_value=0)
    n_jobs = resolve_n_jobs(n_jobs)
    n = feats[0].n
    mask = feature_pool(prepared) if pool is None else pool_mask(pool, n)
    rows = np.flatnonzero(mask)
    check_pool_valid(feats, rows, what="pool")
    if ks_arr[-1] > rows.size:
        raise ParameterError(expected(
            "ks", f"group sizes at most the pool size {rows.size}", ks_arr.tolist()))
    sampling, digest, norm, counts = sampling_of(segment_counts, normalize, mask)
    rng = np.random.default_rng(seed)
    n_f, n_k = len(feats), ks_arr.size
    g = np.empty((n_k, n_f, B))
    # drawn first, in the order of the generator, on every path
    grps = draw_groups(rng, rows, ks_arr, B, counts, norm)
    if client is not None and not exact:
        from aria_tda.homogeneity.distributed import evaluate_groups_dask

        jobs = [(grp, np.array([k])) for grp, k in zip(grps, ks_arr, strict=True)]
        done = evaluate_groups_dask(client, feats, chan, jobs, progress=progress, desc="null")
        all_sums = [d[0] for d in done]
    for a, (k, grp) in enumerate(zip(ks_arr, grps, strict=True)):
        if exact:
            sums = group_sums_reference(feats, grp, np.array([k]))
        elif client is not None:
            sums = all_sums[a]
        else:
            sums, _, _ = evaluate_groups(feats, chan, grp, np.array([k]), n_jobs=n_jobs,
                                         desc=f"null K={k}", progress=progress)
        g[a] = sums[:, :, 0].T / pairs_per_k(np.array([k]))[0]
    mu = g.mean(axis=2)
    sigma = g.std(axis=2, ddof=1)
    used = sigma > 1e-12 * np.maximum(np.abs(mu), np.finfo(float).tiny)
    for a, f in zip(*np.nonzero(~used), strict=True):
        warnings.warn(
            f"null K={ks_arr[a]}: feature {feats[f].name!r} has the same g_d in every random "
            f"group (sigma_d = {sigma[a, f]:.3g}); it is left out of channel "
            f"{channels[chan[f]]!r} at this K",
            AriaWarning, stacklevel=3,
        )
    zs = standardize(g, mu[..., None], sigma[..., None], used[..., None])
    g_channel = channel_mean(zs, chan, used, len(channels))
    mu_c = g_channel.mean(axis=2)
    sigma_c = g_channel.std(axis=2, ddof=1)
    return NullDistribution(
        ks=tuple(int(k) for k in ks_arr), B=B, seed=seed, channels=channels,
        features=tuple((channels[c], f.name) for f, c in zip(feats, chan, strict=True)),
        g=g, mu=mu, sigma=sigma, used=used, g_channel=g_channel, mu_c=mu_c, sigma_c=sigma_c,
        n_rows=n, n_pool=int(rows.size), pool_digest=digest_pool(mask),
        feature_digests=tuple(f.digest for f in feats), pool=mask, sampling=sampling,
        segments_digest=digest, normalize=norm,
    )
