"""Benchmark: many queries (issue 14) — exact-tiled vs approximate ``aria-tda diagnose``.

Writes (once; reused when it exists with the same parameters) a ``--rows x --cols`` float32
``.npy`` with a planted low-rank + noise structure under ``--data`` (default
``$ARIA_CACHE_DIR/bench`` or ``~/.cache/aria/bench``, outside the repository), then runs in
separate processes (wall time and peak RSS from ``os.wait4``):

- ``exact-tiled``: :func:`aria_tda.diagnostics.diagnose` with ``mode="exact-tiled"`` and
  ``--memory`` (default 8GB). With ``--exact-rows N`` only the first N rows are diagnosed and
  the streaming part is extrapolated linearly in M (the passes are linear in the rows; the
  eigen step on the spilled Gram does not depend on M) — said so in the output;
- ``approx``: ``mode="approx"`` (default settings).

Reports time, peak RSS and, when the exact run covered all rows, the error of r1 and κ of
the approximate run and whether κ lies in its CI. Goal: approx >= 20x faster, r1 within 1%,
κ within its CI.

Usage::

    .venv/bin/python benchmarks/bench_diagnose_scale.py --rows 50000 --cols 10000 --memory 1GB
    .venv/bin/python benchmarks/bench_diagnose_scale.py             # 200,000 x 50,000 (40 GB)
    .venv/bin/python benchmarks/bench_diagnose_scale.py --exact-rows 20000   # extrapolate
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
GEN_ROWS = 4096


def default_data_dir() -> Path:
    base = Path(os.environ.get("ARIA_CACHE_DIR") or Path.home() / ".cache" / "aria")
    return base / "bench"


def generate(path: Path, m: int, t: int, seed: int) -> dict[str, Any]:
    """Planted spectrum: rank-5 signal (scales 6, 3, 2, 1.5, 1) + unit noise + column offsets."""
    meta = path.with_suffix(".json")
    want = {"rows": m, "cols": t, "seed": seed, "model": "rank5[6,3,2,1.5,1]+noise+offsets"}
    if path.exists() and meta.exists() and json.loads(meta.read_text()) == want:
        return {"reused": True, "bytes": path.stat().st_size, "seconds": 0.0}
    rng = np.random.default_rng(seed)
    scales = np.array([6.0, 3.0, 2.0, 1.5, 1.0], dtype=np.float32)
    v = (scales[:, None] * rng.standard_normal((5, t))).astype(np.float32)
    offsets = (0.3 * rng.standard_normal(t)).astype(np.float32)
    header = {"descr": "<f4", "fortran_order": False, "shape": (m, t)}
    t0 = time.perf_counter()
    tmp = path.with_suffix(".partial")
    with open(tmp, "wb") as fh:
        np.lib.format.write_array_header_2_0(fh, header)
        for s in range(0, m, GEN_ROWS):
            n = min(GEN_ROWS, m - s)
            block = rng.standard_normal((n, t), dtype=np.float32)
            block += rng.standard_normal((n, 5), dtype=np.float32) @ v
            block += offsets
            fh.write(block.tobytes())
    tmp.replace(path)
    meta.write_text(json.dumps(want))
    return {"reused": False, "bytes": path.stat().st_size, "seconds": time.perf_counter() - t0}


def child(mode: str, path: str, memory: str, rows: int | None, spill: str) -> dict[str, Any]:
    import warnings

    from aria_tda.diagnostics import diagnose
    from aria_tda.scores import open_scores

    warnings.simplefilter("ignore")
    src = open_scores(path)
    if rows is not None and rows < src.n_rows:
        from aria_tda.scores.source import ArraySource

        src = ArraySource(np.load(path, mmap_mode="r")[:rows])
        src.io_bound = True
    t0 = time.perf_counter()
    d = diagnose(src, mode=mode, memory=memory, spill_dir=spill, progress=False)
    rec = d.to_dict()
    rec["seconds"] = time.perf_counter() - t0
    rec["rows_used"] = src.n_rows
    return rec


def errors(approx: dict[str, Any], exact: dict[str, Any]) -> dict[str, Any]:
    """r1 relative error, kappa absolute error, and whether exact lies in approx's intervals."""
    out: dict[str, Any] = {
        "r1_rel_error": abs(approx["r1"] - exact["r1"]) / exact["r1"],
        "kappa_abs_error": abs(approx["kappa"] - exact["kappa"]),
    }
    lo, hi = approx["kappa_ci"]
    out["kappa_in_ci"] = bool(lo <= exact["kappa"] <= hi)
    lo, hi = approx["r1_interval"]
    out["r1_in_interval"] = bool(lo <= exact["r1"] <= hi)
    print(f"r1 relative error {out['r1_rel_error']:.2e} (in interval: "
          f"{out['r1_in_interval']}); kappa error {out['kappa_abs_error']:.2e} "
          f"(in CI: {out['kappa_in_ci']})", flush=True)
    return out


