r"""The symbolic evidence channels: 15 features from notes, vectorised over segments.

The paper (§3.3, appendix table "Feature extraction parameters for the five symbolic evidence
channels") describes a symbolic track by 12 jSymbolic-2.2 features in five channels
(:mod:`aria_tda.features.registry`, modality ``"symbolic"``). ARIA adds three *pattern*
features (the registry's ``"extended"`` feature set, its default) that see the order of onsets,
which the paper's distributions cannot: ``interval_transitions`` (melody), ``voice_transitions``
and ``voice_periodicity`` (texture). ``feature_set="paper"`` (registry, similarity) reads the
paper's 12 only. This module computes all 15 from MIDI files, from in-memory notes (e.g. a
model's decoded segments) and from a batch of segments at once, in two *forms*:

``form="paper"`` (the channel default)
    the paper's dimensions: melodic intervals in 25 signed bins, rhythmic values in 11 bins,
    vertical intervals and polyphony sampled on a 50 Hz grid.
``form="jsymbolic"``
    jSymbolic 2.2's own forms of the same features: M-1 with 128 unsigned bins, R-13 with 12
    bins snapped on integer ticks, vertical intervals (C-2) and polyphony (C-6, C-7) weighted
    per MIDI tick, D-4 divided the way 2.2 divides it. The whole-file jSymbolic-2.2-compatible
    mode, keyed by feature codes, is :func:`aria_tda.features.jsymbolic.jsymbolic_features`.

Conventions
-----------
Notes are a :class:`~aria_tda.features.midi.NoteArray` (anything :func:`as_notes` accepts). A note
*sounds* on ``[start, end)``. Drums (``is_drum``, MIDI channel 10) are left out of every
pitch-based feature (melodic interval, pitch class, vertical interval, polyphony, pitch range)
and kept in the others (note density, rhythmic values, dynamics), as in jSymbolic 2.2. A
*voice* is a (track, channel) pair. Histograms are divided by their sum (all zeros when
empty); standard deviations are sample ones (:math:`n-1`, 0 below two values); a feature of a
segment without the notes it needs is 0.

===================== ====== ====== =============================================================
feature (channel)     paper  2.2    definition (per segment)
===================== ====== ====== =============================================================
melodic_interval (M)  25     128    consecutive onsets of one voice (drums out), in onset order
                                    (ties: input/file order): interval = pitch − previous pitch.
                                    A note on the *same onset* as the previous note of its voice
                                    adds no interval but becomes the previous pitch. Paper: signed
                                    bins −12..+12, larger leaps counted in the ±12 bins
                                    (``interval_overflow="clip"``) or dropped (``"drop"``).
                                    2.2 (M-1): bin = \|interval\| in 0..127.
pitch_class (H)       12     12     P-2: onsets per pitch class, normalised, then *rotated* so
                                    bin 0 is the most common pitch class (first wins a tie;
                                    ``rotate_pitch_class=False`` keeps C at bin 0).
vertical_interval (H) 12     12     C-2: at every grid unit, for each pair of distinct sounding
                                    pitches p < q add :math:`S_p + S_q` to bin (q − p) mod 12,
                                    and :math:`S_p` to bin 0 where ≥ 2 notes share pitch p
                                    (:math:`S_p` = summed velocity of the notes sounding at p).
                                    Unit: a 50 Hz frame (paper) or a MIDI tick (2.2).
note_density (R)      1      1      RT-5: onsets (drums included) / segment length in seconds;
                                    0 when the segment is shorter than 1 s.
mean_rhythmic_value   1      1      R-25: mean snapped rhythmic value in quarter notes.
rhythmic_value (R)    11     12     R-13: durations in quarter notes snapped to the nearest of
                                    1/8, 1/4, 1/2, 3/4, 1, 3/2, 2, 3, 4, 6, 8 (, 12) — lower bin
                                    bounds .1875, .375, .625, .875, 1.25, 1.75, 2.5, 3.5, 5, 7
                                    (, 10). Paper: 11 bins, 32nd to double whole (≥ 7 quarters
                                    → double whole). 2.2: 12 bins, bounds on integer ticks as
                                    2.2 computes them (``tpq // 8`` …).
velocity_change (D)   1      1      D-4: mean \|Δ loudness\| between successive onsets on one MIDI
                                    channel. Paper: in onset order, divided by the number of
                                    changes (``d4_divisor="changes"``). 2.2: in file order,
                                    divided by the number of notes on channels with ≥ 2 notes
                                    (``"notes"``), which is what 2.2 computes.
velocity_std (D)      1      1      D-2: sample SD of loudness over all onsets.
dynamic_range (D)     1      1      D-1: max − min loudness.
mean_polyphony (T)    1      1      C-6: mean number of distinct sounding pitches over the
                                    grid units where at least one pitch sounds.
polyphony_std (T)     1      1      C-7: sample SD of the same per-unit counts.
pitch_range (T)       1      1      P-8: highest − lowest onset pitch.
interval_transitions  49     49     (M) ARIA pattern feature, on the onset groups (below): the
                                    top voice :math:`\mathrm{top}_t` = highest pitch of group t; its
                                    intervals :math:`i_t = \mathrm{top}_{t+1} - \mathrm{top}_t`
                                    in 7 classes by the edges −4.5, −2.5, −0.5, 0.5, 2.5, 4.5
                                    (0 down ≥ 5, 1 down 3–4, 2 down 1–2, 3 unison, 4 up 1–2,
                                    5 up 3–4, 6 up ≥ 5); histogram of the consecutive pairs
                                    :math:`(c(i_t), c(i_{t+1}))` at bin :math:`7a + b`,
                                    normalised (zeros below 3 groups).
voice_transitions (T) 16     16     ARIA pattern feature: group size :math:`n_t` = distinct
                                    pitches of group t capped at 4 (1, 2, 3, 4+); histogram of
                                    the consecutive pairs :math:`(n_t, n_{t+1})` at bin
                                    :math:`4(n_t - 1) + n_{t+1} - 1`, normalised (zeros below
                                    2 groups).
voice_periodicity (T) 8      8      ARIA pattern feature: autocorrelation of the capped sizes,
                                    :math:`r_l = \sum_t x_t x_{t+l} / \sum_t x_t^2` with
                                    :math:`x = n - \bar n`, lags l = 1..8; 0 for a lag ≥ the
                                    number of groups, and for every lag when
                                    :math:`\sum_t x_t^2 = 0` (constant sizes, < 2 groups).
===================== ====== ====== =============================================================

*Onset groups* (pattern features): the segment's own pitched notes (drums out) grouped by
identical onset — the onset time in seconds in the paper form, the onset tick in the 2.2 form
(the onset the melodic intervals use) — in time order; the three are defined the same way in
both forms. A texture whose onsets cycle 1, 1, 4 notes puts all of ``voice_transitions`` on
(1, 1), (1, 4), (4, 1) and peaks ``voice_periodicity`` at lag 3, where its polyphony mean and
SD match many textures without that pattern.

Loudness is velocity scaled by channel volume (CC7) for notes read from MIDI, else velocity.
Rhythmic values come from ticks (``(end_tick − start_tick) / tpq``) when the notes have them;
otherwise from seconds at ``qpm`` quarter notes per minute (default 120, the MIDI default
tempo — MAESTRO's files are written at 120 bpm). In the 2.2 form, notes without ticks get
``round(seconds · tpq · qpm / 60)``.

Grid (paper form). A window ``[t0, t0 + d)`` has ``ceil(d · fps)`` frames; a note occupies
frames ``[round((start − t0)·fps), round((end − t0)·fps))`` (round half up), at least one
frame if ``end > start``, none if ``end == start``, clipped to the window. The 2.2 form uses
ticks ``[start_tick, end_tick)`` clipped to the window's ticks.

Segments and boundaries
-----------------------
:func:`segment_notes` cuts a piece into fixed windows: ``seconds`` (with ``hop``), ``n_notes``
(blocks of consecutive notes in onset order — token blocks of a note-level tokenisation) or
explicit ``bounds``. Every note *belongs* to the window(s) holding its onset: only those notes
count for onset-based features (melodic and pitch-class histograms, density, rhythmic values,
dynamics, range), with their full duration for the rhythmic value even when they ring past
the window's end; the first note of a window has no melodic predecessor. A note crossing a
boundary is handled by ``boundary``:

- ``"clip"`` (default): its clipped sounding part also counts in the later window's grid
  features (vertical intervals, polyphony) — what is heard in the window;
- ``"onset"``: only the window holding its onset sees it (clipped at that window's end).

The last ``seconds`` window is shorter when the piece ends inside it; its own length is used.
:func:`segment_corpus` does the same for many pieces in one batch; :func:`make_batch` takes
ready-made segments (e.g. decoded token blocks: every note belongs to its segment). A batch may
mix sources: each segment keeps its own tick resolution and tempo map.

The grid SD (C-7) is a sample SD over grid units, so it depends slightly on the grid's
resolution (factor :math:`\sqrt{n/(n-1)}` for n sounding units), as jSymbolic's does on
ticks per quarter.

Every feature has an exact loop reference, :func:`symbolic_features_reference` (the same
signature as :func:`symbolic_features`; :func:`reference_features` adds ``owned`` for notes that
only sound in a segment), against which the vectorised batch path (:func:`batch_features`) is
tested.

Package layout: :mod:`~aria_tda.features.symbolic.params` (parameters, note input),
:mod:`~aria_tda.features.symbolic.segments` (windows and batches),
:mod:`~aria_tda.features.symbolic.batch` (the vectorised features and the file extractors),
:mod:`~aria_tda.features.symbolic.reference` (the loop reference).
"""

