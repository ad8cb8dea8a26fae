"""Reference twins of the media kernels (collected by tests/common/test_reference_twins.py)."""

from __future__ import annotations

import numpy as np

from aria_tda.media.clips import integrated_loudness, integrated_loudness_reference
from twinlib import Twin


def _programme(rng):
    """A short mono or stereo programme with a loud part, a quiet part (gated away by the
    relative gate) and a silent stretch (gated away by the absolute gate)."""
    sr = int(rng.choice([8000, 11025, 16000]))
    n = int(sr * rng.uniform(1.2, 2.4))
    channels = int(rng.integers(1, 3))
    t = np.arange(n) / sr
    y = rng.normal(0.0, 0.1, (channels, n)) + 0.3 * np.sin(2 * np.pi * rng.uniform(80, 3000) * t)
    y[:, n // 3 : n // 2] *= 0.01  # quiet: below the relative gate
    y[:, n // 2 : n // 2 + sr // 2] = 0.0  # silent: below the absolute gate
    return ((y[0] if channels == 1 else y), sr), {}


TWINS = [
    Twin("integrated_loudness", integrated_loudness, integrated_loudness_reference, _programme),
]


# ---- H2's block (issue 27: the evidence kernels of aria_tda.media.kernels) -------------------
# Registered in tests/media/_twins_aspects.py; appended here because the common twin test reads
# only files named _twins.py.
from media._twins_aspects import TWINS as _EVIDENCE_TWINS  # noqa: E402

TWINS += _EVIDENCE_TWINS

# ---- the audio reasons' kernels (issue 39: aria_tda.media.reasons_audio) -------------------
from media.test_reasons_audio import TWINS as _REASONS_AUDIO_TWINS  # noqa: E402

TWINS += _REASONS_AUDIO_TWINS


# ---- the aligned views' and notation's kernels (issue 39) ----------------------------------
from aria_tda.media.draw_aligned import grid_marks, grid_marks_reference  # noqa: E402
from aria_tda.media.notation import (  # noqa: E402
    assign_staves,
    assign_staves_reference,
    quantise_onsets,
    quantise_onsets_reference,
)


def _grid_inputs(rng):
    period = float(rng.uniform(0.3, 0.8))
    beats = np.cumsum(rng.uniform(0.9, 1.1, 40) * period)
    per_bar = int(rng.choice([3, 4]))
    return (beats, beats[::per_bar]), {"start": float(beats[3] + 0.1),
                                       "duration": float(6 * period), "first_bar": 2}


def _onset_inputs(rng):
    beats = np.cumsum(rng.uniform(0.45, 0.55, 24))
    times = np.sort(rng.uniform(beats[0], beats[-1], 30))
    return (times, beats), {"steps_per_beat": int(rng.choice([2, 4]))}


def _pitch_inputs(rng):
    return (rng.integers(21, 109, 50),), {"split": int(rng.integers(55, 66))}


TWINS += [
    Twin("media.grid_marks", grid_marks, grid_marks_reference, _grid_inputs),
    Twin("media.quantise_onsets", quantise_onsets, quantise_onsets_reference, _onset_inputs),
    Twin("media.assign_staves", assign_staves, assign_staves_reference, _pitch_inputs),
]

# ---- music theory's kernels (issue 39: aria_tda.media.theory) ------------------------------
from media.test_theory import TWINS as _THEORY_TWINS  # noqa: E402

TWINS += _THEORY_TWINS
