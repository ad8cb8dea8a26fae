"""``aria-tda homogeneity`` — within-group homogeneity (K-sweep, residual) of one score matrix.

The command builds a one-setting :class:`~aria_tda.study.config.StudySpec` and runs it. Its flags
are fields of the spec: their help and defaults come from the fields (a flag left out leaves
the field at its default, e.g. ``K``, ``K_report``, ``B``, ``n_bootstrap``).

A score matrix whose columns, not rows, match the segment map or the feature store's tracks is
refused before any work with "looks transposed" and what to do about ``--transpose``
(:func:`aria_tda.study.inputs.check_setting_rows`).

``--scheduler local:N`` (or a scheduler address) is checked here (a bad value is a one-line
error) and handed to the study runner (``run_study(scheduler=)``), which opens the client
(:func:`aria_tda._dask.open_client`) and runs the setting on the cluster.
"""

from __future__ import annotations

import argparse
from typing import Any

from aria_tda._options import option_help
from aria_tda.cli.common import (
    add_progress_flag,
    add_scheduler_flag,
    add_summary_flags,
    run_and_summarise,
)
from aria_tda.study.config import NORMALIZE, SettingSpec, StudySpec, field_default

#: flag destination -> (spec class, field) for the flags that set a spec field.
_FIELDS: dict[str, tuple[type[Any], str]] = {
    "segments": (SettingSpec, "segments"),
    "normalize": (SettingSpec, "normalize"),
    "key": (SettingSpec, "key"),
    "transpose": (SettingSpec, "transpose"),
    "K": (StudySpec, "K"),
    "K_report": (StudySpec, "K_report"),
    "B": (StudySpec, "B"),
    "seed": (StudySpec, "seed"),
    "n_bootstrap": (StudySpec, "n_bootstrap"),
    "residual": (StudySpec, "residual"),
    "queries": (StudySpec, "queries"),
    "confound": (StudySpec, "confound"),
    "query_features": (StudySpec, "query_features"),
    "alpha": (StudySpec, "alpha"),
    "K_aspects": (StudySpec, "K_aspects"),
    "feature_set": (StudySpec, "feature_set"),
    "report": (StudySpec, "report"),
    "media": (StudySpec, "media"),
}


def _b_value(text: str) -> int | str:
    """``-B``: an integer or ``auto`` (checked by the study spec)."""
    return "auto" if text == "auto" else int(text)


