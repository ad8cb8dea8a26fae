r"""The audio planted side's model, query, effect, feature and attribution stages.

Split from :mod:`.audio` (which plans the items, renders the plants, tokenises and calls these
in order; the stage descriptions are in its docstring). Every function takes the preset ``p``
(:class:`~.audio.AudioPlantedPreset`) and the demo runner.

Effects (:func:`effect_tables`), control-adjusted as the symbolic side
(:func:`aria_tda_experiments.planted.symbolic.effects`):

- **learned** (per aspect and seed): per held-out item, the continuation loss after the prompt
  (nats/token, mean over the item's windows) under the model without the aspect's marked set
  minus under the full model of the same seed; the plant's items' mean *minus* the control
  (plain) items' mean under the same two models, with the two-sample bootstrap interval of
  :func:`~.effects.mean_difference_interval`; learned = the interval lies above 0. The
  ``control`` row holds the control items' shift alone (averaged over the three models without
  a set; ``learned`` empty).
- **counterfactual** (per aspect): per query, the attribution target (the stage's training
  loss over the query's whole window, prompt and continuation) under the model without the
  marked set minus the full model, averaged over seeds; plant queries minus control queries.
  The query is likelier under the model that generated it, and removing rows moves every loss:
  the control queries' rise, also in the ``control`` row, takes both out.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from aria_tda_experiments.planted.audio_plants import AUDIO_ASPECTS
from aria_tda_experiments.planted.data import COUNTERFACTUAL_COLUMNS, LEARNED_COLUMNS

if TYPE_CHECKING:
    from aria_tda_experiments.planted.audio import AudioPlantedPreset
    from aria_tda_experiments.stage_runner import StageRunner

__all__ = ["AUDIO_PLANTED_METHODS", "effect_tables", "equal_steps_config", "model_names",
           "tracin_trajectory"]

#: Attribution methods of the audio side (every method run_methods has for the stage model).
AUDIO_PLANTED_METHODS: tuple[str, ...] = ("TRAK", "TracIn", "GradDot", "GradCos", "LoGra",
                                          "FactGraSS")
STAGE = "semantic"
#: Track metadata kept in the feature store.
STORE_METADATA = ("work_id", "version", "genre", "collection", "instrument_family", "program",
                  "tempo_scale", "transpose", "plant")


def token_config(p: AudioPlantedPreset, seed: int) -> Any:
    """The tokenizers' configuration of preset ``p``.

    Parameters
    ----------
    p : AudioPlantedPreset
    seed : int
    """
    from aria_tda_experiments.audio.tokenizers import TokenizerConfig

    return TokenizerConfig(frame_hz=p.frame_hz, semantic_k=p.semantic_k,
                           rvq_codebook=p.rvq_codebook, cond_codebook=p.cond_codebook,
                           seed=seed)


def model_names(p: AudioPlantedPreset, seed: int) -> list[tuple[str, int]]:
    """``(group, seed)`` of every model, in the order of the loss arrays.

    Parameters
    ----------
    p : AudioPlantedPreset
    seed : int
        First seed.
    """
    return [(g, s) for g in ("full", *(f"without-{a}" for a in AUDIO_ASPECTS))
            for s in range(seed, seed + p.n_seeds)]


def equal_steps_config(cfg: Any, n_full: int, n_rows: int) -> Any:
    """``cfg`` with the batch size that gives ``n_rows`` rows the steps ``n_full`` rows take.

    ``steps = epochs * ceil(n / batch_size)`` (:mod:`aria_tda_experiments.train`): the
    smallest batch size with no more batches per epoch than the full set's; unchanged for
    the full set itself.

    Parameters
    ----------
    cfg : TrainConfig
        The full model's training configuration.
    n_full, n_rows : int
        Rows of the full training set and of the reduced one.
    """
    from dataclasses import replace

    per_epoch = -(-n_full // cfg.batch_size)
    bs = max(1, -(-n_rows // per_epoch))
    return cfg if bs == cfg.batch_size else replace(cfg, batch_size=bs)


@dataclass
class _Models:
    root: Path
    data: Any  # StageData of the training tracks
    query_start: int
    seed: int

    def path(self, group: str, s: int) -> Path:
        return self.root / group / f"member-{s - self.seed:02d}"


def model_stage(runner: StageRunner, p: AudioPlantedPreset, seed: int, train: pd.DataFrame,
                tokens: dict[str, Any], threads: int, progress: bool | None) -> _Models:
    from aria_tda_experiments.audio.stages import StageSpec, build_stage_data
    from aria_tda_experiments.audio.training import stage_model_config, stage_train_configs
    from aria_tda_experiments.train import TrainConfig
    from aria_tda_experiments.train.config import as_segments
    from aria_tda_experiments.train.ensembles import train_many

    spec = StageSpec.from_config(token_config(p, seed))
    data = build_stage_data(STAGE, {t: tokens[t] for t in train["item_id"]}, spec=spec)
    sizes = {"d_model": p.d_model, "n_layers": p.n_layers, "n_heads": p.n_heads, "d_ff": p.d_ff}
    mcfg, tcfg = stage_train_configs(
        data, stage_model_config(data.layout, **sizes),
        TrainConfig(epochs=p.epochs, batch_size=p.batch_size, lr=p.lr, num_threads=1))
    plant_of = dict(zip(train["item_id"], train["plant"], strict=True))
    row_plant = np.array([plant_of[t] for t in data.track_ids])
    rows = {"full": np.arange(len(row_plant))}
    rows.update({f"without-{a}": np.flatnonzero(row_plant != a) for a in AUDIO_ASPECTS})

    # a model without a marked set takes as many optimisation steps as the full model (its
    # batches a little smaller): fewer steps would raise its loss on every item, planted or
    # not, and that would pass for the plant's effect
    cfgs = {g: equal_steps_config(tcfg, len(rows["full"]), len(r)) for g, r in rows.items()}

    def _models(d: Path) -> dict[str, Any]:
        seg = as_segments(data.tokens)
        out = []
        for c in dict.fromkeys(cfgs.values()):  # one process pool per training config
            jobs = [(rows[g], s, d / g / f"member-{s - seed:02d}", f"{g} seed {s}")
                    for g, s in model_names(p, seed) if cfgs[g] == c]
            out += train_many(seg, jobs, model_config=mcfg, train_config=c, n_jobs=threads,
                              progress_bar=progress, desc="planted models", device="cpu")
        return {"n_models": len(out), "n_segments": int(data.tokens.shape[0]),
                "steps": {g: c.total_steps(len(rows[g])) for g, c in cfgs.items()},
                "final_loss": [round(float(m.losses[-1]), 4) for m in out]}

    mdir = runner.stage("audio-models", {"model": mcfg.to_dict(),
                                         "train": {g: c.to_dict() for g, c in cfgs.items()},
                                         "n_seeds": p.n_seeds, "seed": seed,
                                         "rows": {g: len(r) for g, r in rows.items()}},
                        ["audio-tokens"], _models, resumable=True)
    start = data.target_start + round(p.prompt_seconds * p.frame_hz)
    return _Models(root=mdir, data=data, query_start=start, seed=seed)


def query_stage(runner: StageRunner, p: AudioPlantedPreset, seed: int, held: pd.DataFrame,
                tokens: dict[str, Any], models: _Models, threads: int,
                progress: bool | None) -> tuple[pd.DataFrame, np.ndarray]:
    from aria_tda_experiments.audio.generate import sample_in_ranges
    from aria_tda_experiments.train import load_model

    layout = models.data.layout
    order = sorted(range(len(held)), key=lambda i: ((*AUDIO_ASPECTS, "none").index(
        held.at[i, "plant"]), held.at[i, "item_id"]))
    q = held.iloc[order].reset_index(drop=True)
    prompts = np.stack([layout.encode(tokens[i], 0)[: models.query_start] for i in q["item_id"]])
    lo, hi = layout.position_ranges()

    def _queries(d: Path) -> dict[str, Any]:
        model = load_model(models.path("full", seed))
        seqs = sample_in_ranges(model, prompts, lo, hi, seed=seed, num_threads=threads,
                                progress_bar=progress)
        np.save(d / "tokens.npy", np.asarray(seqs, dtype=np.int64))
        return {"n_queries": len(q)}

    qdir = runner.stage("audio-queries", {"prompt_seconds": p.prompt_seconds, "seed": seed,
                                          "items": q["item_id"].tolist()},
                        ["audio-models"], _queries)
    qids = [f"q{j:04d}" for j in range(len(q))]
    plant = ["control" if a == "none" else a for a in q["plant"]]
    queries = pd.DataFrame({
        "query_id": qids, "plant": plant,
        "label": [f"{j} — {'control' if a == 'control' else a + ' plant'} ({w}, v{v})"
                  for j, a, w, v in zip(qids, plant, q["work_id"], q["version"], strict=True)],
        "item_id": q["item_id"], "track_id": q["track_id"], "work_id": q["work_id"],
        "genre": q["genre"], "collection": q["collection"], "program": q["program"],
    })
    return queries, np.load(qdir / "tokens.npy")


def effects_stage(runner: StageRunner, p: AudioPlantedPreset, seed: int, held: pd.DataFrame,
                  tokens: dict[str, Any], qtokens: np.ndarray,
                  models: _Models) -> dict[str, np.ndarray]:
    """Per-model losses: held-out items after the prompt, queries' attribution target.

    Parameters
    ----------
    runner : aria_tda_experiments.stage_runner.StageRunner
    p : AudioPlantedPreset
    seed : int
    held : pandas.DataFrame
        Held-out items.
    tokens : dict
        Item id -> tokenised item.
    qtokens : np.ndarray [shape=(n_queries, L)]
        The queries' stage tokens.
    models : _Models

    Returns
    -------
    dict
        ``heldout`` ``(n_models, n_items)`` and ``queries`` ``(n_models, n_queries)``, rows in
        :func:`model_names` order (nats/token).
    """
    from aria_tda.attribution import model_outputs
    from aria_tda.attribution.losses import ContinuationLoss
    from aria_tda_experiments.audio.stages import build_stage_data
    from aria_tda_experiments.train import load_model

    hdata = build_stage_data(STAGE, {i: tokens[i] for i in held["item_id"]},
                             spec=models.data.layout.spec)
    after_prompt = ContinuationLoss(models.query_start)
    target = ContinuationLoss(models.data.target_start)  # the attribution target
    item_of = pd.Index(held["item_id"]).get_indexer(hdata.track_ids)
    counts = np.bincount(item_of, minlength=len(held))

    def _effects(d: Path) -> dict[str, Any]:
        h, q = [], []
        for g, s in model_names(p, seed):
            net = load_model(models.path(g, s))
            win = -model_outputs([net], hdata.tokens, target=after_prompt)[0]
            h.append(np.bincount(item_of, weights=win, minlength=len(held)) / counts)
            q.append(-model_outputs([net], qtokens, target=target)[0])
        np.save(d / "heldout.npy", np.asarray(h))
        np.save(d / "queries.npy", np.asarray(q))
        return {"n_models": len(h)}

    edir = runner.stage("audio-effects", {"heldout_start": models.query_start,
                                          "query_target_start": models.data.target_start,
                                          "items": held["item_id"].tolist()},
                        ["audio-models", "audio-queries"], _effects)
    return {"heldout": np.load(edir / "heldout.npy"), "queries": np.load(edir / "queries.npy")}


def effect_tables(eff: dict[str, np.ndarray], held: pd.DataFrame, queries: pd.DataFrame,
                  p: AudioPlantedPreset, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The control-adjusted ``learned`` and ``counterfactual`` tables (module docstring).

    Parameters
    ----------
    eff : dict
        :func:`effects_stage`'s losses.
    held : pandas.DataFrame
        Held-out items (``plant``: an aspect or ``"none"``), the columns of ``eff["heldout"]``.
    queries : pandas.DataFrame
        Queries (``plant``: an aspect or ``"control"``), the columns of ``eff["queries"]``.
    p : AudioPlantedPreset
    seed : int
        First seed (also the bootstrap's).

    Returns
    -------
    (learned, counterfactual) : tuple of pandas.DataFrame
        ``LEARNED_COLUMNS`` and ``COUNTERFACTUAL_COLUMNS``.
    """
    from aria_tda_experiments.planted.effects import mean_difference_interval, mean_interval

    row = {n: i for i, n in enumerate(model_names(p, seed))}
    seeds = range(seed, seed + p.n_seeds)
    h, hplant = eff["heldout"], held["plant"].to_numpy()
    learned = []
    for s in seeds:
        ctrl = []
        for a in AUDIO_ASPECTS:
            d = h[row[(f"without-{a}", s)]] - h[row[("full", s)]]
            ctrl.append(d[hplant == "none"])
            m, lo, hi = mean_difference_interval(d[hplant == a], ctrl[-1], n_boot=p.n_boot,
                                                 seed=seed)
            learned.append({"aspect": a, "seed": s, "effect": m, "ci_low": lo, "ci_high": hi,
                            "n": int((hplant == a).sum()), "learned": bool(lo > 0),
                            "measure": "continuation loss after the prompt, without minus "
                            "with the marked set, plant items minus control items, held-out "
                            "items (nats/token)"})
        m, lo, hi = mean_interval(np.mean(ctrl, axis=0), n_boot=p.n_boot, seed=seed)
        learned.append({"aspect": "control", "seed": s, "effect": m, "ci_low": lo,
                        "ci_high": hi, "n": int((hplant == "none").sum()), "learned": None,
                        "measure": "control items alone: the shift every removal causes "
                        "(nats/token, averaged over the aspects' models)"})
    q, qplant = eff["queries"], queries["plant"].to_numpy()
    rise = {a: np.mean([q[row[(f"without-{a}", s)]] - q[row[("full", s)]] for s in seeds],
                       axis=0) for a in AUDIO_ASPECTS}
    cf = []
    for a in AUDIO_ASPECTS:
        m, lo, hi = mean_difference_interval(rise[a][qplant == a], rise[a][qplant == "control"],
                                             n_boot=p.n_boot, seed=seed)
        cf.append({"aspect": a, "effect": m, "ci_low": lo, "ci_high": hi,
                   "n_seeds": len(seeds), "n_queries": int((qplant == a).sum()),
                   "measure": "query loss (the attribution target), without minus with the "
                   "marked set, mean over seeds, plant queries minus control queries "
                   "(nats/token)"})
    m, lo, hi = mean_interval(np.mean([rise[a][qplant == "control"] for a in AUDIO_ASPECTS],
                                      axis=0), n_boot=p.n_boot, seed=seed)
    cf.append({"aspect": "control", "effect": m, "ci_low": lo, "ci_high": hi,
               "n_seeds": len(seeds), "n_queries": int((qplant == "control").sum()),
               "measure": "control queries alone: the rise every removal causes (nats/token, "
               "averaged over the aspects' models)"})
    return (pd.DataFrame(learned, columns=list(LEARNED_COLUMNS)),
            pd.DataFrame(cf, columns=list(COUNTERFACTUAL_COLUMNS)))


