r"""Engraved excerpts: a few bars of a notes table as music notation (SVG), offline.

Conventions
-----------
- Input: a notes table (columns ``pitch, start, end, velocity``, optionally ``is_drum``; seconds
  in clip time, see :mod:`aria_tda.media.draw`) and a beat grid on the same clock (any object
  with ``beats`` and ``downbeats`` arrays, optionally ``meter`` such as ``"3/4"`` and
  ``first_bar``, e.g. :class:`aria_tda.media.theory.BeatGrid`). Without a grid the excerpt is
  read at 120 beats per minute in 4/4 with bar 1 starting at ``start``.
- Quantisation (:func:`quantise_onsets`): a time is placed on the beat grid by linear
  interpolation between its two neighbouring beats (extrapolated with the first/last beat
  period outside the grid), :math:`q = \lfloor (i + (t - b_i) / (b_{i+1} - b_i))\,s + 1/2
  \rfloor` steps, with :math:`s` steps per beat so that one step is a sixteenth note (4 per
  quarter-note beat, 2 per eighth-note beat). Tempo changes follow the grid; the printed
  metronome mark is the median beat period.
- The excerpt is the *whole bars* that overlap ``[start, end)`` (at most :data:`MAX_BARS`);
  every pitched note that sounds in those bars (after quantisation) is engraved, cut at the
  first and the last bar line (a note held over from before the excerpt starts at its first
  bar line). Bar numbers are the
  grid's (``first_bar`` + the index of the downbeat); without downbeats the first beat of the
  grid starts a bar.
- Simplifications: drums are dropped (pitched notes only); at most two staves, split at middle
  C (:func:`assign_staves`: MIDI 60 and above treble, below bass; a staff without notes is left
  out); one voice per staff: notes sounding together become chords and overlapping notes of
  different lengths are cut into tied pieces at every onset and release; durations are written
  as sixteenths, eighths, quarters, halves, wholes and their single dots, tied as needed; no
  tuplets, no beams beyond what the engraver adds, no dynamics. Pitches are spelled with
  sharps in sharp keys and C major and with flats in flat keys (``key_fifths``).
- Rendering: the score is written as MusicXML by this module's own writer and engraved by
  verovio's Python toolkit (``report`` extra). The SVG carries its glyphs as ``<path>``
  definitions (no web font), and :func:`notation_svg` sanitises it for inline HTML: no
  ``<style>`` (its rules become presentation attributes), no script, no event attributes, no
  external reference (only ``#`` fragment links and the SVG namespace URI remain).
"""

from __future__ import annotations

import hashlib
import itertools
import math
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from typing import Any, NoReturn

import numpy as np
import pandas as pd

from aria_tda._optional import install_hint, is_installed
from aria_tda.errors import DataError, ParameterError, expected
from aria_tda.media.draw import check_notes

__all__ = [
    "MAX_BARS",
    "assign_staves",
    "notation_svg",
    "notation_unavailable_reason",
    "quantise_onsets",
    "sanitize_svg",
    "split_steps",
]

#: The most bars one excerpt may hold.
MAX_BARS = 12
#: Lowest pitch of the treble staff (middle C).
MIDDLE_C = 60
#: Default beat period without a grid (seconds; 120 beats per minute).
DEFAULT_BEAT = 0.5

_SVG_NS = "http://www.w3.org/2000/svg"
_NS = "{" + _SVG_NS + "}"
_TYPES = {1: ("16th", 0), 2: ("eighth", 0), 3: ("eighth", 1), 4: ("quarter", 0),
          6: ("quarter", 1), 8: ("half", 0), 12: ("half", 1), 16: ("whole", 0)}
_UNIT = {2: "half", 4: "quarter", 8: "eighth", 16: "16th"}
_SHARP_NAMES = (("C", 0), ("C", 1), ("D", 0), ("D", 1), ("E", 0), ("F", 0), ("F", 1), ("G", 0),
                ("G", 1), ("A", 0), ("A", 1), ("B", 0))
_FLAT_NAMES = (("C", 0), ("D", -1), ("D", 0), ("E", -1), ("E", 0), ("F", 0), ("G", -1),
               ("G", 0), ("A", -1), ("A", 0), ("B", -1), ("B", 0))
_ACC = {-1: "flat", 0: "natural", 1: "sharp"}
_DROP = {"script", "style", "foreignObject", "image", "a", "iframe", "audio", "video", "object"}
_SHAPES = {"path", "ellipse", "polygon", "polyline", "rect", "circle", "line"}


