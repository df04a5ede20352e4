"""The work queue: client-go's contract, driven by a hand-moved clock.

Threads that block are observed with ManualClock.wait_for_waiters, never by sleeping.
"""

from __future__ import annotations

import threading

import pytest

from runner.kube.workqueue import (
    DEFAULT_BACKOFF_CAP,
    HIGH_PRIORITY,
    LOW_PRIORITY,
    ItemExponentialBackoff,
    ManualClock,
    MaxOf,
    MonotonicClock,
    ObjectKey,
    PassSlots,
    ShutDown,
    TokenBucket,
    WorkQueue,
    default_rate_limiter,
)

GLANCE = ObjectKey("glance.openstack.c5c3.io", "Glance", "openstack", "glance")
OTHER = ObjectKey("glance.openstack.c5c3.io", "Glance", "openstack", "other")
BACKEND = ObjectKey("glance.openstack.c5c3.io", "GlanceBackend", "openstack", "glance")


class Recorder:
    """A QueueObserver that remembers what it was told."""

    def __init__(self) -> None:
        self.adds = 0
        self.retries = 0
        self.depths: list[int] = []
        self.calls: list[tuple[str, object]] = []  # added, handed_out, finished, dropped

    def added(self, key) -> None:
        self.adds += 1
        self.calls.append(("added", key))

    def retried(self) -> None:
        self.retries += 1

    def depth(self, waiting: int) -> None:
        self.depths.append(waiting)

    def handed_out(self, key) -> None:
        self.calls.append(("handed_out", key))

    def finished(self, key) -> None:
        self.calls.append(("finished", key))

    def dropped(self) -> None:
        self.calls.append(("dropped", None))


class Background:
    """Runs ``call`` in a thread and keeps what it returned or raised."""

    def __init__(self, call) -> None:
        self.result = self.error = None
        self.thread = threading.Thread(target=self._run, args=(call,), daemon=True)
        self.thread.start()

    def _run(self, call) -> None:
        try:
            self.result = call()
        except BaseException as error:  # handed to the test
            self.error = error

    def join(self):
        self.thread.join(timeout=10)
        assert not self.thread.is_alive(), "the thread did not finish"
        return self.result


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def queue(clock) -> WorkQueue:
    return WorkQueue(clock, rate_limiter=ItemExponentialBackoff())


def ready(queue: WorkQueue) -> list:
    """Every key that is ready now, handed out and marked done."""
    keys = []
    while (key := queue.get(timeout=0)) is not None:
        keys.append(key)
        queue.done(key)
        assert len(keys) < 100, f"the queue keeps handing out keys: {keys[:5]}"
    return keys


# -- keys, order, coalescing -------------------------------------------------------------


def test_an_object_key_reads_group_kind_namespace_name():
    assert str(GLANCE) == "glance.openstack.c5c3.io/Glance/openstack/glance"
    assert GLANCE != BACKEND


def test_keys_come_out_in_the_order_they_were_added(queue):
    for key in (OTHER, GLANCE, BACKEND):
        queue.add(key)
    assert len(queue) == 3
    assert ready(queue) == [OTHER, GLANCE, BACKEND]
    assert len(queue) == 0


def test_adding_a_waiting_key_again_does_nothing_more(clock):
    recorder = Recorder()
    queue = WorkQueue(clock, observer=recorder)
    queue.add(GLANCE)
    queue.add(OTHER)
    queue.add(GLANCE)
    assert ready(queue) == [GLANCE, OTHER]
    assert recorder.adds == 2


def test_a_key_in_process_is_not_handed_out_again_until_done(queue):
    queue.add(GLANCE)
    assert queue.get(timeout=0) == GLANCE
    queue.add(GLANCE)
    queue.add(GLANCE)
    assert len(queue) == 0
    assert queue.get(timeout=0) is None
    queue.done(GLANCE)
    assert len(queue) == 1
    assert ready(queue) == [GLANCE]


def test_other_keys_are_handed_out_while_one_is_in_process(queue):
    queue.add(GLANCE)
    queue.add(OTHER)
    assert queue.get(timeout=0) == GLANCE
    queue.add(GLANCE)
    assert queue.get(timeout=0) == OTHER
    assert queue.get(timeout=0) is None
    queue.done(OTHER)
    queue.done(GLANCE)
    assert ready(queue) == [GLANCE]


