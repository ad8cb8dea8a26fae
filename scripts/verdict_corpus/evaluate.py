#!/usr/bin/env python
"""ARIA's verdict on every file of the verdict corpus (docs/experiments/verdict-corpus.md).

Runs in the project environment, after ``generate.py`` and ``similarity.py``::

    .venv/bin/python scripts/verdict_corpus/evaluate.py                 # DIR /work/verdict-corpus
    .venv/bin/python scripts/verdict_corpus/evaluate.py --dir D --out PAGE.md

For each file of ``DIR/manifest.json``: :func:`aria_tda.diagnose` (the ``aria-tda diagnose``
defaults, ``topk=(1, 10)``) and :func:`aria_tda.verdict.classify` — the verdict (does the top-K
follow the query), the top-K overlap rule (the same concentration without the
query-dependence measures) and the structural rules alone (no top-K). Each rule's value is
tabulated with the file's label.

**The calibration rule, written before this script was first run.** The thresholds 0.3
(collapsed) and 0.1 (suspect) of the unlike-query overlap were fixed before the corpus existed
(they are the top-K overlap rule's). On the *calibration* half only: if the false alarms on
healthy files (suspect or collapsed) or the misses on failed files (ok) exceed 5 %, the suspect
threshold becomes the value of {0.05, 0.1, 0.15, 0.2, 0.25} with the fewest false alarms plus
misses (ties: the larger); the *held-out* half is then reported with it, unchanged. Failures
the verdict cannot see by design — scores of a random-weights model (``failure="randomized"``:
the model-randomisation test's business) and methods that fail LDS against retraining while
their top-K follows the query (``failure="lds"``) — are tabulated but not counted as misses.

Writes the Markdown page (``--out``) and ``DIR/evaluation.csv``.
"""

from __future__ import annotations

import argparse
import json
import math
import time
import warnings
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
GRID = (0.05, 0.1, 0.15, 0.2, 0.25)
VISIBLE = (None, "collapse")  # failures the verdict is meant to see (None: healthy)


def _num(x: Any, d: int = 3) -> str:
    return "–" if x is None or (isinstance(x, float) and not math.isfinite(x)) else f"{x:.{d}f}"


def evaluate(corpus: Path) -> list[dict[str, Any]]:
    from aria_tda import diagnose
    from aria_tda.diagnostics.dependence import largest_excess
    from aria_tda.errors import AriaWarning
    from aria_tda.verdict import classify

    entries = json.loads((corpus / "manifest.json").read_text())
    if isinstance(entries, dict):
        entries = entries.get("files") or entries.get("entries") or list(entries.values())
    rows = []
    for e in entries:
        reader = e.get("reader") or {}
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", AriaWarning)
            d = diagnose(corpus / e["file"], transpose=bool(reader.get("transpose", False)),
                         key=reader.get("key"), progress=False)
        secs = time.perf_counter() - t0
        base = dict(kappa=d.kappa, r1=d.r1, r2_5=d.r2_5, p=d.p, v1_constancy=d.v1_constancy)
        conc = d.concentration.to_dict()
        new = classify(**base, concentration=conc)
        old = classify(**base, concentration={**conc, "dependence": None})
        structural = classify(**base)
        dep = conc["dependence"] or {}
        best = largest_excess(dep) if dep.get("ks") else None
        hubs = dep.get("hubs") or []
        rows.append({
            "file": e["file"], "library": e.get("library"), "family": e.get("family"),
            "model": e.get("model"), "method": e.get("method"),
            "configuration": e.get("configuration"), "seed": e.get("seed"),
            "label": e["label"], "failure": e.get("failure"), "split": e["split"],
            "shape": f"{d.n_train} x {d.n_queries}", "kappa": d.kappa, "r1": d.r1, "p": d.p,
            "top1_excess": _top1_excess(conc),
            "unlike_excess": None if best is None else best[0],
            "unlike_k": None if best is None else best[1],
            "n_hubs": dep.get("n_hubs"), "top_hub_share": hubs[0]["share"] if hubs else None,
            "kappa_signed": dep.get("kappa_signed"), "offset_rho": dep.get("offset_rho"),
            "verdict": new.label, "reason": new.reason, "findings": " | ".join(new.findings),
            "previous": old.label, "structural": structural.label, "seconds": secs,
        })
        print(f"{e['file']:<70} {e['label']:<8} {e.get('failure')!s:<10} "
              f"{new.label:<9} (previous {old.label}, structural {structural.label})",
              flush=True)
    return rows


