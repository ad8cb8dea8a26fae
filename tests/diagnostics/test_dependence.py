"""Hubs and the unlike-query overlap: the streamed measures equal their twin, and the verdict
tells a hub, a class structure or two opposite camps (ok) from a top-K that ignores the query."""

from __future__ import annotations

import numpy as np
import pytest

from aria_tda import diagnose
from aria_tda.diagnostics.concentration import (
    TopKAccumulator,
    concentration_from_groups,
    topk_concentration,
    topk_concentration_reference,
)
from aria_tda.diagnostics.dependence import (
    SAMPLE_QUERIES,
    SAMPLE_ROWS,
    dependence_from_top,
    dependence_k,
    find_hubs,
    largest_excess,
    query_dependence_reference,
    sample_indices,
)
from aria_tda.errors import ParameterError
from aria_tda.verdict import VerdictThresholds, classify
from twinlib import as_comparable, assert_same


def _verdict(s, **kw):
    d = diagnose(np.asarray(s, dtype=np.float32), progress=False, **kw)
    return d, classify(kappa=d.kappa, r1=d.r1, r2_5=d.r2_5, p=d.p,
                       v1_constancy=d.v1_constancy, concentration=d.concentration)


# -- the streamed measures equal the twin ------------------------------------------------------
@pytest.mark.parametrize(("m", "t"), [(300, 40), (900, 300)])  # the second is sampled
def test_streamed_equals_reference_including_the_sampled_sizes(rng, m, t):
    cls = rng.integers(0, 6, t)
    s = rng.standard_normal((m, 6))[:, cls] + rng.standard_normal((m, t))
    acc = TopKAccumulator(t, (1, 10, 40), n_rows=m)
    for r in range(0, m, 97):
        acc.update(s[r : r + 97], r)
    got = acc.result().dependence
    want = query_dependence_reference(s, 10, ks=(1, 10, 40))
    assert_same(as_comparable(got), as_comparable(want), rtol=1e-10, atol=1e-12)
    assert got.sample_queries == min(t, SAMPLE_QUERIES)
    assert got.sample_rows == min(m, SAMPLE_ROWS)
    assert got.ks == (1, 10, 40) and got.k == 10


def test_from_groups_with_a_pool_and_track_ids_equals_the_twin(rng):
    from aria_tda.homogeneity import top_k_groups

    s = rng.standard_normal((400, 30))
    pool = np.ones(400, dtype=bool)
    pool[::7] = False
    ids = np.array([f"t{i:03d}" for i in range(400)])
    groups = top_k_groups(s, 20, pool=pool)
    got = concentration_from_groups(groups, (1, 20), n_rows=int(pool.sum()), scores=s,
                                    pool=pool, ids=ids).dependence
    want = query_dependence_reference(s, 1, ids=ids, rows=np.flatnonzero(pool), ks=(1, 20))
    assert_same(as_comparable(got), as_comparable(want), rtol=1e-10, atol=1e-12)


def test_segment_map_names_hubs_by_track_id(rng):
    s = rng.standard_normal((600, 50))
    s[10] += 5.0  # one segment leads every query: its track is the hub
    g = np.repeat(np.arange(300) + 1000, 2)
    got = topk_concentration(s, (1, 10), groups=g).dependence
    want = topk_concentration_reference(s, (1, 10), groups=g).dependence
    assert_same(as_comparable(got), as_comparable(want), rtol=1e-10, atol=1e-12)
    assert got.hubs[0].row == 1005 and got.hubs[0].share > 0.9


def test_sample_indices_are_seeded_sorted_and_complete_when_small():
    a = sample_indices(10_000, 256, salt=0)
    assert a.size == 256 and np.all(np.diff(a) > 0)
    assert np.array_equal(a, sample_indices(10_000, 256, salt=0))
    assert not np.array_equal(a, sample_indices(10_000, 256, salt=1))
    assert np.array_equal(sample_indices(50, 256), np.arange(50))


def test_dependence_k_prefers_ten_and_never_above_half_the_rows():
    assert dependence_k((1, 10), 1000) == 10
    assert dependence_k((1, 20, 50), 1000) == 1  # |1 - 10| < |20 - 10|
    assert dependence_k((5, 15), 1000) == 5  # a tie: the smaller
    assert dependence_k((300,), 500) is None


def test_hub_test_is_bonferroni_binomial():
    # 100 queries, K = 10 of M = 2,000: chance 0.5 %. Every other row is in one top-K; a row in
    # 3 is not a hub (P ~ 0.014 > 0.01/2000), one in 12 is (P ~ 1e-12)
    ranked = np.arange(1000).reshape(100, 10)
    ranked[:3, 0] = 1500
    ranked[:12, 1] = 1600
    hubs, n = find_hubs(ranked, 10, 2000)
    assert [h.row for h in hubs] == [1600] and n == 1
    assert hubs[0].share == 0.12 and hubs[0].times_chance == pytest.approx(24.0)


