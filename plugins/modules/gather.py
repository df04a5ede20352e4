#!/usr/bin/python
# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""Module: read everything one reconcile pass needs, in one process."""

from __future__ import annotations

DOCUMENTATION = r"""
module: gather
author: C5C3 Glance operator authors
version_added: 0.1.0
short_description: Read what one reconcile pass of a Glance or GlanceBackend needs
description:
  - The gather step of a pass. For a C(Glance) it reads the custom resource (unless
    O(object) hands it in, as the in-cluster runner does), the namespace's GlanceBackends,
    the Secrets and ConfigMaps the spec names, the objects the Glance owns (by their fixed
    names, the content-addressed copies and the Jobs by label), whether the cluster serves
    the Gateway API's HTTPRoute, and, once the Deployment is ready, the API's
    C(/healthcheck) through the API server's service proxy (so it works from a workstation
    and in the cluster alike).
  - For a C(GlanceBackend) it reads the backend, its parent Glance, its credentials Secret,
    the parent's Deployment and the backends Secret that Deployment mounts.
  - One module process; one API request per read over one keep-alive connection. Reads
    only; it never writes.
  - The result carries Secret data, so run the task with C(no_log).
options:
  kind:
    description: The kind of the custom resource.
    type: str
    choices: [Glance, GlanceBackend]
    required: true
  name:
    description: Its name.
    type: str
    required: true
  namespace:
    description: Its namespace.
    type: str
    required: true
  object:
    description:
      - The custom resource as the caller already has it (the runner's
        C(_glance_openstack_c5c3_io_glance)); it is not read again.
    type: dict
  health_check:
    description: Probe the Glance API's C(/healthcheck) once the Deployment is ready.
    type: bool
    default: true
  health_timeout:
    description: Seconds the health probe may take.
    type: float
    default: 10
extends_documentation_fragment:
  - c5c3.glance.kube
"""

EXAMPLES = r"""
- name: Read what the pass needs
  c5c3.glance.gather:
    kind: Glance
    name: glance
    namespace: openstack
  register: glance_gathered
  no_log: true
"""

RETURN = r"""
found:
  description: The custom resource exists.
  type: bool
  returned: always
object:
  description: The custom resource, or null when it does not exist.
  type: dict
  returned: always
now:
  description: The time of the read (RFC 3339, UTC); the pass uses it as its clock.
  type: str
  returned: always
active:
  description:
    - (Glance) The Glance carries the finalizer and is not being deleted. Otherwise the
      pass only adds or releases the finalizer, and nothing else is read.
  type: bool
  returned: kind is Glance and found
backends:
  description: (Glance) The GlanceBackends of the namespace.
  type: list
  elements: dict
  returned: kind is Glance and active
secrets:
  description: The Secrets the spec names that exist.
  type: list
  elements: dict
  returned: found (Glance - and active)
configmaps:
  description: (Glance) The ConfigMaps the spec names that exist.
  type: list
  elements: dict
  returned: kind is Glance and active
owned:
  description: (Glance) The live objects the Glance owns, as one flat list.
  type: list
  elements: dict
  returned: kind is Glance and active
gateway_api:
  description: (Glance) The cluster serves gateway.networking.k8s.io/v1 HTTPRoute.
  type: bool
  returned: kind is Glance and active
health:
  description:
    - (Glance) The probe of the API - url, status_code (null for a transport error),
      error_kind (timeout, dns, refused, other or null), body, error. Null when not probed.
  type: dict
  returned: kind is Glance and active
operator_namespace:
  description: (Glance) C(POD_NAMESPACE), or null outside the operator's pod.
  type: str
  returned: kind is Glance and active
parent:
  description: (GlanceBackend) The parent Glance, or null.
  type: dict
  returned: kind is GlanceBackend and found
parent_deployment:
  description: (GlanceBackend) The parent's Deployment, or null.
  type: dict
  returned: kind is GlanceBackend and found
mounted_secret:
  description: (GlanceBackend) The backends Secret the parent's Deployment mounts, or null.
  type: dict
  returned: kind is GlanceBackend and found
api_requests:
  description: How many API requests the module made.
  type: int
  returned: always
"""

