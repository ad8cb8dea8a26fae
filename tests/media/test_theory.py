"""Music-theory building blocks: keys, chords, Roman numerals, shared runs, beat grids, tempo."""

from __future__ import annotations

import numpy as np
import pytest

from aria_tda.errors import DataError, ParameterError
from aria_tda.media import theory as th
from aria_tda.media.theory import (
    MAX_RUNS,
    PITCH_NAMES,
    QUALITIES,
    BeatGrid,
    Key,
    chord_name,
    estimate_key,
    estimate_key_reference,
    longest_shared_run,
    longest_shared_run_reference,
    match_chord,
    match_chord_reference,
    roman,
    tempo_from_onsets,
    tempo_from_onsets_reference,
)
from twinlib import Twin, as_comparable, assert_same

MAJOR = (0, 2, 4, 5, 7, 9, 11)
HARMONIC_MINOR = (0, 2, 3, 5, 7, 8, 11)


def _scale_profile(tonic, steps, rng):
    """Duration-weighted profile of a scale played with the tonic and fifth held longer."""
    x = np.zeros(12)
    for k, s in enumerate(steps):
        x[(tonic + s) % 12] += (3.0 if k in (0, 4) else 1.0) * rng.uniform(0.8, 1.2)
    return x


def _key_input(rng):
    return (rng.gamma(1.0, 1.0, 12) * (rng.random(12) < 0.7),), {}


def _runs_input(rng):
    alphabet = int(rng.integers(2, 6))
    a = rng.integers(0, alphabet, int(rng.integers(0, 40))).tolist()
    b = rng.integers(0, alphabet, int(rng.integers(0, 40))).tolist()
    return (a, b), {"min_length": int(rng.integers(1, 4))}


def _chord_input(rng):
    x = rng.random(12) * (rng.random(12) < 0.5)
    return (x,), {"bass": int(rng.integers(0, 12)) if rng.random() < 0.5 else None}


def _onsets_input(rng):
    p = 60.0 / rng.uniform(50, 200)
    iois = rng.choice([p / 2, p, p, 1.5 * p, 2 * p], size=int(rng.integers(3, 25)))
    return (np.cumsum(iois) + rng.uniform(0, 3) + rng.normal(0, 0.004, iois.size),), {}


#: (fast, reference) pairs of this module, in the shape of the twin registry.
TWINS = [
    Twin("estimate_key", estimate_key, estimate_key_reference, _key_input),
    Twin("longest_shared_run", longest_shared_run, longest_shared_run_reference, _runs_input),
    Twin("match_chord", match_chord, match_chord_reference, _chord_input),
    Twin("tempo_from_onsets", tempo_from_onsets, tempo_from_onsets_reference, _onsets_input,
         rtol=1e-9, atol=1e-9),
]


@pytest.mark.parametrize("twin", TWINS, ids=lambda t: t.name)
def test_twins_agree_on_random_input(twin, rng):
    for _ in range(25):
        args, kwargs = twin.make(rng)
        assert_same(as_comparable(twin.fast(*args, **kwargs)),
                    as_comparable(twin.reference(*args, **kwargs)),
                    rtol=twin.rtol, atol=twin.atol, where=twin.name)


def test_references_are_not_public():
    for twin in TWINS:
        assert twin.reference.__name__ not in th.__all__
        assert twin.fast.__name__ in th.__all__


# --------------------------------------------------------------------------- keys


@pytest.mark.parametrize("tonic", range(12))
def test_keys_of_scales(tonic, rng):
    major = estimate_key(_scale_profile(tonic, MAJOR, rng))
    assert (major.tonic, major.mode) == (tonic, "major")
    minor = estimate_key(_scale_profile(tonic, HARMONIC_MINOR, rng))
    assert (minor.tonic, minor.mode) == (tonic, "minor")
    assert 0.5 < minor.confidence <= 1.0 and minor.margin > 0.0


def test_key_names_and_degenerate_profiles():
    assert Key(2, "minor", 0.8, 0.1).name == "D minor"
    assert Key(10, "major", 0.8, 0.1).name == "Bb major"
    assert PITCH_NAMES[3] == "Eb" and len(PITCH_NAMES) == 12
    assert estimate_key(np.zeros(12)) is None
    assert estimate_key(np.full(12, 0.3)) is None
    assert estimate_key_reference(np.zeros(12)) is None


def test_key_is_transposition_equivariant(rng):
    x = rng.random(12)
    k0 = estimate_key(x)
    for shift in range(12):
        k = estimate_key(np.roll(x, shift))
        assert k.tonic == (k0.tonic + shift) % 12 and k.mode == k0.mode
        assert k.confidence == pytest.approx(k0.confidence)