def tracin_trajectory(n_checkpoints: int, keep: int) -> list[int]:
    """Indices of the ``keep`` checkpoints TracIn uses: evenly spaced, ending at the last.

    Parameters
    ----------
    n_checkpoints : int
        Checkpoints saved.
    keep : int
        How many to use (0 or ``>= n_checkpoints``: all).
    """
    if keep <= 0 or keep >= n_checkpoints:
        return list(range(n_checkpoints))
    step = n_checkpoints / keep
    return sorted({n_checkpoints - 1 - round(i * step) for i in range(keep)})


def features_stage(runner: StageRunner, p: AudioPlantedPreset, train: pd.DataFrame, root: Path,
                   threads: int, progress: bool | None) -> tuple[Path, list[str]]:
    from aria_tda._io import write_text
    from aria_tda.features.extract import extract_to_store
    from aria_tda.features.store import FeatureStore
    from aria_tda_experiments.audio.listing import paths_for_listing
    from aria_tda_experiments.audio.versions import SR

    def _features(d: Path) -> dict[str, Any]:
        listing = train[["item_id", "file", *STORE_METADATA]].rename(
            columns={"item_id": "track_id", "file": "path"})
        listing["path"] = paths_for_listing([Path(x) for x in listing["path"]],
                                            d / "tracks.csv")
        write_text(d / "tracks.csv", listing.to_csv(index=False))
        info = extract_to_store(d / "tracks.csv", d / "store", modality="audio",
                                params={"sr": SR}, workers=threads, progress=progress)
        return {k: v for k, v in info.items() if isinstance(v, int | float | str)}

    fdir = runner.stage("audio-features", {"sr": SR, "tracks": train["item_id"].tolist()},
                        ["audio-plants"], _features, resumable=True)
    store = FeatureStore.open(fdir / "store")
    return fdir / "store", [str(t) for t in store.track_ids]


