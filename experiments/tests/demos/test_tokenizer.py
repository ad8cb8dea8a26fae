"""Event tokenizer: vocabulary layout, exact round trips on real music, MIDI I/O."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from aria_tda.errors import FileFormatError, ParameterError
from aria_tda_experiments import tokenizer as tk
from aria_tda_experiments.tokenizer import (
    Note,
    decode,
    encode,
    normalize_notes,
    read_midi,
    write_midi,
)


@pytest.fixture(scope="module")
def chorale_notes():
    pytest.importorskip("music21")
    from music21 import corpus, midi

    score = corpus.parse("bach/bwv66.6")
    data = midi.translate.music21ObjectToMidiFile(score).writestr()
    return read_midi(data)


def _random_notes(rng, n=200):
    starts = rng.uniform(0, 20, n)
    return [
        Note(int(p), float(s), float(s + d), int(v))
        for p, s, d, v in zip(
            rng.integers(20, 100, n),
            starts,
            rng.exponential(0.4, n),
            rng.integers(1, 128, n),
            strict=True,
        )
    ]


def test_vocabulary_layout():
    assert tk.VOCAB_SIZE == 390 and tk.PAD == 388 and tk.BOS == 389
    assert tk.describe(0) == "NOTE_ON 0" and tk.describe(127) == "NOTE_ON 127"
    assert tk.describe(128) == "NOTE_OFF 0" and tk.describe(255) == "NOTE_OFF 127"
    assert tk.describe(256) == "TIME_SHIFT 10ms" and tk.describe(355) == "TIME_SHIFT 1000ms"
    assert tk.describe(356) == "SET_VELOCITY 0" and tk.describe(387) == "SET_VELOCITY 31"
    with pytest.raises(ParameterError, match="token"):
        tk.describe(390)


def test_round_trip_on_real_chorale(chorale_notes):
    assert len(chorale_notes) > 100
    toks = encode(chorale_notes)
    assert toks.dtype == np.int64 and toks.min() >= 0 and toks.max() < tk.PAD
    dec = decode(toks)
    assert dec == normalize_notes(chorale_notes)
    np.testing.assert_array_equal(encode(dec), toks)  # the encoding is a fixed point
    # every NOTE_ON of the piece is one decoded note (unison doublings collapse to one)
    assert int((toks < tk.NOTE_OFF).sum()) == len(dec)
    # quantisation error is at most half a step
    pitches = {(n.pitch, round(n.start * 100)) for n in chorale_notes}
    assert {(n.pitch, round(n.start * 100)) for n in dec} == pitches


def test_round_trip_random_notes(rng):
    notes = _random_notes(rng)
    dec = decode(encode(notes))
    assert dec == normalize_notes(notes)
    np.testing.assert_array_equal(encode(dec), encode(notes))
    # cleaned notes never overlap on one pitch and last at least one step
    for p in {n.pitch for n in dec}:
        same = sorted((n.start, n.end) for n in dec if n.pitch == p)
        assert all(e > s for s, e in same)
        assert all(a[1] <= b[0] for a, b in itertools.pairwise(same))


def test_long_shifts_velocity_and_overlaps():
    notes = [
        Note(60, 0.0, 2.5, 100),
        Note(60, 1.0, 3.0, 40),
        Note(64, 0.0, 0.001, 100),
        Note(67, 0.0, 0.5, 0),
        Note(72, 0.004, 1.0, 127),
    ]
    toks = encode(notes, bos=True)
    assert toks[0] == tk.BOS
    names = [tk.describe(t) for t in toks]
    # 1.0 s later a shift of exactly 100 steps; 2.0 s gap split into 100 + 100... steps
    assert "TIME_SHIFT 1000ms" in names
    assert names.count("SET_VELOCITY 31") == 1 and "SET_VELOCITY 25" in names
    dec = decode(toks)
    assert Note(60, 0.0, 1.0, 102) in dec  # re-strike ends the earlier note
    assert Note(60, 1.0, 3.0, 42) in dec
    assert Note(64, 0.0, 0.01, 102) in dec  # shorter than a step -> one step
    assert all(n.pitch != 67 for n in dec)  # velocity 0 is silence
    assert Note(72, 0.0, 1.0, 126) in dec


def test_decode_window_from_the_middle(chorale_notes):
    toks = encode(chorale_notes)
    window = toks[37:101]
    dec = decode(window, initial_velocity=90)
    assert all(n.end > n.start >= 0 for n in dec) and all(n.velocity == 90 for n in dec)
    # orphan NOTE_OFFs are ignored, unfinished notes end at the window's end
    total = sum(t - tk.TIME_SHIFT + 1 for t in window if tk.TIME_SHIFT <= t < tk.SET_VELOCITY) / 100
    assert max(n.end for n in dec) == pytest.approx(total)
    assert decode([tk.NOTE_OFF + 60, tk.PAD, tk.BOS]) == []


def test_bad_input():
    with pytest.raises(ParameterError, match="pitch"):
        encode([Note(128, 0, 1, 64)])
    with pytest.raises(ParameterError, match="start <= end"):
        encode([(60, 1.0, 0.5, 64)])
    with pytest.raises(ParameterError, match="ids in"):
        decode([400])


def test_midi_write_read_round_trip(tmp_path, chorale_notes):
    dec = decode(encode(chorale_notes))
    data = write_midi(dec, tmp_path / "x.mid")
    assert (tmp_path / "x.mid").read_bytes() == data
    back = read_midi(tmp_path / "x.mid")
    assert len(back) == len(dec)
    np.testing.assert_allclose(np.array(back, float), np.array(dec, float), atol=1e-9)
    np.testing.assert_array_equal(encode(back), encode(dec))
    with pytest.raises(FileFormatError, match="cannot read"):
        read_midi(b"not a midi file")
