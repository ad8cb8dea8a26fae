"""Attribution timings on this machine at the benchmark's sizes (aria_tda_experiments.presets).

Usage::

    .venv/bin/python benchmarks/bench_attribution.py --preset quick
    .venv/bin/python benchmarks/bench_attribution.py --preset default --skip-ratios

Prints (1) side-by-side ratios measured in the same run: per-sample gradients per tensor
vs dattri's flat vector, the projection kept vs re-drawn per batch, TracIn with the query
side cached vs dattri's loop; and (2) the wall time of every method at the preset's sizes
with the package defaults (random-token windows and an untrained model: timings do not
depend on the weights). Timings on a shared 2-core machine are noisy: compare ratios.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import torch

from aria_tda.attribution import DEFAULTS, run_methods, tracin
from aria_tda.attribution.gradient_projection import Projector
from aria_tda.attribution.task import build_task, make_loader
from aria_tda.attribution.threads import pinned_threads as _threads
from aria_tda_experiments.model import build_model
from aria_tda_experiments.presets import preset


def _grad_ms(model, windows, fast: bool, batch_size: int = 32) -> float:
    task = build_task(model, [model.state_dict()], loss="sequence", target="sequence", fast=fast)
    params, _ = task.get_param(ckpt_idx=0)
    fn = task.get_grad_loss_func(in_dims=(None, 0))
    loader = make_loader(windows, batch_size=batch_size)
    with torch.no_grad():
        fn(params, (torch.as_tensor(windows[:2]),))  # warm-up
        t = time.perf_counter()
        for (b,) in loader:
            fn(params, (b,))
    return (time.perf_counter() - t) / len(windows) * 1e3


def ratios(model, windows) -> dict[str, float]:
    out: dict[str, float] = {}
    with _threads(1):
        for rep in range(2):  # interleaved
            out[f"grad_ms_per_tensor_{rep}"] = _grad_ms(model, windows, True)
            out[f"grad_ms_flat_{rep}"] = _grad_ms(model, windows, False)
        d = sum(p.numel() for p in model.parameters())
        g = torch.randn(32, d)
        from dattri.func.projection import random_project

        for k in (256, 512, 1024):
            proj = Projector(proj_dim=k)
            proj(g, 1)
            t = time.perf_counter()
            for _ in range(3):
                proj(g, 1)
            out[f"proj_ms_per_sample_kept_k{k}"] = (time.perf_counter() - t) / 96 * 1e3
            t = time.perf_counter()
            random_project(g, 32, proj_dim=k, proj_max_batch_size=32)(g, ensemble_id=1)
            out[f"proj_ms_per_sample_dattri_k{k}"] = (time.perf_counter() - t) / 32 * 1e3
        small, q = windows[:96], windows[96:112]
        ck = [model.state_dict()] * 2
        from aria_tda.attribution import GradientArgs

        for engine in ("aria", "dattri"):
            r = tracin(
                model, ck, small, q, learning_rates=[1e-3, 1e-3],
                args=GradientArgs(proj_dim=256, engine=engine),
            )
            out[f"tracin_96x16_s_{engine}"] = r.seconds
    return out


def methods(p, model, rng, only: list[str] | None) -> dict[str, float]:
    n, t, length = p.corpus.max_train_segments, p.n_queries, p.corpus.window
    train = rng.integers(0, 388, size=(n, length))
    queries = rng.integers(0, 388, size=(t, length))
    ensemble = [build_model(p.model, seed=i).state_dict() for i in range(p.n_ensemble)]
    traj = [build_model(p.model, seed=100 + i).state_dict() for i in range(p.train.n_checkpoints)]
    names = only or list(DEFAULTS)
    t0 = time.perf_counter()
    res = run_methods(
        names,
        model,
        train,
        queries,
        ensemble=ensemble,
        trajectory=traj,
        learning_rates=[1e-3] * len(traj),
        final=traj[-1],
        common={"progress": False},
    )
    out = {m: r.seconds for m, r in res.items()}
    out["total_wall"] = time.perf_counter() - t0
    out.update(
        {"n_train": n, "n_queries": t, "n_ensemble": p.n_ensemble, "n_checkpoints": len(traj)}
    )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--preset", default="quick", choices=["tiny", "quick", "default"])
    ap.add_argument("--methods", nargs="*", default=None)
    ap.add_argument("--skip-ratios", action="store_true")
    args = ap.parse_args()
    p = preset(args.preset)
    rng = np.random.default_rng(0)
    model = build_model(p.model, seed=0)
    print(
        f"preset={p.name} params={sum(x.numel() for x in model.parameters())} defaults={DEFAULTS}"
    )
    report: dict[str, object] = {"preset": p.name}
    if not args.skip_ratios:
        report["ratios"] = ratios(model, rng.integers(0, 388, size=(128, p.corpus.window)))
        print(json.dumps(report["ratios"], indent=1))
    report["methods_s"] = methods(p, model, rng, args.methods)
    print(json.dumps(report["methods_s"], indent=1))


if __name__ == "__main__":
    main()
