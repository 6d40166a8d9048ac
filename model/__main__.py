"""Command line: python -m model translate "some text" [--checkpoint DIR] [--beam N] [--max-len N]
[--length-penalty A] [--device auto|cpu|cuda] [--json FILE]
              python -m model convert-marian DIR --out pretrained/NAME   (a Hugging Face Marian opus-mt folder)"""
from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before torch is imported

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

DEFAULT_CHECKPOINT = Path(__file__).resolve().parent.parent / "pretrained" / "en-de"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m model", description="Attention Explorer's Transformer")
    commands = parser.add_subparsers(dest="command", required=True)
    tr = commands.add_parser("translate", help="translate one sentence")
    tr.add_argument("text")
    tr.add_argument("--checkpoint", default=str(DEFAULT_CHECKPOINT), help="checkpoint directory")
    tr.add_argument("--beam", type=int, default=1, help="beam size (1 = greedy)")
    tr.add_argument("--max-len", type=int, default=64, help="maximum generated tokens, EOS included")
    tr.add_argument("--length-penalty", type=float, help="GNMT alpha (default: the checkpoint's own, chosen on its "
                                                             "validation split, else the paper's 0.6)")
    tr.add_argument("--device", default="auto", help="auto, cpu or cuda")
    tr.add_argument("--json", help="write pieces, steps and attention to this file")
    cm = commands.add_parser("convert-marian", help="convert a downloaded Hugging Face Marian (opus-mt) folder")
    cm.add_argument("folder", help="the folder with config.json, model.safetensors or pytorch_model.bin, source.spm, "
                                   "target.spm and vocab.json")
    cm.add_argument("--out", required=True, help="the new checkpoint directory, e.g. pretrained/opus-mt-en-de")
    return parser


def translate_command(args: argparse.Namespace) -> int:
    from .checkpoint import CheckpointError, load_checkpoint
    from .config import DecodeConfig
    from .device import resolve_device
    from .inference import InputError, beyond_training, translate
    from .positional import MAX_POSITIONS
    from .serialize import translation_to_dict

    try:
        device = resolve_device(args.device)
        ckpt = load_checkpoint(args.checkpoint, device)
        alpha = ckpt.length_penalty if args.length_penalty is None else args.length_penalty
        decode = DecodeConfig(beam_size=args.beam, max_len=args.max_len, length_penalty=alpha)
        result = translate(ckpt.model, ckpt.tokenizer, args.text, decode)
    except (CheckpointError, InputError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if result.source.dropped:
        print(f"warning: input cut to {MAX_POSITIONS} positions; {result.source.dropped} pieces dropped", file=sys.stderr)
    if beyond_training(ckpt.model, len(result.source.ids)):
        print(f"note: the input has {len(result.source.ids)} positions, more than the {ckpt.config.max_len} this model "
              "was built for; it runs on positions it never saw", file=sys.stderr)
    print(result.text)
    if args.json:
        data = translation_to_dict(result, ckpt.tokenizer, {**decode.__dict__, "device": str(device),
                                                            "checkpoint": str(args.checkpoint)})
        try:
            Path(args.json).write_text(json.dumps(data, ensure_ascii=False))
        except OSError as exc:
            print(f"error: cannot write {args.json}: {exc.strerror}", file=sys.stderr)
            return 2
    return 0


def convert_marian_command(args: argparse.Namespace) -> int:
    from .checkpoint import CheckpointError
    from .marian import convert_marian

    try:
        done = convert_marian(args.folder, args.out)
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
    print(f"wrote {done.path}: Marian {languages}, d_model {cfg.d_model}, {cfg.n_heads} heads, "
          f"{cfg.n_encoder_layers}+{cfg.n_decoder_layers} layers, d_ff {cfg.d_ff}, {cfg.activation}, vocabulary "
          f"{cfg.vocab_size}{', final logits bias' if cfg.final_logits_bias else ''}")
    print(f'use it: python -m model translate "..." --checkpoint {done.path} (in the app: pick it in the sidebar '
          "when it is under pretrained/)")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "convert-marian":
        return convert_marian_command(args)
    return translate_command(args)


if __name__ == "__main__":
    raise SystemExit(main())
