"""``aria-tda run STUDY.toml`` — every analysis of a study, written as a results folder + report.

Every input is checked before hours of work (:func:`aria_tda.study.inputs.check_inputs`): a
setting whose score matrix looks transposed is refused naming its ``transpose`` key.
"""

from __future__ import annotations

import argparse
from typing import Any

from aria_tda.cli.common import (
    add_progress_flag,
    add_scheduler_flag,
    add_summary_flags,
    run_and_summarise,
)


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``run`` sub-command.

    Parameters
    ----------
    sub : argparse._SubParsersAction
        The sub-parsers of ``aria-tda``.
    """
    p = sub.add_parser(
        "run",
        help=(
            "run a study: diagnostics, homogeneity (K-sweep, residual), alignment, confounds, "
            "report"
        ),
        description=(
            "Run every analysis of a study file for every setting it names and write a results "
            "folder (results.json + CSV/Parquet tables) and report.html, then print a summary "
            "(per setting: verdict, leading channels, distinctive aspect, K). Finished settings "
            "are cached and reused when the content of their inputs and their parameters are "
            "unchanged; one run writes a results folder at a time, inputs are never written "
            "over, and a killed run is resumed by the next. The study file format is in the "
            "user guide (docs/guide/study.md). With --scheduler (or the study's "
            "'scheduler' key) the settings run in parallel on a Dask cluster, each null "
            "computed once; the results are those of the single-machine run."
        ),
    )
    p.add_argument("study", metavar="STUDY.toml", help="the study file")
    p.add_argument("--out", dest="output", default=None,
                   help="results folder (default: the study's 'output')")
    p.add_argument("--no-report", dest="report", action="store_false", default=None,
                   help="do not write report.html")
    p.add_argument("--no-media", dest="media", action="store_false", default=None,
                   help="write the report without its listening room (no audio clips or "
                   "notation rendered; the study's 'media' key)")
    p.add_argument("--quiet", action="store_true", help="no log lines")
    add_summary_flags(p)
    add_progress_flag(p)
    add_scheduler_flag(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run ``aria-tda run``.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line.
    """
    from aria_tda._memory import STUDY_LIBRARIES_BYTES, load_libraries

    # under a memory limit (ulimit -v): one line when Arrow, SciPy or numba cannot load
    load_libraries(("aria_tda.study", "aria_tda.homogeneity", "pyarrow.parquet"),
                   what="Arrow, pandas, SciPy and numba (a study's libraries)",
                   need=STUDY_LIBRARIES_BYTES)
    from aria_tda._dask import check_scheduler
    from aria_tda.study import run_study

    scheduler = args.scheduler
    if scheduler is not None:  # named as the flag in the error; "" forces no cluster
        scheduler = check_scheduler(scheduler, name="--scheduler") or ""
    from aria_tda._optional import require_scheduler

    require_scheduler(scheduler)  # the scale extra, checked before any work
    import time

    from aria_tda.cli.report import note_missing_plots

    started = time.time()

    def work() -> Any:
        out = run_study(args.study, output=args.output, report=args.report, media=args.media,
                        progress=args.progress, quiet=args.quiet, command="aria-tda run",
                        scheduler=scheduler)
        if not args.quiet:  # a report without matplotlib has no K-sweep plots: say so once
            note_missing_plots("aria-tda run", html=out / "report.html", since=started - 1)
        return out

    return run_and_summarise(args, work)
