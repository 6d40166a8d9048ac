"""Text a visitor controls, made inert wherever Streamlit renders Markdown (notices, captions, labels).

Links, sentences and uploaded file names come from whoever opened the page: echoed as Markdown, ``[Log in
again](http://evil)`` would be a clickable link inside the app, ``# big`` a heading, ``:red[...]`` coloured text.
Every Markdown character is backslash-escaped and line breaks become spaces, so the text shows exactly as typed.
"""
from __future__ import annotations

import re

MARKDOWN = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$&])")
CONTROL = re.compile(r"[\x00-\x1f\x7f\u2028\u2029]+")


def md(text: object, limit: int | None = None) -> str:
    """``text`` as literal Markdown, on one line; cut to ``limit`` characters (an ellipsis marks the cut)."""
    text = CONTROL.sub(" ", str(text))
    if limit is not None and len(text) > limit:
        text = text[: limit - 1] + "…"
    return MARKDOWN.sub(r"\\\1", text)
