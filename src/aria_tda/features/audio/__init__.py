r"""Audio evidence channels: rhythm, harmony, timbre (paper §3.3, appendix table
"Feature extraction parameters for the three evidence channels (audio at 48 kHz mono)").

Features (names as in :mod:`aria_tda.features.registry`)
----------------------------------------------------
=================== ======= ===============================================================
feature             dim     definition
=================== ======= ===============================================================
beat_interval       16      histogram of successive beat intervals, 16 bins in [0.2, 2.0] s,
                            beats from a joint beat/downbeat tracker (``beat_backend``)
onset_interval      16      histogram of successive onset intervals, 16 bins in
                            [0.05, 1.0] s, ``librosa.onset.onset_detect``
chroma              12      frame mean of ``librosa.feature.chroma_cqt`` (frames max-normalised)
tonnetz             6       frame mean of ``librosa.feature.tonnetz(chroma=chroma)``
chord_progression   seq     root-motion intervals mod 12 (values 1..11) of the chords found
                            by ``chord_backend``
                            (:func:`~aria_tda.features.audio.chords.root_motions`)
mfcc                26      ``librosa.feature.mfcc`` (13 coefficients): frame mean ‖ std
cqt                 168     ``amplitude_to_db(|librosa.cqt|)`` (84 bins from C1, 12/octave,
                            ref 1.0, top_db 80): frame mean ‖ std
=================== ======= ===============================================================

Histograms sum to 1, or are all zeros when no interval falls in their range
(:func:`~aria_tda.features.audio.rhythm.interval_histogram`). Standard deviations are population
SDs (``ddof=0``). All spectral features use one frame grid: ``hop_length`` (512) at ``sr``
(48 kHz), ``n_fft`` 2048, centred frames; the log-mel spectrogram is computed once and shared by
the onset envelope and the MFCCs (the result equals the separate librosa calls exactly).

Backends
--------
``beat_backend``: ``"librosa"`` (default; ``beat_track`` + the documented downbeat estimate of
:mod:`~aria_tda.features.audio.rhythm`; ~0.1 s per 30 s clip), ``"madmom"`` (RNN + DBN downbeat
tracker; ~3.5 s per clip) and ``"beatnet"`` (the paper's BeatNet, offline DBN mode; needs
``pip install --no-deps BeatNet==1.1.3``, see :mod:`~aria_tda.features.audio.beatnet`).
``chord_backend``: ``"template"`` (default; maj/min/N template matching + Viterbi on treble
and bass chromas folded from the timbre CQT, :mod:`~aria_tda.features.audio.chords`; ~0.05 s),
``"madmom"`` (DeepChroma + CRF) and ``"madmom-cnn"`` (CNN + CRF, several seconds per clip).
The paper's Omnizart ``chord_v1``
cannot run offline (its weights are not in its package) and is not offered. A backend whose
package is missing raises :class:`~aria_tda.errors.MissingDependencyError` naming what to install.

Input checks
------------
Audio is converted to mono (channel mean; 2-D input is channel-first ``(channels, n)``) and
resampled to ``sr`` (soxr). Empty, too short (< ``min_duration``), non-finite or silent
(peak below ``silence_db`` dBFS) audio raises :class:`~aria_tda.errors.DataError`; an unreadable
file raises :class:`~aria_tda.errors.FileFormatError` (a ``DataError``), so a batch extractor can
record it and go on.

Package layout
--------------
- :mod:`~aria_tda.features.audio.params`: :class:`AudioFeatureParams`, backends, loading, checks;
- :mod:`~aria_tda.features.audio.extract`: the analysis (:func:`extract_audio`,
  :func:`extract_file`,
  :func:`extract_file_record`, :func:`analyze_audio`);
- :mod:`~aria_tda.features.audio.rhythm`, :mod:`~aria_tda.features.audio.chords`: beat/onset
  histograms,
  downbeats, the template chord recogniser; :mod:`~aria_tda.features.audio.madmom`,
  :mod:`~aria_tda.features.audio.beatnet`: the optional backends;
- :mod:`~aria_tda.features.audio.render`: MIDI → audio with FluidSynth (test signals of known
  truth);
- :mod:`~aria_tda.features.audio.jit`: the numba JIT cache librosa compiles into (per user and
  version, see :func:`~aria_tda.features.audio.jit.numba_cache_dir`), warmed once before workers
  start and recompiled when found corrupt.

Importing this package points ``NUMBA_CACHE_DIR`` at ARIA's per-user cache (unless the user set
``NUMBA_CACHE_DIR`` themselves) before librosa or numba is used, so that librosa's compiled
kernels are never written into (and never corrupted inside) the virtual environment.
"""

from __future__ import annotations

from aria_tda.features.audio.jit import configure_numba_cache

configure_numba_cache()  # before librosa / numba are imported anywhere below

from aria_tda.features.audio.extract import (  # noqa: E402
    AudioAnalysis,
    analyze_audio,
    extract_audio,
    extract_file,
    extract_file_record,
)
from aria_tda.features.audio.jit import prepare_workers  # noqa: E402
from aria_tda.features.audio.params import (  # noqa: E402
    BEAT_BACKENDS,
    CHORD_BACKENDS,
    FEATURE_NAMES,
    AudioFeatureParams,
    available_backends,
    check_dependencies,
    load_audio,
    versions,
)

__all__ = [
    "BEAT_BACKENDS",
    "CHORD_BACKENDS",
    "FEATURE_NAMES",
    "RESERVED_METADATA",
    "AudioAnalysis",
    "AudioFeatureParams",
    "analyze_audio",
    "available_backends",
    "check_dependencies",
    "extract_audio",
    "extract_file",
    "extract_file_record",
    "load_audio",
    "prepare_workers",
    "versions",
]

#: metadata columns :func:`extract_file_record` (and the extraction engine: ``source``) record
RESERVED_METADATA = ("source", "duration", "tempo", "meter", "n_chords")
