"""Where a pytest run's time goes, a limit on each test module, and a guard on signals.

Loaded by tests/conftest.py for every run. Three things:

* **Timings.** Each test's set-up, call and tear-down seconds, summed per module (a
  module's package- and module-scoped fixtures are set up in its first test's set-up, so
  "set-up" is what the module waited for before it could test: a node, images, a Go
  build under way, an operator install). With ``C5C3_TIMINGS_FILE`` set they are written
  there as JSON when the run ends; ``make test`` sets it per stream and
  ``hack/time_table.py`` makes its table of them.
* **A time limit per module.** A module still running ``C5C3_MODULE_TIME_LIMIT`` seconds
  (default ``DEFAULT_MODULE_LIMIT``) after its first test began fails, naming the module and
  the limit: the test under way gets the failure (a ``SIGALRM`` in pytest's main thread,
  which also interrupts a blocking wait), every test of the module after it fails at once,
  and the run goes on with the next module. A module may set its own ``MODULE_TIME_LIMIT``
  (seconds). 0 turns the limit off. So a hang costs one module's limit, not CI's whole
  90 minutes, and says where it was (``faulthandler_timeout`` in pyproject.toml writes every
  thread's stack of a test that runs on for 10 minutes before that).
* **Signal guard.** A test that leaves its own ``SIGTERM``, ``SIGINT`` or ``SIGHUP``
  handler installed in pytest's process makes pytest deaf to the signals ``make test``
  stops it with. After each test the handlers are compared with those pytest started with;
  a changed one is put back and the test fails, naming the signal.
"""

from __future__ import annotations

import json
import os
import signal
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import pytest

TIMINGS_VARIABLE = "C5C3_TIMINGS_FILE"
LIMIT_VARIABLE = "C5C3_MODULE_TIME_LIMIT"
# The longest module measured on a fresh machine took about 24 minutes (the Gateway module
# waiting for Envoy Gateway's build first, docs/decisions.md "make test's budget"); a
# module that runs past 40 minutes has hung, and ends here with its name instead of at
# CI's limit.
DEFAULT_MODULE_LIMIT = 2400
GUARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


class ModuleTimeLimit(BaseException):
    """Raised in pytest's main thread when a module's time is up. A BaseException: a test's
    own ``except Exception`` (a retry loop, a poll) must not swallow it."""


@dataclass
class Module:
    path: str
    tests: int = 0
    setup: float = 0.0
    call: float = 0.0
    teardown: float = 0.0
    outcomes: dict[str, int] = field(default_factory=dict)
    started: float | None = None  # wall clock (time.time) of its first test's set-up
    ended: float | None = None

    @property
    def total(self) -> float:
        return self.setup + self.call + self.teardown


def module_limit(item: pytest.Item) -> float:
    """The seconds ``item``'s module may run: its ``MODULE_TIME_LIMIT``, else the run's."""
    own = getattr(item.module, "MODULE_TIME_LIMIT", None) if item.module else None
    if own is not None:
        return float(own)
    return float(os.environ.get(LIMIT_VARIABLE, DEFAULT_MODULE_LIMIT))


class Timings:
    """The plugin (one instance per run, registered by tests/conftest.py)."""

    def __init__(self) -> None:
        self.modules: dict[str, Module] = {}
        self.started = time.time()
        self.handlers = {sig: signal.getsignal(sig) for sig in GUARDED}
        self.current: str | None = None  # the module whose clock runs
        self.deadline = 0.0  # monotonic
        self.limit = 0.0
        self.expired: set[str] = set()
        self.previous_alarm = None

    # --- the module clock ------------------------------------------------------------------

    def _on_alarm(self, _signum, _frame) -> None:
        module = self.current or "?"
        self.expired.add(module)
        raise ModuleTimeLimit(
            f"{module} ran past its time limit of {self.limit:.0f} s "
            f"({LIMIT_VARIABLE} or the module's MODULE_TIME_LIMIT; tests/support/timings.py)"
        )

    def _arm(self, item: pytest.Item) -> None:
        module = item.nodeid.split("::", 1)[0]
        if module != self.current:
            self.current = module
            self.limit = module_limit(item)
            self.deadline = time.monotonic() + self.limit
        if self.limit <= 0 or module in self.expired:
            return
        left = max(self.deadline - time.monotonic(), 0.001)
        if self.previous_alarm is None:
            self.previous_alarm = signal.signal(signal.SIGALRM, self._on_alarm)
        signal.setitimer(signal.ITIMER_REAL, left)

    def _disarm(self) -> None:
        signal.setitimer(signal.ITIMER_REAL, 0)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        self._arm(item)
        try:
            return (yield)
        finally:
            self._disarm()

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item):
        module = item.nodeid.split("::", 1)[0]
        if module in self.expired:
            pytest.fail(
                f"not run: {module} ran past its time limit of {self.limit:.0f} s before this "
                "test (tests/support/timings.py)",
                pytrace=False,
            )

    # --- the signal guard ----------------------------------------------------------------

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_teardown(self, item, nextitem):
        try:
            return (yield)
        finally:
            changed = [
                sig for sig, handler in self.handlers.items() if signal.getsignal(sig) != handler
            ]
            for sig in changed:
                signal.signal(sig, self.handlers[sig])
            if changed:
                names = ", ".join(signal.Signals(sig).name for sig in changed)
                item.user_properties.append(("left_signal_handlers", names))

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item, call):
        report = yield
        if call.when == "teardown":
            left = dict(item.user_properties).get("left_signal_handlers")
            if left and report.passed:
                report.outcome = "failed"
                report.longrepr = (
                    f"{item.nodeid} left its own {left} handler installed in pytest's "
                    "process (put back now): pytest would not stop on the signals make test "
                    "stops it with (tests/support/timings.py)"
                )
        return report

    # --- the timings ---------------------------------------------------------------------

    def pytest_runtest_logreport(self, report) -> None:
        path = report.nodeid.split("::", 1)[0]
        module = self.modules.setdefault(path, Module(path))
        now = time.time()
        if report.when == "setup":
            module.tests += 1
            if module.started is None:
                module.started = now - report.duration
        setattr(module, report.when, getattr(module, report.when) + report.duration)
        module.ended = now
        if report.when == "call":
            outcome = report.outcome
        elif report.skipped:
            outcome = "skipped"
        elif report.failed:
            outcome = "error"
        else:
            return
        module.outcomes[outcome] = module.outcomes.get(outcome, 0) + 1

    def pytest_sessionfinish(self, session) -> None:
        target = os.environ.get(TIMINGS_VARIABLE)
        if not target:
            return
        path = Path(target)
        path.parent.mkdir(parents=True, exist_ok=True)
        record = {
            "started": self.started,
            "ended": time.time(),
            "exitstatus": int(session.exitstatus),
            "modules": [asdict(m) | {"total": m.total} for m in self.modules.values()],
        }
        path.write_text(json.dumps(record, indent=1) + "\n")
