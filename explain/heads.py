"""Heads: read-outs of attention maps for the Translate page (per-head statistics, word-level merging) and
what a head is worth, measured by switching it off (head importance, Michel et al., 2019).

The statistics summarise the weights the model returned; the importance runs the model's own forward pass
with a head mask; neither changes a weight.
"""
from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import torch
from torch import nn

from model.network.attention import Capture, MultiHeadAttention
from model.network.masks import padding_mask
from model.network.trace import KINDS, Head, HeadMask, PerKind, layer_counts
from model.network.transformer import Transformer, shifted_right
from model.serving.inference import StopSignal, check_stop
from model.tokenization.pieces import SPECIAL_PIECES


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


@dataclass(frozen=True)
class FocusedHead:
    """One head of an attention kind (0-based) and its focus: the weight its average counted query row puts on
    that row's single heaviest counted key (1 = every row all on one key)."""

    layer: int
    head: int
    focus: float


def most_focused_head(weights: torch.Tensor, query_pieces: Sequence[str], key_pieces: Sequence[str]) -> FocusedHead:
    """The head of one sentence's map [L, H, Q, K] whose rows each put the most weight on one key: the largest mean
    over rows of a row's top weight (the measure the head view's "most focused heads" use). Special pieces count on
    neither side: the row that writes </s> ends the sentence instead of translating a piece, and a head that parks
    its weight on </s> idles rather than aligns. Ties go to the lower layer, then the lower head."""
    special = set(SPECIAL_PIECES.values())
    rows = [i for i, piece in enumerate(query_pieces) if piece not in special] or list(range(len(query_pieces)))
    keys = [j for j, piece in enumerate(key_pieces) if piece not in special] or list(range(len(key_pieces)))
    w = weights.double().cpu()[:, :, rows][..., keys]  # [L, H, Q', K']
    focus = w.max(dim=-1).values.mean(dim=-1)  # [L, H]
    best = int(torch.argmax(focus.flatten()))  # the first maximum: the lowest layer, then the lowest head
    layer, head = divmod(best, focus.size(1))
    return FocusedHead(layer=layer, head=head, focus=float(focus[layer, head]))


def all_heads(layers: Mapping[str, int], n_heads: int) -> list[Head]:
    """Every (kind, layer, head) of a model, in kind, layer, head order."""
    return [(kind, layer, head) for kind in KINDS for layer in range(layers[kind]) for head in range(n_heads)]


def n_layers_of(model: Transformer) -> PerKind[int]:
    return layer_counts(model.config)


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
    tgt_in = torch.tensor([shifted_right(output_ids, model.config.bos_id)], device=device)  # [1, T]
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
                   head_mask: HeadMask | None = None) -> tuple[torch.Tensor, PerKind[torch.Tensor]]:
    """One forward of ``output_ids`` (ending with EOS, as decoded) after ``source_ids``, a row per row of
    ``head_mask`` (1 without one): the log-prob of each output piece [B, T] and, per kind, the weights
    [L, B, H, Q, K] (float32, on the CPU). The decoder reads BOS + output[:-1]."""
    device = model.embed.token.weight.device
    rows = 1 if head_mask is None else head_mask.enc_self.size(1)
    src = torch.tensor([list(source_ids)], device=device).expand(rows, -1)  # [B, S]
    tgt = torch.tensor([shifted_right(output_ids, model.config.bos_id)], device=device).expand(rows, -1)  # [B, T]
    target = torch.tensor(list(output_ids), device=device).expand(rows, -1)  # [B, T]
    mask = None if head_mask is None else head_mask.to(device)
    logits, trace = model(src, tgt, capture=Capture.WEIGHTS, head_mask=mask)  # [B, T, V]
    pieces = logits.float().log_softmax(dim=-1).gather(-1, target[..., None])[..., 0]  # [B, T]
    return pieces.cpu(), PerKind.build(lambda kind: trace.weights(kind).float().cpu())


