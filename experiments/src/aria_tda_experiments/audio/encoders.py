r"""The demo's offline encoders: which tracks, labels and captions they learn from, and a check.

:func:`train_demo_encoders` trains the three encoders of :mod:`aria_tda_experiments.encoders` on the
audio demo corpus (:mod:`aria_tda_experiments.audio.corpus`) — its TRAINING split only — and writes
one checkpoint per encoder, ``<out_dir>/<name>.pt``, loadable with
``aria_tda.embed.encoders.load_encoder(name, weights=path)``:

- ``clews-style``: groups = works, so the renderings of one work (other instrument family,
  tempo, key) are each other's positives; a positive pair shows the same passage (the second
  view starts where the first is in the work, by the versions' known tempo scales);
- ``mert-style``: targets = the semantic tokens of the demo's tokenizers (passed in, or fitted
  here on the encoder's training tracks), frame by frame at the token rate;
- ``clap-style``: captions from the track metadata, e.g. ``"a chorale played by brass, fast"``
  (:func:`caption`): genre, instrument family and a tempo bucket of the version's tempo scale.

Held-out versions
-----------------
To measure retrieval on versions the encoders never heard, the last ``holdout_versions``
versions of every training work are left out of *encoder* training (by default one when works
have three or more versions, none otherwise): with the ``default`` preset, 30 works × 2
versions train the encoders and 30 held-out versions plus the corpus' planted versions are the
queries of :func:`version_retrieval`. The held-out audio is never read by the training (it may
be in the demo's tokenizer fit, which only sets the mert-style targets' codebook). The tracks of
the held-out *works* (split ``test``) are not used either.

clews-style learns what stays the same across the versions of a work, which two versions per
work cannot teach it (a held-out version's instrument family is never one of its work's
training versions: with two, it mostly learns the pair's timbres). So by default it trains on
more renderings of the same training works (:data:`CLEWS_VERSIONS`, :func:`versions_corpus`:
the same generator, rendered into ``<out_dir>/clews-corpus``), minus every query version
number (:func:`clews_training_tracks`): with the ``default`` preset, versions 0, 1 and 4-9 of
the 30 training works (240 tracks).

Resumability and determinism: a checkpoint is reused when its header records the same config,
seed and training-data digest (sha256 of the training WAVs with their track ids and labels or
captions, or the tokenizer's codebook); otherwise that encoder is retrained. Training is
deterministic per seed (same checkpoint bytes on the same machine and thread count; the
training times, which are not, go to ``<name>.times.json`` beside the checkpoint).

Audio at another rate than an encoder's (the corpus is 24 kHz; clews-style is 16 kHz) is
resampled with :func:`scipy.signal.resample_poly`.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from aria_tda._checks import check_int
from aria_tda._io import write_json
from aria_tda.embed.encoders.base import Encoder
from aria_tda.errors import DataError, ParameterError, expected
from aria_tda_experiments.encoders import (
    CONFIGS,
    ClapStyleConfig,
    ClewsStyleConfig,
    MertStyleConfig,
    front_end,
    read_checkpoint,
    save_checkpoint,
)
from aria_tda_experiments.encoders.config import OfflineConfig
from aria_tda_experiments.encoders.train import (
    train_audio_text,
    train_masked_prediction,
    train_version_contrastive,
)

__all__ = [
    "CLEWS_EXTRA_WORKS",
    "CLEWS_VERSIONS",
    "DEMO_ENCODERS",
    "caption",
    "clews_training_tracks",
    "demo_encoder_configs",
    "encoder_split",
    "load_clips",
    "train_demo_encoders",
    "version_retrieval",
    "versions_corpus",
]

#: Versions per training work rendered for the clews-style encoder (the query versions left
#: out): a work-contrastive encoder needs several renderings of a work, with different
#: instruments, to learn what stays the same across them.
CLEWS_VERSIONS = 10
#: More works per collection that only clews-style trains on (see :func:`versions_corpus`).
CLEWS_EXTRA_WORKS = 0

#: The three demo-trained encoders, in table order.
DEMO_ENCODERS: tuple[str, ...] = ("clews-style", "mert-style", "clap-style")


def _log(msg: str, quiet: bool) -> None:
    if not quiet:
        print(f"[demo encoders] {msg}", flush=True)


def demo_encoder_configs() -> dict[str, OfflineConfig]:
    """The configs the demo trains (the defaults of :mod:`aria_tda_experiments.encoders.config`)."""
    return {"clews-style": ClewsStyleConfig(), "mert-style": MertStyleConfig(),
            "clap-style": ClapStyleConfig()}


def caption(row: Mapping[str, Any]) -> str:
    """The caption of a track from its metadata: genre, instrument family, tempo bucket.

    ``tempo_scale`` below 0.967 is "slow", above 1.083 "fast", else "moderate" (thirds of the
    corpus' default range 0.85–1.2).

    Parameters
    ----------
    row : mapping
        A row of ``AudioCorpus.tracks`` (``genre``, ``instrument_family``, ``tempo_scale``).
    """
    t = float(row["tempo_scale"])
    tempo = "slow" if t < 0.967 else "fast" if t > 1.083 else "moderate"
    family = str(row["instrument_family"]).replace("_", " ")
    return f"a {row['genre']} played by {family}, {tempo}"


def encoder_split(corpus: Any, holdout_versions: int | None = None
                  ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The encoders' training tracks and the held-out version queries.

    Parameters
    ----------
    corpus : AudioCorpus
        The demo corpus.
    holdout_versions : int, optional
        Versions per training work left out of encoder training (the last ones); default 1
        when ``versions_per_work >= 3``, else 0.

    Returns
    -------
    (pandas.DataFrame, pandas.DataFrame)
        Training tracks (split ``train``, version < V - holdout) and queries (the held-out
        versions of training works and the planted tracks).
    """
    v = int(corpus.config.versions_per_work)
    h = (1 if v >= 3 else 0) if holdout_versions is None else check_int(
        "holdout_versions", holdout_versions, min_value=0, max_value=v - 1)
    train = corpus.train
    fit = train[train["version"] < v - h].reset_index(drop=True)
    queries = pd.concat([train[train["version"] >= v - h], corpus.planted], ignore_index=True)
    queries = queries[queries["work_id"].isin(set(fit["work_id"]))].reset_index(drop=True)
    if fit["work_id"].nunique() < 2:
        raise DataError(expected("corpus", "at least two training works", fit["work_id"]
                                 .nunique()))
    return fit, queries


def versions_corpus(corpus: Any, out_dir: str | os.PathLike[str], versions: int, *,
                    extra_works: int = 0, n_jobs: int = 1, progress: bool | None = None) -> Any:
    """The demo corpus' works with ``versions`` versions each (the clews-style training data).

    Built with :func:`~aria_tda_experiments.audio.corpus.build_audio_corpus` from the demo's config
    with ``versions_per_work=versions``, ``works_per_collection`` + ``extra_works`` and no planted
    works: the demo's works with the same versions (version ``k`` of a work is the same
    rendering whatever ``versions_per_work`` is), plus versions
    ``versions_per_work..versions-1``, plus ``extra_works`` more works of each collection (the
    next ones of its seeded order, in no split of the demo). The demo's WAVs are hard-linked
    (else copied) into ``out_dir/audio`` first, so only the new tracks are rendered (0.4-0.6 s
    per 30 s track on one core); a complete folder is reused as it is.

    Parameters
    ----------
    corpus : AudioCorpus
        The demo corpus.
    out_dir : path
        Folder of the extended corpus.
    versions : int
        Versions per work (``corpus.config.versions_per_work`` to 11, one per instrument
        family).
    extra_works : int
        More works per collection.
    n_jobs : int
        Render processes.
    progress : bool, optional
        Progress bar on/off.

    Returns
    -------
    AudioCorpus
    """
    import shutil

    from aria_tda_experiments.audio.corpus import build_audio_corpus
    from aria_tda_experiments.audio.versions import INSTRUMENT_FAMILIES

    v0 = int(corpus.config.versions_per_work)
    versions = check_int("clews_versions", versions, min_value=v0,
                         max_value=len(INSTRUMENT_FAMILIES))
    out = Path(out_dir)
    (out / "audio").mkdir(parents=True, exist_ok=True)
    for p in corpus.tracks["path"]:
        src, dst = Path(corpus.root) / str(p), out / str(p)
        if not dst.exists():
            try:
                os.link(src, dst)
            except OSError:
                shutil.copyfile(src, dst)
    extra_works = check_int("clews_extra_works", extra_works, min_value=0)
    ext = build_audio_corpus(out, config=corpus.config.replace(
        versions_per_work=versions, planted_works=0,
        works_per_collection=corpus.config.works_per_collection + extra_works),
        n_jobs=n_jobs, progress_bar=progress)
    cols = ["track_id", "program", "tempo_scale", "transpose"]
    both = corpus.tracks[cols].merge(ext.tracks[cols], on="track_id", suffixes=("", "_x"))
    if len(both) < len(corpus.tracks[corpus.tracks["split"] != "planted"]) or any(
            not np.allclose(both[k], both[k + "_x"]) for k in cols[1:]):
        raise DataError(expected("clews_versions corpus", "the demo's versions unchanged",
                                 "other versions (corpus version plan changed?)"))
    return ext


def clews_training_tracks(corpus: Any, extended: Any, holdout_versions: int | None = None
                          ) -> pd.DataFrame:
    """The clews-style training tracks: every version of the training works but the queries'
    version numbers, and every track of the works that are not in the demo corpus.

    Parameters
    ----------
    corpus : AudioCorpus
        The demo corpus.
    extended : AudioCorpus
        :func:`versions_corpus` of it.
    holdout_versions : int, optional
        See :func:`encoder_split`.

    Returns
    -------
    pandas.DataFrame
        Rows of ``extended.tracks`` (``path`` relative to ``extended.root``): the training
        works of :func:`encoder_split`, without any version that is a query there (the
        held-out and planted versions' *versions*, for every work, so no rendering with a
        query's instrument, tempo and key of that work is trained on); and all versions of the
        extended corpus' works that are in no split of the demo (never its test works).
    """
    fit, queries = encoder_split(corpus, holdout_versions)
    held = set(queries["version"])
    t = extended.tracks
    other = ~t["work_id"].isin(set(corpus.tracks["work_id"]))
    # the demo's split decides which of its works train (the extended corpus re-splits its
    # larger collections, so its own ``split`` column is not the demo's)
    rows = t[(t["work_id"].isin(set(fit["work_id"])) & ~t["version"].isin(held))
             | other].reset_index(drop=True)
    if not set(fit["track_id"]) <= set(rows["track_id"]) or set(rows["track_id"]) & set(
            queries["track_id"]):
        raise DataError(expected("extended corpus", "the demo's training versions and no query",
                                 "another corpus"))
    return rows


def load_clips(corpus: Any, rows: pd.DataFrame, sr: int) -> list[np.ndarray]:
    """The corpus tracks of ``rows`` as mono float32 audio at ``sr``.

    Parameters
    ----------
    corpus : AudioCorpus
        The corpus (its ``root`` folder).
    rows : pandas.DataFrame
        Tracks, with a ``path`` column relative to the corpus root.
    sr : int
        The sample rate wanted (resampled when the file's differs).

    Returns
    -------
    list of numpy.ndarray
    """
    import soundfile as sf
    from scipy.signal import resample_poly

    out = []
    for p in rows["path"]:
        y, file_sr = sf.read(os.fspath(Path(corpus.root) / str(p)), dtype="float32",
                             always_2d=True)
        y = y.mean(axis=1)
        if file_sr != sr:
            g = math.gcd(int(file_sr), int(sr))
            y = resample_poly(y, sr // g, file_sr // g).astype(np.float32)
        out.append(y)
    return out


def _digest(corpus: Any, rows: pd.DataFrame, labels: Sequence[Any], extra: Any = None) -> str:
    h = hashlib.sha256()
    for tid, p, lab in zip(rows["track_id"], rows["path"], labels, strict=True):
        wav = hashlib.sha256((Path(corpus.root) / str(p)).read_bytes()).hexdigest()
        h.update(json.dumps([str(tid), wav, str(lab)]).encode())
    h.update(json.dumps(extra, sort_keys=True, default=str).encode())
    return h.hexdigest()


def _tokenizer_id(tok: Any) -> str:
    h = hashlib.sha256(json.dumps(tok.config.to_dict(), sort_keys=True).encode())
    h.update(np.ascontiguousarray(tok.arrays["sem_centroids"], dtype=np.float64).tobytes())
    return h.hexdigest()


def _reusable(path: Path, config: OfflineConfig, digest: str, seed: int) -> bool:
    if not path.is_file():
        return False
    try:
        h = read_checkpoint(path)["header"]
    except Exception:  # unreadable or foreign: retrain and overwrite
        return False
    return bool(h.get("config") == config.to_dict() and h.get("corpus_digest") == digest
                and h.get("seed") == seed)


def train_demo_encoders(
    corpus: Any,
    out_dir: str | os.PathLike[str],
    *,
    tokenizers: Any = None,
    seed: int = 0,
    threads: int = 1,
    progress: bool | None = None,
    quiet: bool = False,
    names: Sequence[str] = DEMO_ENCODERS,
    configs: Mapping[str, OfflineConfig] | None = None,
    holdout_versions: int | None = None,
    clews_versions: int | None = CLEWS_VERSIONS,
    clews_extra_works: int = CLEWS_EXTRA_WORKS,
) -> dict[str, Path]:
    """Train (or reuse) the demo's offline encoders on the corpus' training tracks.

    Parameters
    ----------
    corpus : AudioCorpus
        The demo corpus (:func:`~aria_tda_experiments.audio.corpus.build_audio_corpus`).
    out_dir : path
        Folder of the checkpoints ``<name>.pt`` (and ``tokenizers/`` when fitted here).
    tokenizers : Tokenizers, optional
        The demo's fitted tokenizers (mert-style's targets are their semantic tokens; their
        rate must be 24 kHz and their hop a multiple of the stem stride); default: fitted here
        on the encoders' training tracks with ``semantic_k`` = the config's ``vocab``.
    seed : int
        Seeds the weights and batches (and a tokenizer fit).
    threads : int
        Torch threads while training.
    progress : bool, optional
        Progress bars on/off (default: on a terminal).
    quiet : bool
        No log lines.
    names : sequence of str
        Which encoders (default all three).
    configs : mapping, optional
        Config per encoder name (default :func:`demo_encoder_configs`).
    holdout_versions : int, optional
        See :func:`encoder_split`.
    clews_versions : int, optional
        clews-style trains on this many versions of every training work but the query
        versions (:func:`clews_training_tracks`), rendered into ``<out_dir>/clews-corpus``
        by :func:`versions_corpus` (``threads`` render processes; cached); default
        :data:`CLEWS_VERSIONS`. None: on the demo's training tracks only, as the others.
    clews_extra_works : int
        With ``clews_versions``, clews-style also trains on all versions of this many more
        works per collection (works in no split of the demo); default
        :data:`CLEWS_EXTRA_WORKS`.

    Returns
    -------
    dict of str to pathlib.Path
        Encoder name → checkpoint.
    """
    seed = check_int("seed", seed, min_value=0)
    threads = check_int("threads", threads, min_value=1)
    cfgs = dict(demo_encoder_configs(), **dict(configs or {}))
    for n in names:
        if n not in CONFIGS:
            raise ParameterError(expected("names[]", "one of " + ", ".join(CONFIGS), n))
        if not isinstance(cfgs[n], CONFIGS[n]):
            raise ParameterError(expected(f"configs[{n!r}]", CONFIGS[n].__name__,
                                          type(cfgs[n]).__name__))
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    fit, _ = encoder_split(corpus, holdout_versions)
    audio: dict[int, list[np.ndarray]] = {}

    def signals(sr: int) -> list[np.ndarray]:
        if sr not in audio:
            audio[sr] = load_clips(corpus, fit, sr)
        return audio[sr]

    paths: dict[str, Path] = {}
    for name in names:
        cfg = cfgs[name]
        path = out / f"{name}.pt"
        extra: dict[str, Any] = {}
        rows, src = fit, corpus
        if isinstance(cfg, ClewsStyleConfig):
            if clews_versions is not None and clews_versions > corpus.config.versions_per_work:
                src = versions_corpus(corpus, out / "clews-corpus", clews_versions,
                                      extra_works=clews_extra_works, n_jobs=threads,
                                      progress=progress)
                rows = clews_training_tracks(corpus, src, holdout_versions)
            labels: list[Any] = rows["work_id"].tolist()
            digest = _digest(src, rows, labels)
        elif isinstance(cfg, ClapStyleConfig):
            labels = [caption(r) for r in fit.to_dict("records")]
            digest = _digest(corpus, fit, labels)
        else:
            tok = _mert_tokenizers(tokenizers, fit, corpus, cfg, seed, out, progress)
            cfg = cfg.replace(vocab=int(tok.config.semantic_k),
                              hop=int(tok.hop) // cfg.stem_stride)
            labels = [""] * len(fit)
            digest = _digest(corpus, fit, labels, extra=_tokenizer_id(tok))
        if _reusable(path, cfg, digest, seed):
            _log(f"{name}: reusing {path}", quiet)
            paths[name] = path
            continue
        t0 = time.perf_counter()
        clips = (load_clips(src, rows, cfg.sample_rate) if src is not corpus
                 else signals(cfg.sample_rate))
        feats = [front_end(y, cfg) for y in clips]
        t_front = time.perf_counter() - t0
        if isinstance(cfg, ClewsStyleConfig):
            groups = pd.factorize(rows["work_id"])[0]
            model, record = train_version_contrastive(
                feats, groups, config=cfg, rates=rows["tempo_scale"].to_numpy(),
                families=rows["instrument_family"].tolist(), seed=seed,
                threads=threads, progress_bar=progress)
        elif isinstance(cfg, ClapStyleConfig):
            model, record = train_audio_text(feats, labels, config=cfg, seed=seed,
                                             threads=threads, progress_bar=progress)
            extra["vocab"] = record.pop("vocab")
        else:
            toks = [tok.tokenize(y).semantic for y in signals(cfg.sample_rate)]
            model, record = train_masked_prediction(feats, toks, config=cfg, seed=seed,
                                                    threads=threads, progress_bar=progress)
        record["n_works"] = int(rows["work_id"].nunique())
        record["versions"] = sorted(int(v) for v in set(rows["version"]))
        times = {"train_seconds": record.pop("seconds"), "front_end_seconds": round(t_front, 3),
                 "threads": threads}
        save_checkpoint(path, name=name, config=cfg, model=model, corpus_digest=digest,
                        seed=seed, training=record, extra=extra)
        write_json(out / f"{name}.times.json", times)
        losses = record["losses"]
        k = max(1, len(losses) // 10)
        _log(f"{name}: trained on {len(rows)} tracks in {times['train_seconds']:.1f} s "
             f"(+{t_front:.1f} s front end), loss {np.mean(losses[:k]):.3f} -> "
             f"{np.mean(losses[-k:]):.3f}; {path}", quiet)
        paths[name] = path
    return paths


def _mert_tokenizers(tokenizers: Any, fit: pd.DataFrame, corpus: Any, cfg: MertStyleConfig,
                     seed: int, out: Path, progress: bool | None) -> Any:
    if tokenizers is None:
        from aria_tda_experiments.audio.tokenizers import TokenizerConfig, fit_tokenizers

        tcfg = TokenizerConfig(sr=cfg.sample_rate, frame_hz=cfg.sample_rate / (
            cfg.hop * cfg.stem_stride), semantic_k=cfg.vocab, seed=seed)
        paths = [Path(corpus.root) / str(p) for p in fit["path"]]
        return fit_tokenizers(paths, config=tcfg, out_dir=out / "tokenizers",
                              progress_bar=progress)
    tc = tokenizers.config
    if tc.sr != cfg.sample_rate or tokenizers.hop % cfg.stem_stride:
        raise ParameterError(expected(
            "tokenizers", f"tokenizers at {cfg.sample_rate} Hz with a hop divisible by "
            f"{cfg.stem_stride}", f"sr {tc.sr}, hop {tokenizers.hop}"))
    return tokenizers


def _embed_rows(encoder: Encoder, corpus: Any, rows: pd.DataFrame) -> np.ndarray:
    ys = load_clips(corpus, rows, int(encoder.sample_rate))
    e = np.stack([encoder.embed(y) for y in ys])
    return e / np.maximum(np.linalg.norm(e, axis=1, keepdims=True), 1e-12)


def _rank1(sim: np.ndarray, q_works: np.ndarray, g_works: np.ndarray) -> tuple[float, float]:
    top = np.argmax(sim, axis=1)
    hit = float(np.mean(g_works[top] == q_works))
    valid = np.isfinite(sim)
    same = ((g_works[None, :] == q_works[:, None]) & valid).sum(axis=1)
    chance = float(np.mean(same / valid.sum(axis=1)))
    return hit, chance


def version_retrieval(
    encoder: Encoder, corpus: Any, *, holdout_versions: int | None = None,
) -> dict[str, Any]:
    """Retrieval sanity check: do held-out versions retrieve a version of their own work?

    Gallery: the demo's training tracks but the held-out versions (:func:`encoder_split`;
    with the ``default`` preset versions 0-1 of 30 works, 60 tracks); queries: the held-out
    versions of training works and the planted versions, never heard by any encoder (whose
    instrument family, by the corpus' version plan, is not that of any other version of the
    work). Each track's embedding is
    :meth:`Encoder.embed` (time average), compared by cosine. A query is a hit when its most
    similar gallery track is a version of the same work; ``chance`` is the hit rate of a random
    ranking (mean over queries of same-work gallery tracks / gallery size). Also, on the
    held-out *works* (split ``test``, never seen by the encoders): each test track against the
    other test tracks (leave one out).

    Parameters
    ----------
    encoder : Encoder
        A loaded encoder (any, e.g. ``load_encoder("clews-style", weights=...)``).
    corpus : AudioCorpus
        The corpus the encoder was trained on.
    holdout_versions : int, optional
        As given to :func:`train_demo_encoders`.

    Returns
    -------
    dict
        ``encoder``, ``rank1``, ``chance``, ``n_queries``, ``n_gallery``, ``n_works``,
        ``query_versions``, ``gallery_versions``, ``misses_by_family`` (instrument family of
        the missed queries → count), ``hits`` (query track id → whether it hit), and
        ``test_works`` (``rank1``, ``chance``, ``n_queries``) when the test split has a work
        with two versions.
    """
    fit, queries = encoder_split(corpus, holdout_versions)
    if queries.empty:
        raise DataError(expected("corpus", "held-out versions of training works (versions_per"
                                 "_work >= 3 or planted works)", "none"))
    t0 = time.perf_counter()
    g = _embed_rows(encoder, corpus, fit)
    q = _embed_rows(encoder, corpus, queries)
    qw, gw = queries["work_id"].to_numpy(), fit["work_id"].to_numpy()
    hit, chance = _rank1(q @ g.T, qw, gw)
    top = np.argmax(q @ g.T, axis=1)
    out: dict[str, Any] = {
        "encoder": encoder.name, "rank1": round(hit, 4), "chance": round(chance, 4),
        "n_queries": len(queries), "n_gallery": len(fit), "n_works": int(fit["work_id"].nunique()),
        "query_versions": sorted(int(v) for v in set(queries["version"])),
        "gallery_versions": sorted(int(v) for v in set(fit["version"])),
        "misses_by_family": {str(k): int(n) for k, n in queries.loc[
            gw[top] != qw, "instrument_family"].value_counts().sort_index().items()},
        "hits": {str(t): bool(gw[i] == w) for t, i, w in zip(queries["track_id"], top, qw,
                                                                strict=True)},
    }
    test = corpus.test
    counts = test["work_id"].value_counts()
    test = test[test["work_id"].isin(counts[counts >= 2].index)].reset_index(drop=True)
    if len(test) >= 2:
        e = _embed_rows(encoder, corpus, test)
        sim = e @ e.T
        np.fill_diagonal(sim, -np.inf)
        tw = test["work_id"].to_numpy()
        t_hit, t_chance = _rank1(sim, tw, tw)
        out["test_works"] = {"rank1": round(t_hit, 4), "chance": round(t_chance, 4),
                             "n_queries": len(test)}
    out["seconds"] = round(time.perf_counter() - t0, 3)
    return out
