r"""Summary metrics of query z-scores (paper Eq. summary) with bootstrap CIs over queries.

.. math:: \bar z = \frac1T \sum_q z(q), \quad
          \mathrm{Pos} = \frac1T \sum_q 1[z(q) > 0], \quad
          \mathrm{Sig} = \frac1T \sum_q 1[z(q) > 1.96]

The same point estimates serve :meth:`aria.homogeneity.HomogeneityResult.summary` (per ``K``
and channel) and :func:`aria.confound.stratify` (per metadata stratum).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from aria._checks import check_float, check_int
from aria.errors import ParameterError, expected

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
    if n_boot:
        t = arr.shape[0]
        rng = np.random.default_rng(check_int("seed", seed, min_value=0))
        boots = np.empty((n_boot, point.size))
        step = max(1, min(n_boot, 2**24 // max(1, t)))
        for s in range(0, n_boot, step):
            cnt = rng.multinomial(t, np.full(t, 1.0 / t), size=min(step, n_boot - s))
            cnt = cnt.astype(np.float64)
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
