"""ARIA — Attribution Result Interpretation and Analysis for music training-data attribution.

ARIA reads a training-data-attribution score matrix (training segments × queries) and says
whether it can be trusted (reliability diagnostics κ, r₁, r₂:₅, p) and along which musical
aspects its top-K attributed tracks cohere (within-group homogeneity per evidence channel).

The main entry points are importable from the top level (loaded on first use)::

    import aria
    d = aria.diagnose("scores.npy")                      # κ, r_i, p, v1 — one streaming pass
    s_track = aria.aggregate("scores.npy", segments="segments.csv", normalize="auto",
                             out="s_track.npy")
    aria.run_study("study.toml")                         # every analysis + report
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from aria._version import __version__

#: Public name -> module that defines it (imported lazily so ``import aria`` stays fast).
_LAZY = {
    "diagnose": "aria.diagnostics",
    "Diagnostics": "aria.diagnostics",
    "open_scores": "aria.scores",
    "save_scores": "aria.scores",
    "as_source": "aria.scores",
    "normalize": "aria.scores",
    "aggregate": "aria.scores",
    "rank1": "aria.scores",
    "residual": "aria.scores",
    "FeatureStore": "aria.features.store",
    "write_store": "aria.features.store",
    "prepare_channels": "aria.similarity",
    "top_k_groups": "aria.homogeneity",
    "null_distribution": "aria.homogeneity",
    "run_homogeneity": "aria.homogeneity",
    "classify": "aria.verdict",
    "channel_alignment": "aria.alignment",
    "stratify": "aria.confound",
    "load_study": "aria.study_config",
    "run_study": "aria.study",
    "write_report": "aria.report",
    "run_demo": "aria.bench.demo",
    "load_encoder": "aria.encoders",
    "embed_to_store": "aria.embed",
    "retrieve": "aria.embed",
}

__all__ = ["__version__", *sorted(_LAZY)]

if TYPE_CHECKING:  # typed re-exports for mypy and IDEs; at run time they load on first use
    from aria.alignment import channel_alignment
    from aria.bench.demo import run_demo
    from aria.confound import stratify
    from aria.diagnostics import Diagnostics, diagnose
    from aria.embed import embed_to_store, retrieve
    from aria.encoders import load_encoder
    from aria.features.store import FeatureStore, write_store
    from aria.homogeneity import null_distribution, run_homogeneity, top_k_groups
    from aria.report import write_report
    from aria.scores import (
        aggregate,
        as_source,
        normalize,
        open_scores,
        rank1,
        residual,
        save_scores,
    )
    from aria.similarity import prepare_channels
    from aria.study import run_study
    from aria.study_config import load_study
    from aria.verdict import classify


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'aria' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
