"""aria_tda._stages: resumable stages, reused only with the same parameters."""

from __future__ import annotations

from aria_tda._stages import Stage


def test_stage_reuse_and_invalidation(tmp_path):
    st = Stage(tmp_path, "train", {"seed": 1})
    assert not st.is_complete()
    st.begin()
    assert not st.is_complete()  # running, not complete
    st.complete(loss=0.5)
    assert Stage(tmp_path, "train", {"seed": 1}).is_complete()
    other = Stage(tmp_path, "train", {"seed": 2})
    assert not other.is_complete()
    assert "seed" in other.stale_reason()
    assert st.summary() == {"loss": 0.5}
