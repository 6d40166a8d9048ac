"""A map of all heads: every head of every kind (encoder self, decoder self, cross) placed by how alike its attention
is to every other's over a few example sentences, named by what it measurably does; and, for one head, its queries and
keys in one plane.

Why a profile and not the rows themselves: heads of different kinds read different keys (an encoder head the source
from the source, a cross head the source from the output), so their rows cannot be compared cell by cell. Each row is
instead gathered into PROFILE_BINS by where its keys stand: a special piece (</s>, the start piece, padding), a
punctuation piece, or a content piece at an offset of -3 or less, -2, -1, 0, +1, +2, +3 or more from the query (self
attention: the query's own position; cross-attention: the proportional diagonal, round(q (S - 1) / (T - 1))). A head's
profile on a sentence is the mean of its rows' (rows that could see 2 keys or more). The distance of two heads is the
Jensen-Shannon divergence of their profiles, in nats (0 for the same profile, at most ln 2), averaged over the
example sentences; the map places the heads by classical MDS of its square root (the Jensen-Shannon distance, a
metric).

Each head is named by the largest of its measures (BEHAVIOURS), each in [0, 1] and pooled over the same rows: the
share of its weight on the previous piece, the next piece (encoder only: a decoder row cannot see it), itself, the
special pieces, punctuation, the aligned source pieces (cross only: the proportional diagonal +-1), and "broad", the
rows' entropy over ln(keys they could see) (1 = uniform).

The query-key plane (after AttentionViz, Yeh et al., 2023): a head's queries and keys of the example sentences, the
keys moved so their mean is the queries' mean (adding one vector c to every key adds q.c to every score of a row,
which the softmax ignores) and both scaled to the same mean length (q s and k / s keep every q.k), then projected on
their two principal axes (PCA by SVD): a query lies near the keys it scores high.
"""
from __future__ import annotations

import math
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from model.network.attention import Capture
from model.network.trace import KINDS, Head, Kind
from model.network.transformer import Transformer, shifted_right
from model.serving.inference import StopSignal, check_stop

OFFSETS = 3  # offsets -3..+3 get a bin each; beyond them, the outermost bins
PROFILE_BINS = ("special", "punctuation", *(f"offset {o:+d}" for o in range(-OFFSETS, OFFSETS + 1)))
BEHAVIOURS = ("previous piece", "next piece", "itself", "</s>", "punctuation", "aligned", "broad")
APPLIES: dict[str, tuple[Kind, ...]] = {  # which kinds each measure is defined for
    "previous piece": ("enc_self", "dec_self"), "next piece": ("enc_self",), "itself": ("enc_self", "dec_self"),
    "</s>": KINDS, "punctuation": KINDS, "aligned": ("cross",), "broad": KINDS}
LN2 = math.log(2.0)


@dataclass(frozen=True)
class Reading:
    """One example sentence read by the model in one teacher-forced forward of its own output, as numpy: per kind,
    the weights [L, H, Q, K], queries [L, H, Q, d_k] and keys [L, H, K, d_k] (a cross head's keys are the encoder
    output's), and its pieces: source (encoder queries and keys) and decoder input (decoder queries, decoder keys)."""

    source_ids: tuple[int, ...]
    input_ids: tuple[int, ...]
    source_pieces: tuple[str, ...]
    input_pieces: tuple[str, ...]
    weights: dict[str, np.ndarray]
    queries: dict[str, np.ndarray]
    keys: dict[str, np.ndarray]

    def query_pieces(self, kind: str) -> tuple[str, ...]:
        return self.source_pieces if kind == "enc_self" else self.input_pieces

    def key_pieces(self, kind: str) -> tuple[str, ...]:
        return self.input_pieces if kind == "dec_self" else self.source_pieces

    def key_ids(self, kind: str) -> tuple[int, ...]:
        return self.input_ids if kind == "dec_self" else self.source_ids


