"""When the model doubts its own translation, say so: a measure read off the model's own per-piece probabilities.

A weak model writes fluent-looking nonsense ("Attention is all you need." -> "Attentatine ist dir alle nötigen.")
with nothing on screen to warn a reader. The decoder already knows: each piece it wrote had a probability. Two
numbers of the chosen output (EOS included) summarise them:

    mean log-prob   the mean over pieces of log p(piece | source, pieces before): how sure it was on the whole
    lowest          the smallest single piece probability: the one place it guessed hardest

A translation is *doubtful* when its mean log-prob per piece is below ``MEAN_LOG_PROB_FLOOR``. The floor was
calibrated on held-out text (the test split of data/en-de.tsv.gz, greedy, pretrained/en-de; measured by
``benchmarks/doubt_note.py``, results in benchmarks/results/2026-11-28-doubt-note.md): on test sentences outside
the calibration sample it fires on 75% of those whose chrF is under 30 and on 15% of those over 60. The lowest piece
probability separated them no better, so it only names the weakest piece in the note.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from model.decoding.search import DecodeResult, Hypothesis

# Calibrated on the test split (benchmarks/results/2026-11-28-doubt-note.md): below it, a translation is doubtful.
MEAN_LOG_PROB_FLOOR = -0.5  # a geometric-mean piece probability of 61%


def piece_log_probs(result: DecodeResult, hypothesis: Hypothesis | None = None) -> tuple[float, ...]:
    """The log-probability the model gave each piece of a hypothesis (the best by default) when it wrote it, in
    order, EOS included: the differences of its cumulative score along its path through the steps. Under sampling
    these are the model's own probabilities (before temperature), under teacher forcing those of the given pieces."""
    hyp = hypothesis or result.best
    path, steps = hyp.path, result.steps
    before = [float(steps[t].prefix_scores[row]) for t, row in enumerate(path)]  # cumulative, before step t's piece
    after = [*before[1:], hyp.log_prob]
    return tuple(b - a for a, b in zip(before, after, strict=True))


@dataclass(frozen=True)
class Doubt:
    """How sure the model was of each piece of its output, and whether that is too unsure to trust."""

    log_probs: tuple[float, ...]  # per output piece, EOS included
    pieces: tuple[str, ...]  # the same pieces, as the tokenizer writes them

    @property
    def mean_log_prob(self) -> float:
        """Mean log-probability per piece (0 = certain of every piece); -inf-free: an empty output counts as 0."""
        return sum(self.log_probs) / len(self.log_probs) if self.log_probs else 0.0

    @property
    def lowest(self) -> tuple[str, float]:
        """The piece written with the smallest probability, and that probability."""
        if not self.log_probs:
            return "", 1.0
        i = min(range(len(self.log_probs)), key=self.log_probs.__getitem__)
        return self.pieces[i], math.exp(self.log_probs[i])

    @property
    def doubtful(self) -> bool:
        return self.mean_log_prob < MEAN_LOG_PROB_FLOOR

    def note(self) -> str | None:
        """One line for the reader when the output is doubtful, else None."""
        if not self.doubtful:
            return None
        piece, prob = self.lowest
        return (f"the model is unsure of this translation (its pieces' probabilities average "
                f"{self.typical_prob:.0%}, geometric mean; the lowest, {piece!r}, {prob:.0%}): read it as a guess")

    @property
    def typical_prob(self) -> float:
        """The geometric mean of the piece probabilities: exp(mean log-prob)."""
        return math.exp(self.mean_log_prob)


def doubt_of(result: DecodeResult, pieces: Sequence[str], hypothesis: Hypothesis | None = None) -> Doubt:
    """The Doubt of a hypothesis (the best by default) whose pieces are ``pieces``."""
    return Doubt(piece_log_probs(result, hypothesis), tuple(pieces))
