r"""The study file read by ``aria-tda run STUDY.toml``.

A study names the settings to analyse (one score matrix each), the feature store, the group
sizes, the null size and the seed. Paths are relative to the study file. Example::

    name = "MusicTransformer on Bach chorales"
    modality = "symbolic"            # "symbolic" | "audio"
    feature_store = "features"       # written by `aria-tda features` or `aria-tda demo`
    output = "results"               # results folder (created)
    K = [20, 50, 100, 200, 300, 400, 500]  # default: fitted to the pool (results.default_ks)
    K_report = 300                   # the K of the report's tables
    B = 200                          # random reference groups per K, or "auto"
    seed = 0
    n_bootstrap = 1000               # bootstrap resamples of queries for CIs
    residual = true                  # also analyse the rank-1 residual
    queries = "queries.csv"          # optional per-query metadata (column `query` + labels)
    confound = ["composer"]          # query metadata columns to stratify z by (and read as sets)
    query_features = "query-features"  # optional: the queries' own features (anchors the reading)
    alpha = 0.05                     # error rate of the distinctive reading
    max_missing_fraction = 0.5       # error when more tracks than this lack features
    scheduler = "local:4"            # optional: settings in parallel on a Dask cluster
                                     # ("local:N" worker processes or "tcp://HOST:PORT")

    [[setting]]
    name = "TRAK"                    # unique; shown in tables
    method = "TRAK"
    stage = "-"                      # e.g. semantic / coarse / fine
    scores = "scores/trak.npy"       # (n_train_segments, n_queries): npy | npz | pt | zarr
    segments = "segments.csv"        # optional segment -> track map; omitted = identity
    normalize = "zscore"             # zscore | rank | auto | none
    transpose = false                # true: the file holds queries x training segments

    [[setting]]                      # an embedding-retrieval baseline (paper §4.3)
    train_embeddings = "emb/train"   # embedding stores written by `aria-tda embed` (same encoder);
    query_embeddings = "emb/queries" # the study computes their cosine matrix and caches it
                                     # (method: the encoder's name; normalize: "none")

Every key is checked: an unknown key or a value of the wrong type is an error that names the
key and its line in the file.

One source of truth
-------------------
Each key is a field of :class:`StudySpec` or :class:`SettingSpec`, declared once with
:func:`aria_tda._options.option`: its type, range, default and help live in the field. The file
parser (which keys exist, their checks), :meth:`StudySpec.params`,
:func:`aria_tda.study.studyfile.study_to_toml`,
:func:`validate_study` and the defaults and help of ``aria-tda homogeneity`` are all derived from
those fields. The checks run when a spec is built (``__post_init__``), so a spec built in
Python is checked exactly like a study file; the file parser only adds the line numbers.
"""

from __future__ import annotations

import dataclasses
import numbers
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, TypeVar

from aria_tda._checks import check_int
from aria_tda._options import Options, option
from aria_tda.errors import ParameterError, expected
from aria_tda.features.registry import FEATURE_SETS, MODALITIES
from aria_tda.results import (
    DEFAULT_KS,
    MIN_DEFAULT_KS,
    POOL_FRACTION,
    PREFERRED_K_REPORT,
    default_k_report,
    default_ks,
)

__all__ = [
    "NORMALIZE",
    "N_PAIRS",
    "SettingSpec",
    "StudySpec",
    "default_k_report",
    "field_default",
    "file_fields",
    "in_memory",
    "is_path_field",
    "is_required_field",
    "jsonable",
    "validate_study",
]

NORMALIZE = ("zscore", "rank", "auto", "none")
#: The distinctive reading's default K is at most this (the items most specific to a query).
ASPECTS_K_CAP = 100
#: Contributing track pairs kept per query, channel and variant (the report's evidence; part
#: of every setting's cache key, :func:`aria_tda.study.cache.setting_step`).
N_PAIRS = 10
Normalize = Literal["zscore", "rank", "auto", "none"]

_MISSING: Any = dataclasses.MISSING
OptionsT = TypeVar("OptionsT", bound=Options)


