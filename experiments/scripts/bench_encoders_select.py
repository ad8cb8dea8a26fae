"""Choose clews-style's settings on a validation split, never on the benchmark's queries.

Usage::

    .venv/bin/python benchmarks/bench_encoders_select.py features          # cache the CQTs
    .venv/bin/python benchmarks/bench_encoders_select.py trial NAME '{"steps": 1000}' \\
        --seeds 0 1 --workers 2                                            # train + score
    .venv/bin/python benchmarks/bench_encoders_select.py export DIR        # for another machine
    python3 benchmarks/bench_encoders_select.py sweep DIR GRID.json --device cuda --workers 16

The benchmark (``bench_encoders.py``) asks: does a held-out version (version 2 of the 30
training works of the audio demo's ``default`` preset, plus the 6 planted versions, version 3)
retrieve a version of its own work among the 60 training tracks (versions 0-1)? Settings chosen
by looking at those 36 queries would overfit them, so every setting is chosen here instead, on
a validation split of the same shape: version 4 of every training work is held out too (the
validation queries, 30), clews-style trains on versions 0, 1 and 5-9 (210 tracks; never on 2,
3 or 4), the gallery is versions 0-1 (60 tracks), and the figure is the number of validation
queries whose most cosine-similar gallery track (time-averaged embeddings, as the benchmark)
is a version of their own work. Once that split saturates (30/30), ``--val-versions 4 5``
holds out two versions (60 queries; training on versions 0, 1 and 6-9) — a harder split.
``--extra-works E`` adds ``E`` more works per collection, in no split of the demo, with all
their versions, to the training data only (the benchmark's ``CLEWS_EXTRA_WORKS``): the
validation queries and the gallery stay the demo's training works. ``--clews-versions V``
renders ``V`` versions per work (the benchmark's ``CLEWS_VERSIONS``; 11 = every instrument
family).

``--match-families`` is a third split, built because the benchmark's queries are organ-heavy (6
of 36, against 3 of the harder split's 60) and organ renderings were its misses: two tracks per
training work from versions 4-9, chosen so that their instrument families follow the benchmark
queries' family mix (59 queries, 10 of them organ), training on the rest (181 tracks). It uses
the benchmark queries' families (metadata), never their results.

An ensemble of ``n_models`` members with seeds ``s, s+1, ...`` is exactly its members trained
alone (:func:`~aria_tda_experiments.encoders.train.train_version_contrastive` seeds member ``k``
with ``seed + k``), so each member is trained once (``n_models=1``) and its track embeddings kept;
ensembles are scored from them (the members' normalised window embeddings concatenated and
scaled by ``1/sqrt(n)``, averaged over windows = the members' averages concatenated).

Every trial (its config overrides, seeds, machine, the members' and ensembles' scores) is
appended to ``experiments/results/bench_encoders_select.json``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import sys
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor, as_completed
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np

OUT = Path(__file__).resolve().parents[1] / "results" / "bench_encoders_select.json"
CACHE = Path(os.environ.get("ARIA_CACHE_DIR") or Path.home() / ".cache" / "aria")
VALIDATION_VERSIONS: tuple[int, ...] = (4,)


def _family_matched(rows: Any, fit_works: set[str], query_families: list[str],
                    per_work: int = 2) -> Any:
    """Boolean mask of ``rows``: ``per_work`` validation tracks per training work whose
    instrument families follow the benchmark queries' family mix (largest remainders), chosen
    greedily among versions 4-9 (scarcest family first, works in a fixed seeded order)."""
    import pandas as pd

    works = sorted(fit_works)
    n_val = per_work * len(works)
    counts = pd.Series(query_families).value_counts()
    exact = counts / counts.sum() * n_val
    quota = exact.astype(int)
    for f in (exact - quota).sort_values(ascending=False).index[: n_val - int(quota.sum())]:
        quota[f] += 1
    # versions 2..9 (2-3 are not in ``rows``): the same queries whatever is rendered beyond
    cand = rows["work_id"].isin(fit_works) & rows["version"].between(2, 9)
    order = {w: i for i, w in enumerate(np.random.default_rng(0).permutation(works))}
    held = pd.Series(False, index=rows.index)
    n_held = dict.fromkeys(works, 0)
    avail = rows[cand].groupby("instrument_family")["work_id"].nunique()
    for f in sorted(quota.index, key=lambda f: (avail.get(f, 0) / max(quota[f], 1), f)):
        pool = rows[cand & (rows["instrument_family"] == f)]
        for i in sorted(pool.index, key=lambda i: order[pool.at[i, "work_id"]]):
            w = pool.at[i, "work_id"]
            if quota[f] and n_held[w] < per_work:
                held[i] = True
                n_held[w] += 1
                quota[f] -= 1
    return held


def _split(preset: str, seed: int, val_versions: tuple[int, ...] = VALIDATION_VERSIONS,
           extra_works: int = 0, versions: int | None = None,
           match_families: bool = False) -> dict[str, Any]:
    """Corpus, extended corpus and the validation split's rows (train / queries / gallery)."""
    from aria_tda_experiments.audio.corpus import build_audio_corpus
    from aria_tda_experiments.audio.encoders import (
        CLEWS_VERSIONS,
        clews_training_tracks,
        encoder_split,
        versions_corpus,
    )
    from aria_tda_experiments.audio.presets import audio_preset

    cfg = audio_preset(preset).corpus_config(seed)
    corpus = build_audio_corpus(CACHE / "bench-audio-corpus" / f"{preset}-{cfg.digest()}",
                                config=cfg, n_jobs=1)
    enc_dir = CACHE / "bench-encoders" / f"{preset}-{cfg.digest()}-s{seed}"
    versions = versions or CLEWS_VERSIONS
    tag = (f"-x{extra_works}" if extra_works else "") + (
        f"-n{versions}" if versions != CLEWS_VERSIONS else "")
    ext = versions_corpus(corpus, enc_dir / f"clews-corpus{tag}", versions,
                          extra_works=extra_works, n_jobs=os.cpu_count() or 1)
    fit, queries = encoder_split(corpus)
    rows = clews_training_tracks(corpus, ext)
    if set(val_versions) & set(queries["version"]) or set(val_versions) & {0, 1}:
        raise SystemExit(f"--val-versions {list(val_versions)}: must not be a query version "
                         f"({sorted(set(queries['version']))}) or a gallery version (0, 1)")
    # the demo's training works' validation versions; the extra works (in no split of the
    # demo) train on all their versions, as in the benchmark
    held = rows["version"].isin(val_versions) & rows["work_id"].isin(set(fit["work_id"]))
    if match_families:
        held = _family_matched(rows, set(fit["work_id"]), queries["instrument_family"].tolist())
    train = rows[~held].reset_index(drop=True)
    val = rows[held].reset_index(drop=True)
    t = ext.tracks.set_index("track_id")
    gallery = t.loc[fit["track_id"]].reset_index()
    return {"ext": ext, "train": train, "val": val, "gallery": gallery,
            "key": f"{preset}-{cfg.digest()}-s{seed}" + (
                "-fam" if match_families else "" if tuple(val_versions) == VALIDATION_VERSIONS
                else "-v" + "".join(map(str, sorted(val_versions))))
                + tag}


