"""When beam search stops: Hugging Face's three rules (generate()'s ``early_stopping``), one of them the paper's.

Every rule needs beam_size finished hypotheses first (the n-best list is full), and every search stops at the length
limit or when no live beam is left. They differ in what happens once the list is full:

- True: stop at once. Cheapest, and this project's own rule; a live beam that would have beaten a finished one is
  never seen.
- False (generate()'s default): stop once the best live beam, scored as if it ended at its current length, no longer
  beats the worst of the beam_size best finished ones. With α = 0 that is exact (a log-prob only falls as pieces are
  added); with α > 0 it is a heuristic, since a longer output is divided by a larger penalty.
- "never": as False, but with α > 0 the live beam is scored as if it ended at the length limit, the largest penalty a
  hypothesis can get: a bound no live beam can beat, so the search never stops while one could still win.

The three runs share every step until one stops (the live beams never depend on the rule), so True never stops later
than False, nor False later than "never", and a later stop only adds finished hypotheses: its best score is at least
as high (tests/model/test_properties_decoding.py). generate() keeps the beam_size best finished hypotheses; decoding
keeps them all, best first, and its n-best list is their first beam_size, the same list.
"""
from __future__ import annotations

from collections.abc import Sequence


def best_possible_length(generated: int, max_len: int, alpha: float, early_stopping: bool | str) -> int:
    """The length a live beam of ``generated`` pieces is scored at when asking whether it could still win: the limit
    for "never" with α > 0 (the largest penalty there is), else its current length (generate()'s
    _check_early_stop_heuristic, whose decoder_prompt_len is our start token)."""
    return max_len if early_stopping == "never" and alpha > 0 else generated


def search_is_over(finished_scores: Sequence[float], best_live_score: float, beam_size: int,
                   early_stopping: bool | str) -> bool:
    """Whether beam search stops after this step (the length limit and an empty beam aside). ``finished_scores`` are
    every finished hypothesis' score, best first; ``best_live_score`` is the best live beam's log-prob over the length
    penalty at best_possible_length. Strictly better, as generate() asks: a tie stops."""
    if len(finished_scores) < beam_size:
        return False
    if early_stopping is True:
        return True
    return best_live_score <= finished_scores[beam_size - 1]
