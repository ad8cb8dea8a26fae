"""Each symbolic plant carries its aspect and leaves the others as the music had them, in
every plant family.

The windows are real: Bach chorales converted by music21 (the session's tiny corpus), cut
and planted as the experiment does (:func:`plant_window`).
"""

from __future__ import annotations

import numpy as np
import pytest

from aria_tda_experiments import tokenizer as tk
from aria_tda_experiments.planted import plants as P
from aria_tda_experiments.planted.plants import (
    ASPECTS,
    FAMILIES,
    PLANT_FAMILIES,
    onset_groups,
    plant_notes,
    plant_window,
)


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


@pytest.fixture(params=PLANT_FAMILIES)
def family(request):
    """Every plant family (the invariants hold for each)."""
    return FAMILIES[request.param]


def test_melody_plant_sets_the_motif_and_keeps_rhythm_and_velocity(windows, family):
    for span, vel in windows:
        notes = _notes(span, vel)
        planted = plant_notes(notes, "melody", family=family.name)
        tops = [g[0].pitch for g in onset_groups(planted)]
        steps = np.diff(tops)
        motif = family.melody_motif
        cycle = [motif[i % len(motif)] for i in range(len(steps))]
        assert tops[0] == family.melody_start and list(steps) == cycle
        assert _onsets(planted) == _onsets(notes)
        assert sorted(n.velocity for n in planted) == sorted(n.velocity for n in notes)


