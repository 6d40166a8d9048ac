"""Integrated gradients (Sundararajan et al., 2017) and gradient x input over the input embeddings of one decoding
step, for one output piece or for the contrastive question "why this piece and not that one".

What is attributed: f = log p(piece | prefix, source), or f = log p(chosen) - log p(alternative) (contrastive, as
inseq's contrastive attribution asks it), at the step that reads the decoder prefix (the start token and the pieces
before it). The inputs are the token vectors x = E[id] x scale of every source piece and every prefix piece; the
positional encodings, the embedding norm (BART) and the masks are kept as they are, so what moves is which word
stands at a place, not the place.

- Gradient x input: x_i . df/dx_i per piece (the gradient at x, times x, summed over the embedding dimension): one
  forward and backward, a first-order estimate of f(x) - f(0).
- Integrated gradients: IG_i = (x_i - x'_i) . integral over a in [0, 1] of df/dx_i(x' + a (x - x')) da, the
  integral taken by Gauss-Legendre quadrature with ``steps`` nodes (Captum's default method, "gausslegendre"):
  ``steps`` forward and backward passes. Completeness: the attributions sum to f(x) - f(x'); what they miss (the
  completeness gap) is the quadrature's error and shrinks as the steps grow, provided f is smooth along the path.
- The baseline x' (``baseline_vectors``): zero token vectors where the model adds a position code (a sentence of
  "no word" at the same places). A model without one (T5: relative positions) would then read all-zero vectors,
  where every activation is zero and each RMSNorm x / sqrt(mean(x^2) + eps) blows a tiny input up by up to
  1/sqrt(eps): stacked norms lift the residual stream to full size for any a above about 1e-10, so f(a x) has a jump
  at a = 0 that no quadrature samples, and the gap tends to f(0+) - f(0), not to 0. Its baseline is the mean token
  vector at every place instead (the start piece kept: every output begins with it, and a converted T5's is the
  <pad> row, zero in a model never trained), and no point of the path is near zero.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from model.network.masks import padding_mask
from model.network.transformer import Transformer
from model.serving.inference import StopSignal, check_stop

BASELINE = "zero token vectors, positional encodings kept"
MEAN_BASELINE = "the mean token vector at every place, the start piece kept (no position code to keep: zero vectors "\
                "are where this model's RMS norms jump)"
METHOD = "gausslegendre"  # Captum's name for the quadrature below
DEFAULT_STEPS = 32
MAX_STEPS = 256
BATCH_ROWS = 16  # interpolation points run as one batch: bounds the activations held for the backward pass

Objective = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]  # (source [B, S, D], prefix [B, T, D]) -> f [B]


@dataclass(frozen=True)
class Attributions:
    """Per piece attributions of f at one step: source [S] (the source pieces) and prefix [T] (the decoder's start
    token and the pieces written before the step), in the units of f (log-probability). ``value`` is f(x),
    ``baseline_value`` f(x') (IG's baseline; 0 input for gradient x input), ``steps`` the quadrature's nodes (0 for
    gradient x input), ``baseline`` what x' is, in words."""

    source: torch.Tensor
    prefix: torch.Tensor
    value: float
    baseline_value: float
    steps: int
    baseline: str = BASELINE

    @property
    def total(self) -> float:
        """The sum of every attribution."""
        return float(self.source.sum() + self.prefix.sum())

    @property
    def gap(self) -> float:
        """Completeness gap: sum of attributions - (f(x) - f(x')); 0 for exact integrated gradients."""
        return self.total - (self.value - self.baseline_value)


def input_vectors(model: Transformer, source_ids: Sequence[int], prefix_ids: Sequence[int]
                  ) -> tuple[torch.Tensor, torch.Tensor]:
    """The token vectors attributed: source [1, S, D] and prefix [1, T, D], E[id] x the model's embedding scale."""
    device = model.embed.token.weight.device
    embed = model.embed
    source = embed.token(torch.tensor([list(source_ids)], device=device)) * embed.scale  # [1, S, D]
    prefix = embed.token(torch.tensor([list(prefix_ids)], device=device)) * embed.scale  # [1, T, D]
    return source.detach(), prefix.detach()


