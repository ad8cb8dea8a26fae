"""Benchmark of the embedding-retrieval baselines (issue 11).

(a) The cosine-score step at the paper's size: ``--n-train`` x ``--n-queries`` (default
    67,219 x 7,148) with ``--dim`` 768, random float32 embeddings written to ``.npy``.
    Streamed (:func:`aria_tda.embed.retrieval.cosine_scores` into a
    :class:`~aria_tda.scores.writers.ScoreWriter` ``.npy``, training rows read block by block from
    the file) at the default block and at a quarter of it, vs the naive in-memory route
    ``normalize(A) @ normalize(B).T`` (then ``np.save``). Each route runs in its own process;
    wall time and peak RSS (``ru_maxrss``) are its own. The streamed peak should follow the
    block (one block of scores + one block of embeddings + the normalised queries), the naive
    one the full matrix (N x T x 4 bytes). The two results are compared on sampled rows.
(b) Seconds per 30 s track per core (torch with 1 thread) of each published encoder's full
    architecture with random weights (``save_random_checkpoint`` of
    :mod:`aria_tda.embed.encoders.mert`, :mod:`aria_tda.embed.encoders.clap`,
    :mod:`aria_tda.embed.encoders.clews`; an encoder whose module or function is missing is
    skipped with a message), loaded through
    :func:`aria_tda.embed.load_encoder`, on random noise; and of the demo-trained encoders when
    ``--checkpoints DIR`` holds their ``<name>.pt``
    (``aria_tda_experiments.audio.encoders.train_demo_encoders``). Includes the resampling from 44.1
    kHz (what ``aria-tda embed`` does per file) separately.

Usage::

    .venv/bin/python benchmarks/bench_embed.py --part a
    .venv/bin/python benchmarks/bench_embed.py --part b [--checkpoints DIR]
    .venv/bin/python benchmarks/bench_embed.py --n-train 5000 --n-queries 500   # quick

Writes JSON (``--out``, default ``benchmarks/results/bench_embed.json``; a part not run keeps
its previous entry).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
GEN_ROWS = 8192


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KiB on Linux


class NpyRows:
    """Row blocks of a 2-D ``.npy`` read from the file on demand (no memory map kept)."""

    def __init__(self, path: str) -> None:
        m = np.load(path, mmap_mode="r")  # header only; the map is dropped at once
        self.offset, self.shape, self.dtype = int(m.offset), tuple(m.shape), m.dtype
        del m
        self.path = path

    def __getitem__(self, rows: slice) -> np.ndarray:
        start, stop, _ = rows.indices(self.shape[0])
        width = self.shape[1] * self.dtype.itemsize
        with open(self.path, "rb") as fh:
            fh.seek(self.offset + start * width)
            data = np.fromfile(fh, dtype=self.dtype, count=(stop - start) * self.shape[1])
        return data.reshape(stop - start, self.shape[1])


# ---------------------------------------------------------------------------------- children
def child_gen(path: str, n: int, d: int, seed: int) -> dict[str, Any]:
    """Write random float32 embeddings (n, d) with a shared mean direction, streamed."""
    rng = np.random.default_rng(seed)
    mean = np.random.default_rng(0).standard_normal(d).astype(np.float32)
    header = {"descr": "<f4", "fortran_order": False, "shape": (n, d)}
    with open(path, "wb") as fh:
        np.lib.format.write_array_header_2_0(fh, header)
        for s in range(0, n, GEN_ROWS):
            block = rng.standard_normal((min(GEN_ROWS, n - s), d), dtype=np.float32) + mean
            fh.write(block.tobytes())
    return {"bytes": os.path.getsize(path)}


def child_streamed(a: str, b: str, out: str, block_rows: int | None) -> dict[str, Any]:
    """aria's route: stream train rows from the file, write score row blocks to .npy."""
    from aria_tda.embed.retrieval import cosine_scores, default_block_rows
    from aria_tda.scores.writers import ScoreWriter

    imports_mb = _peak_mb()
    t0 = time.perf_counter()
    train = NpyRows(a)
    queries = np.load(b)
    rows = block_rows or default_block_rows(queries.shape[0])
    with ScoreWriter(out, shape=(train.shape[0], queries.shape[0]), dtype=np.float32,
                     kind="track_scores") as w:
        cosine_scores(train, queries, block_rows=rows, out=w)
    return {"wall_s": time.perf_counter() - t0, "peak_rss_mb": _peak_mb(),
            "rss_after_imports_mb": imports_mb, "block_rows": rows,
            "block_mb": rows * queries.shape[0] * 4 / 2**20}


