"""No results folder of ``aria-tda run`` or ``aria-tda homogeneity`` writes over, into or through
what ARIA did not make for it: targets of every class — (a) a foreign file, (b) a foreign folder
(a home or project folder holding another program's ``.cache``, a user's file named like a
table), (c) symbolic links (to such a folder, as the run's ``.cache``, as a table), (d) hard
links (the writer lock, a table), (e) the study's inputs, (f) the cache of a results folder and
folders inside it, (g) ARIA's own results folder (the documented rerun, also through a link).

Each case is a real ``aria-tda`` process started in a working folder with relative paths; a
refusal is exit status 2 with one line naming the path (and the output folder to change), and
the whole working folder is the same before and after.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from guardlib import snapshot

from faultlib import cli, one_line_error
from studylib import make_planted_study

pytestmark = pytest.mark.slow

_FLAG = "output folder (--out)"
_HOMOGENEITY = ["homogeneity", "scores.npy", "--segments", "segments.csv", "--features", "store",
                "-K", "5", "10", "-B", "20", "--no-progress", "--no-report", "--out"]
_RUN = ["run", "study.toml", "--quiet", "--no-report", "--out"]


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    """A finished small study (its results folder made by ``aria-tda run``)."""
    root = tmp_path_factory.mktemp("run-guards") / "work"
    root.mkdir()
    make_planted_study(root, np.random.default_rng(6))
    proc = cli([*_RUN, "results"], cwd=root)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return root


@pytest.fixture
def work(base, tmp_path):
    """A copy of ``base``, a home folder with other programs' caches and a project folder."""
    w = tmp_path / "work"
    shutil.copytree(base, w, symlinks=True)
    home = w / "home"
    for rel, data in ((".cache/pip/http/0/a1", b"\x00wheel"),
                      (".cache/huggingface/hub/model.bin", b"weights"),
                      ("notes.txt", b"my notes\n")):
        (home / rel).parent.mkdir(parents=True, exist_ok=True)
        (home / rel).write_bytes(data)
    proj = w / "proj"
    proj.mkdir()
    (proj / "main.tex").write_text("\\documentclass{article}\n")
    (proj / "reliability.csv").write_text("my own table\n")
    (w / "notes.html").write_bytes(b"<html>mine</html>\n")
    (w / "link_home").symlink_to("home")
    (w / "link_file").symlink_to("notes.html")
    return w


def names(line: str, work: Path, path: str) -> bool:
    """The line names ``path`` (relative to ``work``), as given or made absolute."""
    return any(f"'{form}'" in line for form in (path, os.path.normpath(work / path)))


def refused(work: Path, args: list[str], path: str, *, flag: str | None = _FLAG) -> str:
    before = snapshot(work)
    line = one_line_error(cli(args, cwd=work))
    assert names(line, work, path), line
    assert flag is None or f"choose another {flag}" in line, line
    assert snapshot(work) == before, line
    return line


def allowed(work: Path, args: list[str]) -> None:
    proc = cli(args, cwd=work)
    assert proc.returncode == 0, proc.stderr[-2000:]


#: target -> (path the line names, what it says), by class; the same for run and homogeneity.
TARGETS = {
    "b-home-with-caches": ("home", "home/.cache", "holds files ARIA did not write (huggingface, "
                           "pip), not the run's cache"),
    "b-project-with-a-table-name": ("proj", "proj", "holds files ARIA did not write "
                                    "(reliability.csv)"),
    "c-link-to-home": ("link_home", "link_home", "is a symbolic link to"),
    "e-store": ("store", "store", "the feature_store"),
    "e-inside-store": ("store/results", "store/results", "inside the feature_store"),
    "e-parent-of-inputs": (".", ".", "queries.csv"),
    "f-cache": ("results/.cache", "results/.cache", "is the cache of the results folder"),
    "f-step": ("results/.cache/Planted-92b5c62e", "results/.cache/Planted-92b5c62e",
               "lies inside the cache of the results folder"),
}


@pytest.mark.parametrize("command", ["run", "homogeneity"])
@pytest.mark.parametrize("case", sorted(TARGETS))
def test_results_folder_refuses(work, command, case):
    target, named, says = TARGETS[case]
    args = [*(_RUN if command == "run" else _HOMOGENEITY), target]
    line = refused(work, args, named)
    assert says in line and line.startswith(f"aria-tda {command}: error:"), line


