"""Diagnostics of how a model fails, beyond its loss: how spread out its attention is, how much it relies on
its source, and how well it fits its training data (training logs them every epoch, evaluation reports them)."""
from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import torch

from explain.heads import row_entropy
from model.network.attention import Capture
from model.network.transformer import Transformer
from model.tokenization.kinds import TextTokenizer

from .data import encode_pairs, iterate_batches, token_batches
from .loss import validation_loss


def _entropy_fraction(weights: torch.Tensor, key_valid: torch.Tensor, query_valid: torch.Tensor
                      ) -> tuple[float, int]:
    """Sum and count of row entropies as fractions of log(number of keys), over valid query rows of
    sentences with at least two keys. weights [B, H, Q, K]; key_valid [B, K], query_valid [B, Q] bool."""
    w = weights.double()
    entropy = row_entropy(w)  # [B, H, Q]
    n_keys = key_valid.sum(-1).double()  # [B]
    fraction = entropy / n_keys.clamp_min(2).log()[:, None, None]  # [B, H, Q]
    rows = (query_valid & (n_keys > 1)[:, None])[:, None, :].expand_as(fraction)  # [B, H, Q]
    return float(fraction[rows].sum()), int(rows.sum())


@torch.no_grad()
def attention_entropy(model: Transformer, pairs: Sequence[tuple[list[int], list[int]]], max_tokens: int = 4096
                      ) -> dict[str, list[float]]:
    """Per layer, the mean entropy of encoder self-attention and cross-attention rows as a fraction of the
    uniform row's (1 = spread evenly over every key, 0 = all weight on one key), teacher-forced on pairs.

    Why: the loss alone hides *how* a model fails. Cross-attention near 1 in every layer means the decoder
    reads only the average of the source (a language model that barely translates); encoder
    self-attention near 0 means every head copies one fixed token, so the encoder's positions look alike.
    """
    was_training = model.training
    model.eval()
    device = model.embed.token.weight.device
    sums: dict[str, list[list[float]]] = {}
    for _, batch in iterate_batches(pairs, token_batches(pairs, max_tokens), model.config.pad_id, model.config.bos_id):
        src, tgt_in = batch.src.to(device), batch.tgt_in.to(device)
        _, trace = model(src, tgt_in, capture=Capture.WEIGHTS)
        src_valid, tgt_valid = src != model.config.pad_id, batch.tgt_out.to(device) != model.config.pad_id
        for kind, layers, queries in (("encoder_self", trace.enc_self, src_valid), ("cross", trace.cross, tgt_valid)):
            acc = sums.setdefault(kind, [[0.0, 0] for _ in layers])
            for i, weights in enumerate(layers):
                total, count = _entropy_fraction(weights, src_valid, queries)
                acc[i][0] += total
                acc[i][1] += count
    model.train(was_training)
    return {kind: [round(total / max(count, 1), 3) for total, count in layers] for kind, layers in sums.items()}


def source_reliance(model: Transformer, tokenizer: TextTokenizer, frame: pd.DataFrame, train: pd.DataFrame,
                    max_tokens: int = 4096) -> dict:
    """How much the model's predictions depend on its source, and how well it fits its training data.

    Per-token loss (nats, no label smoothing) of the references given their own sources, given another
    sentence's source (rotated by one row, so usually one of the same kind), and on an equally large
    sample of the training split. A translating model loses much more without its own source; a train
    loss close to the held-out loss means under-fitting (more training helps, more dropout would not).
    attention_entropy says how the source is read.
    """

    limit = model.config.max_len - 1
    pairs = encode_pairs(tokenizer, frame["en"].tolist(), frame["de"].tolist(), limit)
    other_source = [(pairs[i - 1][0], target) for i, (_, target) in enumerate(pairs)]
    sample = train.sample(n=min(len(frame), len(train)), random_state=0)
    train_pairs = encode_pairs(tokenizer, sample["en"].tolist(), sample["de"].tolist(), limit)
    return {"nll": round(validation_loss(model, pairs, max_tokens), 4),
            "nll_other_source": round(validation_loss(model, other_source, max_tokens), 4),
            "nll_train_sample": round(validation_loss(model, train_pairs, max_tokens), 4),
            "attention_entropy": attention_entropy(model, pairs, max_tokens),
            "n": len(pairs)}


