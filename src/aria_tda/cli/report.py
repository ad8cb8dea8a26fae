"""``aria-tda report RESULTS_DIR`` — the HTML report (and LaTeX/CSV tables) of a results folder.

Without matplotlib (the ``report`` extra) the report degrades instead of refusing: it is written
with every table but without the K-sweep plots (SVG, and the PDFs of ``--latex``); the page says
so where the plots would be, and the command prints one ``aria-tda report: note: ...`` line on
stderr naming what to install; the exit status is 0.
"""

from __future__ import annotations

import argparse
import warnings
from typing import Any


def register(subparsers: Any) -> None:
    """Add the ``report`` sub-command.

    Parameters
    ----------
    subparsers : argparse._SubParsersAction
        The sub-parsers of ``aria-tda``.
    """
    p = subparsers.add_parser(
        "report",
        help="write a self-contained HTML report (and LaTeX/CSV tables) of a results folder",
        description=(
            "Turn a results folder (from 'aria-tda run' or 'aria-tda demo') into one "
            "self-contained HTML "
            "page: reliability verdicts, homogeneity tables, K-sweep plots, "
            "alignment/confound/LDS tables and per-query evidence. Opens offline; makes no "
            "network requests."
        ),
    )
    p.add_argument("results_dir", metavar="RESULTS_DIR", help="results folder (holds results.json)")
    p.add_argument(
        "--out", default=None, help="HTML file to write (default: RESULTS_DIR/report.html)"
    )
    p.add_argument(
        "--latex",
        action="store_true",
        help="also write every table as LaTeX (booktabs, the paper's layouts) and CSV, "
        "and the K-sweep plots as PDF",
    )
    p.add_argument(
        "--tables-dir",
        default=None,
        help="folder of the --latex exports (default: next to the HTML, '<name>-tables')",
    )
    p.add_argument(
        "--k",
        type=int,
        default=None,
        help="group size K of the tables and per-query evidence (default: the study's "
        "K_report, else 300, else the largest K)",
    )
    p.add_argument(
        "--top-n", type=int, default=25, help="attributed tracks embedded per query (default: 25)"
    )
    p.add_argument(
        "--pairs",
        dest="pairs_per_channel",
        type=int,
        default=5,
        help="contributing track pairs embedded per query and channel (default: 5)",
    )
    p.add_argument(
        "--no-plots", dest="plots", action="store_false", help="leave out the K-sweep plots"
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run ``aria-tda report``.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line.
    """
    from aria_tda.errors import AriaWarning
    from aria_tda.report import write_report

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AriaWarning)  # missing pieces are printed below
        out = write_report(
            args.results_dir,
            out=args.out,
            latex=args.latex,
            k=args.k,
            top_n=args.top_n,
            pairs_per_channel=args.pairs_per_channel,
            tables_dir=args.tables_dir,
            plots=args.plots,
        )
    print(f"wrote {out.html}" + (f" (tables at K = {out.k})" if out.k is not None else ""))
    _note_missing_plots("aria-tda report", args.plots)
    if out.exports is not None:
        print(f"wrote LaTeX and CSV tables to {out.exports}")
    if out.missing:
        print("missing from the results folder (the report says so):")
        for m in out.missing:
            print(f"  - {m}")
    return 0


def _note_missing_plots(command: str, plots: bool = True, *, html: Any = None,
                        since: float = 0.0) -> None:
    """One stderr line when the K-sweep plots were left out because matplotlib is missing.

    With ``html`` and ``since`` (a ``time.time()``), only when that report was written since then.
    """
    import sys
    from pathlib import Path

    from aria_tda._optional import missing_message

    if not plots:
        return
    if html is not None and not (Path(html).is_file() and Path(html).stat().st_mtime >= since):
        return
    note = missing_message(("matplotlib",), "report", purpose="the K-sweep plots")
    if note is not None:
        print(f"{command}: note: {note}; the report leaves them out", file=sys.stderr, flush=True)
