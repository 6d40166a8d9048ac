"""Command line: python -m app.export lecture --text "sentence" [--text "another" ...] [--model en-de]
[--out lecture.html]

Writes the lecture (every slide of app.lecture.slides on each sentence, as presenter mode draws them) as one
self-contained HTML file that needs no server and no network: Plotly's JavaScript is inlined once in the file
(plotly.offline.get_plotlyjs(), about 4.7 MB), so it opens from file:// and from any static web server; printing it
gives one 16:9 page per slide (app.views.lecture_file). The model runs here, as the app runs it
(model.serving.inference); errors are one line on stderr, ``error: ...``, and exit status 2.
"""
from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before torch is imported

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

import streamlit.logger

MAX_SENTENCES = 5  # sentences in one file: each adds one figure per slide (about 0.6 MB and a few seconds)


class Parser(argparse.ArgumentParser):
    """argparse, but a bad argument is one line on stderr, ``error: ...``, and exit status 2."""

    def error(self, message: str) -> NoReturn:  # argparse's own hook
        self.exit(2, f"error: {message} (see {self.prog} --help)\n")


class ExportError(Exception):
    """Something the user can fix (the model, a sentence, the output path); the message says what."""


def build_parser() -> argparse.ArgumentParser:
    from app.serving.scheduler import MAX_INPUT_CHARS
    from app.state import DEFAULTS

    parser = Parser(prog="python -m app.export", description="Attention Explorer's lecture and views as files")
    commands = parser.add_subparsers(dest="command", required=True)
    lecture = commands.add_parser(
        "lecture", help="the lecture as one self-contained HTML file (no server, no network)",
        description="Every slide of the lecture on the given sentences in one HTML file that needs no server and no "
                    "network: Plotly's JavaScript (about 4.7 MB) is inlined once, each sentence adds about 0.6 MB. "
                    "It opens from file:// or any static web server. Keys: → / ← and PageDown / PageUp (a "
                    "clicker) turn the slides, s / S switch the sentence, n shows the speaker notes; printing "
                    "(Chromium: print to PDF) gives one 16:9 page per slide.")
    lecture.add_argument("--text", action="append", metavar="SENTENCE",
                         help=f"a sentence to explain (repeat for up to {MAX_SENTENCES}; at most {MAX_INPUT_CHARS} "
                              f"characters each; default: {DEFAULTS['text']!r})")
    lecture.add_argument("--model", default=DEFAULTS["model_name"],
                         help="a model under pretrained/ (default: %(default)s)")
    lecture.add_argument("--out", type=Path, default=Path("lecture.html"), help="the file to write (default: "
                                                                                 "%(default)s)")
    return parser


def checked_texts(texts: Sequence[str] | None) -> list[str]:
    """The sentences to explain, bounded before any work: at most MAX_SENTENCES, each one sentence of at most the
    app's MAX_INPUT_CHARS characters."""
    from app.checks.paragraphs import split_sentences
    from app.serving.scheduler import MAX_INPUT_CHARS
    from app.state import DEFAULTS

    texts = list(texts) if texts else [DEFAULTS["text"]]
    if len(texts) > MAX_SENTENCES:
        raise ExportError(f"{len(texts)} sentences given; a lecture file holds at most {MAX_SENTENCES}")
    for number, text in enumerate(texts, 1):
        if not text.strip():
            raise ExportError(f"sentence {number} is empty")
        if len(text) > MAX_INPUT_CHARS:
            raise ExportError(f"sentence {number} has {len(text)} characters; at most {MAX_INPUT_CHARS}")
        found = len(split_sentences(text))
        if found > 1:
            raise ExportError(f"--text {number} holds {found} sentences: give each one its own --text")
    return texts


def checked_out(out: Path) -> Path:
    """``out``, if a file can be written there (checked before the model runs)."""
    if out.is_dir():
        raise ExportError(f"{out} is a directory; name the file to write")
    folder = out.parent if str(out.parent) else Path(".")
    if not folder.is_dir():
        raise ExportError(f"cannot write {out}: the folder {folder} does not exist")
    if not os.access(folder, os.W_OK) or (out.exists() and not os.access(out, os.W_OK)):
        raise ExportError(f"cannot write {out}: permission denied")
    return out


def export_lecture(model_name: str, texts: Sequence[str]) -> str:
    """The lecture file's HTML for ``texts`` on model ``model_name`` (greedy, the app's default settings)."""
    from app.models.registry import MODELS, converted_models, decode_rules, default_length_penalty, load_model
    from app.serving.scheduler import Request
    from app.state import DEFAULTS
    from app.views.lecture_file import file_deck, lecture_file
    from model.serving.inference import InputError, Translation, translate

    known = sorted({*MODELS, *converted_models()})
    if model_name not in known:
        raise ExportError(f"unknown model {model_name!r} (choose from: {', '.join(known)})")
    ckpt = load_model(model_name)
    rules = decode_rules(model_name, None)
    penalty = default_length_penalty(model_name)

    def run(text: str, beam_size: int) -> Translation:
        request = Request(model_name=model_name, text=text, beam_size=beam_size, max_len=int(DEFAULTS["max_len"]),
                          length_penalty=penalty, **rules)
        return translate(ckpt.model, ckpt.tokenizer, text, request.decode_config, lexicon=ckpt.copy_lexicon)

    decks = []
    for number, text in enumerate(texts, 1):
        try:
            decks.append(file_deck(model_name, ckpt, run(text, 1), run))
        except InputError as exc:
            raise ExportError(f"sentence {number}: {exc}") from None
    return lecture_file(decks)


def main(argv: Sequence[str] | None = None) -> int:
    streamlit.logger.set_log_level("error")  # the app's caches run without a server here: no "No runtime" notes
    args = build_parser().parse_args(argv)
    try:
        texts, out = checked_texts(args.text), checked_out(args.out)
        began = time.monotonic()
        page = export_lecture(args.model, texts)
        out.write_text(page, encoding="utf-8")
    except ExportError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"error: cannot write {args.out}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    from app.lecture.slides import SLIDES

    size = out.stat().st_size
    print(f"wrote {out}: {len(SLIDES)} slides x {len(texts)} sentence{'s' if len(texts) > 1 else ''}, "
          f"{size / 2**20:.1f} MB, in {time.monotonic() - began:.1f} s; it needs no server and no network")
    return 0


if __name__ == "__main__":
    sys.exit(main())