def features(preset: str, seed: int, val_versions: tuple[int, ...] = VALIDATION_VERSIONS,
             extra_works: int = 0, versions: int | None = None,
             match_families: bool = False) -> Path:
    """CQT magnitudes (clews-style's default CQT) of every track of the validation split."""
    from aria_tda_experiments.audio.encoders import load_clips
    from aria_tda_experiments.encoders import ClewsStyleConfig
    from aria_tda_experiments.encoders.frontends import cqt

    s = _split(preset, seed, val_versions, extra_works, versions, match_families)
    path = CACHE / "bench-encoders-select" / s["key"] / "cqt.npz"
    if path.is_file():
        return path
    c = ClewsStyleConfig()
    parts = {k: s[k] for k in ("train", "val", "gallery")}
    mags, ids = {}, []
    for rows in parts.values():
        for tid, y in zip(rows["track_id"], load_clips(s["ext"], rows, c.sample_rate), strict=True):
            if tid not in mags:
                mags[tid] = cqt(y, sr=c.sample_rate, hop=c.hop, fmin=c.fmin, n_bins=c.n_bins,
                                bins_per_octave=c.bins_per_octave).astype(np.float32)
                ids.append(tid)
    meta = {part: {"track_id": rows["track_id"].tolist(), "work_id": rows["work_id"].tolist(),
                   "tempo_scale": rows["tempo_scale"].astype(float).tolist(),
                   "instrument_family": rows["instrument_family"].tolist(),
                   "version": rows["version"].astype(int).tolist()}
            for part, rows in parts.items()}
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(path, ids=np.array(ids), mags=np.stack([mags[i] for i in ids]),
             meta=np.array(json.dumps(meta)))
    return path


