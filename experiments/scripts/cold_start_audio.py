"""Cold starts of the audio extraction: five ``aria-tda features audio --workers 2`` runs in a row.

Usage::

    .venv/bin/python experiments/scripts/cold_start_audio.py [--runs 5] [--tracks 30] [--seconds 10]
        [--workers 2] [--shared-cache] [--json out.json]

Renders ``--tracks`` WAV files (FluidSynth + the GM soundfont, random programs, tempi and chord
loops; 48 kHz), then runs the README's command ``aria-tda features audio tracks.csv --out STORE
--workers 2`` ``--runs`` times as separate processes. Each run gets a fresh, empty
``ARIA_CACHE_DIR`` (so librosa's numba kernels are compiled from scratch: a truly cold start)
and a fresh store; with ``--shared-cache`` all runs share one cache that starts empty (the first
run is cold, the others find it warm). A run succeeds when it exits 0, prints no traceback and
its store holds every track.

Issue 13 reported a cold start that crashed in 3 of 5 tries (two workers compiling the same
kernels into the virtual environment at once, a ``BrokenProcessPool`` traceback, then a
poisoned cache). ARIA now keeps the JIT cache in its own per-user directory and compiles it
once, under a lock, before the workers start (:mod:`aria_tda.features.audio.jit`).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def render_tracks(folder: Path, n: int, seconds: float, seed: int = 0) -> Path:
    """Render ``n`` short songs to WAV; return the CSV list (path, genre)."""
    from aria_tda.features.audio.render import Note, midi_from_notes, render_file

    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    loops = ([0, 9, 5, 7], [0, 5, 7, 0], [9, 5, 0, 7], [2, 7, 0, 9])
    rows = ["path,genre"]
    for i in range(n):
        bpm = float(rng.uniform(70, 150))
        beats = int(rng.choice([3, 4]))
        loop = loops[int(rng.integers(len(loops)))]
        bars = int(np.ceil(seconds / (60.0 / bpm * beats)))
        notes = []
        for b in range(bars):
            root = 48 + loop[b % len(loop)]
            minor = loop[b % len(loop)] in (9, 2)
            for k, iv in enumerate((0, 3 if minor else 4, 7)):
                notes.append(Note(b * beats, beats, root + iv + 12 * (k > 0), 70, 0))
            for t in range(beats):
                notes.append(Note(b * beats + t, 0.25, 36 if t == 0 else 42, 100, 9))
                notes.append(
                    Note(b * beats + t, 0.5, root + 24 + int(rng.choice([0, 4, 7])), 90, 1)
                )
        programs = {0: int(rng.integers(0, 8)), 1: int(rng.integers(40, 80))}
        mid = midi_from_notes(notes, bpm=bpm, programs=programs)
        name = f"track{i:03d}.wav"
        render_file(mid, folder / name, sr=48000, duration=seconds)
        rows.append(f"{name},{'waltz' if beats == 3 else 'pop'}")
    (folder / "tracks.csv").write_text("\n".join(rows) + "\n")
    return folder / "tracks.csv"


def one_run(tracks: Path, work: Path, cache: Path, workers: int) -> dict[str, object]:
    """One ``aria-tda features audio`` process; its exit status, counts and wall time."""
    out = work / "store"
    env = {
        k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "_ARIA_NUMBA_CACHE_DIR")
    }
    env.update(ARIA_CACHE_DIR=str(cache), ARIA_PROGRESS="0")
    argv = [
        sys.executable,
        "-m",
        "aria",
        "features",
        "audio",
        str(tracks),
        "--out",
        str(out),
        "--workers",
        str(workers),
        "--json",
    ]
    t0 = time.perf_counter()
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    summary: dict[str, object] = {}
    if proc.returncode == 0:
        try:
            summary = json.loads(proc.stdout)
        except ValueError:
            summary = {}
    return {
        "rc": proc.returncode,
        "seconds": round(wall, 2),
        "n_extracted": summary.get("n_extracted"),
        "n_errors": summary.get("n_errors"),
        "traceback": "Traceback" in proc.stderr,
        "stderr_tail": proc.stderr.strip().splitlines()[-3:],
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--tracks", type=int, default=30)
    ap.add_argument("--seconds", type=float, default=10.0, help="length of each rendered track")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument(
        "--shared-cache",
        action="store_true",
        help="one (initially empty) cache for all runs instead of a fresh one each",
    )
    ap.add_argument("--json", type=Path, default=None, help="also write the results here")
    args = ap.parse_args()

    root = Path(tempfile.mkdtemp(prefix="aria-cold-start-"))
    try:
        t0 = time.perf_counter()
        tracks = render_tracks(root / "tracks", args.tracks, args.seconds)
        print(
            f"rendered {args.tracks} tracks of {args.seconds:g} s in "
            f"{time.perf_counter() - t0:.1f} s"
        )
        results = []
        for i in range(args.runs):
            cache = root / ("cache" if args.shared_cache else f"cache{i}")
            res = one_run(tracks, root / f"run{i}", cache, args.workers)
            ok = (
                res["rc"] == 0
                and not res["traceback"]
                and res["n_extracted"] == args.tracks
                and res["n_errors"] == 0
            )
            res["ok"] = ok
            results.append(res)
            print(
                f"run {i + 1}: {'ok  ' if ok else 'FAIL'} rc={res['rc']} "
                f"extracted={res['n_extracted']} errors={res['n_errors']} "
                f"{res['seconds']:.1f} s" + ("" if ok else f"  {res['stderr_tail']}")
            )
        times = [float(r["seconds"]) for r in results]  # type: ignore[arg-type]
        n_ok = sum(bool(r["ok"]) for r in results)
        print(
            f"{n_ok}/{args.runs} runs succeeded (workers={args.workers}, "
            f"{'shared' if args.shared_cache else 'fresh'} cache); wall s: "
            f"mean {np.mean(times):.1f}, min {min(times):.1f}, max {max(times):.1f}"
        )
        if args.json:
            args.json.write_text(
                json.dumps(
                    {"runs": results, "n_ok": n_ok, "tracks": args.tracks, "workers": args.workers},
                    indent=2,
                )
            )
        return 0 if n_ok == args.runs else 1
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
