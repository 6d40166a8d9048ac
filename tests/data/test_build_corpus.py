"""Tests for data/build_corpus.py: the parsing, filtering, dedup and split rules, on small
hand-written fixtures (Ding lines, a .mo file written byte by byte). No Debian needed."""

from __future__ import annotations

import collections
import csv
import gzip
import importlib.util
import io
import os
import random
import struct
import subprocess
import sys
from pathlib import Path

import pytest

_PATH = Path(__file__).resolve().parents[2] / "data" / "build_corpus.py"
_spec = importlib.util.spec_from_file_location("build_corpus", _PATH)
bc = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = bc  # dataclasses look their module up in sys.modules
_spec.loader.exec_module(bc)


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
    assert bc.normalize_text(raw) == "Er sagt: „Schön!“ Don't..."


def test_word_count_ignores_punctuation_tokens():
    assert bc.word_count("neither ... nor") == 2
    assert bc.word_count("It is 5 - 3 now.") == 5


def test_ratio_ok_bounds():
    assert bc.ratio_ok("a" * 10, "b" * 10)
    assert not bc.ratio_ok("a" * 10, "b" * 3)
    assert not bc.ratio_ok("a" * 10, "b" * 26)
    assert not bc.ratio_ok("", "b")


# ------------------------------------------------------------------ Ding


def test_parse_ding_pairs_subentries_in_order_first_synonym_notes_stripped():
    line = (
        "Das ist mir Wurst. [ugs.]; Das ist mir egal. | Er kommt {vi} heute (bestimmt) nach Hause. "
        ":: I couldn't care less. [coll.]; I don't care. | He is coming home today.\n"
    )
    assert bc.parse_ding_line(line) == [
        ("I couldn't care less.", "Das ist mir Wurst."),
        ("He is coming home today.", "Er kommt heute nach Hause."),
    ]


def test_parse_ding_drops_short_subentries_but_keeps_the_rest_aligned():
    line = (
        "Leidenschaft {f} | Leidenschaften {pl} | eine Leidenschaft für etw. haben "
        ":: passion | passions | to have a passion for sth."
    )
    assert bc.parse_ding_line(line) == [("to have a passion for sth.", "eine Leidenschaft für etw. haben")]


def test_parse_ding_skips_lines_whose_subentry_counts_differ():
    assert bc.parse_ding_line("Er ist sehr müde. | Sie auch. :: He is very tired.") == []


def test_parse_ding_skips_comments_and_malformed_lines():
    assert bc.parse_ding_line("# Version :: devel 2023-01-30") == []
    assert bc.parse_ding_line("Das ist gut so hier") == []
    assert bc.parse_ding_line("a b c :: d e f :: g h i") == []


def test_strip_ding_notes_nested_abbreviations_and_crossrefs():
    text = "Genfer Flüchtlingskonvention {f} /GFK/ (Abkommen (von 1951)) [pol.] <GK> ~Asylrecht"
    assert bc.normalize_text(bc.strip_ding_notes(text)) == "Genfer Flüchtlingskonvention"


def test_parse_ding_resolves_word_slash_alternatives_to_the_first():
    line = "Es war purer/reiner Zufall. | Er fuhr 50 km/h schnell. :: It was sheer/pure coincidence. | He drove at 50 km/h fast."
    assert bc.parse_ding_line(line) == [
        ("It was sheer coincidence.", "Es war purer Zufall."),
        ("He drove at 50 km/h fast.", "Er fuhr 50 km/h schnell."),
    ]
    assert bc.first_slash_alternative("to be/keep/stay ahead of sb./sth.") == "to be ahead of sb."


@pytest.mark.parametrize(
    "line",
    [
        "ein Gerücht in Umlauf / in die Welt setzen :: to put out a rumour now",  # spaced slash
        "jdm. ... geben lassen :: to give sb. ... away",                           # placeholder
        "Ja ja ja. :: Yes, yes, yes, and so on and so forth for a very long time indeed.",  # ratio
    ],
)
def test_parse_ding_filters(line):
    assert bc.parse_ding_line(line) == []


