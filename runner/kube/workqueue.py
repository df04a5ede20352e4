"""A rate-limited work queue of object keys, after client-go's ``workqueue``.

controller-runtime feeds reconcilers from client-go's rate-limiting delaying queue; this
is the same contract in Python, for threads:

* **level-triggered**: a key says "look at this object again", not what changed;
  adding a key that is already waiting does nothing more (the adds coalesce);
* **one worker per key**: a key handed out by :meth:`WorkQueue.get` is not handed out
  again until :meth:`WorkQueue.done`; one added meanwhile waits, and is handed out
  once after ``done``;
* **delays**: :meth:`WorkQueue.add_after` adds a key later; of several pending delays
  for one key the earliest wins; a delay still pending when its key is handed out is
  dropped (here client-go differs, see below);
* **backoff**: :meth:`WorkQueue.add_rate_limited` after a failed pass delays the key
  by the rate limiter (:func:`default_rate_limiter`: client-go's
  ``DefaultControllerRateLimiter``), :meth:`WorkQueue.forget` after a successful one
  resets its backoff;
* **priority**, as controller-runtime's priority queue: every add has one
  (:data:`HIGH_PRIORITY` unless told), a key waits at the highest of its adds, and keys
  of a higher priority are handed out first, in the order they were added.
  :class:`PassSlots` lets the workers of several queues take turns by the same rule.

A pending delay ends when its key is handed out, on purpose: client-go keeps it, and the
key comes back once more when it is due. Every delay is a pass's own request to look
again (``requeue_after``, the backoff, the periodic pass); a pass that starts earlier,
because an event brought the key back, reads the object later than the pass that asked,
and ends with its own request when it still has to wait. The pass the old delay would
add sees nothing the newer one did not (docs/runner.md, "Why a pass runs").

Shutting down differs from client-go on purpose too: after :meth:`WorkQueue.shut_down` no
key is handed out any more, even one that was waiting (client-go still hands those
out). A runner that stops mid-way leaves nothing undone that matters: the next leader
lists every object and reconciles it. ``drain=True`` also waits until every key handed
out is ``done``, so no ansible run is cut off half-way.

Time comes from a :class:`Clock`; :class:`ManualClock` lets tests move it by hand.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections import deque
from collections.abc import Hashable
from typing import NamedTuple, Protocol

DEFAULT_BACKOFF_BASE = 0.005
"""Seconds of the first retry after a failure (client-go: 5 ms)."""
DEFAULT_BACKOFF_CAP = 1000.0
"""Longest per-key backoff in seconds (client-go: 1000 s; the Go glance operator uses 30 s)."""
DEFAULT_QPS = 10.0
DEFAULT_BURST = 100
HIGH_PRIORITY = 0
"""An add's default priority: something changed (controller-runtime's priority queue: 0)."""
LOW_PRIORITY = -100
"""A look again that no change asked for (controller-runtime's ``handler.LowPriority``)."""


class ObjectKey(NamedTuple):
    """Which object a pass is for; the queue's key."""

    group: str
    kind: str
    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.group}/{self.kind}/{self.namespace}/{self.name}"


class ShutDown(Exception):
    """The queue is shut down: :meth:`WorkQueue.get` hands out nothing more."""


# -- time ---------------------------------------------------------------------------


class Clock(Protocol):
    def now(self) -> float:
        """Seconds on a monotonic scale."""

    def wait(self, condition: threading.Condition, seconds: float | None) -> None:
        """Wait on ``condition`` (held) until notified or ``seconds`` of this clock pass."""


class MonotonicClock:
    """Real time: ``time.monotonic``."""

    def now(self) -> float:
        return time.monotonic()

    def wait(self, condition: threading.Condition, seconds: float | None) -> None:
        condition.wait(seconds)


class ManualClock:
    """Time that moves only by :meth:`advance`; waiting threads wake when it moves.

    :meth:`wait_for_waiters` lets a test know, without sleeping, that a thread is
    blocked in the queue.
    """

    def __init__(self, start: float = 1000.0) -> None:
        self._now = start
        self._lock = threading.Condition()
        self._conditions: dict[int, threading.Condition] = {}
        self._waiters = 0

    def now(self) -> float:
        with self._lock:
            return self._now

    def advance(self, seconds: float) -> None:
        with self._lock:
            self._now += seconds
            conditions = list(self._conditions.values())
        for condition in conditions:
            with condition:
                condition.notify_all()

    def wait(self, condition: threading.Condition, seconds: float | None) -> None:
        with self._lock:
            self._conditions[id(condition)] = condition
            self._waiters += 1
            self._lock.notify_all()
        try:
            condition.wait()  # woken by a notify or by advance()
        finally:
            with self._lock:
                self._waiters -= 1

    def wait_for_waiters(self, count: int, timeout: float = 10.0) -> None:
        """Block until ``count`` threads wait on this clock; ``TimeoutError`` after ``timeout``."""
        with self._lock:
            if not self._lock.wait_for(lambda: self._waiters >= count, timeout):
                raise TimeoutError(f"{self._waiters} of {count} threads are waiting")


