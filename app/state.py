"""Session-state keys, their defaults (set once per session), and the URL query parameters that mirror them,
so that a link restores the view it was copied from: page, model, sentence, decoding settings, attention kind,
layer, head, view, step, word level, presenter mode and lecture slide.

``URL_PARAMS`` is the table: per query parameter, the session key it sets, how its text is parsed and checked
(a ValueError names the problem), how a value is written, and on which pages it belongs in the link. A link
is read once, on a session's first run; an unknown or invalid parameter is dropped with a notice, never an
exception. After that the URL follows the state (``sync_url``), writing only values that differ from the
defaults (and the kind, layer and head once chosen: ``PINNING``), all at once: each change of view is one entry
of the browser's history. Back and Forward bring a URL the app did not write; the next run takes the view from it
(``follow_history``), presenter mode excepted.
"""
from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode, urlparse

import streamlit as st

from app.checks.escape import md
from app.checks.paragraphs import MAX_SENTENCES
from app.lecture.prepared import MAX_PREPARED_CHARS
from app.lecture.slides import SLIDES
from app.models.registry import MODELS, converted_models, default_length_penalty, load_model
from app.models.uploads import UPLOAD_PREFIX
from app.serving.scheduler import MAX_INPUT_CHARS
from model.network.positional import MAX_POSITIONS
from model.network.trace import KINDS

log = logging.getLogger("attention_explorer")

VIEWS = ("Heatmap", "Head view", "Model view")  # the explorer's views, named in links by their slug
MAX_BEAM = 8
MAX_SEED = 999_999

DEFAULTS: dict[str, Any] = {
    "model_name": "en-de",
    "text": "My brother has bought a new house in the city.",  # en-de gets it right, verb last (app.models.examples)
    "sentence": 0,  # which sentence of a pasted paragraph is translated and shown (app.checks.paragraphs), from 0
    "beam_size": 1,
    "max_len": 60,
    "length_penalty": default_length_penalty("en-de"),  # the α chosen for the default model on its validation split
    "keep_names": False,  # beam search that keeps the source's names and numbers (model.decoding.constrained_beam)
    "sample": False,  # sampling instead of greedy / beam search, and its settings (model.network.config.Sampling)
    "temperature": 1.0,
    "sample_top_k": 0,
    "top_p": 1.0,
    "seed": 0,
    "kind": "cross",
    "layer": 0,
    "head": -1,  # -1 = mean over heads (a view choice; the model keeps every head)
    # whether the visitor (or a link) chose the kind, layer and head: until then each translation opens on its most
    # focused cross-attention head (app.opening), and the link names none of the three
    "head_pinned": False,
    "word_level": False,
    "translate_view": VIEWS[0],
    "step": 1,  # decoding step on the Decoding page, from 1
    "slide": 1,  # lecture slide, from 1
    "presenter": False,
    "prepared": "",  # the lecturer's prepared sentences, one per line (app.lecture.prepared), switched with a key
    "image_format": "png",
    "target_lang": None,  # a multilingual model's target language code (mBART-50, M2M100, NLLB); None: one language
}


@dataclass(frozen=True)
class LinkLimits:
    """What a link's values are checked against: the models on offer and the size of the link's model."""

    models: tuple[str, ...]
    layers: Mapping[str, int] | None  # layers per attention kind (None: the model could not be read)
    n_heads: int | None
    languages: tuple[str, ...] = ()  # the target-language codes a multilingual model forces first


Parser = Callable[[str, LinkLimits, dict], Any]  # (text, limits, values parsed so far) -> value


@dataclass(frozen=True)
class UrlParam:
    key: str  # the session-state key it sets
    parse: Parser  # raises ValueError with a short reason
    show: Callable[[Any], str]
    pages: tuple[str, ...] | None = None  # url paths of the pages whose links carry it (None: every page)


def _integer(text: str, low: int, high: int, what: str) -> int:
    try:
        value = int(text.strip())
    except ValueError:
        raise ValueError(f"not a whole number ({what} {low}–{high})") from None
    if not low <= value <= high:
        raise ValueError(f"out of range ({what} {low}–{high})")
    return value


def _flag(text: str, *_: object) -> bool:
    value = text.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    raise ValueError("not 1 or 0")


def _model(text: str, limits: LinkLimits, _: object) -> str:
    if text not in limits.models:
        raise ValueError(f"no such model here (choose {', '.join(limits.models)})")
    return text