def test_done_without_a_request_meanwhile_queues_nothing(queue):
    queue.add(GLANCE)
    queue.done(queue.get(timeout=0))
    assert len(queue) == 0


# -- delays -------------------------------------------------------------------------------


def test_a_delayed_key_is_ready_when_its_time_comes(clock, queue):
    queue.add_after(GLANCE, 5)
    assert ready(queue) == []
    clock.advance(4.999)
    assert ready(queue) == []
    clock.advance(0.001)
    assert ready(queue) == [GLANCE]


@pytest.mark.parametrize(("first", "second"), [(10, 5), (5, 10)])
def test_the_earliest_of_two_delays_wins_and_the_later_is_dropped(clock, queue, first, second):
    queue.add_after(GLANCE, first)
    queue.add_after(GLANCE, second)
    clock.advance(5)
    assert ready(queue) == [GLANCE]
    clock.advance(5)
    assert ready(queue) == []


@pytest.mark.parametrize("seconds", [0, -1])
def test_no_delay_adds_at_once(queue, seconds):
    queue.add_after(GLANCE, seconds)
    assert ready(queue) == [GLANCE]


def test_a_delay_pending_when_its_key_is_handed_out_is_dropped(clock, queue):
    """Not client-go: the pass that starts now asks again itself if it must wait."""
    queue.add_after(GLANCE, 30, "requeue_after")
    queue.add(GLANCE, "MODIFIED Glance")  # an event brings it back before the delay
    assert ready(queue) == [GLANCE]
    clock.advance(30)
    assert ready(queue) == []


def test_a_delay_asked_during_a_pass_brings_the_key_back_after_it(clock, queue):
    queue.add(GLANCE)
    key = queue.get(timeout=0)
    queue.add_after(GLANCE, 30, "requeue_after")  # the pass's own request, as it ends
    queue.done(key)
    clock.advance(29.999)
    assert ready(queue) == []
    clock.advance(0.001)
    assert ready(queue) == [GLANCE]


def test_dropping_a_delay_keeps_the_other_keys_delays(clock, queue):
    queue.add_after(GLANCE, 10)
    queue.add_after(OTHER, 20)
    queue.add(GLANCE)
    assert ready(queue) == [GLANCE]
    clock.advance(20)
    assert ready(queue) == [OTHER]


def test_dropped_delays_do_not_pile_up(clock, queue):
    """Every pass over a key drops its delay and asks for a new one (the periodic pass):
    the heap of timers stays near the number of keys with a delay."""
    for _ in range(1000):
        for key in (GLANCE, OTHER):
            queue.add(key)
        for key in ready_keys(queue):
            queue.add_after(key, 36000)
            queue.done(key)
    assert len(queue._timers) <= 2 * 2 + 64 + 1
    clock.advance(36000)
    assert sorted(ready(queue)) == sorted([GLANCE, OTHER])


def ready_keys(queue: WorkQueue) -> list:
    """Every key ready now, handed out and not yet done."""
    keys = []
    while (key := queue.get(timeout=0)) is not None:
        keys.append(key)
    return keys


# -- priority -----------------------------------------------------------------------------


def test_keys_of_a_higher_priority_are_handed_out_first_in_their_order(queue):
    queue.add(GLANCE, "requeue_after", LOW_PRIORITY)
    queue.add(OTHER, "MODIFIED Glance")
    queue.add(BACKEND, "ADDED GlanceBackend", HIGH_PRIORITY)
    assert ready(queue) == [OTHER, BACKEND, GLANCE]


def test_a_waiting_key_moves_up_to_the_highest_priority_it_was_asked_with(queue):
    queue.add(GLANCE, "requeue_after", LOW_PRIORITY)
    queue.add(OTHER, "requeue_after", LOW_PRIORITY)
    queue.add(OTHER, "dependent MODIFIED Job readiness")  # moves up, keeps one entry
    queue.add(GLANCE, "reconcile_period", LOW_PRIORITY)  # not down again
    assert len(queue) == 2
    key = queue.get(timeout=0)
    assert (key, queue.priority(key)) == (OTHER, HIGH_PRIORITY)
    assert queue.reasons(key) == ("requeue_after", "dependent MODIFIED Job readiness")
    queue.done(key)
    key = queue.get(timeout=0)
    assert (key, queue.priority(key)) == (GLANCE, LOW_PRIORITY)


