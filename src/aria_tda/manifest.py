"""JSON manifests that travel with every stored artefact.

A manifest records what an artefact is (``kind``), its shape/dtype/orientation where that
applies, the method/stage/parameters/seed that produced it and the ARIA version. Readers
compare it with what the caller asks for and refuse silent reuse on a mismatch
(:class:`~aria_tda.errors.ManifestMismatchError`), as TRAK and kronfluence do.

Where the manifest lives
------------------------
- for a file ``scores.npy``: ``scores.npy.manifest.json`` beside it;
- for a directory artefact (a zarr store, a feature store, a results folder):
  ``<dir>/aria-manifest.json`` inside it.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from aria_tda._io import read_json, write_json
from aria_tda.errors import FileFormatError, ManifestMismatchError, library_message

__all__ = [
    "SANITY_KEY",
    "check_manifest",
    "make_manifest",
    "manifest_path",
    "read_manifest",
    "sanity_columns",
    "validate_manifest",
    "write_manifest",
]

FILE_SUFFIX = ".manifest.json"
DIR_NAME = "aria-manifest.json"


def package_version() -> str:
    """The installed ``aria-tda`` version (``"0+unknown"`` when run from a bare source tree)."""
    from aria_tda._version import __version__

    return __version__


def manifest_path(artifact: str | os.PathLike[str]) -> Path:
    """Where the manifest of ``artifact`` lives (see the module docstring).

    Parameters
    ----------
    artifact : str or path-like
        The stored artefact: a file (``scores.npy``) or a directory artefact (a zarr store, a
        feature store, a results folder). A path that does not exist yet counts as a directory
        when it has no suffix or ends in ``.zarr``.

    Returns
    -------
    pathlib.Path
        ``<artifact>.manifest.json`` beside a file, ``<artifact>/aria-manifest.json`` inside a
        directory.
    """
    p = Path(artifact)
    if p.is_dir() or (p.suffix in {".zarr", ""} and not p.is_file()):
        return p / DIR_NAME
    return p.with_name(p.name + FILE_SUFFIX)


def make_manifest(kind: str, **fields: Any) -> dict[str, Any]:
    """Return a manifest dict: ``kind``, ``aria_version``, ``created`` and ``fields``.

    Parameters
    ----------
    kind : str
        What the artefact is, e.g. ``"scores"``, ``"feature-store"``, ``"aria-results"``.
    **fields : Any
        Further JSON-able entries (shape, dtype, orientation, method, stage, ``parameters``,
        seed, ...), added as they are; a field named like a standard key overrides it.

    Returns
    -------
    dict
        ``{"kind": kind, "aria_version": ..., "created": <UTC ISO-8601, seconds>, **fields}``.
    """
    out: dict[str, Any] = {
        "kind": kind,
        "aria_version": package_version(),
        "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
    }
    out.update(fields)
    return out


def write_manifest(artifact: str | os.PathLike[str], manifest: Mapping[str, Any]) -> Path:
    """Write ``manifest`` for ``artifact`` atomically; return the manifest's path.

    Parameters
    ----------
    artifact : str or path-like
        The artefact the manifest describes (see :func:`manifest_path` for where it goes).
    manifest : Mapping[str, Any]
        The manifest, usually from :func:`make_manifest`; written as JSON (numpy scalars and
        arrays become numbers and lists).

    Returns
    -------
    pathlib.Path
        The manifest file written.
    """
    return write_json(manifest_path(artifact), dict(manifest))


def read_manifest(artifact: str | os.PathLike[str]) -> dict[str, Any] | None:
    """Return the manifest of ``artifact`` or ``None`` when it has none.

    Parameters
    ----------
    artifact : str or path-like
        The artefact whose manifest to read (see :func:`manifest_path`).

    Returns
    -------
    dict or None
        The manifest's JSON object; ``None`` when no manifest file exists.

    Raises
    ------
    FileFormatError
        if the manifest file exists but is not readable JSON, not a JSON object, or has a
        standard field of the wrong type (:func:`validate_manifest`).
    """
    path = manifest_path(artifact)
    if not path.is_file():
        return None
    try:
        data = read_json(path)
    except (OSError, ValueError, RecursionError) as exc:  # not UTF-8, not JSON, nested too deep
        raise FileFormatError(
            f"manifest {str(path)!r} is unreadable: {library_message(exc)}"
        ) from None
    return validate_manifest(data, path)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _shape(value: Any) -> bool:
    return isinstance(value, list) and all(_is_int(v) and v >= 0 for v in value)


#: The standard manifest fields every artefact kind means the same by: name -> (test, what the
#: message says was expected). A field absent is fine; one present must pass its test.
STANDARD_FIELDS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "kind": (lambda v: isinstance(v, str), "a string"),
    "aria_version": (lambda v: isinstance(v, str), "a string"),
    "created": (lambda v: isinstance(v, str), "a date string"),
    "updated": (lambda v: isinstance(v, str), "a date string"),
    "shape": (_shape, "a list of non-negative integers"),
    "dtype": (lambda v: isinstance(v, str), "a dtype name (a string)"),
    "orientation": (lambda v: isinstance(v, str), "a string"),
    "format": (lambda v: isinstance(v, str) or _is_int(v), "a string or an integer"),
    "row_ids": (lambda v: v is None or isinstance(v, str), "a file or key name, or null"),
    "parameters": (lambda v: isinstance(v, dict), "a JSON object"),
    "params": (lambda v: isinstance(v, dict), "a JSON object"),
    "seed": (lambda v: v is None or _is_int(v), "an integer or null"),
    "method": (lambda v: v is None or isinstance(v, str), "a string or null"),
    "stage": (lambda v: v is None or isinstance(v, str), "a string or null"),
}


def validate_manifest(data: Any, path: str | os.PathLike[str]) -> dict[str, Any]:
    """Return ``data`` if it is a manifest whose standard fields have their types.

    Readers use a manifest's fields directly (``manifest["shape"]``, ``.get("parameters")``);
    this check makes a hand-edited or damaged manifest a one-line error naming the file and
    the field instead of a ``TypeError`` deep inside a reader.

    Parameters
    ----------
    data : Any
        The decoded JSON.
    path : str or path-like
        The manifest file (for the message).

    Returns
    -------
    dict
        ``data``.

    Raises
    ------
    FileFormatError
        ``data`` is not a JSON object, or a field of :data:`STANDARD_FIELDS` has another type
        (``manifest 'x.npy.manifest.json': shape: expected a list of non-negative integers,
        got "abc"``).
    """
    where = f"manifest {str(path)!r}"
    if not isinstance(data, dict):
        raise FileFormatError(
            f"{where}: expected a JSON object, got {_json_kind(data)}"
        )
    for name, (test, what) in STANDARD_FIELDS.items():
        if name in data and not test(data[name]):
            raise FileFormatError(f"{where}: {name}: expected {what}, got {_shown(data[name])}")
    return data


def _json_kind(value: Any) -> str:
    """What a decoded JSON value is, in words."""
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if value is None:
        return "null"
    return "a number"


def _shown(value: Any) -> str:
    """``value`` as a message shows it: as JSON, cut to 80 characters."""
    text = json.dumps(value, default=str)
    return text if len(text) <= 80 else text[:77] + "..."


def _normalise(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


def _flatten(prefix: str, value: Any, out: dict[str, Any]) -> None:
    if isinstance(value, Mapping):
        for k, v in value.items():
            _flatten(f"{prefix}.{k}" if prefix else str(k), v, out)
    else:
        out[prefix] = value


def diff_manifest(stored: Mapping[str, Any], wanted: Mapping[str, Any]) -> list[str]:
    """Return ``"key: stored X, asked Y"`` lines for every key of ``wanted`` that differs.

    Parameters
    ----------
    stored : Mapping[str, Any]
        The manifest on disk.
    wanted : Mapping[str, Any]
        The entries the caller requires; nested mappings are compared key by key under dotted
        names (``parameters.proj_dim``). Keys of ``stored`` absent from ``wanted`` are ignored;
        a key of ``wanted`` absent from ``stored`` shows as ``<missing>``.

    Returns
    -------
    list of str
        One line per differing key, in the order of ``wanted`` (empty when they agree).
    """
    flat_stored: dict[str, Any] = {}
    flat_wanted: dict[str, Any] = {}
    _flatten("", _normalise(dict(stored)), flat_stored)
    _flatten("", _normalise(dict(wanted)), flat_wanted)
    lines = []
    for key, want in flat_wanted.items():
        have = flat_stored.get(key, "<missing>")
        if have != want:
            lines.append(f"{key}: stored {have!r}, asked {want!r}")
    return lines


def check_manifest(
    artifact: str | os.PathLike[str], wanted: Mapping[str, Any], *, required: bool = True
) -> dict[str, Any] | None:
    """Check that the manifest of ``artifact`` agrees with ``wanted`` on every key ``wanted`` has.

    Nested mappings are compared key by key (``parameters.proj_dim``).

    Parameters
    ----------
    artifact : str or path-like
        The stored artefact (see :func:`manifest_path` for where its manifest lives).
    wanted : Mapping[str, Any]
        The settings the caller is about to rely on. Both sides go through a JSON round trip
        before comparing (tuples equal lists; values JSON cannot hold compare as their ``str``).
    required : bool
        Whether an artefact without a manifest is an error (``True``) or accepted as is
        (``False``: returns ``None``).

    Returns
    -------
    dict or None
        The stored manifest; ``None`` when there is none and ``required`` is false.

    Raises
    ------
    ManifestMismatchError
        if a key differs (the message lists each difference), or if ``required`` and the
        artefact has no manifest.
    FileFormatError
        if the manifest is malformed (:func:`read_manifest`).
    """
    stored = read_manifest(artifact)
    if stored is None:
        if required:
            raise ManifestMismatchError(
                f"{str(artifact)!r} has no manifest ({DIR_NAME} / *{FILE_SUFFIX})"
            )
        return None
    try:
        lines = diff_manifest(stored, wanted)
    except (RecursionError, ValueError, TypeError) as exc:  # nested deeper than can be compared
        raise FileFormatError(
            f"manifest {str(manifest_path(artifact))!r} cannot be compared: "
            f"{library_message(exc)}"
        ) from None
    if lines:
        raise ManifestMismatchError(
            f"{str(artifact)!r} was made with other settings; refusing to reuse it:\n  "
            + "\n  ".join(lines)
        )
    return stored


#: The manifest key of a score matrix's attribution sanity checks
#: (:mod:`aria_tda.attribution.sanity` writes them; a study reads them).
SANITY_KEY = "sanity"


def sanity_columns(artifact: str | os.PathLike[str] | None) -> dict[str, Any]:
    """The reliability table's sanity-check columns of a score file (``sanity`` says whether
    they exist: ``"computed"`` or ``"unavailable"``, e.g. for files ARIA did not write).

    Parameters
    ----------
    artifact : path-like or None
        The score matrix.
    """
    entry = None
    if artifact is not None:
        try:
            entry = (read_manifest(artifact) or {}).get(SANITY_KEY)
        except (OSError, ValueError, FileFormatError):
            entry = None
    if not isinstance(entry, dict) or not isinstance(entry.get("randomization"), dict) \
            or not isinstance(entry.get("bias"), dict):
        return {"sanity": "unavailable"}
    rnd, bias = entry["randomization"], entry["bias"]
    return {"sanity": "computed", "randomization_rho": rnd.get("mean"),
            "randomization_lo": rnd.get("lo"), "randomization_hi": rnd.get("hi"),
            "randomization_flagged": bool(rnd.get("flagged")),
            "norm_bias_rho": bias.get("median"), "norm_bias_flagged": bool(bias.get("flagged"))}

