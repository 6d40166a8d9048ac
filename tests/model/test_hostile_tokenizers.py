"""A tokenizer.json is a file anyone can hand over: its regexes must not freeze the server, and whatever the tokenizers
package raises (a Rust panic included) must end in one line."""
import json
import re

import pytest
import tokenizers
from hypothesis import given, settings
from hypothesis import strategies as st

from model.__main__ import main as cli_main
from model.checkpoints.files import load_checkpoint
from model.checkpoints.header import CheckpointError
from model.huggingface.convert import convert
from model.serving.inference import InputError, prepare_source
from model.tokenization.bounded import (
    KNOWN_REGEXES,
    MAX_ALTERNATION_CHARS,
    MAX_UNIGRAM_PIECE_CHARS,
    is_known_regex,
)
from model.tokenization.huggingface import HFTokenizer
from model.tokenization.pieces import TokenizerError
from tests.bart_helpers import bart_checkpoint, bart_folder, bart_tokenizer_json

# The two hostile patterns: seconds per 1,000 characters, and the engine's retry limit (a Rust panic)
SLOW, PANICS = "(?:a|aa){22}!", "^(a+)+$"


def with_split(data: bytes, pattern: str) -> bytes:
    """A tokenizer.json whose pre-tokenizer first splits on ``pattern``, as a hostile file would."""
    tk = json.loads(data)
    tk["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated", "invert": False}, tk["pre_tokenizer"]]}
    return json.dumps(tk).encode()


def with_normalizer(data: bytes, normalizer: dict) -> bytes:
    return json.dumps({**json.loads(data), "normalizer": normalizer}).encode()


@pytest.mark.parametrize("pattern", [SLOW, PANICS])
def test_a_folder_with_a_hostile_regex_is_refused_at_conversion_in_one_line(tmp_path, pattern, capsys):
    folder = bart_folder(tmp_path / "hostile")
    (folder / "tokenizer.json").write_bytes(with_split((folder / "tokenizer.json").read_bytes(), pattern))
    out = tmp_path / "out"
    with pytest.raises(CheckpointError) as info:
        convert(folder, out)
    assert str(info.value) == (f"tokenizer.json: its pre_tokenizer's Split regex {pattern!r} is not one the supported "
                               "families use (a regex can take unbounded time on a visitor's text)")
    assert cli_main(["convert", str(folder), "--out", str(out)]) == 2
    assert capsys.readouterr().err == f"error: {info.value}\n"
    assert not out.exists()


@pytest.mark.parametrize("pattern", [SLOW, PANICS])
def test_a_checkpoint_with_a_hostile_regex_is_refused_at_load_and_by_the_cli(tmp_path, pattern, capfd):
    """An uploaded or hand-edited checkpoint is checked too, not only a conversion: nothing of it is ever encoded."""
    ckpt = bart_checkpoint(tmp_path / "ckpt")
    (ckpt / "tokenizer.json").write_bytes(with_split((ckpt / "tokenizer.json").read_bytes(), pattern))
    with pytest.raises(CheckpointError, match=r"^tokenizer\.json: its pre_tokenizer's Split regex"):
        load_checkpoint(ckpt)
    assert cli_main(["translate", "a" * 1500 + "!", "--checkpoint", str(ckpt)]) == 2
    err = capfd.readouterr().err  # the file descriptor: a Rust panic writes there, past Python's sys.stderr
    assert err.startswith("error: tokenizer.json: its pre_tokenizer's Split regex") and err.count("\n") == 1


@pytest.mark.parametrize("where, normalizer", [
    ("normalizer's Replace", {"type": "Replace", "pattern": {"Regex": SLOW}, "content": " "}),
    ("normalizer's Replace", {"type": "Sequence", "normalizers": [
        {"type": "NFC"}, {"type": "Replace", "pattern": {"Regex": "(x+x+)+y"}, "content": ""}]}),
])
def test_a_hostile_regex_anywhere_in_the_file_is_refused(where, normalizer):
    data = with_normalizer(bart_tokenizer_json(), normalizer)
    with pytest.raises(TokenizerError, match=rf"^tokenizer\.json: its {where} regex"):
        HFTokenizer(data, pad_id=1, bos_id=2, eos_id=2)


