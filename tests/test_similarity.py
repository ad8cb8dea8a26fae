"""Similarity functions: fast paths against exact references, invariants, degenerate input."""

from __future__ import annotations

import numpy as np
import pytest

from aria import _simkernels
from aria.errors import AriaWarning, DataError, ParameterError
from aria.features.registry import FeatureSpec, feature_spec
from aria.similarity import (
    SequenceFeature,
    VectorFeature,
    lcs_length,
    lcs_length_reference,
    lcs_similarity,
    lcs_similarity_reference,
    pairwise_reference,
    prepare_feature,
    standardization_scale,
    std_euclidean_similarity,
)

CHORDS = feature_spec("audio", "chord_progression")
CQT = feature_spec("audio", "cqt")


def vec_spec(dim: int, name: str = "v") -> FeatureSpec:
    return FeatureSpec(name, "c", "audio", "vector", dim, "std_euclidean", "audio", "test")


def random_sequences(rng, n, *, max_len=64, alphabet=12, p_empty=0.1):
    out = []
    for _ in range(n):
        if rng.random() < p_empty:
            out.append(np.zeros(0, dtype=np.int64))
        else:
            out.append(rng.integers(0, alphabet, rng.integers(1, max_len + 1)))
    return out


# ------------------------------------------------------------------------------------- LCS


def test_lcs_textbook_example():
    # CLRS: LCS("ABCBDAB", "BDCABA") = 4 ("BCBA")
    a = ["ABCD".index(c) for c in "ABCBDAB"]
    b = ["ABCD".index(c) for c in "BDCABA"]
    assert lcs_length_reference(a, b) == 4
    assert lcs_length(a, b) == 4
    assert lcs_similarity(a, b) == pytest.approx(4 / 7)


@pytest.mark.parametrize("alphabet", [2, 3, 12])
@pytest.mark.parametrize("max_len", [8, 64, 65, 200])
def test_lcs_bit_parallel_equals_dp(rng, alphabet, max_len):
    # includes empty sequences, single-word (<=64) and multi-word (>64) masks, word boundaries
    for _ in range(150 if max_len <= 65 else 40):
        la, lb = rng.integers(0, max_len + 1, 2)
        a = rng.integers(0, alphabet, la)
        b = rng.integers(0, alphabet, lb)
        assert lcs_length(a, b) == lcs_length_reference(a, b)
        assert lcs_length(b, a) == lcs_length_reference(a, b)


@pytest.mark.parametrize("n", [63, 64, 65, 127, 128, 129])
def test_lcs_word_boundaries_identical_and_disjoint(n, rng):
    a = rng.integers(0, 12, n)
    assert lcs_length(a, a) == n
    assert lcs_length(a, (a + 1) % 12) == lcs_length_reference(a, (a + 1) % 12)
    assert lcs_length(np.zeros(n, int), np.ones(n, int)) == 0


def test_lcs_similarity_conventions():
    assert lcs_similarity([], []) == 1.0
    assert lcs_similarity_reference([], []) == 1.0
    assert lcs_similarity([], [1, 2]) == 0.0
    assert lcs_similarity([3, 4, 5], [3, 4, 5]) == 1.0
    # normalisation by the longer sequence: a contained progression is not "identical"
    assert lcs_similarity([1, 2], [1, 7, 2, 9]) == pytest.approx(0.5)


def test_lcs_transposition_invariance(rng):
    roots = rng.integers(0, 12, 40)
    motion = np.diff(roots) % 12
    for shift in range(12):
        moved = np.diff((roots + shift) % 12) % 12
        assert lcs_similarity(motion, moved) == 1.0


def test_lcs_distance_is_a_metric(rng):
    # 1 - LCS/max is a metric (Bakkelund 2009): check the triangle inequality on random triples
    seqs = random_sequences(rng, 60, max_len=12, alphabet=3)
    d = np.array([[1 - lcs_similarity_reference(a, b) for b in seqs] for a in seqs])
    assert np.allclose(d, d.T)
    viol = d[:, None, :] > d[:, :, None] + d[None, :, :] + 1e-12  # d(i,k) > d(i,j) + d(j,k)
    assert not viol.any()


