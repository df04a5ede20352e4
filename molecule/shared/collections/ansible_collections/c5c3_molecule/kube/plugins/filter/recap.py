# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""Filters (molecule scenarios only): read a reconcile pass's outcome from the output of
``ansible-playbook`` with the default callback and ``ANSIBLE_SHOW_CUSTOM_STATS=true``.

* ``recap_changed``: the ``changed=<n>`` of the PLAY RECAP (summed over hosts); the pass's
  apply and report modules are the only tasks that change, and only when they write.
* ``requeue_after``: the ``requeue_after`` of the run's custom stats (``RUN: {...}``), an
  int, or None when the pass asked for no requeue.
"""

from __future__ import annotations

import json
import re

from ansible.errors import AnsibleFilterError

_RECAP = re.compile(r"^\S+\s+:\s+ok=\d+\s+changed=(\d+)\s", re.MULTILINE)
_RUN_STATS = re.compile(r"^\s*RUN:\s*(\{.*\})\s*$", re.MULTILINE)


def recap_changed(stdout: str) -> int:
    found = _RECAP.findall(stdout or "")
    if not found:
        raise AnsibleFilterError("no PLAY RECAP line in the output of ansible-playbook")
    return sum(int(n) for n in found)


def requeue_after(stdout: str) -> int | None:
    found = _RUN_STATS.findall(stdout or "")
    if not found:
        return None
    value = json.loads(found[-1]).get("requeue_after")
    return None if value is None else int(value)


class FilterModule:
    def filters(self):
        return {"recap_changed": recap_changed, "requeue_after": requeue_after}
