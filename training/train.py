"""Train a Transformer with the paper's recipe, resumably, logging to disk.

    python -m training.train --task en-de --out runs/en-de --epochs 10
    python -m training.train --task reverse --out runs/reverse
    torchrun --nproc_per_node N -m training.train ...   # N processes, DistributedDataParallel (training.distributed)

Adam (0.9, 0.98, 1e-9), warm-up + inverse-square-root learning rate, label smoothing 0.1, dropout
0.1, length-bucketed batches by token count. Writes <out>/log.csv (every step), <out>/epochs.csv
(per-epoch validation loss, BLEU, chrF), <out>/last (checkpoint + optimizer state, saved every
--save-every steps and at each epoch end; a rerun resumes from it), <out>/best (lowest
validation loss) and <out>/epochs/<n> (the last --keep-epochs epochs, to average as the paper did:
python -m training.average). Never run in CI: hours on a 2-core CPU.
"""
from __future__ import annotations

import os

# before torch is imported: busy-waiting threads starve a shared CPU
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse
import csv
import json
import math
import re
import shutil
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import pandas as pd
import torch
from safetensors.torch import load_file, save_file
from torch import nn

from model.checkpoints.files import load_checkpoint, save_checkpoint
from model.checkpoints.shards import SHARD_BYTES
from model.network.config import ModelConfig
from model.network.transformer import Transformer, count_parameters
from model.serving.device import describe, resolve_device
from model.tokenization.joint import Tokenizer, train_tokenizer

