"""aria_tda._checks: argument validators and their house error messages."""

from __future__ import annotations

import numpy as np
import pytest

from aria_tda import _checks as C
from aria_tda.errors import FileFormatError, ParameterError


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
    with pytest.raises(
        ParameterError, match=r"normalize: expected one of 'zscore', 'rank', got 'z'"
    ):
        C.check_choice("normalize", "z", ("zscore", "rank"))


def test_check_int_list_sorts_and_dedups():
    assert C.check_int_list("K", [50, 20, 50], min_value=2) == [20, 50]
    with pytest.raises(ParameterError, match=r"K\[1\]"):
        C.check_int_list("K", [20, 1], min_value=2)


def test_existing_path(tmp_path):
    with pytest.raises(FileFormatError, match="no such file"):
        C.check_existing_path("scores", tmp_path / "nope.npy")
