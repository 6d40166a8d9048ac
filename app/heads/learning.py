"""Heads page, section 4: watch attention learn. The same sentence read by snapshots from earlier in the model's
training (or a compatible upload), map by map, with how focused each layer becomes."""
from __future__ import annotations

import logging

import numpy as np
import pandas as pd
import streamlit as st

from app.charts import heads as charts
from app.explorer import select_head
from app.heads.pickers import axis_pieces, head_name, map_picker
from app.models.registry import load_model, load_snapshot, snapshots_of
from app.page import plot, to_numpy
from app.serving.scheduler import Request
from app.serving.weak_fragment import weak_fragment
from explain.checkpoints import incompatibility, read_output
from explain.heads import n_layers_of
from model.checkpoints.files import Checkpoint
from model.network.config import DecodeConfig
from model.network.trace import KIND_LABELS
from model.serving.inference import Translation, translate

log = logging.getLogger("attention_explorer")


# --- 4. the same sentence through earlier checkpoints ----------------------------------------------------

SNAPSHOT, CURRENT = "snapshot:", "current"


def comparison_checkpoint(model_name: str, key: str) -> Checkpoint:
    """The checkpoint behind a comparison key: a snapshot of the model, the model itself or this session's upload."""
    if key.startswith(SNAPSHOT):
        return load_snapshot(model_name, key.removeprefix(SNAPSHOT))
    return load_model(model_name if key == CURRENT else key)


def checkpoint_name(meta: dict, fallback: str) -> str:
    """A short name for a checkpoint in titles and legends: its epoch when it says so."""
    return f"epoch {meta['epochs']}" if isinstance(meta.get("epochs"), int) else fallback


@st.cache_data(show_spinner="Reading the sentence with another checkpoint…", max_entries=64)
def reading_arrays(model_name: str, key: str, source_ids: tuple[int, ...], output_ids: tuple[int, ...]) -> dict:
    """explain.checkpoints.read_output of one checkpoint as numpy: maps and spread per kind, log P of the output."""
    reading = read_output(comparison_checkpoint(model_name, key).model, source_ids, output_ids)
    return {"maps": {k: to_numpy(v) for k, v in reading.maps.items()},  # [L, H, Q, K]
            "spread": {k: to_numpy(v) for k, v in reading.spread.items()},  # [L, H]
            "log_prob": reading.log_prob}


@st.cache_data(show_spinner="Translating with another checkpoint…", max_entries=64)
def own_translation(model_name: str, key: str, text: str) -> str:
    """What the checkpoint itself makes of the sentence (greedy)."""
    ckpt = comparison_checkpoint(model_name, key)
    return translate(ckpt.model, ckpt.tokenizer, text, DecodeConfig()).text


def comparison_candidates(model_name: str, ckpt: Checkpoint) -> tuple[dict[str, tuple[str, dict]], list[str]]:
    """key -> (label, meta) of the checkpoints that line up with this model (its snapshots in training order,
    then this session's compatible uploads), and a note for each upload that does not."""
    found = {SNAPSHOT + name: (meta.get("snapshot") or name, meta) for name, (_, meta) in
             snapshots_of(model_name).items()}
    refused = []
    for key, other in st.session_state.get("uploads", {}).items():
        if key == model_name:
            continue
        reason = incompatibility(ckpt, other)
        if reason is None:
            found[key] = ("Uploaded checkpoint", other.meta)
        else:
            refused.append(f"The uploaded checkpoint {key.removeprefix('upload:')} cannot be compared: {reason}.")
    return found, refused


