"""Plumbing of the per-channel evidence (private to :mod:`aria_tda.media`): the result type, a
clip restricted to its window, the "no evidence" answer and the cached audio analysis.

See :mod:`aria_tda.media.aspects` for the conventions.
"""

from __future__ import annotations

import hashlib
import math
import warnings
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from aria_tda.errors import DataError, expected
from aria_tda.media import svg
from aria_tda.media.draw import check_notes

FPS = 50.0  # the symbolic features' grid (20-ms frames)
_CACHE: OrderedDict[tuple[Any, ...], Any] = OrderedDict()
_CACHE_SIZE = 8


@dataclass(frozen=True)
class AspectEvidence:
    """The evidence of one channel for one pair of clips.

    Attributes
    ----------
    channel : str
        One of :data:`CHANNELS`.
    svg : str
        The chart (an ``<svg>`` document; labels escaped, no script, no inline CSS).
    similarity : float
        In [0, 1] (1 = alike in this channel's terms); NaN when the pair has no evidence here.
    sentence : str
        What the number is, in words, with its units.
    details : dict
        The numbers drawn (JSON-ready lists and floats) and ``mode`` (``"symbolic"``,
        ``"audio"`` or ``None``).
    """

    channel: str
    svg: str
    similarity: float
    sentence: str
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def available(self) -> bool:
        """True when the pair had evidence for this channel (the similarity is a number)."""
        return math.isfinite(self.similarity)


@dataclass(frozen=True)
class View:
    """One clip restricted to its window (times from the window start)."""

    label: str
    notes: pd.DataFrame | None
    samples: np.ndarray | None
    sr: int | None
    length: float


def histogram_intersection(p: np.ndarray, q: np.ndarray) -> float:
    r"""Overlap :math:`\sum_k \min(p_k, q_k)` of two histograms, each first divided by its sum.

    Parameters
    ----------
    p, q : np.ndarray [shape=(k,)]
        Non-negative counts or proportions over the same bins.

    Returns
    -------
    float
        In [0, 1]; 1 for identical distributions, 0 for disjoint ones; NaN when either is
        all zeros.
    """
    a, b = np.asarray(p, dtype=float), np.asarray(q, dtype=float)
    if a.shape != b.shape or a.ndim != 1:
        raise DataError(
            expected("p/q", "two 1-D histograms over the same bins", (a.shape, b.shape))
        )
    sa, sb = a.sum(), b.sum()
    if sa <= 0 or sb <= 0:
        return float("nan")
    return float(min(1.0, np.minimum(a / sa, b / sb).sum()))


def cosine(p: np.ndarray, q: np.ndarray) -> float:
    na, nb = float(np.linalg.norm(p)), float(np.linalg.norm(q))
    if na <= 0 or nb <= 0:
        return float("nan")
    return float(np.clip(np.dot(p, q) / (na * nb), 0.0, 1.0))


def _field(clip: Any, name: str) -> Any:
    if isinstance(clip, Mapping):
        return clip.get(name)
    return getattr(clip, name, None)


def view(name: str, clip: Any, label: str) -> View:
    samples, sr, notes = _field(clip, "samples"), _field(clip, "sr"), _field(clip, "notes")
    y = None
    if samples is not None:
        y = np.asarray(samples, dtype=np.float32)
        if y.ndim != 1:
            raise DataError(expected(f"{name}.samples", "mono samples (1-D)", y.shape))
        if isinstance(sr, bool) or not isinstance(sr, int | np.integer) or sr <= 0:
            raise DataError(expected(f"{name}.sr", "a positive sample rate in Hz", sr))
        sr = int(sr)
    tab = None if notes is None else check_notes(f"{name}.notes", notes)
    window = _field(clip, "window")
    if window is None:
        ends = [y.size / sr] if y is not None else []
        ends += [float(tab["end"].max())] if tab is not None and len(tab) else []
        a, b = 0.0, max(ends, default=0.0)
    else:
        try:
            a, b = (float(v) for v in window)
        except (TypeError, ValueError):
            raise DataError(
                expected(f"{name}.window", "a pair (a, b) of seconds", window)
            ) from None
        if not (math.isfinite(a) and math.isfinite(b)) or b < a:
            raise DataError(expected(f"{name}.window", "finite seconds with a <= b", window))
    length = b - a
    if y is not None:
        y = y[max(round(a * sr), 0) : max(round(b * sr), 0)]
    if tab is not None:
        tab = tab.assign(start=tab["start"] - a, end=tab["end"] - a)
        tab = tab[(tab["end"] > 0) & (tab["start"] < length)].reset_index(drop=True)
    return View(label, tab, y, sr if y is not None else None, length)


def absent(channel: str, reason: str, q: View, t: View) -> AspectEvidence:
    text = [f"{channel}: no evidence for this pair.", reason]
    chart = svg.compose([svg.text_panel(text, width=520.0)], label=f"{channel} evidence: none")
    return AspectEvidence(
        channel,
        chart,
        float("nan"),
        reason,
        {"mode": None, "reason": reason, "labels": [q.label, t.label]},
    )


def needs_notes(channel: str, q: View, t: View) -> AspectEvidence | None:
    lacking = [v.label for v in (q, t) if v.notes is None]
    if lacking:
        return absent(
            channel,
            f"{channel.capitalize()} evidence needs notes (MIDI) for both "
            f"clips; {join_names(lacking)} {has_or_have(lacking)} audio only.",
            q,
            t,
        )
    return None


def needs_audio(channel: str, q: View, t: View) -> AspectEvidence | None:
    lacking = [v.label for v in (q, t) if v.samples is None]
    if lacking:
        return absent(
            channel,
            f"{channel.capitalize()} evidence needs audio for both clips; "
            f"{join_names(lacking)} {has_or_have(lacking)} none.",
            q,
            t,
        )
    return None


def join_names(names: list[str]) -> str:
    return " and ".join(names)


def has_or_have(names: list[str]) -> str:
    return "have" if len(names) > 1 else "has"


def mode_of(q: View, t: View) -> str | None:
    if q.notes is not None and t.notes is not None:
        return "symbolic"
    if q.samples is not None and t.samples is not None:
        return "audio"
    return None


def _analysis(v: View) -> Any:
    """The library's audio analysis of a window (cached), or the error text."""
    from aria_tda.features.audio.extract import analyze_audio
    from aria_tda.features.audio.params import AudioFeatureParams

    assert v.samples is not None and v.sr is not None
    key = (hashlib.blake2b(v.samples.tobytes(), digest_size=16).hexdigest(), v.sr)
    if key in _CACHE:
        _CACHE.move_to_end(key)
        return _CACHE[key]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            out: Any = analyze_audio(v.samples, v.sr, params=AudioFeatureParams(sr=v.sr))
    except DataError as exc:
        out = f"the audio of {v.label} could not be analysed ({exc})"
    _CACHE[key] = out
    while len(_CACHE) > _CACHE_SIZE:
        _CACHE.popitem(last=False)
    return out


def analyses(q: View, t: View) -> tuple[Any, Any] | str:
    a, b = _analysis(q), _analysis(t)
    for x in (a, b):
        if isinstance(x, str):
            return x
    return a, b


def pitched(v: View) -> pd.DataFrame:
    assert v.notes is not None
    return v.notes[~v.notes["is_drum"]]


def labels_of(q: View, t: View) -> list[str]:
    return [q.label, t.label]
