"""Training: determinism, subset retraining, ensembles, checkpoints and learning rates."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from aria_tda.errors import FileFormatError, ParameterError
from aria_tda_experiments.model import ModelConfig, build_model, sequence_loss
from aria_tda_experiments.train import (
    TrainConfig,
    checkpoint_steps,
    evaluate_losses,
    load_model,
    load_trained,
    lr_at,
    retrain_subsets,
    sample_subsets,
    train_ensemble,
    train_model,
)

MC = ModelConfig(vocab_size=40, d_model=16, n_layers=1, n_heads=2, d_ff=32, max_len=10)
TC = TrainConfig(epochs=2, batch_size=8, lr=1e-2, n_checkpoints=3)


@pytest.fixture
def segments(rng):
    return rng.integers(0, 40, (24, 10))


def _equal(a, b):
    sa, sb = a.state_dict(), b.state_dict()
    return sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)


def test_same_seed_gives_identical_weights(segments):
    a = train_model(segments, model_config=MC, train_config=TC, seed=7)
    b = train_model(segments, model_config=MC, train_config=TC, seed=7)
    c = train_model(segments, model_config=MC, train_config=TC, seed=8)
    assert _equal(a.model, b.model)
    np.testing.assert_array_equal(a.losses, b.losses)
    assert not _equal(a.model, c.model)
    assert a.losses.shape == (TC.total_steps(24),) == (6,)


def test_training_reduces_loss_on_learnable_data():
    seq = np.tile(np.arange(10), (32, 1))  # a deterministic pattern the model can learn
    tc = TrainConfig(epochs=8, batch_size=8, lr=1e-2, n_checkpoints=2)
    res = train_model(seq, model_config=MC, train_config=tc, seed=0)
    before = float(evaluate_losses(build_model(MC, seed=0), seq).mean())
    after = float(evaluate_losses(res.model, seq).mean())
    assert after < 0.5 * before


def test_checkpoints_and_learning_rates(segments, tmp_path):
    res = train_model(segments, model_config=MC, train_config=TC, seed=1, out_dir=tmp_path / "m")
    total = TC.total_steps(24)
    assert [c.step for c in res.checkpoints] == checkpoint_steps(total, 3) == [2, 4, 6]
    assert res.checkpoint_lrs == [lr_at(s, total, TC) for s in (2, 4, 6)]
    assert _equal(res.checkpoint_model(len(res.checkpoints) - 1), res.model)
    loaded = load_trained(tmp_path / "m")
    assert _equal(loaded.model, res.model)
    assert loaded.checkpoint_lrs == res.checkpoint_lrs
    assert _equal(load_model(tmp_path / "m", checkpoint=0), res.checkpoint_model(0))
    assert not _equal(load_model(tmp_path / "m", checkpoint=0), res.model)
    with pytest.raises(FileFormatError, match="not a saved benchmark model"):
        load_model(tmp_path)


def test_lr_schedule_shape():
    tc = TrainConfig(lr=1.0, warmup_frac=0.1, min_lr_frac=0.1, schedule="cosine")
    lrs = [lr_at(s, 100, tc) for s in range(1, 101)]
    assert lrs[9] == pytest.approx(1.0)  # end of warm-up
    assert lrs[0] == pytest.approx(0.1)
    assert lrs[-1] == pytest.approx(0.1)
    assert np.all(np.diff(lrs[9:]) <= 0)
    const = TrainConfig(lr=0.5, warmup_frac=0.0, schedule="constant")
    assert {lr_at(s, 10, const) for s in range(1, 11)} == {0.5}


def test_retrain_on_subset_uses_exactly_those_indices(segments):
    idx = np.array([3, 1, 20, 7, 11])
    res = train_model(segments, indices=idx, model_config=MC, train_config=TC, seed=2)
    np.testing.assert_array_equal(res.indices, np.sort(idx))
    # the same rows as a standalone dataset (in sorted order) give the same model
    alone = train_model(segments[np.sort(idx)], model_config=MC, train_config=TC, seed=2)
    assert _equal(res.model, alone.model)
    # changing a row outside the subset changes nothing; inside it does
    other = segments.copy()
    other[0] = (other[0] + 1) % 40
    assert _equal(
        train_model(other, indices=idx, model_config=MC, train_config=TC, seed=2).model, res.model
    )
    other[3] = (other[3] + 1) % 40
    assert not _equal(
        train_model(other, indices=idx, model_config=MC, train_config=TC, seed=2).model, res.model
    )


def test_bad_indices_and_segments(segments):
    with pytest.raises(ParameterError, match="indices"):
        train_model(segments, indices=[0, 24], model_config=MC, train_config=TC)
    with pytest.raises(ParameterError, match="distinct"):
        train_model(segments, indices=[1, 1], model_config=MC, train_config=TC)
    with pytest.raises(ParameterError, match="segments"):
        train_model(segments.astype(float), model_config=MC, train_config=TC)
    with pytest.raises(ParameterError, match="max_len"):
        train_model(np.zeros((4, 11), dtype=int), model_config=MC, train_config=TC)
    with pytest.raises(ParameterError, match="schedule"):
        TrainConfig(schedule="step")


def test_sample_subsets_properties():
    s = sample_subsets(50, n_subsets=6, fraction=0.5, seed=3)
    assert s.shape == (6, 25)
    for row in s:
        assert np.all(np.diff(row) > 0) and row.min() >= 0 and row.max() < 50
    np.testing.assert_array_equal(s, sample_subsets(50, n_subsets=6, fraction=0.5, seed=3))
    np.testing.assert_array_equal(s[:4], sample_subsets(50, n_subsets=4, seed=3))  # prefix-stable
    assert not np.array_equal(s, sample_subsets(50, n_subsets=6, seed=4))


def test_retrain_subsets_and_resume(segments, tmp_path):
    out = retrain_subsets(
        segments, n_subsets=3, seed=5, model_config=MC, train_config=TC, out_dir=tmp_path / "lds"
    )
    assert out.indices.shape == (3, 12)
    for j, m in enumerate(out.models):
        np.testing.assert_array_equal(m.indices, out.indices[j])
        assert m.seed == 5 and m.path == tmp_path / "lds" / f"subset-{j:03d}"
    np.testing.assert_array_equal(np.load(tmp_path / "lds" / "subsets.npy"), out.indices)
    mtime = (tmp_path / "lds" / "subset-001" / "model.pt").stat().st_mtime_ns
    again = retrain_subsets(
        segments, n_subsets=3, seed=5, model_config=MC, train_config=TC, out_dir=tmp_path / "lds"
    )
    assert (tmp_path / "lds" / "subset-001" / "model.pt").stat().st_mtime_ns == mtime  # reused
    assert all(_equal(a.model, b.model) for a, b in zip(out.models, again.models, strict=True))
    per = retrain_subsets(
        segments, n_subsets=2, seed=5, init="per_subset", model_config=MC, train_config=TC
    )
    assert per.seeds == [6, 7]


def test_ensemble_members_are_seed_offsets(segments):
    ens = train_ensemble(segments, n_models=2, seed=4, model_config=MC, train_config=TC)
    assert [m.seed for m in ens] == [4, 5]
    assert _equal(
        ens[0].model, train_model(segments, model_config=MC, train_config=TC, seed=4).model
    )
    assert not _equal(ens[0].model, ens[1].model)


def test_evaluate_losses_matches_sequence_loss(segments):
    model = build_model(MC, seed=0)
    got = evaluate_losses(model, segments, batch_size=5)
    ref = sequence_loss(model, torch.from_numpy(segments)).detach().double().numpy()
    np.testing.assert_allclose(got, ref, rtol=1e-6)
    last = evaluate_losses(model, segments, loss="last_token")
    assert last.shape == (24,) and np.all(last > 0)


@pytest.mark.slow
def test_parallel_training_equals_sequential(segments, tmp_path):
    seq = retrain_subsets(segments, n_subsets=3, seed=9, model_config=MC, train_config=TC)
    par = retrain_subsets(
        segments,
        n_subsets=3,
        seed=9,
        model_config=MC,
        train_config=TC,
        n_jobs=2,
        out_dir=tmp_path / "lds",
    )
    assert all(_equal(a.model, b.model) for a, b in zip(seq.models, par.models, strict=True))
    assert [m.path for m in par.models] == [tmp_path / "lds" / f"subset-{j:03d}" for j in range(3)]
    ens = train_ensemble(segments, n_models=2, seed=4, model_config=MC, train_config=TC, n_jobs=2)
    assert [m.seed for m in ens] == [4, 5] and ens[0].path is None
    assert _equal(
        ens[0].model, train_model(segments, model_config=MC, train_config=TC, seed=4).model
    )
    np.testing.assert_array_equal(
        ens[1].losses, train_model(segments, model_config=MC, train_config=TC, seed=5).losses
    )


def test_target_start_trains_on_the_continuation_loss(segments, tmp_path):
    assert "target_start" not in TC.to_dict()  # default manifests unchanged
    base = train_model(segments, model_config=MC, train_config=TC, seed=3)
    one = train_model(segments, model_config=MC,
                      train_config=TrainConfig(**{**TC.to_dict(), "target_start": 1}), seed=3)
    assert _equal(base.model, one.model)  # start 1 = the sequence loss, bitwise
    tc = TrainConfig(**{**TC.to_dict(), "target_start": 6})
    res = train_model(segments, model_config=MC, train_config=tc, seed=3, out_dir=tmp_path / "m")
    assert not _equal(base.model, res.model)
    assert load_trained(tmp_path / "m").train_config.target_start == 6
    with pytest.raises(ParameterError, match="target_start"):
        train_model(segments, model_config=MC, seed=3,
                    train_config=TrainConfig(**{**TC.to_dict(), "target_start": 10}))
    with pytest.raises(ParameterError, match="target_start"):
        TrainConfig(target_start=0)