def _top1_excess(conc: dict[str, Any]) -> float | None:
    from aria_tda.verdict import concentration_signal

    sig = concentration_signal({**conc, "dependence": None})
    return None if sig is None else sig[0]


def _label(excess: float | None, suspect: float, collapsed: float = 0.3) -> str:
    if excess is None:
        return "ok"
    return "collapsed" if excess >= collapsed else "suspect" if excess >= suspect else "ok"


def rates(rows: list[dict[str, Any]], verdict_of) -> dict[str, Any]:
    healthy = [r for r in rows if r["label"] == "healthy"]
    failed = [r for r in rows if r["label"] == "failed" and r["failure"] in VISIBLE]
    alarms = [r for r in healthy if verdict_of(r) != "ok"]
    misses = [r for r in failed if verdict_of(r) == "ok"]
    return {"healthy": len(healthy), "false_alarms": len(alarms), "failed": len(failed),
            "misses": len(misses),
            "alarm_rate": len(alarms) / len(healthy) if healthy else float("nan"),
            "miss_rate": len(misses) / len(failed) if failed else float("nan"),
            "alarm_files": [r["file"] for r in alarms], "miss_files": [r["file"] for r in misses]}


RULES = {
    "verdict (unlike-query overlap)": lambda r: r["verdict"],
    "top-K overlap rule (no query dependence)": lambda r: r["previous"],
    "structural rules (κ, r₁, p)": lambda r: r["structural"],
}


def choose_suspect(rows: list[dict[str, Any]]) -> float:
    cal = [r for r in rows if r["split"] == "calibration"]
    first = rates(cal, lambda r: _label(r["unlike_excess"], 0.1))
    if first["alarm_rate"] <= 0.05 and first["miss_rate"] <= 0.05:
        return 0.1
    scored = []
    for th in GRID:
        got = rates(cal, lambda r, th=th: _label(r["unlike_excess"], th))
        scored.append((got["false_alarms"] + got["misses"], -th, th))
    return min(scored)[2]