# ---- kernels ---------------------------------------------------------------------------------


def quantise_onsets(times: np.ndarray, beats: np.ndarray, *, steps_per_beat: int = 4) -> np.ndarray:
    r"""Times as whole steps on a beat grid (``steps_per_beat`` steps per beat).

    Parameters
    ----------
    times : np.ndarray [shape=(n,)]
        Seconds.
    beats : np.ndarray [shape=(k,), k >= 2]
        Beat times in seconds, strictly increasing.
    steps_per_beat : int
        Steps per beat (4: sixteenths of a quarter-note beat).

    Returns
    -------
    np.ndarray [shape=(n,), dtype=int64]
        :math:`\lfloor (i + (t - b_i)/(b_{i+1} - b_i))\,s + 1/2 \rfloor` with :math:`i` the
        last beat at or before :math:`t` (0 before the grid, :math:`k - 2` after it), step 0 at
        ``beats[0]``.
    """
    t = np.asarray(times, dtype=float).ravel()
    b = np.asarray(beats, dtype=float).ravel()
    i = np.clip(np.searchsorted(b, t, side="right") - 1, 0, b.size - 2)
    pos = (i + (t - b[i]) / (b[i + 1] - b[i])) * steps_per_beat
    return np.floor(pos + 0.5).astype(np.int64)


def quantise_onsets_reference(
    times: np.ndarray, beats: np.ndarray, *, steps_per_beat: int = 4
) -> np.ndarray:
    """Plain-loop twin of :func:`quantise_onsets` (same signature, same result)."""
    b = [float(x) for x in np.asarray(beats, dtype=float).ravel()]
    out = []
    for t in np.asarray(times, dtype=float).ravel():
        i = 0
        for j in range(len(b) - 1):
            if b[j] <= t:
                i = j
        pos = (i + (t - b[i]) / (b[i + 1] - b[i])) * steps_per_beat
        out.append(math.floor(pos + 0.5))
    return np.array(out, dtype=np.int64)


def assign_staves(pitches: np.ndarray, *, split: int = MIDDLE_C) -> np.ndarray:
    """Staff of each pitch: 1 (treble) at or above ``split``, 2 (bass) below it.

    Parameters
    ----------
    pitches : np.ndarray [shape=(n,)]
        MIDI pitches.
    split : int
        Lowest pitch of the treble staff (default middle C, 60).

    Returns
    -------
    np.ndarray [shape=(n,), dtype=int64]
        1 or 2 per pitch (MusicXML staff numbers).
    """
    p = np.asarray(pitches).ravel()
    return np.where(p >= split, 1, 2).astype(np.int64)


def assign_staves_reference(pitches: np.ndarray, *, split: int = MIDDLE_C) -> np.ndarray:
    """Plain-loop twin of :func:`assign_staves` (same signature, same result)."""
    return np.array([1 if p >= split else 2 for p in np.asarray(pitches).ravel()], dtype=np.int64)


def split_steps(n: int) -> list[int]:
    """A duration of ``n`` sixteenths as written note values to be tied, longest first.

    Parameters
    ----------
    n : int
        Steps (sixteenths), >= 0.

    Returns
    -------
    list of int
        Pieces among 16, 12, 8, 6, 4, 3, 2, 1 (whole, dotted half, half, dotted quarter,
        quarter, dotted eighth, eighth, sixteenth) summing to ``n``; each piece is the longest
        value that fits in what is left.
    """
    out, left = [], int(n)
    sizes = sorted(_TYPES, reverse=True)
    while left > 0:
        piece = next(v for v in sizes if v <= left)
        out.append(piece)
        left -= piece
    return out


# ---- the score -------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Layout:
    beats: np.ndarray  # clip seconds, increasing, >= 2
    spb: int  # steps per beat
    bar_steps: int
    phase: int  # step of a bar line
    first_bar: int  # number of the bar starting at ``phase``
    num: int
    den: int
    bpm: float  # quarter notes per minute


def _meter(name: str, meter: Any) -> tuple[int, int] | None:
    if meter is None:
        return None
    if isinstance(meter, str):
        m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*\??\s*", meter)
        if m is None:
            if meter.strip() in ("?", ""):
                return None
            _bad_meter(name, meter)
        num, den = int(m.group(1)), int(m.group(2))
    else:
        try:
            num, den = (int(v) for v in meter)
        except (TypeError, ValueError):
            _bad_meter(name, meter)
    if not (1 <= num <= 16 and den in _UNIT):
        _bad_meter(name, meter)
    return num, den


