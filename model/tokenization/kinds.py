"""A checkpoint's tokenizer: one of the four kinds, which ModelConfig.tokenizer names.
"""
from __future__ import annotations

from model.tokenization.huggingface import HFTokenizer
from model.tokenization.joint import Tokenizer
from model.tokenization.m2m100 import M2M100Tokenizer
from model.tokenization.marian import MarianTokenizer

TextTokenizer = Tokenizer | MarianTokenizer | HFTokenizer | M2M100Tokenizer
