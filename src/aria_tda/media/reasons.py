"""Musical reasons for one query and its attributed items: facts, shared material, aligned views.

:func:`add_reasons` fills a :class:`~aria_tda.media.pack.QueryMedia` whose clips are loaded:

- **facts** of the query and of each item — key, meter, tempo, instruments (MIDI:
  :func:`aria_tda.media.reasons_symbolic.piece_facts`; audio:
  :func:`aria_tda.media.reasons_audio.audio_facts`), in the file's own bars (a clip's
  ``offset``);
- **shared material** of each (query, item) pair, with its position in both and whether it
  can discriminate (:func:`~aria_tda.media.reasons_symbolic.shared_material`,
  :func:`~aria_tda.media.reasons_audio.shared_audio_material`);
- an **aligned view** of each pair: query above, item below, on one time axis from the
  *matched position* — the start of the longest shared material that discriminates, else the
  starts of the attributed windows — with bars, beats, the prompt/generated boundary and the
  shared material marked in both (:func:`aria_tda.media.draw_aligned.aligned_roll_svg`,
  :func:`~aria_tda.media.draw_aligned.aligned_audio_png`);
- **notation** excerpts (MIDI) of the query and the item from the matched position
  (:func:`aria_tda.media.notation.notation_svg`, when verovio is installed).

Nothing here raises for a clip it cannot read: the problem is added to the media's
``problems`` and the rest is shown.
"""

from __future__ import annotations

from typing import Any

from aria_tda.errors import one_line
from aria_tda.media.clip_views import MIMES, Asset, ClipView, slug

__all__ = ["ALIGNED_SECONDS", "add_reasons", "matched_starts"]

#: Longest aligned view, seconds (the attributed window when it is shorter).
ALIGNED_SECONDS = 12.0
#: Beats a shared run is drawn over when its end is not known.
_DEFAULT_BEATS = 4


def _clip(view: ClipView) -> Any:
    c = view.clip
    return c if c is not None and hasattr(c, "sr") else None


def view_facts(view: ClipView) -> Any:
    """The facts of one loaded clip (``None`` when it has none to give)."""
    c = _clip(view)
    if c is None:
        return None
    if view.kind == "midi" and c.notes is not None:
        from aria_tda.media.reasons_symbolic import piece_facts

        return piece_facts(c.notes, midi_path=getattr(c.source, "path", None), window=c.window,
                           file_offset=c.offset)
    if view.kind == "audio" and c.samples is not None:
        from aria_tda.media.reasons_audio import audio_facts

        return audio_facts(c.samples, c.sr, window=c.window, file_offset=c.offset)
    return None


def _material(qv: ClipView, iv: ClipView, qf: Any, tf: Any) -> list[Any]:
    if qf is None or tf is None:
        return []
    if qv.kind == "midi" and iv.kind == "midi":
        from aria_tda.media.reasons_symbolic import shared_material

        return list(shared_material(qv.clip.notes, iv.clip.notes, qf, tf))
    if qv.kind == "audio" and iv.kind == "audio":
        from aria_tda.media.reasons_audio import shared_audio_material

        return list(shared_audio_material(qf, tf))
    return []


def _beat(f: Any) -> float:
    beats = getattr(getattr(f, "grid", None), "beats", None)
    if beats is not None and len(beats) > 1:
        import numpy as np

        return float(np.median(np.diff(np.asarray(beats, dtype=float))))
    return 0.5


def _span(x: Any, who: str, f: Any) -> tuple[float, float]:
    start = float(getattr(x, f"{who}_time"))
    end = getattr(x, f"{who}_end", None)
    return start, float(end) if end is not None else start + _DEFAULT_BEATS * _beat(f)


def matched_starts(qv: ClipView, iv: ClipView, shared: list[Any]) -> tuple[float, float, str]:
    """Where the aligned view of a pair starts in each clip (seconds, clip time), and why.

    The start of the longest shared material that discriminates (a little before it: one
    second of lead-in, not before the clip's start), else the starts of the two attributed
    windows.

    Parameters
    ----------
    qv, iv : ClipView
        The query's and the item's loaded views.
    shared : list of SharedMaterial
        Their shared material.
    """
    good = [x for x in shared if getattr(x, "informative", False)]
    if good:
        best = max(good, key=lambda x: x.length)
        qo = float(getattr(qv.clip, "offset", 0.0) or 0.0)
        io = float(getattr(iv.clip, "offset", 0.0) or 0.0)
        qs, its = float(best.query_time) - qo, float(best.item_time) - io
        lead = min(1.0, max(qs, 0.0), max(its, 0.0))
        return qs - lead, its - lead, f"aligned at the shared {best.kind} ({best.content})"
    return float(qv.window[0]), float(iv.window[0]), "aligned at the attributed windows"


def _highlights(shared: list[Any], qv: ClipView, iv: ClipView, qf: Any,
                tf: Any) -> list[tuple[int, float, float, str]]:
    out = []
    qo = float(getattr(qv.clip, "offset", 0.0) or 0.0)
    io = float(getattr(iv.clip, "offset", 0.0) or 0.0)
    for n, x in enumerate(sorted((x for x in shared if x.informative),
                                 key=lambda x: -x.length)[:3]):
        label = f"{n + 1}: {x.kind}"
        a, b = _span(x, "query", qf)
        out.append((0, a - qo, b - qo, label))
        a, b = _span(x, "item", tf)
        out.append((1, a - io, b - io, label))
    return out


