r"""Axis–channel alignment of the dominant retrieval axis (paper Eq. alpha, Table 3).

Conventions
-----------
:math:`u_1 \in \mathbb{R}^N` is the leading left singular vector of :math:`S^{\mathrm{track}}`
(tracks × queries). For a channel :math:`c` with feature groups :math:`\Psi` (per-track feature
matrices, e.g. the 12-dimensional chroma vector),

.. math::

    \alpha_c^{\max} = \max_{d} |\mathrm{corr}(u_1, \psi_d)|, \qquad
    \alpha_c^{\mathrm{reg}} = \max_{\Psi} \sqrt{R^2_{\mathrm{cv}}(u_1 \mid \Psi)},

where :math:`d` ranges over every single dimension of every group of the channel. Tracks with
a NaN in a group are left out of that group's fit; constant dimensions carry no correlation
and are skipped; a channel whose every dimension is constant has undefined (NaN) alignment.
Sequence-valued features (chord progressions) enter as their 12-bin histogram of symbols
(:func:`sequence_histogram`), since a regression needs a fixed-width vector.

The regression is honest at any ratio of tracks to dimensions
(``alpha_reg_method = "ridge-cv R² (5-fold)"``)
    The paper's :math:`R^2` is the in-sample fit of an ordinary least-squares regression; it
    grows with the group width :math:`D` (pure noise gives :math:`D/(n-1)` in expectation) and
    is exactly 1 once :math:`D \ge n - 1` (CQT has 168 dimensions; a 120-track study
    reported :math:`\alpha^{\mathrm{reg}} = 1.000`). ARIA instead reports the **out-of-fold**
    :math:`R^2` of a ridge regression: the tracks are split into ``n_folds`` (default 5)
    folds by a seeded permutation; on each training part the dimensions are standardised
    (constant ones dropped) and the ridge penalty :math:`\lambda` is chosen among
    :math:`\lambda = s_1^2 \cdot 10^{e}`, :math:`e \in \{2, 1.5, \dots, -6\}` (:math:`s_1` the
    largest singular value of the standardised training matrix) by exact leave-one-out
    cross-validation (the closed form :math:`e_i / (1 - h_{ii})`; an intercept is always
    fitted and never penalised); the held-out fold is then predicted. With all predictions
    :math:`\hat u` out of fold, :math:`R^2_{\mathrm{cv}} = 1 - \sum (u - \hat u)^2 /
    \sum (u - \bar u)^2`, clipped to :math:`[0, 1]`. Features unrelated to :math:`u_1` give
    :math:`\approx 0` whatever :math:`D/n`; a linear relation gives :math:`\approx 1`.

Both measures are in :math:`[0, 1]`; each result records ``n``, ``dim`` and
``alpha_reg_method``. :func:`alignment_reference` is the exact loop reference (explicit
leave-one-out refits by the normal equations).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from aria_tda._checks import check_int
from aria_tda.errors import DataError, ParameterError, expected

__all__ = [
    "AlignmentResult",
    "alignment",
    "channel_alignment",
    "sequence_histogram",
]


@dataclass(frozen=True)
class AlignmentResult:
    """Alignment of :math:`u_1` with one channel.

    Attributes
    ----------
    alpha_max : float
        Largest single-dimension ``|corr(u1, feature dimension)|``.
    alpha_max_feature : str
        That dimension, ``"group[j]"`` (or ``"group"`` for scalars).
    alpha_reg : float
        :math:`\\sqrt{\\max(R^2_{cv}, 0)}` of the best group (see the module notes).
    alpha_reg_group : str
        That group.
    n : int
        Fewest tracks with finite features over the channel's groups.
    dim : int
        Total width of the channel's groups.
    alpha_reg_method : str
        How ``alpha_reg`` was fitted, for tables and captions.
    """

    alpha_max: float
    alpha_max_feature: str
    alpha_reg: float
    alpha_reg_group: str
    n: int
    dim: int
    alpha_reg_method: str = ""

    def to_dict(self) -> dict[str, object]:
        """The fields as a plain dict (one row of the ``alignment`` table)."""
        return dict(self.__dict__)


def sequence_histogram(sequences: Sequence[np.ndarray], *, n_symbols: int = 12) -> np.ndarray:
    """Normalised histogram of integer symbols per sequence, ``(len(sequences), n_symbols)``.

    An empty sequence gives a row of NaN (no information).

    Parameters
    ----------
    sequences : sequence of np.ndarray [int]
        One symbol sequence per track (e.g. chord root motions).
    n_symbols : int
        Alphabet size; symbols must lie in ``[0, n_symbols)``.
    """
    out = np.full((len(sequences), n_symbols), np.nan)
    for i, seq in enumerate(sequences):
        s = np.asarray(seq, dtype=np.int64).ravel()
        if s.size:
            if s.min() < 0 or s.max() >= n_symbols:
                raise DataError(expected(
                    f"sequences[{i}]", f"symbols in [0, {n_symbols})", s.tolist()[:10]))
            out[i] = np.bincount(s, minlength=n_symbols) / s.size
    return out


def _check_inputs(u1: np.ndarray,
                  groups: Mapping[str, np.ndarray]) -> tuple[np.ndarray, dict[str, np.ndarray]]:
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


#: the penalty grid, as exponents of ten times the largest squared singular value
_LOG_LAMBDAS = np.linspace(2.0, -6.0, 17)


def _method(n_folds: int) -> str:
    return f"ridge-cv R² ({n_folds}-fold)"


def _folds(n: int, n_folds: int, seed: int) -> np.ndarray:
    """Fold of every row: a seeded permutation dealt round-robin into ``min(n_folds, n)``."""
    k = min(n_folds, n)
    fold = np.empty(n, dtype=np.int64)
    fold[np.random.default_rng(seed).permutation(n)] = np.arange(n) % k
    return fold


def _standardise(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(mean, sd, keep)`` of the columns of a training matrix (constant columns dropped)."""
    mean = x.mean(axis=0)
    sd = x.std(axis=0)
    amax = np.abs(x).max(axis=0, initial=0.0)
    keep = sd > 1e-12 * np.maximum(amax, np.finfo(float).tiny)
    return mean, np.where(keep, sd, 1.0), keep


