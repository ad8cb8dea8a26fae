r"""Feature similarity functions of the evidence channels (paper appendix "Similarity functions").

Two similarity functions, named by :attr:`aria_tda.features.registry.FeatureSpec.similarity`:

``"std_euclidean"`` — standardised Euclidean similarity (vectors, histograms, scalars)

.. math:: \mathrm{sim}(a, b) = \frac{1}{1 + \lVert z_a - z_b \rVert_2},
          \qquad z_{x,k} = \frac{x_k - m_k}{s_k}

``s_k`` is the sample standard deviation (``ddof=1``, as
:func:`scipy.spatial.distance.seuclidean`) of dimension ``k`` over **all tracks that have
the feature** (NaN rows excluded), fixed once per corpus by :func:`prepare_feature`
before any query and shared by all queries, groups and methods. ``m_k`` (the mean) does
not change distances; it only centres the data for numerical accuracy. Range ``(0, 1]``;
1 iff the standardised vectors coincide.

*Zero-variance dimensions.* A dimension whose standard deviation is zero (or below
``1e-12`` times its largest absolute value) carries no information: every track has the
same value, so ``(a_k - b_k) / s_k`` would be ``0 / 0``. Such dimensions are **dropped
from the distance** (their scale is stored as ``inf``, i.e. they contribute 0) and an
:class:`~aria_tda.errors.AriaWarning` says how many. If every dimension is dropped the feature
is constant and every pair has similarity 1.

``"chord_lcs"`` — normalised longest common subsequence of chord root-motion sequences

.. math:: \mathrm{sim}(a, b) = \frac{\mathrm{LCS}(a, b)}{\max(|a|, |b|)},
          \qquad \mathrm{sim}(\varnothing, \varnothing) = 1

over root-motion intervals mod 12 (so transposing a progression does not change its
sequence: the measure is transposition invariant). Range ``[0, 1]``.

*Why ``max``.* ``1 - LCS/max(|a|, |b|)`` is a metric on sequences (Bakkelund 2009,
"An LCS-based string metric"), so similarities are mutually consistent (triangle
inequality), whereas the Dice form ``2 LCS / (|a| + |b|)`` is not a metric and the
``min`` form scores any progression contained in a longer one as identical (1). With
``max`` a short progression that merely occurs inside a long one is *not* called similar,
which is what a harmony-homogeneity measure wants. Equal lengths give ``LCS / n`` in all
three forms.

*Empty sequences.* A track whose chord recogniser found a single chord (or none) has an
empty root-motion sequence: a legitimate value ("no progression"). Two empty sequences
are identical (similarity 1); an empty and a non-empty one share nothing (similarity 0).
A *missing* feature (the track was not analysed) is ``None`` and is different: it makes
the track unavailable (NaN similarity), see :attr:`PreparedFeature.valid`.

Symbols are small non-negative integers (``0..11`` for root motions; any alphabet below
256 is accepted). LCS uses the bit-parallel algorithm of Allison & Dix (1986) / Hyyrö
(2004) with match masks precomputed once per sequence (:mod:`aria_tda._simkernels`); the
dynamic program :func:`lcs_length_reference` is the exact reference.

Conventions
-----------
- ``values`` for a vector feature: array ``(N, d)`` (``(N,)`` means ``d = 1``), one row per
  track; a row with any NaN is a missing feature. ``inf`` is an error.
- ``values`` for a sequence feature: a length-``N`` sequence of 1-D integer arrays (or lists)
  or ``None`` for missing.
- ``PreparedFeature.pairwise(idx)`` returns the ``(k, k)`` similarity matrix of the tracks
  ``idx`` (row indices into ``values``), diagonal = self-similarity (1 where the feature is
  present), NaN in rows/columns of tracks without the feature.

References
----------
Allison, L., Dix, T. I. (1986). A bit-string longest-common-subsequence algorithm. IPL 23.
Hyyrö, H. (2004). Bit-parallel LCS-length computation revisited. AWOCA.
Bakkelund, D. (2009). An LCS-based string metric. University of Oslo.
Mardia, K. V., Kent, J. T., Bibby, J. M. (1979). Multivariate Analysis. Academic Press.

Modules: :mod:`~aria_tda.similarity.base` (:class:`PreparedFeature`),
:mod:`~aria_tda.similarity.euclidean` (``std_euclidean``: :class:`VectorFeature`,
:func:`standardization_scale`), :mod:`~aria_tda.similarity.lcs` (``chord_lcs``:
:class:`SequenceFeature`, :func:`lcs_length`, :func:`lcs_similarity`) and
:mod:`~aria_tda.similarity.prepare` (:func:`prepare_feature`, :func:`prepare_channels`,
:func:`pairwise`). Every name is re-exported here. Exact references (for tests, not in
``__all__``): :func:`lcs_length_reference`, :func:`lcs_similarity_reference`,
:func:`pairwise_reference`.
"""

from __future__ import annotations

from aria_tda.similarity.base import PreparedFeature
from aria_tda.similarity.euclidean import (
    GRAM_RECOMPUTE_TOL as GRAM_RECOMPUTE_TOL,
)
from aria_tda.similarity.euclidean import (
    ZERO_VAR_RTOL as ZERO_VAR_RTOL,
)
from aria_tda.similarity.euclidean import (
    VectorFeature,
    standardization_scale,
    std_euclidean_similarity,
)
from aria_tda.similarity.lcs import (
    MAX_ALPHABET as MAX_ALPHABET,
)
from aria_tda.similarity.lcs import (
    SequenceFeature,
    lcs_length,
    lcs_similarity,
)
from aria_tda.similarity.lcs import (
    lcs_length_reference as lcs_length_reference,
)
from aria_tda.similarity.lcs import (
    lcs_similarity_reference as lcs_similarity_reference,
)
from aria_tda.similarity.prepare import (
    pairwise,
    prepare_channels,
    prepare_feature,
)
from aria_tda.similarity.prepare import (
    pairwise_reference as pairwise_reference,
)

__all__ = [
    "PreparedFeature",
    "SequenceFeature",
    "VectorFeature",
    "lcs_length",
    "lcs_similarity",
    "pairwise",
    "prepare_channels",
    "prepare_feature",
    "standardization_scale",
    "std_euclidean_similarity",
]
