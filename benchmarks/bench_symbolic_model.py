"""Wall time of the symbolic benchmark's data/model stages at the ``quick`` and ``default`` sizes.

Usage::

    .venv/bin/python benchmarks/bench_symbolic_model.py [--preset quick default] [--fresh-cache]
        [--threads 1] [--out /tmp/aria-bench-sym] [--work-cache DIR]

Per preset, measured in one run on this machine. Each stage reports wall seconds (``*_s``) and
the CPU seconds of this process and its children (``*_cpu``): on a shared, oversubscribed
2-core box the wall time is inflated by other people's jobs while the CPU time stays close to
what a quiet machine would take, so report both.

- ``corpus``    — music21 → MIDI → tokens → windows (``--fresh-cache``: converting every work
  again, 2 worker processes; otherwise the cached conversions are reused and only windows built);
- ``train``     — one model (``preset.train``), seconds and ms/step; test-split loss;
- ``retrain50`` — one model on a 50 % subset (the LDS retrain unit);
- ``grads``     — per-sample gradients of ``sequence_loss`` for all training windows with
  ``torch.func`` (vmap over chunks of 64): the unit cost of gradient attributors;
- ``generate``  — ``n_queries`` queries; ``features`` — the 12 symbolic features of all windows;
- ``extrapolated_trainings`` — ``n_ensemble`` full models + ``n_subsets`` 50 % retrains.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

os.environ.setdefault("ARIA_PROGRESS", "0")


class Clock:
    """Wall and CPU (self + children) seconds of a block: ``with clock("x"): ...``."""

    def __init__(self, res: dict[str, float]) -> None:
        self.res = res

    @staticmethod
    def _cpu() -> float:
        t = os.times()
        return t.user + t.system + t.children_user + t.children_system

    def __call__(self, name: str) -> Clock:
        self.name = name
        return self

    def __enter__(self) -> None:
        self.w0, self.c0 = time.perf_counter(), self._cpu()

    def __exit__(self, *exc: object) -> None:
        self.res[f"{self.name}_s"] = time.perf_counter() - self.w0
        self.res[f"{self.name}_cpu"] = self._cpu() - self.c0


def run_preset(
    name: str, out: Path, *, fresh: bool, threads: int, work_cache: Path | None
) -> dict[str, float]:
    import torch

    from aria_tda_experiments.corpus import build_corpus
    from aria_tda_experiments.featurize import window_features
    from aria_tda_experiments.generate import generate_queries
    from aria_tda_experiments.model import functional_loss
    from aria_tda_experiments.presets import preset
    from aria_tda_experiments.train import (
        evaluate_losses,
        sample_subsets,
        torch_threads,
        train_model,
    )

    p = preset(name)
    tc = p.train.__class__(**{**p.train.to_dict(), "num_threads": threads})
    res: dict[str, float] = {}
    clock = Clock(res)
    cache = work_cache or out / "works"
    if fresh and cache.exists():
        shutil.rmtree(cache)
    with clock("corpus"):
        corpus = build_corpus(out / f"corpus-{name}", config=p.corpus, work_cache=cache, n_jobs=2)
    seg = corpus.train_tokens
    res["n_train"], res["n_test_windows"] = seg.shape[0], corpus.test_tokens.shape[0]
    res["n_works"], res["n_failed"] = corpus.summary()["n_works"], corpus.n_failed

    with clock("train"):
        tm = train_model(seg, model_config=p.model, train_config=tc, seed=0)
    res["steps"] = len(tm.losses)
    res["ms_per_step"] = 1000 * res["train_s"] / len(tm.losses)
    res["cpu_ms_per_step"] = 1000 * res["train_cpu"] / len(tm.losses)
    res["test_loss"] = float(evaluate_losses(tm.model, corpus.test_tokens[:500]).mean())
    res["train_loss"] = float(evaluate_losses(tm.model, seg[:500]).mean())
    sub = sample_subsets(seg.shape[0], n_subsets=1, seed=0)[0]
    with clock("retrain50"):
        train_model(seg, indices=sub, model_config=p.model, train_config=tc, seed=0)

    params = {k: v.detach() for k, v in tm.model.named_parameters()}
    g = torch.func.vmap(torch.func.grad(functional_loss(tm.model)), in_dims=(None, 0))
    x = torch.from_numpy(seg)
    with clock("grads"), torch_threads(threads):
        for s in range(0, x.shape[0], 64):
            g(params, x[s : s + 64])
    res["n_params"] = sum(v.numel() for v in params.values())

    with clock("generate"):
        q = generate_queries(
            tm.model,
            corpus,
            n_queries=p.n_queries,
            prompt_len=p.prompt_len,
            seed=0,
            num_threads=threads,
            out_dir=out / f"queries-{name}",
        )
    res["n_queries"] = q.tokens.shape[0]
    with clock("features"):
        window_features(seg, start_velocities=corpus.train_meta["start_velocity"])
    res["extrapolated_trainings_s"] = (
        p.n_ensemble * res["train_s"] + p.n_subsets * res["retrain50_s"]
    )
    res["extrapolated_trainings_cpu"] = (
        p.n_ensemble * res["train_cpu"] + p.n_subsets * res["retrain50_cpu"]
    )
    res["n_ensemble"], res["n_subsets"] = p.n_ensemble, p.n_subsets
    return {k: (round(v, 3) if isinstance(v, float) else int(v)) for k, v in res.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--preset", nargs="+", default=["quick", "default"])
    ap.add_argument("--fresh-cache", action="store_true", help="convert the music21 works again")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument(
        "--work-cache",
        type=Path,
        default=None,
        help="music21 conversion cache to use (default: OUT/works)",
    )
    args = ap.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="aria-bench-sym-"))
    try:
        for name in args.preset:
            res = run_preset(
                name, out, fresh=args.fresh_cache, threads=args.threads, work_cache=args.work_cache
            )
            print(json.dumps({"preset": name, **res}), flush=True)
    finally:
        if args.out is None:
            shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
