"""State of a study run judged by content (issue 26): inputs are read-only, caches are keyed
on content digests, one slot per setting, damaged cache entries are recomputed with one
warning, a report never sits beside tables it was not built from, no query row is dropped
silently."""

from __future__ import annotations

import os
import shutil
import warnings

import numpy as np
import pandas as pd
import pytest

from aria_tda.errors import AriaWarning, DataError, ParameterError
from aria_tda.features.store import StoreWriter
from aria_tda.report import load_results
from aria_tda.results import read_results_meta, read_table, write_table
from aria_tda.study import run_study
from aria_tda.study.cache import slot_name, slug
from aria_tda.study.inputs import read_queries
from aria_tda.study.studyfile import parse_study
from studylib import make_planted_study

ENCODER = {"encoder": "toy-enc", "weights_sha256": "ab" * 32, "layer": None,
           "sample_rate": 16000, "window_seconds": 1.0, "dim": 16}


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """One finished planted study (results + cache), copied by the tests that damage it."""
    base = tmp_path_factory.mktemp("finished")
    study = make_planted_study(base, np.random.default_rng(7))
    out = run_study(study, quiet=True)
    return study, out


def _copy_run(finished, tmp_path):
    study, out = finished
    copy = tmp_path / "results"
    shutil.copytree(out, copy)
    return study, copy


# ---- inputs are read-only ------------------------------------------------------------------


def test_scores_beside_embedding_stores_is_refused_when_parsed():
    base = 'modality = "audio"\nfeature_store = "f"\n\n[[setting]]\nname = "clap"\n'
    text = base + 'scores = "scores.npy"\ntrain_embeddings = "a"\nquery_embeddings = "b"\n'
    with pytest.raises(ParameterError) as err:
        parse_study(text, source="s.toml")
    msg = str(err.value)
    assert "\n" not in msg and msg.startswith("s.toml:6: setting[0].scores:")
    assert "'clap'" in msg and "train_embeddings and query_embeddings" in msg


def test_an_existing_score_matrix_is_never_replaced_by_a_cosine_matrix(
        tmp_path, rng, planted_study):
    """Before: the cosine matrix of the embedding stores was written over ``scores``, exit 0."""
    study = planted_study(tmp_path, rng)
    for name, n in (("emb_train", 120), ("emb_q", 24)):
        w = StoreWriter(tmp_path / name, modality="embedding", params={"encoder": ENCODER})
        ids = [f"t{i:03d}" for i in range(n)] if n == 120 else [f"q{j}" for j in range(n)]
        w.append(ids, {"embedding": rng.normal(size=(n, 16))})
    before = {p.name: p.read_bytes() for p in tmp_path.glob("scores.npy*")}
    study.write_text(study.read_text() + '\n[[setting]]\nname = "emb"\nscores = "scores.npy"\n'
                     'train_embeddings = "emb_train"\nquery_embeddings = "emb_q"\n')
    with pytest.raises(ParameterError, match=r"setting\[1\]\.scores: .*'emb'"):
        run_study(study, quiet=True)
    assert {p.name: p.read_bytes() for p in tmp_path.glob("scores.npy*")} == before
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize("where", ["store", "inside-store", "over-queries"])
def test_an_output_that_is_or_holds_an_input_is_refused(tmp_path, rng, planted_study, where):
    """Before: ``output`` = the folder of the queries file wrote ``queries.csv`` over it."""
    study = planted_study(tmp_path, rng)
    out = {"store": tmp_path / "store", "inside-store": tmp_path / "store" / "results",
           "over-queries": tmp_path}[where]
    snapshot = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    with pytest.raises(ParameterError, match=r"^output: expected a results folder") as err:
        run_study(study, output=out, quiet=True)
    assert "\n" not in str(err.value)
    assert ("queries" if where == "over-queries" else "feature_store") in str(err.value)
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == snapshot
    assert not (tmp_path / "store" / "results").exists()


