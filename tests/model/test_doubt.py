"""The doubt note: per-piece probabilities of the chosen output, read off the decode, and the line that says so."""
import math
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from model.decoding.search import forced_steps
from model.network.config import DecodeConfig, Sampling
from model.serving.doubt import MEAN_LOG_PROB_FLOOR, Doubt, doubt_of, piece_log_probs
from model.serving.inference import translate

ROOT = Path(__file__).resolve().parents[2]
SENTENCES = ["The house is small.", "I like my new car very much.", "Where is the station?"]


@pytest.mark.parametrize("config", [DecodeConfig(max_len=12), DecodeConfig(beam_size=3, max_len=12),
                                    DecodeConfig(max_len=12, sampling=Sampling(temperature=1.5, seed=3))],
                         ids=["greedy", "beam", "sample"])
def test_piece_log_probs_are_the_models_own_for_each_piece_written(tiny_model, tokenizer, config):
    for text in SENTENCES:
        tr = translate(tiny_model, tokenizer, text, config)
        got = piece_log_probs(tr.result)
        assert len(got) == len(tr.target_ids)
        assert math.isclose(sum(got), tr.result.best.log_prob, abs_tol=1e-4)
        # teacher forcing the same output reads each piece's log-probability from a fresh pass
        src = torch.tensor(tr.source.ids)
        forced = [s.forced.log_prob for s in forced_steps(tiny_model, src, tr.target_ids)]
        assert got == pytest.approx(forced, abs=1e-4)
        assert all(lp <= 1e-6 for lp in got)


log_probs = st.lists(st.floats(min_value=-30.0, max_value=0.0, allow_nan=False), min_size=1, max_size=60)


@given(log_probs)
def test_the_note_fires_exactly_below_the_floor_and_names_the_weakest_piece(values):
    pieces = tuple(f"p{i}" for i in range(len(values)))
    doubt = Doubt(tuple(values), pieces)
    mean = sum(values) / len(values)
    assert doubt.doubtful == (mean < MEAN_LOG_PROB_FLOOR)
    note = doubt.note()
    assert (note is not None) == doubt.doubtful
    piece, prob = doubt.lowest
    assert math.isclose(prob, math.exp(min(values)))
    assert prob <= doubt.typical_prob + 1e-12
    if note is not None:
        assert "\n" not in note and repr(piece) in note and note.startswith("the model is unsure")


def test_doubt_of_reads_the_best_hypothesis(tiny_model, tokenizer):
    tr = translate(tiny_model, tokenizer, SENTENCES[0], DecodeConfig(beam_size=3, max_len=10))
    doubt = doubt_of(tr.result, tr.target_pieces)
    assert doubt.pieces == tr.target_pieces
    assert math.isclose(doubt.mean_log_prob, tr.result.best.log_prob / len(tr.target_ids), abs_tol=1e-4)


def run_cli(text: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "model", "translate", text], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)


def test_the_cli_says_when_the_shipped_model_is_unsure_and_only_then():
    """The first sentence a class types comes out as nonsense: the CLI must say so (calibrated floor, shipped model);
    the default sentence, which it translates right, gets no such note."""
    unsure = run_cli("Attention is all you need.")
    assert unsure.returncode == 0, unsure.stderr
    notes = [line for line in unsure.stderr.splitlines() if line.startswith("note: the model is unsure")]
    assert len(notes) == 1, unsure.stderr
    sure = run_cli("My brother has bought a new house in the city.")
    assert sure.returncode == 0 and sure.stdout.strip() == "Mein Bruder hat ein neues Haus in der Stadt gekauft."
    assert "unsure" not in sure.stderr
