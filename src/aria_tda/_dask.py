r"""Where ARIA's distributed work runs: one ``scheduler`` string → a Dask client.

Every command that can spread its work over a cluster (``aria-tda features``, ``aria-tda embed``,
``aria-tda diagnose``, ``aria-tda homogeneity``, ``aria-tda run``; ``scheduler = "..."`` in a study
file) takes the same value:

=====================  =================================================================
``None`` / ``""``      no cluster: the single-machine path
``"local:N"``          start a :class:`~dask.distributed.LocalCluster` of ``N`` worker
                       *processes* (one thread each) on loopback for the run, close it after
``"tcp://HOST:PORT"``  connect to a running scheduler (``dask scheduler`` /
``"HOST:PORT"``        ``dask worker ADDRESS`` started by you, on machines that share the
                       files' file system); left running afterwards
=====================  =================================================================

:func:`open_client` is a context manager that yields the client (or ``None``), so callers are
written once for both paths::

    with open_client(scheduler) as client:
        d = diagnose(path, client=client)

Workers read the input files themselves (nothing large crosses the network), so every worker
must see the paths the client names: on one machine always, on a cluster through a shared
file system. ``dask.distributed`` is an optional dependency (``pip install 'aria-tda[scale]'``).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from typing import Any

from aria_tda._optional import require
from aria_tda.errors import ParameterError, expected

__all__ = ["check_scheduler", "open_client", "scheduler_workers"]

_LOCAL = re.compile(r"^local:(\d+)$")
_ADDRESS = re.compile(r"^(?:(tcp|tls|inproc|ucx|ws|wss)://)?[\w.\-\[\]:]+:\d+$")

#: Seconds to wait for a remote scheduler before giving up with a clear error.
CONNECT_TIMEOUT = 30.0


def check_scheduler(value: Any, *, name: str = "scheduler") -> str | None:
    """Validate a scheduler string; return it normalised (``None`` for no cluster).

    Parameters
    ----------
    value : str or None
        ``None``/``""`` (no cluster), ``"local:N"`` (N ≥ 1 worker processes) or a scheduler
        address ``"tcp://HOST:PORT"`` / ``"HOST:PORT"``.
    name : str
        The parameter's name in error messages (``"--scheduler"``, ``"scheduler"``).

    Returns
    -------
    str or None
        The value stripped of surrounding space, or ``None``.
    """
    if value is None:
        return None
    if not isinstance(value, str):
        raise ParameterError(expected(name, "'local:N' or a scheduler address 'tcp://HOST:PORT'",
                                      value))
    v = value.strip()
    if not v:
        return None
    m = _LOCAL.match(v)
    if m:
        if int(m.group(1)) < 1:
            raise ParameterError(expected(name, "'local:N' with N >= 1 worker processes", value))
        return v
    if v.startswith("local:") or v == "local":
        raise ParameterError(expected(name, "'local:N' with N a whole number of worker "
                                      "processes, e.g. 'local:4'", value))
    if not _ADDRESS.match(v):
        raise ParameterError(expected(name, "'local:N' or a scheduler address "
                                      "'tcp://HOST:PORT' (or 'HOST:PORT')", value))
    return v


def scheduler_workers(value: str | None) -> int | None:
    """The worker count a ``"local:N"`` value asks for (``None`` for an address or no cluster).

    Parameters
    ----------
    value : str or None
        A value accepted by :func:`check_scheduler`.
    """
    v = check_scheduler(value)
    if v is None:
        return None
    m = _LOCAL.match(v)
    return int(m.group(1)) if m else None


@contextlib.contextmanager
def open_client(scheduler: Any, *, memory_limit: str | None = "auto",
                silence_logs: bool = True) -> Iterator[Any]:
    """Yield a :class:`dask.distributed.Client` for ``scheduler`` (``None`` when it is empty).

    ``"local:N"`` starts a :class:`~dask.distributed.LocalCluster` of ``N`` worker processes
    (one thread each, loopback TCP, no dashboard) and closes it on exit; an address connects
    to a running scheduler (waiting at most :data:`CONNECT_TIMEOUT` seconds) and leaves it
    running. A caller that already has a client may pass it as ``scheduler``: it is yielded
    unchanged and not closed.

    Parameters
    ----------
    scheduler : str, dask.distributed.Client or None
        See :func:`check_scheduler`.
    memory_limit : str or None
        Per-worker memory limit of a local cluster (Dask's ``"auto"`` shares the machine's
        memory among the workers).
    silence_logs : bool
        Keep the local cluster's log lines off the terminal (its workers' own log records,
        heartbeat hiccups under load included; a task's failure still reaches the caller).
    """
    if scheduler is not None and not isinstance(scheduler, str):
        if hasattr(scheduler, "submit") and hasattr(scheduler, "gather"):
            yield scheduler
            return
        raise ParameterError(expected("scheduler", "'local:N', an address or a dask Client",
                                      scheduler))
    v = check_scheduler(scheduler)
    if v is None:
        yield None
        return
    distributed = require("dask.distributed", "scale", purpose=f"--scheduler {v}")
    n = scheduler_workers(v)
    if n is not None:
        import logging

        with distributed.LocalCluster(
            n_workers=n, threads_per_worker=1, processes=True, host="127.0.0.1",
            protocol="tcp", dashboard_address=None, memory_limit=memory_limit,
            # the scheduler's health/metrics HTTP server: a free loopback port, not 8787
            # (taken by any other cluster: Dask would warn on the terminal)
            scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},
            silence_logs=logging.CRITICAL if silence_logs else logging.INFO,
        ) as cluster, distributed.Client(cluster) as client:
            yield client
        return
    try:
        client = distributed.Client(v, timeout=CONNECT_TIMEOUT)
    except OSError as exc:
        raise ParameterError(
            f"scheduler: could not reach a Dask scheduler at {v!r} within "
            f"{CONNECT_TIMEOUT:.0f} s ({exc}); start one with 'dask scheduler' and "
            "'dask worker ADDRESS', or use 'local:N'") from exc
    with client:
        yield client