def _text(text: str, *_: object) -> str:
    if len(text) > MAX_INPUT_CHARS:
        raise ValueError(f"longer than {MAX_INPUT_CHARS} characters")
    return text


def _number(text: str, low: float, high: float, step: float) -> float:
    """A finite number in [low, high], rounded to its slider's step."""
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"not a number ({low:g}–{high:g})") from None
    if not math.isfinite(value) or not low <= value <= high:
        raise ValueError(f"out of range ({low:g}–{high:g})")
    return round(round(value / step) * step, 6)


def _penalty(text: str, *_: object) -> float:
    return _number(text, 0.0, 2.0, 0.1)


def _kind(text: str, *_: object) -> str:
    if text not in KINDS:
        raise ValueError(f"not one of {', '.join(KINDS)}")
    return text


def _layer(text: str, limits: LinkLimits, parsed: dict) -> int:
    kind = parsed.get("kind", DEFAULTS["kind"])
    high = limits.layers[kind] if limits.layers else 64
    return _integer(text, 1, high, "layers") - 1


def _head(text: str, limits: LinkLimits, _: object) -> int:
    if text.strip().lower() == "mean":
        return -1
    return _integer(text, 1, limits.n_heads or 64, "heads, or mean") - 1


def _target_language(text: str, limits: LinkLimits, _: object) -> str:
    if not limits.languages:
        raise ValueError("this model translates into one language")
    if text not in limits.languages:
        raise ValueError(f"not one of this model's {len(limits.languages)} language codes")
    return text


def _view(text: str, *_: object) -> str:
    for view in VIEWS:
        if text.strip().lower() == view_slug(view):
            return view
    raise ValueError(f"not one of {', '.join(view_slug(v) for v in VIEWS)}")


def _prepared(text: str, *_: object) -> str:
    if len(text) > MAX_PREPARED_CHARS:
        raise ValueError(f"longer than {MAX_PREPARED_CHARS} characters")
    return text


def view_slug(view: str) -> str:
    return view.lower().replace(" ", "-")


URL_PARAMS: dict[str, UrlParam] = {  # parsed in this order: the model first, the kind before its layer
    "model": UrlParam(key="model_name", parse=_model, show=str),
    "text": UrlParam(key="text", parse=_text, show=str),
    "sentence": UrlParam(key="sentence", parse=lambda t, *_: _integer(t, 1, MAX_SENTENCES, "sentences") - 1,
                         show=lambda v: str(v + 1)),
    "beam": UrlParam(key="beam_size", parse=lambda t, *_: _integer(t, 1, MAX_BEAM, "beam"), show=str),
    "max_len": UrlParam(key="max_len", parse=lambda t, *_: _integer(t, 1, MAX_POSITIONS - 1, "pieces"), show=str),
    "penalty": UrlParam(key="length_penalty", parse=_penalty, show=lambda v: f"{v:g}"),
    "keep": UrlParam(key="keep_names", parse=_flag, show=lambda v: "1" if v else "0"),
    "sample": UrlParam(key="sample", parse=_flag, show=lambda v: "1" if v else "0"),
    "temperature": UrlParam(key="temperature", parse=lambda t, *_: _number(t, 0.0, 2.0, 0.1), show=lambda v: f"{v:g}"),
    "topk": UrlParam(key="sample_top_k", parse=lambda t, *_: _integer(t, 0, 100, "pieces, 0 = all"), show=str),
    "topp": UrlParam(key="top_p", parse=lambda t, *_: _number(t, 0.05, 1.0, 0.05), show=lambda v: f"{v:g}"),
    "seed": UrlParam(key="seed", parse=lambda t, *_: _integer(t, 0, MAX_SEED, "seed"), show=str),
    "kind": UrlParam(key="kind", parse=_kind, show=str, pages=("",)),
    "layer": UrlParam(key="layer", parse=_layer, show=lambda v: str(v + 1), pages=("", "decoding")),
    "head": UrlParam(key="head", parse=_head, show=lambda v: "mean" if v < 0 else str(v + 1), pages=("", "decoding")),
    "view": UrlParam(key="translate_view", parse=_view, show=view_slug, pages=("",)),
    "words": UrlParam(key="word_level", parse=_flag, show=lambda v: "1" if v else "0", pages=("",)),
    "step": UrlParam(key="step", parse=lambda t, *_: _integer(t, 1, MAX_POSITIONS, "steps"), show=str,
                     pages=("decoding",)),
    "slide": UrlParam(key="slide", parse=lambda t, *_: _integer(t, 1, len(SLIDES), "slides"), show=str,
                      pages=("lecture",)),
    "presenter": UrlParam(key="presenter", parse=_flag, show=lambda v: "1" if v else "0"),
    "prepared": UrlParam(key="prepared", parse=_prepared, show=str, pages=("lecture",)),
    "to": UrlParam(key="target_lang", parse=_target_language, show=str),
}
ALWAYS_WRITTEN = ("slide",)  # a lecture's URL is never bare, so that Back to slide 1 is a URL to follow
# The parameters of a chosen head: a link that names one pins the view, and a pinned view's link names all three
# that belong to its page, defaults included; an unpinned one names none (its sentence opens on its most focused
# head, app.opening).
PINNING = ("kind", "layer", "head")
PINNED = "head_pinned"  # the session key of that choice (DEFAULTS)
OPENED = "_opened_view"  # (kind, layer, head) as app.opening last opened them, None once pinned
ALIASES = {"model_name": "model"}  # links made before the table existed


