r"""Numbers in words: what a similarity, a pair contribution or a z-score says, with its units.

The report and the dossier show every per-query number beside a sentence a person can read
aloud ("harmony: these two are more alike than 87 % of random pairs (similarity 0.62 of 1)").
The sentences are built from the :data:`TEMPLATES` below; the report page's JavaScript fills the
same templates (they travel in the page's data block), so the page and the Python functions
say the same thing in the same words.

Conventions
-----------
- **similarity** — a feature similarity in :math:`[0, 1]` (1 = identical), averaged over the
  channel's features (paper appendix "Similarity functions"): ``std_euclidean``
  :math:`1/(1 + \lVert z_a - z_b \rVert)` or the chord root-motion LCS ratio.
- **z** — :math:`z_c(q)` (paper Eq. z_c): how far the top-K group's mean similarity lies above
  that of random groups of K training tracks, in standard deviations of that random-group
  null. Under the null it is about N(0, 1), so :math:`\Phi(z)` is the share of random groups
  the group beats (:func:`above_chance`).
- **contribution** — a pair's similarity standardised by the null of its features
  :math:`\frac{1}{|F_c|}\sum_d (\mathrm{sim}_d - \mu_d)/\sigma_d` where :math:`\mu_d` is a
  random pair's expected similarity and :math:`\sigma_d` the SD of a random group's *mean*
  similarity at that K. Its mean over the group's :math:`\binom{K}{2}` pairs is the group's
  standardised similarity :math:`\tilde g_c(q)`; because :math:`\sigma_d` is the SD of a mean
  over many pairs, one pair's value is large (tens to hundreds) and is not a z-score of the
  pair.
- **percentile** — the share of random pairs of training tracks (drawn from the feature
  store) whose similarity is below this pair's, in :math:`[0, 1]`.
- **score** — the attribution score :math:`S^{\mathrm{track}}` of a training item for the
  query, in the units of the method (higher = more influential); only its rank is comparable
  across methods.

Every function returns one sentence (no trailing full stop) and accepts NaN / ``None`` for a
number that is absent, which it leaves out of the sentence rather than printing "nan".
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeGuard

if TYPE_CHECKING:
    from _typeshed import ConvertibleToFloat

__all__ = [
    "ANCHOR_WORDS",
    "SIG_Z",
    "TEMPLATES",
    "UNITS",
    "above_chance",
    "describe_aspect",
    "describe_clip_range",
    "describe_likeness",
    "describe_method_aspect",
    "describe_pair",
    "describe_score",
    "describe_similarity",
    "describe_z",
    "fill",
    "format_percent",
    "format_signed",
    "reading_of_z",
]

#: The z above which a channel is called significant (one-sided 2.5 %, as the tables' Sig).
SIG_Z = 1.96

#: Sentence templates, ``{name}`` placeholders filled with pre-formatted text (:func:`fill`).
#: The report's JavaScript receives this mapping and fills it the same way.
TEMPLATES: dict[str, str] = {
    "z": "{channel}: the top-{k} group is more alike than {pct} of random groups of {k} "
         "training tracks (z = {z} SD of the random-group null; {reading})",
    "z_nok": "{channel}: the top-K group is more alike than {pct} of random groups of the same "
             "size (z = {z} SD of the random-group null; {reading})",
    "z_missing": "{channel}: no z-score for this query",
    "pair_pct": "{channel}: these two are more alike than {pct} of random pairs of training "
                "tracks (similarity {sim} of 1)",
    "pair_mean": "{channel}: similarity {sim} of 1, against {mean} for a random pair of "
                 "training tracks",
    "pair_plain": "{channel}: similarity {sim} of 1",
    "contribution": "standardised {contrib} (SD units of a random group-of-{k} mean; the "
                    "group's z averages these over its pairs)",
    "contribution_nok": "standardised {contrib} (SD units of a random group's mean; the "
                        "group's z averages these over its pairs)",
    "pair_short": "{sim} of 1 against {mean} for a random pair; standardised {contrib} (SD "
                  "units of a random group-of-{k} mean)",
    "similarity": "{channel}: {what} have similarity {sim} of 1 ({basis})",
    "score": "rank {rank}: attribution score {score} (the method's own units; higher = more "
             "influential)",
    "likeness": "{channel}: more like the query than {pct} of the pool's training tracks "
                "({align} SD from the pool's average likeness to the query)",
    "likeness_flat": "{channel}: cannot tell tracks apart for this query: every pool track is "
                     "equally like it (the channel's features do not vary)",
    "likeness_tied": "{channel}: cannot tell this track apart: {tied} of the pool's tracks are "
                     "exactly as like the query, so its rank says nothing",
    "likeness_row": "like the query, as a percentile of the pool's tracks: {list}",
    "likeness_flat_short": "cannot tell",
    "clip_range": "{source}; attributed window {w0}\u2013{w1} s of this {duration} s clip (the "
                  "rest is context)",
    "aspect_named": "Distinctive aspect: {channel}. The training items this query draws on "
                    "beyond what {method} gives every query are {anchor} in {channel} than "
                    "those of its other queries (Δ = {delta}, above the threshold "
                    "{threshold}; a query of a score matrix that ranks at random is named "
                    "with probability {alpha})",
    "aspect_none": "No distinctive aspect: no channel explains this query's attribution "
                   "beyond what {method} shows for every query (the largest, {channel}, has "
                   "Δ = {delta}, below the threshold {threshold})",
    "aspect_method": "{method} follows its queries along {channel} for every query (median z "
                     "{baseline}): that is the method's, not this query's",
    "aspect_method_none": "{method} follows no channel for every query",
    "aspect_missing": "No distinctive reading in these results",
}

#: What each number's unit is, as shown in the legend of the report and the dossier.
UNITS: dict[str, str] = {
    "similarity": "Similarity: 0 = nothing in common, 1 = identical, averaged over the "
                  "channel's features.",
    "z": "z: standard deviations of the random-group null above its mean (0 = chance; "
         "1.96 = better than 97.5 % of random groups).",
    "percentile": "More alike than X % of random pairs: the share of random pairs of training "
                  "tracks from the feature store whose similarity on this channel is lower.",
    "contribution": "Standardised (a pair's contribution): the pair's similarity minus a "
                    "random pair's, divided by the SD of a random group's mean similarity; "
                    "the group's z is built from the mean of these over all its pairs, so one "
                    "pair's value is large and is not itself a z-score.",
    "score": "Score: the attribution method's score of the training item for this query; its "
             "scale is the method's own, only the order is comparable across methods.",
    "delta": "Δ (distinctive score): how far this query's channel z lies above the median "
             "of the same method's queries, in units of their spread (at least 1, the "
             "random-group null's); a channel is named when its Δ clears the threshold at "
             "which a randomly ranking score matrix is named with probability alpha.",
}

#: How each anchor of the distinctive reading compares (the ``{anchor}`` of the templates).
ANCHOR_WORDS: dict[str, str] = {
    "query": "more similar to the query",
    "group": "more alike among themselves",
    "both": "more similar to the query and to each other",
}


def _finite(x: Any) -> TypeGuard[ConvertibleToFloat]:
    # True only for a value that float() accepts (not None), so the guard narrows ``x`` for the
    # float(x) calls that follow it
    try:
        return x is not None and math.isfinite(float(x))
    except (TypeError, ValueError):
        return False


def fill(template: str, values: Mapping[str, str]) -> str:
    """Fill the ``{name}`` placeholders of a template with text.

    Parameters
    ----------
    template : str
        A value of :data:`TEMPLATES` (or any text with ``{name}`` placeholders).
    values : Mapping[str, str]
        Text per placeholder; a placeholder without a value is left as it is.

    Returns
    -------
    str
        The sentence. Only ``{name}`` is replaced (no format specifiers), exactly as the
        report's JavaScript ``fill`` does.
    """
    out = template
    for key, val in values.items():
        out = out.replace("{" + key + "}", str(val))
    return out


def above_chance(z: float) -> float:
    r"""The share of random groups a group with this z beats, :math:`\Phi(z)`.

    Parameters
    ----------
    z : float
        A z-score against the random-group null.

    Returns
    -------
    float
        The standard normal CDF at ``z`` in :math:`[0, 1]` (NaN for a non-finite ``z``).
    """
    if not _finite(z):
        return math.nan
    return 0.5 * math.erfc(-float(z) / math.sqrt(2.0))


def format_percent(p: float) -> str:
    """A fraction in [0, 1] as a percentage: whole percent, one decimal near 0 % and 100 %.

    Parameters
    ----------
    p : float
        The fraction.

    Returns
    -------
    str
        E.g. ``"87 %"``, ``"99.4 %"``, ``"0.3 %"``; ``"—"`` when not finite.
    """
    if not _finite(p):
        return "\u2014"
    v = 100.0 * min(max(float(p), 0.0), 1.0)
    if 1.0 <= v <= 99.0:
        return f"{v:.0f} %"
    if v >= 99.95:
        return "99.9 %" if v < 100.0 else "100 %"
    return f"{v:.1f} %"


def format_signed(x: float, digits: int = 2) -> str:
    """A number with an explicit sign (``+2.50``, ``-0.31``); ``"—"`` when not finite.

    Parameters
    ----------
    x : float
        The number.
    digits : int
        Decimals.

    Returns
    -------
    str
        The text.
    """
    if not _finite(x):
        return "\u2014"
    s = f"{float(x):.{digits}f}"
    return s if s.startswith("-") else "+" + s


def reading_of_z(z: float) -> str:
    """The short reading of a z-score used in the tables: significant / positive / not above.

    Parameters
    ----------
    z : float
        A z-score against the random-group null.

    Returns
    -------
    str
        ``"significant (z > 1.96)"``, ``"above chance, not significant"``,
        ``"not above chance"``, or ``""`` when ``z`` is not finite.
    """
    if not _finite(z):
        return ""
    z = float(z)
    if z > SIG_Z:
        return "significant (z > 1.96)"
    if z > 0:
        return "above chance, not significant"
    return "not above chance"


def describe_z(channel: str, z: float | None, *, k: int | None = None) -> str:
    """One sentence for the z-score of a query's top-K group on one channel.

    Parameters
    ----------
    channel : str
        The evidence channel (``"harmony"``, ...).
    z : float or None
        :math:`z_c(q)`.
    k : int, optional
        The group size K the z-score was computed at.

    Returns
    -------
    str
        E.g. ``"harmony: the top-300 group is more alike than 99.4 % of random groups of 300
        training tracks (z = +2.50 SD of the random-group null; significant (z > 1.96))"``.
    """
    if not _finite(z):
        return fill(TEMPLATES["z_missing"], {"channel": channel})
    vals = {"channel": channel, "pct": format_percent(above_chance(float(z))),
            "z": format_signed(float(z)), "reading": reading_of_z(float(z))}
    if k is None:
        return fill(TEMPLATES["z_nok"], vals)
    return fill(TEMPLATES["z"], {**vals, "k": str(int(k))})


def describe_aspect(named: str | None, delta: Mapping[str, float], *, method: str,
                    anchor: str, threshold: float, alpha: float) -> str:
    r"""The sentence that leads a query's evidence: its distinctive aspect, or none.

    Parameters
    ----------
    named : str or None
        The query's answer (a channel, ``"none"``); ``None`` when the results hold no reading.
    delta : mapping of str to float
        Channel -> the query's distinctive score :math:`\Delta_c`.
    method : str
        The setting's name.
    anchor : {"query", "group"}
        What the reading is anchored on.
    threshold, alpha : float
        The naming threshold and its error rate.

    Returns
    -------
    str
    """
    if named is None:
        return TEMPLATES["aspect_missing"]
    finite = {c: float(v) for c, v in delta.items() if _finite(v)}
    vals = {"method": method, "anchor": ANCHOR_WORDS.get(anchor, anchor),
            "threshold": format_signed(threshold), "alpha": format_percent(alpha)}
    if named != "none":
        return fill(TEMPLATES["aspect_named"],
                    {**vals, "channel": named,
                     "delta": format_signed(finite.get(named, float("nan")))})
    if not finite:
        return fill(TEMPLATES["aspect_none"], {**vals, "channel": "\u2014", "delta": "\u2014"})
    lead = max(finite, key=lambda c: finite[c])
    return fill(TEMPLATES["aspect_none"],
                {**vals, "channel": lead, "delta": format_signed(finite[lead])})


def describe_method_aspect(method: str, channel: str | None, baseline: float | None) -> str:
    """What the method shows for every query (the distinctive reading's baseline).

    Parameters
    ----------
    method : str
        The setting's name.
    channel : str or None
        The method's own aspect (``"none"``/``None`` for none).
    baseline : float or None
        Its median z over the method's queries.
    """
    if not channel or channel == "none":
        return fill(TEMPLATES["aspect_method_none"], {"method": method})
    return fill(TEMPLATES["aspect_method"], {
        "method": method, "channel": channel,
        "baseline": format_signed(baseline if baseline is not None else float("nan"))})


def describe_pair(
    channel: str,
    similarity: float | None,
    contribution: float | None = None,
    z: float | None = None,
    *,
    k: int | None = None,
    percentile: float | None = None,
    random_mean: float | None = None,
    brief: bool = False,
) -> str:
    r"""One sentence for a pair of attributed training tracks on one channel.

    Parameters
    ----------
    channel : str
        The evidence channel.
    similarity : float or None
        The pair's similarity in [0, 1], averaged over the channel's features.
    contribution : float, optional
        The pair's standardised similarity (the results' ``contribution`` column; see the
        module's Conventions): added with its unit when given.
    z : float, optional
        The group's :math:`z_c(q)`; added as "the group's z = ..." when given.
    k : int, optional
        The group size the contribution was standardised at.
    percentile : float, optional
        Share of random pairs of training tracks less similar than this pair, in [0, 1]; the
        sentence leads with it when given.
    random_mean : float, optional
        A random pair's mean similarity on this channel (the null's :math:`\mu`), shown when
        no percentile is known.
    brief : bool
        The table form (:data:`TEMPLATES` ``"pair_short"``, no channel name) where a table's
        heading names the channel and its legend the units; needs ``random_mean``,
        ``contribution`` and ``k``.

    Returns
    -------
    str
        E.g. ``"harmony: these two are more alike than 87 % of random pairs of training tracks
        (similarity 0.62 of 1); standardised +173.9 (SD units of a random group-of-300 mean;
        the group's z averages these over its pairs)"``.
    """
    sim = f"{float(similarity):.2f}" if _finite(similarity) else "\u2014"
    if brief and _finite(random_mean) and _finite(contribution) and k is not None:
        return fill(TEMPLATES["pair_short"], {"sim": sim, "mean": f"{float(random_mean):.2f}",
                                              "contrib": format_signed(float(contribution), 1),
                                              "k": str(int(k))})
    if _finite(percentile):
        text = fill(TEMPLATES["pair_pct"], {"channel": channel, "pct":
                                            format_percent(float(percentile)), "sim": sim})
    elif _finite(random_mean):
        text = fill(TEMPLATES["pair_mean"], {"channel": channel, "sim": sim,
                                             "mean": f"{float(random_mean):.2f}"})
    else:
        text = fill(TEMPLATES["pair_plain"], {"channel": channel, "sim": sim})
    if _finite(contribution):
        tpl = TEMPLATES["contribution"] if k is not None else TEMPLATES["contribution_nok"]
        text += "; " + fill(tpl, {"contrib": format_signed(float(contribution), 1),
                                  "k": "" if k is None else str(int(k))})
    if _finite(z):
        text += f"; the group's z = {format_signed(float(z))}"
    return text


def describe_similarity(
    channel: str,
    similarity: float | None,
    *,
    what: str = "the query and this item",
    basis: str = "measured on the two clips shown",
) -> str:
    """One sentence for a similarity between two pieces of music (e.g. a query and an item).

    Parameters
    ----------
    channel : str
        The evidence channel.
    similarity : float or None
        In [0, 1].
    what : str
        The two things compared.
    basis : str
        What the similarity was measured on.

    Returns
    -------
    str
        E.g. ``"melody: the query and this item have similarity 0.48 of 1 (measured on the two
        clips shown)"``.
    """
    sim = f"{float(similarity):.2f}" if _finite(similarity) else "\u2014"
    return fill(TEMPLATES["similarity"], {"channel": channel, "what": what, "sim": sim,
                                          "basis": basis})


def describe_score(score: float | None, rank: int) -> str:
    """One sentence for an attributed item's score and rank.

    Parameters
    ----------
    score : float or None
        Its :math:`S^{\\mathrm{track}}` score for the query.
    rank : int
        Its rank (1 = highest score).

    Returns
    -------
    str
        E.g. ``"rank 1: attribution score 0.0045 (the method's own units; higher = more
        influential)"``.
    """
    if _finite(score):
        a = abs(float(score))
        s = f"{float(score):.3e}" if a != 0 and (a < 1e-3 or a >= 1e5) else f"{float(score):.4g}"
    else:
        s = "\u2014"
    return fill(TEMPLATES["score"], {"rank": str(int(rank)), "score": s})


def describe_clip_range(source: str, window: tuple[float, float], duration: float) -> str:
    """Which file and time range a clip plays, and where its attributed window lies in it
    (the report's listening room and the dossier say it in these words, to 0.1 s).

    Parameters
    ----------
    source : str
        The file and its window in the file (``"a.mid [12–22 s]"``).
    window : (float, float)
        The attributed window, seconds from the clip's start.
    duration : float
        The clip's length in seconds.
    """
    return TEMPLATES["clip_range"].format(source=source, w0=f"{window[0]:.1f}",
                                          w1=f"{window[1]:.1f}", duration=f"{duration:.1f}")


def describe_likeness(channel: str, alignment: float, percentile: float, tied: float,
                      informative: bool) -> str:
    """How like the query an attributed track is on one channel, against the pool (the study's
    ``item_alignment`` table), or why that number cannot discriminate.

    Parameters
    ----------
    channel : str
        The channel.
    alignment : float
        Standardised likeness to the query (pool SDs).
    percentile : float
        Its mid-rank percentile among the pool's tracks (0-100).
    tied : float
        Share of the pool with the same likeness.
    informative : bool
        Whether the channel discriminates (:mod:`aria_tda.homogeneity.item_alignment`).
    """
    if not informative:
        if _finite(tied) and tied > 0:
            return TEMPLATES["likeness_tied"].format(channel=channel, tied=format_percent(tied))
        return TEMPLATES["likeness_flat"].format(channel=channel)
    return TEMPLATES["likeness"].format(channel=channel, pct=format_percent(percentile / 100.0),
                                        align=format_signed(alignment))
