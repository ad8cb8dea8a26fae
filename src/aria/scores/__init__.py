"""The score-matrix engine: readers and writers, streaming statistics, normalisation,
track aggregation and the rank-1 residual.

A score matrix ``S`` is ``(M, T)`` = ``(n_train_segments, n_queries)``, higher = more
influential. Everything here streams row blocks, so matrices larger than memory work the same
as small ones.
"""

from __future__ import annotations

from aria.scores.aggregation import aggregate, aggregate_exact, segment_codes
from aria.scores.lowrank import Rank1, ResidualSource, rank1, residual
from aria.scores.normalization import (
    NORMALIZATIONS,
    choose_normalization,
    column_moments,
    normalize,
    normalize_exact,
)
from aria.scores.readers import ArraySource, ScoreSource, as_source, open_scores
from aria.scores.stats import BlockStats, block_stats, stream_matvec, stream_stats
from aria.scores.writers import ScoreWriter, save_scores

__all__ = [
    "NORMALIZATIONS",
    "ArraySource",
    "BlockStats",
    "Rank1",
    "ResidualSource",
    "ScoreSource",
    "ScoreWriter",
    "aggregate",
    "aggregate_exact",
    "as_source",
    "block_stats",
    "choose_normalization",
    "column_moments",
    "normalize",
    "normalize_exact",
    "open_scores",
    "rank1",
    "residual",
    "save_scores",
    "segment_codes",
    "stream_matvec",
    "stream_stats",
]
