"""tests/support/timings.py in a pytest run of its own: the timings file, a module's time
limit, and the signal guard."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

TESTS = Path(__file__).resolve().parents[1]

CONFTEST = """
from support.timings import Timings

def pytest_configure(config):
    config.pluginmanager.register(Timings(), "c5c3-timings")
"""


@pytest.fixture
def run(pytester, monkeypatch, tmp_path):
    pytester.makeconftest(CONFTEST)
    monkeypatch.setenv("PYTHONPATH", str(TESTS))
    monkeypatch.setenv("C5C3_TIMINGS_FILE", str(tmp_path / "timings.json"))
    monkeypatch.delenv("C5C3_MODULE_TIME_LIMIT", raising=False)

    def _run(*args):
        result = pytester.runpytest_subprocess("-p", "no:cacheprovider", *args)
        timings = json.loads((tmp_path / "timings.json").read_text())
        return result, {m["path"]: m for m in timings["modules"]}

    return _run


def test_a_module_past_its_limit_fails_by_name_and_the_next_module_runs(pytester, run):
    pytester.makepyfile(
        test_slow="""
        import time
        MODULE_TIME_LIMIT = 2

        def test_hangs():
            while True:
                try:
                    time.sleep(60)
                except Exception:  # a poll that swallows errors still ends
                    pass

        def test_after_it():
            pass
        """,
        test_next="""
        def test_runs():
            pass
        """,
    )
    result, modules = run()
    result.assert_outcomes(passed=1, failed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*not run: test_slow.py ran past its time limit of 2 s before this test*",
            "*ModuleTimeLimit: test_slow.py ran past its time limit of 2 s*",
        ]
    )
    slow = modules["test_slow.py"]
    assert slow["tests"] == 2 and slow["outcomes"] == {"failed": 1, "error": 1}
    assert 1.5 <= slow["call"] < 30
    assert modules["test_next.py"]["outcomes"] == {"passed": 1}


def test_the_limit_covers_the_whole_module_and_0_turns_it_off(pytester, run, monkeypatch):
    pytester.makepyfile(
        test_three="""
        import time

        def test_a():
            time.sleep(1.2)

        def test_b():
            time.sleep(1.2)
        """
    )
    monkeypatch.setenv("C5C3_MODULE_TIME_LIMIT", "2")
    result, _ = run()
    result.assert_outcomes(passed=1, failed=1)  # each alone is under 2 s; both are not
    monkeypatch.setenv("C5C3_MODULE_TIME_LIMIT", "0")
    result, modules = run()
    result.assert_outcomes(passed=2)
    assert modules["test_three.py"]["call"] >= 2.4


def test_setup_call_and_teardown_are_summed_per_module(pytester, run):
    pytester.makepyfile(
        test_fixture="""
        import time
        import pytest

        @pytest.fixture(scope="module")
        def slow_setup():
            time.sleep(1)
            yield
            time.sleep(0.5)

        def test_one(slow_setup):
            pass

        def test_two(slow_setup):
            time.sleep(0.3)

        @pytest.mark.skip(reason="skipped on purpose")
        def test_three():
            pass
        """
    )
    result, modules = run()
    result.assert_outcomes(passed=2, skipped=1)
    module = modules["test_fixture.py"]
    assert module["tests"] == 3
    assert 1 <= module["setup"] < 5 and 0.3 <= module["call"] < 5
    assert 0.5 <= module["teardown"] < 5
    assert module["outcomes"] == {"passed": 2, "skipped": 1}
    assert module["total"] == pytest.approx(module["setup"] + module["call"] + module["teardown"])
    assert module["started"] <= module["ended"]


def test_a_test_that_leaves_a_sigterm_handler_fails_and_it_is_put_back(pytester, run):
    pytester.makepyfile(
        test_signals="""
        import signal

        def test_leaves_one():
            signal.signal(signal.SIGTERM, lambda *_: None)

        def test_sees_the_default():
            assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL

        def test_puts_its_own_back():
            previous = signal.signal(signal.SIGINT, lambda *_: None)
            signal.signal(signal.SIGINT, previous)
        """
    )
    result, _ = run()
    result.assert_outcomes(passed=3, errors=1)
    result.stdout.fnmatch_lines(
        ["*test_leaves_one left its own SIGTERM handler installed in pytest's process*"]
    )
