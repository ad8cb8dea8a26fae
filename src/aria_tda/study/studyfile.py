"""Writing a study back as a study file (:mod:`aria_tda.study.config` reads one).

:func:`study_to_toml` turns a :class:`~aria_tda.study.config.StudySpec` into the text of a study
file that :func:`~aria_tda.study.config.parse_study` reads back equal: its keys are the file
keys of the specs' fields (one source of truth), paths are written absolute and ``None`` values
are left out.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aria_tda._options import Options
from aria_tda.study.config import StudySpec, file_fields

__all__ = ["study_to_toml"]


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
