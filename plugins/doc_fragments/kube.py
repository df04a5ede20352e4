# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""Documentation shared by the modules that talk to the API server (gather, apply, report)."""

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  kubeconfig:
    description:
      - Path of a kubeconfig. Default, as kubectl - C(K8S_AUTH_KUBECONFIG), C(KUBECONFIG),
        C(~/.kube/config), else the pod's service account.
    type: path
  context:
    description: The kubeconfig context (default - its current-context).
    type: str
  request_timeout:
    description: Seconds one API request may take.
    type: float
    default: 30
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
  platform:
    platforms: posix
"""
