"""Train a Transformer with the paper's recipe, resumably, logging to disk.

    python -m training.train --task en-de --out runs/en-de --epochs 10
    python -m training.train --task reverse --out runs/reverse
    python -m training.train --recipe lineage-10-domains --set device=cuda   # training/recipes/<name>.toml
    torchrun --nproc_per_node N -m training.train ...   # N processes, DistributedDataParallel (training.distributed)

A run's settings are one frozen, validated TrainConfig (training.config), given either as flags, one per field
(``--d-model`` for ``d_model``), or as a recipe file with ``--recipe NAME`` and ``--set KEY=VALUE`` overrides. The two
are not mixed: beside --recipe only --set is taken, and any other flag is refused in one line (exit status 2) that
names the --set to write instead, so a run's settings come from one place (training.flags). Either way the run
writes its settings as <out>/recipe.toml, which ``--recipe <out>/recipe.toml`` reads back.

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

import json
import math
import shutil
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import pandas as pd
import torch
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
from .config import TrainConfig
from .data import Batch, Pair, collate, encode_pairs, load_corpus, reversal_corpus, token_batches
from .diagnostics import attention_entropy
from .distributed import Ranks
from .evaluate import corpus_scores, translate_many
from .flags import parse_args
from .grow import widen_feed_forward
from .loss import loss_sums, validation_loss
from .run_files import append_csv, keep_epoch, load_optimizer, save_optimizer, save_recipe, truncate_log
from .schedule import RECIPE_KEYS, cooldown, noam_lr
from .vocab_transfer import transfer_vocabulary

DESCRIPTION = "Train a Transformer with the paper's recipe, resumably, logging to disk."
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


def task_corpus(config: TrainConfig, corpus: pd.DataFrame | None = None, epoch: int = 0) -> pd.DataFrame:
    """The task's pairs, with the copies of --copy-augment; with --copy-fresh those of ``epoch`` (drawn from
    ``corpus``, the file as read, so it is read once), else the run's one draw."""
    if config.task == "reverse":
        return reversal_corpus(seed=config.seed)
    seed = config.seed * 1000 + epoch if config.copy_fresh else config.seed
    frame = load_corpus(config.corpus) if corpus is None else corpus
    return augment_copies(train_sources(frame, config.train_sources), config.copy_augment, seed=seed,
                          made_up=config.copy_made_up, codes=config.copy_codes, subjects=config.copy_subjects)


def train_sources(frame: pd.DataFrame, sources: Sequence[str]) -> pd.DataFrame:
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


def get_tokenizer(config: TrainConfig, out: Path, frame: pd.DataFrame) -> Tokenizer:
    """Train the joint tokenizer once per run (on the training split only) and reuse it on resume."""
    path = out / "tokenizer.model"
    given = config.tokenizer or (Path(config.init_from) / "tokenizer.model" if config.init_from else None)
    if not path.exists() and given:  # given, or continuing a model: keep its vocabulary
        path.write_bytes(Path(given).read_bytes())
    if path.exists():
        return Tokenizer.load(path)
    train = frame[frame["split"] == "train"]
    if config.task == "reverse":
        tok = train_tokenizer(train["en"].tolist(), config.vocab, model_type="word")
    else:
        # Digits one piece each and unseen characters as bytes: a number is copied digit by digit and nothing
        # becomes "<unk>" (the model before wrote "202" for "2023" and "⁇" for what its pieces lacked).
        tok = train_tokenizer(train["en"].tolist() + train["de"].tolist(), config.vocab, split_digits=True,
                              byte_fallback=True)
    path.write_bytes(tok.model_proto)
    return tok


def cpu_has_native_bf16() -> bool:
    """Whether oneDNN runs bf16 natively here (AVX-512 BF16 or AMX); the check is private to torch, so an
    unknown answer counts as yes."""
    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):
        return True


def continued_progress(config: TrainConfig, meta: dict, out: Path) -> Progress:
    """Pick up a shipped run's history (schedule step, epochs, time, best loss, logs) so its curves stay whole."""
    assert config.init_from, "a run continues the checkpoint of --init-from"
    init = Path(config.init_from)
    for name in ("log.csv", "epochs.csv"):
        if (init / name).exists() and not (out / name).exists():
            shutil.copyfile(init / name, out / name)
    return Progress(epoch=config.start_epoch or int(meta.get("epochs", 0)),
                    step=config.start_step or int(meta.get("steps", 0)),
                    elapsed_s=float(meta.get("train_seconds", 0.0)),
                    best_valid_loss=float(meta.get("valid_loss", math.inf)),
                    best_epoch=int(meta.get("epochs", 0)) if "valid_loss" in meta else 0)


