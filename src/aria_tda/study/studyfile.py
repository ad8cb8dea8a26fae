"""The study file: reading one into a :class:`~aria_tda.study.config.StudySpec`, and writing one.

:func:`load_study` reads a study TOML file (:func:`parse_study` its text): unknown keys, missing
required keys and every field's own check are refused with the file and line
(``study.toml:12: setting[0].normalize: expected ..., got ...``); relative paths resolve
against the file's folder. :func:`study_to_toml` turns a spec into the text of a study file
that :func:`parse_study` reads back equal: its keys are the file keys of the specs' fields (one
source of truth), paths are written absolute and ``None`` values are left out.
"""

from __future__ import annotations

import dataclasses
import os
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from aria_tda._options import Options
from aria_tda._paths import input_path
from aria_tda.errors import FileFormatError, ParameterError, expected
from aria_tda.study.config import (
    SettingSpec,
    StudySpec,
    file_fields,
    is_path_field,
    is_required_field,
)

__all__ = ["load_study", "parse_study", "study_to_toml"]


# --------------------------------------------------------------------------------------
# reading a study file
# --------------------------------------------------------------------------------------


def _line_of(text: str, key: str, *, table: str | None = None, index: int = 0) -> int | None:
    """1-based line of ``key = ...`` (inside the ``index``-th ``[[table]]`` when given)."""
    lines = text.splitlines()
    start, stop = 0, len(lines)
    if table is not None:
        head = re.compile(rf"\s*\[\[\s*{re.escape(table)}\s*\]\]")
        heads = [i for i, ln in enumerate(lines) if head.match(ln)]
        if index < len(heads):
            start = heads[index] + 1
            nxt = [i for i, ln in enumerate(lines) if i >= start and re.match(r"\s*\[", ln)]
            stop = nxt[0] if nxt else len(lines)
    else:
        heads = [i for i, ln in enumerate(lines) if re.match(r"\s*\[", ln)]
        stop = heads[0] if heads else len(lines)
    k = re.escape(key)
    pat = re.compile(rf"\s*(\"{k}\"|'{k}'|{k})\s*=")
    for i in range(start, stop):
        if pat.match(lines[i]):
            return i + 1
    return None


#: The key a check message starts with: ``K: ...``, ``setting[1].normalize: ...``, ``K[0]: ...``
_LEADING_KEY = re.compile(r"^(?:setting\[(\d+)\]\.)?([A-Za-z_][A-Za-z_0-9]*)")


class _Locator:
    """Adds ``source:line:`` to the messages of the checks, from the key they start with."""

    def __init__(self, text: str, source: str) -> None:
        self.text = text
        self.source = source

    def where(self, key: str, *, table: str | None = None, index: int = 0) -> str:
        line = _line_of(self.text, key, table=table, index=index)
        return f"{self.source}:{line}" if line else self.source

    def error(self, message: str) -> ParameterError:
        m = _LEADING_KEY.match(message)
        if m is None:
            return ParameterError(f"{self.source}: {message}")
        index, key = m.group(1), m.group(2)
        if index is None:
            where = self.where(key)
        else:
            where = self.where(key, table="setting", index=int(index))
        return ParameterError(f"{where}: {message}")

    def unknown(
        self, data: Mapping[str, Any], known: Mapping[str, Any], *, index: int | None = None
    ) -> None:
        for key in data:
            if key not in known:
                label = key if index is None else f"setting[{index}].{key}"
                allowed = ", ".join(sorted(known))
                raise self.error(expected(label, f"a known key ({allowed})", key))


def _from_table(cls: type[Options], table: Mapping[str, Any], base: Path) -> dict[str, Any]:
    """Constructor arguments of ``cls`` from a TOML table: file keys -> field names.

    Relative paths (those given and path defaults) resolve against ``base``.
    """

    def resolve(v: Any) -> Any:
        if not isinstance(v, (str, Path)):
            return v  # the field's check says what is wrong
        p = Path(v).expanduser()
        return p if p.is_absolute() else base / p

    kwargs: dict[str, Any] = {}
    for key, f in file_fields(cls).items():
        if key in table:
            value = table[key]
        elif is_path_field(f) and f.default not in (dataclasses.MISSING, None):
            value = f.default
        else:
            continue
        kwargs[f.name] = resolve(value) if is_path_field(f) else value
    return kwargs


