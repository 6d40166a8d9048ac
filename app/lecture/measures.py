"""What a slide reads off the numbers before it draws them: the rows a window over a long sentence shows, the step
where the model was least sure, pieces merged into words, the source words a translation left out, and the
restarts of a continued training run.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from app.page import to_numpy
from model.serving.inference import Translation
from model.tokenization.pieces import word_groups, word_labels
from training.schedule import training_segments

MIN_WINDOW = 4  # rows a slide's window shows at the least, even on a very small screen


WINDOW_STRIDE = 4  # rows one press of ↓ / ↑ moves a slide's window (app.views.lecture)


def window_of(n: int, room: int, start: int | None) -> tuple[int, int]:
    """The rows [first, end) of ``n`` that a slide shows when ``room`` rows fit: all of them (also where ``start``
    is None), or a window of ``room`` rows from ``start``, kept inside the map. A window instead of every k-th row:
    each row shown is named."""
    if n <= room or start is None:
        return 0, n
    room = min(n, max(room, MIN_WINDOW))
    first = min(max(start, 0), n - room)
    return first, first + room


def least_sure_step(translation: Translation) -> int:
    """The greedy step whose most probable piece had the smallest probability: where the model was least sure."""
    top = [float(to_numpy(s.topk_probs[0])[0]) for s in translation.result.steps]
    return int(np.argmin(top))


def words_of(rows: list[str], cols: list[str], maps: list[tuple[str, np.ndarray]]
              ) -> tuple[list[str], list[str], list[tuple[str, np.ndarray]]]:
    """Maps [rows, cols] of pieces as maps of words, as explain.heads.merge_to_words makes them: a word's row is the
    mean of its pieces' rows, its column the sum of its pieces' columns (rows still sum to 1)."""
    row_groups, col_groups = word_groups(rows), word_groups(cols)
    merged = [(name, np.array([[np.asarray(z)[np.ix_(rg, cg)].sum(axis=1).mean() for cg in col_groups]
                               for rg in row_groups])) for name, z in maps]
    return word_labels(rows, row_groups), word_labels(cols, col_groups), merged


DROPPED_MASS = 0.5  # a source word read by under half a row's weight in all, and by no row most: dropped


def dropped_words(weights: np.ndarray, key_labels: Sequence[str]) -> list[int]:
    """The source words weights [Q, K] (word level, rows = output words) show as left out: no output word reads
    any of them most, and all output words together give each less than DROPPED_MASS (the end of the sentence,
    </s>, is never one)."""
    most = set(np.asarray(weights).argmax(axis=1).tolist())
    mass = np.asarray(weights).sum(axis=0)
    return [j for j, label in enumerate(key_labels) if j not in most and mass[j] < DROPPED_MASS and label != "</s>"]


MAX_NAMED_RESTARTS = 4  # restarts named with their steps on the schedule slide's line (220 characters)


def restarts_line(meta: dict) -> str:
    """A line on the jumps in a continued run's curve (training.schedule.training_segments), else ""."""
    segments = training_segments(meta)
    if len(segments) < 2:
        return ""
    factors = [f"×{s['lr_factor'] or 1.0:g}" for s in segments]
    if len(segments) > MAX_NAMED_RESTARTS + 1:  # every step named would not fit a slide's line: the factors in order
        return (f"The jumps are where training was resumed, {len(segments) - 1} times, Adam restarted each time, at "
                f"these factors on the same formula: {' → '.join(factors)}, the last from step "
                f"{segments[-2]['last_step'] or 0:,}.")
    parts = [f"{factor} to step {s['last_step'] or 0:,}" for factor, s in zip(factors, segments[:-1], strict=False)]
    return ("The jumps are where training was resumed, Adam restarted each time, at these factors on the same "
            f"formula: {', '.join(parts)}, then {factors[-1]}.")
