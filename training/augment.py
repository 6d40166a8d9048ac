"""Copy-friendly augmentation: teach the model that names and numbers are carried over, not translated.

A pair where the same name or number stands on both sides ("Anna paid 250 euros." / "Anna zahlte 250 Euro.")
is copied with that string replaced by another one on both sides ("Kenji paid 4817 euros." / "Kenji zahlte
4817 Euro."). The model sees many strings in the same slot and learns to copy the slot rather than memorise
what usually stands there. Only the training split is augmented: validation and test stay what they were.
"""
from __future__ import annotations

import random
import re
from typing import cast

import pandas as pd

NUMBER = re.compile(r"(?<![\w.,])\d+(?:[.:]\d+)?(?![\w])")  # 7, 1989, 3.11, 14:30 (not parts of words)
NAME = re.compile(r"(?<=[\w,;:]\s)[A-Z][a-z]{2,}\b")  # a capitalised word inside a sentence (not after a quote)
# Strings that stand for themselves in both languages: other people's names and places (spelled the same in
# German), so that what the model copies is not only the corpus's own (Wesnoth's Konrad, Ding's Hamburg).
NAMES = (
    "Anna Thomas Maria Peter Laura Jonas Sofia Lukas Emma Felix Clara Oskar Ingrid Lars Astrid Nils Mehmet Ayse "
    "Kenji Yuki Hiroshi Aiko Wei Mei Jun Priya Arjun Ravi Anika Omar Fatima Karim Leila Diego Lucia Pablo Carmen "
    "Marco Giulia Pierre Claire Amelie Olga Igor Tomasz Agnieszka Petra Jan Eva Adam Miriam David Sarah Noah "
    "Schmidt Berger Wagner Becker Hoffmann Lindqvist Yilmaz Watanabe Tanaka Nakamura Chen Wang Patel Sharma "
    "Hassan Garcia Lopez Rossi Bianchi Dubois Martin Novak Kowalski Petrov Andersen Hansen Johansson Okafor "
    "Mensah Silva Santos Costa Berlin Hamburg Bremen Dresden Leipzig Hannover Potsdam Kiel Bonn Oslo Madrid "
    "Paris London Chicago Toronto Boston Dublin Helsinki Stockholm Amsterdam Tokyo Seoul Sydney Delhi Lima "
    "Nairobi Istanbul Budapest Bergen Graz Salzburg Innsbruck Luzern Basel Bern"
).split()


# Names no list holds, made up from syllables (accents included): the list above shares words with our own
# names-and-numbers set (training.card counts those apart), and a model that saw only its names copied learns those
# names rather than copying. A made-up name is a piece sequence the model cannot have memorised.
ONSETS = "b br ch d dr f g h j k kh l m n p r s sh t th v w z ž č ł ş".split()
VOWELS = "a e i o u á é í ó ú ä ö ü ø å y".split()
CODAS = ("", "", "", "n", "r", "l", "s", "k", "m", "t", "nd", "rg")


def made_up_name(rng: random.Random) -> str:
    """A capitalised name of 2-3 random syllables, two such words now and then ("Drénak Shulomi")."""
    def word() -> str:
        text = "".join(rng.choice(ONSETS) + rng.choice(VOWELS) + rng.choice(CODAS) for _ in range(rng.randint(2, 3)))
        return text[0].upper() + text[1:]
    return word() if rng.random() < 0.6 else f"{word()} {word()}"


# Numbers of shapes the corpus hardly has (phone numbers in groups, flight, train and room codes), which our own set
# asks for: a model that saw only the corpus's numbers drops or repeats digits of "0171 5550199" and "LH 2041".
CODE_LETTERS = "ABCDEFGHJKLMNPRSTUVWXZ"


def code_like(rng: random.Random) -> str:
    """A digit string in a shape the corpus lacks: "0171 5550199", "+47 2285 6631" or "LH 2041"."""
    def digits(n: int) -> str:
        return "".join(str(rng.randrange(10)) for _ in range(n))
    shape = rng.random()
    if shape < 0.4:  # a phone number: area code and line
        return f"0{digits(rng.randint(2, 4))} {digits(rng.randint(5, 8))}"
    if shape < 0.55:  # an international one
        return f"+{rng.randint(1, 99)} {digits(rng.randint(2, 4))} {digits(4)}"
    return f"{rng.choice(CODE_LETTERS)}{rng.choice(CODE_LETTERS)} {rng.randint(1, 9)}{digits(rng.randint(1, 3))}"


def _random_number(rng: random.Random, like: str) -> str:
    """Another number of the same form: the same separator and about the same number of digits."""
    if ":" in like:  # a clock time
        return f"{rng.randrange(24):02d}:{rng.choice((0, 5, 10, 15, 20, 30, 40, 45, 50)):02d}"
    if "." in like:  # a decimal or a version number
        head, tail = like.split(".", 1)
        return f"{rng.randint(0, 10 ** len(head) - 1)}.{rng.randint(0, 10 ** len(tail) - 1):0{len(tail)}d}"
    digits = max(1, len(like) + rng.choice((-1, 0, 0, 1)))
    if digits == 4 and rng.random() < 0.5:
        return str(rng.randint(1850, 2099))  # a year
    first = "0" if like.startswith("0") and digits > 1 else str(rng.randint(1, 9))
    return first + "".join(str(rng.randrange(10)) for _ in range(digits - 1))


