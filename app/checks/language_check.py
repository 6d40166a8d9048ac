"""Does a sentence look like it is in the language a model translates from?

A model asked to translate German from English does not refuse: it writes a made-up German sentence, and its
attention looks as busy as ever. The Translate page says so instead. The test is the one a reader does at a
glance: the short function words ("the", "and", "is" / "der", "und", "ist") every sentence is full of. A
sentence with at least two words of another language's list and more of them than of the source language's is
flagged. Languages without a list here are never flagged (nothing is guessed).
"""
from __future__ import annotations

import re

FUNCTION_WORDS: dict[str, frozenset[str]] = {code: frozenset(words) for code, words in {
    "en": "the a an and or of to in on at is are was were be been has have had do does did not this that these "
          "those it its he she we they you i my your our their with for from by as but if there what who which "
          "will would can could should me him her us them about into over after before very just also how "
          "when where why".split(),
    "de": "der die das den dem des ein eine einen einem einer und oder ist sind war waren bin bist hat habe haben "
          "hatte nicht ich du er sie es wir ihr mein meine dein sein seine unser mit für von zu im auf aus bei nach "
          "über wie was wer wo auch noch schon sehr nur aber wenn dass du dir mir mich dich sich uns euch ihre am um "
          "ins vom zum zur dieser diese dieses seit ohne bitte heute kann kannst soll wird werden jeden jede pro vor "
          "unter hast".split(),
    "fr": "le la les un une des et ou est sont était être avoir a ont pas ne je tu il elle nous vous ils elles mon "
          "ma mes ton ta son sa dans sur avec pour par du au aux ce cette qui que où mais si très".split(),
    "es": "el la los las un una unos unas y o es son era ser estar está están no yo tú él ella nosotros ellos mi "
          "mis tu su sus en con para por del al que quien donde pero si muy".split(),
    "it": "il lo la i gli le un una e o è sono era essere avere ha hanno non io tu lui lei noi voi loro mio mia "
          "suo sua nel nella con per da del della che chi dove ma se molto".split(),
    "nl": "de het een en of is zijn was waren ben heb hebt heeft hebben niet ik jij hij zij wij jullie mijn jouw "
          "zijn haar ons met voor van naar op bij uit wat wie waar ook nog al maar als dat".split(),
}.items()}
WORD = re.compile(r"[^\W\d_]+")
MIN_HITS = 2  # one shared word ("in", "die" in English) proves nothing


def base_language(code: str) -> str:
    """"de" of "de", "deu" or "de_DE": the two-letter code the lists are filed under."""
    three = {"eng": "en", "deu": "de", "ger": "de", "fra": "fr", "fre": "fr", "spa": "es", "ita": "it", "nld": "nl"}
    code = code.split("_")[0].split("-")[0].lower()
    return three.get(code, code)


def looks_like(text: str, source: str) -> str | None:
    """The code of the language ``text`` looks written in when that is not ``source`` (the model's source language),
    else None: that language's function words must be at least MIN_HITS and outnumber the source language's."""
    source = base_language(source)
    if source not in FUNCTION_WORDS:
        return None
    words = [w.lower() for w in WORD.findall(text)]
    hits = {code: sum(w in vocabulary for w in words) for code, vocabulary in FUNCTION_WORDS.items()}
    best = max(hits, key=lambda code: (hits[code], code == source))
    return best if best != source and hits[best] >= MIN_HITS and hits[best] > hits[source] else None
