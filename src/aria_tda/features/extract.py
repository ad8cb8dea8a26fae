"""The extraction engine behind ``aria-tda features``: input lists → per-file extractors → a store.

:func:`collect_inputs` resolves ``INPUT_DIR_OR_LIST`` to track ids, paths and metadata rows;
:func:`extract_to_store` runs the modality's per-file extractor
(``aria_tda.features.<modality>.extract_file`` / ``extract_file_record`` /
``extract_file_segments``) over them, in this process, in worker processes
(:mod:`aria_tda.features.process_pool`) or on a Dask cluster (``client=``,
:mod:`aria_tda.features._dask_extract`: one task per file, results written in file order, so every
path writes the same store), and appends the results to a resumable feature store through
:class:`~aria_tda.features.store.StoreWriter` (the store format lives in
:mod:`aria_tda.features.store`).

Pluggable extractors: ``extractor="package.module"`` runs another module with the same
interface (``extract_file`` / ``extract_file_record`` / ``extract_file_segments`` and the
optional hooks below) — how ``aria-tda embed`` (:mod:`aria_tda.embed`) fills an ``"embedding"``
store with encoder embeddings without this engine knowing about encoders. ``options`` are keyword
arguments passed to the extractor beside ``params`` but not recorded in the store (how to run
it — a device, a checkpoint path whose digest ``params`` records — not what it computes).

Safety: every parameter (the segmentation included) is checked before the store is created or
touched, so a rejected value is never recorded; the store's writer lock is held for the whole
run (:class:`~aria_tda.features.store.StoreWriter`), so a second writer is refused in one line;
``metadata`` rows that match no input track are named (a warning; an error when none match),
and a blank or repeated id there, or a blank path in a tracks list, is an error naming the line.

Failures never stop a run: a file the extractor rejects, and a file whose worker *died* on it
(a segfault, the OOM killer), is recorded in the store's errors table — the latter with one
warning line naming the file and the signal — and the run goes on with a fresh worker.

Before workers start, a modality module may prepare shared state through an optional hook
``prepare_workers(params, *, force=False)``; the audio extractor uses it to warm librosa's
numba JIT cache once, under a lock (:mod:`aria_tda.features.audio.jit`), and calls it again with
``force=True`` after a worker died (a corrupt cache is then detected and rebuilt). Before any
of that, numba's cache is pointed at ARIA's per-user directory
(:func:`aria_tda.features.audio.jit.configure_numba_cache`) for every modality, so that no kernel
(librosa's, or the symbolic grid sweep) is ever cached inside the virtual environment.

Metadata: a modality module lists the metadata columns it records itself in
``RESERVED_METADATA`` (``source`` is always ARIA's). User metadata columns — from a CSV input
list or the ``metadata`` table — with one of those names are refused before anything is
written (:class:`~aria_tda.errors.DataError` naming the columns), so they are never silently
overwritten; should an extractor return a metadata key that a user column also holds,
ARIA's value is stored as ``aria_<key>`` instead.
"""

from __future__ import annotations

import importlib
import os
import time
import warnings
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from aria_tda.errors import AriaWarning, DataError, FileFormatError, ParameterError, expected
from aria_tda.features.per_file import configure_jit_cache, extract_task
from aria_tda.features.store import StoreWriter
from aria_tda.features.store_format import STORE_MODALITIES, STORE_MODALITY_TEXT
from aria_tda.features.store_writing import check_track_ids, is_null, plain_value

__all__ = ["SUFFIXES", "collect_inputs", "extract_to_store"]

#: file suffixes collected from an input directory, per modality
SUFFIXES = {
    "symbolic": (".mid", ".midi", ".kar", ".smf"),
    "audio": (".wav", ".flac", ".mp3", ".ogg", ".oga", ".opus", ".m4a", ".aif", ".aiff", ".au"),
}
SUFFIXES["embedding"] = SUFFIXES["audio"]  # encoder embeddings of audio files (aria-tda embed)
#: modalities with an extractor in this package (``aria_tda.features.<modality>``)
_BUILTIN = ("symbolic", "audio")
#: metadata columns of a segmented extraction (one row per window)
SEGMENT_METADATA = ("source_track", "source", "segment", "start", "end", "n_notes")


