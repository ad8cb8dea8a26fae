"""The demo's offline encoders: training time and the version-retrieval sanity figure.

Usage::

    .venv/bin/python experiments/scripts/bench_encoders.py                # default preset corpus
    .venv/bin/python experiments/scripts/bench_encoders.py --preset quick --threads 2
    .venv/bin/python experiments/scripts/bench_encoders.py --seeds 0 1 2 --threads 2  # three
    corpora

Builds (or reuses, from the ARIA cache) the audio demo corpus of the preset, trains the three
offline encoders on its training split with :func:`aria_tda_experiments.audio.encoders.
train_demo_encoders` (held-out: the last version of every training work and the planted
versions; clews-style also trains on the other versions 4..9 of the training works, rendered
into the cache, ``--clews-versions``; its settings were chosen on a validation split by
``bench_encoders_select.py``, never on these queries), and reports per encoder the training time and
:func:`~aria_tda_experiments.audio.encoders.version_retrieval`: the share of held-out versions (plus
planted ones), never heard in training, whose nearest track of the demo's training split is a
version of their own work, with its chance level, the number of queries and the gallery size,
and the same on the never-seen test works (leave one out).
Writes ``experiments/results/bench_encoders.json``. Checkpoints are kept under the cache, so a
rerun with the same settings reuses them (``--retrain`` forces training again).

36 queries measure a retrieval rate to about ±5 points (one standard error at 90 %).
``--seeds`` repeats the whole benchmark on other corpus seeds — other works drawn from the
same collections, other renderings, splits and planted versions, encoders trained afresh on
each — and writes every seed's results and the pooled figures (hits over all queries) to
``experiments/results/bench_encoders_seeds.json``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import shutil
import time
from collections import Counter
from pathlib import Path
from typing import Any

from aria_tda.embed.encoders import load_encoder
from aria_tda_experiments.audio.corpus import build_audio_corpus
from aria_tda_experiments.audio.encoders import (
    CLEWS_VERSIONS,
    DEMO_ENCODERS,
    train_demo_encoders,
    version_retrieval,
)
from aria_tda_experiments.audio.presets import audio_preset
from aria_tda_experiments.encoders.checkpoint import read_checkpoint

OUT = Path(__file__).resolve().parents[1] / "results" / "bench_encoders.json"


def run_seed(args: argparse.Namespace, seed: int, cache: Path) -> dict[str, Any]:
    """Build the corpus of ``seed``, train (or reuse) its encoders, measure their retrieval."""
    p = audio_preset(args.preset)
    cfg = p.corpus_config(seed)
    t0 = time.perf_counter()
    corpus = build_audio_corpus(cache / "bench-audio-corpus" / f"{args.preset}-{cfg.digest()}",
                                config=cfg, n_jobs=args.threads)
    corpus_s = time.perf_counter() - t0
    enc_dir = cache / "bench-encoders" / f"{args.preset}-{cfg.digest()}-s{seed}"
    if args.retrain and enc_dir.exists():
        shutil.rmtree(enc_dir)
    t0 = time.perf_counter()
    paths = train_demo_encoders(corpus, enc_dir, seed=seed, threads=args.threads,
                                clews_versions=args.clews_versions or None)
    wall = time.perf_counter() - t0
    results: dict[str, Any] = {
        "preset": args.preset, "seed": seed, "threads": args.threads,
        "machine": f"{platform.machine()}, {os.cpu_count()} cores (shared)",
        "corpus": {**corpus.summary(), "seconds": round(corpus_s, 1)},
        "clews_versions": args.clews_versions or None,
        "train_wall_seconds": round(wall, 1), "encoders": {},
    }
    for name in DEMO_ENCODERS:
        header = read_checkpoint(paths[name])["header"]
        times = json.loads((enc_dir / f"{name}.times.json").read_text())
        enc = load_encoder(name, weights=paths[name])
        r = version_retrieval(enc, corpus)
        losses = header["training"]["losses"]
        k = max(1, len(losses) // 10)
        row = {
            "train_seconds": times["train_seconds"],
            "front_end_seconds": times["front_end_seconds"],
            "steps": header["training"]["steps"],
            "n_train_tracks": header["training"]["n_tracks"],
            "n_train_works": header["training"].get("n_works"),
            "train_versions": header["training"].get("versions"),
            "params": sum(v.numel() for v in enc.model.parameters()),  # type: ignore[attr-defined]
            "dim": enc.dim,
            "n_models": enc.info().get("n_models", 1),
            "loss_first_10pct": round(sum(losses[:k]) / k, 4),
            "loss_last_10pct": round(sum(losses[-k:]) / k, 4),
            "rank1": r["rank1"], "chance": r["chance"], "n_queries": r["n_queries"],
            "hits": sum(r["hits"].values()),
            "n_gallery": r["n_gallery"], "n_works": r["n_works"],
            "query_versions": r["query_versions"], "gallery_versions": r["gallery_versions"],
            "misses_by_family": r["misses_by_family"], "test_works": r.get("test_works"),
            "retrieval_seconds": r["seconds"],
        }
        if "masked_accuracy" in header["training"]:
            row["masked_accuracy"] = header["training"]["masked_accuracy"]
        results["encoders"][name] = row
        print(f"seed {seed}  {name:12s} train {row['train_seconds']:7.1f} s  rank-1 "
              f"{row['rank1']:.3f} ({row['hits']}/{row['n_queries']}; chance "
              f"{row['chance']:.3f}, {row['n_gallery']} tracks)  test works "
              f"{r.get('test_works')}", flush=True)
    return results


def pooled(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Per encoder: hits over every seed's queries, the rank-1 rate, its 95 % Wilson interval,
    the query-weighted chance, the misses by family, and the same pooling on the test works."""
    out: dict[str, Any] = {}
    for name in DEMO_ENCODERS:
        rows = [run["encoders"][name] for run in runs]
        hits, n = sum(r["hits"] for r in rows), sum(r["n_queries"] for r in rows)
        misses: Counter[str] = Counter()
        for r in rows:
            misses.update(r["misses_by_family"])
        tw = [r["test_works"] for r in rows if r.get("test_works")]
        t_hits = sum(round(t["rank1"] * t["n_queries"]) for t in tw)
        t_n = sum(t["n_queries"] for t in tw)
        out[name] = {
            "seeds": [run["seed"] for run in runs], "hits": hits, "n_queries": n,
            "rank1": round(hits / n, 4), "rank1_wilson95": _wilson(hits, n),
            "per_seed": [f"{r['hits']}/{r['n_queries']}" for r in rows],
            "chance": round(sum(r["chance"] * r["n_queries"] for r in rows) / n, 4),
            "misses_by_family": dict(sorted(misses.items())),
            "test_works": {"hits": t_hits, "n_queries": t_n,
                           "rank1": round(t_hits / t_n, 4) if t_n else None},
        }
    return out


