"""The score-matrix engine: readers and writers, streaming statistics, normalisation,
track aggregation and the rank-1 residual.

A score matrix ``S`` is ``(M, T)`` = ``(n_train_segments, n_queries)``, higher = more
influential. Everything here streams row blocks, so matrices larger than memory work the same
as small ones.

Where things live: :mod:`~aria_tda.scores.source` (the :class:`ScoreSource` interface, prefetch,
chunking, transposition), :mod:`~aria_tda.scores.formats` (one module per file format),
:mod:`~aria_tda.scores.readers` (:func:`open_scores`, :func:`as_source`),
:mod:`~aria_tda.scores.writers`, :mod:`~aria_tda.scores.blockstats` (the sums) and
:mod:`~aria_tda.scores.stats` (the streaming kernel), :mod:`~aria_tda.scores.distributed` (the
Dask task runner and row ranges), :mod:`~aria_tda.scores.distributed_aggregate`,
:mod:`~aria_tda.scores.lowrank`, :mod:`~aria_tda.scores.normalization`,
:mod:`~aria_tda.scores.aggregation`. Nothing here imports the analyses built on it
(:mod:`aria_tda.diagnostics` and above; the diagnostics' own passes live there).
"""

from __future__ import annotations

from aria_tda.scores.aggregation import aggregate, segment_codes
from aria_tda.scores.blockstats import BlockStats
from aria_tda.scores.lowrank import Rank1, ResidualSource, rank1, residual
from aria_tda.scores.normalization import (
    NORMALIZATIONS,
    choose_normalization,
    column_moments,
    normalize,
)
from aria_tda.scores.readers import as_source, open_scores
from aria_tda.scores.source import ArraySource, ScoreSource
from aria_tda.scores.stats import block_stats, stream_matvec, stream_stats
from aria_tda.scores.writers import ScoreWriter, save_scores

__all__ = [
    "NORMALIZATIONS",
    "ArraySource",
    "BlockStats",
    "Rank1",
    "ResidualSource",
    "ScoreSource",
    "ScoreWriter",
    "aggregate",
    "as_source",
    "block_stats",
    "choose_normalization",
    "column_moments",
    "normalize",
    "open_scores",
    "rank1",
    "residual",
    "save_scores",
    "segment_codes",
    "stream_matvec",
    "stream_stats",
]
