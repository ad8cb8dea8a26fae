"""Readers that overlap a writer, and media that changed since the run, in real processes.

- ``aria-tda evidence`` / ``aria-tda report --out ELSEWHERE`` / :func:`load_results` while
  ``aria-tda run`` publishes into the same results folder (slowed by the test hook
  ``ARIA_TEST_PUBLISH_DELAY``): they wait for the publication and read it whole — never "not an
  ARIA results folder", never tables of two runs — or, past their wait, say so in one line
  naming the run.
- A dossier made after a query's or a training track's media file changed or went since the
  run: the clip is refused and the page says why ("changed since the results were made",
  "missing: it was there when the results were made"); the other clips play.
- No General-MIDI soundfont where ARIA looks (``ARIA_SOUNDFONT`` or ``--soundfont`` naming an
  empty folder): one warning line naming where it looked and how to install one.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from aria_tda.study.runner import PUBLISH_DELAY_ENV
from faultlib import cli, one_line_error, start_cli

pytestmark = pytest.mark.slow

_STUDY = """
name = "media"
modality = "symbolic"
feature_store = "store"
output = "results"
K = [5, 10]
K_report = 5
B = {B}
seed = 1
n_bootstrap = 20
queries = "queries.csv"
report = false

[[setting]]
method = "Planted"
scores = "scores.npy"
normalize = "zscore"
"""


def make_media_study(root: Path, rng, *, n_tracks: int = 40, n_queries: int = 8) -> Path:
    """A small symbolic study whose tracks and queries each have a MIDI file (relative paths in
    the store's ``source`` and the queries' ``media`` columns); query q retrieves cluster q % 4.
    """
    from aria_tda.features.audio.render import midi_from_notes
    from aria_tda.features.registry import features as registry_features
    from aria_tda.features.store import write_store
    from aria_tda.scores import save_scores

    cluster = np.arange(n_tracks) % 4
    feats = {}
    for spec in registry_features("symbolic"):
        x = rng.normal(size=(n_tracks, spec.dim))
        if spec.channel == "harmony":
            x = rng.normal(scale=4.0, size=(4, spec.dim))[cluster] + 0.3 * x
        feats[spec.name] = x
    ids = [f"t{i:03d}" for i in range(n_tracks)]
    (root / "midi").mkdir(parents=True)
    for i, tid in enumerate(ids):  # every track its own notes: no two files alike
        midi_from_notes([(b * 0.5, 0.5, 40 + (b * 7 + i) % 40, 80) for b in range(8)]).save(
            root / "midi" / f"{tid}.mid")
    for q in range(n_queries):
        midi_from_notes([(b * 0.5, 0.5, 60 + (b * 5 + q) % 24, 90) for b in range(8)]).save(
            root / "midi" / f"q{q}.mid")
    write_store(root / "store", modality="symbolic", track_ids=ids, features=feats,
                metadata=pd.DataFrame({"track_id": ids, "title": [f"piece {i}" for i in ids],
                                       "source": [f"midi/{t}.mid" for t in ids]}))
    target = np.arange(n_queries) % 4
    s = (cluster[:, None] == target[None, :]) * 3.0 + rng.normal(size=(n_tracks, n_queries))
    save_scores(s.astype(np.float32), root / "scores.npy", method="planted")
    pd.DataFrame({"query": np.arange(n_queries),
                  "media": [f"midi/q{q}.mid" for q in range(n_queries)]}).to_csv(
        root / "queries.csv", index=False)
    (root / "study.toml").write_text(_STUDY.format(B=20))
    return root / "study.toml"


def _small_soundfont() -> dict[str, str]:
    """``ARIA_SOUNDFONT`` = pretty_midi's small soundfont when there is one (fast to load)."""
    import importlib.util

    spec = importlib.util.find_spec("pretty_midi")
    if spec is None or not spec.origin:
        return {}
    small = Path(spec.origin).parent / "TimGM6mb.sf2"
    return {"ARIA_SOUNDFONT": str(small)} if small.is_file() else {}


def _ok(proc) -> None:
    assert proc.returncode == 0, proc.stderr[-3000:]


