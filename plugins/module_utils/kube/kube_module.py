# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""What the gather, apply and report modules share: their connection options and client."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from ansible_collections.c5c3.glance.plugins.module_utils.kube.kube_client import (
    KubeClient,
    KubeConfigError,
)

CONNECTION_OPTIONS: dict[str, dict[str, Any]] = {
    "kubeconfig": {"type": "path"},
    "context": {"type": "str"},
    "request_timeout": {"type": "float", "default": 30.0},
}


def client_from_params(params: Mapping[str, Any]) -> KubeClient:
    """A client for the module's ``kubeconfig``/``context`` (else the environment's)."""
    return KubeClient.from_environment(
        kubeconfig=params.get("kubeconfig"),
        context=params.get("context"),
        origin="the module's kubeconfig option",
        timeout=float(params.get("request_timeout") or 30.0),
    )


def operator_namespace() -> str | None:
    """Where the operator's pod runs (``POD_NAMESPACE``, the downward API); None from a
    workstation, where no operator pod exists to admit through the NetworkPolicy."""
    return os.environ.get("POD_NAMESPACE") or None


__all__ = ["CONNECTION_OPTIONS", "KubeConfigError", "client_from_params", "operator_namespace"]
