"""aria_tda.results: the results folder schema, its tables and results.json."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from aria_tda.errors import DataError, FileFormatError
from aria_tda.results import TABLES, read_results_meta, read_table, write_results_meta, write_table


def test_results_tables_roundtrip(tmp_path):
    write_results_meta(tmp_path, {"study": {"B": 200}, "settings": []})
    assert read_results_meta(tmp_path)["study"]["B"] == 200
    df = pd.DataFrame({c: [1] for c in TABLES["homogeneity"].columns})
    write_table(tmp_path, "homogeneity", df)
    assert read_table(tmp_path, "homogeneity").shape == (1, len(TABLES["homogeneity"].columns))
    assert read_table(tmp_path, "lds") is None
    with pytest.raises(DataError, match="missing required column"):
        write_table(tmp_path, "homogeneity", df.drop(columns=["zbar"]))


def test_not_a_results_dir(tmp_path):
    with pytest.raises(FileFormatError, match="not an ARIA results folder"):
        read_results_meta(tmp_path)


def test_read_table_columns_and_filters(tmp_path):
    write_results_meta(tmp_path, {"settings": []})
    topk = pd.DataFrame(
        {
            "setting": "a",
            "variant": "original",
            "query": np.repeat([0, 1], 5),
            "rank": np.tile(np.arange(1, 6), 2),
            "track_id": "t",
            "score": 1.0,
        }
    )
    write_table(tmp_path, "topk", topk)
    got = read_table(tmp_path, "topk", columns=["query", "rank"], filters=[("rank", "<=", 2)])
    assert list(got.columns) == ["query", "rank"] and len(got) == 4
    hom = pd.DataFrame({c: [1, 2] for c in TABLES["homogeneity"].columns})
    write_table(tmp_path, "homogeneity", hom)
    assert len(read_table(tmp_path, "homogeneity", filters=[("K", "in", [2])])) == 1
