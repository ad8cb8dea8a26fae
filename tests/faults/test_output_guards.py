"""No output of ``aria-tda report`` or ``aria-tda evidence`` writes over, into or through a path
ARIA did not make for that purpose: each command and output option (``report --out``, the
media folder ``<stem>_media`` beside it, ``report --latex --tables-dir``, ``evidence --out``)
against targets of every class — (a) a foreign file, (b) a foreign folder with files, (c) a
symbolic link to a foreign file or folder, (d) a hard link to a foreign file, (e) the command's
own inputs, (f) the results folder, its parent, its cache and folders inside it, (g) ARIA's own
earlier output (replaced: the documented rerun).

Each case is a real ``aria-tda`` process started in a working folder with relative paths. A
refusal is exit status 2 with one line naming the path and the flag, and the whole working
folder (links, file bytes and folders) is the same before and after; an allowed rerun leaves the
files of others as they were.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from guardlib import snapshot

from faultlib import cli, one_line_error
from studylib import make_planted_study

pytestmark = pytest.mark.slow

_FOREIGN_PAGE = b"<html><body>my notes</body></html>\n"
_MEDIA_README = ("Clips and pictures of the report beside this folder (written by aria-tda "
                 "report); the page loads them from here. Keep or remove them together.\n")


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    """A finished study with its report, ``--latex`` tables and a dossier (made by ARIA)."""
    root = tmp_path_factory.mktemp("guards") / "work"
    root.mkdir()
    make_planted_study(root, np.random.default_rng(5))
    for args in (["run", "study.toml", "--quiet", "--no-report"],
                 ["report", "results", "--latex", "--no-media", "--quiet"],
                 ["evidence", "results", "--query", "0", "--out", "dossier.html",
                  "--no-media"]):
        proc = cli(args, cwd=root)
        assert proc.returncode == 0, proc.stderr[-2000:]
    assert (root / "results" / "report-tables" / ".aria-output.json").is_file()
    return root


@pytest.fixture
def work(base, tmp_path):
    """A copy of ``base`` and the files of others beside it (the user's, other programs')."""
    w = tmp_path / "work"
    shutil.copytree(base, w, symlinks=True)
    (w / "notes.html").write_bytes(_FOREIGN_PAGE)
    proj = w / "proj"
    (proj / ".cache" / "pip").mkdir(parents=True)
    (proj / "main.tex").write_text("\\documentclass{article}\n")
    (proj / "refs.bib").write_text("@article{a, title={A}}\n")
    (proj / ".cache" / "pip" / "wheel").write_bytes(b"\x00wheel")
    (w / "link_file").symlink_to("proj/main.tex")
    (w / "link_dir").symlink_to("proj")
    (w / "link_page").symlink_to("notes.html")
    os.link(proj / "main.tex", w / "hard.html")
    return w


def refused(work: Path, args: list[str], path: str, flag: str) -> str:
    """Run ``aria-tda ARGS`` in ``work``: exit 2, one line naming ``path`` and ``flag``, and
    nothing under ``work`` changed."""
    before = snapshot(work)
    line = one_line_error(cli(args, cwd=work))
    assert repr(path) in line and f"choose another {flag}" in line, line
    assert snapshot(work) == before, line
    return line


def allowed(work: Path, args: list[str]) -> str:
    proc = cli(args, cwd=work)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


# ---- report --out and evidence --out -----------------------------------------------------

#: (target, what the line says) for a page output, by class.
PAGE_TARGETS = {
    "a-foreign-file": ("notes.html", "is a file ARIA did not write"),
    "b-foreign-folder": ("proj", "is a folder"),
    "c-link-to-file": ("link_file", "is a symbolic link"),
    "c-link-to-page": ("link_page", "is a symbolic link"),
    "c-link-to-folder": ("link_dir", "is a symbolic link"),
    "d-hard-link": ("hard.html", "is a file ARIA did not write"),
    "e-results-json": ("results/results.json", "is the results folder's results.json"),
    "e-table": ("results/reliability.csv", "is the results folder's reliability.csv"),
    "e-absent-table": ("results/lds.csv", "is the results folder's lds.csv"),
    "e-study-file": ("study.toml", "is a file ARIA did not write"),
    "e-queries": ("queries.csv", "is the study's queries"),
    "e-scores": ("scores.npy", "is the study's scores"),
    "e-store": ("store", "is the study's feature_store"),
    "e-in-store": ("store/x.html", "lies inside the study's feature_store"),
    "f-results": ("results", "is the results folder"),
    "f-parent": (".", "is a folder"),
    "f-cache": ("results/.cache", "is the results folder's cache"),
    "f-in-cache": ("results/.cache/x.html", "lies inside the results folder's cache"),
    "f-tables": ("results/report-tables", "is a folder"),
}


@pytest.mark.parametrize("case", sorted(PAGE_TARGETS))
def test_report_out_refuses(work, case):
    target, says = PAGE_TARGETS[case]
    line = refused(work, ["report", "results", "--out", target, "--no-media"], target, "--out")
    assert says in line and line.startswith("aria-tda report: error:"), line


@pytest.mark.parametrize("case", sorted(PAGE_TARGETS))
def test_evidence_out_refuses(work, case):
    target, says = PAGE_TARGETS[case]
    line = refused(work, ["evidence", "results", "--query", "0", "--out", target, "--no-media"],
                   target, "--out")
    assert says in line and line.startswith("aria-tda evidence: error:"), line


def test_a_page_of_the_other_kind_is_not_replaced(work):
    line = refused(work, ["evidence", "results", "--query", "1", "--out", "results/report.html",
                          "--no-media"], "results/report.html", "--out")
    assert "is the results folder's report.html" in line, line
    allowed(work, ["report", "results", "--out", "other.html", "--no-media", "--quiet"])
    line = refused(work, ["evidence", "results", "--query", "1", "--out", "other.html",
                          "--no-media"], "other.html", "--out")
    assert "is an ARIA report page, not an evidence dossier" in line, line
    line = refused(work, ["report", "results", "--out", "dossier.html", "--no-media"],
                   "dossier.html", "--out")
    assert "is an ARIA evidence dossier, not a report page" in line, line


def test_own_pages_are_rewritten_and_a_hard_link_keeps_the_old_bytes(work):
    """(g): a rerun replaces ARIA's own page; the page's other name (a hard link) is not
    written through, and no other file changes."""
    os.link(work / "results" / "report.html", work / "mirror.html")
    os.link(work / "dossier.html", work / "dossier-copy.html")
    old_report = (work / "mirror.html").read_bytes()
    old_dossier = (work / "dossier-copy.html").read_bytes()
    pages = ("dossier.html", "mirror.html", "dossier-copy.html")
    others = {k: v for k, v in snapshot(work).items()
              if not k.startswith("results") and k not in pages}
    allowed(work, ["report", "results", "--k", "5", "--no-media", "--quiet"])
    allowed(work, ["evidence", "results", "--query", "2", "--out", "dossier.html",
                   "--no-media"])
    assert (work / "results" / "report.html").read_bytes() != old_report
    assert (work / "mirror.html").read_bytes() == old_report
    assert (work / "dossier.html").read_bytes() != old_dossier
    assert (work / "dossier-copy.html").read_bytes() == old_dossier
    allowed(work, ["report", "results", "--out", "mirror.html", "--k", "5", "--no-media",
                   "--quiet"])
    assert (work / "mirror.html").read_bytes() != old_report
    assert {k: v for k, v in snapshot(work).items() if k in others} == others


def test_pages_written_before_they_named_their_kind_are_still_told_apart(work):
    """A report page and a dossier without the kind meta (older ARIA) are ARIA's own."""
    for page in (work / "results" / "report.html", work / "dossier.html"):
        text = page.read_text(encoding="utf-8")
        stripped = text.replace('<meta name="aria-output" content="report">', "").replace(
            '<meta name="aria-output" content="dossier">', "")
        assert stripped != text
        page.write_text(stripped, encoding="utf-8")
    refused(work, ["evidence", "results", "--query", "0", "--out", "results/report.html",
                   "--no-media"], "results/report.html", "--out")
    allowed(work, ["report", "results", "--no-media", "--quiet"])
    allowed(work, ["evidence", "results", "--query", "0", "--out", "dossier.html",
                   "--no-media"])


