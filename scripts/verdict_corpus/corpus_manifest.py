"""The corpus manifest: ``DIR/manifest.json`` merged from the writers' ``DIR/manifest.d/*.json``.

Imported by ``generate.py`` (peer environment) and ``similarity.py`` (project environment), so
it uses the standard library only.
"""

from __future__ import annotations

import json
from pathlib import Path


def merge_manifest(out: Path) -> None:
    """Write ``out/manifest.json``: every writer's files, and each writer's other fields under
    ``sources`` (by the part's name).

    Parameters
    ----------
    out : pathlib.Path
        The corpus folder.
    """
    parts = sorted((out / "manifest.d").glob("*.json"))
    files, meta = [], {}
    for part in parts:
        d = json.loads(part.read_text(encoding="utf-8"))
        files += d["files"]
        meta[part.stem] = {k: v for k, v in d.items() if k != "files"}
    manifest = {"description": "ARIA verdict calibration corpus (issue 37); see "
                               "scripts/verdict_corpus/README.md",
                "sources": meta, "files": files}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
