"""Heads: read-outs of attention maps for the Translate page (per-head statistics, word-level merging) and
what a head is worth, measured by switching it off (head importance, Michel et al., 2019).

The statistics summarise the weights the model returned; the importance runs the model's own forward pass
with a head mask; neither changes a weight.
"""
from __future__ import annotations

from collections.abc import Sequence

import torch

from model.masks import padding_mask
from model.tokenizer import SPECIAL_PIECES
from model.trace import KINDS, Head, HeadMask
from model.transformer import Transformer


def _diagonal_keys(q_len: int, k_len: int) -> torch.Tensor:
    """The key each query would hit on the (proportional) diagonal: q for self-attention, q*(K-1)/(Q-1) else."""
    if q_len == k_len or q_len == 1:
        return torch.arange(q_len).clamp(max=k_len - 1)
    return torch.round(torch.arange(q_len) * (k_len - 1) / (q_len - 1)).long()


def row_entropy(w: torch.Tensor) -> torch.Tensor:
    """Entropy in nats of each attention row [..., K] -> [...]; masked (exactly 0) weights add nothing."""
    return -(w * torch.where(w > 0, w.log(), torch.zeros_like(w))).sum(-1)


def head_statistics(weights: torch.Tensor, special_keys: torch.Tensor, valid_queries: torch.Tensor
                    ) -> dict[str, torch.Tensor]:
    """Summaries of every head, each [L, H], averaged over the valid query rows.

    weights [L, H, Q, K]; special_keys bool [K] (BOS/EOS/PAD); valid_queries bool [Q].
    entropy: nats (0 = all on one key, log K = uniform); mean_distance: expected |q - k|;
    diagonality: weight on the (proportional) diagonal; max_weight: the row's largest weight;
    special_share: weight on special tokens (a head "parking" on EOS is doing little).
    """
    w = weights.double()  # [L, H, Q, K]
    q_len, k_len = w.shape[-2:]
    rows = valid_queries.to(w.device)
    entropy = row_entropy(w)  # [L, H, Q]
    distance = (torch.arange(q_len)[:, None] - torch.arange(k_len)[None]).abs().to(w)  # [Q, K]
    diagonal = w.gather(-1, _diagonal_keys(q_len, k_len).view(1, 1, q_len, 1).expand(*w.shape[:2], q_len, 1))[..., 0]
    per_row = {
        "entropy": entropy,
        "mean_distance": (w * distance).sum(-1),
        "diagonality": diagonal,
        "max_weight": w.max(-1).values,
        "special_share": w[..., special_keys.to(w.device)].sum(-1),
    }
    return {name: value[..., rows].mean(-1).float() for name, value in per_row.items()}


def piece_head_statistics(weights: torch.Tensor, key_pieces: Sequence[str]) -> dict[str, torch.Tensor]:
    """head_statistics of one sentence's map [L, H, Q, K] at piece level, every query row counted and the
    special pieces (<s>, </s>, <pad>, <unk>) among ``key_pieces`` counted as special."""
    special = torch.tensor([p in SPECIAL_PIECES.values() for p in key_pieces])  # [K]
    valid = torch.ones(weights.size(-2), dtype=torch.bool)  # [Q]
    return head_statistics(weights.float().cpu(), special, valid)


def merge_to_words(weights: torch.Tensor, query_groups: list[list[int]], key_groups: list[list[int]]) -> torch.Tensor:
    """Piece-level attention [..., Q, K] -> word-level [..., Qw, Kw]: sum over a word's key pieces (the
    attention it receives), mean over its query pieces (rows stay distributions summing to 1)."""
    weights = weights.float().cpu()
    q_len, k_len = weights.shape[-2:]
    key_merge = torch.zeros(k_len, len(key_groups), dtype=weights.dtype)  # [K, Kw]
    for j, group in enumerate(key_groups):
        key_merge[group, j] = 1.0
    query_merge = torch.zeros(len(query_groups), q_len, dtype=weights.dtype)  # [Qw, Q]
    for i, group in enumerate(query_groups):
        query_merge[i, group] = 1.0 / len(group)
    return query_merge @ weights @ key_merge  # [..., Qw, Kw]




def all_heads(layers: dict[str, int], n_heads: int) -> list[Head]:
    """Every (kind, layer, head) of a model, in kind, layer, head order."""
    return [(kind, layer, head) for kind in KINDS for layer in range(layers[kind]) for head in range(n_heads)]


def n_layers_of(model: Transformer) -> dict[str, int]:
    cfg = model.config
    return {"enc_self": cfg.n_encoder_layers, "dec_self": cfg.n_decoder_layers, "cross": cfg.n_decoder_layers}


LOGIT_CHUNK = 2**20  # logits per output-layer chunk (4 MB): all 73 rows of a 500-piece output at once would be
# 1.2 GB; chunks of this size run as fast as one call here (46 ms for 73 x 20 positions, 8k vocabulary)
ACTIVATION_BUDGET = 2**24  # rows x T x d_ff floats of one forward chunk (64 MB of feed-forward activations)


