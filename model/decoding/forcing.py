"""Teacher forcing a given output: the model reads a translation it is handed as if it had written it, and says at
every step what it thought of the piece it was made to write.

``model.decoding.search.forced_steps`` is a step generator like ``greedy_steps`` (the same DecodeStep, one hypothesis,
the same KV-cached steps and attention rows), so a scored translation is shown by everything that shows a decoded one;
each step also says how the forced piece stood in the model's distribution (``DecodeStep.forced``, a ForcedChoice).
Forcing the greedy output gives back greedy decoding exactly: same pieces, log-probabilities and attention.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class ForcedChoice:
    """How the piece a step was made to write stood in the model's distribution over the pieces decoding may pick
    (the start token and PAD excluded, a forced first piece the only one; model.decoding.search.selectable_log_probs).

    ``log_prob`` is log p(token | prefix, source), what it adds to the output's log-probability; ``rank`` counts from
    1 (1 = the model's own first choice, ties ranked in the piece's favour); ``first`` is the piece the model would
    have written here (greedy's choice) and ``first_log_prob`` its log-probability."""

    token: int
    log_prob: float
    rank: int
    first: int
    first_log_prob: float

    @property
    def agrees(self) -> bool:
        """Whether the model would have written this piece itself (greedy takes the same one)."""
        return self.rank == 1


def judge(selectable: torch.Tensor, token: int) -> ForcedChoice:
    """How ``token`` stands among selectable log-probs [V] (-inf where impossible): its log-prob, its rank, the
    model's first choice."""
    log_prob = selectable[token]
    first = int(selectable.argmax())
    return ForcedChoice(token=token, log_prob=float(log_prob), rank=1 + int((selectable > log_prob).sum()),
                        first=first, first_log_prob=float(selectable[first]))
