"""Calibration of the top-K collapse rule of :mod:`aria_tda.verdict` on planted score matrices.

The rule and its thresholds were written into the verdict's docstring first (rule 3 of
``collapsed``: a chance-corrected top-1 share or top-K overlap >= 0.5; suspect >= 0.25), then
set on one seed here (``--seeds 0``: 0.3 and 0.1) and reported on others. Each verdict is
given twice: with the K of ``aria-tda diagnose`` (1, 10) and with 1, 10, 50. Each planted matrix
``S`` (``M`` training rows x ``T`` queries, float32) has a known reading:

- ``healthy``: i.i.d. N(0, 1) scores — every query ranks differently: *ok*;
- ``clustered``: N(0, 1) plus a per-class row profile N(0, 0.5²) shared by the queries of one
  of 10 classes (a genre effect) — query-dependent retrieval: *ok*;
- ``offset``: healthy plus a per-query constant (50 ± 5): p ≈ 1, rankings unchanged: *suspect*
  (the p rule), never collapsed;
- ``rank-1``: :math:`a\\,u v^\\top` + noise with ``v`` ≈ constant (r₁ ≈ 0.9): *collapsed*;
- ``dominant``: 1 % of the rows get a large positive score (6 ± 1, the same for every query)
  — every query's top-10 lies in the same handful of rows: *collapsed* (top-K overlap);
- ``signflip-10`` / ``signflip-2``: 1 % of the rows get a large score (log-normal magnitudes
  around 6.5) whose sign depends on the query's class (10 or 2 classes, a random sign per row
  and class) — κ stays low, v₁ is not constant, yet the strongest positive row of each class
  is every query's top-1: *collapsed* (top-1 share, or top-1 overlap with 2 classes).

Usage::

    .venv/bin/python experiments/scripts/calibrate_concentration.py --seeds 0
    .venv/bin/python experiments/scripts/calibrate_concentration.py --seeds 0 1 2 3 4 \\
        --out experiments/results/concentration_calibration.md
"""

from __future__ import annotations

import argparse
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np

#: (M, T) of the planted matrices: the issue's small MLP and a larger one.
SIZES = ((1500, 100), (20000, 400))
KS = (1, 10, 50)
#: the K of ``aria-tda diagnose``
KS_CLI = (1, 10)


def _classes(rng: np.random.Generator, t: int, c: int) -> np.ndarray:
    return rng.integers(0, c, t)


def healthy(rng: np.random.Generator, m: int, t: int) -> np.ndarray:
    return rng.standard_normal((m, t))


def clustered(rng: np.random.Generator, m: int, t: int) -> np.ndarray:
    y = _classes(rng, t, 10)
    profile = 0.5 * rng.standard_normal((m, 10))
    return rng.standard_normal((m, t)) + profile[:, y]


def offset(rng: np.random.Generator, m: int, t: int) -> np.ndarray:
    return rng.standard_normal((m, t)) + (50.0 + 5.0 * rng.standard_normal(t))


def rank1(rng: np.random.Generator, m: int, t: int) -> np.ndarray:
    u = rng.standard_normal(m)
    v = 1.0 + 0.1 * rng.standard_normal(t)
    return 3.0 * np.outer(u, v) + rng.standard_normal((m, t))


