"""Reference twins of the feature kernels (collected by tests/common/test_reference_twins.py)."""

from __future__ import annotations

import numpy as np

from aria_tda.features.audio.chords import viterbi, viterbi_reference
from aria_tda.features.audio.rhythm import interval_histogram, interval_histogram_reference
from aria_tda.features.jsymbolic import jsymbolic_features, jsymbolic_features_reference
from aria_tda.features.midi import NoteArray
from aria_tda.features.symbolic import symbolic_features, symbolic_features_reference
from twinlib import Twin


def _intervals(rng):
    times = np.round(rng.uniform(0.0, 12.0, 40), 3)
    return (times,), {"bins": 16, "range": (0.2, 2.0)}


def _shuffle_times(rng, args, kwargs):
    return (rng.permutation(args[0]),), kwargs, lambda result: result  # events in any order


def _viterbi(rng):
    k, t = 3, 5
    emit = np.log(rng.dirichlet(np.ones(k), size=t).T)
    trans = np.log(rng.dirichlet(np.ones(k), size=k))
    init = np.log(rng.dirichlet(np.ones(k)))
    return (emit, trans, init), {}


def _notes(rng):
    n = 30
    start = np.maximum(np.round(rng.uniform(-1.0, 6.0, n) / 0.01) * 0.01, 0.0)
    dur = np.round(rng.exponential(0.5, n) / 0.01) * 0.01
    notes = NoteArray.from_arrays(
        start=start,
        end=start + dur,
        pitch=rng.integers(48, 84, n),
        velocity=rng.integers(1, 128, n),
        loudness=rng.integers(1, 128, n),
        channel=rng.choice([0, 1, 9], n),
        track=rng.integers(0, 2, n),
    )
    return (notes,), {"start": 0.5, "duration": 5.0}


def _chords(rng):
    # onsets on a quarter-second grid, chords of 1-5 notes: many onset groups per segment
    groups = int(rng.integers(0, 30))
    sizes = rng.integers(1, 6, groups)
    times = np.sort(rng.choice(np.arange(28) * 0.25, groups, replace=False)) if groups else []
    start = np.repeat(np.asarray(times, dtype=float), sizes)
    n = start.size
    notes = NoteArray.from_arrays(
        start=start,
        end=start + np.round(rng.exponential(0.4, n) / 0.05) * 0.05,
        pitch=rng.integers(48, 84, n),
        velocity=rng.integers(1, 128, n),
        channel=rng.choice([0, 1, 9], n, p=[0.45, 0.45, 0.1]),
        track=rng.integers(0, 2, n),
    )
    return (notes,), {"start": 0.0, "duration": 7.5}


def _chords_jsymbolic(rng):
    args, kwargs = _chords(rng)
    return args, {**kwargs, "form": "jsymbolic"}


def _midi(rng):
    from features._midifiles import random_midi

    return (random_midi(rng, tpq=96, n_tracks=2),), {}


TWINS = [
    Twin(
        "interval_histogram",
        interval_histogram,
        interval_histogram_reference,
        _intervals,
        permute=_shuffle_times,
    ),
    Twin("viterbi", viterbi, viterbi_reference, _viterbi),
    Twin("symbolic_features", symbolic_features, symbolic_features_reference, _notes),
    # the onset-group (pattern) features need notes that share onsets
    Twin("symbolic_features[chords]", symbolic_features, symbolic_features_reference, _chords),
    Twin(
        "symbolic_features[chords,jsymbolic]",
        symbolic_features,
        symbolic_features_reference,
        _chords_jsymbolic,
    ),
    Twin("jsymbolic_features", jsymbolic_features, jsymbolic_features_reference, _midi),
]
