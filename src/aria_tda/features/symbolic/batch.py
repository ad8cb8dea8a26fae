"""The vectorised symbolic features: grid kernel, batch features, file extractors."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import asdict
from typing import Any

import numpy as np

from aria_tda.errors import DataError
from aria_tda.features.midi import (
    read_midi,
)
from aria_tda.features.symbolic.params import (
    EPS_TICK,
    FEATURE_NAMES,
    RHYTHM_LOWER,
    RHYTHMIC_VALUES,
    SymbolicParams,
)
from aria_tda.features.symbolic.segments import NoteBatch, make_batch, segment_notes

# --------------------------------------------------------------------------- grid kernel

_SWEEP: Callable[..., Any] | None = None


def _sweep_py(
    offsets: np.ndarray, a: np.ndarray, b: np.ndarray, pitch: np.ndarray, strength: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Sweep line over note boundaries, per segment (compiled with numba).

    Between consecutive boundaries the set of sounding notes is constant, so each elementary
    interval of ``L`` units adds ``L`` times its per-unit contribution. Returns the 128-bin
    vertical-interval histogram (unwrapped; bin 0 = unisons) and the polyphony moments
    ``(n sounding units, sum k, sum k^2)`` of every segment, in exact integers.
    """
    n_seg = offsets.shape[0] - 1
    hist = np.zeros((n_seg, 128), dtype=np.int64)
    mom = np.zeros((n_seg, 3), dtype=np.int64)
    count = np.zeros(128, dtype=np.int64)
    stren = np.zeros(128, dtype=np.int64)
    active = np.zeros(128, dtype=np.int64)
    for s in range(n_seg):
        lo = offsets[s]
        m = offsets[s + 1] - lo
        if m == 0:
            continue
        times = np.empty(2 * m, dtype=np.int64)
        for i in range(m):
            times[2 * i] = a[lo + i]
            times[2 * i + 1] = b[lo + i]
        order = np.argsort(times, kind="mergesort")
        k = 0
        prev = times[order[0]]
        while k < 2 * m:
            t = times[order[k]]
            length = t - prev
            if length > 0:
                nact = 0
                for p in range(128):
                    if count[p] > 0:
                        active[nact] = p
                        nact += 1
                if nact > 0:
                    mom[s, 0] += length
                    mom[s, 1] += length * nact
                    mom[s, 2] += length * nact * nact
                    for i in range(nact):
                        p = active[i]
                        sp = stren[p]
                        if count[p] >= 2:
                            hist[s, 0] += length * sp
                        for j in range(i + 1, nact):
                            q = active[j]
                            hist[s, q - p] += length * (sp + stren[q])
            while k < 2 * m and times[order[k]] == t:
                e = order[k]
                note = lo + e // 2
                if e % 2 == 0:
                    count[pitch[note]] += 1
                    stren[pitch[note]] += strength[note]
                else:
                    count[pitch[note]] -= 1
                    stren[pitch[note]] -= strength[note]
                k += 1
            prev = t
    return hist, mom