from . import distributed
from .alignment import CopyAlignment
from .augment import augment_copies
from .data import Pair, collate, encode_pairs, load_corpus, reversal_corpus, token_batches
from .diagnostics import attention_entropy
from .distributed import Ranks
from .evaluate import corpus_scores, translate_many
from .grow import widen_feed_forward
from .loss import loss_sums, validation_loss
from .presets import PRESETS
from .schedule import RECIPE_KEYS, cooldown, noam_lr
from .vocab_transfer import transfer_vocabulary

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
    parser = argparse.ArgumentParser(prog="python -m training.train", description=__doc__.splitlines()[0])
    parser.add_argument("--task", choices=sorted(PRESETS), default="en-de")
    parser.add_argument("--corpus", default="data/en-de.tsv.gz", help="TSV with source, split, en, de (en-de task)")
    parser.add_argument("--out", required=True, help="run directory (created; resumed if it holds last/)")
    for name in ("d_model", "n_heads", "layers", "d_ff", "vocab", "max_tokens", "warmup", "epochs", "max_len",
                 "train_max_len", "valid_bleu"):
        parser.add_argument("--" + name.replace("_", "-"), type=int, dest=name)
    parser.add_argument("--lr-factor", type=float, dest="lr_factor")
    parser.add_argument("--cooldown-epochs", type=int, default=0, help="multiply the rate by a factor falling "
                        "linearly from 1 to 0 over the last N of --epochs (training.schedule.cooldown; 0 = none)")
    parser.add_argument("--dropout", type=float, help="residual, attention and FFN dropout (default 0.1; with "
                        "--init-from: the checkpoint's own unless given)")
    parser.add_argument("--label-smoothing", type=float, default=0.1)
    parser.add_argument("--bf16", action="store_true", help="bfloat16 autocast (faster on GPUs and on CPUs with "
                        "native bf16, e.g. AMX; emulated and far slower on others, so it is then refused)")
    parser.add_argument("--device", default="auto", help="auto (CUDA if present), cpu or cuda")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0 = torch's default)")
    parser.add_argument("--save-every", type=int, default=100, help="steps between resumable saves")
    parser.add_argument("--keep-epochs", type=int, default=5, help="keep the weights of the last N epochs in "
                        "<out>/epochs/ for checkpoint averaging (python -m training.average; 0 = none)")
    parser.add_argument("--max-steps", type=int, default=0, help="stop after this many steps in total (0 = no cap)")
    parser.add_argument("--stop-minutes", type=float, default=0.0, help="wall-clock budget of this launch: stop "
                        "after the last epoch that ends within it, as fairseq's --stop-time-hours (0 = none; for a "
                        "lent GPU's fixed minutes)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--copy-augment", type=int, default=0, help="add N copies of every training pair that "
                        "shares a name or number between its sides, that string replaced on both (training.augment)")
    parser.add_argument("--copy-made-up", type=float, default=0.0, help="with --copy-augment: the share (0-1) of "
                        "substituted names made up from random syllables instead of taken from training.augment's "
                        "list, whose names a model then learns rather than learning to copy")
    parser.add_argument("--copy-subjects", action="store_true", help="with --copy-augment: also copy every pair "
                        "that opens with He/She and Er/Sie, a name in the pronoun's place on both sides, so that "
                        "names are copied at the start of a sentence too (training.augment)")
    parser.add_argument("--copy-codes", type=float, default=0.0, help="with --copy-augment: the share (0-1) of "
                        "substituted numbers replaced by phone numbers and codes (\"0171 5550199\", \"LH 2041\"), "
                        "shapes the corpus hardly has")
    parser.add_argument("--copy-fresh", action="store_true", help="with --copy-augment: draw the copies anew every "
                        "epoch (other names and numbers in the same pairs) instead of once per run, so the model "
                        "cannot learn the substituted strings themselves")
    parser.add_argument("--bpe-dropout", type=float, default=0.0, help="segment the training pairs as BPE-dropout "
                        "does, each merge skipped with this probability (e.g. 0.1), drawn anew every epoch; "
                        "validation keeps the one segmentation inference uses (training.data.encode_pairs)")
    parser.add_argument("--bpe-dropout-sides", choices=["both", "source"], default="both", help="with --bpe-dropout: "
                        "sample the pieces of both sides, or of the source only (the decoder learns to write "
                        "the pieces inference writes from finer ones)")
    parser.add_argument("--align-copies", type=float, default=0.0, help="guided alignment of copies (e.g. 0.05): "
                        "teach one cross-attention head to look at the source piece the decoder copies, this factor "
                        "times its -log weight added to the loss (training.alignment)")
    parser.add_argument("--align-head", default="", help="with --align-copies: LAYER:HEAD of the supervised "
                        "cross-attention head, counted from 1 as the app does (default: the last layer's head 1)")
    parser.add_argument("--train-sources", default="", help="comma-separated corpus sources (its 'source' column) "
                        "to train on, e.g. those of the test split's domains for a last in-domain stretch; the "
                        "validation split is kept whole (default: every source)")
    parser.add_argument("--snapshot-epochs", default="", help="comma-separated epochs whose weights are kept for "
                        "good in <out>/snapshots/<n> (the 'watch attention learn' snapshots, e.g. 1,2,4,8,16)")
    parser.add_argument("--init-from", help="start a new run from this checkpoint's weights (e.g. the shipped model, "
                        "to keep training it when its optimizer state is gone); Adam starts afresh")
    parser.add_argument("--widen-ff", type=int, default=0, help="with --init-from: widen every FFN to this many "
                        "hidden units first, the new ones silent so the model computes what it did (training.grow)")
    parser.add_argument("--tokenizer", help="a sentencepiece model to use instead of training one (e.g. another run's "
                        "tokenizer.model); with --init-from of another vocabulary, the checkpoint's embeddings are "
                        "carried over piece by piece (training.vocab_transfer)")
    parser.add_argument("--start-step", type=int, default=0, help="with --init-from: the schedule's step to start at "
                        "(default: the checkpoint's own)")
    parser.add_argument("--start-epoch", type=int, default=0, help="with --init-from: epochs already done (default: "
                        "the checkpoint's own)")
    args = parser.parse_args(argv)
    for flag in ("copy_made_up", "copy_codes"):
        if not 0.0 <= getattr(args, flag) <= 1.0:
            parser.error(f"--{flag.replace('_', '-')} is a share from 0 to 1, not {getattr(args, flag):g}")
    if not 0.0 <= args.bpe_dropout < 1.0:
        parser.error(f"--bpe-dropout is a merge's probability of being skipped, 0 to below 1: not {args.bpe_dropout:g}")
    if args.bpe_dropout_sides != "both" and not args.bpe_dropout:
        parser.error("--bpe-dropout-sides says where --bpe-dropout P samples: give P too")
    if args.bpe_dropout and args.task == "reverse":
        parser.error("--bpe-dropout samples the pieces of the en-de tokenizer; the reversal task's are whole words")
    if not (math.isfinite(args.align_copies) and args.align_copies >= 0):
        parser.error(f"--align-copies is a loss factor, 0 (off) or more: not {args.align_copies:g}")
    if args.align_head and not args.align_copies:
        parser.error("--align-head says which head --align-copies F supervises: give F too")
    if args.align_head and not re.fullmatch(r"[1-9]\d*:[1-9]\d*", args.align_head):
        parser.error(f"--align-head is LAYER:HEAD counted from 1, e.g. 3:1: not {args.align_head!r}")
    if args.widen_ff < 0:
        parser.error(f"--widen-ff is a number of hidden units, not {args.widen_ff}")
    if args.widen_ff and not args.init_from:
        parser.error("--widen-ff grows the model of --init-from: give that too (a new model takes --d-ff)")
    if args.copy_subjects and args.copy_augment <= 0:
        parser.error("--copy-subjects gives He/She pairs the copies of --copy-augment N: give N too")
    if args.cooldown_epochs < 0:
        parser.error("--cooldown-epochs counts the run's last epochs: 0 (none) or more")
    args.train_sources = source_names(args.train_sources)
    if args.train_sources and args.task == "reverse":
        parser.error("--train-sources picks sources of the en-de corpus; the reversal task has one")
    if args.copy_fresh and args.copy_augment <= 0:
        parser.error("--copy-fresh draws the copies of --copy-augment N anew each epoch: give N too")
    for key, value in PRESETS[args.task].items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    return args


