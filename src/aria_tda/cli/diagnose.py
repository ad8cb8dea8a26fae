"""``aria-tda diagnose SCORES``: reliability diagnostics κ, r_i, p of a score matrix (paper §3.2).

The table and the JSON end with the verdict of :func:`aria_tda.verdict.classify` (collapsed /
suspect / ok, with the reason), which includes the top-K concentration measured in the same
pass (``--topk``, :mod:`aria_tda.diagnostics.concentration`). A matrix with fewer rows than
columns is diagnosed with a warning that names ``--transpose`` (or, when it was given, says to
check the file's orientation and drop it). ``--scheduler local:N`` (or a scheduler address) runs the
pass as Dask tasks on row ranges (:mod:`aria_tda.diagnostics.distributed`); this path sums the exact
in-memory ``T x T`` Gram, so it refuses ``--approx``, ``--exact-tiled``, ``--device`` and a
Gram larger than ``--memory`` with a one-line error.

Under a memory limit (``ulimit -v``, ``prlimit --as``) the default ``--memory`` is half of what
the limit leaves, and whatever does not fit is one line naming the limit and what needs less
(``--memory``, ``--approx``, or raising the limit): the libraries' load is checked first
(:func:`aria_tda._memory.load_libraries`; OpenBLAS would otherwise spin for ever), and an
allocation that fails later is read as such (:func:`aria_tda._memory.out_of_memory`).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from aria_tda.cli.common import (
    add_progress_flag,
    add_scheduler_flag,
    add_score_reading_flags,
    add_transpose_flag,
    print_json,
)


def register(subparsers: Any) -> None:
    """Add the ``diagnose`` sub-command.

    Parameters
    ----------
    subparsers : argparse._SubParsersAction
        The ``aria-tda`` parser's sub-commands.
    """
    p = subparsers.add_parser(
        "diagnose",
        help="reliability diagnostics (kappa, r_i, p) of a score matrix",
        description=(
            "Stream a score matrix (n_train_segments x n_queries; .npy or TRAK .mmap, .npz, "
            ".pt/.pth, Kronfluence .safetensors and its partitions, bergson scores.bin, or .zarr) "
            "once and report the mean absolute "
            "inter-query correlation kappa, the singular value energy ratios r_1..r_10 and "
            "r_2:5, the mean concentration ratio p, how constant the leading query-side "
            "singular vector v1 is (paper section 3.2), how much the queries' top-K sets "
            "coincide (top-1 share, mean top-K overlap, distinct-rows ratio), and the verdict: "
            "collapsed, suspect or ok, with the reason."
        ),
    )
    p.add_argument(
        "scores", metavar="SCORES",
        help="score matrix file, zarr store, or a folder holding one score file (a TRAK save "
        "dir, a Kronfluence analysis dir, a bergson run)",
    )
    p.add_argument("--json", action="store_true", help="print a JSON object instead of a table")
    add_score_reading_flags(p)
    add_transpose_flag(p)
    p.add_argument(
        "--n-energy",
        type=int,
        default=10,
        metavar="N",
        help="number of energy ratios r_1..r_N to report (default 10)",
    )
    p.add_argument(
        "--compute-dtype",
        choices=("float32", "float64"),
        default=None,
        help="precision of the block products (default: that of the input)",
    )
    p.add_argument("--device", default=None, help="torch device for the kernel, e.g. cuda")
    p.add_argument(
        "--topk",
        type=_topk_list,
        default=(1, 10),
        metavar="K,K",
        help="group sizes of the top-K concentration, comma-separated (default 1,10); "
        "'none' turns it off",
    )
    many = p.add_argument_group("many queries (T x T Gram larger than memory)")
    many.add_argument(
        "--memory",
        default=None,
        metavar="SIZE",
        help="memory budget, e.g. 8GB (default: half the physical memory, or of what an "
        "address-space limit, ulimit -v, leaves); when the in-memory T x T Gram exceeds it, "
        "the exact Gram is tiled over column blocks and spilled to disk",
    )
    choice = many.add_mutually_exclusive_group()
    choice.add_argument(
        "--approx",
        action="store_true",
        help="approximate mode: r_1..r_N by randomised block Krylov in a few passes, with "
        "guaranteed intervals; kappa from sampled columns with a confidence interval; p exact",
    )
    choice.add_argument(
        "--exact-tiled", action="store_true", help="force the tiled exact Gram (tests, timing)"
    )
    many.add_argument(
        "--spill-dir",
        default=None,
        metavar="DIR",
        help="where tiles are spilled (default $ARIA_CACHE_DIR/tiles; removed afterwards)",
    )
    many.add_argument(
        "--approx-passes", type=int, default=8, metavar="N", help="most passes (default 8)"
    )
    many.add_argument(
        "--sample-columns",
        type=int,
        default=1000,
        metavar="N",
        help="columns sampled for kappa in --approx (default 1000)",
    )
    many.add_argument("--seed", type=int, default=0, help="seed of --approx (default 0)")
    add_scheduler_flag(p)
    p.epilog = (
        "--scheduler runs the exact pass (the in-memory T x T Gram) as Dask tasks over row "
        "ranges; it cannot be combined with --approx, --exact-tiled or --device (one-line "
        "error)."
    )
    add_progress_flag(p)
    p.set_defaults(func=run)


def _topk_list(text: str) -> tuple[int, ...]:
    """``--topk`` parsed: ``"1,10"`` -> ``(1, 10)``; ``"none"`` -> ``()``; ``0`` refused."""
    if text.strip().lower() in ("none", "off"):
        return ()
    try:
        ks = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated positive integers or 'none', got {text!r}") from None
    if not ks or min(ks) < 1:
        raise argparse.ArgumentTypeError(
            "expected comma-separated positive integers (a group size of 0 selects nothing; "
            f"'none' turns the top-K measure and its verdict rule off), got {text!r}")
    return ks


def to_record(d: Any) -> dict[str, Any]:
    """The JSON record of ``aria-tda diagnose``: the diagnostics and the verdict.

    Parameters
    ----------
    d : Diagnostics
        The diagnostics of one score matrix.
    """
    rec = d.to_dict()  # holds d.verdict: the same answer in Python and here
    rec.setdefault("mode", d.mode)
    return rec


def format_table(d: Any, source: str, notes: Sequence[str] = ()) -> str:
    """The human-readable report of :class:`aria_tda.diagnostics.Diagnostics`, with the verdict.

    Parameters
    ----------
    d : Diagnostics
        The diagnostics of one score matrix.
    source : str
        How the table names the matrix.
    notes : sequence of str
        How the matrix was read, when that was not a plain read (summed per-module keys,
        assembled partitions: :attr:`aria_tda.scores.source.ScoreSource.notes`).
    """

    def f(x: float | None) -> str:
        return "undefined" if x is None else f"{x:.4f}"

    rec = to_record(d)
    verdict = rec["verdict"]
    lines = [
        f"score matrix   {source}",
        *(f"  read as      {n}" for n in notes),
        f"shape          {rec['n_train']} training segments x {rec['n_queries']} queries",
        f"kappa          {f(rec['kappa'])}   mean |corr| between query columns (1 = query ignored)",
        f"r1             {f(rec['r1'])}   energy on the leading singular axis",
        f"r2:5           {f(rec['r2_5'])}   energy on axes 2-5",
        f"p              {f(rec['p'])}   mean share of column energy in the column mean",
        f"v1 constancy   {f(rec['v1_constancy'])}   |sum v1|/sqrt(T) "
        "(1 = v1 constant across queries)",
        f"constant cols  {rec['constant_columns']}",
        "energy ratios  " + " ".join(f"{r:.4f}" for r in rec["energy_ratios"]),
        *_concentration_lines(getattr(d, "concentration", None)),
        f"verdict        {verdict['label'].upper()}: {verdict['reason']}",
        *(f"{'finding':<15}{x}" for x in verdict["findings"]),
    ]
    if d.mode != "exact":
        at = 2 + len(notes)
        lines.insert(at, f"mode           {d.mode}")
        for i, (name, src_) in enumerate((rec.get("sources") or {}).items()):
            lines.insert(at + 1 + i, f"  {name:<12} {src_}")
    at_verdict = next(i for i, x in enumerate(lines) if x.startswith("verdict "))
    if d.r1_interval is not None:
        lo, hi = d.r1_interval
        lines.insert(at_verdict, f"r1 interval    [{lo:.6f}, {hi:.6f}]   guaranteed (Ritz bounds)")
        at_verdict += 1
    if d.r2_5_interval is not None:
        lo, hi = d.r2_5_interval
        lines.insert(at_verdict,
                     f"r2:5 interval  [{lo:.6f}, {hi:.6f}]   guaranteed (Ritz bounds)")
        at_verdict += 1
    if d.kappa_ci is not None:
        lo, hi = d.kappa_ci
        lines.insert(
            at_verdict,
            f"kappa CI       [{lo:.4f}, {hi:.4f}]   {100 * (d.kappa_level or 0):.0f}% (sampled)"
        )
    return "\n".join(lines)


def _concentration_lines(c: Any) -> list[str]:
    """The table's top-K lines (none when the concentration was not measured)."""
    if c is None:
        return []
    rows = "training segments" if c.level == "segment" else "tracks"

    def f(x: float) -> str:
        return "undefined" if x != x else f"{x:.4f}"

    lines = [
        f"top-1 share    {f(c.top1_share)}   queries whose top-1 is {rows[:-1]} {c.top1_row} "
        f"(chance ~{max(1 / c.n_queries, 1 / c.n_rows):.2g})",
    ]
    for k in c.ks:
        a = c.at(k)
        lines.append(
            f"{f'top-{k} overlap':<15}{f(a['mean_overlap'])}   chance {a['chance_overlap']:.2g}; "
            f"distinct ratio {f(a['distinct_ratio'])}"
        )
    lines.append(f"{'':<15}(overlap: share of two queries' top-K in common, 1 = the same {rows} "
                 "for every query; distinct ratio: |union of top-K| / (T K))")
    dep = getattr(c, "dependence", None)
    if dep is not None:
        lines += [
            f"{f'unlike top-{k}':<15}{f(ou)}   overlap of the less alike half of {dep.n_pairs} "
            f"query pairs (alike half {f(oa)}; chance {min(1.0, k / dep.n_rows):.2g})"
            for k, ou, oa in zip(dep.ks, dep.overlap_unlike, dep.overlap_alike, strict=True)
        ]
        lines += [
            f"{'follows query':<15}{f(dep.follows_similarity)}   Spearman of two queries' "
            "overlap with how alike they are",
            f"{'signed kappa':<15}{f(dep.kappa_signed)}   mean signed corr between query "
            "columns (sampled)",
            f"{'offset rho':<15}{f(dep.offset_rho)}   median Spearman of a query's scores "
            "with the items' mean score",
            f"{'hubs':<15}{dep.n_hubs}   {rows} in far more queries' top-{dep.k} than chance"
            + "".join(f"\n{'':<15}  {rows[:-1]} {h.row}: {100 * h.share:.1f} % of queries, "
                      f"{h.times_chance:.0f}x chance" for h in dep.hubs[:5]),
        ]
    return lines


