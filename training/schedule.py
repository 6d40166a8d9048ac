"""The paper's learning-rate schedule (section 5.3): linear warm-up, then inverse square root decay."""
from __future__ import annotations


def noam_lr(step: int, d_model: int, warmup: int, factor: float = 1.0) -> float:
    """lrate = factor * d_model^-0.5 * min(step^-0.5, step * warmup^-1.5), for step >= 1.

    Rises linearly for ``warmup`` steps, peaks at factor * (d_model * warmup)^-0.5, then decays as
    1/sqrt(step). The paper used warmup 4000 (of 100k steps) and factor 1; a small corpus wants a
    shorter warm-up.
    """
    step = max(step, 1)
    return factor * d_model ** -0.5 * min(step ** -0.5, step * warmup ** -1.5)


def cooldown(epochs_left: float, cooldown_epochs: int) -> float:
    """The factor a linear cool-down puts on the rate: 1 until the run's last ``cooldown_epochs`` epochs, then
    falling linearly to 0 at the run's end (``epochs_left`` counts fractions of an epoch too).

    1/sqrt(step) never anneals, so weights of a long run keep jittering around a minimum; averaging checkpoints
    (training.average) is one answer, cooling the rate down to zero at the end is the other (the
    "warmup-stable-decay" schedules; 0 = no cool-down)."""
    if cooldown_epochs <= 0:
        return 1.0
    return min(1.0, max(epochs_left, 0.0) / cooldown_epochs)


def cooldown_span(cooldown: object) -> tuple[int, int] | None:
    """The first and last epoch of a cool-down as a checkpoint's meta records it ([first, last]), else None (none
    recorded, or not two epochs in order: meta is free-form JSON)."""
    if (isinstance(cooldown, list) and len(cooldown) == 2 and all(type(e) is int for e in cooldown)
            and 1 <= cooldown[0] <= cooldown[1]):
        return cooldown[0], cooldown[1]
    return None


def cooldown_words(cooldown: object, last_epoch: int | None) -> str:
    """"falling linearly to 0 over epochs 130-132", and whether the weights are from before its end (a kept
    epoch, or a run stopped by --stop-minutes), where the rate had not reached 0; "" without a cool-down."""
    span = cooldown_span(cooldown)
    if span is None:
        return ""
    first, end = span
    words = "falling linearly to 0 over " + (f"epoch {end}" if first == end else f"epochs {first}-{end}")
    if isinstance(last_epoch, int) and last_epoch < end:
        words += f" (these weights are from epoch {last_epoch}, before it reached 0)"
    return words


# What a segment of training is recorded with (older checkpoints lack the later keys: read as unknown; a
# checkpoint without "processes" was trained in one; "device" says where, e.g. "CUDA (NVIDIA H100 80GB HBM3)";
# the copy_* keys are training.augment's settings; cooldown the first and last epoch of the cool-down).
RECIPE_KEYS = ("lr_factor", "warmup", "max_tokens", "bf16", "dropout", "label_smoothing", "corpus", "processes",
               "device", "copy_augment", "copy_made_up", "copy_codes", "copy_subjects", "copy_fresh",
               "cooldown", "train_sources", "bpe_dropout", "bpe_dropout_sides", "align_copies", "align_head")


def training_segments(meta: dict) -> list[dict]:
    """The stretches a checkpoint was trained in, oldest first, from its meta.

    Each continuation (``training.train --init-from``) records the earlier run's recipe as
    ``continued_from`` (chained through ``earlier``), so a curve with several restarts can still say
    which learning-rate factor, warm-up and batch size held where. Each segment: first_step,
    last_step, first_epoch, last_epoch, the RECIPE_KEYS and widened_ff ([old, new] d_ff when the segment began by
    widening the model's FFNs, training.grow; else None).
    """
    chain, before = [], meta.get("continued_from")
    while before:
        chain.append(before)
        before = before.get("earlier")
    segments, step, epoch, widened = [], 0, 0, None
    for part in [*reversed(chain), {"step": meta.get("steps"), "epoch": meta.get("epochs"), **meta}]:
        segments.append({"first_step": step + 1, "last_step": part.get("step"), "first_epoch": epoch + 1,
                         "last_epoch": part.get("epoch"), **{k: part.get(k) for k in RECIPE_KEYS},
                         "widened_ff": widened})
        step, epoch = part.get("step") or 0, part.get("epoch") or 0
        widened = part.get("feed_forward_after")  # [old d_ff, new]: the next segment began by widening the FFNs
    return segments
