"""The harmony channel's evidence (private to :mod:`aria_tda.media`): pitch-class or chroma
profiles and the two chord sequences aligned by the longest common subsequence of root motions.

See :mod:`aria_tda.media.aspects` for the conventions.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from aria_tda.media import svg
from aria_tda.media._evidence import (
    FPS,
    AspectEvidence,
    View,
    absent,
    analyses,
    cosine,
    labels_of,
    mode_of,
    pitched,
)
from aria_tda.media.kernels import lcs_root_motion, pitch_class_profile, pitch_grid

_PC = ("C", "C#", "D", "D#", "E", "F", "F#", "G", "G#", "A", "A#", "B")
_MAX_COLUMNS = 40


def note_chords(v: View) -> list[Any]:
    """Chords of a notes window: note chroma on the 50 Hz grid, then the library's decoder."""
    from aria_tda.features.audio.chords import decode_chords

    n = pitched(v)
    if n.empty or v.length <= 0:
        return []
    grid = pitch_grid(
        n["pitch"].to_numpy(),
        n["start"].to_numpy(),
        n["end"].to_numpy(),
        t_range=(0.0, v.length),
        fps=FPS,
    )
    pcs = np.arange(128) % 12
    treble = np.zeros((12, grid.shape[0]))
    np.add.at(treble, pcs, grid.T.astype(float))
    sounding = grid.any(axis=1)
    bass = np.zeros_like(treble)
    lowest = np.argmax(grid, axis=1)
    bass[pcs[lowest[sounding]], np.flatnonzero(sounding)] = 1.0
    peak = treble.max(axis=0, keepdims=True)
    treble = treble / np.where(peak > 0, peak, 1.0)
    return decode_chords(treble, bass, frame_period=1.0 / FPS, silent=np.logical_not(sounding))


def root_runs(chords: Sequence[Any]) -> list[tuple[float, float, int, str]]:
    """N dropped, consecutive equal roots merged (as ``root_motions`` does): (s, e, root, name)."""
    runs: list[tuple[float, float, int, str]] = []
    for c in chords:
        if c.root < 0:
            continue
        if runs and runs[-1][2] == c.root:
            s, _, r, name = runs[-1]
            runs[-1] = (s, float(c.end), r, name)
        else:
            name = str(c.label).replace(":maj", "").replace(":min", "m")
            runs.append((float(c.start), float(c.end), int(c.root), name))
    return runs


def harmony(q: View, t: View) -> AspectEvidence:
    mode = mode_of(q, t)
    if mode is None:
        return absent(
            "harmony", "Harmony evidence needs notes for both clips or audio for both clips.", q, t
        )
    if mode == "symbolic":
        profiles = []
        for v in (q, t):
            n = pitched(v)
            profiles.append(
                pitch_class_profile(
                    n["pitch"].to_numpy(),
                    n["start"].to_numpy(),
                    n["end"].to_numpy(),
                    t_range=(0.0, max(v.length, 1e-9)),
                )
            )
        chords = [note_chords(q), note_chords(t)]
        what = "Pitch-class profiles (share of sounding time per pitch class)"
    else:
        found = analyses(q, t)
        if isinstance(found, str):
            return absent("harmony", found, q, t)
        profiles = [np.asarray(a.features["chroma"], dtype=float) for a in found]
        profiles = [p / p.sum() if p.sum() > 0 else p for p in profiles]
        chords = [list(a.chords) for a in found]
        what = "Chroma profiles (mean chroma over the window)"
    sim = cosine(profiles[0], profiles[1])
    if not math.isfinite(sim):
        empty = [v.label for v, p in zip((q, t), profiles, strict=True) if not p.any()]
        return absent(
            "harmony", "No pitched sound in the window of " + " and ".join(empty) + ".", q, t
        )
    runs = [root_runs(c) for c in chords]
    motions = [[(b[2] - a[2]) % 12 for a, b in itertools.pairwise(r)] for r in runs]
    pairs = lcs_root_motion(motions[0], motions[1])
    ticks = [(k, _PC[k]) for k in range(12)]
    panels = [
        svg.bars_panel(
            profiles,
            labels_of(q, t),
            ticks=ticks,
            title=what,
            xlabel="pitch class",
            ylabel="share",
            width=620.0,
        )
    ]
    panels.append(_alignment_panel(runs, motions, pairs, labels_of(q, t), (q.length, t.length)))
    sentence = (
        f"{what} agree with cosine similarity {sim:.2f} (1 = the same proportions). "
        f"The chord sequences share {len(pairs)} root motions in order (longest common "
        f"subsequence, highlighted) of {len(motions[0])} and {len(motions[1])}."
    )
    details = {
        "mode": mode,
        "labels": labels_of(q, t),
        "profiles": [p.tolist() for p in profiles],
        "chords": [[list(r) for r in rr] for rr in runs],
        "root_motions": motions,
        "lcs_pairs": pairs.tolist(),
    }
    return AspectEvidence("harmony", svg.compose(panels, label=sentence), sim, sentence, details)


