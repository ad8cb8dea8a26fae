"""Results folders with the experiments' tables, for the tests of their report sections.

The library's fixture (``tests/report/conftest.py``: ``build_results``, ARIA's own tables) is
loaded from its file; :func:`write_experiment_tables` adds planted influence and the TRAK
sensitivity sweep as the audio demo and ``aria-tda sensitivity`` write them, and
:func:`write_planted_aspects` the six tables of ``aria-tda demo planted``.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from aria_tda.results import read_table, write_table
from aria_tda_experiments.report.planted_aspects import CONTROL


def _library_fixtures() -> Any:
    path = Path(__file__).resolve().parents[3] / "tests" / "report" / "conftest.py"
    spec = importlib.util.spec_from_file_location("_aria_report_test_fixtures", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_LIB = _library_fixtures()
#: The library fixture's settings, the label full of special characters and its writer.
SETTINGS = _LIB.SETTINGS
NASTY = _LIB.NASTY
build_library_results = _LIB.build_results

#: The planted-aspect tables the report shows, and the K-sweep table.
NEW_TABLES = ("planted_aspects", "planted_confusion", "planted_naming", "planted_effects",
              "planted_agreement", "planted_sweep")
SWEEP_KS = (5, 10, 20)


def write_experiment_tables(root: Path, rng: np.random.Generator, *,
                            channels: tuple[str, ...] = ("rhythm", "harmony", "timbre"),
                            ) -> dict[str, pd.DataFrame]:
    """Write ``planted`` and ``sensitivity`` into the results folder ``root``; returns them as
    stored."""
    out: dict[str, pd.DataFrame] = {}
    out["planted"] = pd.DataFrame(
        [
            (s, m, st, level, K, min(1.0, 0.2 * i + K / 100), 5, 8)
            for i, (s, m, st, *_r) in enumerate(SETTINGS)
            for level in ("segment", "track")
            for K in (10, 50)
        ],
        columns=[
            "setting",
            "method",
            "stage",
            "level",
            "K",
            "recall",
            "n_queries",
            "n_train_works",
        ],
    )
    sens = []
    for proj in (2048, 4096):
        for lam in (0.0, 0.01, 1.0):
            for st in ("semantic", "fine"):
                for c in channels:
                    sens.append(
                        (
                            proj,
                            lam,
                            300,
                            c,
                            float(rng.normal(0, 2)),
                            st,
                            proj == 4096 and lam == 0.01,
                        )
                    )
    out["sensitivity"] = pd.DataFrame(
        sens, columns=["proj_dim", "lam", "K", "channel", "zbar", "stage", "selected"]
    )
    for name, df in out.items():
        write_table(root, name, df)
        out[name] = read_table(root, name)
    return out


def build_results(root: Path, rng: np.random.Generator, **kw: Any) -> dict[str, Any]:
    """The library fixture's folder plus the experiments' ``planted`` and ``sensitivity``."""
    frames = build_library_results(root, rng, **kw)
    channels = tuple(kw.get("channels", ("rhythm", "harmony", "timbre")))
    frames.update(write_experiment_tables(root, rng, channels=channels))
    return frames


def _leader(si: int, ai: int, channels: tuple[str, ...]) -> str:
    """The fixture's leading channel: the planted aspect when si + ai is even, else the next."""
    return channels[ai] if (si + ai) % 2 == 0 else channels[(ai + 1) % len(channels)]


