"""``aria demo audio`` end to end at the tiny size: 12 settings, three stages, resumable."""

from __future__ import annotations

import numpy as np
import pytest

from aria.cli import main
from aria.results import read_results_meta, read_table

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    from aria.bench.audio.demo import run_audio_demo

    out = tmp_path_factory.mktemp("audio-demo")
    results = run_audio_demo(out, preset="tiny", quiet=True, progress=False)
    return out, results


def test_twelve_settings_over_three_stages(tiny_run):
    _, results = tiny_run
    rel = read_table(results, "reliability")
    assert len(rel) == 12
    assert set(rel["stage"]) == {"semantic", "coarse", "fine"}
    assert set(rel["method"]) == {"TRAK", "FactGraSS", "GradCos", "LoGra"}
    m = rel.groupby("stage")["n_train"].first()
    assert m["semantic"] < m["coarse"] < m["fine"]
    hom = read_table(results, "homogeneity")
    assert set(hom["channel"]) == {"rhythm", "harmony", "timbre"}
    assert set(hom["variant"]) == {"original", "residual"}
    assert np.isfinite(hom["zbar"]).all()
    conf = read_table(results, "confound")
    assert len(conf) and set(conf["column"]) == {"genre"}


def test_planted_recall_and_metadata(tiny_run):
    _, results = tiny_run
    planted = read_table(results, "planted")
    assert set(planted["level"]) == {"segment", "track"}
    assert planted["recall"].between(0, 1).all() and planted["chance"].between(0, 1).all()
    # recall@K never falls as K grows
    for _, g in planted.groupby(["setting", "level"]):
        assert np.all(np.diff(g.sort_values("K")["recall"].to_numpy()) >= 0)
    meta = read_results_meta(results)
    demo = meta["demo"]
    assert demo["kind"] == "audio" and demo["preset"]["name"] == "tiny"
    seg = demo["segments"]
    assert seg["semantic"] < seg["coarse"] < seg["fine"]
    assert set(demo["stage_seconds"]) >= {"corpus", "tokens", "models", "queries",
                                          "attribution", "features", "aria", "total"}
    html = (results / "report.html").read_text()
    assert "Rhythm" in html and "Timbre" in html and "FactGraSS/fine" in html


def test_rerun_reuses_every_stage(tiny_run, capsys):
    out, _ = tiny_run
    rc = main(["demo", "audio", "--preset", "tiny", "--out", str(out), "--no-progress"])
    assert rc == 0
    text = capsys.readouterr().out
    for stage in ("corpus", "tokens", "models", "queries", "attribution", "features"):
        assert f"{stage}: reusing finished stage" in text, stage
    assert "Table 2 layout" in text


def test_audio_demo_refuses_symbolic_only_methods(tmp_path, capsys):
    rc = main(["demo", "audio", "--preset", "tiny", "--out", str(tmp_path / "x"),
               "--methods", "TracIn"])
    assert rc == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "TracIn" in err[0]
