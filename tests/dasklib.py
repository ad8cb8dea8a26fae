"""Test helper for the distributed-equals-local tests: SIGKILL a busy Dask worker mid-run."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable
from typing import Any

from aria_tda.scores.distributed import TASK_DELAY_ENV


def kill_during(client: Any, fn: Callable[[], Any], *, kill_all: bool = False,
                delay: str = "0.4") -> Any:
    """Run ``fn()`` in a thread with slow tasks; SIGKILL worker process(es) once tasks are
    processing; return ``fn()``'s result (Dask restarts the workers through their nannies)."""
    pids = client.run(os.getpid)
    client.run(lambda: os.environ.__setitem__(TASK_DELAY_ENV, delay))
    box: dict[str, object] = {}

    def target():
        try:
            box["value"] = fn()
        except BaseException as exc:  # handed to the test
            box["error"] = exc

    th = threading.Thread(target=target)
    th.start()
    victims: list[str] = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and th.is_alive():
        busy = {w: len(ts) for w, ts in client.processing().items() if ts}
        if busy:
            victims = list(busy) if kill_all else [max(busy, key=busy.__getitem__)]
            break
        time.sleep(0.01)
    assert victims, "no task was processing"
    for w in victims:
        os.kill(pids[w], signal.SIGKILL)
    th.join(120)
    client.wait_for_workers(2, timeout=60)
    client.run(lambda: os.environ.pop(TASK_DELAY_ENV, None))
    assert not th.is_alive()
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box["value"]
