"""The distinctive reading on real music: random attribution reads as nothing, and a retrieval
built from one aspect's features names that aspect.

Tracks: Bach chorales of music21's corpus, written to MIDI and extracted into a symbolic feature
store (the shared helper of ``bench_null_calibration.py``; cached under ``--work``). The first
``--train`` are the training pool, the next ``--queries`` are the queries, whose own features
anchor the reading (``anchor="both"``) — or not (``anchor="group"``).

1. **Calibration.** Per seed, a score matrix that ranks at random: i.i.d. N(0, 1) track scores
   (``level=track``), or i.i.d. segment scores over 2–4 segments per track, z-scored and averaged
   per track by the library (``level=segment``, with the segment-matched null and reference
   groups). The queries are split at random into ``--sets`` sets (a metadata column). The rate
   at which queries, and sets, are named an aspect is the reading's false naming rate; its
   nominal level is ``alpha`` (0.05).
2. **One-aspect retrievals.** For each channel c with varying features, the score of track x for
   query q is the channel-c similarity of their features (mean over c's features of the
   pool-standardised similarity): a retrieval that follows c by construction. The paper's
   reading (the channel with the largest z-bar at K) and the distinctive reading's
   ``method_aspect`` should both name c; the share of queries with no distinctive aspect beyond
   it is reported.

Usage::

    .venv/bin/python benchmarks/bench_aspect_calibration.py               # 20 seeds
    .venv/bin/python benchmarks/bench_aspect_calibration.py --seeds 5

Prints the tables and writes JSON (``--out``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent


def _values(store: Any, rows: np.ndarray, names: list[str]) -> dict[str, Any]:
    return {n: np.asarray(store.vectors(n), dtype=np.float64).reshape(len(store), -1)[rows]
            for n in names}


def calibration(args: argparse.Namespace, prepared: Any, qvalues: dict[str, Any],
                n_queries: int, counts: np.ndarray) -> list[dict[str, Any]]:
    from aria_tda.homogeneity import null_distribution
    from aria_tda.homogeneity.distinctive import distinctive_reading
    from aria_tda.scores import aggregate

    n = counts.size
    rows = []
    for level in ("track", "segment"):
        seg_counts = counts if level == "segment" else None
        null = null_distribution(prepared, ks=[args.k], B=args.B, seed=0, progress=False,
                                 segment_counts=seg_counts, normalize="zscore")
        for anchor in ("both", "group"):
            named_q = total_q = named_s = total_s = 0
            for seed in range(args.seeds):
                rng = np.random.default_rng([seed, 17])
                if level == "track":
                    s = rng.standard_normal((n, n_queries))
                else:
                    tracks = np.arange(n).astype(str)
                    owner = np.repeat(tracks, counts)
                    seg = rng.standard_normal((owner.size, n_queries))
                    s = aggregate(seg, segments=owner, tracks=tracks,
                                  normalize="zscore").to_numpy()
                labels = rng.permutation(np.arange(n_queries) % args.sets)
                sets = {("set", str(v)): np.flatnonzero(labels == v) for v in range(args.sets)}
                r = distinctive_reading(
                    s, prepared, null, k=args.k, anchor=anchor, sets=sets, seed=seed,
                    query_values=qvalues if anchor == "both" else None,
                    segment_counts=seg_counts, normalize="zscore", n_boot=0, progress=False)
                named_q += int(np.count_nonzero(r.named[r.valid] >= 0))
                total_q += int(r.valid.sum())
                named_s += int(np.count_nonzero(r.set_named >= 0))
                total_s += int(r.set_named.size)
            rows.append({"level": level, "anchor": anchor, "queries": total_q,
                         "query_false_rate": named_q / total_q, "sets": total_s,
                         "set_false_rate": named_s / total_s if total_s else None})
            print(f"random {level:7s} anchor={anchor:5s}: queries named {named_q}/{total_q} = "
                  f"{named_q / total_q:.3f}; sets named {named_s}/{total_s} = "
                  f"{named_s / max(total_s, 1):.3f} (nominal {args.alpha})", flush=True)
    return rows


def retrievals(args: argparse.Namespace, prepared: Any, qvalues: dict[str, Any],
               n_queries: int) -> list[dict[str, Any]]:
    from aria_tda.homogeneity import homogeneity, null_distribution, top_k_groups
    from aria_tda.homogeneity.distinctive import distinctive_reading
    from aria_tda.similarity.cross import cross_similarity

    null = null_distribution(prepared, ks=[args.k], B=args.B, seed=0, progress=False)
    rows = []
    for channel, feats in prepared.items():
        parts = []
        for f in feats:
            sim = cross_similarity(f, qvalues[f.name])  # (T, N)
            sd = sim.std(axis=1, keepdims=True)
            if not np.all(sd > 0):
                continue
            parts.append((sim - sim.mean(axis=1, keepdims=True)) / sd)
        if not parts:
            print(f"retrieval by {channel}: its features do not vary here; left out")
            continue
        s = np.mean(parts, axis=0).T  # (N, T): track x for query q
        groups = top_k_groups(s, args.k)
        zbar = np.nanmean(homogeneity(groups, prepared, null, ks=[args.k], n_pairs=0).z[0],
                          axis=1)
        paper = list(prepared)[int(np.nanargmax(zbar))]
        for anchor in ("both", "group"):
            r = distinctive_reading(s, prepared, null, k=args.k, anchor=anchor,
                                    query_values=qvalues if anchor == "both" else None,
                                    n_boot=500, progress=False)
            rows.append({"retrieval": channel, "anchor": anchor, "paper_reading": paper,
                         "method_aspect": r.method_aspect,
                         "none_share": float(np.mean(r.named[r.valid] < 0)),
                         "named_share_of_channel": float(np.mean(
                             r.named[r.valid] == r.channels.index(channel)))})
            print(f"retrieval by {channel:8s} anchor={anchor:5s}: paper reading {paper:8s} "
                  f"method aspect {r.method_aspect:8s} queries with none "
                  f"{rows[-1]['none_share']:.2f}", flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--train", type=int, default=300)
    ap.add_argument("--queries", type=int, default=60)
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--sets", type=int, default=6)
    ap.add_argument("--k", type=int, default=20)
    ap.add_argument("--B", type=int, default=200)
    ap.add_argument("--alpha", type=float, default=0.05)
    ap.add_argument("--work", type=Path,
                    default=Path(tempfile.gettempdir()) / "aria-bench-null-cal")
    ap.add_argument("--out", type=Path,
                    default=HERE / "results" / "bench_aspect_calibration.json")
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    from aria_tda.similarity import prepare_channels
    from bench_null_calibration import chorale_store, segment_counts  # the sibling script

    t0 = time.perf_counter()
    store = chorale_store(args.work, args.train + args.queries)
    ids = np.asarray(store.track_ids)
    order = np.argsort(ids)  # a fixed split, independent of extraction order
    train, query = order[: args.train], order[args.train : args.train + args.queries]
    prepared = prepare_channels(store, rows=train)
    names = [f.name for fs in prepared.values() for f in fs]
    qvalues = _values(store, query, names)
    meta = store.metadata
    dur = np.asarray(meta["duration"] if meta is not None and "duration" in meta.columns
                     else np.full(len(store), 60.0), dtype=float)[train]
    counts, _ = segment_counts(dur, None)
    cal = calibration(args, prepared, qvalues, len(query), counts)
    ret = retrievals(args, prepared, qvalues, len(query))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({
        "benchmark": "bench_aspect_calibration", "train": len(train), "queries": len(query),
        "seeds": args.seeds, "sets": args.sets, "K": args.k, "B": args.B, "alpha": args.alpha,
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "seconds": round(time.perf_counter() - t0, 1),
        "calibration": cal, "retrievals": ret}, indent=2) + "\n")
    print(f"written: {args.out}")


if __name__ == "__main__":
    main()
