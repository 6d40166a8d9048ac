"""BART and mBART checkpoints converted by model.huggingface.bart compute exactly what Hugging Face computes.

No download: a tiny byte-level BPE tokenizer is trained with the tokenizers package (tests.bart_helpers: BART's
layout), and tiny random BartForConditionalGeneration and
MBartForConditionalGeneration models (d_model 16, 2 heads, 2+2 layers) are saved with save_pretrained beside it.
transformers is the test-only reference (requirements-dev.txt); the tests that need it are marked slow.
"""
from __future__ import annotations

import dataclasses
import itertools
import json
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from model.__main__ import main as cli_main
from model.checkpoints.files import load_checkpoint
from model.checkpoints.header import CheckpointError
from model.decoding.search import beam_search, greedy_decode, repeated_ngram_pieces
from model.huggingface.convert import convert
from model.network.attention import Capture
from model.network.config import DecodeConfig, ModelConfig
from model.network.transformer import Transformer, count_parameters
from model.serving.inference import prepare_source, translate
from model.tokenization.huggingface import HFTokenizer
from model.tokenization.pieces import WORD_START
from tests.bart_helpers import (
    EOS_SCALE,
    MAX_NEW,
    bart_checkpoint,
    bart_tokenizer,
    bart_tokenizer_json,
    cache_model,
    generate,
    hf_config,
    hf_output,
    write_bart_weights,
)
from tests.hf_reference import assert_same_forward
from tests.marian_helpers import EN

TEXTS = ["The house is small.", "Where is the train?", "Grüße aus Köln!", "Zebra quartz 你好"]


@pytest.fixture(scope="module")
def tokenizer_json() -> bytes:
    return bart_tokenizer_json()


def hf_tokenizer(data: bytes) -> HFTokenizer:
    return bart_tokenizer(data)


def test_byte_level_pieces_are_shown_as_text_with_a_word_start_mark(tokenizer_json):
    tok = hf_tokenizer(tokenizer_json)
    ids = tok.encode_source("Das Haus ist klein. 你")
    pieces = tok.pieces(ids)
    assert ids[0] == 0 and ids[-1] == 2 and pieces[0] == "<s>" and pieces[-1] == "</s>"
    assert "".join(pieces[1:-4]) == "Das▁Haus▁ist▁klein.▁" and pieces[2].startswith(WORD_START)  # "ĠHaus" -> "▁Haus"
    assert pieces[-4:-1] == ["<0xE4>", "<0xBD>", "<0xA0>"]  # 你 is three bytes the vocabulary only has one by one
    assert tok.decode(ids) == "Das Haus ist klein. 你"


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=30),
       st.integers(min_value=2, max_value=12))
def test_a_source_is_wrapped_and_cut_keeping_its_specials(tokenizer_json, text, max_len):
    tok = hf_tokenizer(tokenizer_json)
    ids = tok.encode(text)
    full, cut = tok.source_ids(ids), tok.source_ids(ids, max_len)
    assert full == [0, *ids, 2] and tok.decode(full) == text.strip()  # byte-level BPE spells any text exactly
    assert cut[0] == 0 and cut[-1] == 2 and len(cut) == min(len(ids) + 2, max_len) and cut[1:-1] == ids[:len(cut) - 2]


def test_a_multilingual_models_language_codes_are_its_target_languages():
    """mBART-50's "de_DE", NLLB's "deu_Latn" and M2M100's "__de__" are special pieces; a source is wrapped with the
    source language's code as the file's post-processor says."""
    tok = bart_tokenizer(bart_tokenizer_json(languages=("en_XX", "de_DE", "deu_Latn", "__fr__")))
    assert tok.target_languages == ("__fr__", "de_DE", "deu_Latn", "en_XX")
    ids = tok.encode_source("The house")
    assert tok.pieces(ids)[0] == "en_XX" and ids[-1] == 2 and tok.piece_id("de_DE") == 401
    assert tok.decode([401, *ids]) == "The house"  # codes are specials: not in the text
    assert bart_tokenizer(bart_tokenizer_json()).target_languages == ()


@settings(max_examples=30, deadline=None)
@given(st.integers(min_value=1, max_value=40), st.integers(min_value=3, max_value=30))
def test_a_prepared_source_counts_the_pieces_it_dropped(tokenizer_json, words, max_len):
    """The Translate page says how many pieces were cut: never negative with two wrapping specials (<s>, </s>)."""
    tok = hf_tokenizer(tokenizer_json)
    text = " ".join(["house"] * words)
    source = prepare_source(tok, text, max_len)
    pieces = len(tok.encode(text))
    assert source.dropped == max(pieces + 2 - max_len, 0) and len(source.ids) == min(pieces + 2, max_len)