@pytest.fixture
def media_results(tmp_path, rng):
    """(study file, results folder) of a finished media study."""
    study = make_media_study(tmp_path / "study", rng)
    out = tmp_path / "study" / "results"
    _ok(cli(["run", study, "--quiet"]))
    return study, out


def _wait_for(proc, ready, timeout: float = 120) -> None:
    t0 = time.monotonic()
    while not ready():
        assert proc.poll() is None, proc.stderr.read()[-3000:]
        assert time.monotonic() - t0 < timeout, "the run never came to that point"
        time.sleep(0.02)


# --------------------------------------------------------------------------- overlap


def _mid_publication(out: Path) -> bool:
    """The run has removed the old results.json and moves its tables in."""
    return any(out.glob(".staging-*")) and not (out / "results.json").exists()


@pytest.mark.parametrize("reader", ["evidence", "report", "load_results"])
def test_a_reader_during_a_publication_reads_one_whole_publication(tmp_path, media_results,
                                                                   reader):
    """Before: "not an ARIA results folder" (results.json is gone while the run publishes)."""
    study, out = media_results
    study.write_text(_STUDY.format(B=30))  # the second run's tables differ from the first's
    run = start_cli(["run", study, "--quiet"], env={PUBLISH_DELAY_ENV: "4"})
    _wait_for(run, lambda: _mid_publication(out))
    if reader == "load_results":
        from aria_tda.report.load import load_results

        data = load_results(out)
        notes = data.missing
    else:
        args = (["evidence", out, "--query", "1", "--out", tmp_path / "q1.html", "--no-media"]
                if reader == "evidence" else ["report", out, "--out", tmp_path / "r.html"])
        proc = cli(args)
        _ok(proc)
        notes = []
    assert run.wait(timeout=120) == 0, run.stderr.read()[-3000:]
    meta = json.loads((out / "results.json").read_text())
    assert meta["study"]["B"] == 30  # the reader waited for the new publication
    assert not [n for n in notes if "differs from" in n or "not listed" in n], notes
    if reader == "load_results":
        assert data.meta["created"] == meta["created"]


def test_a_reader_that_waits_too_long_says_so_in_one_line(tmp_path, media_results):
    _, out = media_results
    study = out.parent / "study.toml"
    run = start_cli(["run", study, "--quiet"], env={PUBLISH_DELAY_ENV: "60"})
    try:
        _wait_for(run, lambda: _mid_publication(out))
        from aria_tda.errors import LockedError
        from aria_tda.report.load import load_results

        t0 = time.monotonic()
        with pytest.raises(LockedError, match=rf"being published by process pid {run.pid}.*"
                                              r"waited 1 s"):
            load_results(out, wait=1.0)
        assert time.monotonic() - t0 < 30
    finally:
        run.kill()
        run.wait()


def test_a_folder_a_first_run_still_computes_is_one_line_at_once(tmp_path):
    """No results.json yet and no publication under way: nothing to wait for, one line naming
    the writer (not "not an ARIA results folder", not a two-minute wait)."""
    out = tmp_path / "results"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from aria_tda._lock import writer_lock\n"
         "with writer_lock(sys.argv[1], 'results folder'):\n"
         "    print('held', flush=True); time.sleep(120)", str(out)],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        t0 = time.monotonic()
        line = one_line_error(cli(["evidence", out, "--query", "0", "--out",
                                   tmp_path / "q.html"]))
        assert time.monotonic() - t0 < 60
        assert "LockedError" in line and "no results are published there yet" in line, line
        assert f"pid {holder.pid}" in line, line
    finally:
        holder.kill()
        holder.wait()


# --------------------------------------------------------------------------- staleness


def _top(out: Path, query: int, n: int) -> list[str]:
    top = pd.read_parquet(out / "topk.parquet")
    top = top[(top["query"] == query) & (top["variant"] == "original")].sort_values("rank")
    return [str(t) for t in top["track_id"][:n]]


