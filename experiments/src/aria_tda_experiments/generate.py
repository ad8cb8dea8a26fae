"""Attribution queries: the model's continuations of prompts taken from held-out works.

Conventions
-----------
- Query ``j`` = ``prompt_len`` tokens of a held-out (test-split) window followed by
  ``window - prompt_len`` tokens sampled from the model, so queries have the training windows'
  shape ``(T, L)``; the generated part is the query's last ``L - prompt_len`` tokens (the
  ``last_token`` attribution target is a generated token).
- Prompts are spread over held-out works: works in a seeded order, each work's windows in a
  seeded order, then taken round-robin (first window of every work, then second, ...).
- Sampling: ancestral, ``softmax(logits / temperature)`` restricted to the ``top_k`` most
  likely tokens when given; ``PAD`` and ``BOS`` are never sampled. A private
  :class:`torch.Generator` seeded by ``seed`` and a pinned thread count make it deterministic.

On disk (``out_dir``, written atomically, manifest kind ``"aria_tda_experiments.queries"``)::

    tokens.npy   (T, L) int64
    queries.csv  query_id, source_segment_id, source_work, collection, composer, title, key,
                 mode, meter (the source work's labels, for confound analyses), prompt_len,
                 n_generated, start_velocity, prompt_seconds, midi_file
    midi/q0000.mid ...  each query decoded (prompt + continuation) for listening
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
from torch import nn

from aria_tda._checks import check_float, check_int
from aria_tda._io import atomic_path
from aria_tda._progress import progress
from aria_tda.errors import DataError, FileFormatError, ParameterError, expected
from aria_tda.manifest import make_manifest, read_manifest, write_manifest
from aria_tda_experiments import tokenizer as tk
from aria_tda_experiments.corpus import Corpus
from aria_tda_experiments.train import torch_threads

__all__ = ["QUERY_COLUMNS", "Queries", "generate_queries", "load_queries", "pick_prompts", "sample"]

QUERIES_KIND = "aria_tda_experiments.queries"
QUERY_COLUMNS = (
    "query_id", "source_segment_id", "source_work", "collection", "composer", "title", "key",
    "mode", "meter", "prompt_len", "n_generated", "start_velocity", "prompt_seconds", "midi_file",
)


@dataclass
class Queries:
    """Generated queries (see module docstring).

    Attributes
    ----------
    tokens : np.ndarray [shape=(T, L)], int64
    meta : pandas.DataFrame
        One row per query, columns ``QUERY_COLUMNS``.
    prompt_len : int
    path : Path or None
    """

    tokens: np.ndarray
    meta: pd.DataFrame
    prompt_len: int
    path: Path | None = None

    @property
    def ids(self) -> np.ndarray:
        return self.meta["query_id"].to_numpy(dtype=str)

    def notes(self, j: int) -> list[tk.Note]:
        """Decoded notes of query ``j``.

        Parameters
        ----------
        j : int
            Query index.
        """
        return tk.decode(self.tokens[j], initial_velocity=int(self.meta["start_velocity"].iloc[j]))


@torch.no_grad()
def sample(
    model: nn.Module,
    prompts: np.ndarray | torch.Tensor,
    *,
    n_new: int,
    temperature: float = 1.0,
    top_k: int | None = None,
    seed: int = 0,
    num_threads: int = 1,
    progress_bar: bool | None = None,
) -> np.ndarray:
    r"""Extend ``prompts`` ``(B, P)`` by ``n_new`` sampled tokens → ``(B, P + n_new)`` int64.

    Each step runs the model on the whole prefix (no cache; the benchmark's windows are short)
    and draws :math:`x_t \sim \mathrm{softmax}(z_{t-1}/\tau)` over the allowed tokens.

    Parameters
    ----------
    model : nn.Module
        Tokens ``(B, L)`` → logits ``(B, L, V)``.
    prompts : array [shape=(B, P)], integer
        The prefixes to extend.
    n_new : int
        Tokens to add.
    temperature : float, > 0
        Softmax temperature :math:`\tau`.
    top_k : int, optional
        Sample among the ``top_k`` most likely tokens only.
    seed : int
        Seeds the draws.
    num_threads : int
        torch intra-op threads while sampling.
    progress_bar : bool, optional
        Force the progress bar on/off.
    """
    n_new = check_int("n_new", n_new, min_value=0)
    temperature = check_float("temperature", temperature, min_value=0.0, min_inclusive=False)
    seed = check_int("seed", seed, min_value=0)
    x = torch.as_tensor(np.asarray(prompts), dtype=torch.int64)
    if x.ndim != 2 or x.shape[1] < 1:
        what = "an int array of shape (B, P >= 1)"
        raise ParameterError(expected("prompts", what, tuple(x.shape)))
    gen = torch.Generator().manual_seed(seed)
    model.eval()
    with torch_threads(num_threads):
        for _ in progress(range(n_new), desc="generating", unit="token", enabled=progress_bar):
            logits = model(x)[:, -1, :].double() / temperature
            if logits.shape[-1] > tk.BOS:
                logits[:, [tk.PAD, tk.BOS]] = float("-inf")
            if top_k is not None:
                k = check_int("top_k", top_k, min_value=1)
                if k < logits.shape[-1]:
                    kth = torch.topk(logits, k, dim=-1).values[:, -1:]
                    logits = logits.masked_fill(logits < kth, float("-inf"))
            probs = torch.softmax(logits, dim=-1)
            nxt = torch.multinomial(probs, 1, generator=gen)
            x = torch.cat([x, nxt], dim=1)
    return x.numpy()


def pick_prompts(corpus: Corpus, n_queries: int, *, seed: int = 0) -> np.ndarray:
    """Rows of ``corpus.test_tokens`` to prompt from, round-robin over held-out works.

    Parameters
    ----------
    corpus : Corpus
        The benchmark corpus.
    n_queries : int
        Rows to pick (at most the number of held-out windows).
    seed : int
        Seeds the order of works and windows.
    """
    n_queries = check_int("n_queries", n_queries, min_value=1)
    meta = corpus.test_meta
    if n_queries > len(meta):
        raise DataError(f"n_queries: expected at most the {len(meta)} held-out windows, "
                        f"got {n_queries}")
    rng = np.random.default_rng([check_int("seed", seed, min_value=0), 3])
    works = sorted(meta["work_id"].unique())
    per_work = [rng.permutation(np.flatnonzero(meta["work_id"].to_numpy() == w)) for w in
                (works[i] for i in rng.permutation(len(works)))]
    order = [rows[r] for r in range(max(len(p) for p in per_work))
             for rows in per_work if r < len(rows)]
    return np.asarray(order[:n_queries], dtype=np.int64)


def generate_queries(
    model: nn.Module,
    corpus: Corpus,
    *,
    n_queries: int = 100,
    prompt_len: int | None = None,
    temperature: float = 1.0,
    top_k: int | None = None,
    seed: int = 0,
    num_threads: int = 1,
    out_dir: str | os.PathLike[str] | None = None,
    progress_bar: bool | None = None,
) -> Queries:
    """Generate ``n_queries`` queries from held-out prompts (see module docstring).

    Parameters
    ----------
    model : nn.Module
        Tokens ``(B, L)`` → logits ``(B, L, V)`` (e.g. ``train_model(...).model``).
    corpus : Corpus
        Prompts come from ``corpus.test_tokens`` (works never seen in training).
    n_queries : int
        At most the number of held-out windows.
    prompt_len : int, optional
        Prompt tokens (default ``window // 2``); ``1 <= prompt_len < window``.
    temperature, top_k : float, int
        Sampling settings (see :func:`sample`).
    seed : int
        Seeds prompt choice and sampling.
    num_threads : int
        torch intra-op threads while sampling.
    out_dir : path, optional
        Save tokens, metadata and one MIDI file per query (atomically).
    progress_bar : bool, optional
        Force the progress bar on/off.
    """
    window = int(corpus.test_tokens.shape[1])
    prompt_len = window // 2 if prompt_len is None else prompt_len
    prompt_len = check_int("prompt_len", prompt_len, min_value=1, max_value=window - 1)
    rows = pick_prompts(corpus, n_queries, seed=seed)
    prompts = corpus.test_tokens[rows, :prompt_len]
    tokens = sample(model, prompts, n_new=window - prompt_len, temperature=temperature, top_k=top_k,
                    seed=seed, num_threads=num_threads, progress_bar=progress_bar)
    src = corpus.test_meta.iloc[rows].reset_index(drop=True)
    prompt_sec = [
        float(np.sum(np.where((p >= tk.TIME_SHIFT) & (p < tk.SET_VELOCITY),
                              p - tk.TIME_SHIFT + 1, 0)))
        / tk.STEPS_PER_SECOND for p in prompts
    ]
    meta = pd.DataFrame({
        "query_id": [f"q{j:04d}" for j in range(len(rows))],
        "source_segment_id": src["segment_id"], "source_work": src["work_id"],
        "collection": src["collection"], "composer": src["composer"], "title": src["title"],
        "key": src["key"], "mode": src["mode"], "meter": src["meter"],
        "prompt_len": prompt_len, "n_generated": window - prompt_len,
        "start_velocity": src["start_velocity"].astype(int), "prompt_seconds": prompt_sec,
        "midi_file": [f"midi/q{j:04d}.mid" for j in range(len(rows))],
    }, columns=list(QUERY_COLUMNS))
    queries = Queries(tokens=tokens.astype(np.int64), meta=meta, prompt_len=prompt_len)
    if out_dir is not None:
        params = {"n_queries": int(n_queries), "prompt_len": prompt_len, "temperature": temperature,
                  "top_k": top_k, "seed": seed, "num_threads": num_threads,
                  "corpus": str(corpus.path), "window": window}
        save_queries(queries, out_dir, params=params)
    return queries


def save_queries(
    queries: Queries, out_dir: str | os.PathLike[str], *, params: dict[str, Any]
) -> Path:
    """Write ``queries`` to ``out_dir`` (tokens, CSV, one MIDI per query, manifest)."""
    final = Path(out_dir)
    with atomic_path(final) as tmp:
        (tmp / "midi").mkdir(parents=True)
        np.save(tmp / "tokens.npy", queries.tokens)
        queries.meta.to_csv(tmp / "queries.csv", index=False)
        for j, rel in enumerate(queries.meta["midi_file"]):
            tk.write_midi(queries.notes(j), tmp / rel)
        write_manifest(tmp, make_manifest(QUERIES_KIND, params=params, n_queries=len(queries.meta),
                                          shape=list(queries.tokens.shape)))
    queries.path = final
    return final


def load_queries(path: str | os.PathLike[str]) -> Queries:
    """Load queries written by :func:`generate_queries`.

    Parameters
    ----------
    path : path
        The queries directory.
    """
    p = Path(path)
    man = read_manifest(p)
    if man is None or man.get("kind") != QUERIES_KIND:
        raise FileFormatError(f"queries: {str(p)!r} has no manifest of kind {QUERIES_KIND!r}")
    meta = pd.read_csv(p / "queries.csv", keep_default_na=False,
                       dtype={c: str for c in ("query_id", "source_segment_id", "source_work",
                                               "collection", "composer", "title", "key", "mode",
                                               "meter", "midi_file")})
    return Queries(tokens=np.load(p / "tokens.npy"), meta=meta,
                   prompt_len=int(man["params"]["prompt_len"]), path=p)
