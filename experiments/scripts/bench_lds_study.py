"""What makes LDS decide between attribution methods (issue 12, item 4): one factor at a time.

Every variant is the symbolic demo (:func:`aria_tda_experiments.demo.run_demo`) with the paper's
four methods plus TRAK from one ensemble member (``TRAK-1``), run from a base preset with ONE
thing changed: the model's width or depth, the training length, the window length, the
training-set size, the number of LDS subsets, LDS targets averaged over retraining seeds,
or the LDS target (dattri's last token vs the whole continuation). Per variant it records

- the held-out loss the model reached (nats/token) and its parameter count;
- LDS ± SE per method, the spread (best − worst mean LDS) and how many of the method pairs
  the paired bootstrap separates (95 % interval of the difference excludes 0);
- the goal's contrast, TRAK (the whole ensemble) − GradDot, with its paired interval;
- the wall seconds of every demo stage (a stage reused whole from an earlier variant counts
  the seconds it took when it ran; a resumed stage only its new work, e.g. ``subsets2x``'s LDS
  stage the 32 new retrains). The table's "demo s" is their sum.

Variants that share corpus and models run in one working folder, so a later variant reuses
the finished stages (e.g. ``subsets2x`` retrains only the 32 new subsets, ``target_seq``
only recomputes attribution and the retrained models' outputs). Results are appended to
``--out`` (default ``experiments/results/bench_lds_study.json``) as each variant finishes; a
rerun skips variants already there (``--force`` recomputes them), so the study is resumable.

Usage::

    .venv/bin/python experiments/scripts/bench_lds_study.py --plan           # the variants, no work
    .venv/bin/python experiments/scripts/bench_lds_study.py                  # all (hours on 2
    cores) .venv/bin/python experiments/scripts/bench_lds_study.py --only base subsets2x lds_seeds3
    .venv/bin/python experiments/scripts/bench_lds_study.py --table          # markdown for the
    README .venv/bin/python experiments/scripts/bench_lds_study.py --base tiny --work /tmp/w --out
    /tmp/s.json

The base is the ``default`` preset (1,500 windows of 64 tokens, 178 queries, 2-layer d = 64
model, 3 epochs, 10-model TRAK ensemble, 32 subsets) with ONE retrain per subset — as the
default was before this study; it now averages 3 seeds per subset, the ``lds_seeds3``
variant, which was the only one to separate TRAK from GradDot.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
OUT = HERE.parent / "results" / "bench_lds_study.json"
METHODS = ("TRAK", "TracIn", "GradCos", "GradDot")
CONTRAST = ("TRAK", "GradDot")


def variants(base: Any) -> dict[str, dict[str, Any]]:
    """Name -> ``{"axis", "preset", "overrides", "note"}``: the base with one factor changed.

    Parameters
    ----------
    base : aria_tda_experiments.presets.BenchPreset
        The preset every variant starts from.
    """
    rp = dataclasses.replace
    base = rp(base, lds_seeds=1)  # one retrain per subset: seed averaging is a variant
    m, tr, c = base.model, base.train, base.corpus
    wide = rp(m, d_model=2 * m.d_model, d_ff=2 * m.d_ff)
    deep = rp(m, n_layers=2 * m.n_layers)
    out: dict[str, dict[str, Any]] = {
        "base": {"axis": "base", "preset": base, "overrides": {}, "note": "the base preset"},
        "wide": {"axis": "model size", "preset": rp(base, model=wide), "overrides": {},
                 "note": f"d_model {wide.d_model}, d_ff {wide.d_ff}"},
        "deep": {"axis": "model size", "preset": rp(base, model=deep), "overrides": {},
                 "note": f"{deep.n_layers} layers"},
        "epochs2x": {"axis": "training length", "preset": rp(base, train=rp(
            tr, epochs=2 * tr.epochs)), "overrides": {}, "note": f"{2 * tr.epochs} epochs"},
        "epochs4x": {"axis": "training length", "preset": rp(base, train=rp(
            tr, epochs=4 * tr.epochs)), "overrides": {}, "note": f"{4 * tr.epochs} epochs"},
        "window2x": {"axis": "window length", "preset": rp(
            base, corpus=rp(c, window=2 * c.window, hop=c.window),
            model=rp(m, max_len=2 * m.max_len), prompt_len=2 * base.prompt_len),
            "overrides": {}, "note": f"{2 * c.window}-token windows (hop {c.window})"},
        "train_half": {"axis": "training-set size", "preset": rp(base, corpus=rp(
            c, max_train_segments=max(8, (c.max_train_segments or 0) // 2))),
            "overrides": {}, "note": "half the training windows"},
        "train_2x": {"axis": "training-set size", "preset": rp(base, corpus=rp(
            c, hop=c.window // 2, max_train_segments=2 * (c.max_train_segments or 0))),
            "overrides": {}, "note": "twice the windows (hop = window / 2)"},
        "subsets2x": {"axis": "LDS subsets", "preset": rp(base, n_subsets=2 * base.n_subsets),
                      "overrides": {}, "note": f"{2 * base.n_subsets} subsets"},
        "lds_seeds3": {"axis": "seed averaging", "preset": rp(base, lds_seeds=3), "overrides": {},
                       "note": "every subset retrained with 3 seeds, outputs averaged"},
        "target_seq": {"axis": "LDS target", "preset": base,
                       "overrides": {"target": "sequence"},
                       "note": "whole-continuation loss instead of the last token"},
    }
    for name, v in out.items():
        v["preset"] = rp(v["preset"], name=f"lds-study-{name}")
    return out


def _group(preset: Any) -> str:
    """Variants with the same corpus, model, training and ensemble share a working folder."""
    from aria_tda._steps import params_digest

    return params_digest({"corpus": preset.corpus.to_dict(), "model": preset.model.to_dict(),
                          "train": preset.train.to_dict(), "n": preset.n_ensemble})[:12]


def run_variant(name: str, spec: dict[str, Any], work: Path, seed: int,
                threads: int | None) -> dict[str, Any]:
    """Run one variant through the demo and summarise its LDS tables."""
    import numpy as np

    from aria_tda.results import read_results_meta, read_table
    from aria_tda_experiments.demo import run_demo
    from aria_tda_experiments.validation import paired_contrast

    t0 = time.perf_counter()
    folder = work / _group(spec["preset"])
    results = run_demo(folder, preset=spec["preset"], seed=seed, methods=METHODS,
                       threads=threads, report=False, quiet=False, trak_k=(1,),
                       **spec["overrides"])
    wall = time.perf_counter() - t0
    lds = read_table(results, "lds").set_index("method")
    paired = read_table(results, "lds_paired")
    paired = paired[paired["quantity"] == "lds"]
    meta = read_results_meta(results)["demo"]
    agree = read_table(results, "agreement")

    main = [m for m in METHODS if m in lds.index]
    pairs = paired[paired.setting_a.isin(main) & paired.setting_b.isin(main)]
    return {
        "variant": name, "axis": spec["axis"], "note": spec["note"],
        "preset": spec["preset"].to_dict(), "overrides": spec["overrides"], "seed": seed,
        "n_train": meta["n_train"], "n_queries": meta["n_queries"],
        "n_parameters": meta.get("n_parameters"), "heldout_loss": meta.get("heldout_loss"),
        "train_loss": meta.get("train_loss"),
        "lds": {m: float(lds.loc[m, "lds"]) for m in lds.index},
        "lds_se": {m: float(lds.loc[m, "lds_se"]) for m in lds.index},
        "spread": float(np.ptp([lds.loc[m, "lds"] for m in main])),
        "pairs_separated": int(pairs["separated"].sum()), "pairs": len(pairs),
        "trak_vs_graddot": paired_contrast(paired, *CONTRAST),
        "trak_vs_trak1": paired_contrast(paired, "TRAK", "TRAK-1"),
        "agreement": agree.to_dict(orient="records"),
        "stage_seconds": meta["stage_seconds"], "wall_s": round(wall, 1),
        "finished": time.strftime("%Y-%m-%d %H:%M:%S"),
    }


def _cost(r: dict[str, Any]) -> float:
    """Sum of the variant's stage seconds (whole reused stages at their original time)."""
    return float(sum(v for k, v in r["stage_seconds"].items() if k != "total"))


