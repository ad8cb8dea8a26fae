r"""The top-K concentration record and its measures from ranked rows.

:class:`Concentration` holds how much the queries' top-K sets coincide; the measures and their
definitions are in :mod:`aria_tda.diagnostics.concentration`, which streams a score matrix into
ranked rows (:class:`~aria_tda.diagnostics.concentration.TopKAccumulator`).
:func:`measures_from_ranked` turns ranked rows into the record, and
:func:`concentration_from_groups` does so for top-K groups already computed (the study's).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from aria_tda._checks import check_choice, check_int, check_int_list
from aria_tda.diagnostics.dependence import (
    SAMPLE_QUERIES,
    SAMPLE_ROWS,
    QueryDependence,
    dependence_from_top,
    dependence_k,
    sample_indices,
    sample_scores,
)
from aria_tda.errors import AriaWarning, ParameterError, expected

__all__ = ["LEVELS", "Concentration", "clip_ks", "concentration_from_groups",
           "measures_from_ranked"]

#: What the rows ranked are.
LEVELS = ("segment", "track")


@dataclass(frozen=True)
class Concentration:
    r"""How much the queries' top-K sets coincide (see the module docstring).

    Attributes
    ----------
    ks : tuple of int
        The ``K`` measured, ascending (clipped to ``n_rows``).
    level : {"segment", "track"}
        What the rows are.
    n_rows : int
        ``M``, the rows ranked (training segments, or tracks).
    n_queries : int
        ``T``.
    distinct_ratio : tuple of float
        Per ``K``: :math:`|\bigcup_j A_K(j)| / (TK)` (quanda's top-K cardinality).
    mean_overlap : tuple of float
        Per ``K``: mean over query pairs of :math:`|A_K(j) \cap A_K(j')|/K` (NaN for ``T = 1``).
    top1_share : float
        Share of queries whose top-1 row is ``top1_row``.
    top1_row : int
        The most frequent top-1 row (ties: the lower index; a track id at the track level).
    dependence : QueryDependence or None
        Hubs and whether the top-K follows the query
        (:mod:`aria_tda.diagnostics.dependence`); ``None`` when not measured.
    """

    ks: tuple[int, ...]
    level: str
    n_rows: int
    n_queries: int
    distinct_ratio: tuple[float, ...]
    mean_overlap: tuple[float, ...]
    top1_share: float
    top1_row: int
    dependence: QueryDependence | None = None

    def _index(self, k: int) -> int:
        if k not in self.ks:
            raise ParameterError(expected("k", f"one of the measured K {list(self.ks)}", k))
        return self.ks.index(k)

    def chance_overlap(self, k: int) -> float:
        """The mean overlap of independent random top-``k`` sets, :math:`k/M`.

        Parameters
        ----------
        k : int
            Group size.
        """
        return min(1.0, k / self.n_rows)

    def overlap_excess(self, k: int) -> float:
        r"""Chance-corrected mean overlap :math:`(o - k/M)/(1 - k/M)` (NaN when ``k = M``).

        0 at chance, 1 when every query has the same top-``k``.

        Parameters
        ----------
        k : int
            One of :attr:`ks`.
        """
        o = self.mean_overlap[self._index(k)]
        c = self.chance_overlap(k)
        return float("nan") if c >= 1.0 or math.isnan(o) else (o - c) / (1.0 - c)

    def top1_excess(self) -> float:
        """Chance-corrected top-1 share :math:`(s - 1/M)/(1 - 1/M)`."""
        c = 1.0 / self.n_rows
        return float("nan") if c >= 1.0 else (self.top1_share - c) / (1.0 - c)

    def at(self, k: int) -> dict[str, Any]:
        """The measures at one ``K``: ``K``, ``distinct_ratio``, ``mean_overlap``,
        ``chance_overlap``, ``overlap_excess``.

        Parameters
        ----------
        k : int
            One of :attr:`ks`.
        """
        i = self._index(k)
        return {
            "K": int(k),
            "distinct_ratio": self.distinct_ratio[i],
            "mean_overlap": self.mean_overlap[i],
            "chance_overlap": self.chance_overlap(k),
            "overlap_excess": self.overlap_excess(k),
        }

    def __repr__(self) -> str:
        from aria_tda._display import short_repr

        fields: dict[str, Any] = {"level": self.level, "n_rows": self.n_rows,
                                  "n_queries": self.n_queries, "ks": self.ks,
                                  "mean_overlap": self.mean_overlap,
                                  "top1_share": self.top1_share}
        if self.dependence is not None:
            fields["n_hubs"] = self.dependence.n_hubs
        return short_repr("Concentration", fields)

    def to_frame(self) -> Any:
        """One row per ``K`` of :meth:`at` (pandas DataFrame: ``K``, ``distinct_ratio``,
        ``mean_overlap``, ``chance_overlap``, ``overlap_excess``, and ``unlike_excess`` when
        the query dependence was measured)."""
        import pandas as pd

        rows = [self.at(k) for k in self.ks]
        if self.dependence is not None:
            dep = self.dependence.to_dict()
            by_k = dict(zip(dep.get("ks", []), dep.get("unlike_excess", []), strict=True))
            for r in rows:
                e = by_k.get(r["K"])
                r["unlike_excess"] = float("nan") if e is None else float(e)
        return pd.DataFrame(rows)

    def _repr_html_(self) -> str:
        from aria_tda._display import html_table

        rows: list[tuple[str, Any]] = [("level", self.level), ("rows M", self.n_rows),
                                       ("queries T", self.n_queries),
                                       ("top-1 share", self.top1_share)]
        rows += [(f"mean top-{k} overlap", o) for k, o in zip(self.ks, self.mean_overlap,
                                                               strict=True)]
        if self.dependence is not None:
            rows.append(("hubs", self.dependence.n_hubs))
        return html_table("Top-K concentration", rows, note="to_frame(): one row per K")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready mapping (NaN becomes ``None``); ``per_k`` lists :meth:`at` for every K."""

        def num(x: float) -> float | None:
            return None if x is None or not math.isfinite(x) else float(x)

        return {
            "level": self.level,
            "n_rows": int(self.n_rows),
            "n_queries": int(self.n_queries),
            "ks": [int(k) for k in self.ks],
            "distinct_ratio": [num(x) for x in self.distinct_ratio],
            "mean_overlap": [num(x) for x in self.mean_overlap],
            "top1_share": num(self.top1_share),
            "top1_row": int(self.top1_row),
            "top1_excess": num(self.top1_excess()),
            "per_k": [{key: num(v) if isinstance(v, float) else v
                       for key, v in self.at(k).items()} for k in self.ks],
            "dependence": None if self.dependence is None else self.dependence.to_dict(),
        }


# ----------------------------------------------------------------------------------------
# from ranked rows to the measures
# ----------------------------------------------------------------------------------------
def clip_ks(ks: Sequence[int], n_rows: int) -> tuple[int, ...]:
    """``ks`` sorted, unique and clipped to ``n_rows`` (with one warning naming those clipped).

    Parameters
    ----------
    ks : sequence of int
        Group sizes.
    n_rows : int
        The rows ranked.
    """
    clipped = sorted({min(int(k), n_rows) for k in ks})
    over = [int(k) for k in ks if int(k) > n_rows]
    if over:
        warnings.warn(
            f"topk: K = {sorted(set(over))} larger than the {n_rows} rows ranked; clipped to "
            f"{n_rows}",
            AriaWarning,
            stacklevel=3,
        )
    return tuple(clipped)


def measures_from_ranked(
    ranked: np.ndarray, ks: Sequence[int], n_rows: int, level: str, ids: np.ndarray | None = None
) -> Concentration:
    """The measures from each query's rows, best first.

    Parameters
    ----------
    ranked : np.ndarray [shape=(T, >= max(ks)), dtype=int]
        Each query's rows, best first.
    ks : sequence of int
        The ``K`` to measure (clipped to ``n_rows``).
    n_rows : int
        The rows ranked (the chance level's ``M``).
    level : {"segment", "track"}
        What the rows are.
    ids : np.ndarray, optional
        Names of the rows: ``top1_row`` is then the name.
    """
    t = ranked.shape[0]
    ks = clip_ks(ks, n_rows)
    distinct, overlap = [], []
    for k in ks:
        _, counts = np.unique(ranked[:, :k], return_counts=True)
        distinct.append(counts.size / (t * k))
        c = counts.astype(np.float64)
        overlap.append(float((c * (c - 1.0)).sum() / (k * t * (t - 1.0))) if t > 1 else math.nan)
    rows, counts = np.unique(ranked[:, 0], return_counts=True)
    best = int(np.argmax(counts))  # first maximum: the lowest row (np.unique sorts)
    top1 = int(rows[best])
    return Concentration(
        ks=ks,
        level=level,
        n_rows=int(n_rows),
        n_queries=int(t),
        distinct_ratio=tuple(float(x) for x in distinct),
        mean_overlap=tuple(overlap),
        top1_share=float(counts[best] / t),
        top1_row=int(ids[top1]) if ids is not None else top1,
    )


def concentration_from_groups(
    groups: Any, ks: Sequence[int], *, n_rows: int, level: str = "track", scores: Any = None,
    pool: Any = None, ids: Any = None,
) -> Concentration:
    """The measures from top-K groups already computed (e.g. by
    :func:`aria_tda.homogeneity.top_k_groups`, which the study reuses).

    Parameters
    ----------
    groups : np.ndarray [shape=(T, K_max), dtype=int]
        Each query's rows, best first (ties by the lower row index).
    ks : sequence of int
        The ``K`` to measure (each at most ``K_max``; clipped to ``n_rows``).
    n_rows : int
        How many rows were ranked (the pool size): the chance level's ``M``.
    level : {"segment", "track"}
        What the rows are.
    scores : array-like or ScoreSource, optional
        The matrix the groups rank (``(N, T)``): with it, the hubs and the unlike-query
        overlap are measured too (:mod:`aria_tda.diagnostics.dependence`).
    pool : np.ndarray [shape=(N,), dtype=bool], optional
        The rows that were ranked (default all ``N``); the score sample is drawn from them.
    ids : np.ndarray, optional
        Names of the rows (track ids), for the hubs.

    Returns
    -------
    Concentration
    """
    g = np.asarray(groups)
    if g.ndim != 2 or g.dtype.kind not in "iu" or g.shape[0] < 1 or g.shape[1] < 1:
        raise ParameterError(expected("groups", "an integer array (T, K_max)",
                                      f"shape {g.shape}, dtype {g.dtype}"))
    n_rows = check_int("n_rows", n_rows, min_value=1)
    level = check_choice("level", level, LEVELS)
    ks_ = check_int_list("ks", ks, min_value=1)
    if min(ks_[-1], n_rows) > g.shape[1]:
        raise ParameterError(expected("ks", f"K at most the groups' width {g.shape[1]}", ks_))
    res = measures_from_ranked(g, ks_, n_rows, level)
    k = dependence_k(res.ks, n_rows)
    if scores is None or k is None:
        return res
    n_total = int(scores.shape[0])
    rows = np.arange(n_total) if pool is None else np.flatnonzero(np.asarray(pool, dtype=bool))
    if rows.size != n_rows:
        raise ParameterError(expected("pool", f"{n_rows} rows ranked (n_rows)", rows.size))
    srows = rows[sample_indices(rows.size, SAMPLE_ROWS, salt=0)]
    cols = sample_indices(g.shape[0], SAMPLE_QUERIES, salt=1)
    sample = sample_scores(scores, srows, cols)
    ids_ = None if ids is None else np.asarray(ids)
    return replace(res, dependence=dependence_from_top(g, sample, cols, k, n_rows, ids_,
                                                     ks=res.ks))
