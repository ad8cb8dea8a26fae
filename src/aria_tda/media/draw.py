r"""Pictures of clips: piano rolls (SVG) and audio panels (PNG) on shared scales.

Conventions
-----------
- Notes are a :class:`pandas.DataFrame` with columns ``pitch`` (MIDI 0-127), ``start``, ``end``
  (seconds from the clip start), ``velocity`` (1-127) and optionally ``is_drum`` (bool) and
  ``program``; audio is ``float`` mono samples with their sample rate ``sr``.
- A *window* is the attributed span ``(a, b)`` in seconds from the clip start (the clip holds
  some context around it); it is marked in every picture and everything outside it is shaded.
- Piano rolls (:func:`piano_roll_svg`) stack one lane per clip on the *same* time axis (seconds)
  and the *same* pitch axis (note names, middle C = C4): the lanes can be compared by eye.
  Velocity is the note's shade (fill opacity :math:`0.2 + 0.8\,v / 127`, in 8 steps). Drums are
  grey. The SVG uses presentation attributes only (no inline CSS, no script) and escapes every
  label, so it can be inlined into a page with a strict Content-Security-Policy.
- Audio panels (:func:`audio_panels_png`): a constant-Q spectrogram (dB, C1-B7), the chromagram,
  the tracked beats (ticks) and the estimated chords (labelled spans), drawn with matplotlib's
  Agg canvas and written as a palette PNG (about 900 x 420 px). Beats and chords come from the
  library's own audio channel (:func:`aria_tda.features.audio.extract.analyze_audio`: librosa's
  beat tracker and the template/Viterbi chord recogniser) unless given.
"""

from __future__ import annotations

import io
import math
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from aria_tda._optional import require
from aria_tda.errors import DataError, ParameterError, expected
from aria_tda.media import svg

__all__ = [
    "DB_RANGE",
    "audio_panels_png",
    "check_audio",
    "check_notes",
    "cqt_db_chroma",
    "palette_png",
    "piano_roll_svg",
]

_COLUMNS = ("pitch", "start", "end", "velocity")
_SHADES = 8
_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
#: The dB range of every spectrogram: 80 dB below the clip's (or excerpt's) own peak up to it.
DB_RANGE = (-80.0, 0.0)
#: Hop of the constant-Q transforms (samples).
HOP = 512


def check_notes(name: str, notes: Any) -> pd.DataFrame:
    """Validate a notes table and return it with plain dtypes (and ``is_drum`` filled in).

    Parameters
    ----------
    name : str
        The argument's name, for error messages.
    notes : pandas.DataFrame
        Columns ``pitch``, ``start``, ``end``, ``velocity`` (``is_drum`` optional).

    Returns
    -------
    pandas.DataFrame
        Columns ``pitch`` (int), ``start``, ``end`` (float seconds), ``velocity`` (int),
        ``is_drum`` (bool), in the input's row order.
    """
    if not isinstance(notes, pd.DataFrame):
        raise DataError(expected(name, "a pandas DataFrame of notes", type(notes).__name__))
    missing = [c for c in _COLUMNS if c not in notes.columns]
    if missing:
        raise DataError(
            expected(name, "columns " + ", ".join(_COLUMNS), "no column " + ", ".join(missing))
        )
    out = pd.DataFrame(
        {
            "pitch": pd.to_numeric(notes["pitch"], errors="coerce"),
            "start": pd.to_numeric(notes["start"], errors="coerce").astype(float),
            "end": pd.to_numeric(notes["end"], errors="coerce").astype(float),
            "velocity": pd.to_numeric(notes["velocity"], errors="coerce"),
        }
    )
    vals = out.to_numpy(dtype=float)
    if not np.all(np.isfinite(vals)):
        raise DataError(expected(name, "finite pitch, start, end and velocity", "NaN or inf"))
    if len(out) and (out["pitch"].min() < 0 or out["pitch"].max() > 127):
        raise DataError(expected(name + ".pitch", "MIDI pitches 0..127", out["pitch"].max()))
    if np.any(out["end"] < out["start"]):
        raise DataError(expected(name + ".end", "note ends no earlier than starts", "end < start"))
    out["pitch"] = out["pitch"].astype(np.int64)
    out["velocity"] = out["velocity"].clip(0, 127).astype(np.int64)
    if "is_drum" in notes.columns:
        out["is_drum"] = notes["is_drum"].fillna(False).astype(bool).to_numpy()
    else:
        out["is_drum"] = False
    return out


