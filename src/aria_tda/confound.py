r"""Metadata confound breakdown: z_c(q) stratified by a query metadata column.

Conventions
-----------
Random reference groups are drawn uniformly from the whole training pool, so an attributed
group concentrated in one genre may inherit that genre's intrinsic homogeneity. The paper
(appendix "Genre confound analysis", Table 6) probes this by stratifying :math:`z_c(q)` by the
query's genre: per stratum :math:`n`, mean :math:`z`, Pos (fraction :math:`z>0`), Sig
(fraction :math:`z>1.96`), and the standard deviation of the stratum means across strata (a
confound driven by one dominant stratum predicts a large across-strata SD).

The per-stratum :math:`\bar z`, Pos and Sig are :func:`aria_tda.homogeneity.summarize` of the
stratum's queries (the same definitions as the homogeneity table).

Queries whose label is missing (``None``, NaN, empty string) are left out, as the paper
restricts to genre-labelled queries; strata smaller than ``min_count`` are still listed but
flagged ``small=True`` and excluded from the across-strata SD.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from aria_tda._checks import check_int
from aria_tda.errors import DataError, expected
from aria_tda.homogeneity.summary import SIG_THRESHOLD, summarize

__all__ = ["StratumStats", "stratify"]


@dataclass(frozen=True)
class StratumStats:
    """Summary of :math:`z_c` over the queries of one stratum."""

    stratum: str
    n: int
    mean_z: float
    pos: float
    sig: float
    small: bool


def _missing(label: Any) -> bool:
    if label is None:
        return True
    if isinstance(label, float) and np.isnan(label):
        return True
    return isinstance(label, str) and not label.strip()


def stratify(
    z: np.ndarray, labels: Sequence[Any], *, min_count: int = 5
) -> tuple[list[StratumStats], float]:
    r"""Stratify per-query z-scores by ``labels``.

    Parameters
    ----------
    z : np.ndarray [shape=(T,)]
        :math:`z_c(q)` for one channel (NaN entries are left out).
    labels : sequence [length T]
        Query metadata (e.g. genre); missing labels are left out.
    min_count : int
        Strata with fewer queries are flagged ``small`` and left out of the across-strata SD.

    Returns
    -------
    strata : list of StratumStats
        Sorted by decreasing mean z (then name).
    sd_across : float
        Sample SD (ddof=1) of ``mean_z`` over the non-small strata; NaN with fewer than two.
    """
    z = np.asarray(z, dtype=np.float64).ravel()
    if len(labels) != z.size:
        raise DataError(expected("labels", f"{z.size} labels (one per query)", f"{len(labels)}"))
    min_count = check_int("min_count", min_count, min_value=1)
    groups: dict[str, list[float]] = {}
    for zi, lab in zip(z, labels, strict=True):
        if _missing(lab) or not np.isfinite(zi):
            continue
        groups.setdefault(str(lab), []).append(float(zi))
    out = []
    for name, vals in groups.items():
        st = summarize(np.asarray(vals), n_boot=0, threshold=SIG_THRESHOLD)
        out.append(
            StratumStats(
                stratum=name,
                n=int(st["n_queries"]),
                mean_z=float(st["zbar"]),
                pos=float(st["pos"]),
                sig=float(st["sig"]),
                small=int(st["n_queries"]) < min_count,
            )
        )
    out.sort(key=lambda s: (-s.mean_z, s.stratum))
    means = [s.mean_z for s in out if not s.small]
    sd = float(np.std(means, ddof=1)) if len(means) >= 2 else float("nan")
    return out, sd
