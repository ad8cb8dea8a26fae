"""What the output-guard tests compare: a working folder's whole tree, links included."""

from __future__ import annotations

import os
from pathlib import Path


def snapshot(folder: Path) -> dict[str, object]:
    """Everything under ``folder``: folders, links (their targets, not followed) and file bytes."""
    out: dict[str, object] = {}
    for dirpath, dirnames, filenames in os.walk(folder, followlinks=False):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            rel = str(p.relative_to(folder))
            if p.is_symlink():
                out[rel] = ("link", os.readlink(p))
            elif p.is_dir():
                out[rel] = "dir"
            else:
                out[rel] = p.read_bytes()
    return out