def test_a_broken_tokenizer_file_is_refused_in_one_line():
    with pytest.raises(ValueError, match=r"^tokenizer.json: not a tokenizers file") as info:
        hf_tokenizer(b'{"version": "1.0", "model": 7}')
    assert "\n" not in str(info.value)


def test_learned_positions_and_embedding_norms_are_counted_and_read_per_stack():
    config = ModelConfig(vocab_size=40, d_model=16, n_heads=2, n_encoder_layers=1, n_decoder_layers=1, d_ff=32,
                         max_len=20, pad_id=1, unk_id=3, bos_id=2, eos_id=2, positional_layout="learned",
                         position_offset=2, layernorm_embedding=True, scale_embedding=False, tokenizer="hf")
    model = Transformer(config).eval()
    assert count_parameters(model) == config.estimated_parameters()
    assert config.position_table == 22 and config.position_limit == 20
    ids = torch.tensor([[5, 6, 7]])
    with torch.no_grad():
        model.embed.learned["decoder"].weight.normal_()
        expected = model.embed.norms["decoder"](model.embed.token(ids) + model.embed.learned["decoder"].weight[3:6])
        assert torch.equal(model.embed(ids, offset=1, side="decoder"), expected)  # rows offset+2.., no sqrt(d) scale
        assert not torch.equal(model.embed(ids, offset=1), expected)  # the encoder reads its own table and norm
    with pytest.raises(ValueError, match="exceeds the limit of 20 positions"):
        model.embed(torch.zeros(1, 21, dtype=torch.long))


# ---------------------------------------------------------------- equivalence with Hugging Face (transformers)

@pytest.fixture(scope="module", params=["bart", "mbart", "m2m_100"])
def pair(request, tmp_path_factory, tokenizer_json):
    """(Hugging Face's eager model, our converted checkpoint) of one random BART, mBART or M2M100 (NLLB) model."""
    import transformers  # the reference (requirements-dev.txt): missing, the test fails rather than skips
    family = request.param
    config_class, model_class = {
        "bart": (transformers.BartConfig, transformers.BartForConditionalGeneration),
        "mbart": (transformers.MBartConfig, transformers.MBartForConditionalGeneration),
        "m2m_100": (transformers.M2M100Config, transformers.M2M100ForConditionalGeneration)}[family]
    vocab_size = hf_tokenizer(tokenizer_json).vocab_size
    torch.manual_seed(0)
    hf = model_class(config_class(**hf_config(family, vocab_size)))
    with torch.no_grad():  # weights far from HF's init (std 0.02), so outputs differ clearly between tokens
        for name, p in hf.named_parameters():
            p.normal_(0.0, 0.5).add_(1.0 if "norm" in name and name.endswith("weight") else 0.0)
        if hasattr(hf, "final_logits_bias"):  # BART's and mBART's; M2M100 has none
            hf.final_logits_bias.normal_(0.0, 1.0)
        hf.model.shared.weight[2] *= EOS_SCALE[family]  # </s> likely in some states, so outputs vary in length
    root = tmp_path_factory.mktemp(family)
    folder = root / f"tiny-{family}"
    hf.save_pretrained(folder)
    (folder / "tokenizer.json").write_bytes(tokenizer_json)
    ckpt = load_checkpoint(convert(folder, root / "converted").path)
    reference = model_class.from_pretrained(folder, attn_implementation="eager").eval()
    return reference, ckpt


@pytest.mark.slow
def test_the_converted_config_says_what_the_family_does(pair):
    _, ckpt = pair
    c, family = ckpt.config, ckpt.meta["family"]
    expected = {"bart": ("learned", True, "gelu", False, True), "mbart": ("learned", True, "gelu", True, True),
                "m2m_100": ("fairseq", False, "relu", True, False)}[family]
    assert (c.positional_layout, c.layernorm_embedding, c.activation, c.norm_first, c.final_logits_bias) == expected
    assert c.position_offset == 2 and c.tokenizer == "hf" and c.scale_embedding == (family != "bart")
    assert c.decoder_start_id == c.bos_id == c.eos_id == 2 and ckpt.decode_rules["forced_bos"] is None
    assert ckpt.forced_eos == (family != "m2m_100")  # as generation_config.json says (M2M100's forces nothing)


