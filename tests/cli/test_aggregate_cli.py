"""``aria-tda aggregate``: S_track written with ids and manifest; errors leave nothing behind."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from aria_tda.cli import main
from aria_tda.manifest import read_manifest
from aria_tda.scores import open_scores, save_scores, segment_codes
from aria_tda.scores.aggregation import aggregate_reference


def aggregate_exact(s, codes, n_tracks, method):
    """The in-memory reference, called with per-row track codes ``0..n_tracks-1``."""
    return aggregate_reference(
        s, segments=np.asarray(codes), tracks=np.arange(n_tracks), normalize=method
    ).to_numpy()


@pytest.fixture
def inputs(rng, tmp_path):
    tracks = np.repeat([f"song{i}" for i in range(30)], 4)
    s = rng.standard_normal((120, 5)) * 3 + 1
    path = save_scores(s, tmp_path / "seg.npy")
    pd.DataFrame({"track_id": tracks}).to_csv(tmp_path / "map.csv", index=False)
    return s, tracks, path, tmp_path / "map.csv"


@pytest.mark.parametrize("method", ["zscore", "rank"])
@pytest.mark.parametrize("suffix", [".npy", ".zarr"])
def test_writes_s_track(inputs, tmp_path, capsys, method, suffix):
    s, tracks, path, seg_map = inputs
    out = tmp_path / f"track{suffix}"
    rc = main(
        [
            "aggregate",
            str(path),
            "--segments",
            str(seg_map),
            "--normalize",
            method,
            "--out",
            str(out),
            "--json",
        ]
    )
    assert rc == 0
    rec = json.loads(capsys.readouterr().out)
    assert rec["n_tracks"] == 30 and rec["normalize"] == method
    got = open_scores(out)
    codes, ids = segment_codes(tracks, n_rows=120)
    np.testing.assert_allclose(got.to_numpy(), aggregate_exact(s, codes, 30, method), atol=1e-10)
    assert got.row_ids.tolist() == ids.tolist()
    assert read_manifest(out)["parameters"]["normalize"] == method


def test_auto_residual_identity_and_tracks(inputs, tmp_path, capsys):
    _, tracks, path, seg_map = inputs
    assert (
        main(
            [
                "aggregate",
                str(path),
                "--normalize",
                "auto",
                "--residual",
                "--out",
                str(tmp_path / "id.npy"),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "auto: median excess kurtosis" in out and "rank-1 residual" in out
    assert open_scores(tmp_path / "id.npy").shape == (120, 5)
    known = sorted(set(tracks), reverse=True)
    (tmp_path / "tracks.txt").write_text("\n".join(known) + "\n")
    assert (
        main(
            [
                "aggregate",
                str(path),
                "--segments",
                str(seg_map),
                "--tracks",
                str(tmp_path / "tracks.txt"),
                "--out",
                str(tmp_path / "t.npy"),
            ]
        )
        == 0
    )
    assert open_scores(tmp_path / "t.npy").row_ids.tolist() == known


def test_errors_leave_no_output(inputs, tmp_path, capsys):
    s, tracks, path, seg_map = inputs
    pd.DataFrame({"track_id": tracks[:-1]}).to_csv(tmp_path / "short.csv", index=False)
    s_bad = s.copy()
    s_bad[7, 3] = np.inf
    bad = save_scores(s_bad, tmp_path / "bad.npy")
    cases = [
        (["--segments", str(tmp_path / "short.csv")], "one track id per score row (120), got 119"),
        (["--segments", str(tmp_path / "none.csv")], "no such file"),
        (["--segments", str(seg_map), "--normalize", "rank"], None),  # bad scores below
    ]
    for extra, message in cases:
        src = bad if message is None else path
        out = tmp_path / "out.npy"
        assert main(["aggregate", str(src), *extra, "--out", str(out)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("aria-tda aggregate: error:")
        assert (message or "row 7, column 3") in err[0]
        assert not out.exists()
        assert not list(tmp_path.glob(".out.npy*"))
    assert main(["aggregate", str(path), "--out", str(tmp_path / "x.h5")]) == 2
    assert "out: expected a path ending in .npy or .zarr" in capsys.readouterr().err


def test_looks_transposed_and_the_transpose_flag(inputs, tmp_path, capsys):
    s, tracks, _, seg_map = inputs
    stored = save_scores(np.ascontiguousarray(s.T), tmp_path / "query_by_train.npy")
    out = tmp_path / "t.npy"
    assert main(["aggregate", str(stored), "--segments", str(seg_map), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "looks transposed (5 × 120); pass --transpose" in err[0]
    assert not out.exists()
    args = ["aggregate", str(stored), "--segments", str(seg_map), "--out", str(out)]
    assert main([*args, "--transpose"]) == 0
    codes, _ = segment_codes(tracks, n_rows=120)
    got = open_scores(out).to_numpy()
    np.testing.assert_allclose(got, aggregate_exact(s, codes, 30, "zscore"), atol=1e-10)


@pytest.mark.parametrize("kind", ["npy_dir", "zarr_file", "foreign_dir", "plain_dir"])
def test_out_of_the_wrong_kind_is_one_line(inputs, tmp_path, capsys, kind):
    _, _, path, seg_map = inputs
    if kind == "npy_dir":
        out = tmp_path / "o.npy"
        out.mkdir()
    elif kind == "zarr_file":
        out = tmp_path / "o.zarr"
        out.write_text("x")
    elif kind == "foreign_dir":
        out = tmp_path / "o.zarr"
        out.mkdir()
        (out / "keep.txt").write_text("x")
    else:
        out = tmp_path / "results"
        out.mkdir()
    before = sorted(p.name for p in tmp_path.rglob("*"))
    assert main(["aggregate", str(path), "--segments", str(seg_map), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("aria-tda aggregate: error:")
    assert str(out) in err[0]
    assert sorted(p.name for p in tmp_path.rglob("*")) == before
