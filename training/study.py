"""The recipe study (Sennrich & Zhang, 2019, "Revisiting Low-Resource NMT"): runs of the en-de recipe with one
setting changed, gathered from their per-epoch logs into one file that the model card shows.

    python -m training.study --out pretrained/en-de/study.csv \\
        --run "baseline: the shipped recipe|scratch|pretrained/en-de" --run "dropout 0.3|scratch|runs/study-d03" ...

Each --run is "setting|start|run directory[|first epoch]": the setting in words, where the run started ("scratch",
or the checkpoint it continued), a directory with the epochs.csv that python -m training.train writes, and for a
continued run the first epoch trained with this setting (its epochs.csv also holds the epochs it continued from).
Only the validation split is ever read: the test split stays for the shipped model's card. With --keep the rows
already in --out stay for every setting not given again (a study grows over runs whose directories are gone).

A run on a larger corpus logged its loss on that corpus's valid split; --rescore recomputes the loss of every epoch
whose weights the run kept (<run>/epochs/N) on --valid-corpus's valid split, so every row compares on the same
sentences (BLEU and chrF are on the first 400 valid sentences, the same in a corpus that only adds sources); with
--update-epochs those losses also replace the ones in each run's epochs.csv, the curve training.export ships.
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import pandas as pd
import torch

from model.checkpoints.files import load_checkpoint

from .average import validation_losses

STUDY_FILE = "study.csv"  # beside a shipped model: the card's "Recipe study" section reads it
EPOCH_COLUMNS = ["epoch", "step", "valid_loss", "valid_bleu", "valid_chrf"]
COMPARE_EPOCH = 8  # runs from scratch are compared at this epoch too: every one of them reached it


def collect(runs: Sequence[tuple[str, str, Path, int]]) -> pd.DataFrame:
    """One row per (setting, epoch) of every run from its first epoch on: setting, start, epoch, step, valid loss /
    BLEU / chrF."""
    frames = []
    for setting, start, directory, first in runs:
        epochs = pd.read_csv(Path(directory) / "epochs.csv")
        missing = sorted(set(EPOCH_COLUMNS) - set(epochs.columns))
        if missing:
            raise ValueError(f"{directory}/epochs.csv has no {', '.join(missing)}")
        frames.append(epochs.loc[epochs["epoch"] >= first, EPOCH_COLUMNS].assign(setting=setting, start=start))
    return pd.concat(frames, ignore_index=True)[["setting", "start", *EPOCH_COLUMNS]]


def rescored(study: pd.DataFrame, runs: Sequence[tuple[str, str, Path, int]], corpus: Path) -> pd.DataFrame:
    """``study`` with the validation loss of every epoch whose weights a run kept recomputed on ``corpus``'s
    valid split (one pass over each run's kept epochs)."""
    study = study.copy()
    for setting, _, directory, _ in runs:
        kept = {int(d.name): d for d in (Path(directory) / "epochs").glob("*") if d.name.isdigit()}
        epochs = sorted(e for e in kept if ((study["setting"] == setting) & (study["epoch"] == e)).any())
        if not epochs:
            continue
        losses = validation_losses([load_checkpoint(kept[e]) for e in epochs], corpus)
        for epoch, loss in zip(epochs, losses, strict=True):
            study.loc[(study["setting"] == setting) & (study["epoch"] == epoch), "valid_loss"] = loss
    return study


def kept_rows(path: Path, study: pd.DataFrame) -> pd.DataFrame:
    """``study`` after the rows of an earlier study file whose settings it does not give again."""
    if not path.is_file():
        return study
    earlier = pd.read_csv(path)
    return pd.concat([earlier[~earlier["setting"].isin(study["setting"])], study], ignore_index=True)


def update_epochs(study: pd.DataFrame, runs: Sequence[tuple[str, str, Path, int]]) -> None:
    """Write the study's (rescored) validation losses into each run's epochs.csv, epoch by epoch."""
    for setting, _, directory, _ in runs:
        path = Path(directory) / "epochs.csv"
        epochs = pd.read_csv(path)
        mine = study[study["setting"] == setting].set_index("epoch")["valid_loss"]
        at = epochs["epoch"].isin(mine.index)
        epochs.loc[at, "valid_loss"] = epochs.loc[at, "epoch"].map(mine)
        epochs.to_csv(path, index=False)


def summary(study: pd.DataFrame) -> pd.DataFrame:
    """Per setting, in the file's order: its epochs, its last epoch's scores, its best validation loss and, for runs
    from scratch, the scores at COMPARE_EPOCH (equal training for every setting)."""
    rows = []
    for setting, run in study.groupby("setting", sort=False):
        last, best = run.iloc[-1], run.iloc[int(run["valid_loss"].argmin())]
        at = run[run["epoch"] == COMPARE_EPOCH]
        compare = at.iloc[0] if run["start"].iloc[0] == "scratch" and len(at) else None
        rows.append({
            "setting": setting, "start": run["start"].iloc[0],
            "epochs": f"{int(run['epoch'].iloc[0])}-{int(last['epoch'])}", "steps": int(last["step"]),
            "last valid loss": last["valid_loss"], "last BLEU": last["valid_bleu"], "last chrF": last["valid_chrf"],
            "best valid loss (epoch)": f"{best['valid_loss']:.3f} ({int(best['epoch'])})",
            f"epoch {COMPARE_EPOCH}: loss / BLEU / chrF": "" if compare is None else
            f"{compare['valid_loss']:.3f} / {compare['valid_bleu']:.2f} / {compare['valid_chrf']:.1f}"})
    return pd.DataFrame(rows)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.study", description=__doc__.splitlines()[0])
    parser.add_argument("--run", action="append", required=True, help='"setting|start|run directory[|first epoch]"')
    parser.add_argument("--out", required=True, help=f"the CSV to write (pretrained/en-de/{STUDY_FILE})")
    parser.add_argument("--rescore", action="store_true", help="recompute kept epochs' validation loss on "
                        "--valid-corpus (runs trained on a larger corpus logged their own valid split's)")
    parser.add_argument("--valid-corpus", type=Path, default=Path("data/en-de.tsv.gz"))
    parser.add_argument("--update-epochs", action="store_true", help="with --rescore: write the rescored losses "
                        "into each run's epochs.csv too")
    parser.add_argument("--keep", action="store_true", help="keep --out's rows of the settings not given here")
    args = parser.parse_args(argv)
    if args.update_epochs and not args.rescore:
        parser.error("--update-epochs writes rescored losses: give --rescore too")
    runs = []
    for spec in args.run:
        parts = [part.strip() for part in spec.split("|")]
        if len(parts) not in (3, 4) or (len(parts) == 4 and not parts[3].isdigit()):
            parser.error(f'--run takes "setting|start|run directory[|first epoch]", got {spec!r}')
        runs.append((parts[0], parts[1], Path(parts[2]), int(parts[3]) if len(parts) == 4 else 1))
    study = collect(runs)
    if args.rescore:
        with torch.no_grad():  # not set globally: main also runs inside other programs (and tests)
            study = rescored(study, runs, args.valid_corpus)
        if args.update_epochs:
            update_epochs(study, runs)
    if args.keep:
        study = kept_rows(Path(args.out), study)
    study.to_csv(args.out, index=False)
    print(summary(study).to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
