"""The ``aria-tda`` command line: a thin layer over the library.

Each sub-command lives in its own module ``aria_tda.cli.<name>`` exposing::

    def register(subparsers) -> None   # add its parser; set_defaults(func=run)
    def run(args: argparse.Namespace) -> int

Modules are discovered automatically (names starting with ``_`` are private helpers); other
installed packages add sub-commands through the ``aria_tda.commands`` entry-point group, each
entry point naming such a module (the experiments package adds ``demo`` and ``sensitivity``).
A command an absent package would add is still listed and says in one line what to install.
Sub-command modules must import heavy dependencies inside ``run`` so ``aria-tda --help`` is fast.
Flags map one-to-one onto library keyword arguments; no logic lives here.

:func:`main` is the dispatcher: a user mistake (any :class:`~aria_tda.errors.AriaError`) is one
line ``aria-tda COMMAND: error: ...`` and exit status 2, Ctrl-C one line and status 130, and an
unexpected exception keeps its traceback (a bug should be visible); an ``OSError`` about a
path given to a flag names the flag. ARIA's warnings print once each, other libraries'
warnings as one line each; repeats that differ only in K are one line listing the K's
(:class:`aria_tda.cli.common.WarningPrinter`). A usage error (an unknown flag, a bad choice) is
one line too, and a failed command removes the empty folders it made for its output. Under a
tight memory limit (``ulimit -v``) libraries load with one BLAS thread and Arrow on ``malloc``
(:func:`aria_tda._memory.adapt_to_limit`), and what the limit refuses is one line. A
closed pipe (``aria-tda diagnose F --json | head -5``) ends quietly with status 141, as a
command killed by ``SIGPIPE`` does (:func:`aria_tda.cli.common.quiet_broken_pipe`).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.util
import pkgutil
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from aria_tda.cli.common import (
    flag_names,
    flush_stdout,
    handle_errors,
    install_warning_format,
)

# Order in ``aria-tda --help``; discovered modules not listed here follow alphabetically.
ORDER = (
    "demo", "diagnose", "aggregate", "features", "embed", "retrieve", "homogeneity", "run",
    "report", "evidence", "sensitivity",
)

#: Entry-point group of sub-commands that other installed packages add.
ENTRY_POINT_GROUP = "aria_tda.commands"

#: Sub-commands of the experiments package, listed (and refused in one line) when it is absent.
EXPERIMENT_COMMANDS = {
    "demo": "the paper's experiments end to end (symbolic ground-truth validation; audio)",
    "sensitivity": "TRAK sensitivity over projection dimension x lambda (benchmark models)",
}


#: Modules of this package that are not sub-commands (what the commands share).
NOT_COMMANDS = frozenset({"common"})


def _own_command(name: str | None) -> dict[str, str] | None:
    """``{name: module}`` when ``name`` is one of ARIA's own sub-commands, else ``None``.

    An installed package's command of the same name would not replace it (see
    :func:`_command_modules`), so a command line naming one needs neither the other modules
    nor the installed packages' entry points (reading those takes longer than a small
    diagnosis).
    """
    if name is None or name.startswith("_") or not name.isidentifier() or name in NOT_COMMANDS:
        return None
    module = f"aria_tda.cli.{name}"
    return {name: module} if importlib.util.find_spec(module) is not None else None


def _command_modules() -> dict[str, str]:
    """Sub-command name -> module path: ARIA's own, then those of installed packages."""
    from importlib.metadata import entry_points

    import aria_tda.cli as pkg

    found = {m.name: f"aria_tda.cli.{m.name}" for m in pkgutil.iter_modules(pkg.__path__)
             if not m.name.startswith("_") and m.name not in NOT_COMMANDS}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        found.setdefault(ep.name, ep.value)
    names = sorted(found, key=lambda n: (ORDER.index(n) if n in ORDER else len(ORDER), n))
    return {n: found[n] for n in names}


class _OneLineParser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line (``aria-tda CMD: error: ...``), status 2.

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


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The ``aria-tda`` argument parser with every sub-command registered.

    Parameters
    ----------
    only : str, optional
        Register this sub-command alone when it is one (what :func:`main` does for a command
        line naming one: a command imports only its own modules — ``diagnose`` of a small file
        is not slowed by the study's or the demos' imports). ``None``: every sub-command.
    """
    parser = _OneLineParser(
        prog="aria-tda",
        description=(
            "ARIA: is a training-data-attribution score matrix for a music model trustworthy, "
            "and along which musical aspects does it operate? "
            "Run 'aria-tda COMMAND --help' for each command."
        ),
    )
    parser.add_argument("--version", action=_VersionAction)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    modules = _own_command(only) or _command_modules()
    names = {*modules, *EXPERIMENT_COMMANDS}
    if only in names:
        names = {only}
    for name in sorted(names, key=lambda n: (ORDER.index(n) if n in ORDER else len(ORDER), n)):
        if name in modules:
            importlib.import_module(modules[name]).register(sub)
        else:
            _register_absent(sub, name)
    return parser


class _VersionAction(argparse.Action):
    """``--version``: print ``aria-tda VERSION`` and exit (the version read only then)."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS,
                 default: str = argparse.SUPPRESS, help: str | None = None) -> None:
        super().__init__(option_strings=option_strings, dest=dest, default=default, nargs=0,
                         help=help or "show program's version number and exit")

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        from aria_tda._version import __version__

        parser._print_message(f"aria-tda {__version__}\n", sys.stdout)  # as argparse's "version"
        parser.exit()


def _register_absent(sub: argparse._SubParsersAction, name: str) -> None:
    """A sub-command of the experiments package, which is not installed: it says so in one line."""
    p = sub.add_parser(name, help=f"{EXPERIMENT_COMMANDS[name]} [needs aria-tda-experiments]",
                       add_help=False, prefix_chars="\0")  # every flag goes to `rest`
    p.add_argument("rest", nargs=argparse.REMAINDER)
    p.set_defaults(func=_absent_command)


def _absent_command(args: argparse.Namespace) -> int:
    from aria_tda.errors import MissingDependencyError

    raise MissingDependencyError(
        f"'aria-tda {args.command}' is a command of the experiments package, which is not "
        "installed: pip install -e experiments (from a clone of the repository; "
        "scripts/setup.sh installs it)"
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``aria-tda`` console script; returns the exit status.

    Parameters
    ----------
    argv : sequence of str, optional
        The arguments (default: ``sys.argv[1:]``).
    """
    from aria_tda._memory import adapt_to_limit

    adapt_to_limit()  # a tight memory limit: one BLAS thread (else it may spin), Arrow on malloc
    given = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(only=given[0] if given and not given[0].startswith("-") else None)
    args = parser.parse_args(argv)
    absent = _absent_output_dirs(args)
    with warnings.catch_warnings():
        printer = install_warning_format(args.command)
        try:
            status = handle_errors(args.command, lambda: args.func(args), args=args,
                                   flags=_sub_flags(parser, args.command))
        finally:
            printer.flush()
    if status == 0:
        status = flush_stdout()  # a reader that left before the last flush: quiet, 141
    if status != 0:
        _remove_empty(absent)
    return status


def _sub_flags(parser: argparse.ArgumentParser, command: str) -> dict[str, str]:
    """How the arguments of sub-command ``command`` are written (for messages)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and command in action.choices:
            return flag_names(action.choices[command])
    return {}


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