def test_lcs_rejects_bad_symbols():
    with pytest.raises(ParameterError, match=r"a: expected symbols in \[0, 256\)"):
        lcs_length([-1, 2], [2])
    with pytest.raises(ParameterError, match="integer symbols"):
        lcs_length([0.5], [1])
    with pytest.raises(ParameterError, match="1-D"):
        lcs_length([[1, 2]], [1])


# ------------------------------------------------------------------------- sequence feature


def test_sequence_pairwise_equals_dp_reference(rng):
    seqs = random_sequences(rng, 120, max_len=140, alphabet=5, p_empty=0.15)  # 1-3 mask words
    seqs[7] = None  # missing feature
    pf = prepare_feature(CHORDS, seqs)
    assert isinstance(pf, SequenceFeature)
    assert not pf.valid[7] and pf.n_missing == 1
    idx = np.r_[7, rng.permutation(np.delete(np.arange(120), 7))[:40]]
    fast = pf.pairwise(idx)
    ref = pairwise_reference(pf, idx, seqs)
    np.testing.assert_array_equal(np.isnan(fast), np.isnan(ref))
    ok = ~np.isnan(ref)
    np.testing.assert_allclose(fast[ok], ref[ok], rtol=0, atol=1e-15)
    assert np.isnan(fast[0]).all() and np.isnan(fast[:, 0]).all()
    np.testing.assert_array_equal(np.diag(fast)[1:], 1.0)


def test_sequence_pair_similarity_and_take(rng):
    seqs = random_sequences(rng, 80, max_len=70)
    pf = prepare_feature(CHORDS, seqs)
    ii, jj = rng.integers(0, 80, 200), rng.integers(0, 80, 200)
    want = [lcs_similarity_reference(seqs[i], seqs[j]) for i, j in zip(ii, jj, strict=True)]
    np.testing.assert_allclose(pf.pair_similarity(ii, jj), want, atol=1e-15)
    rows = rng.permutation(80)[:30]
    sub = pf.take(rows)
    np.testing.assert_array_equal(sub.pairwise(np.arange(30)), pf.pairwise(rows))


def test_group_colsums_and_evidence_accumulation(rng):
    seqs = random_sequences(rng, 50, max_len=20)
    pf = prepare_feature(CHORDS, seqs)
    idx = rng.permutation(50)[:25]
    block = pf.pairwise(idx)
    colsum = np.empty(25)
    emat = np.full((10, 10), 0.5)
    pf._group_colsums(idx, colsum, emat=emat, weight=2.0, k_e=10)
    np.testing.assert_allclose(colsum, np.triu(block, 1).sum(axis=0), atol=1e-12)
    np.testing.assert_allclose(emat, 0.5 + 2.0 * np.tril(block[:10, :10], -1), atol=1e-12)
    assert pf.group_sum(idx) == pytest.approx(np.triu(block, 1).sum())


def test_sequence_feature_input_errors():
    with pytest.raises(ParameterError, match="list of 1-D integer sequences"):
        prepare_feature(CHORDS, np.zeros((3, 4), dtype=int))
    with pytest.raises(ParameterError, match=r"values\[chord_progression\]\[1\]"):
        prepare_feature(CHORDS, [[1, 2], [1, -3]])
    with pytest.raises(ParameterError, match="alphabet"):
        prepare_feature(CHORDS, [[1, 13]], alphabet=12)


# --------------------------------------------------------------------------- std-Euclidean


def test_standardization_scale_is_sample_sd_over_rows_with_feature(rng):
    x = rng.normal(3.0, 2.0, (200, 4))
    x[5] = np.nan
    mean, scale, dropped = standardization_scale(x)
    ok = np.delete(x, 5, axis=0)
    np.testing.assert_allclose(scale, ok.std(axis=0, ddof=1))
    np.testing.assert_allclose(mean, ok.mean(axis=0))
    assert not dropped.any()


def test_std_euclidean_single_pair_formula():
    a, b, s = np.array([1.0, 2.0]), np.array([4.0, 6.0]), np.array([3.0, 2.0])
    # ((4-1)/3)^2 + ((6-2)/2)^2 = 1 + 4 -> distance sqrt(5)
    assert std_euclidean_similarity(a, b, s) == pytest.approx(1 / (1 + np.sqrt(5)))
    assert std_euclidean_similarity(a, a, s) == 1.0
    with pytest.raises(ParameterError, match="scale"):
        std_euclidean_similarity(a, b, [0.0, 1.0])