def test_key_agrees_with_music21(rng):
    """music21's Krumhansl-Kessler analysis of a stream of notes finds the same key and r."""
    discrete = pytest.importorskip("music21.analysis.discrete")
    from music21 import note, stream

    for _ in range(8):
        s, x = stream.Stream(), np.zeros(12)
        for _ in range(30):
            p, q = int(rng.integers(55, 80)), float(rng.choice([0.5, 1.0, 2.0]))
            s.append(note.Note(p, quarterLength=q))
            x[p % 12] += q
        theirs = discrete.KrumhanslKessler().getSolution(s)
        ours = estimate_key(x)
        assert (ours.tonic, ours.mode) == (theirs.tonic.pitchClass, theirs.mode)
        assert ours.confidence == pytest.approx(theirs.correlationCoefficient, abs=1e-9)


def test_bad_key_input():
    with pytest.raises(ParameterError, match="pc_profile: expected shape"):
        estimate_key(np.ones(7))
    with pytest.raises(ParameterError, match="pc_profile: expected finite"):
        estimate_key(np.full(12, np.nan))
    with pytest.raises(ParameterError, match="mode"):
        Key(0, "dorian", 0.5, 0.1)
    with pytest.raises(ParameterError, match="tonic"):
        Key(12, "major", 0.5, 0.1)


# --------------------------------------------------------------------------- chords


@pytest.mark.parametrize(("root", "quality", "tonic", "mode", "numeral"), [
    (0, "maj", 0, "major", "I"), (2, "min", 0, "major", "ii"), (5, "maj", 0, "major", "IV"),
    (7, "dom7", 0, "major", "V7"), (11, "dim", 0, "major", "viio"),
    (11, "hdim7", 0, "major", "viiø7"), (10, "maj", 0, "major", "bVII"),
    (3, "maj", 0, "major", "bIII"), (8, "maj", 0, "major", "bVI"), (9, "min7", 0, "major", "vi7"),
    (5, "maj7", 0, "major", "IVmaj7"), (2, "min", 2, "minor", "i"), (7, "min", 2, "minor", "iv"),
    (9, "maj", 2, "minor", "V"), (9, "dom7", 2, "minor", "V7"), (1, "dim", 2, "minor", "viio"),
    (1, "dim7", 2, "minor", "viio7"), (0, "maj", 2, "minor", "VII"), (5, "maj", 2, "minor", "III"),
    (10, "maj", 2, "minor", "VI"), (3, "maj", 2, "minor", "bII"), (4, "dim", 2, "minor", "iio"),
    (0, "dim", 2, "minor", "bviio"), (1, "maj", 2, "minor", "#VII"),
    (8, "aug", 0, "major", "bVI+"), (7, "aug", 0, "major", "V+"),
])  # fmt: skip
def test_roman_numerals(root, quality, tonic, mode, numeral):
    assert roman(root, quality, Key(tonic, mode, 0.9, 0.1)) == numeral


def test_roman_is_transposition_invariant():
    progression = [(0, "maj"), (5, "maj"), (7, "dom7"), (9, "min"), (2, "min"), (0, "maj")]
    for mode in ("major", "minor"):
        base = [roman(r, q, Key(0, mode, 0.9, 0.1)) for r, q in progression]
        for shift in range(12):
            moved = [roman((r + shift) % 12, q, Key(shift, mode, 0.9, 0.1))
                     for r, q in progression]
            assert moved == base


def test_chord_names():
    assert chord_name(2, "min") == "Dm"
    assert chord_name(7, "dom7") == "G7"
    assert chord_name(6, "dim") == "F#dim"
    assert chord_name(10, "maj7") == "Bbmaj7"
    assert chord_name(11, "hdim7") == "Bm7b5"
    with pytest.raises(ParameterError, match="quality: expected one of maj"):
        chord_name(0, "sus4")
    with pytest.raises(ParameterError, match="root: expected a pitch class"):
        roman(13, "maj", Key(0, "major", 0.9, 0.1))


def test_match_chord_finds_every_template(rng):
    for quality in QUALITIES:
        for root in range(12):
            x = th.chord_template(root, quality) * rng.uniform(0.9, 1.1, 12)
            got = match_chord(x, bass=root)
            assert got[:2] == (root, quality) and got[2] > 0.99
    assert match_chord(np.zeros(12)) is None
    # an augmented triad fits three roots equally: the bass decides
    x = th.chord_template(0, "aug")
    assert [match_chord(x, bass=b)[:2] for b in (0, 4, 8)] == [(0, "aug"), (4, "aug"), (8, "aug")]
    with pytest.raises(ParameterError, match="non-negative"):
        match_chord(-np.ones(12))


# --------------------------------------------------------------------------- shared runs


