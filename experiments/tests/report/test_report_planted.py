"""Planted influence in the report: wide tables, chance level, HTML section, LaTeX/CSV exports."""

from __future__ import annotations

import html
import math
import re

import pandas as pd
import pytest
from _experiment_tables import SETTINGS

from aria_tda.errors import ParameterError
from aria_tda.report import load_results, write_report
from aria_tda.results import write_table
from aria_tda_experiments.report.planted import chance_recall, planted_tables


def _exact_chance(n: int, v: int, k: int) -> float:
    k = min(k, n)
    return 1 - math.comb(n - v, k) / math.comb(n, k)


@pytest.mark.parametrize(("n", "v", "k"), [(10, 2, 3), (10, 2, 4), (40, 4, 10), (67000, 3, 500)])
def test_chance_recall_matches_the_binomial_formula(n, v, k):
    assert chance_recall(n, v, k) == pytest.approx(_exact_chance(n, v, k), rel=1e-9, abs=1e-12)


def test_chance_recall_edges():
    assert chance_recall(10, 0, 3) == 0.0
    assert chance_recall(10, 2, 9) == 1.0  # every top-9 of 10 holds one of 2
    assert chance_recall(10, 2, 50) == 1.0  # K above N acts as N
    with pytest.raises(ParameterError, match="n_source"):
        chance_recall(5, 6, 1)
    with pytest.raises(ParameterError, match="k"):
        chance_recall(5, 1, 0)


def _audio_folder(make_results, *, work_ids: bool = True, n_train_works: int = 10):
    """The fixture folder plus the audio demo's metadata: 40 tracks = 10 works x 4 versions,
    queries 0 and 1 planted from works w0 (4 versions) and w1."""
    path, frames = make_results()
    tracks = frames["tracks"].copy()
    if work_ids:
        tracks["work_id"] = [f"w{i // 4}" for i in range(len(tracks))]
        tracks["split"] = "train"
    write_table(path, "tracks", tracks)
    q = frames["queries"].copy()
    q["split"] = ["planted" if i < 2 else "test" for i in range(len(q))]
    q["work_id"] = [f"w{i}" if i < 2 else f"held{i}" for i in range(len(q))]
    write_table(path, "queries", q)
    planted = frames["planted"].assign(n_train_works=n_train_works)
    write_table(path, "planted", planted)
    return path, planted


def test_planted_tables_are_wide_with_chance(make_results):
    path, planted = _audio_folder(make_results)
    data = load_results(path)
    tables = {t.name: t for t in planted_tables(data)}
    assert list(tables) == ["planted", "planted_segment"]
    track = tables["planted"]
    assert list(track.df["setting"]) == [s[0] for s in SETTINGS]  # results order
    assert track.layout["ks"] == [10, 50] and track.layout["level"] == "track"
    for _, row in track.df.iterrows():
        for k in (10, 50):
            src = planted[
                (planted.setting == row.setting) & (planted.level == "track") & (planted.K == k)
            ]
            assert row[f"recall_at_{k}"] == pytest.approx(src["recall"].iloc[0], abs=1e-6)
            assert row[f"chance_at_{k}"] == pytest.approx(_exact_chance(40, 4, k))
    assert track.layout["chance"] == pytest.approx({k: _exact_chance(40, 4, k) for k in (10, 50)})
    assert track.layout["chance_n"] == 40 and track.layout["chance_v"] == [4]
    assert "N = 40 training tracks" in track.caption and "v = 4" in track.caption
    assert "held-out versions of training works" in track.caption
    # segment level: no chance (segment counts per work are not in the results)
    seg = tables["planted_segment"]
    assert not any(c.startswith("chance_at_") for c in seg.df.columns)
    assert seg.layout["chance"] == {} and "No chance level" in seg.caption


@pytest.mark.parametrize(
    "kw", [{"work_ids": False}, {"n_train_works": 7}], ids=["no-work-ids", "other-training-set"]
)
def test_no_chance_without_the_numbers(make_results, kw):
    path, _ = _audio_folder(make_results, **kw)
    track = planted_tables(load_results(path))[0]
    assert track.name == "planted" and track.layout["chance"] == {}
    assert not any(c.startswith("chance_at_") for c in track.df.columns)


def test_no_planted_table_no_section(make_results):
    path, _ = make_results()
    (path / "planted.csv").unlink()
    out = write_report(path, plots=False)
    assert not any(t.startswith("planted") for t in out.tables)
    assert 'id="planted"' not in out.html.read_text()
    assert not any("planted" in m for m in out.missing)  # optional, not a missing piece


def _rows(page: str, table_id: str) -> list[str]:
    m = re.search(rf'<table[^>]*id="{table_id}".*?</table>', page, re.S)
    assert m, table_id
    return re.findall(r"<tr[^>]*>.*?</tr>", m.group(0).split("<tbody>")[1], re.S)