def _bad_meter(name: str, meter: Any) -> NoReturn:
    raise ParameterError(expected(name, 'a meter such as "4/4", "3/4", "6/8" or (3, 4)', meter))


def _layout(grid: Any, meter: Any, start: float, end: float) -> _Layout:
    given = _meter("meter", meter)
    if grid is not None and not (hasattr(grid, "beats") and hasattr(grid, "downbeats")):
        raise ParameterError(expected("grid", "an object with beats and downbeats (e.g. BeatGrid)"
                                      " or None", type(grid).__name__))
    beats: np.ndarray = np.zeros(0)
    down: np.ndarray = np.zeros(0)
    first = 1
    if grid is not None:
        try:
            beats = np.unique(np.asarray(grid.beats, dtype=float).ravel())
            down = np.unique(np.asarray(grid.downbeats, dtype=float).ravel())
        except (TypeError, ValueError):
            raise ParameterError(expected("grid", "numeric beats and downbeats", grid)) from None
        if not (np.all(np.isfinite(beats)) and np.all(np.isfinite(down))):
            raise ParameterError(expected("grid", "finite beat and downbeat times", "NaN or inf"))
        fb = getattr(grid, "first_bar", 1)
        first = 1 if fb is None or isinstance(fb, bool) else int(fb)
        given = given or _meter("grid.meter", getattr(grid, "meter", None))
    num, den = given or (4, 4)
    if beats.size < 2:
        anchor = float(beats[0]) if beats.size else start
        k0 = math.floor((start - anchor) / DEFAULT_BEAT) - num
        k1 = math.ceil((end - anchor) / DEFAULT_BEAT) + num
        beats = anchor + DEFAULT_BEAT * np.arange(k0, k1 + 1)
        down = np.array([anchor]) if grid is None or not down.size else down[:1]
    spb = 16 // den
    phase = int(quantise_onsets(down[:1], beats, steps_per_beat=spb)[0]) if down.size else 0
    period = float(np.median(np.diff(beats)))
    return _Layout(beats, spb, num * spb, phase, first, num, den, 60.0 / period * 4.0 / den)


def _spell(pitch: int, fifths: int) -> tuple[str, int, int]:
    step, alter = (_SHARP_NAMES if fifths >= 0 else _FLAT_NAMES)[pitch % 12]
    return step, alter, pitch // 12 - 1


def _key_alters(fifths: int) -> dict[str, int]:
    order = "FCGDAEB" if fifths >= 0 else "BEADGCF"
    sign = 1 if fifths >= 0 else -1
    return {s: sign for s in order[: abs(fifths)]}


def _staff_events(
    on: np.ndarray, off: np.ndarray, pitch: np.ndarray, s0: int, s1: int, bar_steps: int
) -> list[tuple[int, int, frozenset[int], frozenset[int]]]:
    """Segments ``(u, v, sounding pitches, pitches starting at u)`` covering ``[s0, s1)``."""
    cuts = set(range(s0, s1 + 1, bar_steps)) | {int(x) for x in on} | {int(x) for x in off}
    edges = sorted(c for c in cuts if s0 <= c <= s1)
    out = []
    for u, v in itertools.pairwise(edges):
        live = (on <= u) & (off > u)
        out.append((u, v, frozenset(int(p) for p in pitch[live]),
                    frozenset(int(p) for p in pitch[live & (on == u)])))
    return out


def _note_xml(
    pitch: int | None,
    steps: int,
    *,
    staff: int,
    chord: bool,
    tie_stop: bool,
    tie_start: bool,
    fifths: int,
    alters: dict[tuple[str, int], int],
    key: dict[str, int],
) -> str:
    kind, dots = _TYPES[steps]
    parts = ["<note>"]
    if chord:
        parts.append("<chord/>")
    acc = ""
    if pitch is None:
        parts.append("<rest/>")
    else:
        step, alter, octave = _spell(pitch, fifths)
        now = alters.get((step, octave), key.get(step, 0))
        if alter != now and not tie_stop:
            acc = f"<accidental>{_ACC[alter]}</accidental>"
        alters[(step, octave)] = alter
        alt = f"<alter>{alter}</alter>" if alter else ""
        parts.append(f"<pitch><step>{step}</step>{alt}<octave>{octave}</octave></pitch>")
    parts.append(f"<duration>{steps}</duration>")
    if tie_stop:
        parts.append('<tie type="stop"/>')
    if tie_start:
        parts.append('<tie type="start"/>')
    parts.append(f"<voice>{1 if staff == 1 else 5}</voice><type>{kind}</type>")
    parts.append("<dot/>" * dots + acc + f"<staff>{staff}</staff>")
    ties = ('<tied type="stop"/>' if tie_stop else "") + ('<tied type="start"/>' if tie_start
                                                         else "")
    if ties:
        parts.append(f"<notations>{ties}</notations>")
    parts.append("</note>")
    return "".join(parts)