def _alignment_panel(
    runs: list[list[tuple[float, float, int, str]]],
    motions: list[list[int]],
    pairs: np.ndarray,
    labels: list[str],
    lengths: tuple[float, float],
) -> svg.Panel:
    """Chord timelines (runs in the LCS highlighted) and the root motions aligned in columns."""
    width, left = 620.0, 44.0
    pw = width - left - 10.0
    out = [
        svg.text(
            left,
            14,
            "Chord sequences; the longest common subsequence of root motions highlighted",
            extra=' font-weight="bold"',
        )
    ]
    used: list[set[int]] = [set(), set()]
    for i, j in pairs:
        used[0].update((int(i), int(i) + 1))
        used[1].update((int(j), int(j) + 1))
    span = max(max(lengths), 1e-9)
    for k in range(2):
        y = 24.0 + k * 24.0
        out.append(svg.text(left - 4, y + 12, f"{'AB'[k]}", anchor="end"))
        for r, (s, e, _, name) in enumerate(runs[k]):
            x0 = left + max(s, 0.0) / span * pw
            x1 = left + min(e, span) / span * pw
            hit = r in used[k]
            fill = svg.color(k) if hit else "#dddddd"
            out.append(
                svg.rect(x0, y, x1 - x0 - 0.5, 16, fill, ' fill-opacity="0.75"' if hit else "")
            )
            if x1 - x0 > 6.5 * len(name) + 2:
                out.append(
                    svg.text(
                        (x0 + x1) / 2,
                        y + 12,
                        name,
                        anchor="middle",
                        extra=' fill="#ffffff"' if hit else "",
                    )
                )
    columns = _columns(len(motions[0]), len(motions[1]), pairs)
    shown = columns[:_MAX_COLUMNS]
    cw = 52.0
    per_row = max(int(pw // cw), 1)
    y0 = 84.0
    out.append(
        svg.text(
            left,
            y0 - 6,
            "root motions (semitones up, mod 12), aligned; matched motions boxed in colour",
        )
    )
    for c, (i, j) in enumerate(shown):
        block, col = divmod(c, per_row)
        x = left + col * cw
        yb = y0 + block * 80.0
        matched = i is not None and j is not None
        for k, idx in enumerate((i, j)):
            if idx is None:
                continue
            y = yb + k * 38.0
            a, b = runs[k][idx][3], runs[k][idx + 1][3]
            stroke = svg.color(k) if matched else "#999999"
            width_attr = ' stroke-width="2"' if matched else ""
            out.append(
                svg.rect(
                    x + 1,
                    y,
                    cw - 2,
                    30,
                    svg.color(k) if matched else "#ffffff",
                    f' fill-opacity="0.25" stroke="{stroke}"{width_attr}',
                )
            )
            fs = _token_font(len(a) + len(b))
            out.append(svg.text(x + cw / 2, y + 12, f"{a}→{b}", anchor="middle", extra=fs))
            out.append(
                svg.text(
                    x + cw / 2,
                    y + 25,
                    f"+{motions[k][idx]}",
                    anchor="middle",
                    extra=' font-weight="bold"' if matched else "",
                )
            )
        if matched:
            out.append(
                svg.line(x + cw / 2, yb + 30, x + cw / 2, yb + 38, svg.INK, ' stroke-width="2"')
            )
        if col == 0:
            for k in range(2):
                out.append(svg.text(left - 4, yb + k * 38.0 + 19, "AB"[k], anchor="end"))
    blocks = max(-(-len(shown) // per_row), 1)
    foot = y0 + blocks * 80.0 + 4.0
    key = f"A = {labels[0]}, B = {labels[1]}"
    if len(columns) > len(shown):
        key += f" (first {len(shown)} of {len(columns)} columns shown)"
    if not columns:
        key += "; fewer than two distinct chords, so no root motion to align"
    out.append(svg.text(left, foot, key))
    return "".join(out), width, foot + 6.0


def _token_font(chars: int) -> str:
    return "" if chars <= 5 else (' font-size="9"' if chars <= 7 else ' font-size="8"')


def _columns(n: int, m: int, pairs: np.ndarray) -> list[tuple[int | None, int | None]]:
    """Alignment columns: unmatched motions of A, then of B, before each matched pair."""
    cols: list[tuple[int | None, int | None]] = []
    i = j = 0
    for pi, pj in [(int(a), int(b)) for a, b in pairs] + [(n, m)]:
        cols += [(x, None) for x in range(i, pi)]
        cols += [(None, y) for y in range(j, pj)]
        if pi < n and pj < m:
            cols.append((pi, pj))
        i, j = pi + 1, pj + 1
    return cols
