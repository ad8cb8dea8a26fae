"""Query generation: semantic -> coarse -> fine, constrained to valid ids, deterministic."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")

from aria_tda.errors import ParameterError
from aria_tda_experiments.audio.generate import generate_queries, load_queries, sample_in_ranges
from aria_tda_experiments.audio.stages import STAGES, stage_layout
from aria_tda_experiments.audio.training import stage_model_config
from aria_tda_experiments.model import build_model

from ._synth import TINY, fake_tracks


@pytest.fixture(scope="module")
def models():
    """Untrained stage models (generation must hold for any weights)."""
    return {s: build_model(stage_model_config(stage_layout(s, TINY), d_model=16, n_heads=2,
                                              d_ff=32, n_layers=1), seed=i)
            for i, s in enumerate(STAGES)}


def test_generation_is_deterministic_valid_and_chained(models):
    test = fake_tracks(3, seed=5, prefix="t")
    a = generate_queries(models, test, spec=TINY, prompt_seconds=2.0, seed=4)
    b = generate_queries(models, test, spec=TINY, prompt_seconds=2.0, seed=4)
    c = generate_queries(models, test, spec=TINY, prompt_seconds=2.0, seed=5)
    assert list(a.query_ids) == list(test)
    for s in STAGES:
        np.testing.assert_array_equal(a.tokens[s], b.tokens[s])
        lay = stage_layout(s, TINY)
        lo, hi = lay.position_ranges()
        assert a.tokens[s].shape == (3, lay.length)
        assert ((a.tokens[s] >= lo) & (a.tokens[s] < hi)).all(), s
    assert any(not np.array_equal(a.tokens[s], c.tokens[s]) for s in STAGES)
    # semantic prompt: BOS, the held-out track's cond and first 2 s (4 frames) of semantic ids
    sem = stage_layout("semantic", TINY)
    for j, tok in enumerate(test.values()):
        np.testing.assert_array_equal(a.semantic[j, :4], tok.semantic[:4])
        for s in STAGES:
            lay = stage_layout(s, TINY)
            np.testing.assert_array_equal(a.tokens[s][j, :1 + TINY.cond_codebooks],
                                          lay.encode(tok, 0)[:1 + TINY.cond_codebooks])
    np.testing.assert_array_equal(a.semantic, a.tokens["semantic"][:, sem.target_start:]
                                  - sem.offset("semantic"))
    # coarse conditions on the generated semantic tokens, fine on the generated coarse levels
    crs, fin = stage_layout("coarse", TINY), stage_layout("fine", TINY)
    n_crs, n_fin, lv = TINY.frames("coarse"), TINY.frames("fine"), TINY.coarse_levels
    np.testing.assert_array_equal(
        a.tokens["coarse"][:, 1 + TINY.cond_codebooks : crs.target_start]
        - crs.offset("semantic"), a.semantic[:, :n_crs])
    coarse_ids = a.tokens["coarse"][:, crs.target_start : crs.target_start + n_fin * lv]
    fine_ctx = a.tokens["fine"][:, 1 + TINY.cond_codebooks : fin.target_start]
    np.testing.assert_array_equal(coarse_ids - crs.offset("acoustic1"),
                                  fine_ctx - fin.offset("acoustic1"))
    assert a.acoustic.shape == (3, n_fin, TINY.rvq_levels)
    assert a.acoustic.min() >= 0 and a.acoustic.max() < TINY.rvq_codebook
    for j, tok in enumerate(test.values()):  # re-encoding the generated codes gives the query
        fake = type(tok)(semantic=np.zeros(n_fin, dtype=np.int64), acoustic=a.acoustic[j],
                         cond=tok.cond)
        np.testing.assert_array_equal(fin.encode(fake, 0), a.tokens["fine"][j])


def test_queries_round_trip(models, tmp_path):
    q = generate_queries(models, fake_tracks(2, prefix="t"), spec=TINY, seed=1,
                         out_dir=tmp_path / "q")
    back = load_queries(tmp_path / "q")
    assert list(back.query_ids) == list(q.query_ids) and back.spec == TINY
    for s in STAGES:
        np.testing.assert_array_equal(back.tokens[s], q.tokens[s])
    np.testing.assert_array_equal(back.acoustic, q.acoustic)
    assert back.params == q.params


def test_sample_in_ranges_respects_each_position_and_checks_inputs(models):
    lay = stage_layout("fine", TINY)
    lo, hi = lay.position_ranges()
    out = sample_in_ranges(models["fine"], np.zeros((4, 1), dtype=np.int64), lo, hi, seed=0,
                           top_k=2)
    assert out.shape == (4, lay.length) and ((out >= lo) & (out < hi)).all()
    with pytest.raises(ParameterError, match="prompts"):
        sample_in_ranges(models["fine"], np.zeros((4, lay.length + 1), dtype=np.int64), lo, hi)
    with pytest.raises(ParameterError, match="models"):
        generate_queries({"semantic": models["semantic"]}, fake_tracks(1), spec=TINY)
    with pytest.raises(ParameterError, match="prompt"):
        generate_queries(models, fake_tracks(1), spec=TINY, prompt_seconds=10.0)