def test_a_folder_aria_did_not_write_is_not_written_over(tmp_path, rng, planted_study):
    study = planted_study(tmp_path, rng)
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "reliability.csv").write_text("my own table\n")
    with pytest.raises(ParameterError, match=r"ARIA did not write.*reliability\.csv"):
        run_study(study, output=mine, quiet=True)
    assert (mine / "reliability.csv").read_text() == "my own table\n"
    assert sorted(p.name for p in mine.iterdir()) == ["reliability.csv"]


# ---- state judged by content ---------------------------------------------------------------


def test_scores_rewritten_with_their_mtime_kept_are_recomputed(tmp_path, rng, planted_study,
                                                               capsys):
    """Before: the cache was keyed on size + mtime and served the old results."""
    study = planted_study(tmp_path, rng)
    out = run_study(study)
    old = read_table(out, "homogeneity")
    capsys.readouterr()
    scores = tmp_path / "scores.npy"
    st = scores.stat()
    x = np.load(scores)
    np.save(scores, rng.permutation(x, axis=0))  # same shape and size, other values
    os.utime(scores, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert scores.stat().st_size == st.st_size and scores.stat().st_mtime_ns == st.st_mtime_ns
    run_study(study)
    log = capsys.readouterr().out
    assert "reusing cached results" not in log and "recomputing (parameters changed" in log
    assert not read_table(out, "homogeneity").equals(old)


def test_settings_whose_names_slug_alike_have_their_own_cache(tmp_path, rng, planted_study,
                                                              capsys):
    """Before: ``TRAK/fine`` and ``TRAK_fine`` shared one slot and evicted each other."""
    assert slug("TRAK/fine") == slug("TRAK_fine")
    assert slot_name("TRAK/fine") != slot_name("TRAK_fine")
    assert slot_name("TRAK/fine").startswith("TRAK_fine-")
    study = planted_study(tmp_path, rng)
    text = study.read_text()
    head, setting = text.split("[[setting]]")
    two = "".join(f"[[setting]]\nname = {name!r}\n" + setting.replace('name = "Planted"\n', "")
                  for name in ("TRAK/fine", "TRAK_fine"))
    study.write_text(head + two)
    out = run_study(study)
    capsys.readouterr()
    slots = sorted(p.name for p in (out / ".cache").iterdir())
    assert slots == sorted([slot_name("TRAK/fine"), slot_name("TRAK_fine")])
    run_study(study)
    log = capsys.readouterr().out
    assert log.count("reusing cached results") == 2 and "recomputing" not in log


def _truncate(path):
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _garbage(path):
    path.write_bytes(b"\x00\xffnot parquet at all" * 20)


def _wrong_schema(path):
    pd.DataFrame({"a": [1, 2], "b": ["x", "y"]}).to_parquet(path, index=False)


def _bad_json(path):
    path.write_text('{"status": "complete", "params": {')


@pytest.mark.parametrize("damage, target", [
    (_truncate, "homogeneity.parquet"),
    (_garbage, "homogeneity.parquet"),
    (_wrong_schema, "homogeneity.parquet"),
    (_truncate, "query_z.parquet"),
    (_garbage, "diagnostics.json"),
    (_bad_json, "stage.json"),
], ids=["truncated", "garbage", "wrong-schema", "truncated-query_z", "garbage-json",
        "bad-record"])
def test_a_damaged_cache_entry_is_recomputed_with_one_warning(finished, tmp_path, capsys,
                                                              damage, target):
    """Before: a truncated parquet was a pyarrow traceback on every rerun; a garbage record
    was recomputed without a word."""
    study, out = _copy_run(finished, tmp_path)
    (step,) = [p for p in (out / ".cache").iterdir() if not p.name.startswith("_")]
    want = {name: read_table(out, name) for name in ("homogeneity", "reliability", "topk")}
    damage(step / target)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run_study(study, output=out)
    damaged = [w for w in caught if "damaged cache entry" in str(w.message)]
    assert len(damaged) == 1 and issubclass(damaged[0].category, AriaWarning)
    assert target in str(damaged[0].message) and "'Planted'" in str(damaged[0].message)
    assert "reusing cached results" not in capsys.readouterr().out
    for name, df in want.items():
        pd.testing.assert_frame_equal(read_table(out, name), df)
    # the recomputed entry is whole again: the next run reuses it without a warning
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run_study(study, output=out)
    assert not [w for w in caught if "damaged" in str(w.message)]
    assert "reusing cached results" in capsys.readouterr().out


# ---- reports and tables --------------------------------------------------------------------


@pytest.mark.slow
def test_a_rerun_without_report_removes_the_old_one_with_a_note(finished, tmp_path, capsys):
    """Before: ``--no-report`` left the old report.html beside the new tables."""
    from aria_tda.report import write_report

    study, out = _copy_run(finished, tmp_path)
    write_report(out, plots=False)
    assert (out / "report.html").is_file()
    run_study(study, output=out, report=False)
    log = capsys.readouterr().out
    assert not (out / "report.html").exists()
    assert "removed the old report.html" in log and f"aria-tda report {out}" in log


def test_a_report_page_aria_did_not_write_is_kept(finished, tmp_path):
    study, out = _copy_run(finished, tmp_path)
    (out / "report.html").write_text("<html>my notes</html>")
    with pytest.raises(ParameterError, match=r"report\.html.*ARIA did not write"):
        run_study(study, output=out, report=True, quiet=True)
    assert (out / "report.html").read_text() == "<html>my notes</html>"


def test_tables_that_results_json_was_not_written_with_are_named(finished, tmp_path):
    _, out = _copy_run(finished, tmp_path)
    meta = read_results_meta(out)
    assert set(meta["tables"]) >= {"reliability.csv", "homogeneity.csv", "query_z.parquet"}
    assert not load_results(out).missing
    hom = read_table(out, "homogeneity")
    hom.loc[0, "zbar"] = 99.0
    write_table(out, "homogeneity", hom)
    notes = load_results(out).missing
    assert len(notes) == 1 and notes[0].startswith("homogeneity.csv: differs from the table")


def test_a_table_that_holds_only_its_header_is_named(finished, tmp_path):
    """Before: an empty reliability.csv rendered "unknown" verdicts without a word."""
    from aria_tda.results import write_results_meta

    _, out = _copy_run(finished, tmp_path)
    rel = read_table(out, "reliability")
    write_table(out, "reliability", rel.iloc[:0])
    meta = read_results_meta(out)
    write_results_meta(out, {k: v for k, v in meta.items()
                             if k not in {"kind", "aria_version", "created"}},
                       record_tables=True)
    data = load_results(out)
    assert [m for m in data.missing if m.startswith("reliability.csv")] == [
        "reliability.csv (reliability diagnostics and collapse verdicts): holds no rows; "
        "left out"]
    assert data.table("reliability") is None


# ---- nothing dropped silently --------------------------------------------------------------


def test_conflicting_rows_for_one_query_are_refused(tmp_path):
    """Before: drop_duplicates kept one of them without a word."""
    f = tmp_path / "q.csv"
    f.write_text("query,genre\n0,a\n1,b\n1,c\n2,a\n2,b\n")
    with pytest.raises(DataError) as err:
        read_queries(f, 3)
    msg = str(err.value)
    assert str(f) in msg and "query 1 (lines 3, 4); 2 (lines 5, 6)" in msg and "\n" not in msg


def test_identical_rows_for_one_query_are_kept_once_with_a_warning(tmp_path):
    f = tmp_path / "q.csv"
    f.write_text("query,genre\n0,a\n1,b\n1,b\n")
    with pytest.warns(AriaWarning, match=r"q\.csv.*identical rows for query 1"):
        df = read_queries(f, 2)
    assert df["genre"].tolist() == ["a", "b"]
