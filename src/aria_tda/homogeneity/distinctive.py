r"""The distinctive aspect of a query: which channel explains *this* query's attribution beyond
what the same method shows for every query — or none.

The paper's :math:`z_c(q)` (Eq. z_c) says how alike the top-``K`` of a query are to each other
against random groups. A method's top-``K`` mix the few items that influenced this query with
what the method retrieves for every query (hubs, its own preferences, the aspect it always
matches), so the leading :math:`z_c` is mostly the method's, the same for every query. The
distinctive reading separates the two, per query :math:`q` (or per set :math:`S` of queries
that share a metadata value) and channel :math:`c`:

1. **The distinctive group** :math:`D_K(S)`: the top-``K`` of what :math:`S` attributes beyond
   the method's other queries (:mod:`~aria_tda.homogeneity.profiles`).
2. **Its channel z**: how much more similar to the query the group is than random pool
   tracks (:mod:`~aria_tda.homogeneity.anchor`; needs the query's own features) and how alike
   its members are (the paper's :math:`z_c` of :math:`D_K(S)`, against the study's null) —
   both combined when the query's features are known
   (:math:`(z^{query}_c + z^{group}_c)/\sqrt 2`), the group's alone otherwise.
3. **The method's baseline**: the same z for the method's other queries — for a query, the
   distribution of :math:`z_c(D_K(\{q'\}))` over all queries; for a set of size ``m``, over
   ``R`` random sets of ``m`` of the queries outside it. The distinctive score is

   .. math:: \Delta_c = \frac{z_c - \operatorname{med}_{ref} z_c}
                             {\max(1,\ 1.4826\,\operatorname{MAD}_{ref} z_c)},

   robust to the few queries that do share an aspect, and never larger than the z itself
   would be against its own null (the scale is at least 1, the null's).
4. **The answer**: the channel with the largest :math:`\Delta_c` if it clears the threshold,
   else **"no distinctive aspect"**. For a query the threshold is the ``1 - alpha`` quantile
   of :math:`\max_c z_c` over reference groups drawn as the null draws them (uniform, or
   segment-matched with a segment map), so on a score matrix that ranks at random a query is
   named with probability ``alpha`` whatever the number of channels. For a set, the
   p-value of its leading channel :math:`c^*` is the share of the ``R`` random sets whose
   :math:`\Delta_{c^*}` is as large, times the number of channels (Bonferroni: at most
   ``alpha`` when the set's queries are exchangeable with the others); named when
   ``p <= alpha``.

The setting as a whole is read by the **baseline**: the median over queries of
:math:`z_c(D_K(\{q\}))` with a bootstrap interval — the aspect along which the method follows
each of its queries (a chroma-similarity retrieval follows harmony for every query: its
baseline names harmony, and no query is distinctive beyond it). A preference for the *same*
tracks whatever the query (hubs, a generic bias) cancels from the distinctive groups and is
not a baseline: the paper's :math:`\bar z_c` and the collapse verdict show it.

Functions: :func:`distinctive_reading` (the whole reading of one score matrix),
:func:`read_queries` and :func:`read_sets` (steps 3-4 on precomputed z, with their exact
references :func:`read_queries_reference`, :func:`read_sets_reference`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from aria_tda._checks import check_float, check_int
from aria_tda.errors import ParameterError, expected
from aria_tda.homogeneity.display import DistinctiveDisplay

__all__ = [
    "ANCHORS",
    "DEFAULT_ALPHA",
    "MAD_SCALE",
    "NONE",
    "N_NULL",
    "N_REFERENCE",
    "DistinctiveReading",
    "distinctive_reading",
    "read_queries",
    "read_sets",
]

#: Error rate of a naming on a score matrix that ranks at random (per query, per set).
DEFAULT_ALPHA = 0.05
#: Random query sets per set, drawn from the queries outside it (the set reading's reference).
N_REFERENCE = 200
#: Consistency constant of the MAD for a normal distribution.
MAD_SCALE = 1.4826
#: The answer when no channel is distinctive.
NONE = "none"
#: What a channel z can be measured against: the query's own features, the group, or both.
ANCHORS = ("query", "group", "both")
#: Reference groups behind the threshold of a single query.
N_NULL = 200


def _robust(ref: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per channel (rows) median and scale ``max(1, 1.4826 MAD)`` of ``ref`` (C, R), NaN-aware."""
    with np.errstate(invalid="ignore"), _quiet():
        med = np.nanmedian(ref, axis=1)
        mad = MAD_SCALE * np.nanmedian(np.abs(ref - med[:, None]), axis=1)
    return med, np.fmax(mad, 1.0)