def _load_features(path: Path) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    z = np.load(path)
    if "mags" in z:
        mags = z["mags"]
    else:  # exported: dB in float16
        mags = (10.0 ** (z["db"].astype(np.float32) / 20.0)).astype(np.float32)
    return dict(zip(z["ids"].tolist(), mags, strict=True)), json.loads(str(z["meta"]))


def train_member(path: str, overrides: dict[str, Any], seed: int,
                 device: str = "cpu") -> dict[str, Any]:
    """Train one member (``n_models=1``) and embed the validation queries and the gallery."""
    import pandas as pd
    import torch

    from aria_tda_experiments.encoders import ClewsStyleConfig, OfflineEncoder
    from aria_tda_experiments.encoders.encoder import clews_input
    from aria_tda_experiments.encoders.train import train_version_contrastive

    if device.startswith("cuda"):
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cuda.matmul.allow_tf32 = False
    mags, meta = _load_features(Path(path))
    cfg = ClewsStyleConfig().replace(**{**overrides, "n_models": 1})
    tr = meta["train"]
    feats = [clews_input(mags[t], cfg) for t in tr["track_id"]]
    groups = pd.factorize(pd.Series(tr["work_id"]))[0]
    model, rec = train_version_contrastive(feats, groups, config=cfg,
                                           rates=list(tr["tempo_scale"]),
                                           families=tr["instrument_family"], seed=seed,
                                           threads=1, progress_bar=False, device=device)
    enc = OfflineEncoder("clews-style", cfg, model, device=device)
    emb = {part: np.stack([enc.embed_features(clews_input(mags[t], cfg)).mean(axis=0)
                           for t in meta[part]["track_id"]]) for part in ("val", "gallery")}
    k = max(1, len(rec["losses"]) // 10)
    return {"seed": seed, "train_seconds": rec["seconds"],
            "loss_last_10pct": round(float(np.mean(rec["losses"][-k:])), 4), **emb}


def score(members: list[dict[str, Any]], meta: dict[str, Any]) -> tuple[int, list[str]]:
    """Hits of the ensemble of ``members`` and the instrument families of its misses."""
    def emb(part: str) -> np.ndarray:
        e = np.concatenate([m[part] for m in members], axis=1)
        return e / np.linalg.norm(e, axis=1, keepdims=True)

    q, g = emb("val"), emb("gallery")
    top = np.argmax(q @ g.T, axis=1)
    qw = np.asarray(meta["val"]["work_id"])
    gw = np.asarray(meta["gallery"]["work_id"])
    hit = gw[top] == qw
    fams = np.asarray(meta["val"]["instrument_family"])
    return int(hit.sum()), sorted(fams[~hit].tolist())


def _summary(name: str, overrides: dict[str, Any], members: list[dict[str, Any]],
             meta: dict[str, Any], machine: str) -> dict[str, Any]:
    n_q = len(meta["val"]["track_id"])
    by_seed = {m["seed"]: m for m in members}
    seeds = sorted(by_seed)
    ens: dict[str, Any] = {}
    for n in range(2, len(seeds) + 1):
        for combo in combinations(seeds, n):
            if list(combo) == list(range(combo[0], combo[0] + n)):  # consecutive: an n_models
                hits, miss = score([by_seed[s] for s in combo], meta)
                ens[f"n_models={n} seed={combo[0]}"] = {"hits": hits, "misses": miss}
    single = {str(s): score([by_seed[s]], meta)[0] for s in seeds}
    return {
        "name": name, "overrides": overrides, "machine": machine, "n_queries": n_q,
        "val_versions": sorted(set(meta["val"]["version"])),
        "single": single, "ensembles": ens,
        "train_seconds_per_member": {str(s): by_seed[s]["train_seconds"] for s in seeds},
        "loss_last_10pct": {str(s): by_seed[s]["loss_last_10pct"] for s in seeds},
    }


def _machine(device: str) -> str:
    import torch

    return (f"{platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__}, "
            f"training on {device}" + (f" ({torch.cuda.get_device_name()})"
                                       if device.startswith("cuda") else ""))


def _record(rows: list[dict[str, Any]], out: Path) -> None:
    data: dict[str, Any] = json.loads(out.read_text()) if out.is_file() else {
        "protocol": " ".join(p.replace("\n", " ") for p in (__doc__ or "").split("\n\n")
                             if p.startswith(("The benchmark", "An ensemble"))),
        "trials": []}
    data["trials"] = [*data["trials"], *rows]
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(data, indent=1) + "\n")


