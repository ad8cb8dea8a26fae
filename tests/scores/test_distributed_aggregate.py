"""S_track aggregation on a real Dask cluster (worker processes on loopback) equals the local path.

Also the task runner under it (:func:`aria_tda.scores.distributed.run_ordered`): results in task
order, and workers killed mid-task — Dask reruns their tasks, lost scattered inputs are
scattered again.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from aria_tda.errors import DataError
from aria_tda.homogeneity.groups import top_k_groups
from aria_tda.scores import save_scores
from aria_tda.scores.aggregation import aggregate
from aria_tda.scores.distributed import run_ordered
from dasklib import kill_during

distributed = pytest.importorskip("dask.distributed")


@pytest.fixture
def client(dask_client):
    """The session's LocalCluster (two worker processes on loopback; tests/conftest.py)."""
    return dask_client


def _matrix(rng, m=240, t=9):
    """Rank-1-dominated scores with noise, as attribution matrices are."""
    return (np.outer(rng.random(m) + 1.0, rng.random(t) + 0.5) * 3.0
            + rng.standard_normal((m, t)))


def _segments(rng, m, n_tracks):
    """Each track's segments mostly together, a few scattered over the matrix."""
    seg = np.repeat(np.arange(n_tracks), -(-m // n_tracks))[:m]
    swap = rng.choice(m, 20, replace=False)
    seg[swap] = seg[rng.permutation(swap)]
    return np.array([f"t{i}" for i in seg])


def _same(got, ref):
    got, ref = np.asarray(got), np.asarray(ref)
    assert got.shape == ref.shape
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-12 * np.abs(ref).max())


@pytest.mark.parametrize("normalize", ["zscore", "rank", "auto"])
@pytest.mark.parametrize("residual", [False, True])
def test_file_backed_equals_local(rng, tmp_path, client, normalize, residual):
    s = _matrix(rng)
    if normalize == "auto":  # heavy tails: auto must pick rank on both paths
        s[:, :6] = rng.lognormal(0.0, 2.5, (s.shape[0], 6))
    path = save_scores(s.astype(np.float32), tmp_path / "s.npy")
    seg = _segments(rng, s.shape[0], 31)
    kw = {"segments": seg, "normalize": normalize, "residual": residual, "chunk_rows": 16}
    ref = aggregate(path, **kw)
    got = aggregate(path, client=client, **kw)
    _same(got.to_numpy(), ref.to_numpy())
    assert list(got.row_ids) == list(ref.row_ids)
    assert got.manifest["parameters"]["normalize"] == ref.manifest["parameters"]["normalize"]
    if normalize == "rank":  # whole columns per task: the very same numbers
        np.testing.assert_array_equal(got.to_numpy(), ref.to_numpy())


@pytest.mark.parametrize("residual", [False, True])
def test_zscore_bit_identical_and_exact_ties_rank_alike(rng, tmp_path, client, residual):
    """Float32 scores with planted exact ties (every 5th track repeats its neighbour's three
    segments): z-scored ``S_track`` is bit-identical, so tied tracks keep the local order and
    the top-K groups are identical — not merely within rounding."""
    m, t = 1500, 11
    s = _matrix(rng, m, t).astype(np.float32)
    for k in range(1, m // 3, 5):
        s[3 * k : 3 * k + 3] = s[3 * k - 3 : 3 * k]
    path = save_scores(s, tmp_path / "ties.npy")
    seg = np.array([f"t{i}" for i in np.repeat(np.arange(m // 3 + 1), 3)[:m]])
    kw = {"segments": seg, "normalize": "zscore", "residual": residual, "chunk_rows": 40}
    ref = aggregate(path, **kw).to_numpy()
    got = aggregate(path, client=client, **kw).to_numpy()
    np.testing.assert_array_equal(got, ref)
    exact_ties = sum(np.unique(col).size < col.size for col in ref.T)
    assert exact_ties == t  # the planted ties survive aggregation in every query
    np.testing.assert_array_equal(top_k_groups(got, 60), top_k_groups(ref, 60))


def test_in_memory_identity_transposed_and_written(rng, tmp_path, client):
    s = _matrix(rng, 150, 7)
    for normalize in ("zscore", "rank"):
        ref = aggregate(s.T, transpose=True, normalize=normalize, chunk_rows=20)
        got = aggregate(s.T, transpose=True, normalize=normalize, chunk_rows=20, client=client)
        _same(got.to_numpy(), ref.to_numpy())
    seg = _segments(rng, 150, 12)
    out = aggregate(s, segments=seg, out=tmp_path / "track.zarr", client=client, chunk_rows=32)
    _same(out.to_numpy(), aggregate(s, segments=seg, chunk_rows=32).to_numpy())
    assert out.manifest["kind"] == "track_scores"


def test_bad_values_raise_the_local_error(rng, tmp_path, client):
    s = _matrix(rng, 120, 5)
    s[77, 3] = np.nan
    path = save_scores(s, tmp_path / "nan.npy")
    for normalize in ("zscore", "rank"):
        with pytest.raises(DataError) as local:
            aggregate(path, normalize=normalize, chunk_rows=16)
        with pytest.raises(DataError) as dist:
            aggregate(path, normalize=normalize, chunk_rows=16, client=client)
        assert str(dist.value) == str(local.value)
        assert "row 77" in str(dist.value)


def _square(i, *, base):
    return float(base[i]) ** 2


def test_run_ordered_consumes_in_order(client):
    seen = []
    base = np.arange(12.0)
    run_ordered(client, _square, [(i,) for i in range(12)], lambda i, r: seen.append((i, r)),
                shared={"base": base})
    assert seen == [(i, float(i) ** 2) for i in range(12)]


@pytest.mark.slow
def test_worker_killed_mid_task(rng, tmp_path, client):
    s = _matrix(rng, 320, 8)
    path = save_scores(s, tmp_path / "s.npy")
    seg = _segments(rng, 320, 40)
    kw = {"segments": seg, "residual": True, "chunk_rows": 16}
    ref = aggregate(path, **kw).to_numpy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = kill_during(client, lambda: aggregate(path, client=client, **kw).to_numpy())
    _same(got, ref)


@pytest.mark.slow
def test_scattered_input_lost_with_every_worker(rng, client):
    """Both workers die while the in-memory matrix lives only on them: it is scattered again."""
    s = _matrix(rng, 200, 6)
    ref = aggregate(s, normalize="rank", chunk_rows=16).to_numpy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = kill_during(
            client, lambda: aggregate(s, normalize="rank", client=client).to_numpy(),
            kill_all=True)
    np.testing.assert_array_equal(got, ref)
