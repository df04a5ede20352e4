"""Session fixtures of the e2e suite: one real stack for every test (``e2e/stack.py``).

The stack (MariaDB, moto's S3 server, Keystone, and a Glance launched from the rendered
objects) comes up once, on first use, and is stopped at the end of the session, also when
bringing it up failed half-way. The whole suite is skipped only when a program it needs
is not installed (``make e2e-env`` installs them all) or when ``C5C3_SKIP_E2E=1``;
any other failure to bring the stack up fails the tests, with the logs' last lines.
The wsgi-shim tests (``test_wsgi_shim.py``) need no stack, but for the ones marked
``e2e`` (the drain of an error's unread body, on a real upload).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from e2e.stack import Stack, StackError, missing_programs
from support.hack_scripts import hack_script

# The upgrade flow (a library the bench shares) checks as it goes: show the values.
pytest.register_assert_rewrite("e2e.upgrade")

SKIP_ENV = "C5C3_SKIP_E2E"
SKIP_VENV_ENV = "C5C3_SKIP_GLANCE_VENV"
glance_venv = hack_script("glance_venv")


def _say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


@pytest.fixture(scope="session")
def stack(tmp_path_factory) -> Stack:
    if os.environ.get(SKIP_ENV) == "1":
        pytest.skip(f"{SKIP_ENV}=1: the e2e stack is not started")
    missing = missing_programs()
    if missing:
        pytest.skip(
            "the e2e suite needs programs that are not installed (run `make e2e-env`): "
            + ", ".join(missing)
        )
    root = tmp_path_factory.mktemp("e2e", numbered=True)
    stack = Stack(root, log=_say)
    try:
        try:
            stack.start()
        except StackError as exc:
            pytest.fail(f"the e2e stack did not come up: {exc}", pytrace=False)
        yield stack
    finally:
        stack.stop()
        timings = ", ".join(f"{k} {v:.1f}s" for k, v in stack.timings.items())
        _say(f"\n[e2e] timings: {timings}\n[e2e] logs: {root / 'logs'}")


@pytest.fixture
def timed(request, say):
    """Print the test's wall time (this fixture's setup to its teardown)."""
    started = time.monotonic()
    yield
    say(f"\n[e2e] {request.node.name}: {time.monotonic() - started:.1f}s")


@pytest.fixture(scope="session")
def release_venv() -> Callable[[str], Path]:
    """``.venv-glance/<release>``, built on demand; skips with ``C5C3_SKIP_GLANCE_VENV=1``."""

    def _venv(release: str) -> Path:
        if os.environ.get(SKIP_VENV_ENV) == "1":
            pytest.skip(f"{SKIP_VENV_ENV}=1: the Glance {release} environment is not built or used")
        try:
            glance_venv.ensure_venv(release, log=lambda _: None)
        except glance_venv.GlanceVenvError as exc:
            pytest.fail(
                f"cannot build .venv-glance/{release} (make glance-venvs; or set "
                f"{SKIP_VENV_ENV}=1 to skip these tests): {exc}",
                pytrace=False,
            )
        return glance_venv.venv_dir(release)

    return _venv
