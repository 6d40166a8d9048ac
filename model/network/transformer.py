"""Encoder, Decoder and the full Transformer (paper figure 1), with a KV-cached decoding step."""
from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Generic, Protocol, TypeVar, cast

import torch
import torch.nn.functional as F
from torch import nn

from model.network.attention import AttentionOutput, Capture, KeyValue, MultiHeadAttention
from model.network.config import ModelConfig
from model.network.layers import DecoderLayer, EncoderLayer, LayerOptions
from model.network.masks import decoder_self_mask, padding_mask
from model.network.positional import sinusoidal_encoding
from model.network.relative_position import RelativePositionBias
from model.network.trace import AttentionTrace, HeadMask

SIDES = ("encoder", "decoder")  # the stacks an embedding is read for (learned positions differ between them)


class Embeddings(nn.Module):
    """Token embedding x sqrt(d_model) + positional encoding (laid out as config.positional_layout), then dropout.

    One token matrix is shared by encoder and decoder, and is also the pre-softmax output layer (section 3.4), which
    is why the vocabulary is joint. The paper's sinusoids are one fixed table for both stacks; BART's family instead
    learns a table per stack (read from row position + position_offset), may leave the sqrt(d_model) scale out, and
    normalises each stack's sum with a LayerNorm of its own (config.scale_embedding, config.layernorm_embedding);
    M2M100 reads fairseq's sinusoids from row position + 2; T5 adds nothing here (its self-attentions add a relative
    bias to their scores instead, model.network.relative_position).
    """

    positional: torch.Tensor  # the sinusoid table, a buffer (registered only when absolute and not learned)

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.token = nn.Embedding(config.vocab_size, config.d_model, padding_idx=config.pad_id)
        nn.init.normal_(self.token.weight, std=config.d_model ** -0.5)
        with torch.no_grad():
            self.token.weight[config.pad_id].zero_()
        self.learned = nn.ModuleDict({side: nn.Embedding(config.position_table, config.d_model) for side in SIDES}) \
            if config.positional_layout == "learned" else None
        self.absolute = config.positional_layout != "relative"  # T5 adds no position code (its bias is relative)
        if self.learned is None and self.absolute:  # beyond max_len too: the sinusoids extend to any position
            self.register_buffer("positional", sinusoidal_encoding(config.position_table, config.d_model,
                                                                   config.positional_layout), persistent=False)
        self.norms = nn.ModuleDict({side: nn.LayerNorm(config.d_model) for side in SIDES}) \
            if config.layernorm_embedding else None
        self.offset, self.limit = config.position_offset, config.position_limit
        self.scale = math.sqrt(config.d_model) if config.scale_embedding else 1.0
        self.dropout = nn.Dropout(config.dropout)

    def positions(self, start: int, end: int, side: str = "encoder") -> torch.Tensor:
        """The position vectors of positions start..end-1 as ``side``'s stack reads them -> [end - start, D]."""
        if end > self.limit:
            raise ValueError(f"sequence of {end} tokens exceeds the limit of {self.limit} positions")
        if not self.absolute:
            return self.token.weight.new_zeros(end - start, self.token.embedding_dim)  # [L, D]: nothing is added
        if self.learned is None:
            return self.positional[start + self.offset:end + self.offset]  # [L, D]
        return cast(nn.Embedding, self.learned[side]).weight[start + self.offset:end + self.offset]  # [L, D]

    def forward(self, ids: torch.Tensor, offset: int = 0, side: str = "encoder") -> torch.Tensor:
        """ids [B, L] at positions offset..offset+L-1, for the ``side`` stack -> [B, L, D]."""
        return self.from_vectors(self.token(ids) * self.scale, offset, side)  # [B, L, D]

    def from_vectors(self, x: torch.Tensor, offset: int = 0, side: str = "encoder") -> torch.Tensor:
        """The rest of ``forward`` from token vectors x [B, L, D] (token embedding x scale): positions added, the
        stack's norm, dropout -> [B, L, D]. Attribution methods move x and keep the positions
        (explain.integrated_gradients)."""
        if self.absolute:
            x = x + self.positions(offset, offset + x.size(1), side)  # [B, L, D]
        if self.norms is not None:
            x = self.norms[side](x)  # [B, L, D]
        return self.dropout(x) if self.training else x


def layer_options(config: ModelConfig) -> LayerOptions:
    return LayerOptions(norm=config.norm, norm_eps=config.norm_eps, bias=config.linear_bias,
                        scale=config.attention_scale, gated=config.ffn_gated, d_k=config.head_dim)


