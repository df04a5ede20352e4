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
    description: Its name; not empty (the step fails, naming the playbook's variables).
    type: str
    required: true
  namespace:
    description: Its namespace; not empty, as O(name).
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
  clusters_namespace:
    description:
      - Where the kubeconfig Secrets of target clusters are. A Glance naming one in
        C(spec.targetClusterRef) (a GlanceBackend, its parent's) has everything but itself
        and its GlanceBackends read there. Empty - target clusters are off.
    type: str
    default: c5c3-clusters
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
  description:
    - (Glance) The live objects the Glance owns, as one flat list. For a Glance being
      deleted, only its k8s.mariadb.com Database, User and Grant (managed mode).
  type: list
  elements: dict
  returned: kind is Glance
gateway_api:
  description: (Glance) The cluster serves gateway.networking.k8s.io/v1 HTTPRoute.
  type: bool
  returned: kind is Glance and active
secret_store:
  description:
    - (Glance) The external-secrets.io/v1 store the Glance selects (C(spec.secretStoreRef),
      else the ClusterSecretStore C(openbao-cluster-store)), or null when it does not exist
      or the cluster does not serve external-secrets.io.
  type: dict
  returned: kind is Glance and active
external_secrets:
  description:
    - (Glance) The ExternalSecrets of the namespace named like the database and
      service-user Secrets, where the cluster serves external-secrets.io.
  type: list
  elements: dict
  returned: kind is Glance and active
database_cluster:
  description:
    - (Glance) The k8s.mariadb.com MariaDB that spec.database.clusterRef names (managed mode);
      null in brownfield mode or when it does not exist.
  type: dict
  returned: kind is Glance and active
health:
  description:
    - (Glance) The probe of the API - url, status_code (null for a transport error),
      error_kind (timeout, dns, refused, other or null), body, error. Null when not probed.
  type: dict
  returned: kind is Glance and active
target_cluster:
  description:
    - The target cluster the Glance (a GlanceBackend's parent) names - name, registration
      (the Secret, namespace/name), server, and error - why it cannot be resolved or did not
      answer, null when it did; then nothing else was read there.
  type: dict
  returned: the Glance names a target cluster
remote_children:
  description:
    - (Glance being deleted, holding C(openstack.c5c3.io/remote-children)) every object on
      the target cluster carrying the Glance's ownership labels, to delete.
  type: list
  elements: dict
  returned: kind is Glance, being deleted, target cluster resolved
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

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.c5c3.glance.plugins.module_utils.passes import pass_steps as ps


def main() -> None:
    # The action plugin of the same name runs the step in the playbook's process; this
    # module is the path for a connection that is not local.
    module = AnsibleModule(argument_spec=ps.GATHER_SPEC, supports_check_mode=True)
    result = ps.gather(module.params)
    if result.get("failed"):
        module.fail_json(**result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
