"""The row ranges of the Dask passes (:mod:`aria_tda.scores.distributed`); the task runner is
tested in ``test_distributed_aggregate.py``, the diagnostics' Dask kernels in
``tests/diagnostics/test_diagnose_dask.py``."""

from __future__ import annotations

import itertools

from aria_tda.scores.distributed import row_ranges


def test_row_ranges_cover_and_align():
    for n, parts, align in [(100, 3, 7), (5, 10, 2), (1, 1, 1), (1000, 8, 64)]:
        rr = row_ranges(n, parts, align)
        assert rr[0][0] == 0 and rr[-1][1] == n
        assert all(a < b for a, b in rr)
        assert all(b1 == a2 for (_, b1), (a2, _) in itertools.pairwise(rr))
        assert all(a % align == 0 for a, _ in rr)
        assert len(rr) <= parts