def page(rows: list[dict[str, Any]], suspect: float, corpus: Path) -> str:
    out = ["# The verdict corpus: hubs are not collapses", "",
           "Score matrices written by the peer attribution libraries themselves (traker, "
           "kronfluence, dattri, captum, bergson) on several model families, plus "
           "similarity retrievals over real music, each labelled *healthy* or *failed* by a "
           "criterion outside ARIA (LDS against retraining, or the construction) before ARIA "
           "was run on any of them (`scripts/verdict_corpus/README.md`). The verdict's "
           "thresholds were checked on the *calibration* half by the rule written in "
           "`scripts/verdict_corpus/evaluate.py`; the *held-out* half is reported unchanged.",
           "", "```sh",
           "$PEER_VENV/bin/python scripts/verdict_corpus/generate.py   "
           "# PEER_VENV: scripts/peer_fixtures/setup_env.sh",
           ".venv/bin/python scripts/verdict_corpus/similarity.py",
           ".venv/bin/python scripts/verdict_corpus/evaluate.py   # this page", "```", "",
           f"Suspect threshold after calibration: **{suspect}** (collapsed: 0.3).", "",
           "## False alarms and misses", "",
           "False alarm: a healthy file called *suspect* or *collapsed*. Miss: a failed file "
           "whose failure makes the top-K ignore the query (planted high-norm rows, a "
           "query-independent ranking, a sign-flipping dominant axis, rank 1) called *ok*. "
           "Random-weights scores and LDS failures are listed apart: the verdict does not "
           "claim to see them.", "",
           "| rule | split | healthy | false alarms | failed | misses |",
           "|---|---|---|---|---|---|"]
    for name, fn in RULES.items():
        for split in ("calibration", "heldout"):
            part = [r for r in rows if r["split"] == split]
            got = rates(part, fn)
            out.append(f"| {name} | {split} | {got['healthy']} | {got['false_alarms']} "
                       f"({100 * got['alarm_rate']:.0f} %) | {got['failed']} | {got['misses']} "
                       f"({100 * got['miss_rate']:.0f} %) |")
    cal = [r for r in rows if r["split"] == "calibration"]
    out += ["", "**The threshold.** On the calibration half, per suspect threshold (false alarms "
            "+ misses; the rule takes the fewest, ties to the larger):", "",
            "| suspect threshold | false alarms | misses |", "|---|---|---|"]
    for th in GRID:
        got = rates(cal, lambda r, th=th: _label(r["unlike_excess"], th))
        out.append(f"| {th} | {got['false_alarms']} of {got['healthy']} | {got['misses']} of "
                   f"{got['failed']} |")
    missed = [r for r in rows if r["label"] == "failed" and r["failure"] in VISIBLE
              and r["verdict"] == "ok"]
    alarms = [r for r in rows if r["label"] == "healthy" and r["verdict"] != "ok"]
    out += ["", "## Where it misses, and why", ""]
    if missed:
        out += ["Missed (called *ok*): " + ", ".join(
            f"`{r['file']}` (unlike excess {_num(r['unlike_excess'])}, top hub in "
            f"{_num(100 * (r['top_hub_share'] or 0), 0)} % of top-10s)" for r in missed) + ".",
            "",
            "Every miss is GradDot with planted high-gradient rows: five far-out rays, two rows "
            "each. The planted rows lead 77–97 % of the queries, but *which* of the ten leads "
            "varies, so two unlike queries share only 10–15 % of their top-10 beyond chance — "
            "as much as healthy attributions of the conv net share through their hubs (TRAK, "
            "IF and GradDot on the CNN reach 0.12–0.18: items in the top-10 of 45–65 % of the "
            "queries, with positive LDS). The unlike-query overlap cannot tell a set of ten "
            "planted rows from the conv net's prototypes; the hubs are named in both (the "
            "planted rows as hubs of about half the queries each). A measure of how many "
            "distinct rows the hubs of unlike queries are drawn from is the next thing to try; "
            "the model-randomisation and gradient-norm checks (`aria_tda.attribution.sanity`) "
            "see GradDot's norm bias where ARIA computes the attribution.", ""]
    if alarms:
        out += ["False alarms (healthy, flagged): " + ", ".join(
            f"`{r['file']}` ({r['verdict']}, unlike excess {_num(r['unlike_excess'])})"
            for r in alarms) + ".", ""]
    out += ["", "## Every file", "",
            "| file | library | model | method | label | failure | split | κ | r₁ | p | "
            "top-1 share exc. | unlike exc. (K) | hubs (top share) | signed κ | offset ρ | "
            "verdict | previous | structural |",
            "|" + "---|" * 18]
    for r in rows:
        hub = "–" if r["n_hubs"] is None else (
            f"{r['n_hubs']}" + ("" if r["top_hub_share"] is None
                                else f" ({100 * r['top_hub_share']:.0f} %)"))
        out.append(
            f"| `{r['file']}` | {r['library']} | {r['model']} | {r['method']} | {r['label']} | "
            f"{r['failure'] or ''} | {r['split']} | {_num(r['kappa'])} | {_num(r['r1'])} | "
            f"{_num(r['p'])} | {_num(r['top1_excess'])} | {_num(r['unlike_excess'])} "
            f"({r['unlike_k']}) | {hub} | {_num(r['kappa_signed'])} | {_num(r['offset_rho'], 2)} "
            f"| **{r['verdict']}** | {r['previous']} | {r['structural']} |")
    other = [r for r in rows if r["label"] == "failed" and r["failure"] not in VISIBLE]
    if other:
        out += ["", "Failures the verdict does not claim to see (not counted above): "
                + ", ".join(f"`{r['file']}` ({r['failure']}: {r['verdict']})" for r in other)
                + "."]
    out += ["", f"Corpus folder at evaluation: `{corpus.name}`; {len(rows)} files; the diagnostics "
            f"took {sum(r['seconds'] for r in rows):.0f} s in all.", ""]
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", type=Path, default=Path("/work/verdict-corpus"))
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "experiments" / "verdict-corpus.md")
    args = ap.parse_args()
    rows = evaluate(args.dir)
    suspect = choose_suspect(rows)
    import pandas as pd

    pd.DataFrame(rows).to_csv(args.dir / "evaluation.csv", index=False)
    args.out.write_text(page(rows, suspect, args.dir))
    print(f"suspect threshold {suspect}; wrote {args.out} and {args.dir / 'evaluation.csv'}")


if __name__ == "__main__":
    main()