def collect_inputs(
    source: str | os.PathLike[str], *, modality: str
) -> tuple[list[str], list[Path], list[dict[str, Any]]]:
    """Resolve ``INPUT_DIR_OR_LIST`` to ``(track_ids, paths, metadata rows)``.

    - a directory: every file with a known suffix of ``modality`` (:data:`SUFFIXES`), searched
      recursively, sorted; track id = relative POSIX path without the suffix;
    - a ``.csv`` / ``.tsv`` list: column ``path`` (relative paths resolve against the list's
      folder), optional ``track_id``; every other column becomes metadata (e.g. ``genre``);
    - any other text file: one path per line (``#`` comments and blank lines ignored);
    - a single media file.

    Parameters
    ----------
    source : path
        The input directory, list file or media file.
    modality : {"symbolic", "audio", "embedding"}
        Which file suffixes a directory scan collects (``"embedding"``: the audio ones).

    Raises
    ------
    FileFormatError
        missing input; :class:`DataError` when nothing is found or ids repeat.
    """
    from aria_tda._checks import check_existing_path

    src = check_existing_path("input", source)
    suffixes = SUFFIXES[modality]
    rows: list[dict[str, Any]] = []
    if src.is_dir():
        files = sorted(
            f
            for f in src.rglob("*")
            if f.is_file() and f.suffix.lower() in suffixes and not f.name.startswith(".")
        )
        ids = [f.relative_to(src).with_suffix("").as_posix() for f in files]
        rows = [{} for _ in files]
        if not files:
            raise DataError(
                f"input: no {modality} files ({', '.join(suffixes)}) under {str(src)!r}"
            )
    elif src.suffix.lower() in suffixes:
        files, ids, rows = [src], [src.stem], [{}]
    else:
        base = src.parent
        entries = _read_list(src)
        blank = [int(e["_line"]) for e in entries if not str(e["path"]).strip()]
        if blank:
            raise DataError(
                f"input: the list {str(src)!r} has a blank path on "
                f"{_lines(blank)}; every row must name a file"
            )
        files, ids = [], []
        for e in entries:
            f = Path(str(e["path"]).strip())
            f = f if f.is_absolute() else base / f
            files.append(f)
            tid = str(e.get("track_id") or "")
            if not tid:
                try:
                    tid = f.resolve().relative_to(base.resolve()).with_suffix("").as_posix()
                except ValueError:
                    tid = f.stem
            ids.append(tid)
            rows.append(
                {k: v for k, v in e.items() if k not in ("path", "track_id", "_line") and v != ""}
            )
        if not files:
            raise DataError(f"input: the list {str(src)!r} names no files")
        _check_unique(ids, [f"line {e['_line']}" for e in entries], f"the list {str(src)!r}")
    _check_unique(ids, [str(f) for f in files], f"{str(src)!r}")
    check_track_ids(ids)
    return ids, files, rows


def _lines(numbers: list[int]) -> str:
    """``line 4`` / ``lines 4, 7, 9`` (the first five, then the count)."""
    shown = ", ".join(map(str, numbers[:5])) + (f", ... ({len(numbers)} in all)"
                                               if len(numbers) > 5 else "")
    return f"line {shown}" if len(numbers) == 1 else f"lines {shown}"


def _check_unique(ids: list[str], where: list[str], source: str) -> None:
    """Refuse a track id given twice, naming the source and where each comes from."""
    seen: dict[str, int] = {}
    for i, t in enumerate(ids):
        if t in seen:
            raise DataError(
                f"input: {source}: expected unique track ids, got {t!r} twice "
                f"({where[seen[t]]} and {where[i]})"
            )
        seen[t] = i


