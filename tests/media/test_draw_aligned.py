"""Aligned views: query and item on one time axis, with bars, beats, boundary and highlights."""

from __future__ import annotations

import io
import xml.etree.ElementTree as ET
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from aria_tda.errors import DataError, ParameterError
from aria_tda.media.draw_aligned import (
    aligned_audio_png,
    aligned_roll_svg,
    grid_marks,
    grid_marks_reference,
)
from aria_tda.media.theory import BeatGrid

NS = "{http://www.w3.org/2000/svg}"
COLUMNS = ["pitch", "start", "end", "velocity", "program", "is_drum", "channel", "track"]
LEFT, RIGHT = 64.0, 16.0  # the plot margins of aligned_roll_svg
BEAT = 0.6  # 100 beats per minute


def _midi_notes(tmp_path, name, melody, *, tempo=100.0, offset=0.0, drums=()):
    """Write a real MIDI file (pretty_midi), read it back, return the listening-room table."""
    pretty_midi = pytest.importorskip("pretty_midi")
    pm = pretty_midi.PrettyMIDI(initial_tempo=tempo)
    piano = pretty_midi.Instrument(program=0, name="piano")
    for pitch, beat, beats in melody:
        t0 = offset + beat * 60.0 / tempo
        piano.notes.append(pretty_midi.Note(90, pitch, t0, t0 + beats * 60.0 / tempo))
    pm.instruments.append(piano)
    if drums:
        kit = pretty_midi.Instrument(program=0, is_drum=True, name="drums")
        for pitch, beat in drums:
            t0 = offset + beat * 60.0 / tempo
            kit.notes.append(pretty_midi.Note(110, pitch, t0, t0 + 0.05))
        pm.instruments.append(kit)
    path = tmp_path / f"{name}.mid"
    pm.write(str(path))
    back = pretty_midi.PrettyMIDI(str(path))
    rows = [
        (n.pitch, n.start, n.end, n.velocity, inst.program, inst.is_drum,
         9 if inst.is_drum else k, k)
        for k, inst in enumerate(back.instruments)
        for n in inst.notes
    ]
    return pd.DataFrame(rows, columns=COLUMNS).sort_values(["start", "pitch"], ignore_index=True)


MOTIF = [(60, 0, 1), (62, 1, 1), (64, 2, 1), (65, 3, 1), (67, 4, 2), (64, 6, 1), (60, 7, 1)]


def _grid(first_beat, n, *, first_bar=1, per_bar=4):
    beats = first_beat + BEAT * np.arange(n)
    return BeatGrid(beats=beats, downbeats=beats[::per_bar], meter=f"{per_bar}/4",
                    first_bar=first_bar)


def _lane(root, k):
    return next(g for g in root.iter(f"{NS}g") if g.get("class") == "lane"
                and g.get("data-lane") == str(k))


def _rects(lane):
    notes = next(g for g in lane.iter(f"{NS}g") if g.get("class") == "notes")
    return [r for g in notes for r in g]


def _px(off, dur, width):
    return LEFT + off / dur * (width - LEFT - RIGHT)


def test_grid_marks_matches_its_reference(rng):
    for _ in range(60):
        n = int(rng.integers(0, 30))
        beats = np.sort(rng.uniform(-2.0, 12.0, n))
        down = beats[:: int(rng.integers(2, 5))] if n else beats
        if rng.random() < 0.5:  # downbeats that are not exactly beats, and duplicates
            down = np.concatenate([down + rng.normal(0, 2e-3, down.size), down[:1]])
        kw = {"start": float(rng.uniform(-1, 4)), "duration": float(rng.uniform(0.5, 8)),
              "first_bar": int(rng.integers(-1, 20))}
        for a, b in zip(grid_marks(beats, down, **kw), grid_marks_reference(beats, down, **kw),
                        strict=True):
            np.testing.assert_array_equal(a, b)


def test_grid_marks_number_bars_and_draw_each_line_once():
    g = _grid(0.0, 17, first_bar=5)
    off, is_bar, bar = grid_marks(g.beats, g.downbeats, start=1.0, duration=6.0, first_bar=5)
    # beats at 1.2, 1.8, ... 6.6 s; bars start at 2.4 (bar 6) and 4.8 (bar 7)
    np.testing.assert_allclose(off, BEAT * np.arange(2, 12) - 1.0)
    assert off[is_bar].tolist() == pytest.approx([1.4, 3.8])
    assert bar[is_bar].tolist() == [6, 7]
    assert np.all(bar[~is_bar] == 0)


def test_lanes_share_one_axis_from_the_matched_positions(tmp_path):
    query = _midi_notes(tmp_path, "q", MOTIF)
    item = _midi_notes(tmp_path, "i", MOTIF, offset=2.5)  # the same motif 2.5 s later
    dur, width = 5.0, 1200
    svg = aligned_roll_svg(query, item, query_start=0.0, item_start=2.5, duration=dur,
                           width=width)
    root = ET.fromstring(svg)
    xq, xi = (np.array(sorted((float(r.get("x")), float(r.get("width")), float(r.get("height")))
                              for r in _rects(_lane(root, k)))) for k in (0, 1))
    assert len(xq) == len(MOTIF) and xq.shape == xi.shape
    np.testing.assert_allclose(xq, xi, atol=0.21)  # same x for the same offset (0.1 px grid)
    first = min(float(r.get("x")) for r in _rects(_lane(root, 0)))
    assert first == pytest.approx(_px(0.0, dur, width), abs=0.06)