def query_features_stage(runner: StageRunner, queries: pd.DataFrame, threads: int,
                         progress: bool | None) -> Path:
    """The queries' own features (the distinctive reading's anchor): each query's audible
    part (``media`` from ``start`` to ``end``: the prompt) cut into a WAV file of its own and
    extracted as the training tracks are (``aria-tda features audio``); track ids = query ids.

    Parameters
    ----------
    runner : aria_tda_experiments.stage_runner.StageRunner
        Runs the stage resumably.
    queries : pandas.DataFrame
        ``query_id``, ``media`` (absolute path), ``start``, ``end`` (seconds).
    threads : int
        Worker processes of the extraction.
    progress : bool or None
        Progress bars.
    """
    import soundfile as sf

    from aria_tda._io import atomic_path, write_text
    from aria_tda.features.extract import extract_to_store
    from aria_tda_experiments.audio.listing import paths_for_listing
    from aria_tda_experiments.audio.versions import SR

    def _features(d: Path) -> dict[str, Any]:
        clips = d / "clips"
        clips.mkdir(exist_ok=True)
        paths = []
        for r in queries.itertuples():
            y, sr = sf.read(str(r.media), always_2d=True)
            a, b = round(float(r.start) * sr), round(float(r.end) * sr)
            f = clips / f"{r.query_id}.wav"
            with atomic_path(f) as tmp:
                sf.write(str(tmp), y[a:b], sr, format="WAV")
            paths.append(f)
        listing = pd.DataFrame({"track_id": queries["query_id"].astype(str),
                                "path": paths_for_listing(paths, d / "queries.csv")})
        write_text(d / "queries.csv", listing.to_csv(index=False))
        info = extract_to_store(d / "queries.csv", d / "store", modality="audio",
                                params={"sr": SR}, workers=threads, progress=progress)
        return {k: v for k, v in info.items() if isinstance(v, int | float | str)}

    key = {"sr": SR, "queries": queries["query_id"].astype(str).tolist(),
           "windows": [[str(Path(m).name), float(a), float(b)] for m, a, b in
                       zip(queries["media"], queries["start"], queries["end"], strict=True)]}
    return runner.stage("audio-query-features", key, ["audio-queries", "audio-plants"],
                        _features, resumable=True) / "store"


