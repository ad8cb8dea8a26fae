"""CPU vs an accelerator: the same training run and the same attribution on both devices.

``--device cuda`` trains the demo's model (``aria_tda_experiments.presets`` ``default``
architecture) with one seed on the CPU and on the device, then runs all six attribution methods on
the same CPU-trained checkpoints on both devices. Printed (and written with ``--json``):

* training: the largest per-step loss difference, and the final-loss difference (the device
  path uses fused AdamW and other kernels, so the two runs drift apart by rounding);
* attribution: per method, the Pearson correlation of the two score matrices and the largest
  absolute difference relative to the largest CPU score. TRAK and the TracIn family use the
  same CPU-drawn projection on both devices (expected: equal up to float32 rounding); LoGra
  and FactGraSS run dattri's compressors, which draw on the device's own generator.

Usage::

    python benchmarks/bench_device_parity.py --corpus RUN/corpus/corpus --device cuda \
        --json parity.json
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path

import numpy as np


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", required=True, help="a demo corpus folder (load_corpus)")
    ap.add_argument("--device", default="cuda", help="the accelerator to compare with the CPU")
    ap.add_argument("--n-train", type=int, default=200, help="training windows used")
    ap.add_argument("--n-queries", type=int, default=16, help="query windows (held-out)")
    ap.add_argument("--json", default=None, help="write the figures here")
    args = ap.parse_args(argv)

    import torch

    from aria_tda.attribution import run_methods
    from aria_tda_experiments.corpus import load_corpus
    from aria_tda_experiments.demo import DEMO_METHODS
    from aria_tda_experiments.presets import preset
    from aria_tda_experiments.train import train_model

    corpus = load_corpus(args.corpus)
    train = corpus.train_tokens[: args.n_train]
    queries = corpus.test_tokens[: args.n_queries]
    p = preset("default")
    model_cfg = dataclasses.replace(p.model, max_len=max(p.model.max_len, train.shape[1]))
    train_cfg = dataclasses.replace(p.train, epochs=2)
    out: dict = {"device": args.device, "torch": torch.__version__,
                 "n_train": int(train.shape[0]), "n_queries": int(queries.shape[0])}
    if args.device.startswith("cuda"):
        out["gpu"] = torch.cuda.get_device_name()

    runs = {}
    for dev in ("cpu", args.device):
        t0 = time.perf_counter()
        runs[dev] = train_model(train, model_config=model_cfg, train_config=train_cfg, seed=0,
                                progress_bar=False, device=dev)
        out[f"train_seconds_{dev}"] = round(time.perf_counter() - t0, 3)
    a, b = runs["cpu"].losses, runs[args.device].losses
    out["train"] = {"steps": int(a.size), "max_abs_loss_diff": float(np.abs(a - b).max()),
                    "final_loss_cpu": float(a[-1]), "final_loss_device": float(b[-1])}

    cpu = runs["cpu"]
    second = train_model(train, model_config=model_cfg, train_config=train_cfg, seed=1,
                         progress_bar=False)
    scores = {}
    for dev in ("cpu", args.device):
        t0 = time.perf_counter()
        res = run_methods(
            list(DEMO_METHODS), cpu.model, train, queries,
            ensemble=[cpu.model.state_dict(), second.model.state_dict()],
            trajectory=[c.state_dict for c in cpu.checkpoints],
            learning_rates=cpu.checkpoint_lrs, final=cpu.checkpoints[-1].state_dict,
            common={"device": dev, "progress": False, "num_threads": 1},
        )
        scores[dev] = {m: r.scores for m, r in res.items()}
        out[f"attribution_seconds_{dev}"] = round(time.perf_counter() - t0, 3)
    out["attribution"] = {}
    for m in DEMO_METHODS:
        x = np.asarray(scores["cpu"][m], dtype=np.float64)
        y = np.asarray(scores[args.device][m], dtype=np.float64)
        out["attribution"][m] = {
            "pearson": float(np.corrcoef(x.ravel(), y.ravel())[0, 1]),
            "max_abs_diff_rel": float(np.abs(x - y).max() / max(np.abs(x).max(), 1e-30)),
        }
    text = json.dumps(out, indent=2)
    print(text)
    if args.json:
        Path(args.json).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
