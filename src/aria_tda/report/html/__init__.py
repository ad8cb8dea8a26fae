r"""One self-contained HTML page: inline CSS, inline JavaScript, plots as inline SVG.

The page makes no network request of any kind: a Content-Security-Policy of ``default-src
'none'`` (inline styles and scripts allowed) guarantees it in every browser. Every string that
comes from the results folder is HTML-escaped (server side with :func:`html.escape`, client
side through ``textContent`` only); JSON embedded in ``<script>`` escapes ``<``, ``>`` and ``&``.

Static tables are rendered on the server (they print and work without JavaScript); the per-query
evidence view is filled by ``assets/report.js`` from the packed blocks of
:mod:`aria_tda.media.query_evidence`.

Layout
------
- :mod:`aria_tda.report.html.page` — the page: sections, summary, run details, the per-query
  view's skeleton, :func:`~aria_tda.report.html.page.render_html`;
- :mod:`aria_tda.report.html.tables` — one renderer per report table
  (:func:`~aria_tda.report.html.tables.table_html`);
- :mod:`aria_tda.report.html.cells` — escaping, JSON for ``<script>``, table cells and badges.
"""

from __future__ import annotations

from aria_tda.report.html.page import CSP as CSP
from aria_tda.report.html.page import render_html

__all__ = ["render_html"]
