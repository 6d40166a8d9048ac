"""The Masks page: several sentences padded into one batch and run teacher-forced, so the masks can be seen
at work.

A single sentence never needs padding; the masks only matter once sentences of different lengths
share a batch. This module builds that batch exactly as training does (pad id on the right) and
returns the AttentionTrace of one forward pass, plus the separate mask pieces that make it up.
"""
from __future__ import annotations

import torch

from model.network.attention import Capture
from model.network.config import DecodeConfig
from model.network.masks import causal_mask, padding_mask, target_padding_mask
from model.network.positional import MAX_POSITIONS
from model.network.trace import AttentionTrace
from model.network.transformer import Transformer, shifted_right
from model.serving.inference import pad_batch, prepare_source, translate
from model.tokenization.kinds import TextTokenizer


@torch.inference_mode()
def padded_batch_trace(model: Transformer, tokenizer: TextTokenizer, texts: list[str],
                       targets: list[list[int]] | None = None
                       ) -> tuple[torch.Tensor, torch.Tensor, AttentionTrace]:
    """Pad ``texts`` into one batch and run the teacher-forced forward with every attention map.

    ``targets`` are output token ids per sentence (ending with EOS, as a decoder produces them);
    by default each sentence's greedy translation. The decoder reads BOS + target[:-1], like
    the decoder did while translating. Returns (src_ids [B, S], tgt_in [B, T], trace) where
    padded positions hold ``pad_id``. Raises ``inference.InputError`` for an empty text.
    """
    if not texts:
        raise ValueError("need at least one sentence")
    if targets is not None and len(targets) != len(texts):
        raise ValueError(f"{len(texts)} texts but {len(targets)} targets")
    cfg = model.config
    sources = [list(prepare_source(tokenizer, t).ids) for t in texts]
    if targets is None:
        targets = [list(translate(model, tokenizer, t, DecodeConfig(beam_size=1)).target_ids) for t in texts]
    decoder_inputs = [shifted_right(t, cfg.bos_id)[:MAX_POSITIONS] for t in targets]
    device = next(model.parameters()).device
    src = pad_batch(sources, cfg.pad_id, device)  # [B, S]
    tgt_in = pad_batch(decoder_inputs, cfg.pad_id, device)  # [B, T]
    _, trace = model(src, tgt_in, capture=Capture.WEIGHTS)
    return src, tgt_in, trace


def mask_parts(src: torch.Tensor, tgt_in: torch.Tensor, pad_id: int) -> dict[str, torch.Tensor]:
    """The pieces every attention mask is made of, each expanded to a [B, Q, K] bool grid (True = may attend),
    built with the model's own mask functions, so they combine to the masks the forward pass used.

    "source padding" [B, S, S] (encoder self-attention), "target padding" [B, T, T] (the start token at position 0
    is never padding, though Marian's is the pad id), "causal" [B, T, T], "target padding & causal" [B, T, T]
    (decoder self-attention), "cross" [B, T, S] (source padding seen from each decoder position).
    """
    b, s, t = src.size(0), src.size(1), tgt_in.size(1)
    src_pad = padding_mask(src, pad_id)[:, 0]  # [B, 1, S]
    tgt_pad = target_padding_mask(tgt_in, pad_id)[:, 0]  # [B, 1, T]
    causal = causal_mask(t, tgt_in.device)[0]  # [1, T, T]
    return {
        "source padding": src_pad.expand(b, s, s),
        "target padding": tgt_pad.expand(b, t, t),
        "causal": causal.expand(b, t, t),
        "target padding & causal": tgt_pad & causal,
        "cross": src_pad.expand(b, t, s),
    }


@torch.no_grad()
def unmasked_scores(model: Transformer, src: torch.Tensor, tgt: torch.Tensor, kind: str, layer: int
                    ) -> torch.Tensor:
    """QK^T / sqrt(d_k) of one attention sub-layer of a (padded) batch *before* the mask overwrites the
    forbidden cells, as the forward pass computed them: src [B, S], tgt [B, T] -> [B, H, Q, K]. Where the
    mask allows, these equal the trace's scores; elsewhere they are what the model computed and then threw
    away."""
    _, trace = model(src, tgt, capture=Capture.INTERNALS)
    return trace.internals[kind][layer].unmasked  # [B, H, Q, K]
