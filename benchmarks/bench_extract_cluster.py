"""Feature-extraction throughput: in-process vs local worker processes vs a Dask LocalCluster.

The same ``--n-files`` synthetic files are extracted into a fresh store by
:func:`aria_tda.features.extract.extract_to_store` three ways:

- ``workers1``: ``workers=1`` (in this process);
- ``workers2``: ``workers=2`` (:mod:`aria_tda.features.process_pool`, spawned processes; their
  start-up is inside the timing, as in ``aria-tda features --workers 2``);
- ``dask_local2``: ``client=`` a LocalCluster of 2 single-threaded worker processes
  (``aria-tda features --scheduler local:2``); the cluster's start-up is timed separately
  (``cluster_start_s``) and ``wall_with_start_s`` adds it.

Then all three stores are compared (same track order, identical feature values, metadata and
errors): ``stores_equal``. Before timing, a few files are extracted once so numba's cache is
warm for every configuration.

Inputs (written to a temporary folder, seeded):

- ``--modality symbolic`` (default): type-1 MIDI files of ``--notes`` piano-like notes
  (uniform onsets over ``--seconds`` s, exponential durations of mean 0.4 s);
- ``--modality audio``: ``--seconds`` s of 22.05 kHz mono audio (a few decaying partials
  with noise), written with soundfile.

Usage::

    .venv/bin/python benchmarks/bench_extract_cluster.py --n-files 120 --notes 1500

Writes JSON (``--out``, default ``benchmarks/results/bench_extract_cluster.json``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent


def write_midi(path: Path, rng: np.random.Generator, notes: int, seconds: float) -> None:
    import mido

    tpq, mpq = 480, 500_000  # 120 bpm: 960 ticks per second
    per_s = tpq * 1e6 / mpq
    onsets = np.sort(rng.uniform(0.0, seconds, notes))
    durs = rng.exponential(0.4, notes) + 0.05
    pitches = rng.integers(36, 96, notes)
    vels = rng.integers(40, 120, notes)
    events = []
    for t, d, p, v in zip(onsets, durs, pitches, vels, strict=True):
        events.append((int(t * per_s), 1, mido.Message("note_on", note=int(p), velocity=int(v))))
        events.append((int((t + d) * per_s), 0, mido.Message("note_off", note=int(p))))
    events.sort(key=lambda e: (e[0], e[1]))
    mid = mido.MidiFile(type=1, ticks_per_beat=tpq)
    tr = mido.MidiTrack()
    tr.append(mido.MetaMessage("set_tempo", tempo=mpq, time=0))
    last = 0
    for tick, _, msg in events:
        tr.append(msg.copy(time=tick - last))
        last = tick
    tr.append(mido.MetaMessage("end_of_track", time=0))
    mid.tracks.append(tr)
    mid.save(str(path))


def write_audio(path: Path, rng: np.random.Generator, seconds: float) -> None:
    import soundfile as sf

    sr = 22_050
    t = np.arange(int(seconds * sr)) / sr
    y = np.zeros_like(t)
    for _ in range(4):
        f0 = rng.uniform(110.0, 880.0)
        y += rng.uniform(0.1, 0.3) * np.sin(2 * np.pi * f0 * t) * np.exp(-t % 0.5 * 4)
    y += 0.01 * rng.standard_normal(t.size)
    sf.write(str(path), (y / np.abs(y).max() * 0.8).astype(np.float32), sr)


def make_inputs(root: Path, args: argparse.Namespace) -> Path:
    rng = np.random.default_rng(args.seed)
    root.mkdir(parents=True, exist_ok=True)
    for i in range(args.n_files):
        if args.modality == "symbolic":
            write_midi(root / f"f{i:05d}.mid", rng, args.notes, args.seconds)
        else:
            write_audio(root / f"f{i:05d}.wav", rng, args.seconds)
    return root


def same_store(a: Path, b: Path) -> bool:
    from aria_tda.features.store import FeatureStore

    x, y = FeatureStore.open(a), FeatureStore.open(b)
    if x.track_ids.tolist() != y.track_ids.tolist() or x.feature_specs != y.feature_specs:
        return False
    for name, spec in x.feature_specs.items():
        if spec["kind"] == "vector":
            if not np.array_equal(x.vectors(name), y.vectors(name), equal_nan=True):
                return False
        else:
            for u, v in zip(x.sequences(name), y.sequences(name), strict=True):
                if u is None or v is None:
                    if (u is None) != (v is None):
                        return False
                elif not np.array_equal(u, v):
                    return False
    cols = ["path", "track_id", "error"]
    return bool(x.metadata.equals(y.metadata)) and (
        x.errors[cols].to_dict("records") == y.errors[cols].to_dict("records")
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-files", type=int, default=120)
    ap.add_argument("--modality", choices=("symbolic", "audio"), default="symbolic")
    ap.add_argument("--notes", type=int, default=1500, help="notes per MIDI file")
    ap.add_argument("--seconds", type=float, default=300.0, help="length of each file (s)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=HERE / "results" / "bench_extract_cluster.json")
    args = ap.parse_args()

    os.environ.setdefault("ARIA_PROGRESS", "0")
    from aria_tda._dask import open_client
    from aria_tda.features.extract import extract_to_store

    tmp = Path(tempfile.mkdtemp(prefix="aria-bench-cluster-"))
    t0 = time.perf_counter()
    src = make_inputs(tmp / "in", args)
    gen_s = time.perf_counter() - t0
    warm = tmp / "warm"
    warm.mkdir()
    suffix = ".mid" if args.modality == "symbolic" else ".wav"
    for f in sorted(src.glob(f"*{suffix}"))[:3]:
        (warm / f.name).symlink_to(f)
    extract_to_store(warm, tmp / "warm-store", modality=args.modality)  # numba cache warm

    runs: dict[str, dict[str, Any]] = {}

    def timed(name: str, **kw: Any) -> None:
        t = time.perf_counter()
        summary = extract_to_store(src, tmp / name, modality=args.modality, **kw)
        wall = time.perf_counter() - t
        runs[name] = {
            "wall_s": round(wall, 3),
            "files_per_s": round(args.n_files / wall, 2),
            "n_extracted": summary["n_extracted"],
            "n_errors": summary["n_errors"],
        }
        print(f"{name:<12} {wall:8.2f} s  {args.n_files / wall:8.2f} files/s", flush=True)

    timed("workers1", workers=1)
    timed("workers2", workers=2)
    t = time.perf_counter()
    with open_client("local:2") as client:
        start = time.perf_counter() - t
        timed("dask_local2", client=client)
    runs["dask_local2"]["cluster_start_s"] = round(start, 3)
    runs["dask_local2"]["wall_with_start_s"] = round(start + runs["dask_local2"]["wall_s"], 3)
    print(f"{'':<12} cluster start {start:.2f} s", flush=True)
    equal = same_store(tmp / "workers1", tmp / "workers2") and same_store(
        tmp / "workers1", tmp / "dask_local2"
    )
    print(f"stores equal: {equal}")

    import dask

    result = {
        "benchmark": "bench_extract_cluster",
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "modality": args.modality,
        "n_files": args.n_files,
        "notes_per_file": args.notes if args.modality == "symbolic" else None,
        "seconds_per_file": args.seconds,
        "generate_s": round(gen_s, 2),
        "runs": runs,
        "stores_equal": equal,
        "machine": {
            "cpu_count": os.cpu_count(),
            "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
            "python": platform.python_version(),
            "dask": dask.__version__,
            "platform": platform.platform(),
        },
        "note": "shared machine (other jobs running): compare the rows of one run only",
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"-> {args.out}")
    import shutil

    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