def _ridge_cv_predictions(y: np.ndarray, X: np.ndarray, n_folds: int, seed: int) -> np.ndarray:
    """Out-of-fold ridge predictions of ``y`` (penalty by exact leave-one-out per fold)."""
    n = y.size
    fold = _folds(n, n_folds, seed)
    pred = np.empty(n)
    for f in range(int(fold.max()) + 1):
        test, train = fold == f, fold != f
        yt = y[train]
        my = yt.mean() if yt.size else 0.0
        mean, sd, keep = _standardise(X[train])
        if yt.size < 3 or not keep.any():
            pred[test] = my
            continue
        Z = (X[train][:, keep] - mean[keep]) / sd[keep]
        yc = yt - my
        # thin SVD Z = U diag(sv) V^T from the small Gram matrix (tall Z: BLAS syrk + eigh
        # of D x D is several times faster than an SVD); directions with sv^2 below 1e-12 of
        # the largest carry no weight at any penalty of the grid and are dropped
        w, V = np.linalg.eigh(Z.T @ Z)
        good = w > w[-1] * 1e-12
        sv = np.sqrt(w[good])[::-1]
        Vg = V[:, good][:, ::-1]
        U = (Z @ Vg) / sv
        Vt = Vg.T
        lam = sv[0] ** 2 * 10.0 ** _LOG_LAMBDAS  # (L,)
        shrink = sv[:, None] ** 2 / (sv[:, None] ** 2 + lam[None, :])  # (r, L)
        uty = U.T @ yc
        resid = yc[:, None] - U @ (shrink * uty[:, None])  # (n_tr, L)
        h = 1.0 / yt.size + (U * U) @ shrink  # (n_tr, L)
        with np.errstate(divide="ignore", invalid="ignore"):
            loo = np.where(1.0 - h > 1e-12, resid / (1.0 - h), np.inf)
        best = int(np.argmin(np.mean(loo * loo, axis=0)))
        coef = Vt.T @ (sv / (sv**2 + lam[best]) * uty)
        pred[test] = my + ((X[test][:, keep] - mean[keep]) / sd[keep]) @ coef
    return pred


