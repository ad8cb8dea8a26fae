r"""Paired :math:`\bar z` differences between settings, from the per-query ``query_z`` table.

For two settings scored on the same queries, :math:`\bar z_A - \bar z_B` per (variant, K,
channel) with a percentile interval from one query resample shared by every setting and cell
(:func:`aria_tda.paired.paired_mean_differences`). The difference is taken over the queries both
settings define (a query excluded as degenerate in one is left out of the pair).

The null's Monte-Carlo error: :math:`z_c(q)` is one affine map of the query's similarities,
shared by every setting on the same null (same track pool, same reference groups), so the
null means :math:`\hat\mu` cancel from the difference exactly and the :math:`\hat\sigma`'s
only rescale it (relative error about :math:`1/\sqrt{2B}`): they cannot move a difference
across 0. The interval therefore resamples the queries only, and only settings that share
a null are paired (``null_groups``).
"""

from __future__ import annotations

import warnings
from collections.abc import Hashable, Mapping
from typing import Any

import numpy as np

from aria_tda._checks import check_int
from aria_tda.errors import DataError
from aria_tda.paired.bootstrap import bootstrap_counts, paired_mean_differences

__all__ = ["ZBAR_PAIRED_COLUMNS", "zbar_paired_table"]

ZBAR_PAIRED_COLUMNS = ("quantity", "variant", "K", "channel", "setting_a", "setting_b",
                       "value_a", "value_b", "diff", "diff_lo", "diff_hi", "separated",
                       "n_queries", "n_boot", "level", "resampled")


def zbar_paired_table(
    query_z: Any,
    *,
    n_boot: int = 1000,
    seed: int = 0,
    level: float = 0.95,
    null_groups: Mapping[str, Hashable] | None = None,
) -> Any:
    r"""Every pair of settings' :math:`\bar z` difference per variant, K and channel.

    Parameters
    ----------
    query_z : pandas.DataFrame
        The ``query_z`` table (``setting, variant, K, query, channel, z``).
    n_boot : int
        Bootstrap replicates of the queries (0: NaN intervals, nothing ``separated``).
    seed : int
        Seed of the query resample (one draw for every cell and pair).
    level : float
        Confidence level of the percentile intervals.
    null_groups : Mapping[str, Hashable], optional
        Setting -> a key of its null distribution; only settings with equal keys are paired
        (default: all settings share one null).

    Returns
    -------
    pandas.DataFrame
        Columns :data:`ZBAR_PAIRED_COLUMNS` (``quantity = "zbar"``; ``value_a``/``value_b``
        are each setting's :math:`\bar z` over its own queries, ``diff`` is over the shared
        ones); empty with fewer than two settings.
    """
    import pandas as pd

    n_boot = check_int("n_boot", n_boot, min_value=0)
    missing = [c for c in ("setting", "variant", "K", "query", "channel", "z")
               if c not in query_z.columns]
    if missing:
        raise DataError(f"query_z: missing column(s) {missing}; has {list(query_z.columns)}")
    settings = list(dict.fromkeys(query_z["setting"].astype(str)))
    groups = {s: (null_groups or {}).get(s, 0) for s in settings}
    pairs = [(a, b) for a in range(len(settings)) for b in range(a + 1, len(settings))
             if groups[settings[a]] == groups[settings[b]]]
    if not pairs:
        return pd.DataFrame(columns=list(ZBAR_PAIRED_COLUMNS))
    queries = np.sort(query_z["query"].unique())
    counts = bootstrap_counts(len(queries), n_boot, seed)
    rows: list[dict[str, Any]] = []
    qz = query_z.assign(setting=query_z["setting"].astype(str))
    for (variant, k, channel), cell in qz.groupby(["variant", "K", "channel"], sort=False):
        wide = cell.pivot_table(index="query", columns="setting", values="z", aggfunc="first",
                                dropna=False).reindex(index=queries, columns=settings)
        v = wide.to_numpy(dtype=np.float64)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # an all-NaN column: z undefined
            means = np.nanmean(v, axis=0)
        res = paired_mean_differences(v, counts, pairs=pairs, level=level)
        for i, (a, b) in enumerate(pairs):
            rows.append({
                "quantity": "zbar", "variant": variant, "K": int(k), "channel": channel,
                "setting_a": settings[a], "setting_b": settings[b],
                "value_a": float(means[a]), "value_b": float(means[b]),
                "diff": float(res["diff"][i]), "diff_lo": float(res["diff_lo"][i]),
                "diff_hi": float(res["diff_hi"][i]), "separated": bool(res["separated"][i]),
                "n_queries": int(res["n_queries"][i]), "n_boot": n_boot, "level": level,
                "resampled": "queries",
            })
    return pd.DataFrame(rows, columns=list(ZBAR_PAIRED_COLUMNS))
