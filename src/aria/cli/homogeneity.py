"""``aria homogeneity`` — within-group homogeneity (K-sweep, residual) of one score matrix."""

from __future__ import annotations

import argparse

from aria.cli._common import add_progress_flag
from aria.study_config import DEFAULT_K, NORMALIZE


def register(sub: argparse._SubParsersAction) -> None:
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
    from aria.study_config import SettingSpec, StudySpec, validate_study

    store = FeatureStore.open(args.features)
    method = args.method or Path(args.scores).stem
    ks = tuple(sorted(set(args.K)))
    spec = StudySpec(
        path=None,
        name=f"aria homogeneity {method}",
        modality=store.modality,
        feature_store=Path(args.features),
        output=Path(args.out),
        settings=(SettingSpec(name=method, method=method, stage="-", scores=Path(args.scores),
                              segments=None if args.segments is None else Path(args.segments),
                              normalize=args.normalize, key=args.key),),
        K=ks,
        K_report=args.k_report if args.k_report is not None else (300 if 300 in ks else ks[-1]),
        B=args.B,
        seed=args.seed,
        n_bootstrap=args.bootstrap,
        residual=args.residual,
        queries=None if args.queries is None else Path(args.queries),
        confound=tuple(args.confound),
        report=args.report,
    )
    run_study(validate_study(spec, source="aria homogeneity"), progress=args.progress)
    return 0
