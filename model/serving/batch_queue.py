"""Concurrent greedy requests decoded as one batch: a room's sessions share the model's steps.

A lecture hall pressing Translate at once would queue behind the server's few decoding slots, one sentence each; a
batch of N reads every weight once for N rows (model.decoding.batch_decoding), so the room is served several times
faster.

A session submits a request (model, tokenizer, prepared source, budgeted plan) and follows it. Requests for the
same model object and the same decode settings (``batch_key``: all but the length limit, which each row keeps)
share one queue. Whoever finds no batch forming for its key leads: it waits for a decoding slot through the
``hold_slot`` factory the caller passes (so the caller's slot policy, its waiting note and its ServerBusy still
hold, and model/ imports nothing of the app), and every request arriving meanwhile joins its batch. Once it holds a
slot it takes every request queued at that moment, up to MAX_BATCH, into one batch that a worker thread decodes
while the slot is held (so the leader's session may leave, or draw slowly, without holding up the others); a batch
of the leader alone decodes in its own thread, as before batching. The next request to arrive leads the next batch
at once, so while a slot is free nobody waits for a running batch (two sessions on two slots decode side by side,
as before batching), and once every slot is taken a room's requests gather behind one leader. A running batch is not
joined mid-decode (a late row would need its own encoder pass and a KV cache of another length).

Each member receives its own steps through its own queue as they happen (a page can stream its progress), then
assembles its Translation: exactly what it would have got alone (tests/model/test_batch_decoding.py). A member that
leaves (its stop signal set) stops receiving; its row may decode on, but once every member of a batch has left the
batch stops within one step. An error in a batch, or in taking the slot, reaches every member.
"""
from __future__ import annotations

import queue
import threading
import time
from collections import deque
from collections.abc import Callable, Generator, Hashable, Iterator
from contextlib import AbstractContextManager, ExitStack

from model.decoding.batch_decoding import batch_key, batchable
from model.decoding.search import DecodeStep
from model.network.transformer import Transformer
from model.serving import inference
from model.serving.budget import Plan
from model.serving.inference import Cancelled, Source, StopSignal, Translation, check_stop, finish
from model.tokenization.kinds import TextTokenizer

MAX_BATCH = 16  # sentences decoded together at most: past this the step is compute-bound and gains little
RECORDED_BATCHES = 1000  # the latest batches' sizes kept (bounded: a server runs for days)
POLL_S = 0.25  # how often a waiting member asks its stop signal (and tells its page that it waits)

SlotFactory = Callable[[], AbstractContextManager]  # a fresh context manager that holds one decoding slot
OnWait = Callable[[float], None]  # seconds waited so far, before the batch's first step came

_LEAD, _STEP, _END, _ERROR = "lead", "step", "end", "error"  # what a member's queue carries


class Member:
    """One request in a BatchQueue; its session follows it with ``steps()``, then ``translation()``."""

    def __init__(self, owner: BatchQueue, model: Transformer, tokenizer: TextTokenizer, source: Source, plan: Plan,
                 hold_slot: SlotFactory, should_stop: StopSignal | None, on_wait: OnWait | None) -> None:
        self.owner, self.model, self.tokenizer, self.source, self.plan = owner, model, tokenizer, source, plan
        self.key: Hashable = (model, batch_key(plan.decode))
        self.hold_slot, self.should_stop, self.on_wait = hold_slot, should_stop, on_wait
        self.inbox: queue.SimpleQueue = queue.SimpleQueue()
        self.left = False  # set (under the owner's lock) once the session stopped following
        self.received: list[DecodeStep] = []
        self.ended = False

    def steps(self) -> Generator[DecodeStep, None, None]:
        """This request's steps as the batch makes them, each the step its decode alone would give. Raises the
        batch's error, or Cancelled once the stop signal is set; either way (or when closed early) it leaves."""
        start = time.monotonic()
        try:
            while not self.ended:
                try:
                    kind, value = self.inbox.get(timeout=POLL_S)
                except queue.Empty:
                    check_stop(self.should_stop)
                    if not self.received and self.on_wait is not None:
                        self.on_wait(time.monotonic() - start)
                    continue
                if kind == _LEAD:
                    slot = self.owner.lead(self)
                    if slot is not None:
                        yield from self._alone(slot)
                elif kind == _ERROR:
                    raise value
                elif kind == _END:
                    self.ended = True
                else:
                    self.received.append(value)
                    check_stop(self.should_stop)
                    yield value
        finally:
            if not self.ended:
                self.owner.leave(self)

    def _alone(self, slot: ExitStack) -> Iterator[DecodeStep]:
        """A batch of this request alone, decoded in its own thread as a sentence alone
        (model.serving.inference.stream):
        no hand-off to a worker, so a lone session decodes as fast as before batching."""
        with slot:
            for step in inference.stream(self.model, self.source, self.plan.decode):
                self.received.append(step)
                check_stop(self.should_stop)
                yield step
        self.ended = True

    def gone(self) -> bool:
        """Whether nobody follows this request any more: it left, or its stop signal is set (asked by the worker
        after every step, so a batch everyone left stops within one step even before they read it)."""
        return self.left or (self.should_stop is not None and self.should_stop())

    def translation(self) -> Translation:
        """The finished Translation (following the rest of the steps first, if any are still to come)."""
        for _ in self.steps():
            pass
        return finish(self.model, self.tokenizer, self.source, self.received, self.plan)