def note_sweep(
    offsets: np.ndarray, a: np.ndarray, b: np.ndarray, pitch: np.ndarray, strength: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The sweep line over note boundaries, per segment, compiled with numba on first use.

    Parameters
    ----------
    offsets : numpy.ndarray
        ``n_segments + 1`` offsets of each segment's notes in the other arrays.
    a, b : numpy.ndarray
        Each note's start and end (integer time units: grid steps or ticks).
    pitch : numpy.ndarray
        Each note's MIDI pitch.
    strength : numpy.ndarray
        Each note's weight (its velocity).

    Returns
    -------
    tuple of numpy.ndarray
        The ``(n_segments, 128)`` vertical-interval histograms (bin 0 = unisons) and the
        ``(n_segments, 3)`` polyphony moments ``(n sounding units, sum k, sum k^2)``, in exact
        integers.
    """
    global _SWEEP
    if _SWEEP is None:
        try:
            import numba

            _SWEEP = numba.njit(cache=True, nogil=True)(_sweep_py)
        except Exception:  # pragma: no cover - numba is a core dependency
            _SWEEP = _sweep_py
    args = [np.ascontiguousarray(x, dtype=np.int64) for x in (offsets, a, b, pitch, strength)]
    return _SWEEP(*args)


# --------------------------------------------------------------------------- batch features


def _grid_units(
    batch: NoteBatch, p: SymbolicParams, seg: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per-note sounding range ``[a, b)`` in grid units relative to the window (0 ≤ a ≤ b ≤ n)."""
    notes = batch.notes
    if p.form == "paper":
        t0 = batch.start[seg]
        n_units = np.ceil(batch.duration * p.fps - 1e-9).astype(np.int64)[seg]
        a = np.floor((notes.start - t0) * p.fps + 0.5).astype(np.int64)
        b = np.floor((notes.end - t0) * p.fps + 0.5).astype(np.int64)
        b = np.where(notes.end > notes.start, np.maximum(b, a + 1), a)
        lo, hi = 0, n_units
        return np.clip(a, lo, hi), np.clip(b, lo, hi)
    st, et, w0, w1, _tpq = _batch_ticks(batch, p, seg)
    return np.clip(st, w0, w1) - w0, np.clip(et, w0, w1) - w0


def _batch_ticks(batch: NoteBatch, p: SymbolicParams, seg: np.ndarray) -> tuple[np.ndarray, ...]:
    """2.2 form: per-note (start tick, end tick, window start, window end, tpq).

    Segments from sources without ticks get ``round(seconds · tpq · qpm / 60)`` with the
    ``tpq``/``qpm`` parameters; their window is ``ceil`` of its bounds on the same scale.
    """
    notes = batch.notes
    rate = p.tpq * p.qpm / 60.0
    has = batch.seg_tpq[seg] > 0
    st = np.where(has, batch.ticks[:, 0], np.floor(notes.start * rate + 0.5).astype(np.int64))
    et = np.where(has, batch.ticks[:, 1], np.floor(notes.end * rate + 0.5).astype(np.int64))
    synth = np.ceil(
        np.stack([batch.start, batch.start + batch.duration], axis=1) * rate - EPS_TICK
    ).astype(np.int64)
    win = np.where((batch.seg_tpq > 0)[:, None], batch.window_ticks, synth)
    tpq = np.where(batch.seg_tpq > 0, batch.seg_tpq, p.tpq)
    return st, et, win[seg, 0], win[seg, 1], tpq[seg]


def _normalise_rows(h: np.ndarray) -> np.ndarray:
    h = h.astype(np.float64)
    tot = h.sum(axis=1, keepdims=True)
    return np.divide(h, tot, out=np.zeros_like(h), where=tot > 0)


def _rhythm_bins(
    batch: NoteBatch, p: SymbolicParams, idx: np.ndarray, seg: np.ndarray
) -> np.ndarray:
    """Rhythmic-value bin (0..10 paper, 0..11 2.2) of notes ``idx``."""
    notes = batch.notes
    if p.form == "paper":
        q = batch.quarters[idx]
        dur = np.where(np.isnan(q), (notes.end[idx] - notes.start[idx]) * p.qpm / 60.0, q)
        return np.searchsorted(RHYTHM_LOWER[:10], dur, side="right")
    st, et, _w0, _w1, tpq = _batch_ticks(batch, p, seg)
    d, tq = (et - st)[idx], tpq[idx]
    out = np.zeros(idx.size, dtype=np.int64)
    for t in np.unique(tq):
        sel = tq == t
        out[sel] = np.searchsorted(tick_bounds(int(t)), d[sel], side="right")
    return out


def tick_bounds(tpq: int) -> np.ndarray:
    """jSymbolic 2.2's lower bounds (bins 1..11) in integer ticks: c[i-1] + (c[i] - c[i-1]) // 2.

    Parameters
    ----------
    tpq : int
        Ticks per quarter note.

    Returns
    -------
    numpy.ndarray
        11 int64 bounds (``c``: the rhythmic values in ticks, integer-divided as jSymbolic does).
    """
    c = np.array(
        [
            tpq // 8,
            tpq // 4,
            tpq // 2,
            tpq * 3 // 4,
            tpq,
            tpq * 3 // 2,
            tpq * 2,
            tpq * 3,
            tpq * 4,
            tpq * 6,
            tpq * 8,
            tpq * 12,
        ],
        dtype=np.int64,
    )
    return c[:-1] + (c[1:] - c[:-1]) // 2


def batch_features(batch: NoteBatch, **params: Any) -> dict[str, np.ndarray]:
    r"""The symbolic features of every segment of ``batch`` (the fast, vectorised path).

    All of :data:`FEATURE_NAMES`: the paper's 12 and the pattern features of the onset groups
    (module docstring of :mod:`aria_tda.features.symbolic`).

    Parameters
    ----------
    batch : NoteBatch
        From :func:`segment_notes` or :func:`make_batch`.
    **params
        :class:`SymbolicParams` fields (``form``, ``fps``, ``qpm``, ``tpq``, ...).

    Returns
    -------
    dict of str to np.ndarray [shape=(n_segments, dim), float64]
        Keyed by the registry's feature names, dims from :func:`feature_dims`.
    """
    p = SymbolicParams.from_kwargs(params)
    notes = batch.notes
    n_seg = batch.n_segments
    seg = batch.segment_ids()
    paper = p.form == "paper"
    idx_all = np.arange(len(notes))
    own = batch.onset
    pitched = ~notes.is_drum
    out: dict[str, np.ndarray] = {}

    # ---- melody: melodic intervals between consecutive onsets of one voice
    oi = idx_all[own & pitched]
    onset_key = notes.start if paper else _batch_ticks(batch, p, seg)[0]
    srt = oi[np.lexsort((oi, onset_key[oi], notes.channel[oi], notes.track[oi], seg[oi]))]
    okey = onset_key[srt]
    same_voice = (
        (seg[srt][1:] == seg[srt][:-1])
        & (notes.track[srt][1:] == notes.track[srt][:-1])
        & (notes.channel[srt][1:] == notes.channel[srt][:-1])
    )
    counted = same_voice & (okey[1:] != okey[:-1])
    interval = (notes.pitch[srt][1:] - notes.pitch[srt][:-1])[counted]
    iseg = seg[srt][1:][counted]
    if paper:
        if p.interval_overflow == "drop":
            keep = np.abs(interval) <= 12
            interval, iseg = interval[keep], iseg[keep]
        ibin = np.clip(interval, -12, 12) + 12
        width = 25
    else:
        ibin, width = np.abs(interval), 128
    out["melodic_interval"] = _normalise_rows(
        np.bincount(iseg * width + ibin, minlength=n_seg * width).reshape(n_seg, width)
    )

    # ---- harmony: pitch classes (rotated), vertical intervals on the grid
    pc = np.bincount(seg[oi] * 12 + notes.pitch[oi] % 12, minlength=n_seg * 12).reshape(n_seg, 12)
    pch = _normalise_rows(pc)
    if p.rotate_pitch_class:
        first = np.argmax(pch, axis=1)
        pch = np.take_along_axis(pch, (first[:, None] + np.arange(12)) % 12, axis=1)
    out["pitch_class"] = pch

    a, b = _grid_units(batch, p, seg)
    gi = idx_all[pitched & (b > a) & (own | (p.boundary == "clip"))]
    g_off = np.concatenate([[0], np.cumsum(np.bincount(seg[gi], minlength=n_seg))])
    hist, mom = note_sweep(g_off, a[gi], b[gi], notes.pitch[gi], notes.velocity[gi])
    wrapped = hist[:, :12].copy()
    for k in range(12, 128, 12):
        wrapped[:, : min(12, 128 - k)] += hist[:, k : k + 12]
    out["vertical_interval"] = _normalise_rows(wrapped)

    # ---- rhythm
    ri = idx_all[own]
    n_on = np.bincount(seg[ri], minlength=n_seg).astype(np.float64)
    dur = batch.duration
    out["note_density"] = np.divide(n_on, dur, out=np.zeros(n_seg), where=dur >= 1.0)[:, None]
    width = 11 if paper else 12
    rbin = _rhythm_bins(batch, p, ri, seg)
    rh = np.bincount(seg[ri] * width + rbin, minlength=n_seg * width).reshape(n_seg, width)
    total = rh.sum(axis=1)
    mean_rv = (rh * RHYTHMIC_VALUES[:width]).sum(axis=1)
    out["mean_rhythmic_value"] = np.divide(mean_rv, total, out=np.zeros(n_seg), where=total > 0)[
        :, None
    ]
    out["rhythmic_value"] = _normalise_rows(rh)

    # ---- dynamics (loudness, drums included)
    loud = notes.loudness[ri].astype(np.float64)
    rs = seg[ri]
    if paper:
        dsrt = ri[np.lexsort((ri, notes.start[ri], notes.channel[ri], seg[ri]))]
    else:
        dsrt = ri[np.lexsort((ri, notes.channel[ri], seg[ri]))]
    same_ch = (seg[dsrt][1:] == seg[dsrt][:-1]) & (
        notes.channel[dsrt][1:] == notes.channel[dsrt][:-1]
    )
    change = np.abs(np.diff(notes.loudness[dsrt]))[same_ch].astype(np.float64)
    cseg = seg[dsrt][1:][same_ch]
    sum_change = np.bincount(cseg, weights=change, minlength=n_seg)
    if p.divisor == "changes":
        denom = np.bincount(cseg, minlength=n_seg).astype(np.float64)
    else:
        chan_n = np.bincount(seg[ri] * 16 + notes.channel[ri], minlength=n_seg * 16).reshape(
            n_seg, 16
        )
        denom = np.where(chan_n > 1, chan_n, 0).sum(axis=1).astype(np.float64)
    out["velocity_change"] = np.divide(sum_change, denom, out=np.zeros(n_seg), where=denom > 0)[
        :, None
    ]
    s1 = np.bincount(rs, weights=loud, minlength=n_seg)
    mean_l = np.divide(s1, n_on, out=np.zeros(n_seg), where=n_on > 0)
    ss = np.bincount(rs, weights=(loud - mean_l[rs]) ** 2, minlength=n_seg)
    out["velocity_std"] = np.sqrt(np.divide(ss, n_on - 1, out=np.zeros(n_seg), where=n_on > 1))[
        :, None
    ]
    out["dynamic_range"] = (
        _group_extreme(rs, loud, n_seg, np.maximum) - _group_extreme(rs, loud, n_seg, np.minimum)
    )[:, None]

    # ---- texture
    n_units, sum_k = mom[:, 0].astype(np.float64), mom[:, 1].astype(np.float64)
    out["mean_polyphony"] = np.divide(sum_k, n_units, out=np.zeros(n_seg), where=n_units > 0)[
        :, None
    ]
    if mom.size and int(mom[:, [0, 1, 2]].max()) < 2**31:
        num = (mom[:, 0] * mom[:, 2] - mom[:, 1] * mom[:, 1]).astype(np.float64)  # exact in int64
    else:  # huge tick counts: exact Python integers
        num = np.array(
            [float(int(r[0]) * int(r[2]) - int(r[1]) ** 2) for r in mom], dtype=np.float64
        )
    var = np.divide(num, n_units * (n_units - 1), out=np.zeros(n_seg), where=n_units > 1)
    out["polyphony_std"] = np.sqrt(np.maximum(var, 0.0))[:, None]
    pp = notes.pitch[oi].astype(np.float64)
    out["pitch_range"] = (
        _group_extreme(seg[oi], pp, n_seg, np.maximum)
        - _group_extreme(seg[oi], pp, n_seg, np.minimum)
    )[:, None]

    # ---- pattern features of the onset groups (own pitched notes, same onset key)
    out.update(_pattern_features(seg[oi], onset_key[oi], notes.pitch[oi], n_seg))
    return {name: out[name] for name in FEATURE_NAMES}


#: interval-class edges of ``interval_transitions`` (semitones): 7 classes, down >= 5 .. up >= 5
_INTERVAL_EDGES = np.array([-4.5, -2.5, -0.5, 0.5, 2.5, 4.5])
#: largest onset-group size class of ``voice_transitions`` (4 = "4 or more")
_VOICE_CAP = 4
#: autocorrelation lags 1.._LAGS of ``voice_periodicity``
_LAGS = 8


def _pattern_features(
    seg: np.ndarray, key: np.ndarray, pitch: np.ndarray, n_seg: int
) -> dict[str, np.ndarray]:
    r"""``interval_transitions``, ``voice_transitions``, ``voice_periodicity`` of every segment.

    ``seg``, ``key``, ``pitch``: segment, onset key and pitch of each owned pitched note. Notes
    of one segment with equal keys form an onset group; groups run in key order. Per group:
    its highest pitch :math:`\mathrm{top}_t` and its size :math:`n_t` (distinct pitches, capped
    at 4). Everything is a group operation on the notes in (segment, key) order and on their
    sorted (group, pitch) codes; only the 8 lags are a loop.
    """
    m = seg.size
    # notes of one (segment, onset) next to each other, in time order; a batch's notes usually
    # are already (segments in order, onsets ascending), which this checks before sorting
    in_order = m < 2 or bool(
        np.all((seg[1:] > seg[:-1]) | ((seg[1:] == seg[:-1]) & (key[1:] >= key[:-1])))
    )
    order = np.arange(m) if in_order else np.lexsort((key, seg))
    s, k = seg[order], key[order]
    new_group = np.ones(m, dtype=bool)
    new_group[1:] = (s[1:] != s[:-1]) | (k[1:] != k[:-1])
    first = np.flatnonzero(new_group)
    last = np.r_[first[1:], m] - 1 if m else first
    gid = np.cumsum(new_group) - 1
    # (group, pitch) codes sorted: pitches ascend within each group (MIDI pitch < 128)
    code = np.sort(gid * 128 + pitch[order].astype(np.int64))
    distinct = np.ones(m, dtype=bool)
    distinct[1:] = code[1:] != code[:-1]
    size = np.bincount(gid, weights=distinct, minlength=first.size).astype(np.int64)
    size = np.minimum(size, _VOICE_CAP)
    top = code[last] % 128  # the last code of a group holds its highest pitch
    gseg = s[first]
    out: dict[str, np.ndarray] = {}

    # top-voice interval classes, then consecutive class pairs within a segment
    cls = np.searchsorted(_INTERVAL_EDGES, np.diff(top))
    ok3 = gseg[2:] == gseg[:-2]  # groups t, t+1, t+2 lie in one segment (sorted by segment)
    pair = 7 * cls[:-1] + cls[1:]
    out["interval_transitions"] = _normalise_rows(
        np.bincount(gseg[2:][ok3] * 49 + pair[ok3], minlength=n_seg * 49).reshape(n_seg, 49)
    )

    # group-size transitions within a segment
    same = gseg[1:] == gseg[:-1]
    vcode = _VOICE_CAP * (size[:-1] - 1) + (size[1:] - 1)
    width = _VOICE_CAP * _VOICE_CAP
    vt = np.bincount(gseg[1:][same] * width + vcode[same], minlength=n_seg * width)
    out["voice_transitions"] = _normalise_rows(vt.reshape(n_seg, width))

    # normalised autocorrelation of the sizes at lags 1..8 (per segment)
    n_groups = np.bincount(gseg, minlength=n_seg).astype(np.float64)
    sums = np.bincount(gseg, weights=size, minlength=n_seg)
    mean = np.divide(sums, n_groups, out=np.zeros(n_seg), where=n_groups > 0)
    x = size - mean[gseg]
    energy = np.bincount(gseg, weights=x * x, minlength=n_seg)
    ac = np.zeros((n_seg, _LAGS))
    for lag in range(1, _LAGS + 1):
        ok = gseg[lag:] == gseg[:-lag]  # sorted by segment: equal ends = same segment
        prod = np.where(ok, x[:-lag] * x[lag:], 0.0)  # pairs across segments add 0
        ac[:, lag - 1] = np.bincount(gseg[lag:], weights=prod, minlength=n_seg)
    out["voice_periodicity"] = np.divide(
        ac, energy[:, None], out=np.zeros_like(ac), where=energy[:, None] > 0
    )
    return out


def _group_extreme(group: np.ndarray, values: np.ndarray, n: int, ufunc: np.ufunc) -> np.ndarray:
    """Per-group max/min of ``values`` (0 for empty groups)."""
    out = np.zeros(n)
    if values.size == 0:
        return out
    init = -np.inf if ufunc is np.maximum else np.inf
    acc = np.full(n, init)
    ufunc.at(acc, group, values)
    has = np.isfinite(acc)
    out[has] = acc[has]
    return out


# --------------------------------------------------------------------------- public wrappers


def symbolic_features(
    notes: Any, *, start: float = 0.0, duration: float | None = None, **params: Any
) -> dict[str, np.ndarray]:
    """The symbolic features (:data:`FEATURE_NAMES`) of one segment ``[start, start + duration)``.

    Parameters
    ----------
    notes : notes
        Anything :func:`as_notes` accepts, e.g. a decoded model segment as an ``(n, 4)``
        array of ``start, end, pitch, velocity`` (seconds). All notes belong to the segment.
    start : float
        Window start in seconds (default 0).
    duration : float, optional
        Window length in seconds; default: the notes' source length or last note end.
    **params
        :class:`SymbolicParams` fields.

    Returns
    -------
    dict of str to np.ndarray [shape=(dim,), float64]
    """
    batch = make_batch([notes], starts=[start], durations=None if duration is None else [duration])
    return {k: v[0] for k, v in batch_features(batch, **params).items()}


def symbolic_features_batch(
    segments: Sequence[Any], *, starts: Any = None, durations: Any = None, **params: Any
) -> dict[str, np.ndarray]:
    """The symbolic features of many segments at once, ``dict[name] -> (n_segments, dim)``.

    ``segments`` is a sequence of note collections (see :func:`make_batch`); this is the path
    to use for a model's decoded segments (thousands per second).

    Parameters
    ----------
    segments : sequence of notes
        One note collection per segment (see :func:`make_batch`).
    starts : array-like [shape=(n,)], optional
        Window starts in seconds (default 0).
    durations : array-like [shape=(n,)], optional
        Window lengths in seconds (default: each segment's length).
    **params
        :class:`SymbolicParams` fields.
    """
    return batch_features(make_batch(segments, starts=starts, durations=durations), **params)


def extract_file_record(
    path: str | os.PathLike[str], **params: Any
) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Whole-file features plus metadata (``duration`` s, ``n_notes``, ``ticks_per_quarter``, ...).

    Parameters
    ----------
    path : path
        A MIDI file.
    **params
        :class:`SymbolicParams` fields.

    Raises
    ------
    FileFormatError
        unreadable MIDI; :class:`DataError` if the file holds no notes.
    """
    p = SymbolicParams.from_kwargs(params)
    score = read_midi(path)
    if score.n_notes == 0:
        raise DataError(f"{str(path)!r}: the MIDI file holds no notes (silent)")
    notes = score.notes()
    feats = symbolic_features(notes, start=0.0, duration=notes.length, **asdict(p))
    meta = {
        "duration": float(notes.length or 0.0),
        "n_notes": len(notes),
        "n_pitched_notes": int((~notes.is_drum).sum()),
        "ticks_per_quarter": score.ticks_per_quarter,
        "n_tracks": score.n_tracks,
    }
    return feats, meta


def extract_file(path: str | os.PathLike[str], **params: Any) -> dict[str, np.ndarray]:
    """Whole-file features of a MIDI file, ``dict[name] -> (dim,)`` (used by ``aria-tda features``).

    Parameters
    ----------
    path : path
        A MIDI file.
    **params
        :class:`SymbolicParams` fields.
    """
    return extract_file_record(path, **params)[0]


def extract_file_segments(
    path: str | os.PathLike[str],
    *,
    seconds: float | None = None,
    hop: float | None = None,
    n_notes: int | None = None,
    **params: Any,
) -> tuple[dict[str, np.ndarray], list[dict[str, Any]]]:
    """Features of the fixed windows of a MIDI file: ``(dict[name] -> (n_seg, dim), metadata)``.

    ``metadata[i]`` has ``segment``, ``start``, ``end`` (s) and ``n_notes`` of window ``i``.

    Parameters
    ----------
    path : path
        A MIDI file.
    seconds : float, optional
        Window length in seconds.
    hop : float or int, optional
        Window hop (seconds, or notes with ``n_notes``).
    n_notes : int, optional
        Windows of this many consecutive notes.
    **params
        :class:`SymbolicParams` fields.
    """
    p = SymbolicParams.from_kwargs(params)
    score = read_midi(path)
    if score.n_notes == 0:
        raise DataError(f"{str(path)!r}: the MIDI file holds no notes (silent)")
    batch = segment_notes(
        score.notes(), seconds=seconds, hop=hop, n_notes=n_notes, boundary=p.boundary
    )
    feats = batch_features(batch, **asdict(p))
    counts = np.bincount(batch.segment_ids()[batch.onset], minlength=batch.n_segments)
    meta = [
        {
            "segment": i,
            "start": float(batch.start[i]),
            "end": float(batch.start[i] + batch.duration[i]),
            "n_notes": int(counts[i]),
        }
        for i in range(batch.n_segments)
    ]
    return feats, meta
