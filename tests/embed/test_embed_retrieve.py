"""``aria-tda retrieve``: the cosine score matrix of two embedding stores, in ARIA's format."""

from __future__ import annotations

import _toy_encoder as toy
import numpy as np
import pandas as pd
import pytest

from aria_tda.embed import embed_to_store, retrieve
from aria_tda.embed.retrieval import cosine_scores_reference, queries_table_path
from aria_tda.errors import DataError
from aria_tda.features.store import FeatureStore, StoreWriter
from aria_tda.manifest import read_manifest
from aria_tda.scores import open_scores


@pytest.fixture
def stores(tmp_path, toy_encoder, corpus):
    """A training store (4 tracks) and a segment-level query store (12 segments)."""
    train, queries = tmp_path / "train", tmp_path / "queries"
    embed_to_store(corpus, train, encoder="toy", weights=toy_encoder)
    embed_to_store(corpus, queries, encoder="toy", weights=toy_encoder, segment_seconds=0.5)
    return train, queries


@pytest.mark.parametrize("suffix", [".npy", ".zarr"])
def test_retrieve_writes_the_cosine_matrix_with_ids(tmp_path, stores, suffix):
    train, queries = stores
    out = retrieve(train, queries, tmp_path / f"scores{suffix}", block_rows=3)
    src = open_scores(out)
    a = FeatureStore.open(train).vectors("embedding")
    b = FeatureStore.open(queries).vectors("embedding")
    assert src.shape == (4, 12)
    np.testing.assert_allclose(np.asarray(src.to_numpy()), cosine_scores_reference(a, b), atol=2e-6)
    assert list(src.row_ids) == ["t0", "t1", "t2", "t3"]
    man = read_manifest(out)
    assert man["kind"] == "track_scores" and man["method"] == "toy"
    assert man["query_ids"][:2] == ["t0#0000", "t0#0001"]
    assert man["parameters"]["encoder"]["weights_sha256"] == toy.file_sha256(tmp_path / "toy.npy")
    assert man["train_embeddings"]["path"] == str(train)
    assert man["query_embeddings"]["segment_seconds"] == 0.5
    table = pd.read_csv(queries_table_path(out))
    assert list(table["query"]) == list(range(12)) and table["track_id"][3] == "t1#0000"
    assert table["source_track"][3] == "t1"


def test_mismatched_encoders_are_refused(tmp_path, stores, corpus):
    train, _ = stores
    other = toy.save_checkpoint(tmp_path / "other.npy", seed=3)
    embed_to_store(corpus, tmp_path / "q2", encoder="toy", weights=other)
    with pytest.raises(DataError, match=r"different encoders.*weights_sha256"):
        retrieve(train, tmp_path / "q2", tmp_path / "s.npy")
    assert not (tmp_path / "s.npy").exists()


def test_not_an_embedding_store(tmp_path, stores):
    from aria_tda.features.store import write_store

    write_store(
        tmp_path / "aud", modality="audio", track_ids=["a"], features={"x": np.ones((1, 2))}
    )
    with pytest.raises(DataError, match="queries: expected an embedding store"):
        retrieve(stores[0], tmp_path / "aud", tmp_path / "s.npy")


def test_zero_norm_embedding_names_the_track(tmp_path, stores):
    train, queries = stores
    params = FeatureStore.open(train).params
    w = StoreWriter(tmp_path / "z", modality="embedding", params=params)
    w.append(["ok", "silent"], {"embedding": np.array([[1.0] * 8, [0.0] * 8])})
    with pytest.raises(DataError, match="track 'silent' has norm zero"):
        retrieve(tmp_path / "z", queries, tmp_path / "s.npy")
    assert not (tmp_path / "s.npy").exists()
