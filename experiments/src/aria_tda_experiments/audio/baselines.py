r"""The embedding-retrieval baselines of ``aria-tda demo audio`` (paper §4.3, Tables 2 and 3).

Three resumable demo stages (:class:`aria_tda_experiments.stage_runner.StageRunner`) between the
features and the study:

1. ``encoders`` — :func:`aria_tda_experiments.audio.encoders.train_demo_encoders` trains the
   encoders
   with the objectives of CLAP, CLEWS and MERT (``clap-style``, ``clews-style``,
   ``mert-style``) on the corpus' training tracks, at the preset's ``encoder_steps`` /
   ``encoder_batch``; a baseline given a published checkpoint (``encoders={"mert": path}``)
   is not trained;
2. ``query_audio`` — the audio of each generated query
   (:func:`aria_tda_experiments.audio.query_audio.write_query_audio`: generated acoustic tokens
   decoded to log-mel and inverted by Griffin–Lim — a mel inversion, not a codec decoder);
   :func:`query_audio_stage` runs it with or without the baselines (the queries file names
   these WAVs as the queries' ``media``);
3. ``embeddings`` — per baseline, :func:`aria_tda.embed.embed_to_store` of the training tracks and
   of the query WAVs, then :func:`aria_tda.embed.retrieve`: the cosine score matrix (training
   tracks × queries, row ids = track ids), its columns put in the attribution queries' order
   (``<baseline>/scores.npy``), so query ``j`` is the same held-out track in all 15 settings.

Each baseline becomes one track-level setting of the study (method = the encoder's registry
name, stage ``"-"``, no segment map).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from aria_tda._checks import check_choice
from aria_tda._io import write_text
from aria_tda.errors import ParameterError, expected
from aria_tda_experiments.audio.listing import paths_for_listing
from aria_tda_experiments.stage_runner import StageRunner

__all__ = [
    "EMBEDDING_BASELINES",
    "check_encoders",
    "embedding_stages",
    "query_audio_stage",
    "row_ids",
]

#: The paper's three embedding baselines (Table 3 order); each runs as its demo-trained
#: ``<name>-style`` encoder unless a published checkpoint is given (``encoders=``).
EMBEDDING_BASELINES: tuple[str, ...] = ("clap", "clews", "mert")


def _log(msg: str, quiet: bool) -> None:
    if not quiet:
        print(f"[aria-tda demo audio] {msg}", flush=True)


def row_ids(path: Path) -> list[str]:
    """The training track ids of an embedding score matrix (its row ids).

    Parameters
    ----------
    path : pathlib.Path
        The scores.

    Returns
    -------
    list of str

    Raises
    ------
    FileFormatError
        Scores without row ids.
    """
    from aria_tda.errors import FileFormatError
    from aria_tda.scores import open_scores

    ids = open_scores(path).row_ids
    if ids is None:
        raise FileFormatError(f"{path}: embedding scores without row ids (training track ids)")
    return [str(t) for t in ids]


def check_encoders(encoders: Mapping[str, Any] | None, embeddings: bool) -> dict[str, Path]:
    """Validate ``encoders=`` (baseline name -> existing checkpoint path).

    Parameters
    ----------
    encoders : mapping or None
        Baseline name (one of ``EMBEDDING_BASELINES``) to a published checkpoint file or folder.
    embeddings : bool
        Whether the demo runs the embedding baselines (without them, ``encoders`` must be
        empty).

    Returns
    -------
    dict of str to pathlib.Path
        Absolute paths.

    Raises
    ------
    ParameterError
        Not a mapping, an unknown baseline, a missing path, or encoders without embeddings.
    """
    if encoders is None:
        return {}
    if not isinstance(encoders, Mapping):
        raise ParameterError(expected("encoders", "a mapping name -> checkpoint path",
                                      type(encoders).__name__))
    if encoders and not embeddings:
        raise ParameterError(expected("encoders", "nothing when embeddings=False",
                                      sorted(encoders)))
    out: dict[str, Path] = {}
    for name, path in encoders.items():
        check_choice("encoders key", name, EMBEDDING_BASELINES)
        p = Path(path)
        if not p.exists():
            raise ParameterError(expected(f"encoders[{name!r}]", "an existing checkpoint file "
                                          "or folder", str(p)))
        out[str(name)] = p.absolute()
    return out


def _fingerprint(path: Path) -> dict[str, Any]:
    """Path, size and mtime of a checkpoint file or folder (its files), for stage params."""
    files = sorted(f for f in path.rglob("*") if f.is_file()) if path.is_dir() else [path]
    return {"path": str(path), "files": [[str(f.relative_to(path)) if path.is_dir() else f.name,
                                          f.stat().st_size, f.stat().st_mtime_ns]
                                         for f in files]}


def query_audio_stage(run: StageRunner, p: Any, tokens_dir: Path, queries: Any, seed: int,
                      progress: bool | None) -> Path:
    """The ``query_audio`` stage: one WAV per generated query; returns the stage folder.

    The embeddings embed them, and the demo's queries file names them as the queries'
    ``media`` (with or without the embedding baselines).

    Parameters
    ----------
    run : aria_tda_experiments.stage_runner.StageRunner
        Runs the stage resumably.
    p : AudioPreset
        Sizes (``query_audio_iters``: Griffin–Lim iterations).
    tokens_dir : Path
        The ``tokens`` stage (its tokenizers decode the acoustic tokens).
    queries : aria_tda_experiments.audio.generate.StageQueries
        The generated queries.
    seed : int
        Seeds each query's initial phase.
    progress : bool, optional
        Force the progress bar on/off.
    """
    import pandas as pd

    from aria_tda_experiments.audio.query_audio import write_query_audio
    from aria_tda_experiments.audio.tokenizers import load_tokenizers

    qa_cfg = {"oversample": 4, "n_iter": p.query_audio_iters, "seed": seed}

    def _query_audio(d: Path) -> dict[str, Any]:
        listing = write_query_audio(load_tokenizers(tokens_dir / "tokenizers"), queries,
                                    d / "wav", oversample=4, n_iter=p.query_audio_iters,
                                    seed=seed, progress_bar=progress)
        return {"n_queries": len(pd.read_csv(listing))}

    return run.stage("query_audio", qa_cfg, ["tokens", "queries"], _query_audio)


def embedding_stages(run: StageRunner, p: Any, corpus: Any, train: Any, tokens_dir: Path,
                     queries: Any, query_ids: list[str], published: Mapping[str, Path],
                     seed: int, n_threads: int, progress: bool | None,
                     quiet: bool, qa_dir: Path) -> dict[str, tuple[str, Path]]:
    """Encoders, embeddings and cosine scores; baseline -> (encoder, scores).

    Parameters
    ----------
    run : StageRunner
        The demo's stage runner.
    p : AudioPreset
        The sizes (encoder steps and batch).
    corpus : AudioCorpus
        The corpus.
    train : pandas.DataFrame
        The training tracks.
    tokens_dir : pathlib.Path
        The tokens stage (its tokenizers feed the trained encoders).
    queries : pandas.DataFrame
        The queries.
    query_ids : list of str
        The queries' ids, in score-column order.
    published : mapping of str to pathlib.Path
        Baselines with a published checkpoint (the others are trained here).
    seed : int
        The demo's seed.
    n_threads : int
        Threads.
    progress : bool or None
        Draw progress bars.
    quiet : bool
        Print nothing.
    qa_dir : pathlib.Path
        The ``query_audio`` stage (:func:`query_audio_stage`).

    Returns
    -------
    dict
        Baseline name to ``(encoder label, scores path)``.
    """

    from aria_tda_experiments.audio.tokenizers import load_tokenizers

    trained = [f"{b}-style" for b in EMBEDDING_BASELINES if b not in published]
    weights: dict[str, Path] = {b: published[b] for b in published}
    after_enc: list[str] = []
    if trained:
        from aria_tda_experiments.audio.encoders import (
            CLEWS_EXTRA_WORKS,
            CLEWS_VERSIONS,
            demo_encoder_configs,
            train_demo_encoders,
        )

        sizes = {k: v for k, v in (("steps", p.encoder_steps), ("batch_size", p.encoder_batch))
                 if v is not None}
        cfgs = {n: c.replace(**sizes) for n, c in demo_encoder_configs().items() if n in trained}

        def _encoders(d: Path) -> dict[str, Any]:
            got = train_demo_encoders(corpus, d, tokenizers=load_tokenizers(tokens_dir /
                                      "tokenizers"), seed=seed, threads=n_threads,
                                      progress=progress, quiet=quiet, names=trained,
                                      configs=cfgs)
            return {"checkpoints": {n: str(v) for n, v in got.items()}}

        # clews-style's training renderings are part of the stage (more versions or works
        # retrain it)
        clews_data = ({"clews_versions": CLEWS_VERSIONS, "clews_extra_works": CLEWS_EXTRA_WORKS}
                      if "clews-style" in trained else {})
        enc_dir = run.stage("encoders", {"names": trained, "seed": seed, "configs": {
            n: c.to_dict() for n, c in cfgs.items()}, **clews_data}, ["corpus", "tokens"],
            _encoders, resumable=True)
        weights.update({n.removesuffix("-style"): enc_dir / f"{n}.pt" for n in trained})
        after_enc = ["encoders"]

    names = {b: b if b in published else f"{b}-style" for b in EMBEDDING_BASELINES}

    def _embed(d: Path) -> dict[str, Any]:
        from aria_tda.embed import embed_to_store, retrieve

        listing = train[["track_id", "path", "genre", "work_id"]].copy()
        listing["path"] = paths_for_listing([corpus.root / p_ for p_ in listing["path"]],
                                            d / "train.csv")
        write_text(d / "train.csv", listing.to_csv(index=False))
        info: dict[str, Any] = {}
        for b in EMBEDDING_BASELINES:
            kw: dict[str, Any] = {"encoder": names[b], "weights": weights[b],
                                  "progress": progress}
            tr = embed_to_store(d / "train.csv", d / b / "train", **kw)
            qs = embed_to_store(qa_dir / "wav" / "queries.csv", d / b / "queries", **kw)
            out = retrieve(d / b / "train", d / b / "queries", d / b / "cosine.npy",
                           progress=progress)
            _in_query_order(out, query_ids, d / b / "scores.npy")
            info[b] = {"encoder": names[b], "n_train_errors": tr.get("n_errors"),
                       "n_query_errors": qs.get("n_errors")}
            _log(f"{names[b]}: {tr.get('n_extracted')} training tracks and "
                 f"{qs.get('n_extracted')} queries embedded", quiet)
        return info

    emb_dir = run.stage("embeddings", {"encoders": {b: {"encoder": names[b], **_fingerprint(
        weights[b])} for b in EMBEDDING_BASELINES}}, ["corpus", "query_audio", *after_enc],
        _embed, resumable=True)
    return {b: (names[b], emb_dir / b / "scores.npy") for b in EMBEDDING_BASELINES}


def _in_query_order(path: Path, query_ids: Sequence[str], out: Path) -> None:
    """Write ``path``'s matrix to ``out`` with its columns in ``query_ids`` order."""
    from aria_tda.errors import DataError
    from aria_tda.manifest import read_manifest
    from aria_tda.scores import open_scores, save_scores

    src = open_scores(path)
    man = read_manifest(path) or {}
    have = [str(q) for q in man.get("query_ids") or []]
    if sorted(have) != sorted(query_ids):
        raise DataError(expected(f"{path} query_ids", f"the {len(query_ids)} generated queries",
                                 f"{len(have)} ids"))
    col = {q: i for i, q in enumerate(have)}
    s = src.to_numpy()[:, [col[q] for q in query_ids]]
    save_scores(s, out, method=str(man.get("method") or "cosine"), stage="-",
                parameters={"score": "cosine", "query_ids": list(query_ids)},
                row_ids=src.row_ids)
