"""``aria-tda embed``: time-averaged encoder embeddings of a corpus, written to an embedding store.

:func:`embed_to_store` is the extraction engine of ``aria-tda features``
(:func:`aria_tda.features.extract.extract_to_store`) with a pluggable extractor
(:mod:`aria_tda.embed.extractor`): the same inputs (an audio folder, a ``.txt`` list or a tracks
CSV with ``path[,track_id,metadata...]``), the same resumable Parquet store (tracks already in
it are skipped), the same worker processes or Dask cluster (``client=``; a file a worker dies
on is recorded, the run goes on) and the same errors table for unreadable audio. The store has
modality ``"embedding"`` and one vector feature ``"embedding"``
(:mod:`aria_tda.embed.store`).

Per file (paper, appendix "Embedding baselines"): the audio is read and mixed to mono,
resampled to the encoder's rate (:mod:`aria_tda.embed.audio`), windowed as the encoder expects
(inside :meth:`aria_tda.embed.encoders.Encoder.embed_frames`) and averaged over time. With
``segment_seconds`` the same is done per segment (rows ``"<track>#<k:04d>"`` with
``source_track``, ``segment``, ``start``, ``end`` metadata).

Manifest: ``params["encoder"]`` records the encoder's :meth:`~aria_tda.embed.encoders.Encoder.info`
fields that define the numbers (registry name, checkpoint SHA-256, layer, sample rate, window,
dim), ``params["audio"]`` the reading/resampling rule, ``params["segments"]`` the segment
length; ``versions`` the packages. Resuming a store with another encoder, checkpoint, layer
or segment length is refused (:class:`~aria_tda.errors.ManifestMismatchError`); the device, the
checkpoint's path and the number of workers may change between runs.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from aria_tda.errors import ParameterError, expected

__all__ = ["embed_to_store"]


def embed_to_store(
    source: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    encoder: str,
    weights: str | os.PathLike[str] | None = None,
    layer: int | None = None,
    segment_seconds: float | None = None,
    workers: int = 1,
    overwrite: bool = False,
    metadata: Any = None,
    progress: bool | None = None,
    device: str = "cpu",
    client: Any = None,
) -> dict[str, Any]:
    """Embed every audio file of ``source`` with ``encoder`` into the embedding store ``out``.

    Parameters
    ----------
    source : path
        Audio folder (searched recursively), ``.txt`` list of paths, or ``.csv``/``.tsv`` list
        with a ``path`` column (optional ``track_id``; other columns become metadata).
    out : path
        Store directory (created, or resumed).
    encoder : str
        Registry name (:data:`aria_tda.embed.encoders.ENCODERS`: mert, clap, clews, clews-style,
        mert-style, clap-style).
    weights : path, optional
        The encoder's local checkpoint (required; the error names the file to obtain).
    layer : int, optional
        Hidden layer to pool (encoders with layers; default: the encoder's).
    segment_seconds : float, optional
        Also cut each track into segments of this length, one row per segment.
    workers : int
        Worker processes (1 = this process); each loads the encoder once. With several
        workers torch uses ``cpu_count // workers`` threads in each.
    overwrite : bool
        Start a fresh store instead of resuming.
    metadata : DataFrame | path, optional
        Extra per-track metadata (``track_id`` column), e.g. genre.
    progress : bool, optional
        Progress bar (default: on a terminal).
    device : str
        Torch device of the encoder (``"cpu"``, ``"cuda"``, ...).
    client : dask.distributed.Client, optional
        Embed on this Dask cluster instead (:func:`aria_tda._dask.open_client`; ``workers`` is
        then not used): one task per file, each worker process loads the encoder once (its
        torch threads as Dask's worker environment sets them) and reads the checkpoint and
        the audio files itself, so all must see these paths.

    Returns
    -------
    dict
        ``n_inputs``, ``n_extracted`` (rows written now), ``n_skipped``, ``n_errors``,
        ``store``, and ``encoder`` (the encoder's :meth:`~aria_tda.embed.encoders.Encoder.info`).
    """
    from aria_tda._checks import check_float, check_int
    from aria_tda.embed import extractor
    from aria_tda.embed.audio import RESAMPLER
    from aria_tda.embed.encoders.registry import ENCODERS, load_encoder
    from aria_tda.embed.store import ENCODER_KEYS
    from aria_tda.features.extract import extract_to_store

    workers = check_int("workers", workers, min_value=1)
    if layer is not None:
        layer = check_int("layer", layer, min_value=0)
    if segment_seconds is not None:
        segment_seconds = check_float("segment_seconds", segment_seconds, min_value=0.0,
                                      min_inclusive=False)
    if not isinstance(device, str) or not device.strip():
        raise ParameterError(expected("device", "a torch device name", device))
    if weights is not None:
        weights = Path(weights).absolute()
    enc = load_encoder(encoder, weights=weights, layer=layer, device=device)
    info = dict(enc.info())
    spec = ENCODERS[encoder]
    record = {k: info.get(k) for k in ENCODER_KEYS}
    how: dict[str, Any] = {
        "loader": spec.loader, "weights": None if weights is None else str(weights),
        "layer": layer, "device": device, "name": encoder,
    }
    if workers == 1 and client is None:  # the run is in this process: reuse this encoder
        extractor.remember(enc, **how)
    del enc  # with workers, each loads its own; this copy is not kept alive beside them
    threads = max(1, (os.cpu_count() or 1) // workers) if workers > 1 and client is None else None
    summary = extract_to_store(
        source,
        out,
        modality="embedding",
        params={"encoder": record, "audio": RESAMPLER},
        segments={"seconds": segment_seconds} if segment_seconds is not None else None,
        workers=workers,
        flush_every=64,
        overwrite=overwrite,
        metadata=metadata,
        progress=progress,
        extractor="aria_tda.embed.extractor",
        options={**how, "threads": threads},
        client=client,
    )
    return {**summary, "encoder": info}
