"""Keeping names and numbers within the search's limits (at most 8 phrases of at most 24 pieces): adjacent numbers too
long for one phrase are kept as several, and whatever cannot be kept is named with the reason, never dropped
silently. The shipped en-de tokenizer and copy lexicon, no model run (the CLI test runs one)."""
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from model.checkpoints.files import read_copy_lexicon
from model.decoding.constrained_beam import MAX_KEEP_PIECES, MAX_KEEPS
from model.serving.inference import CUT_OFF, TOO_LONG, TOO_MANY, prepare_source, unkept_notes
from model.tokenization.joint import Tokenizer

ROOT = Path(__file__).resolve().parents[2]
EN_DE = ROOT / "pretrained" / "en-de"


@pytest.fixture(scope="module")
def en_de() -> tuple[Tokenizer, object]:
    return Tokenizer((EN_DE / "tokenizer.model").read_bytes()), read_copy_lexicon(EN_DE)


def numbers(first: int, count: int) -> list[str]:
    return [str(n) for n in range(first, first + count)]


def covered(source) -> list[str]:
    """Every word of the kept and the not-kept phrases, in order."""
    return [word for phrase in (*source.kept, *(p for p, _ in source.unkept)) for word in phrase.split()]


def test_thirty_adjacent_numbers_are_all_kept_in_parts_that_fit(en_de):
    """The issue's case: "1000 1001 ... 1029" as one phrase has more than 24 pieces and was dropped whole."""
    tokenizer, lexicon = en_de
    source = prepare_source(tokenizer, " ".join(numbers(1000, 30)), lexicon=lexicon)
    assert " ".join(source.kept).split() == numbers(1000, 30) and not source.unkept
    assert 1 < len(source.kept) <= MAX_KEEPS
    assert all(1 <= len(tokenizer.encode(part)) <= MAX_KEEP_PIECES for part in source.kept)


def test_more_numbers_than_eight_phrases_hold_are_named_as_not_kept(en_de):
    tokenizer, lexicon = en_de
    source = prepare_source(tokenizer, " ".join(numbers(1000, 100)), lexicon=lexicon)
    assert len(source.kept) == MAX_KEEPS and covered(source) == numbers(1000, 100)
    assert {why for _, why in source.unkept} == {TOO_MANY}
    note, = unkept_notes(source.unkept)
    assert note.startswith(f"not kept ({TOO_MANY}): 10") and note.endswith(" more") is (len(source.unkept) > 4)


def test_a_number_longer_than_a_phrase_and_one_past_the_cut_are_named_with_why(en_de):
    tokenizer, lexicon = en_de
    long_number = "7" * 120
    source = prepare_source(tokenizer, f"Call {long_number} or 2023 now.", lexicon=lexicon)
    assert source.kept == ("2023",) and source.unkept == ((long_number, TOO_LONG),)
    assert unkept_notes(source.unkept) == [f"not kept ({TOO_LONG}): {'7' * 39}…"]
    source = prepare_source(tokenizer, "It was 2019. " + "Then it rained. " * 40 + "In 2024 it did not.",
                            max_len=32, lexicon=lexicon)
    assert source.kept == ("2019",) and source.unkept == (("2024", CUT_OFF),)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 10**9), min_size=1, max_size=120), st.sampled_from([" ", " and ", ", "]))
def test_no_number_is_dropped_silently(en_de, values, separator):
    """Every number is kept (in a part of at most 24 pieces, at most 8 parts) or listed with why it was not."""
    tokenizer, lexicon = en_de
    words = [str(v) for v in values]
    source = prepare_source(tokenizer, separator.join(words), lexicon=lexicon)
    assert len(source.kept) <= MAX_KEEPS
    assert all(1 <= len(tokenizer.encode(part)) <= MAX_KEEP_PIECES for part in source.kept)
    assert sorted(set(covered(source))) == sorted({w.strip(",") for w in words} - {"and"})


def test_the_cli_says_what_it_kept_and_what_not():
    text = " ".join(numbers(1000, 60))
    proc = subprocess.run([sys.executable, "-m", "model", "translate", text, "--beam", "2", "--max-len", "8",
                           "--keep-names"], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr
    notes = [line for line in proc.stderr.splitlines() if line.startswith("note: kept") or "not kept" in line]
    assert notes[0].startswith("note: kept 1000 1001") and "nothing" not in notes[0]
    assert notes[1].startswith(f"note: not kept ({TOO_MANY}): 10") and notes[1].endswith(" … 1059 (28 words)")