# -- rate limiters --------------------------------------------------------------------


class RateLimiter(Protocol):
    def when(self, key: Hashable) -> float:
        """Seconds to wait before retrying ``key``; counts one more failure."""

    def forget(self, key: Hashable) -> None:
        """``key`` succeeded: start its backoff again from the beginning."""

    def retries(self, key: Hashable) -> int:
        """How many failures of ``key`` are counted."""


class ItemExponentialBackoff:
    """``base * 2**failures`` per key, at most ``cap`` (``ItemExponentialFailureRateLimiter``)."""

    def __init__(self, base: float = DEFAULT_BACKOFF_BASE, cap: float = DEFAULT_BACKOFF_CAP):
        self.base = base
        self.cap = cap
        self._failures: dict[Hashable, int] = {}
        self._lock = threading.Lock()

    def when(self, key: Hashable) -> float:
        with self._lock:
            failures = self._failures.get(key, 0)
            self._failures[key] = failures + 1
        if failures >= 1024:  # 2**1024 overflows a float; the cap applies long before
            return self.cap
        return min(self.base * 2**failures, self.cap)

    def forget(self, key: Hashable) -> None:
        with self._lock:
            self._failures.pop(key, None)

    def retries(self, key: Hashable) -> int:
        with self._lock:
            return self._failures.get(key, 0)


class TokenBucket:
    """One bucket for all keys: ``qps`` tokens a second, at most ``burst`` saved.

    golang.org/x/time/rate ``Limiter.Reserve().Delay()``: each retry takes a token,
    borrowing from the future when none is left, and waits until its token exists.
    """

    def __init__(self, clock: Clock, qps: float = DEFAULT_QPS, burst: int = DEFAULT_BURST):
        self.clock = clock
        self.qps = qps
        self.burst = burst
        self._tokens = float(burst)
        self._last = clock.now()
        self._lock = threading.Lock()

    def when(self, key: Hashable) -> float:
        with self._lock:
            now = self.clock.now()
            self._tokens = min(self.burst, self._tokens + (now - self._last) * self.qps)
            self._last = now
            self._tokens -= 1
            return max(0.0, -self._tokens / self.qps)

    def forget(self, key: Hashable) -> None:
        """Nothing: the bucket is shared, not per key."""

    def retries(self, key: Hashable) -> int:
        return 0


class MaxOf:
    """The longest delay of several limiters (``MaxOfRateLimiter``)."""

    def __init__(self, *limiters: RateLimiter) -> None:
        self.limiters = limiters

    def when(self, key: Hashable) -> float:
        return max(limiter.when(key) for limiter in self.limiters)

    def forget(self, key: Hashable) -> None:
        for limiter in self.limiters:
            limiter.forget(key)

    def retries(self, key: Hashable) -> int:
        return max(limiter.retries(key) for limiter in self.limiters)


def default_rate_limiter(clock: Clock, cap: float = DEFAULT_BACKOFF_CAP) -> MaxOf:
    """client-go's ``DefaultControllerRateLimiter``: 5 ms doubling to ``cap`` per key,
    and 10 retries a second (burst 100) over all keys."""
    return MaxOf(ItemExponentialBackoff(DEFAULT_BACKOFF_BASE, cap), TokenBucket(clock))


# -- the queue ------------------------------------------------------------------------


class QueueObserver(Protocol):
    """Receives the queue's metrics (``workqueue_*``, ``runner.endpoints.metrics.QueueMetrics``)."""

    def added(self, key: Hashable) -> None:
        """A key entered the queue (an add that coalesced does not count)."""

    def retried(self) -> None:
        """A key was scheduled with a delay (``add_after``, ``add_rate_limited``)."""

    def depth(self, waiting: int) -> None:
        """How many keys wait to be handed out now."""

    def handed_out(self, key: Hashable) -> None:
        """:meth:`WorkQueue.get` handed ``key`` to a worker."""

    def finished(self, key: Hashable) -> None:
        """:meth:`WorkQueue.done`: the worker is done with ``key``."""

    def dropped(self) -> None:
        """The queue shut down: the keys that waited will not be handed out."""


class _Unobserved:
    def added(self, key: Hashable) -> None:
        pass

    def retried(self) -> None:
        pass

    def depth(self, waiting: int) -> None:
        pass

    def handed_out(self, key: Hashable) -> None:
        pass

    def finished(self, key: Hashable) -> None:
        pass

    def dropped(self) -> None:
        pass


