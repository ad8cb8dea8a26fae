"""Note inputs and parameters of the symbolic features."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd
import pytest

from aria_tda.errors import DataError, ParameterError
from aria_tda.features.midi import NoteArray
from aria_tda.features.symbolic import (
    make_batch,
    segment_notes,
    symbolic_features,
)

from ._notes import arr, assert_same, random_notes

# --------------------------------------------------------------------------- inputs


class BenchNote(NamedTuple):
    pitch: int
    start: float
    end: float
    velocity: int


def test_accepted_note_inputs_agree(rng):
    r = random_notes(rng, 30, drums=False, tracks=1, channels=(0,))
    n = NoteArray.from_arrays(
        start=r.start, end=r.end, pitch=r.pitch, velocity=r.velocity
    )  # loudness = velocity
    ref = symbolic_features(n, duration=9.0)
    a = np.stack([n.start, n.end, n.pitch, n.velocity], axis=1)
    df = pd.DataFrame({"start": n.start, "end": n.end, "pitch": n.pitch, "velocity": n.velocity})
    objs = [BenchNote(int(p), float(s), float(e), int(v)) for s, e, p, v in a]
    rec = np.rec.fromarrays([n.start, n.end, n.pitch, n.velocity], names="start,end,pitch,velocity")
    for other in (
        a,
        df,
        objs,
        rec,
        {"start": n.start, "end": n.end, "pitch": n.pitch, "velocity": n.velocity},
    ):
        assert_same(symbolic_features(other, duration=9.0), ref)
    with pytest.raises(ParameterError, match="notes"):
        symbolic_features(np.zeros((3, 7)))
    with pytest.raises(ParameterError, match="columns among"):
        symbolic_features({"start": [0], "end": [1], "pitch": [60], "colour": [1]})
    with pytest.raises(DataError, match="end >= start"):
        symbolic_features(arr((1, 0, 60, 80)))


def test_parameter_errors():
    with pytest.raises(ParameterError, match="form"):
        symbolic_features(arr((0, 1, 60, 80)), form="jsym")
    with pytest.raises(ParameterError, match="fps"):
        symbolic_features(arr((0, 1, 60, 80)), fps=0)
    with pytest.raises(ParameterError, match="keywords among"):
        symbolic_features(arr((0, 1, 60, 80)), frames_per_second=50)
    with pytest.raises(ParameterError, match="exactly one"):
        segment_notes(arr((0, 1, 60, 80)), seconds=2.0, n_notes=4)
    with pytest.raises(ParameterError, match="durations"):
        make_batch([arr((0, 1, 60, 80))], durations=[1.0, 2.0])
