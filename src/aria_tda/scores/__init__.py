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

from typing import TYPE_CHECKING

from aria_tda._lazy import lazy_exports

#: Public name -> the module that defines it, imported on first use: reading a small matrix
#: does not load the aggregation, normalisation or writer modules (nor what they import).
_LAZY = {
    "NORMALIZATIONS": "aria_tda.scores.normalization",
    "ArraySource": "aria_tda.scores.source",
    "BlockStats": "aria_tda.scores.blockstats",
    "Rank1": "aria_tda.scores.lowrank",
    "ResidualSource": "aria_tda.scores.lowrank",
    "ScoreSource": "aria_tda.scores.source",
    "ScoreWriter": "aria_tda.scores.writers",
    "aggregate": "aria_tda.scores.aggregation",
    "as_source": "aria_tda.scores.readers",
    "block_stats": "aria_tda.scores.stats",
    "choose_normalization": "aria_tda.scores.normalization",
    "column_moments": "aria_tda.scores.normalization",
    "normalize": "aria_tda.scores.normalization",
    "open_scores": "aria_tda.scores.readers",
    "rank1": "aria_tda.scores.lowrank",
    "residual": "aria_tda.scores.lowrank",
    "save_scores": "aria_tda.scores.writers",
    "segment_codes": "aria_tda.scores.segment_map",
    "stream_matvec": "aria_tda.scores.stats",
    "stream_stats": "aria_tda.scores.stats",
}

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

if TYPE_CHECKING:  # typed re-exports for mypy and IDEs; at run time they load on first use
    from aria_tda.scores.aggregation import aggregate
    from aria_tda.scores.blockstats import BlockStats
    from aria_tda.scores.lowrank import Rank1, ResidualSource, rank1, residual
    from aria_tda.scores.normalization import (
        NORMALIZATIONS,
        choose_normalization,
        column_moments,
        normalize,
    )
    from aria_tda.scores.readers import as_source, open_scores
    from aria_tda.scores.segment_map import segment_codes
    from aria_tda.scores.source import ArraySource, ScoreSource
    from aria_tda.scores.stats import block_stats, stream_matvec, stream_stats
    from aria_tda.scores.writers import ScoreWriter, save_scores


__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