def attribution_stage(runner: StageRunner, p: AudioPlantedPreset, seed: int,
                      qtokens: np.ndarray, queries: pd.DataFrame, models: _Models,
                      track_ids: list[str], threads: int,
                      progress: bool | None) -> dict[str, Path]:
    from aria_tda.attribution import run_methods
    from aria_tda.attribution.losses import ContinuationLoss
    from aria_tda.scores import aggregate
    from aria_tda_experiments.audio.attribute import STAGE_OPTIONS
    from aria_tda_experiments.train import load_model, load_trained

    data = models.data
    options = {m: dict(STAGE_OPTIONS.get(m, {})) for m in AUDIO_PLANTED_METHODS}
    for m in options:
        options[m]["proj_dim"] = p.block_proj_dim if m in ("LoGra", "FactGraSS") else p.proj_dim

    def _attribution(d: Path) -> dict[str, Any]:
        seeds = range(seed, seed + p.n_seeds)
        ensemble = [load_model(models.path("full", s)).state_dict() for s in seeds]
        main = load_trained(models.path("full", seed))
        keep = tracin_trajectory(len(main.checkpoints), p.tracin_checkpoints)
        res = run_methods(
            list(AUDIO_PLANTED_METHODS), main.model, data.tokens, qtokens, ensemble=ensemble,
            trajectory=[main.checkpoints[i].state_dict for i in keep],
            learning_rates=[main.checkpoint_lrs[i] for i in keep], final=ensemble[0],
            options=options,
            common={"loss": ContinuationLoss(data.target_start),
                    "target": ContinuationLoss(data.target_start), "batch_size": 16,
                    "seed": seed, "num_threads": threads, "progress": progress},
            out_dir=d / "segments", row_ids=data.segment_ids)
        (d / "tracks").mkdir(exist_ok=True)
        for m in res:
            aggregate(d / "segments" / f"{m}.npy", segments=data.track_ids, tracks=track_ids,
                      normalize="zscore", out=d / "tracks" / f"{m}.npy", overwrite=True)
        return {"seconds": {m: round(r.seconds, 2) for m, r in res.items()}}

    adir = runner.stage("audio-attribution", {"methods": list(AUDIO_PLANTED_METHODS),
                                              "options": options, "seed": seed,
                                              "target_start": data.target_start,
                                              "prompt_seconds": p.prompt_seconds,
                                              "tracin_checkpoints": p.tracin_checkpoints,
                                              "tracks": track_ids,
                                              "queries": queries["item_id"].tolist()},
                        ["audio-models", "audio-queries", "audio-features"], _attribution)
    return {m: adir / "tracks" / f"{m}.npy" for m in AUDIO_PLANTED_METHODS}
