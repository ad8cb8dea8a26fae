"""The :class:`Diagnostics` record and its finish from Gram sums (:mod:`aria_tda.diagnostics`)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

from aria_tda._checks import check_int
from aria_tda._options import Options, option
from aria_tda.diagnostics.kappa import kappa_from_stats, nan_kappa, warn_constant
from aria_tda.errors import DataError
from aria_tda.scores.blockstats import BlockStats
from aria_tda.scores.lowrank import top_eigenpairs
from aria_tda.scores.source import expected_text

if TYPE_CHECKING:
    import pandas as pd

    from aria_tda.verdict import Verdict

__all__ = ["CONST_ULPS", "MODES", "ApproxOptions", "Diagnostics", "diagnostics_from_stats"]

MODES = ("auto", "exact", "exact-tiled", "approx")


@dataclass(frozen=True)
class ApproxOptions(Options):
    """Settings of ``mode="approx"`` (:func:`aria_tda.diagnostics.sketch.sketch_passes`)."""

    max_passes: int = option(8, help="most streaming passes for r_1..r_10", min_value=1)
    rtol: float = option(
        1e-3, help="stop when the r1 interval is this narrow (relative)", min_value=0.0
    )
    sample_columns: int = option(1000, help="columns sampled for kappa", min_value=3)
    level: float = option(
        0.95, help="confidence level of the kappa interval", min_value=0.5, max_value=0.9999
    )
    block: int = option(0, help="Krylov block size (0: n_energy + 10)", min_value=0)


#: Constant-column rule: centred energy <= (CONST_ULPS * eps)^2 * raw energy of the column,
#: eps the machine epsilon of the products (float32 or float64).
CONST_ULPS = 64.0


@dataclass(frozen=True, eq=False)
class Diagnostics:
    r"""Reliability diagnostics of one score matrix (paper §3.2).

    Attributes
    ----------
    n_train, n_queries : int
        ``M`` and ``T``.
    kappa : float
        Mean absolute inter-query correlation κ ∈ [0, 1] (Eq. kappa); NaN when fewer than
        two columns vary.
    r1, r2_5 : float
        :math:`r_1` and :math:`r_{2:5} = r_2 + \dots + r_5` (Eq. ri).
    p : float
        Mean concentration ratio ∈ [0, 1] (Eq. p).
    energy_ratios : tuple of float
        :math:`(r_1, \dots, r_{n})`, ``n = n_energy`` (10 by default).
    sigma1 : float
        Largest singular value.
    frobenius : float
        :math:`\lVert S \rVert_F`.
    v1 : numpy.ndarray [shape=(T,)]
        Leading right (query-side) singular vector, :math:`\sum_j v_{1j} \ge 0`.
    v1_constancy : float
        :math:`|\sum_j v_{1j}| / \sqrt{T} \in [0, 1]`; 1 means :math:`v_1` is constant.
    constant_columns : int
        Columns left out of κ because they are constant (and, if all-zero, out of p).
    constant_indices : numpy.ndarray [shape=(constant_columns,)] of int
    u1 : numpy.ndarray [shape=(M,)] or None
        Leading left (segment-side) singular vector :math:`S v_1 / \sigma_1` (``with_u1``).
    mode : str
        ``"exact"`` (in-memory Gram), ``"exact-tiled"`` or ``"approx"``.
    sources : dict or None
        Method behind each number (``kappa``, ``r``, ``p``, ``v1``) when ``mode`` is not
        ``"exact"``.
    r1_interval, r2_5_interval : tuple of float or None
        Guaranteed intervals for :math:`r_1`, :math:`r_{2:5}` (approx mode).
    energy_intervals : tuple of (float, float) or None
        Guaranteed interval of each energy ratio (approx mode).
    kappa_ci : tuple of float or None
        Confidence interval of κ at ``kappa_level`` (approx mode, sampled columns).
    kappa_se : float or None
        Standard error of κ (approx mode).
    kappa_level : float or None
        Confidence level of ``kappa_ci``.
    details : dict or None
        Passes, sample size, Krylov basis and the like (``mode`` not ``"exact"``).
    concentration : object or None
        How much the queries' top-K sets coincide (the top-K collapse measure,
        :mod:`aria_tda.diagnostics.concentration`); ``None`` when not computed.
    verdict : Verdict
        ``ok`` / ``suspect`` / ``collapsed``, its reason, findings, the rule that decided and
        its thresholds (:func:`aria_tda.verdict.classify` of these numbers and of
        :attr:`concentration`): the verdict ``aria-tda diagnose`` prints, and ``to_dict()``
        holds. A study's ``reliability.csv`` reads the *track*-level top-K instead (the
        paper's collapse is about tracks), so its verdict may differ from this segment-level
        one.

    Examples
    --------
    >>> import numpy as np
    >>> import aria_tda
    >>> rng = np.random.default_rng(0)
    >>> d = aria_tda.diagnose(rng.standard_normal((400, 12)))
    >>> d.verdict.label
    'ok'
    >>> d.to_dict()["verdict"]["label"] == d.verdict.label
    True
    """

    n_train: int
    n_queries: int
    kappa: float
    r1: float
    r2_5: float
    p: float
    energy_ratios: tuple[float, ...]
    sigma1: float
    frobenius: float
    v1: np.ndarray
    v1_constancy: float
    constant_columns: int
    constant_indices: np.ndarray
    u1: np.ndarray | None = None
    mode: str = "exact"
    sources: dict[str, str] | None = None
    r1_interval: tuple[float, float] | None = None
    r2_5_interval: tuple[float, float] | None = None
    energy_intervals: tuple[tuple[float, float], ...] | None = None
    kappa_ci: tuple[float, float] | None = None
    kappa_se: float | None = None
    kappa_level: float | None = None
    details: dict[str, Any] | None = None
    concentration: Any = None

    @cached_property
    def verdict(self) -> Verdict:
        """The verdict (see the class docstring), computed once."""
        from aria_tda.verdict import classify

        return classify(self)

    def __repr__(self) -> str:
        from aria_tda._display import short_repr

        return short_repr("Diagnostics", {
            "n_train": self.n_train, "n_queries": self.n_queries, "kappa": self.kappa,
            "r1": self.r1, "r2_5": self.r2_5, "p": self.p, "v1_constancy": self.v1_constancy,
            "mode": self.mode, "verdict": self.verdict.label})

    def _rows(self) -> list[tuple[str, Any]]:
        rows: list[tuple[str, Any]] = [
            ("training rows M", self.n_train), ("queries T", self.n_queries),
            ("κ (kappa)", self.kappa), ("r₁", self.r1), ("r₂:₅", self.r2_5), ("p", self.p),
            ("v1_constancy", self.v1_constancy), ("constant columns", self.constant_columns),
            ("mode", self.mode)]
        conc = self.concentration
        dep = getattr(conc, "dependence", None)
        if dep is not None:
            d = dep.to_dict()
            k = d.get("k")
            if k in d.get("ks", []):
                i = list(d["ks"]).index(k)
                rows.append((f"unlike top-{k} overlap (chance-corrected)",
                             d["unlike_excess"][i]))
            rows.append(("hubs", d.get("n_hubs", 0)))
        v = self.verdict
        rows += [("verdict", v.label.upper()), ("reason", v.reason),
                 *(("finding", f) for f in v.findings)]
        return rows

    def _repr_html_(self) -> str:
        from aria_tda._display import html_table

        return html_table("Reliability diagnostics", self._rows(),
                          note="d.to_frame() for the table, d.to_dict() for everything")

    def to_frame(self) -> pd.DataFrame:
        """One row of the scalar diagnostics and the verdict (pandas; the columns of a study's
        ``reliability.csv`` that this matrix alone determines).

        Returns
        -------
        pandas.DataFrame [shape=(1, n_columns)]
            ``n_train``, ``n_queries``, ``kappa``, ``r1``, ``r2_5``, ``p``, ``v1_constancy``,
            ``constant_columns``, ``mode``, ``energy_1`` …, the top-K measures when measured
            (``top1_share``, ``overlap_K``, ``unlike_excess_K``, ``n_hubs``), ``verdict``,
            ``verdict_reason``, ``verdict_rule``, ``verdict_findings``.
        """
        import pandas as pd

        row: dict[str, Any] = {
            "n_train": self.n_train, "n_queries": self.n_queries, "kappa": self.kappa,
            "r1": self.r1, "r2_5": self.r2_5, "p": self.p, "v1_constancy": self.v1_constancy,
            "constant_columns": self.constant_columns, "mode": self.mode}
        for i, r in enumerate(self.energy_ratios):
            row[f"energy_{i + 1}"] = float(r)
        conc = self.concentration
        if conc is not None:
            row["top1_share"] = float(conc.top1_share)
            for k, o in zip(conc.ks, conc.mean_overlap, strict=True):
                row[f"overlap_{k}"] = float(o)
            dep = getattr(conc, "dependence", None)
            if dep is not None:
                d = dep.to_dict()
                for k, e in zip(d.get("ks", []), d.get("unlike_excess", []), strict=True):
                    row[f"unlike_excess_{k}"] = float("nan") if e is None else float(e)
                row["n_hubs"] = int(d.get("n_hubs", 0))
        v = self.verdict
        row.update(verdict=v.label, verdict_reason=v.reason, verdict_rule=v.rule,
                   verdict_findings=" | ".join(v.findings))
        return pd.DataFrame([row])

    def collapsed(self) -> bool:
        """``verdict.label == "collapsed"``: what ``aria-tda diagnose`` says.

        The paper's own structural reading (:math:`r_1` and ``v1_constancy`` high) is one of
        the verdict's rules (:mod:`aria_tda.verdict`), used when no top-K is measured.
        """
        return self.verdict.collapsed

    def to_dict(self, *, vectors: bool = False) -> dict[str, Any]:
        """JSON-ready mapping (NaN becomes ``None``), with the ``verdict``
        (:meth:`aria_tda.verdict.Verdict.to_dict`).

        Parameters
        ----------
        vectors : bool
            Also include ``v1``, ``u1`` and ``constant_indices``.
        """

        def num(x: float) -> float | None:
            return None if not math.isfinite(x) else float(x)

        out: dict[str, Any] = {
            "n_train": self.n_train,
            "n_queries": self.n_queries,
            "kappa": num(self.kappa),
            "r1": num(self.r1),
            "r2_5": num(self.r2_5),
            "p": num(self.p),
            "energy_ratios": [float(r) for r in self.energy_ratios],
            "sigma1": float(self.sigma1),
            "frobenius": float(self.frobenius),
            "v1_constancy": float(self.v1_constancy),
            "constant_columns": self.constant_columns,
        }
        if self.mode != "exact":  # the in-memory record keeps its historical keys
            out["mode"] = self.mode
            out["sources"] = dict(self.sources or {})
            for name in ("r1_interval", "r2_5_interval", "kappa_ci"):
                iv = getattr(self, name)
                out[name] = None if iv is None else [float(iv[0]), float(iv[1])]
            out["energy_intervals"] = (
                None
                if self.energy_intervals is None
                else [[float(a), float(b)] for a, b in self.energy_intervals]
            )
            out["kappa_se"] = None if self.kappa_se is None else num(self.kappa_se)
            out["kappa_level"] = self.kappa_level
            out["details"] = dict(self.details or {})
        if self.concentration is not None:
            out["concentration"] = self.concentration.to_dict()
        out["verdict"] = self.verdict.to_dict()
        if vectors:
            out["v1"] = self.v1.tolist()
            out["u1"] = None if self.u1 is None else self.u1.tolist()
            out["constant_indices"] = self.constant_indices.tolist()
        return out


def _power_of_two(x: float) -> float:
    """The power of two nearest above ``|x|`` (1 for 0 or non-finite ``x``)."""
    if not math.isfinite(x) or x == 0.0:
        return 1.0
    return math.ldexp(1.0, math.frexp(abs(x))[1])


def check_dims(m: int, t: int) -> None:
    if t < 2:
        raise DataError(
            expected_text("scores", "at least 2 queries (columns) for κ", f"{t} column(s)")
        )
    if m < 2:
        raise DataError(expected_text("scores", "at least 2 training rows", f"{m} row(s)"))


def diagnostics_from_stats(
    stats: BlockStats, *, n_energy: int = 10, device: Any = None, u1: np.ndarray | None = None
) -> Diagnostics:
    r"""Finish the diagnostics from the sums of a Gram pass (:class:`BlockStats`).

    Used by :func:`diagnose` for the streaming and the Dask pass, which produce the same sums.

    Parameters
    ----------
    stats : BlockStats
        Sums with the Gram matrix (``gram=True``) over all rows of ``S``.
    n_energy : int
        How many energy ratios to report.
    device : str, optional
        Torch device for the eigendecomposition.
    u1 : numpy.ndarray [shape=(M,)], optional
        :math:`u_1`, when already computed.
    """
    n_energy = check_int("n_energy", n_energy, min_value=1)
    m, t = stats.n, stats.n_cols
    check_dims(m, t)
    if stats.gram is None:
        raise ValueError("diagnostics need BlockStats with the Gram matrix")
    sumsq = stats.sum_squares
    frob2 = float(sumsq.sum())
    if not frob2 > 0.0:
        raise DataError("scores: expected a matrix with non-zero entries, got an all-zero matrix")

    # κ (Eq. kappa): Pearson correlations of the non-constant columns
    constant = stats.constant_mask(ulps=CONST_ULPS)
    const_idx = np.flatnonzero(constant)
    warn_constant(const_idx, t)
    keep = ~constant
    k = int(keep.sum())
    kappa = kappa_from_stats(stats, keep) if k >= 2 else nan_kappa(k, t, stacklevel=3)

    # r_i (Eq. ri): eigenvalues of the Gram are sigma_i^2
    # (normalised by a power of two first, exactly, so LAPACK and torch see entries near 1)
    g = stats.raw_gram()
    unit = _power_of_two(float(np.max(np.diagonal(g))))
    g *= 1.0 / unit
    values, vectors = top_eigenpairs(g, n_energy, device=device, overwrite=True)
    values = values * unit
    total = max(frob2, float(values.sum()))
    ratios = np.clip(values / total, 0.0, 1.0)
    v1 = vectors[:, 0].copy()
    sigma1 = float(np.sqrt(values[0]))

    # p (Eq. p): mean over columns of M mu_j^2 / ||S_.j||^2 (all-zero columns left out)
    colsum = stats.column_sums
    nz = sumsq > 0
    p = float(np.mean(np.clip(colsum[nz] ** 2 / (m * sumsq[nz]), 0.0, 1.0)))

    return Diagnostics(
        n_train=m,
        n_queries=t,
        kappa=kappa,
        r1=float(ratios[0]),
        r2_5=float(ratios[1:5].sum()),
        p=p,
        energy_ratios=tuple(float(r) for r in ratios),
        sigma1=sigma1,
        frobenius=math.sqrt(frob2),
        v1=v1,
        v1_constancy=float(min(1.0, abs(v1.sum()) / math.sqrt(t))),
        constant_columns=int(const_idx.size),
        constant_indices=const_idx,
        u1=u1,
    )
