"""The report's Table-3 layout: axis-channel alignment of the embedding-retrieval settings."""

from __future__ import annotations

import pandas as pd

from aria_tda.report import load_results, write_report
from aria_tda.report.embeddings import embedding_alignment_table, embedding_settings
from aria_tda.report.sections.alignment import alignment_table
from aria_tda.results import read_results_meta, write_results_meta


def _mark(path, **extra) -> None:
    meta = read_results_meta(path)
    meta = {k: v for k, v in meta.items() if k not in {"kind", "aria_version", "created"}}
    meta.update(extra)
    write_results_meta(path, meta)


def test_no_embedding_settings_no_table(results):
    path, _ = results
    data = load_results(path)
    assert embedding_settings(data) == []
    assert embedding_alignment_table(data, alignment_table(data)) is None


def test_listed_embedding_settings_get_the_table3_layout(results):
    path, frames = results
    _mark(path, embedding_settings=["MERT"])
    data = load_results(path)
    assert embedding_settings(data) == ["MERT"]
    assert embedding_alignment_table(data, None) is None  # no alignment rows, no Table 3
    t = embedding_alignment_table(data, alignment_table(data))
    assert t is not None and t.name == "alignment_embeddings"
    assert t.df["setting"].tolist() == ["MERT"]
    al = frames["alignment"]
    want = al[(al["setting"] == "MERT") & (al["channel"] == "harmony")]["alpha_max"].iloc[0]
    assert t.df["harmony_alpha_max"].iloc[0] == want
    out = write_report(path, latex=True)
    html = out.html.read_text()
    assert 'id="table-alignment_embeddings"' in html and 'href="#alignment_embeddings"' in html
    assert 'id="table-alignment"' in html  # the full alignment table stays
    tex = (out.exports / "alignment_embeddings.tex").read_text()
    assert "MERT" in tex and "TRAK" not in tex
    csv = pd.read_csv(out.exports / "alignment_embeddings.csv")
    assert csv["setting"].tolist() == ["MERT"]


def test_kind_embedding_in_the_settings_list_marks_a_setting(results):
    path, _ = results
    meta = read_results_meta(path)
    settings = [dict(s, kind="embedding") if s.get("name") == "MERT" else s
                for s in meta.get("settings") or []]
    if not any(s.get("name") == "MERT" for s in settings):
        settings.append({"name": "MERT", "method": "MERT", "stage": "-", "kind": "embedding"})
    _mark(path, settings=settings)
    assert embedding_settings(load_results(path)) == ["MERT"]
