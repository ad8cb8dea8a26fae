"""A finished ``aria-tda demo`` folder as the README's Table 1 (markdown) and a JSON record.

Reads ``RESULTS`` (``OUT/results`` of ``aria-tda demo``) and prints

- Table 1: LDS ± SE per setting, the reliability diagnostics (r₁, r₂:₅, p, κ), z̄ per
  channel at ``K_report`` on the raw matrix, and the verdict;
- the paired LDS contrasts named with ``--contrast A:B`` (difference and 95 % interval,
  paired bootstrap over queries and LDS subsets; "separated" only where it excludes 0) and
  how many method pairs are separated;
- the rank agreement of each diagnostic with LDS (Spearman / Kendall with their intervals and
  exact permutation p), over the paper's four methods and over all;
- the run's sizes, held-out loss, stage seconds and total.

``--json OUT`` also writes all of it as one record (appended under the folder's preset name
when ``OUT`` exists, so several presets share a file). Nothing is recomputed: the numbers are
the demo's own tables.

Usage::

    .venv/bin/python experiments/scripts/demo_table.py aria-demo/results --contrast TRAK-10:GradDot
    \\
        TRAK:GradDot --json experiments/results/demo_tables.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
CHANNELS = ("melody", "harmony", "rhythm", "dynamic", "texture")
DIAGNOSTICS = ("r1", "r2_5", "p", "kappa")


def summarise(results: Path, contrasts: list[tuple[str, str]]) -> dict[str, Any]:
    """The demo's tables as one record.

    Parameters
    ----------
    results : Path
        ``OUT/results`` of a finished ``aria-tda demo``.
    contrasts : list of (str, str)
        Paired LDS differences ``a − b`` to report.
    """
    from aria_tda.results import read_results_meta, read_table
    from aria_tda_experiments.validation import paired_contrast

    meta = read_results_meta(results)
    demo = meta["demo"]
    lds = read_table(results, "lds").set_index("method")
    rel = read_table(results, "reliability").set_index("setting")
    hom = read_table(results, "homogeneity")
    paired = read_table(results, "lds_paired")
    agree = read_table(results, "agreement")
    k_report = int(meta["study"]["K_report"])
    raw = hom[(hom.variant == "original") & (hom.K == k_report)]
    rows = []
    for s in rel.index:
        z = raw[raw.setting == s].set_index("channel")["zbar"]
        rows.append({
            "setting": s, "lds": float(lds.loc[s, "lds"]), "lds_se": float(lds.loc[s, "lds_se"]),
            **{d: float(rel.loc[s, d]) for d in DIAGNOSTICS},
            "zbar": {c: float(z[c]) for c in CHANNELS if c in z.index},
            "verdict": str(rel.loc[s, "verdict"]),
        })
    methods = [s for s in rel.index if "-" not in s]
    lds_rows = paired[paired["quantity"] == "lds"]
    among = lds_rows[lds_rows.setting_a.isin(methods) & lds_rows.setting_b.isin(methods)]
    return {
        "results": str(results), "preset": demo["preset"]["name"], "sizes": demo["preset"],
        "n_train": demo["n_train"], "n_queries": demo["n_queries"],
        "n_parameters": demo.get("n_parameters"), "heldout_loss": demo.get("heldout_loss"),
        "lds_seeds": demo.get("lds_seeds"), "K_report": k_report, "table1": rows,
        "contrasts": [paired_contrast(paired, a, b) for a, b in contrasts],
        "pairs_separated": int(among["separated"].sum()), "pairs": len(among),
        "agreement": agree.to_dict(orient="records"),
        "stage_seconds": demo["stage_seconds"], "machine": demo.get("machine"),
    }


def markdown(rec: dict[str, Any]) -> str:
    """Table 1, the contrasts and the agreement as markdown."""
    head = ("| Setting | LDS ± SE | r₁ | r₂:₅ | p | κ | " + " | ".join(CHANNELS)
            + " | verdict |\n|---|---|---|---|---|---|" + "---|" * len(CHANNELS) + "---|")
    out = [head]
    for r in rec["table1"]:
        z = " | ".join(f"{r['zbar'][c]:+.2f}" if c in r["zbar"] else "–" for c in CHANNELS)
        out.append(f"| {r['setting']} | {r['lds']:.3f} ± {r['lds_se']:.3f} | {r['r1']:.3f} | "
                   f"{r['r2_5']:.3f} | {r['p']:.4f} | {r['kappa']:.3f} | {z} | {r['verdict']} |")
    out.append("")
    for c in rec["contrasts"]:
        mark = "separated" if c["separated"] else "not separated"
        out.append(f"- {c['a']} − {c['b']} = {c['diff']:+.3f} [{c['lo']:+.3f}, {c['hi']:+.3f}] "
                   f"({mark})")
    out.append(f"- method pairs separated: {rec['pairs_separated']} of {rec['pairs']}")
    out.append("")
    out.append("| methods | diagnostic | Spearman [95% CI] | p | Kendall [95% CI] | p |")
    out.append("|---|---|---|---|---|---|")
    for a in rec["agreement"]:
        out.append(f"| {a['methods']} ({a['n_methods']}) | {a['diagnostic']} | "
                   f"{a['spearman']:+.2f} [{a['spearman_lo']:+.2f}, {a['spearman_hi']:+.2f}] | "
                   f"{a['spearman_p_exact']:.3f} | {a['kendall']:+.2f} [{a['kendall_lo']:+.2f}, "
                   f"{a['kendall_hi']:+.2f}] | {a['kendall_p_exact']:.3f} |")
    st = rec["stage_seconds"]
    out.append("")
    out.append(f"{rec['n_train']:,} training windows × {rec['n_queries']} queries, held-out loss "
               f"{rec['heldout_loss']:.3f} nats/token; stages (s): "
               + ", ".join(f"{k} {v:.0f}" for k, v in st.items() if k != "total")
               + f"; total {st['total']:.0f} s ({st['total'] / 60:.1f} min)")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", help="OUT/results of a finished 'aria-tda demo'")
    ap.add_argument("--contrast", nargs="+", default=["TRAK:GradDot"], metavar="A:B",
                    help="paired LDS differences A − B to report (default TRAK:GradDot)")
    ap.add_argument("--json", default=None, help="also store the record here (by preset name)")
    opts = ap.parse_args(argv)
    pairs = []
    for c in opts.contrast:
        a, sep, b = c.partition(":")
        if not sep or not a or not b:
            ap.error(f"--contrast: expected A:B, got {c!r}")
        pairs.append((a, b))
    results = Path(opts.results)
    if not (results / "results.json").is_file():
        ap.error(f"results: expected the results folder of a finished 'aria-tda demo', got "
                 f"{str(results)!r}")
    from aria_tda.errors import DataError

    try:
        rec = summarise(results, pairs)
    except DataError as err:
        ap.error(f"--contrast: {err}")
    print(markdown(rec))
    if opts.json:
        path = Path(opts.json)
        store = json.loads(path.read_text()) if path.exists() else {}
        store[rec["preset"]] = rec
        path.write_text(json.dumps(store, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
