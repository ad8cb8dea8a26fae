"""The distinctive reading inside a study (aria_tda.study.aspects): `aria-tda run` from the study's
folder with relative paths, anchored on the queries' own features when the study names them,
on the groups otherwise; refusals before any work."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

N_TRACKS, N_QUERIES = 120, 24


def _world(root: Path, rng: np.random.Generator, *, query_store: bool) -> None:
    """Tracks in 4 clusters alike in harmony; each query's scores rank its target cluster
    first (a method that follows harmony for every query); two metadata columns."""
    from aria_tda.features.registry import features as registry_features
    from aria_tda.features.store import write_store
    from aria_tda.scores import save_scores

    cluster = np.arange(N_TRACKS) % 4
    target = np.arange(N_QUERIES) % 4
    feats, qfeats = {}, {}
    for spec in registry_features("symbolic"):
        x = rng.normal(size=(N_TRACKS, spec.dim))
        q = rng.normal(size=(N_QUERIES, spec.dim))
        if spec.channel == "harmony":
            centers = rng.normal(scale=4.0, size=(4, spec.dim))
            x = centers[cluster] + 0.3 * x
            q = centers[target] + 0.3 * q
        feats[spec.name], qfeats[spec.name] = x, q
    ids = [f"t{i:03d}" for i in range(N_TRACKS)]
    qids = [f"q{j:02d}" for j in range(N_QUERIES)]
    write_store(root / "store", modality="symbolic", track_ids=ids, features=feats)
    if query_store:
        write_store(root / "query-features", modality="symbolic", track_ids=qids,
                    features=qfeats)
    s = (cluster[:, None] == target[None, :]).astype(float) * 3.0 + rng.normal(
        size=(N_TRACKS, N_QUERIES))
    save_scores(s.astype(np.float32), root / "scores.npy", method="M", row_ids=np.array(ids))
    pd.DataFrame({"query": np.arange(N_QUERIES), "query_id": qids,
                  "genre": np.array(["a", "b"])[np.arange(N_QUERIES) % 2],
                  "target": target}).to_csv(root / "queries.csv", index=False)
    (root / "study.toml").write_text(
        'name = "aspects"\nmodality = "symbolic"\nfeature_store = "store"\noutput = "results"\n'
        "K = [5, 10, 20]\nK_report = 10\nB = 40\nseed = 1\nn_bootstrap = 100\n"
        'queries = "queries.csv"\nconfound = ["genre", "target"]\nreport = false\n'
        + ('query_features = "query-features"\n' if query_store else "")
        + '\n[[setting]]\nmethod = "M"\nscores = "scores.npy"\nnormalize = "none"\n')


def _aria(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "aria_tda", *args], cwd=cwd, text=True,
                          capture_output=True, timeout=600)


@pytest.mark.parametrize("query_store", [True, False])
def test_run_from_the_study_folder_reads_every_query_and_set(tmp_path, rng, query_store):
    _world(tmp_path, rng, query_store=query_store)
    out = _aria(tmp_path, "run", "study.toml", "--no-progress")
    assert out.returncode == 0, out.stderr[-3000:]
    res = tmp_path / "results"
    asp = pd.read_csv(res / "aspects.csv")
    qa = pd.read_parquet(res / "query_aspects.parquet")
    sa = pd.read_csv(res / "set_aspects.csv")
    anchor = "both" if query_store else "group"
    assert set(asp["anchor"]) == {anchor}
    assert set(asp["variant"]) == {"original", "residual"}
    orig = asp[asp.variant == "original"]
    assert set(orig["K"]) == {10} and set(orig["channel"]) == {
        "melody", "harmony", "rhythm", "dynamic", "texture"}
    # every query follows its cluster's harmony: the method's own aspect, no query's
    assert orig["method_aspect"].iloc[0] == "harmony"
    assert orig["none_share"].iloc[0] >= 0.8
    got = qa[qa.variant == "original"]
    assert sorted(got["query"].unique()) == list(range(N_QUERIES))
    assert got.groupby("query")["named"].nunique().max() == 1
    # the sets: two genres and four targets (6 queries each), each read against the others
    sets = sa[sa.variant == "original"].drop_duplicates(["variable", "value"])
    assert sorted(zip(sets.variable, sets.value, strict=True)) == [
        ("genre", "a"), ("genre", "b"), ("target", "0"), ("target", "1"), ("target", "2"),
        ("target", "3")]
    assert set(sets["n_queries"]) == {12, 6}
    meta = json.loads((res / "results.json").read_text())
    summary = meta["settings"][0]["aspects"]["original"]
    assert summary["anchor"] == anchor and summary["K"] == 10
    assert sum(summary["answers"].values()) == N_QUERIES
    assert meta["study"]["K_aspects"] == 10 and meta["study"]["feature_set"] == "extended"
    # how like its query each attributed track is (with query features only): the top
    # tracks of a query share its cluster's harmony, so they stand high in the pool there
    items = res / "item_alignment.parquet"
    assert items.is_file() is query_store
    if query_store:
        ia = pd.read_parquet(items)
        top = pd.read_parquet(res / "topk.parquet")
        orig_ia = ia[ia.variant == "original"]
        assert set(orig_ia["rank"]) == set(range(1, 21))  # N_ITEMS = 20 of the top max(K)
        first = top[top.variant == "original"]  # the top K_report = 10: the same tracks
        shown = orig_ia[orig_ia["rank"] <= 10]
        assert set(zip(shown["query"], shown["rank"], shown["track_id"], strict=True)) == set(
            zip(first["query"], first["rank"], first["track_id"], strict=True))
        h = orig_ia[orig_ia.channel == "harmony"]
        assert h["percentile"].median() > 80 and h["informative"].all()
        assert ((ia["percentile"] >= 0) & (ia["percentile"] <= 100)).all()
    # a second run reuses the cached setting, the reading included
    again = _aria(tmp_path, "run", "study.toml", "--no-progress")
    assert again.returncode == 0 and "reusing cached results" in again.stdout
    pd.testing.assert_frame_equal(pd.read_csv(res / "aspects.csv"), asp)


def test_query_features_that_match_no_query_are_refused_before_any_work(tmp_path, rng):
    from aria_tda.errors import DataError
    from aria_tda.features.registry import features as registry_features
    from aria_tda.features.store import write_store
    from aria_tda.study import run_study

    _world(tmp_path, rng, query_store=True)
    feats = {s.name: rng.normal(size=(3, s.dim)) for s in registry_features("symbolic")}
    write_store(tmp_path / "query-features", modality="symbolic", track_ids=["x", "y", "z"],
                features=feats)
    with pytest.raises(DataError, match="query_features"):
        run_study(tmp_path / "study.toml", quiet=True)
    assert not (tmp_path / "results").exists()  # refused when the study was read


def test_a_query_store_of_another_modality_is_refused(tmp_path, rng):
    from aria_tda.errors import AriaError
    from aria_tda.features.registry import features as registry_features
    from aria_tda.features.store import write_store
    from aria_tda.study import run_study

    _world(tmp_path, rng, query_store=True)
    feats = {s.name: rng.normal(size=(N_QUERIES, s.dim or 1))
             for s in registry_features("audio") if s.kind == "vector"}
    write_store(tmp_path / "query-features", modality="audio",
                track_ids=[f"q{j:02d}" for j in range(N_QUERIES)], features=feats)
    with pytest.raises(AriaError, match="query_features"):
        run_study(tmp_path / "study.toml", quiet=True)
    assert not (tmp_path / "results").exists()
