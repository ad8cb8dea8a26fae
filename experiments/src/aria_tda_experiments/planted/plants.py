r"""Symbolic plants: one musical aspect each, written into natural windows of the corpus.

A *plant* rewrites one aspect of a window's notes and leaves the others as the music had them
(:func:`plant_notes`). The window's notes are grouped by onset (a *group* is the notes that
start together); every pattern is cycled over the groups from the window's start, so it
recurs within a 64-token window however the music runs on. How each plant rewrites a window is
fixed; its pattern comes from a *family* (:class:`SymbolicPlantFamily`):

==========  =========================================================================
aspect      what the plant sets (everything else is the window's own)
==========  =========================================================================
melody      the top note of each group follows the interval motif ``melody_motif``
            from ``melody_start`` (lower notes of the group moved below it by
            octaves); rhythm, velocities and the other voices are the window's
harmony     every note moves to the nearest tone of the current chord of
            ``harmony_progression`` (one chord per ``harmony_groups`` groups): voicing
            and rhythm are the window's own, so each item voices and rhythmises the
            progression afresh
rhythm      onsets follow the inter-onset pattern ``rhythm_ioi`` (seconds), each group
            sounding until 90 % of its interval; the groups' pitches and velocities
            are the window's, in order
dynamic     the velocity of each group follows ``dynamic_contour``; pitches and
            rhythm are the window's
texture     the number of simultaneous notes follows ``texture_pattern``: a group of
            size ``k`` keeps its ``k`` highest notes, filled with octave doublings of
            its own notes (below, else above) when fewer; the group's velocities are
            dealt to its new notes in turn
==========  =========================================================================

:data:`FAMILIES` holds two families. **A** (the default; its patterns are also this module's
constants, :data:`MELODY_MOTIF` ...) is the one the experiment was designed and sized with.
**B** is a held-out family, designed from musical reasoning alone and never used to choose any
setting, so that ARIA's per-aspect reading is also tested on patterns nothing was tuned on:

==========  ===========================================  ===========================================
aspect      A                                            B
==========  ===========================================  ===========================================
melody      +4 +3 −2 −5 +7 −3 −4 from C5 (leaps, 7       −2 −2 −1 +8 −2 −1 from E5 (steps with one
            groups)                                      leap of a minor sixth, 6 groups)
harmony     C – E – A♭ – E major, 3 groups per chord     B♭m – G♭ – Dm – A (minor and major
            (12-group cycle)                             alternate), 2 groups per chord (8 groups)
rhythm      0.36 0.12 0.12 0.24 0.24 s (3:1:1:2:2)       0.30 0.30 0.20 s (tresillo, 3:3:2)
dynamic     30 50 70 90 110 40 (ramp, sudden piano)      112 44 80 44 (strong, weak, medium, weak)
texture     1, 1, 4                                      3, 1
==========  ===========================================  ===========================================

The motif, the progression and the patterns of a family are fixed (one transposition, one
tempo): a plant is a recurring *shape* a small model can learn from a few dozen windows. The
aspect names are ARIA's symbolic channel names (``dynamic``, not dynamics).

:func:`plant_window` cuts a window: the notes of ``span`` tokens decoded from the window's
start, shifted to start on the first note, planted, encoded again and cut to ``window`` tokens
(None when the planted notes encode to fewer tokens). Unmarked windows are re-cut the same way
without a plant, so that how a window starts tells marked from unmarked items nothing.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from aria_tda._checks import check_choice
from aria_tda.errors import ParameterError, expected
from aria_tda_experiments import tokenizer as tk

__all__ = ["ASPECTS", "DYNAMIC_CONTOUR", "FAMILIES", "HARMONY_GROUPS", "HARMONY_PROGRESSION",
           "MELODY_MOTIF", "MELODY_START", "PLANT_FAMILIES", "RHYTHM_IOI", "TEXTURE_PATTERN",
           "SymbolicPlantFamily", "onset_groups", "plant_family", "plant_notes", "plant_window"]

#: Planted aspects, ARIA's symbolic channel names.
ASPECTS: tuple[str, ...] = ("melody", "harmony", "rhythm", "dynamic", "texture")
#: Names of the plant families (both modalities): ``A`` the default, ``B`` held out.
PLANT_FAMILIES: tuple[str, ...] = ("A", "B")

#: Melody plant (family A): semitone steps of the top voice (they sum to 0: the motif returns
#: home).
MELODY_MOTIF: tuple[int, ...] = (4, 3, -2, -5, 7, -3, -4)
#: Melody plant (family A): pitch of the first top note (C5).
MELODY_START = 72
#: Harmony plant (family A): pitch classes of each chord (major triads on C, E, A-flat, E).
HARMONY_PROGRESSION: tuple[tuple[int, ...], ...] = ((0, 4, 7), (4, 8, 11), (8, 0, 3),
                                                    (4, 8, 11))
#: Harmony plant (family A): onset groups per chord.
HARMONY_GROUPS = 3
#: Rhythm plant (family A): inter-onset intervals (seconds, multiples of the 10 ms grid).
RHYTHM_IOI: tuple[float, ...] = (0.36, 0.12, 0.12, 0.24, 0.24)
#: Dynamic plant (family A): MIDI velocity of each group.
DYNAMIC_CONTOUR: tuple[int, ...] = (30, 50, 70, 90, 110, 40)
#: Texture plant (family A): notes per group.
TEXTURE_PATTERN: tuple[int, ...] = (1, 1, 4)


@dataclasses.dataclass(frozen=True)
class SymbolicPlantFamily:
    """The patterns of one family of symbolic plants (see the module docstring).

    Attributes
    ----------
    name : str
        The family's name (:data:`PLANT_FAMILIES`).
    melody_motif : tuple of int
        Semitone steps of the top voice, cycled (non-empty).
    melody_start : int
        MIDI pitch of the first top note (0-127).
    harmony_progression : tuple of tuple of int
        Pitch classes (0-11) of each chord, cycled.
    harmony_groups : int
        Onset groups per chord (≥ 1).
    rhythm_ioi : tuple of float
        Inter-onset intervals, cycled (seconds; positive multiples of the 10 ms grid, at most
        1 s, one time-shift token each).
    dynamic_contour : tuple of int
        MIDI velocity of each group, cycled (1-127).
    texture_pattern : tuple of int
        Notes per group, cycled (≥ 1).
    """

    name: str
    melody_motif: tuple[int, ...]
    melody_start: int
    harmony_progression: tuple[tuple[int, ...], ...]
    harmony_groups: int
    rhythm_ioi: tuple[float, ...]
    dynamic_contour: tuple[int, ...]
    texture_pattern: tuple[int, ...]

    def __post_init__(self) -> None:
        def bad(field: str, what: str) -> ParameterError:
            return ParameterError(expected(field, what, getattr(self, field)))

        for field in ("melody_motif", "harmony_progression", "rhythm_ioi", "dynamic_contour",
                      "texture_pattern"):
            if not getattr(self, field):
                raise bad(field, "a non-empty pattern")
        if not 0 <= self.melody_start <= 127:
            raise bad("melody_start", "a MIDI pitch 0-127")
        if not all(c and all(0 <= pc <= 11 for pc in c) for c in self.harmony_progression):
            raise bad("harmony_progression", "chords of pitch classes 0-11")
        if self.harmony_groups < 1:
            raise bad("harmony_groups", "at least 1")
        steps = [ioi * tk.STEPS_PER_SECOND for ioi in self.rhythm_ioi]
        if not all(abs(s - round(s)) < 1e-9 and 1 <= round(s) <= tk.MAX_SHIFT for s in steps):
            raise bad("rhythm_ioi", "multiples of 10 ms from 0.01 to 1 s")
        if not all(1 <= v <= 127 for v in self.dynamic_contour):
            raise bad("dynamic_contour", "MIDI velocities 1-127")
        if not all(k >= 1 for k in self.texture_pattern):
            raise bad("texture_pattern", "group sizes of at least 1")


#: The plant families: ``A`` (this module's constants, the default) and ``B`` (held out: never
#: used to choose a setting; see the module docstring for why each pattern).
FAMILIES: dict[str, SymbolicPlantFamily] = {
    "A": SymbolicPlantFamily(
        name="A", melody_motif=MELODY_MOTIF, melody_start=MELODY_START,
        harmony_progression=HARMONY_PROGRESSION, harmony_groups=HARMONY_GROUPS,
        rhythm_ioi=RHYTHM_IOI, dynamic_contour=DYNAMIC_CONTOUR, texture_pattern=TEXTURE_PATTERN),
    "B": SymbolicPlantFamily(
        name="B",
        # E D C B, up a minor sixth to G, F E: stepwise descents around one leap (A: arpeggio
        # leaps of 3-7 semitones); sums to 0 like A's, so the line stays in its register
        melody_motif=(-2, -2, -1, 8, -2, -1), melody_start=76,
        # Bb minor - Gb - D minor - A: minor and major triads alternating, every change by
        # semitone voice leading (Gb -> Dm moves all three voices); none of A's chords
        harmony_progression=((10, 1, 5), (6, 10, 1), (2, 5, 9), (9, 1, 4)), harmony_groups=2,
        # the tresillo, 3 + 3 + 2 tenths of a second (A: 3:1:1:2:2 on a 0.12 s unit)
        rhythm_ioi=(0.30, 0.30, 0.20),
        # a bar's metrical accents, strong - weak - medium - weak (A: a ramp, then subito p);
        # none of its velocity bins is one of A's
        dynamic_contour=(112, 44, 80, 44),
        # a three-note chord, then a single note (A: two single notes, then four)
        texture_pattern=(3, 1)),
}
if tuple(FAMILIES) != PLANT_FAMILIES:  # pragma: no cover
    raise RuntimeError("FAMILIES must hold every name of PLANT_FAMILIES, in order")


def plant_family(family: str | SymbolicPlantFamily) -> SymbolicPlantFamily:
    """The family ``family`` names (a :class:`SymbolicPlantFamily` is returned as it is).

    Parameters
    ----------
    family : {"A", "B"} or SymbolicPlantFamily
    """
    if isinstance(family, SymbolicPlantFamily):
        return family
    return FAMILIES[check_choice("family", family, PLANT_FAMILIES)]


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


def _melody(groups: list[list[tk.Note]], fam: SymbolicPlantFamily) -> list[tk.Note]:
    out: list[tk.Note] = []
    top, motif = fam.melody_start, fam.melody_motif
    for i, g in enumerate(groups):
        if i:
            top += motif[(i - 1) % len(motif)]
        out.append(g[0]._replace(pitch=top))
        out.extend(n._replace(pitch=_below(n.pitch, top)) for n in g[1:])
    return out


def _harmony(groups: list[list[tk.Note]], fam: SymbolicPlantFamily) -> list[tk.Note]:
    out: list[tk.Note] = []
    prog = fam.harmony_progression
    for i, g in enumerate(groups):
        chord = prog[(i // fam.harmony_groups) % len(prog)]
        out.extend(n._replace(pitch=_nearest_in(n.pitch, chord)) for n in g)
    return out


def _rhythm(groups: list[list[tk.Note]], fam: SymbolicPlantFamily) -> list[tk.Note]:
    out: list[tk.Note] = []
    t = groups[0][0].start if groups else 0.0
    for i, g in enumerate(groups):
        ioi = fam.rhythm_ioi[i % len(fam.rhythm_ioi)]
        end = t + round(0.9 * ioi * tk.STEPS_PER_SECOND) / tk.STEPS_PER_SECOND
        out.extend(n._replace(start=t, end=end) for n in g)
        t = round((t + ioi) * tk.STEPS_PER_SECOND) / tk.STEPS_PER_SECOND
    return out


def _dynamic(groups: list[list[tk.Note]], fam: SymbolicPlantFamily) -> list[tk.Note]:
    contour = fam.dynamic_contour
    return [n._replace(velocity=contour[i % len(contour)]) for i, g in enumerate(groups)
            for n in g]


def _texture(groups: list[list[tk.Note]], fam: SymbolicPlantFamily) -> list[tk.Note]:
    out: list[tk.Note] = []
    for i, g in enumerate(groups):
        size = fam.texture_pattern[i % len(fam.texture_pattern)]
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


def plant_notes(notes: Sequence[tk.Note], aspect: str, *,
                family: str | SymbolicPlantFamily = "A") -> list[tk.Note]:
    """``notes`` with ``aspect`` replaced by its plant (see the module docstring).

    Parameters
    ----------
    notes : sequence of Note
        A window's notes (seconds from its start).
    aspect : {"melody", "harmony", "rhythm", "dynamic", "texture"}
        Which plant.
    family : {"A", "B"} or SymbolicPlantFamily
        Whose pattern (:data:`FAMILIES`).

    Returns
    -------
    list[Note]
        Normalised as the tokenizer represents them (:func:`tokenizer.normalize_notes`).
    """
    aspect = check_choice("aspect", aspect, ASPECTS)
    return tk.normalize_notes(_PLANTS[aspect](onset_groups(notes), plant_family(family)))


def plant_window(span: np.ndarray, aspect: str | None, *, window: int,
                 start_velocity: int = tk.DEFAULT_VELOCITY,
                 family: str | SymbolicPlantFamily = "A") -> np.ndarray | None:
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
    family : {"A", "B"} or SymbolicPlantFamily
        Whose pattern (:data:`FAMILIES`; unused when ``aspect`` is None).

    Returns
    -------
    np.ndarray [shape=(window,)], int64, or None
        None when the planted notes encode to fewer than ``window`` tokens.
    """
    fam = plant_family(family)
    notes = tk.decode(np.asarray(span), initial_velocity=int(start_velocity))
    if not notes:
        return None
    first = notes[0].start  # the window starts on its first note
    notes = [n._replace(start=n.start - first, end=n.end - first) for n in notes]
    toks = tk.encode(tk.normalize_notes(notes) if aspect is None
                     else plant_notes(notes, aspect, family=fam))
    return toks[:window].astype(np.int64) if toks.size >= window else None
