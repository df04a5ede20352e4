"""What the warm server, its client and the runner's handle agree on: the names in the
server's private dir, the request's bound, the kill grace, and how a request is read.

A request is a 4-byte length, the JSON (``argv``, ``env``, ``cwd``) and, with its first
chunk, the client's fds 0-2 (``SCM_RIGHTS``); the server answers lines: ``pid <pid>``, then
``exit <status> <cpu seconds>``, or ``error <why>`` before it forks. The client's side is
``client.py`` (standard library only, run without this package).
"""

from __future__ import annotations

import json
import os
import socket
import struct
from typing import Any

SOCKET_NAME = "sock"
CLIENT_NAME = "ansible-playbook"
"""The client's file name: ansible-runner's ``binary``. ansible-playbook's name, so the
process list and ansible's own ``sys.argv[0]`` checks look as they do for a cold pass."""
MAX_REQUEST = 4 * 1024 * 1024
KILL_GRACE = 5.0


def receive(conn: socket.socket) -> tuple[dict[str, Any], list[int]]:
    """One request: a 4-byte length, the JSON, fds 0-2 of the client (``SCM_RIGHTS``)."""
    data, fds, _, _ = socket.recv_fds(conn, 65536, 3)
    if len(fds) != 3:
        for fd in fds:
            os.close(fd)
        raise ValueError("a request must carry the client's stdin, stdout and stderr")
    try:
        if len(data) < 4:
            raise ValueError("short request")
        (length,) = struct.unpack("!I", data[:4])
        if length > MAX_REQUEST:
            raise ValueError("request too long")
        body = bytearray(data[4:])
        while len(body) < length:
            chunk = conn.recv(length - len(body))
            if not chunk:
                raise ValueError("request cut short")
            body += chunk
        request = json.loads(bytes(body))
        if not isinstance(request.get("argv"), list) or not isinstance(request.get("env"), dict):
            raise ValueError("a request needs argv and env")
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise
    return request, list(fds)
