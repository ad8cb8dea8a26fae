"""Random training subsets for the linear datamodeling score (LDS).

The same draw serves the LDS evaluation (:mod:`aria_tda.attribution.lds`) and the benchmark's
subset retraining (:func:`aria_tda_experiments.train.retrain_subsets`, which re-exports
:func:`sample_subsets` from its old path ``aria_tda_experiments.train``).
"""

from __future__ import annotations

import numpy as np

from aria_tda._checks import check_float, check_int

__all__ = ["sample_subsets"]


def sample_subsets(
    n_train: int, *, n_subsets: int = 32, fraction: float = 0.5, seed: int = 0
) -> np.ndarray:
    """Random training subsets for LDS: ``(n_subsets, round(fraction * n_train))`` sorted rows.

    Row ``j`` is drawn without replacement by ``numpy.random.default_rng([seed, j])``, so a
    subset does not change when ``n_subsets`` grows.

    Parameters
    ----------
    n_train : int, >= 2
        Number of training windows (rows of the score matrix).
    n_subsets : int, >= 1
        Number of subsets (>= 32 recommended for LDS).
    fraction : float in (0, 1)
        Subset size as a fraction of ``n_train`` (kept within ``[1, n_train - 1]``).
    seed : int, >= 0
        Seeds every row's draw.

    Returns
    -------
    np.ndarray [shape=(n_subsets, size)], int64
        Sorted training rows of each subset.
    """
    n_train = check_int("n_train", n_train, min_value=2)
    n_subsets = check_int("n_subsets", n_subsets, min_value=1)
    fraction = check_float("fraction", fraction, min_value=0.0, max_value=1.0,
                           min_inclusive=False, max_inclusive=False)
    size = max(1, min(n_train - 1, round(fraction * n_train)))
    out = np.empty((n_subsets, size), dtype=np.int64)
    for j in range(n_subsets):
        out[j] = np.sort(np.random.default_rng([check_int("seed", seed, min_value=0), j])
                         .choice(n_train, size=size, replace=False))
    return out
