"""Reference twins of the planted experiment's scoring: recall@k, average precision and the
bootstrap mean interval (:mod:`aria_tda_experiments.planted.analysis`, ``.effects``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from aria_tda_experiments.planted.analysis import (
    average_precision,
    average_precision_reference,
    recall_at_k,
    recall_at_k_reference,
)
from aria_tda_experiments.planted.effects import (
    mean_difference_interval,
    mean_difference_interval_reference,
    mean_interval,
    mean_interval_reference,
)
from twinlib import Twin


def _scores(rng: np.random.Generator) -> np.ndarray:
    n, t = int(rng.integers(5, 40)), int(rng.integers(1, 6))
    s = rng.standard_normal((n, t))
    s[rng.random((n, t)) < 0.2] = 0.0  # ties
    s[rng.random((n, t)) < 0.05] = np.nan  # NaN ranks last
    return s


def _recall_inputs(rng: np.random.Generator) -> tuple[tuple[Any, ...], dict[str, Any]]:
    s = _scores(rng)
    marked = np.sort(rng.choice(s.shape[0], int(rng.integers(1, s.shape[0] // 2 + 1)),
                                replace=False))
    return (s, marked, int(rng.integers(1, s.shape[0] + 1))), {}


def _ap_inputs(rng: np.random.Generator) -> tuple[tuple[Any, ...], dict[str, Any]]:
    (s, marked, _), kw = _recall_inputs(rng)
    return (s, marked), kw


def _interval_inputs(rng: np.random.Generator) -> tuple[tuple[Any, ...], dict[str, Any]]:
    v = rng.standard_normal(int(rng.integers(1, 30)))
    return (v,), {"n_boot": int(rng.integers(0, 60)), "seed": int(rng.integers(0, 9))}


def _difference_inputs(rng: np.random.Generator) -> tuple[tuple[Any, ...], dict[str, Any]]:
    (v,), kw = _interval_inputs(rng)
    return (v, rng.standard_normal(int(rng.integers(1, 20))) + 0.5), kw


TWINS = [
    Twin(name="planted.recall_at_k", fast=recall_at_k, reference=recall_at_k_reference,
         make=_recall_inputs),
    Twin(name="planted.average_precision", fast=average_precision,
         reference=average_precision_reference, make=_ap_inputs),
    Twin(name="planted.mean_interval", fast=mean_interval, reference=mean_interval_reference,
         make=_interval_inputs),
    Twin(name="planted.mean_difference_interval", fast=mean_difference_interval,
         reference=mean_difference_interval_reference, make=_difference_inputs),
]
