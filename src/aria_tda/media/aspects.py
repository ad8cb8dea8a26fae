r"""Per-channel evidence for one (query, training item) pair: the numbers behind a channel, drawn.

:func:`aspect_evidence` takes two clips — objects (or mappings) with the fields of
:class:`aria_tda.media.clips.Clip`: ``samples`` (mono float audio or ``None``), ``sr``,
``window`` (the attributed span in seconds from the clip start) and ``notes`` (a notes table,
see :mod:`aria_tda.media.draw`, or ``None`` for audio) — and returns an :class:`AspectEvidence`:
an SVG chart, a similarity in [0, 1] and one plain-English sentence that names its units.

Conventions
-----------
- Only the attributed window counts (context around it is for listening). Times in the
  charts are seconds from the window start.
- Symbolic evidence is used when both clips have notes, audio evidence when both have
  samples; a channel that needs what the pair lacks (melody and texture need notes, timbre
  needs audio) returns an :class:`AspectEvidence` whose similarity is NaN and whose sentence
  says what is missing — never an exception.
- Drums are left out of the pitch-based views (melody, harmony, texture), as in the symbolic
  features (:mod:`aria_tda.features.symbolic`).
- Audio evidence is what the library's audio channel computes
  (:func:`aria_tda.features.audio.extract.analyze_audio` on the window: beat and onset interval
  histograms, mean chroma, template/Viterbi chords, MFCC mean and SD).

Similarities (each equals 1 for a clip compared with itself)
------------------------------------------------------------
=========  ======================================================================================
melody     histogram intersection :math:`\sum_k \min(p_k, q_k)` of the top voice's melodic
           interval histograms (:func:`~aria_tda.media.kernels.melodic_interval_histogram`)
harmony    cosine of the pitch-class profiles (duration-weighted, MIDI) or mean chromas (audio);
           the chord sequences are aligned by the longest common subsequence of their root
           motions (:func:`~aria_tda.media.kernels.lcs_root_motion`), highlighted in the chart
rhythm     intersection of the inter-onset-interval histograms (MIDI: 16 bins over 0.05-1 s), or
           the mean intersection of the beat- and onset-interval histograms (audio)
dynamic    intersection of the velocity histograms (MIDI, 16 bins of 8 velocity steps) or of the
           frame-level histograms (audio, :func:`~aria_tda.media.kernels.rms_db_curve`, 3-dB bins
           over -60..0 dBFS); the chart draws the curves over time
texture    intersection of the polyphony histograms over sounding 20-ms frames (1..8+ pitches;
           :func:`~aria_tda.media.kernels.polyphony_curve`)
timbre     :math:`\exp(-d)`, :math:`d = \sqrt{\mathrm{mean}_k\,(\mu_k - \nu_k)^2 / \bar\sigma_k^2}`
           over the 13 MFCC means with pooled variance :math:`\bar\sigma_k^2 = (s_k^2 + t_k^2)/2`
=========  ======================================================================================
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from aria_tda.errors import ParameterError, expected
from aria_tda.media import svg
from aria_tda.media._evidence import (
    FPS,
    AspectEvidence,
    View,
    absent,
    analyses,
    histogram_intersection,
    join_names,
    labels_of,
    mode_of,
    needs_audio,
    needs_notes,
    pitched,
    view,
)
from aria_tda.media._harmony import harmony
from aria_tda.media.kernels import melodic_interval_histogram, polyphony_curve, rms_db_curve

__all__ = ["CHANNELS", "AspectEvidence", "aspect_evidence", "histogram_intersection"]

#: The channels :func:`aspect_evidence` draws (the symbolic five and the audio timbre).
CHANNELS = ("melody", "harmony", "rhythm", "dynamic", "texture", "timbre")
IOI_BINS, IOI_RANGE = 16, (0.05, 1.0)
VELOCITY_BINS = 16
POLYPHONY_MAX = 8
DB_FLOOR, DB_STEP = -60.0, 3.0


def _melody(q: View, t: View) -> AspectEvidence:
    missing = needs_notes("melody", q, t)
    if missing is not None:
        return missing
    hists, counts = [], []
    for v in (q, t):
        n = pitched(v)
        n = n[n["start"] >= 0]
        hists.append(melodic_interval_histogram(n["pitch"].to_numpy(), n["start"].to_numpy()))
        counts.append(max(int(n["start"].nunique()) - 1, 0))
    empty = [v.label for v, c in zip((q, t), counts, strict=True) if c == 0]
    if empty:
        return absent(
            "melody",
            "Fewer than two melody onsets in the window of " + " and ".join(empty) + ".",
            q,
            t,
        )
    sim = histogram_intersection(hists[0], hists[1])
    ticks = [(k + 12, f"{k:+d}" if k else "0") for k in (-12, -7, -5, -2, 0, 2, 5, 7, 12)]
    panel = svg.bars_panel(
        hists,
        labels_of(q, t),
        ticks=ticks,
        title="Melodic intervals of the top voice",
        xlabel="interval (semitones; ±12 includes larger leaps)",
        ylabel="share",
        width=620.0,
    )
    sentence = (
        f"Melodic-interval histograms of the top voice overlap by {sim:.2f} "
        f"(1 = identical distributions; intervals in semitones, {counts[0]} and "
        f"{counts[1]} intervals)."
    )
    details = {
        "mode": "symbolic",
        "labels": labels_of(q, t),
        "bins": list(range(-12, 13)),
        "histograms": [h.tolist() for h in hists],
        "n_intervals": counts,
    }
    return AspectEvidence("melody", svg.compose([panel], label=sentence), sim, sentence, details)


def _ioi(v: View) -> tuple[np.ndarray, np.ndarray]:
    from aria_tda.features.audio.rhythm import interval_histogram

    assert v.notes is not None
    on = np.unique(v.notes.loc[v.notes["start"] >= 0, "start"].to_numpy())
    return on, interval_histogram(on, bins=IOI_BINS, range=IOI_RANGE)


def _rhythm(q: View, t: View) -> AspectEvidence:
    mode = mode_of(q, t)
    if mode is None:
        return absent(
            "rhythm", "Rhythm evidence needs notes for both clips or audio for both clips.", q, t
        )
    if mode == "symbolic":
        (oq, hq), (ot, ht) = _ioi(q), _ioi(t)
        silent = [v.label for v, o in ((q, oq), (t, ot)) if o.size == 0]
        if silent:
            return absent("rhythm", f"No note onsets in the window of {join_names(silent)}.", q, t)
        pairs = {"inter-onset intervals": (hq, ht, IOI_RANGE)}
        rates = [len(oq) / max(q.length, 1e-9), len(ot) / max(t.length, 1e-9)]
        extra = f"onset density {rates[0]:.1f} and {rates[1]:.1f} onsets per second"
    else:
        found = analyses(q, t)
        if isinstance(found, str):
            return absent("rhythm", found, q, t)
        a, b = found
        p = a.params
        pairs = {
            "beat intervals": (
                a.features["beat_interval"],
                b.features["beat_interval"],
                p.beat_range,
            ),
            "onset intervals": (
                a.features["onset_interval"],
                b.features["onset_interval"],
                p.onset_range,
            ),
        }
        tempi = [
            60.0 / float(np.median(np.diff(x.beats))) if x.beats.size > 1 else float("nan")
            for x in found
        ]
        extra = (
            "tempo "
            + " and ".join("unknown" if not math.isfinite(x) else f"{x:.0f}" for x in tempi)
            + " beats per minute"
        )
    sims = {k: histogram_intersection(h1, h2) for k, (h1, h2, _) in pairs.items()}
    mixed = [k for k, (h1, h2, _) in pairs.items() if (np.sum(h1) > 0) != (np.sum(h2) > 0)]
    for k in mixed:
        sims[k] = 0.0  # rhythmic events in one clip only: nothing in common
    valid = {k: s for k, s in sims.items() if math.isfinite(s)}
    if not valid:
        return absent("rhythm", "Too few onsets in both windows for an interval histogram.", q, t)
    sim = float(np.mean(list(valid.values())))
    panels = []
    for name, (h1, h2, (lo, hi)) in pairs.items():
        nb = len(h1)
        ticks = [(k, f"{lo + k * (hi - lo) / nb:.2f}") for k in range(0, nb, 3)]
        panels.append(
            svg.bars_panel(
                [np.asarray(h1), np.asarray(h2)],
                labels_of(q, t),
                ticks=ticks,
                title=f"Histogram of {name}",
                xlabel=f"{name} (s, bin start)",
                ylabel="share",
                width=620.0,
            )
        )
    parts = [f"{k} overlap by {s:.2f}" for k, s in valid.items()]
    sentence = (
        "Histograms of "
        + " and ".join(parts)
        + " (1 = identical distributions)"
        + (f"; similarity = their mean, {sim:.2f}" if len(valid) > 1 else "")
        + f"; {extra}."
    )
    details = {
        "mode": mode,
        "labels": labels_of(q, t),
        "histograms": {
            k: [np.asarray(h1).tolist(), np.asarray(h2).tolist()]
            for k, (h1, h2, _) in pairs.items()
        },
        "ranges_s": {k: list(r) for k, (_, _, r) in pairs.items()},
        "similarities": {k: (s if math.isfinite(s) else None) for k, s in sims.items()},
    }
    return AspectEvidence("rhythm", svg.compose(panels, label=sentence), sim, sentence, details)


def _velocity_curve(v: View, step: float = 0.5) -> tuple[np.ndarray, np.ndarray]:
    assert v.notes is not None
    n = v.notes[v.notes["start"] >= 0]
    nb = max(math.ceil(v.length / step), 1)
    idx = np.minimum((n["start"].to_numpy() / step).astype(int), nb - 1)
    total = np.bincount(idx, weights=n["velocity"].to_numpy(float), minlength=nb)
    count = np.bincount(idx, minlength=nb)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(count > 0, total / np.maximum(count, 1), np.nan)
    return (np.arange(nb) + 0.5) * step, mean


def _dynamic(q: View, t: View) -> AspectEvidence:
    mode = mode_of(q, t)
    if mode is None:
        return absent(
            "dynamic", "Dynamics evidence needs notes for both clips or audio for both clips.", q, t
        )
    span = (0.0, max(q.length, t.length, 1e-9))
    if mode == "symbolic":
        hists, curves, stats = [], [], []
        for v in (q, t):
            assert v.notes is not None
            vel = v.notes.loc[v.notes["start"] >= 0, "velocity"].to_numpy()
            hists.append(
                np.bincount(
                    np.minimum(vel * VELOCITY_BINS // 128, VELOCITY_BINS - 1),
                    minlength=VELOCITY_BINS,
                ).astype(float)
            )
            curves.append(_velocity_curve(v))
            stats.append((vel.mean(), vel.min(), vel.max()) if vel.size else None)
        if any(s is None for s in stats):
            return absent(
                "dynamic",
                "No note onsets in the window of "
                + " and ".join(v.label for v, s in zip((q, t), stats, strict=True) if s is None)
                + ".",
                q,
                t,
            )
        sim = histogram_intersection(hists[0], hists[1])
        hists = [h / h.sum() for h in hists]
        sq, st = stats[0], stats[1]
        assert sq is not None and st is not None
        sentence = (
            f"MIDI velocity distributions overlap by {sim:.2f} (1 = identical; velocity "
            f"1-127); mean velocity {sq[0]:.0f} and {st[0]:.0f}, ranges "
            f"{sq[1]}-{sq[2]} and {st[1]}-{st[2]}."
        )
        panel = svg.lines_panel(
            curves,
            labels_of(q, t),
            x_range=span,
            y_range=(0.0, 127.0),
            title="Mean note velocity per half second",
            xlabel="time in the window (s)",
            ylabel="MIDI velocity",
            width=620.0,
            dots=True,
        )
        details_curves = [
            [c[0].tolist(), [None if not np.isfinite(x) else float(x) for x in c[1]]]
            for c in curves
        ]
    else:
        hists, curves, med = [], [], []
        for v in (q, t):
            assert v.samples is not None and v.sr is not None
            if v.samples.size == 0:
                return absent("dynamic", f"The window of {v.label} is empty.", q, t)
            db = rms_db_curve(v.samples)
            hop = 512 / v.sr
            curves.append((np.arange(db.size) * hop + min(2048, v.samples.size) / v.sr / 2, db))
            edges = np.arange(DB_FLOOR, 0.0 + DB_STEP, DB_STEP)
            hists.append(np.histogram(np.clip(db, DB_FLOOR, -1e-9), bins=edges)[0].astype(float))
            med.append(float(np.median(db)))
        sim = histogram_intersection(hists[0], hists[1])
        hists = [h / h.sum() if h.sum() > 0 else h for h in hists]
        frame_ms = 1000.0 * 2048 / (q.sr or 1)
        sentence = (
            f"Loudness distributions (RMS level of {frame_ms:.0f}-ms frames, dBFS, "
            f"3-dB bins) overlap by {sim:.2f} (1 = identical); median level "
            f"{med[0]:.1f} and {med[1]:.1f} dBFS."
        )
        panel = svg.lines_panel(
            curves,
            labels_of(q, t),
            x_range=span,
            y_range=(DB_FLOOR, 0.0),
            title="Loudness over time (RMS, dBFS)",
            xlabel="time in the window (s)",
            ylabel="dBFS",
            width=620.0,
        )
        details_curves = [[c[0].round(4).tolist(), c[1].round(2).tolist()] for c in curves]
    details = {
        "mode": mode,
        "labels": labels_of(q, t),
        "histograms": [h.tolist() for h in hists],
        "curves": details_curves,
    }
    return AspectEvidence("dynamic", svg.compose([panel], label=sentence), sim, sentence, details)


def _texture(q: View, t: View) -> AspectEvidence:
    missing = needs_notes("texture", q, t)
    if missing is not None:
        return missing
    curves, hists = [], []
    for v in (q, t):
        n = pitched(v)
        poly = polyphony_curve(
            n["pitch"].to_numpy(),
            n["start"].to_numpy(),
            n["end"].to_numpy(),
            t_range=(0.0, max(v.length, 1.0 / FPS)),
            fps=FPS,
        )
        curves.append(poly)
        on = poly[poly > 0]
        hists.append(
            np.bincount(np.minimum(on, POLYPHONY_MAX) - 1, minlength=POLYPHONY_MAX).astype(float)
            if on.size
            else np.zeros(POLYPHONY_MAX)
        )
    empty = [v.label for v, h in zip((q, t), hists, strict=True) if not h.any()]
    hists = [h / h.sum() if h.any() else h for h in hists]
    if empty:
        return absent(
            "texture", "No pitched note sounds in the window of " + " and ".join(empty) + ".", q, t
        )
    sim = histogram_intersection(hists[0], hists[1])
    means = [float(c[c > 0].mean()) for c in curves]
    top = max(int(max(c.max() for c in curves)), 1)
    series = [((np.arange(c.size)) / FPS, c.astype(float)) for c in curves]
    panels = [
        svg.lines_panel(
            series,
            labels_of(q, t),
            x_range=(0.0, max(q.length, t.length, 1e-9)),
            y_range=(0.0, top + 0.5),
            title="Polyphony over time",
            xlabel="time in the window (s)",
            ylabel="sounding pitches",
            step=True,
            width=620.0,
        ),
        svg.bars_panel(
            hists,
            labels_of(q, t),
            ticks=[
                (k, str(k + 1) + ("+" if k + 1 == POLYPHONY_MAX else ""))
                for k in range(POLYPHONY_MAX)
            ],
            title="Share of sounding time by polyphony",
            xlabel="sounding pitches",
            ylabel="share",
            width=620.0,
            height=150.0,
        ),
    ]
    sentence = (
        f"Polyphony distributions (distinct sounding pitches per 20-ms frame, over "
        f"sounding frames) overlap by {sim:.2f} (1 = identical); mean polyphony "
        f"{means[0]:.1f} and {means[1]:.1f} pitches."
    )
    details = {
        "mode": "symbolic",
        "labels": labels_of(q, t),
        "fps": FPS,
        "histograms": [h.tolist() for h in hists],
        "mean_polyphony": means,
    }
    return AspectEvidence("texture", svg.compose(panels, label=sentence), sim, sentence, details)


def _timbre(q: View, t: View) -> AspectEvidence:
    missing = needs_audio("timbre", q, t)
    if missing is not None:
        return missing
    found = analyses(q, t)
    if isinstance(found, str):
        return absent("timbre", found, q, t)
    feats = [np.asarray(a.features["mfcc"], dtype=float) for a in found]
    k = feats[0].size // 2
    mu, sd = [f[:k] for f in feats], [f[k:] for f in feats]
    pooled = (sd[0] ** 2 + sd[1] ** 2) / 2.0 + 1e-9
    d = float(np.sqrt(np.mean((mu[0] - mu[1]) ** 2 / pooled)))
    sim = float(math.exp(-d))
    x = np.arange(k, dtype=float)
    centre, scale = (mu[0] + mu[1]) / 2.0, np.sqrt(pooled)
    z = [(m - centre) / scale for m in mu]
    zb = [((m - s - centre) / scale, (m + s - centre) / scale) for m, s in zip(mu, sd, strict=True)]
    top = max(
        2.0, float(np.ceil(max(np.abs(np.concatenate([np.ravel(b) for b in zb])).max(), 1.0)))
    )
    top = min(top, 6.0)
    panel = svg.lines_panel(
        [(x, zz) for zz in z],
        labels_of(q, t),
        x_range=(-0.5, k - 0.5),
        y_range=(-top, top),
        title="MFCC means against the pair's average, in pooled SDs (band: each clip's ±1 SD)",
        xlabel="MFCC coefficient (0 = overall level)",
        ylabel="pooled SDs",
        bands=zb,
        xticks=[(i, str(i)) for i in range(k)],
        width=620.0,
        dots=True,
    )
    sentence = (
        f"Mean MFCC profiles differ by {d:.2f} pooled standard deviations (root mean "
        f"square over {k} coefficients); similarity exp(-{d:.2f}) = {sim:.2f} "
        f"(1 = identical timbre profile)."
    )
    details = {
        "mode": "audio",
        "labels": labels_of(q, t),
        "mfcc_mean": [m.tolist() for m in mu],
        "mfcc_sd": [s.tolist() for s in sd],
        "distance_sd": d,
    }
    return AspectEvidence("timbre", svg.compose([panel], label=sentence), sim, sentence, details)


_CHANNELS: dict[str, Callable[[View, View], AspectEvidence]] = {
    "melody": _melody,
    "harmony": harmony,
    "rhythm": _rhythm,
    "dynamic": _dynamic,
    "texture": _texture,
    "timbre": _timbre,
}


def aspect_evidence(
    channel: str, query: Any, train: Any, *, labels: tuple[str, str] = ("query", "training item")
) -> AspectEvidence:
    """The evidence of one channel for a (query, training item) pair, drawn and in words.

    Parameters
    ----------
    channel : str
        One of :data:`CHANNELS`.
    query, train : Clip or mapping
        Objects with the :class:`~aria_tda.media.clips.Clip` fields ``samples`` (mono audio or
        ``None``), ``sr`` (Hz), ``window`` (seconds from the clip start, or ``None`` for the
        whole clip) and ``notes`` (a notes table or ``None``).
    labels : (str, str)
        How the two clips are named in the chart and the sentence.

    Returns
    -------
    AspectEvidence
        Similarity NaN (and a sentence saying why) when the pair has no evidence for the
        channel: no notes, no audio, too few onsets, a window too short to analyse.

    Raises
    ------
    ParameterError
        Unknown ``channel``.
    DataError
        A clip's fields are malformed (notes without the required columns, 2-D samples, ...).
    MissingDependencyError
        Audio evidence without librosa (the ``audio`` extra).
    """
    if channel not in _CHANNELS:
        raise ParameterError(
            expected("channel", "one of " + ", ".join(map(repr, CHANNELS)), channel)
        )
    if len(labels) != 2:
        raise ParameterError(expected("labels", "two names (query, training item)", labels))
    q = view("query", query, str(labels[0]))
    t = view("train", train, str(labels[1]))
    return _CHANNELS[channel](q, t)
