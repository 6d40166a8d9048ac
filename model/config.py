"""Frozen, validated configuration dataclasses, stored beside every checkpoint."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, fields
from typing import Any


@dataclass(frozen=True)
class ModelConfig:
    """Shape of an encoder-decoder Transformer (the paper's base model is d_model 512, 8 heads, 6+6, d_ff 2048).

    The vocabulary is joint (source and target share one embedding matrix), so a single
    ``vocab_size`` and one set of special ids describe both sides.
    """

    vocab_size: int
    d_model: int = 256
    n_heads: int = 8
    n_encoder_layers: int = 3
    n_decoder_layers: int = 3
    d_ff: int = 1024
    dropout: float = 0.1
    max_len: int = 256
    pad_id: int = 0
    unk_id: int = 1
    bos_id: int = 2
    eos_id: int = 3
    norm_first: bool = False  # False = the paper's post-norm LayerNorm(x + Dropout(Sublayer(x)))

    def __post_init__(self) -> None:
        for name in ("vocab_size", "d_model", "n_heads", "n_encoder_layers", "n_decoder_layers", "d_ff", "max_len"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"ModelConfig.{name} must be a positive integer, got {value!r}")
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model ({self.d_model}) must be divisible by n_heads ({self.n_heads})")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")
        specials = {"pad_id": self.pad_id, "unk_id": self.unk_id, "bos_id": self.bos_id, "eos_id": self.eos_id}
        for name, value in specials.items():
            if not isinstance(value, int) or not 0 <= value < self.vocab_size:
                raise ValueError(f"{name} must be an id in [0, {self.vocab_size}), got {value!r}")
        if len(set(specials.values())) != len(specials):
            raise ValueError(f"special ids must be distinct, got {specials}")

    @property
    def d_k(self) -> int:
        """Width of one head's queries and keys (d_v is the same)."""
        return self.d_model // self.n_heads

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "ModelConfig":
        """Rebuild from JSON, naming unknown or missing keys instead of failing with a TypeError."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown ModelConfig keys: {', '.join(unknown)}")
        if "vocab_size" not in data:
            raise ValueError("ModelConfig needs vocab_size")
        return cls(**data)


@dataclass(frozen=True)
class DecodeConfig:
    """How to search for a translation.

    ``max_len`` counts generated tokens, EOS included. ``length_penalty`` is GNMT's alpha
    (0 = rank hypotheses by raw log-probability). ``top_k`` is how many next-token
    probabilities each step reports for display; it does not change the search.
    """

    beam_size: int = 1
    max_len: int = 64
    length_penalty: float = 0.6
    top_k: int = 10

    def __post_init__(self) -> None:
        if not isinstance(self.beam_size, int) or self.beam_size < 1:
            raise ValueError(f"beam_size must be a positive integer, got {self.beam_size!r}")
        if not isinstance(self.max_len, int) or self.max_len < 1:
            raise ValueError(f"max_len must be a positive integer, got {self.max_len!r}")
        if self.length_penalty < 0:
            raise ValueError(f"length_penalty must be >= 0, got {self.length_penalty}")
        if not isinstance(self.top_k, int) or self.top_k < 1:
            raise ValueError(f"top_k must be a positive integer, got {self.top_k!r}")
