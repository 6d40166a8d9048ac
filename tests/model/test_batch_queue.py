"""The batch queue (model/serving/batch_queue.py) with plain threads: concurrent sessions are decoded in fewer batches
than requests, each gets exactly its translation alone, one that leaves does not disturb the others, and an error
reaches
every member. A test's slot lets the leader start only once every request is queued, so the batches are known
without any timing."""
from __future__ import annotations

import threading
import time
from contextlib import contextmanager

import pytest
import torch

from model.network.config import DecodeConfig
from model.network.trace import KINDS
from model.serving.batch_queue import BatchQueue
from model.serving.inference import Cancelled, planned, translate
from tests.conftest import eos_leaning

TEXTS = ["The house is small.", "Where is the station?", "I would like to drink a cup of tea.", "Das Haus ist klein.",
         "She has read the book that you gave her yesterday."]
CONFIG = DecodeConfig(max_len=30)
WAIT_S = 30.0  # a bound on the test's own waits, so that a broken queue fails instead of hanging


@pytest.fixture(scope="module")
def model(tiny_model, tokenizer):
    return eos_leaning(tiny_model, tokenizer.eos_id)  # sentences end at different steps


def until(condition) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert time.monotonic() < deadline, "the queue did not get there"
        time.sleep(0.005)


def gate(queue: BatchQueue, n: int):
    """A slot the first leader holds only once ``n`` requests are queued (they all join its batch); later leaders
    take it at once."""
    opened = threading.Event()

    @contextmanager
    def slot():
        if not opened.is_set():
            until(lambda: queue.queued >= n)
            opened.set()
        yield
    return slot


def in_threads(work, n: int) -> list:
    """work(i) in n threads at once -> their results (or the exception each raised), in order."""
    results: list = [None] * n

    def run(i: int) -> None:
        try:
            results[i] = work(i)
        except BaseException as exc:  # the test inspects it (Cancelled is a BaseException)
            results[i] = exc
    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT_S)
    assert not any(thread.is_alive() for thread in threads)
    return results


def assert_same_translation(got, alone) -> None:
    assert (got.target_ids, got.text) == (alone.target_ids, alone.text)
    for kind in KINDS:
        torch.testing.assert_close(got.trace.weights(kind), alone.trace.weights(kind), atol=1e-5, rtol=0)


def test_concurrent_sessions_share_batches_and_each_gets_its_own_translation(model, tokenizer):
    queue = BatchQueue()
    prepared = [planned(model, tokenizer, text, CONFIG) for text in TEXTS]
    results = in_threads(lambda i: queue.translate(model, tokenizer, *prepared[i], gate(queue, len(TEXTS))),
                         len(TEXTS))
    for text, got in zip(TEXTS, results, strict=True):
        assert_same_translation(got, translate(model, tokenizer, text, CONFIG))
    assert list(queue.batch_sizes) == [len(TEXTS)]  # one batch for five requests
    assert queue.queued == 0


def test_a_batch_takes_at_most_max_batch_and_the_rest_lead_the_next(model, tokenizer):
    queue = BatchQueue(max_batch=2)
    prepared = [planned(model, tokenizer, text, CONFIG) for text in TEXTS]
    slot = gate(queue, len(TEXTS))
    results = in_threads(lambda i: queue.translate(model, tokenizer, *prepared[i], slot), len(TEXTS))
    for text, got in zip(TEXTS, results, strict=True):
        assert_same_translation(got, translate(model, tokenizer, text, CONFIG))
    assert list(queue.batch_sizes) == [2, 2, 1]


def test_a_member_that_leaves_does_not_break_the_others(model, tokenizer):
    queue = BatchQueue()
    prepared = [planned(model, tokenizer, text, CONFIG) for text in TEXTS[:3]]
    leaving = threading.Event()

    def follow(i: int):
        member = queue.submit(model, tokenizer, *prepared[i], gate(queue, 3),
                              should_stop=leaving.is_set if i == 0 else None)
        if i == 0:
            for _ in member.steps():
                leaving.set()  # leaves after its first step
        return member.translation()
    results = in_threads(follow, 3)
    assert isinstance(results[0], Cancelled)
    for text, got in zip(TEXTS[1:3], results[1:], strict=True):
        assert_same_translation(got, translate(model, tokenizer, text, CONFIG))
    assert list(queue.batch_sizes) == [3]