def test_vector_pairwise_equals_reference_incl_near_duplicates(rng):
    x = rng.standard_normal((300, 168)) * rng.uniform(0.1, 50, 168) + rng.uniform(-100, 100, 168)
    x[1] = x[0]  # exact duplicate
    x[2] = x[0] + 1e-9 * rng.standard_normal(168)  # near duplicate: Gram cancellation regime
    x[3] = x[0] + 1e-4 * rng.standard_normal(168)
    pf = prepare_feature(CQT, x)
    assert isinstance(pf, VectorFeature)
    idx = np.r_[0, 1, 2, 3, rng.permutation(np.arange(4, 300))[:60]]
    fast = pf.pairwise(idx)
    ref = pairwise_reference(pf, idx, x)
    np.testing.assert_allclose(fast, ref, rtol=1e-10, atol=0)
    assert fast[0, 1] == 1.0
    # reported numerical accuracy of the Gram path: relative error of the distance <= 1e-8
    d_fast, d_ref = 1 / fast[0, 2] - 1, 1 / ref[0, 2] - 1
    assert abs(d_fast - d_ref) <= 1e-8 * d_ref


def test_vector_similarity_invariant_to_affine_rescaling(rng):
    x = rng.standard_normal((100, 6))
    a = rng.uniform(0.01, 100, 6) * rng.choice([-1, 1], 6)
    b = rng.uniform(-1e3, 1e3, 6)
    spec = vec_spec(6)
    p1, p2 = prepare_feature(spec, x), prepare_feature(spec, x * a + b)
    idx = np.arange(100)
    np.testing.assert_allclose(p1.pairwise(idx), p2.pairwise(idx), rtol=1e-9)


def test_zero_variance_dimensions_dropped_with_warning(rng):
    x = rng.standard_normal((50, 5))
    x[:, 2] = 7.25
    with pytest.warns(AriaWarning, match=r"1 of 5 dimension\(s\) have zero variance"):
        pf = prepare_feature(vec_spec(5), x)
    assert pf.dropped.tolist() == [False, False, True, False, False]
    assert np.isinf(pf.scale[2])
    idx = np.arange(50)
    ref = prepare_feature(vec_spec(4), np.delete(x, 2, axis=1)).pairwise(idx)
    np.testing.assert_allclose(pf.pairwise(idx), ref, rtol=1e-12)
    np.testing.assert_allclose(pf.pairwise(idx), pairwise_reference(pf, idx, x), rtol=1e-10)


def test_constant_feature_gives_similarity_one():
    with pytest.warns(AriaWarning, match="all dimension"):
        pf = prepare_feature(vec_spec(3), np.ones((10, 3)))
    np.testing.assert_array_equal(pf.pairwise(np.arange(10)), 1.0)
    assert pf.group_sum(np.arange(10)) == 45.0


def test_missing_vectors_are_nan_and_partial_nan_warns(rng):
    x = rng.standard_normal((20, 3))
    x[4] = np.nan
    x[9, 1] = np.nan
    with pytest.warns(AriaWarning, match="1 track"):
        pf = prepare_feature(vec_spec(3), x)
    assert pf.valid.sum() == 18
    block = pf.pairwise([4, 9, 0, 1])
    assert np.isnan(block[:2]).all() and np.isnan(block[:, :2]).all()
    assert np.isfinite(block[2:, 2:]).all()
    # the scale ignores missing rows
    np.testing.assert_allclose(pf.scale, np.delete(x, [4, 9], axis=0).std(axis=0, ddof=1))


def test_take_keeps_corpus_scale(rng):
    x = rng.standard_normal((100, 4))
    pf = prepare_feature(vec_spec(4), x)
    rows = np.arange(10)
    sub = pf.take(rows)
    np.testing.assert_array_equal(sub.scale, pf.scale)
    np.testing.assert_allclose(sub.pairwise(np.arange(10)), pf.pairwise(rows))
    ii, jj = np.arange(5), np.arange(5, 10)
    np.testing.assert_allclose(pf.pair_similarity(ii, jj), pf.pairwise(np.arange(10))[ii, jj])
    # an explicit scale reproduces the same similarities
    again = prepare_feature(vec_spec(4), x[:10], scale=pf.scale, mean=pf.mean)
    np.testing.assert_allclose(again.pairwise(np.arange(10)), sub.pairwise(np.arange(10)), rtol=1e-12)


