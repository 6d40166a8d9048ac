import math
from dataclasses import dataclass

import pytest
import torch
from torch import nn

from model.decoding.search import beam_search, beam_steps, greedy_decode, greedy_steps, length_penalty
from model.network.attention import Capture
from model.network.config import DecodeConfig, ModelConfig
from model.network.transformer import StepOutput

SRC = torch.tensor([5, 6, 7, 8, 9, 3])


def test_beam_size_one_equals_greedy(tiny_model):
    for src in (SRC, torch.tensor([10, 11, 3]), torch.tensor([12, 3])):
        config = DecodeConfig(beam_size=1, max_len=12)
        greedy, beam = greedy_decode(tiny_model, src, config), beam_search(tiny_model, src, config)
        assert greedy.best.tokens == beam.best.tokens
        assert greedy.best.log_prob == pytest.approx(beam.best.log_prob, abs=1e-6)
        assert len(greedy.steps) == len(beam.steps)


@pytest.mark.parametrize("beam", [1, 3])
def test_attention_rows_stacked_over_steps_equal_one_teacher_forced_forward(tiny_model, beam):
    result = beam_search(tiny_model, SRC, DecodeConfig(beam_size=beam, max_len=9))
    for hyp in result.hypotheses:
        rows = result.attention_for(hyp)
        tgt_in = torch.tensor([(2, *hyp.tokens[:-1])])
        with torch.no_grad():
            _, trace = tiny_model(SRC[None], tgt_in, capture=Capture.WEIGHTS)
        assert torch.allclose(rows.weights("cross"), trace.weights("cross"), atol=1e-5)
        assert torch.allclose(rows.weights("dec_self"), trace.weights("dec_self"), atol=1e-5)


def test_decoding_stops_at_max_length_without_eos(tiny_model):
    for decode in (greedy_decode, beam_search):
        result = decode(tiny_model, SRC, DecodeConfig(beam_size=2 if decode is beam_search else 1, max_len=4))
        assert len(result.steps) <= 4
        assert all(len(h.tokens) <= 4 for h in result.hypotheses)
        assert result.steps[-1].done


def test_each_step_reports_topk_probabilities_and_prefixes(tiny_model):
    steps = list(greedy_steps(tiny_model, SRC, DecodeConfig(max_len=5, top_k=4)))
    for t, step in enumerate(steps):
        assert step.prefixes.shape == (1, t + 1) and step.prefixes[0, 0] == 2
        assert step.topk_probs.shape == (1, 4) and (step.topk_probs[0, :-1] >= step.topk_probs[0, 1:]).all()
        assert step.dec_self.shape[-1] == t + 1 and step.cross.shape[-1] == SRC.numel()


# A fake model whose next-token distribution is a fixed table keyed by the prefix, to pin beam search.
PAD, UNK, BOS, EOS, A, B = range(6)


@dataclass
class FakeState:
    prefixes: list[tuple[int, ...]]

    def reorder(self, index):
        return FakeState([self.prefixes[i] for i in index.tolist()])


class TableModel(nn.Module):
    def __init__(self, table):
        super().__init__()
        self.config = ModelConfig(vocab_size=6, d_model=4, n_heads=1, n_encoder_layers=1, n_decoder_layers=1, d_ff=4)
        self.dummy = nn.Parameter(torch.zeros(1))
        self.table = table

    def start(self, src, capture=Capture.NONE, head_mask=None):
        return FakeState([()]), []

    def first_step_rows(self, beam_size):
        return 1

    def step(self, state, tokens, capture=Capture.NONE):
        prefixes = [(*p, t) for p, t in zip(state.prefixes, tokens[:, 0].tolist(), strict=True)]
        rows = []
        for p in prefixes:
            probs = torch.full((6,), 1e-6)
            for token, prob in self.table.get(p[1:], {}).items():
                probs[token] = prob
            rows.append((probs / probs.sum()).log())
        return StepOutput(torch.stack(rows), FakeState(prefixes))


# From BOS: EOS 0.40, A 0.35, B 0.25. After A: B 0.9; after A B: EOS 0.9. After B: EOS 0.5, A 0.5.
TABLE = {(): {EOS: 0.40, A: 0.35, B: 0.25}, (A,): {B: 0.9, EOS: 0.1}, (A, B): {EOS: 0.9, A: 0.1},
         (B,): {EOS: 0.5, A: 0.5}, (B, A): {EOS: 1.0}, (A, B, A): {EOS: 1.0}}


def test_length_penalty_formula():
    assert length_penalty(7, 0.0) == 1.0
    assert length_penalty(7, 1.0) == pytest.approx(2.0)
    assert length_penalty(1, 0.6) == 1.0


def test_crafted_distribution_pins_beam_order_and_length_penalty():
    model = TableModel(TABLE)
    raw = beam_search(model, torch.tensor([4, 3]), DecodeConfig(beam_size=2, max_len=5, length_penalty=0.0))
    # raw log-probs: [EOS] = log .40 = -0.92 beats [A B EOS] = log(.35*.9*.9) = -1.27
    assert [h.tokens for h in raw.hypotheses] == [(EOS,), (A, B, EOS)]
    assert raw.best.log_prob == pytest.approx(math.log(0.40), abs=1e-4)
    long = beam_search(model, torch.tensor([4, 3]), DecodeConfig(beam_size=2, max_len=5, length_penalty=2.0))
    # alpha 2: [A B EOS] scores -1.27 / (8/6)^2 = -0.71, better than -0.92 / 1
    assert [h.tokens for h in long.hypotheses] == [(A, B, EOS), (EOS,)]
    assert long.best.score == pytest.approx(math.log(0.35 * 0.9 * 0.9) / (8 / 6) ** 2, abs=1e-4)


def test_beam_keeps_two_x_candidates_so_finished_hypotheses_do_not_starve_it():
    steps = list(beam_steps(TableModel(TABLE), torch.tensor([4, 3]), DecodeConfig(beam_size=2, max_len=5)))
    first = steps[0]
    assert len(first.candidates) == 4
    assert [(c.token, c.status) for c in first.candidates[:3]] == [(EOS, "finished"), (A, "kept"), (B, "kept")]
    assert first.beams.tolist() == [[BOS, A], [BOS, B]] and first.parents.tolist() == [0, 0]
    assert len(first.finished) == 1


def test_greedy_never_emits_bos_or_pad(tiny_model):
    result = greedy_decode(tiny_model, SRC, DecodeConfig(max_len=10))
    assert not {0, 2} & set(result.best.tokens)
