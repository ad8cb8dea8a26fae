"""``aria demo`` — the symbolic ground-truth validation end to end (the project's main job)."""

from __future__ import annotations

import argparse

from aria.cli._common import add_progress_flag


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``demo`` sub-command.

    Parameters
    ----------
    sub : argparse._SubParsersAction
        The ``aria`` parser's sub-commands.
    """
    from aria.bench.demo import DEMO_METHODS

    p = sub.add_parser(
        "demo",
        help="end-to-end symbolic benchmark: corpus -> model -> queries -> attribution -> LDS "
             "-> ARIA -> report",
        description=(
            "Rebuild the paper's symbolic ground-truth validation (Table 1) from music21's Bach "
            "chorales: train a small MusicTransformer, generate queries, attribute them with TRAK, "
            "TracIn, GradCos, GradDot, LoGra and FactGraSS, compute LDS from retraining on random "
            "halves, run every ARIA analysis and write an HTML report. Default sizes take about "
            "15 minutes on 2 CPU cores, --quick about 3. Stages are resumable: rerunning reuses "
            "finished ones."
        ),
    )
    p.add_argument("--quick", action="store_true",
                   help="smaller sizes (about 3 minutes on 2 cores)")
    p.add_argument("--preset", choices=("default", "quick", "tiny"), default=None,
                   help="explicit size preset (overrides --quick; 'tiny' is for smoke tests)")
    p.add_argument("--out", default="aria-demo",
                   help="working folder (default ./aria-demo); results in OUT/results")
    p.add_argument("--seed", type=int, default=0,
                   help="seed of the split, models, queries, projections, nulls")
    p.add_argument("--threads", type=int, default=None,
                   help="worker processes / torch threads (default: cores, max 2)")
    p.add_argument("--methods", nargs="+", choices=DEMO_METHODS, default=list(DEMO_METHODS),
                   help="attribution methods (default: all six)")
    p.add_argument("--trak-proj-dim", type=int, default=512,
                   help="TRAK projection dimension (default 512)")
    p.add_argument("--trak-lam", type=float, default=0.01,
                   help="TRAK regularisation lambda (default 0.01)")
    p.add_argument("--collections", nargs="+", default=None, metavar="NAME",
                   help="music21 corpus folders to draw works from (default: bach). Bach "
                        "chorales carry no dynamics markings, so the dynamic channel is "
                        "undefined on them; e.g. add haydn, beethoven or schubert for works "
                        "whose dynamics music21 turns into velocities")
    p.add_argument("-B", "--B", dest="B", type=int, default=200,
                   help="random reference groups per K (default 200)")
    p.add_argument("--no-report", dest="report", action="store_false",
                   help="do not write report.html")
    p.add_argument("--quiet", action="store_true", help="no log lines")
    add_progress_flag(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run ``aria demo``.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed flags.
    """
    from aria.bench.demo import run_demo

    run_demo(args.out, quick=args.quick, preset=args.preset, seed=args.seed, methods=args.methods,
             threads=args.threads, report=args.report, progress=args.progress, quiet=args.quiet,
             trak_proj_dim=args.trak_proj_dim, trak_lam=args.trak_lam, B=args.B,
             collections=None if args.collections is None else tuple(args.collections))
    return 0