def test_vector_input_errors(rng):
    with pytest.raises(DataError, match="168 columns"):
        prepare_feature(CQT, rng.standard_normal((5, 3)))
    x = rng.standard_normal((5, 3))
    x[0, 0] = np.inf
    with pytest.raises(DataError, match="infinite"):
        prepare_feature(vec_spec(3), x)
    with pytest.raises(DataError, match="at least 2 tracks"):
        prepare_feature(vec_spec(3), np.r_[[[1.0, 2, 3]], np.full((3, 3), np.nan)])
    with pytest.raises(ParameterError, match="spec: expected a FeatureSpec"):
        prepare_feature("cqt", x)  # type: ignore[arg-type]
    pf = prepare_feature(vec_spec(3), rng.standard_normal((5, 3)))
    with pytest.raises(ParameterError, match=r"idx: expected row indices in \[0, 5\)"):
        pf.pairwise([0, 5])
    with pytest.raises(ParameterError, match="scale"):
        prepare_feature(vec_spec(3), x[1:], scale=[1.0, 0.0, 1.0])


def test_digest_changes_with_data(rng):
    x = rng.standard_normal((10, 3))
    a, b = prepare_feature(vec_spec(3), x), prepare_feature(vec_spec(3), x)
    assert a.digest == b.digest
    x[0, 0] += 1
    assert prepare_feature(vec_spec(3), x).digest != a.digest


def test_kernel_topk_insert_matches_sort(rng):
    ke, n_top = 30, 7
    emat = rng.standard_normal((ke, ke))
    oi, oj, ov = np.empty(n_top, np.int64), np.empty(n_top, np.int64), np.empty(n_top)
    _simkernels.topk_insert(emat, ke, n_top, oi, oj, ov)
    il = np.tril_indices(ke, -1)
    np.testing.assert_array_equal(ov, np.sort(emat[il])[::-1][:n_top])
    np.testing.assert_array_equal(emat[oj, oi], ov)
    assert np.all(oi < oj)


def test_prepare_channels_from_a_store(rng, tmp_path):
    from aria.features.registry import channels
    from aria.features.store import FeatureStore, write_store
    from aria.similarity import prepare_channels

    n = 30
    feats = {}
    for spec in (s for specs in channels("audio").values() for s in specs):
        if spec.name == "cqt":
            continue  # absent from this store
        if spec.kind == "vector":
            feats[spec.name] = rng.standard_normal((n, spec.dim))
        else:
            feats[spec.name] = [rng.integers(0, 12, rng.integers(0, 10)) for _ in range(n)]
    ids = [f"t{i}" for i in range(n)]
    write_store(tmp_path / "store", modality="audio", track_ids=ids, features=feats)
    store = FeatureStore.open(tmp_path / "store")
    rows = rng.permutation(n)[:20]
    with pytest.warns(AriaWarning, match=r"channel 'timbre': feature\(s\) \['cqt'\] not in the store"):
        prepared = prepare_channels(store, rows=rows)
    assert list(prepared) == ["rhythm", "harmony", "timbre"]
    assert [pf.name for pf in prepared["harmony"]] == ["chroma", "tonnetz", "chord_progression"]
    chroma = prepared["harmony"][0]
    assert chroma.n == 20
    # the scale is the corpus-wide one (all 30 tracks), not re-estimated on the 20 rows
    np.testing.assert_allclose(chroma.scale, feats["chroma"].std(axis=0, ddof=1))
    np.testing.assert_allclose(chroma.pairwise(np.arange(20)), pairwise_reference(chroma, np.arange(20), feats["chroma"][rows]))
    only = prepare_channels(store, channels=["rhythm"])
    assert list(only) == ["rhythm"]
    with pytest.raises(ParameterError, match="channels"):
        prepare_channels(store, channels=["melody"])
