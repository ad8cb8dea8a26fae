"""``aria demo`` (deprecated import path): the demo now lives in :mod:`aria.bench.demo`.

Its public names are re-exported here from their old path.
"""

from __future__ import annotations

from aria.bench.demo import DEMO_METHODS, DemoSettings, agreement_table, run_demo

__all__ = ["DEMO_METHODS", "DemoSettings", "agreement_table", "run_demo"]
