"""Symbolic feature extraction throughput: batch extractor vs the loop reference, one core.

Usage::

    .venv/bin/python benchmarks/bench_symbolic.py [--n-segments 4000] [--notes 64] [--seconds 8]

Target (issue 3): >= 2,000 segments/s per core for the batch extractor
(:func:`aria_tda.features.symbolic.symbolic_features_batch`), on segments the size of the paper's
dattri/MAESTRO token blocks (a 256-token performance-event window holds ~64 notes over a few
seconds; ``--notes``/``--seconds`` set the size).

Workloads, all measured in this run on ONE thread (BLAS limited to 1; numba kernels are
single-threaded):

- ``synthetic``: ``--n-segments`` random piano-like segments (``--notes`` notes, uniform onsets
  on a 10 ms grid over ``--seconds`` s, exponential durations of mean 0.4 s → polyphony ≈ 3),
  given as ``(n, 4)`` arrays — what a model's decoded segments look like — timed end to end
  (``make_batch`` + features) and features only, for both forms;
- ``sizes``: the same at 32 / 128 / 256 notes per segment;
- ``chorales``: real music — ``--chorales`` Bach chorales from music21's corpus, parsed with
  mido and cut into 10 s windows: all windows in one batch (``segment_corpus``, end to end
  = segmenting + features) and one batch per file ("features" column, the CLI's path);
  reading the files is reported separately;
- ``reference``: the loop reference on a subset, for the speed-up ratio (and a check that the
  batch path reproduces it).

Prints a table and, with ``--json``, one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np


def synthetic(
    rng: np.random.Generator, n_seg: int, n_notes: int, seconds: float
) -> list[np.ndarray]:
    segs = []
    for _ in range(n_seg):
        start = np.sort(np.round(rng.uniform(0, seconds, n_notes), 2))
        dur = np.round(rng.exponential(0.4, n_notes), 2) + 0.01
        segs.append(
            np.stack(
                [
                    start,
                    start + dur,
                    rng.integers(21, 109, n_notes),
                    rng.integers(20, 128, n_notes),
                ],
                axis=1,
            )
        )
    return segs


def best_of(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--n-segments", type=int, default=4000)
    ap.add_argument("--notes", type=int, default=64)
    ap.add_argument("--seconds", type=float, default=8.0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--chorales", type=int, default=40)
    ap.add_argument("--n-reference", type=int, default=100)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    from threadpoolctl import threadpool_limits

    from aria_tda.features.symbolic import (
        batch_features,
        make_batch,
        reference_features,
        segment_corpus,
        segment_notes,
        symbolic_features_batch,
    )

    rng = np.random.default_rng(0)
    results: dict[str, dict[str, float]] = {}
    with threadpool_limits(1):
        symbolic_features_batch(synthetic(rng, 4, 8, 2.0))  # compile / load the numba kernel
        segs = synthetic(rng, args.n_segments, args.notes, args.seconds)
        durs = np.full(len(segs), args.seconds)
        batch = make_batch(segs, durations=durs)
        for form in ("paper", "jsymbolic"):
            t_all = best_of(
                lambda form=form: symbolic_features_batch(segs, durations=durs, form=form),
                args.repeat,
            )
            t_feat = best_of(lambda form=form: batch_features(batch, form=form), args.repeat)
            results[f"synthetic/{form}"] = {
                "segments": len(segs),
                "notes_per_segment": args.notes,
                "seconds_per_segment": args.seconds,
                "seg_per_s_end_to_end": len(segs) / t_all,
                "seg_per_s_features_only": len(segs) / t_feat,
            }
        for n_notes in (32, 128, 256):
            s2 = synthetic(
                rng, max(500, args.n_segments // 4), n_notes, args.seconds * n_notes / args.notes
            )
            d2 = np.full(len(s2), args.seconds * n_notes / args.notes)
            t = best_of(lambda s2=s2, d2=d2: symbolic_features_batch(s2, durations=d2), args.repeat)
            results[f"sizes/{n_notes}-notes"] = {
                "segments": len(s2),
                "notes_per_segment": n_notes,
                "seconds_per_segment": float(d2[0]),
                "seg_per_s_end_to_end": len(s2) / t,
            }

        # loop reference on a subset (same segments) and a correctness check
        sub = segs[: args.n_reference]
        t_ref = best_of(lambda: [reference_features(s, duration=args.seconds) for s in sub], 1)
        fast = symbolic_features_batch(sub, durations=durs[: len(sub)])
        ref0 = reference_features(sub[0], duration=args.seconds)
        assert all(np.allclose(fast[k][0], ref0[k], rtol=1e-12, atol=1e-12) for k in ref0)
        results["reference/paper"] = {
            "segments": len(sub),
            "seg_per_s_end_to_end": len(sub) / t_ref,
        }
        results["reference/paper"]["batch_speedup"] = (
            results["synthetic/paper"]["seg_per_s_end_to_end"]
            / results["reference/paper"]["seg_per_s_end_to_end"]
        )

        try:
            from music21 import corpus

            from aria_tda.features.midi import read_midi

            tmp = Path(tempfile.mkdtemp(prefix="aria-bench-sym-"))
            paths = []
            for i, name in enumerate(corpus.getComposer("bach")):
                if len(paths) >= args.chorales:
                    break
                if not str(name).endswith(".mxl"):
                    continue
                try:
                    p = tmp / f"{i}.mid"
                    corpus.parse(name).write("midi", fp=str(p))
                    paths.append(p)
                except Exception:  # some corpus works fail to expand repeats
                    continue
            t0 = time.perf_counter()
            notes = [read_midi(p).notes() for p in paths]
            t_parse = time.perf_counter() - t0
            batches = [segment_notes(n, seconds=10.0) for n in notes]
            n_windows = sum(b.n_segments for b in batches)
            t_seg = best_of(lambda: [batch_features(b) for b in batches], args.repeat)
            t_one = best_of(
                lambda: batch_features(segment_corpus(notes, seconds=10.0)[0]), args.repeat
            )
            results["chorales/10s-windows"] = {
                "files": len(paths),
                "segments": n_windows,
                "notes_per_segment": float(
                    np.mean([b.onset.sum() / b.n_segments for b in batches])
                ),
                "seg_per_s_end_to_end": n_windows / t_one,
                "seg_per_s_features_only": n_windows / t_seg,
                "files_per_s_parse_mido": len(paths) / t_parse,
            }
            for p in paths:
                os.unlink(p)
            tmp.rmdir()
        except ImportError:
            pass

    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(
        f"{'workload':<24} {'segments':>8} {'notes/seg':>9} "
        f"{'seg/s end-to-end':>17} {'seg/s features':>15}  other"
    )
    for k, r in results.items():
        e2e = r.get("seg_per_s_end_to_end")
        fo = r.get("seg_per_s_features_only")
        other = ", ".join(
            f"{a}={b:.3g}"
            for a, b in r.items()
            if a in ("batch_speedup", "files_per_s_parse_mido", "seconds_per_segment")
        )
        print(
            f"{k:<24} {r.get('segments', 0):>8} {r.get('notes_per_segment', float('nan')):>9.1f} "
            f"{(f'{e2e:,.0f}' if e2e else '-'):>17} {(f'{fo:,.0f}' if fo else '-'):>15}  {other}"
        )


if __name__ == "__main__":
    main()
