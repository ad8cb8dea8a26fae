"""aria_tda._steps: resumable steps, reused only with the same parameters."""

from __future__ import annotations

from aria_tda._steps import Step


def test_step_reuse_and_invalidation(tmp_path):
    st = Step(tmp_path, "train", {"seed": 1})
    assert not st.is_complete()
    st.begin()
    assert not st.is_complete()  # running, not complete
    st.complete(loss=0.5)
    assert Step(tmp_path, "train", {"seed": 1}).is_complete()
    other = Step(tmp_path, "train", {"seed": 2})
    assert not other.is_complete()
    assert "seed" in other.stale_reason()
    assert st.summary() == {"loss": 0.5}
