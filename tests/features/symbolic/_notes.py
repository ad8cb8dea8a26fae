"""Shared helpers of the symbolic-feature tests: note arrays, random notes, dict comparison."""

from __future__ import annotations

import numpy as np

from aria_tda.features.midi import NoteArray


def arr(*rows):
    """Notes as an (n, 4) array of start, end, pitch, velocity (seconds)."""
    return np.array(rows, dtype=np.float64).reshape(-1, 4)


def random_notes(rng, n, span=8.0, *, tracks=2, drums=True, grid=0.01, channels=(0, 1)):
    start = np.round(rng.uniform(-1.0, span, n) / grid) * grid
    start = np.maximum(start, 0.0)
    dur = np.round(rng.exponential(0.5, n) / grid) * grid
    dur[rng.random(n) < 0.05] = 0.0  # a few zero-length notes
    channels = [*channels, 9] if drums else list(channels)
    return NoteArray.from_arrays(
        start=start,
        end=start + dur,
        pitch=rng.integers(48, 84, n),
        velocity=rng.integers(1, 128, n),
        loudness=rng.integers(1, 128, n),
        channel=rng.choice(channels, n),
        track=rng.integers(0, tracks, n),
    )


def assert_same(a, b, rtol=1e-12, atol=1e-12):
    assert list(a) == list(b)
    for k in a:
        np.testing.assert_allclose(a[k], b[k], rtol=rtol, atol=atol, err_msg=k)
