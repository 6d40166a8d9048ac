"""Tests for data/build_corpus.py and the modules of data/ it calls: the parsing, filtering, dedup and split
rules, on small hand-written fixtures (Ding lines, a .mo file written byte by byte). No Debian needed."""

from __future__ import annotations

import collections
import csv
import gzip
import io
import os
import random
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from data.cleaning import english_key, looks_reversed, looks_untranslated, normalize_text, ratio_ok, word_count
from data.corpus_file import corpus_stem, gzip_bytes, rows_to_tsv
from data.credits import MORE_COPYRIGHTS, render_attribution
from data.ding import first_slash_alternative, parse_ding_line, parse_ding_words, strip_ding_notes
from data.game_locales import pair_key_values, parse_lua_locale, parse_stamp_description, read_key_values
from data.gettext_catalogues import (
    catalog_pairs,
    clean_mo_pair,
    parse_mo_catalog,
    read_mo,
    read_po,
    strip_accelerators,
    strip_context,
)
from data.html_prose import (
    CODE_MARK,
    handbook_paragraphs,
    help_paragraphs,
    pair_help_pages,
    pair_paragraph_lists,
    prose_pairs,
    prose_text,
)
from data.openttd import _LNG_HEADER_SIZE, _LNG_OFFSETS_AT, clean_openttd_pair, pair_openttd, read_openttd_lng
from data.qt_translations import _QM_MAGIC, parse_qm_messages, read_qm
from data.sentence_pairs import is_sentence
from data.source_readers import LOHELP_SKIP, pair_page_trees, read_more_source
from data.sources import (
    ALL_SOURCES,
    EXTRA_SOURCES,
    MORE_SOURCES,
    PLUS_SOURCES,
    SOURCE_INFO,
    SOURCE_TIERS,
    SOURCES,
    WORDS_SOURCES,
)
from data.splits import (
    SPLIT_BUCKETS,
    SPLITS,
    TEST_BUCKETS,
    VALID_BUCKETS,
    Row,
    assign_split,
    check_split_sizes,
    count_rows,
    deduplicate,
    format_counts,
    make_rows,
)

ROOT = Path(__file__).resolve().parents[2]


# ------------------------------------------------------------------ fixtures


def write_mo(path: Path, entries: dict[str, str]) -> None:
    """A GNU .mo file (little-endian, no hash table) holding entries, as msgfmt writes it.

    Plural entries are "singular\\0plural" -> "form0\\0form1"; a context is "ctx\\x04msgid"."""
    items = sorted((k.encode("utf-8"), v.encode("utf-8")) for k, v in entries.items())
    ids = strs = b""
    spans = []
    for k, v in items:
        spans.append((len(k), len(ids), len(v), len(strs)))
        ids += k + b"\0"
        strs += v + b"\0"
    n = len(items)
    header_size = 7 * 4
    ids_start = header_size + 16 * n
    strs_start = ids_start + len(ids)
    table = b"".join(struct.pack("<2I", ln, ids_start + off) for ln, off, _, _ in spans)
    table += b"".join(struct.pack("<2I", ln, strs_start + off) for _, _, ln, off in spans)
    header = struct.pack("<7I", 0x950412DE, 0, n, header_size, header_size + 8 * n, 0, 0)
    path.write_bytes(header + table + ids + strs)


MO_HEADER = (
    "Content-Type: text/plain; charset=UTF-8\n"
    "Plural-Forms: nplurals=2; plural=(n != 1);\n"
)


