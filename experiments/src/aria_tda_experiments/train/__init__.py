r"""Deterministic training of the benchmark model, subset retraining (LDS) and ensembles (TRAK).

Modules: :mod:`~aria_tda_experiments.train.config` (settings, schedule, :class:`TrainedModel`),
:mod:`~aria_tda_experiments.train.loop` (:func:`train_model`, :func:`evaluate_losses`),
:mod:`~aria_tda_experiments.train.checkpoints` (the model directory: save, load) and
:mod:`~aria_tda_experiments.train.ensembles` (:func:`retrain_subsets`, :func:`train_ensemble`).
Every name is importable from ``aria_tda_experiments.train``, as before the split;
``sample_subsets`` and ``torch_threads`` live in :mod:`aria_tda.attribution` and are re-exported
here.

Conventions
-----------
- Training data: an int64 array ``segments`` ``(N, L)`` of token windows; row ``i`` is training
  example ``i`` everywhere in ARIA (score-matrix row ``i``).
- Objective: :func:`aria_tda.attribution.losses.sequence_loss` (mean next-token CE over the window),
  averaged over the batch; with ``TrainConfig(target_start=s)``
  :class:`~aria_tda.attribution.losses.ContinuationLoss` ``(s)`` (tokens ``s ..`` only) instead.
  AdamW, linear warm-up then cosine decay to ``min_lr_frac * lr``, gradient-norm clipping.
  Weight decay only on ``nn.Linear`` weights.
- An *epoch* visits every selected example once in an order drawn from the seed; the last
  batch of an epoch may be smaller. ``steps = epochs * ceil(n / batch_size)``, so a model
  retrained on a 50 % subset takes half the steps of the full model (same epochs, as in
  dattri's retraining).
- Determinism: the same ``(segments, indices, configs, seed, num_threads)`` give bitwise-equal
  weights. Initialisation and data order use private generators derived from ``seed`` (the
  global RNG is untouched); torch's intra-op thread count is pinned to ``num_threads`` during
  training and restored afterwards.
- Checkpoints: ``n_checkpoints`` evenly spaced steps, the last one the final model; each stores
  the learning rate of the optimisation step that produced it (TracIn's :math:`\eta_i`).

On-disk layout of a trained model (``out_dir``, written atomically)::

    out_dir/
      aria-manifest.json   kind "aria_tda_experiments.model": configs, seed, n_train, indices
      digest,
                           checkpoints [{step, lr, file}], final loss, seconds
      model.pt             final weights (state_dict)
      ckpt-000123.pt       one state_dict per checkpoint (the last equals model.pt)
      indices.npy          training rows used (int64, sorted)
      losses.npy           training loss per step (float64)
"""

from __future__ import annotations

from aria_tda.attribution.subsets import sample_subsets
from aria_tda.attribution.threads import torch_threads
from aria_tda_experiments.train.checkpoints import (
    MODEL_KIND,
    load_model,
    load_trained,
    save_trained,
)
from aria_tda_experiments.train.config import (
    SCHEDULES,
    Checkpoint,
    TrainConfig,
    TrainedModel,
    checkpoint_steps,
    lr_at,
)
from aria_tda_experiments.train.ensembles import SubsetRetrains, retrain_subsets, train_ensemble
from aria_tda_experiments.train.loop import evaluate_losses, train_model

__all__ = [
    "MODEL_KIND",
    "SCHEDULES",
    "Checkpoint",
    "SubsetRetrains",
    "TrainConfig",
    "TrainedModel",
    "checkpoint_steps",
    "evaluate_losses",
    "load_model",
    "load_trained",
    "lr_at",
    "retrain_subsets",
    "sample_subsets",
    "save_trained",
    "torch_threads",
    "train_ensemble",
    "train_model",
]
