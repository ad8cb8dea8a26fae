"""``aria-tda demo [symbolic|audio|planted]`` — the paper's experiments end to end.

``aria-tda demo`` (= ``aria-tda demo symbolic``) is the symbolic ground-truth validation (the
project's main job); ``aria-tda demo audio`` the three-stage audio experiment (Table 2);
``aria-tda demo planted`` the planted ground truth per musical aspect (both modalities).
"""

from __future__ import annotations

import argparse

from aria_tda.cli.common import add_progress_flag


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``demo`` sub-command.

    Parameters
    ----------
    sub : argparse._SubParsersAction
        The ``aria-tda`` parser's sub-commands.
    """
    from aria_tda_experiments.demo import DEMO_METHODS, STAGES
    from aria_tda_experiments.planted.plants import PLANT_FAMILIES

    p = sub.add_parser(
        "demo",
        help="the paper's experiments end to end: 'aria-tda demo' (symbolic, LDS-validated), "
             "'aria-tda demo audio' (three-stage audio model, Table 2) or 'aria-tda demo "
             "planted' (planted ground truth per musical aspect)",
        description=(
            "symbolic (default): rebuild the paper's symbolic ground-truth validation (Table 1) "
            "from music21's Mozart/Haydn quartets and Schumann works (which carry dynamics): "
            "train a small MusicTransformer, generate queries, "
            "attribute them with TRAK, TracIn, GradCos, GradDot, LoGra and FactGraSS, compute LDS "
            "from retraining on random halves, run every ARIA analysis and write an HTML report "
            "(about 15 minutes on 2 CPU cores, --quick about 3). "
            "audio: render music21 works in several genres and versions to audio, fit semantic/"
            "acoustic/conditioning tokenizers, train a three-stage (semantic/coarse/fine) model, "
            "generate queries, attribute each stage with TRAK, FactGraSS, GradCos and LoGra (12 "
            "settings), add three embedding-retrieval baselines (encoders with CLAP's, CLEWS's "
            "and MERT's objectives trained on the corpus, or the published checkpoints with "
            "--encoders, scoring the generated queries' audio: 15 settings), extract rhythm/"
            "harmony/timbre features and run the whole study with the paper's Table-2 and "
            "Table-3 layouts and planted-influence recall (about 25 minutes, --quick about 5; "
            "--lds adds LDS per stage). "
            "planted: plant one musical aspect per small marked set of training items (symbolic: "
            "melody motif, chord progression, rhythmic pattern, velocity contour, polyphony "
            "pattern; audio: percussion pattern, progression, an instrument used nowhere else), "
            "show each plant was learned (against a model trained without it) and matters "
            "(retraining without it), attribute plant and control queries with every method and "
            "score recall@k / average precision of the marked set against chance and whether "
            "ARIA's leading channel is the planted aspect: OUT/results/planted_aspects.csv and a "
            "report per modality (both about 30 minutes, --quick about 8); --plants B plants a "
            "second, held-out family of patterns. "
            "Stages are resumable: rerunning reuses finished ones."
        ),
    )
    p.add_argument("experiment", nargs="?", choices=("symbolic", "audio", "planted"),
                   default="symbolic", help="which experiment (default: symbolic)")
    p.add_argument("--modality", choices=("both", "symbolic", "audio"), default=None,
                   help="planted: which modality's plants (default: both)")
    p.add_argument("--plants", choices=PLANT_FAMILIES, default=None,
                   help="planted: the family of plant patterns (default: A, the one the "
                        "experiment was designed with). B: a second family of plant "
                        "patterns, never used to choose ARIA's settings; reported beside A "
                        "(another motif, progression, rhythm, velocity contour and polyphony "
                        "pattern; another percussion pattern, progression and instrument; "
                        "default folder ./aria-demo-planted-B)")
    p.add_argument("--quick", action="store_true",
                   help="smaller sizes (symbolic about 3 minutes, audio about 5, on 2 cores)")
    p.add_argument("--preset", choices=("default", "quick", "paper", "gpu", "tiny"), default=None,
                   help="explicit size preset (overrides --quick). symbolic 'paper': the "
                        "paper's benchmark size, 5,000 training windows x 178 queries, a "
                        "50-model TRAK ensemble (with TRAK-1 and TRAK-10) and dattri's 100 LDS "
                        "halves retrained with 5 seeds each (about 85 minutes on 2 cores); "
                        "symbolic 'gpu': paper with 10 seeds per half (1,000 retrains), for "
                        "--device cuda; 'tiny' is for smoke tests")
    p.add_argument("--out", default=None,
                   help="working folder (default ./aria-demo, ./aria-demo-audio, "
                        "./aria-demo-planted or, with --plants B, ./aria-demo-planted-B); "
                        "results in OUT/results")
    p.add_argument("--seed", type=int, default=0,
                   help="seed of the split, models, queries, projections, nulls")
    p.add_argument("--threads", type=int, default=None,
                   help="worker processes / torch threads (default: cores, max 2; max 8 "
                        "with --device cuda)")
    p.add_argument("--methods", nargs="+", choices=DEMO_METHODS, default=None,
                   help="attribution methods (default: all six; audio: TRAK FactGraSS GradCos "
                        "LoGra)")
    p.add_argument("--lds", action="store_true",
                   help="audio: also LDS per stage from retraining on random halves (slow)")
    p.add_argument("--encoders", nargs="+", default=None, metavar="NAME=PATH",
                   help="audio: published encoder checkpoints for the embedding baselines "
                        "instead of the demo-trained ones, e.g. mert=weights/MERT-v1-95M "
                        "clap=PATH/music_speech_audioset_epoch_15_esc_89.98.pt clews=PATH "
                        "(any subset; see 'aria-tda embed --help' for the files)")
    p.add_argument("--no-embeddings", dest="embeddings", action="store_false",
                   help="audio: leave out the three embedding baselines (12 settings)")
    p.add_argument("--trak-proj-dim", type=int, default=None,
                   help="TRAK projection dimension (default 512)")
    p.add_argument("--trak-lam", type=float, default=None,
                   help="symbolic: TRAK regularisation lambda (default 0.01)")
    p.add_argument("--collections", nargs="+", default=None, metavar="NAME",
                   help="music21 corpus folders to draw works from (default: mozart haydn "
                        "schumann_robert schumann_clara, whose dynamics markings music21 turns "
                        "into velocities). Bach chorales (bach) carry none, so the dynamic "
                        "channel is undefined on them")
    p.add_argument("--trak-k", dest="trak_k", type=int, nargs="+", default=None, metavar="K",
                   help="symbolic: also TRAK from the first K ensemble members (settings "
                        "'TRAK-K' beside 'TRAK', the whole ensemble), e.g. --trak-k 1")
    p.add_argument("--lds-seeds", dest="lds_seeds", type=int, default=None,
                   help="symbolic: retrain every LDS subset with this many seeds and average "
                        "the query outputs (default: the preset's — 3 for the default preset, 1 "
                        "for --quick; less retraining noise in LDS)")
    p.add_argument("--device", default=None, metavar="DEVICE",
                   help="symbolic: where models train and gradients are computed: cpu "
                        "(default) or an accelerator such as cuda / cuda:1. The same seeds, "
                        "data order and TRAK/TracIn/GradDot/GradCos projections are used (those "
                        "agree with a CPU run up to floating-point rounding); LoGra and "
                        "FactGraSS draw their projections on the device (another random draw)")
    p.add_argument("--until", default=None, choices=STAGES, metavar="STAGE",
                   help="symbolic: stop after this stage (" + ", ".join(STAGES) + "); the same "
                        "command without --until reuses the finished stages, e.g. train and "
                        "attribute on a GPU machine, then copy OUT and finish on a laptop")
    p.add_argument("-B", "--B", dest="B", type=int, default=None,
                   help="random reference groups per K (default 200)")
    p.add_argument("--no-report", dest="report", action="store_false",
                   help="do not write report.html")
    p.add_argument("--quiet", action="store_true", help="no log lines")
    add_progress_flag(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run ``aria-tda demo``.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed flags.
    """
    given = {k: v for k, v in (("B", args.B), ("trak_proj_dim", args.trak_proj_dim),
                               ("trak_lam", args.trak_lam), ("lds_seeds", args.lds_seeds),
                               ("trak_k", None if args.trak_k is None else tuple(args.trak_k)),
                               ("device", args.device), ("until", args.until))
             if v is not None}
    if args.experiment == "planted":
        return _planted(args, given)
    planted_only = [f for f, v in (("--modality", args.modality), ("--plants", args.plants))
                    if v is not None]
    if planted_only:
        from aria_tda.errors import ParameterError

        raise ParameterError(f"{', '.join(planted_only)}: an option of 'aria-tda demo "
                             "planted'")
    if args.experiment == "audio":
        from aria_tda.errors import ParameterError
        from aria_tda_experiments.audio.demo import AUDIO_DEMO_METHODS, run_audio_demo

        flags = (("--collections", "collections"), ("--trak-lam", "trak_lam"),
                 ("--trak-k", "trak_k"), ("--lds-seeds", "lds_seeds"), ("--device", "device"),
                 ("--until", "until"))
        symbolic_only = [f for f, k in flags
                         if k in given or (k == "collections" and args.collections is not None)]
        if symbolic_only:
            raise ParameterError(f"{', '.join(symbolic_only)}: options of the symbolic demo")
        encoders = None if args.encoders is None else _encoder_paths(args.encoders)
        if "trak_proj_dim" in given:
            given["proj_dim"] = given.pop("trak_proj_dim")
        run_audio_demo(args.out or "aria-demo-audio", quick=args.quick, preset=args.preset,
                       seed=args.seed, methods=args.methods or AUDIO_DEMO_METHODS,
                       threads=args.threads, lds=args.lds, embeddings=args.embeddings,
                       encoders=encoders, report=args.report, progress=args.progress,
                       quiet=args.quiet, **given)
        return 0
    from aria_tda_experiments.demo import DEMO_METHODS, run_demo

    if args.lds or args.encoders is not None or not args.embeddings:
        from aria_tda.errors import ParameterError

        if args.lds:
            raise ParameterError("--lds: the symbolic demo always computes LDS")
        raise ParameterError("--encoders and --no-embeddings are options of 'aria-tda demo audio'")
    run_demo(args.out or "aria-demo", quick=args.quick, preset=args.preset, seed=args.seed,
             methods=args.methods or DEMO_METHODS, threads=args.threads, report=args.report,
             progress=args.progress, quiet=args.quiet,
             collections=None if args.collections is None else tuple(args.collections), **given)
    return 0


