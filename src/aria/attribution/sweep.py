"""TRAK sensitivity sweep (deprecated import path): now :mod:`aria.bench.sweep`.

The sweep evaluates every cell with ARIA's homogeneity and reads the benchmark's folders, so it
is an experiment and lives beside the demo; its names are re-exported here from their old path.
"""

from __future__ import annotations

from aria.bench.sweep import (
    DEFAULT_LAMS,
    DEFAULT_PROJ_DIMS,
    SweepResult,
    run_sweep,
    trak_sensitivity,
    zbar_evaluator,
)

__all__ = [
    "DEFAULT_LAMS",
    "DEFAULT_PROJ_DIMS",
    "SweepResult",
    "run_sweep",
    "trak_sensitivity",
    "zbar_evaluator",
]
