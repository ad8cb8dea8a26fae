"""``aria-tda report RESULTS_DIR`` — the HTML report (and LaTeX/CSV tables) of a results folder.

Without matplotlib (the ``report`` extra) the report degrades instead of refusing: it is written
with every table but without the K-sweep plots (SVG, and the PDFs of ``--latex``); the page says
so where the plots would be, and the command prints one ``aria-tda report: note: ...`` line on
stderr naming what to install; the exit status is 0.

While the listening room's clips and pictures are built, one progress line per query goes to
stderr (``media: query 3/20 (2), 4 clips, 4.1 s``, then the files, MB and seconds), with a bar
on a terminal (``--no-progress`` or ``ARIA_PROGRESS=0`` turn the bar off); ``--quiet`` silences
both.

Nothing is written over that ARIA did not write for the same purpose: ``--out``, the media
folder beside it and ``--tables-dir`` are checked before any work
(:func:`aria_tda.report.write_report`), and a refusal is one line naming the path and the flag.
"""

from __future__ import annotations

import argparse
import warnings
from typing import Any

from aria_tda.cli.common import add_progress_flag


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
        "--out", default=None,
        help="HTML file to write (default: RESULTS_DIR/report.html); an existing file is "
        "replaced only when it is a report page ARIA wrote",
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
        help="folder of the --latex exports (default: next to the HTML, '<name>-tables'): "
        "new, empty or one ARIA wrote, of which only ARIA's own files are replaced",
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
    p.add_argument(
        "--no-media", dest="media", action="store_false",
        help="leave out the listening room (clips and pictures in report_media/)",
    )
    p.add_argument(
        "--media-queries", type=int, default=20, metavar="N",
        help="keep clips and pictures for N queries (default: 20) ...",
    )
    p.add_argument(
        "--media-pick", default="reading", metavar="RULE",
        help="... chosen by RULE: 'reading' (default: the strongest and the weakest by the "
        "distinctive reading, half each), 'first' (the first N of the per-query view), or a "
        "comma-separated list of query ids (e.g. gen03,gen17)",
    )
    p.add_argument(
        "--media-top", type=int, default=3, metavar="N",
        help="... and their N best items in every setting (default: 3)",
    )
    p.add_argument(
        "--media-max-items", type=int, default=120, metavar="N",
        help="at most N training clips in all, the first settings' first; with a segment "
        "map each query's segment of a track counts as one (default: 120)",
    )
    p.add_argument(
        "--quiet", action="store_true",
        help="no progress lines (or bar) on stderr while the clips and pictures are built",
    )
    add_progress_flag(p)
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
            media=args.media,
            media_queries=args.media_queries,
            media_pick=(args.media_pick if args.media_pick in ("reading", "first")
                        else [q.strip() for q in args.media_pick.split(",") if q.strip()]),
            media_top=args.media_top,
            media_max_items=args.media_max_items,
            quiet=args.quiet,
            progress=args.progress,
        )
    print(f"wrote {out.html}" + (f" (tables at K = {out.k})" if out.k is not None else ""))
    note_missing_plots("aria-tda report", args.plots)
    if out.media is not None and out.media.folder is not None:
        m = out.media
        print(f"wrote {m.files} media files ({m.bytes / 1e6:.1f} MB) for {m.queries} queries to "
              f"{m.folder} in {m.seconds:.1f} s" + (f"; {m.missing} not playable (named in the "
                                                    "report)" if m.missing else ""))
    if out.exports is not None:
        print(f"wrote LaTeX and CSV tables to {out.exports}")
    if out.missing:
        print("missing from the results folder (the report says so):")
        for what in out.missing:
            print(f"  - {what}")
    return 0


def note_missing_plots(command: str, plots: bool = True, *, html: Any = None,
                        since: float = 0.0) -> None:
    """One stderr line when the K-sweep plots were left out because matplotlib is missing.

    With ``html`` and ``since`` (a ``time.time()``), only when that report was written since then.

    Parameters
    ----------
    command : str
        The command the line names (``aria-tda run``).
    plots : bool
        Whether plots were asked for (no line otherwise).
    html : path-like, optional
        The report written.
    since : float
        ``time.time()`` when the command started.
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
