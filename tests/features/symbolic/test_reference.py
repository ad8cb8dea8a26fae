"""The vectorised batch path equals the loop reference on random segments."""

from __future__ import annotations

import pytest

from aria_tda.features.symbolic import (
    reference_features,
    symbolic_features_batch,
)

from ._notes import assert_same, random_notes

# --------------------------------------------------------------------------- batch == reference


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"form": "jsymbolic"},
        {
            "interval_overflow": "drop",
            "rotate_pitch_class": False,
            "d4_divisor": "notes",
            "fps": 37.0,
        },
        {"form": "jsymbolic", "d4_divisor": "changes", "tpq": 96, "qpm": 90.0},
    ],
)
def test_batch_equals_reference_on_random_segments(rng, params):
    segs = [random_notes(rng, int(k)) for k in rng.integers(0, 45, 40)]
    starts = rng.uniform(0, 2, 40)
    durs = rng.uniform(0.4, 9.0, 40)
    fast = symbolic_features_batch(segs, starts=starts, durations=durs, **params)
    for i, seg in enumerate(segs):
        ref = reference_features(seg, start=starts[i], duration=durs[i], **params)
        assert_same({k: v[i] for k, v in fast.items()}, ref)
