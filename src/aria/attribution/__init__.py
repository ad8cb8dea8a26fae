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
- Every score matrix is written with :func:`save_attribution` (``aria.scores`` format plus a
  manifest with method, parameters and seed).

Example
-------
>>> from aria.attribution import trak, lds, sample_subsets          # doctest: +SKIP
>>> res = trak(model, ensemble_ckpts, train_windows, query_windows,   # doctest: +SKIP
...            proj_dim=512, lam=0.01)
>>> res.scores.shape                                                  # doctest: +SKIP
(n_train, n_test)

Modules
-------
:mod:`~aria.attribution.task` (the interface, losses, dattri task with per-tensor gradients),
:mod:`~aria.attribution.methods` (TRAK, TracIn, GradDot, GradCos, LoGra, FactGraSS),
:mod:`~aria.attribution.lds` (linear datamodeling score), :mod:`~aria.attribution.sweep`
(TRAK projection-dim × λ sensitivity), :mod:`~aria.attribution.storage`.
"""

from __future__ import annotations

from aria.attribution.lds import (
    LDSResult,
    lds,
    lds_reference,
    model_outputs,
    retrain_outputs,
    sample_subsets,
)
from aria.attribution.methods import (
    DEFAULTS,
    METHODS,
    AttributionResult,
    factgrass,
    grad_similarities,
    gradcos,
    graddot,
    logra,
    run_method,
    run_methods,
    tracin,
    trak,
)
from aria.attribution.storage import load_attribution, save_attribution
from aria.attribution.task import LOSS_KINDS, query_log_probs

__all__ = [
    "DEFAULTS",
    "LOSS_KINDS",
    "METHODS",
    "AttributionResult",
    "LDSResult",
    "factgrass",
    "grad_similarities",
    "gradcos",
    "graddot",
    "lds",
    "lds_reference",
    "load_attribution",
    "logra",
    "model_outputs",
    "query_log_probs",
    "retrain_outputs",
    "run_method",
    "run_methods",
    "sample_subsets",
    "save_attribution",
    "tracin",
    "trak",
]
