r"""Axis–channel alignment of the dominant retrieval axis (paper Eq. alpha, Table 3).

Conventions
-----------
:math:`u_1 \in \mathbb{R}^N` is the leading left singular vector of :math:`S^{\mathrm{track}}`
(tracks × queries). For a channel :math:`c` with feature groups :math:`\Psi` (per-track feature
matrices, e.g. the 12-dimensional chroma vector),

.. math::

    \alpha_c^{\max} = \max_{d} |\mathrm{corr}(u_1, \psi_d)|, \qquad
    \alpha_c^{\mathrm{reg}} = \max_{\Psi} \sqrt{R^2(u_1 \mid \Psi)},

where :math:`d` ranges over every single dimension of every group of the channel and
:math:`R^2` is the coefficient of determination of an ordinary-least-squares fit of
:math:`u_1` on :math:`\Psi` with an intercept. Tracks with a NaN in a group are left out of
that group's fit; constant dimensions carry no correlation and are skipped in
:math:`\alpha^{\max}`; a channel whose every dimension is constant has undefined (NaN)
alignment. Sequence-valued features (chord progressions) enter as their
12-bin histogram of symbols (:func:`sequence_histogram`), since a regression needs a
fixed-width vector.

Both measures are in :math:`[0, 1]`; plain :math:`R^2` (as in the paper) grows with the group
width :math:`D` when :math:`N` is small — each result records ``n`` and ``dim`` so a reader can
judge (expected :math:`R^2` of pure noise is :math:`D/(n-1)`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from aria.errors import DataError, ParameterError, expected

__all__ = [
    "AlignmentResult",
    "alignment",
    "alignment_reference",
    "channel_alignment",
    "sequence_histogram",
]


@dataclass(frozen=True)
class AlignmentResult:
    """Alignment of :math:`u_1` with one channel."""

    alpha_max: float
    alpha_max_feature: str
    alpha_reg: float
    alpha_reg_group: str
    n: int
    dim: int

    def to_dict(self) -> dict[str, object]:
        return dict(self.__dict__)


def sequence_histogram(sequences: Sequence[np.ndarray], *, n_symbols: int = 12) -> np.ndarray:
    """Normalised histogram of integer symbols per sequence, shape ``(len(sequences), n_symbols)``.

    An empty sequence gives a row of NaN (no information).
    """
    out = np.full((len(sequences), n_symbols), np.nan)
    for i, seq in enumerate(sequences):
        s = np.asarray(seq, dtype=np.int64).ravel()
        if s.size:
            if s.min() < 0 or s.max() >= n_symbols:
                raise DataError(expected(f"sequences[{i}]", f"symbols in [0, {n_symbols})", s.tolist()[:10]))
            out[i] = np.bincount(s, minlength=n_symbols) / s.size
    return out


def _check_inputs(u1: np.ndarray, groups: Mapping[str, np.ndarray]) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    u = np.asarray(u1, dtype=np.float64).ravel()
    if u.size < 3:
        raise ParameterError(expected("u1", "a vector of at least 3 tracks", f"length {u.size}"))
    if not np.all(np.isfinite(u)):
        raise DataError("u1: contains NaN or inf")
    if not groups:
        raise ParameterError(expected("groups", "at least one feature group", "none"))
    out = {}
    for name, g in groups.items():
        a = np.asarray(g, dtype=np.float64)
        if a.ndim == 1:
            a = a[:, None]
        if a.ndim != 2 or a.shape[0] != u.size:
            raise DataError(expected(f"groups[{name!r}]", f"shape ({u.size}, D)", a.shape))
        out[name] = a
    return u, out


def _r2(y: np.ndarray, X: np.ndarray) -> float:
    yc = y - y.mean()
    ss_tot = float(yc @ yc)
    if ss_tot <= 0.0:
        return 0.0
    Xc = X - X.mean(axis=0)
    coef, *_ = np.linalg.lstsq(Xc, yc, rcond=None)
    resid = yc - Xc @ coef
    return float(min(max(1.0 - (resid @ resid) / ss_tot, 0.0), 1.0))


def alignment(u1: np.ndarray, groups: Mapping[str, np.ndarray]) -> AlignmentResult:
    r"""Alignment of ``u1`` with one channel's feature ``groups`` (paper Eq. alpha).

    Parameters
    ----------
    u1 : np.ndarray [shape=(N,)]
        Leading left singular vector of :math:`S^{\mathrm{track}}` (sign is irrelevant).
    groups : mapping name → np.ndarray [shape=(N, D)]
        The channel's per-track feature groups.

    Returns
    -------
    AlignmentResult
        ``alpha_max_feature`` is ``"group[j]"`` (or ``"group"`` for scalars).
    """
    u, groups = _check_inputs(u1, groups)
    best_max, best_max_name = 0.0, ""
    best_reg, best_reg_name = 0.0, ""
    n_min, dim_total = u.size, 0
    evaluated = False
    for name, X in groups.items():
        rows = np.all(np.isfinite(X), axis=1)
        n = int(rows.sum())
        dim_total += X.shape[1]
        if n < 3:
            continue
        n_min = min(n_min, n)
        evaluated = True
        y, Xr = u[rows], X[rows]
        yc = y - y.mean()
        Xc = Xr - Xr.mean(axis=0)
        ny = np.sqrt(yc @ yc)
        nx = np.sqrt(np.einsum("ij,ij->j", Xc, Xc))
        valid = (nx > 1e-12 * max(1.0, float(nx.max(initial=0.0)))) & (ny > 0)
        if np.any(valid):
            corr = np.zeros(X.shape[1])
            corr[valid] = np.abs(yc @ Xc[:, valid]) / (nx[valid] * ny)
            j = int(np.argmax(corr))
            if corr[j] > best_max:
                best_max = float(min(corr[j], 1.0))
                best_max_name = name if X.shape[1] == 1 else f"{name}[{j}]"
        r = float(np.sqrt(_r2(y, Xr)))
        if r > best_reg:
            best_reg, best_reg_name = r, name
    if not evaluated:
        raise DataError("groups: no group has at least 3 tracks with finite features")
    if not best_max_name and not best_reg_name:
        # every dimension constant over the tracks (or u1 constant): alignment is undefined
        return AlignmentResult(float("nan"), "", float("nan"), "", n_min, dim_total)
    return AlignmentResult(best_max, best_max_name, best_reg, best_reg_name, n_min, dim_total)


def alignment_reference(u1: np.ndarray, groups: Mapping[str, np.ndarray]) -> tuple[float, float]:
    """Loop-based reference of :func:`alignment`: ``(alpha_max, alpha_reg)`` via ``np.corrcoef``
    per dimension and an explicit normal-equations OLS with intercept per group."""
    u = np.asarray(u1, dtype=np.float64).ravel()
    a_max, a_reg = 0.0, 0.0
    for X in groups.values():
        X = np.asarray(X, dtype=np.float64)
        X = X[:, None] if X.ndim == 1 else X
        rows = np.all(np.isfinite(X), axis=1)
        y, Xr = u[rows], X[rows]
        for j in range(Xr.shape[1]):
            if np.std(Xr[:, j]) > 0:
                a_max = max(a_max, abs(float(np.corrcoef(y, Xr[:, j])[0, 1])))
        A = np.column_stack([np.ones(len(y)), Xr])
        coef = np.linalg.pinv(A.T @ A) @ (A.T @ y)
        pred = A @ coef
        r2 = 1 - np.sum((y - pred) ** 2) / np.sum((y - y.mean()) ** 2)
        a_reg = max(a_reg, float(np.sqrt(max(r2, 0.0))))
    return a_max, a_reg


def channel_alignment(
    u1: np.ndarray, features_by_channel: Mapping[str, Mapping[str, np.ndarray]]
) -> dict[str, AlignmentResult]:
    """:func:`alignment` for every channel: ``{channel: {group name: (N, D) array}}``."""
    return {c: alignment(u1, g) for c, g in features_by_channel.items()}