def test_parse_ding_swaps_back_reversed_entries():
    line = "In the current situation many investors are holding back. :: In der aktuellen Situation halten sich viele Anleger zurück."
    assert bc.parse_ding_line(line) == [
        ("In the current situation many investors are holding back.",
         "In der aktuellen Situation halten sich viele Anleger zurück.")
    ]
    assert not bc.looks_reversed("Die, villain, die!", "Stirb, Schurke, stirb!")


# ------------------------------------------------------------------ .mo catalogues


def test_read_mo_and_parse_catalog_end_to_end(mo_file: Path):
    pairs = bc.parse_mo_catalog(bc.read_mo(mo_file.read_bytes()))
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
    assert list(bc.catalog_pairs(catalog)) == [("unit", "Einheit")]


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
    assert bc.strip_context(msgid) == expected


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
    assert bc.clean_mo_pair(en, de) == []


def test_clean_mo_pair_keeps_the_same_sentence_without_markup():
    # the control for the rejections above: an ordinary sentence passes the same filter
    assert bc.clean_mo_pair("The server rejected the request.", "Der Server hat die Anfrage abgewiesen.") == [
        ("The server rejected the request.", "Der Server hat die Anfrage abgewiesen.")
    ]
    assert bc.clean_mo_pair("Boosts science by 50% in each city.", "Erhöht die Forschung in jeder Stadt um 50%.") != []


def test_clean_mo_pair_strips_accelerators():
    assert bc.clean_mo_pair("_Select the level you want.", "E_bene jetzt bitte auswählen.") == [
        ("Select the level you want.", "Ebene jetzt bitte auswählen.")
    ]
    assert bc.strip_accelerators("&File and ~Slide Show & more") == "File and Slide Show & more"


def test_clean_mo_pair_splits_when_sentence_counts_match():
    en = "Welcome to the camp. Rest here tonight! Are you ready to march?"
    de = "Willkommen im Lager. Ruht euch heute Nacht aus! Seid ihr bereit zu marschieren?"
    assert bc.clean_mo_pair(en, de) == [
        ("Welcome to the camp.", "Willkommen im Lager."),
        ("Rest here tonight!", "Ruht euch heute Nacht aus!"),
        ("Are you ready to march?", "Seid ihr bereit zu marschieren?"),
    ]


def test_clean_mo_pair_keeps_whole_message_when_counts_differ():
    en = "He stood up. Then he left the room in silence."
    de = "Er stand auf und verließ schweigend den Raum."
    assert bc.clean_mo_pair(en, de) == [(en, de)]


def test_clean_mo_pair_drops_untranslated_entries():
    assert bc.clean_mo_pair("November is a cold month.", "November is a cold month.") == []


