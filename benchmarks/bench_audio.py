"""Audio feature extraction time per 30 s clip on one core, with each feature's share.

Usage::

    .venv/bin/python benchmarks/bench_audio.py [--clips 3] [--repeats 3] [--backends]
        [--json out.json]

What is measured (one core: BLAS/OpenMP/numba threads pinned to 1):

- ``startup``: a fresh Python process importing :mod:`aria_tda.features.audio` and extracting a
  3 s clip, twice: with the on-disk numba cache as it is (what every worker pays once) and with
  an empty ``NUMBA_CACHE_DIR`` (cold compile). Reported separately, excluded from the rest.
- ``steady``: CPU seconds of the extracting thread (``time.thread_time``; wall time is shown
  too, but on a shared machine it mostly measures the other load) for 30 s clips rendered with
  FluidSynth from MIDI written here (pop 4/4, waltz 3/4, slow ballad; 48 kHz), each extracted
  ``--repeats`` times after a warm-up; per-clip time is the mean over repeats, and each
  stage's share is its exclusive time (shared intermediates are their own rows: ``mel`` feeds
  onset/beat/MFCC, ``cqt`` feeds the CQT feature and the template chord recogniser). ``load``
  (decode + resample a 44.1 kHz FLAC) is shown apart.
- ``--backends``: the optional beat/chord backends on the same clips, as time ratios to the
  default in the same run (first call per backend excluded: model loading).

Target (issue 3): <= 1.0 s per 30 s clip per core for the default backends.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")
os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import numpy as np

CLIP_S = 30.0
SR = 48000
BUDGET_S = 1.0

_STARTUP = r"""
import time, numpy as np
t0 = time.perf_counter()
from aria_tda.features.audio import extract_audio
t1 = time.perf_counter()
y = (0.1 * np.sin(2 * np.pi * 220 * np.arange(3 * 48000) / 48000)).astype(np.float32)
y[::12000] += 0.5
extract_audio(y, 48000)
t2 = time.perf_counter()
extract_audio(y, 48000)
t3 = time.perf_counter()
print(t1 - t0, t2 - t1, t3 - t2)
"""


def _startup(cold: bool) -> dict[str, float]:
    env = dict(os.environ)
    tmp = None
    if cold:
        tmp = tempfile.mkdtemp(prefix="aria-numba-")
        env["NUMBA_CACHE_DIR"] = tmp
    out = subprocess.run(
        [sys.executable, "-c", _STARTUP], env=env, capture_output=True, text=True, check=True
    )
    imp, first, second = (float(x) for x in out.stdout.split()[-3:])
    if tmp:
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)
    return {
        "import_s": imp,
        "first_call_s": first,
        "steady_3s_clip_s": second,
        "compile_overhead_s": first - second,
    }


def _clips(n: int) -> dict[str, np.ndarray]:
    from aria_tda.features.audio.render import Note, midi_from_notes, render_midi

    def song(prog, bpm, beats, program, seed):
        rng = np.random.default_rng(seed)
        spb = 60.0 / bpm * beats
        bars = int(np.ceil(CLIP_S / spb))
        notes = []
        for bar in range(bars):
            root, minor = prog[bar % len(prog)]
            t0 = bar * beats
            notes.append(Note(t0, beats, root - 12, 90, 1))
            for b in range(beats):
                for iv in (0, 3 if minor else 4, 7):
                    notes.append(Note(t0 + b, 0.9, root + iv, 70, 0))
                notes.append(Note(t0 + b, 0.5, 36 if b == 0 else 38, 100, 9))
                notes.append(Note(t0 + b + 0.5, 0.25, 42, 70, 9))
                notes.append(Note(t0 + b, 0.5, root + 12 + int(rng.choice([0, 2, 4, 7, 9])), 90, 2))
        mid = midi_from_notes(notes, bpm=bpm, programs={0: program, 1: 33, 2: 73})
        return render_midi(mid, sr=SR, duration=CLIP_S)

    specs = [
        ("pop_4-4_100bpm", [(62, False), (59, True), (55, False), (57, False)], 100, 4, 0),
        ("waltz_3-4_150bpm", [(58, False), (63, False), (65, False), (55, True)], 150, 3, 48),
        ("ballad_4-4_72bpm", [(60, False), (57, True), (53, False), (55, False)], 72, 4, 4),
    ]
    return {
        name: song(p, bpm, beats, prog, i)
        for i, (name, p, bpm, beats, prog) in enumerate(specs[:n])
    }


def _time(y: np.ndarray, repeats: int, **params) -> tuple[float, float, dict[str, float]]:
    """(mean CPU seconds, mean wall seconds, mean CPU seconds per stage) over the repeats."""
    from aria_tda.features.audio import extract_audio

    cpu, wall, stages = [], [], []
    for _ in range(repeats):
        tm: dict[str, float] = {}
        w0, c0 = time.perf_counter(), time.thread_time()
        extract_audio(y, SR, timings=tm, **params)
        cpu.append(time.thread_time() - c0)
        wall.append(time.perf_counter() - w0)
        stages.append(tm)
    mean_stage = {k: float(np.mean([s.get(k, 0.0) for s in stages])) for k in stages[0]}
    return float(np.mean(cpu)), float(np.mean(wall)), mean_stage


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clips", type=int, default=3, choices=(1, 2, 3))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument(
        "--backends", action="store_true", help="also time the optional madmom/BeatNet backends"
    )
    ap.add_argument(
        "--no-startup", action="store_true", help="skip the fresh-process start-up measurements"
    )
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args()

    from threadpoolctl import threadpool_limits

    from aria_tda.features.audio import extract as audio_module

    threadpool_limits(1)
    # stage clock = CPU time of this (only) thread: robust to other load on a shared machine
    audio_module._now = time.thread_time
    result: dict[str, object] = {"clip_s": CLIP_S, "sr": SR, "budget_s": BUDGET_S}
    if not args.no_startup:
        result["startup_warm_cache"] = _startup(cold=False)
        result["startup_cold_numba"] = _startup(cold=True)
        for k in ("startup_warm_cache", "startup_cold_numba"):
            print(f"{k:22s} " + "  ".join(f"{a}={b:.2f}" for a, b in result[k].items()))

    import soundfile as sf

    from aria_tda.features.audio import available_backends, extract_audio, extract_file, versions

    clips = _clips(args.clips)
    extract_audio(next(iter(clips.values()))[: 3 * SR], SR)  # warm-up: imports, numba
    per_clip, per_clip_wall, shares = {}, {}, []
    for name, y in clips.items():
        total, wall, stages = _time(y, args.repeats)
        per_clip[name], per_clip_wall[name] = total, wall
        shares.append(stages)
        print(f"{name:22s} {total:.3f} s CPU ({wall:.3f} s wall) per {CLIP_S:.0f} s clip")
    stage_names = list(dict.fromkeys(k for s in shares for k in s))
    mean_stages = {k: float(np.mean([s.get(k, 0.0) for s in shares])) for k in stage_names}
    total = float(np.mean(list(per_clip.values())))
    print(f"\n{'stage':20s} {'seconds':>8s} {'share':>7s}")
    for k, v in sorted(mean_stages.items(), key=lambda kv: -kv[1]):
        print(f"{k:20s} {v:8.3f} {100 * v / total:6.1f}%")
    overhead = total - sum(mean_stages.values())
    print(f"{'(checks, other)':20s} {overhead:8.3f} {100 * overhead / total:6.1f}%")
    verdict = "PASS" if total <= BUDGET_S else "FAIL"
    wall = float(np.mean(list(per_clip_wall.values())))
    print(
        f"\nmean {total:.3f} s CPU ({wall:.3f} s wall) per 30 s clip on one core "
        f"(budget {BUDGET_S:.1f} s): {verdict}"
    )

    with tempfile.TemporaryDirectory() as tmp:
        import librosa

        path = os.path.join(tmp, "clip44.flac")
        sf.write(
            path, librosa.resample(next(iter(clips.values())), orig_sr=SR, target_sr=44100), 44100
        )
        tm: dict[str, float] = {}
        extract_file(path, timings=tm)
        print(f"load (decode 44.1 kHz FLAC + resample to 48 kHz): {tm['load']:.3f} s")
        result["load_s"] = tm["load"]
    result.update(
        per_clip_cpu_s=per_clip,
        per_clip_wall_s=per_clip_wall,
        mean_cpu_s=total,
        mean_wall_s=wall,
        stage_s=mean_stages,
        verdict=verdict,
        versions=versions(),
    )

    if args.backends:
        av = available_backends()
        combos = [
            ("beat", "madmom"),
            ("beat", "beatnet"),
            ("chord", "madmom"),
            ("chord", "madmom-cnn"),
        ]
        y = next(iter(clips.values()))
        _, _, base_stages = _time(y, 1)
        rows = {}
        for kind, name in combos:
            if not av[kind][name]:
                print(f"{kind} backend {name}: not installed")
                continue
            kw = {f"{kind}_backend": name}
            _time(y[: 5 * SR], 1, **kw)  # load the model
            t, _, st = _time(y, 1, **kw)
            stage = "beat_interval" if kind == "beat" else "chord_progression"
            rows[f"{kind}:{name}"] = {
                "total_s": t,
                "stage_s": st[stage],
                "stage_ratio_vs_default": st[stage] / base_stages[stage],
            }
            print(
                f"{kind} backend {name:10s}: {st[stage]:.3f} s for the stage "
                f"({st[stage] / base_stages[stage]:.1f}x default), clip total {t:.2f} s"
            )
        result["backends"] = rows
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(result, fh, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
