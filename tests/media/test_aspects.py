"""Per-channel evidence on real music (Bach's chorale BWV 66.6, notes and FluidSynth audio) and on
chord progressions with a known longest common subsequence of root motions."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from aria_tda.errors import ParameterError
from aria_tda.features.audio.chords import ChordSegment, root_motions
from aria_tda.features.audio.rhythm import interval_histogram
from aria_tda.media.aspects import CHANNELS, AspectEvidence, aspect_evidence, histogram_intersection
from aria_tda.media.kernels import melodic_interval_histogram
from media._bach import SR, chorale_notes, clip, render

NS = "{http://www.w3.org/2000/svg}"
SYMBOLIC = ("melody", "harmony", "rhythm", "dynamic", "texture")
TRIADS = {
    "C": (48, 64, 67, 72),
    "F": (41, 65, 69, 72),
    "G": (43, 62, 67, 71),
    "Am": (45, 64, 69, 72),
}
# A: C F G C Am F G C -> root motions 5 2 5 9 8 2 5;  B: C Am F G C -> 9 8 2 5 (A's last four)
PROG_A = ["C", "F", "G", "C", "Am", "F", "G", "C"]
PROG_B = ["C", "Am", "F", "G", "C"]


def _progression(names, *, seconds=1.0):
    rows = [
        (p, i * seconds, (i + 1) * seconds - 0.02, 80)
        for i, name in enumerate(names)
        for p in TRIADS[name]
    ]
    return pd.DataFrame(rows, columns=["pitch", "start", "end", "velocity"])


def _midi(notes, window=None):
    return SimpleNamespace(samples=None, sr=None, window=window, notes=notes)


def _svg_ok(ev: AspectEvidence) -> ET.Element:
    root = ET.fromstring(ev.svg)
    assert root.tag == f"{NS}svg"
    assert not list(root.iter(f"{NS}script")) and " style=" not in ev.svg
    return root


@pytest.mark.slow  # audio analysis: librosa compiles its kernels on first use
def test_a_midi_clip_is_identical_to_itself_in_every_channel():
    c = clip(window=(2.0, 10.0))  # notes and their rendering: all six channels have evidence
    for ch in CHANNELS:
        ev = aspect_evidence(ch, c, c)
        assert ev.channel == ch and ev.available, ev.sentence
        assert ev.similarity == pytest.approx(1.0, abs=1e-9), ch
        _svg_ok(ev)


@pytest.mark.slow  # audio analysis: librosa compiles its kernels on first use
def test_an_audio_clip_is_identical_to_itself_and_says_what_audio_cannot_show():
    c = clip(window=(2.0, 10.0), notes=False)
    for ch in CHANNELS:
        ev = aspect_evidence(ch, c, c)
        _svg_ok(ev)
        if ch in ("melody", "texture"):
            assert not ev.available and math.isnan(ev.similarity)
            assert "needs notes" in ev.sentence and ev.details["mode"] is None
        else:
            assert ev.details["mode"] == "audio"
            assert ev.similarity == pytest.approx(1.0, abs=1e-9), ch


@pytest.mark.slow  # audio analysis: librosa compiles its kernels on first use
def test_two_windows_of_the_chorale_differ_and_every_similarity_is_in_the_unit_interval():
    q, t = clip(window=(0.0, 8.0)), clip(window=(9.0, 17.0))
    sims = {ch: aspect_evidence(ch, q, t).similarity for ch in CHANNELS}
    assert all(0.0 <= s <= 1.0 for s in sims.values()), sims
    assert min(sims.values()) < 1.0


def test_sentences_state_the_units():
    q, t = clip(window=(0.0, 8.0), audio=False), clip(window=(9.0, 17.0), audio=False)
    words = {
        "melody": "semitones",
        "harmony": "cosine",
        "rhythm": "onsets per second",
        "dynamic": "velocity",
        "texture": "pitches",
    }
    for ch, word in words.items():
        ev = aspect_evidence(ch, q, t)
        assert word in ev.sentence and f"{ev.similarity:.2f}" in ev.sentence


def test_harmony_highlights_the_known_longest_common_subsequence():
    a, b = _progression(PROG_A), _progression(PROG_B)
    ev = aspect_evidence("harmony", _midi(a), _midi(b), labels=("A", "B"))
    names = [[r[3] for r in runs] for runs in ev.details["chords"]]
    assert names == [PROG_A, PROG_B]
    assert ev.details["root_motions"] == [[5, 2, 5, 9, 8, 2, 5], [9, 8, 2, 5]]
    assert ev.details["lcs_pairs"] == [[3, 0], [4, 1], [5, 2], [6, 3]]
    assert "share 4 root motions" in ev.sentence
    root = _svg_ok(ev)
    boxed = [r for r in root.iter(f"{NS}rect") if r.get("stroke-width") == "2"]
    assert len(boxed) == 8  # the four matched motions, in both rows
    tokens = {t.text for t in root.iter(f"{NS}text")}
    assert {"C→Am", "Am→F", "F→G", "G→C"} <= tokens


def test_harmony_motions_are_the_library_root_motions():
    notes = chorale_notes()
    ev = aspect_evidence("harmony", _midi(notes, (0.0, 9.0)), _midi(notes, (9.0, 18.0)))
    for runs, motions in zip(ev.details["chords"], ev.details["root_motions"], strict=True):
        segs = [ChordSegment(s, e, r, n) for s, e, r, n in runs]
        assert motions == root_motions(segs)


@pytest.mark.slow  # audio analysis: librosa compiles its kernels on first use
def test_harmony_from_audio_finds_the_same_alignment():
    a, b = _progression(PROG_A), _progression(PROG_B)
    qa = SimpleNamespace(samples=render(a), sr=SR, window=None, notes=None)
    qb = SimpleNamespace(samples=render(b), sr=SR, window=None, notes=None)
    ev = aspect_evidence("harmony", qa, qb)
    assert ev.details["mode"] == "audio"
    assert ev.details["root_motions"][1] == [9, 8, 2, 5]
    assert len(ev.details["lcs_pairs"]) == 4


def test_melody_is_transposition_invariant_and_harmony_is_not():
    notes = chorale_notes()
    up = notes.assign(pitch=notes["pitch"] + 3)
    q, t = _midi(notes, (0.0, 9.0)), _midi(up, (0.0, 9.0))
    assert aspect_evidence("melody", q, t).similarity == pytest.approx(1.0)
    assert aspect_evidence("harmony", q, t).similarity < 0.9


def test_rhythm_follows_the_tempo_and_melody_does_not():
    notes = chorale_notes()
    slow = notes.assign(start=notes["start"] * 1.5, end=notes["end"] * 1.5)
    q, t = _midi(notes, (0.0, 9.0)), _midi(slow, (0.0, 13.5))
    assert aspect_evidence("melody", q, t).similarity == pytest.approx(1.0)
    ev = aspect_evidence("rhythm", q, t)
    assert ev.similarity < 0.5
    onsets = np.unique(notes.loc[notes["start"] < 9.0, "start"])
    want = interval_histogram(onsets, bins=16, range=(0.05, 1.0))
    np.testing.assert_allclose(ev.details["histograms"]["inter-onset intervals"][0], want)


def test_dynamic_and_texture_respond_to_what_they_measure():
    notes = chorale_notes()
    q = _midi(notes, (0.0, 9.0))
    softer = _midi(notes.assign(velocity=notes["velocity"] // 2), (0.0, 9.0))
    assert aspect_evidence("dynamic", q, softer).similarity < 0.2
    soprano = notes[notes["velocity"] == notes["velocity"].max()]
    thin = aspect_evidence("texture", q, _midi(soprano, (0.0, 9.0)))
    assert thin.details["mean_polyphony"][1] == pytest.approx(1.0)
    assert thin.details["mean_polyphony"][0] > 3.0
    assert thin.similarity < 0.1


@pytest.mark.slow  # audio analysis: librosa compiles its kernels on first use
def test_timbre_tells_a_violin_from_a_piano():
    piano_a, piano_b = clip(window=(0.0, 8.0)), clip(window=(9.0, 17.0))
    violin_b = clip(window=(9.0, 17.0), program=40)
    same = aspect_evidence("timbre", piano_a, piano_b).similarity
    other = aspect_evidence("timbre", piano_a, violin_b).similarity
    assert same > other


def test_only_the_window_counts():
    notes = chorale_notes()
    changed = notes.copy()
    late = changed["start"] >= 10.0
    changed.loc[late, "pitch"] = changed.loc[late, "pitch"] - 7
    changed.loc[late, "velocity"] = 10
    base = _midi(notes, (0.0, 9.0))
    for ch in SYMBOLIC:
        a = aspect_evidence(ch, base, _midi(notes, (0.0, 9.0)))
        b = aspect_evidence(ch, base, _midi(changed, (0.0, 9.0)))
        assert a.similarity == b.similarity and a.details == b.details, ch


def test_melody_histogram_is_the_top_voice():
    notes = chorale_notes()
    ev = aspect_evidence("melody", _midi(notes, (0.0, 9.0)), _midi(notes, (0.0, 9.0)))
    inside = notes[notes["start"] < 9.0]
    top = inside.groupby("start")["pitch"].max()
    np.testing.assert_allclose(
        ev.details["histograms"][0],
        melodic_interval_histogram(top.to_numpy(), top.index.to_numpy()),
    )


@pytest.mark.slow  # audio analysis: librosa compiles its kernels on first use
def test_no_data_is_said_not_raised():
    empty = pd.DataFrame({"pitch": [60], "start": [20.0], "end": [21.0], "velocity": [80]})
    q, t = _midi(chorale_notes(), (0.0, 9.0)), _midi(empty, (0.0, 9.0))
    for ch in SYMBOLIC:
        ev = aspect_evidence(ch, q, t)
        assert not ev.available and "training item" in ev.sentence, ch
        _svg_ok(ev)
    ev = aspect_evidence("timbre", q, q)
    assert not ev.available and "needs audio" in ev.sentence
    short = SimpleNamespace(samples=np.zeros(SR // 4, np.float32), sr=SR, window=None, notes=None)
    ev = aspect_evidence("harmony", short, short)
    assert not ev.available and "could not be analysed" in ev.sentence


def test_mappings_are_clips_too():
    c = {"samples": None, "sr": None, "window": (0.0, 6.0), "notes": chorale_notes()}
    assert aspect_evidence("texture", c, c).similarity == pytest.approx(1.0)


def test_unknown_channel_names_the_choices():
    c = clip(audio=False)
    with pytest.raises(ParameterError, match=r"channel: expected one of 'melody', .*'timbre'"):
        aspect_evidence("tempo", c, c)


def test_labels_are_escaped_in_the_chart():
    c = clip(audio=False)
    ev = aspect_evidence("melody", c, c, labels=("<b>q</b>", "t & u"))
    texts = [t.text for t in _svg_ok(ev).iter(f"{NS}text")]
    assert "<b>q</b>" in texts and "t & u" in texts


def test_histogram_intersection():
    assert histogram_intersection([1, 1, 0], [2, 2, 0]) == pytest.approx(1.0)
    assert histogram_intersection([1, 0], [0, 1]) == 0.0
    assert histogram_intersection([0.5, 0.5], [1.0, 0.0]) == pytest.approx(0.5)
    assert math.isnan(histogram_intersection([0, 0], [1, 0]))