def _member_cache(path: Path, overrides: dict[str, Any], seed: int, device: str) -> Path:
    key = json.dumps([overrides, seed, device, path.stat().st_size], sort_keys=True)
    return path.parent / "members" / (hashlib.sha256(key.encode()).hexdigest()[:16] + ".npz")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    ap.add_argument("mode", choices=("features", "trial", "export", "sensitivity"))
    ap.add_argument("args", nargs="*")
    ap.add_argument("--preset", default="default")
    ap.add_argument("--seed", type=int, default=0, help="corpus seed")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1], help="member seeds")
    ap.add_argument("--val-versions", type=int, nargs="+", default=list(VALIDATION_VERSIONS),
                    help="versions held out as validation queries (default 4; '4 5' is a "
                         "harder split: 60 queries, training on versions 0, 1 and 6-9)")
    ap.add_argument("--extra-works", type=int, default=0,
                    help="more works per collection, all their versions in training only "
                         "(in no split of the demo; CLEWS_EXTRA_WORKS of the demo)")
    ap.add_argument("--clews-versions", type=int, default=None,
                    help="versions per work rendered for training (default CLEWS_VERSIONS)")
    ap.add_argument("--match-families", action="store_true",
                    help="validation queries: two tracks per training work (never versions "
                         "0-3) whose instrument families follow the benchmark queries' mix "
                         "(replaces --val-versions)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--workers", type=int, default=1,
                    help="members trained at once (processes, one thread each)")
    ap.add_argument("--out", type=Path, default=OUT)
    a = ap.parse_args()
    split = (a.preset, a.seed, tuple(a.val_versions), a.extra_works, a.clews_versions,
             a.match_families)
    if a.mode == "features":
        print(features(*split))
        return
    if a.mode == "export":
        path = features(*split)
        mags, meta = _load_features(path)
        ids = list(mags)
        db = np.stack([20.0 * np.log10(np.maximum(mags[i], 1e-7)) for i in ids])
        dst = Path(a.args[0])
        dst.mkdir(parents=True, exist_ok=True)
        np.savez_compressed(dst / "cqt.npz", ids=np.array(ids), db=db.astype(np.float16),
                            meta=np.array(json.dumps(meta)))
        print(dst / "cqt.npz")
        return
    if a.mode == "trial":
        name, overrides = a.args[0], json.loads(a.args[1] if len(a.args) > 1 else "{}")
        path = features(*split)
        _, meta = _load_features(path)
        members = []
        todo = []
        for s in a.seeds:
            cache = _member_cache(path, overrides, s, a.device)
            if cache.is_file():
                z = np.load(cache)
                members.append({k: (z[k] if z[k].ndim else z[k].item()) for k in z.files})
            else:
                todo.append(s)
        with ProcessPoolExecutor(max(1, min(a.workers, len(todo) or 1))) as pool:
            futs = {pool.submit(train_member, str(path), overrides, s, a.device): s
                    for s in todo}
            for f in as_completed(futs):  # each member is cached as soon as it finishes
                m = f.result()
                cache = _member_cache(path, overrides, futs[f], a.device)
                cache.parent.mkdir(parents=True, exist_ok=True)
                np.savez(cache, **m)
                members.append(m)
                print(f"{name} seed {futs[f]}: {score([m], meta)[0]}/"
                      f"{len(meta['val']['track_id'])} ({m['train_seconds']:.0f} s)", flush=True)
        from aria_tda_experiments.audio.encoders import CLEWS_VERSIONS

        row = {**_summary(name, overrides, members, meta, _machine(a.device)),
               "extra_works": a.extra_works, "clews_versions": a.clews_versions or CLEWS_VERSIONS,
               "n_train_tracks": len(meta["train"]["track_id"]),
               "match_families": a.match_families,
               "val_families": dict(sorted(Counter(meta["val"]["instrument_family"]).items()))}
        print(json.dumps({k: row[k] for k in ("name", "single", "ensembles")}), flush=True)
        _record([row], a.out)
        return
    # sweep: a grid {name: overrides} x seeds, members in parallel processes (another machine);
    # every finished member is saved at once (a run cut short keeps what it finished)
    src, grid_path = Path(a.args[0]) / "cqt.npz", Path(a.args[1])
    grid = json.loads(grid_path.read_text())
    _, meta = _load_features(src)
    jobs = [(name, s) for s in a.seeds for name in grid]  # every config's first seeds first
    t0 = time.perf_counter()
    results: dict[str, list[dict[str, Any]]] = {n: [] for n in grid}
    a.out.mkdir(parents=True, exist_ok=True)
    with ProcessPoolExecutor(a.workers) as pool:
        futs = {pool.submit(train_member, str(src), grid[n], s, a.device): (n, s)
                for n, s in jobs}
        for f in as_completed(futs):
            n, s = futs[f]
            try:
                m = f.result()
            except Exception as e:  # record, go on
                print(f"{n} seed {s} failed: {e!r}", file=sys.stderr, flush=True)
                continue
            results[n].append(m)
            print(f"{time.perf_counter() - t0:6.0f} s  {n} seed {s}: {score([m], meta)[0]}/"
                  f"{len(meta['val']['track_id'])} "
                  f"({m['train_seconds']:.0f} s)", flush=True)
            arrays = {f"{k}|{mm['seed']}|{part}": mm[part] for k, ms in results.items()
                      for mm in ms for part in ("val", "gallery")}
            np.savez(a.out / "members.tmp.npz", **arrays)
            os.replace(a.out / "members.tmp.npz", a.out / "members.npz")
            rows = [_summary(k, grid[k], ms, meta, _machine(a.device))
                    for k, ms in results.items() if ms]
            (a.out / "sweep.json").write_text(json.dumps(
                {"trials": rows, "wall_seconds": round(time.perf_counter() - t0, 1)},
                indent=1) + "\n")

if __name__ == "__main__":
    main()
