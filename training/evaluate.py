"""BLEU and chrF (sacrebleu) of a checkpoint on a corpus split, overall, per source and by length, plus
diagnostics of how much it uses its source and how well it fits its training data.

CLI: python -m training.evaluate --checkpoint pretrained/en-de --split test [--beam 1 4] [--json FILE]
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import sacrebleu
import torch

from model.checkpoints.files import Checkpoint, load_checkpoint
from model.checkpoints.header import CheckpointError
from model.decoding.batch_decoding import greedy_batch
from model.decoding.copy_words import CopyLexicon, written_whole
from model.decoding.search import DecodeResult, decode_steps
from model.network.attention import Capture
from model.network.config import DecodeConfig
from model.network.transformer import Transformer
from model.serving.inference import prepare_source, stream
from model.tokenization.joint import Tokenizer
from model.tokenization.kinds import TextTokenizer

from .data import load_corpus
from .diagnostics import source_reliance

GREEDY_BATCH = 64  # sentences decoded together when greedy: one model step serves them all


@torch.inference_mode()
def translate_many(model: Transformer, tokenizer: TextTokenizer, sentences: Sequence[str], beam_size: int = 1,
                   max_len: int = 100, length_penalty: float = DecodeConfig.length_penalty,
                   lexicon: CopyLexicon | None = None) -> list[str]:
    """Translate sentences with the KV-cached decoder, no attention capture. Greedy runs in batches of similar
    length (greedy_batch gives each sentence what it gets alone; on a GPU one step per sentence left it idle);
    beam search runs one by one, keeping the names and numbers the ``lexicon`` picks when one is given."""
    device = next(model.parameters()).device
    config = DecodeConfig(beam_size=beam_size, max_len=min(max_len, model.config.max_len - 1),
                          length_penalty=length_penalty, keep_words=lexicon is not None)
    if lexicon is not None:
        outputs = []
        for text in sentences:
            source = prepare_source(tokenizer, text, model.config.max_len, lexicon)
            steps = list(stream(model, source, config, capture=Capture.NONE))
            outputs.append(tokenizer.decode(DecodeResult.from_steps(steps, 1).best.tokens))
        return outputs
    sources = [torch.tensor(tokenizer.encode_source(text, model.config.max_len), device=device) for text in sentences]
    if beam_size == 1:
        order = sorted(range(len(sources)), key=lambda i: sources[i].numel())  # little padding per batch
        tokens: dict[int, Sequence[int]] = {}
        for start in range(0, len(order), GREEDY_BATCH):
            chunk = order[start:start + GREEDY_BATCH]
            for i, result in zip(chunk, greedy_batch(model, [sources[i] for i in chunk], config,
                                                     capture=Capture.NONE), strict=True):
                tokens[i] = result.tokens
        return [tokenizer.decode(tokens[i]) for i in range(len(sources))]
    outputs = []
    for ids in sources:
        steps = list(decode_steps(model, ids, config, capture=Capture.NONE))
        outputs.append(tokenizer.decode(DecodeResult.from_steps(steps, 1).best.tokens))
    return outputs


LENGTH_BINS = [0, 5, 10, 20, 10_000]  # English words per source sentence
LENGTH_LABELS = ["1-5 words", "6-10 words", "11-20 words", "over 20 words"]


def corpus_scores(hypotheses: Sequence[str], references: Sequence[str]) -> dict[str, float]:
    """Corpus BLEU and chrF, rounded as reported."""
    return {"bleu": round(sacrebleu.corpus_bleu(list(hypotheses), [list(references)]).score, 2),
            "chrf": round(sacrebleu.corpus_chrf(list(hypotheses), [list(references)]).score, 2),
            "n": len(hypotheses)}


def evaluate_frame(model: Transformer, tokenizer: TextTokenizer, frame: pd.DataFrame, beam_size: int,
                   length_penalty: float = DecodeConfig.length_penalty, lexicon: CopyLexicon | None = None
                   ) -> tuple[dict, list[str]]:
    """Scores overall, per source and per source length of one decoding setting on rows with columns
    source, en, de."""
    start = time.perf_counter()
    hyps = translate_many(model, tokenizer, frame["en"].tolist(), beam_size, length_penalty=length_penalty,
                          lexicon=lexicon)
    report: dict[str, Any] = {"overall": corpus_scores(hyps, frame["de"].tolist())}
    # pandas-stubs types .str.len() for strings only; on the lists split() gives it counts their items (the words)
    words = frame["en"].str.split().str.len()  # type: ignore[misc]
    groups = {"per_source": frame["source"],  # short sentences and long ones fail differently: score them apart
              "per_length": pd.cut(words, LENGTH_BINS, labels=LENGTH_LABELS).astype(str)}
    for name, keys in groups.items():
        report[name] = {key: corpus_scores([hyps[i] for i in idx], frame["de"].iloc[idx].tolist())
                        for key, idx in frame.groupby(keys.to_numpy()).indices.items()}
    report["seconds"] = round(time.perf_counter() - start, 1)
    return report, hyps


EVERYDAY = Path(__file__).resolve().parent.parent / "data" / "everyday.tsv"  # typed sentences, see data/README.md


def set_runs(lexicon: CopyLexicon | None) -> list[tuple[str, int, CopyLexicon | None]]:
    """(report key, beam, lexicon) of the decodings our own sets are scored with: greedy, beam 4, and with a copy
    lexicon beam 4 keeping names and numbers."""
    return [("greedy", 1, None), ("beam4", 4, None), *([("beam4_keep", 4, lexicon)] if lexicon is not None else [])]


def everyday_report(model: Transformer, tokenizer: Tokenizer, path: Path = EVERYDAY,
                    length_penalty: float = DecodeConfig.length_penalty, lexicon: CopyLexicon | None = None) -> dict:
    """Greedy and beam-4 scores and translations of the everyday sentences (en, de columns): sentences like the
    ones people type, written for this check and in no corpus, so a model is not judged only on game and office
    text, nor on example sentences picked while looking at one model's output. With a copy ``lexicon``, also beam
    4 keeping names and numbers ("beam4_keep")."""
    frame = pd.read_csv(path, sep="\t", keep_default_na=False)
    report: dict = {"en": frame["en"].tolist(), "de": frame["de"].tolist()}
    for name, beam, words in set_runs(lexicon):
        hyps = translate_many(model, tokenizer, report["en"], beam, length_penalty=length_penalty, lexicon=words)
        report[name] = {"overall": corpus_scores(hyps, report["de"]), "translations": hyps}
    return report


NAMES_NUMBERS = EVERYDAY.with_name("names_numbers.tsv")  # names and numbers to carry over, see data/README.md
# a second such set, written after the keep rule (model.decoding.copy_words) was fixed: no rule was shaped by its misses
NAMES_HELDOUT = EVERYDAY.with_name("names_numbers_heldout.tsv")


def carried_over(hyps: Sequence[str], keeps: Sequence[Sequence[str]]) -> dict:
    """The share of the strings each translation must copy verbatim and whole (names, years, amounts, codes) that it
    does, and every one it misses as (row, string): a name or number turned into another is wrong however fluent."""
    misses = [(row, s) for row, (hyp, keep) in enumerate(zip(hyps, keeps, strict=True)) for s in keep
              if not written_whole(s, hyp)]
    total = sum(len(keep) for keep in keeps)
    return {"share": round(100 * (total - len(misses)) / max(total, 1), 2), "n": total, "misses": misses}


def names_numbers_report(model: Transformer, tokenizer: Tokenizer, path: Path = NAMES_NUMBERS,
                         length_penalty: float = DecodeConfig.length_penalty, lexicon: CopyLexicon | None = None
                         ) -> dict:
    """Greedy and beam-4 translations of the names-and-numbers sentences (en, de, keep columns), with the share
    of the keep strings carried over, every miss, and BLEU/chrF against the references; with a copy ``lexicon``,
    also beam 4 keeping the names and numbers it picks ("beam4_keep"; it never reads the keep column)."""
    frame = pd.read_csv(path, sep="\t", keep_default_na=False)
    keeps = [k.split(" | ") for k in frame["keep"]]
    report: dict = {"en": frame["en"].tolist(), "de": frame["de"].tolist(), "keep": keeps}
    for name, beam, words in set_runs(lexicon):
        hyps = translate_many(model, tokenizer, report["en"], beam, length_penalty=length_penalty, lexicon=words)
        report[name] = {"overall": corpus_scores(hyps, report["de"]), "carried": carried_over(hyps, keeps),
                        "translations": hyps}
    return report


def load_inputs(checkpoint: str, corpus: str) -> tuple[Checkpoint, pd.DataFrame] | None:
    """The checkpoint and the corpus a command scores, or None after saying on stderr why one cannot be read."""
    try:
        return load_checkpoint(checkpoint), load_corpus(corpus)
    except (CheckpointError, OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return None


def split_rows(frame: pd.DataFrame, split: str, limit: int = 0) -> pd.DataFrame:
    """One split's rows, renumbered from 0; only the first ``limit`` if it is not 0."""
    rows = frame[frame["split"] == split].reset_index(drop=True)
    return rows.head(limit) if limit else rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.evaluate", description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", default="pretrained/en-de")
    parser.add_argument("--corpus", default="data/en-de.tsv.gz")
    parser.add_argument("--split", default="test", choices=["train", "valid", "test"])
    parser.add_argument("--beam", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--limit", type=int, default=0, help="only the first N rows (0 = all)")
    parser.add_argument("--length-penalty", type=float, help="beam search's α (default: the one chosen for the "
                        "checkpoint on the validation split by training.length_penalty, else the paper's 0.6)")
    parser.add_argument("--keep-names", action="store_true", help="also score each beam of 2 or more keeping the "
                        "names and numbers the checkpoint's copy lexicon picks (reported as beam{N}_keep)")
    parser.add_argument("--json", help="write the report here")
    parser.add_argument("--hyps", help="write the beam-{max} translations here, one per line")
    args = parser.parse_args(argv)
    inputs = load_inputs(args.checkpoint, args.corpus)
    if inputs is None:
        return 2
    ckpt, frame = inputs
    if args.keep_names and ckpt.copy_lexicon is None:
        print(f"error: --keep-names: {args.checkpoint} has no copy_lexicon.json", file=sys.stderr)
        return 2
    train = frame[frame["split"] == "train"]
    frame = split_rows(frame, args.split, args.limit)
    alpha = ckpt.length_penalty if args.length_penalty is None else args.length_penalty
    report = {"checkpoint": str(args.checkpoint), "split": args.split, "length_penalty": alpha}
    if args.split != "train" and len(train):
        report["diagnostics"] = source_reliance(ckpt.model, ckpt.tokenizer, frame, train)
        print(f"diagnostics: {json.dumps(report['diagnostics'])}", flush=True)
    runs: list[tuple[int, CopyLexicon | None]] = [(beam, None) for beam in args.beam]
    plain: list[str] = []
    runs += [(beam, ckpt.copy_lexicon) for beam in args.beam if args.keep_names and beam > 1]
    for beam, lexicon in runs:
        scores, hyps = evaluate_frame(ckpt.model, ckpt.tokenizer, frame, beam, alpha, lexicon)
        plain = hyps if lexicon is None else plain  # --hyps writes the largest beam's own translations
        name = ("greedy" if beam == 1 else f"beam{beam}") + ("_keep" if lexicon is not None else "")
        report[name] = scores
        print(f"{name}: {json.dumps(scores)}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)
    if args.hyps:
        with open(args.hyps, "w") as f:
            f.write("\n".join(plain) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
