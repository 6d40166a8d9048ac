"""Choosing beam search's length penalty α on the validation split, as the paper chose its own.

Beam search ranks finished hypotheses by log-probability divided by GNMT's ((5 + |Y|) / 6)^α
(model.decoding.search.length_penalty). The paper set beam 4 and α = 0.6 "after experimentation on the development set"
(section 6.1) for its models. A small model trained on little data puts more probability on ending early: with
the paper's α its beam output comes out shorter than the references, and BLEU's brevity penalty and chrF's recall
both pay for the words it drops. The same experiment on our validation split picks α for our model; the test split
never takes part, so the test scores stay honest.

CLI: python -m training.length_penalty --checkpoint pretrained/en-de --corpus data/en-de.tsv.gz [--write]
"""
from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

import pandas as pd
import sacrebleu

from model.checkpoints.files import CONFIG, update_meta
from model.network.config import DecodeConfig
from model.network.transformer import Transformer
from model.tokenization.kinds import TextTokenizer

from .evaluate import load_inputs, split_rows, translate_many

ALPHAS = (0.0, 0.6, 1.0, 1.5, 2.0)  # the app's slider runs 0-2; 0.6 is the paper's
PAPER_ALPHA = DecodeConfig.length_penalty
SWEEP_FILE = "length_penalty.csv"  # the sweep, beside the checkpoint it was run on (the model card shows it)


def sweep(model: Transformer, tokenizer: TextTokenizer, english: Sequence[str], german: Sequence[str],
          alphas: Sequence[float] = ALPHAS, beam_size: int = 4) -> pd.DataFrame:
    """BLEU, chrF and output/reference length ratio of beam search at each α, one row per α."""
    rows = []
    for alpha in alphas:
        hyps = translate_many(model, tokenizer, english, beam_size, length_penalty=alpha)
        bleu = sacrebleu.corpus_bleu(hyps, [list(german)])
        rows.append({"alpha": alpha, "beam": beam_size, "bleu": round(bleu.score, 2),
                     "chrf": round(sacrebleu.corpus_chrf(hyps, [list(german)]).score, 2),
                     "length_ratio": round(bleu.sys_len / max(bleu.ref_len, 1), 3), "n": len(hyps)})
    return pd.DataFrame(rows)


def best_alpha(table: pd.DataFrame) -> float:
    """The α of the highest BLEU; a tie goes to the one nearest the paper's (the less surprising choice)."""
    ranked = table.assign(distance=(table["alpha"] - PAPER_ALPHA).abs()).sort_values(["bleu", "distance"],
                                                                                      ascending=[False, True])
    return float(ranked["alpha"].iloc[0])


def write_choice(checkpoint: Path, table: pd.DataFrame) -> float:
    """Store the sweep beside the checkpoint and its chosen α in the checkpoint's meta (config.json), where
    evaluation, the model card and the app read it."""
    alpha = best_alpha(table)
    table.to_csv(checkpoint / SWEEP_FILE, index=False)
    update_meta(checkpoint, length_penalty=alpha)
    return alpha


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.length_penalty", description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", default="pretrained/en-de")
    parser.add_argument("--corpus", default="data/en-de.tsv.gz", help="its valid split is used, never the test split")
    parser.add_argument("--alphas", type=float, nargs="+", default=list(ALPHAS))
    parser.add_argument("--beam", type=int, default=4)
    parser.add_argument("--limit", type=int, default=0, help="only the first N validation rows (0 = all)")
    parser.add_argument("--write", action="store_true", help=f"write {SWEEP_FILE} and the chosen α into the checkpoint")
    args = parser.parse_args(argv)
    inputs = load_inputs(args.checkpoint, args.corpus)
    if inputs is None:
        return 2
    ckpt, frame = inputs
    valid = split_rows(frame, "valid", args.limit)
    table = sweep(ckpt.model, ckpt.tokenizer, valid["en"].tolist(), valid["de"].tolist(), args.alphas, args.beam)
    print(table.to_string(index=False))
    if args.write:
        print(f"α = {write_choice(Path(args.checkpoint), table)} written to {Path(args.checkpoint) / CONFIG}")
    else:
        print(f"best α: {best_alpha(table)} (--write stores it)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
