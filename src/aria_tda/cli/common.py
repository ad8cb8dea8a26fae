"""Shared CLI plumbing: one-line errors, warnings printed once, JSON printing, common flags.

Errors: an :class:`~aria_tda.errors.AriaError` (a user mistake: bad parameters, bad data,
unreadable files, manifest mismatch, missing extra), an ``OSError`` (missing or unwritable
paths) or a ``MemoryError`` (an allocation beyond what the process may use; under a memory
limit also a library that could not load for it: :func:`aria_tda._memory.limit_failure`) is one
line ``aria-tda CMD: error: ...`` and exit status 2; Ctrl-C is one line and status 130. Any other
exception is a bug in ARIA and keeps its traceback. ``ARIA_DEBUG=1`` shows the traceback of user
mistakes too. The line is one line whatever the message: ANSI escape codes are removed, a
message's lines are joined and a message longer than :data:`MAX_ERROR_CHARS` is cut
(``ARIA_DEBUG=1`` shows all of it).

A closed pipe (``aria-tda diagnose F --json | head -5``) ends quietly, as a command-line tool
killed by ``SIGPIPE`` does: nothing on stderr, exit status 141 (128 + SIGPIPE), standard output
redirected to ``/dev/null`` so the interpreter's last flush cannot fail
(:func:`quiet_broken_pipe`).

Warnings: ARIA's warnings are ``aria-tda CMD: warning: ...`` lines, each printed once. Warnings
that differ only in the group size (``K=20``, ``K=50``, ...) are collected and printed once at
the end of the command, as one line listing the K's they concern. Other libraries' warnings
(torch, NumPy, pandas, pyarrow, zarr) that pass Python's warning filters are one line too,
``aria-tda CMD: warning: Category: first line of the message``, each printed once.

An ``OSError`` is read by :func:`aria_tda._paths.os_error_message`: a full disk or an exceeded
quota as ``No space left on DEVICE ..., writing PATH``, a symlink loop as such, and "File
exists", "Is a directory" or "Not a directory" as what was expected and what was found, led by
the flag whose path it concerns (``--spill-dir: expected a directory, got a file: 'x'``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import sys
import warnings
from collections.abc import Callable
from typing import Any

from aria_tda._memory import headroom, limit_failure
from aria_tda.errors import AriaError, AriaWarning, MemoryLimitError, one_line

__all__ = [
    "WarningPrinter",
    "add_progress_flag",
    "add_score_reading_flags",
    "add_transpose_flag",
    "flag_names",
    "flush_stdout",
    "handle_errors",
    "install_warning_format",
    "print_json",
    "quiet_broken_pipe",
]

EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
#: Exit status of a command whose reader went away (128 + SIGPIPE), as a shell reports it.
EXIT_BROKEN_PIPE = 141
#: The longest error line printed (the rest is cut; ARIA_DEBUG=1 shows all of it).
MAX_ERROR_CHARS = 1000

#: ``K=20`` (or ``K = 20``) inside a warning: the part that varies between repeats.
_K_IN_MESSAGE = re.compile(r"\bK ?= ?(\d+)\b")


def handle_errors(
    command: str,
    body: Callable[[], int | None],
    *,
    args: argparse.Namespace | None = None,
    flags: dict[str, str] | None = None,
) -> int:
    """Run ``body``; turn user mistakes into a one-line message on stderr and exit status 2.

    Parameters
    ----------
    command : str
        The sub-command's name (``aria-tda COMMAND: error: ...``).
    body : callable
        Runs the command; returns its exit status (``None`` means 0).
    args : argparse.Namespace, optional
        The parsed arguments: an ``OSError`` about a path given to a flag names the flag.
    flags : dict of str to str, optional
        How each argument is written on the command line (``{"spill_dir": "--spill-dir",
        "scores": "SCORES"}``, :func:`flag_names`); default ``--`` + the name.
    """
    debug = os.environ.get("ARIA_DEBUG", "") not in {"", "0"}
    try:
        status = body()
        return 0 if status is None else int(status)
    except BrokenPipeError:
        if not _stdout_is_closed():
            raise  # another pipe (a worker, a socket): a real error, not the reader leaving
        return quiet_broken_pipe()
    except AriaError as exc:
        if debug:
            raise
        _one_line_error(command, f"{type(exc).__name__}: {exc}")
        return EXIT_USAGE
    except OSError as exc:
        if debug:
            raise
        err = _limit_failure(command, exc)
        if err is not None:  # a memory map that did not fit, a library that could not load
            _one_line_error(command, f"{type(err).__name__}: {err}")
            return EXIT_USAGE
        from aria_tda._paths import os_error_message

        _one_line_error(command, os_error_message(exc, name=_flag_of(exc, args, flags)))
        return EXIT_USAGE
    except Exception as exc:  # re-raised below unless it is the memory limit's doing
        err = _limit_failure(command, exc)
        if err is None or debug:
            raise  # not the memory limit: a bug, with its traceback
        _one_line_error(command, f"{type(err).__name__}: {err}")
        return EXIT_USAGE
    except KeyboardInterrupt:
        _one_line_error(command, "interrupted; finished stages are kept and a rerun resumes")
        return EXIT_INTERRUPTED


def _limit_failure(command: str, exc: BaseException) -> MemoryLimitError | None:
    """``exc`` read as the memory limit it ran into (:func:`aria_tda._memory.limit_failure`)."""
    return limit_failure(exc, what=f"aria-tda {command}",
                         advice="raise the limit" if headroom() is not None else "")


def flag_names(parser: argparse.ArgumentParser) -> dict[str, str]:
    """How each argument of ``parser`` is written: ``dest -> "--long-flag"`` or ``"METAVAR"``.

    Parameters
    ----------
    parser : argparse.ArgumentParser
        A sub-command's parser.
    """
    out: dict[str, str] = {}
    for action in parser._actions:
        if action.option_strings:
            out[action.dest] = max(action.option_strings, key=len)
        elif isinstance(action.metavar, str):
            out[action.dest] = action.metavar
        else:
            out[action.dest] = action.dest.upper()
    return out


def _flag_of(
    exc: OSError, args: argparse.Namespace | None, flags: dict[str, str] | None = None
) -> str | None:
    """The flag (``--spill-dir``) or argument (``SCORES``) whose path ``exc`` is about, if any.

    The path given that is ``exc.filename`` itself or its nearest folder wins (so ``--out
    res`` beats an input folder ``.`` for a file under ``res/``).
    """
    filename = getattr(exc, "filename", None)
    if args is None or not isinstance(filename, str | bytes | os.PathLike):
        return None
    from pathlib import Path

    target = Path(os.fsdecode(filename)).absolute()
    best: tuple[int, str] | None = None
    for dest, value in vars(args).items():
        values = value if isinstance(value, list | tuple) else [value]
        for v in values:
            if not isinstance(v, str | os.PathLike) or not os.fspath(v) or dest == "command":
                continue
            given = Path(v).absolute()
            if (given == target or given in target.parents) and (
                best is None or len(given.parts) > best[0]
            ):
                best = (len(given.parts), (flags or {}).get(dest) or "--" + dest.replace("_", "-"))
    return None if best is None else best[1]


class WarningPrinter:
    """Prints ARIA's warnings as ``aria-tda COMMAND: warning: ...`` lines, each once.

    A warning whose text names a group size (``K=20``) is held back; :meth:`flush` prints one
    line per (message with the K left out, warning class), listing every K it was raised for.

    Parameters
    ----------
    command : str
        The sub-command's name.
    file : file-like, optional
        Where to print (default: ``sys.stderr`` at the time of printing).
    one_line_others : bool
        Print other libraries' warnings as one line ``Category: first line`` each (once per
        message) too; otherwise they go to the ``warnings.showwarning`` hook that was there
        before. :func:`install_warning_format` (every command) sets it.
    """

    def __init__(self, command: str, file: Any = None, *, one_line_others: bool = False) -> None:
        self.command = command
        self.file = file
        self.one_line_others = one_line_others
        self._seen: set[tuple[str, type]] = set()
        self._by_k: dict[tuple[str, type], list[int]] = {}
        self._first: dict[tuple[str, type], str] = {}
        self._other: Callable[..., Any] = warnings.showwarning

    def _print(self, text: str) -> None:
        print(f"aria-tda {self.command}: warning: {text}", file=self.file or sys.stderr, flush=True)

    def show(self, message: Any, category: Any, filename: str, lineno: int, file: Any = None,
             line: Any = None) -> None:
        """The ``warnings.showwarning`` hook.

        Parameters
        ----------
        message : Warning or str
            The warning.
        category : type
            Its class.
        filename : str
            Where it was raised.
        lineno : int
            The line it was raised on.
        file : file-like, optional
            Passed on for warnings that are not ARIA's.
        line : str, optional
            Passed on for warnings that are not ARIA's.
        """
        if not (isinstance(category, type) and issubclass(category, AriaWarning)):
            if not self.one_line_others:
                self._other(message, category, filename, lineno, file, line)
                return
            name = getattr(category, "__name__", "Warning")
            text = f"{name}: {one_line(message) or name}"
            if (text, category) not in self._seen:
                self._seen.add((text, category))
                self._print(text)
            return
        text = str(message)
        ks = [int(k) for k in _K_IN_MESSAGE.findall(text)]
        if len(ks) == 1:
            key = (_K_IN_MESSAGE.sub("K=#", text), category)
            self._first.setdefault(key, text)
            found = self._by_k.setdefault(key, [])
            if ks[0] not in found:
                found.append(ks[0])
            return
        if (text, category) not in self._seen:
            self._seen.add((text, category))
            self._print(text)

    def flush(self) -> None:
        """Print the held-back warnings, one line per message listing its K's."""
        for key, ks in self._by_k.items():
            if len(ks) == 1:
                self._print(self._first[key])
            else:
                listed = ", ".join(str(k) for k in sorted(ks))
                self._print(key[0].replace("K=#", f"K={listed}"))
        self._by_k.clear()
        self._first.clear()


