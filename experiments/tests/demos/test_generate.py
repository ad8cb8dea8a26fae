"""Queries: prompts from held-out works, deterministic sampling, MIDI kept."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from aria_tda.errors import DataError, ParameterError
from aria_tda_experiments import tokenizer as tk
from aria_tda_experiments.generate import generate_queries, load_queries, pick_prompts, sample
from aria_tda_experiments.model import ModelConfig, build_model


@pytest.fixture(scope="module")
def model():
    return build_model(ModelConfig(d_model=16, n_layers=1, n_heads=2, d_ff=32, max_len=32), seed=0)


def test_generation_is_deterministic_given_seed(tiny_corpus, model):
    a = generate_queries(model, tiny_corpus, n_queries=6, prompt_len=12, seed=3)
    b = generate_queries(model, tiny_corpus, n_queries=6, prompt_len=12, seed=3)
    c = generate_queries(model, tiny_corpus, n_queries=6, prompt_len=12, seed=4)
    np.testing.assert_array_equal(a.tokens, b.tokens)
    assert not np.array_equal(a.tokens, c.tokens)
    assert a.tokens.shape == (6, 32) and a.tokens.dtype == np.int64


def test_prompts_come_from_held_out_works(tiny_corpus, model):
    q = generate_queries(model, tiny_corpus, n_queries=5, prompt_len=10, seed=0)
    test_meta = tiny_corpus.test_meta.set_index("segment_id")
    for j, rec in enumerate(q.meta.itertuples()):
        src = test_meta.loc[rec.source_segment_id]
        assert rec.source_work == src["work_id"] and rec.source_work in tiny_corpus.work_ids("test")
        row = tiny_corpus.test_tokens[test_meta.index.get_loc(rec.source_segment_id)]
        np.testing.assert_array_equal(q.tokens[j, :10], row[:10])
    assert not set(q.meta["source_work"]) & set(tiny_corpus.train_meta["work_id"])
    # round-robin: the first queries come from distinct works
    n_works = len(tiny_corpus.work_ids("test"))
    assert q.meta["source_work"].iloc[:n_works].is_unique
    assert q.meta["query_id"].tolist() == [f"q{j:04d}" for j in range(5)]


def test_pick_prompts_limits(tiny_corpus):
    rows = pick_prompts(tiny_corpus, len(tiny_corpus.test_meta), seed=1)
    assert sorted(rows.tolist()) == list(range(len(tiny_corpus.test_meta)))
    with pytest.raises(DataError, match="n_queries"):
        pick_prompts(tiny_corpus, len(tiny_corpus.test_meta) + 1)


def test_saved_queries_and_midi(tiny_corpus, model, tmp_path):
    q = generate_queries(
        model, tiny_corpus, n_queries=3, prompt_len=16, seed=2, out_dir=tmp_path / "q"
    )
    back = load_queries(tmp_path / "q")
    np.testing.assert_array_equal(back.tokens, q.tokens)
    assert back.meta.equals(q.meta) and back.prompt_len == 16
    for j, rel in enumerate(q.meta["midi_file"]):
        notes = tk.read_midi(tmp_path / "q" / rel)
        np.testing.assert_array_equal(tk.encode(notes), tk.encode(q.notes(j)))


def test_sample_respects_top_k_and_never_emits_specials(model):
    prompts = np.full((8, 4), 60)
    out = sample(model, prompts, n_new=20, top_k=1, seed=0)
    # top_k=1 is greedy: equal prompts give equal continuations
    assert (out == out[0]).all()
    many = sample(model, prompts, n_new=28, seed=1, temperature=5.0)
    assert not np.isin(many, [tk.PAD, tk.BOS]).any()
    with torch.no_grad():
        greedy = model(torch.from_numpy(prompts[:1]))[0, -1]
        greedy[[tk.PAD, tk.BOS]] = -torch.inf
    assert out[0, 4] == int(greedy.argmax())
    with pytest.raises(ParameterError, match="temperature"):
        sample(model, prompts, n_new=1, temperature=0.0)


def test_query_metadata_carries_source_labels(tiny_corpus, model):
    q = generate_queries(model, tiny_corpus, n_queries=4, prompt_len=8, seed=0)
    works = tiny_corpus.works.set_index("work_id")
    for rec in q.meta.itertuples():
        assert (
            rec.key == works.loc[rec.source_work, "key"]
            and rec.composer == works.loc[rec.source_work, "composer"]
        )
