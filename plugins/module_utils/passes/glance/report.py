# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""The report of a pass: the status it writes (conditions, endpoint, releases, upgrade
phase), the plan's events it emits, and the ``PassResult`` it ends with.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from ansible_collections.c5c3.glance.plugins.module_utils.desired import conditions as c
from ansible_collections.c5c3.glance.plugins.module_utils.desired.render_plan import Plan
from ansible_collections.c5c3.glance.plugins.module_utils.kube import apply_plan as ap
from ansible_collections.c5c3.glance.plugins.module_utils.passes.glance.pass_state import (
    PassResult,
    _meta,
    _Pass,
)
from ansible_collections.c5c3.glance.plugins.module_utils.passes.status_writer import (
    KEEP,
    glance_status,
    status_patch,
)


def _events_on_change(p: _Pass, plan: Plan, conds: Mapping[str, Mapping[str, str]]) -> None:
    """The plan's events, each only when the condition it belongs to changed."""
    extra = conds.get(c.EXTRA_CONFIG_HEALTHY)
    backends = conds.get(c.BACKENDS_READY)
    gates = {
        c.EVENT_EXTRA_CONFIG_OWNED_KEY_OVERRIDE: extra,
        c.EVENT_GLANCE_BACKEND_SKIPPED: backends,
    }
    for event in plan.events:
        cond = gates.get(event["reason"])
        if cond is None or p.changed(cond):
            p.events.append(dict(event))


def _finish(p: _Pass, plan: Plan | None, now: datetime | str) -> PassResult:
    generation = int(_meta(p.glance).get("generation") or 1)
    new_status = glance_status(
        p.existing_status,
        p.conditions,
        generation,
        now,
        endpoint=p.fields.get("endpoint", KEEP),
        installed_release=p.fields.get("installed_release", KEEP),
        target_release=p.fields.get("target_release", KEEP),
        upgrade_phase=p.fields.get("upgrade_phase", KEEP),
    )
    actions = ap.apply_actions(p.desired, p.live, p.owner_uid) + p.extra_actions
    return PassResult(
        actions=actions,
        status=new_status,
        status_patch=status_patch(p.existing_status, new_status),
        events=p.events,
        requeue_after=p.requeue_after,
        plan=plan,
        annotations=p.annotations,
    )
