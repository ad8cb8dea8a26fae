"""Numba kernels of aria_tda._simkernels not covered through aria_tda.similarity."""

from __future__ import annotations

import numpy as np

from aria_tda import _simkernels


def test_kernel_topk_insert_matches_sort(rng):
    ke, n_top = 30, 7
    emat = rng.standard_normal((ke, ke))
    oi, oj, ov = np.empty(n_top, np.int64), np.empty(n_top, np.int64), np.empty(n_top)
    _simkernels.topk_insert(emat, ke, n_top, oi, oj, ov)
    il = np.tril_indices(ke, -1)
    np.testing.assert_array_equal(ov, np.sort(emat[il])[::-1][:n_top])
    np.testing.assert_array_equal(emat[oj, oi], ov)
    assert np.all(oi < oj)
