"""Tiny Hugging Face folders of every family `python -m model convert` reads, written with transformers' own classes
(random weights) and tokenizers trained here, as save_pretrained lays them out: Marian (opus-mt) with source.spm,
target.spm and vocab.json, BART with a byte-level tokenizer.json, mBART-50 with language codes in its tokenizer.json,
M2M100 with its slow tokenizer's files (sentencepiece.bpe.model, vocab.json) and T5 v1.1 with only spiece.model (+ the
tokenizer_config.json naming its sentinels). transformers is imported where it is used (a test-only dependency).
"""
from __future__ import annotations

import io
import json
from pathlib import Path

import sentencepiece as spm
import torch

from model.huggingface.spiece import SPIECE_FILE
from model.network.attention import Capture
from model.tokenization.m2m100 import M2M100_FILES, M2M100_LANGUAGES
from tests.bart_helpers import bart_tokenizer, bart_tokenizer_json
from tests.marian_helpers import DE, EN, marian_tokenizer_files

FAMILIES = ("marian", "bart", "mbart", "m2m_100", "t5")
MBART_LANGUAGES = ("en_XX", "de_DE", "fr_XX")
T5_EXTRA_IDS = 20  # sentinels <extra_id_0> ... <extra_id_19>, not T5Tokenizer's default 100: read from the config


def m2m100_config(vocab_size: int) -> dict:
    """A tiny M2M100's config.json keys (ReLU, pre-norm, fairseq's sinusoids: what model_type m2m_100 fixes)."""
    return {"vocab_size": vocab_size, "d_model": 16, "encoder_layers": 2, "decoder_layers": 2,
            "encoder_attention_heads": 2, "decoder_attention_heads": 2, "encoder_ffn_dim": 32, "decoder_ffn_dim": 32,
            "max_position_embeddings": 40, "activation_function": "relu", "scale_embedding": True, "pad_token_id": 1,
            "bos_token_id": 0, "eos_token_id": 2, "decoder_start_token_id": 2, "dropout": 0.1}


def write_m2m100_tokenizer(folder: Path) -> int:
    """sentencepiece.bpe.model and vocab.json in M2M100's layout (fairseq's dictionary: <s> 0, <pad> 1, </s> 2, <unk>
    3, then the pieces), as the slow M2M100Tokenizer's save_pretrained writes them; returns vocab.json's size."""
    proto = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter((EN + DE) * 5), model_writer=proto, vocab_size=120,
                                   model_type="bpe", character_coverage=0.98, num_threads=1, minloglevel=2)
    sp = spm.SentencePieceProcessor(model_proto=proto.getvalue())
    pieces = [sp.id_to_piece(i) for i in range(sp.get_piece_size()) if not (sp.is_control(i) or sp.is_unknown(i))]
    vocab = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3, **{piece: i + 4 for i, piece in enumerate(pieces)}}
    folder.mkdir(parents=True, exist_ok=True)
    (folder / M2M100_FILES[0]).write_bytes(proto.getvalue())
    (folder / M2M100_FILES[1]).write_text(json.dumps(vocab))
    return len(vocab)


def write_t5_slow_tokenizer(folder: Path, model_type: str = "unigram") -> int:
    """spiece.model in T5's layout (<pad> 0, </s> 1, <unk> 2, no <s>), tokenizer_config.json and
    special_tokens_map.json as the slow T5Tokenizer's save_pretrained wrote them (transformers 5 has no slow
    T5Tokenizer: its save_pretrained writes tokenizer.json); returns the number of pieces with the sentinels."""
    proto = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter((EN + DE) * 5), model_writer=proto, vocab_size=100,
                                   model_type=model_type, character_coverage=0.98, pad_id=0, eos_id=1, unk_id=2,
                                   bos_id=-1, num_threads=1, minloglevel=2)
    sentinels = [f"<extra_id_{i}>" for i in range(T5_EXTRA_IDS)]
    specials = {"eos_token": "</s>", "unk_token": "<unk>", "pad_token": "<pad>", "additional_special_tokens": sentinels}
    folder.mkdir(parents=True, exist_ok=True)
    (folder / SPIECE_FILE).write_bytes(proto.getvalue())
    (folder / "special_tokens_map.json").write_text(json.dumps(specials))
    (folder / "tokenizer_config.json").write_text(json.dumps(
        {**specials, "extra_ids": T5_EXTRA_IDS, "model_max_length": 512, "tokenizer_class": "T5Tokenizer"}))
    return spm.SentencePieceProcessor(model_proto=proto.getvalue()).get_piece_size() + T5_EXTRA_IDS


