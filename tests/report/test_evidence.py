"""Per-query evidence packing: exact round trip, and the packed arrays equal the results tables."""

from __future__ import annotations

import numpy as np
import pytest

from aria_tda.media.query_evidence import build_evidence, pack_arrays, unpack_arrays
from aria_tda.report.load import load_results


def test_pack_round_trip_exact(rng):
    arrays = {
        "idx": rng.integers(-1, 70000, size=(13, 7)).astype(np.int32),
        "score": rng.normal(size=(13, 7)).astype(np.float32),
        "z": np.array([[np.nan, np.inf, -0.0, 1e-30]], dtype=np.float32),
        "empty": np.zeros((0, 3), dtype=np.float32),
    }
    data, layout = pack_arrays(arrays)
    assert data.isascii()
    back = unpack_arrays(data, layout)
    for k, a in arrays.items():
        assert back[k].shape == a.shape
        np.testing.assert_array_equal(
            back[k].view(np.uint8), a.view(np.uint8)
        )  # bit-exact, NaN included
    # offsets are multiples of 4 and contiguous
    offs = [layout[k]["offset"] for k in arrays]
    assert offs == [0, 4 * 91, 8 * 91, 8 * 91 + 16]


def test_shuffle_compresses_better_than_plain(rng):
    import base64
    import gzip

    scores = np.sort(rng.normal(size=20000)).astype(np.float32)
    packed, _ = pack_arrays({"s": scores})
    plain = base64.b64encode(gzip.compress(scores.tobytes(), mtime=0))
    assert len(packed) < 0.9 * len(plain)


def test_blocks_equal_tables(results):
    path, frames = results
    data = load_results(path)
    top_n, P = 10, 3
    ev = build_evidence(data, k=300, top_n=top_n, pairs_per_channel=P)
    h = ev.header
    assert h["k"] == 300 and h["pairs_k"] == 300
    assert h["queries"]["ids"] == list(range(14))
    assert h["queries"]["meta"]["label"][3] == "generated piece 3 (Bach & Co)"
    assert [(b.setting, b.variant) for b in ev.blocks] == [
        (s, v) for s in data.settings for v in ("original", "residual")
    ]
    tracks = np.asarray(h["tracks"]["ids"])
    topk, qz, pairs = frames["topk"], frames["query_z"], frames["pairs"]
    channels = h["channels"]
    for b in ev.blocks:
        A = unpack_arrays(b.data, b.header["layout"])
        assert A["topk_idx"].shape == (14, top_n)
        for q in (0, 5, 13):
            want = (
                topk[
                    (topk.setting == b.setting) & (topk.variant == b.variant) & (topk["query"] == q)
                ]
                .sort_values("rank")
                .head(top_n)
            )
            assert list(tracks[A["topk_idx"][q]]) == list(want.track_id)
            np.testing.assert_allclose(A["topk_score"][q], want.score, rtol=1e-6)
            for c, ch in enumerate(channels):
                zz = qz[
                    (qz.setting == b.setting)
                    & (qz.variant == b.variant)
                    & (qz.K == 300)
                    & (qz["query"] == q)
                    & (qz.channel == ch)
                ].z.iloc[0]
                assert A["z"][q, c] == pytest.approx(zz, rel=1e-6)
                pw = pairs[
                    (pairs.setting == b.setting)
                    & (pairs.variant == b.variant)
                    & (pairs["query"] == q)
                    & (pairs.channel == ch)
                ]
                pw = pw.sort_values("contribution", ascending=False, kind="stable").head(P)
                assert list(tracks[A["pair_a"][q, c]]) == list(pw.track_a)
                assert list(tracks[A["pair_b"][q, c]]) == list(pw.track_b)
                np.testing.assert_allclose(A["pair_contrib"][q, c], pw.contribution, rtol=1e-6)
                assert np.all(np.diff(A["pair_contrib"][q, c]) <= 0)
            # how like the query each listed track is, beside it (the dossier's numbers)
            ia = frames["item_alignment"]
            rows = ia[(ia.setting == b.setting) & (ia.variant == b.variant) & (ia["query"] == q)]
            for r in range(top_n):
                for c, ch in enumerate(channels):
                    hit = rows[(rows["rank"] == r + 1) & (rows.channel == ch)]
                    if hit.empty:
                        assert A["like_info"][q, r, c] == -1
                        continue
                    assert hit.track_id.iloc[0] == tracks[A["topk_idx"][q, r]]
                    assert A["like_pct"][q, r, c] == pytest.approx(hit.percentile.iloc[0],
                                                                   rel=1e-6)
                    assert A["like_info"][q, r, c] == int(bool(hit.informative.iloc[0]))
        if b.header["verdict"] == "collapsed" and b.variant == "original":
            assert (A["topk_idx"] == A["topk_idx"][0]).all()  # the fixed group
    assert ev.blocks[2].header["verdict"] == "collapsed"


def test_missing_queries_and_fewer_tracks_are_padded(results):
    path, frames = results
    from aria_tda.results import write_table

    topk = frames["topk"]
    # query 4 gets only 3 tracks in one block; query 7 has none there
    keep = ~(
        (topk.setting == "MERT")
        & (topk.variant == "original")
        & (((topk["query"] == 4) & (topk["rank"] > 3)) | (topk["query"] == 7))
    )
    write_table(path, "topk", topk[keep])
    ev = build_evidence(load_results(path), k=300, top_n=5, pairs_per_channel=0)
    b = next(b for b in ev.blocks if (b.setting, b.variant) == ("MERT", "original"))
    A = unpack_arrays(b.data, b.header["layout"])
    assert "pair_a" not in A and ev.header["pairs_k"] is None
    assert (A["topk_idx"][4, :3] >= 0).all() and (A["topk_idx"][4, 3:] == -1).all()
    assert (A["topk_idx"][7] == -1).all() and np.isnan(A["topk_score"][7]).all()


def test_evidence_k_falls_back(results):
    path, _ = results
    ev = build_evidence(load_results(path), k=50, top_n=5)
    assert ev.header["k"] == 50 and ev.header["pairs_k"] == 300  # pairs exist at K = 300 only
