"""Which items the report keeps media for: bounded per query and in all."""

from __future__ import annotations

from types import SimpleNamespace

import pandas as pd

from aria_tda.report.media_pack import select_media_items


def _data():
    rows = []
    for s in ("A", "B"):
        for v in ("original", "residual"):
            for q in (0, 1):
                for r in range(4):
                    rows.append({"setting": s, "variant": v, "query": q, "rank": r,
                                 "track_id": f"{s}{v[0]}{q}-{r}", "score": 1.0 - r})
    topk = pd.DataFrame(rows)
    return SimpleNamespace(table=lambda name: topk if name == "topk" else None,
                           settings=["A", "B"], variants=["original", "residual"])


def test_top_items_of_every_setting_original_first_and_the_setting_that_listed_them():
    first: dict = {}
    out = select_media_items(_data(), [0, 1], top=2, first_setting=first)
    assert out["0"] == ["Ao0-0", "Ao0-1", "Bo0-0", "Bo0-1", "Ar0-0", "Ar0-1", "Br0-0", "Br0-1"]
    assert first[("0", "Bo0-1")] == "B" and first[("1", "Ar1-0")] == "A"


def test_the_cap_keeps_the_first_settings_best_items_across_queries():
    out = select_media_items(_data(), [0, 1], top=2, max_items=5)
    kept = {t for lst in out.values() for t in lst}
    assert len(kept) == 5
    # original scores first, setting A before B, best ranks first, queries in turn
    assert out["0"] == ["Ao0-0", "Ao0-1", "Bo0-0"] and out["1"] == ["Ao1-0", "Ao1-1"]
    assert select_media_items(_data(), [0], top=2, max_items=0) == {"0": []}
