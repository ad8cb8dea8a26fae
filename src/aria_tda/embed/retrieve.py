"""``aria-tda retrieve``: the cosine score matrix of a training and a query embedding store.

A thin layer over :func:`aria_tda.features.embeddings.write_cosine_scores` (shared with studies
that name embedding stores directly): the matrix is training tracks × queries (ARIA's
orientation), float32, written in row blocks by the streaming kernel
:func:`aria_tda.scores.retrieval.cosine_scores` — never held whole in memory — to ``.npy`` or
``.zarr`` with row ids (the training track ids, so ``aria-tda run`` maps rows to the feature store
without a segment map) and a manifest naming both stores, their encoder and the query ids;
``OUT.queries.csv`` lists the queries (``query`` column index, ``track_id``, metadata).
Stores from different encoders (or checkpoints, layers, dimensions) are refused.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["retrieve"]


def retrieve(
    train: str | os.PathLike[str],
    queries: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    block_rows: int | None = None,
    progress: bool | None = None,
) -> Path:
    r"""Write the cosine score matrix ``S[i, j] = cos(e(train_i), e(query_j))`` (Eq. emb).

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

    Returns
    -------
    pathlib.Path
        ``out``.
    """
    from aria_tda.features.embeddings import write_cosine_scores

    return write_cosine_scores(train, queries, out, block_rows=block_rows, progress=progress)
