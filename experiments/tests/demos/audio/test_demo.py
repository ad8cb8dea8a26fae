"""``aria-tda demo audio`` end to end at the tiny size: 12 attribution settings over three stages
plus 3 embedding baselines (15), the Table-2/3 text layouts, resumable."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from aria_tda.cli import main
from aria_tda.results import read_results_meta, read_table

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    """The demo as the README runs it: from a working folder, into its default output folder
    (``./aria-demo-audio``, a relative path), through the command line."""
    import os

    work = tmp_path_factory.mktemp("audio-demo")
    here = Path.cwd()
    os.chdir(work)
    try:
        assert main(["demo", "audio", "--preset", "tiny", "--quiet", "--no-progress"]) == 0
    finally:
        os.chdir(here)
    out = work / "aria-demo-audio"
    return out, out / "results"


EMBEDDINGS = {"clap-style", "clews-style", "mert-style"}


def test_fifteen_settings_over_three_stages_and_three_encoders(tiny_run):
    _, results = tiny_run
    rel = read_table(results, "reliability")
    assert len(rel) == 15
    attr = rel[rel["stage"] != "-"]
    emb = rel[rel["stage"] == "-"]
    assert len(attr) == 12 and set(attr["stage"]) == {"semantic", "coarse", "fine"}
    assert set(attr["method"]) == {"TRAK", "FactGraSS", "GradCos", "LoGra"}
    m = attr.groupby("stage")["n_train"].first()
    assert m["semantic"] < m["coarse"] < m["fine"]
    # embeddings: one row per training track, one column per generated query
    assert set(emb["method"]) == set(emb["setting"]) == EMBEDDINGS
    assert (emb["n_train"] < m["semantic"]).all()  # tracks, not 10 s segments
    assert (emb["n_queries"] == attr["n_queries"].iloc[0]).all()
    al = read_table(results, "alignment")
    assert set(al["setting"]) >= EMBEDDINGS
    assert al[al["setting"].isin(EMBEDDINGS)]["alpha_max"].between(0, 1).all()
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
    assert set(planted[planted["stage"] == "-"]["level"]) == {"track"}
    assert set(planted["setting"]) >= EMBEDDINGS
    meta = read_results_meta(results)
    assert set(meta["embedding_settings"]) == EMBEDDINGS
    demo = meta["demo"]
    assert demo["kind"] == "audio" and demo["preset"]["name"] == "tiny"
    seg = demo["segments"]
    assert seg["semantic"] < seg["coarse"] < seg["fine"]
    assert set(demo["stage_seconds"]) >= {"corpus", "tokens", "models", "queries",
                                          "attribution", "features", "encoders", "query_audio",
                                          "embeddings", "aria", "total"}
    assert {e["checkpoint"] for e in demo["embeddings"].values()} == {"trained here"}
    html = (results / "report.html").read_text()
    assert "Rhythm" in html and "Timbre" in html and "FactGraSS/fine" in html
    assert 'id="table-alignment_embeddings"' in html and "clews-style" in html


def test_query_audio_is_the_generated_tokens(tiny_run):
    import pandas as pd
    import soundfile as sf

    out, results = tiny_run
    listing = pd.read_csv(out / "query_audio" / "wav" / "queries.csv")
    queries = pd.read_csv(results.parent / "queries.csv")
    assert listing["track_id"].tolist() == queries["track_id"].tolist()
    y, sr = sf.read(listing["path"].iloc[0], dtype="float32")
    assert sr == 24_000 and len(y) == 4 * sr and np.abs(y).max() > 0


def test_queries_and_training_items_name_their_audio(tiny_run):
    import pandas as pd

    from demo_medialib import (
        TOL,
        check_queries_media,
        check_resolves,
        check_store_sources,
        media_seconds,
        top_items,
    )

    out, results = tiny_run
    # each query's media is its generated audio; prompt_source the rendering it was prompted from
    q = check_queries_media(out / "queries.csv")
    assert all(f.parent == (out / "query_audio" / "wav").resolve() for f in q["file"])
    assert all(media_seconds(out / p) > 0 for p in q["prompt_source"])
    store = check_store_sources(out / "features" / "store", windows="none")
    length = {t: media_seconds(s) for t, s in store["source"].items()}
    # every segment's window lies within its track's file
    for st in ("semantic", "coarse", "fine"):
        seg = pd.read_csv(out / f"segments_{st}.csv", dtype={"track_id": str})
        assert (seg["start"] >= 0).all() and (seg["start"] < seg["end"]).all()
        assert (seg["end"] <= seg["track_id"].map(length) + TOL).all()
    for setting in ("TRAK/fine", "clap-style"):
        check_resolves(results, top_items(results, setting), setting=setting)


def test_text_tables_have_the_paper_layouts(tiny_run):
    from aria_tda_experiments.audio.tables import table2_text, table3_text

    _, results = tiny_run
    k = read_results_meta(results)["demo"]["K_report"]
    for variant in ("original", "residual"):
        lines = table2_text(results, k, variant=variant).splitlines()
        rows = lines[3:]
        assert len(rows) == 15, lines
        assert sum(r.split()[1] == "—" for r in rows) == 3
        assert {r.split()[0] for r in rows} >= EMBEDDINGS
    t3 = table3_text(results).splitlines()
    assert t3[0].startswith("Table 3 layout") and len(t3) == 3 + 3
    assert {r.split()[0] for r in t3[3:]} == EMBEDDINGS


def test_rerun_reuses_every_stage(tiny_run, capsys):
    out, _ = tiny_run
    rc = main(["demo", "audio", "--preset", "tiny", "--out", str(out), "--no-progress"])
    assert rc == 0
    text = capsys.readouterr().out
    for stage in ("corpus", "tokens", "models", "queries", "attribution", "features",
                  "encoders", "query_audio", "embeddings"):
        assert f"{stage}: reusing finished stage" in text, stage
    assert "Table 2 layout" in text and "Table 3 layout" in text


def test_audio_demo_refuses_symbolic_only_methods(tmp_path, capsys):
    rc = main(["demo", "audio", "--preset", "tiny", "--out", str(tmp_path / "x"),
               "--methods", "TracIn"])
    assert rc == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "TracIn" in err[0]


@pytest.mark.parametrize("flags, match", [
    (["--encoders", "mert"], "NAME=PATH"),
    (["--encoders", "musicnn=x.pt"], "musicnn"),
    (["--encoders", "mert=/no/such/folder"], "/no/such/folder"),
    (["--encoders", "clap=a.pt", "clap=b.pt"], "once"),
])
def test_bad_encoders_flag_is_one_line(tmp_path, capsys, flags, match):
    rc = main(["demo", "audio", "--preset", "tiny", "--out", str(tmp_path / "x"), *flags])
    assert rc == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and match in err[0]
    assert not (tmp_path / "x").exists()


def test_encoders_flag_belongs_to_the_audio_demo(tmp_path, capsys):
    rc = main(["demo", "--quick", "--out", str(tmp_path / "x"), "--encoders", "mert=x"])
    assert rc == 2
    assert "demo audio" in capsys.readouterr().err


def test_published_checkpoint_replaces_its_demo_trained_encoder(tiny_run, tmp_path):
    """--encoders clews=PATH: the real CLEWS architecture (random weights in the authors'
    checkpoint format) scores the same queries; the other two stay demo-trained."""
    import shutil

    from aria_tda.embed.encoders.clews import save_random_checkpoint
    from aria_tda_experiments.audio.demo import run_audio_demo

    out, _ = tiny_run
    work = tmp_path / "demo"
    shutil.copytree(out, work)
    ckpt = save_random_checkpoint(tmp_path / "checkpoint_best.ckpt", seed=1, small=True)
    kept = [work / "encoders" / "clap-style.pt", work / "encoders" / "mert-style.pt",
            work / "attribution" / "stage.json"]
    mtimes = [p.stat().st_mtime_ns for p in kept]
    results = run_audio_demo(work, preset="tiny", quiet=True, progress=False, report=False,
                             encoders={"clews": ckpt})
    rel = read_table(results, "reliability")
    assert len(rel) == 15
    assert set(rel[rel["stage"] == "-"]["setting"]) == {"clap-style", "clews", "mert-style"}
    demo = read_results_meta(results)["demo"]
    assert demo["embeddings"]["clews"] == {
        "encoder": "clews", "checkpoint": "published",
        "scores": str(work / "embeddings" / "clews" / "scores.npy")}
    assert demo["embeddings"]["mert"]["checkpoint"] == "trained here"
    # the attribution stage and the two demo-trained encoders were reused, not recomputed
    assert mtimes == [p.stat().st_mtime_ns for p in kept]


def test_dossier_and_report_media_in_chromium(tiny_run, tmp_path, capsys):
    """``aria-tda evidence`` for query 0 (first setting, top 3) and the demo's own report (its
    per-query view loads clips from report_media/ when a query's panel opens) in Chromium,
    offline: every player decodes, every picture renders, the spectrogram panels are there,
    no console error, no request but the page and its own media."""
    from demo_browser import NO_BROWSER, check_dossier, check_report, chromium

    if NO_BROWSER is not None:
        pytest.skip(NO_BROWSER)
    _, results = tiny_run
    first = read_results_meta(results)["settings"][0]["name"]
    out = tmp_path / "dossier.html"
    assert main(["evidence", str(results), "--query", "0", "--top", "3", "--out", str(out)]) == 0
    assert f"wrote {out}" in capsys.readouterr().out
    assert f"setting {first}" in out.read_text(encoding="utf-8")
    report = results / "report.html"
    assert (results / "report_media").is_dir()  # the demo's report keeps its listening room
    with chromium(tmp_path / "chromium-profile") as ctx:
        seen = check_dossier(ctx, out, kind="audio", top=3, shot="dossier-audio-demo.png")
        assert not seen["rolls"]  # audio clips are drawn as spectrogram panels
        check_report(ctx, report, kind="audio", queries=2, top=3)
