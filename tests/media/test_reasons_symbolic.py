"""Musical reasons in MIDI: facts of one excerpt and the material two share, on real MIDI files
written here with mido."""

from __future__ import annotations

import mido
import numpy as np
import pandas as pd
import pytest

from aria_tda.errors import DataError, ParameterError
from aria_tda.media.reasons_symbolic import (
    GM_PROGRAMS,
    MIN_TOKENS,
    PieceFacts,
    SharedMaterial,
    piece_facts,
    shared_material,
)

TUNE = [(0, 1, 60), (1, 0.5, 62), (1.5, 0.5, 64), (2, 1, 65), (3, 1, 67), (4, 0.5, 69),
        (4.5, 0.5, 67), (5, 1, 64), (6, 2, 60)]  # fmt: skip


def write_midi(path, parts, *, bpm=120.0, ts=(4, 4), tpq=480):
    """Write a MIDI file and return its notes table (seconds).

    parts: list of (program, channel, [(start_quarter, duration_quarters, pitch), ...]), one
    track each; channel 9 is drums.
    """
    mid = mido.MidiFile(ticks_per_beat=tpq)
    meta = mido.MidiTrack()
    meta.append(mido.MetaMessage("set_tempo", tempo=mido.bpm2tempo(bpm), time=0))
    meta.append(mido.MetaMessage("time_signature", numerator=ts[0], denominator=ts[1], time=0))
    mid.tracks.append(meta)
    rows = []
    for ti, (program, channel, notes) in enumerate(parts, start=1):
        events = [(0, 0, mido.Message("program_change", program=program, channel=channel))]
        for s, d, p in notes:
            events.append((round(s * tpq), 1, mido.Message("note_on", note=p, velocity=80,
                                                           channel=channel)))
            events.append((round((s + d) * tpq), 0, mido.Message("note_off", note=p, velocity=0,
                                                                 channel=channel)))
            rows.append((p, s * 60 / bpm, (s + d) * 60 / bpm, program, channel == 9, channel, ti))
        track = mido.MidiTrack()
        last = 0
        for tick, _, msg in sorted(events, key=lambda e: (e[0], e[1])):
            track.append(msg.copy(time=tick - last))
            last = tick
        mid.tracks.append(track)
    mid.save(str(path))
    table = pd.DataFrame(rows, columns=["pitch", "start", "end", "program", "is_drum", "channel",
                                        "track"])
    table.insert(3, "velocity", 80)
    return table.sort_values(["start", "pitch"], kind="stable").reset_index(drop=True)


def filler(n_quarters, low, rng, start=0.0):
    """A random line of eighths, quarters and dotted quarters."""
    out, t = [], 0.0
    while t < n_quarters:
        d = float(rng.choice([0.5, 1.0, 1.5]))
        out.append((start + t, d, int(rng.integers(low, low + 12))))
        t += d
    return out


def shifted(notes, quarters, semitones=0):
    return [(s + quarters, d, p + semitones) for s, d, p in notes]


def one(material, kind):
    found = [m for m in material if m.kind == kind]
    assert found, f"no {kind} entry"
    return found[0]


def test_transposed_melody_found_at_its_bars(tmp_path, rng):
    """The tune at bar 3 of the query (120 BPM) and transposed up 2 at bar 12 of the item
    (90 BPM, violin) is found with those positions in both."""
    q_notes = filler(8, 48, rng) + shifted(TUNE, 8) + filler(8, 50, rng, 16)
    i_notes = filler(44, 55, rng) + shifted(TUNE, 44, 2) + filler(8, 53, rng, 52)
    q = write_midi(tmp_path / "q.mid", [(0, 0, q_notes)])
    i = write_midi(tmp_path / "i.mid", [(40, 0, i_notes)], bpm=90.0)
    qf = piece_facts(q, midi_path=tmp_path / "q.mid")
    itf = piece_facts(i, midi_path=tmp_path / "i.mid")
    assert (qf.meter, qf.tempo_bpm, qf.instruments) == ("4/4", pytest.approx(120.0), (
        "Acoustic Grand Piano",))
    assert itf.instruments == ("Violin",) and itf.tempo_bpm == pytest.approx(90.0)
    shared = shared_material(q, i, qf, itf)
    mel = one(shared, "melody")
    assert mel.informative and mel.caveat == ""
    assert (mel.query_at, mel.item_at) == ("bar 3, beat 1", "bar 12, beat 1")
    assert mel.query_time == pytest.approx(4.0) and mel.item_time == pytest.approx(44 * 60 / 90)
    assert mel.length >= len(TUNE)
    assert mel.content.startswith("+2 +2 +1 +2 +2 -2 -3 -4") and "semitones" in mel.content
    assert "transposed up 2 semitones" in mel.sentence and "bar 12, beat 1" in mel.sentence
    assert mel.p_value is not None and mel.p_value < 0.05
    rhythm = one(shared, "rhythm")
    assert rhythm.informative and "q e e q q e e q h" in rhythm.content
    assert rhythm.query_time <= 4.0 and rhythm.query_end >= 8.0  # it covers the tune
    assert "q = quarter" in rhythm.content