#: The fields a spec fills in when they are left out (recorded in ``StudySpec.defaulted``).
DERIVED = ("K", "K_report", "K_aspects")
#: ``--help`` and the field's help: the default K sweep, by its values.
K_DEFAULT_HELP = (
    "default: the paper's " + " ".join(map(str, DEFAULT_KS)) + ", keeping the values up to "
    f"1/{POOL_FRACTION} of the pool (the tracks with features and scores); when fewer than "
    f"{MIN_DEFAULT_KS} are left, 5 10 20 50 100 ... up to 1/{POOL_FRACTION} of the pool"
)


# --------------------------------------------------------------------------------------
# field checks (``check(name, value) -> value``; ``name`` is the key shown in errors)
# --------------------------------------------------------------------------------------


def _path(name: str, value: Any) -> Path:
    if isinstance(value, (str, os.PathLike)):
        return Path(value)
    raise ParameterError(expected(name, "a path (string)", value))


def _optional_path(name: str, value: Any) -> Path | None:
    return None if value is None else _path(name, value)


def in_memory(value: Any) -> bool:
    """Whether a setting's input is held in memory (an array, a tensor or a table), not a path.

    Parameters
    ----------
    value : object
        A ``scores`` or ``segments`` value of a :class:`SettingSpec`.
    """
    return value is not None and not isinstance(value, (str, os.PathLike)) and hasattr(
        value, "shape")


def _scores_input(name: str, value: Any) -> Any:
    """A path, or a 2-D array / tensor in memory (run_study saves it once to the cache)."""
    if in_memory(value):
        if len(value.shape) != 2:
            raise ParameterError(expected(name, "a path or a 2-D array (segments x queries)",
                                          value))
        return value
    return _optional_path(name, value)


def _segments_input(name: str, value: Any) -> Any:
    """A path, or a table in memory (a pandas DataFrame; run_study saves it to the cache)."""
    if in_memory(value):
        if not hasattr(value, "columns"):
            raise ParameterError(expected(name, "a path or a pandas DataFrame", value))
        return value
    return _optional_path(name, value)


def _ks(name: str, value: Any) -> tuple[int, ...] | None:
    if value is None:
        return None  # filled in on construction (the default sweep)
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        value = [value]
    if not isinstance(value, (list, tuple)):
        raise ParameterError(expected(name, "a list of integers >= 2", value))
    good = all(
        isinstance(k, numbers.Integral) and not isinstance(k, bool) and int(k) >= 2
        for k in value
    )
    if not value or not good:
        raise ParameterError(expected(name, "a non-empty list of integers >= 2", list(value)))
    return tuple(sorted({int(k) for k in value}))


def _b(name: str, value: Any) -> int | str:
    if isinstance(value, str) and value == "auto":
        return value
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return check_int(name, value, min_value=2)
    raise ParameterError(expected(name, 'an integer >= 2 or "auto"', value))


def _names(name: str, value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple)) or not all(isinstance(c, str) for c in value):
        raise ParameterError(expected(name, "a list of column names", value))
    return tuple(value)


def _optional_channel_names(name: str, value: Any) -> tuple[str, ...] | None:
    if value is None:
        return None
    if not isinstance(value, (list, tuple)) or not all(isinstance(c, str) for c in value):
        raise ParameterError(expected(name, "a list of channel names", value))
    return tuple(value)


def _scheduler(name: str, value: Any) -> str | None:
    from aria_tda._dask import check_scheduler

    return check_scheduler(value, name=name)


def _settings(name: str, value: Any) -> tuple[SettingSpec, ...]:
    if not isinstance(value, (list, tuple)) or not all(isinstance(s, SettingSpec) for s in value):
        raise ParameterError(expected(name, "[[setting]] tables (SettingSpec)", value))
    if not value:
        raise ParameterError(expected(name, "at least one [[setting]] table", list(value)))
    return tuple(value)