def _read_list(src: Path) -> list[dict[str, Any]]:
    if src.suffix.lower() in (".csv", ".tsv"):
        import pandas as pd

        sep = "\t" if src.suffix.lower() == ".tsv" else ","
        try:
            df = pd.read_csv(src, sep=sep, dtype=str, keep_default_na=False)
        except (OSError, ValueError) as exc:
            raise FileFormatError(f"input: unreadable list {str(src)!r}: {exc}") from None
        if "path" not in df.columns:
            raise DataError(expected("input", "a CSV list with a 'path' column", list(df.columns)))
        if "_line" in df.columns:
            raise DataError(f"input: the list {str(src)!r} has a column '_line'; rename it")
        # line numbers of the file (header = line 1; a quoted cell spanning lines shifts them)
        return [{**r, "_line": i + 2} for i, r in enumerate(df.to_dict("records"))]
    try:
        text = src.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise FileFormatError(f"input: unreadable list {str(src)!r}: {exc}") from None
    return [
        {"path": ln.strip(), "_line": i + 1}
        for i, ln in enumerate(text.splitlines())
        if ln.strip() and not ln.lstrip().startswith("#")
    ]


def _merge_feature_batches(batches: list[dict[str, Any]], counts: list[int]) -> dict[str, Any]:
    """Stack per-file feature dicts (``counts[i]`` rows each); a feature a file lacks is missing."""
    names = list(dict.fromkeys(k for b in batches for k in b))
    out: dict[str, Any] = {}
    for k in names:
        parts = [b.get(k) for b in batches]
        arrays = [p for p in parts if isinstance(p, np.ndarray)]
        if len(arrays) == len(parts):
            out[k] = np.concatenate(arrays, axis=0)
        else:
            out[k] = [
                x
                for p, c in zip(parts, counts, strict=True)
                for x in (list(p) if p is not None else [None] * c)
            ]
    return out


def _merge_meta(user: Mapping[str, Any], own: Mapping[str, Any]) -> dict[str, Any]:
    """User metadata plus ARIA's own; a clashing key of ARIA's is stored as ``aria_<key>``."""
    out = dict(user)
    for k, v in own.items():
        out[f"aria_{k}" if k in user else k] = v
    return out


# --------------------------------------------------------------------------- the engine


def _extractor_name(modality: str, extractor: str | None) -> str:
    """The module that extracts ``modality``: ``extractor`` or ``aria_tda.features.<modality>``."""
    if extractor is not None:
        if not isinstance(extractor, str) or not extractor:
            raise ParameterError(expected("extractor", "a module name (str)", extractor))
        return extractor
    if modality not in _BUILTIN:
        raise ParameterError(
            expected("extractor", f"a module name for modality {modality!r}", None)
        )
    return f"aria_tda.features.{modality}"


def _extractor_module(modality: str, name: str) -> Any:
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name == name:
            raise ParameterError(
                f"modality: the {modality} extractor ({name}) is not "
                "available in this installation"
            ) from None
        raise


def _check_metadata_clash(
    mod: Any,
    segments: Any,
    rows: list[dict[str, Any]],
    extra: dict[str, dict[str, Any]],
    source: Any,
    metadata: Any,
) -> None:
    reserved = set(SEGMENT_METADATA) if segments else {"source"}
    if not segments:
        reserved.update(getattr(mod, "RESERVED_METADATA", ()))
    for where, cols in (
        (f"the input list {str(source)!r}", {k for r in rows for k in r}),
        (
            f"the metadata table {str(metadata)!r}"
            if isinstance(metadata, (str, os.PathLike))
            else "the metadata table",
            {k for r in extra.values() for k in r},
        ),
    ):
        clash = sorted(cols & reserved)
        if clash:
            names = ", ".join(repr(c) for c in clash)
            raise DataError(
                f"metadata: {where} has column(s) {names} that ARIA records itself "
                f"({', '.join(sorted(reserved))}); rename them (e.g. 'user_{clash[0]}') so "
                "neither is overwritten"
            )


