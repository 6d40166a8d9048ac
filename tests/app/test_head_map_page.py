"""The Heads page's map of all heads (app.heads.head_map, AppTest): every head of the model is on the map at the place
and with the name explain.head_map gives it, the cost is said before the work, a head opens in the explorer, its
queries and keys are drawn; and on the Decoding page, why beam search pruned a hypothesis."""
from __future__ import annotations

import math

import numpy as np
import pytest
import streamlit as st
import torch

from app.models.examples import examples_for
from app.serving.scheduler import store
from explain.head_map import build_head_map, query_key_plane
from explain.integrated_gradients import integrated_gradients
from model.checkpoints.files import load_checkpoint
from model.network.config import DecodeConfig
from model.serving.inference import translate
from tests.bart_helpers import bart_checkpoint

HEADS = "app/views/heads.py"
DECODING = "app/views/decoding.py"


@pytest.fixture(autouse=True)
def forget_translations():
    yield
    store.clear()


def direct_map(ckpt, texts, max_len=60):
    ts = [translate(ckpt.model, ckpt.tokenizer, text, DecodeConfig(max_len=max_len)) for text in texts]
    return build_head_map(ckpt.model, [(t.source.ids, t.target_ids, t.source.pieces, t.target_input_pieces)
                                       for t in ts])


def map_points(figure) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """(head index, coordinates, hover) of every head marker on the drawn map."""
    index, coords, hovers = [], [], []
    for trace in figure["data"]:
        if trace.get("name") == "selected":
            continue
        index += [int(np.asarray(c).ravel()[0]) for c in trace["customdata"]]
        coords += list(zip(trace["x"], trace["y"], strict=True))
        hovers += list(trace["hovertext"])
    order = np.argsort(index)
    return np.asarray(index)[order], np.asarray(coords)[order], [hovers[i] for i in order]


def test_the_map_places_and_names_every_head_as_explain_does_and_opens_one_in_the_explorer(app_test, figures, shipped):
    at = app_test(HEADS, heads_section="Map of all heads")
    assert not at.exception and not at.error
    assert any(c.value.startswith("Cost before it runs: 4 sentences") for c in at.caption)
    ckpt = shipped("reverse")
    expected = direct_map(ckpt, examples_for(ckpt.meta).sentences)
    drawn = figures(at)
    index, coords, hovers = map_points(drawn["head_map"])
    assert list(index) == list(range(len(expected.heads)))
    np.testing.assert_allclose(coords, expected.coords, atol=1e-6)
    for i, hover in enumerate(hovers):
        name = expected.names[i].replace("<", "&lt;").replace(">", "&gt;")
        assert f"<b>{name}</b>: {expected.scores[i]:.2f}" in hover
    picked = len(expected.heads) - 1  # the last cross head
    at.selectbox(key="head_map_pick").set_value(picked).run()
    kind, layer, head = expected.heads[picked]
    qk = figures(at)["head_map_qk"]
    queries = np.concatenate([r.queries[kind][layer, head] for r in expected.readings])
    keys = np.concatenate([r.keys[kind][layer, head] for r in expected.readings])
    plane = query_key_plane(queries, keys)
    by_name = {t["name"]: t for t in qk["data"]}
    np.testing.assert_allclose(np.column_stack([by_name["queries"]["x"], by_name["queries"]["y"]]), plane.queries,
                               atol=1e-5)
    np.testing.assert_allclose(np.column_stack([by_name["keys"]["x"], by_name["keys"]["y"]]), plane.keys, atol=1e-5)
    at.button(key="head_map_open").click().run()
    assert not at.exception
    assert (at.session_state["kind"], at.session_state["layer"], at.session_state["head"]) == (kind, layer, head)
    assert at.session_state["translate_view"] == "Heatmap" and at.title[0].value == "Attention Explorer"


def test_a_converted_model_without_examples_is_mapped_on_the_current_sentence(app_test, figures, tmp_path):
    ckpt = load_checkpoint(bart_checkpoint(tmp_path / "bart", "bart"), torch.device("cpu"))
    name = f"upload:{ckpt.path.name}"
    st.session_state["uploads"] = {name: ckpt}
    try:
        at = app_test(HEADS, model_name=name, uploads={name: ckpt}, max_len=6, text="The house is small.",
                      heads_section="Map of all heads")
    finally:
        st.session_state.pop("uploads", None)
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert any("the current sentence" in m.value for m in at.markdown)
    index, _, _ = map_points(figures(at)["head_map"])
    cfg = ckpt.config
    assert len(index) == cfg.n_heads * (cfg.n_encoder_layers + 2 * cfg.n_decoder_layers)
    assert "head_map_qk" in figures(at)


def test_a_pruned_hypothesis_shows_where_it_fell_out_and_why_the_kept_piece_won(app_test, figures, shipped):
    text = "a b c d e f"
    at = app_test(DECODING, text=text, beam_size=3)
    picker = at.selectbox(key="pruned_pick")
    assert picker.value is None and picker.options
    ckpt = shipped("reverse")
    translation = translate(ckpt.model, ckpt.tokenizer, text, DecodeConfig(beam_size=3, max_len=60))
    result = translation.result
    pruned = [(s, i) for s in result.steps for i, c in enumerate(s.candidates)
              if c.status == "pruned" and math.isfinite(c.log_prob)]
    step, node = pruned[0]
    picker.set_value(0).run()
    assert not at.exception
    assert at.session_state["step"] == step.step + 1 and at.session_state["beam_node"] == node
    c = step.candidates[node]
    drawn = figures(at)["pruned_step"]["data"][0]
    np.testing.assert_allclose(drawn["x"], [k.log_prob for k in step.candidates], atol=1e-6)
    said = " ".join(x.value for x in at.caption)
    cut = [k for k in step.candidates if k.status == "kept"][-1].log_prob
    assert f"it ranked {node + 1} of the {len(step.candidates)}" in said and f"{cut - c.log_prob:.3f} more" in said
    sibling = next(k for k in step.candidates if k.row == c.row and k.status in ("kept", "finished"))
    assert any(f"= {sibling.log_prob - c.log_prob:.3f} at this step" in m.value for m in at.markdown)
    at.button(key="decoding_pruned_run").click().run()
    assert not at.exception
    prefix = tuple(step.prefixes[c.row].tolist())
    ig = integrated_gradients(ckpt.model, translation.source.ids, prefix, sibling.token, c.token, steps=32)
    np.testing.assert_allclose(figures(at)["decoding_pruned_source"]["data"][0]["y"], ig.source.double().numpy(),
                               atol=1e-5)
    assert ig.value == pytest.approx(sibling.log_prob - c.log_prob, abs=1e-4)  # f is the gap in the tree
