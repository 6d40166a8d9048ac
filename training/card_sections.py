"""The model card's sections drawn from evaluation reports and the files beside a model, as Markdown lines: the
score tables, diagnostics, the everyday and names-and-numbers sets, the length-penalty sweep, the recipe study and the
snapshots. Each takes measured data (training.card measures it) and returns lines; none reads a file or runs a model.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pandas as pd

from model.checkpoints.files import SNAPSHOTS
from model.checkpoints.quality import decoding_settings
from model.network.config import DecodeConfig

from .augment import NAMES as AUGMENT_NAMES


def md_row(cells: Sequence[object]) -> str:
    """One row of a Markdown table."""
    return "| " + " | ".join(str(c) for c in cells) + " |"


def score_table(report: dict, group: str = "per_source", order: Sequence[str] = ()) -> list[str]:
    """One row per decoding setting: overall BLEU and chrF (in the per-source table only), then BLEU / chrF (n)
    for each key of ``group`` (in ``order`` where given, else all of them sorted)."""
    settings = decoding_settings(report)
    found = report[settings[0]].get(group, {}) if settings else {}
    keys = [k for k in order if k in found] or sorted(found)
    overall = group == "per_source"
    lines = [md_row(["decoding", *(["BLEU", "chrF"] if overall else []), *(f"{k} BLEU / chrF" for k in keys)]),
             md_row(["---"] * (1 + 2 * overall + len(keys)))]
    for key in settings:
        r = report[key]
        lines.append(md_row([key, *([r["overall"]["bleu"], r["overall"]["chrf"]] if overall else []),
                             *(f"{r[group][k]['bleu']} / {r[group][k]['chrf']} (n={r[group][k]['n']})"
                               for k in keys)]))
    return lines


def diagnostics_section(report: dict) -> list[str]:
    """What the evaluation measured about source use and fit (python -m training.evaluate writes it)."""
    d = report.get("diagnostics")
    if not d:
        return []
    split = report.get("split", "test")
    return [
        "## Diagnostics",
        f"Per-token loss (nats, no label smoothing) on {d['n']} {split} pairs:",
        "",
        "| references scored with | loss |",
        "|---|---|",
        f"| their own source sentences | {d['nll']} |",
        f"| another sentence's source (rows rotated by one) | {d['nll_other_source']} |",
        f"| (for comparison) {d['n']} training pairs, their own sources | {d['nll_train_sample']} |",
        "",
        f"- The source is worth {d['nll_other_source'] - d['nll']:.2f} nats per target token: how much the "
        "decoder's predictions rest on what cross-attention reads from the encoder.",
        f"- Training pairs score {d['nll'] - d['nll_train_sample']:.2f} nats better than held-out ones: "
        + ("with a gap this small the model under-fits: it has not learned even its training data, so it needs "
           "more training, not more regularisation." if d["nll"] - d["nll_train_sample"] < 0.5 else
           "this gap is what more data or more regularisation would narrow."),
        *_attention_spread(d.get("attention_entropy")),
        "",
    ]


def _attention_spread(entropy: dict | None) -> list[str]:
    """The attention_entropy diagnostic in words (absent from reports written before it existed)."""
    if not entropy:
        return []

    def fmt(values: list[float]) -> str:
        return ", ".join(f"{v:.2f}" for v in values)

    lines = [f"- Attention spread, the mean entropy of a row as a fraction of a uniform row's (1 = evenly over "
             f"every source token, 0 = all on one), layer by layer: cross-attention {fmt(entropy['cross'])}; "
             f"encoder self-attention {fmt(entropy['encoder_self'])}."]
    if min(entropy["cross"]) > 0.7:
        lines.append("  Cross-attention this flat means the decoder reads little more than an average of the "
                     "source, not particular words: the model has not learned to align.")
    elif min(entropy["cross"]) > 0.4:
        lines.append("  Cross-attention is still broad: the decoder has begun to read particular source words "
                     "but spreads much of its weight (the reversal model, which aligns exactly, reads under 0.2 in its "
                     "last layer).")
    if entropy["encoder_self"][0] < 0.1:
        lines.append("  The first encoder layer's heads each put nearly all their weight on one token, so the "
                     "encoder's positions come out alike, which leaves cross-attention little to tell apart.")
    return lines


def snapshots_section(snapshots: dict[str, dict[str, Any]]) -> list[str]:
    """The card's list of the snapshots shipped beside the model (earlier stages of training for the Heads page's
    "Watch attention learn"): ``snapshots`` maps each one's directory name to its meta (training.card.snapshot_metas),
    in training order; nothing when there are none."""
    if not snapshots:
        return []
    rows = [f"| `{SNAPSHOTS}/{name}` | {meta.get('epochs')} | {meta.get('steps')} | {meta.get('valid_loss')} | "
            f"{meta.get('snapshot', '')} |" for name, meta in snapshots.items()]
    return ["## Snapshots of earlier training", "",
            "Earlier stages of training, shipped in float16 beside the model so the Heads page can show the same "
            "sentence's attention as it formed (\"Watch attention learn\"). Not for translating.", "",
            "| directory | epoch | step | valid loss | what it is |", "|---|---|---|---|---|", *rows, ""]


def new_sources_section(report: dict, extra: dict | None) -> list[str]:
    """Test scores of the sources a model's corpus added after the test split above was fixed: ``extra`` is an
    evaluation on the larger corpus's test split (python -m training.evaluate --corpus ...), and only the sources
    missing from ``report`` are shown, so the main table stays comparable with earlier models."""
    settings, extra_settings = decoding_settings(report), decoding_settings(extra or {})
    if extra is None or not settings or not extra_settings:
        return []
    extra_first = extra_settings[0]
    new = sorted(set(extra[extra_first]["per_source"]) - set(report[settings[0]]["per_source"]))
    if not new:
        return []
    scores = {k: extra[k]["per_source"] for k in extra_settings}
    return ["", "The sources added to the corpus later have test rows of their own (split by the same hash of the "
            "English, so the test split above is unchanged); scored separately, one row per source:", "",
            md_row(["source", "test pairs", *(f"{k} BLEU / chrF" for k in extra_settings)]),
            md_row(["---"] * (2 + len(extra_settings))),
            *[md_row([name, scores[extra_first][name]["n"],
                      *(f"{scores[k][name]['bleu']} / {scores[k][name]['chrf']}" for k in extra_settings)])
              for name in new]]


def study_section(table: pd.DataFrame | None) -> list[str]:
    """The card's recipe study: ``table`` is training.study.summary of the study.csv beside the model, one row per
    setting, validation split only (training.card.study_table reads it); nothing when there is no study."""
    if table is None:
        return []
    return ["## Recipe study (validation split only)", "",
            "Runs of this recipe with one setting changed (Sennrich & Zhang, 2019, \"Revisiting Low-Resource Neural "
            "Machine Translation\"), ranked on the validation split; per-epoch numbers in `study.csv`. BLEU and "
            "chrF are greedy on 400 validation sentences. A loss per piece is comparable only between runs with the "
            "same vocabulary: the 4,000-piece run cuts text into more, easier pieces, so chrF ranks it.", "",
            md_row(list(table.columns)), md_row(["---"] * len(table.columns)),
            *[md_row(row) for row in table.itertuples(index=False)], ""]


def everyday_section(everyday: dict | None) -> list[str]:
    """Scores and every translation of the everyday sentences (training.evaluate.everyday_report)."""
    if not everyday:
        return []
    keep = "beam4_keep" in everyday
    rows = zip(everyday["en"], everyday["de"], everyday["greedy"]["translations"], everyday["beam4"]["translations"],
               *([everyday["beam4_keep"]["translations"]] if keep else []), strict=True)
    return [f"## Everyday sentences ({len(everyday['en'])} typed, in no corpus)", "",
            "Short sentences like the ones people type (`data/everyday.tsv`, written for this check with one "
            "reference each, never trained or tuned on). They are easier than the test split, so the scores are "
            "higher; they say how the model does on what the Translate page is used for.", "",
            "| decoding | BLEU | chrF |", "|---|---|---|",
            *[md_row([name, everyday[key]["overall"]["bleu"], everyday[key]["overall"]["chrf"]])
              for name, key in decodings(everyday)], "",
            "| English | reference | greedy | beam 4 |" + (f" {KEEP_NAME} |" if keep else ""),
            "|---|---|---|---|" + ("---|" if keep else ""), *[md_row(row) for row in rows], ""]


KEEP_NAME = "beam 4 keeping names and numbers"


def decodings(report: dict) -> list[tuple[str, str]]:
    """(name, report key) of the decodings a report holds: greedy, beam 4, and beam 4 keeping names and numbers
    (model.decoding.constrained_beam) when the checkpoint has a copy lexicon."""
    return [("greedy", "greedy"), ("beam 4", "beam4"), *([(KEEP_NAME, "beam4_keep")] if "beam4_keep" in report else [])]


NAMES_NUMBERS_TARGET = 97.0  # % of the names and numbers carried over verbatim (issue 31)


STRING_KINDS = ("numbers and codes", "names on the augmentation's list", "other names")


def string_kind(string: str) -> str:
    """Which kind a string to carry over is: with a digit; a name whose every word training.augment substitutes
    into training pairs (the model saw it copied); or another name, the real test of copying an unseen one."""
    if any(c.isdigit() for c in string):
        return STRING_KINDS[0]
    return STRING_KINDS[1] if all(word in AUGMENT_NAMES for word in string.split()) else STRING_KINDS[2]


def carried_by_kind(report: dict, key: str) -> dict[str, tuple[int, int]]:
    """(carried, total) per string kind of one decoding's names-and-numbers report."""
    return _carried_by(report, key, STRING_KINDS, lambda row, string: string_kind(string))