@pytest.mark.parametrize("target", ["notes.html", "link_file"])
def test_a_file_is_not_a_results_folder(work, target):
    """(a), (c): a file, or a link to one, where the results folder goes."""
    refused(work, [*_RUN, target], target, flag=None)


def test_a_cache_of_another_program_in_a_results_folder_is_not_swept(work):
    """Before: a ``.cache`` beside the run's tables counted as the run's own; unfinished "steps"
    (pip's folders) were removed."""
    (work / "results" / ".cache" / "pip" / "http").mkdir(parents=True)
    (work / "results" / ".cache" / "pip" / "http" / "a1").write_bytes(b"wheel")
    line = refused(work, [*_RUN, "results"], "results/.cache")
    assert "holds files ARIA did not write (pip)" in line, line


def test_a_cache_that_is_a_link_is_refused(work):
    cache = work / "results" / ".cache"
    shutil.rmtree(cache)
    cache.symlink_to("../home/.cache")
    line = refused(work, [*_RUN, "results"], "results/.cache")
    assert "is a symbolic link" in line, line


def test_a_table_that_is_a_link_is_refused(work):
    (work / "results" / "tracks.csv").unlink()
    (work / "results" / "tracks.csv").symlink_to("../proj/main.tex")
    line = refused(work, [*_RUN, "results"], "results/tracks.csv")
    assert "is a symbolic link" in line, line


def test_a_writer_lock_that_is_a_link_is_refused(work):
    """The lock file is written in place (its holder's name): never through a link."""
    lock = work / "results" / ".aria-lock"
    os.link(work / "proj" / "main.tex", lock)
    line = refused(work, [*_RUN, "results"], "results/.aria-lock")
    assert "is a hard link" in line, line
    lock.unlink()
    lock.symlink_to("../proj/main.tex")
    line = refused(work, [*_RUN, "results"], "results/.aria-lock")
    assert "is a symbolic link" in line, line
    refused(work, ["report", "results", "--no-media"], "results/.aria-lock", flag="--out")


def test_a_page_that_is_not_a_report_is_kept(work):
    """A ``report.html`` that is not ARIA's report: kept, with or without a report."""
    page = work / "results" / "report.html"
    page.write_bytes(b"<html>mine</html>\n")
    study = work / "study.toml"
    study.write_text(study.read_text().replace("report = false", "report = true"))
    refused(work, ["run", "study.toml", "--quiet", "--out", "results"], "results/report.html",
            flag=f"{_FLAG} or run with --no-report")
    allowed(work, [*_RUN, "results"])  # without a report the page is not touched
    assert page.read_bytes() == b"<html>mine</html>\n"
    allowed(work, ["evidence", "results", "--query", "0", "--out", "d.html", "--no-media"])
    page.unlink()
    shutil.copy(work / "d.html", page)  # an ARIA dossier, which the run would remove
    refused(work, [*_RUN, "results"], "results/report.html")


def test_reruns_into_aria_s_own_folder(work):
    """(g): a rerun into its own results folder, also given as a link, keeps working; a table
    hard-linked to a file of the user's is replaced by a new file, not written through."""
    os.link(work / "results" / "tracks.csv", work / "proj" / "tracks-copy.csv")
    (work / "results" / "tracks.csv").write_bytes(b"edited\n")  # both names see the edit
    kept = (work / "proj" / "tracks-copy.csv").read_bytes()
    assert kept == b"edited\n"
    allowed(work, [*_RUN, "results"])
    assert (work / "proj" / "tracks-copy.csv").read_bytes() == kept
    assert (work / "results" / "tracks.csv").read_bytes() != kept
    (work / "rlink").symlink_to("results")
    study = work / "study.toml"
    study.write_text(study.read_text().replace("report = false", "report = true"))
    allowed(work, ["run", "study.toml", "--quiet", "--out", "rlink"])
    assert (work / "results" / "report.html").is_file()
    allowed(work, [*_HOMOGENEITY, "hom"])
    allowed(work, [*_HOMOGENEITY, "hom"])
    (work / "empty").mkdir()
    (work / "elink").symlink_to("empty")
    allowed(work, [*_HOMOGENEITY, "elink"])
    assert (work / "empty" / "results.json").is_file()
