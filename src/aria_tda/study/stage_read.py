r"""One read of a stage's score matrix: diagnostics, top-K concentration and both ``S_track``.

A setting needs four things from its segment-level matrix ``S`` (``M x T``): the reliability
diagnostics (the Gram :math:`S^\top S`, column sums), the queries' top-K rows, and the track
aggregation of ``S`` and of its rank-1 residual. :func:`read_stage` gets them in as few passes
over ``S`` as the mathematics allows:

1. **the stage pass** — the diagnostics' Gram pass, which also feeds the top-K accumulator and
   the per-track sums and float64 column moments of the aggregation
   (:class:`aria_tda.scores.track_sums.TrackSums`): the diagnostics, the concentration and,
   for the z-score, everything ``S_track`` needs;
2. **the residual pass** (with ``residual``) — :math:`v_1` is the Gram's top eigenvector, known
   only once every row was summed, so :math:`u_1 = S v_1 / \sigma_1` and the column moments of
   :math:`R = S - \sigma_1 u_1 v_1^\top` take a second read
   (:func:`~aria_tda.scores.track_sums.residual_pass`). The residual's track sums follow from
   the first pass's without reading ``S`` again;
3. then one pass over the (``N x T``, much smaller) track sums writes both ``S_track`` files
   (:func:`~aria_tda.scores.track_sums.finish_track_scores`).

So the z-score takes one read of ``S`` without the residual and two with it (today's separate
passes took four more: the residual's own Gram and ``S v_1`` passes, a moments pass and an
aggregation pass per variant). Rank normalisation needs whole columns, so its ``S_track`` keeps
:func:`aria_tda.scores.aggregation.aggregate`'s column passes, given the diagnostics'
:math:`(\sigma_1, v_1)`; ``normalize = "none"`` writes the residual in the residual pass
itself. With a Dask client (and a Gram that fits, :func:`gram_fits`) the two passes run as
row-range tasks and are merged in row order; a GPU ``device`` runs the Gram on it. Every pass
is timed and its peak memory recorded (:attr:`StageRead.passes`).
"""

from __future__ import annotations

import dataclasses
import os
import resource
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from aria_tda.errors import ParameterError
from aria_tda.study.config import SettingSpec
from aria_tda.study.inputs import open_setting_scores, segments_of

__all__ = ["StageRead", "gram_fits", "read_stage"]

#: Energy ratios the diagnostics report (as :func:`aria_tda.diagnostics.diagnose`).
N_ENERGY = 10


def gram_fits(scores: Any) -> bool:
    """Whether the exact Dask pass fits: its ``T x T`` float64 Gram under 2 GB.

    The distributed pass is exact-mode only; a wider matrix keeps the single-machine pass,
    which picks a tiled/approximate mode itself.

    Parameters
    ----------
    scores : ScoreSource
        The stage's matrix (its shape).
    """
    t = int(scores.shape[1])
    return 8 * t * t <= 2 * 1024**3


@dataclasses.dataclass(frozen=True, eq=False)
class StageRead:
    """What a setting takes from its score matrix.

    Attributes
    ----------
    diagnostics : Diagnostics
        Segment-level diagnostics with the top-K concentration.
    original : ScoreSource
        ``S_track`` of the matrix (the matrix itself for ``normalize = "none"``).
    residual : ScoreSource or None
        ``S_track`` of the rank-1 residual (``None`` unless asked for).
    normalize : str
        The normalisation used (``auto`` resolved).
    passes : tuple of dict
        One record per pass: ``pass``, what it ``reads``, ``seconds``, ``rss_mb`` (this
        process at its end) and ``peak_rss_mb`` (the process's peak so far).
    segment_counts : numpy.ndarray or None
        Segments averaged into each ``S_track`` row (``None`` without aggregation), read from
        the segment map once, here.
    original_rank1 : Rank1 or None
        The leading singular triple of the original ``S_track`` (the alignment's
        :math:`u_1`), from the Gram summed while it was written; ``None`` when it was not
        (rank normalisation, no aggregation, a Gram too large for memory).
    """

    diagnostics: Any
    original: Any
    residual: Any
    normalize: str
    passes: tuple[dict[str, Any], ...]
    original_rank1: Any = None
    segment_counts: Any = None

    @property
    def reads_of_scores(self) -> int:
        """How many passes read the segment-level matrix."""
        return sum(1 for p in self.passes if p["reads"] == "scores")