def _wilson(k: int, n: int, z: float = 1.959964) -> list[float]:
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return [round(centre - half, 4), round(centre + half, 4)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="default", choices=("default", "quick", "tiny"))
    ap.add_argument("--seed", type=int, default=0, help="corpus seed (default 0, the demo's)")
    ap.add_argument("--seeds", type=int, nargs="+", default=None,
                    help="several corpus seeds: every seed's results and the pooled figures "
                         "(default out: bench_encoders_seeds.json)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--retrain", action="store_true")
    ap.add_argument("--clews-versions", type=int, default=CLEWS_VERSIONS,
                    help="versions per training work for clews-style (0: the demo's only)")
    ap.add_argument("--out", type=Path, default=None,
                    help="results file (default bench_encoders.json, with --seeds "
                         "bench_encoders_seeds.json, in experiments/results)")
    args = ap.parse_args()

    cache = Path(os.environ.get("ARIA_CACHE_DIR") or Path.home() / ".cache" / "aria")
    if args.seeds:
        runs = [run_seed(args, s, cache) for s in args.seeds]
        results: dict[str, Any] = {"preset": args.preset, "seeds": args.seeds,
                                   "pooled": pooled(runs), "runs": runs}
        for name, row in results["pooled"].items():
            print(f"pooled {name:12s} rank-1 {row['rank1']:.3f} ({row['hits']}/"
                  f"{row['n_queries']}, 95 % {row['rank1_wilson95']}; per seed "
                  f"{', '.join(row['per_seed'])}; chance {row['chance']:.3f})", flush=True)
        out = args.out or OUT.with_name("bench_encoders_seeds.json")
    else:
        results = run_seed(args, args.seed, cache)
        out = args.out or OUT
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