def install_warning_format(command: str) -> WarningPrinter:
    """Show ARIA's warnings as ``aria-tda COMMAND: warning: ...`` lines (each message once).

    Call inside ``warnings.catch_warnings()``, and call the returned printer's ``flush()``
    when the command ends. Other libraries' warnings are one line each too
    (``aria-tda COMMAND: warning: UserWarning: ...``), where Python's filters let them through.

    Parameters
    ----------
    command : str
        The sub-command's name.
    """
    printer = WarningPrinter(command, one_line_others=True)
    warnings.showwarning = printer.show
    warnings.simplefilter("always", AriaWarning)  # the printer does the de-duplication
    return printer


def _stdout_is_closed() -> bool:
    """Whether standard output is a pipe whose reader has gone (writing it would fail)."""
    import select

    try:
        fd = sys.stdout.fileno()
        poller = select.poll()
        poller.register(fd, select.POLLOUT)
        events = poller.poll(0)
    except (AttributeError, OSError, ValueError):  # no real stdout (captured, closed)
        return True
    return any(ev & (select.POLLERR | select.POLLHUP) for _, ev in events)


def quiet_broken_pipe() -> int:
    """End quietly after the reader of standard output went away; return status 141.

    Standard output is pointed at ``/dev/null``, so nothing buffered can fail again when the
    interpreter flushes it on exit (Python's own advice for ``SIGPIPE``; see the ``signal``
    module's documentation).
    """
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    return EXIT_BROKEN_PIPE


