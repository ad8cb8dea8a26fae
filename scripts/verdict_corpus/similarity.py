"""Calibration corpus, part 2: similarity retrievals over real music (healthy by construction).

Runs in the PROJECT environment (``.venv/bin/python``): reads pieces of music21's bundled
corpus, computes ARIA's own symbolic features for each whole piece
(:func:`aria_tda.features.symbolic.symbolic_features_batch`, paper form, notes at 120 quarter
notes per minute, velocity 64), splits the pieces into training items and queries, and writes
score matrices ``S[i, j] = cosine(feature(train_i), feature(query_j))`` (training x query,
float32 ``.npy``). A nearest-neighbour retrieval ranks, for each query, the items most like it:
its top-K is the query's own neighbourhood, query-specific by construction (it may have hubs).

Pieces (all bundled with music21, read offline):

- monophonic: the Essen folk songs ``essenFolksong/kinder0`` (German children's songs) and
  ``essenFolksong/altdeu10`` (old German songs), one line each;
- polyphonic: the four-part Bach chorales (``corpus.chorales``, BWV numbering), all parts.

Retrievals (``FAMILIES``), four random splits each (seeds 0-3; 600 training pieces x 60
queries, drawn from all pieces):

``chroma``   the 12-bin pitch-class histogram with C at bin 0 (``rotate_pitch_class=False``:
             key-specific), raw cosine.
``rhythm``   the 11-bin rhythmic-value histogram (``rhythmic_value``), raw cosine.
``texture``  bipolar: a balanced mix (300 + 300 training pieces, 30 + 30 queries) of the
             monophonic songs and the polyphonic chorales; texture features (mean_polyphony,
             polyphony_std, voice_transitions, voice_periodicity, pitch_range, plus
             note_density and the mean and SD of the MIDI pitch) z-scored with the training
             items' means and SDs, then cosine. A monophonic query's column and a polyphonic
             query's column correlate negatively (the two camps sit on opposite sides of the
             mean); within a camp the ranking follows the query's own range, register, density
             and (chorales) voicing.

Writes ``DIR/similarity/<family>/split<seed>.npy`` (+ ``.items.json``: which pieces are rows and
columns), ``DIR/manifest.d/similarity.json``, and merges every ``DIR/manifest.d/*.json`` into
``DIR/manifest.json`` (the same merge as ``generate.py``).

Usage::

    .venv/bin/python scripts/verdict_corpus/similarity.py [--out DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
import time
from pathlib import Path

import numpy as np
from corpus_manifest import merge_manifest

DEFAULT_OUT = Path("/work/verdict-corpus")
SECONDS_PER_QUARTER = 0.5
SEEDS = (0, 1, 2, 3)
ESSEN = ("essenFolksong/kinder0.abc", "essenFolksong/altdeu10.abc")
N_TRAIN, N_QUERY = 600, 60
TEXTURE = ("mean_polyphony", "polyphony_std", "voice_transitions", "voice_periodicity",
           "pitch_range", "note_density")


def piece_notes(score) -> dict[str, np.ndarray] | None:
    """start, end (s), pitch, channel of every note of every part (ties merged)."""
    parts = list(score.parts) if score.parts else [score]
    rows = []
    for k, part in enumerate(parts):
        for n in part.stripTies().flatten().notes:
            ql = float(n.quarterLength)
            if ql <= 0:
                continue
            t0 = float(n.offset) * SECONDS_PER_QUARTER
            for p in n.pitches:
                rows.append((t0, t0 + ql * SECONDS_PER_QUARTER, int(p.midi), k))
    if len(rows) < 8:
        return None
    a = np.array(rows, dtype=np.float64)
    a = a[np.lexsort((a[:, 2], a[:, 0]))]
    return {"start": a[:, 0], "end": a[:, 1], "pitch": a[:, 2].astype(int),
            "channel": a[:, 3].astype(int)}


def load_pieces() -> tuple[list[str], list[dict], np.ndarray]:
    from music21 import converter, corpus

    core = {p.relative_to(p.parents[1]).as_posix(): p for p in corpus.getCorePaths()}
    ids, notes, poly = [], [], []
    for rel in ESSEN:
        for i, score in enumerate(converter.parse(core[rel]).scores):
            n = piece_notes(score)
            if n is not None:
                ids.append(f"{rel}#{i}")
                notes.append(n)
                poly.append(False)
    for path in corpus.chorales.Iterator(numberingSystem="bwv", returnType="filename"):
        n = piece_notes(corpus.parse(path))
        if n is not None:
            ids.append(str(path))
            notes.append(n)
            poly.append(True)
    return ids, notes, np.array(poly)


def features(notes: list[dict]) -> dict[str, np.ndarray]:
    from aria_tda.features.midi import NoteArray
    from aria_tda.features.symbolic import symbolic_features_batch

    segs = [NoteArray.from_arrays(start=n["start"], end=n["end"], pitch=n["pitch"],
                                  velocity=np.full(len(n["pitch"]), 64),
                                  channel=n["channel"], track=n["channel"]) for n in notes]
    out = dict(symbolic_features_batch(segs, rotate_pitch_class=False))
    out["pitch_mean"] = np.array([[n["pitch"].mean()] for n in notes])
    out["pitch_sd"] = np.array([[n["pitch"].std()] for n in notes])
    return out


def cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Training x query cosine similarity (rows of a vs rows of b)."""
    na = np.linalg.norm(a, axis=1, keepdims=True)
    nb = np.linalg.norm(b, axis=1, keepdims=True)
    return (a / np.where(na > 0, na, 1.0)) @ (b / np.where(nb > 0, nb, 1.0)).T


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = ap.parse_args(argv)
    t_start = time.time()
    out: Path = args.out
    sim = out / "similarity"
    if sim.exists():
        shutil.rmtree(sim)
    ids, notes, poly = load_pieces()
    t_parse = time.time() - t_start
    f = features(notes)
    ids_arr = np.array(ids)
    print(f"{len(ids)} pieces ({int(poly.sum())} polyphonic) parsed in {t_parse:.0f} s; "
          f"features in {time.time() - t_start - t_parse:.0f} s", flush=True)
    vectors = {
        "chroma": f["pitch_class"],
        "rhythm": f["rhythmic_value"],
        "texture": np.hstack([f[k] for k in TEXTURE] + [f["pitch_mean"], f["pitch_sd"]]),
    }
    describe = {
        "chroma": ("12-bin pitch-class histogram, C at bin 0 (ARIA pitch_class, "
                   "rotate_pitch_class=False); raw cosine", "mixed folk songs + chorales"),
        "rhythm": ("11-bin rhythmic-value histogram (ARIA rhythmic_value); raw cosine",
                   "mixed folk songs + chorales"),
        "texture": ("texture vector (ARIA mean_polyphony, polyphony_std, voice_transitions, "
                    "voice_periodicity, pitch_range, note_density + pitch mean/SD), z-scored "
                    "with the training items' statistics; cosine (bipolar: monophonic vs "
                    "polyphonic queries)",
                    "balanced monophonic folk songs / polyphonic chorales"),
    }
    import aria_tda

    entries = []
    for fam, x in vectors.items():
        for seed in SEEDS:
            rng = np.random.default_rng(1000 * (list(vectors).index(fam) + 1) + seed)
            if fam == "texture":
                mono = rng.permutation(np.flatnonzero(~poly))
                pol = rng.permutation(np.flatnonzero(poly))
                q = np.concatenate([mono[:N_QUERY // 2], pol[:N_QUERY // 2]])
                tr = np.concatenate([mono[N_QUERY // 2:N_QUERY // 2 + N_TRAIN // 2],
                                     pol[N_QUERY // 2:N_QUERY // 2 + N_TRAIN // 2]])
                mu, sd = x[tr].mean(0), x[tr].std(0)
                sd = np.where(sd > 0, sd, 1.0)
                xt, xq = (x[tr] - mu) / sd, (x[q] - mu) / sd
            else:
                perm = rng.permutation(len(ids))
                q, tr = perm[:N_QUERY], perm[N_QUERY:N_QUERY + N_TRAIN]
                xt, xq = x[tr], x[q]
            s = cosine(xt, xq).astype(np.float32)
            path = sim / fam / f"split{seed}.npy"
            path.parent.mkdir(parents=True, exist_ok=True)
            np.save(path, s)
            (path.with_suffix(".items.json")).write_text(json.dumps(
                {"train": ids_arr[tr].tolist(), "queries": ids_arr[q].tolist(),
                 "train_polyphonic": poly[tr].astype(int).tolist(),
                 "query_polyphonic": poly[q].astype(int).tolist()}) + "\n", encoding="utf-8")
            entry = {
                "file": path.relative_to(out).as_posix(), "library": "aria_tda+numpy",
                "version": aria_tda.__version__,
                "writer_call": "np.save(cosine(features[train], features[queries]))",
                "model": "none (feature similarity retrieval)",
                "dataset": "music21 corpus: " + describe[fam][1],
                "method": f"cosine similarity: {describe[fam][0]}", "seed": seed,
                "family": f"similarity_{fam}", "configuration": f"similarity_{fam}",
                "shape": [int(s.shape[0]), int(s.shape[1])], "reader": {},
                "stored": "train x query",
                "label": "healthy", "failure": None,
                "criterion": "construction: nearest-neighbour retrieval, each query's top-K is "
                             "its own neighbourhood in the feature space",
                "split": "calibration" if seed % 2 == 0 else "heldout",
                "finite": bool(np.isfinite(s).all()),
                "sha256": hashlib.sha256(path.read_bytes()).hexdigest()}
            if fam == "texture":
                qp = poly[q]
                c = np.corrcoef(s.T.astype(np.float64))
                entry["query_polyphonic"] = qp.astype(int).tolist()
                entry["construction_check"] = {
                    "between_camp_column_corr_mean": float(c[np.ix_(~qp, qp)].mean())}
            entries.append(entry)
            print(f"  {entry['file']} {entry['shape']}", flush=True)
    part = out / "manifest.d" / "similarity.json"
    part.parent.mkdir(parents=True, exist_ok=True)
    part.write_text(json.dumps({
        "generator": "scripts/verdict_corpus/similarity.py", "python": sys.version.split()[0],
        "n_pieces": len(ids), "n_polyphonic": int(poly.sum()),
        "runtimes_s": {"parse": round(t_parse, 1), "total": round(time.time() - t_start, 1)},
        "files": entries}, indent=1) + "\n", encoding="utf-8")
    merge_manifest(out)
    print(f"wrote {len(entries)} matrices in {time.time() - t_start:.0f} s to {sim}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
