"""``aria-tda features``: extract evidence-channel features into a feature store; jSymbolic mode.

::

    aria-tda features symbolic INPUT_DIR_OR_LIST --out STORE [--workers N | --scheduler
    ADDRESS|local:N]
                           [--form paper|jsymbolic]
                           [--segment-seconds S [--hop H] | --segment-notes N]
                           [--param KEY=VALUE ...]
    aria-tda features audio    INPUT_DIR_OR_LIST --out STORE [--workers N | --scheduler ...]
                           [--param KEY=VALUE ...]
    aria-tda features errors   STORE [--json]
    aria-tda features jsymbolic FILE.mid [--json] [--d4-divisor notes|changes]

Extraction is resumable (tracks already in STORE are skipped), parallel over local processes
(``--workers``) or a Dask cluster (``--scheduler``, one task per file; the two are exclusive), and a
corrupt, silent or empty file — or one a worker process died on — is recorded in the store's
errors table and skipped; ``aria-tda features errors STORE`` lists them. Each flag maps onto a
keyword of :func:`aria_tda.features.extract.extract_to_store` /
:func:`aria_tda.features.jsymbolic.jsymbolic_features`.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from aria_tda.cli.common import add_progress_flag, add_scheduler_flag, print_json
from aria_tda.errors import ParameterError, expected


def _param(text: str) -> tuple[str, Any]:
    if "=" not in text:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    key, value = text.split("=", 1)
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError:
        parsed = value
    return key.strip(), parsed


def _add_extract_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "input",
        metavar="INPUT_DIR_OR_LIST",
        help="folder (searched recursively), a .txt list of paths, or a .csv list with columns "
        "path[,track_id,metadata...]",
    )
    p.add_argument(
        "--out",
        required=True,
        metavar="STORE",
        help="feature-store directory (created, or resumed)",
    )
    p.add_argument(
        "--workers",
        type=int,
        default=1,
        metavar="N",
        help="local worker processes (default 1); not with --scheduler, whose cluster's "
        "workers do the work (both given: an error)",
    )
    add_scheduler_flag(p)
    p.add_argument(
        "--param",
        action="append",
        type=_param,
        default=[],
        metavar="KEY=VALUE",
        help="extractor keyword argument (JSON value), repeatable",
    )
    p.add_argument(
        "--metadata",
        metavar="TABLE",
        help="CSV/Parquet with a track_id column whose other columns (e.g. genre) join the "
        "store's metadata (names of ARIA's own metadata, e.g. duration, are refused)",
    )
    p.add_argument(
        "--flush-every",
        type=int,
        default=256,
        metavar="N",
        help="tracks per Parquet part (default 256; a part is also written once a minute, so "
        "a long run keeps its first results early)",
    )
    p.add_argument(
        "--overwrite", action="store_true", help="start a fresh store instead of resuming"
    )
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    add_progress_flag(p)


def register(subparsers: Any) -> None:
    """Add ``aria-tda features`` and its sub-commands.

    Parameters
    ----------
    subparsers : argparse._SubParsersAction
        The ``aria-tda`` parser's sub-command collection.
    """
    parser = subparsers.add_parser(
        "features",
        help="extract evidence-channel features into a feature store",
        description="Extract per-track evidence-channel features (paper §3.3) into a Parquet "
        "feature store, list the files an extraction failed on, or print jSymbolic-2.2 "
        "features of one MIDI file.",
    )
    sub = parser.add_subparsers(
        dest="features_command", metavar="{symbolic,audio,errors,jsymbolic}", required=True
    )

    sym = sub.add_parser(
        "symbolic",
        help="MIDI files -> the symbolic features",
        description="MIDI files -> the symbolic features (melody, harmony, rhythm, "
        "dynamic, texture): the paper's 12 and ARIA's 3 pattern features.",
    )
    _add_extract_args(sym)
    sym.add_argument(
        "--form",
        choices=("paper", "jsymbolic"),
        default=None,
        help="paper dimensions (default) or jSymbolic 2.2's forms",
    )
    sym.add_argument(
        "--fps",
        type=float,
        default=None,
        help="grid rate of vertical intervals / polyphony in the paper form (default 50)",
    )
    seg = sym.add_mutually_exclusive_group()
    seg.add_argument(
        "--segment-seconds",
        type=float,
        default=None,
        metavar="S",
        help="one row per S-second window instead of per file",
    )
    seg.add_argument(
        "--segment-notes",
        type=int,
        default=None,
        metavar="N",
        help="one row per block of N consecutive notes",
    )
    sym.add_argument(
        "--hop",
        type=float,
        default=None,
        help="window hop (seconds, or notes with --segment-notes); default: the window size",
    )
    sym.add_argument(
        "--boundary",
        choices=("clip", "onset"),
        default=None,
        help="how a note crossing a window boundary counts in grid features (default clip)",
    )
    sym.set_defaults(func=run)

    aud = sub.add_parser(
        "audio",
        help="audio files -> the 7 audio features",
        description="Audio files -> the audio features (rhythm, harmony, timbre) via "
        "aria_tda.features.audio.",
    )
    _add_extract_args(aud)
    aud.set_defaults(func=run)

    err = sub.add_parser(
        "errors",
        help="list the files an extraction failed on",
        description="List the failed files recorded in a feature store (path, track id, "
        "error) as a table.",
    )
    err.add_argument("store", metavar="STORE", help="a feature store (directory or .parquet)")
    err.add_argument("--json", action="store_true", help="print a JSON list of records")
    err.set_defaults(func=run)

    js = sub.add_parser(
        "jsymbolic",
        help="jSymbolic-2.2 features of one MIDI file",
        description="Print jSymbolic-2.2-compatible features of one MIDI file, keyed by 2.2 codes.",
    )
    js.add_argument("file", metavar="FILE.mid")
    js.add_argument(
        "--json", action="store_true", help="print one JSON object keyed by the 2.2 codes"
    )
    js.add_argument(
        "--d4-divisor",
        choices=("notes", "changes"),
        default="notes",
        help="D-4 divisor: 'notes' = jSymbolic 2.2's (default), 'changes' = the mean over changes",
    )
    js.set_defaults(func=run)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run ``aria-tda features``.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line.
    """
    if args.features_command == "jsymbolic":
        return _run_jsymbolic(args)
    if args.features_command == "errors":
        return _run_errors(args)
    from aria_tda.features.extract import extract_to_store

    params, segments = _checked_options(args)
    if args.features_command == "audio":
        # its packages are checked before any file is read (one line, not per file)
        import importlib

        try:  # the module extract_to_store will run
            audio = importlib.import_module("aria_tda.features.audio")
        except ImportError:  # no audio extractor here at all: extract_to_store says so
            audio = None
        check = getattr(audio, "check_dependencies", None)
        if check is not None:
            check(params)
    with open_cluster(args) as client:
        summary = extract_to_store(
            args.input,
            args.out,
            modality=args.features_command,
            params=params,
            segments=segments,
            workers=args.workers,
            flush_every=args.flush_every,
            overwrite=args.overwrite,
            metadata=args.metadata,
            progress=args.progress,
            client=client,
        )
    if args.json:
        print_json(summary)
    else:
        print(
            f"{summary['n_extracted']} {args.features_command} rows written, "
            f"{summary['n_skipped']} files already in the store, {summary['n_errors']} files "
            f"failed (aria-tda features errors STORE lists them) -> {summary['store']}"
        )
    return 0


