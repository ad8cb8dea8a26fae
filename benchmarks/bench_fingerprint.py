"""Cost of content fingerprints (issue 26): first run against rerun, on a paper-size score file.

Writes a float32 ``.npy`` of ``--rows x --cols`` (default the paper's fine stage, 1,005,520 x
7,148 = 28.7 GB; needs that much free space under ``--tmp``) and times, in one run:

- ``read``: one sequential read of the file to ``/dev/null`` (the floor any content key pays);
- ``sha256-1``: the naive fingerprint, one thread, ``hashlib.sha256`` over 8 MiB reads;
- ``first``: :func:`aria_tda._fingerprint.content_digest` on a cold fingerprint cache (what
  ``aria-tda run`` pays the first time it sees the file);
- ``rerun``: the same call again (the cache hit every later ``run`` pays: one ``stat``);
- ``mtime-kept``: after rewriting one value in place and restoring the mtime (``cp -p``), the
  next call (must hash again, and give another digest).

With ``--drop-caches`` (root) the page cache is dropped before each timed read, so ``read``,
``sha256-1`` and ``first`` are cold reads from the disk; otherwise they may be served from RAM.

Usage::

    .venv/bin/python benchmarks/bench_fingerprint.py --drop-caches            # 28.7 GB
    .venv/bin/python benchmarks/bench_fingerprint.py --rows 100000 --cols 1000

Prints a table and writes JSON (``--out``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
PAPER = (1_005_520, 7_148)


def generate(path: Path, m: int, t: int, seed: int) -> float:
    """Stream a float32 ``(m, t)`` .npy of uniform noise to ``path``; return seconds."""
    t0 = time.perf_counter()
    rng = np.random.default_rng(seed)
    header = {"descr": "<f4", "fortran_order": False, "shape": (m, t)}
    rows = max(1, (256 * 2**20) // (4 * t))
    with open(path, "wb") as fh:
        np.lib.format.write_array_header_2_0(fh, header)
        for s in range(0, m, rows):
            fh.write(rng.random((min(rows, m - s), t), dtype=np.float32).tobytes())
    return time.perf_counter() - t0


def drop_caches(enabled: bool) -> None:
    """Drop the page cache (root only) so the next read comes from the disk."""
    if not enabled:
        return
    subprocess.run(["sync"], check=True)
    Path("/proc/sys/vm/drop_caches").write_text("3\n")


def timed(fn: Any) -> tuple[float, Any]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def plain_read(path: Path) -> int:
    n = 0
    with open(path, "rb", buffering=0) as fh:
        while chunk := fh.read(8 * 2**20):
            n += len(chunk)
    return n


def naive_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb", buffering=0) as fh:
        while chunk := fh.read(8 * 2**20):
            h.update(chunk)
    return h.hexdigest()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=PAPER[0])
    ap.add_argument("--cols", type=int, default=PAPER[1])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tmp", type=Path, default=None, help="folder for the matrix (default: TMP)")
    ap.add_argument("--drop-caches", action="store_true", help="cold reads (root)")
    ap.add_argument("--skip-naive", action="store_true", help="leave out the sha256-1 row")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "bench_fingerprint.json")
    args = ap.parse_args()

    from aria_tda._fingerprint import content_digest

    with tempfile.TemporaryDirectory(dir=args.tmp) as d:
        os.environ["ARIA_CACHE_DIR"] = str(Path(d) / "cache")  # a cold fingerprint cache
        path = Path(d) / "scores.npy"
        gen = generate(path, args.rows, args.cols, args.seed)
        size = path.stat().st_size
        rec: dict[str, Any] = {
            "rows": args.rows, "cols": args.cols, "bytes": size, "generate_s": round(gen, 1),
            "drop_caches": args.drop_caches, "cpus": os.cpu_count(),
            "machine": platform.platform(), "results": {},
        }
        res = rec["results"]
        drop_caches(args.drop_caches)
        res["read"], _ = timed(lambda: plain_read(path))
        if not args.skip_naive:
            drop_caches(args.drop_caches)
            res["sha256-1"], _ = timed(lambda: naive_sha256(path))
        drop_caches(args.drop_caches)
        res["first"], first = timed(lambda: content_digest(path))
        res["rerun"], again = timed(lambda: content_digest(path))
        assert again == first
        st = os.stat(path)
        with open(path, "r+b") as fh:
            fh.seek(size - 4)
            fh.write(np.float32(-1.0).tobytes())
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
        drop_caches(args.drop_caches)
        res["mtime-kept"], changed = timed(lambda: content_digest(path))
        rec["mtime_kept_detected"] = changed != first
        res = {k: round(v, 4) for k, v in res.items()}
        rec["results"] = res
        rec["GB_per_s"] = {k: round(size / v / 1e9, 2) for k, v in res.items() if v > 0.05}
        rec["first_over_read"] = round(res["first"] / res["read"], 2)
    print(f"{args.rows:,} x {args.cols:,} float32 = {size / 1e9:.1f} GB "
          f"(cold page cache: {args.drop_caches})")
    for k, v in res.items():
        rate = rec["GB_per_s"].get(k)
        print(f"  {k:<11} {v:10.3f} s" + (f"   {rate:.2f} GB/s" if rate else ""))
    print(f"  first / read = {rec['first_over_read']}; mtime-kept rewrite detected: "
          f"{rec['mtime_kept_detected']}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(rec, indent=2) + "\n")


if __name__ == "__main__":
    main()
