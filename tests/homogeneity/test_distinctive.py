"""The distinctive reading (aria_tda.homogeneity.distinctive): planted structure is named, the
method's own preference is read as its baseline and not as any query's aspect, random
attribution is named at the nominal rate, bad input is refused."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from aria_tda.errors import ParameterError
from aria_tda.features.registry import FeatureSpec
from aria_tda.homogeneity import feature_pool, null_distribution
from aria_tda.homogeneity.distinctive import NONE, distinctive_reading
from aria_tda.homogeneity.profiles import distinctive_groups
from aria_tda.similarity import prepare_feature

CHANNELS = ("melody", "harmony", "rhythm")


def _spec(name: str, channel: str, dim: int) -> FeatureSpec:
    return FeatureSpec(name, channel, "symbolic", "vector", dim, "std_euclidean", "symbolic",
                       "test")


def _world(rng: np.random.Generator, n: int = 300, t: int = 60, n_plant: int = 12,
           n_marked: int = 20) -> dict:
    """A corpus with one feature per channel, a marked set alike in harmony, plant queries
    whose harmony is the marked set's, and a method that (i) ranks the marked set up for the
    plant queries and (ii) ranks items by their first rhythm dimension for every query."""
    x = {c: rng.standard_normal((n, 4)) for c in CHANNELS}
    marked = rng.choice(n, n_marked, replace=False)
    centre = rng.standard_normal(4) * 2.0
    x["harmony"][marked] = centre + 0.3 * rng.standard_normal((n_marked, 4))
    q = {c: rng.standard_normal((t, 4)) for c in CHANNELS}
    plant = np.zeros(t, dtype=bool)
    plant[:n_plant] = True
    q["harmony"][plant] = centre + 0.3 * rng.standard_normal((n_plant, 4))
    s = rng.standard_normal((n, t))
    s += 1.2 * x["rhythm"][:, :1]  # the method's own preference, for every query
    s[np.ix_(marked, np.flatnonzero(plant))] += 1.5  # the plant's influence
    prepared = {c: [prepare_feature(_spec(c[:3], c, 4), x[c])] for c in CHANNELS}
    values = {c[:3]: q[c] for c in CHANNELS}
    return {"s": s, "prepared": prepared, "values": values, "plant": plant, "marked": marked}


def _null(prepared: dict, k: int, b: int = 200) -> object:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return null_distribution(prepared, ks=[k], B=b, seed=0)


@pytest.mark.parametrize("anchor", ["query", "group", "both"])
def test_plant_named_method_preference_is_the_baseline(rng, anchor):
    w = _world(rng)
    k = 20
    values = w["values"] if anchor != "group" else None
    sets = {("plant", "yes"): np.flatnonzero(w["plant"]),
            ("plant", "no"): np.flatnonzero(~w["plant"])[:12]}
    r = distinctive_reading(w["s"], w["prepared"], _null(w["prepared"], k), k=k,
                            query_values=values, anchor=anchor, sets=sets, n_reference=100,
                            seed=1, n_boot=200)
    assert r.anchor == anchor
    named_sets = {v: r.name_of(i) for (_, v), i in zip(r.set_names, r.set_named, strict=True)}
    assert named_sets["yes"] == "harmony"
    assert named_sets["no"] == NONE
    answers = np.asarray([r.name_of(i) for i in r.named])
    # control queries: no distinctive aspect (the method's rhythm preference is its baseline)
    assert np.mean(answers[~w["plant"]] == NONE) >= 0.85
    assert np.mean(answers[~w["plant"]] == "rhythm") <= 0.1
    # the plant queries that are named are named harmony
    named_plant = answers[w["plant"]][answers[w["plant"]] != NONE]
    assert named_plant.size >= 3 and np.all(named_plant == "harmony")
    # every top-K coheres in rhythm (the paper's z), but not because the method follows each
    # query: the same items for every query cancel from the distinctive groups
    assert r.method_aspect != "rhythm"
    frame = r.setting_frame()
    assert set(frame["channel"]) == set(CHANNELS)
    assert frame["named_share"].sum() + frame["none_share"].iloc[0] == pytest.approx(1.0)


@pytest.mark.parametrize("anchor", ["query", "group", "both"])
def test_random_attribution_is_named_at_the_nominal_rate(rng, anchor):
    n, t, k = 250, 240, 15
    x = {c: rng.standard_normal((n, 3)) for c in CHANNELS}
    prepared = {c: [prepare_feature(_spec(c[:3], c, 3), x[c])] for c in CHANNELS}
    values = {c[:3]: rng.standard_normal((t, 3)) for c in CHANNELS} if anchor != "group" \
        else None
    named = 0
    runs = 3
    for rep in range(runs):
        s = np.random.default_rng([rep, 5]).standard_normal((n, t))
        r = distinctive_reading(s, prepared, _null(prepared, k, b=400), k=k,
                                query_values=values, anchor=anchor, alpha=0.05, n_boot=0,
                                seed=rep)
        named += int(np.count_nonzero(r.named >= 0))
    rate = named / (runs * t)
    # nominal 0.05; the binomial SD over 720 queries is 0.008 and the threshold is estimated
    assert rate <= 0.085


def test_similarity_retrieval_names_its_channel_as_the_method_aspect(rng):
    """Scores = similarity of each query's harmony to each item's (a chroma-like retrieval):
    the method follows harmony for every query, and no query is distinctive beyond it."""
    n, t, k = 300, 60, 20
    x = {c: rng.standard_normal((n, 4)) for c in CHANNELS}
    q = {c: rng.standard_normal((t, 4)) for c in CHANNELS}
    d = ((q["harmony"][:, None, :] - x["harmony"][None]) ** 2).sum(-1)
    s = (1.0 / (1.0 + np.sqrt(d))).T  # (n, t)
    prepared = {c: [prepare_feature(_spec(c[:3], c, 4), x[c])] for c in CHANNELS}
    null = _null(prepared, k)
    for values in ({c[:3]: q[c] for c in CHANNELS}, None):
        r = distinctive_reading(s, prepared, null, k=k, query_values=values, n_boot=200)
        assert r.method_aspect == "harmony"
        assert np.mean(r.named < 0) >= 0.85


def test_sets_too_small_or_too_large_are_left_out(rng):
    """A set needs 2 queries or more, and as many outside it (its reference is drawn there)."""
    w = _world(rng, t=30, n_plant=6)
    k = 15
    sets = {("a", "one"): [3], ("a", "all"): np.arange(30), ("a", "most"): np.arange(16),
            ("a", "six"): np.arange(6)}
    r = distinctive_reading(w["s"], w["prepared"], _null(w["prepared"], k), k=k, sets=sets,
                            n_reference=20, n_boot=0)
    assert [v for _, v in r.set_names] == ["six"]
    assert r.set_frame()["n_queries"].unique().tolist() == [6]


def test_constant_and_excluded_queries_are_not_read(rng):
    w = _world(rng, t=30, n_plant=6)
    s = w["s"].copy()
    s[:, 7] = 1.0
    exclude = np.zeros(30, dtype=bool)
    exclude[9] = True
    r = distinctive_reading(s, w["prepared"], _null(w["prepared"], 10), k=10, exclude=exclude,
                            n_boot=0)
    assert not r.valid[7] and not r.valid[9]
    assert r.named[7] == -1 and np.isnan(r.delta[:, 9]).all()
    assert r.groups[7].tolist() == [-1] * 10
    assert 7 not in r.query_frame()["query"].to_numpy()


def test_distinctive_group_drops_what_every_query_ranks(rng):
    """A hub every query ranks first is not in any query's distinctive group."""
    s = rng.standard_normal((80, 12))
    s[5] += 10.0  # the hub
    g = distinctive_groups(s, 6)
    assert not (g.query_groups == 5).any()
    from aria_tda.homogeneity import top_k_groups

    assert (top_k_groups(s, 6)[:, 0] == 5).all()


