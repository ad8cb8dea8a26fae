"""Piano rolls (SVG) and audio panels (PNG) of real music: Bach's chorale BWV 66.6."""

from __future__ import annotations

import io
import xml.etree.ElementTree as ET

import numpy as np
import pandas as pd
import pytest

from aria_tda.errors import DataError, ParameterError
from aria_tda.media.draw import audio_panels_png, check_notes, piano_roll_svg
from media._bach import SR, chorale_audio, chorale_notes

NS = "{http://www.w3.org/2000/svg}"
PNG = b"\x89PNG\r\n\x1a\n"


def _lanes(svg: str) -> list[ET.Element]:
    root = ET.fromstring(svg)
    return [g for g in root.iter(f"{NS}g") if g.get("class") == "lane"]


def _note_rects(lane: ET.Element) -> list[ET.Element]:
    return [r for g in lane.findall(f"{NS}g") if g.get("fill-opacity") for r in g]


def test_piano_roll_has_one_lane_per_clip_with_every_visible_note():
    notes = chorale_notes()
    first = notes[notes["start"] < 8.0]
    svg = piano_roll_svg([notes, first], ["whole", "first 8 s"], [(2.0, 6.0), None])
    lanes = _lanes(svg)
    assert [g.get("data-lane") for g in lanes] == ["0", "1"]
    assert len(_note_rects(lanes[0])) == len(notes)
    assert len(_note_rects(lanes[1])) == len(first)
    assert lanes[0].find(f"{NS}g[@class='window']") is not None
    assert lanes[1].find(f"{NS}g[@class='window']") is None  # no window given


def test_piano_roll_lanes_share_the_time_and_pitch_axes():
    notes = chorale_notes()
    lanes = _lanes(piano_roll_svg([notes, notes], ["a", "b"], [None, None]))
    a, b = (_note_rects(g) for g in lanes)
    xa = sorted((r.get("x"), r.get("width")) for r in a)
    xb = sorted((r.get("x"), r.get("width")) for r in b)
    assert xa == xb  # same time scale
    ya = np.array(sorted(float(r.get("y")) for r in a))
    yb = np.array(sorted(float(r.get("y")) for r in b))
    shift = yb - ya
    assert shift.min() > 0 and np.ptp(shift) < 0.2  # same pitch scale, lane b lower down


def test_piano_roll_window_shades_outside_and_marks_edges():
    notes = chorale_notes()
    width = 900
    svg = piano_roll_svg([notes], ["q"], [(3.0, 6.0)], t_range=(0.0, 9.0), width=width)
    win = _lanes(svg)[0].find(f"{NS}g[@class='window']")
    left, right = 48.0, 12.0  # the plot margins
    px = [left + t / 9.0 * (width - left - right) for t in (3.0, 6.0)]
    edges = sorted(float(x.get("x1")) for x in win.findall(f"{NS}line"))
    np.testing.assert_allclose(edges, px, atol=0.06)
    shades = win.findall(f"{NS}rect")
    assert float(shades[0].get("x")) == pytest.approx(left, abs=0.06)
    assert float(shades[0].get("width")) == pytest.approx(px[0] - left, abs=0.1)
    assert float(shades[1].get("x")) == pytest.approx(px[1], abs=0.06)


def test_piano_roll_velocity_is_the_shade():
    notes = pd.DataFrame(
        {"pitch": [60, 64], "start": [0.0, 1.0], "end": [0.5, 1.5], "velocity": [20, 120]}
    )
    lane = _lanes(piano_roll_svg([notes], ["v"], [None]))[0]
    by_x = {}
    for g in lane.findall(f"{NS}g"):
        for r in g:
            by_x[float(r.get("x"))] = float(g.get("fill-opacity"))
    soft, loud = (by_x[x] for x in sorted(by_x))
    assert loud > soft


def test_piano_roll_axes_are_seconds_and_note_names():
    notes = chorale_notes()
    svg = piano_roll_svg([notes], ["q"], [None])
    texts = [t.text for t in ET.fromstring(svg).iter(f"{NS}text")]
    lo, hi = int(notes["pitch"].min()), int(notes["pitch"].max())
    octave_cs = [f"C{p // 12 - 1}" for p in range(lo, hi + 1) if p % 12 == 0]
    assert octave_cs and all(c in texts for c in octave_cs)
    assert "time (s)" in texts
    assert "0" in texts and "18" in texts  # the chorale lasts 18 s


