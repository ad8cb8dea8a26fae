"""Confirm that every corpus file reads with ``aria-tda diagnose`` (project environment).

For each manifest entry, runs ``aria-tda diagnose FILE --json`` with the entry's ``reader``
flags (``--transpose``, ``--key``) and checks that ARIA read a matrix of the manifest's shape
(``n_train`` x ``n_queries``). Only the read status is kept: ARIA's diagnostics and verdicts
are discarded, never printed or stored (the corpus' labels must not be tuned to them).

Writes ``DIR/read_check.json``; exit status 1 when a file fails to read or has the wrong shape.

Usage::

    .venv/bin/python scripts/verdict_corpus/verify_read.py [--out DIR] [--aria PATH]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_ARIA = HERE.parents[1] / ".venv" / "bin" / "aria-tda"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=Path("/work/verdict-corpus"))
    ap.add_argument("--aria", type=Path, default=DEFAULT_ARIA)
    args = ap.parse_args(argv)
    manifest = json.loads((args.out / "manifest.json").read_text(encoding="utf-8"))
    rows, bad = [], 0
    t0 = time.time()
    for e in manifest["files"]:
        cmd = [str(args.aria), "diagnose", str(args.out / e["file"]), "--json", "--no-progress"]
        reader = e.get("reader") or {}
        if reader.get("transpose"):
            cmd.append("--transpose")
        if reader.get("key"):
            cmd += ["--key", str(reader["key"])]
        r = subprocess.run(cmd, capture_output=True, text=True)
        row = {"file": e["file"], "args": cmd[3:], "rc": r.returncode}
        if r.returncode == 0:
            d = json.loads(r.stdout)
            row["read_shape"] = [d.get("n_train"), d.get("n_queries")]
            row["shape_matches"] = row["read_shape"] == e["shape"]
        else:
            row["error"] = (r.stderr.strip().splitlines() or [""])[-1]
            row["shape_matches"] = False
        bad += not row["shape_matches"]
        rows.append(row)
        print(f"{'ok ' if row['shape_matches'] else 'BAD'} {e['file']} {row.get('read_shape')}",
              flush=True)
    (args.out / "read_check.json").write_text(json.dumps(
        {"aria": str(args.aria), "n_files": len(rows), "n_failed": bad,
         "seconds": round(time.time() - t0, 1), "files": rows}, indent=1) + "\n",
        encoding="utf-8")
    print(f"{len(rows) - bad}/{len(rows)} files read with the manifest's shape "
          f"in {time.time() - t0:.0f} s")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