def _chords(progression, tonic, quarters_each=4):
    """Block chords (bass + close triad) of (degree semitones, quality) pairs."""
    steps = {"maj": (0, 4, 7), "min": (0, 3, 7), "dom7": (0, 4, 7, 10)}
    out = []
    for k, (deg, quality) in enumerate(progression):
        root = 48 + (tonic + deg) % 12
        out.append((k * quarters_each, quarters_each, root - 12))
        out += [(k * quarters_each, quarters_each, root + s) for s in steps[quality]]
    return out


def test_progression_in_c_and_d_reads_the_same(tmp_path):
    progression = [(0, "maj"), (5, "maj"), (7, "maj"), (0, "maj")]
    q = write_midi(tmp_path / "c.mid", [(0, 0, _chords(progression, 0))])
    i = write_midi(tmp_path / "d.mid", [(0, 0, _chords(progression, 2))], bpm=100.0)
    qf = piece_facts(q, midi_path=tmp_path / "c.mid")
    itf = piece_facts(i, midi_path=tmp_path / "d.mid")
    assert qf.key.name == "C major" and itf.key.name == "D major"
    h = one(shared_material(q, i, qf, itf, channels=("harmony",)), "harmony")
    assert h.content == "I - IV - V - I" and h.length == 4
    assert (h.query_at, h.item_at) == ("bar 1, beat 1", "bar 1, beat 1")
    assert "(C - F - G - C)" in h.sentence and "(D - G - A - D)" in h.sentence
    assert h.item_end == pytest.approx(16 * 0.6)
    # four chords of three kinds: order-shuffled copies share as long a run too often
    assert not h.informative and "chance" in h.caveat


def test_longer_progression_is_informative(tmp_path):
    progression = [(0, "maj"), (9, "min"), (5, "maj"), (7, "dom7"), (0, "maj"), (2, "min"),
                   (4, "min"), (5, "maj"), (7, "maj"), (0, "maj")]
    q = write_midi(tmp_path / "c.mid", [(0, 0, _chords(progression, 0))])
    i = write_midi(tmp_path / "d.mid", [(0, 0, _chords(progression, 7, 3))], ts=(3, 4))
    qf = piece_facts(q, midi_path=tmp_path / "c.mid")
    itf = piece_facts(i, midi_path=tmp_path / "d.mid")
    h = one(shared_material(q, i, qf, itf, channels=("harmony",)), "harmony")
    assert h.content == "I - vi - IV - V7 - I - ii - iii - IV - V - I"
    assert h.informative and h.p_value < 0.05
    assert "G major" in h.sentence and h.item_at == "bar 1, beat 1"


def test_three_four_and_six_eight(tmp_path, rng):
    notes = filler(24, 60, rng)
    waltz = write_midi(tmp_path / "w.mid", [(0, 0, notes)], ts=(3, 4))
    f = piece_facts(waltz, midi_path=tmp_path / "w.mid")
    assert f.meter == "3/4" and f.describe().split(", ")[1] == "3/4"
    assert f.grid.position(7 * 0.5) == "bar 3, beat 2"  # the 8th quarter
    jig = write_midi(tmp_path / "j.mid", [(0, 0, notes)], ts=(6, 8))
    g = piece_facts(jig, midi_path=tmp_path / "j.mid")
    assert g.meter == "6/8" and g.tempo_bpm == pytest.approx(120.0)
    assert g.grid.position(3.5 * 0.5) == "bar 2, beat 2"  # 7 eighths in: bar 2, eighth 2


@pytest.mark.parametrize(("tonic", "mode", "name"), [
    (2, "minor", "D minor"), (10, "major", "Bb major"), (4, "major", "E major"),
    (9, "minor", "A minor")])  # fmt: skip