def relative_bias(config: ModelConfig, attentions: list[MultiHeadAttention], bidirectional: bool
                  ) -> RelativePositionBias | None:
    """A stack's one RelativePositionBias (T5), handed to each of its self-attentions; None for other layouts."""
    if config.positional_layout != "relative":
        return None
    bias = RelativePositionBias(config.relative_buckets, config.relative_max_distance, config.n_heads, bidirectional)
    for attention in attentions:
        attention.use_relative_bias(bias)
    return bias


Layer_co = TypeVar("Layer_co", covariant=True)


class LayerList(Protocol[Layer_co]):
    """How the type checker reads a stack's ``layers``, an nn.ModuleList (whose items it knows only as Modules):
    iterated and indexed as the stack's own layer type."""

    def __iter__(self) -> Iterator[Layer_co]: ...
    def __getitem__(self, index: int) -> Layer_co: ...
    def __len__(self) -> int: ...


class Stack(nn.Module):
    """What an Encoder and a Decoder are built of alike: n_layers identical layers of one kind, the relative position
    bias their self-attentions share (T5; None otherwise) and, pre-norm, a final norm (else the identity)."""

    layers: LayerList[EncoderLayer | DecoderLayer]  # an nn.ModuleList

    def __init__(self, config: ModelConfig, layer_type: type[EncoderLayer | DecoderLayer], n_layers: int,
                 bidirectional: bool) -> None:
        super().__init__()
        options = layer_options(config)
        layers = [layer_type(config.d_model, config.n_heads, config.d_ff, config.dropout, config.norm_first,
                             config.activation, options) for _ in range(n_layers)]
        self.layers = cast(LayerList[EncoderLayer | DecoderLayer], nn.ModuleList(layers))
        self.relative_bias = relative_bias(config, [layer.self_attn for layer in layers], bidirectional)
        self.final_norm = options.make_norm(config.d_model) if config.norm_first else nn.Identity()


class Encoder(Stack):
    """N identical EncoderLayers."""

    layers: LayerList[EncoderLayer]

    def __init__(self, config: ModelConfig) -> None:
        super().__init__(config, EncoderLayer, config.n_encoder_layers, bidirectional=True)

    def forward(self, x: torch.Tensor, src_mask: torch.Tensor, capture: Capture = Capture.NONE,
                heads: torch.Tensor | None = None) -> tuple[torch.Tensor, list[AttentionOutput]]:
        """x [B, S, D], src_mask [B, 1, 1, S], heads [L, B or 1, H] (1 = on) -> (memory [B, S, D], one
        self-attention output per layer)."""
        attention = []
        for i, layer in enumerate(self.layers):
            x, attn = layer(x, src_mask, capture, None if heads is None else heads[i])
            attention.append(attn)
        return self.final_norm(x), attention


class Decoder(Stack):
    """N identical DecoderLayers."""

    layers: LayerList[DecoderLayer]

    def __init__(self, config: ModelConfig) -> None:
        super().__init__(config, DecoderLayer, config.n_decoder_layers, bidirectional=False)

    def forward(self, y: torch.Tensor, memory_kv: list[KeyValue], self_mask: torch.Tensor | None,
                cross_mask: torch.Tensor | None,
                past: list[KeyValue] | None = None, capture: Capture = Capture.NONE,
                heads: tuple[torch.Tensor, torch.Tensor] | None = None
                ) -> tuple[torch.Tensor, list[AttentionOutput], list[AttentionOutput]]:
        """y [B, T_new, D], heads = (self, cross) head masks [L, B or 1, H] -> (hidden [B, T_new, D],
        self-attention outputs, cross-attention outputs) per layer."""
        self_outs, cross_outs = [], []
        for i, layer in enumerate(self.layers):
            y, self_out, cross_out = layer(y, memory_kv[i], self_mask, cross_mask, None if past is None else past[i],
                                           capture, None if heads is None else (heads[0][i], heads[1][i]))
            self_outs.append(self_out)
            cross_outs.append(cross_out)
        return self.final_norm(y), self_outs, cross_outs


