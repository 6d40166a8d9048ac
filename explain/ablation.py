"""Head ablation (Michel et al., 2019, "Are Sixteen Heads Really Better than One?"): switch heads off and see
what the model does without them, on one sentence or summed over a few.

Everything runs the model's own forward pass and decoder with a HeadMask (a head's output is zeroed before
W^O); no weight is changed. Attention maps are compared where they line up: the teacher-forced forward of
the ORIGINAL output with and without the heads, one batch of two rows, so the difference is the mask's
effect alone.
"""
from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import torch

from explain.heads import head_importance, n_layers_of, sequence_log_probs, teacher_forced
from model.decoding.search import DecodeResult, decode_steps
from model.network.attention import Capture
from model.network.config import DecodeConfig
from model.network.trace import Head, HeadMask, PerKind
from model.network.transformer import Transformer
from model.serving.inference import StopSignal, Translation, check_stop, prepare_source, translate
from model.tokenization.kinds import TextTokenizer


@dataclass(frozen=True)
class Ablation:
    """One sentence with ``heads`` switched off, beside the original translation.

    ablated: the sentence decoded again with the heads off (same decoding settings). log_prob and
    ablated_log_prob: log P(original output | source) under teacher forcing with every head on and with the
    heads off (explain.heads.sequence_log_probs). piece_log_probs [2, T]: the same per output piece (row 0
    all on, row 1 heads off). maps: per kind [L, 2, H, Q, K], the teacher-forced weights of the original output
    (row 0 every head on, row 1 the heads off): they line up cell by cell.
    """

    heads: tuple[Head, ...]
    ablated: Translation
    log_prob: float
    ablated_log_prob: float
    piece_log_probs: torch.Tensor
    maps: PerKind[torch.Tensor]

    @property
    def log_prob_change(self) -> float:
        """Heads off minus heads on, in nats (negative: the original translation became less likely)."""
        return self.ablated_log_prob - self.log_prob

    def difference(self, kind: str) -> torch.Tensor:
        """Heads off minus every head on, [L, H, Q, K]."""
        return self.maps[kind][:, 1] - self.maps[kind][:, 0]

    def largest_change(self) -> PerKind[torch.Tensor]:
        """Per kind [L]: the largest |difference| of any weight of that layer (0: no map of it moved)."""
        return PerKind.build(lambda kind: self.difference(kind).abs().flatten(1).max(dim=1).values)


def switched_off(model: Transformer, heads: Iterable[Head]) -> HeadMask:
    """A batch-1 HeadMask of ``model`` with ``heads`` off."""
    return HeadMask.switched_off(heads, n_layers_of(model), model.config.n_heads)


def teacher_forced_pair(model: Transformer, source_ids: Sequence[int], output_ids: Sequence[int],
                        heads: Sequence[Head]) -> tuple[torch.Tensor, PerKind[torch.Tensor]]:
    """One forward of the output with every head on (row 0) and with ``heads`` off (row 1): per-piece
    log-probs [2, T] and, per kind, the weights [L, 2, H, Q, K] (on the CPU)."""
    mask = HeadMask.rows([[], list(heads)], n_layers_of(model), model.config.n_heads)
    return teacher_forced(model, source_ids, output_ids, mask)


def ablate(model: Transformer, tokenizer: TextTokenizer, original: Translation, heads: Iterable[Head],
           config: DecodeConfig, should_stop: StopSignal | None = None) -> Ablation:
    """Decode ``original``'s sentence again with ``heads`` off (model.serving.inference.translate with a head mask)
    and measure what the heads did for the original output."""
    heads = tuple(sorted(set(heads)))
    ablated = translate(model, tokenizer, original.source.text, config, head_mask=switched_off(model, heads),
                        should_stop=should_stop)
    source, output = original.source.ids, original.target_ids
    before = sequence_log_probs(model, source, output)[0]
    after = sequence_log_probs(model, source, output, switched_off(model, heads))[0]
    pieces, weights = teacher_forced_pair(model, source, output, heads)
    return Ablation(heads=heads, ablated=ablated, log_prob=float(before), ablated_log_prob=float(after),
                    piece_log_probs=pieces, maps=weights)


def map_difference(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor | None:
    """a - b for two attention maps that line up one to one (the same shape), else None: maps of sentences
    with different numbers of pieces have no cell-by-cell difference."""
    if a.shape != b.shape:
        return None
    return a.float() - b.float()


def changed_pieces(a: Sequence[str], b: Sequence[str]) -> tuple[list[bool], list[bool]]:
    """Which pieces of two outputs are not part of their longest matching blocks (difflib), per piece."""
    changed_a, changed_b = [True] * len(a), [True] * len(b)
    for block in difflib.SequenceMatcher(a=list(a), b=list(b), autojunk=False).get_matching_blocks():
        changed_a[block.a:block.a + block.size] = [False] * block.size
        changed_b[block.b:block.b + block.size] = [False] * block.size
    return changed_a, changed_b


def importance_over_sentences(model: Transformer, tokenizer: TextTokenizer, texts: Sequence[str],
                              config: DecodeConfig = DecodeConfig(), should_stop: StopSignal | None = None
                              ) -> PerKind[torch.Tensor]:
    """Head importance (explain.heads.head_importance) summed over several sentences, each on its own
    output (decoded with ``config``, no attention captured), per kind [L, H] in nats."""
    device = model.embed.token.weight.device
    layers, n_heads = n_layers_of(model), model.config.n_heads
    total = PerKind.build(lambda kind: torch.zeros(layers[kind], n_heads))  # summed in place
    for text in texts:
        source = prepare_source(tokenizer, text)
        steps = []
        for step in decode_steps(model, torch.tensor(source.ids, device=device), config, capture=Capture.NONE):
            steps.append(step)
            check_stop(should_stop)
        output = DecodeResult.from_steps(steps, 1).best
        for kind, values in head_importance(model, source.ids, output.tokens, should_stop=should_stop).items():
            total[kind].add_(values)
    return total