def test_a_delayed_key_comes_out_at_the_priority_of_its_delay(clock, queue):
    queue.add_after(GLANCE, 5, "requeue_after", LOW_PRIORITY)
    queue.add_after(OTHER, 6, "backoff")
    clock.advance(6)
    assert ready(queue) == [OTHER, GLANCE]


def test_a_request_during_a_pass_keeps_its_priority_for_the_next_pass(queue):
    queue.add(GLANCE)
    key = queue.get(timeout=0)
    queue.add(GLANCE, "requeue_after", LOW_PRIORITY)
    queue.add(OTHER, "MODIFIED Glance", LOW_PRIORITY)
    queue.done(key)
    queue.add(BACKEND, "MODIFIED GlanceBackend")
    assert ready(queue) == [BACKEND, OTHER, GLANCE]


def test_a_freed_slot_goes_to_the_waiting_pass_of_the_highest_priority():
    slots, cancel = PassSlots(1), threading.Event()
    assert slots.acquire(HIGH_PRIORITY, cancel)
    order: list[str] = []

    def wait(name: str, priority: int):
        def run():
            assert slots.acquire(priority, cancel)
            order.append(name)
            slots.release()

        return run

    low = Background(wait("low", LOW_PRIORITY))
    wait_for(lambda: slots.waiting == 1)
    high = Background(wait("high", HIGH_PRIORITY))
    wait_for(lambda: slots.waiting == 2)
    slots.release()
    high.join()
    low.join()
    assert order == ["high", "low"]


def test_a_pass_waiting_for_a_slot_gives_up_when_cancelled():
    slots, cancel = PassSlots(1), threading.Event()
    assert slots.acquire(HIGH_PRIORITY, cancel)
    waiter = Background(lambda: slots.acquire(HIGH_PRIORITY, cancel, poll=0.01))
    wait_for(lambda: slots.waiting == 1)
    cancel.set()
    assert waiter.join() is False
    assert slots.waiting == 0
    slots.release()
    assert slots.acquire(HIGH_PRIORITY, threading.Event())  # the slot is free again


def wait_for(condition, attempts: int = 10000) -> None:
    """Poll ``condition`` until true (another thread's progress); no time is asserted."""
    for _ in range(attempts):
        if condition():
            return
        threading.Event().wait(0.001)
    raise AssertionError("the condition never held")


# -- why a key was handed out -------------------------------------------------------------


def test_a_key_carries_the_reason_that_queued_it_then_those_that_coalesced(queue):
    assert queue.add(GLANCE, "ADDED Glance") is True
    assert queue.add(GLANCE, "child ADDED GlanceBackend") is False
    assert queue.add(GLANCE, "child ADDED GlanceBackend") is False  # each reason once
    assert queue.add(GLANCE, "dependent MODIFIED Job readiness") is False
    key = queue.get(timeout=0)
    assert queue.reasons(key) == (
        "ADDED Glance",
        "child ADDED GlanceBackend",
        "dependent MODIFIED Job readiness",
    )
    queue.done(key)
    assert queue.reasons(key) == ()


def test_a_delayed_key_carries_the_reason_of_its_delay(clock, queue):
    queue.add_after(GLANCE, 5, "requeue_after")
    queue.add_after(GLANCE, 10, "reconcile_period")  # later: dropped, its reason too
    clock.advance(10)
    key = queue.get(timeout=0)
    assert queue.reasons(key) == ("requeue_after",)
    queue.done(key)


def test_a_request_during_a_pass_carries_its_reason_to_the_next_pass(queue):
    queue.add(GLANCE, "ADDED Glance")
    key = queue.get(timeout=0)
    queue.add(GLANCE, "dependent MODIFIED Deployment readiness")
    assert queue.reasons(key) == ("ADDED Glance",)
    queue.done(key)
    key = queue.get(timeout=0)
    assert queue.reasons(key) == ("dependent MODIFIED Deployment readiness",)


def test_a_backoff_carries_its_reason(clock, queue):
    queue.add_rate_limited(GLANCE, "backoff")
    clock.advance(1)
    key = queue.get(timeout=0)
    assert queue.reasons(key) == ("backoff",)