def task_corpus(args: argparse.Namespace, corpus: pd.DataFrame | None = None, epoch: int = 0) -> pd.DataFrame:
    """The task's pairs, with the copies of --copy-augment; with --copy-fresh those of ``epoch`` (drawn from
    ``corpus``, the file as read, so it is read once), else the run's one draw."""
    if args.task == "reverse":
        return reversal_corpus(seed=args.seed)
    seed = args.seed * 1000 + epoch if args.copy_fresh else args.seed
    frame = load_corpus(args.corpus) if corpus is None else corpus
    return augment_copies(train_sources(frame, args.train_sources), args.copy_augment, seed=seed,
                          made_up=args.copy_made_up, codes=args.copy_codes, subjects=args.copy_subjects)


def source_names(sources: str) -> list[str]:
    """--train-sources as a sorted list of names (parsed once, with the other arguments)."""
    return sorted({name.strip() for name in sources.split(",") if name.strip()})


def train_sources(frame: pd.DataFrame, sources: list[str]) -> pd.DataFrame:
    """The corpus with its training pairs cut to ``sources`` (none named keeps all); the other splits stay whole,
    so validation losses compare with every run before. A source with no training pair is refused."""
    if not sources:
        return frame
    train = frame["split"] == "train"
    unknown = sorted(set(sources) - set(frame.loc[train, "source"]))
    if unknown:
        raise SystemExit(f"--train-sources: no training pair comes from {unknown}; the corpus has "
                         f"{sorted(set(frame.loc[train, 'source']))}")
    return frame[~train | frame["source"].isin(sources)]


