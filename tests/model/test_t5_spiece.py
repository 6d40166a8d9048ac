"""A T5 folder with only spiece.model (no tokenizer.json: t5-small as older save_pretrained wrote it, with
tokenizer_config.json naming the sentinels) converts, tokenizes as transformers' T5Tokenizer does and translates as
generate().

No download: a unigram sentencepiece model in T5's layout (<pad> 0, </s> 1, <unk> 2, no <s>) is trained here, written
beside the tokenizer_config.json and special_tokens_map.json the slow T5Tokenizer's save_pretrained wrote (transformers
5 has no slow T5Tokenizer: its save_pretrained writes tokenizer.json), and a tiny random T5 v1.1 (d_model 16, 2+2
layers) beside them. transformers is the test-only reference; the tests that need it are marked slow.
"""
from __future__ import annotations

import json

import pytest
import sentencepiece as spm
import torch
from hypothesis import given, settings

from model.checkpoints.header import CheckpointError
from model.huggingface.convert import convert
from model.huggingface.spiece import SPIECE_FILE
from tests.hf_folders import T5_EXTRA_IDS as EXTRA_IDS
from tests.hf_folders import (
    assert_encodes_as,
    assert_t5_decodes_as_generate,
    converted_tokenizer,
    converted_without_tokenizer_json,
    slow_tokenizer_folder,
    t5_config,
    texts_with,
    write_t5_slow_tokenizer,
)
from tests.marian_helpers import EN

TEXTS = ["The house is small.", "Grüße aus Köln!", "Zebra quartz 你好", "  two  spaces ", "a</s>b <extra_id_3> x"]
SPECIALS = ["<pad>", "</s>", "<unk>", "<s>", "<extra_id_0>", "<extra_id_19>", "<extra_id_20>", " ", "\t", "\n",
            "\u3000", "\u2028", "▁", "<", "s>"]
MAX_NEW = 12


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    """(transformers' T5Tokenizer read from spiece.model, its eager T5 v1.1 model, our converted checkpoint)."""
    transformers, root, folder, size = slow_tokenizer_folder(tmp_path_factory, "t5-small-slow", write_t5_slow_tokenizer)
    hf = transformers.T5ForConditionalGeneration(transformers.T5Config(**t5_config("v1.1", size + 8)))
    with torch.no_grad():  # as tests/model/test_t5.py: outputs differ between tokens and vary in length
        for name, p in hf.named_parameters():
            p.normal_(0.0, 0.5).add_(1.0 if "layer_norm" in name else 0.0)
        hf.shared.weight.normal_(0.0, 0.5)
        hf.shared.weight[1] *= -3.0
    return converted_without_tokenizer_json(hf, folder, root, transformers.T5Tokenizer,
                                            transformers.T5ForConditionalGeneration)


@pytest.mark.slow
def test_the_pieces_keep_their_sentencepiece_ids_and_the_sentinels_follow_reversed(pair):
    slow, _, ckpt = pair
    tok = converted_tokenizer(ckpt)
    assert tok.vocab_size == len(slow) == 100 + EXTRA_IDS < ckpt.config.vocab_size
    assert (tok.pad_id, tok.eos_id, tok.unk_id, tok.bos_id) == (0, 1, 2, 0)
    sp = spm.SentencePieceProcessor(model_file=str(ckpt.path.parent / "t5-small-slow" / SPIECE_FILE))
    assert tok.pieces(range(3, 100)) == [sp.id_to_piece(i) for i in range(3, 100)]
    assert tok.pieces([100, 100 + EXTRA_IDS - 1]) == [f"<extra_id_{EXTRA_IDS - 1}>", "<extra_id_0>"]
    assert tok.piece_id("<extra_id_0>") == slow.convert_tokens_to_ids("<extra_id_0>")


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(texts_with(SPECIALS))
def test_source_ids_are_t5_tokenizers(pair, text):
    """Any text, special pieces and sentinels written in it included: the ids transformers' T5Tokenizer gives
    (</s> last), piece for piece, and the same text read back."""
    slow, _, ckpt = pair
    assert_encodes_as(slow, ckpt.tokenizer, text)


@pytest.mark.slow
def test_greedy_and_beam_outputs_equal_generate(pair):
    """Greedy equals generate(num_beams=1); beam 4 (HF's |Y|^α at α 1, the converted early_stopping False) equals
    generate(num_beams=4), n-best and scores."""
    _, hf, ckpt = pair
    rules = {k: v for k, v in ckpt.decode_rules.items() if k != "forced_bos"}
    assert rules["early_stopping"] is False
    lengths = assert_t5_decodes_as_generate(hf, ckpt, EN[:4] + TEXTS, MAX_NEW, 1.0, **rules)
    assert len(lengths) >= 3  # outputs of several lengths: </s> was chosen, not only the limit reached


@pytest.mark.parametrize("spoil", ["bpe", "corrupt", "extra_ids"])
def test_a_spiece_model_t5_cannot_read_is_refused_in_one_line(tmp_path, spoil):
    """A BPE model (T5Tokenizer reads a unigram one), a file that is no sentencepiece model, a bad extra_ids."""
    folder = tmp_path / "t5"
    size = write_t5_slow_tokenizer(folder, "bpe" if spoil == "bpe" else "unigram")
    (folder / "config.json").write_text(json.dumps({"model_type": "t5", **t5_config("v1.1", size + 8)}))
    if spoil == "corrupt":
        (folder / SPIECE_FILE).write_bytes(b"\xff" * 64)
    if spoil == "extra_ids":
        (folder / "tokenizer_config.json").write_text(json.dumps({"extra_ids": -1}))
    said = {"bpe": r"spiece\.model: not a unigram model with T5's first pieces",
            "corrupt": r"spiece\.model: not a valid sentencepiece model",
            "extra_ids": r"tokenizer_config\.json: extra_ids must be an integer from 0 to 1000, got -1"}[spoil]
    with pytest.raises(CheckpointError, match=f"^{said}") as info:
        convert(folder, tmp_path / "out")
    assert "\n" not in str(info.value) and not (tmp_path / "out").exists()
