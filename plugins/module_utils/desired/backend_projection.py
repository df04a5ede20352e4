# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""GlanceBackends to store sections: credentials, ``backends.conf`` and ``BackendsReady``.

The GlanceBackends attached to a Glance (same namespace, ``spec.glanceRef.name`` names it,
not being deleted) are projected into the ``backends.conf`` key of the immutable Secret
``<glance>-backends-<hash8>`` (reference-spec §1.4, §2.3 step 3, §3.3):

* ``backend_credentials`` is a backend's ``CredentialsReady`` (§2.4 step 3): the parent
  Glance must exist and the Secret ``spec.s3.credentialsSecretRef.name`` must carry the
  fixed keys ``access-key-id`` and ``secret-access-key``. As in the Secrets gate, an
  empty value counts as missing.
* ``render_store_section`` renders one ``[<name>]`` section, keys sorted: the operator's
  ``s3_store_*`` options, the optional ones only when set, then ``extraOptions``, which
  never override an operator key. A missing Secret or key, or a newline or carriage return
  in any option name or value (it would inject INI lines), is a ``BackendFault``.
  ``$`` in an operator value is written ``$$``: oslo.config reads ``$name`` as a reference
  to another option, and a Secret value must reach glance_store literally.
  ``extraOptions`` are written as given (they are oslo values by contract).
* ``project_backends`` is the whole step. Exactly one credential-ready default must exist,
  else the projection is invalid (``NoDefaultBackend``), nothing is rendered and the
  config step keeps the last-good artefacts (§2.9). A valid projection renders every
  credential-ready backend; a faulty one is skipped (event ``GlanceBackendSkipped``) and
  reported pending, and the others still project.

