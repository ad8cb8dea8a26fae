"""Homogeneity at paper scale: one setting's full K-sweep, original and rank-1 residual.

Usage::

    .venv/bin/python benchmarks/bench_homogeneity.py                 # paper scale
                                                                     # (N=67,219, T=7,148)
    .venv/bin/python benchmarks/bench_homogeneity.py --n 5000 --t 500   # quick run

Synthetic data of the paper's audio experiment size (issue 4): N tracks with the audio
channel set's features — rhythm (16, 16), harmony (12, 6 + chord root-motion sequences of
length 0..64), timbre (26, 168) — and a float32 ``S_track`` (N x T) written to ``--workdir``
as ``.npy`` (streamed from disk, never held in memory). Scores carry a popularity axis
(rank-1), a cluster ("genre") affinity and noise, so groups are neither random nor identical.

Timed stages (the target, <= 10 min on the 2-core machine, covers null + original + residual):

1. ``prepare``   — corpus scales, standardised features, LCS match masks;
2. ``null``      — B random groups for every K (computed once, reused by both variants);
3. ``groups``    — streaming top-K_max per query (original);
4. ``homog``     — g_d / z_c for every K from one K_max block per query (original);
5. ``rank1``     — leading singular triple by the score engine (``aria_tda.scores.rank1``);
6. ``groups_res``/``homog_res`` — the same on the lazy residual ``S - s1 u1 v1^T``;
7. ``summary``   — zbar / Pos / Sig with bootstrap CIs for every K and channel.

Peak resident memory is reported per stage (sampled from /proc) and overall (ru_maxrss).
The synthetic ``S_track`` file is deleted at the end unless ``--keep``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np

os.environ.setdefault("ARIA_PROGRESS", "0")


class _RssSampler:
    """Peak RSS of this process, sampled every 50 ms from /proc/self/statm."""

    def __init__(self) -> None:
        self.page = os.sysconf("SC_PAGE_SIZE")
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def rss(self) -> int:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * self.page

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, self.rss())
            time.sleep(0.05)

    def start(self) -> _RssSampler:
        self._thread.start()
        return self

    def reset(self) -> None:
        self.peak = self.rss()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


STAGES: dict[str, dict[str, float]] = {}


@contextmanager
def stage(name: str, sampler: _RssSampler):
    sampler.reset()
    t0, c0 = time.perf_counter(), time.process_time()
    yield
    dt, cpu = time.perf_counter() - t0, time.process_time() - c0
    STAGES[name] = {
        "seconds": dt,
        "cpu_seconds": cpu,
        "peak_rss_gb": max(sampler.peak, sampler.rss()) / 2**30,
    }
    print(
        f"  {name:<11} {dt:8.1f} s wall {cpu:8.1f} s CPU   "
        f"peak RSS {STAGES[name]['peak_rss_gb']:.2f} GB",
        flush=True,
    )


def synth_features(rng: np.random.Generator, n: int, clusters: np.ndarray) -> dict[str, object]:
    n_cl = int(clusters.max()) + 1

    def clustered(dim: int, strength: float) -> np.ndarray:
        centres = rng.standard_normal((n_cl, dim)) * strength
        return centres[clusters] + rng.standard_normal((n, dim))

    def hist(dim: int) -> np.ndarray:
        return rng.dirichlet(np.ones(dim) * 0.5, size=n)

    motifs = [rng.integers(0, 12, 64) for _ in range(n_cl)]
    lens = rng.integers(0, 65, n)
    chords = []
    for i in range(n):
        s = motifs[clusters[i]][: lens[i]].copy()
        flip = rng.random(s.size) < 0.5
        s[flip] = rng.integers(0, 12, int(flip.sum()))
        chords.append(s)
    return {
        "beat_interval": hist(16),
        "onset_interval": hist(16),
        "chroma": rng.random((n, 12)),
        "tonnetz": clustered(6, 0.3),
        "chord_progression": chords,
        "mfcc": clustered(26, 0.5),
        "cqt": rng.standard_normal((n, 168)),
    }


def synth_scores(path: Path, rng: np.random.Generator, clusters: np.ndarray, t: int) -> None:
    n = clusters.size
    popularity = rng.standard_normal(n).astype(np.float32)
    q_cluster = rng.integers(0, int(clusters.max()) + 1, t)
    mm = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(n, t))
    step = 4096
    for s in range(0, n, step):
        e = min(n, s + step)
        block = rng.standard_normal((e - s, t), dtype=np.float32)
        block += 1.5 * popularity[s:e, None]
        block += 1.0 * (clusters[s:e, None] == q_cluster[None, :])
        mm[s:e] = block
    mm.flush()
    del mm


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=67_219, help="tracks (paper: 67,219)")
    ap.add_argument("--t", type=int, default=7_148, help="queries (paper: 7,148)")
    ap.add_argument("--ks", default="20,50,100,200,300,400,500")
    ap.add_argument("--b", type=int, default=200)
    ap.add_argument("--clusters", type=int, default=40)
    ap.add_argument("--n-jobs", type=int, default=None)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workdir", default="/tmp/aria-bench-homogeneity")
    ap.add_argument("--keep", action="store_true", help="keep the synthetic S_track file")
    ap.add_argument("--json", default=None, help="also write the measurements to this JSON file")
    a = ap.parse_args()

    from aria_tda.features.registry import channels
    from aria_tda.homogeneity import homogeneity, null_distribution, top_k_groups
    from aria_tda.scores import rank1, residual
    from aria_tda.similarity import prepare_feature

    ks = [int(k) for k in a.ks.split(",")]
    rng = np.random.default_rng(a.seed)
    work = Path(a.workdir)
    work.mkdir(parents=True, exist_ok=True)
    s_path = work / f"s_track_{a.n}x{a.t}.npy"
    sampler = _RssSampler().start()
    print(
        f"homogeneity benchmark: N={a.n:,} T={a.t:,} K={ks} B={a.b} "
        f"cpus={len(os.sched_getaffinity(0))}"
    )
    t_all = time.perf_counter()
    try:
        clusters = rng.integers(0, a.clusters, a.n)
        with stage("synth", sampler):
            raw = synth_features(rng, a.n, clusters)
            if not s_path.exists():
                synth_scores(s_path, rng, clusters, a.t)
        with stage("prepare", sampler):
            prepared = {
                c: [prepare_feature(s, raw[s.name]) for s in specs]
                for c, specs in channels("audio").items()
            }
            del raw
        with stage("null", sampler):
            null = null_distribution(prepared, ks=ks, B=a.b, seed=a.seed, n_jobs=a.n_jobs)
        with stage("groups", sampler):
            groups = top_k_groups(str(s_path), ks[-1])
        with stage("homog", sampler):
            res = homogeneity(groups, prepared, null, ks=ks, n_jobs=a.n_jobs)
        with stage("rank1", sampler):
            r1 = rank1(str(s_path))
        with stage("groups_res", sampler):
            groups_res = top_k_groups(residual(str(s_path), rank1=r1), ks[-1])
        with stage("homog_res", sampler):
            res_res = homogeneity(groups_res, prepared, null, ks=ks, n_jobs=a.n_jobs)
        with stage("summary", sampler):
            summ = res.summary()
            summ_res = res_res.summary()
    finally:
        sampler.stop()
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)
    total = time.perf_counter() - t_all
    analysis = sum(
        STAGES[s]["seconds"]
        for s in ("prepare", "null", "groups", "homog", "groups_res", "homog_res", "summary")
    )
    with_rank1 = analysis + STAGES["rank1"]["seconds"]
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    pairs = (res.n_unique_groups + res_res.n_unique_groups) * ks[-1] * (ks[-1] - 1) // 2 * 7
    print(
        f"\nhomogeneity (prepare + null + 2 x (groups + K-sweep) + summaries): {analysis:.1f} s "
        f"(+ engine rank-1 {STAGES['rank1']['seconds']:.1f} s = {with_rank1:.1f} s; "
        f"wall incl. synthesis {total:.1f} s)"
    )
    print(
        f"distinct groups: original {res.n_unique_groups:,}, residual {res_res.n_unique_groups:,}; "
        f"{pairs / (STAGES['homog']['seconds'] + STAGES['homog_res']['seconds']) / 1e6:.1f}"
        " M feature-pairs/s"
    )
    cpu = sum(
        STAGES[s]["cpu_seconds"]
        for s in ("prepare", "null", "groups", "homog", "groups_res", "homog_res", "summary")
    )
    print(
        f"CPU time of the homogeneity stages: {cpu:.1f} s "
        "(the machine is shared: wall >= CPU / n_cores)"
    )
    print(f"peak RSS (ru_maxrss): {peak:.2f} GB")
    print("\noriginal, K=300:" if 300 in ks else "\noriginal:")
    show = summ[summ["K"] == (300 if 300 in ks else ks[-1])]
    print(
        show[["K", "channel", "zbar", "zbar_lo", "zbar_hi", "pos", "sig"]]
        .round(3)
        .to_string(index=False)
    )
    print("residual:")
    show = summ_res[summ_res["K"] == (300 if 300 in ks else ks[-1])]
    print(
        show[["K", "channel", "zbar", "zbar_lo", "zbar_hi", "pos", "sig"]]
        .round(3)
        .to_string(index=False)
    )
    if a.json:
        Path(a.json).write_text(
            json.dumps(
                {
                    "n": a.n,
                    "t": a.t,
                    "ks": ks,
                    "B": a.b,
                    "stages": STAGES,
                    "analysis_seconds": analysis,
                    "with_rank1_seconds": with_rank1,
                    "peak_rss_gb": peak,
                },
                indent=2,
            )
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
