"""Real music for the media tests: Bach's chorale BWV 66.6 (music21 corpus), as notes and audio.

The notes come from the music21 score at 120 quarter notes per minute (0.5 s per quarter), one
velocity per voice (soprano loudest); the audio is those notes rendered by FluidSynth with the
General-MIDI soundfont the set-up installs (:mod:`aria_tda.features.audio.render`).
"""

from __future__ import annotations

from functools import lru_cache
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

SR = 22050
SECONDS_PER_QUARTER = 0.5
VOICE_VELOCITY = (110, 90, 75, 60)


@lru_cache(maxsize=1)
def chorale_notes() -> pd.DataFrame:
    """Columns pitch, start, end, velocity, program, is_drum (seconds)."""
    music21 = pytest.importorskip("music21")
    score = music21.corpus.parse("bach/bwv66.6")
    rows = []
    for k, part in enumerate(score.parts):
        for n in part.flatten().notes:
            t0 = float(n.offset) * SECONDS_PER_QUARTER
            t1 = t0 + float(n.quarterLength) * SECONDS_PER_QUARTER
            for p in n.pitches:
                rows.append((int(p.midi), t0, t1, VOICE_VELOCITY[k % 4], 0, False))
    cols = ["pitch", "start", "end", "velocity", "program", "is_drum"]
    return pd.DataFrame(rows, columns=cols).sort_values(["start", "pitch"], ignore_index=True)


def render(notes: pd.DataFrame, *, program: int = 0, sr: int = SR) -> np.ndarray:
    """FluidSynth rendering of a notes table (float32 mono), one channel with ``program``."""
    pytest.importorskip("fluidsynth")
    from aria_tda.features.audio.render import Note, midi_from_notes, render_midi

    beats = 2.0  # midi_from_notes takes beats; 120 bpm = 0.5 s per beat
    mid = midi_from_notes(
        [
            Note(r.start * beats, (r.end - r.start) * beats, int(r.pitch), int(r.velocity))
            for r in notes.itertuples()
        ],
        bpm=120.0,
        programs={0: program},
    )
    return render_midi(mid, sr=sr, tail=0.5)


@lru_cache(maxsize=4)
def chorale_audio(program: int = 0) -> np.ndarray:
    """The whole chorale rendered (about 18.5 s)."""
    return render(chorale_notes(), program=program)


def clip(*, window=(2.0, 8.0), notes=True, audio=True, program=0) -> SimpleNamespace:
    """A Clip-like object over the chorale with the given window."""
    return SimpleNamespace(
        samples=chorale_audio(program) if audio else None,
        sr=SR,
        window=window,
        notes=chorale_notes() if notes else None,
    )
