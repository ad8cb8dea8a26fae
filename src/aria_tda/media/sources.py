r"""Where the music behind a result lies: the query's and each training item's media file.

:func:`resolve_media` reads a results folder (or a loaded
:class:`~aria_tda.report.load.ResultsData`) and returns a :class:`MediaIndex` that answers, for
a query or a training item of the results tables, *which* file holds its music and *which*
window of it was attributed — as a :class:`MediaRef`. Nothing is decoded here
(:func:`aria_tda.media.clips.load_clip` does that).

Conventions
-----------
Where media come from (what a user of their own study already has):

- **Queries** — the study's queries file (``results.json`` → ``study.queries``; when that file
  is gone, the copy ``RESULTS/queries.csv``). The first of the columns
  :data:`QUERY_MEDIA_COLUMNS` (``media``, ``audio``, ``midi``, ``path``, ``file``) names each
  query's file; a relative path is resolved against the queries file's folder, then the results
  folder (the first that exists; the first is named when none does). Optional window columns as
  below. A query is named by its 0-based index (column ``query``, else the row position) or by
  the value of its ``query_id`` (else ``id``) column; :attr:`MediaRef.item_id` is the
  ``query_id`` when the file has one, else the index as text.
- **Training items** — the feature store's metadata (``results.json`` →
  ``study.feature_store``; :attr:`aria_tda.features.store.FeatureStore.metadata`): the first of
  the columns :data:`TRAIN_MEDIA_COLUMNS` (``source``, ``path``, ``file``, ``media``) per
  ``track_id``; relative paths resolve against the folder holding the store, the store itself,
  then the results folder. An id that is not a track of the store is looked up as a
  ``segment_id`` (or ``segment``) of the settings' segment maps (``results.json`` →
  ``settings[i].segments``, a CSV/TSV/Parquet table, :func:`aria_tda.scores.aggregation.
  read_segment_table`), whose ``track_id`` names the track holding its file (a ``source``
  column of the map is used when the store metadata has none).
- **Windows** — from the row that names the item (metadata row of a track, segment-map row of a
  segment): ``start_tick``/``end_tick`` (MIDI ticks), else ``start``/``end`` (else
  ``start_time``/``end_time``) in the unit of a ``unit`` column (``"s"`` — the default — or
  ``"ticks"``; ``"seconds"``, ``"sec"``, ``"tick"`` are read as those). No window = the whole
  file; a start without an end runs to the end of the file.
- **Kind** — from the suffix: :data:`AUDIO_SUFFIXES` are audio, :data:`MIDI_SUFFIXES` MIDI.

Anything absent — no queries file, no media column, a file that does not exist, an unknown id,
a window that makes no sense — gives a :class:`MediaRef` whose ``missing`` is one sentence naming
what is missing (the file, the column, the id); :func:`resolve_media` and the lookups never
raise for it. So does a file that is no longer the one the run read (changed since, or gone:
``results.json`` ``media``, :mod:`aria_tda.media.recorded`): other music is never played under
the run's numbers. Only a bad argument raises (an unknown ``setting`` name, a folder that is not a
results folder).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aria_tda.errors import AriaError, ParameterError, expected, one_line
from aria_tda.media.recorded import MEDIA_KEY

if TYPE_CHECKING:
    import pandas as pd

    from aria_tda.report.load import ResultsData

__all__ = [
    "AUDIO_SUFFIXES",
    "MIDI_SUFFIXES",
    "QUERY_MEDIA_COLUMNS",
    "TRAIN_MEDIA_COLUMNS",
    "MediaIndex",
    "MediaRef",
    "media_kind",
    "resolve_media",
]

#: suffixes read as audio (decoded with soundfile / libsndfile)
AUDIO_SUFFIXES = (".wav", ".flac", ".ogg", ".oga", ".opus", ".mp3", ".aif", ".aiff", ".au")
#: suffixes read as MIDI (rendered with FluidSynth)
MIDI_SUFFIXES = (".mid", ".midi", ".kar", ".smf")
#: columns of a queries file naming each query's media file, first present wins
QUERY_MEDIA_COLUMNS = ("media", "audio", "midi", "path", "file")
#: columns of the feature store metadata naming each track's media file, first present wins
TRAIN_MEDIA_COLUMNS = ("source", "path", "file", "media")
#: columns naming a query (besides its index)
_QUERY_ID_COLUMNS = ("query_id", "id")
_SEGMENT_ID_COLUMNS = ("segment_id", "segment")
_UNITS = {"s": "s", "sec": "s", "secs": "s", "second": "s", "seconds": "s",
          "tick": "ticks", "ticks": "ticks"}


def _listing(names: Sequence[str]) -> str:
    """``"a, b or c"``."""
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]


@dataclass(frozen=True)
class MediaRef:
    """Where one query's or training item's music lies, and the window that was attributed.

    Attributes
    ----------
    item_id : str
        The query id (``query_id`` column, else the 0-based index as text) or the training
        track/segment id, as in the results tables.
    role : {"query", "train"}
    path : Path or None
        The audio or MIDI file; ``None`` when no file is named.
    kind : {"audio", "midi"} or None
        From the suffix; ``None`` when ``path`` is ``None`` or its suffix is unknown.
    start, end : float or None
        The window in ``unit``; ``None`` start = the whole file (``end`` ``None``: to its end).
    unit : {"s", "ticks"}
        Seconds, or MIDI ticks of the file (converted with its tempo map).
    missing : str or None
        ``None`` when playable; else one sentence naming what is missing.
    """

    item_id: str
    role: str
    path: Path | None
    kind: str | None
    start: float | None
    end: float | None
    unit: str
    missing: str | None

    @property
    def playable(self) -> bool:
        """Whether a file was found (``missing is None``)."""
        return self.missing is None


def media_kind(path: str | os.PathLike[str]) -> str | None:
    """``"audio"``, ``"midi"`` or ``None`` from a file name's suffix (case-insensitive).

    Parameters
    ----------
    path : path
        A file name.
    """
    suffix = Path(path).suffix.lower()
    if suffix in AUDIO_SUFFIXES:
        return "audio"
    if suffix in MIDI_SUFFIXES:
        return "midi"
    return None


# --------------------------------------------------------------------------- values


def _blank(v: Any) -> bool:
    if v is None:
        return True
    if isinstance(v, float) and math.isnan(v):
        return True
    try:
        import pandas as pd

        if v is pd.NA or v is pd.NaT:
            return True
    except ImportError:  # pragma: no cover - pandas is a dependency
        pass
    return isinstance(v, str) and not v.strip()


def _get(row: Mapping[str, Any], names: Sequence[str]) -> tuple[str | None, Any]:
    """(column, value) of the first of ``names`` that ``row`` holds with a value."""
    for n in names:
        if n in row and not _blank(row[n]):
            return n, row[n]
    return None, None


def _number(v: Any) -> float | None:
    if _blank(v):
        return None
    if isinstance(v, bool):
        raise ValueError(repr(v))
    out = float(str(v).strip()) if isinstance(v, str) else float(v)
    if not math.isfinite(out):
        raise ValueError(repr(v))
    return out


def _window(
    row: Mapping[str, Any], where: str
) -> tuple[float | None, float | None, str, str | None]:
    """(start, end, unit, problem) from a row's window columns (module docstring)."""
    if any(not _blank(row.get(c)) for c in ("start_tick", "end_tick")):
        cols, unit = ("start_tick", "end_tick"), "ticks"
    else:
        cols = ("start", "end")
        if all(_blank(row.get(c)) for c in cols):
            cols = ("start_time", "end_time")
        raw_unit = row.get("unit")
        if _blank(raw_unit):
            unit = "s"
        else:
            unit = _UNITS.get(str(raw_unit).strip().lower(), "")
            if not unit:
                return None, None, "s", (
                    f"{where} gives the window unit {str(raw_unit)!r}, which is neither "
                    "'s' (seconds) nor 'ticks'"
                )
    try:
        start, end = _number(row.get(cols[0])), _number(row.get(cols[1]))
    except (TypeError, ValueError):
        return None, None, unit, (
            f"{where} gives a window ({cols[0]} {row.get(cols[0])!r}, {cols[1]} "
            f"{row.get(cols[1])!r}) that is not a pair of numbers"
        )
    if start is None and end is not None:
        start = 0.0
    if start is not None and start < 0:
        return None, None, unit, f"{where} gives a window starting before 0 ({cols[0]} {start:g})"
    if start is not None and end is not None and end <= start:
        return None, None, unit, (
            f"{where} gives an empty window ({cols[0]} {start:g}, {cols[1]} {end:g})"
        )
    return start, end, unit, None