def write_planted_aspects(
    root: Path, rng: np.random.Generator, *, channels: tuple[str, ...] = ("rhythm", "harmony",
                                                                          "timbre"),
    modality: str = "audio", n_train: int = 400, k: int = 16,
) -> dict[str, pd.DataFrame]:
    """Write the six planted-aspect tables (as the demo would) into the results folder ``root``;
    returns them as stored."""
    settings = [s for s, *_ in SETTINGS]
    aspects = [*channels, CONTROL]
    out: dict[str, pd.DataFrame] = {}
    rows = []
    for si, (s, m, *_r) in enumerate(SETTINGS):
        for ai, a in enumerate(aspects):
            rec = float(rng.uniform(0.01, 0.9))
            ap = float(rng.uniform(0.01, 0.8))
            control = a == CONTROL
            top = channels[si % len(channels)] if control else _leader(si, ai, channels)
            top_r = channels[(si + 1) % len(channels)] if control else _leader(si + 1, ai, channels)
            rows.append({
                "modality": modality, "setting": s, "method": m, "aspect": a, "k": k,
                "n_queries": 8, "recall_at_k": rec, "chance": k / n_train,
                "ci_low": max(0.0, rec - 0.2), "ci_high": min(1.0, rec + 0.1),
                "average_precision": ap, "ap_chance": 0.05, "ap_ci_low": max(0.0, ap - 0.1),
                "ap_ci_high": min(1.0, ap + 0.1), "found": rec > 0.5,
                "learned": None if control else True,
                "learned_effect": np.nan if control else float(rng.uniform(0.05, 0.5)),
                "counterfactual_effect": float(rng.normal(0.1, 0.05)),
                "cf_ci_low": float(rng.uniform(-0.05, 0.05)), "cf_ci_high": 0.3,
                "top_channel": top, "top_channel_z": float(rng.normal(1.5, 1)),
                "top_channel_sig": bool(si % 2 == 0), "aspect_z": float(rng.normal(0.5, 1)),
                "right": None if control else top == a,
                "top_channel_residual": top_r, "top_channel_z_residual": float(rng.normal(1, 1)),
                "right_residual": None if control else top_r == a,
                "top_channel_vs_control": None if control else channels[(si + ai) % 3],
                "top_channel_vs_control_dz": np.nan if control else float(rng.normal(1, 0.5)),
            })
    out["planted_aspects"] = pd.DataFrame(rows).iloc[::-1]  # written out of order
    conf, naming = [], []
    for si, s in enumerate(settings):
        for vi, v in enumerate(("original", "residual")):
            n_right = 0
            for ai, a in enumerate(channels):
                lead = _leader(si + vi, ai, channels)
                counts = {lead: 5, channels[(ai + 2) % len(channels)]: 3}
                for c, n in counts.items():  # only non-zero cells are written
                    conf.append((modality, s, v, a, c, n, n / 8))
                n_right += counts.get(a, 0)
            naming.append((modality, s, v, 8 * len(channels), n_right, 10, 4, 0.4))
    out["planted_confusion"] = pd.DataFrame(
        conf, columns=["modality", "setting", "variant", "aspect", "channel", "n_queries", "share"])
    out["planted_naming"] = pd.DataFrame(naming, columns=[
        "modality", "setting", "variant", "n_queries", "n_right", "n_found", "n_right_found",
        "right_when_found"])
    eff = []
    for a in channels:
        for seed in (1, 0):
            e = float(rng.uniform(0.1, 0.4))
            eff.append((modality, "learned", a, seed, e, e - 0.05, e + 0.05, 12, True,
                        "nats/token"))
        e = float(rng.uniform(0.0, 0.2))
        eff.append((modality, "counterfactual", a, None, e, e - 0.1, e + 0.1, 8, None,
                    "nats/token"))
    out["planted_effects"] = pd.DataFrame(eff, columns=[
        "modality", "kind", "aspect", "seed", "effect", "ci_low", "ci_high", "n", "learned",
        "measure"]).iloc[::-1]
    out["planted_agreement"] = pd.DataFrame(
        [(modality, d, float(rng.uniform(-1, 1)), 0.125, float(rng.uniform(-1, 1)), 0.2, 4,
          ";".join(settings), ";".join(reversed(settings))) for d in ("p", "kappa", "r1")],
        columns=["modality", "diagnostic", "spearman", "spearman_p_exact", "kendall",
                 "kendall_p_exact", "n_methods", "methods", "order"])
    sweep = []
    for s in settings:
        for a in aspects:
            for v in ("original", "residual"):
                for kk in SWEEP_KS:
                    for c in channels:
                        z = float(rng.normal(2.0 if c == a else 0.0, 0.5))
                        sweep.append((modality, s, v, a, kk, c, z, z - 0.4, z + 0.4, 8))
    out["planted_sweep"] = pd.DataFrame(sweep, columns=[
        "modality", "setting", "variant", "aspect", "K", "channel", "zbar", "zbar_lo", "zbar_hi",
        "n_queries"])
    for name, df in out.items():
        write_table(root, name, df)
        out[name] = read_table(root, name)
    return out
