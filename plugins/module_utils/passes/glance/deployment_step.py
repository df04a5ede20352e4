# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""Step 6 of a pass: the Deployment, Service and PDB; ``status.endpoint`` once the
Deployment is ready, and in an upgrade's RollingUpdate the rollout that moves it on to
Contracting.
"""

from __future__ import annotations

from ansible_collections.c5c3.glance.plugins.module_utils.desired import conditions as c
from ansible_collections.c5c3.glance.plugins.module_utils.desired import upgrade
from ansible_collections.c5c3.glance.plugins.module_utils.desired.objects import keys as ok
from ansible_collections.c5c3.glance.plugins.module_utils.desired.render_plan import Plan
from ansible_collections.c5c3.glance.plugins.module_utils.kube import apply_plan as ap
from ansible_collections.c5c3.glance.plugins.module_utils.kube import live_state as ls
from ansible_collections.c5c3.glance.plugins.module_utils.passes.glance.api_health import (
    endpoint_url,
)
from ansible_collections.c5c3.glance.plugins.module_utils.passes.glance.pass_state import (
    REQUEUE_DEPLOYMENT,
    REQUEUE_HEALTH,
    REQUEUE_NOW,
    REQUEUE_RECREATE,
    _conflict,
    _Pass,
)

DEPLOYMENT_AVAILABLE = "Glance API deployment is available"
DEPLOYMENT_NOT_AVAILABLE = "Glance API deployment is not yet available"
ENDPOINT_NOT_CONFIGURED = "endpoint not yet configured"


def _deployment_step(p: _Pass, plan: Plan) -> bool:
    """Deployment, Service, PDB; True when the Deployment is ready."""
    deployment = p.want(ok.DEPLOYMENT, plan.desired.get(ok.DEPLOYMENT))
    service = p.want(ok.SERVICE, plan.desired.get(ok.SERVICE))
    pdb = p.want(ok.PDB, plan.desired.get(ok.PDB))
    live_deployment = p.live.deployment
    actions = ap.deployment_actions(deployment, live_deployment, p.owner_uid)
    main = actions[-1]  # the Deployment's own action (after a replicas hand-over)
    actions.append(ap.service_action(service, p.live.get(ok.SERVICE), live_deployment, p.owner_uid))
    actions.append(ap.ssa_action(ok.PDB, pdb, p.live.get(ok.PDB), p.owner_uid))
    for action in actions:
        if action.error:
            _conflict(p, c.DEPLOYMENT_READY, action)
            if action is main:
                # No Service or PDB in front of pods this Glance does not run.
                p.desired.pop(ok.SERVICE)
                p.desired.pop(ok.PDB)
            return False
    if main.reason == ap.SELECTOR_CHANGED:
        message = (
            f"The selector of Deployment {main.namespace}/{main.name} changed and is immutable: "
            "deleting it to create it again"
        )
        p.set(
            c.condition(c.DEPLOYMENT_READY, False, c.WAITING_FOR_DEPLOYMENT, message),
            REQUEUE_RECREATE,
        )
        return False
    ready = main.reason == ap.UNCHANGED and ls.deployment_ready(live_deployment)
    rolling = p.upgrade.action == upgrade.PHASE and p.upgrade.phase == upgrade.ROLLING_UPDATE
    if ready and rolling:
        if not upgrade.rollout_converged(live_deployment):
            p.set(
                c.condition(
                    c.DEPLOYMENT_READY, False, c.WAITING_FOR_DEPLOYMENT, upgrade.ROLLOUT_WAITING
                ),
                REQUEUE_DEPLOYMENT,
            )
            return False
        # Every pod runs the new release: contract next, at once; the endpoint waits.
        p.fields["upgrade_phase"] = upgrade.CONTRACTING
        p.events.append(upgrade.rollout_complete(p.upgrade))
        p.set(
            c.condition(c.DEPLOYMENT_READY, True, c.DEPLOYMENT_READY_REASON, DEPLOYMENT_AVAILABLE),
            REQUEUE_NOW,
        )
        return False
    if not ready:
        p.set(
            c.condition(
                c.DEPLOYMENT_READY, False, c.WAITING_FOR_DEPLOYMENT, DEPLOYMENT_NOT_AVAILABLE
            ),
            REQUEUE_DEPLOYMENT,
        )
        if not p.existing_status.get("endpoint"):
            p.set(
                c.condition(
                    c.GLANCE_API_READY, False, c.ENDPOINT_NOT_READY, ENDPOINT_NOT_CONFIGURED
                ),
                REQUEUE_HEALTH,
            )
        return False
    p.fields["endpoint"] = endpoint_url(p.glance)
    p.set(c.condition(c.DEPLOYMENT_READY, True, c.DEPLOYMENT_READY_REASON, DEPLOYMENT_AVAILABLE))
    return True
