"""``aria-tda embed``: time-averaged encoder embeddings of an audio corpus, into an embedding store.

::

    aria-tda embed INPUT_DIR_OR_LIST --encoder NAME [--weights PATH] [--layer L]
               [--segment-seconds S] [--workers N | --scheduler ADDRESS|local:N]
               [--device D] --out STORE

Each flag is a keyword of :func:`aria_tda.embed.embed_to_store`. Resumable (tracks already in
STORE are skipped), parallel over local processes or a Dask cluster (``--scheduler``; not
together with ``--workers`` > 1), and unreadable audio is recorded in the store's
errors table (``aria-tda features errors STORE`` lists it). ``aria-tda retrieve`` turns two stores
into a cosine score matrix.
"""

from __future__ import annotations

import argparse
from typing import Any

from aria_tda.cli.common import add_progress_flag, add_scheduler_flag, print_json
from aria_tda.errors import ParameterError, expected


def register(subparsers: Any) -> None:
    """Add ``aria-tda embed``.

    Parameters
    ----------
    subparsers : argparse._SubParsersAction
        The ``aria-tda`` parser's sub-command collection.
    """
    from aria_tda.embed.encoders.registry import ENCODERS

    names = ", ".join(f"{n} ({s.label}, {s.sample_rate // 1000} kHz)" for n, s in ENCODERS.items())
    p = subparsers.add_parser(
        "embed",
        help="encoder embeddings of audio files -> an embedding store (retrieval baselines)",
        description="Embed every audio file with an audio encoder (paper §4.3, the "
        "embedding-retrieval baselines): read, mix to mono, resample to the encoder's rate, "
        "window as the encoder expects and average over time (optionally per segment). "
        "Checkpoints are local files; ARIA never downloads weights. Encoders: " + names + ".",
        epilog="Then: aria-tda retrieve TRAIN_STORE QUERY_STORE --out scores.npy",
    )
    p.add_argument(
        "input",
        metavar="INPUT_DIR_OR_LIST",
        help="audio folder (searched recursively), a .txt list of paths, or a .csv list with "
        "columns path[,track_id,metadata...]",
    )
    p.add_argument("--encoder", required=True, metavar="NAME",
                   help="registry name: " + ", ".join(ENCODERS))
    p.add_argument("--weights", metavar="PATH",
                   help="the encoder's local checkpoint file or folder (required; without it the "
                   "error says which file to obtain)")
    p.add_argument("--layer", type=int, default=None, metavar="L",
                   help="hidden layer whose output is pooled (encoders with layers; default: "
                   "the encoder's)")
    p.add_argument("--segment-seconds", type=float, default=None, metavar="S",
                   help="one row per S-second segment (ids TRACK#0000, ...) instead of per track")
    p.add_argument("--workers", type=int, default=1, metavar="N",
                   help="local worker processes, each loading the encoder once (default 1); "
                   "not with --scheduler, whose cluster's workers do the work (both: an error)")
    add_scheduler_flag(p)
    p.add_argument("--device", default="cpu", metavar="D",
                   help="torch device of the encoder (default cpu)")
    p.add_argument("--metadata", metavar="TABLE",
                   help="CSV/Parquet with a track_id column whose other columns join the store")
    p.add_argument("--out", required=True, metavar="STORE",
                   help="embedding-store directory (created, or resumed)")
    p.add_argument("--overwrite", action="store_true",
                   help="start a fresh store instead of resuming")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    add_progress_flag(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run ``aria-tda embed``.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line.
    """
    from aria_tda._checks import check_float, check_int
    from aria_tda._optional import require_all
    from aria_tda.cli.features import open_cluster
    from aria_tda.embed.pipeline import embed_to_store

    # every flag checked by its name before anything is written (never recorded in a store)
    check_int("--workers", args.workers, min_value=1)
    if args.layer is not None:
        check_int("--layer", args.layer, min_value=0)
    if args.segment_seconds is not None:
        check_float("--segment-seconds", args.segment_seconds, min_value=0.0,
                    min_inclusive=False)
    if not args.device.strip():
        raise ParameterError(expected("--device", "a torch device name (cpu, cuda, ...)",
                                      args.device))

    # checked before any work: every encoder runs on torch and reads audio with soundfile;
    # MERT is a transformers model
    needs = ["torch", "soundfile"] + (["transformers"] if args.encoder == "mert" else [])
    require_all(needs, "embed", purpose=f"aria-tda embed --encoder {args.encoder}")
    with open_cluster(args) as client:
        summary = embed_to_store(
            args.input,
            args.out,
            encoder=args.encoder,
            weights=args.weights,
            layer=args.layer,
            segment_seconds=args.segment_seconds,
            workers=args.workers,
            overwrite=args.overwrite,
            metadata=args.metadata,
            progress=args.progress,
            device=args.device,
            client=client,
        )
    if args.json:
        print_json(summary)
    else:
        enc = summary["encoder"]
        print(
            f"{summary['n_extracted']} {enc['encoder']} embeddings ({enc['dim']}-d) written, "
            f"{summary['n_skipped']} files already in the store, {summary['n_errors']} files "
            f"failed (aria-tda features errors STORE lists them) -> {summary['store']}"
        )
    return 0