def _cv_r2(y: np.ndarray, pred: np.ndarray) -> float:
    """Out-of-fold :math:`R^2` (may be negative; clipped by the caller)."""
    yc = y - y.mean()
    ss_tot = float(yc @ yc)
    if ss_tot <= 0.0:
        return float("-inf")
    r = y - pred
    return float(1.0 - (r @ r) / ss_tot)


def alignment(u1: np.ndarray, groups: Mapping[str, np.ndarray], *, n_folds: int = 5,
              seed: int = 0) -> AlignmentResult:
    r"""Alignment of ``u1`` with one channel's feature ``groups`` (paper Eq. alpha).

    Parameters
    ----------
    u1 : np.ndarray [shape=(N,)]
        Leading left singular vector of :math:`S^{\mathrm{track}}` (sign is irrelevant).
    groups : mapping name → np.ndarray [shape=(N, D)]
        The channel's per-track feature groups.
    n_folds : int
        Folds of the cross-validated :math:`R^2` behind ``alpha_reg`` (at most ``n``).
    seed : int
        Seed of the fold assignment.

    Returns
    -------
    AlignmentResult
        ``alpha_max_feature`` is ``"group[j]"`` (or ``"group"`` for scalars);
        ``alpha_reg`` is :math:`\sqrt{\max(R^2_{cv}, 0)}` of the best group (module notes).
    """
    n_folds = check_int("n_folds", n_folds, min_value=2)
    seed = check_int("seed", seed, min_value=0)
    u, groups = _check_inputs(u1, groups)
    best_max, best_max_name = 0.0, ""
    best_r2, best_reg_name = float("-inf"), ""
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
        if not np.any(valid):
            continue
        corr = np.zeros(X.shape[1])
        corr[valid] = np.abs(yc @ Xc[:, valid]) / (nx[valid] * ny)
        j = int(np.argmax(corr))
        if corr[j] > best_max:
            best_max = float(min(corr[j], 1.0))
            best_max_name = name if X.shape[1] == 1 else f"{name}[{j}]"
        r2 = _cv_r2(y, _ridge_cv_predictions(y, Xr, n_folds, seed))
        if r2 > best_r2:
            best_r2, best_reg_name = r2, name
    if not evaluated:
        raise DataError("groups: no group has at least 3 tracks with finite features")
    return _result(best_max, best_max_name, best_r2, best_reg_name, n_min, dim_total, n_folds)


def _result(best_max: float, best_max_name: str, best_r2: float, best_reg_name: str,
            n_min: int, dim_total: int, n_folds: int) -> AlignmentResult:
    if not best_max_name and not best_reg_name:
        # every dimension constant over the tracks (or u1 constant): alignment is undefined
        return AlignmentResult(float("nan"), "", float("nan"), "", n_min, dim_total,
                               _method(n_folds))
    reg = float(np.sqrt(min(max(best_r2, 0.0), 1.0)))
    # as for alpha_max, a group is named only when it explains something (out of fold)
    return AlignmentResult(best_max, best_max_name, reg, best_reg_name if reg > 0 else "",
                           n_min, dim_total, _method(n_folds))


