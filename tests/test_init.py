"""The root package: lazy top-level re-exports."""

from __future__ import annotations

import pytest


def test_top_level_api_is_lazy_and_complete():
    import aria

    for name in aria.__all__:
        assert getattr(aria, name) is not None, name
    assert aria.diagnose.__module__.startswith("aria.diagnostics")
    with pytest.raises(AttributeError):
        aria.nope  # noqa: B018