@dataclass
class Run:
    """One training run: its settings, data, model (``forward`` is what trains it: the model itself or its
    DistributedDataParallel wrapper), optimizer, this process's place in the job, and where it stands."""

    config: TrainConfig
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
            frame = task_corpus(self.config, self.corpus, self.progress.epoch)
            train = frame[frame["split"] == "train"]
            self.train_pairs = encode_pairs(self.tokenizer, train["en"].tolist(), train["de"].tolist(),
                                            self.config.train_max_len, bpe_dropout=self.config.bpe_dropout,
                                            seed=self.config.seed * 1000 + self.progress.epoch,
                                            sides=self.config.bpe_dropout_sides)
            self.drawn = self.progress.epoch
        return self.train_pairs

    def meta(self) -> dict:
        """Training facts stored with every checkpoint (the model card and the app read them)."""
        c, p = self.config, self.progress
        return {"task": c.task, "epochs": p.epoch, "steps": p.step, "train_seconds": round(p.elapsed_s),
                "warmup": c.warmup, "lr_factor": c.lr_factor, "max_tokens": c.max_tokens,
                "label_smoothing": c.label_smoothing, "bf16": c.bf16, "dropout": self.model.config.dropout,
                "processes": self.ranks.world,  # one optimizer step takes a batch from each
                "device": "CPU" if self.ranks.device.type == "cpu" else describe(self.ranks.device),  # the GPU's name
                "valid_sentences": len(self.valid_bleu),  # what each epoch's valid BLEU/chrF is on
                "copy_augment": c.copy_augment, "copy_made_up": c.copy_made_up, "copy_codes": c.copy_codes,
                "copy_subjects": c.copy_subjects, "copy_fresh": c.copy_fresh,
                **({"bpe_dropout": c.bpe_dropout} if c.bpe_dropout else {}),
                **({"bpe_dropout_sides": c.bpe_dropout_sides}
                   if c.bpe_dropout and c.bpe_dropout_sides != "both" else {}),
                **({"train_sources": list(c.train_sources)} if c.train_sources else {}),
                **(self.align.meta() if self.align else {}),
                **({"cooldown": [max(1, c.epochs - c.cooldown_epochs + 1), c.epochs]} if c.cooldown_epochs else {}),
                **({"corpus": Path(c.corpus).name} if c.task != "reverse" else {}),
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


def _model_and_progress(config: TrainConfig, out: Path, tokenizer: Tokenizer
                        ) -> tuple[Transformer, Progress, dict | None, bool]:
    """The model to train and where it stands: resumed from <out>/last, continued from --init-from (its
    history carried over), or new. The last item says whether the optimizer state is to be resumed too."""
    last = out / "last"
    if (last / "state.json").exists():
        ckpt = load_checkpoint(last)
        progress = Progress(**json.loads((last / "state.json").read_text()))
        return ckpt.model.train(), progress, ckpt.meta.get("continued_from"), True
    if config.init_from:
        ckpt = load_checkpoint(config.init_from)
        if not isinstance(ckpt.tokenizer, Tokenizer):
            raise SystemExit(f"error: {config.init_from} is a converted model; --init-from continues a model that "
                             "training.train wrote")
        model, moved = ckpt.model, ckpt.tokenizer.model_proto != tokenizer.model_proto
        if moved:
            if not config.tokenizer:
                raise SystemExit(f"error: {config.init_from} uses another tokenizer than {out / 'tokenizer.model'}; "
                                 "name the new one with --tokenizer to carry the weights over to it")
            model = transfer_vocabulary(model, ckpt.tokenizer, tokenizer)
        progress = continued_progress(config, ckpt.meta, out)
        if config.widen_ff and config.widen_ff < ckpt.config.d_ff:
            raise SystemExit(f"error: --widen-ff {config.widen_ff} would narrow {config.init_from}'s FFNs "
                             f"({ckpt.config.d_ff} hidden units); give a larger width")
        widened = bool(config.widen_ff) and config.widen_ff != ckpt.config.d_ff
        if widened:
            model = widen_feed_forward(model, config.widen_ff, seed=config.seed)
        if config.dropout is not None and config.dropout != ckpt.config.dropout:  # dropout holds no weights: same ones
            state = model.state_dict()
            model = Transformer(replace(model.config, dropout=config.dropout))
            model.load_state_dict(state)
        # Where this run took over and the recipes before it (chained), so the model card can name every part.
        continued_from = {"step": progress.step, "epoch": progress.epoch,
                          **{k: ckpt.meta.get(k) for k in RECIPE_KEYS},
                          **({"vocabulary_after": "carried over to a new tokenizer"} if moved else {}),
                          **({"feed_forward_after": [ckpt.config.d_ff, config.widen_ff]} if widened else {}),
                          **({"earlier": ckpt.meta["continued_from"]} if ckpt.meta.get("continued_from") else {})}
        return model.train(), progress, continued_from, False
    shape = ModelConfig(vocab_size=tokenizer.vocab_size, d_model=config.d_model, n_heads=config.n_heads,
                        n_encoder_layers=config.layers, n_decoder_layers=config.layers, d_ff=config.d_ff,
                        dropout=0.1 if config.dropout is None else config.dropout, max_len=config.max_len)
    return Transformer(shape).train(), Progress(), None, False


def copy_alignment(config: TrainConfig, shape: ModelConfig, tokenizer: Tokenizer) -> CopyAlignment | None:
    """--align-copies' head, checked against the model it supervises (a head it lacks is refused in one line)."""
    if not config.align_copies:
        return None
    layer, head = (int(n) for n in (config.align_head or f"{shape.n_decoder_layers}:1").split(":"))
    if layer > shape.n_decoder_layers or head > shape.n_heads:
        raise SystemExit(f"error: --align-head {layer}:{head}: the model has {shape.n_decoder_layers} decoder "
                         f"layers of {shape.n_heads} heads")
    pieces = [tokenizer.id_to_piece(i) for i in range(tokenizer.vocab_size)]
    return CopyAlignment.for_vocabulary(pieces, config.align_copies, layer - 1, head - 1)


def build_or_resume(config: TrainConfig, ranks: Ranks) -> Run:
    """Everything a run needs, resumed from disk where a previous run of the same --out left off. Every rank
    builds the same thing; rank 0 alone writes (the tokenizer, the logs)."""
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    # each epoch its own pairs (--copy-fresh, --bpe-dropout), drawn from the corpus as read
    corpus = load_corpus(config.corpus) if config.per_epoch_draw and config.task != "reverse" else None
    frame = task_corpus(config, corpus, epoch=0)
    if ranks.main:
        save_recipe(config, out)
        get_tokenizer(config, out, frame)
    distributed.barrier(ranks)
    tokenizer = Tokenizer.load(out / "tokenizer.model")
    split = {name: frame[frame["split"] == name] for name in ("train", "valid")}
    encoded = ("valid",) if corpus is not None else ("train", "valid")  # drawn per epoch: the epoch's, below
    pairs = {name: encode_pairs(tokenizer, split[name]["en"].tolist(), split[name]["de"].tolist(), config.train_max_len)
             for name in encoded}
    model, progress, continued_from, resume = _model_and_progress(config, out, tokenizer)
    align = copy_alignment(config, model.config, tokenizer)
    model.to(ranks.device)
    forward = distributed.wrap(model, ranks)  # DDP makes every rank start from rank 0's weights
    optimizer = torch.optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9)
    if resume:
        load_optimizer(optimizer, out / "last")
    torch.manual_seed(config.seed + progress.step + 1000 * ranks.rank)  # dropout differs per rank and per resume
    if ranks.main:
        truncate_log(out / "log.csv", "step", progress.step)  # rows after the resumed checkpoint are redone
        truncate_log(out / "epochs.csv", "epoch", progress.epoch)
    run = Run(config=config, out=out, tokenizer=tokenizer, model=model, forward=forward, ranks=ranks,
              optimizer=optimizer, progress=progress, train_pairs=pairs.get("train", []), valid_pairs=pairs["valid"],
              valid_bleu=split["valid"].head(config.valid_bleu), continued_from=continued_from, corpus=corpus,
              align=align, started=time.perf_counter() - progress.elapsed_s)
    run.epoch_pairs()  # drawn per epoch: the draw of the epoch it starts or resumes in
    return run