def _rss_mb() -> tuple[float, float]:
    """(current, peak) resident memory of this process in MB."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    try:
        with open("/proc/self/statm") as fh:
            pages = int(fh.read().split()[1])
        now = pages * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError, IndexError):  # pragma: no cover - not Linux
        now = peak
    return now, peak


class _Passes:
    """Times each pass and records the memory at its end."""

    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []

    @contextmanager
    def run(self, name: str, reads: str) -> Iterator[None]:
        t0 = time.perf_counter()
        yield
        now, peak = _rss_mb()
        self.records.append({"pass": name, "reads": reads,
                             "seconds": round(time.perf_counter() - t0, 3),
                             "rss_mb": round(now, 1), "peak_rss_mb": round(peak, 1)})


def _first_pass(src: Any, observers: list[Any], topk: tuple[int, ...], *,
                chunk_rows: int | None, progress: bool | None, client: Any,
                device: Any) -> Any:
    """The diagnostics of ``src`` from the pass that also feeds ``observers``."""
    from aria_tda.diagnostics import diagnose
    from aria_tda.errors import DataError

    if client is not None and gram_fits(src):
        from aria_tda.study.stage_dask import dask_stage_pass

        return dask_stage_pass(src, observers, topk, client=client, chunk_rows=chunk_rows,
                               progress=progress, n_energy=N_ENERGY)
    if not observers:
        return diagnose(src, chunk_rows=chunk_rows, progress=progress, topk=topk,
                        device=device)
    from aria_tda.diagnostics.modes import observe_first_pass

    watched = observe_first_pass(src, observers)
    d = diagnose(watched, chunk_rows=chunk_rows, progress=progress, topk=topk, device=device)
    if not watched.complete:  # pragma: no cover - every mode reads all rows first
        raise DataError("scores: the stage pass did not see every row")
    return d


def _residual_pass(src: Any, d: Any, *, chunk_rows: int | None, progress: bool | None,
                   client: Any, out: np.ndarray | None = None) -> Any:
    from aria_tda.scores.track_sums import residual_pass

    if client is not None and out is None:
        from aria_tda.study.stage_dask import dask_residual_pass

        return dask_residual_pass(src, d.sigma1, d.v1, client=client, chunk_rows=chunk_rows,
                                  progress=progress)
    return residual_pass(src, d.sigma1, d.v1, chunk_rows=chunk_rows, progress=progress, out=out)


def read_stage(
    setting: SettingSpec,
    store: Any,
    *,
    work: Path,
    topk: tuple[int, ...],
    residual: bool,
    chunk_rows: int | None = None,
    progress: bool | None = None,
    client: Any = None,
    device: Any = None,
) -> StageRead:
    """The diagnostics and both ``S_track`` of a setting, in the fewest reads (module docstring).

    Parameters
    ----------
    setting : SettingSpec
        The setting (its scores, segment map, normalisation).
    store : FeatureStore
        The study's feature store (its track ids, when there is no segment map).
    work : Path
        Folder of the ``S_track`` files (``s_track_original.npy``, ``s_track_residual.npy``).
    topk : tuple of int
        ``K`` of the segment-level top-K concentration.
    residual : bool
        Also the rank-1 residual's ``S_track``.
    chunk_rows : int, optional
        Rows per streamed block.
    progress : bool, optional
        Progress bars.
    client : dask.distributed.Client, optional
        Run the passes as Dask tasks.
    device : str, optional
        Torch device of the Gram (``"cuda"``); default NumPy on the CPU.

    Returns
    -------
    StageRead
    """
    src = open_setting_scores(setting)
    segments = segments_of(setting, src, store)
    passes = _Passes()
    out = {v: work / f"s_track_{v}.npy" for v in ("original", "residual")}
    if setting.normalize == "none":
        return _read_raw(setting, src, out["residual"], topk, residual, passes,
                         chunk_rows=chunk_rows, progress=progress, client=client, device=device)
    from aria_tda.scores import segment_codes

    codes, track_ids = segment_codes(segments, n_rows=src.n_rows, row_ids=src.row_ids,
                                     n_cols=src.n_cols)
    counts = np.bincount(codes, minlength=int(track_ids.size))
    if setting.normalize == "rank":
        read = _read_rank(setting, src, segments, out, topk, residual, passes, None,
                          chunk_rows=chunk_rows, progress=progress, client=client,
                          device=device)
    else:
        read = _read_zscore(setting, src, segments, (codes, track_ids), out, topk, residual,
                            passes, chunk_rows=chunk_rows, progress=progress, client=client,
                            device=device)
    return dataclasses.replace(read, segment_counts=counts)


def _read_raw(setting: SettingSpec, src: Any, out: Path, topk: tuple[int, ...], residual: bool,
              passes: _Passes, **kw: Any) -> StageRead:
    """``normalize = "none"``: the matrix is ``S_track``; the residual is written in pass 2."""
    from aria_tda.scores import open_scores
    from aria_tda.scores.writers import ScoreWriter

    if setting.segments is not None:
        raise ParameterError(
            f"setting {setting.name!r}: normalize='none' needs one segment per track (no "
            "segment map); choose zscore, rank or auto"
        )
    with passes.run("stage pass (diagnostics, top-K)", "scores"):
        d = _first_pass(src, [], topk, chunk_rows=kw["chunk_rows"], progress=kw["progress"],
                        client=kw["client"], device=kw["device"])
    res = None
    if residual:
        with passes.run("residual pass (u1, residual written)", "scores"), ScoreWriter(
            out, shape=src.shape, dtype=np.float64, kind="scores", row_ids=src.row_ids,
            method=setting.method, stage=setting.stage,
            parameters={"variant": "residual", "normalize": "none"},
        ) as w:
            _residual_pass(src, d, chunk_rows=kw["chunk_rows"], progress=kw["progress"],
                           client=None, out=w.array)
        res = open_scores(out)
    return StageRead(d, src, res, "none", tuple(passes.records))


def _read_rank(setting: SettingSpec, src: Any, segments: Any, out: dict[str, Path],
               topk: tuple[int, ...], residual: bool, passes: _Passes, d: Any,
               **kw: Any) -> StageRead:
    """Rank normalisation: whole columns, so ``aggregate``'s column passes, with the
    diagnostics' :math:`(\\sigma_1, v_1)` for the residual (``d``: when pass 1 ran already)."""
    from aria_tda.scores import aggregate

    if d is None:
        with passes.run("stage pass (diagnostics, top-K)", "scores"):
            d = _first_pass(src, [], topk, chunk_rows=kw["chunk_rows"],
                            progress=kw["progress"], client=kw["client"], device=kw["device"])
    # ``auto`` that chose rank is asked again, so the S_track manifests record the rule's
    # reading as aggregate() writes it (one moments pass more, for this rarer case)
    common = {"segments": segments, "normalize": setting.normalize,
              "chunk_rows": kw["chunk_rows"], "progress": kw["progress"],
              "client": kw["client"]}
    with passes.run("rank aggregation (original)", "scores"):
        original = aggregate(src, out=out["original"], **common)
    res = None
    if residual:
        with passes.run("residual pass (u1)", "scores"):
            read = _residual_pass(src, d, chunk_rows=kw["chunk_rows"], progress=kw["progress"],
                                  client=kw["client"])
        with passes.run("rank aggregation (residual)", "scores"):
            res = aggregate(src, out=out["residual"], residual=True, rank1=read.rank1, **common)
    return StageRead(d, original, res, "rank", tuple(passes.records))


