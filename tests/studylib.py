"""A small planted study on disk, shared by the ``planted_study`` fixture and the tests that
need one per module."""

from __future__ import annotations

import numpy as np


def make_planted_study(tmp_path, rng, *, collapsed=False):
    import pandas as pd

    from aria_tda.features.registry import features as registry_features
    from aria_tda.features.store import write_store
    from aria_tda.scores import save_scores

    n_tracks, n_queries, seg_per_track = 120, 24, 2
    cluster = np.arange(n_tracks) % 4
    feats = {}
    for spec in registry_features("symbolic"):
        x = rng.normal(size=(n_tracks, spec.dim))
        if spec.channel == "harmony":
            centers = rng.normal(scale=4.0, size=(4, spec.dim))
            x = centers[cluster] + 0.3 * x
        feats[spec.name] = x
    ids = [f"t{i:03d}" for i in range(n_tracks)]
    genre = np.array(["a", "b"])[np.arange(n_queries) % 2]
    write_store(tmp_path / "store", modality="symbolic", track_ids=ids, features=feats,
                metadata=pd.DataFrame({"track_id": ids,
                                       "title": [f"piece {i}" for i in range(n_tracks)]}))
    # segment-level scores: two segments per track
    seg_track = np.repeat(np.arange(n_tracks), seg_per_track)
    if collapsed:
        u = rng.normal(size=n_tracks * seg_per_track)
        s = np.outer(u, 1.0 + 0.01 * rng.normal(size=n_queries))
    else:
        target = np.arange(n_queries) % 4
        s = (cluster[seg_track][:, None] == target[None, :]).astype(float) * 3.0
        s += rng.normal(size=s.shape)
    save_scores(s.astype(np.float32), tmp_path / "scores.npy", method="planted")
    pd.DataFrame({"segment": np.arange(seg_track.size),
                  "track_id": np.array(ids)[seg_track]}).to_csv(tmp_path / "segments.csv",
                                                                 index=False)
    pd.DataFrame({"query": np.arange(n_queries), "genre": genre}).to_csv(
        tmp_path / "queries.csv", index=False)
    (tmp_path / "study.toml").write_text(
        """
name = "planted"
modality = "symbolic"
feature_store = "store"
output = "results"
K = [5, 10, 20]
K_report = 10
B = 30
seed = 1
n_bootstrap = 50
queries = "queries.csv"
confound = ["genre"]
report = false

[[setting]]
method = "Planted"
scores = "scores.npy"
segments = "segments.csv"
normalize = "zscore"
"""
    )
    return tmp_path / "study.toml"
