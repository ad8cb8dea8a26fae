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
