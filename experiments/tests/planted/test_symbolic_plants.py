"""Each symbolic plant carries its aspect and leaves the others as the music had them.

The windows are real: Bach chorales converted by music21 (the session's tiny corpus), cut
and planted as the experiment does (:func:`plant_window`).
"""

from __future__ import annotations

import numpy as np
import pytest

from aria_tda_experiments import tokenizer as tk
from aria_tda_experiments.planted import plants as P
from aria_tda_experiments.planted.plants import ASPECTS, onset_groups, plant_notes, plant_window


@pytest.fixture(scope="module")
def windows(tiny_corpus):
    """Notes of real windows (re-cut unplanted), with the span each was cut from."""
    meta = tiny_corpus.train_meta
    out = []
    for _, m in meta.head(12).iterrows():
        span = tiny_corpus.work_tokens(m.work_id)[int(m.start_token): int(m.start_token) + 160]
        w = plant_window(span, None, window=32, start_velocity=int(m.start_velocity))
        if w is not None:
            out.append((span, int(m.start_velocity)))
    assert len(out) >= 6
    return out


def _notes(span, vel):
    notes = tk.decode(span, initial_velocity=vel)
    first = notes[0].start
    return tk.normalize_notes([n._replace(start=n.start - first, end=n.end - first)
                               for n in notes])


def _onsets(notes):
    return [round(g[0].start * 100) for g in onset_groups(notes)]


def test_melody_plant_sets_the_motif_and_keeps_rhythm_and_velocity(windows):
    for span, vel in windows:
        notes = _notes(span, vel)
        planted = plant_notes(notes, "melody")
        tops = [g[0].pitch for g in onset_groups(planted)]
        steps = np.diff(tops)
        cycle = [P.MELODY_MOTIF[i % len(P.MELODY_MOTIF)] for i in range(len(steps))]
        assert tops[0] == P.MELODY_START and list(steps) == cycle
        assert _onsets(planted) == _onsets(notes)
        assert sorted(n.velocity for n in planted) == sorted(n.velocity for n in notes)


def test_harmony_plant_uses_the_progression_on_the_windows_rhythm(windows):
    for span, vel in windows:
        notes = _notes(span, vel)
        planted = plant_notes(notes, "harmony")
        for i, g in enumerate(onset_groups(planted)):
            chord = P.HARMONY_PROGRESSION[(i // P.HARMONY_GROUPS) % len(P.HARMONY_PROGRESSION)]
            assert {n.pitch % 12 for n in g} <= set(chord)
        assert _onsets(planted) == _onsets(notes)
        # voiced afresh: every planted note lies within a tritone of a note the music had
        for g_new, g_old in zip(onset_groups(planted), onset_groups(notes), strict=True):
            assert all(min(abs(a.pitch - b.pitch) for b in g_old) <= 6 for a in g_new)


def test_rhythm_plant_sets_the_pattern_on_the_windows_pitches(windows):
    for span, vel in windows:
        notes = _notes(span, vel)
        planted = plant_notes(notes, "rhythm")
        iois = np.diff(_onsets(planted))
        want = [round(P.RHYTHM_IOI[i % len(P.RHYTHM_IOI)] * 100) for i in range(len(iois))]
        assert list(iois) == want
        assert [sorted(n.pitch for n in g) for g in onset_groups(planted)] == \
            [sorted(n.pitch for n in g) for g in onset_groups(notes)]


def test_dynamic_plant_sets_the_contour_and_keeps_pitches_and_onsets(windows):
    for span, vel in windows:
        notes = _notes(span, vel)
        planted = plant_notes(notes, "dynamic")
        for i, g in enumerate(onset_groups(planted)):
            want = tk.normalize_notes([(60, 0, 1, P.DYNAMIC_CONTOUR[i % 6])])[0].velocity
            assert {n.velocity for n in g} == {want}
        assert [(n.pitch, n.start) for n in planted] == [(n.pitch, n.start) for n in notes]


def test_texture_plant_sets_the_polyphony_pattern(windows):
    for span, vel in windows:
        notes = _notes(span, vel)
        planted = plant_notes(notes, "texture")
        sizes = [len(g) for g in onset_groups(planted)]
        assert sizes == [P.TEXTURE_PATTERN[i % 3] for i in range(len(sizes))]
        assert _onsets(planted) == _onsets(notes)
        # the top note of every group is the music's own, or (a 4-group at the bottom of the
        # piano, filled with doublings above) an octave doubling of it
        for g_new, g_old in zip(onset_groups(planted), onset_groups(notes), strict=True):
            top_new, top_old = g_new[0].pitch, g_old[0].pitch
            assert top_new == top_old or (
                len(g_new) == 4 and top_new > top_old and (top_new - top_old) % 12 == 0
                and min(n.pitch for n in g_new) - 12 < 21)


def test_plant_window_is_a_full_window_starting_on_a_note(windows):
    for span, vel in windows:
        for aspect in (None, *ASPECTS):
            w = plant_window(span, aspect, window=32, start_velocity=vel)
            assert w is not None and w.shape == (32,) and w.dtype == np.int64
            first_event = next(t for t in w if not tk.SET_VELOCITY <= t < tk.PAD)
            assert first_event < tk.NOTE_OFF  # a NOTE_ON: no leading rest or dangling off
    assert plant_window(np.asarray([tk.TIME_SHIFT + 5]), "melody", window=32) is None


def test_a_bad_aspect_is_named():
    from aria_tda.errors import ParameterError

    with pytest.raises(ParameterError, match="aspect"):
        plant_notes([tk.Note(60, 0.0, 0.5, 64)], "timbre")
