"""The runner's log: one JSON object per line on stderr.

Every line has ``ts`` (UTC, milliseconds), ``level``, ``logger`` and ``msg``; a line about
one custom resource also carries ``controller`` (the lower-case kind) and ``key``
(``namespace/name``), so ``jq 'select(.key == "openstack/glance")'`` follows one object
through its passes. The webhook writes its own JSON lines through the same handler.
"""

from __future__ import annotations

import datetime
import json
import logging
import sys
from typing import Any

_configured = False


def configure(level: int = logging.INFO, stream: Any = None) -> None:
    """Send every ``runner.*`` record to ``stream`` (stderr) as its message alone: the
    messages are JSON lines already."""
    global _configured
    if _configured:
        return
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    root = logging.getLogger("runner")
    root.addHandler(handler)
    root.setLevel(level)
    root.propagate = False
    _configured = True


def line(logger: str, message: str, level: int = logging.INFO, /, **fields: Any) -> str:
    """The JSON text of one log line (fields whose value is None are left out)."""
    record = {
        "ts": datetime.datetime.now(datetime.UTC).isoformat(timespec="milliseconds"),
        "level": logging.getLevelName(level).lower(),
        "logger": logger,
        "msg": message,
        **{name: value for name, value in fields.items() if value is not None},
    }
    return json.dumps(record, ensure_ascii=False, default=str)


class Log:
    """``Log("manager").info("started", key="ns/name")`` writes one JSON line."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._logger = logging.getLogger(f"runner.{name}")

    def log(self, level: int, message: str, /, **fields: Any) -> None:
        if self._logger.isEnabledFor(level):
            self._logger.log(level, "%s", line(self.name, message, level, **fields))

    def enabled_for_debug(self) -> bool:
        return self._logger.isEnabledFor(logging.DEBUG)

    def debug(self, message: str, /, **fields: Any) -> None:
        self.log(logging.DEBUG, message, **fields)

    def info(self, message: str, /, **fields: Any) -> None:
        self.log(logging.INFO, message, **fields)

    def warning(self, message: str, /, **fields: Any) -> None:
        self.log(logging.WARNING, message, **fields)

    def error(self, message: str, /, **fields: Any) -> None:
        self.log(logging.ERROR, message, **fields)
