"""ARIA beside quanda on the peer libraries' own score files: writes ``COMPARISON.md``.

Runs in the project environment (``.venv/bin/python scripts/peer_fixtures/compare.py``): reads
``tests/data/peer/manifest.json`` (float64 κ, r₁, p and quanda's ``TopKCardinalityMetric``,
written by ``generate.py`` in the fixture environment) and diagnoses every file with
``aria_tda.diagnostics.diagnose`` (default precision, top-K at 1 and 10), then writes one row per
file: the float64 definitions, quanda's top-k cardinality at k = 1 and 10, ARIA's distinct
ratio (quanda's measure), mean pairwise top-K overlap and top-1 share, and ARIA's verdict.
"""

from __future__ import annotations

import argparse
import json
import warnings
from pathlib import Path

from aria_tda.diagnostics import diagnose
from aria_tda.errors import AriaWarning
from aria_tda.verdict import classify

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "peer"
OUT = Path(__file__).resolve().parent / "COMPARISON.md"


def _f(x: float | None, digits: int = 3) -> str:
    if x is None:
        return "—"
    return f"{x:.{digits}g}" if abs(x) < 1e-2 and x != 0 else f"{x:.{digits}f}"


def rows(data: Path = DATA) -> list[str]:
    """The markdown rows, one per whole finite file of the manifest."""
    manifest = json.loads((data / "manifest.json").read_text(encoding="utf-8"))
    out = []
    for e in manifest["files"]:
        if not e["finite"] or not e.get("all_written", True):
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", AriaWarning)
            d = diagnose(data / e["path"], transpose=e["aria_transpose"], topk=(1, 10))
        c = d.concentration
        v = classify(kappa=d.kappa, r1=d.r1, r2_5=d.r2_5, p=d.p, v1_constancy=d.v1_constancy,
                     concentration=c)
        q = e.get("quanda_topk_cardinality", {})
        ties = [k for k in ("1", "10") if e["topk_ties"][k]]
        label = f"{e['library']} {e['method']}" + (f" ({e['dtype']})" if e["library"] in (
            "traker", "bergson") else "") + (" partitions" if e.get("partitions") else "") + (
            " per-module" if e.get("module_keys") else "")
        out.append(
            f"| {label} | {e['state']} | {_f(e['kappa'])} | {_f(e['r1'])} | {_f(e['p'])} "
            f"| {_f(q.get('1'))} | {_f(q.get('10'))} "
            f"| {_f(c.distinct_ratio[0])} | {_f(c.distinct_ratio[1])} "
            f"| {_f(c.mean_overlap[0])} | {_f(c.mean_overlap[1])} | {_f(c.top1_share)} "
            f"| **{v.label}**{' (ties at k=' + ','.join(ties) + ')' if ties else ''} |")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    manifest = json.loads((DATA / "manifest.json").read_text(encoding="utf-8"))
    v = manifest["versions"]
    head = [
        "# ARIA and quanda on the peer libraries' own score files",
        "",
        "Written by `scripts/peer_fixtures/compare.py` from `tests/data/peer/` (files by "
        + ", ".join(f"{k} {v[k]}" for k in ("traker", "kronfluence", "dattri", "captum",
                                              "bergson"))
        + f"; quanda {v['quanda']}'s `TopKCardinalityMetric`). 600 training examples x 60 "
        "queries; *planted*: 6 far-out training outliers with flipped labels "
        "(`generate.py`). κ, r₁, p: float64 from the definitions. quanda q@k: distinct "
        "top-k rows / (queries × k). ARIA: `diagnose(..., topk=(1, 10))` at the default "
        "precision — dr@k its distinct ratio (quanda's measure), ov@k the mean pairwise top-k "
        "overlap, top1 the top-1 share; verdict from `aria_tda.verdict.classify`.",
        "",
        "| file | model | κ | r₁ | p | quanda q@1 | quanda q@10 | ARIA dr@1 | ARIA dr@10 "
        "| ov@1 | ov@10 | top1 share | verdict |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    args.out.write_text("\n".join(head + rows()) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
