"""Grow a trained model instead of training a bigger one from scratch: widen its position-wise FFNs.

Whether more capacity helps the shipped en-de model is a question for its validation split, and a bigger model
from scratch costs the ~100 epochs this one took before it can answer. Widening each FFN (paper 3.3,
FFN(x) = max(0, x W1 + b1) W2 + b2) from d_ff to a larger d_ff' keeps everything it learned, the way Net2Net
(Chen et al., 2016) grows a network without changing its function:

- the old hidden units keep their rows of W1 and b1 and their columns of W2;
- each new unit gets a fresh row of W1 (drawn like ``nn.Linear``'s own; of the gate too in a gated FFN), a zero
  bias and a **zero column of W2**, so it adds exactly 0 to the output whatever its activation: the widened model
  computes what the old one did.

Training then moves the new columns of W2 off zero first (their gradient is the new units' activation times the
output's gradient), and from then on the new rows of W1 learn as well. Attention is untouched: the heads, their
maps and every snapshot of earlier epochs keep their shapes.
"""
from __future__ import annotations

from dataclasses import replace

import torch

from model.network.layers import PositionwiseFeedForward
from model.network.transformer import Transformer


def widen_feed_forward(model: Transformer, d_ff: int, seed: int = 0) -> Transformer:
    """A new model whose every FFN has ``d_ff`` hidden units and which computes exactly what ``model`` does."""
    old = model.config.d_ff
    if d_ff < old:
        raise ValueError(f"an FFN can only be widened: d_ff {d_ff} is below the model's {old}")
    wide = Transformer(replace(model.config, d_ff=d_ff))
    state = model.state_dict()
    fresh = torch.Generator().manual_seed(seed)
    for name, module in wide.named_modules():
        if not isinstance(module, PositionwiseFeedForward):
            continue
        for into in ("linear1", "gate") if module.gate is not None else ("linear1",):  # the maps into the units
            w = state[f"{name}.{into}.weight"]  # [old, D]
            bound = w.shape[1] ** -0.5  # nn.Linear's default: U(-1/sqrt(fan_in), 1/sqrt(fan_in))
            rows = (torch.rand(d_ff - old, w.shape[1], generator=fresh) * 2 - 1) * bound  # [d_ff - old, D]
            state[f"{name}.{into}.weight"] = torch.cat([w, rows.to(w)])  # [d_ff, D]
            if f"{name}.{into}.bias" in state:
                b = state[f"{name}.{into}.bias"]  # [old]
                state[f"{name}.{into}.bias"] = torch.cat([b, b.new_zeros(d_ff - old)])  # [d_ff]
        w2 = state[f"{name}.linear2.weight"]  # [D, old]
        state[f"{name}.linear2.weight"] = torch.cat([w2, w2.new_zeros(w2.shape[0], d_ff - old)], dim=1)  # [D, d_ff]
    wide.load_state_dict(state)
    return wide.train(model.training)
