"""``aria-tda demo planted``: the scoring's definitions, the command's options, a tiny run."""

from __future__ import annotations

import itertools
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from aria_tda_experiments.planted.analysis import (
    ap_chance,
    average_precision,
    recall_at_k,
    study_ks,
)


def test_recall_and_average_precision_on_a_hand_made_ranking():
    # column 0 ranks rows 3, 1, 0, 2, 4; marked = {1, 2}
    s = np.array([[0.5], [0.8], [0.1], [0.9], [0.0]])
    assert recall_at_k(s, np.array([1, 2]), 2)[0] == pytest.approx(0.5)
    assert recall_at_k(s, np.array([1, 2]), 4)[0] == pytest.approx(1.0)
    # hits at ranks 2 and 4: (1/2 + 2/4) / 2
    assert average_precision(s, np.array([1, 2]))[0] == pytest.approx(0.5)


@pytest.mark.parametrize(("n", "m"), [(1, 1), (4, 1), (5, 2), (6, 3), (7, 7)])
def test_ap_chance_is_the_mean_over_every_ranking(n, m):
    marked = np.arange(m)
    aps = [average_precision(-np.asarray(perm, dtype=float)[:, None], marked)[0]
           for perm in itertools.permutations(range(n))]
    assert ap_chance(n, m) == pytest.approx(np.mean(aps), rel=1e-12)


def test_study_ks_hold_the_marked_set_size():
    assert study_ks(1500, 40) == [20, 40, 50, 100, 200, 300, 400, 500]
    assert study_ks(30, 4) == [4]


def test_the_oracle_ranks_each_plant_querys_marked_set_first(tmp_path):
    from aria_tda.scores import open_scores
    from aria_tda_experiments.planted.data import PlantedData
    from aria_tda_experiments.planted.demo import write_oracle

    marked = {"melody": np.array([1, 4, 7]), "rhythm": np.array([0, 2, 9])}
    queries = pd.DataFrame({"query_id": ["a", "b", "c"], "plant": ["melody", "rhythm", "control"],
                            "label": ["a", "b", "c"]})
    data = PlantedData(modality="symbolic", aspects=("melody", "rhythm"), scores={}, methods={},
                       feature_store=tmp_path, track_ids=np.array([f"t{i}" for i in range(12)]),
                       marked=marked, queries=queries, learned=pd.DataFrame(),
                       counterfactual=pd.DataFrame())
    s = open_scores(write_oracle(data, tmp_path / "oracle.npy", seed=0)).to_numpy()
    assert s.shape == (12, 3)
    assert recall_at_k(s[:, :1], marked["melody"], 3)[0] == 1.0
    assert recall_at_k(s[:, 1:2], marked["rhythm"], 3)[0] == 1.0
    assert s[:, 2].max() < 1e-3  # a control query ranks nothing first on purpose


def test_options_of_other_demos_are_refused_by_name(tmp_path, capsys):
    from aria_tda.cli import main

    assert main(["demo", "planted", "--lds", "--out", str(tmp_path / "x")]) != 0
    assert "--lds: not an option of 'aria-tda demo planted'" in capsys.readouterr().err
    assert main(["demo", "audio", "--modality", "audio", "--out", str(tmp_path / "y")]) != 0
    assert "--modality: an option of 'aria-tda demo planted'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["demo", "planted", "--modality", "video", "--out", str(tmp_path / "z")])
    assert "--modality: invalid choice: 'video'" in capsys.readouterr().err
    assert not any((tmp_path / d).exists() for d in ("x", "y", "z"))


def test_plants_is_parsed_and_passed_on_and_refused_by_the_other_demos(tmp_path, capsys,
                                                                       monkeypatch):
    from aria_tda.cli import main
    from aria_tda_experiments.planted import demo

    calls = []
    monkeypatch.setattr(demo, "run_planted_demo", lambda out, **kw: calls.append((out, kw)))
    assert main(["demo", "planted", "--plants", "B", "--modality", "symbolic", "--quiet"]) == 0
    assert main(["demo", "planted", "--quiet", "--out", str(tmp_path / "a")]) == 0
    (out_b, kw_b), (out_a, kw_a) = calls
    assert (out_b, kw_b["plants"], kw_b["modality"]) == (None, "B", "symbolic")
    assert (out_a, kw_a["plants"]) == (str(tmp_path / "a"), "A")
    with pytest.raises(SystemExit):
        main(["demo", "planted", "--plants", "C"])
    assert "--plants: invalid choice: 'C'" in capsys.readouterr().err
    assert main(["demo", "audio", "--plants", "B", "--out", str(tmp_path / "y")]) != 0
    assert "--plants: an option of 'aria-tda demo planted'" in capsys.readouterr().err
    assert not (tmp_path / "y").exists()


