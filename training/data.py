"""Training data: the parallel corpus, the synthetic reversal task, and length-bucketed token batches."""
from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import pandas as pd
import sentencepiece as spm
import torch

from model.network.transformer import shifted_right
from model.serving.inference import pad_batch
from model.tokenization.joint import Tokenizer
from model.tokenization.kinds import TextTokenizer

Pair = tuple[list[int], list[int]]  # (source ids ending in EOS, target ids ending in EOS)
LETTERS = "abcdefghijklmnopqrstuvwxyz"


def load_corpus(path: str | Path) -> pd.DataFrame:
    """The committed corpus: a gzip TSV with columns source, split, en, de."""
    frame = pd.read_csv(path, sep="\t", dtype=str, keep_default_na=False)
    missing = {"source", "split", "en", "de"} - set(frame.columns)
    if missing:
        raise ValueError(f"{path} lacks columns {sorted(missing)}")
    return frame


def reversal_corpus(n_train: int = 20000, n_valid: int = 500, n_test: int = 500, min_len: int = 3,
                    max_len: int = 12, seed: int = 0) -> pd.DataFrame:
    """Random letter strings ("q w e r") and their mirror ("r e w q"): a task whose correct
    cross-attention is known exactly (output i must look at source position n-1-i)."""
    rng = random.Random(seed)
    rows, seen = [], set()
    for split, count in (("test", n_test), ("valid", n_valid), ("train", n_train)):
        while count:
            letters = [rng.choice(LETTERS) for _ in range(rng.randint(min_len, max_len))]
            text = " ".join(letters)
            if text in seen:
                continue
            seen.add(text)
            rows.append({"source": "reverse", "split": split, "en": text, "de": " ".join(reversed(letters))})
            count -= 1
    return pd.DataFrame(rows)


def encode_pairs(tokenizer: TextTokenizer, sources: Sequence[str], targets: Sequence[str], max_len: int,
                 bpe_dropout: float = 0.0, seed: int = 0, sides: Literal["both", "source"] = "both") -> list[Pair]:
    """Tokenize parallel sentences, EOS-terminated, dropping pairs longer than max_len on either side.

    ``bpe_dropout`` > 0 segments the pairs as BPE-dropout does (Provilkov et al., 2020: each merge skipped with
    that probability, sentencepiece's sampling), reproducibly for a ``seed``: a word is then seen in many spellings
    of smaller pieces, as a rare name is, so the model learns to carry pieces over rather than one segmentation.
    ``sides`` "both" samples source and target, "source" the source only (the decoder keeps writing the pieces
    inference writes)."""
    if sides not in ("both", "source"):
        raise ValueError(f"sides is 'both' or 'source', not {sides!r}")
    if bpe_dropout > 0:
        spm.set_random_generator_seed(seed)

    def sampled(text: str) -> list[int]:
        if not isinstance(tokenizer, Tokenizer):  # sampling is sentencepiece's: the project's own vocabulary
            raise ValueError("bpe_dropout needs the project's sentencepiece tokenizer")
        return tokenizer.source_ids(tokenizer.sp.encode(text, out_type=int, enable_sampling=True, alpha=bpe_dropout))

    pairs = []
    for src, tgt in zip(sources, targets, strict=True):
        s = sampled(src) if bpe_dropout > 0 else tokenizer.encode_source(src)
        t = sampled(tgt) if bpe_dropout > 0 and sides == "both" else tokenizer.encode_source(tgt)
        if len(s) <= max_len and len(t) <= max_len:
            pairs.append((s, t))
    return pairs


def token_batches(pairs: Sequence[Pair], max_tokens: int, seed: int | None = None) -> list[list[int]]:
    """Group pair indices into batches of similar length, each at most ``max_tokens`` tokens per side
    (padding included), so little compute is spent on padding. Batch order is shuffled by ``seed``
    (None keeps length order, for evaluation)."""
    order = sorted(range(len(pairs)), key=lambda i: (len(pairs[i][1]), len(pairs[i][0])))
    batches: list[list[int]] = []
    batch: list[int] = []
    longest = 0
    for i in order:
        size = max(len(pairs[i][0]), len(pairs[i][1]))
        if batch and max(longest, size) * (len(batch) + 1) > max_tokens:
            batches.append(batch)
            batch, longest = [], 0
        batch.append(i)
        longest = max(longest, size)
    if batch:
        batches.append(batch)
    if seed is not None:
        random.Random(seed).shuffle(batches)
    return batches


@dataclass
class Batch:
    """src [B, S]; tgt_in [B, T] = BOS + target[:-1]; tgt_out [B, T] = target (what each position predicts),
    each right-padded with ``pad_id``."""

    src: torch.Tensor
    tgt_in: torch.Tensor
    tgt_out: torch.Tensor
    pad_id: int

    @property
    def n_tokens(self) -> int:
        """Real (non-padding) target tokens: what the loss is averaged over."""
        return int((self.tgt_out != self.pad_id).sum())


def collate(pairs: Sequence[Pair], pad_id: int, bos_id: int) -> Batch:
    """Pad a list of pairs into tensors (teacher forcing: the decoder reads the target shifted right)."""
    src = pad_batch([s for s, _ in pairs], pad_id)  # [B, S]
    tgt_in = pad_batch([shifted_right(t, bos_id) for _, t in pairs], pad_id)  # [B, T]
    tgt_out = pad_batch([t for _, t in pairs], pad_id)  # [B, T]
    return Batch(src, tgt_in, tgt_out, pad_id)


def iterate_batches(pairs: Sequence[Pair], batches: list[list[int]], pad_id: int, bos_id: int,
                    start: int = 0) -> Iterator[tuple[int, Batch]]:
    """(index, Batch) for batches[start:], so a resumed epoch skips what was already trained."""
    for index in range(start, len(batches)):
        yield index, collate([pairs[i] for i in batches[index]], pad_id, bos_id)
