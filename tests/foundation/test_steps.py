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


def test_a_body_that_raises_leaves_no_step_marked_running(tmp_path):
    import pytest

    st = Step(tmp_path, "train", {"seed": 1})
    with pytest.raises(RuntimeError), st.running() as work:
        (work / "half.bin").write_bytes(b"x")
        raise RuntimeError("broke")
    assert not st.path.exists()  # a step that starts from scratch is removed
    with pytest.raises(KeyboardInterrupt), st.running(clear=False) as work:
        (work / "model-0.pt").write_bytes(b"kept")
        raise KeyboardInterrupt
    # a step that resumes its partial work keeps it, and its record says failed, not running
    assert (st.path / "model-0.pt").read_bytes() == b"kept"
    assert st.record() == {"status": "failed", "params": {"seed": 1}}
    assert st.stale_reason() == "an earlier run failed in it" and not st.is_complete()
    with st.running(clear=False):
        st.complete(loss=0.1)
    assert st.is_complete() and st.summary() == {"loss": 0.1}


def test_an_unreadable_record_is_named_by_damage(tmp_path):
    st = Step(tmp_path, "train", {"seed": 1})
    assert st.damage() is None
    st.path.mkdir()
    for text, why in (('{"status": "comp', "is not valid JSON (JSONDecodeError)"),
                      ("[1, 2]", "holds a JSON list, not a step record"),
                      ('{"a": 1}', "is not a step record (no status and parameters)")):
        st.record_path.write_text(text)
        assert st.record() is None and not st.is_complete()
        assert st.damage() == f"{st.record_path} {why}"
