"""Per-file extraction on a real Dask LocalCluster (worker processes on loopback).

The cluster's store equals the serial one; a rerun resubmits only the recorded bad file; a
worker killed with SIGKILL mid-task costs nothing (Dask reschedules its file); a file that kills
every worker it lands on ends in KilledWorker and is recorded like a dying local worker.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from aria_tda.cli import main
from aria_tda.errors import AriaWarning
from aria_tda.features.extract import extract_to_store
from aria_tda.features.store import FeatureStore

from ._midifiles import make_midi, note, save

distributed = pytest.importorskip("dask.distributed")


@pytest.fixture(scope="module")
def client():
    """Two single-threaded worker processes; Dask gives a task up after 2 lost workers."""
    with (
        distributed.LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            protocol="tcp",
            dashboard_address=None,
            scheduler_kwargs={"allowed_failures": 1, "dashboard_address": "127.0.0.1:0"},
        ) as cluster,
        distributed.Client(cluster) as c,
    ):
        yield c


def corpus(root, n=6, *, bad=False):
    for i in range(n):
        notes = [*note(0, 96, 60 + i), *note(96, 192, 64 + i), *note(192, 384, 67 - i % 3)]
        save(make_midi([notes]), root / f"m{i}.mid")
    if bad:
        (root / "broken.mid").write_bytes(b"")
    return root


def assert_same_store(a, b, *, ordered=True):
    """Same rows (in the same order unless not ``ordered``: a resumed store appends the
    retried files), values, metadata, parameters and errors table (times aside)."""
    x, y = FeatureStore.open(a), FeatureStore.open(b)
    ids = x.track_ids.tolist()
    if ordered:
        assert ids == y.track_ids.tolist()
    assert sorted(ids) == sorted(y.track_ids.tolist())
    perm = [y.track_ids.tolist().index(t) for t in ids]
    assert x.params == y.params and x.feature_specs == y.feature_specs
    for name, spec in x.feature_specs.items():
        if spec["kind"] == "vector":
            np.testing.assert_array_equal(x.vectors(name), y.vectors(name)[perm])
        else:
            ys = y.sequences(name)
            for u, j in zip(x.sequences(name), perm, strict=True):
                np.testing.assert_array_equal(u, ys[j])
    assert x.metadata.equals(y.metadata.loc[ids])
    cols = ["path", "track_id", "error"]
    assert x.errors[cols].to_dict("records") == y.errors[cols].to_dict("records")


def extract_tasks(ts):
    return [t["key"] for t in ts.data if str(t["key"]).startswith("aria-extract-")]


@pytest.mark.slow
def test_cluster_store_equals_serial_and_resumes(tmp_path, client):
    src = corpus(tmp_path / "in", bad=True)
    serial = extract_to_store(src, tmp_path / "serial", modality="symbolic", flush_every=2)
    with distributed.get_task_stream(client) as ts:
        got = extract_to_store(
            src, tmp_path / "dask", modality="symbolic", flush_every=2, client=client
        )
    assert {k: v for k, v in got.items() if k != "store"} == {
        k: v for k, v in serial.items() if k != "store"
    }
    assert got["n_extracted"] == 6 and got["n_errors"] == 1
    assert len(extract_tasks(ts)) == 7
    assert_same_store(tmp_path / "serial", tmp_path / "dask")
    errors = FeatureStore.open(tmp_path / "dask").errors
    assert errors["track_id"].tolist() == ["broken"] and "empty file" in errors["error"][0]
    # resumed: the finished files are not resubmitted; the recorded bad file is retried
    with distributed.get_task_stream(client) as ts:
        again = extract_to_store(src, tmp_path / "dask", modality="symbolic", client=client)
    assert again["n_skipped"] == 6 and again["n_extracted"] == 0 and again["n_errors"] == 1
    assert len(extract_tasks(ts)) == 1
    assert_same_store(tmp_path / "serial", tmp_path / "dask")
    # windows: one row per segment, in file order
    seg = {"seconds": 0.5, "hop": 0.5}
    extract_to_store(src, tmp_path / "seg1", modality="symbolic", segments=seg)
    extract_to_store(src, tmp_path / "seg2", modality="symbolic", segments=seg, client=client)
    assert len(FeatureStore.open(tmp_path / "seg1")) > 6
    assert_same_store(tmp_path / "seg1", tmp_path / "seg2")


def _executing(dask_worker):
    """Run on a worker (``client.run``): the keys it is executing right now."""
    return [str(ts.key) for ts in dask_worker.state.executing]


@pytest.mark.slow
def test_a_worker_killed_mid_task_costs_nothing(tmp_path, client, monkeypatch):
    src = corpus(tmp_path / "in", n=8)
    extract_to_store(src, tmp_path / "serial", modality="symbolic")
    client.wait_for_workers(2, timeout=60)
    pids = client.run(os.getpid)
    monkeypatch.setenv("ARIA_TEST_WORKER_DELAY", "0.4")  # each file takes > 0.4 s
    killed = {}

    def kill_one_busy_worker():
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            busy = {w: keys for w, keys in client.run(_executing).items() if keys}
            if busy:
                worker, keys = next(iter(busy.items()))
                killed.update(worker=worker, pid=pids[worker], key=keys[0])
                os.kill(pids[worker], signal.SIGKILL)
                return
            time.sleep(0.05)

    killer = threading.Thread(target=kill_one_busy_worker)
    killer.start()
    summary = extract_to_store(src, tmp_path / "dask", modality="symbolic", client=client)
    killer.join()
    assert killed, "no task was seen executing"
    assert killed["key"].startswith("aria-extract-")
    with pytest.raises(ProcessLookupError):  # the worker process is really gone
        os.kill(killed["pid"], 0)
    assert summary["n_extracted"] == 8 and summary["n_errors"] == 0
    assert_same_store(tmp_path / "serial", tmp_path / "dask")
    client.wait_for_workers(2, timeout=60)  # the nanny started a fresh worker
    assert killed["pid"] not in client.run(os.getpid).values()


@pytest.mark.slow
def test_a_file_that_kills_every_worker_is_recorded_and_the_run_goes_on(
    tmp_path, client, monkeypatch
):
    src = corpus(tmp_path / "in", n=5)
    extract_to_store(src, tmp_path / "serial", modality="symbolic")
    client.wait_for_workers(2, timeout=60)
    monkeypatch.setenv("ARIA_TEST_WORKER_CRASH", "m2.mid")
    with pytest.warns(AriaWarning) as caught:
        summary = extract_to_store(src, tmp_path / "dask", modality="symbolic", client=client)
    said = [str(w.message) for w in caught]
    assert all(re.fullmatch(r"worker died \(KilledWorker\) on .*; recorded and skipped", m)
               for m in said), said
    assert any(m.endswith("m2.mid; recorded and skipped") for m in said)
    st = FeatureStore.open(tmp_path / "dask")
    errors = st.errors
    assert "m2" in errors["track_id"].tolist()
    assert set(errors["error"]) == {"worker died (KilledWorker)"}
    # every file is extracted or recorded (Dask may give up on a file that shared a dying
    # worker with m2: it is recorded too), rows in input order
    ids = [f"m{i}" for i in range(5)]
    assert sorted(st.track_ids.tolist() + errors["track_id"].tolist()) == ids
    assert st.track_ids.tolist() == [t for t in ids if t in set(st.track_ids)]
    assert summary["n_extracted"] + summary["n_errors"] == 5
    # a rerun retries the recorded files and completes the store
    monkeypatch.delenv("ARIA_TEST_WORKER_CRASH")
    client.wait_for_workers(2, timeout=60)
    again = extract_to_store(src, tmp_path / "dask", modality="symbolic", client=client)
    assert again["n_errors"] == 0 and again["n_extracted"] == summary["n_errors"]
    assert_same_store(tmp_path / "serial", tmp_path / "dask", ordered=False)


def test_cli_flag_errors_are_one_line(tmp_path, capsys):
    src = corpus(tmp_path / "in", n=1)
    for extra, needle in (
        (["--scheduler", "local:x"], "--scheduler"),
        (["--scheduler", "local:0"], "N >= 1"),
        (["--scheduler", "not an address"], "--scheduler"),
        (["--scheduler", "local:2", "--workers", "2"], "--workers"),
    ):
        code = main(["features", "symbolic", str(src), "--out", str(tmp_path / "s"), *extra])
        err = capsys.readouterr().err
        assert code == 2, extra
        assert len(err.strip().splitlines()) == 1 and needle in err and "Traceback" not in err
    assert not (tmp_path / "s").exists()


def _without_dask_logs(text):
    """stderr less Dask's own log records (under load a worker may log a failed heartbeat
    with its traceback at ERROR level; that is Dask's noise, not an ARIA traceback)."""
    header = re.compile(r"^\S+ \S+ - distributed\.")
    keep, state = [], None
    for line in text.splitlines():
        if header.match(line):
            state = "record"
        elif state in ("record", "raised") and line.startswith("Traceback (most recent call"):
            state = "traceback"
        elif state == "traceback":
            if not line.startswith((" ", "\t")):
                state = "raised"  # the exception's own line; a chained one may follow
        elif state == "raised" and (
            not line.strip() or line.startswith(("The above exception", "During handling"))
        ):
            pass
        else:
            state = None
            keep.append(line)
    return "\n".join(keep)


@pytest.mark.slow
def test_cli_with_a_local_cluster(tmp_path):
    src = corpus(tmp_path / "in", n=4, bad=True)
    extract_to_store(src, tmp_path / "serial", modality="symbolic")
    argv = [sys.executable, "-m", "aria_tda", "features", "symbolic", str(src),
            "--out", str(tmp_path / "dask"), "--scheduler", "local:2", "--json"]
    env = dict(os.environ, ARIA_PROGRESS="0")
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["n_extracted"] == 4 and summary["n_errors"] == 1
    assert "Traceback" not in _without_dask_logs(proc.stderr) and "UserWarning" not in proc.stderr
    assert_same_store(tmp_path / "serial", tmp_path / "dask")
