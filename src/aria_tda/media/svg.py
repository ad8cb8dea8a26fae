"""Small SVG building blocks for the charts of the listening room (:mod:`aria_tda.media`).

Every chart is plain SVG 1.1 text: presentation attributes only (no ``<style>`` element, no
``style=`` attribute, no script), so it can be inlined into a page whose Content-Security-Policy
forbids inline styles, and every piece of text that reaches it goes through :func:`esc`.
Coordinates are rounded to 0.1 px to keep the text small.

A *panel* is ``(body, width, height)``: SVG elements drawn in a ``width x height`` box with its
origin at the top left; :func:`compose` stacks panels into one ``<svg>``.
"""

from __future__ import annotations

import html
import math
import textwrap
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = [
    "BAND", "BAND_EDGE", "BAR", "BEAT", "COLORS", "FONT", "GRID", "INK", "MARK", "Frame", "Panel",
    "band", "bars_panel", "color", "compose", "esc", "legend", "line", "lines_panel", "marker",
    "nice_ticks", "num", "pitch_name", "rect", "text", "text_panel", "tick_text", "time_grid",
]

#: Colours of the two clips (Okabe-Ito blue and vermillion: safe for colour-blind readers).
COLORS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9")
#: Text and axes; grid lines.
INK = "#222222"
GRID = "#dddddd"
#: Bar lines (dark) and beat lines (light) of a time grid.
BAR = "#666666"
BEAT = "#d4d4d4"
#: A marked instant (e.g. the prompt/generated boundary), and highlighted spans.
MARK = "#009E73"
BAND = "#F0E442"
BAND_EDGE = "#B8A200"
#: The font attributes of every chart.
FONT = 'font-family="sans-serif" font-size="11"'
#: ``(body, width, height)``: SVG elements in a ``width x height`` box (origin top left).
Panel = tuple[str, float, float]

_NAMES = ("C", "C#", "D", "D#", "E", "F", "F#", "G", "G#", "A", "A#", "B")


def esc(text: object) -> str:
    """Text safe inside SVG/XML content and attribute values.

    Parameters
    ----------
    text : object
        Any value (``str`` of it is escaped, quotes included).

    Returns
    -------
    str
    """
    return html.escape(str(text), quote=True)


def num(x: float) -> str:
    """A coordinate with at most one decimal, no trailing zeros.

    Parameters
    ----------
    x : float
        The coordinate (px).

    Returns
    -------
    str
        ``"12.3"``, ``"12"``; never ``"-0"``.
    """
    s = f"{float(x):.1f}"
    if s.endswith(".0"):
        s = s[:-2]
    return "0" if s == "-0" else s


def color(i: int) -> str:
    """The colour of clip ``i``.

    Parameters
    ----------
    i : int
        The clip's position (the colours repeat after :data:`COLORS`).

    Returns
    -------
    str
        A ``#rrggbb`` colour.
    """
    return COLORS[i % len(COLORS)]


def pitch_name(p: int) -> str:
    """MIDI pitch as a note name, middle C (60) = ``C4``.

    Parameters
    ----------
    p : int
        The MIDI pitch.

    Returns
    -------
    str
        Sharps for the black keys (``C#4``).
    """
    return f"{_NAMES[int(p) % 12]}{int(p) // 12 - 1}"


def nice_ticks(lo: float, hi: float, n: int = 6) -> list[float]:
    """About ``n`` round tick values covering ``[lo, hi]`` (steps 1, 2, 2.5, 5 x 10^k).

    Parameters
    ----------
    lo, hi : float
        The range; an empty or non-finite range gives ``[lo]``.
    n : int
        About how many ticks.

    Returns
    -------
    list of float
    """
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        return [lo]
    raw = (hi - lo) / max(n, 1)
    mag = 10.0 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1.0, 2.0, 2.5, 5.0, 10.0) if m * mag >= raw)
    first = math.ceil(lo / step - 1e-9) * step
    out = []
    k = 0
    while first + k * step <= hi + 1e-9 * step:
        out.append(round(first + k * step, 10))
        k += 1
    return out


def tick_text(v: float) -> str:
    """A tick label: integers without decimals, else up to 3 significant digits.

    Parameters
    ----------
    v : float
        The tick value.

    Returns
    -------
    str
    """
    if abs(v - round(v)) < 1e-9:
        return str(round(v))
    return f"{v:.3g}"


