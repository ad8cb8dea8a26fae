r"""Evidence channels: channel → features → extractor + similarity, in one place.

The homogeneity analysis reads this registry; adding a feature is one :class:`FeatureSpec`
entry here (plus its extractor). Channel sets follow the paper's appendix tables
"Feature extraction parameters" (symbolic: melody, harmony, rhythm, dynamic, texture;
audio: rhythm, harmony, timbre).

Feature sets
------------
:data:`FEATURE_SETS` names which features a channel reads (``feature_set=`` of
:func:`features`, :func:`channels`, :func:`channel_names`):

``"extended"`` (the default)
    the paper's features plus ARIA's *pattern* features, which see the order of events that a
    distribution cannot: ``interval_transitions`` (melody), ``voice_transitions`` and
    ``voice_periodicity`` (texture). A texture whose onsets cycle through 1, 1, 4 notes has the
    polyphony mean and SD of many textures that do not; its voice transitions differ.
``"paper"``
    exactly the paper's 12 symbolic and 7 audio features (reproduces the paper).

The extractors always compute every feature (the extended set), so a store holds them all;
a set only chooses what a channel reads.

Conventions
-----------
- ``name`` is the column name in the feature store.
- ``kind`` is ``"vector"`` (fixed width ``dim``; scalars have ``dim == 1``) or ``"sequence"``
  (variable-length integer sequence, e.g. chord root motions).
- ``similarity`` names a function in :mod:`aria_tda.similarity`:
  ``"std_euclidean"`` — :math:`\mathrm{sim}(a,b) = 1/(1+\lVert z_a - z_b\rVert_2)` with
  per-dimension scale fixed once per corpus; ``"chord_lcs"`` — normalised LCS of root-motion
  sequences.
- ``extractor`` names the extractor family that fills the feature (``"symbolic"``, ``"audio"``).
- ``feature_set`` is the set that introduced the feature (``"paper"`` or ``"extended"``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from aria_tda.errors import ParameterError, expected

__all__ = [
    "FEATURE_SETS",
    "MODALITIES",
    "FeatureSpec",
    "channel_names",
    "channels",
    "feature_spec",
    "features",
    "modality_phrase",
]


@dataclass(frozen=True)
class FeatureSpec:
    """One feature of an evidence channel."""

    name: str
    channel: str
    modality: Literal["symbolic", "audio"]
    kind: Literal["vector", "sequence"]
    dim: int | None
    similarity: Literal["std_euclidean", "chord_lcs"]
    extractor: str
    description: str
    source: str = ""  # e.g. the jSymbolic 2.2 code or the librosa function
    feature_set: Literal["paper", "extended"] = "paper"  # the set that introduced it


#: Feature sets, the default first: "extended" = "paper" + ARIA's pattern features.
FEATURE_SETS = ("extended", "paper")
#: Which introducing sets each feature set reads.
_SET_MEMBERS: Mapping[str, tuple[str, ...]] = {
    "extended": ("paper", "extended"),
    "paper": ("paper",),
}


def _sym(
    name: str,
    channel: str,
    dim: int,
    description: str,
    source: str,
    feature_set: Literal["paper", "extended"] = "paper",
) -> FeatureSpec:
    return FeatureSpec(
        name,
        channel,
        "symbolic",
        "vector",
        dim,
        "std_euclidean",
        "symbolic",
        description,
        source,
        feature_set,
    )


def _aud(
    name: str,
    channel: str,
    dim: int | None,
    description: str,
    source: str,
    *,
    sequence: bool = False,
) -> FeatureSpec:
    return FeatureSpec(
        name,
        channel,
        "audio",
        "sequence" if sequence else "vector",
        dim,
        "chord_lcs" if sequence else "std_euclidean",
        "audio",
        description,
        source,
    )


_SYMBOLIC = (
    _sym(
        "melodic_interval",
        "melody",
        25,
        "melodic-interval histogram per voice, signed bins -12..+12 semitones "
        "(larger leaps in the end bins)",
        "M-1 (paper form)",
    ),
    _sym(
        "pitch_class",
        "harmony",
        12,
        "pitch-class histogram, L1-normalised, rotated so the most common class is bin 0",
        "P-2",
    ),
    _sym(
        "vertical_interval",
        "harmony",
        12,
        "wrapped vertical-interval histogram (S_p + S_q per pitch pair) on a 50 Hz grid",
        "C-2 (paper form)",
    ),
    _sym(
        "note_density", "rhythm", 1, "note onsets per second of the segment (0 under 1 s)", "RT-5"
    ),
    _sym(
        "mean_rhythmic_value", "rhythm", 1, "mean snapped rhythmic value in quarter notes", "R-25"
    ),
    _sym(
        "rhythmic_value",
        "rhythm",
        11,
        "rhythmic-value histogram, 32nd to double-whole",
        "R-13 (paper form)",
    ),
    _sym(
        "velocity_change",
        "dynamic",
        1,
        "mean |delta loudness| between successive onsets on one MIDI channel",
        "D-4",
    ),
    _sym("velocity_std", "dynamic", 1, "sample SD of loudness (velocity x CC7 volume)", "D-2"),
    _sym("dynamic_range", "dynamic", 1, "max - min loudness", "D-1"),
    _sym(
        "mean_polyphony",
        "texture",
        1,
        "mean number of distinct sounding pitches over sounding frames (50 Hz grid)",
        "C-6 (paper form)",
    ),
    _sym(
        "polyphony_std",
        "texture",
        1,
        "sample SD of the same per-frame counts (50 Hz grid)",
        "C-7 (paper form)",
    ),
    _sym(
        "pitch_range", "texture", 1, "highest - lowest pitch in semitones (drums excluded)", "P-8"
    ),
    # ---- ARIA's pattern features (feature set "extended"): onset groups = the pitched notes
    # that start in the segment, grouped by identical onset, in time order
    _sym(
        "interval_transitions",
        "melody",
        49,
        "top-voice interval-class transitions: the highest pitch of each onset group, its "
        "successive intervals in 7 classes (down >=5, 3-4, 1-2, unison, up 1-2, 3-4, >=5 "
        "semitones), histogram of consecutive class pairs (7 x 7, row-major), L1-normalised",
        "ARIA pattern feature",
        "extended",
    ),
    _sym(
        "voice_transitions",
        "texture",
        16,
        "onset-group size transitions: distinct pitches per onset group capped at 4 "
        "(1, 2, 3, 4+), histogram of consecutive size pairs (4 x 4, row-major), L1-normalised",
        "ARIA pattern feature",
        "extended",
    ),
    _sym(
        "voice_periodicity",
        "texture",
        8,
        "normalised autocorrelation of the capped onset-group sizes at lags 1..8 "
        "(0 where undefined)",
        "ARIA pattern feature",
        "extended",
    ),
)

_AUDIO = (
    _aud(
        "beat_interval",
        "rhythm",
        16,
        "beat-interval histogram, 16 bins in [0.2, 2.0] s",
        "joint beat/downbeat tracker",
    ),
    _aud(
        "onset_interval",
        "rhythm",
        16,
        "onset-interval histogram, 16 bins in [0.05, 1.0] s",
        "librosa.onset.onset_detect",
    ),
    _aud("chroma", "harmony", 12, "chroma_cqt, 12-bin mean", "librosa.feature.chroma_cqt"),
    _aud("tonnetz", "harmony", 6, "tonnetz from the chroma, mean", "librosa.feature.tonnetz"),
    _aud(
        "chord_progression",
        "harmony",
        None,
        "chord root-motion intervals mod 12",
        "offline chord recogniser",
        sequence=True,
    ),
    _aud("mfcc", "timbre", 26, "MFCC (13) mean || std", "librosa.feature.mfcc"),
    _aud("cqt", "timbre", 168, "CQT (84 bins, dB) mean || std", "librosa.cqt"),
)

_REGISTRY: Mapping[str, tuple[FeatureSpec, ...]] = {"symbolic": _SYMBOLIC, "audio": _AUDIO}
MODALITIES = tuple(_REGISTRY)


def _check_modality(modality: str) -> tuple[FeatureSpec, ...]:
    if modality not in _REGISTRY:
        raise ParameterError(
            expected("modality", "one of " + ", ".join(map(repr, MODALITIES)), modality)
        )
    return _REGISTRY[modality]


def _in_set(modality: str, feature_set: str) -> tuple[FeatureSpec, ...]:
    specs = _check_modality(modality)
    if not isinstance(feature_set, str) or feature_set not in _SET_MEMBERS:
        raise ParameterError(
            expected("feature_set", "one of " + ", ".join(map(repr, FEATURE_SETS)), feature_set)
        )
    members = _SET_MEMBERS[feature_set]
    return tuple(s for s in specs if s.feature_set in members)


def features(
    modality: str, channel: str | None = None, *, feature_set: str = "extended"
) -> tuple[FeatureSpec, ...]:
    """The features of ``modality`` (optionally of one ``channel``), in registry order.

    Parameters
    ----------
    modality : {"symbolic", "audio"}
        Which registry.
    channel : str, optional
        Only this channel's features.
    feature_set : {"extended", "paper"}
        Which set (:data:`FEATURE_SETS`): ``"extended"`` (default, every feature) or
        ``"paper"`` (the paper's 12 symbolic / 7 audio features).
    """
    specs = _in_set(modality, feature_set)
    if channel is None:
        return specs
    out = tuple(s for s in specs if s.channel == channel)
    if not out:
        known = channel_names(modality, feature_set=feature_set)
        raise ParameterError(expected("channel", "one of " + ", ".join(map(repr, known)), channel))
    return out


def channel_names(modality: str, *, feature_set: str = "extended") -> tuple[str, ...]:
    """Channel names of ``modality`` in registry order.

    Parameters
    ----------
    modality : {"symbolic", "audio"}
        Which registry.
    feature_set : {"extended", "paper"}
        Which set (:data:`FEATURE_SETS`); both have the same channels.
    """
    return tuple(dict.fromkeys(s.channel for s in _in_set(modality, feature_set)))


def channels(modality: str, *, feature_set: str = "extended") -> dict[str, tuple[FeatureSpec, ...]]:
    """Mapping channel → its feature specs, in registry order.

    Parameters
    ----------
    modality : {"symbolic", "audio"}
        Which registry.
    feature_set : {"extended", "paper"}
        Which set (:data:`FEATURE_SETS`): ``"extended"`` (default) or ``"paper"``.
    """
    return {
        c: features(modality, c, feature_set=feature_set)
        for c in channel_names(modality, feature_set=feature_set)
    }


def feature_spec(modality: str, name: str) -> FeatureSpec:
    """The spec of feature ``name`` (any feature set; its ``feature_set`` says which).

    Parameters
    ----------
    modality : {"symbolic", "audio"}
        Which registry.
    name : str
        A feature name.
    """
    for s in _check_modality(modality):
        if s.name == name:
            return s
    raise ParameterError(expected("feature", modality_phrase(modality, "feature name"), name))


def modality_phrase(modality: str, noun: str) -> str:
    """``"an audio store"``, ``"a symbolic store"``: the modality with the right article.

    Parameters
    ----------
    modality : str
        ``"symbolic"``, ``"audio"`` (or any word).
    noun : str
        What follows the modality (``"store"``, ``"feature store"``, ...).
    """
    article = "an" if str(modality)[:1].lower() in "aeiou" and str(modality) else "a"
    return f"{article} {modality} {noun}"
