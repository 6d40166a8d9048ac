from model.tokenization.pieces import BOS, EOS, PAD, clean_text, word_groups, word_labels
from tests.conftest import SENTENCES


def test_round_trip_of_text_including_unicode(tokenizer):
    for text in SENTENCES[:10]:
        assert tokenizer.decode(tokenizer.encode(text)) == text


def test_specials_are_known_and_shown_by_name(tokenizer):
    assert (tokenizer.pad_id, tokenizer.bos_id, tokenizer.eos_id) == (PAD, BOS, EOS)
    ids = [BOS, *tokenizer.encode("Das Haus"), EOS, PAD]
    pieces = tokenizer.pieces(ids)
    assert pieces[0] == "<s>" and pieces[-2:] == ["</s>", "<pad>"]
    assert tokenizer.decode(ids) == "Das Haus"
    assert tokenizer.encode_source("Das Haus")[-1] == EOS


def test_unknown_characters_do_not_break_decoding(tokenizer):
    assert tokenizer.decode(tokenizer.encode("Ωmega ⊕ Ψ")) != ""


def test_word_groups_merge_pieces_of_one_word():
    pieces = ["▁The", "▁hou", "se", "▁is", "▁sm", "al", "l", ".", "</s>"]
    groups = word_groups(pieces)
    assert groups == [[0], [1, 2], [3], [4, 5, 6, 7], [8]]
    assert word_labels(pieces, groups) == ["The", "house", "is", "small.", "</s>"]


def test_word_groups_keep_specials_apart():
    assert word_groups(["<s>", "ab", "▁c", "</s>", "<pad>"]) == [[0], [1], [2], [3], [4]]


def test_clean_text_normalises_and_strips_control_characters():
    assert clean_text("  Cafe\u0301\u200b\tbar \x00 ") == "Café bar"


def test_unknown_share_counts_unknown_and_byte_fallback_pieces():
    from model.serving.inference import Source, unknown_pieces, unknown_share

    source = Source(text="x", ids=(5, 1, 7, 8, 3), pieces=("▁a", "<unk>", "<0xE4>", "<0xB8>", "</s>"), dropped=0)
    assert unknown_share(source, unk_id=1) == 0.75  # EOS left out: 3 of the 4 pieces name no known character
    assert unknown_pieces(source, unk_id=1) == (1, 2)  # one <unk>, two raw bytes: the app names both
