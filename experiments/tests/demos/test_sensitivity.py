"""TRAK sensitivity sweep: every cell equals a direct TRAK run; the ARIA step and the table."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")

from aria_tda.attribution import lds, sample_subsets, trak
from aria_tda.errors import DataError, ParameterError
from aria_tda.results import read_table, write_table
from aria_tda_experiments.sensitivity import trak_sensitivity, zbar_evaluator


def test_cells_match_trak_and_table_round_trips(tiny, tmp_path):
    from aria_tda.attribution import TrakArgs

    args = (tiny["model"], tiny["ensemble"], tiny["train"], tiny["queries"])

    def evaluate(scores):
        return {
            "K": [3, 3],
            "channel": ["melody", "harmony"],
            "zbar": [float(scores.max()), float(scores.min())],
        }

    subsets = sample_subsets(12, n_subsets=4, seed=0)
    outputs = np.random.default_rng(0).normal(size=(4, 5))
    res = trak_sensitivity(
        *args,
        evaluate=evaluate,
        proj_dims=[4, 150],
        lams=[0.01, 0.5],
        batch_size=5,
        lds_truth=(subsets, outputs),
        out_dir=tmp_path,
    )
    for (k, lam), cell in res.results.items():
        direct = trak(*args, args=TrakArgs(proj_dim=k, lam=lam, batch_size=5)).scores
        np.testing.assert_allclose(cell.scores, direct, rtol=1e-4, atol=1e-6 * np.abs(direct).max())
        assert (tmp_path / f"TRAK_k{k}_lam{lam:g}.npy").is_file()
    table = res.table
    assert list(table.columns[:5]) == ["proj_dim", "lam", "K", "channel", "zbar"]
    assert len(table) == 2 * 2 * 2
    row = table[(table.proj_dim == 150) & (table.lam == 0.5) & (table.channel == "melody")]
    assert row.zbar.item() == pytest.approx(float(res.results[(150, 0.5)].scores.max()))
    assert row["lds"].item() == pytest.approx(
        lds(res.results[(150, 0.5)].scores, subsets, outputs).mean
    )
    write_table(tmp_path, "sensitivity", table)
    assert len(read_table(tmp_path, "sensitivity")) == 8


def test_grid_is_checked_before_any_work(tiny):
    args = (tiny["model"], tiny["ensemble"], tiny["train"], tiny["queries"])
    with pytest.raises(ParameterError, match="lam"):
        trak_sensitivity(*args, evaluate=None, proj_dims=[4, 64], lams=[0.0])
    with pytest.raises(ParameterError, match="proj_dims"):
        trak_sensitivity(*args, evaluate=None, proj_dims=[4, 4], lams=[0.1])
    with pytest.raises(DataError, match="zbar"):
        trak_sensitivity(
            *args, evaluate=lambda s: {"K": [1], "channel": ["x"]}, proj_dims=[4], lams=[0.1]
        )


def test_zbar_evaluator_runs_aria_homogeneity(rng):
    from aria_tda.features.registry import channels
    from aria_tda.similarity import prepare_feature

    n = 60
    specs = channels("symbolic")
    prepared = {
        c: [prepare_feature(s, rng.normal(size=(n, s.dim))) for s in v]
        for c, v in list(specs.items())[:2]
    }
    evaluate = zbar_evaluator(prepared, ks=[5, 10], B=20, seed=0)
    # queries whose top groups are the rows most similar in "melody": positive melody z
    melody = prepared["melody"][0]
    anchor = melody.pairwise(np.arange(n))[0]
    anchor = np.nan_to_num(anchor, nan=anchor[np.isfinite(anchor)].max())
    scores = np.stack([anchor + 0.01 * rng.normal(size=n) for _ in range(6)], axis=1)
    out = evaluate(scores)
    assert set(out.columns) == {"K", "channel", "zbar"}
    assert sorted(set(out.K)) == [5, 10] and set(out.channel) == set(prepared)
    assert out[(out.channel == "melody") & (out.K == 5)].zbar.item() > 1.0
    again = evaluate(scores)  # null reused
    np.testing.assert_allclose(again.zbar, out.zbar)

