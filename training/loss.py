"""The training objective (paper section 5.4): cross-entropy against label-smoothed targets, and the plain
per-token loss that validation reports."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from model.transformer import Transformer

from .data import Batch, Pair, iterate_batches, token_batches


def token_loss_sum(forward: nn.Module, batch: Batch, label_smoothing: float, bf16: bool, device: torch.device
                   ) -> torch.Tensor:
    """Label-smoothed cross-entropy summed over the batch's real target tokens (padding ignored). ``forward`` is
    the Transformer or its DistributedDataParallel wrapper; dividing by the tokens of the whole (global) batch
    gives the mean, whichever process holds which rows."""
    src, tgt_in, tgt_out = batch.src.to(device), batch.tgt_in.to(device), batch.tgt_out.to(device)
    with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
        logits = forward(src, tgt_in)  # [B, T, V]
    return F.cross_entropy(logits.float().flatten(0, 1), tgt_out.flatten(), ignore_index=batch.pad_id,
                           label_smoothing=label_smoothing, reduction="sum")


def loss_fn(model: Transformer, batch: Batch, label_smoothing: float, bf16: bool) -> torch.Tensor:
    """Mean label-smoothed cross-entropy per target token (padding ignored)."""
    device = model.embed.token.weight.device
    return token_loss_sum(model, batch, label_smoothing, bf16, device) / max(batch.n_tokens, 1)


@torch.no_grad()
def validation_loss(model: Transformer, pairs: list[Pair], max_tokens: int) -> float:
    """Per-token negative log-likelihood (no smoothing) on the validation split, in eval mode (no dropout); the
    model is left in the mode it came in (a loaded checkpoint stays in eval and decodes without dropout)."""
    was_training = model.training
    model.eval()
    total, tokens = 0.0, 0
    for _, batch in iterate_batches(pairs, token_batches(pairs, max_tokens), model.config.pad_id, model.config.bos_id):
        n = batch.n_tokens
        total += float(loss_fn(model, batch, 0.0, False)) * n
        tokens += n
    model.train(was_training)
    return total / max(tokens, 1)