def _opt(default: Any = _MISSING, *, recorded: bool = True, **kwargs: Any) -> Any:
    """:func:`aria_tda._options.option`, plus whether :meth:`StudySpec.params` records the field."""
    f = option(default, **kwargs)
    meta = {**f.metadata, "recorded": recorded}
    if f.default_factory is not _MISSING:
        return dataclasses.field(default_factory=f.default_factory, metadata=meta)
    return dataclasses.field(default=f.default, metadata=meta)


# --------------------------------------------------------------------------------------
# the specs
# --------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, kw_only=True)
class SettingSpec(Options):
    """One setting (method × stage) of a study: one ``[[setting]]`` table.

    ``method`` defaults to ``name``, else the encoder's registry name (embedding stores, read
    from the training store's manifest), else the score file's stem; ``name`` defaults to
    ``method`` (or ``method/stage`` when a stage is given). Both are resolved on construction,
    and so is ``normalize`` (``zscore``, or ``none`` for embedding stores).

    A setting names either a score matrix (``scores``) or two embedding stores
    (``train_embeddings`` and ``query_embeddings``, paper §4.3), whose cosine matrix is a
    track-level matrix: no ``segments``, ``key`` or ``transpose`` then.
    """

    name: str = option(
        None, kind="str", help="unique setting name shown in tables (default: method[/stage])"
    )
    method: str = option(
        None, kind="str", help="attribution method (default: the name, else the file's stem)"
    )
    stage: str = option("-", help="checkpoint stage, e.g. semantic / coarse / fine ('-': none)")
    scores: Path | None = option(
        None,
        help="segment-level score matrix (train segments x queries): npy | npz | pt | zarr; "
        "an input, read only (not with train_embeddings: their cosine matrix is written "
        "into the output's .cache); from Python also a 2-D array or tensor in memory",
        check=_scores_input,
    )
    train_embeddings: Path | None = option(
        None,
        help="embedding store of the training tracks ('aria-tda embed'); the setting's scores "
        "are its cosine similarities with query_embeddings (track-level, computed by the study)",
        check=_optional_path,
    )
    query_embeddings: Path | None = option(
        None,
        help="embedding store of the queries (the encoder of train_embeddings)",
        check=_optional_path,
    )
    segments: Path | None = option(
        None,
        help="segment -> track map (CSV/Parquet); omitted: one row per track; from Python also "
        "a pandas DataFrame",
        check=_segments_input,
    )
    normalize: Normalize = option(
        None,
        choices=NORMALIZE,
        help="per-query normalisation of S_track (default: zscore; none for embedding stores, "
        "whose cosine scores are track-level and on one scale already, as in the paper)",
    )
    key: str | None = option(
        None, kind="str", help="array name inside an .npz, a torch dict or a zarr group"
    )
    transpose: bool = option(
        False, help="the file holds queries x training segments: read it transposed"
    )
    #: Not a study-file key: ``scores`` is the cosine matrix the study run wrote for the
    #: embedding stores (:func:`aria_tda.study.inputs.embedding_scores`), not a user's input.
    scores_from_embeddings: bool = dataclasses.field(default=False, repr=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        embedding = self._check_sources()
        if self.normalize is None:
            object.__setattr__(self, "normalize", "none" if embedding else "zscore")
        method = self.method
        if method is None and self.name is not None:
            method = self.name
        if method is None:
            method = (
                _encoder_name(self.train_embeddings)
                if self.train_embeddings is not None
                else "scores" if in_memory(self.scores) else Path(str(self.scores)).stem
            )
        name = self.name
        if name is None:
            name = method if self.stage == "-" else f"{method}/{self.stage}"
        object.__setattr__(self, "method", method)
        object.__setattr__(self, "name", name)

    @property
    def is_embedding(self) -> bool:
        """Whether the setting's scores are the cosine matrix of two embedding stores."""
        return self.train_embeddings is not None

    def _check_sources(self) -> bool:
        """Scores xor both embedding stores; embedding settings are track-level."""
        given = [k for k in ("train_embeddings", "query_embeddings") if getattr(self, k)]
        if not given:
            if self.scores is None:
                raise ParameterError(
                    expected(
                        "scores", "a score matrix (or train_embeddings and query_embeddings)", None
                    )
                )
            return False
        if len(given) == 1:
            other = ({"train_embeddings", "query_embeddings"} - set(given)).pop()
            raise ParameterError(expected(other, f"an embedding store beside {given[0]}", None))
        if self.scores is not None and not self.scores_from_embeddings:  # contradictory keys
            who = f" (setting {self.name!r})" if self.name is not None else ""
            raise ParameterError(expected(
                "scores", "either a score matrix or train_embeddings and query_embeddings, not "
                f"both{who}: the study writes the embedding stores' cosine matrix into its "
                "cache and never over an input", str(self.scores)))
        for key, bad in (
            ("segments", self.segments is not None),
            ("key", self.key is not None),
            ("transpose", self.transpose),
        ):
            if bad:
                raise ParameterError(
                    expected(
                        key,
                        "nothing with embedding stores (their cosine matrix is track-level)",
                        getattr(self, key),
                    )
                )
        return True


def _encoder_name(store: Path) -> str:
    """The encoder's registry name from an embedding store's manifest (else the folder name)."""
    from aria_tda.errors import AriaError
    from aria_tda.manifest import read_manifest

    try:
        man = read_manifest(store) or {}
    except AriaError:
        man = {}
    name = ((man.get("params") or {}).get("encoder") or {}).get("encoder")
    return str(name) if name else Path(store).name


@dataclasses.dataclass(frozen=True, kw_only=True)
class StudySpec(Options):
    """A validated study: every key of a study file, checked on construction.

    Fields without help (``path``, ``extra``) are not study-file keys. Fields marked
    ``recorded`` make up :meth:`params`, the study parameters written to ``results.json``
    and compared when a cached setting is reused.
    """

    path: Path | None = None
    name: str = _opt("ARIA study", help="study name shown in the report")
    modality: str = _opt(help="'symbolic' or 'audio' (the feature store's)", choices=MODALITIES)
    feature_store: Path = _opt(
        help="feature store written by 'aria-tda features' or 'aria-tda demo'", check=_path
    )
    output: Path = _opt(
        Path("results"), recorded=False, help="results folder (created)", check=_path
    )
    settings: tuple[SettingSpec, ...] = _opt(
        recorded=False,
        key="setting",
        help="one [[setting]] table per score matrix",
        check=_settings,
    )
    K: tuple[int, ...] = _opt(
        None,
        check=_ks,
        help=f"group sizes of the K-sweep ({K_DEFAULT_HELP})",
    )
    K_report: int = _opt(
        None,
        kind="int",
        min_value=2,
        help=f"K of the report's tables (default: {PREFERRED_K_REPORT} if swept, else the "
        "largest K)",
    )
    K_aspects: int = _opt(
        None,
        kind="int",
        min_value=2,
        help="K of the distinctive reading, one of K (default: the largest K up to "
        f"min(K_report, {ASPECTS_K_CAP}): the items most specific to each query)",
    )
    B: int | str = _opt(
        200,
        check=_b,
        help='random reference groups per K (the null); "auto": grow B (200, 400, ... 3200) '
        "until the null's Monte-Carlo error of z-bar is below 0.25 x the query-resampling SE",
    )
    seed: int = _opt(0, min_value=0, help="seed of the null and the bootstrap")
    n_bootstrap: int = _opt(
        1000, min_value=0, help="bootstrap resamples of the queries for the CIs"
    )
    residual: bool = _opt(True, help="also analyse the rank-1 residual")
    queries: Path | None = _opt(
        None,
        check=_optional_path,
        help="per-query metadata (CSV/Parquet with a 'query' column and labels)",
    )
    confound: tuple[str, ...] = _opt(
        (), check=_names,
        help="query metadata columns to stratify z by; the queries sharing a value are also "
        "read as a set by the distinctive reading",
    )
    query_features: Path | None = _opt(
        None,
        check=_optional_path,
        help="feature store of the queries themselves ('aria-tda features' over the generated "
        "pieces; track ids = the queries file's query_id, else the column index): anchors "
        "the distinctive reading on each query's own features",
    )
    alpha: float = _opt(
        0.05,
        min_value=0.0,
        max_value=1.0,
        min_inclusive=False,
        help="error rate of the distinctive reading: the chance that a query (or a set) of a "
        "score matrix that ranks at random is named an aspect",
    )
    channels: tuple[str, ...] | None = _opt(
        None, check=_optional_channel_names, help="channels to analyse (default: all)"
    )
    feature_set: str = _opt(
        "extended",
        choices=FEATURE_SETS,
        help="the channels' features: 'extended' (the paper's plus ARIA's pattern features: "
        "melodic-interval transitions, voice-count transitions and periodicity) or 'paper' "
        "(the paper's features only, to reproduce it)",
    )
    chunk_rows: int | None = _opt(
        None,
        recorded=False,
        kind="int",
        min_value=1,
        help="rows per streamed block (default: about 64 MB)",
    )
    scheduler: str | None = _opt(
        None,
        recorded=False,
        check=_scheduler,
        help="run the settings on a Dask cluster: 'local:N' (N worker processes on this "
        "machine) or a scheduler address 'tcp://HOST:PORT' whose workers see the same files "
        "(default: no cluster; 'aria-tda run --scheduler' overrides it)",
    )
    max_missing_fraction: float = _opt(
        0.5,
        min_value=0.0,
        max_value=1.0,
        help="error when more than this fraction of tracks lack features",
    )
    report: bool = _opt(True, recorded=False, help="write report.html")
    media: bool = _opt(
        True, recorded=False,
        help="the report's listening room: render audio clips and notation of the queries and "
        "their attributed tracks (the slowest part of a small run)",
    )
    extra: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    #: Not a study-file key: which of :data:`DERIVED` were left out and filled in (``K``: the
    #: default sweep, fitted to the pool by :meth:`for_pool`).
    defaulted: frozenset[str] = dataclasses.field(default=frozenset(), repr=False,
                                                  compare=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        left_out = {name for name in DERIVED if getattr(self, name) is None}
        object.__setattr__(self, "defaulted", frozenset(self.defaulted) | left_out)
        if self.K is None:
            object.__setattr__(self, "K", DEFAULT_KS)
        if self.K_report is None:
            object.__setattr__(self, "K_report", default_k_report(self.K))
        elif self.K_report not in self.K:
            raise ParameterError(expected("K_report", f"one of K = {list(self.K)}", self.K_report))
        if self.K_aspects is None:
            cap = min(int(self.K_report), ASPECTS_K_CAP)
            below = [k for k in self.K if k <= cap]
            object.__setattr__(self, "K_aspects", max(below) if below else min(self.K))
        elif self.K_aspects not in self.K:
            raise ParameterError(expected("K_aspects", f"one of K = {list(self.K)}",
                                          self.K_aspects))
        names: set[str] = set()
        for i, s in enumerate(self.settings):
            if s.name in names:
                raise ParameterError(
                    expected(f"setting[{i}].name", "a setting name used once", s.name)
                )
            names.add(s.name)
        if self.channels is not None:
            from aria_tda.features.registry import channel_names

            known = channel_names(self.modality)
            if not self.channels or any(c not in known for c in self.channels):
                raise ParameterError(
                    expected(
                        "channels", f"a non-empty list from {list(known)}", list(self.channels)
                    )
                )

    @property
    def k_is_default(self) -> bool:
        """Whether ``K`` was left out (the default sweep, fitted by :meth:`for_pool`)."""
        return "K" in self.defaulted

    def for_pool(self, n_tracks: int) -> StudySpec:
        """This study with the default K sweep fitted to a pool of ``n_tracks`` tracks.

        A study that names ``K`` is returned as it is. Otherwise ``K`` becomes
        :func:`aria_tda.results.default_ks` of the pool (the paper's sweep on a pool of 2000
        tracks or more), and ``K_report`` and ``K_aspects``, when left out too, are derived
        from it again.

        Parameters
        ----------
        n_tracks : int
            The pool: tracks that have both features and scores (the smallest over settings).

        Raises
        ------
        ParameterError
            ``K_report`` or ``K_aspects`` was given but is not in the fitted sweep.
        """
        if not self.k_is_default:
            return self
        ks = default_ks(n_tracks)
        derived: dict[str, Any] = {name: None for name in ("K_report", "K_aspects")
                                   if name in self.defaulted}
        try:
            return dataclasses.replace(self, K=ks, **derived)
        except ParameterError as exc:
            raise ParameterError(
                f"{exc} (K was left out: the default sweep for a pool of {n_tracks} tracks; "
                "name K to choose)"
            ) from None

    def params(self) -> dict[str, Any]:
        """JSON-able parameters recorded in results.json (the ``recorded`` fields)."""
        return {
            f.name: jsonable(getattr(self, f.name))
            for f in dataclasses.fields(self)
            if f.metadata.get("recorded")
        }


def jsonable(value: Any) -> Any:
    """``value`` as JSON holds it: a path as text, a tuple as a list.

    Parameters
    ----------
    value : object
        A spec field's value.
    """
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, tuple):
        return [jsonable(v) for v in value]
    return value


def file_fields(cls: type[Options]) -> dict[str, dataclasses.Field[Any]]:
    """Study-file key -> field, for the fields of ``cls`` that are file keys (carry help)."""
    return {
        (f.metadata.get("key") or f.name): f
        for f in dataclasses.fields(cls)
        if "help" in f.metadata
    }


def is_path_field(f: dataclasses.Field[Any]) -> bool:
    """Whether a spec field holds a path (relative ones resolve against the study's folder).

    Parameters
    ----------
    f : dataclasses.Field
        A field of :class:`SettingSpec` or :class:`StudySpec`.
    """
    return f.metadata.get("check") in (_path, _optional_path, _scores_input, _segments_input)


def is_required_field(f: dataclasses.Field[Any]) -> bool:
    """Whether a spec field has no default (the study file must give it).

    Parameters
    ----------
    f : dataclasses.Field
        A field of :class:`SettingSpec` or :class:`StudySpec`.
    """
    return f.default is _MISSING and f.default_factory is _MISSING


def field_default(cls: type[Options], name: str) -> Any:
    """The default of field ``name`` of an options class (``None`` when it is computed).

    A default made by a factory or resolved on construction (``K``, fitted to the pool by
    :meth:`StudySpec.for_pool`; ``K_report``) is reported as ``None``: leave the value out and
    the spec fills it in.

    Parameters
    ----------
    cls : type
        :class:`StudySpec`, :class:`SettingSpec` or another :class:`~aria_tda._options.Options`.
    name : str
        A field name of ``cls``.
    """
    for f in dataclasses.fields(cls):
        if f.name == name:
            return None if f.default is _MISSING else f.default
    raise ParameterError(expected("name", f"a field of {cls.__name__}", name))


def _absolute(spec: OptionsT) -> OptionsT:
    """A copy of ``spec`` (checked again) with its path fields made absolute."""
    changes = {}
    for f in dataclasses.fields(spec):
        value = getattr(spec, f.name)
        if is_path_field(f) and isinstance(value, Path):
            changes[f.name] = value.absolute()
    return dataclasses.replace(spec, **changes)


def validate_study(spec: StudySpec, *, source: str = "study") -> StudySpec:
    """Check a programmatically built :class:`StudySpec`; return it with absolute paths.

    The checks are the fields' own (the same that read a study file); they run again here on
    the spec itself, and an error names the key (``source: key: expected ..., got ...``).

    Parameters
    ----------
    spec : StudySpec
        The study to check.
    source : str
        How errors name the study (e.g. ``"aria-tda homogeneity"``).
    """
    try:
        settings = tuple(_absolute(s) for s in spec.settings)
        return _absolute(dataclasses.replace(spec, settings=settings))
    except ParameterError as exc:
        raise ParameterError(f"{source}: {exc}") from None