@dataclass
class _Unmasked:
    """What the rows of head importance start from, taken from the teacher-forced pass with every head on (the model's
    own ``teacher_forced_hidden`` at the "internals" capture level, read from the trace it returns).

    Per attention module (each layer's self_attn / cross_attn): the input of its residual sublayer [1, L, D], its
    output before the residual [1, L, D], its per-head context before W^O [1, H, L, d_k] and the keys and values
    it read (for cross-attention, the memory's: [1, H, S, d_k] each). Also the final decoder states [1, T, D].
    """
    sublayer_input: dict[nn.Module, torch.Tensor]
    output: dict[nn.Module, torch.Tensor]
    context: dict[nn.Module, torch.Tensor]
    key_value: dict[nn.Module, tuple[torch.Tensor, torch.Tensor]]
    hidden: torch.Tensor

    def without(self, attention: MultiHeadAttention, heads: range) -> torch.Tensor:
        """The attention output with each of ``heads`` switched off alone [len(heads), L, D]: a head mask zeroes
        head h's context before W^O, which takes away exactly context_h W^O_h^T (the bias stays)."""
        d_model, n_heads = attention.w_o.weight.shape[0], attention.n_heads
        w_o = attention.w_o.weight.view(d_model, n_heads, -1)[:, heads.start:heads.stop]  # [D, h, d_k]
        context = self.context[attention][0, heads.start:heads.stop]  # [h, L, d_k]
        return self.output[attention] - torch.einsum("hld,mhd->hlm", context, w_o)  # [h, L, D]


def _unmasked_pass(model: Transformer, src: torch.Tensor, tgt: torch.Tensor) -> _Unmasked:
    """Run the unmasked teacher-forced pass once and keep what every row of the table joins from."""
    hidden, trace = model.teacher_forced_hidden(src, tgt, Capture.INTERNALS)
    assert trace is not None and trace.internals is not None  # the "internals" capture level keeps them
    kept = _Unmasked({}, {}, {}, {}, hidden)
    modules = {"enc_self": [layer.self_attn for layer in model.encoder.layers],
               "dec_self": [layer.self_attn for layer in model.decoder.layers],
               "cross": [layer.cross_attn for layer in model.decoder.layers]}
    for kind, attentions in modules.items():
        for attention, it in zip(attentions, trace.internals[kind], strict=True):
            assert it.residual_input is not None  # every Transformer layer sets it (layers.with_residual)
            kept.sublayer_input[attention] = it.residual_input  # [1, L, D]
            kept.output[attention], kept.context[attention] = it.output, it.context
            kept.key_value[attention] = it.k, it.v  # [1, H, K, d_k] each: a cross-attention's are the memory's
    return kept


