r"""The report's "Which aspect" section: the distinctive reading of every setting.

Two tables, each built here with its HTML and LaTeX (one home for the topic):

- ``aspects`` — per setting and score variant: what the reading is anchored on, the aspect
  the method follows for every query (its baseline, the median channel z of the queries'
  distinctive groups, with a bootstrap interval), and per channel the share of the queries
  whose distinctive aspect it is; the share with no distinctive aspect;
- ``set_aspects`` — per set of queries that share a value of a ``confound`` column (and per
  setting and variant): the set's answer, its p-value and distinctive score.

The numbers are the results folder's (``aspects.csv``, ``set_aspects.csv``), see
:mod:`aria_tda.homogeneity.distinctive`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from aria_tda.report import number_format
from aria_tda.report.html.cells import esc
from aria_tda.report.load import ResultsData
from aria_tda.report.report_table import ReportTable, channels_in, info_cols, settings_in
from aria_tda.report.sections.base import BaseSection, PageContext
from aria_tda.results import TABLES

__all__ = ["ASPECTS", "ASPECT_TABLES", "aspect_tables", "aspects_html",
           "aspects_latex"]

#: The report tables of this section.
ASPECT_TABLES = ("aspects", "set_aspects")
_VARIANTS = ("original", "residual")


def _aspects(data: ResultsData) -> ReportTable | None:
    asp = data.table("aspects")
    if asp is None or asp.empty:
        return None
    channels = channels_in(data, asp)
    rows = []
    for v in [x for x in data.variants if x in set(asp["variant"])]:
        sub = asp[asp["variant"] == v]
        for s in settings_in(data, sub):
            ss = sub[sub["setting"] == s]
            first = ss.iloc[0]
            row: dict[str, Any] = {**info_cols(data, s), "variant": v,
                                   "anchor": first["anchor"], "K": int(first["K"]),
                                   "method_aspect": first["method_aspect"],
                                   "none_share": float(first["none_share"]),
                                   "n_queries": int(first["n_queries"])}
            for c in channels:
                cc = ss[ss["channel"] == c]
                r = cc.iloc[0] if len(cc) else None
                for q in ("baseline", "baseline_lo", "baseline_hi", "named_share"):
                    row[f"{c}_{q}"] = float(r[q]) if r is not None else np.nan
            rows.append(row)
    if not rows:
        return None
    return ReportTable(
        "aspects",
        "Which aspect: the distinctive reading",
        "For each query, the channel that explains its attribution beyond what the same "
        "method shows for every query — or none. 'Named' is the share of the queries whose "
        "distinctive aspect is the channel; 'none' the share with no distinctive aspect (a "
        "score matrix that ranks at random names a query with probability alpha). 'Follows' "
        "is the aspect along which the method follows each of its queries: the median over "
        "queries of the channel z of their distinctive top-K (95% bootstrap interval), the "
        "method's own aspect, not any one query's. Anchor: query = the queries' own features "
        "and the groups together; group = the attributed groups alone (the study has no "
        "query features). The paper's z̄ (Homogeneity) says how alike the top-K items are to "
        "each other, which mixes the query's influence with what the method retrieves for "
        "every query.",
        pd.DataFrame(rows),
        {"channels": channels},
    )


def _set_aspects(data: ResultsData) -> ReportTable | None:
    sa = data.table("set_aspects")
    if sa is None or sa.empty:
        return None
    rows = []
    for (s, v, var, val), g in sa.groupby(["setting", "variant", "variable", "value"],
                                          sort=False):
        named = str(g["named"].iloc[0])
        lead = g.loc[g["delta"].idxmax()] if g["delta"].notna().any() else None
        rows.append({"setting": s, "variant": v, "variable": var, "value": val,
                     "n_queries": int(g["n_queries"].iloc[0]), "named": named,
                     "p": float(g["p"].iloc[0]),
                     "lead_channel": str(lead["channel"]) if lead is not None else "",
                     "lead_delta": float(lead["delta"]) if lead is not None else np.nan})
    df = pd.DataFrame(rows)
    order = {s: i for i, s in enumerate(data.settings)}
    vorder = {v: i for i, v in enumerate(_VARIANTS)}
    df = df.assign(_s=df["setting"].map(order).fillna(len(order)),
                   _v=df["variant"].map(vorder).fillna(len(vorder)))
    df = df.sort_values(["variable", "value", "_v", "_s"], kind="stable").drop(
        columns=["_s", "_v"]).reset_index(drop=True)
    return ReportTable(
        "set_aspects",
        "Which aspect, per group of queries",
        "The queries that share a value of a metadata column, read as one set: the channel "
        "that sets their attribution apart from the method's other queries, or none. The "
        "set's distinctive top-K comes from the mean of its queries' scores minus the other "
        "queries' mean (what they share beyond the method adds up; noise averages out); p "
        "compares its leading channel with random sets of the other queries (Bonferroni over "
        "the channels).",
        df,
    )


def aspect_tables(data: ResultsData) -> list[ReportTable]:
    """The section's tables the folder has data for (``aspects``, ``set_aspects``).

    Parameters
    ----------
    data : ResultsData
        The results folder.
    """
    return [t for t in (_aspects(data), _set_aspects(data)) if t is not None]


# ----------------------------------------------------------------------------------- HTML


def aspects_html(t: ReportTable) -> str:
    """The HTML of an ``aspects`` or ``set_aspects`` table.

    Parameters
    ----------
    t : ReportTable
        From :func:`aspect_tables`.
    """
    from aria_tda.report.html.cells import (
        badge,
        column_title,
        esc,
        html_table,
        num_cell,
        text_cell,
        th,
    )

    df = t.df
    if t.name == "set_aspects":
        head = [[th("Column"), th("Value"), th("Queries"), th("Setting"), th("Scores"),
                 th("Answer"), th("p"), th("Leading channel (Δ)")]]
        rows = []
        for _, r in df.iterrows():
            ans = r["named"]
            rows.append(([
                text_cell(esc(r["variable"])), text_cell(esc(r["value"])),
                num_cell(esc(number_format.integer(r["n_queries"]))), text_cell(esc(r["setting"])),
                text_cell(esc(r["variant"])),
                text_cell(f"<b>{esc(ans)}</b>" if ans != "none" else "no distinctive aspect",
                          cls="named" if ans != "none" else "none"),
                num_cell(esc(number_format.general(r["p"]))),
                text_cell(esc(f"{r['lead_channel']} ({number_format.signed(r['lead_delta'])})")),
            ], {"data-setting": str(r["setting"]), "data-value": str(r["value"])}))
        return html_table(head, rows, cls="data compact", attrs={"id": "table-set_aspects"})
    channels = t.layout["channels"]
    head1 = [th("", colspan="5")] + [th(column_title(c), colspan="2", **{"class": "grp"})
                                     for c in channels] + [th("")]
    head2 = [th("Setting"), th("Scores"), th("Verdict"), th("Anchor"),
             th("Follows (method's aspect)")]
    head2 += [x for _ in channels for x in (th("named ↑"), th("follows z [95% CI]"))]
    head2 += [th("none")]
    rows = []
    for _, r in df.iterrows():
        cells = [
            text_cell(esc(r["setting"])),
            text_cell(esc(r["variant"])),
            text_cell(badge(r["verdict"])),
            text_cell(esc(r["anchor"])),
            text_cell(esc(r["method_aspect"])),
        ]
        for c in channels:
            lo, hi = r[f"{c}_baseline_lo"], r[f"{c}_baseline_hi"]
            ci = (
                f' <span class="ci">[{esc(number_format.signed(lo))}, '
                f'{esc(number_format.signed(hi))}]</span>'
                if number_format.finite(lo) and number_format.finite(hi)
                else ""
            )
            cells += [
                num_cell(
                    esc(number_format.pct(r[f"{c}_named_share"], 0)),
                    **{"data-col": f"{c}_named_share"},
                ),
                num_cell(
                    esc(number_format.signed(r[f"{c}_baseline"])) + ci,
                    **{"data-col": f"{c}_baseline"},
                ),
            ]
        cells.append(
            num_cell(esc(number_format.pct(r["none_share"], 0)), **{"data-col": "none_share"})
        )
        rows.append((cells, {"data-setting": str(r["setting"]), "data-variant": str(r["variant"])}))
    return html_table([head1, head2], rows, cls="data compact", attrs={"id": "table-aspects"})


# ---------------------------------------------------------------------------------- LaTeX


def aspects_latex(t: ReportTable) -> str:
    """The LaTeX of an ``aspects`` or ``set_aspects`` table.

    Parameters
    ----------
    t : ReportTable
        From :func:`aspect_tables`.
    """
    from aria_tda.report.latex.cells import (
        column_title,
        escape,
        latex_table,
        pct_cell,
        signed_cell,
        table_label,
    )

    df = t.df
    if t.name == "set_aspects":
        head = ["Column", "Value", "$n$", "Setting", "Scores", "Answer", "$p$", "Leading"]
        body = [r"\toprule", " & ".join(head) + r" \\", r"\midrule"]
        for _, r in df.iterrows():
            body.append(
                " & ".join(
                    [
                        escape(r["variable"]),
                        escape(r["value"]),
                        str(int(r["n_queries"])),
                        escape(r["setting"]),
                        escape(r["variant"]),
                        r"\textbf{" + escape(r["named"]) + "}" if r["named"] != "none" else "none",
                        escape(number_format.general(r["p"])),
                        escape(r["lead_channel"])
                        + f" ({signed_cell(r['lead_delta'], bold_positive=False)})",
                    ]
                )
                + r" \\"
            )
        body.append(r"\bottomrule")
        return latex_table(body, colspec="llrlllrl", caption=escape(t.caption),
                           label=table_label(t.name), resize=True)
    channels = t.layout["channels"]
    head = ["Setting", "Scores", "Anchor", "Follows"] + [
        column_title(c) for c in channels] + ["None"]
    body = [r"\toprule", " & ".join(head) + r" \\", r"\midrule"]
    for _, r in df.iterrows():
        cells = [escape(r["setting"]), escape(r["variant"]), escape(r["anchor"]),
                 escape(r["method_aspect"])]
        for c in channels:
            cells.append(f"{pct_cell(r[f'{c}_named_share'])} "
                         f"({signed_cell(r[f'{c}_baseline'], bold_positive=False)})")
        cells.append(pct_cell(r["none_share"]))
        body.append(" & ".join(cells) + r" \\")
    body.append(r"\bottomrule")
    cap = ("The distinctive reading: per channel, the share of queries whose attribution it "
           "explains beyond what the method shows for every query (in parentheses: the "
           "method's median channel z over its queries, what it follows for every query); "
           "None: the share with no distinctive aspect; Follows: the method's own aspect.")
    return latex_table(body, colspec="llll" + "r" * (len(channels) + 1), caption=escape(cap),
                       label=table_label(t.name), resize=len(channels) > 3)


class AspectsSection(BaseSection):
    """Which aspect: the distinctive reading (``aspects``, ``set_aspects``)."""

    name = "aspects"
    title = "Which aspect"
    order = 200
    specs = (TABLES["aspects"], TABLES["query_aspects"], TABLES["set_aspects"])
    exports = ASPECT_TABLES

    def tables(self, data: ResultsData, k: int | None) -> dict[str, ReportTable]:
        return {t.name: t for t in aspect_tables(data)}

    def html(self, data: ResultsData, tables: Mapping[str, ReportTable],
             ctx: PageContext) -> str | None:
        t = tables.get("aspects")
        if t is None:
            return None
        body = aspects_html(t)
        ts = tables.get("set_aspects")
        if ts is not None:
            body += (f"<h3>{esc(ts.title)}</h3>" + aspects_html(ts)
                     + f'<p class="caption">{esc(ts.caption)}</p>')
        return ctx.section("aspects", "Which aspect", esc(t.title), body, t.caption)

    def latex(self, table: ReportTable) -> str | None:
        from aria_tda.report.latex.cells import PREAMBLE

        return PREAMBLE + aspects_latex(table) if table.name in ASPECT_TABLES else None


#: The section object (registered in :mod:`aria_tda.report.sections.registry`).
ASPECTS = AspectsSection()