def text(x: float, y: float, s: object, *, anchor: str = "start", extra: str = "") -> str:
    """A ``<text>`` element (content escaped).

    Parameters
    ----------
    x, y : float
        The anchor point (px).
    s : object
        The text.
    anchor : str
        ``text-anchor``: ``"start"``, ``"middle"`` or ``"end"``.
    extra : str
        More attributes, written as given (``' fill="#222"'``).

    Returns
    -------
    str
    """
    a = "" if anchor == "start" else f' text-anchor="{anchor}"'
    return f'<text x="{num(x)}" y="{num(y)}"{a}{extra}>{esc(s)}</text>'


def rect(x: float, y: float, w: float, h: float, fill: str, extra: str = "") -> str:
    """A ``<rect>`` element (a negative width or height is drawn as 0).

    Parameters
    ----------
    x, y : float
        The top-left corner (px).
    w, h : float
        Width and height (px).
    fill : str
        The fill colour.
    extra : str
        More attributes, written as given.

    Returns
    -------
    str
    """
    return (
        f'<rect x="{num(x)}" y="{num(y)}" width="{num(max(w, 0.0))}" '
        f'height="{num(max(h, 0.0))}" fill="{fill}"{extra}/>'
    )


def line(x1: float, y1: float, x2: float, y2: float, stroke: str = INK, extra: str = "") -> str:
    """A ``<line>`` element.

    Parameters
    ----------
    x1, y1, x2, y2 : float
        The end points (px).
    stroke : str
        The colour.
    extra : str
        More attributes, written as given.

    Returns
    -------
    str
    """
    return (
        f'<line x1="{num(x1)}" y1="{num(y1)}" x2="{num(x2)}" y2="{num(y2)}" '
        f'stroke="{stroke}"{extra}/>'
    )


def time_grid(
    xs: Sequence[float],
    offsets: Sequence[float],
    is_bar: Sequence[bool],
    bars: Sequence[int],
    top: float,
    h: float,
) -> str:
    """Vertical beat and bar lines from ``top`` down ``h`` px, bar numbers above the bar lines.

    Parameters
    ----------
    xs : sequence of float
        Pixel x of each line.
    offsets : sequence of float
        The time of each line (written as ``data-offset``).
    is_bar : sequence of bool
        Bar line (dark, 1.6 px, ``class="bar"``) or beat line (light, 0.8 px,
        ``class="beat"``).
    bars : sequence of int
        The number printed above a bar line.
    top, h : float
        Where the lines start and how long they are (px).

    Returns
    -------
    str
        One ``<g class="grid">``.
    """
    out = ['<g class="grid">']
    for x, o, b, n in zip(xs, offsets, is_bar, bars, strict=True):
        kind, stroke, w = ("bar", BAR, "1.6") if b else ("beat", BEAT, "0.8")
        out.append(
            f'<line class="{kind}" data-offset="{float(o):.4f}" x1="{num(x)}" y1="{num(top)}" '
            f'x2="{num(x)}" y2="{num(top + h)}" stroke="{stroke}" stroke-width="{w}"/>'
        )
        if b:
            out.append(
                text(x, top - 5, int(n), anchor="middle", extra=f' class="bar-number" fill="{BAR}"')
            )
    out.append("</g>")
    return "".join(out)


def band(x0: float, x1: float, top: float, h: float, label: str, *, extra: str = "") -> str:
    """A translucent highlighted span ``[x0, x1]`` with its label at the bottom left.

    Parameters
    ----------
    x0, x1 : float
        The span (px; at least 2 px wide).
    top, h : float
        Its top and height (px).
    label : str
        The label.
    extra : str
        More attributes of the group, written as given.

    Returns
    -------
    str
        One ``<g class="highlight">``.
    """
    return (
        f'<g class="highlight"{extra}>'
        + rect(x0, top, max(x1 - x0, 2.0), h, BAND, f' fill-opacity="0.35" stroke="{BAND_EDGE}"')
        + text(x0 + 3, top + h - 4, label, extra=' font-weight="bold" fill="#5a4d00"')
        + "</g>"
    )


