"""LDS subsets: random halves, seeded, prefix-stable; the same draw bench.train retrains on."""

from __future__ import annotations

import numpy as np

from aria_tda.attribution import sample_subsets


def test_sample_subsets_are_random_halves(rng):
    sub = sample_subsets(101, n_subsets=32, seed=4)
    assert sub.shape == (32, 50) and sub.dtype == np.int64
    for row in sub:
        assert len(set(row)) == 50 and np.all(np.diff(row) > 0) and row.max() < 101
    assert len({tuple(r) for r in sub}) == 32
    np.testing.assert_array_equal(sample_subsets(20, seed=3), sample_subsets(20, seed=3))


def test_bench_train_reexports_the_same_draw():
    from aria_tda_experiments import train

    assert train.sample_subsets is sample_subsets
