# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""From what the gather module returned to the arguments of the pass deciders.

The gather module returns plain data (``plugins/modules/gather.py``'s RETURN); the
deciders take typed inputs. These functions are the one translation between the two,
used by the filter plugins and by tests that drive a pass without Ansible.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from ansible_collections.c5c3.glance.plugins.module_utils.admission.collection_files import (
    load_catalogs,
    load_crds,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.role_templates import (
    objects_by_key,
)
from ansible_collections.c5c3.glance.plugins.module_utils.kube import live_state as ls
from ansible_collections.c5c3.glance.plugins.module_utils.passes import glancebackend_pass as bp
from ansible_collections.c5c3.glance.plugins.module_utils.passes.glance.decide import (
    decide_pass,
    is_active,
    pass_plan,
)
from ansible_collections.c5c3.glance.plugins.module_utils.passes.glance.deletion import (
    ABANDON_AFTER,
)
from ansible_collections.c5c3.glance.plugins.module_utils.passes.glance.pass_state import PlanInputs


def plain(value: Any) -> Any:
    """``value`` as plain JSON data (no Ansible-tagged or unsafe types, no shared objects)."""
    return json.loads(json.dumps(value))


def glance_inputs(gathered: Mapping[str, Any]) -> tuple[dict, PlanInputs, ls.LiveObjects]:
    """The Glance, the plan inputs and the live objects of a gathered Glance pass."""
    data = plain(gathered)
    glance = data["object"]
    inputs = PlanInputs(
        crds=load_crds(),
        backends=data.get("backends") or [],
        secrets=data.get("secrets") or [],
        configmaps=data.get("configmaps") or [],
        catalogs=load_catalogs(),
        operator_namespace=data.get("operator_namespace"),
        secret_store=data.get("secret_store"),
        external_secrets=data.get("external_secrets") or [],
        database_cluster=data.get("database_cluster"),
    )
    live = ls.live_objects(
        glance["metadata"]["name"],
        data.get("owned") or [],
        gateway_api=bool(data.get("gateway_api")),
    )
    return glance, inputs, live


def glance_plan(gathered: Mapping[str, Any]) -> dict[str, Any]:
    """The plan of a gathered Glance pass (``Plan.as_dict``): what the roles render."""
    glance, inputs, live = glance_inputs(gathered)
    return pass_plan(glance, inputs, live).as_dict()


def glance_decision(
    gathered: Mapping[str, Any],
    rendered: Iterable[Mapping[str, Any]] | None = None,
    abandon_after: int = ABANDON_AFTER,
) -> dict[str, Any]:
    """Decide a gathered Glance pass with the objects the roles ``rendered`` (None: render
    them from the templates here). The result is ``PassResult.as_dict`` plus ``writes``
    (how many actions write) and ``object`` (the custom resource's reference).
    ``abandon_after``: seconds a deleted Glance waits for an unresolvable target cluster."""
    glance, inputs, live = glance_inputs(gathered)
    objects = plan = None
    if rendered is not None and is_active(glance):
        plan = pass_plan(glance, inputs, live)
        objects = objects_by_key(plan.desired, plain(list(rendered)))
    result = decide_pass(
        glance,
        inputs,
        live,
        gathered["now"],
        health=gathered.get("health"),
        objects=objects,
        plan=plan,
        target_cluster=gathered.get("target_cluster"),
        remote_children=plain(gathered.get("remote_children") or []),
        abandon_after=abandon_after,
    )
    out = result.as_dict()
    out["writes"] = len(result.writes)
    out["object"] = reference(glance)
    return out


def reference(obj: Mapping[str, Any]) -> dict[str, Any]:
    """What the apply and report modules need to address a custom resource."""
    meta = obj.get("metadata") or {}
    return {
        "api_version": obj.get("apiVersion"),
        "kind": obj.get("kind"),
        "name": meta.get("name"),
        "namespace": meta.get("namespace"),
        "uid": meta.get("uid"),
        "resource_version": meta.get("resourceVersion"),
        "finalizers": list(meta.get("finalizers") or []),
    }


def backend_decision(gathered: Mapping[str, Any]) -> dict[str, Any]:
    """Decide a gathered GlanceBackend pass (``BackendPassResult.as_dict`` plus ``object``;
    the backend pass emits no events)."""
    data = plain(gathered)
    backend = data["object"]
    result = bp.decide_backend_pass(
        backend,
        data.get("parent"),
        data.get("secrets") or [],
        data.get("parent_deployment"),
        data.get("mounted_secret"),
        data["now"],
        target_cluster=data.get("target_cluster"),
    )
    out = result.as_dict()
    out["object"] = reference(backend)
    out["events"] = []
    return out