def _checked_options(args: argparse.Namespace) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The extractor's parameters and the segmentation, every flag checked by its name before
    anything is written (a rejected value never reaches a store's manifest)."""
    from aria_tda._checks import check_float, check_int

    check_int("--workers", args.workers, min_value=1)
    check_int("--flush-every", args.flush_every, min_value=1)
    params = dict(args.param)
    if args.features_command != "symbolic":
        return params, None
    if args.fps is not None:
        check_float("--fps", args.fps, min_value=0.0, min_inclusive=False)
    for key in ("form", "fps", "boundary"):
        value = getattr(args, key)
        if value is not None:
            params[key] = value
    if args.segment_seconds is not None:
        check_float("--segment-seconds", args.segment_seconds, min_value=0.0,
                    min_inclusive=False)
        if args.hop is not None:
            check_float("--hop", args.hop, min_value=0.0, min_inclusive=False)
        return params, {"seconds": args.segment_seconds, "hop": args.hop}
    if args.segment_notes is not None:
        check_int("--segment-notes", args.segment_notes, min_value=1)
        if args.hop is None:
            return params, {"n_notes": args.segment_notes, "hop": None}
        check_float("--hop", args.hop, min_value=0.0, min_inclusive=False)
        if int(args.hop) != args.hop:
            raise ParameterError(
                expected("--hop", "a whole number of notes with --segment-notes", args.hop)
            )
        return params, {"n_notes": args.segment_notes, "hop": int(args.hop)}
    if args.hop is not None:
        raise ParameterError(
            expected("--hop", "--segment-seconds or --segment-notes", "--hop alone")
        )
    return params, None


def open_cluster(args: argparse.Namespace) -> Any:
    """The Dask client of ``--scheduler`` (a context manager; ``None`` without the flag).

    ``--workers`` above 1 together with ``--scheduler`` is refused: the cluster's workers do
    the work, so a local worker count would be silently ignored.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line (``scheduler``, ``workers``).
    """
    from aria_tda._checks import check_int
    from aria_tda._dask import check_scheduler, open_client

    scheduler = check_scheduler(args.scheduler, name="--scheduler")
    workers = check_int("--workers", args.workers, min_value=1)
    from aria_tda._optional import require_scheduler

    require_scheduler(scheduler)  # the scale extra, one line before any work
    if scheduler is not None and workers > 1:
        raise ParameterError(
            expected("--workers", "1 (or no --workers) with --scheduler, whose cluster's "
                     "workers do the work", workers)
        )
    return open_client(scheduler)


def _run_errors(args: argparse.Namespace) -> int:
    from aria_tda.features.store import FeatureStore

    errors = FeatureStore.open(args.store).errors
    records = [
        {"path": str(r.path), "track_id": str(r.track_id), "error": str(r.error)}
        for r in errors.itertuples(index=False)
    ]
    if args.json:
        print_json(records)
        return 0
    if not records:
        print(f"no failed files recorded in {args.store}")
        return 0
    width = min(max(len("path"), *(len(r["path"]) for r in records)), 80)
    sys.stdout.write(f"{'path':<{width}}  error\n")
    for r in records:
        sys.stdout.write(f"{r['path']:<{width}}  {r['error']}\n")
    sys.stdout.write(f"{len(records)} failed file(s)\n")
    return 0


def _run_jsymbolic(args: argparse.Namespace) -> int:
    from aria_tda._checks import check_existing_path
    from aria_tda.features.jsymbolic import NAMES, jsymbolic_features

    path = check_existing_path("FILE", args.file, kind="file")
    values = jsymbolic_features(path, d4_divisor=args.d4_divisor)
    if args.json:
        print_json(values)
        return 0
    for code, value in values.items():
        if isinstance(value, list):
            shown = "[" + ", ".join(f"{v:.4g}" for v in value) + "]"
        else:
            shown = f"{value:.6g}"
        sys.stdout.write(f"{code:<5} {NAMES[code]:<46} {shown}\n")
    return 0
