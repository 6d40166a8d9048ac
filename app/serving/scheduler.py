"""Translations of the current sentence, cached per (model, text, settings) and shared by every page.

The cache is a small LRU shared by all sessions (a Translation is frozen and never mutated), so a
sentence translated on the Translate page is instantly available on the Masks or Mechanics page,
and a class of students typing the lecturer's example hits the cache.

Decoding is bounded, and fair to a whole room:
- every request is priced before it starts and reduced to the budget (model.serving.budget.plan_decode);
- at most MAX_CONCURRENT_TRANSLATIONS translations run at once in this server process (``SLOTS``), and a heavy one
  (estimated over HEAVY_S seconds) may take all but one of them, so one heavy request never holds up the light
  ones; the others wait their turn, say so on the page while they wait, and give up with ServerBusy after
  SLOT_WAIT_S seconds instead of hanging;
- the same request asked by many sessions at once (a class opening the lecturer's link) is decoded once: the
  others wait for it (``IN_FLIGHT``) and get the cached result;
- a decode stops within one step when its session leaves, reruns or changes a widget (app.serving.cancel), unless other
  sessions are waiting for the same result;
- different greedy requests asked at once (a lecture hall pressing Translate) decode side by side while a slot is
  free and, once every slot is taken, gather into one batch for the next free one (``BATCHES``,
  model.serving.batch_queue), each getting exactly what it would have got alone.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import streamlit as st

from app.checks.paragraphs import sentence_of
from app.models.registry import decode_rules, load_model
from app.serving.cancel import session_stop_signal
from app.serving.memory import give_back
from app.serving.sized_lru import SizedLRU
from model.checkpoints.files import Checkpoint
from model.decoding.batch_decoding import batchable
from model.network.config import DecodeConfig, Sampling
from model.serving.batch_queue import BatchQueue
from model.serving.budget import Plan
from model.serving.inference import Source, StopSignal, Translation, check_stop, planned, translate

MAX_INPUT_CHARS = 8000  # the text box refuses more; the model reads at most MAX_POSITIONS pieces of it
# How many translations may decode at the same time in one server process: the core count of the machine the
# app is served from (2). Each decode runs on one intra-op thread (streamlit_app.py sets OMP_NUM_THREADS=1), so
# two slots keep both cores busy; more would only make every session slower (and use more memory at once).
# Raise it on a bigger machine. Cached translations, figures and head switches never take a slot.
MAX_CONCURRENT_TRANSLATIONS = 2
HEAVY_S = 3.0  # estimated seconds of compute (model.serving.budget.decode_cost) from which a decode counts as heavy
SLOT_WAIT_S = 60.0  # a translation that waits longer for a slot gives up with ServerBusy (a message, not a hang)
WAIT_POLL_S = 0.5  # how often a waiting session refreshes its "waiting" note (which lets Streamlit stop the run)

OnWait = Callable[[int, float], None]  # (translations running, or -1 when waiting for the same one; seconds waited)


class ServerBusy(RuntimeError):
    """No decoding slot became free within the wait limit; the message is meant for the user."""


def waiting_message(running: int, waited_s: float) -> str:
    plural = "translation" if running == 1 else "translations"
    return f"Waiting for a free model slot ({running} {plural} running)… {waited_s:.0f} s"


class DecodeSlots:
    """A process-wide limit on concurrent decoding: at most ``limit`` holders at a time, the others wait.

    ``acquire`` waits in short rounds and calls ``on_wait(running, waited_s)`` before each round, so a page can
    show that it waits (and Streamlit can stop a run whose user changed a widget meanwhile: it does so at the
    next element update). It raises ServerBusy after ``timeout`` seconds (SLOT_WAIT_S by default).
    """

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError(f"need at least one decoding slot, got {limit}")
        self.limit = limit
        self._slots = threading.BoundedSemaphore(limit)
        self._heavy = threading.BoundedSemaphore(max(1, limit - 1))  # a heavy decode takes one of these as well
        self._lock = threading.Lock()
        self._running = 0
        self._waiting = 0

    @property
    def running(self) -> int:
        """Translations holding a slot now."""
        with self._lock:
            return self._running

    @property
    def waiting(self) -> int:
        """Translations waiting for a slot now."""
        with self._lock:
            return self._waiting

    def acquire(self, on_wait: OnWait | None = None, timeout: float | None = None, heavy: bool = False) -> None:
        """Take a slot, waiting as the class docstring says; a heavy decode first takes a heavy pass (all slots
        but one), so a light request always finds a slot once the running light ones finish."""
        timeout = SLOT_WAIT_S if timeout is None else timeout
        if not heavy:
            self._take(self._slots, on_wait, timeout)
            return
        start = time.monotonic()
        self._take(self._heavy, on_wait, timeout, count=False)
        try:
            self._take(self._slots, on_wait, max(0.0, timeout - (time.monotonic() - start)))
        except BaseException:
            self._heavy.release()
            raise

    def _take(self, semaphore: threading.BoundedSemaphore, on_wait: OnWait | None, timeout: float,
              count: bool = True) -> None:
        """Acquire one semaphore in WAIT_POLL_S rounds, calling on_wait before each; ServerBusy after timeout."""
        if not semaphore.acquire(blocking=False):
            with self._lock:
                self._waiting += 1
            try:
                start = time.monotonic()
                while True:
                    waited = time.monotonic() - start
                    if on_wait is not None:
                        on_wait(self.running, waited)
                    if waited >= timeout:
                        raise ServerBusy(f"The server is busy: all {self.limit} model slots stayed taken for "
                                         f"{timeout:.0f} s. Please try again in a minute.")
                    if semaphore.acquire(timeout=min(WAIT_POLL_S, max(0.0, timeout - waited))):
                        break
            finally:
                with self._lock:
                    self._waiting -= 1
        if count:
            with self._lock:
                self._running += 1

    def release(self, heavy: bool = False) -> None:
        with self._lock:
            self._running -= 1
        self._slots.release()
        if heavy:
            self._heavy.release()

    def slot(self, on_wait: OnWait | None = None, timeout: float | None = None, heavy: bool = False) -> Slot:
        """``with slots.slot(on_wait) as held:`` decode while holding one slot (``held.paused()`` gives it back
        for a while); ``heavy`` for a decode estimated over HEAVY_S seconds."""
        return Slot(self, on_wait, timeout, heavy)


class Slot:
    """One held decoding slot (a context manager); ``held`` says whether it is held right now."""

    def __init__(self, slots: DecodeSlots, on_wait: OnWait | None, timeout: float | None, heavy: bool = False) -> None:
        self._slots, self._on_wait, self._timeout, self._heavy = slots, on_wait, timeout, heavy
        self.held = False

    def __enter__(self) -> Slot:
        self._slots.acquire(self._on_wait, self._timeout, self._heavy)
        self.held = True
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self.held:
            self.held = False
            self._slots.release(self._heavy)

    @contextmanager
    def paused(self) -> Iterator[None]:
        """Give the slot back while the body runs (slow motion sleeps without holding a core), then wait for a
        slot again. If the body raises, the slot is not taken back."""
        if self.held:
            self.held = False
            self._slots.release(self._heavy)
        yield
        self._slots.acquire(self._on_wait, self._timeout, self._heavy)
        self.held = True


SLOTS = DecodeSlots(MAX_CONCURRENT_TRANSLATIONS)  # one per server process, shared by every session


@dataclass(frozen=True)
class Request:
    model_name: str
    text: str
    beam_size: int = 1
    max_len: int = 60
    length_penalty: float = 0.6
    sampling: Sampling | None = None  # draw each piece instead of searching (then the beam is 1)
    # The model's own rules (app.models.registry.decode_rules): EOS at the length limit, the piece forced first (the
    # chosen target language of mBART-50, M2M100 or NLLB, or BART-large's <s>), no repeated n-gram, generate()'s |Y|^α
    # and
    # its stopping rule.
    forced_eos: bool = False
    forced_bos: int | None = None
    no_repeat_ngram: int = 0
    length_penalty_formula: str = "gnmt"
    early_stopping: bool | str = True  # when beam search stops (model.decoding.beam_stopping)
    keep_words: bool = False  # keep the source's names and numbers (beam search of a model with a copy lexicon)

    @property
    def decode_config(self) -> DecodeConfig:
        beam = 1 if self.sampling is not None else self.beam_size
        return DecodeConfig(beam_size=beam, max_len=self.max_len, length_penalty=self.length_penalty,
                            sampling=self.sampling, forced_eos=self.forced_eos, forced_bos=self.forced_bos,
                            no_repeat_ngram=self.no_repeat_ngram, length_penalty_formula=self.length_penalty_formula,
                            early_stopping=self.early_stopping, keep_words=self.keep_words and beam > 1)


CACHE_ENTRIES, CACHE_BYTES = 128, 256 * 2**20  # translations shared by every session: at most this many and this much


class TranslationStore(SizedLRU[Request, Translation]):
    """Thread-safe LRU of finished translations, bounded by count and by the memory their tensors hold (a long
    paragraph's trace is ~18 MB, a sentence's well under 1 MB, a hostile link's ~160 MB): the server's memory stays
    flat however long a class keeps typing. Sessions keep no translation of their own (app.serving.weak_fragment), so
    one that leaves this store is freed."""

    def __init__(self, capacity: int = CACHE_ENTRIES, max_bytes: int = CACHE_BYTES) -> None:
        super().__init__(capacity, max_bytes, size=_translation_bytes)


def _translation_bytes(translation: Translation) -> int:
    return translation.nbytes


@st.cache_resource
def store() -> TranslationStore:
    return TranslationStore()


def current_request() -> Request:
    s = st.session_state
    sampling = Sampling(temperature=float(s["temperature"]), top_k=int(s["sample_top_k"]), top_p=float(s["top_p"]),
                        seed=int(s["seed"])) if s.get("sample") else None
    text = sentence_of(s["text"], int(s.get("sentence", 0)))  # a paragraph is translated sentence by sentence
    keep = bool(s.get("keep_names")) and can_keep_names(s["model_name"])
    return Request(model_name=s["model_name"], text=text, beam_size=int(s["beam_size"]), max_len=int(s["max_len"]),
                   length_penalty=float(s["length_penalty"]), sampling=sampling, keep_words=keep,
                   **decode_rules(s["model_name"], s.get("target_lang")))


def can_keep_names(model_name: str) -> bool:
    """Whether a model knows which source words German keeps (its checkpoint ships a copy lexicon)."""
    return load_model(model_name).copy_lexicon is not None


@contextmanager
def waiting_note() -> Iterator[OnWait]:
    """An ``on_wait`` callback that shows a "waiting for a slot" note where the page is being drawn, only once it
    actually waits; the note goes away afterwards, or says that the server is busy if the wait timed out."""
    box = None

    def show(running: int, waited_s: float) -> None:
        nonlocal box
        if box is None:
            box = st.empty()
        text = shared_waiting_message(waited_s) if running < 0 else waiting_message(running, waited_s)
        box.info(text, icon=":material/hourglass_top:")

    try:
        yield show
    except ServerBusy as exc:
        if box is not None:
            box.warning(str(exc), icon=":material/hourglass_disabled:")
        raise
    except Exception:
        if box is not None:
            box.empty()
        raise
    if box is not None:
        box.empty()


class Job:
    """One decode in progress that other sessions may wait for: ``done`` is set when it ends (well or not)."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.waiters = 0  # sessions waiting for this result (guarded by InFlight's lock)


class InFlight:
    """The requests being decoded now, so that a class opening the same link at once decodes it once: the first
    session decodes, the others wait for its result (and take over if it stops without one)."""

    def __init__(self) -> None:
        self._jobs: dict[Request, Job] = {}
        self._lock = threading.Lock()

    def claim(self, request: Request) -> tuple[Job, bool]:
        """The job for ``request`` and whether the caller owns it (must decode, then ``finish``) or waits for it
        (then ``leave``)."""
        with self._lock:
            job = self._jobs.get(request)
            if job is None:
                job = self._jobs[request] = Job()
                return job, True
            job.waiters += 1
            return job, False

    def waited_for(self, job: Job) -> bool:
        with self._lock:
            return job.waiters > 0

    def leave(self, job: Job) -> None:
        with self._lock:
            job.waiters -= 1

    def finish(self, request: Request, job: Job) -> None:
        with self._lock:
            if self._jobs.get(request) is job:
                del self._jobs[request]
        job.done.set()


IN_FLIGHT = InFlight()  # one per server process, like SLOTS


def shared_waiting_message(waited_s: float) -> str:
    return f"Another visitor is translating this same sentence; using their result… {waited_s:.0f} s"


def _wait_for(job: Job, on_wait: OnWait, should_stop: StopSignal) -> None:
    """Wait for another session's decode of the same request, in short rounds (showing that it waits, and
    stopping if this session leaves); ServerBusy after SLOT_WAIT_S."""
    start = time.monotonic()
    try:
        while not job.done.wait(WAIT_POLL_S):
            waited = time.monotonic() - start
            on_wait(-1, waited)
            check_stop(should_stop)
            if waited >= SLOT_WAIT_S:
                raise ServerBusy(f"The server is busy: this translation did not finish within {SLOT_WAIT_S:.0f} s. "
                                 "Please try again in a minute.")
    finally:
        IN_FLIGHT.leave(job)


@contextmanager
def heavy_slot() -> Iterator[None]:
    """One decoding slot, as a heavy request, for model work that is not a decode (head importance, attribution,
    decoding with heads off): it queues with the decodes under the same policy (one slot always stays for light
    requests), waits under the caller's spinner, and stops waiting (Cancelled) if the session leaves."""
    stop = session_stop_signal()
    with SLOTS.slot(on_wait=lambda *_: check_stop(stop), heavy=True):
        yield


def planned_request(request: Request) -> tuple[Checkpoint, Source, Plan]:
    """The model, the prepared source and the budgeted plan of a request (InputError for unreadable text)."""
    ckpt = load_model(request.model_name)
    source, plan = planned(ckpt.model, ckpt.tokenizer, request.text, request.decode_config,
                           lexicon=ckpt.copy_lexicon)
    return ckpt, source, plan


def translate_request(request: Request, on_wait: OnWait | None = None,
                      should_stop: StopSignal | None = None) -> Translation:
    """The cached translation, computed (without streaming) if missing, holding one of the process's decoding
    slots (waiting for one, with a note on the page unless ``on_wait`` is given). The same request asked by
    several sessions at once is decoded once. Raises InputError for bad text, ServerBusy when no slot became free
    within SLOT_WAIT_S seconds, and Cancelled when this session left (``should_stop``, by default its own signal)
    while nobody else waited for the result."""
    should_stop = should_stop or session_stop_signal()
    while True:
        cached = store().get(request)
        if cached is not None:
            return cached
        job, owner = IN_FLIGHT.claim(request)
        if not owner:
            with waiting_note() as note:
                _wait_for(job, on_wait or note, should_stop)
            continue  # its result is in the store now, or its owner stopped and this session takes over
        try:
            return _decode(request, job, on_wait, should_stop)
        finally:
            IN_FLIGHT.finish(request, job)


def translate_detached(ckpt: Checkpoint, request: Request) -> Translation:
    """``request`` translated with ``ckpt`` outside any browser session (a download built on its own thread, which can
    read neither the session's uploads nor its page): the shared cache first, else a decode holding one of the
    process's slots like any other, waiting without a note."""
    cached = store().get(request)
    if cached is not None:
        return cached
    with SLOTS.slot(on_wait=lambda *_: None):
        result = translate(ckpt.model, ckpt.tokenizer, request.text, request.decode_config, lexicon=ckpt.copy_lexicon)
    store().put(request, result)
    return result


def is_heavy(plan: Plan) -> bool:
    """Whether a planned decode counts as heavy for the slots' policy (estimated over HEAVY_S of compute)."""
    return plan.cost.seconds > HEAVY_S


BATCHES = BatchQueue()  # one per server process, like SLOTS: concurrent greedy requests share a batch and a slot


def batched(plan: Plan) -> bool:
    """Whether a planned decode joins the room's batches (model.serving.batch_queue): greedy, without sampling or an
    n-gram
    rule, and light (a heavy one keeps its heavy slot alone, so one long paragraph never slows a batch)."""
    return batchable(plan.decode) and not is_heavy(plan)


def _decode(request: Request, job: Job, on_wait: OnWait | None, should_stop: StopSignal) -> Translation:
    """Decode ``request`` in a slot of its weight, in a batch with other sessions' requests when it may be; it stops
    once its session left and nobody else waits for it."""
    ckpt, source, plan = planned_request(request)
    stop = lambda: should_stop() and not IN_FLIGHT.waited_for(job)
    with waiting_note() as note:
        wait = on_wait or note
        if batched(plan):
            result = BATCHES.translate(ckpt.model, ckpt.tokenizer, source, plan, lambda: SLOTS.slot(wait), stop,
                                       lambda waited_s: wait(SLOTS.running, waited_s))
        else:
            with SLOTS.slot(wait, heavy=is_heavy(plan)):
                cached = store().get(request)  # another session may have translated it while this one waited
                if cached is not None:
                    return cached
                result = translate(ckpt.model, ckpt.tokenizer, request.text, request.decode_config, should_stop=stop,
                                   lexicon=ckpt.copy_lexicon)
            if is_heavy(plan):
                give_back()  # what the decode's steps freed goes back to the system (app.serving.memory)
    store().put(request, result)
    return result
