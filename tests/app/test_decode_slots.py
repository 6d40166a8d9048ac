"""The process-wide limit on concurrent decoding (app.serving.scheduler.DecodeSlots / SLOTS).

No timing assertions: threads and events say who holds a slot and who waits. Timeouts below only bound how
long a broken test may hang.
"""
from __future__ import annotations

import threading

import pytest

from app.serving import scheduler as translation
from app.serving.scheduler import MAX_CONCURRENT_TRANSLATIONS, SLOTS, DecodeSlots, ServerBusy, waiting_message
from model.network.config import Sampling
from model.serving import inference
from model.serving.batch_queue import BatchQueue
from model.serving.inference import Cancelled

HANG_S = 30  # a generous bound for waits that must succeed; never reached when the code is right


class Holder(threading.Thread):
    """Takes a slot (reporting when it starts waiting), holds it until told to let go."""

    def __init__(self, slots: DecodeSlots) -> None:
        super().__init__(daemon=True)
        self.slots = slots
        self.waiting = threading.Event()
        self.acquired = threading.Event()
        self.let_go = threading.Event()
        self.error: BaseException | None = None

    def on_wait(self, running: int, waited_s: float) -> None:
        self.seen_running = running
        self.waiting.set()

    def run(self) -> None:
        try:
            with self.slots.slot(on_wait=self.on_wait, timeout=HANG_S):
                self.acquired.set()
                self.let_go.wait(HANG_S)
        except BaseException as exc:  # reported to the test
            self.error = exc


def test_default_limit_is_the_core_count_of_the_serving_machine():
    assert MAX_CONCURRENT_TRANSLATIONS == 2
    assert SLOTS.limit == MAX_CONCURRENT_TRANSLATIONS
    with pytest.raises(ValueError):
        DecodeSlots(0)


def test_a_third_request_waits_while_two_hold_the_slots_and_proceeds_when_one_releases():
    slots = DecodeSlots(2)
    first, second, third = Holder(slots), Holder(slots), Holder(slots)
    for holder in (first, second):
        holder.start()
        assert holder.acquired.wait(HANG_S)
    assert not first.waiting.is_set() and not second.waiting.is_set()  # free slots are taken without waiting
    assert slots.running == 2

    third.start()
    assert third.waiting.wait(HANG_S), "the third request never reported that it waits"
    assert not third.acquired.is_set()
    assert third.seen_running == 2
    assert slots.waiting == 1

    first.let_go.set()
    first.join(HANG_S)
    assert third.acquired.wait(HANG_S), "the third request did not get the freed slot"
    assert slots.running == 2 and slots.waiting == 0

    for holder in (second, third):
        holder.let_go.set()
        holder.join(HANG_S)
    assert slots.running == 0
    assert all(h.error is None for h in (first, second, third))


def test_a_wait_past_the_limit_raises_server_busy_and_leaves_the_counts_sound():
    slots = DecodeSlots(1)
    holder = Holder(slots)
    holder.start()
    assert holder.acquired.wait(HANG_S)
    notes = []
    with pytest.raises(ServerBusy, match="busy"):
        slots.acquire(on_wait=lambda running, waited: notes.append(running), timeout=0.0)
    assert notes == [1]  # the page was told once that it waits, then got a clear message instead of hanging
    assert slots.waiting == 0 and slots.running == 1
    holder.let_go.set()
    holder.join(HANG_S)
    with slots.slot(timeout=0.0):  # the slot was not leaked by the failed wait
        assert slots.running == 1


def test_an_interrupted_wait_takes_no_slot():
    """Streamlit stops a run (a BaseException) at the next element update, here the waiting note."""
    class Rerun(BaseException):
        pass

    def interrupt(running: int, waited_s: float) -> None:
        raise Rerun

    slots = DecodeSlots(1)
    slots.acquire()
    with pytest.raises(Rerun):
        slots.acquire(on_wait=interrupt, timeout=HANG_S)
    assert slots.waiting == 0 and slots.running == 1
    slots.release()
    assert slots.running == 0