def _help(dest: str) -> str:
    cls, name = _FIELDS[dest]
    text = option_help(cls, name)
    default = field_default(cls, name)
    if default is True:
        return f"turns off (on by default): {text}"
    if default is None or isinstance(default, bool) or "(default" in text:
        return text
    if isinstance(default, tuple):
        default = " ".join(map(str, default)) or "none"
    return f"{text} (default: {default})"


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``homogeneity`` sub-command.

    Parameters
    ----------
    sub : argparse._SubParsersAction
        The sub-parsers of ``aria-tda``.
    """
    p = sub.add_parser(
        "homogeneity",
        help="homogeneity of the top-K attributed tracks of one score matrix, per channel",
        description=(
            "Analyse one setting: reliability diagnostics, S_track, top-K groups, z-scores "
            "against B random groups per K (K-sweep), the rank-1 residual, the alignment "
            "of u1, and the distinctive reading (which aspect explains each query's "
            "attribution beyond what the method shows for every query, or none). Writes a "
            "results folder like 'aria-tda run' with a single setting and prints its summary."
        ),
    )
    p.add_argument("scores", metavar="SCORES",
                   help="segment-level score matrix (npy, TRAK .mmap, npz, pt, Kronfluence "
                   ".safetensors, bergson scores.bin, zarr) or the folder a tool wrote it into")
    p.add_argument("--features", required=True, metavar="STORE",
                   help="feature store of the training tracks")
    p.add_argument("--segments", default=None, metavar="MAP", help=_help("segments"))
    p.add_argument("--normalize", choices=NORMALIZE, default=None, help=_help("normalize"))
    p.add_argument("--key", default=None, help=_help("key"))
    p.add_argument("--transpose", action="store_true", default=None, help=_help("transpose"))
    p.add_argument("--method", default=None,
                   help="method name shown in tables (default: the file's stem)")
    p.add_argument("-K", "--K", dest="K", type=int, nargs="+", default=None, help=_help("K"))
    p.add_argument("--k-report", dest="K_report", type=int, default=None, metavar="K",
                   help=_help("K_report"))
    p.add_argument("-B", "--B", dest="B", type=_b_value, default=None, metavar="B|auto",
                   help=_help("B"))
    p.add_argument("--seed", type=int, default=None, help=_help("seed"))
    p.add_argument("--bootstrap", dest="n_bootstrap", type=int, default=None, metavar="N",
                   help=_help("n_bootstrap"))
    p.add_argument("--no-residual", dest="residual", action="store_false", default=None,
                   help=_help("residual"))
    p.add_argument("--queries", default=None, help=_help("queries"))
    p.add_argument("--confound", nargs="*", default=None, help=_help("confound"))
    p.add_argument("--query-features", dest="query_features", default=None, metavar="STORE",
                   help=_help("query_features"))
    p.add_argument("--alpha", type=float, default=None, help=_help("alpha"))
    p.add_argument("--k-aspects", dest="K_aspects", type=int, default=None, metavar="K",
                   help=_help("K_aspects"))
    p.add_argument("--feature-set", dest="feature_set", default=None,
                   choices=("extended", "paper"), help=_help("feature_set"))
    p.add_argument("--no-report", dest="report", action="store_false", default=None,
                   help=_help("report"))
    p.add_argument("--no-media", dest="media", action="store_false", default=None,
                   help=_help("media"))
    p.add_argument("--out", required=True, help="results folder")
    add_summary_flags(p)
    add_scheduler_flag(p)
    add_progress_flag(p)
    p.set_defaults(func=run)


def _given(args: argparse.Namespace, cls: type[Any]) -> dict[str, Any]:
    """The spec fields of ``cls`` set on the command line (the others keep their defaults)."""
    out = {}
    for dest, (owner, name) in _FIELDS.items():
        value = getattr(args, dest)
        if owner is cls and value is not None:
            out[name] = value
    return out


def run(args: argparse.Namespace) -> int:
    """Run ``aria-tda homogeneity``.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line.
    """
    from pathlib import Path

    from aria_tda._dask import check_scheduler
    from aria_tda.features.store import FeatureStore
    from aria_tda.study import run_study
    from aria_tda.study.config import validate_study

    scheduler = args.scheduler
    if scheduler is not None:  # named as the flag in the error; "" forces no cluster
        scheduler = check_scheduler(scheduler, name="--scheduler") or ""
    from aria_tda._optional import require_scheduler

    require_scheduler(scheduler)  # the scale extra, checked before any work
    store = FeatureStore.open(args.features)
    method = args.method or Path(args.scores).stem
    setting = SettingSpec(name=method, method=method, scores=Path(args.scores),
                          **_given(args, SettingSpec))
    spec = StudySpec(
        name=f"aria-tda homogeneity {method}",
        modality=store.modality,
        feature_store=Path(args.features),
        output=Path(args.out),
        settings=(setting,),
        **_given(args, StudySpec),
    )
    import time

    from aria_tda.cli.report import note_missing_plots

    started = time.time()
    checked = validate_study(spec, source="aria-tda homogeneity")

    def work() -> Any:
        out = run_study(checked, progress=args.progress, command="aria-tda homogeneity",
                        scheduler=scheduler)
        # a report without matplotlib has no K-sweep plots: say so once
        note_missing_plots("aria-tda homogeneity", html=out / "report.html",
                            since=started - 1)
        return out

    return run_and_summarise(args, work)
