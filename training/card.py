"""Write a shipped model's card from measured numbers only: evaluation report, training log, corpus counts.

    python -m training.card --checkpoint pretrained/en-de --eval runs/en-de/test_eval.json [--corpus data/en-de.tsv.gz]

Measuring and writing are apart: ``measure_card`` reads the checkpoint, its logs and the files beside it, the corpus
and the evaluation reports, and runs the model on the examples and the everyday and names-and-numbers sets, into a
``CardFacts``; ``training.card_text.render_card`` writes the Markdown from those facts alone. The hand-written parts
(intended use, limitations) live in training.card_text; every number comes from the files named on the command line.
"""
from __future__ import annotations

import argparse
import csv
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import sacrebleu
import torch

from model.checkpoints.files import checkpoint_snapshots, load_checkpoint
from model.network.config import DecodeConfig
from model.network.transformer import count_parameters
from model.serving.inference import translate
from model.tokenization.joint import Tokenizer

from .card_text import CardFacts, Example, render_card
from .data import load_corpus
from .evaluate import EVERYDAY, NAMES_HELDOUT, NAMES_NUMBERS, everyday_report, names_numbers_report
from .length_penalty import SWEEP_FILE
from .study import STUDY_FILE, summary


def measure_card(checkpoint: Path, report: dict[str, Any], corpus: Path, n_examples: int = 10,
                 extra: dict[str, Any] | None = None, everyday: Path | None = None, names_numbers: Path | None = None,
                 names_heldout: Path | None = None) -> CardFacts:
    """What the card of ``checkpoint`` says, measured: its config, meta, parameters and logs, the files beside it,
    ``corpus``'s counts, and its translations of ``n_examples`` test sentences and of the sets given."""
    ckpt = load_checkpoint(checkpoint)
    tokenizer = ckpt.tokenizer
    if not isinstance(tokenizer, Tokenizer):
        raise ValueError(f"{checkpoint}: a card is written for this project's own models, not a converted one")
    frame = load_corpus(corpus)
    counts = frame.groupby(["source", "split"]).size().unstack(fill_value=0)
    examples = [Example(row["source"], row["en"], row["de"],
                        translate(ckpt.model, tokenizer, row["en"], DecodeConfig(max_len=100)).text,
                        translate(ckpt.model, tokenizer, row["en"],
                                  DecodeConfig(beam_size=4, max_len=100, length_penalty=ckpt.length_penalty)).text)
                for _, row in example_rows(frame, n_examples).iterrows()]

    def names(path: Path | None) -> dict[str, Any] | None:
        return (names_numbers_report(ckpt.model, tokenizer, path, ckpt.length_penalty, ckpt.copy_lexicon)
                if path else None)
    return CardFacts(
        name=checkpoint.name, config=ckpt.config, meta=ckpt.meta, parameters=count_parameters(ckpt.model),
        corpus=corpus.name, pairs={"all": len(frame), **{split: int((frame.split == split).sum())
                                                        for split in ("train", "valid", "test")}},
        source_counts=[(str(source), int(row.get("train", 0)), int(row.get("valid", 0)), int(row.get("test", 0)))
                       for source, row in counts.iterrows()],
        epochs=epoch_rows(checkpoint / "epochs.csv"), report=report, extra=extra, examples=examples,
        sweep=sweep_table(checkpoint),
        everyday=(everyday_report(ckpt.model, tokenizer, everyday, ckpt.length_penalty, ckpt.copy_lexicon)
                  if everyday else None),
        names_numbers=names(names_numbers), names_heldout=names(names_heldout), study=study_table(checkpoint),
        snapshots=snapshot_metas(checkpoint), sacrebleu=sacrebleu.__version__)


def build_card(checkpoint: Path, report: dict[str, Any], corpus: Path, n_examples: int = 10,
               extra: dict[str, Any] | None = None, everyday: Path | None = None, names_numbers: Path | None = None,
               names_heldout: Path | None = None) -> str:
    """The card of ``checkpoint`` as Markdown: measured, then rendered."""
    return render_card(measure_card(checkpoint, report, corpus, n_examples, extra, everyday, names_numbers,
                                    names_heldout))


def example_rows(frame: pd.DataFrame, n: int) -> pd.DataFrame:
    """``n`` test pairs: a seeded random pick, taken in turn from each source (the corpus file is sorted, so its first
    rows, titles in quotation marks and "A ...", would be an unrepresentative sample)."""
    shuffled = frame[frame["split"] == "test"].sample(frac=1.0, random_state=0)
    turn = shuffled.groupby("source").cumcount()  # 0 for each source's first pick, 1 for its second, ...
    return shuffled.assign(turn=turn).sort_values(["turn", "source"], kind="stable").head(n)


def epoch_rows(path: Path) -> list[dict[str, str]]:
    """epochs.csv's rows as written ([] without one)."""
    if not path.exists():
        return []
    with path.open() as f:
        return list(csv.DictReader(f))


def sweep_table(checkpoint: Path) -> pd.DataFrame | None:
    """The length-penalty sweep training.length_penalty wrote beside the model, None without one."""
    path = checkpoint / SWEEP_FILE
    return pd.read_csv(path) if path.exists() else None


def study_table(checkpoint: Path) -> pd.DataFrame | None:
    """The recipe study beside the model (study.csv, training.study), one row per setting; None without one."""
    path = checkpoint / STUDY_FILE
    return summary(pd.read_csv(path)) if path.is_file() else None


def snapshot_metas(checkpoint: Path) -> dict[str, dict[str, Any]]:
    """The meta of each snapshot shipped beside the model, by directory name, in training order."""
    return {name: meta for name, (_, meta) in checkpoint_snapshots(checkpoint).items()}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.card", description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", default="pretrained/en-de")
    parser.add_argument("--eval", required=True, help="JSON written by python -m training.evaluate --json")
    parser.add_argument("--corpus", default="data/en-de.tsv.gz", help="the corpus the model was trained on")
    parser.add_argument("--eval-extra", help="JSON of python -m training.evaluate on a larger corpus's test split: "
                        "its added sources are scored in a table of their own")
    parser.add_argument("--everyday", default=str(EVERYDAY), help="typed sentences scored in a section of their own")
    parser.add_argument("--names-numbers", default=str(NAMES_NUMBERS), help="sentences whose names and numbers "
                        "must be carried over, scored in a section of their own")
    parser.add_argument("--names-heldout", default=str(NAMES_HELDOUT), help="a second such set, written after the "
                        "keep rule, scored beside it")
    parser.add_argument("--no-everyday", action="store_true", help="no everyday and no names-and-numbers section "
                        "(models of other languages)")
    args = parser.parse_args(argv)
    torch.set_grad_enabled(False)
    extra = json.loads(Path(args.eval_extra).read_text()) if args.eval_extra else None
    card = build_card(Path(args.checkpoint), json.loads(Path(args.eval).read_text()), Path(args.corpus), extra=extra,
                      everyday=None if args.no_everyday else Path(args.everyday),
                      names_numbers=None if args.no_everyday else Path(args.names_numbers),
                      names_heldout=None if args.no_everyday else Path(args.names_heldout))
    (Path(args.checkpoint) / "MODEL_CARD.md").write_text(card)
    print(f"wrote {Path(args.checkpoint) / 'MODEL_CARD.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