def _locate(value: Any, bases: Sequence[Path]) -> Path:
    """The file ``value`` names: absolute as is, else the first base where it exists."""
    p = Path(str(value).strip()).expanduser()
    if p.is_absolute() or not bases:
        return p
    for base in bases:
        if (base / p).exists():
            return base / p
    return bases[0] / p


def _file_problem(path: Path, what: str) -> str | None:
    """None when ``path`` is a readable media file; else the sentence saying why not."""
    if not path.exists():
        return f"{what} {path} does not exist"
    if not path.is_file():
        return f"{what} {path} is not a file"
    if not os.access(path, os.R_OK):
        return f"{what} {path} is not readable (permission denied)"
    if media_kind(path) is None:
        return (
            f"{what} {path} is neither audio ({', '.join(AUDIO_SUFFIXES)}) nor MIDI "
            f"({', '.join(MIDI_SUFFIXES)})"
        )
    return None


def _ref(
    item_id: str,
    role: str,
    path: Path | None,
    window: tuple[float | None, float | None, str, str | None] = (None, None, "s", None),
    problem: str | None = None,
) -> MediaRef:
    start, end, unit, bad = window
    what = "query file" if role == "query" else "training file"
    if problem is None and path is not None:
        problem = _file_problem(path, what)
    if problem is None:
        problem = bad
    if problem is None and unit == "ticks" and media_kind(path or "") == "audio":
        problem = f"{what} {path} is audio, but its window is given in MIDI ticks"
    kind = None if path is None else media_kind(path)
    return MediaRef(str(item_id), role, path, kind, start, end, unit, problem)


