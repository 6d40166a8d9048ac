"""The training objective (paper section 5.4): cross-entropy against label-smoothed targets, and the plain
per-token loss that validation reports."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from model.network.attention import Capture
from model.network.transformer import Transformer

from .alignment import CopyAlignment
from .data import Batch, Pair, iterate_batches, token_batches


def loss_sums(forward: nn.Module, batch: Batch, label_smoothing: float, bf16: bool, device: torch.device,
              align: CopyAlignment | None = None) -> tuple[torch.Tensor, torch.Tensor | None]:
    """(label-smoothed cross-entropy summed over the batch's real target tokens (padding ignored), the weighted
    guided-alignment loss summed over its copied pieces, or None without ``align``). ``forward`` is the
    Transformer or its DistributedDataParallel wrapper; dividing by the tokens of the whole (global) batch
    gives the mean, whichever process holds which rows."""
    src, tgt_in, tgt_out = batch.src.to(device), batch.tgt_in.to(device), batch.tgt_out.to(device)
    with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
        if align is None:
            logits, trace = forward(src, tgt_in), None  # [B, T, V]
        else:
            logits, trace = forward(src, tgt_in, capture=Capture.WEIGHTS)  # [B, T, V], every layer's weights
    cross_entropy = F.cross_entropy(logits.float().flatten(0, 1), tgt_out.flatten(), ignore_index=batch.pad_id,
                                    label_smoothing=label_smoothing, reduction="sum")
    if align is None or trace is None:  # a trace exactly when aligning
        return cross_entropy, None
    return cross_entropy, align.loss_sum(trace.cross[align.layer], src, tgt_out)


def loss_fn(model: Transformer, batch: Batch, label_smoothing: float, bf16: bool) -> torch.Tensor:
    """Mean label-smoothed cross-entropy per target token (padding ignored)."""
    device = model.embed.token.weight.device
    return loss_sums(model, batch, label_smoothing, bf16, device)[0] / max(batch.n_tokens, 1)


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


