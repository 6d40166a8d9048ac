"""Weights laid out for decoding on the CPU: every matrix that multiplies a hidden state is stored column-major.

A linear map keeps its weight as [out, in] and computes x @ W^T. Row-major (PyTorch's default), that hands the BLAS
a transposed right-hand side, and for the few rows a decoding step multiplies (one per hypothesis) MKL is markedly
slower that way: beam 4's output layer, 4 x 256 @ 256 x 8,000, took 693 us against 410 us with W^T contiguous; one
row 1.0-1.2x faster; a training batch of 512 rows even (0.98-1.02x) (benchmarks/results/2026-11-28-app-path.md,
"Remedy: weights stored column-major"). The same values, shape [out, in] and Parameter objects (a tied embedding
stays tied): only the storage order changes, with no copy kept and nothing done per call. Results may differ from
the row-major product in the last bits of float32 (summation order), as between any two BLAS kernels, and, unlike it
here, between thread counts: 3.6e-7 at most on en-de's cross-attention between 1 and 2 threads.
"""
from __future__ import annotations

import torch
from torch import nn


def column_major(weight: torch.Tensor) -> torch.Tensor:
    """``weight`` [out, in] with the same values, stored so that its transpose [in, out] is contiguous."""
    return weight.t().contiguous().t()  # [out, in], strides (1, out)


def lay_out_for_decoding(model: nn.Module) -> nn.Module:
    """Store, in place, the weights of every nn.Linear and the token embeddings (the output layer of a model that
    ties them) column-major; returns ``model``. Meant for a model loaded to decode on the CPU: an embedding lookup
    then gathers strided rows, a few per step, which costs far less than the output layer gains."""
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, nn.Linear | nn.Embedding):
                module.weight.data = column_major(module.weight.data)
    return model