def _measure_xml(
    segs: list[tuple[int, int, frozenset[int], frozenset[int]]],
    nxt: dict[int, tuple[frozenset[int], frozenset[int]]],
    prev: dict[int, frozenset[int]],
    staff: int,
    fifths: int,
    bar_steps: int,
    key: dict[str, int],
) -> str:
    if not any(s[2] for s in segs):
        return (f'<note><rest measure="yes"/><duration>{bar_steps}</duration>'
                f"<voice>{1 if staff == 1 else 5}</voice><staff>{staff}</staff></note>")
    alters: dict[tuple[str, int], int] = {}
    out = []
    for u, v, live, fresh in segs:
        after = nxt.get(v, (frozenset(), frozenset()))
        before = prev.get(u, frozenset())
        pieces = split_steps(v - u)
        for j, steps in enumerate(pieces):
            if not live:
                out.append(_note_xml(None, steps, staff=staff, chord=False, tie_stop=False,
                                     tie_start=False, fifths=fifths, alters=alters, key=key))
                continue
            last = j == len(pieces) - 1
            for n, p in enumerate(sorted(live)):
                stop = j > 0 or (p not in fresh and p in before)
                go = not last or (p in after[0] and p not in after[1])
                out.append(_note_xml(p, steps, staff=staff, chord=n > 0, tie_stop=stop,
                                     tie_start=go, fifths=fifths, alters=alters, key=key))
    return "".join(out)


def _musicxml(
    table: pd.DataFrame,
    lay: _Layout,
    bars: tuple[int, int],
    *,
    fifths: int,
) -> str:
    m0, m1 = bars
    s0, s1 = lay.phase + m0 * lay.bar_steps, lay.phase + m1 * lay.bar_steps
    on = quantise_onsets(table["start"].to_numpy(), lay.beats, steps_per_beat=lay.spb)
    off = quantise_onsets(table["end"].to_numpy(), lay.beats, steps_per_beat=lay.spb)
    off = np.minimum(np.maximum(off, on + 1), s1)
    keep = (off > s0) & (on < s1)
    on, off, pitch = np.maximum(on[keep], s0), off[keep], table["pitch"].to_numpy()[keep]
    staff = assign_staves(pitch)
    staves = [k for k in (1, 2) if np.any(staff == k)] or [1]
    key = _key_alters(fifths)
    per_staff = {}
    for k in staves:
        sel = staff == k
        segs = _staff_events(on[sel], off[sel], pitch[sel], s0, s1, lay.bar_steps)
        per_staff[k] = segs
    clefs = {1: "<sign>G</sign><line>2</line>", 2: "<sign>F</sign><line>4</line>"}
    measures = []
    for m in range(m0, m1):
        b0, b1 = lay.phase + m * lay.bar_steps, lay.phase + (m + 1) * lay.bar_steps
        body = []
        if m == m0:
            clef = "".join(
                f'<clef number="{i + 1}">{clefs[k]}</clef>' for i, k in enumerate(staves)
            )
            body.append(
                f"<attributes><divisions>4</divisions><key><fifths>{fifths}</fifths></key>"
                f"<time><beats>{lay.num}</beats><beat-type>{lay.den}</beat-type></time>"
                f"<staves>{len(staves)}</staves>{clef}</attributes>"
                f'<direction placement="above"><direction-type><words>'
                f"\u2669 = {lay.bpm:.0f}</words></direction-type>"
                f'<sound tempo="{lay.bpm:.2f}"/></direction>'
            )
        for i, k in enumerate(staves):
            segs = per_staff[k]
            nxt = {u: (live, fresh) for u, _, live, fresh in segs}
            prev = {v: live for _, v, live, _ in segs}
            mine = [sg for sg in segs if b0 <= sg[0] < b1]
            if i > 0:
                body.append(f"<backup><duration>{lay.bar_steps}</duration></backup>")
            body.append(_measure_xml(mine, nxt, prev, i + 1, fifths, lay.bar_steps, key))
        measures.append(f'<measure number="{lay.first_bar + m}">{"".join(body)}</measure>')
    return (
        '<?xml version="1.0" encoding="UTF-8"?><score-partwise version="3.1">'
        '<part-list><score-part id="P1"><part-name></part-name></score-part></part-list>'
        f'<part id="P1">{"".join(measures)}</part></score-partwise>'
    )


