"""The extraction engine: dying workers, a killed parent, metadata clashes, the errors listing."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import types

import numpy as np
import pytest

from aria_tda.cli import main
from aria_tda.errors import AriaWarning, DataError
from aria_tda.features.extract import extract_to_store
from aria_tda.features.store import FeatureStore

from ._midifiles import make_midi, note, save


def corpus(root, n=6, *, bad=False):
    for i in range(n):
        save(make_midi([[*note(0, 96, 60 + i), *note(96, 192, 64 + i)]]), root / f"m{i}.mid")
    if bad:
        (root / "broken.mid").write_bytes(b"")
    return root


def run(argv, capsys):
    code = main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


# --------------------------------------------------------------------------- dying workers


def test_a_dying_worker_is_recorded_and_the_run_goes_on(tmp_path, monkeypatch):
    src = corpus(tmp_path / "in")
    out = tmp_path / "store"
    monkeypatch.setenv("ARIA_TEST_WORKER_CRASH", "m3.mid")
    with pytest.warns(AriaWarning, match=r"worker died \(SIGSEGV\) on .*m3\.mid; recorded and"):
        summary = extract_to_store(src, out, modality="symbolic", workers=2, flush_every=2)
    assert summary["n_extracted"] == 5 and summary["n_errors"] == 1
    st = FeatureStore.open(out)
    assert st.track_ids.tolist() == ["m0", "m1", "m2", "m4", "m5"]  # input order kept
    assert st.errors["track_id"].tolist() == ["m3"]
    assert st.errors["error"].tolist() == ["worker died (SIGSEGV)"]
    # the file is retried by a rerun (and now extracted)
    monkeypatch.delenv("ARIA_TEST_WORKER_CRASH")
    summary = extract_to_store(src, out, modality="symbolic", workers=1)
    assert summary["n_extracted"] == 1 and summary["n_errors"] == 0
    assert len(FeatureStore.open(out)) == 6 and FeatureStore.open(out).errors.empty


def test_cli_reports_a_dying_worker_in_one_line(tmp_path, monkeypatch, capsys):
    src = corpus(tmp_path / "in", n=4)
    monkeypatch.setenv("ARIA_TEST_WORKER_CRASH", "m1.mid")
    code, _, err = run(
        ["features", "symbolic", str(src), "--out", str(tmp_path / "s"), "--workers", "2"], capsys
    )
    assert code == 0
    assert "Traceback" not in err and "BrokenProcessPool" not in err
    lines = [ln for ln in err.splitlines() if "worker died" in ln]
    assert len(lines) == 1 and "(SIGSEGV)" in lines[0] and "m1.mid" in lines[0]
    assert FeatureStore.open(tmp_path / "s").errors["track_id"].tolist() == ["m1"]


def _children(pid):
    psutil = pytest.importorskip("psutil")
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


@pytest.mark.slow
def test_kill_9_of_the_parent_leaves_no_workers_and_a_consistent_store(tmp_path):
    psutil = pytest.importorskip("psutil")
    src = corpus(tmp_path / "in", n=16)
    out = tmp_path / "store"
    argv = [
        sys.executable,
        "-m",
        "aria_tda",
        "features",
        "symbolic",
        str(src),
        "--out",
        str(out),
        "--workers",
        "2",
        "--flush-every",
        "1",
    ]
    env = dict(os.environ, ARIA_TEST_WORKER_DELAY="0.4", ARIA_PROGRESS="0")
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            man = out / "aria-manifest.json"
            if man.is_file() and json.loads(man.read_text()).get("n_tracks", 0) >= 3:
                break
            assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
            time.sleep(0.05)
        else:
            pytest.fail("the extraction wrote nothing within 60 s")
        workers = _children(proc.pid)
        assert len([w for w in workers if "python" in w.name().lower()]) >= 2
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        _gone, alive = psutil.wait_procs(workers, timeout=10)
        assert not alive, f"orphaned workers: {[p.pid for p in alive]}"
    finally:
        if proc.poll() is None:
            proc.kill()
    st = FeatureStore.open(out)  # readable, every committed row whole
    n = len(st)
    assert 3 <= n < 16
    ids = sorted(f"m{i}" for i in range(16))  # the directory scan's order
    assert st.track_ids.tolist() == ids[:n]
    assert not np.isnan(st.vectors("pitch_range")).any()
    # a rerun resumes and completes
    summary = extract_to_store(src, out, modality="symbolic", workers=2)
    assert summary["n_skipped"] == n and summary["n_extracted"] == 16 - n
    assert FeatureStore.open(out).track_ids.tolist() == ids


# --------------------------------------------------------------------------- metadata


def test_user_metadata_named_like_arias_own_is_refused(tmp_path, capsys):
    src = corpus(tmp_path / "in", n=2)
    (src / "list.csv").write_text("path,genre,duration\nm0.mid,jazz,120\nm1.mid,folk,90\n")
    out = tmp_path / "store"
    with pytest.raises(DataError, match=r"'duration' that ARIA records itself"):
        extract_to_store(src / "list.csv", out, modality="symbolic")
    assert not out.exists()
    code, _, err = run(["features", "symbolic", str(src / "list.csv"), "--out", str(out)], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "rename them" in err
    assert not out.exists()
    (tmp_path / "meta.csv").write_text("track_id,n_notes\nm0,7\n")
    code, _, err = run(
        [
            "features",
            "symbolic",
            str(src),
            "--out",
            str(out),
            "--metadata",
            str(tmp_path / "meta.csv"),
        ],
        capsys,
    )
    assert code == 2 and "'n_notes'" in err and "metadata table" in err
    # other user columns are kept as they are, beside ARIA's own
    (src / "ok.csv").write_text("path,genre,user_duration\nm0.mid,jazz,120\n")
    extract_to_store(src / "ok.csv", out, modality="symbolic")
    meta = FeatureStore.open(out).metadata
    assert meta.loc["m0", "genre"] == "jazz" and meta.loc["m0", "user_duration"] == "120"
    assert meta.loc["m0", "duration"] == pytest.approx(1.0)


def test_an_unforeseen_clash_keeps_both_values(tmp_path, monkeypatch):
    fake = types.ModuleType("aria_tda.features.audio")
    fake.RESERVED_METADATA = ("source",)
    fake.extract_file_record = lambda path: ({"chroma": np.ones(12)}, {"mood": "calm", "meter": 4})
    monkeypatch.setitem(sys.modules, "aria_tda.features.audio", fake)
    (tmp_path / "a.wav").write_bytes(b"x")
    (tmp_path / "list.csv").write_text("path,mood\na.wav,angry\n")
    extract_to_store(tmp_path / "list.csv", tmp_path / "s", modality="audio")
    meta = FeatureStore.open(tmp_path / "s").metadata
    assert meta.loc["a", "mood"] == "angry" and meta.loc["a", "aria_mood"] == "calm"
    assert meta.loc["a", "meter"] == 4 and "aria_meter" not in meta.columns  # no clash: as is


# --------------------------------------------------------------------------- errors listing


def test_errors_subcommand_lists_the_failed_files(tmp_path, capsys):
    src = corpus(tmp_path / "in", n=2, bad=True)
    out = tmp_path / "store"
    assert run(["features", "symbolic", str(src), "--out", str(out)], capsys)[0] == 0
    code, stdout, _ = run(["features", "errors", str(out)], capsys)
    assert code == 0
    lines = stdout.splitlines()
    assert lines[0].split() == ["path", "error"]
    assert "broken.mid" in lines[1] and "empty file" in lines[1]
    assert lines[-1] == "1 failed file(s)"
    code, stdout, _ = run(["features", "errors", str(out), "--json"], capsys)
    rows = json.loads(stdout)
    assert code == 0 and [r["track_id"] for r in rows] == ["broken"]
    assert rows[0]["path"].endswith("broken.mid")
    code, stdout, _ = run(["features", "errors", str(tmp_path / "none")], capsys)
    code, _, err = run(["features", "errors", str(tmp_path / "none")], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "no such feature store" in err
    code, _, err = run(["features", "errors", str(src)], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "not an ARIA feature store" in err
    clean = tmp_path / "clean"
    extract_to_store(tmp_path / "in" / "m0.mid", clean, modality="symbolic")
    code, stdout, _ = run(["features", "errors", str(clean)], capsys)
    assert code == 0 and "no failed files" in stdout


# ------------------------------------------------------- a run whose every input fails stops


def test_a_list_whose_paths_all_fail_stops_with_the_first_reason(tmp_path, capsys):
    # the audio demo's old mistake: paths relative to the working folder, in a list that
    # resolves them against its own folder (ARIA's one rule) -> every file is missing
    corpus(tmp_path / "data" / "midi", n=3)
    (tmp_path / "lists").mkdir()
    listing = tmp_path / "lists" / "tracks.csv"
    listing.write_text("path\n" + "".join(f"data/midi/m{i}.mid\n" for i in range(3)))
    with pytest.raises(DataError, match=r"all 3 input files failed, nothing was extracted"):
        extract_to_store(listing, tmp_path / "store", modality="symbolic", progress=False)
    code, _, err = run(["features", "symbolic", str(listing), "--out", str(tmp_path / "s2")],
                         capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "m0.mid" in err and "nothing was extracted" in err
    # the same list, its paths relative to itself: every file is read
    listing.write_text("path\n" + "".join(f"../data/midi/m{i}.mid\n" for i in range(3)))
    info = extract_to_store(listing, tmp_path / "store", modality="symbolic", progress=False)
    assert info["n_extracted"] == 3 and info["n_errors"] == 0


def test_the_first_failures_stop_a_run_before_the_rest(tmp_path):
    root = tmp_path / "in"
    root.mkdir()
    for i in range(12):
        (root / f"a{i:02d}.mid").write_bytes(b"")  # sorted first, all broken
    save(make_midi([[*note(0, 96, 60), *note(96, 192, 64)]]), root / "z.mid")
    with pytest.raises(DataError, match=r"the first 8 of 13 input files failed.*stopped there"):
        extract_to_store(root, tmp_path / "store", modality="symbolic", progress=False)


def test_one_bad_file_first_is_recorded_and_the_run_goes_on(tmp_path):
    root = corpus(tmp_path / "in", n=3)
    (root / "a-broken.mid").write_bytes(b"")  # sorted before the good ones
    info = extract_to_store(root, tmp_path / "store", modality="symbolic", progress=False)
    assert info["n_extracted"] == 3 and info["n_errors"] == 1


def test_a_long_run_writes_parts_as_it_goes_not_only_at_the_end(tmp_path, monkeypatch):
    """Buffered results become a part after FLUSH_SECONDS even below --flush-every: a long
    extraction under nohup shows (and keeps, when killed) its first results early."""
    import aria_tda.features.extract as extract

    src = corpus(tmp_path / "in", n=4)
    monkeypatch.setattr(extract, "FLUSH_SECONDS", 0.0)  # every result is "a minute later"
    extract_to_store(src, tmp_path / "timed", modality="symbolic", workers=1,
                     flush_every=10**6, progress=False)
    timed = sorted((tmp_path / "timed").glob("part-*.parquet"))
    monkeypatch.setattr(extract, "FLUSH_SECONDS", 3600.0)
    extract_to_store(src, tmp_path / "counted", modality="symbolic", workers=1,
                     flush_every=10**6, progress=False)
    counted = sorted((tmp_path / "counted").glob("part-*.parquet"))
    assert len(timed) == 4 and len(counted) == 1
    assert (FeatureStore.open(tmp_path / "timed").track_ids.tolist()
            == FeatureStore.open(tmp_path / "counted").track_ids.tolist())
