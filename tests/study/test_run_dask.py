"""A study on a real Dask LocalCluster (worker processes on loopback): results equal one machine.

A planted study of four settings and two distinct track pools (three settings aggregate the
segment map of all 120 tracks, one scores 100 of them directly): the cluster run's tables equal
the single-machine run's, each of the two nulls is computed once, caches are shared both ways,
a failing setting raises the single-machine error, and a worker killed with SIGKILL mid-task
costs nothing.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pandas as pd
import pytest

from aria_tda._steps import RECORD
from aria_tda.cli import main
from aria_tda.errors import ParameterError
from aria_tda.results import TABLES, read_results_meta, read_table
from aria_tda.study import run_study
from aria_tda.study.cluster import TASK_DELAY_ENV

distributed = pytest.importorskip("dask.distributed")

#: Tables compared between the two runs (every table the runner writes for this study).
COMPARED = ("reliability", "homogeneity", "query_z", "pairs", "topk", "ranking", "alignment",
            "null", "queries", "confound", "tracks", "paired")
#: Columns that must be identical, not merely close.
EXACT = ("setting", "variant", "K", "channel", "feature", "query", "rank", "track_id",
         "verdict", "stratum", "excluded", "group")

EXTRA_SETTINGS = """
[[setting]]
method = "Planted"
stage = "rank"
scores = "scores.npy"
segments = "segments.csv"
normalize = "rank"

[[setting]]
method = "Planted"
stage = "noisy"
scores = "noisy.npy"
segments = "segments.csv"
normalize = "zscore"

[[setting]]
method = "Subset"
scores = "subset.npy"
normalize = "zscore"
"""


@pytest.fixture
def client(dask_client):
    """The session's LocalCluster (two worker processes on loopback; tests/conftest.py)."""
    return dask_client


@pytest.fixture
def study(tmp_path, rng, planted_study):
    """The planted study with four settings: three over all tracks, one over 100 of them."""
    from aria_tda.scores import open_scores, save_scores

    path = planted_study(tmp_path, rng)
    s = np.asarray(open_scores(tmp_path / "scores.npy").read_rows(0, 240))
    save_scores((s + rng.normal(scale=2.0, size=s.shape)).astype(np.float32),
                tmp_path / "noisy.npy", method="noisy")
    ids = [f"t{i:03d}" for i in range(100)]
    save_scores(rng.normal(size=(100, s.shape[1])).astype(np.float32), tmp_path / "subset.npy",
                method="subset", row_ids=ids)
    path.write_text(path.read_text() + EXTRA_SETTINGS)
    return path


def assert_same_results(a, b):
    """Every table equal (floats to 1e-12 relative; ids, ranks and top-K identical)."""
    for name in COMPARED:
        x, y = read_table(a, name), read_table(b, name)
        assert (x is None) == (y is None), name
        if x is None:
            continue
        assert list(x.columns) == list(y.columns) and len(x) == len(y), name
        for col in x.columns:
            u, v = x[col], y[col]
            if col in EXACT or not pd.api.types.is_float_dtype(u):
                pd.testing.assert_series_equal(u, v, check_exact=True, obj=f"{name}.{col}")
            else:
                np.testing.assert_allclose(u.to_numpy(float), v.to_numpy(float), rtol=1e-12,
                                           atol=0, equal_nan=True, err_msg=f"{name}.{col}")
    ma, mb = read_results_meta(a), read_results_meta(b)
    for key in ("study", "settings", "channels"):
        assert ma[key] == mb[key], key


@pytest.mark.slow
def test_cluster_run_equals_local_and_shares_nulls_and_caches(tmp_path, study, client, capsys):
    local = run_study(study, output=tmp_path / "local")
    assert capsys.readouterr().out.count(": homogeneity (original") == 4
    meta = read_results_meta(local)
    assert meta["execution"] == {"scheduler": None, "workers": None, "settings_computed": 4,
                                 "nulls_computed": 2}
    assert set(TABLES) >= set(COMPARED)

    out = run_study(study, output=tmp_path / "dask", scheduler=client)
    log = capsys.readouterr().out
    assert_same_results(local, out)
    ex = read_results_meta(out)["execution"]
    # two track pools: each null computed once, by its own task, none inside the settings
    assert ex["nulls_computed"] == 2 and ex["settings_computed"] == 4 and ex["workers"] == 2
    assert ex["scheduler"] == client.scheduler.address
    assert "4 setting(s) on" in log and "2 null(s), each computed once" in log
    assert [f"({i}/4)" in log for i in range(1, 5)] == [True] * 4
    assert not list((out / ".cache").glob("*/s_track_*"))

    # the scheduler is not part of the cache key: each run reuses the other's settings
    run_study(study, output=out)
    log = capsys.readouterr().out
    assert log.count("reusing cached results") == 4
    assert read_results_meta(out)["execution"]["settings_computed"] == 0
    run_study(study, output=local, scheduler=client)
    log = capsys.readouterr().out
    assert log.count("reusing cached results") == 4 and "setting(s) on" not in log
    assert_same_results(local, out)