def _window(name: str, w: Any) -> tuple[float, float] | None:
    if w is None:
        return None
    try:
        a, b = (float(v) for v in w)
    except (TypeError, ValueError):
        raise ParameterError(expected(name, "a pair (a, b) of seconds or None", w)) from None
    if not (math.isfinite(a) and math.isfinite(b)) or b < a:
        raise ParameterError(expected(name, "finite seconds with a <= b", w))
    return a, b


def _pair(name: str, value: Any) -> tuple[float, float]:
    try:
        lo, hi = (float(v) for v in value)
    except (TypeError, ValueError):
        raise ParameterError(expected(name, "a pair (lo, hi)", value)) from None
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        raise ParameterError(expected(name, "finite values with lo < hi", value))
    return lo, hi


def piano_roll_svg(
    notes_list: Sequence[pd.DataFrame | None],
    labels: Sequence[str],
    windows: Sequence[tuple[float, float] | None],
    *,
    t_range: tuple[float, float] | None = None,
    pitch_range: tuple[int, int] | None = None,
    width: int = 900,
) -> str:
    """Piano rolls of several clips, one lane each, on the same time and pitch axes.

    Parameters
    ----------
    notes_list : sequence of pandas.DataFrame or None
        One notes table per clip (see the module docstring); ``None`` draws an empty lane
        that says the clip has no notes (e.g. an audio clip).
    labels : sequence of str
        One lane title per clip (escaped; any text is safe).
    windows : sequence of (float, float) or None
        The attributed window of each clip in seconds (``None``: no window marked).
    t_range : (float, float), optional
        Time axis in seconds; default: from 0 to the latest note end or window end.
    pitch_range : (int, int), optional
        Lowest and highest MIDI pitch shown; default: the notes' range plus one semitone each
        side, at least an octave.
    width : int
        Picture width in pixels (200-4000).

    Returns
    -------
    str
        An ``<svg>`` document (``role="img"``, one ``<g class="lane">`` per clip).

    Raises
    ------
    ParameterError
        Lists of different lengths, a bad window or range.
    DataError
        A notes table without the required columns or with invalid values.
    """
    n = len(notes_list)
    if n == 0:
        raise ParameterError(expected("notes_list", "at least one clip", 0))
    if len(labels) != n:
        raise ParameterError(expected("labels", f"{n} labels (one per clip)", len(labels)))
    if len(windows) != n:
        raise ParameterError(expected("windows", f"{n} windows (one per clip)", len(windows)))
    if (
        isinstance(width, bool)
        or not isinstance(width, int | np.integer)
        or not (200 <= width <= 4000)
    ):
        raise ParameterError(expected("width", "an integer number of pixels in 200..4000", width))
    tables = [
        None if t is None else check_notes(f"notes_list[{i}]", t) for i, t in enumerate(notes_list)
    ]
    wins = [_window(f"windows[{i}]", w) for i, w in enumerate(windows)]
    if t_range is None:
        ends = [float(t["end"].max()) for t in tables if t is not None and len(t)]
        ends += [w[1] for w in wins if w is not None]
        t0, t1 = 0.0, max(ends, default=1.0)
        if t1 <= t0:
            t1 = t0 + 1.0
    else:
        t0, t1 = _pair("t_range", t_range)
    if pitch_range is None:
        pitched = [t.loc[~t["is_drum"], "pitch"] for t in tables if t is not None]
        allp = pd.concat(pitched) if pitched else pd.Series([], dtype=np.int64)
        lo, hi = (int(allp.min()) - 1, int(allp.max()) + 1) if len(allp) else (59, 72)
        if hi - lo < 12:
            mid = (lo + hi) // 2
            lo, hi = mid - 6, mid + 6
        lo, hi = max(lo, 0), min(hi, 127)
    else:
        plo, phi = _pair("pitch_range", pitch_range)
        lo, hi = int(plo), int(phi)
    span = hi - lo + 1
    pps = min(max(150.0 / span, 2.0), 8.0)  # pixels per semitone
    lane_h = span * pps
    left, right, head, gap, axis = 48.0, 12.0, 18.0, 10.0, 34.0
    pw = width - left - right

    def px(t: Any) -> Any:
        return left + (np.asarray(t, dtype=float) - t0) / (t1 - t0) * pw

    parts: list[str] = []
    y = 0.0
    for k, (tab, lab, win) in enumerate(zip(tables, labels, wins, strict=True)):
        top = y + head
        parts.append(f'<g class="lane" data-lane="{k}">')
        parts.append(svg.text(left, y + 13, lab, extra=' font-weight="bold"'))
        parts.append(svg.rect(left, top, pw, lane_h, "#fafafa", ' stroke="#bbbbbb"'))
        for p in range(lo, hi + 1):
            if p % 12 == 0:
                yy = top + (hi - p + 1) * pps - pps / 2
                parts.append(svg.line(left, yy, left + pw, yy, svg.GRID))
                parts.append(svg.text(left - 4, yy + 4, svg.pitch_name(p), anchor="end"))
        if tab is None:
            parts.append(
                svg.text(
                    left + pw / 2,
                    top + lane_h / 2 + 4,
                    "no notes (audio clip)",
                    anchor="middle",
                    extra=' fill="#777777"',
                )
            )
        else:
            parts.append(_notes_svg(tab, k, px, top, hi, lo, pps, t0, t1))
        if win is not None:
            parts.append(_window_svg(win, px, top, lane_h, left, pw))
        parts.append("</g>")
        y = top + lane_h + gap
    base = y - gap
    for v in svg.nice_ticks(t0, t1, 12):
        x = float(px(v))
        parts.append(svg.line(x, base, x, base + 4))
        parts.append(svg.text(x, base + 16, svg.tick_text(v), anchor="middle"))
    parts.append(svg.text(left + pw / 2, base + 30, "time (s)", anchor="middle"))
    height = base + axis
    label = "Piano rolls: " + "; ".join(str(s) for s in labels)
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{svg.num(height)}" '
        f'viewBox="0 0 {width} {svg.num(height)}" role="img" aria-label="{svg.esc(label)}" '
        f'{svg.FONT} fill="{svg.INK}"><title>{svg.esc(label)}</title>{"".join(parts)}</svg>'
    )


