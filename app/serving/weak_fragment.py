"""A fragment that does not keep its translations alive between runs.

Streamlit keeps every fragment of a session with the arguments it was called with, to rerun it alone, and keeps a
session for ``server.disconnectedSessionTTL`` seconds after its tab closed. A fragment given a Translation (a long
paragraph's is ~18 MB, a hostile link's ~160 MB) therefore kept it alive in every session for minutes after the
shared store (app.serving.scheduler, at most 256 MB) had let it go: measured on 2026-11-28, 50 heavy requests left
30 closed sessions holding 785 MB of translations. A ``weak_fragment`` keeps only weak references to its
Translation arguments: they live as long as the store or a running page holds them. A fragment rerun that finds its
translation gone reruns the whole page, which finds the translation in the store again or translates it anew, as a
full run always does.
"""
from __future__ import annotations

import functools
import weakref
from collections.abc import Callable
from typing import Any, ParamSpec

import streamlit as st

from model.serving.inference import Translation

P = ParamSpec("P")


def weak(value: Any) -> Any:
    """A Translation as a weak reference; any other value as it is."""
    return weakref.ref(value) if isinstance(value, Translation) else value


def strong(value: Any) -> Any:
    """What ``weak`` gave back as it was: the Translation, or None once nothing else holds it."""
    return value() if isinstance(value, weakref.ref) else value


def weak_fragment(func: Callable[P, None]) -> Callable[P, None]:
    """``@st.fragment`` for a function taking Translations, which the session keeps only weakly (module docstring).
    The fragment keeps ``func``'s name, so its widgets keep their ids."""

    @st.fragment
    @functools.wraps(func)
    def rerunnable(*args: Any, **kwargs: Any) -> None:
        held = [strong(v) for v in (*args, *kwargs.values())]  # strong from here on: nothing can go mid-run
        if any(isinstance(v, weakref.ref) and h is None for v, h in zip((*args, *kwargs.values()), held, strict=True)):
            st.rerun()  # a translation was let go since the page ran: the whole page finds it again
        func(*held[:len(args)], **dict(zip(kwargs, held[len(args):], strict=True)))

    @functools.wraps(func)
    def call(*args: P.args, **kwargs: P.kwargs) -> None:
        rerunnable(*(weak(a) for a in args), **{k: weak(v) for k, v in kwargs.items()})

    return call