# ---- report --latex --tables-dir ---------------------------------------------------------

TABLE_TARGETS = {
    "a-foreign-file": ("notes.html", "is a file"),
    "b-foreign-folder": ("proj", "holds files ARIA did not write (.cache, main.tex, refs.bib)"),
    "c-link-to-folder": ("link_dir", "is a symbolic link"),
    "c-link-to-file": ("link_file", "is a symbolic link"),
    "d-hard-link": ("hard.html", "is a file"),
    "e-store": ("store", "is the study's feature_store"),
    "e-inside-store": ("store/tables", "lies inside the study's feature_store"),
    "e-table": ("results/reliability.csv", "is the results folder's reliability.csv"),
    "e-study-file": ("study.toml", "is a file"),
    "f-results": ("results", "is the results folder"),
    "f-parent": (".", "holds the results folder"),
    "f-cache": ("results/.cache", "is the results folder's cache"),
    "f-step": ("results/.cache/Planted-92b5c62e", "lies inside the results folder's cache"),
    "f-new-in-cache": ("results/.cache/tables", "lies inside the results folder's cache"),
    "f-page": ("results/report.html", "is also the report page"),
}


@pytest.mark.parametrize("case", sorted(TABLE_TARGETS))
def test_report_tables_dir_refuses(work, case):
    target, says = TABLE_TARGETS[case]
    line = refused(work, ["report", "results", "--latex", "--no-media", "--tables-dir", target],
                   target, "--tables-dir")
    assert says in line, line