def t5_config(version: str, vocab_size: int) -> dict:
    """A tiny T5's config.json keys: v1 (ReLU, 2 heads of 8, the output layer tied) or v1.1 / Flan-T5 (gated GELU, 3
    heads of 8 in d_model 16, an output layer of its own)."""
    common = {"vocab_size": vocab_size, "d_model": 16, "num_layers": 2, "num_decoder_layers": 2, "d_ff": 32,
              "relative_attention_num_buckets": 8, "relative_attention_max_distance": 16, "pad_token_id": 0,
              "eos_token_id": 1, "decoder_start_token_id": 0, "dropout_rate": 0.1}
    if version == "v1":
        return {**common, "num_heads": 2, "d_kv": 8, "feed_forward_proj": "relu", "tie_word_embeddings": True}
    return {**common, "num_heads": 3, "d_kv": 8, "feed_forward_proj": "gated-gelu", "tie_word_embeddings": False}


def t5_output(sequence: torch.Tensor) -> tuple[int, ...]:
    """A generated sequence without its start token (<pad>) and whatever fills it after the first </s>."""
    tokens = sequence.tolist()[1:]
    return tuple(tokens[:tokens.index(1) + 1] if 1 in tokens else tokens)


def assert_t5_decodes_as_generate(hf, ckpt, texts: list[str], max_new: int, length_penalty: float,
                                  **rules: object) -> set[int]:
    """Greedy equals generate(num_beams=1) and beam 4 equals generate(num_beams=4), n-best and scores, for each text,
    under the converted model's decoding ``rules`` (early_stopping True unless they say otherwise). -> the output
    lengths seen, so a caller can check that </s> was chosen, not only the limit reached."""
    from model.decoding.search import beam_search, greedy_decode
    from model.network.config import DecodeConfig

    options = dict(do_sample=False, max_new_tokens=max_new, bad_words_ids=[[0]], output_scores=True,
                   return_dict_in_generate=True)
    lengths = set()
    for text in texts:
        src = torch.tensor(ckpt.tokenizer.encode_source(text))
        greedy = greedy_decode(ckpt.model, src, DecodeConfig(max_len=max_new), capture=Capture.NONE).best
        assert greedy.tokens == t5_output(hf.generate(src[None], num_beams=1, **options).sequences[0])
        config = DecodeConfig(beam_size=4, max_len=max_new, length_penalty=length_penalty, **rules)
        ours = beam_search(ckpt.model, src, config, capture=Capture.NONE).hypotheses
        theirs = hf.generate(src[None], num_beams=4, num_return_sequences=4, length_penalty=length_penalty,
                             early_stopping=config.early_stopping, **options)
        assert [h.tokens for h in ours] == [t5_output(s) for s in theirs.sequences]
        assert torch.allclose(torch.tensor([h.score for h in ours]), theirs.sequences_scores, atol=1e-4)
        lengths |= {len(h.tokens) for h in (greedy, *ours)}
    return lengths


def _tiny_config(vocab_size: int, **changes: object) -> dict:
    """A tiny BART / mBART / Marian config (1+1 layers, 2 heads, d_model 16), fairseq's special ids unless
    ``changes`` name others."""
    return {"vocab_size": vocab_size, "d_model": 16, "encoder_layers": 1, "decoder_layers": 1,
            "encoder_attention_heads": 2, "decoder_attention_heads": 2, "encoder_ffn_dim": 32, "decoder_ffn_dim": 32,
            "max_position_embeddings": 64, "pad_token_id": 1, "bos_token_id": 0, "eos_token_id": 2,
            "decoder_start_token_id": 2, "forced_eos_token_id": 2, **changes}