def get_tokenizer(args: argparse.Namespace, out: Path, frame) -> Tokenizer:
    """Train the joint tokenizer once per run (on the training split only) and reuse it on resume."""
    path = out / "tokenizer.model"
    if not path.exists() and (args.tokenizer or args.init_from):  # given, or continuing a model: keep its vocabulary
        path.write_bytes(Path(args.tokenizer or Path(args.init_from) / "tokenizer.model").read_bytes())
    if path.exists():
        return Tokenizer.load(path)
    train = frame[frame["split"] == "train"]
    if args.task == "reverse":
        tok = train_tokenizer(train["en"].tolist(), args.vocab, model_type="word")
    else:
        # Digits one piece each and unseen characters as bytes: a number is copied digit by digit and nothing
        # becomes "<unk>" (the model before wrote "202" for "2023" and "⁇" for what its pieces lacked).
        tok = train_tokenizer(train["en"].tolist() + train["de"].tolist(), args.vocab, split_digits=True,
                              byte_fallback=True)
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


def keep_epoch(model: Transformer, tokenizer: Tokenizer, directory: Path, epoch: int, keep: int, meta: dict) -> None:
    """Save this epoch's weights as directory/<epoch> and drop epochs older than the last ``keep``."""
    if keep <= 0:
        return
    save_checkpoint(model, tokenizer, directory / str(epoch), meta=meta, max_shard_bytes=SHARD_BYTES)
    for old in directory.iterdir():
        if old.name.isdigit() and int(old.name) <= epoch - keep:
            shutil.rmtree(old)


@dataclass
class Run:
    """One training run: its settings, data, model (``forward`` is what trains it: the model itself or its
    DistributedDataParallel wrapper), optimizer, this process's place in the job, and where it stands."""

    args: argparse.Namespace
    out: Path
    tokenizer: Tokenizer
    model: Transformer
    forward: nn.Module
    ranks: Ranks
    optimizer: torch.optim.Optimizer
    progress: Progress
    train_pairs: list[Pair]  # with --copy-fresh or --bpe-dropout: the draw of epoch ``drawn``
    valid_pairs: list[Pair]
    valid_bleu: pd.DataFrame
    continued_from: dict | None = None
    corpus: pd.DataFrame | None = None  # drawn per epoch (--copy-fresh, --bpe-dropout): the corpus as read
    drawn: int | None = None  # the epoch whose draw train_pairs holds (--copy-fresh, --bpe-dropout)
    align: CopyAlignment | None = None  # --align-copies: the supervised head and its loss factor
    started: float = field(default_factory=time.perf_counter)

    def epoch_pairs(self) -> list[Pair]:
        """The current epoch's training pairs: with --copy-fresh its own draw of the copies, with --bpe-dropout its
        own segmentation, made once per epoch (and the same again on a resume mid-epoch, so the batches are too),
        else the run's one draw."""
        if self.corpus is not None and self.drawn != self.progress.epoch:
            frame = task_corpus(self.args, self.corpus, self.progress.epoch)
            train = frame[frame["split"] == "train"]
            self.train_pairs = encode_pairs(self.tokenizer, train["en"].tolist(), train["de"].tolist(),
                                            self.args.train_max_len, bpe_dropout=self.args.bpe_dropout,
                                            seed=self.args.seed * 1000 + self.progress.epoch,
                                            sides=self.args.bpe_dropout_sides)
            self.drawn = self.progress.epoch
        return self.train_pairs

    def meta(self) -> dict:
        """Training facts stored with every checkpoint (the model card and the app read them)."""
        a, p = self.args, self.progress
        return {"task": a.task, "epochs": p.epoch, "steps": p.step, "train_seconds": round(p.elapsed_s),
                "warmup": a.warmup, "lr_factor": a.lr_factor, "max_tokens": a.max_tokens,
                "label_smoothing": a.label_smoothing, "bf16": a.bf16, "dropout": self.model.config.dropout,
                "processes": self.ranks.world,  # one optimizer step takes a batch from each
                "device": "CPU" if self.ranks.device.type == "cpu" else describe(self.ranks.device),  # the GPU's name
                "valid_sentences": len(self.valid_bleu),  # what each epoch's valid BLEU/chrF is on
                "copy_augment": a.copy_augment, "copy_made_up": a.copy_made_up, "copy_codes": a.copy_codes,
                "copy_subjects": a.copy_subjects, "copy_fresh": a.copy_fresh,
                **({"bpe_dropout": a.bpe_dropout} if a.bpe_dropout else {}),
                **({"bpe_dropout_sides": a.bpe_dropout_sides}
                   if a.bpe_dropout and a.bpe_dropout_sides != "both" else {}),
                **({"train_sources": a.train_sources} if a.train_sources else {}),
                **(self.align.meta() if self.align else {}),
                **({"cooldown": [max(1, a.epochs - a.cooldown_epochs + 1), a.epochs]} if a.cooldown_epochs else {}),
                **({"corpus": Path(a.corpus).name} if a.task != "reverse" else {}),
                **({"continued_from": self.continued_from} if self.continued_from else {})}

    def save_last(self) -> None:
        """Weights, optimizer and progress as <out>/last, replaced atomically so a crash never leaves half a save.
        Rank 0 writes; every rank waits until it has."""
        if not self.ranks.main:
            distributed.barrier(self.ranks)
            return
        tmp, last = self.out / "last.tmp", self.out / "last"
        shutil.rmtree(tmp, ignore_errors=True)
        save_checkpoint(self.model, self.tokenizer, tmp, meta=self.meta(), max_shard_bytes=SHARD_BYTES)
        save_optimizer(self.optimizer, tmp)
        (tmp / "state.json").write_text(json.dumps(self.progress.__dict__))
        shutil.rmtree(last, ignore_errors=True)
        tmp.rename(last)
        distributed.barrier(self.ranks)


