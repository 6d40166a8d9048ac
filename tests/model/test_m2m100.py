"""An M2M100 folder as save_pretrained writes facebook/m2m100_* (no tokenizer.json: sentencepiece.bpe.model, vocab.json
and tokenizer_config.json) converts, tokenizes as transformers' M2M100Tokenizer does and translates as generate().

No download: a BPE sentencepiece model is trained here, vocab.json is laid out as fairseq's dictionary (<s> 0, <pad> 1,
</s> 2, <unk> 3, then the pieces), and a tiny random M2M100ForConditionalGeneration (d_model 16, 2+2 layers) is saved
beside the slow tokenizer's files. transformers is the test-only reference; the tests that need it are marked slow.
"""
from __future__ import annotations

import json

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from model.__main__ import main as cli_main
from model.checkpoints.files import load_checkpoint
from model.checkpoints.header import CheckpointError
from model.decoding.search import beam_search, greedy_decode
from model.huggingface.convert import convert
from model.network.attention import Capture
from model.network.config import DecodeConfig
from model.tokenization.m2m100 import M2M100_FILES, M2M100_LANGUAGES
from tests.hf_folders import m2m100_config, write_m2m100_tokenizer
from tests.marian_helpers import DE, EN

TEXTS = ["The house is small.", "Grüße aus Köln!", "Zebra quartz 你好", "  two  spaces ", "a</s>b <unk> __de__ <s>"]
MAX_NEW = 10
SPECIALS = ["<s>", "</s>", "<pad>", "<unk>", "__de__", "__en__", " ", "▁", "<", "s>"]


def hf_output(sequence: torch.Tensor) -> tuple[int, ...]:
    """A generated sequence without its start token </s> and the <pad> after its end."""
    tokens = sequence.tolist()
    assert tokens[0] == 2
    while tokens and tokens[-1] == 1:
        tokens.pop()
    return tuple(tokens[1:])


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    """(transformers' slow M2M100Tokenizer, its eager M2M100 model, our converted checkpoint)."""
    import transformers  # the reference (requirements-dev.txt): missing, the test fails rather than skips
    root = tmp_path_factory.mktemp("m2m100")
    raw, folder = root / "raw", root / "tiny-m2m100"
    size = write_m2m100_tokenizer(raw)
    slow = transformers.M2M100Tokenizer(str(raw / M2M100_FILES[1]), str(raw / M2M100_FILES[0]), src_lang="en",
                                        tgt_lang="de")
    # fairseq's embedding: the pieces, the 100 language codes, 8 made-up words never emitted (as 128112 = 128100 + 12)
    vocab_size = size + len(M2M100_LANGUAGES["m2m100"]) + 8
    torch.manual_seed(0)
    hf = transformers.M2M100ForConditionalGeneration(
        transformers.M2M100Config(**m2m100_config(vocab_size)))
    with torch.no_grad():  # weights far from HF's init, so outputs differ between tokens; </s> likely enough to end
        for name, p in hf.named_parameters():
            p.normal_(0.0, 0.5).add_(1.0 if "norm" in name and name.endswith("weight") else 0.0)
        hf.model.shared.weight[2] *= -6.0
    hf.save_pretrained(folder)
    slow.save_pretrained(folder)
    assert not (folder / "tokenizer.json").exists() and all((folder / name).is_file() for name in M2M100_FILES)
    ckpt = load_checkpoint(convert(folder, root / "converted").path)
    reference = transformers.M2M100ForConditionalGeneration.from_pretrained(folder, attn_implementation="eager")
    return transformers.M2M100Tokenizer.from_pretrained(folder), reference.eval(), ckpt


@pytest.mark.slow
def test_the_converted_checkpoint_keeps_the_slow_tokenizers_files_and_language_codes(pair):
    slow, _, ckpt = pair
    assert ckpt.config.tokenizer == "m2m100" and ckpt.meta["family"] == "m2m_100"
    tok = ckpt.tokenizer
    assert len(tok.target_languages) == 100 and tok.piece_id("__de__") == slow.get_lang_id("de")
    assert tok.pieces([slow.get_lang_id("fr")]) == ["__fr__"] and tok.vocab_size < ckpt.config.vocab_size
    assert all((ckpt.path / name).is_file() for name in M2M100_FILES)


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(st.lists(st.one_of(st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=8),
                          st.sampled_from(SPECIALS), st.sampled_from(EN + DE)), max_size=6).map("".join))
