"""AttentionTrace: every attention weight a forward pass or a decoding step used, returned as data.

The model is shared by every browser session, so nothing is stored on modules or captured with
hooks: a forward with ``capture=Capture.WEIGHTS`` builds one of these and hands it back. It is the one
container for attention in the project: a teacher-forced forward, one decoding step's rows and the
rows stacked along a decoded hypothesis all come back as an AttentionTrace.
"""
from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Generic, Literal, TypeVar, cast, get_args

import torch

from model.network.attention import AttentionOutput, Intermediates
from model.network.config import ModelConfig

Kind = Literal["enc_self", "dec_self", "cross"]  # the three kinds of attention a trace holds
KINDS: tuple[Kind, ...] = get_args(Kind)
KIND_LABELS = {
    "enc_self": "Encoder self-attention",
    "dec_self": "Decoder self-attention (masked)",
    "cross": "Encoder-decoder (cross) attention",
}

T = TypeVar("T")


@dataclass(frozen=True, eq=False)  # equality is the mapping's: equal to a dict with the same items
class PerKind(Mapping, Generic[T]):
    """One value per attention kind, in KINDS order: a model's layers per kind, a head-importance table per kind,
    the stacked weights of one forward per kind. Frozen and typed (no kind is missing, none is misspelt); read as a
    mapping, ``layers["cross"]`` or ``importance.items()``."""

    enc_self: T
    dec_self: T
    cross: T

    @classmethod
    def build(cls, make: Callable[[Kind], T]) -> PerKind[T]:
        """``make(kind)`` for every kind."""
        return cls(**{kind: make(kind) for kind in KINDS})

    def map(self, change: Callable[[T], object]) -> PerKind:
        """The same kinds, each value changed (e.g. tensors to numpy arrays)."""
        return PerKind(**{kind: change(getattr(self, kind)) for kind in KINDS})

    def __getitem__(self, kind: str) -> T:
        return getattr(self, _check(kind))

    def __iter__(self) -> Iterator[Kind]:
        return iter(KINDS)

    def __len__(self) -> int:
        return len(KINDS)