def table(record: dict[str, Any]) -> str:
    """The study as a markdown table (one row per variant)."""
    head = ("| variant | axis | change | windows × queries | held-out loss | LDS TRAK / TRAK-1 / "
            "TracIn / GradCos / GradDot | spread | pairs separated | TRAK − GradDot [95% CI] "
            "| demo s |\n|---|---|---|---|---|---|---|---|---|---|")
    rows = [head]
    for r in record["variants"].values():
        ld = r["lds"]
        c = r["trak_vs_graddot"]
        lds_s = " / ".join(f"{ld[m]:.3f}" for m in ("TRAK", "TRAK-1", *METHODS[1:]) if m in ld)
        mark = " **sep.**" if c["separated"] else ""
        rows.append(
            f"| {r['variant']} | {r['axis']} | {r['note']} | {r['n_train']:,} × "
            f"{r['n_queries']} | {r['heldout_loss']:.3f} | {lds_s} | {r['spread']:.3f} | "
            f"{r['pairs_separated']}/{r['pairs']} | {c['diff']:+.3f} [{c['lo']:+.3f}, "
            f"{c['hi']:+.3f}]{mark} | {_cost(r):.0f} |")
    return "\n".join(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", default="default", help="preset the variants start from")
    ap.add_argument("--only", nargs="+", default=None, metavar="VARIANT")
    ap.add_argument("--plan", action="store_true", help="list the variants and stop")
    ap.add_argument("--table", action="store_true", help="print --out as markdown and stop")
    ap.add_argument("--force", action="store_true", help="recompute variants already in --out")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--work", default=None,
                    help="working folders (default: $ARIA_CACHE_DIR or ~/.cache/aria, "
                         "lds-study/)")
    ap.add_argument("--out", default=str(OUT))
    opts = ap.parse_args()
    out = Path(opts.out)
    record: dict[str, Any] = json.loads(out.read_text()) if out.exists() else {}
    if opts.table:
        print(table(record))
        return
    from aria_tda_experiments.presets import preset

    vs = variants(preset(opts.base))
    names = list(vs) if opts.only is None else opts.only
    unknown = [n for n in names if n not in vs]
    if unknown:
        raise SystemExit(f"--only: unknown variant(s) {unknown}; known: {list(vs)}")
    if opts.plan:
        for n in names:
            folder = _group(vs[n]["preset"])
            print(f"{n:<12} {vs[n]['axis']:<18} {vs[n]['note']}  (folder {folder})")
        return
    cache = Path(os.environ.get("ARIA_CACHE_DIR") or Path.home() / ".cache" / "aria")
    work = Path(opts.work) if opts.work else cache / "lds-study" / opts.base
    record.setdefault("variants", {})
    record.update(
        command=" ".join(
            [".venv/bin/python", "experiments/scripts/bench_lds_study.py", *sys.argv[1:]]
        ),
        base=opts.base,
        methods=list(METHODS),
        contrast=list(CONTRAST),
        machine={
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
        },
    )
    for n in names:
        if n in record["variants"] and not opts.force:
            print(f"[lds study] {n}: already measured (--force to redo)", flush=True)
            continue
        print(f"[lds study] {n}: {vs[n]['note']}", flush=True)
        record["variants"][n] = run_variant(n, vs[n], work, opts.seed, opts.threads)
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_suffix(".tmp")
        tmp.write_text(json.dumps(record, indent=2) + "\n")
        tmp.replace(out)
        c = record["variants"][n]["trak_vs_graddot"]
        print(
            f"[lds study] {n}: TRAK - GradDot {c['diff']:+.3f} [{c['lo']:+.3f}, "
            f"{c['hi']:+.3f}] separated={c['separated']}",
            flush=True,
        )
    print(table(record))


if __name__ == "__main__":
    main()
