"""Teacher forcing a given translation (model.decoding.forcing, model.serving.inference.score_translation, the CLI's
--force): what the model thinks of a text it is handed, with every attention weight of that pass."""
from __future__ import annotations

import json
import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from model.__main__ import main
from model.decoding.search import DecodeResult, forced_steps, greedy_decode
from model.network.attention import Capture
from model.network.config import DecodeConfig
from model.network.trace import KINDS
from model.serving.budget import Budget
from model.serving.inference import InputError, finish, planned_forced, score_translation, translate
from model.serving.serialize import translation_to_dict
from tests.conftest import eos_leaning

EOS, FIRST_ID = 3, 4
TOL = 1e-5


@pytest.fixture(scope="module")
def models(tiny_model):
    return {"random": tiny_model, "eos-leaning": eos_leaning(tiny_model, EOS)}


@given(ids=st.lists(st.integers(FIRST_ID, 119), min_size=0, max_size=11), max_len=st.integers(1, 10),
       which=st.sampled_from(["random", "eos-leaning"]))
def test_forcing_the_greedy_output_gives_greedy_back(models, ids, max_len, which):
    """Pieces, every step's log-probability, top-k and every attention weight (1e-5)."""
    model = models[which]
    src = torch.tensor([*ids, EOS])
    greedy = greedy_decode(model, src, DecodeConfig(max_len=max_len))
    forced = list(forced_steps(model, src, greedy.best.tokens, DecodeConfig(max_len=max_len)))
    assert len(forced) == len(greedy.steps)
    for g, f in zip(greedy.steps, forced, strict=True):
        assert f.forced is not None and f.forced.agrees and f.forced.first == f.forced.token
        assert torch.equal(g.prefixes, f.prefixes) and torch.equal(g.topk_ids, f.topk_ids)
        torch.testing.assert_close(f.prefix_scores, g.prefix_scores, atol=TOL, rtol=0)
        torch.testing.assert_close(f.topk_probs, g.topk_probs, atol=TOL, rtol=0)
        for kind in ("dec_self", "cross"):
            for a, b in zip(g.attention.weights(kind), f.attention.weights(kind), strict=True):
                torch.testing.assert_close(b, a, atol=TOL, rtol=0)
    result = DecodeResult.from_steps(forced, 1)
    assert result.best.tokens == greedy.best.tokens
    assert abs(result.best.log_prob - greedy.best.log_prob) < TOL
    for kind in KINDS:
        for a, b in zip(greedy.attention_for().weights(kind), result.attention_for().weights(kind), strict=True):
            torch.testing.assert_close(b, a, atol=TOL, rtol=0)


@given(ids=st.lists(st.integers(FIRST_ID, 119), min_size=1, max_size=8),
       out=st.lists(st.integers(FIRST_ID, 119), min_size=1, max_size=8))
def test_a_forced_text_is_scored_as_one_teacher_forced_forward_scores_it(tiny_model, ids, out):
    """Any forced output: each piece's log-prob, rank and the model's first choice are the teacher-forced forward's,
    and the output's log-prob is their sum."""
    src, tokens = torch.tensor([*ids, EOS]), (*out, EOS)
    steps = list(forced_steps(tiny_model, src, tokens))
    with torch.no_grad():
        logits = tiny_model(src[None], torch.tensor([(tiny_model.config.bos_id, *tokens[:-1])]))
    log_probs = logits[0].float().log_softmax(-1)  # [T, V]
    log_probs[:, [tiny_model.config.bos_id, tiny_model.config.pad_id]] = float("-inf")  # never an output
    for t, step in enumerate(steps):
        row, choice = log_probs[t], step.forced
        assert abs(choice.log_prob - float(row[tokens[t]])) < TOL
        own = row[tokens[t]]
        assert 1 + int((row > own + TOL).sum()) <= choice.rank <= 1 + int((row > own - TOL).sum())  # float ties
        assert abs(choice.first_log_prob - float(row.max())) < TOL
    total = sum(step.forced.log_prob for step in steps)
    assert abs(float(steps[-1].finished[0].log_prob) - total) < 1e-4


def test_forced_tokens_are_checked(tiny_model):
    for bad in ((), (EOS, 5), (10_000,), (-1,)):
        with pytest.raises(ValueError):
            list(forced_steps(tiny_model, torch.tensor([5, EOS]), bad))


def test_score_translation_returns_the_ordinary_translation(tiny_model, tokenizer):
    """The Python API: pieces, steps with top-k and a ForcedChoice, an n-best list of one whose log-prob is the
    text's, and the trace of that pass; the JSON is the ordinary schema."""
    scored = score_translation(tiny_model, tokenizer, "The house is small.", "Das Haus ist klein.")
    assert scored.forced and scored.text == "Das Haus ist klein."
    assert scored.target_ids == (*tokenizer.encode("Das Haus ist klein."), EOS)
    assert len(scored.result.steps) == len(scored.target_ids) and len(scored.result.hypotheses) == 1
    total = sum(step.forced.log_prob for step in scored.result.steps)
    assert abs(scored.result.best.log_prob - total) < 1e-4
    assert scored.trace.weights("cross").shape[-2:] == (len(scored.target_ids), len(scored.source.ids))
    data = json.loads(json.dumps(translation_to_dict(scored, tokenizer, checkpoint="tiny")))
    assert abs(data["n_best"][0]["log_prob"] - total) < 1e-5
    assert all(step["rows"][0]["top_k"] and step["forced"]["rank"] >= 1 for step in data["steps"])
    assert not translate(tiny_model, tokenizer, "The house is small.").forced