class _RankChosen(Exception):
    """``auto`` chose rank after the stage pass (the sums are dropped)."""

    def __init__(self, d: Any) -> None:
        super().__init__("rank")
        self.d = d


def _read_zscore(setting: SettingSpec, src: Any, segments: Any,
                 segment_map: tuple[np.ndarray, np.ndarray], out: dict[str, Path],
                 topk: tuple[int, ...], residual: bool, passes: _Passes, **kw: Any) -> StageRead:
    """z-score (and ``auto``): the sums of the stage pass, finished into both ``S_track``."""
    from aria_tda.scores import open_scores
    from aria_tda.scores.aggregation import is_s_track, s_track_parameters
    from aria_tda.scores.lowrank import rank1_from_gram
    from aria_tda.scores.normalization import KURTOSIS_THRESHOLD, resolve_with_moments
    from aria_tda.scores.track_sums import TrackSums, finish_track_scores
    from aria_tda.scores.writers import ScoreWriter, check_output_space

    codes, track_ids = segment_map
    n_tracks = int(track_ids.size)
    identity = n_tracks == src.n_rows and bool(np.array_equal(codes, np.arange(src.n_rows)))
    counts = np.bincount(codes, minlength=n_tracks).astype(np.float64)
    shape = (n_tracks, src.n_cols)
    base = src.manifest or {}
    variants = ("original", "residual") if residual else ("original",)
    for v in variants:  # room for every S_track before the first pass
        check_output_space(out[v], shape, np.float64, row_ids=True)
    writer: dict[str, Any] = {"shape": shape, "dtype": np.float64, "kind": "track_scores",
              "row_ids": track_ids, "method": base.get("method"), "stage": base.get("stage"),
              "seed": base.get("seed"), "purpose": is_s_track, "overwrite": True}
    auto = setting.normalize == "auto"
    try:
        with ScoreWriter(out["original"], parameters={}, **writer) as w:
            sums = TrackSums(w.array, None if identity else codes, moments=4 if auto else 2)
            with passes.run("stage pass (diagnostics, top-K, track sums, moments)", "scores"):
                d = _first_pass(src, [sums], topk, chunk_rows=kw["chunk_rows"],
                                progress=kw["progress"], client=kw["client"],
                                device=kw["device"])
            chosen, moments, details = resolve_with_moments(
                setting.normalize, KURTOSIS_THRESHOLD, lambda _kurtosis: sums.column_moments())
            if chosen == "rank":
                raise _RankChosen(d)
            assert moments is not None and sums.stats is not None
            w.fields["parameters"] = s_track_parameters(src, segments, details, residual=False)
            gram = np.zeros((src.n_cols, src.n_cols)) if gram_fits(src) else None
            # the S_track Gram's products in the scores' own precision (as the diagnostics')
            gram_dtype = np.float32 if np.dtype(src.block_dtype).itemsize <= 4 else np.float64
            if not residual:
                with passes.run("S_track written", "track sums"):
                    finish_track_scores(w.array, counts, moments, sums.stats.shift, gram=gram,
                                        gram_dtype=gram_dtype)
            else:
                with passes.run("residual pass (u1, residual moments)", "scores"):
                    read = _residual_pass(src, d, chunk_rows=kw["chunk_rows"],
                                          progress=kw["progress"], client=kw["client"])
                with passes.run("S_track written (original, residual)", "track sums"), \
                        ScoreWriter(out["residual"], parameters={}, **writer) as wr:
                    finish_track_scores(w.array, counts, moments, sums.stats.shift,
                                        residual=(wr.array, read, None if identity else codes),
                                        gram=gram, gram_dtype=gram_dtype)
                    wr.fields["parameters"] = s_track_parameters(
                        src, segments, details, residual=True)
    except _RankChosen as chose:
        return _read_rank(setting, src, segments, out, topk, residual, passes, chose.d, **kw)
    original = open_scores(out["original"])
    r1 = None
    if gram is not None:
        with passes.run("rank-1 of S_track (from its Gram)", "S_track"):
            r1 = rank1_from_gram(original, gram, chunk_rows=kw["chunk_rows"])
    return StageRead(d, original, open_scores(out["residual"]) if residual else None, chosen,
                     tuple(passes.records), r1)