def test_delayed_keys_come_out_in_time_order(clock, queue):
    queue.add_after(GLANCE, 3)
    queue.add_after(OTHER, 1)
    queue.add_after(BACKEND, 2)
    clock.advance(3)
    assert ready(queue) == [OTHER, BACKEND, GLANCE]


# -- backoff ------------------------------------------------------------------------------


def test_failures_back_off_exponentially_until_forgotten(clock, queue):
    for delay in (0.005, 0.01, 0.02, 0.04):
        queue.add_rate_limited(GLANCE)
        clock.advance(delay / 2)
        assert ready(queue) == []
        clock.advance(delay / 2)
        assert ready(queue) == [GLANCE]
    assert queue.retries(GLANCE) == 4
    queue.forget(GLANCE)
    assert queue.retries(GLANCE) == 0
    queue.add_rate_limited(GLANCE)
    clock.advance(0.005)
    assert ready(queue) == [GLANCE]


@pytest.mark.parametrize(
    ("failures", "expected"),
    [(0, 0.005), (1, 0.01), (10, 5.12), (17, 655.36), (18, 1000.0), (5000, 1000.0)],
)
def test_the_per_key_backoff_doubles_from_5ms_to_a_1000s_cap(failures, expected):
    backoff = ItemExponentialBackoff()
    for _ in range(failures):
        backoff.when(GLANCE)
    assert backoff.when(GLANCE) == pytest.approx(expected)
    assert backoff.when(OTHER) == 0.005
    assert DEFAULT_BACKOFF_CAP == 1000.0


def test_the_token_bucket_allows_a_burst_then_ten_a_second(clock):
    bucket = TokenBucket(clock, qps=10, burst=100)
    assert {bucket.when(GLANCE) for _ in range(100)} == {0.0}
    assert [round(bucket.when(GLANCE), 6) for _ in range(3)] == [0.1, 0.2, 0.3]
    clock.advance(1.3)  # pays back the three borrowed tokens and refills ten
    assert [round(bucket.when(GLANCE), 6) for _ in range(11)] == [0.0] * 10 + [0.1]


def test_the_default_limiter_is_the_larger_of_backoff_and_bucket(clock):
    limiter = default_rate_limiter(clock)
    first = [limiter.when(ObjectKey("g", "K", "ns", str(n))) for n in range(101)]
    assert first[:100] == [0.005] * 100
    assert first[100] == pytest.approx(0.1)
    assert limiter.retries(ObjectKey("g", "K", "ns", "0")) == 1
    limiter.forget(ObjectKey("g", "K", "ns", "0"))
    assert limiter.retries(ObjectKey("g", "K", "ns", "0")) == 0


def test_max_of_takes_the_longest_delay(clock):
    short, long = ItemExponentialBackoff(base=1), ItemExponentialBackoff(base=3)
    assert MaxOf(short, long).when(GLANCE) == 3


# -- blocking -----------------------------------------------------------------------------


def test_get_blocks_until_a_key_is_added(clock, queue):
    worker = Background(queue.get)
    clock.wait_for_waiters(1)
    queue.add(GLANCE)
    assert worker.join() == GLANCE


def test_get_blocks_until_a_delayed_key_is_due(clock, queue):
    worker = Background(queue.get)
    clock.wait_for_waiters(1)
    queue.add_after(GLANCE, 5)
    clock.advance(5)
    assert worker.join() == GLANCE


def test_get_blocks_until_a_key_in_process_is_done_and_requested_again(clock, queue):
    queue.add(GLANCE)
    assert queue.get() == GLANCE
    queue.add(GLANCE)
    worker = Background(queue.get)
    clock.wait_for_waiters(1)
    queue.done(GLANCE)
    assert worker.join() == GLANCE


def test_get_gives_up_after_its_timeout(clock, queue):
    worker = Background(lambda: queue.get(timeout=5))
    clock.wait_for_waiters(1)
    clock.advance(4)
    clock.wait_for_waiters(1)
    assert worker.thread.is_alive()
    clock.advance(1)
    assert worker.join() is None


def test_real_time_works_too():
    queue = WorkQueue(MonotonicClock())
    queue.add_after(GLANCE, 0.01)
    assert queue.get(timeout=10) == GLANCE
    assert queue.get(timeout=0.01) is None