def test_keys_of_scale_excerpts(tmp_path, tonic, mode, name):
    scale = (0, 2, 4, 5, 7, 9, 11, 12) if mode == "major" else (0, 2, 3, 5, 7, 8, 11, 12)
    line = [*scale, *scale[::-1]]
    notes = [(k * 0.5, 0.5 if s % 12 else 1.5, 60 + tonic + s) for k, s in enumerate(line)]
    third = 4 if mode == "major" else 3
    notes += [(0.0, 8.0, 48 + tonic + s) for s in (0, third, 7)]  # the tonic triad, held
    table = write_midi(tmp_path / "s.mid", [(0, 0, notes)])
    f = piece_facts(table, midi_path=tmp_path / "s.mid")
    assert f.key is not None and f.key.name == name
    assert f.describe().startswith(f"{name} (r = ")


def test_constant_material_is_flagged(tmp_path):
    """Both excerpts repeat one note in even quarters: runs are shared, and flagged."""
    q = write_midi(tmp_path / "q.mid", [(0, 0, [(k, 1, 64) for k in range(16)])])
    i = write_midi(tmp_path / "i.mid", [(0, 0, [(k, 1, 67) for k in range(16)])], bpm=80.0)
    qf = piece_facts(q, midi_path=tmp_path / "q.mid")
    itf = piece_facts(i, midi_path=tmp_path / "i.mid")
    shared = shared_material(q, i, qf, itf)
    mel, rhythm = one(shared, "melody"), one(shared, "rhythm")
    assert mel.length == 16 and not mel.informative and "repeats one note" in mel.caveat
    assert not rhythm.informative and "even pulse" in rhythm.caveat
    assert not any(m.informative for m in shared)


def test_a_shared_scale_fragment_is_flagged(tmp_path, rng):
    scale = [(k * 0.5, 0.5, p) for k, p in enumerate((72, 71, 69, 67, 65, 64, 62, 60, 59, 57, 69))]
    q = write_midi(tmp_path / "q.mid", [(0, 0, filler(8, 50, rng) + shifted(scale, 8))])
    i = write_midi(tmp_path / "i.mid", [(0, 0, shifted(scale, 4, 7) + filler(8, 50, rng, 10))])
    qf = piece_facts(q, midi_path=tmp_path / "q.mid")
    itf = piece_facts(i, midi_path=tmp_path / "i.mid")
    mel = one(shared_material(q, i, qf, itf, channels=("melody",)), "melody")
    assert mel.length >= 11 and mel.content.startswith("-1 -2 -2 -2 -1 -2 -2 -1 -2 +12")
    assert not mel.informative and "scale fragment" in mel.caveat


def test_too_few_and_nothing_shared(tmp_path):
    q = write_midi(tmp_path / "q.mid", [(0, 0, [(0, 1, 60), (1, 1, 62), (2, 1, 64)])])
    i = write_midi(tmp_path / "i.mid", [(0, 0, [(0, 1, 60), (1, 1, 59), (2, 1, 57)])])
    qf = piece_facts(q, midi_path=tmp_path / "q.mid")
    itf = piece_facts(i, midi_path=tmp_path / "i.mid")
    mel = one(shared_material(q, i, qf, itf, channels=("melody",)), "melody")
    assert mel.length == 0 and not mel.informative and mel.query_at == "whole excerpt"
    assert mel.sentence.startswith("No melodic pattern is shared")
    assert "only 2 melodic intervals" in mel.caveat and MIN_TOKENS > 2
    rhythm = one(shared_material(q, i, qf, itf, channels=("rhythm",)), "rhythm")
    assert not rhythm.informative and "only 2 inter-onset intervals" in rhythm.caveat


