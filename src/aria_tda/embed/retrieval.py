r"""Embedding retrieval: the cosine score matrix of two embedding stores, streamed in row blocks.

The embedding baselines of the paper (§4.3, appendix "Embedding baselines", Eq. emb) score a
training track :math:`s` for a query :math:`q` by the cosine similarity of their time-averaged
encoder embeddings,

.. math::

    \tau_{\mathrm{emb}}(q, s) = \frac{e(q)^\top e(s)}{\lVert e(q)\rVert\,\lVert e(s)\rVert},

which makes a track-level score matrix :math:`S \in \mathbb{R}^{N \times T}` (training tracks ×
queries, ARIA's orientation).

- :func:`retrieve` (``aria-tda retrieve``) and :func:`write_cosine_scores` (the same, with a
  method label; what a study naming embedding stores directly calls) — two embedding stores
  (:mod:`aria_tda.embed.store`) in, a track-level score file out: float32, written in row
  blocks — never held whole in memory — to ``.npy`` or ``.zarr`` with row ids (the training
  track ids, so ``aria-tda run`` maps rows to the feature store without a segment map) and a
  manifest naming both stores, their encoder and the query ids; ``OUT.queries.csv``
  (:func:`queries_table_path`) lists the queries (``query`` column index, ``track_id``,
  metadata). Stores from different encoders (or checkpoints, layers, dimensions) are refused.
- :func:`cosine_scores` — the streaming kernel on two arrays.

This module is in the storage layer: it imports neither torch nor an encoder.

Conventions
-----------
- ``train`` is ``(N, d)``, ``queries`` is ``(T, d)``, any array that slices into row blocks
  (a NumPy array or a read-only ``np.memmap`` of a ``.npy``); the result is float32 ``(N, T)``.
- Streaming: :func:`cosine_scores` normalises the queries once (``T × d`` float32) and then
  holds one block of ``block_rows`` training rows and its ``block_rows × T`` scores at a time
  (one score buffer, reused), handing each score block to ``out.write_rows(start, block)`` (an
  :class:`~aria_tda.scores.writers.ScoreWriter`), so the full matrix is never in memory. Row norms
  are computed in float64, the products in float32 (BLAS SGEMM), which is exact to ~1e-6.
- An embedding of norm zero (or with a NaN/inf entry) has no cosine: it is a
  :class:`~aria_tda.errors.DataError` naming the track, never a silent NaN column.

:func:`cosine_scores_reference` is the exact float64 single-block twin.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from aria_tda.errors import DataError, ParameterError, expected

__all__ = [
    "cosine_scores",
    "default_block_rows",
    "queries_table_path",
    "retrieve",
    "write_cosine_scores",
]

#: Target bytes of one block of scores (float32) held at a time.
BLOCK_BYTES = 64 * 2**20


def default_block_rows(n_queries: int, *, block_bytes: int = BLOCK_BYTES) -> int:
    """Training rows per block so that one float32 score block is about ``block_bytes``.

    Parameters
    ----------
    n_queries : int
        Number of queries (columns).
    block_bytes : int
        Target size of one score block.
    """
    return int(max(1, block_bytes // (4 * max(1, int(n_queries)))))


def _check(train: Any, queries: Any, block_rows: int | None) -> tuple[int, int, int]:
    shapes = []
    for name, x in (("train", train), ("queries", queries)):
        shape = getattr(x, "shape", None)
        if shape is None or len(shape) != 2 or shape[0] < 1 or shape[1] < 1:
            raise DataError(expected(name, "a non-empty 2-D array (rows, dim)", shape))
        shapes.append(tuple(int(s) for s in shape))
    (n, d), (t, dq) = shapes
    if d != dq:
        raise DataError(
            f"queries: expected embeddings of the training dimension {d}, got dimension {dq}"
        )
    if block_rows is not None and (
        isinstance(block_rows, bool) or not isinstance(block_rows, (int, np.integer))
        or block_rows < 1
    ):
        raise ParameterError(expected("block_rows", "an integer >= 1", block_rows))
    return n, t, d


def _unit_rows(x: Any, start: int, ids: Any, name: str) -> np.ndarray:
    """Rows scaled to unit norm (float32); a zero-norm or non-finite row is a DataError."""
    x64 = np.asarray(x, dtype=np.float64)
    norms = np.sqrt(np.einsum("ij,ij->i", x64, x64))
    bad = ~np.isfinite(norms) | (norms == 0.0)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        what = "has norm zero" if np.isfinite(norms[i]) else "has NaN or infinite values"
        who = f"track {str(ids[start + i])!r}" if ids is not None else f"row {start + i}"
        raise DataError(
            f"{name}: the embedding of {who} {what}; a cosine similarity needs a non-zero, finite "
            "embedding (silent or missing audio?)"
        )
    return (x64 / norms[:, None]).astype(np.float32)


def cosine_scores(
    train: Any,
    queries: Any,
    *,
    block_rows: int | None = None,
    out: Any = None,
    train_ids: Any = None,
    query_ids: Any = None,
    progress: bool | None = None,
) -> np.ndarray | None:
    r"""Cosine similarity of every training embedding with every query embedding, streamed.

    Parameters
    ----------
    train : array-like [shape=(N, d)]
        Training-track embeddings (rows sliced in blocks; a memmap stays on disk).
    queries : array-like [shape=(T, d)]
        Query embeddings (held in memory, normalised once).
    block_rows : int, optional
        Training rows per block (default: a float32 score block of about 64 MB).
    out : object with ``write_rows(start, block)``, optional
        Where each ``(rows, T)`` float32 block goes (a
        :class:`~aria_tda.scores.writers.ScoreWriter`); without it the matrix is returned.
    train_ids, query_ids : sequence of str, optional
        Names used in the error for a zero-norm embedding.
    progress : bool, optional
        Progress bar over the blocks.

    Returns
    -------
    numpy.ndarray [shape=(N, T)] float32, or None
        :math:`S_{ij} = \hat e(s_i)^\top \hat e(q_j)` (Eq. emb); ``None`` when ``out`` is given.

    Raises
    ------
    DataError
        different dimensions, an empty input, or an embedding with norm zero / NaN.
    """
    from aria_tda._progress import progress as bar

    n, t, _ = _check(train, queries, block_rows)
    q_hat = _unit_rows(queries, 0, query_ids, "queries")
    rows = block_rows if block_rows is not None else default_block_rows(t)
    result = np.empty((n, t), dtype=np.float32) if out is None else None
    # one score buffer, reused for every block (never two blocks alive at once)
    buf = np.empty((min(rows, n) if out is not None else 0, t), dtype=np.float32)
    with bar(total=n, desc="cosine scores", unit="row", enabled=progress) as pbar:
        for start in range(0, n, rows):
            stop = min(n, start + rows)
            x_hat = _unit_rows(train[start:stop], start, train_ids, "train")
            block = result[start:stop] if result is not None else buf[: stop - start]
            np.matmul(x_hat, q_hat.T, out=block)
            if result is None:
                out.write_rows(start, block)
            del x_hat
            pbar.update(stop - start)
    return result


def cosine_scores_reference(
    train: Any,
    queries: Any,
    *,
    block_rows: int | None = None,
    out: Any = None,
    train_ids: Any = None,
    query_ids: Any = None,
    progress: bool | None = None,
) -> np.ndarray | None:
    """Exact twin of :func:`cosine_scores`: one float64 block, ``normalize(A) @ normalize(B).T``.

    Parameters
    ----------
    train : array-like [shape=(N, d)]
        Training embeddings.
    queries : array-like [shape=(T, d)]
        Query embeddings.
    block_rows : int, optional
        Ignored (one block).
    out : object with ``write_rows(start, block)``, optional
        Receives the whole matrix as one block; otherwise it is returned.
    train_ids, query_ids : sequence of str, optional
        Names used in the error for a zero-norm embedding.
    progress : bool, optional
        Ignored.
    """
    _check(train, queries, block_rows)
    a = np.asarray(train, dtype=np.float64)
    b = np.asarray(queries, dtype=np.float64)
    for name, x, ids in (("queries", b, query_ids), ("train", a, train_ids)):
        norms = np.linalg.norm(x, axis=1)
        bad = ~np.isfinite(norms) | (norms == 0.0)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            who = f"track {str(ids[i])!r}" if ids is not None else f"row {i}"
            raise DataError(f"{name}: the embedding of {who} has norm zero or is not finite")
    s = (a / np.linalg.norm(a, axis=1, keepdims=True)) @ (
        b / np.linalg.norm(b, axis=1, keepdims=True)
    ).T
    s32 = s.astype(np.float32)
    if out is not None:
        out.write_rows(0, s32)
        return None
    return s32


def write_cosine_scores(
    train: str | os.PathLike[str],
    queries: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    block_rows: int | None = None,
    progress: bool | None = None,
    method: str | None = None,
    overwrite: bool = False,
) -> Path:
    """The cosine score matrix of two embedding stores, written as a track-level score file.

    Rows are the training store's tracks (their ids are the matrix's row ids), columns the
    query store's tracks in store order. Besides the matrix (``.npy`` or ``.zarr``,
    :mod:`aria_tda.scores.writers`, kind ``"track_scores"``) a queries table
    ``OUT.queries.csv`` (column ``query`` = column index, ``track_id``, the query store's
    metadata) is written for a study's ``queries = ...``.

    Parameters
    ----------
    train, queries : path
        Embedding stores of the training tracks and of the queries (same encoder).
    out : path
        ``.npy`` or ``.zarr``.
    block_rows : int, optional
        Training rows per streamed block (:func:`cosine_scores`).
    progress : bool, optional
        Progress bar.
    method : str, optional
        Method label in the manifest (default: the encoder's registry name).
    overwrite : bool
        Replace an existing ``out`` that ARIA did not write as cosine scores (a user's
        matrix, an S_track); an earlier cosine matrix is always replaced. ``out`` is never
        one of the two stores.

    Returns
    -------
    pathlib.Path
        ``out``.
    """
    import pandas as pd

    from aria_tda._io import atomic_path
    from aria_tda.embed.store import check_comparable, embedding_info, read_embeddings
    from aria_tda.scores.writers import ScoreWriter, check_output_path, check_output_space

    out_path = check_output_path("out", out, kind="track_scores", overwrite=overwrite,
                                 inputs={"train": train, "queries": queries},
                                 purpose=_is_cosine)
    t_info = embedding_info(train, name="train")
    q_info = embedding_info(queries, name="queries")
    check_comparable(t_info, q_info)
    # before the stores are read: room for the matrix (a zarr store is written row by row)
    check_output_space(out_path, (t_info["n_tracks"], q_info["n_tracks"]), np.float32,
                       row_ids=True)
    t_ids, a, _ = read_embeddings(train)
    q_ids, b, q_meta = read_embeddings(queries)
    label = method or t_info["label"]

    def store_record(info: dict[str, Any]) -> dict[str, Any]:
        return {k: info[k] for k in ("path", "n_tracks", "segment_seconds", "digest")}

    table = q_meta.reset_index(drop=True) if q_meta is not None else None
    frame = pd.DataFrame({"query": np.arange(len(q_ids)), "track_id": q_ids})
    if table is not None and len(table) == len(q_ids):
        extra = table.drop(columns=[c for c in table.columns if c in frame.columns])
        frame = pd.concat([frame, extra], axis=1)
    # the queries table is written first under a temporary name and renamed after the
    # matrix: a failure (a full disk) anywhere leaves neither
    with atomic_path(queries_table_path(out_path)) as tmp:
        frame.to_csv(tmp, index=False)
        with ScoreWriter(
            out_path,
            shape=(a.shape[0], b.shape[0]),
            dtype=np.float32,
            kind="track_scores",
            row_ids=t_ids,
            overwrite=overwrite,
            purpose=_is_cosine,
            method=label,
            stage="-",
            parameters={"score": "cosine", "encoder": t_info["encoder"]},
            seed=None,
            train_embeddings=store_record(t_info),
            query_embeddings=store_record(q_info),
            query_ids=q_ids.tolist(),
        ) as writer:
            cosine_scores(a, b, block_rows=block_rows, out=writer, train_ids=t_ids,
                          query_ids=q_ids, progress=progress)
    return out_path


def _is_cosine(manifest: dict[str, Any]) -> bool:
    """Whether a ``track_scores`` manifest is one of :func:`write_cosine_scores`."""
    return (manifest.get("parameters") or {}).get("score") == "cosine"


def queries_table_path(out: str | os.PathLike[str]) -> Path:
    """Where :func:`write_cosine_scores` puts the queries table of ``out``: ``OUT.queries.csv``.

    Parameters
    ----------
    out : path
        The score matrix.
    """
    p = Path(out)
    return p.with_name(p.name + ".queries.csv")


def retrieve(
    train: str | os.PathLike[str],
    queries: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    block_rows: int | None = None,
    progress: bool | None = None,
    overwrite: bool = False,
) -> Path:
    r"""Write the cosine score matrix ``S[i, j] = cos(e(train_i), e(query_j))`` (Eq. emb).

    ``aria-tda retrieve``: :func:`write_cosine_scores` with the encoder's registry name as the
    method label.

    Parameters
    ----------
    train : path
        Embedding store of the training tracks (``aria-tda embed``).
    queries : path
        Embedding store of the queries (same encoder, checkpoint and layer).
    out : path
        Output matrix, ``.npy`` or ``.zarr``.
    block_rows : int, optional
        Training rows per block (default: about 64 MB of scores per block).
    progress : bool, optional
        Progress bar.
    overwrite : bool
        Replace an existing ``out`` that ARIA did not write as cosine scores.

    Returns
    -------
    pathlib.Path
        ``out``.
    """
    return write_cosine_scores(train, queries, out, block_rows=block_rows, progress=progress,
                               overwrite=overwrite)
