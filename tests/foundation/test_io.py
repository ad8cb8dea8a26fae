"""aria_tda._io: atomic writes of files and folders, JSON with numpy values."""

from __future__ import annotations

import numpy as np
import pytest

from aria_tda._io import atomic_path, read_json, write_json


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


def test_json_writer_handles_numpy(tmp_path):
    write_json(tmp_path / "a.json", {"x": np.float32(1.5), "y": np.arange(3)})
    assert read_json(tmp_path / "a.json") == {"x": 1.5, "y": [0, 1, 2]}


def test_atomic_path_never_swaps_a_folder_for_a_file(tmp_path):
    import pytest

    from aria_tda._io import atomic_path
    from aria_tda.errors import ParameterError

    keep = tmp_path / "keep"
    keep.mkdir()
    (keep / "precious.txt").write_text("mine")
    with pytest.raises(ParameterError, match="existing folder"):
        with atomic_path(keep) as tmp:
            tmp.write_text("a file")
    assert (keep / "precious.txt").read_text() == "mine"
    target = tmp_path / "file.txt"
    target.write_text("mine")
    with pytest.raises(ParameterError, match="existing file"):
        with atomic_path(target) as tmp:
            tmp.mkdir()
    assert target.read_text() == "mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file.txt", "keep"]
