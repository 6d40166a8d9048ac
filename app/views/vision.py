"""Page: Vision — the attention of the text pages, applied to image patches: a ViT and a Swin Transformer, both
trained by this project on 8x8 handwritten digits (pretrained/vit-digits, pretrained/swin-digits). A digit is one of
the held-out test digits or one drawn on a canvas (app.canvas), made into an 8x8 image the way the training digits
were (model.vision.drawing)."""
from __future__ import annotations

from functools import partial
from pathlib import Path

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from app.canvas import drawing_canvas, point_count
from app.charts import vision as charts
from app.charts.style import plotly_config
from app.checks.escape import md
from app.explorer import point_customdata, select_head
from app.page import log, plot, to_numpy
from app.presenter import presentable
from explain.vision import (
    attention_on_grid,
    bias_offsets,
    neighbour_similarity,
    position_similarity,
    read_swin,
    read_vit,
    receptive_fields,
    sinusoid_similarity,
)
from model.checkpoints.header import CheckpointError
from model.vision.checkpoint import VisionCheckpoint, load_vision
from model.vision.config import SwinConfig, ViTConfig
from model.vision.digits import Digits, load_digits
from model.vision.drawing import DrawingError, drawing_to_digit
from model.vision.swin import Swin
from model.vision.vit import ViT
from model.vision.windows import region_labels, token_windows

ROOT = Path(__file__).resolve().parents[2]
VISION_MODELS = {"ViT": ROOT / "pretrained" / "vit-digits", "Swin": ROOT / "pretrained" / "swin-digits"}
SOURCES = ["Test set", "Draw your own"]
SIDE = 8
MIN_INK_CELLS = 3  # fewer inked cells than this are no digit: the prediction is said to mean nothing
# This page's widget state, kept while another section or page is on screen (Streamlit forgets the state of a
# widget that a run does not draw); the values are the defaults.
DEFAULTS = {"vision_source": SOURCES[0], "vision_index": 0, "vision_model": "ViT", "vision_head": -1,
            "vision_query": 0, "vision_block": 1, "vision_swin_head": -1, "vision_swin_pixel": 11}


def keep_state() -> None:
    for key, value in DEFAULTS.items():
        st.session_state[key] = st.session_state.get(key, value)


@st.cache_resource(show_spinner="Loading the vision model…")
def vision_model(name: str) -> VisionCheckpoint:
    """Shared by every session, read-only (eval mode)."""
    return load_vision(VISION_MODELS[name])


@st.cache_resource
def digits() -> Digits:
    return load_digits()


def test_set() -> tuple[np.ndarray, np.ndarray]:
    return digits().part("test")


# --- choosing a digit ------------------------------------------------------------------------------------

def _random_digit() -> None:
    st.session_state["vision_index"] = int(np.random.default_rng().integers(len(test_set()[1])))


def choose_digit() -> tuple[np.ndarray, int | None]:
    """The digit on screen (uint8 [8, 8], ink 0..16) and its true label (None for a drawing)."""
    images, labels = test_set()
    source = st.segmented_control("Digit", SOURCES, key="vision_source", selection_mode="single", required=True)
    if source == SOURCES[0]:
        left, right = st.columns([5, 1], vertical_alignment="bottom")
        index = left.slider("Test image", 0, len(labels) - 1, key="vision_index",
                            help=f"One of the {len(labels)} held-out test digits: neither model saw them in training.")
        right.button("Random", key="vision_random", on_click=_random_digit, icon=":material/casino:")
        return images[index], int(labels[index])
    left, right = st.columns([2, 3], vertical_alignment="top")
    with left:
        strokes = drawing_canvas("vision_canvas")
    right.markdown("Draw one digit with the mouse, a pen or a finger, large or small, anywhere in the square. It is "
                   "read 0.6 s after the pen lifts, the way the training digits were made: scaled by its bounding "
                   "box to fill a 32x32 bitmap, then the ink of each 4x4 block counted (an 8x8 image, values 0-16). "
                   "**Undo** takes back the last stroke, **Clear** starts again.")
    try:
        return drawing_to_digit(strokes), None
    except DrawingError as exc:  # only a hand-made request sends this: the canvas keeps within the bounds
        right.warning(f"This drawing cannot be read: {md(str(exc))}.", icon=":material/draw:")
        return np.zeros((SIDE, SIDE), dtype=np.uint8), None


