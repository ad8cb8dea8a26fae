"""A study built in Python from arrays, tensors and DataFrames: the same results as from files."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from aria_tda.errors import ParameterError
from aria_tda.results import read_table
from aria_tda.study import run_study
from aria_tda.study.config import SettingSpec
from aria_tda.study.memory_inputs import inputs_dir
from aria_tda.study.studyfile import load_study


def test_a_tensor_and_a_dataframe_give_the_study_of_the_files(tmp_path, rng, planted_study,
                                                             monkeypatch):
    torch = pytest.importorskip("torch")
    monkeypatch.setenv("ARIA_CACHE_DIR", str(tmp_path / "cache"))
    spec = load_study(planted_study(tmp_path, rng))
    from_files = run_study(spec, output=tmp_path / "files", quiet=True)

    setting = spec.settings[0]
    scores = torch.from_numpy(np.load(setting.scores))
    segments = pd.read_csv(setting.segments)
    memory = dataclasses.replace(spec, settings=(dataclasses.replace(
        setting, scores=scores, segments=segments),))
    from_memory = run_study(memory, output=tmp_path / "memory", quiet=True)

    saved = sorted(p.name for p in inputs_dir().iterdir() if not p.name.endswith(".json"))
    assert [n.split("-")[0] for n in saved if not n.endswith("row_ids.npy")] == [
        "scores", "segments"]
    for table in ("reliability", "homogeneity"):
        a, b = read_table(from_files, table), read_table(from_memory, table)
        num = a.select_dtypes("number").columns
        np.testing.assert_allclose(a[num].to_numpy(float), b[num].to_numpy(float),
                                   rtol=1e-12, equal_nan=True)
    # the same content again: the same saved files, nothing written
    before = {p: p.stat().st_mtime_ns for p in inputs_dir().iterdir()}
    run_study(memory, output=tmp_path / "memory", quiet=True)
    assert {p: p.stat().st_mtime_ns for p in inputs_dir().iterdir()} == before


def test_in_memory_inputs_are_checked_on_construction(rng):
    with pytest.raises(ParameterError, match="scores: expected a path or a 2-D array"):
        SettingSpec(scores=np.zeros(5))
    with pytest.raises(ParameterError, match="segments: expected a path or a pandas DataFrame"):
        SettingSpec(scores=np.zeros((4, 2)), segments=np.zeros((4, 2)))
    s = SettingSpec(scores=rng.standard_normal((6, 3)))
    assert s.name == "scores" and s.method == "scores"


def test_a_damaged_saved_copy_is_written_again(tmp_path, monkeypatch):
    from aria_tda.study.config import StudySpec
    from aria_tda.study.memory_inputs import save_in_memory_inputs

    monkeypatch.setenv("ARIA_CACHE_DIR", str(tmp_path / "cache"))
    scores = np.arange(12, dtype=np.float32).reshape(6, 2)
    table = pd.DataFrame({"segment_id": range(6), "track_id": [0, 0, 1, 1, 2, 2]})
    spec = StudySpec(modality="symbolic", feature_store=tmp_path, output=tmp_path / "r",
                     settings=(SettingSpec(scores=scores, segments=table),))
    saved = save_in_memory_inputs(spec).settings[0]
    saved.scores.write_bytes(b"not an npy")
    saved.segments.write_text("damaged")
    again = save_in_memory_inputs(spec).settings[0]
    assert again.scores == saved.scores and again.segments == saved.segments
    np.testing.assert_array_equal(np.load(again.scores), scores)
    pd.testing.assert_frame_equal(pd.read_csv(again.segments), table)


def test_an_inputs_path_that_is_not_arias_folder_is_refused(tmp_path, monkeypatch):
    from aria_tda.study.config import StudySpec
    from aria_tda.study.memory_inputs import save_in_memory_inputs

    monkeypatch.setenv("ARIA_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "inputs").write_text("a user's file")
    spec = StudySpec(modality="symbolic", feature_store=tmp_path, output=tmp_path / "r",
                     settings=(SettingSpec(scores=np.ones((4, 2))),))
    with pytest.raises(ParameterError, match=r"ARIA_CACHE_DIR: .*, got 'a file'"):
        save_in_memory_inputs(spec)
    assert (tmp_path / "cache" / "inputs").read_text() == "a user's file"