@dataclass
class DecoderState:
    """What incremental decoding carries between steps (one row per hypothesis).

    memory_kv: per decoder layer, the encoder keys/values for cross-attention [B, H, S, d_k], computed
    once; cross_mask [B, 1, 1, S] (None when nothing is padded); past: per layer, the decoder self-attention
    keys/values so far [B, H, t, d_k]; length = t, the number of target tokens already fed.
    """

    memory_kv: list[KeyValue]
    cross_mask: torch.Tensor | None
    past: list[KeyValue] | None = None
    length: int = 0
    heads: tuple[torch.Tensor, torch.Tensor] | None = None  # decoder (self, cross) head masks [L, 1, H]
    one_source: bool = False  # every row decodes the same source (one sentence's beams): memory rows are alike

    def reorder(self, index: torch.Tensor) -> DecoderState:
        """Keep rows ``index`` [B'] (beam search's back-pointers), in that order. One source's memory rows are
        alike, so they are kept without a gather (``keep_rows``)."""
        def pick(kv: KeyValue) -> KeyValue:
            return kv[0].index_select(0, index), kv[1].index_select(0, index)

        mask = None if self.cross_mask is None else keep_rows(self.cross_mask, index, self.one_source)
        past = None if self.past is None else [pick(kv) for kv in self.past]
        memory = [(keep_rows(k, index, self.one_source), keep_rows(v, index, self.one_source))
                  for k, v in self.memory_kv]
        return replace(self, memory_kv=memory, cross_mask=mask, past=past)


def keep_rows(rows: torch.Tensor, index: torch.Tensor, alike: bool) -> torch.Tensor:
    """Rows ``index`` [B'] of ``rows`` [B, ...]. When every row is ``alike`` (the encoder's keys and values of one
    source, repeated for each hypothesis) any B' rows are the same: the first B', a view without a copy (measured
    66 of a beam-4 step's 330 us of reordering), unless there are more than B (the first step's row becoming the
    beam), which gathers once."""
    if alike and index.numel() <= rows.size(0):
        return rows[:index.numel()]  # [B', ...]
    return rows.index_select(0, index)  # [B', ...]


def state_after(memory_kv: list[KeyValue], src_mask: torch.Tensor, head_mask: HeadMask | None) -> DecoderState:
    """The decoder's state once sources [B, S] are encoded: each decoder layer's cross-attention keys and values
    [B, H, S, d_k], their padding mask [B, 1, 1, S] (None when nothing is padded: every step then skips masking) and
    the decoder's head masks."""
    cross_mask = None if bool(src_mask.all()) else src_mask
    heads = None if head_mask is None else (head_mask.dec_self, head_mask.cross)
    return DecoderState(memory_kv=memory_kv, cross_mask=cross_mask, heads=heads, one_source=src_mask.size(0) == 1)


State = TypeVar("State")  # what a decoder carries between steps: DecoderState, or a static cache's state


@dataclass
class StepOutput(Generic[State]):
    """One decoding step: log-probabilities of the next token [B, V] and, if asked, that step's attention
    rows as an AttentionTrace without encoder part: per layer dec_self [B, H, 1, t+1] and cross [B, H, 1, S]."""

    log_probs: torch.Tensor
    state: State
    attention: AttentionTrace | None = None


