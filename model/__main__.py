"""Command line: python -m model translate "some text" [--checkpoint DIR] [--beam N] [--max-len N]
[--length-penalty A] [--device auto|cpu|cuda] [--compiled-step] [--force "given translation"] [--json FILE]
              python -m model convert DIR --out pretrained/NAME   (a Hugging Face folder; config.json's model_type
              says which family: marian, bart, mbart, m2m_100 or t5; convert-marian is the same for Marian folders;
              each stage is printed as it starts, "1/5: reading config.json", and errors are one line on stderr)"""
from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before torch is imported

import argparse
import json
import math
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from model.serving.budget import DEFAULT_BUDGET

if TYPE_CHECKING:
    from model.serving.inference import Translation
    from model.tokenization.kinds import TextTokenizer

DEFAULT_CHECKPOINT = Path(__file__).resolve().parent.parent / "pretrained" / "en-de"


class Parser(argparse.ArgumentParser):
    """argparse, but a bad argument is one line on stderr, ``error: ...``, and exit status 2 (as every other
    error of the CLI), not a usage block."""

    def error(self, message: str) -> NoReturn:  # argparse's own hook
        self.exit(2, f"error: {message} (see {self.prog} --help)\n")


def bounded(kind: type, low: float, high: float) -> Callable[[str], float]:
    """An argparse type: a finite ``kind`` (int or float) from ``low`` to ``high``, checked where it enters (nan,
    inf, 1e308 or a 20-digit beam never reach the model)."""
    what = f"{'an integer' if kind is int else 'a number'} from {low:g} to {high:g}"

    def parse(text: str) -> float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what}, got {text[:40]!r}") from None
        if not (low <= value <= high and (kind is int or math.isfinite(value))):  # nan fails the range too
            raise argparse.ArgumentTypeError(f"expected {what}, got {text[:40]}")
        return value
    return parse


def build_parser() -> argparse.ArgumentParser:
    from model.network.config import MAX_BEAM, MAX_LENGTH_PENALTY, MAX_TEMPERATURE, MAX_VOCAB_SIZE
    from model.network.positional import MAX_POSITIONS

    parser = Parser(prog="python -m model", description="Attention Explorer's Transformer")
    commands = parser.add_subparsers(dest="command", required=True)
    tr = commands.add_parser("translate", help="translate one sentence")
    tr.add_argument("text")
    tr.add_argument("--checkpoint", default=str(DEFAULT_CHECKPOINT), help="checkpoint directory")
    tr.add_argument("--beam", type=bounded(int, 1, MAX_BEAM), default=1, help=f"beam size, 1 (greedy) to {MAX_BEAM}")
    tr.add_argument("--max-len", type=bounded(int, 1, MAX_POSITIONS - 1), default=64,
                    help=f"maximum generated tokens, EOS included (1 to {MAX_POSITIONS - 1})")
    tr.add_argument("--length-penalty", type=bounded(float, 0.0, MAX_LENGTH_PENALTY),
                    help=f"GNMT alpha from 0 to {MAX_LENGTH_PENALTY:g} (default: the checkpoint's own, chosen on its "
                         "validation split, else the paper's 0.6)")
    tr.add_argument("--sample", action="store_true", help="draw each next piece instead of searching (greedy "
                    "or beam); with --temperature, --top-k, --top-p and --seed")
    tr.add_argument("--temperature", type=bounded(float, 0.0, MAX_TEMPERATURE), default=1.0,
                    help=f"with --sample: divides the log-probabilities, 0 (greedy) to {MAX_TEMPERATURE:g}")
    tr.add_argument("--top-k", type=bounded(int, 0, MAX_VOCAB_SIZE), default=0,
                    help="with --sample: draw only among the k most probable pieces (0 = all)")
    tr.add_argument("--top-p", type=bounded(float, 1e-6, 1.0), default=1.0,
                    help="with --sample: draw only among the most probable pieces that together reach p (1 = all)")
    tr.add_argument("--seed", type=bounded(int, 0, 2**63 - 1), default=0, help="with --sample: the same seed gives "
                    "the same sample")
    tr.add_argument("--to", help="a multilingual model's target language code (mBART-50's de_DE, NLLB's deu_Latn, "
                    "M2M100's __de__); default: the one its config forces, else German, else its first")
    tr.add_argument("--keep-names", action="store_true", help="with --beam 2 or more: the output keeps the names and "
                    "numbers German writes as they are (model.decoding.copy_words; a checkpoint with "
                    "copy_lexicon.json)")
    tr.add_argument("--force", metavar="TRANSLATION", help="score this translation instead of decoding one (teacher "
                    "forcing): per piece its probability, its rank in the model's distribution and the model's own "
                    "first choice; not with --beam, --sample or --keep-names")
    tr.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N")
    tr.add_argument("--compiled-step", action="store_true", help="compile the decoding step first (about a minute per "
                    "model the first time, seconds from Inductor's on-disk cache after), then decode with it: the "
                    "same results, faster steps (docs: serving)")
    tr.add_argument("--json", help="write pieces, steps and attention to this file (at most "
                                   f"{DEFAULT_BUDGET.max_json_bytes // 2**20} MB: a longer decode is refused)")
    from model.huggingface.convert import CONVERTERS

    for name, what in (("convert", f"convert a Hugging Face folder of a supported model_type "
                                   f"({', '.join(sorted(CONVERTERS))})"),
                       ("convert-marian", "convert a downloaded Hugging Face Marian (opus-mt) folder")):
        cm = commands.add_parser(name, help=what)
        cm.add_argument("folder", help="the folder with config.json, model.safetensors (or its shards, or "
                                       "pytorch_model.bin) and the tokenizer files (Marian: source.spm, target.spm, "
                                       "vocab.json; the others: tokenizer.json), or a model id such as "
                                       "facebook/bart-base already in Hugging Face's cache (nothing is downloaded)")
        cm.add_argument("--out", required=True, help="the new checkpoint directory, e.g. pretrained/opus-mt-en-de")
    return parser