def test_a_paper_folder_is_never_wiped(work):
    """Before: ``--tables-dir`` naming a paper's folder replaced it with the tables."""
    (work / "paper").mkdir()
    (work / "paper" / "main.tex").write_text("\\input{tables/reliability}\n")
    refused(work, ["report", "results", "--latex", "--no-media", "--tables-dir", "paper"],
            "paper", "--tables-dir")


def test_own_tables_are_replaced_and_files_of_others_kept(work):
    """(g): a rerun into ARIA's tables folder (the default ``report-tables``, or an empty
    folder the user made) replaces only ARIA's files; a file the user added stays."""
    tables = work / "results" / "report-tables"
    (tables / "notes.txt").write_text("mine\n")
    (tables / "reliability.csv").write_text("stale\n")
    allowed(work, ["report", "results", "--latex", "--no-media", "--quiet"])
    assert (tables / "notes.txt").read_text() == "mine\n"
    assert (tables / "reliability.csv").read_text() != "stale\n"
    mark = json.loads((tables / ".aria-output.json").read_text())
    assert mark["kind"] == "report-tables" and "notes.txt" not in mark["files"]
    assert "reliability.csv" in mark["files"]
    (work / "empty").mkdir()
    allowed(work, ["report", "results", "--latex", "--no-media", "--tables-dir", "empty",
                   "--out", "e.html", "--quiet"])
    assert (work / "empty" / "reliability.csv").is_file()
    allowed(work, ["report", "results", "--latex", "--no-media", "--tables-dir", "empty",
                   "--out", "e.html", "--quiet"])


def test_a_file_of_others_where_a_table_goes_is_refused(work):
    """In ARIA's tables folder, a file ARIA did not list there is not replaced."""
    tables = work / "results" / "report-tables"
    mark_path = tables / ".aria-output.json"
    mark = json.loads(mark_path.read_text())
    mark["files"].remove("reliability.csv")
    mark_path.write_text(json.dumps(mark))
    line = refused(work, ["report", "results", "--latex", "--no-media"],
                   "results/report-tables/reliability.csv", "--tables-dir")
    assert "is a file ARIA did not write" in line, line


def test_a_tables_folder_written_before_the_manifest_is_still_aria_s(work):
    tables = work / "results" / "report-tables"
    (tables / ".aria-output.json").unlink()
    allowed(work, ["report", "results", "--latex", "--no-media", "--quiet"])
    assert (tables / ".aria-output.json").is_file()
    (tables / ".aria-output.json").unlink()
    (tables / "main.tex").write_text("mine\n")  # no longer a folder of ARIA's tables only
    line = refused(work, ["report", "results", "--latex", "--no-media"],
                   "results/report-tables", "--tables-dir")
    assert "holds files ARIA did not write" in line, line


# ---- report's media folder ---------------------------------------------------------------


def _aria_media(folder: Path) -> None:
    """A media folder as ARIA wrote it before folders carried their manifest."""
    (folder / "q").mkdir(parents=True)
    (folder / "README.txt").write_text(_MEDIA_README)
    (folder / "q" / "x-0123abcd.ogg").write_bytes(b"OggS")