def test_piano_roll_escapes_labels_and_stays_csp_safe():
    evil = '<script>alert("x")</script> & "quoted" \'single\''
    svg = piano_roll_svg([chorale_notes(), None], [evil, "audio"], [None, (1.0, 2.0)])
    root = ET.fromstring(svg)  # parses: nothing unescaped
    assert evil in [t.text for t in root.iter(f"{NS}text")]
    assert not list(root.iter(f"{NS}script")) and not list(root.iter(f"{NS}style"))
    assert " style=" not in svg and "<script" not in svg
    assert "no notes" in svg  # the lane of a clip without notes says so


def test_piano_roll_drums_are_grey_and_left_out_of_the_pitch_range():
    notes = pd.DataFrame(
        {
            "pitch": [60, 67, 36],
            "start": [0.0, 0.5, 0.0],
            "end": [0.5, 1.0, 0.1],
            "velocity": [80, 80, 100],
            "is_drum": [False, False, True],
        }
    )
    svg = piano_roll_svg([notes], ["d"], [None])
    lane = _lanes(svg)[0]
    fills = {g.get("fill") for g in lane.findall(f"{NS}g") if g.get("fill-opacity")}
    assert fills == {"#0072B2"}  # the drum (pitch 36) is below the range of the pitched notes


def test_piano_roll_rejects_bad_input():
    notes = chorale_notes()
    with pytest.raises(ParameterError, match="labels: expected 2 labels"):
        piano_roll_svg([notes, notes], ["one"], [None, None])
    with pytest.raises(ParameterError, match="windows"):
        piano_roll_svg([notes], ["one"], [(3.0, 1.0)])
    with pytest.raises(DataError, match="velocity"):
        piano_roll_svg([notes.drop(columns="velocity")], ["one"], [None])
    with pytest.raises(DataError, match="pitch"):
        check_notes("notes", notes.assign(pitch=200))


def _decode(png: bytes) -> np.ndarray:
    from PIL import Image

    with Image.open(io.BytesIO(png)) as im:
        return np.asarray(im.convert("RGB"))


@pytest.mark.slow  # librosa's CQT compiles its kernels on first use
def test_audio_panels_png_is_a_small_decodable_png():
    pytest.importorskip("matplotlib")
    y = chorale_audio()[: 10 * SR]
    png = audio_panels_png(
        y,
        SR,
        (2.0, 6.0),
        beats=np.arange(0.5, 10.0, 0.5),
        chords=[(0.0, 2.0, "A:maj"), (2.0, 4.0, "E:maj")],
        title="BWV 66.6",
    )
    assert png.startswith(PNG)
    img = _decode(png)
    assert img.shape == (420, 900, 3)
    assert 20_000 < len(png) < 150_000
    assert img.std() > 20  # a picture, not a blank canvas


@pytest.mark.slow  # librosa's CQT compiles its kernels on first use
def test_audio_panels_shade_outside_the_window():
    pytest.importorskip("matplotlib")
    y = chorale_audio()[: 10 * SR]
    kw = {"beats": np.zeros(0), "chords": []}
    plain = _decode(audio_panels_png(y, SR, None, **kw)).astype(float)
    marked = _decode(audio_panels_png(y, SR, (4.0, 6.0), **kw)).astype(float)
    # the spectrogram's columns outside the window are washed towards white, inside unchanged
    band = slice(60, 200)  # rows inside the CQT panel
    x_in, x_out = 450, 150  # pixel columns at ~5 s (inside) and ~1.5 s (outside)
    assert marked[band, x_out].mean() > plain[band, x_out].mean() + 20
    assert abs(marked[band, x_in].mean() - plain[band, x_in].mean()) < 10


@pytest.mark.slow  # audio analysis: librosa compiles its kernels on first use
def test_audio_panels_default_beats_and_chords_come_from_the_library():
    pytest.importorskip("matplotlib")
    from aria_tda.media import draw

    y = chorale_audio()[: 6 * SR]
    beats, chords, note = draw._beats_and_chords(y, SR)
    assert note == "" and beats.size >= 6  # 120 bpm over 6 s
    assert np.median(np.diff(beats)) == pytest.approx(0.5, abs=0.05)
    assert any(c.label != "N" for c in chords)
    png = audio_panels_png(y, SR, (1.0, 3.0))
    assert png.startswith(PNG)


def test_audio_panels_reject_bad_input():
    with pytest.raises(DataError, match="samples"):
        audio_panels_png(np.zeros((2, 100)), SR, None)
    with pytest.raises(ParameterError, match="sr"):
        audio_panels_png(np.zeros(100), 12.5, None)
    with pytest.raises(ParameterError, match="chords"):
        audio_panels_png(chorale_audio()[:SR], SR, None, beats=[], chords=["C"])
