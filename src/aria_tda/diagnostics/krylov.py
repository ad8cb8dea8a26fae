r"""Top eigenvalues of a Gram matrix one block product at a time, with guaranteed intervals.

The Gram matrix :math:`G = S^\top S` (``T x T``) of a score matrix is never formed here: the
solver only asks for block products :math:`G V` (``V`` is ``T x b``), which the caller makes
either with one streaming pass over the rows of ``S`` (:mod:`aria_tda.diagnostics.sketch`,
:math:`S^\top (S V)`) or with one read of a Gram spilled to disk
(:mod:`aria_tda.diagnostics.tiled`).

Method: randomised block Krylov (block Lanczos with full reorthogonalisation). The start
block is Gaussian; each product extends an orthonormal basis :math:`Q` by the orthogonalised
new block; Rayleigh–Ritz on :math:`H = Q^\top G Q` (all of whose columns :math:`G Q` are
already known) gives Ritz values :math:`\theta_1 \ge \theta_2 \ge \dots`, Ritz vectors
:math:`x_i = Q y_i` and their residuals :math:`r_i = G x_i - \theta_i x_i`, exactly, with no
extra product. When the basis would exceed ``max_dim`` it restarts from the leading Ritz
vectors (whose products are known).

Intervals (:func:`ritz_bounds`), for every :math:`i \le k`, with :math:`\lambda_i` the exact
eigenvalues of :math:`G` and :math:`F = \operatorname{tr} G = \lVert S \rVert_F^2`
(known exactly from the column sums of squares):

- lower :math:`\theta_i \le \lambda_i` — Cauchy interlacing (Ritz values of any subspace);
- upper — split the space into the top-:math:`m` Ritz vectors :math:`X_m` (:math:`m \ge i`)
  and their complement. In that basis :math:`G = [[\Theta_m, E^\top], [E, B]]` with
  :math:`\lVert E \rVert_2 = \lVert G X_m - X_m \Theta_m \rVert_2 = e_m` (computed) and
  :math:`\lambda_{\max}(B) \le \beta_m = \min(F - \sum_{j \le m} \theta_j,\;
  \max(\theta_{m+1}, F - \sum_{\text{all}} \theta_j) + \lVert R \rVert_2)`
  (a PSD matrix's largest eigenvalue is at most its trace; Weyl). If
  :math:`\theta_m > \beta_m` (a certified gap :math:`\eta = \theta_m - \beta_m`),
  Li & Li (2005) give :math:`\lambda_i \le \theta_i + 2 e_m^2 / (\eta + \sqrt{\eta^2 +
  4 e_m^2})` (quadratic in the residual); otherwise Weyl gives
  :math:`\lambda_i \le \max(\theta_i, \beta_m) + e_m`. The upper bound is the least over
  :math:`m`, also capped by :math:`F - \sum_{j<i} \theta_j` and by the bound of
  :math:`\lambda_{i-1}`.

These intervals are deterministic: they hold for every start block and every matrix, up to
the float64 rounding of the accumulated products (a slack of ``1e-12 F`` is added). They are
tight when the top eigenvalues stand above the energy the basis has not explored (the
collapse regime); when the spectrum's tail carries more energy than :math:`\theta_i` they
stay valid but wide.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.linalg

from aria_tda._checks import check_int
from aria_tda.scores.lowrank import fix_sign
from aria_tda.scores.stats import blas_threads

__all__ = ["RitzResult", "block_krylov_eigs", "ritz_bounds"]

#: Relative slack added to every bound for the float64 rounding of the products.
ROUNDING_SLACK = 1e-12


@dataclass(frozen=True, eq=False)
class RitzResult:
    r"""Leading Ritz pairs of :math:`G` with guaranteed eigenvalue intervals.

    Attributes
    ----------
    values : numpy.ndarray [shape=(k,)]
        Ritz values :math:`\theta_1 \ge \dots \ge \theta_k` (zeros beyond the basis size).
    vectors : numpy.ndarray [shape=(T, k')]
        Ritz vectors (orthonormal; column 0 sign-fixed with :func:`fix_sign`).
    lower, upper : numpy.ndarray [shape=(k,)]
        :math:`\text{lower}_i \le \lambda_i(G) \le \text{upper}_i`.
    residuals : numpy.ndarray [shape=(k,)]
        :math:`\lVert G x_i - \theta_i x_i \rVert_2`.
    certified : numpy.ndarray [shape=(k,)] of bool
        The upper bound came from a certified gap (quadratic bound), not the Weyl fallback.
    n_products : int
        Block products :math:`G V` made.
    dim : int
        Size of the final Krylov basis.
    """

    values: np.ndarray
    vectors: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    residuals: np.ndarray
    certified: np.ndarray
    n_products: int
    dim: int


def ritz_bounds(
    theta: np.ndarray, resid: np.ndarray, trace: float, k: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""Guaranteed intervals for the ``k`` largest eigenvalues from a Rayleigh–Ritz step.

    Parameters
    ----------
    theta : numpy.ndarray [shape=(d,)]
        All Ritz values of the basis, descending.
    resid : numpy.ndarray [shape=(T, d)]
        Residuals :math:`G x_j - \theta_j x_j`, column ``j`` for ``theta[j]``.
    trace : float
        :math:`\operatorname{tr} G` (exact).
    k : int
        How many intervals.

    Returns
    -------
    lower, upper : numpy.ndarray [shape=(k,)]
    certified : numpy.ndarray [shape=(k,)] of bool
    """
    d = theta.shape[0]
    slack = ROUNDING_SLACK * max(trace, 0.0)
    th = np.zeros(max(k, d) + 1)
    th[:d] = np.maximum(theta, 0.0)
    rest_all = max(0.0, trace - float(th[:d].sum()))
    lower = np.maximum(th[:k] - slack, 0.0)
    upper = np.full(k, np.inf)
    cert = np.zeros(k, dtype=bool)
    # the spectral norms of residual blocks, from one small Gram of the residuals
    rr = resid.T @ resid if d else np.zeros((0, 0))
    m_max = min(d, max(3 * k, k + 10))
    # ||R_rest||_2 <= ||R||_2 (a column subset): one eigenvalue problem for all splits
    e_all = float(np.sqrt(max(0.0, float(np.linalg.eigvalsh(rr)[-1])))) if d else 0.0
    for m in range(1, m_max + 1):
        e_m = float(np.sqrt(max(0.0, float(np.linalg.eigvalsh(rr[:m, :m])[-1]))))
        e_rest = e_all if m < d else 0.0
        beta = min(
            max(0.0, trace - float(th[:m].sum())),
            max(float(th[m]), rest_all) + e_rest,
        )
        top = min(m, k)
        if th[m - 1] > beta:
            eta = float(th[m - 1]) - beta
            delta = 2.0 * e_m * e_m / (eta + np.sqrt(eta * eta + 4.0 * e_m * e_m))
            cand = th[:top] + delta
            better = cand < upper[:top]
            cert[:top] = np.where(better, True, cert[:top])
        else:
            cand = np.maximum(th[:top], beta) + e_m
            better = cand < upper[:top]
            cert[:top] = np.where(better, False, cert[:top])
        upper[:top] = np.minimum(upper[:top], cand)
    # no basis vector for i > d, or m did not reach i: only the trace caps apply
    for i in range(k):
        cap = max(0.0, trace - float(th[:i].sum()))
        if cap < upper[i]:
            upper[i], cert[i] = cap, False
        if i and upper[i - 1] < upper[i]:
            upper[i] = upper[i - 1]
        if not np.isfinite(upper[i]):
            upper[i] = cap
    upper = np.maximum(upper + slack, lower)
    return lower, upper, cert


def _orth(w: np.ndarray, q: np.ndarray | None, rng: np.random.Generator, want: int) -> np.ndarray:
    """Orthonormal columns spanning ``w`` minus its part in ``q``; random fill to ``want``."""
    n = w.shape[0]
    have = 0 if q is None else q.shape[1]
    want = min(want, n - have)
    if want <= 0:
        return np.zeros((n, 0))
    for _ in range(2):
        if q is not None and have:
            w = w - q @ (q.T @ w)
    scale = np.linalg.norm(w, axis=0).max() if w.size else 0.0
    if scale > 0:
        qr, r, _ = scipy.linalg.qr(w, mode="economic", pivoting=True)
        diag = np.abs(np.diagonal(r))
        rank = int((diag > 1e-10 * diag[0]).sum()) if diag.size else 0
        out = qr[:, :rank]
    else:
        out = np.zeros((n, 0))
    if out.shape[1] < want:  # deflation: continue from fresh random directions
        fill = rng.standard_normal((n, want - out.shape[1]))
        base = out if q is None or not have else np.hstack([q, out])
        for _ in range(2):
            if base.shape[1]:
                fill = fill - base @ (base.T @ fill)
        fq, _ = np.linalg.qr(fill)
        out = np.hstack([out, fq])
    return out[:, :want]


def block_krylov_eigs(
    apply: Callable[[np.ndarray], np.ndarray],
    n: int,
    k: int,
    *,
    trace: float | Callable[[], float],
    block: int | None = None,
    max_products: int = 50,
    max_dim: int | None = None,
    stop: Callable[[RitzResult], bool] | None = None,
    seed: int = 0,
    callback: Callable[[RitzResult], Any] | None = None,
) -> RitzResult:
    r"""The ``k`` largest eigenpairs of a PSD matrix known only through block products.

    Parameters
    ----------
    apply : callable
        ``apply(V) -> G V`` for ``V`` of shape ``(n, b)`` (float64); each call is one
        product (a streaming pass, or one read of a spilled Gram).
    n : int
        Order of :math:`G` (``T``).
    k : int
        How many eigenvalues.
    trace : float or callable
        :math:`\operatorname{tr} G`, exact (used by the bounds); a callable is asked after
        each product (for a trace that the first product's pass computes).
    block : int, optional
        Block size (default ``k + 10``).
    max_products : int
        Most products to make.
    max_dim : int, optional
        Largest basis before a restart (default ``min(n, 12 * block)``).
    stop : callable, optional
        ``stop(result) -> bool`` after each product; default: never (run all products) —
        the basis reaching ``n`` always stops.
    seed : int
        Seed of the Gaussian start block.
    callback : callable, optional
        Called with the result after each product.

    Returns
    -------
    RitzResult
    """
    n = check_int("n", n, min_value=1)
    k = check_int("k", k, min_value=1)
    b = check_int("block", block if block is not None else k + 10, min_value=1)
    b = min(b, n)
    max_products = check_int("max_products", max_products, min_value=1)
    dmax = min(n, max_dim if max_dim is not None else 12 * b)
    dmax = max(dmax, min(n, b + k))
    rng = np.random.default_rng(seed)
    q = _orth(rng.standard_normal((n, b)), None, rng, b)
    new = q
    gq = np.zeros((n, 0))
    result: RitzResult | None = None
    for it in range(1, max_products + 1):
        gnew = np.asarray(apply(new), dtype=np.float64)
        gq = np.hstack([gq, gnew]) if gq.shape[1] else gnew
        with blas_threads(1):  # small dense algebra: extra threads only contend
            tr = float(trace()) if callable(trace) else float(trace)
            result, x, gx, resid = _rayleigh_ritz(q, gq, tr, k, it)
        if callback is not None:
            callback(result)
        if q.shape[1] >= n or (stop is not None and stop(result)) or it == max_products:
            break
        with blas_threads(1):
            if q.shape[1] + b > dmax:  # restart from the leading Ritz vectors (products known)
                keep = min(q.shape[1], max(k + b, dmax - 2 * b))
                # re-orthonormalise against rounding drift: X = Q' R, so G Q' = (G X) R^-1
                q, r = np.linalg.qr(x[:, :keep])
                gq = scipy.linalg.solve_triangular(r.T, gx[:, :keep].T, lower=True).T
                new = _orth(resid[:, : min(b, resid.shape[1])], q, rng, b)
            else:
                new = _orth(gnew, q, rng, b)
        if new.shape[1] == 0:
            break
        q = np.hstack([q, new])
    assert result is not None
    return result


def _rayleigh_ritz(
    q: np.ndarray, gq: np.ndarray, trace: float, k: int, it: int
) -> tuple[RitzResult, np.ndarray, np.ndarray, np.ndarray]:
    """Ritz pairs, residuals and intervals of the basis ``q`` (with ``gq = G q``)."""
    h = q.T @ gq
    h = 0.5 * (h + h.T)
    theta, y = np.linalg.eigh(h)
    theta, y = theta[::-1], y[:, ::-1]
    x = q @ y
    gx = gq @ y
    resid = gx - x * theta
    lower, upper, cert = ritz_bounds(theta, resid, trace, k)
    kk = min(k, theta.shape[0])
    vals = np.zeros(k)
    vals[:kk] = np.maximum(theta[:kk], 0.0)
    res = np.zeros(k)
    res[:kk] = np.linalg.norm(resid[:, :kk], axis=0)
    vecs = x[:, :kk].copy()
    vecs[:, 0] *= fix_sign(vecs[:, 0])
    result = RitzResult(vals, vecs, lower, upper, res, cert, it, q.shape[1])
    return result, x, gx, resid


def block_krylov_eigs_reference(
    apply: Callable[[np.ndarray], np.ndarray],
    n: int,
    k: int,
    *,
    trace: float | Callable[[], float],
    block: int | None = None,
    max_products: int = 50,
    max_dim: int | None = None,
    stop: Callable[[RitzResult], bool] | None = None,
    seed: int = 0,
    callback: Callable[[RitzResult], Any] | None = None,
) -> RitzResult:
    """Dense reference of :func:`block_krylov_eigs`: form ``G = apply(I)``, ``numpy.linalg.eigh``.

    Intervals are the exact values (zero width).

    Parameters
    ----------
    apply : callable
        ``apply(V) -> G V``.
    n : int
        Order of ``G``.
    k : int
        How many eigenvalues.
    trace : float or callable
        Ignored.
    block : int, optional
        Ignored.
    max_products : int
        Ignored.
    max_dim : int, optional
        Ignored.
    stop : callable, optional
        Ignored.
    seed : int
        Ignored.
    callback : callable, optional
        Ignored.
    """
    g = np.asarray(apply(np.eye(n)), dtype=np.float64)
    w, v = np.linalg.eigh(0.5 * (g + g.T))
    w, v = np.maximum(w[::-1], 0.0), v[:, ::-1]
    kk = min(k, n)
    vals = np.zeros(k)
    vals[:kk] = w[:kk]
    vecs = v[:, :kk].copy()
    vecs[:, 0] *= fix_sign(vecs[:, 0])
    return RitzResult(
        vals, vecs, vals.copy(), vals.copy(), np.zeros(k), np.ones(k, bool), 1, n
    )