# --------------------------------------------------------------------------- index


@dataclass
class MediaIndex:
    """Look-ups of media for one results folder (made by :func:`resolve_media`).

    Tables are read on first use and kept. Every look-up returns a :class:`MediaRef` and never
    raises for something missing.

    Attributes
    ----------
    results_dir : Path
        The results folder.
    queries_path : Path or None
        The queries file read (``None``: none found).
    store_path : Path or None
        The feature store named by ``results.json``.
    segment_maps : list of Path
        The segment maps searched for segment ids, in order.
    """

    results_dir: Path
    queries_path: Path | None
    store_path: Path | None
    segment_maps: list[Path]
    _queries_bases: list[Path] = field(default_factory=list, repr=False)
    _no_queries: str | None = field(default=None, repr=False)
    _cache: dict[str, Any] = field(default_factory=dict, repr=False)
    recorded: Mapping[str, Any] = field(default_factory=dict, repr=False)

    def _verified(self, key: str, ref: MediaRef) -> MediaRef:
        """``ref``, refused when its file is not the one the run recorded under ``key``
        (:func:`aria_tda.media.recorded.recorded_problem`)."""
        if not self.recorded or key not in self.recorded:
            return ref
        from aria_tda.media.recorded import recorded_problem

        problem = recorded_problem(ref, self.recorded[key])
        return ref if problem is None else replace(ref, missing=problem)

    # -- queries
    def _queries(self) -> tuple[pd.DataFrame | None, str | None]:
        if "queries" not in self._cache:
            self._cache["queries"] = self._read_queries()
        return self._cache["queries"]

    def _read_queries(self) -> tuple[pd.DataFrame | None, str | None]:
        import pandas as pd

        if self.queries_path is None:
            return None, self._no_queries
        p = self.queries_path
        try:
            if p.suffix.lower() in (".parquet", ".pq"):
                df = pd.read_parquet(p)
            else:
                sep = "\t" if p.suffix.lower() == ".tsv" else ","
                df = pd.read_csv(p, sep=sep, dtype=str, keep_default_na=False)
        except (OSError, ValueError, ImportError) as exc:
            return None, f"the queries file {p} cannot be read ({one_line(exc)})"
        df.columns = [str(c).strip() for c in df.columns]
        if "query" in df.columns:
            idx = pd.to_numeric(df["query"], errors="coerce")
        else:
            idx = pd.Series(range(len(df)), dtype="float64")
        df = df.assign(_index=idx.to_numpy())
        col = next((c for c in QUERY_MEDIA_COLUMNS if c in df.columns), None)
        if col is None:
            return df, (
                f"no media column ({_listing(QUERY_MEDIA_COLUMNS)}) in the queries file {p}"
            )
        return df, None

    def query(self, query_id: str | int) -> MediaRef:
        """The media of one query.

        Parameters
        ----------
        query_id : str or int
            The 0-based query index (as in the results tables' ``query`` column; an int or its
            text) or the query's ``query_id`` (``id``) value from the queries file.

        Returns
        -------
        MediaRef
            ``role="query"``; ``missing`` says what is missing when nothing can be played.
        """
        df, problem = self._queries()
        shown = str(query_id)
        if df is None:
            return _ref(shown, "query", None, problem=problem or "no queries file")
        row = self._query_row(df, query_id)
        if row is None:
            where = f"the queries file {self.queries_path}"
            return _ref(shown, "query", None, problem=f"query {shown!r} is not in {where}")
        ids = [c for c in _QUERY_ID_COLUMNS if c in row and not _blank(row[c])]
        item = str(row[ids[0]]) if ids else _index_text(row["_index"], shown)
        if problem is not None:
            return _ref(item, "query", None, problem=problem)
        col, value = _get(row, QUERY_MEDIA_COLUMNS)
        if col is None:
            media = next(c for c in QUERY_MEDIA_COLUMNS if c in row)
            return _ref(item, "query", None, problem=(
                f"the queries file {self.queries_path} has no {media!r} entry for query {item}"
            ))
        where = f"the queries file {self.queries_path} (query {item})"
        return self._verified(f"query:{item}", _ref(
            item, "query", _locate(value, self._queries_bases), _window(row, where)))

    @staticmethod
    def _query_row(df: pd.DataFrame, query_id: Any) -> dict[str, Any] | None:
        import numpy as np

        hit = None
        if isinstance(query_id, str):
            for c in _QUERY_ID_COLUMNS:
                if c in df.columns:
                    m = np.flatnonzero(df[c].astype(str).to_numpy() == query_id)
                    if m.size:
                        hit = int(m[0])
                        break
        if hit is None:
            try:
                as_int = int(str(query_id).strip()) if not isinstance(query_id, bool) else None
            except ValueError:
                as_int = None
            if as_int is not None:
                m = np.flatnonzero(df["_index"].to_numpy() == as_int)
                hit = int(m[0]) if m.size else None
        return None if hit is None else dict(df.iloc[hit].items())

    # -- training items
    def _store(self) -> tuple[pd.DataFrame | None, str | None]:
        if "store" not in self._cache:
            self._cache["store"] = self._read_store()
        return self._cache["store"]

    def _read_store(self) -> tuple[pd.DataFrame | None, str | None]:
        from aria_tda.features.store import FeatureStore

        if self.store_path is None:
            return None, "results.json names no feature store (study.feature_store)"
        if not self.store_path.exists():
            return None, f"the feature store {self.store_path} does not exist"
        try:
            meta = FeatureStore.open(self.store_path).metadata
        except (AriaError, OSError) as exc:
            return None, f"the feature store {self.store_path} cannot be read ({one_line(exc)})"
        meta.index = meta.index.astype(str)
        return meta, None

    def _segments(self) -> list[tuple[Path, pd.DataFrame | None, str | None]]:
        if "segments" not in self._cache:
            self._cache["segments"] = [self._read_map(p) for p in self.segment_maps]
        return self._cache["segments"]

    @staticmethod
    def _read_map(p: Path) -> tuple[Path, pd.DataFrame | None, str | None]:
        from aria_tda.scores.segment_map import read_segment_table

        if not p.exists():
            return p, None, f"the segment map {p} does not exist"
        try:
            df = read_segment_table(p)
        except (AriaError, OSError) as exc:
            return p, None, f"the segment map {p} cannot be read ({one_line(exc)})"
        df.columns = [str(c).strip() for c in df.columns]
        col = next((c for c in _SEGMENT_ID_COLUMNS if c in df.columns), None)
        if col is None:
            return p, None, f"the segment map {p} has no segment_id column"
        df = df.assign(_segment=df[col].astype(str)).drop_duplicates("_segment")
        return p, df.set_index("_segment", drop=False), None

    def segments_of(self, track_id: str) -> list[str]:
        """The segment ids the segment maps give ``track_id``, in map order (maybe none).

        Parameters
        ----------
        track_id : str
            A training track id.
        """
        out: list[str] = []
        for _, df, _problem in self._segments():
            if df is not None and "track_id" in df.columns:
                sel = df["track_id"].astype(str).to_numpy() == str(track_id)
                out += [s for s in df["_segment"].to_numpy()[sel] if s not in out]
        return out

    def train(self, item_id: str) -> MediaRef:
        """The media of one training item (a track or segment id shown in the top-N list).

        Parameters
        ----------
        item_id : str
            A ``track_id`` of the feature store, or a ``segment_id`` of a segment map.

        Returns
        -------
        MediaRef
            ``role="train"``; ``missing`` says what is missing when nothing can be played.
        """
        item = str(item_id)
        meta, problem = self._store()
        if meta is not None and item in meta.index:
            row = _row(meta, item)
            where = f"the feature store metadata of {self.store_path} (track {item})"
            return self._train_ref(item, item, row, row, where)
        for p, df, _ in self._segments():
            if df is not None and item in df.index:
                seg = _row(df, item)
                track = None if _blank(seg.get("track_id")) else str(seg["track_id"]).strip()
                known = meta is not None and track is not None and track in meta.index
                trow = _row(meta, track) if known and track is not None else {}
                where = f"the segment map {p} (segment {item})"
                if track is not None and not trow and meta is not None:
                    if _get(seg, TRAIN_MEDIA_COLUMNS)[0] is None:
                        return _ref(item, "train", None, problem=(
                            f"track {track!r} of segment {item!r} ({p}) is not in the feature "
                            f"store {self.store_path}"
                        ))
                return self._train_ref(item, track, trow, seg, where, store_problem=problem)
        if problem is not None:
            return _ref(item, "train", None, problem=problem)
        where = f"not a track of the feature store {self.store_path}"
        if self.segment_maps:
            maps = ", ".join(map(str, self.segment_maps))
            where += f" nor a segment of the segment map {maps}"
        return _ref(item, "train", None, problem=f"training item {item!r} is {where}")

    def train_window(self, track_id: str, window_row: Mapping[str, Any], *,
                     segment_id: str | None = None) -> MediaRef:
        """The media of a track, cut to the window of one segment-map row.

        For the segment that scored highest for a query (:class:`aria_tda.media.attributed.
        SegmentPicker`); the file is the track's (or the row's own media column).

        Parameters
        ----------
        track_id : str
            The track.
        window_row : mapping
            The segment map's row (``start``/``end``, ``unit``, ``start_tick``/``end_tick``).
        segment_id : str, optional
            The segment, for the messages.
        """
        track = str(track_id)
        meta, problem = self._store()
        trow = _row(meta, track) if meta is not None and track in meta.index else {}
        where = f"the segment map (segment {segment_id or track})"
        return self._train_ref(track, track, trow, dict(window_row), where,
                               store_problem=problem)

    def _train_ref(
        self,
        item: str,
        track: str | None,
        track_row: Mapping[str, Any],
        window_row: Mapping[str, Any],
        where: str,
        *,
        store_problem: str | None = None,
    ) -> MediaRef:
        col, value = _get(track_row, TRAIN_MEDIA_COLUMNS)
        bases = self._store_bases()
        if col is None and window_row is not track_row:
            col, value = _get(window_row, TRAIN_MEDIA_COLUMNS)  # the segment map's own column
            bases = [*(p.parent for p in self.segment_maps), *bases]
        if col is None:
            if store_problem is not None:
                return _ref(item, "train", None, problem=store_problem)
            present = [c for c in TRAIN_MEDIA_COLUMNS if c in track_row]
            if present:
                return _ref(item, "train", None, problem=(
                    f"the feature store metadata of {self.store_path} has no {present[0]!r} "
                    f"entry for track {track!r}"
                ))
            return _ref(item, "train", None, problem=(
                f"no source column ({_listing(TRAIN_MEDIA_COLUMNS)}) in the feature store "
                f"metadata of {self.store_path}"
            ))
        return self._verified(f"train:{track if track is not None else item}", _ref(
            item, "train", _locate(value, bases), _window(window_row, where)))

    def _store_bases(self) -> list[Path]:
        bases = []
        if self.store_path is not None:
            bases.append(self.store_path.parent)
            if self.store_path.is_dir():
                bases.append(self.store_path)
        bases.append(self.results_dir)
        return bases