def test_longest_shared_run_positions():
    a = [5, 1, 2, 3, 4, 9, 1, 2]
    b = [0, 0, 1, 2, 3, 4, 7]
    assert longest_shared_run(a, b) == [(1, 2, 4)]
    assert longest_shared_run(["x", "y"], ["y", "x"]) == []
    assert longest_shared_run(["x", "y"], ["y", "x"], min_length=1) == [(0, 1, 1), (1, 0, 1)]
    assert longest_shared_run([], [1, 2]) == []
    ties = longest_shared_run([1, 2, 0, 1, 2], [1, 2, 9, 1, 2])
    assert ties == [(0, 0, 2), (0, 3, 2), (3, 0, 2), (3, 3, 2)]


def test_longest_shared_run_cap_and_properties(rng):
    assert len(longest_shared_run([0] * 30, [0] * 30, min_length=1)) == 1  # one run of 30
    many = longest_shared_run([0, 1, 7] * 10, [0, 1, 8] * 10, min_length=1)
    assert len(many) == MAX_RUNS and all(n == many[0][2] for _, _, n in many)
    for _ in range(20):
        a = rng.integers(0, 3, 30).tolist()
        b = rng.integers(0, 3, 25).tolist()
        runs = longest_shared_run(a, b, min_length=1)
        for i, j, n in runs:
            assert a[i:i + n] == b[j:j + n]
        swapped = longest_shared_run(b, a, min_length=1)
        assert sorted((j, i, n) for i, j, n in swapped) == sorted(runs)[: len(swapped)] or \
            len(runs) == MAX_RUNS


def test_bad_run_input():
    with pytest.raises(ParameterError, match="min_length"):
        longest_shared_run([1], [1], min_length=0)
    with pytest.raises(ParameterError, match="hashable"):
        longest_shared_run([[1]], [[1]])
    with pytest.raises(ParameterError, match="a: expected a sequence"):
        longest_shared_run("abc", [1])


# --------------------------------------------------------------------------- beat grids


def test_beat_grid_positions():
    beats = np.arange(0.0, 20.0, 0.5)
    g = BeatGrid(beats, beats[::4], "4/4", first_bar=1)
    assert g.position(0.0) == "bar 1, beat 1"
    assert g.position(2.0) == "bar 2, beat 1"
    assert g.position(2.75) == "bar 2, beat 2.5"
    assert g.position(1.99) == "bar 2, beat 1"  # rounded to the next bar's first beat
    assert g.position(-0.5) == "bar 0, beat 4"  # before the first downbeat: counted back
    assert g.bar_beat(3.25) == (2, pytest.approx(3.5))
    assert g.bar_beat(25.0) == (13, pytest.approx(3.0))  # extrapolated past the last beat
    waltz = BeatGrid(beats + 10.0, (beats + 10.0)[1::3], "3/4", first_bar=7)
    assert waltz.position(10.0) == "bar 6, beat 3"  # an anacrusis of one beat
    assert waltz.position(10.5) == "bar 7, beat 1"
    assert waltz.position(12.5) == "bar 8, beat 2"


def test_beat_grid_without_bars_or_beats():
    g = BeatGrid(np.arange(4) * 0.5, np.zeros(0), "?")
    assert g.position(1.0) == "beat 3"
    assert BeatGrid((), (), "?").position(3.21) == "3.2 s"
    with pytest.raises(DataError, match="at least 2 beats"):
        BeatGrid((), (), "?").bar_beat(1.0)
    assert BeatGrid((0.0, 0.5), (0.0,), "4/4") == BeatGrid(np.array([0.0, 0.5]), [0.0], "4/4")


def test_bad_beat_grid():
    with pytest.raises(ParameterError, match="beats: expected strictly increasing"):
        BeatGrid([0.0, 1.0, 0.5], [0.0], "4/4")
    with pytest.raises(ParameterError, match="downbeats: expected a subset of beats"):
        BeatGrid([0.0, 1.0, 2.0], [0.5], "4/4")


# --------------------------------------------------------------------------- tempo


@pytest.mark.parametrize("bpm", [92.0, 110.0, 135.0, 160.0])
def test_tempo_from_onsets_recovers_a_tempo(bpm, rng):
    p = 60.0 / bpm
    onsets = 1.3 + np.cumsum(rng.choice([p / 2, p, p, 2 * p], size=40))
    got, phase = tempo_from_onsets(onsets)
    assert got == pytest.approx(bpm, abs=0.6)
    k = (onsets - phase) / p
    assert np.mean(np.abs(k - np.round(k)) < 0.05) > 0.5  # the beat phase lies on onsets
    assert tempo_from_onsets([1.0, 2.0]) is None
