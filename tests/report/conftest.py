"""Realistic results folders for the report tests, written through aria_tda.results only.

Settings: TRAK semantic (ok), TRAK coarse (collapsed: the same top-K group for every query),
TRAK fine (suspect) and MERT (stage '-', ok); variants original + residual; K = 20, 50, 100, 300;
audio channels rhythm / harmony / timbre (or the five symbolic ones); 14 queries with labels and
genres; 40 tracks, one with a label full of HTML/LaTeX special characters; every table of
ARIA's own (aria_tda.results.CORE_TABLES; the experiments' tables are added by
experiments/tests/report/_experiment_tables.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from aria_tda.results import read_table, write_results_meta, write_table

NASTY = '<script>alert("x")</script> & Bach_{1}% $5 #2'
SETTINGS = [
    # name, method, stage, verdict, kappa, r1, r2_5, p, v1c
    ("TRAK/semantic", "TRAK", "semantic", "ok", 0.076, 0.282, 0.098, 0.175, 0.31),
    ("TRAK/coarse", "TRAK", "coarse", "collapsed", 0.991, 0.993, 0.004, 0.022, 0.99),
    ("TRAK/fine", "TRAK", "fine", "suspect", 0.641, 0.772, 0.208, 0.002, 0.62),
    ("MERT", "MERT", "-", "ok", 0.358, 0.437, 0.375, 0.002, 0.41),
]
KS = [20, 50, 100, 300]
GENRES = ["Rock", "Folk", "Jazz", None]


def build_results(
    root: Path,
    rng: np.random.Generator,
    *,
    channels: tuple[str, ...] = ("rhythm", "harmony", "timbre"),
    n_queries: int = 14,
    n_tracks: int = 40,
    topk_depth: int = 30,
    n_pairs: int = 6,
    k_report: int | None = 300,
    modality: str = "audio",
) -> dict[str, Any]:
    """Write a results folder into ``root``; returns the DataFrames written (by table name)."""
    root.mkdir(parents=True, exist_ok=True)
    tracks = [f"trk{i:03d}" for i in range(n_tracks)]
    variants = ["original", "residual"]
    out: dict[str, Any] = {}

    rel = pd.DataFrame(
        [
            {
                "setting": s,
                "method": m,
                "stage": st,
                "n_train": 1200,
                "n_queries": n_queries,
                "kappa": ka,
                "r1": r1,
                "r2_5": r25,
                "p": p,
                "v1_constancy": v1,
                "constant_columns": 0,
                "verdict": v,
                "verdict_reason": f"{v} because kappa={ka}",
            }
            for s, m, st, v, ka, r1, r25, p, v1 in SETTINGS
        ]
    )
    out["reliability"] = rel

    qz_rows, hom_rows, topk_rows, pair_rows = [], [], [], []
    fixed_group = rng.permutation(n_tracks)[:topk_depth]
    for si, (s, *_rest) in enumerate(SETTINGS):
        collapsed = _rest[2] == "collapsed"
        for vi, v in enumerate(variants):
            for q in range(n_queries):
                order = (
                    fixed_group
                    if collapsed and v == "original"
                    else rng.permutation(n_tracks)[:topk_depth]
                )
                scores = np.sort(rng.normal(2.0, 1.0, topk_depth))[::-1]
                for r in range(topk_depth):
                    topk_rows.append((s, v, q, r + 1, tracks[order[r]], float(scores[r])))
            for K in KS:
                for ci, c in enumerate(channels):
                    mu = (si - 1.2) * 0.8 + 0.5 * ci - 0.3 * vi + 0.002 * K
                    z = rng.normal(mu, 1.0, n_queries)
                    for q in range(n_queries):
                        qz_rows.append((s, v, K, q, c, float(z[q])))
                    boots = [rng.choice(z, n_queries).mean() for _ in range(50)]
                    hom_rows.append(
                        (
                            s,
                            v,
                            K,
                            c,
                            float(z.mean()),
                            float(np.percentile(boots, 2.5)),
                            float(np.percentile(boots, 97.5)),
                            float(np.mean(z > 0)),
                            float(np.mean(z > 1.96)),
                            n_queries,
                        )
                    )
                    if K == 300:
                        for q in range(n_queries):
                            for _ in range(n_pairs):
                                a, b = rng.choice(n_tracks, 2, replace=False)
                                pair_rows.append(
                                    (
                                        s,
                                        v,
                                        K,
                                        q,
                                        c,
                                        tracks[a],
                                        tracks[b],
                                        float(rng.uniform(0.2, 0.9)),
                                        float(rng.normal(1, 1)),
                                    )
                                )
    out["query_z"] = pd.DataFrame(
        qz_rows, columns=["setting", "variant", "K", "query", "channel", "z"]
    )
    out["homogeneity"] = pd.DataFrame(
        hom_rows,
        columns=[
            "setting",
            "variant",
            "K",
            "channel",
            "zbar",
            "zbar_lo",
            "zbar_hi",
            "pos",
            "sig",
            "n_queries",
        ],
    )
    out["topk"] = pd.DataFrame(
        topk_rows, columns=["setting", "variant", "query", "rank", "track_id", "score"]
    )
    # how like its query each of the first ranks is (the study writes it with query features);
    # channel 0 cannot discriminate for odd queries (ties)
    item_rows = []
    for st, var, q, rank, tid, _ in topk_rows:
        if rank <= 5:
            for ci, ch in enumerate(channels):
                flat = ci == 0 and q % 2 == 1
                item_rows.append((st, var, q, rank, tid, ch, float(rng.normal(0.5, 1.0)),
                                  float(rng.uniform(5, 99)), 0.6 if flat else 0.0, not flat))
    out["item_alignment"] = pd.DataFrame(item_rows, columns=[
        "setting", "variant", "query", "rank", "track_id", "channel", "alignment",
        "percentile", "tied", "informative"])
    out["pairs"] = pd.DataFrame(
        pair_rows,
        columns=[
            "setting",
            "variant",
            "K",
            "query",
            "channel",
            "track_a",
            "track_b",
            "similarity",
            "contribution",
        ],
    )
    out["null"] = pd.DataFrame(
        [
            (K, c, f, float(rng.uniform(0.3, 0.6)), float(rng.uniform(0.01, 0.05)), 200)
            for K in KS
            for c in channels
            for f in ("*", f"{c}_feat")
        ],
        columns=["K", "channel", "feature", "mu", "sigma", "B"],
    )
    out["alignment"] = pd.DataFrame(
        [
            (
                s,
                c,
                float(rng.uniform(0, 1)),
                f"{c}_feat[{i}]",
                float(rng.uniform(0, 1)),
                f"{c}_group",
            )
            for s, *_ in SETTINGS
            for i, c in enumerate(channels)
        ],
        columns=[
            "setting",
            "channel",
            "alpha_max",
            "alpha_max_feature",
            "alpha_reg",
            "alpha_reg_group",
        ],
    )
    conf_rows = []
    for s in ("TRAK/fine", "MERT"):
        for c in channels[:2]:
            means = {g: float(rng.normal(1.2, 0.1)) for g in ("Rock", "Folk", "Jazz")}
            sd = float(np.std(list(means.values()), ddof=1))
            for g, m in sorted(means.items(), key=lambda x: -x[1]):
                conf_rows.append(
                    (
                        s,
                        "original",
                        300,
                        c,
                        "genre",
                        g,
                        int(rng.integers(3, 9)),
                        m,
                        float(rng.uniform(0.8, 1)),
                        float(rng.uniform(0, 0.3)),
                        sd,
                    )
                )
    out["confound"] = pd.DataFrame(
        conf_rows,
        columns=[
            "setting",
            "variant",
            "K",
            "channel",
            "column",
            "stratum",
            "n",
            "mean_z",
            "pos",
            "sig",
            "sd_across",
        ],
    )
    rank_rows = []
    hk = out["homogeneity"]
    for v in variants:
        for K in KS:
            for c in channels:
                sub = hk[(hk.variant == v) & (hk.K == K) & (hk.channel == c)]
                ok = sub[sub.setting != "TRAK/coarse"].sort_values("zbar", ascending=False)
                for r, (_, row) in enumerate(ok.iterrows()):
                    rank_rows.append((row.setting, v, K, c, row.zbar, r + 1, False, ""))
                co = sub[sub.setting == "TRAK/coarse"].iloc[0]
                rank_rows.append(("TRAK/coarse", v, K, c, co.zbar, np.nan, True, "collapsed"))
    out["ranking"] = pd.DataFrame(
        rank_rows,
        columns=["setting", "variant", "K", "channel", "zbar", "rank", "excluded", "reason"],
    )
    out["lds"] = pd.DataFrame(
        [("TRAK", 0.318, 0.05, 50, n_queries), ("MERT", 0.149, 0.07, 50, n_queries)],
        columns=["method", "lds", "lds_sd", "n_subsets", "n_queries"],
    )
    out["agreement"] = pd.DataFrame(
        [("kappa", 1.0, 1.0, 2), ("r1", 0.8, 0.67, 2)],
        columns=["diagnostic", "spearman", "kendall", "n_methods"],
    )
    # paired differences: LDS / diagnostics between the two methods, z-bar between settings
    out["lds_paired"] = pd.DataFrame(
        [
            ("lds", "TRAK", "MERT", 0.318, 0.149, 0.169, 0.08, 0.25, True),
            ("r1", "TRAK", "MERT", 0.282, 0.437, -0.155, -0.31, 0.02, False),
        ],
        columns=[
            "quantity",
            "setting_a",
            "setting_b",
            "value_a",
            "value_b",
            "diff",
            "diff_lo",
            "diff_hi",
            "separated",
        ],
    )
    from aria_tda.paired import zbar_paired_table

    out["paired"] = zbar_paired_table(out["query_z"], n_boot=50, seed=7)
    out.update(_aspect_frames(out["query_z"], list(channels)))
    out["queries"] = pd.DataFrame(
        {
            "query": range(n_queries),
            "label": [
                f"generated piece {q}" + (" (Bach & Co)" if q == 3 else "")
                for q in range(n_queries)
            ],
            "genre": [GENRES[q % len(GENRES)] for q in range(n_queries)],
        }
    )
    out["tracks"] = pd.DataFrame(
        {
            "track_id": tracks,
            "label": [NASTY if i == 0 else f"Track title {i}" for i in range(n_tracks)],
        }
    )

    for name, df in out.items():
        write_table(root, name, df)
        out[name] = read_table(root, name)  # the numbers as stored (CSV keeps 6 significant digits)
    study = {
        "name": "Test study <b>bold</b>",
        "modality": modality,
        "K": KS,
        "B": 200,
        "seed": 7,
        "n_bootstrap": 50,
        "feature_store": "features",
        "confound": ["genre"],
    }
    if k_report is not None:
        study["K_report"] = k_report
    write_results_meta(
        root,
        {
            "study": study,
            "settings": [
                {
                    "name": s,
                    "method": m,
                    "stage": st,
                    "normalize": "zscore",
                    "scores": f"scores/{i}.npy",
                }
                for i, (s, m, st, *_r) in enumerate(SETTINGS)
            ],
            "channels": {c: [f"{c}_feat"] for c in channels},
            "versions": {"aria": "0.1.0", "numpy": np.__version__},
            "timings": {"diagnostics": 12.5, "homogeneity": 754.2},
            "notes": ["fixture note: 2 tracks lacked features"],
        },
    )
    return out


def _aspect_frames(qz: pd.DataFrame, channels: list[str]) -> dict[str, pd.DataFrame]:
    """The distinctive reading's three tables, from the fixture's z at K = 300 (its own draws:
    the other tables keep theirs)."""
    arng = np.random.default_rng(99)
    qa, asp, sa = [], [], []
    for (s, v), g in qz[qz["K"] == 300].groupby(["setting", "variant"], sort=False):
        z = g.pivot_table(index="query", columns="channel", values="z")[channels]
        delta = (z - z.median()) / np.maximum(1.0, 1.4826 * (z - z.median()).abs().median())
        named = np.where(delta.max(axis=1) > 2.0, delta.idxmax(axis=1), "none")
        for (q, row), ans in zip(delta.iterrows(), named, strict=True):
            for c in channels:
                qa.append((s, v, int(q), c, float(z.loc[q, c]), float(row[c]), str(ans)))
        base = z.median()
        for c in channels:
            asp.append((s, v, 300, "group", c, float(base[c]), float(base[c]) - 0.4,
                        float(base[c]) + 0.4, float(np.mean(named == c)),
                        float(np.mean(named == "none")), len(z),
                        channels[int(np.argmax(base.to_numpy()))], 0.05, 2.3))
        for val in ("a", "b"):
            p = float(arng.uniform(0.01, 0.5))
            lead = channels[int(arng.integers(len(channels)))]
            for c in channels:
                sa.append((s, v, "genre", val, 6, c, float(arng.normal()),
                           float(arng.normal() + (3.0 if c == lead else 0.0)), p,
                           lead if p < 0.05 else "none"))
    return {
        "query_aspects": pd.DataFrame(qa, columns=["setting", "variant", "query", "channel",
                                                   "z", "delta", "named"]),
        "aspects": pd.DataFrame(asp, columns=["setting", "variant", "K", "anchor", "channel",
                                              "baseline", "baseline_lo", "baseline_hi",
                                              "named_share", "none_share", "n_queries",
                                              "method_aspect", "alpha", "threshold"]),
        "set_aspects": pd.DataFrame(sa, columns=["setting", "variant", "variable", "value",
                                                 "n_queries", "channel", "z", "delta", "p",
                                                 "named"]),
    }


@pytest.fixture
def make_results(tmp_path, rng):
    """Factory: ``make_results(name='results', **kw) -> (path, frames)``."""

    def make(name: str = "results", **kw: Any) -> tuple[Path, dict[str, Any]]:
        root = tmp_path / name
        return root, build_results(root, rng, **kw)

    return make


@pytest.fixture
def results(make_results):
    """A complete results folder: ``(path, frames)``."""
    return make_results()
