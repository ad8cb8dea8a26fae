r"""Collapse verdicts from the reliability diagnostics, and method ranking that respects them.

Conventions
-----------
A *setting* (method × stage) is classified from the diagnostics of its segment-level score
matrix :math:`S^{\mathrm{seg}}` (paper §3.2): :math:`\kappa` (Eq. 1), :math:`r_1`,
:math:`r_{2:5}` (Eq. 2), :math:`p` (Eq. 3), plus how constant :math:`v_1` is across queries,
``v1_constancy`` :math:`= |\sum_j v_{1j}| / \sqrt{T} \in [0, 1]`.

The rules, checked in order (thresholds are the fields of :class:`VerdictThresholds`):

``collapsed`` — the attributed group is (nearly) the same for every query:

1. :math:`\kappa \ge 0.9`: almost every pair of queries induces the same score profile up to
   an affine map, so every query retrieves the same tracks; or
2. :math:`r_1 \ge 0.85` *and* ``v1_constancy`` :math:`\ge 0.9` *and* :math:`p < 0.5`: one
   train-side axis :math:`u_1` carries most of the energy, every query loads on it with about
   the same weight (the paper's reading "r₁ close to 1 and v₁ near-constant"), and that axis is
   not just a per-query offset (which would not change any ranking); or
3. the top-K sets themselves are nearly the same for every query, whatever κ and r₁ say (the
   paper's definition of collapse; measured by :mod:`aria_tda.diagnostics.concentration` when
   ``concentration`` is given): **top-1 share** — one row is the top-1 of a large share of the
   queries beyond chance, :math:`(s - c_1)/(1 - c_1) \ge 0.3` with
   :math:`c_1 = \max(1/T, 1/M)` (the share's floor with ``T`` queries, and its chance level
   with ``M`` rows); or **top-K overlap** — at some measured ``K`` with :math:`K \le M/2`, two
   queries share on average a large part of their top-K beyond chance,
   :math:`(o_K - K/M)/(1 - K/M) \ge 0.3` (:math:`o_K` the mean pairwise overlap
   :math:`|A_K(j) \cap A_K(j')|/K`, :math:`K/M` its level for independent random sets;
   :math:`o_1` is the chance that two queries have the same top-1). Both corrections keep the
   thresholds meaningful at any ``M``, ``T`` and ``K``; larger ``K`` (above ``M/2``) are not
   used, where any two sets overlap by construction.

``suspect`` — usable, but read with care: :math:`r_1 \ge 0.5` (rank-1 dominant: compare with
the rank-1 residual), :math:`p \ge 0.5` (columns dominated by a per-query offset, so the ranking
lives in small variations), :math:`\kappa \ge 0.5`, or a chance-corrected top-1 share or top-K
overlap :math:`\ge 0.1` (a tenth of the queries led by one row, or a tenth of the top-K shared
by the average pair of queries; independent rankings give about 0).

``ok`` — otherwise.

Calibration against the paper's Table 2 (audio, :math:`K=300`): TRAK coarse (κ = 0.991),
GradCos coarse (κ = 0.997) and FactGraSS fine (r₁ = 0.866, p ≈ 0) are *collapsed*; TRAK fine
(r₁ = 0.772) and GradCos fine (0.793) are rank-1 dominant but keep residual signal: *suspect*;
CLAP (p = 0.801) is offset-dominated: *suspect*; every LoGra setting, FactGraSS semantic and
coarse, TRAK semantic and MERT are *ok*. The symbolic methods of Table 1 (κ ≤ 0.13,
r₁ ≤ 0.15) are all *ok*: there the diagnostics *rank* methods rather than veto them.

How the top-K rule relates to κ, r₁ and p: the concentration depends only on each column's
ranking, so a per-query offset (p ≈ 1) does not move it; a rank-1 matrix with a constant v₁ is
concentrated too (rules 2 and 3 agree); a handful of dominant training rows whose sign flips with
the query's class keeps κ low (the correlation is carried by every other row) and v₁ non-constant,
yet makes one of them the top-1 of most queries — rule 3 alone calls it collapsed. Its thresholds
were written before calibration as 0.5 (collapsed) and 0.25 (suspect) and set on one seed of
planted matrices (healthy, class-clustered, offset, rank-1, ≈1 % dominant rows, sign-flipping
dominant rows, at 1,500 x 100 and 20,000 x 400): the healthy ones gave at most 0.03, every
planted collapse at least 0.40 at K = 1, 10, 50 — 0.5 missed four of them, hence 0.3 and 0.1;
other seeds are reported with ``experiments/scripts/calibrate_concentration.py`` in
``experiments/results/concentration_calibration.md``. With fewer ``K`` measured (``aria-tda
diagnose`` uses 1 and 10) a large dominant pool (200 rows of 20,000) is only *suspect*: the
overlap shows at a ``K`` near the pool's size. The Table-2 calibration above is unchanged
(it has no concentration: rule 3 is not applied without one).

Collapsed settings are excluded from any ranking on :math:`\bar z_c` (§4.4 "Implication for
method comparison") and reported as excluded.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

from aria_tda._checks import check_float
from aria_tda.errors import ParameterError, expected

__all__ = ["Verdict", "VerdictThresholds", "classify", "concentration_signal", "rank_settings"]

Label = Literal["collapsed", "suspect", "ok"]


@dataclass(frozen=True)
class VerdictThresholds:
    """Thresholds of :func:`classify` (see the module docstring for the rules)."""

    kappa_collapsed: float = 0.9
    r1_collapsed: float = 0.85
    v1_constancy_collapsed: float = 0.9
    p_offset: float = 0.5
    r1_suspect: float = 0.5
    kappa_suspect: float = 0.5
    topk_collapsed: float = 0.3
    topk_suspect: float = 0.1

    def __post_init__(self) -> None:
        for name, value in asdict(self).items():
            check_float(name, value, min_value=0.0, max_value=1.0)


@dataclass(frozen=True)
class Verdict:
    """The verdict of one setting: ``label`` and the human-readable ``reason``."""

    label: Label
    reason: str

    @property
    def collapsed(self) -> bool:
        return self.label == "collapsed"


def classify(
    *,
    kappa: float | None,
    r1: float,
    r2_5: float,
    p: float,
    v1_constancy: float | None = None,
    thresholds: VerdictThresholds | None = None,
    concentration: Any = None,
) -> Verdict:
    r"""Classify one setting as ``collapsed``, ``suspect`` or ``ok`` from its diagnostics.

    Parameters
    ----------
    kappa, r1, r2_5, p : float in [0, 1]
        Reliability diagnostics of :math:`S^{\mathrm{seg}}` (paper Eqs. 1-3). ``kappa`` may be
        ``None``/NaN (undefined when fewer than two query columns vary): the setting is then
        at best ``suspect``.
    v1_constancy : float in [0, 1], optional
        :math:`|\sum_j v_{1j}|/\sqrt{T}`; ``None`` when unknown, in which case rule 2 of
        ``collapsed`` uses :math:`r_1` and :math:`p` alone.
    thresholds : VerdictThresholds, optional
        The thresholds of the rules (default: the calibrated ones, see the module docstring).
    concentration : Concentration or mapping, optional
        The top-K concentration (:class:`aria_tda.diagnostics.concentration.Concentration`, or
        its ``to_dict()``): enables rule 3 of ``collapsed`` and its suspect band. ``None``:
        the rules on κ, r₁, p and v₁ alone.

    Returns
    -------
    Verdict
    """
    t = thresholds or VerdictThresholds()
    kappa_known = not (kappa is None or (isinstance(kappa, float) and math.isnan(kappa)))
    top = 1.0 + 1e-9  # rounding above 1
    k = check_float("kappa", kappa, min_value=0.0, max_value=top) if kappa_known else float("nan")
    r1 = check_float("r1", r1, min_value=0.0, max_value=top)
    r2_5 = check_float("r2_5", r2_5, min_value=0.0, max_value=top)
    p = check_float("p", p, min_value=0.0, max_value=top)
    v1_nan = isinstance(v1_constancy, float) and math.isnan(v1_constancy)
    if v1_constancy is not None and not v1_nan:
        v1_constancy = check_float("v1_constancy", v1_constancy, min_value=0.0, max_value=top)
    else:
        v1_constancy = None

    if kappa_known and k >= t.kappa_collapsed:
        return Verdict(
            "collapsed",
            f"kappa={k:.3f} >= {t.kappa_collapsed}: queries share one score profile",
        )
    v1_ok = v1_constancy is None or v1_constancy >= t.v1_constancy_collapsed
    if r1 >= t.r1_collapsed and v1_ok and p < t.p_offset:
        v1_text = "v1 unknown" if v1_constancy is None else f"v1_constancy={v1_constancy:.3f}"
        return Verdict(
            "collapsed",
            f"r1={r1:.3f} >= {t.r1_collapsed} with {v1_text} and p={p:.3f}: "
            "one train-side axis shared by every query",
        )
    signal = concentration_signal(concentration)
    if signal is not None and signal[0] >= t.topk_collapsed:
        return Verdict(
            "collapsed",
            f"{signal[1]}, chance-corrected {signal[0]:.3f} >= {t.topk_collapsed}: the top-K is "
            "nearly the same for every query",
        )
    reasons = []
    if signal is not None and signal[0] >= t.topk_suspect:
        reasons.append(f"{signal[1]}, chance-corrected {signal[0]:.3f} >= {t.topk_suspect}")
    if r1 >= t.r1_suspect:
        reasons.append(f"r1={r1:.3f} >= {t.r1_suspect} (rank-1 dominant; compare the residual)")
    if p >= t.p_offset:
        reasons.append(f"p={p:.3f} >= {t.p_offset} (per-query offset dominates)")
    if kappa_known and k >= t.kappa_suspect:
        reasons.append(f"kappa={k:.3f} >= {t.kappa_suspect}")
    if not kappa_known:
        reasons.append("kappa undefined (fewer than two non-constant query columns)")
    if reasons:
        return Verdict("suspect", "; ".join(reasons))
    return Verdict("ok", f"kappa={k:.3f}, r1={r1:.3f}, r2_5={r2_5:.3f}, p={p:.3f}")


def concentration_signal(concentration: Any) -> tuple[float, str] | None:
    """The largest chance-corrected top-1 share or top-K overlap (rule 3), with its description.

    Parameters
    ----------
    concentration : Concentration or mapping or None
        :class:`aria_tda.diagnostics.concentration.Concentration` or its ``to_dict()``.

    Returns
    -------
    (float, str) or None
        ``None`` when nothing is measured (no concentration, fewer than two queries or rows,
        no ``K`` at most ``M/2``).
    """
    signals = _topk_signals(concentration)
    return max(signals, key=lambda x: x[0]) if signals else None


def _topk_signals(concentration: Any) -> list[tuple[float, str]]:
    """Chance-corrected top-1 share and top-K overlaps (rule 3), each with its description."""
    if concentration is None:
        return []
    view = concentration.to_dict() if hasattr(concentration, "to_dict") else concentration
    try:
        m, n_q = int(view["n_rows"]), int(view["n_queries"])
        ks, overlaps = list(view["ks"]), list(view["mean_overlap"])
        share, level = view.get("top1_share"), str(view.get("level", "segment"))
    except (KeyError, TypeError, ValueError):
        raise ParameterError(expected(
            "concentration", "a Concentration or its to_dict() (n_rows, n_queries, ks, "
            "mean_overlap, top1_share)", type(concentration).__name__)) from None
    out: list[tuple[float, str]] = []
    if n_q < 2 or m < 2:
        return out
    if share is not None and math.isfinite(float(share)):
        c = max(1.0 / n_q, 1.0 / m)
        share = check_float("top1_share", share, min_value=0.0, max_value=1.0 + 1e-9)
        row = view.get("top1_row")
        out.append(((share - c) / (1.0 - c),
                    f"top-1 share={share:.3f} ({level} {row} is the top-1 of {share:.0%} of "
                    f"{n_q} queries; chance {c:.2g})"))
    for k, o in zip(ks, overlaps, strict=True):
        if o is None or not math.isfinite(float(o)) or int(k) > m / 2:
            continue
        c = int(k) / m
        out.append(((float(o) - c) / (1.0 - c),
                    f"top-{int(k)} overlap={float(o):.3f} ({level} level: the share of their "
                    f"top-{int(k)} two queries have in common; chance {c:.2g})"))
    return out


def rank_settings(
    zbar: Mapping[str, float],
    verdicts: Mapping[str, Verdict | str],
) -> list[dict[str, Any]]:
    r"""Rank settings on :math:`\bar z_c` (higher first), excluding collapsed ones.

    Parameters
    ----------
    zbar : mapping
        Setting → :math:`\bar z_c` for one channel, variant and K.
    verdicts : mapping
        Setting → :class:`Verdict` (or its label).

    Returns
    -------
    list of dict
        One row per setting with keys ``setting``, ``zbar``, ``rank`` (1 = best; ``None``
        when excluded), ``excluded`` and ``reason``. Ranked rows come first in rank order,
        ties broken by setting name; excluded rows follow.
    """
    missing = [s for s in zbar if s not in verdicts]
    if missing:
        raise ParameterError(
            expected("verdicts", "a verdict for every setting", f"none for {missing}")
        )
    ranked: list[tuple[float, str]] = []
    excluded: list[dict[str, Any]] = []
    for setting, z in zbar.items():
        v = verdicts[setting]
        label = v.label if isinstance(v, Verdict) else str(v)
        if label == "collapsed":
            why = v.reason if isinstance(v, Verdict) else "collapsed"
            excluded.append({"setting": setting, "zbar": float(z), "rank": None, "excluded": True,
                             "reason": f"collapsed: {why}"})
        elif z is None or not math.isfinite(float(z)):
            excluded.append({"setting": setting, "zbar": float("nan"), "rank": None,
                             "excluded": True, "reason": "no finite zbar"})
        else:
            ranked.append((float(z), setting))
    ranked.sort(key=lambda t: (-t[0], t[1]))
    def label_of(v: Verdict | str) -> str:
        return v.label if isinstance(v, Verdict) else str(v)

    rows = [
        {"setting": s, "zbar": z, "rank": i + 1, "excluded": False, "reason": label_of(verdicts[s])}
        for i, (z, s) in enumerate(ranked)
    ]
    return rows + sorted(excluded, key=lambda r: r["setting"])


def verdict_table(
    rows: Sequence[Mapping[str, Any]], thresholds: VerdictThresholds | None = None
) -> list[Verdict]:
    """Classify each mapping of diagnostics.

    Parameters
    ----------
    rows : sequence of mapping
        Diagnostics with keys ``kappa``, ``r1``, ``r2_5``, ``p`` and optionally
        ``v1_constancy`` and ``concentration`` (a Concentration or its ``to_dict()``).
    thresholds : VerdictThresholds, optional
        The thresholds of :func:`classify` (default: the calibrated ones).
    """
    return [
        classify(
            kappa=r["kappa"], r1=r["r1"], r2_5=r["r2_5"], p=r["p"],
            v1_constancy=r.get("v1_constancy"), thresholds=thresholds,
            concentration=r.get("concentration"),
        )
        for r in rows
    ]
