"""Train a Transformer with the paper's recipe, resumably, logging to disk.

    python -m model.train --task en-de --out runs/en-de --epochs 10
    python -m model.train --task reverse --out runs/reverse

Adam (0.9, 0.98, 1e-9), warm-up + inverse-square-root learning rate, label smoothing 0.1, dropout
0.1, length-bucketed batches by token count. Writes <out>/log.csv (every step), <out>/epochs.csv
(per-epoch validation loss, BLEU, chrF), <out>/last (checkpoint + optimizer state, saved every
--save-every steps and at each epoch end; a rerun resumes from it), <out>/best (lowest
validation loss) and <out>/epochs/<n> (the last --keep-epochs epochs, to average as the paper did:
python -m model.average). Never run in CI: hours on a 2-core CPU.
"""
from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before torch: busy-waiting threads starve a shared CPU

import argparse
import csv
import json
import math
import shutil
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from safetensors.torch import load_file, save_file

from .analysis import attention_entropy
from .checkpoint import load_checkpoint, save_checkpoint
from .config import ModelConfig
from .device import resolve_device
from .data import encode_pairs, iterate_batches, load_corpus, reversal_corpus, token_batches
from .evaluate import corpus_scores, translate_many
from .schedule import RECIPE_KEYS, noam_lr
from .tokenizer import Tokenizer, train_tokenizer
from .transformer import Transformer, count_parameters

# en-de's peak learning rate, 0.35 x (256 x 1000)^-0.5 = 6.9e-4, is a third of what factor 1 would give with
# these small batches: at factor 1 (peak 2.2e-3) the first encoder layer's heads each locked onto one fixed
# token, the encoder's positions came out alike and cross-attention stayed flat, so the model learned German
# but barely used its source (validation chrF 6.9 after 3 epochs, against 13.0 with this recipe).
PRESETS = {
    "en-de": dict(d_model=256, n_heads=8, layers=3, d_ff=1024, vocab=8000, max_tokens=3072, warmup=1000,
                  lr_factor=0.35, epochs=10, max_len=256, train_max_len=100, valid_bleu=400),
    "reverse": dict(d_model=64, n_heads=4, layers=2, d_ff=256, vocab=30, max_tokens=2048, warmup=300,
                    lr_factor=1.0, epochs=20, max_len=64, train_max_len=64, valid_bleu=200),
}
LOG_FIELDS = ["step", "epoch", "loss", "lr", "tokens_per_s", "elapsed_s"]
EPOCH_FIELDS = ["epoch", "step", "train_loss", "valid_loss", "valid_bleu", "valid_chrf", "elapsed_s"]


@dataclass
class Progress:
    """Where training stands; saved as last/state.json."""

    epoch: int = 0  # epochs fully done
    batch: int = 0  # batches done in the current epoch
    step: int = 0
    elapsed_s: float = 0.0
    best_valid_loss: float = math.inf
    best_epoch: int = 0


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m model.train", description=__doc__.splitlines()[0])
    parser.add_argument("--task", choices=sorted(PRESETS), default="en-de")
    parser.add_argument("--corpus", default="data/en-de.tsv.gz", help="TSV with source, split, en, de (en-de task)")
    parser.add_argument("--out", required=True, help="run directory (created; resumed if it holds last/)")
    for name in ("d_model", "n_heads", "layers", "d_ff", "vocab", "max_tokens", "warmup", "epochs", "max_len",
                 "train_max_len", "valid_bleu"):
        parser.add_argument("--" + name.replace("_", "-"), type=int, dest=name)
    parser.add_argument("--lr-factor", type=float, dest="lr_factor")
    parser.add_argument("--dropout", type=float, default=0.1)
    parser.add_argument("--label-smoothing", type=float, default=0.1)
    parser.add_argument("--bf16", action="store_true", help="bfloat16 autocast (faster on GPUs and on CPUs with native bf16, e.g. AMX; "
                        "emulated and far slower on others, so it is then refused)")
    parser.add_argument("--device", default="auto", help="auto (CUDA if present), cpu or cuda")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0 = torch's default)")
    parser.add_argument("--save-every", type=int, default=100, help="steps between resumable saves")
    parser.add_argument("--keep-epochs", type=int, default=5, help="keep the weights of the last N epochs in "
                        "<out>/epochs/ for checkpoint averaging (python -m model.average; 0 = none)")
    parser.add_argument("--max-steps", type=int, default=0, help="stop after this many steps in total (0 = no cap)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--init-from", help="start a new run from this checkpoint's weights (e.g. the shipped model, "
                        "to keep training it when its optimizer state is gone); Adam starts afresh")
    parser.add_argument("--start-step", type=int, default=0, help="with --init-from: the schedule's step to start at (default: the checkpoint's own)")
    parser.add_argument("--start-epoch", type=int, default=0, help="with --init-from: epochs already done (default: the checkpoint's own)")
    args = parser.parse_args(argv)
    for key, value in PRESETS[args.task].items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    return args