class _quiet:
    """Silence numpy's all-NaN-slice warnings inside a block."""

    def __enter__(self) -> None:
        import warnings

        self._w = warnings.catch_warnings()
        self._w.__enter__()
        warnings.simplefilter("ignore", RuntimeWarning)

    def __exit__(self, *exc: Any) -> None:
        self._w.__exit__(*exc)


def _argmax_or_none(d: np.ndarray) -> tuple[int, float]:
    """Index and value of the largest finite entry of ``d`` (C,), or (-1, nan)."""
    if not np.isfinite(d).any():
        return -1, float("nan")
    i = int(np.nanargmax(d))
    return i, float(d[i])


def read_queries(z: np.ndarray, valid: np.ndarray, threshold: float) -> tuple[np.ndarray,
                                                                               np.ndarray]:
    r"""Distinctive scores and answers of single queries (steps 3-4).

    Parameters
    ----------
    z : np.ndarray [shape=(C, T)]
        Channel z of each query's distinctive group (NaN: undefined).
    valid : np.ndarray [shape=(T,), dtype=bool]
        The queries that form the method's reference (and are read).
    threshold : float
        :math:`\Delta` a query's largest channel must exceed.

    Returns
    -------
    delta : np.ndarray [shape=(C, T)]
        :math:`\Delta_c(q)` (NaN for queries not read).
    named : np.ndarray [shape=(T,), dtype=int64]
        The named channel's index, -1 for "no distinctive aspect" (and for queries not read).
    """
    z = np.asarray(z, dtype=np.float64)
    valid = np.asarray(valid, dtype=bool)
    if z.ndim != 2 or valid.shape != (z.shape[1],):
        raise ParameterError(expected("z, valid", "(C, T) and (T,)", (z.shape, valid.shape)))
    med, scale = _robust(z[:, valid])
    delta = np.full(z.shape, np.nan)
    delta[:, valid] = (z[:, valid] - med[:, None]) / scale[:, None]
    named = np.full(z.shape[1], -1, dtype=np.int64)
    for q in np.flatnonzero(valid):
        i, v = _argmax_or_none(delta[:, q])
        if i >= 0 and v > threshold:
            named[q] = i
    return delta, named


def read_queries_reference(z: np.ndarray, valid: np.ndarray,
                           threshold: float) -> tuple[np.ndarray, np.ndarray]:
    """Exact reference of :func:`read_queries` (loops; medians by sorting).

    Parameters
    ----------
    z : np.ndarray [shape=(C, T)]
    valid : np.ndarray [shape=(T,), dtype=bool]
    threshold : float
    """
    z = np.asarray(z, dtype=np.float64)
    c_n, t = z.shape
    delta = np.full(z.shape, np.nan)
    named = np.full(t, -1, dtype=np.int64)
    cols = [q for q in range(t) if valid[q]]
    for c in range(c_n):
        vals = sorted(z[c, q] for q in cols if np.isfinite(z[c, q]))
        if not vals:
            continue
        med = _median(vals)
        mad = _median(sorted(abs(v - med) for v in vals))
        scale = max(1.0, MAD_SCALE * mad)
        for q in cols:
            delta[c, q] = (z[c, q] - med) / scale
    for q in cols:
        best, arg = -np.inf, -1
        for c in range(c_n):
            if np.isfinite(delta[c, q]) and delta[c, q] > best:
                best, arg = delta[c, q], c
        if arg >= 0 and best > threshold:
            named[q] = arg
    return delta, named


