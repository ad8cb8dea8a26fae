"""Tests of the shared plumbing: checks, atomic writes, manifests, stages, results schema, CLI."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from aria import _checks as C
from aria._io import atomic_path, read_json, write_json
from aria._stages import Stage
from aria.cli import main
from aria.errors import DataError, FileFormatError, ManifestMismatchError, ParameterError
from aria.features import registry
from aria.manifest import check_manifest, make_manifest, read_manifest, write_manifest
from aria.results import TABLES, read_results_meta, read_table, write_results_meta, write_table


def test_check_int_messages():
    assert C.check_int("k", np.int64(3), min_value=1) == 3
    with pytest.raises(ParameterError, match=r"chunk_rows: expected an integer >= 1, got -3"):
        C.check_int("chunk_rows", -3, min_value=1)
    with pytest.raises(ParameterError, match="got True"):
        C.check_int("k", True)


def test_check_float_and_choice():
    assert C.check_float("lam", 0.5, min_value=0) == 0.5
    with pytest.raises(ParameterError, match=r"lam: expected a finite number in \(0, 1\]"):
        C.check_float("lam", 0.0, min_value=0, max_value=1, min_inclusive=False)
    with pytest.raises(ParameterError, match=r"normalize: expected one of 'zscore', 'rank', got 'z'"):
        C.check_choice("normalize", "z", ("zscore", "rank"))


def test_check_int_list_sorts_and_dedups():
    assert C.check_int_list("K", [50, 20, 50], min_value=2) == [20, 50]
    with pytest.raises(ParameterError, match=r"K\[1\]"):
        C.check_int_list("K", [20, 1], min_value=2)


def test_existing_path(tmp_path):
    with pytest.raises(FileFormatError, match="no such file"):
        C.check_existing_path("scores", tmp_path / "nope.npy")


def test_atomic_path_leaves_nothing_on_error(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("old")
    with pytest.raises(RuntimeError), atomic_path(target) as tmp:
        tmp.write_text("half")
        raise RuntimeError("boom")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]


def test_atomic_path_replaces_directory(tmp_path):
    target = tmp_path / "store.zarr"
    target.mkdir()
    (target / "a").write_text("1")
    with atomic_path(target) as tmp:
        tmp.mkdir()
        (tmp / "b").write_text("2")
    assert sorted(p.name for p in target.iterdir()) == ["b"]
    assert len(list(tmp_path.iterdir())) == 1


def test_manifest_roundtrip_and_mismatch(tmp_path):
    art = tmp_path / "s.npy"
    np.save(art, np.zeros((3, 2)))
    write_manifest(art, make_manifest("scores", shape=[3, 2], parameters={"proj_dim": 512}))
    assert read_manifest(art)["shape"] == [3, 2]
    check_manifest(art, {"parameters": {"proj_dim": 512}})
    with pytest.raises(ManifestMismatchError, match=r"parameters.proj_dim: stored 512, asked 4096"):
        check_manifest(art, {"parameters": {"proj_dim": 4096}})


def test_stage_reuse_and_invalidation(tmp_path):
    st = Stage(tmp_path, "train", {"seed": 1})
    assert not st.is_complete()
    st.begin()
    assert not st.is_complete()  # running, not complete
    st.complete(loss=0.5)
    assert Stage(tmp_path, "train", {"seed": 1}).is_complete()
    other = Stage(tmp_path, "train", {"seed": 2})
    assert not other.is_complete()
    assert "seed" in other.stale_reason()
    assert st.summary() == {"loss": 0.5}


def test_results_tables_roundtrip(tmp_path):
    write_results_meta(tmp_path, {"study": {"B": 200}, "settings": []})
    assert read_results_meta(tmp_path)["study"]["B"] == 200
    df = pd.DataFrame({c: [1] for c in TABLES["homogeneity"].columns})
    write_table(tmp_path, "homogeneity", df)
    assert read_table(tmp_path, "homogeneity").shape == (1, len(TABLES["homogeneity"].columns))
    assert read_table(tmp_path, "lds") is None
    with pytest.raises(DataError, match="missing required column"):
        write_table(tmp_path, "homogeneity", df.drop(columns=["zbar"]))


def test_not_a_results_dir(tmp_path):
    with pytest.raises(FileFormatError, match="not an ARIA results folder"):
        read_results_meta(tmp_path)


def test_registry_matches_paper_dimensions():
    sym = registry.channels("symbolic")
    assert list(sym) == ["melody", "harmony", "rhythm", "dynamic", "texture"]
    assert sum(len(v) for v in sym.values()) == 12
    aud = registry.channels("audio")
    assert list(aud) == ["rhythm", "harmony", "timbre"]
    dims = {s.name: s.dim for s in registry.features("audio")}
    assert dims == {"beat_interval": 16, "onset_interval": 16, "chroma": 12, "tonnetz": 6,
                    "chord_progression": None, "mfcc": 26, "cqt": 168}
    with pytest.raises(ParameterError, match="modality"):
        registry.features("video")


def test_json_writer_handles_numpy(tmp_path):
    write_json(tmp_path / "a.json", {"x": np.float32(1.5), "y": np.arange(3)})
    assert read_json(tmp_path / "a.json") == {"x": 1.5, "y": [0, 1, 2]}


def test_cli_help_and_version():
    out = subprocess.run([sys.executable, "-m", "aria.cli", "--version"], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.startswith("aria ")
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0


def test_read_table_columns_and_filters(tmp_path):
    write_results_meta(tmp_path, {"settings": []})
    topk = pd.DataFrame({"setting": "a", "variant": "original", "query": np.repeat([0, 1], 5),
                         "rank": np.tile(np.arange(1, 6), 2), "track_id": "t", "score": 1.0})
    write_table(tmp_path, "topk", topk)
    got = read_table(tmp_path, "topk", columns=["query", "rank"], filters=[("rank", "<=", 2)])
    assert list(got.columns) == ["query", "rank"] and len(got) == 4
    hom = pd.DataFrame({c: [1, 2] for c in TABLES["homogeneity"].columns})
    write_table(tmp_path, "homogeneity", hom)
    assert len(read_table(tmp_path, "homogeneity", filters=[("K", "in", [2])])) == 1


def test_top_level_api_is_lazy_and_complete():
    import aria

    for name in aria.__all__:
        assert getattr(aria, name) is not None, name
    assert aria.diagnose.__module__ == "aria.diagnostics"
    with pytest.raises(AttributeError):
        aria.nope  # noqa: B018