def test_bad_input_is_refused(rng):
    w = _world(rng, t=20, n_plant=5)
    null = _null(w["prepared"], 10)
    with pytest.raises(ParameterError, match="sets"):
        distinctive_reading(w["s"], w["prepared"], null, k=10, sets=[[1, 2]])
    with pytest.raises(ParameterError, match="sets"):
        distinctive_reading(w["s"], w["prepared"], null, k=10, sets={("a", "b"): [1, 99]})
    with pytest.raises(ParameterError, match="alpha"):
        distinctive_reading(w["s"], w["prepared"], null, k=10, alpha=0.0)
    with pytest.raises(ParameterError, match="query_values"):
        distinctive_reading(w["s"], w["prepared"], null, k=10, query_values=[1, 2])
    with pytest.raises(ParameterError, match="query_values"):
        distinctive_reading(w["s"], w["prepared"], null, k=10, anchor="query")
    with pytest.raises(ParameterError, match="anchor"):
        distinctive_reading(w["s"], w["prepared"], null, k=10, anchor="items")
    with pytest.raises(ParameterError, match="k"):
        distinctive_groups(w["s"], 1000)


def test_feature_pool_is_respected(rng):
    w = _world(rng, t=20, n_plant=5)
    pool = feature_pool(w["prepared"])
    pool[:50] = False
    g = distinctive_groups(w["s"], 10, pool=pool)
    assert (g.query_groups[g.valid] >= 50).all()


def test_anchor_cache_gives_the_same_reading_and_follows_its_inputs(rng):
    """A study's settings share one AnchorCache: the same numbers as without it, blocks kept
    within its byte limit, and emptied when the features, queries or pool change."""
    from aria_tda.homogeneity.anchor import AnchorCache

    w = _world(rng)
    null = _null(w["prepared"], 20)
    sets = {("plant", "yes"): np.flatnonzero(w["plant"])}
    other = w["s"] + rng.standard_normal(w["s"].shape)  # a second setting
    cache = AnchorCache()
    for s in (w["s"], other, w["s"]):
        plain = distinctive_reading(s, w["prepared"], null, k=20, query_values=w["values"],
                                    sets=sets, n_boot=50)
        cached = distinctive_reading(s, w["prepared"], null, k=20, query_values=w["values"],
                                     sets=sets, n_boot=50, anchor_cache=cache)
        for name in ("z", "delta", "named", "set_z", "set_p"):
            np.testing.assert_array_equal(getattr(cached, name), getattr(plain, name))
        assert cached.threshold == plain.threshold
    assert cache._blocks and cache._null and cache._bytes <= cache.max_bytes
    # other query values (a copy is another object): the cache starts again
    values = {name: v.copy() for name, v in w["values"].items()}
    distinctive_reading(w["s"], w["prepared"], null, k=20, query_values=values, n_boot=0,
                        anchor_cache=cache)
    assert cache._owner is not None and cache._owner[1] is values
    # a cache with no room recomputes every block and still agrees
    tiny = AnchorCache(max_bytes=0)
    got = distinctive_reading(w["s"], w["prepared"], null, k=20, query_values=w["values"],
                              n_boot=0, anchor_cache=tiny)
    ref = distinctive_reading(w["s"], w["prepared"], null, k=20, query_values=w["values"],
                              n_boot=0)
    np.testing.assert_array_equal(got.z, ref.z)
    assert not tiny._blocks and tiny._null  # (the threshold's few numbers are always kept)