PLACES = ("opening the sentence", "inside the sentence")


def carried_by_place(report: dict, key: str) -> dict[str, tuple[int, int]]:
    """(carried, total) for the strings a sentence opens with and for the others: at the first step the decoder
    most wants a German opening ("Die", "Ein"), and a name standing there is the one most often lost."""
    return _carried_by(report, key, PLACES, lambda row, string: PLACES[not report["en"][row].startswith(string)])


def _carried_by(report: dict, key: str, groups: tuple[str, ...],
                group_of: Callable[[int, str], str]) -> dict[str, tuple[int, int]]:
    """(carried, total) per group, ``group_of(row, string)`` naming each string's group."""
    missed = {(row, s) for row, s in report[key]["carried"]["misses"]}
    counts = {group: [0, 0] for group in groups}
    for row, keep in enumerate(report["keep"]):
        for string in keep:
            count = counts[group_of(row, string)]
            count[0] += (row, string) not in missed
            count[1] += 1
    return {group: (ok, n) for group, (ok, n) in counts.items()}


def _carried_table(groups: tuple[str, ...], counts: dict[str, dict[str, tuple[int, int]]],
                   names: list[tuple[str, str]]) -> list[str]:
    """A markdown table of (carried, total) per group, one row per decoding (``names``: (name, key))."""
    return ["| decoding | " + " | ".join(groups) + " |", "|---|" + "---|" * len(groups),
            *[md_row([name, *[f"{ok}/{n} ({100 * ok / max(n, 1):.1f}%)" for ok, n in counts[key].values()]])
              for name, key in names], ""]


