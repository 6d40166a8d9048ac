"""Did the translation keep the sentence's numbers? The Translate page's check for what a small model gets wrong.

A year, a time, an amount or a phone number has one right translation: itself. The shipped model still drops or
changes digits now and then ("14:00" -> "14:000", "0176 4402918" -> "0176 402918"), fluently, and a reader who
does not compare digit by digit never notices. So the page compares for them: every number of the source must
stand in the translation, and the translation should hold no number the source lacks ("14:000", "14.000" for a
"14:00" that was one). A number is a run of digits with its inner separators ("1,250", "3.5", "14:00"), compared
by its digits alone, because German writes "1.250" and "3,5" for English's "1,250" and "3.5". Words for numbers
("three") and names are not checked: German spells those its own way ("drei", "München") and still is right.
"""
from __future__ import annotations

import re
from collections import Counter

NUMBER = re.compile(r"\d+(?:[.,:]\d+)*")  # "7", "1989", "1,250", "3.5", "14:00" (also inside codes: "B42", "23F")


def numbers_in(text: str) -> list[str]:
    """The numbers of a text as written, in order ("RB 27 leaves at 13:05" -> ["27", "13:05"])."""
    return NUMBER.findall(text)


def digits_of(number: str) -> str:
    """A number's digits without its separators: "1,250" and "1.250" are both "1250"."""
    return re.sub(r"\D", "", number)


def dropped_numbers(source: str, translation: str) -> list[str]:
    """The source's numbers (as written there) that the translation does not hold, each as often as it is missing:
    a number written twice must stand twice."""
    left = Counter(digits_of(n) for n in numbers_in(translation))
    dropped = []
    for number in numbers_in(source):
        digits = digits_of(number)
        if left[digits]:
            left[digits] -= 1
        else:
            dropped.append(number)
    return dropped


def added_numbers(source: str, translation: str) -> list[str]:
    """The translation's numbers (as written there) that the source does not hold: dropped_numbers the other way."""
    return dropped_numbers(translation, source)