def train_step(run: Run, batch: Batch, lr: float) -> tuple[float, int]:
    """One optimizer step on this rank's batch: the loss is the mean over the target tokens of the whole global
    batch (every rank's rows), so N processes step exactly as one process on all N batches would. Returns this
    rank's mean cross-entropy (without --align-copies' loss) and the global batch's token count."""
    for group in run.optimizer.param_groups:
        group["lr"] = lr
    loss_sum, align_sum = loss_sums(run.forward, batch, run.config.label_smoothing, run.config.bf16, run.ranks.device,
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
    config, progress, model, world = run.config, run.progress, run.model, run.ranks.world
    cfg = model.config
    pairs = run.epoch_pairs()
    batches = token_batches(pairs, config.max_tokens, seed=config.seed * 1000 + progress.epoch)
    loss, tokens_window, time_window = math.nan, 0, time.perf_counter()
    for first in range(progress.batch, len(batches) - world + 1, world):
        batch = collate([pairs[i] for i in batches[first + run.ranks.rank]], cfg.pad_id, cfg.bos_id)
        epochs_left = config.epochs - progress.epoch - first / len(batches)  # counts the part of this epoch still to do
        lr = noam_lr(progress.step + 1, cfg.d_model, config.warmup, config.lr_factor) * cooldown(epochs_left,
                                                                                             config.cooldown_epochs)
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
                left = ((config.epochs - progress.epoch) * len(batches) - progress.batch) // world  # steps to go
                eta = (time.perf_counter() - time_window) / 20 * left
                print(f"epoch {progress.epoch + 1}/{config.epochs} batch {progress.batch}/{len(batches)} "
                      f"step {progress.step} loss {loss:.3f} lr {lr:.2e} {tps:.0f} tok/s ETA {eta / 60:.0f} min",
                      flush=True)
                tokens_window, time_window = 0, time.perf_counter()
        stop = bool(config.max_steps) and progress.step >= config.max_steps
        if stop or progress.step % config.save_every == 0:
            run.save_last()  # rank 0 writes, every rank waits for it
        if stop:
            return loss, True
    return loss, False


def end_of_epoch(run: Run, train_loss: float) -> None:
    """Validate, keep the best and the last epochs' weights, and log the epoch (rank 0; the others wait)."""
    config, progress, model = run.config, run.progress, run.model
    progress.epoch, progress.batch = progress.epoch + 1, 0
    if not run.ranks.main:
        run.save_last()
        return
    valid_loss = validation_loss(model, run.valid_pairs, config.max_tokens)
    model.eval()
    hyps = translate_many(model, run.tokenizer, run.valid_bleu["en"].tolist(), beam_size=1)
    model.train()
    scores = corpus_scores(hyps, run.valid_bleu["de"].tolist())
    # A model stuck reading only the average of its source shows it here long before BLEU moves.
    spread = attention_entropy(model, run.valid_pairs[: config.valid_bleu], config.max_tokens)
    if valid_loss < progress.best_valid_loss:
        progress.best_valid_loss, progress.best_epoch = valid_loss, progress.epoch
        shutil.rmtree(run.out / "best", ignore_errors=True)
        save_checkpoint(model, run.tokenizer, run.out / "best",
                        meta={**run.meta(), "valid_loss": round(valid_loss, 4), "valid_bleu": scores["bleu"]},
                        max_shard_bytes=SHARD_BYTES)
    run.save_last()
    keep_epoch(model, run.tokenizer, run.out / "epochs", progress.epoch, config.keep_epochs, run.meta())
    if progress.epoch in config.snapshot_epochs:
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
    config = parse_args(argv, DESCRIPTION)
    if config.threads:
        torch.set_num_threads(config.threads)
    torch.manual_seed(config.seed)
    device = resolve_device(config.device)
    if config.bf16 and device.type == "cpu" and not cpu_has_native_bf16():
        # Measured on an AVX2-only CPU: 45 tokens/s with bf16 autocast against 780 in fp32.
        raise SystemExit("error: --bf16 on this CPU would be emulated (no native bf16 support) and many times "
                         "slower than float32; drop --bf16")
    ranks = distributed.start(device)
    try:
        return _train(config, ranks)
    finally:
        distributed.stop(ranks)


def out_of_time(deadline: float, epoch_seconds: float, ranks: Ranks) -> bool:
    """Whether an epoch as long as the last one would end past the deadline; every rank takes the same decision
    (one rank stopping alone would leave the others waiting in their next all-reduce)."""
    late = time.perf_counter() + epoch_seconds > deadline
    return distributed.total(int(late), ranks) > 0


def _train(config: TrainConfig, ranks: Ranks) -> int:
    run = build_or_resume(config, ranks)
    resume = f"resuming at step {run.progress.step}" if run.progress.step else "starting"
    if ranks.main:
        print(f"{config.task}: {len(run.train_pairs)} train / {len(run.valid_pairs)} valid pairs, "
              f"{len(token_batches(run.train_pairs, config.max_tokens))} batches/epoch, "
              f"{count_parameters(run.model) / 1e6:.2f}M parameters, {ranks.device} x {ranks.world} process(es), "
              f"threads {torch.get_num_threads()}, bf16 {config.bf16}; {resume}", flush=True)
    deadline = time.perf_counter() + config.stop_minutes * 60 if config.stop_minutes else math.inf
    while run.progress.epoch < config.epochs:
        started = time.perf_counter()
        loss, stopped = train_epoch(run)
        if stopped:
            if ranks.main:
                print(f"stopped at --max-steps {config.max_steps}", flush=True)
            return 0
        end_of_epoch(run, loss)
        if out_of_time(deadline, time.perf_counter() - started, ranks):
            if ranks.main:
                print(f"stopped: another epoch would end after --stop-minutes {config.stop_minutes:g}", flush=True)
            return 0
    if ranks.main:
        print(f"done: best epoch {run.progress.best_epoch}, valid loss {run.progress.best_valid_loss:.3f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