# A sentence-initial subject pronoun, "He ..." / "Er ...", "She ..." / "Sie ...": NAME skips sentence starts (every
# first word is capitalised), so without these a model never sees a name copied at the start of a sentence, where
# the decoder's first step most wants a German opening ("Die", "Ein") and the names it missed stood (issue 31). A name
# in the pronoun's place keeps both sentences grammatical: third person singular, the verb unchanged.
SUBJECT = {"He": "Er", "She": "Sie"}
PERSONS = NAMES[:NAMES.index("Schmidt")]  # NAMES: first names, then surnames, then places
SURNAMES = NAMES[NAMES.index("Schmidt"):NAMES.index("Berlin")]


def subject_pronoun(en: str, de: str) -> str | None:
    """The English subject pronoun a pair opens with ("He"/"She") when its German opens with the same one."""
    first_en, first_de = en.split(" ", 1)[0], de.split(" ", 1)[0]
    return first_en if SUBJECT.get(first_en) == first_de else None


def person_name(rng: random.Random, made_up: float = 0.0) -> str:
    """Someone to put in a pronoun's place: made up (made_up_name) with probability ``made_up``, else a first name
    from NAMES, half the time with a surname ("Ravi", "Claire Okafor")."""
    if made_up and rng.random() < made_up:
        return made_up_name(rng)
    first = rng.choice(PERSONS)
    return f"{first} {rng.choice(SURNAMES)}" if rng.random() < 0.5 else first


def name_the_subject(en: str, de: str, pronoun: str, rng: random.Random, made_up: float = 0.0) -> tuple[str, str]:
    """The pair with its opening "He"/"She" (and "Er"/"Sie") replaced by one person's name on both sides."""
    name = person_name(rng, made_up)
    return name + en[len(pronoun):], name + de[len(SUBJECT[pronoun]):]


def shared_strings(en: str, de: str) -> list[str]:
    """Numbers and names that stand verbatim on both sides of a pair (each once, longest first)."""
    found = {m.group() for m in NUMBER.finditer(en) if re.search(rf"(?<![\w.,]){re.escape(m.group())}(?!\w)", de)}
    found |= {m.group() for m in NAME.finditer(en) if re.search(rf"\b{re.escape(m.group())}\b", de)}
    return sorted(found, key=lambda s: (-len(s), s))


def substitute(en: str, de: str, strings: list[str], rng: random.Random, made_up: float = 0.0,
               codes: float = 0.0) -> tuple[str, str]:
    """The pair with every shared string replaced by a new one of its kind, the same on both sides; a name is made
    up (made_up_name) with probability ``made_up``, else taken from NAMES; a number becomes a code (code_like) with
    probability ``codes``, else another number of its form."""
    for old in strings:
        if old[0].isdigit():  # no draw for codes = 0, as for made_up below
            new = code_like(rng) if codes and rng.random() < codes else _random_number(rng, old)
        else:  # no draw for made_up = 0: the runs before it stay reproducible
            new = made_up_name(rng) if made_up and rng.random() < made_up else rng.choice(NAMES)
        pattern = re.compile(rf"(?<![\w.,]){re.escape(old)}(?!\w)" if old[0].isdigit() else rf"\b{re.escape(old)}\b")
        en, de = pattern.sub(new, en), pattern.sub(new, de)
    return en, de


def augment_copies(frame: pd.DataFrame, copies: int, seed: int = 0, made_up: float = 0.0,
                   codes: float = 0.0, subjects: bool = False) -> pd.DataFrame:
    """The corpus plus ``copies`` substituted copies of every training pair that shares a name or number
    (source column "<source>+copy"; ``made_up`` and ``codes``: the share of names made up and of numbers turned
    into codes, see substitute), and with ``subjects`` of every pair that opens with "He"/"She" and "Er"/"Sie",
    a name in the pronoun's place (name_the_subject); validation and test rows are untouched."""
    if copies <= 0:
        return frame
    rng = random.Random(seed)
    rows = []
    for row in frame[frame["split"] == "train"].itertuples(index=False):
        row_en, row_de = cast(str, row.en), cast(str, row.de)  # text columns
        strings = shared_strings(row_en, row_de)
        pronoun = subject_pronoun(row_en, row_de) if subjects else None
        for _ in range(copies if strings or pronoun else 0):
            en, de = substitute(row_en, row_de, strings, rng, made_up, codes)
            if pronoun:  # after substitute: a name it put in stays, and it never sees the new sentence start
                en, de = name_the_subject(en, de, pronoun, rng, made_up)
            rows.append({"source": f"{row.source}+copy", "split": "train", "en": en, "de": de})
    return pd.concat([frame, pd.DataFrame(rows, columns=frame.columns)], ignore_index=True)
