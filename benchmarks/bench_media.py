"""Benchmark of the listening room: the report with and without its media, cold and warm.

Builds the hand-built user study of the tests (``tests/report/_listening.py``: 6 queries, 2
settings, 24 tracks of MIDI and FluidSynth-rendered audio, 3 missing files) in a temporary
folder with an empty ``ARIA_CACHE_DIR``, then times, each as its own ``aria-tda`` process:

1. ``report RESULTS --no-media`` (the page alone);
2. ``report RESULTS`` from the empty cache (clips rendered, cut, encoded and drawn; the audio
   analysis' kernels compiled);
3. ``report RESULTS`` again (every clip reused from ``aria_tda.media.cache``);
4. ``evidence RESULTS --query gen00`` (one dossier: its clips built afresh, its musical
   reasons, aligned views and notation computed), then ``--query gen01`` (an audio query).

Usage::

    .venv/bin/python benchmarks/bench_media.py [--keep DIR]
        [--out benchmarks/results/bench_media.json]

Prints one JSON object: seconds per command, the media folder's files and bytes, the dossier's
bytes.
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

ROOT = Path(__file__).resolve().parents[1]
ARIA = [sys.executable, "-m", "aria_tda"]


def _timed(args: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, str]:
    t0 = time.perf_counter()
    proc = subprocess.run([*ARIA, *args], cwd=cwd, env=env, capture_output=True, text=True,
                          check=True)
    return round(time.perf_counter() - t0, 2), proc.stderr


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keep", type=Path, help="build in this folder and keep it")
    ap.add_argument("--out", type=Path, help="also write the JSON here")
    a = ap.parse_args()
    work = a.keep or Path(tempfile.mkdtemp(prefix="bench-media-"))
    work.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "ARIA_CACHE_DIR": str(work / "cache"), "ARIA_PROGRESS": "0"}
    os.environ.update(env)
    sys.path.insert(0, str(ROOT / "tests"))
    from report._listening import make_user_study

    try:
        results = make_user_study(work / "study")
        study = results.parent
        out: dict[str, object] = {"cpus": os.cpu_count()}
        out["report_no_media_s"], _ = _timed(["report", "results", "--no-media"], study, env)
        out["report_cold_s"], err = _timed(["report", "results"], study, env)
        out["media_line_cold"] = next(ln for ln in err.splitlines() if "files," in ln)
        media = results / "report_media"
        files = [p for p in media.rglob("*") if p.is_file()]
        out["media_files"], out["media_bytes"] = len(files), sum(p.stat().st_size for p in files)
        out["report_warm_s"], err = _timed(["report", "results"], study, env)
        out["media_line_warm"] = next(ln for ln in err.splitlines() if "files," in ln)
        dossier = work / "gen00.html"
        out["evidence_s"], _ = _timed(["evidence", "results", "--query", "gen00", "--out",
                                       str(dossier)], study, env)
        out["dossier_bytes"] = dossier.stat().st_size
        # an audio query (musical reasons from tracked beats, key and chords; aligned panels)
        audio = work / "gen01.html"
        out["evidence_audio_s"], _ = _timed(["evidence", "results", "--query", "gen01",
                                             "--out", str(audio)], study, env)
        out["dossier_audio_bytes"] = audio.stat().st_size
    finally:
        if a.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    text = json.dumps(out, indent=1)
    print(text)
    if a.out:
        a.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
