"""``diagnose(device="cuda")`` on a GPU: agreement with the CPU path, and the paper's fine stage.

1. Agreement: a planted low-rank matrix (M × T) diagnosed on the GPU (float64 and float32
   compute) and on the CPU (NumPy, float64); prints the largest relative differences of κ, r₁,
   r₂:₅, p.
2. Scale: a float32 ``.npy`` of the paper's fine-stage shape (1,005,520 × 7,148 = 28.7 GB,
   written here in row blocks) diagnosed from disk with ``device="cuda"``; prints the wall time,
   the achieved read rate and GFLOP/s of the Gram pass. The file is read through the page
   cache when the machine's memory holds it (say so when reporting).

    python benchmarks/bench_diagnose_gpu.py [--rows 1005520] [--cols 7148] [--dir /tmp]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np


def agreement() -> dict[str, float]:
    from aria_tda.diagnostics import diagnose

    rng = np.random.default_rng(0)
    m, t, r = 200_000, 512, 5
    s = rng.standard_normal((m, r)) @ rng.standard_normal((r, t)) * 3.0
    s += rng.standard_normal((m, t)) + rng.standard_normal(t)
    s = s.astype(np.float32)
    cpu = diagnose(s, compute_dtype="float64")
    out = {}
    for dt in ("float64", "float32"):
        gpu = diagnose(s, device="cuda", compute_dtype=dt)
        for k in ("kappa", "r1", "r2_5", "p"):
            a, b = getattr(gpu, k), getattr(cpu, k)
            out[f"{dt}_{k}_rel"] = abs(a - b) / max(abs(b), 1e-300)
    return out


def write_matrix(path: Path, rows: int, cols: int, block: int = 65_536) -> float:
    import torch

    t0 = time.perf_counter()
    mm = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(rows, cols))
    g = torch.Generator(device="cuda").manual_seed(0)
    base = torch.randn(cols, device="cuda", generator=g)
    for start in range(0, rows, block):
        stop = min(rows, start + block)
        x = torch.randn(stop - start, cols, device="cuda", generator=g) + base
        mm[start:stop] = x.cpu().numpy()
    mm.flush()
    del mm
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_005_520)
    ap.add_argument("--cols", type=int, default=7_148)
    ap.add_argument("--dir", default="/tmp")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    import torch

    from aria_tda.diagnostics import diagnose

    info: dict[str, object] = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__}
    info["agreement"] = agreement()
    print("agreement (relative difference GPU vs CPU float64):", info["agreement"], flush=True)
    path = Path(args.dir) / "fine_stage.npy"
    info["write_s"] = round(write_matrix(path, args.rows, args.cols), 1)
    size = os.path.getsize(path)
    print(f"wrote {size / 1e9:.1f} GB in {info['write_s']} s", flush=True)
    for dt in ("float32", "float64"):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        d = diagnose(path, device="cuda", compute_dtype=dt)
        torch.cuda.synchronize()
        wall = time.perf_counter() - t0
        flops = 2.0 * args.rows * args.cols * args.cols
        info[f"diagnose_{dt}"] = {
            "wall_s": round(wall, 1),
            "read_GB_s": round(size / wall / 1e9, 2),
            "gram_GFLOP_s": round(flops / wall / 1e9, 1),
            "kappa": d.kappa,
            "r1": d.r1,
            "p": d.p,
        }
        print(
            f"diagnose {args.rows} x {args.cols} on GPU ({dt}): {wall:.1f} s, "
            f"{size / wall / 1e9:.2f} GB/s, {flops / wall / 1e9:.0f} GFLOP/s; "
            f"kappa={d.kappa:.4f} r1={d.r1:.4f}",
            flush=True,
        )
    path.unlink()
    if args.json:
        Path(args.json).write_text(json.dumps(info, indent=2, default=float))


if __name__ == "__main__":
    main()
