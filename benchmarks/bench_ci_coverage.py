"""Coverage of the 95 % intervals of z-bar on pure-noise data: query-only vs joint bootstrap.

Issue 12, item 1. Each cell is one (seed, K, channel): an i.i.d. Gaussian ``S_track`` and
features drawn independently of it, so every channel's true z-bar is 0. The old intervals
resample the queries only (``summary(null_resampling=False)``); the new ones resample the
queries and the null's ``B`` reference groups jointly (the default).

Usage::

    .venv/bin/python benchmarks/bench_ci_coverage.py [--seeds 80] [--n-queries 200] [--B 200]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from aria_tda.features.registry import FeatureSpec
from aria_tda.homogeneity import run_homogeneity
from aria_tda.similarity import prepare_feature


def noise_features(rng: np.random.Generator, n: int) -> dict[str, list]:
    """Three channels of vector features, independent of any score matrix."""
    raw = {
        "rhythm": {"onset": rng.standard_normal((n, 4)), "beat": rng.random((n, 3))},
        "harmony": {"chroma": rng.standard_normal((n, 5))},
        "timbre": {"mfcc": rng.exponential(size=(n, 2))},
    }
    return {
        ch: [prepare_feature(FeatureSpec(name, ch, "audio", "vector", v.shape[1],
                                         "std_euclidean", "audio", "bench"), v)
             for name, v in feats.items()]
        for ch, feats in raw.items()
    }


def cell_hits(seed: int, *, n_tracks: int, n_queries: int, ks: tuple[int, ...], B: int,
              n_boot: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per (K, channel) of one seed: (old covers 0, new covers 0, null_mc_se)."""
    rng = np.random.default_rng(seed)
    prepared = noise_features(rng, n_tracks)
    s = rng.standard_normal((n_tracks, n_queries))
    res, _, _ = run_homogeneity(s, prepared, ks=ks, B=B, seed=seed, n_pairs=0, n_jobs=1,
                                progress=False)
    new = res.summary(n_boot=n_boot, seed=seed)
    old = res.summary(n_boot=n_boot, seed=seed, null_resampling=False)
    cover_new = ((new.zbar_lo <= 0) & (new.zbar_hi >= 0)).to_numpy()
    cover_old = ((old.zbar_lo <= 0) & (old.zbar_hi >= 0)).to_numpy()
    return cover_old, cover_new, new.null_mc_se.to_numpy()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=80)
    ap.add_argument("--n-tracks", type=int, default=150)
    ap.add_argument("--n-queries", type=int, default=200)
    ap.add_argument("--ks", type=int, nargs="+", default=[5, 10, 20])
    ap.add_argument("--B", type=int, default=200)
    ap.add_argument("--n-boot", type=int, default=500)
    a = ap.parse_args()
    t0 = time.perf_counter()
    old, new, mc = [], [], []
    for seed in range(a.seeds):
        o, n, m = cell_hits(seed, n_tracks=a.n_tracks, n_queries=a.n_queries,
                            ks=tuple(a.ks), B=a.B, n_boot=a.n_boot)
        old.append(o)
        new.append(n)
        mc.append(m)
    o_all, n_all = np.concatenate(old), np.concatenate(new)
    cells = o_all.size

    def ci(p: float) -> str:
        se = np.sqrt(p * (1 - p) / cells)
        return f"{100 * p:.1f}% (±{196 * se:.1f})"

    print(f"cells = {cells} ({a.seeds} seeds × {len(a.ks)} K × 3 channels); "
          f"N = {a.n_tracks}, T = {a.n_queries}, B = {a.B}, n_boot = {a.n_boot}")
    print(f"coverage of 0 by the 95% interval of z-bar: old (queries only) {ci(o_all.mean())}, "
          f"new (queries + null groups) {ci(n_all.mean())}")
    print(f"mean null MC SE of z-bar: {np.nanmean(np.concatenate(mc)):.4f} "
          f"(1/sqrt(B) = {1 / np.sqrt(a.B):.4f}); "
          f"{time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
