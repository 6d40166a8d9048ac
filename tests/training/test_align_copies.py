"""Guided alignment of copies (--align-copies): one cross-attention head learns to look at the piece it copies."""
from pathlib import Path

import pandas as pd
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from model.checkpoints.meta import clean_meta
from model.network.attention import Capture
from model.network.config import ModelConfig
from model.tokenization.joint import Tokenizer
from model.tokenization.pieces import PAD
from training.alignment import CopyAlignment
from training.card_text import recipe_lines
from training.data import collate
from training.distributed import Ranks
from training.train import build_or_resume, copy_alignment, parse_args, train_step

TOKENIZER = Path(__file__).resolve().parents[2] / "pretrained" / "en-de" / "tokenizer.model"
PAIRS = [("Anna Schmidt lives in Berlin.", "Anna Schmidt wohnt in Berlin."),
         ("Tomasz paid 85 euros in Oslo.", "Tomasz zahlte 85 Euro in Oslo."),
         ("Zeynep Kaya flew to Helsinki in 2019.", "Zeynep Kaya flog 2019 nach Helsinki."),
         ("Dmitri booked seat 23F.", "Dmitri buchte Platz 23F.")]

# a vocabulary of 8 pieces: 0-3 special, then two words, a digit and a full stop
RANKS = Ranks(rank=0, world=1, device=torch.device("cpu"))
PIECES = ["<pad>", "<unk>", "<s>", "</s>", "▁Anna", "▁Oslo", "7", "."]


@pytest.fixture(scope="module")
def tokenizer() -> Tokenizer:
    return Tokenizer.load(TOKENIZER)


def _alignment(weight: float = 1.0) -> CopyAlignment:
    return CopyAlignment.for_vocabulary(PIECES, weight, layer=0, head=1)


@settings(deadline=None, max_examples=60)
@given(st.lists(st.integers(0, 7), min_size=1, max_size=6), st.lists(st.integers(0, 7), min_size=1, max_size=6),
       st.integers(0, 2**31 - 1))
def test_the_loss_counts_only_copied_pieces_and_vanishes_when_the_head_points_at_them(src, tgt, seed):
    """The target of the head is exactly the source places of a copyable piece being written; a head that puts
    all its weight there costs nothing, any other head costs more, and positions that copy nothing are free."""
    align = _alignment()
    src_t, tgt_t = torch.tensor([src]), torch.tensor([tgt])  # [1, S], [1, T]
    match = align.targets(src_t, tgt_t)[0]  # [T, S]
    for t, piece in enumerate(tgt):
        for s, source_piece in enumerate(src):
            assert bool(match[t, s]) == (piece == source_piece and piece in (4, 5, 6))  # no special piece, no "."
    generator = torch.Generator().manual_seed(seed)
    cross = torch.rand(1, 2, len(tgt), len(src), generator=generator).softmax(dim=-1)  # [1, H, T, S]
    loss = align.loss_sum(cross, src_t, tgt_t)
    assert loss >= 0 and torch.isfinite(loss)
    pointing = torch.where(match.any(-1, keepdim=True), match / match.sum(-1, keepdim=True).clamp_min(1),
                           cross[0, 1])  # [T, S]: all weight on the copies where there are some, else as before
    perfect = cross.clone()
    perfect[0, 1] = pointing
    assert align.loss_sum(perfect, src_t, tgt_t) == pytest.approx(0.0, abs=1e-6)
    other_head = cross.clone()
    other_head[0, 0] = torch.rand(len(tgt), len(src), generator=generator).softmax(dim=-1)
    assert torch.equal(align.loss_sum(other_head, src_t, tgt_t), loss)  # one head is supervised, the others free
    if not match.any():
        assert loss == 0


def _copy_mass(run, batch, align: CopyAlignment) -> float:
    """The supervised head's mean weight on the source places of the pieces each position copies (eval mode)."""
    run.model.eval()
    with torch.no_grad():
        _, trace = run.model(batch.src, batch.tgt_in, capture=Capture.WEIGHTS)
    run.model.train()
    match = align.targets(batch.src, batch.tgt_out)  # [B, T, S]
    mass = (trace.cross[align.layer][:, align.head] * match).sum(-1)  # [B, T]
    return float(mass[match.any(-1)].mean())