@pytest.fixture
def mo_file(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.mo"
    write_mo(
        path,
        {
            "": MO_HEADER,
            "The orcs are coming from the north.": "Die Orks kommen aus dem Norden.",
            "dialog|label\x04Do you want to save the file?": "Möchten Sie die Datei speichern?",
            "One unit was lost today.\0%d units were lost today.":
                "Heute ging eine Einheit verloren.\0Heute gingen %d Einheiten verloren.",
            "Two soldiers were lost today.\0Many soldiers were lost today.":
                "Heute fielen zwei Soldaten.\0Heute fielen viele Soldaten.",
            "%s was rejected by the server.": "%s wurde vom Server abgewiesen.",
            "~Open the selected file now.": "~Öffnen Sie jetzt die gewählte Datei.",
            "Properties": "Eigenschaften",
            "Run! Save yourselves!": "Lauft! Rettet euch!",
        },
    )
    return path


# ------------------------------------------------------------------ text normalisation


def test_normalize_text_nfc_whitespace_invisible_and_typed_forms():
    raw = " Er\u00a0sagt:\n\t„Scho\u0308n\u00ad!“ Don\u2019t\u2026 "
    assert normalize_text(raw) == "Er sagt: „Schön!“ Don't..."


def test_word_count_ignores_punctuation_tokens():
    assert word_count("neither ... nor") == 2
    assert word_count("It is 5 - 3 now.") == 5


def test_ratio_ok_bounds():
    assert ratio_ok("a" * 10, "b" * 10)
    assert not ratio_ok("a" * 10, "b" * 3)
    assert not ratio_ok("a" * 10, "b" * 26)
    assert not ratio_ok("", "b")


# ------------------------------------------------------------------ Ding


def test_parse_ding_pairs_subentries_in_order_first_synonym_notes_stripped():
    line = (
        "Das ist mir Wurst. [ugs.]; Das ist mir egal. | Er kommt {vi} heute (bestimmt) nach Hause. "
        ":: I couldn't care less. [coll.]; I don't care. | He is coming home today.\n"
    )
    assert parse_ding_line(line) == [
        ("I couldn't care less.", "Das ist mir Wurst."),
        ("He is coming home today.", "Er kommt heute nach Hause."),
    ]


def test_parse_ding_drops_short_subentries_but_keeps_the_rest_aligned():
    line = (
        "Leidenschaft {f} | Leidenschaften {pl} | eine Leidenschaft für etw. haben "
        ":: passion | passions | to have a passion for sth."
    )
    assert parse_ding_line(line) == [("to have a passion for sth.", "eine Leidenschaft für etw. haben")]


def test_parse_ding_skips_lines_whose_subentry_counts_differ():
    assert parse_ding_line("Er ist sehr müde. | Sie auch. :: He is very tired.") == []


def test_parse_ding_skips_comments_and_malformed_lines():
    assert parse_ding_line("# Version :: devel 2023-01-30") == []
    assert parse_ding_line("Das ist gut so hier") == []
    assert parse_ding_line("a b c :: d e f :: g h i") == []


def test_strip_ding_notes_nested_abbreviations_and_crossrefs():
    text = "Genfer Flüchtlingskonvention {f} /GFK/ (Abkommen (von 1951)) [pol.] <GK> ~Asylrecht"
    assert normalize_text(strip_ding_notes(text)) == "Genfer Flüchtlingskonvention"


def test_parse_ding_resolves_word_slash_alternatives_to_the_first():
    line = ("Es war purer/reiner Zufall. | Er fuhr 50 km/h schnell. :: "
            "It was sheer/pure coincidence. | He drove at 50 km/h fast.")
    assert parse_ding_line(line) == [
        ("It was sheer coincidence.", "Es war purer Zufall."),
        ("He drove at 50 km/h fast.", "Er fuhr 50 km/h schnell."),
    ]
    assert first_slash_alternative("to be/keep/stay ahead of sb./sth.") == "to be ahead of sb."


@pytest.mark.parametrize(
    "line",
    [
        "ein Gerücht in Umlauf / in die Welt setzen :: to put out a rumour now",  # spaced slash
        "jdm. ... geben lassen :: to give sb. ... away",                           # placeholder
        "Ja ja ja. :: Yes, yes, yes, and so on and so forth for a very long time indeed.",  # ratio
    ],
)
def test_parse_ding_filters(line):
    assert parse_ding_line(line) == []


def test_parse_ding_swaps_back_reversed_entries():
    line = ("In the current situation many investors are holding back. :: "
            "In der aktuellen Situation halten sich viele Anleger zurück.")
    assert parse_ding_line(line) == [
        ("In the current situation many investors are holding back.",
         "In der aktuellen Situation halten sich viele Anleger zurück.")
    ]
    assert not looks_reversed("Die, villain, die!", "Stirb, Schurke, stirb!")


# ------------------------------------------------------------------ .mo catalogues


def test_read_mo_and_parse_catalog_end_to_end(mo_file: Path):
    pairs = parse_mo_catalog(read_mo(mo_file.read_bytes()))
    assert sorted(pairs) == sorted([
        ("The orcs are coming from the north.", "Die Orks kommen aus dem Norden."),
        ("Do you want to save the file?", "Möchten Sie die Datei speichern?"),   # context gone
        ("One unit was lost today.", "Heute ging eine Einheit verloren."),      # plural form 0
        ("Two soldiers were lost today.", "Heute fielen zwei Soldaten."),       # not form 1
        ("Open the selected file now.", "Öffnen Sie jetzt die gewählte Datei."),  # accelerator
    ])
    # dropped: the format string, the one-word label, and the two-word exclamations


def test_catalog_pairs_keeps_only_the_first_plural_form_and_skips_header():
    catalog = {"": "header", ("unit", 0): "Einheit", ("unit", 1): "Einheiten", "x": ""}
    assert list(catalog_pairs(catalog)) == [("unit", "Einheit")]


@pytest.mark.parametrize(
    "msgid, expected",
    [
        ("dialog|label\x04Save the file.", "Save the file."),
        ("teamname^Illusion", "Illusion"),
        ("?plural:Sicilians", "Sicilians"),
        ("Why? Because: it works.", "Why? Because: it works."),
    ],
)
def test_strip_context(msgid, expected):
    assert strip_context(msgid) == expected


@pytest.mark.parametrize(
    "en, de",
    [
        ("%s was rejected by the server.", "%s wurde vom Server abgewiesen."),
        ("The value %(name)s is not valid here.", "Der Wert %(name)s ist hier ungültig."),
        ("The constraint $1 was not validated.", "Die Bedingung $1 wurde nicht eingehalten."),
        ("Use the {name} field for the file.", "Nutzen Sie das Feld {name} für die Datei."),
        ("Each unit has <bold>text='hitpoints'</bold> here.", "Jede Einheit hat hier Lebenspunkte."),
        ("Visit https://example.org for more help.", "Besuchen Sie example für mehr Hilfe."),
        ("Visit www.example for more help today.", "Besuchen Sie die Seite für mehr Hilfe."),
        ("Press Tom &amp; Jerry to start the show.", "Drücken Sie Tom und Jerry zum Start."),
        ("See the file settings.cfg for details.", "Siehe die Datei für alle Details."),
        ("The error STR_NO_FILE was raised here.", "Der Fehler wurde hier ausgelöst."),
        ("The time limit is # seconds long.", "Das Zeitlimit ist # Sekunden lang."),
    ],
)
def test_clean_mo_pair_rejects_templates_markup_and_urls(en, de):
    assert clean_mo_pair(en, de) == []


def test_clean_mo_pair_keeps_the_same_sentence_without_markup():
    # the control for the rejections above: an ordinary sentence passes the same filter
    assert clean_mo_pair("The server rejected the request.", "Der Server hat die Anfrage abgewiesen.") == [
        ("The server rejected the request.", "Der Server hat die Anfrage abgewiesen.")
    ]
    assert clean_mo_pair("Boosts science by 50% in each city.", "Erhöht die Forschung in jeder Stadt um 50%.") != []


def test_clean_mo_pair_strips_accelerators():
    assert clean_mo_pair("_Select the level you want.", "E_bene jetzt bitte auswählen.") == [
        ("Select the level you want.", "Ebene jetzt bitte auswählen.")
    ]
    assert strip_accelerators("&File and ~Slide Show & more") == "File and Slide Show & more"


def test_clean_mo_pair_splits_when_sentence_counts_match():
    en = "Welcome to the camp. Rest here tonight! Are you ready to march?"
    de = "Willkommen im Lager. Ruht euch heute Nacht aus! Seid ihr bereit zu marschieren?"
    assert clean_mo_pair(en, de) == [
        ("Welcome to the camp.", "Willkommen im Lager."),
        ("Rest here tonight!", "Ruht euch heute Nacht aus!"),
        ("Are you ready to march?", "Seid ihr bereit zu marschieren?"),
    ]


def test_clean_mo_pair_keeps_whole_message_when_counts_differ():
    en = "He stood up. Then he left the room in silence."
    de = "Er stand auf und verließ schweigend den Raum."
    assert clean_mo_pair(en, de) == [(en, de)]


def test_clean_mo_pair_drops_untranslated_entries():
    assert clean_mo_pair("November is a cold month.", "November is a cold month.") == []


@pytest.mark.parametrize(
    "text, ok",
    [
        ("The orcs are coming.", True),
        ("Is that all you have?", True),
        ('He said "run."', True),
        ("the orcs are coming.", False),          # no capital
        ("The orcs are coming", False),           # no end punctuation
        ("Run away!", False),                     # two words
        ("Insert special character...", False),   # menu item / trailing off
        ("Word " * 41 + "end.", False),           # too long
    ],
)
def test_is_sentence(text, ok):
    assert is_sentence(text) is ok


# ------------------------------------------------------------------ OpenTTD string tables

BLACK, WHITE, STRING, COMMA = "\ue04b", "\ue047", "\ue02b", "\ue02d"   # {BLACK} {WHITE} {STRING} {COMMA}


def test_pair_openttd_pairs_by_string_id_and_filters():
    english = {
        "STR_TOWN_GROWS": "The town grows faster when it is served well.",
        "STR_TOOLTIP_DEPOT": BLACK + "Build a train depot for buying and servicing trains.",
        "STR_NEWS_CRASH": BLACK + "Train crashes at " + STRING + "!",
        "STR_INCOME": WHITE + "Income Graph",
        "STR_SAVE_HELP": "Save the game now. Load it again later.",
        "STR_UNTRANSLATED": "This string has no German translation yet.",
        "STR_ONLY_ENGLISH": "Nobody has translated this message at all.",
        "STR_COST": "The cost is " + COMMA + " pounds per year.",
    }
    german = {
        "STR_INCOME": WHITE + "Einkommensgrafik",
        "STR_SAVE_HELP": "Das Spiel jetzt speichern. Später wieder laden.",
        "STR_TOOLTIP_DEPOT": BLACK + "Ein Zugdepot zum Kaufen und Warten von Zügen bauen.",
        "STR_TOWN_GROWS": "Die Stadt wächst schneller, wenn sie gut bedient wird.",
        "STR_NEWS_CRASH": BLACK + "Zugunglück in " + STRING + "!",
        "STR_UNTRANSLATED": "This string has no German translation yet.",   # strgen's fallback
        "STR_COST": "Die Kosten betragen " + COMMA + " Pfund pro Jahr.",
    }
    assert pair_openttd(english, german) == [
        ("Save the game now.", "Das Spiel jetzt speichern."),                        # split: same sentence count
        ("Load it again later.", "Später wieder laden."),
        ("Build a train depot for buying and servicing trains.",       # leading colour dropped
         "Ein Zugdepot zum Kaufen und Warten von Zügen bauen."),
        ("The town grows faster when it is served well.", "Die Stadt wächst schneller, wenn sie gut bedient wird."),
    ]
    # dropped: {STRING} and {COMMA} templates, the "Income Graph" label, the untranslated
    # fallback, and the id without a German string


@pytest.mark.parametrize(
    "en, de",
    [
        ("Plant trees here.\nThen wait a year.", "Bäume hier pflanzen.\nDann ein Jahr warten."),  # newline
        (BLACK + "Build here " + "\ue037" + "\x01 now please.", BLACK + "Hier jetzt bitte bauen."),  # mid code
        ("Select the track type (rail or monorail) here.", "Hier den Gleistyp {x} wählen, bitte."),  # braces
    ],
)
def test_clean_openttd_pair_drops_codes_control_characters_and_markup(en, de):
    assert clean_openttd_pair(en, de) == []


def write_lng(strings_by_tab: dict[int, list[str]], version: int = 0x1234) -> bytes:
    """A compiled OpenTTD language file as strgen writes it: header, lengths, text, final NUL."""
    header = bytearray(_LNG_HEADER_SIZE)
    header[0:4] = b"LANG"
    header[4:8] = version.to_bytes(4, "little")
    body = b""
    for tab, strings in strings_by_tab.items():
        at = _LNG_OFFSETS_AT + 2 * tab
        header[at:at + 2] = len(strings).to_bytes(2, "little")
    for tab in sorted(strings_by_tab):
        for text in strings_by_tab[tab]:
            raw = text.encode("utf-8")
            n = len(raw)
            body += (bytes([n]) if n < 0xC0 else bytes([0xC0 | n >> 8, n & 0xFF])) + raw
    return bytes(header) + body + b"\0"


def test_read_openttd_lng_ids_are_tab_and_index_and_long_strings_round_trip():
    long_text = "The town grows faster when it is served well. " * 6   # > 0xC0 bytes: two-byte length
    data = write_lng({0: ["", "Nothing"], 4: [BLACK + "Build a depot.", long_text]})
    version, strings = read_openttd_lng(data)
    assert version == 0x1234
    assert strings == {(0, 0): "", (0, 1): "Nothing", (4, 0): BLACK + "Build a depot.", (4, 1): long_text}
    with pytest.raises(ValueError):
        read_openttd_lng(data + b"junk")        # a misread header leaves bytes over
    with pytest.raises(ValueError):
        read_openttd_lng(b"GRF!" + data[4:])


# ------------------------------------------------------------------ dedup and split


def test_deduplicate_exact_duplicates_and_one_german_per_english():
    triples = [
        ("wesnoth", "That sounds good.", "Das hört sich gut an."),
        ("wesnoth", "That sounds good.", "Das hört sich gut an."),
        ("ding", "That sounds good!", "Hört sich gut an."),        # same English key
        ("libreoffice", "Close the window.", "Schließen Sie das Fenster."),
    ]
    result = deduplicate(triples)
    assert len(result) == 2
    # the most frequent translation wins over the earlier source (ding)
    assert ("wesnoth", "That sounds good.", "Das hört sich gut an.") in result
    assert ("libreoffice", "Close the window.", "Schließen Sie das Fenster.") in result


def test_deduplicate_tie_goes_to_earlier_source_and_ignores_input_order():
    triples = [
        ("freeciv", "That goes too far.", "Das geht zu weit."),
        ("ding", "That goes too far.", "Das geht mir über die Hutschnur."),
        ("wesnoth", "We march at dawn.", "Wir marschieren im Morgengrauen."),
    ]
    expected = deduplicate(triples)
    assert ("ding", "That goes too far.", "Das geht mir über die Hutschnur.") in expected
    for seed in range(5):
        shuffled = triples[:]
        random.Random(seed).shuffle(shuffled)
        assert deduplicate(shuffled) == expected


def test_deduplicate_extra_sources_rank_after_the_default_ones():
    triples = [
        ("wesnoth", "Who are you?", "Wer seid ihr?"),
        ("ding", "Who are you?", "Wer bist du?"),
        ("freedroidrpg", "Who are you?", "Wer seid ihr?"),     # two votes for wesnoth's German,
        ("widelands", "Who are you!", "Wer seid ihr?"),        # but from the extra tier
        ("wesnoth", "What are you doing here?", "Was macht du hier?"),
        ("freedroidrpg", "What are you doing here?", "Was machst du hier?"),
        ("freedroidrpg", "What are you doing here?", "Was machst du hier?"),
        ("openttd", "Build a depot for trains.", "Ein Depot für Züge bauen."),
        ("widelands", "Build a port near the sea.", "Baue einen Hafen am Meer."),
        ("warzone2100", "Build a port near the sea.", "Bauen Sie einen Hafen am Meer."),
    ]
    default_only = deduplicate([t for t in triples if t[0] in SOURCES])
    result = deduplicate(triples)
    # every default row is unchanged: extra sources neither outvote it nor tip a tie among its sources
    assert set(default_only) <= set(result)
    assert ("ding", "Who are you?", "Wer bist du?") in result                        # the default tie rule held
    assert ("wesnoth", "What are you doing here?", "Was macht du hier?") in result   # not outvoted 2:1
    # English sentences new to the corpus come from the extra sources, decided among them in order
    assert ("openttd", "Build a depot for trains.", "Ein Depot für Züge bauen.") in result
    assert ("widelands", "Build a port near the sea.", "Baue einen Hafen am Meer.") in result
    assert len(result) == 4
    assert ALL_SOURCES[: len(SOURCES)] == SOURCES


def test_english_key_folds_case_and_punctuation():
    assert english_key("Are you SURE?") == english_key("are you sure!") == "are you sure"
    assert english_key("Don't go.") != english_key("Do go.")


def test_assign_split_is_stable_across_processes_and_variants():
    sentences = [f"Sentence number {i} is here." for i in range(300)]
    here = [assign_split(s) for s in sentences]
    code = (
        f"import sys, json; sys.path.insert(0, {str(ROOT)!r}); from data.splits import assign_split;"
        f"print(json.dumps([assign_split(f'Sentence number {{i}} is here.') for i in range(300)]))"
    )
    env = dict(os.environ, PYTHONHASHSEED="12345")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert __import__("json").loads(out.stdout) == here
    # case and punctuation variants of one sentence can never land in different splits
    assert all(assign_split(s.upper().rstrip(".") + "!") == assign_split(s) for s in sentences)
    assert set(here) <= set(SPLITS)


def test_assign_split_proportions_and_stratification_by_source():
    sizes = {"ding": 40_000, "wesnoth": 12_000, "libreoffice": 6_000, "freeciv": 3_000}
    triples = [
        (src, f"{src} example sentence {i} goes here.", f"{src} Beispielsatz {i} steht hier.")
        for src, n in sizes.items()
        for i in range(n)
    ]
    counts = count_rows(make_rows(triples))
    test_share = TEST_BUCKETS / SPLIT_BUCKETS
    valid_share = VALID_BUCKETS / SPLIT_BUCKETS
    for src, n in sizes.items():
        # binomial: 4 standard deviations of slack for each source
        for split, share in (("test", test_share), ("valid", valid_share)):
            tol = 4 * (n * share * (1 - share)) ** 0.5
            assert abs(counts[src][split] - n * share) <= tol, (src, split, counts[src])
    assert sum(counts["all"].values()) == sum(sizes.values())


def test_make_rows_no_english_in_two_splits_and_sorted():
    triples = [("ding", f"Line {i % 500} is here.", f"Zeile {i} ist hier.") for i in range(2_000)]
    triples += [("wesnoth", f"LINE {i} IS HERE!", f"ZEILE {i}!") for i in range(500)]
    rows = make_rows(triples)
    keys = [english_key(r.en) for r in rows]
    assert len(keys) == len(set(keys)) == 500
    order = [(SPLITS.index(r.split), SOURCES.index(r.source), r.en, r.de) for r in rows]
    assert order == sorted(order)


def test_check_split_sizes():
    small = {"all": collections.Counter(train=90_000, valid=999, test=1_500)}
    assert len(check_split_sizes(small)) == 1
    ok = {"all": collections.Counter(train=90_000, valid=1_000, test=1_000)}
    assert check_split_sizes(ok) == []


# ------------------------------------------------------------------ output


def test_tsv_gzip_is_byte_deterministic_and_round_trips_quotes():
    rows = [
        Row("wesnoth", "train", 'He shouted "Charge!" and ran.', "Er rief „Angriff!“ und rannte."),
        Row("ding", "test", "It's a \"so-called\" plan.", 'Das ist ein "sogenannter" Plan.'),
    ]
    blob = gzip_bytes(rows_to_tsv(rows))
    assert blob == gzip_bytes(rows_to_tsv(rows))
    assert blob[4:8] == b"\0\0\0\0"          # mtime 0
    assert blob[3] & 0x08 == 0                # no file name in the header
    text = gzip.decompress(blob).decode("utf-8")
    parsed = list(csv.reader(io.StringIO(text), delimiter="\t"))
    assert parsed[0] == ["source", "split", "en", "de"]
    assert parsed[1:] == [[r.source, r.split, r.en, r.de] for r in rows]


def test_render_attribution_names_every_source_licence_and_count():
    counts = {s: collections.Counter(train=10 * (i + 1)) for i, s in enumerate(SOURCES)}
    counts["all"] = collections.Counter(train=100)
    text = render_attribution(counts, {"trans-de-en": "1.9-6"})
    for name in SOURCES:
        assert name in text and SOURCE_INFO[name].licence in text
    assert "`trans-de-en` 1.9-6" in text and "| 40 |" in text and "derived work" in text
    assert not any(name in text for name in EXTRA_SOURCES)


def test_render_attribution_plus_names_the_extra_sources_and_their_licences():
    rows = [Row(s, "train", f"{s} sentence number one.", f"{s} Satz Nummer eins.") for s in PLUS_SOURCES]
    counts = count_rows(rows, PLUS_SOURCES)
    text = render_attribution(counts, {"openttd-data": "13.0-2"}, PLUS_SOURCES, "data/en-de-plus.tsv.gz")
    assert text.startswith("# Attribution and licences of data/en-de-plus.tsv.gz")
    assert not any(f"| {name} (" in text for name in MORE_SOURCES)
    for name in PLUS_SOURCES:
        info = SOURCE_INFO[name]
        assert f"| {name} ({info.description}) | 1 |" in text and info.licence in text
    assert "`openttd-data` 13.0-2" in text and "GPL-2.0-only" in text and "| **8** |" in text
    assert format_counts(counts).splitlines()[-1].split() == ["all", "8", "0", "0", "8"]


# ------------------------------------------------------------------ --more: .po files

PO_TEXT = r'''# German translation
msgid ""
msgstr ""
"Content-Type: text/plain; charset=UTF-8\n"

#: src/level.cpp:10
msgid "The penguins were drawn towards it and crashed."
msgstr "Die Pinguine zog es dorthin und ihr Boot schlug leck."

msgctxt "menu"
msgid ""
"Dig a tunnel and you might "
"make it to the exit."
msgstr ""
"Grabe einen Tunnel und du könntest "
"es zum Ausgang schaffen."

#, fuzzy
msgid "This guess was never confirmed by anyone."
msgstr "Diese Vermutung hat niemand bestätigt."

#, c-format
msgid "One penguin was saved today."
msgid_plural "%d penguins were saved today."
msgstr[0] "Heute wurde ein Pinguin gerettet."
msgstr[1] "Heute wurden %d Pinguine gerettet."
msgid "He said \"run\" and ran away."
msgstr "Er sagte \"lauf\" und lief davon."

#~ msgid "An obsolete entry is only a comment."
#~ msgstr "Ein veralteter Eintrag ist nur ein Kommentar."
'''


def test_read_po_keys_like_read_mo_skips_fuzzy_and_obsolete():
    catalog = read_po(PO_TEXT)
    assert catalog[""].startswith("Content-Type")
    assert catalog["menu\x04Dig a tunnel and you might make it to the exit."] == (
        "Grabe einen Tunnel und du könntest es zum Ausgang schaffen."
    )
    assert catalog[("One penguin was saved today.", 0)] == "Heute wurde ein Pinguin gerettet."
    assert catalog[("One penguin was saved today.", 1)] == "Heute wurden %d Pinguine gerettet."
    assert catalog['He said "run" and ran away.'] == 'Er sagte "lauf" und lief davon.'   # no blank line before it
    assert "This guess was never confirmed by anyone." not in catalog                       # fuzzy
    assert not any("obsolete" in str(key) for key in catalog)


def test_read_po_catalog_reads_like_a_mo_catalog(tmp_path: Path):
    entries = {
        "": MO_HEADER,
        "The penguins were drawn towards it and crashed.": "Die Pinguine zog es dorthin und ihr Boot schlug leck.",
        "menu\x04Dig a tunnel and you might make it to the exit.":
            "Grabe einen Tunnel und du könntest es zum Ausgang schaffen.",
        "One penguin was saved today.\0%d penguins were saved today.":
            "Heute wurde ein Pinguin gerettet.\0Heute wurden %d Pinguine gerettet.",
        'He said "run" and ran away.': 'Er sagte "lauf" und lief davon.',
    }
    write_mo(tmp_path / "same.mo", entries)
    from_mo = parse_mo_catalog(read_mo((tmp_path / "same.mo").read_bytes()))
    assert parse_mo_catalog(read_po(PO_TEXT)) == from_mo
    assert ("Dig a tunnel and you might make it to the exit.",
            "Grabe einen Tunnel und du könntest es zum Ausgang schaffen.") in from_mo


# ------------------------------------------------------------------ --more: Qt .qm files


def write_qm(messages: list[tuple[str, list[str | None], str]]) -> bytes:
    """A Qt .qm file as lrelease writes it: magic, a hashes block, then the messages block of
    (source, translations, context) records; a None translation is written as null."""
    def field(tag: int, raw: bytes) -> bytes:
        return bytes([tag]) + len(raw).to_bytes(4, "big") + raw

    block = b""
    for source, translations, context in messages:
        for tr in translations:
            block += field(3, tr.encode("utf-16-be")) if tr is not None else bytes([3]) + b"\xff" * 4
        block += field(6, source.encode("utf-8")) + field(7, context.encode("utf-8"))
        block += field(8, b"a comment") + bytes([5]) + b"\0\0\0\0" + bytes([1])
    hashes = field(0x42, b"\0" * 8)
    return _QM_MAGIC + hashes + field(0x69, block)


def test_read_qm_source_first_translation_and_null_translations():
    data = write_qm([
        ("There's already a team with same name in the list.",
         ["Es gibt bereits ein Team mit dem gleichen Namen in der Liste."], "PageNetGame"),
        ("%n file(s) were exported.", ["Eine Datei wurde exportiert.", "%n Dateien wurden exportiert."], "Export"),
        ("Nobody has translated this message yet.", [None], "Main"),
    ])
    assert read_qm(data) == [
        ("There's already a team with same name in the list.",
         "Es gibt bereits ein Team mit dem gleichen Namen in der Liste."),
        ("%n file(s) were exported.", "Eine Datei wurde exportiert."),
    ]
    assert parse_qm_messages(read_qm(data)) == [
        ("There's already a team with same name in the list.",
         "Es gibt bereits ein Team mit dem gleichen Namen in der Liste."),
    ]   # the %n template is dropped by the .mo rules
    with pytest.raises(ValueError):
        read_qm(b"\0" * 16 + data[16:])
    broken = _QM_MAGIC + bytes([0x69]) + (1).to_bytes(4, "big") + bytes([0x42])
    with pytest.raises(ValueError):
        read_qm(broken)


# ------------------------------------------------------------------ --more: Hedgewars


def test_parse_lua_locale_unescapes_and_skips_comments():
    text = (
        'locale = {\n'
        '["Please, stop releasing your \\"smoke signals\\"!"]="Bitte hör mit deinen »Rauchzeichen« auf!",\n'
        '["+1 barrel!"] = "+1 Fass!", -- Tumbler\n'
        '-- ["Never used in any mission."] = "Nie benutzt.",\n'
        '["Line one\\nline two"]="Zeile eins\\nZeile zwei",\n'
        '}\n'
    )
    assert parse_lua_locale(text) == [
        ('Please, stop releasing your "smoke signals"!', "Bitte hör mit deinen »Rauchzeichen« auf!"),
        ("+1 barrel!", "+1 Fass!"),
        ("Line one\nline two", "Zeile eins\nZeile zwei"),
    ]


def test_key_values_pair_by_key_and_skip_lists_and_comments():
    english = read_key_values(
        "; a comment = not a key\n"
        'Basic_Training.desc="Learn how to use the bazooka and destroy all targets."\n'
        "02:00=%1 has been slain.\n02:00=%1 is no more.\n"
        "04:00=Attack your enemies using a simple grenade.\n"
        "05:01=Only in English.\n"
    )
    german = read_key_values(
        'Basic_Training.desc="Lern, wie man die Bazooka benutzt, und zerstöre alle Ziele."\n'
        "02:00=%1 wurde erschlagen.\n"
        "04:00=Greife deine Feinde mit einer einfachen Granate an.\n"
    )
    assert english["02:00"] == ["%1 has been slain.", "%1 is no more."]
    assert "; a comment " not in english
    assert pair_key_values(english, german) == [
        ("Attack your enemies using a simple grenade.", "Greife deine Feinde mit einer einfachen Granate an."),
        ("Learn how to use the bazooka and destroy all targets.",
         "Lern, wie man die Bazooka benutzt, und zerstöre alle Ziele."),
    ]   # 02:00 is a list of random variants, 05:01 has no German


# ------------------------------------------------------------------ --more: Tux Paint stamps


def test_parse_stamp_description():
    text = "A lit candle.\nda.utf8=Et tændt lys.\nde.utf8=Eine angezündete Kerze.\nes.utf8=Una vela.\n"
    assert parse_stamp_description(text) == ("A lit candle.", "Eine angezündete Kerze.")
    assert parse_stamp_description("A lit candle.\nfr.utf8=Une bougie.\n") is None   # no German
    assert parse_stamp_description("de.utf8=Eine Kerze.\n") is None                  # no English
    assert parse_stamp_description("") is None


# ------------------------------------------------------------------ --more: HTML help pages and a book


def test_prose_text_keeps_formatting_marks_code_and_rejects_blocks_and_hidden_text():
    assert prose_text('On the <span class="emph">Insert</span> bar, click &quot;<a href="x">Table</a>&quot;.') == (
        'On the Insert bar, click "Table".'
    )
    assert prose_text('Edit <code class="filename">/etc/apt/<em>x</em></code> now.') == f"Edit {CODE_MARK} now."
    assert prose_text('See <span class="citerefentry"><span class="refentrytitle">apt</span>(8)</span>.') == (
        f"See {CODE_MARK}."
    )
    assert prose_text('Enter <span class="literal">=SUM(A1)</span> here.') == f"Enter {CODE_MARK} here."
    assert prose_text('Press <span class="switchinline"><span hidden="true" class="MAC">Cmd</span>Ctrl</span>.') is None
    assert prose_text("Choose one:<ul><li>this</li></ul>") is None
    assert prose_text("First line<br>second line.") is None


def test_prose_pairs_drop_only_the_sentences_holding_code():
    en = 'APT needs a list of sources. The file <code>sources.list</code> holds it. Each line is one source.'
    de = ('APT braucht eine Liste der Quellen. Die Datei <code>sources.list</code> enthält sie. '
          'Jede Zeile ist eine Quelle.')
    assert prose_pairs(en, de) == [
        ("APT needs a list of sources.", "APT braucht eine Liste der Quellen."),
        ("Each line is one source.", "Jede Zeile ist eine Quelle."),
    ]
    # different sentence counts: the paragraph is one unit, and with code in it nothing is kept
    assert prose_pairs(en, "Die Datei <code>sources.list</code> listet die Quellen, eine pro Zeile.") == []
    assert prose_pairs("Insert a table now.", "Insert a table now.") == []   # untranslated


def test_pair_help_pages_by_paragraph_id():
    en_page = (
        '<h1 id="hd_1">Tables</h1>'
        '<p id="par_1" class="paragraph" dir="auto">Place the cursor where you want to insert the table.</p>'
        '<p id="par_2" class="listitem">Choose <span class="emph">Table - Insert Table</span>.</p>'
        '<p id="par_3" class="paragraph">Shown twice here.</p><p id="par_3" class="paragraph">Shown twice here.</p>'
        '<p id="par_4" class="paragraph">Only the English page has this one.</p>'
    )
    de_page = (
        '<p id="par_2" class="listitem">Wählen Sie <span class="emph">Tabelle – Tabelle einfügen</span>.</p>'
        '<p id="par_1" class="paragraph" dir="auto">'
        'Setzen Sie den Cursor an die Stelle, an der die Tabelle stehen soll.</p>'
        '<p id="par_3" class="paragraph">Hier nur einmal gezeigt.</p>'
    )
    assert help_paragraphs(en_page)["par_3"] == ["Shown twice here.", "Shown twice here."]
    assert pair_help_pages(en_page, de_page) == [
        ("Place the cursor where you want to insert the table.",
         "Setzen Sie den Cursor an die Stelle, an der die Tabelle stehen soll."),
        ("Choose Table - Insert Table.", "Wählen Sie Tabelle – Tabelle einfügen."),
    ]   # par_3 occurs twice vs once, par_4 has no German: both skipped


def test_pair_paragraph_lists_in_order_only_when_counts_match():
    en_page = (
        '<div class="para">The kernel cuts time into small slices.</div>'
        '<div class="para">Choose one: <div class="itemizedlist"><ul><li>a</li></ul></div></div>'
        '<div class="para">Such an interface is only an aid.</div>'
    )
    de_page = (
        '<div class="para">Der Kernel teilt die Zeit in kleine Abschnitte auf.</div>'
        '<div class="para">Wählen Sie: <div class="itemizedlist"><ul><li>a</li></ul></div></div>'
        '<div class="para">Eine derartige Schnittstelle ist nur eine Hilfe.</div>'
    )
    en_paras, de_paras = handbook_paragraphs(en_page), handbook_paragraphs(de_page)
    assert len(en_paras) == len(de_paras) == 3
    assert pair_paragraph_lists(en_paras, de_paras) == [
        ("The kernel cuts time into small slices.", "Der Kernel teilt die Zeit in kleine Abschnitte auf."),
        ("Such an interface is only an aid.", "Eine derartige Schnittstelle ist nur eine Hilfe."),
    ]   # the paragraph holding a list is cut at its inner </div> and dropped
    assert pair_paragraph_lists(en_paras, de_paras[:2]) == []


def test_pair_page_trees_pairs_same_relative_paths_and_skips_prefixes(tmp_path: Path):
    pages = {
        "en-US/text/swriter/a.html": '<p id="p1">Click the table border to select it.</p>',
        "de/text/swriter/a.html": '<p id="p1">Klicken Sie auf den Tabellenrand, um sie auszuwählen.</p>',
        "en-US/text/sbasic/b.html": '<p id="p1">Returns the number of open windows.</p>',
        "de/text/sbasic/b.html": '<p id="p1">Gibt die Anzahl der offenen Fenster zurück.</p>',
        "en-US/text/swriter/only_en.html": '<p id="p1">This page has no German version.</p>',
    }
    files = []
    for rel, text in pages.items():
        path = tmp_path / "help" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        files.append(path)
    assert pair_page_trees(files, "help/en-US", "help/de", pair_help_pages, LOHELP_SKIP) == [
        ("Click the table border to select it.", "Klicken Sie auf den Tabellenrand, um sie auszuwählen."),
    ]


@pytest.mark.parametrize(
    "de, english",
    [
        ("See Abschnitt 11.7 for an example of the configuration.", True),
        ("A different way to make your own keys is described in Abschnitt 10.2.", True),
        ("Ein anderer Weg is described in Abschnitt 10.2.", False),   # one English word is not enough
        ("Der ultimative Enttäuschungspreis geht in dieser Runde an: alle!", False),   # "in", "an" are German
        ("Konvertiert in das Format PDF/A-1b, PDF/A-2b oder PDF/A-3b.", False),       # "A" is a letter here
        ("Es ist das einzige, das keine vier Seiten hat.", False),
    ],
)
def test_looks_untranslated(de, english):
    assert looks_untranslated(de) is english


def test_read_more_source_dispatches_by_file_type(tmp_path: Path):
    write_mo(tmp_path / "tuxpaint.mo", {"": MO_HEADER, "Remember to use the left mouse button!":
                                        "Denke daran, die linke Maustaste zu benutzen!"})
    stamp = tmp_path / "stamps" / "animals" / "horse.txt"
    stamp.parent.mkdir(parents=True)
    stamp.write_text("A horse is a large animal.\nde.utf8=Ein Pferd ist ein großes Tier.\n", encoding="utf-8")
    english_only = tmp_path / "stamps" / "animals" / "cat.txt"
    english_only.write_text("A cat sits on the warm mat.\nde.utf8=A cat sits on the mat today.\n", encoding="utf-8")
    assert sorted(read_more_source("tuxpaint", [tmp_path / "tuxpaint.mo", stamp, english_only])) == [
        ("A horse is a large animal.", "Ein Pferd ist ein großes Tier."),
        ("Remember to use the left mouse button!", "Denke daran, die linke Maustaste zu benutzen!"),
    ]   # the cat's "German" is English with a word changed: dropped by looks_untranslated


# ------------------------------------------------------------------ --more: tiers and attribution


def test_deduplicate_more_sources_only_add_rows_to_the_plus_corpus():
    plus = [
        ("ding", "Who are you?", "Wer bist du?"),
        ("freedroidrpg", "Click the table border.", "Klick auf den Tabellenrand."),
    ]
    more = [
        ("lohelp", "Who are you?", "Wer sind Sie?"),
        ("lohelp", "Click the table border!", "Klicken Sie auf den Tabellenrand."),
        ("handbook", "Click the table border.", "Klicken Sie auf den Tabellenrand."),
        ("hedgewars", "Stop releasing smoke signals!", "Hör mit den Rauchzeichen auf!"),
        ("lohelp", "Stop releasing smoke signals!", "Beenden Sie die Rauchzeichen!"),
    ]
    result = deduplicate(plus + more)
    assert set(deduplicate(plus)) <= set(result)                  # two votes from the new tier change nothing
    assert ("hedgewars", "Stop releasing smoke signals!", "Hör mit den Rauchzeichen auf!") in result   # earlier source
    assert len(result) == 3
    assert SOURCE_TIERS[-2:] == (MORE_SOURCES, WORDS_SOURCES)
    assert ALL_SOURCES == PLUS_SOURCES + MORE_SOURCES + WORDS_SOURCES


ZIPF = {("en", "pharmacy"): 3.9, ("de", "Apotheke"): 3.4, ("en", "credit"): 4.6, ("en", "card"): 4.9,
        ("de", "Kreditkarte"): 3.6, ("en", "sewerage"): 2.4, ("de", "Abwasseranlage"): 1.5, ("en", "to"): 7.4,
        ("en", "turn"): 5.3, ("de", "sich"): 6.6, ("de", "drehen"): 4.2, ("en", "umbrella"): 3.6,
        ("de", "Schirmständer"): 1.2, ("en", "stand"): 5.0}


def fake_zipf(word: str, lang: str) -> float:
    return ZIPF.get((lang, word), 0.0)


def test_ding_words_keep_short_entries_whose_every_word_is_common():
    lines = [
        "Apotheke {f} [pharm.] | Apotheken {pl} :: pharmacy | pharmacies\n",  # plural: "pharmacies" is rare here
        "Kreditkarte {f} :: credit card\n",
        "Abwasseranlage {f} :: sewerage\n",                       # a technical word: dropped
        "sich drehen {vr} :: to turn\n",
        "Schirmständer {m} :: umbrella stand\n",                  # common English, rare German compound: dropped
        "jdm. einen Bären aufbinden :: to pull sb.'s leg\n",      # three words: the sentence tier's, not this one's
    ]
    assert parse_ding_words(lines, fake_zipf) == [
        ("pharmacy", "Apotheke"), ("credit card", "Kreditkarte"), ("to turn", "sich drehen")]


def test_ding_words_only_add_rows_and_name_their_own_file():
    plus = [("ding", "to turn the tables", "den Spieß umdrehen"), ("wesnoth", "Turn back!", "Kehrt um!")]
    words = [("dingwords", "Turn back", "Umkehren"), ("dingwords", "to turn", "sich drehen"),
             ("dingwords", "to turn", "abbiegen"), ("dingwords", "to turn", "sich drehen")]
    result = deduplicate(plus + words)
    assert set(deduplicate(plus)) <= set(result)   # "Turn back" is "Turn back!" by english_key: not added
    assert ("dingwords", "to turn", "sich drehen") in result and len(result) == 3   # the consensus German
    assert corpus_stem(extra=True, more=False, words=True) == "en-de-plus-words"
    assert corpus_stem(extra=False, more=False, words=False) == "en-de"
    sources = (*PLUS_SOURCES, "dingwords")
    counts = count_rows([Row(s, "train", f"{s} one two.", f"{s} eins zwei.") for s in sources], sources)
    text = render_attribution(counts, {}, sources, "data/en-de-plus-words.tsv.gz")
    assert "`--ding-words`, a last tier adds the 1 one- and two-word entries" in text
    assert "| dingwords (the dictionary's one- and two-word entries of common words) | 1 |" in text


def test_render_attribution_plus2_names_every_package_licence_and_the_whole():
    sources = PLUS_SOURCES + MORE_SOURCES
    rows = [Row(s, "train", f"{s} sentence number one.", f"{s} Satz Nummer eins.") for s in sources]
    counts = count_rows(rows, sources)
    versions = {p: "1.0-1" for name in MORE_SOURCES for p in SOURCE_INFO[name].packages}
    text = render_attribution(counts, versions, sources, "data/en-de-plus2.tsv.gz")
    assert text.startswith("# Attribution and licences of data/en-de-plus2.tsv.gz")
    assert "`python data/build_corpus.py --more`" in text and "--extra`:" not in text and "--ding-words" not in text
    for name in sources:
        info = SOURCE_INFO[name]
        assert f"| {name} ({info.description}) | 1 |" in text and info.licence in text
    for package in versions:
        assert f"`{package}` 1.0-1" in text
    assert "| **19** |" in text
    assert "distributed under GPL-2.0 (GPL-2.0-only)" in text and "Hedgewars are GPL-2.0-only" in text
    assert "Not used because their licence" in text
    for line in MORE_COPYRIGHTS:
        assert line in text


# ------------------------------------------------------------------ the command line


def test_cli_runs_as_a_script_and_as_a_module_with_the_same_help():
    # As a script only data/ is on sys.path: build_corpus.py must put the repo root there to import its package.
    script = subprocess.run([sys.executable, str(ROOT / "data" / "build_corpus.py"), "--help"],
                            capture_output=True, text=True, check=True, cwd=ROOT / "data")
    module = subprocess.run([sys.executable, "-m", "data.build_corpus", "--help"],
                            capture_output=True, text=True, check=True, cwd=ROOT)
    # the same options and text; the usage line names the program, which Python 3.14's argparse spells differently
    # under -m ("python -m data.build_corpus")
    assert script.stdout.split("\n\n", 1)[1] == module.stdout.split("\n\n", 1)[1]
    assert "Rebuild the English->German parallel corpus" in script.stdout and "--ding-words" in script.stdout
