"""Watch attention learn: one sentence read by several checkpoints of the same model (snapshots from earlier in
its training, or any checkpoint with the same tokenizer and shape).

Every checkpoint reads the SAME source and the SAME output (the reference model's translation) under teacher
forcing, so their maps line up cell by cell and a difference is the weights' doing, not a different output.
Early in training the cross-attention is flat (every source piece alike: high row entropy); as the model
learns to translate it turns into an alignment. Each checkpoint's own translation is decoded beside it.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from explain.heads import row_entropy, teacher_forced
from model.checkpoints.files import Checkpoint
from model.network.trace import PerKind
from model.network.transformer import Transformer


@dataclass(frozen=True)
class Reading:
    """How one checkpoint reads a fixed (source, output) pair under teacher forcing.

    maps: per kind [L, H, Q, K] (float32, CPU); piece_log_probs [T], log P of each output piece given the
    pieces before it; spread: per kind [L, H], the mean entropy of a head's rows in nats (log K is uniform,
    0 all weight on one key): how flat the head still is.
    """

    maps: PerKind[torch.Tensor]
    piece_log_probs: torch.Tensor
    spread: PerKind[torch.Tensor]

    @property
    def log_prob(self) -> float:
        """log P(output | source), nats."""
        return float(self.piece_log_probs.sum())


def read_output(model: Transformer, source_ids: Sequence[int], output_ids: Sequence[int]) -> Reading:
    """``model``'s teacher-forced reading of ``output_ids`` (ending with EOS) after ``source_ids``."""
    pieces, weights = teacher_forced(model, source_ids, output_ids)  # [1, T]; per kind [L, 1, H, Q, K]
    maps = weights.map(lambda w: w[:, 0])  # per kind [L, H, Q, K]
    spread = maps.map(lambda m: row_entropy(m.double()).mean(dim=-1).float())  # per kind [L, H]
    return Reading(maps=maps, piece_log_probs=pieces[0], spread=spread)


def incompatibility(reference: Checkpoint, other: Checkpoint) -> str | None:
    """Why ``other``'s maps cannot be set beside ``reference``'s on one sentence, or None when they can: the
    same tokenizer files (the same pieces, so the same rows and columns) and the same layers and heads."""
    if other.tokenizer.files() != reference.tokenizer.files():
        return "its tokenizer is not this model's (the pieces, so the rows and columns, would differ)"
    shape = ("n_encoder_layers", "n_decoder_layers", "n_heads")
    if any(getattr(other.config, name) != getattr(reference.config, name) for name in shape):
        ours, theirs = (f"{c.n_encoder_layers}+{c.n_decoder_layers} layers × {c.n_heads} heads"
                        for c in (reference.config, other.config))
        return f"it has {theirs}, this model {ours}"
    return None
