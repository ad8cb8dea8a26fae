"""Benchmark of the streaming diagnostics engine (issue 2).

(a) ``--rows x --cols`` float32 ``.npy`` on disk (default 200,000 x 1,000): the ``aria-tda
diagnose``
    command vs the naive in-memory NumPy route (``np.load``, ``np.corrcoef``,
    ``np.linalg.svd(full_matrices=False)``), each in its own process, same run. Reports wall
    time and peak RSS (``ru_maxrss`` of the child from ``os.wait4``) and checks that both
    routes agree. Targets: >= 5x faster, <= 1/4 of the peak memory.
(b) ``--big-rows x --big-cols`` float32 (default 2,000,000 x 2,000 = 16 GB) written to
    ``--tmp`` and deleted afterwards: the Gram pass out of core. Reports peak RSS (target
    < 2 GB) and achieved GFLOP/s, counting 2*M*T^2 flops for the Gram, against plain float32
    GEMMs measured in the same run on the same machine: (1) the same product in memory,
    ``b.T @ b`` on one chunk-sized buffer (NumPy -> BLAS ssyrk), the ceiling of this kernel;
    (2) a square ``a @ b`` sgemm of size T (general GEMM), also counted as 2*n^3. Each is
    measured with the BLAS thread count the streaming pass used and with all threads; the
    faster one is the reference. Target: >= 70% of the reference.
(c) The same kernel on a CUDA GPU when torch sees one (skipped otherwise).
(d) ``--small``: the light command, ``aria-tda diagnose`` (the console script) of a
    ``--small-rows x --small-cols`` float32 ``.npy`` (default 500 x 20), ``--small-repeats``
    times, each in its own process: wall time and peak RSS (``ru_maxrss`` from ``os.wait4``;
    the same figure as ``/usr/bin/time -v``). Targets: <= 0.5 s and <= 120 MB (the median
    wall and the largest RSS).

Usage::

    .venv/bin/python benchmarks/bench_diagnose.py                 # (a), (b), (c)
    .venv/bin/python benchmarks/bench_diagnose.py --skip-big      # (a) and (c) only
    .venv/bin/python benchmarks/bench_diagnose.py --rows 20000 --cols 300 \\
        --big-rows 200000 --big-cols 500
    .venv/bin/python benchmarks/bench_diagnose.py --rows 100000 --cols 800 --skip-big \\
        --small --out benchmarks/results/bench_diagnose_100k.json    # issue 41's figures

Prints a table and writes JSON (``--out``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
GEN_ROWS = 16384


# ----------------------------------------------------------------------------------------
# children (each runs in its own process so its peak RSS is its own)
# ----------------------------------------------------------------------------------------
def child_gen(path: str, m: int, t: int, seed: int) -> dict[str, Any]:
    """Write a float32 (m, t) .npy: rank-5 structure + noise + per-column offsets, streamed."""
    rng = np.random.default_rng(seed)
    v = rng.standard_normal((5, t)).astype(np.float32)
    offsets = (0.5 * rng.standard_normal(t)).astype(np.float32)
    header = {
        "descr": np.lib.format.dtype_to_descr(np.dtype(np.float32)),
        "fortran_order": False,
        "shape": (m, t),
    }
    t0 = time.perf_counter()
    with open(path, "wb") as fh:
        np.lib.format.write_array_header_2_0(fh, header)
        for s in range(0, m, GEN_ROWS):
            n = min(GEN_ROWS, m - s)
            block = rng.standard_normal((n, t), dtype=np.float32)
            block += rng.standard_normal((n, 5), dtype=np.float32) @ v
            block += offsets
            fh.write(memoryview(block))
    return {"seconds": time.perf_counter() - t0, "bytes": os.path.getsize(path)}


def child_naive(path: str) -> dict[str, Any]:
    """The naive in-memory route: load, np.corrcoef, np.linalg.svd."""
    t0 = time.perf_counter()
    s = np.load(path)
    t_load = time.perf_counter()
    c = np.corrcoef(s, rowvar=False)
    t = c.shape[0]
    kappa = (np.abs(c).sum() - np.trace(np.abs(c))) / (t * (t - 1))
    t_corr = time.perf_counter()
    _, sv, _ = np.linalg.svd(s, full_matrices=False)
    t_svd = time.perf_counter()
    e = sv.astype(np.float64) ** 2
    r = e / e.sum()
    colsum = s.sum(0, dtype=np.float64)
    sumsq = np.einsum("ij,ij->j", s, s, dtype=np.float64)
    p = float(np.mean(colsum**2 / (s.shape[0] * sumsq)))
    return {
        "seconds": time.perf_counter() - t0,
        "load_s": t_load - t0,
        "corrcoef_s": t_corr - t_load,
        "svd_s": t_svd - t_corr,
        "kappa": float(kappa),
        "r1": float(r[0]),
        "r2_5": float(r[1:5].sum()),
        "p": p,
    }


def child_aria(
    path: str, chunk_rows: int | None, n_threads: int | None, device: str | None
) -> dict[str, Any]:
    """The engine in two timed phases: the streaming Gram pass, then the T x T finish."""
    from aria_tda.diagnostics import diagnostics_from_stats
    from aria_tda.scores import open_scores, stream_stats

    t0 = time.perf_counter()
    src = open_scores(path)
    stats = stream_stats(
        src, chunk_rows=chunk_rows, n_threads=n_threads, device=device, progress=False
    )
    t_gram = time.perf_counter()
    d = diagnostics_from_stats(stats, device=device)
    t_end = time.perf_counter()
    m, t = src.shape
    from threadpoolctl import threadpool_info

    blas = [i["num_threads"] for i in threadpool_info() if i.get("user_api") == "blas"]
    return {
        "blas_threads": n_threads or (blas[0] if blas else None),
        "seconds": t_end - t0,
        "gram_s": t_gram - t0,
        "finish_s": t_end - t_gram,
        "gram_gflops": 2.0 * m * t * t / (t_gram - t0) / 1e9,
        "chunk_rows": src.chunk_rows(chunk_rows),
        "kappa": d.kappa,
        "r1": d.r1,
        "r2_5": d.r2_5,
        "p": d.p,
    }


def child_gemm(t: int, rows: int, threads: int | None, repeat: int) -> dict[str, Any]:
    """Plain float32 GEMMs in memory: chunk-sized b.T @ b (ssyrk) and square sgemm."""
    from threadpoolctl import threadpool_limits

    rng = np.random.default_rng(0)
    b = rng.standard_normal((rows, t), dtype=np.float32)
    a = rng.standard_normal((t, t), dtype=np.float32)
    c = rng.standard_normal((t, t), dtype=np.float32)

    def best(fn: Any) -> float:
        fn()
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        return min(times)

    with threadpool_limits(limits=threads, user_api="blas"):
        syrk = best(lambda: b.T @ b)
        gemm = best(lambda: a @ c)
    return {
        "threads": threads,
        "syrk_gflops": 2.0 * rows * t * t / syrk / 1e9,
        "sgemm_gflops": 2.0 * t**3 / gemm / 1e9,
    }


def child_gpu() -> dict[str, Any]:
    """The CUDA device torch sees, if any."""
    try:
        import torch
    except ImportError:
        return {"gpu": None, "why": "torch is not installed"}
    if not torch.cuda.is_available():
        return {"gpu": None, "why": "torch.cuda.is_available() is False"}
    return {"gpu": torch.cuda.get_device_name(0), "why": None}


CHILDREN = {"gen": child_gen, "naive": child_naive, "aria": child_aria, "gemm": child_gemm,
            "gpu": child_gpu}


def _child_main(argv: list[str]) -> None:
    name, *raw = argv
    args = [json.loads(a) for a in raw]
    print("RESULT " + json.dumps(CHILDREN[name](*args)), flush=True)


# ----------------------------------------------------------------------------------------
# orchestration
# ----------------------------------------------------------------------------------------
def run_child(cmd: list[str], *, parse: bool = True, threads: int | None = None) -> dict[str, Any]:
    """Run ``cmd``; return its RESULT JSON (or stdout JSON), wall seconds and peak RSS (MB).

    ``threads`` sets ``OPENBLAS_NUM_THREADS``/``OMP_NUM_THREADS`` for the child.
    """
    env = {**os.environ, "ARIA_PROGRESS": "0"}
    if threads:
        env.update(
            OPENBLAS_NUM_THREADS=str(threads),
            OMP_NUM_THREADS=str(threads),
            MKL_NUM_THREADS=str(threads),
        )
    with tempfile.TemporaryFile() as errf:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=errf, env=env)
        out_b = proc.stdout.read() if proc.stdout else b""
        _, status, usage = os.wait4(proc.pid, 0)  # rusage of this child alone
        proc.returncode = os.waitstatus_to_exitcode(status)
        errf.seek(0)
        err_b = errf.read()
    wall = time.perf_counter() - t0
    out, err = out_b.decode(), err_b.decode()
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd[:4]} failed ({proc.returncode}):\n{err[-3000:]}")
    rec: dict[str, Any] = {}
    if parse:
        lines = [ln for ln in out.splitlines() if ln.startswith("RESULT ")]
        rec = json.loads(lines[-1][7:]) if lines else json.loads(out)
    rec["wall_s"] = wall
    rec["cpu_s"] = usage.ru_utime + usage.ru_stime  # what a busy machine does not stretch
    rec["peak_rss_mb"] = usage.ru_maxrss / 1024.0  # Linux: kilobytes
    return rec


def child(name: str, *args: Any) -> list[str]:
    return [
        sys.executable,
        str(Path(__file__).resolve()),
        "--child",
        name,
        *[json.dumps(a) for a in args],
    ]


def agree(a: dict[str, Any], b: dict[str, Any]) -> dict[str, float]:
    return {k: abs(a[k] - b[k]) / max(abs(b[k]), 1e-12) for k in ("kappa", "r1", "r2_5", "p")}


def part_a(opts: argparse.Namespace, work: Path) -> dict[str, Any]:
    path = work / "a.npy"
    gen = run_child(child("gen", str(path), opts.rows, opts.cols, 1))
    print(
        f"(a) wrote {opts.rows} x {opts.cols} float32 ({gen['bytes'] / 1e9:.2f} GB) "
        f"in {gen['seconds']:.1f} s",
        flush=True,
    )
    naive = run_child(child("naive", str(path)), threads=opts.naive_threads)
    cli = [sys.executable, "-m", "aria_tda.cli", "diagnose", str(path), "--json"]
    if opts.chunk_rows:
        cli += ["--chunk-rows", str(opts.chunk_rows)]
    aria_cli = run_child(cli)
    aria_in = run_child(child("aria", str(path), opts.chunk_rows, opts.n_threads, None))
    gpu = None
    if opts.gpu:
        gpu = run_child(child("aria", str(path), opts.chunk_rows, None, "cuda"))
    return {
        "shape": [opts.rows, opts.cols],
        "naive": naive,
        "naive_blas_threads": opts.naive_threads or "library default",
        "aria_cli": aria_cli,
        "aria_phases": aria_in,
        "gpu": gpu,
        "speedup_wall": naive["wall_s"] / aria_cli["wall_s"],
        "memory_ratio": aria_cli["peak_rss_mb"] / naive["peak_rss_mb"],
        "relative_difference": agree(aria_cli, naive),
    }


def part_b(opts: argparse.Namespace, work: Path) -> dict[str, Any]:
    path = work / "b.npy"
    need = opts.big_rows * opts.big_cols * 4
    free = shutil.disk_usage(work).free
    if free < need * 1.1:
        raise SystemExit(f"(b) needs {need / 1e9:.1f} GB in {work}, only {free / 1e9:.1f} GB free")
    gen = run_child(child("gen", str(path), opts.big_rows, opts.big_cols, 2))
    print(
        f"(b) wrote {opts.big_rows} x {opts.big_cols} float32 ({gen['bytes'] / 1e9:.1f} GB) "
        f"in {gen['seconds']:.0f} s",
        flush=True,
    )
    from aria_tda.scores.readers import default_chunk_rows

    rows = opts.chunk_rows or default_chunk_rows((opts.big_rows, opts.big_cols), np.float32)
    # the GEMM references bracket the streaming run (the machine's load can change meanwhile)
    before = run_child(child("gemm", opts.big_cols, rows, opts.n_threads, 5))
    try:
        aria = run_child(child("aria", str(path), opts.chunk_rows, opts.n_threads, None))
    finally:
        if not opts.keep:
            path.unlink(missing_ok=True)
    after = run_child(child("gemm", opts.big_cols, rows, opts.n_threads, 5))
    ref_syrk = (before["syrk_gflops"] + after["syrk_gflops"]) / 2
    ref_sgemm = (before["sgemm_gflops"] + after["sgemm_gflops"]) / 2
    return {
        "shape": [opts.big_rows, opts.big_cols],
        "bytes": gen["bytes"],
        "aria": aria,
        "gemm": [before, after],
        "blas_threads_streaming": aria["blas_threads"],
        "reference_syrk_gflops": ref_syrk,
        "reference_sgemm_gflops": ref_sgemm,
        "fraction_of_inmemory_syrk": aria["gram_gflops"] / ref_syrk,
        "fraction_of_square_sgemm": aria["gram_gflops"] / ref_sgemm,
    }


def part_small(opts: argparse.Namespace, work: Path) -> dict[str, Any]:
    """(d) The light command on a small file: wall and peak RSS of each run (own process)."""
    path = work / "small.npy"
    rng = np.random.default_rng(3)
    np.save(path, rng.standard_normal((opts.small_rows, opts.small_cols)).astype(np.float32))
    script = Path(sys.executable).with_name("aria-tda")
    cmd = [str(script)] if script.exists() else [sys.executable, "-m", "aria_tda"]
    runs = [run_child([*cmd, "diagnose", str(path)], parse=False)
            for _ in range(opts.small_repeats)]
    walls = sorted(r["wall_s"] for r in runs)
    cpus = sorted(r["cpu_s"] for r in runs)
    return {
        "shape": [opts.small_rows, opts.small_cols],
        "command": " ".join([Path(cmd[0]).name, *cmd[1:], "diagnose", "small.npy"]),
        "runs": runs,
        "median_wall_s": walls[len(walls) // 2],
        "median_cpu_s": cpus[len(cpus) // 2],
        "load_average_1min": os.getloadavg()[0],
        "max_peak_rss_mb": max(r["peak_rss_mb"] for r in runs),
        "target": {"wall_s": 0.5, "peak_rss_mb": 120},
    }


def table(res: dict[str, Any]) -> str:
    lines = []
    sm = res.get("small")
    if sm:
        lines.append(
            f"(d) aria-tda diagnose of a {sm['shape'][0]} x {sm['shape'][1]} float32 .npy "
            f"({len(sm['runs'])} runs): median wall {sm['median_wall_s']:.2f} s (target <= 0.5; "
            f"CPU {sm['median_cpu_s']:.2f} s, load average {sm['load_average_1min']:.1f}), "
            f"peak RSS {sm['max_peak_rss_mb']:.0f} MB (target <= 120)"
        )
    a = res.get("a")
    if a:
        n, c, p = a["naive"], a["aria_cli"], a["aria_phases"]
        lines += [
            f"(a) {a['shape'][0]:,} x {a['shape'][1]:,} float32 .npy on disk",
            f"    {'route':<28}{'wall s':>9}{'peak RSS MB':>14}",
            f"    {'naive numpy (load+corrcoef+svd)':<28}{n['wall_s']:>9.2f}"
            f"{n['peak_rss_mb']:>14.0f}"
            f"   (load {n['load_s']:.2f}, corrcoef {n['corrcoef_s']:.2f}, svd {n['svd_s']:.2f})",
            f"    {'aria-tda diagnose (CLI)':<28}{c['wall_s']:>9.2f}{c['peak_rss_mb']:>14.0f}"
            f"   (Gram pass {p['gram_s']:.2f} s = {p['gram_gflops']:.0f} GFLOP/s, "
            f"finish {p['finish_s']:.2f} s)",
            f"    speed-up {a['speedup_wall']:.1f}x (target >= 5x); "
            f"memory {a['memory_ratio']:.3f} of naive "
            "(target <= 0.25); max relative difference "
            f"{max(a['relative_difference'].values()):.1e}",
        ]
        if a.get("gpu"):
            g = a["gpu"]
            lines.append(
                f"(c) GPU: Gram pass {g['gram_s']:.2f} s = {g['gram_gflops']:.0f} GFLOP/s, "
                f"total {g['seconds']:.2f} s"
            )
    if "gpu_skipped" in res:
        lines.append(f"(c) GPU: skipped ({res['gpu_skipped']})")
    b = res.get("b")
    if b:
        ar = b["aria"]
        lines += [
            f"(b) {b['shape'][0]:,} x {b['shape'][1]:,} float32 out of core "
            f"({b['bytes'] / 1e9:.1f} GB)",
            f"    Gram pass {ar['gram_s']:.1f} s = {ar['gram_gflops']:.1f} GFLOP/s "
            "(2*M*T^2 flops), "
            f"total {ar['wall_s']:.1f} s, peak RSS {ar['peak_rss_mb']:.0f} MB (target < 2048)",
        ]
        for when, g in zip(("before", "after"), b["gemm"], strict=True):
            lines.append(
                f"    in-memory float32 {when}: b.T@b on {ar['chunk_rows']} x {b['shape'][1]} = "
                f"{g['syrk_gflops']:.1f} GFLOP/s; square sgemm n={b['shape'][1]} = "
                f"{g['sgemm_gflops']:.1f} GFLOP/s"
            )
        lines.append(
            "    achieved / in-memory b.T@b (mean of before/after) = "
            f"{b['fraction_of_inmemory_syrk']:.2f}; "
            f"achieved / square sgemm = {b['fraction_of_square_sgemm']:.2f} (target >= 0.70); "
            f"{b['blas_threads_streaming']} BLAS thread(s) throughout"
        )
    return "\n".join(lines)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        _child_main(sys.argv[2:])
        return
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--rows", type=int, default=200_000, help="(a) rows M")
    ap.add_argument("--cols", type=int, default=1_000, help="(a) columns T")
    ap.add_argument("--big-rows", type=int, default=2_000_000, help="(b) rows M")
    ap.add_argument("--big-cols", type=int, default=2_000, help="(b) columns T")
    ap.add_argument("--skip-a", action="store_true", help="skip (a)")
    ap.add_argument("--small", action="store_true", help="also (d): the light command")
    ap.add_argument("--small-rows", type=int, default=500, help="(d) rows")
    ap.add_argument("--small-cols", type=int, default=20, help="(d) columns")
    ap.add_argument("--small-repeats", type=int, default=5, help="(d) runs")
    ap.add_argument("--skip-big", action="store_true", help="skip (b)")
    ap.add_argument(
        "--chunk-rows", type=int, default=None, help="rows per block (default: the engine's)"
    )
    ap.add_argument(
        "--n-threads",
        type=int,
        default=None,
        help="BLAS threads in the pass (default: the engine's)",
    )
    ap.add_argument(
        "--naive-threads",
        type=int,
        default=None,
        help="BLAS threads of the naive route (default: the library default)",
    )
    ap.add_argument("--tmp", default=tempfile.gettempdir(), help="where the matrices are written")
    ap.add_argument("--keep", action="store_true", help="keep the generated files")
    ap.add_argument(
        "--out", default=str(HERE / "results" / "bench_diagnose.json"), help="JSON output"
    )
    opts = ap.parse_args()

    res: dict[str, Any] = {
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
            "numpy": np.__version__,
        },
        "started": time.strftime("%Y-%m-%d %H:%M:%S"),
        "load_average_1min_at_start": os.getloadavg()[0],
    }
    # asked in a child: torch in this process would count in every child's peak RSS (a child
    # is forked from this process, and ru_maxrss keeps its size from before the exec)
    probe = run_child(child("gpu"))
    opts.gpu = bool(probe.get("gpu"))
    if opts.gpu:
        res["machine"]["gpu"] = probe["gpu"]
    else:
        res["gpu_skipped"] = probe["why"]
    work = Path(tempfile.mkdtemp(prefix="aria-bench-", dir=opts.tmp))
    try:
        if not opts.skip_a:
            res["a"] = part_a(opts, work)
        if opts.small:
            res["small"] = part_small(opts, work)
        if not opts.skip_big:
            res["b"] = part_b(opts, work)
    finally:
        if not opts.keep:
            shutil.rmtree(work, ignore_errors=True)
    print(table(res))
    out = Path(opts.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(res, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
