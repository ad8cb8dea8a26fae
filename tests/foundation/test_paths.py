"""aria_tda._paths: input paths are looked at before anything opens them; OSErrors as one line."""

from __future__ import annotations

import errno
import os
import socket

import pytest

from aria_tda import _checks as C
from aria_tda._paths import describe_mode, input_path, os_error_message, special_file
from aria_tda.errors import FileFormatError, ParameterError


@pytest.fixture
def fifo(tmp_path):
    p = tmp_path / "pipe.npy"
    os.mkfifo(p)
    return p


def test_regular_files_and_folders_pass(tmp_path):
    f = tmp_path / "s.npy"
    f.write_bytes(b"x")
    assert input_path(f, "scores", kind="file") == f
    assert input_path(str(tmp_path), "store", kind="dir") == tmp_path
    assert input_path(f, "scores") == f and input_path(tmp_path, "scores") == tmp_path
    link = tmp_path / "link.npy"
    link.symlink_to(f)
    assert input_path(link, "scores", kind="file") == link  # symlinks are followed


@pytest.mark.parametrize("kind", ["any", "file", "dir"])
def test_a_fifo_is_refused_without_being_opened(fifo, kind):
    # opening a FIFO with no writer blocks: that this returns at all shows nothing opened it
    with pytest.raises(FileFormatError, match=r"^scores: expected .*, got a FIFO \(named pipe\)"):
        input_path(fifo, "scores", kind=kind)


def test_devices_and_sockets_are_refused(tmp_path):
    with pytest.raises(FileFormatError, match=r"got a character device: '/dev/zero'"):
        input_path("/dev/zero", "scores")
    sock_path = tmp_path / "s.sock"
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(str(sock_path))
        with pytest.raises(FileFormatError, match=r"got a socket"):
            input_path(sock_path, "scores")
        assert special_file(sock_path) == "a socket"
    finally:
        sock.close()


def test_special_file_names_only_special_files(tmp_path, fifo):
    assert special_file(fifo) == "a FIFO (named pipe)"
    assert special_file("/dev/null") == "a character device"
    assert special_file(tmp_path) is None and special_file(tmp_path / "absent") is None
    assert describe_mode(os.stat(tmp_path).st_mode) == "a directory"


def test_missing_broken_and_looping_links_are_told_apart(tmp_path):
    with pytest.raises(FileFormatError, match=r"^tracks: no such file or directory: '"):
        input_path(tmp_path / "absent.csv", "tracks")
    dangling = tmp_path / "dangling.npy"
    dangling.symlink_to("nowhere.npy")
    with pytest.raises(FileFormatError, match=r"a symlink to a missing target 'nowhere.npy'"):
        input_path(dangling, "scores")
    a, b = tmp_path / "a", tmp_path / "b"
    a.symlink_to(b)
    b.symlink_to(a)
    with pytest.raises(FileFormatError, match=r"^scores: a symlink loop") as exc:
        input_path(a, "scores")
    assert "no such file" not in str(exc.value)
    # a dangling link above the path: the link is named
    (tmp_path / "gone").symlink_to(tmp_path / "missing-folder")
    with pytest.raises(FileFormatError, match=r"missing target .*missing-folder.*'.*gone'"):
        input_path(tmp_path / "gone" / "s.npy", "scores")


def test_a_file_in_the_way_of_a_path_is_named(tmp_path):
    f = tmp_path / "afile"
    f.write_text("x")
    with pytest.raises(FileFormatError, match=r"no such file or directory .*afile' is a file"):
        input_path(f / "s.npy", "scores")


def test_kind_mismatches(tmp_path):
    f = tmp_path / "f.csv"
    f.write_text("x")
    with pytest.raises(FileFormatError, match=r"^segments: expected a file, got a directory"):
        input_path(tmp_path, "segments", kind="file")
    with pytest.raises(FileFormatError, match=r"^store: expected a directory, got a file"):
        input_path(f, "store", kind="dir")
    with pytest.raises(ParameterError, match=r"kind"):
        input_path(f, "x", kind="fifo")
    for bad in (None, 3, ""):
        with pytest.raises(ParameterError, match=r"^scores: expected a path"):
            input_path(bad, "scores")


def test_unreadable_is_said(tmp_path, monkeypatch):
    f = tmp_path / "f.npy"
    f.write_text("x")
    monkeypatch.setattr(os, "access", lambda *a, **k: False)  # root reads everything
    with pytest.raises(FileFormatError, match=r"^scores: permission denied \(cannot read a file"):
        input_path(f, "scores")


def test_check_existing_path_is_input_path(fifo, tmp_path):
    with pytest.raises(FileFormatError, match=r"^segments: expected a file, got a FIFO"):
        C.check_existing_path("segments", fifo, kind="file")
    with pytest.raises(FileFormatError, match=r"no such file"):
        C.check_existing_path("scores", tmp_path / "nope.npy")


def test_check_writable_path_refuses_special_files_and_files_in_the_way(fifo, tmp_path):
    with pytest.raises(FileFormatError, match=r"^out: expected a path to write .* got a FIFO"):
        C.check_writable_path("out", fifo)
    (tmp_path / "afile").write_text("x")
    with pytest.raises(FileFormatError, match=r"^out: expected a directory at '.*afile', got a "
                       "file"):
        C.check_writable_path("out", tmp_path / "afile" / "sub" / "o.npy")


# ----------------------------------------------------------------------------------------
# os_error_message
# ----------------------------------------------------------------------------------------
def test_full_disk_and_quota_read_as_the_disk_full_line(tmp_path):
    target = str(tmp_path / "o.npy")
    full = os_error_message(OSError(errno.ENOSPC, "No space left on device", target))
    assert full.startswith("No space left on ") and full.endswith(f"writing {target}")
    quota = os_error_message(OSError(errno.EDQUOT, "Disk quota exceeded", target))
    assert quota.startswith("Disk quota exceeded on ") and target in quota
    assert os_error_message(OSError(errno.ENOSPC, "No space left on device")) == (
        "No space left on device")


def test_loops_and_what_was_expected(tmp_path):
    a = tmp_path / "a"
    a.symlink_to(a)
    try:
        open(a)
    except OSError as exc:
        assert os_error_message(exc).startswith("a symlink loop")
    f = tmp_path / "afile"
    f.write_text("x")
    try:
        os.makedirs(f)
    except OSError as exc:
        assert os_error_message(exc, name="--spill-dir") == (
            f"--spill-dir: expected a directory, got a file: {str(f)!r}")
    try:
        open(tmp_path)
    except OSError as exc:
        assert os_error_message(exc) == f"expected a file, got a directory: {str(tmp_path)!r}"
    try:
        open(f / "inner.npy", "w")
    except OSError as exc:
        msg = os_error_message(exc, name="--out")
        assert msg.startswith(f"--out: expected a directory at {str(f)!r}, got a file"), msg
    try:
        os.listdir(f)
    except OSError as exc:
        assert os_error_message(exc) == f"expected a directory, got a file: {str(f)!r}"
    try:
        open(tmp_path / "absent.npy")
    except OSError as exc:
        assert os_error_message(exc) == (
            f"No such file or directory: {str(tmp_path / 'absent.npy')!r}")
    assert os_error_message(OSError(errno.EIO, "Input/output error")) == "Input/output error"
