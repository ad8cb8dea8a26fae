"""Crafting score files whose headers lie, and running ``aria-tda diagnose`` on them in child
processes (the header-fault tests, issue 38): each crafted file starts from a real peer-library
file of ``tests/data/peer/`` with its header corrupted."""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from faultlib import cli, one_line_error

PEER = Path(__file__).resolve().parents[1] / "data" / "peer"
BERGSON = PEER / "bergson" / "healthy_fp32" / "scores"
KRON = PEER / "kronfluence" / "healthy" / "mlp"
#: A hang fails the test at this many seconds; a refusal must come well before.
TIMEOUT = 120
#: The slowest a refusal may be (seconds): a child's start-up plus reading a header.
FAST = 20
#: The slowest one file of a batch may be refused (seconds), inside a running child.
FAST_FILE = 10
#: The open-file limit of the children that read thousands of tensors or partitions.
FEW_FILES = 64

#: The child of :func:`refused_all`: ``main(["diagnose", PATH])`` per file, one JSON line each.
DRIVER = """\
import contextlib, io, json, signal, sys, time, traceback
from aria_tda.cli import main

class Hang(BaseException):
    pass

def alarm(*_):
    raise Hang()

signal.signal(signal.SIGALRM, alarm)
for path in sys.argv[2:]:
    err, out = io.StringIO(), io.StringIO()
    t0 = time.monotonic()
    signal.alarm(int(sys.argv[1]))
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
            status = main(["diagnose", path])
    except Hang:
        status = "hang"
    except SystemExit as exc:
        status = exc.code
    except BaseException:
        status = "crash"
        err.write(traceback.format_exc())
    finally:
        signal.alarm(0)
    print(json.dumps({"path": path, "status": status, "stderr": err.getvalue(),
                      "seconds": time.monotonic() - t0}), flush=True)
"""


def refused(path: Path, *needles: str, args: tuple[str, ...] = ()) -> str:
    """Run ``aria-tda diagnose PATH`` in a child; assert one fast error line holding ``needles``."""
    t0 = time.monotonic()
    proc = cli(["diagnose", path, *args], timeout=TIMEOUT)
    took = time.monotonic() - t0
    line = one_line_error(proc)
    assert took < FAST, f"took {took:.1f} s: {line}"
    for needle in needles:
        assert needle in line, (needle, line)
    return line