class Stepping:
    """The model, its decoding steps counted; ``before_step(n)`` runs before step n (1-based)."""

    def __init__(self, model, before_step) -> None:
        self.model, self.config, self.before_step, self.steps = model, model.config, before_step, 0

    def parameters(self):
        return self.model.parameters()

    def start(self, *args, **kwargs):
        return self.model.start(*args, **kwargs)

    def first_step_rows(self, beam_size):
        return self.model.first_step_rows(beam_size)

    def step(self, *args, **kwargs):
        self.steps += 1
        self.before_step(self.steps)
        return self.model.step(*args, **kwargs)


def test_a_batch_every_member_left_stops_within_one_step(tiny_model, tokenizer):
    queue, members = BatchQueue(), []
    stop = threading.Event()

    def before_step(n: int) -> None:
        if n == 2:  # every member has seen step 1 and left before step 2 is made
            until(lambda: len(members) == 2 and all(m.left for m in members))
    engine = Stepping(tiny_model, before_step)  # a random model: no sentence ends within 60 steps
    prepared = [planned(engine, tokenizer, text, DecodeConfig(max_len=60)) for text in TEXTS[:2]]
    assert all(len(translate(tiny_model, tokenizer, text, DecodeConfig(max_len=60)).target_ids) > 2
               for text in TEXTS[:2])

    def follow(i: int):
        members.append(member := queue.submit(engine, tokenizer, *prepared[i], gate(queue, 2), stop.is_set))
        for _ in member.steps():
            stop.set()
    results = in_threads(follow, 2)
    assert all(isinstance(r, Cancelled) for r in results), results
    until(lambda: queue.queued == 0 and not queue._leader)  # the worker has finished
    assert engine.steps <= 2  # the step that was running when the last one left, at most


def test_while_a_slot_is_free_a_request_does_not_wait_for_a_running_batch(model, tokenizer):
    """Two sessions on a server with two slots decode side by side, as before batching: the second request leads a
    batch of its own at once instead of queueing behind the first one's. The first one's step waits until both
    slots are held, so a queue that made the second wait would fail here (after WAIT_S), not pass by timing."""
    queue, slots, held, both_held = BatchQueue(), threading.Semaphore(2), [], threading.Event()

    @contextmanager
    def slot():
        with slots:
            held.append(1)
            if len(held) == 2:  # an event, not len(held) polled: the second batch may finish (and give its slot
                both_held.set()  # back) before the blocked first step polls again, on a loaded machine
            try:
                yield
            finally:
                held.pop()
    engine = Stepping(model, lambda n: until(both_held.is_set) if n == 1 else None)
    prepared = [planned(engine, tokenizer, text, CONFIG) for text in TEXTS[:2]]

    def follow(i: int):
        if i == 1:  # the first request's batch has formed (its slot held, the queue taken): a request before that
            until(lambda: len(queue.batch_sizes) == 1)  # moment joins it, which is batching, not waiting
        return queue.translate(engine, tokenizer, *prepared[i], slot)
    results = in_threads(follow, 2)
    for text, got in zip(TEXTS[:2], results, strict=True):
        assert_same_translation(got, translate(model, tokenizer, text, CONFIG))
    assert list(queue.batch_sizes) == [1, 1]


def test_an_error_in_a_batch_reaches_every_member(model, tokenizer):
    queue = BatchQueue()

    def broken(n: int) -> None:
        if n == 1:  # before any sentence could end
            raise RuntimeError("the step failed")
    engine = Stepping(model, broken)
    prepared = [planned(engine, tokenizer, text, DecodeConfig(max_len=60)) for text in TEXTS[:3]]
    results = in_threads(lambda i: queue.translate(engine, tokenizer, *prepared[i], gate(queue, 3)), 3)
    assert all(isinstance(r, RuntimeError) and "the step failed" in str(r) for r in results)


def test_no_slot_reaches_every_queued_member_and_the_queue_recovers(model, tokenizer):
    queue = BatchQueue()

    class Busy(RuntimeError):
        pass

    @contextmanager
    def busy():
        until(lambda: queue.queued >= 3)
        raise Busy("no slot")
        yield
    prepared = [planned(model, tokenizer, text, CONFIG) for text in TEXTS[:3]]
    results = in_threads(lambda i: queue.translate(model, tokenizer, *prepared[i], busy), 3)
    assert all(isinstance(r, Busy) for r in results)
    again = queue.translate(model, tokenizer, *prepared[0], gate(queue, 1))
    assert_same_translation(again, translate(model, tokenizer, TEXTS[0], CONFIG))


def test_only_greedy_requests_are_queued(model, tokenizer):
    source, plan = planned(model, tokenizer, TEXTS[0], DecodeConfig(beam_size=3))
    with pytest.raises(ValueError, match="greedy"):
        BatchQueue().submit(model, tokenizer, source, plan, gate(BatchQueue(), 0))
