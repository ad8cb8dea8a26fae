"""``aria-tda aggregate SCORES``: per-query normalisation and track aggregation (paper §3.1)."""

from __future__ import annotations

import argparse
from typing import Any

from aria_tda.cli.common import (
    add_progress_flag,
    add_score_reading_flags,
    add_transpose_flag,
    print_json,
)


def register(subparsers: Any) -> None:
    """Add the ``aggregate`` sub-command.

    Parameters
    ----------
    subparsers : argparse._SubParsersAction
        The ``aria-tda`` parser's sub-commands.
    """
    p = subparsers.add_parser(
        "aggregate",
        help="normalise each query's scores and average segments per track -> S_track",
        description=(
            "Normalise each query column of a segment-level score matrix (z-score, rank, or "
            "auto: rank when the median excess kurtosis of the columns exceeds the threshold), "
            "optionally after removing the rank-1 component, then average the segments of each "
            "track (Eq. track-agg). Writes S_track (n_tracks x n_queries) with its track ids "
            "and a manifest; nothing is written if anything fails."
        ),
    )
    p.add_argument("scores", metavar="SCORES", help="segment-level score matrix file or zarr store")
    p.add_argument(
        "--segments",
        default=None,
        metavar="MAP",
        help="segment -> track map: CSV/Parquet with a track_id column (optionally "
        "row or segment_id), or .npy/.txt of track ids in row order; "
        "omit for the identity (each row its own track)",
    )
    p.add_argument(
        "--normalize",
        choices=("zscore", "rank", "auto"),
        default="zscore",
        help="per-query normalisation (default zscore)",
    )
    p.add_argument(
        "--residual",
        action="store_true",
        help="use the rank-1 residual S - sigma1 u1 v1^T (paper section 4.4)",
    )
    p.add_argument("--out", required=True, metavar="PATH", help="output .npy or .zarr")
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="replace an existing --out that ARIA did not write as S_track (by default such a "
        "file is refused; an earlier S_track is always replaced)",
    )
    p.add_argument(
        "--tracks",
        default=None,
        metavar="FILE",
        help="known track ids in output order (a text file, one per line)",
    )
    add_score_reading_flags(p)
    add_transpose_flag(p)
    p.add_argument(
        "--kurtosis-threshold",
        type=float,
        default=None,
        metavar="TAU",
        help="threshold of the auto rule on the median excess kurtosis (default 10)",
    )
    p.add_argument(
        "--tmp-dir",
        default=None,
        metavar="DIR",
        help="where the rank path may put its temporary transpose (default: beside --out)",
    )
    p.add_argument("--json", action="store_true", help="print a JSON summary")
    add_progress_flag(p)
    p.set_defaults(func=run)


def _read_tracks(path: str) -> list[str]:
    from aria_tda._checks import check_existing_path

    p = check_existing_path("tracks", path, kind="file")
    return [line.strip() for line in p.read_text(encoding="utf-8").splitlines() if line.strip()]


def run(args: argparse.Namespace) -> int:
    """Run ``aria-tda aggregate``.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed flags.
    """
    from aria_tda.scores import aggregate
    from aria_tda.scores.normalization import KURTOSIS_THRESHOLD
    from aria_tda.scores.writers import check_not_input

    check_not_input("out", args.out, {"tracks": args.tracks})  # the others: in aggregate()
    result = aggregate(
        args.scores,
        segments=args.segments,
        normalize=args.normalize,
        residual=args.residual,
        out=args.out,
        chunk_rows=args.chunk_rows,
        tracks=None if args.tracks is None else _read_tracks(args.tracks),
        key=args.key,
        kurtosis_threshold=KURTOSIS_THRESHOLD
        if args.kurtosis_threshold is None
        else args.kurtosis_threshold,
        tmp_dir=args.tmp_dir,
        progress=args.progress,
        transpose=args.transpose,
        overwrite=args.overwrite,
    )

    params = (result.manifest or {}).get("parameters", {})
    summary = {
        "out": str(args.out),
        "n_tracks": result.shape[0],
        "n_queries": result.shape[1],
        "normalize": params.get("normalize"),
        "normalize_requested": params.get("normalize_requested"),
        "median_excess_kurtosis": params.get("median_excess_kurtosis"),
        "residual": params.get("residual"),
    }
    if args.json:
        print_json(summary)
    else:
        extra = ""
        if summary["normalize_requested"] == "auto":
            k = summary["median_excess_kurtosis"]
            extra = f" (auto: median excess kurtosis {'undefined' if k is None else f'{k:.3g}'})"
        print(
            f"wrote S_track {summary['n_tracks']} tracks x {summary['n_queries']} queries to "
            f"{args.out}; normalisation {summary['normalize']}{extra}"
            + ("; rank-1 residual" if args.residual else "")
        )
    return 0