def test_media_changed_or_gone_since_the_run_are_refused_and_named(tmp_path, media_results):
    """Before: the dossier played the new file (other music) and said nothing of the change."""
    _, out = media_results
    midi = out.parent / "midi"
    meta = json.loads((out / "results.json").read_text())
    first, second, third = _top(out, 0, 3)
    assert {f"train:{first}", f"train:{second}", "query:0"} <= set(meta["media"])
    (midi / f"{first}.mid").write_bytes((midi / f"{third}.mid").read_bytes())  # other music
    (midi / f"{second}.mid").unlink()
    env = _small_soundfont()
    page = tmp_path / "q0.html"
    proc = cli(["evidence", out, "--query", "0", "--top", "3", "--out", page], env=env)
    _ok(proc)
    assert "media: 2 of 4 clips playable" in proc.stderr, proc.stderr[-2000:]
    html = page.read_text()
    changed = re.findall(r"training file \S+ changed since the results were made", html)
    gone = re.findall(r"training file \S+ is missing: it was there when the results were made",
                      html)
    assert changed and all(f"{first}.mid" in c for c in changed), html[-3000:]
    assert gone and all(f"{second}.mid" in g for g in gone)
    # the query itself, rewritten since: refused too
    (midi / "q0.mid").write_bytes((midi / "q1.mid").read_bytes())
    proc = cli(["evidence", out, "--query", "0", "--top", "3", "--out", page], env=env)
    _ok(proc)
    assert "query file" in page.read_text() and "changed since the results were made" in (
        page.read_text())


def test_media_restored_play_again(tmp_path, media_results):
    """The record holds the content, not the path: the same bytes elsewhere, or back, play."""
    _, out = media_results
    midi = out.parent / "midi"
    first = _top(out, 2, 1)[0]
    kept = (midi / f"{first}.mid").read_bytes()
    (midi / f"{first}.mid").write_bytes(b"MThd" + b"\0" * 20)
    (midi / f"{first}.mid").write_bytes(kept)  # back, with a new mtime and ctime
    page = tmp_path / "q2.html"
    proc = cli(["evidence", out, "--query", "2", "--top", "1", "--out", page],
               env=_small_soundfont())
    _ok(proc)
    assert "media: 2 of 2 clips playable" in proc.stderr, proc.stderr[-2000:]
    assert "changed since" not in page.read_text()


# --------------------------------------------------------------------------- soundfont


@pytest.mark.parametrize("how", ["env", "flag"])
def test_a_missing_soundfont_is_one_line_naming_where_aria_looked(tmp_path, media_results,
                                                                   how):
    _, out = media_results
    empty = tmp_path / "no-soundfonts"
    empty.mkdir()
    page = tmp_path / "q0.html"
    args = ["evidence", out, "--query", "0", "--top", "2", "--out", page]
    if how == "env":
        proc = cli(args, env={"ARIA_SOUNDFONT": str(empty)})
    else:
        proc = cli([*args, "--soundfont", empty])
    _ok(proc)
    warned = [line for line in proc.stderr.splitlines() if "warning:" in line]
    assert len(warned) == 1, proc.stderr[-2000:]
    line = warned[0]
    assert "no General-MIDI soundfont found" in line and str(empty) in line, line
    assert "fluid-soundfont-gm" in line and "scripts/setup.sh" in line, line
    assert "media: 0 of 3 clips playable" in proc.stderr
    assert "no General-MIDI soundfont found" in page.read_text()


def test_a_soundfont_named_but_absent_is_named(tmp_path, media_results):
    _, out = media_results
    gone = tmp_path / "gone.sf2"
    proc = cli(["evidence", out, "--query", "0", "--top", "1", "--out", tmp_path / "q.html"],
               env={"ARIA_SOUNDFONT": str(gone)})
    _ok(proc)
    warned = [line for line in proc.stderr.splitlines() if "warning:" in line]
    assert len(warned) == 1 and "ARIA_SOUNDFONT: no such file" in warned[0], proc.stderr


def test_evidence_on_a_folder_no_run_published_is_one_line(tmp_path):
    """A folder that is no results folder (and no run writes): the usual one line."""
    (tmp_path / "empty").mkdir()
    line = one_line_error(cli(["evidence", tmp_path / "empty", "--query", "0", "--out",
                               tmp_path / "q.html"]))
    assert "not an ARIA results folder" in line
