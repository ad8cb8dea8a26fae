"""Reference twins of :mod:`aria_tda_experiments`: the relative-attention logits of the
MusicTransformer.

:func:`~aria_tda_experiments.model.relative_logits` (Huang et al.'s skewing trick, :func:`skew`)
against :func:`~aria_tda_experiments.model.relative_logits_reference` (the per-entry definition), on
float64 queries of several heads and a shared relative embedding.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from aria_tda_experiments.model import relative_logits, relative_logits_reference
from twinlib import Twin


def _relative_inputs(rng: np.random.Generator) -> tuple[tuple[Any, ...], dict[str, Any]]:
    length = int(rng.integers(1, 10))
    q = torch.from_numpy(rng.standard_normal((2, 3, length, 4)))
    e_r = torch.from_numpy(rng.standard_normal((length, 4)))
    return (q, e_r), {}


TWINS = [
    Twin(name="bench.relative_logits", fast=relative_logits, reference=relative_logits_reference,
         make=_relative_inputs),
]
