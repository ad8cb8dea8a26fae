r"""Aligned views: a query and an attributed training item on one time axis.

Conventions
-----------
- Times are seconds in *clip time* (from the start of each loaded clip, the clock of the notes
  table and of the samples). Each excerpt is shown from its *matched position* — the query from
  ``query_start``, the item from ``item_start`` — for ``duration`` seconds; the shared x axis is
  the offset :math:`t - \mathrm{start}` in :math:`[0, \mathrm{duration}]`, so the same offset
  from the matched position sits at the same x in both lanes. A matched position may be
  negative or run past the clip's end: that part of the lane is simply empty.
- A *grid* is any object with ``beats`` and ``downbeats`` (arrays of seconds on the same clock
  as the start, e.g. :class:`aria_tda.media.theory.BeatGrid`), optionally ``first_bar`` (the
  number of the bar that starts at ``downbeats[0]``; default 1). Bar lines (downbeats) are
  darker and thicker than beat lines and carry their bar numbers (:func:`grid_marks`).
- ``boundary`` is the clip time of the query's prompt/generated boundary; it is drawn (a dashed
  green line labelled "prompt | generated" in the query's lane) only when it falls inside the
  view.
- ``highlights`` are ``(lane, start_s, end_s, label)`` spans in the lane's clip time (``lane``
  0 or ``"query"``, 1 or ``"item"``), drawn as translucent yellow bands with their label — the
  shared motif or progression in each piece.
- Piano rolls (:func:`aligned_roll_svg`): pitched notes on a shared pitch axis (note names,
  middle C = C4), velocity as the shade (as in :func:`aria_tda.media.draw.piano_roll_svg`).
  Drum notes are *not* put on the pitch axis (their pitch is an instrument, not a pitch): each
  lane that has drums in view gets a thin "drums" strip under its roll with one tick per drum
  onset (opacity = velocity). The SVG has ``role="img"``, a ``<title>`` and a ``<desc>``,
  presentation attributes only (no style, no script), every label escaped, 11-13 px text at
  full size.
- Audio (:func:`aligned_audio_png`): one figure; for each excerpt its constant-Q spectrogram
  (dB re the excerpt's own peak, the same :data:`~aria_tda.media.draw.DB_RANGE` and colour
  scale as :func:`~aria_tda.media.draw.audio_panels_png`), chromagram and chord strip; chords
  with ``confidence`` below :data:`FADED_BELOW` are drawn faded with grey labels.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from aria_tda._optional import require
from aria_tda.errors import ParameterError, expected
from aria_tda.media import svg
from aria_tda.media.draw import DB_RANGE, HOP, check_audio, check_notes, cqt_db_chroma, palette_png

__all__ = ["FADED_BELOW", "aligned_audio_png", "aligned_roll_svg", "grid_marks"]

#: Chords whose ``confidence`` is below this are drawn faded.
FADED_BELOW = 0.5
#: Two grid times closer than this (seconds) are one line (a downbeat is also a beat).
SAME_TIME = 1e-3

_BOUNDARY = svg.MARK
_BAND = svg.BAND
_SHADES = 8
_LANES = {"query": 0, "item": 1}


# ---- kernels ---------------------------------------------------------------------------------


def grid_marks(
    beats: np.ndarray,
    downbeats: np.ndarray,
    *,
    start: float,
    duration: float,
    first_bar: int = 1,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The grid lines of one excerpt: beats and numbered bar lines, as offsets from ``start``.

    Parameters
    ----------
    beats, downbeats : np.ndarray [shape=(k,)]
        Beat and bar-start times in seconds (any order). A beat within :data:`SAME_TIME` of a
        downbeat is that bar line (drawn once).
    start, duration : float
        The view ``[start, start + duration]`` (seconds, same clock).
    first_bar : int
        The number of the bar that starts at the earliest downbeat.

    Returns
    -------
    offsets : np.ndarray [shape=(m,), dtype=float]
        ``t - start`` of every line in the view, ascending.
    is_bar : np.ndarray [shape=(m,), dtype=bool]
        True for a bar line.
    bar : np.ndarray [shape=(m,), dtype=int]
        The bar number of a bar line (``first_bar`` + rank among the sorted downbeats); 0 for a
        beat line.
    """
    b = np.sort(np.asarray(beats, dtype=float).ravel())
    d = np.sort(np.asarray(downbeats, dtype=float).ravel())
    lo, hi = start, start + duration
    bv = b[(b >= lo) & (b <= hi)]
    if d.size and bv.size:
        j = np.clip(np.searchsorted(d, bv), 1, d.size)
        near = np.minimum(np.abs(bv - d[j - 1]), np.abs(bv - d[np.minimum(j, d.size - 1)]))
        bv = bv[near > SAME_TIME]
    dk = np.flatnonzero((d >= lo) & (d <= hi))
    t = np.concatenate([d[dk], bv])
    is_bar = np.concatenate([np.ones(dk.size, bool), np.zeros(bv.size, bool)])
    bar = np.concatenate([first_bar + dk, np.zeros(bv.size, np.int64)]).astype(np.int64)
    order = np.argsort(t, kind="stable")
    return t[order] - start, is_bar[order], bar[order]