def _model_and_progress(args: argparse.Namespace, out: Path, tokenizer: Tokenizer
                        ) -> tuple[Transformer, Progress, dict | None, bool]:
    """The model to train and where it stands: resumed from <out>/last, continued from --init-from (its
    history carried over), or new. The last item says whether the optimizer state is to be resumed too."""
    last = out / "last"
    if (last / "state.json").exists():
        ckpt = load_checkpoint(last)
        progress = Progress(**json.loads((last / "state.json").read_text()))
        return ckpt.model.train(), progress, ckpt.meta.get("continued_from"), True
    if args.init_from:
        ckpt = load_checkpoint(args.init_from)
        model, moved = ckpt.model, ckpt.tokenizer.model_proto != tokenizer.model_proto
        if moved:
            if not args.tokenizer:
                raise SystemExit(f"error: {args.init_from} uses another tokenizer than {out / 'tokenizer.model'}; "
                                 "name the new one with --tokenizer to carry the weights over to it")
            model = transfer_vocabulary(model, ckpt.tokenizer, tokenizer)
        progress = continued_progress(args, ckpt.meta, out)
        if args.widen_ff and args.widen_ff < ckpt.config.d_ff:
            raise SystemExit(f"error: --widen-ff {args.widen_ff} would narrow {args.init_from}'s FFNs "
                             f"({ckpt.config.d_ff} hidden units); give a larger width")
        widened = bool(args.widen_ff) and args.widen_ff != ckpt.config.d_ff
        if widened:
            model = widen_feed_forward(model, args.widen_ff, seed=args.seed)
        if args.dropout is not None and args.dropout != ckpt.config.dropout:  # dropout holds no weights: same ones
            state = model.state_dict()
            model = Transformer(replace(model.config, dropout=args.dropout))
            model.load_state_dict(state)
        # Where this run took over and the recipes before it (chained), so the model card can name every part.
        continued_from = {"step": progress.step, "epoch": progress.epoch,
                          **{k: ckpt.meta.get(k) for k in RECIPE_KEYS},
                          **({"vocabulary_after": "carried over to a new tokenizer"} if moved else {}),
                          **({"feed_forward_after": [ckpt.config.d_ff, args.widen_ff]} if widened else {}),
                          **({"earlier": ckpt.meta["continued_from"]} if ckpt.meta.get("continued_from") else {})}
        return model.train(), progress, continued_from, False
    config = ModelConfig(vocab_size=tokenizer.vocab_size, d_model=args.d_model, n_heads=args.n_heads,
                         n_encoder_layers=args.layers, n_decoder_layers=args.layers, d_ff=args.d_ff,
                         dropout=0.1 if args.dropout is None else args.dropout, max_len=args.max_len)
    return Transformer(config).train(), Progress(), None, False