def extract_to_store(
    source: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    modality: str,
    params: Mapping[str, Any] | None = None,
    segments: Mapping[str, Any] | None = None,
    workers: int = 1,
    flush_every: int = 256,
    overwrite: bool = False,
    metadata: Any = None,
    progress: bool | None = None,
    extractor: str | None = None,
    options: Mapping[str, Any] | None = None,
    client: Any = None,
) -> dict[str, Any]:
    """Extract the features of a corpus into a feature store (resumable, process-parallel).

    Parameters
    ----------
    source : path
        ``INPUT_DIR_OR_LIST`` (:func:`collect_inputs`).
    out : path
        The store directory. Tracks already in it are skipped; files recorded as errors are
        retried. Other extraction parameters than the stored ones raise
        :class:`~aria_tda.errors.ManifestMismatchError` unless ``overwrite``.
    modality : {"symbolic", "audio", "embedding"}
        The store's modality; its extractor is ``aria_tda.features.<modality>.extract_file(path,
        **params)`` (or its ``extract_file_record`` returning ``(features, metadata)`` when
        provided) unless ``extractor`` names another module (required for ``"embedding"``).
    params : mapping, optional
        Keyword arguments of the extractor (recorded in the store).
    segments : mapping, optional
        Cut each file into windows with the extractor's ``extract_file_segments(path,
        **segments, **params)`` (symbolic: ``seconds``, ``hop``, ``n_notes``); rows are then
        ``"<track id>#<k:04d>"``. Only for extractors that provide it.
    workers : int
        Processes (1 = in this process). A worker that dies on a file is replaced; the file
        is recorded in the errors table.
    flush_every : int
        Tracks per Parquet part (a crash loses at most this many); buffered results are also
        written after :data:`FLUSH_SECONDS` (60 s).
    overwrite : bool
        Start a fresh store instead of resuming.
    metadata : DataFrame | path to CSV/Parquet, optional
        Extra per-track metadata (``track_id`` column or index), e.g. genre. Its columns, and
        a CSV input list's, must not be named like ARIA's own metadata (module docstring).
    progress : bool, optional
        Progress bar (default: on a terminal).
    extractor : str, optional
        Module name of a pluggable extractor (module docstring); imported in every worker.
    options : mapping, optional
        Keyword arguments passed to the extractor beside ``params``, not recorded in the
        store (so a resumed run may change them).
    client : dask.distributed.Client, optional
        Extract on this cluster (:func:`aria_tda._dask.open_client`): one task per pending file,
        a lost worker's files rescheduled by Dask, a file Dask gives up on recorded as an
        error (:mod:`aria_tda.features._dask_extract`); ``workers`` is then not used. The
        workers must see the input paths.

    Returns
    -------
    dict
        ``n_inputs``, ``n_extracted`` (tracks written now), ``n_skipped``, ``n_errors``,
        ``store`` (path).
    """
    from aria_tda._checks import check_int, check_writable_path

    # every parameter is checked before the first byte is written (and so never recorded)
    if modality not in STORE_MODALITIES:
        raise ParameterError(expected("modality", STORE_MODALITY_TEXT, modality))
    workers = check_int("workers", workers, min_value=1)
    flush_every = check_int("flush_every", flush_every, min_value=1)
    if not isinstance(overwrite, bool):
        raise ParameterError(expected("overwrite", "True or False", overwrite))
    if not isinstance(out, (str, os.PathLike)):
        raise ParameterError(expected("out", "a path", out))
    configure_jit_cache()  # before any numba kernel is compiled here or in a worker
    module = _extractor_name(modality, extractor)
    mod = _extractor_module(modality, module)
    segments = _check_segments(segments, mod, module)
    ids, files, rows = collect_inputs(source, modality=modality)
    extra = _load_extra_metadata(metadata)
    _check_metadata_clash(mod, segments, rows, extra, source, metadata)
    _check_metadata_ids(extra, ids, metadata)
    params = dict(params or {})
    if modality == "symbolic":
        from aria_tda.features.symbolic import SymbolicParams

        params = SymbolicParams.from_kwargs(params).to_dict()
    elif hasattr(mod, "AudioFeatureParams"):
        # checked here, once: a bad value (an unknown backend) is a user mistake of the run,
        # not an error of every file in a worker
        mod.AudioFeatureParams.from_kwargs(**params)
    check = getattr(mod, "check_dependencies", None)
    if callable(check):  # a missing package is the run's error, said before the store exists
        check(params)
    record = {**params, **({"segments": dict(segments)} if segments else {})}
    out_path = check_writable_path("out", out)
    # the store's writer lock is held from here to the end: a second writer is refused
    with StoreWriter(
        out_path,
        modality=modality,
        params=record,
        versions=_extractor_versions(modality, mod),
        overwrite=overwrite,
    ) as writer:
        stats = _run(writer, mod, module, modality, ids, files, rows, extra, params, segments,
                     options, workers, flush_every, progress, client)
    return {"n_inputs": len(ids), **stats, "store": str(out_path)}