def grid_marks_reference(
    beats: np.ndarray,
    downbeats: np.ndarray,
    *,
    start: float,
    duration: float,
    first_bar: int = 1,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Plain-loop twin of :func:`grid_marks` (same signature, same result)."""
    bs = sorted(float(x) for x in np.asarray(beats, dtype=float).ravel())
    ds = sorted(float(x) for x in np.asarray(downbeats, dtype=float).ravel())
    lo, hi = start, start + duration
    lines: list[tuple[float, int, int]] = []  # (time, 0 = bar first on ties, bar number)
    for k, t in enumerate(ds):
        if lo <= t <= hi:
            lines.append((t, 0, first_bar + k))
    for t in bs:
        if not lo <= t <= hi:
            continue
        if any(abs(t - u) <= SAME_TIME for u in ds):
            continue
        lines.append((t, 1, 0))
    lines.sort(key=lambda r: r[0])  # stable: bars (added first) stay before equal-time beats
    off = np.array([r[0] - start for r in lines], dtype=float)
    is_bar = np.array([r[1] == 0 for r in lines], dtype=bool)
    bar = np.array([r[2] for r in lines], dtype=np.int64)
    return off, is_bar, bar


# ---- validation ------------------------------------------------------------------------------


def _seconds(name: str, value: Any, *, positive: bool = False) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ParameterError(expected(name, "a number of seconds", value)) from None
    if not math.isfinite(v) or (positive and v <= 0):
        raise ParameterError(
            expected(name, "positive finite seconds" if positive else "finite seconds", value)
        )
    return v


def _grid(name: str, grid: Any) -> tuple[np.ndarray, np.ndarray, int] | None:
    if grid is None:
        return None
    if not (hasattr(grid, "beats") and hasattr(grid, "downbeats")):
        raise ParameterError(
            expected(name, "an object with beats and downbeats (e.g. BeatGrid) or None",
                     type(grid).__name__)
        )
    try:
        beats = np.asarray(grid.beats, dtype=float).ravel()
        down = np.asarray(grid.downbeats, dtype=float).ravel()
    except (TypeError, ValueError):
        raise ParameterError(expected(name, "numeric beats and downbeats", grid)) from None
    if not (np.all(np.isfinite(beats)) and np.all(np.isfinite(down))):
        raise ParameterError(expected(name, "finite beat and downbeat times", "NaN or inf"))
    first = getattr(grid, "first_bar", 1)
    first = 1 if first is None else first
    if isinstance(first, bool) or not isinstance(first, int | np.integer):
        raise ParameterError(expected(name + ".first_bar", "an integer bar number", first))
    return beats, down, int(first)


def _highlights(highlights: Any) -> list[tuple[int, float, float, str]]:
    out = []
    for i, h in enumerate(highlights or ()):
        try:
            lane, a, b, label = h
        except (TypeError, ValueError):
            raise ParameterError(
                expected(f"highlights[{i}]", "a (lane, start_s, end_s, label) tuple", h)
            ) from None
        k = _LANES.get(lane, lane) if isinstance(lane, str) else lane
        if isinstance(k, bool) or k not in (0, 1):
            raise ParameterError(
                expected(f"highlights[{i}].lane", '0 / "query" or 1 / "item"', lane)
            )
        a = _seconds(f"highlights[{i}].start_s", a)
        b = _seconds(f"highlights[{i}].end_s", b)
        if b < a:
            raise ParameterError(expected(f"highlights[{i}]", "start_s <= end_s", (a, b)))
        out.append((int(k), a, b, str(label)))
    return out


def _labels(labels: Any) -> tuple[str, str]:
    try:
        q, i = labels
    except (TypeError, ValueError):
        raise ParameterError(expected("labels", "two lane labels (query, item)", labels)) from None
    return str(q), str(i)


def _width(name: str, v: Any, lo: int, hi: int) -> int:
    if isinstance(v, bool) or not isinstance(v, int | np.integer) or not lo <= v <= hi:
        raise ParameterError(expected(name, f"an integer number of pixels in {lo}..{hi}", v))
    return int(v)


def _common(
    query_start: Any, item_start: Any, duration: Any, boundary: Any, highlights: Any
) -> tuple[tuple[float, float], float, float | None, list[tuple[int, float, float, str]]]:
    starts = (_seconds("query_start", query_start), _seconds("item_start", item_start))
    dur = _seconds("duration", duration, positive=True)
    bound = None if boundary is None else _seconds("boundary", boundary)
    return starts, dur, bound, _highlights(highlights)


def _describe(
    labels: tuple[str, str],
    starts: tuple[float, float],
    dur: float,
    bound: float | None,
    marks: list[tuple[int, float, float, str]],
) -> str:
    parts = [
        f"{labels[0]} (top) from {starts[0]:.2f} s and {labels[1]} (bottom) from "
        f"{starts[1]:.2f} s, {dur:.2f} s of each on one time axis (seconds from each matched "
        "position); bar lines dark and numbered, beat lines light."
    ]
    if bound is not None and 0.0 <= bound - starts[0] <= dur:
        parts.append(f" Prompt/generated boundary of the {labels[0]} at {bound:.2f} s.")
    if marks:
        shown = sorted({m[3] for m in marks})
        parts.append(" Highlighted (yellow bands): " + "; ".join(shown) + ".")
    return "".join(parts)


# ---- piano rolls -----------------------------------------------------------------------------


def aligned_roll_svg(
    query_notes: pd.DataFrame,
    item_notes: pd.DataFrame,
    *,
    query_start: float,
    item_start: float,
    duration: float,
    query_grid: Any = None,
    item_grid: Any = None,
    boundary: float | None = None,
    labels: Sequence[str] = ("query", "item"),
    highlights: Sequence[tuple[Any, float, float, str]] = (),
    pitch_range: tuple[int, int] | None = None,
    width: int = 1200,
) -> str:
    """Piano rolls of a query and an item, one lane each, on one time axis from their matches.

    Parameters
    ----------
    query_notes, item_notes : pandas.DataFrame
        Notes tables (columns ``pitch, start, end, velocity``, optionally ``is_drum``; seconds
        in clip time, see :mod:`aria_tda.media.draw`).
    query_start, item_start : float
        The matched positions (clip seconds); x = t - start.
    duration : float
        Seconds shown from each matched position (> 0).
    query_grid, item_grid : BeatGrid-like, optional
        ``beats`` and ``downbeats`` in clip seconds (``first_bar`` optional), see the module
        docstring; ``None``: no grid in that lane.
    boundary : float, optional
        Clip time of the query's prompt/generated boundary; drawn only inside the view.
    labels : (str, str)
        Lane titles (escaped).
    highlights : sequence of (lane, start_s, end_s, label)
        Bands in clip seconds of their lane (0/"query" or 1/"item").
    pitch_range : (int, int), optional
        Lowest and highest MIDI pitch; default: the pitched notes in view, plus one semitone
        each side, at least an octave.
    width : int
        Picture width in pixels (400-4000).

    Returns
    -------
    str
        An ``<svg>`` document: ``<g class="lane" data-lane="0|1">`` each holding
        ``<g class="grid">`` (``<line class="bar|beat" data-offset=...>``), ``<g class="notes">``,
        ``<g class="highlight">`` bands, optionally ``<g class="drums">`` and (query lane)
        ``<g class="boundary">``.

    Raises
    ------
    ParameterError
        Non-finite or non-positive times, a bad grid, highlight, range or width.
    DataError
        A notes table without the required columns or with invalid values.
    """
    starts, dur, bound, marks = _common(query_start, item_start, duration, boundary, highlights)
    labs = _labels(labels)
    width = _width("width", width, 400, 4000)
    grids = (_grid("query_grid", query_grid), _grid("item_grid", item_grid))
    tabs = [check_notes("query_notes", query_notes), check_notes("item_notes", item_notes)]
    views = []
    for tab, s in zip(tabs, starts, strict=True):
        vis = tab[(tab["end"] > s) & (tab["start"] < s + dur)]
        views.append((vis[~vis["is_drum"]], vis[vis["is_drum"]]))
    lo, hi = _pitch_range(pitch_range, [v[0]["pitch"] for v in views])
    span = hi - lo + 1
    pps = min(max(260.0 / span, 4.0), 12.0)  # pixels per semitone
    roll_h = span * pps
    left, right = 64.0, 16.0
    pw = width - left - right

    def px(off: Any) -> Any:
        return left + np.asarray(off, dtype=float) / dur * pw

    parts: list[str] = []
    y = 4.0
    for k in (0, 1):
        pitched, drums = views[k]
        s = starts[k]
        top = y + 36.0
        strip = 18.0 if len(drums) else 0.0
        body_h = roll_h + strip
        parts.append(f'<g class="lane" data-lane="{k}">')
        bold = f' font-weight="bold" font-size="13" fill="{svg.color(k)}"'
        parts.append(svg.text(left, y + 14, f"{labs[k]} — from {s:.2f} s", extra=bold))
        parts.append(svg.rect(left, top, pw, roll_h, "#fcfcfc", ' stroke="#bbbbbb"'))
        for p in range(lo, hi + 1):
            if p % 12 == 0:
                yy = top + (hi - p) * pps + pps / 2
                parts.append(svg.line(left, yy, left + pw, yy, "#eeeeee"))
                parts.append(svg.text(left - 5, yy + 4, svg.pitch_name(p), anchor="end"))
        parts.append(_bands_svg(marks, k, s, dur, px, top, body_h))
        if grids[k] is not None:
            beats, down, first = grids[k]  # type: ignore[misc]
            parts.append(_grid_svg(beats, down, first, s, dur, px, top, body_h))
        parts.append(_roll_notes_svg(pitched, k, s, dur, px, top, hi, lo, pps))
        if strip:
            parts.append(_drums_svg(drums, s, dur, px, top + roll_h + 3, strip - 5, left))
        if k == 0 and bound is not None and 0.0 <= bound - s <= dur:
            parts.append(svg.marker(float(px(bound - s)), top, body_h, "prompt | generated",
                                    _BOUNDARY, css="boundary"))
        parts.append("</g>")
        y = top + body_h + 14.0
    base = y - 10.0
    parts.append(svg.line(left, base, left + pw, base))
    for v in svg.nice_ticks(0.0, dur, 12):
        x = float(px(v))
        parts.append(svg.line(x, base, x, base + 4))
        parts.append(svg.text(x, base + 16, svg.tick_text(v), anchor="middle"))
    axis = "seconds from each matched position"
    parts.append(svg.text(left + pw / 2, base + 31, axis, anchor="middle",
                          extra=' font-size="12"'))
    key = "dark lines: bars (numbered); light lines: beats; yellow: highlighted material"
    if bound is not None:
        key += "; dashed green: prompt | generated"
    parts.append(svg.text(left, base + 47, key, extra=' fill="#555555"'))
    height = base + 54.0
    title = f"Aligned piano rolls: {labs[0]} and {labs[1]}"
    desc = _describe(labs, starts, dur, bound, marks)
    h = svg.num(height)
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{h}" '
        f'viewBox="0 0 {width} {h}" role="img" aria-label="{svg.esc(title)}" '
        f'{svg.FONT} fill="{svg.INK}"><title>{svg.esc(title)}</title>'
        f'<desc>{svg.esc(desc)}</desc>{"".join(parts)}</svg>'
    )


def _pitch_range(pitch_range: Any, pitched: list[pd.Series]) -> tuple[int, int]:
    if pitch_range is not None:
        try:
            lo, hi = (int(v) for v in pitch_range)
        except (TypeError, ValueError):
            raise ParameterError(
                expected("pitch_range", "a pair (lowest, highest) of MIDI pitches", pitch_range)
            ) from None
        if not 0 <= lo < hi <= 127:
            raise ParameterError(expected("pitch_range", "0 <= lowest < highest <= 127",
                                          pitch_range))
        return lo, hi
    allp = pd.concat(pitched) if any(len(p) for p in pitched) else pd.Series([], dtype=np.int64)
    lo, hi = (int(allp.min()) - 1, int(allp.max()) + 1) if len(allp) else (59, 72)
    if hi - lo < 12:
        mid = (lo + hi) // 2
        lo, hi = mid - 6, mid + 6
    return max(lo, 0), min(hi, 127)


def _grid_svg(
    beats: np.ndarray, down: np.ndarray, first: int, s: float, dur: float, px: Any, top: float,
    h: float,
) -> str:
    off, is_bar, bar = grid_marks(beats, down, start=s, duration=dur, first_bar=first)
    return svg.time_grid([float(px(o)) for o in off], off.tolist(), is_bar.tolist(),
                         bar.tolist(), top, h)


def _roll_notes_svg(
    vis: pd.DataFrame,
    k: int,
    s: float,
    dur: float,
    px: Any,
    top: float,
    hi: int,
    lo: int,
    pps: float,
) -> str:
    vis = vis[vis["pitch"].between(lo, hi)]
    out = ['<g class="notes">']
    if len(vis):
        x0 = px(np.maximum(vis["start"].to_numpy() - s, 0.0))
        x1 = px(np.minimum(vis["end"].to_numpy() - s, dur))
        yy = top + (hi - vis["pitch"].to_numpy()) * pps
        shade = np.clip((vis["velocity"].to_numpy() * _SHADES) // 128, 0, _SHADES - 1)
        for sh in range(_SHADES):
            sel = np.flatnonzero(shade == sh)
            if sel.size == 0:
                continue
            op = 0.2 + 0.8 * (sh + 0.5) / _SHADES
            rects = "".join(
                f'<rect x="{svg.num(x0[i])}" y="{svg.num(yy[i] + 0.5)}" '
                f'width="{svg.num(max(x1[i] - x0[i], 1.0))}" '
                f'height="{svg.num(max(pps - 1.0, 1.0))}"/>'
                for i in sel
            )
            out.append(
                f'<g fill="{svg.color(k)}" fill-opacity="{op:.2f}" stroke="{svg.color(k)}" '
                f'stroke-width="0.5">{rects}</g>'
            )
    out.append("</g>")
    return "".join(out)


def _drums_svg(
    drums: pd.DataFrame, s: float, dur: float, px: Any, top: float, h: float, left: float
) -> str:
    on = drums[(drums["start"] >= s) & (drums["start"] <= s + dur)]
    out = ['<g class="drums">', svg.text(left - 5, top + h - 2, "drums", anchor="end")]
    for t, v in zip(on["start"].to_numpy(), on["velocity"].to_numpy(), strict=True):
        x = float(px(t - s))
        op = 0.25 + 0.75 * float(v) / 127.0
        out.append(svg.line(x, top, x, top + h, "#555555",
                            f' stroke-width="1.5" stroke-opacity="{op:.2f}"'))
    out.append("</g>")
    return "".join(out)


def _bands_svg(
    marks: list[tuple[int, float, float, str]], k: int, s: float, dur: float, px: Any,
    top: float, h: float,
) -> str:
    out = []
    for lane, a, b, label in marks:
        if lane == k and b >= s and a <= s + dur:
            xa, xb = float(px(max(a - s, 0.0))), float(px(min(b - s, dur)))
            out.append(svg.band(xa, xb, top, h, label, extra=f' data-lane="{k}"'))
    return "".join(out)


# ---- audio -----------------------------------------------------------------------------------


def _chords(name: str, chords: Any) -> list[tuple[float, float, str, float | None]] | None:
    if chords is None:
        return None
    out = []
    for i, c in enumerate(chords):
        if hasattr(c, "start") and hasattr(c, "end") and hasattr(c, "label"):
            s, e, lab, conf = c.start, c.end, c.label, getattr(c, "confidence", None)
        else:
            try:
                s, e, lab, *rest = c
            except (TypeError, ValueError):
                raise ParameterError(
                    expected(f"{name}[{i}]", "an object with start, end, label "
                             "(confidence optional) or a (start, end, label) tuple", c)
                ) from None
            conf = rest[0] if rest else None
        s, e = _seconds(f"{name}[{i}].start", s), _seconds(f"{name}[{i}].end", e)
        cf = None if conf is None else float(conf)
        out.append((s, e, str(lab), cf))
    return out


def aligned_audio_png(
    query_samples: np.ndarray,
    query_sr: int,
    item_samples: np.ndarray,
    item_sr: int,
    *,
    query_start: float,
    item_start: float,
    duration: float,
    query_grid: Any = None,
    item_grid: Any = None,
    boundary: float | None = None,
    query_chords: Sequence[Any] | None = None,
    item_chords: Sequence[Any] | None = None,
    highlights: Sequence[tuple[Any, float, float, str]] = (),
    labels: Sequence[str] = ("query", "item"),
    width: int = 1400,
    height: int = 760,
) -> bytes:
    """Spectrograms, chroma and chords of a query and an item on one time axis, as one PNG.

    Parameters
    ----------
    query_samples, item_samples : np.ndarray [shape=(n,)]
        Mono audio of each clip.
    query_sr, item_sr : int
        Their sample rates in Hz.
    query_start, item_start : float
        The matched positions (clip seconds); x = t - start.
    duration : float
        Seconds shown from each matched position (> 0).
    query_grid, item_grid : BeatGrid-like, optional
        ``beats`` and ``downbeats`` in clip seconds (module docstring).
    boundary : float, optional
        Clip time of the query's prompt/generated boundary; drawn only inside the view.
    query_chords, item_chords : sequence, optional
        Chord spans in clip seconds: objects with ``start``, ``end``, ``label`` and optionally
        ``confidence`` (or ``(start, end, label[, confidence])`` tuples); those with a
        confidence below :data:`FADED_BELOW` are faded. ``None``: the strip says "no chords".
    highlights : sequence of (lane, start_s, end_s, label)
        Bands in clip seconds of their lane (0/"query" or 1/"item").
    labels : (str, str)
        Names of the two excerpts.
    width, height : int
        Picture size in pixels (600-4000, 400-4000).

    Returns
    -------
    bytes
        A PNG (8-bit palette) of exactly ``width x height`` pixels.

    Raises
    ------
    DataError
        Empty or non-finite audio.
    ParameterError
        Bad times, sample rates, grids, chords, highlights or sizes.
    MissingDependencyError
        librosa (``audio`` extra) or matplotlib (``report`` extra) is missing.
    """
    q = check_audio(query_samples, query_sr, name="query_samples", sr_name="query_sr")
    it = check_audio(item_samples, item_sr, name="item_samples", sr_name="item_sr")
    starts, dur, bound, marks = _common(query_start, item_start, duration, boundary, highlights)
    labs = _labels(labels)
    width = _width("width", width, 600, 4000)
    height = _width("height", height, 400, 4000)
    grids = (_grid("query_grid", query_grid), _grid("item_grid", item_grid))
    chords = (_chords("query_chords", query_chords), _chords("item_chords", item_chords))
    require("matplotlib", "report", purpose="audio pictures")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    dpi = 100
    fig = Figure(figsize=(width / dpi, height / dpi), dpi=dpi, layout="constrained")
    FigureCanvasAgg(fig)
    gs = fig.add_gridspec(6, 1, height_ratios=(3.0, 1.1, 0.55, 3.0, 1.1, 0.55))
    axes: list[Any] = []
    for r in range(6):
        axes.append(fig.add_subplot(gs[r], sharex=axes[0] if axes else None))
    for k, (y, sr) in enumerate((q, it)):
        ax_c, ax_h, ax_k = axes[3 * k : 3 * k + 3]
        _spectra(ax_c, ax_h, y, sr, starts[k], dur)
        ax_c.set_title(f"{labs[k]} — from {starts[k]:.2f} s", loc="left", fontsize=10,
                       fontweight="bold", color=svg.color(k))
        _chord_strip(ax_k, chords[k], starts[k], dur)
        if grids[k] is not None:
            beats, down, first = grids[k]  # type: ignore[misc]
            _grid_lines((ax_c, ax_h, ax_k), beats, down, first, starts[k], dur)
        for lane, a, b, label in marks:
            if lane == k and b >= starts[k] and a <= starts[k] + dur:
                for ax in (ax_c, ax_h, ax_k):
                    ax.axvspan(a - starts[k], b - starts[k], color=_BAND, alpha=0.35,
                               linewidth=0)
                ax_c.text(max(a - starts[k], 0.0), 0.03, f" {label}", transform=
                          ax_c.get_xaxis_transform(), fontsize=8, fontweight="bold",
                          color="black", va="bottom", clip_on=True, in_layout=False,
                          bbox={"facecolor": _BAND, "alpha": 0.8, "linewidth": 0})
        if k == 0 and bound is not None and 0.0 <= bound - starts[0] <= dur:
            for ax in (ax_c, ax_h, ax_k):
                ax.axvline(bound - starts[0], color=_BOUNDARY, linewidth=2.0, linestyle="--")
            ax_c.text(bound - starts[0], 0.97, "prompt | generated", transform=
                      ax_c.get_xaxis_transform(), ha="center", va="top", fontsize=8,
                      fontweight="bold", color=_BOUNDARY, in_layout=False,
                      bbox={"facecolor": "white", "alpha": 0.85, "linewidth": 0})
    for ax in axes:
        ax.set_xlim(0.0, dur)
        ax.tick_params(labelsize=8)
    for ax in axes[:-1]:
        ax.tick_params(labelbottom=False)
    axes[-1].set_xlabel(
        "seconds from each matched position — CQT in dB re each excerpt's peak "
        f"({DB_RANGE[0]:.0f} to {DB_RANGE[1]:.0f}); white lines: bars, blue: beats",
        fontsize=8,
    )
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    return palette_png(buf.getvalue())


def _spectra(ax_c: Any, ax_h: Any, y: np.ndarray, sr: int, start: float, dur: float) -> None:
    margin = 0.25
    a = max(math.floor((start - margin) * sr), 0)
    b = min(math.ceil((start + dur + margin) * sr), y.size)
    ax_c.set_ylabel("CQT (dB)", fontsize=8)
    ax_h.set_ylabel("chroma", fontsize=8)
    if b - a < 4 * HOP:
        for ax in (ax_c, ax_h):
            ax.set_yticks([])
            ax.text(0.5, 0.5, "no audio in this span", transform=ax.transAxes, ha="center",
                    va="center", fontsize=9, color="#555555")
        return
    db, chroma = cqt_db_chroma(y[a:b], sr)
    step = HOP / sr
    x0 = a / sr - start - step / 2
    x1 = x0 + db.shape[1] * step
    ax_c.imshow(db, origin="lower", aspect="auto", extent=(x0, x1, 0.0, float(db.shape[0])),
                cmap="magma", interpolation="nearest", vmin=DB_RANGE[0], vmax=DB_RANGE[1])
    octaves = range(0, db.shape[0], 12)
    ax_c.set_yticks([o + 0.5 for o in octaves], [f"C{1 + o // 12}" for o in octaves])
    ax_h.imshow(chroma, origin="lower", aspect="auto", extent=(x0, x1, 0.0, 12.0), cmap="Greys",
                interpolation="nearest", vmin=0.0, vmax=1.0)
    ax_h.set_yticks([0.5, 4.5, 7.5, 11.5], ["C", "E", "G", "B"])


def _grid_lines(
    axes: Sequence[Any], beats: np.ndarray, down: np.ndarray, first: int, s: float, dur: float
) -> None:
    off, is_bar, bar = grid_marks(beats, down, start=s, duration=dur, first_bar=first)
    for ax in axes:
        for o, b in zip(off, is_bar, strict=True):
            if b:
                ax.axvline(o, color="white", linewidth=1.5, alpha=0.9)
                ax.axvline(o, color="black", linewidth=0.5, alpha=0.9)
            else:
                ax.axvline(o, color="#56B4E9", linewidth=0.7, alpha=0.8)
    ax_c = axes[0]
    for o, b, n in zip(off, is_bar, bar, strict=True):
        if b:
            ax_c.text(o, 1.0, str(n), transform=ax_c.get_xaxis_transform(), ha="center",
                      va="bottom", fontsize=8, color="#333333")


def _chord_strip(
    ax: Any, spans: list[tuple[float, float, str, float | None]] | None, s: float, dur: float
) -> None:
    ax.set_ylim(0.0, 1.0)
    ax.set_yticks([])
    ax.set_ylabel("chords", fontsize=8)
    if spans is None:
        ax.text(0.5, 0.5, "no chords given", transform=ax.transAxes, ha="center", va="center",
                fontsize=8, color="#777777")
        return
    for i, (a, b, lab, conf) in enumerate(spans):
        if lab == "N" or b <= a or b < s or a > s + dur:
            continue
        faded = conf is not None and conf < FADED_BELOW
        colour = "#d9d9d9" if faded else ("#E69F00" if i % 2 else "#F0E442")
        ax.axvspan(a - s, b - s, ymin=0.05, ymax=0.95, color=colour,
                   alpha=0.45 if faded else 0.75, linewidth=0)
        if (min(b - s, dur) - max(a - s, 0.0)) / dur > 0.02:
            text = lab.replace(":maj", "").replace(":min", "m")
            ax.text((max(a - s, 0.0) + min(b - s, dur)) / 2, 0.5, text, ha="center", va="center",
                    fontsize=8, clip_on=True, in_layout=False,
                    color="#888888" if faded else "black",
                    fontstyle="italic" if faded else "normal")
