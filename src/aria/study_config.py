r"""The study file read by ``aria run STUDY.toml``.

A study names the settings to analyse (one score matrix each), the feature store, the group
sizes, the null size and the seed. Paths are relative to the study file. Example::

    name = "MusicTransformer on Bach chorales"
    modality = "symbolic"            # "symbolic" | "audio"
    feature_store = "features"       # written by `aria features` or `aria demo`
    output = "results"               # results folder (created)
    K = [20, 50, 100, 200, 300, 400, 500]
    K_report = 300                   # the K of the report's tables
    B = 200                          # random reference groups per K
    seed = 0
    n_bootstrap = 1000               # bootstrap resamples of queries for CIs
    residual = true                  # also analyse the rank-1 residual
    queries = "queries.csv"          # optional per-query metadata (column `query` + labels)
    confound = ["composer"]          # query metadata columns to stratify z by
    max_missing_fraction = 0.5       # error when more tracks than this lack features

    [[setting]]
    name = "TRAK"                    # unique; shown in tables
    method = "TRAK"
    stage = "-"                      # e.g. semantic / coarse / fine
    scores = "scores/trak.npy"       # (n_train_segments, n_queries): npy | npz | pt | zarr
    segments = "segments.csv"        # optional segment -> track map; omitted = identity
    normalize = "zscore"             # zscore | rank | auto | none

Every key is checked: an unknown key or a value of the wrong type is an error that names the
key and its line in the file.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aria.errors import FileFormatError, ParameterError
from aria.features.registry import MODALITIES

__all__ = ["SettingSpec", "StudySpec", "load_study", "parse_study", "study_to_toml", "validate_study"]

DEFAULT_K = (20, 50, 100, 200, 300, 400, 500)
NORMALIZE = ("zscore", "rank", "auto", "none")


@dataclass(frozen=True)
class SettingSpec:
    """One setting (method × stage) of a study."""

    name: str
    method: str
    stage: str
    scores: Path
    segments: Path | None = None
    normalize: str = "zscore"
    key: str | None = None


@dataclass(frozen=True)
class StudySpec:
    """A validated study."""

    path: Path | None
    name: str
    modality: str
    feature_store: Path
    output: Path
    settings: tuple[SettingSpec, ...]
    K: tuple[int, ...] = DEFAULT_K
    K_report: int = 300
    B: int = 200
    seed: int = 0
    n_bootstrap: int = 1000
    residual: bool = True
    queries: Path | None = None
    confound: tuple[str, ...] = ()
    channels: tuple[str, ...] | None = None
    chunk_rows: int | None = None
    max_missing_fraction: float = 0.5
    report: bool = True
    extra: Mapping[str, Any] = field(default_factory=dict)

    def params(self) -> dict[str, Any]:
        """JSON-able parameters recorded in results.json."""
        return {
            "name": self.name,
            "modality": self.modality,
            "feature_store": str(self.feature_store),
            "K": list(self.K),
            "K_report": self.K_report,
            "B": self.B,
            "seed": self.seed,
            "n_bootstrap": self.n_bootstrap,
            "residual": self.residual,
            "queries": None if self.queries is None else str(self.queries),
            "confound": list(self.confound),
            "channels": None if self.channels is None else list(self.channels),
            "max_missing_fraction": self.max_missing_fraction,
        }


# key -> (accepted python types, description of what is expected)
_TOP: dict[str, tuple[tuple[type, ...], str]] = {
    "name": ((str,), "a string"),
    "modality": ((str,), "'symbolic' or 'audio'"),
    "feature_store": ((str,), "a path (string)"),
    "output": ((str,), "a path (string)"),
    "K": ((list, int), "a list of integers >= 2"),
    "K_report": ((int,), "an integer >= 2"),
    "B": ((int,), "an integer >= 2"),
    "seed": ((int,), "an integer >= 0"),
    "n_bootstrap": ((int,), "an integer >= 0"),
    "residual": ((bool,), "true or false"),
    "queries": ((str,), "a path (string)"),
    "confound": ((list, str), "a list of column names"),
    "channels": ((list,), "a list of channel names"),
    "chunk_rows": ((int,), "a positive integer"),
    "max_missing_fraction": ((float, int), "a number in [0, 1]"),
    "report": ((bool,), "true or false"),
    "setting": ((list,), "[[setting]] tables"),
}
_SETTING: dict[str, tuple[tuple[type, ...], str]] = {
    "name": ((str,), "a string"),
    "method": ((str,), "a string"),
    "stage": ((str,), "a string"),
    "scores": ((str,), "a path (string)"),
    "segments": ((str,), "a path (string)"),
    "normalize": ((str,), "one of " + ", ".join(NORMALIZE)),
    "key": ((str,), "an array name (string)"),
}


def _line_of(text: str, key: str, *, table: str | None = None, index: int = 0) -> int | None:
    """1-based line of ``key = ...`` (inside the ``index``-th ``[[table]]`` when given)."""
    lines = text.splitlines()
    start, stop = 0, len(lines)
    if table is not None:
        heads = [i for i, ln in enumerate(lines) if re.match(rf"\s*\[\[\s*{re.escape(table)}\s*\]\]", ln)]
        if index < len(heads):
            start = heads[index] + 1
            nxt = [i for i, ln in enumerate(lines) if i >= start and re.match(r"\s*\[", ln)]
            stop = nxt[0] if nxt else len(lines)
    else:
        heads = [i for i, ln in enumerate(lines) if re.match(r"\s*\[", ln)]
        stop = heads[0] if heads else len(lines)
    pat = re.compile(rf"\s*(\"{re.escape(key)}\"|'{re.escape(key)}'|{re.escape(key)})\s*=")
    for i in range(start, stop):
        if pat.match(lines[i]):
            return i + 1
    return None


class _Checker:
    def __init__(self, text: str, source: str) -> None:
        self.text = text
        self.source = source

    def fail(self, key: str, what: str, got: Any, *, table: str | None = None, index: int = 0) -> None:
        line = _line_of(self.text, key, table=table, index=index)
        where = f"{self.source}:{line}" if line else self.source
        label = f"setting[{index}].{key}" if table else key
        shown = repr(got)
        raise ParameterError(f"{where}: {label}: expected {what}, got {shown}")

    def check(self, data: Mapping[str, Any], schema: dict, *, table: str | None = None, index: int = 0) -> None:
        for key, value in data.items():
            if key not in schema:
                allowed = ", ".join(sorted(schema))
                self.fail(key, f"a known key ({allowed})", key, table=table, index=index)
            types, what = schema[key]
            if isinstance(value, bool) and bool not in types:
                self.fail(key, what, value, table=table, index=index)
            if not isinstance(value, types):
                self.fail(key, what, value, table=table, index=index)


def parse_study(text: str, *, base_dir: str | os.PathLike[str] = ".", source: str = "<study>") -> StudySpec:
    """Parse and validate a study from TOML ``text``; relative paths resolve against ``base_dir``."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise FileFormatError(f"{source}: not valid TOML: {exc}") from None
    ck = _Checker(text, source)
    ck.check(data, _TOP)
    base = Path(base_dir)

    def path(v: str | None) -> Path | None:
        if v is None:
            return None
        p = Path(v).expanduser()
        return p if p.is_absolute() else base / p

    for required in ("modality", "feature_store", "setting"):
        if required not in data:
            raise ParameterError(f"{source}: missing required key {required!r}")
    modality = data["modality"]
    if modality not in MODALITIES:
        ck.fail("modality", "'symbolic' or 'audio'", modality)

    K = data.get("K", list(DEFAULT_K))
    K = [K] if isinstance(K, int) else K
    if not K or not all(isinstance(k, int) and not isinstance(k, bool) and k >= 2 for k in K):
        ck.fail("K", "a non-empty list of integers >= 2", K)
    K = sorted(set(K))
    k_report = data.get("K_report", 300 if 300 in K else K[-1])
    if k_report not in K:
        ck.fail("K_report", f"one of K = {K}", k_report)
    for key, lo in (("B", 2), ("seed", 0), ("n_bootstrap", 0), ("chunk_rows", 1)):
        if key in data and data[key] < lo:
            ck.fail(key, _TOP[key][1], data[key])
    mmf = float(data.get("max_missing_fraction", 0.5))
    if not 0.0 <= mmf <= 1.0:
        ck.fail("max_missing_fraction", "a number in [0, 1]", mmf)
    confound = data.get("confound", [])
    confound = [confound] if isinstance(confound, str) else confound
    if not all(isinstance(c, str) for c in confound):
        ck.fail("confound", "a list of column names", confound)
    channels = data.get("channels")
    if channels is not None:
        from aria.features.registry import channel_names

        known = channel_names(modality)
        bad = [c for c in channels if c not in known]
        if bad or not channels:
            ck.fail("channels", f"a non-empty list from {list(known)}", channels)

    settings = []
    raw_settings = data["setting"]
    if not raw_settings:
        ck.fail("setting", "at least one [[setting]] table", raw_settings)
    names: set[str] = set()
    for i, s in enumerate(raw_settings):
        if not isinstance(s, dict):
            ck.fail("setting", "[[setting]] tables", s)
        ck.check(s, _SETTING, table="setting", index=i)
        for required in ("scores",):
            if required not in s:
                raise ParameterError(f"{source}: setting[{i}]: missing required key {required!r}")
        method = s.get("method", s.get("name", Path(s["scores"]).stem))
        stage = s.get("stage", "-")
        name = s.get("name", method if stage == "-" else f"{method}/{stage}")
        if name in names:
            ck.fail("name", "a setting name used once", name, table="setting", index=i)
        names.add(name)
        norm = s.get("normalize", "zscore")
        if norm not in NORMALIZE:
            ck.fail("normalize", _SETTING["normalize"][1], norm, table="setting", index=i)
        settings.append(
            SettingSpec(
                name=name,
                method=method,
                stage=stage,
                scores=path(s["scores"]),  # type: ignore[arg-type]
                segments=path(s.get("segments")),
                normalize=norm,
                key=s.get("key"),
            )
        )
    return StudySpec(
        path=None,
        name=data.get("name", "ARIA study"),
        modality=modality,
        feature_store=path(data["feature_store"]),  # type: ignore[arg-type]
        output=path(data.get("output", "results")),  # type: ignore[arg-type]
        settings=tuple(settings),
        K=tuple(K),
        K_report=int(k_report),
        B=int(data.get("B", 200)),
        seed=int(data.get("seed", 0)),
        n_bootstrap=int(data.get("n_bootstrap", 1000)),
        residual=bool(data.get("residual", True)),
        queries=path(data.get("queries")),
        confound=tuple(confound),
        channels=None if channels is None else tuple(channels),
        chunk_rows=data.get("chunk_rows"),
        max_missing_fraction=mmf,
        report=bool(data.get("report", True)),
    )