def zero_is_safe(model: Transformer) -> bool:
    """Whether zero token vectors make a smooth baseline: the model adds a position code (absolute positions) before
    its first norm, so the path never reads all-zero vectors. T5 adds none (module docstring)."""
    return bool(model.embed.absolute)


def baseline_name(model: Transformer) -> str:
    """The baseline ``baseline_vectors`` builds for this model, in words (shown beside the attributions)."""
    return BASELINE if zero_is_safe(model) else MEAN_BASELINE


def baseline_vectors(model: Transformer, source: torch.Tensor, prefix: torch.Tensor
                     ) -> tuple[torch.Tensor, torch.Tensor]:
    """IG's baseline x' for the token vectors source [B, S, D] and prefix [B, T, D] (``input_vectors``): zeros, or,
    for a model without a position code, the mean of the embedding's rows x scale at every place but the prefix's
    first (the start piece, kept as it is)."""
    if zero_is_safe(model):
        return torch.zeros_like(source), torch.zeros_like(prefix)
    embed = model.embed
    mean = (embed.token.weight.mean(0) * embed.scale).detach().to(source.dtype)  # [D]
    prefix_base = mean.expand_as(prefix).clone()  # [B, T, D]
    prefix_base[:, 0] = prefix[:, 0]
    return mean.expand_as(source).clone(), prefix_base  # [B, S, D], [B, T, D]


def step_log_probs(model: Transformer, source_ids: Sequence[int], prefix_ids: Sequence[int]
                   ) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
    """The step as a function of the token vectors: (source [B, S, D], prefix [B, T, D]) -> log-probs [B, V] of the
    piece after the prefix. The model's own modules in the forward pass's order (Embeddings.from_vectors adds the
    positions); masks come from the ids, so a baseline never changes what may attend to what."""
    device = model.embed.token.weight.device
    source = torch.tensor([list(source_ids)], device=device)  # [1, S]
    prefix = torch.tensor([list(prefix_ids)], device=device)  # [1, T]
    src_mask = padding_mask(source, model.config.pad_id)  # [1, 1, 1, S]
    tgt_mask = model.target_mask(prefix)  # [1, 1, T, T]

    def log_probs(source_vectors: torch.Tensor, prefix_vectors: torch.Tensor) -> torch.Tensor:
        memory, _ = model.encoder(model.embed.from_vectors(source_vectors), src_mask)  # [B, S, D]
        hidden, _, _ = model.decoder(model.embed.from_vectors(prefix_vectors, side="decoder"),
                                     model.memory_key_values(memory), tgt_mask, src_mask)  # [B, T, D]
        logits = model.logits(hidden[:, -1])  # [B, V]
        return logits.to(torch.promote_types(logits.dtype, torch.float32)).log_softmax(dim=-1)
    return log_probs


def objective(model: Transformer, source_ids: Sequence[int], prefix_ids: Sequence[int], piece: int,
              alternative: int | None = None) -> Objective:
    """f of the token vectors: log p(piece) after the prefix, or log p(piece) - log p(alternative) -> [B]."""
    log_probs = step_log_probs(model, source_ids, prefix_ids)

    def f(source_vectors: torch.Tensor, prefix_vectors: torch.Tensor) -> torch.Tensor:
        out = log_probs(source_vectors, prefix_vectors)  # [B, V]
        return out[:, piece] if alternative is None else out[:, piece] - out[:, alternative]
    return f


def gauss_legendre(steps: int) -> tuple[np.ndarray, np.ndarray]:
    """Nodes a in (0, 1) and weights (summing to 1) of ``steps``-point Gauss-Legendre quadrature on [0, 1], as
    Captum's "gausslegendre" builds them."""
    nodes, weights = np.polynomial.legendre.leggauss(steps)
    return 0.5 * (1 + nodes), 0.5 * weights


def _checked(model: Transformer, source_ids: Sequence[int], prefix_ids: Sequence[int], pieces: Sequence[int]) -> None:
    vocab = model.config.vocab_size
    if not source_ids or not prefix_ids:
        raise ValueError("attribution needs a source and a prefix (at least the start token)")
    if not all(0 <= i < vocab for i in [*source_ids, *prefix_ids, *pieces]):
        raise ValueError(f"ids must be in [0, {vocab})")