def copy_alignment(args: argparse.Namespace, config: ModelConfig, tokenizer: Tokenizer) -> CopyAlignment | None:
    """--align-copies' head, checked against the model it supervises (a head it lacks is refused in one line)."""
    if not args.align_copies:
        return None
    layer, head = (int(n) for n in (args.align_head or f"{config.n_decoder_layers}:1").split(":"))
    if layer > config.n_decoder_layers or head > config.n_heads:
        raise SystemExit(f"error: --align-head {layer}:{head}: the model has {config.n_decoder_layers} decoder "
                         f"layers of {config.n_heads} heads")
    pieces = [tokenizer.id_to_piece(i) for i in range(tokenizer.vocab_size)]
    return CopyAlignment.for_vocabulary(pieces, args.align_copies, layer - 1, head - 1)


def build_or_resume(args: argparse.Namespace, ranks: Ranks) -> Run:
    """Everything a run needs, resumed from disk where a previous run of the same --out left off. Every rank
    builds the same thing; rank 0 alone writes (the tokenizer, the logs)."""
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    per_epoch = args.copy_fresh or args.bpe_dropout > 0  # each epoch its own pairs, drawn from the corpus as read
    corpus = load_corpus(args.corpus) if per_epoch and args.task != "reverse" else None
    frame = task_corpus(args, corpus, epoch=0)
    if ranks.main:
        get_tokenizer(args, out, frame)
    distributed.barrier(ranks)
    tokenizer = Tokenizer.load(out / "tokenizer.model")
    split = {name: frame[frame["split"] == name] for name in ("train", "valid")}
    encoded = ("valid",) if corpus is not None else ("train", "valid")  # drawn per epoch: the epoch's, below
    pairs = {name: encode_pairs(tokenizer, split[name]["en"].tolist(), split[name]["de"].tolist(), args.train_max_len)
             for name in encoded}
    model, progress, continued_from, resume = _model_and_progress(args, out, tokenizer)
    align = copy_alignment(args, model.config, tokenizer)
    model.to(ranks.device)
    forward = distributed.wrap(model, ranks)  # DDP makes every rank start from rank 0's weights
    optimizer = torch.optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9)
    if resume:
        load_optimizer(optimizer, out / "last")
    torch.manual_seed(args.seed + progress.step + 1000 * ranks.rank)  # dropout differs per rank and per resume
    if ranks.main:
        truncate_log(out / "log.csv", "step", progress.step)  # rows after the resumed checkpoint are redone
        truncate_log(out / "epochs.csv", "epoch", progress.epoch)
    run = Run(args=args, out=out, tokenizer=tokenizer, model=model, forward=forward, ranks=ranks,
              optimizer=optimizer, progress=progress, train_pairs=pairs.get("train", []), valid_pairs=pairs["valid"],
              valid_bleu=split["valid"].head(args.valid_bleu), continued_from=continued_from, corpus=corpus,
              align=align, started=time.perf_counter() - progress.elapsed_s)
    run.epoch_pairs()  # drawn per epoch: the draw of the epoch it starts or resumes in
    return run


