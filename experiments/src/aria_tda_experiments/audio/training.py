"""Stage models: their sizes and their deterministic training on the continuation loss.

One :class:`~aria_tda_experiments.model.MusicTransformer` per stage (vocabulary and ``max_len`` from
the stage's :class:`~aria_tda_experiments.audio.stages.StageLayout`), trained with
:mod:`aria_tda_experiments.train` (AdamW, linear warm-up, cosine decay, weight decay 0.01 on the
linear weights, checkpoints and their learning rates kept) on
:class:`~aria_tda.attribution.losses.ContinuationLoss` ``(target_start)``: the NLL of the stage's
own predicted part only (``TrainConfig.target_start``).
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Any

from aria_tda._checks import check_int
from aria_tda_experiments.audio.stages import StageData, StageLayout
from aria_tda_experiments.model import ModelConfig
from aria_tda_experiments.train import TrainConfig, TrainedModel, train_ensemble

__all__ = ["stage_model_config", "stage_train_configs", "train_stage"]


def stage_model_config(layout: StageLayout, **sizes: Any) -> ModelConfig:
    """The stage's :class:`ModelConfig`: its vocabulary and length, the given sizes.

    Defaults are the recommended CPU sizes: 2 layers, ``d_model=64``, 2 heads (about 1.8x
    faster to train than 4 at these lengths), ``d_ff=256``; ~0.15-0.21 M parameters.

    Parameters
    ----------
    layout : StageLayout
        Sets ``vocab_size`` and ``max_len``.
    **sizes : Any
        Other :class:`ModelConfig` fields.
    """
    base = {"d_model": 64, "n_layers": 2, "n_heads": 2, "d_ff": 256, **sizes}
    return ModelConfig(vocab_size=layout.vocab_size, max_len=layout.length, **base)


def stage_train_configs(
    data: StageData,
    model_config: ModelConfig | None = None,
    train_config: TrainConfig | None = None,
) -> tuple[ModelConfig, TrainConfig]:
    """The configs a stage model is trained with: sizes given, vocabulary/length/target set.

    Parameters
    ----------
    data : StageData
        The stage (its ``vocab_size``, length and ``target_start`` win over the configs').
    model_config : ModelConfig, optional
        Sizes (default :func:`stage_model_config`).
    train_config : TrainConfig, optional
        Optimisation (default ``TrainConfig()``).
    """
    cfg = model_config or stage_model_config(data.layout)
    cfg = replace(cfg, vocab_size=data.vocab_size, max_len=data.layout.length)
    return cfg, replace(train_config or TrainConfig(), target_start=data.target_start)


def train_stage(
    data: StageData,
    *,
    model_config: ModelConfig | None = None,
    train_config: TrainConfig | None = None,
    seed: int = 0,
    n_models: int = 1,
    out_dir: str | os.PathLike[str] | None = None,
    n_jobs: int = 1,
    progress_bar: bool | None = None,
) -> list[TrainedModel]:
    """Train the stage's model(s) on its continuation loss, deterministically.

    ``model_config`` gets the stage's ``vocab_size``/``max_len`` and ``train_config`` its
    ``target_start`` (:class:`~aria_tda.attribution.losses.ContinuationLoss`); AdamW with warm-up,
    cosine decay and weight decay as :mod:`aria_tda_experiments.train`. Member ``i`` uses
    ``seed + i`` (:func:`~aria_tda_experiments.train.train_ensemble`); member 0 is the stage's
    model.

    Parameters
    ----------
    data : StageData
        The stage's sequences.
    model_config : ModelConfig, optional
        Sizes (default :func:`stage_model_config`).
    train_config : TrainConfig, optional
        Optimisation (default ``TrainConfig()``).
    seed : int
        Seed of member 0.
    n_models : int
        Models (1 = the stage model; more = a TRAK ensemble).
    out_dir : path, optional
        Member ``i`` in ``out_dir/member-{i:02d}``; a finished member with the same settings is
        reused.
    n_jobs : int
        Models trained in parallel processes.
    progress_bar : bool, optional
        Force the progress bar on/off.
    """
    n_models = check_int("n_models", n_models, min_value=1)
    cfg, tcfg = stage_train_configs(data, model_config, train_config)
    return train_ensemble(data.tokens, n_models=n_models, seed=seed, model_config=cfg,
                          train_config=tcfg, out_dir=out_dir, n_jobs=n_jobs,
                          progress_bar=progress_bar)