@dataclass
class AttentionTrace:
    """Per layer, per head attention of one forward pass (or of one decoding step).

    Weights (post-softmax, pre-dropout): enc_self [B, H, S, S], dec_self [B, H, T, T],
    cross [B, H, T, S], one tensor per layer; a decoding step holds its new query rows only (T = 1 query,
    t + 1 keys). Scores are the matching softmax inputs (QK^T / sqrt(d_k), masked with finfo.min), empty
    when not kept. src_mask [B, 1, 1, S] and tgt_mask [B, 1, T, T] are the bool masks applied (True = may
    attend). ``internals`` (per kind, per layer) holds Q, K, V and the other intermediates when the forward
    ran at the "internals" capture level.
    """

    enc_self: list[torch.Tensor]
    dec_self: list[torch.Tensor]
    cross: list[torch.Tensor]
    enc_self_scores: list[torch.Tensor]
    dec_self_scores: list[torch.Tensor]
    cross_scores: list[torch.Tensor]
    src_mask: torch.Tensor | None = None
    tgt_mask: torch.Tensor | None = None
    internals: dict[str, list[Intermediates]] | None = None
    # fields whose layers are views of one tensor [L, B, H, Q, K] (``holding``): that tensor, the layers cut from it and
    # the wider tensor it was cut from along its keys, if any
    _held: dict[str, tuple[torch.Tensor, tuple[torch.Tensor, ...], torch.Tensor | None]] = field(
        init=False, default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_outputs(cls, enc: Sequence[AttentionOutput], dec_self: Sequence[AttentionOutput],
                     cross: Sequence[AttentionOutput], src_mask: torch.Tensor | None = None,
                     tgt_mask: torch.Tensor | None = None) -> AttentionTrace:
        """Collect what the attention calls of one pass returned (their weights, scores and intermediates)."""
        outputs = {"enc_self": enc, "dec_self": dec_self, "cross": cross}
        kept = {kind: [a.intermediates for a in outs] for kind, outs in outputs.items()}
        has_internals = any(parts and parts[0] is not None for parts in kept.values())
        # A capturing pass (the only kind that builds a trace) sets every output's weights and scores, and at the
        # "internals" level every output's intermediates: the Nones of the types do not occur here.
        internals = cast(dict[str, list[Intermediates]], kept) if has_internals else None
        return cls(enc_self=_kept([a.weights for a in enc]), dec_self=_kept([a.weights for a in dec_self]),
                   cross=_kept([a.weights for a in cross]), enc_self_scores=_kept([a.scores for a in enc]),
                   dec_self_scores=_kept([a.scores for a in dec_self]), cross_scores=_kept([a.scores for a in cross]),
                   src_mask=src_mask, tgt_mask=tgt_mask, internals=internals)

    def holding(self, padded: Mapping[str, torch.Tensor] | None = None, **fields: torch.Tensor) -> AttentionTrace:
        """This trace, told that each named field's layers were cut from one tensor [L, B, H, Q, K] (a compiled
        step returns every layer's rows at once): ``stacked`` hands it back instead of stacking them again. A trace
        made from this one by ``dataclasses.replace`` holds nothing (its lists may be others). ``padded`` names, for
        some of those fields, the tensor [L, B, H, Q, C >= K] that one was cut from along its keys, whose keys past K
        hold what a masked key holds (weight 0, score finfo.min): a static cache's whole capacity (``padded``)."""
        wide = padded or {}
        for name, layers in fields.items():
            self._held[name] = (layers, tuple(getattr(self, name)), wide.get(name))
        return self

    def with_encoder(self, encoder: AttentionTrace) -> AttentionTrace:
        """A decoding step's trace (its query rows) joined with the sentence's encoder self-attention and source mask
        from ``encoder``: the step's own lists, and what it holds stacked, as they are."""
        joined = AttentionTrace(encoder.enc_self, self.dec_self, self.cross, encoder.enc_self_scores,
                                self.dec_self_scores, self.cross_scores, encoder.src_mask, self.tgt_mask,
                                self.internals)
        joined._held.update(self._held)
        return joined

    def first_rows(self, rows: int) -> AttentionTrace:
        """The trace of a pass's first ``rows`` rows (batch entries): every weight, score and mask cut so, and what
        it holds stacked too. A beam search's first step runs on copies of its one row (model.decoding.search)."""
        def cut(layers: list[torch.Tensor]) -> list[torch.Tensor]:
            return [layer[:rows] for layer in layers]

        def cut_mask(mask: torch.Tensor | None) -> torch.Tensor | None:
            return mask if mask is None or mask.size(0) == 1 else mask[:rows]

        def cut_part(part: Intermediates) -> Intermediates:
            return Intermediates(**{name: held[:rows] for name, held in vars(part).items() if held is not None})
        internals = None if self.internals is None else {
            kind: [cut_part(part) for part in parts] for kind, parts in self.internals.items()}
        trace = AttentionTrace(cut(self.enc_self), cut(self.dec_self), cut(self.cross), cut(self.enc_self_scores),
                               cut(self.dec_self_scores), cut(self.cross_scores), cut_mask(self.src_mask),
                               cut_mask(self.tgt_mask), internals)
        return trace.holding({name: held[2][:, :rows] for name, held in self._held.items() if held[2] is not None},
                             **{name: self.stacked(name)[:, :rows] for name in self._held})

    def stacked(self, name: str) -> torch.Tensor:
        """One field's layers (e.g. "cross" or "dec_self_scores") as one tensor [L, B, H, Q, K], to read only: the
        tensor they were cut from when the trace holds it and they are still its layers (``holding``), else stacked
        now. A decode's path reads every step's rows so (model.decoding.search): 4 fields x every step."""
        held = self._still_held(name)
        return torch.stack(getattr(self, name)) if held is None else held[0]

    def padded(self, name: str) -> torch.Tensor:
        """``stacked``, or the wider tensor it was cut from along its keys when the trace holds one (``holding``):
        [L, B, H, Q, C >= K], the keys past K masked ones (weight 0, score finfo.min). A static cache's steps all have
        its capacity, so a decoded path's rows stack without padding each step's to the path's length."""
        held = self._still_held(name)
        if held is None:
            return torch.stack(getattr(self, name))
        return held[0] if held[2] is None else held[2]

    def _still_held(self, name: str) -> tuple[torch.Tensor, tuple[torch.Tensor, ...], torch.Tensor | None] | None:
        """What the trace holds for a field, while its layers are still the ones cut from it."""
        layers = getattr(self, name)
        held = self._held.get(name)
        if held is None or len(held[1]) != len(layers) or not all(map(operator.is_, layers, held[1])):
            return None
        return held

    def weights(self, kind: Kind) -> torch.Tensor:
        """All layers of one kind stacked: [L, B, H, Q, K]."""
        return torch.stack(getattr(self, _check(kind)))

    def scores(self, kind: Kind) -> torch.Tensor:
        """Softmax inputs of one kind stacked: [L, B, H, Q, K]."""
        return torch.stack(getattr(self, _check(kind) + "_scores"))

    def mask(self, kind: Kind) -> torch.Tensor:
        """The bool mask a kind used, expanded to [B, 1, Q, K]."""
        kind = _check(kind)
        if kind == "dec_self":
            return _held_mask(self.tgt_mask, kind)
        src = _held_mask(self.src_mask, kind)
        if kind == "enc_self":
            return src.expand(-1, -1, src.size(-1), -1)
        return src.expand(-1, -1, _held_mask(self.tgt_mask, kind).size(-1), -1)

    def tensors(self) -> list[torch.Tensor]:
        """Every tensor the trace holds (weights, scores, masks, intermediates), e.g. to count its memory."""
        held = [t for kind in KINDS for t in (*getattr(self, kind), *getattr(self, kind + "_scores"))]
        held += [m for m in (self.src_mask, self.tgt_mask) if m is not None]
        for parts in (self.internals or {}).values():
            held += [t for p in parts for t in vars(p).values() if isinstance(t, torch.Tensor)]
        return held

    @property
    def n_layers(self) -> PerKind[int]:
        return PerKind.build(lambda kind: len(getattr(self, kind)))


STEP_FIELDS = ("dec_self", "cross", "dec_self_scores", "cross_scores")  # what a decoding step's own rows fill


def _cut_when_read(name: str) -> property:
    """A StepTrace field: its layers, cut from the step's tensor the first time they are read (or as set)."""
    def read(trace: StepTrace) -> list[torch.Tensor]:
        layers = trace.__dict__.get(name)
        if layers is None:
            stacked, wide = trace._uncut(name)
            layers = trace.__dict__[name] = list(stacked.unbind(0))
            trace._held[name] = (stacked, tuple(layers), wide)  # as ``holding`` records it: still checked by identity
        return layers

    def write(trace: StepTrace, layers: list[torch.Tensor]) -> None:
        trace.__dict__[name] = layers

    return property(read, write, doc=f"The step's {name} rows, per layer (cut when first read).")


class StepTrace(AttentionTrace):
    """A decoding step's trace as a compiled step hands it back: per field (``STEP_FIELDS``) one tensor
    [L, B, H, 1, C] for every layer, cut to its first K keys and into layers only when they are read. A decode reads
    most steps' rows only stacked along a path (``padded``, model.decoding.search), and cutting four fields into layers
    every step took 10 us of it. Read or written, a field is an AttentionTrace's list of layers; ``StepTrace(...)`` with
    lists is a plain trace."""

    dec_self = _cut_when_read("dec_self")
    cross = _cut_when_read("cross")
    dec_self_scores = _cut_when_read("dec_self_scores")
    cross_scores = _cut_when_read("cross_scores")

    @classmethod
    def cut_when_read(cls, whole: Mapping[str, tuple[torch.Tensor, int]], encoder: AttentionTrace | None = None
                      ) -> StepTrace:
        """A step's trace from ``whole``: per field of STEP_FIELDS its tensor [L, B, H, 1, C] and K <= C, the keys
        the step saw; the columns past K must hold what a masked key holds (weight 0, score finfo.min), as a static
        cache's unwritten rows do. ``encoder``: the sentence's encoder self-attention and source mask, joined."""
        trace = cls.__new__(cls)
        trace.__dict__.update(
            enc_self=[] if encoder is None else encoder.enc_self,
            enc_self_scores=[] if encoder is None else encoder.enc_self_scores,
            src_mask=None if encoder is None else encoder.src_mask, tgt_mask=None, internals=None, _held={},
            _whole=dict(whole))
        return trace

    def _uncut(self, name: str) -> tuple[torch.Tensor, torch.Tensor]:
        """A field's tensor cut to the keys seen [L, B, H, 1, K], and the whole one it was cut from."""
        wide, keys = self.__dict__["_whole"][name]
        return (wide if wide.size(-1) == keys else wide[..., :keys]), wide

    def stacked(self, name: str) -> torch.Tensor:
        if name in STEP_FIELDS and name not in self.__dict__:  # not read yet: its layers are the tensor's
            return self._uncut(name)[0]
        return super().stacked(name)

    def padded(self, name: str) -> torch.Tensor:
        if name in STEP_FIELDS and name not in self.__dict__:
            return self.__dict__["_whole"][name][0]
        return super().padded(name)

    def with_encoder(self, encoder: AttentionTrace) -> AttentionTrace:
        if "_whole" not in self.__dict__:  # made with lists (``dataclasses.replace``): a plain trace's join
            return super().with_encoder(encoder)
        joined = StepTrace.cut_when_read(self.__dict__["_whole"], encoder)
        joined.__dict__.update({name: self.__dict__[name] for name in STEP_FIELDS if name in self.__dict__})
        joined.tgt_mask, joined.internals = self.tgt_mask, self.internals
        joined._held.update(self._held)
        return joined


def layer_counts(config: ModelConfig) -> PerKind[int]:
    """How many layers of each kind of attention a model of ``config`` has (cross-attention: one per decoder layer)."""
    return PerKind(enc_self=config.n_encoder_layers, dec_self=config.n_decoder_layers, cross=config.n_decoder_layers)


Head = tuple[str, int, int]  # (kind, layer, head), 0-based


@dataclass(frozen=True)
class HeadMask:
    """Which heads are on, per kind: enc_self, dec_self, cross, each [L, B or 1, H] (1 = on, 0 = off).

    Passed to the forward pass and to decoding, it zeroes a head's output before W^O without touching any
    weight (Michel et al., 2019, "Are Sixteen Heads Really Better than One?"). A batch dimension lets one
    forward pass try a different set of heads per row.
    """

    enc_self: torch.Tensor
    dec_self: torch.Tensor
    cross: torch.Tensor

    @classmethod
    def rows(cls, off_per_row: Sequence[Iterable[Head]], layers: Mapping[str, int], n_heads: int) -> HeadMask:
        """One row per entry of ``off_per_row``, the heads listed there switched off. ``layers`` is the number
        of layers per kind (AttentionTrace.n_layers or layer_counts(config))."""
        masks = {kind: torch.ones(layers[kind], len(off_per_row), n_heads) for kind in KINDS}  # [L, B, H]
        for row, heads in enumerate(off_per_row):
            for kind, layer, head in heads:
                masks[_check(kind)][layer, row, head] = 0.0
        return cls(**masks)

    @classmethod
    def switched_off(cls, heads: Iterable[Head], layers: Mapping[str, int], n_heads: int) -> HeadMask:
        """Every head on except ``heads``: a batch of one."""
        return cls.rows([list(heads)], layers, n_heads)

    def to(self, device: torch.device | str) -> HeadMask:
        return HeadMask(**{kind: getattr(self, kind).to(device) for kind in KINDS})


def _kept(tensors: list[torch.Tensor | None]) -> list[torch.Tensor]:
    """Weights or scores of a capturing pass, where none is None (AttentionTrace.from_outputs)."""
    return cast(list[torch.Tensor], tensors)


def _held_mask(mask: torch.Tensor | None, kind: str) -> torch.Tensor:
    if mask is None:
        raise ValueError(f"this trace kept no mask for {kind} attention")
    return mask


def _check(kind: str) -> Kind:
    if kind not in KINDS:
        raise ValueError(f"unknown attention kind {kind!r}; expected one of {KINDS}")
    return kind
