"""Stage vocabularies, sequences, segment sets and stage training on synthetic tokens."""

from __future__ import annotations

import math

import numpy as np
import pytest

pytest.importorskip("torch")

from aria_tda.attribution.losses import ContinuationLoss
from aria_tda.errors import DataError, ParameterError
from aria_tda_experiments.audio.stages import (
    BOS,
    STAGES,
    StageSpec,
    build_stage_data,
    load_stage_data,
    save_stage_data,
    stage_layout,
)
from aria_tda_experiments.audio.training import stage_model_config, train_stage
from aria_tda_experiments.train import TrainConfig, evaluate_losses, load_trained

from ._synth import TINY, FakeTokens, fake_tracks


def test_default_layouts_match_the_design():
    spec = StageSpec()  # 25 Hz, semantic_k 128, 8 x 64 RVQ, 4 x 32 cond
    sem, crs, fin = (stage_layout(s, spec) for s in STAGES)
    assert (sem.length, sem.target_start, sem.vocab_size) == (1 + 4 + 250, 5, 1 + 128 + 128)
    assert (crs.length, crs.target_start) == (1 + 4 + 100 + 300, 1 + 4 + 100)
    assert crs.vocab_size == 1 + 128 + 128 + 3 * 64
    assert (fin.length, fin.target_start) == (1 + 4 + 150 + 250, 1 + 4 + 150)
    assert fin.vocab_size == 1 + 128 + 8 * 64
    for lay in (sem, crs, fin):  # blocks tile 1 .. vocab-1 without overlap, levels apart
        ends = [1] + [off + size for _, off, size in lay.blocks]
        assert [off for _, off, _ in lay.blocks] == ends[:-1]
        assert ends[-1] == lay.vocab_size
    assert [b[0] for b in fin.blocks] == ["cond"] + [f"acoustic{i}" for i in range(1, 9)]
    quick = StageSpec(frame_hz=12.5)
    assert [stage_layout(s, quick).length for s in STAGES] == [130, 205, 205]


@pytest.mark.parametrize("stage", STAGES)
def test_sequences_hold_the_tokens_in_the_documented_order(stage):
    tok = fake_tracks(1, seed=3)["w0~v0"]
    lay = stage_layout(stage, TINY)
    n, c, lv, k = TINY.frames(stage), TINY.cond_codebooks, TINY.coarse_levels, TINY.rvq_codebook
    start = 2  # window starting at frame 2
    seq = lay.encode(tok, start)
    assert seq.shape == (lay.length,) and seq[0] == BOS
    np.testing.assert_array_equal(seq[1 : 1 + c] - lay.offset("cond"),
                                  tok.cond + TINY.cond_codebook * np.arange(c))
    lo, hi = lay.position_ranges()
    assert ((seq >= lo) & (seq < hi)).all()
    ac = tok.acoustic[start : start + n]
    pos = 1 + c
    if stage != "fine":
        np.testing.assert_array_equal(seq[pos : pos + n] - lay.offset("semantic"),
                                      tok.semantic[start : start + n])
        pos += n
    if stage == "semantic":
        assert lay.target_start == 1 + c
        return
    a1 = lay.offset("acoustic1")
    for f in range(n):  # frame-major: f0l1 f0l2 .. f1l1 ..
        for lvl in range(lv):
            assert seq[pos + f * lv + lvl] == a1 + lvl * k + ac[f, lvl]
    pos += lv * n
    if stage == "coarse":
        assert lay.target_start == pos - lv * n and lay.length == pos
        return
    assert lay.target_start == pos
    nf = TINY.rvq_levels - lv
    for f in range(n):
        for j in range(nf):
            assert seq[pos + f * nf + j] == a1 + (lv + j) * k + ac[f, lv + j]
    assert lay.length == pos + nf * n