def dominant(rng: np.random.Generator, m: int, t: int) -> np.ndarray:
    s = rng.standard_normal((m, t))
    d = rng.choice(m, size=max(1, m // 100), replace=False)
    s[d] += 6.0 + rng.standard_normal(d.size)[:, None]
    return s


def _signflip(rng: np.random.Generator, m: int, t: int, c: int) -> np.ndarray:
    s = rng.standard_normal((m, t))
    y = _classes(rng, t, c)
    d = rng.choice(m, size=max(1, m // 100), replace=False)
    mag = 6.5 * np.exp(0.3 * rng.standard_normal(d.size))
    sign = rng.choice([-1.0, 1.0], size=(d.size, c))
    s[d] += mag[:, None] * sign[:, y]
    return s


def signflip10(rng: np.random.Generator, m: int, t: int) -> np.ndarray:
    return _signflip(rng, m, t, 10)


def signflip2(rng: np.random.Generator, m: int, t: int) -> np.ndarray:
    return _signflip(rng, m, t, 2)


#: case -> (generator, expected verdict, the rule expected to decide it)
CASES: dict[str, tuple[Callable[..., np.ndarray], str]] = {
    "healthy": (healthy, "ok"),
    "clustered": (clustered, "ok"),
    "offset": (offset, "suspect"),
    "rank-1": (rank1, "collapsed"),
    "dominant": (dominant, "collapsed"),
    "signflip-10": (signflip10, "collapsed"),
    "signflip-2": (signflip2, "collapsed"),
}


def run(seeds: list[int]) -> tuple[list[dict], float]:
    from aria_tda.diagnostics import diagnose
    from aria_tda.verdict import classify

    rows = []
    t0 = time.perf_counter()
    for seed in seeds:
        for m, t in SIZES:
            for name, (gen, want) in CASES.items():
                rng = np.random.default_rng([seed, m, t, list(CASES).index(name)])
                s = gen(rng, m, t).astype(np.float32)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    d = diagnose(s, topk=KS)
                c = d.concentration
                base = classify(kappa=d.kappa, r1=d.r1, r2_5=d.r2_5, p=d.p,
                                v1_constancy=d.v1_constancy)
                v = classify(kappa=d.kappa, r1=d.r1, r2_5=d.r2_5, p=d.p,
                             v1_constancy=d.v1_constancy, concentration=c)
                cli = c.to_dict()
                cli.update(ks=list(KS_CLI), mean_overlap=cli["mean_overlap"][: len(KS_CLI)])
                v_cli = classify(kappa=d.kappa, r1=d.r1, r2_5=d.r2_5, p=d.p,
                                 v1_constancy=d.v1_constancy, concentration=cli)
                share_c = max(1 / t, 1 / m)
                rows.append({
                    "seed": seed, "M": m, "T": t, "case": name, "want": want,
                    "kappa": d.kappa, "r1": d.r1, "p": d.p, "v1c": d.v1_constancy,
                    "top1": c.top1_share, "e1share": (c.top1_share - share_c) / (1 - share_c),
                    "o1": c.mean_overlap[0], "o10": c.mean_overlap[1],
                    "e10": c.overlap_excess(10), "d10": c.distinct_ratio[1],
                    "e50": c.overlap_excess(50), "before": base.label, "cli": v_cli.label,
                    "after": v.label, "reason": v.reason,
                })
    return rows, time.perf_counter() - t0


def table(rows: list[dict]) -> str:
    head = ("| seed | M × T | case | κ | r₁ | p | v₁ const. | top-1 share | top-1 overlap | "
            "top-10 overlap (corr.) | top-50 corr. | distinct@10 | verdict before | "
            "now, K=1,10 | now, K=1,10,50 | expected |")
    out = [head, "|" + "---|" * 16]
    for r in rows:
        mark = "" if r["after"] == r["want"] else " ✗"
        out.append(
            f"| {r['seed']} | {r['M']:,} × {r['T']} | {r['case']} | {r['kappa']:.3f} | "
            f"{r['r1']:.3f} | {r['p']:.3f} | {r['v1c']:.3f} | {r['top1']:.3f} | {r['o1']:.3f} | "
            f"{r['o10']:.3f} ({r['e10']:.3f}) | {r['e50']:.3f} | {r['d10']:.3f} | "
            f"{r['before']} | {r['cli']} | **{r['after']}**{mark} | {r['want']} |"
        )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0])
    ap.add_argument("--out", type=Path, default=None, help="append the markdown table here")
    args = ap.parse_args(argv)
    rows, secs = run(args.seeds)
    text = table(rows)
    wrong = [r for r in rows if r["after"] != r["want"]]
    summary = (f"{len(rows) - len(wrong)} of {len(rows)} planted matrices get the expected "
               f"verdict (seeds {args.seeds}, {secs:.0f} s)")
    print(text)
    print()
    print(summary)
    for r in wrong:
        print(f"  unexpected: seed {r['seed']} {r['M']}x{r['T']} {r['case']}: {r['after']} "
              f"({r['reason']})")
    if args.out is not None:
        with open(args.out, "a", encoding="utf-8") as fh:
            fh.write(f"\n## seeds {args.seeds}\n\n{text}\n\n{summary}\n")
    return 0 if not wrong else 1


if __name__ == "__main__":
    raise SystemExit(main())
