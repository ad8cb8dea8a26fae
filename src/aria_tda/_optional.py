"""Optional dependencies: lazy imports and up-front checks with errors that name what to install.

- :func:`require` imports one module where it is used, or raises
  :class:`~aria_tda.errors.MissingDependencyError` naming the extra.
- :func:`require_all` checks, *before any work*, that every module a command needs is
  installed (without importing them: no torch import just to check), and raises one
  :class:`~aria_tda.errors.MissingDependencyError` naming every missing module and what to
  install — so a command on an install without the extra stops with one line, never once per
  file (the CLI prints ``aria-tda COMMAND: error: MissingDependencyError: ...``, status 2).
- :func:`missing_message` is the same check as a message (``None`` when all is there), for a
  command that degrades instead of refusing (``aria-tda report`` without matplotlib).
- :func:`require_scheduler` is the check of a ``--scheduler`` value (the ``scale`` extra).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Iterable
from types import ModuleType

from aria_tda.errors import MissingDependencyError

__all__ = ["install_hint", "is_installed", "missing_message", "require", "require_all",
           "require_scheduler"]


def install_hint(extra: str) -> str:
    """The command that installs an ``aria-tda`` extra.

    Parameters
    ----------
    extra : str
        An extra of ``aria-tda`` (``audio``, ``embed``, ``report``, ``scale``, ``attribution``).

    Returns
    -------
    str
        ``pip install 'aria-tda[extra]'``.
    """
    return f"pip install 'aria-tda[{extra}]'"


def require(module: str, extra: str, *, purpose: str | None = None) -> ModuleType:
    """Import ``module`` or raise :class:`MissingDependencyError` naming the extra to install.

    Parameters
    ----------
    module : str
        Dotted module name, e.g. ``"zarr"``.
    extra : str
        The ``aria-tda`` extra that provides it; the error says ``pip install 'aria-tda[extra]'``.
    purpose : str, optional
        What the module is needed for, added to the message.

    Returns
    -------
    types.ModuleType
        The imported module.
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        why = f" (needed for {purpose})" if purpose else ""
        raise MissingDependencyError(
            f"{module} is not installed{why}: {install_hint(extra)} ({exc})"
        ) from exc


def is_installed(module: str) -> bool:
    """Whether ``module`` can be found, without importing it (a dotted name imports its parents).

    Parameters
    ----------
    module : str
        Module name, e.g. ``"soundfile"``.

    Returns
    -------
    bool
        True when the module is imported already or its spec is found.
    """
    if module in sys.modules:
        return sys.modules[module] is not None
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent package is missing / a broken __spec__
        return False


def _names(modules: list[str]) -> str:
    if len(modules) == 1:
        return f"{modules[0]} is"
    return f"{', '.join(modules[:-1])} and {modules[-1]} are"


def missing_message(
    modules: Iterable[str], extra: str | None = None, *, purpose: str, install: str | None = None
) -> str | None:
    """The message of :func:`require_all`, or ``None`` when every module is installed.

    Parameters
    ----------
    modules : iterable of str
        Import names the task needs.
    extra : str, optional
        The ``aria-tda`` extra that provides them (the message says ``pip install
        'aria-tda[extra]'``); give ``install`` instead for something no extra provides.
    purpose : str
        What needs them (``"audio features"``), named in the message.
    install : str, optional
        The install instruction, instead of the extra's.

    Returns
    -------
    str or None
        ``"librosa and soundfile are not installed (needed for audio features): pip install
        'aria-tda[audio]'"``, or ``None``.
    """
    missing = [m for m in dict.fromkeys(modules) if not is_installed(m)]
    if not missing:
        return None
    if install is None:
        if extra is None:
            raise TypeError("missing_message() needs extra or install")
        install = install_hint(extra)
    return f"{_names(missing)} not installed (needed for {purpose}): {install}"


def require_all(
    modules: Iterable[str], extra: str | None = None, *, purpose: str, install: str | None = None
) -> None:
    """Check up front that every module is installed (none is imported), else raise one error.

    Call it before a command does any work, so an install without the extra stops with one
    line naming everything that is missing, instead of failing on every file.

    Parameters
    ----------
    modules : iterable of str
        Import names the task needs (``"librosa"``, ``"soundfile"``).
    extra : str, optional
        The ``aria-tda`` extra that provides them; give ``install`` instead for something no
        extra provides.
    purpose : str
        What needs them, named in the message.
    install : str, optional
        The install instruction, instead of ``pip install 'aria-tda[extra]'``.

    Raises
    ------
    MissingDependencyError
        Naming the missing modules, the purpose and what to install.
    """
    message = missing_message(modules, extra, purpose=purpose, install=install)
    if message is not None:
        raise MissingDependencyError(message)


def require_scheduler(scheduler: object, *, name: str = "--scheduler") -> None:
    """Check up front that Dask is installed when ``scheduler`` asks for a cluster.

    Parameters
    ----------
    scheduler : object
        A ``--scheduler`` value: ``None`` or ``""`` (no cluster) pass; a Dask client passes
        (Dask is there); any other string needs the ``scale`` extra.
    name : str
        How the caller names the option (in the message).

    Raises
    ------
    MissingDependencyError
        Dask (``dask``, ``distributed``) is not installed.
    """
    if isinstance(scheduler, str) and scheduler.strip():
        require_all(("dask", "distributed"), "scale", purpose=f"{name} {scheduler.strip()}")
