"""What a checkpoint's training log (log.csv) says beyond its curves."""
from __future__ import annotations

import pandas as pd

from training.schedule import cooldown_words


def speed_by_stretch(log_df: pd.DataFrame, segments: list[dict]) -> pd.DataFrame:
    """The median tokens/s of each stretch of training that log.csv covers (one row per continuation), with where
    it ran: an H100's 400,000 tokens/s and a CPU's 2,000 are not one speed, nor are a model's before and after
    its FFNs were widened (training.grow)."""
    rows = []
    for seg in segments:
        last = seg["last_step"] if seg["last_step"] is not None else int(log_df["step"].max())
        part = log_df[(log_df["step"] >= seg["first_step"]) & (log_df["step"] <= last)]
        if not len(part):
            continue
        where = seg["device"] or "not recorded"
        if (seg["processes"] or 1) > 1:
            where += f", {seg['processes']} processes"
        if seg.get("widened_ff"):  # a bigger model from here on: slower per token on the same machine
            where += f", FFN widened from {seg['widened_ff'][0]:,} to {seg['widened_ff'][1]:,}"
        rows.append({"steps": f"{int(part['step'].min()):,}-{int(part['step'].max()):,}",
                     "epochs": f"{seg['first_epoch']}-{seg['last_epoch']}" if seg["last_epoch"] else "",
                     "where": where, "median tokens/s": f"{part['tokens_per_s'].median():,.0f}"})
    return pd.DataFrame(rows, columns=["steps", "epochs", "where", "median tokens/s"])


def cooldown_lines(segments: list[dict]) -> list[str]:
    """A line for each stretch of training with a cool-down (training.schedule.cooldown), which the curve of
    log.csv shows as a fall to 0 the paper's formula does not have."""
    return [f"A cool-down: the rate was multiplied by a factor {words}, so the weights settle instead of jittering "
            f"at the schedule's last rate (training.schedule.cooldown): the fall in the curve "
            + (f"up to step {seg['last_step']:,}." if isinstance(seg["last_step"], int) else "there.")
            for seg in segments if (words := cooldown_words(seg.get("cooldown"), seg["last_epoch"]))]