@pytest.mark.parametrize("weight", [0.0, 2.0])
def test_training_with_the_loss_turns_the_head_into_a_pointer_at_the_copies(tmp_path, weight):
    """The point of the option: after the same steps from the same start, the supervised head looks at the copied
    pieces far more than the same head of a run without it (which is what the card's recipe then claims)."""
    corpus = tmp_path / "corpus.tsv.gz"
    rows = [("test", "train", en, de) for en, de in PAIRS * 4] + [("test", "valid", *PAIRS[0])]
    pd.DataFrame(rows, columns=["source", "split", "en", "de"]).to_csv(corpus, sep="\t", index=False)
    argv = ["--task", "en-de", "--corpus", str(corpus), "--tokenizer", str(TOKENIZER), "--out", str(tmp_path / "run"),
            "--d-model", "32", "--n-heads", "2", "--layers", "2", "--d-ff", "64", "--warmup", "10", "--dropout", "0"]
    flags = ["--align-copies", str(weight), "--align-head", "2:2"] if weight else []
    run = build_or_resume(parse_args([*argv, *flags]), RANKS)
    pieces = [run.tokenizer.id_to_piece(i) for i in range(run.tokenizer.vocab_size)]
    align = CopyAlignment.for_vocabulary(pieces, 1.0, layer=1, head=1)  # the head measured, supervised or not
    assert (run.align.layer, run.align.head) == (1, 1) if weight else run.align is None
    batch = collate(run.train_pairs[: len(PAIRS)], PAD, run.model.config.bos_id)
    before = _copy_mass(run, batch, align)
    for _ in range(60):
        train_step(run, batch, lr=3e-3)
    after = _copy_mass(run, batch, align)
    if weight:
        assert after > 0.8 and after > before + 0.3
        assert clean_meta(run.meta())["align_copies"] == 2.0
        assert clean_meta(run.meta())["align_head"] == [2, 2]
    else:
        assert after < 0.3  # a head left alone does not point at the copies by itself in these steps
        assert "align_copies" not in run.meta()


def test_every_word_or_number_piece_can_be_a_copy_and_no_special_piece_can(tokenizer):
    align = copy_alignment(parse_args(["--task", "en-de", "--out", "unused", "--align-copies", "0.05"]),
                           ModelConfig(vocab_size=tokenizer.vocab_size, n_heads=4, n_decoder_layers=3), tokenizer)
    assert (align.layer, align.head, align.weight) == (2, 0, 0.05)  # the default: the last layer's first head
    for text in ("Berlin", "2019", "23F", "Zeynep"):
        assert all(align.copyable[i] for i in tokenizer.encode(text) if tokenizer.id_to_piece(i) != "▁")
    assert not align.copyable[[0, 1, 2, 3]].any()
    assert not align.copyable[tokenizer.encode(".")[-1]]


@pytest.mark.parametrize(("extra", "message"), [
    (["--align-head", "1:1"], "--align-copies"),
    (["--align-copies", "-0.1"], "loss factor"),
    (["--align-copies", "nan"], "loss factor"),
    (["--align-copies", "0.1", "--align-head", "3"], "LAYER:HEAD"),
    (["--align-copies", "0.1", "--align-head", "0:1"], "LAYER:HEAD")])
def test_a_head_without_a_loss_or_a_loss_without_sense_is_refused(capsys, extra, message):
    with pytest.raises(SystemExit):
        parse_args(["--task", "en-de", "--out", "unused", *extra])
    assert message in capsys.readouterr().err


def test_a_head_the_model_lacks_is_refused_in_one_line(tokenizer):
    args = parse_args(["--task", "en-de", "--out", "unused", "--align-copies", "0.1", "--align-head", "4:1"])
    with pytest.raises(SystemExit, match="has 3 decoder layers of 4 heads"):
        copy_alignment(args, ModelConfig(vocab_size=tokenizer.vocab_size, n_heads=4, n_decoder_layers=3), tokenizer)


def test_the_card_and_a_continued_checkpoint_name_the_supervised_head():
    meta = {"epochs": 3, "continued_from": {"step": 10, "epoch": 2, "align_copies": 0.05, "align_head": [3, 1]}}
    assert clean_meta(meta)["continued_from"]["align_head"] == [3, 1]
    lines = "\n".join(recipe_lines({"lr_factor": 0.3, "warmup": 4000, "align_copies": 0.05, "align_head": [3, 1]}))
    assert "decoder layer 3's cross-attention head 1 taught to look at the source piece being copied" in lines
    assert "(loss factor 0.05)" in lines
