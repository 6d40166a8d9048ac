"""Page: Heads and attribution — go beyond looking at the weights. Switch heads off and decode again (Michel et
al., 2019), attribute every output piece to the source through the layers three ways (attention rollout,
norm-based attention, gradient x input; plus rollout and flow through the encoder), compare the attention of two
sentences, watch attention learn: the same sentence read by snapshots from earlier in the model's training, and map
every head by how alike they attend over the example sentences, with one head's queries and keys in one plane.

Every number comes from explain/ (ablation, attribution, heads, checkpoints) on the current sentence; the
sections only pick what to show and average heads for display. Each section is a module of app/heads/ (switch_off,
attribution, compare, learning, head_map); this page draws the title and the section picker and calls the chosen one.
"""
from __future__ import annotations

import streamlit as st

from app.heads.attribution import attribution_section
from app.heads.compare import compare_section
from app.heads.head_map import head_map_section
from app.heads.learning import checkpoints_section
from app.heads.switch_off import ablation_section
from app.page import concept_page, keep_valid
from app.serving.scheduler import current_request
from model.checkpoints.files import Checkpoint
from model.serving.inference import Translation

SECTIONS = ("Switch heads off", "Attribution", "Compare two sentences", "Watch attention learn", "Map of all heads")
REVERSE_EXPECT = (
    "**What to expect on the reversal model.** The output is the input backwards, so output piece *t* must read "
    "source piece *S − 2 − t* (before </s>): its cross-attention should be the **anti-diagonal**, and the "
    "attributions below should find it. Switch off the cross-attention heads that carry it (the most important "
    "cross heads in the table, or all of them with the button) and the reversal breaks; switch off a head that "
    "does not matter and it stays intact.")
INTRO = (  # what the page shows, under its title
    "Looking at attention is the first step. Here you change the model and follow its numbers: switch heads off and "
    "see what the translation loses, trace each output piece back to the source through the layers, put two "
    "sentences side by side, and watch the attention form as the model trained.")


def render(_: Checkpoint, translation: Translation) -> None:
    request = current_request()
    if request.model_name == "reverse":
        st.info(REVERSE_EXPECT, icon=":material/swap_horiz:")
    keep_valid("heads_section", list(SECTIONS))
    st.session_state.setdefault("heads_section", SECTIONS[0])
    section = st.segmented_control("Section", SECTIONS, key="heads_section", required=True,
                                   persist_state="session", label_visibility="collapsed")
    if section == SECTIONS[0]:
        ablation_section(translation, request)
    elif section == SECTIONS[1]:
        attribution_section(translation, request)
    elif section == SECTIONS[2]:
        compare_section(request)
    elif section == SECTIONS[3]:
        checkpoints_section(translation, request)
    else:
        head_map_section(request)


concept_page("Heads and attribution", INTRO, render)
