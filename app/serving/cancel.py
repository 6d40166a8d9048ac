"""Abandoned work stops: a stop signal for the current browser session's script run.

Streamlit stops a script run at its next element update when the session closes (the tab is gone), reruns, or
the user changes a widget. A decode or a head-importance table that draws nothing for many steps would run to the
end for nobody, so long loops ask ``session_stop_signal()`` once per step (model.serving.inference.check_stop) and stop
with Cancelled. The signal reads the session's pending script request without consuming it, so the rerun the user
asked for still happens.
"""
from __future__ import annotations

from collections.abc import Callable

import streamlit as st
from streamlit.navigation.page import StreamlitPage
from streamlit.runtime.scriptrunner_utils.script_requests import ScriptRequestType
from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

from model.serving.inference import Cancelled


def session_stop_signal() -> Callable[[], bool]:
    """A callable that turns True once this session's run was asked to stop or rerun (never True outside a
    Streamlit script run, e.g. in a unit test that calls a view's helpers directly)."""
    ctx = get_script_run_ctx(suppress_warning=True)
    requests = getattr(ctx, "script_requests", None)
    if requests is None:
        return lambda: False
    # ScriptRequests keeps the pending request in _state; reading it (unlike on_scriptrunner_yield) consumes nothing.
    return lambda: getattr(requests, "_state", ScriptRequestType.CONTINUE) is not ScriptRequestType.CONTINUE


def run_page(page: StreamlitPage) -> None:
    """Run the chosen page; work it stopped because the session left or reran ends the run quietly (Streamlit then
    starts the next run, or none)."""
    try:
        page.run()
    except Cancelled:
        st.stop()