def marker(x: float, top: float, h: float, label: str, stroke: str, *, css: str) -> str:
    """A dashed vertical line at ``x`` with its label on a light plate at the top.

    Parameters
    ----------
    x : float
        Where (px).
    top, h : float
        The line's top and length (px).
    label : str
        The label.
    stroke : str
        The colour of the line and the label.
    css : str
        The group's class.

    Returns
    -------
    str
    """
    w = 6.6 * len(label) + 8
    return (
        f'<g class="{esc(css)}">'
        + line(x, top - 2, x, top + h, stroke, ' stroke-width="2.2" stroke-dasharray="6 3"')
        + rect(x - w / 2, top + 2, w, 15, "#ffffff", ' fill-opacity="0.85"')
        + text(x, top + 13, label, anchor="middle", extra=f' font-weight="bold" fill="{stroke}"')
        + "</g>"
    )


def compose(panels: Sequence[Panel], *, label: str, gap: float = 6.0) -> str:
    """Stack panels vertically into one ``<svg>`` document.

    Parameters
    ----------
    panels : sequence of Panel
        The panels, top to bottom; the document is as wide as the widest.
    label : str
        The document's accessible name (``aria-label`` and ``<title>``).
    gap : float
        Space between panels (px).

    Returns
    -------
    str
    """
    width = max((p[1] for p in panels), default=100.0)
    parts, y = [], 0.0
    for body, _, h in panels:
        parts.append(f'<g transform="translate(0,{num(y)})">{body}</g>')
        y += h + gap
    height = max(y - gap, 1.0)
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{num(width)}" height="{num(height)}" '
        f'viewBox="0 0 {num(width)} {num(height)}" role="img" aria-label="{esc(label)}" '
        f'{FONT} fill="{INK}"><title>{esc(label)}</title>{"".join(parts)}</svg>'
    )


def text_panel(lines: Sequence[str], *, width: float = 440.0, size: int = 12) -> Panel:
    """Lines of plain text, wrapped to the width (e.g. why a channel has no evidence).

    Parameters
    ----------
    lines : sequence of str
        The paragraphs.
    width : float
        The panel's width (px).
    size : int
        Font size (px).

    Returns
    -------
    Panel
    """
    chars = max(int((width - 16) / (0.56 * size)), 20)
    lines = [w for s in lines for w in (textwrap.wrap(str(s), chars) or [""])]
    body = "".join(
        text(8, 16 + i * (size + 5), s, extra=f' font-size="{size}"') for i, s in enumerate(lines)
    )
    return body, width, 12.0 + len(lines) * (size + 5)


def legend(labels: Sequence[str], x: float, y: float, *, extra: str = "") -> str:
    """Colour keys of the clips in a row starting at ``(x, y)``.

    Parameters
    ----------
    labels : sequence of str
        One label per clip, in clip order (the colours of :func:`color`).
    x, y : float
        Where the row starts (px).
    extra : str
        A last key in ink (text), if any.

    Returns
    -------
    str
    """
    out, cx = [], x
    for i, lab in enumerate(labels):
        out.append(rect(cx, y - 8, 10, 10, color(i)))
        out.append(text(cx + 14, y + 1, lab))
        cx += 24 + 6.5 * len(str(lab))
    if extra:
        out.append(text(cx, y + 1, extra, extra=f' fill="{INK}"'))
    return "".join(out)


