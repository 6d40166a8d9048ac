"""From candidate pairs to corpus rows: one German per English sentence, a fixed split by a stable
hash, the rows' order, and the split sizes.

Dedup and the split belong together: a unique English side is what makes "no sentence in two
splits" hold by construction, and both key on `english_key`.
"""

from __future__ import annotations

import collections
import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from data.cleaning import english_key
from data.sources import ALL_SOURCES, SOURCE_TIERS, SOURCES

SPLITS = ("train", "valid", "test")


# Split policy: buckets 0..9999 of a hash of the English sentence. Fixed thresholds (not ranks),
# so adding or removing other sentences never moves a sentence from one split to another.
SPLIT_SALT = "attention-explorer/en-de/v1"
SPLIT_BUCKETS = 10_000
TEST_BUCKETS = 200    # 2.0 %
VALID_BUCKETS = 170   # 1.7 %  (>= 1,000 pairs on the ~65k corpus; checked in `check_split_sizes`)
MIN_SPLIT_PAIRS = 1_000


@dataclass(frozen=True, order=True)
class Row:
    source: str
    split: str
    en: str
    de: str


def deduplicate(pairs: Iterable[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    """(source, en, de) triples -> at most one pair per English sentence (by `english_key`).

    Why one German per English: the same input with two targets is label noise (the model learns
    to hedge between them), a test sentence with an arbitrary one of several references is a
    noisy score, and a unique English side makes "no sentence in two splits" hold by
    construction. The German kept is the most frequent one for that English across all sources
    (the consensus translation), then the earlier source in SOURCES (Ding is edited as a
    dictionary), then the shorter, then alphabetical: deterministic whatever the input order.

    Sources come in tiers (SOURCE_TIERS): the four default sources, then the --extra ones, then
    the --more ones. An English sentence found in an earlier tier is decided by that tier alone,
    votes included, so the extra sources can only add sentences, never change or outvote a
    default row: the plus corpus is the default corpus plus new rows, and a comparison of the two
    trains on the same rows and tests on the same test set. The same holds one tier up (plus2 =
    plus + new rows). Within one tier the rules above apply unchanged.
    """
    source_rank = {name: i for i, name in enumerate(ALL_SOURCES)}
    tier_of = {name: i for i, group in enumerate(SOURCE_TIERS) for name in group}
    counts = collections.Counter((src, en, de) for src, en, de in pairs)
    pair_counts = collections.Counter()
    for (src, en, de), n in counts.items():
        pair_counts[(tier_of.get(src, len(SOURCE_TIERS)), english_key(en), de)] += n
    best: dict[str, tuple] = {}
    for src, en, de in counts:
        key = english_key(en)
        tier = tier_of.get(src, len(SOURCE_TIERS))
        rank = (tier, -pair_counts[(tier, key, de)], source_rank.get(src, len(ALL_SOURCES)), len(de), de, en, src)
        if key and (key not in best or rank < best[key][0]):
            best[key] = (rank, (src, en, de))
    return sorted(item for _, item in best.values())


def split_bucket(en: str) -> int:
    """Stable bucket 0..9999 of an English sentence: SHA-256 of its `english_key` (salted).

    Python's hash() is randomised per process; SHA-256 is the same on every machine and run."""
    digest = hashlib.sha256(f"{SPLIT_SALT}:{english_key(en)}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % SPLIT_BUCKETS


def assign_split(en: str) -> str:
    """"train", "valid" or "test", from the English sentence alone.

    Fixed thresholds on a stable hash: the same sentence gets the same split on every rebuild,
    regardless of what else is in the corpus, so a model trained on one build is never tested on
    its own training sentences from another. Every source gets the same 2.0% / 1.7% share in
    expectation, i.e. the split is stratified by source (checked per source in the report)."""
    bucket = split_bucket(en)
    if bucket < TEST_BUCKETS:
        return "test"
    if bucket < TEST_BUCKETS + VALID_BUCKETS:
        return "valid"
    return "train"


def make_rows(pairs: Iterable[tuple[str, str, str]]) -> list[Row]:
    """Deduplicated, split and sorted rows: by split (train, valid, test), source, en, de."""
    rows = [Row(src, assign_split(en), en, de) for src, en, de in deduplicate(pairs)]
    split_rank = {s: i for i, s in enumerate(SPLITS)}
    source_rank = {s: i for i, s in enumerate(ALL_SOURCES)}
    return sorted(rows, key=lambda r: (split_rank[r.split], source_rank[r.source], r.en, r.de))


def count_rows(rows: Iterable[Row], sources: Iterable[str] = SOURCES) -> dict[str, collections.Counter]:
    """{source: Counter(split -> n)} for each of sources, plus "all"."""
    table: dict[str, collections.Counter] = {s: collections.Counter() for s in sources}
    table["all"] = collections.Counter()
    for r in rows:
        table[r.source][r.split] += 1
        table["all"][r.split] += 1
    return table


def check_split_sizes(counts: Mapping[str, collections.Counter]) -> list[str]:
    """Problems with the split sizes (empty list = fine): valid and test need >= 1,000 pairs."""
    problems = []
    for split in ("valid", "test"):
        n = counts["all"][split]
        if n < MIN_SPLIT_PAIRS:
            problems.append(f"{split} has {n} pairs (< {MIN_SPLIT_PAIRS}); raise its buckets")
    return problems


def format_counts(counts: Mapping[str, collections.Counter]) -> str:
    """A small text table of pairs per source and split."""
    lines = [f"{'source':<13}{'train':>8}{'valid':>8}{'test':>8}{'total':>8}"]
    for name in counts:   # the sources in order, then "all" (as `count_rows` builds it)
        c = counts[name]
        lines.append(
            f"{name:<13}{c['train']:>8}{c['valid']:>8}{c['test']:>8}{sum(c.values()):>8}"
        )
    return "\n".join(lines)
