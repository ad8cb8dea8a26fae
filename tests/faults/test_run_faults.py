"""Faults injected into ``aria-tda run`` (and a refused ``aria-tda demo``) through the CLI in
child processes: two runs into one results folder (a real race), kill -9 during a setting and
during publishing followed by a rerun (byte-identical results, nothing left), a full file
system (one line, no stage left "running", no staging folder, a rerun with space completes).

Byte-wise comparison leaves out only what records *when* and *how* a run went, not what it
found: the writer lock's holder (pid, time), ``results.json``'s ``created``, ``timings`` and
``execution`` (how many settings and nulls this run computed: a resumed run computes fewer),
and the cache records' ``seconds``, ``finished`` and ``summary.timings``.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from aria_tda.study.runner import PUBLISH_DELAY_ENV
from faultlib import (
    cli,
    fill,
    kill_when,
    leftovers,
    one_line_error,
    small_fs,
    start_cli,
    tree_bytes,
)

#: Files compared as JSON with the fields below left out (see the module docstring).
_VOLATILE = {
    "results.json": (("created",), ("timings",), ("execution",)),
    "stage.json": (("seconds",), ("finished",), ("summary", "timings"), ("summary", "passes")),
}


def _stable(tree: dict[str, bytes]) -> dict[str, object]:
    out: dict[str, object] = {}
    for rel, data in tree.items():
        name = Path(rel).name
        if name == ".aria-lock":
            continue
        if name in _VOLATILE:
            doc = json.loads(data)
            for path in _VOLATILE[name]:
                node = doc
                for key in path[:-1]:
                    node = node.get(key, {})
                node.pop(path[-1], None)
            out[rel] = doc
        else:
            out[rel] = data
    return out


def _running_steps(folder: Path) -> list[str]:
    return [str(p) for p in folder.rglob("stage.json")
            if '"running"' in p.read_text(errors="replace")]


def _wait_for(proc, ready, timeout: float = 120) -> None:
    t0 = time.monotonic()
    while not ready():
        assert proc.poll() is None, proc.stderr.read()[-3000:]
        assert time.monotonic() - t0 < timeout, "the run never came to that point"
        time.sleep(0.05)


def _ok(proc) -> None:
    assert proc.returncode == 0, proc.stderr[-3000:]


@pytest.mark.slow
def test_a_second_run_into_the_same_folder_is_refused_naming_the_first(tmp_path, rng,
                                                                       planted_study):
    """Before: both ran, each overwriting the other's tables (no lock)."""
    study = planted_study(tmp_path, rng)
    out = tmp_path / "results"
    first = start_cli(["run", study, "--quiet"], env={PUBLISH_DELAY_ENV: "60"})
    _wait_for(first, lambda: any(out.glob(".staging-*")))  # publishing, the lock held
    second = cli(["run", study, "--quiet"])
    line = one_line_error(second)
    assert "LockedError" in line and f"pid {first.pid}" in line
    assert "this results folder is being written by process" in line
    assert first.poll() is None  # the first run was not disturbed (its kill is the next test)
    os.killpg(first.pid, signal.SIGKILL)
    first.wait()
    # a lock of a process that has ended is taken over: the rerun completes
    _ok(cli(["run", study, "--quiet"]))
    assert (out / "results.json").is_file() and leftovers(out) == []


@pytest.mark.slow
@pytest.mark.parametrize("point", ["setting", "publishing"])
def test_kill_9_then_rerun_equals_an_uninterrupted_run(tmp_path, rng, planted_study, point):
    study = planted_study(tmp_path, rng)
    out = tmp_path / "results"
    _ok(cli(["run", study, "--quiet"]))
    want = _stable(tree_bytes(out))
    shutil.rmtree(out)

    if point == "setting":
        proc = start_cli(["run", study, "--quiet"])
        ready = lambda: bool(out.is_dir() and _running_steps(out))  # noqa: E731
    else:
        proc = start_cli(["run", study, "--quiet"], env={PUBLISH_DELAY_ENV: "60"})
        ready = lambda: any(out.glob(".staging-*"))  # noqa: E731
    assert kill_when(proc, ready), "the run ended before the point to kill it at"
    if point == "setting":
        assert _running_steps(out)  # what a killed run leaves: a step marked running
    else:
        assert leftovers(out) and not (out / "results.json").exists()

    _ok(cli(["run", study, "--quiet"]))
    assert leftovers(out) == [] and _running_steps(out) == []
    assert _stable(tree_bytes(out)) == want


@pytest.mark.slow
@pytest.mark.parametrize("point", ["in-a-setting", "publishing"])
def test_a_full_disk_is_one_line_and_leaves_nothing(tmp_path, rng, planted_study, point):
    """Before: "Bus error" or a pyarrow traceback, a staging folder and a stage "running".

    ``in-a-setting``: the disk is full from the start (the setting's S_track does not fit);
    ``publishing``: it fills up while the run publishes its tables (``results.json`` does not
    fit).
    """
    study = planted_study(tmp_path, rng)
    with small_fs(tmp_path, "4m") as fs:
        out = fs / "results"
        if point == "in-a-setting":
            ballast = fill(fs, 16 * 2**10)
            proc = cli(["run", study, "--out", out, "--quiet"])
        else:
            run = start_cli(["run", study, "--out", out, "--quiet"],
                            env={PUBLISH_DELAY_ENV: "3"})
            # the first table is published (renamed from the staging folder): fill the disk
            _wait_for(run, lambda: any(out.glob(".staging-*")) and any(out.glob("*.csv")))
            ballast = fs / "ballast.bin"
            with contextlib.suppress(OSError):  # full already: so much the better
                fill(fs, 0)
            out_text, err_text = run.communicate(timeout=120)
            proc = subprocess.CompletedProcess(run.args, run.returncode, out_text, err_text)
        line = one_line_error(proc)
        assert "No space left on " in line and str(out) in line, line
        assert leftovers(fs) == [] and _running_steps(fs) == []
        ballast.unlink(missing_ok=True)
        _ok(cli(["run", study, "--out", out, "--quiet"]))
        assert (out / "results.json").is_file() and leftovers(fs) == []


def test_a_refused_demo_marks_no_stage(tmp_path):
    """Before: the collections were read inside the corpus stage, left marked "running"."""
    out = tmp_path / "demo"
    proc = cli(["demo", "--collections", "no-such-collection", "--out", out, "--quiet"])
    line = one_line_error(proc)
    assert "collections: expected music21 corpus folders" in line
    assert "'no-such-collection'" in line
    assert not out.exists() or not list(out.rglob("stage.json"))


@pytest.mark.parametrize("override", [{"loss": "bogus"}, {"target": "nope"},
                                      {"K": (5, 10), "K_report": 7}, {"K_report": 7}])
def test_demo_arguments_are_checked_before_the_first_stage(tmp_path, override):
    """Before: ``loss``/``target`` were first used by the attribution stage and ``K_report``
    after the features stage, minutes of stages later (and left one "running")."""
    pytest.importorskip("aria_tda_experiments")
    from aria_tda.errors import ParameterError
    from aria_tda_experiments.demo import run_demo

    out = tmp_path / "demo"
    with pytest.raises(ParameterError, match=rf"^{next(reversed(override))}: expected"):
        run_demo(out, preset="tiny", quiet=True, **override)
    assert not out.exists()