def refused_all(cases: dict[str, tuple[Path, list[str]]]) -> None:
    """Diagnose every case's file in one child process; each must be refused as :func:`refused`.

    Parameters
    ----------
    cases : dict
        ``case id -> (file, needles the error line must hold)``.
    """
    paths = [str(path) for path, _ in cases.values()]
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    proc = subprocess.run([sys.executable, "-c", DRIVER, str(FAST_FILE), *paths], env=env,
                          capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    results = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [r["path"] for r in results] == paths, proc.stderr[-2000:]
    failures = []
    for (case, (_, needles)), r in zip(cases.items(), results, strict=True):
        err = r["stderr"]
        lines = [line for line in err.splitlines() if "error:" in line]
        problems = [
            what
            for what, bad in (
                (f"status {r['status']}", r["status"] != 2),
                ("a traceback", "Traceback" in err),
                (f"{len(lines)} error lines", len(lines) != 1),
                (f"{r['seconds']:.1f} s", r["seconds"] > FAST_FILE),
                *((f"no {n!r}", not lines or n not in lines[0]) for n in needles),
            )
            if bad
        ]
        if problems:
            failures.append(f"{case}: {', '.join(problems)}: {err[-600:]}")
    assert not failures, "\n".join(failures)


def few_files_cli(args: list[str]) -> subprocess.CompletedProcess[str]:
    """``aria-tda ARGS`` in a child that may hold at most :data:`FEW_FILES` files open."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (FEW_FILES, FEW_FILES))

    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    return subprocess.run([sys.executable, "-m", "aria_tda.cli", *map(str, args)], env=env,
                          capture_output=True, text=True, timeout=TIMEOUT, preexec_fn=limit)


# ----------------------------------------------------------------------------------------
# crafting: safetensors
# ----------------------------------------------------------------------------------------
def st_parts(path: Path) -> tuple[dict, bytes]:
    """The JSON header and the data of a safetensors file."""
    raw = path.read_bytes()
    n = int.from_bytes(raw[:8], "little")
    return json.loads(raw[8 : 8 + n]), raw[8 + n :]


def st_write(path: Path, header: dict | bytes, data: bytes, *, length: int | None = None) -> Path:
    """A safetensors file of ``header`` (a dict, or raw JSON bytes) and ``data``."""
    text = header if isinstance(header, bytes) else json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    path.parent.mkdir(parents=True, exist_ok=True)
    lead = (len(text) if length is None else length).to_bytes(8, "little")
    path.write_bytes(lead + text + data)
    return path


def st_tensors(path: Path, tensors: dict[str, np.ndarray], meta: dict | None = None) -> Path:
    """A safetensors file of float32 ``tensors`` laid end to end (as the library writes)."""
    header: dict = {"__metadata__": meta} if meta else {}
    blobs, offset = [], 0
    for name, arr in tensors.items():
        raw = np.ascontiguousarray(arr, dtype=np.float32).tobytes()
        header[name] = {"dtype": "F32", "shape": list(arr.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    return st_write(path, header, b"".join(blobs))


def kron_file(tmp_path: Path, edit: Callable[[dict, bytes], tuple[dict, bytes]]) -> Path:
    """Kronfluence's ``pairwise_scores.safetensors`` (all_modules [60, 600]) with ``edit``."""
    header, data = st_parts(KRON / "scores_ekfac" / "pairwise_scores.safetensors")
    header, data = edit(header, data)
    return st_write(tmp_path / "scores_x" / "pairwise_scores.safetensors", header, data)


def set_entry(field: str, value) -> Callable[[dict, bytes], tuple[dict, bytes]]:
    def edit(header: dict, data: bytes) -> tuple[dict, bytes]:
        header["all_modules"][field] = value
        return header, data

    return edit


# ----------------------------------------------------------------------------------------
# crafting: bergson, partitions, .npy
# ----------------------------------------------------------------------------------------
def bergson_run(tmp_path: Path, edit: Callable[[dict], object] | None = None,
                text: Callable[[str], str] | None = None) -> Path:
    """bergson's healthy float32 run (600 x 60) with ``info.json`` edited."""
    run = tmp_path / "run" / "scores"
    shutil.copytree(BERGSON, run)
    info_path = run / "info.json"
    if edit is not None:
        info = json.loads(info_path.read_text())
        edit(info)
        info_path.write_text(json.dumps(info))
    if text is not None:
        info_path.write_text(text(info_path.read_text()))
    return run / "scores.bin"


def put(*keys_and_value) -> Callable[[dict], None]:
    """An edit of a JSON document: the value at ``keys`` set."""
    *keys, value = keys_and_value

    def edit(info: dict) -> None:
        target = info
        for k in keys[:-1]:
            target = target[k]
        target[keys[-1]] = value

    return edit


PART = "pairwise_scores_data_partition{}_module_partition{}.safetensors"


def partitions(tmp_path: Path) -> Path:
    """A copy of Kronfluence's real 2 data x 2 module partition run."""
    folder = tmp_path / "scores_ekfac_partitioned"
    shutil.copytree(KRON / "scores_ekfac_partitioned", folder)
    return folder


def set_args(folder: Path, **values) -> None:
    args = json.loads((folder / "score_arguments.json").read_text())
    (folder / "score_arguments.json").write_text(json.dumps({**args, **values}))


def npy_with(path: Path, shape, descr: str = "<f4", body: bytes | None = None) -> Path:
    """An ``.npy`` file whose header says ``shape``, followed by ``body`` (40 x 6 float32)."""
    header = repr({"descr": descr, "fortran_order": False, "shape": shape}).encode()
    header += b" " * (64 - (10 + len(header) + 1) % 64) + b"\n"
    if body is None:
        body = np.random.default_rng(4).standard_normal((40, 6)).astype("<f4").tobytes()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header + body)
    return path