def translate_command(args: argparse.Namespace) -> int:
    from model.checkpoints.files import load_checkpoint
    from model.checkpoints.header import CheckpointError
    from model.network.config import DecodeConfig, Sampling
    from model.network.positional import MAX_POSITIONS
    from model.serving.compiled_step import prepare as prepare_compiled_step
    from model.serving.device import resolve_device
    from model.serving.doubt import doubt_of
    from model.serving.inference import (
        InputError,
        beyond_training,
        decode_rules,
        planned,
        planned_forced,
        score_translation,
        translate,
        unkept_notes,
    )
    from model.serving.serialize import translation_to_dict

    if args.json is not None and not args.json.strip():
        print("error: --json needs a file name", file=sys.stderr)
        return 2
    if args.force is not None and (args.beam > 1 or args.sample or args.keep_names):
        print("error: --force scores the translation it is given: --beam, --sample and --keep-names do not apply",
              file=sys.stderr)
        return 2
    try:
        device = resolve_device(args.device)
        ckpt = load_checkpoint(args.checkpoint, device)
        if args.compiled_step:
            built = prepare_compiled_step(ckpt.model, wait=True)
            print(f"note: the decoding step was compiled in {built.seconds:.0f} s" if built.decoder is not None else
                  f"note: the decoding step stays eager ({built.error})", file=sys.stderr)
        alpha = ckpt.length_penalty if args.length_penalty is None else args.length_penalty
        sampling = Sampling(args.temperature, args.top_k, args.top_p, args.seed) if args.sample else None
        codes = ckpt.tokenizer.target_languages
        if args.to is not None and args.to not in codes:
            raise ValueError(f"--to {args.to[:40]!r}: " + (f"not one of this model's {len(codes)} language codes "
                             f"({', '.join(codes[:8])}{', ...' if len(codes) > 8 else ''})" if codes else
                             "this model translates into one language"))
        if args.keep_names and ckpt.copy_lexicon is None:
            raise ValueError(f"--keep-names: {args.checkpoint} has no copy_lexicon.json, so it does not know which "
                             "words German keeps (python -m training.copy_lexicon writes one)")
        decode = DecodeConfig(beam_size=args.beam, max_len=args.max_len, length_penalty=alpha, sampling=sampling,
                              keep_words=args.keep_names, **decode_rules(ckpt.tokenizer, ckpt.meta, args.to))
        if args.json:  # priced before any work: a file too large to be useful is refused, not written
            budget = DEFAULT_BUDGET
            json_bytes = (planned(ckpt.model, ckpt.tokenizer, args.text, decode, budget, ckpt.copy_lexicon)[1]
                          if args.force is None else
                          planned_forced(ckpt.model, ckpt.tokenizer, args.text, args.force, decode, budget)[2]
                          ).cost.json_bytes
            if json_bytes > budget.max_json_bytes:
                print(f"error: --json would write about {json_bytes / 2**20:,.0f} MB (limit "
                      f"{budget.max_json_bytes / 2**20:,.0f} MB): shorten the text or lower --max-len or --beam",
                      file=sys.stderr)
                return 2
        if args.force is not None:
            result = score_translation(ckpt.model, ckpt.tokenizer, args.text, args.force, decode)
        else:
            result = translate(ckpt.model, ckpt.tokenizer, args.text, decode, lexicon=ckpt.copy_lexicon)
    except (CheckpointError, InputError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for note in result.notes:
        print(f"note: {note}", file=sys.stderr)
    if not result.forced and (doubt := doubt_of(result.result, result.target_pieces).note()):
        print(f"note: {doubt}", file=sys.stderr)  # the model's own per-piece probabilities (model.serving.doubt)
    if args.keep_names:
        nothing = "nothing" if result.source.unkept else "nothing (no name or number)"
        print(f"note: kept {', '.join(result.source.kept) if result.source.kept else nothing}", file=sys.stderr)
        for note in unkept_notes(result.source.unkept):
            print(f"note: {note}", file=sys.stderr)
    if result.source.dropped:
        print(f"warning: input cut to {len(result.source.ids)} positions (at most {MAX_POSITIONS}); "
              f"{result.source.dropped} pieces dropped", file=sys.stderr)
    if beyond_training(ckpt.model, len(result.source.ids)):
        print(f"note: the input has {len(result.source.ids)} positions, more than the {ckpt.config.max_len} this model "
              "was built for; it runs on positions it never saw", file=sys.stderr)
    print(result.text)
    if result.forced:
        print(forced_table(result, ckpt.tokenizer))
    if args.json:
        data = translation_to_dict(result, ckpt.tokenizer, checkpoint=str(args.checkpoint))
        try:
            Path(args.json).write_text(json.dumps(data, ensure_ascii=False))
        except OSError as exc:
            print(f"error: cannot write {args.json}: {exc.strerror}", file=sys.stderr)
            return 2
    return 0


def forced_table(result: Translation, tokenizer: TextTokenizer) -> str:
    """What the model thought of a translation it was handed: its log-probability, then per piece its probability,
    its rank in the model's distribution and, where they part ways, the piece the model would have written."""
    choices = [step.forced for step in result.result.steps if step.forced is not None]
    log_prob = result.result.best.log_prob
    lines = [f"log-prob {log_prob:.4f} over {len(choices)} pieces (mean {log_prob / max(len(choices), 1):.4f} per "
             f"piece); the model's own first choice at {sum(c.agrees for c in choices)} of them",
             f"{'step':>4}  {'piece':<16} {'prob':>8} {'rank':>6}  model's first choice"]
    parted = False
    for t, c in enumerate(choices):
        first = "" if c.agrees else f"{tokenizer.id_to_piece(c.first)} ({math.exp(c.first_log_prob):.4f})"
        if not c.agrees and not parted:
            first, parted = first + "  <- the two part ways here", True
        lines.append(f"{t + 1:>4}  {tokenizer.id_to_piece(c.token):<16} {math.exp(c.log_prob):>8.4f} {c.rank:>6}  "
                     f"{first}".rstrip())
    return "\n".join(lines)


def convert_command(args: argparse.Namespace) -> int:
    from model.checkpoints.header import CheckpointError
    from model.huggingface.convert import convert
    from model.huggingface.folder import STAGES
    from model.huggingface.marian import convert_marian

    # a large model takes minutes: each stage is said as it starts, as the sidebar does
    def progress(stage: str) -> None:
        print(f"{STAGES.index(stage) + 1}/{len(STAGES)}: {stage}", flush=True)

    try:
        done = (convert if args.command == "convert" else convert_marian)(args.folder, args.out, progress=progress)
    except CheckpointError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if done.pickled:
        print(f"read the weights from {done.weights_file}, a pickle, with torch.load(weights_only=True, "
              "map_location='cpu'): its restricted unpickler rebuilds tensors only and runs no other code")
    else:
        print(f"read the weights from {done.weights_file}")
    cfg = done.config
    languages = f"{done.source_lang} -> {done.target_lang}" if done.source_lang else "languages unknown"
    codes = done.target_languages
    if codes:
        languages = f"{len(codes)} target languages ({', '.join(codes[:6])}{', ...' if len(codes) > 6 else ''}; choose "
        languages += "one with translate --to)"
    print(f"wrote {done.path}: {done.family} {languages}, d_model {cfg.d_model}, {cfg.n_heads} heads, "
          f"{cfg.n_encoder_layers}+{cfg.n_decoder_layers} layers, d_ff {cfg.d_ff}, {cfg.activation}, vocabulary "
          f"{cfg.vocab_size}{', final logits bias' if cfg.final_logits_bias else ''}")
    print(f'use it: python -m model translate "..." --checkpoint {done.path} (in the app: pick it in the sidebar '
          "when it is under pretrained/)")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command in ("convert", "convert-marian"):
        return convert_command(args)
    return translate_command(args)


if __name__ == "__main__":
    raise SystemExit(main())
