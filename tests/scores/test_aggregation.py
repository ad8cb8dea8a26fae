"""Track aggregation (Eq. track-agg): segment maps, normalisations, residual, output files."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import aria_tda.scores.normalization as N
from aria_tda.errors import DataError, FileFormatError, ParameterError
from aria_tda.manifest import read_manifest
from aria_tda.scores import aggregate, open_scores, save_scores, segment_codes
from aria_tda.scores.aggregation import aggregate_reference


def aggregate_exact(s, codes, n_tracks, method):
    """The in-memory reference, called with per-row track codes ``0..n_tracks-1``."""
    return aggregate_reference(
        s, segments=np.asarray(codes), tracks=np.arange(n_tracks), normalize=method
    ).to_numpy()


@pytest.fixture
def seg(rng):
    """Scores (M=120, T=6) and a segment->track map with 2..7 segments per track."""
    sizes = rng.integers(2, 8, size=60)
    tracks = np.repeat([f"t{i:02d}" for i in range(60)], sizes)[:120]
    m = tracks.size
    perm = rng.permutation(m)  # segments of a track need not be contiguous
    tracks = tracks[perm]
    s = rng.standard_normal((m, 6)) * rng.uniform(0.5, 20, 6) + rng.standard_normal(6)
    return s, tracks


@pytest.mark.parametrize("method", ["zscore", "rank"])
def test_matches_reference(seg, method):
    s, tracks = seg
    codes, ids = segment_codes(tracks, n_rows=len(tracks))
    ref = aggregate_exact(s, codes, ids.size, method)
    for chunk_rows in (7, 1000):
        got = aggregate(s, segments=tracks, normalize=method, chunk_rows=chunk_rows)
        assert got.shape == (ids.size, 6)
        assert got.row_ids.tolist() == ids.tolist()
        np.testing.assert_allclose(got.to_numpy(), ref, rtol=1e-10, atol=1e-12)


def test_tracks_in_order_of_first_appearance(rng):
    codes, ids = segment_codes(["b", "a", "b", "c", "a"], n_rows=5)
    assert ids.tolist() == ["b", "a", "c"]
    assert codes.tolist() == [0, 1, 0, 2, 1]
    codes, ids = segment_codes([3, 1, 3], n_rows=3)
    assert ids.tolist() == ["3", "1"]
    codes, ids = segment_codes(["b", "a", "b"], n_rows=3, tracks=["a", "b"])
    assert ids.tolist() == ["a", "b"] and codes.tolist() == [1, 0, 1]
    codes, ids = segment_codes(None, n_rows=3)
    assert ids.tolist() == ["0", "1", "2"] and codes.tolist() == [0, 1, 2]
    codes, ids = segment_codes(None, n_rows=2, row_ids=["x", "y"])
    assert ids.tolist() == ["x", "y"]


def test_identity_is_normalised_segment_matrix(rng):
    s = rng.standard_normal((40, 5))
    got = aggregate(s, normalize="zscore")
    np.testing.assert_allclose(
        got.to_numpy(), N.normalize_reference(s, method="zscore").to_numpy(), atol=1e-12
    )
    got = aggregate(s, normalize="rank")
    np.testing.assert_array_equal(
        got.to_numpy(), N.normalize_reference(s, method="rank").to_numpy()
    )


def test_csv_parquet_and_npy_maps(seg, tmp_path):
    s, tracks = seg
    m = tracks.size
    codes, ids = segment_codes(tracks, n_rows=m)
    ref = aggregate_exact(s, codes, ids.size, "zscore")
    pd.DataFrame({"track_id": tracks}).to_csv(tmp_path / "in_order.csv", index=False)
    pd.DataFrame({"track_id": tracks}).to_parquet(tmp_path / "in_order.parquet")
    np.save(tmp_path / "ids.npy", tracks)
    (tmp_path / "ids.txt").write_text("\n".join(tracks) + "\n")
    # a table in another row order, matched by row index or by segment id
    order = np.random.default_rng(1).permutation(m)
    pd.DataFrame({"row": order, "track_id": tracks[order]}).to_csv(
        tmp_path / "rows.csv", index=False
    )
    seg_ids = np.array([f"seg{i}" for i in range(m)])
    pd.DataFrame({"segment_id": seg_ids[order], "track_id": tracks[order]}).to_parquet(
        tmp_path / "segs.pq"
    )
    src_with_ids = save_scores(s, tmp_path / "s.npy", row_ids=seg_ids)
    for name in ("in_order.csv", "in_order.parquet", "ids.npy", "ids.txt", "rows.csv"):
        got = aggregate(s, segments=tmp_path / name)
        np.testing.assert_allclose(got.to_numpy(), ref, atol=1e-12, err_msg=name)
        assert got.row_ids.tolist() == ids.tolist()
    got = aggregate(src_with_ids, segments=tmp_path / "segs.pq")
    np.testing.assert_allclose(got.to_numpy(), ref, atol=1e-12)
    got = aggregate(s, segments=pd.Series(tracks))
    np.testing.assert_allclose(got.to_numpy(), ref, atol=1e-12)


def test_known_tracks_order(seg):
    s, tracks = seg
    known = sorted(set(tracks), reverse=True)
    got = aggregate(s, segments=tracks, tracks=known)
    assert got.row_ids.tolist() == known
    codes = np.array([known.index(t) for t in tracks])
    np.testing.assert_allclose(
        got.to_numpy(), aggregate_exact(s, codes, len(known), "zscore"), atol=1e-12
    )


def test_map_errors(seg, tmp_path):
    s, tracks = seg
    with pytest.raises(
        DataError, match=r"segments: expected one track id per score row \(120\), got 119 ids"
    ):
        aggregate(s, segments=tracks[:-1])
    with pytest.raises(
        DataError, match=r"track 't03' \(row \d+\) is not among the \d+ known tracks"
    ):
        aggregate(s, segments=tracks, tracks=[t for t in sorted(set(tracks)) if t != "t03"])
    with pytest.raises(DataError, match="track 'extra' has no segments"):
        aggregate(s, segments=tracks, tracks=[*sorted(set(tracks)), "extra"])
    with pytest.raises(DataError, match="tracks: expected unique track ids"):
        aggregate(s, segments=tracks, tracks=["t00", "t00"])
    bad = tracks.astype(object)
    bad[5] = ""
    with pytest.raises(DataError, match="missing track id at row 5"):
        aggregate(s, segments=bad)
    pd.DataFrame({"a": tracks, "b": tracks}).to_csv(tmp_path / "two.csv", index=False)
    with pytest.raises(DataError, match="a 'track_id' column"):
        aggregate(s, segments=tmp_path / "two.csv")
    pd.DataFrame({"row": np.zeros(120, int), "track_id": tracks}).to_csv(
        tmp_path / "rep.csv", index=False
    )
    with pytest.raises(DataError, match=r"each row 0\.\.119 exactly once"):
        aggregate(s, segments=tmp_path / "rep.csv")
    src = save_scores(s, tmp_path / "s.npy", row_ids=[f"seg{i}" for i in range(120)])
    pd.DataFrame({"segment_id": ["nope"] * 120, "track_id": tracks}).to_csv(
        tmp_path / "segs.csv", index=False
    )
    with pytest.raises(DataError, match=r"segment 'nope' .* is not a row id"):
        aggregate(src, segments=tmp_path / "segs.csv")
    with pytest.raises(FileFormatError, match="no such file"):
        aggregate(s, segments=tmp_path / "missing.csv")
    (tmp_path / "m.json").write_text("{}")
    with pytest.raises(FileFormatError, match="unsupported map format"):
        aggregate(s, segments=tmp_path / "m.json")
    with pytest.raises(ParameterError, match="residual: expected True or False"):
        aggregate(s, residual="yes")


@pytest.mark.parametrize("suffix", [".npy", ".zarr"])
@pytest.mark.parametrize("method", ["zscore", "rank"])
def test_written_to_disk_with_ids_and_manifest(seg, tmp_path, suffix, method):
    s, tracks = seg
    src = save_scores(s.astype(np.float32), tmp_path / "seg.npy", method="logra", stage="coarse")
    out = tmp_path / f"track{suffix}"
    got = aggregate(src, segments=tracks, normalize=method, out=out, chunk_rows=16)
    codes, ids = segment_codes(tracks, n_rows=tracks.size)
    ref = aggregate_exact(s.astype(np.float32), codes, ids.size, method)
    reopened = open_scores(out)
    np.testing.assert_allclose(reopened.to_numpy(), ref, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(got.to_numpy(), reopened.to_numpy())
    assert reopened.row_ids.tolist() == ids.tolist()
    m = read_manifest(out)
    assert m["kind"] == "track_scores" and m["method"] == "logra" and m["stage"] == "coarse"
    assert m["parameters"]["normalize"] == method and m["parameters"]["residual"] is False
    assert "tracks" in m["orientation"]


def test_failure_leaves_no_output(seg, tmp_path):
    s, tracks = seg
    s = s.copy()
    s[100, 2] = np.nan
    for method in ("zscore", "rank", "auto"):
        with pytest.raises(DataError, match="row 100, column 2"):
            aggregate(s, segments=tracks, normalize=method, out=tmp_path / "o.npy")
    with pytest.raises(DataError):
        aggregate(s, segments=tracks[:3], out=tmp_path / "o.zarr")
    assert list(tmp_path.iterdir()) == []


def test_residual_feeds_the_same_pipeline(seg):
    s, tracks = seg
    u, sv, vt = np.linalg.svd(s, full_matrices=False)
    res = s - sv[0] * np.outer(u[:, 0], vt[0])
    codes, ids = segment_codes(tracks, n_rows=tracks.size)
    for method in ("zscore", "rank"):
        got = aggregate(s, segments=tracks, normalize=method, residual=True, chunk_rows=9)
        np.testing.assert_allclose(
            got.to_numpy(), aggregate_exact(res, codes, ids.size, method), atol=1e-8
        )
        assert got.manifest["parameters"]["residual"] is True


def test_rank_out_of_core_equals_in_memory(seg, tmp_path, monkeypatch):
    s, tracks = seg
    path = save_scores(s, tmp_path / "s.npy")
    ref = aggregate(s, segments=tracks, normalize="rank").to_numpy()
    monkeypatch.setattr(N, "IN_MEMORY_BYTES", 0)
    monkeypatch.setattr(N, "COLUMN_BLOCK_BYTES", 8 * 120 * 4)
    got = aggregate(path, segments=tracks, normalize="rank", out=tmp_path / "t.zarr", chunk_rows=32)
    np.testing.assert_allclose(got.to_numpy(), ref, rtol=1e-12)


def test_auto_picks_rank_for_heavy_tails(rng):
    s = rng.lognormal(0, 2, size=(3000, 4)) * np.array([1, 10, 100, 1e4])
    tracks = np.repeat(np.arange(300), 10)
    got = aggregate(s, segments=tracks, normalize="auto")
    p = got.manifest["parameters"]
    assert p["normalize"] == "rank" and p["normalize_requested"] == "auto"
    assert p["median_excess_kurtosis"] > p["kurtosis_threshold"]
    codes, ids = segment_codes(tracks, n_rows=3000)
    np.testing.assert_allclose(
        got.to_numpy(), aggregate_exact(s, codes, ids.size, "rank"), rtol=1e-12
    )


def test_refuses_to_overwrite_its_input(seg, tmp_path):
    s, tracks = seg
    path = save_scores(s, tmp_path / "s.npy")
    with pytest.raises(ParameterError, match=r"got the scores input .* \(refusing to overwrite"):
        aggregate(path, segments=tracks, out=path)
    np.testing.assert_array_equal(open_scores(path).to_numpy(), s)


def test_segment_column_without_row_ids_is_a_row_index(tmp_path):
    import pandas as pd

    from aria_tda.scores import aggregate

    s = np.arange(8, dtype=float).reshape(4, 2)
    pd.DataFrame({"segment": [2, 0, 1, 3], "track_id": ["c", "a", "b", "d"]}).to_csv(
        tmp_path / "m.csv", index=False
    )
    out = aggregate(s, segments=tmp_path / "m.csv", normalize="zscore")
    assert list(out.row_ids) == ["a", "b", "c", "d"]
    z = (s - s.mean(0)) / s.std(0)
    np.testing.assert_allclose(out.to_numpy(), z)
    pd.DataFrame({"segment": ["x", "y", "z", "w"], "track_id": list("abcd")}).to_csv(
        tmp_path / "n.csv", index=False
    )
    # segment ids that are names, and no row ids to match: the table's rows go by position
    out = aggregate(s, segments=tmp_path / "n.csv", normalize="zscore")
    assert list(out.row_ids) == ["a", "b", "c", "d"]
    np.testing.assert_allclose(out.to_numpy(), z)  # score row i is the table's row i