@pytest.mark.slow
def test_study_key_and_cli_flag(tmp_path, study, client):
    text = study.read_text()
    study.write_text(f'scheduler = "{client.scheduler.address}"\n' + text)
    out = run_study(study, output=tmp_path / "key", quiet=True)
    assert read_results_meta(out)["execution"]["scheduler"] == client.scheduler.address
    # the flag overrides the key; "local:2" starts (and closes) a cluster of its own
    proc = subprocess.run(
        [sys.executable, "-m", "aria_tda", "run", str(study), "--scheduler", "local:2",
         "--out", str(tmp_path / "cli"), "--no-progress"],
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert "4 setting(s) on local:2 (2 workers" in proc.stdout
    ex = read_results_meta(tmp_path / "cli")["execution"]
    assert ex["scheduler"] == "local:2" and ex["workers"] == 2
    assert_same_results(out, tmp_path / "cli")


def test_bad_scheduler_is_a_one_line_error(tmp_path, rng, planted_study, capsys):
    study = planted_study(tmp_path, rng)
    assert main(["run", str(study), "--scheduler", "local:many"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("aria-tda run: error: ParameterError: --scheduler:")
    assert "'local:many'" in err[0]
    study.write_text('scheduler = "nowhere"\n' + study.read_text())
    assert main(["run", str(study), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "study.toml:1: scheduler: expected 'local:N' or a scheduler" in err[0]
    with pytest.raises(ParameterError, match="scheduler: expected"):
        run_study(tmp_path / "study.toml", scheduler=3)
    assert not (tmp_path / "results").exists()


@pytest.mark.slow
def test_failing_setting_raises_the_local_error(tmp_path, study, client):
    # normalize = "none" needs one segment per track: the setting fails inside its task
    text = study.read_text().replace('stage = "noisy"\nscores = "noisy.npy"\n'
                                     'segments = "segments.csv"\nnormalize = "zscore"',
                                     'stage = "noisy"\nscores = "noisy.npy"\n'
                                     'segments = "segments.csv"\nnormalize = "none"')
    study.write_text(text)
    errors = []
    for scheduler, out in ((None, tmp_path / "local"), (client, tmp_path / "dask")):
        with pytest.raises(ParameterError, match="needs one segment per track") as exc:
            run_study(study, output=out, quiet=True, scheduler=scheduler)
        errors.append(str(exc.value))
        assert not (out / ".cache" / "Planted_noisy").exists()
        assert not (out / "results.json").exists()
    assert errors[0] == errors[1]


@pytest.mark.slow
def test_worker_killed_mid_task(tmp_path, study, client, monkeypatch):
    local = run_study(study, output=tmp_path / "local", quiet=True)
    monkeypatch.setenv(TASK_DELAY_ENV, "2")
    box: dict[str, object] = {}

    def target():
        try:
            box["out"] = run_study(study, output=tmp_path / "dask", quiet=True, scheduler=client)
        except BaseException as exc:  # re-raised below
            box["error"] = exc

    thread = threading.Thread(target=target)
    thread.start()
    victim = None
    deadline = time.monotonic() + 60
    while victim is None and time.monotonic() < deadline:
        for worker, keys in client.processing().items():
            if any(str(k).startswith("aria-setting-") for k in keys):
                victim = worker
                break
        time.sleep(0.05)
    assert victim is not None, "no setting task started"
    time.sleep(0.5)  # inside the task (its 2 s delay)
    pid = client.run(os.getpid)[victim]
    os.kill(pid, signal.SIGKILL)
    thread.join(timeout=240)
    assert not thread.is_alive()
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    out = box["out"]
    assert pid not in client.run(os.getpid).values()  # the worker did die (its nanny restarts it)
    assert_same_results(local, out)
    assert read_results_meta(out)["execution"]["settings_computed"] == 4
    records = [p.read_text() for p in (out / ".cache").glob(f"*/{RECORD}")]
    assert len(records) == 4 and all('"complete"' in r for r in records)


@pytest.mark.slow
def test_single_setting_spreads_its_passes_and_equals_local(tmp_path, rng, planted_study,
                                                            client, capsys):
    path = planted_study(tmp_path, rng)  # one setting: its passes, not settings, in parallel
    local = run_study(path, output=tmp_path / "local")
    out = run_study(path, output=tmp_path / "dask", scheduler=client)
    log = capsys.readouterr().out
    assert "its passes as tasks on" in log
    assert_same_results(local, out)
    execution = read_results_meta(out)["execution"]
    assert execution["split"] == "passes" and execution["settings_computed"] == 1
    assert execution["nulls_computed"] == read_results_meta(local)["execution"]["nulls_computed"]
