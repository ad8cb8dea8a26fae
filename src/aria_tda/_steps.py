"""Resumable steps for long jobs (``aria-tda demo``, ``aria-tda run``).

A step is a directory ``root/name`` plus a record file (:data:`RECORD`) holding the parameters
it was computed with and a small summary. :meth:`Step.is_complete` is true only when the record
says complete *and* its parameters equal the ones asked for now; otherwise the step is
recomputed from scratch (a stale or half-finished directory is cleared first). This gives
"a rerun reuses finished steps" without ever reusing output made with other settings.

A step's body runs inside :meth:`Step.running`: whatever the body raises (an error, Ctrl-C,
a full disk), the step is not left marked "running" — its folder is removed, or, for a body
that resumes its own partial work, its record says "failed" (keeping the parameters that
partial work was made with). Only a process killed outright leaves "running" behind, and the
next run treats it as unfinished. A record that cannot be read (not JSON, not a record) is
reported by :meth:`Step.damage`, so a caller can say so once before recomputing.

("Step", not "stage": a *stage* is a model tier of the audio demo — semantic, coarse, fine.)
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import hashlib
import json
import os
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aria_tda._fingerprint import content_digest
from aria_tda._io import read_json, remove_path, write_json
from aria_tda.manifest import diff_manifest, package_version

__all__ = ["Step", "file_fingerprint", "params_digest"]

#: The record file of a step (the name predates "step"; kept so that finished runs are
#: still reused).
RECORD = "stage.json"


def params_digest(params: Mapping[str, Any]) -> str:
    """A short stable hash of JSON-able parameters (sorted keys)."""
    text = json.dumps(params, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def file_fingerprint(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Identity of an input file or folder by content: its path and a digest of its bytes.

    The digest (:func:`aria_tda._fingerprint.content_digest`) changes whenever a byte does,
    even when the file was rewritten with its mtime kept; it is cached per
    ``(path, inode, size, mtime, ctime)``, so a rerun on unchanged inputs does not hash again.
    """
    p = Path(path)
    return {"path": str(p.resolve()), "digest": content_digest(p)}


@dataclass
class Step:
    """One resumable step of a pipeline, stored in ``root/name``."""

    root: Path
    name: str
    params: dict[str, Any] = field(default_factory=dict)
    _t0: float = field(default=0.0, init=False, repr=False)

    @property
    def path(self) -> Path:
        return Path(self.root) / self.name

    @property
    def record_path(self) -> Path:
        return self.path / RECORD

    def _read(self) -> tuple[dict[str, Any] | None, str | None]:
        """``(record, None)``, ``(None, None)`` without one, ``(None, why)`` when unreadable."""
        if not self.record_path.is_file():
            return None, None
        try:
            data = read_json(self.record_path)
        except OSError as exc:
            return None, f"cannot be read ({exc.strerror or exc})"
        except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
            return None, f"is not valid JSON ({type(exc).__name__})"
        if not isinstance(data, dict):
            return None, f"holds a JSON {type(data).__name__}, not a step record"
        if not isinstance(data.get("status"), str) or not isinstance(data.get("params"), dict):
            return None, "is not a step record (no status and parameters)"
        return data, None

    def record(self) -> dict[str, Any] | None:
        """The stored record, or ``None`` (none, or unreadable: see :meth:`damage`)."""
        return self._read()[0]

    def damage(self) -> str | None:
        """What is wrong with a record file that exists but cannot be used, else ``None``.

        E.g. ``".cache/TRAK/stage.json is not valid JSON (JSONDecodeError)"``.
        """
        why = self._read()[1]
        return None if why is None else f"{self.record_path} {why}"

    def is_complete(self) -> bool:
        """True when a complete record with the same parameters exists."""
        rec = self.record()
        if rec is None or rec.get("status") != "complete":
            return False
        return not diff_manifest(rec.get("params", {}), self.params) and not diff_manifest(
            self.params, rec.get("params", {})
        )

    def stale_reason(self) -> str | None:
        """Why an existing record cannot be reused.

        ``None`` if nothing is there or it is reusable.
        """
        rec = self.record()
        if rec is None:
            return None
        if rec.get("status") == "failed":
            return "an earlier run failed in it"
        if rec.get("status") != "complete":
            return "an earlier run did not finish it"
        lines = diff_manifest(rec.get("params", {}), self.params)
        return ("parameters changed: " + "; ".join(lines)) if lines else None

    def begin(self, *, clear: bool = True) -> Path:
        """Create the step directory and mark it running.

        With ``clear`` (default) stale content is removed first; ``clear=False`` keeps it, for
        steps whose body resumes partial work itself (and checks that work's settings).
        """
        if clear:
            remove_path(self.path)
        self.path.mkdir(parents=True, exist_ok=True)
        self._t0 = time.perf_counter()
        write_json(self.record_path, {"status": "running", "params": self.params})
        return self.path

    def abandon(self, *, keep: bool = False) -> None:
        """Undo :meth:`begin` after a failure: never leave the step marked "running".

        Parameters
        ----------
        keep : bool
            ``False``: remove the step folder. ``True`` (a body that resumes its own partial
            work): keep the folder and mark the record "failed", with the parameters the
            partial work was made with.
        """
        if not keep:
            remove_path(self.path)
            return
        try:
            write_json(self.record_path, {"status": "failed", "params": self.params})
        except OSError:  # e.g. the disk is full: a record that is not "running" at least
            remove_path(self.record_path)

    @contextlib.contextmanager
    def running(self, *, clear: bool = True) -> Iterator[Path]:
        """:meth:`begin` the step for the body; :meth:`abandon` it if the body raises.

        Call :meth:`complete` inside the body when it succeeds. Any exception (Ctrl-C and a
        full disk included) leaves no record marked "running": with ``clear`` the step folder
        is removed, without it (a body resuming partial work) the record says "failed".

        Parameters
        ----------
        clear : bool
            As for :meth:`begin`.

        Yields
        ------
        pathlib.Path
            The step folder.
        """
        try:
            path = self.begin(clear=clear)
        except BaseException:
            self.abandon(keep=not clear)
            raise
        try:
            yield path
        except BaseException:
            rec = self.record()
            if rec is None or rec.get("status") != "complete":
                self.abandon(keep=not clear)
            raise

    def complete(self, **summary: Any) -> dict[str, Any]:
        """Mark the step complete, storing ``summary`` (and the wall time) in its record."""
        rec = {
            "status": "complete",
            "params": self.params,
            "summary": summary,
            "seconds": round(time.perf_counter() - self._t0, 3) if self._t0 else None,
            "aria_version": package_version(),
            "finished": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        }
        write_json(self.record_path, rec)
        return rec

    def summary(self) -> dict[str, Any]:
        """The summary stored by :meth:`complete` (empty if none)."""
        rec = self.record() or {}
        return dict(rec.get("summary", {}))
