"""Resumable demo stages (symbolic and audio): partial work is kept only for the same upstream."""

from __future__ import annotations

from aria_tda_experiments.stage_runner import StageRunner


def _upstream(root, value):
    run = StageRunner(root, quiet=True)
    run.stage("tokens", {"v": value}, [], lambda d: None)
    return run


def _down(run, params, seen):
    def body(d):
        seen.append((d / "model.pt").is_file())
        (d / "model.pt").write_text("trained")
        return {}

    return run.stage("models", params, ["tokens"], body, resumable=True)


def test_changed_upstream_clears_a_resumable_stage(tmp_path):
    seen: list[bool] = []
    _down(_upstream(tmp_path, 1), {"n": 1}, seen)
    # own parameters changed, upstream the same: the body may reuse what is there
    _down(_upstream(tmp_path, 1), {"n": 2}, seen)
    # upstream changed (other tokens): a model trained on the old tokens must not survive
    _down(_upstream(tmp_path, 2), {"n": 2}, seen)
    assert seen == [False, True, False]


def test_interrupted_stage_with_the_same_upstream_keeps_its_work(tmp_path):
    from aria_tda._steps import Step

    run = _upstream(tmp_path, 1)
    full = {"params": {"n": 1}, "after": {"tokens": run.digests["tokens"]}}
    Step(tmp_path, "models", full).begin()  # a run that died mid-stage
    (tmp_path / "models" / "model.pt").write_text("half")
    seen: list[bool] = []
    _down(_upstream(tmp_path, 1), {"n": 1}, seen)
    assert seen == [True]
    # interrupted under other tokens: cleared
    Step(tmp_path, "models", {"params": {"n": 1}, "after": {"tokens": "x"}}).begin()
    (tmp_path / "models" / "model.pt").write_text("half")
    seen.clear()
    _down(_upstream(tmp_path, 1), {"n": 1}, seen)
    assert seen == [False]


def test_planted_chance_matches_a_simulated_random_ranking():
    import numpy as np

    from aria_tda_experiments.audio.demo import _planted_chance

    items = np.array(["a"] * 3 + ["b"] * 5 + ["c"] * 82)
    rng = np.random.default_rng(0)
    for k in (1, 10, 40):
        sim = np.mean([np.isin(rng.choice(items.size, k, replace=False), np.arange(3)).any()
                       for _ in range(4000)])
        got = _planted_chance(items, ["a", None], k)
        assert abs(got - sim) < 0.03, (k, got, sim)
    assert _planted_chance(items, ["b"], 86) == 1.0
