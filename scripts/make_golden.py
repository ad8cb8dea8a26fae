#!/usr/bin/env python
"""Write the golden fixtures that pin ARIA's numbers: tests/data/golden/*.json.

A fixed small score matrix (segments × queries, with planted track structure) and a fixed
audio feature store are built from a seeded generator; the script computes the reliability
diagnostics, S_track (z-score and rank), the homogeneity K-sweep summary (original and rank-1
residual) and the axis–channel alignment, and writes them as JSON. ``tests/common/test_golden.py``
recomputes the same with :func:`compute` and compares to 1e-10, so a refactor that moves a
number fails loudly.

Rerun only on purpose, when a change of behaviour is intended, and say why in the commit::

    .venv/bin/python scripts/make_golden.py            # rewrite the fixtures
    .venv/bin/python scripts/make_golden.py --check    # compare only (what the test does)
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any

import numpy as np

GOLDEN_DIR = Path(__file__).resolve().parents[1] / "tests" / "data" / "golden"
SEED = 20261126
N_TRACKS, SEG_PER_TRACK, N_QUERIES = 48, 3, 24
KS = (5, 10)


def _inputs(tmp: Path) -> tuple[np.ndarray, np.ndarray, list[str], Path]:
    """The fixed score matrix, segment→track map, track ids and feature store."""
    import aria_tda
    from aria_tda.features.registry import channels

    rng = np.random.default_rng(SEED)
    ids = [f"track{i:02d}" for i in range(N_TRACKS)]
    # latent musical factors: tracks in 4 clusters; queries prefer one cluster each
    cluster = np.arange(N_TRACKS) % 4
    feats: dict[str, Any] = {}
    for spec in (s for specs in channels("audio").values() for s in specs):
        if spec.kind == "vector":
            centre = rng.standard_normal((4, spec.dim))
            feats[spec.name] = centre[cluster] * 0.8 + rng.standard_normal((N_TRACKS, spec.dim))
        else:
            feats[spec.name] = [
                (rng.integers(0, 3, int(rng.integers(3, 9))) + 3 * cluster[i]) % 12
                for i in range(N_TRACKS)
            ]
    genre = np.array(["chorale", "folk", "rag", "madrigal"])[cluster]
    import pandas as pd

    meta = pd.DataFrame({"genre": genre}, index=pd.Index(ids, name="track_id"))
    store = tmp / "store"
    aria_tda.write_store(store, modality="audio", track_ids=ids, features=feats, metadata=meta)

    q_cluster = np.arange(N_QUERIES) % 4
    global_axis = rng.standard_normal(N_TRACKS)  # a shared (popularity) direction
    track_scores = (
        1.5 * (cluster[:, None] == q_cluster[None, :])
        + 0.7 * global_axis[:, None]
        + rng.standard_normal((N_TRACKS, N_QUERIES))
    )
    seg_track = np.repeat(np.arange(N_TRACKS), SEG_PER_TRACK)
    scores = track_scores[seg_track] + 0.3 * rng.standard_normal((seg_track.size, N_QUERIES))
    return scores.astype(np.float64), np.asarray(ids)[seg_track], ids, store


def _plain(x: Any) -> Any:
    if isinstance(x, dict):
        return {str(k): _plain(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_plain(v) for v in x]
    if isinstance(x, np.ndarray):
        return _plain(x.tolist())
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, float) and not np.isfinite(x):
        return None if np.isnan(x) else ("inf" if x > 0 else "-inf")
    return x


def _frame(df: Any) -> dict[str, Any]:
    df = df.reset_index(drop=df.index.name is None and not isinstance(df.index.names[0], str))
    return {c: _plain(df[c].to_numpy()) for c in df.columns}


def compute() -> dict[str, dict[str, Any]]:
    """Recompute every golden fixture: {file stem: JSON-able content}."""
    import aria_tda

    out: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as td, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tmp = Path(td)
        scores, seg_ids, ids, store_path = _inputs(tmp)
        d = aria_tda.diagnose(scores, with_u1=True)
        out["diagnostics"] = _plain({k: v for k, v in d.to_dict().items()})
        # the same matrix as tiny float32 scores with columns 1e20 apart in magnitude: the
        # scale-free numbers (kappa, p, the constant columns) must not move, and r_i of the
        # whole-matrix-scaled copy neither (tests/common/test_golden.py checks both)
        col = np.logspace(-10, 10, scores.shape[1])
        scaled = {
            "x1e-21": aria_tda.diagnose((scores * 1e-21).astype(np.float32)).to_dict(),
            "x1e-21_columns_1e20_apart": aria_tda.diagnose(
                (scores * col * 1e-21).astype(np.float32)
            ).to_dict(),
        }
        out["diagnostics_scaled"] = _plain(scaled)

        tracks: dict[str, Any] = {}
        for method in ("zscore", "rank"):
            for resid in (False, True):
                s = aria_tda.aggregate(
                    scores, segments=seg_ids, normalize=method, residual=resid, tracks=ids
                )
                tracks[f"{method}{'_residual' if resid else ''}"] = s.to_numpy()
        out["s_track"] = _plain(tracks)

        store = aria_tda.FeatureStore.open(store_path)
        prepared = aria_tda.prepare_channels(store)
        summaries: dict[str, Any] = {}
        null = None
        for name in ("zscore", "zscore_residual"):
            res, null, groups = aria_tda.run_homogeneity(
                tracks[name], prepared, ks=list(KS), B=50, seed=0, null=null, n_jobs=1
            )
            summaries[name] = {
                "summary": _frame(res.summary(n_boot=200, seed=0)),
                "groups": _plain(np.asarray(groups)),
            }
        out["homogeneity"] = summaries

        from aria_tda.alignment import sequence_histogram
        from aria_tda.features.registry import channels as registry_channels

        # u1 of S_track (as the study runner takes it), against each channel's feature groups
        u1_track = aria_tda.rank1(tracks["zscore"]).u1
        by_channel: dict[str, dict[str, np.ndarray]] = {}
        for channel, specs in registry_channels("audio").items():
            groups_c: dict[str, np.ndarray] = {}
            for s in specs:
                if s.kind == "vector":
                    groups_c[s.name] = store.vectors(s.name)
                else:
                    groups_c[s.name] = sequence_histogram(
                        [np.asarray(q, dtype=np.int64) for q in store.sequences(s.name)]
                    )
            by_channel[channel] = groups_c
        al = aria_tda.channel_alignment(u1_track, by_channel)
        out["alignment"] = _plain({c: r.to_dict() for c, r in al.items()})
        # and a u1 planted on the harmony channel, so the cross-validated fit is exercised
        rng = np.random.default_rng(SEED + 1)
        chroma = by_channel["harmony"]["chroma"]
        planted = (chroma - chroma.mean(0)) @ rng.standard_normal(chroma.shape[1])
        planted = planted / np.linalg.norm(planted) + 0.02 * rng.standard_normal(N_TRACKS)
        al = aria_tda.channel_alignment(planted, by_channel)
        out["alignment_planted"] = _plain({c: r.to_dict() for c, r in al.items()})
    return out


def _compare(a: Any, b: Any, where: str, tol: float) -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        errs = [f"{where}: keys differ {sorted(set(a) ^ set(b))}"] if set(a) != set(b) else []
        for k in set(a) & set(b):
            errs += _compare(a[k], b[k], f"{where}.{k}", tol)
        return errs
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{where}: length {len(a)} != {len(b)}"]
        errs = []
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            errs += _compare(x, y, f"{where}[{i}]", tol)
            if len(errs) > 20:
                break
        return errs
    if isinstance(a, float) and isinstance(b, int | float) and not isinstance(b, bool):
        if abs(a - b) <= tol * max(1.0, abs(a), abs(b)):
            return []
        return [f"{where}: {a!r} != {b!r}"]
    return [] if a == b else [f"{where}: {a!r} != {b!r}"]


def check(tol: float = 1e-10) -> list[str]:
    """Recompute and compare with the stored fixtures; returns the differences."""
    fresh = json.loads(json.dumps(compute()))
    errs: list[str] = []
    for stem, content in fresh.items():
        path = GOLDEN_DIR / f"{stem}.json"
        if not path.exists():
            errs.append(f"{path}: missing (run scripts/make_golden.py)")
            continue
        errs += _compare(json.loads(path.read_text()), content, stem, tol)
    return errs


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="compare with the stored fixtures only")
    args = ap.parse_args(argv)
    if args.check:
        errs = check()
        print("\n".join(errs) if errs else "golden fixtures match")
        return 1 if errs else 0
    GOLDEN_DIR.mkdir(parents=True, exist_ok=True)
    for stem, content in compute().items():
        (GOLDEN_DIR / f"{stem}.json").write_text(
            json.dumps(content, indent=1, sort_keys=True) + "\n"
        )
        print(f"wrote {GOLDEN_DIR / f'{stem}.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
