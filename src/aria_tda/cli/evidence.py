"""``aria-tda evidence RESULTS_DIR --query Q --out FILE.html [--pdf]``: one query's dossier.

One self-contained HTML file (clips and pictures embedded) with the setting's verdict first,
players for the query and its top-N attributed training items, A/B listening, piano rolls or
spectrograms, and per-channel evidence in words (:func:`aria_tda.media.dossier.write_dossier`).
Progress lines and timings go to stderr; the path written goes to stdout. ``--out`` replaces
only an earlier dossier of ARIA: any other file, a folder, a link, the results folder's own files
and anything in its ``.cache`` are refused before any work, in one line naming the path.
"""

from __future__ import annotations

import argparse
from typing import Any


def register(subparsers: Any) -> None:
    """Add the ``evidence`` sub-command.

    Parameters
    ----------
    subparsers : argparse._SubParsersAction
        The sub-parsers of ``aria-tda``.
    """
    p = subparsers.add_parser(
        "evidence",
        help="write the evidence dossier of one query: players, pictures and per-channel "
        "evidence in one self-contained HTML file",
        description=(
            "Write one self-contained HTML file for one query of a results folder: the "
            "setting's verdict first (what it says and does not say), the query and its top-N "
            "attributed training items, each with its musical reasons (how like the query it "
            "is per channel against the pool, key, meter, tempo and instruments, the material "
            "they share with its bar and beat in both), players (loudness-matched, A/B in one "
            "click), an aligned view and notation, each channel's evidence in words, and the "
            "provenance of the scores with what validates the method. Media come from the "
            "study's queries file and feature store; a missing file is named on the page. "
            "Opens offline; makes no network requests."
        ),
    )
    p.add_argument("results_dir", metavar="RESULTS_DIR", help="results folder (holds results.json)")
    p.add_argument("--query", required=True, metavar="Q",
                   help="the query: its id (the tables' query value or query_id) or its "
                   "0-based index")
    p.add_argument("--out", required=True, metavar="FILE.html",
                   help="HTML file to write: a new path, or a dossier ARIA wrote earlier "
                   "(nothing else is written over)")
    p.add_argument("--setting", default=None, metavar="NAME",
                   help="the setting whose attribution is shown (default: the first)")
    p.add_argument("--top", type=int, default=5, metavar="N",
                   help="attributed training items shown (default: 5)")
    p.add_argument("--channel", default=None, metavar="C",
                   help="the channel whose evidence is shown first (default: the query's "
                   "highest z)")
    p.add_argument("--k", type=int, default=None,
                   help="group size of the z-scores and pairs (default: as the report)")
    p.add_argument("--context", type=float, default=1.0, metavar="SECONDS",
                   help="context played each side of an attributed window (default: 1)")
    p.add_argument("--max-seconds", type=float, default=20.0, metavar="SECONDS",
                   help="longest clip (default: 20)")
    p.add_argument("--bitrate", dest="bitrate_kbps", type=int, default=32, metavar="KBPS",
                   help="bit rate of the embedded clips, Ogg/Vorbis kb/s (default: 32)")
    p.add_argument("--soundfont", default=None, metavar="SF2",
                   help="General-MIDI soundfont for MIDI: a .sf2 file or a folder of them "
                        "(default: $ARIA_SOUNDFONT, then the installed one)")
    p.add_argument("--no-media", dest="media", action="store_false",
                   help="numbers and words only, no clips or pictures")
    p.add_argument("--pdf", nargs="?", const="", default=None, metavar="FILE.pdf",
                   help="also print the dossier to PDF with a headless Chromium (every item's "
                   "evidence for every channel, the pairs and the provenance; no players): "
                   "FILE.pdf, or beside the HTML with the same name when no file is given. "
                   "An existing file is replaced only when it is a dossier PDF ARIA printed")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run ``aria-tda evidence``.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line.
    """
    import sys
    import time
    from pathlib import Path

    from aria_tda.media.dossier import write_dossier
    from aria_tda.media.pdf import check_pdf_output, find_browser

    t0 = time.perf_counter()
    pdf = None
    if args.pdf is not None:  # refused before any work: a path ARIA may not write, no browser
        from aria_tda._outputs import results_keeps
        from aria_tda.results import RESULTS_FILE, read_results_meta

        meta = read_results_meta(args.results_dir) \
            if (Path(args.results_dir) / RESULTS_FILE).is_file() else None
        pdf = check_pdf_output(args.pdf or Path(args.out).with_suffix(".pdf"), html=args.out,
                               keeps=results_keeps(args.results_dir, meta))
        find_browser()

    def log(msg: str) -> None:
        print(f"[aria-tda evidence {time.perf_counter() - t0:6.1f} s] {msg}", file=sys.stderr,
              flush=True)

    out = write_dossier(
        args.results_dir, args.query, out=args.out, setting=args.setting, top=args.top,
        channel=args.channel, k=args.k, context=args.context, max_seconds=args.max_seconds,
        bitrate_kbps=args.bitrate_kbps, soundfont=args.soundfont, media=args.media, log=log,
    )
    print(f"wrote {out}")
    if pdf is not None:
        from aria_tda.media.pdf import print_pdf

        log(f"printing {out} to {pdf}")
        print(f"wrote {print_pdf(out, pdf)}")
    return 0
