r"""Training-data attribution for token models, through dattri 0.3.0, plus LDS validation.

What your model needs
---------------------
An :class:`torch.nn.Module` mapping int64 tokens ``(B, L)`` to next-token logits
``(B, L, V)`` (batch first, causal; ``logits[:, t]`` predicts token ``t + 1``), written in
plain tensor code so ``torch.func.functional_call`` + ``vmap`` + ``grad`` can trace it (no
in-place ops on inputs, no data-dependent Python branches, dropout off in ``eval()``).
LoGra and FactGraSS see only its :class:`torch.nn.Linear` layers. Training segments and
queries are int64 windows ``(N, L)``. Checkpoints are state dicts or ``torch.save``-d files.

Which quantity is attributed: per-sample losses named ``"sequence"`` (mean next-token
cross-entropy over the window; the training objective) and ``"last_token"`` (cross-entropy of
the last token; dattri's MAESTRO target), or any callable ``f(model, tokens) -> (B,)``.
``loss`` is used for training windows, ``target`` for queries; the LDS ground truth is the
query's log-probability :math:`-\ell_{target}(q)` under each retrained model.

Conventions
-----------
- Score matrices are ``(n_train, n_test)`` float32; **higher = more influential = training
  on the segment lowers the query's loss**. LDS is positive for a method that gets this right.
- Every score matrix is written with :func:`save_attribution` (``aria_tda.scores`` format plus a
  manifest with method, parameters and seed).

Example
-------
>>> from aria_tda.attribution import TrakArgs, trak, lds, sample_subsets  # doctest: +SKIP
>>> res = trak(model, ensemble_ckpts, train_windows, query_windows,     # doctest: +SKIP
...            args=TrakArgs(proj_dim=512, lam=0.01))
>>> res.scores.shape                                                  # doctest: +SKIP
(n_train, n_test)

Modules
-------
:mod:`~aria_tda.attribution.task` (the interface, dattri task with per-tensor gradients),
:mod:`~aria_tda.attribution.losses` (the per-sample losses), :mod:`~aria_tda.attribution.subsets`
(LDS subsets), one module per method family — :mod:`~aria_tda.attribution.trak_ensemble` (TRAK),
:mod:`~aria_tda.attribution.gradient_similarity` (TracIn, GradDot, GradCos),
:mod:`~aria_tda.attribution.block_projected` (LoGra, FactGraSS) — each with a frozen arguments
dataclass that declares its options once and that its functions take as ``args``,
:mod:`~aria_tda.attribution.registry` (which method needs which checkpoints; :func:`run_methods`),
:mod:`~aria_tda.attribution.lds` (linear datamodeling score),
:mod:`~aria_tda.attribution.sanity` (model-randomisation test and gradient-norm bias of the
methods, stored in the score file's manifest; their statistics in
:mod:`~aria_tda.attribution.sanity_stats`), :mod:`~aria_tda.attribution.storage`. The TRAK
sensitivity grid is an experiment and lives in the experiments package
(``aria_tda_experiments.sensitivity``); the library never imports it.
"""

from __future__ import annotations

from aria_tda.attribution.base import AttributionResult
from aria_tda.attribution.block_projected import FactGraSSArgs, LoGraArgs, factgrass, logra
from aria_tda.attribution.gradient_similarity import (
    GradientArgs,
    grad_similarities,
    gradcos,
    graddot,
    tracin,
)
from aria_tda.attribution.lds import (
    LDSResult,
    lds,
    model_outputs,
    retrain_outputs,
)
from aria_tda.attribution.lds import lds_reference as lds_reference
from aria_tda.attribution.losses import LOSS_KINDS
from aria_tda.attribution.registry import (
    DEFAULTS,
    METHODS,
    REGISTRY,
    run_method,
    run_methods,
)
from aria_tda.attribution.sanity import (
    gradient_norm_bias,
    model_randomization,
    read_sanity,
    sanity_checks,
)
from aria_tda.attribution.sanity_stats import BiasResult, RandomizationResult, SanityArgs
from aria_tda.attribution.storage import load_attribution, save_attribution
from aria_tda.attribution.subsets import sample_subsets
from aria_tda.attribution.task import query_log_probs
from aria_tda.attribution.trak_ensemble import TrakArgs, trak

__all__ = [
    "DEFAULTS",
    "LOSS_KINDS",
    "METHODS",
    "REGISTRY",
    "AttributionResult",
    "BiasResult",
    "FactGraSSArgs",
    "GradientArgs",
    "LDSResult",
    "LoGraArgs",
    "RandomizationResult",
    "SanityArgs",
    "TrakArgs",
    "factgrass",
    "grad_similarities",
    "gradcos",
    "graddot",
    "gradient_norm_bias",
    "lds",
    "load_attribution",
    "logra",
    "model_outputs",
    "model_randomization",
    "query_log_probs",
    "read_sanity",
    "retrain_outputs",
    "run_method",
    "run_methods",
    "sample_subsets",
    "sanity_checks",
    "save_attribution",
    "tracin",
    "trak",
]