def _run(writer: StoreWriter, mod: Any, module: str, modality: str, ids: list[str],
         files: list[Path], rows: list[dict[str, Any]], extra: dict[str, dict[str, Any]],
         params: dict[str, Any], segments: dict[str, Any] | None,
         options: Mapping[str, Any] | None, workers: int, flush_every: int,
         progress: bool | None, client: Any) -> dict[str, int]:
    """Extract the files the store lacks and append them (under the writer's lock)."""
    from aria_tda._progress import progress as bar

    done = writer.done
    kwargs = {**params, **dict(options or {})}
    todo = []
    for tid, f, row in zip(ids, files, rows, strict=True):
        key = f"{tid}#0000" if segments else tid
        if key in done:
            continue
        seg = dict(segments) if segments else None
        # the store records each file absolutely: its media resolve from any working folder
        todo.append(((modality, str(Path(f).absolute()), tid, kwargs, seg, module), row))
    n_skipped = len(ids) - len(todo)
    buf: list[tuple[Any, ...]] = []
    stats = {"n_skipped": n_skipped, "n_extracted": 0, "n_errors": 0}

    last_flush = [time.monotonic()]

    def flush() -> None:
        last_flush[0] = time.monotonic()
        if not buf:
            return
        items = list(buf)
        buf.clear()  # taken once: a write that fails (a full disk) is not retried by `finally`
        ok = [r for r in items if r[0] == "ok"]
        errs = [r for r in items if r[0] == "error"]
        if ok:
            tids = [t for r in ok for t in r[1]]
            meta_rows = [_merge_meta({**r[5], **extra.get(r[6], {})}, m) for r in ok for m in r[3]]
            batches = _merge_feature_batches([r[2] for r in ok], [len(r[1]) for r in ok])
            writer.append(tids, batches, meta_rows)
            stats["n_extracted"] += len(tids)
        writer.set_errors(
            [{"path": r[1], "track_id": r[2], "error": r[3]} for r in errs],
            clear=[r[7] for r in ok],
        )
        stats["n_errors"] += len(errs)

    tasks = [t for t, _ in todo]
    prepare = getattr(mod, "prepare_workers", None)
    if tasks and callable(prepare) and client is None:  # cluster workers prepare themselves
        prepare(params)
    deaths = {"n": 0}

    def on_death(died: Any) -> None:
        warnings.warn(
            f"worker died ({died.reason}) on {died.label}; recorded and skipped",
            AriaWarning,
            stacklevel=2,
        )
        deaths["n"] += 1
        if deaths["n"] == 1 and callable(prepare) and client is None:
            prepare(params, force=True)  # a corrupt JIT cache is detected and rebuilt here

    outcome: dict[str, Any] = {"ok": 0, "failed": 0, "first": None}
    with bar(total=len(tasks), desc=f"{modality} features", unit="file", enabled=progress) as pbar:
        results: Iterable[Any] = ()
        try:
            if client is not None:
                from aria_tda.features._dask_extract import run_dask

                results = run_dask(client, [(t[1], t) for t in tasks], on_death=on_death)
            elif workers == 1 or len(tasks) <= 1:
                results = map(extract_task, tasks)
            else:
                from aria_tda.features.process_pool import run_pool

                results = run_pool(
                    extract_task,
                    [(t[1], t) for t in tasks],
                    workers=workers,
                    on_death=on_death,
                )
            for (task, row), res in zip(todo, results, strict=False):
                if not isinstance(res, tuple):  # the worker died on this file
                    res = ("error", task[1], task[2], f"worker died ({res.reason})")
                if res[0] == "ok":
                    buf.append((*res, row, task[2], task[1]))
                    outcome["ok"] += 1
                else:
                    buf.append(res)
                    outcome["failed"] += 1
                    outcome["first"] = outcome["first"] or (res[1], res[3])
                pbar.update(1)
                _stop_if_nothing_works(outcome, len(tasks), len(done))
                n_buf = sum(len(r[1]) if r[0] == "ok" else 1 for r in buf)
                if n_buf >= flush_every or time.monotonic() - last_flush[0] >= FLUSH_SECONDS:
                    flush()
        finally:
            try:
                flush()
            finally:
                close = getattr(results, "close", None)
                if callable(close):  # stop the workers / cancel the cluster's tasks now
                    close()
    if tasks and outcome["ok"] == 0 and not done:
        _stop_if_nothing_works(outcome, len(tasks), len(done), at_end=True)
    return stats


