r"""The report's paired comparisons: method-vs-method differences with their intervals.

Two tables, both from paired bootstraps (:mod:`aria_tda.paired`):

- ``lds_paired`` — differences of LDS and of each reliability diagnostic between every two
  methods (the demos write it: :func:`aria_tda_experiments.validation.compare_methods`); the LDS
  interval resamples the queries and the retrained subsets, the diagnostics' the queries;
- ``paired`` — differences of :math:`\bar z` per channel between every two settings on the
  same null, at the report's K (``aria-tda run`` writes it for every K and variant:
  :func:`aria_tda.paired.zbar_paired_table`).

A difference is called *separated* only where its interval excludes 0; elsewhere the data do
not order the two methods. Both tables are rendered here, for HTML (:func:`paired_html`) and
LaTeX (:func:`paired_latex`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from aria_tda.report import number_format
from aria_tda.report.html.cells import esc
from aria_tda.report.latex.cells import MISSING, PREAMBLE, escape, latex_table, table_label
from aria_tda.report.load import ResultsData
from aria_tda.report.report_table import ReportTable
from aria_tda.report.sections.base import BaseSection, PageContext
from aria_tda.results import TABLES

__all__ = ["PAIRED", "paired_digits", "paired_html", "paired_latex",
           "paired_tables"]

#: The quantities of the paired tables, in the report's order, with their plain-text names.
_QUANTITY = {"lds": "LDS", "r1": "r1", "r2_5": "r2:5", "p": "p", "kappa": "κ", "zbar": "z̄"}


def _level(df: pd.DataFrame) -> str:
    if "level" in df.columns and len(df) and number_format.finite(df["level"].iloc[0]):
        return f"{100 * float(df['level'].iloc[0]):g}%"
    return "95%"


def paired_tables(data: ResultsData, *, k: int | None) -> list[ReportTable]:
    """The ``lds_paired`` and ``paired`` report tables the folder has data for.

    Parameters
    ----------
    data : ResultsData
        The results folder, as read by :func:`aria_tda.report.load.load_results`.
    k : int or None
        Group size of the z̄ differences (default: the largest K in the table); the
        ``original`` variant is shown (``paired.csv`` holds every K and variant).

    Returns
    -------
    list of ReportTable
    """
    out = []
    lp = data.table("lds_paired")
    if lp is not None and not lp.empty:
        order = {q: i for i, q in enumerate(_QUANTITY)}
        df = lp.assign(_o=lp["quantity"].map(order).fillna(len(order)))
        df = df.sort_values("_o", kind="stable").drop(columns="_o").reset_index(drop=True)
        staged = "stage" in df.columns
        out.append(ReportTable(
            "lds_paired",
            "Paired differences between methods: LDS and diagnostics",
            f"Method A minus method B with a paired {_level(df)} percentile bootstrap interval: "
            "every replicate resamples the same queries for both methods (and, for LDS, the "
            "same retrained subsets; the diagnostics' replicates are recentred on their "
            "full-data value, since a query drawn twice inflates r1 and r2:5). 'Separated' "
            "only where the interval excludes 0; "
            "otherwise the data do not order the two methods on that quantity."
            + (" Compared within each stage." if staged else ""),
            df,
            {"level": _level(df), "stages": staged},
        ))
    pz = data.table("paired")
    if pz is not None and not pz.empty:
        use_k = k if k is not None and k in set(pz["K"]) else int(pz["K"].max())
        sub = pz[(pz["K"] == use_k) & (pz["variant"] == "original")]
        if sub.empty:
            sub = pz[pz["K"] == use_k]
        if not sub.empty:
            out.append(ReportTable(
                "paired",
                f"Paired differences of z̄ between settings at K = {use_k}",
                f"z̄ of setting A minus setting B per channel over the queries both define, with "
                f"a paired {_level(sub)} percentile bootstrap interval (the same query resample "
                "for both; settings on the same null, whose mean cancels in the difference). "
                "'Separated' only where the interval excludes 0. paired.csv holds every K and "
                "variant.",
                sub.reset_index(drop=True),
                {"k": use_k, "level": _level(sub)},
            ))
    return out


def _interval(r: Any, nd: int) -> str:
    lo, hi = r.get("diff_lo"), r.get("diff_hi")
    if not (number_format.finite(lo) and number_format.finite(hi)):
        return number_format.DASH
    return f"[{number_format.signed(lo, nd)}, {number_format.signed(hi, nd)}]"


def paired_digits(quantity: Any) -> int:
    """Decimals shown for a paired difference of ``quantity`` (2 for z-bar, else 3).

    Parameters
    ----------
    quantity : str
        The ``quantity`` column of a paired table row.
    """
    return 2 if quantity == "zbar" else 3


def paired_html(t: ReportTable) -> str:
    """HTML of the ``lds_paired`` or ``paired`` table (one row per pair and quantity).

    Parameters
    ----------
    t : ReportTable
        A table from :func:`paired_tables`.
    """
    from aria_tda.report.html.cells import esc, html_table, num_cell, text_cell, th

    df = t.df.reset_index(drop=True)
    z = t.name == "paired"
    staged = bool(t.layout.get("stages"))
    level = t.layout.get("level", "95%")
    head = [
        ([th("Stage")] if staged else [])
        + ([th("Channel")] if z else [th("Quantity")])
        + [th("A"), th("B"), th("A"), th("B"), th("A − B"), th(f"{esc(level)} CI"),
           th("Separated")]
    ]
    rows = []
    for _, r in df.iterrows():
        nd = paired_digits(r["quantity"])
        sep = bool(r["separated"]) if number_format.finite(r["diff_lo"]) else False
        cells = [text_cell(esc(r["stage"]))] if staged else []
        cells += [
            text_cell(esc(r["channel"] if z else _QUANTITY.get(r["quantity"], r["quantity"]))),
            text_cell(esc(r["setting_a"])),
            text_cell(esc(r["setting_b"])),
            num_cell(esc(number_format.fixed(r.get("value_a"), nd)), **{"data-col": "value_a"}),
            num_cell(esc(number_format.fixed(r.get("value_b"), nd)), **{"data-col": "value_b"}),
            num_cell(esc(number_format.signed(r["diff"], nd)), **{"data-col": "diff"}),
            num_cell(esc(_interval(r, nd)), **{"data-col": "ci"}),
            text_cell("separated" if sep else "not separated",
                      cls="best" if sep else "sub", **{"data-col": "separated"}),
        ]
        rows.append((cells, {"data-quantity": str(r["quantity"])}))
    return html_table(head, rows, attrs={"id": f"table-{t.name}"})

_PAIRED_QUANTITY_TEX = {"lds": "LDS", "r1": "$r_1$", "r2_5": "$r_{2:5}$", "p": "$p$",
                        "kappa": r"$\kappa$", "zbar": r"$\bar z$"}


def paired_latex(t: ReportTable) -> str:
    """LaTeX of the ``lds_paired`` or ``paired`` table.

    Parameters
    ----------
    t : ReportTable
        A table from :func:`paired_tables`.

    Returns
    -------
    str
        One ``table`` environment.
    """
    df = t.df.reset_index(drop=True)
    z = t.name == "paired"
    staged = bool(t.layout.get("stages"))
    level = str(t.layout.get("level", "95%")).replace("%", r"\%")
    head = (["Stage"] if staged else []) + (["Channel"] if z else ["Quantity"]) + [
        "A", "B", "A", "B", r"A$-$B", f"{level} CI", "Separated"]
    body = [r"\toprule", " & ".join(head) + r" \\", r"\midrule"]
    prev = None
    for _, r in df.iterrows():
        nd = paired_digits(r["quantity"])
        key = r["quantity"] if not z else r["channel"]
        if prev is not None and key != prev:
            body.append(r"\midrule")
        prev = key

        def num(x: Any, signed: bool = False, nd: int = nd) -> str:
            s = (number_format.signed if signed else number_format.fixed)(x, nd, missing=MISSING)
            return s.replace("-", "$-$") if s != MISSING else s

        ci = MISSING
        if number_format.finite(r["diff_lo"]) and number_format.finite(r["diff_hi"]):
            ci = f"[{num(r['diff_lo'], True)}, {num(r['diff_hi'], True)}]"
        sep = bool(r["separated"]) if number_format.finite(r["diff_lo"]) else False
        cells = [escape(r["stage"])] if staged else []
        cells += [
            escape(r["channel"]) if z else _PAIRED_QUANTITY_TEX.get(r["quantity"],
                                                            escape(r["quantity"])),
            escape(r["setting_a"]), escape(r["setting_b"]),
            num(r.get("value_a")), num(r.get("value_b")), num(r["diff"], True), ci,
            r"\textbf{yes}" if sep else "no",
        ]
        body.append(" & ".join(cells) + r" \\")
    body.append(r"\bottomrule")
    cap = (
        r"Paired differences (A$-$B) with " + level + " percentile bootstrap intervals: every "
        "replicate resamples the same queries for both "
        + (r"settings; $\bar z$ per channel at $K = " + str(t.layout.get("k")) + "$, settings "
           "on the same null (its mean cancels in the difference)." if z else
           "methods, and for LDS the same retrained subsets.")
        + " Separated only where the interval excludes 0."
    )
    return latex_table(body, colspec=("l" if staged else "") + "lll" + "r" * 4 + "c",
                       caption=cap, label=table_label(t.name), resize=True)


class PairedSection(BaseSection):
    """Paired comparisons: ``lds_paired`` (methods) and ``paired`` (z̄ per channel)."""

    name = "paired"
    title = "Paired"
    order = 700
    specs = (TABLES["lds_paired"], TABLES["paired"])
    exports = ("lds_paired", "paired")

    def tables(self, data: ResultsData, k: int | None) -> dict[str, ReportTable]:
        return {t.name: t for t in paired_tables(data, k=k)}

    def html(self, data: ResultsData, tables: Mapping[str, ReportTable],
             ctx: PageContext) -> str | None:
        parts = [ctx.section(name, nav, esc(t.title), paired_html(t), t.caption)
                 for name, nav in (("lds_paired", "Paired"), ("paired", "Paired z̄"))
                 if (t := tables.get(name)) is not None]
        return "\n".join(parts) or None

    def latex(self, table: ReportTable) -> str | None:
        return PREAMBLE + paired_latex(table) if table.name in self.exports else None


#: The section object (registered in :mod:`aria_tda.report.sections.registry`).
PAIRED = PairedSection()