def gradient_x_input(model: Transformer, source_ids: Sequence[int], prefix_ids: Sequence[int], piece: int,
                     alternative: int | None = None) -> Attributions:
    """x_i . df/dx_i per source and prefix piece (f: ``objective``), one forward and backward. Its baseline is the
    zero input, so ``total`` is the first-order estimate of f(x) - f(0)."""
    _checked(model, source_ids, prefix_ids, [piece] if alternative is None else [piece, alternative])
    f = objective(model, source_ids, prefix_ids, piece, alternative)
    source, prefix = input_vectors(model, source_ids, prefix_ids)
    with torch.enable_grad():
        inputs = source.clone().requires_grad_(), prefix.clone().requires_grad_()
        value = f(*inputs)  # [1]
        grads = torch.autograd.grad(value.sum(), inputs)
    with torch.no_grad():
        zero = float(f(torch.zeros_like(source), torch.zeros_like(prefix))[0])
    return Attributions(source=(grads[0] * source)[0].sum(-1).detach().cpu(),
                        prefix=(grads[1] * prefix)[0].sum(-1).detach().cpu(), value=float(value.detach()[0]),
                        baseline_value=zero, steps=0)


def integrated_gradients(model: Transformer, source_ids: Sequence[int], prefix_ids: Sequence[int], piece: int,
                         alternative: int | None = None, steps: int = DEFAULT_STEPS, batch_rows: int = BATCH_ROWS,
                         should_stop: StopSignal | None = None,
                         baseline: tuple[torch.Tensor, torch.Tensor] | None = None) -> Attributions:
    """Integrated gradients of f (``objective``) from the baseline x' (``baseline_vectors``, or ``baseline``: source
    [1, S, D] and prefix [1, T, D], to compare another) to the token vectors x, with ``steps`` Gauss-Legendre nodes run
    ``batch_rows`` at a time (``should_stop`` asked between batches). source_ids end with EOS, prefix_ids start with
    the start token; -> per piece attributions and the completeness gap."""
    if not 1 <= steps <= MAX_STEPS:
        raise ValueError(f"steps must be from 1 to {MAX_STEPS}, got {steps}")
    _checked(model, source_ids, prefix_ids, [piece] if alternative is None else [piece, alternative])
    f = objective(model, source_ids, prefix_ids, piece, alternative)
    source, prefix = input_vectors(model, source_ids, prefix_ids)  # [1, S, D], [1, T, D]
    base_source, base_prefix = baseline_vectors(model, source, prefix) if baseline is None else baseline  # [1, S|T, D]
    if base_source.shape != source.shape or base_prefix.shape != prefix.shape:
        raise ValueError(f"the baseline must have the inputs' shapes {tuple(source.shape)} and {tuple(prefix.shape)}")
    moved_source, moved_prefix = source - base_source, prefix - base_prefix  # [1, S, D], [1, T, D]: x - x'
    alphas, weights = gauss_legendre(steps)
    total_source, total_prefix = torch.zeros_like(source[0]), torch.zeros_like(prefix[0])  # [S, D], [T, D]
    for start in range(0, steps, batch_rows):
        check_stop(should_stop)
        a = torch.tensor(alphas[start:start + batch_rows], dtype=source.dtype, device=source.device)  # [b]
        w = torch.tensor(weights[start:start + batch_rows], dtype=source.dtype, device=source.device)  # [b]
        with torch.enable_grad():
            points = ((base_source + a[:, None, None] * moved_source).requires_grad_(),  # [b, S, D]
                      (base_prefix + a[:, None, None] * moved_prefix).requires_grad_())  # [b, T, D]
            grads = torch.autograd.grad(f(*points).sum(), points)  # [b, S, D], [b, T, D]
        total_source += (w[:, None, None] * grads[0]).sum(0)
        total_prefix += (w[:, None, None] * grads[1]).sum(0)
    with torch.no_grad():
        ends = f(torch.cat([source, base_source]), torch.cat([prefix, base_prefix]))  # [2]
    return Attributions(source=(total_source * moved_source[0]).sum(-1).cpu(),
                        prefix=(total_prefix * moved_prefix[0]).sum(-1).cpu(), value=float(ends[0]),
                        baseline_value=float(ends[1]), steps=steps,
                        baseline=baseline_name(model) if baseline is None else "the baseline given")
