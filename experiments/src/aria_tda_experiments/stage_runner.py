"""The stage runner of the experiments' pipelines: resumable, timed stages in order.

:class:`StageRunner` drives the symbolic demo (:mod:`aria_tda_experiments.demo`), the audio demo
and the planted-aspect demos.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from aria_tda._io import remove_path
from aria_tda._steps import Step, params_digest

__all__ = ["StageRunner"]


class StageRunner:
    """Runs an experiment's stages in order, each resumable, timing each one.

    Each stage is an :class:`aria_tda._steps.Step` under ``root``: it runs again only when its
    parameters, or the digest of a stage it comes after, changed.

    Parameters
    ----------
    root : pathlib.Path
        The folder of the stages.
    quiet : bool
        Print nothing (else one line per stage).
    name : str
        The label of the printed lines.

    Attributes
    ----------
    timings : dict of str to float
        Seconds per stage (a reused stage: the seconds it took when it ran).
    digests : dict of str to str
        The parameter digest of every stage run so far.
    """

    def __init__(self, root: Path, quiet: bool, name: str = "aria-tda demo") -> None:
        self.root = root
        self.quiet = quiet
        self.name = name
        self.timings: dict[str, float] = {}
        self.digests: dict[str, str] = {}

    def _log(self, msg: str) -> None:
        if not self.quiet:
            print(f"[{self.name}] {msg}", flush=True)

    def stage(
        self, name: str, params: dict[str, Any], after: Sequence[str],
        body: Callable[[Path], Any], *, resumable: bool = False,
    ) -> Path:
        """Run ``body(stage_dir)`` unless a finished stage with the same inputs exists.

        ``resumable`` stages keep what an interrupted run left (their body reuses finished
        models after checking their settings); others start from an empty folder. A
        resumable body checks its own work's settings (model/train config, seed, row indices;
        a feature store's track ids), never the upstream data: so when an ``after`` stage's
        digest differs from the one recorded (finished or interrupted), the folder is
        cleared first — else models trained on other data, or features of other audio under
        the same ids, would be reused.

        Parameters
        ----------
        name : str
            The stage (its folder under ``root``).
        params : dict
            What the stage computes from (JSON-able).
        after : sequence of str
            The stages it reads, already run by this runner.
        body : callable
            ``body(folder)`` does the work in ``folder``; it may return a summary dict, recorded
            with the stage.
        resumable : bool
            Keep what an interrupted run left.

        Returns
        -------
        pathlib.Path
            The stage's folder.
        """
        upstream = {a: self.digests[a] for a in after}
        full = {"params": params, "after": upstream}
        if resumable and after:
            rec = Step(self.root, name).record() or {}
            old = (rec.get("params") or {}).get("after")
            if old is not None and old != upstream:
                remove_path(self.root / name)
        st = Step(self.root, name, full)
        self.digests[name] = params_digest(full)
        if st.is_complete():
            rec = st.record() or {}
            self.timings[name] = float(rec.get("seconds") or 0.0)
            self._log(f"{name}: reusing finished stage ({st.path})")
            return st.path
        reason = st.stale_reason()
        self._log(f"{name}: running" + (f" ({reason})" if reason else ""))
        t0 = time.perf_counter()
        # whatever the body raises, the stage is not left marked "running"
        with st.running(clear=not resumable) as work:
            summary = body(work) or {}
            st.complete(**summary)
        self.timings[name] = round(time.perf_counter() - t0, 2)
        self._log(f"{name}: done in {self.timings[name]:.1f} s")
        return st.path
