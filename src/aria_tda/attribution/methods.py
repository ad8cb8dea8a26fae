r"""The six attribution methods of the paper through dattri 0.3.0 (deprecated import path).

The methods now live one family per module, with a registry; this module re-exports them from
their old path:

============  ==========================================  ===================================
method        module                                      checkpoints (registry kind)
============  ==========================================  ===================================
TRAK          :mod:`aria_tda.attribution.trak_ensemble`       E independently trained models
                                                          (``ensemble``)
TracIn        :mod:`aria_tda.attribution.gradient_similarity` C checkpoints of one run and their
                                                          learning rates (``trajectory``)
GradDot       :mod:`aria_tda.attribution.gradient_similarity` the final model (``final``)
GradCos       :mod:`aria_tda.attribution.gradient_similarity` the final model (``final``)
LoGra         :mod:`aria_tda.attribution.block_projected`     the final model (``final``)
FactGraSS     :mod:`aria_tda.attribution.block_projected`     the final model (``final``)
============  ==========================================  ===================================

:mod:`aria_tda.attribution.registry` holds :data:`~aria_tda.attribution.registry.REGISTRY`,
:func:`~aria_tda.attribution.registry.run_method` and
:func:`~aria_tda.attribution.registry.run_methods`; :mod:`aria_tda.attribution.base` the shared
:class:`~aria_tda.attribution.base.AttributionResult` and arguments base classes. Import from
:mod:`aria_tda.attribution` instead.
"""

from __future__ import annotations

from aria_tda.attribution._threads import pinned_threads as _threads  # noqa: F401
from aria_tda.attribution.base import ENGINES, PROJ_TYPES, AttributionResult
from aria_tda.attribution.base import prepare_inputs as _prepare  # noqa: F401
from aria_tda.attribution.base import scores_to_numpy as _to_numpy  # noqa: F401
from aria_tda.attribution.block_projected import (
    FactGraSSArgs,
    LoGraArgs,
    TargetLossModel,
    _block_projected,  # noqa: F401
    factgrass,
    logra,
)
from aria_tda.attribution.gradient_similarity import (
    GradientArgs,
    grad_similarities,
    gradcos,
    graddot,
    tracin,
)
from aria_tda.attribution.registry import DEFAULTS, METHODS, REGISTRY, run_method, run_methods
from aria_tda.attribution.trak_ensemble import (
    TrakAccumulator,
    TrakArgs,
    check_trak_lam,
    trak,
    trak_features,
)

__all__ = [
    "DEFAULTS",
    "ENGINES",
    "METHODS",
    "PROJ_TYPES",
    "REGISTRY",
    "AttributionResult",
    "FactGraSSArgs",
    "GradientArgs",
    "LoGraArgs",
    "TargetLossModel",
    "TrakAccumulator",
    "TrakArgs",
    "check_trak_lam",
    "factgrass",
    "grad_similarities",
    "gradcos",
    "graddot",
    "logra",
    "run_method",
    "run_methods",
    "tracin",
    "trak",
    "trak_features",
]