def test_split_sentences_respects_ordinals_and_abbreviations():
    assert bc.split_sentences("Im 17. Jahrhundert kam er. Dann ging er.", "de") == [
        "Im 17. Jahrhundert kam er.", "Dann ging er.",
    ]
    assert bc.split_sentences("Ask Dr. Smith now. He knows.", "en") == ["Ask Dr. Smith now.", "He knows."]
    assert bc.split_sentences("Er sagte: „Geh.“ Sie ging.", "de") == ["Er sagte: „Geh.“", "Sie ging."]


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
    assert bc.is_sentence(text) is ok


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
    assert bc.pair_openttd(english, german) == [
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
    assert bc.clean_openttd_pair(en, de) == []


def write_lng(strings_by_tab: dict[int, list[str]], version: int = 0x1234) -> bytes:
    """A compiled OpenTTD language file as strgen writes it: header, lengths, text, final NUL."""
    header = bytearray(bc._LNG_HEADER_SIZE)
    header[0:4] = b"LANG"
    header[4:8] = version.to_bytes(4, "little")
    body = b""
    for tab, strings in strings_by_tab.items():
        at = bc._LNG_OFFSETS_AT + 2 * tab
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
    version, strings = bc.read_openttd_lng(data)
    assert version == 0x1234
    assert strings == {(0, 0): "", (0, 1): "Nothing", (4, 0): BLACK + "Build a depot.", (4, 1): long_text}
    with pytest.raises(ValueError):
        bc.read_openttd_lng(data + b"junk")        # a misread header leaves bytes over
    with pytest.raises(ValueError):
        bc.read_openttd_lng(b"GRF!" + data[4:])


# ------------------------------------------------------------------ dedup and split


def test_deduplicate_exact_duplicates_and_one_german_per_english():
    triples = [
        ("wesnoth", "That sounds good.", "Das hört sich gut an."),
        ("wesnoth", "That sounds good.", "Das hört sich gut an."),
        ("ding", "That sounds good!", "Hört sich gut an."),        # same English key
        ("libreoffice", "Close the window.", "Schließen Sie das Fenster."),
    ]
    result = bc.deduplicate(triples)
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
    expected = bc.deduplicate(triples)
    assert ("ding", "That goes too far.", "Das geht mir über die Hutschnur.") in expected
    for seed in range(5):
        shuffled = triples[:]
        random.Random(seed).shuffle(shuffled)
        assert bc.deduplicate(shuffled) == expected


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
    default_only = bc.deduplicate([t for t in triples if t[0] in bc.SOURCES])
    result = bc.deduplicate(triples)
    # every default row is unchanged: extra sources neither outvote it nor tip a tie among its sources
    assert set(default_only) <= set(result)
    assert ("ding", "Who are you?", "Wer bist du?") in result                        # the default tie rule held
    assert ("wesnoth", "What are you doing here?", "Was macht du hier?") in result   # not outvoted 2:1
    # English sentences new to the corpus come from the extra sources, decided among them in order
    assert ("openttd", "Build a depot for trains.", "Ein Depot für Züge bauen.") in result
    assert ("widelands", "Build a port near the sea.", "Baue einen Hafen am Meer.") in result
    assert len(result) == 4
    assert bc.ALL_SOURCES[: len(bc.SOURCES)] == bc.SOURCES


def test_english_key_folds_case_and_punctuation():
    assert bc.english_key("Are you SURE?") == bc.english_key("are you sure!") == "are you sure"
    assert bc.english_key("Don't go.") != bc.english_key("Do go.")


def test_assign_split_is_stable_across_processes_and_variants():
    sentences = [f"Sentence number {i} is here." for i in range(300)]
    here = [bc.assign_split(s) for s in sentences]
    code = (
        "import importlib.util, sys, json;"
        f"spec = importlib.util.spec_from_file_location('bc', {str(_PATH)!r});"
        "m = importlib.util.module_from_spec(spec); sys.modules['bc'] = m; spec.loader.exec_module(m);"
        f"print(json.dumps([m.assign_split(f'Sentence number {{i}} is here.') for i in range(300)]))"
    )
    env = dict(os.environ, PYTHONHASHSEED="12345")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert __import__("json").loads(out.stdout) == here
    # case and punctuation variants of one sentence can never land in different splits
    assert all(bc.assign_split(s.upper().rstrip(".") + "!") == bc.assign_split(s) for s in sentences)
    assert set(here) <= set(bc.SPLITS)


def test_assign_split_proportions_and_stratification_by_source():
    sizes = {"ding": 40_000, "wesnoth": 12_000, "libreoffice": 6_000, "freeciv": 3_000}
    triples = [
        (src, f"{src} example sentence {i} goes here.", f"{src} Beispielsatz {i} steht hier.")
        for src, n in sizes.items()
        for i in range(n)
    ]
    counts = bc.count_rows(bc.make_rows(triples))
    test_share = bc.TEST_BUCKETS / bc.SPLIT_BUCKETS
    valid_share = bc.VALID_BUCKETS / bc.SPLIT_BUCKETS
    for src, n in sizes.items():
        # binomial: 4 standard deviations of slack for each source
        for split, share in (("test", test_share), ("valid", valid_share)):
            tol = 4 * (n * share * (1 - share)) ** 0.5
            assert abs(counts[src][split] - n * share) <= tol, (src, split, counts[src])
    assert sum(counts["all"].values()) == sum(sizes.values())


def test_make_rows_no_english_in_two_splits_and_sorted():
    triples = [("ding", f"Line {i % 500} is here.", f"Zeile {i} ist hier.") for i in range(2_000)]
    triples += [("wesnoth", f"LINE {i} IS HERE!", f"ZEILE {i}!") for i in range(500)]
    rows = bc.make_rows(triples)
    keys = [bc.english_key(r.en) for r in rows]
    assert len(keys) == len(set(keys)) == 500
    order = [(bc.SPLITS.index(r.split), bc.SOURCES.index(r.source), r.en, r.de) for r in rows]
    assert order == sorted(order)


def test_check_split_sizes():
    small = {"all": collections.Counter(train=90_000, valid=999, test=1_500)}
    assert len(bc.check_split_sizes(small)) == 1
    ok = {"all": collections.Counter(train=90_000, valid=1_000, test=1_000)}
    assert bc.check_split_sizes(ok) == []


# ------------------------------------------------------------------ output


def test_tsv_gzip_is_byte_deterministic_and_round_trips_quotes():
    rows = [
        bc.Row("wesnoth", "train", 'He shouted "Charge!" and ran.', "Er rief „Angriff!“ und rannte."),
        bc.Row("ding", "test", "It's a \"so-called\" plan.", 'Das ist ein "sogenannter" Plan.'),
    ]
    blob = bc.gzip_bytes(bc.rows_to_tsv(rows))
    assert blob == bc.gzip_bytes(bc.rows_to_tsv(rows))
    assert blob[4:8] == b"\0\0\0\0"          # mtime 0
    assert blob[3] & 0x08 == 0                # no file name in the header
    text = gzip.decompress(blob).decode("utf-8")
    parsed = list(csv.reader(io.StringIO(text), delimiter="\t"))
    assert parsed[0] == ["source", "split", "en", "de"]
    assert parsed[1:] == [[r.source, r.split, r.en, r.de] for r in rows]


def test_render_attribution_names_every_source_licence_and_count():
    counts = {s: collections.Counter(train=10 * (i + 1)) for i, s in enumerate(bc.SOURCES)}
    counts["all"] = collections.Counter(train=100)
    text = bc.render_attribution(counts, {"trans-de-en": "1.9-6"})
    for name in bc.SOURCES:
        assert name in text and bc.SOURCE_INFO[name].licence in text
    assert "`trans-de-en` 1.9-6" in text and "| 40 |" in text and "derived work" in text
    assert not any(name in text for name in bc.EXTRA_SOURCES)


def test_render_attribution_plus_names_the_extra_sources_and_their_licences():
    rows = [bc.Row(s, "train", f"{s} sentence number one.", f"{s} Satz Nummer eins.") for s in bc.ALL_SOURCES]
    counts = bc.count_rows(rows, bc.ALL_SOURCES)
    text = bc.render_attribution(counts, {"openttd-data": "13.0-2"}, bc.ALL_SOURCES, "data/en-de-plus.tsv.gz")
    assert text.startswith("# Attribution and licences of data/en-de-plus.tsv.gz")
    for name in bc.ALL_SOURCES:
        info = bc.SOURCE_INFO[name]
        assert f"| {name} ({info.description}) | 1 |" in text and info.licence in text
    assert "`openttd-data` 13.0-2" in text and "GPL-2.0-only" in text and "| **8** |" in text
    assert bc.format_counts(counts).splitlines()[-1].split() == ["all", "8", "0", "0", "8"]
