"""Shared CLI plumbing: error reporting without tracebacks, JSON printing, common flags."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from typing import Any

from aria.errors import AriaError

__all__ = ["add_progress_flag", "add_score_reading_flags", "handle_errors", "install_warning_format", "print_json"]

EXIT_USAGE = 2


def handle_errors(command: str, body: Callable[[], int | None]) -> int:
    """Run ``body``; turn user mistakes into a one-line message on stderr and exit status 2.

    ``AriaError`` (bad parameters, bad data, unreadable files, manifest mismatch, missing extra)
    and ``OSError`` (missing or unwritable paths) never print a traceback. Set
    ``ARIA_DEBUG=1`` to see one anyway.
    """
    debug = os.environ.get("ARIA_DEBUG", "") not in {"", "0"}
    try:
        status = body()
        return 0 if status is None else int(status)
    except AriaError as exc:
        if debug:
            raise
        _one_line_error(command, f"{type(exc).__name__}: {exc}")
        return EXIT_USAGE
    except OSError as exc:
        if debug:
            raise
        where = f": {exc.filename!r}" if getattr(exc, "filename", None) else ""
        _one_line_error(command, f"{exc.strerror or exc}{where}")
        return EXIT_USAGE
    except KeyboardInterrupt:
        _one_line_error(command, "interrupted; finished stages are kept and a rerun resumes")
        return 130


def install_warning_format(command: str) -> None:
    """Show ARIA's warnings as ``aria COMMAND: warning: ...`` lines (each message once).

    Call inside ``warnings.catch_warnings()``. Other libraries' warnings keep Python's format.
    """
    import warnings

    from aria.errors import AriaWarning

    original = warnings.showwarning

    def show(message: Any, category: Any, filename: str, lineno: int, file: Any = None, line: Any = None) -> None:
        if isinstance(category, type) and issubclass(category, AriaWarning):
            print(f"aria {command}: warning: {message}", file=sys.stderr)
        else:
            original(message, category, filename, lineno, file, line)

    warnings.showwarning = show
    warnings.simplefilter("default", AriaWarning)


def _one_line_error(command: str, message: str) -> None:
    first, *rest = str(message).splitlines() or [""]
    print(f"aria {command}: error: {first}", file=sys.stderr)
    for line in rest:
        print(f"  {line.strip()}", file=sys.stderr)


def print_json(obj: Any) -> None:
    """Print ``obj`` as indented JSON on stdout (numpy values allowed)."""
    from aria._io import _json_default

    print(json.dumps(obj, indent=2, default=_json_default))


def add_score_reading_flags(parser: argparse.ArgumentParser) -> None:
    """Add ``--chunk-rows N`` and ``--key NAME`` (how a score matrix is read)."""
    parser.add_argument("--chunk-rows", type=int, default=None, metavar="N",
                        help="rows per streamed block (default: about 64 MB)")
    parser.add_argument("--key", default=None, metavar="NAME",
                        help="array to read from an .npz, a torch dict or a zarr group")


def add_progress_flag(parser: argparse.ArgumentParser) -> None:
    """Add ``--no-progress`` (maps to ``progress=False``)."""
    parser.add_argument(
        "--no-progress",
        dest="progress",
        action="store_false",
        default=None,
        help="do not draw progress bars (also: ARIA_PROGRESS=0)",
    )
