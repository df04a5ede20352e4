"""A warm pass, in the child the server forked: it becomes the pass's ``ansible-playbook``
(its environment, directory and stdio) and runs the CLI in-process."""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import sys
import tempfile
import threading
from collections.abc import Mapping
from typing import Any

from runner.passes.warm.preload import collection_key


def run_playbook_here(  # pragma: no cover - runs in the forked child
    request: Mapping[str, Any], key: tuple[Any, ...], base_path: list[str]
) -> int:
    """Become the pass's ansible-playbook: its environment, directory, stdio; run the CLI."""
    env = {str(k): str(v) for k, v in request["env"].items()}
    cwd = str(request.get("cwd") or "/")
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    tempfile.tempdir = None  # TMPDIR of this pass
    with contextlib.suppress(OSError):
        import fcntl
        import termios

        fcntl.ioctl(0, termios.TIOCSCTTY, 0)  # fails while the client's session holds it
    tty = os.isatty(1)
    sys.stdin = sys.__stdin__ = open(0, closefd=False, encoding="utf-8")  # noqa: SIM115
    sys.stdout = sys.__stdout__ = open(  # noqa: SIM115
        1, "w", buffering=1 if tty else -1, closefd=False, encoding="utf-8"
    )
    sys.stderr = sys.__stderr__ = open(  # noqa: SIM115
        2, "w", buffering=1, closefd=False, encoding="utf-8", errors="backslashreplace"
    )
    program = shutil.which("ansible-playbook", path=env.get("PATH")) or "ansible-playbook"
    sys.argv = [program, *[str(a) for a in request["argv"][1:]]]
    python_path = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    sys.path[:] = [os.path.dirname(program), *python_path, *base_path]
    if collection_key(env, cwd) != key:
        stale = [n for n in sys.modules if n.split(".")[0] == "ansible_collections"]
        for name in stale:
            del sys.modules[name]
    code: Any = 0
    try:
        from ansible.cli.playbook import main

        code = main()
    except SystemExit as exit_:
        code = exit_.code
    if code is None:
        code = 0
    elif not isinstance(code, int):
        print(code, file=sys.stderr)
        code = 1
    threading_shutdown = getattr(threading, "_shutdown", None)
    if threading_shutdown is not None:
        threading_shutdown()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    return code & 0xFF
