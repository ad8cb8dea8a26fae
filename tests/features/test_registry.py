"""aria_tda.features.registry: channels and feature dimensions of each modality."""

from __future__ import annotations

import pytest

from aria_tda.errors import ParameterError
from aria_tda.features import registry


def test_registry_matches_paper_dimensions():
    sym = registry.channels("symbolic")
    assert list(sym) == ["melody", "harmony", "rhythm", "dynamic", "texture"]
    assert sum(len(v) for v in sym.values()) == 15  # the paper's 12 + 3 pattern features
    paper = registry.channels("symbolic", feature_set="paper")
    assert list(paper) == list(sym) and sum(len(v) for v in paper.values()) == 12
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


PAPER_SYMBOLIC = (
    "melodic_interval",
    "pitch_class",
    "vertical_interval",
    "note_density",
    "mean_rhythmic_value",
    "rhythmic_value",
    "velocity_change",
    "velocity_std",
    "dynamic_range",
    "mean_polyphony",
    "polyphony_std",
    "pitch_range",
)
PATTERN = {"interval_transitions": 49, "voice_transitions": 16, "voice_periodicity": 8}


def test_feature_sets():
    assert registry.FEATURE_SETS == ("extended", "paper")
    paper = registry.features("symbolic", feature_set="paper")
    assert tuple(s.name for s in paper) == PAPER_SYMBOLIC
    assert all(s.feature_set == "paper" for s in paper)
    ext = registry.features("symbolic")  # the default set
    assert ext == registry.features("symbolic", feature_set="extended")
    assert tuple(s.name for s in ext) == PAPER_SYMBOLIC + tuple(PATTERN)
    for name, dim in PATTERN.items():
        spec = registry.feature_spec("symbolic", name)
        assert (spec.dim, spec.feature_set, spec.similarity, spec.extractor, spec.kind) == (
            dim, "extended", "std_euclidean", "symbolic", "vector")
        assert spec.source == "ARIA pattern feature" and spec.description
    assert [s.name for s in registry.features("symbolic", "melody")] == [
        "melodic_interval", "interval_transitions"]
    assert [s.name for s in registry.channels("symbolic", feature_set="paper")["texture"]] == [
        "mean_polyphony", "polyphony_std", "pitch_range"]
    assert registry.channels("symbolic")["texture"][-2:] == tuple(
        registry.feature_spec("symbolic", n) for n in ("voice_transitions", "voice_periodicity"))
    for fs in registry.FEATURE_SETS:
        assert registry.channel_names("symbolic", feature_set=fs) == registry.channel_names(
            "symbolic")
        # the audio features are the paper's in every set
        assert registry.features("audio", feature_set=fs) == registry.features("audio")
    assert len(registry.features("audio", feature_set="paper")) == 7


@pytest.mark.parametrize("call", [registry.features, registry.channels, registry.channel_names])
def test_feature_set_is_validated(call):
    with pytest.raises(ParameterError, match=r"feature_set: expected one of 'extended', 'paper'"):
        call("symbolic", feature_set="jsymbolic")
    with pytest.raises(ParameterError, match="feature_set"):
        call("symbolic", feature_set=None)