def load_study(path: str | os.PathLike[str]) -> StudySpec:
    """Read and validate the study file at ``path``."""
    p = Path(path)
    if not p.is_file():
        raise FileFormatError(f"study: no such file: {str(p)!r}")
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise FileFormatError(f"study: cannot read {str(p)!r}: {exc}") from None
    spec = parse_study(text, base_dir=p.parent, source=str(p))
    return StudySpec(**{**spec.__dict__, "path": p})


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    text = str(value)
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    return f'"{escaped}"'


def study_to_toml(spec: StudySpec, *, header: str | None = None) -> str:
    """The study file text of ``spec`` (absolute paths); :func:`parse_study` reads it back equal."""
    lines = [f"# {line}" for line in (header or "").splitlines()]
    top: dict[str, Any] = {
        "name": spec.name,
        "modality": spec.modality,
        "feature_store": str(Path(spec.feature_store).absolute()),
        "output": str(Path(spec.output).absolute()),
        "K": list(spec.K),
        "K_report": spec.K_report,
        "B": spec.B,
        "seed": spec.seed,
        "n_bootstrap": spec.n_bootstrap,
        "residual": spec.residual,
        "max_missing_fraction": spec.max_missing_fraction,
        "report": spec.report,
    }
    if spec.queries is not None:
        top["queries"] = str(Path(spec.queries).absolute())
    if spec.confound:
        top["confound"] = list(spec.confound)
    if spec.channels is not None:
        top["channels"] = list(spec.channels)
    if spec.chunk_rows is not None:
        top["chunk_rows"] = spec.chunk_rows
    lines += [f"{k} = {_toml_value(v)}" for k, v in top.items()]
    for s in spec.settings:
        lines += ["", "[[setting]]", f"name = {_toml_value(s.name)}", f"method = {_toml_value(s.method)}",
                  f"stage = {_toml_value(s.stage)}", f"scores = {_toml_value(str(Path(s.scores).absolute()))}",
                  f"normalize = {_toml_value(s.normalize)}"]
        if s.segments is not None:
            lines.append(f"segments = {_toml_value(str(Path(s.segments).absolute()))}")
        if s.key is not None:
            lines.append(f"key = {_toml_value(s.key)}")
    return "\n".join(lines) + "\n"


def validate_study(spec: StudySpec, *, source: str = "study") -> StudySpec:
    """Validate a programmatically built :class:`StudySpec` with the same checks as a study file.

    The spec is written as TOML and parsed back, so every rule lives in :func:`parse_study`;
    errors name the key (``source:line: key: expected ..., got ...``).
    """
    return parse_study(study_to_toml(spec), source=source)