class Frame:
    """Plot area of a panel: data ranges mapped to pixels, with axes and tick labels.

    Parameters
    ----------
    x_range, y_range : tuple of float
        The data ranges (an empty range is widened to length 1).
    width, height : float
        The panel (px).
    left, right, top, bottom : float
        The margins around the plot area (px).
    """

    def __init__(
        self,
        x_range: tuple[float, float],
        y_range: tuple[float, float],
        *,
        width: float,
        height: float,
        left: float = 44.0,
        right: float = 10.0,
        top: float = 40.0,
        bottom: float = 32.0,
    ) -> None:
        self.x0, self.x1 = float(x_range[0]), float(x_range[1])
        self.y0, self.y1 = float(y_range[0]), float(y_range[1])
        if self.x1 <= self.x0:
            self.x1 = self.x0 + 1.0
        if self.y1 <= self.y0:
            self.y1 = self.y0 + 1.0
        self.width, self.height = width, height
        self.left, self.right, self.top, self.bottom = left, right, top, bottom
        self.pw = width - left - right
        self.ph = height - top - bottom

    def px(self, x: Any) -> Any:
        """Data x to pixels.

        Parameters
        ----------
        x : array_like
            Data x values.

        Returns
        -------
        numpy.ndarray or float
        """
        return self.left + (np.asarray(x, dtype=float) - self.x0) / (self.x1 - self.x0) * self.pw

    def py(self, y: Any) -> Any:
        """Data y to pixels (up is larger).

        Parameters
        ----------
        y : array_like
            Data y values.

        Returns
        -------
        numpy.ndarray or float
        """
        return (
            self.top
            + self.ph
            - (np.asarray(y, dtype=float) - self.y0) / (self.y1 - self.y0) * self.ph
        )

    def axes(
        self,
        *,
        title: str,
        xlabel: str,
        ylabel: str,
        xticks: Sequence[tuple[float, str]] | None = None,
        yticks: Sequence[tuple[float, str]] | None = None,
    ) -> str:
        """Title, axis lines, grid, tick labels and axis labels.

        Parameters
        ----------
        title, xlabel, ylabel : str
            The panel's title and the axis labels.
        xticks, yticks : sequence of (float, str), optional
            Ticks as (data value, label); default: :func:`nice_ticks` of the range.

        Returns
        -------
        str
        """
        out = [text(self.left, 14, title, extra=' font-weight="bold"')]
        if yticks is None:
            yticks = [(v, tick_text(v)) for v in nice_ticks(self.y0, self.y1, 4)]
        if xticks is None:
            xticks = [(v, tick_text(v)) for v in nice_ticks(self.x0, self.x1, 8)]
        base = self.top + self.ph
        for v, s in yticks:
            y = float(self.py(v))
            out.append(line(self.left, y, self.left + self.pw, y, GRID))
            out.append(text(self.left - 4, y + 4, s, anchor="end"))
        for v, s in xticks:
            x = float(self.px(v))
            out.append(line(x, base, x, base + 4))
            out.append(text(x, base + 15, s, anchor="middle"))
        out.append(line(self.left, base, self.left + self.pw, base))
        out.append(line(self.left, self.top, self.left, base))
        out.append(text(self.left + self.pw / 2, self.height - 3, xlabel, anchor="middle"))
        cy = self.top + self.ph / 2
        out.append(
            text(11, cy, ylabel, anchor="middle", extra=f' transform="rotate(-90 11 {num(cy)})"')
        )
        return "".join(out)


def bars_panel(
    values: Sequence[np.ndarray],
    labels: Sequence[str],
    *,
    ticks: Sequence[tuple[int, str]],
    title: str,
    xlabel: str,
    ylabel: str,
    width: float = 440.0,
    height: float = 180.0,
    overlap: bool = True,
) -> Panel:
    """Histograms of the clips side by side in each bin; the overlap ``min`` drawn as a dark line.

    Parameters
    ----------
    values : sequence of numpy.ndarray
        One array per clip, all of the same length (the bins).
    labels : sequence of str
        The clips' legend labels.
    ticks : sequence of (int, str)
        x ticks as (bin index, label).
    title, xlabel, ylabel : str
        The panel's title and axis labels.
    width, height : float
        The panel (px).
    overlap : bool
        With two clips, draw their overlap (the bin-wise minimum).

    Returns
    -------
    Panel
    """
    v = [np.asarray(a, dtype=float) for a in values]
    nb = len(v[0]) if v else 1
    top = max((float(a.max()) for a in v if a.size), default=0.0)
    f = Frame((0.0, float(nb)), (0.0, top * 1.08 if top > 0 else 1.0), width=width, height=height)
    out = [
        f.axes(title=title, xlabel=xlabel, ylabel=ylabel, xticks=[(i + 0.5, s) for i, s in ticks])
    ]
    bw = f.pw / nb
    sub = bw * 0.8 / max(len(v), 1)
    for k, a in enumerate(v):
        col = color(k)
        for i, h in enumerate(a):
            if h > 0:
                y = float(f.py(h))
                out.append(
                    rect(f.left + i * bw + bw * 0.1 + k * sub, y, sub, f.top + f.ph - y, col)
                )
    if overlap and len(v) == 2:
        common = np.minimum(v[0], v[1])
        for i, h in enumerate(common):
            if h > 0:
                y = float(f.py(h))
                out.append(
                    line(
                        f.left + i * bw + 1,
                        y,
                        f.left + (i + 1) * bw - 1,
                        y,
                        INK,
                        ' stroke-width="2"',
                    )
                )
    out.append(legend(labels, f.left, 30, extra="— overlap (shared share)" if overlap else ""))
    return "".join(out), width, height