def test_four_workers_never_hold_one_key_at_once():
    queue = WorkQueue(MonotonicClock())
    held: set = set()
    lock = threading.Lock()
    clashes: list = []
    passes = 0
    enough = threading.Event()

    def work():
        nonlocal passes
        while True:
            try:
                key = queue.get()
            except ShutDown:
                return
            with lock:
                clashes.extend([key] if key in held else [])
                held.add(key)
            queue.add(key)  # a change arrives mid-pass
            with lock:
                held.discard(key)
                passes += 1
                if passes >= 2000:
                    enough.set()
            queue.done(key)

    workers = [threading.Thread(target=work, daemon=True) for _ in range(4)]
    for worker in workers:
        worker.start()
    for key in (GLANCE, OTHER, BACKEND):
        queue.add(key)
    assert enough.wait(timeout=60)
    assert queue.shut_down(drain=True, timeout=10)
    for worker in workers:
        worker.join(timeout=10)
    assert clashes == []


# -- shutting down --------------------------------------------------------------------------


def test_after_shut_down_nothing_is_handed_out_or_accepted(queue):
    queue.add(GLANCE)
    queue.add_after(OTHER, 1)
    assert queue.shut_down()
    assert queue.shutting_down
    queue.add(BACKEND)
    queue.add_after(BACKEND, 0)
    assert len(queue) == 0
    with pytest.raises(ShutDown):
        queue.get(timeout=0)


def test_shut_down_wakes_a_waiting_worker(clock, queue):
    worker = Background(queue.get)
    clock.wait_for_waiters(1)
    queue.shut_down()
    worker.join()
    assert isinstance(worker.error, ShutDown)


def test_a_key_in_process_is_not_queued_again_after_shut_down(queue):
    queue.add(GLANCE)
    key = queue.get()
    queue.add(GLANCE)
    assert not queue.shut_down()  # one key still in process
    queue.done(key)
    assert len(queue) == 0


def test_draining_waits_until_every_key_in_process_is_done(clock, queue):
    queue.add(GLANCE)
    queue.add(OTHER)
    first, second = queue.get(), queue.get()
    stopper = Background(lambda: queue.shut_down(drain=True))
    clock.wait_for_waiters(1)
    queue.done(first)
    clock.wait_for_waiters(1)
    assert stopper.thread.is_alive()
    queue.done(second)
    assert stopper.join() is True


def test_draining_gives_up_after_its_timeout(clock, queue):
    queue.add(GLANCE)
    queue.get()
    stopper = Background(lambda: queue.shut_down(drain=True, timeout=30))
    clock.wait_for_waiters(1)
    clock.advance(30)
    assert stopper.join() is False


# -- what the metrics see ---------------------------------------------------------------------


def test_the_observer_sees_adds_retries_and_depth(clock):
    recorder = Recorder()
    queue = WorkQueue(clock, rate_limiter=ItemExponentialBackoff(), observer=recorder)
    queue.add(GLANCE)
    queue.add(OTHER)
    queue.add(GLANCE)  # coalesced: no add
    queue.add_after(BACKEND, 2)  # a retry; an add once due
    queue.add_rate_limited(GLANCE)  # a retry; still waiting when due, so no add then
    assert (recorder.adds, recorder.retries, recorder.depths) == (2, 2, [1, 2])
    clock.advance(2)
    assert len(queue) == 3
    assert (recorder.adds, recorder.depths) == (3, [1, 2, 3])
    assert ready(queue) == [GLANCE, OTHER, BACKEND]
    assert recorder.depths[-3:] == [2, 1, 0]


def test_the_observer_sees_each_key_enter_go_out_and_finish_in_order(clock):
    recorder = Recorder()
    queue = WorkQueue(clock, rate_limiter=ItemExponentialBackoff(), observer=recorder)
    queue.add(GLANCE)
    key = queue.get()
    queue.add(GLANCE)  # while in process: an add, handed out after done
    queue.done(key)
    queue.done(OTHER)  # never handed out: nothing finished
    again = queue.get()
    queue.done(again)
    queue.add(OTHER)
    queue.shut_down()
    assert recorder.calls == [
        ("added", GLANCE),
        ("handed_out", GLANCE),
        ("added", GLANCE),
        ("finished", GLANCE),
        ("handed_out", GLANCE),
        ("finished", GLANCE),
        ("added", OTHER),
        ("dropped", None),
    ]