def test_each_family_has_its_default_folder_and_a_bad_family_is_refused_first(tmp_path,
                                                                            monkeypatch):
    from aria_tda.errors import ParameterError
    from aria_tda_experiments.planted import demo

    roots = []
    monkeypatch.setattr(demo, "_run", lambda root, *a, **kw: roots.append((root, kw["plants"])))
    monkeypatch.chdir(tmp_path)
    demo.run_planted_demo(plants="B", quiet=True)
    demo.run_planted_demo(quiet=True)
    assert roots == [(tmp_path / "aria-demo-planted-B", "B"), (tmp_path / "aria-demo-planted", "A")]
    with pytest.raises(ParameterError, match="plants: expected one of 'A', 'B', got 'b'"):
        demo.run_planted_demo(tmp_path / "bad", plants="b")
    assert not (tmp_path / "bad").exists()


# the symbolic-plants stage's key of family A as it was before plant families existed (so
# finished folders are reused)
_A_STAGE_DIGESTS = {"default": "92a065c0029eccab", "quick": "a1b5b43727adf7f2",
                    "tiny": "733cdd0e7496330f"}


def test_family_a_keeps_its_symbolic_stage_key_and_family_b_gets_its_own():
    from aria_tda._steps import params_digest
    from aria_tda_experiments.planted.symbolic import SYMBOLIC_SIZES, plants_stage_params

    for name, sz in SYMBOLIC_SIZES.items():
        a = plants_stage_params(sz, 0)
        assert a == plants_stage_params(sz, 0, "A") == {"sizes": sz.to_dict(), "seed": 0,
                                                          "plants": 2}
        assert params_digest(a) == _A_STAGE_DIGESTS[name]
        b = plants_stage_params(sz, 0, "B")
        assert b == {**a, "family": "B"}


def test_no_stage_after_the_plants_is_reused_across_families(tmp_path):
    """The family is in the plants stage's key only; every later stage's key holds the
    plants stage's digest, so a run of B in A's folder recomputes models, queries and the rest
    (and a rerun of A after it recomputes them again)."""
    from aria_tda_experiments.planted.symbolic import SYMBOLIC_SIZES, plants_stage_params
    from aria_tda_experiments.stage_runner import StageRunner

    ran: list[str] = []

    def run(family):
        r = StageRunner(tmp_path, True, "test")
        r.stage("symbolic-corpus", {"c": 1}, [], lambda d: ran.append("corpus"))
        r.stage("symbolic-plants", plants_stage_params(SYMBOLIC_SIZES["tiny"], 0, family),
                ["symbolic-corpus"], lambda d: ran.append("plants"))
        r.stage("symbolic-models", {"m": 1}, ["symbolic-corpus", "symbolic-plants"],
                lambda d: ran.append("models"), resumable=True)
        r.stage("symbolic-queries", {"q": 1}, ["symbolic-plants", "symbolic-models"],
                lambda d: ran.append("queries"))
        return dict(r.digests)

    a = run("A")
    assert run("A") == a and ran == ["corpus", "plants", "models", "queries"]
    b = run("B")
    assert ran[4:] == ["plants", "models", "queries"]  # the corpus alone is shared
    assert b["symbolic-corpus"] == a["symbolic-corpus"]
    assert all(b[k] != a[k] for k in ("symbolic-plants", "symbolic-models", "symbolic-queries"))
    assert run("A") == a and ran[7:] == ["plants", "models", "queries"]


def test_a_second_run_in_the_same_folder_is_refused_naming_the_first(tmp_path):
    from aria_tda.errors import LockedError
    from aria_tda_experiments.planted.demo import run_planted_demo

    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from aria_tda._lock import writer_lock\n"
         "with writer_lock(sys.argv[1], 'planted-demo working folder'):\n"
         "    print('held', flush=True); time.sleep(60)", str(tmp_path / "run")],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(LockedError, match=f"pid {holder.pid}"):
            run_planted_demo(tmp_path / "run", modality="symbolic", sizes="tiny", quiet=True)
        assert sorted(p.name for p in (tmp_path / "run").iterdir()) == [".aria-lock"]
    finally:
        holder.kill()
        holder.wait()


def test_help_explains_the_planted_demo():
    out = subprocess.run([sys.executable, "-m", "aria_tda", "demo", "--help"],
                         capture_output=True, text=True, check=True).stdout
    assert "planted" in out and "--modality" in out
    assert "--plants {A,B}" in out and "never used to choose ARIA's settings" in " ".join(
        out.split())