def names_numbers_section(report: dict | None) -> list[str]:
    """The share of names and numbers carried over (training.evaluate.names_numbers_report), by kind of string,
    with every miss."""
    if not report:
        return []
    names = decodings(report)
    shares = {key: report[key]["carried"] for _, key in names}
    kinds = {key: carried_by_kind(report, key) for _, key in names}
    places = {key: carried_by_place(report, key) for _, key in names}
    listed = sorted({w for keep in report["keep"] for s in keep if string_kind(s) != STRING_KINDS[0]
                     for w in s.split() if w in AUGMENT_NAMES})
    return [f"## Names and numbers ({len(report['en'])} sentences, {shares['greedy']['n']} strings to carry over)", "",
            "Years, amounts, counts, decimals, digit strings and names that stay the same in German "
            "(`data/names_numbers.tsv`, written before any model translated it, in no corpus). A string counts only "
            "if it stands in the translation verbatim and whole (\"Anna\" is not in \"Annatin\"). "
            f"Target: {NAMES_NUMBERS_TARGET:g}%.", "",
            "| decoding | carried over | BLEU | chrF |", "|---|---|---|---|",
            *[md_row([name, f"{shares[key]['share']}%",
                      report[key]["overall"]["bleu"], report[key]["overall"]["chrf"]])
              for name, key in names], "",
            *(["The last row is the model searched differently, not a different model: beam 4 that must keep the "
               "names and numbers of the English that German writes as they are (`model.decoding.copy_words` picks "
               "them from the English alone, by what the training corpus's translations do with each capitalised word; "
               "`model.decoding.constrained_beam` makes every finished output that writes them all rank first). "
               "Every piece is still scored by the model and every attention map is the model's own; a forced name the "
               "model finds unlikely can land in an odd place, and a word it cannot write at all is given up on. Two "
               "parts of the rule (neighbouring words kept as one phrase; a name that opens a sentence kept when "
               "another name follows it) were written while reading this set's misses, so its share here is an upper "
               "estimate; the held-out set below was written after the rule, and measures it. On text with fewer "
               "names it can cost a little: the test table above has its row (beam4_keep).", ""]
             if len(names) > 2 else []),
            "By kind of string. The copy augmentation (`training.augment`) substitutes names from a fixed list into "
            f"training pairs, and {len(listed)} of this set's name words are on it ({', '.join(listed[:8])}"
            f"{', ...' if len(listed) > 8 else ''}): the model has seen those copied. The last column, names with a "
            "word it never saw copied, is the honest test of copying a new name.", "",
            *_carried_table(STRING_KINDS, kinds, names),
            "By place in the sentence. At its first step the decoder most wants a German opening (\"Die\", \"Ein\"), "
            "so a name the sentence opens with is the hardest to carry over.", "",
            *_carried_table(PLACES, places, names),
            *_misses_table(report, names)]


