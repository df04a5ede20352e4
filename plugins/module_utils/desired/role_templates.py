# Copyright: C5C3 Glance operator authors
# Apache License 2.0 (see LICENSE)
"""The owned objects as the roles' templates render them, with plain Jinja2.

The role templates (``roles/*/templates/*.yaml.j2``) are the one description of each
owned object, and this module is the one way they are rendered: with Jinja2 (the engine
Ansible itself uses; the templates use one filter, ``to_json``), not through Ansible's
templating, whose per-task cost a pass would pay for every role.

* ``role_objects(templates_dir, role, desired, templates)``: what one object role emits,
  its templates named by the role's own task (the filter ``c5c3.glance.role_objects``);
  each name is checked against ``KINDS``.
* ``owned_objects(desired)``: every object role's objects, from ``KINDS`` (the filter
  ``c5c3.glance.owned_objects``, the render step of a pass).
* ``render_object`` / ``render_objects``: one key's object, every key's object by key
  (the decision layer when no playbook hands it the rendered objects).
* ``objects_by_key``: a playbook's rendered objects matched to the keys they belong to.
* ``compile_templates()``: every template of ``KINDS`` compiled into the per-process cache,
  by a process before it forks the workers that render (the warm server, the playbook's
  process): compiling them took about half of a pass's render task.

``KINDS`` says, per ``desired_objects`` key, the apiVersion and kind of its object and
which role and template emit it. A template sees ``glance_desired`` as ``{key: data}``.
``tests/unit/test_role_templates.py`` runs the roles and holds what they emit to what the
data says and to ``render_objects``.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2
import yaml

from ansible_collections.c5c3.glance.plugins.module_utils.admission.collection_files import (
    COLLECTION_ROOT,
    user_cache_dir,
)
from ansible_collections.c5c3.glance.plugins.module_utils.desired.objects import keys as ok
from ansible_collections.c5c3.glance.plugins.module_utils.desired.objects.mariadb import (
    MARIADB_API_VERSION,
)


@dataclass(frozen=True)
class ObjectKind:
    api_version: str
    kind: str
    role: str
    template: str


KINDS: dict[str, ObjectKind] = {
    ok.CONFIG_MAP: ObjectKind("v1", "ConfigMap", "glance_config", "configmap.yaml.j2"),
    ok.BACKENDS_SECRET: ObjectKind("v1", "Secret", "glance_config", "backends_secret.yaml.j2"),
    ok.DB_CONNECTION_SECRET: ObjectKind(
        "v1", "Secret", "glance_config", "db_connection_secret.yaml.j2"
    ),
    ok.DEPLOYMENT: ObjectKind("apps/v1", "Deployment", "glance_api", "deployment.yaml.j2"),
    ok.SERVICE: ObjectKind("v1", "Service", "glance_api", "service.yaml.j2"),
    ok.PDB: ObjectKind("policy/v1", "PodDisruptionBudget", "glance_api", "pdb.yaml.j2"),
    ok.HPA: ObjectKind("autoscaling/v2", "HorizontalPodAutoscaler", "glance_api", "hpa.yaml.j2"),
    ok.NETWORK_POLICY: ObjectKind(
        "networking.k8s.io/v1", "NetworkPolicy", "glance_exposure", "networkpolicy.yaml.j2"
    ),
    ok.HTTP_ROUTE: ObjectKind(
        "gateway.networking.k8s.io/v1", "HTTPRoute", "glance_exposure", "httproute.yaml.j2"
    ),
    **{
        key: ObjectKind("batch/v1", "Job", "glance_database", "db_job.yaml.j2")
        for key in ok.DB_JOBS
    },
    ok.DB_PURGE_CRONJOB: ObjectKind(
        "batch/v1", "CronJob", "glance_database", "db_purge_cronjob.yaml.j2"
    ),
    ok.MARIADB_DATABASE: ObjectKind(
        MARIADB_API_VERSION, "Database", "glance_database", "mariadb_database.yaml.j2"
    ),
    ok.MARIADB_USER: ObjectKind(
        MARIADB_API_VERSION, "User", "glance_database", "mariadb_user.yaml.j2"
    ),
    ok.MARIADB_GRANT: ObjectKind(
        MARIADB_API_VERSION, "Grant", "glance_database", "mariadb_grant.yaml.j2"
    ),
}


_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's safe loader when PyYAML has it: parsing what the templates render took nine
tenths of the render task's filter with the pure-Python one."""


@functools.cache
def _bytecode_cache() -> jinja2.BytecodeCache | None:
    """Jinja2's compiled templates kept in the user's cache directory: compiling the eleven
    templates took 0.06 CPU-s in every ``ansible-playbook`` that runs a pass; Jinja2 checks
    each file against its template's source before it uses it."""
    directory = user_cache_dir("templates")
    return jinja2.FileSystemBytecodeCache(str(directory)) if directory else None