def lines_panel(
    series: Sequence[tuple[np.ndarray, np.ndarray]],
    labels: Sequence[str],
    *,
    x_range: tuple[float, float],
    y_range: tuple[float, float],
    title: str,
    xlabel: str,
    ylabel: str,
    bands: Sequence[tuple[np.ndarray, np.ndarray] | None] | None = None,
    step: bool = False,
    width: float = 440.0,
    height: float = 180.0,
    xticks: Sequence[tuple[float, str]] | None = None,
    dots: bool = False,
) -> Panel:
    """Curves of the clips on one pair of axes (NaN breaks a curve); optional shaded bands.

    Parameters
    ----------
    series : sequence of (numpy.ndarray, numpy.ndarray)
        One ``(x, y)`` per clip; y is clipped to ``y_range``.
    labels : sequence of str
        The clips' legend labels.
    x_range, y_range : tuple of float
        The data ranges.
    title, xlabel, ylabel : str
        The panel's title and axis labels.
    bands : sequence of (numpy.ndarray, numpy.ndarray) or None, optional
        Per clip, a ``(lo, hi)`` band shaded under its curve (``None``: none).
    step : bool
        Draw the curves as steps.
    width, height : float
        The panel (px).
    xticks : sequence of (float, str), optional
        x ticks as (data value, label).
    dots : bool
        Also mark each point.

    Returns
    -------
    Panel
    """
    f = Frame(x_range, y_range, width=width, height=height)
    out = [f.axes(title=title, xlabel=xlabel, ylabel=ylabel, xticks=xticks)]
    for k, (x, y) in enumerate(series):
        col = color(k)
        x = np.asarray(x, dtype=float)
        y = np.clip(np.asarray(y, dtype=float), f.y0, f.y1)
        band = bands[k] if bands is not None else None
        if band is not None:
            lo, hi = (np.clip(np.asarray(b, dtype=float), f.y0, f.y1) for b in band)
            corners = [
                *zip(f.px(x), f.py(hi), strict=True),
                *zip(f.px(x[::-1]), f.py(lo[::-1]), strict=True),
            ]
            out.append(
                f'<polygon points="{" ".join(f"{num(a)},{num(b)}" for a, b in corners)}" '
                f'fill="{col}" fill-opacity="0.15"/>'
            )
        for seg_x, seg_y in _runs(x, y, step=step):
            pts = " ".join(
                f"{num(a)},{num(b)}" for a, b in zip(f.px(seg_x), f.py(seg_y), strict=True)
            )
            out.append(f'<polyline points="{pts}" fill="none" stroke="{col}" stroke-width="1.6"/>')
        if dots:
            for a, b in zip(f.px(x), f.py(y), strict=True):
                if np.isfinite(b):
                    out.append(f'<circle cx="{num(a)}" cy="{num(b)}" r="2" fill="{col}"/>')
    out.append(legend(labels, f.left, 30))
    return "".join(out), width, height


def _runs(x: np.ndarray, y: np.ndarray, *, step: bool) -> list[tuple[np.ndarray, np.ndarray]]:
    """Finite stretches of a curve; a step curve keeps only its corners."""
    ok = np.isfinite(y)
    out = []
    i, n = 0, len(y)
    while i < n:
        if not ok[i]:
            i += 1
            continue
        j = i
        while j < n and ok[j]:
            j += 1
        xs, ys = x[i:j], y[i:j]
        if step and len(xs) > 1:
            keep = np.concatenate([[True], ys[1:] != ys[:-1]])
            idx = np.flatnonzero(keep)
            sx = [xs[idx[0]]]
            sy = [ys[idx[0]]]
            for a in idx[1:]:
                sx += [xs[a], xs[a]]
                sy += [ys[a - 1], ys[a]]
            sx.append(xs[-1])
            sy.append(ys[-1])
            xs, ys = np.asarray(sx), np.asarray(sy)
        out.append((xs, ys))
        i = j
    return out
