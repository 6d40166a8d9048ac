"""Attribution through the layers: which source tokens an output piece draws on, measured three ways that
need not agree (raw attention weights alone are not an explanation, Jain & Wallace, 2019).

- Attention rollout (Abnar & Zuidema, 2020): the encoder's self-attention maps, each with the residual
  connection added as 0.5 I + 0.5 A, multiplied from layer 1 up; then composed with the cross-attention.
- Attention flow (the same paper): the same residual maps read as a flow network, each input token's share of
  a position the maximum flow that can reach it (scipy's max-flow, in C: the S^2 problems of a sentence would
  take seconds with a pure-Python solver).
- Norm-based attention (Kobayashi et al., 2020): a weight times the length of the vector it weighs,
  ||alpha_ij f(x_j)||, read from the forward pass at the "internals" capture level.
- Gradient x input (Shrikumar et al., 2016): how much each source embedding moves the log-probability of an
  output piece, from one batched backward pass through the model's own modules.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from scipy.sparse import csr_array
from scipy.sparse.csgraph import maximum_flow

from model.network.attention import Capture, MultiHeadAttention
from model.network.masks import padding_mask
from model.network.trace import KINDS, AttentionTrace, PerKind
from model.network.transformer import Transformer, shifted_right
from model.serving.inference import StopSignal, check_stop


def residual_attention(weights: torch.Tensor) -> torch.Tensor:
    """Self-attention weights [L, H, S, S] -> Â [L, S, S] in float64: Â_l = 0.5 I + 0.5 A_l with A_l the mean over
    heads (the residual connection carries a token's own vector past every layer), rows renormalised (a padded
    query's row of zeros becomes its own identity row)."""
    mean = weights.double().mean(dim=1)  # [L, S, S]
    eye = torch.eye(mean.size(-1), dtype=mean.dtype, device=mean.device)  # [S, S]
    residual = 0.5 * eye + 0.5 * mean  # [L, S, S]
    return residual / residual.sum(dim=-1, keepdim=True)  # [L, S, S]


def rollout(weights: torch.Tensor) -> torch.Tensor:
    """Attention rollout R = Â_L ... Â_1 of self-attention weights [L, H, S, S] -> [S, S], rows sum to 1.

    R[i, j] is how much input token j reaches position i of the last layer if attention were all that mixed.
    """
    residual = residual_attention(weights)  # [L, S, S]
    result = residual[0]  # [S, S]
    for layer in residual[1:]:
        result = layer @ result  # [S, S]
    return result.to(weights.dtype)


FLOW_SCALE = 1 << 20  # capacities become integers (scipy's max-flow is exact on them): a resolution of 1e-6
MAX_FLOW_PIECES = 40  # S^2 max-flow problems on (L + 1) S nodes: ~0.2 s at 20 pieces, ~1.5 s at 40, ~9 s at 64


def attention_graph(residual: np.ndarray) -> csr_array:
    """Abnar & Zuidema's attention graph of residual maps Â [L, S, S]: node l * S + i is position i after layer l
    (l = 0: the input tokens), with an edge (l + 1, i) -> (l, j) of capacity Â_l[i, j] in units of 1 / FLOW_SCALE."""
    n_layers, length, _ = residual.shape
    capacity = np.zeros(((n_layers + 1) * length, (n_layers + 1) * length), dtype=np.int32)
    for layer in range(n_layers):
        rows, cols = slice((layer + 1) * length, (layer + 2) * length), slice(layer * length, (layer + 1) * length)
        capacity[rows, cols] = np.rint(residual[layer] * FLOW_SCALE)  # [S, S]
    return csr_array(capacity)


def flow_values(residual: np.ndarray, should_stop: StopSignal | None = None) -> np.ndarray:
    """The maximum flow from each last-layer position i to each input token j through residual maps Â [L, S, S]
    -> [S, S], unnormalised (a value is at most 1: all that leaves a node is its row of Â)."""
    n_layers, length, _ = residual.shape
    graph = attention_graph(residual)
    top = n_layers * length
    values = []
    for i in range(length):  # one row of max-flow problems per position; the caller may stop between rows
        check_stop(should_stop)
        values.append([maximum_flow(graph, top + i, j).flow_value for j in range(length)])
    return np.asarray(values, dtype=np.float64) / FLOW_SCALE  # [S, S]


def attention_flow(weights: torch.Tensor, should_stop: StopSignal | None = None) -> torch.Tensor:
    """Attention flow of self-attention weights [L, H, S, S] -> [S, S], rows sum to 1 (Abnar & Zuidema, 2020).

    Where rollout multiplies the residual maps (every path counts, weighted by its product), flow treats each Â_l
    as pipe capacities and asks how much can reach position i of the last layer from input token j at most;
    each row is then normalised. Flow spreads credit more evenly than rollout and ties are common.
    """
    if weights.size(-1) > MAX_FLOW_PIECES:
        raise ValueError(f"attention flow solves S^2 max-flow problems; at most {MAX_FLOW_PIECES} pieces, "
                         f"not {weights.size(-1)}")
    values = flow_values(residual_attention(weights.cpu()).numpy(), should_stop)  # [S, S]
    return torch.from_numpy(values / values.sum(axis=-1, keepdims=True)).to(weights.dtype)


def decoder_source_attribution(cross: torch.Tensor, source_rollout: torch.Tensor) -> torch.Tensor:
    """Which input tokens each output piece reads: cross-attention weights [L, H, T, S] composed with the
    encoder rollout [S, S] -> [T, S], rows sum to 1.

    The rule: every decoder layer l reads the *final* encoder output through its cross-attention
    C_l = mean over heads [T, S], and the rollout R maps encoder output position j back to the input tokens,
    so output t gets (1/L) sum_l (C_l R)[t]. It leaves out what reaches t through the decoder's own
    self-attention (earlier output pieces that read the source themselves) and weighs the layers alike.
    """
    per_layer = cross.double().mean(dim=1) @ source_rollout.double()  # [L, T, S]
    return per_layer.mean(dim=0).to(cross.dtype)


def rollout_attribution(trace: AttentionTrace) -> tuple[torch.Tensor, torch.Tensor]:
    """Of one sentence's trace (batch row 0): the encoder rollout [S, S] and the decoder attribution [T, S]."""
    source_rollout = rollout(trace.weights("enc_self")[:, 0].cpu())  # [S, S]
    return source_rollout, decoder_source_attribution(trace.weights("cross")[:, 0].cpu(), source_rollout)


@dataclass(frozen=True)
class NormBased:
    """Kobayashi et al.'s view of one forward pass, per kind, batch dimension dropped.

    weights [L, H, Q, K] are the attention weights alpha; value_norms [L, H, K] = ||f^h(x_j)|| with
    f^h(x_j) = v^h_j W^O_h (head h's value, W^V bias included, through its d_k columns of W^O); per_head
    [L, H, Q, K] = ||alpha^h_ij f^h(x_j)|| = alpha^h_ij ||f^h(x_j)||; heads [L, Q, K] = ||sum_h alpha^h_ij
    f^h(x_j)||, what key j adds to query i's attention output (W^O's bias, added once, belongs to no key).
    """

    weights: PerKind[torch.Tensor]
    value_norms: PerKind[torch.Tensor]
    per_head: PerKind[torch.Tensor]
    heads: PerKind[torch.Tensor]


def attention_modules(model: Transformer, kind: str) -> list[MultiHeadAttention]:
    """The MultiHeadAttention modules of one kind, layer by layer."""
    if kind == "enc_self":
        return [layer.self_attn for layer in model.encoder.layers]
    if kind == "dec_self":
        return [layer.self_attn for layer in model.decoder.layers]
    return [layer.cross_attn for layer in model.decoder.layers]


def transformed_values(values: torch.Tensor, w_o: torch.Tensor) -> torch.Tensor:
    """f^h(x_j) = v^h_j W^O_h: values [H, K, d_k] through each head's slice of W^O (w_o.weight [D, D], head h
    uses input columns h*d_k:(h+1)*d_k) -> [H, K, D]."""
    n_heads, _, d_k = values.shape
    per_head = w_o.view(w_o.size(0), n_heads, d_k).permute(1, 2, 0)  # [H, d_k, D]
    return values @ per_head  # [H, K, D]


@torch.no_grad()
def norm_based(model: Transformer, source_ids: Sequence[int], decoder_input_ids: Sequence[int]) -> NormBased:
    """Run the teacher-forced forward at the "internals" level (eval: no dropout) and weigh every attention
    weight by the norm of the vector it weighs. source_ids end with EOS, decoder_input_ids start with BOS."""
    device = model.embed.token.weight.device
    src = torch.tensor([list(source_ids)], device=device)  # [1, S]
    tgt = torch.tensor([list(decoder_input_ids)], device=device)  # [1, T]
    _, trace = model(src, tgt, capture=Capture.INTERNALS)
    parts: dict[str, dict[str, list[torch.Tensor]]] = {name: {} for name in ("weights", "value", "head", "heads")}
    for kind in KINDS:
        for name in parts:
            parts[name][kind] = []
        for layer, module in enumerate(attention_modules(model, kind)):
            alpha = trace.weights(kind)[layer, 0].float()  # [H, Q, K]
            f = transformed_values(trace.internals[kind][layer].v[0].float(), module.w_o.weight.float())  # [H, K, D]
            norms = f.norm(dim=-1)  # [H, K]
            parts["weights"][kind].append(alpha)
            parts["value"][kind].append(norms)
            parts["head"][kind].append(alpha * norms[:, None, :])  # [H, Q, K]
            parts["heads"][kind].append(torch.einsum("hqk,hkd->qkd", alpha, f).norm(dim=-1))  # [Q, K]

    def stack(kinds: dict[str, list[torch.Tensor]]) -> PerKind[torch.Tensor]:
        return PerKind.build(lambda kind: torch.stack(kinds[kind]).cpu())
    stacked = {name: stack(kinds) for name, kinds in parts.items()}
    return NormBased(weights=stacked["weights"], value_norms=stacked["value"], per_head=stacked["head"],
                     heads=stacked["heads"])


def decoder_states_from_source_embeddings(model: Transformer, embeddings: torch.Tensor, source: torch.Tensor,
                                          decoder_input: torch.Tensor) -> torch.Tensor:
    """The teacher-forced forward of ``Transformer.forward`` started from given source embeddings instead of
    ids, up to the decoder's output: embeddings [B, S, D] (model.embed(source), possibly requiring grad),
    source [B, S] (for its padding mask), decoder_input [B, T] -> hidden [B, T, D] (model.logits makes them
    logits).

    Not a second implementation: it calls the forward pass's own modules in its own order (padding mask,
    encoder, cross-attention keys/values, decoder on model.embed of the decoder input); only the source
    embedding lookup is lifted out, so that a gradient can stop at the embedded vectors.
    """
    src_mask = padding_mask(source, model.config.pad_id)  # [B, 1, 1, S]
    memory, _ = model.encoder(embeddings, src_mask)  # [B, S, D]
    tgt_mask = model.target_mask(decoder_input)  # [B, 1, T, T]: Marian's start token is never padding
    hidden, _, _ = model.decoder(model.embed(decoder_input, side="decoder"), model.memory_key_values(memory), tgt_mask,
                                 src_mask)
    return hidden  # [B, T, D]


def gradient_x_input(model: Transformer, source_ids: Sequence[int], output_ids: Sequence[int]) -> torch.Tensor:
    """Gradient x input saliency [T, S]: for output piece t and source position j, the sum over the embedding
    dimension of d log P(y_t | y_<t, x) / d x_j times x_j, where x_j = E[x_j] sqrt(d_model) + PE_j is the
    vector the encoder reads (token and position). The embedding matrix is shared with the decoder and the
    output layer, so the gradient is taken w.r.t. these vectors, not the matrix. Signed: positive means the
    vector pushes the piece's probability up; summed over j it is the first-order (Taylor) estimate of how
    log P(y_t) would change if every source vector were zero.

    One forward and backward with a batch of T copies of the sentence: copy t back-propagates piece t only.
    """
    device = model.embed.token.weight.device
    length = len(output_ids)
    source = torch.tensor([list(source_ids)], device=device).expand(length, -1)  # [T, S]
    decoder_input = torch.tensor([shifted_right(output_ids, model.config.bos_id)],
                                 device=device).expand(length, -1)  # [T, T]
    rows = torch.arange(length, device=device)
    target = torch.tensor(list(output_ids), device=device)  # [T]
    with torch.enable_grad():
        embeddings = model.embed(source).detach().requires_grad_()  # [T, S, D]
        hidden = decoder_states_from_source_embeddings(model, embeddings, source, decoder_input)  # [T, T, D]
        logits = model.logits(hidden[rows, rows])  # [T, V]: copy t, position t
        log_probs = logits.to(torch.promote_types(logits.dtype, torch.float32)).log_softmax(dim=-1)  # [T, V]
        (grad,) = torch.autograd.grad(log_probs[rows, target].sum(), embeddings)  # [T, S, D]
    return (grad * embeddings.detach()).sum(dim=-1).cpu()  # [T, S]


def shares(values: torch.Tensor) -> torch.Tensor:
    """Each row's absolute values as shares of the row's total [..., S] -> [..., S] (rows sum to 1; a row of
    zeros stays zeros): how three methods with different units are put on one scale."""
    magnitude = values.double().abs()
    total = magnitude.sum(dim=-1, keepdim=True)
    return torch.where(total > 0, magnitude / total.clamp_min(1e-300), magnitude).to(values.dtype)


@dataclass(frozen=True)
class Agreement:
    """Where the methods agree on each output piece's most important source position.

    top [M, T] is each method's arg-max source position per output piece (methods in the order given);
    all_agree [T] whether every method picks the same one; pairwise [M, M] the share of output pieces on
    which two methods pick the same position.
    """

    methods: tuple[str, ...]
    top: torch.Tensor
    all_agree: torch.Tensor
    pairwise: torch.Tensor


def agreement(maps: dict[str, torch.Tensor]) -> Agreement:
    """Compare attribution maps [T, S] of one sentence (by the absolute value of each cell)."""
    methods = tuple(maps)
    top = torch.stack([maps[m].abs().argmax(dim=-1) for m in methods])  # [M, T]
    same = top[:, None, :] == top[None, :, :]  # [M, M, T]
    return Agreement(methods=methods, top=top, all_agree=(top == top[:1]).all(dim=0),
                     pairwise=same.double().mean(dim=-1))


ROLLOUT, NORM_BASED, SALIENCY = "attention rollout", "norm-based", "gradient × input"


def norm_based_source_shares(norms: NormBased) -> torch.Tensor:
    """Kobayashi's view of the cross-attention as one [T, S] map: ||sum_h alpha f^h(x_j)|| (all heads together),
    mean over decoder layers, as row shares. Its columns are final encoder output positions, not input tokens."""
    return shares(norms.heads["cross"].mean(dim=0))  # [T, S]


@dataclass(frozen=True)
class Attribution:
    """One sentence attributed three ways, all from the teacher-forced forward of its output.

    norms: the norm-based view of every attention call; source_rollout [S, S] the encoder rollout and
    source_flow [S, S] its attention flow (None past MAX_FLOW_PIECES source pieces); maps:
    per method (ROLLOUT, NORM_BASED, SALIENCY) a [T, S] map, row t for output piece t (rollout composed with
    the cross-attention, norm shares, signed gradient x input); agreement of the three on each row's top source.
    """

    norms: NormBased
    source_rollout: torch.Tensor
    source_flow: torch.Tensor | None
    maps: dict[str, torch.Tensor]
    agreement: Agreement


def attribute(model: Transformer, source_ids: Sequence[int], output_ids: Sequence[int],
              should_stop: StopSignal | None = None) -> Attribution:
    """The three attributions of ``output_ids`` (ending with EOS, as decoded) to ``source_ids`` (ending with EOS):
    one forward at the "internals" level for rollout, flow and norms, one batched backward for the saliency; the
    flow's rows of max-flow problems ask ``should_stop`` between them."""
    norms = norm_based(model, source_ids, shifted_right(output_ids, model.config.bos_id))
    source_rollout = rollout(norms.weights["enc_self"])  # [S, S]
    check_stop(should_stop)
    maps = {ROLLOUT: decoder_source_attribution(norms.weights["cross"], source_rollout),
            NORM_BASED: norm_based_source_shares(norms),
            SALIENCY: gradient_x_input(model, source_ids, output_ids).float()}
    check_stop(should_stop)
    encoder = norms.weights["enc_self"]  # [L, H, S, S]
    source_flow = attention_flow(encoder, should_stop) if encoder.size(-1) <= MAX_FLOW_PIECES else None
    return Attribution(norms=norms, source_rollout=source_rollout, source_flow=source_flow, maps=maps,
                       agreement=agreement(maps))
