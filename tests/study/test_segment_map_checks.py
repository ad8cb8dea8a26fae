"""The segment map is checked against the scores when the study is read, before any work; a
map whose rows are in the score file's order needs no ``row`` column, whatever its ids."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from aria_tda.errors import DataError
from aria_tda.study import run_study


def _two_settings(study, second_map):
    """The planted study with a second setting on the same scores and ``second_map``."""
    text = study.read_text().replace('method = "Planted"', 'name = "first"\nmethod = "Planted"')
    text += (f'\n[[setting]]\nname = "second"\nscores = "scores.npy"\n'
             f'segments = "{second_map}"\n')
    study.write_text(text)
    return study


def _map(tmp_path, name, **columns):
    pd.DataFrame(columns).to_csv(tmp_path / name, index=False)
    return name


def test_string_segment_ids_in_row_order_are_accepted_for_npy(tmp_path, rng, planted_study):
    study = planted_study(tmp_path, rng)
    seg = pd.read_csv(tmp_path / "segments.csv")
    _map(tmp_path, "named.csv", segment_id=[f"piece-{i:04d}.mid#{i % 2}" for i in range(len(seg))],
         track_id=seg.track_id)
    study.write_text(study.read_text().replace('segments = "segments.csv"',
                                               'segments = "named.csv"'))
    out = run_study(study, progress=False, quiet=True)
    reference = run_study(_restore(study), output=tmp_path / "reference", progress=False,
                          quiet=True)
    a = pd.read_csv(out / "homogeneity.csv")
    b = pd.read_csv(reference / "homogeneity.csv")
    np.testing.assert_allclose(a.zbar, b.zbar)  # the same rows as the integer map's


def _restore(study):
    study.write_text(study.read_text().replace('segments = "named.csv"',
                                               'segments = "segments.csv"'))
    return study


@pytest.mark.parametrize("case", ["repeated_rows", "short", "unknown_tracks", "float_rows"])
def test_a_bad_map_of_a_later_setting_is_refused_before_any_work(tmp_path, rng, planted_study,
                                                                 case):
    study = planted_study(tmp_path, rng)
    seg = pd.read_csv(tmp_path / "segments.csv")
    n = len(seg)
    if case == "repeated_rows":
        rows = np.arange(n)
        rows[1] = 0
        name = _map(tmp_path, "bad.csv", row=rows, track_id=seg.track_id)
        match = "exactly once"
    elif case == "short":
        name = _map(tmp_path, "bad.csv", track_id=seg.track_id[:-2])
        match = f"one entry per score row \\({n}\\)"
    elif case == "unknown_tracks":
        name = _map(tmp_path, "bad.csv", track_id=[f"x{i}" for i in range(n)])
        match = "have no features in the store"
    else:
        name = _map(tmp_path, "bad.csv", row=np.arange(n) + 0.5, track_id=seg.track_id)
        match = "integer row indices"
    _two_settings(study, name)
    with pytest.raises(DataError, match=match) as info:
        run_study(study, progress=False, quiet=True)
    assert "'second'" in str(info.value) or case == "float_rows"
    assert not (tmp_path / "results").exists()  # refused before the first setting's work
