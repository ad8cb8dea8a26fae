"""Reading a results folder: orders, K choice, missing and broken pieces, non-results folders."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

from aria_tda.errors import AriaWarning, FileFormatError, ParameterError
from aria_tda.report import load_results, write_report
from aria_tda.report.load import choose_k
from aria_tda.report.tables import build_tables
from aria_tda.results import CORE_TABLES, write_results_meta, write_table


def test_orders_and_k(results):
    path, _ = results
    data = load_results(path)
    assert data.missing == []
    assert data.settings == ["TRAK/semantic", "TRAK/coarse", "TRAK/fine", "MERT"]
    assert data.channels == ["rhythm", "harmony", "timbre"]
    assert data.variants == ["original", "residual"]
    assert data.ks == [20, 50, 100, 300]
    assert data.verdict("TRAK/coarse") == "collapsed"
    assert data.setting_info("MERT")["stage"] == "-"
    # every table of ARIA's own (the experiments' tables are tested in experiments/tests/report)
    assert set(data.tables) == set(CORE_TABLES)
    assert choose_k(data) == 300
    assert choose_k(data, 50) == 50
    with pytest.raises(
        ParameterError,
        match=r"k: expected one of the group sizes in the results \[20, 50, 100, 300\], got 250",
    ):
        choose_k(data, 250)
    with pytest.raises(ParameterError, match="k: expected an integer >= 1"):
        choose_k(data, 0)


@pytest.mark.parametrize(
    ("k_report", "drop_300", "expected"),
    [(50, False, 50), (None, False, 300), (None, True, 100), (999, True, 100)],
)
def test_default_k_rules(make_results, k_report, drop_300, expected):
    path, frames = make_results(k_report=k_report)
    if drop_300:
        h = frames["homogeneity"]
        write_table(path, "homogeneity", h[h["K"] != 300])
    assert choose_k(load_results(path)) == expected


def test_channel_order_follows_meta_then_registry(make_results):
    ch = ("melody", "harmony", "rhythm", "dynamic", "texture")
    path, _ = make_results(channels=ch, modality="symbolic")
    data = load_results(path)
    assert data.channels == list(ch)


def test_not_a_results_folder(tmp_path):
    with pytest.raises(FileFormatError, match="no such directory"):
        load_results(tmp_path / "nope")
    (tmp_path / "results.json").write_text(json.dumps({"kind": "something-else"}))
    with pytest.raises(FileFormatError, match="is not an ARIA results folder"):
        write_report(tmp_path)
    assert not (tmp_path / "report.html").exists()


def test_missing_and_broken_pieces_are_noted_not_fatal(results):
    path, frames = results
    (path / "topk.parquet").unlink()
    (path / "alignment.csv").unlink()
    (path / "pairs.parquet").write_bytes(b"not a parquet file")
    frames["null"].drop(columns=["sigma"]).to_csv(path / "null.csv", index=False)
    bad = frames["ranking"].copy()
    bad["K"] = "many"
    bad.to_csv(path / "ranking.csv", index=False)
    data = load_results(path)
    text = "\n".join(data.missing)
    assert "topk.parquet" in text and "not in this results folder" in text
    assert "alignment.csv" in text
    assert "pairs.parquet: unreadable" in text
    assert "null.csv: lacks required column(s) ['sigma']" in text
    assert "ranking.csv: values of the wrong type" in text
    for name in ("topk", "alignment", "pairs", "null", "ranking"):
        assert data.table(name) is None
    # optional tables absent -> not reported as missing
    (path / "lds.csv").unlink()
    assert not any("lds.csv" in m for m in load_results(path).missing)
    with pytest.warns(AriaWarning, match="5 piece"):
        out = write_report(path, plots=False)
    page = out.html.read_text()
    assert 'id="missing"' in page and "topk.parquet" in page
    assert "Homogeneity at K = 300" in page  # what exists is still there


def test_bare_results_folder(tmp_path):
    """Only results.json: a report with the run details and a note of everything missing."""
    write_results_meta(tmp_path, {"study": {"modality": "audio"}, "settings": [], "notes": []})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AriaWarning)
        out = write_report(tmp_path, latex=True)
    page = out.html.read_text()
    assert out.k is None and out.tables == ()
    assert "reliability.csv" in page and "no per-query tables" in page
    # nothing exported but the marker that says the folder is ARIA's own
    assert sorted(p.name for p in out.exports.iterdir()) == [".aria-output.json"]


def test_settings_without_meta_list(results):
    path, _ = results
    meta = json.loads((path / "results.json").read_text())
    meta.pop("settings")
    meta.pop("channels")
    (path / "results.json").write_text(json.dumps(meta))
    data = load_results(path)
    assert data.settings == ["TRAK/semantic", "TRAK/coarse", "TRAK/fine", "MERT"]
    assert data.channels == ["rhythm", "harmony", "timbre"]  # registry order for audio


def test_reliability_verdict_blank(results):
    path, frames = results
    rel = frames["reliability"].copy()
    rel.loc[0, "verdict"] = np.nan
    write_table(path, "reliability", rel)
    data = load_results(path)
    assert data.verdict("TRAK/semantic") is None
    assert pd.isna(build_tables(data, k=300)["reliability"].df.loc[0, "verdict"])
