"""Sinusoidal positional encoding (paper section 3.5), as a pure function that can be plotted without a model."""
from __future__ import annotations

import math

import torch

# The longest sequence (source or output, special pieces included) any model here will process. Sinusoidal
# encodings extend to every position, so a model runs past its configured max_len (the lengths it was built and
# trained for, with a visible note); this cap protects a shared server from a pasted book.
MAX_POSITIONS = 1024
HALVES = ("halves", "fairseq")  # the layouts that keep all sines first, then all cosines


def inverse_frequencies(d_model: int, dtype: torch.dtype = torch.float32, layout: str = "interleaved") -> torch.Tensor:
    """omega_i = 1 / 10000^(2i/d_model), the angular frequency of each sin/cos pair. -> [d_model/2].
    fairseq's (tensor2tensor's) table, which M2M100 and NLLB use, spaces them as 1 / 10000^(i/(d_model/2 - 1)), so
    that the last pair's frequency is exactly 1/10000."""
    if layout == "fairseq":
        half = d_model // 2
        return torch.exp(torch.arange(half, dtype=dtype) * (-math.log(10000.0) / max(half - 1, 1)))
    return torch.exp(torch.arange(0, d_model, 2, dtype=dtype) * (-math.log(10000.0) / d_model))


def sinusoidal_encoding(max_len: int, d_model: int, layout: str = "interleaved") -> torch.Tensor:
    """PE[pos, 2i] = sin(pos / 10000^(2i/d_model)), PE[pos, 2i+1] = cos(same). -> [max_len, d_model].

    Wavelengths run geometrically from 2*pi to 10000*2*pi, so for any offset k, PE[pos+k] is a
    linear function (a rotation per sin/cos pair) of PE[pos]: relative positions are learnable.
    ``layout="halves"`` holds the same values as Marian lays them out (Hugging Face's
    MarianSinusoidalPositionalEmbedding): all sines first, then all cosines, PE[pos, i] = sin, PE[pos, D/2 + i] = cos,
    computed in float64 as Marian does so that a converted model sees its own numbers. ``layout="fairseq"`` is
    M2M100's and NLLB's table: the same halves at fairseq's frequencies (inverse_frequencies), in float32 as they
    compute it.
    """
    if max_len < 1 or d_model < 2 or d_model % 2:
        raise ValueError(f"need max_len >= 1 and an even d_model >= 2, got {max_len}, {d_model}")
    if layout == "fairseq":
        angles = torch.arange(max_len, dtype=torch.float32)[:, None] * inverse_frequencies(d_model, layout=layout)
        return torch.cat([torch.sin(angles), torch.cos(angles)], dim=1)  # [max_len, D]
    if layout == "halves":
        position = torch.arange(max_len, dtype=torch.float64)[:, None]  # [max_len, 1]
        angles = position * inverse_frequencies(d_model, torch.float64)  # [max_len, D/2]
        return torch.cat([torch.sin(angles), torch.cos(angles)], dim=1).float()  # [max_len, D]
    if layout != "interleaved":
        raise ValueError(f"layout must be 'interleaved', 'halves' or 'fairseq', got {layout!r}")
    position = torch.arange(max_len, dtype=torch.float32)[:, None]  # [max_len, 1]
    angles = position * inverse_frequencies(d_model)  # [max_len, D/2]
    pe = torch.zeros(max_len, d_model)
    pe[:, 0::2] = torch.sin(angles)
    pe[:, 1::2] = torch.cos(angles)
    return pe  # [max_len, D]


def pair_dimensions(d_model: int, layout: str = "interleaved") -> tuple[torch.Tensor, torch.Tensor]:
    """Which dimensions hold the sine and the cosine of each frequency i: (sin_dims [D/2], cos_dims [D/2]);
    2i and 2i+1 in the paper's interleaved layout, i and D/2 + i in Marian's and fairseq's halves."""
    half = torch.arange(d_model // 2)
    return (half, half + d_model // 2) if layout in HALVES else (2 * half, 2 * half + 1)


def frequency_index(dimension: int, d_model: int, layout: str = "interleaved") -> int:
    """The frequency i (the pair) a dimension belongs to, in either layout."""
    return dimension % (d_model // 2) if layout in HALVES else dimension // 2


def wavelengths(d_model: int, layout: str = "interleaved") -> torch.Tensor:
    """Wavelength of each sin/cos pair, 2*pi * 10000^(2i/d_model) (fairseq's spacing for its layout). -> [d_model/2]."""
    return 2 * math.pi / inverse_frequencies(d_model, torch.float64, layout)
