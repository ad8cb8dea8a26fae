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
   not just a per-query offset (which would not change any ranking).

``suspect`` — usable, but read with care: :math:`r_1 \ge 0.5` (rank-1 dominant: compare with
the rank-1 residual), :math:`p \ge 0.5` (columns dominated by a per-query offset, so the ranking
lives in small variations), or :math:`\kappa \ge 0.5`.

``ok`` — otherwise.

Calibration against the paper's Table 2 (audio, :math:`K=300`): TRAK coarse (κ = 0.991),
GradCos coarse (κ = 0.997) and FactGraSS fine (r₁ = 0.866, p ≈ 0) are *collapsed*; TRAK fine
(r₁ = 0.772) and GradCos fine (0.793) are rank-1 dominant but keep residual signal: *suspect*;
CLAP (p = 0.801) is offset-dominated: *suspect*; every LoGra setting, FactGraSS semantic and
coarse, TRAK semantic and MERT are *ok*. The symbolic methods of Table 1 (κ ≤ 0.13,
r₁ ≤ 0.15) are all *ok*: there the diagnostics *rank* methods rather than veto them.

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

__all__ = ["Verdict", "VerdictThresholds", "classify", "rank_settings"]

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
    reasons = []
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
        ``v1_constancy``.
    thresholds : VerdictThresholds, optional
        The thresholds of :func:`classify` (default: the calibrated ones).
    """
    return [
        classify(
            kappa=r["kappa"], r1=r["r1"], r2_5=r["r2_5"], p=r["p"],
            v1_constancy=r.get("v1_constancy"), thresholds=thresholds,
        )
        for r in rows
    ]