@pytest.mark.slow
def test_logits_and_every_attention_equal_hugging_faces(pair):
    """A padded batch of two sources; the decoder reads </s> (its start) and four pieces. M2M100 gives a padding
    position the zero vector, not its position's row: the padded query rows of its encoder (masked as keys
    everywhere, never drawn) differ there; every other weight is the same."""
    hf, ckpt = pair
    tgt = torch.tensor([[2, 0, 7, 9, 30], [2, 0, 11, 4, 8]])  # [2, T]
    real = (lambda src: (src != 1)[:, None, :, None]) if ckpt.meta["family"] == "m2m_100" else None
    assert_same_forward(hf, ckpt, TEXTS[:2], tgt, pad=1, logits_atol=1e-4, enc_rows=real)


@pytest.mark.slow
@pytest.mark.parametrize("forced_bos", [None, 0])
def test_greedy_and_beam_outputs_equal_generate(pair, forced_bos):
    """Greedy equals generate(num_beams=1); beam 4 at length penalty 0 equals generate(num_beams=4,
    early_stopping=True), n-best and log-probs, with forced_eos_token_id at the limit and, as BART-large's config
    asks, forced_bos_token_id <s> first."""
    hf, ckpt = pair
    lengths = set()
    for text in EN[:4] + TEXTS:
        src = torch.tensor(ckpt.tokenizer.encode_source(text))
        options = {"forced_bos_token_id": forced_bos, "forced_eos_token_id": 2}
        decode = DecodeConfig(max_len=MAX_NEW, forced_eos=True, forced_bos=forced_bos)
        greedy = greedy_decode(ckpt.model, src, decode, capture=Capture.NONE).best
        assert greedy.tokens == hf_output(generate(hf, src, 1, **options).sequences[0], 2, 1)
        beam = DecodeConfig(beam_size=4, max_len=MAX_NEW, length_penalty=0.0, forced_eos=True, forced_bos=forced_bos)
        ours = beam_search(ckpt.model, src, beam, capture=Capture.NONE).hypotheses
        theirs = generate(hf, src, 4, length_penalty=0.0, early_stopping=True, **options)
        assert [h.tokens for h in ours] == [hf_output(s, 2, 1) for s in theirs.sequences]
        assert torch.allclose(torch.tensor([h.log_prob for h in ours]), theirs.sequences_scores, atol=1e-4)
        if forced_bos is not None:
            assert all(h.tokens[0] == forced_bos for h in (greedy, *ours))
        lengths |= {len(h.tokens) for h in (greedy, *ours)}
    assert len(lengths) >= 3  # outputs of several lengths: EOS was chosen, not only forced


@pytest.mark.slow
def test_no_repeat_ngram_equals_generate(pair):
    """generate(no_repeat_ngram_size=2), greedy and beam 4, piece for piece and score for score: every output that
    would repeat a 2-gram (the start token counted) takes its next best piece instead."""
    hf, ckpt = pair
    changed = 0
    for text in EN[:4] + TEXTS:
        src = torch.tensor(ckpt.tokenizer.encode_source(text))
        rules = {"no_repeat_ngram": 2, "forced_eos": ckpt.forced_eos}  # as the model's generation_config says
        greedy = greedy_decode(ckpt.model, src, DecodeConfig(max_len=MAX_NEW, **rules), capture=Capture.NONE).best
        assert greedy.tokens == hf_output(generate(hf, src, 1, no_repeat_ngram_size=2).sequences[0], 2, 1)
        beam = DecodeConfig(beam_size=4, max_len=MAX_NEW, length_penalty=0.0, **rules)
        ours = beam_search(ckpt.model, src, beam, capture=Capture.NONE).hypotheses
        theirs = generate(hf, src, 4, length_penalty=0.0, early_stopping=True, no_repeat_ngram_size=2)
        assert [h.tokens for h in ours] == [hf_output(s, 2, 1) for s in theirs.sequences]
        assert torch.allclose(torch.tensor([h.log_prob for h in ours]), theirs.sequences_scores, atol=1e-4)
        free = beam_search(ckpt.model, src, dataclasses.replace(beam, no_repeat_ngram=0),
                           capture=Capture.NONE).hypotheses
        changed += [h.tokens for h in free] != [h.tokens for h in ours]
    assert changed >= 1  # the rule changed some output: it was exercised


