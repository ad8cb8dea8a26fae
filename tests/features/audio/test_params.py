"""AudioFeatureParams: the paper's defaults, registry dims, validation."""

from __future__ import annotations

import pytest

from aria_tda.errors import ParameterError
from aria_tda.features.audio import FEATURE_NAMES, AudioFeatureParams
from aria_tda.features.registry import features

# --- parameters ---------------------------------------------------------------------------


def test_params_defaults_follow_the_paper_table():
    p = AudioFeatureParams()
    assert p.sr == 48000
    assert (p.beat_bins, p.beat_range) == (16, (0.2, 2.0))
    assert (p.onset_bins, p.onset_range) == (16, (0.05, 1.0))
    assert p.n_mfcc == 13 and p.cqt_bins == 84 and p.cqt_bins_per_octave == 12
    assert (p.beat_backend, p.chord_backend) == ("librosa", "template")
    assert p.meters == (3, 4)
    assert AudioFeatureParams(beat_backend="beatnet").meters == (2, 3, 4)
    d = p.to_dict()
    assert d["beat_range"] == [0.2, 2.0] and d["beats_per_bar"] is None


def test_params_dims_match_registry():
    p = AudioFeatureParams()
    dims = {
        "beat_interval": p.beat_bins,
        "onset_interval": p.onset_bins,
        "chroma": 12,
        "tonnetz": 6,
        "chord_progression": None,
        "mfcc": 2 * p.n_mfcc,
        "cqt": 2 * p.cqt_bins,
    }
    specs = features("audio")
    assert tuple(s.name for s in specs) == FEATURE_NAMES
    assert {s.name: s.dim for s in specs} == dims


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"hop": 256}, "audio feature parameter: expected one of .*got 'hop'"),
        (
            {"beat_backend": "omnizart"},
            "beat_backend: expected one of 'librosa', 'madmom', 'beatnet'",
        ),
        ({"chord_backend": "omnizart"}, "chord_backend: expected one of"),
        ({"beat_range": (2.0, 0.2)}, r"beat_range\[1\]: expected a finite number >"),
        ({"onset_range": 0.5}, "onset_range: expected a pair"),
        ({"n_mfcc": 0}, "n_mfcc: expected an integer in"),
        ({"cqt_bins": 200}, "cqt_bins: expected a top CQT frequency below Nyquist"),
        ({"beats_per_bar": []}, "beats_per_bar: expected a non-empty list"),
        ({"silence_db": 3.0}, "silence_db"),
    ],
)
def test_params_validation(kwargs, match):
    with pytest.raises(ParameterError, match=match):
        AudioFeatureParams.from_kwargs(**kwargs)


def test_params_lists_become_tuples():
    p = AudioFeatureParams(beat_range=[0.3, 1.5], beats_per_bar=[4])
    assert p.beat_range == (0.3, 1.5) and p.beats_per_bar == (4,)
    hash(p)  # frozen and hashable