def hf_folder(family: str, folder: Path, seed: int = 0) -> Path:
    """A tiny random model of ``family`` (one of FAMILIES) saved with save_pretrained into ``folder`` beside its
    tokenizer files: Marian (swish, <pad> starting the decoder), BART (<s> forced first), mBART-50 (en_XX, de_DE,
    fr_XX), M2M100 (its 100 language codes) and T5 v1.1 (spiece.model only)."""
    import transformers

    folder.mkdir(parents=True, exist_ok=True)
    if family == "marian":  # Marian's ids: </s> 0, <pad> last (the decoder's start)
        files = marian_tokenizer_files()
        for name, data in files.items():
            (folder / name).write_bytes(data)
        size = len(json.loads(files["vocab.json"]))
        config = transformers.MarianConfig(**_tiny_config(
            size, decoder_vocab_size=size, pad_token_id=size - 1, eos_token_id=0, decoder_start_token_id=size - 1,
            forced_eos_token_id=0, activation_function="swish", scale_embedding=True))
        model_class = transformers.MarianMTModel
    elif family in ("bart", "mbart"):
        data = bart_tokenizer_json(languages=MBART_LANGUAGES if family == "mbart" else ())
        (folder / "tokenizer.json").write_bytes(data)
        size = bart_tokenizer(data).vocab_size
        config = transformers.BartConfig(**_tiny_config(size, forced_bos_token_id=0)) if family == "bart" else \
            transformers.MBartConfig(**_tiny_config(size, scale_embedding=True))
        model_class = transformers.BartForConditionalGeneration if family == "bart" else \
            transformers.MBartForConditionalGeneration
    elif family == "m2m_100":  # the embedding: the pieces, the 100 language codes, 8 spare rows (as 128112)
        size = write_m2m100_tokenizer(folder) + len(M2M100_LANGUAGES["m2m100"]) + 8
        config, model_class = transformers.M2M100Config(**m2m100_config(size)), \
            transformers.M2M100ForConditionalGeneration
    elif family == "t5":
        size = write_t5_slow_tokenizer(folder) + 8  # spare embedding rows past the tokenizer, as T5 has
        config, model_class = transformers.T5Config(**t5_config("v1.1", size)), transformers.T5ForConditionalGeneration
    else:
        raise ValueError(f"family {family!r} is not one of {FAMILIES}")
    torch.manual_seed(seed)
    model_class(config).save_pretrained(folder)
    return folder


def slow_tokenizer_folder(tmp_path_factory, name: str, write_tokenizer) -> tuple:
    """A fresh root holding folder ``name`` with a slow tokenizer's files written by ``write_tokenizer`` (it returns
    their vocabulary size), torch seeded for the reference model drawn next -> (transformers, root, folder, size).
    transformers is the reference: without it the test fails."""
    import transformers  # the reference (requirements-dev.txt): missing, the test fails rather than skips
    root = tmp_path_factory.mktemp(name)
    folder = root / name
    size = write_tokenizer(folder)
    torch.manual_seed(0)
    return transformers, root, folder, size


def converted_without_tokenizer_json(hf, folder: Path, root: Path, tokenizer_class, model_class) -> tuple:
    """``hf`` saved into ``folder`` beside the slow tokenizer's files written there (no tokenizer.json), converted
    into root/converted -> (the slow tokenizer as transformers reads the folder, its eager model, our checkpoint)."""
    from model.checkpoints.files import load_checkpoint
    from model.huggingface.convert import convert

    hf.save_pretrained(folder)
    assert not (folder / "tokenizer.json").exists()
    ckpt = load_checkpoint(convert(folder, root / "converted").path)
    reference = model_class.from_pretrained(folder, attn_implementation="eager").eval()
    return tokenizer_class.from_pretrained(folder), reference, ckpt


def converted_tokenizer(ckpt):
    """The tokenizer of a checkpoint converted from a folder without tokenizer.json: ours, written as one."""
    assert ckpt.config.tokenizer == "hf" and (ckpt.path / "tokenizer.json").is_file()
    return ckpt.tokenizer


def assert_encodes_as(slow, tokenizer, text: str) -> None:
    """``tokenizer`` gives ``text`` the ids transformers' ``slow`` tokenizer gives, piece for piece, and reads them
    back as it does."""
    ids = tokenizer.encode_source(text)
    assert ids == slow(text).input_ids
    assert tokenizer.decode(ids) == slow.decode(ids, skip_special_tokens=True).strip()


def texts_with(specials: list[str]):
    """Any text as a user may type it: runs of any characters, the given special pieces written out, corpus
    sentences, joined (a hypothesis strategy)."""
    from hypothesis import strategies as st

    return st.lists(st.one_of(st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=8),
                              st.sampled_from(specials), st.sampled_from(EN + DE)), max_size=6).map("".join)