def usable_cores() -> int:
    """CPU cores this process may run on (the affinity mask, not the machine's count)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


@torch.no_grad()
def head_importance(model: Transformer, source_ids: Sequence[int], output_ids: Sequence[int],
                    activation_budget: int = ACTIVATION_BUDGET, logit_chunk: int = LOGIT_CHUNK,
                    workers: int | None = None, should_stop: StopSignal | None = None) -> PerKind[torch.Tensor]:
    """For every head, how much the log-probability of the model's own output drops when only that head is
    switched off (Michel et al., 2019), per kind [L, H] in nats (positive = the head matters for this output).

    Exact, and far cheaper than one full teacher-forced row per head: switching a head off in layer l changes
    nothing before that layer's attention, so its row joins the batch there, from the unmasked pass (a
    staircase): its attention output is the unmasked one minus that head's share (``_Unmasked.without``), and only
    the sublayers after it run. Every row then has all heads on in the layers it runs. enc_self rows run the whole
    decoder on their own memory (whose decoder self-attention in layer 1 is still the unmasked one); dec_self and
    cross rows share the unmasked memory's keys and values. Heads run in groups that keep the feed-forward
    activations under ``activation_budget`` floats, on ``workers`` threads (default: the usable cores; torch
    releases the GIL inside its kernels), the output layer in chunks of ``logit_chunk`` logits. ``should_stop`` is
    asked before each group (model.serving.inference.check_stop: Cancelled when the caller left).
    """
    device = model.embed.token.weight.device
    layers, n_heads = n_layers_of(model), model.config.n_heads
    src = torch.tensor([list(source_ids)], device=device)  # [1, S]
    tgt = torch.tensor([shifted_right(output_ids, model.config.bos_id)], device=device)  # [1, T]
    target = torch.tensor(list(output_ids), device=device)  # [T]
    unmasked = _unmasked_pass(model, src, tgt)
    masks = padding_mask(src, model.config.pad_id), model.target_mask(tgt)  # [1, 1, 1, S], [1, 1, T, T]
    base = piece_log_probs(model, unmasked.hidden[0], target, logit_chunk).sum()
    rows_per_head = sum(layers.values())  # a group of h heads ends with h x rows_per_head rows
    longest = max(len(source_ids), len(output_ids))
    size = max(1, min(n_heads, activation_budget // (rows_per_head * longest * model.config.d_ff)))
    workers = usable_cores() if workers is None else workers
    # Workers split the rows by kind, each batch keeping all heads (the matmuls stay large). Measured on en-de
    # (1 thread): enc_self rows, which run the whole decoder, 51 ms; dec_self 28; cross 30. On two workers the
    # encoder's rows run beside the decoder's two kinds, one after the other.
    parts = [KINDS] if workers < 2 else [(kind,) for kind in KINDS]
    groups = [(range(start, min(start + size, n_heads)), kinds) for kinds in parts for start in range(0, n_heads, size)]

    def drops(group: tuple[range, tuple[str, ...]]) -> tuple[range, list[tuple[str, int]], torch.Tensor]:
        heads, kinds = group
        check_stop(should_stop)
        with torch.no_grad():  # grad mode is per thread
            labels, states = _staircase(model, unmasked, masks, heads, kinds)
            log_probs = piece_log_probs(model, states.flatten(0, 1), target.repeat(states.size(0)), logit_chunk)
        return heads, labels, (base - log_probs.view(states.size(0), -1).sum(-1)).cpu().view(len(labels), len(heads))

    if workers > 1 and len(groups) > 1:
        with ThreadPoolExecutor(max_workers=min(workers, len(groups))) as pool:
            done = list(pool.map(drops, groups))
    else:
        done = [drops(group) for group in groups]
    result = PerKind.build(lambda kind: torch.zeros(layers[kind], n_heads))  # filled in place
    for heads, labels, table in done:
        for (kind, layer), drop in zip(labels, table, strict=True):
            result[kind][layer, heads.start:heads.stop] = drop
    return result


def _staircase(model: Transformer, unmasked: _Unmasked, masks: tuple[torch.Tensor, torch.Tensor], heads: range,
               kinds: Sequence[str]) -> tuple[list[tuple[str, int]], torch.Tensor]:
    """The final decoder states [R, T, D] of one row per head of ``heads`` switched off alone, for every layer of
    ``kinds``, with the (kind, layer) of each block of len(heads) rows in batch order. In each layer the rows so
    far run it whole and the rows that switch a head off there join (the layers' ``forward_joined``), from the
    unmasked pass."""
    src_mask, tgt_mask = masks
    g = len(heads)
    labels: list[tuple[str, int]] = []
    x = None  # [R, S, D]: the rows so far, every head on from here
    for layer, enc in enumerate(model.encoder.layers if "enc_self" in kinds else []):
        join = (unmasked.sublayer_input[enc.self_attn].expand(g, -1, -1), unmasked.without(enc.self_attn, heads))
        x = enc.forward_joined(x, src_mask, join)  # [R + g, S, D]
        labels.append(("enc_self", layer))
    own_kv = None if x is None else model.memory_key_values(model.encoder.final_norm(x))  # per layer [R_enc, H, S, d_k]
    y, self_done = None, False  # [R, T, D], the enc_self rows first
    if x is not None:  # enc_self rows read the unmasked decoder input, so layer 1's self-attention is the
        y, self_done = unmasked.sublayer_input[model.decoder.layers[0].cross_attn].expand(len(x), -1, -1), True
    for layer, dec in enumerate(model.decoder.layers):  # unmasked one: they join at its cross-attention
        self_join = cross_join = None
        if "dec_self" in kinds:
            self_join = (unmasked.sublayer_input[dec.self_attn].expand(g, -1, -1),
                         unmasked.without(dec.self_attn, heads))
            labels.append(("dec_self", layer))
        if "cross" in kinds:
            cross_join = (unmasked.sublayer_input[dec.cross_attn].expand(g, -1, -1),
                          unmasked.without(dec.cross_attn, heads))
            labels.append(("cross", layer))
        k, v = unmasked.key_value[dec.cross_attn]  # [1, H, S, d_k]: the unmasked memory's
        rows = (0 if y is None else y.size(0)) + (g if self_join else 0)  # the rows that reach cross-attention
        own = 0 if own_kv is None else own_kv[layer][0].size(0)
        k, v = k.expand(rows - own, -1, -1, -1), v.expand(rows - own, -1, -1, -1)
        if own_kv is not None and own:  # the enc_self rows read their own memory
            k, v = torch.cat([own_kv[layer][0], k]), torch.cat([own_kv[layer][1], v])
        y = dec.forward_joined(y, (k, v), tgt_mask, src_mask, self_done=self_done, self_join=self_join,
                               cross_join=cross_join)
        self_done = False
    return labels, model.decoder.final_norm(y)