@pytest.mark.slow
@pytest.mark.parametrize("plants", ["A", "B"])
def test_tiny_symbolic_run_end_to_end(tmp_path, plants):
    from aria_tda.results import read_results_meta, read_table
    from aria_tda_experiments.planted.demo import run_planted_demo

    out = run_planted_demo(tmp_path / "run", modality="symbolic", sizes="tiny", quiet=True,
                           progress=False, report=True, plants=plants)
    df = read_table(out, "planted_aspects")
    assert df is not None
    required = ["modality", "method", "aspect", "k", "recall_at_k", "chance", "ci_low",
                "ci_high", "average_precision", "learned", "counterfactual_effect",
                "top_channel", "top_channel_z"]
    assert set(required) <= set(df.columns)
    aspects = ["melody", "harmony", "rhythm", "dynamic", "texture"]
    assert sorted(set(df["aspect"])) == sorted([*aspects, "control"])
    assert len(df) == 6 * df["setting"].nunique()
    assert ((df.recall_at_k >= 0) & (df.recall_at_k <= 1)).all()
    assert (df.ci_low <= df.recall_at_k + 1e-12).all()
    assert (df.recall_at_k <= df.ci_high + 1e-12).all()
    assert set(df.loc[df.aspect != "control", "top_channel"]) <= set(aspects)
    # the per-modality study folder holds the same table and a report showing it, and says
    # which plant family it scored
    sub = out / "symbolic"
    assert (sub / "report.html").exists()
    assert read_results_meta(sub)["demo"]["plants"] == plants
    pd.testing.assert_frame_equal(read_table(sub, "planted_aspects"), df)
    conf = read_table(out, "planted_confusion")
    plant_queries = conf[(conf.variant == "original")].groupby(["setting", "aspect"]).n_queries
    assert (plant_queries.sum() == 2).all()  # tiny: 2 queries per plant, each counted once
    # media for the listening room: each query's MIDI (prompt + continuation), each training
    # window (planted or re-cut) as its own MIDI file, found by the library's resolver
    from demo_medialib import (
        check_queries_media,
        check_resolves,
        check_store_sources,
        top_items,
    )

    q = check_queries_media(tmp_path / "run" / "symbolic-queries.csv")
    assert [f.name for f in q["file"]] == [f"{i}.mid" for i in q["query_id"]]
    check_store_sources(tmp_path / "run" / "symbolic-features" / "store", windows="whole")
    check_resolves(sub, top_items(sub, "TRAK"), setting="TRAK")
    # a rerun reuses every stage and writes the same table
    again = run_planted_demo(tmp_path / "run", modality="symbolic", sizes="tiny", quiet=True,
                             progress=False, report=False, plants=plants)
    pd.testing.assert_frame_equal(read_table(again, "planted_aspects"), df)


def test_a_method_scoring_segments_is_studied_on_its_raw_segment_matrix(tmp_path):
    """The study diagnoses what the method produced (segment scores, raw), and aggregates it
    with the map to the track matrix that is scored; a track-level method stays as it is."""
    from pathlib import Path

    from aria_tda.study.config import SettingSpec
    from aria_tda_experiments.planted.data import PlantedData
    from aria_tda_experiments.planted.demo import _setting

    data = PlantedData(
        modality="audio", aspects=("rhythm",), scores={"TRAK": Path("t/TRAK.npy"),
                                                       "clap": Path("t/clap.npy")},
        methods={"TRAK": "TRAK", "clap": "embedding"}, feature_store=tmp_path,
        track_ids=np.array(["a"]), marked={"rhythm": np.array([0])}, queries=pd.DataFrame(),
        learned=pd.DataFrame(), counterfactual=pd.DataFrame(),
        segment_scores={"TRAK": Path("s/TRAK.npy")}, segment_map=Path("map.csv"))
    seg = _setting(data, "TRAK", data.scores["TRAK"], SettingSpec)
    assert (seg.scores, seg.segments, seg.normalize) == (Path("s/TRAK.npy"), Path("map.csv"),
                                                         "zscore")
    track = _setting(data, "clap", data.scores["clap"], SettingSpec)
    assert (track.scores, track.segments, track.normalize) == (Path("t/clap.npy"), None, "none")
    assert track.method == "embedding"


def test_a_run_of_one_modality_keeps_the_other_modality_s_rows(tmp_path):
    """``--modality audio`` after a run of both: the combined ``planted_*`` tables keep the
    symbolic rows the first run left in ``results/symbolic`` (symbolic first)."""
    from aria_tda.results import TABLES, write_table
    from aria_tda_experiments.planted.demo import combined_tables

    def table(modality, aspects):
        cols = {c: 0 for c in TABLES["planted_aspects"].columns}
        return pd.DataFrame({**cols, "modality": modality, "aspect": aspects})

    sym = table("symbolic", ["melody", "control"])
    write_table(tmp_path / "symbolic", "planted_aspects", sym)
    write_table(tmp_path / "audio", "planted_aspects", table("audio", ["old"]))
    new_audio = table("audio", ["rhythm", "control"])
    out = combined_tables(tmp_path, {"planted_aspects": {"audio": new_audio},
                                     "planted_effects": {"audio": new_audio}})
    assert out["planted_aspects"]["aspect"].tolist() == ["melody", "control", "rhythm",
                                                         "control"]
    # a table the earlier run did not leave: this run's rows alone
    assert out["planted_effects"]["aspect"].tolist() == ["rhythm", "control"]
