"""Example sentences in the language a model reads, and language names for labels.

Which languages a model translates comes from its checkpoint, never from its name: a converted opus-mt model records
``source_lang`` / ``target_lang`` in its meta, a model trained here its ``task`` ("en-de"). The examples serve the
Translate page (buttons), the Heads page (the sentence set whose head importance is summed, and two sentences one
word apart to compare) and the Masks page (a shorter and a longer second sentence for the padded batch). A source
language without sentences here gets none (the pages then ask for the user's own sentence), never English ones.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from model.tokenization.pieces import LANGUAGE_TOKEN

# ISO 639-1 codes (and a few of opus-mt's group codes) -> English names, for labels; an unknown code is shown as is.
LANGUAGE_NAMES = {
    "af": "Afrikaans", "ar": "Arabic", "bg": "Bulgarian", "ca": "Catalan", "cs": "Czech", "cy": "Welsh",
    "da": "Danish", "de": "German", "el": "Greek", "en": "English", "eo": "Esperanto", "es": "Spanish",
    "et": "Estonian", "eu": "Basque", "fa": "Persian", "fi": "Finnish", "fr": "French", "ga": "Irish",
    "gl": "Galician", "he": "Hebrew", "hi": "Hindi", "hr": "Croatian", "hu": "Hungarian", "hy": "Armenian",
    "id": "Indonesian", "is": "Icelandic", "it": "Italian", "ja": "Japanese", "ka": "Georgian", "ko": "Korean",
    "lt": "Lithuanian", "lv": "Latvian", "mk": "Macedonian", "ms": "Malay", "mt": "Maltese", "nl": "Dutch",
    "no": "Norwegian", "pl": "Polish", "pt": "Portuguese", "ro": "Romanian", "ru": "Russian", "sk": "Slovak",
    "sl": "Slovenian", "sq": "Albanian", "sv": "Swedish", "sw": "Swahili", "th": "Thai", "tr": "Turkish",
    "uk": "Ukrainian", "ur": "Urdu", "vi": "Vietnamese", "zh": "Chinese",
    "mul": "many languages", "roa": "Romance languages", "gem": "Germanic languages", "sla": "Slavic languages",
    "romance": "Romance languages", "celtic": "Celtic languages", "scandinavia": "Scandinavian languages",
    "north_eu": "Northern European languages",
    # ISO 639-3, as the target-language tokens of newer multilingual opus-mt models name languages (">>fra<<")
    "ara": "Arabic", "bul": "Bulgarian", "cat": "Catalan", "ces": "Czech", "cmn": "Chinese (Mandarin)",
    "dan": "Danish", "deu": "German", "ell": "Greek", "eng": "English", "est": "Estonian", "fin": "Finnish",
    "fra": "French", "glg": "Galician", "heb": "Hebrew", "hin": "Hindi", "hrv": "Croatian", "hun": "Hungarian",
    "ind": "Indonesian", "isl": "Icelandic", "ita": "Italian", "jpn": "Japanese", "kor": "Korean",
    "lat": "Latin", "lav": "Latvian", "lit": "Lithuanian", "nld": "Dutch", "nob": "Norwegian Bokmål",
    "nno": "Norwegian Nynorsk", "pol": "Polish", "por": "Portuguese", "ron": "Romanian", "rus": "Russian",
    "slk": "Slovak", "slv": "Slovenian", "spa": "Spanish", "srp_Cyrl": "Serbian (Cyrillic)",
    "srp_Latn": "Serbian (Latin)", "swe": "Swedish", "tha": "Thai", "tur": "Turkish", "ukr": "Ukrainian",
    "vie": "Vietnamese", "zho": "Chinese", "zho_Hans": "Chinese (simplified)", "zho_Hant": "Chinese (traditional)",
}
LEADING_TOKEN = re.compile(rf"\s*{LANGUAGE_TOKEN.pattern}\s*")  # a target-language token at the start of a sentence
TASK = re.compile(r"([a-z]{2,3})-([a-z]{2,3})")  # a model trained here names its language pair as its task


@dataclass(frozen=True)
class Examples:
    """Sentences for one source language (or one synthetic task)."""

    sentences: tuple[str, ...]  # Translate page buttons; the Heads page sums head importance over them
    short: str  # Masks page: a second sentence shorter than most, and one longer than most
    long: str
    compare: tuple[str, str]  # Heads page: two sentences one word apart, so their maps line up


BY_LANGUAGE = {
    "en": Examples(
        # Each one the shipped en-de model translates correctly, greedy and beam 4 (tests/model/test_pretrained.py
        # pins them against references), and most of them move the verb to the end: cross-attention shows it.
        sentences=("Yesterday I bought a new car.", "I have never seen this film.",
                   "I don't know where my keys are.", "We have not seen the new film yet.",
                   "My sister lives in a small house in the village."),
        short="I am tired.",
        long="I don't know where my keys are, but my sister has seen them in the kitchen.",
        compare=("Yesterday I bought a new car.",  # one piece apart in en-de's vocabulary, and so are the
                 "Yesterday I bought a new house.")),  # translations: the maps line up cell by cell
    "de": Examples(
        sentences=("Ich habe das Buch gelesen, das du mir gegeben hast.", "Sie möchte eine Tasse Tee trinken.",
                   "Wir sind nach Hause gegangen, weil es geregnet hat.", "Wann fährt der Zug nach Berlin ab?",
                   "Ich stehe jeden Morgen um sieben Uhr auf."),
        short="Vielen Dank.",
        long="Am Sonntag war das Wetter so schlecht, dass wir zu Hause geblieben sind und den ganzen Nachmittag "
             "gelesen haben.",
        compare=("Das Tier ging nicht über die Straße, weil es zu müde war.",
                 "Das Tier ging nicht über die Straße, weil es zu alt war.")),
    "fr": Examples(
        sentences=("J'ai lu le livre que tu m'as donné.", "Elle voudrait boire une tasse de thé.",
                   "Nous sommes rentrés à la maison parce qu'il pleuvait.", "Quand part le train pour Berlin ?",
                   "Je me lève à sept heures tous les matins."),
        short="Merci beaucoup.",
        long="Dimanche, il faisait si mauvais que nous sommes restés à la maison et avons lu tout l'après-midi.",
        compare=("L'animal n'a pas traversé la rue parce qu'il était trop fatigué.",
                 "L'animal n'a pas traversé la rue parce qu'il était trop vieux.")),
    "es": Examples(
        sentences=("He leído el libro que me diste.", "Ella quiere tomar una taza de té.",
                   "Fuimos a casa porque estaba lloviendo.", "¿Cuándo sale el tren para Berlín?",
                   "Me levanto a las siete todas las mañanas."),
        short="Muchas gracias.",
        long="El domingo hizo tan mal tiempo que nos quedamos en casa y leímos libros toda la tarde.",
        compare=("El animal no cruzó la calle porque estaba demasiado cansado.",
                 "El animal no cruzó la calle porque estaba demasiado viejo.")),
    "it": Examples(
        sentences=("Ho letto il libro che mi hai dato.", "Vorrebbe bere una tazza di tè.",
                   "Siamo tornati a casa perché pioveva.", "Quando parte il treno per Berlino?",
                   "Mi alzo alle sette ogni mattina."),
        short="Grazie mille.",
        long="Domenica il tempo era così brutto che siamo rimasti a casa e abbiamo letto libri tutto il pomeriggio.",
        compare=("L'animale non ha attraversato la strada perché era troppo stanco.",
                 "L'animale non ha attraversato la strada perché era troppo vecchio.")),
    "nl": Examples(
        sentences=("Ik heb het boek gelezen dat je me gegeven hebt.", "Ze wil graag een kopje thee drinken.",
                   "We gingen naar huis omdat het regende.", "Wanneer vertrekt de trein naar Berlijn?",
                   "Ik sta elke ochtend om zeven uur op."),
        short="Hartelijk dank.",
        long="Op zondag was het weer zo slecht dat we thuis bleven en de hele middag boeken lazen.",
        compare=("Het dier stak de straat niet over omdat het te moe was.",
                 "Het dier stak de straat niet over omdat het te oud was.")),
    "pt": Examples(
        sentences=("Li o livro que você me deu.", "Ela gostaria de beber uma xícara de chá.",
                   "Fomos para casa porque estava chovendo.", "Quando parte o trem para Berlim?",
                   "Eu me levanto às sete todas as manhãs."),
        short="Muito obrigado.",
        long="No domingo o tempo estava tão ruim que ficamos em casa e lemos livros a tarde toda.",
        compare=("O animal não atravessou a rua porque estava cansado demais.",
                 "O animal não atravessou a rua porque estava velho demais.")),
}
BY_TASK = {  # models whose input is no language: by the task recorded in their checkpoint
    "reverse": Examples(
        sentences=("h e l l o w o r l d", "a t t e n t i o n", "t r a n s f o r m e r", "a b c d e f g h i j"),
        short="x y z", long="a b c d e f g h i j k l m n", compare=("s t r e e t", "s t r e a m")),
}
WHY = {  # what the examples show, by task or language pair
    "reverse": "The correct output is the letters in reverse order, so the cross-attention should be an "
               "anti-diagonal.",
    "en-de": "These need reordering in German (the participle at the end of the clause, *habe … gekauft*, *haben … "
             "gesehen*; the verb at the end of a sub-clause, *wo meine Schlüssel sind*; the verb second after "
             "*Gestern*): look for the cross-attention leaving the diagonal.",
}


def language_name(code: str) -> str:
    """"de" -> "German"; a code not in LANGUAGE_NAMES is shown as it is."""
    return LANGUAGE_NAMES.get(code, LANGUAGE_NAMES.get(code.lower(), code))


def token_language(token: str) -> str:
    """">>fra<<" -> "French (>>fra<<)": a target-language token as a choice is labelled."""
    return f"{language_name(token[2:-2])} ({token})"


def code_language(code: str) -> str:
    """A multilingual fairseq model's language code labelled: "de_DE" (mBART-50), "deu_Latn" (NLLB) and "__de__"
    (M2M100) -> "German (de_DE)" etc."""
    return f"{language_name(code.strip('_').split('_')[0])} ({code})"


def leading_token(text: str, tokens: tuple[str, ...]) -> str | None:
    """The target-language token ``text`` starts with, if it is one of ``tokens`` (the model's)."""
    match = LEADING_TOKEN.match(text)
    return match.group().strip() if match and match.group().strip() in tokens else None


def with_token(text: str, token: str | None) -> str:
    """``text`` starting with ``token`` instead of any target-language token it started with (none: removed).

    The sentence is what follows the token, without the white space before it: taking a token away also takes the
    space after it, so a sentence that kept its leading space (or a box of white space only) would not come back
    the same after a language is chosen and then unchosen."""
    bare = LEADING_TOKEN.sub("", text, count=1) if LEADING_TOKEN.match(text) else text.lstrip()
    return f"{token} {bare}" if token else bare


def languages(meta: Mapping) -> tuple[str, str] | None:
    """(source, target) language codes a checkpoint's meta records: source_lang and target_lang (a converted model),
    else a task named "xx-yy" (a model trained here); None for other tasks and unknown models."""
    source, target = meta.get("source_lang"), meta.get("target_lang")
    if isinstance(source, str) and isinstance(target, str) and source and target:
        return source, target
    match = TASK.fullmatch(str(meta.get("task", "")))
    return (match.group(1), match.group(2)) if match else None


def pair_label(meta: Mapping) -> str | None:
    """"English → German" from a checkpoint's meta, None when it records no languages."""
    pair = languages(meta)
    return f"{language_name(pair[0])} → {language_name(pair[1])}" if pair else None


def examples_for(meta: Mapping) -> Examples | None:
    """The examples for a checkpoint's task or source language; None when there are none in that language."""
    task = meta.get("task")
    if isinstance(task, str) and task in BY_TASK:
        return BY_TASK[task]
    pair = languages(meta)
    return BY_LANGUAGE.get(pair[0].lower()) if pair else None


def example_why(meta: Mapping) -> str:
    """One line saying what to look for in the examples (Translate page)."""
    pair = languages(meta)
    key = meta.get("task") if meta.get("task") in WHY else (f"{pair[0]}-{pair[1]}".lower() if pair else None)
    if key in WHY:
        return WHY[key]
    if pair:
        return (f"Watch the cross-attention: where the word order of {language_name(pair[1])} differs from "
                f"{language_name(pair[0])}'s, it leaves the diagonal.")
    return "Watch which source pieces each output piece reads in the cross-attention."


def no_examples_note(meta: Mapping) -> str:
    """What the Translate page says instead of example buttons."""
    pair = languages(meta)
    where = f" in {language_name(pair[0])}" if pair else ""
    return f"No example sentences{where} here: type a sentence{where} for this model to translate."


def mask_pair(meta: Mapping, text: str) -> tuple[str, str]:
    """(shorter, longer) second sentence for the Masks page's batch; for a language without examples, made from the
    current sentence ``text`` itself: its first half, and it twice."""
    examples = examples_for(meta)
    if examples is not None:
        return examples.short, examples.long
    words = text.split()
    return " ".join(words[: max(1, len(words) // 2)]), f"{text} {text}".strip()


def compare_pair(meta: Mapping, text: str) -> tuple[str, str]:
    """Two sentences one word apart for the Heads page; for a language without examples, the current sentence
    ``text`` and the same without its last word."""
    examples = examples_for(meta)
    if examples is not None:
        return examples.compare
    words = text.split()
    return text, " ".join(words[:-1]) if len(words) > 1 else text


def is_example(text: str) -> bool:
    """Whether ``text`` is one of the sentences here (not the user's own)."""
    return any(text in examples.sentences for examples in (*BY_LANGUAGE.values(), *BY_TASK.values()))


def first_sentence(meta: Mapping, english: str) -> str:
    """The sentence to put in the box for a newly chosen model: ``english`` (the app's default) for a model that
    reads English, else its first example; "" when there is none in its language (the page then asks for one)."""
    pair = languages(meta)
    if pair and pair[0].lower() == "en":
        return english
    examples = examples_for(meta)
    return examples.sentences[0] if examples else ""