def parse_study(
    text: str, *, base_dir: str | os.PathLike[str] = ".", source: str = "<study>"
) -> StudySpec:
    """Parse and validate a study from TOML ``text``.

    Parameters
    ----------
    text : str
        The study file's text.
    base_dir : path-like
        Relative paths in the file resolve against this folder.
    source : str
        How errors name the file (``source:line: key: expected ..., got ...``).
    """
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise FileFormatError(f"{source}: not valid TOML: {exc}") from None
    loc = _Locator(text, source)
    base = Path(base_dir).absolute()  # results.json records where the inputs are, from anywhere
    top = file_fields(StudySpec)
    loc.unknown(data, top)
    for key, f in top.items():
        if is_required_field(f) and key not in data:
            raise ParameterError(f"{source}: missing required key {key!r}")

    raw_settings = data["setting"]
    if not isinstance(raw_settings, list):
        raise loc.error(expected("setting", "[[setting]] tables", raw_settings))
    known = file_fields(SettingSpec)
    settings = []
    for i, table in enumerate(raw_settings):
        if not isinstance(table, dict):
            raise loc.error(expected("setting", "[[setting]] tables", table))
        loc.unknown(table, known, index=i)
        for key, f in known.items():
            if is_required_field(f) and key not in table:
                raise ParameterError(f"{source}: setting[{i}]: missing required key {key!r}")
        try:
            settings.append(SettingSpec(**_from_table(SettingSpec, table, base)))
        except ParameterError as exc:
            raise loc.error(f"setting[{i}].{exc}") from None
    kwargs = _from_table(StudySpec, {k: v for k, v in data.items() if k != "setting"}, base)
    try:
        return StudySpec(**kwargs, settings=tuple(settings))
    except ParameterError as exc:
        raise loc.error(str(exc)) from None


def load_study(path: str | os.PathLike[str]) -> StudySpec:
    """Read and validate the study file at ``path``.

    Parameters
    ----------
    path : path-like
        The study TOML file; relative paths in it resolve against its folder.
    """
    p = Path(path)
    input_path(p, "study", kind="file", missing="no such file")
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise FileFormatError(f"study: cannot read {str(p)!r}: {exc}") from None
    spec = parse_study(text, base_dir=p.parent, source=str(p))
    return dataclasses.replace(spec, path=p)



def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    text = str(value)
    for old, new in (("\\", "\\\\"), ('"', '\\"'), ("\n", "\\n"), ("\t", "\\t")):
        text = text.replace(old, new)
    return f'"{text}"'


def _toml_lines(spec: Options) -> list[str]:
    """``key = value`` lines of the file keys of ``spec`` (paths absolute; ``None`` left out)."""
    lines = []
    for key, f in file_fields(type(spec)).items():
        value = getattr(spec, f.name)
        if key == "scores" and getattr(spec, "scores_from_embeddings", False):
            continue  # the study's own cosine matrix: made again from the embedding stores
        if value is None or (
            isinstance(value, tuple) and value and all(isinstance(v, Options) for v in value)
        ):
            continue
        if isinstance(value, Path):
            value = str(value.absolute())
        lines.append(f"{key} = {_toml_value(value)}")
    return lines


def study_to_toml(spec: StudySpec, *, header: str | None = None) -> str:
    """The study file text of ``spec`` (absolute paths); :func:`parse_study` reads it back equal.

    Parameters
    ----------
    spec : StudySpec
        The study to write.
    header : str, optional
        Comment lines written at the top of the file.
    """
    lines = [f"# {line}" for line in (header or "").splitlines()]
    lines += _toml_lines(spec)
    for s in spec.settings:
        lines += ["", "[[setting]]", *_toml_lines(s)]
    return "\n".join(lines) + "\n"
