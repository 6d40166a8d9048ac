"""BPE-dropout (--bpe-dropout): each epoch sees other segmentations of the same text, reproducibly."""
from pathlib import Path

import pandas as pd
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from model.checkpoints.meta import clean_meta
from model.tokenization.joint import Tokenizer
from model.tokenization.pieces import EOS
from training.data import encode_pairs
from training.distributed import Ranks
from training.train import build_or_resume, parse_args

TOKENIZER = Path(__file__).resolve().parents[2] / "pretrained" / "en-de" / "tokenizer.model"
SENTENCES = ["Dmitri Volkov booked seat 23F on the flight to Helsinki.", "Die neue Brücke kostete 312 Millionen Euro.",
             "Zeynep Kaya ran the marathon in Frankfurt.", "Bitte rufen Sie Thomas Berger vor Freitag an."]


@pytest.fixture(scope="module")
def tokenizer() -> Tokenizer:
    return Tokenizer.load(TOKENIZER)


@settings(deadline=None, max_examples=30)
@given(st.sampled_from(SENTENCES), st.sampled_from(SENTENCES), st.integers(0, 2**31 - 1),
       st.sampled_from([0.1, 0.3, 0.6]))
def test_dropped_merges_spell_the_same_text_and_a_seed_repeats_them(tokenizer, en, de, seed, p):
    """What the model trains on must still be the sentence (only cut otherwise), and an epoch resumed mid-way must
    see the very segmentation it saw before."""
    plain = encode_pairs(tokenizer, [en], [de], 512)
    sampled = encode_pairs(tokenizer, [en], [de], 512, bpe_dropout=p, seed=seed)
    assert sampled == encode_pairs(tokenizer, [en], [de], 512, bpe_dropout=p, seed=seed)
    for ids, plain_ids, text in zip(sampled[0], plain[0], (en, de), strict=True):
        assert ids[-1] == EOS and EOS not in ids[:-1]
        assert tokenizer.decode(ids) == tokenizer.decode(plain_ids) == text


def test_dropout_cuts_most_sentences_otherwise_than_inference_does(tokenizer):
    """At p = 0.1 a sentence of a dozen words has some merge skipped almost always; were the flag ignored, every
    pair would equal the one segmentation the app uses."""
    plain = encode_pairs(tokenizer, SENTENCES, SENTENCES, 512)
    assert encode_pairs(tokenizer, SENTENCES, SENTENCES, 512, bpe_dropout=0.0, seed=3) == plain
    sampled = encode_pairs(tokenizer, SENTENCES, SENTENCES, 512, bpe_dropout=0.1, seed=3)
    assert sum(s != p for s, p in zip(sampled, plain, strict=True)) >= 3


def test_source_side_dropout_leaves_the_decoder_the_pieces_inference_writes(tokenizer):
    """--bpe-dropout-sides source: the encoder reads finer pieces, the decoder still learns to write the one
    segmentation the app decodes with."""
    plain = encode_pairs(tokenizer, SENTENCES, SENTENCES, 512)
    sampled = encode_pairs(tokenizer, SENTENCES, SENTENCES, 512, bpe_dropout=0.3, seed=5, sides="source")
    assert [t for _, t in sampled] == [t for _, t in plain]
    assert [tokenizer.decode(s) for s, _ in sampled] == SENTENCES
    assert sum(s != p for (s, _), (p, _) in zip(sampled, plain, strict=True)) >= 3
    with pytest.raises(ValueError, match="'target'"):  # a side it does not know is not read as "source"
        encode_pairs(tokenizer, SENTENCES, SENTENCES, 512, bpe_dropout=0.3, sides="target")


def test_dropout_sides_without_a_dropout_is_refused_rather_than_ignored(capsys):
    with pytest.raises(SystemExit):
        parse_args(["--task", "en-de", "--out", "unused", "--bpe-dropout-sides", "source"])
    assert "--bpe-dropout" in capsys.readouterr().err
    args = parse_args(["--task", "en-de", "--out", "unused", "--bpe-dropout", "0.1", "--bpe-dropout-sides", "source"])
    assert (args.bpe_dropout, args.bpe_dropout_sides) == (0.1, "source")


@pytest.mark.parametrize("value", ["-0.1", "1", "1.5"])
def test_a_dropout_that_is_no_probability_of_skipping_a_merge_is_refused(capsys, value):
    with pytest.raises(SystemExit):
        parse_args(["--task", "en-de", "--out", "unused", "--bpe-dropout", value])
    assert "--bpe-dropout" in capsys.readouterr().err


def test_each_epoch_trains_on_its_own_segmentation_the_same_again_on_a_resume(tmp_path):
    """The draw is per epoch like --copy-fresh's: another epoch cuts the pairs otherwise, a run rebuilt from disk
    in the same epoch (a resume) cuts them as before, and validation keeps the segmentation inference uses."""
    rows = [("train", en, de) for en, de in zip(SENTENCES * 3, SENTENCES[::-1] * 3, strict=True)]
    rows += [("valid", SENTENCES[0], SENTENCES[1])]
    corpus = tmp_path / "corpus.tsv.gz"
    pd.DataFrame([("test", *row) for row in rows], columns=["source", "split", "en", "de"]).to_csv(
        corpus, sep="\t", index=False)
    argv = ["--task", "en-de", "--corpus", str(corpus), "--tokenizer", str(TOKENIZER), "--out", str(tmp_path / "run"),
            "--d-model", "16", "--n-heads", "2", "--layers", "1", "--d-ff", "32", "--bpe-dropout", "0.2"]
    ranks = Ranks(rank=0, world=1, device=torch.device("cpu"))
    run = build_or_resume(parse_args(argv), ranks)
    first = run.epoch_pairs()
    assert run.valid_pairs == encode_pairs(run.tokenizer, [SENTENCES[0]], [SENTENCES[1]], 512)
    run.progress.epoch = 1
    second = run.epoch_pairs()
    assert len(second) == len(first) == 12 and second != first
    again = build_or_resume(parse_args(argv), ranks)  # nothing saved: epoch 0 again, as a resume in it would be
    assert again.epoch_pairs() == first
    assert clean_meta(run.meta())["bpe_dropout"] == 0.2  # what the card's recipe names, as a checkpoint keeps it


def test_a_continued_checkpoint_keeps_the_dropout_of_the_stretch_before_for_the_card():
    """A run continued from a BPE-dropout stretch must not lose that stretch's recipe line."""
    meta = {"epochs": 3, "bpe_dropout": 0.05, "continued_from": {"step": 10, "epoch": 2, "bpe_dropout": 0.1}}
    assert clean_meta(meta)["bpe_dropout"] == 0.05
    assert clean_meta(meta)["continued_from"]["bpe_dropout"] == 0.1
