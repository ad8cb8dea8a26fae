"""The foundation of "nothing lost": per-process temporaries and their sweep, space reserved
before memory maps, the writer lock, content fingerprints."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from aria_tda._fingerprint import content_digest, hash_bytes
from aria_tda._io import (
    _HOST,
    atomic_path,
    disk_full_message,
    reserve_space,
    sweep_leftovers,
    temp_name,
)
from aria_tda._lock import LOCK_NAME, writer_lock
from aria_tda.errors import DiskFullError, LockedError
from faultlib import fill, small_fs


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


# -- temporaries -----------------------------------------------------------------------
def test_temp_names_carry_the_pid_and_differ(tmp_path):
    a, b = temp_name("x.npy"), temp_name("x.npy")
    assert a != b and f"-{os.getpid()}-" in a and a.startswith(".x.npy.tmp-")
    assert temp_name("ignored", "staging").startswith(f".staging-{os.getpid()}-")


def test_sweep_removes_only_dead_processes_temporaries(tmp_path):
    dead = _dead_pid()
    mine = tmp_path / temp_name("out.npy")
    mine.write_text("live writer")
    other_host = f".out.npy.tmp-{dead}-{'0000' if _HOST != '0000' else '1111'}abcd"
    (tmp_path / other_host).write_text("another machine's writer (shared folder)")
    for name in (f".out.npy.tmp-{dead}-{_HOST}abcd", f".staging-{dead}-{_HOST}cdef"):
        p = tmp_path / name
        if "staging" in name:
            p.mkdir()
            (p / "results.json").write_text("{}")
        else:
            p.write_text("half")
    keep = [tmp_path / "out.npy", tmp_path / ".out.npy.tmp-notapid", tmp_path / ".hidden"]
    for p in keep:
        p.write_text("user")
    removed = sweep_leftovers(tmp_path)
    assert sorted(p.name for p in removed) == sorted(
        [f".out.npy.tmp-{dead}-{_HOST}abcd", f".staging-{dead}-{_HOST}cdef"])
    assert mine.exists() and all(p.exists() for p in keep)
    assert (tmp_path / other_host).exists()


def test_sweep_of_a_missing_folder_is_empty(tmp_path):
    assert sweep_leftovers(tmp_path / "absent") == []


# -- full disks --------------------------------------------------------------------------
def test_disk_full_message_is_one_line_with_sizes(tmp_path):
    text = disk_full_message(tmp_path / "a.npy", 16 * 2**20, 2**20)
    assert "\n" not in text
    assert text.startswith("No space left on ") and "need 16.0 MB, have 1.0 MB" in text


def test_reserve_space_refuses_before_any_page_is_mapped(tmp_path):
    with small_fs(tmp_path, "2m") as fs:
        target = fs / "big.bin"
        fd = os.open(target, os.O_RDWR | os.O_CREAT)
        try:
            with pytest.raises(DiskFullError, match=r"No space left on tmpfs .*need 8\.0 MB"):
                reserve_space(fd, 8 * 2**20, path=target)
            reserve_space(fd, 2**20, path=target)  # what fits is allocated for real
            assert os.fstat(fd).st_blocks * 512 >= 2**20
        finally:
            os.close(fd)


def test_atomic_path_turns_enospc_into_one_line_and_leaves_nothing(tmp_path):
    with small_fs(tmp_path, "1m") as fs:
        fill(fs, 64 * 1024)
        before = sorted(p.name for p in fs.iterdir())
        with pytest.raises(DiskFullError, match="No space left on tmpfs"), \
                atomic_path(fs / "out.bin") as tmp:
            with open(tmp, "wb") as fh:
                fh.write(b"\1" * 2**20)
        assert sorted(p.name for p in fs.iterdir()) == before


# -- the writer lock ---------------------------------------------------------------------
_HOLD = """
import sys, time
from aria_tda._lock import writer_lock
with writer_lock(sys.argv[1], "feature store"):
    print("held", flush=True)
    time.sleep(float(sys.argv[2]))
