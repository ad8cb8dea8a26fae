"""``aria-tda homogeneity`` / ``aria-tda run``: the default K sweep fitted to a small pool, the
summary table they end with, ``--json`` and ``--no-media``."""

from __future__ import annotations

import json

import pytest

from aria_tda.cli import main
from aria_tda.results import read_results_meta, read_table


def _homogeneity(tmp_path, *flags):
    return main(["homogeneity", str(tmp_path / "scores.npy"), "--features",
                 str(tmp_path / "store"), "--segments", str(tmp_path / "segments.csv"),
                 "--out", str(tmp_path / "one"), *flags])


def test_homogeneity_with_default_flags_fits_k_to_a_pool_of_120(tmp_path, rng, capsys,
                                                                planted_study):
    planted_study(tmp_path, rng)  # 120 tracks, 2 segments each
    assert _homogeneity(tmp_path) == 0
    captured = capsys.readouterr()
    assert ("K sweep: 5, 10, 20 (default for a pool of 120 tracks; set -K to choose)"
            in captured.err)
    study = read_results_meta(tmp_path / "one")["study"]
    assert study["K"] == [5, 10, 20] and study["K_report"] == 20
    assert set(read_table(tmp_path / "one", "homogeneity").K) == {5, 10, 20}
    # the summary table ends the screen output: a header and the one setting
    lines = captured.out.strip().splitlines()
    assert lines[-2].split()[:2] == ["setting", "verdict"]
    row = lines[-1].split()
    assert row[0] == "scores" and row[1] in {"ok", "suspect", "collapsed"} and row[-1] == "20"
    # the planted structure is harmonic: harmony leads
    assert "harmony" in lines[-1]


def test_json_prints_only_the_summary_on_stdout(tmp_path, rng, capsys, planted_study):
    planted_study(tmp_path, rng)
    assert _homogeneity(tmp_path, "-K", "5", "10", "-B", "10", "--bootstrap", "20",
                        "--no-residual", "--no-report", "--json") == 0
    captured = capsys.readouterr()
    summary = json.loads(captured.out)  # nothing else on stdout
    assert summary["K_report"] == 10 and summary["K"] == [5, 10]
    (one,) = summary["settings"]
    rel = read_table(tmp_path / "one", "reliability")
    assert one["setting"] == "scores" and one["verdict"] == rel.verdict.iloc[0]
    hom = read_table(tmp_path / "one", "homogeneity")
    at = hom[(hom.K == 10) & (hom.variant == "original")]
    assert one["leading"][0] == at.sort_values("zbar").channel.iloc[-1]
    assert one["zbar"] == pytest.approx(at.zbar.max(), rel=1e-5)
    assert "[aria-tda homogeneity]" in captured.err  # the log went to stderr
    assert "K sweep" not in captured.err  # K was named


def test_run_json_and_no_media(tmp_path, rng, capsys, planted_study):
    study = planted_study(tmp_path, rng)
    text = study.read_text().replace("report = false", "report = true")
    study.write_text(text)
    assert main(["run", str(study), "--no-media", "--json", "--no-progress"]) == 0
    captured = capsys.readouterr()
    summary = json.loads(captured.out)
    assert [s["setting"] for s in summary["settings"]] == ["Planted"]
    assert summary["settings"][0]["K"] == 10
    # the report's data block holds no listening room without media, one with them
    assert '"media":null' in (tmp_path / "results" / "report.html").read_text()
    assert main(["run", str(study), "--out", str(tmp_path / "with"), "--quiet"]) == 0
    assert '"media":null' not in (tmp_path / "with" / "report.html").read_text()
    assert capsys.readouterr().out == ""  # --quiet: no log, no summary
