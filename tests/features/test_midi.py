"""MIDI parsing: note pairing, channels, drums, tempo map, channel volume, errors."""

from __future__ import annotations

import numpy as np
import pytest

from aria_tda.errors import DataError, FileFormatError, ParameterError
from aria_tda.features.midi import NoteArray, read_midi

from ._midifiles import cc7, make_midi, note, off, on, random_midi, reload, tempo


def test_close_all_pairing_same_track_channel_pitch(tmp_path):
    # two overlapping Note Ons of one key both end at the first Note Off (jSymbolic 2.2)
    mid = make_midi([[on(0, 60), on(48, 60), off(96, 60), off(120, 60)]], tpq=96)
    s = read_midi(reload(mid, tmp_path))
    assert s.note_on.tolist() == [0, 48]
    assert s.note_off.tolist() == [96, 96]
    assert s.note_closed.all()


def test_note_off_must_match_channel_and_track(tmp_path):
    mid = make_midi(
        [
            [
                on(0, 60, ch=0),
                off(10, 60, ch=1),
                off(20, 61, ch=0),
                off(30, 60, ch=0, zero_on=True),
            ],
            [on(0, 62), off(5, 60)],  # a Note Off of pitch 60 in another track closes nothing
        ],
        tpq=96,
        end=[40, 50],
    )
    s = read_midi(reload(mid, tmp_path))
    assert s.note_off.tolist() == [30, 50]  # the unclosed note lasts to its own track's end
    assert s.note_closed.tolist() == [True, False]
    assert s.track_end.tolist() == [40, 50] and s.length_ticks == 50


def test_processing_order_is_track_then_file_order(tmp_path):
    mid = make_midi([[*note(96, 192, 64)], [*note(0, 96, 60), *note(0, 96, 67)]])
    s = read_midi(reload(mid, tmp_path))
    assert s.note_track.tolist() == [0, 1, 1]
    assert s.note_pitch.tolist() == [64, 60, 67]
    notes = s.notes()
    assert notes.pitch.tolist() == [64, 60, 67]


def test_drums_flagged_and_channels_kept(tmp_path):
    mid = make_midi([[*note(0, 96, 36, ch=9), *note(0, 96, 60, ch=3)]])
    n = read_midi(reload(mid, tmp_path)).notes()
    assert n.channel.tolist() == [9, 3]
    assert n.is_drum.tolist() == [True, False]


@pytest.mark.parametrize("tpq", [24, 96, 480, 10080])
def test_tempo_map_seconds_and_quarters_independent_of_resolution(tmp_path, tpq):
    # 2 quarters at 120 bpm (1 s) then 2 quarters at 60 bpm (2 s); a tempo event in track 1 too
    mid = make_midi(
        [
            [
                tempo(0, 500_000),
                tempo(2 * tpq, 1_000_000),
                *note(0, tpq, 60),
                *note(3 * tpq, 4 * tpq, 62),
            ],
            [tempo(4 * tpq, 250_000)],
        ],
        tpq=tpq,
        end=[6 * tpq, 6 * tpq],
    )
    s = read_midi(reload(mid, tmp_path))
    n = s.notes()
    np.testing.assert_allclose(n.start, [0.0, 2.0], atol=1e-12)
    np.testing.assert_allclose(n.end, [0.5, 3.0], atol=1e-12)
    np.testing.assert_allclose(n.duration_quarters, [1.0, 1.0])
    # ticks 4..6 quarters at 250,000 µs/quarter (from track 1): 0.5 s
    assert s.length_seconds == pytest.approx(3.0 + 0.5)
    assert n.length == pytest.approx(3.5)


def test_default_tempo_is_120_bpm(tmp_path):
    s = read_midi(reload(make_midi([note(0, 480, 60)], tpq=480), tmp_path))
    assert s.notes().end[0] == pytest.approx(0.5)


def test_cc7_loudness_rules(tmp_path):
    mid = make_midi(
        [
            [
                cc7(0, 64),
                *note(0, 10, 60, vel=100),  # 100 * 64/127 = 50.39 -> 50
                on(20, 62, 100),
                cc7(20, 127),  # same tick, after the Note On in the file: still applies (2.2)
                off(30, 62),
                *note(40, 50, 64, vel=127, ch=1),  # other channel: no CC7 -> 127
            ]
        ]
    )
    s = read_midi(reload(mid, tmp_path))
    assert s.note_volume().tolist() == [64, 127, 127]
    assert s.loudness().tolist() == [50, 100, 127]
    assert s.notes().loudness.tolist() == [50, 100, 127]


def test_cc7_last_processed_message_wins_across_tracks(tmp_path):
    # track 0 sets volume 100 at tick 50; track 1 (processed later) sets 20 at tick 10, which
    # overwrites every tick from 10 on, including 50 onwards.
    mid = make_midi([[cc7(50, 100), *note(60, 70, 60, vel=127)], [cc7(10, 20)]])
    s = read_midi(reload(mid, tmp_path))
    assert s.note_volume().tolist() == [20]
    assert s.loudness().tolist() == [int(127 * (20 / 127))]


def test_random_files_parse_consistently(tmp_path, rng):
    for k in range(5):
        mid = random_midi(rng, tpq=int(rng.choice([96, 100, 480])))
        s = read_midi(reload(mid, tmp_path, f"r{k}.mid"))
        assert np.all(s.note_off >= s.note_on)
        assert np.all(s.note_off <= s.track_end[s.note_track])
        n = s.notes()
        assert np.all(n.end >= n.start) and len(n) == s.n_notes


def test_read_midi_accepts_mido_objects():
    mid = make_midi([note(0, 96, 60)])
    assert read_midi(mid).n_notes == 1


def test_read_errors(tmp_path):
    with pytest.raises(FileFormatError, match="no such MIDI file"):
        read_midi(tmp_path / "missing.mid")
    empty = tmp_path / "empty.mid"
    empty.write_bytes(b"")
    with pytest.raises(FileFormatError, match="empty file"):
        read_midi(empty)
    bad = tmp_path / "bad.mid"
    bad.write_bytes(b"MThd\x00\x00\x00\x06garbage")
    with pytest.raises(FileFormatError, match="not a readable MIDI file"):
        read_midi(bad)
    with pytest.raises(ParameterError, match="source"):
        read_midi(42)


def test_note_array_validation():
    with pytest.raises(DataError, match="end >= start"):
        NoteArray.from_arrays(start=[0.0, 1.0], end=[1.0, 0.5], pitch=[60, 61])
    with pytest.raises(DataError, match="pitch"):
        NoteArray.from_arrays(start=[0.0], end=[1.0], pitch=[128])
    with pytest.raises(DataError, match="shape"):
        NoteArray.from_arrays(start=[0.0], end=[1.0], pitch=[60, 61])
    with pytest.raises(DataError, match="finite"):
        NoteArray.from_arrays(start=[np.nan], end=[1.0], pitch=[60])
    n = NoteArray.from_arrays(start=[0.0], end=[1.0], pitch=[60], channel=[9])
    assert n.is_drum.tolist() == [True] and n.loudness.tolist() == [64]