class Transformer(nn.Module):
    """The encoder-decoder Transformer. ``forward`` is teacher-forced; ``start``/``step`` decode incrementally."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.config = config
        self.embed = Embeddings(config)
        self.encoder = Encoder(config)
        self.decoder = Decoder(config)
        # Marian's final_logits_bias: a bias on every vocabulary entry's logit, saved only when the config has one.
        self.final_logits_bias = nn.Parameter(torch.zeros(config.vocab_size)) if config.final_logits_bias else None
        # T5 v1.1's output layer of its own; a tied one (T5 v1) reads the hidden state x d_model^-0.5.
        self.output = None if config.tie_output else nn.Linear(config.d_model, config.vocab_size, bias=False)
        self.output_scale = config.d_model ** -0.5 if config.rescale_output else 1.0
        for name, p in self.named_parameters():
            if p.dim() > 1 and not name.startswith("embed."):
                nn.init.xavier_uniform_(p)

    def encode(self, src: torch.Tensor, capture: Capture = Capture.NONE, head_mask: HeadMask | None = None
               ) -> tuple[torch.Tensor, torch.Tensor, list[AttentionOutput]]:
        """src [B, S] -> (memory [B, S, D], src_mask [B, 1, 1, S], per-layer self-attention)."""
        src_mask = padding_mask(src, self.config.pad_id)  # [B, 1, 1, S]
        heads = None if head_mask is None else head_mask.enc_self
        memory, attention = self.encoder(self.embed(src), src_mask, capture, heads)
        return memory, src_mask, attention

    def memory_key_values(self, memory: torch.Tensor) -> list[KeyValue]:
        """Each decoder layer's cross-attention keys/values of the encoder output (computed once per sentence)."""
        return [layer.cross_attn.project_key_value(memory) for layer in self.decoder.layers]

    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """Pre-softmax output layer sharing the embedding matrix (+ final_logits_bias if any), or the model's own
        output matrix: [..., D] -> [..., V]."""
        weight = self.embed.token.weight if self.output is None else self.output.weight  # [V, D]
        if self.output_scale != 1.0:
            hidden = hidden * self.output_scale  # [..., D]
        return F.linear(hidden, weight, self.final_logits_bias)

    def target_mask(self, tgt: torch.Tensor) -> torch.Tensor:
        """Decoder self-attention mask of teacher-forced inputs tgt [B, T]: padding AND causal -> [B, 1, T, T].
        Position 0 is the start token, never padding, even when it is the pad id (Marian starts the decoder with it)."""
        return decoder_self_mask(tgt, self.config.pad_id)  # [B, 1, T, T]

    def forward(self, src: torch.Tensor, tgt: torch.Tensor, capture: Capture = Capture.NONE,
                head_mask: HeadMask | None = None) -> torch.Tensor | tuple[torch.Tensor, AttentionTrace]:
        """Teacher-forced pass. src [B, S], tgt [B, T] (decoder input, starting with bos_id) -> logits [B, T, V],
        plus an AttentionTrace when ``capture`` (WEIGHTS: weights and scores; Capture.INTERNALS: also Q, K, V,
        the unmasked scores and the context of every attention call). ``head_mask`` switches heads off."""
        hidden, trace = self.teacher_forced_hidden(src, tgt, capture, head_mask)  # [B, T, D]
        logits = self.logits(hidden)  # [B, T, V]
        return logits if trace is None else (logits, trace)  # a trace exactly when ``capture``

    def teacher_forced_hidden(self, src: torch.Tensor, tgt: torch.Tensor, capture: Capture = Capture.NONE,
                              head_mask: HeadMask | None = None) -> tuple[torch.Tensor, AttentionTrace | None]:
        """``forward`` up to the output layer: the decoder's last hidden states [B, T, D] and the trace (None
        without ``capture``). For callers that want the log-probs of a few tokens and can run the output
        layer, the largest matmul, in chunks that stay in cache (explain.heads.sequence_log_probs)."""
        memory, src_mask, enc_attn = self.encode(src, capture, head_mask)
        tgt_mask = self.target_mask(tgt)  # [B, 1, T, T]
        heads = None if head_mask is None else (head_mask.dec_self, head_mask.cross)
        hidden, self_attn, cross_attn = self.decoder(
            self.embed(tgt, side="decoder"), self.memory_key_values(memory), tgt_mask, src_mask, None,
            capture, heads)
        if not capture:
            return hidden, None
        return hidden, AttentionTrace.from_outputs(enc_attn, self_attn, cross_attn, src_mask, tgt_mask)

    def start(self, src: torch.Tensor, capture: Capture = Capture.NONE, head_mask: HeadMask | None = None
              ) -> tuple[DecoderState, list[AttentionOutput]]:
        """Encode once for incremental decoding: src [B, S] -> (state, encoder self-attention per layer).
        A ``head_mask`` holds for the encoder here and for the decoder in every step."""
        memory, src_mask, enc_attn = self.encode(src, capture, head_mask)
        return state_after(self.memory_key_values(memory), src_mask, head_mask), enc_attn

    def first_step_rows(self, beam_size: int) -> int:
        """How many copies of its one row a beam search of ``beam_size`` takes its first step on
        (model.decoding.search.start_search): the one row here. A compiled decoder may take the beam's width."""
        return 1

    def step(self, state: DecoderState, tokens: torch.Tensor, capture: Capture = Capture.NONE
             ) -> StepOutput[DecoderState]:
        """Feed the newest token of every row, tokens [B, 1], reusing cached keys/values.

        No self-attention mask is needed for a single new query: it may attend to every cached position.
        """
        hidden, self_attn, cross_attn = self.decoder(
            self.embed(tokens, offset=state.length, side="decoder"), state.memory_kv, None, state.cross_mask,
            state.past, capture, state.heads)  # hidden [B, 1, D]
        log_probs = self.logits(hidden[:, -1]).float().log_softmax(dim=-1)  # [B, V]
        new_state = replace(state, past=[a.key_value for a in self_attn], length=state.length + 1)
        if not capture:
            return StepOutput(log_probs, new_state)
        return StepOutput(log_probs, new_state, AttentionTrace.from_outputs([], self_attn, cross_attn))


def shifted_right(output_ids: Sequence[int], start_id: int) -> list[int]:
    """What the decoder reads while it writes ``output_ids``: the start token, then the output without its last
    piece (the paper's "output embeddings, shifted right"), so position t predicts output piece t."""
    return [start_id, *list(output_ids)[:-1]]


def count_parameters(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


__all__ = ["SIDES", "Decoder", "DecoderState", "Embeddings", "Encoder", "StepOutput", "Transformer", "count_parameters",
           "keep_rows"]
