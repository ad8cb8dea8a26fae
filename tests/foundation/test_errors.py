"""aria_tda.errors: one exception hierarchy and the house message format."""

from __future__ import annotations

import pytest

from aria_tda.errors import (
    AriaError,
    DataError,
    FileFormatError,
    MissingDependencyError,
    ParameterError,
    expected,
)


def test_expected_message_format():
    assert expected("chunk_rows", "a positive integer", -3) == (
        "chunk_rows: expected a positive integer, got -3"
    )
    assert expected("normalize", "one of 'zscore', 'rank'", "z").endswith("got 'z'")
    long = expected("x", "short", "a" * 500)
    assert long.endswith("...") and len(long.split("got ", 1)[1]) == 200


@pytest.mark.parametrize(
    ("cls", "bases"),
    [
        (ParameterError, (AriaError, ValueError)),
        (DataError, (AriaError, ValueError)),
        (FileFormatError, (DataError,)),
        (MissingDependencyError, (AriaError, ImportError)),
    ],
)
def test_hierarchy(cls, bases):
    assert all(issubclass(cls, b) for b in bases)


def test_an_array_or_tensor_received_is_named_by_kind_and_shape_not_printed():
    np = pytest.importorskip("numpy")
    msg = expected("scores", "a path", np.zeros((300, 4), dtype=np.float32))
    assert msg == "scores: expected a path, got a numpy.ndarray of shape (300, 4) and dtype float32"
    torch = pytest.importorskip("torch")
    msg = expected("scores", "a path", torch.zeros(60, 8))
    assert msg.endswith("got a torch.Tensor of shape (60, 8) and dtype torch.float32")
    assert expected("k", "an integer", np.float64(2.5)) == "k: expected an integer, got 2.5"