def child_naive(a: str, b: str, out: str, sample: str) -> dict[str, Any]:
    """The naive route: load both, normalise, one GEMM, save."""
    imports_mb = _peak_mb()
    t0 = time.perf_counter()
    x, q = np.load(a), np.load(b)
    t_load = time.perf_counter()
    s = (x / np.linalg.norm(x, axis=1, keepdims=True)) @ (
        q / np.linalg.norm(q, axis=1, keepdims=True)).T
    t_gemm = time.perf_counter()
    np.save(out, s)
    t_save = time.perf_counter()
    np.save(sample, s[::997])
    return {"wall_s": t_save - t0, "load_s": t_load - t0, "compute_s": t_gemm - t_load,
            "save_s": t_save - t_gemm, "peak_rss_mb": _peak_mb(),
            "rss_after_imports_mb": imports_mb, "dtype": str(s.dtype)}


def _child(args: list[str]) -> dict[str, Any]:
    env = dict(os.environ, ARIA_PROGRESS="0")
    res = subprocess.run([sys.executable, __file__, "--child", *args], capture_output=True,
                         text=True, env=env, check=False)
    if res.returncode != 0:
        raise RuntimeError(f"child {args[0]} failed:\n{res.stderr[-3000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------------------------- part a
def part_a(args: argparse.Namespace) -> dict[str, Any]:
    from aria_tda.embed.retrieval import default_block_rows

    n, t, d = args.n_train, args.n_queries, args.dim
    full_mb = n * t * 4 / 2**20
    with tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
        a, b = f"{tmp}/train.npy", f"{tmp}/queries.npy"
        _child(["gen", a, str(n), str(d), "1"])
        _child(["gen", b, str(t), str(d), "2"])
        base = default_block_rows(t)
        out: dict[str, Any] = {"n_train": n, "n_queries": t, "dim": d,
                               "full_matrix_mb": full_mb, "inputs_mb": (n + t) * d * 4 / 2**20}
        for label, rows in (("streamed_default_block", base),
                            ("streamed_quarter_block", max(1, base // 4))):
            r = _child(["streamed", a, b, f"{tmp}/{label}.npy", str(rows)])
            out[label] = r
            print(f"{label:24s} {r['wall_s']:7.1f} s  peak RSS {r['peak_rss_mb']:7.0f} MB  "
                  f"(block {r['block_rows']} rows = {r['block_mb']:.0f} MB of scores)", flush=True)
            if label != "streamed_default_block":
                os.remove(f"{tmp}/{label}.npy")
        r = _child(["naive", a, b, f"{tmp}/naive.npy", f"{tmp}/sample.npy"])
        out["naive"] = r
        print(f"{'naive in-memory':24s} {r['wall_s']:7.1f} s  peak RSS {r['peak_rss_mb']:7.0f} MB "
              f"(compute {r['compute_s']:.1f} s, save {r['save_s']:.1f} s)", flush=True)
        got = np.load(f"{tmp}/streamed_default_block.npy", mmap_mode="r")[::997]
        want = np.load(f"{tmp}/sample.npy")
        out["max_abs_diff_sampled_rows"] = float(np.max(np.abs(got - want)))
        print(f"max |streamed - naive| on {want.shape[0]} sampled rows: "
              f"{out['max_abs_diff_sampled_rows']:.2e}")
    return out


# ---------------------------------------------------------------------------------- part b
def _time_encoder(enc: Any, seconds: float, reps: int) -> dict[str, Any]:
    rng = np.random.default_rng(0)
    y = (0.1 * rng.standard_normal(int(seconds * enc.sample_rate))).astype(np.float32)
    enc.embed(y)  # warm-up
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        e = enc.embed(y)
        times.append(time.perf_counter() - t0)
    return {"s_per_track": min(times), "all_s": times, "dim": int(np.asarray(e).shape[0]),
            "sample_rate": enc.sample_rate}


def part_b(args: argparse.Namespace) -> dict[str, Any]:
    import importlib

    import torch

    from aria_tda.embed.audio import resample
    from aria_tda.embed.encoders import load_encoder

    torch.set_num_threads(1)
    out: dict[str, Any] = {"track_seconds": args.track_seconds, "torch_threads": 1,
                           "encoders": {}, "skipped": {}}
    y44 = np.random.default_rng(0).standard_normal(int(args.track_seconds * 44_100))
    resample(y44[:44_100].astype(np.float32), 44_100, 16_000)  # warm-up (scipy's import)
    for rate in (16_000, 24_000, 48_000):
        t0 = time.perf_counter()
        resample(y44.astype(np.float32), 44_100, rate)
        out[f"resample_44k1_to_{rate}_s"] = time.perf_counter() - t0
    with tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
        for name in ("mert", "clap", "clews"):
            try:
                mod = importlib.import_module(f"aria_tda.embed.encoders.{name}")
                save = mod.save_random_checkpoint
            except (ImportError, AttributeError) as exc:
                out["skipped"][name] = f"no save_random_checkpoint yet ({exc})"
                print(f"{name}: skipped ({exc})", flush=True)
                continue
            path = save(Path(tmp) / name, seed=0)
            enc = load_encoder(name, weights=path)
            r = _time_encoder(enc, args.track_seconds, args.reps)
            r["info"] = {k: v for k, v in enc.info().items() if k not in ("weights", "versions")}
            out["encoders"][name] = r
            print(f"{name:12s} {r['s_per_track']:7.2f} s per {args.track_seconds:.0f} s track "
                  f"per core ({r['dim']}-d)", flush=True)
            del enc
    if args.checkpoints:
        for name in ("clews-style", "mert-style", "clap-style"):
            path = Path(args.checkpoints) / f"{name}.pt"
            if not path.is_file():
                out["skipped"][name] = f"no {path}"
                continue
            enc = load_encoder(name, weights=path)
            r = _time_encoder(enc, args.track_seconds, args.reps)
            r["checkpoint"] = str(path)
            model: Any = getattr(enc, "model", None)
            r["n_parameters"] = (int(sum(q.numel() for q in model.parameters()))
                                 if hasattr(model, "parameters") else None)
            out["encoders"][name] = r
            print(f"{name:12s} {r['s_per_track']:7.2f} s per {args.track_seconds:.0f} s track "
                  f"per core ({r['dim']}-d)", flush=True)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--part", choices=("a", "b", "all"), default="all")
    p.add_argument("--n-train", type=int, default=67_219)
    p.add_argument("--n-queries", type=int, default=7_148)
    p.add_argument("--dim", type=int, default=768)
    p.add_argument("--track-seconds", type=float, default=30.0)
    p.add_argument("--reps", type=int, default=2)
    p.add_argument("--checkpoints", default=None, help="folder of the demo encoders' .pt files")
    p.add_argument("--tmp", default=None, help="scratch folder (needs ~2 x N x T x 4 bytes)")
    p.add_argument("--out", default=str(HERE / "results" / "bench_embed.json"))
    args = p.parse_args()
    result: dict[str, Any] = {}
    if Path(args.out).is_file():
        result = json.loads(Path(args.out).read_text())
    result["machine"] = {"cpus": os.cpu_count(), "platform": platform.platform(),
                         "python": platform.python_version(), "numpy": np.__version__}
    result["started"] = time.strftime("%Y-%m-%d %H:%M:%S")
    if args.part in ("a", "all"):
        result["a"] = part_a(args)
    if args.part in ("b", "all"):
        result["b"] = part_b(args)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(f"-> {args.out}")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        kind, rest = sys.argv[2], sys.argv[3:]
        if kind == "gen":
            res = child_gen(rest[0], int(rest[1]), int(rest[2]), int(rest[3]))
        elif kind == "streamed":
            res = child_streamed(rest[0], rest[1], rest[2], int(rest[3]))
        else:
            res = child_naive(rest[0], rest[1], rest[2], rest[3])
        print(json.dumps(res))
    else:
        main()
