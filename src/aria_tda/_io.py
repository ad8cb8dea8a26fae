"""Atomic writes: nothing half-written is ever left under the final name.

Every writer in ARIA goes through :func:`atomic_path` (or the helpers built on it): the
output is produced under a temporary name in the same directory and renamed into place only
when complete; on error the temporary is removed and an existing file is left untouched.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from aria_tda.errors import ParameterError, expected

__all__ = ["atomic_path", "read_json", "remove_path", "write_json", "write_text"]


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary sibling of ``path``; on success rename it to ``path``.

    Works for files and for directories (e.g. zarr stores): whatever the body creates under
    the yielded path replaces ``path`` as a whole. On an exception the temporary is deleted
    and ``path`` keeps its previous content.
    """
    final = Path(path)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = final.with_name(f".{final.name}.tmp-{uuid.uuid4().hex[:8]}")
    try:
        yield tmp
        if not tmp.exists():
            raise FileNotFoundError(f"atomic write produced nothing at {tmp}")
        if final.exists() and final.is_dir() != tmp.is_dir():
            # never replace a folder with a file or a file with a folder: that would delete
            # whatever the user kept there
            kind, other = ("folder", "file") if tmp.is_dir() else ("file", "folder")
            raise ParameterError(
                expected(str(final), f"a path for a {kind}", f"an existing {other} (left as it is)")
            )
        if tmp.is_dir() and final.exists():
            old = final.with_name(f".{final.name}.old-{uuid.uuid4().hex[:8]}")
            os.replace(final, old)
            os.replace(tmp, final)
            remove_path(old)
        else:
            os.replace(tmp, final)
    except BaseException:
        remove_path(tmp)
        raise


def remove_path(path: str | os.PathLike[str]) -> None:
    """Remove a file or a directory tree if it exists."""
    p = Path(path)
    if p.is_dir() and not p.is_symlink():
        shutil.rmtree(p, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            p.unlink()


def _json_default(obj: Any) -> Any:
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating):
        return float(obj)
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, Path):
        return str(obj)
    if hasattr(obj, "__dataclass_fields__"):
        import dataclasses

        return dataclasses.asdict(obj)
    raise TypeError(f"Object of type {type(obj).__name__} is not JSON serializable")


def write_json(path: str | os.PathLike[str], obj: Any, *, indent: int = 2) -> Path:
    """Write ``obj`` as JSON atomically (numpy scalars/arrays, Paths and dataclasses allowed)."""
    text = json.dumps(obj, indent=indent, default=_json_default, allow_nan=True)
    return write_text(path, text + "\n")


def write_text(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` (UTF-8) atomically."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return Path(path)


def read_json(path: str | os.PathLike[str]) -> Any:
    """Read a JSON file."""
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)
