r"""Track aggregation of normalised segment scores (paper §3.1, Eq. track-agg).

.. math::

    S^{\mathrm{track}}_{ij} = \frac{1}{n_i} \sum_{k=1}^{n_i} \tilde S^{\mathrm{seg}}_{(i,k),\,j}

where :math:`\tilde S^{\mathrm{seg}}` is the per-query normalised segment matrix
(:mod:`aria_tda.scores.normalization`) and :math:`n_i` the number of segments of track ``i``.
Optionally the rank-1 residual :math:`S - \sigma_1 u_1 v_1^\top` (§4.4) is normalised and
aggregated instead.

The segment → track map is :mod:`aria_tda.scores.segment_map`.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from aria_tda._io import check_space
from aria_tda.errors import ParameterError, expected
from aria_tda.scores.lowrank import Rank1
from aria_tda.scores.lowrank import residual as _residual
from aria_tda.scores.normalization import (
    IN_MEMORY_BYTES,
    KURTOSIS_THRESHOLD,
    ZScoreSource,
    check_finite_columns,
    iter_column_blocks,
    normalize_reference,
    rank_block,
    resolve_method,
    warn_constant_zscore,
)
from aria_tda.scores.readers import as_source, open_scores
from aria_tda.scores.segment_map import describe_segments, segment_codes
from aria_tda.scores.source import ArraySource, ScoreSource
from aria_tda.scores.writers import (
    ScoreWriter,
    check_not_input,
    check_output_path,
    check_output_space,
)

__all__ = ["aggregate", "is_s_track", "s_track_parameters"]

def _check_transpose_space(src: ScoreSource, tmp_dir: Any) -> None:
    """Room in ``tmp_dir`` for the rank path's temporary transpose, when it will make one
    (the condition of :func:`~aria_tda.scores.normalization.iter_column_blocks`)."""
    m, t = src.shape
    if isinstance(src, ArraySource) or m * t * 8 <= IN_MEMORY_BYTES:
        return
    where = Path(tmp_dir) if tmp_dir is not None else Path(tempfile.gettempdir())
    check_space(where / "transpose", m * t * src.block_dtype.itemsize)


def is_s_track(manifest: dict[str, Any]) -> bool:
    """Whether a ``track_scores`` manifest is an S_track of :func:`aggregate` (it records the
    normalisation), not another track-level matrix (``aria-tda retrieve``'s cosine scores).

    Parameters
    ----------
    manifest : dict
        A score file's manifest.
    """
    return "normalize" in (manifest.get("parameters") or {})


def s_track_parameters(src: ScoreSource, segments: Any, details: dict[str, Any], *,
                       residual: bool, source_path: Any = None,
                       base_manifest: dict[str, Any] | None = None) -> dict[str, Any]:
    """The ``parameters`` of an ``S_track`` manifest (what :func:`aggregate` records).

    Parameters
    ----------
    src : ScoreSource
        The segment-level matrix read (its rows and how it was read).
    segments : None, path or array-like
        The segment map given.
    details : dict
        The normalisation's record (:func:`~aria_tda.scores.normalization.resolve_with_moments`).
    residual : bool
        Whether this is the rank-1 residual's ``S_track``.
    source_path : path-like, optional
        The score file (default: ``src.path``).
    base_manifest : dict, optional
        The score file's manifest (default: ``src.manifest``).
    """
    base = (src.manifest or {}) if base_manifest is None else base_manifest
    path = src.path if source_path is None else source_path
    return {
        **details,
        "residual": residual,
        "segments": describe_segments(segments),
        "n_segments": src.n_rows,
        "source": None if path is None else str(path),
        "source_parameters": base.get("parameters"),
        "input": src.provenance(),  # how the file was read: summed keys, partitions, transpose
    }


def aggregate(
    scores: Any,
    *,
    segments: Any = None,
    normalize: str = "zscore",
    residual: bool = False,
    out: str | os.PathLike[str] | None = None,
    chunk_rows: int | None = None,
    tracks: Any = None,
    key: str | None = None,
    kurtosis_threshold: float = KURTOSIS_THRESHOLD,
    tmp_dir: str | os.PathLike[str] | None = None,
    progress: bool | None = None,
    transpose: bool = False,
    client: Any = None,
    overwrite: bool = False,
    rank1: Rank1 | None = None,
) -> ScoreSource:
    r"""``S_track`` ``(N, T)``: normalise each query's column, then average segments per track.

    Parameters
    ----------
    scores : array-like, torch.Tensor, ScoreSource or path
        Segment-level scores ``(M, T)``.
    segments : None, array-like [shape=(M,)], DataFrame or path
        Segment → track map (module docstring); ``None`` is the identity.
    normalize : {"zscore", "rank", "auto"}
        Per-query normalisation (:mod:`aria_tda.scores.normalization`).
    residual : bool
        Use the rank-1 residual :math:`S - \sigma_1 u_1 v_1^\top` (two extra passes).
    out : path-like, optional
        Write ``S_track`` (``.npy``/``.zarr``, float64) with row ids = track ids and a
        manifest; nothing is left under ``out`` if anything fails. Checked before any work:
        never one of the inputs (``scores``, ``segments``), never an existing file that ARIA
        did not write as ``S_track`` unless ``overwrite``, and room on its disk.
    chunk_rows : int, optional
        Rows per streamed block.
    tracks : array-like of str, optional
        Known track ids, in output order (e.g. a feature store's ``track_ids``).
    key : str, optional
        Array to read from an ``.npz``/torch dict/zarr group.
    kurtosis_threshold : float
        :math:`\tau` of the ``auto`` rule.
    tmp_dir : path-like, optional
        Where the rank path may put its temporary transpose.
    progress : bool, optional
        Draw progress bars.
    transpose : bool
        ``scores`` is stored queries x training segments (captum TracInCP, LogIX): aggregate
        its transpose. A matrix whose columns, not rows, match the segment map is refused
        with "looks transposed".
    client : dask.distributed.Client, optional
        Run the passes as Dask tasks (:mod:`aria_tda.scores.distributed_aggregate`): per row
        range for the residual, the moments and the z-score sums (merged in float64 here),
        per block of query columns for rank. A file is re-opened by path in the workers, an
        in-memory matrix scattered once. Equal to the single-machine result up to rounding.
    overwrite : bool
        Replace an existing ``out`` that ARIA did not write as ``S_track`` (a user's file, a
        segment-level matrix); an earlier ``S_track`` is always replaced.
    rank1 : Rank1, optional
        With ``residual``: the leading triple of ``scores`` when it is known already (from the
        diagnostics' Gram and one ``S v_1`` pass, :func:`aria_tda.scores.track_sums.residual_pass`),
        so the two passes that find it are not run again.

    Returns
    -------
    ScoreSource
        ``(N, T)`` float64 with ``row_ids`` = track ids; ``manifest["parameters"]`` records the
        normalisation used (``normalize``), what was asked (``normalize_requested``) and, for
        ``auto``, the median excess kurtosis.
    """
    if out is not None:
        check_output_path("out", out, kind="track_scores", overwrite=overwrite,
                          inputs={"scores": scores, "segments": segments}, purpose=is_s_track)
    src = as_source(scores, key=key, transpose=transpose)
    if out is not None:
        check_not_input("out", out, {"scores": src.path})
    if not isinstance(residual, bool):
        raise ParameterError(expected("residual", "True or False", residual))
    if rank1 is not None and not isinstance(rank1, Rank1):
        raise ParameterError(expected("rank1", "a Rank1 (aria_tda.scores.rank1())",
                                      type(rank1).__name__))
    codes, track_ids = segment_codes(
        segments, n_rows=src.n_rows, row_ids=src.row_ids, tracks=tracks, n_cols=src.n_cols,
        transpose=transpose,
    )
    n_tracks = track_ids.size
    if out is not None:  # before the first pass: room for S_track (and a zarr's staging copy)
        check_output_space(out, (n_tracks, src.n_cols), np.float64, row_ids=True, staged=True)
    counts = np.bincount(codes, minlength=n_tracks).astype(np.float64)
    identity = n_tracks == src.n_rows and bool(np.array_equal(codes, np.arange(src.n_rows)))
    base_manifest = src.manifest or {}
    source_path = src.path
    job = None
    if client is not None:
        from aria_tda.scores.distributed_aggregate import DaskAggregation

        job = DaskAggregation(src, client, chunk_rows=chunk_rows, progress=progress)
        job.rank1 = rank1 if residual else None
        chosen, moments, details = job.resolve(
            normalize, residual=residual, kurtosis_threshold=kurtosis_threshold
        )
    else:
        if residual:
            src = _residual(src, rank1=rank1, chunk_rows=chunk_rows, progress=progress)
        chosen, moments, details = resolve_method(
            src,
            normalize,
            kurtosis_threshold=kurtosis_threshold,
            chunk_rows=chunk_rows,
            progress=progress,
        )
    if out is not None and tmp_dir is None:
        tmp_dir = Path(out).absolute().parent
    if chosen == "rank" and job is None:
        _check_transpose_space(src, tmp_dir)
    params = s_track_parameters(src, segments, details, residual=residual,
                                source_path=source_path, base_manifest=base_manifest)
    shape = (n_tracks, src.n_cols)

    def fill(target: np.ndarray) -> None:
        if job is not None:
            job.fill(target, chosen, moments, codes, counts, identity)
            return
        _fill(
            target,
            src,
            chosen,
            moments,
            codes,
            counts,
            identity,
            chunk_rows=chunk_rows,
            tmp_dir=tmp_dir,
            progress=progress,
        )

    if out is not None:
        with ScoreWriter(
            out,
            shape=shape,
            dtype=np.float64,
            kind="track_scores",
            row_ids=track_ids,
            method=base_manifest.get("method"),
            stage=base_manifest.get("stage"),
            parameters=params,
            seed=base_manifest.get("seed"),
            overwrite=overwrite,
            purpose=is_s_track,
        ) as w:
            fill(w.array)
        return open_scores(out)
    target = np.zeros(shape)
    fill(target)
    manifest = {"kind": "track_scores", "parameters": params, "method": base_manifest.get("method")}
    return ArraySource(target, row_ids=track_ids, manifest=manifest)


def _fill(
    target: np.ndarray,
    src: ScoreSource,
    method: str,
    moments: Any,
    codes: np.ndarray,
    counts: np.ndarray,
    identity: bool,
    *,
    chunk_rows: int | None,
    tmp_dir: Any,
    progress: bool | None,
) -> None:
    """Write S_track into ``target`` ``(N, T)`` (zero-initialised)."""
    from scipy import sparse

    if method == "zscore":
        warn_constant_zscore(moments.constant)
        z = ZScoreSource(src, moments)
        for s, block in z.iter_chunks(
            chunk_rows, progress=progress, desc="aggregate", reuse_buffers=True
        ):
            e = s + block.shape[0]
            if identity:
                target[s:e] = block
                continue
            u, inv = np.unique(codes[s:e], return_inverse=True)
            ind = sparse.csr_matrix(
                (np.ones(e - s), (inv, np.arange(e - s))), shape=(u.size, e - s)
            )
            target[u] += ind @ block
        if not identity:
            step = max(1, (64 * 2**20) // (8 * target.shape[1]))
            for r in range(0, target.shape[0], step):
                target[r : r + step] /= counts[r : r + step, None]
        return
    # rank: whole columns, a few at a time
    m = src.n_rows
    avg = None
    if not identity:
        avg = sparse.csr_matrix(
            (1.0 / counts[codes], (np.arange(m), codes)), shape=(m, counts.size)
        )
    for c0, c1, bt in iter_column_blocks(
        src, chunk_rows=chunk_rows, tmp_dir=tmp_dir, progress=progress
    ):
        check_finite_columns(bt, c0)
        ranks = rank_block(bt)  # (w, M)
        target[:, c0:c1] = ranks.T if avg is None else avg.T @ ranks.T


def aggregate_reference(
    scores: Any,
    *,
    segments: Any = None,
    normalize: str = "zscore",
    residual: bool = False,
    out: str | os.PathLike[str] | None = None,
    chunk_rows: int | None = None,
    tracks: Any = None,
    key: str | None = None,
    kurtosis_threshold: float = KURTOSIS_THRESHOLD,
    tmp_dir: str | os.PathLike[str] | None = None,
    progress: bool | None = None,
    transpose: bool = False,
    client: Any = None,
    overwrite: bool = False,
    rank1: Rank1 | None = None,
) -> ScoreSource:
    r"""In-memory reference of :func:`aggregate` (Eq. track-agg) on the whole matrix.

    The rank-1 residual from ``np.linalg.svd``, :func:`normalize_reference`, then a plain
    group mean per track.

    Parameters
    ----------
    scores : array-like, torch.Tensor, ScoreSource or path
        ``(M, T)``, read whole.
    segments : None, array-like [shape=(M,)], DataFrame or path
        Segment → track map.
    normalize : {"zscore", "rank", "auto"}
        Per-query normalisation.
    residual : bool
        Use :math:`S - \sigma_1 u_1 v_1^	op`.
    out : path-like, optional
        Also write ``S_track`` there.
    chunk_rows : int, optional
        Ignored.
    tracks : array-like of str, optional
        Known track ids, in output order.
    key : str, optional
        Array of a file with several.
    kurtosis_threshold : float
        :math:`	au` of the ``auto`` rule.
    tmp_dir : path-like, optional
        Ignored.
    progress : bool, optional
        Ignored.
    transpose : bool
        Aggregate the transpose of ``scores``.
    client : dask.distributed.Client, optional
        Ignored.
    overwrite : bool
        Replace an existing ``out`` that ARIA did not write as ``S_track``.
    rank1 : Rank1, optional
        With ``residual``: subtract this triple instead of the SVD's.
    """
    if out is not None:
        check_output_path("out", out, kind="track_scores", overwrite=overwrite,
                          inputs={"scores": scores, "segments": segments}, purpose=is_s_track)
    src = as_source(scores, key=key, transpose=transpose)
    if not isinstance(residual, bool):
        raise ParameterError(expected("residual", "True or False", residual))
    codes, track_ids = segment_codes(
        segments, n_rows=src.n_rows, row_ids=src.row_ids, tracks=tracks, n_cols=src.n_cols,
        transpose=transpose,
    )
    s = np.asarray(src.to_numpy(), dtype=np.float64)
    if residual and rank1 is not None:
        s = s - rank1.sigma1 * np.outer(rank1.u1, rank1.v1)
    elif residual:
        u, sv, vt = np.linalg.svd(s, full_matrices=False)
        s = s - sv[0] * np.outer(u[:, 0], vt[0])
    norm_src = normalize_reference(s, method=normalize, kurtosis_threshold=kurtosis_threshold)
    norm = norm_src.to_numpy()
    result = np.zeros((track_ids.size, norm.shape[1]))
    for i in range(track_ids.size):
        result[i] = norm[codes == i].mean(axis=0)
    params = {**(norm_src.manifest or {}).get("parameters", {}), "residual": residual}
    if out is None:
        return ArraySource(
            result, row_ids=track_ids, manifest={"kind": "track_scores", "parameters": params}
        )
    with ScoreWriter(
        out,
        shape=result.shape,
        dtype=np.float64,
        kind="track_scores",
        row_ids=track_ids,
        parameters=params,
        overwrite=overwrite,
        purpose=is_s_track,
    ) as w:
        w.write_rows(0, result)
    return open_scores(out)