@torch.no_grad()
def read_sentence(model: Transformer, source_ids: Sequence[int], output_ids: Sequence[int],
                  source_pieces: Sequence[str], input_pieces: Sequence[str]) -> Reading:
    """One forward at Capture.INTERNALS of ``output_ids`` (ending with EOS, as decoded) after ``source_ids``; the
    decoder reads the start piece and output[:-1], named by ``input_pieces``."""
    device = model.embed.token.weight.device
    bos = model.config.bos_id
    input_ids = shifted_right(list(output_ids), bos)
    src = torch.tensor([list(source_ids)], device=device)  # [1, S]
    tgt = torch.tensor([input_ids], device=device)  # [1, T]
    _, trace = model(src, tgt, capture=Capture.INTERNALS)
    assert trace.internals is not None  # the INTERNALS capture keeps them
    if len(input_pieces) != len(input_ids) or len(source_pieces) != len(source_ids):
        raise ValueError("one piece per id: source_pieces name source_ids, input_pieces the decoder input")

    def stacked(kind: str, field: str) -> np.ndarray:
        return torch.stack([getattr(it, field)[0] for it in trace.internals[kind]]).float().cpu().numpy()
    return Reading(source_ids=tuple(source_ids), input_ids=tuple(input_ids), source_pieces=tuple(source_pieces),
                   input_pieces=tuple(input_pieces),
                   weights={kind: trace.weights(kind)[:, 0].float().cpu().numpy() for kind in KINDS},  # [L, H, Q, K]
                   queries={kind: stacked(kind, "q") for kind in KINDS},  # [L, H, Q, d_k]
                   keys={kind: stacked(kind, "k") for kind in KINDS})  # [L, H, K, d_k]


def is_punctuation(piece: str) -> bool:
    """A piece of punctuation only, once its word-start marks (sentencepiece's ▁, byte-level BPE's Ġ) are gone."""
    text = piece.replace("▁", "").replace("Ġ", "").strip()
    return bool(text) and all(unicodedata.category(c).startswith("P") for c in text)


def centre_keys(kind: Kind, n_queries: int, n_keys: int) -> np.ndarray:
    """The key each query stands over [Q]: itself for self-attention, the proportional diagonal for cross."""
    q = np.arange(n_queries)
    if kind != "cross":
        return q
    return np.rint(q * (n_keys - 1) / max(n_queries - 1, 1)).astype(int)


def visible(kind: Kind, n_queries: int, n_keys: int) -> np.ndarray:
    """Which keys each query may see [Q, K]: earlier positions and itself in the decoder, all keys otherwise."""
    if kind == "dec_self":
        return np.tril(np.ones((n_queries, n_keys), dtype=bool))
    return np.ones((n_queries, n_keys), dtype=bool)


def key_bins(kind: Kind, key_ids: Sequence[int], key_pieces: Sequence[str], n_queries: int,
             special_ids: frozenset[int]) -> np.ndarray:
    """The profile bin of every (query, key) [Q, K]: PROFILE_BINS' index."""
    special = np.array([i in special_ids for i in key_ids])  # [K]
    punct = np.array([is_punctuation(p) for p in key_pieces])  # [K]
    offset = np.arange(len(key_ids))[None] - centre_keys(kind, n_queries, len(key_ids))[:, None]  # [Q, K]
    bins = 2 + OFFSETS + np.clip(offset, -OFFSETS, OFFSETS)
    bins = np.where(punct[None], 1, bins)
    return np.where(special[None], 0, bins)


def valid_rows(kind: Kind, n_queries: int, n_keys: int) -> np.ndarray:
    """Rows [Q] that could see two keys or more: a row with one key has no choice to measure."""
    return visible(kind, n_queries, n_keys).sum(-1) >= 2