from __future__ import annotations

from aria_tda.features.midi import DRUM_CHANNEL
from aria_tda.features.symbolic.batch import (
    batch_features,
    extract_file,
    extract_file_record,
    extract_file_segments,
    symbolic_features,
    symbolic_features_batch,
)
from aria_tda.features.symbolic.params import (
    FEATURE_NAMES,
    FORMS,
    RHYTHMIC_VALUES,
    SymbolicParams,
    as_notes,
    feature_dims,
)
from aria_tda.features.symbolic.reference import reference_features, symbolic_features_reference
from aria_tda.features.symbolic.segments import NoteBatch, make_batch, segment_corpus, segment_notes

__all__ = [
    "FEATURE_NAMES",
    "FORMS",
    "RESERVED_METADATA",
    "RHYTHMIC_VALUES",
    "NoteBatch",
    "SymbolicParams",
    "as_notes",
    "batch_features",
    "extract_file",
    "extract_file_record",
    "extract_file_segments",
    "feature_dims",
    "make_batch",
    "segment_corpus",
    "segment_notes",
    "symbolic_features",
    "symbolic_features_batch",
]

#: metadata columns :func:`extract_file_record` (and the extraction engine: ``source``) record
RESERVED_METADATA = (
    "source",
    "duration",
    "n_notes",
    "n_pitched_notes",
    "ticks_per_quarter",
    "n_tracks",
)

# importable here, not in __all__; DRUM_CHANNEL: channel 10 (index 9) is drums
_ = (reference_features, symbolic_features_reference, DRUM_CHANNEL)
