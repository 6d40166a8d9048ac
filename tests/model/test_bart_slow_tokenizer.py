"""A BART folder with only vocab.json + merges.txt (no tokenizer.json: as the slow BartTokenizer's save_pretrained
wrote facebook/bart-*, with tokenizer_config.json and special_tokens_map.json) converts, tokenizes as transformers'
BartTokenizer reads those files and translates as generate().

No download: the byte-level BPE of tests.bart_helpers (BART's layout: <s> 0, <pad> 1, </s> 2, <unk> 3, <mask> last) is
written as vocab.json + merges.txt by the tokenizers package, as the slow BartTokenizer's save_pretrained wrote them
(transformers 5 has no slow BartTokenizer: BartTokenizer is RobertaTokenizer over the tokenizers package and its
save_pretrained writes tokenizer.json), beside a tiny random BartForConditionalGeneration (d_model 16, 2+2 layers).
transformers is the test-only reference; the tests that need it are marked slow.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from tokenizers import Tokenizer

from model.checkpoints.files import load_checkpoint
from model.checkpoints.header import CheckpointError
from model.decoding.search import beam_search, greedy_decode
from model.huggingface.convert import convert
from model.network.attention import Capture
from model.network.config import DecodeConfig
from tests.bart_helpers import (
    EOS_SCALE,
    MAX_NEW,
    bart_tokenizer_json,
    generate,
    hf_config,
    hf_output,
    write_bart_weights,
)
from tests.hf_folders import (
    assert_encodes_as,
    converted_tokenizer,
    converted_without_tokenizer_json,
    slow_tokenizer_folder,
    texts_with,
)
from tests.marian_helpers import EN

TEXTS = ["The house is small.", "Grüße aus Köln!", "Zebra quartz 你好 😀", "  two  spaces ", "a</s>b <mask> x"]
SPECIALS = ["<s>", "<pad>", "</s>", "<unk>", "<mask>", " <mask>", "<mask> ", " ", "  ", "\t", "\n", "\u3000", "Ġ",
            "<", "s>", "😀", "🇩🇪"]
MASK = {"content": "<mask>", "lstrip": True, "normalized": True, "rstrip": False, "single_word": False}


def write_bart_slow_tokenizer(folder: Path) -> int:
    """vocab.json (+ <mask> last, as facebook/bart-*'s), merges.txt, tokenizer_config.json and special_tokens_map.json
    as the slow BartTokenizer's save_pretrained wrote them; returns vocab.json's size."""
    folder.mkdir(parents=True, exist_ok=True)
    Tokenizer.from_str(bart_tokenizer_json().decode()).model.save(str(folder))
    vocab = json.loads((folder / "vocab.json").read_text())
    vocab["<mask>"] = len(vocab)
    (folder / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False))
    specials = {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "sep_token": "</s>",
                "pad_token": "<pad>", "cls_token": "<s>", "mask_token": MASK}
    (folder / "special_tokens_map.json").write_text(json.dumps(specials))
    (folder / "tokenizer_config.json").write_text(json.dumps({
        "add_prefix_space": False, "errors": "replace", "model_max_length": 1024, "trim_offsets": True,
        "tokenizer_class": "BartTokenizer", **specials}))
    return len(vocab)


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    """(transformers' BartTokenizer read from vocab.json + merges.txt, its eager BART, our converted checkpoint)."""
    transformers, root, folder, size = slow_tokenizer_folder(tmp_path_factory, "bart-slow", write_bart_slow_tokenizer)
    hf = transformers.BartForConditionalGeneration(transformers.BartConfig(**hf_config("bart", size)))
    with torch.no_grad():  # as tests/model/test_bart.py: outputs differ between tokens and vary in length
        for name, p in hf.named_parameters():
            p.normal_(0.0, 0.5).add_(1.0 if "norm" in name and name.endswith("weight") else 0.0)
        hf.final_logits_bias.normal_(0.0, 1.0)
        hf.model.shared.weight[2] *= EOS_SCALE["bart"]
        hf.final_logits_bias[0, 2] = 6.0  # found by trying: outputs of 1-12 pieces (<mask> moves the weights drawn)
    return converted_without_tokenizer_json(hf, folder, root, transformers.BartTokenizer,
                                            transformers.BartForConditionalGeneration)


@pytest.mark.slow
def test_the_pieces_keep_their_vocab_json_ids(pair):
    slow, _, ckpt = pair
    tok = converted_tokenizer(ckpt)
    vocab = json.loads((ckpt.path.parent / "bart-slow" / "vocab.json").read_text())
    assert tok.vocab_size == len(slow) == len(vocab) == ckpt.config.vocab_size
    assert (tok.bos_id, tok.pad_id, tok.eos_id, tok.unk_id) == (2, 1, 2, 3)
    assert all(tok.piece_id(piece) == i for piece, i in vocab.items())


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(texts_with(SPECIALS))
def test_source_ids_are_bart_tokenizers(pair, text):
    """Any text (spaces, unicode, emoji, special pieces written in it, <mask> taking the space before it): the ids
    transformers' BartTokenizer gives ("<s> ... </s>"), piece for piece, and the same text read back."""
    slow, _, ckpt = pair
    assert_encodes_as(slow, ckpt.tokenizer, text)


@pytest.mark.slow
def test_greedy_and_beam_outputs_equal_generate(pair):
    """Greedy equals generate(num_beams=1); beam 4 at length penalty 0 equals generate(num_beams=4,
    early_stopping=True), n-best and log-probs, EOS forced at the limit (as tests/model/test_bart.py)."""
    _, hf, ckpt = pair
    lengths = set()
    for text in EN[:4] + TEXTS:
        src = torch.tensor(ckpt.tokenizer.encode_source(text))
        greedy = greedy_decode(ckpt.model, src, DecodeConfig(max_len=MAX_NEW, forced_eos=True),
                               capture=Capture.NONE).best
        assert greedy.tokens == hf_output(generate(hf, src, 1, forced_eos_token_id=2).sequences[0], 2, 1)
        beam = DecodeConfig(beam_size=4, max_len=MAX_NEW, length_penalty=0.0, forced_eos=True)
        ours = beam_search(ckpt.model, src, beam, capture=Capture.NONE).hypotheses
        theirs = generate(hf, src, 4, length_penalty=0.0, early_stopping=True, forced_eos_token_id=2)
        assert [h.tokens for h in ours] == [hf_output(s, 2, 1) for s in theirs.sequences]
        assert torch.allclose(torch.tensor([h.log_prob for h in ours]), theirs.sequences_scores, atol=1e-4)
        lengths |= {len(h.tokens) for h in (greedy, *ours)}
    assert len(lengths) >= 3  # outputs of several lengths: EOS was chosen, not only forced


def test_add_prefix_space_is_read_from_tokenizer_config(tmp_path):
    """tokenizer_config.json's add_prefix_space true: "Hello" reads as " Hello" does (no transformers needed)."""
    folder = tmp_path / "bart"
    size = write_bart_slow_tokenizer(folder)
    settings_file = folder / "tokenizer_config.json"
    settings_file.write_text(json.dumps({**json.loads(settings_file.read_text()), "add_prefix_space": True}))
    (folder / "config.json").write_text(json.dumps({"model_type": "bart", **hf_config("bart", size)}))
    write_bart_weights(folder)
    tok = load_checkpoint(convert(folder, tmp_path / "out").path).tokenizer
    assert tok.encode_source("Hello") == tok.encode_source(" Hello")


@pytest.mark.parametrize("spoil", ["vocab", "merges", "prefix"])
def test_files_bart_cannot_read_are_refused_in_one_line(tmp_path, spoil):
    """A vocab.json that is no JSON map with <s> and </s>, a merges.txt naming pieces vocab.json lacks, a bad
    add_prefix_space."""
    folder = tmp_path / "bart"
    size = write_bart_slow_tokenizer(folder)
    (folder / "config.json").write_text(json.dumps({"model_type": "bart", **hf_config("bart", size)}))
    if spoil == "vocab":
        (folder / "vocab.json").write_text('["<s>"]')
    if spoil == "merges":
        (folder / "merges.txt").write_text("#version: 0.2\nqq zz\n")
    if spoil == "prefix":
        (folder / "tokenizer_config.json").write_text(json.dumps({"add_prefix_space": "yes"}))
    said = {"vocab": r"vocab\.json: not a map of pieces to ids holding <s> and </s>",
            "merges": r"vocab\.json \+ merges\.txt: not a BPE model the tokenizers package reads",
            "prefix": r"tokenizer_config\.json: add_prefix_space must be true or false, got yes"}[spoil]
    with pytest.raises(CheckpointError, match=f"^{said}") as info:
        convert(folder, tmp_path / "out")
    assert "\n" not in str(info.value) and not (tmp_path / "out").exists()