def _pick(chart_key: str, target: str, offset: int) -> None:
    """A click on a clickable overlay: the customdata of the invisible marker is the cell's index."""
    selection = (st.session_state.get(chart_key) or {}).get("selection") or {}
    for point in selection.get("points") or []:
        data = point_customdata(point)
        if data:
            st.session_state[target] = int(data[0]) + offset
            return


def clickable(fig: go.Figure, key: str, target: str, offset: int = 0) -> None:
    """Like app.page.plot, but a click on cell i sets ``target`` to i + offset in session_state."""
    st.plotly_chart(presentable(fig), key=key, width="stretch", theme=None,
                    on_select=partial(_pick, key, target, offset), selection_mode="points",
                    config=plotly_config(key, st.session_state.get("image_format", "png")))


# --- ViT -------------------------------------------------------------------------------------------------

def vit_section(ckpt: VisionCheckpoint, image: np.ndarray, label: int | None) -> None:
    assert isinstance(ckpt.model, ViT) and isinstance(ckpt.config, ViTConfig)  # render() chose it for a ViT
    config = ckpt.config
    p, g = config.patch_size, config.grid
    reading = read_vit(ckpt.model, image)
    attention = to_numpy(reading.attention)  # [L, H, N+1, N+1]
    st.subheader("1 · An image is a sequence of patches")
    left, right = st.columns([1, 1])
    with left:
        plot(charts.digit_patches(image, p, f"The digit cut into {g * g} patches of {p}x{p} pixels"), "vit_patches")
    with right:
        plot(charts.probabilities(to_numpy(reading.probabilities), label), "vit_probabilities")
        if label is not None:
            st.caption(f"True label: **{label}**. The probabilities come from the [CLS] token after the last layer.")
    plot(charts.patch_sequence(image, p), "vit_sequence")
    st.caption(f"Each patch's {p * p} ink values are flattened and mapped by one linear layer to a {config.d_model}-"
               "dimensional vector: the patch is the image's word, the linear map its embedding. A learned [CLS] "
               "token is put in front; the class is read from it at the end, as if it were a summary word.")

    st.subheader("2 · Attention between patches")
    n_layers, n_heads = attention.shape[:2]
    c1, c2, c3 = st.columns(3)
    st.session_state["vision_layer"] = min(st.session_state.get("vision_layer", n_layers), n_layers)
    layer = c1.slider("Layer", 1, n_layers, key="vision_layer") - 1
    head = c2.selectbox("Head", list(range(-1, n_heads)), key="vision_head",
                        format_func=lambda h: "mean over heads" if h < 0 else f"head {h + 1}")
    query = c3.selectbox("Query token", list(range(g * g + 1)), key="vision_query",
                         format_func=lambda q: "[CLS]" if q == 0 else f"patch {q}",
                         help="Or click a patch in the left figure.")
    rows = select_head(attention[layer], head)  # [N+1, N+1]
    who = "[CLS]" if query == 0 else f"patch {query}"
    left, right = st.columns(2)
    with left:
        fig = charts.attention_overlay(image, rows[query, 1:].reshape(g, g), p,
                                       f"What {who} attends to · layer {layer + 1} · "
                                       f"{'mean over heads' if head < 0 else f'head {head + 1}'}",
                                       selected=None if query == 0 else query - 1, clickable=True)
        clickable(fig, "vit_overlay", "vision_query", offset=1)  # the query list counts [CLS] as 0
        st.caption(f"Row {who} of the attention matrix, laid over the image; [CLS] itself gets "
                   f"{rows[query, 0]:.2f} of the weight. Click a patch to see its own row.")
    with right:
        rollout = to_numpy(reading.rollout)
        plot(charts.attention_overlay(image, rollout[query, 1:].reshape(g, g), p,
                                      f"Attention rollout of {who} through all {n_layers} layers"), "vit_rollout")
        st.caption("Rollout (Abnar & Zuidema, 2020): per layer average the heads, count the residual connection "
                   "as half the flow (0.5 I + 0.5 A), and multiply the layers. It estimates how much each input "
                   "patch reaches the final token, where one layer's map shows only one step.")
    plot(charts.overlay_grid(image, attention[:, :, query, 1:].reshape(n_layers, n_heads, g, g), p,
                             f"What {who} attends to, every layer (rows) and head (columns)"), "vit_all_heads")
    st.caption("The same row for every head: as on the Translate page, heads specialise; early layers often look "
               "at neighbouring patches, later ones at the strokes that separate one digit from another.")

    st.subheader("3 · Learned positions find the 2-D grid")
    learned = position_similarity(ckpt.model)
    sinusoid = sinusoid_similarity(g * g, config.d_model)
    plot(charts.position_similarity(to_numpy(learned), to_numpy(sinusoid), g), "vit_positions")
    l_side, l_above, l_rest = neighbour_similarity(learned, g)
    s_side, s_above, s_rest = neighbour_similarity(sinusoid, g)
    st.caption(f"Each tile sits where its patch is and shows how similar that patch's position vector is to every "
               f"other patch's. The ViT was given {g * g} free vectors and learned a 2-D code: patches side by side "
               f"average a cosine of {l_side:.2f}, one above the other {l_above:.2f}, all other pairs {l_rest:.2f} "
               "(Dosovitskiy et al., figure 7). The text model's sinusoids (right, see the Positional encoding "
               f"page) know one dimension only: side by side {s_side:.2f}, but the patch just below is "
               f"{g} steps away in the sequence ({s_above:.2f}), and everything looks alike ({s_rest:.2f}).")