def test_harmony_plant_uses_the_progression_on_the_windows_rhythm(windows, family):
    prog = family.harmony_progression
    for span, vel in windows:
        notes = _notes(span, vel)
        planted = plant_notes(notes, "harmony", family=family.name)
        for i, g in enumerate(onset_groups(planted)):
            chord = prog[(i // family.harmony_groups) % len(prog)]
            assert {n.pitch % 12 for n in g} <= set(chord)
        assert _onsets(planted) == _onsets(notes)
        # voiced afresh: every planted note lies within a tritone of a note the music had
        for g_new, g_old in zip(onset_groups(planted), onset_groups(notes), strict=True):
            assert all(min(abs(a.pitch - b.pitch) for b in g_old) <= 6 for a in g_new)


def test_rhythm_plant_sets_the_pattern_on_the_windows_pitches(windows, family):
    ioi = family.rhythm_ioi
    for span, vel in windows:
        notes = _notes(span, vel)
        planted = plant_notes(notes, "rhythm", family=family.name)
        iois = np.diff(_onsets(planted))
        want = [round(ioi[i % len(ioi)] * 100) for i in range(len(iois))]
        assert list(iois) == want
        assert [sorted(n.pitch for n in g) for g in onset_groups(planted)] == \
            [sorted(n.pitch for n in g) for g in onset_groups(notes)]


def test_dynamic_plant_sets_the_contour_and_keeps_pitches_and_onsets(windows, family):
    contour = family.dynamic_contour
    for span, vel in windows:
        notes = _notes(span, vel)
        planted = plant_notes(notes, "dynamic", family=family.name)
        for i, g in enumerate(onset_groups(planted)):
            want = tk.normalize_notes([(60, 0, 1, contour[i % len(contour)])])[0].velocity
            assert {n.velocity for n in g} == {want}
        assert [(n.pitch, n.start) for n in planted] == [(n.pitch, n.start) for n in notes]


def test_texture_plant_sets_the_polyphony_pattern(windows, family):
    pattern = family.texture_pattern
    for span, vel in windows:
        notes = _notes(span, vel)
        planted = plant_notes(notes, "texture", family=family.name)
        sizes = [len(g) for g in onset_groups(planted)]
        assert sizes == [pattern[i % len(pattern)] for i in range(len(sizes))]
        assert _onsets(planted) == _onsets(notes)
        # the top note of every group is the music's own, or (a chord at the bottom of the
        # piano, filled with doublings above) an octave doubling of it
        for g_new, g_old in zip(onset_groups(planted), onset_groups(notes), strict=True):
            top_new, top_old = g_new[0].pitch, g_old[0].pitch
            assert top_new == top_old or (
                len(g_new) > 1 and top_new > top_old and (top_new - top_old) % 12 == 0
                and min(n.pitch for n in g_new) - 12 < 21)


@pytest.mark.parametrize("aspect", ASPECTS)
def test_each_plant_keeps_what_the_other_plants_set(windows, family, aspect):
    """A plant changes only what its aspect is made of: melody and harmony the pitches,
    rhythm the times, dynamic the velocities, texture which notes sound at each onset (with
    that onset's own velocities)."""
    for span, vel in windows:
        notes = _notes(span, vel)
        planted = plant_notes(notes, aspect, family=family.name)
        if aspect == "rhythm":
            assert sorted((n.pitch, n.velocity) for n in planted) == \
                sorted((n.pitch, n.velocity) for n in notes)
            continue
        assert _onsets(planted) == _onsets(notes)
        if aspect == "dynamic":
            assert [(n.pitch, n.start, n.end) for n in planted] == \
                [(n.pitch, n.start, n.end) for n in notes]
        else:  # two notes moved onto one pitch merge, so compare what each onset had
            assert {(n.start, n.velocity) for n in planted} <= \
                {(n.start, n.velocity) for n in notes}


def test_plant_window_is_a_full_window_starting_on_a_note(windows, family):
    for span, vel in windows:
        for aspect in (None, *ASPECTS):
            w = plant_window(span, aspect, window=32, start_velocity=vel, family=family)
            assert w is not None and w.shape == (32,) and w.dtype == np.int64
            first_event = next(t for t in w if not tk.SET_VELOCITY <= t < tk.PAD)
            assert first_event < tk.NOTE_OFF  # a NOTE_ON: no leading rest or dangling off
    assert plant_window(np.asarray([tk.TIME_SHIFT + 5]), "melody", window=32) is None


def test_a_bad_aspect_or_family_is_named():
    from aria_tda.errors import ParameterError

    with pytest.raises(ParameterError, match="aspect"):
        plant_notes([tk.Note(60, 0.0, 0.5, 64)], "timbre")
    with pytest.raises(ParameterError, match="family: expected one of 'A', 'B', got 'C'"):
        plant_notes([tk.Note(60, 0.0, 0.5, 64)], "melody", family="C")
    with pytest.raises(ParameterError, match="family"):
        plant_window(np.asarray([tk.NOTE_ON + 60]), None, window=32, family="a")


def test_family_a_is_the_module_constants():
    a = FAMILIES["A"]
    assert (a.melody_motif, a.melody_start, a.harmony_progression, a.harmony_groups,
            a.rhythm_ioi, a.dynamic_contour, a.texture_pattern) == (
        P.MELODY_MOTIF, P.MELODY_START, P.HARMONY_PROGRESSION, P.HARMONY_GROUPS, P.RHYTHM_IOI,
        P.DYNAMIC_CONTOUR, P.TEXTURE_PATTERN)
    assert tuple(FAMILIES) == PLANT_FAMILIES == ("A", "B")
    assert all(f.name == n for n, f in FAMILIES.items())


def test_family_b_differs_from_a_in_every_aspect_s_own_terms():
    a, b = FAMILIES["A"], FAMILIES["B"]
    # melody: another interval sequence of another length, from another note
    assert len(b.melody_motif) != len(a.melody_motif)
    assert set(map(abs, b.melody_motif)) != set(map(abs, a.melody_motif))
    assert b.melody_start != a.melody_start
    # harmony: no chord of A's, minor and major triads, another chord length
    assert not set(map(frozenset, b.harmony_progression)) & set(
        map(frozenset, a.harmony_progression))
    qualities = {(c[1] - c[0]) % 12 for c in b.harmony_progression}
    assert qualities == {3, 4}  # minor and major thirds above the root
    assert b.harmony_groups != a.harmony_groups
    # rhythm: another cycle length, no shared interval, not a rescaling of A's ratios
    assert len(b.rhythm_ioi) != len(a.rhythm_ioi)
    assert not set(b.rhythm_ioi) & set(a.rhythm_ioi)
    # dynamic: another cycle, no velocity bin of A's (the tokenizer sees bins)
    assert len(b.dynamic_contour) != len(a.dynamic_contour)
    bins = {v // 4 for v in a.dynamic_contour}
    assert not {v // 4 for v in b.dynamic_contour} & bins
    # texture: another polyphony pattern, not a permutation of A's
    assert sorted(b.texture_pattern) != sorted(a.texture_pattern)


def test_a_family_s_patterns_are_checked():
    import dataclasses

    from aria_tda.errors import ParameterError

    with pytest.raises(ParameterError, match="rhythm_ioi: expected multiples of 10 ms"):
        dataclasses.replace(FAMILIES["B"], rhythm_ioi=(0.305,))
    with pytest.raises(ParameterError, match="harmony_progression"):
        dataclasses.replace(FAMILIES["B"], harmony_progression=((0, 12),))
    with pytest.raises(ParameterError, match="texture_pattern"):
        dataclasses.replace(FAMILIES["B"], texture_pattern=())