def parse_link(params: Mapping[str, str], limits_of: Callable[[str], LinkLimits]
               ) -> tuple[dict[str, Any], list[str]]:
    """The session values a link's query parameters set, and one note per parameter it ignores.

    ``limits_of(model)`` gives what the values are checked against for the link's model. Never raises."""
    given = {ALIASES.get(name, name): value for name, value in params.items()}
    notes = [f"{_short(name)}: unknown" for name in given if name not in URL_PARAMS]
    values: dict[str, Any] = {}
    parsed: dict[str, Any] = {}
    limits = None
    for name, param in URL_PARAMS.items():
        if limits is None and name != "model":
            limits = limits_of(str(parsed.get("model", DEFAULTS["model_name"])))
        if name not in given:
            continue
        text = given[name]
        try:
            value = param.parse(str(text), limits or limits_of(""), parsed)
        except (ValueError, TypeError) as exc:
            notes.append(f"{name}={_short(text)}: {exc}")
            continue
        parsed[name] = value
        values[param.key] = value
    if any(name in parsed for name in PINNING):
        values[PINNED] = True
    return values, notes


def _short(text: object) -> str:
    text = str(text)
    return text if len(text) <= 24 else text[:23] + "…"


def model_limits(model_name: str) -> LinkLimits:
    """LinkLimits of a model under pretrained/ ("": none chosen yet; sizes unknown if it cannot be loaded).
    Uploaded checkpoints belong to one session, so no link can name them."""
    models = tuple(MODELS) + tuple(converted_models())
    if model_name not in models:
        return LinkLimits(models=models, layers=None, n_heads=None)
    try:
        ckpt = load_model(model_name)
    except Exception:  # a broken model is reported by the pages; the link check just skips the sizes
        log.exception("reading model %r for a link failed", model_name)
        return LinkLimits(models=models, layers=None, n_heads=None)
    cfg = ckpt.config
    layers = {"enc_self": cfg.n_encoder_layers, "dec_self": cfg.n_decoder_layers, "cross": cfg.n_decoder_layers}
    return LinkLimits(models=models, layers=layers, n_heads=cfg.n_heads, languages=ckpt.tokenizer.target_languages)


def init_state() -> None:
    """Called at the top of every run, before any widget. Sets missing keys to their defaults, and on a session's
    first run applies the link's parameters; re-assigns the others: Streamlit deletes a widget's state when a
    page without that widget runs, and re-assigning makes the value outlive the page switch."""
    first = not st.session_state.get("_initialised")
    for key, value in DEFAULTS.items():
        if key == "length_penalty" and key not in st.session_state:  # the α chosen for the session's model
            value = default_length_penalty(st.session_state.get("model_name", DEFAULTS["model_name"]))
        st.session_state[key] = st.session_state.get(key, value)
    st.session_state["_initialised"] = True
    if first and len(st.query_params):
        _apply_link()
    elif not first:
        follow_history()


KEPT_ON_HISTORY = ("presenter",)  # Back and Forward never switch presenter mode off (or on)


