"""Study files: defaults, relative paths, and errors that name the key and its line."""

from __future__ import annotations

import pytest

from aria.errors import FileFormatError, ParameterError
from aria.study_config import load_study, parse_study

GOOD = """\
name = "demo"
modality = "symbolic"
feature_store = "features"
K = [50, 20]
B = 10

[[setting]]
method = "TRAK"
scores = "scores/trak.npy"

[[setting]]
method = "LoGra"
stage = "fine"
scores = "/abs/logra.npy"
normalize = "rank"
"""


def test_parse_good(tmp_path):
    (tmp_path / "s.toml").write_text(GOOD)
    s = load_study(tmp_path / "s.toml")
    assert s.K == (20, 50) and s.K_report == 50 and s.B == 10 and s.seed == 0
    assert s.feature_store == tmp_path / "features"
    assert [x.name for x in s.settings] == ["TRAK", "LoGra/fine"]
    assert s.settings[0].scores == tmp_path / "scores/trak.npy"
    assert str(s.settings[1].scores) == "/abs/logra.npy"
    assert s.settings[1].normalize == "rank" and s.settings[0].segments is None


def test_unknown_key_names_key_and_line():
    text = GOOD.replace('B = 10', 'B = 10\nbogus = 3')
    with pytest.raises(ParameterError, match=r"<study>:6: bogus: expected a known key"):
        parse_study(text)


def test_wrong_type_in_setting_names_line():
    text = GOOD.replace('normalize = "rank"', 'normalize = 3')
    with pytest.raises(ParameterError, match=r"<study>:15: setting\[1\]\.normalize: expected one of"):
        parse_study(text)


def test_unknown_setting_key():
    text = GOOD.replace('method = "TRAK"', 'method = "TRAK"\nscore = "x"')
    with pytest.raises(ParameterError, match=r":9: setting\[0\]\.score: expected a known key"):
        parse_study(text)


@pytest.mark.parametrize(
    ("old", "new", "match"),
    [
        ("B = 10", "B = 1", r"B: expected an integer >= 2"),
        ("K = [50, 20]", "K = [1]", r"K: expected a non-empty list"),
        ('modality = "symbolic"', 'modality = "video"', r"modality: expected"),
        ("K = [50, 20]", 'K = "20"', r"K: expected a list of integers"),
        ("B = 10", "B = true", r"B: expected an integer"),
    ],
)
def test_bad_values(old, new, match):
    with pytest.raises(ParameterError, match=match):
        parse_study(GOOD.replace(old, new))


def test_duplicate_names_and_missing():
    text = GOOD.replace('method = "LoGra"\nstage = "fine"', 'method = "TRAK"')
    with pytest.raises(ParameterError, match="used once"):
        parse_study(text)
    with pytest.raises(ParameterError, match="missing required key 'feature_store'"):
        parse_study(GOOD.replace('feature_store = "features"\n', ""))


def test_not_toml(tmp_path):
    with pytest.raises(FileFormatError, match="not valid TOML"):
        parse_study("a = = 1")
    with pytest.raises(FileFormatError, match="no such file"):
        load_study(tmp_path / "nope.toml")


def test_study_to_toml_round_trip(tmp_path):
    from aria.study_config import study_to_toml

    (tmp_path / "s.toml").write_text(GOOD.replace('method = "TRAK"', 'method = "TR\\"AK"'))
    s = load_study(tmp_path / "s.toml")
    back = parse_study(study_to_toml(s, header="made by a test"))
    assert back.settings == s.settings
    assert back.params() | {"feature_store": ""} == s.params() | {"feature_store": ""}
    assert back.settings[0].method == 'TR"AK'
