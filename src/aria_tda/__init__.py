"""ARIA — Attribution Result Interpretation and Analysis for music training-data attribution.

ARIA reads a training-data-attribution score matrix (training segments × queries) and says
whether it can be trusted (reliability diagnostics κ, r₁, r₂:₅, p) and along which musical
aspects its top-K attributed tracks cohere (within-group homogeneity per evidence channel).

The main entry points are importable from the top level (loaded on first use)::

    import aria_tda
    d = aria_tda.diagnose("scores.npy")                      # κ, r_i, p, v1 — one streaming pass
    d.verdict                                                # ok / suspect / collapsed, and why
    s_track = aria_tda.aggregate("scores.npy", segments="segments.csv", normalize="auto",
                             out="s_track.npy")
    aria_tda.run_study("study.toml")                         # every analysis + report
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from aria_tda._lazy import lazy_exports

#: Public name -> module that defines it (imported lazily so ``import aria_tda`` stays fast;
#: the version too: it is read from the installed package's metadata).
_LAZY = {
    "__version__": "aria_tda._version",
    "diagnose": "aria_tda.diagnostics",
    "DiagnoseArgs": "aria_tda.diagnostics",
    "Diagnostics": "aria_tda.diagnostics",
    "open_scores": "aria_tda.scores",
    "save_scores": "aria_tda.scores",
    "as_source": "aria_tda.scores",
    "normalize": "aria_tda.scores",
    "aggregate": "aria_tda.scores",
    "rank1": "aria_tda.scores",
    "residual": "aria_tda.scores",
    "FeatureStore": "aria_tda.features.store",
    "write_store": "aria_tda.features.store",
    "prepare_channels": "aria_tda.similarity",
    "top_k_groups": "aria_tda.homogeneity",
    "null_distribution": "aria_tda.homogeneity",
    "run_homogeneity": "aria_tda.homogeneity",
    "classify": "aria_tda.verdict",
    "channel_alignment": "aria_tda.alignment",
    "stratify": "aria_tda.confound",
    "load_study": "aria_tda.study.studyfile",
    "run_study": "aria_tda.study",
    "write_report": "aria_tda.report",
    "load_encoder": "aria_tda.embed.encoders.registry",
    "embed_to_store": "aria_tda.embed.pipeline",
    "retrieve": "aria_tda.embed.retrieval",
}

__all__ = ["__version__", *sorted(set(_LAZY) - {"__version__"})]

if TYPE_CHECKING:  # typed re-exports for mypy and IDEs; at run time they load on first use
    from aria_tda._version import __version__
    from aria_tda.alignment import channel_alignment
    from aria_tda.confound import stratify
    from aria_tda.diagnostics import DiagnoseArgs, Diagnostics, diagnose
    from aria_tda.embed.encoders.registry import load_encoder
    from aria_tda.embed.pipeline import embed_to_store
    from aria_tda.embed.retrieval import retrieve
    from aria_tda.features.store import FeatureStore, write_store
    from aria_tda.homogeneity import null_distribution, run_homogeneity, top_k_groups
    from aria_tda.report import write_report
    from aria_tda.scores import (
        aggregate,
        as_source,
        normalize,
        open_scores,
        rank1,
        residual,
        save_scores,
    )
    from aria_tda.similarity import prepare_channels
    from aria_tda.study import run_study
    from aria_tda.study.studyfile import load_study
    from aria_tda.verdict import classify


__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