def test_the_regexes_the_supported_families_write_are_read():
    """sentencepiece's normalizer as the converters write it for mBART, NLLB and T5, GPT-2's split and a split of
    user-defined pieces still load and encode."""
    spaces = [{"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "},
              {"type": "Replace", "pattern": {"Regex": r"\A +| +\z"}, "content": ""},
              {"type": "Replace", "pattern": {"Regex": r"\A▁"}, "content": "▁"}]
    gpt2 = next(pattern for pattern in KNOWN_REGEXES if pattern.startswith("'s"))
    data = with_split(with_split(bart_tokenizer_json(), gpt2), "<sep\\>|\\[MASK\\]|x")
    tokenizer = HFTokenizer(with_normalizer(data, {"type": "Sequence", "normalizers": spaces}), pad_id=1, bos_id=2,
                            eos_id=2)
    assert tokenizer.decode(tokenizer.encode("  The   house ")) == "The house"


def test_a_model_kind_outside_the_families_is_refused():
    tk = tokenizers.Tokenizer(tokenizers.models.WordPiece({"<unk>": 0, "a": 1}, unk_token="<unk>"))
    with pytest.raises(TokenizerError, match=r"^tokenizer\.json: its model is WordPiece, not BPE or Unigram"):
        HFTokenizer(tk.to_str().encode(), pad_id=0, bos_id=0, eos_id=0)


def unigram_json(longest: int) -> bytes:
    """A Unigram tokenizer.json whose pieces are "a" to "a" x ``longest``, as a hostile file would hold."""
    vocab = [("<unk>", 0.0), ("<pad>", 0.0), ("</s>", 0.0)] + [("a" * n, -float(n)) for n in range(1, longest + 1)]
    return tokenizers.Tokenizer(tokenizers.models.Unigram(vocab, unk_id=0)).to_str().encode()


def test_a_unigram_model_with_pieces_longer_than_sentencepiece_writes_is_refused():
    """Unigram's lattice holds every piece matching at every position: pieces of up to 3,000 "a"s took seconds on a
    few thousand characters. Pieces of at most 64 characters are read (sentencepiece trains at most 16)."""
    HFTokenizer(unigram_json(MAX_UNIGRAM_PIECE_CHARS), pad_id=1, bos_id=2, eos_id=2)
    with pytest.raises(TokenizerError, match=r"^tokenizer\.json: its Unigram model has a piece of 65 characters, more "
                                             r"than the 64 allowed"):
        HFTokenizer(unigram_json(MAX_UNIGRAM_PIECE_CHARS + 1), pad_id=1, bos_id=2, eos_id=2)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(min_size=1, max_size=12), min_size=1, max_size=20))
def test_an_alternation_of_plain_pieces_is_known_and_any_repetition_is_not(pieces):
    alternation = "|".join(re.escape(piece) for piece in pieces)
    assert is_known_regex(alternation) == (len(alternation) <= MAX_ALTERNATION_CHARS)
    for hostile in (f"(?:{alternation})+!", f"{alternation}*", f"[{alternation}]{{2,}}", f"(a|{alternation})\\1"):
        assert not is_known_regex(hostile)


@pytest.fixture
def panicking(tmp_path) -> HFTokenizer:
    """A tokenizer whose library object panics on encoding (the retry-limit regex put past the load checks, as a
    future tokenizers release might panic on its own)."""
    tokenizer = HFTokenizer(bart_tokenizer_json(), pad_id=1, bos_id=2, eos_id=2)
    tokenizer.tk = tokenizers.Tokenizer.from_str(with_split(bart_tokenizer_json(), PANICS).decode())
    return tokenizer


def test_a_rust_panic_while_encoding_is_one_tokenizer_error(panicking):
    with pytest.raises(BaseException) as raw:  # what the library raises: not an Exception at all
        panicking.tk.encode("a" * 60 + "!")
    assert not isinstance(raw.value, Exception)
    with pytest.raises(TokenizerError) as info:
        panicking.encode("a" * 60 + "!")
    assert str(info.value).startswith("tokenizer.json: cannot encode the text (") and "\n" not in str(info.value)


def test_a_rust_panic_reaches_the_app_and_cli_as_the_users_one_line(panicking):
    """prepare_source is where the app and the CLI encode a visitor's text: its InputError is shown as one message."""
    with pytest.raises(InputError, match=r"^The model's tokenizer cannot read this text: tokenizer\.json: cannot enc"):
        prepare_source(panicking, "a" * 60 + "!")


def test_keyboard_interrupt_is_not_swallowed(monkeypatch):
    tokenizer = HFTokenizer(bart_tokenizer_json(), pad_id=1, bos_id=2, eos_id=2)

    class Interrupting:
        def encode(self, *args: object, **kwargs: object) -> None:
            raise KeyboardInterrupt

    monkeypatch.setattr(tokenizer, "tk", Interrupting())
    with pytest.raises(KeyboardInterrupt):
        tokenizer.encode("a")

