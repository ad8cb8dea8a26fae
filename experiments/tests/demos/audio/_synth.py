"""Synthetic tokenized tracks for the stage tests: random ids with the tokenizer's fields."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from aria_tda_experiments.audio.stages import StageSpec

#: A tiny spec: 2 frames/s, so a 30 s track has 60 frames (semantic 20, coarse 8, fine 4).
TINY = StageSpec(semantic_k=8, rvq_codebook=4, rvq_levels=4, coarse_levels=2, cond_codebooks=2,
                 cond_codebook=3, frame_hz=2.0)


@dataclass(frozen=True)
class FakeTokens:
    """Stands in for aria_tda_experiments.audio.tokenizers.TrackTokens (same fields)."""

    semantic: np.ndarray
    acoustic: np.ndarray
    cond: np.ndarray


def fake_tracks(
    n: int, *, seconds: float = 30.0, spec: StageSpec = TINY, seed: int = 0, prefix: str = "w"
) -> dict[str, FakeTokens]:
    """``n`` random tracks ``"<prefix><i>~v0"`` of ``seconds`` each."""
    rng = np.random.default_rng(seed)
    frames = int(seconds * spec.frame_hz)
    return {
        f"{prefix}{i}~v0": FakeTokens(
            semantic=rng.integers(0, spec.semantic_k, frames),
            acoustic=rng.integers(0, spec.rvq_codebook, (frames, spec.rvq_levels)),
            cond=rng.integers(0, spec.cond_codebook, spec.cond_codebooks),
        )
        for i in range(n)
    }