@pytest.mark.parametrize("seconds", [30.0, 27.0])
def test_segments_cover_every_training_second_once(seconds):
    tracks = fake_tracks(3, seconds=seconds)
    counts = []
    for stage in STAGES:
        data = build_stage_data(stage, tracks, spec=TINY)
        w = TINY.seconds(stage)
        table = data.segment_table()
        assert list(table["row"]) == list(range(len(table)))
        assert (table["segment_id"] == table["track_id"] + "@"
                + table["start_s"].map(lambda s: f"{s:g}")).all()
        for track, grp in table.groupby("track_id", sort=False):
            covered = np.zeros(int(seconds * 10), dtype=int)  # 0.1 s bins
            for a, b in zip(grp["start_s"], grp["end_s"], strict=True):
                covered[round(a * 10) : round(b * 10)] += 1
            kept = int(math.floor(seconds / w) * w * 10)
            assert (covered[:kept] == 1).all() and (covered[kept:] == 0).all(), track
            assert seconds - kept / 10 < w  # only a trailing partial window is dropped
        lo, hi = data.layout.position_ranges()
        assert ((data.tokens >= lo) & (data.tokens < hi)).all()
        assert data.tokens.dtype == np.int64 and len(data.track_ids) == data.tokens.shape[0]
        counts.append(len(data.segment_ids))
    assert counts[0] < counts[1] < counts[2]
    if seconds == 30.0:
        assert counts == [3 * 3, 3 * 7, 3 * 15]


def test_bad_tokens_and_specs_are_rejected():
    tok = fake_tracks(1)["w0~v0"]
    bad = FakeTokens(tok.semantic, tok.acoustic + TINY.rvq_codebook, tok.cond)
    with pytest.raises(DataError, match="acoustic"):
        build_stage_data("coarse", {"x": bad}, spec=TINY)
    with pytest.raises(DataError, match="cond"):
        build_stage_data("fine", {"x": FakeTokens(tok.semantic, tok.acoustic, tok.cond[:1])},
                         spec=TINY)
    with pytest.raises(ParameterError, match="frames"):
        StageSpec(frame_hz=6.25)  # 2 s -> 12.5 frames
    with pytest.raises(ParameterError, match="coarse_levels"):
        StageSpec(rvq_levels=3, coarse_levels=3)
    with pytest.raises(ParameterError, match="stage"):
        stage_layout("medium", TINY)


def test_stage_data_round_trip(tmp_path):
    data = build_stage_data("coarse", fake_tracks(2), spec=TINY)
    back = load_stage_data(save_stage_data(data, tmp_path / "coarse"))
    np.testing.assert_array_equal(back.tokens, data.tokens)
    np.testing.assert_array_equal(back.segment_ids, data.segment_ids)
    np.testing.assert_array_equal(back.track_ids, data.track_ids)
    np.testing.assert_array_equal(back.start_s, data.start_s)
    assert back.layout == data.layout


@pytest.mark.parametrize("stage", STAGES)
def test_stage_models_overfit_a_tiny_set(stage, tmp_path):
    data = build_stage_data(stage, fake_tracks(2, seed=1), spec=TINY)
    cfg = stage_model_config(data.layout, d_model=32, n_heads=2, d_ff=64)
    tc = TrainConfig(epochs=60, batch_size=8, lr=1e-2, n_checkpoints=2)
    [res] = train_stage(data, model_config=cfg, train_config=tc, seed=0, out_dir=tmp_path)
    assert res.train_config.target_start == data.target_start
    assert res.model_config.vocab_size == data.vocab_size
    assert res.model_config.max_len == data.layout.length
    loss = evaluate_losses(res.model, data.tokens, loss=ContinuationLoss(data.target_start))
    assert loss.mean() < 0.25 * math.log(data.vocab_size), loss.mean()
    again = load_trained(tmp_path / "member-00")  # saved, with the loss recorded
    assert again.train_config.target_start == data.target_start
    [reused] = train_stage(data, model_config=cfg, train_config=tc, seed=0, out_dir=tmp_path)
    np.testing.assert_array_equal(reused.losses, res.losses)
