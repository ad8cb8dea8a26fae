"""Numbers in words (aria_tda.report.words): the sentences say what the numbers are."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from aria_tda.report import words


def test_above_chance_is_the_normal_cdf(rng):
    from scipy.stats import norm

    z = rng.normal(scale=3.0, size=50)
    got = np.array([words.above_chance(v) for v in z])
    np.testing.assert_allclose(got, norm.cdf(z), rtol=0, atol=1e-12)
    assert math.isnan(words.above_chance(float("nan")))
    assert math.isnan(words.above_chance(None))


@pytest.mark.parametrize(
    ("p", "text"),
    [(0.87, "87 %"), (0.994, "99.4 %"), (0.003, "0.3 %"), (1.0, "100 %"), (0.9996, "99.9 %"),
     (0.0, "0.0 %"), (float("nan"), "\u2014"), (1.7, "100 %")],
)
def test_format_percent(p, text):
    assert words.format_percent(p) == text


def test_format_signed():
    assert words.format_signed(2.5) == "+2.50"
    assert words.format_signed(-0.314, 1) == "-0.3"
    assert words.format_signed(float("inf")) == "\u2014"


def test_describe_z_states_share_units_and_reading():
    s = words.describe_z("harmony", 2.5, k=300)
    pct = words.format_percent(words.above_chance(2.5))
    assert s.startswith("harmony: the top-300 group is more alike than " + pct)
    assert "random groups of 300 training tracks" in s
    assert "z = +2.50 SD of the random-group null" in s and "significant (z > 1.96)" in s
    low = words.describe_z("rhythm", -0.4)
    assert "not above chance" in low and "top-K" in low
    assert words.describe_z("timbre", float("nan")) == "timbre: no z-score for this query"


def test_reading_of_z_matches_the_threshold():
    assert words.reading_of_z(words.SIG_Z + 1e-9).startswith("significant")
    assert words.reading_of_z(words.SIG_Z) == "above chance, not significant"
    assert words.reading_of_z(0.0) == "not above chance"
    assert words.reading_of_z(None) == ""


def test_describe_pair_forms():
    full = words.describe_pair("harmony", 0.62, 173.9, 2.5, k=300, percentile=0.87)
    assert full.startswith("harmony: these two are more alike than 87 % of random pairs")
    assert "(similarity 0.62 of 1)" in full
    assert "standardised +173.9 (SD units of a random group-of-300 mean" in full
    assert full.endswith("the group's z = +2.50")
    mean = words.describe_pair("melody", 0.4, random_mean=0.31)
    assert mean == "melody: similarity 0.40 of 1, against 0.31 for a random pair of training tracks"
    plain = words.describe_pair("texture", float("nan"))
    assert plain == "texture: similarity \u2014 of 1"
    brief = words.describe_pair("rhythm", 0.5, 4.8, k=5, random_mean=0.43, brief=True)
    assert brief == ("0.50 of 1 against 0.43 for a random pair; standardised +4.8 (SD units of "
                     "a random group-of-5 mean)")
    # the brief form needs every part; without them it falls back to the full sentence
    assert words.describe_pair("rhythm", 0.5, brief=True) == "rhythm: similarity 0.50 of 1"


def test_no_sentence_prints_nan():
    texts = [
        words.describe_pair("c", float("nan"), float("nan"), float("nan"), k=5,
                            percentile=float("nan"), random_mean=float("nan")),
        words.describe_z("c", None),
        words.describe_similarity("c", None),
        words.describe_score(float("nan"), 1),
    ]
    for t in texts:
        assert "nan" not in t.lower() and "none" not in t.lower(), t


def test_templates_are_filled_completely():
    """Every placeholder a template has is filled by the function that uses it."""
    samples = [
        words.describe_z("c", 1.0, k=5), words.describe_z("c", 1.0),
        words.describe_pair("c", 0.5, 1.0, k=5, percentile=0.5),
        words.describe_pair("c", 0.5, 1.0, random_mean=0.2),
        words.describe_pair("c", 0.5, 1.0, k=5, random_mean=0.2, brief=True),
        words.describe_similarity("c", 0.5), words.describe_score(0.0045, 3),
    ]
    for s in samples:
        assert not re.search(r"\{[a-z_]+\}", s), s
    assert words.describe_score(0.0045, 3).startswith("rank 3: attribution score 0.0045")
    assert "4.500e-04" in words.describe_score(0.00045, 1)


def test_fill_replaces_only_named_placeholders():
    assert words.fill("{a} and {b} and {a}", {"a": "x"}) == "x and {b} and x"
    assert words.fill("{a}", {"a": "{b}", "b": "y"}) == "y"  # in order, as the page's fill


def test_units_cover_every_number_shown():
    assert set(words.UNITS) >= {"similarity", "z", "percentile", "contribution", "score"}
    assert "not itself a z-score" in words.UNITS["contribution"]
