"""Cost of the distinctive reading beside the study's homogeneity, in the same run.

A synthetic study with the symbolic channel layout (15 features in 5 channels: the extended
feature set's dimensions, one chord-free store), ``--settings`` score matrices of N tracks x
T queries (a shared rank-8 structure, per-query noise and a few hubs), and — for the query
anchor — the queries' own features. For each configuration it times, in one process:

- **homogeneity**: what a study spends on the paper's homogeneity for those settings — the null
  once (B groups per K of the sweep), then per setting the top-K groups and
  :func:`aria_tda.homogeneity.homogeneity` over the sweep (evidence pairs at K_report);
- **distinctive**: :func:`aria_tda.homogeneity.distinctive.distinctive_reading` per setting at
  K_report, anchored on the group (no query features) and on the query and the group, with and
  without query sets (one metadata column of ``--sets`` values). The query anchor's scores
  are computed once for all settings (one :class:`~aria_tda.homogeneity.anchor.AnchorCache`,
  as the study runner keeps one per process).

The target is **distinctive / homogeneity <= 1.25** (the reading adds at most 25 %).
Configurations: ``planted`` (the planted demo's default size: 1,495 tracks, 72 queries,
K = 20..200, K_aspects = 40), ``study`` (5,000 tracks, 600 queries, the paper's K sweep
20..500, K_report = 300 and the reading's default K_aspects = 100). Every time is the best of
``--repeat``, after one untimed warm-up (imports, compiled kernels).

Usage::

    .venv/bin/python benchmarks/bench_distinctive.py
    .venv/bin/python benchmarks/bench_distinctive.py --configs study --repeat 1

Prints a table and writes JSON (``--out``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
#: (channel, feature, dim) of the symbolic extended feature set
LAYOUT = (("melody", "melodic_interval", 25), ("melody", "interval_transitions", 49),
          ("harmony", "pitch_class", 12), ("harmony", "vertical_interval", 12),
          ("rhythm", "note_density", 1), ("rhythm", "mean_rhythmic_value", 1),
          ("rhythm", "rhythmic_value", 11), ("dynamic", "velocity_change", 1),
          ("dynamic", "velocity_std", 1), ("dynamic", "dynamic_range", 1),
          ("texture", "mean_polyphony", 1), ("texture", "polyphony_std", 1),
          ("texture", "pitch_range", 1), ("texture", "voice_transitions", 16),
          ("texture", "voice_periodicity", 8))
CONFIGS = {
    "planted": {"n": 1495, "t": 72, "ks": (20, 32, 40, 50, 100, 200), "k_report": 40, "k": 40},
    "study": {"n": 5000, "t": 600, "ks": (20, 50, 100, 200, 300, 400, 500), "k_report": 300,
              "k": 100},
}


def world(n: int, t: int, settings: int, seed: int) -> dict[str, Any]:
    from aria_tda.features.registry import FeatureSpec
    from aria_tda.similarity import prepare_feature

    rng = np.random.default_rng(seed)
    prepared: dict[str, list[Any]] = {}
    values = {}
    for channel, name, dim in LAYOUT:
        spec = FeatureSpec(name, channel, "symbolic", "vector", dim, "std_euclidean", "symbolic",
                           "bench")
        prepared.setdefault(channel, []).append(prepare_feature(spec, rng.random((n, dim))))
        values[name] = rng.random((t, dim))
    basis = rng.standard_normal((n, 8))
    scores = []
    for _ in range(settings):
        s = basis @ rng.standard_normal((8, t)) + rng.standard_normal((n, t))
        s[rng.choice(n, 5, replace=False)] += 4.0  # hubs
        scores.append(s)
    return {"prepared": prepared, "values": values, "scores": scores}


def homogeneity_seconds(w: dict[str, Any], ks: tuple[int, ...], k_report: int, b: int) -> float:
    from aria_tda.homogeneity import homogeneity, null_distribution, top_k_groups

    t0 = time.perf_counter()
    null = null_distribution(w["prepared"], ks=list(ks), B=b, seed=0, progress=False)
    for s in w["scores"]:
        groups = top_k_groups(s, max(ks))
        homogeneity(groups, w["prepared"], null, ks=list(ks), evidence_k=k_report, n_pairs=10,
                    progress=False)
    return time.perf_counter() - t0


def distinctive_seconds(w: dict[str, Any], ks: tuple[int, ...], k: int, b: int, *,
                        anchor: str, n_sets: int) -> float:
    from aria_tda.homogeneity import null_distribution
    from aria_tda.homogeneity.anchor import AnchorCache
    from aria_tda.homogeneity.distinctive import distinctive_reading

    null = null_distribution(w["prepared"], ks=list(ks), B=b, seed=0, progress=False)
    t = w["scores"][0].shape[1]
    sets = None
    if n_sets:
        labels = np.arange(t) % n_sets
        sets = {("group", str(v)): np.flatnonzero(labels == v) for v in range(n_sets)}
    t0 = time.perf_counter()
    cache = AnchorCache()  # one per study, as the study runner keeps it
    for s in w["scores"]:
        distinctive_reading(s, w["prepared"], null, k=k,
                            query_values=w["values"] if anchor == "both" else None,
                            anchor=anchor, sets=sets, n_boot=1000, progress=False,
                            anchor_cache=cache)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--configs", nargs="+", default=list(CONFIGS), choices=list(CONFIGS))
    ap.add_argument("--settings", type=int, default=6)
    ap.add_argument("--sets", type=int, default=6, help="values of the metadata column")
    ap.add_argument("--B", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=HERE / "results" / "bench_distinctive.json")
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    rows = []
    for name in args.configs:
        cfg = CONFIGS[name]
        w = world(cfg["n"], cfg["t"], args.settings, args.seed)
        small = {**w, "scores": w["scores"][:1]}  # warm-up: imports and compiled kernels
        homogeneity_seconds(small, cfg["ks"], cfg["k_report"], args.B)
        distinctive_seconds(small, cfg["ks"], cfg["k"], args.B, anchor="both", n_sets=args.sets)
        base = min(homogeneity_seconds(w, cfg["ks"], cfg["k_report"], args.B)
                   for _ in range(args.repeat))
        for anchor in ("group", "both"):
            for n_sets in (0, args.sets):
                sec = min(distinctive_seconds(w, cfg["ks"], cfg["k"], args.B, anchor=anchor,
                                              n_sets=n_sets) for _ in range(args.repeat))
                rows.append({"config": name, **{k: v for k, v in cfg.items() if k != "ks"},
                             "ks": list(cfg["ks"]), "settings": args.settings,
                             "anchor": anchor, "sets": n_sets, "homogeneity_s": round(base, 3),
                             "distinctive_s": round(sec, 3),
                             "ratio": round((base + sec) / base, 3)})
                r = rows[-1]
                print(f"{name:8s} anchor={anchor:5s} sets={n_sets:2d}  homogeneity "
                      f"{base:7.2f} s  distinctive {sec:7.2f} s  (homogeneity + distinctive) / "
                      f"homogeneity = {r['ratio']:.3f}", flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({
        "benchmark": "bench_distinctive", "target": "ratio <= 1.25",
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "B": args.B, "repeat": args.repeat, "rows": rows}, indent=2) + "\n")
    print(f"written: {args.out}")


if __name__ == "__main__":
    main()
