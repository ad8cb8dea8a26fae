"""Output paths of score writers: the wrong kind of existing path is refused, untouched."""

from __future__ import annotations

import numpy as np
import pytest

from aria_tda.errors import FileFormatError, ParameterError
from aria_tda.scores import aggregate, open_scores, save_scores
from aria_tda.scores.writers import check_output_path


def test_existing_directory_where_a_npy_file_goes(tmp_path):
    (tmp_path / "out.npy").mkdir()
    (tmp_path / "out.npy" / "keep.txt").write_text("mine")
    with pytest.raises(FileFormatError, match="is an existing directory; expected a path for a"):
        save_scores(np.ones((3, 2)), tmp_path / "out.npy")
    with pytest.raises(FileFormatError, match="existing directory"):
        aggregate(np.ones((3, 2)) + np.eye(3, 2), out=tmp_path / "out.npy")
    assert (tmp_path / "out.npy" / "keep.txt").read_text() == "mine"


def test_existing_file_or_foreign_directory_where_a_zarr_store_goes(tmp_path):
    (tmp_path / "f.zarr").write_text("not a store")
    with pytest.raises(FileFormatError, match="is an existing file; expected a path for a zarr"):
        check_output_path("out", tmp_path / "f.zarr")
    (tmp_path / "d.zarr").mkdir()
    (tmp_path / "d.zarr" / "notes.txt").write_text("mine")
    with pytest.raises(FileFormatError, match="not a zarr store; refusing to replace it"):
        save_scores(np.ones((3, 2)), tmp_path / "d.zarr")
    assert (tmp_path / "d.zarr" / "notes.txt").read_text() == "mine"
    assert (tmp_path / "f.zarr").read_text() == "not a store"


def test_existing_matrices_are_replaced(rng, tmp_path):
    for suffix in (".npy", ".zarr"):
        path = save_scores(np.ones((4, 2)), tmp_path / f"s{suffix}")
        s = rng.standard_normal((5, 3))
        save_scores(s, path)
        np.testing.assert_array_equal(open_scores(path).to_numpy(), s)
    (tmp_path / "empty.zarr").mkdir()
    save_scores(np.ones((2, 2)), tmp_path / "empty.zarr")  # an empty directory is fine


def test_suffix_and_type(tmp_path):
    with pytest.raises(ParameterError, match=r"out: expected a path ending in \.npy or \.zarr"):
        check_output_path("out", tmp_path)
    with pytest.raises(ParameterError, match="out: expected a path"):
        check_output_path("out", 3)