def alignment_reference(u1: np.ndarray, groups: Mapping[str, np.ndarray], *, n_folds: int = 5,
                        seed: int = 0) -> AlignmentResult:
    """Loop reference of :func:`alignment`: ``np.corrcoef`` per dimension; per fold, every
    penalty and every training track an explicit ridge refit without that track (normal
    equations with an unpenalised intercept) for the leave-one-out choice of the penalty.

    Parameters
    ----------
    u1 : np.ndarray [shape=(N,)]
        Leading left singular vector of ``S_track``.
    groups : mapping name → np.ndarray [shape=(N, D)]
        The channel's per-track feature groups.
    n_folds : int
        Folds of the cross-validated :math:`R^2`.
    seed : int
        Seed of the fold assignment.
    """
    u = np.asarray(u1, dtype=np.float64).ravel()
    a_max, a_max_name, best_r2, a_reg_name = 0.0, "", float("-inf"), ""
    n_min, dim_total = u.size, 0
    for name, X in groups.items():
        X = np.asarray(X, dtype=np.float64)
        X = X[:, None] if X.ndim == 1 else X
        dim_total += X.shape[1]
        rows = np.all(np.isfinite(X), axis=1)
        if rows.sum() < 3:
            continue
        n_min = min(n_min, int(rows.sum()))
        y, Xr = u[rows], X[rows]
        if np.std(y) == 0 or not any(np.std(Xr[:, j]) > 0 for j in range(Xr.shape[1])):
            continue
        for j in range(Xr.shape[1]):
            if np.std(Xr[:, j]) > 0:
                c = abs(float(np.corrcoef(y, Xr[:, j])[0, 1]))
                if c > a_max:
                    a_max, a_max_name = min(c, 1.0), name if X.shape[1] == 1 else f"{name}[{j}]"
        fold = _folds(y.size, n_folds, seed)
        pred = np.empty(y.size)
        for f in range(int(fold.max()) + 1):
            tr, te = np.flatnonzero(fold != f), np.flatnonzero(fold == f)
            mean, sd, keep = _standardise(Xr[tr])
            if tr.size < 3 or not keep.any():
                pred[te] = y[tr].mean() if tr.size else 0.0
                continue
            Z = (Xr[:, keep] - mean[keep]) / sd[keep]
            s1 = np.linalg.norm(Z[tr] - Z[tr].mean(axis=0), 2)
            lams = s1**2 * 10.0 ** _LOG_LAMBDAS
            loo = [np.mean([(y[i] - _ridge_fit_predict(Z[tr[tr != i]], y[tr[tr != i]], lam,
                                                        Z[i][None])[0]) ** 2 for i in tr])
                   for lam in lams]
            lam = lams[int(np.argmin(loo))]
            pred[te] = _ridge_fit_predict(Z[tr], y[tr], lam, Z[te])
        r2 = _cv_r2(y, pred)
        if r2 > best_r2:
            best_r2, a_reg_name = r2, name
    return _result(a_max, a_max_name, best_r2, a_reg_name, n_min, dim_total, n_folds)


def _ridge_fit_predict(Z: np.ndarray, y: np.ndarray, lam: float, Znew: np.ndarray) -> np.ndarray:
    """Ridge with an unpenalised intercept by the normal equations; predictions at ``Znew``."""
    A = np.column_stack([np.ones(len(y)), Z])
    P = np.diag(np.r_[0.0, np.full(Z.shape[1], lam)])
    coef = np.linalg.solve(A.T @ A + P, A.T @ y)
    return np.column_stack([np.ones(len(Znew)), Znew]) @ coef


def channel_alignment(
    u1: np.ndarray, features_by_channel: Mapping[str, Mapping[str, np.ndarray]]
) -> dict[str, AlignmentResult]:
    """:func:`alignment` for every channel: ``{channel: {group name: (N, D) array}}``.

    Parameters
    ----------
    u1 : np.ndarray [shape=(N,)]
        Leading left singular vector of ``S_track``.
    features_by_channel : mapping channel → mapping group name → np.ndarray [shape=(N, D)]
        Each channel's feature groups.
    """
    return {c: alignment(u1, g) for c, g in features_by_channel.items()}
