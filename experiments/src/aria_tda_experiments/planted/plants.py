r"""Symbolic plants: one musical aspect each, written into natural windows of the corpus.

A *plant* rewrites one aspect of a window's notes and leaves the others as the music had them
(:func:`plant_notes`). The window's notes are grouped by onset (a *group* is the notes that
start together); every pattern below is cycled over the groups from the window's start, so it
recurs within a 64-token window however the music runs on:

==========  =========================================================================  ========
aspect      what the plant sets (everything else is the window's own)                  cycle
==========  =========================================================================  ========
melody      the top note of each group follows the interval motif ``MELODY_MOTIF``     7 groups
            from ``MELODY_START`` (lower notes of the group moved below it by
            octaves); rhythm, velocities and the other voices are the window's
harmony     every note moves to the nearest tone of the current chord of               4 chords
            ``HARMONY_PROGRESSION`` (major triads on C, E, A♭, E; one chord per
            ``HARMONY_GROUPS`` groups): voicing and rhythm are the window's own, so
            each item voices and rhythmises the progression afresh
rhythm      onsets follow the inter-onset pattern ``RHYTHM_IOI`` (seconds), each group  5 groups
            sounding until 90 % of its interval; the groups' pitches and velocities
            are the window's, in order
dynamic     the velocity of each group follows ``DYNAMIC_CONTOUR`` (a ramp from pp to  6 groups
            ff, then a sudden piano); pitches and rhythm are the window's
texture     the number of simultaneous notes follows ``TEXTURE_PATTERN`` (1, 1, 4):     3 groups
            a 1-group keeps its top note, a 4-group its four highest notes, filled
            with octave doublings of its own notes (below, else above) when fewer;
            the group's velocities are dealt to its new notes in turn
==========  =========================================================================  ========

The motif, the progression and the patterns are fixed (one transposition, one tempo): a
plant is a recurring *shape* a small model can learn from a few dozen windows. The aspect names
are ARIA's symbolic channel names (``dynamic``, not dynamics).

:func:`plant_window` cuts a window: the notes of ``span`` tokens decoded from the window's
start, shifted to start on the first note, planted, encoded again and cut to ``window`` tokens
(None when the planted notes encode to fewer tokens). Unmarked windows are re-cut the same way
without a plant, so that how a window starts tells marked from unmarked items nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from aria_tda._checks import check_choice
from aria_tda_experiments import tokenizer as tk

__all__ = ["ASPECTS", "DYNAMIC_CONTOUR", "HARMONY_GROUPS", "HARMONY_PROGRESSION", "MELODY_MOTIF",
           "MELODY_START", "RHYTHM_IOI", "TEXTURE_PATTERN", "onset_groups", "plant_notes",
           "plant_window"]

#: Planted aspects, ARIA's symbolic channel names.
ASPECTS: tuple[str, ...] = ("melody", "harmony", "rhythm", "dynamic", "texture")

#: Melody plant: semitone steps of the top voice (they sum to 0: the motif returns home).
MELODY_MOTIF: tuple[int, ...] = (4, 3, -2, -5, 7, -3, -4)
#: Melody plant: pitch of the first top note (C5).
MELODY_START = 72
#: Harmony plant: pitch classes of each chord (major triads on C, E, A-flat, E).
HARMONY_PROGRESSION: tuple[tuple[int, ...], ...] = ((0, 4, 7), (4, 8, 11), (8, 0, 3),
                                                    (4, 8, 11))
#: Harmony plant: onset groups per chord.
HARMONY_GROUPS = 3
#: Rhythm plant: inter-onset intervals (seconds, multiples of the 10 ms grid).
RHYTHM_IOI: tuple[float, ...] = (0.36, 0.12, 0.12, 0.24, 0.24)
#: Dynamic plant: MIDI velocity of each group.
DYNAMIC_CONTOUR: tuple[int, ...] = (30, 50, 70, 90, 110, 40)
#: Texture plant: notes per group.
TEXTURE_PATTERN: tuple[int, ...] = (1, 1, 4)


def onset_groups(notes: Sequence[tk.Note]) -> list[list[tk.Note]]:
    """Notes grouped by onset (10 ms grid), groups in time order, each sorted high to low.

    Parameters
    ----------
    notes : sequence of Note
        Any order.
    """
    by_start: dict[int, list[tk.Note]] = {}
    for n in notes:
        by_start.setdefault(round(n.start * tk.STEPS_PER_SECOND), []).append(n)
    return [sorted(by_start[s], key=lambda n: -n.pitch) for s in sorted(by_start)]


def _below(pitch: int, top: int) -> int:
    while pitch >= top and pitch - 12 >= 0:
        pitch -= 12
    return pitch


def _nearest_in(pitch: int, classes: Sequence[int]) -> int:
    best = None
    for d in range(0, 7):
        for cand in (pitch - d, pitch + d):  # ties go down
            if 0 <= cand <= 127 and cand % 12 in classes:
                best = cand
                break
        if best is not None:
            return best
    return pitch


def _melody(groups: list[list[tk.Note]]) -> list[tk.Note]:
    out, top = [], MELODY_START
    for i, g in enumerate(groups):
        if i:
            top += MELODY_MOTIF[(i - 1) % len(MELODY_MOTIF)]
        out.append(g[0]._replace(pitch=top))
        out.extend(n._replace(pitch=_below(n.pitch, top)) for n in g[1:])
    return out


def _harmony(groups: list[list[tk.Note]]) -> list[tk.Note]:
    out = []
    for i, g in enumerate(groups):
        chord = HARMONY_PROGRESSION[(i // HARMONY_GROUPS) % len(HARMONY_PROGRESSION)]
        out.extend(n._replace(pitch=_nearest_in(n.pitch, chord)) for n in g)
    return out


def _rhythm(groups: list[list[tk.Note]]) -> list[tk.Note]:
    out, t = [], groups[0][0].start if groups else 0.0
    for i, g in enumerate(groups):
        ioi = RHYTHM_IOI[i % len(RHYTHM_IOI)]
        end = t + round(0.9 * ioi * tk.STEPS_PER_SECOND) / tk.STEPS_PER_SECOND
        out.extend(n._replace(start=t, end=end) for n in g)
        t = round((t + ioi) * tk.STEPS_PER_SECOND) / tk.STEPS_PER_SECOND
    return out


def _dynamic(groups: list[list[tk.Note]]) -> list[tk.Note]:
    return [n._replace(velocity=DYNAMIC_CONTOUR[i % len(DYNAMIC_CONTOUR)])
            for i, g in enumerate(groups) for n in g]


def _texture(groups: list[list[tk.Note]]) -> list[tk.Note]:
    out = []
    for i, g in enumerate(groups):
        size = TEXTURE_PATTERN[i % len(TEXTURE_PATTERN)]
        velocities = [n.velocity for n in g]
        keep = list(g[:size])
        pitches = {n.pitch for n in keep}
        # octave doublings of its own notes, below first (then above, at the piano's bottom)
        for octave in (-12, -24, -36, 12, 24):
            for src in list(keep):
                cand = src.pitch + octave
                if len(keep) < size and 21 <= cand <= 108 and cand not in pitches:
                    keep.append(src._replace(pitch=cand))
                    pitches.add(cand)
        # the group's own loudness, spread over its new notes (one velocity each, cycled), so
        # the plant changes how many notes sound and not how loud the music is
        out.extend(n._replace(velocity=velocities[(i + j) % len(velocities)])
                   for j, n in enumerate(keep))
    return out


_PLANTS = {"melody": _melody, "harmony": _harmony, "rhythm": _rhythm, "dynamic": _dynamic,
           "texture": _texture}


def plant_notes(notes: Sequence[tk.Note], aspect: str) -> list[tk.Note]:
    """``notes`` with ``aspect`` replaced by its plant (see the module docstring).

    Parameters
    ----------
    notes : sequence of Note
        A window's notes (seconds from its start).
    aspect : {"melody", "harmony", "rhythm", "dynamic", "texture"}
        Which plant.

    Returns
    -------
    list[Note]
        Normalised as the tokenizer represents them (:func:`tokenizer.normalize_notes`).
    """
    aspect = check_choice("aspect", aspect, ASPECTS)
    return tk.normalize_notes(_PLANTS[aspect](onset_groups(notes)))


def plant_window(span: np.ndarray, aspect: str | None, *, window: int,
                 start_velocity: int = tk.DEFAULT_VELOCITY) -> np.ndarray | None:
    """A planted window: ``span``'s notes with ``aspect`` planted, cut to ``window`` tokens.

    Parameters
    ----------
    span : np.ndarray [shape=(n,)], int
        Tokens from the window's start on (longer than ``window``, so that the planted notes
        fill it however the plant changes their token count).
    aspect : str or None
        Which plant (:data:`ASPECTS`); None re-cuts the window unplanted, the same way (every
        window of the planted corpus starts on its first note, marked or not).
    window : int
        Tokens per window.
    start_velocity : int
        Velocity in effect at the span's start (the corpus' ``start_velocity``).

    Returns
    -------
    np.ndarray [shape=(window,)], int64, or None
        None when the planted notes encode to fewer than ``window`` tokens.
    """
    notes = tk.decode(np.asarray(span), initial_velocity=int(start_velocity))
    if not notes:
        return None
    first = notes[0].start  # the window starts on its first note
    notes = [n._replace(start=n.start - first, end=n.end - first) for n in notes]
    toks = tk.encode(tk.normalize_notes(notes) if aspect is None else plant_notes(notes, aspect))
    return toks[:window].astype(np.int64) if toks.size >= window else None
