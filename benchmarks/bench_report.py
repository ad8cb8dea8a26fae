"""Benchmark of ``aria-tda report`` at the paper's scale.

Builds a synthetic results folder shaped like the paper's audio study — 15 settings x 2 variants,
T = 7,148 queries, K in {20, 50, 100, 200, 300, 400, 500}, 3 channels, top-``depth`` tracks per
query (the paper keeps 300; 50 by default here to keep the build short), 5 pairs per query and
channel at K = 300 — then times ``write_report`` and opening the page in headless chromium
(time until the first query's evidence is shown, and until another setting's is).

Usage::

    .venv/bin/python benchmarks/bench_report.py [--depth 50] [--queries 7148] [--top-n 25]
        [--keep DIR]

Prints one JSON object: sizes (rows, MB), seconds, peak RSS.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from aria_tda.results import write_results_meta, write_table

KS = [20, 50, 100, 200, 300, 400, 500]
CHANNELS = ["rhythm", "harmony", "timbre"]
METHODS = ["TRAK", "FactGraSS", "GradCos", "LoGra"]
STAGES = ["semantic", "coarse", "fine"]


def build(root: Path, *, T: int, depth: int, n_tracks: int, seed: int = 0) -> dict[str, int]:
    rng = np.random.default_rng(seed)
    settings = [(f"{m}/{s}", m, s) for m in METHODS for s in STAGES] + [
        (b, b, "-") for b in ("CLAP", "CLEWS", "MERT")
    ]
    names = [s for s, _, _ in settings]
    collapsed = {"TRAK/coarse", "GradCos/coarse", "FactGraSS/fine"}
    rel = pd.DataFrame(
        [
            {
                "setting": s,
                "method": m,
                "stage": st,
                "n_train": 1_005_520,
                "n_queries": T,
                "kappa": rng.uniform(0, 1),
                "r1": rng.uniform(0, 1),
                "r2_5": rng.uniform(0, 0.4),
                "p": rng.uniform(0, 1),
                "v1_constancy": rng.uniform(0, 1),
                "constant_columns": 0,
                "verdict": "collapsed" if s in collapsed else "ok",
                "verdict_reason": "synthetic",
            }
            for s, m, st in settings
        ]
    )
    write_table(root, "reliability", rel)
    tracks = np.array([f"fma_{i:06d}" for i in range(n_tracks)])
    sv = [(s, v) for s in names for v in ("original", "residual")]

    # topk: (settings x variants x T x depth) rows
    n = len(sv) * T * depth
    idx = rng.integers(0, n_tracks, size=n)
    topk = pd.DataFrame(
        {
            "setting": pd.Categorical.from_codes(
                np.repeat([names.index(s) for s, _ in sv], T * depth), names
            ),
            "variant": pd.Categorical.from_codes(
                np.repeat([0 if v == "original" else 1 for _, v in sv], T * depth),
                ["original", "residual"],
            ),
            "query": np.tile(np.repeat(np.arange(T), depth), len(sv)),
            "rank": np.tile(np.arange(1, depth + 1), len(sv) * T),
            "track_id": pd.Categorical.from_codes(idx, tracks),
            "score": np.sort(rng.normal(size=n).astype(np.float32))[::-1],
        }
    )
    write_table(root, "topk", topk)
    sizes = {"topk_rows": n}
    del topk, idx

    # query_z: settings x variants x K x T x channels
    rows = len(sv) * len(KS) * T * len(CHANNELS)
    qz = pd.DataFrame(
        {
            "setting": pd.Categorical.from_codes(
                np.repeat([names.index(s) for s, _ in sv], len(KS) * T * len(CHANNELS)), names
            ),
            "variant": pd.Categorical.from_codes(
                np.repeat(
                    [0 if v == "original" else 1 for _, v in sv], len(KS) * T * len(CHANNELS)
                ),
                ["original", "residual"],
            ),
            "K": np.tile(np.repeat(KS, T * len(CHANNELS)), len(sv)),
            "query": np.tile(np.repeat(np.arange(T), len(CHANNELS)), len(sv) * len(KS)),
            "channel": pd.Categorical.from_codes(
                np.tile(np.arange(len(CHANNELS)), len(sv) * len(KS) * T), CHANNELS
            ),
            "z": rng.normal(size=rows),
        }
    )
    write_table(root, "query_z", qz)
    sizes["query_z_rows"] = rows
    hom = (
        qz.groupby(["setting", "variant", "K", "channel"], observed=True)["z"]
        .agg(
            zbar="mean",
            pos=lambda z: float(np.mean(z > 0)),
            sig=lambda z: float(np.mean(z > 1.96)),
            n_queries="size",
        )
        .reset_index()
    )
    hom["zbar_lo"], hom["zbar_hi"] = hom["zbar"] - 0.03, hom["zbar"] + 0.03
    write_table(root, "homogeneity", hom)
    del qz

    # pairs: 5 per (setting, variant, query, channel) at K = 300
    P = 5
    rows = len(sv) * T * len(CHANNELS) * P
    pairs = pd.DataFrame(
        {
            "setting": pd.Categorical.from_codes(
                np.repeat([names.index(s) for s, _ in sv], T * len(CHANNELS) * P), names
            ),
            "variant": pd.Categorical.from_codes(
                np.repeat([0 if v == "original" else 1 for _, v in sv], T * len(CHANNELS) * P),
                ["original", "residual"],
            ),
            "K": 300,
            "query": np.tile(np.repeat(np.arange(T), len(CHANNELS) * P), len(sv)),
            "channel": pd.Categorical.from_codes(
                np.tile(np.repeat(np.arange(len(CHANNELS)), P), len(sv) * T), CHANNELS
            ),
            "track_a": pd.Categorical.from_codes(rng.integers(0, n_tracks, rows), tracks),
            "track_b": pd.Categorical.from_codes(rng.integers(0, n_tracks, rows), tracks),
            "similarity": rng.uniform(0, 1, rows),
            "contribution": rng.normal(size=rows),
        }
    )
    write_table(root, "pairs", pairs)
    sizes["pairs_rows"] = rows
    del pairs
    write_table(
        root,
        "queries",
        pd.DataFrame(
            {
                "query": np.arange(T),
                "label": [f"generated clip {q}" for q in range(T)],
                "genre": rng.choice(["Rock", "Electronic", "Folk", ""], T),
            }
        ),
    )
    write_results_meta(
        root,
        {
            "study": {
                "name": "paper-scale synthetic",
                "modality": "audio",
                "K": KS,
                "K_report": 300,
                "B": 200,
                "seed": 0,
            },
            "settings": [{"name": s, "method": m, "stage": st} for s, m, st in settings],
            "channels": {c: [c] for c in CHANNELS},
        },
    )
    return sizes


def open_in_browser(html: Path) -> dict[str, float]:
    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as pw:
        ctx = pw.chromium.launch_persistent_context(
            tempfile.mkdtemp(prefix="aria-bench-chromium-"),
            executable_path="/usr/bin/chromium",
            headless=True,
            args=[
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
            ],
        )
        page = ctx.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        t0 = time.perf_counter()
        page.goto(html.as_uri())
        page.wait_for_selector("#qv-topk tbody td[data-track]", timeout=120_000)
        first = time.perf_counter() - t0
        t1 = time.perf_counter()
        page.select_option("#qv-setting", "LoGra/fine")
        expect(page.locator("#query-view")).to_have_attribute(
            "data-setting", "LoGra/fine", timeout=60_000
        )
        switch = time.perf_counter() - t1
        t2 = time.perf_counter()
        page.fill("#qv-search", "clip 7147")
        page.select_option("#qv-list", "7147")
        expect(page.locator("#query-view")).to_have_attribute("data-query", "7147", timeout=60_000)
        query = time.perf_counter() - t2
        ctx.close()
    if errors:
        raise RuntimeError(errors)
    return {
        "page_first_evidence_s": first,
        "switch_setting_s": switch,
        "search_and_switch_query_s": query,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", type=int, default=7148)
    ap.add_argument("--depth", type=int, default=50)
    ap.add_argument("--tracks", type=int, default=20000)
    ap.add_argument("--top-n", type=int, default=25)
    ap.add_argument("--keep", type=Path, default=None, help="build the folder here and keep it")
    a = ap.parse_args()
    root = a.keep or Path(tempfile.mkdtemp(prefix="aria-bench-report-")) / "results"
    root.mkdir(parents=True, exist_ok=True)
    try:
        t = time.perf_counter()
        sizes = build(root, T=a.queries, depth=a.depth, n_tracks=a.tracks)
        build_s = time.perf_counter() - t
        from aria_tda.report import write_report

        t = time.perf_counter()
        out = write_report(root, top_n=a.top_n, plots=False)
        report_noplots_s = time.perf_counter() - t
        t = time.perf_counter()
        out = write_report(root, top_n=a.top_n, latex=True)
        report_s = time.perf_counter() - t
        res = {
            **sizes,
            "queries": a.queries,
            "depth": a.depth,
            "top_n": a.top_n,
            "build_s": round(build_s, 1),
            "write_report_no_plots_s": round(report_noplots_s, 1),
            "write_report_with_plots_and_latex_s": round(report_s, 1),
            "html_MB": round(out.html.stat().st_size / 1e6, 1),
            "peak_rss_MB": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        }
        if Path("/usr/bin/chromium").exists():
            res.update({k: round(v, 2) for k, v in open_in_browser(out.html).items()})
        print(json.dumps(res, indent=1))
    finally:
        if a.keep is None:
            shutil.rmtree(root.parent, ignore_errors=True)


if __name__ == "__main__":
    main()
