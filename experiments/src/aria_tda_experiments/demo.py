r"""``aria-tda demo``: the paper's symbolic ground-truth validation (§4.1, Table 1), end to end.

(An experiment: it orchestrates the benchmark, attribution and every ARIA analysis, so it lives
in :mod:`aria_tda_experiments`; ``aria_tda_experiments.demo`` re-exports it from its old path.)

The paper validates ARIA's reliability diagnostics on dattri's MusicTransformer + MAESTRO
benchmark, whose data and checkpoints are downloaded at run time. This demo rebuilds the same
experiment from real music that ships with a package (music21's string quartets and piano
music by Mozart, Haydn and the Schumanns, whose dynamics markings make the dynamic channel
vary), at a size a 2-core CPU finishes in minutes:

1. **corpus** — music21 works → MIDI → MusicTransformer event tokens → fixed windows, split by
   work (:mod:`aria_tda_experiments.corpus`);
2. **models** — a small relative-attention MusicTransformer trained with checkpoints; the TRAK
   ensemble are independently seeded copies, member 0 being *the* model
   (:mod:`aria_tda_experiments.train`);
3. **queries** — continuations generated from prompts of held-out works, MIDI kept
   (:mod:`aria_tda_experiments.generate`);
4. **attribution** — TRAK (ensemble), TracIn, GradDot, GradCos, LoGra, FactGraSS through dattri
   (:mod:`aria_tda.attribution`), one score matrix ``(n_train, n_queries)`` each;
5. **LDS** — models retrained on random 50 % subsets give the ground truth; LDS per method;
6. **features** — the five symbolic channels of every training window (segment level:
   :math:`S^{track} = S^{seg}`), each window's work as MIDI and its span named in the store;
7. **ARIA** — reliability diagnostics, homogeneity with the K-sweep and the rank-1 residual,
   alignment, the confound breakdown by the query's mode (major/minor) — :mod:`aria_tda.study`;
   then the rank agreement between each diagnostic and LDS across methods (Spearman and
   Kendall), reported whatever it turns out to be;
8. **report** — ``results/report.html``; ``queries.csv`` names each query's MIDI (``media``).

Every stage is resumable: a rerun with the same sizes and seed reuses finished stages
(:class:`aria_tda._steps.Step`); a changed setting recomputes that stage and those after it.
Sizes, seeds and per-stage wall times are printed and recorded in ``results.json``.
"""

from __future__ import annotations

import dataclasses
import os
import platform
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from aria_tda._checks import check_choice, check_float, check_int, check_int_list
from aria_tda._io import write_text
from aria_tda._steps import Step
from aria_tda.errors import DataError, ParameterError, expected
from aria_tda.results import DEFAULT_KS, default_k_report
from aria_tda_experiments.stage_runner import StageRunner
from aria_tda_experiments.validation import DIAGNOSTICS, PAPER_METHODS, agreement_table

if TYPE_CHECKING:
    from aria_tda_experiments.presets import BenchPreset

__all__ = [
    "DEMO_METHODS",
    "DIAGNOSTICS",
    "PAPER_METHODS",
    "STAGES",
    "DemoSettings",
    "agreement_table",
    "corpus_stage",
    "run_demo",
]

#: The demo's stages, in order (``until`` stops after one of them).
STAGES: tuple[str, ...] = ("corpus", "models", "queries", "attribution", "lds", "features")

#: Methods of the demo, in the paper's order first (Table 1), then the audio-side methods.
DEMO_METHODS: tuple[str, ...] = ("TRAK", "TracIn", "GradCos", "GradDot", "LoGra", "FactGraSS")


