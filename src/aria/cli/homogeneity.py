"""``aria homogeneity`` — within-group homogeneity (K-sweep, residual) of one score matrix."""

from __future__ import annotations

import argparse

from aria.cli._common import add_progress_flag
from aria.study_config import DEFAULT_K, NORMALIZE


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "homogeneity",
        help="homogeneity of the top-K attributed tracks of one score matrix, per channel",
        description=(
            "Analyse one setting: reliability diagnostics, S_track, top-K groups, z-scores against "
            "B random groups per K (K-sweep), the rank-1 residual and the alignment of u1. Writes a "
            "results folder like 'aria run' with a single setting."
        ),
    )
    p.add_argument("scores", metavar="SCORES", help="segment-level score matrix (npy | npz | pt | zarr)")
    p.add_argument("--features", required=True, metavar="STORE", help="feature store of the training tracks")
    p.add_argument("--segments", default=None, metavar="MAP", help="segment -> track map (CSV/Parquet); default identity")
    p.add_argument("--normalize", choices=NORMALIZE, default="zscore", help="per-query normalisation (default zscore)")
    p.add_argument("--key", default=None, help="array name inside an npz / torch dict / zarr group")
    p.add_argument("--method", default=None, help="method name shown in tables (default: file name)")
    p.add_argument("-K", "--K", dest="K", type=int, nargs="+", default=list(DEFAULT_K), help="group sizes")
    p.add_argument("--k-report", type=int, default=None, help="K of the report tables (default 300 or the largest K)")
    p.add_argument("-B", "--B", dest="B", type=int, default=200, help="random reference groups per K (default 200)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples for CIs (default 1000)")
    p.add_argument("--no-residual", dest="residual", action="store_false", help="skip the rank-1 residual")
    p.add_argument("--queries", default=None, help="per-query metadata (CSV/Parquet with a 'query' column)")
    p.add_argument("--confound", nargs="*", default=[], help="query metadata columns to stratify z by")
    p.add_argument("--no-report", dest="report", action="store_false", help="do not write report.html")
    p.add_argument("--out", required=True, help="results folder")
    add_progress_flag(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from aria.features.store import FeatureStore
    from aria.study import run_study
    from aria.study_config import parse_study

    store = FeatureStore.open(args.features)
    method = args.method or Path(args.scores).stem

    def q(v: object) -> str:
        return '"' + str(Path(v).absolute()).replace("\\", "\\\\").replace('"', '\\"') + '"'  # type: ignore[arg-type]

    lines = [
        f"modality = \"{store.modality}\"",
        f"feature_store = {q(args.features)}",
        f"output = {q(args.out)}",
        f"K = {list(args.K)}",
        f"B = {args.B}",
        f"seed = {args.seed}",
        f"n_bootstrap = {args.bootstrap}",
        f"residual = {'true' if args.residual else 'false'}",
        f"report = {'true' if args.report else 'false'}",
    ]
    if args.k_report is not None:
        lines.append(f"K_report = {args.k_report}")
    if args.queries:
        lines.append(f"queries = {q(args.queries)}")
    if args.confound:
        lines.append("confound = [" + ", ".join(f'"{c}"' for c in args.confound) + "]")
    lines += ["", "[[setting]]", f"method = \"{method}\"", f"scores = {q(args.scores)}",
              f"normalize = \"{args.normalize}\""]
    if args.segments:
        lines.append(f"segments = {q(args.segments)}")
    if args.key:
        lines.append(f"key = \"{args.key}\"")
    spec = parse_study("\n".join(lines) + "\n", source="aria homogeneity")
    run_study(spec, progress=args.progress)
    return 0