def train_step(run: Run, batch, lr: float) -> tuple[float, int]:
    """One optimizer step on this rank's batch: the loss is the mean over the target tokens of the whole global
    batch (every rank's rows), so N processes step exactly as one process on all N batches would. Returns this
    rank's mean cross-entropy (without --align-copies' loss) and the global batch's token count."""
    for group in run.optimizer.param_groups:
        group["lr"] = lr
    loss_sum, align_sum = loss_sums(run.forward, batch, run.args.label_smoothing, run.args.bf16, run.ranks.device,
                                    run.align)
    tokens = distributed.total(batch.n_tokens, run.ranks)
    run.optimizer.zero_grad(set_to_none=True)
    objective = loss_sum if align_sum is None else loss_sum + align_sum  # the log keeps the cross-entropy alone
    (objective * run.ranks.world / max(tokens, 1)).backward()  # DDP averages the ranks' gradients: x world
    run.optimizer.step()
    return float(loss_sum.detach()) / max(batch.n_tokens, 1), tokens


def train_epoch(run: Run) -> tuple[float, bool]:
    """Train from where the current epoch stands to its end (or to --max-steps). Returns the last batch's
    loss and whether --max-steps stopped the run. With N ranks a step takes N consecutive batches, rank r the
    r-th of them (a last group of fewer than N batches is left out of that epoch)."""
    args, progress, model, world = run.args, run.progress, run.model, run.ranks.world
    cfg = model.config
    pairs = run.epoch_pairs()
    batches = token_batches(pairs, args.max_tokens, seed=args.seed * 1000 + progress.epoch)
    loss, tokens_window, time_window = math.nan, 0, time.perf_counter()
    for first in range(progress.batch, len(batches) - world + 1, world):
        batch = collate([pairs[i] for i in batches[first + run.ranks.rank]], cfg.pad_id, cfg.bos_id)
        epochs_left = args.epochs - progress.epoch - first / len(batches)  # counts the part of this epoch still to do
        lr = noam_lr(progress.step + 1, cfg.d_model, args.warmup, args.lr_factor) * cooldown(epochs_left,
                                                                                             args.cooldown_epochs)
        loss, tokens = train_step(run, batch, lr)
        progress.step, progress.batch = progress.step + 1, first + world
        progress.elapsed_s = time.perf_counter() - run.started
        tokens_window += tokens
        if run.ranks.main:
            tps = tokens_window / max(time.perf_counter() - time_window, 1e-9)
            append_csv(run.out / "log.csv", LOG_FIELDS, {
                "step": progress.step, "epoch": progress.epoch + 1, "loss": f"{loss:.4f}", "lr": f"{lr:.6g}",
                "tokens_per_s": f"{tps:.0f}", "elapsed_s": f"{progress.elapsed_s:.1f}"})
            if progress.step % 20 == 0:
                left = ((args.epochs - progress.epoch) * len(batches) - progress.batch) // world  # steps to go
                eta = (time.perf_counter() - time_window) / 20 * left
                print(f"epoch {progress.epoch + 1}/{args.epochs} batch {progress.batch}/{len(batches)} "
                      f"step {progress.step} loss {loss:.3f} lr {lr:.2e} {tps:.0f} tok/s ETA {eta / 60:.0f} min",
                      flush=True)
                tokens_window, time_window = 0, time.perf_counter()
        stop = bool(args.max_steps) and progress.step >= args.max_steps
        if stop or progress.step % args.save_every == 0:
            run.save_last()  # rank 0 writes, every rank waits for it
        if stop:
            return loss, True
    return loss, False


