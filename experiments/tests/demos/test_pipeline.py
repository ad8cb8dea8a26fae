"""The data/model side end to end at the ``tiny`` preset: corpus → model → queries → features."""

from __future__ import annotations

import numpy as np
import pytest

from aria_tda.errors import ParameterError
from aria_tda_experiments.presets import PRESETS, preset


def test_presets_are_consistent():
    for p in PRESETS.values():
        assert p.model.max_len >= p.corpus.window
        assert 1 <= p.prompt_len < p.corpus.window
        assert p.model.vocab_size == 390
    assert preset("default").n_subsets >= 32 and preset("default").n_ensemble == 10
    # the demo's corpus carries dynamics (Bach chorales are all velocity 90: D would be NaN)
    from aria_tda_experiments.presets import DYNAMIC_COLLECTIONS

    assert DYNAMIC_COLLECTIONS == ("mozart", "haydn", "schumann_robert", "schumann_clara")
    for p in PRESETS.values():
        assert p.corpus.collections == DYNAMIC_COLLECTIONS
    assert preset("default").corpus.max_works is None  # all 37 works
    assert preset("default").corpus.max_train_segments == 1500
    # the paper's benchmark size: 5,000 training segments x 178 queries, TRAK-1/10/50
    paper = preset("paper")
    assert paper.corpus.max_train_segments == 5000 and paper.n_queries == 178
    assert paper.n_ensemble == 50 and paper.trak_k == (1, 10)
    assert paper.n_subsets == 100 and paper.lds_seeds == 5  # dattri's 100 halves, 5 seeds each
    assert paper.to_dict()["trak_k"] == [1, 10]
    # gpu: paper with 10 seeds per half (a paper run's folder is reused, its retrains too)
    gpu = preset("gpu")
    for field in ("corpus", "model", "train", "n_queries", "prompt_len", "n_ensemble", "trak_k",
                  "n_subsets"):
        assert getattr(gpu, field) == getattr(paper, field), field
    assert gpu.lds_seeds == 10
    with pytest.raises(ParameterError, match="preset"):
        preset("huge")


@pytest.mark.slow
def test_tiny_pipeline_end_to_end(tmp_path, tiny_corpus):
    pytest.importorskip("aria_tda.features.store")
    from aria_tda.features.store import FeatureStore
    from aria_tda_experiments.corpus import build_corpus
    from aria_tda_experiments.featurize import build_feature_store
    from aria_tda_experiments.generate import generate_queries
    from aria_tda_experiments.train import (
        evaluate_losses,
        load_trained,
        retrain_subsets,
        train_model,
    )

    p = preset("tiny")
    corpus = build_corpus(
        tmp_path / "corpus",
        config=p.corpus,
        work_cache=tiny_corpus.path.parent / "works",
        progress_bar=False,
    )
    assert corpus.train_tokens.shape == (p.corpus.max_train_segments, p.corpus.window)
    tm = train_model(
        corpus.train_tokens,
        model_config=p.model,
        train_config=p.train,
        seed=0,
        out_dir=tmp_path / "model",
    )
    assert tm.losses[-1] < tm.losses[0]
    q = generate_queries(
        load_trained(tmp_path / "model").model,
        corpus,
        n_queries=p.n_queries,
        prompt_len=p.prompt_len,
        seed=0,
        out_dir=tmp_path / "queries",
    )
    assert q.tokens.shape == (p.n_queries, p.corpus.window)
    lds = retrain_subsets(
        corpus.train_tokens, n_subsets=2, model_config=p.model, train_config=p.train
    )
    targets = np.stack([evaluate_losses(m.model, q.tokens, loss="last_token") for m in lds.models])
    assert targets.shape == (2, p.n_queries) and np.isfinite(targets).all()
    store = FeatureStore.open(build_feature_store(corpus, tmp_path / "features"))
    assert len(store.track_ids) == corpus.train_tokens.shape[0]
