"""The lecture as one offline file (app.views.lecture_file, python -m app.export) and the explorer's files
(app.downloads): what is in the file, what a visitor's text can and cannot do in it, and the command's errors."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import plotly.graph_objects as go
import plotly.offline
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.checks.escape import md
from app.downloads import figure_html, matrix_json
from app.export import MAX_SENTENCES, main
from app.lecture.slides import SLIDES
from app.serving.scheduler import MAX_INPUT_CHARS, store
from app.views.lecture_file import file_deck, lecture_file, render, script_json, shared_lecture_file
from model.network.config import DecodeConfig
from model.serving.inference import translate
from tests.app.conftest import decode_plotly

ROOT = Path(__file__).resolve().parents[2]
REVERSE = "h e l l o w o r l d"
FIGURE_DATA = re.compile(r"<script type='application/json' class='figure-data' data-for='figure-(\d+)-(\d+)'>(.*?)"
                         r"</script>", re.S)


@pytest.fixture(autouse=True)
def forget_translations():
    yield
    store.clear()


def deck(ckpt, name: str, text: str):
    def run(sentence: str, beam_size: int):
        return translate(ckpt.model, ckpt.tokenizer, sentence, DecodeConfig(beam_size=beam_size))
    return file_deck(name, ckpt, run(text, 1), run)


def embedded_figures(page: str) -> dict[tuple[int, int], dict]:
    """(sentence, slide) -> the figure's Plotly JSON in the file, numpy arrays decoded."""
    return {(int(s), int(i)): decode_plotly(json.loads(text)) for s, i, text in FIGURE_DATA.findall(page)}


class Tags(HTMLParser):
    """The tags and the text of an HTML fragment."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.text = ""

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)

    def handle_data(self, data):
        self.text += data


def parsed(fragment: str) -> Tags:
    tags = Tags()
    tags.feed(fragment)
    tags.close()
    return tags


# --- a visitor's text in the slides' Markdown --------------------------------------------------------------------

@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=60))
def test_a_visitors_text_shows_as_typed_and_adds_no_markup(text):
    """Whatever a sentence holds (tags, entities, Markdown, backslashes), the slide shows exactly its text, in the
    template's own markup only: it was escaped as the app escapes it (md) and put in after Markdown."""
    out = render("An **encoder** reads *{source}* ({n} pieces); `{start}` starts", {"source": md(text), "n": 3,
                                                                                   "start": "<s>"})
    tags = parsed(out)
    assert tags.tags == ["p", "strong", "em", "code"]
    assert tags.text == f"An encoder reads {text} (3 pieces); <s> starts"


def test_a_script_in_a_sentence_stays_text():
    out = render("reads *{source}*", {"source": md("<script>alert(1)</script> & [x](http://evil)")}, inline=True)
    assert "<script>" not in out and 'href' not in out
    assert out == "reads <em>&lt;script&gt;alert(1)&lt;/script&gt; &amp; [x](http://evil)</em>"


def test_format_specs_and_our_own_markdown_survive():
    assert render("√{d} ≈ {sqrt:.1f}, ε = {eps:g}", {"d": 256, "sqrt": 16.0, "eps": 0.1}, inline=True) == \
        "√256 ≈ 16.0, ε = 0.1"
    assert parsed(render("- one *{a}*\n- two", {"a": "x"})).tags == ["ul", "li", "em", "li"]


def test_figure_json_cannot_end_its_script_element():
    text = json.dumps({"t": "</script><script>alert(1)</script><!--"})
    safe = script_json(text)
    assert "<" not in safe and ">" not in safe and json.loads(safe) == json.loads(text)


# --- the file -------------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def reverse_page(shipped):
    ckpt = shipped("reverse")
    decks = [deck(ckpt, "reverse", REVERSE), deck(ckpt, "reverse", "<b>a</b> & *c*")]
    return decks, lecture_file(decks)


def test_the_file_holds_every_slide_of_every_sentence_and_plotly_once(reverse_page):
    decks, page = reverse_page
    assert page.count("<section class='slide'") == len(SLIDES) * 2
    assert page.count(plotly.offline.get_plotlyjs()) == 1
    assert not re.search(r"<(script|link|img)[^>]+(src|href)=", page), "nothing may be fetched"
    assert "cdn.plot.ly" not in page.replace(plotly.offline.get_plotlyjs(), "")
    assert "@page {size: 1280px 720px" in page
    # the reverse model ships all a slide needs (training log, snapshots, a known failure): every slide has its figure
    assert set(embedded_figures(page)) == {(s, i) for s in range(len(decks)) for i in range(len(SLIDES))}
    assert "class='message'" not in page


def test_the_files_figure_is_the_models_own_numbers(reverse_page, shipped):
    """Slide 9 (cross-attention, last layer, mean over heads) in the file holds the translation's weights."""
    decks, page = reverse_page
    index = next(i for i, s in enumerate(SLIDES) if s.figure == "heatmap" and s.args["kind"] == "cross")
    fig = embedded_figures(page)[(0, index)]
    weights = decks[0].translation.trace.weights("cross")[-1, 0].double().mean(0).numpy()
    z = next(np.asarray(t["z"], dtype=float) for t in fig["data"] if t.get("type") == "heatmap")
    np.testing.assert_allclose(z, weights, atol=1e-6)


