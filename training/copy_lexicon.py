"""Count the copy lexicon of a model's training corpus (model.decoding.copy_words): which capitalised words its
translations copy, which they translate, which words it writes in lower case. Only the train split is read, so the words
a
validation or test sentence keeps are decided without looking at its reference.

    python -m training.copy_lexicon --corpus data/en-de-plus2-words.tsv.gz --out pretrained/en-de
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from model.decoding.copy_words import LEXICON_FILE, CopyLexicon

from .data import load_corpus


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", required=True, help="gzip TSV with columns source, split, en, de")
    parser.add_argument("--out", required=True, help="the checkpoint directory that gets copy_lexicon.json")
    args = parser.parse_args(argv)
    try:
        frame = load_corpus(args.corpus)
    except (OSError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    train = frame[frame["split"] == "train"]
    if train.empty:
        print(f"error: {args.corpus} has no train split", file=sys.stderr)
        return 2
    lexicon = CopyLexicon.count(zip(train["en"], train["de"], strict=True))
    out = Path(args.out) / LEXICON_FILE
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(lexicon.to_json() + "\n", encoding="utf-8")
    print(f"{out}: {len(lexicon.copied)} copied, {len(lexicon.translated)} translated capitalised words, "
          f"{len(lexicon.lower)} lower-case words, from {len(train)} training pairs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
