"""How the homogeneity results show themselves in a notebook or a console.

Mixins of :class:`~aria_tda.homogeneity.HomogeneityResult` and
:class:`~aria_tda.homogeneity.DistinctiveReading`: a one-line ``repr`` of the numbers that
matter (no arrays), ``_repr_html_`` (the same as a small table, :mod:`aria_tda._display`) and
``to_frame()``, the tidy table (pandas).
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

import numpy as np

from aria_tda._display import html_table, short_repr

__all__ = ["DistinctiveDisplay", "HomogeneityDisplay"]


class HomogeneityDisplay:
    """``repr``, ``_repr_html_`` and ``to_frame`` of a homogeneity result."""

    ks: tuple[int, ...]
    channels: tuple[str, ...]
    z: np.ndarray
    g_channel: np.ndarray
    evidence_k: int
    B: int
    seed: int
    constant: np.ndarray | None

    def mean_z(self, k: int | None = None) -> dict[str, float]:
        """Channel → mean :math:`z_c(q)` over the queries (constant ones left out) at ``k``.

        Parameters
        ----------
        k : int, optional
            One of ``ks`` (default: ``evidence_k``).
        """
        k = self.evidence_k if k is None else k
        z = self.z[self.ks.index(k)]
        with warnings.catch_warnings():  # a channel without any finite z: NaN
            warnings.simplefilter("ignore", RuntimeWarning)
            means = np.nanmean(z, axis=1) if z.shape[1] else np.full(z.shape[0], np.nan)
        return {c: float(m) for c, m in zip(self.channels, means, strict=True)}

    def _leading(self) -> tuple[str | None, float]:
        means = self.mean_z()
        finite = {c: m for c, m in means.items() if np.isfinite(m)}
        if not finite:
            return None, float("nan")
        best = max(finite, key=lambda c: finite[c])
        return best, finite[best]

    def _fields(self) -> dict[str, Any]:
        lead, value = self._leading()
        return {"ks": self.ks, "channels": " ".join(self.channels), "T": int(self.z.shape[2]),
                "evidence_k": self.evidence_k, "leading": lead, "leading_mean_z": value,
                "B": self.B}

    def __repr__(self) -> str:
        return short_repr(type(self).__name__, self._fields())

    def _repr_html_(self) -> str:
        f = self._fields()
        rows: list[tuple[str, Any]] = [("K", f["ks"]), ("queries (T)", f["T"]),
                                       ("B (null groups)", f["B"]), ("seed", self.seed)]
        rows += [(f"mean z, {c} (K={self.evidence_k})", m) for c, m in self.mean_z().items()]
        lead = f["leading"] or "none"
        return html_table(type(self).__name__, rows,
                          note=f"leading channel at K={self.evidence_k}: {lead}; to_frame() "
                          "gives z per K, channel and query, summary() z-bar with CIs")

    def to_frame(self) -> Any:
        """The tidy table: one row per K × channel × query.

        Columns ``K``, ``channel``, ``query`` (0-based column), ``z`` (:math:`z_c(q)`),
        ``g`` (:math:`\\tilde g_c(q)`) and ``constant`` (the query's score column is constant:
        ``z`` and ``g`` are NaN). For z-bar, Pos and Sig per K and channel, use ``summary()``.

        Returns
        -------
        pandas.DataFrame [shape=(n_K * n_channels * T, 6)]
        """
        import pandas as pd

        n_k, n_c, t = self.z.shape
        constant = (np.zeros(t, dtype=bool) if self.constant is None
                    else np.asarray(self.constant, dtype=bool))
        return pd.DataFrame({
            "K": np.repeat(np.asarray(self.ks, dtype=np.int64), n_c * t),
            "channel": np.tile(np.repeat(np.asarray(self.channels, dtype=object), t), n_k),
            "query": np.tile(np.arange(t), n_k * n_c),
            "z": self.z.reshape(-1),
            "g": self.g_channel.reshape(-1),
            "constant": np.tile(constant, n_k * n_c),
        })


class DistinctiveDisplay:
    """``repr``, ``_repr_html_`` and ``to_frame`` of a distinctive reading."""

    channels: tuple[str, ...]
    anchor: str
    k: int
    alpha: float
    valid: np.ndarray
    named: np.ndarray
    baseline: np.ndarray

    if TYPE_CHECKING:  # defined by the reading (DistinctiveReading)
        @property
        def method_aspect(self) -> str: ...

        def query_frame(self, query_ids: Any = None) -> Any: ...

    def _counts(self) -> dict[str, int]:
        named = self.named[np.asarray(self.valid, dtype=bool)]
        out = {c: int(np.count_nonzero(named == i)) for i, c in enumerate(self.channels)}
        out["none"] = int(np.count_nonzero(named < 0))
        return out

    def __repr__(self) -> str:
        counts = {c: n for c, n in self._counts().items() if n}
        return short_repr(type(self).__name__, {
            "K": self.k, "anchor": self.anchor, "T": int(self.named.shape[0]),
            "read": int(np.count_nonzero(self.valid)), "method_aspect": self.method_aspect,
            "named": " ".join(f"{c}:{n}" for c, n in counts.items()), "alpha": self.alpha})

    def _repr_html_(self) -> str:
        rows: list[tuple[str, Any]] = [
            ("K", self.k), ("anchor", self.anchor), ("queries read", int(self.valid.sum())),
            ("method aspect", self.method_aspect), ("alpha", self.alpha)]
        rows += [(f"baseline, {c}", float(b)) for c, b in zip(self.channels, self.baseline,
                                                              strict=True)]
        rows += [(f"queries named {c}", n) for c, n in self._counts().items()]
        return html_table(type(self).__name__, rows,
                          note="to_frame() gives z, delta and the answer per query and channel")

    def to_frame(self, query_ids: Any = None) -> Any:
        """The tidy table: one row per query read × channel (:meth:`query_frame`).

        Columns ``query``, ``channel``, ``z``, ``delta`` and ``named`` (the query's answer: a
        channel or ``"none"``).

        Parameters
        ----------
        query_ids : array-like [shape=(T,)], optional
            Query ids (default: column indices).
        """
        return self.query_frame(query_ids)