@weak_fragment
def checkpoints_section(translation: Translation, request: Request) -> None:
    ckpt = load_model(request.model_name)
    layers, n_heads = n_layers_of(ckpt.model), ckpt.config.n_heads
    st.markdown("The same sentence read by this model at earlier stages of its training. Every checkpoint reads the "
                "**same source and the same output** (this model's translation, teacher-forced), so the maps line up "
                "cell by cell; what changes is only what the weights had learned. Early on the cross-attention is "
                "flat, spread over the whole source; as the model learns to translate it turns into an alignment.")
    candidates, refused = comparison_candidates(request.model_name, ckpt)
    for note in refused:
        st.caption(note)
    if not candidates:
        st.info("This model ships no earlier snapshots of its training. Upload a checkpoint with the same "
                "tokenizer and shape in the sidebar (an earlier epoch of your own run, for example) to compare it "
                "here.", icon=":material/history:")
        return
    if "heads_ckpts" in st.session_state:  # forget what this model does not have (after a model switch)
        st.session_state["heads_ckpts"] = [k for k in st.session_state["heads_ckpts"] if k in candidates]
    st.session_state.setdefault("heads_ckpts", list(candidates))
    chosen = st.multiselect("Earlier checkpoints", list(candidates), key="heads_ckpts",
                            format_func=lambda key: checkpoint_name(candidates[key][1], candidates[key][0]),
                            persist_state="session")
    if not chosen:
        st.info("Pick at least one checkpoint to set beside this model.")
        return
    kind, layer, head = map_picker("heads_ckpt", layers, n_heads)
    source, output = tuple(translation.source.ids), tuple(translation.target_ids)
    keys = [*chosen, CURRENT]
    metas = {**{key: candidates[key][1] for key in chosen}, CURRENT: ckpt.meta}
    names = {key: checkpoint_name(candidates[key][1], candidates[key][0]) for key in chosen}
    epoch = checkpoint_name(ckpt.meta, "")
    names[CURRENT] = f"this model ({epoch})" if epoch else "this model"
    try:
        readings = {key: reading_arrays(request.model_name, key, source, output) for key in keys}
        translations = {key: own_translation(request.model_name, key, translation.source.text) for key in chosen}
    except Exception:
        log.exception("reading the sentence with another checkpoint failed")
        st.error("Another checkpoint could not read this sentence.")
        return
    translations[CURRENT] = translation.text
    queries, key_pieces, q_title, k_title = axis_pieces(translation, kind)
    where = f"{KIND_LABELS[kind]} · layer {layer + 1} · {head_name(head)}"
    maps = [(names[key], select_head(readings[key]["maps"][kind][layer], head)) for key in keys]
    plot(charts.checkpoints_figure(maps, queries, key_pieces, title=f"The same map as training goes on<br><sup>"
                                   f"{where}</sup>", row_title=q_title, col_title=k_title), "heads_ckpt_maps")
    checkpoint_table(keys, names, metas, readings, translations, kind, layer, head)
    learning_curves(keys, names, metas, readings, kind, len(queries), len(key_pieces))


TRANSLATION_CHARS = 70  # an early checkpoint repeats a piece until the length limit: keep the table readable


def checkpoint_table(keys: list[str], names: dict[str, str], metas: dict[str, dict], readings: dict[str, dict],
                     translations: dict[str, str], kind: str, layer: int, head: int) -> None:
    """One row per checkpoint: how far it had trained, how likely it finds this model's output, how flat the chosen
    map is and its own translation; then what each snapshot is."""
    def shortened(text: str) -> str:
        return text if len(text) <= TRANSLATION_CHARS else text[:TRANSLATION_CHARS - 1] + "…"

    rows = [{"checkpoint": names[key], "training steps": metas[key].get("steps"),
             "validation loss": metas[key].get("valid_loss"),
             "log P(this output)": round(readings[key]["log_prob"], 2),
             "row entropy (nats)": round(float(select_head(readings[key]["spread"][kind][layer], head)), 3),
             "its own translation (greedy)": shortened(translations[key])}
            for key in keys]
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
    described: dict[str, list[str]] = {}
    for key in keys:
        if metas[key].get("snapshot"):
            described.setdefault(metas[key]["snapshot"], []).append(names[key])
    st.caption("log P(this output): how likely the checkpoint finds this model's translation, teacher-forced "
               "(closer to 0 = more likely). Row entropy: the mean entropy of the map's rows above, in nats; lower "
               "is more focused. " + " ".join(f"*{', '.join(group)}*: {text.rstrip('.')}." for text, group in
                                             described.items()))


def learning_curves(keys: list[str], names: dict[str, str], metas: dict[str, dict], readings: dict[str, dict],
                    kind: str, n_queries: int, n_keys: int) -> None:
    """Row entropy of every layer of one kind over training steps (checkpoints that record their steps)."""
    timed = [key for key in keys if isinstance(metas[key].get("steps"), int)]
    if len(timed) < 2:
        return
    spread = np.stack([readings[key]["spread"][kind].mean(axis=-1) for key in timed])  # [C, L]
    uniform = float(np.log(np.arange(1, n_queries + 1)).mean()) if kind == "dec_self" else float(np.log(n_keys))
    plot(charts.spread_figure([metas[key]["steps"] for key in timed], [names[key] for key in timed], spread,
                              uniform, kind_label=KIND_LABELS[kind],
                              title=f"How focused {KIND_LABELS[kind].lower()} becomes (mean over heads)"),
         "heads_ckpt_spread")
