"""The Positional encoding page: why sinusoidal offsets are a linear map, how positions resemble each other,
and what the first layer of the current sentence reads (token embedding x sqrt(d_model) + PE)."""
from __future__ import annotations

import torch

from model.network.positional import inverse_frequencies, pair_dimensions, sinusoidal_encoding
from model.network.relative_position import relative_buckets
from model.network.transformer import Transformer


def pe_similarity(max_len: int, d_model: int, layout: str = "interleaved") -> torch.Tensor:
    """Dot products of every pair of positional encodings, PE PE^T. -> [max_len, max_len].

    Depends only on the offset between the two positions (sum of cos(w_i * offset)), which is why
    the band structure is the same along every diagonal.
    """
    pe = sinusoidal_encoding(max_len, d_model, layout)  # [P, D]
    return pe @ pe.T  # [P, P]


def offset_map(d_model: int, offset: int, layout: str = "interleaved") -> torch.Tensor:
    """The matrix M_k with PE[p + k] = PE[p] @ M_k for every position p. -> [D, D].

    Block diagonal: one 2x2 rotation by angle w_i * k per (sin, cos) pair, from
    sin(a + b) = sin a cos b + cos a sin b and cos(a + b) = cos a cos b - sin a sin b.
    """
    angle = inverse_frequencies(d_model, torch.float64, layout) * offset  # [D/2]
    m = torch.zeros(d_model, d_model, dtype=torch.float64)
    sin, cos = pair_dimensions(d_model, layout)  # [D/2] each: the dimensions of each pair
    m[sin, sin], m[cos, sin] = torch.cos(angle), torch.sin(angle)
    m[sin, cos], m[cos, cos] = -torch.sin(angle), torch.cos(angle)
    return m


def offset_error(max_len: int, d_model: int, offset: int, layout: str = "interleaved") -> float:
    """Largest |PE[p + k] - PE[p] @ M_k| over all positions that fit: float32 rounding, about 1e-6."""
    pe = sinusoidal_encoding(max_len, d_model, layout).double()  # [P, D]
    if not 0 < offset < max_len:
        raise ValueError(f"offset must be in [1, {max_len}), got {offset}")
    shifted = pe[:-offset] @ offset_map(d_model, offset, layout)  # [P - k, D]
    return float((pe[offset:] - shifted).abs().max())


@torch.no_grad()
def learned_positions(model: Transformer, n: int, side: str = "encoder") -> torch.Tensor:
    """The first ``n`` rows a learned-position model's ``side`` stack reads (BART: rows 2..n+1 of its table)
    -> [n, D]."""
    return model.embed.positions(0, min(n, model.config.position_limit), side).detach().cpu()


@torch.no_grad()
def embedding_parts(model: Transformer, ids: list[int]) -> dict[str, torch.Tensor]:
    """What the encoder's first layer reads, before dropout: token [L, D] = E[ids] * sqrt(d_model) (unscaled where
    the config says so), positional [L, D] = PE[0..L-1] (or the learned table's rows), and their sum [L, D] (after
    the embedding LayerNorm of a model that has one, as the layer reads it)."""
    index = torch.tensor(ids, device=model.embed.token.weight.device)
    token = model.embed.token(index) * model.embed.scale  # [L, D]
    total = model.embed(index[None])[0]  # [L, D]: the same sum, through the module the encoder calls
    if not model.embed.absolute:  # T5 adds no position code: layer 1 reads the token embedding alone
        return {"token": token.cpu(), "sum": total.cpu()}
    positional = model.embed.positions(0, len(ids))  # [L, D]
    return {"token": token.cpu(), "positional": positional.cpu(), "sum": total.cpu()}


@torch.no_grad()
def relative_bias_by_offset(model: Transformer, side: str, reach: int) -> tuple[torch.Tensor, torch.Tensor]:
    """What a T5 stack's self-attention adds to a score for each offset key - query in [-reach, reach]: (offsets
    [2R+1], bias [H, 2R+1]); the bucket of each offset looked up in the stack's table. A decoder never sees a
    later key: its positive offsets read the bucket of 0, and its causal mask hides them anyway."""
    stack = model.encoder if side == "encoder" else model.decoder
    bias = stack.relative_bias  # model.network.relative_position.RelativePositionBias
    if bias is None:
        raise ValueError(f"the {side} stack has no relative position bias (positional_layout is not 'relative')")
    offsets = torch.arange(-reach, reach + 1, device=bias.table.weight.device)  # [2R+1]
    buckets = relative_buckets(offsets, bias.bidirectional, bias.n_buckets, bias.max_distance)  # [2R+1]
    return offsets.cpu(), bias.table(buckets).T.cpu()  # [H, 2R+1]