The file holds no ``default_backend``: that lives in glance-api.conf, so an ``isDefault``
flip leaves ``backends.conf`` (and the backends Secret name) unchanged. Pure and
deterministic: backends are sorted by name, sections and keys are sorted.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ansible_collections.c5c3.glance.plugins.module_utils.desired.conditions import (
    ALL_BACKENDS_PROJECTED,
    BACKENDS_READY,
    CREDENTIALS_AVAILABLE,
    CREDENTIALS_READY,
    NO_DEFAULT_BACKEND,
    TRUE,
    WAITING_FOR_BACKENDS,
    WAITING_FOR_CREDENTIALS,
    WAITING_FOR_PARENT,
    condition,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.glance_secrets import (
    Secrets,
    credential_gate_message,
)

S3_ACCESS_KEY_ID = "access-key-id"
S3_SECRET_ACCESS_KEY = "secret-access-key"
S3_KEYS = (S3_ACCESS_KEY_ID, S3_SECRET_ACCESS_KEY)
STORE_TYPE_S3 = "s3"
DEFAULT_BUCKET_URL_FORMAT = "path"
BACKENDS_CONF_KEY = "backends.conf"

NO_DEFAULT_MESSAGE = (
    "No attached, credential-ready backend is marked isDefault; exactly one is required"
)
MANY_DEFAULTS_MESSAGE = (
    "More than one attached, credential-ready backend is marked isDefault ({names}); "
    "exactly one is required"
)
ALL_PROJECTED_MESSAGE = "All attached backends are projected"
# The reference's errControlCharInValue (reconcile_backends.go).
CONTROL_CHAR_IN_OPTION = (
    "[glance_store] option name or value contains a newline or carriage-return character"
)
CREDENTIALS_NOT_READY = "credentials not ready"


class BackendFault(ValueError):
    """A per-backend fault: this backend is skipped, its siblings still project."""


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def _name(obj: Mapping[str, Any]) -> str:
    return str(_meta(obj).get("name", ""))


def _namespace(obj: Mapping[str, Any], fallback: str = "default") -> str:
    return str(_meta(obj).get("namespace") or fallback)


def _spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("spec") or {}


def _s3(backend: Mapping[str, Any]) -> Mapping[str, Any] | None:
    return _spec(backend).get("s3")


def credentials_secret(backend: Mapping[str, Any]) -> str:
    return str(((_s3(backend) or {}).get("credentialsSecretRef") or {}).get("name", ""))


def is_attached(backend: Mapping[str, Any], glance: Mapping[str, Any]) -> bool:
    """``backend`` is in ``glance``'s namespace, names it and is not being deleted."""
    namespace = _namespace(glance)
    return (
        _namespace(backend, namespace) == namespace
        and (_spec(backend).get("glanceRef") or {}).get("name") == _name(glance)
        and not _meta(backend).get("deletionTimestamp")
    )


def backend_credentials(
    backend: Mapping[str, Any], parent: Mapping[str, Any] | None, secrets: Secrets
) -> dict[str, str]:
    """The ``CredentialsReady`` condition of ``backend`` (§1.4, §2.4 steps 2 and 3)."""
    namespace = _namespace(backend)
    if parent is None:
        glance = (_spec(backend).get("glanceRef") or {}).get("name", "")
        return condition(
            CREDENTIALS_READY,
            False,
            WAITING_FOR_PARENT,
            f"parent Glance {namespace}/{glance} does not exist; the cluster this backend's "
            "credentials belong on is unknown (spec.glanceRef.name)",
        )
    if _s3(backend) is None:
        return condition(
            CREDENTIALS_READY,
            False,
            WAITING_FOR_CREDENTIALS,
            "spec.s3 is not set; no S3 credentials to resolve",
        )
    secret = credentials_secret(backend)
    message = credential_gate_message(
        "S3 credentials", namespace, secret, secrets.get(secret), S3_KEYS
    )
    if message is not None:
        return condition(CREDENTIALS_READY, False, WAITING_FOR_CREDENTIALS, message)
    return condition(
        CREDENTIALS_READY,
        True,
        CREDENTIALS_AVAILABLE,
        f'S3 credentials Secret "{secret}" carries the required keys',
    )


def _literal(value: str) -> str:
    """``value`` as an oslo.config literal: ``$`` doubled so it is never substituted."""
    return value.replace("$", "$$")


def store_options(backend: Mapping[str, Any], secrets: Secrets) -> dict[str, str]:
    """The options of ``backend``'s store section, unsorted; BackendFault when it cannot render."""
    name = _name(backend)
    s3 = _s3(backend)
    if s3 is None:
        raise BackendFault(f"backend {name} has type {_spec(backend).get('type')} but no s3 block")
    namespace = _namespace(backend)
    secret = credentials_secret(backend)
    data = secrets.get(secret)
    # The reference's words (secrets.GetSecretValue), then which Secret it is.
    if data is None:
        raise BackendFault(
            f'getting Secret {namespace}/{secret}: secrets "{secret}" not found (the S3 '
            "credentials Secret)"
        )
    for key in S3_KEYS:
        if not data.get(key):
            state = "key is empty" if key in data else "key not found"
            raise BackendFault(
                f'{state} in Secret: key "{key}" in Secret {namespace}/{secret} (the S3 '
                "credentials Secret)"
            )
    options = {
        "s3_store_host": _literal(str(s3.get("host", ""))),
        "s3_store_bucket": _literal(str(s3.get("bucket", ""))),
        "s3_store_access_key": _literal(data[S3_ACCESS_KEY_ID]),
        "s3_store_secret_key": _literal(data[S3_SECRET_ACCESS_KEY]),
        "s3_store_bucket_url_format": _literal(
            str(s3.get("bucketURLFormat") or DEFAULT_BUCKET_URL_FORMAT)
        ),
    }
    if s3.get("region"):
        options["s3_store_region_name"] = _literal(str(s3["region"]))
    if s3.get("createBucketOnPut") is True:
        options["s3_store_create_bucket_on_put"] = "true"
    if s3.get("largeObjectSize") is not None:
        options["s3_store_large_object_size"] = str(int(s3["largeObjectSize"]))
    if s3.get("largeObjectChunkSize") is not None:
        options["s3_store_large_object_chunk_size"] = str(int(s3["largeObjectChunkSize"]))
    for key, value in (_spec(backend).get("extraOptions") or {}).items():
        options.setdefault(str(key), str(value))
    for key in sorted(options):
        if any(c in key for c in "\n\r"):
            raise BackendFault(f"{CONTROL_CHAR_IN_OPTION} (option name {key!r} of [{name}])")
        if any(c in options[key] for c in "\n\r"):
            raise BackendFault(f"{CONTROL_CHAR_IN_OPTION} (option {key} of [{name}])")
    return options


def render_section(name: str, options: Mapping[str, str]) -> str:
    """``[name]`` and one ``key = value`` line per option, keys sorted."""
    lines = [f"[{name}]"] + [f"{key} = {options[key]}" for key in sorted(options)]
    return "\n".join(lines) + "\n"


def render_store_section(backend: Mapping[str, Any], secrets: Secrets) -> str:
    """The ``[<name>]`` store section of ``backend`` (§3.3); BackendFault when it cannot render."""
    return render_section(_name(backend), store_options(backend, secrets))


def render_backends_conf(sections: Mapping[str, str]) -> str:
    """The rendered sections, by section name, separated by one blank line; "" for none."""
    return "\n".join(sections[name] for name in sorted(sections))


@dataclass
class Projection:
    """The Backends step's result for one Glance.

    * ``s3_hosts``: ``spec.s3.host`` of every attached backend, by backend name, whatever
      its readiness (the NetworkPolicy egress follows it even when invalid).
    * ``default_candidates``: the credential-ready backends marked isDefault.
    * ``valid``: exactly one default candidate; only then is anything rendered, otherwise
      the config step keeps the last-good artefacts.
    * ``default_backend``: that one candidate, else None.
    * ``enabled_backends``: ``<name>:s3`` of every backend that rendered, sorted by name
      (``[DEFAULT] enabled_backends`` is these joined with ``,``).
    * ``backends_conf``: the ``backends.conf`` file (possibly empty).
    * ``skipped``: ``(name, error)`` of each backend whose section failed to render.
    * ``pending``: ``(name, why)`` of each backend not credential-ready or skipped.
    * ``condition``: ``BackendsReady``; ``backend_conditions``: each attached backend's
      ``CredentialsReady``.
    """

    s3_hosts: list[str] = field(default_factory=list)
    default_candidates: list[str] = field(default_factory=list)
    valid: bool = False
    default_backend: str | None = None
    enabled_backends: list[str] = field(default_factory=list)
    backends_conf: str = ""
    skipped: list[tuple[str, str]] = field(default_factory=list)
    pending: list[tuple[str, str]] = field(default_factory=list)
    condition: dict[str, str] = field(default_factory=dict)
    backend_conditions: dict[str, dict[str, str]] = field(default_factory=dict)

    @property
    def enabled_backends_value(self) -> str:
        """The ``[DEFAULT] enabled_backends`` value."""
        return ",".join(self.enabled_backends)

    @property
    def enabled_stores(self) -> list[str]:
        """The store ids of ``enabled_backends`` (the backend names, sorted)."""
        return [entry.rsplit(":", 1)[0] for entry in self.enabled_backends]

    @property
    def configurable(self) -> bool:
        """A configuration can be rendered: one default, and its own section rendered.

        The reference renders a configuration whose default store failed to render, and
        glance then refuses to start; this operator keeps the last good one instead.
        """
        return self.valid and self.default_rendered

    @property
    def backends_data(self) -> dict[str, str]:
        """The data of the backends Secret (hash it with ``content_address.content_name``)."""
        return {BACKENDS_CONF_KEY: self.backends_conf}

    @property
    def default_rendered(self) -> bool:
        """The default backend's own section rendered (it is listed in enabled_backends)."""
        return f"{self.default_backend}:{STORE_TYPE_S3}" in self.enabled_backends

    def skip_messages(self) -> list[str]:
        """The messages of the ``GlanceBackendSkipped`` Warning events, one per skip."""
        return [f"Skipping backend {name}: {error}" for name, error in self.skipped]


def _backends_ready(projection: Projection) -> dict[str, str]:
    defaults = projection.default_candidates
    if len(defaults) == 0:
        return condition(BACKENDS_READY, False, NO_DEFAULT_BACKEND, NO_DEFAULT_MESSAGE)
    if len(defaults) > 1:
        message = MANY_DEFAULTS_MESSAGE.format(names=", ".join(defaults))
        return condition(BACKENDS_READY, False, NO_DEFAULT_BACKEND, message)
    if projection.pending:
        waiting = "; ".join(f"{name} ({why})" for name, why in projection.pending)
        return condition(
            BACKENDS_READY, False, WAITING_FOR_BACKENDS, f"Waiting for backends: {waiting}"
        )
    return condition(BACKENDS_READY, True, ALL_BACKENDS_PROJECTED, ALL_PROJECTED_MESSAGE)


def project_backends(
    glance: Mapping[str, Any], backends: Iterable[Mapping[str, Any]], secrets: Secrets
) -> Projection:
    """Project the GlanceBackends attached to ``glance`` (§2.3 step 3).

    ``backends`` may hold any GlanceBackends (of other Glances or namespaces too);
    ``secrets`` are the Secrets of the Glance's namespace.
    """
    attached = sorted((b for b in backends if is_attached(b, glance)), key=_name)
    projection = Projection()
    for backend in attached:
        name = _name(backend)
        host = (_s3(backend) or {}).get("host")
        if host:
            projection.s3_hosts.append(str(host))
        credentials = backend_credentials(backend, glance, secrets)
        projection.backend_conditions[name] = credentials
        ready = credentials["status"] == TRUE
        if ready and _spec(backend).get("isDefault") is True:
            projection.default_candidates.append(name)
        if not ready:
            projection.pending.append((name, CREDENTIALS_NOT_READY))
    projection.valid = len(projection.default_candidates) == 1
    if projection.valid:
        projection.default_backend = projection.default_candidates[0]
        sections = {}
        for backend in attached:
            name = _name(backend)
            if projection.backend_conditions[name]["status"] != TRUE:
                continue
            try:
                sections[name] = render_store_section(backend, secrets)
            except BackendFault as fault:
                projection.skipped.append((name, str(fault)))
                projection.pending.append((name, str(fault)))
                continue
            projection.enabled_backends.append(f"{name}:{STORE_TYPE_S3}")
        projection.pending.sort(key=lambda item: item[0])
        projection.backends_conf = render_backends_conf(sections)
    projection.condition = _backends_ready(projection)
    return projection