def _notes_svg(
    tab: pd.DataFrame,
    k: int,
    px: Any,
    top: float,
    hi: int,
    lo: int,
    pps: float,
    t0: float,
    t1: float,
) -> str:
    vis = tab[(tab["end"] >= t0) & (tab["start"] <= t1) & tab["pitch"].between(lo, hi)]
    if vis.empty:
        return ""
    x0 = px(np.maximum(vis["start"].to_numpy(), t0))
    x1 = px(np.minimum(vis["end"].to_numpy(), t1))
    yy = top + (hi - vis["pitch"].to_numpy()) * pps
    shade = np.clip((vis["velocity"].to_numpy() * _SHADES) // 128, 0, _SHADES - 1)
    drum = vis["is_drum"].to_numpy()
    out = []
    for is_drum in (False, True):
        fill = "#777777" if is_drum else svg.color(k)
        for s in range(_SHADES):
            sel = np.flatnonzero((shade == s) & (drum == is_drum))
            if sel.size == 0:
                continue
            op = 0.2 + 0.8 * (s + 0.5) / _SHADES
            rects = "".join(
                f'<rect x="{svg.num(x0[i])}" y="{svg.num(yy[i])}" '
                f'width="{svg.num(max(x1[i] - x0[i], 1.0))}" height="{svg.num(max(pps, 1.0))}"/>'
                for i in sel
            )
            out.append(f'<g fill="{fill}" fill-opacity="{op:.2f}">{rects}</g>')
    return "".join(out)


def _window_svg(
    win: tuple[float, float], px: Any, top: float, h: float, left: float, pw: float
) -> str:
    a, b = (float(np.clip(px(v), left, left + pw)) for v in win)
    shade = ' fill-opacity="0.45"'
    out = [
        svg.rect(left, top, a - left, h, "#cccccc", shade),
        svg.rect(b, top, left + pw - b, h, "#cccccc", shade),
        svg.line(a, top, a, top + h, svg.INK, ' stroke-dasharray="4 3"'),
        svg.line(b, top, b, top + h, svg.INK, ' stroke-dasharray="4 3"'),
    ]
    return '<g class="window">' + "".join(out) + "</g>"


def check_audio(
    samples: Any, sr: Any, *, name: str = "samples", sr_name: str = "sr"
) -> tuple[np.ndarray, int]:
    """Validate mono audio and its sample rate.

    Parameters
    ----------
    samples : np.ndarray [shape=(n,)]
        Mono samples (any float-convertible dtype).
    sr : int
        Sample rate in Hz (8000..192000).
    name, sr_name : str
        The arguments' names, for error messages.

    Returns
    -------
    (np.ndarray [shape=(n,), dtype=float32], int)
        The samples and the sample rate.

    Raises
    ------
    DataError
        Not a non-empty 1-D array of finite samples.
    ParameterError
        A sample rate that is not an integer in 8000..192000.
    """
    y = np.asarray(samples, dtype=np.float32)
    if y.ndim != 1 or y.size == 0:
        raise DataError(expected(name, "a non-empty 1-D array of mono samples", y.shape))
    if not np.all(np.isfinite(y)):
        raise DataError(expected(name, "finite samples", "NaN or inf"))
    if isinstance(sr, bool) or not isinstance(sr, int | np.integer) or not 8000 <= sr <= 192000:
        raise ParameterError(expected(sr_name, "a sample rate in Hz (8000..192000)", sr))
    return y, int(sr)


def cqt_db_chroma(y: np.ndarray, sr: int) -> tuple[np.ndarray, np.ndarray]:
    r"""The constant-Q spectrogram in dB and the chromagram every audio picture shows.

    Parameters
    ----------
    y : np.ndarray [shape=(n,)]
        Mono audio (validated with :func:`check_audio`).
    sr : int
        Sample rate in Hz.

    Returns
    -------
    db : np.ndarray [shape=(n_bins, n_frames)]
        :math:`20 \log_{10}(|C| / \max |C|)`, clipped to :data:`DB_RANGE` (semitone bins from
        C1, at most 84, fewer when the Nyquist frequency is lower; hop :data:`HOP` samples).
    chroma : np.ndarray [shape=(12, n_frames)]
        librosa's ``chroma_cqt`` of the same transform, in [0, 1] (C first).

    Raises
    ------
    MissingDependencyError
        librosa (``audio`` extra) is missing.
    """
    librosa = require("librosa", "audio", purpose="audio pictures")
    from aria_tda.features.audio.jit import in_process
    from aria_tda.features.audio.params import FMIN

    n_bins = int(min(84, 12 * math.floor(math.log2(sr / 2 / FMIN))))
    with warnings.catch_warnings(), in_process():
        warnings.simplefilter("ignore", UserWarning)  # librosa on very short or quiet input
        c = np.abs(
            librosa.cqt(y, sr=sr, hop_length=HOP, fmin=FMIN, n_bins=n_bins, bins_per_octave=12)
        )
        chroma = librosa.feature.chroma_cqt(
            C=c, sr=sr, hop_length=HOP, bins_per_octave=12, fmin=FMIN
        )
    db = librosa.amplitude_to_db(c, ref=max(float(c.max()), 1e-10), top_db=-DB_RANGE[0])
    return np.clip(db, *DB_RANGE), chroma


def audio_panels_png(
    samples: np.ndarray,
    sr: int,
    window: tuple[float, float] | None,
    *,
    beats: np.ndarray | None = None,
    chords: Sequence[Any] | None = None,
    title: str | None = None,
    width: int = 900,
    height: int = 420,
) -> bytes:
    """CQT spectrogram, chromagram, beats and chords of one clip as a PNG.

    Parameters
    ----------
    samples : np.ndarray [shape=(n,)]
        Mono audio.
    sr : int
        Sample rate in Hz.
    window : (float, float) or None
        The attributed window in seconds from the clip start (marked; outside shaded).
    beats : np.ndarray [shape=(k,)], optional
        Beat times in seconds; default: tracked by the library's audio channel.
    chords : sequence of ChordSegment or (start, end, label), optional
        Chord spans in seconds; default: recognised by the library's audio channel.
    title : str, optional
        Figure title.
    width, height : int
        Picture size in pixels.

    Returns
    -------
    bytes
        A PNG (8-bit palette).

    Raises
    ------
    DataError
        Empty or non-finite audio.
    MissingDependencyError
        librosa (``audio`` extra) or matplotlib (``report`` extra) is missing.
    """
    y, sr = check_audio(samples, sr)
    win = _window("window", window)
    for name, v, lo_, hi_ in (("width", width, 300, 4000), ("height", height, 200, 4000)):
        if isinstance(v, bool) or not isinstance(v, int | np.integer) or not lo_ <= v <= hi_:
            raise ParameterError(expected(name, f"an integer number of pixels in {lo_}..{hi_}", v))
    require("librosa", "audio", purpose="audio pictures")
    require("matplotlib", "report", purpose="audio pictures")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    note = ""
    if beats is None or chords is None:
        found_beats, found_chords, note = _beats_and_chords(y, sr)
        beats = found_beats if beats is None else beats
        chords = found_chords if chords is None else chords
    beats = np.asarray(beats, dtype=float).ravel()
    spans = [_span(c) for c in chords]
    db, chroma = cqt_db_chroma(y, sr)
    dur = y.size / sr
    dpi = 100
    fig = Figure(figsize=(width / dpi, height / dpi), dpi=dpi, layout="constrained")
    FigureCanvasAgg(fig)
    gs = fig.add_gridspec(3, 1, height_ratios=(3.0, 1.6, 0.8))
    ax_c = fig.add_subplot(gs[0])
    ax_h = fig.add_subplot(gs[1], sharex=ax_c)
    ax_k = fig.add_subplot(gs[2], sharex=ax_c)
    ext = (0.0, dur, 0.0, float(db.shape[0]))
    ax_c.imshow(
        db,
        origin="lower",
        aspect="auto",
        extent=ext,
        cmap="magma",
        interpolation="nearest",
        vmin=DB_RANGE[0],
        vmax=DB_RANGE[1],
    )
    octaves = range(0, db.shape[0], 12)
    ax_c.set_yticks([o + 0.5 for o in octaves], [f"C{1 + o // 12}" for o in octaves])
    ax_c.set_ylabel("CQT (dB)")
    ax_h.imshow(
        chroma,
        origin="lower",
        aspect="auto",
        extent=(0.0, dur, 0.0, 12.0),
        cmap="Greys",
        interpolation="nearest",
        vmin=0.0,
        vmax=1.0,
    )
    ax_h.set_yticks([0.5, 4.5, 7.5, 11.5], ["C", "E", "G", "B"])
    ax_h.set_ylabel("chroma")
    for t in beats:
        ax_c.axvline(t, color="#56B4E9", linewidth=0.7, alpha=0.8)
    _chord_strip(ax_k, spans, beats, dur)
    for ax in (ax_c, ax_h, ax_k):
        ax.set_xlim(0.0, dur)
        if win is not None:
            a, b = win
            ax.axvspan(0.0, a, color="white", alpha=0.55, linewidth=0)
            ax.axvspan(b, dur, color="white", alpha=0.55, linewidth=0)
            for t in win:
                ax.axvline(t, color="#009E73", linewidth=1.4, linestyle="--")
        ax.tick_params(labelsize=8)
    ax_c.tick_params(labelbottom=False)
    ax_h.tick_params(labelbottom=False)
    ax_k.set_xlabel("time (s)", fontsize=8)
    head = title or "Audio"
    if win is not None:
        head += f" — window {win[0]:.2f}–{win[1]:.2f} s (dashed)"
    fig.suptitle(head + note, fontsize=9)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    return palette_png(buf.getvalue())


def _beats_and_chords(y: np.ndarray, sr: int) -> tuple[np.ndarray, list[Any], str]:
    from aria_tda.features.audio.extract import analyze_audio
    from aria_tda.features.audio.params import AudioFeatureParams

    try:
        a = analyze_audio(y, sr, params=AudioFeatureParams(sr=sr))
    except DataError as exc:
        return np.zeros(0), [], f" (no beats or chords: {str(exc)[:60]})"
    return a.beats, list(a.chords), ""


def _span(c: Any) -> tuple[float, float, str]:
    if hasattr(c, "start") and hasattr(c, "label"):
        return float(c.start), float(c.end), str(c.label)
    try:
        s, e, lab = c
    except (TypeError, ValueError):
        raise ParameterError(
            expected("chords", "ChordSegments or (start, end, label) triples", c)
        ) from None
    return float(s), float(e), str(lab)


def _chord_strip(
    ax: Any, spans: list[tuple[float, float, str]], beats: np.ndarray, dur: float
) -> None:
    ax.set_ylim(0.0, 1.0)
    ax.set_yticks([])
    ax.set_ylabel("chords", fontsize=8)
    for i, (s, e, lab) in enumerate(spans):
        if lab == "N" or e <= s:
            continue
        ax.axvspan(
            s,
            e,
            ymin=0.3,
            ymax=1.0,
            color=("#E69F00" if i % 2 else "#F0E442"),
            alpha=0.6,
            linewidth=0,
        )
        if (e - s) / max(dur, 1e-9) > 0.025:
            ax.text(
                (s + e) / 2,
                0.65,
                lab.replace(":maj", "").replace(":min", "m"),
                ha="center",
                va="center",
                fontsize=7,
                clip_on=True,
            )
    for t in beats:
        ax.plot([t, t], [0.0, 0.25], color="#0072B2", linewidth=1.0)


def palette_png(png: bytes) -> bytes:
    """Re-encode a PNG as an 8-bit palette PNG (a third of the size of matplotlib's RGBA).

    Parameters
    ----------
    png : bytes
        Any PNG (e.g. matplotlib's RGBA output).

    Returns
    -------
    bytes
        The same picture with at most 128 colours (median cut), optimised.
    """
    from PIL import Image

    with Image.open(io.BytesIO(png)) as im:
        pal = im.convert("RGB").quantize(colors=128, method=Image.Quantize.MEDIANCUT)
        out = io.BytesIO()
        pal.save(out, format="PNG", optimize=True)
    data = out.getvalue()
    if not data.startswith(_PNG_SIGNATURE):  # pragma: no cover - Pillow always writes PNG
        raise DataError("palette_png: Pillow did not write a PNG")
    return data