class BatchQueue:
    """The queues of greedy requests waiting to be batched, per (model, settings); one per process, shared by every
    session (the module docstring says how a batch forms). ``batch_sizes`` records the latest batches' sizes, in
    order."""

    def __init__(self, max_batch: int = MAX_BATCH) -> None:
        self.max_batch = max_batch
        self._lock = threading.Lock()
        self._queued: dict[Hashable, list[Member]] = {}
        self._leader: dict[Hashable, Member] = {}  # a key here has a batch forming: its leader, first in the queue
        self.batch_sizes: deque[int] = deque(maxlen=RECORDED_BATCHES)

    @property
    def queued(self) -> int:
        """Requests waiting for a batch now (all keys)."""
        with self._lock:
            return sum(len(members) for members in self._queued.values())

    def submit(self, model: Transformer, tokenizer: TextTokenizer, source: Source, plan: Plan, hold_slot: SlotFactory,
               should_stop: StopSignal | None = None, on_wait: OnWait | None = None) -> Member:
        """Queue a request (its plan greedy: model.decoding.batch_decoding.batchable) and return it to follow."""
        if not batchable(plan.decode):
            raise ValueError("only greedy requests without sampling or an n-gram rule are batched")
        member = Member(self, model, tokenizer, source, plan, hold_slot, should_stop, on_wait)
        with self._lock:
            self._queued.setdefault(member.key, []).append(member)
            if member.key not in self._leader:
                self._leader[member.key] = member
                member.inbox.put((_LEAD, None))
        return member

    def translate(self, model: Transformer, tokenizer: TextTokenizer, source: Source, plan: Plan,
                  hold_slot: SlotFactory, should_stop: StopSignal | None = None,
                  on_wait: OnWait | None = None) -> Translation:
        """Submit and wait for the Translation (no streaming)."""
        return self.submit(model, tokenizer, source, plan, hold_slot, should_stop, on_wait).translation()

    def lead(self, member: Member) -> ExitStack | None:
        """In the leader's thread: take a slot, then the queued requests (the first one left over leads the next
        batch), and start their batch's worker -> None; or -> the held slot when the batch is the leader alone (it
        decodes in its own thread: ``Member._alone``)."""
        slot = ExitStack()
        try:
            slot.enter_context(member.hold_slot())
        except Exception as exc:  # e.g. ServerBusy: every request waiting for this batch waited as long
            with self._lock:
                failed = self._queued.pop(member.key, [])
                self._leader.pop(member.key, None)
            for waiting in failed:
                waiting.inbox.put((_ERROR, exc))
            return None
        with self._lock:
            queued = self._queued.pop(member.key, [])
            batch, rest = queued[:self.max_batch], queued[self.max_batch:]
            if rest:
                self._queued[member.key] = rest
            self._hand_on(member.key)
            self.batch_sizes.append(len(batch))
        if batch == [member]:
            return slot
        threading.Thread(target=self._decode, args=(batch, slot), name="batch-decode",
                         daemon=True).start()
        return None

    def _decode(self, batch: list[Member], slot: ExitStack) -> None:
        """The worker: decode the batch holding the slot; the members whose sentence ended on the last step are told
        once the slot is given back (so a finished request never finds its slot still taken)."""
        try:
            with slot:
                ending = self._run(batch)
            for member in ending:
                member.inbox.put((_END, None))
        except BaseException as exc:  # Cancelled included: every member must hear how its batch ended
            for member in batch:
                member.inbox.put((_ERROR, exc))

    @staticmethod
    def _run(batch: list[Member]) -> list[Member]:
        """Every step of the batch to its members' queues (END right after a sentence's last step, but for the last
        step of all) -> the members whose sentence ended on the last step. Raises Cancelled once every member still
        decoding is gone."""
        steps = inference.stream_batch(batch[0].model, [m.source for m in batch], [m.plan.decode for m in batch])
        for step in steps:
            last = all(own.done for own in step.values())
            for i, own in step.items():
                batch[i].inbox.put((_STEP, own))
                if own.done and not last:
                    batch[i].inbox.put((_END, None))
            if last:
                return [batch[i] for i in step]
            if all(batch[i].gone() for i, own in step.items() if not own.done):
                steps.close()
                raise Cancelled("stopped: every request of the batch was abandoned")
        return []

    def leave(self, member: Member) -> None:
        """A member stopped following: out of its queue, and its lead (if it had one unused) passed on."""
        with self._lock:
            member.left = True
            waiting = self._queued.get(member.key, [])
            if member in waiting:
                waiting.remove(member)
            if self._leader.get(member.key) is member:
                self._hand_on(member.key)
            if not waiting:
                self._queued.pop(member.key, None)

    def _hand_on(self, key: Hashable) -> None:
        """(Lock held.) The first request still queued leads the next batch (it waits for a slot of its own); with
        none, the key is free."""
        waiting = self._queued.get(key)
        if waiting:
            self._leader[key] = waiting[0]
            waiting[0].inbox.put((_LEAD, None))
        else:
            self._leader.pop(key, None)


__all__ = ["MAX_BATCH", "BatchQueue", "Member"]
