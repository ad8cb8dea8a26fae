"""aria_tda.features.registry: channels and feature dimensions of each modality."""

from __future__ import annotations

import pytest

from aria_tda.errors import ParameterError
from aria_tda.features import registry


def test_registry_matches_paper_dimensions():
    sym = registry.channels("symbolic")
    assert list(sym) == ["melody", "harmony", "rhythm", "dynamic", "texture"]
    assert sum(len(v) for v in sym.values()) == 12
    aud = registry.channels("audio")
    assert list(aud) == ["rhythm", "harmony", "timbre"]
    dims = {s.name: s.dim for s in registry.features("audio")}
    assert dims == {
        "beat_interval": 16,
        "onset_interval": 16,
        "chroma": 12,
        "tonnetz": 6,
        "chord_progression": None,
        "mfcc": 26,
        "cqt": 168,
    }
    with pytest.raises(ParameterError, match="modality"):
        registry.features("video")