def _clip_grid(f: Any, offset: float) -> Any:
    """The facts' beat grid (file time) in clip time: shifted by the clip's ``offset``."""
    g = getattr(f, "grid", None)
    if g is None:
        return None
    from aria_tda.media.theory import BeatGrid

    return BeatGrid(g.beats - offset, g.downbeats - offset, g.meter, g.first_bar)


def _clip_chords(f: Any, offset: float) -> list[Any] | None:
    """The facts' chord spans (file time) in clip time."""
    chords = getattr(f, "chords", None)
    if chords is None:
        return None
    from types import SimpleNamespace

    return [SimpleNamespace(start=c.start - offset, end=c.end - offset, label=c.label,
                            confidence=getattr(c, "confidence", None)) for c in chords]


def _offset(v: ClipView) -> float:
    return float(getattr(v.clip, "offset", 0.0) or 0.0)


def _aligned(qv: ClipView, iv: ClipView, qf: Any, tf: Any, shared: list[Any],
             boundary: float | None) -> Asset | None:
    qs, its, _why = matched_starts(qv, iv, shared)
    length = max(qv.window[1] - qv.window[0], iv.window[1] - iv.window[0], 1.0)
    duration = max(0.5, min(ALIGNED_SECONDS, length,
                            qv.duration - max(qs, 0.0), iv.duration - max(its, 0.0)))
    qo = float(getattr(qv.clip, "offset", 0.0) or 0.0)
    bound = None if boundary is None else boundary - qo
    marks = _highlights(shared, qv, iv, qf, tf)
    name = f"a/{slug(qv.item_id)}__{slug(iv.segment or iv.item_id)}"
    if qv.kind == "midi" and iv.kind == "midi":
        from aria_tda.media.draw_aligned import aligned_roll_svg

        svg = aligned_roll_svg(qv.clip.notes, iv.clip.notes, query_start=qs, item_start=its,
                               duration=duration, query_grid=_clip_grid(qf, _offset(qv)),
                               item_grid=_clip_grid(tf, _offset(iv)), boundary=bound,
                               labels=("query", f"item {iv.item_id}"), highlights=marks)
        return Asset(f"{name}.svg", MIMES["svg"], svg.encode("utf-8"))
    if qv.kind == "audio" and iv.kind == "audio":
        from aria_tda.media.draw_aligned import aligned_audio_png

        png = aligned_audio_png(qv.clip.samples, qv.clip.sr, iv.clip.samples, iv.clip.sr,
                                query_start=qs, item_start=its, duration=duration,
                                query_grid=_clip_grid(qf, _offset(qv)),
                                item_grid=_clip_grid(tf, _offset(iv)), boundary=bound,
                                query_chords=_clip_chords(qf, _offset(qv)),
                                item_chords=_clip_chords(tf, _offset(iv)),
                                highlights=marks)
        return Asset(f"{name}.png", MIMES["png"], png)
    return None


def _notation(qv: ClipView, iv: ClipView, qf: Any, tf: Any,
              shared: list[Any]) -> list[tuple[str, Asset]]:
    if qv.kind != "midi" or iv.kind != "midi":
        return []
    from aria_tda.media.notation import notation_svg

    qs, its, why = matched_starts(qv, iv, shared)
    out = []
    for who, v, f, start in (("query", qv, qf, qs), (f"item {iv.item_id}", iv, tf, its)):
        bars = 2.0 * 4 * _beat(f)  # about two bars
        svg = notation_svg(v.clip.notes, start=max(start, 0.0), end=max(start, 0.0) + bars,
                           grid=_clip_grid(f, _offset(v)), title=f"notation of the {who}")
        if svg is None:
            return []
        pos = f.grid.position(v.clip.offset + max(start, 0.0)) if getattr(f, "grid", None) \
            else f"{start:.1f} s"
        out.append((f"{who} from {pos} ({why})",
                    Asset(f"n/{slug(v.segment or v.item_id)}__{slug(iv.item_id)}.svg",
                          MIMES["svg"], svg.encode("utf-8"))))
    return out


def add_reasons(qm: Any, *, boundary: float | None = None) -> None:
    """Fill ``qm.facts``, ``qm.shared``, ``qm.aligned`` and ``qm.notation`` (module docstring).

    Parameters
    ----------
    qm : QueryMedia
        A query's media whose clips are loaded (:func:`~aria_tda.media.pack.build_query_media`
        with ``reasons=True``).
    boundary : float, optional
        Where the query's prompt ends, seconds into its file.
    """
    def attempt(what: str, fn: Any, *args: Any) -> Any:
        try:
            return fn(*args)
        except Exception as exc:  # a reason that cannot be computed is said, not raised
            qm.problems.append(f"could not compute {what}: {one_line(exc)}")
            return None

    qf = attempt(f"the facts of query {qm.query.item_id}", view_facts, qm.query)
    qm.facts[""] = qf
    for v in qm.items:
        tf = attempt(f"the facts of item {v.item_id}", view_facts, v)
        qm.facts[v.item_id] = tf
        shared = attempt(f"the material item {v.item_id} shares with the query", _material,
                         qm.query, v, qf, tf)
        qm.shared[v.item_id] = shared if shared is not None else []
        if _clip(qm.query) is None or _clip(v) is None:
            continue
        pic = attempt(f"the aligned view of item {v.item_id}", _aligned, qm.query, v, qf, tf,
                      qm.shared[v.item_id], boundary)
        if pic is not None:
            qm.aligned[v.item_id] = pic
        notes = attempt(f"the notation of item {v.item_id}", _notation, qm.query, v, qf, tf,
                        qm.shared[v.item_id])
        if notes:
            qm.notation[v.item_id] = notes
