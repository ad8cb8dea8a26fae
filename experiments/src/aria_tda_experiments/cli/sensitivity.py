"""``aria-tda sensitivity``: TRAK over projection dimension × λ, scored by z̄ per channel."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from aria_tda.cli.common import add_progress_flag, print_json


def register(subparsers: Any) -> None:
    """Add the ``sensitivity`` sub-command.

    Parameters
    ----------
    subparsers : argparse._SubParsersAction
        The ``aria-tda`` parser's sub-commands.
    """
    p = subparsers.add_parser(
        "sensitivity",
        help="TRAK sensitivity grid over projection dim x lambda (z-bar per channel)",
        description=(
            "Compute TRAK over a grid of projection dimensions and regularisations lambda for an "
            "ensemble of benchmark models, measure ARIA's within-group homogeneity z-bar per "
            "evidence channel at K for every cell, and write the 'sensitivity' table of a results "
            "folder (paper appendix 'TRAK Hyperparameter Sensitivity'). Each ensemble member's "
            "gradients are computed once for the whole grid."
        ),
    )
    p.add_argument(
        "--ensemble",
        nargs="+",
        required=True,
        metavar="MODEL_DIR",
        help="benchmark model directories (aria_tda_experiments.train), or one folder holding them",
    )
    p.add_argument(
        "--train",
        required=True,
        metavar="WINDOWS",
        help="training windows: an (N, L) integer .npy, or a benchmark corpus directory",
    )
    p.add_argument(
        "--queries",
        required=True,
        metavar="WINDOWS",
        help="query windows: a (T, L) integer .npy, or a benchmark queries directory",
    )
    p.add_argument(
        "--features",
        required=True,
        metavar="STORE",
        help="feature store whose rows are the training windows, in order",
    )
    p.add_argument(
        "--out", required=True, metavar="DIR", help="results folder to write sensitivity.csv into"
    )
    p.add_argument(
        "--proj-dims",
        nargs="+",
        type=int,
        default=None,
        metavar="K",
        help="projection dimensions (default 128 256 512)",
    )
    p.add_argument(
        "--lams",
        nargs="+",
        type=float,
        default=None,
        metavar="LAMBDA",
        help="regularisations (default 0 0.01 0.1 1)",
    )
    p.add_argument(
        "--k",
        nargs="+",
        type=int,
        default=[300],
        dest="ks",
        metavar="K",
        help="group sizes for z-bar (default 300)",
    )
    p.add_argument(
        "--B", type=int, default=200, help="random groups per K for the null (default 200)"
    )
    p.add_argument(
        "--loss",
        default="sequence",
        choices=("sequence", "last_token"),
        help="per-sample loss of training windows (default sequence)",
    )
    p.add_argument(
        "--target",
        default="last_token",
        choices=("sequence", "last_token"),
        help="per-sample loss of queries (default last_token)",
    )
    p.add_argument(
        "--batch-size", type=int, default=32, help="windows per gradient batch (default 32)"
    )
    p.add_argument("--seed", type=int, default=0, help="projection and null seed (default 0)")
    p.add_argument(
        "--threads",
        type=int,
        default=1,
        dest="num_threads",
        help="torch threads (default 1; 2 is faster on an otherwise idle 2-core machine)",
    )
    p.add_argument(
        "--save-scores",
        action="store_true",
        help="also write every cell's score matrix to OUT/sweep/",
    )
    add_progress_flag(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run ``aria-tda sensitivity``.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed flags.
    """
    from aria_tda_experiments.sensitivity import DEFAULT_LAMS, DEFAULT_PROJ_DIMS, run_sensitivity

    out = run_sensitivity(
        ensemble=args.ensemble,
        train=args.train,
        queries=args.queries,
        features=args.features,
        out=args.out,
        proj_dims=args.proj_dims or DEFAULT_PROJ_DIMS,
        lams=args.lams or DEFAULT_LAMS,
        ks=args.ks,
        B=args.B,
        loss=args.loss,
        target=args.target,
        batch_size=args.batch_size,
        seed=args.seed,
        num_threads=args.num_threads,
        save_scores=args.save_scores,
        progress=args.progress,
    )
    print_json({"table": str(Path(args.out) / "sensitivity.csv"), **out})
    return 0