@pytest.mark.slow
@pytest.mark.parametrize("alpha", [1.0, 2.0])
def test_hugging_faces_length_penalty_equals_generate(pair, alpha):
    """A converted model ranks finished beams as generate() does, log P / |Y|^α (its meta says so): beam 4's n-best
    and scores equal generate(length_penalty=α, early_stopping=True)."""
    hf, ckpt = pair
    # Hugging Face's default α
    assert ckpt.decode_rules["length_penalty_formula"] == "hf" and ckpt.length_penalty == 1.0
    for text in EN[:4] + TEXTS:
        src = torch.tensor(ckpt.tokenizer.encode_source(text))
        beam = DecodeConfig(beam_size=4, max_len=MAX_NEW, length_penalty=alpha, forced_eos=ckpt.forced_eos,
                            length_penalty_formula="hf")
        ours = beam_search(ckpt.model, src, beam, capture=Capture.NONE).hypotheses
        theirs = generate(hf, src, 4, length_penalty=alpha, early_stopping=True)
        assert [h.tokens for h in ours] == [hf_output(s, 2, 1) for s in theirs.sequences]
        assert torch.allclose(torch.tensor([h.score for h in ours]), theirs.sequences_scores, atol=1e-4)


@pytest.mark.slow
def test_every_early_stopping_rule_equals_generate(pair):
    """generate()'s three stopping rules (model.decoding.beam_stopping), beam 4 at α 0.5, 1 and 2 and limits of 6 and 12
    pieces: the n-best list and its scores equal generate(early_stopping=rule) for True, False and "never"; greedy
    equals generate(num_beams=1) whatever the rule. The rules give different n-best lists here (so a search that
    always stopped as True does would fail the others), and a later stop never scores worse."""
    hf, ckpt = pair
    differs = {False: 0, "never": 0}
    for text, limit in itertools.product(EN[:4] + TEXTS, (6, MAX_NEW)):
        src = torch.tensor(ckpt.tokenizer.encode_source(text))
        greedy = greedy_decode(ckpt.model, src, DecodeConfig(max_len=limit, forced_eos=ckpt.forced_eos),
                               capture=Capture.NONE).best
        assert greedy.tokens == hf_output(generate(hf, src, 1, limit).sequences[0], 2, 1)
        for alpha in (0.5, 1.0, 2.0):
            found = {}
            for rule in (True, False, "never"):
                beam = DecodeConfig(beam_size=4, max_len=limit, length_penalty=alpha, forced_eos=ckpt.forced_eos,
                                    length_penalty_formula="hf", early_stopping=rule)
                ours = beam_search(ckpt.model, src, beam, capture=Capture.NONE).hypotheses
                theirs = generate(hf, src, 4, limit, length_penalty=alpha, early_stopping=rule)
                assert [h.tokens for h in ours] == [hf_output(s, 2, 1) for s in theirs.sequences], (text, limit, rule)
                assert torch.allclose(torch.tensor([h.score for h in ours]), theirs.sequences_scores, atol=1e-4)
                found[rule] = [(h.tokens, round(h.score, 4)) for h in ours]
            for rule in differs:
                differs[rule] += found[rule] != found[True]
            assert found[True][0][1] <= found[False][0][1] <= found["never"][0][1]
    assert differs[False] >= 1 and differs["never"] >= 1, differs


@pytest.mark.slow
def test_the_app_pipeline_translates_and_shows_readable_pieces(pair):
    hf, ckpt = pair
    text = EN[0]
    ours = translate(ckpt.model, ckpt.tokenizer, text, DecodeConfig(max_len=MAX_NEW, forced_eos=True))
    expected = generate(hf, torch.tensor(ckpt.tokenizer.encode_source(text)), 1, forced_eos_token_id=2).sequences[0]
    assert ours.target_ids == hf_output(expected, 2, 1)
    assert ours.target_input_pieces[0] == "</s>"  # BART's decoder starts with </s>
    assert not any("Ġ" in p for p in ours.source.pieces + ours.target_pieces)


# ---------------------------------------------------------------- refusals (no transformers needed)

@pytest.fixture
def folder(tmp_path, tokenizer_json) -> Path:
    """A BART folder written without transformers: config.json and tokenizer.json (weights added per test)."""
    folder = tmp_path / "tiny-bart"
    folder.mkdir()
    vocab_size = hf_tokenizer(tokenizer_json).vocab_size
    (folder / "config.json").write_text(json.dumps({"model_type": "bart", **hf_config("bart", vocab_size)}))
    (folder / "tokenizer.json").write_bytes(tokenizer_json)
    return folder