def test_source_ids_are_the_slow_tokenizers(pair, text):
    """Any text, special pieces written in it included: the ids transformers' M2M100Tokenizer gives (source language
    code first, </s> last), piece for piece."""
    slow, _, ckpt = pair
    assert ckpt.tokenizer.encode_source(text) == slow(text).input_ids


@pytest.mark.slow
@pytest.mark.parametrize("target", ["de", "fr"])
def test_greedy_and_beam_with_the_target_language_forced_equal_generate(pair, target):
    """generate(forced_bos_token_id=the target's code), greedy and beam 4 (HF's |Y|^α, its default early_stopping
    False), piece for piece and score for score; the output read back as the slow tokenizer reads its pieces."""
    slow, hf, ckpt = pair
    code = slow.get_lang_id(target)
    assert ckpt.decode_rules["early_stopping"] is False and not ckpt.forced_eos
    lengths = set()
    for text in EN[:4] + TEXTS:
        src = torch.tensor(ckpt.tokenizer.encode_source(text))
        options = dict(do_sample=False, max_new_tokens=MAX_NEW, bad_words_ids=[[1]], forced_bos_token_id=code,
                       output_scores=True, return_dict_in_generate=True)
        greedy = greedy_decode(ckpt.model, src, DecodeConfig(max_len=MAX_NEW, forced_bos=code),
                               capture=Capture.NONE).best
        assert greedy.tokens == hf_output(hf.generate(src[None], num_beams=1, **options).sequences[0])
        beam = DecodeConfig(beam_size=4, max_len=MAX_NEW, forced_bos=code, length_penalty=1.0,
                            **{k: v for k, v in ckpt.decode_rules.items() if k != "forced_bos"})
        ours = beam_search(ckpt.model, src, beam, capture=Capture.NONE).hypotheses
        theirs = hf.generate(src[None], num_beams=4, num_return_sequences=4, **options)
        assert [h.tokens for h in ours] == [hf_output(s) for s in theirs.sequences]
        assert torch.allclose(torch.tensor([h.score for h in ours]), theirs.sequences_scores, atol=1e-4)
        for hyp in (greedy, *ours):
            assert hyp.tokens[0] == code
            pieces = [i for i in hyp.tokens if i < slow.vocab_size]  # codes are not text (the slow one keeps them)
            assert ckpt.tokenizer.decode(hyp.tokens) == slow.decode(pieces, skip_special_tokens=True)
        lengths |= {len(h.tokens) for h in (greedy, *ours)}
    assert len(lengths) >= 3  # outputs of several lengths: </s> was chosen, not only the limit reached


@pytest.mark.slow
def test_the_cli_translates_into_the_language_asked_for(pair, tmp_path):
    _, _, ckpt = pair
    out = tmp_path / "out.json"
    assert cli_main(["translate", "The house is small.", "--checkpoint", str(ckpt.path), "--max-len", "4",
                     "--to", "__fr__", "--json", str(out)]) == 0
    translation = json.loads(out.read_text())["translation"]
    assert translation["pieces"][0] == "__fr__"


def test_a_folder_with_half_the_slow_tokenizer_is_refused(tmp_path):
    """Without tokenizer.json, M2M100's sentencepiece model and vocab.json are both needed."""
    folder = tmp_path / "m2m100"
    size = write_m2m100_tokenizer(folder)
    (folder / "config.json").write_text(json.dumps({"model_type": "m2m_100", **m2m100_config(size + 108)}))
    (folder / M2M100_FILES[0]).unlink()
    with pytest.raises(CheckpointError, match=r"^tokenizer\.json is missing"):
        convert(folder, tmp_path / "out")