def test_grid_lines_land_at_the_beats_of_a_known_tempo(tmp_path):
    notes = _midi_notes(tmp_path, "q", MOTIF, offset=0.3)
    dur, width, start = 4.0, 1000, 0.3
    svg = aligned_roll_svg(notes, notes, query_start=start, item_start=start, duration=dur,
                           query_grid=_grid(0.3, 12, first_bar=9), item_grid=None, width=width)
    lane = _lane(ET.fromstring(svg), 0)
    grid = next(g for g in lane.iter(f"{NS}g") if g.get("class") == "grid")
    lines = grid.findall(f"{NS}line")
    bars = [ln for ln in lines if ln.get("class") == "bar"]
    beats = [ln for ln in lines if ln.get("class") == "beat"]
    want = [_px(k * BEAT, dur, width) for k in range(7)]  # 0.3 .. 3.9 s, every 0.6 s
    got = sorted(float(ln.get("x1")) for ln in lines)
    np.testing.assert_allclose(got, want, atol=0.06)
    assert [float(b.get("x1")) for b in bars] == pytest.approx(
        [_px(0.0, dur, width), _px(4 * BEAT, dur, width)], abs=0.06)
    assert float(bars[0].get("stroke-width")) > float(beats[0].get("stroke-width"))
    numbers = [t.text for t in grid.iter(f"{NS}text") if t.get("class") == "bar-number"]
    assert numbers == ["9", "10"]
    item_lane = _lane(ET.fromstring(svg), 1)
    assert not [g for g in item_lane.iter(f"{NS}g") if g.get("class") == "grid"]


def test_boundary_line_is_drawn_only_inside_the_view(tmp_path):
    notes = _midi_notes(tmp_path, "q", MOTIF)
    kw = {"query_start": 1.0, "item_start": 0.0, "duration": 3.0, "width": 900}
    inside = ET.fromstring(aligned_roll_svg(notes, notes, boundary=2.5, **kw))
    marks = [g for g in inside.iter(f"{NS}g") if g.get("class") == "boundary"]
    assert len(marks) == 1
    assert float(marks[0].find(f"{NS}line").get("x1")) == pytest.approx(_px(1.5, 3.0, 900),
                                                                        abs=0.06)
    assert "prompt | generated" in [t.text for t in marks[0].iter(f"{NS}text")]
    assert marks[0] in list(_lane(inside, 0).iter(f"{NS}g"))  # in the query's lane
    for outside in (0.5, 4.5, None):
        root = ET.fromstring(aligned_roll_svg(notes, notes, boundary=outside, **kw))
        assert not [g for g in root.iter(f"{NS}g") if g.get("class") == "boundary"]


def test_highlights_go_to_their_lane_and_labels_are_escaped(tmp_path):
    notes = _midi_notes(tmp_path, "q", MOTIF)
    evil = '<script>alert("x")</script> & co'
    svg = aligned_roll_svg(notes, notes, query_start=0.0, item_start=1.0, duration=4.0,
                           highlights=[("item", 1.6, 3.4, evil), (0, -1.0, 0.5, "1: melody"),
                                       (0, 9.0, 10.0, "out of view")],
                           labels=("query <q>", "item & co"), width=800)
    assert "<script" not in svg and " style=" not in svg
    root = ET.fromstring(svg)
    bands = {k: [g for g in _lane(root, k).iter(f"{NS}g") if g.get("class") == "highlight"]
             for k in (0, 1)}
    assert [b.find(f"{NS}text").text for b in bands[1]] == [evil]
    assert [b.find(f"{NS}text").text for b in bands[0]] == ["1: melody"]
    r = bands[1][0].find(f"{NS}rect")
    assert float(r.get("x")) == pytest.approx(_px(0.6, 4.0, 800), abs=0.06)
    assert float(r.get("width")) == pytest.approx(_px(2.4, 4.0, 800) - _px(0.6, 4.0, 800),
                                                  abs=0.1)
    q = bands[0][0].find(f"{NS}rect")  # clipped to the view's start
    assert float(q.get("x")) == pytest.approx(LEFT, abs=0.06)
    assert root.get("role") == "img" and root.find(f"{NS}title") is not None
    assert "item & co" in root.find(f"{NS}desc").text


