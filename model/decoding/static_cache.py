"""A decoding step with a static KV cache, so that it can be compiled once and run without per-operator cost.

``Transformer.step`` grows each layer's keys and values by one row a step (``torch.cat``) and reads its position
as a Python int: every step has new shapes and constants, so nothing can be compiled, and each of its ~640 ATen
calls a token pays Python and dispatch (benchmarks/profile_step.py: about a quarter of the step). Here the cache
is preallocated (per layer [B, H, capacity, d_k], doubled when full), the new token's position is a tensor, and
the new keys and values are written in place at that index, as Hugging Face's StaticCache does for
``torch.compile``. The keys not yet written are masked (weight exactly 0) and cut off the weights handed back, so a
step's AttentionTrace is the eager step's, row for row (tested to 1e-5 with hypothesis).

``StaticCacheDecoder(model)`` has the ``config`` / ``start`` / ``step`` of a Transformer, so every decoder of
model.decoding.search runs on it unchanged. Its step runs eagerly unless a compiled step was added for the call's
signature (``add_package``: model.serving.step_package compiles it ahead of time with AOTInductor, weights frozen, for
one row count and every source length and cache size); every other call runs the same step eagerly. Its start
encodes on a compiled ``StaticStart`` the same way when one was added (``add_start_package``), else with the model's
own ``start``. The eager Transformer.step stays the reference and the fallback (T5's relative positions are not
supported here).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import cast

import torch
from torch import nn

from model.network.attention import AttentionOutput, Capture, KeyValue, MultiHeadAttention
from model.network.config import ModelConfig
from model.network.layers import DecoderLayer
from model.network.masks import padding_mask
from model.network.trace import HeadMask, StepTrace
from model.network.transformer import DecoderState, StepOutput, Transformer, keep_rows, state_after

FIRST_CAPACITY = 64  # cache rows allocated at the start; doubled whenever a decode runs past them


def unsupported(config: ModelConfig) -> str | None:
    """Why this config's step cannot run here (None if it can): T5's relative bias is computed per query and key
    count, which the static step does not model."""
    return "relative positions (T5) decode with the eager step" if config.positional_layout == "relative" else None


@dataclass
class StaticState:
    """What incremental decoding carries between steps, with the self-attention cache preallocated.

    memory: per decoder layer the encoder's keys/values [B, H, S, d_k]; cross_mask [B, 1, 1, S] (all True when
    nothing is padded); buffer: every layer's self-attention keys and values in one tensor [L, 2, B, H, capacity,
    d_k], rows 0..length-1 written, so that a beam's reorder is one gather, not one per layer and tensor; cache: per
    layer (keys, values), views of the buffer as the step takes them (``StaticState.build`` makes them); heads (self,
    cross) head masks [L, B or 1, H] (1 = on); length = the number of target tokens fed.
    """

    memory: list[KeyValue]
    cross_mask: torch.Tensor
    buffer: torch.Tensor
    cache: list[KeyValue]
    heads: tuple[torch.Tensor, torch.Tensor]
    length: int = 0
    one_source: bool = False  # every row decodes the same source (one sentence's beams): memory rows are alike
    # a step's ``signature`` on this state's tensors, per (rows fed, grad mode): carried on to the state after a step
    # (``advanced``: the same tensors), found again for any other (``replace`` does not copy it)
    signatures: dict[tuple[int, bool], tuple] = field(init=False, default_factory=dict, repr=False, compare=False)

    @classmethod
    def build(cls, memory: list[KeyValue], cross_mask: torch.Tensor, buffer: torch.Tensor,
              heads: tuple[torch.Tensor, torch.Tensor], length: int = 0, one_source: bool = False) -> StaticState:
        """A state over ``buffer`` [L, 2, B, H, C, d_k], its per-layer views made once (a step passes them on)."""
        cache = [(layer[0], layer[1]) for layer in buffer.unbind(0)]  # per layer [B, H, C, d_k], contiguous
        return cls(memory, cross_mask, buffer, cache, heads, length, one_source)

    def reorder(self, index: torch.Tensor) -> StaticState:
        """Keep rows ``index`` [B'] (beam search's back-pointers), in that order. Like a step, this uses the state
        up: with as many rows as before, the cache's written rows are gathered in place, every layer at once (a beam
        step's cache is mostly unwritten capacity); one source's memory rows are kept without a gather
        (``keep_rows``)."""
        def alike(kv: KeyValue) -> KeyValue:
            return keep_rows(kv[0], index, self.one_source), keep_rows(kv[1], index, self.one_source)

        written = self.buffer[:, :, :, :, :self.length]  # [L, 2, B, H, length, d_k]
        kept = written.index_select(2, index)  # [L, 2, B', H, length, d_k]
        if index.numel() == self.buffer.size(2):
            written.copy_(kept)
            if self.one_source:  # as many rows as before, all alike: the memory stays as it is
                return self
            return replace(self, memory=[alike(kv) for kv in self.memory],
                           cross_mask=keep_rows(self.cross_mask, index, self.one_source))
        memory = [alike(kv) for kv in self.memory]
        cross_mask = keep_rows(self.cross_mask, index, self.one_source)
        buffer = self.buffer.new_zeros(*self.buffer.shape[:2], index.numel(), *self.buffer.shape[3:])
        buffer[:, :, :, :, :self.length] = kept  # zeros past the written rows: a masked key's weight is 0
        return StaticState.build(memory, cross_mask, buffer, self.heads, self.length, self.one_source)

    def advanced(self) -> StaticState:
        """The state once a step has written cache row ``length`` (every field passed on as it is: a step runs this
        for every token, and ``dataclasses.replace`` costs several times a constructor call)."""
        after = StaticState(self.memory, self.cross_mask, self.buffer, self.cache, self.heads, self.length + 1,
                            self.one_source)
        after.signatures = self.signatures
        return after

    def with_room(self) -> StaticState:
        """The same state with at least one unwritten cache row (the capacity doubled when it is full)."""
        if self.length < self.buffer.size(4):
            return self
        grown = torch.cat([self.buffer, torch.zeros_like(self.buffer)], dim=4)  # [L, 2, B, H, 2 capacity, d_k]
        return StaticState.build(self.memory, self.cross_mask, grown, self.heads, self.length, self.one_source)


def position_rows(model: Transformer, position: torch.Tensor) -> torch.Tensor:
    """The decoder's position vector at ``position`` [1] (a tensor, so a compiled step does not specialise on it)
    -> [1, D]: the sinusoid or learned row as ``Embeddings.positions`` reads it."""
    embed = model.embed
    learned = None if embed.learned is None else cast(nn.Embedding, embed.learned["decoder"])
    table = embed.positional if learned is None else learned.weight  # [rows, D]
    return table.index_select(0, position + embed.offset)  # [1, D]


def attend(attention: MultiHeadAttention, q: torch.Tensor, keys: torch.Tensor, values: torch.Tensor,
           visible: torch.Tensor, head: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """softmax(mask(QK^T x scale)) V for the one new query of every row, as ``scaled_dot_product`` computes it.

    q [B, H, 1, d_k], keys and values [B, H, K, d_k], visible bool broadcastable to [B, H, 1, K], head [B or 1, H].
    -> (output [B, 1, D], weights [B, H, 1, K] (masked entries exactly 0), scores [B, H, 1, K] (masked: finfo.min)).
    """
    low = torch.finfo(q.dtype).min
    scores = (q @ keys.transpose(-1, -2)) * attention.scale  # [B, H, 1, K]
    scores = scores.masked_fill(~visible, low)
    weights = scores.softmax(dim=-1).masked_fill(~visible, 0.0)  # [B, H, 1, K]
    context = (weights @ values) * head[:, :, None, None]  # [B, H, 1, d_k]
    merged = context.transpose(1, 2).reshape(q.size(0), 1, -1)  # [B, 1, H d_k]
    return attention.w_o(merged), weights, scores


class StaticStep(nn.Module):
    """One decoding step of ``model`` over a static cache, written for a compiler (``torch.export``): no Python int
    varies between calls, the new keys and values are written into the cache in place."""

    def __init__(self, model: Transformer) -> None:
        super().__init__()
        self.model = model

    def forward(self, tokens: torch.Tensor, position: torch.Tensor, cache: list[KeyValue], memory: list[KeyValue],
                cross_mask: torch.Tensor, self_heads: torch.Tensor, cross_heads: torch.Tensor
                ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """tokens [B, 1], position [1] (int64: the rows already written), cache per layer (keys, values)
        [B, H, C, d_k], memory per layer [B, H, S, d_k], cross_mask [B, 1, 1, S], heads [L, B or 1, H].
        -> (log_probs [B, V], self weights and scores [L, B, H, 1, C], cross weights and scores [L, B, H, 1, S])."""
        model = self.model
        embed = model.embed
        x = embed.token(tokens) * embed.scale  # [B, 1, D]
        if embed.absolute:
            x = x + position_rows(model, position)  # [B, 1, D]
        if embed.norms is not None:
            x = embed.norms["decoder"](x)
        visible = torch.arange(cache[0][0].size(2), device=x.device) <= position  # [C]: rows written, this one too
        kept: list[list[torch.Tensor]] = [[], [], [], []]
        for i, layer in enumerate(model.decoder.layers):
            x = self._layer(layer, x, position, cache[i], memory[i], visible, cross_mask,
                            (self_heads[i], cross_heads[i]), kept)
        hidden = model.decoder.final_norm(x)  # [B, 1, D]
        log_probs = model.logits(hidden[:, -1]).float().log_softmax(dim=-1)  # [B, V]
        self_w, self_s, cross_w, cross_s = (torch.stack(part) for part in kept)
        return log_probs, self_w, self_s, cross_w, cross_s

    @staticmethod
    def _layer(layer: DecoderLayer, x: torch.Tensor, position: torch.Tensor, cache: KeyValue, memory: KeyValue,
               visible: torch.Tensor, cross_mask: torch.Tensor, heads: tuple[torch.Tensor, torch.Tensor],
               kept: list[list[torch.Tensor]]) -> torch.Tensor:
        """One DecoderLayer through its own sub-layers (norms, residuals, FFN); ``kept`` collects the weights and
        scores of its two attentions."""
        def self_attend(h: torch.Tensor) -> torch.Tensor:
            attention = layer.self_attn
            q = attention.split_heads(attention.w_q(h))  # [B, H, 1, d_k]
            k_new, v_new = attention.project_key_value(h)  # [B, H, 1, d_k]
            cache[0].index_copy_(2, position, k_new)
            cache[1].index_copy_(2, position, v_new)
            out, weights, scores = attend(attention, q, cache[0], cache[1], visible, heads[0])
            kept[0].append(weights)
            kept[1].append(scores)
            return out

        def cross_attend(h: torch.Tensor) -> torch.Tensor:
            attention = layer.cross_attn
            q = attention.split_heads(attention.w_q(h))  # [B, H, 1, d_k]
            out, weights, scores = attend(attention, q, memory[0], memory[1], cross_mask, heads[1])
            kept[2].append(weights)
            kept[3].append(scores)
            return out

        after_self = layer.sublayers[0](x, self_attend)
        after_cross = layer.sublayers[1](after_self, cross_attend)
        return layer.sublayers[2](after_cross, layer.feed_forward)  # [B, 1, D]


class StaticStart(nn.Module):
    """Encoding sources as ``Transformer.start`` does with the attention captured (Capture.WEIGHTS), written for a
    compiler (``torch.export``): what the start hands the decoder and the page comes back as tensors."""

    def __init__(self, model: Transformer) -> None:
        super().__init__()
        self.model = model

    def forward(self, src: torch.Tensor, heads: torch.Tensor) -> tuple[list[torch.Tensor], ...]:
        """src [B, S] (ids), heads the encoder's head mask [L, B or 1, H] (1 = on) -> (per decoder layer the
        cross-attention keys and values [B, H, S, d_k]; per encoder layer its self-attention's output [B, S, D],
        keys and values [B, H, S, d_k], weights and scores [B, H, S, S])."""
        model = self.model
        src_mask = padding_mask(src, model.config.pad_id)  # [B, 1, 1, S]
        memory, outputs = model.encoder(model.embed(src), src_mask, Capture.WEIGHTS, heads)  # [B, S, D]
        memory_kv = model.memory_key_values(memory)  # made contiguous here, as the step takes them: written so
        return ([k.contiguous() for k, _ in memory_kv], [v.contiguous() for _, v in memory_kv],
                [o.output for o in outputs],
                [o.key_value[0] for o in outputs], [o.key_value[1] for o in outputs],
                [cast(torch.Tensor, o.weights) for o in outputs], [cast(torch.Tensor, o.scores) for o in outputs])


def step_tensors(inputs: tuple) -> list[torch.Tensor]:
    """A step's inputs (``StaticStep.forward``'s arguments) as the flat list of tensors a package takes, in
    ``torch.utils._pytree``'s order."""
    tokens, position, cache, memory, cross_mask, self_heads, cross_heads = inputs
    return [tokens, position, *(t for kv in cache for t in kv), *(t for kv in memory for t in kv), cross_mask,
            self_heads, cross_heads]