MEDIA_TARGETS = {
    "a-foreign-file": lambda w: (w / "page_media").write_bytes(b"mine"),
    "b-foreign-folder": lambda w: shutil.copytree(w / "proj", w / "page_media"),
    "c-link-to-folder": lambda w: (w / "page_media").symlink_to("proj"),
    "c-link-to-media": lambda w: (_aria_media(w / "elsewhere"),
                                  (w / "page_media").symlink_to("elsewhere")),
    "d-hard-link": lambda w: os.link(w / "proj" / "main.tex", w / "page_media"),
    "other-kind": lambda w: shutil.copytree(w / "results" / "report-tables", w / "page_media"),
}


@pytest.mark.parametrize("case", sorted(MEDIA_TARGETS))
def test_report_media_folder_refuses(work, case):
    """Before: ``report --out X.html`` replaced an existing ``X_media/`` wholesale."""
    MEDIA_TARGETS[case](work)
    line = refused(work, ["report", "results", "--out", "page.html", "--quiet"], "page_media",
                   "--out")
    assert not (work / "page.html").exists(), line


def test_own_media_folder_is_replaced_and_files_of_others_kept(work):
    """(g): ARIA's own media folder (here one written before the manifest) is ARIA's to
    replace; a file the user put there stays."""
    _aria_media(work / "page_media")
    (work / "page_media" / "mine.txt").write_text("mine\n")
    allowed(work, ["report", "results", "--out", "page.html", "--quiet"])
    assert (work / "page_media" / "mine.txt").read_text() == "mine\n"
    assert not (work / "page_media" / "q" / "x-0123abcd.ogg").exists()


# ---- the folder writer itself (in process) -----------------------------------------------


def _write(folder: Path, files: dict[str, str]) -> None:
    from aria_tda._output_folders import owned_folder
    from aria_tda._outputs import MEDIA_FOLDER

    with owned_folder(folder, MEDIA_FOLDER, name="out", flag="--out") as tmp:
        for rel, text in files.items():
            (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
            (tmp / rel).write_text(text)


def test_owned_folder_replaces_only_its_own_files(tmp_path):
    from aria_tda.errors import ParameterError

    folder = tmp_path / "m"
    _write(folder, {"a.txt": "1", "q/b.txt": "2"})
    assert json.loads((folder / ".aria-output.json").read_text())["files"] == ["a.txt",
                                                                              "q/b.txt"]
    _write(folder, {"a.txt": "3"})  # only ARIA's files there: swapped whole
    assert snapshot(folder).keys() == {"a.txt", ".aria-output.json"}
    (folder / "mine.txt").write_text("mine")
    (folder / "q").mkdir()
    (folder / "q" / "mine.txt").write_text("mine")
    _write(folder, {"b.txt": "4"})  # a file of others: merged, theirs kept, ARIA's stale gone
    assert sorted(snapshot(folder)) == [".aria-output.json", "b.txt", "mine.txt", "q",
                                        "q/mine.txt"]
    before = snapshot(folder)
    with pytest.raises(ParameterError, match=r"m/mine\.txt' is a file ARIA did not write"):
        _write(folder, {"mine.txt": "5"})
    with pytest.raises(RuntimeError):
        with _owned(folder) as tmp:
            (tmp / "b.txt").write_text("6")
            raise RuntimeError("stop")
    assert snapshot(folder) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m"]  # no temporary left
    (tmp_path / "theirs").mkdir()
    (tmp_path / "theirs" / "x").write_text("x")
    with pytest.raises(ParameterError, match=r"theirs' holds files ARIA did not write \(x\)"):
        _write(tmp_path / "theirs", {"a.txt": "1"})
    assert snapshot(tmp_path / "theirs") == {"x": b"x"}
    # folders and links of others inside ARIA's folder: kept, never written into or over
    (folder / "empty").mkdir()
    (folder / "link").symlink_to("../theirs")
    _write(folder, {"c.txt": "7"})
    assert (folder / "empty").is_dir() and (folder / "link").is_symlink()
    with pytest.raises(ParameterError, match=r"m/link' is a symbolic link, where ARIA would"):
        _write(folder, {"link/x": "8"})
    with pytest.raises(ParameterError, match=r"m/empty' is a folder, where ARIA would"):
        _write(folder, {"empty": "9"})
    assert snapshot(tmp_path / "theirs") == {"x": b"x"}


def _owned(folder: Path):
    from aria_tda._output_folders import owned_folder
    from aria_tda._outputs import MEDIA_FOLDER

    return owned_folder(folder, MEDIA_FOLDER, name="out", flag="--out")
