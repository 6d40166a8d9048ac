"""Calibrate the doubt note (model.serving.doubt) on held-out text: how often it fires on bad and on good output.

    python benchmarks/doubt_note.py [--limit 400] [--records FILE] [--from-records FILE]

``--limit`` sentences spread evenly over the test split of data/en-de.tsv.gz (evenly spaced rows, so each of its
sources is in; split as training.evaluate reads it), each
translated greedily by pretrained/en-de exactly as the CLI does (model.serving.inference.translate, the CLI's
settings: beam 1, max-len 64); per sentence its chrF (sacrebleu.sentence_chrf against the reference) and the
measures of model.serving.doubt (mean log-prob per piece, lowest piece probability). Printed: for several floors of
the mean log-prob, the share of sentences with chrF < 30 and with chrF > 60 that would get the note, and the same
for the floor in use. ``--records`` keeps the per-sentence numbers as JSON lines; ``--from-records`` re-reports from
such a file without translating again.
"""
from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse
import json
import math
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import sacrebleu
import torch

from model.checkpoints.files import load_checkpoint
from model.network.config import DecodeConfig
from model.serving.doubt import MEAN_LOG_PROB_FLOOR, doubt_of
from model.serving.inference import decode_rules, translate
from training.data import load_corpus
from training.evaluate import split_rows

BAD, GOOD = 30.0, 60.0  # chrF below BAD is a bad translation, above GOOD a good one
FLOORS = (-0.3, -0.4, -0.5, -0.6, -0.7, -0.8, -0.9, -1.0, -1.2)


def measure(limit: int, records: Path | None) -> list[dict]:
    ckpt = load_checkpoint(ROOT / "pretrained" / "en-de", "cpu")
    rows = split_rows(load_corpus(str(ROOT / "data" / "en-de.tsv.gz")), "test")
    limit = min(limit or len(rows), len(rows))  # 0: the whole split
    picked = sorted({round(i * (len(rows) - 1) / max(limit - 1, 1)) for i in range(limit)})
    rows = rows.iloc[picked]  # spread evenly: every source of the split, not only the first one
    print(f"sources: {rows['source'].value_counts().to_dict()}", flush=True)
    config = DecodeConfig(beam_size=1, max_len=64, **decode_rules(ckpt.tokenizer, ckpt.meta))  # the CLI's defaults
    out, start = [], time.perf_counter()
    sink = records.open("w") if records else None
    for i, (en, de) in enumerate(zip(rows["en"], rows["de"], strict=True)):
        tr = translate(ckpt.model, ckpt.tokenizer, en, config)
        doubt = doubt_of(tr.result, tr.target_pieces)
        rec = {"en": en, "de": de, "hyp": tr.text, "chrf": round(sacrebleu.sentence_chrf(tr.text, [de]).score, 2),
               "mean_log_prob": round(doubt.mean_log_prob, 4), "lowest_prob": round(doubt.lowest[1], 4),
               "pieces": len(doubt.log_probs)}
        out.append(rec)
        if sink:
            sink.write(json.dumps(rec, ensure_ascii=False) + "\n")
            sink.flush()
        if (i + 1) % 25 == 0:
            print(f"{i + 1}/{len(rows)} sentences, {time.perf_counter() - start:.0f} s", flush=True)
    if sink:
        sink.close()
    return out


def fire_rate(recs: list[dict], floor: float, low: float = -math.inf, high: float = math.inf) -> tuple[int, int]:
    """(fired, of) among the records whose chrF lies in (low, high)."""
    group = [r for r in recs if low < r["chrf"] < high]
    return sum(r["mean_log_prob"] < floor for r in group), len(group)


def report(recs: list[dict]) -> str:
    lines = [f"{len(recs)} test sentences; chrF < {BAD:g}: {fire_rate(recs, 0, high=BAD)[1]}, "
             f"chrF > {GOOD:g}: {fire_rate(recs, 0, low=GOOD)[1]}",
             "| floor (mean log-prob per piece) | fires on chrF < 30 | fires on chrF > 60 | fires overall |",
             "|---|---|---|---|"]
    for floor in sorted({*FLOORS, MEAN_LOG_PROB_FLOOR}, reverse=True):
        cells = []
        for low, high in ((-math.inf, BAD), (GOOD, math.inf), (-math.inf, math.inf)):
            fired, of = fire_rate(recs, floor, low, high)
            cells.append(f"{fired}/{of} ({fired / max(of, 1):.0%})")
        mark = " (in use)" if floor == MEAN_LOG_PROB_FLOOR else ""
        lines.append(f"| {floor:g}{mark} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=400, help="sentences, spread over the split (0 = all)")
    parser.add_argument("--records", type=Path, help="write per-sentence numbers here (JSON lines)")
    parser.add_argument("--from-records", type=Path, help="report from this file instead of translating")
    args = parser.parse_args()
    if args.from_records:
        recs = [json.loads(line) for line in args.from_records.read_text().splitlines() if line.strip()]
    else:
        print(f"machine: {platform.machine()} {platform.processor() or ''}, {os.cpu_count()} cores, torch "
              f"{torch.__version__}, {torch.get_num_threads()} threads, OMP_WAIT_POLICY="
              f"{os.environ.get('OMP_WAIT_POLICY')}", flush=True)
        recs = measure(args.limit, args.records)
    print(report(recs))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