def _row(df: pd.DataFrame, key: str) -> dict[str, Any]:
    return dict(df.loc[key].items()) if df.index.is_unique else dict(df.loc[[key]].iloc[0].items())


def _index_text(value: Any, fallback: str) -> str:
    try:
        f = float(value)
    except (TypeError, ValueError):
        return fallback
    return str(int(f)) if math.isfinite(f) and f == int(f) else fallback


# --------------------------------------------------------------------------- resolve


def _named_path(value: Any, base: Path) -> Path | None:
    if _blank(value) or not isinstance(value, str | os.PathLike):
        return None
    p = Path(value).expanduser()
    # results.json records inputs relative to the results folder ("../features"): normalised
    return p if p.is_absolute() else Path(os.path.normpath(base / p))


def resolve_media(
    results: str | os.PathLike[str] | ResultsData, *, setting: str | None = None
) -> MediaIndex:
    """Find where the queries' and training items' media lie, for a results folder.

    Parameters
    ----------
    results : path or ResultsData
        A results folder (``results.json`` and its tables) or what
        :func:`aria_tda.report.load.load_results` made of one.
    setting : str, optional
        Search only this setting's segment map for segment ids (default: every setting's, in
        the order of ``results.json``).

    Returns
    -------
    MediaIndex
        Look-ups :meth:`MediaIndex.query` and :meth:`MediaIndex.train`; nothing is read until
        they are used.

    Raises
    ------
    FileFormatError
        ``results`` is not a results folder.
    ParameterError
        ``setting`` is not a setting of the results.
    """
    from aria_tda.results import read_results_meta

    if hasattr(results, "meta") and hasattr(results, "path"):
        meta, root = dict(results.meta), Path(results.path)
    elif isinstance(results, str | os.PathLike):
        root = Path(results)
        meta = read_results_meta(root)
    else:
        raise ParameterError(
            expected("results", "a results folder or a ResultsData", type(results).__name__)
        )
    raw = meta.get("study")
    study: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
    settings = [s for s in meta.get("settings") or [] if isinstance(s, Mapping)]
    if setting is not None:
        names = [str(s.get("name")) for s in settings]
        if setting not in names:
            raise ParameterError(expected("setting", "one of " + ", ".join(map(repr, names)),
                                          setting))
        settings = [s for s in settings if str(s.get("name")) == setting]
    maps: list[Path] = []
    for s in settings:
        p = _named_path(s.get("segments"), root)
        if p is not None and p not in maps:
            maps.append(p)

    named = _named_path(study.get("queries"), root)
    copy = root / "queries.csv"
    queries, bases, no_queries = None, [root], None
    if named is not None and named.is_file():
        queries, bases = named, [named.parent, root]
    elif copy.is_file():
        queries = copy
        bases = [root] + ([named.parent] if named is not None else [])
    elif named is not None:
        no_queries = f"the queries file {named} does not exist (nor {copy})"
    else:
        no_queries = f"results.json names no queries file and {copy} does not exist"
    recorded = meta.get(MEDIA_KEY)
    return MediaIndex(
        results_dir=root,
        queries_path=queries,
        store_path=_named_path(study.get("feature_store"), root),
        segment_maps=maps,
        _queries_bases=bases,
        _no_queries=no_queries,
        recorded=recorded if isinstance(recorded, Mapping) else {},
    )
