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
(:class:`aria.cli._common.WarningPrinter`).
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
import warnings
from collections.abc import Sequence

from aria._version import __version__
from aria.cli._common import handle_errors, install_warning_format

# Order in ``aria --help``; discovered modules not listed here follow alphabetically.
ORDER = ("demo", "diagnose", "aggregate", "features", "homogeneity", "run", "sweep", "report")


def _command_modules() -> list[str]:
    import aria.cli as pkg

    names = [m.name for m in pkgutil.iter_modules(pkg.__path__) if not m.name.startswith("_")]
    return sorted(names, key=lambda n: (ORDER.index(n) if n in ORDER else len(ORDER), n))


def build_parser() -> argparse.ArgumentParser:
    """The ``aria`` argument parser with every sub-command registered."""
    parser = argparse.ArgumentParser(
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
    with warnings.catch_warnings():
        printer = install_warning_format(args.command)
        try:
            return handle_errors(args.command, lambda: args.func(args))
        finally:
            printer.flush()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
