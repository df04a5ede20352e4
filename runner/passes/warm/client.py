"""The warm server's client: what ansible-runner starts as ``ansible-playbook``.

Standard library only, run as ``python -I -S`` (``runner.passes.warm.handle.client_script``
writes it into the server's private dir with the socket's path and the cold ansible-playbook's).
It sends its argv, environment, working directory and fds 0-2 (the pty ansible-runner's
pexpect reads) to the server, which forks the pass; then it forwards the signals it gets
to the pass's process group and exits as the pass did. When the server cannot be reached
(gone, not ready), or refuses the request before forking, it writes one line saying so
and becomes the cold ``ansible-playbook`` (``exec``): a pass never fails for the server.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import struct
import sys

FORWARDED = (
    signal.SIGTERM,
    signal.SIGINT,
    signal.SIGHUP,
    signal.SIGQUIT,
    signal.SIGUSR1,
    signal.SIGUSR2,
)


def _cold(cold: str, reason: str) -> None:
    os.write(2, f"[c5c3 warm server] {reason}: running cold {cold}\n".encode())
    os.execv(cold, [cold, *sys.argv[1:]])


def main(socket_path: str, cold: str) -> None:
    child = {"pid": 0}
    pending: list[int] = []

    def forward(signum: int, _frame: object) -> None:
        if child["pid"]:
            with contextlib.suppress(OSError):
                os.killpg(child["pid"], signum)
        else:
            pending.append(signum)

    for signum in FORWARDED:
        signal.signal(signum, forward)
    payload = json.dumps({"argv": sys.argv, "env": dict(os.environ), "cwd": os.getcwd()}).encode()
    message = struct.pack("!I", len(payload)) + payload
    try:
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.connect(socket_path)
        sent = socket.send_fds(conn, [message[:65536]], [0, 1, 2])
        conn.sendall(message[sent:])
    except OSError as error:
        _cold(cold, f"cannot reach {socket_path} ({error.strerror or error})")
        return
    stream = conn.makefile("rb")
    first = stream.readline().decode().split()
    if not first or first[0] != "pid":
        _cold(cold, f"the server refused the pass ({' '.join(first) or 'no answer'})")
        return
    child["pid"] = int(first[1])
    for signum in pending:
        forward(signum, None)
    line = stream.readline().decode().split()
    if not line or line[0] != "exit":
        # The server is gone while the pass runs: wait for the pass, its status is lost.
        os.write(2, b"[c5c3 warm server] the server went away during the pass\n")
        _wait_gone(child["pid"])
        os._exit(1)
    code = os.waitstatus_to_exitcode(int(line[1]))
    if code < 0:
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
        code = 128 - code
    os._exit(code)


def _wait_gone(pid: int) -> None:
    try:
        fd = os.pidfd_open(pid)
    except OSError:
        return
    import select

    select.select([fd], [], [])
    os.close(fd)
