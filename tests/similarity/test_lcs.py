"""chord_lcs: bit-parallel LCS against the dynamic program, SequenceFeature
(aria_tda.similarity.lcs)."""

from __future__ import annotations

import numpy as np
import pytest

from aria_tda.errors import ParameterError
from aria_tda.similarity import (
    SequenceFeature,
    lcs_length,
    lcs_length_reference,
    lcs_similarity,
    lcs_similarity_reference,
    pairwise_reference,
    prepare_feature,
)

from ._helpers import CHORDS, random_sequences


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
