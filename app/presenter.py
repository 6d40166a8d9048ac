"""Presenter mode: the app on a lecture hall's projector (often 1280x720 or 1024x768). Large text, the sidebar
folded away, and figures restyled (app.charts.style.presented) and no taller than the screen.

The sidebar is folded by pressing its own fold button, once, on the run where presenter mode turns on and on the
first run of every page it then opens (Back, Forward, a link, the page menu), and unfolded when it turns off, so the
lecturer can still open it to switch presenter mode off. No focus frame is drawn around what a mouse clicked (a
keyboard's focus still shows). Not
st.set_page_config(initial_sidebar_state=...): it may be called on any run, but the browser (Chromium, Streamlit
1.67) obeys it only until the sidebar has been folded or opened by hand once, a choice it keeps in localStorage.
"""
from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

from app.charts.style import PRESENTER_MAX_HEIGHT, presented

PRESENTER_CSS = """<style>
.stMainBlockContainer {padding: 3.6rem 1.5rem 1rem 1.5rem; max-width: none}
.stMainBlockContainer h1 {font-size: 2.4rem}
.stMainBlockContainer h2 {font-size: 2.1rem}
.stMainBlockContainer h3 {font-size: 1.7rem}
.stMainBlockContainer p, .stMainBlockContainer li, .stMainBlockContainer label {font-size: 1.3rem}
.stMainBlockContainer [data-testid=stCaptionContainer] p {font-size: 1.1rem}
:focus:not(:focus-visible) {outline: none !important; box-shadow: none !important}
</style>"""

# Presses the sidebar's fold (FOLD = true) or open button until the sidebar is in that state: the button toggles,
# so it is pressed only while the state is wrong, and at most once a second (the sidebar slides for a moment).
_SIDEBAR_SCRIPT = """<div data-ae-sidebar="NONCE"></div>
<style>[data-testid=stElementContainer]:has([data-ae-sidebar]){display:none}</style>
<script>
(() => {
  const fold = FOLD;
  let tries = 0, pressed = 0;
  const step = () => {
    const bar = document.querySelector('[data-testid=stSidebar]');
    if (bar && (bar.getBoundingClientRect().right > 1) !== fold) return;
    if (Date.now() - pressed > 1000) {
      const button = document.querySelector(fold ? '[data-testid=stSidebarCollapseButton] button'
                                                 : '[data-testid=stExpandSidebarButton]');
      if (button) { button.click(); pressed = Date.now(); }
    }
    if (++tries < 40) setTimeout(step, 250);
  };
  setTimeout(step, 100);
})();
</script>"""


def is_on() -> bool:
    return bool(st.session_state.get("presenter"))


def apply_presenter() -> None:
    """Enlarge the page's text in presenter mode, and fold (unfold) the sidebar on the run it turns on (off) and,
    while it is on, on a page's first run."""
    on, before = is_on(), st.session_state.get("_presenter_applied", False)
    page, last_page = st.session_state.get("_page", ""), st.session_state.get("_presenter_page")
    if on:
        st.html(PRESENTER_CSS)
    if on != before or (on and page != last_page):
        count = int(st.session_state.get("_sidebar_scripts", 0)) + 1  # a new element, so its script runs again
        st.session_state["_sidebar_scripts"] = count
        st.html(_SIDEBAR_SCRIPT.replace("FOLD", "true" if on else "false").replace("NONCE", str(count)),
                unsafe_allow_javascript=True)
    st.session_state["_presenter_applied"] = on
    st.session_state["_presenter_page"] = page


def presentable(fig: go.Figure, max_height: int = PRESENTER_MAX_HEIGHT) -> go.Figure:
    """``fig`` restyled for the projector in presenter mode (in place), else unchanged."""
    return presented(fig, max_height) if is_on() else fig