#: Seconds after which buffered results are written as a part even below ``flush_every``: a
#: long extraction shows (and keeps, if killed) its first results within about a minute.
FLUSH_SECONDS = 60.0

#: A run whose first this-many files all fail (and whose store holds nothing yet) stops there.
FAIL_FAST = 8


def _stop_if_nothing_works(outcome: dict[str, Any], n_tasks: int, n_stored: int, *,
                           at_end: bool = False) -> None:
    """Stop a run in which every file so far failed and nothing is stored: the cause is the run's
    (a wrong path base, a missing dependency), not the files'. A store whose every input failed
    is never handed on as if it were finished; the failures stay recorded in its errors table."""
    if outcome["ok"] or n_stored or not outcome["failed"]:
        return
    if not at_end and outcome["failed"] < min(FAIL_FAST, n_tasks):
        return
    path, reason = outcome["first"]
    which = (f"all {n_tasks} input files" if outcome["failed"] == n_tasks
             else f"the first {outcome['failed']} of {n_tasks} input files")
    reason = " ".join(str(reason).split())
    raise DataError(f"input: {which} failed, nothing was extracted; the first, {path!r}: "
                    f"{reason}" + ("" if outcome["failed"] == n_tasks else " (stopped there)"))


def _check_segments(segments: Any, mod: Any, module: str) -> dict[str, Any] | None:
    """Check the segmentation before anything is written: exactly one of ``seconds`` (> 0) and
    ``n_notes`` (>= 1), an optional ``hop`` (> 0; whole notes >= 1 with ``n_notes``), and only
    keys the extractor's ``extract_file_segments`` takes."""
    import inspect

    from aria_tda._checks import check_float, check_int

    if segments is None:
        return None
    if not isinstance(segments, Mapping):
        raise ParameterError(expected("segments", "a mapping (seconds/hop/n_notes)", segments))
    if not segments:
        return None
    seg = dict(segments)
    fn = getattr(mod, "extract_file_segments", None)
    if fn is None:
        raise ParameterError(
            expected("segments", "an extractor with extract_file_segments (e.g. symbolic)", module)
        )
    # keys the function names (a catch-all **params takes the extractor's parameters instead)
    kinds = (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    named = [k for k, q in inspect.signature(fn).parameters.items()
             if k != "path" and q.kind in kinds]
    unknown = sorted(str(k) for k in seg if k not in named)
    if unknown:
        taken = ", ".join(k for k in named if k in ("seconds", "hop", "n_notes")) or "none"
        raise ParameterError(expected("segments", f"keys among {taken}", unknown))
    given = [k for k in ("seconds", "n_notes") if seg.get(k) is not None]
    if len(given) != 1 and (given or seg.get("hop") is not None):
        raise ParameterError(
            expected("segments", "exactly one of 'seconds' and 'n_notes'", given or ["hop"])
        )
    if seg.get("seconds") is not None:
        check_float("segments['seconds']", seg["seconds"], min_value=0.0, min_inclusive=False)
        if seg.get("hop") is not None:
            check_float("segments['hop']", seg["hop"], min_value=0.0, min_inclusive=False)
    elif seg.get("n_notes") is not None:
        check_int("segments['n_notes']", seg["n_notes"], min_value=1)
        if seg.get("hop") is not None:
            check_int("segments['hop']", seg["hop"], min_value=1)
    return seg


def _check_metadata_ids(extra: dict[str, dict[str, Any]], ids: list[str], metadata: Any) -> None:
    """Metadata rows that match no input track are never dropped silently: none matching is an
    error (the ids are of another kind), some not matching an :class:`AriaWarning`."""
    if not extra:
        return
    known = set(ids)
    unmatched = [t for t in extra if t not in known]
    if not unmatched:
        return
    where = (f"the metadata table {str(metadata)!r}" if isinstance(metadata, (str, os.PathLike))
             else "the metadata table")
    shown = ", ".join(map(repr, unmatched[:5])) + (", ..." if len(unmatched) > 5 else "")
    if len(unmatched) == len(extra):
        inputs = ", ".join(map(repr, ids[:3])) + (", ..." if len(ids) > 3 else "")
        raise DataError(
            f"metadata: none of the {len(extra)} track ids of {where} match an input track "
            f"(its: {shown}; the inputs': {inputs}); nothing would be joined"
        )
    warnings.warn(
        f"metadata: {len(unmatched)} of the {len(extra)} track ids of {where} match no input "
        f"track; their rows are not used: {shown}",
        AriaWarning,
        stacklevel=3,
    )


def _extractor_versions(modality: str, mod: Any) -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    hook = getattr(mod, "versions", None)
    if callable(hook):
        try:
            return {str(k): str(v) for k, v in dict(hook()).items()}
        except Exception:  # a versions() hook must never stop an extraction
            pass
    pkgs = ("mido", "numba") if modality == "symbolic" else ("librosa", "soundfile", "madmom")
    out = {}
    for pkg in pkgs:
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            continue
    return out


def _load_extra_metadata(metadata: Any) -> dict[str, dict[str, Any]]:
    if metadata is None:
        return {}
    if isinstance(metadata, (str, os.PathLike)):
        import pandas as pd

        from aria_tda._checks import check_existing_path

        p = check_existing_path("metadata", metadata, kind="file")
        try:
            if p.suffix.lower() == ".parquet":
                df = pd.read_parquet(p)
            else:
                df = pd.read_csv(p, dtype=str, keep_default_na=False)
        except (OSError, ValueError) as exc:
            raise FileFormatError(f"metadata: unreadable table {str(p)!r}: {exc}") from None
    else:
        df = metadata
    if "track_id" not in getattr(df, "columns", ()):
        if getattr(getattr(df, "index", None), "name", None) == "track_id":
            df = df.reset_index()
        else:
            cols = list(getattr(df, "columns", []))
            raise DataError(expected("metadata", "a table with a 'track_id' column", cols))
    where = (f"the metadata table {str(metadata)!r}" if isinstance(metadata, (str, os.PathLike))
             else "the metadata table")
    csv = isinstance(metadata, (str, os.PathLike)) and Path(metadata).suffix.lower() != ".parquet"
    out: dict[str, dict[str, Any]] = {}
    first: dict[str, int] = {}
    blank: list[int] = []
    for i, rec in enumerate(df.to_dict("records")):
        raw = rec.pop("track_id")
        row = i + 2 if csv else i + 1  # csv: the file's line (header = line 1); else the row
        tid = "" if is_null(raw) else str(raw)
        if not tid.strip():
            blank.append(row)
            continue
        if tid in first:
            unit = "lines" if csv else "rows"
            raise DataError(
                f"metadata: {where} has two rows for track id {tid!r} ({unit} {first[tid]} and "
                f"{row}); keep one"
            )
        first[tid] = row
        out[tid] = {k: plain_value(v) for k, v in rec.items() if not is_null(v) and v != ""}
    if blank:
        unit = _lines(blank) if csv else _lines(blank).replace("line", "row")
        raise DataError(f"metadata: {where} has a blank track_id on {unit}")
    return out