def test_a_forced_multilingual_code_comes_first_and_adds_nothing(tiny_model, tokenizer):
    scored = score_translation(tiny_model, tokenizer, "The house is small.", "Das Haus",
                               DecodeConfig(forced_bos=7))
    assert scored.target_ids[0] == 7 and scored.result.steps[0].forced.log_prob == 0.0
    assert scored.result.steps[0].forced.rank == 1


def test_the_forced_text_is_bounded_like_the_source(tiny_model, tokenizer):
    """Empty text is refused; a long one is cut to the positions the model reads (its end and EOS dropped), a
    budget cuts it further, and the notes say so."""
    for empty in ("", "   ", "\u200b"):
        with pytest.raises(InputError):
            score_translation(tiny_model, tokenizer, "The house is small.", empty)
    source, ids, plan = planned_forced(tiny_model, tokenizer, "Hi.", "Haus " * 600)
    assert len(ids) == 1023 and EOS not in ids and any("cut to its first 1023" in n for n in plan.notes)
    source, ids, plan = planned_forced(tiny_model, tokenizer, "Hi.", "Haus " * 600, budget=Budget(max_bytes=2**20))
    assert len(ids) < 1023 and plan.decode.max_len == len(ids) and any("cut to its first" in n for n in plan.notes)
    steps = list(forced_steps(tiny_model, torch.tensor(source.ids), ids[:20], plan.decode))
    assert finish(tiny_model, tokenizer, source, steps, plan).notes == plan.notes


def run_main(capsys, *args):
    status = main(["translate", *args])
    out, err = capsys.readouterr()
    return status, out, err


def test_the_cli_scores_a_given_translation(tiny_checkpoint, tmp_path, capsys):
    out = tmp_path / "forced.json"
    status, stdout, err = run_main(capsys, "The house is small.", "--checkpoint", str(tiny_checkpoint),
                                   "--force", "Das Haus ist klein.", "--json", str(out))
    assert status == 0, err
    lines = stdout.splitlines()
    assert lines[0] == "Das Haus ist klein." and lines[1].startswith("log-prob ")
    data = json.loads(out.read_text())
    forced = [step["forced"] for step in data["steps"]]
    assert abs(data["n_best"][0]["log_prob"] - sum(f["log_prob"] for f in forced)) < 1e-4
    assert float(lines[1].split()[1]) == pytest.approx(data["n_best"][0]["log_prob"], abs=1e-4)
    rows = lines[3:]
    assert len(rows) == len(forced)
    for row, f in zip(rows, forced, strict=True):
        assert f"{math.exp(f['log_prob']):.4f}" in row and f" {f['rank']} " in f"{row} "
        said = f"{f['first_piece']} ({math.exp(f['first_log_prob']):.4f})"
        assert (said in row) == (f["rank"] > 1) and (len(row.split()) > 4) == (f["rank"] > 1)
    assert sum("part ways here" in row for row in rows) == (1 if any(f["rank"] > 1 for f in forced) else 0)
    for bad in (["--beam", "2"], ["--sample"], ["--keep-names"]):
        status, stdout, err = run_main(capsys, "Hi", "--checkpoint", str(tiny_checkpoint), "--force", "Hallo", *bad)
        assert status == 2 and err.startswith("error: --force") and len(err.splitlines()) == 1 and not stdout
    status, _, err = run_main(capsys, "Hi", "--checkpoint", str(tiny_checkpoint), "--force", " ")
    assert status == 2 and err == "error: Type the translation to score.\n"


def test_forced_steps_capture_nothing_when_asked(tiny_model):
    steps = list(forced_steps(tiny_model, torch.tensor([5, EOS]), (6, EOS), capture=Capture.NONE))
    assert all(step.attention is None and step.forced is not None for step in steps)


def test_gradient_requests_are_priced_and_fitted_before_they_run(tiny_model):
    """model.serving.budget.plan_gradients: cost grows with the steps; over the time budget the steps are cut and
    the note says so; a step that cannot fit at all is refused."""
    from model.serving.budget import BudgetError, gradient_cost, plan_gradients

    config = tiny_model.config
    assert gradient_cost(config, 10, 5, 64, 16).seconds > gradient_cost(config, 10, 5, 8, 16).seconds
    plan = plan_gradients(config, 10, 5, 32)
    assert plan.steps == 32 and not plan.notes
    cut = plan_gradients(config, 10, 5, 128, budget=Budget(max_seconds=gradient_cost(config, 10, 5, 40, 16).seconds))
    assert 1 <= cut.steps < 128 and "Steps 128 → " in cut.notes[0]
    with pytest.raises(BudgetError):
        plan_gradients(config, 10, 5, 8, budget=Budget(max_seconds=1e-6))