def test_drums_get_their_own_strip_not_the_pitch_axis(tmp_path):
    notes = _midi_notes(tmp_path, "q", MOTIF, drums=[(36, 0), (38, 1), (42, 2.5)])
    svg = aligned_roll_svg(notes, notes, query_start=0.0, item_start=0.0, duration=5.0)
    lane = _lane(ET.fromstring(svg), 0)
    assert len(_rects(lane)) == len(MOTIF)  # only the pitched notes are on the roll
    strip = next(g for g in lane.iter(f"{NS}g") if g.get("class") == "drums")
    ticks = strip.findall(f"{NS}line")
    assert len(ticks) == 3
    assert sorted(float(t.get("x1")) for t in ticks) == pytest.approx(
        [_px(b * BEAT, 5.0, 1200) for b in (0, 1, 2.5)], abs=0.06)


def test_aligned_roll_rejects_bad_input(tmp_path):
    notes = _midi_notes(tmp_path, "q", MOTIF)
    kw = {"query_start": 0.0, "item_start": 0.0, "duration": 2.0}
    with pytest.raises(ParameterError, match="duration: expected positive finite seconds"):
        aligned_roll_svg(notes, notes, **{**kw, "duration": 0.0})
    with pytest.raises(ParameterError, match=r"highlights\[0\]\.lane"):
        aligned_roll_svg(notes, notes, highlights=[(2, 0.0, 1.0, "x")], **kw)
    with pytest.raises(ParameterError, match="query_grid: expected an object with beats"):
        aligned_roll_svg(notes, notes, query_grid=[0.0, 0.5], **kw)
    with pytest.raises(DataError, match="item_notes"):
        aligned_roll_svg(notes, notes.drop(columns="end"), **kw)
    with pytest.raises(ParameterError, match="item_start"):
        aligned_roll_svg(notes, notes, **{**kw, "item_start": float("nan")})


def _tones(sr, seconds, tempo, roots):
    """Additive chords (one per bar of 4 beats) over a click on every beat."""
    t = np.arange(int(sr * seconds)) / sr
    beat = 60.0 / tempo
    y = np.zeros_like(t)
    for k, root in enumerate(roots):
        on = (t >= 4 * k * beat) & (t < 4 * (k + 1) * beat)
        for semis in (0, 4, 7):
            f = 220.0 * 2 ** ((root + semis) / 12)
            y[on] += 0.15 * np.sin(2 * np.pi * f * t[on])
    clicks = (np.arange(0, seconds, beat) * sr).astype(int)
    for c in clicks:
        y[c : c + 200] += 0.5 * np.exp(-np.arange(min(200, y.size - c)) / 30.0)
    return y.astype(np.float32)


def _decode(png):
    from PIL import Image

    with Image.open(io.BytesIO(png)) as im:
        return np.asarray(im.convert("RGB")).astype(float)


@pytest.mark.slow  # librosa's CQT compiles its kernels on first use; three pictures
def test_aligned_audio_png_has_the_size_asked_and_marks_the_item_lane():
    pytest.importorskip("matplotlib")
    pytest.importorskip("librosa")
    sr = 22050
    q, it = _tones(sr, 6.0, 100, [0, 5, 7]), _tones(sr, 9.0, 100, [2, 7, 9, 2])
    chords = [SimpleNamespace(start=0.0, end=2.4, label="A:maj", confidence=0.9),
              SimpleNamespace(start=2.4, end=4.8, label="D:maj", confidence=0.2)]
    kw = {"query_start": 0.0, "item_start": 2.0, "duration": 4.0,
          "query_grid": _grid(0.0, 10), "item_grid": _grid(0.0, 15, first_bar=3),
          "boundary": 1.2, "query_chords": chords, "item_chords": [(2.4, 4.8, "D:maj", 0.8)],
          "width": 1000, "height": 600}
    plain = aligned_audio_png(q, sr, it, sr, **kw)
    assert plain.startswith(b"\x89PNG\r\n\x1a\n")
    img = _decode(plain)
    assert img.shape == (600, 1000, 3) and img.std() > 20
    marked = _decode(aligned_audio_png(q, sr, it, sr, highlights=[(1, 3.0, 5.0, "1: harmony")],
                                       **kw))
    # the palette (median cut) shifts every colour a little; the band changes pixels a lot
    changed = (np.abs(marked - img).max(axis=2) > 60).sum(axis=1)
    rows = np.flatnonzero(changed > 5)
    upper, lower = rows[rows < 300], rows[rows >= 300]
    assert lower.size > 100 and upper.size <= 5  # the item's (lower) half changed, not the query
    assert img[: 600 // 2].std() > 20 and img[600 // 2 :].std() > 20  # both lanes are drawn


def test_aligned_audio_png_rejects_bad_input():
    y = np.zeros(22050, dtype=np.float32)
    kw = {"query_start": 0.0, "item_start": 0.0, "duration": 1.0}
    with pytest.raises(DataError, match="item_samples"):
        aligned_audio_png(y, 22050, np.zeros((2, 10)), 22050, **kw)
    with pytest.raises(ParameterError, match="query_sr"):
        aligned_audio_png(y, 100, y, 22050, **kw)
    with pytest.raises(ParameterError, match="item_chords\\[0\\]"):
        aligned_audio_png(y, 22050, y, 22050, item_chords=["C"], **kw)
    with pytest.raises(ParameterError, match="height"):
        aligned_audio_png(y, 22050, y, 22050, height=50, **kw)