def test_window_and_offset_give_file_bars(tmp_path, rng):
    """A clip cut from the file at 3 s, with a window: positions and times are the file's."""
    notes = filler(8, 48, rng) + shifted(TUNE, 8) + filler(8, 50, rng, 16)
    full = write_midi(tmp_path / "q.mid", [(0, 0, notes)])
    offset = 3.0
    clip = full[(full.end > offset) & (full.start < 11.0)].copy()
    clip["start"] = np.maximum(clip.start, offset) - offset
    clip["end"] = np.minimum(clip.end, 11.0) - offset
    qf = piece_facts(clip, midi_path=tmp_path / "q.mid", window=(0.5, 6.0), file_offset=offset)
    assert qf.window == (0.5, 6.0) and qf.file_offset == offset
    assert qf.n_notes < len(clip)
    assert qf.grid.position(4.0) == "bar 3, beat 1"
    other = write_midi(tmp_path / "i.mid", [(0, 0, shifted(TUNE, 2, -5))])
    itf = piece_facts(other, midi_path=tmp_path / "i.mid")
    mel = one(shared_material(clip, other, qf, itf, channels=("melody",)), "melody")
    assert mel.query_at == "bar 3, beat 1" and mel.query_time == pytest.approx(4.0)
    assert mel.item_at == "bar 1, beat 3" and "down 5 semitones" in mel.sentence
    assert mel.query_end == pytest.approx(8.0)


def test_without_a_file_the_meter_is_assumed(rng):
    bpm = 100.0
    bar = [(0, 1), (1, 1), (2, 0.5), (2.5, 0.5), (3, 1)]  # q q e e q
    line = [(4 * b + s, d, int(rng.integers(60, 72))) for b in range(8) for s, d in bar]
    notes = [(s * 0.6, (s + d) * 0.6, p) for s, d, p in line]
    table = pd.DataFrame(notes, columns=["start", "end", "pitch"]).assign(velocity=70)
    f = piece_facts(table)
    assert f.meter == "4/4?" and f.tempo_bpm == pytest.approx(bpm, abs=0.6)
    assert "4/4 (assumed)" in f.describe() and f.grid.first_bar <= 1
    assert f.grid.position(0.0) == "bar 1, beat 1"
    assert f.grid.position(4 * 0.6 + 0.3) == "bar 2, beat 1.5"


def test_instruments_and_drums(tmp_path, rng):
    drums = [(k * 0.5, 0.25, 36 if k % 2 == 0 else 42) for k in range(32)]
    table = write_midi(tmp_path / "band.mid", [
        (0, 0, [(k, 1, 60 + (k % 3) * 4) for k in range(8)]),
        (40, 1, filler(16, 64, rng)), (0, 9, drums)])  # fmt: skip
    f = piece_facts(table, midi_path=tmp_path / "band.mid")
    assert f.instruments[0] == "Drums" and set(f.instruments) == {
        "Drums", "Violin", "Acoustic Grand Piano"}
    assert f.n_notes == len(table) and len(GM_PROGRAMS) == 128
    assert f.describe().endswith("; " + ", ".join(f.instruments))


def test_chance_test_is_seeded(tmp_path, rng):
    q_notes = filler(16, 55, rng) + shifted(TUNE, 16)
    i_notes = shifted(TUNE, 4) + filler(16, 55, rng, 12)
    q = write_midi(tmp_path / "q.mid", [(0, 0, q_notes)])
    i = write_midi(tmp_path / "i.mid", [(0, 0, i_notes)])
    qf = piece_facts(q, midi_path=tmp_path / "q.mid")
    itf = piece_facts(i, midi_path=tmp_path / "i.mid")
    a = shared_material(q, i, qf, itf, seed=3)
    assert a == shared_material(q, i, qf, itf, seed=3)
    assert all(isinstance(m, SharedMaterial) and m.sentence.endswith(".") for m in a)
    assert [m.kind for m in a][:1] == ["melody"] and [m.kind for m in a][-1] == "harmony"


def test_bad_input(tmp_path):
    table = write_midi(tmp_path / "q.mid", [(0, 0, [(0, 1, 60), (1, 1, 62)])])
    f = piece_facts(table, midi_path=tmp_path / "q.mid")
    assert isinstance(f, PieceFacts)
    with pytest.raises(ParameterError, match="query: expected PieceFacts"):
        shared_material(table, table, "facts", f)
    with pytest.raises(ParameterError, match="channels: expected a sequence of melody"):
        shared_material(table, table, f, f, channels=("timbre",))
    with pytest.raises(ParameterError, match="window: expected finite"):
        piece_facts(table, window=(2.0, 1.0))
    with pytest.raises(ParameterError, match="file_offset"):
        piece_facts(table, file_offset=float("nan"))
    with pytest.raises(DataError, match="notes: expected columns"):
        piece_facts(table.drop(columns="pitch"))
    (tmp_path / "bad.mid").write_bytes(b"not midi")
    with pytest.raises(ParameterError, match="midi_path: expected a readable MIDI file"):
        piece_facts(table, midi_path=tmp_path / "bad.mid")
