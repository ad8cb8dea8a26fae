"""ARIA — Attribution Result Interpretation and Analysis for music training-data attribution.

ARIA reads a training-data-attribution score matrix (training segments × queries) and says
whether it can be trusted (reliability diagnostics κ, r₁, r₂:₅, p) and along which musical
aspects its top-K attributed tracks cohere (within-group homogeneity per evidence channel).
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("aria-tda")
except PackageNotFoundError:  # pragma: no cover - running from a bare source tree
    __version__ = "0+unknown"

__all__ = ["__version__"]
