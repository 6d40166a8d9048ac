"""The example sentences each shipped model offers: on the Translate page as buttons, on the Heads page as the
sentence set whose head importance is summed."""
from __future__ import annotations

EXAMPLES = {
    "en-de": [
        "I have read the book that you gave me.",
        "She would like to drink a cup of tea.",
        "We went home because it was raining.",
        "When does the train to Berlin leave?",
        "I get up at seven every morning.",
    ],
    "reverse": ["h e l l o w o r l d", "a t t e n t i o n", "t r a n s f o r m e r", "a b c d e f g h i j"],
}
EXAMPLE_WHY = {
    "en-de": "These need reordering in German (verb at the end of a sub-clause, separable verbs such as "
             "*aufstehen → stehe … auf*): look for the cross-attention leaving the diagonal.",
    "reverse": "The correct output is the letters in reverse order, so the cross-attention should be an "
               "anti-diagonal.",
}
