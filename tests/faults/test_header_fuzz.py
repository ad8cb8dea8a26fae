"""Random header content, in one child process: every file is read or refused in one line.

Seeded mutations of real peer-library files (``tests/data/peer/``): one value, list or object of
a JSON header (bergson's ``info.json``, a safetensors header, Kronfluence's score arguments, a
zarr array's metadata) replaced by a weird one (negative, huge, text, null, nested lists,
objects) or removed; data cut short or lengthened; random bytes written over the start of
``.mmap``, ``.safetensors`` and ``.pt`` files or anywhere in ``.npz`` archives (stored and
compressed), or the file cut. Each must be read, or refused with a one-line
:class:`~aria_tda.errors.AriaError`, within seconds: never another exception, never a hang.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from headerlib import BERGSON, KRON, PEER, st_parts, st_write

#: What the fuzzing child runs: open and read each file, print one outcome per file.
FUZZ_MAIN = """\
import json, signal, sys, traceback
from aria_tda.errors import AriaError
from aria_tda.scores import open_scores

class Hang(BaseException):  # not an Exception: no reader's own handler may take it
    pass

def alarm(*_):
    raise Hang()

signal.signal(signal.SIGALRM, alarm)
for path in sys.argv[1:]:
    signal.alarm(10)
    try:
        with open_scores(path) as src:
            src.to_numpy()
        out = {"path": path, "outcome": "read"}
    except AriaError as exc:
        out = {"path": path, "outcome": "refused", "lines": len(str(exc).splitlines())}
    except Hang:
        out = {"path": path, "outcome": "hang"}
    except BaseException as exc:
        out = {"path": path, "outcome": "crash", "error": traceback.format_exc()[-800:]}
    finally:
        signal.alarm(0)
    print(json.dumps(out), flush=True)
"""

WEIRD = [-1, -4, 0, 1, 3, 10**12, 10**30, 2**64, "600", "x", None, True, 1.5, 600.0, [], [1],
         [[1, 2]], {}, {"a": 1}, [[[[[[]]]]]]]


def mutated(obj, rng: np.random.Generator):
    """``obj`` (JSON) with one random value, list or object replaced by a weird one."""
    paths: list[list] = []

    def walk(o, p):
        paths.append(p)
        items = o.items() if isinstance(o, dict) else enumerate(o[:40]) if isinstance(
            o, list) else ()
        for k, v in items:
            walk(v, [*p, k])

    obj = json.loads(json.dumps(obj))
    walk(obj, [])
    path = paths[1 + rng.integers(len(paths) - 1)]
    target = obj
    for k in path[:-1]:
        target = target[k]
    if isinstance(target, dict) and rng.random() < 0.15:
        del target[path[-1]]
    else:
        target[path[-1]] = WEIRD[rng.integers(len(WEIRD))]
    return obj


def fuzz_corpus(root: Path, n: int, rng: np.random.Generator) -> list[Path]:
    out: list[Path] = []
    info = json.loads((BERGSON / "info.json").read_text())
    st_header, st_data = st_parts(KRON / "scores_ekfac_per_module" / "pairwise_scores.safetensors")
    args = json.loads((KRON / "scores_ekfac_partitioned" / "score_arguments.json").read_text())
    raws = [PEER / "traker" / "healthy_fp16" / "scores" / "queries.mmap",
            KRON / "scores_ekfac" / "pairwise_scores.safetensors",
            PEER / "dattri" / "healthy_IF.pt"]
    for i in range(n):
        run = root / f"bergson{i}"
        shutil.copytree(BERGSON, run)
        (run / "info.json").write_text(json.dumps(mutated(info, rng)))
        out.append(run / "scores.bin")
        data = st_data
        cut = rng.random()
        if cut < 0.15:
            data = data[: rng.integers(len(data))]
        elif cut < 0.3:
            data += bytes(int(rng.integers(1, 64)))
        out.append(st_write(root / f"st{i}" / "pairwise_scores.safetensors",
                            mutated(st_header, rng), data))
        part = root / f"kron{i}"
        shutil.copytree(KRON / "scores_ekfac_partitioned", part)
        (part / "score_arguments.json").write_text(json.dumps(mutated(args, rng)))
        out.append(part)
        src = raws[i % len(raws)]
        raw = bytearray(src.read_bytes())
        if rng.random() < 0.5:
            raw = raw[: rng.integers(len(raw))]
        else:
            for at in rng.integers(0, min(len(raw), 800), size=rng.integers(1, 8)):
                raw[at] = rng.integers(256)
        path = root / f"bytes{i}{src.suffix}"
        path.write_bytes(bytes(raw))
        out.append(path)
        out.append(_npz(root / f"npz{i}.npz", rng, compressed=bool(i % 2)))
        out.append(_zarr(root / f"zarr{i}.zarr", rng, fmt=2 + i % 2))
    return out


def _npz(path: Path, rng: np.random.Generator, *, compressed: bool) -> Path:
    """An ``.npz`` of scores and row ids with bytes written over anywhere, or cut."""
    s = np.arange(240, dtype=np.float32).reshape(40, 6)
    ids = np.array([f"r{i}" for i in range(40)])
    (np.savez_compressed if compressed else np.savez)(path, scores=s, row_ids=ids)
    raw = bytearray(path.read_bytes())
    if rng.random() < 0.3:
        raw = raw[: rng.integers(len(raw))]
    else:
        for at in rng.integers(0, len(raw), size=rng.integers(1, 6)):
            raw[at] = rng.integers(256)
    path.write_bytes(bytes(raw))
    return path


def _zarr(path: Path, rng: np.random.Generator, *, fmt: int) -> Path:
    """A zarr array whose metadata has one value replaced by a weird one."""
    zarr = pytest.importorskip("zarr")
    arr = zarr.open_array(str(path), mode="w", shape=(40, 6), chunks=(10, 6), dtype="f4",
                          zarr_format=fmt)
    arr[:] = np.arange(240, dtype=np.float32).reshape(40, 6)
    meta = path / (".zarray" if fmt == 2 else "zarr.json")
    meta.write_text(json.dumps(mutated(json.loads(meta.read_text()), rng)))
    return path


def test_fuzzed_headers_are_read_or_refused_in_one_line(tmp_path):
    files = fuzz_corpus(tmp_path, 40, np.random.default_rng(38))
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    proc = subprocess.run([sys.executable, "-c", FUZZ_MAIN, *map(str, files)], env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    outcomes = [json.loads(line) for line in proc.stdout.splitlines()]
    assert len(outcomes) == len(files)
    bad = [o for o in outcomes if o["outcome"] in {"hang", "crash"} or o.get("lines", 1) != 1]
    assert not bad, bad[:3]
    refusals = sum(o["outcome"] == "refused" for o in outcomes)
    assert refusals > len(files) // 2  # most mutations are lies, and are caught
