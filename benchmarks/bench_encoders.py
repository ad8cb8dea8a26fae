"""The demo's offline encoders: training time and the version-retrieval sanity figure.

Usage::

    .venv/bin/python benchmarks/bench_encoders.py                # default preset corpus
    .venv/bin/python benchmarks/bench_encoders.py --preset quick --threads 2

Builds (or reuses, from the ARIA cache) the audio demo corpus of the preset, trains the three
offline encoders on its training split with :func:`aria.bench.audio.encoders.
train_demo_encoders` (held-out: the last version of every training work and the planted
versions; clews-style also trains on the other versions 4..9 of the training works, rendered
into the cache, ``--clews-versions``; its settings were chosen on a validation split by
``bench_encoders_select.py``, never on these queries), and reports per encoder the training time and
:func:`~aria.bench.audio.encoders.version_retrieval`: the share of held-out versions (plus
planted ones), never heard in training, whose nearest track of the demo's training split is a
version of their own work, with its chance level, the number of queries and the gallery size,
and the same on the never-seen test works (leave one out).
Writes ``benchmarks/results/bench_encoders.json``. Checkpoints are kept under the cache, so a
rerun with the same settings reuses them (``--retrain`` forces training again).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import time
from pathlib import Path

from aria.bench.audio.corpus import build_audio_corpus
from aria.bench.audio.encoders import (
    CLEWS_VERSIONS,
    DEMO_ENCODERS,
    train_demo_encoders,
    version_retrieval,
)
from aria.bench.audio.presets import audio_preset
from aria.encoders import load_encoder
from aria.encoders.offline.checkpoint import read_checkpoint

OUT = Path(__file__).resolve().parent / "results" / "bench_encoders.json"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="default", choices=("default", "quick", "tiny"))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--retrain", action="store_true")
    ap.add_argument("--clews-versions", type=int, default=CLEWS_VERSIONS,
                    help="versions per training work for clews-style (0: the demo's only)")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()

    cache = Path(os.environ.get("ARIA_CACHE_DIR") or Path.home() / ".cache" / "aria")
    p = audio_preset(args.preset)
    cfg = p.corpus_config(args.seed)
    t0 = time.perf_counter()
    corpus = build_audio_corpus(cache / "bench-audio-corpus" / f"{args.preset}-{cfg.digest()}",
                                config=cfg, n_jobs=args.threads)
    corpus_s = time.perf_counter() - t0
    enc_dir = cache / "bench-encoders" / f"{args.preset}-{cfg.digest()}-s{args.seed}"
    if args.retrain and enc_dir.exists():
        shutil.rmtree(enc_dir)
    t0 = time.perf_counter()
    paths = train_demo_encoders(corpus, enc_dir, seed=args.seed, threads=args.threads,
                                clews_versions=args.clews_versions or None)
    wall = time.perf_counter() - t0
    results: dict[str, object] = {
        "preset": args.preset, "seed": args.seed, "threads": args.threads,
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
            "n_gallery": r["n_gallery"], "n_works": r["n_works"],
            "query_versions": r["query_versions"], "gallery_versions": r["gallery_versions"],
            "misses_by_family": r["misses_by_family"], "test_works": r.get("test_works"),
            "retrieval_seconds": r["seconds"],
        }
        if "masked_accuracy" in header["training"]:
            row["masked_accuracy"] = header["training"]["masked_accuracy"]
        results["encoders"][name] = row  # type: ignore[index]
        print(f"{name:12s} train {row['train_seconds']:7.1f} s  rank-1 {row['rank1']:.3f} "
              f"(chance {row['chance']:.3f}, {row['n_queries']} queries / "
              f"{row['n_gallery']} tracks)  test works {r.get('test_works')}", flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
