"""``aria-tda retrieve``: the cosine score matrix of two embedding stores, ready for ``aria-tda
run``.

::

    aria-tda retrieve TRAIN_EMB QUERY_EMB --out SCORES.npy|.zarr [--block-rows N] [--overwrite]

The matrix is training tracks × queries (float32), streamed in row blocks, with the training
track ids as row ids and a manifest naming both stores and their encoder;
``SCORES.queries.csv`` lists the queries. A keyword-for-flag wrapper of
:func:`aria_tda.embed.retrieval.retrieve`.
"""

from __future__ import annotations

import argparse
from typing import Any

from aria_tda.cli.common import add_progress_flag


def register(subparsers: Any) -> None:
    """Add ``aria-tda retrieve``.

    Parameters
    ----------
    subparsers : argparse._SubParsersAction
        The ``aria-tda`` parser's sub-command collection.
    """
    p = subparsers.add_parser(
        "retrieve",
        help="cosine score matrix of two embedding stores (embedding-retrieval baseline)",
        description="Score every training track for every query by the cosine similarity of "
        "their embeddings (paper Eq. emb), from two stores written by 'aria-tda embed' with the "
        "same encoder. Writes a track-level score matrix (training tracks x queries) with "
        "row ids and a manifest, ready for a study's [[setting]] (no segment map needed; "
        "normalize = \"none\" as in the paper), and SCORES.queries.csv.",
    )
    p.add_argument("train", metavar="TRAIN_EMB", help="embedding store of the training tracks")
    p.add_argument("queries", metavar="QUERY_EMB", help="embedding store of the queries")
    p.add_argument("--out", required=True, metavar="SCORES",
                   help="output matrix, .npy or .zarr")
    p.add_argument("--overwrite", action="store_true",
                   help="replace an existing --out that ARIA did not write as cosine scores "
                   "(by default such a file is refused)")
    p.add_argument("--block-rows", type=int, default=None, metavar="N",
                   help="training rows per streamed block (default: ~64 MB of scores)")
    add_progress_flag(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run ``aria-tda retrieve``.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line.
    """
    from aria_tda.embed.retrieval import retrieve
    from aria_tda.scores import open_scores

    out = retrieve(args.train, args.queries, args.out, block_rows=args.block_rows,
                   progress=args.progress, overwrite=args.overwrite)
    n, t = open_scores(out).shape
    print(f"cosine scores of {n} training tracks x {t} queries -> {out}")
    return 0
