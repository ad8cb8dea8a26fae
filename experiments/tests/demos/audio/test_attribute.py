"""Stage attribution (ARIA's engine = dattri's), stage LDS, planted-influence recall."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("dattri")

from aria_tda.attribution.losses import ContinuationLoss
from aria_tda.errors import DataError, ParameterError
from aria_tda.scores import open_scores
from aria_tda_experiments.audio.attribute import (
    STAGE_OPTIONS,
    attribute_stage,
    planted_ranks,
    planted_recall,
    scores_path,
    stage_lds,
)
from aria_tda_experiments.audio.generate import generate_queries
from aria_tda_experiments.audio.stages import STAGES, build_stage_data
from aria_tda_experiments.audio.training import stage_model_config, train_stage
from aria_tda_experiments.train import TrainConfig

from ._synth import TINY, fake_tracks

TC = TrainConfig(epochs=3, batch_size=8, lr=1e-2, n_checkpoints=1)


@pytest.fixture(scope="module")
def stage_setup(tmp_path_factory):
    """Fine-stage data of 2 tracks, a 2-model ensemble, and 2 fine queries."""
    root = tmp_path_factory.mktemp("audio-attr")
    train = fake_tracks(2, seed=1)
    data = {s: build_stage_data(s, train, spec=TINY) for s in STAGES}
    cfg = {s: stage_model_config(data[s].layout, d_model=16, n_heads=2, d_ff=32, n_layers=1)
           for s in STAGES}
    models = {s: train_stage(data[s], model_config=cfg[s], train_config=TC, seed=0,
                             n_models=2 if s == "fine" else 1, out_dir=root / s)
              for s in STAGES}
    queries = generate_queries({s: m[0].model for s, m in models.items()},
                               fake_tracks(2, seed=9, prefix="t"), spec=TINY, seed=0)
    return {"data": data["fine"], "models": models["fine"], "cfg": cfg["fine"],
            "queries": queries, "root": root}


@pytest.mark.parametrize(("method", "opts"), [
    ("TRAK", {"proj_dim": 64, "lam": 0.01}),
    ("GradCos", {"proj_dim": None}),
    ("GradCos", {"proj_dim": 64}),
])
def test_aria_engine_equals_dattri_on_a_stage_model(stage_setup, method, opts):
    s = stage_setup
    run = {e: attribute_stage(s["data"], s["queries"].tokens["fine"], models=s["models"],
                              methods=[method], options={method: opts}, batch_size=5,
                              engine=e)[method] for e in ("aria", "dattri")}
    ref = run["dattri"].scores
    assert ref.shape == (len(s["data"].segment_ids), 2)
    np.testing.assert_allclose(run["aria"].scores, ref, rtol=1e-4,
                               atol=1e-5 * np.abs(ref).max())
    name = f"continuation(start={s['data'].target_start})"
    assert run["aria"].parameters["loss"] == run["aria"].parameters["target"] == name


def test_all_methods_save_stage_matrices(stage_setup, tmp_path):
    s = stage_setup
    opts = {"TRAK": {"proj_dim": 32}, "GradCos": {"proj_dim": 32},
            "LoGra": {"proj_dim": 16}, "FactGraSS": {"proj_dim": 16}}
    res = attribute_stage(s["data"], s["queries"].tokens["fine"], models=s["models"],
                          query_ids=s["queries"].query_ids, options=opts, out_dir=tmp_path)
    assert list(res) == ["TRAK", "FactGraSS", "GradCos", "LoGra"]
    for m, r in res.items():
        src = open_scores(scores_path(tmp_path, "fine", m))
        np.testing.assert_array_equal(src.to_numpy(), r.scores)
        man = src.manifest
        assert man["method"] == m and man["stage"] == "fine"
        assert list(src.row_ids) == list(s["data"].segment_ids)
        assert man["parameters"]["query_ids"] == list(s["queries"].query_ids)
        assert man["parameters"]["n_models"] == (2 if m == "TRAK" else 1)
        assert np.isfinite(r.scores).all()
    assert res["LoGra"].parameters["damping"] == STAGE_OPTIONS["LoGra"]["damping"] == 0.1
    assert res["FactGraSS"].parameters["damping"] == 0.01
    assert res["FactGraSS"].parameters["blowup"] == 4
    assert res["TRAK"].parameters["lam"] == 0.01
    with pytest.raises(ParameterError, match="queries"):
        attribute_stage(s["data"], s["queries"].tokens["coarse"], models=s["models"])


def test_stage_lds_uses_the_continuation_target(stage_setup, tmp_path):
    s = stage_setup
    q = s["queries"].tokens["fine"]
    scores = attribute_stage(s["data"], q, models=s["models"], methods=["GradCos"],
                             options={"GradCos": {"proj_dim": None}})
    out = stage_lds(s["data"], q, scores, model_config=s["cfg"], train_config=TC, n_subsets=4,
                    seed=0, out_dir=tmp_path)
    assert out.subsets.shape == (4, len(s["data"].segment_ids) // 2)
    assert out.outputs.shape == (4, 2)
    from aria_tda_experiments.train import load_trained

    sub0 = load_trained(tmp_path / "subset-000")
    assert sub0.train_config.target_start == s["data"].target_start
    expected = -ContinuationLoss(s["data"].target_start)(
        sub0.model, __import__("torch").from_numpy(q)).detach().numpy()
    np.testing.assert_allclose(out.outputs[0], expected, rtol=1e-6)
    assert -1.0 <= out.results["GradCos"].mean <= 1.0


def test_planted_recall_on_a_planted_matrix():
    tracks = np.array(["a~v0", "a~v0", "b~v0", "b~v1", "c~v0", "c~v0"])
    work = {"a~v0": "a", "b~v0": "b", "b~v1": "b", "c~v0": "c"}
    scores = np.array([
        # q0 (work b): best b segment ranks 2; q1 (c): 4; q2 not planted; q3 (a): 1
        [9.0, 0.0, 0.0, 5.0],
        [1.0, 5.0, 0.0, 1.0],
        [2.0, 4.0, 0.0, 0.0],
        [3.0, 3.0, 0.0, 0.0],
        [0.0, 2.0, 0.0, 0.0],
        [0.0, 1.0, 0.0, 0.0],
    ])
    src = ["b", "c", None, "a"]
    np.testing.assert_array_equal(planted_ranks(scores, tracks, src, work), [2, 4, 1])
    assert planted_recall(scores, tracks, src, work, ks=(1, 2, 3, 4)) == {
        1: 1 / 3, 2: 2 / 3, 3: 2 / 3, 4: 1.0}
    # track level, means per query column: a=(5, 2.5, ., 3), b~v0=(2, 4, ., 0),
    # b~v1=(3, 3, ., 0), c=(0, 1.5, ., 0)
    np.testing.assert_array_equal(planted_ranks(scores, tracks, src, work, level="track"),
                                  [2, 4, 1])
    # ties count against the method: a constant column ranks the source last
    flat = np.zeros((6, 1))
    assert planted_ranks(flat, tracks, ["a"], work).tolist() == [6]
    assert np.isnan(planted_recall(flat, tracks, [None], work, ks=(1,))[1])
    with pytest.raises(DataError, match="source work"):
        planted_ranks(flat, tracks, ["z"], work)
    with pytest.raises(DataError, match="track_work"):
        planted_ranks(flat, tracks, ["a"], {"a~v0": "a"})
    with pytest.raises(ParameterError, match="scores"):
        planted_ranks(scores, tracks, ["a"], work)
