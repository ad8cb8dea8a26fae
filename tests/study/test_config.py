"""Study files: defaults, relative paths, and errors that name the key and its line."""

from __future__ import annotations

import pytest

from aria_tda.errors import FileFormatError, ParameterError
from aria_tda.study.studyfile import load_study, parse_study

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
    match = r"<study>:15: setting\[1\]\.normalize: expected one of"
    with pytest.raises(ParameterError, match=match):
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
    from aria_tda.study.studyfile import study_to_toml

    (tmp_path / "s.toml").write_text(GOOD.replace('method = "TRAK"', 'method = "TR\\"AK"'))
    s = load_study(tmp_path / "s.toml")
    back = parse_study(study_to_toml(s, header="made by a test"))
    assert back.settings == s.settings
    assert back.params() | {"feature_store": ""} == s.params() | {"feature_store": ""}
    assert back.settings[0].method == 'TR"AK'


# ---- one source of truth: the spec's fields ----------------------------------------------


def _spec(**kw):
    from pathlib import Path

    from aria_tda.study.config import SettingSpec, StudySpec

    base = {"modality": "symbolic", "feature_store": Path("features"),
            "settings": (SettingSpec(scores=Path("s.npy")),)}
    return StudySpec(**(base | kw))


def test_spec_built_in_python_is_checked_like_a_file():
    with pytest.raises(ParameterError, match=r"^B: expected an integer >= 2, got 1$"):
        _spec(B=1)
    with pytest.raises(ParameterError, match=r"K_report: expected one of K = \[5, 10\]"):
        _spec(K=(10, 5), K_report=7)
    with pytest.raises(ParameterError, match=r"setting\[1\]\.name: expected a setting name used"):
        from aria_tda.study.config import SettingSpec

        _spec(settings=(SettingSpec(scores="a/s.npy"), SettingSpec(scores="b/s.npy")))
    s = _spec(K=[50, 20, 20])
    assert s.K == (20, 50) and s.K_report == 50 and s.settings[0].name == "s"


def test_defaults_come_from_one_place():
    from aria_tda.homogeneity import DEFAULT_KS
    from aria_tda.study.config import StudySpec, default_k_report, field_default

    s = _spec()
    assert s.K == tuple(DEFAULT_KS) and s.K_report == default_k_report(DEFAULT_KS) == 300
    assert default_k_report([5, 10]) == 10
    assert field_default(StudySpec, "B") == s.B == 200
    assert field_default(StudySpec, "n_bootstrap") == s.n_bootstrap == 1000
    assert field_default(StudySpec, "K") is None  # computed: aria_tda.homogeneity.DEFAULT_KS


def test_file_keys_params_and_toml_are_derived_from_the_fields(tmp_path):
    import dataclasses

    from aria_tda.study.config import SettingSpec, StudySpec
    from aria_tda.study.studyfile import study_to_toml

    setting = SettingSpec(scores="s.npy", segments="m.csv", key="arr")
    embedding = SettingSpec(train_embeddings="emb/train", query_embeddings="emb/queries")
    s = _spec(queries=tmp_path / "q.csv", query_features=tmp_path / "qf", channels=("harmony",),
              chunk_rows=7, scheduler="local:2", settings=(setting, embedding))
    text = study_to_toml(s)  # every key set: None values are left out of the file
    keys = {line.split(" = ")[0] for line in text.splitlines() if " = " in line}
    for cls in (StudySpec, SettingSpec):
        for f in dataclasses.fields(cls):
            if "help" in f.metadata:
                assert f.metadata["help"], f.name
                assert (f.metadata.get("key") or f.name) in keys | {"setting"}, f.name
    recorded = {f.name for f in dataclasses.fields(StudySpec) if f.metadata.get("recorded")}
    assert set(s.params()) == recorded
    assert {"output", "chunk_rows", "report", "settings", "scheduler"}.isdisjoint(s.params())
    back = parse_study(text)
    assert back.params() == s.params() | {"feature_store": back.params()["feature_store"],
                                          "queries": str(tmp_path / "q.csv"),
                                          "query_features": str(tmp_path / "qf")}
    assert back.chunk_rows == 7 and back.settings[0].transpose is False
    assert back.scheduler == "local:2"


def test_validate_study_checks_the_spec_itself():
    from aria_tda.study.config import validate_study

    s = _spec(extra={"note": 1})
    v = validate_study(s)
    assert v.extra == {"note": 1}  # not lost in a round trip through TOML
    assert v.feature_store.is_absolute() and v.settings[0].scores.is_absolute()
    bad = object.__new__(type(s))
    object.__setattr__(bad, "__dict__", dict(s.__dict__))
    object.__setattr__(bad, "B", 0)
    with pytest.raises(ParameterError, match=r"^aria-tda homogeneity: B: expected an integer >= 2"):
        validate_study(bad, source="aria-tda homogeneity")


def test_transpose_key():
    s = parse_study(GOOD.replace('normalize = "rank"', 'normalize = "rank"\ntranspose = true'))
    assert [x.transpose for x in s.settings] == [False, True]
    with pytest.raises(ParameterError, match=r"<study>:16: setting\[1\]\.transpose: expected true"):
        parse_study(GOOD.replace('normalize = "rank"', 'normalize = "rank"\ntranspose = "yes"'))