@functools.cache
def _environment(templates_dir: str) -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(templates_dir),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        bytecode_cache=_bytecode_cache(),
    )
    env.filters["to_json"] = json.dumps
    return env


def _render(templates_dir: str | Path, template: str, key: str, data: Mapping[str, Any]) -> dict:
    text = (
        _environment(str(templates_dir)).get_template(template).render(glance_desired={key: data})
    )
    docs = [doc for doc in yaml.load_all(text, Loader=_SAFE_LOADER) if doc]
    if len(docs) != 1:
        raise ValueError(f"{template} rendered {len(docs)} objects for {key}, not one")
    return docs[0]


def role_objects(
    templates_dir: str | Path,
    role: str,
    desired: Mapping[str, Mapping[str, Any] | None],
    templates: Mapping[str, str],
) -> list[dict[str, Any]]:
    """What the object role ``role`` emits, in its order: per ``templates`` entry (a
    desired_objects key and the file in ``templates_dir`` that renders it) the object of
    ``desired[key]``; a None entry emits nothing. A key ``desired`` lacks, a key and template
    that ``KINDS`` does not give to ``role``, or a template that renders no object or more
    than one, is an error."""
    out = []
    for key, template in templates.items():
        kind = KINDS.get(key)
        if kind is None or (kind.role, kind.template) != (role, template):
            wanted = f"{kind.role}/templates/{kind.template}" if kind else "no template"
            raise ValueError(
                f"{role} renders {key} with {template}; role_templates.KINDS says {wanted}"
            )
        if key not in desired:
            raise ValueError(f"glance_desired has no entry {key}")
        if desired[key] is not None:
            out.append(_render(templates_dir, template, key, desired[key]))
    return out


def render_object(key: str, data: Mapping[str, Any]) -> dict[str, Any]:
    """The object the template of ``key`` renders from ``data`` (a desired_objects entry)."""
    if key not in KINDS:
        raise KeyError(f"no template renders the key {key!r}")
    kind = KINDS[key]
    return _render(COLLECTION_ROOT / "roles" / kind.role / "templates", kind.template, key, data)


def owned_objects(desired: Mapping[str, Mapping[str, Any] | None]) -> list[dict[str, Any]]:
    """Every object the four object roles emit for ``desired``, in ``KINDS`` order, from the
    roles' templates: what the roles emit, in one call. Every key of ``KINDS`` must be in
    ``desired``."""
    missing = [key for key in KINDS if key not in desired]
    if missing:
        raise ValueError(f"glance_desired has no entry {', '.join(missing)}")
    return [render_object(key, desired[key]) for key in KINDS if desired[key] is not None]


def compile_templates() -> list[str]:
    """Compile every template of ``KINDS`` into its environment's cache; the templates'
    paths (a later ``render_object`` finds them compiled and only checks their mtime)."""
    compiled = []
    for kind in KINDS.values():
        directory = COLLECTION_ROOT / "roles" / kind.role / "templates"
        template = _environment(str(directory)).get_template(kind.template)
        if template.filename not in compiled:
            compiled.append(template.filename)
    return compiled


def render_objects(desired: Mapping[str, Mapping[str, Any] | None]) -> dict[str, dict | None]:
    """``render_object`` of every entry of ``desired``; a None entry stays None."""
    return {key: (render_object(key, d) if d is not None else None) for key, d in desired.items()}


def objects_by_key(
    desired: Mapping[str, Mapping[str, Any] | None], rendered: Iterable[Mapping[str, Any]]
) -> dict[str, dict | None]:
    """Match objects a playbook's roles rendered to the ``desired`` keys they belong to.

    Each key with data must find exactly its object (same apiVersion, kind and name);
    a key whose data is None stays None. A rendered object no key describes is an error:
    a role emitted something the pass did not decide.
    """
    pool = {
        (o.get("apiVersion"), o.get("kind"), (o.get("metadata") or {}).get("name")): o
        for o in rendered
    }
    out: dict[str, dict | None] = {}
    for key, data in desired.items():
        if data is None:
            out[key] = None
            continue
        kind = KINDS[key]
        ident = (kind.api_version, kind.kind, data["name"])
        if ident not in pool:
            raise ValueError(f"the roles rendered no {kind.kind} {data['name']} for {key}")
        out[key] = dict(pool.pop(ident))
    if pool:
        extra = ", ".join(f"{k} {n}" for _, k, n in sorted(pool, key=str))
        raise ValueError(f"the roles rendered objects the pass did not decide: {extra}")
    return out