def test_a_sentences_markup_is_text_in_the_file(reverse_page):
    _, page = reverse_page
    assert "<b>a</b>" not in page
    assert "&lt;b&gt;a&lt;/b&gt; &amp; *c*" in page  # the caption, the sentence button's title, the slides' lines


def test_the_lecture_pages_download_builds_the_file_once_for_everyone(shipped):
    from app.serving.scheduler import Request

    ckpt = shipped("reverse")
    request = Request(model_name="reverse", text=REVERSE)
    translation = translate(ckpt.model, ckpt.tokenizer, REVERSE, request.decode_config)
    shared_lecture_file.clear()
    first = shared_lecture_file("reverse", REVERSE, request.max_len, request.length_penalty, translation.uid,
                                _request=request, _ckpt=ckpt, _translation=translation)
    again = shared_lecture_file("reverse", REVERSE, request.max_len, request.length_penalty, translation.uid,
                                _request=request, _ckpt=ckpt, _translation=translation)
    assert again is first and first.decode("utf-8").count("<section class='slide'") == len(SLIDES)


# --- the command ----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("args, says", [
    (["--model", "nope"], "unknown model 'nope'"),
    (["--text", "  "], "sentence 1 is empty"),
    (["--text", "x" * (MAX_INPUT_CHARS + 1)], f"at most {MAX_INPUT_CHARS}"),
    (["--text", "a"] * (MAX_SENTENCES + 1), f"at most {MAX_SENTENCES}"),
    (["--text", "One sentence. And another one."], "holds 2 sentences"),
    (["--out", "/nonexistent-folder/lecture.html"], "does not exist"),
    (["--out", "/"], "is a directory"),
])
def test_errors_are_one_line_and_exit_2(capsys, args, says):
    assert main(["lecture", *args]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and err.startswith("error: ") and says in err


def test_a_bad_argument_is_one_line_and_exit_2(capsys):
    with pytest.raises(SystemExit) as stopped:
        main(["lecture", "--max-len", "3"])
    out, err = capsys.readouterr()
    assert stopped.value.code == 2 and out == "" and err.count("\n") == 1 and err.startswith("error: ")


def test_an_unwritable_out_is_one_line_and_exit_2(capsys):
    """/proc takes no new files, not even from root (who passes the permission check made before the model runs)."""
    assert main(["lecture", "--model", "reverse", "--text", "a b", "--out", "/proc/lecture.html"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and err.startswith("error: cannot write /proc/lecture.html")


def test_the_command_writes_the_file_and_says_one_clean_line(tmp_path):
    out = tmp_path / "lecture.html"
    done = subprocess.run([sys.executable, "-m", "app.export", "lecture", "--model", "reverse", "--text", REVERSE,
                           "--text", "a b c", "--out", str(out)], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stderr == "", "the app's caches must not talk outside a server"
    assert re.fullmatch(rf"wrote {re.escape(str(out))}: {len(SLIDES)} slides x 2 sentences, [\d.]+ MB, in [\d.]+ s; "
                        r"it needs no server and no network\n", done.stdout)
    assert out.read_text(encoding="utf-8").count("<section class='slide'") == 2 * len(SLIDES)


def test_the_help_says_plotly_is_inside():
    done = subprocess.run([sys.executable, "-m", "app.export", "lecture", "--help"], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0 and "no server" in done.stdout and "inlined" in done.stdout


# --- the explorer's files -------------------------------------------------------------------------------------------

def test_matrix_json_keeps_every_weight_and_piece_exactly():
    rng = np.random.default_rng(0)
    matrix = rng.random((3, 4), dtype=np.float32)
    data = json.loads(matrix_json(matrix, ["<s>", "▁a", "b"], ["a", "\"", "<", "</s>"], {"attention": "cross"}))
    assert data["attention"] == "cross" and data["queries"] == ["<s>", "▁a", "b"] and data["keys"][1] == "\""
    np.testing.assert_array_equal(np.asarray(data["weights"], dtype=np.float32), matrix)


def test_figure_html_works_without_a_network():
    fig = go.Figure(go.Heatmap(z=[[0.25, 0.75]]))
    page = figure_html(fig).decode("utf-8")
    assert plotly.offline.get_plotlyjs() in page and not re.search(r"<script[^>]+src=", page)
    assert "0.25" in page or "bdata" in page


def test_the_explorer_offers_the_matrix_as_csv_and_json_and_the_figure_as_html(app_test):
    at = app_test()
    at.text_area(key="text").input(REVERSE)
    at = at.button(key="translate").click().run()
    assert not at.exception
    labels = [b.proto.label for b in at.get("download_button")]
    assert {"Download this matrix (CSV)", "Matrix as JSON", "Figure as HTML"} <= set(labels)
    helps = " ".join(b.proto.help for b in at.get("download_button"))
    assert "needs no network" in helps


def test_the_lecture_page_offers_the_file(app_test):
    at = app_test("app/views/lecture.py", text=REVERSE)
    assert not at.exception
    buttons = [b for b in at.get("download_button") if b.proto.label == "Download the lecture (HTML)"]
    assert len(buttons) == 1 and f"{len(SLIDES)} figures" in buttons[0].proto.help
    assert "without a server or a network" in buttons[0].proto.help
