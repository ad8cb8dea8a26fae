"""Export pitch/duration token sequences from music21's bundled corpus (project environment).

A helper of ``generate.py`` (which runs in the peer-library environment, where music21 is not
installed): run with the project's interpreter, it writes ``OUT`` (default
``/work/verdict-corpus/inputs/music_tokens.npz``) with

``tokens``   int16 (n, 33): BOS followed by the first 16 notes of a melody as (pitch, duration)
             token pairs;
``cls``      int8 (n,): the melody's source collection (its "class"), index into ``classes``;
``classes``  the collection names; ``titles`` the pieces' titles or corpus paths.

Vocabulary (57 tokens): 0 = BOS; 1..48 = MIDI pitch 48..95 (clipped into that range);
49..56 = duration, the nearest of 0.25, 0.5, 0.75, 1, 1.5, 2, 3, 4 quarter notes (log scale).
Rests and grace notes are skipped; a chord contributes its highest pitch.

Sources (all bundled with music21, read offline):

- ``essenFolksong/han1``      Chinese folk songs (Essen collection, ABC)
- ``essenFolksong/altdeu10``  old German folk songs
- ``essenFolksong/kinder0``   German children's songs
- ``bach chorales``           the soprano part of the 4-part chorales (``corpus.chorales``)

Deterministic: corpus order, no randomness. Takes about 40 s (the Essen ABC files parse slowly).

Usage::

    .venv/bin/python scripts/verdict_corpus/music_tokens.py [--out PATH]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

N_NOTES = 16
PITCH_LO, PITCH_HI = 48, 95
DURATIONS = np.array([0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 4.0])
BOS = 0
N_PITCH = PITCH_HI - PITCH_LO + 1
VOCAB = 1 + N_PITCH + len(DURATIONS)
ESSEN = (("han1", "essenFolksong/han1.abc"), ("altdeu10", "essenFolksong/altdeu10.abc"),
         ("kinder0", "essenFolksong/kinder0.abc"))


def encode(notes: list[tuple[int, float]]) -> np.ndarray | None:
    """BOS + the first ``N_NOTES`` (pitch, duration) pairs, or None when the melody is short."""
    if len(notes) < N_NOTES:
        return None
    out = [BOS]
    for midi, ql in notes[:N_NOTES]:
        p = int(np.clip(midi, PITCH_LO, PITCH_HI)) - PITCH_LO
        d = int(np.argmin(np.abs(np.log2(DURATIONS) - np.log2(max(ql, 1e-3)))))
        out += [1 + p, 1 + N_PITCH + d]
    return np.array(out, dtype=np.int16)


def melody(stream) -> list[tuple[int, float]]:
    out = []
    for n in stream.flatten().notes:
        ql = float(n.quarterLength)
        if ql <= 0:  # grace notes
            continue
        out.append((max(p.midi for p in n.pitches), ql))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path,
                    default=Path("/work/verdict-corpus/inputs/music_tokens.npz"))
    args = ap.parse_args(argv)
    from music21 import converter, corpus

    t0 = time.time()
    core = {p.relative_to(p.parents[1]).as_posix(): p for p in corpus.getCorePaths()}
    tokens, cls, titles, classes = [], [], [], []
    for name, rel in ESSEN:
        k = len(classes)
        classes.append(name)
        opus = converter.parse(core[rel])
        for i, score in enumerate(opus.scores):
            t = encode(melody(score))
            if t is not None:
                tokens.append(t)
                cls.append(k)
                titles.append(f"{rel}#{i}")
    k = len(classes)
    classes.append("bach_chorale_soprano")
    for path in corpus.chorales.Iterator(numberingSystem="bwv", returnType="filename"):
        score = corpus.parse(path)
        t = encode(melody(score.parts[0]))
        if t is not None:
            tokens.append(t)
            cls.append(k)
            titles.append(str(path))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    np.savez(args.out, tokens=np.stack(tokens), cls=np.array(cls, dtype=np.int8),
             classes=np.array(classes), titles=np.array(titles), vocab=np.int64(VOCAB))
    counts = np.bincount(np.array(cls), minlength=len(classes))
    per_class = dict(zip(classes, counts.tolist(), strict=True))
    print(f"wrote {len(tokens)} sequences {per_class} to {args.out} in {time.time() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