@dataclasses.dataclass(frozen=True)
class DemoSettings:
    """Everything that defines a demo run besides the preset's sizes."""

    preset: str = "default"
    seed: int = 0
    methods: tuple[str, ...] = DEMO_METHODS
    trak_proj_dim: int = 512
    trak_lam: float = 0.01
    loss: str = "sequence"
    target: str = "last_token"
    K: tuple[int, ...] | None = None
    K_report: int | None = None
    B: int = 200
    n_bootstrap: int = 1000
    threads: int = 1
    collections: tuple[str, ...] | None = None
    lds_seeds: int | None = None
    trak_k: tuple[int, ...] | None = None
    device: str = "cpu"
    until: str | None = None

    def __post_init__(self) -> None:
        # checked when the settings are made, before any stage runs: a bad value must not
        # surface after the models have been trained
        check_int("B", self.B, min_value=2)
        check_int("n_bootstrap", self.n_bootstrap, min_value=0)
        check_int("trak_proj_dim", self.trak_proj_dim, min_value=1)
        check_float("trak_lam", self.trak_lam, min_value=0.0)
        if self.lds_seeds is not None:
            check_int("lds_seeds", self.lds_seeds, min_value=1)
        if self.trak_k is not None:
            check_int_list("trak_k", list(self.trak_k), min_value=1)
        if self.K is not None:
            check_int_list("K", list(self.K), min_value=2)
        if self.K_report is not None:
            check_int("K_report", self.K_report, min_value=2)
            # with K given it must be one of them; without, one of the paper's K (the corpus
            # size may cap them further, known after the corpus stage)
            ks = sorted(set(self.K)) if self.K is not None else list(DEFAULT_KS)
            if self.K_report not in ks:
                raise ParameterError(expected("K_report", f"one of K = {ks}", self.K_report))
        from aria_tda.attribution.task import check_loss

        check_loss("loss", self.loss)
        check_loss("target", self.target)
        if self.until is not None:
            check_choice("until", self.until, STAGES)
        from aria_tda.attribution.device import check_device

        object.__setattr__(self, "device", check_device("device", self.device))

    def ks(self, n_train: int) -> tuple[list[int], int]:
        """K list and K_report: the paper's values, capped so groups stay a fraction of the pool.

        Parameters
        ----------
        n_train : int
            Training windows (the pool).
        """
        if self.K is not None:
            ks = sorted(set(self.K))
        else:
            ks = [k for k in DEFAULT_KS if k <= n_train // 3]
            ks = ks or [max(2, n_train // 4)]
        report = self.K_report if self.K_report is not None else default_k_report(ks)
        if report not in ks:
            raise ParameterError(expected("K_report", f"one of K = {ks}", report))
        return ks, report


def _log(msg: str, quiet: bool) -> None:
    if not quiet:
        print(f"[aria-tda demo] {msg}", flush=True)


def run_demo(
    out: str | os.PathLike[str] = "aria-demo",
    *,
    quick: bool = False,
    preset: str | BenchPreset | None = None,
    seed: int = 0,
    methods: Sequence[str] = DEMO_METHODS,
    threads: int | None = None,
    report: bool = True,
    progress: bool | None = None,
    quiet: bool = False,
    **overrides: Any,
) -> Path:
    """Run the symbolic ground-truth validation end to end and return the results folder.

    Parameters
    ----------
    out : path
        Working folder; every stage lives in a sub-folder and the results in ``out/results``.
    quick : bool
        The ``quick`` preset (≤ 3 minutes on 2 cores) instead of ``default`` (≤ 15 minutes).
    preset : {"default", "quick", "paper", "gpu", "tiny"} or BenchPreset, optional
        Explicit preset (:mod:`aria_tda_experiments.presets`; ``tiny`` is for tests), or sizes of
        one's own (:class:`aria_tda_experiments.presets.BenchPreset`, e.g. the LDS study's
        variants); overrides ``quick``.
    seed : int
        Seeds the corpus split, every model, the queries, the projections and the nulls.
    methods : sequence of str
        Attribution methods (default all six).
    threads : int, optional
        Worker processes for model training and torch threads for attribution (default: the
        number of CPU cores, at most 2; at most 8 with an accelerator ``device``, whose
        workers share it).
    report : bool
        Write ``results/report.html``.
    progress : bool, optional
        Force progress bars on/off.
    quiet : bool
        No log lines.
    **overrides : Any
        Fields of :class:`DemoSettings` (``trak_proj_dim``, ``trak_lam``, ``K``, ``K_report``,
        ``B``, ``n_bootstrap``, ``loss``, ``target``, ``collections`` — music21 corpus folders
        to draw works from instead of the preset's
        :data:`aria_tda_experiments.presets.DYNAMIC_COLLECTIONS`; ``lds_seeds`` — retrain every LDS
        subset with this many seeds and average their query outputs (default: the preset's,
        3 for ``default``); ``trak_k`` — also TRAK
        from the first ``k`` ensemble members, as settings ``"TRAK-k"`` beside ``"TRAK"``, the
        whole ensemble); ``device`` — where models train and gradients are computed
        (``"cpu"``, ``"cuda"``; not part of a stage's identity, so stages computed on a GPU
        are reused by a CPU run of the same settings); ``until`` — stop after this stage
        (one of :data:`STAGES`), e.g. to train and attribute on a GPU machine and finish the
        analysis elsewhere with the same command.

    Returns
    -------
    pathlib.Path
        ``out/results`` (with ``until``: the folder of the last stage run).
    """
    from aria_tda_experiments import presets

    if isinstance(preset, presets.BenchPreset):
        p, name = preset, preset.name
    else:
        name = preset if preset is not None else ("quick" if quick else "default")
        p = presets.preset(name)
    seed = check_int("seed", seed, min_value=0)
    from aria_tda.attribution.device import check_device

    accelerated = check_device("device", overrides.get("device", "cpu")) != "cpu"
    default_threads = min(8 if accelerated else 2, os.cpu_count() or 1)
    n_threads = check_int("threads", threads if threads is not None else default_threads,
                          min_value=1)
    methods = tuple(check_choice("methods[]", m, DEMO_METHODS) for m in methods)
    if not methods:
        raise ParameterError(expected("methods", "at least one method", "none"))
    unknown = set(overrides) - {f.name for f in dataclasses.fields(DemoSettings)}
    if unknown:
        raise ParameterError(expected("overrides", "DemoSettings fields", sorted(unknown)))
    settings = DemoSettings(preset=name, seed=seed, methods=methods, threads=n_threads, **overrides)
    trak_ks = _trak_ks(settings, methods, p)
    corpus_cfg = p.with_seed(seed).corpus
    if settings.collections is not None:
        corpus_cfg = dataclasses.replace(corpus_cfg, collections=tuple(settings.collections))
    root = Path(out).absolute()  # one meaning for a relative --out in every stage
    if root.exists() and not root.is_dir():
        raise ParameterError(f"out: expected a working folder, got a file: {str(root)!r}")
    # every argument is checked before the first stage is marked: a refused command leaves
    # no stage behind (the music21 collections are otherwise only read inside the corpus stage)
    from aria_tda_experiments.corpus import list_work_files

    list_work_files(corpus_cfg.collections)
    root.mkdir(parents=True, exist_ok=True)
    run = StageRunner(root, quiet)
    t_start = time.perf_counter()
    _log(f"preset {name!r}, seed {seed}, {n_threads} thread(s), folder {root}", quiet)
    _log(f"sizes: {p.to_dict()}", quiet)

    # 1. corpus ---------------------------------------------------------------------------
    # (before torch sets up its threads: the conversion workers are forked)
    from aria_tda_experiments.corpus import load_corpus

    corpus_dir = run.stage("corpus", {"corpus": corpus_cfg.to_dict()}, [],
                           lambda d: corpus_stage(d, corpus_cfg, progress, n_threads))
    if settings.until == "corpus":
        return _stopped(corpus_dir, "corpus", quiet)
    corpus = load_corpus(corpus_dir / "corpus")
    corpus_label = ", ".join(corpus_cfg.collections)
    n_train = corpus.train_tokens.shape[0]
    _log(f"corpus: {n_train} training windows of {corpus.train_tokens.shape[1]} tokens from "
         f"{len(corpus.work_ids('train'))} works; {len(corpus.work_ids('test'))} held-out works; "
         f"{corpus.n_failed} works failed to convert and were skipped", quiet)

    # 2. models ---------------------------------------------------------------------------
    import torch

    torch.set_num_threads(n_threads)
    train_cfg = dataclasses.replace(p.train, num_threads=1)

    from aria_tda_experiments.train import load_trained, retrain_subsets, train_ensemble

    n_models = p.n_ensemble
    model_params = {"model": p.model.to_dict(), "train": train_cfg.to_dict(), "seed": seed,
                    "n_models": n_models}

    def _models(d: Path) -> dict[str, Any]:
        ens = train_ensemble(corpus.train_tokens, n_models=n_models, seed=seed,
                             model_config=p.model, train_config=train_cfg, out_dir=d,
                             n_jobs=n_threads, progress_bar=progress, device=settings.device)
        return {"final_loss": float(ens[0].losses[-1]),
                "seconds_per_model": float(np.mean([m.seconds for m in ens])),
                "device": settings.device}

    models_dir = run.stage("models", model_params, ["corpus"], _models, resumable=True)
    if settings.until == "models":
        return _stopped(models_dir, "models", quiet)
    # the other members are loaded by the attribution stage only (a finished run needs
    # member 0 alone)
    main = load_trained(models_dir / "member-00")
    heldout = _heldout_loss(main.model, corpus.test_tokens)
    _log(f"model: held-out loss {heldout:.3f} nats/token (training loss "
         f"{float(main.losses[-1]):.3f})", quiet)

    # 3. queries --------------------------------------------------------------------------
    from aria_tda_experiments.generate import generate_queries, load_queries

    q_params = {"n_queries": p.n_queries, "prompt_len": p.prompt_len, "seed": seed}

    def _queries(d: Path) -> dict[str, Any]:
        generate_queries(main.model, corpus, n_queries=p.n_queries, prompt_len=p.prompt_len,
                         seed=seed, out_dir=d / "queries", progress_bar=progress)
        return {}

    queries_dir = run.stage("queries", q_params, ["corpus", "models"], _queries)
    if settings.until == "queries":
        return _stopped(queries_dir, "queries", quiet)
    queries = load_queries(queries_dir / "queries")

    # 4. attribution ----------------------------------------------------------------------
    from aria_tda.attribution import run_methods

    trak_options = {"proj_dim": settings.trak_proj_dim, "lam": settings.trak_lam}
    attr_params = {"methods": list(methods), "trak": trak_options,
                   "loss": settings.loss, "target": settings.target, "seed": seed}
    if trak_ks:
        attr_params["trak_k"] = trak_ks

    def _attribution(d: Path) -> dict[str, Any]:
        common = {"loss": settings.loss, "target": settings.target, "seed": seed,
                  "num_threads": n_threads, "progress": progress, "device": settings.device}
        if settings.device != "cpu":  # per-sample gradients: the batch size changes no score
            common["batch_size"] = 128
        # the members as saved by the models stage; any missing (a folder copied without
        # them, see `until`) are retrained with their own seeds
        ensemble = train_ensemble(corpus.train_tokens, n_models=n_models, seed=seed,
                                  model_config=p.model, train_config=train_cfg,
                                  out_dir=models_dir, n_jobs=n_threads, progress_bar=progress,
                                  device=settings.device)
        res = run_methods(
            list(methods), main.model, corpus.train_tokens, queries.tokens,
            ensemble=[m.model.state_dict() for m in ensemble],
            trajectory=[c.state_dict for c in main.checkpoints],
            learning_rates=main.checkpoint_lrs, final=main.checkpoints[-1].state_dict,
            options={"TRAK": trak_options}, common=common,
            out_dir=d / "scores", row_ids=corpus.train_ids,
        )
        seconds = {m: round(r.seconds, 2) for m, r in res.items()}
        for k in trak_ks:  # TRAK from the first k members (the ensemble's own seeds)
            sub = run_methods(
                ["TRAK"], main.model, corpus.train_tokens, queries.tokens,
                ensemble=[m.model.state_dict() for m in ensemble[:k]],
                options={"TRAK": trak_options}, common=common,
            )["TRAK"]
            sub.save(d / "scores" / f"TRAK-{k}.npy", row_ids=corpus.train_ids)
            seconds[f"TRAK-{k}"] = round(sub.seconds, 2)
        return {"seconds": seconds, "device": settings.device}

    attr_dir = run.stage("attribution", attr_params, ["corpus", "models", "queries"],
                         _attribution)
    if settings.until == "attribution":
        return _stopped(attr_dir, "attribution", quiet)
    scores = {m: attr_dir / "scores" / f"{m}.npy" for m in methods}
    scores.update({f"TRAK-{k}": attr_dir / "scores" / f"TRAK-{k}.npy" for k in trak_ks})

    # 5. LDS ground truth -----------------------------------------------------------------
    from aria_tda.attribution import lds as lds_score
    from aria_tda.attribution import model_outputs

    lds_params = {"n_subsets": p.n_subsets, "fraction": 0.5, "seed": seed,
                  "target": settings.target, "model": p.model.to_dict(),
                  "train": train_cfg.to_dict()}
    lds_seeds = p.lds_seeds if settings.lds_seeds is None else settings.lds_seeds
    if lds_seeds > 1:
        lds_params["lds_seeds"] = lds_seeds

    def _lds(d: Path) -> dict[str, Any]:
        r = retrain_subsets(corpus.train_tokens, n_subsets=p.n_subsets, fraction=0.5, seed=seed,
                            model_config=p.model, train_config=train_cfg, out_dir=d / "retrains",
                            n_jobs=n_threads, progress_bar=progress, device=settings.device)
        outputs = model_outputs([m.model for m in r.models], queries.tokens, target=settings.target)
        for extra in range(1, lds_seeds):
            # the same subsets, another initialisation and data order: the average of the
            # query outputs removes part of the retraining noise from the LDS target
            again = retrain_subsets(
                corpus.train_tokens, subsets=r.indices, seed=seed + extra,
                model_config=p.model, train_config=train_cfg,
                out_dir=d / f"retrains-seed{extra}", n_jobs=n_threads, progress_bar=progress,
                device=settings.device)
            outputs += model_outputs([m.model for m in again.models], queries.tokens,
                                     target=settings.target)
        outputs /= lds_seeds
        np.save(d / "subsets.npy", r.indices)
        np.save(d / "outputs.npy", outputs)
        return {"n_subsets": int(r.indices.shape[0]), "device": settings.device}

    lds_dir = run.stage("lds", lds_params, ["corpus", "queries"], _lds, resumable=True)
    if settings.until == "lds":
        return _stopped(lds_dir, "lds", quiet)
    subsets, outputs = np.load(lds_dir / "subsets.npy"), np.load(lds_dir / "outputs.npy")

    # 6. features -------------------------------------------------------------------------
    from aria_tda_experiments.demo_media import MEDIA_VERSION, query_media, query_midis
    from aria_tda_experiments.featurize import build_feature_store

    def _features(d: Path) -> dict[str, Any]:  # with each work's MIDI, each window's span in it
        build_feature_store(corpus, d / "store", media_dir=d / "midi", media="work")
        return {}

    feat_dir = run.stage("features", {"form": "paper", "media": MEDIA_VERSION}, ["corpus"],
                         _features)

    from aria_tda_experiments.featurize import build_query_store

    def _query_features(d: Path) -> dict[str, Any]:  # the queries' own: the reading's anchor
        return {"store": str(build_query_store(queries.tokens, queries.ids, d / "store"))}

    qf_dir = run.stage("query-features", {"form": "paper"}, ["queries"], _query_features)
    if settings.until == "features":
        return _stopped(feat_dir, "features", quiet)

    # 7. ARIA -----------------------------------------------------------------------------
    import pandas as pd

    from aria_tda.results import write_results_meta, write_table
    from aria_tda.study import run_study

    ks, k_report = settings.ks(n_train)
    results = root / "results"
    qmeta = queries.meta.reset_index(drop=True).copy()
    qmeta.insert(0, "query", np.arange(len(qmeta)))
    qmeta["label"] = qmeta["query_id"] + " — " + qmeta["title"].astype(str)
    queries_csv = root / "queries.csv"
    qmeta["media"] = query_media(query_midis(queries), queries_csv)  # each query's MIDI
    write_text(queries_csv, qmeta.to_csv(index=False))
    from aria_tda.study.config import SettingSpec, StudySpec, validate_study
    from aria_tda.study.studyfile import study_to_toml

    spec = validate_study(StudySpec(
        path=None, name=f"ARIA demo: MusicTransformer on music21 {corpus_label}",
        modality="symbolic",
        feature_store=feat_dir / "store", output=results,
        # segment-level training instances: S_track = S_seg (paper §3.1), no normalisation
        settings=tuple(SettingSpec(name=m, method=m.split("-")[0], stage="-", scores=path,
                                   normalize="none")
                       for m, path in scores.items()),
        K=tuple(ks), K_report=k_report, B=settings.B, seed=settings.seed,
        n_bootstrap=settings.n_bootstrap,
        residual=True, queries=queries_csv, confound=("mode",),
        query_features=qf_dir / "store",
    ), source="aria-tda demo")
    write_text(
        root / "study.toml",
        study_to_toml(spec, header="Written by `aria-tda demo`; `aria-tda run` on this file "
                      "reanalyses the same score matrices."),
    )
    t0 = time.perf_counter()
    run_study(spec, report=False, progress=progress, quiet=quiet, command="aria-tda demo")
    run.timings["aria"] = round(time.perf_counter() - t0, 2)

    lds_rows, lds_values = [], {}
    for m in scores:
        from aria_tda.scores import open_scores

        res = lds_score(open_scores(scores[m]).to_numpy(), subsets, outputs)
        lds_values[m] = float(res.mean)
        row = res.to_row(m)
        # standard error of the mean over queries: differences between methods smaller than
        # about twice this are within the noise of the LDS estimate
        row["lds_se"] = float(res.sd) / np.sqrt(max(int(res.n_queries), 1))
        lds_rows.append(row)
    write_table(results, "lds", pd.DataFrame(lds_rows))
    rel = _table(results, "reliability").set_index("setting")
    diags = {m: {d: float(rel.loc[m, d]) for d in DIAGNOSTICS} for m in scores}
    # one bootstrap shared by every method: paired LDS / diagnostic differences and the
    # agreement's intervals (queries and LDS subsets resampled)
    from aria_tda_experiments.validation import compare_methods

    t0 = time.perf_counter()
    comparison = compare_methods(
        scores, subsets, outputs, diagnostics=diags, n_boot=settings.n_bootstrap, seed=settings.seed
    )
    write_table(results, "lds_paired", pd.DataFrame(comparison.paired_rows()))
    # agreement across *methods*: the TRAK-k settings are the same method on a smaller budget
    agree = agreement_table({m: lds_values[m] for m in methods}, diags, comparison)
    write_table(results, "agreement", agree)
    run.timings["paired"] = round(time.perf_counter() - t0, 2)

    # 8. report ---------------------------------------------------------------------------
    run.timings["total"] = round(time.perf_counter() - t_start, 2)
    from aria_tda.results import read_results_meta

    meta = read_results_meta(results)
    meta = {k: v for k, v in meta.items() if k not in {"kind", "aria_version", "created"}}
    meta["demo"] = {
        "preset": p.to_dict(),
        "settings": dataclasses.asdict(settings),
        "n_train": n_train,
        "n_queries": int(queries.tokens.shape[0]),
        "stage_seconds": run.timings,
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "lds_target": settings.target,
        "lds_seeds": lds_seeds,
        "queries_midi": str(queries_dir / "queries" / "midi"),
        "heldout_loss": heldout,
        "train_loss": float(main.losses[-1]),
        # where each stage was computed (a run may be split across machines with `until`)
        "stage_devices": {
            name: (Step(root, name).record() or {}).get("summary", {}).get("device")
            for name in ("models", "attribution", "lds")
        },
        "n_parameters": int(sum(t.numel() for t in main.model.parameters())),
    }
    meta.setdefault("timings", {})["demo_stages"] = run.timings
    meta.setdefault("notes", []).append(
        f"Symbolic ground-truth validation (paper §4.1) on music21 {corpus_label}; LDS from "
        f"{subsets.shape[0]} random 50% subsets, each retrained with {lds_seeds} seed(s) "
        "(query outputs averaged); agreement = rank correlation of "
        "-diagnostic with LDS across methods (+1 = same order)."
    )
    write_results_meta(results, meta)
    if report:
        from aria_tda.report import write_report

        written = write_report(results, quiet=quiet, log=lambda m: _log(m, quiet))
        _log(f"report: {written.html}", quiet)
    run.timings["total"] = round(time.perf_counter() - t_start, 2)
    if not quiet:
        _print_summary(results, run.timings, quiet)
    return results


def _stopped(path: Path, stage: str, quiet: bool) -> Path:
    _log(
        f"stopped after the {stage} stage (until={stage!r}); the same command without "
        "'until' reuses the finished stages and completes the run (on any machine)",
        quiet,
    )
    return path


def _heldout_loss(model: Any, test_tokens: np.ndarray, n_max: int = 500) -> float:
    """Mean next-token cross-entropy (nats/token) on up to ``n_max`` held-out windows."""
    from aria_tda_experiments.train import evaluate_losses

    if test_tokens.shape[0] == 0:
        return float("nan")
    return float(evaluate_losses(model, test_tokens[:n_max]).mean())


def _trak_ks(settings: DemoSettings, methods: Sequence[str], p: BenchPreset) -> list[int]:
    """The ``TRAK-k`` settings to add: ``k`` below the ensemble size (the whole is "TRAK").

    The run's own ``trak_k`` wins over the preset's; a preset's are dropped without TRAK.
    """
    n_ensemble = p.n_ensemble
    if settings.trak_k is None:
        return [k for k in sorted(set(p.trak_k)) if k < n_ensemble] if "TRAK" in methods else []
    if "TRAK" not in methods:
        raise ParameterError(expected("trak_k", "TRAK among the methods", list(methods)))
    ks = sorted(set(settings.trak_k))
    if ks[-1] > n_ensemble:
        raise ParameterError(expected("trak_k", f"sizes <= the ensemble's {n_ensemble}", ks))
    return [k for k in ks if k < n_ensemble]


def corpus_stage(d: Path, cfg: Any, progress: bool | None, n_jobs: int) -> dict[str, Any]:
    """The body of the demo's corpus stage: the corpus built into ``d / "corpus"``.

    Parameters
    ----------
    d : pathlib.Path
        The stage's folder.
    cfg : CorpusConfig
        The corpus settings.
    progress : bool or None
        Draw progress bars.
    n_jobs : int
        Worker processes.

    Returns
    -------
    dict
        The stage's summary: ``n_train`` windows and ``n_failed`` works.
    """
    from aria_tda_experiments.corpus import build_corpus

    c = build_corpus(d / "corpus", config=cfg, progress_bar=progress, n_jobs=n_jobs)
    return {"n_train": int(c.train_tokens.shape[0]), "n_failed": int(c.n_failed)}


def _table(results: Path, name: str) -> Any:
    from aria_tda.results import read_table

    df = read_table(results, name)
    if df is None:
        raise DataError(f"results: {name} table missing from {str(results)!r}")
    return df


def _level(results: Path) -> str:
    from aria_tda.results import read_table

    paired = read_table(results, "lds_paired")
    if paired is None or "level" not in paired.columns or paired.empty:
        return "95"
    return f"{100 * float(paired['level'].iloc[0]):g}"


def _versus_best(results: Path, lds: Any) -> dict[str, str]:
    """Method -> "ΔLDS [lo, hi] separated|not separated" against the best mean LDS."""
    from aria_tda.results import read_table

    paired = read_table(results, "lds_paired")
    if paired is None or paired.empty:
        return {}
    best = max(lds.index, key=lambda m: lds[m])
    sub = paired[paired["quantity"] == "lds"]
    out = {best: "(best)"}
    for _, r in sub.iterrows():
        if best not in (r.setting_a, r.setting_b) or r.setting_a == r.setting_b:
            continue
        sign = 1.0 if r.setting_b == best else -1.0
        m = r.setting_a if sign > 0 else r.setting_b
        lo, hi = sorted((sign * r.diff_lo, sign * r.diff_hi))
        tag = "separated" if bool(r.separated) else "not separated"
        out[m] = f"{sign * r['diff']:+.3f} [{lo:+.3f}, {hi:+.3f}] {tag}"
    return out


def _print_summary(results: Path, timings: dict[str, float], quiet: bool) -> None:
    rel = _table(results, "reliability").set_index("setting")
    lds = _table(results, "lds").set_index("method")
    hom = _table(results, "homogeneity")
    meta_k = default_k_report(hom["K"].unique())
    h = hom[(hom.variant == "original") & (hom.K == meta_k)].pivot(
        index="setting", columns="channel", values="zbar"
    )
    chans = [c for c in ("melody", "harmony", "rhythm", "dynamic", "texture") if c in h.columns]
    vs = _versus_best(results, lds["lds"])
    best = max(lds.index, key=lambda m: lds.loc[m, "lds"])
    level = _level(results)
    head = (
        f"{'Method':<10}{'LDS':>7}{'±SE':>7}  {'ΔLDS vs ' + best + f' [{level}% CI]':<27}"
        f"{'':<15}{'r1':>7}{'r2:5':>7}{'p':>8}{'kappa':>7}  "
        + "".join(f"{c[:4]:>7}" for c in chans)
    )
    print(
        f"\nTable 1 layout (z-bar at K={meta_k}; ΔLDS: paired bootstrap over queries and "
        "LDS subsets, 'separated' only where the interval excludes 0):"
    )
    print(head)
    for m in rel.index:
        row = rel.loc[m]
        zs = "".join(f"{h.loc[m, c]:>+7.2f}" for c in chans)
        print(
            f"{m:<10}{lds.loc[m, 'lds']:>7.3f}{lds.loc[m, 'lds_se']:>7.3f}  {vs.get(m, ''):<42}"
            f"{row.r1:>7.3f}{row.r2_5:>7.3f}{row.p:>8.4f}{row.kappa:>7.3f}  {zs}"
            f"  [{row.verdict}]"
        )
    agree = _table(results, "agreement")
    print(
        "\nRank agreement with LDS (Spearman / Kendall of -diagnostic vs LDS; "
        f"[{level}% bootstrap CI], exact one-sided permutation p over n! orderings):"
    )
    for _, r in agree.iterrows():
        print(
            f"  {r.methods:<6}{r.diagnostic:<7}"
            + "  ".join(
                f"{r[s]:>+6.2f} [{r.get(f'{s}_lo', np.nan):+.2f}, {r.get(f'{s}_hi', np.nan):+.2f}] "
                f"p={r.get(f'{s}_p_exact', np.nan):.3f}"
                for s in ("spearman", "kendall")
            )
            + f"  (n={r.n_methods})"
        )
    undefined = [c for c in chans if h[c].isna().all()]
    if undefined:
        print(
            f"\nChannel(s) {', '.join(undefined)}: z undefined — the features are constant "
            "over this corpus "
            "(e.g. music21's Bach chorales carry no dynamics markings; see --collections)."
        )
    print("\nStage wall times (s): " + ", ".join(f"{k} {v:.1f}" for k, v in timings.items()))
    print(f"Results: {results}")