def end_of_epoch(run: Run, train_loss: float) -> None:
    """Validate, keep the best and the last epochs' weights, and log the epoch (rank 0; the others wait)."""
    args, progress, model = run.args, run.progress, run.model
    progress.epoch, progress.batch = progress.epoch + 1, 0
    if not run.ranks.main:
        run.save_last()
        return
    valid_loss = validation_loss(model, run.valid_pairs, args.max_tokens)
    model.eval()
    hyps = translate_many(model, run.tokenizer, run.valid_bleu["en"].tolist(), beam_size=1)
    model.train()
    scores = corpus_scores(hyps, run.valid_bleu["de"].tolist())
    # A model stuck reading only the average of its source shows it here long before BLEU moves.
    spread = attention_entropy(model, run.valid_pairs[: args.valid_bleu], args.max_tokens)
    if valid_loss < progress.best_valid_loss:
        progress.best_valid_loss, progress.best_epoch = valid_loss, progress.epoch
        shutil.rmtree(run.out / "best", ignore_errors=True)
        save_checkpoint(model, run.tokenizer, run.out / "best",
                        meta={**run.meta(), "valid_loss": round(valid_loss, 4), "valid_bleu": scores["bleu"]},
                        max_shard_bytes=SHARD_BYTES)
    run.save_last()
    keep_epoch(model, run.tokenizer, run.out / "epochs", progress.epoch, args.keep_epochs, run.meta())
    if str(progress.epoch) in args.snapshot_epochs.split(","):
        save_checkpoint(model, run.tokenizer, run.out / "snapshots" / str(progress.epoch), meta=run.meta(),
                        max_shard_bytes=SHARD_BYTES)
    append_csv(run.out / "epochs.csv", EPOCH_FIELDS, {
        "epoch": progress.epoch, "step": progress.step, "train_loss": f"{train_loss:.4f}",
        "valid_loss": f"{valid_loss:.4f}", "valid_bleu": scores["bleu"], "valid_chrf": scores["chrf"],
        "elapsed_s": f"{progress.elapsed_s:.0f}"})
    print(f"== epoch {progress.epoch}: valid loss {valid_loss:.3f} (ppl {math.exp(valid_loss):.1f}), "
          f"valid BLEU {scores['bleu']} chrF {scores['chrf']} on {scores['n']} sentences; attention spread "
          f"(1 = uniform) cross {spread['cross']}, encoder {spread['encoder_self']}; "
          f"e.g. {run.valid_bleu['en'].iloc[0]!r} -> {hyps[0]!r}", flush=True)


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
    ranks = distributed.start(device)
    try:
        return _train(args, ranks)
    finally:
        distributed.stop(ranks)


def out_of_time(deadline: float, epoch_seconds: float, ranks: Ranks) -> bool:
    """Whether an epoch as long as the last one would end past the deadline; every rank takes the same decision
    (one rank stopping alone would leave the others waiting in their next all-reduce)."""
    late = time.perf_counter() + epoch_seconds > deadline
    return distributed.total(int(late), ranks) > 0


def _train(args: argparse.Namespace, ranks: Ranks) -> int:
    run = build_or_resume(args, ranks)
    resume = f"resuming at step {run.progress.step}" if run.progress.step else "starting"
    if ranks.main:
        print(f"{args.task}: {len(run.train_pairs)} train / {len(run.valid_pairs)} valid pairs, "
              f"{len(token_batches(run.train_pairs, args.max_tokens))} batches/epoch, "
              f"{count_parameters(run.model) / 1e6:.2f}M parameters, {ranks.device} x {ranks.world} process(es), "
              f"threads {torch.get_num_threads()}, bf16 {args.bf16}; {resume}", flush=True)
    deadline = time.perf_counter() + args.stop_minutes * 60 if args.stop_minutes else math.inf
    while run.progress.epoch < args.epochs:
        started = time.perf_counter()
        loss, stopped = train_epoch(run)
        if stopped:
            if ranks.main:
                print(f"stopped at --max-steps {args.max_steps}", flush=True)
            return 0
        end_of_epoch(run, loss)
        if out_of_time(deadline, time.perf_counter() - started, ranks):
            if ranks.main:
                print(f"stopped: another epoch would end after --stop-minutes {args.stop_minutes:g}", flush=True)
            return 0
    if ranks.main:
        print(f"done: best epoch {run.progress.best_epoch}, valid loss {run.progress.best_valid_loss:.3f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
