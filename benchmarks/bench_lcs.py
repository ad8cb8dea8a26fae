"""Chord-progression LCS throughput: bit-parallel kernels vs exact DP, in the same run.

Usage::

    .venv/bin/python benchmarks/bench_lcs.py [--n-seqs 20000] [--group 500] [--groups 20]

Measures pairs/s on ONE core (no threads) for root-motion sequences (alphabet 12):

- ``group``   — :meth:`SequenceFeature._group_colsums` on groups of ``--group`` tracks, the
  path homogeneity uses (one column fixed, bit vectors of all earlier rows updated together);
- ``pairs``   — scalar bit-parallel LCS over a list of pairs (:meth:`pair_similarity`);
- ``dp-numba``— the textbook O(|a||b|) dynamic program compiled with numba (exact reference);
- ``dp-python`` — :func:`aria_tda.similarity.lcs_length_reference` (the reference used in tests).

Length regimes: uniform in [0, L] for L in 16, 32, 64 and 128 (multi-word masks). Every fast
result is checked against the numba DP on the measured pairs. Target (issue 3): >= 1,000,000
pairs/s on one core for lengths <= 64.
"""

from __future__ import annotations

import argparse
import json
import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import numba as nb
import numpy as np

from aria_tda.features.registry import feature_spec
from aria_tda.similarity import lcs_length_reference, prepare_feature


@nb.njit(cache=True, nogil=True)
def _dp_pairs(flat, offsets, ii, jj, out):  # pragma: no cover - numba
    row = np.zeros(1024, dtype=np.int64)
    for t in range(ii.size):
        a0, a1 = offsets[ii[t]], offsets[ii[t] + 1]
        b0, b1 = offsets[jj[t]], offsets[jj[t] + 1]
        lb = b1 - b0
        for j in range(lb + 1):
            row[j] = 0
        for p in range(a0, a1):
            prev_diag = 0
            for j in range(1, lb + 1):
                tmp = row[j]
                if flat[p] == flat[b0 + j - 1]:
                    row[j] = prev_diag + 1
                elif row[j - 1] > row[j]:
                    row[j] = row[j - 1]
                prev_diag = tmp
        out[t] = row[lb]


def _time(fn, *, min_time: float = 0.5) -> float:
    fn()  # warm-up / compile
    reps, t0 = 0, time.perf_counter()
    while True:
        fn()
        reps += 1
        dt = time.perf_counter() - t0
        if dt >= min_time:
            return dt / reps


def run(n_seqs: int, group: int, n_groups: int, seed: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    spec = feature_spec("audio", "chord_progression")
    rows = []
    for max_len in (16, 32, 64, 128):
        seqs = [rng.integers(0, 12, rng.integers(0, max_len + 1)) for _ in range(n_seqs)]
        pf = prepare_feature(spec, seqs)
        groups = [rng.choice(n_seqs, group, replace=False) for _ in range(n_groups)]
        colsum = np.empty(group)
        pairs_per_group = group * (group - 1) // 2

        def do_groups(pf=pf, groups=groups, colsum=colsum) -> None:
            for g in groups:
                pf._group_colsums(g, colsum)

        t_group = _time(do_groups) / (n_groups * pairs_per_group)

        iu, ju = np.triu_indices(group, 1)
        g0 = groups[0]
        ii, jj = g0[iu], g0[ju]
        t_pairs = _time(lambda pf=pf, ii=ii, jj=jj: pf.pair_similarity(ii, jj)) / ii.size

        dp = np.empty(ii.size, dtype=np.int64)
        t_dp = (
            _time(lambda pf=pf, ii=ii, jj=jj, dp=dp: _dp_pairs(pf.flat, pf.offsets, ii, jj, dp))
            / ii.size
        )

        # correctness on the measured pairs: bit-parallel == DP
        block = pf.pairwise(g0)
        lens = pf.lengths
        m = np.maximum(lens[ii], lens[jj])
        want = np.where(m == 0, 1.0, dp / np.maximum(m, 1))
        ok = bool(
            np.array_equal(block[iu, ju], want) and np.array_equal(pf.pair_similarity(ii, jj), want)
        )

        n_py = 300
        t0 = time.perf_counter()
        for a, b in zip(ii[:n_py], jj[:n_py], strict=True):
            lcs_length_reference(seqs[a], seqs[b])
        t_py = (time.perf_counter() - t0) / n_py

        rows.append(
            {
                "max_len": max_len,
                "group_pairs_per_s": 1 / t_group,
                "pairs_per_s": 1 / t_pairs,
                "dp_numba_pairs_per_s": 1 / t_dp,
                "dp_python_pairs_per_s": 1 / t_py,
                "speedup_group_vs_dp_numba": t_dp / t_group,
                "exact": ok,
            }
        )
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-seqs", type=int, default=20000)
    ap.add_argument("--group", type=int, default=500)
    ap.add_argument("--groups", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", action="store_true", help="print JSON instead of a table")
    a = ap.parse_args()
    rows = run(a.n_seqs, a.group, a.groups, a.seed)
    if a.json:
        print(json.dumps(rows, indent=2))
        return 0
    print(
        f"LCS similarity, one core, groups of {a.group} "
        "(alphabet 12, lengths uniform in [0, max_len])"
    )
    print(
        f"{'max_len':>7} {'group Mpairs/s':>15} {'pairs Mpairs/s':>15} {'DP-numba Mpairs/s':>18} "
        f"{'DP-py kpairs/s':>15} {'group/DP':>9} {'exact':>6}"
    )
    for r in rows:
        print(
            f"{r['max_len']:>7} {r['group_pairs_per_s'] / 1e6:>15.1f} "
            f"{r['pairs_per_s'] / 1e6:>15.1f} "
            f"{r['dp_numba_pairs_per_s'] / 1e6:>18.2f} {r['dp_python_pairs_per_s'] / 1e3:>15.2f} "
            f"{r['speedup_group_vs_dp_numba']:>9.1f} {r['exact']!s:>6}"
        )
    return 0 if all(r["exact"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
