r"""Summary metrics of query z-scores (paper Eq. summary) with bootstrap CIs over queries.

.. math:: \bar z = \frac1T \sum_q z(q), \quad
          \mathrm{Pos} = \frac1T \sum_q 1[z(q) > 0], \quad
          \mathrm{Sig} = \frac1T \sum_q 1[z(q) > 1.96]

The same point estimates serve :meth:`aria_tda.homogeneity.HomogeneityResult.summary` (per ``K``
and channel) and :func:`aria_tda.confound.stratify` (per metadata stratum).

With ``null_draws`` the intervals also carry the Monte-Carlo error of the null: each bootstrap
replicate resamples the queries *and* the null's reference groups (the queries' ``z``
recomputed under the resampled null), and ``null_mc_se`` reports the SD of :math:`\bar z`
over the null resamples alone (queries fixed).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from aria_tda._checks import check_float, check_int
from aria_tda.errors import ParameterError, expected

__all__ = ["SIG_THRESHOLD", "summarize"]

#: z above which a query counts as significant (two-sided 5 %)
SIG_THRESHOLD = 1.96


def summarize(
    z: Any,
    *,
    n_boot: int = 1000,
    level: float = 0.95,
    seed: int = 0,
    threshold: float = SIG_THRESHOLD,
    null_draws: Callable[[np.random.Generator, int], np.ndarray] | None = None,
) -> dict[str, np.ndarray]:
    r"""Summary metrics of query z-scores (Eq. summary) with bootstrap CIs over queries.

    .. math:: \bar z = \frac1T \sum_q z(q), \quad
              \mathrm{Pos} = \frac1T \sum_q 1[z(q) > 0], \quad
              \mathrm{Sig} = \frac1T \sum_q 1[z(q) > 1.96]

    Parameters
    ----------
    z : np.ndarray [shape=(T,) or (T, m)]
        One column per series (e.g. per K × channel); NaN entries (degenerate channels,
        excluded queries) are left out of that column.
    n_boot : int
        Bootstrap resamples of the queries (with replacement); 0 gives NaN intervals.
    level : float
        Confidence level of the percentile intervals.
    seed : int
        Seed of the bootstrap resamples.
    threshold : float
        ``z`` above which a query counts in Sig (default 1.96).
    null_draws : callable, optional
        ``null_draws(rng, r)`` -> ``(r, T, m)``: ``z`` of every query recomputed under ``r``
        bootstrap resamples of the null's reference groups (drawn with ``rng``). Given, each
        replicate resamples the queries and the null jointly, and the result gains
        ``null_mc_se``. Without it the intervals resample the queries only.

    Returns
    -------
    dict[str, np.ndarray]
        ``zbar, zbar_lo, zbar_hi, pos, pos_lo, pos_hi, sig, sig_lo, sig_hi`` (fractions in
        [0, 1]) and ``n_queries``, each of shape ``(m,)`` (scalars for 1-D ``z``); with
        ``null_draws`` also ``null_mc_se``, the SD of :math:`\bar z` over the null resamples
        with the queries fixed (NaN when ``n_boot < 2``).
    """
    arr = np.asarray(z, dtype=np.float64)
    one = arr.ndim == 1
    if one:
        arr = arr[:, None]
    if arr.ndim != 2 or arr.shape[0] < 1:
        raise ParameterError(expected(
            "z", "an array (n_queries,) or (n_queries, m)", f"shape {arr.shape}"))
    n_boot = check_int("n_boot", n_boot, min_value=0)
    level = check_float("level", level, min_value=0, max_value=1, min_inclusive=False,
                        max_inclusive=False)
    valid = np.isfinite(arr)
    x = np.where(valid, arr, 0.0)
    stats = np.concatenate([x, (x > 0) & valid, (x > threshold) & valid], axis=1)
    stats = stats.astype(np.float64)
    vv = np.concatenate([valid] * 3, axis=1).astype(np.float64)
    n_valid = vv.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        point = stats.sum(axis=0) / n_valid
    lo = np.full_like(point, np.nan)
    hi = np.full_like(point, np.nan)
    m = arr.shape[1]
    mc_se = np.full(m, np.nan)
    if n_boot:
        t = arr.shape[0]
        rng = np.random.default_rng(check_int("seed", seed, min_value=0))
        boots = np.empty((n_boot, point.size))
        null_bar = np.empty((n_boot, m))
        if null_draws is None:
            step = max(1, min(n_boot, 2**24 // max(1, t)))
        else:
            step = max(1, min(n_boot, 2**20 // max(1, t * m)))
        for s in range(0, n_boot, step):
            cnt = rng.multinomial(t, np.full(t, 1.0 / t), size=min(step, n_boot - s))
            cnt = cnt.astype(np.float64)
            r = cnt.shape[0]
            with np.errstate(invalid="ignore", divide="ignore"):
                if null_draws is None:
                    boots[s : s + r] = (cnt @ stats) / (cnt @ vv)
                    continue
                zr = np.asarray(null_draws(rng, r), dtype=np.float64)
                if zr.shape != (r, t, m):
                    raise ParameterError(expected(
                        "null_draws", f"an array of shape {(r, t, m)}", f"shape {zr.shape}"))
                xr = np.where(valid, zr, 0.0)
                sr = np.concatenate([xr, (xr > 0) & valid, (xr > threshold) & valid], axis=2)
                sr[~np.isfinite(np.concatenate([xr] * 3, axis=2))] = np.nan
                boots[s : s + r] = np.einsum("rt,rtj->rj", cnt, sr) / (cnt @ vv)
                null_bar[s : s + r] = xr.sum(axis=1) / n_valid[:m]
        alpha = (1.0 - level) / 2.0
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            lo, hi = np.nanquantile(boots, [alpha, 1.0 - alpha], axis=0)
            if null_draws is not None and n_boot >= 2:
                mc_se = np.nanstd(null_bar, axis=0, ddof=1)
    out: dict[str, Any] = {}
    for i, name in enumerate(("zbar", "pos", "sig")):
        sl = slice(i * m, (i + 1) * m)
        out[name], out[f"{name}_lo"], out[f"{name}_hi"] = point[sl], lo[sl], hi[sl]
    out["n_queries"] = valid.sum(axis=0)
    if null_draws is not None:
        out["null_mc_se"] = mc_se
    if one:
        return {k: v[0] for k, v in out.items()}
    return out
