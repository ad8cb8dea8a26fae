"""Top-K concentration (:mod:`aria_tda.diagnostics.concentration`): the streamed accumulator
against its exact twin on random, tied, float16, torch and chunked input; merging row ranges;
K larger than M; streaming from disk; the same pass inside every mode of ``diagnose``; quanda's
top-K cardinality; and the verdict on planted matrices."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

from aria_tda.diagnostics import diagnose
from aria_tda.diagnostics.concentration import (
    Concentration,
    TopKAccumulator,
    concentration_from_groups,
    topk_concentration,
    topk_concentration_reference,
)
from aria_tda.errors import AriaWarning, DataError, ParameterError
from aria_tda.verdict import classify
from twinlib import as_comparable, assert_same


def _same(a: Concentration, b: Concentration) -> None:
    """Equal, floats to 1e-12 relative (1e-12 absolute near 0: sums in another order)."""
    assert_same(as_comparable(a), as_comparable(b), rtol=1e-12, atol=1e-12)


def _tied(rng, m=200, t=25):
    s = np.round(rng.standard_normal((m, t)), 0)  # mostly ties
    s[rng.choice(m, 4, replace=False)] += 3.0
    return s


@pytest.mark.parametrize("kind", ["random", "tied", "float16", "float32"])
@pytest.mark.parametrize("chunk", [1, 13, 10_000])
def test_streamed_equals_reference(rng, kind, chunk):
    s = rng.standard_normal((150, 20)) if kind == "random" else _tied(rng, 150, 20)
    if kind == "float16":
        s = s.astype(np.float16)
    elif kind == "float32":
        s = s.astype(np.float32)
    ks = (1, 3, 10, 40)
    _same(topk_concentration(s, ks, chunk_rows=chunk), topk_concentration_reference(s, ks))


def test_torch_blocks_and_mixed_blocks(rng):
    torch = pytest.importorskip("torch")
    s = _tied(rng)
    want = topk_concentration_reference(s, (1, 5, 17))
    for dtype in (torch.float64, torch.float32, torch.float16):
        acc = TopKAccumulator(s.shape[1], (1, 5, 17), n_rows=s.shape[0])
        x = torch.from_numpy(s).to(dtype)
        for r in range(0, s.shape[0], 31):
            acc.update(x[r : r + 31], r)
        ref = topk_concentration_reference(x.double().numpy(), (1, 5, 17))
        _same(acc.result(), ref)
    acc = TopKAccumulator(s.shape[1], (1, 5, 17), n_rows=s.shape[0])  # torch, NumPy, torch
    acc.update(torch.from_numpy(s[:60]), 0)
    acc.update(s[60:120], 60)
    acc.update(torch.from_numpy(s[120:]), 120)
    _same(acc.result(), want)


def test_merge_of_row_ranges_in_any_order(rng):
    s = _tied(rng)
    want = topk_concentration_reference(s, (1, 10))
    parts = []
    for a, b in ((0, 70), (70, 71), (71, 200)):
        acc = TopKAccumulator(s.shape[1], (1, 10), n_rows=s.shape[0])
        acc.update(s[a:b], a)
        parts.append(acc)
    _same(parts[2].merge(parts[0]).merge(parts[1]).result(), want)
    _same(parts[0].merge(parts[1].merge(parts[2])).result(), want)
    with pytest.raises(ParameterError, match="other"):
        parts[0].merge(TopKAccumulator(s.shape[1], (1, 5)))


def test_rows_out_of_order_refused(rng):
    acc = TopKAccumulator(4, (1,))
    acc.update(rng.standard_normal((10, 4)), 10)
    with pytest.raises(ParameterError, match="increasing row order"):
        acc.update(rng.standard_normal((10, 4)), 0)
    with pytest.raises(ParameterError, match="block"):
        acc.update(rng.standard_normal((10, 5)), 20)


def test_k_larger_than_m_is_clipped_with_a_warning(rng):
    s = rng.standard_normal((8, 6))
    with pytest.warns(AriaWarning, match=r"K = \[10, 50\] larger than the 8 rows"):
        c = topk_concentration(s, (1, 10, 50))
    assert c.ks == (1, 8)
    assert c.mean_overlap[1] == 1.0 and c.distinct_ratio[1] == pytest.approx(8 / (6 * 8))
    with pytest.warns(AriaWarning):
        _same(c, topk_concentration_reference(s, (1, 10, 50)))


def test_streams_a_npy_file(rng, tmp_path):
    s = rng.standard_normal((300, 12)).astype(np.float32)
    np.save(tmp_path / "s.npy", s)
    _same(topk_concentration(tmp_path / "s.npy", (1, 7), chunk_rows=50),
          topk_concentration_reference(s, (1, 7)))
    np.save(tmp_path / "t.npy", s.T)  # stored queries x training
    _same(topk_concentration(tmp_path / "t.npy", (1, 7), transpose=True),
          topk_concentration_reference(s, (1, 7)))


def test_nonfinite_refused(rng):
    s = rng.standard_normal((20, 3))
    s[5, 1] = np.nan
    with pytest.raises(DataError, match="row 5, column 1"):
        topk_concentration(s)


def test_identical_and_disjoint_extremes():
    t, m = 6, 60
    same = np.tile(np.arange(m, dtype=float)[:, None], (1, t))  # every query ranks alike
    c = topk_concentration(same, (1, 5))
    assert c.mean_overlap == (1.0, 1.0) and c.top1_share == 1.0 and c.top1_row == m - 1
    assert c.distinct_ratio == (1 / t, 1 / t)
    disjoint = np.zeros((m, t))
    for j in range(t):
        disjoint[10 * j : 10 * j + 5, j] = 1.0  # query j's top-5: its own rows
    c = topk_concentration(disjoint, (1, 5))
    assert c.mean_overlap == (0.0, 0.0) and c.distinct_ratio == (1.0, 1.0)
    assert c.top1_share == pytest.approx(1 / t) and c.top1_row == 0  # ties: the lowest row


def test_overlap_excess_and_dict(rng):
    c = topk_concentration(rng.standard_normal((400, 30)), (1, 10))
    assert c.chance_overlap(10) == pytest.approx(10 / 400)
    assert abs(c.overlap_excess(10)) < 0.05
    d = json.loads(json.dumps(c.to_dict()))
    assert d["ks"] == [1, 10] and d["level"] == "segment" and len(d["per_k"]) == 2
    assert d["per_k"][1]["mean_overlap"] == pytest.approx(c.mean_overlap[1])
    with pytest.raises(ParameterError, match="measured K"):
        c.at(5)


def test_track_level_matches_the_mean_of_segments(rng):
    n_tracks, per = 30, 4
    s = rng.standard_normal((n_tracks * per, 10))
    groups = np.repeat(np.arange(100, 100 + n_tracks), per)  # track ids, not codes
    c = topk_concentration(s, (1, 5), groups=groups, chunk_rows=7)
    means = s.reshape(n_tracks, per, 10).mean(axis=1)
    want = topk_concentration(means, (1, 5))
    assert c.level == "track" and c.n_rows == n_tracks
    assert c.top1_row == 100 + want.top1_row
    np.testing.assert_allclose(c.mean_overlap, want.mean_overlap)
    with pytest.raises(ParameterError, match="groups"):
        topk_concentration(s, groups=groups[:-1])


def test_from_groups_equals_the_streamed_measure(rng):
    from aria_tda.homogeneity import top_k_groups

    s = rng.standard_normal((90, 14))
    groups = top_k_groups(s, 20)
    _same(concentration_from_groups(groups, (1, 5, 20), n_rows=90, level="segment", scores=s),
          topk_concentration(s, (1, 5, 20)))
    # without the scores, the hubs and the unlike-query overlap are not measured
    assert concentration_from_groups(groups, (1, 5), n_rows=90).dependence is None
    with pytest.raises(ParameterError, match="width"):
        concentration_from_groups(groups[:, :5], (1, 20), n_rows=90)


def test_distinct_ratio_is_quandas_top_k_cardinality(rng):
    """quanda's TopKCardinalityMetric: explanations (test x train), topk(k, dim=1), distinct
    indices over all queries / (n_test * k) — written out here with torch, as quanda does."""
    torch = pytest.importorskip("torch")
    s = rng.standard_normal((500, 40)).astype(np.float32)  # continuous: no ties
    explanations = torch.from_numpy(s.T.copy())
    c = topk_concentration(s, (1, 5, 25))
    for k, got in zip(c.ks, c.distinct_ratio, strict=True):
        top = explanations.topk(k=k, dim=1).indices
        assert got == len(torch.unique(top)) / torch.numel(top)


# -- the same pass inside diagnose -------------------------------------------------------------
@pytest.mark.parametrize("mode", ["exact", "exact-tiled", "approx"])
def test_diagnose_measures_it_in_every_mode(rng, mode):
    s = _tied(rng, 240, 18).astype(np.float32)
    kw = {"memory": "64KB"} if mode == "exact-tiled" else {}
    d = diagnose(s, mode=mode, chunk_rows=37, topk=(1, 10), **kw)
    _same(d.concentration, topk_concentration_reference(s, (1, 10)))
    assert d.to_dict()["concentration"]["ks"] == [1, 10]


def test_diagnose_on_torch_blocks(rng):
    pytest.importorskip("torch")
    s = _tied(rng, 240, 18)
    d = diagnose(s, device="cpu", chunk_rows=50, topk=(1, 10))
    _same(d.concentration, topk_concentration_reference(s, (1, 10)))


def test_diagnose_topk_off_and_validated(rng):
    s = rng.standard_normal((50, 5))
    assert diagnose(s, topk=None).concentration is None
    assert diagnose(s, topk=()).concentration is None
    assert diagnose(s, topk=3).concentration.ks == (3,)
    with pytest.raises(ParameterError, match="topk"):
        diagnose(s, topk=(0,))


def test_diagnose_on_dask_merges_row_ranges(rng, tmp_path):
    distributed = pytest.importorskip("dask.distributed")
    s = _tied(rng, 300, 16).astype(np.float32)
    np.save(tmp_path / "s.npy", s)
    want = topk_concentration_reference(s, (1, 10))
    with (
        distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                 dashboard_address=None) as cluster,
        distributed.Client(cluster) as client,
    ):
        for data in (s, tmp_path / "s.npy"):
            d = diagnose(data, client=client, chunk_rows=40, topk=(1, 10))
            _same(d.concentration, want)


# -- orientation -------------------------------------------------------------------------------
def test_diagnose_warns_when_rows_are_fewer_than_columns(rng):
    s = rng.standard_normal((10, 40))
    with pytest.warns(AriaWarning, match=r"fewer rows than columns \(10 x 40\).*pass --transpose"):
        diagnose(s, topk=None)
    with pytest.warns(AriaWarning, match="transposed matrix has fewer rows") as rec:
        diagnose(s.T, transpose=True, topk=None)
    text = str(rec[0].message)
    assert "drop --transpose" in text and "pass --transpose" not in text
    with warnings.catch_warnings():
        warnings.simplefilter("error", AriaWarning)
        diagnose(s.T, topk=None)  # training x queries: no word


# -- the verdict on planted matrices -----------------------------------------------------------
def _planted(rng, case, m=1500, t=100):
    s = rng.standard_normal((m, t))
    d = rng.choice(m, m // 100, replace=False)
    if case == "offset":
        s += 50.0 + 5.0 * rng.standard_normal(t)
    elif case == "dominant":
        s[d] += 6.0 + rng.standard_normal(d.size)[:, None]
    elif case == "signflip":
        y = rng.integers(0, 10, t)
        sign = rng.choice([-1.0, 1.0], size=(d.size, 10))
        s[d] += (6.5 * np.exp(0.3 * rng.standard_normal(d.size)))[:, None] * sign[:, y]
    return s.astype(np.float32)


@pytest.mark.parametrize(
    ("case", "before", "after"),
    [("healthy", "ok", "ok"), ("offset", "suspect", "ok"),
     ("dominant", "ok", "collapsed"), ("signflip", "ok", "collapsed")],
)
def test_planted_verdicts(rng, case, before, after):
    """Without a top-K the structural rules decide ("before"); with it, whether the top-K
    follows the query ("after"). A per-query offset (p near 1) changes no ranking: ok."""
    d = diagnose(_planted(rng, case), topk=(1, 10))
    kw = {"kappa": d.kappa, "r1": d.r1, "r2_5": d.r2_5, "p": d.p,
          "v1_constancy": d.v1_constancy}
    assert classify(**kw).label == before
    v = classify(**kw, concentration=d.concentration)
    assert v.label == after
    if after == "collapsed":
        assert "top-" in v.reason and "chance-corrected" in v.reason
    assert classify(**kw, concentration=d.concentration.to_dict()) == v
