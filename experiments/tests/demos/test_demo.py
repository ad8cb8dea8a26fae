"""``aria-tda demo`` end to end at the tiny preset, its resumability, and the agreement table."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from aria_tda.errors import ParameterError
from aria_tda.results import read_results_meta, read_table
from aria_tda_experiments.demo import agreement_table, run_demo
from demo_medialib import check_queries_media, check_resolves, check_store_sources, top_items


def test_agreement_table_perfect_and_reversed():
    lds = {"A": 0.3, "B": 0.2, "C": 0.1, "D": 0.05}
    diag = {
        m: {"r1": r, "r2_5": r, "p": r, "kappa": r}
        for m, r in zip(lds, (0.1, 0.2, 0.3, 0.4), strict=True)
    }
    t = agreement_table(lds, diag)
    assert np.allclose(t["spearman"], 1.0) and np.allclose(t["kendall"], 1.0)
    diag_rev = {m: {k: -v for k, v in d.items()} for m, d in diag.items()}
    assert np.allclose(agreement_table(lds, diag_rev)["spearman"], -1.0)


def torch_cuda_available() -> bool:
    import torch

    return bool(torch.cuda.is_available())


def test_bad_arguments(tmp_path):
    with pytest.raises(ParameterError, match=r"methods\[\]"):
        run_demo(tmp_path, preset="tiny", methods=["TRAK", "Nope"], quiet=True)
    with pytest.raises(ParameterError, match="threads"):
        run_demo(tmp_path, preset="tiny", threads=0, quiet=True)
    with pytest.raises(ParameterError, match="overrides"):
        run_demo(tmp_path, preset="tiny", bogus=1, quiet=True)
    with pytest.raises(ParameterError, match="preset"):
        run_demo(tmp_path, preset="huge", quiet=True)
    with pytest.raises(ParameterError, match="until"):
        run_demo(tmp_path, preset="tiny", until="report", quiet=True)
    with pytest.raises(ParameterError, match="device"):
        run_demo(tmp_path, preset="tiny", device="tpu", quiet=True)
    if not torch_cuda_available():
        with pytest.raises(ParameterError, match=r"device: .*no CUDA GPU"):
            run_demo(tmp_path, preset="tiny", device="cuda", quiet=True)
    assert not any(tmp_path.iterdir())  # refused before any stage ran


@pytest.mark.slow
def test_tiny_demo_end_to_end_and_resume(tmp_path, capsys, monkeypatch):
    from aria_tda.cli import main

    out = tmp_path / "demo"
    # the split a GPU user makes: train and attribute (on the GPU machine), then copy the
    # folder without the other ensemble members and finish elsewhere with the same command;
    # the first run names its folder relative to the working folder, the rest absolutely
    monkeypatch.chdir(tmp_path)
    base = ["demo", "--preset", "tiny", "--out", str(out), "--threads", "1", "-B", "50"]
    assert main([*base[:4], "demo", *base[5:], "--until", "attribution"]) == 0
    log = capsys.readouterr().out
    assert "stopped after the attribution stage" in log and not (out / "results").exists()
    assert not (out / "lds").exists()
    members = sorted((out / "models").glob("member-*"))
    assert len(members) == 2
    for m in members[1:]:
        shutil.rmtree(m)
    assert main(base) == 0
    log = capsys.readouterr().out
    for stage in ("corpus", "models", "queries", "attribution"):
        assert f"{stage}: reusing finished stage" in log
    assert "lds: running" in log and "features: running" in log
    assert "Table 1 layout" in log and "Rank agreement with LDS" in log
    results = out / "results"
    rel = read_table(results, "reliability")
    assert list(rel.setting) == ["TRAK", "TracIn", "GradCos", "GradDot", "LoGra", "FactGraSS"]
    assert ((rel.kappa >= 0) & (rel.kappa <= 1)).all()
    lds = read_table(results, "lds")
    assert set(lds.method) == set(rel.setting) and np.isfinite(lds.lds).all()
    agree = read_table(results, "agreement")
    assert set(agree.diagnostic) == {"r1", "r2_5", "p", "kappa"} and set(agree.methods) == {
        "all",
        "paper",
    }
    for col in ("spearman_lo", "spearman_hi", "spearman_p_exact", "kendall_p_exact"):
        assert col in agree.columns
    # paired comparisons: every pair of the six methods on LDS and each diagnostic
    paired = read_table(results, "lds_paired")
    assert set(paired.quantity) == {"lds", "r1", "r2_5", "p", "kappa"}
    assert len(paired) == 5 * 15 and paired["separated"].dtype == bool
    assert "ΔLDS vs" in log and "(best)" in log
    zpaired = read_table(results, "paired")
    assert set(zpaired.quantity) == {"zbar"} and len(zpaired)
    hom = read_table(results, "homogeneity")
    assert set(hom.variant) == {"original", "residual"}
    # all five channels are defined: the default collections carry dynamics (Table 1's D)
    from aria_tda.results import default_k_report

    k_report = default_k_report(hom["K"].unique())  # the K of the printed Table 1
    shown = hom[(hom.variant == "original") & (hom.K == k_report)]
    assert set(shown.channel) == {"melody", "harmony", "rhythm", "dynamic", "texture"}
    assert np.isfinite(shown.zbar).all()
    assert "z undefined" not in log
    meta = read_results_meta(results)
    assert (
        meta["demo"]["preset"]["name"] == "tiny" and "attribution" in meta["demo"]["stage_seconds"]
    )
    assert (results / "report.html").is_file()
    assert any((out / "queries" / "queries" / "midi").glob("*.mid"))
    # media for the listening room: each query's MIDI, each window's work and span in it
    q = check_queries_media(out / "queries.csv")
    assert [f.name for f in q["file"]] == [f"{i}.mid" for i in q["query_id"]]
    store = check_store_sources(out / "features" / "store", windows="within")
    assert all(Path(s).is_relative_to(out / "features" / "midi") for s in store["source"])
    check_resolves(results, top_items(results, "TRAK"), setting="TRAK")
    # a rerun reuses every stage
    assert (
        main(
            [
                "demo",
                "--preset",
                "tiny",
                "--out",
                str(out),
                "--threads",
                "1",
                "-B",
                "50",
                "--no-report",
            ]
        )
        == 0
    )
    log = capsys.readouterr().out
    for stage in ("corpus", "models", "queries", "attribution", "lds", "features"):
        assert f"{stage}: reusing finished stage" in log
    assert "reusing cached results" in log
    # a folder made before the demos wrote media rebuilds its features (only) once
    record = out / "features" / "stage.json"
    rec = json.loads(record.read_text())
    rec["params"]["params"].pop("media")
    record.write_text(json.dumps(rec))
    shutil.rmtree(out / "features" / "midi")
    (out / "queries" / "queries" / "midi" / "q0000.mid").unlink()
    assert main([*base, "--no-report"]) == 0
    log = capsys.readouterr().out
    assert "features: running" in log and "lds: reusing finished stage" in log
    check_store_sources(out / "features" / "store", windows="within")
    check_queries_media(out / "queries.csv")
    assert read_results_meta(results)["demo"]["stage_devices"] == {
        "models": "cpu", "attribution": "cpu", "lds": "cpu"}
    # a changed attribution setting in the copied folder retrains the missing member
    assert main([*base, "--trak-proj-dim", "64", "--no-report"]) == 0
    log = capsys.readouterr().out
    assert "attribution: running" in log and (out / "models" / "member-01" / "model.pt").is_file()


def test_old_import_path_reexports_the_demo():
    import aria_tda_experiments.demo

    for name in aria_tda_experiments.demo.__all__:
        assert getattr(aria_tda_experiments.demo, name) is getattr(aria_tda_experiments.demo, name)


def test_trak_k_settings_from_the_preset_or_the_run():
    """A preset's TRAK-k sizes apply unless the run names its own; without TRAK they are
    dropped (a preset default), while a run that asks for them without TRAK is an error."""
    import dataclasses

    from aria_tda_experiments.demo import DEMO_METHODS, DemoSettings, _trak_ks
    from aria_tda_experiments.presets import preset

    paper = preset("paper")
    assert _trak_ks(DemoSettings(), DEMO_METHODS, paper) == [1, 10]
    assert _trak_ks(DemoSettings(trak_k=(5, 50)), DEMO_METHODS, paper) == [5]  # 50 = "TRAK"
    assert _trak_ks(DemoSettings(), ("GradDot",), paper) == []
    assert _trak_ks(DemoSettings(), DEMO_METHODS, preset("default")) == []
    small = dataclasses.replace(paper, n_ensemble=4)
    assert _trak_ks(DemoSettings(), DEMO_METHODS, small) == [1]
    with pytest.raises(ParameterError, match="trak_k"):
        _trak_ks(DemoSettings(trak_k=(1,)), ("GradDot",), paper)
    with pytest.raises(ParameterError, match="trak_k"):
        _trak_ks(DemoSettings(trak_k=(60,)), DEMO_METHODS, paper)


@pytest.mark.slow
def test_custom_preset_trak_k_and_seed_averaged_lds(tmp_path):
    """Sizes of one's own (the LDS study's variants), TRAK from the first k members beside the
    whole ensemble, and LDS targets averaged over retraining seeds."""
    import dataclasses

    from aria_tda.attribution import model_outputs
    from aria_tda.scores import open_scores
    from aria_tda_experiments.generate import load_queries
    from aria_tda_experiments.presets import preset
    from aria_tda_experiments.train import load_trained

    tiny = preset("tiny")
    custom = dataclasses.replace(tiny, name="tiny-3", n_ensemble=3, n_subsets=3)
    with pytest.raises(ParameterError, match="trak_k"):
        run_demo(tmp_path / "bad", preset=custom, trak_k=(5,), quiet=True)
    with pytest.raises(ParameterError, match="trak_k"):
        run_demo(tmp_path / "bad", preset=custom, methods=["GradDot"], trak_k=(1,), quiet=True)
    out = tmp_path / "demo"
    results = run_demo(out, preset=custom, methods=["TRAK", "GradCos", "GradDot"],
                       trak_k=(1, 3), lds_seeds=2, threads=1, B=20, n_bootstrap=50,
                       report=False, quiet=True)
    rel = read_table(results, "reliability")
    assert list(rel.setting) == ["TRAK", "GradCos", "GradDot", "TRAK-1"]  # 3 = the whole: TRAK
    lds = read_table(results, "lds").set_index("method")
    assert set(lds.index) == set(rel.setting) and np.isfinite(lds.lds).all()
    full = open_scores(out / "attribution" / "scores" / "TRAK.npy").to_numpy()
    one = open_scores(out / "attribution" / "scores" / "TRAK-1.npy").to_numpy()
    assert full.shape == one.shape and not np.allclose(full, one)
    paired = read_table(results, "lds_paired")
    pairs = {frozenset((a, b)) for a, b in zip(paired.setting_a, paired.setting_b, strict=True)}
    assert frozenset(("TRAK", "TRAK-1")) in pairs and frozenset(("TRAK-1", "GradDot")) in pairs
    agree = read_table(results, "agreement")
    assert set(agree.n_methods) == {3}  # the methods, not the TRAK-k budget variants
    # the LDS target: the mean of the query outputs of both seeds' retrains of each subset
    queries = load_queries(out / "queries" / "queries")
    outs = [model_outputs([load_trained(p).model for p in sorted((out / "lds" / d).glob(
        "subset-*"))], queries.tokens) for d in ("retrains", "retrains-seed1")]
    assert not np.allclose(outs[0], outs[1])
    np.testing.assert_allclose(np.load(out / "lds" / "outputs.npy"), (outs[0] + outs[1]) / 2,
                               rtol=1e-12, atol=1e-12)


@pytest.fixture(scope="module")
def listening_demo(tmp_path_factory):
    """A tiny demo run (three methods, no report of its own) for the listening room in
    Chromium; skipped, before the run, where there is no browser."""
    from demo_browser import NO_BROWSER

    if NO_BROWSER is not None:
        pytest.skip(NO_BROWSER)
    out = tmp_path_factory.mktemp("listening-demo") / "demo"
    return run_demo(out, preset="tiny", methods=["TRAK", "GradCos", "GradDot"], threads=1,
                    B=20, n_bootstrap=50, report=False, quiet=True)


@pytest.mark.slow
def test_tiny_demo_dossier_and_report_media_in_chromium(listening_demo, tmp_path):
    """The dossier of query 0 (first setting, top 3) and the report's per-query view (media for
    2 queries x top 2, loaded from report_media/ when a query's panel opens) in Chromium,
    offline: every player decodes, every picture renders, the piano rolls are there, no
    console error, no request but the page and its own media."""
    from aria_tda.media.dossier import write_dossier
    from aria_tda.report import write_report
    from demo_browser import check_dossier, check_report, chromium

    results = listening_demo
    first = read_results_meta(results)["settings"][0]["name"]
    dossier = write_dossier(results, 0, top=3, out=tmp_path / "dossier.html")
    assert f"setting {first}" in dossier.read_text(encoding="utf-8")
    rep = write_report(results, out=tmp_path / "report.html", plots=False, media_queries=2,
                       media_top=2, quiet=True)
    assert rep.media is not None and rep.media.files > 0
    with chromium(tmp_path / "chromium-profile") as ctx:
        seen = check_dossier(ctx, dossier, kind="midi", top=3, shot="dossier-symbolic-demo.png")
        assert not seen["spectra"]  # MIDI clips are drawn as piano rolls
        check_report(ctx, rep.html, kind="midi", queries=2, top=2)