def task_corpus(args: argparse.Namespace):
    if args.task == "reverse":
        return reversal_corpus(seed=args.seed)
    return load_corpus(args.corpus)


def get_tokenizer(args: argparse.Namespace, out: Path, frame) -> Tokenizer:
    """Train the joint tokenizer once per run (on the training split only) and reuse it on resume."""
    path = out / "tokenizer.model"
    if not path.exists() and args.init_from:  # continuing a shipped model: keep its vocabulary
        path.write_bytes((Path(args.init_from) / "tokenizer.model").read_bytes())
    if path.exists():
        return Tokenizer.load(path)
    train = frame[frame["split"] == "train"]
    if args.task == "reverse":
        tok = train_tokenizer(train["en"].tolist(), args.vocab, model_type="word")
    else:
        tok = train_tokenizer(train["en"].tolist() + train["de"].tolist(), args.vocab)
    path.write_bytes(tok.model_proto)
    return tok


def save_optimizer(optimizer: torch.optim.Optimizer, directory: Path) -> None:
    """Adam's moments as safetensors and its hyper-parameters as JSON: no pickle anywhere."""
    state = optimizer.state_dict()
    tensors = {f"{pid}.{key}": (v if torch.is_tensor(v) else torch.tensor(v)).contiguous()
               for pid, entry in state["state"].items() for key, v in entry.items()}
    save_file(tensors, str(directory / "optimizer.safetensors"))
    (directory / "optimizer.json").write_text(json.dumps(state["param_groups"]))


def load_optimizer(optimizer: torch.optim.Optimizer, directory: Path) -> None:
    tensors = load_file(str(directory / "optimizer.safetensors"))
    state: dict[int, dict[str, torch.Tensor]] = {}
    for name, value in tensors.items():
        pid, key = name.split(".", 1)
        state.setdefault(int(pid), {})[key] = value
    optimizer.load_state_dict({"state": state, "param_groups": json.loads((directory / "optimizer.json").read_text())})


def append_csv(path: Path, fields: list[str], row: dict) -> None:
    new = not path.exists()
    with path.open("a", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields)
        if new:
            writer.writeheader()
        writer.writerow(row)


def truncate_log(path: Path, key: str, limit: int) -> None:
    """Drop log rows written after the checkpoint we resume from (they will be redone)."""
    if not path.exists():
        return
    with path.open(newline="") as f:
        rows = [r for r in csv.DictReader(f) if int(r[key]) <= limit]
        fields = list(rows[0].keys()) if rows else None
    if fields is None:
        path.unlink()
        return
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)


def cpu_has_native_bf16() -> bool:
    """Whether oneDNN runs bf16 natively here (AVX-512 BF16 or AMX); the check is private to torch, so an
    unknown answer counts as yes."""
    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):
        return True


def continued_progress(args: argparse.Namespace, meta: dict, out: Path) -> Progress:
    """Pick up a shipped run's history (schedule step, epochs, time, best loss, logs) so its curves stay whole."""
    init = Path(args.init_from)
    for name in ("log.csv", "epochs.csv"):
        if (init / name).exists() and not (out / name).exists():
            shutil.copyfile(init / name, out / name)
    return Progress(epoch=args.start_epoch or int(meta.get("epochs", 0)),
                    step=args.start_step or int(meta.get("steps", 0)),
                    elapsed_s=float(meta.get("train_seconds", 0.0)),
                    best_valid_loss=float(meta.get("valid_loss", math.inf)),
                    best_epoch=int(meta.get("epochs", 0)) if "valid_loss" in meta else 0)


def loss_fn(model: Transformer, batch, label_smoothing: float, bf16: bool) -> torch.Tensor:
    """Mean label-smoothed cross-entropy per target token (padding ignored)."""
    device = model.embed.token.weight.device
    src, tgt_in, tgt_out = batch.src.to(device), batch.tgt_in.to(device), batch.tgt_out.to(device)
    with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
        logits = model(src, tgt_in)  # [B, T, V]
    return F.cross_entropy(logits.float().flatten(0, 1), tgt_out.flatten(), ignore_index=model.config.pad_id,
                           label_smoothing=label_smoothing)