def run(args: argparse.Namespace) -> int:
    """Run ``aria-tda diagnose``.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed flags.
    """
    import sys

    from aria_tda._memory import load_libraries, out_of_memory

    # under a memory limit (ulimit -v): one line when NumPy or SciPy cannot load
    load_libraries(("aria_tda.diagnostics", "aria_tda.scores.readers"),
                   what="NumPy, SciPy and numba (the diagnostics' libraries)")
    from aria_tda._dask import check_scheduler, open_client
    from aria_tda._optional import require_all, require_scheduler
    from aria_tda.diagnostics import ApproxOptions, DiagnoseArgs, choose_mode, diagnose
    from aria_tda.errors import ParameterError
    from aria_tda.scores.readers import as_source

    if args.spill_dir is not None:  # a file named as the spill folder: refused before any read
        from aria_tda.diagnostics.tiled import check_spill_dir

        check_spill_dir(args.spill_dir, name="--spill-dir")
    scheduler = check_scheduler(getattr(args, "scheduler", None), name="--scheduler")
    require_scheduler(scheduler)  # optional packages are checked before the matrix is read
    if args.device is not None:
        require_all(("torch",), purpose=f"--device {args.device}",
                    install="pip install torch (a build for that device: see pytorch.org)")
    if scheduler is not None:
        other = "--approx" if args.approx else "--exact-tiled" if args.exact_tiled else None
        if other is None and args.device is not None:
            other = "--device"
        if other is not None:
            raise ParameterError(
                f"--scheduler: the Dask path runs the exact in-memory Gram on the workers' "
                f"CPUs; drop {other} or --scheduler")
    # the flags, one to one (the key is read here: the matrix is opened once, below)
    options = DiagnoseArgs(
        chunk_rows=args.chunk_rows,
        n_energy=args.n_energy,
        compute_dtype=args.compute_dtype,
        device=args.device,
        progress=args.progress,
        transpose=args.transpose,
        mode="approx" if args.approx else "exact-tiled" if args.exact_tiled else "auto",
        memory=args.memory,
        spill_dir=args.spill_dir,
        seed=args.seed,
        approx=ApproxOptions(max_passes=args.approx_passes, sample_columns=args.sample_columns),
        topk=args.topk,
    )
    with out_of_memory(f"opening {args.scores}", "raise the limit"):
        stored = as_source(args.scores, key=args.key)
        src = as_source(stored, transpose=args.transpose)
    mode, reason = choose_mode(src.n_cols, mode=options.mode, memory=args.memory)
    if scheduler is not None and mode != "exact":
        raise ParameterError(
            f"--scheduler: the Dask path needs the in-memory T x T Gram, but mode {reason}; "
            "raise --memory or drop --scheduler")
    if mode != "exact":  # the usual in-memory path stays quiet
        print(f"aria-tda diagnose: mode {reason}", file=sys.stderr, flush=True)
    with open_client(scheduler) as client:
        d = diagnose(stored, options.replace(mode=mode), client=client)
    if args.json:
        print_json({**to_record(d), "input": src.provenance()})
    else:
        print(format_table(d, str(args.scores), notes=src.notes))
    return 0
