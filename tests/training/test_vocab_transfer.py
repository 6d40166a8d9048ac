"""A trained model carried over to another tokenizer keeps what it knows: pieces both vocabularies share keep
their rows exactly, every other weight is untouched, and the new pieces start from the old pieces of their text."""
from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from model.network.transformer import Transformer
from model.tokenization.joint import train_tokenizer
from tests.conftest import SENTENCES, tiny_config
from training.vocab_transfer import source_rows, transfer_vocabulary

NEW_VOCAB = 420  # 256 byte pieces, the specials, every character of SENTENCES and a few merges


@pytest.fixture(scope="module")
def new():
    """Another tokenizer of the same text, as the names-and-numbers model's: digits apart, bytes for the unseen."""
    return train_tokenizer(SENTENCES, vocab_size=NEW_VOCAB, split_digits=True, byte_fallback=True)


def test_every_weight_but_the_embedding_is_kept_and_shared_pieces_keep_their_rows(tokenizer, tiny_model, new):
    moved = transfer_vocabulary(tiny_model, tokenizer, new)
    old_state, state = tiny_model.state_dict(), moved.state_dict()
    assert moved.config.vocab_size == new.vocab_size
    assert all(torch.equal(state[k], v) for k, v in old_state.items() if k != "embed.token.weight")
    table = old_state["embed.token.weight"]
    shared = [(i, tokenizer.sp.piece_to_id(new.sp.id_to_piece(i))) for i in range(new.vocab_size)]
    shared = [(i, j) for i, j in shared if j != tokenizer.unk_id or i == new.unk_id]
    assert len(shared) > 60
    for i, j in shared:
        assert torch.equal(state["embed.token.weight"][i], table[j])


@given(index=st.integers(4, NEW_VOCAB - 1))
def test_a_new_piece_starts_as_the_mean_of_the_old_pieces_of_its_text(tokenizer, new, index):
    torch.manual_seed(0)
    model = Transformer(tiny_config(tokenizer.vocab_size))
    moved = transfer_vocabulary(model, tokenizer, new)
    piece = new.sp.id_to_piece(index)
    rows = source_rows(piece, tokenizer)
    assert rows and all(0 <= r < tokenizer.vocab_size for r in rows)
    expected = model.embed.token.weight[rows].mean(dim=0)
    assert torch.allclose(moved.embed.token.weight[index], expected)
    if rows != [tokenizer.unk_id] and not piece.startswith("<0x"):  # its old pieces spell exactly its text
        assert "".join(tokenizer.sp.id_to_piece(r) for r in rows) == piece


def test_the_same_pieces_numbered_otherwise_give_the_same_model_exactly():
    """A vocabulary that only renumbers the pieces: the moved model reads and writes every piece as before."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    old = train_tokenizer([" ".join(letters[:k]) for k in range(1, 27)], 30, model_type="word")
    new = train_tokenizer([" ".join(letters[::-1][:k]) for k in range(1, 27)], 30, model_type="word")
    order = [old.sp.piece_to_id(new.sp.id_to_piece(i)) for i in range(new.vocab_size)]  # new id -> old id
    assert order != list(range(30)) and sorted(order) == list(range(30))
    torch.manual_seed(0)
    model = Transformer(tiny_config(30)).eval()
    moved = transfer_vocabulary(model, old, new).eval()
    text = "h e l l o w o r l d"
    src_old, src_new = torch.tensor([old.encode_source(text)]), torch.tensor([new.encode_source(text)])
    tgt_old, tgt_new = src_old[:, :-1].flip(1), src_new[:, :-1].flip(1)
    with torch.no_grad():
        logits_old = model(src_old, tgt_old)  # [1, T, 30] in old ids
        logits_new = moved(src_new, tgt_new)  # [1, T, 30] in new ids
    torch.testing.assert_close(logits_new, logits_old[..., order], rtol=0, atol=1e-5)
