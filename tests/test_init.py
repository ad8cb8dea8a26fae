"""The root package: lazy top-level re-exports."""

from __future__ import annotations

import pytest


def test_top_level_api_is_lazy_and_complete():
    import aria_tda

    for name in aria_tda.__all__:
        assert getattr(aria_tda, name) is not None, name
    assert aria_tda.diagnose.__module__.startswith("aria_tda.diagnostics")
    with pytest.raises(AttributeError):
        aria_tda.nope  # noqa: B018