# ---- rendering -------------------------------------------------------------------------------


def notation_unavailable_reason() -> str | None:
    """Why :func:`notation_svg` cannot engrave here, or ``None`` when it can.

    Returns
    -------
    str or None
        ``None`` when verovio's Python toolkit is installed, else a sentence naming the extra.
    """
    if is_installed("verovio"):
        return None
    return f"music notation needs verovio, which is not installed ({install_hint('report')})"


def notation_svg(
    notes: pd.DataFrame,
    *,
    start: float,
    end: float,
    grid: Any = None,
    key_fifths: int | None = None,
    meter: str | tuple[int, int] | None = None,
    title: str | None = None,
) -> str | None:
    """An engraved excerpt of the notes in the bars overlapping ``[start, end)``, as SVG.

    Parameters
    ----------
    notes : pandas.DataFrame
        A notes table (clip seconds); drum rows are dropped.
    start, end : float
        The excerpt in clip seconds (``start < end``); whole bars are shown (module docstring).
    grid : BeatGrid-like, optional
        ``beats``, ``downbeats`` (clip seconds), optionally ``meter`` and ``first_bar``; default:
        120 beats per minute in 4/4 from ``start``.
    key_fifths : int, optional
        Key signature in fifths (-7..7, e.g. -1 = F major / D minor); default 0 (no signature).
    meter : str or (int, int), optional
        Time signature, e.g. ``"3/4"``; default: the grid's ``meter``, else 4/4.
    title : str, optional
        The SVG's accessible name (``<title>``, ``aria-label``; not engraved: caption the
        picture in the page); default ``"Notation, bars a-b"``.

    Returns
    -------
    str or None
        A sanitised ``<svg>`` (``role="img"``, ``<title>``, ``<desc>``; one ``<g
        class="note">`` per written note, one ``<g class="measure">`` per bar), or ``None`` when
        verovio is missing (:func:`notation_unavailable_reason` says why).

    Raises
    ------
    ParameterError
        Bad times, grid, meter or key; more than :data:`MAX_BARS` bars.
    DataError
        A bad notes table, or the engraver rejected the score.
    """
    if notation_unavailable_reason() is not None:
        return None
    table = check_notes("notes", notes)
    s, e = _finite("start", start), _finite("end", end)
    if e <= s:
        raise ParameterError(expected("end", f"a time after start ({s:.3f} s)", end))
    if key_fifths is None:
        key_fifths = 0
    if isinstance(key_fifths, bool) or not isinstance(key_fifths, int | np.integer) or not (
        -7 <= key_fifths <= 7
    ):
        raise ParameterError(expected("key_fifths", "an integer in -7..7", key_fifths))
    lay = _layout(grid, meter, s, e)
    q0, q1 = quantise_onsets(np.array([s, e]), lay.beats, steps_per_beat=lay.spb)
    q1 = max(int(q1), int(q0) + 1)
    m0 = (int(q0) - lay.phase) // lay.bar_steps
    m1 = -((lay.phase - q1) // lay.bar_steps)  # ceil
    if m1 - m0 > MAX_BARS:
        raise ParameterError(
            expected("end", f"at most {MAX_BARS} bars after start", f"{m1 - m0} bars")
        )
    pitched = table[~table["is_drum"]].sort_values(["start", "pitch"], kind="stable")
    xml = _musicxml(pitched, lay, (m0, m1), fifths=int(key_fifths))
    svg = _engrave(xml)
    first, last = lay.first_bar + m0, lay.first_bar + m1 - 1
    bars = f"bar {first}" if first == last else f"bars {first}-{last}"
    name = title or f"Notation, {bars}"
    desc = (f"{bars} in {lay.num}/{lay.den} at about {lay.bpm:.0f} quarter notes per minute, "
            f"{len(pitched)} pitched notes in the clip, quantised to sixteenths; drums omitted; "
            "treble and bass staves split at middle C")
    return sanitize_svg(svg, title=name, desc=desc)


def _finite(name: str, v: Any) -> float:
    try:
        x = float(v)
    except (TypeError, ValueError):
        raise ParameterError(expected(name, "a number of seconds", v)) from None
    if not math.isfinite(x):
        raise ParameterError(expected(name, "finite seconds", v))
    return x


def _engrave(xml: str) -> str:
    import verovio

    verovio.enableLog(verovio.LOG_OFF)
    tk = verovio.toolkit()
    seed = int.from_bytes(hashlib.sha1(xml.encode("utf-8")).digest()[:4], "big") or 1
    tk.setOptions({
        "svgViewBox": True,
        "svgRemoveXlink": True,
        "adjustPageHeight": True,
        "header": "none",
        "adjustPageWidth": True,
        "footer": "none",
        "breaks": "auto",
        "pageHeight": 60000,
        "scale": 50,
        "mnumInterval": 1,
        "xmlIdSeed": seed,
    })
    if not tk.loadData(xml):
        raise DataError("notation_svg: verovio could not read the MusicXML it was given")
    svg = str(tk.renderToSVG(1))
    if not svg.lstrip().startswith("<"):
        raise DataError("notation_svg: verovio returned no SVG")
    return svg


def sanitize_svg(svg: str, *, title: str, desc: str) -> str:
    """An SVG made safe for inline HTML: no style, script or external reference.

    Parameters
    ----------
    svg : str
        An SVG document (e.g. verovio's output).
    title, desc : str
        Its accessible name and description (replace any ``<title>``/``<desc>``).

    Returns
    -------
    str
        The SVG with ``role="img"``, ``aria-label``, ``<title>`` and ``<desc>``; ``<style>``
        rules of verovio replaced by presentation attributes (shapes stroked with
        ``currentColor``, placeholders hidden); scripts, ``<foreignObject>``, images, links,
        ``on*`` attributes, non-fragment ``href`` and ``url()`` references removed.

    Raises
    ------
    DataError
        The SVG does not parse, or a non-namespace ``http`` reference survived.
    """
    try:
        root = ET.fromstring(svg)
    except ET.ParseError as exc:
        raise DataError(expected("svg", "a well-formed SVG document", str(exc))) from None
    _clean(root)
    for old in [c for c in root if c.tag in (_NS + "title", _NS + "desc")]:
        root.remove(old)
    d = ET.Element(_NS + "desc")
    d.text = desc
    root.insert(0, d)
    t = ET.Element(_NS + "title")
    t.text = title
    root.insert(0, t)
    root.set("role", "img")
    root.set("aria-label", title)
    for el in root.iter():  # plain tag names + one xmlns: what an HTML parser reads inline
        el.tag = el.tag[len(_NS):]
    root.set("xmlns", _SVG_NS)
    out = ET.tostring(root, encoding="unicode")
    bad = [u for u in re.findall(r"https?://[^\s\"'<>)]*", out) if u != _SVG_NS]
    if bad:  # pragma: no cover - _clean removes every attribute that could hold one
        raise DataError(expected("svg", "no external references", bad[0]))
    return out


def _clean(el: ET.Element) -> None:
    for child in list(el):
        tag = child.tag
        if not (isinstance(tag, str) and tag.startswith(_NS)) or tag[len(_NS):] in _DROP:
            el.remove(child)
            continue
        _clean(child)
    local = el.tag[len(_NS):] if isinstance(el.tag, str) else ""
    for name, value in list(el.attrib.items()):
        plain = name.split("}")[-1]
        if (
            name.startswith("{")
            or plain.lower().startswith("on")
            or (plain == "href" and not value.startswith("#"))
            or ("url(" in value and not re.fullmatch(r"\s*url\(#[^)]*\)\s*", value))
            or "javascript:" in value.lower()
            or "http" in value.lower()
        ):
            del el.attrib[name]
    classes = el.get("class", "").split()
    if local in _SHAPES and "stroke" not in el.attrib:
        el.set("stroke", "currentColor")
    if "placeholder" in classes:
        el.set("visibility", "hidden")
    if {"tempo", "reh", "fing", "ending"} & set(classes):
        el.set("font-weight", "bold")
