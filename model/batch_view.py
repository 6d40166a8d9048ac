"""Several sentences padded into one batch and run teacher-forced, so the UI can show the masks at work.

A single sentence never needs padding; the masks only matter once sentences of different lengths
share a batch. This module builds that batch exactly as training does (pad id on the right) and
returns the AttentionTrace of one forward pass, plus the separate mask pieces that make it up.
"""
from __future__ import annotations

import torch

from .config import DecodeConfig
from .inference import prepare_source, translate
from .masks import causal_mask, padding_mask
from .tokenizer import Tokenizer
from .trace import AttentionTrace
from .transformer import Transformer


def _pad(rows: list[list[int]], pad_id: int, device: torch.device) -> torch.Tensor:
    """Right-pad id lists to one length. -> [B, L]."""
    width = max(len(r) for r in rows)
    return torch.tensor([r + [pad_id] * (width - len(r)) for r in rows], device=device)  # [B, L]


@torch.inference_mode()
def padded_batch_trace(model: Transformer, tokenizer: Tokenizer, texts: list[str],
                       targets: list[list[int]] | None = None
                       ) -> tuple[torch.Tensor, torch.Tensor, AttentionTrace]:
    """Pad ``texts`` into one batch and run the teacher-forced forward with every attention map.

    ``targets`` are output token ids per sentence (ending with EOS, as a decoder produces them);
    by default each sentence's greedy translation. The decoder reads BOS + target[:-1], like
    ``inference.teacher_forced_trace``. Returns (src_ids [B, S], tgt_in [B, T], trace) where
    padded positions hold ``pad_id``. Raises ``inference.InputError`` for an empty text.
    """
    if not texts:
        raise ValueError("need at least one sentence")
    if targets is not None and len(targets) != len(texts):
        raise ValueError(f"{len(texts)} texts but {len(targets)} targets")
    cfg = model.config
    sources = [list(prepare_source(tokenizer, t, cfg.max_len).ids) for t in texts]
    if targets is None:
        targets = [list(translate(model, tokenizer, t, DecodeConfig(beam_size=1)).target_ids) for t in texts]
    decoder_inputs = [([cfg.bos_id] + list(t)[:-1])[:cfg.max_len] for t in targets]
    device = next(model.parameters()).device
    src = _pad(sources, cfg.pad_id, device)  # [B, S]
    tgt_in = _pad(decoder_inputs, cfg.pad_id, device)  # [B, T]
    _, trace = model(src, tgt_in, return_attention=True)
    return src, tgt_in, trace


def mask_parts(src: torch.Tensor, tgt_in: torch.Tensor, pad_id: int) -> dict[str, torch.Tensor]:
    """The pieces every attention mask is made of, each expanded to a [B, Q, K] bool grid (True = may attend).

    "source padding" [B, S, S] (encoder self-attention), "target padding" [B, T, T], "causal"
    [B, T, T], "target padding & causal" [B, T, T] (decoder self-attention), "cross" [B, T, S]
    (source padding seen from each decoder position).
    """
    b, s, t = src.size(0), src.size(1), tgt_in.size(1)
    src_pad = padding_mask(src, pad_id)[:, 0]  # [B, 1, S]
    tgt_pad = padding_mask(tgt_in, pad_id)[:, 0]  # [B, 1, T]
    causal = causal_mask(t, tgt_in.device)[0]  # [1, T, T]
    return {
        "source padding": src_pad.expand(b, s, s),
        "target padding": tgt_pad.expand(b, t, t),
        "causal": causal.expand(b, t, t),
        "target padding & causal": tgt_pad & causal,
        "cross": src_pad.expand(b, t, s),
    }