def _median(sorted_vals: list[float]) -> float:
    n = len(sorted_vals)
    return sorted_vals[n // 2] if n % 2 else 0.5 * (sorted_vals[n // 2 - 1] + sorted_vals[n // 2])


def read_sets(z_sets: np.ndarray, z_ref: np.ndarray,
              alpha: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""Distinctive scores, p-values and answers of sets of one size (steps 3-4).

    Parameters
    ----------
    z_sets : np.ndarray [shape=(C, S)]
        Channel z of each set's distinctive group.
    z_ref : np.ndarray [shape=(C, R)]
        The same for ``R`` random sets of the same size.
    alpha : float
        A set is named when its p-value is at most ``alpha``.

    Returns
    -------
    delta : np.ndarray [shape=(C, S)]
    p : np.ndarray [shape=(S,)]
        :math:`\min(1, C \, (1 + \#\{r: \Delta_{c^*}(r) \ge \Delta_{c^*}(S)\}) / (R + 1))` for
        the set's leading channel :math:`c^*` (Bonferroni over the ``C`` channels).
    named : np.ndarray [shape=(S,), dtype=int64]
    """
    z_sets = np.asarray(z_sets, dtype=np.float64)
    z_ref = np.asarray(z_ref, dtype=np.float64)
    if z_sets.ndim != 2 or z_ref.ndim != 2 or z_sets.shape[0] != z_ref.shape[0]:
        raise ParameterError(expected("z_sets, z_ref", "(C, S) and (C, R)",
                                      (z_sets.shape, z_ref.shape)))
    med, scale = _robust(z_ref)
    delta = (z_sets - med[:, None]) / scale[:, None]
    dref = (z_ref - med[:, None]) / scale[:, None]
    n_c = z_sets.shape[0]
    p = np.full(z_sets.shape[1], np.nan)
    named = np.full(z_sets.shape[1], -1, dtype=np.int64)
    for s in range(z_sets.shape[1]):
        i, v = _argmax_or_none(delta[:, s])
        if i < 0:
            continue
        ref = dref[i][np.isfinite(dref[i])]
        p[s] = min(1.0, n_c * (1.0 + float(np.count_nonzero(ref >= v))) / (ref.size + 1.0))
        if p[s] <= alpha:
            named[s] = i
    return delta, p, named


def read_sets_reference(z_sets: np.ndarray, z_ref: np.ndarray,
                        alpha: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Exact reference of :func:`read_sets` (loops; medians by sorting).

    Parameters
    ----------
    z_sets : np.ndarray [shape=(C, S)]
    z_ref : np.ndarray [shape=(C, R)]
    alpha : float
    """
    z_sets = np.asarray(z_sets, dtype=np.float64)
    z_ref = np.asarray(z_ref, dtype=np.float64)
    c_n, s_n = z_sets.shape
    r_n = z_ref.shape[1]
    med = np.full(c_n, np.nan)
    scale = np.ones(c_n)
    for c in range(c_n):
        vals = sorted(v for v in z_ref[c] if np.isfinite(v))
        if vals:
            med[c] = _median(vals)
            scale[c] = max(1.0, MAD_SCALE * _median(sorted(abs(v - med[c]) for v in vals)))
    delta = (z_sets - med[:, None]) / scale[:, None]
    p = np.full(s_n, np.nan)
    named = np.full(s_n, -1, dtype=np.int64)
    for s in range(s_n):
        finite = [(delta[c, s], c) for c in range(c_n) if np.isfinite(delta[c, s])]
        if not finite:
            continue
        v, c = max(finite, key=lambda t: (t[0], -t[1]))
        ref = [(z_ref[c, r] - med[c]) / scale[c] for r in range(r_n) if np.isfinite(z_ref[c, r])]
        p[s] = min(1.0, c_n * (1 + sum(x >= v for x in ref)) / (len(ref) + 1))
        if p[s] <= alpha:
            named[s] = c
    return delta, p, named


def _baseline(z: np.ndarray, valid: np.ndarray, n_boot: int,
              seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Median over the valid queries of each channel's z and its percentile bootstrap CI."""
    zz = z[:, valid]
    with _quiet():
        med = np.nanmedian(zz, axis=1)
    lo = np.full(med.shape, np.nan)
    hi = np.full(med.shape, np.nan)
    if n_boot and zz.shape[1] > 1:
        rng = np.random.default_rng([seed, 31337])
        idx = rng.integers(0, zz.shape[1], size=(n_boot, zz.shape[1]))
        median = np.median if np.isfinite(zz).all() else np.nanmedian  # the same, faster
        with _quiet():
            boot = median(zz[:, idx], axis=2)  # (C, n_boot)
            lo = np.nanpercentile(boot, 2.5, axis=1)
            hi = np.nanpercentile(boot, 97.5, axis=1)
    return med, lo, hi


@dataclass(frozen=True, eq=False, repr=False)
class DistinctiveReading(DistinctiveDisplay):
    r"""The distinctive reading of one score matrix (see the module docstring).

    Shown as one line (``repr``: K, anchor, the method aspect, how many queries are named
    each aspect) or a table in a notebook; ``to_frame()`` is :meth:`query_frame`.

    Attributes
    ----------
    channels : tuple of str
    anchor : {"query", "group", "both"}
        What the channel z is measured against: the query's own features, the group, or both
        (Stouffer).
    k : int
        Group size ``K``.
    alpha : float
    threshold : float
        A single query is named when its largest :math:`\Delta` exceeds this.
    valid : np.ndarray [shape=(T,), dtype=bool]
        Queries read (non-constant columns).
    z : np.ndarray [shape=(C, T)]
        Channel z of each query's distinctive group.
    delta : np.ndarray [shape=(C, T)]
        :math:`\Delta_c(q)`.
    named : np.ndarray [shape=(T,), dtype=int64]
        Channel index or -1 ("no distinctive aspect").
    baseline, baseline_lo, baseline_hi : np.ndarray [shape=(C,)]
        The method's baseline (median z over queries) and its bootstrap interval.
    set_names : tuple of (str, str)
        ``(variable, value)`` of each set read.
    set_sizes : np.ndarray [shape=(S,), dtype=int64]
    set_z, set_delta : np.ndarray [shape=(C, S)]
    set_p : np.ndarray [shape=(S,)]
    set_named : np.ndarray [shape=(S,), dtype=int64]
    groups : np.ndarray [shape=(T, K), dtype=int64]
        Each query's distinctive group (rows of S_track, best first; -1 for queries not read).
    """

    channels: tuple[str, ...]
    anchor: str
    k: int
    alpha: float
    threshold: float
    valid: np.ndarray
    z: np.ndarray
    delta: np.ndarray
    named: np.ndarray
    baseline: np.ndarray
    baseline_lo: np.ndarray
    baseline_hi: np.ndarray
    groups: np.ndarray
    set_names: tuple[tuple[str, str], ...] = ()
    set_sizes: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    set_z: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    set_delta: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    set_p: np.ndarray = field(default_factory=lambda: np.zeros(0))
    set_named: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    def name_of(self, index: int) -> str:
        """Channel name of an answer index (``"none"`` for -1).

        Parameters
        ----------
        index : int
            An entry of :attr:`named` or :attr:`set_named`.
        """
        return NONE if index < 0 else self.channels[int(index)]

    @property
    def method_aspect(self) -> str:
        """The channel along which the method follows each of its queries: the largest baseline
        whose interval lies above 0 (``"none"`` when no interval does)."""
        ok = np.isfinite(self.baseline_lo) & (self.baseline_lo > 0)
        if not ok.any():
            return NONE
        return self.channels[int(np.nanargmax(np.where(ok, self.baseline, -np.inf)))]

    def query_frame(self, query_ids: Any = None) -> Any:
        """Long table ``query, channel, z, delta, named`` (queries read only).

        Parameters
        ----------
        query_ids : array-like [shape=(T,)], optional
            Query ids (default: column indices).
        """
        import pandas as pd

        n_c, t = self.z.shape
        q = np.arange(t) if query_ids is None else np.asarray(query_ids)
        cols = np.flatnonzero(self.valid)
        names = np.asarray([self.name_of(i) for i in self.named], dtype=object)
        return pd.DataFrame({
            "query": np.repeat(q[cols], n_c),
            "channel": np.tile(np.asarray(self.channels, dtype=object), cols.size),
            "z": self.z[:, cols].T.reshape(-1),
            "delta": self.delta[:, cols].T.reshape(-1),
            "named": np.repeat(names[cols], n_c),
        })

    def set_frame(self) -> Any:
        """Long table ``variable, value, n_queries, channel, z, delta, p, named``."""
        import pandas as pd

        n_c = len(self.channels)
        s = len(self.set_names)
        names = np.asarray([self.name_of(i) for i in self.set_named], dtype=object)
        return pd.DataFrame({
            "variable": np.repeat(np.asarray([v for v, _ in self.set_names], dtype=object),
                                  n_c),
            "value": np.repeat(np.asarray([v for _, v in self.set_names], dtype=object), n_c),
            "n_queries": np.repeat(self.set_sizes, n_c),
            "channel": np.tile(np.asarray(self.channels, dtype=object), s),
            "z": self.set_z.T.reshape(-1),
            "delta": self.set_delta.T.reshape(-1),
            "p": np.repeat(self.set_p, n_c),
            "named": np.repeat(names, n_c),
        })

    def setting_frame(self) -> Any:
        """One row per channel: ``channel, baseline, baseline_lo, baseline_hi,
        named_share`` (share of the queries read whose distinctive aspect is the channel),
        with ``none_share``, ``n_queries``, ``anchor``, ``K``, ``alpha``, ``threshold`` and
        ``method_aspect`` repeated."""
        import pandas as pd

        n = int(self.valid.sum())
        named = self.named[self.valid]
        share = [float(np.count_nonzero(named == c)) / n if n else np.nan
                 for c in range(len(self.channels))]
        return pd.DataFrame({
            "K": self.k, "anchor": self.anchor,
            "channel": list(self.channels),
            "baseline": self.baseline, "baseline_lo": self.baseline_lo,
            "baseline_hi": self.baseline_hi,
            "named_share": share,
            "none_share": float(np.count_nonzero(named < 0)) / n if n else np.nan,
            "n_queries": n, "alpha": self.alpha, "threshold": self.threshold,
            "method_aspect": self.method_aspect,
        })


def _threshold(null_z: np.ndarray, alpha: float) -> float:
    """The ``1 - alpha`` quantile of :math:`\\max_c z_c` over reference groups ``null_z``
    ``(C, ...)`` (``inf`` when none is defined)."""
    with _quiet():
        vals = np.nanmax(np.asarray(null_z, dtype=np.float64), axis=0).reshape(-1)
    vals = vals[np.isfinite(vals)]
    if vals.size == 0:
        return float("inf")
    return float(np.quantile(vals, 1.0 - alpha, method="higher"))


def _stouffer(parts: list[np.ndarray]) -> np.ndarray:
    """Sum over the anchors of their z, divided by the root of how many are finite."""
    stack = np.broadcast_arrays(*parts)
    fin = sum(np.isfinite(x).astype(float) for x in stack)
    tot = sum(np.where(np.isfinite(x), x, 0.0) for x in stack)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(fin > 0, tot / np.sqrt(np.where(fin > 0, fin, 1.0)), np.nan)


def _check_sets(sets: Any, t: int) -> list[tuple[tuple[str, str], np.ndarray]]:
    if sets is None:
        return []
    if not isinstance(sets, Mapping):
        raise ParameterError(expected(
            "sets", "a mapping (variable, value) -> query columns", type(sets).__name__))
    out = []
    for key, cols in sets.items():
        if not (isinstance(key, tuple) and len(key) == 2):
            raise ParameterError(expected("sets", "keys (variable, value)", key))
        arr = np.unique(np.asarray(cols, dtype=np.int64).reshape(-1))
        if arr.size and (arr.min() < 0 or arr.max() >= t):
            raise ParameterError(expected(f"sets[{key!r}]", f"query columns in [0, {t})",
                                          f"range [{arr.min()}, {arr.max()}]"))
        out.append(((str(key[0]), str(key[1])), arr))
    return out


def distinctive_reading(
    s_track: Any,
    prepared: Any,
    null: Any,
    *,
    k: int,
    pool: Any = None,
    query_values: Mapping[str, Any] | None = None,
    anchor: str | None = None,
    sets: Mapping[tuple[str, str], Any] | None = None,
    exclude: Any = None,
    segment_counts: Any = None,
    normalize: str = "zscore",
    alpha: float = DEFAULT_ALPHA,
    n_reference: int = N_REFERENCE,
    n_null: int = N_NULL,
    n_boot: int = 1000,
    seed: int = 0,
    chunk_rows: int | None = None,
    progress: bool | None = None,
    client: Any = None,
    anchor_cache: Any = None,
) -> DistinctiveReading:
    r"""The distinctive reading of one track-level score matrix (module docstring).

    Parameters
    ----------
    s_track : np.ndarray [shape=(N, T)] | ScoreSource | path
        Track-level scores (the original matrix or its residual).
    prepared : dict[str, list[PreparedFeature]]
        The corpus' features, indexed by the rows of ``s_track``.
    null : NullDistribution
        The study's null (it must hold ``K = k``): the group anchor's z and threshold.
    k : int
        Group size (the study's ``K_report``).
    pool : bool mask or int rows, optional
        Rows eligible for groups (the null's pool).
    query_values : mapping of str to values, optional
        The queries' own features (feature name -> values in query-column order).
    anchor : {"query", "group", "both"}, optional
        What each channel z measures: the distinctive group's similarity to the query
        (``"query"``), its within-group homogeneity against the study's null (``"group"``,
        the paper's :math:`z_c`), or both combined (Stouffer, :math:`(z^{query} +
        z^{group}) / \sqrt 2`). Default: ``"both"`` with ``query_values``, else ``"group"``.
    sets : mapping of (variable, value) to query columns, optional
        Query sets to read as a whole. A set is read when it holds at least 2 queries and at
        least as many queries are read outside it (its reference is drawn there); others are
        left out.
    exclude : np.ndarray [shape=(T,), dtype=bool], optional
        Queries not to read (e.g. constant columns).
    segment_counts : int array [shape=(N,)], optional
        Segments per row of ``s_track``: the threshold's reference groups are drawn as the
        null draws them (segment-matched when the counts differ,
        :func:`~aria_tda.homogeneity.null.reference_groups`).
    normalize : {"zscore", "rank"}
        The normalisation those groups simulate.
    alpha : float
        Error rate of a naming under random attribution.
    n_reference : int
        Random query sets per set (drawn from the queries outside it).
    n_null : int
        Reference groups behind a single query's threshold.
    n_boot : int
        Bootstrap resamples of the baseline's interval.
    seed : int
        Seed of the random sets, the anchor's random groups and the bootstrap.
    chunk_rows : int, optional
        Rows per streamed block of ``s_track``.
    progress : bool, optional
        Draw progress bars.
    client : dask.distributed.Client, optional
        Evaluate the group anchor's groups on a Dask cluster.
    anchor_cache : AnchorCache, optional
        Reuse the query anchor's scores between readings over the same ``prepared``,
        ``query_values`` and pool (a study's settings and variants;
        :class:`~aria_tda.homogeneity.anchor.AnchorCache`).

    Returns
    -------
    DistinctiveReading
    """
    from aria_tda.homogeneity.anchor import anchored_z
    from aria_tda.homogeneity.core import homogeneity
    from aria_tda.homogeneity.draws import reference_groups
    from aria_tda.homogeneity.groups import flatten_prepared
    from aria_tda.homogeneity.profiles import distinctive_groups

    alpha = check_float("alpha", alpha, min_value=0.0, max_value=1.0, min_inclusive=False)
    n_boot = check_int("n_boot", n_boot, min_value=0)
    n_null = check_int("n_null", n_null, min_value=1)
    k = check_int("k", k, min_value=2)
    if anchor is None:
        anchor = "both" if query_values is not None else "group"
    if anchor not in ANCHORS:
        raise ParameterError(expected("anchor", f"one of {list(ANCHORS)}", anchor))
    if anchor != "group" and query_values is None:
        raise ParameterError(expected(
            "query_values", f"the queries' features (anchor {anchor!r})", None))
    channels, _, _ = flatten_prepared(prepared)
    t = int(getattr(s_track, "shape", np.shape(s_track))[1])
    chosen = _check_sets(sets, t)
    if pool is None:
        pool = null.pool
    groups = distinctive_groups(s_track, k, pool=pool, sets=[m for _, m in chosen],
                                n_reference=n_reference, seed=seed, exclude=exclude,
                                chunk_rows=chunk_rows, progress=progress)
    valid = groups.valid
    n_valid = int(valid.sum())
    keep = [i for i, m in enumerate(groups.set_members)
            if 2 <= m.size < n_valid and groups.reference_groups[i].shape[0] > 0]
    cols = np.flatnonzero(valid)
    evals: list[tuple[np.ndarray, np.ndarray]] = [
        (groups.query_groups[q], np.array([q])) for q in cols]
    evals += [(groups.set_groups[i], groups.set_members[i]) for i in keep]
    for i in keep:
        evals += list(zip(groups.reference_groups[i], groups.reference_members[i], strict=True))
    pool_rows = np.flatnonzero(np.asarray(pool, dtype=bool)) if np.asarray(pool).dtype == bool \
        else np.asarray(pool, dtype=np.int64)
    ref = reference_groups(k, n_null, pool_rows=pool_rows, seed=seed,
                           segment_counts=segment_counts, normalize=normalize)
    parts, null_parts = [], []
    if anchor in ("query", "both"):
        assert query_values is not None
        az = anchored_z(prepared, query_values, evals, k, pool=pool, n_queries=t, valid=valid,
                        null_groups=ref, seed=seed, progress=progress, cache=anchor_cache)
        parts.append(az.z)
        null_parts.append(az.null_z)  # (C, n_sample, n_null)
    if anchor in ("group", "both"):
        stacked = np.concatenate([np.stack([g for g, _ in evals]), ref])
        res = homogeneity(stacked, prepared, null, ks=[k], evidence_k=k, n_pairs=0,
                          progress=progress, client=client)
        parts.append(res.z[0][:, : len(evals)])
        null_parts.append(res.z[0][:, len(evals):][:, None, :])  # (C, 1, n_null)
    zall = _stouffer(parts)
    threshold = _threshold(_stouffer(null_parts), alpha)

    n_c = len(channels)
    z = np.full((n_c, t), np.nan)
    z[:, cols] = zall[:, : cols.size]
    at = cols.size
    set_z = zall[:, at : at + len(keep)]
    at += len(keep)
    delta, named = read_queries(z, valid, threshold)
    set_delta = np.full((n_c, len(keep)), np.nan)
    set_p = np.full(len(keep), np.nan)
    set_named = np.full(len(keep), -1, dtype=np.int64)
    set_sizes = np.asarray([groups.set_members[i].size for i in keep], dtype=np.int64)
    for j, i in enumerate(keep):
        r = groups.reference_groups[i].shape[0]
        d, p, nm = read_sets(set_z[:, j : j + 1], zall[:, at : at + r], alpha)
        at += r
        set_delta[:, j] = d[:, 0]
        set_p[j] = p[0]
        set_named[j] = nm[0]
    base, lo, hi = _baseline(z, valid, n_boot, seed)
    qg = np.full((t, k), -1, dtype=np.int64)
    qg[cols] = groups.query_groups[cols]
    return DistinctiveReading(
        channels=tuple(channels), anchor=anchor, k=k, alpha=alpha, threshold=threshold,
        valid=valid, z=z, delta=delta, named=named, baseline=base, baseline_lo=lo,
        baseline_hi=hi, groups=qg, set_names=tuple(chosen[i][0] for i in keep),
        set_sizes=set_sizes, set_z=set_z, set_delta=set_delta, set_p=set_p,
        set_named=set_named,
    )
