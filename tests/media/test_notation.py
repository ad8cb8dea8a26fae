"""Engraved excerpts: MusicXML quantised to the beat grid, rendered by verovio, sanitised."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from aria_tda.errors import DataError, ParameterError
from aria_tda.media import notation
from aria_tda.media.notation import (
    assign_staves,
    assign_staves_reference,
    notation_svg,
    notation_unavailable_reason,
    quantise_onsets,
    quantise_onsets_reference,
    sanitize_svg,
    split_steps,
)
from aria_tda.media.theory import BeatGrid

NS = "{http://www.w3.org/2000/svg}"
COLUMNS = ["pitch", "start", "end", "velocity", "program", "is_drum", "channel", "track"]
SCALE = [60, 62, 64, 65, 67, 69, 71, 72]


def _midi_notes(tmp_path, notes, *, tempo=120.0, drums=()):
    """Write ``(pitch, beat, beats)`` notes as a real MIDI file and read the table back."""
    pretty_midi = pytest.importorskip("pretty_midi")
    spb = 60.0 / tempo
    pm = pretty_midi.PrettyMIDI(initial_tempo=tempo)
    piano = pretty_midi.Instrument(program=0)
    piano.notes = [pretty_midi.Note(80, p, b * spb, (b + d) * spb) for p, b, d in notes]
    pm.instruments.append(piano)
    if drums:
        kit = pretty_midi.Instrument(program=0, is_drum=True)
        kit.notes = [pretty_midi.Note(100, p, b * spb, b * spb + 0.05) for p, b in drums]
        pm.instruments.append(kit)
    path = tmp_path / "excerpt.mid"
    pm.write(str(path))
    back = pretty_midi.PrettyMIDI(str(path))
    rows = [(n.pitch, n.start, n.end, n.velocity, i.program, i.is_drum, 9 if i.is_drum else k, k)
            for k, i in enumerate(back.instruments) for n in i.notes]
    return pd.DataFrame(rows, columns=COLUMNS).sort_values(["start", "pitch"], ignore_index=True)


def _grid(beat, n, *, per_bar=4, first_bar=1, t0=0.0):
    beats = t0 + beat * np.arange(n)
    return BeatGrid(beats=beats, downbeats=beats[::per_bar], meter=f"{per_bar}/4",
                    first_bar=first_bar)


def _count(svg, cls):
    return len(re.findall(rf'class="{cls}"', svg))


needs_verovio = pytest.mark.skipif(notation_unavailable_reason() is not None,
                                   reason="verovio (report extra) is not installed")


def test_quantise_onsets_matches_its_reference(rng):
    for _ in range(40):
        beats = np.cumsum(rng.uniform(0.3, 0.9, int(rng.integers(2, 20)))) - 1.0
        times = rng.uniform(beats[0] - 2.0, beats[-1] + 2.0, 50)
        times[:5] = beats[: min(5, beats.size)].repeat(5)[:5]  # exactly on beats
        spb = int(rng.choice([2, 4, 8]))
        np.testing.assert_array_equal(
            quantise_onsets(times, beats, steps_per_beat=spb),
            quantise_onsets_reference(times, beats, steps_per_beat=spb),
        )


def test_quantise_onsets_follows_a_changing_tempo():
    beats = np.array([0.0, 0.5, 1.0, 1.6, 2.2, 3.0])  # 120 BPM, then 100, then 75
    times = np.array([0.0, 0.25, 1.3, 1.6 + 0.15, 2.6, 3.2, -0.125])
    want = [0, 2, 10, 13, 18, 21, -1]  # in sixteenths of the local beat
    assert quantise_onsets(times, beats).tolist() == want


def test_assign_staves_splits_at_middle_c_and_matches_its_reference(rng):
    p = rng.integers(0, 128, 500)
    got = assign_staves(p)
    np.testing.assert_array_equal(got, assign_staves_reference(p))
    assert got[p == 60].tolist() == [1] * int((p == 60).sum())
    assert set(got[p < 60].tolist()) <= {2} and set(got[p >= 60].tolist()) <= {1}


def test_split_steps_writes_every_length_as_tied_note_values():
    for n in range(0, 49):
        pieces = split_steps(n)
        assert sum(pieces) == n
        assert set(pieces) <= {1, 2, 3, 4, 6, 8, 12, 16}
        assert pieces == sorted(pieces, reverse=True)
    assert split_steps(4) == [4] and split_steps(6) == [6] and split_steps(5) == [4, 1]


@needs_verovio
def test_two_bars_of_a_c_major_scale_engrave_as_eight_notes_in_two_measures(tmp_path):
    notes = _midi_notes(tmp_path, [(p, k, 1) for k, p in enumerate(SCALE)])
    svg = notation_svg(notes, start=0.0, end=4.0, grid=_grid(0.5, 12), title="C major <scale>")
    assert svg is not None
    root = ET.fromstring(svg)  # well-formed
    assert root.tag == f"{NS}svg" and root.get("role") == "img"
    assert root.find(f"{NS}title").text == "C major <scale>"
    assert "bars 1-2" in root.find(f"{NS}desc").text
    assert _count(svg, "note") == 8 and _count(svg, "measure") == 2
    assert _count(svg, "staff") == 2  # one (treble) staff in each measure
    assert _count(svg, "rest") == 0 and _count(svg, "accid") == 0
    assert set(re.findall(r"https?://[^\s\"'<>)]*", svg)) == {"http://www.w3.org/2000/svg"}
    for el in root.iter():
        assert el.tag.split("}")[-1] not in ("script", "style", "foreignObject", "image")
        href = el.get("href")
        assert href is None or href.startswith("#")
        assert not [a for a in el.attrib if a.lower().startswith("on")]


@needs_verovio
def test_a_grid_sets_the_bars_the_meter_and_the_bar_numbers(tmp_path):
    # a waltz at 100 BPM from bar 7: six quarter notes = two bars of 3/4, starting at 1.2 s
    notes = _midi_notes(tmp_path, [(p, 2 + k, 1) for k, p in enumerate(SCALE[:6])], tempo=100)
    grid = _grid(0.6, 14, per_bar=3, first_bar=6, t0=-0.6)  # bar 6 starts at -0.6 s
    svg = notation_svg(notes, start=1.2, end=4.8, grid=grid)
    assert _count(svg, "note") == 6 and _count(svg, "measure") == 2
    numbers = re.findall(r'class="mNum[^"]*"[^>]*>(.*?)</g>', svg, flags=re.S)
    assert any(">7<" in t for t in numbers)  # the first bar shown is the grid's bar 7
    assert ET.fromstring(svg).find(f"{NS}desc").text.startswith("bars 7-8 in 3/4 at about 100")


@needs_verovio
def test_low_notes_go_to_a_bass_staff_and_drums_are_dropped(tmp_path):
    melody = [(p, k, 1) for k, p in enumerate(SCALE[:4])]
    bass = [(48, 0, 2), (43, 2, 2)]  # C3 and G2 half notes
    notes = _midi_notes(tmp_path, melody + bass, drums=[(36, 0), (38, 1), (42, 2.5)])
    svg = notation_svg(notes, start=0.0, end=2.0)  # no grid: 120 BPM, 4/4 from start
    assert _count(svg, "note") == 6  # 4 + 2 pitched notes; 3 drum hits dropped
    assert _count(svg, "measure") == 1 and _count(svg, "staff") == 2
    assert _count(svg, "clef") == 2


@needs_verovio
def test_long_notes_are_tied_and_held_notes_start_at_the_first_bar_line(tmp_path):
    # a note of 5 beats (a whole tied to a quarter over the bar line) and one held in from
    # before the excerpt
    notes = _midi_notes(tmp_path, [(67, 0, 6), (72, 4, 5)])
    svg = notation_svg(notes, start=2.0, end=6.0, grid=_grid(0.5, 20))  # bars 2-3
    assert _count(svg, "measure") == 2
    # bar 2: G4 (held in) + C5 as a half-note chord, C5 tied on as a half note; bar 3: C5 tied
    # over the bar line as a quarter note, then a dotted half rest
    assert _count(svg, "note") == 4 and _count(svg, "tie") == 2
    assert _count(svg, "rest") == 1 and _count(svg, "dots") == 1


def test_unavailable_without_verovio(monkeypatch, tmp_path):
    notes = _midi_notes(tmp_path, [(60, 0, 1)])
    monkeypatch.setattr(notation, "is_installed", lambda name: False)
    assert "verovio" in notation_unavailable_reason()
    assert "aria-tda[report]" in notation_unavailable_reason()
    assert notation_svg(notes, start=0.0, end=1.0) is None


@needs_verovio
def test_notation_rejects_bad_input(tmp_path):
    notes = _midi_notes(tmp_path, [(60, 0, 1)])
    with pytest.raises(ParameterError, match="end: expected a time after start"):
        notation_svg(notes, start=2.0, end=1.0)
    with pytest.raises(ParameterError, match="end: expected at most 12 bars"):
        notation_svg(notes, start=0.0, end=60.0)
    with pytest.raises(ParameterError, match="key_fifths"):
        notation_svg(notes, start=0.0, end=1.0, key_fifths=9)
    with pytest.raises(ParameterError, match="meter"):
        notation_svg(notes, start=0.0, end=1.0, meter="four")
    with pytest.raises(ParameterError, match="grid: expected an object with beats"):
        notation_svg(notes, start=0.0, end=1.0, grid=SimpleNamespace(beats=[0.0]))
    with pytest.raises(DataError, match="notes"):
        notation_svg(notes.drop(columns="pitch"), start=0.0, end=1.0)


def test_sanitize_svg_strips_scripts_styles_and_external_references():
    dirty = (
        '<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" '
        'onload="alert(1)"><style>path {stroke: red}</style><script>alert(2)</script>'
        '<defs><path id="g" d="M0 0L1 1"/></defs><use href="#g"/>'
        '<use xlink:href="http://evil.example/x.svg#g"/><image href="http://evil.example/a.png"/>'
        '<rect width="1" height="1" fill="url(http://evil.example/p)"/>'
        '<g class="placeholder"><ellipse rx="1" ry="1"/></g></svg>'
    )
    clean = sanitize_svg(dirty, title="t <x>", desc="d")
    root = ET.fromstring(clean)
    assert "evil" not in clean and "alert" not in clean and "<style" not in clean
    assert root.get("aria-label") == "t <x>" and root.find(f"{NS}title").text == "t <x>"
    assert [u.get("href") for u in root.iter(f"{NS}use")] == ["#g", None]
    assert root.find(f"{NS}rect").get("fill") is None
    assert root.find(f"{NS}rect").get("stroke") == "currentColor"  # the style rule, inlined
    assert root.find(f"{NS}g").get("visibility") == "hidden"
    with pytest.raises(DataError, match="svg"):
        sanitize_svg("<svg", title="t", desc="d")
