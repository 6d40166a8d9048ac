"""Carry a trained model over to a new vocabulary, so a better tokenizer does not mean training from scratch.

The shipped model took 72 epochs (14 CPU hours). A tokenizer with ``split_digits`` and ``byte_fallback``
(numbers digit by digit, no "<unk>") changes only the embedding matrix: every layer above it reads d_model-wide
vectors and does not care which pieces made them. So each new piece starts from what the old model already
knows about the same text:

- a piece the old vocabulary has too (about three quarters of them) keeps its old row;
- another piece starts as the mean of the old rows of the longest old pieces that spell it ("▁Schmidt" -> the
  rows of "▁Schm", "id" and "t"), the way vocabulary-transfer methods initialise new subwords;
- a byte piece ``<0xNN>`` starts from the old row of that character where one exists, else from "<unk>".

The matrix is shared by the encoder, the decoder and the output layer (the paper's weight tying), so the one
copy serves all three; then a short fine-tune teaches the new pieces their place.
"""
from __future__ import annotations

from dataclasses import replace

import torch

from model.network.transformer import Transformer
from model.tokenization.joint import Tokenizer
from model.tokenization.pieces import BYTE_PIECE, SPECIAL_PIECES


def source_rows(piece: str, old: Tokenizer) -> list[int]:
    """Old ids whose rows make up a new piece's starting row (empty when nothing in the old vocabulary fits)."""
    same = old.sp.piece_to_id(piece)
    if same != old.unk_id or piece == SPECIAL_PIECES[old.unk_id]:
        return [same]
    byte = BYTE_PIECE.fullmatch(piece)
    if byte:
        char = chr(int(byte.group(1), 16))
        found = old.sp.piece_to_id(char)
        return [found] if char.isprintable() and found != old.unk_id else [old.unk_id]
    return longest_pieces(piece, old) or [old.unk_id]


def longest_pieces(text: str, old: Tokenizer) -> list[int]:
    """Old ids spelling ``text`` exactly, each the longest old piece that fits where the last ended (the old
    tokenizer itself cannot be asked: it would put a "▁" before text from inside a word). Characters the old
    vocabulary lacks are skipped."""
    ids, start = [], 0
    while start < len(text):
        for end in range(len(text), start, -1):
            found = old.sp.piece_to_id(text[start:end])
            if found != old.unk_id:
                ids.append(found)
                break
        start = end
    return ids


def transfer_vocabulary(model: Transformer, old: Tokenizer, new: Tokenizer) -> Transformer:
    """A copy of ``model`` whose embedding (and tied output layer) is indexed by ``new``'s pieces."""
    state = model.state_dict()
    table = state["embed.token.weight"]  # [old_vocab, d_model]
    rows = torch.stack([table[source_rows(new.sp.id_to_piece(i), old)].mean(dim=0)
                        for i in range(new.vocab_size)])  # [new_vocab, d_model]
    moved = Transformer(replace(model.config, vocab_size=new.vocab_size))
    state = {**state, "embed.token.weight": rows}
    if "final_logits_bias" in state:  # a per-piece output bias (Marian's) follows the pieces too
        bias = state["final_logits_bias"]  # [old_vocab]
        state["final_logits_bias"] = torch.stack([bias[source_rows(new.sp.id_to_piece(i), old)].mean()
                                                  for i in range(new.vocab_size)])  # [new_vocab]
    moved.load_state_dict(state)
    return moved
