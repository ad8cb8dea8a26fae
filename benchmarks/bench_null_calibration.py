"""Calibration of z-bar on random segment scores with unequal segment counts: uniform vs
segment-matched null.

Random scores must read as nothing, whatever the segment map. Each cell is one (seed, K,
channel): i.i.d. N(0, 1) segment scores for every segment of real tracks (2-4 segments each),
per-query normalised and averaged per track by the library (:func:`aria_tda.scores.aggregate`,
Eq. track-agg), then top-K groups, homogeneity against a null and the summary's z-bar interval
(queries and null groups resampled jointly). The true z-bar is 0 in every channel; the table
gives how often the 95 % interval covers it, with the paper's uniform null
(``null_distribution()``) and with the segment-matched null
(``null_distribution(segment_counts=..., normalize=...)``).

Tracks: ``--tracks`` Bach chorales of music21's corpus, written to MIDI and extracted into a
symbolic feature store (real features of real music; cached under ``--work``, so a rerun
skips it). Segment map: each chorale's duration cut into windows of ``--window`` seconds
(default: half the first quartile of the durations), clipped to 2-4 segments — the
fixed-length segmentation of the paper's audio stage, so segment count goes with duration as
in real data. A channel whose features are constant over the corpus (music21 writes one
velocity, so ``dynamic`` is) has no z and is left out of the coverage.

Usage::

    .venv/bin/python benchmarks/bench_null_calibration.py                 # 20 seeds, both nulls
    .venv/bin/python benchmarks/bench_null_calibration.py --seeds 5 --normalize zscore

Prints the coverage table and writes JSON (``--out``).
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


def chorale_store(work: Path, n_tracks: int) -> Any:
    """A symbolic feature store of ``n_tracks`` Bach chorales (music21 corpus), built once."""
    from music21 import corpus

    from aria_tda.features.extract import extract_to_store
    from aria_tda.features.store import FeatureStore

    store = work / f"chorales-{n_tracks}"
    midi = work / f"midi-{n_tracks}"
    midi.mkdir(parents=True, exist_ok=True)
    written = sorted(midi.glob("*.mid"))
    for name in [] if len(written) >= n_tracks else corpus.getComposer("bach"):
        if len(written) >= n_tracks:
            break
        if not str(name).endswith(".mxl"):
            continue
        target = midi / f"{Path(str(name)).stem}.mid"
        if target.exists():
            continue
        try:
            corpus.parse(name).write("midi", fp=str(target))
        except Exception:  # a few corpus works fail to expand their repeats
            target.unlink(missing_ok=True)
            continue
        written.append(target)
    # resumable: a store already holding these files is only opened
    extract_to_store(midi, store, modality="symbolic", workers=min(2, os.cpu_count() or 1),
                     progress=False)
    return FeatureStore.open(store)


def segment_counts(durations: np.ndarray, window: float | None) -> tuple[np.ndarray, float]:
    """Windows of ``window`` seconds per track, clipped to 2..4 (default window: half the
    first quartile of the durations, so the shortest quarter of the tracks has 2 segments)."""
    w = float(np.quantile(durations, 0.25) / 2) if window is None else window
    return np.clip(np.ceil(durations / w), 2, 4).astype(np.int64), w


def one_seed(seed: int, prepared: Any, counts: np.ndarray, track_ids: np.ndarray, *,
             normalize: str, n_queries: int, ks: tuple[int, ...], B: int,
             n_boot: int) -> dict[str, Any]:
    """Coverage of 0 and z-bar per (K, channel) for both nulls on one random score matrix."""
    from aria_tda.homogeneity import run_homogeneity
    from aria_tda.scores import aggregate

    rng = np.random.default_rng(seed)
    seg_tracks = np.repeat(track_ids, counts)
    s_seg = rng.standard_normal((seg_tracks.size, n_queries))
    s_track = aggregate(s_seg, segments=seg_tracks, tracks=track_ids,
                        normalize=normalize).to_numpy()
    out: dict[str, Any] = {}
    for null, seg in (("uniform", None), ("matched", counts)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res, _, groups = run_homogeneity(s_track, prepared, ks=ks, B=B, seed=seed,
                                             n_pairs=0, progress=False, segment_counts=seg,
                                             normalize=normalize)
        sm = res.summary(n_boot=n_boot, seed=seed)
        shape = (len(ks), len(res.channels))
        lo, hi = sm.zbar_lo.to_numpy(), sm.zbar_hi.to_numpy()
        out[null] = {  # cover: 1 / 0, NaN where the channel has no informative feature
            "cover": np.where(np.isfinite(lo) & np.isfinite(hi), (lo <= 0) & (hi >= 0),
                              np.nan).reshape(shape),
            "zbar": sm.zbar.to_numpy().reshape(shape),
        }
    out["channels"] = res.channels
    k10 = groups[:, : min(10, groups.shape[1])]
    out["share_top10"] = np.bincount(counts[k10].ravel(), minlength=5)[2:] / k10.size
    return out


def _json(values: np.ndarray) -> list[float | None]:
    return [None if not np.isfinite(v) else float(v) for v in values]


def run(args: argparse.Namespace) -> dict[str, Any]:
    from aria_tda.homogeneity import feature_pool
    from aria_tda.similarity import prepare_channels

    t0 = time.perf_counter()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    store = chorale_store(work, args.tracks)
    t_store = time.perf_counter() - t0
    meta = store.metadata.loc[store.track_ids]  # indexed by track id
    counts, window = segment_counts(meta["duration"].to_numpy(float), args.window)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prepared = prepare_channels(store)
        pool = feature_pool(prepared)
    share_pool = np.bincount(counts[pool], minlength=5)[2:] / pool.sum()
    rec: dict[str, Any] = {
        "tracks": len(store), "pool": int(pool.sum()), "window_seconds": window,
        "segments": int(counts.sum()), "share_pool_2_3_4": share_pool.tolist(),
        "queries": args.queries, "ks": list(args.ks), "B": args.B, "n_boot": args.n_boot,
        "seeds": args.seeds, "level": 0.95, "store_seconds": t_store,
        "machine": platform.machine(), "cpus": os.cpu_count(), "results": {},
    }
    print(f"{len(store)} chorales ({int(pool.sum())} with every feature), "
          f"{int(counts.sum())} segments of {window:.1f} s; segment counts 2/3/4 = "
          f"{np.bincount(counts, minlength=5)[2:].tolist()}")
    for normalize in args.normalize:
        t1 = time.perf_counter()
        runs = [one_seed(seed, prepared, counts, store.track_ids, normalize=normalize,
                         n_queries=args.queries, ks=tuple(args.ks), B=args.B,
                         n_boot=args.n_boot) for seed in range(args.seeds)]
        channels = list(runs[0]["channels"])
        res: dict[str, Any] = {"channels": channels, "seconds": time.perf_counter() - t1,
                               "share_top10_2_3_4": np.mean(
                                   [r["share_top10"] for r in runs], axis=0).tolist()}
        for null in ("uniform", "matched"):
            cover = np.stack([r[null]["cover"] for r in runs])  # (seeds, K, channels)
            zbar = np.stack([r[null]["zbar"] for r in runs])
            with warnings.catch_warnings():  # a channel without informative features: null
                warnings.simplefilter("ignore", RuntimeWarning)
                by_c = np.nanmean(cover, axis=(0, 1))
                by_kc = np.nanmean(cover, axis=0)
                z_c = np.nanmean(zbar, axis=(0, 1))
            res[null] = {
                "coverage": float(np.nanmean(cover)),
                "coverage_by_channel": dict(zip(channels, _json(by_c), strict=True)),
                "coverage_by_k_channel": {str(k): dict(zip(channels, _json(by_kc[a]),
                                                           strict=True))
                                          for a, k in enumerate(args.ks)},
                "mean_zbar_by_channel": dict(zip(channels, _json(z_c), strict=True)),
                "cells": int(np.isfinite(cover).sum()),
            }
        rec["results"][normalize] = res
        print(f"\nnormalize = {normalize}: {args.seeds} seeds x {len(args.ks)} K; 2/3/4-segment "
              f"share of a top-10 {np.round(res['share_top10_2_3_4'], 3).tolist()} "
              f"(pool {np.round(share_pool, 3).tolist()}); {res['seconds']:.0f} s")
        print(f"{'channel':<10} {'uniform cover':>14} {'mean zbar':>10}   "
              f"{'matched cover':>14} {'mean zbar':>10}")
        for c in channels:
            cells = [res[n][key][c] for n in ("uniform", "matched")
                     for key in ("coverage_by_channel", "mean_zbar_by_channel")]
            print(f"{c:<10} " + "   ".join(
                f"{_fmt(cells[i], 14)} {_fmt(cells[i + 1], 10)}" for i in (0, 2)))
        print(f"{'all':<10} {res['uniform']['coverage']:>14.3f} {'':>10}   "
              f"{res['matched']['coverage']:>14.3f}   "
              f"({res['matched']['cells']} cells; channels without an informative feature "
              "are left out)")
    return rec


def _fmt(value: float | None, width: int) -> str:
    return f"{'n/a':>{width}}" if value is None else f"{value:>{width}.3f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tracks", type=int, default=300, help="Bach chorales (default 300)")
    ap.add_argument("--window", type=float, default=None,
                    help="segment length in seconds (default: a third of the median duration)")
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--ks", type=int, nargs="+", default=[5, 10, 20])
    ap.add_argument("--B", type=int, default=200)
    ap.add_argument("--n-boot", type=int, default=500)
    ap.add_argument("--normalize", nargs="+", choices=("zscore", "rank"),
                    default=["zscore", "rank"])
    ap.add_argument("--work", default=str(Path(tempfile.gettempdir()) / "aria-bench-null-cal"),
                    help="where the chorales' MIDI files and feature store are kept")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "bench_null_calibration.json")
    args = ap.parse_args()
    rec = run(args)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(rec, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
