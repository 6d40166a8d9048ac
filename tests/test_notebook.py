"""examples/explore.ipynb runs top to bottom in a real Jupyter kernel (nbclient, ipykernel) and draws the app's figures
inline; one figure holds the same numbers in all three places a person can see it: the app's lecture slide, the
exported lecture file (python -m app.export) and the notebook."""
from __future__ import annotations

import json
import re
import time
from pathlib import Path

import nbclient
import nbformat
import numpy as np
import pytest

from app.lecture.slides import SLIDES
from tests.app.conftest import decode_plotly

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "examples" / "explore.ipynb"
PLOTLY = "application/vnd.plotly.v1+json"
FIGURES = ("cross-heatmap", "head-view", "model-view", "topk", "step-row", "beam-tree", "importance", "scored")
TIME_LIMIT_S = 90  # the notebook takes about 20 s on a busy 2-core CPU
CROSS_SLIDE = next(i for i, s in enumerate(SLIDES) if s.figure == "heatmap" and s.args["kind"] == "cross")


@pytest.fixture(scope="module")
def executed() -> tuple[nbformat.NotebookNode, float]:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    began = time.monotonic()
    nbclient.NotebookClient(nb, timeout=TIME_LIMIT_S, kernel_name="python3",
                            resources={"metadata": {"path": str(NOTEBOOK.parent)}}).execute()
    return nb, time.monotonic() - began


def tagged_figure(nb: nbformat.NotebookNode, tag: str) -> dict:
    cell = next(c for c in nb.cells if tag in c.get("metadata", {}).get("tags", []))
    shown = [o for o in cell.outputs if o.output_type in ("display_data", "execute_result") and PLOTLY in o.data]
    assert len(shown) == 1, f"cell {tag!r} shows {len(shown)} Plotly figures"
    return decode_plotly(shown[0].data[PLOTLY])


def heatmap_z(fig: dict) -> np.ndarray:
    return np.asarray(next(t["z"] for t in fig["data"] if t.get("type") == "heatmap"), dtype=np.float64)


def test_the_notebook_is_stored_without_outputs():
    """Outputs hold plotly.js (4.7 MB) and change on every run: they are made by running it, never committed."""
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    assert all(not c.get("outputs") and not c.get("execution_count") for c in nb.cells if c.cell_type == "code")


def test_the_notebook_runs_top_to_bottom_and_draws_every_figure_inline(executed):
    nb, took = executed
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors
    assert took < TIME_LIMIT_S
    for tag in FIGURES:
        fig = tagged_figure(nb, tag)
        assert fig["data"] and fig["layout"]["title"]["text"], tag
    streams = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    assert "translation:   Mein Bruder" in streams and "Warning" not in streams


def test_one_figure_holds_the_same_numbers_in_the_app_the_exported_file_and_the_notebook(executed, tmp_path):
    """The last layer's cross-attention, mean over heads (lecture slide 9), on the default sentence of en-de."""
    import streamlit.logger

    from app.export import export_lecture
    from app.models.registry import load_model
    from app.state import DEFAULTS
    from app.views.lecture_file import file_deck
    from app.views.slide_figures import build
    from model.network.config import DecodeConfig
    from model.serving.inference import translate

    streamlit.logger.set_log_level("error")
    text = DEFAULTS["text"]
    ckpt = load_model("en-de")

    def run(sentence: str, beam_size: int):
        return translate(ckpt.model, ckpt.tokenizer, sentence, DecodeConfig(beam_size=beam_size))
    translation = run(text, 1)
    app_z = heatmap_z(decode_plotly(json.loads(
        build(SLIDES[CROSS_SLIDE], file_deck("en-de", ckpt, translation, run))[0].to_json())))

    page = export_lecture("en-de", [text])
    data = re.search(rf"data-for='figure-0-{CROSS_SLIDE}'>(.*?)</script>", page, re.S).group(1)
    file_z = heatmap_z(decode_plotly(json.loads(data)))

    notebook_z = heatmap_z(tagged_figure(executed[0], "cross-heatmap"))

    model_z = translation.trace.weights("cross")[-1, 0].mean(0).numpy()  # [T, S], the heads' mean the figures show
    np.testing.assert_allclose(app_z, model_z, atol=1e-6)
    np.testing.assert_array_equal(file_z, app_z)
    # The notebook's kernel is another process with torch's default thread count. The weights are stored
    # column-major for the CPU (model.network.weight_layout), and MKL splits such a product over threads in a way that
    # can change the last float32 bits: 3.6e-7 between 1 and 2 threads here, far below what a figure shows.
    np.testing.assert_allclose(notebook_z, app_z, rtol=0, atol=1e-6)