class WorkQueue:
    """A thread-safe, rate-limited, delaying queue of keys (see the module docstring)."""

    def __init__(
        self,
        clock: Clock | None = None,
        rate_limiter: RateLimiter | None = None,
        observer: QueueObserver | None = None,
    ) -> None:
        self.clock = clock or MonotonicClock()
        self.rate_limiter = rate_limiter or default_rate_limiter(self.clock)
        self.observer = observer or _Unobserved()
        self._condition = threading.Condition()
        self._ready: dict[int, deque[Hashable]] = {}  # per priority, handed out in order
        self._dirty: dict[Hashable, int] = {}  # in _ready, or to be requeued after done():
        # its priority
        self._processing: set[Hashable] = set()
        self._due: dict[Hashable, tuple[float, int]] = {}  # key -> its live timer: time, seq
        self._due_reason: dict[Hashable, tuple[str, int]] = {}  # that delay's reason, priority
        self._reasons: dict[Hashable, list[str]] = {}  # why a dirty key was asked for
        self._handed_reasons: dict[Hashable, tuple[str, ...]] = {}  # of the keys in process
        self._handed_priority: dict[Hashable, int] = {}
        self._timers: list[tuple[float, int, Hashable]] = []  # heap; stale entries skipped
        self._sequence = itertools.count()
        self._shutting_down = False

    def __len__(self) -> int:
        """Keys waiting to be handed out now (not delayed ones, not those in process)."""
        with self._condition:
            self._release_due()
            return self._waiting()

    @property
    def shutting_down(self) -> bool:
        with self._condition:
            return self._shutting_down

    def add(self, key: Hashable, reason: str = "", priority: int = HIGH_PRIORITY) -> bool:
        """Ask for a pass over ``key``; nothing more if one is already waiting (then only
        ``reason`` is noted, and the key moves up to ``priority`` if that is higher).
        Whether the key entered the queue."""
        with self._condition:
            return self._add(key, reason, priority)

    def add_after(
        self, key: Hashable, seconds: float, reason: str = "", priority: int = HIGH_PRIORITY
    ) -> None:
        """Ask for a pass over ``key`` in ``seconds``; the earliest of several requests wins."""
        with self._condition:
            if self._shutting_down:
                return
            self.observer.retried()
            if seconds <= 0:
                self._add(key, reason, priority)
                return
            due = self.clock.now() + seconds
            if key in self._due and self._due[key][0] <= due:
                return
            sequence = next(self._sequence)
            self._due[key] = (due, sequence)
            self._due_reason[key] = (reason, priority)
            if len(self._timers) > 2 * len(self._due) + 64:  # mostly dropped delays: compact
                self._timers = [
                    entry for entry in self._timers if self._due.get(entry[2]) == entry[:2]
                ]
                heapq.heapify(self._timers)
            heapq.heappush(self._timers, (due, sequence, key))
            self._condition.notify_all()

    def add_rate_limited(
        self, key: Hashable, reason: str = "", priority: int = HIGH_PRIORITY
    ) -> None:
        """Ask for another pass over ``key`` after its backoff (the last pass failed)."""
        self.add_after(key, self.rate_limiter.when(key), reason, priority)

    def reasons(self, key: Hashable) -> tuple[str, ...]:
        """Why the pass over ``key`` (handed out, not yet done) was asked for: the reason of
        the add that queued it first, then those of the adds that coalesced into it."""
        with self._condition:
            return self._handed_reasons.get(key, ())

    def priority(self, key: Hashable) -> int:
        """The priority the pass over ``key`` (handed out, not yet done) was asked with:
        the highest of its adds (:data:`HIGH_PRIORITY` for a key not in process)."""
        with self._condition:
            return self._handed_priority.get(key, HIGH_PRIORITY)

    def forget(self, key: Hashable) -> None:
        """``key``'s last pass succeeded: its next failure starts the backoff again."""
        self.rate_limiter.forget(key)

    def retries(self, key: Hashable) -> int:
        """Failures of ``key`` since it was last forgotten."""
        return self.rate_limiter.retries(key)

    def get(self, timeout: float | None = None) -> Hashable | None:
        """The next key to process; ``None`` if none came within ``timeout`` seconds.

        Blocks while nothing is ready. The caller owns the key until :meth:`done`.
        Raises :class:`ShutDown` once the queue is shut down.
        """
        with self._condition:
            deadline = None if timeout is None else self.clock.now() + timeout
            while True:
                if self._shutting_down:
                    raise ShutDown
                self._release_due()
                ready = [level for level in sorted(self._ready, reverse=True) if self._ready[level]]
                if ready:
                    key = self._ready[ready[0]].popleft()
                    self._handed_priority[key] = self._dirty.pop(key)
                    self._processing.add(key)
                    self._handed_reasons[key] = tuple(self._reasons.pop(key, ()))
                    self._due.pop(key, None)  # its heap entry is skipped when it comes up
                    self._due_reason.pop(key, None)
                    self.observer.depth(self._waiting())
                    self.observer.handed_out(key)
                    return key
                now = self.clock.now()
                if deadline is not None and now >= deadline:
                    return None
                wake = min(
                    (moment for moment in (deadline, self._next_due()) if moment is not None),
                    default=None,
                )
                self.clock.wait(self._condition, None if wake is None else wake - now)

    def done(self, key: Hashable) -> None:
        """The pass over ``key`` is over; a request that came meanwhile is queued now."""
        with self._condition:
            if key in self._processing:
                self.observer.finished(key)
            self._processing.discard(key)
            self._handed_reasons.pop(key, None)
            self._handed_priority.pop(key, None)
            if key in self._dirty and not self._shutting_down:
                self._ready.setdefault(self._dirty[key], deque()).append(key)
                self.observer.depth(self._waiting())
            self._condition.notify_all()

    def shut_down(self, drain: bool = False, timeout: float | None = None) -> bool:
        """Hand out nothing more and drop what waits; with ``drain``, wait for the workers.

        Returns whether no key is left in process (always true with ``drain`` unless
        ``timeout`` seconds passed first).
        """
        with self._condition:
            self._shutting_down = True
            self._ready.clear()
            self._dirty.clear()
            self._due.clear()
            self._due_reason.clear()
            self._reasons.clear()
            self._timers.clear()
            self.observer.depth(0)
            self.observer.dropped()
            self._condition.notify_all()
            if not drain:
                return not self._processing
            deadline = None if timeout is None else self.clock.now() + timeout
            while self._processing:
                now = self.clock.now()
                if deadline is not None and now >= deadline:
                    return False
                self.clock.wait(self._condition, None if deadline is None else deadline - now)
            return True

    # -- under the lock -----------------------------------------------------------------

    def _add(self, key: Hashable, reason: str = "", priority: int = HIGH_PRIORITY) -> bool:
        if self._shutting_down:
            return False
        if key in self._dirty:
            reasons = self._reasons.setdefault(key, [])
            if reason and reason not in reasons:  # bounded by the distinct reasons
                reasons.append(reason)
            if priority > self._dirty[key]:
                if key not in self._processing:  # waiting at the lower priority: move it up
                    self._ready[self._dirty[key]].remove(key)
                    self._ready.setdefault(priority, deque()).append(key)
                    self._condition.notify_all()
                self._dirty[key] = priority
            return False
        self.observer.added(key)
        self._dirty[key] = priority
        self._reasons[key] = [reason] if reason else []
        if key not in self._processing:
            self._ready.setdefault(priority, deque()).append(key)
            self.observer.depth(self._waiting())
            self._condition.notify_all()
        return True

    def _waiting(self) -> int:
        return sum(len(keys) for keys in self._ready.values())

    def _next_due(self) -> float | None:
        return self._timers[0][0] if self._timers else None

    def _release_due(self) -> None:
        """Add every delayed key whose time has come."""
        now = self.clock.now()
        while self._timers and self._timers[0][0] <= now:
            due, sequence, key = heapq.heappop(self._timers)
            if self._due.get(key) == (due, sequence):
                del self._due[key]
                self._add(key, *self._due_reason.pop(key, ("", HIGH_PRIORITY)))


class PassSlots:
    """How many passes may run at once over all controllers; a freed slot goes to the
    waiting pass of the highest priority, the longest-waiting among equals (a
    ``threading.Semaphore`` wakes any waiter)."""

    def __init__(self, slots: int) -> None:
        self.slots = slots
        self._free = slots
        self._waiting: list[tuple[int, int]] = []  # heap of (-priority, arrival)
        self._arrivals = itertools.count()
        self._condition = threading.Condition()

    def acquire(self, priority: int, cancel: threading.Event, poll: float = 0.2) -> bool:
        """Wait for a slot; False (no slot taken) once ``cancel`` is set."""
        with self._condition:
            me = (-priority, next(self._arrivals))
            heapq.heappush(self._waiting, me)
            try:
                while not (self._free and self._waiting[0] == me):
                    if cancel.is_set():
                        return False
                    self._condition.wait(poll)
                self._free -= 1
                return True
            finally:
                self._waiting.remove(me)
                heapq.heapify(self._waiting)
                self._condition.notify_all()

    def release(self) -> None:
        with self._condition:
            self._free += 1
            self._condition.notify_all()

    @property
    def waiting(self) -> int:
        """Passes waiting for a slot."""
        with self._condition:
            return len(self._waiting)
