"""``aria-tda demo`` end to end at the tiny preset, its resumability, and the agreement table."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from aria_tda.errors import ParameterError
from aria_tda.results import read_results_meta, read_table
from aria_tda_experiments.demo import agreement_table, run_demo


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