import datetime

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.c5c3.glance.plugins.module_utils import live_state as ls
from ansible_collections.c5c3.glance.plugins.module_utils import pass_reads as pr
from ansible_collections.c5c3.glance.plugins.module_utils.glance_pass import is_active
from ansible_collections.c5c3.glance.plugins.module_utils.kube_client import (
    ApiError,
    KubeClient,
    KubeConfigError,
)
from ansible_collections.c5c3.glance.plugins.module_utils.kube_module import (
    CONNECTION_OPTIONS,
    client_from_params,
    operator_namespace,
)
from ansible_collections.c5c3.glance.plugins.module_utils.probe import probe_health


def _read(client: KubeClient, read: pr.Read) -> list:
    """The objects one read returns (a GET: zero or one)."""
    if read.name is not None:
        obj = client.get(read.api_version, read.kind, read.name, read.namespace)
        if obj is None:
            return []
        obj.setdefault("apiVersion", read.api_version)
        obj.setdefault("kind", read.kind)
        return [obj]
    return client.list(
        read.api_version, read.kind, read.namespace, label_selector=read.label_selector
    )


def gather_glance(client: KubeClient, glance: dict, health_check: bool, timeout: float) -> dict:
    namespace = glance["metadata"]["namespace"]
    backends = client.list(pr.GROUP_VERSION, "GlanceBackend", namespace)
    gateway_api = client.serves(pr.HTTP_ROUTE_API, "HTTPRoute")
    secrets, configmaps, owned = [], [], []
    for read in pr.glance_reads(glance, backends, gateway_api):
        found = _read(client, read)
        if read.owned:
            owned.extend(found)
        elif read.kind == "Secret":
            secrets.extend(found)
        else:
            configmaps.extend(found)
    live = ls.live_objects(glance["metadata"]["name"], owned, gateway_api=gateway_api)
    health = None
    if health_check and ls.deployment_ready(live.deployment):
        health = probe_health(client, glance, timeout)
    return {
        "backends": backends,
        "secrets": secrets,
        "configmaps": configmaps,
        "owned": owned,
        "gateway_api": gateway_api,
        "health": health,
        "operator_namespace": operator_namespace(),
    }


def gather_backend(client: KubeClient, backend: dict) -> dict:
    out: dict = {"parent": None, "secrets": [], "parent_deployment": None, "mounted_secret": None}
    for read in pr.backend_reads(backend):
        found = _read(client, read)
        if read.kind == "Glance":
            out["parent"] = found[0] if found else None
        elif read.kind == "Secret":
            out["secrets"].extend(found)
        elif read.kind == "Deployment":
            out["parent_deployment"] = found[0] if found else None
    _, mounted = ls.mounted_artifacts(out["parent_deployment"])
    if mounted:
        out["mounted_secret"] = client.get(
            "v1", "Secret", mounted, backend["metadata"]["namespace"]
        )
    return out


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "kind": {"type": "str", "required": True, "choices": ["Glance", "GlanceBackend"]},
            "name": {"type": "str", "required": True},
            "namespace": {"type": "str", "required": True},
            "object": {"type": "dict"},
            "health_check": {"type": "bool", "default": True},
            "health_timeout": {"type": "float", "default": 10.0},
            **CONNECTION_OPTIONS,
        },
        supports_check_mode=True,
    )
    p = module.params
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    client = None
    try:
        client = client_from_params(p)
        obj = p["object"]
        if not obj:
            obj = client.get(pr.GROUP_VERSION, p["kind"], p["name"], p["namespace"])
        result: dict = {"found": obj is not None, "object": obj, "now": now}
        if obj is not None:
            obj.setdefault("apiVersion", pr.GROUP_VERSION)
            obj.setdefault("kind", p["kind"])
            if p["kind"] == "Glance":
                result["active"] = is_active(obj)
                if result["active"]:
                    result.update(
                        gather_glance(client, obj, p["health_check"], p["health_timeout"])
                    )
            else:
                result.update(gather_backend(client, obj))
    except (KubeConfigError, ApiError, OSError) as exc:
        module.fail_json(
            msg=f"gather {p['kind']} {p['namespace']}/{p['name']}: {exc}",
            api_requests=client.requests if client else 0,
        )
    result["api_requests"] = client.requests
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