def test_paused_gives_the_slot_to_a_waiting_request_and_takes_one_back():
    slots = DecodeSlots(1)
    waiter = Holder(slots)
    with slots.slot() as slot:
        waiter.start()
        assert waiter.waiting.wait(HANG_S)
        with slot.paused():
            assert waiter.acquired.wait(HANG_S), "a paused slot was not given to the waiting request"
            waiter.let_go.set()  # it finishes; the paused holder then gets its slot back
        assert slot.held and slots.running == 1
    assert not slot.held and slots.running == 0
    waiter.join(HANG_S)
    assert waiter.error is None


def test_waiting_message_names_the_running_translations():
    assert waiting_message(2, 3.2) == "Waiting for a free model slot (2 translations running)… 3 s"
    assert "(1 translation running)" in waiting_message(1, 0)


@pytest.fixture
def all_slots_taken():
    """Every slot of the server-wide SLOTS held by the test (as if other sessions were decoding)."""
    for _ in range(SLOTS.limit):
        SLOTS.acquire(timeout=HANG_S)
    held = [SLOTS.limit]

    def release_one() -> None:
        held[0] -= 1
        SLOTS.release()
    yield release_one
    for _ in range(held[0]):
        SLOTS.release()


def test_translate_page_says_the_server_is_busy_after_the_wait_limit(app_test, all_slots_taken, monkeypatch):
    monkeypatch.setattr(translation, "SLOT_WAIT_S", 0.0)
    at = app_test()
    at.text_area(key="text").input("b u s y")
    at.button(key="translate").click().run()
    assert not at.exception
    assert any("server is busy" in w.value for w in at.warning), [w.value for w in at.warning]
    assert not at.get("plotly_chart")  # nothing was translated
    assert SLOTS.waiting == 0


def test_translate_page_waits_for_a_slot_then_translates(app_test, all_slots_taken):
    freed = threading.Event()

    def free_one_when_the_page_waits() -> None:
        for _ in range(HANG_S * 100):
            if SLOTS.waiting:
                all_slots_taken()
                freed.set()
                return
            threading.Event().wait(0.01)

    helper = threading.Thread(target=free_one_when_the_page_waits, daemon=True)
    helper.start()
    at = app_test()
    at.text_area(key="text").input("w a i t")
    at.button(key="translate").click().run()
    helper.join(HANG_S)
    assert freed.is_set(), "the Translate page never waited for a slot"
    assert not at.exception
    assert not at.warning
    shown = [m.value for m in at.markdown if "font-size:1.9rem" in m.value]
    assert shown and "t i a w" in shown[0]
    assert SLOTS.running == SLOTS.limit - 1  # the page gave its slot back; the test still holds the others


def test_concept_pages_wait_for_a_slot_too(app_test, all_slots_taken, monkeypatch):
    """translate_request (used by every concept page) takes a slot as well: with none free it says so."""
    monkeypatch.setattr(translation, "SLOT_WAIT_S", 0.0)
    at = app_test(page="app/views/masks.py", text="n o s l o t")
    assert not at.exception
    assert any("server is busy" in w.value for w in at.warning), [w.value for w in at.warning]


class HeavyHolder(Holder):
    def run(self) -> None:
        try:
            with self.slots.slot(on_wait=self.on_wait, timeout=HANG_S, heavy=True):
                self.acquired.set()
                self.let_go.wait(HANG_S)
        except BaseException as exc:  # reported to the test
            self.error = exc


def test_heavy_requests_never_take_the_last_slot_so_light_ones_get_through():
    """Policy: a decode estimated over HEAVY_S may use all slots but one; a light one may use any."""
    slots = DecodeSlots(2)
    heavy, second_heavy, light = HeavyHolder(slots), HeavyHolder(slots), Holder(slots)
    heavy.start()
    assert heavy.acquired.wait(HANG_S)
    second_heavy.start()
    assert second_heavy.waiting.wait(HANG_S) and not second_heavy.acquired.is_set()  # one slot is kept for light
    light.start()
    assert light.acquired.wait(HANG_S), "a light request waited behind heavy ones"
    assert not light.waiting.is_set()
    light.let_go.set()
    light.join(HANG_S)
    assert not second_heavy.acquired.is_set()  # the free slot is still not for a second heavy one
    heavy.let_go.set()
    heavy.join(HANG_S)
    assert second_heavy.acquired.wait(HANG_S)
    second_heavy.let_go.set()
    second_heavy.join(HANG_S)
    assert slots.running == 0 and all(h.error is None for h in (heavy, second_heavy, light))