def test_html_section_and_exports(make_results, tmp_path):
    path, planted = _audio_folder(make_results)
    out = write_report(path, latex=True, tables_dir=tmp_path / "tables", plots=False)
    page = out.html.read_text()
    assert '<section id="planted">' in page and 'href="#planted">Planted influence' in page
    # the section comes after the agreement table and before the per-query view
    assert page.index('id="agreement"') < page.index('id="planted"') < page.index('id="query"')
    rows = _rows(page, "table-planted")
    assert len(rows) == len(SETTINGS) + 1  # one per setting + chance
    for (s, *_r), tr in zip(SETTINGS, rows, strict=False):
        assert f'data-setting="{html.escape(s)}"' in tr
        for k in (10, 50):
            v = planted[(planted.setting == s) & (planted.level == "track") & (planted.K == k)]
            want = f"{100 * v['recall'].iloc[0]:.0f}%"
            cell = re.search(rf'data-col="recall_at_{k}">([^<]*)<', tr)
            assert cell and cell.group(1) == want
    assert 'class="chance block-start"' in rows[-1]
    assert f"{100 * _exact_chance(40, 4, 10):.0f}%" in rows[-1]
    # the segment level is folded under the track-level table
    assert '<details class="planted-more" id="details-planted_segment">' in page
    assert len(_rows(page, "table-planted_segment")) == len(SETTINGS)  # no chance row
    # CSV = the wide frame, LaTeX balanced with a chance row
    csv = pd.read_csv(out.exports / "planted.csv")
    assert list(csv["setting"]) == [s[0] for s in SETTINGS]
    assert {"recall_at_10", "recall_at_50", "chance_at_10", "chance_at_50"} <= set(csv.columns)
    tex = (out.exports / "planted.tex").read_text()
    assert r"$R@10\uparrow$" in tex and r"\emph{chance}" in tex and "$N{=}40$" in tex
    assert tex.count(r"\begin{") == tex.count(r"\end{")
    seg_tex = (out.exports / "planted_segment.tex").read_text()
    assert "segment level" in seg_tex and r"\emph{chance}" not in seg_tex
    # the collapsed setting carries its dagger
    assert r"TRAK$^\dagger$" in tex


def test_best_recall_is_bold_only_where_it_distinguishes(make_results, tmp_path):
    path, frames = make_results()
    pl = frames["planted"].copy()
    pl["stage"] = "semantic"  # one block: best is marked across all settings
    pl["recall"] = 0.4  # every setting ties: nothing is bold
    pl.loc[(pl.setting == "TRAK/fine") & (pl.K == 50), "recall"] = 0.9
    write_table(path, "planted", pl)
    out = write_report(path, latex=True, tables_dir=tmp_path / "t", plots=False)
    page = out.html.read_text()
    rows = _rows(page, "table-planted")
    bold = [tr for tr in rows if 'class="num best"' in tr]
    assert len(bold) == 1 and 'data-setting="TRAK/fine"' in bold[0]
    tex = (out.exports / "planted.tex").read_text()
    assert tex.count(r"\textbf{") == 1 and r"\textbf{90\%}" in tex


def test_chance_column_of_planted_csv_wins(make_results, tmp_path):
    """planted.csv's own ``chance``: the same for every track-level row (one chance row), per
    stage at the segment level (one chance row per stage block)."""
    path, planted = _audio_folder(make_results)  # tracks.csv would give another chance
    stage_chance = {"semantic": 0.11, "coarse": 0.22, "fine": 0.33, "-": 0.44}
    planted["chance"] = [
        (0.05 if lv == "track" else stage_chance[st]) * (2 if k == 50 else 1)
        for lv, st, k in zip(planted["level"], planted["stage"], planted["K"], strict=True)
    ]
    write_table(path, "planted", planted)
    tables = {t.name: t for t in planted_tables(load_results(path))}
    track, seg = tables["planted"], tables["planted_segment"]
    assert track.layout["chance"] == pytest.approx({10: 0.05, 50: 0.10})
    assert track.layout["chance_source"] == "planted.csv" and track.layout["chance_n"] is None
    assert list(track.df["chance_at_10"]) == pytest.approx([0.05] * len(SETTINGS))
    assert "from planted.csv" in seg.caption
    assert seg.layout["chance"] == {} and not seg.layout["chance_cells"]
    blocks = seg.layout["chance_blocks"]
    assert set(blocks) == set(stage_chance)
    for st, v in stage_chance.items():
        assert blocks[st] == pytest.approx({10: v, 50: 2 * v})
    out = write_report(path, latex=True, tables_dir=tmp_path / "t", plots=False)
    page = out.html.read_text()
    rows = _rows(page, "table-planted")
    assert len(rows) == len(SETTINGS) + 1 and "5%" in rows[-1] and "10%" in rows[-1]
    seg_rows = _rows(page, "table-planted_segment")
    chance_rows = [r for r in seg_rows if "chance block-start" in r]
    assert len(seg_rows) == 2 * len(SETTINGS) and len(chance_rows) == len(SETTINGS)
    assert 'data-stage="coarse"' in chance_rows[1] and "22%" in chance_rows[1]
    tex = (out.exports / "planted_segment.tex").read_text()
    assert tex.count(r"\emph{chance}") == len(SETTINGS) and "(per stage)" in tex
    assert tex.count("{") == tex.count("}")


def test_chance_beside_each_cell_when_it_varies_within_a_stage(make_results, tmp_path):
    path, planted = _audio_folder(make_results)
    planted["stage"] = "semantic"  # one stage whose settings differ in chance
    planted["chance"] = [0.01 * (i + 1) for i in range(len(planted))]
    write_table(path, "planted", planted)
    t = planted_tables(load_results(path))[0]
    assert t.layout["chance_cells"] and t.layout["chance"] == {} and t.layout["chance_blocks"] == {}
    out = write_report(path, latex=True, tables_dir=tmp_path / "t", plots=False)
    rows = _rows(out.html.read_text(), "table-planted")
    assert len(rows) == len(SETTINGS)  # no chance row
    assert all('<span class="ci">chance ' in r for r in rows)
    tex = (out.exports / "planted.tex").read_text()
    assert "(in parentheses)" in tex and r"\emph{chance}" not in tex