def _misses_table(report: dict, names: list[tuple[str, str]]) -> list[str]:
    """Every string a decoding of a names-and-numbers report missed, with the translation that lost it."""
    misses = [(name, key, row, string) for name, key in names for row, string in report[key]["carried"]["misses"]]
    if not misses:
        return ["No string was missed.", ""]
    return ["Every miss:", "", "| decoding | missing | English | translation |", "|---|---|---|---|",
            *[md_row([name, string, report["en"][row], report[key]["translations"][row]])
              for name, key, row, string in misses], ""]


def held_out_section(report: dict | None) -> list[str]:
    """The names-and-numbers share on the set written after the keep rule (training.evaluate.NAMES_HELDOUT), which
    no part of the rule was shaped by: the keep mode's honest share, beside the plain decodings'."""
    if not report:
        return []
    names = decodings(report)
    shares = {key: report[key]["carried"] for _, key in names}
    return [f"### Held out from the keep rule ({len(report['en'])} sentences, {shares['greedy']['n']} strings)", "",
            "`data/names_numbers_heldout.tsv` was written after \"keep names and numbers\" was fixed, and committed "
            "before any model translated it (in no corpus, in neither other set). Nothing was changed after "
            f"reading its results. Target: {NAMES_NUMBERS_TARGET:g}%.", "",
            "| decoding | carried over | BLEU | chrF |", "|---|---|---|---|",
            *[md_row([name, f"{shares[key]['share']}%", report[key]["overall"]["bleu"],
                      report[key]["overall"]["chrf"]]) for name, key in names], "",
            *_carried_table(STRING_KINDS, {key: carried_by_kind(report, key) for _, key in names}, names),
            *_misses_table(report, names)]


def length_penalty_section(report: dict[str, Any], sweep: pd.DataFrame | None) -> list[str]:
    """The α beam search used for the scores above, and the validation sweep that chose it (``sweep``: the table
    training.length_penalty wrote beside the model, None without one)."""
    alpha = report.get("length_penalty", DecodeConfig.length_penalty)
    if sweep is None:
        return [f"Beam search ranks finished hypotheses with GNMT's length penalty, α = {alpha:g}.", ""]
    table = sweep
    return [f"Beam search ranks finished hypotheses with GNMT's length penalty, α = {alpha:g}: the α with the "
            f"best BLEU on the validation split ({int(table['n'].iloc[0])} pairs, beam {int(table['beam'].iloc[0])}; "
            "`python -m training.length_penalty --write`), the way the paper chose its 0.6. The test split took no "
            "part. A length ratio below 1 is output shorter than the references: words left out.", "",
            "| α | valid BLEU | valid chrF | length ratio |", "|---|---|---|---|",
            *[md_row([f"{r.alpha:g}", r.bleu, r.chrf, r.length_ratio]) for r in table.itertuples()], ""]