def profiles(weights: np.ndarray, bins: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Each head's rows gathered into the bins and averaged over the valid rows: weights [H, Q, K], bins [Q, K],
    rows bool [Q] -> [H, len(PROFILE_BINS)] (each sums to 1)."""
    one_hot = np.eye(len(PROFILE_BINS))[bins]  # [Q, K, B]
    per_row = np.einsum("hqk,qkb->hqb", weights.astype(np.float64), one_hot)  # [H, Q, B]
    return per_row[:, rows].mean(axis=1)


def js_divergence(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Jensen-Shannon divergence in nats of distributions along the last axis (broadcast): in [0, ln 2], symmetric,
    0 exactly where p = q."""
    p, q = np.asarray(p, dtype=np.float64), np.asarray(q, dtype=np.float64)
    m = (p + q) / 2

    def kl(a: np.ndarray) -> np.ndarray:
        # only where a > 0 (then m >= a / 2 > 0, so a / m <= 2); elsewhere the term is 0 and never divided
        a = np.broadcast_to(a, m.shape)
        ratio = np.divide(a, m, out=np.ones_like(m), where=a > 0)
        return np.where(a > 0, a * np.log(ratio), 0.0).sum(-1)
    return np.clip((kl(p) + kl(q)) / 2, 0.0, LN2)


def head_distances(head_profiles: np.ndarray) -> np.ndarray:
    """The map's distance of every pair of heads: head_profiles [sentences, N, B] -> mean over sentences of the
    Jensen-Shannon divergence [N, N] (nats, in [0, ln 2])."""
    return js_divergence(head_profiles[:, :, None], head_profiles[:, None, :]).mean(axis=0)


def classical_mds(distances: np.ndarray, dims: int = 2) -> tuple[np.ndarray, float]:
    """Torgerson's classical MDS of a symmetric distance matrix [N, N] -> (coordinates [N, dims], the share of the
    positive eigenvalues' sum the dims keep). Each axis is signed so that its largest coordinate is positive."""
    n = len(distances)
    centring = np.eye(n) - np.full((n, n), 1.0 / n)
    gram = -0.5 * centring @ (np.asarray(distances, dtype=np.float64) ** 2) @ centring  # [N, N]
    values, vectors = np.linalg.eigh((gram + gram.T) / 2)
    order = np.argsort(values)[::-1][:dims]
    kept = np.clip(values[order], 0.0, None)
    coords = vectors[:, order] * np.sqrt(kept)  # [N, dims]
    for axis in range(coords.shape[1]):
        if coords[np.argmax(np.abs(coords[:, axis])), axis] < 0:
            coords[:, axis] *= -1
    positive = values[values > 0].sum()
    if coords.shape[1] < dims:
        coords = np.pad(coords, ((0, 0), (0, dims - coords.shape[1])))
    return coords, float(kept.sum() / positive) if positive > 0 else 1.0


@dataclass(frozen=True)
class HeadMap:
    """Every head (kind, layer, head) in kind, layer, head order, with: coords [N, 2] on the map, what share of the
    distances' spread the plane keeps (``explained``), distances [N, N] (nats), per measure of BEHAVIOURS its value
    [N] (NaN where it does not apply), each head's name (the largest measure) and that measure's value; and the
    example readings the map was measured on."""

    heads: tuple[Head, ...]
    coords: np.ndarray
    explained: float
    distances: np.ndarray
    measures: dict[str, np.ndarray]
    names: tuple[str, ...]
    scores: np.ndarray
    readings: tuple[Reading, ...]


def head_measures(readings: Sequence[Reading], special_ids: frozenset[int]) -> dict[str, dict[str, np.ndarray]]:
    """Per measure of BEHAVIOURS and per kind, its value for every head [L, H], pooled over the valid rows of every
    reading (NaN where it does not apply to the kind)."""
    out: dict[str, dict[str, np.ndarray]] = {name: {} for name in BEHAVIOURS}
    for kind in KINDS:
        sums: dict[str, np.ndarray] = {}
        rows = 0
        for r in readings:
            w = r.weights[kind].astype(np.float64)  # [L, H, Q, K]
            n_q, n_k = w.shape[-2:]
            ok = valid_rows(kind, n_q, n_k)
            see = visible(kind, n_q, n_k)
            q = np.arange(n_q)
            centre = centre_keys(kind, n_q, n_k)
            special = np.array([i in special_ids for i in r.key_ids(kind)])
            punct = np.array([is_punctuation(p) for p in r.key_pieces(kind)])
            k = np.arange(n_k)
            masks = {"previous piece": k[None] == (q - 1)[:, None], "next piece": k[None] == (q + 1)[:, None],
                     "itself": k[None] == q[:, None], "</s>": np.broadcast_to(special, (n_q, n_k)),
                     "punctuation": np.broadcast_to(punct, (n_q, n_k)),
                     "aligned": np.abs(k[None] - centre[:, None]) <= 1}
            values = {name: (w * mask).sum(-1) for name, mask in masks.items()}  # [L, H, Q]
            log = np.where(w > 0, np.log(np.where(w > 0, w, 1.0)), 0.0)
            values["broad"] = -(w * log).sum(-1) / np.log(np.maximum(see.sum(-1), 2))  # [L, H, Q]
            for name, value in values.items():
                sums[name] = sums.get(name, 0) + value[..., ok].sum(-1)
            rows += int(ok.sum())
        for name in BEHAVIOURS:
            value = sums[name] / max(rows, 1)
            out[name][kind] = value if kind in APPLIES[name] and rows else np.full_like(value, np.nan)
    return out


def head_map(readings: Sequence[Reading], special_ids: frozenset[int]) -> HeadMap:
    """The map of every head of the model that made ``readings`` (read_sentence), ``special_ids`` its special pieces
    (start, end, padding)."""
    if not readings:
        raise ValueError("a head map needs at least one example sentence")
    per_sentence = []
    for r in readings:
        rows = []
        for kind in KINDS:
            w = r.weights[kind]  # [L, H, Q, K]
            n_q, n_k = w.shape[-2:]
            bins = key_bins(kind, r.key_ids(kind), r.key_pieces(kind), n_q, special_ids)
            ok = valid_rows(kind, n_q, n_k)
            rows += [profiles(w[layer], bins, ok) for layer in range(w.shape[0])]  # each [H, B]
        per_sentence.append(np.concatenate(rows))  # [N, B]
    first = readings[0]
    heads: list[Head] = [(kind, layer, head) for kind in KINDS for layer in range(first.weights[kind].shape[0])
             for head in range(first.weights[kind].shape[1])]
    distances = head_distances(np.stack(per_sentence))  # [N, N]
    coords, explained = classical_mds(np.sqrt(distances))
    by_kind = head_measures(readings, special_ids)
    measures = {name: np.concatenate([by_kind[name][kind].ravel() for kind in KINDS]) for name in BEHAVIOURS}
    table = np.stack([measures[name] for name in BEHAVIOURS], axis=1)  # [N, M]
    best = np.nanargmax(table, axis=1)
    return HeadMap(heads=tuple(heads), coords=coords, explained=explained, distances=distances, measures=measures,
                   names=tuple(BEHAVIOURS[i] for i in best), scores=table[np.arange(len(heads)), best],
                   readings=tuple(readings))


def build_head_map(model: Transformer, sentences: Sequence[tuple[Sequence[int], Sequence[int], Sequence[str],
                                                                 Sequence[str]]],
                   should_stop: StopSignal | None = None) -> HeadMap:
    """read_sentence of every (source ids, output ids, source pieces, decoder input pieces), ``should_stop`` asked
    before each, then head_map."""
    readings = []
    for source_ids, output_ids, source_pieces, input_pieces in sentences:
        check_stop(should_stop)
        readings.append(read_sentence(model, source_ids, output_ids, source_pieces, input_pieces))
    cfg = model.config
    return head_map(readings, frozenset({cfg.bos_id, cfg.eos_id, cfg.pad_id}))


@dataclass(frozen=True)
class QueryKeyPlane:
    """A head's queries [n, 2] and keys [m, 2] in one plane, the share of their variance it keeps, and the
    translation (added to every key) and scale (queries x scale, keys / scale) applied before the projection."""

    queries: np.ndarray
    keys: np.ndarray
    explained: float
    key_shift: np.ndarray
    scale: float


def query_key_plane(queries: np.ndarray, keys: np.ndarray) -> QueryKeyPlane:
    """queries [n, d_k] and keys [m, d_k] of one head: keys moved to the queries' mean, both scaled to the same mean
    length (neither changes a softmax), then PCA of the two together by SVD -> QueryKeyPlane."""
    q, k = np.asarray(queries, dtype=np.float64), np.asarray(keys, dtype=np.float64)
    shift = q.mean(0) - k.mean(0)  # [d_k]
    k = k + shift
    q_norm, k_norm = np.linalg.norm(q, axis=1).mean(), np.linalg.norm(k, axis=1).mean()
    scale = math.sqrt(k_norm / q_norm) if q_norm > 0 and k_norm > 0 else 1.0
    q, k = q * scale, k / scale
    both = np.concatenate([q, k])  # [n + m, d_k]
    centred = both - both.mean(0)
    _, singular, vt = np.linalg.svd(centred, full_matrices=False)
    axes = vt[:2]  # [2, d_k]
    for i, axis in enumerate(axes):  # a sign that does not depend on the SVD routine
        if axis[np.argmax(np.abs(axis))] < 0:
            axes[i] = -axis
    projected = centred @ axes.T  # [n + m, 2]
    if projected.shape[1] < 2:
        projected = np.pad(projected, ((0, 0), (0, 2 - projected.shape[1])))
    variance = (singular ** 2).sum()
    explained = float((singular[:2] ** 2).sum() / variance) if variance > 0 else 1.0
    return QueryKeyPlane(queries=projected[:len(q)], keys=projected[len(q):], explained=explained, key_shift=shift,
                         scale=scale)
