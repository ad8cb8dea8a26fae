"""The ``aria`` command line: a thin layer over the library.

Each sub-command lives in its own module ``aria.cli.<name>`` exposing::

    def register(subparsers) -> None   # add its parser; set_defaults(func=run)
    def run(args: argparse.Namespace) -> int

Modules are discovered automatically (names starting with ``_`` are private helpers).
Sub-command modules must import heavy dependencies inside ``run`` so ``aria --help`` is fast.
Flags map one-to-one onto library keyword arguments; no logic lives here.

:func:`main` is the dispatcher: a user mistake (any :class:`~aria.errors.AriaError`) is one
line ``aria COMMAND: error: ...`` and exit status 2, Ctrl-C one line and status 130, and an
unexpected exception keeps its traceback (a bug should be visible). ARIA's warnings print
once each; repeats that differ only in K are one line listing the K's
(:class:`aria.cli._common.WarningPrinter`). A usage error (an unknown flag, a bad choice) is
one line too, and a failed command removes the empty folders it made for its output.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import pkgutil
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from aria._version import __version__
from aria.cli._common import handle_errors, install_warning_format

# Order in ``aria --help``; discovered modules not listed here follow alphabetically.
ORDER = (
    "demo", "diagnose", "aggregate", "features", "embed", "retrieve", "homogeneity", "run", "sweep",
    "report",
)


def _command_modules() -> list[str]:
    import aria.cli as pkg

    names = [m.name for m in pkgutil.iter_modules(pkg.__path__) if not m.name.startswith("_")]
    return sorted(names, key=lambda n: (ORDER.index(n) if n in ORDER else len(ORDER), n))


class _OneLineParser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line (``aria CMD: error: ...``), status 2.

    argparse prints the whole usage block before the message; ARIA prints only the message
    and where the usage is (every user mistake is one line). Sub-parsers inherit the class.
    """

    def error(self, message: str) -> NoReturn:
        """Print ``PROG: error: MESSAGE (see PROG --help)`` on one line and exit with status 2.

        Parameters
        ----------
        message : str
            argparse's message.
        """
        text = " ".join(message.split())
        self.exit(2, f"{self.prog}: error: {text} (see '{self.prog} --help')\n")


def build_parser() -> argparse.ArgumentParser:
    """The ``aria`` argument parser with every sub-command registered."""
    parser = _OneLineParser(
        prog="aria",
        description=(
            "ARIA: is a training-data-attribution score matrix for a music model trustworthy, "
            "and along which musical aspects does it operate? "
            "Run 'aria COMMAND --help' for each command."
        ),
    )
    parser.add_argument("--version", action="version", version=f"aria {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in _command_modules():
        importlib.import_module(f"aria.cli.{name}").register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``aria`` console script; returns the exit status.

    Parameters
    ----------
    argv : sequence of str, optional
        The arguments (default: ``sys.argv[1:]``).
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    absent = _absent_output_dirs(args)
    with warnings.catch_warnings():
        printer = install_warning_format(args.command)
        try:
            status = handle_errors(args.command, lambda: args.func(args))
        finally:
            printer.flush()
    if status != 0:
        _remove_empty(absent)
    return status


#: Flags naming something a command writes; a failed run removes the empty folders it made.
_OUTPUT_FLAGS = ("out", "output", "tables_dir", "tmp_dir")


def _absent_output_dirs(args: argparse.Namespace) -> list[Path]:
    """The output paths of ``args`` and their ancestors that do not exist yet, innermost first."""
    absent: list[Path] = []
    for flag in _OUTPUT_FLAGS:
        value = getattr(args, flag, None)
        if not isinstance(value, str) or not value:
            continue
        p = Path(value).absolute()
        while not p.exists() and p != p.parent:
            absent.append(p)
            p = p.parent
    return sorted(set(absent), key=lambda q: len(q.parts), reverse=True)


def _remove_empty(dirs: list[Path]) -> None:
    """Remove the folders of ``dirs`` that a failed command left empty (innermost first)."""
    for d in dirs:
        if d.is_dir() and not d.is_symlink():
            with contextlib.suppress(OSError):
                d.rmdir()  # only an empty folder goes


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