def test_bad_k_is_a_parameter_error(rng):
    ranked = np.argsort(-rng.standard_normal((50, 20)), axis=0)[:5].T
    with pytest.raises(ParameterError, match="k"):
        dependence_from_top(ranked, rng.standard_normal((50, 20)), np.arange(20), 10, 50)


# -- what the verdict says ---------------------------------------------------------------------
def test_class_structure_with_hubs_is_ok_and_names_the_hubs(rng):
    m, t = 1500, 100
    cls = rng.integers(0, 10, t)
    proto = rng.standard_normal((m, 10))
    s = 1.5 * proto[:, cls] + rng.standard_normal((m, t))
    s[3] += 8.0 * (cls < 2)  # one prototype leads the queries of two classes: a hub
    d, v = _verdict(s)
    assert v.label == "ok", v.reason
    hub = {h.row: h for h in d.concentration.dependence.hubs}[3]
    assert 0.1 <= hub.share <= np.mean(cls < 2)  # the two classes' queries, at most
    assert any("hub" in f and "not a collapse" in f for f in v.findings)


def test_two_opposite_camps_are_ok_and_said_to_be_camps(rng):
    m, t = 1000, 80
    item_side = np.where(rng.random(m) < 0.5, 1.0, -1.0)
    query_side = np.where(rng.random(t) < 0.5, 1.0, -1.0)
    s = np.outer(item_side, query_side) + 0.7 * rng.standard_normal((m, t))
    d, v = _verdict(s)
    assert d.kappa > 0.5
    assert v.label == "ok", v.reason
    assert any("opposite camps" in f for f in v.findings)


def test_a_low_rank_similarity_retrieval_is_ok(rng):
    items, queries = rng.standard_normal((1200, 3)), rng.standard_normal((3, 90))
    d, v = _verdict(items @ queries)
    assert d.r1 > 0.3 and v.label == "ok", v.reason


def test_a_query_independent_ranking_is_collapsed_with_its_offset(rng):
    s = np.outer(rng.standard_normal(800), np.ones(60)) + 0.2 * rng.standard_normal((800, 60))
    _, v = _verdict(s)
    assert v.label == "collapsed" and "does not follow the query" in v.reason
    assert any("per-item offset" in f for f in v.findings)
    assert not any("not a collapse" in f for f in v.findings)


def test_outliers_in_every_top_k_are_collapsed(rng):
    s = rng.standard_normal((1500, 100))
    s[:6] += 8.0
    _, v = _verdict(s)
    assert v.label == "collapsed"


def test_a_partial_overlap_is_read_at_its_largest_k_against_the_thresholds(rng):
    s = rng.standard_normal((1500, 100))
    lead = rng.random(100) < 0.45  # one row leads 45 % of the queries, whatever they are
    s[0, lead] += 10.0
    d, v = _verdict(s)
    e, k, _, _ = largest_excess(d.concentration.dependence)
    assert k == 1 and 0.1 <= e < 0.25  # about 0.45 ** 2
    assert v.label == "ok" and any("hub" in f for f in v.findings)  # a hub of 45 %
    low = classify(kappa=d.kappa, r1=d.r1, r2_5=d.r2_5, p=d.p, concentration=d.concentration,
                   thresholds=VerdictThresholds(unlike_suspect=0.1))
    assert low.label == "suspect" and "top-1" in low.reason


def test_mapping_and_object_give_the_same_verdict(rng):
    d, v = _verdict(rng.standard_normal((500, 40)))
    again = classify(kappa=d.kappa, r1=d.r1, r2_5=d.r2_5, p=d.p,
                     concentration=d.concentration.to_dict())
    assert again == v


def test_undefined_kappa_is_suspect_even_when_the_top_k_follows_the_query(rng):
    d, _ = _verdict(rng.standard_normal((500, 40)))
    v = classify(kappa=None, r1=d.r1, r2_5=d.r2_5, p=d.p, concentration=d.concentration)
    assert v.label == "suspect" and "kappa undefined" in v.reason


def test_binomial_tail_decides_as_the_incomplete_beta(rng):
    # the hub test without SciPy's special functions: the same decisions as I_p(c, n - c + 1)
    from scipy.special import betainc

    from aria_tda.diagnostics.dependence import binomial_tail_below

    for _ in range(200):
        n, p = int(rng.integers(3, 5000)), float(rng.uniform(1e-5, 0.6))
        level = 0.01 / int(rng.integers(2, 10**6))
        counts = np.r_[rng.integers(0, n + 1, 40), np.arange(0, min(n, int(n * p) + 40))]
        want = betainc(counts.astype(np.float64), n - counts + 1.0, p) <= level
        np.testing.assert_array_equal(binomial_tail_below(counts, n, p, level), want)


def test_pair_overlaps_count_shared_rows_exactly(rng):
    from aria_tda.diagnostics.dependence import _pair_overlaps

    top = np.stack([rng.choice(50, 7, replace=False) for _ in range(30)])
    got = _pair_overlaps(top, 50)
    want = np.array([[len(set(a) & set(b)) / 7 for b in top] for a in top])
    np.testing.assert_array_equal(got, want)