@pytest.mark.parametrize("change, message", [
    ({"tie_word_embeddings": False}, "config.json: unsupported, an output layer separate from the embedding"),
    ({"decoder_ffn_dim": 64}, "config.json: unsupported, encoder_ffn_dim and decoder_ffn_dim differ"),
    ({"activation_function": "tanh"}, "config.json: unsupported activation_function 'tanh'"),
    ({"decoder_start_token_id": None}, "config.json: decoder_start_token_id is not set"),
    ({"forced_eos_token_id": 0}, "config.json: unsupported, forced_eos_token_id 0 is not the eos_token_id 2"),
    ({"vocab_size": 999}, "vocabulary mismatch: tokenizer.json has"),
])
def test_unsupported_configs_are_refused_in_one_line_before_anything_is_written(folder, tmp_path, change, message,
                                                                                capsys):
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, **change}))
    out = tmp_path / "out"
    with pytest.raises(CheckpointError) as info:
        convert(folder, out)
    assert str(info.value).startswith(message) and "\n" not in str(info.value)
    assert cli_main(["convert", str(folder), "--out", str(out)]) == 2
    assert capsys.readouterr().err == f"error: {info.value}\n"
    assert not out.exists()


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 3), max_size=12), st.integers(1, 4))
def test_the_pieces_no_repeat_ngram_bans_are_those_that_would_repeat_an_ngram(prefix, n):
    """A piece is banned exactly when the prefix plus it ends with an n-gram the prefix already holds."""
    banned = set(repeated_ngram_pieces(prefix, n))
    for piece in range(4):
        grown = [*prefix, piece]
        repeats = len(grown) >= n and any(grown[i:i + n] == grown[-n:] for i in range(len(grown) - n))
        assert (piece in banned) == repeats


def test_generation_config_json_says_which_pieces_are_forced_as_generate_reads_it(folder, tmp_path):
    """generate() takes decoder_start, forced BOS and forced EOS from generation_config.json when the folder has one:
    a forced piece it does not name is not forced, whatever config.json says (forced_eos_token_id 2 here)."""
    write_bart_weights(folder)
    assert load_checkpoint(convert(folder, tmp_path / "a").path).forced_eos  # config.json alone: EOS forced
    (folder / "generation_config.json").write_text(json.dumps({"decoder_start_token_id": 2, "forced_bos_token_id": 0,
                                                                "no_repeat_ngram_size": 3}))
    ckpt = load_checkpoint(convert(folder, tmp_path / "b").path)
    rules = ckpt.decode_rules
    assert rules["forced_bos"] == 0 and not ckpt.forced_eos and rules["no_repeat_ngram"] == 3
    assert DecodeConfig(**rules).forced_bos == 0


def test_a_model_id_is_found_in_hugging_faces_cache_without_a_download(folder, tmp_path, monkeypatch, capsys):
    """`python -m model convert facebook/bart-base --out ...` reads the snapshot refs/main names in the hub cache
    (HF_HUB_CACHE), as transformers would have stored it; an id not in the cache is refused naming the cache."""
    write_bart_weights(folder)
    cache_model(tmp_path / "hub", "someone/tiny-bart", folder)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    assert cli_main(["convert", "someone/tiny-bart", "--out", str(tmp_path / "out")]) == 0
    meta = load_checkpoint(tmp_path / "out").meta
    assert "wrote" in capsys.readouterr().out and meta["family"] == "bart"
    assert meta["converted_from"] == "someone/tiny-bart"  # the model id, not the snapshot's commit
    assert cli_main(["convert", "someone/absent", "--out", str(tmp_path / "other")]) == 2
    assert f"nor a model of that name in Hugging Face's cache, {tmp_path / 'hub'}" in capsys.readouterr().err


def test_the_cli_translates_a_multilingual_model_into_the_language_asked_for(tmp_path, capsys):
    """`translate --to fr_XX` forces that code first; without --to, German (the app's default too); a code the model
    lacks is refused in one line naming its codes."""
    path = bart_checkpoint(tmp_path / "mbart-50", "mbart", languages=("en_XX", "de_DE", "fr_XX"))
    for to, first in (("fr_XX", "fr_XX"), (None, "de_DE")):
        out = tmp_path / f"{to}.json"
        args = ["translate", "The house is small.", "--checkpoint", str(path), "--max-len", "4", "--json", str(out)]
        assert cli_main(args + (["--to", to] if to else [])) == 0
        assert json.loads(out.read_text())["translation"]["pieces"][0] == first
    capsys.readouterr()
    assert cli_main(["translate", "x", "--checkpoint", str(path), "--to", "xx_YY"]) == 2
    assert capsys.readouterr().err == ("error: --to 'xx_YY': not one of this model's 3 language codes "
                                       "(de_DE, en_XX, fr_XX)\n")


def test_a_folder_without_weights_or_tokenizer_is_refused(folder, tmp_path):
    with pytest.raises(CheckpointError, match=r"^model\.safetensors \(or pytorch_model\.bin\) is missing"):
        convert(folder, tmp_path / "out")
    (folder / "tokenizer.json").unlink()
    with pytest.raises(CheckpointError, match=r"^tokenizer\.json is missing"):
        convert(folder, tmp_path / "out")