"""


def test_a_second_process_is_refused_naming_the_holder(tmp_path):
    holder = subprocess.Popen([sys.executable, "-c", _HOLD, str(tmp_path), "30"],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(LockedError) as info, writer_lock(tmp_path, "feature store"):
            pass
        text = str(info.value)
        assert f"pid {holder.pid}" in text and "feature store" in text and "\n" not in text
    finally:
        holder.kill()
        holder.wait()
    # the kernel released the dead holder's lock: it is taken over at once
    with writer_lock(tmp_path, "feature store"):
        assert (tmp_path / LOCK_NAME).is_file()
    assert not (tmp_path / LOCK_NAME).exists()  # removed on release


def _bare_flock(folder):
    """Hold ``folder``'s lock as a holder does in the instant between its flock and its
    writing its name: locked, the file still empty."""
    import fcntl

    fd = os.open(folder / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return fd


def test_a_writer_refused_before_the_holder_wrote_its_name_still_names_it(tmp_path):
    """The race that CI met: the loser came between the winner's flock and its pwrite and
    named "another process". It now waits for the name."""
    import json
    import threading

    fd = _bare_flock(tmp_path)
    name = json.dumps({"pid": 4242, "host": "h", "command": "aria-tda features"}).encode()
    timer = threading.Timer(0.3, os.pwrite, (fd, name, 0))
    timer.start()
    try:
        with pytest.raises(LockedError, match="being written by process pid 4242 on h"), \
                writer_lock(tmp_path, "feature store"):
            pass
    finally:
        timer.join()
        os.close(fd)


def test_a_lock_released_while_waiting_for_the_name_is_taken(tmp_path):
    import threading

    fd = _bare_flock(tmp_path)
    timer = threading.Timer(0.3, os.close, (fd,))
    timer.start()
    try:
        with writer_lock(tmp_path, "feature store"):
            assert f"{os.getpid()}" in (tmp_path / LOCK_NAME).read_text()
    finally:
        timer.join()


def test_a_holder_that_never_names_itself_is_another_process(tmp_path):
    fd = _bare_flock(tmp_path)
    try:
        with pytest.raises(LockedError, match="being written by another process"), \
                writer_lock(tmp_path, "feature store"):
            pass
    finally:
        os.close(fd)


def test_the_lock_is_reentrant_within_a_process(tmp_path):
    with writer_lock(tmp_path), writer_lock(tmp_path / "." ), writer_lock(tmp_path):
        pass
    with writer_lock(tmp_path):  # released after the outermost exit
        pass


# -- content fingerprints ----------------------------------------------------------------
def test_digest_follows_bytes_not_mtime(tmp_path, monkeypatch):
    monkeypatch.setenv("ARIA_CACHE_DIR", str(tmp_path / "cache"))
    f = tmp_path / "scores.npy"
    a = np.arange(1000, dtype=np.float32)
    np.save(f, a)
    first = content_digest(f)
    assert content_digest(f) == first  # cached
    st = os.stat(f)
    a[7] = -1
    np.save(f, a)
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))  # cp -p / rsync -a keep the mtime
    assert os.stat(f).st_mtime_ns == st.st_mtime_ns and os.stat(f).st_size == st.st_size
    assert content_digest(f) != first
    a[7] = 7
    np.save(f, a)
    assert content_digest(f) == first  # same bytes, same digest


def test_digest_equals_its_uncached_twin_across_blocks(tmp_path, monkeypatch):
    import aria_tda._fingerprint as fp

    monkeypatch.setenv("ARIA_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(fp, "BLOCK", 4096)
    f = tmp_path / "x.bin"
    f.write_bytes(os.urandom(4096 * 5 + 17))
    one = hash_bytes(f, workers=1)
    assert hash_bytes(f, workers=2) == one == content_digest(f)
    import hashlib

    blocks = [hashlib.sha256(f.read_bytes()[i:i + 4096]).digest()
              for i in range(0, f.stat().st_size, 4096)]
    top = hashlib.sha256(fp.SCHEME + f.stat().st_size.to_bytes(8, "little") + b"".join(blocks))
    assert one == top.hexdigest()[:32]


def test_folder_digest_ignores_lock_and_temporaries(tmp_path, monkeypatch):
    monkeypatch.setenv("ARIA_CACHE_DIR", str(tmp_path / "cache"))
    d = tmp_path / "store"
    d.mkdir()
    (d / "part-0.parquet").write_bytes(b"abc")
    first = content_digest(d)
    (d / LOCK_NAME).write_text("{}")
    (d / temp_name("part-1.parquet")).write_bytes(b"half")
    assert content_digest(d) == first
    (d / "part-0.parquet").write_bytes(b"abd")
    assert content_digest(d) != first


def test_an_unwritable_cache_still_gives_the_digest(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("ARIA_CACHE_DIR", str(blocker / "cache"))
    f = tmp_path / "x.bin"
    f.write_bytes(b"12345")
    assert content_digest(f) == hash_bytes(f)


_COUNT = """
import sys, time
from pathlib import Path
from aria_tda._lock import writer_lock
from aria_tda.errors import LockedError
folder, n = Path(sys.argv[1]), int(sys.argv[2])
done = 0
while done < n:
    try:
        with writer_lock(folder / "shared"):
            f = folder / "shared" / "count"
            value = int(f.read_text()) if f.exists() else 0
            time.sleep(0.0005)
            f.write_text(str(value + 1))
        done += 1
    except LockedError:
        time.sleep(0.0002)
"""


def test_three_racing_processes_never_hold_the_lock_at_once(tmp_path):
    """Read-modify-write of a counter under the lock: no increment is lost, even though each
    release unlinks the lock file that a racing process may just have opened."""
    procs = [subprocess.Popen([sys.executable, "-c", _COUNT, str(tmp_path), "60"])
             for _ in range(3)]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0]
    assert int((tmp_path / "shared" / "count").read_text()) == 180
    assert not (tmp_path / "shared" / LOCK_NAME).exists()


def test_a_refused_lock_leaves_no_folder_behind(tmp_path):
    with writer_lock(tmp_path / "new" / "store"):
        pass
    assert not (tmp_path / "new" / "store").exists()


@pytest.mark.parametrize("damage", ["garbage", "truncated"])
def test_a_damaged_digest_cache_is_rebuilt_with_one_warning(tmp_path, monkeypatch, damage):
    from aria_tda._fingerprint import CACHE_FILE
    from aria_tda.errors import AriaWarning

    cache = tmp_path / "cache"
    monkeypatch.setenv("ARIA_CACHE_DIR", str(cache))
    f = tmp_path / "x.bin"
    f.write_bytes(b"scores" * 1000)
    want = content_digest(f)
    db = cache / CACHE_FILE
    if damage == "garbage":
        db.write_bytes(os.urandom(5000))
    else:
        db.write_bytes(db.read_bytes()[:700])
    with pytest.warns(AriaWarning, match="fingerprint cache is damaged"):
        assert content_digest(f) == want
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert content_digest(f) == want  # rebuilt: no second warning