def signature(inputs: tuple) -> tuple:
    """Which compiled step can run a call: the row count, a one-piece source (the package's source length starts at
    2), the head masks' shapes, the grad mode, the device, the dtype and whether every input is contiguous (a package
    reads its inputs with the strides it was built for and checks none of this itself)."""
    keys = inputs[3][0][0]  # memory [B, H, S, d_k]
    return (inputs[0].size(0), keys.size(2) > 1, tuple(inputs[5].shape), tuple(inputs[6].shape),
            torch.is_grad_enabled(), keys.device.type, keys.dtype, all(t.is_contiguous() for t in step_tensors(inputs)))


def start_signature(src: torch.Tensor, heads: torch.Tensor) -> tuple:
    """Which compiled start can encode ``src`` [B, S] with the encoder's head mask ``heads`` [L, B or 1, H]: as for
    a step (``signature``), a one-piece source, the mask's shape (one for every row, or one per row), the grad mode,
    device, dtype and contiguity; any number of rows."""
    return (src.size(1) > 1, tuple(heads.shape), torch.is_grad_enabled(), heads.device.type, heads.dtype,
            src.is_contiguous() and heads.is_contiguous())


class StaticCacheDecoder(nn.Module):
    """A Transformer's ``start`` and ``step`` over a static KV cache, for model.decoding.search's decoders:
    ``greedy_decode(StaticCacheDecoder(model), src)`` equals ``greedy_decode(model, src)``. ``first_capacity``: the
    cache rows allocated at the start (doubled whenever a decode runs past them)."""

    def __init__(self, model: Transformer, first_capacity: int = FIRST_CAPACITY) -> None:
        super().__init__()
        reason = unsupported(model.config)
        if reason is not None:
            raise ValueError(f"no static-cache step for this model: {reason}")
        self.model = model.eval()
        self.config = model.config
        self.first_capacity = first_capacity
        self.limit = model.embed.limit  # the positions the model has: a step past them is refused
        self.static_step = StaticStep(model)
        self.static_start = StaticStart(model)
        # ahead-of-time compiled steps and starts (model.serving.step_package), each for the call signature it was
        # built for (``signature``, ``start_signature``)
        self.packaged: dict[tuple, Callable[..., tuple[torch.Tensor, ...]]] = {}
        self.packaged_starts: dict[tuple, Callable[..., tuple[list[torch.Tensor], ...]]] = {}
        self.positions: dict[torch.device, list[torch.Tensor]] = {}  # per device, position n as a tensor [1]

    @property
    def compiled_rows(self) -> set[int]:
        """The row counts a compiled step serves."""
        return {key[0] for key in self.packaged}

    def first_step_rows(self, beam_size: int) -> int:
        """How many copies of its one row a beam search takes its first step on: the beam's width when a compiled
        step serves that many rows. Each package holds its own copy of the weights: the one-row package, used once
        per beam search, was read cold (2.1 ms a step in the app's path against 1.4 ms for the beam's), and the
        cache was grown from one row to the beam's width after it."""
        return beam_size if beam_size in self.compiled_rows else 1

    def add_package(self, key: tuple, runner: Callable[..., tuple[torch.Tensor, ...]]) -> None:
        """Run the calls of signature ``key`` (``signature``) on ``runner``, an ahead-of-time compiled step that
        takes the step's inputs: no compiler and no guard in the call."""
        self.packaged[key] = runner

    def add_start_package(self, key: tuple, runner: Callable[..., tuple[list[torch.Tensor], ...]]) -> None:
        """Encode the sources of signature ``key`` (``start_signature``) with attention captured on ``runner``, an
        ahead-of-time compiled ``StaticStart``."""
        self.packaged_starts[key] = runner

    def start(self, src: torch.Tensor, capture: Capture = Capture.NONE, head_mask: HeadMask | None = None
              ) -> tuple[StaticState, list]:
        """Encode once (the model's own encoder, or its compiled start when one serves this call): src [B, S] ->
        (state, encoder self-attention per layer)."""
        heads = None
        if capture is Capture.WEIGHTS and self.packaged_starts:
            heads = head_mask.enc_self if head_mask is not None else self.model.embed.token.weight.new_ones(
                self.config.n_encoder_layers, 1, self.config.n_heads)  # [L, B or 1, H] (1 = on)
        runner = None if heads is None else self.packaged_starts.get(start_signature(src, heads))
        if runner is None:
            state, encoder = self.model.start(src, capture, head_mask=head_mask)
        else:
            keys, values, outputs, self_keys, self_values, weights, scores = runner(src, heads)
            encoder = [AttentionOutput(output, (k, v), w, s)
                       for output, k, v, w, s in zip(outputs, self_keys, self_values, weights, scores, strict=True)]
            state = state_after(list(zip(keys, values, strict=True)), padding_mask(src, self.config.pad_id),
                                head_mask)
        return self.static_state(state, src.size(0)), encoder

    def run_step(self, inputs: tuple, key: tuple | None = None) -> tuple[torch.Tensor, ...]:
        """StaticStep on ``inputs``: on the compiled step added for their signature (``key`` when the caller knows
        it), else eagerly (the same step, the same results to 1e-5, only slower)."""
        packaged = self.packaged.get(signature(inputs) if key is None else key) if self.packaged else None
        if packaged is None:
            return self.static_step(*inputs)
        return tuple(packaged(*inputs))

    def position(self, length: int, device: torch.device) -> torch.Tensor:
        """The position a step writes, as the tensor [1] it takes: one view per position of a table made once per
        device (``torch.tensor`` for every step took 2.7 us of it)."""
        table = self.positions.get(device)
        if table is None:
            with torch.inference_mode(False), torch.no_grad():  # a plain tensor: usable in and out of inference mode
                table = self.positions[device] = list(torch.arange(self.limit, device=device).split(1))  # [1] each
        return table[length]

    def static_state(self, state: DecoderState, rows: int) -> StaticState:
        """The eager start's state with an empty preallocated cache and every mask made explicit."""
        k = state.memory_kv[0][0]  # [B, H, S, d_k]
        layers, n_heads, d_k = len(state.memory_kv), k.size(1), k.size(3)
        cross_mask = state.cross_mask if state.cross_mask is not None else \
            torch.ones(rows, 1, 1, k.size(2), dtype=torch.bool, device=k.device)  # [B, 1, 1, S]
        on = k.new_ones(layers, 1, n_heads)  # [L, 1, H]
        memory = [(k.contiguous(), v.contiguous()) for k, v in state.memory_kv]  # as a beam's reorder leaves them
        buffer = k.new_zeros(layers, 2, rows, n_heads, self.first_capacity, d_k)  # [L, 2, B, H, C, d_k]
        return StaticState.build(memory, cross_mask.contiguous(), buffer,
                                 state.heads if state.heads is not None else (on, on), one_source=state.one_source)

    def step(self, state: StaticState, tokens: torch.Tensor, capture: Capture = Capture.NONE
             ) -> StepOutput[StaticState]:
        """Feed the newest token of every row, tokens [B, 1]: ``Transformer.step`` over the static cache."""
        if state.length >= self.limit:
            raise ValueError(f"sequence of {state.length + 1} tokens exceeds the limit of {self.limit} positions")
        state = state.with_room()
        tokens = tokens.contiguous()  # [B, 1]: a slice of a beam's prefixes, copied to one stride for all
        inputs = (tokens, self.position(state.length, tokens.device), state.cache, state.memory, state.cross_mask,
                  *state.heads)
        known = (tokens.size(0), torch.is_grad_enabled())
        key = state.signatures.get(known)
        if key is None:
            key = state.signatures[known] = signature(inputs)
        log_probs, self_w, self_s, cross_w, cross_s = self.run_step(inputs, key)
        new_state = state.advanced()
        if not capture:
            return StepOutput(log_probs, new_state)
        seen = state.length + 1  # keys written so far; the rest of the cache is masked and not part of this step
        return StepOutput(log_probs, new_state, StepTrace.cut_when_read({
            "dec_self": (self_w, seen), "dec_self_scores": (self_s, seen),  # [L, B, H, 1, C]
            "cross": (cross_w, cross_w.size(-1)), "cross_scores": (cross_s, cross_s.size(-1))}))  # [L, B, H, 1, S]


__all__ = ["StaticCacheDecoder", "StaticStart", "StaticState", "StaticStep", "signature", "start_signature",
           "step_tensors", "unsupported"]