def piece_log_probs(model: Transformer, hidden: torch.Tensor, target: torch.Tensor,
                    logit_chunk: int = LOGIT_CHUNK) -> torch.Tensor:
    """log P(target) of each position from decoder states hidden [N, D] and target ids [N] -> [N], through the
    output layer in chunks of ``logit_chunk`` logits (row by row what log_softmax of all the logits gives)."""
    rows = max(1, logit_chunk // model.config.vocab_size)
    parts = [model.logits(hidden[i:i + rows]).float().log_softmax(dim=-1).gather(-1, target[i:i + rows, None])[:, 0]
             for i in range(0, hidden.size(0), rows)]
    return torch.cat(parts)  # [N]


@torch.no_grad()
def sequence_log_probs(model: Transformer, source_ids: Sequence[int], output_ids: Sequence[int],
                       head_mask: HeadMask | None = None, activation_budget: int = ACTIVATION_BUDGET,
                       logit_chunk: int = LOGIT_CHUNK) -> torch.Tensor:
    """log P(output | source) under teacher forcing, one value per row of ``head_mask`` (1 without one): [B].

    output_ids end with EOS as decoded; the decoder reads BOS + output[:-1]. Rows run in chunks that keep the
    feed-forward activations under ``activation_budget`` floats (a long sentence times 73 head settings would
    not fit), the output layer in chunks of ``logit_chunk`` logits.
    """
    device = model.embed.token.weight.device
    rows = 1 if head_mask is None else head_mask.enc_self.size(1)
    src = torch.tensor([list(source_ids)], device=device)  # [1, S]
    tgt_in = torch.tensor([[model.config.bos_id, *output_ids[:-1]]], device=device)  # [1, T]
    target = torch.tensor(list(output_ids), device=device)  # [T]
    chunk = max(1, activation_budget // (max(len(source_ids), len(output_ids)) * model.config.d_ff))
    totals = []
    for start in range(0, rows, chunk):
        size = min(chunk, rows - start)
        part = None if head_mask is None else HeadMask(
            **{kind: getattr(head_mask, kind)[:, start:start + size].to(device) for kind in KINDS})
        hidden, _ = model.teacher_forced_hidden(src.expand(size, -1), tgt_in.expand(size, -1), head_mask=part)
        log_probs = piece_log_probs(model, hidden.flatten(0, 1), target.repeat(size), logit_chunk)  # [b * T]
        totals.append(log_probs.view(size, -1).sum(-1))
    return torch.cat(totals)  # [B]


@torch.no_grad()
def teacher_forced(model: Transformer, source_ids: Sequence[int], output_ids: Sequence[int],
                   head_mask: HeadMask | None = None) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """One forward of ``output_ids`` (ending with EOS, as decoded) after ``source_ids``, a row per row of
    ``head_mask`` (1 without one): the log-prob of each output piece [B, T] and, per kind, the weights
    [L, B, H, Q, K] (float32, on the CPU). The decoder reads BOS + output[:-1]."""
    device = model.embed.token.weight.device
    rows = 1 if head_mask is None else head_mask.enc_self.size(1)
    src = torch.tensor([list(source_ids)], device=device).expand(rows, -1)  # [B, S]
    tgt = torch.tensor([[model.config.bos_id, *output_ids[:-1]]], device=device).expand(rows, -1)  # [B, T]
    target = torch.tensor(list(output_ids), device=device).expand(rows, -1)  # [B, T]
    mask = None if head_mask is None else head_mask.to(device)
    logits, trace = model(src, tgt, return_attention=True, head_mask=mask)  # [B, T, V]
    pieces = logits.float().log_softmax(dim=-1).gather(-1, target[..., None])[..., 0]  # [B, T]
    return pieces.cpu(), {kind: trace.weights(kind).float().cpu() for kind in KINDS}


def _unmasked_pass(model: Transformer, src: torch.Tensor, tgt: torch.Tensor
                   ) -> tuple[list[torch.Tensor], list[torch.Tensor], torch.Tensor, torch.Tensor]:
    """The teacher-forced pass with every head on, keeping what the rows of head importance start from: each
    encoder layer's input [1, S, D], each decoder layer's input [1, T, D], the memory [1, S, D] and the final
    decoder states [1, T, D] (forward hooks: the pass is the model's own ``teacher_forced_hidden``)."""
    enc_inputs: list[torch.Tensor] = []
    dec_inputs: list[torch.Tensor] = []
    memory: list[torch.Tensor] = []
    handles = [layer.register_forward_pre_hook(lambda _m, args, kept=kept: kept.append(args[0]))
               for stack, kept in ((model.encoder, enc_inputs), (model.decoder, dec_inputs)) for layer in stack.layers]
    handles.append(model.encoder.register_forward_hook(lambda _m, _args, out: memory.append(out[0])))
    try:
        hidden, _ = model.teacher_forced_hidden(src, tgt)
    finally:
        for handle in handles:
            handle.remove()
    return enc_inputs, dec_inputs, memory[0], hidden


def _joining(n_rows: int, n_heads: int, offset: int, rows: range) -> torch.Tensor:
    """Head mask [n_rows, H] of one layer: every head on, except that row offset + r has head rows[r] off."""
    mask = torch.ones(n_rows, n_heads)  # [R, H]
    mask[offset:offset + len(rows)] -= torch.eye(n_heads)[rows.start:rows.stop]
    return mask


@torch.no_grad()
def head_importance(model: Transformer, source_ids: Sequence[int], output_ids: Sequence[int],
                    activation_budget: int = ACTIVATION_BUDGET, logit_chunk: int = LOGIT_CHUNK
                    ) -> dict[str, torch.Tensor]:
    """For every head, how much the log-probability of the model's own output drops when only that head is
    switched off (Michel et al., 2019), per kind [L, H] in nats (positive = the head matters for this output).

    Exact, and cheaper than one full teacher-forced row per head: switching a head off in layer l changes nothing
    below l, so its row joins the batch at layer l from the unmasked pass's input to that layer (a staircase:
    layer l runs the rows of the heads in layers <= l). enc_self rows then run the whole decoder on their own
    memory; dec_self and cross rows join the decoder at their layer and share the unmasked memory's keys and
    values. Heads run in groups that keep the feed-forward activations under ``activation_budget`` floats, the
    output layer in chunks of ``logit_chunk`` logits.
    """
    device = model.embed.token.weight.device
    layers, n_heads = n_layers_of(model), model.config.n_heads
    src = torch.tensor([list(source_ids)], device=device)  # [1, S]
    tgt = torch.tensor([[model.config.bos_id, *output_ids[:-1]]], device=device)  # [1, T]
    target = torch.tensor(list(output_ids), device=device)  # [T]
    enc_inputs, dec_inputs, memory, hidden = _unmasked_pass(model, src, tgt)
    src_mask = padding_mask(src, model.config.pad_id)  # [1, 1, 1, S]
    tgt_mask = model.target_mask(tgt)  # [1, 1, T, T]
    memory_kv = model.memory_key_values(memory)  # per decoder layer ([1, H, S, d_k], [1, H, S, d_k])
    base = piece_log_probs(model, hidden[0], target, logit_chunk).sum()
    rows_per_head = sum(layers.values())  # a group of h heads ends with h x rows_per_head rows
    longest = max(len(source_ids), len(output_ids))
    group = max(1, min(n_heads, activation_budget // (rows_per_head * longest * model.config.d_ff)))
    result = {kind: torch.zeros(layers[kind], n_heads) for kind in KINDS}
    for start in range(0, n_heads, group):
        heads = range(start, min(start + group, n_heads))
        labels: list[tuple[str, int]] = []  # (kind, layer) of each block of len(heads) rows, in batch order
        x = enc_inputs[0][:0]  # [0, S, D]
        for layer, encoder_layer in enumerate(model.encoder.layers):
            x = torch.cat([x, enc_inputs[layer].expand(len(heads), -1, -1)])  # [R, S, D]
            off = _joining(x.size(0), n_heads, len(labels) * len(heads), heads).to(device)  # [R, H]
            x, _ = encoder_layer(x, src_mask, False, off)
            labels.append(("enc_self", layer))
        rows_memory = model.encoder.final_norm(x)  # [R_enc, S, D]
        y = dec_inputs[0].expand(rows_memory.size(0), -1, -1)  # [R_enc, T, D]: the decoder's input is the embedding
        for layer, decoder_layer in enumerate(model.decoder.layers):
            y = torch.cat([y, dec_inputs[layer].expand(2 * len(heads), -1, -1)])  # [R, T, D]
            own_k, own_v = decoder_layer.cross_attn.project_key_value(rows_memory)  # [R_enc, H, S, d_k] each
            shared = y.size(0) - own_k.size(0)  # rows that read the unmasked memory
            kv = (torch.cat([own_k, memory_kv[layer][0].expand(shared, -1, -1, -1)]),
                  torch.cat([own_v, memory_kv[layer][1].expand(shared, -1, -1, -1)]))  # [R, H, S, d_k] each
            joined = len(labels) * len(heads)
            masks = (_joining(y.size(0), n_heads, joined, heads),
                     _joining(y.size(0), n_heads, joined + len(heads), heads))
            y, _, _ = decoder_layer(y, kv, tgt_mask, src_mask, None, False, tuple(m.to(device) for m in masks))
            labels += [("dec_self", layer), ("cross", layer)]
        states = model.decoder.final_norm(y)  # [R, T, D]
        log_probs = piece_log_probs(model, states.flatten(0, 1), target.repeat(states.size(0)), logit_chunk)
        drops = (base - log_probs.view(states.size(0), -1).sum(-1)).cpu().view(len(labels), len(heads))
        for (kind, layer), drop in zip(labels, drops, strict=True):
            result[kind][layer, start:heads.stop] = drop
    return result
