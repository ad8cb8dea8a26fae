"""Cost of the top-K concentration beside the diagnostics pass, in the same run.

Writes a float32 ``.npy`` (rank-5 structure + noise + per-column offsets, streamed to
``--tmp``) and times, alternately and ``--repeat`` times each (the best time counts), the
diagnostics' streaming Gram pass (:func:`aria_tda.scores.stats.stream_stats`) without and with a
:class:`aria_tda.diagnostics.concentration.TopKAccumulator` observer — the very pass
:func:`aria_tda.diagnostics.diagnose` runs with ``topk=`` — for each ``--ks`` list (default: the
``aria-tda diagnose`` default 1,10 and the study's 1,20,...,500). Reports the ratio
(target: <= 1.2) and the accumulator's update time on the blocks in memory. A warm-up pass reads
the file once first, so both passes see the same page cache.

``--paper`` runs the paper's fine stage, 1,005,520 x 7,148 (28.8 GB on disk; needs that much
free space under ``--tmp``, and hours on a CPU — use ``--device cuda`` on a GPU machine).

Usage::

    .venv/bin/python benchmarks/bench_concentration.py                  # 200,000 x 1,000
    .venv/bin/python benchmarks/bench_concentration.py --rows 100000 --cols 2000
    .venv/bin/python benchmarks/bench_concentration.py --paper --device cuda --tmp /scratch

Prints a table and writes JSON (``--out``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
PAPER = (1_005_520, 7_148)
STUDY_KS = (1, 20, 50, 100, 200, 300, 400, 500)


def generate(path: Path, m: int, t: int, seed: int) -> float:
    """Stream the float32 ``(m, t)`` .npy of ``bench_diagnose.py`` (rank 5 + noise + offsets)
    to ``path``; return the seconds it took."""
    from bench_diagnose import child_gen  # the sibling script (benchmarks/ is on sys.path)

    return float(child_gen(str(path), m, t, seed)["seconds"])


def one_pass(path: Path, ks: tuple[int, ...] | None, args: argparse.Namespace) -> float:
    """Seconds of one diagnostics pass, with a top-K observer when ``ks`` is given."""
    from aria_tda.diagnostics.concentration import TopKAccumulator
    from aria_tda.scores import open_scores
    from aria_tda.scores.stats import stream_stats

    src = open_scores(path)
    obs = () if ks is None else (TopKAccumulator(src.n_cols, ks, n_rows=src.n_rows),)
    t0 = time.perf_counter()
    stream_stats(src, chunk_rows=args.chunk_rows, device=args.device, progress=False,
                 observers=obs)
    if obs:
        obs[0].result()
    secs = time.perf_counter() - t0
    src.close()
    return secs


def update_only(path: Path, ks: tuple[int, ...], args: argparse.Namespace) -> float:
    """Seconds the accumulator spends on the blocks alone (reads not counted)."""
    from aria_tda.diagnostics.concentration import TopKAccumulator
    from aria_tda.scores import open_scores

    src = open_scores(path)
    acc = TopKAccumulator(src.n_cols, ks, n_rows=src.n_rows)
    spent = 0.0
    for s, block in src.iter_chunks(args.chunk_rows, reuse_buffers=True):
        if args.device is not None:
            import torch

            block = torch.from_numpy(block).to(args.device)
        t0 = time.perf_counter()
        acc.update(block, s)
        if args.device is not None and str(args.device).startswith("cuda"):
            torch.cuda.synchronize()
        spent += time.perf_counter() - t0
    t0 = time.perf_counter()
    acc.result()
    src.close()
    return spent + time.perf_counter() - t0


def run(args: argparse.Namespace) -> dict[str, Any]:
    m, t = PAPER if args.paper else (args.rows, args.cols)
    tmp = Path(tempfile.mkdtemp(prefix="aria-bench-topk-", dir=args.tmp))
    path = tmp / "scores.npy"
    rec: dict[str, Any] = {"rows": m, "cols": t, "device": args.device or "cpu",
                           "chunk_rows": args.chunk_rows, "repeat": args.repeat,
                           "machine": platform.machine(), "cpus": os.cpu_count()}
    try:
        rec["generate_seconds"] = generate(path, m, t, args.seed)
        one_pass(path, (1,), args)  # warm-up: numba compile, page cache
        rec["results"] = []
        for ks in args.ks:
            base, with_k = [], []
            for _ in range(args.repeat):
                base.append(one_pass(path, None, args))
                with_k.append(one_pass(path, ks, args))
            row = {"ks": list(ks), "pass_seconds": min(base), "pass_topk_seconds": min(with_k),
                   "ratio": min(with_k) / min(base), "update_seconds": update_only(path, ks, args),
                   "all_pass_seconds": base, "all_pass_topk_seconds": with_k}
            rec["results"].append(row)
            print(f"K={','.join(map(str, ks)):<28} pass {row['pass_seconds']:8.2f} s   "
                  f"with top-K {row['pass_topk_seconds']:8.2f} s   ratio {row['ratio']:.3f}   "
                  f"(updates alone {row['update_seconds']:.2f} s)", flush=True)
    finally:
        if not args.keep:
            path.unlink(missing_ok=True)
            tmp.rmdir()
    return rec


def _ks(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.split(","))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=200_000, help="rows M (default 200,000)")
    ap.add_argument("--cols", type=int, default=1_000, help="columns T (default 1,000)")
    ap.add_argument("--paper", action="store_true",
                    help=f"the paper's fine stage, {PAPER[0]:,} x {PAPER[1]:,} (28.8 GB)")
    ap.add_argument("--ks", type=_ks, nargs="+", default=[(1, 10), STUDY_KS],
                    metavar="K,K", help="K lists to time (default: 1,10 and the study's)")
    ap.add_argument("--chunk-rows", type=int, default=None, help="rows per block")
    ap.add_argument("--device", default=None, help="torch device of the pass, e.g. cuda")
    ap.add_argument("--repeat", type=int, default=3, help="passes of each kind (best counts)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tmp", default=tempfile.gettempdir(), help="where the matrix is written")
    ap.add_argument("--keep", action="store_true", help="keep the generated file")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "bench_concentration.json")
    args = ap.parse_args()
    rec = run(args)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(rec, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