def run_child(*args: Any) -> dict[str, Any]:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", json.dumps(args)]
    env = {**os.environ, "ARIA_PROGRESS": "0"}
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, env=env)
    out = proc.stdout.read() if proc.stdout else b""
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"child {args[0]} failed")
    rec = json.loads([ln for ln in out.decode().splitlines() if ln.startswith("{")][-1])
    rec["wall_s"] = time.perf_counter() - t0
    rec["peak_rss_mb"] = usage.ru_maxrss / 1024.0
    return rec


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        print(json.dumps(child(*json.loads(sys.argv[2]))), flush=True)
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--cols", type=int, default=50_000)
    ap.add_argument("--memory", default="8GB", help="budget of the exact-tiled run")
    ap.add_argument("--exact-rows", type=int, default=None,
                    help="diagnose only this many rows exactly and extrapolate (linear in M)")
    ap.add_argument("--skip-exact", action="store_true")
    ap.add_argument("--data", default=None, help="folder of the generated matrix")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=str(HERE / "results" / "bench_diagnose_scale.json"))
    ap.add_argument("--reuse", action="store_true",
                    help="take the approx and exact-tiled records from an earlier --out of the "
                    "same shape (only the runs it lacks are made)")
    opts = ap.parse_args()
    data = Path(opts.data) if opts.data else default_data_dir()
    data.mkdir(parents=True, exist_ok=True)
    path = data / f"scale_{opts.rows}x{opts.cols}_s{opts.seed}.npy"
    gen = generate(path, opts.rows, opts.cols, opts.seed)
    how = "reused" if gen["reused"] else "written in {:.0f} s".format(gen["seconds"])
    print(f"matrix {path} ({gen['bytes'] / 1e9:.1f} GB, {how})", flush=True)
    spill = tempfile.mkdtemp(prefix="spill-", dir=data)
    res: dict[str, Any] = {
        "started": time.strftime("%Y-%m-%d %H:%M:%S"),
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                    "load_avg_at_start": os.getloadavg()},
        "shape": [opts.rows, opts.cols], "memory": opts.memory, "data": str(path),
        "generate": gen,
    }
    old: dict[str, Any] = {}
    if opts.reuse and Path(opts.out).exists():
        old = json.loads(Path(opts.out).read_text())
        if old.get("shape") != [opts.rows, opts.cols]:
            old = {}
        else:
            res.update({k: old[k] for k in ("started", "machine", "generate") if k in old})
    approx = old.get("approx") or run_child("approx", str(path), opts.memory, None, spill)
    res["approx"] = approx
    print(f"approx       {approx['wall_s']:8.1f} s  peak RSS {approx['peak_rss_mb']:7.0f} MB  "
          f"passes {approx['details']['passes']}  r1 {approx['r1']:.6f} "
          f"{approx['r1_interval']}  kappa {approx['kappa']:.4f} CI {approx['kappa_ci']}",
          flush=True)
    if not opts.skip_exact:
        exact = old.get("exact_tiled")
        if exact is None or (opts.exact_rows or opts.rows) != exact["rows_used"]:
            exact = run_child("exact-tiled", str(path), opts.memory, opts.exact_rows, spill)
        res["exact_tiled"] = exact
        full = exact["rows_used"] == opts.rows
        est = exact["wall_s"]
        if not full:
            # streaming part linear in M; approximate the eigen step as not growing with M
            est = exact["wall_s"] * opts.rows / exact["rows_used"]
            res["exact_extrapolated"] = {
                "measured_rows": exact["rows_used"], "measured_wall_s": exact["wall_s"],
                "estimated_wall_s": est,
                "how": "wall time of the exact-tiled run on the first rows x (M / rows)",
            }
        res["speedup"] = est / approx["wall_s"]
        line = (f"exact-tiled  {exact['wall_s']:8.1f} s  peak RSS {exact['peak_rss_mb']:7.0f} MB"
                f"  panels {exact['details']['panels']}  gram reads "
                f"{exact['details']['gram_reads']}")
        if not full:
            line += (f"  (rows 0:{exact['rows_used']} only; extrapolated to all rows: "
                     f"{est:.0f} s)")
        print(line)
        if full:
            res.update(errors(approx, exact))
        else:
            # the error of approx mode at this T: both modes on the same (first) rows
            same = old.get("approx_same_rows")
            if same is None or same["rows_used"] != exact["rows_used"]:
                same = run_child("approx", str(path), opts.memory, exact["rows_used"], spill)
            res["approx_same_rows"] = same
            res["same_rows"] = {"rows": exact["rows_used"], **errors(same, exact),
                                "speedup": exact["wall_s"] / same["wall_s"]}
            print(f"on rows 0:{exact['rows_used']}: approx {same['wall_s']:.1f} s, peak RSS "
                  f"{same['peak_rss_mb']:.0f} MB ({res['same_rows']['speedup']:.1f}x faster "
                  "than exact-tiled there)")
        print(f"speed-up approx vs exact-tiled: {res['speedup']:.1f}x (goal >= 20x)")
    os.rmdir(spill) if os.path.isdir(spill) and not os.listdir(spill) else None
    out = Path(opts.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(res, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