def follow_history() -> None:
    """When the browser's Back or Forward brought a URL the app did not write, show the view it names: each of this
    page's parameters as the URL has it, or its default where the URL leaves it out. A URL without a query keeps
    the view as it is: the page menu opens a page without one (and a lecture's URL always names its slide)."""
    written, page = st.session_state.get("_url_written"), st.session_state.get("_page", "")
    now = {name: st.query_params[name] for name in st.query_params if name in URL_PARAMS}
    if written is None or not now or now == written:
        return
    values, notes = parse_link(now, model_limits)
    if notes:
        log.info("history entry parameters ignored: %r", notes)
    model = values.get("model_name", DEFAULTS["model_name"])
    for param in URL_PARAMS.values():
        if param.key in KEPT_ON_HISTORY or (param.pages is not None and page not in param.pages):
            continue
        if param.key == "model_name" and param.key not in values:  # an uploaded model has no link: keep it
            continue
        default = default_length_penalty(str(model)) if param.key == "length_penalty" else DEFAULTS[param.key]
        st.session_state[param.key] = values.get(param.key, default)
    if any(URL_PARAMS[name].pages is None or page in (URL_PARAMS[name].pages or ()) for name in PINNING):
        st.session_state[PINNED], st.session_state[OPENED] = bool(values.get(PINNED)), None
    st.session_state["_url_written"] = now


def _apply_link() -> None:
    params = {name: st.query_params[name] for name in st.query_params}
    values, notes = parse_link(params, model_limits)
    if "model_name" in values and "length_penalty" not in values:  # a linked model gets its own α, as if chosen
        values["length_penalty"] = default_length_penalty(values["model_name"])
    st.session_state.update(values)
    st.session_state["_from_link"] = bool(values)  # the Translate page decodes a linked view at once
    if notes:
        log.info("link parameters ignored: %r", notes)
        st.session_state["_link_notes"] = notes  # shown by link_notice until the visitor dismisses it
    for name in params:
        if name not in URL_PARAMS:  # unknown, or an old alias: sync_url writes the known ones back
            del st.query_params[name]


def link_notice() -> None:
    """The parameters a link could not use, in a notice at the top of the page that stays (across pages) until
    dismissed. Names and values come from whoever wrote the link: escaped, never rendered as Markdown."""
    notes = st.session_state.get("_link_notes")
    if not notes:
        return
    box = st.container(border=True)
    text, close = box.columns([12, 1], vertical_alignment="center")
    text.markdown(":material/link_off: **Ignored in this link:** " + "; ".join(md(note) for note in notes))
    if close.button("Dismiss", key="dismiss_link_notes", help="Hide this notice"):
        del st.session_state["_link_notes"]
        st.rerun()


def link_params(page: str | None = None) -> dict[str, str]:
    """The query parameters of the current view on ``page`` (a url path; default: the page now running):
    every value that differs from its default, and the kind, layer and head once pinned (PINNING)."""
    page = st.session_state.get("_page", "") if page is None else page
    pinned = bool(st.session_state.get(PINNED))
    result = {}
    for name, param in URL_PARAMS.items():
        if param.pages is not None and page not in param.pages:
            continue
        if name in PINNING:
            if pinned:
                result[name] = param.show(st.session_state.get(param.key, DEFAULTS[param.key]))
            continue
        default = DEFAULTS[param.key]
        if param.key == "length_penalty":  # each model's own α is its default (and what a link without one gets)
            default = default_length_penalty(str(st.session_state.get("model_name", DEFAULTS["model_name"])))
        value = st.session_state.get(param.key, default)
        if name == "model" and str(value).startswith(UPLOAD_PREFIX):
            continue  # an uploaded checkpoint belongs to its session: no link can open it
        if value != default or name in ALWAYS_WRITTEN:
            result[name] = param.show(value)
    return result


def sync_url() -> None:
    """Write the current view into the URL, in one message when it changed (the browser makes it one history entry,
    which Back returns to); safe inside a fragment."""
    wanted = link_params()
    now = {name: st.query_params[name] for name in st.query_params if name in URL_PARAMS}
    if now != wanted:
        st.query_params.from_dict(wanted)
    st.session_state["_url_written"] = wanted


def share_link() -> str:
    """The app's own address of the current view (st.context.url carries the scheme, host and page path)."""
    base = st.context.url or ""
    if base and not urlparse(base).path:
        base += "/"
    query = urlencode(link_params())
    return f"{base}?{query}" if query else base
