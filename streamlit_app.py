"""Attention Explorer: the router. Run with `streamlit run streamlit_app.py`."""
import os

# Before torch is imported (see stack-notes, CPU threads): one intra-op thread per decode is faster here than two
# (benchmarks/decode.py: 1.12x slower on 2), and leaves the other core to another session; threads that wait
# passively do not starve a shared CPU.
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import streamlit as st

from app.browser import hide_loading_skeletons
from app.serving.cancel import run_page
from app.serving.memory import limit_fragmentation
from app.sidebar import render_sidebar
from app.state import sync_url

limit_fragmentation()  # a long-lived server gives freed decode memory back to the system (app.serving.memory)
st.set_page_config(page_title="Attention Explorer", page_icon="app/static/icon.png", layout="wide")  # local: no fetch
hide_loading_skeletons()
page = st.navigation({"Explore": [
    st.Page("app/views/translate.py", title="Translate", icon=":material/translate:", default=True),
    st.Page("app/views/decoding.py", title="Decoding, step by step", icon=":material/account_tree:"),
    st.Page("app/views/positional.py", title="Positional encoding", icon=":material/waves:"),
    st.Page("app/views/masks.py", title="Masks", icon=":material/grid_on:"),
    st.Page("app/views/mechanics.py", title="Mechanics of attention", icon=":material/functions:"),
    st.Page("app/views/heads.py", title="Heads and attribution", icon=":material/psychology:"),
    st.Page("app/views/model_training.py", title="Model and training", icon=":material/model_training:",
            url_path="model"),
    st.Page("app/views/vision.py", title="Vision: ViT & Swin", icon=":material/image:", url_path="vision"),
], "Lecture": [
    st.Page("app/views/lecture.py", title="Guided tour of the paper", icon=":material/co_present:", url_path="lecture"),
]})
st.session_state["_page"] = page.url_path  # which parameters belong in this page's link (app.state)
render_sidebar()
run_page(page)
sync_url()
