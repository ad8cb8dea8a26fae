"""The ``aria-tda`` command itself: ``--version`` and ``--help``."""

from __future__ import annotations

import subprocess
import sys

import pytest

from aria_tda.cli import main


def test_cli_help_and_version():
    out = subprocess.run(
        [sys.executable, "-m", "aria_tda.cli", "--version"], capture_output=True, text=True
    )
    assert out.returncode == 0 and out.stdout.startswith("aria-tda ")
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0


def _diagnose_json(tmp_path):
    import numpy as np

    path = tmp_path / "s.npy"
    np.save(path, np.random.default_rng(0).normal(size=(200, 30)))
    return [sys.executable, "-m", "aria_tda.cli", "diagnose", str(path), "--json"]


def test_a_reader_that_left_ends_the_command_quietly(tmp_path):
    """`aria-tda diagnose F --json | head -5`: no message, the status of a SIGPIPE'd command.

    Two runs whose reader is gone before anything is written (the race the issue saw lost
    4 times in 5, made certain) and a shell pipeline as a user types it, side by side.
    """
    import os

    argv = _diagnose_json(tmp_path)
    closed = []
    for _ in range(2):
        read_fd, write_fd = os.pipe()
        os.close(read_fd)
        closed.append(subprocess.Popen(argv, stdout=write_fd, stderr=subprocess.PIPE, text=True))
        os.close(write_fd)
    line = "set -o pipefail; " + " ".join(map(str, argv)) + " | head -5"
    shells = [subprocess.Popen(["bash", "-c", line], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True) for _ in range(1)]
    for proc in closed:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 141 and err == "", err
    for proc in shells:  # head may or may not have left before the write
        out, err = proc.communicate(timeout=300)
        assert proc.returncode in {0, 141} and err == "", err
        assert out.splitlines()[0] == "{" and len(out.splitlines()) == 5


def test_error_lines_are_one_line_without_escape_codes(capsys):
    from aria_tda.cli.common import MAX_ERROR_CHARS, handle_errors
    from aria_tda.errors import FileFormatError

    def body():
        raise FileFormatError("f.pt: \x1b[1mbold\x1b[0m trouble\n\tdetails " + "y" * 5000)

    assert handle_errors("diagnose", body) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "\x1b" not in err and "bold trouble details" in err
    assert len(err) < MAX_ERROR_CHARS + 80 and "ARIA_DEBUG=1" in err


def test_other_libraries_warnings_are_one_line_each(capsys):
    import warnings

    from aria_tda.cli.common import install_warning_format

    with warnings.catch_warnings():
        warnings.simplefilter("always")
        printer = install_warning_format("diagnose")
        for _ in range(2):  # printed once
            warnings.warn("Detected pickle protocol 5 in the checkpoint\n  result = load()",
                          UserWarning, stacklevel=1)
        warnings.warn("\x1b[1mdeprecated\x1b[0m thing", FutureWarning, stacklevel=1)
        printer.flush()
    assert capsys.readouterr().err.splitlines() == [
        "aria-tda diagnose: warning: UserWarning: Detected pickle protocol 5 in the checkpoint",
        "aria-tda diagnose: warning: FutureWarning: deprecated thing",
    ]


def test_an_os_error_names_the_flag_and_what_was_expected(tmp_path, capsys):
    import argparse
    import errno

    from aria_tda.cli.common import handle_errors

    spill = tmp_path / "spill"
    spill.write_text("a file")
    args = argparse.Namespace(command="diagnose", scores=str(tmp_path / "s.npy"),
                              spill_dir=str(spill), memory="1MB")
    flags = {"scores": "SCORES", "spill_dir": "--spill-dir", "memory": "--memory"}

    def exists():
        raise FileExistsError(errno.EEXIST, "File exists", str(spill))

    assert handle_errors("diagnose", exists, args=args, flags=flags) == 2
    assert capsys.readouterr().err == (
        "aria-tda diagnose: error: --spill-dir: expected a directory, got a file: "
        f"{str(spill)!r}\n")

    def inside():
        raise NotADirectoryError(errno.ENOTDIR, "Not a directory", str(spill / "tile-0.npy"))

    assert handle_errors("diagnose", inside, args=args, flags=flags) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"aria-tda diagnose: error: --spill-dir: expected a directory at "
                          f"{str(spill)!r}, got a file") and err.count("\n") == 1

    def full():
        raise OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "out.npy"))

    assert handle_errors("aggregate", full) == 2
    err = capsys.readouterr().err
    assert err.startswith("aria-tda aggregate: error: No space left on ") and "out.npy" in err

    loop = tmp_path / "loop"
    loop.symlink_to(loop)

    def looping():
        open(loop)

    assert handle_errors("diagnose", looping, args=args, flags=flags) == 2
    err = capsys.readouterr().err
    assert "a symlink loop" in err and err.count("\n") == 1

    def missing():
        open(tmp_path / "s.npy")

    assert handle_errors("diagnose", missing, args=args, flags=flags) == 2
    assert capsys.readouterr().err == (
        "aria-tda diagnose: error: SCORES: No such file or directory: "
        f"{str(tmp_path / 's.npy')!r}\n")


def test_the_nearest_path_given_names_the_flag(tmp_path, monkeypatch, capsys):
    import argparse
    import errno

    from aria_tda.cli.common import handle_errors

    monkeypatch.chdir(tmp_path)
    args = argparse.Namespace(command="features", input=".", out="store")

    def fails():
        raise FileExistsError(errno.EEXIST, "File exists", "store/part-0.parquet")

    (tmp_path / "store").mkdir()
    (tmp_path / "store" / "part-0.parquet").write_text("x")
    assert handle_errors("features", fails, args=args, flags={"input": "INPUT"}) == 2
    assert capsys.readouterr().err.startswith("aria-tda features: error: --out: ")
