r"""Reliability diagnostics of a score matrix with its query columns resampled (bootstrap).

See :mod:`aria_tda.paired` for the formulas.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from aria_tda.errors import DataError, expected

__all__ = ["diagnostics_bootstrap"]


def _check_counts(counts: Any, t: int) -> np.ndarray:
    c = np.asarray(counts)
    if c.ndim != 2 or c.shape[1] != t or c.dtype.kind not in "iu" or (c.size and c.min() < 0):
        what = f"non-negative integer bootstrap counts of shape (B, {t})"
        raise DataError(expected("counts", what, f"{c.dtype} {c.shape}"))
    return c.astype(np.float64)


def diagnostics_bootstrap(
    scores: Any, counts: Any, *, chunk_rows: int | None = None
) -> dict[str, np.ndarray]:
    r"""Reliability diagnostics of ``S`` with its query columns resampled, per replicate.

    Replicate ``b`` is the matrix whose columns are query ``j`` repeated ``counts[b, j]``
    times; see the module docstring for how each diagnostic follows from one Gram pass. At
    ``counts = 1`` the values equal :func:`aria_tda.diagnostics.diagnose` (constant columns left
    out of κ, all-zero columns out of ``p``, as there).

    Parameters
    ----------
    scores : array-like, ScoreSource or path [shape=(M, T)]
        The raw segment-level score matrix (as :func:`~aria_tda.diagnostics.diagnose` takes it).
    counts : int array [shape=(B, T)]
        Bootstrap counts of the queries (:func:`bootstrap_counts`).
    chunk_rows : int, optional
        Rows per block of the Gram pass.

    Returns
    -------
    dict[str, np.ndarray]
        ``r1, r2_5, p, kappa``, each ``(B,)``.
    """
    from aria_tda.diagnostics import CONST_ULPS
    from aria_tda.diagnostics.kappa import abs_corr_block
    from aria_tda.scores.stats import stream_stats

    st = stream_stats(scores, chunk_rows=chunk_rows, gram=True, progress=False)
    m, t = st.n, st.n_cols
    c = _check_counts(counts, t)
    gram = st.raw_gram()
    sumsq = st.sum_squares
    keep = ~st.constant_mask(ulps=CONST_ULPS)
    corr = np.zeros((t, t))
    if keep.sum() >= 2:
        cg = st.centered_gram()[np.ix_(keep, keep)]
        sd = np.sqrt(st.centered_ss[keep])
        corr[np.ix_(keep, keep)] = abs_corr_block(cg, sd, sd)  # the one |C| of κ
    np.fill_diagonal(corr, 0.0)
    nz = sumsq > 0
    pj = np.where(nz, np.clip(st.column_sums**2 / (m * np.where(nz, sumsq, 1.0)), 0.0, 1.0), 0.0)
    n_top = min(5, t)
    out = {k: np.full(c.shape[0], np.nan) for k in ("r1", "r2_5", "p", "kappa")}
    for b, cb in enumerate(c):
        drawn = np.flatnonzero(cb)  # undrawn queries add zero rows and columns only
        root = np.sqrt(cb[drawn])
        w = root[:, None] * gram[np.ix_(drawn, drawn)] * root[None, :]
        vals = np.zeros(n_top)
        top = np.linalg.eigvalsh(w)[::-1][:n_top]
        vals[:top.size] = np.maximum(top, 0.0)
        total = max(float(cb @ np.diag(gram)), float(vals.sum()))
        if total > 0:
            ratios = np.clip(vals / total, 0.0, 1.0)
            out["r1"][b] = ratios[0]
            out["r2_5"][b] = ratios[1:5].sum()
        wp = cb * nz
        if wp.sum() > 0:
            out["p"][b] = float(wp @ pj / wp.sum())
        ck = cb * keep
        pairs = ck.sum() ** 2 - (ck * ck).sum()
        if pairs > 0:
            out["kappa"][b] = float(min(1.0, ck @ corr @ ck / pairs))
    return out


def diagnostics_bootstrap_reference(
    scores: Any, counts: Any, *, chunk_rows: int | None = None
) -> dict[str, np.ndarray]:
    """Exact reference of :func:`diagnostics_bootstrap`: build each resampled matrix.

    ``np.linalg.svd`` of ``S[:, idx]`` for r_i, the explicit per-column ratios for ``p``, and
    ``np.corrcoef`` of the resampled columns for κ over pairs of different source queries.

    Parameters
    ----------
    scores : array-like [shape=(M, T)]
        The raw score matrix.
    counts : int array [shape=(B, T)]
        Bootstrap counts.
    chunk_rows : int, optional
        Ignored.
    """
    from aria_tda.scores.readers import as_source

    s = as_source(scores).to_numpy().astype(np.float64)
    m, t = s.shape
    c = _check_counts(counts, t).astype(np.int64)
    constant = np.ptp(s, axis=0) == 0
    out = {k: np.full(c.shape[0], np.nan) for k in ("r1", "r2_5", "p", "kappa")}
    for b, cb in enumerate(c):
        idx = np.repeat(np.arange(t), cb)
        sb = s[:, idx]
        sv = np.linalg.svd(sb, compute_uv=False) ** 2
        total = float((sb * sb).sum())
        if total > 0:
            out["r1"][b] = sv[0] / total
            out["r2_5"][b] = sv[1:5].sum() / total
        norms = (sb * sb).sum(axis=0)
        ok = norms > 0
        if ok.any():
            out["p"][b] = float(np.mean(sb.sum(axis=0)[ok] ** 2 / (m * norms[ok])))
        kept = idx[~constant[idx]]
        if kept.size >= 2:
            corr = np.abs(np.corrcoef(s[:, kept], rowvar=False))
            diff = kept[:, None] != kept[None, :]
            if diff.any():
                out["kappa"][b] = float(np.minimum(corr, 1.0)[diff].mean())
    return out
