"""Translations of the current sentence, cached per (model, text, settings) and shared by every page.

The cache is a small LRU shared by all sessions (a Translation is frozen and never mutated), so a
sentence translated on the Translate page is instantly available on the Masks or Mechanics page,
and a class of students typing the lecturer's example hits the cache.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass

import streamlit as st

from app.resources import load_model
from model.config import DecodeConfig
from model.inference import Translation, translate

MAX_INPUT_CHARS = 8000  # the text box refuses more; the model reads at most MAX_POSITIONS pieces of it


@dataclass(frozen=True)
class Request:
    model_name: str
    text: str
    beam_size: int = 1
    max_len: int = 60
    length_penalty: float = 0.6

    @property
    def decode_config(self) -> DecodeConfig:
        return DecodeConfig(beam_size=self.beam_size, max_len=self.max_len, length_penalty=self.length_penalty)


class TranslationStore:
    """Thread-safe LRU of finished translations."""

    def __init__(self, capacity: int = 128) -> None:
        self._items: OrderedDict[Request, Translation] = OrderedDict()
        self._lock = threading.Lock()
        self.capacity = capacity

    def get(self, request: Request) -> Translation | None:
        with self._lock:
            item = self._items.get(request)
            if item is not None:
                self._items.move_to_end(request)
            return item

    def put(self, request: Request, translation: Translation) -> None:
        with self._lock:
            self._items[request] = translation
            self._items.move_to_end(request)
            while len(self._items) > self.capacity:
                self._items.popitem(last=False)


@st.cache_resource
def store() -> TranslationStore:
    return TranslationStore()


def current_request() -> Request:
    s = st.session_state
    return Request(model_name=s["model_name"], text=s["text"], beam_size=int(s["beam_size"]), max_len=int(s["max_len"]),
                   length_penalty=float(s["length_penalty"]))


def translate_request(request: Request) -> Translation:
    """The cached translation, computed (without streaming) if missing. Raises InputError for bad text."""
    cached = store().get(request)
    if cached is not None:
        return cached
    ckpt = load_model(request.model_name)
    result = translate(ckpt.model, ckpt.tokenizer, request.text, request.decode_config)
    store().put(request, result)
    return result