@torch.no_grad()
def validation_loss(model: Transformer, pairs, max_tokens: int) -> float:
    """Per-token negative log-likelihood (no smoothing) on the validation split."""
    model.eval()
    total, tokens = 0.0, 0
    for _, batch in iterate_batches(pairs, token_batches(pairs, max_tokens), model.config.pad_id, model.config.bos_id):
        n = batch.n_tokens
        total += float(loss_fn(model, batch, 0.0, False)) * n
        tokens += n
    model.train()
    return total / max(tokens, 1)


def keep_epoch(model: Transformer, tokenizer: Tokenizer, directory: Path, epoch: int, keep: int, meta: dict) -> None:
    """Save this epoch's weights as directory/<epoch> and drop epochs older than the last ``keep``."""
    if keep <= 0:
        return
    save_checkpoint(model, tokenizer, directory / str(epoch), meta=meta)
    for old in directory.iterdir():
        if old.name.isdigit() and int(old.name) <= epoch - keep:
            shutil.rmtree(old)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    device = resolve_device(args.device)
    if args.bf16 and device.type == "cpu" and not cpu_has_native_bf16():
        # Measured on an AVX2-only CPU: 45 tokens/s with bf16 autocast against 780 in fp32.
        raise SystemExit("error: --bf16 on this CPU would be emulated (no native bf16 support) and many times "
                         "slower than float32; drop --bf16")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    frame = task_corpus(args)
    tokenizer = get_tokenizer(args, out, frame)
    split = {name: frame[frame["split"] == name] for name in ("train", "valid")}
    train_pairs = encode_pairs(tokenizer, split["train"]["en"].tolist(), split["train"]["de"].tolist(), args.train_max_len)
    valid_pairs = encode_pairs(tokenizer, split["valid"]["en"].tolist(), split["valid"]["de"].tolist(), args.train_max_len)
    valid_bleu = split["valid"].head(args.valid_bleu)

    last = out / "last"
    progress, continued_from = Progress(), None
    if (last / "state.json").exists():
        ckpt = load_checkpoint(last)
        model, config = ckpt.model.train(), ckpt.config
        progress = Progress(**json.loads((last / "state.json").read_text()))
        continued_from = ckpt.meta.get("continued_from")
    elif args.init_from:
        ckpt = load_checkpoint(args.init_from)
        if ckpt.tokenizer.model_proto != tokenizer.model_proto:
            raise SystemExit(f"error: {args.init_from} uses another tokenizer than {out / 'tokenizer.model'}")
        model, config = ckpt.model.train(), ckpt.config
        progress = continued_progress(args, ckpt.meta, out)
        # Where this run took over and the recipes before it (chained), so the model card can name every part.
        continued_from = {"step": progress.step, "epoch": progress.epoch,
                          **{k: ckpt.meta.get(k) for k in RECIPE_KEYS},
                          **({"earlier": ckpt.meta["continued_from"]} if ckpt.meta.get("continued_from") else {})}
    else:
        config = ModelConfig(vocab_size=tokenizer.vocab_size, d_model=args.d_model, n_heads=args.n_heads,
                             n_encoder_layers=args.layers, n_decoder_layers=args.layers, d_ff=args.d_ff,
                             dropout=args.dropout, max_len=args.max_len)
        model = Transformer(config).train()
    model.to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9)
    if (last / "state.json").exists():
        load_optimizer(optimizer, last)
        torch.manual_seed(args.seed + progress.step)
    for path, key in ((out / "log.csv", "step"), (out / "epochs.csv", "epoch")):
        truncate_log(path, key, progress.step if key == "step" else progress.epoch)
    batches_per_epoch = len(token_batches(train_pairs, args.max_tokens))
    total_steps = args.epochs * batches_per_epoch
    resume = f"resuming at step {progress.step}" if progress.step else "starting"
    print(f"{args.task}: {len(train_pairs)} train / {len(valid_pairs)} valid pairs, {batches_per_epoch} batches/epoch, "
          f"{count_parameters(model) / 1e6:.2f}M parameters, {device}, threads {torch.get_num_threads()}, bf16 {args.bf16}; "
          f"{resume}", flush=True)
    meta = lambda: {"task": args.task, "epochs": progress.epoch, "steps": progress.step,  # noqa: E731
                    "train_seconds": round(progress.elapsed_s), "warmup": args.warmup, "lr_factor": args.lr_factor,
                    "max_tokens": args.max_tokens, "label_smoothing": args.label_smoothing, "bf16": args.bf16,
                    **({"continued_from": continued_from} if continued_from else {})}

    def save_last() -> None:
        tmp = out / "last.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        save_checkpoint(model, tokenizer, tmp, meta=meta())
        save_optimizer(optimizer, tmp)
        (tmp / "state.json").write_text(json.dumps(progress.__dict__))
        shutil.rmtree(last, ignore_errors=True)
        tmp.rename(last)

    run_start, tokens_window, time_window = time.perf_counter() - progress.elapsed_s, 0, time.perf_counter()
    while progress.epoch < args.epochs:
        batches = token_batches(train_pairs, args.max_tokens, seed=args.seed * 1000 + progress.epoch)
        for index, batch in iterate_batches(train_pairs, batches, config.pad_id, config.bos_id, progress.batch):
            lr = noam_lr(progress.step + 1, config.d_model, args.warmup, args.lr_factor)
            for group in optimizer.param_groups:
                group["lr"] = lr
            loss = loss_fn(model, batch, args.label_smoothing, args.bf16)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            loss = loss.detach()
            progress.step, progress.batch = progress.step + 1, index + 1
            progress.elapsed_s = time.perf_counter() - run_start
            tokens_window += batch.n_tokens
            now = time.perf_counter()
            tps = tokens_window / max(now - time_window, 1e-9)
            append_csv(out / "log.csv", LOG_FIELDS, {"step": progress.step, "epoch": progress.epoch + 1,
                                                    "loss": f"{float(loss):.4f}", "lr": f"{lr:.6g}",
                                                    "tokens_per_s": f"{tps:.0f}", "elapsed_s": f"{progress.elapsed_s:.1f}"})
            if progress.step % 20 == 0:
                done = progress.epoch * batches_per_epoch + progress.batch
                eta = (now - time_window) / 20 * (total_steps - done) if tokens_window else 0
                print(f"epoch {progress.epoch + 1}/{args.epochs} batch {progress.batch}/{len(batches)} step {progress.step} "
                      f"loss {float(loss):.3f} lr {lr:.2e} {tps:.0f} tok/s ETA {eta / 60:.0f} min", flush=True)
                tokens_window, time_window = 0, now
            if progress.step % args.save_every == 0:
                save_last()
            if args.max_steps and progress.step >= args.max_steps:
                save_last()
                print(f"stopped at --max-steps {args.max_steps}", flush=True)
                return 0
        progress.epoch, progress.batch = progress.epoch + 1, 0
        valid_loss = validation_loss(model, valid_pairs, args.max_tokens)
        model.eval()
        hyps = translate_many(model, tokenizer, valid_bleu["en"].tolist(), beam_size=1)
        model.train()
        scores = corpus_scores(hyps, valid_bleu["de"].tolist())
        # A model stuck reading only the average of its source shows it here long before BLEU moves.
        spread = attention_entropy(model, valid_pairs[: args.valid_bleu], args.max_tokens)
        if valid_loss < progress.best_valid_loss:
            progress.best_valid_loss, progress.best_epoch = valid_loss, progress.epoch
            shutil.rmtree(out / "best", ignore_errors=True)
            save_checkpoint(model, tokenizer, out / "best", meta={**meta(), "valid_loss": round(valid_loss, 4),
                                                                  "valid_bleu": scores["bleu"]})
        save_last()
        keep_epoch(model, tokenizer, out / "epochs", progress.epoch, args.keep_epochs, meta())
        append_csv(out / "epochs.csv", EPOCH_FIELDS, {
            "epoch": progress.epoch, "step": progress.step, "train_loss": f"{float(loss):.4f}",
            "valid_loss": f"{valid_loss:.4f}", "valid_bleu": scores["bleu"], "valid_chrf": scores["chrf"],
            "elapsed_s": f"{progress.elapsed_s:.0f}"})
        print(f"== epoch {progress.epoch}: valid loss {valid_loss:.3f} (ppl {math.exp(valid_loss):.1f}), "
              f"valid BLEU {scores['bleu']} chrF {scores['chrf']} on {scores['n']} sentences; attention spread "
              f"(1 = uniform) cross {spread['cross']}, encoder {spread['encoder_self']}; "
              f"e.g. {valid_bleu['en'].iloc[0]!r} -> {hyps[0]!r}", flush=True)
    print(f"done: best epoch {progress.best_epoch}, valid loss {progress.best_valid_loss:.3f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