def flush_stdout() -> int:
    """Flush standard output; 0, or 141 when its reader has gone (:func:`quiet_broken_pipe`)."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        return quiet_broken_pipe()
    except (OSError, ValueError, AttributeError):
        return 0
    return 0


def _one_line_error(command: str, message: str) -> None:
    """Print ``aria-tda COMMAND: error: MESSAGE`` as one line (no ANSI codes, bounded)."""
    parts = [one_line(part, limit=MAX_ERROR_CHARS) for part in str(message).splitlines()]
    text = " ".join(part for part in parts if part)
    if len(text) > MAX_ERROR_CHARS:
        text = text[: MAX_ERROR_CHARS - 40].rstrip() + " ... (ARIA_DEBUG=1 shows the rest)"
    print(f"aria-tda {command}: error: {text}", file=sys.stderr, flush=True)


def print_json(obj: Any) -> None:
    """Print ``obj`` as indented JSON on stdout (numpy values allowed).

    Parameters
    ----------
    obj : Any
        A JSON-able object.
    """
    from aria_tda._io import json_default

    print(json.dumps(obj, indent=2, default=json_default))


def add_score_reading_flags(parser: argparse.ArgumentParser) -> None:
    """Add ``--chunk-rows N`` and ``--key NAME`` (how a score matrix is read).

    Parameters
    ----------
    parser : argparse.ArgumentParser
        The sub-command's parser.
    """
    parser.add_argument("--chunk-rows", type=int, default=None, metavar="N",
                        help="rows per streamed block (default: about 64 MB)")
    parser.add_argument("--key", default=None, metavar="NAME",
                        help="array to read from an .npz, a torch dict or a zarr group")


def add_scheduler_flag(parser: argparse.ArgumentParser) -> None:
    """Add ``--scheduler ADDRESS|local:N`` (maps to ``scheduler=...``; see :mod:`aria_tda._dask`).

    Parameters
    ----------
    parser : argparse.ArgumentParser
        The sub-command's parser.
    """
    parser.add_argument(
        "--scheduler", default=None, metavar="ADDRESS|local:N",
        help="run on a Dask cluster: 'local:N' starts N worker processes on this machine for "
        "the run, 'tcp://HOST:PORT' uses a running scheduler whose workers see the same files "
        "(pip install 'aria-tda[scale]'; default: no cluster)")


def add_transpose_flag(parser: argparse.ArgumentParser) -> None:
    """Add ``--transpose`` (maps to ``transpose=True``: the matrix is queries x training).

    Parameters
    ----------
    parser : argparse.ArgumentParser
        The subcommand's parser.
    """
    parser.add_argument(
        "--transpose",
        action="store_true",
        help="the score matrix is stored queries x training segments (captum TracInCP, "
        "quanda explanations, LogIX; the other way round from its format's convention): read "
        "its transpose. Not for Kronfluence's .safetensors, which ARIA transposes itself",
    )


def add_progress_flag(parser: argparse.ArgumentParser) -> None:
    """Add ``--no-progress`` (maps to ``progress=False``).

    Parameters
    ----------
    parser : argparse.ArgumentParser
        The sub-command's parser.
    """
    parser.add_argument(
        "--no-progress",
        dest="progress",
        action="store_false",
        default=None,
        help="do not draw progress bars (also: ARIA_PROGRESS=0)",
    )


def add_summary_flags(parser: argparse.ArgumentParser) -> None:
    """Add ``--json`` (the run's summary as JSON on stdout, every other line on stderr).

    Parameters
    ----------
    parser : argparse.ArgumentParser
        The sub-command's parser (``run``, ``homogeneity``).
    """
    parser.add_argument(
        "--json", action="store_true",
        help="print the summary (per setting: verdict, leading channels, distinctive aspect, "
        "K) as JSON on stdout; log lines go to stderr")


def run_and_summarise(args: argparse.Namespace, work: Any) -> int:
    """Run ``work()`` (which returns the results folder), then print the folder's summary.

    With ``args.json`` every line ``work`` prints goes to stderr and stdout holds only the
    JSON summary (:func:`aria_tda.study.summary.results_summary`); otherwise the summary table
    follows the log (nothing with ``args.quiet``).

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line (``json``, optionally ``quiet``).
    work : callable
        ``work() -> pathlib.Path``.
    """
    from aria_tda.study.summary import format_summary, results_summary

    if args.json:
        with contextlib.redirect_stdout(sys.stderr):
            out = work()
        print_json(results_summary(out))
        return 0
    out = work()
    if not getattr(args, "quiet", False):
        print(format_summary(results_summary(out)), flush=True)
    return 0
