"""What every page shares: the logger, how a chart is put on screen, the selected model, the sentence the
concept pages explain (the one typed on the Translate page, translated with the current settings, cached),
and the one place where the model's tensors become numpy arrays for the charts.
Empty or unreadable text becomes a hint with a link, a broken model an error message, never a traceback."""
from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from app.charts.axes import columns_for
from app.charts.style import plotly_config
from app.checks.escape import md
from app.models.registry import load_model
from app.presenter import presentable
from app.serving.scheduler import ServerBusy, current_request, translate_request
from model.checkpoints.files import Checkpoint
from model.serving.doubt import doubt_of
from model.serving.inference import InputError, Translation

TRANSLATE_PAGE = "app/views/translate.py"
log = logging.getLogger("attention_explorer")


def require_checkpoint() -> Checkpoint | None:
    """The model selected in the sidebar, or None after an error message if it cannot be loaded."""
    try:
        return load_model(st.session_state["model_name"])
    except Exception:
        log.exception("loading model %r failed", st.session_state.get("model_name"))
        st.error(f"The model “{st.session_state.get('model_name')}” could not be loaded. Pick another one in the "
                 "sidebar.")
        return None


def to_numpy(tensor: Any) -> np.ndarray:
    """A tensor from the model as a float32 (or bool) numpy array on the CPU: the only door from torch into
    the app, which never imports torch itself."""
    values = tensor.detach().cpu()
    return values.float().numpy() if values.is_floating_point() else values.numpy()


def plot(fig: go.Figure, key: str) -> None:
    """Draw a figure full width (restyled for the projector in presenter mode) with the download button in the
    chosen format (``key`` is also the file name)."""
    st.plotly_chart(presentable(fig), key=key, width="stretch", theme=None,  # theme=None: keep the project template
                    config=plotly_config(key, st.session_state["image_format"]))


def figure_columns(n: int, keys: Sequence[str], rows: Sequence[str] = (), colorbar: bool = True) -> tuple[list, int]:
    """Places for ``n`` matrices of ``keys`` (columns) by ``rows``, and the page columns each stands in (what its
    builder's ``columns`` is told): side by side where every piece keeps its label (app.charts.axes.columns_for),
    else fewer to a row, one under another at the least."""
    per_row = columns_for(n, keys, rows, colorbar)
    places: list = []
    for first in range(0, n, per_row):
        places += list(st.columns(per_row))[: n - first] if per_row > 1 else [st.container()]
    return places, per_row


def keep_valid(key: str, options: list) -> None:
    """Forget a widget's remembered value that is no longer an option (fewer layers after a model switch)."""
    if key in st.session_state and st.session_state[key] not in options:
        del st.session_state[key]


def budget_notes(translation: Translation) -> None:
    """What the server's budget reduced before decoding this sentence, and why (model.serving.budget.plan_decode)."""
    if translation.notes:
        st.info("**Reduced to fit the server's budget** (one server serves the whole room): "
                + " ".join(md(note) for note in translation.notes), icon=":material/speed:")


COULD_NOT_TRANSLATE = "The model could not translate the current sentence. Try another sentence on the Translate page."


def show_failure(exc: Exception, what: str, message: str) -> None:
    """What a visitor sees when ``what`` raised ``exc`` and they cannot fix it, never a traceback: a full server as a
    warning (not a failure: the class is using every model slot), anything else as ``message``, its traceback in the
    server log. Call it inside the ``except`` clause: log.exception reads the exception being handled."""
    if isinstance(exc, ServerBusy):
        log.warning("%s: no free model slot: %s", what, exc)
        st.warning(str(exc), icon=":material/hourglass_disabled:")
    else:
        log.exception("%s failed", what)
        st.error(message)


def require_translation() -> Translation | None:
    """The current sentence's Translation, or None after showing the user why there is none."""
    try:
        translation = translate_request(current_request())
        budget_notes(translation)
        return translation
    except InputError as exc:
        st.info(f"{exc} These pages explain the sentence you type on the Translate page.", icon=":material/edit:")
    except Exception as exc:  # a model failure must not become a traceback in a lecture
        show_failure(exc, "translating the current sentence", COULD_NOT_TRANSLATE)
    st.page_link(TRANSLATE_PAGE, label="Go to the Translate page", icon=":material/translate:")
    return None


def concept_page(title: str, intro: str, body: Callable[[Checkpoint, Translation], None]) -> None:
    """A concept page: its title and what it shows, then the model and the current sentence's translation (named in
    one line with a link to change it) handed to ``body``, which draws the rest; or, where either is missing, the
    reason why instead of the body."""
    st.title(title)
    st.markdown(intro)
    ckpt = require_checkpoint()
    translation = None if ckpt is None else require_translation()
    if ckpt is None or translation is None:
        return
    sentence_caption(translation)
    body(ckpt, translation)


def caption_text(translation: Translation, sizes: bool = True) -> str:
    """The line naming the sentence on screen (Markdown): source → translation, their sizes in pieces (unless not
    ``sizes``: a projected slide keeps its caption short), the model, and whether the model doubts its translation."""
    doubt = None if translation.forced else doubt_of(translation.result, translation.target_pieces)
    unsure = (f" · :orange[**The model is unsure of this translation** (its pieces average "
              f"{doubt.typical_prob:.0%}): a guess.]") if doubt is not None and doubt.doubtful else ""
    counted = f"{len(translation.source.ids)} source pieces, {len(translation.target_ids)} output pieces, " if sizes \
        else ""
    return (f"Current sentence: **{md(translation.source.text)}** → **{md(translation.text)}**  "
            f"({counted}model *{st.session_state['model_name']}*){unsure}")


def sentence_caption(translation: Translation, change: Callable[[], None] | None = None, sizes: bool = True) -> None:
    """One line naming the sentence on screen, with a link to change it (or, where given, ``change`` draws what
    changes it in that place: the lecture's sentence box); ``sizes``: with the sizes in pieces (caption_text)."""
    left, right = st.columns([7, 2], vertical_alignment="center")  # the link's label whole at 1280 px
    left.caption(caption_text(translation, sizes))
    with right:
        if change is not None:
            change()
        else:
            st.page_link(TRANSLATE_PAGE, label="Change sentence", icon=":material/translate:")