def test_a_class_opening_the_same_link_decodes_it_once(monkeypatch):
    """Eight sessions asking for the same translation at once: one decodes, the others wait for its result."""
    translation.store.clear()
    decodes, started, go_on = [], threading.Event(), threading.Event()
    real_stream = inference.stream

    def counted_stream(*args, **kwargs):
        decodes.append(1)
        started.set()
        go_on.wait(HANG_S)  # keep it in flight until every session has asked
        return real_stream(*args, **kwargs)

    monkeypatch.setattr(inference, "stream", counted_stream)  # what translate() decodes with
    request = translation.Request(model_name="reverse", text="s h a r e d")
    results, errors = [], []

    def ask() -> None:
        try:
            results.append(translation.translate_request(request, on_wait=lambda *_: None,
                                                         should_stop=lambda: False))
        except BaseException as exc:  # reported to the test
            errors.append(exc)

    threads = [threading.Thread(target=ask, daemon=True) for _ in range(8)]
    threads[0].start()
    assert started.wait(HANG_S)
    for thread in threads[1:]:
        thread.start()
    while translation.IN_FLIGHT._jobs and next(iter(translation.IN_FLIGHT._jobs.values())).waiters < 7:
        threading.Event().wait(0.01)
    go_on.set()
    for thread in threads:
        thread.join(HANG_S)
    assert not errors and len(results) == 8 and len(decodes) == 1
    assert all(r is results[0] for r in results) and results[0].text == "d e r a h s"


def test_an_abandoned_decode_stops_unless_another_session_waits_for_it(monkeypatch):
    translation.store.clear()
    request = translation.Request(model_name="reverse", text="a b a n d o n e d", max_len=60)
    steps = []
    real_stream = inference.stream

    def counted(*args, **kwargs):
        for step in real_stream(*args, **kwargs):
            steps.append(step)
            yield step

    monkeypatch.setattr(inference, "stream", counted)
    with pytest.raises(Cancelled):
        translation.translate_request(request, on_wait=lambda *_: None, should_stop=lambda: True)
    assert len(steps) == 1 and translation.store().get(request) is None and not translation.IN_FLIGHT._jobs
    assert translation.translate_request(request, should_stop=lambda: False).text == "d e n o d n a b a"


def test_a_room_of_different_greedy_requests_decodes_as_one_batch_in_one_slot(all_slots_taken, monkeypatch):
    """Six sessions translating six sentences while every slot is taken: once one slot frees, the first of them
    leads, and all six decode as one batch in that slot, each getting its own translation."""
    translation.store.clear()
    monkeypatch.setattr(translation, "BATCHES", BatchQueue())
    texts = [" ".join(word) for word in ("room", "hall", "class", "lecture", "students", "a")]
    results, errors = {}, []

    def ask(text: str) -> None:
        try:
            results[text] = translation.translate_request(translation.Request(model_name="reverse", text=text),
                                                          on_wait=lambda *_: None, should_stop=lambda: False)
        except BaseException as exc:  # reported to the test
            errors.append(exc)

    threads = [threading.Thread(target=ask, args=(text,), daemon=True) for text in texts]
    for thread in threads:
        thread.start()
    for _ in range(HANG_S * 100):
        if translation.BATCHES.queued == len(texts):
            break
        threading.Event().wait(0.01)
    all_slots_taken()  # one slot frees: the waiting leader takes it with every request queued by then
    for thread in threads:
        thread.join(HANG_S)
    assert not errors and list(translation.BATCHES.batch_sizes) == [len(texts)]
    assert {text: r.text for text, r in results.items()} == {text: text[::-1] for text in texts}
    assert SLOTS.running == SLOTS.limit - 1  # the batch gave its one slot back


def test_beam_search_and_sampling_decode_alone(monkeypatch):
    translation.store.clear()
    monkeypatch.setattr(translation, "BATCHES", BatchQueue())
    for request in (translation.Request(model_name="reverse", text="b e a m", beam_size=3),
                    translation.Request(model_name="reverse", text="s a m p l e", sampling=Sampling(temperature=0.0))):
        translation.translate_request(request, on_wait=lambda *_: None, should_stop=lambda: False)
    assert list(translation.BATCHES.batch_sizes) == []
