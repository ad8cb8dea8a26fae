"""Reference twins of the listening room's evidence kernels (:mod:`aria_tda.media.kernels`).

Collected through ``tests/media/_twins.py`` (which appends :data:`TWINS` to its own list) by
tests/common/test_reference_twins.py.
"""

from __future__ import annotations

import numpy as np

from aria_tda.media.kernels import (
    lcs_root_motion,
    lcs_root_motion_reference,
    melodic_interval_histogram,
    melodic_interval_histogram_reference,
    pitch_class_profile,
    pitch_class_profile_reference,
    pitch_grid,
    pitch_grid_reference,
    polyphony_curve,
    polyphony_curve_reference,
    rms_db_curve,
    rms_db_curve_reference,
)
from twinlib import Twin


def _notes(rng):
    """Notes on a 10-ms grid (ties, zero-length notes, notes outside the range, repeats)."""
    n = int(rng.integers(0, 40))
    start = np.round(rng.uniform(-0.5, 5.0, n), 2)
    end = start + np.round(rng.exponential(0.4, n), 2) * (rng.random(n) > 0.1)
    pitch = rng.integers(48, 60 + 12, n)
    return (pitch, start, end), {"t_range": (0.25, 4.5), "fps": float(rng.choice([20.0, 50.0]))}


def _shuffle_notes(rng, args, kwargs):
    order = rng.permutation(len(args[0]))
    return tuple(a[order] for a in args), kwargs, lambda result: result


def _onsets(rng):
    n = int(rng.integers(0, 50))
    start = np.round(rng.uniform(0.0, 6.0, n) / 0.25) * 0.25  # many equal onsets (chords)
    pitch = rng.integers(36, 96, n)
    return (pitch, start), {"max_interval": int(rng.choice([5, 12]))}


def _shuffle_onsets(rng, args, kwargs):
    order = rng.permutation(len(args[0]))
    return (args[0][order], args[1][order]), kwargs, lambda result: result


def _profile(rng):
    (pitch, start, end), _ = _notes(rng)
    return (pitch, start, end), {"t_range": (0.25, 4.5)}


def _motions(rng):
    a = rng.integers(1, 5, int(rng.integers(0, 14)))  # few symbols: many ties in the table
    b = rng.integers(1, 5, int(rng.integers(0, 14)))
    return (a, b), {}


def _audio(rng):
    n = int(rng.integers(100, 3000))  # sometimes shorter than one frame
    y = rng.normal(0.0, 0.1, n) * (rng.random(n) > 0.3)
    return (y,), {"frame_length": 256, "hop_length": int(rng.choice([64, 100]))}


TWINS = [
    Twin("media_pitch_grid", pitch_grid, pitch_grid_reference, _notes, permute=_shuffle_notes),
    Twin(
        "media_polyphony_curve",
        polyphony_curve,
        polyphony_curve_reference,
        _notes,
        permute=_shuffle_notes,
    ),
    Twin(
        "media_melodic_interval_histogram",
        melodic_interval_histogram,
        melodic_interval_histogram_reference,
        _onsets,
        permute=_shuffle_onsets,
    ),
    Twin(
        "media_pitch_class_profile",
        pitch_class_profile,
        pitch_class_profile_reference,
        _profile,
        permute=_shuffle_notes,
    ),
    Twin("media_lcs_root_motion", lcs_root_motion, lcs_root_motion_reference, _motions),
    Twin("media_rms_db_curve", rms_db_curve, rms_db_curve_reference, _audio),
]
