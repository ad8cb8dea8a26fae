r"""Linear datamodeling score (LDS): attribution checked against counterfactual retraining.

Conventions
-----------
- ``subsets`` ``(S, m)``: row ``j`` lists the training-window indices model ``j`` was retrained
  on (random halves by default: :func:`~aria_tda.attribution.subsets.sample_subsets` — the same
  draw the benchmark retrains on, :func:`aria_tda_experiments.train.retrain_subsets`).
- ``outputs`` ``(S, T)``: the ground-truth model output of query ``t`` under model ``j``,
  :math:`y_j(q_t) = -\ell_{target}(q_t; \theta_j)` — the query's log-probability (higher =
  the retrained model finds the query more likely; :func:`retrain_outputs`).
- ``scores`` ``(n_train, T)``: higher = more influential = training on the segment lowers
  the query's loss.

The score's linear datamodel predicts :math:`\hat y_j(q) = \sum_{s \in S_j} \tau(s, q)`, and

.. math::

    \mathrm{LDS}(q) = \rho_{\mathrm{Spearman}}
        \big(\{\hat y_j(q)\}_{j=1}^{S},\ \{y_j(q)\}_{j=1}^{S}\big),

reported as the mean over queries. With the signs above a useful method has LDS > 0.

Sign pitfall in dattri: ``dattri.metric.calculate_lds_ground_truth`` *negates* whatever its
``target_func`` returns (it expects a loss). Its MAESTRO helper
``loss_maestro_musictransformer`` already returns the negative loss, so chaining the two
yields :math:`+\ell`, the opposite of this convention. ``dattri.metric.lds`` itself only
correlates; :func:`lds` equals it on the same inputs (tested).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from aria_tda._checks import check_int
from aria_tda._progress import progress
from aria_tda.attribution.subsets import sample_subsets
from aria_tda.errors import AriaWarning, DataError, ParameterError, expected

# lds_reference (the exact twin of lds) is importable but not exported.
__all__ = ["LDSResult", "lds", "lds_bootstrap", "model_outputs", "retrain_outputs",
           "sample_subsets"]


@dataclass(frozen=True)
class LDSResult:
    """Per-query LDS and its summary.

    Attributes
    ----------
    per_query : np.ndarray [shape=(T,)], float64
        Spearman correlation per query; NaN where it is undefined (a constant column).
    mean, sd : float
        Mean and sample SD over the queries where it is defined.
    n_subsets, n_queries : int
    n_undefined : int
        Queries with NaN LDS.
    """

    per_query: np.ndarray
    mean: float
    sd: float
    n_subsets: int
    n_queries: int
    n_undefined: int

    def to_row(self, method: str) -> dict[str, Any]:
        """A row of the results ``lds`` table.

        Parameters
        ----------
        method : str
            The attribution method (the row's ``method``).
        """
        return {"method": method, "lds": self.mean, "lds_sd": self.sd,
                "n_subsets": self.n_subsets, "n_queries": self.n_queries}


def _validate(
    scores: Any, subsets: Any, outputs: Any
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    s = np.asarray(scores)
    if s.ndim != 2:
        raise DataError(expected("scores", "a 2-D (n_train, n_test) matrix", s.shape))
    if not np.isfinite(s).all():
        bad = f"{int((~np.isfinite(s)).sum())} non-finite"
        raise DataError(expected("scores", "finite values", bad))
    idx = np.asarray(subsets)
    if idx.ndim != 2 or idx.dtype.kind not in "iu":
        what = "an integer (n_subsets, subset_size) array"
        raise DataError(expected("subsets", what, f"{idx.dtype} {idx.shape}"))
    if idx.size and (idx.min() < 0 or idx.max() >= s.shape[0]):
        got = f"[{idx.min()}, {idx.max()}]"
        raise DataError(expected("subsets", f"indices in [0, {s.shape[0]})", got))
    y = np.asarray(outputs, dtype=np.float64)
    if y.shape != (idx.shape[0], s.shape[1]):
        what = f"shape (n_subsets, n_test) = {(idx.shape[0], s.shape[1])}"
        raise DataError(expected("outputs", what, y.shape))
    if not np.isfinite(y).all():
        bad = f"{int((~np.isfinite(y)).sum())} non-finite"
        raise DataError(expected("outputs", "finite values", bad))
    if idx.shape[0] < 3:
        raise ParameterError(expected("subsets", "at least 3 subsets (rows)", idx.shape[0]))
    return s, idx, y


def predicted_outputs(scores: np.ndarray, subsets: np.ndarray) -> np.ndarray:
    r"""The linear datamodel :math:`\hat y_j(q) = \sum_{s\in S_j}\tau(s,q)`, ``(S, T)`` float64.

    Parameters
    ----------
    scores : np.ndarray [shape=(n_train, T)]
        Attribution scores.
    subsets : np.ndarray [shape=(S, m)], integer
        Training rows of each subset.
    """
    mask = np.zeros((subsets.shape[0], scores.shape[0]), dtype=np.float64)
    np.put_along_axis(mask, subsets.astype(np.int64), 1.0, axis=1)
    return mask @ scores.astype(np.float64, copy=False)


def _summarise(per_query: np.ndarray, n_subsets: int) -> LDSResult:
    ok = np.isfinite(per_query)
    n_bad = int((~ok).sum())
    if n_bad:
        warnings.warn(
            f"LDS is undefined for {n_bad} of {per_query.size} queries (constant predicted or "
            "ground-truth outputs across subsets); they are NaN and left out of the mean",
            AriaWarning, stacklevel=3,
        )
    vals = per_query[ok]
    mean = float(vals.mean()) if vals.size else float("nan")
    sd = float(vals.std(ddof=1)) if vals.size > 1 else float("nan")
    return LDSResult(per_query, mean, sd, int(n_subsets), int(per_query.size), n_bad)


def lds(scores: Any, subsets: Any, outputs: Any) -> LDSResult:
    r"""Linear datamodeling score of ``scores`` against retrained-model ``outputs``.

    Vectorised over queries: ranks of the predicted and true outputs along the subset axis
    (average ranks for ties, as Spearman's ρ defines), then one Pearson correlation per column.

    Parameters
    ----------
    scores : array [shape=(n_train, T)]
        Attribution scores, higher = more influential.
    subsets : int array [shape=(S, m)]
        Training rows of each retrained model.
    outputs : array [shape=(S, T)]
        Query log-probabilities under each retrained model (see module docstring).

    Returns
    -------
    LDSResult
    """
    from scipy.stats import rankdata

    s, idx, y = _validate(scores, subsets, outputs)
    pred = predicted_outputs(s, idx)
    rp = rankdata(pred, axis=0)
    ry = rankdata(y, axis=0)
    rp -= rp.mean(axis=0)
    ry -= ry.mean(axis=0)
    num = (rp * ry).sum(axis=0)
    den = np.sqrt((rp * rp).sum(axis=0) * (ry * ry).sum(axis=0))
    with np.errstate(invalid="ignore", divide="ignore"):
        per_query = np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)
    return _summarise(np.clip(per_query, -1.0, 1.0), idx.shape[0])


def lds_reference(scores: Any, subsets: Any, outputs: Any) -> LDSResult:
    """Exact reference of :func:`lds`: one ``scipy.stats.spearmanr`` per query on explicit sums.

    Parameters
    ----------
    scores : array [shape=(n_train, T)]
        Attribution scores, higher = more influential.
    subsets : int array [shape=(S, m)]
        Training rows of each retrained model.
    outputs : array [shape=(S, T)]
        Query log-probabilities under each retrained model.
    """
    from scipy.stats import spearmanr

    s, idx, y = _validate(scores, subsets, outputs)
    pred = np.stack([s[row].astype(np.float64).sum(axis=0) for row in idx])
    per_query = np.empty(s.shape[1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for t in range(s.shape[1]):
            per_query[t] = spearmanr(pred[:, t], y[:, t]).statistic
    return _summarise(per_query, idx.shape[0])


def _check_boot_counts(counts: Any, n: int, name: str) -> np.ndarray:
    c = np.asarray(counts)
    if c.ndim != 2 or c.shape[1] != n or c.dtype.kind not in "iu" or (c.size and c.min() < 0):
        what = f"non-negative integer bootstrap counts of shape (B, {n})"
        raise DataError(expected(name, what, f"{c.dtype} {c.shape}"))
    return c.astype(np.int64)


def lds_bootstrap(
    scores: Any, subsets: Any, outputs: Any, query_counts: Any, subset_counts: Any = None,
    *, block: int = 32,
) -> np.ndarray:
    r"""Mean LDS under bootstrap resamples of the queries and (optionally) of the subsets.

    Replicate ``b`` draws query ``t`` ``query_counts[b, t]`` times and retrained subset ``j``
    ``subset_counts[b, j]`` times: each query's Spearman correlation is taken over the
    resampled subsets (a subset drawn twice is two tied observations), and the mean over the
    resampled queries. Two methods given the *same* counts are compared pairwise
    (:func:`aria_tda.paired.paired_differences`): this is the paired, two-way (queries x subsets)
    bootstrap of their LDS difference. At all-ones counts it equals :func:`lds`'s mean.

    Parameters
    ----------
    scores : array [shape=(n_train, T)]
        Attribution scores, higher = more influential.
    subsets : int array [shape=(S, m)]
        Training rows of each retrained model.
    outputs : array [shape=(S, T)]
        Query log-probabilities under each retrained model.
    query_counts : int array [shape=(B, T)]
        Bootstrap counts of the queries (:func:`aria_tda.paired.bootstrap_counts`).
    subset_counts : int array [shape=(B, S)], optional
        Bootstrap counts of the subsets; ``None`` keeps every subset once (queries only).
    block : int
        Replicates ranked at once (memory ``block x S x T``; results do not depend on it).

    Returns
    -------
    np.ndarray [shape=(B,)], float64
        Mean LDS per replicate over the resampled queries where it is defined (NaN if none).
    """
    from scipy.stats import rankdata

    s, idx, y = _validate(scores, subsets, outputs)
    n_sub, t = y.shape
    qc = _check_boot_counts(query_counts, t, "query_counts").astype(np.float64)
    if subset_counts is None:
        sc = np.ones((qc.shape[0], n_sub), dtype=np.int64)
    else:
        sc = _check_boot_counts(subset_counts, n_sub, "subset_counts")
        if sc.shape[0] != qc.shape[0]:
            raise DataError(expected("subset_counts", f"{qc.shape[0]} replicates (rows)",
                                     sc.shape[0]))
    block = check_int("block", block, min_value=1)
    pred = predicted_outputs(s, idx)
    out = np.full(qc.shape[0], np.nan)
    for start in range(0, qc.shape[0], block):
        rows = [np.repeat(np.arange(n_sub), r) for r in sc[start:start + block]]
        rp = rankdata(np.stack([pred[r] for r in rows]), axis=1)
        ry = rankdata(np.stack([y[r] for r in rows]), axis=1)
        rp -= rp.mean(axis=1, keepdims=True)
        ry -= ry.mean(axis=1, keepdims=True)
        num = (rp * ry).sum(axis=1)
        den = np.sqrt((rp * rp).sum(axis=1) * (ry * ry).sum(axis=1))
        with np.errstate(invalid="ignore", divide="ignore"):
            per = np.clip(np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan), -1, 1)
            w = qc[start:start + block] * np.isfinite(per)
            out[start:start + block] = (w * np.nan_to_num(per)).sum(axis=1) / w.sum(axis=1)
    return out


def lds_bootstrap_reference(
    scores: Any, subsets: Any, outputs: Any, query_counts: Any, subset_counts: Any = None,
    *, block: int = 32,
) -> np.ndarray:
    """Exact reference of :func:`lds_bootstrap`: :func:`lds_reference` on each resampled copy.

    Parameters
    ----------
    scores : array [shape=(n_train, T)]
        Attribution scores.
    subsets : int array [shape=(S, m)]
        Training rows of each retrained model.
    outputs : array [shape=(S, T)]
        Query log-probabilities under each retrained model.
    query_counts : int array [shape=(B, T)]
        Bootstrap counts of the queries.
    subset_counts : int array [shape=(B, S)], optional
        Bootstrap counts of the subsets.
    block : int
        Ignored.
    """
    s, idx, y = _validate(scores, subsets, outputs)
    qc = _check_boot_counts(query_counts, y.shape[1], "query_counts")
    sc = (np.ones((qc.shape[0], y.shape[0]), dtype=np.int64) if subset_counts is None
          else _check_boot_counts(subset_counts, y.shape[0], "subset_counts"))
    out = np.empty(qc.shape[0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for b in range(qc.shape[0]):
            q = np.repeat(np.arange(y.shape[1]), qc[b])
            r = np.repeat(np.arange(y.shape[0]), sc[b])
            out[b] = lds_reference(s[:, q], idx[r], y[np.ix_(r, q)]).mean
    return out


def model_outputs(
    models: Any, queries: Any, *, target: Any = "last_token", batch_size: int = 64
) -> np.ndarray:
    r"""Ground-truth outputs of retrained models: :math:`-\ell_{target}(q)` per model and query.

    Parameters
    ----------
    models : list of nn.Module
        One per subset, in subset order (or objects with a ``.model`` attribute, e.g.
        :class:`aria_tda_experiments.train.TrainedModel`).
    queries : int array [shape=(T, L)]
        Query windows.
    target : {"sequence", "last_token"} or callable
        The query loss; outputs are :math:`-\ell_{target}`.
    batch_size : int
        Queries per forward pass.

    Returns
    -------
    np.ndarray [shape=(S, T)], float64
    """
    from aria_tda.attribution.task import query_log_probs

    models = list(models)
    if not models:
        raise ParameterError(expected("models", "a non-empty list of models", models))
    return np.stack([
        query_log_probs(getattr(m, "model", m), queries, target=target, batch_size=batch_size)
        for m in models
    ])


def retrain_outputs(
    retrain: Callable[..., Any],
    subsets: Any,
    queries: Any,
    *,
    target: Any = "last_token",
    runs_per_subset: int = 1,
    seed: int = 0,
    cache_dir: str | Path | None = None,
    batch_size: int = 64,
    progress_bar: bool | None = None,
) -> np.ndarray:
    r"""Ground-truth outputs: retrain on each subset and score every query.

    Parameters
    ----------
    retrain : callable
        ``retrain(indices, seed=int) -> nn.Module``: a model trained from scratch on the
        training windows ``indices`` (an int64 array), deterministically given ``seed``.
    subsets : int array [shape=(S, m)]
        Training rows of each subset.
    queries : int array [shape=(T, L)]
        Query windows.
    target : {"sequence", "last_token"} or callable
        The query loss; outputs are :math:`-\ell_{target}` (log-probabilities).
    runs_per_subset : int
        Models per subset (different seeds), averaged as dattri does.
    seed : int
        Model ``j``, run ``r`` gets ``seed + j * runs_per_subset + r``.
    cache_dir : path, optional
        Keep each subset's outputs there (``subset_###.npy`` + manifest) and reuse them on a
        rerun with the same subset, queries, target, runs and seed.
    batch_size : int
        Queries per forward pass.
    progress_bar : bool, optional
        Force the progress bar on/off.

    Returns
    -------
    np.ndarray [shape=(S, T)], float64
    """
    from aria_tda.attribution.task import as_windows, loss_name, query_log_probs

    idx = np.asarray(subsets)
    if idx.ndim != 2 or idx.dtype.kind not in "iu":
        what = "an integer (n_subsets, subset_size) array"
        raise DataError(expected("subsets", what, idx.shape))
    runs = check_int("runs_per_subset", runs_per_subset, min_value=1)
    seed = check_int("seed", seed, min_value=0)
    q = as_windows(queries, name="queries")
    if not callable(retrain):
        what = "a callable retrain(indices, seed=...) -> nn.Module"
        raise ParameterError(expected("retrain", what, retrain))
    out = np.empty((idx.shape[0], q.shape[0]))
    for j in progress(range(idx.shape[0]), total=idx.shape[0], desc="LDS retraining",
                      unit="model", enabled=progress_bar):
        wanted = {"subset_digest": _digest(idx[j]), "queries_digest": _digest(q.numpy()),
                  "target": loss_name(target), "runs": runs, "seed": seed + j * runs}
        cached = _read_cached(cache_dir, j, wanted, q.shape[0])
        if cached is not None:
            out[j] = cached
            continue
        acc = np.zeros(q.shape[0])
        for r in range(runs):
            model = retrain(idx[j].copy(), seed=seed + j * runs + r)
            acc += query_log_probs(model, q, target=target, batch_size=batch_size)
        out[j] = acc / runs
        _write_cached(cache_dir, j, wanted, out[j])
    return out


def _digest(arr: np.ndarray) -> str:
    import hashlib

    a = np.ascontiguousarray(arr)
    head = str(a.shape).encode() + str(a.dtype).encode()
    return hashlib.sha256(head + a.tobytes()).hexdigest()[:16]


def _read_cached(cache_dir: Any, j: int, wanted: dict[str, Any], n: int) -> np.ndarray | None:
    if cache_dir is None:
        return None
    from aria_tda.manifest import diff_manifest, read_manifest

    path = Path(cache_dir) / f"subset_{j:03d}.npy"
    stored = read_manifest(path) if path.is_file() else None
    if stored is None or diff_manifest(stored, wanted):
        return None
    arr = np.load(path)
    return arr if arr.shape == (n,) else None


def _write_cached(cache_dir: Any, j: int, wanted: dict[str, Any], values: np.ndarray) -> None:
    if cache_dir is None:
        return
    from aria_tda._io import atomic_path
    from aria_tda.manifest import make_manifest, write_manifest

    path = Path(cache_dir) / f"subset_{j:03d}.npy"
    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        np.save(fh, values)
    write_manifest(path, make_manifest("lds-outputs", **wanted))