# --- Swin ------------------------------------------------------------------------------------------------

def swin_section(ckpt: VisionCheckpoint, image: np.ndarray, label: int | None) -> None:
    assert isinstance(ckpt.model, Swin) and isinstance(ckpt.config, SwinConfig)  # render() chose it for a Swin
    config = ckpt.config
    reading = read_swin(ckpt.model, image)
    r, m, s = config.resolutions[0], config.windows[0], config.shifts[0]
    st.subheader("1 · Attention inside windows, and windows that shift")
    ids = [to_numpy(token_windows(r, m, shift)) for shift in (0, s)]  # [R, R] window of each token
    shifted = np.roll(image, (-s, -s), axis=(0, 1))  # what torch.roll does to the grid (model.vision.windows)
    plot(charts.window_partitions(image, ids, [f"Block 1: {m}x{m} windows", f"Block 2: windows shifted by {s}"],
                                  shifted, s, m), "swin_windows")
    st.caption(f"A token attends only to the {m * m} tokens of its window: the cost grows with the image, not with its "
               "square. The next block shifts the windows by half a window so that neighbours split by a border "
               "meet. Rolling the image (right) keeps four whole windows; the pixels right of and below the red "
               "dotted lines wrapped round from the other edge.")
    with st.expander("The shifted-window mask: which pairs are blocked, and why", expanded=False):
        shifted_block = next(b for b in reading.blocks if b.shift)
        plot(charts.window_masks(to_numpy(shifted_block.mask), m), "swin_mask")
        regions = to_numpy(region_labels(r, m, s))
        st.caption(f"After the roll, a window can hold pixels from opposite edges of the digit. Tokens that come "
                   f"from different regions ({len(np.unique(regions))} regions, split at rows and columns {r - m} and "
                   f"{r - s} of the rolled grid) were never neighbours, so the mask blocks them (bool, True = may "
                   "attend, exactly as the decoder's causal mask): window 0 is all one region, the right and bottom "
                   "windows split in two, the corner window in four.")
    blocks = reading.blocks
    st.subheader("2 · Attention inside each window")
    c1, c2 = st.columns(2)
    names = [f"stage {b.stage + 1} · block {b.block + 1} ({'shifted' if b.shift else 'regular'} windows, "
             f"{b.resolution}x{b.resolution} tokens)" for b in blocks]
    chosen = c1.selectbox("Block", list(range(len(blocks))), key="vision_block", format_func=names.__getitem__)
    block = blocks[chosen]
    n_heads = block.weights.shape[1]  # [B, H, N, N]
    head = c2.selectbox("Head", list(range(-1, n_heads)), key="vision_swin_head",
                        format_func=lambda h: "mean over heads" if h < 0 else f"head {h + 1}")
    side, res = config.image_size, block.resolution
    scale = side // res  # pixels per token side
    pixel = divmod(st.session_state["vision_swin_pixel"], side)  # kept as a pixel: a token of stage 2 covers 2x2
    token = (pixel[0] // scale) * res + pixel[1] // scale
    corners = [(t // res) * scale * side + (t % res) * scale for t in range(res * res)]  # top-left pixel per token
    left, right = st.columns(2)
    short = f"S{block.stage + 1}·B{block.block + 1}"
    with left:
        grid = to_numpy(attention_on_grid(block, head, token))
        fig = charts.attention_overlay(image, grid, scale, f"What token {token} attends to · {short} · "
                                       f"{'mean over heads' if head < 0 else f'head {head + 1}'}",
                                       selected=token, clickable=True, height=440, cell_ids=np.array(corners))
        clickable(fig, "swin_overlay", "vision_swin_pixel")
        st.caption("Click any token. Its weights stay inside its own window; in a shifted block they can cross the "
                   "borders of the regular windows, never the mask.")
    with right:
        plot(charts.probabilities(to_numpy(reading.probabilities), label), "swin_probabilities")
        st.caption("The Swin classifies from the mean of its last stage's tokens (it has no [CLS] token).")
    fields = np.stack([to_numpy(f) for f in receptive_fields(ckpt.model, *pixel)])  # [blocks, S, S]
    titles = [f"after S{b.stage + 1}·B{b.block + 1}" + (" (shifted)" if b.shift else "") for b in blocks]
    plot(charts.receptive_fields(image, fields, titles, pixel), "swin_receptive")
    st.caption("Green: the pixels that can have reached this token so far. A window lets a token read its 16 "
               "neighbours; the shifted block links it to the next window; patch merging joins 2x2 tokens, so one "
               "stage-2 token covers 2x2 pixels and its window the whole image. Windows, shifts and merging grow "
               "what a token sees stage by stage, like the layers of a CNN.")
    weights = to_numpy(block.window_weights()[0])  # [nW, H, M*M, M*M]
    plot(charts.window_attention(weights, None if block.mask is None else to_numpy(block.mask),
                                 f"Inside every window, per head · {names[chosen]}"), "swin_window_attention")
    st.caption("Rows are queries, columns keys, both numbered row by row inside the window (in rolled coordinates "
               "for a shifted block). Grey cells are blocked by the mask: their weight is exactly 0.")
    st.subheader("3 · Relative position bias")
    bias = to_numpy(bias_offsets(ckpt.model)[chosen])
    plot(charts.bias_tables(bias, f"Learned bias per offset · {names[chosen]}"), "swin_bias")
    st.caption(f"Swin has no position embeddings. Each head learns one number per offset (dy, dx) between query and "
               f"key, a table of (2M−1)² = {bias.shape[-1] ** 2} entries indexed into an M²×M² matrix and added "
               "to QKᵀ/√d_k before the softmax. Red offsets are favoured, blue ones avoided.")


def render() -> None:
    st.title("Vision: attention on images")
    st.markdown("The same attention the other pages explain on sentences, applied to a picture: cut the image into "
                "patches, treat each patch as a token, and let every patch attend to the others. Two small models "
                "trained by this project on 8x8 handwritten digits: a **ViT** (all patches attend to all) and a "
                "**Swin Transformer** (attention inside shifted windows, then merge).")
    keep_state()
    image, label = choose_digit()
    if label is None and int((image > 0).sum()) < MIN_INK_CELLS:
        st.warning(f"{'Nothing is' if not image.any() else 'Almost nothing is'} drawn. A classifier always names one "
                   "of its ten digits, even for a blank grid: the prediction and the attention below say nothing "
                   "about a digit. Draw one in the square above.", icon=":material/draw:")
    name = st.segmented_control("Model", list(VISION_MODELS), key="vision_model", selection_mode="single",
                                required=True)
    if name is None:  # not reached: required, and keep_state() set the session state
        name = str(DEFAULTS["vision_model"])
    try:
        ckpt = vision_model(name)
    except (CheckpointError, OSError):
        log.exception("loading the %s model failed", name)
        st.error(f"The {name} model could not be loaded from {VISION_MODELS[name].relative_to(ROOT)}.")
        return
    if label is None and int((image > 0).sum()) >= MIN_INK_CELLS:
        model = ckpt.model
        reading = read_vit(model, image) if isinstance(model, ViT) else read_swin(model, image)
        probabilities = to_numpy(reading.probabilities)
        read = int(probabilities.argmax())
        points = point_count(st.session_state.get("vision_canvas_strokes", []))
        st.markdown(f"<div data-testid='digitRead' data-points='{points}' style='font-size:1.4rem'>The {name} reads "
                    "your drawing as "
                    f"<b>{read}</b> ({probabilities[read]:.0%}).</div>", unsafe_allow_html=True)
    accuracy = ckpt.meta.get("test_accuracy")
    if accuracy is not None:
        st.caption(f"{name}: test accuracy {accuracy:.1%} on the {ckpt.meta.get('test_total', 359)} held-out digits "
                   f"(see its model card).")
    if name == "ViT":
        vit_section(ckpt, image, label)
    else:
        swin_section(ckpt, image, label)


render()