def _planted(args: argparse.Namespace, given: dict[str, object]) -> int:
    """``aria-tda demo planted``: refuse the other demos' options, then run it."""
    from aria_tda.errors import ParameterError
    from aria_tda_experiments.planted.demo import run_planted_demo

    other = [f"--{k.replace('_', '-')}" for k in given] + [
        flag for flag, bad in (("--methods", args.methods is not None),
                               ("--lds", args.lds), ("--encoders", args.encoders is not None),
                               ("--no-embeddings", not args.embeddings),
                               ("--collections", args.collections is not None))
        if bad]
    if args.preset not in (None, "default", "quick", "tiny"):
        other.append(f"--preset {args.preset}")
    if other:
        raise ParameterError(f"{', '.join(other)}: not an option of 'aria-tda demo planted' "
                             "(it takes --modality, --plants, --quick, --preset "
                             "default|quick, --out, --seed, --threads, --no-report, --quiet)")
    run_planted_demo(args.out, modality=args.modality or "both", quick=args.quick,
                     sizes=args.preset, seed=args.seed, threads=args.threads,
                     report=args.report, progress=args.progress, quiet=args.quiet,
                     plants=args.plants or "A")
    return 0


def _encoder_paths(items: list[str]) -> dict[str, str]:
    """``["mert=PATH", ...]`` -> ``{"mert": "PATH"}`` (names checked by the demo)."""
    from aria_tda.errors import ParameterError, expected

    out: dict[str, str] = {}
    for item in items:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise ParameterError(expected("--encoders", "NAME=PATH items (mert, clap, clews)",
                                          item))
        if name in out:
            raise ParameterError(expected("--encoders", "each name once", name))
        out[name] = path
    return out
