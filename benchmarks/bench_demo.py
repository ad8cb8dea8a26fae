"""Wall time of ``aria-tda demo`` per stage, quick and default, from an empty folder and cache.

Runs each preset in a fresh working folder with a fresh ``ARIA_CACHE_DIR`` (so music21
conversions and, for audio, numba's first compile are included, as on a fresh machine), in a
subprocess of the installed ``aria-tda`` command, and prints the per-stage wall times recorded in
``results.json`` next to the targets on 2 CPU cores: symbolic quick ≤ 3 min, default ≤ 15 min;
audio quick ≤ 5 min, default ≤ 25 min; symbolic ``--presets paper`` ≤ 2 h.

    .venv/bin/python benchmarks/bench_demo.py [--experiment symbolic|audio]
        [--presets quick default] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_S = {
    "symbolic": {"quick": 180, "default": 900, "paper": 7200, "tiny": 60},
    "audio": {"quick": 300, "default": 1500, "tiny": 120},
}


def run(experiment: str, preset: str, work: Path) -> dict:
    env = dict(os.environ, ARIA_CACHE_DIR=str(work / "cache"), ARIA_PROGRESS="0")
    env.pop("NUMBA_CACHE_DIR", None)
    aria = Path(sys.executable).with_name("aria")
    t0 = time.perf_counter()
    proc = subprocess.run(
        [str(aria), "demo", experiment, "--preset", preset, "--out", str(work / "demo"),
         "--quiet"],
        env=env,
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(
            f"aria-tda demo {experiment} --preset {preset} failed:\n{proc.stderr[-2000:]}"
        )
    meta = json.loads((work / "demo" / "results" / "results.json").read_text())
    demo = meta["demo"]
    return {
        "experiment": experiment,
        "preset": preset,
        "wall_s": round(wall, 1),
        "stages_s": demo["stage_seconds"],
        "n_train": demo.get("n_train", demo.get("segments")),
        "n_queries": demo["n_queries"],
        "target_s": TARGET_S[experiment][preset],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--experiment", default="symbolic", choices=sorted(TARGET_S))
    ap.add_argument(
        "--presets", nargs="+", default=["quick", "default"],
        choices=["tiny", "quick", "default", "paper"],
    )
    ap.add_argument("--json", default=None, help="also write the figures here")
    args = ap.parse_args()
    rows = []
    for preset in args.presets:
        with tempfile.TemporaryDirectory(prefix=f"aria-bench-demo-{preset}-") as d:
            rows.append(run(args.experiment, preset, Path(d)))
        r = rows[-1]
        stages = ", ".join(f"{k} {v:.0f}" for k, v in r["stages_s"].items() if k != "total")
        ok = "meets" if r["wall_s"] <= r["target_s"] else "MISSES"
        print(
            f"{args.experiment} {preset:>8}: {r['wall_s']:7.1f} s wall "
            f"({ok} the {r['target_s']} s target); "
            f"n_train={r['n_train']} n_queries={r['n_queries']}; stages (s): {stages}",
            flush=True,
        )
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
